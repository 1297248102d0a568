--[[
crossing_model.lua -- the pure-Lua reference of spec/world/crossing_spec.lua: a
world's entities, its components (schema, policies, the values of every
live holder), the events its observers must hear and what its change
queries must and may visit, written from the documents (API.md,
docs/observers.md, docs/components.md, docs/queries.md,
docs/persistence.md), not from the library's code.

  local Model = require("spec.support.crossing_model")
  local m = Model.new(null)             -- null: ecs.null
  m:component(name, fields)             -- fields: { "x:f32", "to:entity!clear", ... }
  m:observe(id, name, kind, action)     -- kind: "on_add" | "on_set" | "on_remove"
  m:watch(id, kind, names, with)        -- a change query: kind "changed" | "added"

Values are kept per holder as a map field name -> value (nil: the field's
zero), never changed in place: a write makes a new map, so a copy of the
model (m:copy(), for snapshots and journal marks) shares them safely.
Observer actions receive `m.api` (the same methods the spec's world
adapter has) and change the model through it, so one action written once
runs against both the world and the model; the model dispatches events in
the documented order. Where an order is not specified (the holders a
cleanup sweep visits), the actions the spec installs change only the
entity they are given, so every order ends in the same state.

Common subset of every supported Lua (no //, bit operators, goto, <close>).
]]
local compat = require("spec.support.lua")
--[[
On LuaJIT the model runs interpreted (and so does spec/world/crossing_spec.lua,
which says why: a compiled model gets lookups in tables keyed by entity
handles wrong on Debian 12's LuaJIT). jit.off(true, true) here covers
this chunk's functions; the spec's covers its own.
]]
local jit = rawget(_G, "jit")
if jit then jit.off(true, true) end

local Model = {}
Model.__index = Model

-- "x:f32", "hp" (f64), "to:entity!clear" -> { name =, type =, policy = }
local function parse(spec)
  local name, rest = spec:match("^([%a_][%w_]*):?(.*)$")
  local ty, policy = rest:match("^(%a[%w]*)!(%a+)$")
  if not ty then ty = rest ~= "" and rest or "f64" end
  return { name = name, type = ty, policy = policy }
end
Model.parse = parse

function Model.fields_of(specs)
  local out = {}
  for i, s in ipairs(specs or {}) do out[i] = parse(s) end
  return out
end

function Model.spec_of(f)
  return f.name .. ":" .. f.type .. (f.policy and ("!" .. f.policy) or "")
end

function Model.new(null)
  local m = setmetatable({
    null = null,
    order = {},       -- component names in creation order
    index = {},       -- name -> position in order
    schema = {},      -- name -> list of fields (never changed in place)
    version = {},     -- name -> redefinitions so far
    redefines = 0,    -- redefinitions of any component
    alive = {},       -- handle -> true
    nalive = 0,
    disabled = {},    -- handle -> true: world:disable (queries skip it)
    inst = {},        -- name -> { [handle] = values }
    dying = {},       -- handle -> the turn (position in order) its destroy reached
    reported = {},    -- name -> { [handle] = true }: its destroy reported the remove
    reporting = {},   -- name -> { [handle] = true }: a remove reporting it now
    dying_adds = {},  -- handle -> components given to it during its destroy
    observers = {},   -- { id =, comp =, kind =, action =, active = }, creation order
    expect = {},      -- observer id -> { [handle] = events }
    watches = {},     -- change queries
    tick = 0,         -- structural changes so far
    stamp = {},       -- handle -> tick of its last structural change
    depth = 0,        -- nesting of events
    deaths = 0,
    events = 0,       -- (statistics)
    swept = { clear = 0, remove = 0, destroy = 0, deferred = 0 },
    rule_redefines = 0,
  }, Model)
  m.api = m:make_api()
  return m
end

function Model:component(name, specs)
  self.order[#self.order + 1] = name
  self.index[name] = #self.order
  self.schema[name] = Model.fields_of(specs)
  self.version[name] = 0
  self.inst[name] = {}
  self.reported[name] = {}
  self.reporting[name] = {}
end

-- {{{ values
local function zero(f, null)
  if f.type == "lua" then return nil end
  if f.type == "entity" then return null end
  if f.type == "bool" then return false end
  return 0
end
Model.zero = zero

-- The value a holder reads for field f (zero when absent).
function Model:value(vals, f)
  local v = vals[f.name]
  if v == nil then return zero(f, self.null) end
  return v
end

-- The whole values of an instance from a map of given values (missing:
-- zero), as add and set store them.
function Model:values(name, given)
  local out = {}
  for _, f in ipairs(self.schema[name]) do
    local v = given and given[f.name]
    if v == nil then v = zero(f, self.null) end
    out[f.name] = v
  end
  return out
end

-- convert(v, from, to) -> ok, value | false, reason: a store's rules
-- (docs/persistence.md, "Migration"), for the types the spec uses.
local function convert(v, from, to)
  if from == to then return true, v end
  if to == "f32" then
    if type(v) ~= "number" then return false, "number expected" end
    return true, compat.f32(v)
  elseif to == "f64" then
    if type(v) ~= "number" then return false, "number expected" end
    return true, v
  elseif to == "i32" then
    if type(v) ~= "number" then return false, "number expected" end
    if v ~= math.floor(v) then return false, "integer expected" end
    if v < -2147483648 or v > 2147483647 then return false, "out of range" end
    return true, v
  elseif to == "lua" then
    return true, v
  end
  return false, "unsupported conversion " .. from .. " -> " .. to
end
Model.convert = convert
-- }}}

-- {{{ change queries
-- kind: "changed" or "added"; names: the components of that list; with:
-- every "with" component; without: the excluded ones
function Model:watch(id, kind, names, with, without)
  local set = {}
  for _, n in ipairs(names) do set[n] = true end
  self.watches[id] = { id = id, kind = kind, names = set, with = with, without = without or {},
                       must = {}, maybe = {} }
end

function Model:mark(kind, name, e)
  for _, q in pairs(self.watches) do
    if q.kind == kind and q.names[name] then q.must[e] = true end
  end
end
function Model:written(name, e) self:mark("changed", name, e) end
function Model:added(name, e) self:mark("added", name, e); self:mark("changed", name, e) end

function Model:complete(id)
  local q = self.watches[id]
  q.must, q.maybe = {}, {}
end

-- The matches of a query definition { with = {names}, without = {names} }.
function Model:matches(d, e)
  if not self.alive[e] then return false end
  if self.disabled[e] and not d.disabled then return false end
  for _, n in ipairs(d.with) do if self.inst[n][e] == nil then return false end end
  for _, n in ipairs(d.without or {}) do if self.inst[n][e] ~= nil then return false end end
  if d.any and #d.any > 0 then
    for _, n in ipairs(d.any) do if self.inst[n][e] ~= nil then return true end end
    return false
  end
  return true
end

function Model:match_set(d)
  local set, n = {}, 0
  for e in pairs(self.alive) do
    if self:matches(d, e) then set[e] = true; n = n + 1 end
  end
  return set, n
end

-- What a pass of change query `id` must visit and may visit now (sets),
-- and their sizes.
function Model:due(id)
  local q = self.watches[id]
  local must, may, nmust, nmay = {}, {}, 0, 0
  for e in pairs(self.alive) do
    if self:matches(q, e) then
      if q.must[e] then must[e] = true; nmust = nmust + 1 end
      if q.must[e] or q.maybe[e] or q.maybe_all then may[e] = true; nmay = nmay + 1 end
    end
  end
  return must, may, nmust, nmay
end
-- }}}

-- {{{ events
function Model:observe(id, name, kind, action)
  local o = { id = id, comp = name, kind = kind, action = action, active = true }
  self.observers[#self.observers + 1] = o
  return o
end

function Model:unobserve(id)
  for i, o in ipairs(self.observers) do
    if o.id == id then o.active = false; table.remove(self.observers, i); return true end
  end
  return false
end

function Model:has_observer(name, kind)
  for _, o in ipairs(self.observers) do
    if o.active and o.comp == name and o.kind == kind then return true end
  end
  return false
end

local function deliver(self, list, kind, e)
  for _, o in ipairs(list) do
    if o.active and o.kind == kind then
      local t = self.expect[o.id]
      if not t then t = {}; self.expect[o.id] = t end
      t[e] = (t[e] or 0) + 1
      self.events = self.events + 1
      if o.action then o.action(self.api, e) end
    end
  end
end

--[[
An event to the observers of `name` made before it (one made during it
hears the next one). A new instance's on_add is followed by on_set, every
on_add observer first, then every on_set observer, unless an on_add
observer removed the instance or destroyed the entity (docs/observers.md,
"on_set hears every write of a value, the first one included"); both in
one level of nesting.
]]
function Model:emit(kind, name, e)
  self.depth = self.depth + 1
  if self.depth > 64 then error("model: events nested too deeply") end
  local list = {}
  for _, o in ipairs(self.observers) do
    if o.active and o.comp == name and (o.kind == kind or (kind == "on_add" and o.kind == "on_set")) then
      list[#list + 1] = o
    end
  end
  deliver(self, list, kind, e)
  if kind == "on_add" and self.alive[e] and self.inst[name][e] ~= nil then
    deliver(self, list, "on_set", e)
  end
  self.depth = self.depth - 1
end
-- }}}

-- {{{ entities and components
local function touch(self, e)
  self.tick = self.tick + 1
  self.stamp[e] = self.tick
end

-- world:disable(e) / world:enable(e): ok | false, message (a dead entity)
function Model:switch(e, on)
  if not self.alive[e] then return false, "entity is not alive" end
  self.disabled[e] = (not on) or nil
  return true
end

function Model:create(e)
  if self.alive[e] then error("model: create handed out a live handle") end
  self.alive[e] = true
  self.nalive = self.nalive + 1
  touch(self, e)
end

function Model:add(name, e, given)
  if not self.alive[e] then return false, "entity is not alive" end
  local had = self.inst[name][e] ~= nil
  self.inst[name][e] = self:values(name, given)
  if had then
    self:written(name, e)
    self:emit("on_set", name, e)
  else
    touch(self, e)
    self.reported[name][e] = nil
    if self.dying[e] then self.dying_adds[e] = self.dying_adds[e] + 1 end
    self:added(name, e)
    self:emit("on_add", name, e)
  end
  return true
end

function Model:set(name, e, given)
  if not self.alive[e] then return false, "entity is not alive" end
  if self.inst[name][e] == nil then return false, "entity does not have the component" end
  self.inst[name][e] = self:values(name, given)
  self:written(name, e)
  self:emit("on_set", name, e)
  return true
end

function Model:set_field(name, e, field, v)
  if not self.alive[e] then return false, "entity is not alive" end
  local old = self.inst[name][e]
  if old == nil then return false, "entity does not have the component" end
  local new = {}
  for k, x in pairs(old) do new[k] = x end
  new[field] = v
  self.inst[name][e] = new
  self:written(name, e)
  self:emit("on_set", name, e)
  return true
end

-- A write that is not a set (a loop's write-back, q:each, expressions,
-- pointers): no event.
function Model:write(name, e, field, v)
  local old = self.inst[name][e]
  local new = {}
  for k, x in pairs(old) do new[k] = x end
  new[field] = v
  self.inst[name][e] = new
  self:written(name, e)
end

function Model:remove(name, e)
  if not self.alive[e] or self.inst[name][e] == nil then return false end
  -- during e's destroy, a component whose removal the destroy already
  -- reported goes without a second report: no event is ever doubled
  -- (a remove from inside the report of this instance's remove: taken
  -- over, no second report; an instance added back after it is a new one,
  -- reported too: docs/observers.md, "Each event once")
  local outer = self.reporting[name][e]
  if outer then
    outer.taken = true
  elseif not (self.dying[e] and self.reported[name][e]) then
    repeat
      local r = { taken = false }
      self.reporting[name][e] = r
      self:emit("on_remove", name, e)
      self.reporting[name][e] = nil
    until not (r.taken and self.alive[e] and self.inst[name][e] ~= nil)
  end
  if self.inst[name][e] ~= nil then
    self.inst[name][e] = nil
    self.reported[name][e] = nil
    touch(self, e)
  end
  return true
end

--[[
One entity's destroy without the cleanup: on_remove of each manager
holding e at its turn (creation order), e alive; then e dies. A component
an observer gives e during its destroy is reported too: in its manager's
turn if that is still to come, else in another round over the managers
(docs/observers.md, "destroy"); an instance whose on_remove is being
reported (a C:remove(e) that led to this destroy) is not reported again
("Each event once").
]]
function Model:kill(e)
  if not self.alive[e] or self.dying[e] then return false end
  self.dying_adds[e] = 0
  local rounds = 0
  repeat
    rounds = rounds + 1
    if rounds > 64 then error("model: destroy rounds do not end") end
    local adds = self.dying_adds[e]
    for k, name in ipairs(self.order) do
      self.dying[e] = k
      local r = self.reporting[name][e]
      if self.inst[name][e] ~= nil and not self.reported[name][e] and not (r and not r.taken)
        and self:has_observer(name, "on_remove") then
        self.reported[name][e] = true
        self:emit("on_remove", name, e)
      end
    end
  until self.dying_adds[e] == adds
  self.dying_adds[e] = nil
  for _, name in ipairs(self.order) do
    self.inst[name][e] = nil
    self.reported[name][e] = nil
  end
  self.dying[e] = nil
  self.alive[e] = nil
  self.disabled[e] = nil
  self.nalive = self.nalive - 1
  self.deaths = self.deaths + 1
  touch(self, e)
  return true
end

-- The policy fields of every component: { name, field } pairs.
function Model:policy_fields()
  local out = {}
  for _, name in ipairs(self.order) do
    for _, f in ipairs(self.schema[name]) do
      if f.policy then out[#out + 1] = { name, f } end
    end
  end
  return out
end

-- The cleanup after a destroy call (docs/components.md): passes while
-- somebody died; each pass clears, then removes (on_remove, the holder
-- alive, the value readable), then destroys.
function Model:sweep()
  local guard = 0
  repeat
    guard = guard + 1
    if guard > 10000 then error("model: the sweep does not end") end
    local before = self.deaths
    local clears, removes, destroys = {}, {}, {}
    for _, p in ipairs(self:policy_fields()) do
      local name, f = p[1], p[2]
      for e, vals in pairs(self.inst[name]) do
        local v = vals[f.name]
        if self.alive[e] and v ~= nil and v ~= self.null and not self.alive[v] then
          if f.policy == "clear" then clears[#clears + 1] = { name, e, f.name }
          elseif f.policy == "remove" then removes[#removes + 1] = { name, e }
          else destroys[#destroys + 1] = e end
        end
      end
    end
    local swept = self.swept
    for _, c in ipairs(clears) do
      local vals = self.inst[c[1]][c[2]]
      if vals and self.alive[c[2]] then self:write(c[1], c[2], c[3], self.null); swept.clear = swept.clear + 1 end
    end
    for _, r in ipairs(removes) do
      -- (a component a pointer loop pins keeps its holders until the loop ends)
      if self.pinned and self.pinned[r[1]] then
        swept.deferred = swept.deferred + 1
      elseif self:remove(r[1], r[2]) then
        swept.remove = swept.remove + 1
      end
    end
    for _, e in ipairs(destroys) do
      if self:kill(e) then swept.destroy = swept.destroy + 1 end
    end
  until self.deaths == before
end

function Model:destroy(e)
  if not self:kill(e) then return false end
  self:sweep()
  return true
end

function Model:destroy_list(list)
  local n = 0
  for _, e in ipairs(list) do
    if self:kill(e) then n = n + 1 end
  end
  if n > 0 then self:sweep() end
  return n
end

-- spawn/clone: every entity created with its values, then on_add per
-- entity in order, components in registration order (skipping one an
-- observer removed or an entity it destroyed).
function Model:spawn(es, spec)
  for _, e in ipairs(es) do self:create(e) end
  for i, e in ipairs(es) do
    for _, name in ipairs(self.order) do
      local given = spec[name]
      if given ~= nil then
        local vals = {}
        for _, f in ipairs(self.schema[name]) do
          local v = type(given) == "table" and given[f.name] or nil
          if type(v) == "table" and v.per_entity then v = v[i] end
          if v == nil then v = zero(f, self.null) end
          vals[f.name] = v
        end
        self.inst[name][e] = vals
        self:added(name, e)
      end
    end
  end
  for _, e in ipairs(es) do
    for _, name in ipairs(self.order) do
      if spec[name] ~= nil and self.alive[e] and self.inst[name][e] ~= nil then
        self:emit("on_add", name, e)
      end
    end
  end
end

function Model:clone_spec(e)
  local spec = {}
  for _, name in ipairs(self.order) do
    if self.inst[name][e] then spec[name] = self.inst[name][e] end
  end
  return spec
end
-- }}}

-- {{{ migration
-- The new values of every live holder of `name` under `fields`, renames
-- { old = new } applied: ok, maps | false, message.
function Model:converted(name, old_fields, new_fields, rename, holders)
  local src = {}  -- new field name -> old field
  local by_old = {}
  for _, f in ipairs(old_fields) do by_old[f.name] = f end
  local renamed = {}
  for o, n in pairs(rename or {}) do renamed[o] = true; src[n] = by_old[o] end
  for _, f in ipairs(new_fields) do
    if src[f.name] == nil and by_old[f.name] and not renamed[f.name] then src[f.name] = by_old[f.name] end
  end
  local out = {}
  for e, vals in pairs(holders) do
    if self.alive[e] then
      local new = {}
      for _, f in ipairs(new_fields) do
        local o = src[f.name]
        if o then
          local v = vals[o.name]
          if v == nil then v = zero(o, self.null) end
          local ok, cv = convert(v, o.type, f.type)
          if not ok then
            return false, ("cannot convert %s.%s"):format(name, o.name), e
          end
          new[f.name] = cv
        else
          new[f.name] = zero(f, self.null)
        end
      end
      out[e] = new
    end
  end
  return true, out
end

local function same_schema(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i].name ~= b[i].name or a[i].type ~= b[i].type then return false end
  end
  return true
end
Model.same_schema = same_schema

-- Redefine a live component: ok, redefined | false, message. The same
-- names and types in the same order take only the policies.
function Model:redefine(name, specs, rename)
  local new = Model.fields_of(specs)
  local old = self.schema[name]
  if same_schema(old, new) and not rename then
    -- (a change of policies alone is a change of definition: a journal
    -- does not record it, a replica makes it too: docs/persistence.md)
    self.schema[name] = new
    if self.on_policies then self.on_policies(name, specs) end
    return true, false
  end
  local ok, maps = self:converted(name, old, new, rename, self.inst[name])
  if not ok then return false, maps end
  self.schema[name] = new
  self.inst[name] = maps
  self.version[name] = self.version[name] + 1
  self.redefines = self.redefines + 1
  if self.on_redefine then self.on_redefine(name) end
  return true, true
end
-- }}}

-- {{{ copies and loads
-- What the change queries would report now (their cursors and stamps).
function Model:watch_state()
  local out = {}
  for id, q in pairs(self.watches) do
    local must, maybe = {}, {}
    for e in pairs(q.must) do must[e] = true end
    for e in pairs(q.maybe) do maybe[e] = true end
    out[id] = { must = must, maybe = maybe, maybe_all = q.maybe_all }
  end
  return out
end

function Model:set_watch_state(state)
  for id, q in pairs(self.watches) do
    local s = state[id]
    q.must, q.maybe, q.maybe_all = {}, {}, s.maybe_all
    for e in pairs(s.must) do q.must[e] = true end
    for e in pairs(s.maybe) do q.maybe[e] = true end
  end
end

function Model:copy()
  local c = { alive = {}, nalive = self.nalive, inst = {}, schema = {}, watch = self:watch_state(),
              disabled = {} }
  for e in pairs(self.alive) do c.alive[e] = true end
  for e in pairs(self.disabled) do c.disabled[e] = true end
  for _, name in ipairs(self.order) do
    local t = {}
    for e, v in pairs(self.inst[name]) do t[e] = v end
    c.inst[name] = t
    c.schema[name] = self.schema[name]
  end
  return c
end

-- A copy as an independent model (for worlds made by ecs.restore).
function Model:state_of(c)
  local m = Model.new(self.null)
  for _, name in ipairs(self.order) do
    m:component(name, {})
    m.schema[name] = c.schema[name]
  end
  for e in pairs(c.alive) do m.alive[e] = true end
  for e in pairs(c.disabled) do m.disabled[e] = true end
  m.nalive = c.nalive
  for _, name in ipairs(self.order) do
    for e, v in pairs(c.inst[name]) do m.inst[name][e] = v end
  end
  return m
end

-- Is a load of `c` without migration refused (another schema, cleanup
-- policies included: docs/persistence.md, "What is kept")? The name of the
-- first such component, else nil.
function Model:schema_differs(c)
  for _, name in ipairs(self.order) do
    local a, b = self.schema[name], c.schema[name]
    if not same_schema(a, b) then return name end
    for i = 1, #a do
      if a[i].policy ~= b[i].policy then return name end
    end
  end
  return nil
end

--[[
Load `c` in place, converted to the live schemas (migrate) or as it is
(the caller checked the schemas): ok | false, message. Listeners hear
nothing. A restore, migrating or not, puts back the change queries'
cursors and stamps: they report what they would have when the snapshot
was taken (docs/persistence.md, "What is kept": cursors; "Guarantees": "a
restored world's change queries report what the saved one's would
have"; a conversion is no write: "A redefinition is not a write").
]]
function Model:load(c, migrate)
  local inst = {}
  for _, name in ipairs(self.order) do
    if migrate then
      local saved_alive = self.alive
      self.alive = c.alive
      local ok, maps = self:converted(name, c.schema[name], self.schema[name], nil, c.inst[name])
      self.alive = saved_alive
      if not ok then return false, maps end
      inst[name] = maps
    else
      local t = {}
      for e, v in pairs(c.inst[name]) do t[e] = v end
      inst[name] = t
    end
  end
  self:replace(c.alive, c.nalive, inst, c.disabled)
  self:set_watch_state(c.watch)
  return true
end

-- j:undo(): back to the mark `c` (same schemas), the change queries'
-- cursors and stamps included: they report what they would have reported
-- at the mark (docs/persistence.md, "Undo").
function Model:undo(c)
  local inst = {}
  for _, name in ipairs(self.order) do
    local t = {}
    for e, v in pairs(c.inst[name]) do t[e] = v end
    inst[name] = t
  end
  self:replace(c.alive, c.nalive, inst, c.disabled)
  self:set_watch_state(c.watch)
end

function Model:replace(alive, nalive, inst, disabled)
  local new_alive = {}
  self.disabled = {}
  for e in pairs(disabled) do self.disabled[e] = true end
  for e in pairs(alive) do new_alive[e] = true end
  for e in pairs(self.alive) do if not new_alive[e] then touch(self, e) end end
  for e in pairs(new_alive) do if not self.alive[e] then touch(self, e) end end
  self.alive = new_alive
  self.nalive = nalive
  for name, t in pairs(inst) do
    for e in pairs(t) do if self.inst[name][e] == nil then touch(self, e) end end
    for e in pairs(self.inst[name]) do if t[e] == nil then touch(self, e) end end
    self.inst[name] = t
    self.reported[name] = {}
    self.reporting[name] = {}
  end
  self.dying = {}
end

function Model.deep_equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  for k, v in pairs(a) do if not Model.deep_equal(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end
-- }}}

-- {{{ the adapter observer actions use
function Model:make_api()
  local m = self
  return {
    model = true,
    alive = function(e) return m.alive[e] == true end,
    has = function(name, e) return m.alive[e] == true and m.inst[name][e] ~= nil end,
    field = function(name, e, f)
      local vals = m.inst[name][e]
      if not vals or not m.alive[e] then return nil end
      for _, fd in ipairs(m.schema[name]) do
        if fd.name == f then return m:value(vals, fd) end
      end
      error("model: unknown field " .. name .. "." .. f)
    end,
    fields = function(name)
      local out = {}
      for i, f in ipairs(m.schema[name]) do out[i] = Model.spec_of(f) end
      return out
    end,
    add = function(name, e, given) return m:add(name, e, given) end,
    set_field = function(name, e, f, v) return m:set_field(name, e, f, v) end,
    remove = function(name, e) return m:remove(name, e) end,
    destroy = function(e) return m:destroy(e) end,
    redefine = function(name, specs)
      m.rule_redefines = m.rule_redefines + 1
      return m:redefine(name, specs)
    end,
  }
end
-- }}}

return Model
