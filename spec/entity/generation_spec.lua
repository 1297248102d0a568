--[[
generation_spec.lua -- what a new entity sees when its id comes back.

Generations have 8 bits: after 256 destroys of one index (256 laps of a
free queue of at least 1024 indices) a handle is handed out again. Before
that, every manager purges its records of the index, so the new entity
starts with nothing: no component, name, transform, parent, child, point
mass or mesh of the entity that held the id before. world:check() asserts
that no record survives a wrap. See docs/components.md ("Dead entities").
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")
local release = require("spec.support.release")
local pointmass = require("ecs.pointmass")
local mesh = require("ecs.mesh")

local BATCH = 64

-- Create and destroy entities in batches (the queue holds at least 1100
-- indices, so a batch of 64 never takes a fresh one) until one satisfies
-- pred; return it, alive. Everything else created is destroyed again.
local function churn_until(w, pred)
  w:destroy(w:create(1100))
  for _ = 1, 20000 do
    local batch = w:create(BATCH)
    for i, x in ipairs(batch) do
      if pred(x) then
        table.remove(batch, i)
        w:destroy(batch)
        return x
      end
    end
    w:destroy(batch)
  end
  error("churn_until: no such entity after 1.28M creations")
end

-- Destroy e, then churn until its id is handed out again.
local function reborn(w, e)
  local id = ecs.id(e)
  assert.is_true(w:destroy(e))
  local x = churn_until(w, function(x) return ecs.id(x) == id end)
  assert.equals(e, x) -- the very same handle
  return x
end

local function at_generation(g)
  return function(x) return ecs.generation(x) == g end
end

local ALL = { "a:f32", "b:f64", "c:i8", "d:i16", "e:i32", "f:i64", "g:u8",
              "h:u16", "i:u32", "j:bool", "k:entity", "l:lua" }

describe("a reused id", function()
  local w
  before_each(function() w = ecs.world() end)
  after_each(function() release(w) end)

  it("is the issue's reproducer: the new entity has no component", function()
    local P = w:component("P", { "v:i32" })
    local pool = w:create(1100)
    local v = w:create()
    P:add(v, 42)
    local id = ecs.id(v)
    w:destroy(v)
    w:destroy(pool)
    local e
    repeat
      e = w:create()
      if ecs.id(e) ~= id then w:destroy(e) end
    until ecs.id(e) == id
    assert.is_false(P:has(e))
    assert.equals(0, select("#", P:get(e)))
    assert.is_true(w:check())
  end)

  it("has no component of any field type, and adding starts from zero", function()
    local All = w:component("All", ALL)
    local Tag = w:component("Tag")
    local other = w:create()
    local value = {}
    local weak = setmetatable({ value }, { __mode = "v" })
    local v = w:create()
    All:add(v, 1.5, 2.5, -3, -4, -5, -6, 7, 8, 9, true, other, value)
    Tag:add(v)
    value = nil -- luacheck: ignore 311
    local e = reborn(w, v)
    assert.is_true(w:check())
    for _, m in ipairs({ All, Tag }) do
      assert.is_false(m:has(e))
      assert.equals(0, select("#", m:get(e)))
      assert.equals(0, m:count())
      assert.is_nil((m:entities()()))
      assert.is_false(m:remove(e))
    end
    assert.is_nil((All:field(e, "l")))
    local ok, err = pcall(All.set, All, e, 1)
    assert.is_false(ok)
    assert.equals("All:set: entity does not have the component (" .. ecs.tostring(e) .. ")", err)
    All:add(e)
    assert.same({ 0, 0, 0, 0, 0, 0, 0, 0, 0, false, ecs.null, nil },
      { All:get(e) })
    assert.equals(1, All:count())
    -- the old lua value was released when the record was reused
    collectgarbage()
    collectgarbage()
    assert.is_nil(weak[1])
    assert.is_true(w:check())
  end)

  it("has no name, and the old name is free", function()
    local N = w.names
    local v = w:create()
    N:set(v, "player")
    local e = reborn(w, v)
    assert.is_true(w:check())
    assert.is_nil((N:get(e)))
    assert.is_nil((N:find("player")))
    assert.is_false(N:clear(e))
    local f = w:create()
    N:set(f, "player")
    assert.equals(f, N:find("player"))
    N:set(e, "hero")
    assert.equals("hero", N:get(e))
    assert.equals(f, N:find("player"))
    assert.is_true(w:check())
  end)

  it("has no transform, parent or children", function()
    local T = w.transform
    local p, v, c = w:create(), w:create(), w:create()
    T:add(p, { position = { 10, 0, 0 } })
    T:add(v, { position = { 0, 5, 0 } })
    T:add(c, { position = { 1, 1, 1 } })
    T:set_parent(v, p)
    T:set_parent(c, v)
    local e = reborn(w, v)
    assert.is_true(w:check())
    assert.is_false(T:has(e))
    assert.is_nil((T:children(p)()))
    assert.equals(ecs.null, T:parent(c))
    assert.same({ 11, 6, 1 }, { T:world_position(c) }) -- kept when v died
    T:add(e)
    assert.equals(ecs.null, T:parent(e))
    assert.is_nil((T:children(e)()))
    assert.same({ 0, 0, 0 }, { T:world_position(e) })
    assert.same({ 0, 0, 0 }, { T:local_position(e) })
    assert.is_nil((T:children(p)()))
    assert.equals(ecs.null, T:parent(c))
    assert.same({ 11, 6, 1 }, { T:world_position(c) })
    assert.is_true(w:check())
  end)

  it("of a dead parent does not take its children back", function()
    local T = w.transform
    local p, c = w:create(), w:create()
    T:add(p, { position = { 10, 0, 0 } })
    T:add(c, { position = { 1, 0, 0 } })
    T:set_parent(c, p)
    local e = reborn(w, p)
    assert.is_true(w:check())
    assert.equals(ecs.null, T:parent(c))
    assert.same({ 11, 0, 0 }, { T:world_position(c) })
    T:add(e, { position = { 100, 0, 0 } })
    assert.equals(ecs.null, T:parent(c))
    assert.is_nil((T:children(e)()))
    assert.same({ 11, 0, 0 }, { T:world_position(c) })
    T:set_local_position(c, 2, 0, 0)
    assert.same({ 2, 0, 0 }, { T:world_position(c) })
    assert.is_true(w:check())
  end)

  it("has no point mass", function()
    local PM = pointmass.new(w)
    local v = w:create()
    PM:add(v, 5, 1, 2, 3, 4, 5, 6)
    local e = reborn(w, v)
    assert.is_true(w:check())
    assert.is_false(PM:has(e))
    assert.is_nil((PM:mass(e)))
    assert.is_nil((PM:position(e)))
    assert.equals(0, PM:count())
    PM:add(e, 2)
    assert.same({ 0, 0, 0 }, { PM:position(e) })
    assert.same({ 0, 0, 0 }, { PM:velocity(e) })
    assert.is_true(w:check())
  end)

  it("has no mesh", function()
    local M = mesh.new(w)
    local v = w:create()
    M:add(v, 7)
    M:add(v, 8)
    local e = reborn(w, v)
    assert.is_true(w:check())
    assert.is_false(M:has(e))
    assert.same({}, M:meshes(e))
    assert.equals(0, M:count())
    assert.equals(0, M:remove_all(e))
    assert.equals(1, M:add(e, 9))
    assert.same({ 9 }, M:meshes(e))
    assert.is_true(w:check())
  end)

  it("keeps coming back empty, lap after lap", function()
    local P = w:component("P", { "v:f64" })
    local N, T = w.names, w.transform
    local PM, M = pointmass.new(w), mesh.new(w)
    local e = w:create()
    for lap = 1, 3 do
      P:add(e, lap)
      N:set(e, "n")
      T:add(e)
      PM:add(e, lap)
      M:add(e, lap)
      e = reborn(w, e)
      assert.is_true(w:check())
      assert.is_false(P:has(e) or T:has(e) or PM:has(e) or M:has(e))
      assert.is_nil((N:find("n")))
    end
  end)
end)

describe("destroying an entity whose generation wraps", function()
  local w
  before_each(function() w = ecs.world() end)
  after_each(function() release(w) end)

  it("moves nothing under a running Position:entities() loop", function()
    local P = w:component("P", { "v:i32" })
    local x = churn_until(w, at_generation(255))
    P:add(x, 0) -- instance 0: the loop reaches it last
    local es = w:create(20)
    for i, e in ipairs(es) do P:add(e, i) end
    local seen, n = {}, 0
    for e in P:entities() do
      if n == 0 then assert.is_true(w:destroy(x)) end -- wraps: purge
      assert.is_nil(seen[e])
      seen[e] = true
      n = n + 1
    end
    assert.equals(20, n)
    for _, e in ipairs(es) do assert.is_true(seen[e]) end
  end)

  it("keeps a query's pinned rows valid", function()
    local P = w:component("P", { "v:i32" })
    local V = w:component("V", { "d:i32" })
    local x = churn_until(w, at_generation(255))
    P:add(x, 0)
    V:add(x, 0)
    local es = w:create(20)
    for _, e in ipairs(es) do
      P:add(e, 0)
      V:add(e, 0)
    end
    local q = w:query(P, V)
    for n, v in q:columns("P.v") do
      assert.is_true(w:destroy(x))
      for i = 1, n do v[i] = 7 end
    end
    for _, e in ipairs(es) do assert.equals(7, P:get(e)) end
    assert.equals(20, q:count())
  end)

  it("lets destroy_tree finish the subtree", function()
    local T = w.transform
    local root = churn_until(w, at_generation(255))
    local mid = churn_until(w, at_generation(255))
    local leaves = w:create(3)
    T:add(root)
    T:add(mid)
    T:set_parent(mid, root)
    for _, l in ipairs(leaves) do
      T:add(l)
      T:set_parent(l, mid)
    end
    assert.equals(5, T:destroy_tree(root))
    for _, e in ipairs({ root, mid, leaves[1], leaves[2], leaves[3] }) do
      assert.is_false(w:alive(e))
    end
    assert.is_true(w:check())
  end)
end)

describe("a random sweep that wraps every index", function()
  it("never shows a new entity an old one's data, and passes check at every step", function()
    local STEPS = 2500
    math.randomseed(tonumber(os.getenv("ECS_GEN_SEED") or "") or 20260301)
    local rnd = compat.random
    local w = ecs.world()
    local All = w:component("All", ALL)
    local Tag = w:component("Tag")
    local N, T = w.names, w.transform
    local PM, M = pointmass.new(w), mesh.new(w)

    local function check(cond, msg)
      if not cond then error(msg or "check failed", 2) end
    end

    -- The model, by object (serial), not by id: ids come back.
    local live = {}          -- serial -> handle
    local live_list = {}     -- serials, any order
    local data = {}          -- serial -> what it was given
    local dead_ids = {}      -- id -> true once a holder with data died
    local next_serial, next_name = 0, 0
    local wraps_seen = 0

    local function nothing(x, where)
      check(not All:has(x) and not Tag:has(x), where .. ": component")
      check(select("#", All:get(x)) == 0, where .. ": component value")
      check(N:get(x) == nil, where .. ": name")
      check(not T:has(x), where .. ": transform")
      check(not PM:has(x) and PM:mass(x) == nil, where .. ": point mass")
      check(not M:has(x) and #M:meshes(x) == 0, where .. ": mesh")
    end

    local function expect_parent(s)
      local p = data[s].parent
      if p ~= nil and live[p] ~= nil then return live[p] end
      return ecs.null
    end

    local function verify(s)
      local e, d = live[s], data[s]
      if d.all then
        local got = { All:get(e) }
        for k = 1, 12 do check(got[k] == d.all[k], "All field " .. k) end
      else
        check(not All:has(e), "All")
      end
      check(Tag:has(e) == d.tag, "Tag")
      check(N:get(e) == d.name, "name")
      if d.name then check(N:find(d.name) == e, "find") end
      check(T:has(e) == d.tr, "transform")
      if d.tr then
        check(T:parent(e) == expect_parent(s), "parent")
        local kids = {}
        for c in T:children(e) do kids[c] = true end
        for _, c in ipairs(live_list) do
          local want = data[c].tr and data[c].parent == s
          check((kids[live[c]] or false) == want, "children")
          kids[live[c]] = nil
        end
        check(next(kids) == nil, "extra children")
      end
      check(PM:mass(e) == d.pm, "point mass")
      check(#M:meshes(e) == #d.mesh, "meshes")
      for k, id in ipairs(d.mesh) do check(M:meshes(e)[k] == id, "mesh") end
    end

    local function spawn()
      local e = w:create()
      local id = ecs.id(e)
      if dead_ids[id] then wraps_seen = wraps_seen + 1 end
      nothing(e, "spawn")
      next_serial = next_serial + 1
      local s = next_serial
      live[s] = e
      live_list[#live_list + 1] = s
      local d = { tag = false, tr = false, mesh = {} }
      data[s] = d
      if rnd() < 0.5 then
        local other = live[live_list[rnd(#live_list)]]
        d.all = { rnd() < 0.5 and 0.5 or 2.25, rnd() / 3, rnd(-128, 127),
                  rnd(-32768, 32767), rnd(-1e9, 1e9), rnd(-1e15, 1e15),
                  rnd(0, 255), rnd(0, 65535), rnd(0, 4e9), rnd() < 0.5,
                  other, { s } }
        All:add(e, compat.unpack(d.all, 1, 12))
      end
      if rnd() < 0.3 then Tag:add(e); d.tag = true end
      if rnd() < 0.4 then
        next_name = next_name + 1
        d.name = "n" .. next_name
        N:set(e, d.name)
      end
      if rnd() < 0.5 then
        T:add(e)
        d.tr = true
        local ps = live_list[rnd(#live_list)]
        if ps ~= s and data[ps].tr and rnd() < 0.7 then
          T:set_parent(e, live[ps])
          d.parent = ps
        end
      end
      if rnd() < 0.3 then
        d.pm = rnd(1, 100)
        PM:add(e, d.pm)
      end
      for _ = 1, rnd(0, 2) do
        local id2 = rnd(1, 1000)
        M:add(e, id2)
        d.mesh[#d.mesh + 1] = id2
      end
    end

    local function kill(k)
      local s = live_list[k]
      local e = live[s]
      live_list[k] = live_list[#live_list]
      live_list[#live_list] = nil
      live[s] = nil
      dead_ids[ecs.id(e)] = true
      check(w:destroy(e), "destroy")
      if data[s].name then check(N:find(data[s].name) == nil, "find dead") end
    end

    w:destroy(w:create(3000))
    for step = 1, STEPS do
      local r = rnd()
      if r < 0.3 then
        spawn()
      elseif r < 0.5 and #live_list > 0 then
        kill(rnd(#live_list))
      elseif r < 0.51 then
        w:update() -- a budgeted gc of every manager
      elseif r < 0.515 then
        local m = ({ All, Tag, N, T, PM, M })[rnd(6)]
        m:gc(rnd(0, 8))
      else
        -- churn: advance the free queue; a returning id must come back
        -- empty (without the purge it would show its old data)
        local batch = w:create(rnd(1000, 3000))
        for _, x in ipairs(batch) do
          if dead_ids[ecs.id(x)] then
            wraps_seen = wraps_seen + 1
            nothing(x, "churn")
          end
        end
        w:destroy(batch)
      end
      while #live_list > 60 do kill(rnd(#live_list)) end
      local ok, bad = w:check()
      check(ok, "step " .. step .. ": " .. tostring(bad))
      if #live_list > 0 then verify(live_list[rnd(#live_list)]) end
    end
    for _, s in ipairs(live_list) do verify(s) end
    -- the sweep did wrap: old ids came back many times
    assert.is_true(wraps_seen > 100, "only " .. wraps_seen .. " ids came back")
    w:close()
  end)
end)
