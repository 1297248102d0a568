-- transform.lua -- world.transform and world.names: add, set_parent, batch
-- calls, children, destroy_tree, gc, names set/find/clear.
return {
  run = function(ecs, W)
    local T, N = W.transform, W.names
    local es = W:create(60)
    for i, e in ipairs(es) do
      T:add(e, { position = { i, 0, 0 }, rotation = { 0, 0, 1, 1 } })
      if i > 1 then T:set_parent(e, es[i // 2]) end
      N:set(e, "n" .. (i % 7))
    end
    local xs, ys, zs = {}, {}, {}
    for i = 1, 60 do xs[i], ys[i], zs[i] = i, 1, 2 end
    T:set_local_positions(es, xs, ys, zs)
    T:set_local_scales(es, xs, ys, zs)
    T:set_local_rotations(es, xs, ys, zs, xs)
    local wx = T:world_positions(es)
    assert(#wx == 60)
    local r = W:create() T:add(r, { scale = { 2, 2, 2 } })
    for c in T:children(es[1]) do T:set_parent(c, r, true) end
    local m = { T:world_matrix(es[50]) }
    assert(#m == 16)
    W:destroy(es[3])
    T:destroy_tree(es[5])
    T:remove(es[9])
    N:clear(es[10])
    assert(N:find("n1") ~= nil)
    T:gc(2) N:gc(1) W:update() T:gc() N:gc()
    for i = 1, 30 do local e = W:create() T:add(e) N:set(e, "new" .. i) end
  end,
  verify = function(ecs, W)
    local e, f = W:create(), W:create()
    local T, N = W.transform, W.names
    T:add(e) T:add(f) T:set_parent(f, e) T:set_local_position(e, 1, 2, 3)
    assert(select(3, T:world_position(f)) == 3)
    N:set(e, "verify") assert(N:find("verify") == e)
  end,
}
