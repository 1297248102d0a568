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
end)
