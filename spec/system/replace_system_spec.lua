--[[
replace_system_spec.lua -- world:replace_system (docs/queries.md, "Systems"):
hot reload of a system's body in its place in the run order, across kinds
(Lua, expression, native), its stats restarting, replacement during an
update (of a later system, of itself), errors that leave the old system
as it was, and no growth of memory over many replacements.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")
local motion = require("ecs.motion")

describe("world:replace_system", function()
  local w, P, V, q, es, log
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f64", "y:f64" })
    V = w:component("Velocity", { "dx:f64", "dy:f64" })
    q = w:query(P, V)
    es = w:create(4)
    for i, e in ipairs(es) do P:add(e, 0, 0); V:add(e, i, -i) end
    log = {}
  end)
  after_each(function() release(w) end)

  local function logger(tag) return function() log[#log + 1] = tag end end

  it("swaps the body and keeps the place in the run order", function()
    w:system("a", logger("a"))
    w:system("b", q, logger("b"))
    w:system("c", logger("c"))
    w:update(1)
    w:replace_system("b", q, logger("B"))
    assert.same({ "a", "b", "c" }, w:systems())
    w:update(1)
    assert.same({ "a", "b", "c", "a", "B", "c" }, log)
    assert.is_true(w:check())
  end)

  it("changes the kind: Lua, expression, native, and back", function()
    w:system("first", logger("first"))
    w:system("move", q, logger("lua"))
    w:system("last", logger("last"))
    w:replace_system("move", q, "Position.x = Position.x + Velocity.dx * dt")
    w:update(2)
    assert.same({ 2, 4, 6, 8 }, { P:field(es[1], "x"), P:field(es[2], "x"),
                                  P:field(es[3], "x"), P:field(es[4], "x") })
    w:replace_system("move", q, "Position.x = Position.x + k", { k = 10 })
    w:update(1)
    assert.equals(12, P:field(es[1], "x"))
    w:replace_system("move", q, motion.integrate("Position.x", "Velocity.dx:in"))
    w:update(1)
    assert.equals(13, P:field(es[1], "x"))
    w:replace_system("move", logger("lua again"))
    w:update(1)
    assert.equals(13, P:field(es[1], "x"))
    assert.same({ "first", "last", "first", "last", "first", "last",
                  "first", "lua again", "last" }, log)
    local kinds = {}
    for _, s in ipairs(w:stats()) do kinds[#kinds + 1] = s.name .. "=" .. s.kind end
    assert.same({ "first=lua", "move=lua", "last=lua" }, kinds)
    assert.is_true(w:check())
  end)

  it("starts the stats of the new body at zero", function()
    w:system("move", q, "Position.x = Position.x + 1")
    w:update(1); w:update(1)
    assert.equals(2, w:stats()[1].calls)
    w:replace_system("move", q, "Position.x = Position.x + 2")
    assert.equals(0, w:stats()[1].calls)
    assert.equals("expression", w:stats()[1].kind)
    w:update(1)
    assert.equals(1, w:stats()[1].calls)
    assert.equals(4, P:field(es[1], "x"))
  end)

  it("during an update: a later system's new body runs now, its own from the next", function()
    w:system("a", function()
      log[#log + 1] = "a"
      if #log == 1 then
        w:replace_system("c", logger("C"))
        w:replace_system("a", logger("A"))
      end
    end)
    w:system("b", logger("b"))
    w:system("c", logger("c"))
    w:update(1)
    assert.same({ "a", "b", "C" }, log)
    w:update(1)
    assert.same({ "a", "b", "C", "A", "b", "C" }, log)
    assert.same({ "a", "b", "c" }, w:systems())
    assert.is_true(w:check())
  end)

  it("refuses what world:system refuses and leaves the old system as it was", function()
    w:system("move", q, "Position.x = Position.x + 1")
    local e = err_of(function() w:replace_system("nope", q, "Position.x = 1") end)
    assert.matches("world:replace_system: no system named 'nope'", e, 1, true)
    e = err_of(function() w:replace_system("move", q, "Position.z = 1") end)
    assert.matches("Position.z", e, 1, true)
    e = err_of(function() w:replace_system("move", q, "Position.x = k") end)
    assert.matches("world:replace_system", e, 1, true)
    e = err_of(function() w:replace_system("move", q, "Position.x = k", { k = "x" }) end)
    assert.matches("world:replace_system", e, 1, true)
    e = err_of(function() w:replace_system("move", q, 42) end)
    assert.matches("bad argument #3 to 'replace_system'", e, 1, true)
    e = err_of(function() w:replace_system("move", q, logger("x"), nil, { phaze = "draw" }) end)
    assert.matches("unknown option 'phaze'", e, 1, true)
    e = err_of(function() w:replace_system("move", q, logger("x"), nil, { phase = 1 }) end)
    assert.matches("world:replace_system: phase: a name expected, got number", e, 1, true)
    local w2 = ecs.world()
    local q2 = w2:query(w2:component("Position", { "x" }))
    e = err_of(function() w:replace_system("move", q2, "Position.x = 1") end)
    assert.matches("query of another world", e, 1, true)
    release(w2)
    e = err_of(function() w:replace_system(nil, q, "Position.x = 1") end)
    assert.matches("bad argument #1 to 'replace_system'", e, 1, true)
    w:update(1)
    assert.equals(1, P:field(es[1], "x"))
    assert.same({ "move" }, w:systems())
    assert.is_true(w:check())
  end)

  it("keeps a disabled system disabled", function()
    w:system("a", logger("a"))
    w:system("b", logger("b"))
    w:enable_system("a", false)
    w:replace_system("a", logger("A"))
    w:update(1)
    assert.same({ "b" }, log)
    assert.is_false(w:stats()[1].enabled)
    w:enable_system("a", true)
    w:update(1)
    assert.same({ "b", "A", "b" }, log)
  end)

  it("holds no more memory after many replacements", function()
    w:system("move", q, "Position.x = Position.x + 1")
    local function churn()
      for i = 1, 200 do
        if i % 2 == 0 then w:replace_system("move", q, "Position.x = Position.x + " .. i)
        else w:replace_system("move", q, function() end) end
      end
      collectgarbage(); collectgarbage()
    end
    churn()
    local core, lua = w:memory(), collectgarbage("count")
    churn()
    assert.equals(core, w:memory())
    assert.is_true(collectgarbage("count") < lua + 64)
  end)
end)
