--[[
optional_spec.lua -- world:query{ ..., optional = { V } } (docs/queries.md,
"Optional terms"): entities match with or without V; where V is absent its
columns read as zero values (0, false, ecs.null) in q:each, q:columns,
q:each_chunk, q:apply and expression systems; the columns are read-only;
the list keeps the rows as V comes and goes.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")

describe("optional query terms", function()
  local w, P, V, es
  before_each(function()
    w = ecs.world()
    P = w:component("P", { "x:f64" })
    V = w:component("V", { "dx:f64", "n:i32", "b:bool", "t:entity", "s:lua" })
    es = w:create(6)
    for i, e in ipairs(es) do P:add(e, i) end
    V:add(es[2], 10, 3, true, es[1])
    V:add(es[4], 20, -4, false, es[2])
  end)
  after_each(function() w:close() end)

  it("match with or without the component", function()
    local q = w:query({ P, optional = { V } })
    assert.equal(6, q:count())
    local n = 0
    for _ in q:entities() do n = n + 1 end
    assert.equal(6, n)
    P:remove(es[2]) -- a required one still decides
    assert.equal(5, q:count())
  end)

  it("read zero values where absent in q:each", function()
    local q = w:query({ P, optional = { V } })
    local got = {}
    q:each(function(e, x, dx, n, b, t)
      got[ecs.id(e)] = { x, dx, n, b, t }
    end, "P.x", "V.dx:in", "V.n:in", "V.b:in", "V.t:in")
    assert.same({ 1, 0, 0, false, ecs.null }, got[ecs.id(es[1])])
    assert.same({ 2, 10, 3, true, es[1] }, got[ecs.id(es[2])])
    assert.same({ 4, 20, -4, false, es[2] }, got[ecs.id(es[4])])
  end)

  it("read zero values where absent in q:columns and q:each_chunk", function()
    local q = w:query({ P, optional = { V } })
    local sum, seen = 0, 0
    for n, x, dx in q:columns("P.x", "V.dx:in") do
      for i = 1, n do
        sum = sum + dx[i]
        seen = seen + 1
        x[i] = x[i] + dx[i] -- the required term stays writable
      end
    end
    assert.equal(30, sum)
    assert.equal(6, seen)
    assert.equal(12, P:get(es[2]))
    assert.equal(1, P:get(es[1]))
    local total = 0
    q:each_chunk(function(n, dx) for i = 1, n do total = total + dx[i] end end, "V.dx:in")
    assert.equal(30, total)
  end)

  it("read zero in expressions: q:apply and systems", function()
    local q = w:query({ P, optional = { V } })
    q:apply("P.x = P.x + V.dx * 2 + V.n")
    assert.equal(1, P:get(es[1]))
    assert.equal(2 + 20 + 3, P:get(es[2]))
    assert.equal(4 + 40 - 4, P:get(es[4]))
    w:system("copy", q, "P.x = V.dx")
    w:update(0)
    assert.same({ 0, 10, 0, 20, 0, 0 }, { P:get(es[1]), P:get(es[2]), P:get(es[3]),
                                           P:get(es[4]), P:get(es[5]), P:get(es[6]) })
  end)

  it("follow the component as it comes and goes, in every reader", function()
    local q = w:query({ P, optional = { V } })
    assert.equal(6, q:count())
    V:add(es[5], 7)
    V:remove(es[2])
    w:destroy(es[4])
    local dx = {}
    q:each(function(e, v) dx[ecs.id(e)] = v end, "V.dx:in")
    assert.equal(0, dx[ecs.id(es[2])])
    assert.equal(7, dx[ecs.id(es[5])])
    assert.is_nil(dx[ecs.id(es[4])])
    q:apply("P.x = V.dx")
    assert.equal(7, P:get(es[5]))
    assert.equal(0, P:get(es[2]))
    assert.is_true(w:check())
  end)

  it("are read-only everywhere, with the way to read them", function()
    local q = w:query({ P, optional = { V } })
    assert.matches("V is an optional term: its fields are read-only (read it with 'V.dx:in')",
      err_of(function() q:each(function() end, "V.dx") end), 1, true)
    assert.matches("read-only", err_of(function() for _ in q:columns("V.dx") do end end), 1, true)
    assert.matches("'V' is an optional term: its fields are read-only",
      err_of(function() q:apply("V.dx = 1") end), 1, true)
    assert.matches("read-only", err_of(function() w:system("s", q, "V.dx += 1") end), 1, true)
    assert.equal(10, V:get(es[2]))
  end)

  it("refuse being the only terms, change terms and doubles", function()
    assert.matches("at least one component expected",
      err_of(function() w:query({ optional = { V } }) end))
    assert.matches("component 'V' is optional and in 'changed'",
      err_of(function() w:query({ P, optional = { V }, changed = { V } }) end), 1, true)
    assert.matches("component 'P' listed twice",
      err_of(function() w:query({ P, optional = { P } }) end), 1, true)
    assert.matches("'optional' must be a list of components",
      err_of(function() w:query({ P, optional = V }) end), 1, true)
  end)

  it("are listed fourth by q:components()", function()
    local X = w:component("X")
    local q = w:query({ P, optional = { V }, without = { X } })
    local with, without, any, optional = q:components()
    assert.same({ P }, with)
    assert.same({ X }, without)
    assert.same({}, any)
    assert.same({ V }, optional)
  end)

  it("read zero in expressions split over threads", function()
    local tw = ecs.world({ threads = 2 })
    local TP = tw:component("P", { "x:f64" })
    local TV = tw:component("V", { "dx:f64" })
    local all = tw:create(20000)
    for i, e in ipairs(all) do
      TP:add(e, 0)
      if i % 3 == 0 then TV:add(e, i) end
    end
    tw:query({ TP, optional = { TV } }):apply("P.x = V.dx + 1")
    for i, e in ipairs(all) do
      local want = (i % 3 == 0) and i + 1 or 1
      if TP:get(e) ~= want then error(("entity %d: %s, want %s"):format(i, TP:get(e), want)) end
    end
    tw:close()
  end)

  it("have no pointers (q:pointers on LuaJIT)", function()
    if not rawget(_G, "jit") then return end
    local q = w:query({ P, optional = { V } })
    assert.matches("V is an optional term", err_of(function() q:pointers("V.dx:in") end), 1, true)
  end)

  it("work with a change query on the required terms", function()
    local q = w:query({ P, optional = { V }, changed = { P } })
    q:each(function() end)
    P:set(es[2], 50)
    local seen = {}
    q:each(function(_, dx) seen[#seen + 1] = dx end, "V.dx:in")
    assert.same({ 10 }, seen)
  end)
end)
