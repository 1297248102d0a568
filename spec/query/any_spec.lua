--[[
any_spec.lua -- world:query{ ..., any = { A, B } } (docs/queries.md, "Any-of
terms"): an entity matches when it holds every "with" component, none of
"without" and at least one of "any"; the list follows every add, remove and
destroy; the terms give no columns; bad input is refused, nothing made.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local unpack = require("spec.support.lua").unpack

local id_set = require("spec.support.id_set")
local members, ids = id_set.visited, id_set.of

describe("any-of query terms", function()
  local w, P, Ship, Station, X, es
  before_each(function()
    w = ecs.world()
    P = w:component("P", { "x:f64" })
    Ship = w:component("Ship", { "speed:f32" })
    Station = w:component("Station")
    X = w:component("X")
    es = w:create(6)
    for i, e in ipairs(es) do P:add(e, i) end
    Ship:add(es[1], 5)
    Station:add(es[2])
    Ship:add(es[3], 1)
    Station:add(es[3])
    X:add(es[3])
  end)
  after_each(function() w:close() end)

  it("match entities with at least one of the components", function()
    local q = w:query({ P, any = { Ship, Station } })
    assert.equal(ids(es[1], es[2], es[3]), members(q))
    assert.equal(3, q:count())
  end)

  it("follow adds, removes and destroys, one term or both", function()
    local q = w:query({ P, any = { Ship, Station } })
    assert.equal(3, q:count())
    Ship:remove(es[3]) -- still a station
    assert.equal(ids(es[1], es[2], es[3]), members(q))
    Station:remove(es[3]) -- neither now
    assert.equal(ids(es[1], es[2]), members(q))
    Station:add(es[4])
    Ship:add(es[4], 2) -- the second one adds nothing
    assert.equal(ids(es[1], es[2], es[4]), members(q))
    w:destroy(es[1])
    assert.equal(ids(es[2], es[4]), members(q))
    P:remove(es[2])
    assert.equal(ids(es[4]), members(q))
    assert.is_true(w:check())
  end)

  it("combine with without, change terms and disabled entities", function()
    local q = w:query({ P, any = { Ship, Station }, without = { X } })
    assert.equal(ids(es[1], es[2]), members(q))
    X:remove(es[3])
    assert.equal(ids(es[1], es[2], es[3]), members(q))
    w:disable(es[2])
    assert.equal(ids(es[1], es[3]), members(q))
    local c = w:query({ P, any = { Ship, Station }, changed = { P } })
    c:each(function() end)
    P:set(es[1], 9)
    P:set(es[5], 9) -- no ship, no station
    local seen = {}
    c:each(function(e) seen[#seen + 1] = e end)
    assert.equal(ids(es[1]), ids(unpack(seen)))
  end)

  it("are run over by apply, each and systems", function()
    local q = w:query({ P, any = { Ship, Station } })
    q:apply("P.x += 100")
    assert.equal(101, P:get(es[1]))
    assert.equal(4, P:get(es[4]))
    local n = q:each(function() end)
    assert.equal(3, n)
    w:system("s", q, "P.x = 0")
    w:update(0)
    assert.equal(0, P:get(es[2]))
    assert.equal(5, P:get(es[5]))
  end)

  it("give no columns: their fields are read with get", function()
    local q = w:query({ P, any = { Ship, Station } })
    assert.has_error(function() q:each(function() end, "Ship.speed") end)
    local speeds = {}
    q:each(function(e) speeds[#speeds + 1] = Ship:get(e) or 0 end)
    table.sort(speeds)
    assert.same({ 0, 1, 5 }, speeds)
  end)

  it("are listed third by q:components()", function()
    local q = w:query({ P, any = { Ship, Station }, without = { X } })
    local with, without, any = q:components()
    assert.same({ P }, with)
    assert.same({ X }, without)
    assert.same({ Ship, Station }, any)
    local _, _, none = w:query(P):components()
    assert.same({}, none)
  end)

  it("an empty list adds no condition", function()
    assert.equal(6, w:query({ P, any = {} }):count())
  end)

  it("refuse a term listed twice, a non-list, another world's, and too many", function()
    assert.matches("component 'Ship' listed twice",
      err_of(function() w:query({ P, any = { Ship, Ship } }) end), 1, true)
    assert.matches("component 'P' listed twice",
      err_of(function() w:query({ P, any = { P, Ship } }) end), 1, true)
    assert.matches("component 'X' listed twice",
      err_of(function() w:query({ P, without = { X }, any = { X } }) end), 1, true)
    assert.matches("'any' must be a list of components, got userdata",
      err_of(function() w:query({ P, any = Ship }) end), 1, true)
    local other = ecs.world()
    local O = other:component("O")
    assert.matches("another world", err_of(function() w:query({ P, any = { O } }) end))
    other:close()
    local many = {}
    for i = 1, 32 do many[i] = w:component("T" .. i) end
    assert.matches("too many", err_of(function() w:query({ P, any = many }) end))
    assert.matches("unknown key", err_of(function() w:query({ P, anny = { Ship } }) end))
  end)

  it("keep their cursor's identity across a restore", function()
    local q = w:query({ P, any = { Ship, Station } })
    local blob = w:snapshot()
    Station:remove(es[2])
    assert.equal(2, q:count())
    w:restore(blob)
    assert.equal(3, q:count())
    local w2 = ecs.restore(blob)
    local q2 = w2:query({ w2:find_component("P"),
                          any = { w2:find_component("Ship"), w2:find_component("Station") } })
    assert.equal(3, q2:count())
    w2:close()
  end)
end)
