--[[
files.lua -- whole-file reads and writes for specs that make or check
files (built headers, save files): read(path) -> bytes, write(path, bytes),
exists(path) -> boolean. A failure to open raises with the path.
]]
local files = {}

function files.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

function files.write(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
end

function files.exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

return files
