--[[
gc_stress.lua -- busted helper (RELIABILITY R26): `busted --helper=spec/support/gc_stress.lua`
with ECS_GC_STRESS set runs every spec with the garbage collector at its
most aggressive, which is what finds a Lua value held by C that is not
reachable from its world, or a finalizer that runs too early:
  ECS_GC_STRESS=incremental   incremental mode, pause 0 (a new cycle starts
                              at once), step multiplier 1000 (each step
                              does a lot of work): close to stop-the-world
  ECS_GC_STRESS=generational  generational mode with minor and major
                              multipliers at their minimum
In both modes a full collection also runs after every test (as luv's TAP
harness does). Without the variable the helper does nothing.
]]
local mode = os.getenv("ECS_GC_STRESS")
if mode == nil or mode == "" then return end

if mode == "incremental" then
  collectgarbage("incremental")
  collectgarbage("setpause", 0)
  collectgarbage("setstepmul", tonumber(os.getenv("ECS_GC_STEPMUL")) or 1000)
elseif mode == "generational" then
  collectgarbage("generational", 1, 1)
else
  error("ECS_GC_STRESS must be incremental or generational, got " .. mode)
end

local busted = require("busted")
busted.subscribe({ "test", "end" }, function()
  collectgarbage()
  collectgarbage()
  return nil, true
end)
