--[[
demo_save_spec.lua -- the arena (examples/arena.lua) saves and reloads: a
game saved at frame 60 and continued from its file for the remaining 60
frames ends exactly as the game that saved it (the same entities in the
same rows, every component value, point masses, transforms, names,
counters, image and digest); loading a missing, cut, garbled or foreign
file is a clear error; --save, --save-frame and --load work from the
command line. Like spec/examples/demo_spec.lua it runs in-process against whichever
build busted was pointed at, and once through the command line.
]]
package.path = "examples/?.lua;examples/lib/?.lua;" .. package.path
local ecs = require("ecs")
local arena = require("arena")
local png = require("png")

local OPTS = { entities = 5000, frames = 120, seed = 7 }
local AT = 60 -- the save frame
local COUNTERS = { "frame", "looted", "waves", "peak", "hits", "splits", "collected", "respawns" }

-- The digest of spec/examples/demo_spec.lua: counts and every collider's position.
local digest = require("spec.support.arena_digest")

-- Values as comparable data: entity handles become "e<id>".
local function plain(...)
  local t = table.pack(...)
  for i = 1, t.n do
    if ecs.is_entity(t[i]) then t[i] = "e" .. ecs.id(t[i]) end
  end
  return t
end

-- Everything the game's future depends on, as tables of plain data.
local function state(sim)
  local w, T, N, PM = sim.world, sim.world.transform, sim.world.names, sim.PM
  local s = { entities = {}, components = {}, pointmass = {}, transform = {}, names = {} }
  for e in w:entities() do
    local id = ecs.id(e)
    s.entities[#s.entities + 1] = id
    if PM:has(e) then
      s.pointmass[id] = { plain(PM:position(e)), plain(PM:velocity(e)) }
    end
    if T:has(e) then
      s.transform[id] = { plain(T:parent(e)), plain(T:local_position(e)), plain(T:local_rotation(e)),
        plain(T:world_position(e)) }
    end
    s.names[id] = N:get(e)
  end
  for name, c in pairs(sim.c) do
    local rows = {} -- in the manager's row order
    for e in c:entities() do rows[#rows + 1] = { ecs.id(e), plain(c:get(e)) } end
    s.components[name] = rows
  end
  s.counters = { spawned = sim.spawned, destroyed = sim.destroyed, loot_ids = sim.loot_ids }
  for _, k in ipairs(COUNTERS) do s.counters[k] = sim[k] end
  s.lua = sim.lua_state() -- the Lua side as a save writes it: RNG, timer wheels, counters...
  s.image = png.encode(arena.render(sim, 96))
  s.digest = digest(sim)
  return s
end

local function same_game(a, b)
  local sa, sb = state(a), state(b)
  assert.same(sa.entities, sb.entities)
  for name, rows in pairs(sa.components) do
    assert.equals(#rows, #sb.components[name], name)
    assert.same(rows, sb.components[name], name)
  end
  assert.same(sa.pointmass, sb.pointmass)
  assert.same(sa.transform, sb.transform)
  assert.same(sa.names, sb.names)
  assert.same(sa.counters, sb.counters)
  assert.same(sa.lua, sb.lua)
  assert.equals(sa.digest, sb.digest)
  assert.is_true(sa.image == sb.image, "the images differ")
end

local files = require("spec.support.files")
local read, write = files.read, files.write

-- The message arena.run / arena.read_save raise for a file (nil if none).
local function load_error(path, opts)
  opts = opts or {}
  opts.load_file, opts.frames = path, opts.frames or 1
  local ok, err = pcall(arena.run, opts)
  if ok then err.world:close(); return nil end
  return err
end

describe("the demo saves and reloads (examples/arena.lua)", function()
  local file = os.tmpname()
  local saver, loaded

  setup(function()
    saver = arena.run({ entities = OPTS.entities, frames = OPTS.frames, seed = OPTS.seed,
      save_file = file, save_frame = AT })
    loaded = arena.run({ load_file = file, frames = OPTS.frames - AT })
  end)
  teardown(function()
    saver.world:close()
    loaded.world:close()
    os.remove(file)
  end)

  it("continues a game saved at frame 60 exactly as the game that saved it", function()
    assert.equals(AT, saver.saved_frame)
    assert.equals(AT, loaded.start_frame)
    assert.equals(OPTS.frames, loaded.frame)
    assert.equals(OPTS.frames, saver.frame)
    -- the game is alive in these frames: things were born, died and looted after the save
    assert.is_true(saver.hits > 0 and saver.splits > 0 and saver.waves >= 2)
    assert.is_true(#saver.loot_ids > 0)
    same_game(saver, loaded)
    assert.is_true(loaded.world:check())
  end)

  it("plays exactly as a game that does not save, up to the save frame", function()
    local at_save = arena.run({ entities = OPTS.entities, frames = AT, seed = OPTS.seed })
    local path = os.tmpname()
    local saved_last = arena.run({ entities = OPTS.entities, frames = AT, seed = OPTS.seed,
      save_file = path }) -- default: at the last frame
    assert.equals(AT, saved_last.saved_frame)
    same_game(at_save, saved_last)
    -- a load of zero frames is the saved frame itself; the Lua state reads back as it was
    local back = arena.run({ load_file = path, frames = 0 })
    same_game(at_save, back)
    local st = arena.read_save(path).state
    assert.equals(AT, st.frame)
    assert.equals(OPTS.seed, st.seed)
    assert.equals(OPTS.entities, st.entities)
    assert.same(at_save.spawned, st.spawned)
    assert.same(at_save.loot_ids, st.loot_ids)
    for _, w in ipairs({ at_save, saved_last, back }) do w.world:close() end
    os.remove(path)
  end)

  it("saves a loaded game again, and goes on from that save too", function()
    local second = os.tmpname()
    local again = arena.run({ load_file = file, frames = OPTS.frames - AT, save_file = second,
      save_frame = 90 })
    local from_second = arena.run({ load_file = second, frames = OPTS.frames - 90 })
    assert.equals(90, from_second.start_frame)
    same_game(again, from_second)
    -- saving a loaded game at once writes the file it came from
    local resaved = os.tmpname()
    local same = arena.run({ load_file = file, frames = 0, save_file = resaved })
    assert.equals(AT, same.saved_frame)
    assert.is_true(read(file) == read(resaved), "re-saving a loaded game changes the file")
    for _, w in ipairs({ again, from_second, same }) do w.world:close() end
    os.remove(second)
    os.remove(resaved)
  end)

  it("writes the documented format", function()
    local data = read(file)
    local pos = 1
    local function line()
      local l, nxt = data:match("^([^\n]*)\n()", pos)
      pos = nxt
      return l
    end
    assert.equals("ecs-arena-save 1", line())
    local sections = {}
    for _, name in ipairs({ "snapshot", "grid", "state" }) do
      local n = tonumber(line():match("^" .. name .. " (%d+)"))
      sections[name] = data:sub(pos, pos + n - 1)
      pos = pos + n
      assert.equals("\n", data:sub(pos, pos))
      pos = pos + 1
    end
    assert.equals("end", line())
    assert.equals(#data + 1, pos)
    -- both world sections are snapshots a new world can be made of
    for _, name in ipairs({ "snapshot", "grid" }) do
      assert.equals("ECSS", sections[name]:sub(1, 4))
      local w = ecs.restore(sections[name])
      assert.is_true(w:count() > OPTS.entities / 2)
      w:close()
    end
    assert.matches("^{\nasteroid_target=%d+,\n", sections.state)
    assert.matches("\nrng=%-?%d+,\n", sections.state)
  end)

  it("refuses a missing, cut, garbled or foreign file with a clear error", function()
    local data = read(file)
    local bad = os.tmpname()
    local function with(bytes)
      write(bad, bytes)
      return load_error(bad)
    end
    local function expect(pattern, err)
      assert.is_string(err)
      assert.matches("^arena: ", err)
      assert.matches(pattern, err, 1, true)
    end
    expect("cannot open the save file", load_error(bad .. ".does-not-exist"))
    expect("not an arena save file", with(""))
    expect("not an arena save file", with("garbage\n" .. data:sub(9)))
    expect("not an arena save file", with(("\0\1\2\3 junk "):rep(1000)))
    expect("unsupported save format version 7", with("ecs-arena-save 7\n" .. data:sub(18)))
    -- cut anywhere: in every header line, at every section boundary, inside every section
    local snap_len = tonumber(data:match("\nsnapshot (%d+)\n"))
    local grid_at = data:find("\ngrid %d+\n")
    local state_at = data:find("\nstate %d+ %d+\n")
    local cuts = { 1, 10, 16, 17, 18, 25, 27, 28, 1000, snap_len // 2, grid_at - 1, grid_at,
      grid_at + 3, grid_at + 10, (grid_at + state_at) // 2, state_at, state_at + 5, state_at + 20,
      state_at + 40, #data - 200, #data - 5, #data - 4, #data - 1 }
    for _, cut in ipairs(cuts) do
      local err = with(data:sub(1, cut))
      assert.is_string(err, "a cut at " .. cut .. " loads")
      assert.matches("^arena: ", err)
      assert.is_truthy(err:find("truncated", 1, true) or err:find("corrupt", 1, true)
        or err:find("not an arena save file", 1, true), err)
    end
    expect("corrupt: 'end' expected", with(data .. "more"))
    -- a changed byte: in the state the checksum finds it, in a snapshot the engine's does
    local p = state_at + 40
    expect("the state section fails its checksum",
      with(data:sub(1, p - 1) .. string.char((data:byte(p) + 1) % 256) .. data:sub(p + 1)))
    for _, at in ipairs({ 1000, grid_at + 1000 }) do
      expect("invalid or truncated data",
        with(data:sub(1, at - 1) .. string.char((data:byte(at) ~ 0x20)) .. data:sub(at + 1)))
    end
    -- a state that is code, sealed with a correct checksum, is not run
    local function with_state(text)
      local adler_a, adler_b = 1, 0
      for i = 1, #text do adler_a = (adler_a + text:byte(i)) % 65521; adler_b = (adler_b + adler_a) % 65521 end
      return with(data:sub(1, state_at) .. ("state %d %d\n"):format(#text, (adler_b << 16) | adler_a)
        .. text .. "\nend\n")
    end
    expect("state: trailing text", with_state("{version=1} or os.exit(3)"))
    expect("state: unexpected '('", with_state("(function() os.exit(3) end)()"))
    expect("state: bad value 'os.exit'", with_state("{os.exit(3)}"))
    expect("state: repeated key", with_state("{version=1,version=1}"))
    expect("state: unsupported state version 2", with_state("{version=2}"))
    expect("state: rng is missing", with_state('{version=1,frame=1,entities=100,seed=0,["x"]=-0x1.8p+1}'))
    expect("state: tables nested too deep", with_state(("{"):rep(40) .. ("}"):rep(40)))
    -- sections from two different saves do not make a game
    local other = os.tmpname()
    arena.run({ entities = 300, frames = 5, seed = 1, save_file = other }).world:close()
    local odata = read(other)
    local mixed = odata:sub(1, odata:find("\nstate ")) .. data:sub(state_at + 1)
    expect("the state does not match the world", with(mixed))
    os.remove(other)
    -- nor a load that contradicts the file
    expect("the game was saved with entities 5000, not 4000", load_error(file, { entities = 4000 }))
    expect("the game was saved with seed 7, not 8", load_error(file, { seed = 8 }))
    assert.is_nil(load_error(file, { entities = 5000, seed = 7 }))
    os.remove(bad)
  end)

  it("refuses a save frame outside the run", function()
    local path = os.tmpname()
    for _, o in ipairs({ { frames = 10, save_frame = 11 }, { frames = 10, save_frame = -1 },
      { frames = 10, save_frame = 2.5 } }) do
      o.entities, o.save_file = 300, path
      local ok, err = pcall(arena.run, o)
      assert.is_false(ok)
      assert.matches("is not one of the frames 0..10 of this run", err, 1, true)
    end
    local ok, err = pcall(arena.run, { entities = 300, frames = 10, save_frame = 5 })
    assert.is_false(ok)
    assert.matches("save_frame needs save_file", err, 1, true)
    ok, err = pcall(arena.run, { load_file = file, frames = 10, save_file = path, save_frame = 59 })
    assert.is_false(ok)
    assert.matches("is not one of the frames 60..70 of this run", err, 1, true)
    os.remove(path)
  end)

  it("saves and loads from the command line", function()
    local env = ("LUA_PATH=%q LUA_CPATH=%q lua5.4 examples/arena.lua "):format(package.path, package.cpath)
    local function run(args)
      local p = assert(io.popen(env .. args .. " 2>&1"))
      local out = p:read("*a")
      local ok, _, code = p:close()
      return out, ok, code
    end
    local sav, img1, img2 = os.tmpname(), os.tmpname(), os.tmpname()
    local out, ok = run(("--frames 80 --entities 1500 --seed 5 --save %q --save-frame 40 --quiet " ..
      "--image %q --size 48"):format(sav, img1))
    assert.is_true(ok, out)
    assert.matches("saved frame 40 to " .. sav, out, 1, true)
    local out2, ok2 = run(("--load %q --frames 40 --quiet --image %q --size 48"):format(sav, img2))
    assert.is_true(ok2, out2)
    assert.matches("continued from frame 40 of a saved game", out2, 1, true)
    assert.matches("40 frames,", out2, 1, true)
    -- the same game at the end: the same census, counters and picture
    local function tail(s) return s:match("\n(alive: [^\n]*\n[^\n]*)\n") end
    assert.is_string(tail(out))
    assert.equals(tail(out), tail(out2))
    assert.equals(out:match("entities at the end, %d+ at peak"), out2:match("entities at the end, %d+ at peak"))
    assert.is_true(read(img1) == read(img2), "the images differ")
    -- and the same as the module's game
    local loaded_here = arena.run({ load_file = sav, frames = 40 })
    local sav2 = os.tmpname()
    local saved_here = arena.run({ entities = 1500, seed = 5, frames = 80, save_file = sav2,
      save_frame = 40 })
    same_game(saved_here, loaded_here)
    loaded_here.world:close()
    saved_here.world:close()
    -- errors: plain messages, no traceback, a failing exit status
    write(img2, "garbage")
    local out3, ok3 = run(("--load %q --frames 5"):format(img2))
    assert.is_falsy(ok3)
    assert.matches("arena: " .. img2 .. ": not an arena save file", out3, 1, true)
    assert.is_falsy(out3:find("traceback", 1, true))
    local out4, ok4 = run(("--load %q --entities 500"):format(sav))
    assert.is_falsy(ok4)
    assert.matches("--entities and --seed come from the save file", out4, 1, true)
    local out5, ok5 = run("--save-frame 3")
    assert.is_falsy(ok5)
    assert.matches("--save-frame needs --save FILE", out5, 1, true)
    local out6, ok6 = run("--save")
    assert.is_falsy(ok6)
    assert.matches("--save needs a file name", out6, 1, true)
    for _, f in ipairs({ sav, sav2, img1, img2 }) do os.remove(f) end
  end)
end)
