local ecs = require("ecs")

describe("entity handles", function()
  local w
  before_each(function() w = ecs.world() end)
  after_each(function() assert(w:check()); w:close() end)

  it("are light userdata carrying the entity tag", function()
    local e = w:create()
    assert.are.equal("userdata", type(e))
    assert.is_true(ecs.is_entity(e))
    assert.is_true(ecs.is_entity(ecs.null))
    assert.is_false(ecs.is_entity(1))
    assert.is_false(ecs.is_entity({}))
    assert.is_false(ecs.is_entity(io.stdout))
    assert.is_false(ecs.is_entity(nil))
  end)

  it("compare with == and work as table keys", function()
    local a, b = w:create(), w:create()
    assert.are_not.equal(a, b)
    assert.are.equal(a, ecs.entity(ecs.id(a)))
    local t = { [a] = "a", [b] = "b" }
    assert.are.equal("a", t[ecs.entity(ecs.id(a))])
    assert.are.equal("b", t[b])
  end)

  it("pack index and generation into a 30-bit id", function()
    local e = w:create()
    assert.are.equal(1, ecs.index(e))
    assert.are.equal(0, ecs.generation(e))
    assert.are.equal(1, ecs.id(e))
    local f = ecs.entity(3 << 22 | 77)
    assert.are.equal(77, ecs.index(f))
    assert.are.equal(3, ecs.generation(f))
    assert.are.equal("entity(77.3)", ecs.tostring(f))
    assert.are.equal(0, ecs.id(ecs.null))
    assert.are.equal("entity(0.0)", ecs.tostring(ecs.null))
    assert.are.equal(ecs.null, ecs.entity(0))
  end)

  it("entity(id) rejects ids outside 30 bits", function()
    assert.has_error(function() ecs.entity(-1) end)
    assert.has_error(function() ecs.entity(1 << 30) end)
    assert.has_error(function() ecs.entity(1.5) end)
    assert.has_error(function() ecs.entity("x") end)
    assert.is_true(ecs.is_entity(ecs.entity((1 << 30) - 1)))
  end)

  it("null and forged handles are never alive", function()
    w:create(10)
    assert.is_false(w:alive(ecs.null))
    assert.is_false(w:alive(ecs.entity(1 << 22)))          -- index 0, gen 1
    assert.is_false(w:alive(ecs.entity(5 | (1 << 22))))    -- generation ahead
    assert.is_false(w:alive(ecs.entity(4194303)))          -- max index, unused
    assert.is_false(w:alive(ecs.entity((1 << 30) - 1)))    -- max id
    assert.is_false(w:destroy(ecs.null))
    assert.are.equal(10, w:count())
  end)
end)

