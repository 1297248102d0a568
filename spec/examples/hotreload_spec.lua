--[[
hotreload_spec.lua -- examples/hotreload.lua and the hot reload flow end to
end (world:component(name, fields, { migrate = ... }) and
world:replace_system): the example runs from the command line; in process,
values survive the reload (kept fields keep their values, a renamed field
has the old one's, a new field is zero), the manager and query objects stay
the same, the replaced systems keep their places in the update order, and
every position after the reload equals a plain-Lua model of the same game to
the last bit. Then the flow without the example: the same object back, an
expression system naming a dropped field refusing the redefinition (nothing
changed), replace_system keeping the order across a redefinition, programs
compiled before it using the new layout.
]]
package.path = "examples/?.lua;" .. package.path
local ecs = require("ecs")
local compat = require("spec.support.lua")
local hotreload = require("hotreload")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")

local N = 64 -- movers in the example's game (hotreload.new(64) in its main)

local f32 = compat.f32
local function wrap(a) return a - math.floor(a / 64) * 64 end -- the expressions' a % 64

-- The example's game redone in plain Lua, mover by mover in spawn order:
-- model.new() is version 1's starting state, model.v1/v2 one frame of each
-- version (systems in their update order), model.reload the migration.
local model = {}
function model.new()
  local m = {}
  for i = 1, N do m[i] = { x = (i * 7) % 64, y = (i * 13) % 64, speed = 1 + (i % 8) * 0.25, age = 0 } end
  return m
end
function model.v1(m)
  for _, v in ipairs(m) do
    v.x = v.x + v.speed * hotreload.DT -- move
    v.x = wrap(v.x)                    -- wrap
    v.age = v.age + hotreload.DT       -- tally
  end
end
function model.reload(m) -- speed -> vx:f32, vy new, age dropped
  for _, v in ipairs(m) do v.vx, v.vy, v.speed, v.age = f32(v.speed), 0, nil, nil end
end
function model.v2(m) --> the highest y after move (what tally sees)
  local dt, top = hotreload.DT, -math.huge
  for _, v in ipairs(m) do
    v.x = v.x + v.vx * dt; v.y = v.y + v.vy * dt -- move
    v.x = wrap(v.x)                              -- wrap
    top = math.max(top, v.y)                     -- tally
    v.vy = f32(v.vy + (32 - v.y) * 0.0625 * dt)  -- steer
  end
  return top
end
function model.run(before, after)
  local m = model.new()
  for _ = 1, before do model.v1(m) end
  model.reload(m)
  for _ = 1, after do model.v2(m) end
  return m
end

local function names(list) -- world:components() -> their names
  local out = {}
  for i, c in ipairs(list) do out[i] = c.name end
  return out
end

-- the output and the exit code (printed by the shell: before 5.2 a popen's
-- close does not tell it)
local function run(args)
  local p = assert(io.popen(("LUA_PATH=%q LUA_CPATH=%q %s examples/hotreload.lua %s 2>&1; echo \"[exit $?]\"")
    :format(package.path, package.cpath, compat.command, args)))
  local out = p:read("*a")
  p:close()
  local text, code = out:match("^(.-)%[exit (%d+)%]\n?$")
  return text or out, tonumber(code) or -1
end

describe("examples/hotreload.lua", function()
  it("runs from the command line: says what the reload changed, prints the summary, exit status 0", function()
    local out, code = run("--frames 100")
    assert.equals(0, code, out)
    assert.matches("component Mover: x:f64 y:f64 speed:f64 age:f64 -> x:f64 y:f64 vx:f32 vy:f32", out, 1, true)
    assert.matches("system move: replaced in its place", out, 1, true)
    assert.matches("system tally: replaced in its place", out, 1, true)
    assert.matches("system steer: added", out, 1, true)
    assert.not_matches("system wrap", out, 1, true) -- its text did not change
    assert.matches("v2 ran 50 frames: order move wrap tally steer", out, 1, true)
    local frames, at, movers, sum = out:match("hotreload: (%d+) frames, reload at frame (%d+), (%d+) movers, " ..
      "checksum ([-%d.]+)\n")
    assert.same({ "100", "50", tostring(N) }, { frames, at, movers }, out)
    local want = 0
    for _, v in ipairs(model.run(50, 50)) do want = want + v.x + v.y end
    assert.near(want, tonumber(sum), 1e-5)
  end)

  it("refuses a bad --frames with status 2", function()
    local out, code = run("--frames x")
    assert.equals(2, code, out)
    assert.matches("usage: hotreload.lua [--frames N]", out, 1, true)
  end)

  it("reloads in place: same objects, values carried over, systems in their places", function()
    local game = hotreload.new(N)
    local w = game.world
    hotreload.step(game, 40)
    local M, q = game.components.Mover, game.queries.Mover
    local was = {}
    for i, e in ipairs(game.movers) do was[i] = { M:get(e) } end
    assert.same({ "move", "wrap", "tally" }, w:systems())
    assert.equals(40 / 16, game.hud.oldest)

    local log = hotreload.load(game, hotreload.V2, "game.lua v2")
    assert.same({ "component Mover: x:f64 y:f64 speed:f64 age:f64 -> x:f64 y:f64 vx:f32 vy:f32",
                  "system move: replaced in its place", "system tally: replaced in its place",
                  "system steer: added" }, log)
    -- the same manager and query objects, the world knows no other Mover
    assert.is_true(rawequal(M, game.components.Mover))
    assert.is_true(rawequal(q, game.queries.Mover))
    assert.is_true(rawequal(M, w:components()[1]))
    assert.same({ "Mover" }, names(w:components()))
    assert.same({ "x:f64", "y:f64", "vx:f32", "vy:f32" }, M:fields())
    -- kept fields kept their values, vx has speed's, vy is zero, age is gone
    for i, e in ipairs(game.movers) do
      local x, y, speed = table.unpack(was[i])
      assert.same({ x, y, speed, 0 }, { M:get(e) })
      assert.equals(speed, M:field(e, "vx"))
    end
    assert.matches("unknown field 'age'", err_of(M.field, M, game.movers[1], "age"), 1, true)
    assert.equals(N, q:count())
    assert.equals(N, M:count())
    -- the replaced systems hold their places; the new one comes last; new bodies start at zero
    assert.same({ "move", "wrap", "tally", "steer" }, w:systems())
    local stats = {}
    for _, s in ipairs(w:stats()) do stats[s.name] = s end
    assert.same({ 0, "expression" }, { stats.move.calls, stats.move.kind })
    assert.same({ 40, "expression" }, { stats.wrap.calls, stats.wrap.kind })
    assert.same({ 0, "lua" }, { stats.tally.calls, stats.tally.kind })

    -- every value as the model has it after every frame: move, wrap, tally and steer in that
    -- order (in another, some mover leaves [0, 64) or tally sees another top)
    local m = model.run(40, 0)
    for i, v in ipairs(m) do assert.same({ v.x, v.y, v.vx, v.vy }, { M:get(game.movers[i]) }) end
    for _ = 1, 30 do
      hotreload.step(game, 1)
      assert.equals(model.v2(m), game.hud.top)
      for i, v in ipairs(m) do
        local x, y, vx, vy = M:get(game.movers[i])
        assert.is_true(x >= 0 and x < 64)
        assert.same({ v.x, v.y, v.vx, v.vy }, { x, y, vx, vy })
      end
    end
    for _, s in ipairs(w:stats()) do stats[s.name] = s end
    assert.same({ 30, 70, 30, 30 }, { stats.move.calls, stats.wrap.calls, stats.tally.calls, stats.steer.calls })
    assert.equals(40 / 16, game.hud.oldest) -- v1's tally is gone
    release(w)
  end)

  it("a reload that cannot convert a value changes nothing and gives the systems their bodies back", function()
    local game = hotreload.new(N)
    local w = game.world
    hotreload.step(game, 41) -- x = x0 + 41 * speed / 16: many are not integers
    local M = game.components.Mover
    local bad = hotreload.V1:gsub('"x", "y", "speed"', '"x:i32", "y", "speed"')
    assert.are_not.equal(hotreload.V1, bad)
    bad = bad:gsub("Mover.x %% 64", "Mover.x %% 32") -- and a changed system, parked during the attempt
    local err = err_of(hotreload.load, game, bad, "game.lua v1 (bad)")
    assert.matches("Mover", err, 1, true)
    assert.matches("x", err, 1, true)
    assert.matches("integer", err, 1, true)
    assert.same({ "x:f64", "y:f64", "speed:f64", "age:f64" }, M:fields())
    assert.same({ "move", "wrap", "tally" }, w:systems())
    hotreload.step(game, 1)
    local m = model.new()
    for _ = 1, 42 do model.v1(m) end
    for i, v in ipairs(m) do assert.same({ v.x, v.y, v.speed, v.age }, { M:get(game.movers[i]) }) end
    release(w)
  end)
end)

describe("hot reload, end to end", function()
  local w, M, q, es
  before_each(function()
    w = ecs.world()
    M = w:component("Mover", { "x", "y", "speed" })
    q = w:query(M)
    es = w:create(3)
    for i, e in ipairs(es) do M:add(e, i, 10 * i, 0.5 * i) end
  end)
  after_each(function() release(w) end)

  local function values()
    local out = {}
    for i, e in ipairs(es) do out[i] = { M:get(e) } end
    return out
  end

  it("world:component(..., { migrate = true }) returns the same object, first time or not", function()
    assert.is_true(rawequal(M, w:component("Mover", { "x", "y", "speed" }, { migrate = true })))
    assert.same({ { 1, 10, 0.5 }, { 2, 20, 1 }, { 3, 30, 1.5 } }, values())
    assert.is_true(rawequal(M, w:component("Mover", { "x", "y", "speed", "z:i32" }, { migrate = true })))
    assert.same({ { 1, 10, 0.5, 0 }, { 2, 20, 1, 0 }, { 3, 30, 1.5, 0 } }, values())
    assert.equals(3, q:count())
    -- a name not registered yet: created as without the option
    local T = w:component("Tag2", { "a:u8" }, { migrate = true })
    assert.same({ "a:u8" }, T:fields())
    assert.same({ "Mover", "Tag2" }, names(w:components()))
    -- without the option an existing name is still an error
    assert.matches("already exists", err_of(w.component, w, "Mover", { "x" }), 1, true)
    assert.same({ "x:f64", "y:f64", "speed:f64", "z:i32" }, M:fields())
  end)

  it("an expression system naming a dropped field refuses the redefinition, and nothing changes", function()
    w:system("move", q, "Mover.x = Mover.x + Mover.speed * dt")
    local err = err_of(w.component, w, "Mover", { "x", "y", "vx" }, { migrate = { rename = { speed = "vx" } } })
    assert.matches("move", err, 1, true)
    err = err_of(w.component, w, "Mover", { "x", "y" }, { migrate = true })
    assert.matches("move", err, 1, true)
    assert.same({ "x:f64", "y:f64", "speed:f64" }, M:fields())
    assert.same({ { 1, 10, 0.5 }, { 2, 20, 1 }, { 3, 30, 1.5 } }, values())
    assert.same({ "move" }, w:systems())
    w:update(2)
    assert.same({ { 2, 10, 0.5 }, { 4, 20, 1 }, { 6, 30, 1.5 } }, values())
  end)

  it("replace_system keeps the order across a redefinition (parked, redefined, replaced)", function()
    local log = {}
    w:system("a", function() log[#log + 1] = "a" end)
    w:system("move", q, "Mover.x = Mover.x + Mover.speed * dt")
    w:system("c", function() log[#log + 1] = ("c:%.1f"):format(M:field(es[1], "x")) end)
    w:update(2)
    w:replace_system("move", function() log[#log + 1] = "parked" end)
    assert.is_true(rawequal(M, w:component("Mover", { "x", "y", "vx:f32", "vy:f32" },
      { migrate = { rename = { speed = "vx" } } })))
    w:replace_system("move", q, "Mover.x = Mover.x + Mover.vx * dt; Mover.vy = Mover.vy + 1")
    assert.same({ "a", "move", "c" }, w:systems())
    w:update(4)
    assert.same({ "a", "c:2.0", "a", "c:4.0" }, log) -- move ran between a and c
    assert.same({ { 4, 10, 0.5, 1 }, { 8, 20, 1, 1 }, { 12, 30, 1.5, 1 } }, values())
  end)

  it("unchanged expression systems and q:apply texts use the new layout when fields move", function()
    w:system("push", q, "Mover.x = Mover.x + 1")
    assert.equals(3, q:apply("Mover.y = Mover.y * 2"))
    w:update(1)
    assert.same({ { 2, 20, 0.5 }, { 3, 40, 1 }, { 4, 60, 1.5 } }, values())
    -- x moves from the first field to the last, y from the second to the third
    assert.is_true(rawequal(M, w:component("Mover", { "pad:i8", "speed", "y", "x" }, { migrate = true })))
    assert.same({ { 0, 0.5, 20, 2 }, { 0, 1, 40, 3 }, { 0, 1.5, 60, 4 } }, values())
    w:update(1)
    assert.same({ { 0, 0.5, 20, 3 }, { 0, 1, 40, 4 }, { 0, 1.5, 60, 5 } }, values())
    assert.equals(3, q:apply("Mover.y = Mover.y * 2"))
    assert.same({ { 0, 0.5, 40, 3 }, { 0, 1, 80, 4 }, { 0, 1.5, 120, 5 } }, values())
    local xs = {}
    for n, x in q:columns("Mover.x:in") do
      for i = 1, n do xs[#xs + 1] = x[i] end
    end
    table.sort(xs)
    assert.same({ 3, 4, 5 }, xs)
  end)
end)
