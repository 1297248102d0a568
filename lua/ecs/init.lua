--[[
ecs -- a data-oriented Entity-Component-System with a C core.

This is the Lua front end over the C module `ecs.core`: everything the core
exports is re-exported here unchanged, and Lua-side helpers are added.
]]
local core = require("ecs.core")

local ecs = {}
for k, v in pairs(core) do ecs[k] = v end

ecs._VERSION = "ecs 0.1.0"

return ecs
