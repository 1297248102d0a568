--[[
conditions_spec.lua -- the conditional forms of the expression language
(docs/queries.md, "Conditions"): and, or, not, true and false read as Lua
reads them. Random expressions are run by q:apply and by Lua itself (the
same text: the grammar is Lua's), and must agree on every entity; the forms
Lua would answer with "true or a number" are refused with the form that
works.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")

-- A small generator of its own, so that every Lua draws the same.
local function prng(seed)
  local s = seed
  return function(n)
    s = (s * 1103515245 + 12345) % 2147483648
    return s % n + 1
  end
end

local RELOPS = { "<", "<=", ">", ">=", "==", "~=" }

local gen_num, gen_cond
function gen_num(r, d)
  local k = d <= 0 and r(3) or r(6)
  if k == 1 then return "P.x" end
  if k == 2 then return "P.y" end
  if k == 3 then return tostring(r(7) - 4) end
  if k == 4 then
    return "(" .. gen_num(r, d - 1) .. ({ " + ", " - ", " * " })[r(3)] .. gen_num(r, d - 1) .. ")"
  end
  if k == 5 then
    return "(" .. gen_cond(r, d - 1) .. " and " .. gen_num(r, d - 1) .. " or " .. gen_num(r, d - 1) .. ")"
  end
  return "max(" .. gen_num(r, d - 1) .. ", " .. gen_num(r, d - 1) .. ")"
end
function gen_cond(r, d)
  local k = d <= 0 and 1 or r(5)
  if k == 1 then return gen_num(r, d - 1) .. " " .. RELOPS[r(#RELOPS)] .. " " .. gen_num(r, d - 1) end
  if k == 2 then return "not (" .. gen_cond(r, d - 1) .. ")" end
  if k == 3 then return "(" .. gen_cond(r, d - 1) .. " and " .. gen_cond(r, d - 1) .. ")" end
  if k == 4 then return "(" .. gen_cond(r, d - 1) .. " or " .. gen_cond(r, d - 1) .. ")" end
  return ({ "true", "false" })[r(2)]
end

describe("conditions in expressions", function()
  local w, P, q, es
  before_each(function()
    w = ecs.world()
    P = w:component("P", { "x:f64", "y:f64", "v:f64", "b:bool" })
    q = w:query(P)
    es = w:create(9)
    for i, e in ipairs(es) do P:add(e, i - 5, (i * 7) % 5 - 2, 0, false) end
  end)
  after_each(function() w:close() end)

  local function lua_value(src, e)
    local env = { P = { x = P:field(e, "x"), y = P:field(e, "y") }, max = math.max }
    local setfenv = rawget(_G, "setfenv") -- 5.1 and LuaJIT
    local f = assert((rawget(_G, "loadstring") or load)("return " .. src, "=expr", "t", env))
    if setfenv then setfenv(f, env) end
    local v = f()
    if v == true then return 1 elseif v == false then return 0 end
    return v
  end

  it("c and x or y is x where c holds, else y -- also when x is 0", function()
    q:apply("P.v = P.x < 0 and 0 or 9")
    for _, e in ipairs(es) do
      assert.equal(P:field(e, "x") < 0 and 0 or 9, P:field(e, "v"))
    end
  end)

  it("chains: c1 and x or c2 and y or z", function()
    q:apply("P.v = P.x < -2 and -1 or P.x < 2 and 0 or 1")
    for _, e in ipairs(es) do
      local x = P:field(e, "x")
      assert.equal(x < -2 and -1 or x < 2 and 0 or 1, P:field(e, "v"))
    end
  end)

  it("truth values store as 1 and 0, and into bool fields", function()
    q:apply("P.v = P.x > 0 and P.y > 0; P.b = not (P.x == 0) and true")
    for _, e in ipairs(es) do
      local x, y = P:field(e, "x"), P:field(e, "y")
      assert.equal((x > 0 and y > 0) and 1 or 0, P:field(e, "v"))
      assert.equal(x ~= 0, P:field(e, "b"))
    end
  end)

  it("read bool fields as Lua's true and false", function()
    q:apply("P.b = P.x > 0")
    q:apply("P.v = P.b and 1 or 2; P.y = not P.b and 5 or 6")
    for _, e in ipairs(es) do
      local b = P:field(e, "b")
      assert.equal(b and 1 or 2, P:field(e, "v"))
      assert.equal(not b and 5 or 6, P:field(e, "y"))
    end
  end)

  it("chain any number of alternatives in constant stack room", function()
    local alts, ors = {}, {}
    for i = 1, 40 do alts[i] = ("P.x < %d and %d"):format(i - 6, i) end
    for i = 1, 40 do ors[i] = ("P.x == %d"):format(i - 20) end
    q:apply("P.v = " .. table.concat(alts, " or ") .. " or -1; P.y = (" .. table.concat(ors, " or ") ..
            ") and 1 or 0")
    for _, e in ipairs(es) do
      local x, want = P:field(e, "x"), -1
      for i = 1, 40 do if x < i - 6 then want = i; break end end
      assert.equal(want, P:field(e, "v"))
      assert.equal((x >= -19 and x <= 20) and 1 or 0, P:field(e, "y"))
    end
  end)

  it("skip comments as Lua does", function()
    q:apply("P.v = 1 -- a comment, not a double minus\n + 2")
    assert.equal(3, P:field(es[1], "v"))
    q:apply("P.v = 1 --[[ a ]] + 4 --[==[ ]] still ]==] + 1")
    assert.equal(6, P:field(es[1], "v"))
    q:apply("P.v = 1 - -2")
    assert.equal(3, P:field(es[1], "v"))
  end)

  it("take parameters and work in systems", function()
    w:system("clampv", q, "P.v = P.x > hi and hi or P.x < lo and lo or P.x", { hi = 2, lo = -1 })
    w:update(0)
    for _, e in ipairs(es) do
      local x = P:field(e, "x")
      assert.equal(x > 2 and 2 or x < -1 and -1 or x, P:field(e, "v"))
    end
  end)

  it("agree with Lua on random expressions", function()
    local r = prng(20261129)
    for _ = 1, 300 do
      local src = r(2) == 1 and gen_num(r, 3) or gen_cond(r, 3)
      q:apply("P.v = " .. src)
      for _, e in ipairs(es) do
        local want, got = lua_value(src, e), P:field(e, "v")
        if not (want == got or (want ~= want and got ~= got)) then
          error(("%s on x=%s y=%s: Lua %s, q:apply %s"):format(src, P:field(e, "x"),
            P:field(e, "y"), tostring(want), tostring(got)))
        end
      end
    end
  end)

  it("refuse what Lua would answer with true or a number, naming the fix", function()
    local function msg(src) return err_of(function() q:apply(src) end) end
    assert.matches("'c and x' needs 'or y'", msg("P.v = P.x < 0 and 1"), 1, true)
    assert.matches("the left side of 'and' is a number", msg("P.v = P.x and 1 or 2"), 1, true)
    assert.matches("the left side of 'or' is a number", msg("P.v = P.x or 2"), 1, true)
    assert.matches("would be true or a number", msg("P.v = P.x < 0 or 2"), 1, true)
    assert.matches("'c and x' needs 'or y'", msg("P.v = P.x < 0 and 1 or P.x < 2 and 2"), 1, true)
    assert.matches("comparisons do not chain", msg("P.v = P.x < 0 == 1"), 1, true)
    assert.matches("'nil' is a Lua keyword, not a parameter name", msg("P.v = nil + 1"), 1, true)
    assert.matches("'local' is a Lua keyword", msg("P.v = local"), 1, true)
    assert.matches("'not' takes a condition", msg("P.v = not P.x"), 1, true)
    assert.matches("'c and x' needs 'or y'", msg("P.v = (P.x < 0 and 1) + 2"), 1, true)
    assert.matches("a condition reads as in Lua: 'c and x or y'", msg("P.v = P.x < 0 ? 1 : 2"), 1, true)
    assert.matches("a condition reads as in Lua: 'c and x or y'",
      msg("P.v = if P.x < 0 then 1 else 2 end"), 1, true)
    assert.equal(0, P:field(es[1], "v")) -- nothing ran
  end)
end)
