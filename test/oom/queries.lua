-- queries.lua -- queries and systems: creation (with exclusion), count,
-- q:entities loops with changes inside, q:columns and q:each_chunk with
-- write-back, q:apply (compilation and run), Lua and expression systems
-- run by world:update, native systems, remove_system, stats.
return {
  run = function(ecs, W)
    local P = W:component("Position", { "x:f32", "y:f64" })
    local V = W:component("Velocity", { "dx:f32", "dy:f32" })
    local F = W:component("Frozen")
    local L = W:component("Log", { "v:lua" })
    local es = W:create(60)
    for i, e in ipairs(es) do
      P:add(e, i, -i)
      if i % 2 == 0 then V:add(e, 1, 2) end
      if i % 5 == 0 then F:add(e) end
      if i % 3 == 0 then L:add(e, { i }) end
    end
    local movers = W:query(P, V)
    local free = W:query({ P, V, without = { F } })
    assert(movers:count() == 30)
    for e in movers:entities() do
      if P:field(e, "x") > 50 then W:destroy(e) end
      local x = W:create()
      P:add(x, 0, 0)
    end
    for n, x, y, dx in movers:columns("Position.x", "Position.y", "Velocity.dx:in") do
      for i = 1, n do x[i] = x[i] + dx[i]; y[i] = y[i] * 2 end
    end
    local visited = movers:each_chunk(function(n, x, dx, ids)
      for i = 1, n do x[i] = x[i] - dx[i] end
      if n > 2 then W:destroy(ids[2]) end -- a write dropped, the rest kept
    end, "Position.x", "Velocity.dx:in", "entity")
    assert(visited > 0)
    movers:apply("Position.x += Velocity.dx * dt; Position.y = clamp(Position.y, -10, 10)", { dt = 0.5 })
    W:system("move", movers, "Position.x += Velocity.dx * dt")
    W:system("lua", free, function(dt, q)
      for e in q:entities() do L:add(e, { dt }) end
    end)
    W:system("spawn", function() local e = W:create() P:add(e, 1, 1) V:add(e, 0, 0) end)
    local motion = require("ecs.motion")
    W:system("native", movers, motion.integrate("Position.x", "Velocity.dx:in", "Position.y", "Velocity.dy:in"))
    for _ = 1, 3 do W:update(1 / 60) end
    assert(W:remove_system("lua"))
    local _ = W:stats()
    W:reset_stats()
    W:destroy(es)
    W:update(0.1)
    assert(movers:count() >= 0)
    local again = W:query(L)
    for _ in again:entities() do end
  end,
  verify = function(ecs, W)
    local comps = {}
    for _, C in ipairs(W:components()) do comps[C.name] = C end
    local P, V = comps.Position, comps.Velocity
    if not (P and V) then return end
    local q = W:query(P, V)
    local n = 0
    for _ in q:entities() do n = n + 1 end
    assert(n == q:count())
    local e = W:create()
    P:add(e, 1, 1) V:add(e, 1, 1)
    assert(q:count() == n + 1)
    assert(q:apply("Position.x += 1") == n + 1)
    W:update(0.1)
  end,
}
