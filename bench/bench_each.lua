--[[
bench_each.lua -- the per-entity Lua paths of a query against the plain-Lua
floor, measured in the same run: W2 (x += dx*dt; y += dy*dt: read four
values, write two) over N entities with Position{x:f32,y:f32} and
Velocity{dx:f32,dy:f32}, driven one entity at a time from Lua:
  (a) floor: one loop over four plain Lua arrays
  (b) q:each(fn, "Position.x", "Position.y", "Velocity.dx:in",
      "Velocity.dy:in"), fn returning the two new values
  (c) for e in q:entities() with P:get, V:get and P:set
  (d) for e in q:entities() with four field reads and P:set (the tutorial)
  (e) q:columns, for reference (Lua arrays per chunk, not per entity)
Prints ns per entity per frame, best of RUNS, and each path / floor
(target for (b): at most 4).
Usage: LUA_PATH='build-rel/?.lua;build-rel/?/init.lua' \
       LUA_CPATH='build-rel/?.so' lua5.4 bench/bench_each.lua [N]
]]
local ecs = require("ecs")
local N = tonumber(arg and arg[1]) or 100000
local FRAMES = 20
local SLOW_FRAMES = 5 -- for the entities() paths, several calls per entity
local RUNS = 5
local DT = 1 / 60

local clock = os.clock
local best = {}
local function record(name, seconds, per)
  local ns = seconds * 1e9 / per
  if not best[name] or ns < best[name] then best[name] = ns end
end

local ix, iy, idx, idy = {}, {}, {}, {}
for i = 1, N do ix[i] = i * 0.5; iy[i] = -i * 0.25; idx[i] = (i % 7) - 3; idy[i] = (i % 5) - 2 end

local w = ecs.world()
local P = w:component("Position", { "x:f32", "y:f32" })
local V = w:component("Velocity", { "dx:f32", "dy:f32" })
local q = w:query(P, V)
local es = w:create(N)
for i = 1, N do
  P:add(es[i], ix[i], iy[i])
  V:add(es[i], idx[i], idy[i])
end

local function move(_, x, y, dx, dy) return x + dx * DT, y + dy * DT end

for _ = 1, RUNS do
  do -- (a) the floor
    local x, y, dx, dy = {}, {}, {}, {}
    for i = 1, N do x[i] = ix[i]; y[i] = iy[i]; dx[i] = idx[i]; dy[i] = idy[i] end
    collectgarbage("collect")
    local t = clock()
    for _ = 1, FRAMES do
      for i = 1, N do x[i] = x[i] + dx[i] * DT; y[i] = y[i] + dy[i] * DT end
    end
    record("(a) floor: plain Lua arrays", clock() - t, N * FRAMES)
    assert(x[N] == x[N] and y[N] == y[N])
  end

  do -- (b) q:each
    collectgarbage("collect")
    local t = clock()
    for _ = 1, FRAMES do
      q:each(move, "Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in")
    end
    record("(b) q:each", clock() - t, N * FRAMES)
  end

  do -- (c) entities() + get/set
    collectgarbage("collect")
    local t = clock()
    for _ = 1, SLOW_FRAMES do
      for e in q:entities() do
        local x, y = P:get(e)
        local dx, dy = V:get(e)
        P:set(e, x + dx * DT, y + dy * DT)
      end
    end
    record("(c) entities() + get/set", clock() - t, N * SLOW_FRAMES)
  end

  do -- (d) entities() + field/set (the tutorial's loop)
    collectgarbage("collect")
    local t = clock()
    for _ = 1, SLOW_FRAMES do
      for e in q:entities() do
        local x, y = P:field(e, "x"), P:field(e, "y")
        local dx, dy = V:field(e, "dx"), V:field(e, "dy")
        P:set(e, x + dx * DT, y + dy * DT)
      end
    end
    record("(d) entities() + field/set", clock() - t, N * SLOW_FRAMES)
  end

  do -- (e) q:columns
    collectgarbage("collect")
    local t = clock()
    for _ = 1, FRAMES do
      for n, x, y, dx, dy in q:columns("Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") do
        for i = 1, n do x[i] = x[i] + dx[i] * DT; y[i] = y[i] + dy[i] * DT end
      end
    end
    record("(e) q:columns", clock() - t, N * FRAMES)
  end
end
w:close()

local floor = best["(a) floor: plain Lua arrays"]
print(("per-entity W2 from Lua: %d entities, best of %d"):format(N, RUNS))
print(("%-32s %10s %10s"):format("path", "ns/entity", "x floor"))
for _, name in ipairs({ "(a) floor: plain Lua arrays", "(b) q:each", "(c) entities() + get/set",
                        "(d) entities() + field/set", "(e) q:columns" }) do
  print(("%-32s %10.2f %10.2f"):format(name, best[name], best[name] / floor))
end
print(("q:each / floor %.2f (target <= 4)"):format(best["(b) q:each"] / floor))
