--[[
bench_pointers.lua -- LuaJIT's zero-copy loop (q:pointers, docs/queries.md),
measured in one run against its two references:
  W2  FRAMES frames of x += dx*dt; y += dy*dt over N entities (f32 fields):
      (a) a plain Lua loop over four plain Lua arrays under LuaJIT (the floor
          of a pure-Lua ECS)
      (b) ours, q:pointers: FFI pointers into the C columns
      (c) a hand-written C loop over the same columns in a world
          (bench/bench_query.c's c_loop, run from here when its binary sits
          next to the module; built with the module's flags, -O2)
      (d) ours, q:columns (plain Lua arrays per chunk), for scale
      (e) ours, q:apply (an expression run by C), for scale
  W2s the same move through q:pointers over a query whose rows are scattered:
      runs of R consecutive rows (R = 1, 4, 16, 64) apart in Position, the
      query under half of Position (so never re-aligned), N / 4 matches;
      each run is a chunk of its own (docs/queries.md, q:pointers "Chunks")
Prints ns per entity per frame, best of RUNS, and the ratios. Each world
runs one untimed frame first (the query's first build, the JIT's traces).
Usage: LUA_PATH='build-luajit/?.lua;build-luajit/?/init.lua' \
       LUA_CPATH='build-luajit/?.so' luajit bench/bench_pointers.lua [N]
]]
local ecs = require("ecs")
local N = tonumber(arg and arg[1]) or 100000
local FRAMES = 100
local RUNS = 5
local DT = 1 / 60
local clock = os.clock

if not rawget(_G, "jit") then
  print("bench_pointers: q:pointers needs LuaJIT (run it with luajit)")
  return
end

local best = {}
local function record(name, seconds)
  local ns = seconds * 1e9 / (N * FRAMES)
  if not best[name] or ns < best[name] then best[name] = ns end
end

-- (c): bench_query_c next to the module, with the same N and FRAMES
local c_loop
do
  local so = package.searchpath and package.searchpath("ecs.core", package.cpath)
  local dir = so and so:match("^(.*/)ecs/[^/]*$")
  local exe = dir and (dir .. "bench_query_c")
  local f = exe and io.open(exe, "rb")
  if f then
    f:close()
    for _ = 1, 3 do
      local p = io.popen(("%q %d %d"):format(exe, N, FRAMES))
      for line in p:lines() do
        local v = line:match("^c_loop%s+ns/entity%s+([%d%.]+)")
        if v and (not c_loop or tonumber(v) < c_loop) then c_loop = tonumber(v) end
      end
      p:close()
    end
  end
end

for _ = 1, RUNS do
  local ix, iy, idx, idy = {}, {}, {}, {}
  for i = 1, N do ix[i] = i * 0.5; iy[i] = -i * 0.25; idx[i] = (i % 7) - 3; idy[i] = (i % 5) - 2 end

  -- (a) plain Lua arrays
  do
    local x, y, dx, dy = {}, {}, {}, {}
    for i = 1, N do x[i], y[i], dx[i], dy[i] = ix[i], iy[i], idx[i], idy[i] end
    collectgarbage("collect")
    local t = clock()
    for _ = 1, FRAMES do
      for i = 1, N do x[i] = x[i] + dx[i] * DT; y[i] = y[i] + dy[i] * DT end
    end
    record("W2 (a) plain Lua arrays (LuaJIT)", clock() - t)
    assert(x[N] == x[N] and y[N] == y[N]) -- the results are used
  end

  local w = ecs.world()
  local P = w:component("Position", { "x:f32", "y:f32" })
  local V = w:component("Velocity", { "dx:f32", "dy:f32" })
  local es = w:create(N)
  for i = 1, N do P:add(es[i], ix[i], iy[i]); V:add(es[i], idx[i], idy[i]) end
  local q = w:query(P, V)
  -- one untimed frame: the query's first build (its match list, O(N) once)
  -- and LuaJIT's compilation of the loop are not per-frame costs
  for n, x, y, dx, dy in q:pointers("Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") do
    for i = 1, n do x[i] = x[i] + dx[i] * DT; y[i] = y[i] + dy[i] * DT end
  end
  collectgarbage("collect")

  -- (b) q:pointers
  local t = clock()
  for _ = 1, FRAMES do
    for n, x, y, dx, dy in q:pointers("Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") do
      for i = 1, n do x[i] = x[i] + dx[i] * DT; y[i] = y[i] + dy[i] * DT end
    end
  end
  record("W2 (b) ours, q:pointers", clock() - t)

  -- (d) q:columns
  t = clock()
  for _ = 1, FRAMES / 10 do
    for n, x, y, dx, dy in q:columns("Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") do
      for i = 1, n do x[i] = x[i] + dx[i] * DT; y[i] = y[i] + dy[i] * DT end
    end
  end
  record("W2 (d) ours, q:columns", (clock() - t) * 10)

  -- (e) q:apply
  t = clock()
  for _ = 1, FRAMES do
    q:apply("Position.x += Velocity.dx * dt; Position.y += Velocity.dy * dt", { dt = DT })
  end
  record("W2 (e) ours, q:apply", clock() - t)
  w:close()
end

-- W2s: runs of R matches, then R + 1 entities with Position alone
local scattered = {}
for _, R in ipairs({ 1, 4, 16, 64 }) do
  local w = ecs.world()
  local P = w:component("Position", { "x:f32", "y:f32" })
  local V = w:component("Velocity", { "dx:f32", "dy:f32" })
  local matches = 0
  while matches < N / 4 do
    for _ = 1, R do
      local e = w:create()
      P:add(e, matches, -matches); V:add(e, 1, -1)
      matches = matches + 1
    end
    for _ = 1, R + 1 do P:add(w:create(), 0, 0) end
  end
  local q = w:query(P, V)
  local function frame()
    for n, x, y, dx, dy in q:pointers("Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") do
      for i = 1, n do x[i] = x[i] + dx[i] * DT; y[i] = y[i] + dy[i] * DT end
    end
  end
  frame()
  collectgarbage("collect")
  for _ = 1, RUNS do
    local t = clock()
    for _ = 1, FRAMES do frame() end
    local ns = (clock() - t) * 1e9 / (matches * FRAMES)
    if not scattered[R] or ns < scattered[R] then scattered[R] = ns end
  end
  w:close()
end

print(("q:pointers on %s: W2 over %d entities, %d frames, best of %d (ns per entity per frame)")
  :format(rawget(_G, "jit").version, N, FRAMES, RUNS))
local names = {}
for k in pairs(best) do names[#names + 1] = k end
table.sort(names)
for _, k in ipairs(names) do print(("  %-36s %7.3f"):format(k, best[k])) end
if c_loop then print(("  %-36s %7.3f"):format("W2 (c) C loop over the same columns", c_loop)) end
for _, R in ipairs({ 1, 4, 16, 64 }) do
  print(("  %-36s %7.3f"):format(("W2s q:pointers, runs of %d rows"):format(R), scattered[R]))
end
local p = best["W2 (b) ours, q:pointers"]
print(("ratio pointers / plain Lua arrays: %.2fx"):format(p / best["W2 (a) plain Lua arrays (LuaJIT)"]))
if c_loop then
  print(("ratio pointers / C loop:           %.2fx (target: within 2x)"):format(p / c_loop))
else
  print("C loop: bench_query_c not found next to the module (build it with cmake)")
end
