--[[
transform_spec.lua -- world.transform through require("ecs"): hand-computed
matrices, hierarchy edits, dead entities, the batch calls, junk arguments,
and a differential test against a naive recursive pure-Lua scene graph
(spec/support/transform_model.lua).
]]
local ecs = require("ecs")
local Model = require("spec.support.transform_model")
local testkit = require("spec.support.testkit")

local S = math.sqrt(0.5)

local function near(a, b, eps)
  return math.abs(a - b) <= (eps or 1e-9)
end

local function assert_matrix(got, want, eps, label)
  for k = 1, 16 do
    if not near(got[k], want[k], eps) then
      error(("%s: m[%d] = %.12g, expected %.12g"):format(label or "matrix", k, got[k], want[k]), 2)
    end
  end
end

local function matrix(T, e) return { T:world_matrix(e) } end

describe("world.transform", function()
  local w, T
  before_each(function()
    w = ecs.world()
    T = w.transform
  end)
  after_each(function()
    local ok, bad = w:check()
    assert(ok, bad)
    w:close()
  end)

  it("is one object per world", function()
    assert.equals(T, w.transform)
    assert.equals("userdata", type(T))
    assert.not_equals(T, ecs.world().transform)
    assert.matches("^ecs.Transform", tostring(T))
  end)

  it("adds identity transforms, or from a table", function()
    local e, f = w:create(), w:create()
    assert.is_false(T:has(e))
    T:add(e)
    assert.is_true(T:has(e))
    assert_matrix(matrix(T, e), { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 })
    T:add(f, { position = { 1, 2, 3 }, rotation = { 0, 0, 0, 2 }, scale = { 4, 5, 6 } })
    assert.same({ 1, 2, 3 }, { T:local_position(f) })
    assert.same({ 0, 0, 0, 1 }, { T:local_rotation(f) })
    assert.same({ 4, 5, 6 }, { T:local_scale(f) })
    assert.same({ 1, 2, 3 }, { T:world_position(f) })
    assert.is_true(T:remove(f))
    assert.is_false(T:remove(f))
    assert.is_false(T:has(f))
  end)

  it("computes hand-checked matrices", function()
    local e = w:create()
    T:add(e, { position = { 1, 2, 3 } })
    assert_matrix(matrix(T, e), { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 2, 3, 1 })
    T:set_local_position(e, 0, 0, 0)
    T:set_local_rotation(e, S, 0, 0, S) -- 90 degrees about x: y -> z
    assert_matrix(matrix(T, e), { 1, 0, 0, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1 })
    T:set_local_rotation(e, 0, S, 0, S) -- about y: z -> x, x -> -z
    assert_matrix(matrix(T, e), { 0, 0, -1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1 })
    T:set_local_rotation(e, 0, 0, S, S) -- about z: x -> y
    assert_matrix(matrix(T, e), { 0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 })
    local q = { T:world_rotation(e) }
    assert.is_true(near(math.abs(q[3]), S) and near(math.abs(q[4]), S))
    T:set_local_rotation(e, 0, 0, 0, 1)
    T:set_local_scale(e, 2, 3, 4) -- non-uniform scale
    assert_matrix(matrix(T, e), { 2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4, 0, 0, 0, 0, 1 })
    -- scale (2,3,4) then rotate z 90: columns are rotated and scaled
    T:set_local_rotation(e, 0, 0, S, S)
    assert_matrix(matrix(T, e), { 0, 2, 0, 0, -3, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 1 })
  end)

  it("propagates down a 5-deep chain, hand-computed", function()
    -- each link: translate (1,0,0), rotate 90 about z; the chain walks a square
    local chain = {}
    for i = 1, 5 do
      chain[i] = w:create()
      T:add(chain[i], { position = { 1, 0, 0 }, rotation = { 0, 0, S, S } })
      if i > 1 then T:set_parent(chain[i], chain[i - 1]) end
    end
    local want = { { 1, 0 }, { 1, 1 }, { 0, 1 }, { 0, 0 }, { 1, 0 } }
    for i = 1, 5 do
      local x, y, z = T:world_position(chain[i])
      assert.is_true(near(x, want[i][1]) and near(y, want[i][2]) and near(z, 0), "node " .. i)
    end
    -- the leaf has turned 4 * 90 + 90 degrees: like one turn
    assert_matrix(matrix(T, chain[5]), { 0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1 })
    -- scaling the root by 2 doubles every offset
    T:set_local_scale(chain[1], 2, 2, 2)
    local x, y = T:world_position(chain[3])
    assert.is_true(near(x, -1) and near(y, 2))
    assert.equals(chain[4], T:parent(chain[5]))
    assert.equals(ecs.null, T:parent(chain[1]))
  end)

  it("reparents keeping the local transform, or the world one", function()
    local a, b, c = w:create(), w:create(), w:create()
    T:add(a, { position = { 10, 0, 0 } })
    T:add(b, { position = { 0, 5, 0 }, scale = { 2, 2, 2 } })
    T:add(c, { position = { 1, 1, 1 } })
    T:set_parent(c, a)
    assert.same({ 11, 1, 1 }, { T:world_position(c) })
    T:set_parent(c, b) -- local kept: world follows b
    assert.same({ 2, 7, 2 }, { T:world_position(c) })
    assert.same({ 1, 1, 1 }, { T:local_position(c) })
    T:set_parent(c, a, true) -- world kept
    local x, y, z = T:world_position(c)
    assert.is_true(near(x, 2) and near(y, 7) and near(z, 2))
    x, y, z = T:local_position(c)
    assert.is_true(near(x, -8) and near(y, 7) and near(z, 2))
    assert.is_true(near(select(1, T:local_scale(c)), 2))
    T:set_parent(c, ecs.null) -- detach, local kept
    assert.equals(ecs.null, T:parent(c))
    x, y, z = T:world_position(c)
    assert.is_true(near(x, -8) and near(y, 7) and near(z, 2))
    T:set_parent(c, b)
    T:set_parent(c, ecs.null, true) -- detach, world kept
    x, y, z = T:world_position(c)
    assert.is_true(near(x, -16) and near(y, 19) and near(z, 4))
    local kids = {}
    T:set_parent(b, a)
    T:set_parent(c, a)
    for k in T:children(a) do kids[#kids + 1] = k end
    assert.same({ b, c }, kids)
  end)

  it("refuses cycles and parents without a transform", function()
    local a, b, c, bare = w:create(), w:create(), w:create(), w:create()
    for _, e in ipairs({ a, b, c }) do T:add(e) end
    T:set_parent(b, a)
    T:set_parent(c, b)
    local cases = {
      { function() T:set_parent(a, a) end, "transform:set_parent: parenting would create a cycle" },
      { function() T:set_parent(a, c) end, "transform:set_parent: parenting would create a cycle" },
      { function() T:set_parent(a, b, true) end, "transform:set_parent: parenting would create a cycle" },
      { function() T:set_parent(a, bare) end, "transform:set_parent: parent has no transform" },
      { function() T:set_parent(bare, a) end, "transform:set_parent: child has no transform" },
    }
    for _, case in ipairs(cases) do
      local ok, err = pcall(case[1])
      assert.is_false(ok)
      assert.equals(case[2], err:match("transform:.*$"))
    end
    assert.equals(ecs.null, T:parent(a))
    assert.equals(b, T:parent(c))
  end)

  it("destroying the middle of a chain leaves the rest as a root, world kept", function()
    local n = {}
    for i = 1, 5 do
      n[i] = w:create()
      T:add(n[i], { position = { 1, 0, 0 }, rotation = { 0, 0, S, S }, scale = { 1, 2, 1 } })
      if i > 1 then T:set_parent(n[i], n[i - 1]) end
    end
    local before4, before5 = matrix(T, n[4]), matrix(T, n[5])
    assert.is_true(w:destroy(n[3]))
    assert.is_false(T:has(n[3]))
    assert.equals(ecs.null, T:parent(n[4]))
    assert.equals(nil, T:children(n[2])())
    assert_matrix(matrix(T, n[4]), before4)
    assert_matrix(matrix(T, n[5]), before5)
    -- the local transform of the new root is its world transform
    local x, y, z = T:local_position(n[4])
    assert.is_true(near(x, before4[13]) and near(y, before4[14]) and near(z, before4[15]))
    -- moving the old root no longer moves them
    T:set_local_position(n[1], 100, 100, 100)
    assert_matrix(matrix(T, n[4]), before4)
    assert_matrix(matrix(T, n[5]), before5)
    -- moving the new root moves its child
    T:set_local_position(n[4], x + 1, y, z)
    assert.is_true(near(select(1, T:world_position(n[5])), before5[13] + 1))
    local kept5 = matrix(T, n[5])
    assert.equals(1, T:gc())
    assert_matrix(matrix(T, n[5]), kept5)
    assert.equals(n[4], T:parent(n[5]))
  end)

  it("destroys whole trees", function()
    local r, a, b, c, other = w:create(), w:create(), w:create(), w:create(), w:create()
    for _, e in ipairs({ r, a, b, c, other }) do T:add(e) end
    T:set_parent(a, r)
    T:set_parent(b, a)
    T:set_parent(c, r)
    assert.equals(4, T:destroy_tree(r))
    for _, e in ipairs({ r, a, b, c }) do assert.is_false(w:alive(e)) end
    assert.is_true(w:alive(other))
    local ok, err = pcall(T.destroy_tree, T, r)
    assert.is_false(ok)
    assert.matches("transform:destroy_tree: entity is not alive", err)
  end)

  it("iterates children in attachment order, a snapshot", function()
    local p = w:create()
    T:add(p)
    local kids = w:create(5)
    for _, k in ipairs(kids) do
      T:add(k)
      T:set_parent(k, p)
    end
    T:set_parent(kids[1], ecs.null)
    T:set_parent(kids[1], p)
    local seen = {}
    for k in T:children(p) do
      seen[#seen + 1] = k
      w:destroy(k) -- does not disturb the iteration
    end
    assert.same({ kids[2], kids[3], kids[4], kids[5], kids[1] }, seen)
    assert.equals(nil, T:children(p)())
  end)

  it("sets many positions at once, like one call per entity", function()
    local w2 = ecs.world()
    local T2 = w2.transform
    local es, fs = {}, {}
    for i = 1, 30 do
      es[i], fs[i] = w:create(), w2:create()
      local init = { position = { i, 0, 0 }, rotation = { 0, 0, 0.1 * i, 1 }, scale = { 1, 1 + i / 10, 1 } }
      T:add(es[i], init)
      T2:add(fs[i], init)
      if i > 1 then
        T:set_parent(es[i], es[i // 2])
        T2:set_parent(fs[i], fs[i // 2])
      end
    end
    local sel, xs, ys, zs = {}, {}, {}, {}
    for i = 1, 30 do
      local j = (i * 7) % 30 + 1
      sel[i], xs[i], ys[i], zs[i] = es[j], j / 3, -j, 2
      T2:set_local_position(fs[j], j / 3, -j, 2)
    end
    T:set_local_positions(sel, xs, ys, zs)
    for i = 1, 30 do assert_matrix(matrix(T, es[i]), matrix(T2, fs[i]), 1e-12) end
    local wx, wy, wz = T:world_positions(es)
    for i = 1, 30 do
      local x, y, z = T2:world_position(fs[i])
      assert.is_true(near(wx[i], x) and near(wy[i], y) and near(wz[i], z))
    end
    -- into given tables
    local ax, ay, az = {}, {}, {}
    local rx = T:world_positions(es, ax, ay, az)
    assert.equals(ax, rx)
    assert.equals(30, #az)
    w2:close()
  end)

  it("sets many rotations and scales at once, like one call per entity", function()
    local w2 = ecs.world()
    local T2 = w2.transform
    local es, fs = {}, {}
    for i = 1, 12 do
      es[i], fs[i] = w:create(), w2:create()
      local init = { position = { i, 1, 0 }, scale = { 1, 2, 1 } }
      T:add(es[i], init)
      T2:add(fs[i], init)
      if i > 1 then
        T:set_parent(es[i], es[(i + 1) // 3])
        T2:set_parent(fs[i], fs[(i + 1) // 3])
      end
    end
    local qx, qy, qz, qw, sx, sy, sz = {}, {}, {}, {}, {}, {}, {}
    for i = 1, 12 do
      qx[i], qy[i], qz[i], qw[i] = 0.1 * i, 0, 0.3, 2
      sx[i], sy[i], sz[i] = 1 + i / 10, 1, 0.5
      T2:set_local_rotation(fs[i], qx[i], qy[i], qz[i], qw[i])
      T2:set_local_scale(fs[i], sx[i], sy[i], sz[i])
    end
    T:set_local_rotations(es, qx, qy, qz, qw)
    T:set_local_scales(es, sx, sy, sz)
    for i = 1, 12 do
      assert_matrix(matrix(T, es[i]), matrix(T2, fs[i]), 1e-12)
      assert.same({ T2:local_position(fs[i]) }, { T:local_position(es[i]) })
    end
    qx[3], qz[3], qw[3] = 0, 0, 0
    local before = matrix(T, es[1])
    assert.matches("transform:set_local_rotations: rotation quaternion must be non%-zero",
      select(2, pcall(T.set_local_rotations, T, es, qx, { 0, 0, 0 }, qz, qw)))
    assert.matches("transform:set_local_scales: zs%[4%] is not a finite number",
      select(2, pcall(T.set_local_scales, T, es, sx, sy, { 1, 1, 1, 0 / 0 })))
    assert_matrix(matrix(T, es[1]), before)
    w2:close()
  end)

  it("checks a whole batch before setting anything", function()
    local a, b, bare = w:create(), w:create(), w:create()
    T:add(a)
    T:add(b)
    local cases = {
      { { a, bare }, { 1, 2 }, { 1, 2 }, { 1, 2 }, "entities%[2%] is not alive or has no transform" },
      { { a, 5 }, { 1, 2 }, { 1, 2 }, { 1, 2 }, "entities%[2%] is not an entity" },
      { { a, b }, { 1, "x" }, { 1, 2 }, { 1, 2 }, "xs%[2%] is not a finite number" },
      { { a, b }, { 1, 2 }, { 1 }, { 1, 2 }, "ys%[2%] is not a finite number" },
      { { a, b }, { 1, 2 }, { 1, 2 }, { 1, 0 / 0 }, "zs%[2%] is not a finite number" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(T.set_local_positions, T, c[1], c[2], c[3], c[4])
      assert.is_false(ok)
      assert.matches("transform:set_local_positions: " .. c[5], err)
      assert.same({ 0, 0, 0 }, { T:world_position(a) })
    end
    assert.has_error(function() T:set_local_positions(nil, {}, {}, {}) end)
    T:set_local_positions({}, {}, {}, {}) -- empty is fine
    local xs = T:world_positions({})
    assert.same({}, xs)
  end)

  it("raises clear errors naming the method, predicates say false", function()
    local e, dead = w:create(), w:create()
    T:add(dead)
    w:destroy(dead)
    local methods = { "set_local_position", "set_local_rotation", "set_local_scale",
      "local_position", "local_rotation", "local_scale", "world_position",
      "world_rotation", "world_matrix", "parent", "children", "destroy_tree" }
    for _, m in ipairs(methods) do
      local ok, err = pcall(T[m], T, e, 1, 0, 0, 1)
      assert.is_false(ok, m)
      assert.matches("transform:" .. m .. ": entity has no transform", err)
      ok, err = pcall(T[m], T, dead, 1, 0, 0, 1)
      assert.is_false(ok, m)
      assert.matches("transform:" .. m .. ": entity is not alive", err)
      ok, err = pcall(T[m], T, ecs.null, 1, 0, 0, 1)
      assert.is_false(ok, m)
      assert.matches("transform:" .. m .. ": entity is not alive", err)
    end
    for _, v in ipairs({ dead, ecs.null, ecs.entity(12345) }) do
      assert.is_false(T:has(v))
      assert.is_false(T:remove(v))
    end
    T:add(e)
    assert.matches("non%-finite", select(2, pcall(T.set_local_position, T, e, 0 / 0, 0, 0)))
    assert.matches("non%-finite", select(2, pcall(T.set_local_scale, T, e, math.huge, 1, 1)))
    assert.matches("rotation quaternion must be non%-zero",
      select(2, pcall(T.set_local_rotation, T, e, 0, 0, 0, 0)))
    assert.matches("rotation quaternion must be non%-zero",
      select(2, pcall(T.add, T, e, { rotation = { 0, 0, 0, 0 } })))
    assert.matches("position must be a table of 3 numbers",
      select(2, pcall(T.add, T, e, { position = { 1, 2 } })))
    assert.matches("add: entity is not alive", select(2, pcall(T.add, T, dead)))
  end)

  it("refuses unknown keys in add's table, as every option table does", function()
    local err_of = require("spec.support.err_of")
    local e = w:create()
    local err = err_of(function() T:add(e, { pos = { 1, 2, 3 } }) end)
    assert.equals("transform:add: bad argument #2 (unknown option 'pos')", err)
    err = err_of(function() T:add(e, { position = { 1, 2, 3 }, scal = { 2, 2, 2 } }) end)
    assert.equals("transform:add: bad argument #2 (unknown option 'scal')", err)
    assert.matches("unknown option '1'", err_of(function() T:add(e, { { 1, 2, 3 } }) end))
    assert.is_false(T:has(e)) -- nothing was added
    T:add(e, {})
    T:add(e, { position = { 1, 2, 3 }, rotation = { 0, 0, 0, 1 }, scale = { 2, 2, 2 } })
    assert.same({ 1, 2, 3 }, { T:local_position(e) })
  end)

  it("survives junk in every argument of every method", function()
    local e = w:create()
    T:add(e)
    local other = ecs.world()
    local dead = w:create()
    w:destroy(dead)
    -- light userdata that are no entity handles, when the test module is built
    local function lud(n) return testkit.module and testkit.module.lightuserdata(n) or false end
    local junk = {
      nil, false, 0, -1, 1.5, 0 / 0, math.huge, math.maxinteger, "", "x", "1", {}, { 1, 2 },
      function() end, lud(0x1000), lud(2), lud(1),
      dead, ecs.null, ecs.entity((1 << 30) - 1), other, other:create(), io.stdout,
      setmetatable({}, { __index = function() error("raising __index") end }),
    }
    local names = {}
    for k, v in pairs(debug.getmetatable(T).__index) do
      if type(v) == "function" then names[#names + 1] = k end
    end
    table.sort(names)
    assert.is_true(#names >= 20)
    local n = 0
    for _, m in ipairs(names) do
      for i = 1, #junk + 1 do
        local j = junk[i]
        for _, args in ipairs({ { j }, { e, j }, { j, e }, { e, j, j, j, j }, { e, 1, 2, j },
                                { { e }, { 1 }, { 1 }, j }, { j, {}, {}, {} } }) do
          local ok, err = pcall(T[m], T, table.unpack(args, 1, 5))
          if not ok then assert.equals("string", type(err), m) end
          n = n + 1
        end
        local ok, err = pcall(T[m], j, e) -- bad self
        assert.is_false(ok)
        assert.equals("string", type(err))
        local good, bad = w:check()
        assert(good, m .. ": " .. tostring(bad))
        if not T:has(e) then
          if not w:alive(e) then e = w:create() end
          T:add(e)
        end
      end
    end
    assert.is_true(n > 1000)
    other:close()
  end)

  it("takes a light userdata that is not an entity handle for a type error", function()
    local kit = testkit.module or pending(testkit.missing)
    local ok, err = pcall(T.has, T, kit.lightuserdata(0x1000))
    assert.is_false(ok)
    assert.matches("entity expected, got light userdata", err)
  end)

  it("never lets a stale handle reach the entity that reuses its index", function()
    local old = w:create()
    T:add(old, { position = { 1, 1, 1 } })
    w.names:set(old, "old")
    w:destroy(old)
    local fresh = w:create(1100) -- enough destroyed indices to start reuse
    w:destroy(fresh)
    local new
    repeat new = w:create() until ecs.index(new) == ecs.index(old)
    assert.not_equals(old, new)
    T:add(new, { position = { 2, 2, 2 } }) -- the dead row at this index is dropped
    assert.is_false(T:has(old))
    assert.is_true(T:has(new))
    assert.is_false(pcall(T.set_local_position, T, old, 9, 9, 9))
    assert.is_false(pcall(T.set_parent, T, old, new))
    assert.is_false(T:remove(old))
    assert.same({ 2, 2, 2 }, { T:world_position(new) })
    assert.is_nil(w.names:get(new))
    assert.is_nil(w.names:find("old"))
    assert.is_false(pcall(w.names.set, w.names, old, "x"))
    w.names:set(new, "new")
    assert.is_nil(w.names:get(old))
    assert.equals(new, w.names:find("new"))
  end)

  it("refuses to work once the world is closed", function()
    local e = w:create()
    T:add(e)
    local w2 = ecs.world()
    local T2 = w2.transform
    w2:close()
    assert.matches("attempt to use a closed world", select(2, pcall(T2.has, T2, e)))
    -- the field stays readable (a plain field), but the object refuses work
    local T3 = w2.transform
    assert.matches("attempt to use a closed world", select(2, pcall(T3.add, T3, e)))
  end)

  it("reclaims dead rows in gc and world:update", function()
    local es = w:create(100)
    for _, e in ipairs(es) do T:add(e) end
    for i = 2, 100 do T:set_parent(es[i], es[i // 2]) end
    for i = 1, 100, 3 do w:destroy(es[i]) end
    assert.equals(100, T:size())
    assert.equals(0, T:gc(0))
    assert.matches("budget must not be negative", select(2, pcall(T.gc, T, -1)))
    assert.equals(2, T:gc(2))
    w:update(0)
    assert.is_true(T:size() < 98)
    T:gc()
    assert.equals(66, T:size())
    local ok, bad = w:check()
    assert(ok, bad)
  end)
end)

describe("world.transform against a naive model", function()
  it("agrees on random trees over 10k random edits", function()
    local w = ecs.world()
    local T = w.transform
    local model = Model.new()
    local rng = 0x2545F491
    local function rand(n) -- xorshift32, reproducible
      rng = rng ~ ((rng << 13) & 0xffffffff)
      rng = rng ~ (rng >> 17)
      rng = rng ~ ((rng << 5) & 0xffffffff)
      return rng % n + 1
    end
    local function rnum(lo, hi) return lo + (hi - lo) * (rand(10000) - 1) / 9999 end
    local function rquat() return { rnum(-1, 1), rnum(-1, 1), rnum(-1, 1), rnum(0.2, 1) } end
    local function rscale() return { rnum(0.5, 2), rnum(0.5, 2), rnum(0.5, 2) } end
    local function readback(e)
      return { T:local_position(e) }, { T:local_rotation(e) }, { T:local_scale(e) }
    end
    local ents = {} -- entity handles of the model's nodes, in a list
    local function live_list()
      local out = {}
      for e in pairs(model.nodes) do out[#out + 1] = e end
      table.sort(out, function(a, b) return ecs.id(a) < ecs.id(b) end)
      return out
    end
    local function new_node()
      local e = w:create()
      local p, q, s = { rnum(-5, 5), rnum(-5, 5), rnum(-5, 5) }, rquat(), rscale()
      T:add(e, { position = p, rotation = q, scale = s })
      model:add(e, p, q, s)
      ents[#ents + 1] = e
      return e
    end
    local function compare(e, label)
      local got, want = { T:world_matrix(e) }, model:world(e)
      for k = 1, 16 do
        if math.abs(got[k] - want[k]) > 1e-5 then
          error(("%s: %s m[%d] = %.10g, model %.10g"):format(label, ecs.tostring(e), k, got[k], want[k]))
        end
      end
      local p = T:parent(e)
      local mp = model.nodes[e].parent
      assert(p == (mp or ecs.null), label .. ": parent differs")
    end
    local function lose(e) -- e lost its transform: orphan its children
      for _, c in ipairs(model:remove(e)) do
        local n = model.nodes[c]
        n.p, n.q, n.s = readback(c)
      end
    end
    -- a random forest
    for _ = 1, 60 do new_node() end
    local list = live_list()
    for i = 2, #list do
      if rand(4) > 1 then
        local p = list[rand(i - 1)]
        T:set_parent(list[i], p)
        model:set_parent(list[i], p, false)
      end
    end
    local edits = 0
    for step = 1, 10000 do
      list = live_list()
      if #list < 20 then
        for _ = 1, 10 do new_node() end
        list = live_list()
      end
      local e = list[rand(#list)]
      local sel = {} -- the entities a batch edit wrote
      local op = rand(100)
      if op <= 20 then
        local p = { rnum(-5, 5), rnum(-5, 5), rnum(-5, 5) }
        T:set_local_position(e, p[1], p[2], p[3])
        model:set_local(e, p)
      elseif op <= 30 then
        local q = rquat()
        T:set_local_rotation(e, q[1], q[2], q[3], q[4])
        model:set_local(e, nil, q)
      elseif op <= 40 then
        local s = rscale()
        T:set_local_scale(e, s[1], s[2], s[3])
        model:set_local(e, nil, nil, s)
      elseif op <= 60 then
        local p = rand(5) == 1 and ecs.null or list[rand(#list)]
        local keep = rand(4) == 1
        local ok = pcall(T.set_parent, T, e, p, keep)
        local mp = p ~= ecs.null and p or nil
        if mp ~= nil and model:would_cycle(e, mp) then
          assert(not ok, "cycle not refused")
        else
          assert(ok, "set_parent failed")
          model:set_parent(e, mp, keep, readback)
        end
      elseif op <= 68 then
        w:destroy(e)
        lose(e)
      elseif op <= 72 then
        T:remove(e)
        lose(e)
        w:destroy(e)
      elseif op <= 74 then
        local sub = model:subtree(e)
        local n = T:destroy_tree(e)
        assert(n == #sub, "destroy_tree count")
        for i = #sub, 1, -1 do lose(sub[i]) end
      elseif op <= 84 then
        local xs, ys, zs = {}, {}, {}
        for i = 1, rand(8) do
          local x = list[rand(#list)]
          sel[i], xs[i], ys[i], zs[i] = x, rnum(-5, 5), rnum(-5, 5), rnum(-5, 5)
        end
        T:set_local_positions(sel, xs, ys, zs)
        for i = 1, #sel do model:set_local(sel[i], { xs[i], ys[i], zs[i] }) end
      elseif op <= 87 then
        local xs, ys, zs, ws = {}, {}, {}, {}
        for i = 1, rand(8) do
          local q = rquat()
          sel[i], xs[i], ys[i], zs[i], ws[i] = list[rand(#list)], q[1], q[2], q[3], q[4]
        end
        T:set_local_rotations(sel, xs, ys, zs, ws)
        for i = 1, #sel do model:set_local(sel[i], nil, { xs[i], ys[i], zs[i], ws[i] }) end
      elseif op <= 90 then
        local xs, ys, zs = {}, {}, {}
        for i = 1, rand(8) do
          local s = rscale()
          sel[i], xs[i], ys[i], zs[i] = list[rand(#list)], s[1], s[2], s[3]
        end
        T:set_local_scales(sel, xs, ys, zs)
        for i = 1, #sel do model:set_local(sel[i], nil, nil, { xs[i], ys[i], zs[i] }) end
      elseif op <= 95 then
        new_node()
      else
        T:gc(rand(4))
      end
      edits = edits + 1
      -- the edited region every step, everything every 250 steps
      if model.nodes[e] then
        for _, x in ipairs(model:subtree(e)) do compare(x, "step " .. step) end
      end
      for _, b in ipairs(sel) do
        for _, x in ipairs(model:subtree(b)) do compare(x, "batch at step " .. step) end
      end
      if step % 250 == 0 then
        for _, x in ipairs(live_list()) do compare(x, "full check at step " .. step) end
      end
      local ok, bad = w:check() -- the consistency checker after every step
      assert(ok, bad)
    end
    assert.equals(10000, edits)
    w:close()
  end)
end)

--[[
Issue 11: set_parent's cycle check costs the smaller of the parent's depth
and the child's subtree (nothing for a leaf), so building long chains stays
linear; cycles through deep chains and through dead rows are still found.
]]
describe("world.transform set_parent on long chains", function()
  local w, T
  before_each(function()
    w = ecs.world()
    T = w.transform
  end)
  after_each(function()
    local ok, bad = w:check()
    assert(ok, bad)
    w:close()
  end)

  local function chain(n)
    local es = w:create(n)
    for i = 1, n do
      T:add(es[i], { position = { 1, 0, 0 } })
      if i > 1 then T:set_parent(es[i], es[i - 1]) end
    end
    return es
  end

  local function is_cycle(c, p)
    local ok, err = pcall(T.set_parent, T, c, p)
    assert.is_false(ok)
    assert.equals("transform:set_parent: parenting would create a cycle", err:match("transform:.*$"))
  end

  it("builds a 200k-node chain node by node (linear: a quadratic check takes minutes)", function()
    -- 20k under the GC-stress reruns of test.sh, where every allocation
    -- steps the collector (the size is not what those reruns test)
    local n = os.getenv("ECS_GC_STRESS") and 20000 or 200000
    local es = chain(n)
    assert.equals(es[n - 1], T:parent(es[n]))
    assert.equals(n + 0.0, (T:world_position(es[n])))
    is_cycle(es[1], es[n])
    is_cycle(es[n // 2], es[n])
    is_cycle(es[1], es[2])
    -- the same chain grown from its deep end: each new root above the last
    local top = w:create()
    T:add(top)
    T:set_parent(es[1], top)
    is_cycle(top, es[n])
    assert.equals(n + 0.0, (T:world_position(es[n])))
  end)

  it("finds cycles through deep chains whichever side is smaller", function()
    local a, b = chain(1000), chain(1000)
    T:set_parent(a[1], b[1000])          -- a's 1000-node subtree under b's deepest
    assert.equals(2000.0, (T:world_position(a[1000])))
    is_cycle(b[1], a[500])                -- b's root is above a[500] now
    is_cycle(b[1], a[1])
    is_cycle(a[1], a[1000])
    is_cycle(b[999], b[1000])
    local leaf = w:create()
    T:add(leaf)
    T:set_parent(leaf, a[1000])           -- a leaf goes anywhere
    is_cycle(b[1], leaf)
    is_cycle(b[500], leaf)                -- b[500..1000], a and the leaf: a loop
    T:set_parent(a[1], ecs.null)          -- a apart, the same move is fine
    T:set_parent(b[500], leaf)
    assert.equals(leaf, T:parent(b[500]))
    assert.equals(1501.0, (T:world_position(b[1000])))
    is_cycle(a[1], b[1000])
  end)

  it("finds cycles through a chain with a dead link only where they are", function()
    local n = 2000
    local es = chain(n)
    w:destroy(es[n // 2])                  -- es[n/2 + 1 ..] is a root now
    T:set_parent(es[1], es[n])            -- so this is fine
    assert.equals(es[n], T:parent(es[1]))
    is_cycle(es[n // 2 + 1], es[1])       -- and this closes the loop
    is_cycle(es[n // 2 + 1], es[n // 2 - 1])
    T:gc()
    local ok, bad = w:check()
    assert(ok, bad)
    -- a subtree above the dead link moved under a node below it
    local es2 = chain(n)
    w:destroy(es2[n // 2])
    T:set_parent(es2[2], es2[n])          -- es2[2] has children, es2[n] is below a dead row
    assert.equals(es2[n], T:parent(es2[2]))
    is_cycle(es2[n // 2 + 1], es2[3])
  end)
end)

--[[
Issue 15: extreme but valid numbers, and errors that name the real cause.
]]
describe("world.transform with extreme numbers", function()
  local w, T
  before_each(function()
    w = ecs.world()
    T = w.transform
  end)
  after_each(function()
    local ok, bad = w:check()
    assert(ok, bad)
    w:close()
  end)

  -- the error from "transform:" on (without the position prefix)
  local function err_of(f, ...)
    return require("spec.support.err_of")(f, ...):match("transform:.*$")
  end

  it("normalizes quaternions of any finite size, refuses only zero", function()
    local e = w:create()
    T:add(e)
    local cases = {
      { { 1e200, 1e200, 0, 0 }, { S, S, 0, 0 } },
      { { 0, 0, -1.7976931348623157e308, 1.7976931348623157e308 }, { 0, 0, -S, S } },
      { { 1e-200, 0, 0, 1e-200 }, { S, 0, 0, S } },
      { { 5e-324, 0, 0, 0 }, { 1, 0, 0, 0 } },
      { { 0, 1e-160, 0, 0 }, { 0, 1, 0, 0 } },
    }
    for _, c in ipairs(cases) do
      local q, want = c[1], c[2]
      T:set_local_rotation(e, q[1], q[2], q[3], q[4])
      local got = { T:local_rotation(e) }
      for k = 1, 4 do assert.is_true(near(got[k], want[k], 1e-15), table.concat(q, ", ")) end
      T:add(e, { rotation = q })
      got = { T:local_rotation(e) }
      for k = 1, 4 do assert.is_true(near(got[k], want[k], 1e-15), table.concat(q, ", ")) end
      T:set_local_rotations({ e }, { q[1] }, { q[2] }, { q[3] }, { q[4] })
      got = { T:local_rotation(e) }
      for k = 1, 4 do assert.is_true(near(got[k], want[k], 1e-15), table.concat(q, ", ")) end
    end
    assert.equals("transform:set_local_rotation: rotation quaternion must be non-zero",
      err_of(T.set_local_rotation, T, e, 0, -0.0, 0, 0))
    assert.equals("transform:set_local_rotation: non-finite number",
      err_of(T.set_local_rotation, T, e, math.huge, 0, 0, 1))
    assert.equals("transform:add: position[2] is not a finite number",
      err_of(T.add, T, e, { position = { 1, math.huge, 0 } }))
    assert.equals("transform:add: rotation[4] is not a finite number",
      err_of(T.add, T, e, { rotation = { 0, 0, 0, 0 / 0 } }))
    assert.equals("transform:add: scale must be a table of 3 numbers",
      err_of(T.add, T, e, { scale = { 1, "x", 1 } }))
  end)

  -- an entity whose world matrix overflowed: finite locals, scale 1e200 twice
  local function overflowed()
    local p, c = w:create(), w:create()
    T:add(p, { scale = { 1e200, 1e200, 1e200 } })
    T:add(c, { scale = { 1e200, 1e200, 1e200 } })
    T:set_parent(c, p)
    assert.equals(math.huge, (T:world_matrix(c)))
    return p, c
  end

  it("says what keeps keep_world from working", function()
    local p, c = overflowed()
    local other = w:create()
    T:add(other, { position = { 1, 2, 3 } })
    assert.equals("transform:set_parent: keep_world: the child's world matrix is not finite",
      err_of(T.set_parent, T, c, ecs.null, true))
    assert.equals("transform:set_parent: keep_world: the child's world matrix is not finite",
      err_of(T.set_parent, T, c, other, true))
    assert.equals("transform:set_parent: keep_world: the parent's world matrix is not finite",
      err_of(T.set_parent, T, other, c, true))
    assert.equals(p, T:parent(c))                  -- nothing changed
    assert.equals(ecs.null, T:parent(other))
    local flat = w:create()
    T:add(flat, { scale = { 1, 0, 1 } })
    assert.equals("transform:set_parent: keep_world under a singular parent matrix",
      err_of(T.set_parent, T, other, flat, true))
    local tiny, big = w:create(), w:create()
    T:add(tiny, { scale = { 1e-200, 1e-200, 1e-200 } })
    T:add(big, { scale = { 1e200, 1e200, 1e200 } })
    assert.equals("transform:set_parent: keep_world: the local transform that keeps the world "
      .. "matrix is not finite", err_of(T.set_parent, T, big, tiny, true))
    local west, east = w:create(), w:create()     -- 2e308 apart: no finite offset
    T:add(west, { position = { -1e308, 0, 0 } })
    T:add(east, { position = { 1e308, 0, 0 } })
    assert.equals("transform:set_parent: keep_world: the local transform that keeps the world "
      .. "matrix is not finite", err_of(T.set_parent, T, east, west, true))
    assert.same({ 1e308, 0, 0 }, { T:local_position(east) })
    -- small but invertible: works, the world matrix is kept
    local small = w:create()
    T:add(small, { position = { 4, 5, 6 }, scale = { 1e-100, 1e-100, 1e-100 } })
    local before = { T:world_matrix(other) }
    T:set_parent(other, small, true)
    assert.equals(small, T:parent(other))
    local after = { T:world_matrix(other) }
    for k = 1, 16 do assert.is_true(near(after[k], before[k], 1e-12)) end
    local x = T:local_position(other)
    assert.is_true(near(x / -3e100, 1, 1e-12))
    -- without keep_world any of these parent fine
    T:set_parent(c, ecs.null)
    T:set_parent(other, flat)
  end)

  it("keeps locals finite when an overflowed node loses its parent", function()
    local p, c = overflowed()
    w:destroy(p)
    local sx = T:local_scale(c)
    assert.equals(1.7976931348623157e308, sx)      -- clamped, not inf
    T:gc()                                          -- orphans c for real
    local ok, bad = w:check()
    assert(ok, bad)
    T:set_local_position(c, 1, 2, 3)               -- and c can be written
    assert.same({ 1, 2, 3 }, { T:local_position(c) })
    T:set_local_scale(c, 1, 1, 1)
    assert.same({ 1, 2, 3 }, { T:world_position(c) })
  end)
end)
