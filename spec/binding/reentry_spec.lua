--[[
reentry_spec.lua -- Lua code that runs in the middle of a call and closes
the world: a finalizer at any allocation the call makes, or a metamethod
of a table the call reads. Every method of every class (and the module
functions that take a world) is called with the collector finishing a
whole cycle at every allocation, and a chain of finalizers that closes the
world at the k-th of them, for every k until the call completes first.
The call must return or raise cleanly; afterwards the world is closed
(every method raises the closed-world error) or, if the close came after
the call, it is consistent. Run under ASan and valgrind by test.sh: a
pointer kept across the close would be a use after free there.
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")
local surface = require("spec.support.surface")
local pointmass = require("ecs.pointmass")
local mesh = require("ecs.mesh")
local grid = require("ecs.grid")
local motion = require("ecs.motion")

-- A small world with something in every manager, and one object of every
-- class that belongs to it.
local function fixture()
  local x = { w = ecs.world() }
  local w = x.w
  x.P = w:component("P", { "x:f32", "y:f64", "i:i32", "ref:entity", "any:lua" })
  x.V = w:component("V", { "dx:f32", "dy:f32" })
  x.C = w:component("C", { "x:f64", "y:f64", "r:f64", "layer:u32", "mask:u32" })
  x.es = w:create(6)
  for k, e in ipairs(x.es) do
    x.P:add(e, k, k, k, x.es[1], { k })
    if k % 2 == 0 then x.V:add(e, 1, 1) end
    x.C:add(e, k, k, 1, 1, 1)
  end
  x.e = x.es[1]
  x.T = w.transform
  x.N = w.names
  for k, e in ipairs(x.es) do
    x.T:add(e)
    if k > 1 then x.T:set_parent(e, x.es[k - 1]) end
  end
  x.N:set(x.e, "first")
  x.q = w:query(x.P, x.V)
  x.obs = x.P:on_set(function() end)
  x.jour = w:journal()
  x.PM = pointmass.new(w)
  for _, e in ipairs(x.es) do x.PM:add(e, 1, 1, 2, 3, 0, 0, 0) end
  x.M = mesh.new(w)
  x.M:add(x.e, 10)
  x.G = grid.new(4, 64, 64)
  x.native = motion.integrate("P.x", "V.dx:in", "P.y", "V.dy:in")
  w:system("lua", x.q, function(dt, q)
    for e in q:entities() do x.P:set_field(e, "x", x.P:field(e, "x") + dt) end
  end)
  w:system("expr", x.q, "P.x += V.dx * dt * k", { k = 2 })
  w:system("native", x.q, x.native)
  return x
end

-- One call per method, with arguments that get past the checks into the
-- work. Keys: "<kind>.<method>", kinds as surface.objects names them.
local calls = {
  ["world.alive"] = function(x) return x.w:alive(x.e) end,
  ["world.disable"] = function(x) return x.w:disable(x.e) end,
  ["world.enable"] = function(x) x.w:disable(x.e); return x.w:enable(x.e) end,
  ["world.enabled"] = function(x) return x.w:enabled(x.e) end,
  ["world.check"] = function(x) return x.w:check() end,
  ["world.close"] = function(x) return x.w:close() end,
  ["world.component"] = function(x) return x.w:component("New", { "a:f32", "b:lua", "c" }) end,
  ["world.components"] = function(x) return x.w:components() end,
  ["world.count"] = function(x) return x.w:count() end,
  ["world.memory"] = function(x) return x.w:memory() end,
  ["world.managers"] = function(x) return x.w:managers() end,
  ["world.create"] = function(x) return x.w:create(20) end,
  ["world.destroy"] = function(x) return x.w:destroy({ x.es[2], x.es[3] }) end,
  ["world.entities"] = function(x)
    for e in x.w:entities() do x.w:alive(e) end
  end,
  ["world.query"] = function(x) return x.w:query({ x.P, x.V, without = { x.C } }) end,
  ["world.remove_system"] = function(x) return x.w:remove_system("expr") end,
  ["world.enable_system"] = function(x) return x.w:enable_system("expr", false) end,
  ["world.spawn"] = function(x) return x.w:spawn(3, { [x.P] = true, [x.V] = { 1, 2 } }) end,
  ["world.prefab"] = function(x) return x.w:spawn(2, x.w:prefab({ [x.V] = { 1, 2 } })) end,
  ["world.clone"] = function(x) return x.w:clone(x.e) end,
  ["world.replace_system"] = function(x)
    return x.w:replace_system("expr", x.q, "P.y = P.y + 2 * V.dy * dt")
  end,
  ["world.reset_stats"] = function(x) return x.w:reset_stats() end,
  ["world.stats"] = function(x) return x.w:stats() end,
  ["world.system"] = function(x)
    x.w:system("new_expr", x.q, "P.y = P.y + V.dy * dt")
    x.w:system("new_native", x.q, motion.damp("V.dx", 0.5))
    return x.w:system("new_lua", x.q, function() end)
  end,
  ["world.systems"] = function(x) return x.w:systems() end,
  ["world.update"] = function(x) return x.w:update(1 / 60) end,
  ["world.snapshot"] = function(x) return x.w:snapshot() end,
  ["world.restore"] = function(x)
    local blob = x.w:snapshot()
    x.P:add(x.w:create(), 9, 9, 9, x.e, { "later" })
    x.w:destroy(x.es[6])
    return x.w:restore(blob)
  end,
  ["world.component migrate"] = function(x)
    return x.w:component("P", { "any:lua", "x:f32", "y:f64", "i:f64", "ref:lua", "nw:i8" },
                         { migrate = true })
  end,
  ["world.restore migrate"] = function(x)
    local blob = x.w:snapshot()
    x.w:component("V", { "extra:lua", "dy:f32", "dx:f32" }, { migrate = true })
    return x.w:restore(blob, { migrate = true })
  end,
  ["world.find_component"] = function(x) return x.w:find_component("V") end,
  ["world.journal"] = function(x)
    x.jour:close()
    local j = x.w:journal()
    x.P:set(x.e, 4, 5, 6, x.es[3], { "j" })
    return j:delta()
  end,
  ["world.apply_delta"] = function(x)
    x.jour:delta()
    local blob = x.w:snapshot()
    x.P:set(x.e, 5, 6, 7, x.es[2], { "new" })
    x.w:destroy(x.es[3])
    x.P:add(x.w:create(), 1, 2, 3, x.e, { t = { 1, 2 } })
    local d = x.jour:delta()
    x.jour:close()
    x.w:restore(blob)
    return x.w:apply_delta(d)
  end,
  ["world.state_hash"] = function(x) return x.w:state_hash() end,
  -- runs with the collector stopped: no finalizer inside it (only in the
  -- options table the recipe makes before the call)
  ["world.inspect"] = function(x)
    return x.w:inspect(x.e), x.w:inspect(x.es[2], { table = true }), x.w:inspect(x.es[4])
  end,
  ["journal.delta"] = function(x)
    x.P:set(x.e, 5, 6, 7, x.es[2], { "d" })
    x.w:destroy(x.es[4])
    return x.jour:delta()
  end,
  ["journal.undo"] = function(x)
    x.P:set(x.e, 5, 6, 7, x.es[2], { "u" })
    x.w:destroy(x.es[4])
    x.V:add(x.w:create(), 1, 1)
    return x.jour:undo()
  end,
  ["journal.close"] = function(x) return x.jour:close() end,
  ["journal.active"] = function(x) return x.jour:active() end,

  ["component.add"] = function(x) return x.P:add(x.w:create(), 1, 2, 3, x.e, {}) end,
  ["component.count"] = function(x) return x.P:count() end,
  ["component.on_add"] = function(x)
    x.P:on_add(function(e) x.V:add(e, 1, 2) end)
    return x.P:add(x.w:create(), 1)
  end,
  ["component.on_remove"] = function(x)
    x.P:on_remove(function(e) x.P:get(e) end)
    return x.w:destroy(x.es[2])
  end,
  ["component.on_set"] = function(x)
    local o = x.P:on_set(function(e) x.P:get(e) end)
    x.P:set(x.e, 5)
    return o:close()
  end,
  ["observer.active"] = function(x) return x.obs:active() end,
  ["observer.close"] = function(x) return x.obs:close() end,
  ["component.entities"] = function(x)
    for e in x.P:entities() do x.P:get(e) end
  end,
  ["component.field"] = function(x) return x.P:field(x.e, "any") end,
  ["component.fields"] = function(x) return x.P:fields() end,
  ["component.gc"] = function(x)
    x.w:destroy(x.es[4])
    return x.P:gc()
  end,
  ["component.get"] = function(x) return x.P:get(x.e) end,
  ["component.has"] = function(x) return x.P:has(x.e) end,
  ["component.remove"] = function(x) return x.P:remove(x.e) end,
  ["component.set"] = function(x) return x.P:set(x.e, 5, 6, 7, x.es[2], "s") end,
  ["component.set_field"] = function(x) return x.P:set_field(x.e, "any", { 1 }) end,
  ["component.get_many"] = function(x) return x.P:get_many({ x.e, x.e }, "any") end,
  ["component.set_many"] = function(x) return x.P:set_many({ x.e, x.e }, "any", { 1 }) end,
  ["component.size"] = function(x) return x.P:size() end,

  ["query.apply"] = function(x) return x.q:apply("P.x = P.x + V.dx * a + b", { a = 1, b = 2 }) end,
  ["query.columns"] = function(x)
    for n, xs, dxs in x.q:columns("P.x", "V.dx:in") do
      for r = 1, n do xs[r] = xs[r] + dxs[r] end
    end
  end,
  ["query.components"] = function(x) return x.q:components() end,
  ["query.each"] = function(x)
    return x.q:each(function(e, px, dx, i)
      x.P:set_field(e, "any", { i })
      return px + dx, i + 1
    end, "P.x", "V.dx:in", "P.i")
  end,
  ["query.each_chunk"] = function(x)
    return x.q:each_chunk(function(n, px, dx, es)
      for r = 1, n do
        x.P:set_field(es[r], "any", { r })
        px[r] = px[r] + dx[r]
      end
    end, "P.x", "V.dx:in", "entity")
  end,
  ["query.pointers"] = function(x)
    -- LuaJIT: a zero-copy loop (a close inside it ends it at the next
    -- step); elsewhere the call raises (no FFI), which is its result here
    if not compat.jit then return pcall(x.q.pointers, x.q, "P.x") end
    for n, px, dx in x.q:pointers("P.x", "V.dx:in") do
      for r = 1, n do px[r] = px[r] + dx[r] end
    end
  end,
  ["pointer loop.close"] = function(x) -- LuaJIT only (the class needs the FFI)
    if not compat.jit then return end
    local step, loop = x.q:pointers("P.x")
    step(loop)
    return loop:close()
  end,
  ["query.count"] = function(x) return x.q:count() end,
  ["query.programs"] = function(x)
    x.q:apply("P.y = 1")
    return x.q:programs()
  end,
  ["query.entities"] = function(x)
    for e in x.q:entities() do x.P:get(e) end
  end,
  ["query.run"] = function(x) return x.q:run(x.native, 0.5) end,

  ["transform.add"] = function(x)
    return x.T:add(x.w:create(), { position = { 1, 2, 3 }, rotation = { 0, 0, 0, 1 }, scale = { 1, 1, 1 } })
  end,
  ["transform.children"] = function(x)
    for c in x.T:children(x.e) do x.T:parent(c) end
  end,
  ["transform.destroy_tree"] = function(x) return x.T:destroy_tree(x.es[5]) end,
  ["transform.gc"] = function(x)
    x.w:destroy(x.es[6])
    return x.T:gc()
  end,
  ["transform.has"] = function(x) return x.T:has(x.e) end,
  ["transform.on_add"] = function(x)
    x.T:on_add(function(e) x.T:local_position(e) end)
    return x.T:add(x.w:create())
  end,
  ["transform.on_remove"] = function(x)
    x.T:on_remove(function(e) x.T:local_position(e) end)
    return x.w:destroy(x.es[6])
  end,
  ["transform.on_set"] = function(x)
    x.T:on_set(function(e) x.T:world_position(e) end)
    return x.T:set_local_position(x.e, 4, 5, 6)
  end,
  ["transform.local_position"] = function(x) return x.T:local_position(x.e) end,
  ["transform.local_rotation"] = function(x) return x.T:local_rotation(x.e) end,
  ["transform.local_scale"] = function(x) return x.T:local_scale(x.e) end,
  ["transform.parent"] = function(x) return x.T:parent(x.es[2]) end,
  ["transform.remove"] = function(x) return x.T:remove(x.es[3]) end,
  ["transform.set_local_position"] = function(x) return x.T:set_local_position(x.e, 1, 2, 3) end,
  ["transform.set_local_positions"] = function(x)
    return x.T:set_local_positions(x.es, { 1, 2, 3, 4, 5, 6 }, { 1, 2, 3, 4, 5, 6 }, { 0, 0, 0, 0, 0, 0 })
  end,
  ["transform.set_local_rotation"] = function(x) return x.T:set_local_rotation(x.e, 0, 0, 1, 1) end,
  ["transform.set_local_rotations"] = function(x)
    local o, l = { 0, 0, 0, 0, 0, 0 }, { 1, 1, 1, 1, 1, 1 }
    return x.T:set_local_rotations(x.es, o, o, o, l)
  end,
  ["transform.set_local_scale"] = function(x) return x.T:set_local_scale(x.e, 2, 2, 2) end,
  ["transform.set_local_scales"] = function(x)
    local l = { 2, 2, 2, 2, 2, 2 }
    return x.T:set_local_scales(x.es, l, l, l)
  end,
  ["transform.set_parent"] = function(x) return x.T:set_parent(x.es[4], x.es[1], true) end,
  ["transform.size"] = function(x) return x.T:size() end,
  ["transform.world_matrix"] = function(x) return x.T:world_matrix(x.es[6]) end,
  ["transform.world_position"] = function(x) return x.T:world_position(x.es[6]) end,
  ["transform.world_positions"] = function(x) return x.T:world_positions(x.es) end,
  ["transform.world_rotation"] = function(x) return x.T:world_rotation(x.es[6]) end,

  ["names.clear"] = function(x) return x.N:clear(x.e) end,
  ["names.on_add"] = function(x)
    x.N:on_add(function(e) x.N:get(e) end)
    return x.N:set(x.es[4], "fourth")
  end,
  ["names.on_remove"] = function(x)
    x.N:on_remove(function(e) x.N:get(e) end)
    return x.N:clear(x.e)
  end,
  ["names.on_set"] = function(x)
    x.N:on_set(function(e) x.N:get(e) end)
    return x.N:set(x.e, "again")
  end,
  ["names.find"] = function(x) return x.N:find("first") end,
  ["names.gc"] = function(x)
    x.N:set(x.es[2], "second")
    x.w:destroy(x.es[2])
    return x.N:gc()
  end,
  ["names.get"] = function(x) return x.N:get(x.e) end,
  ["names.set"] = function(x) return x.N:set(x.es[3], "third") end,

  ["ecs.grid.build"] = function(x) return x.G:build(x.P, x.C) end,
  ["ecs.grid.count"] = function(x) return x.G:count() end,
  ["ecs.grid.nearest"] = function(x)
    x.G:build(x.P, x.C)
    return x.G:nearest(1, 1, 10, 1)
  end,
  ["ecs.grid.pairs"] = function(x)
    x.G:build(x.P, x.C)
    return x.G:pairs()
  end,
  ["ecs.grid.size"] = function(x) return x.G:size() end,

  ["ecs.mesh.add"] = function(x) return x.M:add(x.es[2], 20) end,
  ["ecs.mesh.count"] = function(x) return x.M:count() end,
  ["ecs.mesh.gc"] = function(x)
    x.w:destroy(x.e)
    return x.M:gc()
  end,
  ["ecs.mesh.has"] = function(x) return x.M:has(x.e) end,
  ["ecs.mesh.meshes"] = function(x) return x.M:meshes(x.e) end,
  ["ecs.mesh.remove"] = function(x) return x.M:remove(x.e, 10) end,
  ["ecs.mesh.remove_all"] = function(x) return x.M:remove_all(x.e) end,
  ["ecs.mesh.size"] = function(x) return x.M:size() end,

  ["ecs.pointmass.acceleration"] = function(x) return x.PM:acceleration(x.e) end,
  ["ecs.pointmass.add"] = function(x) return x.PM:add(x.w:create(), 1, 1, 2, 3, 4, 5, 6) end,
  ["ecs.pointmass.copy_positions"] = function(x) return x.PM:copy_positions(x.C) end,
  ["ecs.pointmass.count"] = function(x) return x.PM:count() end,
  ["ecs.pointmass.gc"] = function(x)
    x.w:destroy(x.e)
    return x.PM:gc()
  end,
  ["ecs.pointmass.has"] = function(x) return x.PM:has(x.e) end,
  ["ecs.pointmass.mass"] = function(x) return x.PM:mass(x.e) end,
  ["ecs.pointmass.position"] = function(x) return x.PM:position(x.e) end,
  ["ecs.pointmass.remove"] = function(x) return x.PM:remove(x.e) end,
  ["ecs.pointmass.set_acceleration"] = function(x) return x.PM:set_acceleration(x.e, 0, -10, 0) end,
  ["ecs.pointmass.set_position"] = function(x) return x.PM:set_position(x.e, 1, 1, 1) end,
  ["ecs.pointmass.set_velocity"] = function(x) return x.PM:set_velocity(x.e, 1, 1, 1) end,
  ["ecs.pointmass.simulate"] = function(x) return x.PM:simulate(0.5) end,
  ["ecs.pointmass.velocity"] = function(x) return x.PM:velocity(x.e) end,

  -- module functions that take a world
  ["ecs.pointmass.new"] = function(x)
    local w2 = x.w
    x.PM = nil
    collectgarbage() -- (the fixture's object stays attached to the world)
    return pointmass.new(w2)
  end,
  ["ecs.mesh.new"] = function(x) return mesh.new(x.w) end,
}

-- Calls that read a user table whose metamethods may close the world.
local meta_calls = {
  ["query.apply params"] = function(x, t) return x.q:apply("P.x = P.x + a * b", t({ a = 1, b = 2 })) end,
  ["world.system params"] = function(x, t)
    return x.w:system("meta", x.q, "P.x = P.x + a * b", t({ a = 1, b = 2 }))
  end,
  ["world.update params"] = function(x, t)
    x.w:system("meta", x.q, "P.x = P.x + a * b", t({ a = 1, b = 2 }))
    return x.w:update(0.1)
  end,
  ["transform.add options"] = function(x, t)
    return x.T:add(x.w:create(), t({ position = t({ 1, 2, 3 }), rotation = t({ 0, 0, 0, 1 }),
                                     scale = t({ 1, 1, 1 }) }))
  end,
}

-- The calls that allocate from Lua (so a finalizer can run inside them):
-- the sweep must reach at least one such point in each, or it tests
-- nothing (ECS_REENTRY_REPORT=1 prints the count per call).
local allocates = {
  ["component.add"] = true,
  ["component.entities"] = true,
  ["component.fields"] = true,
  ["component.set_field"] = true,
  ["component.get_many"] = true,
  ["component.set_many"] = true,
  ["ecs.grid.build"] = true,
  ["ecs.grid.nearest"] = true,
  ["ecs.grid.pairs"] = true,
  ["ecs.mesh.meshes"] = true,
  ["ecs.pointmass.new"] = true,
  ["names.get"] = true,
  ["query.apply"] = true,
  ["query.columns"] = true,
  ["query.components"] = true,
  ["query.each"] = true,
  ["query.each_chunk"] = true,
  ["query.pointers"] = true,
  ["query.entities"] = true,
  ["query.programs"] = true,
  ["query.run"] = true,
  ["transform.add"] = true,
  ["transform.children"] = true,
  ["transform.set_local_positions"] = true,
  ["transform.set_local_rotations"] = true,
  ["transform.set_local_scales"] = true,
  ["transform.world_positions"] = true,
  ["world.component"] = true,
  ["world.components"] = true,
  ["world.create"] = true,
  ["world.destroy"] = true,
  ["world.query"] = true,
  ["world.stats"] = true,
  ["world.system"] = true,
  ["world.replace_system"] = true,
  ["world.spawn"] = true,
  ["world.prefab"] = true,
  ["world.clone"] = true,
  ["world.systems"] = true,
  ["world.update"] = true,
  ["world.snapshot"] = true,
  ["world.restore"] = true,
  ["world.component migrate"] = true,
  ["world.restore migrate"] = true,
  ["world.journal"] = true,
  ["world.apply_delta"] = true,
  ["journal.delta"] = true,
  ["journal.undo"] = true,
}

local function closed_everywhere(x)
  local probes = {
    function() return x.w:count() end,
    function() return x.P:count() end,
    function() return x.q:count() end,
    function() return x.T:size() end,
    function() return x.N:get(x.e) end,
  }
  for _, f in ipairs(probes) do
    local ok, err = pcall(f)
    assert.is_false(ok)
    assert.matches("closed world", tostring(err), 1, true)
  end
end

-- Run call(x) with the world closed by the k-th finalizer (or metamethod)
-- that runs during it; @return whether the close happened during the call.
-- What the k-th event does: close the world, or change it (structural
-- changes that move or grow every manager's storage).
local function churn(x)
  local es = x.w:create(40)
  for _, e in ipairs(es) do
    x.P:add(e, 1, 2, 3, e, {})
    x.V:add(e, 1, 1)
    x.C:add(e, 1, 1, 1, 1, 1)
    x.T:add(e)
    x.PM:add(e, 1)
  end
  x.w:destroy({ x.es[2], es[1], es[3] })
  x.P:remove(x.es[5])
  x.P:gc(); x.V:gc(); x.T:gc()
  x.N:set(es[2], "churned")
  x.w:query(x.P, x.C):count()
end

local function attempt(call, k, via_meta, mutate)
  local x = fixture()
  collectgarbage()
  local in_call, fired, done = false, 0, false
  local function on_event()
    if in_call then
      fired = fired + 1
      if fired == k then
        if mutate then
          in_call = false
          churn(x)
          in_call = true
        else
          x.w:close()
        end
      end
    end
  end
  local function arm()
    compat.finalizer(function()
      on_event()
      if not done then arm() end
    end)
  end
  -- the collector finishes a whole cycle at every allocation check: with
  -- pause 0 and a huge step, after a full collection under these settings
  compat.gc_incremental(0, 0, 40)
  local pause = collectgarbage("setpause", 0)
  local stepmul = collectgarbage("setstepmul", 1000)
  collectgarbage()
  local wrap
  if via_meta then
    -- every read of the table is an event
    wrap = function(t)
      return setmetatable({}, {
        __index = function(_, key) on_event(); return t[key] end,
        __len = function() on_event(); return #t end,
      })
    end
  else
    arm()
  end
  in_call = true
  local ok, err = pcall(call, x, wrap)
  in_call = false
  done = true
  collectgarbage("setpause", pause)
  collectgarbage("setstepmul", stepmul)
  compat.gc_incremental(0, 0, 13)
  collectgarbage()
  if not ok then assert.is_string(err) end
  if mutate then
    if tostring(x.w) ~= "ecs.World (closed)" then
      local good, bad = x.w:check()
      assert.is_true(good, bad)
    end
  elseif fired >= k or tostring(x.w) == "ecs.World (closed)" then
    closed_everywhere(x)
  else
    assert.is_true(ok, err)
    local good, bad = x.w:check()
    assert.is_true(good, bad)
  end
  x.w:close()
  return fired >= k
end

local function sweep(call, via_meta, mutate)
  local k = 1
  while attempt(call, k, via_meta, mutate) do
    k = k + 1
    assert.is_true(k < 2000, "no end to the events of one call")
  end
  return k
end

describe("a world closed in the middle of a call", function()
  it("has a call recipe for every method of every class", function()
    local x = fixture()
    local missing = {}
    for _, o in ipairs(surface.objects(x.w)) do
      for _, m in ipairs(surface.methods(o[2])) do
        local key = o[1] .. "." .. m
        if not calls[key] then missing[#missing + 1] = key end
      end
    end
    x.w:close()
    assert.same({}, missing)
  end)

  local keys = {}
  for key in pairs(calls) do keys[#keys + 1] = key end
  table.sort(keys)
  for _, key in ipairs(keys) do
    it("by a finalizer at each allocation point of " .. key, function()
      local k = sweep(calls[key], false)
      if os.getenv("ECS_REENTRY_REPORT") then print(key, k - 1) end
      -- (before 5.4 the collector takes no step size: a call as short as
      -- these need not see a whole cycle, so no point may be reached there)
      if allocates[key] and compat.version >= "5.4" then
        assert.is_true(k > 1, "no allocation point was reached")
      end
    end)
  end

  for _, key in ipairs(keys) do
    it("changed by a finalizer at each allocation point of " .. key, function()
      sweep(calls[key], false, true)
    end)
  end

  local mkeys = {}
  for key in pairs(meta_calls) do mkeys[#mkeys + 1] = key end
  table.sort(mkeys)
  for _, key in ipairs(mkeys) do
    it("by a metamethod of the " .. key .. " table", function()
      local k = sweep(meta_calls[key], true)
      assert.is_true(k > 1, "the call read no table field")
    end)
  end

  it("is released when the outermost call returns", function()
    local w = ecs.world()
    local P = w:component("P", { "x" })
    local e = w:create()
    P:add(e, 1)
    local q = w:query(P)
    local seen
    w:system("closer", q, function()
      w:close()
      seen = select(2, pcall(P.get, P, e))
    end)
    w:update(0)
    assert.matches("closed world", seen, 1, true)
    assert.equals("ecs.World (closed)", tostring(w))
    assert.has_error(function() w:update(0) end)
  end)
end)

-- A userdata of another library (a closed file handle: nothing left to
-- free) or of another of our classes, given the metatable mt.
local function impostors(mt, other)
  local f = io.tmpfile()
  f:close()
  debug.setmetatable(f, mt)
  local list = { f }
  if other then
    debug.setmetatable(other, mt)
    list[2] = other
  end
  return list
end

describe("a userdata wearing one of our metatables", function()
  it("is refused as self by every method and never read", function()
    local w = ecs.world()
    local objects = surface.objects(w)
    for i, o in ipairs(objects) do
      local mt = debug.getmetatable(o[2])
      -- an object of another class (the next one) lends its block
      local donor = surface.objects(ecs.world())[i % #objects + 1][2]
      local donor_mt = debug.getmetatable(donor)
      for _, fake in ipairs(impostors(mt, donor)) do
        for _, m in ipairs(surface.methods(o[2])) do
          local ok, err = pcall(surface.method_table(o[2])[m], fake, w:create(), 1, 2, 3)
          assert.is_false(ok, o[1] .. "." .. m)
          assert.matches("borrowed", tostring(err), 1, true)
        end
        pcall(tostring, fake)
      end
      debug.setmetatable(donor, donor_mt)
    end
    w:close()
  end)

  it("is refused as an argument", function()
    local w = ecs.world()
    local P = w:component("P", { "x" })
    local q = w:query(P)
    local fake = impostors(debug.getmetatable(P), w:query(P))
    for _, f in ipairs(fake) do
      assert.has_error(function() w:query(f) end)
      assert.has_error(function() grid.new(1, 2, 2):build(f, f) end)
      assert.has_error(function() pointmass.new(w):copy_positions(f) end)
    end
    for _, f in ipairs(impostors(debug.getmetatable(w), w:query(P))) do
      assert.has_error(function() pointmass.new(f) end)
      assert.has_error(function() mesh.new(f) end)
      assert.has_error(function() q:run(f) end)
      assert.has_error(function() w:system("s", q, f) end)
    end
    w:close()
  end)

  it("is left alone by our finalizers when collected", function()
    local w = ecs.world()
    for _, o in ipairs(surface.objects(w)) do
      impostors(debug.getmetatable(o[2]))
    end
    collectgarbage()
    collectgarbage()
    assert.is_true(w:check())
    w:close()
  end)
end)
