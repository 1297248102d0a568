--[[
bench_query.lua -- queries and systems from Lua, next to a baseline pure-Lua
ECS written here (entities as Lua tables of component tables, queries as
cached lists kept up to date on every add/remove) and measured in the same
run:
  W1  create N entities with Position{x,y} and Velocity{dx,dy}
  W2  FRAMES frames of x += dx*dt; y += dy*dt over every entity:
      (a) a plain Lua loop over four plain Lua arrays (the floor)
      (b) the baseline ECS
      (c) ours, q:entities() with get/set (one call per entity)
      (d) ours, q:columns (plain Lua arrays per chunk)
      (e) ours, q:apply (an expression run by C)
      (f) ours, q:run(native) -- motion.integrate, a C system from the
          plugin plugins/motion.c
      (g) a hand-written C loop over the same columns -- bench/bench_query.c,
          run from here when its binary sits next to the module
  W3  remove and re-add Velocity on 10k random entities (then use the query)
  W4  destroy every entity (then use the query and reclaim the storage)
  W5  a new query each frame, counted and dropped (never closed): the
      collector must reclaim its match list, paced by the charges of the
      world's C memory (README, "Memory"); prints the peak of
      world:memory() above the world's own
Prints ns per entity (per frame for W2), best of RUNS, and the ratios.
Usage: LUA_PATH='build/?.lua;build/?/init.lua' LUA_CPATH='build/?.so' \
       lua5.4 bench/bench_query.lua [N]
]]
local ecs = require("ecs")
local N = tonumber(arg and arg[1]) or 100000
local FRAMES = 100
local SLOW_FRAMES = 5      -- for (c), one Lua->C call per entity and component
local CHURN = 10000
local RUNS = 3
local DT = 1 / 60

local clock = os.clock
local best = {}
local function record(name, seconds, per)
  local ns = seconds * 1e9 / per
  if not best[name] or ns < best[name] then best[name] = ns end
end

