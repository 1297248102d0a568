--[[
surface_spec.lua -- surface coverage (RELIABILITY R31, after luv's
bindcov/docscov): every function reachable from require("ecs") -- module
functions, C plugin modules, the methods of every class the binding
registers -- must be documented in README.md and reached by the argument
sweep that spec/binding/errors_spec.lua runs (spec/support/sweep.lua, which walks
spec/support/surface.lua).
Classes are found independently of that list: every metatable in the Lua
registry whose name starts with "ecs." and that has methods.
]]
local ecs = require("ecs")
local surface = require("spec.support.surface")
local sweep = require("spec.support.sweep")

local function read(path)
  local f = assert(io.open(path, "r"))
  local s = f:read("*a")
  f:close()
  return s
end

-- Registered classes with methods: { [__name] = { method names } }.
local function registered_classes()
  local out = {}
  for k, mt in pairs(debug.getregistry()) do
    if type(k) == "string" and k:match("^ecs%.") and type(mt) == "table" and mt.__name == k then
      local index = type(mt.__methods) == "table" and mt.__methods
        or (type(mt.__index) == "table" and mt.__index) or {}
      local names = {}
      for n, f in pairs(index) do
        if type(f) == "function" then names[#names + 1] = n end
      end
      if #names > 0 then
        table.sort(names)
        out[k] = names
      end
    end
  end
  return out
end

-- The functions of the module table and of every preloaded plugin module
-- ("ecs.grid.new"), found here independently of spec/support/surface.lua.
local function module_function_names()
  local out = {}
  local function add(prefix, t)
    for k, v in pairs(t) do
      if type(v) == "function" then out[#out + 1] = prefix .. "." .. k end
    end
  end
  add("ecs", ecs)
  for name in pairs(package.preload) do
    if type(name) == "string" and name:match("^ecs%.") then
      local mod = require(name)
      if type(mod) == "table" then add(name, mod) end
    end
  end
  table.sort(out)
  return out
end

-- Is name documented: "x:name", "x.name" or "name(" followed by a non-identifier.
local function documented(text, name)
  for _, pre in ipairs({ ":", "%." }) do
    if text:find(pre .. name .. "%f[^%w_]") then return true end
  end
  return false
end

describe("surface coverage", function()
  local w, objs, readme
  setup(function()
    readme = read("README.md")
    w = ecs.world()
    objs = surface.objects(w) -- requires the plugins: their classes get registered
  end)
  teardown(function() w:close() end)

  it("the sweep's object list has an object of every registered class", function()
    local swept = {}
    for _, o in ipairs(objs) do
      local mt = debug.getmetatable(o[2])
      if mt and mt.__name then swept[mt.__name] = surface.methods(o[2]) end
    end
    local missing = {}
    for name, methods in pairs(registered_classes()) do
      local got = swept[name]
      if got == nil and name ~= "ecs.World.fields" then
        missing[#missing + 1] = name .. " (no object)"
      elseif got ~= nil then
        local set = {}
        for _, m in ipairs(got) do set[m] = true end
        for _, m in ipairs(methods) do
          if not set[m] then missing[#missing + 1] = name .. ":" .. m end
        end
      end
    end
    table.sort(missing)
    assert.same({}, missing)
  end)

  it("the world's fields table offers exactly the world's methods", function()
    local reg = registered_classes()
    assert.same(reg["ecs.World"], reg["ecs.World.fields"])
  end)

  it("the argument sweep reaches every module function and every method of every registered class", function()
    local function first(i) return i == 1 end -- one junk value is enough to see what is reached
    local fns = sweep.module_functions(first)
    local meths = sweep.methods(first)
    local missing = {}
    for _, name in ipairs(module_function_names()) do
      if not fns[name] then missing[#missing + 1] = name end
    end
    for class, methods in pairs(registered_classes()) do
      if class ~= "ecs.World.fields" then -- the world's methods again (next test)
        for _, m in ipairs(methods) do
          if not meths[class .. ":" .. m] then missing[#missing + 1] = class .. ":" .. m end
        end
      end
    end
    table.sort(missing)
    assert.same({}, missing)
    assert.is_truthy(fns["ecs.world"])
    assert.is_truthy(meths["ecs.World:create"])
  end)

  it("every method is documented in README.md", function()
    local missing = {}
    for _, o in ipairs(objs) do
      for _, m in ipairs(surface.methods(o[2])) do
        if not documented(readme, m) then missing[#missing + 1] = o[1] .. ":" .. m end
      end
    end
    table.sort(missing)
    assert.same({}, missing)
  end)

  it("every module function is documented in README.md", function()
    local missing = {}
    for _, f in ipairs(surface.module_functions()) do
      local short = f[1]:match("([%w_]+)$")
      local mod = f[1]:match("^ecs%.([%w_]+)%.") -- a plugin module: "grid.new"
      local ok = readme:find(f[1], 1, true)
        or (mod and readme:find(mod .. "." .. short, 1, true))
        or (mod and readme:find('require("ecs.' .. mod .. '").' .. short, 1, true))
      if not ok then missing[#missing + 1] = f[1] end
      assert.truthy(short)
    end
    table.sort(missing)
    assert.same({}, missing)
  end)
end)
