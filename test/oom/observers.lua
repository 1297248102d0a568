-- observers.lua -- on_add / on_set / on_remove on a component, the
-- transform and names, with observers that allocate (tables, entities,
-- components) while the allocator fails: an error raised inside an
-- observer (not enough memory) comes out of the triggering call, and the
-- world stays consistent.
return {
  run = function(ecs, W)
    local P = W:component("P", { "x:f64", "any:lua" })
    local Q = W:component("Q", { "y:f32" })
    local T, N = W.transform, W.names
    local log = {}
    local o1 = P:on_add(function(e) log[#log + 1] = { e }; Q:add(e, 1) end)
    P:on_set(function(e) log[#log + 1] = P:field(e, "x") end)
    P:on_remove(function(e) log[#log + 1] = { P:get(e) } end)
    Q:on_remove(function(e) if ecs.index(e) % 3 == 0 then T:add(W:create()) end end)
    T:on_add(function(e) N:set(e, "t" .. ecs.index(e)) end)
    N:on_remove(function(e) log[#log + 1] = N:get(e) end)
    local es = W:create(40)
    for i, e in ipairs(es) do P:add(e, i, { i }) end
    for i = 1, 40, 2 do P:set(es[i], -i, "s") end
    for i = 1, 40, 3 do P:set_field(es[i], "x", i * 2) end
    for i = 1, 10 do P:remove(es[i]) end
    W:destroy({ es[11], es[12], es[13] })
    for i = 20, 30 do W:destroy(es[i]) end
    o1:close()
    local e = W:create() T:add(e) N:clear(e)
    local c <close> = Q:on_set(function() end)
    Q:set(es[35], 5)
    assert(c:active())
  end,
  verify = function(_, W)
    local P = W:component("V", { "x" })
    local n = 0
    local o = P:on_add(function() n = n + 1 end)
    P:add(W:create(), 1)
    assert(n == 1)
    o:close()
  end,
}
