--[[
replicate.lua -- networked replication of the arena (examples/arena.lua)
with the journal: a server plays the game and sends each frame's changes
(j:delta()) over TCP on the loopback interface to client processes that
do not simulate at all: they restore the server's snapshot once, then
apply every delta, and check every K frames that their world's state
hash equals the server's.

  lua5.4 examples/replicate.lua demo [--clients N] [--frames F] [--check-every K]
        [--entities E] [--seed S] [--tamper-at FRAME] [--timeout SEC]
      the server in this process and N client processes (default 2) it
      starts itself (the same interpreter and script, on a free port);
      reports each client's result; exit status 0 when every client saw
      every hash equal. --tamper-at is passed to client 1 only.
  lua5.4 examples/replicate.lua server --port P [--clients N] [--frames F]
        [--check-every K] [--entities E] [--seed S] [--timeout SEC]
      listens on 127.0.0.1:P (0: any free port; the first line printed
      names it), waits for N clients (default 1), plays F frames (default
      300) and prints a summary: bytes sent, average delta vs snapshot size
  lua5.4 examples/replicate.lua client --port P [--tamper-at FRAME]
        [--timeout SEC] [--connect-timeout SEC]
      connects (retrying until the server listens), follows the server's
      world and prints "client 1: 300 frames, 30 hash checks, all equal
      (final hash ...)", exit status 0; or the first mismatch, status 1.
      --tamper-at FRAME changes one value of its world after applying that
      frame's delta, to show that the next check or delta catches it.

  ./demo.sh replicate demo --frames 300       (builds first, sets LUA_PATH)

Needs LuaSocket (Debian: lua-socket; tools/setup.sh installs it for the
tests), and LUA_PATH/LUA_CPATH as for the arena: the module (build/),
examples/?.lua (arena.lua) and examples/lib/?.lua (the helpers):
  LUA_PATH='build/?.lua;build/?/init.lua;examples/?.lua;examples/lib/?.lua;;' \
  LUA_CPATH='build/?.so;;' lua5.4 examples/replicate.lua demo

Defaults: 300 frames, a hash check every 10, 2000 entities, seed 1, a
30-second timeout on every network operation and 10 seconds to connect.

The game: the server plays the arena's frame 1, takes world:snapshot()
(the base), opens world:journal() right after it, then for frames 1..F
plays one arena frame and sends j:delta(). Frame numbers here count the
deltas (frame f is the arena's frame f + 1). Clients keep no game logic:
ecs.restore(snapshot) (after require("ecs.pointmass"), the plugin the
arena's world uses), then world:apply_delta(d) per frame. A client whose
world is not the delta's base gets an error from apply_delta ("the world
differs from the delta's base") and changes nothing; a hash check that
fails names both hashes. Both end the client with status 1.

The wire format: a stream of frames, in both directions the same framing:

  kind     1 byte   an ASCII letter (below)
  length   4 bytes  the payload's length, unsigned little-endian (< 2^30)
  payload  length bytes

  server -> client, in this order:
    I  hello     u32 client number (1..N), u32 frames F, u32 check interval K
    S  snapshot  world:snapshot() at the end of the arena's frame 1
    D  delta     j:delta() of frame f, for f = 1..F, in order
    H  hash      u32 frame f, i64 world:state_hash() after frame f's delta;
                 follows the D of every frame f with f % K == 0
    E  done      u32 F, i64 the final world:state_hash(); last frame
  client -> server, once, at the end (or before exiting on a mismatch):
    R  result    "1" or "0" (all equal, or not) then the client's report line

Integers are little-endian (string.pack "<I4", "<i8"). Frames are sent
whole: a short send or receive is continued until the frame is complete;
every frame must arrive within the timeout or the peer is given up
(a server carries on with its other clients).
]]
local has_socket, socket = pcall(require, "socket")
if not has_socket then
  io.stderr:write("replicate: needs LuaSocket (require 'socket' failed; on Debian: apt-get install lua-socket)\n",
    tostring(socket), "\n")
  os.exit(2)
end
local ecs = require("ecs")
require("ecs.pointmass") -- before ecs.restore: the arena's world has a point-mass manager
local wire = require("replicate_wire")
local K = wire.KIND

local function clean(err) -- an error without the Lua file and line in front
  return (tostring(err):gsub("^[^\n]-%.lua:%d+: ", ""))
end

local function hex(h) return ("%016x"):format(h) end

------------------------------------------------------------------- server

--[[
serve(o, listener) -> ok: accepts o.clients clients on listener, plays the
game and replicates it; ok is true when every client reported all equal.
]]
local function serve(o, listener)
  local play = require("replicate_arena")
  local clients, live = {}, 0
  for i = 1, o.clients do
    local c, err = wire.accept(listener, o.timeout)
    if not c then
      print(("server: %d of %d clients connected, then: %s"):format(i - 1, o.clients, tostring(err)))
      for _, cl in ipairs(clients) do cl.sock:close() end
      listener:close()
      return false
    end
    clients[i] = { n = i, sock = c, bytes = 0, alive = true }
    live = live + 1
  end
  listener:close()
  print(("server: %d client%s connected; %d frames of a %d-entity arena (seed %d), a hash check every %d"):format(
    o.clients, o.clients == 1 and "" or "s", o.frames, o.entities, o.seed, o.check_every))

  -- A client whose socket fails is given up; it may have said why first.
  local function lose(cl, frame, err)
    cl.alive = false
    live = live - 1
    local kind, line = wire.receive(cl.sock, 0.5)
    if kind == K.result then cl.report = line:sub(2) end
    cl.sock:close()
    cl.lost = ("connection lost at frame %d (%s)"):format(frame, tostring(err))
    print(("server: client %d: %s%s"):format(cl.n, cl.lost, cl.report and ": " .. cl.report or ""))
  end
  local function send_all(kind, payload, frame)
    for _, cl in ipairs(clients) do
      if cl.alive then
        local n, err = wire.send(cl.sock, kind, payload, o.timeout)
        if n then cl.bytes = cl.bytes + n else lose(cl, frame, err) end
      end
    end
  end

  local j
  local st = { snapshot = 0, deltas = 0, delta_bytes = 0, min = math.huge, max = 0, checks = 0 }
  local t0 = socket.gettime()
  local sim, stopped = play.run(o, function(world)
    local snap = world:snapshot()
    j = world:journal() -- right after the snapshot: the deltas start from it
    st.snapshot = #snap
    for _, cl in ipairs(clients) do
      local n, err = wire.send(cl.sock, K.hello, wire.pack_hello(cl.n, o.frames, o.check_every), o.timeout)
      if n then cl.bytes = cl.bytes + n else lose(cl, 0, err) end
    end
    send_all(K.snapshot, snap, 0)
    for _, cl in ipairs(clients) do cl.base_bytes = cl.bytes end
  end, function(frame, world)
    local d = j:delta()
    st.deltas, st.delta_bytes = st.deltas + 1, st.delta_bytes + #d
    st.min, st.max = math.min(st.min, #d), math.max(st.max, #d)
    send_all(K.delta, d, frame)
    if frame % o.check_every == 0 then
      send_all(K.hash, wire.pack_hash(frame, world:state_hash()), frame)
      st.checks = st.checks + 1
    end
    if live == 0 then play.stop(("every client was lost by frame %d"):format(frame)) end
  end)
  local seconds = socket.gettime() - t0

  if sim then
    local final = sim.world:state_hash()
    send_all(K.done, wire.pack_hash(o.frames, final), o.frames)
    st.final = final
    j:close()
    sim.world:close()
  else
    print("server: stopped: " .. stopped)
  end

  -- every client still connected reports its verdict
  local good = 0
  for _, cl in ipairs(clients) do
    if cl.alive then
      local kind, line = wire.receive(cl.sock, o.timeout)
      if kind == K.result then
        cl.report, cl.ok = line:sub(2), line:sub(1, 1) == "1"
      else
        cl.lost = "no result: " .. tostring(kind == nil and line or "frame " .. kind)
      end
      cl.sock:close()
    end
    if cl.ok then good = good + 1 end
  end

  local avg = st.deltas > 0 and st.delta_bytes / st.deltas or 0
  print(("server: %d frames in %.2f s; snapshot %d bytes, delta %.0f bytes per frame on average " ..
    "(%.1f%% of the snapshot; min %d, max %d), %d hash checks%s"):format(
    st.deltas, seconds, st.snapshot, avg, st.snapshot > 0 and 100 * avg / st.snapshot or 0,
    st.deltas > 0 and st.min or 0, st.max, st.checks, st.final and ", final hash " .. hex(st.final) or ""))
  for _, cl in ipairs(clients) do
    local per = st.deltas > 0 and cl.base_bytes and (cl.bytes - cl.base_bytes) / st.deltas or 0
    print(("server: client %d: sent %d bytes (%.0f per frame after the snapshot); %s"):format(
      cl.n, cl.bytes, per, cl.ok and "all equal" or (cl.lost or cl.report or "failed")))
  end
  print(("server: %d of %d clients report all hashes equal"):format(good, o.clients))
  return good == o.clients and sim ~= nil
end

------------------------------------------------------------------- client

local function client(o)
  local c, err = wire.connect(o.port, o.connect_timeout)
  if not c then
    print("client: " .. err)
    return false
  end
  local name, world, frame, checks, tampered = "client", nil, 0, 0, nil
  local function finish(ok, line)
    print(line)
    io.stdout:flush()
    wire.send(c, K.result, (ok and "1" or "0") .. line, ok and o.timeout or 1) -- best effort when failing
    c:close()
    if world then world:close() end
    return ok
  end
  -- what = "MISMATCH" (the worlds differ) or "FAILED" (the connection or the stream)
  local function fail(msg, what)
    if tampered then msg = msg .. (" (this client changed its world at frame %d: --tamper-at)"):format(tampered) end
    return finish(false, ("%s: %s at frame %d: %s"):format(name, what or "FAILED", frame, msg))
  end
  local expect -- the frames the hello announced
  while true do
    local kind, payload = wire.receive(c, o.timeout)
    if not kind then return fail("connection: " .. tostring(payload)) end
    if kind == K.hello then
      local n, frames = wire.unpack_hello(payload)
      if not n then return fail("protocol: a bad hello frame") end
      name, expect = "client " .. n, frames
    elseif kind == K.snapshot then
      if world or not expect then return fail("protocol: a snapshot out of place") end
      local ok, w = pcall(ecs.restore, payload)
      if not ok then return fail(clean(w)) end
      world = w
    elseif kind == K.delta then
      if not world then return fail("protocol: a delta before the snapshot") end
      frame = frame + 1
      local ok, e = pcall(world.apply_delta, world, payload)
      if not ok then return fail(clean(e), "MISMATCH") end
      if o.tamper_at == frame then
        -- one value of the world, behind the server's back: the first Position's x
        local P = world:find_component("Position")
        local victim
        for e1 in P:entities() do victim = victim or e1 end
        local x, y = P:get(victim)
        P:set(victim, x + 1, y)
        print(("%s: tampering: Position.x of %s +1 at frame %d"):format(name, ecs.tostring(victim), frame))
        tampered = frame
      end
    elseif kind == K.hash or kind == K.done then
      local f, h = wire.unpack_hash(payload)
      if not f or not world then return fail("protocol: a hash frame out of place") end
      if f ~= frame then
        return fail(("the server's frame %d is this client's frame %d"):format(f, frame))
      end
      local mine = world:state_hash()
      if mine ~= h then
        return fail(("state hash differs: server %s, client %s"):format(hex(h), hex(mine)), "MISMATCH")
      end
      if kind == K.done then
        if frame ~= expect then return fail(("%d frames announced, %d came"):format(expect, frame)) end
        return finish(true, ("%s: %d frames, %d hash checks, all equal (final hash %s)"):format(
          name, frame, checks, hex(h)))
      end
      checks = checks + 1
    else
      return fail("protocol: an unexpected frame " .. kind)
    end
  end
end

--------------------------------------------------------------------- demo

local function shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- The interpreter that runs this script (arg's lowest index), and the script.
local function self_command()
  local i = 0
  while arg[i - 1] ~= nil do i = i - 1 end
  return arg[i], arg[0]
end

local function demo(o)
  local listener, port = wire.listen(0, o.clients)
  if not listener then print("demo: " .. port); return false end
  local lua, script = self_command()
  print(("demo: server on %s:%d, starting %d client process%s"):format(wire.HOST, port, o.clients,
    o.clients == 1 and "" or "es"))
  io.stdout:flush()
  local procs, args = {}, {}
  for i = 1, o.clients do
    args[i] = { "client", "--port", port, "--timeout", o.timeout }
    if i == 1 and o.tamper_at then
      args[i][#args[i] + 1] = "--tamper-at"
      args[i][#args[i] + 1] = o.tamper_at
    end
    local cmd = { shell_quote(lua), shell_quote(script) }
    for _, v in ipairs(args[i]) do cmd[#cmd + 1] = shell_quote(v) end
    procs[i] = assert(io.popen(table.concat(cmd, " ") .. " 2>&1", "r"))
  end
  local ok = serve(o, listener)
  -- (the server numbers its clients in the order they connected)
  for i, p in ipairs(procs) do
    local out = p:read("*a")
    local exited, how, code = p:close()
    print(("demo: process %d (%s) %s %d:"):format(i, table.concat(args[i], " "),
      how == "exit" and "exited with status" or "was killed by signal", code))
    io.write((out:gsub("[^\n]+", "  %0")))
    if not exited then ok = false end
  end
  print(ok and "demo: every client followed the server exactly" or "demo: FAILED")
  return ok
end

---------------------------------------------------------------------- CLI

local USAGE = [[
usage: lua5.4 examples/replicate.lua demo   [--clients N] [--frames F] [--check-every K] [--entities E]
                                            [--seed S] [--tamper-at F] [--timeout SEC]
       lua5.4 examples/replicate.lua server --port P [--clients N] [--frames F] [--check-every K]
                                            [--entities E] [--seed S] [--timeout SEC]
       lua5.4 examples/replicate.lua client --port P [--tamper-at F] [--timeout SEC] [--connect-timeout SEC]
(see the header of examples/replicate.lua for the wire format)]]

-- option -> { key, kind, lower bound, modes }
local OPTIONS = {
  ["--port"] = { "port", "int", 0, { server = true, client = true } },
  ["--clients"] = { "clients", "int", 1, { server = true, demo = true } },
  ["--frames"] = { "frames", "int", 1, { server = true, demo = true } },
  ["--check-every"] = { "check_every", "int", 1, { server = true, demo = true } },
  ["--entities"] = { "entities", "int", 100, { server = true, demo = true } },
  ["--seed"] = { "seed", "int", 0, { server = true, demo = true } },
  ["--tamper-at"] = { "tamper_at", "int", 1, { client = true, demo = true } },
  ["--timeout"] = { "timeout", "num", 0.1, { server = true, client = true, demo = true } },
  ["--connect-timeout"] = { "connect_timeout", "num", 0.1, { client = true } },
}

local function parse(argv)
  local function usage(msg)
    io.stderr:write("replicate: ", msg, "\n", USAGE, "\n")
    os.exit(2)
  end
  local mode = argv[1]
  if mode == "--help" or mode == "-h" then print(USAGE); os.exit(0) end
  if mode ~= "server" and mode ~= "client" and mode ~= "demo" then
    usage(mode and ("unknown mode '" .. mode .. "'") or "server, client or demo expected")
  end
  local o = { mode = mode, clients = mode == "demo" and 2 or 1, frames = 300, check_every = 10,
    entities = 2000, seed = 1, timeout = 30, connect_timeout = 10 }
  local i = 2
  while i <= #argv do
    local a = argv[i]
    local spec = OPTIONS[a]
    if a == "--help" or a == "-h" then print(USAGE); os.exit(0) end
    if not spec then usage("unknown option " .. a) end
    if not spec[4][mode] then usage(a .. " is not an option of " .. mode) end
    local v = tonumber(argv[i + 1])
    if spec[2] == "int" then v = math.tointeger(v) end
    if not v or v < spec[3] then
      usage(("%s needs %s >= %s"):format(a, spec[2] == "int" and "an integer" or "a number", spec[3]))
    end
    o[spec[1]] = v
    i = i + 2
  end
  if mode ~= "demo" and o.port == nil then usage(mode .. " needs --port P") end
  return o
end

local function main(argv)
  local o = parse(argv)
  local ok
  if o.mode == "client" then
    ok = client(o)
  elseif o.mode == "server" then
    local listener, port = wire.listen(o.port, o.clients)
    if not listener then print("server: " .. port); os.exit(1) end
    print(("server: listening on %s:%d, waiting for %d client%s"):format(wire.HOST, port, o.clients,
      o.clients == 1 and "" or "s"))
    io.stdout:flush()
    ok = serve(o, listener)
  else
    ok = demo(o)
  end
  io.stdout:flush()
  os.exit(ok and 0 or 1)
end

main(arg or {})
