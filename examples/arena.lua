--[[
arena.lua -- the demo: a headless, deterministic arena game on the ecs.

A space station defends itself, with a few named ships and a swarm of
drones, against waves of raiders crossing a field of drifting asteroids.
Bullets chip asteroids (big ones split in two), hit ships, and a raider
that dies is looted: the same entity, keeping its id, loses its enemy
components and becomes a pickup that defenders collect for repairs.

  lua5.4 examples/arena.lua [--frames N] [--entities N] [--seed S]
                            [--image FILE] [--size PX] [--quiet]
                            [--save FILE] [--save-frame F] [--load FILE]
  ./demo.sh                 (builds, then runs this with --image arena.png)

Save and load: `--save FILE` writes the game as it stands at the end of
frame F (--save-frame F, default the last frame played), then plays on
from what it wrote; `--load FILE --frames N` continues a saved game for N
more frames exactly as the game that saved it went on (same entities,
component values, counters, image). Frame numbers count from the start of
the game, also after a load. Entities and seed come from the file
(--entities and --seed are refused with --load). A game that saves plays
the same as one that does not up to the save frame, then its own (also
deterministic) way: see restore_world for why.

The save file, format version 1 (lengths are decimal byte counts):

  ecs-arena-save 1\n                  magic and format version
  snapshot <n>\n <n bytes> \n         world:snapshot() at the end of frame F
  grid <n>\n <n bytes> \n             world:snapshot() in frame F just before
                                      the grid build (empty when F is 0)
  state <n> <adler32>\n <n bytes> \n  the Lua state (below); adler32 of its bytes
  end\n                               the end of the file

The grid section exists because the grid is state too: ai and fire read
the grid built in the previous frame (some of its entities dead or moved
since) and the grid plugin has no save of its own, so a load restores that
snapshot, builds the grid from it, then restores the end of the frame.
The state is a Lua table constructor: the format version, entities, seed,
frame, the RNG state, sim's counters (spawned, destroyed, looted, loot_ids,
waves, peak, hits, splits, collected, respawns), asteroid_target, the
station and the monolith, and the non-empty slots of both timer wheels;
entities as ecs.id numbers. It holds only integers (%d), floats (%a, every
bit), strings (%q), booleans and tables of these, and is read back by a
small parser of exactly that: nothing in the file is run. Everything is
checked on reading: a missing, truncated, garbled or foreign file raises
"arena: FILE: what is wrong".

What runs where:
  C, per entity:  move, spin, regen, cooldown (q:apply expression systems);
                  thrust (the ecs.pointmass plugin integrates ship point
                  masses and copies them into Position); grid (the ecs.grid
                  plugin bins every collider and finds overlapping pairs).
  Lua, per event: waves, ai, fire, collide (damage, death, loot), expire.
  Entity fields clean up after themselves: Turret.target and Bullet.owner
  are "entity!clear", so the dead are never pointed at.

As a module (the spec uses this): require("arena").run(options) runs the
simulation and returns its state: the world (still open), the managers,
the counters and the per-system profile. arena.read_save(file) reads and
checks a save file without running anything.
]]
local ecs = require("ecs")
local grid_lib = require("ecs.grid")
local pointmass = require("ecs.pointmass")

local arena = {}

-- Collider layers; a collider's mask says which layers it sees (grid.c).
local AST, ENEMY, DEF, EBUL, DBUL, PICK = 1, 2, 4, 8, 16, 32
arena.layers = { asteroid = AST, enemy = ENEMY, defender = DEF,
  enemy_bullet = EBUL, defender_bullet = DBUL, pickup = PICK }

local DT = 1 / 60
local BULLET_TTL, PICKUP_TTL = 90, 600 -- frames
local WHEEL = require("arena_save").WHEEL -- timer wheel slots (> both TTLs)

-- xorshift64: a small PRNG of our own, so a seed means the same game everywhere.
-- Returns rand(lo, hi) and the state's accessor: state() reads it (a non-zero
-- integer), state(s) sets it (for save and load).
local function new_rng(seed)
  local s = (seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) | 1
  local function next01()
    s = s ~ (s << 13); s = s ~ (s >> 7); s = s ~ (s << 17)
    return ((s >> 11) & 0x1FFFFFFFFFFFFF) / 9007199254740992.0
  end
  local function state(v)
    if v ~= nil then
      assert(math.type(v) == "integer" and v ~= 0, "rng state must be a non-zero integer")
      s = v
    end
    return s
  end
  return function(lo, hi) return lo + (hi - lo) * next01() end, state
end

local function clock() return os.clock() end

------------------------------------------------------------------ save files
-- examples/lib/arena_save.lua: the file layout, the state's text, its checks.
local save_file = require("arena_save")
local SAVE_VERSION, KINDS, write_save = save_file.VERSION, save_file.KINDS, save_file.write
arena.read_save = save_file.read

