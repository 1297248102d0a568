--[[
crossing_spec.lua -- where features cross: a seeded random sequence of
operations on one world, mirrored in the pure-Lua model of
spec/support/crossing_model.lua, with everything readable compared after
every operation. Features that work alone fail where they meet; this test
makes them meet at random.

Operations (weighted; the world stays between about 20 and 90 entities):
- create and destroy, single and batch (lists with dead handles and
  repeats); add, set, set_field and remove with values, positional and by
  name, on live, dead and null handles (errors compared);
- spawn (one value for all or per entity, components by name or object),
  prefabs with overrides (and prefabs made before a redefinition: refused),
  clone;
- observers made and closed: one counter per component and event, and
  rules that change the world (RULES below: destroy the entity, add or
  remove another component, set values, remove their own component, add
  while the entity dies, set a component whose destroy turn has passed,
  redefine a component with `{ migrate = true }`);
- entity fields with cleanup policies (`!clear`, `!remove`, `!destroy`),
  their policies and names changed by migration, holders destroyed in
  chains, policy components redefined by an observer during the sweep;
- hot reload: fields added, dropped, renamed and retyped (conversions that
  fail), an expression system refusing the drop or rename of its field, the
  system parked and given back with `replace_system`;
- loops by q:entities, q:each, q:columns and q:each_chunk (q:pointers on
  LuaJIT) writing values back, with creates, destroys, adds, removes,
  redefinitions, loads (world:restore, j:undo), breaks and errors inside
  their bodies; passes over `changed`/`added` queries;
- world:update: a Lua system over a `changed` query, a Lua system that
  loads from inside its loop, two expression systems; `threads = 2` on even
  seeds;
- snapshots, world:restore (with and without migrate), ecs.restore; a
  journal whose j:delta goes to a replica (also from inside a loop over the
  replica, whose writes the load drops, and twice: refused) and j:undo.

After every operation: count, alive, has and get of every component for
every tracked entity (the live ones and the last dead ones), each
component's count and fields (with policies), each query's count and the
set q:entities() visits (never the order), each change query's count
between what it must and may report, the events each observer heard during
the operation, per entity (none missed or doubled), on_remove's entity
alive with the value readable, "no policy field names a dead entity", and
world:check(). At a delta the replica is compared the same way and by state
hash; ecs.restore's world is compared with the snapshot's model.

Environment:
  ECS_CROSSING_SEED   one seed (default: the three of SEEDS)
  ECS_CROSSING_STEPS  operations per seed (default 500; 60 under
                      ECS_GC_STRESS; test.sh gives 100 under valgrind and
                      20000 in its soak stage, ECS_SOAK=1)
  ECS_CROSSING_SKIP   what to leave out, comma-separated, to let a run go
                      past a known defect: operation kinds (the keys of
                      WEIGHTS), `rules` or one rule by its name (RULES),
                      `threads`, `loop_load`, `loop_migrate`
  ECS_CROSSING_STATS  print what each run went through
  ECS_CROSSING_HISTORY  operations a failure lists before its own
                      (default 20)
A failure names the seed, the step, the operation, the operations before
it, and the command that reproduces it (on the same Lua: q:pointers runs
on LuaJIT only, so the sequences differ from there on).

The common subset of every supported Lua (no //, bit operators, goto,
<close>, string.pack; its own generator, not math.random).
]]
--[[
On LuaJIT this file and the model run interpreted, always: the library
they drive (lua/ecs, the binding, q:pointers' FFI loops inside it) stays
compiled. Compiled by Debian 12's LuaJIT (2.1.0-beta3, snapshot of
2022-03-20), the model's lookups in tables keyed by entity handles
(Model:matches from Model:match_set) miss keys that are there: seeds 26
and 20261201 fail within 330 steps with "query Q3 visits entity(46.0), not
a match in the model" while the model's own has() says it matches. The
same code interpreted, or with any probe added to it, is right; turning off
each optimization (jit.opt.start("-fold"), "-cse", "-fwd", "-dce", ...)
does not help, so the fault is in recording; an upstream build of the same
vintage does not show it. This file does the same kinds of lookups (the
sets a loop visited, the events heard, the expected matches), where a miss
would hide a defect instead of raising one, so none of the reference's
code is compiled. Cost: the LuaJIT run still takes less than Lua 5.1's.
]]
local jit = rawget(_G, "jit")
if jit then jit.off(true, true) end

local ecs = require("ecs")
local compat = require("spec.support.lua")
local Model = require("spec.support.crossing_model")

local null = ecs.null
local unpack = compat.unpack
local stress = os.getenv("ECS_GC_STRESS")
local function env_int(name)
  local v = tonumber(os.getenv(name) or "")
  return v and math.floor(v) or nil
