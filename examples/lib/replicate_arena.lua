--[[
replicate_arena.lua -- the arena game of examples/arena.lua, run frame by
frame for examples/replicate.lua's server: the same simulation (arena.run,
not a copy of it), with two hooks.

  local play = require("replicate_arena")
  play.run(opts, on_start, on_frame) --> sim (the caller closes sim.world)
    opts: entities, seed, frames (frames to replicate), unpatched_thrust
    on_start(world)        after the arena's frame 1: the replication's base
    on_frame(frame, world) after each of the next `frames` arena frames,
                           frame = 1..frames
  play.stop(why)           from a hook: ends the game early; run returns
                           nil, why (and closes the world)

How it reaches the world: arena.run hands its world out only when it
returns, and calls back only through opts.progress(frame) after each frame.
So run catches the world as arena.run creates it (ecs.world is wrapped
for that one call) and turns progress into the two hooks.

The thrust patch (the library bug this example found): ecs.pointmass's
PM:copy_positions(Position) writes Position's columns directly without
telling an open journal (ecs_component_prewrite), so deltas miss the ships'
moves and the server's state hash goes stale with them. Until the plugin
is fixed, run replaces the arena's "thrust" system, after frame 1 and
before the journal opens, by the same work through Position:set (the same
f32 values, so the same game: the arena digest is unchanged).
opts.unpatched_thrust keeps the arena's own system, to show the bug.
]]
local ecs = require("ecs")
local pointmass = require("ecs.pointmass")
local arena = require("arena")

local play = {}

local STOP = {} -- the error value of play.stop

function play.stop(why)
  error(setmetatable({ why = why }, STOP), 0)
end

local function patch_thrust(world)
  local PM = pointmass.new(world) -- the world's one manager (created by the arena)
  local Position = world:find_component("Position")
  local ships = world:query(world:find_component("Ship"))
  world:replace_system("thrust", ships, function(dt)
    PM:simulate(dt)
    for e in ships:entities() do
      if PM:has(e) and Position:has(e) then
        local x, y = PM:position(e)
        Position:set(e, x, y)
      end
    end
  end)
end

function play.run(opts, on_start, on_frame)
  local real = ecs.world
  local world
  ecs.world = function(...)
    ecs.world = real
    world = real(...)
    return world
  end
  local ok, sim = pcall(arena.run, {
    entities = opts.entities, seed = opts.seed, frames = opts.frames + 1,
    progress = function(f)
      if f == 1 then
        if not opts.unpatched_thrust then patch_thrust(world) end
        on_start(world)
      else
        on_frame(f - 1, world)
      end
    end,
  })
  ecs.world = real
  if ok then return sim end
  if world then world:close() end
  if getmetatable(sim) == STOP then return nil, sim.why end
  error(sim, 0)
end

return play
