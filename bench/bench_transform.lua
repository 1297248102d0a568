--[[
bench_transform.lua -- moving 10k roots with 4 children each, per frame: set
every root's local position, then read every leaf's world position. Three
ways through world.transform -- one call per entity, the batch calls
(set_local_positions + world_positions), and the batch set with per-leaf
reads -- next to a naive pure-Lua scene graph (a table per node, recursive
update) measured in the same run. Prints ns per node (frame time / 50k).
Usage: lua5.4 bench/bench_transform.lua [roots]  (ecs on package.path/cpath)
]]
local ecs = require("ecs")
local ROOTS = tonumber(arg and arg[1]) or 10000
local KIDS = 4
local NODES = ROOTS * (KIDS + 1)
local FRAMES = 10
local RUNS = 5
local C, S = math.cos(math.pi / 8), math.sin(math.pi / 8)

local function best(fn)
  local b = math.huge
  for _ = 1, RUNS do
    collectgarbage("collect")
    local t = os.clock()
    fn()
    t = os.clock() - t
    if t < b then b = t end
  end
  return b * 1e9 / FRAMES / NODES
end

-- {=============== naive pure-Lua scene graph (the baseline) ===============
local function naive_local(n)
  local x, y, z, w = n.q[1], n.q[2], n.q[3], n.q[4]
  local sx, sy, sz = n.s[1], n.s[2], n.s[3]
  return {
    (1 - 2 * (y * y + z * z)) * sx, 2 * (x * y + z * w) * sx, 2 * (x * z - y * w) * sx, 0,
    2 * (x * y - z * w) * sy, (1 - 2 * (x * x + z * z)) * sy, 2 * (y * z + x * w) * sy, 0,
    2 * (x * z + y * w) * sz, 2 * (y * z - x * w) * sz, (1 - 2 * (x * x + y * y)) * sz, 0,
    n.p[1], n.p[2], n.p[3], 1,
  }
end

local function naive_mul(a, b)
  local o = {}
  for c = 0, 3 do
    for r = 1, 4 do
      o[c * 4 + r] = a[r] * b[c * 4 + 1] + a[4 + r] * b[c * 4 + 2] + a[8 + r] * b[c * 4 + 3]
        + a[12 + r] * b[c * 4 + 4]
    end
  end
  return o
end

local function naive_update(n)
  local l = naive_local(n)
  n.world = n.parent and naive_mul(n.parent.world, l) or l
  for i = 1, #n.children do naive_update(n.children[i]) end
end

local function naive_node(parent)
  local n = { p = { 1, 0, 0 }, q = { 0, 0, S, C }, s = { 1, 1, 1 }, parent = parent, children = {} }
  if parent then parent.children[#parent.children + 1] = n end
  return n
end
-- }==========================================================================

local nroots, nleaves = {}, {}
for r = 1, ROOTS do
  local root = naive_node(nil)
  nroots[r] = root
  for _ = 1, KIDS do nleaves[#nleaves + 1] = naive_node(root) end
  naive_update(root)
end

local t_naive = best(function()
  local sum = 0
  for f = 1, FRAMES do
    for r = 1, ROOTS do
      local n = nroots[r]
      n.p[1], n.p[2] = r + f * 0.01, f
      naive_update(n)
    end
    for i = 1, #nleaves do sum = sum + nleaves[i].world[13] end
  end
  return sum
end)

local w = ecs.world()
local T = w.transform
local roots, leaves = {}, {}
for r = 1, ROOTS do
  local root = w:create()
  T:add(root, { position = { 1, 0, 0 }, rotation = { 0, 0, S, C } })
  roots[r] = root
  for _ = 1, KIDS do
    local k = w:create()
    T:add(k, { position = { 1, 0, 0 }, rotation = { 0, 0, S, C } })
    T:set_parent(k, root)
    leaves[#leaves + 1] = k
  end
end

local t_calls = best(function()
  local sum = 0
  for f = 1, FRAMES do
    for r = 1, ROOTS do T:set_local_position(roots[r], r + f * 0.01, f, 0) end
    for i = 1, #leaves do
      local x = T:world_position(leaves[i])
      sum = sum + x
    end
  end
  return sum
end)

local xs, ys, zs = {}, {}, {}
local lx, ly, lz = {}, {}, {}
local t_batch = best(function()
  local sum = 0
  for f = 1, FRAMES do
    for r = 1, ROOTS do xs[r], ys[r], zs[r] = r + f * 0.01, f, 0 end
    T:set_local_positions(roots, xs, ys, zs)
    T:world_positions(leaves, lx, ly, lz)
    for i = 1, #leaves do sum = sum + lx[i] end
  end
  return sum
end)

-- the query way (docs/transform.md, "Transforms in queries"): roots moved by
-- q:apply over a query of Root and the transform's columns, leaves' world
-- positions read through q:columns
local Root, Leaf = w:component("Root", {}), w:component("Leaf", {})
for r = 1, ROOTS do Root:add(roots[r]) end
for i = 1, #leaves do Leaf:add(leaves[i]) end
local qroots, qleaves = w:query(Root, T), w:query(Leaf, T)
local params = { f = 0 }
local t_query = best(function()
  local sum = 0
  for f = 1, FRAMES do
    params.f = f
    qroots:apply("transform.py = f; transform.px += 0.01", params)
    for n, wx in qleaves:columns("transform.wx:in") do
      for i = 1, n do sum = sum + wx[i] end
    end
  end
  return sum
end)

local t_set_only_calls = best(function()
  for f = 1, FRAMES do
    for r = 1, ROOTS do T:set_local_position(roots[r], r + f * 0.01, f, 0) end
  end
end)

local t_set_only_batch = best(function()
  for f = 1, FRAMES do
    for r = 1, ROOTS do xs[r], ys[r], zs[r] = r + f * 0.01, f, 0 end
    T:set_local_positions(roots, xs, ys, zs)
  end
end)

-- the two ways agree
T:set_local_positions(roots, xs, ys, zs)
local bx = T:world_positions(leaves)
for r = 1, ROOTS do T:set_local_position(roots[r], xs[r], ys[r], zs[r]) end
for i = 1, #leaves, 97 do
  assert(math.abs(bx[i] - T:world_position(leaves[i])) < 1e-9)
  assert(math.abs(bx[i] - nleaves[i].world[13]) < 1e-9) -- same scene as the baseline
end
w:close()

print(("transform from Lua: %d roots x %d children, %d frames, best of %d"):format(
  ROOTS, KIDS, FRAMES, RUNS))
print(("%-52s %9s %9s"):format("frame (set roots, read leaves)", "ns/node", "x naive"))
local function row(name, t) print(("%-52s %9.1f %9.2f"):format(name, t, t / t_naive)) end
row("naive pure-Lua scene graph (baseline)", t_naive)
row("world.transform, one call per entity", t_calls)
row("world.transform, batch set + batch read", t_batch)
row("set only: one call per root", t_set_only_calls)
row("set only: set_local_positions", t_set_only_batch)
row("query: q:apply on roots + q:columns read of leaves", t_query)
print(("batch frame is %.1fx faster than one call per entity; batch set %.1fx faster; "
  .. "the query frame %.1fx faster"):format(
  t_calls / t_batch, t_set_only_calls / t_set_only_batch, t_calls / t_query))

-- building a chain, each new node parented to the previous one: linear when
-- set_parent does not walk a leaf child's new ancestors (ratio about 4)
local function chain_build(n)
  local b = math.huge
  for _ = 1, RUNS do
    local cw = ecs.world()
    local CT = cw.transform
    local es = cw:create(n)
    for i = 1, n do CT:add(es[i]) end
    local t = os.clock()
    for i = 2, n do CT:set_parent(es[i], es[i - 1]) end
    t = os.clock() - t
    if t < b then b = t end
    cw:close()
  end
  return b
end
local c10, c40 = chain_build(10000), chain_build(40000)
print(("chain build (set_parent to the previous node): 10k %.2f ms, 40k %.2f ms, "
  .. "ratio 40k/10k %.2f (linear: 4)"):format(c10 * 1e3, c40 * 1e3, c40 / c10))
