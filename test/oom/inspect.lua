-- inspect.lua -- world:inspect as text and as tables, on an entity with
-- every field type, lua values of every kind, a long text, a name, a
-- transform and a plugin manager. inspect runs with the collector stopped:
-- when an allocation inside it fails, the collector must be running again
-- afterwards (verify), and the world unchanged.
local state = {}

return {
  run = function(ecs, W)
    local All = W:component("All", { "a:f32", "b:f64", "c:i8", "d:i64", "e:u32", "f:bool",
                                     "g:entity", "h:lua", "i:lua", "j:lua", "k:lua" })
    local Tag = W:component("Tag")
    local PM = require("ecs.pointmass").new(W)
    local es = W:create(3)
    local e = es[1]
    All:add(e, 0.1, 0.2, -3, 4, 5, true, es[2], string.rep("text\n", 40), { 1, 2, x = 3 },
            io.stdout, 1.5)
    Tag:add(e)
    for i = 1, 20 do W:component("C" .. i, { "v:lua", "w:f64" }):add(e, "value " .. i, i) end
    W.names:set(e, "the \"one\"")
    W.transform:add(es[2])
    W.transform:add(e, { position = { 1, 2, 3 } })
    W.transform:set_parent(e, es[2])
    PM:add(e, 2)
    W:destroy(es[3])
    state.count = W:count()
    local s = W:inspect(e)
    assert(s:find('^entity%(1%.0%) "the \\"one\\""'), s)
    assert(s:find("\n  pointmass$"), s)
    assert(W:inspect(es[3]) == "entity(3.0) (dead)")
    local comps, managers = W:inspect(e, { table = true })
    assert(comps.All.b == 0.2 and comps.C20.v == "value 20" and next(comps.Tag) == nil)
    assert(managers.names == 'the "one"' and managers.pointmass == true)
    assert(managers.transform.parent == es[2])
  end,
  verify = function(ecs, W)
    assert(ecs)
    assert(collectgarbage("isrunning"), "the collector was left stopped")
    -- (the host has created one more entity before verify)
    if state.count then assert(W:count() == state.count + 1, "inspect changed the world") end
  end,
}
