--[[
bench_snapshot.lua -- world:snapshot(), world:restore(blob) and
ecs.restore(blob) of N entities (default 1M) with Position{x:f32,y:f32},
Velocity{dx:f32,dy:f32} and Health{hp:i32}, each against a copy of the
same component bytes measured in the same run: a Lua string of 20 * N
bytes (what the three components hold: 8 + 8 + 4 bytes an entity) copied
by string.sub, i.e. one allocation and one memcpy -- what any snapshot
must do at least once to hand Lua a string. Each timed call starts after
a full collection (so every side reuses freed memory alike: see the
warm-up below); best of RUNS, runs interleaved. Prints milliseconds, the snapshot's size and each
ratio to the copy (target: 3).
Usage: LUA_PATH='build-rel/?.lua;build-rel/?/init.lua' \
       LUA_CPATH='build-rel/?.so' lua5.4 bench/bench_snapshot.lua [N]
]]
local ecs = require("ecs")
local N = tonumber(arg and arg[1]) or 1000000
local RUNS = 9

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

local w = ecs.world()
local P = w:component("Position", { "x:f32", "y:f32" })
local V = w:component("Velocity", { "dx:f32", "dy:f32" })
local H = w:component("Health", { "hp:i32" })
local es = w:create(N)
for i = 1, N do
  local e = es[i]
  P:add(e, i * 0.5, -i * 0.25)
  V:add(e, i % 7 - 3, i % 5 - 2)
  H:add(e, 100 + i % 50)
end
es = nil -- luacheck: ignore (the list goes: only the world holds the entities)

local bytes = string.rep("\1\2\3\4\5\6\7\8", 20 * N // 8 + 1):sub(1, 20 * N + 1)
-- glibc's malloc maps blocks above a threshold afresh each time (page
-- faults on every touch) and raises the threshold, up to 32 MB, when such
-- a block is freed: a long-running program has had it raised. One block
-- of 30 MB allocated and freed here does that for both sides alike, so the
-- copy and the snapshot reuse freed memory the way they would there.
do
  local warm = string.rep("\0", 30 * 2 ^ 20) -- luacheck: ignore (freed at once)
  warm = nil
  collectgarbage("collect")
end
local blob
for _ = 1, RUNS do
  timed("copy", function() return bytes:sub(2) end) -- (dropped at once)
  blob = nil
  blob = timed("snapshot", function() return w:snapshot() end)
  timed("restore", function() w:restore(blob) end)
  timed("ecs.restore", function()
    local w2 = ecs.restore(blob)
    w2:close()
  end)
end
assert(w:check())
assert(P:count() == N and V:count() == N and H:count() == N)

print(("%d entities, component bytes %.1f MB, snapshot %.1f MB"):format(N, 20 * N / 1e6, #blob / 1e6))
local base = best.copy
print(("  copy (string.sub)      %7.2f ms"):format(base * 1e3))
for _, name in ipairs({ "snapshot", "restore", "ecs.restore" }) do
  print(("  %-22s %7.2f ms  %.1fx the copy"):format(
    name == "restore" and "world:restore" or name == "snapshot" and "world:snapshot" or name,
    best[name] * 1e3, best[name] / base))
end
