--[[
bench_churn.lua -- what queries and storage cost while the world changes:
the figures the incremental-query work is judged by, each next to a
baseline measured in the same run (these machines are noisy: read the
ratios, not the nanoseconds).

  C1  structural-change cost per query: a world of N entities and five
      queries, (P,V) (P,H) (P) (P,V,H) (P without H); each frame creates
      one entity with P and V, destroys one, then uses every query
      (q:count). Reported: (frame with the queries - the same frame in a
      world without them) per query per change, at N and at 10 N.
  C2  1000 spawns + 1000 despawns per frame in a world of 10 N with ten
      queries used once per frame: the frame's query upkeep (frame with
      the queries - frame without them) against the spawns and despawns
      themselves.
  C3  q:apply over (P,V) after CHURN random remove/re-adds of V, against
      the same on a fresh world (rows no longer aligned).
  C4  per-entity from Lua (iterate, read four values, write two) against
      the plain-Lua floor (one loop over four Lua arrays).
  C5  bytes per component instance in a world of N / 10 ... entities with
      TYPES component types and PER components each, against the ideal
      (component bytes + 8 per instance).

Usage: LUA_PATH='build/?.lua;build/?/init.lua' LUA_CPATH='build/?.so' \
       lua5.4 bench/bench_churn.lua [N]        (N defaults to 100000)
]]
local ecs = require("ecs")
local N = tonumber(arg and arg[1]) or 100000
local FRAMES = 50
local CHURN = 10000
local RUNS = 3
local DT = 1 / 60
local clock = os.clock

local function best_of(fn)
  local b = math.huge
  for _ = 1, RUNS do
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

-- A world of n entities: all have P; half V; a third H.
local function populate(n)
  local w = ecs.world()
  local P = w:component("P", { "x:f32", "y:f32" })
  local V = w:component("V", { "dx:f32", "dy:f32" })
  local H = w:component("H", { "hp:f32" })
  local es = w:create(n)
  for i = 1, n do
    local e = es[i]
    P:add(e, i, i)
    if i % 2 == 0 then V:add(e, 1, 1) end
    if i % 3 == 0 then H:add(e, 100) end
  end
  return w, P, V, H, es
end

-- {============================ C1 ============================
-- Each frame: one spawn (create, P, V) and one despawn, then every query
-- is used (q:count(), which is where a stale list would be rebuilt). The
-- same frames in a world of the same entities and no query are the
-- baseline: the difference is the queries' upkeep.
local C1_FRAMES = 2000
local function c1(n, with_queries)
  local w, P, V, H, es = populate(n)
  local qs = {}
  if with_queries then
    qs = { w:query(P, V), w:query(P, H), w:query(P), w:query(P, V, H),
           w:query({ P, without = { H } }) }
  end
  for _, q in ipairs(qs) do q:count() end
  local vi = 0
  local function frames()
    local t = clock()
    for _ = 1, C1_FRAMES do
      local e = w:create()
      P:add(e, 0, 0); V:add(e, 1, 1)
      vi = vi + 1
      w:destroy(es[vi])
      for k = 1, #qs do qs[k]:count() end
    end
    return (clock() - t) / C1_FRAMES
  end
  local s = best_of(frames)
  w:close()
  return s
end

local function c1_upkeep(n)
  local bare, queried = c1(n, false), c1(n, true)
  return (queried - bare) / 5 * 1e6, bare * 1e6, queried * 1e6
end
local per_q_small, bare_s, queried_s = c1_upkeep(N)
report(("C1 frame (spawn + despawn), no query, N=%d (us)"):format(N), bare_s, "us")
report(("C1 the same with five queries counted (us)"), queried_s, "us")
report(("C1 upkeep per query per change, N=%d"):format(N), per_q_small, "us")
local per_q_big = c1_upkeep(N * 10)
report(("C1 upkeep per query per change, N=%d"):format(N * 10), per_q_big, "us")
print(("%-64s %12s   (target <= 1.5; both under 1 us)"):format(
  "C1 upkeep at 10 N / at N", ("%.2f"):format(per_q_big / math.max(per_q_small, 1e-3))))
-- }=============================================================

-- {============================ C2 ============================
local function c2(n, nqueries)
  local w, P, V, H = populate(n)
  local Q = {}
  local kinds = { { P }, { P, V }, { P, H }, { P, V, H }, { V }, { H },
                  { P, without = { H } }, { P, without = { V } },
                  { V, H }, { V, without = { H } } }
  for k = 1, nqueries do Q[k] = w:query(kinds[k]) ; Q[k]:count() end
  local live = {}
  local t
  -- 20 frames of warm-up (the lists' growth to their steady size is paid
  -- once, not per frame), then 100 timed frames
  for frame = 1, 120 do
    if frame == 21 then t = clock() end
    local es = w:create(1000)
    for i = 1, 1000 do P:add(es[i], 0, 0); V:add(es[i], 1, 1) end
    for i = 1, #live do w:destroy(live[i]) end
    live = es
    for k = 1, nqueries do Q[k]:count() end
  end
  local s = (clock() - t) / 100
  w:close()
  return s
end
local bare = best_of(function() return c2(N * 10, 0) end)
local queried = best_of(function() return c2(N * 10, 10) end)
report("C2 frame of 1000 spawns + 1000 despawns, no query (ms)", bare * 1e3, "ms")
report("C2 the same with ten queries used each frame (ms)", queried * 1e3, "ms")
ratio("C2 query upkeep / spawn+despawn cost", queried - bare, bare, "<= 1")
-- }=============================================================

