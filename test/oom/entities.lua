-- entities.lua -- create and destroy, single and batch, iteration, update.
return {
  run = function(ecs, W)
    local one = {}
    for i = 1, 50 do one[i] = W:create() end
    local batch = W:create(300)
    assert(#batch == 300)
    assert(#W:create(0) == 0)
    for i = 1, 50, 2 do W:destroy(one[i]) end
    assert(W:destroy({ batch[1], batch[2], batch[3] }) == 3)
    W:destroy(batch)
    local n = 0
    for _ in W:entities() do n = n + 1 end
    assert(n == W:count())
    W:update(0.016)
    local again = W:create(1200) -- runs the free queue past 1024 waiting
    W:destroy(again)
    W:create(100)
    assert(not W:alive(ecs.null))
  end,
  verify = function(ecs, W)
    local n = 0
    for _ in W:entities() do n = n + 1 end
    assert(n == W:count())
    local es = W:create(10)
    assert(W:destroy(es) == 10)
    assert(not W:alive(ecs.null))
  end,
}
