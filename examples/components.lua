--[[
components.lua -- component managers from Lua and two C plugins.
Run with ./demo.sh components (or, with the paths set up,
lua5.4 examples/components.lua).
]]
local ecs = require("ecs")

local world = ecs.world() -- closed at the end (5.4: local world <close> = ...)

-- A manager per component type; fields are typed columns in C.
local Position = world:component("Position", { "x:f32", "y:f32", "z:f32" })
local Health = world:component("Health", { "hp:i16", "max:i16" })
local Enemy = world:component("Enemy")                      -- a tag
local Brain = world:component("Brain", { "script:lua" })    -- any Lua value

local hero = world:create()
Position:add(hero, 0, 1, 0)
Health:add(hero, { hp = 100, max = 100 })
Brain:add(hero, function(self) return "thinking about " .. self end)

local orcs = world:create(1000)
for i, orc in ipairs(orcs) do
  Position:add(orc, i, 0, -i)
  Health:add(orc, 30, 30)
  Enemy:add(orc)
end
print(("%d with Position, %d enemies; hero at %.1f %.1f %.1f")
  :format(Position:count(), Enemy:count(), Position:get(hero)))
print(("hero's brain: %s"):format(Brain:field(hero, "script")("the orcs")))

-- Values are checked against the field types.
local ok, err = pcall(Health.set_field, Health, hero, "hp", 40000)
print("set hp to 40000: " .. tostring(ok) .. ", " .. err)

-- Destroyed entities vanish at once; their records are reclaimed lazily.
world:destroy({ (table.unpack or unpack)(orcs, 1, 500) }) -- luacheck: ignore 113 (5.1)
print(("after destroying 500 orcs: count %d, stored %d")
  :format(Enemy:count(), Enemy:size()))
for _ = 1, 20 do world:update(1 / 60) end         -- budgeted gc of every manager
print(("after 20 updates: stored %d"):format(Enemy:size()))

-- A C plugin with its own layout and a per-frame update in one C loop.
local PM = require("ecs.pointmass").new(world)
for i = 501, 1000 do
  PM:add(orcs[i], 80, i, 10, 0)                   -- mass, position
  PM:set_acceleration(orcs[i], 0, -9.81, 0)
end
for _ = 1, 60 do PM:simulate(1 / 60) end          -- one second
print(("orc 1000 fell to y = %.2f"):format(select(2, PM:position(orcs[1000]))))
print(("copied %d positions into Position in C"):format(PM:copy_positions(Position)))
print(("orc 1000's Position: %.1f %.2f %.1f"):format(Position:get(orcs[1000])))

-- A manager with several instances per entity (Bitsquid's next_instance).
local Mesh = require("ecs.mesh").new(world)
Mesh:add(hero, 7)
Mesh:add(hero, 9)
print("hero's meshes: " .. table.concat(Mesh:meshes(hero), ", "))
print(("world consistent: %s"):format(tostring(world:check())))
world:close()