-- {============================ C3 ============================
do
  -- every entity has P and V, so a fresh world's rows line up
  local w = ecs.world()
  local P = w:component("P", { "x:f32", "y:f32" })
  local V = w:component("V", { "dx:f32", "dy:f32" })
  local es = w:create(N)
  for i = 1, N do P:add(es[i], i, i); V:add(es[i], 1, 1) end
  local q = w:query(P, V)
  local params = { dt = DT }
  local expr = "P.x += V.dx * dt; P.y += V.dy * dt"
  q:apply(expr, params)
  local function run()
    local t = clock()
    for _ = 1, FRAMES do q:apply(expr, params) end
    return (clock() - t) / FRAMES
  end
  local fresh = best_of(run)
  math.randomseed(12345)
  for _ = 1, CHURN do
    local e = es[math.random(1, N)]
    V:remove(e)
    V:add(e, 1, 1)
  end
  local t0 = clock()
  q:apply(expr, params) -- the run that re-aligns the managers to the list
  local first = clock() - t0
  local churned = best_of(run)
  report("C3 first apply after the churn (re-aligns; ms)", first * 1e3, "ms")
  report("C3 apply (P,V) on a fresh world (ns per matched entity)",
         fresh * 1e9 / q:count(), "ns")
  report("C3 the same after 10k remove/re-adds of V", churned * 1e9 / q:count(), "ns")
  ratio("C3 apply after churn / fresh", churned, fresh, "<= 1.3")
  w:close()
end
-- }=============================================================

-- {============================ C4 ============================
do
  local w, P, V = populate(N)
  local q = w:query(P, V)
  local n = q:count()
  local xs, ys, dxs, dys = {}, {}, {}, {}
  for i = 1, n do xs[i], ys[i], dxs[i], dys[i] = i, i, 1, 1 end
  local floor = best_of(function()
    local t = clock()
    for _ = 1, 5 do
      for i = 1, n do
        xs[i] = xs[i] + dxs[i] * DT
        ys[i] = ys[i] + dys[i] * DT
      end
    end
    return (clock() - t) / 5
  end)
  local per_entity = best_of(function()
    local t = clock()
    for _ = 1, 5 do
      for e in q:entities() do
        local x, y = P:get(e)
        local dx, dy = V:get(e)
        P:set(e, x + dx * DT, y + dy * DT)
      end
    end
    return (clock() - t) / 5
  end)
  local function move(_, x, y, dx, dy) return x + dx * DT, y + dy * DT end
  local each = best_of(function()
    local t = clock()
    for _ = 1, 5 do q:each(move, "P.x", "P.y", "V.dx:in", "V.dy:in") end
    return (clock() - t) / 5
  end)
  report("C4 plain-Lua floor (ns per entity)", floor * 1e9 / n, "ns")
  report("C4 q:entities + P:get, V:get, P:set (ns per entity)", per_entity * 1e9 / n, "ns")
  report("C4 q:each(fn, 'P.x', 'P.y', 'V.dx:in', 'V.dy:in') (ns per entity)",
         each * 1e9 / n, "ns")
  ratio("C4 q:entities path / floor", per_entity, floor, "the tutorial's path")
  ratio("C4 q:each / floor", each, floor, "<= 4")
  w:close()
end
-- }=============================================================

-- {============================ C5 ============================
do
  local TYPES, PER = 150, 12
  local n = N
  local w = ecs.world()
  local before = w:memory()
  local cs, bytes = {}, {}
  for k = 1, TYPES do
    -- sizes from 4 to 16 bytes: one to four f32 fields
    local fields = {}
    for f = 1, (k % 4) + 1 do fields[f] = "f" .. f .. ":f32" end
    cs[k] = w:component("C" .. k, fields)
    bytes[k] = #fields * 4
  end
  local es = w:create(n)
  local ideal = 0
  math.randomseed(7)
  for i = 1, n do
    -- PER distinct types per entity, spread over all TYPES
    local start = math.random(1, TYPES)
    for j = 0, PER - 1 do
      local k = (start + j * 12) % TYPES + 1
      cs[k]:add(es[i])
      ideal = ideal + bytes[k] + 8
    end
  end
  local used = w:memory() - before - 4 * n -- the entity slots are not per instance
  report(("C5 bytes per instance, %d entities x %d of %d types"):format(n, PER, TYPES),
         used / (n * PER), "B")
  report("C5 ideal bytes per instance (component bytes + 8)", ideal / (n * PER), "B")
  ratio("C5 bytes / ideal", used, ideal, "<= 1.3")
  w:close()
end
-- }=============================================================
