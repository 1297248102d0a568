--[[
arena_digest.lua -- a digest of an arena game's state (examples/arena.lua),
for the demo specs: counts and the sum of every collider's position.
Usage: local digest = require("spec.support.arena_digest"); digest(sim)
]]
return function(sim)
  local q = sim.queries.colliders
  local sx, sy, n = 0, 0, 0
  for m, x, y in q:columns("Position.x:in", "Position.y:in") do
    for i = 1, m do sx = sx + x[i]; sy = sy + y[i] end
    n = n + m
  end
  return ("%d %.6f %.6f %d %d %d"):format(n, sx, sy, sim.world:count(), sim.looted, sim.hits)
end
