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
-- The C module. One built for another Lua fails to load (the dynamic
-- linker finds a C API function this Lua lacks, such as lua_absindex in a
-- 5.4 build loaded by 5.1, or luaL_checkversion stops it): say so, with
-- what to do, instead of the linker's words alone.
local loaded, core = pcall(require, "ecs.core")
if not loaded then
  local why = tostring(core)
  if why:find("undefined symbol", 1, true) or why:find("version mismatch", 1, true) or
     why:find("Symbol not found", 1, true) or why:find("procedure could not be found", 1, true) then
    local v = tostring(_VERSION):match("%d+%.%d+") or "?"
    error(("ecs: the C module ecs.core was built for another Lua than this one (%s%s): rebuild "
      .. "it for this one (luarocks --lua-version=%s make, or cmake -DECS_LUA=%s); the loader "
      .. "said: %s"):format(_VERSION, rawget(_G, "jit") and ", LuaJIT" or "", v,
      rawget(_G, "jit") and "luajit" or v, why), 2)
  end
  error(core, 2)
end

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
