--[[
message_spec.lua -- require("ecs.message"): messages sent down (and up) a
transform subtree to handlers registered per component.
]]
local ecs = require("ecs")
local message = require("ecs.message")

describe("ecs.message", function()
  local w, T, Health, Wheel, bus
  local function has_set()
    local set = {}
    return { name = "Tag", has = function(_, e) return set[e] == true end,
             add = function(_, e) set[e] = true end }
  end
  before_each(function()
    w = ecs.world()
    T = w.transform
    Health = has_set()
    Wheel = has_set()
    bus = message.new(w)
  end)
  after_each(function() w:close() end)

  -- car -> { body -> { seat }, wheel1, wheel2 }
  local function car()
    local c, body, seat, w1, w2 = w:create(), w:create(), w:create(), w:create(), w:create()
    for _, e in ipairs({ c, body, seat, w1, w2 }) do T:add(e) end
    T:set_parent(body, c)
    T:set_parent(seat, body)
    T:set_parent(w1, c)
    T:set_parent(w2, c)
    return c, body, seat, w1, w2
  end

  it("visits the subtree depth first, calling handlers of present components", function()
    local c, body, seat, w1, w2 = car()
    for _, e in ipairs({ c, body, seat, w1, w2 }) do Health:add(e) end
    Wheel:add(w1)
    Wheel:add(w2)
    local log = {}
    bus:on(Health, "damage", function(e, n) log[#log + 1] = { "health", e, n } end)
    bus:on(Wheel, "damage", function(e, n) log[#log + 1] = { "wheel", e, n } end)
    assert.equals(7, bus:send(c, "damage", 5))
    assert.same({
      { "health", c, 5 }, { "health", body, 5 }, { "health", seat, 5 },
      { "health", w1, 5 }, { "wheel", w1, 5 }, { "health", w2, 5 }, { "wheel", w2, 5 },
    }, log)
    assert.equals(0, bus:send(c, "unknown"))
    assert.equals(2, bus:send(body, "damage", 1)) -- body and seat only
  end)

  it("sends up to the root", function()
    local c, body, seat = car()
    Health:add(c)
    Health:add(seat)
    local seen = {}
    bus:on(Health, "bump", function(e) seen[#seen + 1] = e end)
    assert.equals(2, bus:send_up(seat, "bump"))
    assert.same({ seat, c }, seen)
    assert.is_truthy(body)
  end)

  it("resolves components by name through world:components()", function()
    local c, body = car()
    local Armor = w:component("Armor", { "hp" })
    Armor:add(body, 3)
    local got
    bus:on("Armor", "hit", function(e) got = e end)
    assert.equals(1, bus:send(c, "hit"))
    assert.equals(body, got)
  end)

  it("tolerates handlers that destroy and reparent", function()
    local c, body, seat, w1, w2 = car()
    for _, e in ipairs({ c, body, seat, w1, w2 }) do Health:add(e) end
    local seen = {}
    bus:on(Health, "boom", function(e)
      seen[#seen + 1] = e
      if e == body then T:destroy_tree(body) end -- seat goes too
      if e == w1 then w:destroy(w2) end
    end)
    assert.equals(3, bus:send(c, "boom"))
    assert.same({ c, body, w1 }, seen)
  end)

  it("propagates handler errors unchanged and stays usable", function()
    local c = car()
    Health:add(c)
    local obj = setmetatable({}, { __tostring = function() return "E" end })
    bus:on(Health, "x", function() error(obj) end)
    local ok, err = pcall(bus.send, bus, c, "x")
    assert.is_false(ok)
    assert.equals(obj, err)
    assert.equals(1, bus:off(Health, "x"))
    assert.equals(0, bus:send(c, "x"))
  end)

  it("handles dead entities, entities without transform and bad arguments", function()
    local e = w:create()
    Health:add(e)
    local n = 0
    bus:on(Health, "m", function() n = n + 1 end)
    assert.equals(1, bus:send(e, "m")) -- no transform: just itself
    w:destroy(e)
    assert.equals(0, bus:send(e, "m"))
    assert.equals(0, bus:send_up(e, "m"))
    assert.has_error(function() message.new(nil) end, "message.new: a world expected")
    assert.has_error(function() bus:on(5, "m", print) end)
    assert.has_error(function() bus:on(Health, 5, print) end)
    assert.has_error(function() bus:on(Health, "m", 5) end)
    assert.has_error(function() bus:send(e, nil) end)
    assert.has_error(function() bus:send("x", "m") end)
  end)
end)
