--[[
replay_spec.lua -- the replay promise (README "Snapshots", docs/persistence.md):
a world restored by ecs.restore, world:restore, j:undo or apply_delta, then
stepped with the same inputs, reaches the same state, bit for bit, as the
original stepped the same way, whatever order its rules depend on.

A small deterministic game (below: `setup` makes its components, queries,
systems and observers on a world; `step` plays one frame) whose rules depend
on the order of every iteration API: q:entities, q:each, q:columns,
q:each_chunk, C:entities, w:entities, systems in their order, observers. Each
frame churns: spawns and creates, destroys (also inside loops, by observers,
by cleanup policies, after the frame's updates so that holes stay in the
snapshots), components added and removed, the lazy gc of world:update and now
and then an explicit C:gc(budget) or a full gc. The game keeps all its state
in the world (a `Game` component on the first entity); its inputs come from a
generator seeded by the frame number, so replaying a frame replays its inputs.

1. A reference world plays FRAMES frames, recording world:state_hash() and a
   digest of the frame's trace (every entity each iteration visited, in order,
   labelled by the iteration) at every frame.
2. For each route, a world plays the same frames and rolls back at random
   (seeded) frames to an earlier one, then plays on from there: ecs.restore of
   a snapshot (the game's setup runs again on the new world), world:restore of
   a snapshot and j:undo to the journal's mark (the objects stay), and
   apply_delta (a replica follows the player by a delta a frame and, at random
   frames, the play goes on ON the replica, the old player becoming the
   replica). At every frame, replayed ones included, state hash and trace must
   be the reference's: the trace is the order the game's rules saw, which the
   promise covers ("whatever order its rules depend on") and which is the first
   thing to differ when it does not hold. A control, a world that rolls back
   by playing a fresh game again up to the frame, must pass: the harness is
   sound, a route's failure is the route's.
3. Right after each route (and after a world:restore of the snapshot just
   taken, and a j:undo with nothing to undo), on a churned world with holes
   (dead records not reclaimed yet) and long-lived queries: the orders of
   w:entities, every C:entities, and q:entities, q:each, q:columns,
   q:each_chunk of every query, and what the change queries report, equal
   the original's at that moment.

A failure says the route, the frame (and the last rollback), and the first
difference: in the frame's trace (which iteration, which visit, which entity
against the reference's), else the first entity whose components, transform or
name differ; then, from the route played again to just before that frame
(where the states were still equal), every order that already differed.

Environment (all optional):
  ECS_REPLAY_FRAMES  frames of the long games: 2000 by default (about a
                     second a route on a plain Debug build once they pass),
                     60 under ECS_GC_STRESS; test.sh gives 150 under
                     valgrind. Raise it to soak.
  ECS_REPLAY_SEED    the seed of the inputs and of the rollback points

The common subset of every supported Lua (no //, bit operators, goto, <close>,
string.pack; its own generator, not math.random; no pairs() where order would
matter).
]]
local ecs = require("ecs")
local motion = require("ecs.motion")

local stress = os.getenv("ECS_GC_STRESS")
local FRAMES = math.floor(tonumber(os.getenv("ECS_REPLAY_FRAMES") or "")
  or ((stress and stress ~= "") and 60 or 2000))
local SEED = math.floor(tonumber(os.getenv("ECS_REPLAY_SEED") or "") or 20261201)

local null = ecs.null
local DT = 1 / 16
local TWO30 = 1073741824
local GAME = ecs.entity(1) -- the first entity of a fresh world holds the game's state

