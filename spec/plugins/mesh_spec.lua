--[[
mesh_spec.lua -- the mesh C plugin (plugins/mesh.c): several
instances per entity chained through next_instance (Bitsquid part 2),
swap-removal that keeps every chain intact, dead entities, gc.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")
local mesh = require("ecs.mesh")
local junk = require("spec.support.junk")

describe("ecs.mesh", function()
  local w, M
  before_each(function()
    w = ecs.world()
    M = mesh.new(w)
  end)
  after_each(function() release(w) end)

  it("keeps several meshes per entity in order", function()
    local a, b = w:create(), w:create()
    assert.equals(1, M:add(a, 10))
    assert.equals(1, M:add(b, 20))
    assert.equals(2, M:add(a, 11))
    assert.equals(3, M:add(a, 12))
    assert.same({ 10, 11, 12 }, M:meshes(a))
    assert.same({ 20 }, M:meshes(b))
    assert.same({}, M:meshes(w:create()))
    assert.equals(4, M:count())
    assert.is_true(M:has(a))
  end)

  it("removes single instances and keeps every chain intact", function()
    local es = w:create(5)
    for i, e in ipairs(es) do
      for k = 1, i do M:add(e, i * 10 + k) end
    end
    assert.is_true(M:remove(es[3], 32))
    assert.is_false(M:remove(es[3], 32))
    assert.same({ 31, 33 }, M:meshes(es[3]))
    assert.is_true(M:remove(es[1], 11))
    assert.is_false(M:has(es[1]))
    assert.equals(5, M:remove_all(es[5]))
    assert.same({ 21, 22 }, M:meshes(es[2]))
    assert.same({ 41, 42, 43, 44 }, M:meshes(es[4]))
    assert.is_true(w:check())
  end)

  it("hides dead entities' meshes, reclaims them, and drops a stale chain on reuse", function()
    local e = w:create()
    M:add(e, 1)
    M:add(e, 2)
    w:destroy(e)
    assert.is_false(M:has(e))
    assert.same({}, M:meshes(e))
    assert.equals(0, M:remove_all(e))
    assert.equals(2, M:size())
    local n
    repeat
      n = w:create()
      if ecs.index(n) ~= ecs.index(e) then w:destroy(n) end
    until ecs.index(n) == ecs.index(e)
    assert.equals(1, M:add(n, 3)) -- the dead chain is dropped first
    assert.same({ 3 }, M:meshes(n))
    assert.is_true(w:check())
    w:destroy(n)
    assert.equals(1, M:gc())
    assert.equals(0, M:size())
  end)

  -- The core's lazy-gc policy (records.h): a dead entity's instances are
  -- reached within a lap of budgeted calls, however few die.
  it("reaches rare dead instances within one lap of budgeted calls", function()
    local es = w:create(500)
    for i, e in ipairs(es) do M:add(e, i); M:add(e, -i % 7) end
    assert.equals(0, M:gc(10))
    w:destroy({ es[40], es[400] })
    local got = 0
    for _ = 1, math.ceil(1000 / (4 * 10 + 64)) + 1 do got = got + M:gc(10) end
    assert.equals(4, got)
    assert.equals(996, M:size())
    assert.is_true(w:check())
  end)

  it("agrees with a Lua model over random operations", function()
    math.randomseed(7)
    local es = w:create(30)
    local model = {}
    for _, e in ipairs(es) do model[e] = {} end
    for step = 1, 3000 do
      local e = es[math.random(#es)]
      local r = math.random(10)
      if r <= 5 then
        local id = math.random(0, 5)
        M:add(e, id)
        table.insert(model[e], id)
      elseif r <= 8 then
        local id = math.random(0, 5)
        local want = false
        for i, v in ipairs(model[e]) do
          if v == id then table.remove(model[e], i); want = true; break end
        end
        assert.equals(want, M:remove(e, id))
      elseif r == 9 then
        assert.equals(#model[e], M:remove_all(e))
        model[e] = {}
      else
        M:gc(2)
      end
      assert.same(model[e], M:meshes(e))
      if step % 100 == 0 then
        local total = 0
        for _, x in ipairs(es) do
          assert.same(model[x], M:meshes(x))
          total = total + #model[x]
        end
        assert.equals(total, M:count())
        assert.is_true(w:check())
      end
    end
  end)

  it("checks its arguments", function()
    local e = w:create()
    assert.matches("mesh id out of range", err_of(function() M:add(e, -1) end), 1, true)
    assert.matches("number has no integer representation", err_of(function() M:add(e, 1.5) end), 1, true)
    w:destroy(e)
    assert.matches("mesh:add: entity is not alive", err_of(M.add, M, e, 1), 1, true)
    local values, other = junk.values(w)
    local f = w:create()
    for name, fn in pairs(debug.getmetatable(M).__methods) do
      for _, j in ipairs(values) do
        for _, args in ipairs({ { j[2] }, { M, j[2] }, { M, f, j[2] }, { M, j[2], 1 } }) do
          local ok, err = pcall(fn, (table.unpack or unpack)(args, 1, 3)) -- luacheck: ignore 113 (5.1)
          assert(ok or type(err) == "string", name)
        end
      end
    end
    other:close()
    w:close()
    assert.matches("attempt to use a closed world", err_of(M.count, M), 1, true)
  end)
end)