describe("world entity manager", function()
  local w
  before_each(function() w = ecs.world() end)
  after_each(function() assert(w:check()); w:close() end)

  it("creates and destroys", function()
    local e = w:create()
    assert.is_true(w:alive(e))
    assert.are.equal(1, w:count())
    assert.is_true(w:destroy(e))
    assert.is_false(w:alive(e))
    assert.is_false(w:destroy(e))   -- never a double free
    assert.are.equal(0, w:count())
  end)

  it("creates in batch", function()
    local list = w:create(1000)
    assert.are.equal(1000, #list)
    assert.are.equal(1000, w:count())
    local seen = {}
    for i, e in ipairs(list) do
      assert.is_true(w:alive(e))
      assert.is_nil(seen[e])
      seen[e] = i
    end
    assert.are.same({}, w:create(0))
  end)

  it("destroys in batch and counts only live ones", function()
    local list = w:create(10)
    assert.is_true(w:destroy(list[3]))
    assert.are.equal(9, w:destroy(list))
    assert.are.equal(0, w:destroy(list))
    assert.are.equal(0, w:count())
    assert.are.equal(0, w:destroy({}))
  end)

  it("rejects a batch with a non-entity before destroying anything", function()
    local list = w:create(3)
    local ok, err = pcall(w.destroy, w, { list[1], "x", list[3] })
    assert.is_false(ok)
    assert.matches("entity expected at index 2, got string", err, 1, true)
    assert.are.equal(3, w:count())
  end)

  it("reuses an index only once 1024 are free, FIFO, with a new generation", function()
    local first = w:create()
    local more = w:create(1022)
    w:destroy(first)
    w:destroy(more)                     -- 1023 free
    local e = w:create()
    assert.are.equal(1024, ecs.index(e)) -- fresh index: queue too short
    w:destroy(e)                         -- 1024 free now
    local r = w:create()
    assert.are.equal(ecs.index(first), ecs.index(r))
    assert.are.equal(1, ecs.generation(r))
    assert.is_false(w:alive(first))
    assert.is_true(w:alive(r))
    assert.are_not.equal(first, r)
  end)

  it("keeps a stale handle dead until the generation wraps after 256 x 1024 reuses", function()
    local first = w:create()
    w:destroy(first)
    w:destroy(w:create(1023))            -- 1024 waiting
    local idx = ecs.index(first)
    local create, destroy, index = w.create, w.destroy, ecs.index
    for lap = 1, 256 do
      local got
      for _ = 1, 1024 do
        local e = create(w)
        if index(e) == idx then got = e end
        destroy(w, e)
      end
      assert.are.equal(lap & 255, ecs.generation(got))
      if lap < 256 then
        assert.are_not.equal(first, got)
        assert.is_false(w:alive(first))
      else
        assert.are.equal(first, got)     -- the id has come back
      end
    end
  end)

  it("iterates live entities", function()
    local list = w:create(6)
    w:destroy(list[2]); w:destroy(list[5])
    local got = {}
    for e in w:entities() do got[#got + 1] = e end
    assert.are.same({ list[1], list[3], list[4], list[6] }, got)
  end)

  it("allows destroying during iteration", function()
    local list = w:create(6)
    local n = 0
    for e in w:entities() do
      n = n + 1
      w:destroy(e)
      if e == list[1] then w:destroy(list[2]) end
    end
    assert.are.equal(5, n)
    assert.are.equal(0, w:count())
  end)

  it("keeps worlds independent", function()
    local w2 = ecs.world()
    local a = w:create()
    assert.is_false(w2:alive(a))
    local b = w2:create()
    assert.are.equal(a, b)               -- same id in both, by design
    w2:destroy(b)
    assert.is_true(w:alive(a))
    w2:close()
  end)
end)

describe("capacity", function()
  it("raises 'too many entities' at 4194303 live entities, and recovers", function()
    local w = ecs.world()
    assert.are.equal(4194303, ecs.MAX_ENTITIES)
    local all = w:create(4194303)
    assert.are.equal(4194303, w:count())
    local ok, err = pcall(w.create, w)
    assert.is_false(ok)
    assert.matches("too many entities (limit 4194303)", err, 1, true)
    ok, err = pcall(w.create, w, 1)
    assert.is_false(ok)
    assert.matches("too many entities", err, 1, true)
    assert.are.equal(4194303, w:count())
    w:destroy(all[10])
    local e = w:create()                 -- the queue is used whatever its length
    assert.are.equal(ecs.index(all[10]), ecs.index(e))
    assert.has_error(function() w:create() end)
    assert(w:check())
    w:close()
  end)

  it("refuses an impossible batch without allocating it", function()
    local w = ecs.world()
    local ok, err = pcall(w.create, w, 1 << 31)
    assert.is_false(ok)
    assert.matches("too many entities", err, 1, true)
    assert.are.equal(0, w:count())
    w:close()
  end)
end)

describe("world lifetime", function()
  it("close is idempotent and later use raises", function()
    local w = ecs.world()
    local e = w:create()
    w:close()
    w:close()
    for _, m in ipairs({ "create", "count", "entities", "update", "check" }) do
      local ok, err = pcall(w[m], w)
      assert.is_false(ok, m)
      assert.matches("attempt to use a closed world", err, 1, true)
    end
    assert.has_error(function() w:alive(e) end, "attempt to use a closed world")
    assert.are.equal(e, ecs.entity(ecs.id(e)))
    assert.matches("closed", tostring(w))
  end)

  it("closes at the end of a <close> scope", function()
    local outer
    do
      local w <close> = ecs.world()
      outer = w
      w:create()
    end
    assert.has_error(function() outer:count() end, "attempt to use a closed world")
  end)

  it("is collected when unreachable", function()
    local probe = setmetatable({}, { __mode = "v" })
    probe[1] = ecs.world()
    probe[1]:create(1000)
    collectgarbage(); collectgarbage()
    assert.is_nil(probe[1])
  end)
end)
