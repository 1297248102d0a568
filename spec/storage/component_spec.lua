--[[
component_spec.lua -- generic component managers: world:component and the
methods of ecs.Component, each with its normal use, its edge cases and every
kind of junk argument (RELIABILITY R15, R18-R21).
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local junk = require("spec.support.junk")

describe("world:component", function()
  local w
  before_each(function() w = ecs.world() end)
  after_each(function() w:close() end)

  it("creates managers with a name and a schema", function()
    local P = w:component("Position", { "x:f32", "y:f32" })
    assert.equals("Position", P.name)
    assert.same({ "x:f32", "y:f32" }, P:fields())
    assert.equals("ecs.Component(Position)", tostring(P))
    assert.is_true(ecs.is_entity(w:create()))
  end)

  it("makes a bare name f64 and nil or no schema a tag", function()
    local H = w:component("Health", { "hp", "max:i32" })
    assert.same({ "hp:f64", "max:i32" }, H:fields())
    assert.same({}, w:component("Enemy"):fields())
    assert.same({}, w:component("Frozen", nil):fields())
    assert.same({}, w:component("Empty", {}):fields())
  end)

  it("accepts every field type", function()
    local all = { "a:f32", "b:f64", "c:i8", "d:i16", "e:i32", "f:i64", "g:u8",
                  "h:u16", "i:u32", "j:bool", "k:entity", "l:lua" }
    assert.same(all, w:component("All", all):fields())
  end)

  it("lists managers in creation order", function()
    local A = w:component("A")
    local B = w:component("B", { "x" })
    local list = w:components()
    assert.equals(2, #list)
    assert.equals(A, list[1])
    assert.equals(B, list[2])
    list[1] = nil -- a copy
    assert.equals(A, w:components()[1])
  end)

  it("reports schema errors naming the field", function()
    local cases = {
      { { "x:f16" }, "world:component: field 'x' has unknown type 'f16'" },
      { { "x:" }, "world:component: field 'x' has unknown type ''" },
      { { "x", "y", "x:i8" }, "world:component: duplicate field 'x'" },
      { { ":f32" }, "world:component: invalid field name in ':f32'" },
      { { "" }, "world:component: invalid field name in ''" },
      { { "a.b:f32" }, "world:component: invalid field name in 'a.b:f32'" },
      { { "1x" }, "world:component: invalid field name in '1x'" },
      { { "x y" }, "world:component: invalid field name in 'x y'" },
      { { "x", 5 }, "world:component: schema entry 2 must be a string, got number" },
      { { {} }, "world:component: schema entry 1 must be a string, got table" },
    }
    for _, c in ipairs(cases) do
      assert.matches(c[2], err_of(w.component, w, "C", c[1]), 1, true)
    end
    local many = {}
    for i = 1, 256 do many[i] = "f" .. i end
    assert.matches("too many fields (limit 255)", err_of(w.component, w, "C", many), 1, true)
    assert.same({}, w:components()) -- nothing was created
  end)

  -- Built-in and plugin managers have names of their own: a component may
  -- take any of them, whichever is made first.
  local managers = {
    transform = function(world, e)
      local T = world.transform
      T:add(e)
      T:set_local_position(e, 1, 2, 3)
      assert.same({ 1, 2, 3 }, { T:world_position(e) })
    end,
    names = function(world, e)
      local N = world.names
      N:set(e, "hero")
      assert.equals(e, N:find("hero"))
    end,
    pointmass = function(world, e)
      local PM = require("ecs.pointmass").new(world)
      PM:add(e, 2, 1, 2, 3, 4, 5, 6)
      assert.equals(2, PM:mass(e))
    end,
    mesh = function(world, e)
      local M = require("ecs.mesh").new(world)
      assert.equals(1, M:add(e, 10))
    end,
  }
  for _, name in ipairs({ "transform", "names", "pointmass", "mesh" }) do
    for _, component_first in ipairs({ true, false }) do
      it(("names a component '%s' %s the manager of that name is used"):format(
        name, component_first and "before" or "after"), function()
        local e = w:create()
        local C
        if component_first then C = w:component(name, { "v:i32" }) end
        managers[name](w, e)
        if not component_first then C = w:component(name, { "v:i32" }) end
        assert.equals(name, C.name)
        C:add(e, 7)
        assert.equals(7, C:get(e))
        assert.same({ C }, w:components())
        assert.equals(1, w:query(C):count())
        managers[name](w, w:create()) -- the manager still works
        assert.matches("world:component: a component with this name already exists",
          err_of(w.component, w, name), 1, true)
        assert.is_true(w:check())
      end)
    end
  end

  it("rejects duplicate names and bad names", function()
    w:component("P", { "x" })
    assert.matches("world:component: a component with this name already exists",
      err_of(w.component, w, "P", { "y" }), 1, true)
    assert.matches("bad argument #1 to 'component' (string expected, got number)",
      err_of(function() return w:component(5) end), 1, true)
    assert.matches("bad argument #1 to 'component' (string expected, got no value)",
      err_of(function() return w:component() end), 1, true)
    for _, bad in ipairs({ "", "a.b", "1a", "a b", "Pos:x" }) do
      assert.matches("bad argument #1 to 'component' (component name must be an identifier)",
        err_of(function() return w:component(bad) end), 1, true)
    end
    assert.matches("bad argument #1 to 'component' (world:component: string contains an " ..
                   "embedded zero at position 2)", err_of(function() return w:component("a\0b") end),
                   1, true)
    assert.matches("bad argument #2 to 'component' (table expected, got string)",
      err_of(function() return w:component("Q", "x:f32") end), 1, true)
  end)

  it("gives 40-field components back whole (stack space)", function()
    local schema, values = {}, {}
    for i = 1, 40 do schema[i] = "f" .. i .. ":i32"; values[i] = i end
    local C = w:component("Wide", schema)
    local e = w:create()
    C:add(e, table.unpack(values))
    assert.same(values, { C:get(e) })
    local t = {}
    for i = 1, 40 do t["f" .. i] = -i end
    C:set(e, t)
    assert.equals(-40, select(40, C:get(e)))
    assert.equals(-17, C:field(e, "f17"))
  end)

  it("allows 255 fields", function()
    local schema = {}
    for i = 1, 255 do schema[i] = "f" .. i .. ":u8" end
    local C = w:component("Widest", schema)
    local e = w:create()
    C:add(e, 1, 2, 3)
    assert.equals(255, select("#", C:get(e)))
    assert.equals(3, (select(3, C:get(e))))
  end)
end)

describe("ecs.Component", function()
  local w, P, e
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f32", "y:f32" })
    e = w:create()
  end)
  after_each(function()
    assert.is_true(w:check())
    w:close()
  end)

  describe("add", function()
    it("adds positionally and by name; missing fields are zero", function()
      P:add(e, 1, 2)
      assert.same({ 1, 2 }, { P:get(e) })
      local f = w:create()
      P:add(f, { y = 3 })
      assert.same({ 0, 3 }, { P:get(f) })
      local g = w:create()
      P:add(g)
      assert.same({ 0, 0 }, { P:get(g) })
      P:add(g, 7)
      assert.same({ 7, 0 }, { P:get(g) })
    end)

    it("overwrites when the entity has it", function()
      P:add(e, 1, 2)
      P:add(e, 5)
      assert.same({ 5, 0 }, { P:get(e) })
      assert.equals(1, P:count())
    end)

    it("refuses dead, stale and null entities", function()
      local d = w:create()
      w:destroy(d)
      assert.matches("Position:add: entity is not alive", err_of(P.add, P, d, 1, 2), 1, true)
      assert.matches("Position:add: entity is not alive", err_of(P.add, P, ecs.null), 1, true)
      assert.matches("Position:add: entity is not alive",
        err_of(P.add, P, ecs.entity((1 << 30) - 1)), 1, true)
      assert.equals(0, P:count())
    end)

    it("checks values against the field types", function()
      assert.matches("Position:add: field 'x' expects a number, got string",
        err_of(P.add, P, e, "1"), 1, true)
      assert.matches("Position:add: field 'y' expects a number, got boolean",
        err_of(P.add, P, e, 1, true), 1, true)
      assert.matches("Position:add: too many values (2 fields)",
        err_of(P.add, P, e, 1, 2, 3), 1, true)
      assert.matches("Position:add: unknown field 'z'",
        err_of(P.add, P, e, { z = 1 }), 1, true)
      assert.matches("Position:add: field names must be strings, got number",
        err_of(P.add, P, e, { 1, 2 }), 1, true)
      assert.is_false(P:has(e)) -- nothing was added by a failed add
    end)

    it("converts integers by Lua's rules and checks ranges", function()
      local I = w:component("Ints", { "a:i8", "b:u8", "c:i16", "d:u16", "e:i32",
                                       "f:u32", "g:i64" })
      I:add(e, -128, 255, -32768, 65535, -2147483648, 4294967295, math.mininteger)
      assert.same({ -128, 255, -32768, 65535, -2147483648, 4294967295, math.mininteger },
        { I:get(e) })
      I:add(e, 3.0, 2 ^ 7, 0, 0, 0, 0, math.maxinteger)
      assert.same({ 3, 128, 0, 0, 0, 0, math.maxinteger }, { I:get(e) })
      assert.is_true(math.type((I:get(e))) == "integer")
      local bad = {
        { { 128 }, "field 'a' (i8) out of range, got 128" },
        { { -129 }, "field 'a' (i8) out of range, got -129" },
        { { 0, 256 }, "field 'b' (u8) out of range, got 256" },
        { { 0, -1 }, "field 'b' (u8) out of range, got -1" },
        { { 0, 0, 32768 }, "field 'c' (i16) out of range" },
        { { 0, 0, 0, 65536 }, "field 'd' (u16) out of range" },
        { { 0, 0, 0, 0, 2147483648 }, "field 'e' (i32) out of range" },
        { { 0, 0, 0, 0, 0, 4294967296 }, "field 'f' (u32) out of range" },
        { { 1.5 }, "field 'a' expects an integer, got 1.5" },
        { { 0 / 0 }, "field 'a' expects an integer, got" },
        { { math.huge }, "field 'a' expects an integer, got inf" },
        { { 0, 0, 0, 0, 0, 0, 2 ^ 63 }, "field 'g' expects an integer, got" },
        { { "1" }, "field 'a' expects an integer, got string" },
      }
      for _, c in ipairs(bad) do
        assert.matches("Ints:add: " .. c[2], err_of(I.add, I, e, table.unpack(c[1])), 1, true)
      end
      assert.same({ 3, 128, 0, 0, 0, 0, math.maxinteger }, { I:get(e) }) -- unchanged
    end)

    it("stores floats: f32 rounds, f64 exact, nan and inf kept", function()
      local F = w:component("F", { "s:f32", "d:f64" })
      F:add(e, 0.1, 0.1)
      local s, d = F:get(e)
      assert.equals(0.1, d)
      assert.is_true(math.abs(s - 0.1) < 1e-7 and s ~= 0.1)
      F:add(e, 1e300, -1e300)
      assert.same({ math.huge, -1e300 }, { F:get(e) })
      F:add(e, -1e300, math.huge)
      assert.same({ -math.huge, math.huge }, { F:get(e) })
      F:add(e, 0 / 0, 0 / 0)
      s, d = F:get(e)
      assert.is_true(s ~= s and d ~= d)
      F:add(e, math.maxinteger, 3)
      assert.equals(2.0 ^ 63, (F:get(e)))
    end)

    it("takes booleans for bool and handles for entity fields", function()
      local C = w:component("C", { "b:bool", "t:entity" })
      C:add(e, true, e)
      assert.same({ true, e }, { C:get(e) })
      C:add(e)
      assert.same({ false, ecs.null }, { C:get(e) })
      assert.matches("C:add: field 'b' expects a boolean, got number", err_of(C.add, C, e, 1), 1, true)
      assert.matches("C:add: field 't' expects an entity, got number", err_of(C.add, C, e, false, 1), 1, true)
      assert.matches("C:add: field 't' expects an entity, got FILE*",
        err_of(C.add, C, e, false, io.stdout), 1, true)
      -- a stale handle reads back stale
      local d = w:create()
      C:add(e, true, d)
      w:destroy(d)
      local _, t = C:get(e)
      assert.equals(d, t)
      assert.is_false(w:alive(t))
    end)

    it("takes a table positionally when the first field is lua", function()
      local B = w:component("Brain", { "script:lua", "n" })
      local t = { 1 }
      B:add(e, t)
      assert.equals(t, (B:get(e)))
      B:add(e, { n = 5 }) -- still a value, not names
      assert.same({ n = 5 }, (B:get(e)))
    end)

    it("adds to a tag", function()
      local T = w:component("Enemy")
      T:add(e)
      assert.is_true(T:has(e))
      assert.equals(0, select("#", T:get(e)))
      assert.matches("Enemy:add: too many values (0 fields)", err_of(T.add, T, e, 1), 1, true)
    end)
  end)

  describe("set", function()
    it("replaces the value of an entity that has it", function()
      P:add(e, 1, 2)
      P:set(e, 3, 4)
      assert.same({ 3, 4 }, { P:get(e) })
      P:set(e, { x = 9 })
      assert.same({ 9, 0 }, { P:get(e) })
    end)

    it("is an error without the component or for a dead entity", function()
      assert.matches("Position:set: entity does not have the component", err_of(P.set, P, e, 1, 2), 1, true)
      w:destroy(e)
      assert.matches("Position:set: entity is not alive", err_of(P.set, P, e, 1, 2), 1, true)
    end)
  end)

  describe("get, field, set_field, has", function()
    it("read nothing for entities without the component", function()
      local d = w:create()
      w:destroy(d)
      for _, x in ipairs({ e, d, ecs.null, ecs.entity((1 << 30) - 1) }) do
        assert.equals(0, select("#", P:get(x)))
        assert.is_nil(P:field(x, "x"))
        assert.is_false(P:has(x))
      end
    end)

    it("read and write single fields", function()
      P:add(e, 1, 2)
      assert.equals(2, P:field(e, "y"))
      P:set_field(e, "y", 8)
      assert.same({ 1, 8 }, { P:get(e) })
      assert.matches("Position:field: unknown field 'z'", err_of(P.field, P, e, "z"), 1, true)
      assert.matches("Position:set_field: unknown field 'z'", err_of(P.set_field, P, e, "z", 1), 1, true)
      assert.matches("bad argument #2 to 'field' (string expected, got number)",
        err_of(function() return P:field(e, 1) end), 1, true)
      assert.matches("Position:set_field: field 'x' expects a number, got table",
        err_of(P.set_field, P, e, "x", {}), 1, true)
      P:set_field(e, "x", nil) -- nil is zero
      assert.equals(0, P:field(e, "x"))
      local f = w:create()
      assert.matches("Position:set_field: entity does not have the component",
        err_of(P.set_field, P, f, "x", 1), 1, true)
      w:destroy(f)
      assert.matches("Position:set_field: entity is not alive",
        err_of(P.set_field, P, f, "x", 1), 1, true)
    end)

    it("hide the component of a destroyed entity at once", function()
      P:add(e, 1, 2)
      w:destroy(e)
      assert.is_false(P:has(e))
      assert.equals(0, select("#", P:get(e)))
      assert.equals(0, P:count())
      assert.equals(1, P:size())
    end)

    it("do not let a recycled index see the old record", function()
      P:add(e, 1, 2)
      w:destroy(e)
      local n
      repeat
        n = w:create()
        if ecs.index(n) ~= ecs.index(e) then w:destroy(n) end
      until ecs.index(n) == ecs.index(e)
      assert.is_false(P:has(n))
      assert.is_false(P:has(e))
      P:add(n, 5)
      assert.same({ 5, 0 }, { P:get(n) })
      assert.is_false(P:has(e))
      assert.equals(1, P:size())
    end)
  end)

  describe("remove", function()
    it("removes and reports", function()
      local f = w:create()
      P:add(e, 1, 2)
      P:add(f, 3, 4)
      assert.is_true(P:remove(e))
      assert.is_false(P:remove(e))
      assert.is_false(P:has(e))
      assert.same({ 3, 4 }, { P:get(f) })
      w:destroy(f)
      assert.is_false(P:remove(f)) -- dead: left to gc
      assert.equals(1, P:size())
      assert.equals(1, P:gc())
    end)
  end)

  describe("count, size, gc, entities", function()
    it("count live entities only and iterate them", function()
      local es = w:create(10)
      for i, x in ipairs(es) do P:add(x, i, 0) end
      w:destroy(es[3])
      assert.equals(9, P:count())
      assert.equals(10, P:size())
      local seen = {}
      for x in P:entities() do seen[#seen + 1] = x end
      assert.equals(9, #seen)
      -- removing during the loop is allowed
      local n = 0
      for x in P:entities() do P:remove(x); n = n + 1 end
      assert.equals(9, n)
      assert.equals(0, P:count())
      assert.equals(1, P:gc(0) + P:gc())
      assert.equals(0, P:size())
    end)

    it("checks the gc budget", function()
      assert.matches("bad argument #1 to 'gc' (budget must not be negative)",
        err_of(function() return P:gc(-1) end), 1, true)
      assert.matches("number has no integer representation", err_of(P.gc, P, 1.5), 1, true)
      assert.matches("number expected, got string", err_of(P.gc, P, "x"), 1, true)
      assert.equals(0, P:gc(math.maxinteger))
    end)
  end)

  describe("misuse", function()
    it("refuses a closed world", function()
      P:add(e, 1, 2)
      local w2 = ecs.world()
      local Q = w2:component("Q", { "x" })
      w2:close()
      for _, m in ipairs({ "add", "set", "get", "field", "set_field", "has", "remove",
                           "count", "size", "gc", "fields", "entities" }) do
        assert.matches("attempt to use a closed world", err_of(Q[m], Q, e, "x"), 1, true)
      end
      assert.equals("Q", Q.name) -- a plain field, still readable
      assert.equals("ecs.Component (closed world)", tostring(Q))
    end)

    it("names the type of non-entity light userdata and foreign objects", function()
      local lud = debug.upvalueid(function() return P end, 1)
      assert.matches("bad argument #1 to 'has' (entity expected, got light userdata)",
        err_of(function() return P:has(lud) end), 1, true)
      assert.matches("bad argument #1 to 'get' (entity expected, got FILE*)",
        err_of(function() return P:get(io.stdout) end), 1, true)
      local C = w:component("C", { "t:entity", "s:lua" })
      assert.matches("C:add: field 't' expects an entity, got light userdata",
        err_of(C.add, C, e, lud), 1, true)
      C:add(e, nil, lud) -- any value in a lua field
      assert.equals(lud, C:field(e, "s"))
    end)

    it("reports a bad self", function()
      assert.matches("ecs.Component expected, got table", err_of(P.get, {}, e), 1, true)
      assert.matches("ecs.Component expected, got ecs.World", err_of(P.get, w, e), 1, true)
      local M = w:component("M", { "x" })
      assert.is_nil(M.nothing)
      assert.equals(P.get, M.get)
    end)

    it("treats a manager of another world as its own world's", function()
      local w2 = ecs.world()
      local Q = w2:component("Position", { "x:f32", "y:f32" })
      P:add(e, 1, 2)
      assert.is_false(Q:has(e)) -- e is not alive in w2
      assert.matches("Position:add: entity is not alive", err_of(Q.add, Q, e, 1), 1, true)
      w2:close()
    end)

    it("survives every junk value in every position of every method", function()
      local M = w:component("Mixed", { "a:f32", "b:i8", "c:bool", "d:entity", "e:lua" })
      local values, other = junk.values(w)
      -- also: a light userdata that is not an entity, another world's manager
      local lud = debug.upvalueid(function() return M end, 1)
      assert.equals("userdata", type(lud))
      assert.is_false(ecs.is_entity(lud))
      values[#values + 1] = { "light userdata", lud }
      values[#values + 1] = { "other world's manager", other:component("Mixed", { "a" }) }
      local calls = 0
      local methods = debug.getmetatable(M).__methods
      for name, f in pairs(methods) do
        for _, j in ipairs(values) do
          local v = j[2]
          for _, args in ipairs({ { v }, { M, v }, { M, e, v }, { M, e, v, v },
                                  { M, e, "a", v }, { M, e, "e", v }, { M, v, "a", 1 },
                                  { M, e, 1, v, true, e, v } }) do
            local ok, err = pcall(f, table.unpack(args, 1, 7))
            assert(ok or type(err) == "string", name .. " with " .. j[1])
            calls = calls + 1
          end
        end
      end
      assert.is_true(calls > 1000)
      other:close()
      local good, bad = w:check()
      assert(good, bad)
      M:add(e, 1, 2, true, e, "x")
      assert.same({ 1, 2, true, e, "x" }, { M:get(e) })
    end)
  end)
end)

describe("every operation x every kind of dead handle (R15)", function()
  it("gives the contract's answer and never writes into a reused slot", function()
    local w = ecs.world()
    local other = ecs.world()
    local P = w:component("P", { "x:i32" })
    local live = w:create()
    P:add(live, 7)
    local destroyed = w:create()
    P:add(destroyed, 1)
    w:destroy(destroyed)
    local reused_old = w:create()
    P:add(reused_old, 2)
    w:destroy(reused_old)
    local new
    repeat
      new = w:create()
      if ecs.index(new) ~= ecs.index(reused_old) then w:destroy(new) end
    until ecs.index(new) == ecs.index(reused_old)
    local kinds = {
      { "never created", ecs.entity(ecs.index(new) + 5000) },
      { "generation ahead", ecs.entity((ecs.generation(live) + 1) << 22 | ecs.index(live)) },
      { "destroyed", destroyed },
      { "destroyed, index reused", reused_old },
      { "null", ecs.null },
      -- handles are plain ids: another world's handle is only "dead" here
      -- when no entity of this world has that id
      { "other world's", other:create(5000)[5000] },
    }
    for _, k in ipairs(kinds) do
      local e, what = k[2], k[1]
      assert.is_false(P:has(e), what)
      assert.equals(0, select("#", P:get(e)), what)
      assert.is_nil(P:field(e, "x"), what)
      assert.is_false(P:remove(e), what)
      assert.matches("P:add: entity is not alive", err_of(P.add, P, e, 3), 1, true)
      assert.matches("P:set: entity is not alive", err_of(P.set, P, e, 3), 1, true)
      assert.matches("P:set_field: entity is not alive", err_of(P.set_field, P, e, "x", 3), 1, true)
    end
    -- nothing leaked into the live entity or the one reusing the index
    assert.same({ 7 }, { P:get(live) })
    assert.is_false(P:has(new))
    assert.equals(1, P:count())
    P:add(new, 9)
    assert.same({ 9 }, { P:get(new) })
    assert.is_false(P:has(reused_old))
    assert.is_true(w:check())
    other:close()
    w:close()
  end)
end)

describe("examples/components.lua", function()
  it("runs", function()
    local chunk = assert(loadfile("examples/components.lua"))
    local out = {}
    local env = setmetatable({ print = function(s) out[#out + 1] = s end }, { __index = _G })
    debug.setupvalue(chunk, 1, env)
    chunk()
    assert.equals("world consistent: true", out[#out])
  end)
end)
