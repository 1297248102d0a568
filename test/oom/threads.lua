-- threads.lua -- worlds with worker threads (ecs.world{ threads = n }):
-- creation (the pool's blocks), expression systems and q:apply split over
-- the threads (their value stacks come from the query's scratch before
-- anything is written), and a world with threads alongside W.
return {
  run = function(ecs, W)
    local T = ecs.world({ threads = 2 })
    local P = T:component("P", { "x:f32", "y:f64" })
    local V = T:component("V", { "dx:f32" })
    local es = T:create(9000)
    for i, e in ipairs(es) do
      P:add(e, i, -i)
      V:add(e, 1)
    end
    T:system("move", T:query(P, V), "P.x += V.dx * dt; P.y = P.y * 0.5 + P.x")
    T:update(0.25)
    T:query(P, V):apply("P.x = P.x - 1")
    assert(P:get(es[9000]) == 9000 - 0.75)
    assert(T:check())
    T:close()
    -- the main world gets threads too, and uses them
    local Q = W:component("Q", { "v:f64" })
    for _, e in ipairs(W:create(9000)) do Q:add(e, 2) end
    W:query(Q):apply("Q.v = Q.v * Q.v")
  end,
}
