--[[
readme_spec.lua -- the README documents the Lua API: every function of the
ecs module and every method of a world, a component manager, world.transform,
world.names, the point-mass and mesh plugins and the ecs.message bus is named
in README.md or a docs/*.md file it links to (as `:name(`, `.name(`,
`:name ` ...); the plugins' and helpers' require lines are in README.md. The method lists come
from the objects themselves, so a new method fails here until it is
documented. Runs from the repository root (busted's working directory).
]]
local ecs = require("ecs")

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- The functions of obj's methods table (__index, or __methods for worlds).
local function methods(obj)
  local mt = debug.getmetatable(obj)
  local index = mt and mt.__methods
  if type(index) ~= "table" then index = mt and mt.__index end
  local out = {}
  if type(index) == "table" then
    for k, v in pairs(index) do
      if type(v) == "function" then out[#out + 1] = k end
    end
  end
  table.sort(out)
  return out
end

local function missing(text, prefix, names)
  local out = {}
  for _, n in ipairs(names) do
    -- the name right after ':' or '.' and not followed by more of a name
    local pat = "[:.]" .. n .. "[^%w_]"
    if not text:find(pat) then out[#out + 1] = prefix .. n end
  end
  return out
end

-- README.md plus every docs/*.md it links to: the documentation a reader
-- reaches from the README.
local function documentation()
  local readme = read("README.md")
  local parts, seen = { readme }, {}
  for doc in readme:gmatch("%((docs/[%w_%-]+%.md)%)") do
    if not seen[doc] then
      seen[doc] = true
      parts[#parts + 1] = read(doc)
    end
  end
  return table.concat(parts, "\n"), readme
end

describe("README.md", function()
  local docs, readme = documentation()

  it("names every function of the ecs module", function()
    local names = {}
    for k, v in pairs(ecs) do
      if type(v) == "function" then names[#names + 1] = k end
    end
    table.sort(names)
    assert.is_true(#names >= 7)
    assert.are.same({}, missing(docs, "ecs.", names))
  end)

  it("names every method of worlds, components, transform, names, plugins and messages", function()
    local w = ecs.world()
    local objects = {
      { "world:", w },
      { "component:", w:component("ReadmePosition", { "x:f32" }) },
      { "transform:", w.transform },
      { "names:", w.names },
      { "pointmass:", require("ecs.pointmass").new(w) },
      { "mesh:", require("ecs.mesh").new(w) },
      { "message bus:", require("ecs.message").new(w) },
    }
    local all = {}
    for _, o in ipairs(objects) do
      local names = methods(o[2])
      assert.is_true(#names >= 4, o[1] .. " has too few methods to be real")
      for _, m in ipairs(missing(docs, o[1], names)) do all[#all + 1] = m end
    end
    for _, mod in ipairs({ "ecs.pointmass", "ecs.mesh", "ecs.message" }) do
      local req = 'require("' .. mod .. '")'
      if not readme:find(req, 1, true) then all[#all + 1] = req end
    end
    w:close()
    assert.are.same({}, all)
  end)

  it("the check itself catches an undocumented name", function()
    assert.are.same({ "x:no_such_method_documented" },
      missing(docs, "x:", { "no_such_method_documented" }))
  end)

  it("links the detailed documents", function()
    for _, doc in ipairs({ "docs/components.md", "docs/transform.md" }) do
      assert(readme:find("(" .. doc .. ")", 1, true), "README does not link " .. doc)
      assert(io.open(doc, "rb")):close()
    end
  end)
end)
