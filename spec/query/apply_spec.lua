--[[
apply_spec.lua -- q:apply(expr [, params]) (docs/queries.md): every operator
and its precedence, unary minus, parentheses, number forms, parameters,
every function, sequential statements, the store rules of f32, integer and
bool fields, compile errors with their positions, all-or-nothing, and the
result on random data (mixed field types, scattered rows) against the same
computation done in Lua.
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")

-- The float nearest to v, as an f32 field stores it.
local f32 = compat.f32

-- An integer field's store rule: truncate toward zero, saturate, NaN is 0.
local function int_store(v, lo, hi)
  if v ~= v then return 0 end
  if v >= hi then return hi end
  if v <= lo then return lo end
  local t = v >= 0 and math.floor(v) or math.ceil(v)
  return compat.tointeger(t)
end

describe("q:apply", function()
  local w, D, q, e
  before_each(function()
    w = ecs.world()
    D = w:component("D", { "d:f64", "k:i32" })
    q = w:query(D)
    e = w:create()
    D:add(e, 10, 0)
  end)
  after_each(function() release(w) end)

  -- the value of an expression, through an f64 field
  local function eval(src, params)
    D:set_field(e, "d", 0)
    assert.equals(1, q:apply("D.d = " .. src, params))
    return D:field(e, "d")
  end

  local cases = {
    -- operators, precedence, associativity
    { "1 + 2", 3 }, { "5 - 7", -2 }, { "3 * 4", 12 }, { "7 / 2", 3.5 },
    { "2 + 3 * 4", 14 }, { "2 * 3 + 4", 10 }, { "2 * 3 + 4 * 5", 26 },
    { "10 - 4 - 3", 3 }, { "24 / 4 / 3", 2 }, { "2 - 3 * 4 / 2", -4 },
    { "1 / 0", math.huge }, { "-1 / 0", -math.huge },
    -- unary minus and parentheses
    { "-2", -2 }, { "-2 * 3", -6 }, { "2 * -3", -6 }, { "1 - -1", 2 }, { "- -2", 2 },
    { "-(2 + 3)", -5 }, { "(2 + 3) * 4", 20 }, { "((1))", 1 }, { "2 * (3 - (4 - 5))", 8 },
    { "-(-(-1))", -1 },
    -- numbers
    { "0", 0 }, { "42", 42 }, { "0.25", 0.25 }, { ".5", 0.5 }, { "1e-3", 1e-3 }, { "2.5e2", 250 },
    { "1e3", 1000 }, { "1.5E+2", 150 }, { "123456789012", 123456789012 },
    -- spacing
    { "1+2*3", 7 }, { "  1 +  2  ", 3 },
    -- functions
    { "min(3, 1)", 1 }, { "min(1, 3)", 1 }, { "min(3, 1, 2)", 1 }, { "min(4, 3, 2, 5)", 2 },
    { "max(3, 1)", 3 }, { "max(1, 5, 2)", 5 }, { "max(-1, -2)", -1 },
    { "abs(-2.5)", 2.5 }, { "abs(3)", 3 }, { "sqrt(16)", 4 }, { "sqrt(2)", math.sqrt(2) },
    { "floor(2.7)", 2 }, { "floor(-2.5)", -3 }, { "floor(3)", 3 },
    { "clamp(5, 0, 3)", 3 }, { "clamp(-1, 0, 3)", 0 }, { "clamp(2, 0, 3)", 2 },
    { "min(max(1, 2), 3) * 2", 4 }, { "abs(min(-4, 2)) + 1", 5 }, { "-abs(-2)", -2 },
    { "sqrt(abs(-9)) * floor(1.5 + 1)", 6 },
    -- fields read in expressions (the target's own value included)
    { "D.k + 1", 1 }, { "D.d + 5", 5 },
  }

  for _, c in ipairs(cases) do
    it(("computes %s = %s"):format(c[1], tostring(c[2])), function()
      assert.equals(c[2], eval(c[1]))
    end)
  end

  it("reads number literals of any length as tonumber reads the same text", function()
    local z = string.rep("0", 200)
    local texts = {
      "0." .. z .. "1", "." .. z .. "1", "1" .. string.rep("0", 400), string.rep("9", 400),
      string.rep("1", 300) .. "." .. string.rep("7", 300), "1" .. z .. "e-200",
      "0." .. z .. "1e201", z .. "42", "0." .. string.rep("3", 1000),
      "123456789012345678901234567890", "9007199254740993", "18446744073709551617",
      "1" .. string.rep("0", 308) .. ".5", "2." .. string.rep("0", 63) .. "1", "1e" .. z .. "5",
      "4" .. string.rep("0", 70) .. "e-60", "0." .. string.rep("0", 400) .. "1e-30",
    }
    for _, text in ipairs(texts) do
      local want = tonumber(text) * 1.0
      assert.equals(want, eval(text), text)
      assert.equals(want + 1, eval("1 + " .. text .. " * 1"), text)
    end
  end)

  it("computes sqrt of a negative number as NaN", function()
    local v = eval("sqrt(-1)")
    assert.is_true(v ~= v)
  end)

  it("reads parameters from the params table", function()
    assert.equals(6, eval("k * 2", { k = 3 }))
    assert.equals(1.5, eval("a + b", { a = 1, b = 0.5 }))
    assert.equals(0.016, eval("dt", { dt = 0.016, unused = "x" }))
    assert.equals(-7, eval("-speed", { speed = 7 }))
    assert.equals(2, eval("min(k, dt)", { k = 3, dt = 2 }))
  end)

  it("runs the same text again with new parameters (compiled once, cached)", function()
    for i = 1, 20 do assert.equals(i * 2, eval("k * 2", { k = i })) end
  end)

  it("applies every assignment operator", function()
    local ops = {
      { "D.d = 3", 3 }, { "D.d += 2", 12 }, { "D.d -= 2", 8 }, { "D.d *= 3", 30 }, { "D.d /= 4", 2.5 },
      { "D.d += D.d", 20 }, { "D.d -= -1", 11 },
    }
    for _, op in ipairs(ops) do
      D:set_field(e, "d", 10)
      q:apply(op[1])
      assert.equals(op[2], D:field(e, "d"), op[1])
    end
  end)

  it("runs statements in order, each seeing the earlier assignments", function()
    q:apply("D.d = 1; D.d = D.d + 1; D.d *= 10")
    assert.equals(20, D:field(e, "d"))
    q:apply("D.k = 7; D.d = D.k * 2;")                  -- trailing semicolon
    assert.equals(14, D:field(e, "d"))
    q:apply("D.d = 2.75; D.k = D.d; D.d = D.k")          -- the stored (truncated) value
    assert.equals(2, D:field(e, "d"))
  end)

  it("returns the number of entities processed", function()
    assert.equals(1, q:apply("D.d = 1"))
    local es = w:create(999)
    for _, x in ipairs(es) do D:add(x, 1) end
    assert.equals(1000, q:apply("D.d += 1"))
    w:destroy(es[1])
    assert.equals(999, q:apply("D.d += 1"))
    local Z = w:component("Z", { "z" })
    assert.equals(0, w:query(Z):apply("Z.z = 1"))
  end)

  it("skips dead entities whose records are not reclaimed yet", function()
    local es = w:create(10)
    for _, x in ipairs(es) do D:add(x, 1) end
    w:destroy(es[5])
    assert.equals(10, q:apply("D.d = 99"))
    for i, x in ipairs(es) do
      if i ~= 5 then assert.equals(99, D:field(x, "d")) end
    end
    D:gc()
    assert.is_true(w:check())
  end)
end)

describe("q:apply store rules", function()
  local w, N, q, e
  before_each(function()
    w = ecs.world()
    N = w:component("N", { "f:f32", "d:f64", "a:i8", "b:i16", "c:i32", "l:i64", "g:u8", "h:u16",
                           "u:u32", "flag:bool" })
    q = w:query(N)
    e = w:create()
    N:add(e)
  end)
  after_each(function() release(w) end)

  local cases = {
    { "f", "0.1", f32(0.1) }, { "f", "1 / 3", f32(1 / 3) }, { "f", "1e39", math.huge },
    { "f", "-1e39", -math.huge }, { "f", "16777217", 16777216.0 },
    { "d", "0.1", 0.1 },
    { "c", "2.7", 2 }, { "c", "-2.7", -2 }, { "c", "0.999", 0 }, { "c", "-0.5", 0 },
    { "c", "3e9", 2147483647 }, { "c", "-3e9", -2147483648 }, { "c", "0 / 0", 0 },
    { "a", "1000", 127 }, { "a", "-1000", -128 }, { "a", "127.9", 127 }, { "a", "-128.9", -128 },
    { "b", "40000", 32767 }, { "b", "-40000", -32768 }, { "b", "sqrt(-1)", 0 },
    { "l", "1e30", compat.maxinteger }, { "l", "-1e30", compat.mininteger },
    { "l", "1e15 + 0.5", 1000000000000000 }, { "l", "1 / 0", compat.maxinteger },
    { "g", "-5", 0 }, { "g", "300", 255 }, { "g", "254.99", 254 }, { "g", "0 / 0", 0 },
    { "h", "70000", 65535 }, { "h", "-1", 0 },
    { "u", "1e20", 4294967295 }, { "u", "-1e20", 0 }, { "u", "4294967294.5", 4294967294 },
    { "flag", "2", true }, { "flag", "0", false }, { "flag", "-0.5", true }, { "flag", "-0", false },
    { "flag", "0 / 0", true },
  }

  for _, c in ipairs(cases) do
    local field, src, want = c[1], c[2], c[3]
    it(("stores N.%s = %s as %s"):format(field, src, tostring(want)), function()
      q:apply(("N.%s = %s"):format(field, src))
      local got = N:field(e, field)
      assert.equals(want, got)
      assert.equals(compat.math_type(want), compat.math_type(got))
    end)
  end

  it("reads integer fields as numbers in arithmetic", function()
    N:set(e, { c = 7, g = 200, u = 4000000000, l = -5 })
    q:apply("N.d = N.c / 2 + N.g + N.u + N.l")
    assert.equals(3.5 + 200 + 4000000000 - 5, N:field(e, "d"))
  end)

  it("compound operators convert on store too", function()
    N:set(e, { c = 7, g = 250, a = 100 })
    q:apply("N.c /= 2; N.g += 10; N.a *= -2")
    assert.same({ 3, 255, -128 }, { N:field(e, "c"), N:field(e, "g"), N:field(e, "a") })
  end)
end)

describe("q:apply integer saturation", function()
  -- Every integer field type, every store path, hostile values: the stored
  -- value equals the Lua model of the rule (int_store: truncate, saturate,
  -- NaN is 0). Two queries over the same 300 entities: one whose rows are
  -- in order (a whole block of 256, then a short one) and one whose second
  -- component was added in reverse order (gathered rows).
  local types = {
    { "i8", -128, 127 }, { "i16", -32768, 32767 }, { "i32", -2147483648, 2147483647 },
    { "i64", compat.mininteger, compat.maxinteger }, { "u8", 0, 255 }, { "u16", 0, 65535 },
    { "u32", 0, 4294967295 },
  }
  -- { label, statement for field f with parameter v, model of the double }
  local ops = {
    { "=", "I.%s = v", function(_, v) return v end },
    { "+=", "I.%s += v", function(x, v) return x + v end },
    { "-=", "I.%s -= v", function(x, v) return x - v end },
    { "*=", "I.%s *= v", function(x, v) return x * v end },
    { "/=", "I.%s /= v", function(x, v) return x / v end },
    { "fused scalar", "I.%s = I.%s * v", function(x, v) return x * v end },
    { "AXPY +", "I.%s += I.one * v", function(x, v) return x + 1.0 * v end },
    { "AXPY -", "I.%s -= I.one * v", function(x, v) return x - 1.0 * v end },
    { "stack", "I.%s = min(v, v) + 0 * I.one", function(_, v) return math.min(v, v) + 0.0 end },
  }
  local N = 300
  local w, I, G, es, queries
  setup(function()
    w = ecs.world()
    local schema = { "one:f64" }
    for _, t in ipairs(types) do schema[#schema + 1] = t[1] .. ":" .. t[1] end
    I = w:component("I", schema)
    G = w:component("G")
    es = w:create(N)
    for _, e in ipairs(es) do I:add(e, { one = 1 }) end
    for k = N, 1, -1 do G:add(es[k]) end
    queries = { { "in order", w:query(I) }, { "gathered", w:query(I, G) } }
  end)
  teardown(function() release(w) end)

  local function values(t)
    local lo, hi = t[2] + 0.0, t[3] + 0.0
    return {
      math.huge, -math.huge, 0 / 0, 1e300, -1e300, 2.0 ^ 63, -2.0 ^ 63, 2.0 ^ 64, -2.0 ^ 64,
      hi + 1, hi - 1, lo + 1, lo - 1, 0.5, -0.5, 0.0, -0.0, 1e19, -1e19,
    }
  end

  for _, op in ipairs(ops) do
    it(("saturates every integer type through '%s' on every row path"):format(op[1]), function()
      local cases = 0
      for _, qq in ipairs(queries) do
        local qname, q = qq[1], qq[2]
        for _, t in ipairs(types) do
          local f = t[1]
          local reset, run = ("I.%s = x0"):format(f), op[2]:format(f, f)
          for _, x0 in ipairs({ 3, t[3], t[2] }) do
            for _, v in ipairs(values(t)) do
              q:apply(reset, { x0 = x0 + 0.0 })
              assert.equals(x0, I:field(es[1], f))
              q:apply(run, { v = v })
              local want = int_store(op[3](x0, v), t[2], t[3])
              for _, k in ipairs({ 1, 256, 257, N }) do
                local got = I:field(es[k], f)
                assert.equals(want, got, ("%s: %s with x0 = %s, v = %s, entity %d"):format(
                  qname, run, tostring(x0), tostring(v), k))
                assert.equals("integer", compat.math_type(got))
              end
              cases = cases + 1
            end
          end
        end
      end
      assert.equals(2 * #types * 3 * #values(types[1]), cases)
    end)
  end

  it("saturates the literal cases of the issue", function()
    local q = queries[1][2]
    q:apply("I.i32 = 1/0; I.i16 = 1e300; I.i8 = 1e19; I.u32 = -1/0; I.i64 = -1e300")
    assert.same({ 2147483647, 32767, 127, 0, compat.mininteger },
                { I:field(es[1], "i32"), I:field(es[1], "i16"), I:field(es[1], "i8"),
                  I:field(es[1], "u32"), I:field(es[1], "i64") })
    q:apply("I.i32 = 5; I.i32 /= 0; I.u16 = 7; I.u16 /= -0; I.i8 = 0; I.i8 /= 0")
    assert.same({ 2147483647, 0, 0 },
                { I:field(es[N], "i32"), I:field(es[N], "u16"), I:field(es[N], "i8") })
  end)
end)

describe("q:apply errors", function()
  local w, D, F, Dead, q, e
  before_each(function()
    w = ecs.world()
    D = w:component("D", { "d:f64", "k:i32" })
    F = w:component("F", { "x:f32", "e:entity", "s:lua", "b:bool" })
    Dead = w:component("Dead", { "t" })
    w:component("Other", { "o" })  -- a manager of the world, not of the query
    q = w:query({ D, F, without = { Dead } })
    e = w:create()
    D:add(e, 1, 2)
    F:add(e, 3)
  end)
  after_each(function() release(w) end)

  -- { source, params, text the message contains, position or { lo, hi } }
  local cases = {
    { "D.z = 1", nil, "unknown field 'D.z'", 1 },
    { "D.d = D.z", nil, "unknown field 'D.z'", 7 },
    { "D.d = 1 + Nope.x", nil, "Nope", 11 },
    { "Nope.x = 1", nil, "Nope", 1 },
    { "D.d = Other.o", nil, "Other", 7 },            -- not a term of the query
    { "Other.o = 1", nil, "Other", 1 },
    { "D.d = foo(1)", nil, "foo", 7 },
    { "D.d = abs(1, 2)", nil, "abs", { 7, 15 } },
    { "D.d = sqrt()", nil, "sqrt", { 7, 12 } },
    { "D.d = floor(1, 2)", nil, "floor", { 7, 17 } },
    { "D.d = min(1)", nil, "min", { 7, 12 } },
    { "D.d = max(1)", nil, "max", { 7, 12 } },
    { "D.d = clamp(1, 2)", nil, "clamp", { 7, 17 } },
    { "D.d = clamp(1, 2, 3, 4)", nil, "clamp", { 7, 23 } },
    { "D.d = 1 $ 2", nil, "", 9 },                    -- bad tokens
    { "D.d = 1 @", nil, "", 9 },
    { "D.d = 'a'", nil, "", 7 },
    { "D.d = 1 2", nil, "", 9 },
    { "D.d 1", nil, "", 5 },
    { "D.d =", nil, "", 6 },
    { "D.d = ", nil, "", { 6, 7 } },
    { "D.d = 1 +", nil, "", 10 },
    { "D.d = (1 + 2", nil, "", 13 },
    { "D.d = 1 + 2)", nil, "", 12 },
    { "D.d == 1", nil, "", { 5, 6 } },
    { "D.d = 1;; D.d = 2", nil, "", 9 },
    { "1 = D.d", nil, "", 1 },
    { "D = 1", nil, "", { 1, 3 } },
    { "D. d = 1", nil, "", { 1, 3 } },
    { "D.d = min 1", nil, "", { 7, 11 } },
    { "Dead.t = 1", nil, "Dead", 1 },                -- a without-term
    { "D.d = Dead.t", nil, "Dead", 7 },
    { "F.e = 1", nil, "F.e", 1 },                    -- not numeric
    { "F.s = 1", nil, "F.s", 1 },
    { "", nil, "", 1 },                               -- empty program
    { "   ", nil, "", { 1, 4 } },
    { ";", nil, "", 1 },
  }

  for _, c in ipairs(cases) do
    local src, params, text, pos = c[1], c[2], c[3], c[4]
    it(("rejects %q at position %s"):format(src, type(pos) == "table" and pos[1] .. "-" .. pos[2] or pos),
      function()
        local msg = err_of(q.apply, q, src, params)
        assert.equals("string", type(msg))
        assert.truthy(msg:find("apply: ", 1, true), msg)
        if text ~= "" then assert.truthy(msg:find(text, 1, true), msg) end
        local at = tonumber(msg:match("at position (%d+)$"))
        assert.truthy(at, "no position in: " .. msg)
        if type(pos) == "table" then
          assert.is_true(at >= pos[1] and at <= pos[2], msg)
        else
          assert.equals(pos, at, msg)
        end
        assert.same({ 1, 2 }, { D:get(e) })
      end)
  end

  it("uses the documented text for an unknown field", function()
    local P = w:component("Position", { "x:f32", "y:f32" })
    local pq = w:query(P)
    local msg = err_of(pq.apply, pq, "Position.x=Position.z")
    assert.truthy(msg:find("apply: unknown field 'Position.z' at position 12", 1, true), msg)
  end)

  it("rejects a missing parameter before running anything, naming it", function()
    for _, c in ipairs({ { "D.d = k", nil, "'k'" }, { "D.d = k", { j = 1 }, "'k'" },
                         { "D.d = 5; D.k = 1 + dt", {}, "'dt'" }, { "D.d = D", nil, "'D'" } }) do
      local msg = err_of(q.apply, q, c[1], c[2])
      assert.truthy(msg:find("apply: ", 1, true), msg)
      assert.truthy(msg:find(c[3], 1, true), msg)
    end
    assert.same({ 1, 2 }, { D:get(e) })
    assert.equals(1, q:apply("D.d = D", { D = 9 }))  -- a bare identifier is a parameter
    assert.equals(9, D:field(e, "d"))
  end)

  it("rejects a parameter that is not a number, naming it", function()
    for _, v in ipairs({ "1", true, {}, print }) do
      local msg = err_of(q.apply, q, "D.d = speed", { speed = v })
      assert.truthy(msg:find("speed", 1, true), msg)
    end
    assert.same({ 1, 2 }, { D:get(e) })
  end)

  it("rejects arguments of the wrong type", function()
    local function apply_err(...)
      local args = compat.pack(...)
      return err_of(function() return (q:apply(compat.unpack(args, 1, args.n))) end) -- (no tail call: LuaJIT)
    end
    assert.truthy(apply_err():find("bad argument #1 to 'apply'", 1, true))
    assert.truthy(apply_err({}):find("bad argument #1 to 'apply'", 1, true))
    assert.truthy(apply_err("D.d = 1", 5):find("bad argument #2 to 'apply'", 1, true))
    assert.truthy(apply_err("D.d = 1", "x"):find("bad argument #2 to 'apply'", 1, true))
  end)

  it("changes nothing when any statement has an error (all-or-nothing)", function()
    local es = w:create(500)
    for i, x in ipairs(es) do D:add(x, i, i); F:add(x, i) end
    local bad = {
      { "D.d = 5; D.d = D.z" },
      { "D.d = 5; F.x = k" },
      { "D.d = 5; F.x = k", { k = "fast" } },
      { "D.d = 5; D.k = 6; F.x = nope(1)" },
      { "D.d = 5; D.k = 6 $" },
      { "D.d = 5; Dead.t = 1" },
    }
    for _, b in ipairs(bad) do
      err_of(q.apply, q, b[1], b[2])
      for i, x in ipairs(es) do
        assert.same({ i, i }, { D:get(x) })
        assert.equals(f32(i), F:field(x, "x"))
      end
    end
    assert.equals(501, q:apply("D.d = 5"))
  end)

  it("rejects an overlong or deeply nested program without crashing", function()
    local deep = "D.d = " .. string.rep("(", 10000) .. "1" .. string.rep(")", 10000)
    local ok, msg = pcall(q.apply, q, deep)
    if not ok then assert.truthy(tostring(msg):find("apply", 1, true), msg) end
    local long = "D.d = 0" .. string.rep(" + 1", 20000)
    ok = pcall(q.apply, q, long)
    if ok then assert.equals(20000, D:field(e, "d")) end
    assert.is_true(w:check())
  end)

  -- Nesting as deep as the length limit allows. Run in a child interpreter
  -- (same module paths and environment), so that a crash fails this test
  -- instead of ending the whole run.
  local nests = {
    { "parentheses", 'string.rep("(", 32000) .. "1" .. string.rep(")", 32000)' },
    { "unary minus", 'string.rep("-", 65000) .. "1"' },
    { "function calls", 'string.rep("abs(", 16000) .. "1" .. string.rep(")", 16000)' },
  }
  for _, nest in ipairs(nests) do
    it("survives " .. nest[1] .. " nested up to the length limit (error or result, no crash)", function()
      local code = table.concat({
        ("package.path = %q; package.cpath = %q"):format(package.path, package.cpath),
        'local ecs = require("ecs")',
        'local w = ecs.world()',
        'local D = w:component("D", { "d:f64" })',
        'D:add(w:create(), 1)',
        'local q = w:query(D)',
        'local ok, err = pcall(q.apply, q, "D.d = " .. ' .. nest[2] .. ')',
        'assert(ok or tostring(err):find("apply", 1, true), err)',
        'assert(w:check())',
        'io.write("survived")',
      }, "\n")
      local path = os.tmpname()
      local f = assert(io.open(path, "w"))
      f:write(code)
      f:close()
      local p = assert(io.popen(compat.command .. " " .. path .. " 2>&1"))
      local out = p:read("*a")
      local ok, how, status = p:close()
      os.remove(path)
      assert.equals("survived", out, ("child %s %s: %s"):format(tostring(how), tostring(status), out))
      assert.is_true(ok)
    end)
  end
end)

describe("q:apply program cache", function()
  local w, D, q, e
  before_each(function()
    w = ecs.world()
    D = w:component("D", { "d:f64", "k:i32" })
    q = w:query(D)
    e = w:create()
    D:add(e, 0, 0)
  end)
  after_each(function() release(w) end)

  it("keeps at most 32 programs over 20000 distinct texts, Lua memory flat", function()
    collectgarbage("collect")
    local before = collectgarbage("count")
    for i = 1, 20000 do
      assert.equals(1, q:apply("D.d = " .. i))
      assert.is_true(q:programs() <= 32)
    end
    assert.equals(20000, D:field(e, "d"))
    assert.equals(32, q:programs())
    collectgarbage("collect")
    assert.is_true(collectgarbage("count") - before < 256, "Lua memory grew")
  end)

  it("counts each text once and gives every kept text its own program", function()
    assert.equals(0, q:programs())
    for _ = 1, 3 do
      for i = 1, 32 do q:apply("D.d += " .. i) end
    end
    assert.equals(32, q:programs())
    assert.equals(3 * 32 * 33 / 2, D:field(e, "d"))
  end)

  it("recompiles an evicted text with the same meaning", function()
    local a = "D.d = D.d * k + b; D.k += 1"
    q:apply(a, { k = 2, b = 1 })
    for i = 1, 100 do q:apply("D.k = D.k + 0 * " .. i) end
    q:apply(a, { k = 3, b = 0.5 })
    assert.equals(3.5, D:field(e, "d"))
    assert.equals(2, D:field(e, "k"))
  end)

  it("keeps expression systems running while other texts evict their program", function()
    w:system("tick", q, "D.d += dt * rate", { rate = 2 })
    for round = 1, 3 do
      for i = 1, 50 do q:apply("D.k = " .. (round * 100 + i)) end
      w:update(0.5)
      assert.equals(round * 1.0, D:field(e, "d"))
      assert.equals(round * 100 + 50, D:field(e, "k"))
    end
    assert.is_true(q:programs() <= 32)
  end)

  it("survives a params table whose __index evicts the program being read", function()
    local reads = 0
    local params = setmetatable({}, { __index = function(_, name)
      reads = reads + 1
      for i = 1, 40 do q:apply("D.k = " .. (reads * 1000 + i)) end
      return name == "a" and 10 or 1
    end })
    assert.equals(1, q:apply("D.d = a + b * 2 + c", params))
    assert.equals(13, D:field(e, "d"))
    assert.equals(3, reads)
  end)

  it("reports a world closed by a params table's __index", function()
    local params = setmetatable({}, { __index = function() w:close(); return 1 end })
    local err = err_of(q.apply, q, "D.d = a + b", params)
    assert.matches("attempt to use a closed world", err, 1, true)
  end)
end)

describe("q:apply on random data", function()
  it("equals the same computation in Lua over 1200 entities with scattered rows", function()
    math.randomseed(4242)
    local rnd = math.random
    local w = ecs.world()
    local Pos = w:component("Pos", { "x:f32", "y:f64" })
    local Vel = w:component("Vel", { "dx:f64", "dy:f32" })
    local Stat = w:component("Stat", { "hp:i32", "lvl:u8", "ok:bool", "w:i16" })
    local q = w:query(Pos, Vel, Stat)
    local N = 1200
    local es = w:create(N)
    for _, e in ipairs(es) do Pos:add(e, rnd() * 200 - 100, rnd() * 1e4 - 5e3) end
    for i = N, 1, -1 do Vel:add(es[i], rnd() * 20 - 10, rnd() * 4 - 2) end
    for _, e in ipairs(es) do
      Stat:add(e, rnd(-2000, 2000), rnd(0, 255), rnd(2) == 1, rnd(-30000, 30000))
    end
    -- scramble the rows: remove and re-add in random order, drop some
    for _ = 1, 3 do
      for _, M in ipairs({ Pos, Vel, Stat }) do
        local picked = {}
        for i = 1, N do if rnd(2) == 1 then picked[#picked + 1] = es[i] end end
        local saved = {}
        for k, e in ipairs(picked) do saved[k] = { M:get(e) }; M:remove(e) end
        for k = #picked, 1, -1 do M:add(picked[k], compat.unpack(saved[k])) end
      end
    end
    for i = 1, N, 11 do Stat:remove(es[i]) end
    for i = 5, N, 13 do w:destroy(es[i]) end
    Pos:gc()

    local before = {}
    for _, e in ipairs(es) do
      if w:alive(e) then
        before[e] = { { Pos:get(e) }, { Vel:get(e) }, { Stat:get(e) } }
      end
    end

    local params = { dt = 0.016, k = 0.75 }
    local src = "Pos.x += Vel.dx * dt; " ..
                "Pos.y = Pos.y * 0.5 + max(Vel.dy, -1, Pos.x) - floor(Pos.x / 3); " ..
                "Stat.hp = clamp(Stat.hp - abs(Vel.dx) * k * 100, -1000, 1000); " ..
                "Stat.lvl += 1; " ..
                "Stat.w = sqrt(abs(Pos.y)) * -400 + 1 / (Stat.hp - 0.5); " ..
                "Stat.ok = Stat.hp - min(Stat.hp, 3)"
    local processed = q:apply(src, params)

    local matched = 0
    for e, b in pairs(before) do
      local p, v, s = b[1], b[2], b[3]
      local x, y, hp, lvl, ok, sw = p[1], p[2], s[1], s[2], s[3], s[4]
      if s[1] ~= nil then
        matched = matched + 1
        local dt, k = params.dt, params.k
        x = f32(x + v[1] * dt)
        y = y * 0.5 + math.max(v[2], -1, x) - math.floor(x / 3)
        hp = int_store(math.max(-1000, math.min(1000, (hp + 0.0) - math.abs(v[1]) * k * 100)),
                       -2147483648, 2147483647)
        lvl = int_store(lvl + 1.0, 0, 255)
        sw = int_store(math.sqrt(math.abs(y)) * -400 + 1 / (hp - 0.5), -32768, 32767)
        ok = (hp - math.min(hp, 3)) ~= 0
      end
      local gp, gs = { Pos:get(e) }, { Stat:get(e) }
      assert.same({ x, y }, gp)
      assert.same({ Vel:get(e) }, v)
      if s[1] ~= nil then
        assert.same({ hp, lvl, ok, sw }, gs)
      else
        assert.same({}, gs)
      end
    end
    assert.equals(matched, processed)
    assert.is_true(matched > 900)
    assert.is_true(w:check())
    w:close()
  end)
end)
