--[[
resolver_spec.lua -- "Component.field" means the same, and fails with the
same text, in expressions (q:apply, expression systems), q:columns specs
and native systems: one resolver in the core (ecs_query_resolve_field).
]]
local ecs = require("ecs")
local motion = require("ecs.motion")
local err_of = require("spec.support.err_of")

describe("Component.field names", function()
  local w, P, V, H, q, e
  before_each(function()
    w = ecs.world()
    P = w:component("P", { "x:f32", "y:f64", "ref:entity", "any:lua" })
    V = w:component("V", { "dx:f32" })
    H = w:component("H", { "hp:i32" })
    w:component("T", { "t" }) -- in the world, not in the query
    q = w:query({ P, V, without = { H } })
    e = w:create()
    P:add(e, 1, 2)
    V:add(e, 3)
  end)
  after_each(function() w:close() end)

  -- a component of the world that the query does not name was "unknown
  -- component 'T'", which sent a new user looking for a typo in T's name:
  -- the text says where it is missing, and which components the query has
  local cases = {
    { "P.z", "unknown field 'P.z'" },
    { "Q.x", "component 'Q' is not among the query's components (P, V)" },
    { "T.t", "component 'T' is not among the query's components (P, V)" },
    { "H.hp", "component 'H' is excluded by the query" },
  }
  for _, c in ipairs(cases) do
    it("give one text for " .. c[1] .. " on every path", function()
      local paths = {
        function() return q:apply(c[1] .. " = 1") end,
        function() return w:system("s", q, c[1] .. " = 1") end,
        function() for _ in q:columns(c[1]) do end end,
        function() return q:run(motion.damp(c[1], 0.5)) end,
      }
      for i, f in ipairs(paths) do
        local msg = err_of(f)
        assert.truthy(msg:find(c[2], 1, true), "path " .. i .. ": " .. msg)
      end
    end)
  end

  -- "P.x:out" said "unknown field 'P.x:out'", as if x were not P's field
  it("name a suffix other than :in as the mistake, on every path of column specs", function()
    local want = "column 'P.x:out': unknown suffix ':out' (':in' is the only one: a read-only column)"
    local paths = {
      function() for _ in q:columns("P.x:out") do end end,
      function() return q:each(function() end, "P.x:out") end,
      function() return q:each_chunk(function() end, "P.x:out") end,
      function() return q:run(motion.damp("P.x:out", 0.5)) end,
      function() return w:system("s", q, motion.damp("P.x:out", 0.5)) end,
    }
    for i, f in ipairs(paths) do
      local msg = err_of(f)
      assert.truthy(msg:find(want, 1, true), "path " .. i .. ": " .. msg)
    end
    assert.truthy(err_of(function() for _ in q:columns("P.x:in:in") do end end)
      :find("unknown suffix ':in'", 1, true))
    assert.truthy(err_of(function() for _ in q:columns("P.z:out") do end end)
      :find("unknown suffix ':out'", 1, true))
  end)

  it("list as many of the query's components as the message holds", function()
    local terms = {}
    for k = 1, 8 do terms[k] = w:component(("LongComponentName%02d"):format(k), { "v" }) end
    local msg = err_of(function() for _ in w:query(terms):columns("Z.v") do end end)
    assert.truthy(msg:find("component 'Z' is not among the query's components " ..
      "(LongComponentName01, LongComponentName02, ", 1, true), msg)
    assert.equals(", ...)", msg:sub(-6))
  end)

  it("resolve the same field on every path", function()
    q:apply("P.x = 7")
    for n, xs in q:columns("P.x:in") do
      assert.equals(1, n)
      assert.equals(7, xs[1])
    end
    q:run(motion.integrate("P.x", "V.dx:in"), 1)
    assert.equals(10, (P:get(e)))
  end)

  it("keep each path's own rule on field types", function()
    assert.truthy(err_of(q.apply, q, "P.ref = 1"):find("is not numeric", 1, true))
    assert.truthy(err_of(function() for _ in q:columns("P.any") do end end)
      :find("lua fields are not columns", 1, true))
    for n, refs in q:columns("P.ref:in") do -- entity fields are columns
      assert.equals(1, n)
      assert.equals(ecs.null, refs[1])
    end
  end)
end)