-- {{{ helpers

-- Park-Miller (48271) on integers below 2^31: exact in doubles, so it draws
-- the same numbers on every Lua.
local function prng(seed)
  local s = seed % 2147483646 + 1
  local r = {}
  function r.next()
    s = (s * 48271) % 2147483647
    return s
  end
  function r.int(a, b) return a + r.next() % (b - a + 1) end
  function r.chance(n) return r.next() % n == 0 end
  r.next()
  r.next()
  return r
end

local function fail(text) assert.is_true(false, text) end

-- A value as text, exact: numbers to 17 digits, entities by handle, tables
-- with their keys sorted.
local function show(v)
  local t = type(v)
  if t == "number" then
    if v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return string.format("%d", v) end
    return string.format("%.17g", v)
  elseif t == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local out = {}
    for i = 1, #keys do out[i] = tostring(keys[i]) .. "=" .. show(v[keys[i]]) end
    return "{" .. table.concat(out, ",") .. "}"
  elseif ecs.is_entity(v) then
    return ecs.tostring(v)
  end
  return tostring(v)
end

local function show_all(...)
  local out = {}
  for i = 1, select("#", ...) do out[i] = show((select(i, ...))) end
  return table.concat(out, " ")
end

-- }}}
-- {{{ the game

-- What each trace label records (the iteration and who runs it).
local LABELS = {
  "w:entities in system 'sense'",
  "q:columns over movers in system 'move'",
  "q:entities over living in system 'fight'",
  "q:each over scorers in system 'score'",
  "q:each_chunk over hunters in system 'hunt'",
  "Health:entities in system 'hunt'",
  "q:entities over moved (changed Pos) in system 'react'",
  "q:entities over fresh (added Health) in system 'react'",
  "q:entities over brains in system 'brainy'",
  "Dust:entities in system 'reap'",
  "q:entities over rare in system 'rare'",
  "q:entities over living in the Hunter:on_add observer",
  "the Health:on_remove observer",
  "w:entities in the frame's input",
  "transform:children in systems 'hunt' and 'crown'",
  "q:columns over scorers in system 'crown' (draw phase)",
  "the Score:on_set observer",
  "the Marked:on_add observer",
  "Pos:entities after the frame's updates",
  "q:entities over living in the frame's input",
  "Score:entities in the frame's input",
  "Marked:entities in the frame's input",
  "q:entities over hunters in the frame's input",
  "Score:entities in the frame's input (a clone)",
}
local L_SENSE, L_MOVE, L_FIGHT, L_SCORE, L_HUNT, L_PREY, L_MOVED, L_FRESH = 1, 2, 3, 4, 5, 6, 7, 8
local L_BRAIN, L_DUST, L_RARE, L_OBS_HUNTER, L_OBS_HEALTH, L_PICK, L_CHILD = 9, 10, 11, 12, 13, 14, 15
local L_CROWN, L_OBS_SCORE, L_OBS_MARKED, L_LATE, L_VEL, L_FROZEN, L_UNMARK = 16, 17, 18, 19, 20, 21, 22
local L_RETIRE, L_CLONE = 23, 24

-- The game on world w: its components (found again in a world ecs.restore
-- made: { migrate = true } returns the existing manager, and gives back the
-- cleanup policies snapshots do not carry), queries, systems and observers.
-- It changes no state: the first frame populates the world.
local function setup(w)
  local g = { w = w, trace = {}, n = 0, prey = {}, doomed = {} }
  local M = { migrate = true }
  local Pos = w:component("Pos", { "x:f64", "y:f32" }, M)
  local Vel = w:component("Vel", { "dx:f32", "dy:f32" }, M)
  local Health = w:component("Health", { "hp:i32" }, M)
  local Score = w:component("Score", { "s:f64", "rank:u16" }, M)
  local Hunter = w:component("Hunter", { "target:entity!clear", "since:u32" }, M)
  local Link = w:component("Link", { "other:entity" }, M)
  local Brain = w:component("Brain", { "memo:lua" }, M)
  local Marked = w:component("Marked", nil, M)
  local Frozen = w:component("Frozen", nil, M)
  local Dust = w:component("Dust", { "v:f32", "age:u8" }, M)
  local Game = w:component("Game", { "frame:u32", "acc:f64", "deaths:u32", "marks:u32", "leader:entity",
    "carry:f64" }, M)
  local T, N = w.transform, w.names
  g.Pos, g.Vel, g.Health, g.Score, g.Hunter, g.Link = Pos, Vel, Health, Score, Hunter, Link
  g.Brain, g.Marked, g.Frozen, g.Dust, g.Game, g.T, g.N = Brain, Marked, Frozen, Dust, Game, T, N
  g.components = { Pos, Vel, Health, Score, Hunter, Link, Brain, Marked, Frozen, Dust, Game }

  local trace = g.trace
  local function visit(label, e)
    local n = g.n + 1
    g.n = n
    trace[n] = label * TWO30 + ecs.id(e)
  end
  g.visit = visit

  local movers = w:query(Pos, Vel)
  local living = w:query({ Health, Pos, without = { Frozen } })
  local scorers = w:query(Score, Health)
  local hunters = w:query(Hunter, Pos)
  local moved = w:query({ Pos, changed = { Pos } })
  local fresh = w:query({ Health, added = { Health } })
  local brains = w:query(Brain, Score)
  local rare = w:query({ Score, Vel, without = { Marked } })
  local dusty = w:query(Dust)
  g.queries = { movers = movers, living = living, scorers = scorers, hunters = hunters, brains = brains,
                rare = rare, dusty = dusty }
  g.query_names = { "movers", "living", "scorers", "hunters", "brains", "rare", "dusty" }
  g.change_queries = { moved = moved, fresh = fresh }
  g.change_names = { "moved", "fresh" }

  -- A running code over every entity in index order; the first two with
  -- a Score where it comes out a multiple of 5 are marked.
  w:system("sense", function()
    local acc, given = 0, 0
    for e in w:entities() do
      visit(L_SENSE, e)
      acc = (acc * 31 + ecs.index(e)) % 65521
      if given < 2 and acc % 5 == 0 and Score:has(e) and not Marked:has(e) then
        given = given + 1
        Marked:add(e)
      end
    end
    Game:set_field(GAME, "acc", acc)
  end)

  -- Each mover's step carries a term from the mover before it (across
  -- chunks and frames: the carry is game state).
  w:system("move", movers, function(dt, q)
    local c = Game:field(GAME, "carry")
    for n, ent, x, y, dx, dy in q:columns("entity", "Pos.x", "Pos.y", "Vel.dx:in", "Vel.dy:in") do
      for i = 1, n do
        visit(L_MOVE, ent[i])
        x[i] = (x[i] + dx[i] * dt * 16 + c) % 100
        y[i] = (y[i] + dy[i]) % 50
        c = (c * 3 + i) % 7 * 0.25
      end
    end
    Game:set_field(GAME, "carry", c)
  end)

  w:system("damp", movers, motion.damp("Vel.dy", 0.5))

  -- The first k living visited are hit harder; the dead die inside the
  -- loop; the first visited with little health left leads.
  w:system("fight", living, function(_, q)
    local k, seen, leader = 2 + Game:field(GAME, "frame") % 3, 0, null
    for e in q:entities() do
      visit(L_FIGHT, e)
      seen = seen + 1
      local hp = Health:field(e, "hp")
      if seen <= k then hp = hp - 3 end
      if Pos:field(e, "x") > 50 then hp = hp - 1 end
      if hp <= 0 then
        w:destroy(e)
      else
        Health:set_field(e, "hp", hp)
        if leader == null and hp < 8 then leader = e end
      end
    end
    Game:set_field(GAME, "leader", leader)
  end)

  -- A running sum from one scorer to the next.
  w:system("score", scorers, function(_, q)
    local acc, rank = 0, 0
    q:each(function(e, s, _, hp)
      visit(L_SCORE, e)
      acc = (acc + hp) % 17
      rank = rank + 1
      return (s + acc + 0.5) % 1000, rank % 60000
    end, "Score.s", "Score.rank", "Health.hp:in")
  end)

  -- Hunters without a live target take one from the prey list (in
  -- Health:entities order) by their rank in the visit; a hunter hangs under
  -- its target in the transform hierarchy and copies its world position.
  w:system("hunt", hunters, function(_, q)
    local prey, np = g.prey, 0
    for e in Health:entities() do
      if not Hunter:has(e) then
        visit(L_PREY, e)
        np = np + 1
        prey[np] = e
      end
    end
    local j = 0
    q:each_chunk(function(n, ent, target, since, x)
      for i = 1, n do
        local e = ent[i]
        visit(L_HUNT, e)
        j = j + 1
        local t = target[i]
        if (t == null or not w:alive(t)) and np > 0 then
          t = prey[(j * 3 + n) % np + 1]
          target[i] = t
          since[i] = 0
          if T:has(e) and T:has(t) then T:set_parent(e, t) end
        else
          since[i] = since[i] + 1
        end
        if T:has(e) then
          -- its place among its target's children (in their order) sets its offset
          local at, rank = 0, 0
          if t ~= null and w:alive(t) and T:has(t) and T:parent(e) == t then
            for c in T:children(t) do
              visit(L_CHILD, c)
              at = at + 1
              if c == e then rank = at end
            end
          end
          T:set_local_position(e, (j + rank) % 5, rank, 0)
          x[i] = (T:world_position(e)) % 100
        end
      end
    end, "entity", "Hunter.target", "Hunter.since", "Pos.x")
  end)

  w:system("drift", dusty, "Dust.v = Dust.v * 0.5 + 1; Dust.age = min(Dust.age + 1, 250)")

  -- The first four entities whose Pos changed gain score by rank; each
  -- entity that gained Health links to the one before it.
  w:system("react", function()
    local k = 0
    for e in moved:entities() do
      visit(L_MOVED, e)
      k = k + 1
      if k <= 4 and Score:has(e) then Score:set_field(e, "s", (Score:field(e, "s") + k) % 1000) end
    end
    local prev = Game:field(GAME, "leader")
    for e in fresh:entities() do
      visit(L_FRESH, e)
      Link:add(e, prev)
      prev = e
    end
  end)

  -- A chain of lua values: a brain remembers the one visited before it (a
  -- fourth of them each frame, by their rank in the visit).
  w:system("brainy", brains, function(_, q)
    local last, k, f = 0, 0, Game:field(GAME, "frame")
    for e in q:entities() do
      visit(L_BRAIN, e)
      k = k + 1
      if (k + f) % 4 == 0 then
        local m = Brain:field(e, "memo")
        local n = type(m) == "table" and m.n or 0
        Brain:set_field(e, "memo", { n = n + 1, prev = last, tag = (n % 3 == 0) and "x" or nil })
      end
      last = ecs.index(e)
    end
  end, nil, { before = "drift" })

  -- Every 7th frame the first two of a query used nowhere else freeze or thaw.
  w:system("rare", function()
    if Game:field(GAME, "frame") % 7 ~= 0 then return end
    local k = 0
    for e in rare:entities() do
      visit(L_RARE, e)
      k = k + 1
      if k <= 2 then
        if Frozen:has(e) then Frozen:remove(e) else Frozen:add(e) end
      end
    end
  end)

  -- Dust in row order: the first few old enough are swept away.
  w:system("reap", function()
    local m, doomed, nd = Game:field(GAME, "frame") % 4, g.doomed, 0
    for e in Dust:entities() do
      visit(L_DUST, e)
      if nd < m and Dust:field(e, "age") >= 3 then
        nd = nd + 1
        doomed[nd] = e
      end
    end
    for i = 1, nd do w:destroy(doomed[i]) end
  end)

  -- Draw phase: the first best scorer is the champion (named), its
  -- children are counted, the leader is named boss.
  w:system("crown", scorers, function(_, q)
    local best, champ = -1, null
    for n, ent, s in q:columns("entity", "Score.s:in") do
      for i = 1, n do
        visit(L_CROWN, ent[i])
        if s[i] > best then
          best = s[i]
          champ = ent[i]
        end
      end
    end
    if champ ~= null then
      if N:get(champ) ~= "champion" then N:set(champ, "champion") end
      if T:has(champ) then
        for c in T:children(champ) do visit(L_CHILD, c) end
      end
    end
    local boss = Game:field(GAME, "leader")
    if boss ~= null and w:alive(boss) and N:get(boss) == nil then N:set(boss, "boss") end
  end, nil, { phase = "draw" })

  g.observers = {
    -- A new hunter's first target: the first of living (in its order) that
    -- is not a hunter.
    Hunter:on_add(function(e)
      local t = null
      for x in living:entities() do
        if t == null and x ~= e and not Hunter:has(x) then
          visit(L_OBS_HUNTER, x)
          t = x
        end
      end
      Hunter:set_field(e, "target", t)
      if t ~= null and T:has(e) and T:has(t) then T:set_parent(e, t) end
    end),
    -- A death leaves dust where it was.
    Health:on_remove(function(e)
      visit(L_OBS_HEALTH, e)
      Game:set_field(GAME, "deaths", (Game:field(GAME, "deaths") + 1) % 1000000)
      if Pos:has(e) then
        local d = w:create()
        Dust:add(d, Pos:field(e, "x"), 0)
      end
    end),
    Score:on_set(function(e)
      visit(L_OBS_SCORE, e)
      if Score:field(e, "s") > 900 and not Marked:has(e) then Marked:add(e) end
    end),
    Marked:on_add(function(e)
      visit(L_OBS_MARKED, e)
      Game:set_field(GAME, "marks", (Game:field(GAME, "marks") + 1) % 1000000)
      if not Brain:has(e) then Brain:add(e, { marked = Game:field(GAME, "frame") }) end
    end),
  }
  return g
end

-- The frame's input and churn, before the updates.
local function inputs(g, f, rng)
  local w, visit = g.w, g.visit
  local Pos, Health, Score, Vel = g.Pos, g.Health, g.Score, g.Vel
  g.Game:set_field(GAME, "frame", f)
  -- prey, spawned in C
  local k = rng.int(0, 3)
  if k > 0 then
    local xs, hps = {}, {}
    for i = 1, k do
      xs[i] = rng.int(0, 99)
      hps[i] = rng.int(20, 60)
    end
    local es = w:spawn(k, { Pos = { x = xs, y = 1 }, Vel = { dx = 1, dy = 2 }, Health = { hp = hps },
                            Score = { s = 0, rank = 0 } })
    for i = 1, k do
      if rng.chance(2) then g.T:add(es[i], { position = { xs[i], 0, 0 } }) end
      if rng.chance(3) then g.Brain:add(es[i], { born = f }) end
    end
  end
  -- a prey made by hand
  if rng.chance(2) then
    local e = w:create()
    Pos:add(e, rng.int(0, 99), 0)
    Health:add(e, rng.int(10, 40))
    Score:add(e, 1, 0)
  end
  -- a hunter (its on_add observer picks its first target)
  if not rng.chance(3) then
    local e = w:create()
    Pos:add(e, 0, 0)
    g.T:add(e)
    g.Hunter:add(e, null, 0)
  end
  -- a copy of the first scorer (in C:entities order), now and then
  if rng.chance(9) then
    local done = false
    for e in Score:entities() do
      if not done then
        visit(L_CLONE, e)
        w:clone(e)
        done = true
      end
    end
  end
  -- dust, now and then a lot of it
  w:spawn(rng.chance(60) and 150 or rng.int(3, 20), { Dust = { v = rng.int(0, 9), age = 0 } })
  -- destroys picked in index order (never the game)
  local pos, victims, nv = 0, {}, 0
  for e in w:entities() do
    if e ~= GAME then
      pos = pos + 1
      if (pos * 7 + f) % 43 == 0 then
        visit(L_PICK, e)
        nv = nv + 1
        victims[nv] = e
      end
    end
  end
  if rng.chance(2) then
    w:destroy(victims)
  else
    for i = 1, nv do
      if g.T:has(victims[i]) and rng.chance(2) then g.T:destroy_tree(victims[i]) else w:destroy(victims[i]) end
    end
  end
  -- the first three living (in the query's order) lose or gain Vel
  local seen = 0
  for e in g.queries.living:entities() do
    seen = seen + 1
    if seen <= 3 then
      visit(L_VEL, e)
      if Vel:has(e) then Vel:remove(e) else Vel:add(e, 1, -1) end
    end
  end
  -- Frozen toggled by row position in Score
  pos = 0
  for e in Score:entities() do
    pos = pos + 1
    if (pos + f) % 37 == 0 then
      visit(L_FROZEN, e)
      if g.Frozen:has(e) then g.Frozen:remove(e) else g.Frozen:add(e) end
    end
  end
  -- the first Marked (in row order) loses the mark, now and then
  if rng.chance(3) then
    local done = false
    for e in g.Marked:entities() do
      if not done then
        visit(L_UNMARK, e)
        g.Marked:remove(e)
        done = true
      end
    end
  end
  -- every 11th frame the first hunter (in the query's order) retires
  if f % 11 == 0 then
    local done = false
    for e in g.queries.hunters:entities() do
      if not done then
        visit(L_RETIRE, e)
        g.Hunter:remove(e)
        done = true
      end
    end
  end
  -- an explicit budgeted gc of one manager
  if rng.chance(5) then
    local all = g.components
    all[rng.int(1, #all)]:gc(rng.int(1, 16))
  end
end

-- After the updates: destroys whose dead records stay until some later gc
-- (so that snapshots are taken over holes), and now and then a full gc.
local function late(g, f, rng)
  local w, visit = g.w, g.visit
  local pos, victims, nv = 0, {}, 0
  for e in g.Pos:entities() do
    pos = pos + 1
    if (pos + f * 3) % 41 == 0 then
      visit(L_LATE, e)
      nv = nv + 1
      victims[nv] = e
    end
  end
  -- dust in row order: a few every frame, a lot now and then
  local m = nv + (f % 50 == 0 and 120 or math.floor(g.Dust:count() / 12) + rng.int(0, 6))
  for e in g.Dust:entities() do
    if nv < m then
      nv = nv + 1
      victims[nv] = e
    end
  end
  w:destroy(victims)
  -- changes pending for the change queries' next passes: the first two
  -- (row order) nudged, a prey made
  local k = 0
  for e in g.Pos:entities() do
    k = k + 1
    if k <= 2 then g.Pos:set_field(e, "y", (g.Pos:field(e, "y") + 1) % 50) end
  end
  if rng.chance(2) then
    local e = w:create()
    g.Pos:add(e, rng.int(0, 99), 2)
    g.Health:add(e, rng.int(10, 40))
  end
  if rng.chance(10) then g.Dust:gc() end
  if rng.chance(17) then
    for i = 1, #g.components do g.components[i]:gc() end
    g.T:gc()
    g.N:gc()
  end
end

-- One frame: inputs, the update and draw phases (each with its budgeted gc),
-- the late churn. Only the frame number decides the inputs.
local function step(g, f)
  g.n = 0
  local rng = prng(SEED * 31 + f * 7919)
  inputs(g, f, rng)
  g.w:update(DT)
  g.w:update(DT, "draw")
  late(g, f, rng)
end

-- A fresh world with the game, its state entity first, and frame 0 played.
local function new_game()
  local w = ecs.world()
  local g = setup(w)
  local e = w:create()
  assert(e == GAME, "the game's entity is the world's first")
  g.Game:add(GAME, { frame = 0 })
  step(g, 0)
  return g
end

-- The frame's trace as two numbers and a length.
local function digest(g)
  local a, b, trace = 7, 11, g.trace
  for i = 1, g.n do
    local v = trace[i] % 2147483647
    a = (a * 48271 + v) % 2147483647
    b = (b * 69621 + v) % 2147483629
  end
  return a .. ":" .. b .. ":" .. g.n
end

-- }}}
-- {{{ readouts and diagnosis

local function decode(v)
  local label = math.floor(v / TWO30)
  return label, ecs.entity(v - label * TWO30)
end

-- The first difference between two frames' traces, as text (nil if none).
local function trace_difference(mine, ref)
  local n = math.max(mine.n, ref.n)
  local count = {}
  for i = 1, n do
    local a, b = mine.trace[i], ref.trace[i]
    if i > mine.n then a = nil end
    if i > ref.n then b = nil end
    if a ~= b then
      local la, ea, lb, eb
      if a then la, ea = decode(a) end
      if b then lb, eb = decode(b) end
      local label = la or lb
      local k = (count[label] or 0) + 1
      if la == lb then
        return string.format("%s, visit %d: %s where the reference visited %s", LABELS[label], k,
          ecs.tostring(ea), ecs.tostring(eb))
      end
      return string.format("trace entry %d: %s where the reference had %s", i,
        a and (LABELS[la] .. " visiting " .. ecs.tostring(ea)) or "nothing (the frame's trace ended)",
        b and (LABELS[lb] .. " visiting " .. ecs.tostring(eb)) or "nothing (the frame's trace ended)")
    end
    if a then
      local la = decode(a)
      count[la] = (count[la] or 0) + 1
    end
  end
  return nil
end

-- Every live entity's components, transform and name, one line each.
local function readout(g)
  local lines = {}
  local T, N = g.T, g.N
  for e in g.w:entities() do
    local parts = { ecs.tostring(e) }
    for i = 1, #g.components do
      local C = g.components[i]
      if C:has(e) then parts[#parts + 1] = C.name .. "(" .. show_all(C:get(e)) .. ")" end
    end
    if T:has(e) then
      parts[#parts + 1] = "transform(" .. show_all(T:local_position(e)) .. " parent " .. show(T:parent(e)) .. ")"
    end
    if N:get(e) then parts[#parts + 1] = "name " .. N:get(e) end
    lines[#lines + 1] = table.concat(parts, " ")
  end
  return lines
end

local function ids_of_iter(list, ...)
  for e in ... do list[#list + 1] = e end
  return list
end

-- The orders a world iterates in now: "plain": w:entities, every
-- C:entities, and q:entities, q:each, q:columns and q:each_chunk of every
-- query (nothing written); "changes": a pass of each change query (which
-- completes it); "all": both. Each: { what =, over = (a query's name), list = }.
local function orders(g, which)
  local out = {}
  local function add(what, over, list) out[#out + 1] = { what = what, over = over, list = list } end
  if which ~= "changes" then
    add("w:entities()", nil, ids_of_iter({}, g.w:entities()))
    for i = 1, #g.components do
      local C = g.components[i]
      add(C.name .. ":entities()", nil, ids_of_iter({}, C:entities()))
    end
    for i = 1, #g.query_names do
      local name = g.query_names[i]
      local q = g.queries[name]
      add("q:entities()", name, ids_of_iter({}, q:entities()))
      local each = {}
      q:each(function(e) each[#each + 1] = e end)
      add("q:each", name, each)
      local cols = {}
      for n, ent in q:columns("entity") do
        for k = 1, n do cols[#cols + 1] = ent[k] end
      end
      add("q:columns(\"entity\")", name, cols)
      local chunks = {}
      q:each_chunk(function(n, ent)
        for k = 1, n do chunks[#chunks + 1] = ent[k] end
      end, "entity")
      add("q:each_chunk", name, chunks)
    end
  end
  if which ~= "plain" then
    for i = 1, #g.change_names do
      local name = g.change_names[i]
      add("q:entities()", name .. " (a change query)", ids_of_iter({}, g.change_queries[name]:entities()))
    end
  end
  return out
end

-- Each order of `mine` that differs from `ref`'s: where, and how (the
-- iterations of one query that differ alike on one line).
local function order_differences(mine, ref)
  local out, last_over, last_how = {}, nil, nil
  for i = 1, #ref do
    local a, b = mine[i].list, ref[i].list
    for k = 1, math.max(#a, #b) do
      if a[k] ~= b[k] then
        local how = string.format("position %d is %s, the original's %s (%d entities, the original %d)", k,
          a[k] and ecs.tostring(a[k]) or "the end", b[k] and ecs.tostring(b[k]) or "the end", #a, #b)
        local over = ref[i].over
        if over and over == last_over and how == last_how then
          out[#out].whats[#out[#out].whats + 1] = ref[i].what
        else
          out[#out + 1] = { whats = { ref[i].what }, over = over, how = how }
        end
        last_over, last_how = over, how
        break
      end
    end
  end
  for i = 1, #out do
    local d = out[i]
    out[i] = table.concat(d.whats, ", ") .. (d.over and (" over " .. d.over) or "") .. ": " .. d.how
  end
  return out
end

local history -- the last rollback, as text, for messages

local function show_orders(d)
  local shown = {}
  for i = 1, math.min(#d, 12) do shown[i] = d[i] end
  if #d > 12 then shown[13] = "... and " .. (#d - 12) .. " more" end
  return table.concat(shown, "\n    ")
end

-- Why a world at the end of frame f is not the reference's: plays a fresh
-- reference to f and compares the frame's trace and the state; then, when
-- given again(), which gives the world as it was just before that frame
-- (the route played again to there) and its frame, compares the orders
-- there, where the states were still equal.
local function diagnose(route, g, f, what, again)
  local head = string.format("%s: frame %d (%s): %s", route, f, history, what)
  local ok, rg = pcall(new_game)
  if not ok then return head .. "\n  (the reference could not be replayed: " .. tostring(rg) .. ")" end
  for i = 1, f do step(rg, i) end
  local lines = { head }
  local t = trace_difference(g, rg)
  if t then lines[#lines + 1] = "  first difference in the frame's trace: " .. t end
  local ra, rb = readout(g), readout(rg)
  for i = 1, math.max(#ra, #rb) do
    if ra[i] ~= rb[i] then
      lines[#lines + 1] = "  first differing entity at the frame's end: " .. (ra[i] or "(none)")
        .. "\n    the reference's: " .. (rb[i] or "(none)")
      break
    end
  end
  if not t and #lines == 1 then
    lines[#lines + 1] = "  the trace, every component, transform and name read the same: the state hash alone differs"
  end
  rg.w:close()
  if again then
    local saved = history
    local ok2, before, fb, finish = pcall(again)
    history = saved
    if not ok2 then
      lines[#lines + 1] = "  (the route could not be played again to the frame before: " .. tostring(before) .. ")"
    else
      local rb2 = new_game()
      for i = 1, fb do step(rb2, i) end
      local d = order_differences(orders(before, "all"), orders(rb2, "all"))
      if #d > 0 then
        lines[#lines + 1] = string.format("  orders that already differed before the frame, at the end of frame %d "
          .. "where the states were equal (\"the original\" is the reference):\n    %s", fb, show_orders(d))
      else
        lines[#lines + 1] = string.format("  every order was the reference's at the end of frame %d", fb)
      end
      rb2.w:close()
      finish()
    end
  end
  return table.concat(lines, "\n")
end

-- }}}
-- {{{ the reference and the routes

local reference_cache = {}
local function reference(frames)
  if reference_cache[frames] then return reference_cache[frames] end
  local g = new_game()
  local ref = { hash = { [0] = g.w:state_hash() }, digest = { [0] = digest(g) } }
  for f = 1, frames do
    step(g, f)
    ref.hash[f] = g.w:state_hash()
    ref.digest[f] = digest(g)
  end
  g.w:close()
  reference_cache[frames] = ref
  return ref
end

-- nil, or what differs between g after frame f and the reference
local function frame_mismatch(ref, g, f)
  local h, d = g.w:state_hash(), digest(g)
  if d ~= ref.digest[f] then
    return "the frame visited other entities or in another order than the reference"
  elseif h ~= ref.hash[f] then
    return string.format("state hash %s, the reference's %s", tostring(h), tostring(ref.hash[f]))
  end
  return nil
end

-- The state only (right after a rollback, when the trace is an older frame's).
local function check_state(route, ref, g, f, what)
  local h = g.w:state_hash()
  if h ~= ref.hash[f] then
    fail(string.format("%s: frame %d (%s): %s: state hash %s, the reference's %s", route, f, history, what,
      tostring(h), tostring(ref.hash[f])))
  end
end

local RATE = 40  -- a rollback at one new frame in RATE, on average
local BACK = 24  -- by at most BACK frames

-- Each route: start() -> a state st with st.g the world that plays;
-- after(st, f) once frame f is played; rollback(st, f, rng, force) at a new
-- frame: nil, or the frame the world is back at (its setup done); force
-- asks for one.
local ROUTES = {
  {
    name = "ecs.restore",
    start = function()
      local g = new_game()
      return { g = g, snaps = { [0] = g.w:snapshot() } }
    end,
    after = function(st, f)
      st.snaps[f] = st.g.w:snapshot()
      st.snaps[f - BACK - 1] = nil
    end,
    rollback = function(st, f, rng, force)
      if not (rng.chance(RATE) or force) then return nil end
      local to = f - rng.int(0, math.min(f, BACK))
      local w = ecs.restore(st.snaps[to])
      st.g.w:close()
      st.g = setup(w)
      return to
    end,
    finish = function(st) st.g.w:close() end,
  },
  {
    name = "world:restore",
    start = function()
      local g = new_game()
      return { g = g, snaps = { [0] = g.w:snapshot() } }
    end,
    after = function(st, f)
      st.snaps[f] = st.g.w:snapshot()
      st.snaps[f - BACK - 1] = nil
    end,
    rollback = function(st, f, rng, force)
      if not (rng.chance(RATE) or force) then return nil end
      local to = f - rng.int(0, math.min(f, BACK))
      st.g.w:restore(st.snaps[to])
      return to
    end,
    finish = function(st) st.g.w:close() end,
  },
  {
    name = "j:undo",
    start = function()
      local g = new_game()
      return { g = g, j = g.w:journal(), mark = 0 }
    end,
    after = function() end,
    rollback = function(st, f, rng, force)
      if rng.chance(RATE) or force then
        st.j:undo()
        return st.mark
      end
      if rng.chance(8) or f - st.mark >= BACK then
        st.j:delta() -- the mark moves here
        st.mark = f
      end
      return nil
    end,
    finish = function(st)
      st.j:close()
      st.g.w:close()
    end,
  },
  {
    name = "apply_delta",
    hand_over = true,
    start = function()
      local g = new_game()
      return { g = g, replica = new_game(), j = g.w:journal() }
    end,
    after = function(st, f, ref)
      st.replica.w:apply_delta(st.j:delta())
      check_state("apply_delta", ref, st.replica, f, "the replica after apply_delta")
    end,
    rollback = function(st, f, rng, force)
      if not (rng.chance(RATE) or force) then return nil end
      -- the replica plays on; the player follows it
      st.j:close()
      st.g, st.replica = st.replica, st.g
      st.j = st.g.w:journal()
      return f
    end,
    finish = function(st)
      st.j:close()
      st.g.w:close()
      st.replica.w:close()
    end,
  },
}

local play_route

-- The frames of a route (play_route below).
local function play_frames(route, st, frames, stop)
  local ref = reference(frames)
  local rng = prng(SEED + #route.name * 1000 + route.name:byte(1))
  local name = route.name
  history = "no rollback yet"
  check_state(name, ref, st.g, 0, "the new game")
  local f, reached, rollbacks, steps = 0, 0, 0, 0
  while f < frames do
    if stop and steps + 1 == stop then
      return st.g, f, function() route.finish(st) end
    end
    f = f + 1
    steps = steps + 1
    local ok, err = pcall(step, st.g, f)
    if not ok then fail(string.format("%s: frame %d (%s): the game raised: %s", name, f, history, tostring(err))) end
    local why = frame_mismatch(ref, st.g, f)
    if why and stop then error("the second play differs from the first at frame " .. f .. ": " .. why, 0) end
    if why then
      local at = steps
      fail(diagnose(name, st.g, f, why, function() return play_route(route, frames, at) end))
    end
    ok, err = pcall(route.after, st, f, ref)
    if not ok then fail(string.format("%s: frame %d (%s): %s", name, f, history, tostring(err))) end
    if f > reached then
      reached = f
      local to
      -- the first rollback comes by frame 25 at the latest (or the last frame)
      ok, to = pcall(route.rollback, st, f, rng, rollbacks == 0 and (f >= 25 or f == frames))
      if not ok then
        fail(string.format("%s: frame %d (%s): the rollback raised: %s", name, f, history, tostring(to)))
      end
      if to then
        rollbacks = rollbacks + 1
        if to == f and route.hand_over then
          history = string.format("hand-over %d: the replica plays on from frame %d", rollbacks, f)
        else
          history = string.format("rollback %d by %s at frame %d, back to frame %d", rollbacks, name, f, to)
        end
        check_state(name, ref, st.g, to, "right after the rollback")
        f = to
      end
    end
  end
  return rollbacks
end

-- Plays a route; with stop, only its first stop - 1 frames (rollbacks
-- included), returning the playing world then, its frame and how to close it.
-- Its worlds are closed when it ends, also by a failure.
function play_route(route, frames, stop)
  local st = route.start()
  local ok, a, b, c = pcall(play_frames, route, st, frames, stop)
  if not ok or not stop then pcall(route.finish, st) end
  if not ok then error(a, 0) end
  return a, b, c
end

-- }}}

describe("the replay promise", function()
  describe(string.format("a game of %d frames whose rules depend on every iteration order", FRAMES), function()
    it("plays the same from a fresh start (the reference is deterministic)", function()
      local ref = reference(FRAMES)
      local g = new_game()
      history = "a second fresh game, no rollback"
      for f = 1, math.min(FRAMES, 200) do
        step(g, f)
        local why = frame_mismatch(ref, g, f)
        if why then fail(diagnose("a second fresh game", g, f, why)) end
      end
      -- the game really churns: holes, a population, every iteration visited something
      local seen = {}
      for f = 1, 40 do
        step(g, 200 + f)
        for i = 1, g.n do seen[math.floor(g.trace[i] / TWO30)] = true end
      end
      for label = 1, #LABELS do
        assert.is_true(seen[label] == true, "nothing visited by " .. LABELS[label] .. " in 40 frames")
      end
      assert.is_true(g.w:count() > 80 and g.Health:count() > 20 and g.Hunter:count() > 3,
        "a population of " .. g.w:count())
      g.w:close()
    end)

    -- The harness's control: a rollback that plays a fresh game again from
    -- its start to the frame passes (so a failure below is the route's).
    it("passes a world that rolls back by playing a fresh game again up to the frame", function()
      local frames = math.min(FRAMES, 300)
      local n = play_route({
        name = "replay from the start",
        start = function() return { g = new_game() } end,
        after = function() end,
        rollback = function(st, f, rng, force)
          if not (rng.chance(RATE) or force) then return nil end
          local to = f - rng.int(0, math.min(f, BACK))
          st.g.w:close()
          st.g = new_game()
          for i = 1, to do step(st.g, i) end
          return to
        end,
        finish = function(st) st.g.w:close() end,
      }, frames)
      assert.is_true(n >= 1, "no rollback in " .. frames .. " frames")
    end)

    for _, route in ipairs(ROUTES) do
      it("replays bit for bit after rollbacks by " .. route.name, function()
        local n = play_route(route, FRAMES)
        assert.is_true(n >= math.max(1, math.floor(FRAMES / RATE / 4)), route.name .. ": only " .. n .. " rollbacks")
      end)
    end
  end)

  describe("right after", function()
    -- A game played some frames: long-lived queries, holes at the end
    -- (at least 30 frames, then up to the first frame that leaves holes in
    -- Pos and in Dust), and the frame it stopped at.
    local function holes(g) return g.Pos:size() > g.Pos:count() and g.Dust:size() > g.Dust:count() end
    local function churned(g, after)
      local f = 0
      g = g or new_game()
      repeat
        f = f + 1
        step(g, f)
        if after then after(g) end
      until f >= 30 and holes(g) or f >= 200
      assert.is_true(holes(g), "the world has holes (dead records not reclaimed) in Pos and Dust")
      return g, f
    end

    local function compare(route, mine, ref)
      local d = order_differences(mine, ref)
      if #d > 0 then
        fail(string.format("%s: %d %s from the original's:\n  %s", route, #d,
          #d == 1 and "order differs" or "orders differ", table.concat(d, "\n  ")))
      end
    end

    -- Each case: the restored world's orders, and the original's at the
    -- moment (plain iterations first, then the change queries' passes).
    local CASES = {
      ["ecs.restore"] = function(which)
        local g = churned()
        local blob = g.w:snapshot()
        local mine_ref = orders(g, which)
        local r = setup(ecs.restore(blob))
        local mine = orders(r, which)
        g.w:close()
        r.w:close()
        return mine, mine_ref
      end,
      ["world:restore"] = function(which)
        local g, at = churned()
        local blob = g.w:snapshot()
        local mine_ref = orders(g, which)
        for f = at + 1, at + 7 do step(g, f) end
        g.w:restore(blob)
        local mine = orders(g, which)
        g.w:close()
        return mine, mine_ref
      end,
      ["world:restore of the snapshot just taken"] = function(which)
        local g = churned()
        local blob = g.w:snapshot()
        local mine_ref = orders(g, which)
        g.w:restore(blob)
        local mine = orders(g, which)
        g.w:close()
        return mine, mine_ref
      end,
      ["j:undo"] = function(which)
        local g, at = churned()
        local j = g.w:journal()
        local mine_ref = orders(g, which)
        for f = at + 1, at + 7 do step(g, f) end
        j:undo()
        local mine = orders(g, which)
        j:close()
        g.w:close()
        return mine, mine_ref
      end,
      ["j:undo with nothing to undo"] = function(which)
        local g = churned()
        local j = g.w:journal()
        local mine_ref = orders(g, which)
        j:undo()
        local mine = orders(g, which)
        j:close()
        g.w:close()
        return mine, mine_ref
      end,
      ["apply_delta"] = function(which)
        local g, replica = new_game(), new_game()
        local j = g.w:journal()
        churned(g, function() replica.w:apply_delta(j:delta()) end)
        local mine_ref = orders(g, which)
        local mine = orders(replica, which)
        j:close()
        g.w:close()
        replica.w:close()
        return mine, mine_ref
      end,
    }

    -- Both halves of a case's orders, played once for its two tests.
    local played = {}
    local function orders_after(route)
      if not played[route] then
        local mine, ref = CASES[route]("all")
        local function split(list)
          local out = { plain = {}, changes = {} }
          for i = 1, #list do
            local half = (list[i].over or ""):find("change query", 1, true) and out.changes or out.plain
            half[#half + 1] = list[i]
          end
          return out
        end
        played[route] = { split(mine), split(ref) }
      end
      return played[route][1], played[route][2]
    end

    for _, route in ipairs({ "ecs.restore", "world:restore", "world:restore of the snapshot just taken", "j:undo",
                             "j:undo with nothing to undo", "apply_delta" }) do
      it(route .. ", every iteration visits in the original's order", function()
        local mine, ref = orders_after(route)
        compare("right after " .. route, mine.plain, ref.plain)
      end)
      it(route .. ", the change queries report what the original's do, in its order", function()
        local mine, ref = orders_after(route)
        compare("right after " .. route, mine.changes, ref.changes)
      end)
    end
  end)
end)
