--[[
strings_spec.lua -- strings from Lua carry their length: a zero byte inside
one is never a silent end. Every function that takes text (expressions,
schemas, component and field names, column specs, entity names, system
names, plugin column specs) rejects a zero byte at any position with an
error that names the function, and changes nothing; the same text without
the zero byte works. A completeness check sorts every function of the
surface into "takes text" or "takes none", so a new one must be listed.
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")
local surface = require("spec.support.surface")
local release = require("spec.support.release")
local motion = require("ecs.motion")

-- A fresh world per call: P { d:f64, i:i32 } on one entity, a query over it,
-- an expression system "keep" (for remove_system) and the name "player".
local function fixture()
  local c = { w = ecs.world() }
  c.P = c.w:component("P", { "d", "i:i32" })
  c.e, c.free = c.w:create(), c.w:create()
  c.P:add(c.e)
  c.q = c.w:query(c.P)
  c.w:system("keep", c.q, "P.d += 0")
  c.w.names:set(c.free, "other")
  return c
end

-- What nothing may have changed after a rejected call.
local function state(c)
  return {
    d = c.P:field(c.e, "d"), i = c.P:field(c.e, "i"), free_has_p = c.P:has(c.free),
    systems = table.concat(c.w:systems(), ","), components = #c.w:components(),
    name_e = c.w.names:get(c.e), name_free = c.w.names:get(c.free),
  }
end

-- { function named in the error, valid text, call(c, text) }
local cases = {
  { "q:apply", "P.d = 5", function(c, s) return c.q:apply(s) end },
  { "q:columns", "P.d:in", function(c, s) for _ in c.q:columns(s) do end end },
  { "q:columns", "entity", function(c, s) for _ in c.q:columns("P.i", s) do end end },
  { "q:each", "P.d", function(c, s) c.q:each(function(_, d) return d + 1 end, s) end },
  { "q:each", "entity", function(c, s) c.q:each(function() end, "P.i:in", s) end },
  { "q:each_chunk", "P.d", function(c, s)
    c.q:each_chunk(function(n, d) for i = 1, n do d[i] = d[i] + 1 end end, s)
  end },
  { "q:each_chunk", "entity", function(c, s) c.q:each_chunk(function() end, "P.i:in", s) end },
  { "q:pointers", "P.d", function(c, s)
    if not compat.jit then -- the spec is checked first; then: no FFI here
      local ok, err = pcall(c.q.pointers, c.q, s)
      if ok or not err:find("needs LuaJIT's FFI", 1, true) then error(err, 0) end
      return
    end
    for n, d in c.q:pointers(s) do for i = 1, n do d[i] = d[i] + 1 end end
  end },
  { "world:system", "move", function(c, s) c.w:system(s, c.q, "P.d = 1") end },
  { "world:system", "P.d += dt * k", function(c, s) c.w:system("move", c.q, s, { k = 1 }) end },
  { "world:system", "tick", function(c, s) c.w:system(s, function() end) end },
  { "world:remove_system", "keep", function(c, s) assert(c.w:remove_system(s)) end },
  { "world:replace_system", "keep", function(c, s) c.w:replace_system(s, c.q, "P.d = 2") end },
  { "world:enable_system", "keep", function(c, s) c.w:enable_system(s, false) end },
  { "world:spawn", "P", function(c, s) c.w:spawn(1, { [s] = true }) end },
  { "world:spawn", "d", function(c, s) c.w:spawn(1, { P = { [s] = 1 } }) end },
  { "world:prefab", "P", function(c, s) c.w:prefab({ [s] = true }) end },
  { "world:update", "update", function(c, s) c.w:update(0, s) end }, -- a phase some system has
  { "world:stats", "draw", function(c, s) c.w:stats(s) end },
  { "world:system", "draw", function(c, s) c.w:system("d", function() end, { phase = s }) end },
  { "P:get_many", "d", function(c, s) c.P:get_many({ c.e }, s) end },
  { "P:set_many", "d", function(c, s) c.P:set_many({ c.e }, s, 2) end },
  { "world:replace_system", "P.d += dt * k",
    function(c, s) c.w:replace_system("keep", c.q, s, { k = 1 }) end },
  { "world:component", "Thing", function(c, s) c.w:component(s, { "x" }) end },
  { "world:component", "x:f32", function(c, s) c.w:component("Thing", { "a:i8", s }) end },
  { "world:component", "flag", function(c, s) c.w:component("Thing", { s }) end },
  { "P:field", "d", function(c, s) return c.P:field(c.e, s) end },
  { "P:set_field", "d", function(c, s) c.P:set_field(c.e, s, 1) end },
  { "P:set", "i", function(c, s) c.P:set(c.e, { [s] = 1 }) end },
  { "P:add", "d", function(c, s) c.P:add(c.free, { [s] = 1 }) end },
  { "names:set", "player", function(c, s) c.w.names:set(c.e, s) end },
  { "names:find", "other", function(c, s) assert(c.w.names:find(s) == c.free) end },
  { "world:find_component", "P", function(c, s) assert(c.w:find_component(s) == c.P) end },
  { "motion.integrate", "P.d", function(c, s) c.q:run(motion.integrate(s, "P.i:in")) end },
  { "motion.integrate", "P.i:in", function(c, s) c.q:run(motion.integrate("P.d", s)) end },
  { "motion.damp", "P.d", function(c, s) c.q:run(motion.damp(s, 0.5), 0.1) end },
}

-- text with a zero byte at the start, inside, at the end, in place of a
-- character, and followed by more text
local function with_zeros(s)
  local n, out = #s, { "\0" .. s, s .. "\0", s .. "\0junk", "\0", s .. "\0" .. s }
  for _, k in ipairs({ 1, math.floor(n / 2), n - 1 }) do
    out[#out + 1] = s:sub(1, k) .. "\0" .. s:sub(k + 1)
    out[#out + 1] = s:sub(1, k - 1) .. "\0" .. s:sub(k + 1)
  end
  return out
end

describe("text from Lua", function()
  for _, case in ipairs(cases) do
    local fn, valid, call = case[1], case[2], case[3]
    it(("%s rejects a zero byte in %q at any position, changing nothing"):format(fn, valid), function()
      do -- the text itself is fine
        local c = fixture()
        local ok, err = pcall(call, c, valid)
        assert(ok, err)
        release(c.w)
      end
      for _, s in ipairs(with_zeros(valid)) do
        local c = fixture()
        local before = state(c)
        local ok, err = pcall(call, c, s)
        assert.is_false(ok, ("%s accepted %q"):format(fn, s))
        assert.equals("string", type(err))
        assert.truthy(err:find(fn, 1, true), err)
        assert.truthy(err:find("embedded zero at position " .. (s:find("\0", 1, true)), 1, true),
                      err)
        assert.same(before, state(c))
        release(c.w)
      end
    end)
  end

  it("a zero byte ends no expression early: 'P.d = 5\\0 garbage' runs nothing", function()
    local c = fixture()
    local ok, err = pcall(c.q.apply, c.q, "P.d = 5\0 garbage")
    assert.is_false(ok)
    assert.truthy(err:find("q:apply: string contains an embedded zero at position 8", 1, true), err)
    assert.equals(0, c.P:field(c.e, "d"))
    release(c.w)
  end)

  it("a schema entry with a zero byte says so (not 'unknown type')", function()
    local c = fixture()
    local ok, err = pcall(c.w.component, c.w, "X", { "x:f32\0junk" })
    assert.is_false(ok)
    assert.equals("world:component: schema entry 1 contains an embedded zero at position 6",
                  err:gsub("^.-:%d+: ", ""))
    release(c.w)
  end)

  it("every function of the surface is listed as taking text or not", function()
    local text = {}
    for _, case in ipairs(cases) do text[case[1]] = true end
    -- the same names as the surface spells them
    local takes_text = {
      ["query.apply"] = "q:apply", ["query.columns"] = "q:columns", ["query.each"] = "q:each",
      ["query.each_chunk"] = "q:each_chunk", ["query.pointers"] = "q:pointers",
      ["world.system"] = "world:system", ["world.remove_system"] = "world:remove_system",
      ["world.replace_system"] = "world:replace_system",
      ["world.enable_system"] = "world:enable_system",
      ["world.spawn"] = "world:spawn", ["world.prefab"] = "world:prefab",
      ["world.update"] = "world:update", ["world.stats"] = "world:stats",
      ["component.get_many"] = "P:get_many", ["component.set_many"] = "P:set_many",
      ["world.component"] = "world:component", ["component.field"] = "P:field",
      ["component.set_field"] = "P:set_field", ["component.set"] = "P:set",
      ["component.add"] = "P:add", ["names.set"] = "names:set", ["names.find"] = "names:find",
      ["world.find_component"] = "world:find_component",
      ["ecs.motion.integrate"] = "motion.integrate", ["ecs.motion.damp"] = "motion.damp",
    }
    local no_text = {
      "ecs.entity", "ecs.generation", "ecs.id", "ecs.index",
      "ecs.is_entity", "ecs.tostring", "ecs.world", "ecs.grid.new", "ecs.mesh.new",
      "ecs.pointmass.new",
      "pointer loop.close",
      "world.alive", "world.disable", "world.enable", "world.enabled", "world.check", "world.close",
      "world.components", "world.count",
      "world.create", "world.destroy", "world.entities", "world.query", "world.reset_stats",
      "world.systems", "world.clone",
      "component.count", "component.entities", "component.fields", "component.gc",
      "component.get", "component.has", "component.remove", "component.size",
      "query.components", "query.count", "query.entities", "query.run", "query.programs",
      "world.memory", "world.managers", "world.inspect",
      -- snapshots are bytes, not text: a zero byte is data there
      "ecs.restore", "world.restore", "world.snapshot", "world.apply_delta",
      "world.journal", "world.state_hash",
      "journal.delta", "journal.undo", "journal.close", "journal.active",
      "names.clear", "names.gc", "names.get",
      "component.on_add", "component.on_remove", "component.on_set",
      "names.on_add", "names.on_remove", "names.on_set",
      "transform.on_add", "transform.on_remove", "transform.on_set",
      "observer.close", "observer.active",
    }
    local numbers_only = { -- methods taking numbers, entities and managers
      transform = "add children destroy_tree gc has local_position local_rotation local_scale " ..
                  "parent remove set_local_position set_local_positions set_local_rotation " ..
                  "set_local_rotations set_local_scale set_local_scales set_parent size " ..
                  "world_matrix world_position world_positions world_rotation",
      ["ecs.grid"] = "build count nearest pairs size",
      ["ecs.mesh"] = "add count gc has meshes remove remove_all size",
      ["ecs.pointmass"] = "acceleration add copy_positions count gc has mass position remove " ..
                          "set_acceleration set_position set_velocity simulate velocity",
    }
    for kind, list in pairs(numbers_only) do
      for m in list:gmatch("%S+") do no_text[#no_text + 1] = kind .. "." .. m end
    end
    local listed = {}
    for k, v in pairs(takes_text) do
      assert(text[v], "no case for " .. v)
      listed[k] = true
    end
    for _, k in ipairs(no_text) do listed[k] = true end
    local w = ecs.world()
    local seen = {}
    for _, f in ipairs(surface.module_functions()) do seen[#seen + 1] = f[1] end
    for _, o in ipairs(surface.objects(w)) do
      for _, m in ipairs(surface.methods(o[2])) do seen[#seen + 1] = o[1] .. "." .. m end
    end
    for _, name in ipairs(seen) do
      assert(listed[name], name .. " is in neither list: does it take text?")
    end
    release(w)
  end)
end)
