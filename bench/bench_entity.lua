--[[
bench_entity.lua -- entity create / alive / destroy from Lua, one call per
entity and batch, next to a plain Lua table of booleans measured in the same
run. Usage: lua5.4 bench/bench_entity.lua  (with ecs on package.cpath/path)
]]
local ecs = require("ecs")
local N = tonumber(arg and arg[1]) or 200000
local RUNS = 5

-- Best time of fn over RUNS runs; setup (untimed) makes fn's argument and
-- teardown (untimed) disposes of it.
local function best(fn, setup, teardown)
  local b = math.huge
  for _ = 1, RUNS do
    local state = setup and setup()
    collectgarbage("collect")
    local t = os.clock()
    fn(state)
    t = os.clock() - t
    if teardown then teardown(state) end
    if t < b then b = t end
  end
  return b
end

local rows = {}
local function row(name, t, base)
  rows[#rows + 1] = { name, t * 1e9 / N, base }
end

-- baseline: a plain Lua table of booleans keyed by integer
local tbl
local t_tcreate = best(function()
  tbl = {}
  for i = 1, N do tbl[i] = true end
end)
local t_talive = best(function()
  local n = 0
  for i = 1, N do if tbl[i] then n = n + 1 end end
  assert(n == N)
end)
local t_tdestroy = best(function(t)
  for i = 1, N do t[i] = nil end
end, function()
  local t = {}
  for i = 1, N do t[i] = true end
  return t
end)

local list
local t_create1 = best(function()
  local w = ecs.world()
  local l = {}
  for i = 1, N do l[i] = w:create() end
  assert(#l == N)
  w:close()
end)
local w = ecs.world()
local t_createn = best(function()
  local w2 = ecs.world()
  list = w2:create(N)
  w2:close()
end)
list = w:create(N)
local t_alive = best(function()
  local n = 0
  local alive = w.alive
  for i = 1, N do if alive(w, list[i]) then n = n + 1 end end
  assert(n == N)
end)
-- destroy: a world with N live entities is made untimed before each run
local function populated()
  local w2 = ecs.world()
  return { w = w2, l = w2:create(N) }
end
local function close(s) s.w:close() end
local t_destroy1 = best(function(s)
  local w2, l = s.w, s.l
  for i = 1, N do w2:destroy(l[i]) end
end, populated, close)
local t_destroyn = best(function(s)
  s.w:destroy(s.l)
end, populated, close)
w:close()

row("table of booleans: set", t_tcreate, t_tcreate)
row("world:create() one call each", t_create1, t_tcreate)
row("world:create(n) batch", t_createn, t_tcreate)
row("table of booleans: read", t_talive, t_talive)
row("world:alive(e)", t_alive, t_talive)
row("table of booleans: clear", t_tdestroy, t_tdestroy)
row("world:destroy(e) one call each", t_destroy1, t_tdestroy)
row("world:destroy(list) batch", t_destroyn, t_tdestroy)

print(string.format("Lua, %d entities, best of %d", N, RUNS))
print(string.format("%-34s %10s %18s", "operation", "ns/entity", "ratio to baseline"))
for _, r in ipairs(rows) do
  print(string.format("%-34s %10.1f %18.2f", r[1], r[2], r[2] / (r[3] * 1e9 / N)))
end
