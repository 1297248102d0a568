--[[
replicate_wire.lua -- the framing of examples/replicate.lua over TCP
(LuaSocket): whole frames in and out of a connected socket, however the
kernel splits them, with a deadline on every frame so that a peer that
dies or stalls is an error, never a hang. The format is described in the
header comment of examples/replicate.lua.

  local wire = require("replicate_wire")
  wire.listen(port, backlog)             --> server socket, port (port 0: any free one)
  wire.accept(server, seconds)           --> socket or nil, err
  wire.connect(port, seconds)            --> socket (retries until the deadline) or nil, err
  wire.send(sock, kind, payload, secs)   --> bytes sent or nil, err
  wire.receive(sock, seconds)            --> kind, payload or nil, err
  wire.pack_hash(frame, hash), wire.unpack_hash(payload)  --> frame, hash
  wire.KIND                              the frame kinds by name
]]
local socket = require("socket")

local wire = {}

wire.HOST = "127.0.0.1" -- the loopback interface only
wire.KIND = {
  hello = "I",    -- server -> client: client number, frames, check interval
  snapshot = "S", -- server -> client: world:snapshot(), the base
  delta = "D",    -- server -> client: j:delta() of one frame
  hash = "H",     -- server -> client: frame number and world:state_hash()
  done = "E",     -- server -> client: frames sent and the final hash
  result = "R",   -- client -> server: the client's verdict, one line of text
}
local KNOWN = {}
for _, k in pairs(wire.KIND) do KNOWN[k] = true end

local HEADER = "<c1I4"      -- kind, payload length
local HEADER_SIZE = string.packsize(HEADER)
wire.MAX_PAYLOAD = 1 << 30  -- a larger length is a corrupt stream, not a frame

-- A per-call socket timeout short enough to check the deadline often.
local STEP = 0.25

function wire.listen(port, backlog)
  local server = assert(socket.tcp4())
  assert(server:setoption("reuseaddr", true))
  local ok, err = server:bind(wire.HOST, port)
  if not ok then server:close(); return nil, ("cannot bind %s:%d: %s"):format(wire.HOST, port, err) end
  ok, err = server:listen(backlog or 8)
  if not ok then server:close(); return nil, "cannot listen: " .. tostring(err) end
  local _, bound = server:getsockname()
  return server, math.tointeger(tonumber(bound))
end

local function tune(sock)
  sock:setoption("tcp-nodelay", true) -- hash frames are small: no Nagle delay
  sock:settimeout(STEP)
  return sock
end

function wire.accept(server, seconds)
  server:settimeout(seconds)
  local c, err = server:accept()
  if not c then return nil, err end
  return tune(c)
end

-- Connect to the server on the loopback interface, retrying (it may not be
-- listening yet) until `seconds` have passed.
function wire.connect(port, seconds)
  local deadline = socket.gettime() + seconds
  local last
  repeat
    local c = assert(socket.tcp4())
    c:settimeout(math.max(0.1, math.min(1, deadline - socket.gettime())))
    local ok, err = c:connect(wire.HOST, port)
    if ok then return tune(c) end
    c:close()
    last = err
    socket.sleep(0.05)
  until socket.gettime() >= deadline
  return nil, ("cannot connect to %s:%d within %gs: %s"):format(wire.HOST, port, seconds, tostring(last))
end

-- Send all of data: send may take only part of it, or time out with part sent.
local function send_all(sock, data, deadline)
  local i, n = 1, #data
  while i <= n do
    local last, err, partial = sock:send(data, i)
    if last then
      i = last + 1
    elseif err == "timeout" then
      i = partial + 1
      if socket.gettime() >= deadline then return nil, "timeout" end
    else
      return nil, err
    end
  end
  return n
end

-- Receive exactly n bytes (receive(n) may time out with part of them).
local function receive_all(sock, n, deadline)
  local parts, have = {}, 0
  while have < n do
    local data, err, partial = sock:receive(n - have)
    data = data or partial
    if data and #data > 0 then
      parts[#parts + 1] = data
      have = have + #data
    end
    if err then
      if err ~= "timeout" then return nil, err end
      if socket.gettime() >= deadline then return nil, "timeout" end
    end
  end
  return table.concat(parts)
end

function wire.send(sock, kind, payload, seconds)
  assert(KNOWN[kind], "unknown frame kind")
  payload = payload or ""
  local deadline = socket.gettime() + seconds
  -- header and payload in one call when small; a big payload is not copied
  if #payload < 65536 then
    return send_all(sock, string.pack(HEADER, kind, #payload) .. payload, deadline)
  end
  local ok, err = send_all(sock, string.pack(HEADER, kind, #payload), deadline)
  if not ok then return nil, err end
  ok, err = send_all(sock, payload, deadline)
  if not ok then return nil, err end
  return HEADER_SIZE + #payload
end

function wire.receive(sock, seconds)
  local deadline = socket.gettime() + seconds
  local header, err = receive_all(sock, HEADER_SIZE, deadline)
  if not header then return nil, err end
  local kind, n = string.unpack(HEADER, header)
  if not KNOWN[kind] then return nil, ("corrupt stream: unknown frame kind 0x%02x"):format(kind:byte()) end
  if n > wire.MAX_PAYLOAD then return nil, ("corrupt stream: a frame of %d bytes"):format(n) end
  local payload = ""
  if n > 0 then
    payload, err = receive_all(sock, n, deadline)
    if not payload then return nil, err end
  end
  return kind, payload
end

-- hash and done frames: the frame number (u32) and a state hash (i64)
function wire.pack_hash(frame, hash) return string.pack("<I4i8", frame, hash) end
function wire.unpack_hash(payload)
  if #payload ~= string.packsize("<I4i8") then return nil end
  return string.unpack("<I4i8", payload)
end

-- hello frames: the client's number, the frames to come, the check interval
function wire.pack_hello(client, frames, every) return string.pack("<I4I4I4", client, frames, every) end
function wire.unpack_hello(payload)
  if #payload ~= string.packsize("<I4I4I4") then return nil end
  return string.unpack("<I4I4I4", payload)
end

return wire
