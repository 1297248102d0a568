--[[
replicate_arena.lua -- the arena game of examples/arena.lua, run frame by
frame for examples/replicate.lua's server: the same simulation (arena.run,
not a copy of it), with two hooks.

  local play = require("replicate_arena")
  play.run(opts, on_start, on_frame) --> sim (the caller closes sim.world)
    opts: entities, seed, frames (frames to replicate)
    on_start(world)        after the arena's frame 1: the replication's base
    on_frame(frame, world) after each of the next `frames` arena frames,
                           frame = 1..frames
  play.stop(why)           from a hook: ends the game early; run returns
                           nil, why (and closes the world)

How it reaches the world: arena.run hands its world out only when it
returns, and calls back only through opts.progress(frame) after each frame.
So run catches the world as arena.run creates it (ecs.world is wrapped
for that one call) and turns progress into the two hooks.
]]
local ecs = require("ecs")
local arena = require("arena")

local play = {}

local STOP = {} -- the error value of play.stop

function play.stop(why)
  error(setmetatable({ why = why }, STOP), 0)
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
