--[==[
bench_journal.lua -- the journal against snapshots, measured in the same run.

1. Deltas. N entities (default 1M) with Position{x:f32,y:f32},
   Velocity{dx:f32,dy:f32}, Health{hp:i32}; a journal is opened, then 1% of
   the entities get a field written (Position.x through set_field, spread
   at random), and j:delta() is timed against world:snapshot() of the same
   world. Targets: the delta at most 5% of the snapshot's size, made in
   under 2% of its time.
2. Rollback. M entities (default 100k) moved by the W2 system (an
   expression system: x += dx * dt, y += dy * dt). Per frame of a rollback
   loop that restores a snapshot and re-simulates 8 frames (as rollback
   netcode does on a misprediction), against the 8 frames alone: target
   1.5x. The same loop with j:undo() in place of the restore is printed too.
Best of RUNS each, runs interleaved, a full collection before each timed
call. Prints milliseconds and ratios.
Usage: LUA_PATH='build-rel/?.lua;build-rel/?/init.lua' \
       LUA_CPATH='build-rel/?.so' lua5.4 bench/bench_journal.lua [N [M]]
]==]
local ecs = require("ecs")
local N = tonumber(arg and arg[1]) or 1000000
local M = tonumber(arg and arg[2]) or 100000
local RUNS = 7

local clock = os.clock
local best = {}
local function timed(name, f)
  collectgarbage("collect")
  local t = clock()
  local r = f()
  t = clock() - t
  if not best[name] or t < best[name] then best[name] = t end
  return r
end

local function world_of(n)
  local w = ecs.world()
  local P = w:component("Position", { "x:f32", "y:f32" })
  local V = w:component("Velocity", { "dx:f32", "dy:f32" })
  local H = w:component("Health", { "hp:i32" })
  local es = w:create(n)
  for i = 1, n do
    local e = es[i]
    P:add(e, i * 0.5, -i * 0.25)
    V:add(e, i % 7 - 3, i % 5 - 2)
    H:add(e, 100 + i % 50)
  end
  return w, es, P
end

-- 1. deltas ---------------------------------------------------------------
local w, es, P = world_of(N)
local seed = 12345
local function rand(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n + 1
end
local picks = {}
for k = 1, N // 100 do picks[k] = es[rand(N)] end
local snap_size, delta_size
for run = 1, RUNS do
  snap_size = #timed("snapshot", function() return w:snapshot() end)
  local j = w:journal()
  for k = 1, #picks do P:set_field(picks[k], "x", k + run * 0.5) end
  delta_size = #timed("delta", function() return j:delta() end)
  j:close()
end
print(("deltas, %d entities, %d written (1%%)"):format(N, #picks))
print(("  world:snapshot()  %8.3f ms  %10d bytes"):format(best.snapshot * 1e3, snap_size))
print(("  j:delta()         %8.3f ms  %10d bytes"):format(best.delta * 1e3, delta_size))
print(("  delta / snapshot: time %.4f (target < 0.02), size %.4f (target <= 0.05)")
      :format(best.delta / best.snapshot, delta_size / snap_size))
w:close()

-- 2. rollback -------------------------------------------------------------
local rw = world_of(M)
rw:system("move", rw:query(rw:find_component("Position"), rw:find_component("Velocity")),
          "Position.x = Position.x + Velocity.dx * dt; Position.y = Position.y + Velocity.dy * dt")
local DT = 1 / 60
for _ = 1, RUNS do
  timed("sim8", function() for _ = 1, 8 do rw:update(DT) end end)
  local blob = rw:snapshot()
  timed("restore8", function()
    rw:restore(blob)
    for _ = 1, 8 do rw:update(DT) end
  end)
  local j = rw:journal()
  for _ = 1, 8 do rw:update(DT) end
  timed("undo8", function()
    j:undo()
    for _ = 1, 8 do rw:update(DT) end
  end)
  j:close()
end
print(("rollback, %d entities, W2 move system, 8 frames re-simulated"):format(M))
print(("  8 frames                 %8.3f ms  (%.3f ms a frame)"):format(best.sim8 * 1e3, best.sim8 * 1e3 / 8))
print(("  restore + 8 frames       %8.3f ms  ratio %.2f (target 1.5)")
      :format(best.restore8 * 1e3, best.restore8 / best.sim8))
print(("  j:undo() + 8 frames      %8.3f ms  ratio %.2f (the journal recording the frames)")
      :format(best.undo8 * 1e3, best.undo8 / best.sim8))
rw:close()
