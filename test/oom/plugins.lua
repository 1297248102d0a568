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
end
