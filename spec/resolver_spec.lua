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
    q = w:query({ P, V, without = { H } })
    e = w:create()
    P:add(e, 1, 2)
    V:add(e, 3)
  end)
  after_each(function() w:close() end)

  local cases = {
    { "P.z", "unknown field 'P.z'" },
    { "Q.x", "unknown component 'Q'" },
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
