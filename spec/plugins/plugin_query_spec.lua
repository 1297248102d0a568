--[[
plugin_query_spec.lua -- the C plugins' managers as query terms: the point
mass (pointmass.mass .. az, mass read-only) and the mesh (one match per
entity: mesh.count read-only, mesh.mesh the first instance's id) in
with / without / changed / added terms, on every bulk path (q:apply,
expression systems, q:columns, q:each, q:each_chunk); cleaning of bulk
writes; structural changes inside loops; snapshots, restore and the
journal; errors; and a random differential test against a model.
]]
local ecs = require("ecs")
local pointmass = require("ecs.pointmass")
local mesh = require("ecs.mesh")
local err_of = require("spec.support.err_of")

local FLT_MAX = 3.4028234663852886e38

local function f32(x) return (string.unpack("f", string.pack("f", x))) end

local prng = require("spec.support.prng") -- a seeded 64-bit LCG

-- the entities a query yields, as a set
local function yielded(q)
  local set, n = {}, 0
  for e in q:entities() do set[e] = true n = n + 1 end
  return set, n
end

describe("the point mass as a query term", function()
  local w, PM, Pos, es
  before_each(function()
    w = ecs.world()
    PM = pointmass.new(w)
    Pos = w:component("Pos", { "x:f64", "y:f64" })
    es = w:create(10)
    for i = 1, 10 do
      if i <= 6 then PM:add(es[i], i, i, 2 * i, 3 * i, 1, -1, 0.5) end
      if i % 2 == 0 then Pos:add(es[i], 0, 0) end
    end
  end)

  it("matches the entities that have a point mass, with and without other terms", function()
    local set, n = yielded(w:query(PM))
    assert.equal(6, n)
    for i = 1, 6 do assert.is_true(set[es[i]]) end
    set, n = yielded(w:query(PM, Pos))
    assert.equal(3, n)
    assert.is_true(set[es[2]] and set[es[4]] and set[es[6]])
    set, n = yielded(w:query({ Pos, without = { PM } }))
    assert.equal(2, n)
    assert.is_true(set[es[8]] and set[es[10]])
    set, n = yielded(w:query({ PM, without = { Pos } }))
    assert.equal(3, n)
    assert.is_true(set[es[1]] and set[es[3]] and set[es[5]])
    assert.equal(PM, w:query(PM):components()[1])
  end)

  it("lets q:apply and expression systems read and write its columns", function()
    local q = w:query(PM)
    q:apply("pointmass.x += pointmass.vx * dt", { dt = 2 })
    for i = 1, 6 do
      local x, y, z = PM:position(es[i])
      assert.equal(f32(i + 2), x)
      assert.equal(f32(2 * i), y)
      assert.equal(f32(3 * i), z)
    end
    w:query(PM, Pos):apply("Pos.x = pointmass.x * pointmass.mass; Pos.y = pointmass.vy")
    assert.same({ f32(4 + 2) * 4, -1 }, { Pos:get(es[4]) })
    w:system("fall", w:query(PM), "pointmass.vy -= 9.81 * dt")
    w:update(0.5)
    local _, vy = PM:velocity(es[1])
    assert.equal(f32(f32(-1) - 9.81 * 0.5), vy)
  end)

  it("lets q:columns, q:each and q:each_chunk read and write its columns", function()
    local q = w:query(PM)
    for n, x, m in q:columns("pointmass.x", "pointmass.mass:in") do
      for i = 1, n do x[i] = x[i] + m[i] end
    end
    assert.equal(f32(2 * 3), (PM:position(es[3])))
    q:each(function(_, vz) return vz * 4 end, "pointmass.vz")
    assert.equal(2, select(3, PM:velocity(es[5])))
    q:each_chunk(function(n, ax) for i = 1, n do ax[i] = 7 end end, "pointmass.ax")
    assert.equal(7, (PM:acceleration(es[6])))
    PM:simulate(1)
    assert.equal(f32(1 + 7), (PM:velocity(es[6])))
  end)

  it("keeps mass read-only and cleans accelerations written in bulk", function()
    local q = w:query(PM)
    assert.matches("field 'pointmass.mass' is read%-only", err_of(function() q:apply("pointmass.mass = 0") end))
    assert.matches("column 'pointmass.mass': the field is read%-only",
                   err_of(function() for _ in q:columns("pointmass.mass") do end end))
    assert.equal(1, PM:mass(es[1]))
    q:apply("pointmass.ax = 0 / 0; pointmass.ay = 1e300; pointmass.az = -1e300")
    for i = 1, 6 do assert.same({ 0, FLT_MAX, -FLT_MAX }, { PM:acceleration(es[i]) }) end
    for n, vx in q:columns("pointmass.vx") do for i = 1, n do vx[i] = 1 / 0 end end
    assert.equal(math.huge, (PM:velocity(es[2]))) -- velocities are taken as they are
    assert.is_true(w:check())
  end)

  it("is seen by changed and added terms: setters, simulate and bulk writes count", function()
    local moved = w:query({ PM, changed = { PM } })
    local new = w:query({ PM, added = { PM } })
    assert.equal(6, select(2, yielded(moved)))
    assert.equal(6, select(2, yielded(new)))
    assert.equal(0, select(2, yielded(moved)))
    PM:set_position(es[2], 0, 0, 0)
    local set, n = yielded(moved)
    assert.equal(1, n)
    assert.is_true(set[es[2]])
    w:query(PM, Pos):apply("pointmass.z = 1")
    assert.equal(3, select(2, yielded(moved)))
    PM:simulate(0.1)
    assert.equal(6, select(2, yielded(moved)))
    PM:add(es[7], 1)
    set, n = yielded(new)
    assert.equal(1, n)
    assert.is_true(set[es[7]])
  end)

  it("stays consistent when the loop body adds, removes and destroys", function()
    local q = w:query(PM)
    local seen = 0
    for e in q:entities() do
      seen = seen + 1
      PM:remove(es[6])
      w:destroy(es[5])
      PM:add(w:create(), 2)
      if PM:has(e) then PM:set_velocity(e, 1, 1, 1) end
    end
    assert.is_true(seen >= 4)
    for n, x in q:columns("pointmass.x") do
      for i = 1, n do x[i] = 5 end
      PM:add(w:create(), 3)
      PM:remove(es[1])
    end
    q:each(function(e, x)
      PM:remove(e)
      return x + 1
    end, "pointmass.x")
    assert.is_true(w:check())
    PM:gc()
    assert.is_true(w:check())
    assert.equal(PM:count(), q:count())
  end)

  it("survives snapshots, restore in place and the journal", function()
    local q = w:query(PM)
    local blob = w:snapshot()
    q:apply("pointmass.x = 100")
    w:restore(blob)
    assert.equal(f32(1), (PM:position(es[1])))
    assert.equal(6, q:count())
    q:apply("pointmass.y = -5")
    assert.equal(-5, select(2, PM:position(es[3])))
    local copy = ecs.restore(blob)
    local PM2 = pointmass.new(copy)
    assert.equal(6, copy:query(PM2):count())
    local j = w:journal()
    local replica = ecs.restore(w:snapshot())
    local PM3 = pointmass.new(replica)
    q:apply("pointmass.vz = pointmass.mass * 10")
    replica:apply_delta(j:delta())
    for i = 1, 6 do assert.same({ PM:velocity(es[i]) }, { PM3:velocity(es[i]) }) end
    q:apply("pointmass.vz = 0")
    j:undo()
    assert.equal(f32(60), select(3, PM:velocity(es[6])))
    assert.is_true(w:check() and copy:check() and replica:check())
  end)
end)

describe("the mesh as a query term", function()
  local w, M, es
  before_each(function()
    w = ecs.world()
    M = mesh.new(w)
    es = w:create(6)
    for i = 1, 6 do for k = 1, i % 3 do M:add(es[i], 10 * i + k) end end
  end)

  local function rows(q)
    local out = {}
    q:each(function(e, c, m) out[e] = { c, m } end, "mesh.count:in", "mesh.mesh:in")
    return out
  end

  it("yields each entity with meshes once, with its count and first mesh", function()
    local q = w:query(M)
    assert.equal(4, q:count())
    assert.same({ [es[1]] = { 1, 11 }, [es[2]] = { 2, 21 }, [es[4]] = { 1, 41 }, [es[5]] = { 2, 51 } }, rows(q))
    M:add(es[1], 12)
    M:remove(es[2], 21)
    M:remove_all(es[4])
    M:add(es[3], 31)
    assert.same({ [es[1]] = { 2, 11 }, [es[2]] = { 1, 22 }, [es[3]] = { 1, 31 }, [es[5]] = { 2, 51 } }, rows(q))
    assert.is_true(w:check())
  end)

  it("writes the first instance's mesh id through mesh.mesh, and keeps count read-only", function()
    local q = w:query(M)
    q:apply("mesh.mesh = mesh.mesh + 100")
    assert.same({ 121, 22 }, M:meshes(es[2]))
    assert.same({ 151, 52 }, M:meshes(es[5]))
    for n, m in q:columns("mesh.mesh") do for i = 1, n do m[i] = 7 end end
    assert.same({ 7, 22 }, M:meshes(es[2]))
    assert.matches("field 'mesh.count' is read%-only", err_of(function() q:apply("mesh.count = 0") end))
    assert.is_true(w:check())
  end)

  it("forgets dead entities and survives gc, snapshots and restore", function()
    local q = w:query(M)
    w:destroy(es[1])
    assert.equal(3, q:count())
    M:gc()
    assert.equal(3, q:count())
    local blob = w:snapshot()
    M:add(es[6], 1)
    w:restore(blob)
    assert.equal(3, q:count())
    local copy = ecs.restore(blob)
    assert.equal(3, copy:query(mesh.new(copy)):count())
    assert.is_true(w:check() and copy:check())
  end)
end)

describe("plugin managers as query terms: errors", function()
  it("refuses a name two of the query's components share, whatever their order", function()
    local w = ecs.world()
    local M = mesh.new(w)
    local UM = w:component("mesh", { "mesh:u32" }) -- a user component may be called so
    local UT = w:component("transform", { "px:f64" })
    local e = w:create()
    M:add(e, 5)
    UM:add(e, 9)
    UT:add(e, 1)
    w.transform:add(e)
    for _, q in ipairs({ w:query(UM, M), w:query(M, UM) }) do
      assert.matches("component name 'mesh' is ambiguous: two of the query's components have it",
                     err_of(function() q:apply("mesh.mesh = 77") end))
      assert.matches("ambiguous", err_of(function() for _ in q:columns("mesh.mesh") do end end))
      assert.matches("ambiguous", err_of(function() q:each(function() end, "mesh.count:in") end))
    end
    assert.matches("ambiguous", err_of(function() w:query(w.transform, UT):apply("transform.px = 3") end))
    assert.same({ 5 }, M:meshes(e))
    assert.equal(9, UM:get(e))
    -- alone, each name means its own component
    w:query(UM):apply("mesh.mesh = 10")
    w:query(M):apply("mesh.mesh = 6")
    assert.same({ 6 }, M:meshes(e))
    assert.equal(10, UM:get(e))
    assert.is_true(w:check())
  end)

  it("names the manager of another world and objects that are not terms", function()
    local w, v = ecs.world(), ecs.world()
    local PM = pointmass.new(v)
    assert.matches("bad argument #1 to 'query' %(pointmass of another world%)", err_of(function() w:query(PM) end))
    assert.matches("bad argument #1 to 'query' %(mesh of another world%)",
                   err_of(function() w:query(mesh.new(v)) end))
    local grid = require("ecs.grid").new(16, 64, 64)
    assert.matches("bad argument #1 to 'query' %(ecs%.Grid is not a query term",
                   err_of(function() w:query(grid) end))
    v:close()
    assert.matches("closed world", err_of(function() w:query(PM) end))
  end)
end)

describe("plugin managers as query terms against a model", function()
  it("agree with a model over random operations and bulk writes", function()
    for seed = 1, 4 do
      local r = prng(seed)
      local w = ecs.world()
      local PM, M = pointmass.new(w), mesh.new(w)
      local Tag = w:component("Tag", { "v:i32" })
      local pm, ms, tag = {}, {}, {} -- model: entity -> x, { ids }, true
      local pool = w:create(30)
      local qs = { both = w:query(PM, M), pm = w:query({ PM, without = { Tag } }), m = w:query(M, Tag) }
      for _ = 1, 300 do
        local e, op = pool[r.int(#pool)], r.int(9)
        if not w:alive(e) then
          if op <= 3 then local n = w:create() pool[#pool + 1] = n end
        elseif op == 1 then local x = r.int(100) PM:add(e, r.int(5), x) pm[e] = x
        elseif op == 2 then PM:remove(e) pm[e] = nil
        elseif op == 3 then
          local id = r.int(50)
          M:add(e, id)
          ms[e] = ms[e] or {}
          table.insert(ms[e], id)
        elseif op == 4 and ms[e] then
          local id = ms[e][r.int(#ms[e])]
          M:remove(e, id)
          for k, v in ipairs(ms[e]) do if v == id then table.remove(ms[e], k) break end end
          if #ms[e] == 0 then ms[e] = nil end
        elseif op == 5 then w:destroy(e) pm[e], ms[e], tag[e] = nil, nil, nil
        elseif op == 6 then
          if tag[e] then Tag:remove(e) tag[e] = nil else Tag:add(e, 1) tag[e] = true end
        elseif op == 7 then
          qs.both:apply("pointmass.x = pointmass.x + mesh.count")
          for x, ids in pairs(ms) do if pm[x] then pm[x] = f32(pm[x] + #ids) end end
        elseif op == 8 then
          qs.m:apply("mesh.mesh = mesh.mesh + 1")
          for x, ids in pairs(ms) do if tag[x] then ids[1] = ids[1] + 1 end end
        else
          PM:gc(r.int(3)) M:gc(r.int(3))
        end
        -- compare every query with the model
        local want = { both = {}, pm = {}, m = {} }
        for x in pairs(pm) do
          if ms[x] then want.both[x] = true end
          if not tag[x] then want.pm[x] = true end
        end
        for x in pairs(ms) do if tag[x] then want.m[x] = true end end
        for k, q in pairs(qs) do
          local got = yielded(q)
          assert.same(want[k], got, "query " .. k .. ", seed " .. seed)
        end
        qs.both:each(function(x, px, c, first)
          assert.equal(pm[x], px)
          assert.equal(#ms[x], c)
          assert.equal(ms[x][1], first)
        end, "pointmass.x:in", "mesh.count:in", "mesh.mesh:in")
        for x, ids in pairs(ms) do assert.same(ids, M:meshes(x)) end
      end
      assert.is_true(w:check())
      w:close()
    end
  end)
end)
