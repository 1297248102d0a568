--[[
each_chunk_spec.lua -- q:each_chunk(fn, spec, ...) (docs/queries.md): the
callback form of q:columns. fn(n, arrays...) once per chunk with the arrays
q:columns yields for the same specs, the writable ones written back after
each call and when fn raises. Equivalence with q:columns over random worlds
(with and without structural changes in the body); errors inside fn (writes
kept up to the error, the error object unchanged, the world usable); :in and
entity columns never written back; structural changes; journal and undo of
its writes; change queries; a redefinition during the loop; nested loops;
yields; argument errors; a closed world; collector stress; no garbage.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")

-- The message of an error, without a "file:line: " prefix.
local function msg(err) return (tostring(err):gsub("^[^%s:]+:%d+: ", "")) end

-- A small deterministic PRNG (an LCG; the high bits): rnd(n) in 1..n.
local function prng(seed)
  local s = seed
  return function(n)
    s = s * 6364136223846793005 + 1442695040888963407
    return (s >> 33) % n + 1
  end
end

-- The first k for which ok(k, es[k]) is false, or nil: checks of every
-- entity with one assertion, not one per entity (whose allocations make the
-- collector-stress runs of test.sh slow).
local function first_bad(es, ok)
  for k, e in ipairs(es) do
    if not ok(k, e) then return k end
  end
  return nil
end

describe("q:each_chunk", function()
  local w, P, V, q
  -- every entity's Position.x is want(k), k its number
  local function x_is(es, want)
    assert.is_nil(first_bad(es, function(k, e) return P:field(e, "x") == want(k) end))
  end
  -- Position.id is the entity's number (1..n), so that rows can be told apart.
  local function populate(n)
    local es = w:create(n)
    for k, e in ipairs(es) do
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

  describe("chunks and write-back", function()
    it("calls fn(n, arrays...) once per chunk with q:columns' chunks and values, and returns the count", function()
      local es = populate(2500)
      local want = {}
      for n, x, id, dx, e in q:columns("Position.x", "Position.id:in", "Velocity.dx:in", "entity") do
        want[#want + 1] = { n = n, x = { table.unpack(x, 1, n) }, id = { table.unpack(id, 1, n) },
                            dx = { table.unpack(dx, 1, n) }, e = { table.unpack(e, 1, n) } }
      end
      local got = {}
      local visited = q:each_chunk(function(n, x, id, dx, e, extra)
        assert.is_nil(extra)
        got[#got + 1] = { n = n, x = { table.unpack(x, 1, n) }, id = { table.unpack(id, 1, n) },
                          dx = { table.unpack(dx, 1, n) }, e = { table.unpack(e, 1, n) } }
        assert.equals("integer", math.type(n))
        assert.equals("integer", math.type(id[1]))
      end, "Position.x", "Position.id:in", "Velocity.dx:in", "entity")
      assert.equals(2500, visited)
      assert.equals("integer", math.type(visited))
      assert.same({ 1024, 1024, 452 }, { got[1].n, got[2].n, got[3].n })
      assert.same(want, got)
      local seen = {}
      for _, c in ipairs(got) do for i = 1, c.n do seen[c.e[i]] = true end end
      assert.is_nil(first_bad(es, function(_, e) return seen[e] end))
    end)

    it("writes the writable columns back after each call", function()
      local es = populate(2500)
      local calls = 0
      q:each_chunk(function(n, x, y, dx, dy)
        calls = calls + 1
        for i = 1, n do x[i] = x[i] + dx[i] * 0.5; y[i] = y[i] + dy[i] end
      end, "Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in")
      assert.equals(3, calls)
      assert.is_nil(first_bad(es, function(k, e)
        local x, y, id = P:get(e)
        return x == k * 1.5 + k * 0.5 and y == -k + 2 * k and id == k
      end))
    end)

    it("writes each chunk back before the next call", function()
      populate(2500)
      local prev, calls = nil, 0
      q:each_chunk(function(n, x, e)
        calls = calls + 1
        if prev then assert.equals(1 - calls, P:field(prev, "x")) end
        for i = 1, n do x[i] = -calls end
        prev = e[1]
      end, "Position.x", "entity")
      assert.equals(3, calls)
    end)

    it("never writes :in or entity columns back, whatever fn put in them", function()
      local es = populate(1500)
      q:each_chunk(function(n, dx, e, x)
        for i = 1, n do dx[i] = "junk"; e[i] = {}; x[i] = 7 end
      end, "Velocity.dx:in", "entity", "Position.x")
      assert.is_nil(first_bad(es, function(k, e)
        local dx, dy = V:get(e)
        return dx == k and dy == 2 * k and P:field(e, "x") == 7
      end))
    end)

    it("ignores fn's results", function()
      local es = populate(10)
      q:each_chunk(function(n, x)
        for i = 1, n do x[i] = 3 end
        return 1, "two", {}, nil, false
      end, "Position.x")
      x_is(es, function() return 3 end)
    end)

    it("returns 0 and never calls fn for an empty query", function()
      assert.equals(0, q:each_chunk(function() error("called") end, "Position.x"))
    end)

    it("writes rows 1..n only (entries past n are ignored)", function()
      local es = populate(3)
      q:each_chunk(function(n, x)
        assert.equals(3, n)
        for i = 1, 1024 do x[i] = "past n" end
        for i = 1, n do x[i] = 9 end
      end, "Position.x")
      x_is(es, function() return 9 end)
    end)

    it("takes up to 64 specs, and refuses 65", function()
      local es = populate(5)
      local specs = {}
      for k = 1, 64 do specs[k] = k % 2 == 0 and "Position.x" or "Velocity.dx:in" end
      local width
      q:each_chunk(function(n, ...)
        width = select("#", ...)
        local last = select(64, ...)
        for i = 1, n do last[i] = 4 end
      end, table.unpack(specs))
      assert.equals(64, width)
      x_is(es, function() return 4 end)
      specs[65] = "Position.x"
      assert.equals("q:each_chunk: too many columns (limit 64)",
                    msg(err_of(q.each_chunk, q, function() end, table.unpack(specs))))
    end)

    it("reuses its arrays between chunks and calls", function()
      populate(2500)
      local seen = {}
      for _ = 1, 2 do
        q:each_chunk(function(_, x) seen[#seen + 1] = x end, "Position.x")
      end
      assert.equals(6, #seen)
      for k = 2, 6 do assert.is_true(rawequal(seen[1], seen[k])) end
    end)
  end)

  describe("the same as q:columns over random worlds", function()
    local TYPES = { "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "bool", "entity" }
    local RANGE = {
      i8 = { -128, 127 }, i16 = { -32768, 32767 }, i32 = { -2147483648, 2147483647 },
      u8 = { 0, 255 }, u16 = { 0, 65535 }, u32 = { 0, 4294967295 },
      i64 = { math.mininteger, math.maxinteger },
    }
    local function value(rnd, ty, es)
      if ty == "f32" or ty == "f64" then return rnd(2001) / 8 - 125 end
      if ty == "bool" then return rnd(2) == 1 end
      if ty == "entity" then return es[rnd(#es)] end
      local r = RANGE[ty]
      if rnd(10) == 1 then return r[rnd(2)] end -- the limits
      return math.max(r[1], math.min(r[2], rnd(300) - 100))
    end
    -- the new value of a writable column entry (valid for its type)
    local function next_value(ty, v, i, k, arr, n)
      if ty == "f32" or ty == "f64" then return v * 0.5 + k + i / 4 end
      if ty == "bool" then return not v end
      if ty == "entity" then return arr[i % n + 1] end
      local r = RANGE[ty]
      if ty == "i64" then return v + 1 end -- wraps: still an i64
      return v < r[2] and v + 1 or r[1]
    end

    -- The same world for the same seed: components of random schemas,
    -- entities with random subsets, a query, its specs (some :in, some
    -- "entity", some twice; the first writable) and a change query over the
    -- first component.
    local function build(seed)
      local rnd = prng(seed)
      local W = ecs.world()
      local comps, schema = {}, {}
      for c = 1, 2 + rnd(3) do
        local fields = {}
        for f = 1, rnd(4) do fields[f] = { name = "f" .. f, type = TYPES[rnd(#TYPES)] } end
        local decl = {}
        for f, fd in ipairs(fields) do decl[f] = fd.name .. ":" .. fd.type end
        comps[c] = W:component("C" .. c, decl)
        schema[c] = fields
      end
      local es, vals = W:create(200 + rnd(2400)), {}
      for _, e in ipairs(es) do
        for c, C in ipairs(comps) do
          if c == 1 or rnd(4) > 1 then
            for f, fd in ipairs(schema[c]) do vals[f] = value(rnd, fd.type, es) end
            C:add(e, table.unpack(vals, 1, #schema[c]))
          end
        end
      end
      local with, without, used = { comps[1] }, {}, { true }
      for c = 2, #comps do
        local k = rnd(4)
        if k == 1 then with[#with + 1] = comps[c]; used[c] = true
        elseif k == 2 then without[#without + 1] = comps[c] end
      end
      local terms = { without = without }
      table.move(with, 1, #with, 1, terms)
      local Q = W:query(terms)
      local specs, types = {}, {}
      for s = 1, 1 + rnd(7) do
        if s > 1 and rnd(6) == 1 then
          specs[s], types[s] = "entity", "handle"
        else
          local c
          repeat c = rnd(#comps) until used[c]
          local fd = schema[c][rnd(#schema[c])]
          -- the first one writable, so that every world sees writes
          specs[s] = "C" .. c .. "." .. fd.name .. (s > 1 and rnd(3) == 1 and ":in" or "")
          types[s] = fd.type
        end
      end
      local watch = W:query({ comps[1], changed = { comps[1] } })
      for _ in watch:entities() do end -- a completed pass: nothing due
      return { w = W, comps = comps, q = Q, specs = specs, types = types, es = es, watch = watch,
               churn = rnd(2) == 1 }
    end

    -- The loop body both forms run: new values in the writable arrays,
    -- junk in the :in ones; with churn, structural changes.
    local function body(x, chunk, n, arrays)
      for k, spec in ipairs(x.specs) do
        local a, ty = arrays[k], x.types[k]
        if spec == "entity" or spec:sub(-3) == ":in" then
          a[1] = "junk" -- never written back, never checked
        else
          for i = 1, n do a[i] = next_value(ty, a[i], i, k + chunk, a, n) end
        end
      end
      if x.churn then
        local victim = x.es[(chunk * 37) % #x.es + 1]
        if x.w:alive(victim) then x.w:destroy(victim) end
        local other = x.es[(chunk * 53) % #x.es + 1]
        if x.w:alive(other) and x.comps[#x.comps]:has(other) then x.comps[#x.comps]:remove(other) end
        local e = x.w:create()
        x.comps[1]:add(e)
      end
    end

    -- Every value of every live entity (to show where two worlds differ).
    local function dump(x)
      local d = {}
      for e in x.w:entities() do
        local row = {}
        for c, C in ipairs(x.comps) do
          if C:has(e) then
            local vals = { C:get(e) }
            for f, v in ipairs(vals) do if ecs.is_entity(v) then vals[f] = ecs.tostring(v) end end
            row[c] = vals
          end
        end
        d[ecs.tostring(e)] = row
      end
      return d
    end

    for seed = 1, 20 do
      it("seed " .. seed, function()
        local a, b = build(seed), build(seed)
        local before = a.w:state_hash()
        local na, nb = {}, {}
        for n, a1, a2, a3, a4, a5, a6, a7, a8 in a.q:columns(table.unpack(a.specs)) do
          na[#na + 1] = n
          body(a, #na, n, { a1, a2, a3, a4, a5, a6, a7, a8 })
        end
        local visited = b.q:each_chunk(function(n, ...)
          nb[#nb + 1] = n
          body(b, #nb, n, { ... })
        end, table.unpack(b.specs))
        assert.same(na, nb)
        local total = 0
        for _, n in ipairs(na) do total = total + n end
        assert.equals(total, visited)
        if a.w:state_hash() ~= b.w:state_hash() then assert.same(dump(a), dump(b)) end
        assert.equals(a.w:state_hash(), b.w:state_hash())
        assert.is_false(a.w:state_hash() == before, "nothing was written")
        assert.equals(a.watch:count(), b.watch:count())
        assert.equals(a.q:count(), b.q:count())
        assert.is_true(a.w:check())
        assert.is_true(b.w:check())
        a.w:close()
        b.w:close()
      end)
    end
  end)

  describe("errors inside fn", function()
    local function error_objects()
      local t = setmetatable({}, { __tostring = function() return "a table error" end })
      return {
        { "a string", "boom" }, { "a table", t }, { "nil", nil }, { "false", false },
        { "a number", 42 }, { "a function", print }, { "an entity", ecs.entity(3, 1) },
        { "a full userdata", io.stdout },
      }
    end

    for _, eo in ipairs(error_objects()) do
      it(("come out unchanged (%s), the writes before them kept"):format(eo[1]), function()
        local es = populate(2500)
        local calls = 0
        local ok, err = pcall(q.each_chunk, q, function(n, x)
          calls = calls + 1
          for i = 1, n do
            if calls == 2 and i == 500 then error(eo[2], 0) end
            x[i] = -1
          end
        end, "Position.x")
        assert.is_false(ok)
        assert.is_true(rawequal(err, eo[2]), "error object changed: " .. tostring(err))
        assert.equals(2, calls)
        -- chunk 1 whole, chunk 2 up to the error, chunk 3 not reached
        x_is(es, function(k) return k < 1024 + 500 and -1 or k * 1.5 end)
        assert.is_true(w:check())
        -- usable: a full pass runs, and the same loop again
        assert.equals(2500, q:each_chunk(function(n, x) for i = 1, n do x[i] = 0 end end, "Position.x"))
        x_is(es, function() return 0 end)
        assert.equals(2500, q:count())
      end)
    end

    it("keep fn's error over a bad value in its chunk, which is dropped whole", function()
      local es = populate(2500)
      local calls = 0
      local err = err_of(q.each_chunk, q, function(n, x)
        calls = calls + 1
        for i = 1, n do x[i] = 5 end
        if calls == 2 then
          x[3] = "bad"
          error("mine", 0)
        end
      end, "Position.x")
      assert.equals("mine", err)
      x_is(es, function(k) return k <= 1024 and 5 or k * 1.5 end)
      assert.is_true(w:check())
    end)

    it("a bad value raises at write-back, writes nothing of its chunk and ends the loop", function()
      local es = populate(2500)
      local calls = 0
      local err = err_of(q.each_chunk, q, function(n, x, id)
        calls = calls + 1
        for i = 1, n do x[i] = id[i] end
        if calls == 2 then x[3] = "three" end
      end, "Position.x", "Position.id:in")
      assert.equals("q:each_chunk: bad value for Position.x at row 3 (number expected, got string)",
                    msg(err))
      assert.equals(2, calls)
      x_is(es, function(k) return k <= 1024 and k or k * 1.5 end)
      local cases = {
        { "Position.id", 1.5, "integer expected, got 1.5" },
        { "Position.id", 2 ^ 31, "i32 expected, got 2147483648.0" },
        { "Position.x", true, "number expected, got boolean" },
        { "Position.x", nil, "number expected, got nil" },
      }
      for _, c in ipairs(cases) do
        local e2 = err_of(q.each_chunk, q, function(_, a) a[2] = c[2] end, c[1])
        assert.equals(("q:each_chunk: bad value for %s at row 2 (%s)"):format(c[1], c[3]), msg(e2))
      end
      assert.is_true(w:check())
    end)

    it("reach an xpcall handler unchanged, through nested loops that are all released", function()
      local es = populate(2500)
      local t = {}
      local got
      local ok, r = xpcall(q.each_chunk, function(m) got = m; return "handled" end, q,
        function(_, x)
          x[1] = 11
          q:each_chunk(function(_, y)
            y[1] = 12
            q:each_chunk(function() error(t) end, "Position.id:in")
          end, "Position.y")
        end, "Position.x")
      assert.is_false(ok)
      assert.equals("handled", r)
      assert.is_true(rawequal(t, got))
      assert.equals(11, P:field(es[1], "x"))
      assert.equals(12, P:field(es[1], "y"))
      -- the loops released their pins: a structural change and full passes work
      w:destroy(es[1])
      assert.equals(2499, q:each_chunk(function() end, "Position.x"))
      local n = 0
      for _ in q:entities() do n = n + 1 end
      assert.equals(2499, n)
      assert.is_true(w:check())
    end)

    it("leave a world that closes and collects normally", function()
      populate(10)
      err_of(q.each_chunk, q, function() error("x") end, "Position.x")
      w:close()
      collectgarbage()
      collectgarbage()
      assert.equals("attempt to use a closed world", msg(err_of(q.each_chunk, q, function() end, "Position.x")))
    end)
  end)

  describe("yields inside fn", function()
    it("fail cleanly (a C-call boundary): the chunk is written back and the coroutine goes on", function()
      local es = populate(2500)
      local co = coroutine.create(function()
        local ok, err = pcall(q.each_chunk, q, function(n, x)
          for i = 1, n do x[i] = 7 end
          coroutine.yield("from fn")
        end, "Position.x")
        coroutine.yield(ok, err)
        return "finished"
      end)
      local ok, ok2, err = coroutine.resume(co)
      assert.is_true(ok)
      assert.is_false(ok2)
      assert.matches("attempt to yield across a C%-call boundary", err)
      assert.same({ true, "finished" }, { coroutine.resume(co) })
      x_is(es, function(k) return k <= 1024 and 7 or k * 1.5 end)
      assert.equals(2500, q:each_chunk(function() end, "Position.x"))
      assert.is_true(w:check())
    end)

    it("run inside a coroutine when fn does not yield", function()
      populate(2500)
      local co = coroutine.wrap(function()
        coroutine.yield(q:each_chunk(function(n, x) for i = 1, n do x[i] = 1 end end, "Position.x"))
        return "done"
      end)
      assert.equals(2500, co())
      assert.equals("done", co())
    end)
  end)

  describe("structural changes inside fn", function()
    local es
    before_each(function() es = populate(3000) end)

    it("skips rows of destroyed entities and writes the others to their owners", function()
      local destroyed = {}
      q:each_chunk(function(n, x, id)
        for i = 1, n do x[i] = id[i] + 0.5 end
        for _, i in ipairs({ 1, n }) do
          destroyed[id[i]] = true
          w:destroy(es[id[i]])
        end
      end, "Position.x", "Position.id:in")
      assert.is_nil(first_bad(es, function(k, e)
        if destroyed[k] then return not w:alive(e) end
        return P:field(e, "x") == k + 0.5
      end))
    end)

    it("skips rows of entities that lost a component or gained an excluded one, even when rows moved", function()
      local Frozen = w:component("Frozen")
      local qf = w:query({ P, V, without = { Frozen } })
      local lost = {}
      qf:each_chunk(function(n, x, id)
        for i = 1, n do x[i] = id[i] * 2 end
        P:remove(es[id[1]]); lost[id[1]] = "P"
        V:remove(es[id[2]]); lost[id[2]] = "V"
        Frozen:add(es[id[3]]); lost[id[3]] = "Frozen"
        P:gc(); V:gc()
      end, "Position.x", "Position.id:in")
      assert.is_nil(first_bad(es, function(k, e)
        if lost[k] == "P" then return not P:has(e) end
        return P:field(e, "x") == (lost[k] and k * 1.5 or k * 2)
      end))
    end)

    it("fills later chunks from the current state", function()
      local calls, total, dead = 0, 0, {}
      local visited = q:each_chunk(function(n, id)
        calls = calls + 1
        local back = false
        for i = 1, n do back = back or dead[id[i]] == true end
        assert.is_false(back, "a destroyed entity came in a later chunk")
        total = total + n
        if calls == 1 then
          for k = 3, 3000, 3 do
            if w:alive(es[k]) then w:destroy(es[k]); dead[k] = true end
          end
        end
      end, "Position.id:in")
      assert.equals(total, visited)
      assert.is_true(total < 3000)
      assert.equals(2000, q:count())
    end)

    it("does not visit entities created during the loop, and writes right after storage growth", function()
      local made = 0
      local visited = q:each_chunk(function(n, x, id)
        for i = 1, n do x[i] = id[i] end
        for _, e in ipairs(w:create(2000)) do -- grows (moves) both columns
          P:add(e, -5, 0, 0); V:add(e, 0, 0)
          made = made + 1
        end
      end, "Position.x", "Position.id:in")
      assert.equals(3000, visited)
      assert.equals(3000 + made, q:count())
      x_is(es, function(k) return k end)
      assert.is_true(w:check())
    end)
  end)

  describe("nesting", function()
    it("allows q:each_chunk, q:columns, q:each and q:entities of the same query inside fn", function()
      local es = populate(2500)
      local outer = 0
      q:each_chunk(function(n, x, id)
        outer = outer + 1
        local keep = { table.unpack(x, 1, n) }
        local inner = q:each_chunk(function(m, y, x2)
          assert.is_false(rawequal(x, x2)) -- an inner loop has arrays of its own
          for i = 1, m do y[i] = y[i] + 1 end
        end, "Position.y", "Position.x:in")
        assert.equals(2500, inner)
        local rows = 0
        for m in q:columns("Position.id:in") do rows = rows + m end
        assert.equals(2500, rows)
        assert.equals(2500, q:each(function() end))
        local k = 0
        for _ in q:entities() do k = k + 1 end
        assert.equals(2500, k)
        assert.same(keep, { table.unpack(x, 1, n) }) -- the outer arrays are intact
        for i = 1, n do x[i] = id[i] end
      end, "Position.x", "Position.id:in")
      assert.equals(3, outer)
      assert.is_nil(first_bad(es, function(k, e)
        local x, y, id = P:get(e)
        return x == k and y == -k + 3 and id == k
      end))
      -- the outer loop's cached state is reused afterwards
      local a, b
      q:each_chunk(function(_, x) a = x end, "Position.x")
      q:each_chunk(function(_, x) b = x end, "Position.x")
      assert.is_true(rawequal(a, b))
    end)

    it("runs inside a q:columns loop of the same query", function()
      local es = populate(1500)
      for n, x in q:columns("Position.x") do
        q:each_chunk(function(m, y) for i = 1, m do y[i] = 1 end end, "Position.y")
        for i = 1, n do x[i] = 2 end
      end
      assert.is_nil(first_bad(es, function(k, e)
        local x, y, id = P:get(e)
        return x == 2 and y == 1 and id == k
      end))
    end)
  end)

  describe("change queries", function()
    local function visit(cq)
      local n = 0
      for _ in cq:entities() do n = n + 1 end
      return n
    end

    it("its write-back marks every entity of the chunks written back; :in columns mark nothing", function()
      populate(2500)
      local moved = w:query({ P, changed = { P } })
      assert.equals(2500, visit(moved))
      assert.equals(0, moved:count())
      q:each_chunk(function() end, "Position.x:in", "Velocity.dx", "entity")
      assert.equals(0, moved:count())
      q:each_chunk(function() end, "Position.x") -- values unchanged: still written
      assert.equals(2500, visit(moved))
      local calls = 0
      err_of(q.each_chunk, q, function() calls = calls + 1; if calls == 2 then error("x") end end,
             "Position.y")
      assert.equals(2048, visit(moved)) -- the chunk fn raised in was written back too
    end)

    it("completes the pass when it returns, not when fn raises", function()
      local es = populate(2500)
      local moved = w:query({ P, V, changed = { P } })
      local calls = 0
      err_of(moved.each_chunk, moved, function(_, x)
        calls = calls + 1
        x[1] = 0
        if calls == 2 then error("boom") end
      end, "Position.x")
      assert.equals(2500, moved:count()) -- the next pass visits the same again
      assert.equals(2500, moved:each_chunk(function(_, x) x[1] = 1 end, "Position.x"))
      assert.equals(0, moved:count()) -- its own writes are not reported
      P:set_field(es[7], "x", 5)
      assert.equals(1, moved:count())
      assert.equals(1, moved:each_chunk(function() end, "Position.x:in"))
      assert.equals(0, moved:count())
    end)
  end)

  describe("journal", function()
    -- (state hashes compare whole worlds: equal worlds, equal hashes)
    local function move(n, x, y, dx)
      for i = 1, n do x[i] = x[i] + dx[i]; y[i] = y[i] * 2 end
    end

    it("captures its writes: a delta carries them to a replica, undo takes them back", function()
      local es = populate(1100)
      local j = w:journal()
      local replica = ecs.restore(w:snapshot())
      local h0 = w:state_hash()
      assert.equals(1100, q:each_chunk(move, "Position.x", "Position.y", "Velocity.dx:in"))
      local h1 = w:state_hash()
      assert.is_false(h0 == h1)
      replica:apply_delta(j:delta())
      assert.equals(h1, replica:state_hash())
      replica:close()
      q:each_chunk(function(n, x) for i = 1, n do x[i] = -x[i] end end, "Position.x")
      assert.is_false(h1 == w:state_hash())
      j:undo() -- to the mark the delta moved
      assert.equals(h1, w:state_hash())
      assert.equals(1100 * 1.5 + 1100, P:field(es[1100], "x"))
      j:close()
      j = w:journal()
      q:each_chunk(move, "Position.x", "Position.y", "Velocity.dx:in")
      j:undo()
      assert.equals(h1, w:state_hash())
      j:close()
    end)

    it("captures the writes of a loop that fn ended with an error", function()
      local es = populate(1100)
      local j = w:journal()
      local replica = ecs.restore(w:snapshot())
      local h0 = w:state_hash()
      err_of(q.each_chunk, q, function(n, x)
        for i = 1, n do x[i] = 1000 end
        error("in the first chunk")
      end, "Position.x")
      assert.equals(1000, P:field(es[1024], "x"))
      assert.equals(1025 * 1.5, P:field(es[1025], "x"))
      replica:apply_delta(j:delta())
      assert.equals(w:state_hash(), replica:state_hash())
      replica:close()
      j:close()
      j = w:journal()
      local h1 = w:state_hash()
      assert.is_false(h0 == h1)
      err_of(q.each_chunk, q, function(n, x)
        for i = 1, n do x[i] = -1 end
        error("again")
      end, "Position.x")
      assert.is_false(h1 == w:state_hash())
      j:undo()
      assert.equals(h1, w:state_hash())
      j:close()
    end)
  end)

  describe("a component redefined during the loop", function()
    local MIG = { migrate = true }

    it("stops the loop with an error; the chunk fn wrote is lost, earlier ones kept", function()
      local B = w:component("Body", { "x:f64", "vx:f64" })
      local es = w:create(2500)
      for k, e in ipairs(es) do B:add(e, k, 1) end
      local qb = w:query(B)
      local calls = 0
      local err = err_of(qb.each_chunk, qb, function(n, x)
        calls = calls + 1
        if calls == 2 then w:component("Body", { "pad:i8", "x:f64", "vx:f64" }, MIG) end
        for i = 1, n do x[i] = 99 end
      end, "Body.x")
      assert.equals("q:each_chunk: a component was redefined during the loop (its writes are lost)",
                    msg(err))
      assert.equals(2, calls)
      assert.is_nil(first_bad(es, function(k, e)
        local pad, x, vx = B:get(e)
        return pad == 0 and x == (k <= 1024 and 99 or k) and vx == 1
      end))
      assert.is_true(w:check())
      -- the specs resolve under the new schema afterwards
      assert.equals(2500, qb:each_chunk(function(n, x) for i = 1, n do x[i] = 1 end end, "Body.x"))
      assert.is_nil(first_bad(es, function(_, e)
        local pad, x, vx = B:get(e)
        return pad == 0 and x == 1 and vx == 1
      end))
    end)

    it("keeps fn's own error when fn also redefined", function()
      local B = w:component("Body", { "x:f64", "vx:f64" })
      for k, e in ipairs(w:create(10)) do B:add(e, k, 1) end
      local qb = w:query(B)
      local err = err_of(qb.each_chunk, qb, function(n, x)
        w:component("Body", { "vx:f64" }, MIG) -- x dropped
        for i = 1, n do x[i] = 99 end
        error("mine", 0)
      end, "Body.x")
      assert.equals("mine", err)
      for e in B:entities() do assert.same({ 1 }, { B:get(e) }) end
      assert.is_true(w:check())
    end)
  end)

  describe("argument errors", function()
    it("need a function first", function()
      for _, bad in ipairs({ 1, "f", {}, true }) do
        assert.equals(("bad argument #1 to 'each_chunk' (function expected, got %s)"):format(type(bad)),
                      msg(err_of(function() return q:each_chunk(bad, "Position.x") end)))
      end
      assert.equals("bad argument #1 to 'each_chunk' (function expected, got no value)",
                    msg(err_of(function() return q:each_chunk() end)))
    end)

    it("need a spec", function()
      assert.equals("bad argument #2 to 'each_chunk' (column spec expected)",
                    msg(err_of(function() return q:each_chunk(function() end) end)))
    end)

    it("name a bad spec as q:columns does, before calling fn", function()
      local Brain = w:component("Brain", { "script:lua" })
      local Frozen = w:component("Frozen", { "t" })
      local qb = w:query({ P, Brain, without = { Frozen } })
      local calls = 0
      local f = function() calls = calls + 1 end
      local e = w:create()
      P:add(e); Brain:add(e)
      local cases = {
        { "Position", "q:each_chunk: column 'Position' must be 'Component.field'" },
        { "Position.z", "q:each_chunk: column 'Position.z': unknown field 'Position.z'" },
        { "Velocity.dx", "q:each_chunk: column 'Velocity.dx': component 'Velocity' is not among the query's " ..
          "components (Position, Brain)" },
        { "Frozen.t", "q:each_chunk: column 'Frozen.t': component 'Frozen' is excluded by the query" },
        { "Brain.script", "q:each_chunk: column 'Brain.script': lua fields are not columns" },
        { "Brain.script:in", "q:each_chunk: column 'Brain.script:in': lua fields are not columns" },
      }
      for _, c in ipairs(cases) do
        assert.equals(c[2], msg(err_of(qb.each_chunk, qb, f, "Position.x", c[1])))
      end
      assert.equals("bad argument #3 to 'each_chunk' (string expected, got number)",
                    msg(err_of(function() return qb:each_chunk(f, "Position.x", 1) end)))
      assert.matches("ecs.Query expected, got table", err_of(q.each_chunk, {}, f, "Position.x"))
      assert.equals(0, calls)
      assert.equals(1, qb:each_chunk(f, "Position.x"))
      assert.equals(1, calls)
    end)

    it("raise on a closed world, before and during the loop", function()
      populate(2500)
      local calls = 0
      assert.equals("attempt to use a closed world", msg(err_of(q.each_chunk, q, function(n, x)
        calls = calls + 1
        for i = 1, n do x[i] = 0 end
        w:close()
      end, "Position.x")))
      assert.equals(1, calls)
      assert.equals("attempt to use a closed world",
                    msg(err_of(q.each_chunk, q, function() end, "Position.x")))
    end)
  end)

  describe("collector stress", function()
    it("survives full collections and dropped references inside fn", function()
      local made, want = {}, {}
      local function make()
        local W = ecs.world()
        local C = W:component("C", { "x:f32", "e:entity" })
        for k, e in ipairs(W:create(2500)) do C:add(e, k, e); want[e] = k + 1 end
        made.C = C
        return W:query(C) -- the only references left: the query on the stack
      end
      local calls = 0
      local visited = make():each_chunk(function(n, x, e, es)
        calls = calls + 1
        for _ = 1, 3 do collectgarbage() end
        local junk = {}
        for i = 1, n do
          if i % 16 == 0 then junk[#junk + 1] = { i } end
          x[i] = x[i] + 1; e[i] = es[n - i + 1]
        end
        collectgarbage()
        assert.equals(n // 16, #junk)
      end, "C.x", "C.e", "entity")
      assert.equals(2500, visited)
      assert.equals(3, calls)
      collectgarbage()
      local C, k, bad = made.C, 0, 0
      for e in C:entities() do
        k = k + 1
        local x, other = C:get(e)
        if x ~= want[e] or not ecs.is_entity(other) or other == e then bad = bad + 1 end
      end
      assert.equals(2500, k)
      assert.equals(0, bad)
    end)

    it("holds under a generational and an aggressive incremental collector", function()
      local es = populate(2500)
      for _, mode in ipairs({ "generational", "incremental" }) do
        local old = collectgarbage(mode)
        local pause = collectgarbage("setpause", 0)
        local mul = collectgarbage("setstepmul", 1000)
        for r = 1, 2 do
          q:each_chunk(function(n, x, id)
            for i = 1, n do
              x[i] = id[i] + r
              if i % 64 == 0 then local _ = { i } end
            end
            collectgarbage("step")
          end, "Position.x", "Position.id:in")
        end
        collectgarbage("setpause", pause)
        collectgarbage("setstepmul", mul)
        collectgarbage(old)
        x_is(es, function(k) return k + 2 end)
      end
    end)
  end)

  it("creates no garbage in steady state", function()
    populate(2000)
    local DT = 0.016
    local function move(n, x, y, dx, dy)
      for i = 1, n do x[i] = x[i] + dx[i] * DT; y[i] = y[i] + dy[i] * DT end
    end
    for _ = 1, 5 do q:each_chunk(move, "Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") end
    collectgarbage(); collectgarbage()
    collectgarbage("stop")
    local before = collectgarbage("count")
    for _ = 1, 200 do q:each_chunk(move, "Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") end
    local growth = (collectgarbage("count") - before) * 1024
    collectgarbage("restart")
    assert.is_true(growth < 1024, ("grew %d bytes over 200 loops"):format(growth))
  end)
end)
