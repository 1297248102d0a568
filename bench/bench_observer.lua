--[[
bench_observer.lua -- the cost of an empty Lua on_add observer during
create(n) + add of 100k entities, as a ratio to the same without one
(issue 15: at most 2x). Best of 5 runs each, in one process.
Usage: lua5.4 bench/bench_observer.lua  (with ecs on package.cpath/path)
]]
local ecs = require("ecs")

local N = 100000

local function run(observe)
  local w = ecs.world()
  local P = w:component("P", { "x:f32", "y:f32" })
  if observe then P:on_add(function() end) end
  collectgarbage()
  local t0 = os.clock()
  local es = w:create(N)
  for i = 1, N do P:add(es[i], 1, 2) end
  local t = os.clock() - t0
  w:close()
  return t
end

local function best(observe)
  local b = math.huge
  for _ = 1, 5 do b = math.min(b, run(observe)) end
  return b
end

local without, with = best(false), best(true)
print(string.format("create(%d) + add: %.2f ms without an observer, %.2f ms with an empty " ..
  "on_add; ratio %.2f", N, without * 1e3, with * 1e3, with / without))