--[[
arena.run(opts) -> sim
opts: frames (900), entities (100000), seed (1), progress (function(frame,
frames) or nil), and for save and load:
  save_file   write the game to this file at the end of frame save_frame
  save_frame  a frame number from the start of the game (default: the last
              frame this run plays); the run plays on after saving
  load_file   continue the game saved in this file: frames more frames; its
              entities and seed are the file's (others given raise)
The caller closes sim.world. Errors about save files raise "arena: ...".
sim.lua_state() returns the Lua state a save would write now (a table that
shares sim's spawned, destroyed and loot_ids tables).
]]
function arena.run(opts)
  opts = opts or {}
  local saved = opts.load_file and arena.read_save(opts.load_file)
  local old = saved and saved.state -- the Lua state of the saved game
  if old then
    for _, k in ipairs({ "entities", "seed" }) do
      if opts[k] ~= nil and opts[k] ~= old[k] then
        error(("arena: %s: the game was saved with %s %d, not %s"):format(
          opts.load_file, k, old[k], tostring(opts[k])), 0)
      end
    end
  end
  local frames = opts.frames or 900
  local target = old and old.entities or opts.entities or 100000
  local seed = old and old.seed or opts.seed or 1
  local rand, rng_state = new_rng(seed)
  local start = old and old.frame or 0 -- the frame the game is at before this run
  if opts.save_frame ~= nil and not opts.save_file then error("arena: save_frame needs save_file", 0) end
  local save_at = opts.save_file and (opts.save_frame or start + frames)
  if save_at and not (math.type(save_at) == "integer" and save_at >= start and save_at <= start + frames) then
    error(("arena: the save frame %s is not one of the frames %d..%d of this run"):format(
      tostring(save_at), start, start + frames), 0)
  end

  -- The arena grows with the population: about one entity per 160 square units.
  local W = math.max(512, math.floor(math.sqrt(target * 160) / 64 + 0.5) * 64)
  local H = W
  local CX, CY = W / 2, H / 2

  local world = ecs.world()
  local T, N = world.transform, world.names
  local PM = pointmass.new(world)
  local grid = grid_lib.new(16, W, H)

  -- Components (structure of arrays in C).
  local Position = world:component("Position", { "x:f32", "y:f32" })
  local Velocity = world:component("Velocity", { "dx:f32", "dy:f32" })
  local Spin = world:component("Spin", { "angle:f32", "rate:f32" })
  local Health = world:component("Health", { "hp:f32", "max:f32", "regen:f32" })
  local Collider = world:component("Collider", { "r:f32", "layer:u8", "mask:u8" })
  local Asteroid = world:component("Asteroid", { "size:u8" })
  local Ship = world:component("Ship", { "kind:u8", "speed:f32", "phase:f32" })
  local Station = world:component("Station")
  local Turret = world:component("Turret",
    { "cooldown:f32", "rate:f32", "range:f32", "damage:f32", "team:u8", "target:entity!clear" })
  local Bullet = world:component("Bullet", { "damage:f32", "owner:entity!clear" })
  local Pickup = world:component("Pickup", { "value:f32" })
  local Enemy = world:component("Enemy")
  local Defender = world:component("Defender")

  -- Queries.
  local q = {
    movers = world:query(Position, Velocity),
    spinners = world:query(Spin),
    health = world:query(Health),
    turrets = world:query(Turret),
    aimed = world:query(Turret, T),     -- turrets with their world positions
    ships = world:query(Ship),
    placed_ships = world:query(Ship, Position, T),
    enemies = world:query(Enemy, Ship),
    bullets = world:query(Bullet),
    asteroids = world:query(Asteroid, Position),
    pickups = world:query(Pickup, Position),
    colliders = world:query(Collider, Position),
  }

  local sim = {
    world = world, W = W, H = H, frame = start, frames = frames, target = target,
    seed = seed, start_frame = start,
    grid = grid, PM = PM, queries = q,
    c = { Position = Position, Velocity = Velocity, Spin = Spin, Health = Health,
      Collider = Collider, Asteroid = Asteroid, Ship = Ship, Station = Station,
      Turret = Turret, Bullet = Bullet, Pickup = Pickup, Enemy = Enemy,
      Defender = Defender },
    -- counters by kind: spawned + converted in - converted out - destroyed = alive
    spawned = { asteroid = 0, enemy = 0, defender = 0, turret = 0, bullet = 0, pickup = 0 },
    destroyed = { asteroid = 0, enemy = 0, defender = 0, turret = 0, bullet = 0, pickup = 0 },
    looted = 0,           -- enemies turned into pickups (converted enemy -> pickup)
    loot_ids = {},        -- ecs.id of every looted entity, in order
    waves = 0, peak = 0, hits = 0, splits = 0, collected = 0, respawns = 0,
  }
  local spawned, destroyed = sim.spawned, sim.destroyed

  ----------------------------------------------------------------- spawning
  local function add_body(e, x, y, r, layer, mask, hp, regen)
    Position:add(e, x, y)
    Collider:add(e, r, layer, mask)
    if hp then Health:add(e, hp, hp, regen or 0) end
  end

  local function spawn_asteroids(n, edge)
    if n <= 0 then return end
    local es = world:create(n)
    for i = 1, n do
      local e = es[i]
      local size = math.floor(rand(1, 4))
      local x, y = rand(0, W), rand(0, H)
      if edge then if rand(0, 1) < 0.5 then x = 0 else y = 0 end end
      local a, v = rand(0, 2 * math.pi), rand(5, 30) / size
      add_body(e, x, y, 1.5 * size, AST, 0, 8 * size)
      Velocity:add(e, v * math.cos(a), v * math.sin(a))
      Spin:add(e, rand(0, 6.28), rand(-2, 2))
      Asteroid:add(e, size)
    end
    spawned.asteroid = spawned.asteroid + n
  end

  -- A ship with its turrets as transform children (offsets in ship space).
  local function spawn_ship(team, kind, x, y, hp, speed, offsets, turret)
    local e = world:create()
    local tag = team == ENEMY and Enemy or Defender
    local mask = team == ENEMY and AST or (AST | PICK)
    add_body(e, x, y, kind == 2 and 24 or (kind == 1 and 8 or 4), team, mask, hp, hp / 60)
    tag:add(e)
    T:add(e, { position = { x, y, 0 } })
    if kind == 2 then
      Station:add(e)
    else
      Ship:add(e, kind, speed, rand(0, 2 * math.pi))
      PM:add(e, kind == 1 and 40 or 4, x, y, 0)
    end
    local ts = world:create(#offsets)
    for i, off in ipairs(offsets) do
      local t = ts[i]
      T:add(t, { position = { off[1], off[2], 0 } })
      T:set_parent(t, e)
      Turret:add(t, rand(0, 1 / turret.rate), turret.rate, turret.range, turret.damage,
        team, ecs.null)
    end
    local key = team == ENEMY and "enemy" or "defender"
    spawned[key] = spawned[key] + 1
    spawned.turret = spawned.turret + #offsets
    return e
  end

  local ENEMY_GUN = { rate = 0.8, range = 260, damage = 4 }
  local BOSS_GUN = { rate = 2, range = 320, damage = 6 }
  local DEF_GUN = { rate = 2.5, range = 300, damage = 6 }
  local STATION_GUN = { rate = 4, range = 360, damage = 8 }
  local PAIR = { { 0, 3 }, { 0, -3 } }
  local RING = {}
  for i = 0, 7 do RING[#RING + 1] = { 22 * math.cos(i * math.pi / 4), 22 * math.sin(i * math.pi / 4) } end
  local HERO = { { 4, 0 }, { 0, 3 }, { 0, -3 } }
  local ONE = { { 2, 0 } }

  local max_enemies = math.max(20, target // 50)
  local drones = math.max(4, target // 1000)
  local wave_size = math.max(5, target // 400)

  local function spawn_wave()
    sim.waves = sim.waves + 1
    -- raiders warp in on an arc around the station, then close in
    local heading = rand(0, 2 * math.pi)
    local room = max_enemies - Enemy:count()
    local n = math.min(wave_size, room)
    for i = 1, n do
      local a, d = heading + rand(-0.6, 0.6), math.min(rand(500, 800), W * rand(0.3, 0.45))
      local x, y = CX + d * math.cos(a), CY + d * math.sin(a)
      if i == 1 and sim.waves % 5 == 0 then
        local boss = spawn_ship(ENEMY, 1, x, y, 400, 35, RING, BOSS_GUN)
        N:set(boss, "boss")
      else
        spawn_ship(ENEMY, 0, x, y, 60, rand(50, 80), PAIR, ENEMY_GUN)
      end
    end
  end

  local function spawn_defender(name)
    local a = rand(0, 2 * math.pi)
    local x, y = CX + 60 * math.cos(a), CY + 60 * math.sin(a)
    local e
    if name == "hero" then
      e = spawn_ship(DEF, 0, x, y, 300, 70, HERO, DEF_GUN)
    else
      e = spawn_ship(DEF, 0, x, y, 60, rand(50, 70), ONE, DEF_GUN)
    end
    if name then N:set(e, name) end
    return e
  end

  -- The initial state: the station, named ships, drones, a first wave, asteroids
  -- (a load puts back a saved state instead, below).
  local station, monolith, asteroid_target
  if not old then
    station = spawn_ship(DEF, 2, CX, CY, 20000, 0, RING, STATION_GUN)
    N:set(station, "station")
    for _, name in ipairs({ "hero", "wing-1", "wing-2", "wing-3" }) do spawn_defender(name) end
    for _ = 1, drones do spawn_defender(nil) end
    spawn_wave()
    monolith = world:create()
    add_body(monolith, CX + W / 4, CY - H / 5, 40, AST, 0, 1e6)
    Asteroid:add(monolith, 3)
    Spin:add(monolith, 0, 0.1)
    N:set(monolith, "monolith")
    spawned.asteroid = spawned.asteroid + 1
    spawn_asteroids(math.max(0, target - world:count()), false)
    asteroid_target = Asteroid:count()
  end

  ------------------------------------------------------------------ systems
  -- Native per-entity math: compiled once, run over the matches in C.
  world:system("move", q.movers,
    "Position.x += Velocity.dx * dt; Position.y += Velocity.dy * dt;" ..
    "Position.x = Position.x % W; Position.y = Position.y % H",
    { W = W, H = H })
  world:system("spin", q.spinners,
    "Spin.angle += Spin.rate * dt; Spin.angle = Spin.angle % tau",
    { tau = 2 * math.pi })
  world:system("regen", q.health, "Health.hp = min(Health.hp + Health.regen * dt, Health.max)")
  world:system("cooldown", q.turrets, "Turret.cooldown = max(Turret.cooldown - dt, 0)")

  -- Waves of raiders every two seconds; asteroids drift in to refill the field;
  -- fallen named defenders come back.
  world:system("waves", function()
    if sim.frame % 120 == 0 then spawn_wave() end
    local missing = asteroid_target - Asteroid:count()
    if missing > 0 then spawn_asteroids(math.min(missing, 64), true) end
    if sim.frame % 60 == 30 then
      for _, name in ipairs({ "hero", "wing-1", "wing-2", "wing-3" }) do
        if not N:find(name) then spawn_defender(name); sim.respawns = sim.respawns + 1 end
      end
    end
    if sim.frame % 300 == 150 then -- the station launches new drones
      for _ = 1, math.min(drones // 4, drones + 4 - Defender:count()) do spawn_defender(nil) end
    end
  end)

  -- Steering: each ship re-plans every 8 frames (staggered), setting the
  -- acceleration of its point mass and the heading of its transform.
  local function steer(e, tx, ty, speed)
    local x, y = PM:position(e)
    local vx, vy = PM:velocity(e)
    local dx, dy = tx - x, ty - y
    local d = math.sqrt(dx * dx + dy * dy) + 1e-6
    local wx, wy = dx / d * speed, dy / d * speed
    PM:set_acceleration(e, (wx - vx) * 1.5, (wy - vy) * 1.5, 0)
    local a = math.atan(vy, vx)
    T:set_local_rotation(e, 0, 0, math.sin(a / 2), math.cos(a / 2))
  end
  world:system("ai", q.ships, function(_, ships)
    local tick = sim.frame % 8
    local st = N:find("station")
    local hero = N:find("hero")
    local i = 0
    for e in ships:entities() do
      i = i + 1
      if (i + tick) % 8 == 0 then
        local _, speed, phase = Ship:get(e)
        local x, y = PM:position(e)
        if Enemy:has(e) then
          local goal = st or hero
          local gx, gy = CX, CY
          if goal then gx, gy = Position:get(goal) end
          -- swirl around the goal at a distance that depends on the ship
          local orbit = 120 + 80 * math.sin(phase)
          local a = math.atan(y - gy, x - gx) + 0.6
          steer(e, gx + orbit * math.cos(a), gy + orbit * math.sin(a), speed)
        else
          local foe = grid:nearest(x, y, 500, ENEMY)
          if foe and Enemy:has(foe) then
            local fx, fy = Position:get(foe)
            steer(e, fx, fy, speed)
          else
            local a = phase + sim.frame * DT * 0.5
            local r = 150 + 100 * math.sin(phase * 3)
            steer(e, CX + r * math.cos(a), CY + r * math.sin(a), speed)
          end
        end
      end
    end
  end)

  -- Point masses in C, then copied into Position by the plugin's C system.
  world:system("thrust", q.ships, function(dt)
    PM:simulate(dt)
    PM:copy_positions(Position)
  end)

  -- Ship transforms follow their positions: an expression system writes the
  -- transform's columns, and the turrets, children of the ships, follow at once
  -- (docs/transform.md, "Transforms in queries").
  world:system("attach", q.placed_ships,
    "transform.px = Position.x; transform.py = Position.y; transform.pz = 0")

  -- Timer wheels: bullets and pickups expire a fixed number of frames after birth.
  local bullet_wheel, pickup_wheel = {}, {}
  for k = 0, WHEEL - 1 do bullet_wheel[k], pickup_wheel[k] = {}, {} end
  local function after(wheel, frames_, e)
    local slot = wheel[(sim.frame + frames_) % WHEEL]
    slot[#slot + 1] = e
  end

  -- Turrets whose cooldown ran out pick the nearest foe in range (from the
  -- last grid build) and fire one bullet at it.
  local fire_list = {}
  world:system("fire", q.aimed, function(_, turrets)
    local nf = 0
    for c, ts, cds, wxs, wys in turrets:columns("entity", "Turret.cooldown:in",
                                                "transform.wx:in", "transform.wy:in") do
      for i = 1, c do
        if cds[i] <= 0 then
          local t, x, y = ts[i], wxs[i], wys[i]
          local _, rate, range, damage, team, tgt = Turret:get(t)
          local foes = team == ENEMY and DEF or ENEMY
          local tag = team == ENEMY and Defender or Enemy
          if not (world:alive(tgt) and tag:has(tgt)) then tgt = nil end
          if tgt then
            local tx, ty = Position:get(tgt)
            if (tx - x) ^ 2 + (ty - y) ^ 2 > range * range then tgt = nil end
          end
          if not tgt then
            tgt = grid:nearest(x, y, range, foes)
            if tgt and not tag:has(tgt) then tgt = nil end
          end
          if tgt then
            nf = nf + 1
            local f = fire_list[nf] or {}
            fire_list[nf] = f
            f[1], f[2], f[3], f[4], f[5], f[6] = t, x, y, tgt, damage, team
            Turret:set(t, 1 / rate, rate, range, damage, team, tgt)
          else -- nothing in range: look again in a quarter second
            Turret:set(t, 0.25, rate, range, damage, team, ecs.null)
          end
        end
      end
    end
    if nf == 0 then return end
    local es = world:create(nf)
    for k = 1, nf do
      local f, b = fire_list[k], es[k]
      local tx, ty = Position:get(f[4])
      local dx, dy = tx - f[2], ty - f[3]
      local d = math.sqrt(dx * dx + dy * dy) + 1e-6
      local layer = f[6] == ENEMY and EBUL or DBUL
      local mask = f[6] == ENEMY and (AST | DEF) or (AST | ENEMY)
      Position:add(b, f[2], f[3])
      Velocity:add(b, dx / d * 220, dy / d * 220)
      Collider:add(b, 1, layer, mask)
      Bullet:add(b, f[5], f[1])
      after(bullet_wheel, BULLET_TTL, b)
    end
    spawned.bullet = spawned.bullet + nf
  end)

  -- The broad phase in C: bin every collider (Position + Collider columns).
  -- The grid lives on into the next frame (ai and fire read it), so a save
  -- keeps the world as it was at the build: grid_blob.
  local grid_blob = saved and saved.grid or "" -- "": no build yet (frame 0)
  world:system("grid", q.colliders, function()
    if sim.frame == save_at then grid_blob = world:snapshot() end
    grid:build(Position, Collider)
  end)

  -- Gameplay rules on the overlapping pairs: damage, death, loot, pickups.
  local pa, pb = {}, {}
  local gone = {}           -- marked during this frame's rules
  local kill = { bullet = {}, asteroid = {}, enemy = {}, defender = {}, pickup = {} }
  local function mark(kind, e)
    if gone[e] then return end
    gone[e] = true
    local l = kill[kind]
    l[#l + 1] = e
  end
  local function kind_of(e)
    if Enemy:has(e) then return "enemy" elseif Defender:has(e) then return "defender" end
    return "asteroid"
  end
  local function damage(e, d)
    local hp = Health:field(e, "hp") - d
    if hp <= 0 then mark(kind_of(e), e) else Health:set_field(e, "hp", hp) end
  end

  local function loot(e)
    -- turrets go; the ship itself stays the same entity and becomes a pickup
    local ts = {}
    for c in T:children(e) do ts[#ts + 1] = c end
    destroyed.turret = destroyed.turret + world:destroy(ts)
    local vx, vy = PM:velocity(e)
    Enemy:remove(e); Ship:remove(e); Health:remove(e); PM:remove(e); T:remove(e)
    N:clear(e)
    Velocity:add(e, vx * 0.2, vy * 0.2)
    Collider:set(e, 3, PICK, 0)
    Pickup:add(e, 25)
    after(pickup_wheel, PICKUP_TTL, e)
    sim.looted = sim.looted + 1
    sim.loot_ids[#sim.loot_ids + 1] = ecs.id(e)
  end

  world:system("collide", q.colliders, function()
    local n, as, bs = grid:pairs(pa, pb)
    for k = 1, n do
      local a, b = as[k], bs[k]
      if not gone[a] and not gone[b] then
        local la = Collider:field(a, "layer")
        if la == EBUL or la == DBUL then
          sim.hits = sim.hits + 1
          mark("bullet", a)
          damage(b, Bullet:field(a, "damage"))
        else
          local lb = Collider:field(b, "layer")
          if lb == AST then        -- a ship rams an asteroid
            damage(a, Asteroid:field(b, "size"))
            mark("asteroid", b)
          elseif lb == PICK then   -- a defender collects a pickup
            local hp, max = Health:get(a)
            Health:set_field(a, "hp", math.min(max, hp + Pickup:field(b, "value")))
            mark("pickup", b)
            sim.collected = sim.collected + 1
          end
        end
      end
    end
    -- resolve, in a fixed order
    local l = kill.bullet
    if #l > 0 then destroyed.bullet = destroyed.bullet + world:destroy(l) end
    l = kill.pickup
    if #l > 0 then destroyed.pickup = destroyed.pickup + world:destroy(l) end
    l = kill.asteroid
    for i = 1, #l do
      local e = l[i]
      local size = Asteroid:field(e, "size")
      if size > 1 and e ~= monolith then
        local x, y = Position:get(e)
        local dx, dy = Velocity:get(e)
        local kids = world:create(2)
        for j = 1, 2 do
          local s = j == 1 and 1 or -1
          local c = kids[j]
          add_body(c, x + s * size, y - s * size, 1.5 * (size - 1), AST, 0, 8 * (size - 1))
          Velocity:add(c, dx + s * dy * 0.8 + s * 6, dy - s * dx * 0.8)
          Spin:add(c, 0, rand(-3, 3))
          Asteroid:add(c, size - 1)
        end
        spawned.asteroid = spawned.asteroid + 2
        sim.splits = sim.splits + 1
      end
      if e == monolith then Health:set_field(e, "hp", 1e6) else
        destroyed.asteroid = destroyed.asteroid + (world:destroy(e) and 1 or 0)
      end
    end
    l = kill.enemy
    for i = 1, #l do loot(l[i]) end
    l = kill.defender
    for i = 1, #l do
      local e = l[i]
      local nt = T:destroy_tree(e)
      destroyed.defender = destroyed.defender + 1
      destroyed.turret = destroyed.turret + nt - 1
    end
    for kind, list in pairs(kill) do
      for i = #list, 1, -1 do gone[list[i]] = nil; list[i] = nil end
      kill[kind] = list
    end
  end)

  -- Bullets and pickups whose time is up.
  world:system("expire", q.bullets, function()
    local slot = sim.frame % WHEEL
    local l = bullet_wheel[slot]
    if #l > 0 then
      destroyed.bullet = destroyed.bullet + world:destroy(l)
      bullet_wheel[slot] = {}
    end
    l = pickup_wheel[slot]
    if #l > 0 then
      local alive = {}
      for i = 1, #l do if world:alive(l[i]) and Pickup:has(l[i]) then alive[#alive + 1] = l[i] end end
      destroyed.pickup = destroyed.pickup + world:destroy(alive)
      pickup_wheel[slot] = {}
    end
  end)

  ------------------------------------------------------------ save and load
  local SIM_COUNTERS = { "looted", "waves", "peak", "hits", "splits", "collected", "respawns" }

  -- Everything on the Lua side that lives from one frame to the next (the
  -- rest of the closures' tables are scratch, empty or rewritten each frame).
  local function lua_state()
    local function wheel_ids(wheel)
      local out = {}
      for slot = 0, WHEEL - 1 do
        local l = wheel[slot]
        if #l > 0 then
          local ids = {}
          for i = 1, #l do ids[i] = ecs.id(l[i]) end
          out[slot] = ids
        end
      end
      return out
    end
    local state = { version = SAVE_VERSION, entities = target, seed = seed, frame = sim.frame,
      rng = rng_state(), asteroid_target = asteroid_target, station = ecs.id(station),
      monolith = ecs.id(monolith), spawned = spawned, destroyed = destroyed,
      loot_ids = sim.loot_ids, bullet_wheel = wheel_ids(bullet_wheel),
      pickup_wheel = wheel_ids(pickup_wheel) }
    for _, k in ipairs(SIM_COUNTERS) do state[k] = sim[k] end
    return state
  end
  sim.lua_state = lua_state

  -- The world of a save: the grid as it was built, then the end of the frame.
  -- The game that saves calls this too, on what it just wrote, and plays on
  -- from there: a snapshot keeps only live records (in row order) and no gc
  -- cursor, while the running world still holds dead records that its lazy
  -- gc would later drop by moving the last row into their place (and a new
  -- entity reusing an index would take its dead record's row). Row order
  -- decides the order of ai, fire and the grid's answers, so without this the
  -- loaded game and the game that saved would part ways within frames. With
  -- it they are the same game; a game that never saves plays the same up to
  -- the save frame, then its own (also deterministic) way.
  local function restore_world(snapshot, grid_at)
    if grid_at ~= "" then
      world:restore(grid_at)
      grid:build(Position, Collider)
    end
    world:restore(snapshot)
  end

  if old then
    local ok, err = pcall(restore_world, saved.snapshot, saved.grid)
    if not ok then -- "world:restore: what", without our file and line
      err = "the snapshot does not load: " .. tostring(err):gsub("^[^\n]-%.lua:%d+: ", "")
    else -- the state and the world must be of one game
      local alive = 0
      for _, k in ipairs(KINDS) do alive = alive + old.spawned[k] - old.destroyed[k] end
      if N:find("monolith") ~= ecs.entity(old.monolith) or alive ~= world:count() then
        ok, err = false, "the state does not match the world (not saved together)"
      end
    end
    if not ok then
      world:close()
      error(("arena: %s: %s"):format(opts.load_file, tostring(err)), 0)
    end
    rng_state(old.rng)
    sim.frame = old.frame
    for _, k in ipairs(KINDS) do spawned[k], destroyed[k] = old.spawned[k], old.destroyed[k] end
    for _, k in ipairs(SIM_COUNTERS) do sim[k] = old[k] end
    sim.loot_ids = old.loot_ids
    asteroid_target = old.asteroid_target
    station, monolith = ecs.entity(old.station), ecs.entity(old.monolith)
    for _, w in ipairs({ { bullet_wheel, old.bullet_wheel }, { pickup_wheel, old.pickup_wheel } }) do
      for slot, ids in pairs(w[2]) do
        local l = {}
        for i = 1, #ids do l[i] = ecs.entity(ids[i]) end
        w[1][slot] = l
      end
    end
  end

  local function save()
    local snapshot = world:snapshot()
    sim.save_bytes = write_save(opts.save_file, snapshot, grid_blob, lua_state())
    sim.saved_frame = sim.frame
    restore_world(snapshot, grid_blob) -- the same state a load starts from
  end

  --------------------------------------------------------------- main loop
  local frame_seconds = 0
  if save_at == start then save() end
  for f = start + 1, start + frames do
    sim.frame = f
    local t0 = clock()
    world:update(DT)
    frame_seconds = frame_seconds + (clock() - t0)
    local c = world:count()
    if c > sim.peak then sim.peak = c end
    if f == save_at then save() end
    if opts.progress then opts.progress(f - start, frames) end
  end
  sim.frame_seconds = frame_seconds
  sim.stats = world:stats()
  return sim
end

----------------------------------------------------------------- reporting

-- The alive count of each kind, from the managers.
function arena.census(sim)
  local c = sim.c
  return {
    asteroid = c.Asteroid:count(), enemy = c.Enemy:count(), defender = c.Defender:count(),
    turret = c.Turret:count(), bullet = c.Bullet:count(), pickup = c.Pickup:count(),
  }
end

-- A top-down view of the final frame as an image (png.lua).
function arena.render(sim, size)
  local png = require("png")
  local img = png.image(size, size, 8, 10, 20)
  local s = size / sim.W
  local c, q = sim.c, sim.queries
  for n, x, y in q.asteroids:columns("Position.x:in", "Position.y:in") do
    for i = 1, n do img:set(x[i] * s, y[i] * s, 110, 105, 100) end
  end
  for n, x, y in q.pickups:columns("Position.x:in", "Position.y:in") do
    for i = 1, n do img:disc(x[i] * s, y[i] * s, 1.2, 60, 230, 90) end
  end
  for n, x, y, layer in q.colliders:columns("Position.x:in", "Position.y:in", "Collider.layer:in") do
    for i = 1, n do
      local l = layer[i]
      if l == EBUL then img:set(x[i] * s, y[i] * s, 255, 150, 40)
      elseif l == DBUL then img:set(x[i] * s, y[i] * s, 250, 250, 120)
      elseif l == ENEMY then img:disc(x[i] * s, y[i] * s, 1.5, 235, 50, 50)
      elseif l == DEF then img:disc(x[i] * s, y[i] * s, 1.5, 70, 160, 255) end
    end
  end
  local N = sim.world.names
  for _, name in ipairs({ "monolith", "station", "hero", "boss" }) do
    local e = N:find(name)
    if e and c.Position:has(e) then
      local x, y = c.Position:get(e)
      local col = ({ monolith = { 150, 140, 130 }, station = { 255, 255, 255 },
        hero = { 120, 255, 255 }, boss = { 255, 60, 200 } })[name]
      img:disc(x * s, y * s, name == "hero" and 3 or math.max(3, 30 * s), col[1], col[2], col[3])
    end
  end
  return img
end

-- A small ASCII minimap of the final frame.
function arena.minimap(sim, cols, rows)
  cols, rows = cols or 64, rows or 24
  local cell = {}
  local rank = { [" "] = 0, ["."] = 1, [":"] = 2, ["+"] = 3, ["d"] = 4, ["e"] = 5, ["B"] = 6, ["H"] = 7, ["@"] = 8 }
  local function put(x, y, ch)
    local cx = math.floor(x / sim.W * cols)
    local cy = math.floor(y / sim.H * rows)
    if cx < 0 or cy < 0 or cx >= cols or cy >= rows then return end
    local k = cy * cols + cx + 1
    local old = cell[k] or " "
    if rank[ch] > rank[old] then cell[k] = ch end
  end
  local q = sim.queries
  local dense = {}
  for n, x, y in q.asteroids:columns("Position.x:in", "Position.y:in") do
    for i = 1, n do
      local k = math.floor(y[i] / sim.H * rows) * cols + math.floor(x[i] / sim.W * cols) + 1
      dense[k] = (dense[k] or 0) + 1
    end
  end
  local avg = sim.c.Asteroid:count() / (cols * rows)
  for k, v in pairs(dense) do
    local cy, cx = (k - 1) // cols, (k - 1) % cols
    if v > 0.8 * avg then
      put((cx + 0.5) * sim.W / cols, (cy + 0.5) * sim.H / rows, v > 1.25 * avg and ":" or ".")
    end
  end
  for n, x, y in q.pickups:columns("Position.x:in", "Position.y:in") do
    for i = 1, n do put(x[i], y[i], "+") end
  end
  for n, x, y, layer in q.colliders:columns("Position.x:in", "Position.y:in", "Collider.layer:in") do
    for i = 1, n do
      if layer[i] == ENEMY then put(x[i], y[i], "e") elseif layer[i] == DEF then put(x[i], y[i], "d") end
    end
  end
  local N = sim.world.names
  for name, ch in pairs({ station = "@", hero = "H", boss = "B" }) do
    local e = N:find(name)
    if e and sim.c.Position:has(e) then put(sim.c.Position:get(e), select(2, sim.c.Position:get(e)), ch) end
  end
  local lines = { "+" .. string.rep("-", cols) .. "+" }
  for y = 0, rows - 1 do
    local row = {}
    for x = 0, cols - 1 do row[#row + 1] = cell[y * cols + x + 1] or " " end
    lines[#lines + 1] = "|" .. table.concat(row) .. "|"
  end
  lines[#lines + 1] = "+" .. string.rep("-", cols) .. "+"
  lines[#lines + 1] = "@ station  H hero  B boss  d defender  e raider  + pickup  .: asteroids"
  return table.concat(lines, "\n")
end

-- The per-system profile as rows: name, kind, total ms, ms/frame, ns/entity, share.
function arena.profile(sim)
  local rows, sum = {}, 0
  for _, s in ipairs(sim.stats) do
    sum = sum + s.seconds
    rows[#rows + 1] = {
      name = s.name, kind = s.kind, ms = s.seconds * 1e3,
      ms_frame = s.seconds * 1e3 / math.max(1, s.calls),
      ns_entity = s.entities > 0 and s.seconds * 1e9 / s.entities or nil,
      share = s.seconds / sim.frame_seconds,
    }
  end
  local rest = sim.frame_seconds - sum
  rows[#rows + 1] = { name = "(gc, update)", kind = "c", ms = rest * 1e3,
    ms_frame = rest * 1e3 / math.max(1, sim.frame - sim.start_frame), share = rest / sim.frame_seconds }
  return rows
end

function arena.report(sim, out)
  out = out or io.stdout
  local function p(fmt, ...) out:write(fmt:format(...), "\n") end
  p("")
  p("%-14s %-10s %10s %9s %11s %7s", "system", "kind", "total ms", "ms/frame", "ns/entity", "share")
  for _, r in ipairs(arena.profile(sim)) do
    p("%-14s %-10s %10.1f %9.3f %11s %6.1f%%", r.name, r.kind, r.ms, r.ms_frame,
      r.ns_entity and ("%.1f"):format(r.ns_entity) or "-", 100 * r.share)
  end
  local played = sim.frame - sim.start_frame
  p("%-14s %-10s %10.1f %9.3f %11s %6.1f%%", "frame", "", sim.frame_seconds * 1e3,
    sim.frame_seconds * 1e3 / played, "", 100)
  p("")
  local census = arena.census(sim)
  if sim.start_frame > 0 then p("continued from frame %d of a saved game", sim.start_frame) end
  p("%d frames, %.1f ms per frame (%.0f fps); %d entities at the end, %d at peak",
    played, sim.frame_seconds * 1e3 / played, played / sim.frame_seconds,
    sim.world:count(), sim.peak)
  p("alive: %d asteroids, %d raiders, %d defenders, %d turrets, %d bullets, %d pickups",
    census.asteroid, census.enemy, census.defender, census.turret, census.bullet, census.pickup)
  p("%d waves, %d hits, %d asteroids split, %d raiders looted, %d pickups collected, %d respawns",
    sim.waves, sim.hits, sim.splits, sim.looted, sim.collected, sim.respawns)
end

---------------------------------------------------------------------- CLI

local USAGE = [[
usage: lua5.4 examples/arena.lua [options]
  --frames N     frames to simulate at 60 per second (default 900)
  --entities N   population to fill the arena with (default 100000)
  --seed S       random seed: the same seed plays the same game (default 1)
  --image FILE   write the final frame as a PNG
  --size PX      image side in pixels (default 768)
  --quiet        no progress bar, no minimap
  --save FILE    write the game to FILE at the end of frame --save-frame
  --save-frame F the frame to save at, counted from the start of the game
                 (default: the last frame played)
  --load FILE    continue the game saved in FILE for --frames more frames
                 (its entities and seed are the file's)
  --help         this text]]

local function parse(argv)
  local o = { frames = 900, size = 768 } -- entities and seed: arena.run's defaults
  local i = 1
  local function int(name, lo)
    local v = math.tointeger(tonumber(argv[i + 1]))
    if not v or v < lo then
      io.stderr:write(("arena: %s needs an integer >= %d\n%s\n"):format(name, lo, USAGE))
      os.exit(2)
    end
    i = i + 1
    return v
  end
  while i <= #argv do
    local a = argv[i]
    if a == "--frames" then o.frames = int(a, 1)
    elseif a == "--entities" then o.entities = int(a, 100)
    elseif a == "--seed" then o.seed = int(a, 0)
    elseif a == "--size" then o.size = int(a, 16)
    elseif a == "--save-frame" then o.save_frame = int(a, 0)
    elseif a == "--image" or a == "--save" or a == "--load" then
      local key = ({ ["--image"] = "image", ["--save"] = "save_file", ["--load"] = "load_file" })[a]
      o[key] = argv[i + 1]
      if not o[key] then io.stderr:write(("arena: %s needs a file name\n"):format(a)); os.exit(2) end
      i = i + 1
    elseif a == "--quiet" then o.quiet = true
    elseif a == "--help" or a == "-h" then print(USAGE); os.exit(0)
    else io.stderr:write(("arena: unknown option %s\n%s\n"):format(a, USAGE)); os.exit(2) end
    i = i + 1
  end
  local function refuse(msg) io.stderr:write("arena: ", msg, "\n", USAGE, "\n"); os.exit(2) end
  if o.save_frame and not o.save_file then refuse("--save-frame needs --save FILE") end
  if o.load_file and (o.entities or o.seed) then
    refuse("--entities and --seed come from the save file with --load")
  end
  return o
end

local function main(argv)
  local o = parse(argv)
  local tty = not o.quiet and os.execute("test -t 2") == true
  if o.load_file then
    print(("arena: %d frames more of the game saved in %s"):format(o.frames, o.load_file))
  else
    print(("arena: %d frames, %d entities, seed %d"):format(o.frames, o.entities or 100000, o.seed or 1))
  end
  local last = -1
  o.progress = tty and function(f, n)
    local pct = f * 100 // n
    if pct ~= last then
      last = pct
      local w = 40
      local full = f * w // n
      io.stderr:write(("\r[%s%s] %3d%%  frame %d/%d"):format(
        string.rep("#", full), string.rep(".", w - full), pct, f, n))
      if f == n then io.stderr:write("\r", string.rep(" ", w + 30), "\r") end
    end
  end or nil
  -- save file errors ("arena: ...") are reported plainly, anything else with a traceback
  local ok, sim = xpcall(arena.run, function(e)
    if type(e) == "string" and e:match("^arena: ") then return e end
    return debug.traceback(tostring(e), 2)
  end, o)
  if not ok then
    if tty then io.stderr:write("\r", string.rep(" ", 70), "\r") end
    io.stderr:write(sim, "\n")
    os.exit(1)
  end
  arena.report(sim)
  if sim.saved_frame then
    print(("saved frame %d to %s (%d bytes)"):format(sim.saved_frame, o.save_file, sim.save_bytes))
  end
  if not o.quiet then print(""); print(arena.minimap(sim)) end
  if o.image then
    local png = require("png")
    local img = arena.render(sim, o.size)
    local t0 = os.clock()
    local bytes = png.write(img, o.image)
    print(("wrote %s (%dx%d, %d bytes, encoded in %.2f s)"):format(o.image, o.size, o.size, bytes, os.clock() - t0))
  end
  local consistent, err = sim.world:check()
  sim.world:close()
  if not consistent then error("world inconsistent: " .. tostring(err)) end
end

if ... == "arena" then return arena end -- require("arena")
main(arg or {})
