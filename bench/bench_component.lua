--[[
bench_component.lua -- component add / get / field / set / set_field /
remove from Lua, one call per entity, next to a Lua table-of-tables ECS
written here as the baseline (components[name][entity] = { x = , y = }) and
measured in the same run. Prints ns per operation and the ratio.
Usage: lua5.4 bench/bench_component.lua [N]  (with ecs on package.cpath/path)
]]
local ecs = require("ecs")
local N = tonumber(arg and arg[1]) or 200000
local RUNS = 5

local function best(fn)
  local b = math.huge
  for _ = 1, RUNS do
    collectgarbage("collect")
    local t = os.clock()
    fn()
    t = os.clock() - t
    if t < b then b = t end
  end
  return b
end

-- The baseline: a table-of-tables ECS, the way a Lua game would write it.
local TableECS = {}
TableECS.__index = TableECS
function TableECS.new() return setmetatable({ comps = {} }, TableECS) end
function TableECS:component(name) self.comps[name] = {}; return self.comps[name] end
local function tadd(store, e, x, y) store[e] = { x = x, y = y } end
local function tget(store, e) local r = store[e]; if r then return r.x, r.y end end
local function tset(store, e, x, y)
  local r = store[e]
  if not r then error("no component") end
  r.x, r.y = x, y
end
local function tremove(store, e) local had = store[e] ~= nil; store[e] = nil; return had end

local w = ecs.world()
local es = w:create(N)
local P = w:component("Position", { "x:f32", "y:f32" })
local base = TableECS.new()
local T = base:component("Position")

local results = {}
local function measure(name, fn_ecs, fn_tbl, setup)
  local te = best(function() if setup then setup() end fn_ecs() end)
  local tt = best(function() if setup then setup() end fn_tbl() end)
  if setup then
    local ts = best(setup)
    te, tt = te - ts, tt - ts
  end
  results[#results + 1] = { name, te * 1e9 / N, tt * 1e9 / N }
end

local function fill()
  for i = 1, N do P:add(es[i], i, i) end
  for i = 1, N do tadd(T, es[i], i, i) end
end

local function clear()
  for i = 1, N do P:remove(es[i]) end
  for i = 1, N do T[es[i]] = nil end
end

measure("add (new)", function()
  for i = 1, N do P:add(es[i], i, -i) end
end, function()
  for i = 1, N do tadd(T, es[i], i, -i) end
end, clear)
fill()
measure("add (overwrite)", function()
  for i = 1, N do P:add(es[i], i, -i) end
end, function()
  for i = 1, N do tadd(T, es[i], i, -i) end
end)
measure("get", function()
  local s = 0
  for i = 1, N do local x, y = P:get(es[i]); s = s + x + y end
end, function()
  local s = 0
  for i = 1, N do local x, y = tget(T, es[i]); s = s + x + y end
end)
measure("field", function()
  local s = 0
  for i = 1, N do s = s + P:field(es[i], "x") end
end, function()
  local s = 0
  for i = 1, N do s = s + T[es[i]].x end
end)
measure("set", function()
  for i = 1, N do P:set(es[i], i, i) end
end, function()
  for i = 1, N do tset(T, es[i], i, i) end
end)
measure("set_field", function()
  for i = 1, N do P:set_field(es[i], "x", i) end
end, function()
  for i = 1, N do T[es[i]].x = i end
end)
measure("has", function()
  local n = 0
  for i = 1, N do if P:has(es[i]) then n = n + 1 end end
end, function()
  local n = 0
  for i = 1, N do if T[es[i]] ~= nil then n = n + 1 end end
end)
measure("remove", function()
  for i = 1, N do P:remove(es[i]) end
end, function()
  for i = 1, N do tremove(T, es[i]) end
end, function()
  for i = 1, N do P:add(es[i], i, i) end
  for i = 1, N do tadd(T, es[i], i, i) end
end)

print(string.format("Lua, %d entities, Position{x:f32,y:f32}, best of %d", N, RUNS))
print(string.format("%-18s %12s %14s %8s", "operation", "ecs ns/op", "table ns/op", "ratio"))
for _, r in ipairs(results) do
  print(string.format("%-18s %12.1f %14.1f %8.2f", r[1], r[2], r[3], r[2] / r[3]))
end
w:close()
