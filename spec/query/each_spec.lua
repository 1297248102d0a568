--[[
each_spec.lua -- q:each(fn, spec, ...) (docs/queries.md): fn(e, values...)
once per match with the values of the specs (as q:columns reads them); its
results written back to the writable specs in order (nil or missing keeps a
field, too many is an error, a bad value writes nothing of that entity);
every field type; structural changes and nested loops inside fn; errors
and yields inside fn; argument errors; a closed world; no garbage.
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")

local function note(e) return " (" .. ecs.tostring(e) .. ")" end

describe("q:each", function()
  local w, P, V, q
  -- Position carries the entity's number (id) so that calls can be told apart.
  local function populate(n, start)
    local es = w:create(n)
    for i, e in ipairs(es) do
      local k = (start or 0) + i
      P:add(e, k * 1.5, -k, k)
      V:add(e, k, 2 * k)
    end
    return es
  end
  local SPECS = { "Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in" }
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f64", "y:f64", "id:i32" })
    V = w:component("Velocity", { "dx:f64", "dy:f64" })
    q = w:query(P, V)
  end)
  after_each(function() release(w) end)

  describe("values and write-back", function()
    it("calls fn once per match with the entity and the specs' values, and returns the count", function()
      local es = populate(300)
      local seen = {}
      local visited = q:each(function(e, x, y, id, dx, dy, extra)
        assert.is_nil(extra)
        assert.is_nil(seen[e])
        seen[e] = true
        local gx, gy, gid = P:get(e)
        local gdx, gdy = V:get(e)
        assert.equals(gx, x); assert.equals(gy, y); assert.equals(gid, id)
        assert.equals("integer", compat.math_type(id))
        assert.equals(gdx, dx); assert.equals(gdy, dy)
      end, "Position.x", "Position.y", "Position.id:in", "Velocity.dx:in", "Velocity.dy:in")
      assert.equals(300, visited)
      assert.equals("integer", compat.math_type(visited))
      for _, e in ipairs(es) do assert.is_true(seen[e]) end
    end)

    it("writes result j to the j-th writable spec", function()
      local es = populate(50)
      q:each(function(_, x, y, dx, dy) return x + dx * 0.5, y + dy * 0.5 end, compat.unpack(SPECS))
      for k, e in ipairs(es) do
        local x, y, id = P:get(e)
        assert.equals(k, id)
        assert.equals(k * 1.5 + k * 0.5, x)
        assert.equals(-k + k, y)
      end
    end)

    it("skips :in and entity specs when counting writable ones", function()
      local es = populate(10)
      q:each(function(e, dx, x, me, y)
        assert.equals(e, me)
        return dx + x, dx - y
      end, "Velocity.dx:in", "Position.x", "entity", "Position.y")
      for k, e in ipairs(es) do
        assert.same({ k + k * 1.5, k + k, k }, { P:get(e) })
        assert.same({ k, 2 * k }, { V:get(e) })
      end
    end)

    it("keeps a field whose result is nil or missing", function()
      local es = populate(6)
      q:each(function(_, _, id) -- only y
        if id % 2 == 0 then return nil, 100 + id end
      end, "Position.x", "Position.id:in", "Position.y")
      q:each(function(_, _, id) -- only x, for ids over 3
        if id > 3 then return 200 + id end
      end, "Position.x", "Position.id:in", "Position.y")
      for k, e in ipairs(es) do
        local x, y = P:get(e)
        assert.equals(k > 3 and 200 + k or k * 1.5, x)
        assert.equals(k % 2 == 0 and 100 + k or -k, y)
      end
    end)

    it("lets the same field be read and written twice (the last result wins)", function()
      local es = populate(3)
      q:each(function(_, a, b, c) assert.equals(a, c); return a + 1, b + 2 end, "Position.x", "Position.x",
        "Position.x:in")
      for k, e in ipairs(es) do assert.equals(k * 1.5 + 2, (P:get(e))) end
    end)

    it("calls fn(e) alone when no spec is given", function()
      local es = populate(20)
      local n = 0
      assert.equals(20, q:each(function(...)
        assert.equals(1, select("#", ...))
        assert.is_true(ecs.is_entity((...)))
        n = n + 1
      end))
      assert.equals(20, n)
      assert.equals(20, #es)
    end)

    it("returns 0 and never calls fn for an empty query", function()
      assert.equals(0, q:each(function() error("called") end, "Position.x"))
    end)

    it("sees the writes of earlier calls, and fn's own sets of later entities", function()
      local es = populate(3)
      local order = {}
      q:each(function(e, x)
        order[#order + 1] = e
        for _, f in ipairs(es) do
          if f ~= e then P:set_field(f, "x", P:field(f, "x") + 1) end
        end
        return x * 10
      end, "Position.x")
      -- every entity was read after the earlier ones had bumped it
      local want = {}
      for i, e in ipairs(order) do
        local k = P:field(e, "id")
        want[e] = (k * 1.5 + (i - 1)) * 10 + (#order - i)
      end
      for _, e in ipairs(es) do assert.equals(want[e], (P:get(e))) end
    end)

    it("covers many chunks, each entity once", function()
      local es = populate(5000)
      for i = 1, 5000, 7 do V:remove(es[i]) end
      local want = q:count()
      local seen, n = {}, 0
      assert.equals(want, q:each(function(_, id)
        assert.is_nil(seen[id])
        seen[id] = true
        n = n + 1
        return id * 2
      end, "Position.id:in", "Position.x"))
      assert.equals(want, n)
      for i, e in ipairs(es) do
        assert.equals(i % 7 ~= 1, seen[i] == true)
        assert.equals(i % 7 ~= 1 and i * 2 or i * 1.5, (P:get(e)))
      end
    end)

    it("takes up to 64 specs", function()
      populate(2)
      local specs = {}
      for k = 1, 64 do specs[k] = k % 2 == 0 and "Position.x" or "Velocity.dx:in" end
      local got
      q:each(function(_, ...) got = select("#", ...) end, compat.unpack(specs))
      assert.equals(64, got)
      specs[65] = "Position.x"
      assert.equals("q:each: too many columns (limit 64)",
        err_of(q.each, q, function() end, compat.unpack(specs)))
    end)
  end)

  describe("field types", function()
    local A, qa, e, probe
    before_each(function()
      A = w:component("All", { "f:f32", "d:f64", "a:i8", "b:i16", "c:i32", "l:i64", "g:u8",
                               "h:u16", "u:u32", "ok:bool", "ref:entity" })
      qa = w:query(A)
      e, probe = w:create(), w:create()
      A:add(e)
    end)
    local ALL = { "All.f", "All.d", "All.a", "All.b", "All.c", "All.l", "All.g", "All.h", "All.u",
                  "All.ok", "All.ref" }

    it("reads every type as get() does", function()
      A:set(e, 0.1, 0.1, -128, 32767, -2147483648, compat.mininteger, 255, 65535, 4294967295, true, probe)
      local got
      qa:each(function(_, ...) got = { ... } end, compat.unpack(ALL))
      assert.same({ A:get(e) }, got)
      assert.equals("integer", compat.math_type(got[3]))
      assert.is_true(rawequal(probe, got[11]))
    end)

    it("writes every type as set() does (f32 rounds)", function()
      local vals = { 0.1, 0.1, -128, 32767, -2147483648, compat.mininteger, 255, 65535, 4294967295,
                     true, probe }
      qa:each(function() return compat.unpack(vals) end, compat.unpack(ALL))
      A:add(probe)
      A:set(probe, compat.unpack(vals))
      local want = { A:get(probe) }
      assert.same(want, { A:get(e) })
      assert.is_true(A:field(e, "f") ~= 0.1) -- rounded to a float
      -- beyond FLT_MAX is +-inf, as set() stores it
      qa:each(function() return 1e300 end, "All.f")
      A:set(probe, 1e300)
      assert.equals(math.huge, A:field(e, "f"))
      assert.equals(A:field(probe, "f"), A:field(e, "f"))
      qa:each(function() return -1e300 end, "All.f")
      assert.equals(-math.huge, A:field(e, "f"))
      -- integral floats are integers; false is a boolean; null is an entity
      qa:each(function() return 3.0, false, ecs.null end, "All.c", "All.ok", "All.ref")
      assert.same({ 3, false, ecs.null }, { A:field(e, "c"), A:field(e, "ok"), A:field(e, "ref") })
    end)

    it("refuses a bad value with the field, the expectation and the entity, writing nothing of it", function()
      A:set(e, 1, 2, 3, 4, 5, 6, 7, 8, 9, true, probe)
      local before = { A:get(e) }
      local cases = {
        { "All.d", "x", "q:each: bad value for All.d (number expected, got string)" },
        { "All.f", true, "q:each: bad value for All.f (number expected, got boolean)" },
        { "All.c", 1.5, "q:each: bad value for All.c (integer expected, got 1.5)" },
        { "All.c", "1", "q:each: bad value for All.c (integer expected, got string)" },
        { "All.a", 128, "q:each: bad value for All.a (i8 expected, got 128)" },
        { "All.g", -1, "q:each: bad value for All.g (u8 expected, got -1)" },
        { "All.u", 2 ^ 32, "q:each: bad value for All.u (u32 expected, got " .. tostring(2 ^ 32) .. ")" },
        { "All.ok", 1, "q:each: bad value for All.ok (boolean expected, got 1)" },
        { "All.ref", 0, "q:each: bad value for All.ref (entity expected, got 0)" },
        { "All.ref", {}, "q:each: bad value for All.ref (entity expected, got table)" },
      }
      for _, c in ipairs(cases) do
        -- a good first result, then the bad one: neither is written
        local msg = err_of(qa.each, qa, function() return 99, c[2] end, "All.h", c[1])
        assert.equals(c[3] .. note(e), msg)
        assert.same(before, { A:get(e) })
      end
    end)
  end)

  describe("result errors", function()
    it("refuses more results than writable specs, naming the entity, writing nothing of it", function()
      local es = populate(3)
      local first
      local msg = err_of(q.each, q, function(e, x)
        first = first or e
        return x + 1, 5
      end, "Position.x", "Velocity.dx:in")
      assert.equals("q:each: too many results (2 for 1 writable field)" .. note(first), msg)
      for k, e in ipairs(es) do assert.equals(k * 1.5, (P:get(e))) end
      msg = err_of(q.each, q, function() return nil end, "Velocity.dx:in", "entity")
      assert.equals("q:each: too many results (1 for 0 writable fields)" .. note(first), msg)
      msg = err_of(q.each, q, function() return 1 end)
      assert.equals("q:each: too many results (1 for 0 writable fields)" .. note(first), msg)
    end)

    it("keeps the writes made for entities before the bad one", function()
      local es = populate(10)
      local calls = 0
      assert.has_error(function()
        q:each(function(_, x)
          calls = calls + 1
          if calls == 4 then return "bad" end
          return x + 100
        end, "Position.x")
      end)
      local written = 0
      for k, e in ipairs(es) do
        local x = P:get(e)
        if x == k * 1.5 + 100 then written = written + 1 else assert.equals(k * 1.5, x) end
      end
      assert.equals(3, written)
      assert.equals(10, q:each(function() end))
    end)
  end)

  describe("structural changes inside fn", function()
    it("may destroy the entity itself: its results are dropped", function()
      local es = populate(20)
      local visited = q:each(function(e, x, id)
        if id % 2 == 0 then w:destroy(e) end
        return x + 1
      end, "Position.x", "Position.id:in")
      assert.equals(20, visited)
      for k, e in ipairs(es) do
        if k % 2 == 0 then assert.is_false(w:alive(e))
        else assert.equals(k * 1.5 + 1, (P:get(e))) end
      end
      assert.equals(10, q:count())
    end)

    it("does not visit entities destroyed or unmatched before they are reached, and reads moved rows right", function()
      local es = populate(600)
      local byid = {}
      for k, e in ipairs(es) do byid[k] = e end
      local seen, hit, n = {}, {}, 0
      q:each(function(e, id, x, dx)
        assert.is_nil(seen[id])
        assert.is_nil(hit[id])
        seen[id] = true
        n = n + 1
        assert.equals(byid[id], e)
        assert.equals(id * 1.5, x)   -- its own row, however rows moved
        assert.equals(id, dx)
        -- kill or unmatch an entity not visited yet (rows move: remove
        -- swaps the last instance into the hole)
        for d = 1, 600 do
          local v = (id + d * 7) % 600 + 1
          if not seen[v] and not hit[v] then
            hit[v] = true
            if v % 3 == 0 then w:destroy(byid[v])
            elseif v % 3 == 1 then V:remove(byid[v])
            else P:remove(byid[v]) end
            break
          end
        end
        return x + 1
      end, "Position.id:in", "Position.x", "Velocity.dx:in")
      local nhit = 0
      for _ in pairs(hit) do nhit = nhit + 1 end
      assert.equals(600, n + nhit)
      assert.equals(300, n)
      for id = 1, 600 do
        if seen[id] then assert.equals(id * 1.5 + 1, P:field(byid[id], "x")) end
      end
      assert.equals(300, q:count())
    end)

    it("skips the write of a field whose component fn removed, and keeps the others", function()
      local W = w:component("Weight", { "m:f64" })
      local qw = w:query(P, W)
      local es = w:create(4)
      for k, e in ipairs(es) do P:add(e, k, k, k); W:add(e, k) end
      qw:each(function(e, x, m)
        if P:field(e, "id") % 2 == 0 then W:remove(e) end
        return x + 10, m + 10
      end, "Position.x", "Weight.m")
      for k, e in ipairs(es) do
        assert.equals(k + 10, (P:get(e)))
        if k % 2 == 0 then assert.is_false(W:has(e)) else assert.equals(k + 10, W:field(e, "m")) end
      end
    end)

    it("writes to an entity that stopped matching through a 'without' component", function()
      local Frozen = w:component("Frozen", { "t:f64" })
      local qf = w:query({ P, without = { Frozen } })
      local es = populate(4)
      assert.equals(4, qf:each(function(e, x)
        Frozen:add(e, 1)
        return x + 1
      end, "Position.x"))
      for k, e in ipairs(es) do assert.equals(k * 1.5 + 1, (P:get(e))) end
      assert.equals(0, qf:each(function() error("not reached") end))
    end)

    it("does not visit entities created or starting to match during the loop", function()
      local es = populate(50)
      local loner = w:create()
      P:add(loner, 0, 0, 0)
      local n = 0
      assert.equals(50, q:each(function(_, x)
        n = n + 1
        local e = w:create()
        P:add(e, 0, 0, -1)
        V:add(e, 0, 0)
        if n == 1 then V:add(loner, 0, 0) end
        return x + 1
      end, "Position.x"))
      assert.equals(50, n)
      assert.equals(101, q:count())
      for k, e in ipairs(es) do assert.equals(k * 1.5 + 1, (P:get(e))) end
      assert.equals(0, P:field(loner, "x"))
    end)

    it("survives growth of the storage (columns move) while the loop runs", function()
      local es = populate(8)
      q:each(function(_, x)
        local more = w:create(2000)
        for _, f in ipairs(more) do P:add(f, 7, 7, 7) end
        w:destroy(more)
        return x * 2
      end, "Position.x")
      for k, e in ipairs(es) do assert.equals(k * 3, (P:get(e))) end
    end)
  end)

  describe("nesting", function()
    it("allows q:each, q:entities, q:columns and q:count of the same query inside fn", function()
      local es = populate(12)
      local inner = 0
      assert.equals(12, q:each(function(_, x)
        assert.equals(12, q:count())
        assert.equals(12, q:each(function(_, y) inner = inner + 1; return y - 1 end, "Position.y"))
        local m = 0
        for _ in q:entities() do m = m + 1 end
        assert.equals(12, m)
        for n in q:columns("Position.id:in") do m = m + n end
        assert.equals(24, m)
        return x + 1
      end, "Position.x"))
      assert.equals(144, inner)
      for k, e in ipairs(es) do assert.same({ k * 1.5 + 1, -k - 12 }, { P:field(e, "x"), P:field(e, "y") }) end
    end)

    it("lets an inner loop destroy what the outer one has not reached", function()
      populate(10)
      local outer = 0
      q:each(function(e)
        outer = outer + 1
        q:each(function(f) if f ~= e then w:destroy(f) end end)
      end)
      assert.equals(1, outer)
      assert.equals(1, q:count())
    end)
  end)

  describe("errors and yields inside fn", function()
    it("come out unchanged and leave the query usable", function()
      local es = populate(30)
      local obj = setmetatable({}, { __tostring = function() return "obj" end })
      for _, eo in ipairs({ "boom", obj, false }) do
        local calls = 0
        local ok, err = pcall(q.each, q, function(_, x)
          calls = calls + 1
          if calls == 10 then error(eo, 0) end
          return x
        end, "Position.x")
        assert.is_false(ok)
        assert.is_true(rawequal(eo, err))
        assert.equals(30, q:count())
        assert.equals(30, q:each(function() end, "Position.x"))
        local m = 0
        for _ in q:entities() do m = m + 1 end
        assert.equals(30, m)
        assert.is_true(w:check())
      end
      -- nil as the error object
      local ok, err = pcall(q.each, q, function() error(nil) end)
      assert.is_false(ok)
      assert.is_nil(err)
      -- structural changes and a rebuild still work, and the next loop sees them
      w:destroy(es[1])
      V:remove(es[2])
      assert.equals(28, q:each(function() end))
    end)

    it("reach an xpcall handler unchanged through nested loops, which are all released", function()
      populate(5)
      local ok, err = xpcall(function()
        q:each(function()
          q:each(function() error("deep", 0) end)
        end)
      end, function(m) return "handled: " .. tostring(m) end)
      assert.is_false(ok)
      assert.equals("handled: deep", err)
      assert.equals(5, q:each(function() end))
      assert.is_true(w:check())
    end)

    it("a yield fails cleanly (a C-call boundary) and the coroutine goes on", function()
      populate(3)
      local co = coroutine.create(function()
        local ok, err = pcall(q.each, q, function(e) coroutine.yield(e) end)
        coroutine.yield(ok, err)
        return "finished"
      end)
      local ok, ok2, err = coroutine.resume(co)
      assert.is_true(ok)
      assert.is_false(ok2)
      assert.matches("attempt to yield across .*C%-call boundary", err) -- worded per Lua
      assert.same({ true, "finished" }, { coroutine.resume(co) })
      assert.equals(3, q:each(function() end))
    end)

    it("leave a world that closes normally afterwards", function()
      populate(3)
      pcall(q.each, q, function() error("x") end)
      w:close()
      assert.equals("ecs.World (closed)", tostring(w))
      assert.equals("attempt to use a closed world", err_of(q.each, q, function() end))
    end)
  end)

  describe("argument errors", function()
    it("need a function", function()
      for _, bad in ipairs({ 1, "f", {}, true }) do
        local msg = err_of(q.each, q, bad, "Position.x")
        assert.matches("bad argument #2 to '%?' %(function expected, got " .. type(bad) .. "%)", msg)
      end
      assert.matches("function expected, got no value", err_of(q.each, q))
      assert.matches("function expected, got no value", err_of(function() return q:each() end))
    end)

    it("name a bad spec as q:columns does", function()
      local Brain = w:component("Brain", { "script:lua" })
      local Frozen = w:component("Frozen", { "t" })
      local qb = w:query({ P, Brain, without = { Frozen } })
      local f = function() end
      local cases = {
        { "Position", "q:each: column 'Position' must be 'Component.field'" },
        { "Position.z", "q:each: column 'Position.z': unknown field 'Position.z'" },
        { "Velocity.dx", "q:each: column 'Velocity.dx': component 'Velocity' is not among the query's " ..
          "components (Position, Brain)" },
        { "Frozen.t", "q:each: column 'Frozen.t': component 'Frozen' is excluded by the query" },
        { "Brain.script", "q:each: column 'Brain.script': lua fields are not columns" },
      }
      for _, c in ipairs(cases) do assert.equals(c[2], err_of(qb.each, qb, f, "Position.x", c[1])) end
      assert.matches("string expected, got number", err_of(q.each, q, f, 1))
      assert.matches("embedded zero", err_of(q.each, q, f, "Position.x\0"))
      assert.matches("ecs.Query expected, got table", err_of(q.each, {}, f))
    end)

    it("raise on a closed world, before and during the loop", function()
      populate(5)
      local calls = 0
      assert.equals("attempt to use a closed world", err_of(q.each, q, function(_, x)
        calls = calls + 1
        w:close()
        return x + 1
      end, "Position.x"))
      assert.equals(1, calls)
      assert.equals("attempt to use a closed world", err_of(q.each, q, function() end))
    end)
  end)

  it("creates no garbage in steady state", function()
    populate(2000)
    local DT = 0.016
    local function move(_, x, y, dx, dy) return x + dx * DT, y + dy * DT end
    for _ = 1, 5 do q:each(move, compat.unpack(SPECS)) end -- warm up
    collectgarbage(); collectgarbage()
    collectgarbage("stop")
    local before = collectgarbage("count")
    for _ = 1, 50 do q:each(move, "Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") end
    local growth = (collectgarbage("count") - before) * 1024
    collectgarbage("restart")
    assert.is_true(growth < 1024, ("grew %d bytes over 50 loops"):format(growth))
  end)
end)
