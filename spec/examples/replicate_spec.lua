--[[
replicate_spec.lua -- examples/replicate.lua: the arena replicated over TCP
on the loopback interface with the journal. A server plays 300 frames and
sends j:delta() each frame to two client processes that only apply them;
both report every hash check equal and exit 0. Clients whose world was
changed behind the server's back (--tamper-at) fail with a clear message:
at the hash check of that frame, or at the next delta ("the world differs
from the delta's base"), while an honest client of the same server still
follows it to the end. Everything runs as child processes of lua5.4, with
the module of the build busted was pointed at (package.path, cpath).
Needs LuaSocket (Debian: lua-socket, installed by tools/setup.sh): without
it the tests are pending, with the reason printed.
]]
package.path = "examples/?.lua;examples/lib/?.lua;" .. package.path

local has_socket, socket_err = pcall(require, "socket")

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local SCRIPT = ("LUA_PATH=%s LUA_CPATH=%s lua5.4 examples/replicate.lua "):format(
  quote(package.path), quote(package.cpath))
local ENTITIES = 1000 -- a small arena: the replication is the subject, not the game

-- Start the script with args; returns the pipe (stdout and stderr).
local function start(args)
  return assert(io.popen(SCRIPT .. args .. " 2>&1", "r"))
end

-- The whole output and the exit status of a started script.
local function finish(p)
  local out = p:read("*a")
  local _, how, code = p:close()
  return out, how == "exit" and code or -1
end

local function run(args) return finish(start(args)) end

describe("examples/replicate.lua", function()
  if not has_socket then
    local why = "LuaSocket is not installed, so nothing can be replicated over TCP (require 'socket': " ..
      tostring(socket_err):match("^[^\n]*") .. "); on Debian: apt-get install lua-socket (tools/setup.sh does)"
    io.stderr:write("replicate_spec: ", why, "\n")
    pending(why)
    return
  end

  it("two client processes follow a 300-frame game: every hash check equal, exit status 0", function()
    local out, code = run(("demo --frames 300 --clients 2 --check-every 10 --entities %d"):format(ENTITIES))
    assert.equals(0, code, out)
    -- each client: all 300 deltas applied, 30 hash checks, the final hash
    local finals = {}
    for n = 1, 2 do
      local final = out:match("client " .. n .. ": 300 frames, 30 hash checks, all equal %(final hash (%x+)%)")
      assert.is_string(final, out)
      finals[n] = final
    end
    assert.matches("demo: process 1 %(client [^)]*%) exited with status 0:", out)
    assert.matches("demo: process 2 %(client [^)]*%) exited with status 0:", out)
    assert.matches("server: 2 of 2 clients report all hashes equal", out, 1, true)
    assert.matches("demo: every client followed the server exactly", out, 1, true)
    -- the server's summary: sizes, checks, and the same final hash
    local snap, avg, checks, final = out:match(
      "server: 300 frames in [%d.]+ s; snapshot (%d+) bytes, delta (%d+) bytes per frame on average " ..
      "%([^)]*%), (%d+) hash checks, final hash (%x+)")
    assert.is_string(snap, out)
    assert.is_true(tonumber(snap) > 0 and tonumber(avg) > 0)
    assert.equals("30", checks)
    assert.equals(final, finals[1])
    assert.equals(final, finals[2])
    assert.not_matches("MISMATCH", out)
    assert.not_matches("FAILED", out)
  end)

  it("a client whose world was changed detects it and exits 1; an honest one carries on", function()
    local server = start(("server --port 0 --clients 3 --frames 120 --check-every 10 --entities %d --timeout 20")
      :format(ENTITIES))
    local first = server:read("*l") or ""
    local port = first:match("^server: listening on 127%.0%.0%.1:(%d+)")
    if not port then
      local rest = server:read("*a")
      server:close()
      error("the server did not start: " .. first .. "\n" .. rest)
    end
    local clients = {
      at_check = start("client --timeout 20 --port " .. port .. " --tamper-at 50"), -- a hash check frame
      at_delta = start("client --timeout 20 --port " .. port .. " --tamper-at 77"), -- between checks
      honest = start("client --timeout 20 --port " .. port),
    }
    local out, code = {}, {}
    for k, p in pairs(clients) do out[k], code[k] = finish(p) end
    local sout, scode = finish(server)
    local all = table.concat({ first, sout, out.at_check, out.at_delta, out.honest }, "\n")

    -- tampered at frame 50: the hash check right after that frame's delta fails
    assert.equals(1, code.at_check, all)
    assert.matches("client %d: tampering: Position%.x of entity%([%d.]+%) %+1 at frame 50", out.at_check)
    assert.matches("client %d: MISMATCH at frame 50: state hash differs: server %x+, client %x+ " ..
      "%(this client changed its world at frame 50: %-%-tamper%-at%)", out.at_check)
    -- tampered at frame 77: the delta of frame 78 is refused (its base is not this world)
    assert.equals(1, code.at_delta, all)
    assert.matches("client %d: MISMATCH at frame 78: world:apply_delta: the world differs from the delta's base",
      out.at_delta)
    -- the honest client is not disturbed by the others' failures
    assert.equals(0, code.honest, all)
    assert.matches("client %d: 120 frames, 12 hash checks, all equal %(final hash %x+%)", out.honest)
    -- the server gives the failed clients up, finishes the game, and fails
    assert.equals(1, scode, all)
    assert.matches("server: 120 frames in", sout, 1, true)
    assert.matches("server: 1 of 3 clients report all hashes equal", sout, 1, true)
    local _, lost = sout:gsub("connection lost at frame", "")
    assert.is_true(lost >= 2, sout)
  end)

  it("a tampered client makes the demo fail, with the client's message", function()
    local out, code = run(("demo --frames 40 --clients 1 --check-every 10 --entities %d --tamper-at 33")
      :format(ENTITIES))
    assert.equals(1, code, out)
    assert.matches("demo: process 1 %(client [^)]*%-%-tamper%-at 33%) exited with status 1:", out)
    assert.matches("client 1: MISMATCH at frame 34: world:apply_delta: the world differs from the delta's base",
      out, 1, true)
    assert.matches("demo: FAILED", out, 1, true)
  end)

  it("refuses bad usage with status 2, and a client gives up when no server listens", function()
    local out, code = run("server --frames 10")
    assert.equals(2, code, out)
    assert.matches("server needs --port P", out, 1, true)
    out, code = run("client --port 1 --frames 3")
    assert.equals(2, code, out)
    assert.matches("--frames is not an option of client", out, 1, true)
    out, code = run("demo --frames x")
    assert.equals(2, code, out)
    assert.matches("--frames needs an integer >= 1", out, 1, true)
    -- a port nobody listens on: one the system just handed out and took back
    local s = assert(require("socket").tcp4())
    assert(s:bind("127.0.0.1", 0))
    local _, port = s:getsockname()
    s:close()
    out, code = run("client --connect-timeout 0.3 --port " .. port)
    assert.equals(1, code, out)
    assert.matches("client: cannot connect to 127.0.0.1:" .. port .. " within 0.3s", out, 1, true)
  end)
end)
