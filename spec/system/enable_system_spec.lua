--[[
enable_system_spec.lua -- world:enable_system(name, on) (docs/queries.md,
"Systems"): a disabled system of every kind is skipped by world:update and
keeps its place and stats, stats() reports the flag, switching during an
update takes effect when the walk reaches the system, and bad arguments
are errors naming the function.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")
local motion = require("ecs.motion")

describe("world:enable_system", function()
  local w, P, V, q, e, log
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f64" })
    V = w:component("Velocity", { "dx:f64" })
    q = w:query(P, V)
    e = w:create()
    P:add(e, 0)
    V:add(e, 1)
    log = {}
  end)
  after_each(function() release(w) end)

  it("skips a disabled system of each kind, which keeps its place and stats", function()
    w:system("lua", function() log[#log + 1] = "lua" end)
    w:system("expr", q, "Position.x = Position.x + 10")
    w:system("native", q, motion.integrate("Position.x", "Velocity.dx:in"))
    w:update(1)
    assert.equals(11, P:field(e, "x"))
    for _, name in ipairs({ "lua", "expr", "native" }) do w:enable_system(name, false) end
    w:update(1)
    assert.equals(11, P:field(e, "x"))
    assert.same({ "lua" }, log)
    for _, s in ipairs(w:stats()) do
      assert.is_false(s.enabled)
      assert.equals(1, s.calls)
    end
    w:enable_system("native", true)
    w:update(1)
    assert.equals(12, P:field(e, "x"))
    assert.same({ "lua", "expr", "native" }, w:systems())
    assert.same({ false, false, true },
      { w:stats()[1].enabled, w:stats()[2].enabled, w:stats()[3].enabled })
    assert.is_true(w:check())
  end)

  it("takes effect during an update when the walk reaches the system", function()
    w:system("a", function()
      log[#log + 1] = "a"
      w:enable_system("b", false)
      w:enable_system("a", false)
    end)
    w:system("b", function() log[#log + 1] = "b" end)
    w:update(1)
    w:update(1)
    assert.same({ "a" }, log)
    w:enable_system("a", true)
    w:enable_system("b", true)
    w:update(1)
    assert.same({ "a", "a" }, log) -- a switched b off again before it ran
  end)

  it("checks its arguments", function()
    w:system("a", function() end)
    assert.matches("world:enable_system: no system named 'zz'",
      err_of(function() w:enable_system("zz", true) end), 1, true)
    assert.matches("bad argument #2 to 'enable_system' (boolean expected",
      err_of(function() w:enable_system("a") end), 1, true)
    assert.matches("bad argument #2 to 'enable_system' (boolean expected, got number)",
      err_of(function() w:enable_system("a", 1) end), 1, true)
    assert.matches("bad argument #1 to 'enable_system'",
      err_of(function() w:enable_system(nil, true) end), 1, true)
    assert.is_true(w:stats()[1].enabled)
  end)
end)
