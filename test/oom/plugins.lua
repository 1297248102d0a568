-- plugins.lua -- the C plugins (pointmass, mesh): creation, add, simulate,
-- remove, gc, alongside a generic component.
return function(ecs, W)
  local es = W:create(40)
  local PM = require("ecs.pointmass").new(W)
  for i = 10, 30 do PM:add(es[i], 1, i) end
  PM:simulate(0.1)
  local M = require("ecs.mesh").new(W)
  for i = 10, 30 do M:add(es[i], 1) M:add(es[i], 2) M:add(es[i], 3) end
  M:remove(es[10], 1)
  M:remove_all(es[11])
  W:destroy({ es[12], es[13], es[14] })
  PM:gc() M:gc()
  W:update(0.1)
  for i = 1, 40 do local e = W:create() PM:add(e, 2, -i) M:add(e, i) end
  PM:simulate(0.2)
  -- both managers as query terms: queries, bulk writes, a snapshot round trip
  local q = W:query(PM, M)
  q:apply("pointmass.x += pointmass.vx * 0.5 + mesh.count")
  for n, x, c in q:columns("pointmass.ax", "mesh.count:in") do
    for i = 1, n do x[i] = x[i] + c[i] end
  end
  W:query({ M, changed = { M } }):apply("mesh.mesh = mesh.mesh + 1")
  W:restore(W:snapshot())
  q:each(function(_, x) return x * 2 end, "pointmass.vy")
end
