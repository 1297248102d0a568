-- changes.lua -- change detection: queries with changed and added terms
-- (their stamp arrays), passes over them by every path (entities, columns,
-- each, apply, count, systems) while the watched managers grow, lose rows
-- and are restored, and the queries freed.
return {
  run = function(ecs, W)
    local P = W:component("Position", { "x:f32", "y:f64" })
    local V = W:component("Velocity", { "dx:f32" })
    local moved = W:query({ P, changed = { P } })
    local fresh = W:query({ P, added = { V } })
    local both = W:query({ P, V, changed = { P, V }, added = { V } })
    local es = W:create(40)
    for i, e in ipairs(es) do
      P:add(e, i, -i)
      if i % 2 == 0 then V:add(e, 1) end
    end
    for _ in moved:entities() do end
    for _ in fresh:entities() do end
    for i = 1, 40, 3 do P:set_field(es[i], "x", i) end
    assert(moved:count() >= 0)
    for e in moved:entities() do
      if P:field(e, "x") > 30 then W:destroy(e) end
    end
    for n, x in moved:columns("Position.x") do
      for i = 1, n do x[i] = x[i] + 1 end
    end
    moved:each(function(_, x) return x * 2 end, "Position.x")
    both:apply("Position.x += Velocity.dx")
    W:spawn(30, { Position = { 1, 2 }, Velocity = { 3 } })
    W:system("move", both, "Position.x += Velocity.dx * dt")
    W:system("seen", moved, function(_, q) for _ in q:entities() do end end)
    for _ = 1, 3 do W:update(1 / 60) end
    local blob = W:snapshot()
    W:restore(blob)
    assert(fresh:count() >= 0)
    for _ in both:entities() do end
    local again = W:query({ V, changed = { V } })
    P:set_many(W:query(P):count() > 0 and { es[2], es[4] } or {}, "x", 5)
    for _ in again:entities() do end
  end,
  verify = function(ecs, W)
    local comps = {}
    for _, C in ipairs(W:components()) do comps[C.name] = C end
    local P = comps.Position
    if not P then return end
    local q = W:query({ P, changed = { P } })
    local n = 0
    for _ in q:entities() do n = n + 1 end
    assert(n == P:count())
    assert(q:count() == 0)
    local e = W:create()
    P:add(e, 1, 1)
    assert(q:count() == 1)
    for x in q:entities() do assert(x == e) end
    assert(q:count() == 0)
  end,
}
