-- Unknown keys in option tables and lists are errors, never silently ignored
-- (API.md, "Scheduling"): a misspelt `without` would drop an exclusion, a map
-- given as a field list would make a tag.
local ecs = require("ecs")
local release = require("spec.support.release")

local err_of = require("spec.support.err_of")

describe("option tables", function()
  local w, P, H
  before_each(function()
    w = ecs.world()
    P = w:component("P", { "x:f32" })
    H = w:component("H")
  end)
  after_each(function() release(w) end)

  it("ecs.world refuses unknown options", function()
    assert.matches("ecs.world: bad argument #1 %(unknown option 'bogus'%)",
                   err_of(ecs.world, { bogus = 1 }))
    release(ecs.world({}))
    release(ecs.world(nil))
  end)

  it("world:component refuses a map as the field list, and any option", function()
    assert.matches("world:component: bad argument #3 %(list expected, got key 'x'%)",
                   err_of(w.component, w, "Q", { x = "f32" }))
    assert.matches("world:component: bad argument #3 %(list expected, got key 'y'%)",
                   err_of(w.component, w, "Q", { "x:f32", y = "f32" }))
    assert.matches("world:component: bad argument #4 %(unknown option 'on_add'%)",
                   err_of(w.component, w, "Q", { "x" }, { on_add = print }))
    assert.matches("bad argument #4", err_of(w.component, w, "Q", { "x" }, 5))
    -- nothing was made: the name is still free
    local Q = w:component("Q", { "x" }, {})
    assert.equals("Q", Q.name)
  end)

  it("world:query refuses unknown keys and holes in its lists", function()
    assert.matches("world:query: bad argument #2 %(unknown key 'withou'%)",
                   err_of(w.query, w, { P, withou = { H } }))
    assert.matches("world:query: bad argument #2 %(unknown key '3'%)",
                   err_of(w.query, w, { P, [3] = H }))
    assert.matches("world:query: bad argument #2 %(list expected, got key 'x'%)",
                   err_of(w.query, w, { P, without = { H, x = 1 } }))
    local q = w:query({ P, without = { H } })
    local e = w:create(); P:add(e)
    local f = w:create(); P:add(f); H:add(f)
    assert.equals(1, q:count())
  end)

  it("world:system refuses scheduling options it does not know", function()
    local q = w:query(P)
    assert.matches("world:system: bad argument #6 %(unknown option 'every'%)",
                   err_of(w.system, w, "s", q, function() end, nil, { every = 1 / 30 }))
    assert.matches("world:system: bad argument #6 %(unknown option 'phaze'%)",
                   err_of(w.system, w, "s", q, function() end, nil, { phaze = "draw" }))
    assert.matches("bad argument #6", err_of(w.system, w, "s", q, function() end, nil, 1))
    assert.same({}, w:systems()) -- nothing registered
    w:system("s", q, function() end, nil, {})
    assert.same({ "s" }, w:systems())
  end)

  -- Lua's luaL_argerror does not count self when a method is called with a
  -- colon; the option errors the binding words itself count the same way,
  -- so that the same argument never has two numbers.
  it("numbers an option table's argument as Lua's own messages do", function()
    local q = w:query(P)
    local e = w:create()
    assert.matches("bad argument #2 to 'component' %(table expected",
                   err_of(function() w:component("Q", 5) end))
    assert.matches("world:component: bad argument #2 %(list expected, got key 'x'%)",
                   err_of(function() w:component("Q", { x = "f32" }) end))
    assert.matches("world:component: bad argument #3 %(unknown option 'on_add'%)",
                   err_of(function() w:component("Q", { "x" }, { on_add = print }) end))
    assert.matches("world:component: bad argument #3 %(unknown option 'renam'%)",
                   err_of(function() w:component("Q", { "x" }, { migrate = { renam = {} } }) end))
    assert.matches("world:query: bad argument #1 %(unknown key 'withou'%)",
                   err_of(function() w:query({ P, withou = { H } }) end))
    assert.matches("world:query: bad argument #1 %(list expected, got key 'x'%)",
                   err_of(function() w:query({ P, without = { H, x = 1 } }) end))
    assert.matches("world:inspect: bad argument #2 %(unknown option 'x'%)",
                   err_of(function() w:inspect(e, { x = 1 }) end))
    local blob = w:snapshot()
    assert.matches("world:restore: bad argument #2 %(unknown option 'bogus'%)",
                   err_of(function() w:restore(blob, { bogus = 1 }) end))
    assert.matches("world:system: bad argument #5 %(unknown option 'every'%)",
                   err_of(function() w:system("s", q, "P.x = 1", nil, { every = 1 }) end))
    assert.matches("world:system: bad argument #5 %(list expected, got key 'x'%)",
                   err_of(function() w:system("s", q, "P.x = 1", nil, { after = { x = 1 } }) end))
    assert.matches("bad argument #1 to 'destroy' %(entity expected at index 2, got string%)",
                   err_of(function() w:destroy({ e, "x" }) end))
    assert.truthy(w:alive(e)) -- the list is checked before anything goes
    assert.matches("ecs.world: bad argument #1 %(unknown option 'bogus'%)",
                   err_of(function() ecs.world({ bogus = 1 }) end))
    assert.same({}, w:systems())
  end)
end)
