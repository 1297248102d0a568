--[[
bench_spawn.lua -- what it costs to bring entities into the world with
their components: world:spawn (values set component by component in C,
no Lua call per entity), prefabs and world:clone, each next to a baseline
measured in the same run (these machines are noisy: read the ratios, not
the nanoseconds). Every figure is the best of RUNS runs, each in a fresh
world; preparing the input arrays and making the world are not timed.

  S1  baseline, plain Lua: the floor a pure-Lua ECS (evolved.lua and the
      like) can hope for. N entities as integer ids (a list of them, as
      spawn returns one) and three tables of arrays, Position {x, y},
      Velocity {dx, dy}, Health {hp}, filled in one Lua loop.
  S2  ours, one call per component: w:create(N), then per entity
      P:add(e, x, y); V:add(e, 1, 0); H:add(e, 100).
  S3  ours, one call: w:spawn(N, { Position = { x = xs, y = ys },
      Velocity = { dx = 1, dy = 0 }, Health = { hp = 100 } }), xs and ys
      Lua arrays made beforehand.
  S4  a prefab: pf = w:prefab{ ... } (the same values for all), then
      w:spawn(N, pf).
  S5  w:clone(e) of one entity with the three components, CLONES times.

Position and Velocity are {f32, f32}, Health {i32}, as in the README.

Usage: LUA_PATH='build-rel/?.lua;build-rel/?/init.lua' LUA_CPATH='build-rel/?.so' \
       lua5.4 bench/bench_spawn.lua [N]        (N defaults to 100000)
]]
local ecs = require("ecs")
local N = tonumber(arg and arg[1]) or 100000
local RUNS = 3
local CLONES = 10000
local clock = os.clock

local function best_of(fn)
  local b = math.huge
  for _ = 1, RUNS do
    collectgarbage("collect")
    local t = fn()
    if t < b then b = t end
  end
  return b
end

local function report(name, value, unit)
  print(("%-64s %12.3f %s"):format(name, value, unit))
end

local function ratio(name, a, b, target)
  print(("%-64s %12.2f   (target %s)"):format(name, a / b, target))
end

local function world()
  local w = ecs.world()
  local P = w:component("Position", { "x:f32", "y:f32" })
  local V = w:component("Velocity", { "dx:f32", "dy:f32" })
  local H = w:component("Health", { "hp:i32" })
  return w, P, V, H
end

-- the per-entity input every variant starts from (not timed)
local xs, ys = {}, {}
for i = 1, N do xs[i], ys[i] = i, i * 0.5 end