end
local STEPS = env_int("ECS_CROSSING_STEPS") or ((stress and stress ~= "") and 60 or 500)
-- 5 and 26 meet the first two defects this test found (a doubled
-- on_remove; j:undo of a world's first entity) within 400 operations on
-- Lua 5.1-5.4; 26 runs with threads (an even seed)
local SEEDS = { 5, 26, 20261201 }
if env_int("ECS_CROSSING_SEED") then SEEDS = { env_int("ECS_CROSSING_SEED") } end
local HISTORY = env_int("ECS_CROSSING_HISTORY") or 20
local SKIP = {}
for k in (os.getenv("ECS_CROSSING_SKIP") or ""):gmatch("[%w_]+") do SKIP[k] = true end
local CLOSE = compat.version >= "5.4" and not compat.jit -- loops left early write back

-- {{{ a generator of its own (L'Ecuyer's combined generator, Schrage's
-- method: every product is exact in a double, so every Lua draws the same)
local function prng(seed)
  local s1 = seed % 2147483562 + 1
  local s2 = (seed * 7 + 12345) % 2147483398 + 1
  local r = {}
  function r.float()
    local k = math.floor(s1 / 53668)
    s1 = 40014 * (s1 - k * 53668) - k * 12211
    if s1 < 0 then s1 = s1 + 2147483563 end
    k = math.floor(s2 / 52774)
    s2 = 40692 * (s2 - k * 52774) - k * 3791
    if s2 < 0 then s2 = s2 + 2147483399 end
    local z = s1 - s2
    if z < 1 then z = z + 2147483562 end
    return z / 2147483563
  end
  function r.int(a, b)
    if not b then a, b = 1, a end
    return a + math.floor(r.float() * (b - a + 1))
  end
  for _ = 1, 8 do r.float() end
  return r
end
-- }}}

-- {{{ the world's shape
local NAMES = { "A", "B", "T", "M", "L", "R", "D" }   -- creation order
local SCHEMAS = {
  A = { "x:f32", "n:i32" },
  B = { "v:f64", "s:lua" },
  M = { "a:f64", "b:i32" },
  L = { "to:entity!clear", "k:i32" },
  R = { "to:entity!remove" },
  D = { "to:entity!destroy", "w:f64" },
}
-- queries: with, without, any, optional (no part in matching), disabled, and
-- change terms (one kind per query)
local QDEFS = {
  { id = "Q1", with = { "A" } },
  { id = "Q2", with = { "A", "B" } },
  { id = "Q3", with = { "B" }, without = { "T" } },
  { id = "Q4", with = { "M" } },
  { id = "Q5", with = { "A", "M" }, without = { "D" } },
  { id = "Q6", with = { "D" } },
  { id = "Q7", with = { "L" }, without = { "R" } },
  { id = "Q8", with = { "A" }, without = { "T" }, disabled = true },
  { id = "Q9", with = { "L" }, any = { "B", "M", "R" } },
  { id = "Q10", with = { "M" }, optional = { "A", "L" } },
  { id = "C1", with = { "A" }, kind = "changed", names = { "A" } },
  { id = "C2", with = { "B" }, kind = "added", names = { "B" } },
  { id = "C3", with = { "M" }, kind = "changed", names = { "M" } },
  { id = "C4", with = { "A", "B" }, kind = "changed", names = { "A", "B" } },
  { id = "C5", with = { "L" }, kind = "changed", names = { "L" } },
}
local QD = {}
for _, d in ipairs(QDEFS) do d.without = d.without or {}; QD[d.id] = d end

local LUA_VALUES = {
  function() return nil end, function() return "s" end, function() return 7 end,
  function() return true end, function() return { 1, 2 } end,
  function() return { k = "v", t = { 3 } } end,
}

local WEIGHTS = {
  create = 8, create_batch = 3, destroy = 6, destroy_batch = 2, add = 14, set = 5,
  set_field = 6, set_many = 2, remove = 6, spawn = 3, prefab = 2, clone = 2, observer = 2, migrate = 4,
  msys = 1, pass = 4, entities = 4, each = 3, columns = 3, each_chunk = 3, pointers = 2, update = 4,
  snapshot = 2, restore = 2, ecs_restore = 1, journal = 2, delta = 3, undo = 2, disable = 4,
}
local KINDS = {}
for k in pairs(WEIGHTS) do KINDS[#KINDS + 1] = k end
table.sort(KINDS)

-- Observers that change the world, written once against an adapter (the
-- world's or the model's). Each changes only the entity it is given (so
-- the order of a cleanup sweep does not matter) and no chain of them comes
-- back to the event that started it.
local RULES = {
  { name = "rule_destroy", comp = "A", kind = "on_add", action = function(x, e)   -- destroys
      local n = x.field("A", e, "n")
      if n and n % 7 == 3 then x.destroy(e) end
    end },
  { name = "rule_add", comp = "A", kind = "on_set", action = function(x, e)   -- adds another component
      local n = x.field("A", e, "n")
      if n and n % 5 == 4 and not x.has("T", e) then x.add("T", e) end
    end },
  { name = "rule_remove", comp = "T", kind = "on_add", action = function(x, e)   -- removes another one
      if x.has("M", e) then x.remove("M", e) end
    end },
  { name = "rule_set", comp = "M", kind = "on_remove", action = function(x, e) -- sets a value
      if x.has("B", e) then
        local v = x.field("B", e, "v")
        if v < 0 and v > -15 then x.set_field("B", e, "v", -v) end
      end
    end },
  { name = "rule_remove_own", comp = "B", kind = "on_set", action = function(x, e)   -- removes its own component
      if x.has("B", e) and x.field("B", e, "v") >= 15 then x.remove("B", e) end
    end },
  { name = "rule_add_dying", comp = "B", kind = "on_remove", action = function(x, e) -- adds (also while e dies)
      if not x.has("T", e) then x.add("T", e) end
    end },
  { name = "rule_set_dying", comp = "D", kind = "on_remove", action = function(x, e) -- sets A (also after A's turn)
      if x.has("A", e) then x.set_field("A", e, "n", x.field("A", e, "n") + 1) end
    end },
  { name = "rule_migrate", comp = "T", kind = "on_remove", action = function(x, e) -- hot reload
      -- toggles M.c and R.pad in turn (each adapter counts its own calls)
      local _ = e
      x.toggles = (x.toggles or 0) + 1
      local name, field = "M", "c:f64"
      if x.toggles % 2 == 0 then name, field = "R", "pad:f64" end
      local specs, found = {}, false
      for _, s in ipairs(x.fields(name)) do
        if s == field then found = true else specs[#specs + 1] = s end
      end
      if not found then specs[#specs + 1] = field end
      x.redefine(name, specs)
    end },
}

-- What the Lua system over the `changed` query does to each entity it visits.
local function sys_action(x, e)
  local n = x.field("A", e, "n")
  if n % 6 == 5 then x.destroy(e); return end
  if x.has("B", e) then x.set_field("B", e, "v", x.field("B", e, "v") + 1) end
end
-- }}}

-- {{{ failures
local FAIL = {}
local function fail(msg) error(setmetatable({ msg = msg }, FAIL), 0) end
local function check(cond, msg, ...)
  if not cond then fail(select("#", ...) > 0 and msg:format(...) or msg) end
end
local RAISE = setmetatable({}, { __tostring = function() return "RAISE" end })

local function show(v)
  if ecs.is_entity(v) then return ecs.tostring(v) end
  if type(v) == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    local parts = {}
    for _, k in ipairs(keys) do
      local x = v[k]
      if x == nil then x = v[tonumber(k)] end
      parts[#parts + 1] = k .. "=" .. show(x)
    end
    return "{" .. table.concat(parts, " ") .. "}"
  end
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end
local function E(e) return ecs.tostring(e) end
-- }}}

local H = {}    -- helpers: H.f(S, ...)
local OPS = {}  -- operations: OPS[kind](S)

-- what a run went through (ECS_CROSSING_STATS=1 prints it)
function H.tally(S, key) S.stats[key] = (S.stats[key] or 0) + 1 end

-- {{{ the run's state
local function note(S, fmt, ...)
  S.desc[#S.desc + 1] = select("#", ...) > 0 and fmt:format(...) or fmt
end

function H.real_api(S)
  local x = {}
  x.alive = function(e) return S.w:alive(e) end
  x.has = function(name, e) return S.C[name]:has(e) end
  x.field = function(name, e, f) return S.C[name]:field(e, f) end
  x.fields = function(name) return S.C[name]:fields() end
  x.add = function(name, e, given)
    if given and next(given) ~= nil then return S.C[name]:add(e, given) end
    return S.C[name]:add(e)
  end
  x.set_field = function(name, e, f, v) return S.C[name]:set_field(e, f, v) end
  x.remove = function(name, e) return S.C[name]:remove(e) end
  x.destroy = function(e) return S.w:destroy(e) end
  x.redefine = function(name, specs) return S.w:component(name, specs, { migrate = true }) end
  return x
end

-- An observer on both sides: it counts what it hears per entity; a rule's
-- action runs after the count.
function H.observe(S, comp, kind, rule)
  S.next_obs = S.next_obs + 1
  local id = S.next_obs
  local C = S.C[comp]
  local real = S.real
  local o = C[kind](C, function(e)
    local t = S.heard[id]
    if not t then t = {}; S.heard[id] = t end
    t[e] = (t[e] or 0) + 1
    if kind == "on_remove" and not (S.w:alive(e) and C:has(e)) then
      S.violations[#S.violations + 1] = ("%s.on_remove of %s: alive %s, has %s"):format(comp, E(e),
        tostring(S.w:alive(e)), tostring(C:has(e)))
    end
    if rule then rule.action(real, e) end
  end)
  S.m:observe(id, comp, kind, rule and rule.action)
  S.obs[#S.obs + 1] = { id = id, o = o, comp = comp, kind = kind, rule = rule }
  return id
end

function H.new_world(S)
  local w = ecs.world(S.threads and { threads = 2 } or nil)
  S.w = w
  S.m = Model.new(null)
  S.C = {}
  for _, name in ipairs(NAMES) do
    S.C[name] = w:component(name, SCHEMAS[name])
    S.m:component(name, SCHEMAS[name])
  end
  S.Q = {}
  for _, d in ipairs(QDEFS) do
    local t = {}
    for _, n in ipairs(d.with) do t[#t + 1] = S.C[n] end
    if d.disabled then t.disabled = true end
    if d.optional then
      t.optional = {}
      for _, n in ipairs(d.optional) do t.optional[#t.optional + 1] = S.C[n] end
    end
    if d.any then
      t.any = {}
      for _, n in ipairs(d.any) do t.any[#t.any + 1] = S.C[n] end
    end
    if #d.without > 0 then
      t.without = {}
      for _, n in ipairs(d.without) do t.without[#t.without + 1] = S.C[n] end
    end
    if d.kind then
      t[d.kind] = {}
      for _, n in ipairs(d.names) do t[d.kind][#t[d.kind] + 1] = S.C[n] end
      S.m:watch(d.id, d.kind, d.names, d.with, d.without)
    end
    S.Q[d.id] = w:query(t)
  end
  S.real = H.real_api(S)
  S.m.on_redefine = function() if S.j then S.jlost = true end end
  -- a replica makes a change of policies itself: no delta carries one
  -- (docs/persistence.md, "A change of policies alone")
  S.m.on_policies = function(name, specs)
    if S.replica then S.replica:component(name, specs, { migrate = true }) end
  end
  S.next_obs, S.obs, S.heard, S.violations = 0, {}, {}, {}
  for _, name in ipairs(NAMES) do
    for _, kind in ipairs({ "on_add", "on_set", "on_remove" }) do H.observe(S, name, kind) end
  end
  if not SKIP.rules then
    for _, rule in ipairs(RULES) do
      if not SKIP[rule.name] and S.r.int(7) > 1 then
        H.observe(S, rule.comp, rule.kind, rule)
      end
    end
  end
  -- systems: a Lua system over a changed query, a Lua system that may load
  -- from inside its loop, two expression systems
  S.lsys_trace, S.loader_trace = {}, {}
  w:system("lsys", S.Q.C1, function(_, q)
    for e in q:entities() do
      S.lsys_trace[#S.lsys_trace + 1] = e
      sys_action(S.real, e)
    end
  end)
  w:system("loader", S.Q.Q2, function(_, q)
    local arm = S.loader_arm
    if not arm then return end
    S.loader_arm = nil
    local k, trace = 0, S.loader_trace
    for e in q:entities() do
      k = k + 1
      trace[#trace + 1] = e
      if k == arm.at then
        local ok, err = H.load_real(S, arm)
        trace[#trace + 1] = { ok = ok, err = err }
      end
    end
  end)
  w:system("xsys", S.Q.Q5, "A.x = A.x + 1")
  w:system("msys", S.Q.Q5, "M.a += 0.5")
  S.msys_expr = "a"
  S.snaps, S.prefabs = {}, {}
  S.live, S.dead = {}, {}
  S.loads = 0
end
-- }}}

-- {{{ entities and values
function H.refresh(S)
  local live = {}
  for e in pairs(S.m.alive) do live[#live + 1] = e end
  table.sort(live, function(a, b) return ecs.id(a) < ecs.id(b) end)
  for _, e in ipairs(S.live) do
    if not S.m.alive[e] then
      S.dead[#S.dead + 1] = e
      if #S.dead > 24 then table.remove(S.dead, 1) end
    end
  end
  S.live = live
end

function H.pick_live(S)
  for _ = 1, 4 do
    local e = S.live[S.r.int(math.max(#S.live, 1))]
    if e and S.m.alive[e] then return e end
  end
  return nil
end

-- mostly a live entity; sometimes a dead one or ecs.null
function H.pick(S)
  local k = S.r.int(12)
  if k == 1 then return null end
  if k == 3 and S.cur and S.m.alive[S.cur] then return S.cur end -- a loop's current entity
  if k == 2 and #S.dead > 0 then return S.dead[S.r.int(#S.dead)] end
  return H.pick_live(S) or null
end

function H.value(S, f, holder)
  local r = S.r
  if f.type == "f32" or f.type == "f64" then return r.int(-40, 40) * 0.5
  elseif f.type == "i32" then return r.int(-30, 30)
  elseif f.type == "lua" then return LUA_VALUES[r.int(#LUA_VALUES)]()
  elseif f.type == "entity" then
    local k = r.int(10)
    if k == 1 then return null end
    if k == 2 and holder and S.m.alive[holder] then return holder end
    return H.pick_live(S) or null
  end
  error("no value for type " .. f.type)
end

-- A map of given values (a random subset of the fields).
function H.given(S, name, holder)
  local g = {}
  for _, f in ipairs(S.m.schema[name]) do
    if S.r.int(4) > 1 then g[f.name] = H.value(S, f, holder) end
  end
  return g
end

-- The arguments of add/set for a given map: by name or positional.
function H.args(S, name, g)
  local fields = S.m.schema[name]
  if #fields == 0 then return {}, 0 end
  if S.r.int(2) == 1 then return { g }, 1 end
  local args = {}
  for i, f in ipairs(fields) do args[i] = g[f.name] end
  return args, #fields
end

function H.comp_with_fields(S)
  local names = { "A", "B", "M", "L", "R", "D" }
  return names[S.r.int(#names)]
end
-- }}}

-- {{{ comparing a world with a model
local function numeric(t) return t == "f32" or t == "f64" or t == "i32" end

-- Compare a world with a model over the handles `handles`; getC(name)
-- gives the world's manager. opts.policies: compare the fields with their
-- policies (the world that defined them).
function H.compare_world(w, getC, mm, handles, opts)
  local label = opts.label
  check(w:count() == mm.nalive, "%s: count() %d, model %d", label, w:count(), mm.nalive)
  for _, name in ipairs(NAMES) do
    local C = getC(name)
    check(C ~= nil, "%s: no component %s", label, name)
    local fields = C:fields()
    local want = mm.schema[name]
    check(#fields == #want, "%s: %s:fields() %s, model %d fields", label, name, show(fields), #want)
    for i, f in ipairs(want) do
      local spec = opts.policies and Model.spec_of(f) or (f.name .. ":" .. f.type)
      local got = opts.policies and fields[i] or fields[i]:gsub("!%a+$", "")
      check(got == spec, "%s: %s:fields()[%d] %s, model %s", label, name, i, tostring(fields[i]), spec)
    end
    local n = 0
    for e in pairs(mm.inst[name]) do if mm.alive[e] then n = n + 1 end end
    check(C:count() == n, "%s: %s:count() %d, model %d", label, name, C:count(), n)
  end
  for _, e in ipairs(handles) do
    local alive = mm.alive[e] == true
    check(w:alive(e) == alive, "%s: alive(%s) %s, model %s", label, E(e), tostring(w:alive(e)), tostring(alive))
    local enabled = alive and not mm.disabled[e]
    check(w:enabled(e) == enabled, "%s: enabled(%s) %s, model %s", label, E(e), tostring(w:enabled(e)),
      tostring(enabled))
    for _, name in ipairs(NAMES) do
      local C = getC(name)
      local vals = alive and mm.inst[name][e] or nil
      local has = C:has(e)
      check(has == (vals ~= nil), "%s: %s:has(%s) %s, model %s", label, name, E(e), tostring(has),
        tostring(vals ~= nil))
      local got = compat.pack(C:get(e))
      if vals == nil then
        check(got.n == 0, "%s: %s:get(%s) gave %d values for an absent component", label, name, E(e), got.n)
      else
        local want = mm.schema[name]
        check(got.n == #want, "%s: %s:get(%s) gave %d values, model %d", label, name, E(e), got.n, #want)
        for i, f in ipairs(want) do
          local mv = mm:value(vals, f)
          check(Model.deep_equal(got[i], mv), "%s: %s.%s of %s is %s, model %s", label, name, f.name, E(e),
            show(got[i]), show(mv))
        end
      end
    end
  end
  local good, bad = w:check()
  check(good, "%s: world:check(): %s", label, tostring(bad))
end

-- An entity as the world and the model see it, for messages.
function H.describe(S, e)
  local w, m = {}, {}
  for _, name in ipairs(NAMES) do
    if S.C[name]:has(e) then w[#w + 1] = name end
    if S.m.alive[e] and S.m.inst[name][e] then m[#m + 1] = name end
  end
  return ("world: alive %s, has %s; model: alive %s, has %s"):format(tostring(S.w:alive(e)),
    table.concat(w, " "), tostring(S.m.alive[e] == true), table.concat(m, " "))
end

-- Everything readable of the main world against the model.
function H.compare(S)
  local m, w = S.m, S.w
  local handles = {}
  for _, e in ipairs(S.live) do handles[#handles + 1] = e end
  for _, e in ipairs(S.dead) do handles[#handles + 1] = e end
  handles[#handles + 1] = null
  -- events first (per observer, per entity, what this operation made each
  -- hear): an event missed or doubled explains the differences it makes
  for _, o in ipairs(S.obs) do
    local got, want = S.heard[o.id] or {}, m.expect[o.id] or {}
    for e, n in pairs(want) do
      check(got[e] == n, "observer %d (%s.%s%s) heard %s %s times, model %d", o.id, o.comp, o.kind,
        o.rule and ", a rule" or "", E(e), tostring(got[e] or 0), n)
    end
    for e, n in pairs(got) do
      check(want[e] == n, "observer %d (%s.%s%s) heard %s %d times, model %s", o.id, o.comp, o.kind,
        o.rule and ", a rule" or "", E(e), n, tostring(want[e] or 0))
    end
  end
  H.compare_world(w, function(n) return S.C[n] end, m, handles, { label = "world", policies = true })
  -- queries: the set each visits (no order), change queries' bounds
  for _, d in ipairs(QDEFS) do
    local q = S.Q[d.id]
    if d.kind then
      local must, may, nmust, nmay = m:due(d.id)
      local n = q:count()
      if n < nmust or n > nmay then -- say which (the pass this takes does not matter now)
        local got = {}
        for e in q:entities() do got[#got + 1] = E(e) end
        local function list(set)
          local out = {}
          for e in pairs(set) do out[#out + 1] = E(e) end
          table.sort(out)
          return table.concat(out, " ")
        end
        table.sort(got)
        fail(("query %s: count() %d, model between %d and %d; a pass visits {%s}, must {%s}, may {%s}")
          :format(d.id, n, nmust, nmay, table.concat(got, " "), list(must), list(may)))
      end
    else
      local want, nwant = m:match_set(d)
      local seen = {}
      for e in q:entities() do
        if not want[e] then
          fail(("query %s visits %s, not a match in the model (%s)"):format(d.id, E(e), H.describe(S, e))) end
        check(not seen[e], "query %s visits %s twice", d.id, E(e))
        seen[e] = true
      end
      for e in pairs(want) do
        if not seen[e] then fail(("query %s does not visit %s (%s)"):format(d.id, E(e), H.describe(S, e))) end
      end
      check(q:count() == nwant, "query %s: count() %d, model %d", d.id, q:count(), nwant)
    end
  end
  check(#S.violations == 0, "observer: %s", S.violations[1] or "")
  -- no field with a policy names a dead entity
  for _, name in ipairs(NAMES) do
    for _, f in ipairs(m.schema[name]) do
      if f.policy then
        local C = S.C[name]
        for e in C:entities() do
          local v = C:field(e, f.name)
          check(v == null or w:alive(v), "%s.%s of %s names the dead %s", name, f.name, E(e), E(v))
        end
      end
    end
  end
end
-- }}}

-- {{{ simple operations (at the top and inside loop bodies)
function OPS.create(S)
  local e = S.w:create()
  note(S, "create -> %s", E(e))
  S.m:create(e)
end

function OPS.create_batch(S)
  local n = S.r.int(0, 4)
  local es = S.w:create(n)
  check(#es == n, "create(%d) gave %d entities", n, #es)
  local names = {}
  for i, e in ipairs(es) do S.m:create(e); names[i] = E(e) end
  note(S, "create(%d) -> %s", n, table.concat(names, " "))
end

function OPS.destroy(S)
  local e = H.pick(S)
  note(S, "destroy %s", E(e))
  local got = S.w:destroy(e)
  local want = S.m:destroy(e)
  check(got == want, "destroy(%s) returned %s, model %s", E(e), tostring(got), tostring(want))
end

function OPS.destroy_batch(S)
  local list = {}
  for i = 1, S.r.int(0, 5) do
    list[i] = S.r.int(5) == 1 and list[i - 1] or H.pick(S)
    if list[i] == nil then list[i] = null end
  end
  local names = {}
  for i, e in ipairs(list) do names[i] = E(e) end
  note(S, "destroy {%s}", table.concat(names, " "))
  local got = S.w:destroy(list)
  local want = S.m:destroy_list(list)
  check(got == want, "destroy(list) returned %s, model %d", tostring(got), want)
end

-- world:disable or world:enable of a live, dead or null handle
function OPS.disable(S)
  local e = H.pick(S)
  local on = S.r.int(3) == 1
  note(S, "%s %s", on and "enable" or "disable", E(e))
  local ok, err = pcall(on and S.w.enable or S.w.disable, S.w, e)
  local mok, merr = S.m:switch(e, on)
  check(ok == mok, "%s(%s): ok %s (%s), model %s", on and "enable" or "disable", E(e), tostring(ok),
    tostring(err), tostring(mok))
  if not ok then
    check(tostring(err):find(merr, 1, true), "%s(%s): error %s, model %s", on and "enable" or "disable",
      E(e), tostring(err), merr)
  end
end

-- add or set: the world's result (ok, error) against the model's
function H.write(S, how)
  local name = NAMES[S.r.int(#NAMES)]
  local e = H.pick(S)
  local g = H.given(S, name, e)
  local args, n = H.args(S, name, g)
  note(S, "%s:%s(%s, %s%s)", name, how, E(e), show(g), n == 1 and " by name" or "")
  local C = S.C[name]
  local ok, err = pcall(C[how], C, e, unpack(args, 1, n))
  local mok, merr = S.m[how](S.m, name, e, g)
  check(ok == mok, "%s:%s(%s): ok %s (%s), model %s (%s)", name, how, E(e), tostring(ok), tostring(err),
    tostring(mok), tostring(merr))
  if not ok then
    check(tostring(err):find(merr, 1, true), "%s:%s(%s): error %s, model %s", name, how, E(e), tostring(err), merr)
  end
end
function OPS.add(S) H.write(S, "add") end
function OPS.set(S) H.write(S, "set") end

function OPS.set_field(S)
  local name = H.comp_with_fields(S)
  local fields = S.m.schema[name]
  local f = fields[S.r.int(#fields)]
  local e = H.pick(S)
  local v = H.value(S, f, e)
  note(S, "%s:set_field(%s, %s, %s)", name, E(e), f.name, show(v))
  local C = S.C[name]
  local ok, err = pcall(C.set_field, C, e, f.name, v)
  if v == nil then v = Model.zero(f, null) end
  local mok, merr = S.m:set_field(name, e, f.name, v)
  check(ok == mok, "%s:set_field(%s): ok %s (%s), model %s", name, E(e), tostring(ok), tostring(err), tostring(mok))
  if not ok then check(tostring(err):find(merr, 1, true), "set_field error %s, model %s", tostring(err), merr) end
end

-- C:set_many(list, field, v): every entity checked first, then every
-- value written, then on_set entity by entity
function OPS.set_many(S)
  local name = H.comp_with_fields(S)
  local fields = S.m.schema[name]
  local f = fields[S.r.int(#fields)]
  local list, names = {}, {}
  for i = 1, S.r.int(0, 4) do
    local e = H.pick(S)
    if S.r.int(3) > 1 then -- mostly holders
      for _ = 1, 4 do
        local x = H.pick_live(S)
        if x and S.m.inst[name][x] then e = x; break end
      end
    end
    list[i], names[i] = e, E(e)
  end
  local v, per = H.value(S, f), false
  if f.type ~= "lua" and S.r.int(2) == 1 then
    v, per = {}, true
    for i = 1, #list do v[i] = H.value(S, f) end
  end
  note(S, "%s:set_many({%s}, %s, %s)", name, table.concat(names, " "), f.name, show(v))
  local C = S.C[name]
  local ok, err = pcall(C.set_many, C, list, f.name, v)
  local m, bad = S.m, nil
  for i, e in ipairs(list) do
    if not bad and not (m.alive[e] and m.inst[name][e]) then
      bad = ("list[%d]: %s"):format(i, m.alive[e] and "entity does not have the component" or "entity is not alive")
    end
  end
  if bad then
    check(not ok and tostring(err):find(bad, 1, true), "%s:set_many: %s, model %s", name, tostring(err), bad)
    return
  end
  check(ok, "%s:set_many: %s", name, tostring(err))
  for i, e in ipairs(list) do
    local x = v
    if per then x = v[i] end
    m:write(name, e, f.name, x)
  end
  for _, e in ipairs(list) do
    if m.alive[e] and m.inst[name][e] then m:emit("on_set", name, e) end
  end
end

function OPS.remove(S)
  local name = NAMES[S.r.int(#NAMES)]
  local e = H.pick(S)
  note(S, "%s:remove(%s)", name, E(e))
  local got = S.C[name]:remove(e)
  local want = S.m:remove(name, e)
  check(got == want, "%s:remove(%s) returned %s, model %s", name, E(e), tostring(got), tostring(want))
end

-- one of the simple operations, for loop bodies
local MUTATIONS = { "create", "destroy", "add", "add", "set", "set_field", "remove", "remove" }
function H.mutate(S)
  local k = MUTATIONS[S.r.int(#MUTATIONS)]
  if SKIP[k] then return end
  OPS[k](S)
end
-- }}}

-- {{{ spawn, prefabs, clone
-- A spawn spec over some components: the world's form and the model's.
function H.spawn_spec(S, n, names, per_entity)
  local spec, mspec, shown = {}, {}, {}
  for _, name in ipairs(names) do
    local key = S.r.int(3) == 1 and S.C[name] or name
    local fields = S.m.schema[name]
    if #fields == 0 or S.r.int(4) == 1 then
      spec[key], mspec[name] = true, true
      shown[#shown + 1] = name .. "=true"
    else
      local t, mt = {}, {}
      for _, f in ipairs(fields) do
        if S.r.int(4) > 1 then
          if per_entity and f.type ~= "lua" and S.r.int(3) == 1 then
            local arr, marr = {}, { per_entity = true }
            for i = 1, n do arr[i] = H.value(S, f); marr[i] = arr[i] end
            t[f.name], mt[f.name] = arr, marr
          else
            local v = H.value(S, f)
            t[f.name], mt[f.name] = v, v
          end
        end
      end
      spec[key], mspec[name] = t, mt
      shown[#shown + 1] = name .. "=" .. show(t)
    end
  end
  return spec, mspec, table.concat(shown, " ")
end

function H.some_names(S, list)
  local out = {}
  for _, name in ipairs(list) do if S.r.int(3) == 1 then out[#out + 1] = name end end
  if #out == 0 then out[1] = list[S.r.int(#list)] end
  return out
end

function OPS.spawn(S)
  local n = S.r.int(1, 3)
  local spec, mspec, shown = H.spawn_spec(S, n, H.some_names(S, NAMES), true)
  note(S, "spawn(%d, %s)", n, shown)
  local es = S.w:spawn(n, spec)
  check(#es == n, "spawn(%d) gave %d entities", n, #es)
  local names = {}
  for i, e in ipairs(es) do names[i] = E(e) end
  note(S, "-> %s", table.concat(names, " "))
  S.m:spawn(es, mspec)
end

function OPS.prefab(S)
  if #S.prefabs == 0 or S.r.int(3) == 1 then
    -- no policy component: a prefab's handles could be dead when it spawns
    local names = H.some_names(S, { "A", "B", "T", "M" })
    local spec, mspec, shown = H.spawn_spec(S, 1, names, false)
    local versions = {}
    for _, name in ipairs(names) do versions[name] = S.m.version[name] end
    local pf = S.w:prefab(spec)
    S.prefabs[#S.prefabs + 1] = { pf = pf, mspec = mspec, versions = versions, shown = shown }
    if #S.prefabs > 3 then table.remove(S.prefabs, 1) end
    note(S, "prefab(%s)", shown)
    return
  end
  local p = S.prefabs[S.r.int(#S.prefabs)]
  local n = S.r.int(1, 3)
  local over, mover, oshown
  if S.r.int(2) == 1 then
    over, mover, oshown = H.spawn_spec(S, n, { NAMES[S.r.int(#NAMES)] }, true)
  end
  note(S, "spawn(%d, prefab %s, %s)", n, p.shown, tostring(oshown))
  local stale
  for name, v in pairs(p.versions) do
    if S.m.version[name] ~= v then stale = name end
  end
  local ok, es = pcall(S.w.spawn, S.w, n, p.pf, over)
  if stale then
    check(not ok and tostring(es):find("prefab was made before", 1, true),
      "a prefab made before %s was redefined spawned: %s", stale, tostring(es))
    return
  end
  check(ok, "spawn from a prefab: %s", tostring(es))
  check(#es == n, "spawn(%d, prefab) gave %d entities", n, #es)
  local spec = {}
  for name, g in pairs(p.mspec) do spec[name] = g end
  for name, g in pairs(mover or {}) do
    local base = spec[name]
    if type(base) ~= "table" then base = {} end
    local merged = {}
    for k, v in pairs(base) do merged[k] = v end
    if type(g) == "table" then for k, v in pairs(g) do merged[k] = v end end
    spec[name] = merged
  end
  S.m:spawn(es, spec)
end

function OPS.clone(S)
  local e = H.pick(S)
  note(S, "clone(%s)", E(e))
  local ok, c = pcall(S.w.clone, S.w, e)
  if not S.m.alive[e] then
    check(not ok, "clone of the dead %s gave %s", E(e), tostring(c))
    return
  end
  check(ok, "clone(%s): %s", E(e), tostring(c))
  note(S, "-> %s", E(c))
  S.m:spawn({ c }, S.m:clone_spec(e))
end
-- }}}

-- {{{ observers
function OPS.observer(S)
  if S.r.int(2) == 1 and #S.obs > 0 then
    local k = S.r.int(#S.obs)
    local o = table.remove(S.obs, k)
    note(S, "close observer %d (%s.%s%s)", o.id, o.comp, o.kind, o.rule and ", a rule" or "")
    o.o:close()
    S.m:unobserve(o.id)
    return
  end
  local active = {}
  for _, o in ipairs(S.obs) do if o.rule then active[o.rule] = true end end
  local missing = {}
  for _, rule in ipairs(RULES) do
    if not active[rule] and not SKIP.rules and not SKIP[rule.name] then
      missing[#missing + 1] = rule
    end
  end
  if #missing > 0 and S.r.int(2) == 1 then
    local rule = missing[S.r.int(#missing)]
    local id = H.observe(S, rule.comp, rule.kind, rule)
    note(S, "observer %d: the rule of %s.%s", id, rule.comp, rule.kind)
  else
    local comp = NAMES[S.r.int(#NAMES)]
    local kinds = { "on_add", "on_set", "on_remove" }
    local kind = kinds[S.r.int(3)]
    local id = H.observe(S, comp, kind)
    note(S, "observer %d: counts %s.%s", id, comp, kind)
  end
end
-- }}}

-- {{{ hot reload
-- A redefinition of one component from the model's schema: the name, the
-- new field list, the renames.
function H.migration(S)
  local m, r = S.m, S.r
  local names = { "A", "B", "M", "L", "R", "D" }
  local name = names[r.int(#names)]
  local fields = m.schema[name]
  local specs = {}
  for i, f in ipairs(fields) do specs[i] = Model.spec_of(f) end
  local rename
  local function find(fname)
    for i, f in ipairs(fields) do if f.name == fname then return i, f end end
  end
  local function toggle(spec)
    local i = find(spec:match("^[%w_]+"))
    if i then table.remove(specs, i) else specs[#specs + 1] = spec end
  end
  local function retype(fname, a, b)
    local i, f = find(fname)
    if i then specs[i] = Model.spec_of({ name = fname, type = f.type == a and b or a, policy = f.policy }) end
  end
  local function rename_field(a, b)
    local i, f = find(a)
    if not i then a, b = b, a; i, f = find(a) end
    rename = { [a] = b }
    specs[i] = Model.spec_of({ name = b, type = f.type, policy = f.policy })
  end
  local k = r.int(4)
  if name == "A" then
    if k == 1 then retype("x", "f32", "f64")
    elseif k == 2 then toggle("e2:f64")
    elseif k == 3 then table.remove(specs, (find("x"))) -- xsys names A.x: refused
    end                                                  -- k == 4: the same schema
  elseif name == "B" then toggle("w:f64")
  elseif name == "M" then
    local aname = find("a") and "a" or "a2"
    if k == 1 then retype(aname, "f64", "f32")
    elseif k == 2 then retype("b", "i32", "f64")
    elseif k == 3 then toggle("c:f64")
    else rename_field("a", "a2") end
  elseif name == "L" then
    local tname = find("to") and "to" or "tgt"
    if k == 1 then
      local i, f = find(tname)
      specs[i] = Model.spec_of({ name = tname, type = "entity", policy = f.policy == "clear" and "remove" or "clear" })
    elseif k == 2 then rename_field("to", "tgt")
    else toggle("pad:f64") end
  elseif name == "R" then toggle("pad:f64")
  else
    if k <= 2 then retype("w", "f64", "i32") else toggle("pad:f64") end
  end
  return name, specs, rename
end

-- Which system refuses a redefinition (an expression naming a field the
-- new list lacks), or nil.
function H.refusing_system(S, name, specs)
  local has = {}
  for _, s in ipairs(specs) do
    local f = Model.parse(s)
    if numeric(f.type) then has[f.name] = true end
  end
  if name == "A" and not has.x then return "xsys" end
  if name == "M" and S.msys_expr and not has[S.msys_expr] then return "msys" end
  return nil
end

function OPS.migrate(S)
  local name, specs, rename = H.migration(S)
  note(S, "component(%s, {%s}, migrate%s)", name, table.concat(specs, ", "), rename and " " .. show(rename) or "")
  local opts = { migrate = rename and { rename = rename } or true }
  local ok, res = pcall(S.w.component, S.w, name, specs, opts)
  local sys = H.refusing_system(S, name, specs)
  if sys then
    check(not ok and tostring(res):find("system '" .. sys .. "'", 1, true),
      "a redefinition that system '%s' refuses: %s %s", sys, tostring(ok), tostring(res))
    return
  end
  local mok, merr = S.m:redefine(name, specs, rename)
  check(ok == mok, "component(%s) migrate: ok %s (%s), model %s (%s)", name, tostring(ok), tostring(res),
    tostring(mok), tostring(merr))
  if ok then
    check(rawequal(res, S.C[name]), "a redefinition returned another manager")
  else
    check(tostring(res):find(merr, 1, true), "redefinition error %s, model %s", tostring(res), merr)
  end
end

function OPS.msys(S)
  if S.msys_expr then
    note(S, "replace_system msys: parked")
    S.w:replace_system("msys", S.Q.Q5, function() end)
    S.msys_expr = nil
  else
    local aname
    for _, f in ipairs(S.m.schema.M) do if f.name == "a" or f.name == "a2" then aname = f.name end end
    note(S, "replace_system msys: M.%s += 0.5", aname)
    S.w:replace_system("msys", S.Q.Q5, "M." .. aname .. " += 0.5")
    S.msys_expr = aname
  end
end
-- }}}

-- {{{ loads: restore, undo
-- A plan: { how = "restore" | "undo", snap =, migrate = }
function H.plan(S)
  if S.j and S.r.int(3) == 1 and not SKIP.undo then return { how = "undo" } end
  if #S.snaps == 0 or SKIP.restore then return nil end
  local snap = S.snaps[S.r.int(#S.snaps)]
  return { how = "restore", snap = snap, migrate = S.r.int(4) > 1 }
end

function H.load_real(S, plan)
  if plan.how == "undo" then return pcall(S.j.undo, S.j) end
  if plan.migrate then return pcall(S.w.restore, S.w, plan.snap.blob, { migrate = true }) end
  return pcall(S.w.restore, S.w, plan.snap.blob)
end

-- The model's side of a load, given the world's outcome: checks it and
-- returns whether the load happened.
function H.load_model(S, plan, ok, err)
  local m = S.m
  if plan.how == "undo" then
    if S.jlost then
      check(not ok and tostring(err):find("lost track", 1, true), "undo after the journal lost track: %s %s",
        tostring(ok), tostring(err))
      return false
    end
    check(ok, "j:undo(): %s", tostring(err))
    m:undo(S.mark)
    S.loads = S.loads + 1
    return true
  end
  local state = plan.snap.state
  if not plan.migrate then
    local differs = m:schema_differs(state)
    if differs then
      check(not ok and tostring(err):find("differs", 1, true),
        "restore of a snapshot whose %s has another schema: %s %s", differs, tostring(ok), tostring(err))
      return false
    end
  end
  local mok, merr = m:load(state, plan.migrate) -- (changes nothing when it fails)
  if not mok then
    check(not ok and tostring(err):find(merr, 1, true), "restore: ok %s (%s), model fails (%s)", tostring(ok),
      tostring(err), merr)
    return false
  end
  check(ok, "restore: %s", tostring(err))
  -- (an open journal records a restore: docs/persistence.md, "A restore while recording")
  S.loads = S.loads + 1
  return true
end

function H.load(S, plan)
  note(S, plan.how == "undo" and "j:undo()" or ("restore(snapshot of step %d%s)"):format(plan.snap.step,
    plan.migrate and ", migrate" or ""))
  local ok, err = H.load_real(S, plan)
  local done = H.load_model(S, plan, ok, err)
  if plan.how == "undo" and S.jlost then H.close_journal(S) end
  return done
end
-- }}}

-- {{{ loops over queries
function H.pick_query(S, plain_only)
  local list = {}
  for _, d in ipairs(QDEFS) do if not (plain_only and d.kind) then list[#list + 1] = d end end
  return list[S.r.int(#list)]
end

-- The column specs of a loop: numeric fields of the query's components.
function H.specs(S, d)
  local out = {}
  for _, name in ipairs(d.with) do
    for _, f in ipairs(S.m.schema[name]) do
      if numeric(f.type) and #out < 3 and S.r.int(3) > 1 then
        local write = S.r.int(3) > 1
        out[#out + 1] = { comp = name, field = f.name, write = write,
                          text = name .. "." .. f.name .. (write and "" or ":in") }
      end
    end
  end
  for _, name in ipairs(d.optional or {}) do -- read-only, zero where absent
    for _, f in ipairs(S.m.schema[name]) do
      if numeric(f.type) and #out < 3 and S.r.int(2) == 1 then
        out[#out + 1] = { comp = name, field = f.name, write = false, text = name .. "." .. f.name .. ":in" }
      end
    end
  end
  if #out == 0 then
    local name = d.with[1]
    for _, f in ipairs(S.m.schema[name]) do
      if numeric(f.type) and #out == 0 then
        out[1] = { comp = name, field = f.name, write = true, text = name .. "." .. f.name }
      end
    end
  end
  return out
end

function H.loop_begin(S, d)
  local st = { d = d, yielded = {}, tick = S.m.tick, loads = S.loads, redefines = S.m.redefines, n = 0 }
  if d.kind then
    st.required, st.possible = S.m:due(d.id)
  else
    st.required = S.m:match_set(d)
    st.possible = st.required
  end
  return st
end

function H.loop_visit(S, st, e)
  local d = st.d
  check(st.possible[e], "loop over %s yields %s, not due at its start", d.id, E(e))
  check(not st.yielded[e], "loop over %s yields %s twice", d.id, E(e))
  check(S.m:matches(d, e), "loop over %s yields %s, dead or not a match now", d.id, E(e))
  st.yielded[e] = true
  st.n = st.n + 1
end

-- completed: the loop ran to its end (no load, break, error)
function H.loop_end(S, st, completed)
  if not completed then return end
  for e in pairs(st.required) do
    if not st.yielded[e] and (S.m.stamp[e] or 0) <= st.tick then
      fail(("loop over %s skipped %s (due, left alone by the loop)"):format(st.d.id, E(e)))
    end
  end
  if st.d.kind then S.m:complete(st.d.id) end
end

-- One action of a loop body: returns "load", "break", "raise" or nil.
local NESTED = { "entities", "each", "columns", "each_chunk", "pass" }
function H.body(S, st, allow)
  local k = S.r.int(24)
  local loads = S.loads
  if k <= 6 then
    H.mutate(S)
  elseif k == 7 and allow.load and not SKIP.loop_load then
    local plan = H.plan(S)
    if plan and H.load(S, plan) then return "load" end
  elseif k == 8 and allow.migrate and not SKIP.loop_migrate and not SKIP.migrate then
    OPS.migrate(S)
  elseif k == 9 or k == 10 then
    -- (where a loop may not be left so, "skip": the same draws on every Lua)
    if k == 9 and allow.brk then note(S, "break"); return "break" end
    if k == 10 and allow.raise then note(S, "error"); return "raise" end
    return "skip"
  elseif k == 11 then -- a nested count
    local q = S.Q[st.d.id]
    if st.d.kind then
      local _, _, nmust, nmay = S.m:due(st.d.id)
      local n = q:count()
      check(n >= nmust and n <= nmay, "count() of %s inside its loop %d, model %d..%d", st.d.id, n, nmust, nmay)
    else
      local _, n = S.m:match_set(st.d)
      check(q:count() == n, "count() of %s inside its loop %d, model %d", st.d.id, q:count(), n)
    end
  elseif k == 12 and S.depth < 2 and not SKIP.nested then -- a loop inside the loop
    local kind = NESTED[S.r.int(#NESTED)]
    if not SKIP[kind] then
      S.depth = S.depth + 1
      note(S, "[")
      OPS[kind](S)
      note(S, "]")
      S.depth = S.depth - 1
    end
  end
  if S.loads ~= loads then return "load" end -- (also made by a nested loop)
  return nil
end

local function rethrow(err)
  if getmetatable(err) == FAIL then error(err, 0) end
end

function OPS.entities(S)
  local d = H.pick_query(S)
  note(S, "for e in %s:entities()", d.id)
  local st = H.loop_begin(S, d)
  local q = S.Q[d.id]
  local ended, broke, raised = false, false, false
  local ok, err = pcall(function()
    for e in q:entities() do
      check(not ended, "q:entities() yields %s after a load inside the loop", E(e))
      H.loop_visit(S, st, e)
      S.cur = e
      local act = H.body(S, st, { load = true, migrate = true, brk = true, raise = true })
      if act and act ~= "skip" then H.tally(S, "entities ended by " .. act) end
      if act == "load" then ended = true
      elseif act == "break" then broke = true; break
      elseif act == "raise" then raised = true; error(RAISE) end
    end
  end)
  if not ok then
    rethrow(err)
    check(raised and rawequal(err, RAISE), "q:entities(): %s", tostring(err))
  end
  note(S, "(%d visited)", st.n)
  H.loop_end(S, st, ok and not broke and not ended)
end

-- A pass over a change query, nothing changed inside: it visits what it
-- must and nothing it may not.
function OPS.pass(S)
  local list = {}
  for _, d in ipairs(QDEFS) do if d.kind then list[#list + 1] = d end end
  local d = list[S.r.int(#list)]
  local st = H.loop_begin(S, d)
  for e in S.Q[d.id]:entities() do H.loop_visit(S, st, e) end
  note(S, "a pass over %s (%d visited)", d.id, st.n)
  H.loop_end(S, st, true)
end

-- The values a loop hands out for entity e against the model.
function H.check_values(S, specs, e, get, where)
  for i, sp in ipairs(specs) do
    local vals = S.m.inst[sp.comp][e]
    local f
    for _, fd in ipairs(S.m.schema[sp.comp]) do if fd.name == sp.field then f = fd end end
    local want -- an optional term's absent instance reads as zero
    if vals == nil then want = Model.zero(f, null) else want = S.m:value(vals, f) end
    local got = get(i)
    check(got == want, "%s: %s of %s is %s, model %s", where, sp.text, E(e), show(got), show(want))
  end
end

function OPS.each(S)
  local d = H.pick_query(S)
  local specs = H.specs(S, d)
  local texts = {}
  for i, sp in ipairs(specs) do texts[i] = sp.text end
  note(S, "%s:each(fn, %s)", d.id, table.concat(texts, ", "))
  local st = H.loop_begin(S, d)
  local q = S.Q[d.id]
  local ended, raised, redefined, calls = false, false, false, 0
  local ok, res = pcall(q.each, q, function(e, ...)
    calls = calls + 1
    check(not ended, "q:each calls fn after a load inside it")
    check(not redefined, "q:each calls fn after a redefinition")
    H.loop_visit(S, st, e)
    S.cur = e
    local vals = { ... }
    H.check_values(S, specs, e, function(i) return vals[i] end, "q:each")
    local results, nres = {}, 0
    for i, sp in ipairs(specs) do
      if sp.write then
        nres = nres + 1
        if S.r.int(4) > 1 then results[nres] = vals[i] + 1 end
      end
    end
    local red = S.m.redefines
    local act = H.body(S, st, { load = true, migrate = true, raise = true })
    if act and act ~= "skip" then H.tally(S, "each ended by " .. act) end
    if act == "load" then ended = true; return unpack(results, 1, nres) end
    if act == "raise" then raised = true; error(RAISE) end
    if S.m.redefines ~= red then
      H.tally(S, "each ended by a redefinition")
      redefined = true
      return unpack(results, 1, nres)
    end
    local j = 0
    for _, sp in ipairs(specs) do
      if sp.write then
        j = j + 1
        if results[j] ~= nil and S.m.alive[e] and S.m.inst[sp.comp][e] then
          S.m:write(sp.comp, e, sp.field, results[j])
        end
      end
    end
    return unpack(results, 1, nres)
  end, unpack(texts))
  if not ok then rethrow(res) end
  if raised then
    check(not ok and rawequal(res, RAISE), "q:each: the body's error came out as %s", tostring(res))
  elseif redefined then
    check(not ok and tostring(res):find("redefined during the loop", 1, true),
      "q:each after a redefinition inside fn: %s %s", tostring(ok), tostring(res))
  else
    check(ok, "q:each: %s", tostring(res))
    check(res == calls, "q:each returned %s, fn was called %d times", tostring(res), calls)
  end
  note(S, "(%d visited)", st.n)
  H.loop_end(S, st, ok and not ended)
end

-- q:columns (cb false) and q:each_chunk (cb true) with the same body
function H.chunks(S, cb)
  local d = H.pick_query(S)
  local specs = H.specs(S, d)
  local texts = { "entity" }
  for i, sp in ipairs(specs) do texts[i + 1] = sp.text end
  local what = cb and "each_chunk" or "columns"
  note(S, "%s:%s(%s)", d.id, what, table.concat(texts, ", "))
  local st = H.loop_begin(S, d)
  local q = S.Q[d.id]
  local m = S.m
  local pending -- the chunk the world writes back at the next step
  local function write_back()
    if not pending then return end
    for i, e in ipairs(pending.ents) do
      if m:matches(d, e) then
        for k, sp in ipairs(specs) do
          if sp.write then m:write(sp.comp, e, sp.field, pending.arrays[k][i]) end
        end
      end
    end
    pending = nil
  end
  local ended, raised, broke, redefined = false, false, false, false
  local function chunk(n, ents, ...)
    check(not ended, "q:%s hands out a chunk after a load inside the loop", what)
    check(not redefined, "q:%s hands out a chunk after a redefinition", what)
    check(n > 0, "q:%s: an empty chunk", what)
    write_back()
    local arrays = { ... }
    S.cur = ents[S.r.int(n)]
    for i = 1, n do
      H.loop_visit(S, st, ents[i])
      H.check_values(S, specs, ents[i], function(k) return arrays[k][i] end, "q:" .. what)
    end
    for k, sp in ipairs(specs) do
      if sp.write then
        for i = 1, n do if S.r.int(2) == 1 then arrays[k][i] = arrays[k][i] + 1 end end
      end
    end
    local red = m.redefines
    local act
    for _ = 1, S.r.int(1, 3) do
      act = H.body(S, st, { load = true, migrate = true, brk = CLOSE and not cb, raise = cb or CLOSE })
      if act then break end
    end
    for k, sp in ipairs(specs) do -- writes after the body's changes
      if sp.write and S.r.int(3) == 1 then arrays[k][1] = arrays[k][1] + 1 end
    end
    if act and act ~= "skip" then H.tally(S, what .. " ended by " .. act) end
    if act == "load" then ended = true; return end
    if m.redefines ~= red then H.tally(S, what .. " ended by a redefinition"); redefined = true; return end
    local copy = { ents = {}, arrays = {} }
    for i = 1, n do copy.ents[i] = ents[i] end
    for k, sp in ipairs(specs) do
      if sp.write then
        copy.arrays[k] = {}
        for i = 1, n do copy.arrays[k][i] = arrays[k][i] end
      end
    end
    pending = copy
    if act == "break" then broke = true; return "break" end
    if act == "raise" then raised = true; error(RAISE) end
  end
  local ok, err
  if cb then
    ok, err = pcall(q.each_chunk, q, chunk, unpack(texts))
  else
    ok, err = pcall(function()
      for n, ents, a1, a2, a3 in q:columns(unpack(texts)) do
        if chunk(n, ents, a1, a2, a3) == "break" then break end
      end
    end)
  end
  if not ok then rethrow(err) end
  if raised then
    check(not ok and rawequal(err, RAISE), "q:%s: the body's error came out as %s", what, tostring(err))
    write_back()
  elseif redefined then
    check(not ok and tostring(err):find("redefined during the loop", 1, true),
      "q:%s after a redefinition inside the loop: %s %s", what, tostring(ok), tostring(err))
  else
    check(ok, "q:%s: %s", what, tostring(err))
    if not ended then write_back() end
  end
  note(S, "(%d visited)", st.n)
  H.loop_end(S, st, ok and not ended and not broke)
end
function OPS.columns(S) H.chunks(S, false) end
function OPS.each_chunk(S) H.chunks(S, true) end

-- LuaJIT: pointers into the columns of A (Q1) or of L (Q7: its entity
-- field may have the `!remove` policy, which waits for the loop's end);
-- structural changes of the pinned component and loads are refused while
-- the loop runs, destroys are not
function OPS.pointers(S)
  if not compat.jit then return end
  local m = S.m
  local on_l = S.r.int(2) == 1
  local d = on_l and QD.Q7 or QD.Q1
  local name, field = d.with[1], on_l and "k" or "x"
  local specs = on_l and { "L.k" } or { "A.x", "A.n:in" }
  local q = S.Q[d.id]
  local start, bag, nstart = {}, {}, 0
  for _, e in ipairs(S.live) do
    if m:matches(d, e) then
      start[#start + 1] = e
      local x = m.inst[name][e][field]
      bag[x] = (bag[x] or 0) + 1
      nstart = nstart + 1
    end
  end
  note(S, "%s:pointers(%s) over %d", d.id, table.concat(specs, ", "), nstart)
  local handed = 0
  m.pinned = { [name] = true }
  local step, loop = q:pointers(unpack(specs))
  local ok, err = pcall(function()
    for n, x in step, loop do
      for i = 1, n do
        local v = x[i]
        check((bag[v] or 0) > 0, "q:pointers hands out %s.%s = %s, not a value of the loop's start", name, field,
          show(v))
        bag[v] = bag[v] - 1
        x[i] = v + 1
        handed = handed + 1
      end
      local k = S.r.int(6)
      if k == 1 then
        OPS.destroy(S)
      elseif k == 2 and on_l then -- the target of a holder: its cleanup
        local h = start[S.r.int(#start)]
        local t = h and m.alive[h] and m.inst.L[h]
        t = t and (t.to or t.tgt)
        if t and m.alive[t] then
          note(S, "destroy %s (named by L of %s)", E(t), E(h))
          check(S.w:destroy(t) == m:destroy(t), "destroy inside the loop")
        end
      elseif k == 2 then
        local e = H.pick_live(S)
        if e then
          note(S, "T:add(%s)", E(e))
          S.C.T:add(e); m:add("T", e)
        end
      elseif k == 3 then
        local e = S.w:create()
        m:create(e)
        local C = S.C[name]
        local aok, aerr = pcall(C.add, C, e)
        note(S, "%s:add(%s) inside the loop", name, E(e))
        check(not aok and tostring(aerr):find("pointer loop", 1, true), "%s:add inside a pointer loop: %s",
          name, tostring(aerr))
      elseif k == 4 and #S.snaps > 0 then
        local rok, rerr = pcall(S.w.restore, S.w, S.snaps[1].blob, { migrate = true })
        note(S, "restore inside the loop")
        -- (a migration that cannot convert fails first, changing nothing as well)
        local msg = tostring(rerr)
        check(not rok and (msg:find("pointer loop", 1, true) or msg:find("cannot convert", 1, true)),
          "restore inside a pointer loop: %s", msg)
      end
    end
  end)
  local cok, cerr = pcall(loop.close, loop) -- (it runs what the loop's pins put off)
  if not ok then rethrow(err); fail("q:pointers: " .. tostring(err)) end
  check(cok, "loop:close(): %s", tostring(cerr))
  local alive = 0
  for _, e in ipairs(start) do
    if m.alive[e] then
      alive = alive + 1
      m:write(name, e, field, m.inst[name][e][field] + 1)
    end
  end
  m.pinned = nil
  m:sweep() -- the removes the pins put off
  check(handed >= alive and handed <= nstart, "q:pointers handed out %d rows, %d..%d expected", handed, alive, nstart)
end
-- }}}

-- {{{ systems
function OPS.update(S)
  local m = S.m
  local arm
  if S.r.int(4) == 1 and not SKIP.loop_load then
    local plan = H.plan(S)
    if plan then
      plan.at = S.r.int(1, 6)
      arm = plan
    end
  end
  S.loader_arm = arm
  S.lsys_trace, S.loader_trace = {}, {}
  note(S, "update%s", arm and (" (the loader: %s at visit %d)"):format(arm.how, arm.at) or "")
  local st = H.loop_begin(S, QD.C1)
  local ok, err = pcall(S.w.update, S.w, 0.016)
  if not ok then rethrow(err); fail("world:update: " .. tostring(err)) end
  -- the model replays what the systems did, in their order
  for _, e in ipairs(S.lsys_trace) do
    H.loop_visit(S, st, e)
    sys_action(m.api, e)
  end
  H.loop_end(S, st, true)
  if arm then
    local lst = H.loop_begin(S, QD.Q2)
    local loaded = false
    local trace = S.loader_trace
    local i = 1
    while i <= #trace do
      local e = trace[i]
      check(not loaded, "the loader's loop went on after its load")
      H.loop_visit(S, lst, e)
      local t = trace[i + 1]
      if type(t) == "table" then
        loaded = H.load_model(S, arm, t.ok, t.err)
        i = i + 1
      end
      i = i + 1
    end
    if arm.how == "undo" and S.jlost then H.close_journal(S) end
    H.loop_end(S, lst, not loaded)
  end
  -- the expression systems over every match of Q5
  local matches = m:match_set(QD.Q5)
  for e in pairs(matches) do
    local x = m.inst.A[e].x + 1
    if m.schema.A[1].type == "f32" then x = compat.f32(x) end
    m:write("A", e, "x", x)
    if S.msys_expr then m:write("M", e, S.msys_expr, m.inst.M[e][S.msys_expr] + 0.5) end
  end
end
-- }}}

-- {{{ snapshots and the journal
function OPS.snapshot(S)
  local blob = S.w:snapshot()
  S.snaps[#S.snaps + 1] = { blob = blob, state = S.m:copy(), step = S.step }
  if #S.snaps > 3 then table.remove(S.snaps, 1) end
  note(S, "snapshot (%d bytes)", #blob)
end

function OPS.restore(S)
  if #S.snaps == 0 then return OPS.snapshot(S) end
  local snap = S.snaps[S.r.int(#S.snaps)]
  H.load(S, { how = "restore", snap = snap, migrate = S.r.int(4) > 1 })
end

function H.handles(S, mm)
  local list, seen = {}, {}
  local function add(e) if not seen[e] then seen[e] = true; list[#list + 1] = e end end
  for _, e in ipairs(S.live) do add(e) end
  for _, e in ipairs(S.dead) do add(e) end
  local extra = {}
  for e in pairs(mm.alive) do extra[#extra + 1] = e end
  table.sort(extra, function(a, b) return ecs.id(a) < ecs.id(b) end)
  for _, e in ipairs(extra) do add(e) end
  return list
end

function OPS.ecs_restore(S)
  if #S.snaps == 0 then return OPS.snapshot(S) end
  local snap = S.snaps[S.r.int(#S.snaps)]
  note(S, "ecs.restore(snapshot of step %d)", snap.step)
  local w2 = ecs.restore(snap.blob)
  local mm = S.m:state_of(snap.state)
  H.compare_world(w2, function(n) return w2:find_component(n) end, mm, H.handles(S, mm),
    { label = "ecs.restore's world", policies = true })
  w2:close()
  local w3 = ecs.restore(S.w:snapshot())
  check(w3:state_hash() == S.w:state_hash(), "ecs.restore(world:snapshot()) hashes unlike the world")
  w3:close()
end

function H.close_journal(S)
  if S.j then S.j:close() end
  if S.replica then S.replica:close() end
  S.j, S.replica, S.rq, S.jlost = nil, nil, nil, false
end

function OPS.journal(S)
  if S.j then
    note(S, "j:close()")
    H.close_journal(S)
    return
  end
  note(S, "journal and replica")
  S.replica = ecs.restore(S.w:snapshot())
  S.j = S.w:journal()
  S.mark = S.m:copy()
  S.rq = S.replica:query(S.replica:find_component("A"))
  S.jlost = false
end

function OPS.delta(S)
  if not S.j then return OPS.journal(S) end
  if S.jlost then
    note(S, "j:delta() after the journal lost track")
    local ok, err = pcall(S.j.delta, S.j)
    check(not ok and tostring(err):find("lost track", 1, true), "j:delta() after a restore or redefinition: %s %s",
      tostring(ok), tostring(err))
    H.close_journal(S)
    return
  end
  local d = S.j:delta()
  S.mark = S.m:copy()
  local r, rq = S.replica, S.rq
  local how = S.r.int(3)
  note(S, "j:delta() (%d bytes) applied to the replica%s", #d, how == 1 and "" or " inside a loop")
  local applied = false
  local base = r:state_hash()
  if how == 2 then
    for _ in rq:entities() do
      if not applied then r:apply_delta(d); applied = true
      else fail("a replica's q:entities() went on after apply_delta inside it") end
    end
  elseif how == 3 then
    local ok, err = pcall(rq.each_chunk, rq, function(n, x)
      check(not applied, "a replica's q:each_chunk went on after apply_delta inside it")
      for i = 1, n do x[i] = x[i] + 100 end
      r:apply_delta(d)
      applied = true
      x[1] = -1000
    end, "A.x")
    if not ok then rethrow(err); fail("replica each_chunk: " .. tostring(err)) end
  end
  if not applied then r:apply_delta(d) end
  local mm = S.m:state_of(S.mark)
  H.compare_world(r, function(n) return r:find_component(n) end, mm, H.handles(S, mm), { label = "replica" })
  check(r:state_hash() == S.w:state_hash(), "the replica's state hash differs from the world's")
  local ok, err = pcall(r.apply_delta, r, d)
  if base ~= r:state_hash() then -- (a delta that changed nothing applies again)
    check(not ok and tostring(err):find("differs from the delta's base", 1, true),
      "a delta applied twice: %s %s", tostring(ok), tostring(err))
  end
  check(r:state_hash() == S.w:state_hash(), "a refused delta changed the replica")
end

function OPS.undo(S)
  if not S.j then return OPS.journal(S) end
  H.load(S, { how = "undo" })
end
-- }}}

-- {{{ the run
function H.choose(S)
  local total, weights = 0, {}
  local n = S.m.nalive
  for _, k in ipairs(KINDS) do
    local wgt = WEIGHTS[k]
    if SKIP[k] or (k == "pointers" and not compat.jit) then wgt = 0 end
    if (k == "create" or k == "create_batch" or k == "spawn") and n < 20 then wgt = wgt * 3 end
    if (k == "create" or k == "create_batch" or k == "spawn" or k == "clone") and n > 90 then wgt = 0 end
    if (k == "destroy" or k == "destroy_batch") and n > 70 then wgt = wgt * 3 end
    weights[#weights + 1] = wgt
    total = total + wgt
  end
  local x = S.r.int(total)
  for i, k in ipairs(KINDS) do
    x = x - weights[i]
    if x <= 0 then return k end
  end
  return KINDS[#KINDS]
end

local function run(seed, steps)
  local S = { r = prng(seed), seed = seed, hist = {}, desc = {}, stats = {} }
  S.threads = not SKIP.threads and seed % 2 == 0
  H.new_world(S)
  local done = {}
  local function report(err, kind)
    local msg = getmetatable(err) == FAIL and err.msg or tostring(err)
    local lines = {
      ("crossing: seed %d, step %d of %d%s, operation %s: %s"):format(seed, S.step, steps,
        S.threads and " (threads = 2)" or "", kind, msg),
      "  this operation: " .. table.concat(S.desc, "; "),
      "  the operations before it (oldest first):",
    }
    for _, h in ipairs(S.hist) do lines[#lines + 1] = "    " .. h end
    lines[#lines + 1] = ("  reproduce: ECS_CROSSING_SEED=%d ECS_CROSSING_STEPS=%d busted spec/world/crossing_spec.lua")
      :format(seed, S.step)
    return table.concat(lines, "\n")
  end
  for step = 1, steps do
    S.step = step
    local kind = H.choose(S)
    S.desc = {}
    S.heard, S.violations, S.cur, S.depth = {}, {}, nil, 0
    S.m.expect = {}
    local ok, err = xpcall(function()
      OPS[kind](S)
      H.refresh(S)
      H.compare(S)
    end, function(e)
      if getmetatable(e) == FAIL then return e end
      return debug.traceback(tostring(e), 2)
    end)
    S.hist[#S.hist + 1] = ("step %d: %s"):format(step, table.concat(S.desc, "; "))
    if #S.hist > HISTORY then table.remove(S.hist, 1) end
    if not ok then
      table.remove(S.hist)
      local msg = report(err, kind)
      pcall(S.w.close, S.w)
      if S.replica then pcall(S.replica.close, S.replica) end
      error(msg, 0)
    end
    done[kind] = (done[kind] or 0) + 1
  end
  H.close_journal(S)
  S.w:close()
  if os.getenv("ECS_CROSSING_STATS") then
    local m = S.m
    S.stats["cleanup: fields cleared"] = m.swept.clear
    S.stats["cleanup: components removed"] = m.swept.remove
    S.stats["cleanup: holders destroyed"] = m.swept.destroy
    S.stats["cleanup: removes a pointer loop put off"] = m.swept.deferred
    S.stats["redefinitions (all)"] = m.redefines
    S.stats["redefinitions by an observer"] = m.rule_redefines
    S.stats["events"] = m.events
    S.stats["loads"] = S.loads
    local keys = {}
    for k in pairs(done) do keys[#keys + 1] = k end
    for k in pairs(S.stats) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do print(("  %-40s %d"):format(k, done[k] or S.stats[k])) end
  end
  return done
end
-- }}}

describe("features where they cross, against a model", function()
  local all, passed = {}, 0
  for _, seed in ipairs(SEEDS) do
    it(("agree after every one of %d random operations (seed %d)"):format(STEPS, seed), function()
      for k, n in pairs(run(seed, STEPS)) do all[k] = (all[k] or 0) + n end
      passed = passed + 1
    end)
  end
  if STEPS * #SEEDS >= 1500 then
    it("ran every kind of operation (when every seed passed)", function()
      if passed < #SEEDS then return end
      for _, k in ipairs(KINDS) do
        if not SKIP[k] and not (k == "pointers" and not compat.jit) then
          assert.is_true((all[k] or 0) > 0, "no " .. k .. " operation ran")
        end
      end
    end)
  end
end)
