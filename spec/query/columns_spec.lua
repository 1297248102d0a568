--[[
columns_spec.lua -- q:columns(spec, ...) (docs/queries.md): the values equal
get(), writes land and ":in" columns are not written back, write-back on
break and on error, chunk sizes, every column field type, bad values written
back (all-or-nothing per chunk), structural changes inside the loop body,
and the reuse of the arrays between loops (no garbage in steady state).
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")

describe("q:columns", function()
  local w, P, V, q
  -- Position carries the entity's number (id) so that rows can be told apart.
  local function populate(n, start)
    local es = w:create(n)
    for i, e in ipairs(es) do
      local k = (start or 0) + i
      P:add(e, k * 1.5, -k, k)
      V:add(e, k, 2 * k)
    end
    return es
  end
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f64", "y:f64", "id:i32" })
    V = w:component("Velocity", { "dx:f64", "dy:f64" })
    q = w:query(P, V)
  end)
  after_each(function() release(w) end)

  it("yields n and arrays whose values equal get()", function()
    local es = populate(100)
    local byid = {}
    for _, e in ipairs(es) do byid[P:field(e, "id")] = e end
    local total = 0
    for n, x, y, id, dx, dy in q:columns("Position.x", "Position.y", "Position.id",
                                         "Velocity.dx:in", "Velocity.dy:in") do
      for i = 1, n do
        local e = byid[id[i]]
        assert.truthy(e)
        local gx, gy, gid = P:get(e)
        local gdx, gdy = V:get(e)
        assert.equals(gx, x[i]); assert.equals(gy, y[i]); assert.equals(gid, id[i])
        assert.equals(gdx, dx[i]); assert.equals(gdy, dy[i])
        byid[id[i]] = nil       -- each entity once
      end
      total = total + n
    end
    assert.equals(100, total)
    assert.is_nil(next(byid))
  end)

  it("writes changed values back to the components", function()
    local es = populate(50)
    for n, x, y, dx, dy in q:columns("Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") do
      for i = 1, n do x[i] = x[i] + dx[i] * 0.5; y[i] = y[i] + dy[i] * 0.5 end
    end
    for k, e in ipairs(es) do
      local x, y, id = P:get(e)
      assert.equals(k, id)
      assert.equals(k * 1.5 + k * 0.5, x)
      assert.equals(-k + 2 * k * 0.5, y)
    end
  end)

  it("does not write back :in columns", function()
    local es = populate(20)
    for n, dx, x in q:columns("Velocity.dx:in", "Position.x:in") do
      for i = 1, n do dx[i] = 1e9; x[i] = "not even a number" end
    end
    for k, e in ipairs(es) do
      assert.equals(k, (V:get(e)))
      assert.equals(k * 1.5, (P:get(e)))
    end
  end)

  it("yields nothing for an empty query", function()
    local steps = 0
    for _ in q:columns("Position.x") do steps = steps + 1 end
    assert.equals(0, steps)
  end)

  it("yields chunks that are never empty and at most 1024 long, covering every match once", function()
    local es = populate(5000)
    for i = 1, 5000, 7 do V:remove(es[i]) end     -- holes
    local want = q:count()
    local seen, total, chunks = {}, 0, 0
    for n, id in q:columns("Position.id:in") do
      assert.is_true(n > 0 and n <= 1024, "chunk of " .. n)
      assert.equals("integer", math.type(n))
      for i = 1, n do
        assert(not seen[id[i]], "row seen twice")
        seen[id[i]] = true
      end
      total = total + n
      chunks = chunks + 1
    end
    assert.equals(want, total)
    assert.is_true(chunks >= 5)
    for i = 1, 5000 do
      assert.equals(i % 7 ~= 1, seen[i] == true)
    end
  end)

  it("writes back every chunk of a multi-chunk loop", function()
    local es = populate(5000)
    for n, x, id in q:columns("Position.x", "Position.id:in") do
      for i = 1, n do x[i] = id[i] * 10 end
    end
    for k, e in ipairs(es) do assert.equals(k * 10, (P:get(e))) end
  end)

  it("writes back the current chunk on break", function()
    local es = populate(3000)
    local first = {}
    for n, x, id in q:columns("Position.x", "Position.id:in") do -- luacheck: ignore 512
      for i = 1, n do x[i] = -1; first[id[i]] = true end
      break
    end
    for k, e in ipairs(es) do
      assert.equals(first[k] and -1 or k * 1.5, (P:get(e)))
    end
  end)

  it("writes back the current chunk on error, and the error comes out unchanged", function()
    local es = populate(3000)
    local first = {}
    local marker = setmetatable({}, { __tostring = function() return "marker" end })
    local ok, err = pcall(function()
      for n, x, id in q:columns("Position.x", "Position.id:in") do
        for i = 1, n do x[i] = -2; first[id[i]] = true end
        error(marker)
      end
    end)
    assert.is_false(ok)
    assert.equals(marker, err)
    for k, e in ipairs(es) do
      assert.equals(first[k] and -2 or k * 1.5, (P:get(e)))
    end
    -- the query is not locked
    local total = 0
    for n in q:columns("Position.x") do total = total + n end
    assert.equals(3000, total)
    w:destroy(es[1])
    assert.equals(2999, q:count())
  end)

  it("keeps the body's error over a bad value, and writes nothing of that chunk", function()
    local es = populate(3000)
    local line
    local ok, err = pcall(function()
      for n, x, y in q:columns("Position.x", "Position.y") do
        for i = 1, n do y[i] = 0 end                 -- good changes in the chunk
        x[1] = "junk"
        line = debug.getinfo(1, "l").currentline + 1
        error("mine")
      end
    end)
    assert.is_false(ok)
    assert.equals("string", type(err))
    assert.truthy(err:find(":" .. line .. ": mine$"), err)
    assert.is_true(w:check())
    for k, e in ipairs(es) do assert.same({ k * 1.5, -k, k }, { P:get(e) }) end
    -- the query is usable, and a bad value without an error still raises
    local total = 0
    for n, x in q:columns("Position.x") do
      total = total + n
      for i = 1, n do x[i] = x[i] + 1 end
    end
    assert.equals(3000, total)
    assert.equals(2.5, (P:get(es[1])))
    local ok2, err2 = pcall(function()
      for _, x in q:columns("Position.x") do x[2] = "junk" end
    end)
    assert.is_false(ok2)
    assert.truthy(err2:find("bad value for Position.x at row 2", 1, true), err2)
  end)

  it("writes back the current chunk on return from a function", function()
    local es = populate(10)
    local function f()
      for n, x in q:columns("Position.x") do -- luacheck: ignore 512
        for i = 1, n do x[i] = 42 end
        return n
      end
    end
    assert.equals(10, f())
    for _, e in ipairs(es) do assert.equals(42, (P:get(e))) end
  end)

  it("rejects bad specs naming the argument", function()
    local other = w:component("Other", { "z" })
    local Brain = w:component("Brain", { "script:lua", "n" })
    local bq = w:query(P, Brain)
    local cases = {
      { q, { "Position" } },
      { q, { "Position." } },
      { q, { ".x" } },
      { q, { "Position.z" } },
      { q, { "Nope.x" } },
      { q, { "Other.z" } },            -- not a term of the query
      { q, { "Position.x:out" } },
      { q, { "Position.x:" } },
      { q, { "Position.x", 42 } },
      { q, { "Position.x", {} } },
      { q, {} },                       -- no spec at all
      { bq, { "Brain.script" } },      -- lua fields are not columns
      { bq, { "Brain.script:in" } },
    }
    assert.equals(0, other:count())
    for _, c in ipairs(cases) do
      local msg = err_of(function()
        for _ in c[1]:columns(table.unpack(c[2])) do end
      end)
      assert.truthy(tostring(msg):find("columns", 1, true), tostring(msg))
    end
    assert.truthy(err_of(q.columns, q, "Position.q"):find("Position.q", 1, true))
    assert.truthy(err_of(bq.columns, bq, "Position.x", "Brain.script"):find("Brain.script", 1, true))
    -- a valid loop still works afterwards
    local n0 = 0
    for _, n in bq:columns("Brain.n") do n0 = n0 + #n end
    assert.equals(0, n0)
  end)

  it("cannot name a without-term", function()
    local Dead = w:component("Dead", { "when" })
    local q2 = w:query({ P, without = { Dead } })
    err_of(function() for _ in q2:columns("Dead.when") do end end)
  end)
end)

describe("q:columns field types", function()
  local w, A, q, es
  before_each(function()
    w = ecs.world()
    A = w:component("All", { "f:f32", "d:f64", "a:i8", "b:i16", "c:i32", "l:i64", "g:u8",
                             "h:u16", "u:u32", "flag:bool", "ref:entity" })
    q = w:query(A)
    es = w:create(10)
    for k, e in ipairs(es) do
      A:add(e, k + 0.25, k / 3, -k, k * 100, -k * 100000, (1 << 40) + k, k, k * 1000,
            4000000000 + k, k % 2 == 0, es[11 - k])
    end
  end)
  after_each(function() release(w) end)

  local ALL = { "All.f", "All.d", "All.a", "All.b", "All.c", "All.l", "All.g", "All.h", "All.u",
                "All.flag", "All.ref" }

  it("gives integers as integers, bools as booleans and entities as handles", function()
    local total = 0
    for n, f, d, a, b, c, l, g, h, u, flag, ref in q:columns(table.unpack(ALL)) do
      for i = 1, n do
        assert.equals("float", math.type(f[i]))
        assert.equals("float", math.type(d[i]))
        for _, col in ipairs({ a, b, c, l, g, h, u }) do
          assert.equals("integer", math.type(col[i]))
        end
        assert.equals("boolean", type(flag[i]))
        assert.is_true(ecs.is_entity(ref[i]))
      end
      total = total + n
    end
    assert.equals(10, total)
  end)

  it("reads every type as get() does", function()
    local byref = {}
    for k, e in ipairs(es) do byref[es[11 - k]] = e end
    for n, f, d, a, b, c, l, g, h, u, flag, ref in q:columns(table.unpack(ALL)) do
      for i = 1, n do
        local e = byref[ref[i]]
        local want = { A:get(e) }
        local got = { f[i], d[i], a[i], b[i], c[i], l[i], g[i], h[i], u[i], flag[i], ref[i] }
        for k = 1, 11 do assert.equals(want[k], got[k]) end
      end
    end
  end)

  it("writes every type back (f32 rounds like add)", function()
    for n, f, d, a, b, c, l, g, h, u, flag, ref in q:columns(table.unpack(ALL)) do
      for i = 1, n do
        f[i] = 0.1; d[i] = 0.1; a[i] = -128; b[i] = 32767; c[i] = -2147483648
        l[i] = math.mininteger; g[i] = 255; h[i] = 65535; u[i] = 4294967295
        flag[i] = true; ref[i] = ecs.null
      end
    end
    local probe = w:create()
    A:add(probe, 0.1)
    local f32 = A:field(probe, "f")
    A:remove(probe)
    for _, e in ipairs(es) do
      assert.same({ f32, 0.1, -128, 32767, -2147483648, math.mininteger, 255, 65535,
                    4294967295, true, ecs.null }, { A:get(e) })
    end
  end)

  it("stores an f32 beyond FLT_MAX as +-inf, as add does", function()
    for n, f in q:columns("All.f") do
      for i = 1, n do f[i] = i % 2 == 0 and 1e300 or -1e300 end
    end
    local seen = 0
    for n, f in q:columns("All.f:in") do
      for i = 1, n do
        assert.is_true(f[i] == math.huge or f[i] == -math.huge)
        seen = seen + 1
      end
    end
    assert.equals(#es, seen)
  end)

  it("accepts integral floats for integer fields", function()
    for n, c in q:columns("All.c") do
      for i = 1, n do c[i] = 3.0 end
    end
    for _, e in ipairs(es) do
      assert.equals(3, A:field(e, "c"))
      assert.equals("integer", math.type(A:field(e, "c")))
    end
  end)

  -- { spec, bad value, the message's parenthesis (numbers are shown by value) }
  local bad = {
    { "All.f", "1", "number expected, got string" },
    { "All.d", {}, "number expected, got table" },
    { "All.d", nil, "number expected, got nil" },
    { "All.c", 1.5, "" },
    { "All.c", 2 ^ 31, "" },
    { "All.a", 128, "" },
    { "All.g", -1, "" },
    { "All.u", 4294967296, "" },
    { "All.l", 2 ^ 63, "" },
    { "All.c", 0 / 0, "" },
    { "All.c", math.huge, "" },
    { "All.c", "3", "" },
    { "All.flag", 1, "boolean expected, got 1" },
    { "All.flag", nil, "boolean expected, got nil" },
    { "All.ref", 5, "entity expected, got 5" },
    { "All.ref", "e", "entity expected, got string" },
  }

  for _, case in ipairs(bad) do
    local spec, value, paren = case[1], case[2], case[3]
    it(("raises for %s = %s at write-back and writes nothing of the chunk"):format(spec, tostring(value)),
      function()
        local before = {}
        for _, e in ipairs(es) do before[e] = { A:get(e) } end
        local msg = err_of(function()
          for n, col, h in q:columns(spec, "All.h") do
            for i = 1, n do h[i] = 7 end      -- a good change in the same chunk
            col[3] = value
          end
        end)
        local field = spec
        local head = ("q:columns: bad value for %s at row 3"):format(field)
        assert.truthy(msg:find(head, 1, true), msg)
        if paren ~= "" then
          assert.truthy(msg:find("(" .. paren .. ")", 1, true), msg)
        end
        for _, e in ipairs(es) do assert.same(before[e], { A:get(e) }) end
        -- and the query still works
        local total = 0
        for n in q:columns("All.d") do total = total + n end
        assert.equals(10, total)
      end)
  end

  it("uses the documented message for a string in a number column", function()
    local w2 = ecs.world()
    local Pos = w2:component("Position", { "x:f32", "y:f32" })
    for _ = 1, 4 do Pos:add(w2:create(), 1, 2) end
    local msg = err_of(function()
      for _, x in w2:query(Pos):columns("Position.x") do x[3] = "oops" end
    end)
    assert.truthy(msg:find("q:columns: bad value for Position.x at row 3 (number expected, got string)",
                           1, true), msg)
    w2:close()
  end)

  it("writes back rows 1..n only (entries past n are ignored)", function()
    for n, c in q:columns("All.c") do
      c[n + 1] = "ignored"
      c[n + 2] = {}
      for i = 1, n do c[i] = 7 end
    end
    for _, e in ipairs(es) do assert.equals(7, A:field(e, "c")) end
  end)
end)

describe("q:columns with structural changes in the loop body", function()
  local w, P, V, q, es
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f64", "id:i32" })
    V = w:component("Velocity", { "dx:f64" })
    q = w:query(P, V)
    es = w:create(3000)
    for k, e in ipairs(es) do P:add(e, 0, k); V:add(e, k) end
  end)
  after_each(function() release(w) end)

  it("skips rows of destroyed entities and writes the others to their owners", function()
    local destroyed = {}
    for n, x, id in q:columns("Position.x", "Position.id:in") do
      for i = 1, n do x[i] = id[i] + 0.5 end
      -- destroy the owners of rows 1 and n of this chunk
      for _, i in ipairs({ 1, n }) do
        destroyed[id[i]] = true
        w:destroy(es[id[i]])
      end
    end
    for k, e in ipairs(es) do
      if destroyed[k] then
        assert.is_false(w:alive(e))
      else
        assert.equals(k + 0.5, P:field(e, "x"))
      end
    end
  end)

  it("skips rows of entities that lost a component, even when rows moved", function()
    local lost = {}
    for n, x, id in q:columns("Position.x", "Position.id:in") do
      for i = 1, n do x[i] = id[i] * 2 end
      -- remove Position (swap-remove moves another row into its place) and
      -- Velocity of two rows of this chunk
      P:remove(es[id[1]]); lost[id[1]] = "P"
      if n > 2 then V:remove(es[id[2]]); lost[id[2]] = "V" end
      P:gc(); V:gc()
    end
    for k, e in ipairs(es) do
      if lost[k] == "P" then
        assert.is_false(P:has(e))
      elseif lost[k] == "V" then
        assert.equals(0, P:field(e, "x"))     -- skipped at write-back
      else
        assert.equals(k * 2, P:field(e, "x"))
      end
    end
  end)

  it("fills later chunks from the current state", function()
    local chunk, total = 0, 0
    local dead = {}
    for n, id in q:columns("Position.id:in") do
      chunk = chunk + 1
      for i = 1, n do
        assert.is_nil(dead[id[i]], "a destroyed entity came in a later chunk")
      end
      total = total + n
      if chunk == 1 then
        -- destroy every entity whose id is a multiple of 3
        for k = 3, 3000, 3 do
          if w:alive(es[k]) then w:destroy(es[k]); dead[k] = true end
        end
      end
    end
    assert.is_true(total < 3000)
    assert.equals(2000, q:count())
  end)

  it("lets the body create entities and add components", function()
    local made = 0
    for n, x in q:columns("Position.x") do
      for i = 1, n do x[i] = 1 end
      for _ = 1, 10 do
        local e = w:create()
        P:add(e, 5, -1); V:add(e, 0)
        made = made + 1
      end
    end
    assert.equals(3000 + made, q:count())
    for _, e in ipairs(es) do assert.equals(1, P:field(e, "x")) end
  end)
end)

describe("q:columns arrays", function()
  local w, P, V, q
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f32", "y:f32" })
    V = w:component("Velocity", { "dx:f32", "dy:f32" })
    q = w:query(P, V)
    for _, e in ipairs(w:create(2000)) do P:add(e, 1, 2); V:add(e, 3, 4) end
  end)
  after_each(function() release(w) end)

  local function frame(dt)
    for n, x, y, dx, dy in q:columns("Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") do
      for i = 1, n do x[i] = x[i] + dx[i] * dt; y[i] = y[i] + dy[i] * dt end
    end
  end

  it("are the same tables in two loops (reused between frames)", function()
    local first, second = {}, {}
    for _, x, y in q:columns("Position.x", "Position.y") do first = { x, y }; break end -- luacheck: ignore 512
    for _, x, y in q:columns("Position.x", "Position.y") do second = { x, y }; break end -- luacheck: ignore 512
    assert.is_true(rawequal(first[1], second[1]))
    assert.is_true(rawequal(first[2], second[2]))
    assert.is_false(rawequal(first[1], first[2]))
  end)

  it("create no garbage in steady state", function()
    for _ = 1, 5 do frame(0.016) end            -- warm up
    collectgarbage(); collectgarbage()
    collectgarbage("stop")
    local before = collectgarbage("count")
    for _ = 1, 200 do frame(0.016) end
    local growth = (collectgarbage("count") - before) * 1024
    collectgarbage("restart")
    assert.is_true(growth < 1024, ("grew %d bytes over 200 frames"):format(growth))
    -- the frames did run
    for e in q:entities() do
      assert.is_true(P:field(e, "x") > 1)
    end
  end)
end)
