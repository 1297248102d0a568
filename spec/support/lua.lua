--[[
The Lua the specs run under, and what differs between the Luas ecs supports
(README "Lua versions"), for spec files in the common subset.
  lua.version   "5.1", "5.2", "5.3" or "5.4" (LuaJIT: "5.1")
  lua.jit       true under LuaJIT
  lua.command   the interpreter, for child processes ("lua5.1", "luajit" ...)
  lua.incdir    where its headers are (plugin builds), or nil
  lua.pack, lua.unpack, lua.move   table.pack, table.unpack, table.move
  lua.math_type(x)   math.type: "integer", "float" or nil (before 5.3 a
                     number is "integer" when it is integral)
  lua.tointeger(x)   math.tointeger (before 5.3: x when integral, else nil)
  lua.load(text, name, mode, env)   load with an environment (5.1: setfenv)
  lua.f32(x)         x rounded to the nearest f32
  lua.mininteger, lua.maxinteger   math's, or the nearest doubles before 5.3
  lua.gc_incremental(...)   collectgarbage("incremental", ...) where there
                     is one, else the 5.1 setpause/setstepmul; returns the
                     previous mode on 5.4 (else nil), for lua.gc_mode(mode)
  lua.finalizer(fn)  an object fn finalizes (5.1/LuaJIT: a newproxy)
  lua.random(m, n)   math.random over any integral range
]]
local M = {}
M.version = _VERSION:match("(%d+%.%d+)$") or "5.1"
M.jit = type(rawget(_G, "jit")) == "table"
-- the interpreter running busted: the lowest negative index of arg
do
  local cmd, i = nil, -1
  while arg and arg[i] ~= nil do cmd = arg[i]; i = i - 1 end
  M.command = cmd or (M.jit and "luajit" or "lua" .. M.version)
end
do
  local tag = M.jit and "luajit-2.1" or "lua" .. M.version
  M.incdir = "/usr/include/" .. tag
end
M.unpack = table.unpack or unpack -- luacheck: ignore 113 (5.1's global)
M.pack = table.pack or function(...) return { n = select("#", ...), ... } end
M.move = table.move or function(a1, f, e, t, a2)
  a2 = a2 or a1
  if e >= f then
    if t > f then
      for i = e - f, 0, -1 do a2[t + i] = a1[f + i] end
    else
      for i = 0, e - f do a2[t + i] = a1[f + i] end
    end
  end
  return a2
end
M.math_type = math.type or function(x)
  if type(x) ~= "number" then return nil end
  if x == math.floor(x) and x > -math.huge and x < math.huge then return "integer" end
  return "float"
end
M.tointeger = math.tointeger or function(x)
  if type(x) == "number" and x == math.floor(x) and x > -math.huge and x < math.huge then
    return x
  end
  return nil
end
-- load(text, name, mode, env) on every Lua (5.1: loadstring and setfenv)
M.load = function(text, name, mode, env)
  if not setfenv then return load(text, name, mode, env) end -- luacheck: ignore 113
  local f, err = loadstring(text, name) -- luacheck: ignore 113
  if f and env then setfenv(f, env) end -- luacheck: ignore 113
  return f, err
end
-- the nearest f32 (string.pack where there is one; else by math.frexp,
-- to nearest, ties to even; normal magnitudes)
M.f32 = string.pack and function(v) return (string.unpack("f", string.pack("f", v))) end
  or function(v)
    if v ~= v or v == 0 or v == math.huge or v == -math.huge then return v end
    local m, e = math.frexp(v) -- luacheck: ignore 143 (5.1-5.3 only: never reached on 5.4)
    local r = m * 2 ^ 24
    local fl = math.floor(r)
    local d = r - fl
    if d > 0.5 or (d == 0.5 and fl % 2 == 1) then fl = fl + 1 end
    return fl * 2.0 ^ (e - 24)
  end
-- the i64 extremes: before 5.3 the nearest doubles (-2^63 is exact, 2^63-1 is not)
M.mininteger = math.mininteger or -2 ^ 63
M.maxinteger = math.maxinteger or 2 ^ 63
function M.gc_incremental(pause, stepmul, stepsize)
  if M.version >= "5.4" then
    return collectgarbage("incremental", pause or 0, stepmul or 0, stepsize or 0)
  end
  if M.version == "5.2" and not M.jit then collectgarbage("incremental") end
  -- 0 leaves a setting as it is, as in 5.4; no step size before 5.4
  if pause and pause > 0 then collectgarbage("setpause", pause) end
  if stepmul and stepmul > 0 then collectgarbage("setstepmul", stepmul) end
  return nil
end
-- back to the mode gc_incremental returned (nothing to do before 5.4)
function M.gc_mode(mode)
  if mode then collectgarbage(mode) end
end
-- an object whose finalizer is fn (5.1 and LuaJIT run __gc for userdata
-- only: a newproxy there)
function M.finalizer(fn)
  local np = rawget(_G, "newproxy")
  if np and M.version == "5.1" then
    local p = np(true)
    getmetatable(p).__gc = fn
    return p
  end
  return setmetatable({}, { __gc = fn })
end
-- math.random(m, n) over any integral range (5.1 and 5.2 take ints only)
function M.random(m, n)
  if not m then return math.random() end
  if M.version >= "5.3" then
    if n then return math.random(m, n) end
    return math.random(m)
  end
  if not n then m, n = 1, m end
  return m + math.floor(math.random() * (n - m + 1))
end
return M
