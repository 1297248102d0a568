--[[
surface.lua -- the exported surface of require("ecs"), found by walking
(RELIABILITY R18, R31): the functions of the module table and of every C
plugin module (plugins/<name>.c is module "ecs.<name>"), the objects a world hands out
(world, component, query, transform, names, plugin objects), and each
object's methods (its metatable's __methods, else its __index table).
spec/binding/errors_spec.lua sweeps exactly this list; spec/binding/surface_spec.lua checks
that it misses no class registered by the binding and that the README
documents every name.
]]
local ecs = require("ecs")

local surface = {}

-- The C plugin modules ("ecs.pointmass", ...), sorted by name. The list of
-- plugins/*.c is read once per process: the sweep asks for it per (method,
-- value), and a shell per call costs minutes where the sanitizer runtimes are
-- preloaded into every child process.
local plugin_names
function surface.plugin_modules()
  if not plugin_names then
    plugin_names = {}
    local p = assert(io.popen("ls plugins/*.c"))
    for f in p:lines() do plugin_names[#plugin_names + 1] = "ecs." .. f:match("([%w_]+)%.c$") end
    p:close()
    table.sort(plugin_names)
  end
  local names = plugin_names
  local out = {}
  for _, n in ipairs(names) do out[#out + 1] = { n, require(n) } end
  return out
end

-- Every module-level function: { label, fn }, e.g. { "ecs.world", f }.
function surface.module_functions()
  local out = {}
  local function add(prefix, t)
    local keys = {}
    for k, v in pairs(t) do
      if type(v) == "function" then keys[#keys + 1] = k end
    end
    table.sort(keys)
    for _, k in ipairs(keys) do out[#out + 1] = { prefix .. "." .. k, t[k] } end
  end
  add("ecs", ecs)
  for _, m in ipairs(surface.plugin_modules()) do
    if type(m[2]) == "table" then add(m[1], m[2]) end
  end
  return out
end

-- How to make a plugin object: plugin.new(world), unless listed here
-- (objects made without a world are marked unbound: closing a world does
-- not concern them).
local constructors = {
  ["ecs.grid"] = function(mod) return mod.new(4, 64, 64) end,
}
local unbound = { ["ecs.grid"] = true }

-- Objects a world hands out, { kind, object, unbound } each, and a live
-- entity.
function surface.objects(w)
  local list = { { "world", w } }
  local e = w:create()
  local P = w:component("JunkPosition", { "x:f32", "y:f32", "ref:entity", "any:lua" })
  P:add(e, 1, 2)
  list[#list + 1] = { "component", P }
  list[#list + 1] = { "query", w:query(P) }
  list[#list + 1] = { "observer", P:on_add(function() end) }
  -- one journal per world: a world that has one already keeps it
  local has_journal, j = pcall(w.journal, w)
  if has_journal then list[#list + 1] = { "journal", j } end
  for _, field in ipairs({ "transform", "names" }) do
    list[#list + 1] = { field, w[field] }
  end
  for _, m in ipairs(surface.plugin_modules()) do
    local mod = m[2]
    local make = constructors[m[1]] or (type(mod) == "table" and mod.new and function()
      return mod.new(w)
    end)
    if make then list[#list + 1] = { m[1], make(mod), unbound[m[1]] } end
  end
  -- LuaJIT: the state of a zero-copy loop (q:pointers), over a component of
  -- its own (the loop pins it); its class exists only where the FFI does
  if rawget(_G, "jit") then
    local J = w:component("JunkLoop", { "v:f64" })
    J:add(e, 1)
    local _, loop = w:query(J):pointers("JunkLoop.v")
    list[#list + 1] = { "pointer loop", loop }
  end
  return list, e
end

-- The method table of obj (or nil).
function surface.method_table(obj)
  local mt = debug.getmetatable(obj)
  if mt == nil then return nil end
  if type(mt.__methods) == "table" then return mt.__methods end
  if type(mt.__index) == "table" then return mt.__index end
  return nil
end

-- The method names of obj, sorted.
function surface.methods(obj)
  local out = {}
  local index = surface.method_table(obj)
  if index then
    for k, v in pairs(index) do
      if type(v) == "function" then out[#out + 1] = k end
    end
  end
  table.sort(out)
  return out
end

return surface