-- {=================== the baseline: a table-of-tables ECS ===================
local Base = {}
Base.__index = Base

function Base.new() return setmetatable({ ents = {}, queries = {} }, Base) end

function Base:create()
  local e = {}
  self.ents[e] = true
  return e
end

-- A query: the names it needs, its cached list and each entity's position.
function Base:query(...)
  local q = { with = { ... }, list = {}, pos = {} }
  self.queries[#self.queries + 1] = q
  for e in pairs(self.ents) do
    if self:matches(q, e) then q.list[#q.list + 1] = e; q.pos[e] = #q.list end
  end
  return q
end

function Base:matches(q, e)
  for _, n in ipairs(q.with) do if e[n] == nil then return false end end
  return true
end

local function q_insert(q, e)
  local list = q.list
  list[#list + 1] = e
  q.pos[e] = #list
end

local function q_delete(q, e)
  local list, pos = q.list, q.pos
  local i = pos[e]
  local last = list[#list]
  list[i] = last
  pos[last] = i
  list[#list] = nil
  pos[e] = nil
end

function Base:add(e, name, value)
  local had = e[name] ~= nil
  e[name] = value
  if not had then
    for _, q in ipairs(self.queries) do
      if not q.pos[e] and self:matches(q, e) then q_insert(q, e) end
    end
  end
end

function Base:remove(e, name)
  if e[name] == nil then return false end
  e[name] = nil
  for _, q in ipairs(self.queries) do
    if q.pos[e] and not self:matches(q, e) then q_delete(q, e) end
  end
  return true
end

function Base:destroy(e)
  if not self.ents[e] then return false end
  for _, q in ipairs(self.queries) do
    if q.pos[e] then q_delete(q, e) end
  end
  self.ents[e] = nil
  return true
end
-- }==========================================================================

-- The native system: motion.integrate from the example plugin
-- plugins/motion.c (ecs_lua_push_native), when it is built.
local native
do
  local ok, motion = pcall(require, "ecs.motion")
  if ok then
    native = motion.integrate("Position.x", "Velocity.dx:in", "Position.y", "Velocity.dy:in")
  end
end

-- The C loop: bench_query_c built next to the module (cmake puts both in
-- the build directory), run once here with the same N and FRAMES.
local c_loop, c_native, c_program
do
  local so = package.searchpath("ecs.core", package.cpath)
  local dir = so and so:match("^(.*/)ecs/[^/]*$")
  local exe = dir and (dir .. "bench_query_c")
  local f = exe and io.open(exe, "rb")
  if f then
    f:close()
    local p = io.popen(("%q %d %d"):format(exe, N, FRAMES))
    if p then
      for line in p:lines() do
        local k, v = line:match("^(%S+)%s+ns/entity%s+([%d%.]+)")
        if k == "c_loop" then c_loop = tonumber(v)
        elseif k == "native" then c_native = tonumber(v)
        elseif k == "program" then c_program = tonumber(v) end
      end
      p:close()
    end
  end
end

local EXPR = "Position.x += Velocity.dx * dt; Position.y += Velocity.dy * dt"

for _ = 1, RUNS do
  collectgarbage("collect")
  -- the initial values, shared by every variant
  local ix, iy, idx, idy = {}, {}, {}, {}
  for i = 1, N do ix[i] = i * 0.5; iy[i] = -i * 0.25; idx[i] = (i % 7) - 3; idy[i] = (i % 5) - 2 end

  -- W1: create ------------------------------------------------------------
  local base = Base.new()
  local bq = base:query("Position", "Velocity")
  local bents = {}
  collectgarbage("collect")
  local t = clock()
  for i = 1, N do
    local e = base:create()
    base:add(e, "Position", { x = ix[i], y = iy[i] })
    base:add(e, "Velocity", { dx = idx[i], dy = idy[i] })
    bents[i] = e
  end
  record("W1 create: baseline", clock() - t, N)

  local w = ecs.world()
  local P = w:component("Position", { "x:f32", "y:f32" })
  local V = w:component("Velocity", { "dx:f32", "dy:f32" })
  local q = w:query(P, V)
  collectgarbage("collect")
  t = clock()
  local es = w:create(N)
  for i = 1, N do
    local e = es[i]
    P:add(e, ix[i], iy[i])
    V:add(e, idx[i], idy[i])
  end
  assert(q:count() == N)
  record("W1 create: ours", clock() - t, N)

  -- W2: move ----------------------------------------------------------------
  do -- (a) the floor
    local x, y, dx, dy = {}, {}, {}, {}
    for i = 1, N do x[i] = ix[i]; y[i] = iy[i]; dx[i] = idx[i]; dy[i] = idy[i] end
    collectgarbage("collect")
    t = clock()
    for _ = 1, FRAMES do
      for i = 1, N do x[i] = x[i] + dx[i] * DT; y[i] = y[i] + dy[i] * DT end
    end
    record("W2 (a) floor: plain Lua arrays", clock() - t, N * FRAMES)
    assert(x[N] == x[N] and y[N] == y[N])
  end

  do -- (b) baseline
    collectgarbage("collect")
    t = clock()
    for _ = 1, FRAMES do
      local list = bq.list
      for i = 1, #list do
        local e = list[i]
        local p, v = e.Position, e.Velocity
        p.x = p.x + v.dx * DT
        p.y = p.y + v.dy * DT
      end
    end
    record("W2 (b) baseline ECS", clock() - t, N * FRAMES)
  end

  do -- (c) entities + get/set
    collectgarbage("collect")
    t = clock()
    for _ = 1, SLOW_FRAMES do
      for e in q:entities() do
        local x, y = P:get(e)
        local dx, dy = V:get(e)
        P:set(e, x + dx * DT, y + dy * DT)
      end
    end
    record("W2 (c) ours: entities() + get/set", clock() - t, N * SLOW_FRAMES)
  end

  do -- (d) columns
    collectgarbage("collect")
    t = clock()
    for _ = 1, FRAMES do
      for n, x, y, dx, dy in q:columns("Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") do
        for i = 1, n do x[i] = x[i] + dx[i] * DT; y[i] = y[i] + dy[i] * DT end
      end
    end
    record("W2 (d) ours: columns", clock() - t, N * FRAMES)
  end

  do -- (e) apply
    local params = { dt = DT }
    q:apply(EXPR, params)                 -- compile once (cached by text)
    collectgarbage("collect")
    t = clock()
    for _ = 1, FRAMES do q:apply(EXPR, params) end
    record("W2 (e) ours: apply", clock() - t, N * FRAMES)
  end

  if native and q.run then -- (f) native system
    q:run(native, DT)
    collectgarbage("collect")
    t = clock()
    for _ = 1, FRAMES do q:run(native, DT) end
    record("W2 (f) ours: native C system", clock() - t, N * FRAMES)
  end

  -- W3: churn Velocity ------------------------------------------------------
  do
    math.randomseed(7)
    local pick = {}
    for k = 1, CHURN do pick[k] = math.random(N) end
    collectgarbage("collect")
    t = clock()
    for k = 1, CHURN do
      local e = bents[pick[k]]
      local v = e.Velocity
      base:remove(e, "Velocity")
      base:add(e, "Velocity", v)
    end
    assert(#bq.list == N)
    record("W3 re-add Velocity: baseline", clock() - t, CHURN)

    collectgarbage("collect")
    t = clock()
    for k = 1, CHURN do
      local e = es[pick[k]]
      local dx, dy = V:get(e)
      V:remove(e)
      V:add(e, dx, dy)
    end
    assert(q:count() == N)                -- the query is rebuilt here
    record("W3 re-add Velocity: ours", clock() - t, CHURN)
  end

  -- W5: a query per frame, left to the collector ------------------------------
  do
    collectgarbage("collect")
    local base_mem, peak = w:memory(), 0
    t = clock()
    for _ = 1, FRAMES do
      assert(w:query(P, V):count() == N)
      local m = w:memory()
      if m > peak then peak = m end
    end
    record("W5 query per frame (count, dropped)", clock() - t, N * FRAMES)
    local mb = (peak - base_mem) / 1e6
    if not best.w5_peak or mb > best.w5_peak then best.w5_peak = mb end
  end

  -- W4: destroy all -----------------------------------------------------------
  do
    collectgarbage("collect")
    t = clock()
    for i = 1, N do base:destroy(bents[i]) end
    assert(#bq.list == 0)
    record("W4 destroy all: baseline", clock() - t, N)

    collectgarbage("collect")
    t = clock()
    w:destroy(es)
    assert(q:count() == 0)
    P:gc(); V:gc()
    record("W4 destroy all: ours (+ query, gc)", clock() - t, N)
  end
  w:close()
end

if c_loop then best["W2 (g) C loop over the columns"] = c_loop end

local order = {
  "W1 create: baseline", "W1 create: ours",
  "W2 (a) floor: plain Lua arrays", "W2 (b) baseline ECS", "W2 (c) ours: entities() + get/set",
  "W2 (d) ours: columns", "W2 (e) ours: apply", "W2 (f) ours: native C system",
  "W2 (g) C loop over the columns",
  "W3 re-add Velocity: baseline", "W3 re-add Velocity: ours",
  "W4 destroy all: baseline", "W4 destroy all: ours (+ query, gc)",
  "W5 query per frame (count, dropped)",
}
local floor, baseline = best["W2 (a) floor: plain Lua arrays"], best["W2 (b) baseline ECS"]
print(("queries from Lua: %d entities, Position{x:f32,y:f32} Velocity{dx:f32,dy:f32}, " ..
       "W2 = %d frames, best of %d"):format(N, FRAMES, RUNS))
print(("%-40s %10s %10s %10s"):format("workload", "ns/entity", "x floor", "x baseline"))
for _, name in ipairs(order) do
  local v = best[name]
  if v then
    if name:sub(1, 2) == "W2" then
      print(("%-40s %10.2f %10.2f %10.3f"):format(name, v, v / floor, v / baseline))
    else
      print(("%-40s %10.2f %10s %10s"):format(name, v, "", ""))
    end
  else
    print(("%-40s %10s"):format(name, "n/a"))
  end
end

local function ratio(label, a, b, target)
  if a and b then
    print(("%-28s %8.2f   (target %s)"):format(label, a / b, target))
  else
    print(("%-28s %8s   (target %s)"):format(label, "n/a", target))
  end
end
local cols, apply, nat = best["W2 (d) ours: columns"], best["W2 (e) ours: apply"],
  best["W2 (f) ours: native C system"]
print()
ratio("columns / floor", cols, floor, "<= 2")
ratio("columns / baseline", cols, baseline, "< 1")
ratio("baseline / apply", baseline, apply, ">= 20")
ratio("baseline / native", baseline, nat, ">= 20")
ratio("apply / C loop", apply, c_loop, "<= 3")
if c_native and c_program and c_loop then
  print(("in C (bench_query_c): native %.2f ns, program %.2f ns, C loop %.2f ns per entity")
    :format(c_native, c_program, c_loop))
end
if best.w5_peak then
  print(("W5: match lists alive at the peak took %.1f MB of C memory (one takes %.1f MB)")
    :format(best.w5_peak, N * 16 / 1e6))
end
print(("W1 ours / baseline %.2f, W3 ours / baseline %.2f, W4 ours / baseline %.2f"):format(
  best["W1 create: ours"] / best["W1 create: baseline"],
  best["W3 re-add Velocity: ours"] / best["W3 re-add Velocity: baseline"],
  best["W4 destroy all: ours (+ query, gc)"] / best["W4 destroy all: baseline"]))
