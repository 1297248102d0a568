--[[
many_spec.lua -- C:get_many(list, field) and C:set_many(list, field, v)
(docs/components.md, "Many entities at once"): values per position and n,
nil for dead and missing entities, one value or an array, every field type,
all-or-nothing checks naming the position, on_set observers in order, and
agreement with C:field / C:set_field.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")

describe("C:get_many and C:set_many", function()
  local w, P, es
  before_each(function()
    w = ecs.world()
    P = w:component("P", { "x:f32", "i:i16", "b:bool", "t:entity", "s:lua" })
    es = w:create(6)
    for i, e in ipairs(es) do P:add(e, i, -i, i % 2 == 0, es[1], "v" .. i) end
  end)
  after_each(function() release(w) end)

  it("reads one field of every entity, nil where one lacks the component", function()
    local dead, bare = w:create(), w:create()
    w:destroy(dead)
    local list = { es[3], bare, es[1], dead, es[3] }
    for _, f in ipairs({ "x", "i", "b", "t", "s" }) do
      local v = P:get_many(list, f)
      assert.equals(5, v.n)
      for k, e in ipairs(list) do assert.equals(P:field(e, f), v[k]) end
    end
    assert.same({ n = 0 }, P:get_many({}, "x"))
  end)

  it("writes one value for all or an array of values, as set_field would", function()
    local Q = w:component("Q", { "x:f32", "i:i16", "b:bool", "t:entity", "s:lua" })
    for _, e in ipairs(es) do Q:add(e) end
    local shared = { "shared" }
    local cases = {
      { "x", 2.5 }, { "x", { 1, 2, 3, 4, 5, 6 } }, { "i", { -1, 0, 1, 2, 3, 32767 } },
      { "b", true }, { "b", { true, false, true, false, true, false } },
      { "t", es[2] }, { "t", { es[1], es[2], es[3], ecs.null, es[5], es[6] } },
      { "s", shared }, { "s", "text" }, { "s", nil },
    }
    for _, c in ipairs(cases) do
      local f, v = c[1], c[2]
      P:set_many(es, f, v)
      for k, e in ipairs(es) do
        local one = v
        if type(v) == "table" and f ~= "s" then one = v[k] end
        Q:set_field(e, f, one)
        assert.equals(Q:field(e, f), P:field(e, f))
      end
    end
    P:set_many(es, "s", shared)
    assert.equals(shared, P:field(es[4], "s")) -- the same reference
    assert.is_true(w:check())
  end)

  it("checks everything first and changes nothing on an error", function()
    local bare, dead = w:create(), w:create()
    w:destroy(dead)
    local before = P:get_many(es, "i")
    local function unchanged() assert.same(before, P:get_many(es, "i")) end
    assert.matches("P:set_many: list[2]: entity does not have the component",
      err_of(function() P:set_many({ es[1], bare }, "i", 1) end), 1, true)
    assert.matches("P:set_many: list[3]: entity is not alive",
      err_of(function() P:set_many({ es[1], es[2], dead }, "i", 1) end), 1, true)
    assert.matches("6 values expected (one per entity), got 2",
      err_of(function() P:set_many(es, "i", { 1, 2 }) end), 1, true)
    assert.matches("out of range",
      err_of(function() P:set_many(es, "i", { 1, 2, 3, 4, 5, 40000 }) end), 1, true)
    assert.matches("expects an integer",
      err_of(function() P:set_many(es, "i", 1.5) end), 1, true)
    assert.matches("P:set_many: list[2] is not an entity",
      err_of(function() P:set_many({ es[1], 7 }, "i", 1) end), 1, true)
    assert.matches("unknown field 'z'", err_of(function() P:set_many(es, "z", 1) end), 1, true)
    assert.matches("unknown field 'z'", err_of(function() P:get_many(es, "z") end), 1, true)
    assert.matches("bad argument #1 to 'get_many' (table expected",
      err_of(function() P:get_many(es[1], "x") end), 1, true)
    unchanged()
    assert.is_true(w:check())
  end)

  it("tells on_set observers entity by entity, after every value is written", function()
    local seen = {}
    local o = P:on_set(function(e)
      seen[#seen + 1] = { e, P:field(e, "x"), P:field(es[6], "x") }
    end)
    P:set_many(es, "x", { 10, 20, 30, 40, 50, 60 })
    o:close()
    assert.equals(6, #seen)
    for k, s in ipairs(seen) do
      assert.equals(es[k], s[1])
      assert.equals(10 * k, s[2])
      assert.equals(60, s[3])
    end
    local boom = {}
    P:on_set(function() error(boom) end)
    local ok, e = pcall(P.set_many, P, es, "x", 1)
    assert.is_false(ok)
    assert.equals(boom, e)
    assert.equals(1, P:field(es[6], "x")) -- the writes stand
    assert.is_true(w:check())
  end)
end)
