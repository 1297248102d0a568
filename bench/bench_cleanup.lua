--[[
bench_cleanup.lua -- entity fields that clean up (docs/components.md,
"Entity fields that clean up"): what a destroy costs when H holders have a
field with a policy, against the same destroy in a world whose field has
none, in one run.

  D1  world:destroy(e) one at a time, 1000 targets each named by 10 holders
  D2  world:destroy(list) of the same 1000 targets: one sweep
  D3  the hand-written alternative the arena used: a Lua pass over the
      holders' column per frame (q:columns), for the same list

Best of 5. Usage: lua5.4 bench/bench_cleanup.lua [H] (default 100000).
]]
local ecs = require("ecs")

local H = tonumber(arg and arg[1]) or 100000
local K = 1000 -- targets destroyed per measurement
local clock = os.clock

local function best(f)
  local b = math.huge
  for _ = 1, 5 do b = math.min(b, f()) end
  return b
end

-- a world of H holders whose field names one of K targets (10 each), plus
-- holders of nothing: returns the world, the targets and the component
local function world_of(policy)
  local w = ecs.world()
  local C = w:component("Aim", { "target:entity" .. policy, "w:f32" })
  local targets = w:create(K)
  local holders = w:create(H)
  for i, h in ipairs(holders) do
    C:add(h, i <= K * 10 and targets[(i - 1) % K + 1] or ecs.null, 1)
  end
  return w, targets, C
end

local function run(policy, batch)
  return best(function()
    local w, targets = world_of(policy)
    local t0 = clock()
    if batch then
      w:destroy(targets)
    else
      for i = 1, K do w:destroy(targets[i]) end
    end
    local t = clock() - t0
    w:close()
    return t
  end)
end

local function by_hand()
  return best(function()
    local w, targets, C = world_of("")
    local q = w:query(C)
    local t0 = clock()
    local died = {}
    for i = 1, K do died[targets[i]] = true end
    w:destroy(targets)
    for n, tgt in q:columns("Aim.target") do
      for i = 1, n do if died[tgt[i]] then tgt[i] = ecs.null end end
    end
    local t = clock() - t0
    w:close()
    return t
  end)
end

local none1, clear1 = run("", false), run("!clear", false)
local noneN, clearN, removeN, destroyN = run("", true), run("!clear", true),
  run("!remove", true), run("!destroy", true)
local hand = by_hand()
print(string.format("%d holders, %d targets (10 holders each)", H, K))
print(string.format("D1 destroy one at a time: %.2f ms without a policy, %.2f ms with !clear " ..
  "(%.1f us per destroy, %.2f ns per holder swept)", none1 * 1e3, clear1 * 1e3,
  (clear1 - none1) / K * 1e6, (clear1 - none1) / K / H * 1e9))
print(string.format("D2 destroy(list): %.2f ms without, !clear %.2f ms, !remove %.2f ms, " ..
  "!destroy %.2f ms (the 10000 holders too)", noneN * 1e3, clearN * 1e3, removeN * 1e3,
  destroyN * 1e3))
print(string.format("D3 by hand (destroy(list) + a q:columns pass in Lua): %.2f ms; " ..
  "!clear / by hand = %.2f", hand * 1e3, clearN / hand))