-- {============================ S0 ============================
-- The baseline pure-Lua ECS of bench_query.lua (entities as tables,
-- components as fields holding a table each): what spawning these
-- entities costs there, create + three adds per entity.
local function s0()
  local ents = {}
  local function create() local e = {}; ents[e] = true; return e end
  local function add(e, name, value) e[name] = value end
  local list = {}
  local t = clock()
  for i = 1, N do
    local e = create()
    add(e, "Position", { x = xs[i], y = ys[i] })
    add(e, "Velocity", { dx = 1, dy = 0 })
    add(e, "Health", { hp = 100 })
    list[i] = e
  end
  t = clock() - t
  assert(#list == N and next(ents) ~= nil)
  return t
end
-- }=============================================================

-- {============================ S1 ============================
local function s1()
  local t = clock()
  local Position = { x = {}, y = {} }
  local Velocity = { dx = {}, dy = {} }
  local Health = { hp = {} }
  local ids = {}
  local px, py, vdx, vdy, hp = Position.x, Position.y, Velocity.dx, Velocity.dy, Health.hp
  for i = 1, N do
    ids[i] = i
    px[i], py[i] = xs[i], ys[i]
    vdx[i], vdy[i] = 1, 0
    hp[i] = 100
  end
  t = clock() - t
  assert(#ids == N and #hp == N)
  return t
end
-- }=============================================================

-- {============================ S2 ============================
local function s2()
  local w, P, V, H = world()
  local t = clock()
  local es = w:create(N)
  for i = 1, N do
    local e = es[i]
    P:add(e, xs[i], ys[i]); V:add(e, 1, 0); H:add(e, 100)
  end
  t = clock() - t
  assert(w:count() == N and H:count() == N)
  w:close()
  return t
end
-- }=============================================================

-- {============================ S3 ============================
local function s3()
  local w, _, _, H = world()
  local t = clock()
  local es = w:spawn(N, { Position = { x = xs, y = ys }, Velocity = { dx = 1, dy = 0 },
                          Health = { hp = 100 } })
  t = clock() - t
  assert(#es == N and H:count() == N)
  w:close()
  return t
end
-- }=============================================================

-- {============================ S3w ===========================
-- The same spawn into a warm world: N entities spawned, destroyed and
-- reclaimed (gc) first, so the columns, maps and entity slots are there
-- and the spawn pays for its work, not for the first touch of fresh pages
-- (which on this virtual machine costs more than the spawn). The baseline
-- is S1 into tables that already have their arrays (S1w).
local function s3w()
  local w, P, V, H = world()
  local function warm()
    w:destroy(w:spawn(N, { Position = true, Velocity = true, Health = true }))
    P:gc(); V:gc(); H:gc()
  end
  warm()
  local t = clock()
  local es = w:spawn(N, { Position = { x = xs, y = ys }, Velocity = { dx = 1, dy = 0 },
                          Health = { hp = 100 } })
  t = clock() - t
  assert(#es == N and H:count() == N)
  w:close()
  return t
end

local s1w_tables
local function s1w()
  if not s1w_tables then
    s1w_tables = { {}, {}, {}, {}, {}, {} }
    for _, a in ipairs(s1w_tables) do for i = 1, N do a[i] = 0 end end
  end
  local ids, px, py, vdx, vdy, hp = table.unpack(s1w_tables)
  local t = clock()
  for i = 1, N do
    ids[i] = i
    px[i], py[i] = xs[i], ys[i]
    vdx[i], vdy[i] = 1, 0
    hp[i] = 100
  end
  t = clock() - t
  assert(#ids == N and #hp == N)
  return t
end
-- }=============================================================

-- {============================ S4 ============================
local function s4()
  local w, _, _, H = world()
  local t = clock()
  local pf = w:prefab({ Position = { x = 1, y = 2 }, Velocity = { dx = 1, dy = 0 },
                        Health = { hp = 100 } })
  local es = w:spawn(N, pf)
  t = clock() - t
  assert(#es == N and H:count() == N)
  w:close()
  return t
end
-- }=============================================================

-- {============================ S6 ============================
-- A prefab of 10 components (4 to 16 bytes each, 100 bytes in all, plus
-- the owner column), against its floor: w:create(N) plus one copy of the
-- component bytes (measured as string.rep of N * 100 bytes: one fill of
-- fresh memory, what a memcpy into new columns costs). Target: at most 2x.
local TEN = 10
local function ten_world()
  local w = ecs.world()
  local spec, bytes = {}, 0
  for k = 1, TEN do
    local fields, vals = {}, {}
    for f = 1, (k % 4) + 1 do fields[f] = "f" .. f .. ":f32"; vals[f] = k + f end
    w:component("C" .. k, fields)
    spec["C" .. k] = vals
    bytes = bytes + #fields * 4
  end
  return w, spec, bytes
end

local function s6()
  local w, spec = ten_world()
  local pf = w:prefab(spec)
  local t = clock()
  local es = w:spawn(N, pf)
  t = clock() - t
  assert(#es == N)
  w:close()
  return t
end

local function s6_floor()
  local w, _, bytes = ten_world()
  local t = clock()
  local es = w:create(N)
  local copy = string.rep("x", N * bytes)
  t = clock() - t
  assert(#es == N and #copy == N * bytes)
  w:close()
  return t
end
-- }=============================================================

-- {============================ S5 ============================
local function s5()
  local w, P, V, H = world()
  local e = w:create()
  P:add(e, 1, 2); V:add(e, 1, 0); H:add(e, 100)
  local clone = w.clone
  local t = clock()
  for _ = 1, CLONES do clone(w, e) end
  t = clock() - t
  assert(w:count() == CLONES + 1 and H:count() == CLONES + 1)
  w:close()
  return t
end
-- }=============================================================

print(("spawn N=%d entities, Position{x,y:f32} Velocity{dx,dy:f32} Health{hp:i32}, best of %d")
  :format(N, RUNS))
local base_ecs = best_of(s0)
local base = best_of(s1)
local per_call = best_of(s2)
local spawn = best_of(s3)
local spawn_warm = best_of(s3w)
local base_warm = best_of(s1w)
local prefab = best_of(s4)
local clone = best_of(s5)
local ten = best_of(s6)
local ten_floor = best_of(s6_floor)
report("S0 baseline pure-Lua ECS (bench_query's): create + 3 adds (ns per entity)",
       base_ecs * 1e9 / N, "ns")
report("S1 plain Lua: ids + 3 tables of arrays, one loop (ns per entity)", base * 1e9 / N, "ns")
report("S2 w:create(n) + P:add, V:add, H:add (ns per entity)", per_call * 1e9 / N, "ns")
report("S3 spawn into a fresh world (ns per entity)", spawn * 1e9 / N, "ns")
report("S1w plain Lua into grown tables (ns per entity)", base_warm * 1e9 / N, "ns")
report("S3w spawn into a warm world (ns per entity, target <= 60)", spawn_warm * 1e9 / N, "ns")
ratio("S3 / S0 spawn / baseline pure-Lua ECS", spawn, base_ecs, "<= 0.3")
ratio("S3w / S1w warm spawn / plain stores into grown arrays", spawn_warm, base_warm, "none")
report("S4 w:prefab{...} + w:spawn(n, pf) (ns per entity)", prefab * 1e9 / N, "ns")
report(("S5 w:clone(e), 3 components, %d clones (ns per clone)"):format(CLONES),
       clone * 1e9 / CLONES, "ns")
ratio("S3 / S1 spawn / plain stores into new arrays", spawn, base, "none")
ratio("S3 / S2 spawn / one call per component", spawn, per_call, "< 1")
ratio("S4 / S3 prefab / spawn with arrays", prefab, spawn, "<= 1")
ratio("S5 / S2 clone / one entity by calls", clone / CLONES, per_call / N, "none")
report("S6 prefab of 10 components, spawn (ns per entity)", ten * 1e9 / N, "ns")
report("S6 floor: create(n) + one fill of the component bytes (ns per entity)",
       ten_floor * 1e9 / N, "ns")
ratio("S6 / floor", ten, ten_floor, "<= 2")
