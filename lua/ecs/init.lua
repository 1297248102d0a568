--[[
ecs -- a data-oriented Entity-Component-System with a C core.

This is the Lua front end over the C module `ecs.core`: everything the core
exports is re-exported here unchanged, and Lua-side helpers are added.
]]
-- the file this was loaded from: require's second argument (5.4), else the
-- chunk's source (Lua 5.1-5.3 and LuaJIT pass the module name only)
local _, file = ...
if type(file) ~= "string" and debug and debug.getinfo then
  local src = debug.getinfo(1, "S").source
  file = type(src) == "string" and src:match("^@(.*)$") or nil
end
local core = require("ecs.core")

local ecs = {}
for k, v in pairs(core) do ecs[k] = v end

ecs._VERSION = "ecs 0.1.0"

-- The directory of the public C headers, for building plugins: include/
-- next to this file (where the rockspec and the CMake build put them), or
-- nil when this file was not loaded from a file or has no headers beside it.
do
  local dir = type(file) == "string" and file:match("^(.*)[/\\]init%.lua$")
  local h = dir and io and io.open(dir .. "/include/ecs_plugin.h", "rb")
  if h then
    h:close()
    ecs.include_dir = dir .. "/include"
  end
end

return ecs
