--[[
schedule_spec.lua -- phases and ordering of systems (docs/queries.md,
"Systems"): world:system(..., { phase =, after =, before = }), the stable
order (constraints first, then registration), cycles refused naming the
systems with nothing changed, world:update(dt, phase) running one phase,
every kind of system in any phase, replace_system keeping or replacing the
schedule, systems added during an update taking their place afterwards,
and stats() reporting each system's phase.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")
local motion = require("ecs.motion")

describe("scheduling", function()
  local w, P, V, q, e, log
  local function L(tag) return function() log[#log + 1] = tag end end
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

  it("orders by after and before, otherwise by registration", function()
    w:system("render", L("render"), { after = "physics" })
    w:system("input", L("input"))
    w:system("physics", q, L("physics"), nil, { after = { "input", "ai" } })
    w:system("ai", L("ai"), { before = "physics" })
    w:system("audio", L("audio"))
    assert.same({ "input", "ai", "physics", "render", "audio" }, w:systems())
    w:update(1)
    assert.same({ "input", "ai", "physics", "render", "audio" }, log)
    assert.is_true(w:check())
  end)

  it("ignores names of no system and of other phases", function()
    w:system("a", L("a"), { after = "nobody" })
    w:system("b", L("b"), { before = "a", phase = "draw" }) -- another phase
    w:system("c", L("c"), { before = "a" })
    assert.same({ "c", "a", "b" }, w:systems())
    w:system("nobody", L("n")) -- now a exists after it
    assert.same({ "c", "nobody", "a", "b" }, w:systems())
  end)

  it("refuses a cycle, naming its systems, and changes nothing", function()
    w:system("a", L("a"), { after = "c" })
    w:system("b", L("b"), { after = "a" })
    local err = err_of(function() w:system("c", L("c"), { after = "b" }) end)
    assert.matches("world:system: ordering constraints form a cycle among: a b c", err, 1, true)
    assert.same({ "a", "b" }, w:systems())
    err = err_of(function() w:system("self", L("s"), { after = "self" }) end)
    assert.matches("cycle among: self", err, 1, true)
    err = err_of(function() w:replace_system("a", L("A"), { after = "b" }) end)
    assert.matches("world:replace_system: ordering constraints form a cycle", err, 1, true)
    w:update(1)
    assert.same({ "a", "b" }, log) -- the old a, in its place
    assert.is_true(w:check())
  end)

  it("runs one phase per update; every kind of system runs in any phase", function()
    w:system("draw_lua", L("draw"), { phase = "draw" })
    w:system("move", q, "Position.x = Position.x + Velocity.dx * dt", nil, { phase = "fixed" })
    w:system("push", q, motion.damp("Velocity.dx", 0.5), nil, { phase = "fixed", after = "move" })
    w:system("tick", L("tick"))
    w:update(1)
    assert.same({ "tick" }, log)
    assert.equals(0, P:field(e, "x"))
    w:update(1, "fixed")
    assert.equals(1, P:field(e, "x"))
    assert.is_true(V:field(e, "dx") < 1)
    w:update(1, "draw")
    assert.same({ "tick", "draw" }, log)
    -- a phase no system has is a mistake (a typo, a capital letter), not
    -- an update that runs nothing: an error naming the phases there are
    assert.equals("world:update: no system has the phase 'Draw' (phases: draw, fixed, update)",
      err_of(function() w:update(1, "Draw") end):match("world:update:.*$"))
    assert.same({ "tick", "draw" }, log)
    w:enable_system("draw_lua", false)
    w:update(1, "draw") -- a disabled system's phase is a phase: nothing runs
    assert.same({ "tick", "draw" }, log)
    local bare = ecs.world()
    bare:update(1) -- "update", the default phase, needs no system
    bare:update(1, "update")
    assert.matches("no system has the phase 'draw' %(phases: none%)",
      err_of(function() bare:update(1, "draw") end))
    bare:close()
    local phases = {}
    for _, s in ipairs(w:stats()) do phases[s.name] = s.phase end
    assert.same({ draw_lua = "draw", move = "fixed", push = "fixed", tick = "update" }, phases)
  end)

  it("replace_system keeps the schedule unless given a new one", function()
    w:system("a", L("a"))
    w:system("b", L("b"), { phase = "draw", before = "c" })
    w:system("c", L("c"), { phase = "draw" })
    w:replace_system("b", L("B"))
    w:update(1, "draw")
    assert.same({ "B", "c" }, log)
    w:replace_system("b", L("B2"), { phase = "draw", after = "c" })
    w:update(1, "draw")
    assert.same({ "B", "c", "c", "B2" }, log)
    w:replace_system("b", L("B3"), {}) -- options given: the defaults
    w:update(1)
    assert.same({ "B", "c", "c", "B2", "a", "B3" }, log)
  end)

  it("a system added during an update takes its place after it", function()
    w:system("first", function()
      log[#log + 1] = "first"
      if #log == 1 then w:system("zero", L("zero"), { before = "first" }) end
    end)
    w:system("last", L("last"))
    w:update(1)
    assert.same({ "first", "last" }, log)
    assert.same({ "zero", "first", "last" }, w:systems())
    w:update(1)
    assert.same({ "first", "last", "zero", "first", "last" }, log)
    assert.is_true(w:check())
  end)

  it("runs a fixed-interval system once per whole interval, with dt = interval", function()
    local dts = {}
    w:system("fixed", function(dt) dts[#dts + 1] = dt end, { interval = 0.25 })
    w:system("every", L("every"))
    w:update(0.5)
    assert.same({ 0.25, 0.25 }, dts)
    w:update(0.125)
    assert.same({ 0.25, 0.25 }, dts) -- 0.125 owed
    w:update(0.125)
    assert.same({ 0.25, 0.25, 0.25 }, dts)
    w:update(10) -- a long lag: at most 4 runs, the rest dropped
    assert.equals(7, #dts)
    w:update(0.125)
    assert.equals(7, #dts)
    assert.equals(7, w:stats()[1].calls)
    assert.same({ "every", "every", "every", "every", "every" }, log)
    w:replace_system("fixed", function(dt) dts[#dts + 1] = -dt end) -- keeps the interval
    w:update(0.125) -- with the 0.125 owed
    assert.equals(-0.25, dts[8])
  end)

  -- NaN added to what a fixed-interval system is owed stayed there: it
  -- never ran again. dt must be a finite number; a negative one is passed
  -- on and takes time back from what is owed (at most 4 intervals of it).
  it("refuses a dt that is not a finite number; a negative one takes time back", function()
    local dts, seen = {}, nil
    w:system("fixed", function(dt) dts[#dts + 1] = dt end, { interval = 0.25 })
    w:system("plain", function(dt) seen = dt end)
    for _, bad in ipairs({ 0 / 0, 1 / 0, -1 / 0 }) do
      local err = err_of(function() w:update(bad) end)
      assert.matches("bad argument #1 to 'update' (dt must be a finite number, got ", err, 1, true)
    end
    assert.same({}, dts)
    assert.is_nil(seen)
    w:update(0.25)
    assert.same({ 0.25 }, dts) -- nothing of the refused updates is owed
    w:update(-0.125)
    assert.equals(-0.125, seen) -- passed on as given
    w:update(0.25)
    assert.equals(1, #dts) -- 0.125 owed
    w:update(0.125)
    assert.equals(2, #dts)
    w:update(-1.7976931348623157e308) -- rewinds past the largest double:
    w:update(-1.7976931348623157e308) -- bounded at 4 intervals below zero
    w:update(1.25)
    assert.equals(3, #dts)
    assert.is_true(w:check())
  end)

  -- world:system(name, q, fn, { phase = "draw" }) took the table as the
  -- params of a Lua system, which has none: it ran in "update", no word
  it("takes a Lua or native system's options right after its body", function()
    w:system("hud", q, L("hud"), { phase = "draw" })
    w:system("damp", q, motion.damp("Velocity.dx", 0.5), { phase = "draw", after = "hud" })
    w:system("tick", q, L("tick"), nil, { phase = "draw", before = "hud" }) -- fifth: as before
    w:system("solo", L("solo"), { phase = "draw", after = "damp" })          -- no query: third
    w:update(1)
    assert.same({}, log)
    assert.equals(1, V:field(e, "dx"))
    w:update(1, "draw")
    assert.same({ "tick", "hud", "solo" }, log)
    assert.is_true(V:field(e, "dx") < 1)
    assert.same({ "tick", "hud", "damp", "solo" }, w:systems())
    w:replace_system("hud", q, L("HUD"), { phase = "update" }) -- the options are the new schedule
    w:update(1, "draw")
    assert.same({ "tick", "hud", "solo", "tick", "solo" }, log)
    w:update(1)
    assert.same({ "tick", "hud", "solo", "tick", "solo", "HUD" }, log)
    assert.is_true(w:check())
  end)

  it("names the argument where the options were written", function()
    local fn = L("x")
    local function msg(f) return (err_of(f):match("world:[%w_]+:.*$") or err_of(f)) end
    assert.equals("world:system: bad argument #4 (unknown option 'phaze')",
      msg(function() w:system("s", q, fn, { phaze = "draw" }) end))
    assert.equals("world:system: bad argument #5 (unknown option 'phaze')",
      msg(function() w:system("s", q, fn, nil, { phaze = "draw" }) end))
    assert.equals("world:system: bad argument #3 (unknown option 'phaze')",
      msg(function() w:system("s", fn, { phaze = "draw" }) end))
    assert.equals("world:replace_system: bad argument #4 (list expected, got key 'x')",
      msg(function() w:replace_system("s", q, fn, { after = { x = 1 } }) end))
    assert.matches("bad argument #3 to 'system' %(table expected, got number%)",
      err_of(function() w:system("s", fn, 5) end))
    assert.matches("bad argument #4 to 'system' %(no more arguments: world:system%(name, fn " ..
      "%[, options%]%)%)", err_of(function() w:system("s", fn, nil, { phase = "draw" }) end))
    assert.matches("bad argument #4 to 'system' %(a Lua system takes no params: give its options " ..
      "here, world:system%(name, query, fn, options%)%)",
      err_of(function() w:system("s", q, fn, {}, { phase = "draw" }) end))
    assert.matches("bad argument #4 to 'system' %(a native system takes no params",
      err_of(function() w:system("s", q, motion.damp("Velocity.dx", 0.5), { k = 1 }, {}) end))
    assert.same({}, w:systems())
  end)

  it("refuses options given as an expression's params, showing the call that works", function()
    assert.equals("world:system: bad argument #4 (phase, after are options, not parameters of " ..
      "the expression: pass them fifth, world:system(name, query, expr, params or nil, " ..
      "{ phase = ..., after = ... }))",
      err_of(function() w:system("s", q, "Position.x += 1", { after = "a", phase = "draw" }) end)
        :match("world:system:.*$"))
    assert.same({}, w:systems())
    -- a parameter that happens to have an option's name is a parameter
    w:system("s", q, "Position.x += interval * dt", { interval = 2 })
    w:update(1)
    assert.equals(2, P:field(e, "x"))
    -- params and options, each in its place
    w:system("d", q, "Position.x += k", { k = 1 }, { phase = "draw" })
    w:update(1, "draw")
    assert.equals(3, P:field(e, "x"))
  end)

  it("reports one phase's stats when asked", function()
    w:system("a", L("a"))
    w:system("b", L("b"), { phase = "draw" })
    local names = {}
    for _, s in ipairs(w:stats("draw")) do names[#names + 1] = s.name end
    assert.same({ "b" }, names)
    assert.equals(2, #w:stats())
    assert.same({}, w:stats("none"))
  end)

  it("checks its options", function()
    local function msg(opts) return err_of(function() w:system("s", L("s"), opts) end) end
    assert.matches("world:system: phase: a name expected, got number", msg({ phase = 1 }), 1, true)
    assert.matches("world:system: the phase must not be empty", msg({ phase = "" }), 1, true)
    assert.matches("after[2]: a system name expected, got number",
      msg({ after = { "a", 3 } }), 1, true)
    assert.matches("before: a system name or a list of names expected, got boolean",
      msg({ before = true }), 1, true)
    assert.matches("unknown option 'every'", msg({ every = 0.1 }), 1, true)
    assert.matches("interval: a positive finite number expected, got 0", msg({ interval = 0 }), 1, true)
    assert.matches("interval: a positive finite number expected, got string",
      msg({ interval = "x" }), 1, true)
    assert.matches("interval: a positive finite number expected",
      msg({ interval = 1 / 0 }), 1, true)
    assert.matches("bad argument #2 to 'update'",
      err_of(function() w:update(1, 5) end), 1, true)
    assert.same({}, w:systems())
  end)
end)
