--[[
tour.lua -- a short walk through what the library does today.
Run with ./demo.sh tour (or the paths set up: lua5.4 examples/tour.lua).
]]
local ecs = require("ecs")

local world = ecs.world() -- closed at the end (5.4: local world <close> = ...)

-- Entities are plain values: light userdata, usable as table keys.
local player = world:create()
local crowd = world:create(100000)          -- one call, 100k entities
print(("created %d entities; player is %s"):format(world:count(), ecs.tostring(player)))

-- Destroyed handles stay dead: indices are recycled FIFO once 1024 wait.
world:destroy(crowd)
print(("destroyed the crowd: %d alive; crowd[1] alive? %s")
  :format(world:count(), tostring(world:alive(crowd[1]))))
local again = world:create(2000)
local reused = 0
for _, e in ipairs(again) do
  if ecs.generation(e) > 0 then reused = reused + 1 end
end
print(("created 2000 more: %d reuse an old index with a new generation"):format(reused))

-- A stale handle never aliases the new entity at the same index.
for _, e in ipairs(again) do
  if ecs.index(e) == ecs.index(crowd[1]) then
    print(("%s is dead; %s took its index and is alive: %s")
      :format(ecs.tostring(crowd[1]), ecs.tostring(e), tostring(world:alive(e))))
  end
end
assert(world:check())
world:close()
