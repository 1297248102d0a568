-- components.lua -- component managers: registration, add/set/set_field/remove
-- with growth and lua fields, batch destroy, gc, update, iteration, the
-- managers' list.
return {
  run = function(ecs, W)
    local P = W:component("P", { "x:f32", "s:lua", "e:entity", "n:i16" })
    local T = W:component("T")
    local es = W:create(40)
    for i, e in ipairs(es) do
      P:add(e, i, { i }, e, i)
      if i % 2 == 0 then T:add(e) end
    end
    for i = 1, 40, 3 do P:set(es[i], { x = 1, s = "str" .. i }) end
    for i = 1, 40, 4 do P:set_field(es[i], "s", {}) end
    for i = 1, 40, 5 do P:remove(es[i]) end
    W:destroy({ es[2], es[4], es[6], es[8] })
    P:gc(2) W:update() P:gc() T:gc()
    for i = 1, 30 do local e = W:create() P:add(e, 0, "v" .. i) end
    local Q = W:component("Q", { "a", "b:bool", "c:f64", "d:u32", "f:i64" })
    Q:add(es[12], 1, true)
    Q:add(es[13], { a = 2, b = false, f = 7 })
    assert(#W:components() == 3)
    local ms = W:managers()
    assert(#ms >= 3 and ms[#ms].name == "Q" and ms[#ms].records == 2)
    for e in P:entities() do local _ = P:get(e) end
    local _ = P:fields()
    W:destroy(es)
    W:update(1)
  end,
  verify = function(ecs, W)
    local e = W:create()
    for _, C in ipairs(W:components()) do
      if #C:fields() == 0 then C:add(e) else C:add(e, nil) end
      assert(C:has(e))
      assert(C:remove(e))
      C:gc()
    end
  end,
}
