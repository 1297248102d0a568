--[[
spawn_spec.lua -- world:spawn(n, spec [, overrides]), world:prefab(spec)
and world:clone(e): every field type round trip with one value for all and
with per-entity arrays, n = 0, named and positional forms, tags, keys as
component objects and as names, zero defaults; the same conversions and
refusals as C:add (and the same stored values as a create + add model);
on_add observers (after every value is written, entity by entity, components
in registration order; observers that destroy or add; errors propagating
unchanged); every error leaving the world as it was (counts, queries and the
next ids); prefabs (reuse, overrides, copy of the spec, another world);
clone (every field type, no transform or name, dead entities); a 100k spawn
with queries already made.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")

-- One field of each type the README lists, named after it.
local TYPES = { "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "bool", "entity", "lua" }
local ALL_FIELDS = {}
for i, t in ipairs(TYPES) do ALL_FIELDS[i] = "x_" .. t .. ":" .. t end

-- The same world every time, so that two of them hand out the same ids.
local function build()
  local w = ecs.world()
  local c = {}
  c.P = w:component("Position", { "x:f64", "y:f64" })
  c.V = w:component("Velocity", { "dx:f32", "dy:f32" })
  c.H = w:component("Health", { "hp:i32" })
  c.Tag = w:component("Enemy")
  c.All = w:component("All", ALL_FIELDS)
  c.Brain = w:component("Brain", { "script:lua", "n" })
  return w, c
end

-- Every value of e's component C, trailing nils included, as a table.
local function values(C, e)
  return table.pack(C:get(e))
end

-- The state an error must leave untouched: live entities, stored instances
-- (dead records included, so a created-then-destroyed entity shows) and
-- the matches of the queries given.
local function state(w, qs)
  local s = { w:count() }
  for _, C in ipairs(w:components()) do s[#s + 1] = C:size() end
  for _, q in ipairs(qs or {}) do s[#s + 1] = q:count() end
  return s
end

-- f must raise and change nothing; returns its error.
local function refused(w, qs, f, ...)
  local before = state(w, qs)
  local err = err_of(f, ...)
  assert.same(before, state(w, qs))
  return err
end

-- Both worlds hand out the same next id (a failed call took none).
local function same_next(w, twin)
  assert.equals(ecs.id(twin:create()), ecs.id(w:create()))
end

local function text(err) return tostring(err) end

describe("world:spawn", function()
  local w, c, P, V, H, Tag, All
  before_each(function()
    w, c = build()
    P, V, H, Tag, All = c.P, c.V, c.H, c.Tag, c.All
  end)
  after_each(function() release(w) end)

  describe("field types", function()
    it("gives one value of every type to every entity", function()
      local target = w:create()
      local ref = { "shared" }
      local es = w:spawn(3, { All = {
        x_f32 = 0.5, x_f64 = 0.1, x_i8 = -128, x_i16 = 32767, x_i32 = -2147483648,
        x_i64 = math.mininteger, x_u8 = 255, x_u16 = 65535, x_u32 = 4294967295,
        x_bool = true, x_entity = target, x_lua = ref } })
      assert.equals(3, #es)
      for _, e in ipairs(es) do
        assert.is_true(w:alive(e))
        assert.same({ 0.5, 0.1, -128, 32767, -2147483648, math.mininteger, 255, 65535,
                      4294967295, true, target, ref, n = 12 }, values(All, e))
        assert.is_true(rawequal(ref, All:field(e, "x_lua")))
        for _, t in ipairs({ "i8", "i16", "i32", "i64", "u8", "u16", "u32" }) do
          assert.equals("integer", math.type(All:field(e, "x_" .. t)))
        end
      end
      assert.equals(4, w:count())
    end)

    it("gives element i of a per-entity array to entity i, for every type but lua", function()
      local t1, t2 = w:create(), w:create()
      local ref = { 1, 2, 3, 4 } -- a lua field takes the table itself, not its elements
      local es = w:spawn(4, { All = {
        x_f32 = { 0.5, -1.25, 1e300, 3 },
        x_f64 = { 0.1, -0.0, math.huge, 2 ^ 53 },
        x_i8 = { -128, 127, 0, 3.0 },
        x_i16 = { -32768, 32767, 1, 2 },
        x_i32 = { -2147483648, 2147483647, 5, 6 },
        x_i64 = { math.mininteger, math.maxinteger, -1, 0 },
        x_u8 = { 0, 255, 7, 8 },
        x_u16 = { 0, 65535, 9, 10 },
        x_u32 = { 0, 4294967295, 11, 12 },
        x_bool = { true, false, false, true },
        x_entity = { t1, ecs.null, t2, t1 },
        x_lua = ref } })
      local want = {
        { 0.5, 0.1, -128, -32768, -2147483648, math.mininteger, 0, 0, 0, true, t1, ref, n = 12 },
        { -1.25, -0.0, 127, 32767, 2147483647, math.maxinteger, 255, 65535, 4294967295,
          false, ecs.null, ref, n = 12 },
        { math.huge, math.huge, 0, 1, 5, -1, 7, 9, 11, false, t2, ref, n = 12 },
        { 3, 2 ^ 53, 3, 2, 6, 0, 8, 10, 12, true, t1, ref, n = 12 },
      }
      for i, e in ipairs(es) do
        assert.same(want[i], values(All, e))
        assert.is_true(rawequal(ref, All:field(e, "x_lua")))
      end
      assert.equals("integer", math.type(All:field(es[4], "x_i8")))
    end)

    it("gives a lua field's table as is to every entity, whatever its length", function()
      local B = c.Brain
      local list = { 10, 20 }
      local es = w:spawn(2, { Brain = { script = list, n = { 1, 2 } } })
      assert.is_true(rawequal(list, B:field(es[1], "script")))
      assert.is_true(rawequal(list, B:field(es[2], "script")))
      assert.same({ 1, 2 }, { B:field(es[1], "n"), B:field(es[2], "n") })
      local f = function() end
      es = w:spawn(3, { Brain = { f } }) -- positional: the first field is the lua one
      for _, e in ipairs(es) do assert.equals(f, B:field(e, "script")) end
    end)

    it("stores zero for true, for {} and for fields not given", function()
      local zero = { 0, 0, 0, 0, 0, 0, 0, 0, 0, false, ecs.null, nil, n = 12 }
      for _, v in ipairs({ true, {} }) do
        local es = w:spawn(2, { All = v, Position = v })
        for _, e in ipairs(es) do
          assert.same(zero, values(All, e))
          assert.same({ 0, 0, n = 2 }, values(P, e))
        end
      end
      local e = w:spawn(1, { All = { x_i16 = 4 }, Position = { y = 2 } })[1]
      assert.same({ 0, 0, 0, 4, 0, 0, 0, 0, 0, false, ecs.null, nil, n = 12 }, values(All, e))
      assert.same({ 0, 2, n = 2 }, values(P, e))
    end)
  end)

  describe("forms", function()
    it("n = 0 gives {} and creates nothing", function()
      local calls = 0
      P:on_add(function() calls = calls + 1 end)
      assert.same({}, w:spawn(0, { Position = { x = 1 } }))
      assert.same({}, w:spawn(0, { Position = { x = {} } })) -- an array of 0 values
      assert.equals(0, w:count())
      assert.equals(0, calls)
    end)

    it("takes fields by name or by position in schema order", function()
      local a = w:spawn(2, { Position = { x = 1, y = 2 } })
      local b = w:spawn(2, { Position = { 1, 2 } })
      local d = w:spawn(2, { Position = { 7 } })        -- the rest zero
      local f = w:spawn(2, { Position = { { 3, 4 }, 5 } }) -- positional arrays
      for i = 1, 2 do
        assert.same({ 1, 2 }, { P:get(a[i]) })
        assert.same({ 1, 2 }, { P:get(b[i]) })
        assert.same({ 7, 0 }, { P:get(d[i]) })
      end
      assert.same({ 3, 5 }, { P:get(f[1]) })
      assert.same({ 4, 5 }, { P:get(f[2]) })
    end)

    it("adds tags with true or {}", function()
      local es = w:spawn(2, { Enemy = true, Position = true })
      local fs = w:spawn(2, { [Tag] = {} })
      for i = 1, 2 do
        assert.is_true(Tag:has(es[i]))
        assert.is_true(Tag:has(fs[i]))
        assert.is_false(P:has(fs[i]))
        assert.equals(0, select("#", Tag:get(es[i])))
      end
      assert.equals(4, Tag:count())
    end)

    it("takes component objects and names as keys, in one spec", function()
      local es = w:spawn(2, { [P] = { x = 1 }, Velocity = { dx = 2 }, [H] = { hp = 3 } })
      for _, e in ipairs(es) do
        assert.same({ 1, 0 }, { P:get(e) })
        assert.same({ 2, 0 }, { V:get(e) })
        assert.equals(3, H:field(e, "hp"))
        assert.is_false(Tag:has(e))
      end
    end)

    it("hands out new live entities, none of them existing before", function()
      local old = w:create(3)
      local es = w:spawn(5, { Position = true })
      local seen = {}
      for _, e in ipairs(old) do seen[e] = true end
      for _, e in ipairs(es) do
        assert.is_nil(seen[e])
        assert.is_true(w:alive(e))
        seen[e] = true
      end
      assert.equals(8, w:count())
      assert.equals(5, P:count())
    end)
  end)

  describe("agrees with C:add", function()
    it("accepts and refuses each value as C:add does, and stores the same", function()
      local probe = w:create()
      local lud = debug.upvalueid(function() return probe end, 1)
      local candidates = {
        0, -1, 3.0, 1.5, -0.0, 127, 128, -129, 255, 256, 32767, 32768, 65535, 65536,
        2147483647, 2147483648, -2147483648, -2147483649, 4294967295, 4294967296,
        math.maxinteger, math.mininteger, 2 ^ 53, 2 ^ 63, 0 / 0, math.huge, -math.huge,
        1e300, 0.1, "1", "x", true, false, ecs.null, probe, io.stdout, lud,
      }
      local valid = { bool = false, entity = ecs.null }
      for _, t in ipairs(TYPES) do
        if t ~= "lua" then
          local f = "x_" .. t
          local ok0 = valid[t] == nil and 0 or valid[t]
          for _, v in ipairs(candidates) do
            local what = ("%s = %s (%s)"):format(f, tostring(v), math.type(v) or type(v))
            local ok_add, err_add = pcall(All.add, All, probe, { [f] = v })
            local before = state(w)
            local ok_one, one = pcall(w.spawn, w, 1, { All = { [f] = v } })
            local ok_arr, arr = pcall(w.spawn, w, 3, { All = { [f] = { ok0, ok0, v } } })
            assert.equals(ok_add, ok_one, what .. ": one value")
            assert.equals(ok_add, ok_arr, what .. ": array")
            if ok_add then
              local want = All:field(probe, f)
              for _, got in ipairs({ All:field(one[1], f), All:field(arr[3], f) }) do
                if want ~= want then
                  assert.is_true(got ~= got, what)
                else
                  assert.equals(want, got, what)
                  assert.equals(math.type(want), math.type(got), what)
                end
              end
              assert.equals(ok0, All:field(arr[1], f), what)
            else
              assert.same(before, state(w), what)
              err_add = text(err_add)
              one, arr = text(one), text(arr)
              assert.matches(f, one, 1, true)
              assert.matches("All." .. f .. "[3]", arr, 1, true)
              local expects = err_add:match("expects an? (%a+)")
              if err_add:find("out of range", 1, true) then
                assert.matches("range", one, 1, true)
                assert.matches("range", arr, 1, true)
              elseif expects then
                assert.matches(expects, one, 1, true)
                assert.matches(expects, arr, 1, true)
              end
            end
          end
        end
      end
    end)

    it("stores what a loop of create + C:add stores, for random specs", function()
      local twin, tc = build()
      local s = 88172645463325252
      local function rand(a, b) -- xorshift64: the same sequence on every platform
        s = s ~ (s << 13); s = s ~ (s >> 7); s = s ~ (s << 17)
        return a + (s >> 1) % (b - a + 1)
      end
      local targets, ttargets = w:create(4), twin:create(4)
      targets[5], ttargets[5] = ecs.null, ecs.null
      local refs = { {}, "s", 42, true, function() end }
      local function value(t, i) -- plain data; entities as indices into targets
        if t == "f32" or t == "f64" then return rand(-1000, 1000) / 8
        elseif t == "i8" then return rand(-128, 127)
        elseif t == "i16" then return rand(-32768, 32767)
        elseif t == "i32" then return rand(-2147483647, 2147483647) - rand(0, 1)
        elseif t == "i64" then return ({ math.mininteger, math.maxinteger, rand(-9, 9) * 1e6 // 1 })[rand(1, 3)]
        elseif t == "u8" then return rand(0, 255) + 0.0 * (i % 2) -- floats with no fraction too
        elseif t == "u16" then return rand(0, 65535)
        elseif t == "u32" then return rand(0, 4294967295 // 2) * 2 + rand(0, 1)
        elseif t == "bool" then return rand(0, 1) == 1
        elseif t == "entity" then return { entity = rand(1, 5) }
        else return refs[rand(1, #refs)] end
      end
      local function resolve(v, list)
        if type(v) == "table" and v.entity then return list[v.entity] end
        return v
      end
      for trial = 1, 40 do
        local n = rand(0, 6)
        -- per entity the field values the model adds, and the spec spawn takes
        local model, spec = {}, {}
        for i = 1, n do model[i] = {} end
        local fields = {}
        for k = 1, #TYPES do
          local form = rand(0, 2) -- 0: not given, 1: one value, 2: an array (lua: one value)
          if form == 1 or (form == 2 and TYPES[k] == "lua") then
            local v = value(TYPES[k], trial)
            fields[k] = v
            for i = 1, n do model[i][k] = v end
          elseif form == 2 then
            local arr = {}
            for i = 1, n do arr[i] = value(TYPES[k], i); model[i][k] = arr[i] end
            fields[k] = { array = arr }
          end
        end
        local positional = rand(0, 1) == 1
        local function shape(list)
          local out, last = {}, 0
          for k = 1, #TYPES do
            local v = fields[k]
            if v ~= nil then
              if type(v) == "table" and v.array then
                local a = {}
                for i = 1, n do a[i] = resolve(v.array[i], list) end
                v = a
              else
                v = resolve(v, list)
              end
              if positional then out[k] = v; last = k else out["x_" .. TYPES[k]] = v end
            end
          end
          if positional then
            for k = 1, last do
              if out[k] == nil then -- a hole: give the zero explicitly
                local t = TYPES[k]
                if t == "bool" then out[k] = false
                elseif t == "entity" then out[k] = ecs.null
                else out[k] = 0 end -- lua is the last field: never a hole
                for i = 1, n do if model[i][k] == nil then model[i][k] = out[k] end end
              end
            end
          end
          return out
        end
        local with_tag, with_p = rand(0, 1) == 1, rand(0, 1) == 1
        spec.All = shape(targets)
        if with_tag then spec.Enemy = true end
        if with_p then spec[P] = { y = trial } end
        local es = w:spawn(n, spec)
        local ms = twin:create(n)
        for i = 1, n do
          local named = {}
          for k = 1, #TYPES do named["x_" .. TYPES[k]] = resolve(model[i][k], ttargets) end
          tc.All:add(ms[i], named)
          if with_tag then tc.Tag:add(ms[i]) end
          if with_p then tc.P:add(ms[i], 0, trial) end
        end
        assert.equals(n, #es)
        for i = 1, n do
          local a, b = values(All, es[i]), values(tc.All, ms[i])
          for k = 1, #TYPES do
            local va, vb = a[k], b[k]
            if TYPES[k] == "entity" then va, vb = ecs.id(va), ecs.id(vb) end
            assert.equals(vb, va, ("trial %d entity %d field %s"):format(trial, i, TYPES[k]))
            assert.equals(math.type(vb), math.type(va))
          end
          assert.equals(tc.Tag:has(ms[i]), Tag:has(es[i]))
          assert.same({ tc.P:get(ms[i]) }, { P:get(es[i]) })
        end
        assert.equals(twin:count(), w:count())
      end
      release(twin)
    end)
  end)

  describe("observers", function()
    it("run after every value is written, entity by entity, components in registration order", function()
      local log = {}
      local function totals()
        local sx, sdx, shp = 0, 0, 0
        for e in P:entities() do sx = sx + P:field(e, "x") end
        for e in V:entities() do sdx = sdx + V:field(e, "dx") end
        for e in H:entities() do shp = shp + H:field(e, "hp") end
        return sx, sdx, shp
      end
      -- observers made in the reverse order: what counts is the components' order
      local function observe(C, tag)
        C:on_add(function(e)
          local x = P:field(e, "x")
          assert.same({ x, 10 * x, 100 * x }, { x, V:field(e, "dx"), H:field(e, "hp") })
          assert.same({ 6, 60, 600 }, { totals() })
          log[#log + 1] = ("%s%d"):format(tag, x)
        end)
        C:on_set(function() log[#log + 1] = "set" end)
      end
      observe(H, "H"); observe(V, "V"); observe(P, "P")
      local es = w:spawn(3, { Health = { hp = { 100, 200, 300 } },
                              Velocity = { dx = { 10, 20, 30 } },
                              Position = { x = { 1, 2, 3 } } })
      -- each on_add is followed by that component's on_set (the first write)
      assert.same({ "P1", "set", "V1", "set", "H1", "set", "P2", "set", "V2", "set", "H2", "set",
                    "P3", "set", "V3", "set", "H3", "set" }, log)
      assert.equals(3, #es)
      assert.is_true(w:check())
    end)

    it("may destroy a later spawned entity", function()
      local q = w:query(P, V)
      local victim
      P:on_add(function(e)
        if victim then return end
        for o in P:entities() do
          if o ~= e and (not victim or ecs.index(o) > ecs.index(victim)) then victim = o end
        end
        w:destroy(victim)
      end)
      local es = w:spawn(3, { Position = { x = 1 }, Velocity = true })
      assert.equals(3, #es)
      assert.equals(es[3], victim)
      assert.is_false(w:alive(es[3]))
      assert.is_true(w:alive(es[1]) and w:alive(es[2]))
      assert.equals(2, w:count())
      assert.equals(2, P:count())
      assert.equals(2, q:count())
      assert.is_true(w:check())
    end)

    it("may add components", function()
      local q = w:query(P, V, H)
      local seen = 0
      P:on_add(function(e) H:add(e, 7) end)
      H:on_add(function(e)
        assert.is_true(V:has(e)) -- the entity is complete before any observer runs
        seen = seen + 1
      end)
      local es = w:spawn(4, { Position = { x = 1 }, Velocity = { dx = 2 } })
      assert.equals(4, seen)
      assert.equals(4, q:count())
      for _, e in ipairs(es) do assert.equals(7, H:field(e, "hp")) end
      assert.is_true(w:check())
    end)

    it("an error propagates unchanged; the spawned entities stay", function()
      local q = w:query(P, V)
      for _, boom in ipairs({ { "a table error" }, "plain" }) do
        local calls = 0
        local o = P:on_add(function()
          calls = calls + 1
          if calls == 2 then error(boom, 0) end
        end)
        local before = w:count()
        local err = err_of(w.spawn, w, 3, { Position = { x = { 1, 2, 3 } }, Velocity = { dx = 5 } })
        if type(boom) == "string" then -- a string names the observer
          assert.equals("on_add 'Position': " .. boom, err:match("^[^\n]*"))
        else
          assert.is_true(rawequal(boom, err))
        end
        o:close()
        assert.equals(before + 3, w:count())
        assert.equals(w:count(), q:count())
        local sx = 0
        for e in q:entities() do
          sx = sx + P:field(e, "x")
          assert.equals(5, V:field(e, "dx"))
        end
        assert.equals(6 * w:count() / 3, sx)
        assert.is_true(w:check())
      end
    end)
  end)

  describe("errors", function()
    local twin, q
    before_each(function()
      twin = build()
      q = w:query(P, V)
      q:count()
    end)
    after_each(function()
      same_next(w, twin)
      release(twin)
    end)

    -- a method call, so that argument errors count as spawn's own
    local function fails(...)
      return text(refused(w, { q }, function(...) return w:spawn(...) end, ...))
    end

    it("refuses an n that is not a non-negative integer", function()
      for _, n in ipairs({ -1, 1.5, 0 / 0, {}, true }) do
        assert.matches("bad argument #1 to 'spawn'", fails(n, { Position = true }), 1, true)
      end
      assert.matches("bad argument #1 to 'spawn'", fails(nil, { Position = true }), 1, true)
    end)

    it("refuses a spec that is neither a table nor a prefab", function()
      fails(2, nil)
      fails(2, 5)
      fails(2, "Position")
      fails(2, P)
    end)

    -- { Position = {1}, [P] = {2} } named one component twice, and which
    -- value won depended on the table's order
    it("refuses a component given twice, by name and by object", function()
      assert.matches("world:spawn: component 'Position' given twice (by name and as the component)",
        fails(2, { Position = { x = 1 }, [P] = { x = 2 } }), 1, true)
      assert.matches("world:spawn: component 'Enemy' given twice",
        fails(1, { Enemy = true, [Tag] = true, Velocity = true }), 1, true)
    end)

    it("refuses unknown names, other worlds' components and other keys", function()
      assert.matches("world:spawn: unknown component 'Nope'",
        fails(2, { Position = true, Nope = true }), 1, true)
      local other = ecs.world()
      local OP = other:component("Position", { "x:f64", "y:f64" })
      local e = fails(2, { Velocity = true, [OP] = { x = 1 } })
      assert.matches("world:spawn", e, 1, true)
      assert.matches("another world", e, 1, true)
      release(other)
      fails(2, { true })
      fails(2, { [{}] = true })
      fails(2, { [true] = true })
      fails(2, { [io.stdout] = true })
      local ent = w:create()
      twin:create() -- both worlds' ids in step
      fails(2, { [ent] = true })
    end)

    it("refuses a component value that is neither true nor a table, naming the component", function()
      for _, v in ipairs({ 5, "x" }) do
        assert.matches("Position", fails(2, { Velocity = true, Position = v }), 1, true)
      end
    end)

    it("refuses unknown field names and too many positional values", function()
      assert.matches("unknown field 'z'", fails(2, { Position = { x = 1, z = 2 } }), 1, true)
      assert.matches("unknown field 'z'", fails(2, { Enemy = { z = 1 } }), 1, true)
      fails(2, { Position = { 1, 2, 3 } })
      fails(2, { Enemy = { 1 } })
    end)

    it("refuses an array of the wrong length", function()
      for _, xs in ipairs({ { 1, 2, 3, 4 }, { 1, 2, 3, 4, 5, 6 }, {} }) do
        local e = fails(5, { Velocity = true, Position = { x = xs } })
        assert.matches("Position.x", e, 1, true)
        assert.matches("expected 5 values", e, 1, true)
      end
    end)

    it("refuses a wrong element, naming field, index and type", function()
      local t = w:create()
      twin:create()
      local cases = {
        { { Position = { x = { 1, 2, "3", 4, 5 } } }, "Position.x[3]", "number" },
        { { Position = { y = { 1, 2, 3, 4, true } } }, "Position.y[5]", "number" },
        { { Health = { hp = { 1, 1.5, 3, 4, 5 } } }, "Health.hp[2]", "integer" },
        { { All = { x_bool = { true, false, 1, true, true } } }, "All.x_bool[3]", "boolean" },
        { { All = { x_entity = { t, t, t, 4, t } } }, "All.x_entity[4]", "entity" },
      }
      for _, case in ipairs(cases) do
        local e = fails(5, case[1])
        assert.matches(case[2], e, 1, true)
        assert.matches(case[3], e, 1, true)
      end
    end)

    it("checks every value before anything changes, observers included", function()
      local calls = 0
      P:on_add(function() calls = calls + 1 end)
      V:on_add(function() calls = calls + 1 end)
      local big = {}
      for i = 1, 1000 do big[i] = i end
      big[1000] = 1e10 -- the last element of the last component is bad
      fails(1000, { Position = { x = big }, Velocity = { dx = big }, Health = { hp = big } })
      fails(1000, { Position = { x = big }, Velocity = { dx = big }, Nope = true })
      fails(3, { Position = { 1, 2 }, Velocity = { 1, 2 }, All = { x_u8 = { 1, 2, 256 } } })
      assert.equals(0, calls)
    end)

    it("refuses overrides without a prefab", function()
      fails(2, { Position = true }, { Position = { x = 1 } })
    end)

    it("raises on a closed world", function()
      local other = build()
      other:close()
      assert.matches("attempt to use a closed world",
        text(err_of(other.spawn, other, 1, { Position = true })), 1, true)
    end)
  end)

  it("spawns 100k entities into queries made before", function()
    local q, qp = w:query(P, V), w:query(P)
    local pre = w:create()
    P:add(pre, 0, 0)
    assert.equals(0, q:count())
    assert.equals(1, qp:count())
    local n = 100000
    local xs = {}
    for i = 1, n do xs[i] = i end
    local es = w:spawn(n, { Position = { x = xs, y = 2 }, Velocity = { dx = 1 } })
    assert.equals(n, #es)
    assert.equals(n, q:count())
    assert.equals(n + 1, qp:count())
    q:apply("Position.x += Velocity.dx")
    assert.same({ 2, 2 }, { P:get(es[1]) })
    assert.same({ n + 1, 2 }, { P:get(es[n]) })
    assert.equals(0, P:field(pre, "x"))
    w:destroy(es[n // 2])
    assert.equals(n - 1, q:count())
    assert.is_true(w:check())
  end)
end)

describe("world:prefab", function()
  local w, c, P, V, H, Tag
  before_each(function()
    w, c = build()
    P, V, H, Tag = c.P, c.V, c.H, c.Tag
  end)
  after_each(function() release(w) end)

  it("is a userdata that spawns again and again", function()
    local ref = {}
    local pf = w:prefab({ [P] = { x = 1, y = 2 }, Velocity = { 3 }, Enemy = true, Brain = { script = ref } })
    assert.equals("userdata", type(pf))
    assert.matches("ecs.prefab", tostring(pf), 1, true)
    assert.same({}, w:spawn(0, pf))
    local a, b = w:spawn(2, pf), w:spawn(3, pf)
    assert.equals(5, w:count())
    for _, list in ipairs({ a, b }) do
      for _, e in ipairs(list) do
        assert.same({ 1, 2 }, { P:get(e) })
        assert.same({ 3, 0 }, { V:get(e) })
        assert.is_true(Tag:has(e))
        assert.is_true(rawequal(ref, c.Brain:field(e, "script")))
        assert.is_false(H:has(e))
      end
    end
  end)

  it("fires on_add as a plain spec does", function()
    local log = {}
    V:on_add(function(e) log[#log + 1] = "V" .. V:field(e, "dx") end)
    P:on_add(function(e) log[#log + 1] = "P" .. V:field(e, "dx") end)
    w:spawn(2, w:prefab({ Velocity = { dx = 4 }, Position = true }),
               { Velocity = { dx = { 5, 6 } } })
    assert.same({ "P5.0", "V5.0", "P6.0", "V6.0" }, log)
  end)

  it("takes overrides: fields given replace the prefab's, others stay, new components are added", function()
    local pf = w:prefab({ Position = { x = 1, y = 2 }, [V] = { dx = 3, dy = 4 } })
    local es = w:spawn(3, pf, { [P] = { y = { 10, 20, 30 } }, Velocity = { dx = 9 },
                                Health = { hp = 5 }, Enemy = true })
    for i, e in ipairs(es) do
      assert.same({ 1, 10 * i }, { P:get(e) })
      assert.same({ 9, 4 }, { V:get(e) })
      assert.equals(5, H:field(e, "hp"))
      assert.is_true(Tag:has(e))
    end
    -- the prefab itself is unchanged by the overrides
    local e = w:spawn(1, pf)[1]
    assert.same({ 1, 2 }, { P:get(e) })
    assert.same({ 3, 4 }, { V:get(e) })
    assert.is_false(H:has(e) or Tag:has(e))
  end)

  it("copies the spec: changing the table afterwards changes nothing", function()
    local pos = { x = 1, y = 2 }
    local spec = { Position = pos, Velocity = { dx = 3 } }
    local pf = w:prefab(spec)
    pos.x = 99
    spec.Velocity = nil
    spec.Health = { hp = 1 }
    local e = w:spawn(1, pf)[1]
    assert.same({ 1, 2 }, { P:get(e) })
    assert.same({ 3, 0 }, { V:get(e) })
    assert.is_false(H:has(e))
  end)

  describe("errors", function()
    local twin
    before_each(function() twin = build() end)
    after_each(function()
      same_next(w, twin)
      release(twin)
    end)

    it("refuses per-entity arrays (a lua field's table is a value)", function()
      local e = text(refused(w, {}, w.prefab, w, { Position = { x = { 1, 2 } } }))
      assert.matches("world:prefab", e, 1, true)
      assert.matches("arrays", e, 1, true)
      local list = { 1, 2 }
      local pf = w:prefab({ Brain = { script = list } })
      local es = w:spawn(2, pf)
      assert.is_true(rawequal(list, c.Brain:field(es[2], "script")))
      twin:create(2)
    end)

    it("refuses a component given twice, in the spec or in the overrides", function()
      assert.matches("world:prefab: component 'Position' given twice",
        text(refused(w, {}, w.prefab, w, { Position = { 1 }, [P] = { 2 } })), 1, true)
      local pf = w:prefab({ Position = { x = 1 } })
      assert.matches("world:spawn: component 'Velocity' given twice",
        text(refused(w, {}, w.spawn, w, 2, pf, { Velocity = { 1 }, [V] = { 2 } })), 1, true)
      -- an override of the prefab's own component is what overrides are for
      local e = w:spawn(1, pf, { Position = { y = 5 } })[1]
      twin:spawn(1, { Position = true })
      assert.same({ 1, 5 }, { P:get(e) })
    end)

    it("checks the spec when made, as spawn does", function()
      assert.matches("unknown component 'Nope'", text(refused(w, {}, w.prefab, w, { Nope = true })), 1, true)
      assert.matches("unknown field 'z'",
        text(refused(w, {}, w.prefab, w, { Position = { z = 1 } })), 1, true)
      assert.matches("Position", text(refused(w, {}, w.prefab, w, { Position = 5 })), 1, true)
      refused(w, {}, w.prefab, w, { Health = { hp = 1.5 } })
      refused(w, {}, w.prefab, w, { Position = { 1, 2, 3 } })
      refused(w, {}, w.prefab, w, { [1] = true })
      refused(w, {}, w.prefab, w, 5)
      local other = ecs.world()
      local OP = other:component("Position", { "x:f64", "y:f64" })
      assert.matches("another world", text(refused(w, {}, w.prefab, w, { [OP] = true })), 1, true)
      release(other)
    end)

    it("refuses bad overrides, creating nothing", function()
      local pf = w:prefab({ Position = { x = 1 } })
      assert.matches("unknown field 'z'", text(refused(w, {}, w.spawn, w, 2, pf, { Position = { z = 1 } })), 1, true)
      assert.matches("unknown component 'Nope'", text(refused(w, {}, w.spawn, w, 2, pf, { Nope = true })), 1, true)
      local e = text(refused(w, {}, w.spawn, w, 3, pf, { Position = { y = { 1, 2 } } }))
      assert.matches("Position.y", e, 1, true)
      assert.matches("expected 3 values", e, 1, true)
      assert.matches("Position.x[2]", text(refused(w, {}, w.spawn, w, 3, pf,
        { Position = { x = { 1, "2", 3 } } })), 1, true)
      refused(w, {}, w.spawn, w, 2, pf, 5)
    end)

    it("refuses a prefab of another world", function()
      local pf = twin:prefab({ Position = { x = 1 } })
      refused(w, {}, w.spawn, w, 2, pf)
      local mine = w:prefab({ Position = true })
      refused(twin, {}, twin.spawn, twin, 1, mine)
    end)
  end)
end)

describe("world:clone", function()
  local w, c, P, V, Tag, All
  before_each(function()
    w, c = build()
    P, V, Tag, All = c.P, c.V, c.Tag, c.All
  end)
  after_each(function() release(w) end)

  it("copies every generic component, every field type", function()
    local target = w:create()
    local ref = { "shared" }
    local e = w:create()
    All:add(e, { x_f32 = 0.5, x_f64 = 0.1, x_i8 = -128, x_i16 = 32767, x_i32 = -2147483648,
                 x_i64 = math.mininteger, x_u8 = 255, x_u16 = 65535, x_u32 = 4294967295,
                 x_bool = true, x_entity = e, x_lua = ref })
    P:add(e, 1, 2)
    Tag:add(e)
    local copy = w:clone(e)
    assert.is_true(w:alive(copy))
    assert.are_not.equal(e, copy)
    assert.equals(3, w:count())
    assert.same(values(All, e), values(All, copy))
    assert.equals(e, All:field(copy, "x_entity")) -- copied as is, not redirected to the copy
    assert.is_true(rawequal(ref, All:field(copy, "x_lua")))
    assert.same({ 1, 2 }, { P:get(copy) })
    assert.is_true(Tag:has(copy))
    assert.is_false(V:has(copy) or c.H:has(copy) or target == copy)
    -- an independent copy
    P:set(e, 5, 6)
    All:set_field(e, "x_i8", 1)
    assert.same({ 1, 2 }, { P:get(copy) })
    assert.equals(-128, All:field(copy, "x_i8"))
  end)

  it("copies a spawned entity, and an entity with nothing", function()
    local e = w:spawn(1, { Position = { 3, 4 }, Velocity = { dx = 1 } })[1]
    local copy = w:clone(e)
    assert.same({ 3, 4 }, { P:get(copy) })
    assert.same({ 1, 0 }, { V:get(copy) })
    P:remove(e)
    assert.is_false(P:has(w:clone(e)))
    local bare = w:clone(w:create())
    assert.is_true(w:alive(bare))
    for _, C in ipairs(w:components()) do assert.is_false(C:has(bare)) end
  end)

  it("copies neither the transform nor the name", function()
    local T, N = w.transform, w.names
    local parent, e = w:create(), w:create()
    T:add(parent)
    T:add(e, { position = { 1, 2, 3 } })
    T:set_parent(e, parent)
    N:set(e, "hero")
    P:add(e, 1, 1)
    local copy = w:clone(e)
    assert.is_true(P:has(copy))
    assert.is_false(T:has(copy))
    assert.is_nil(N:get(copy))
    assert.equals(e, N:find("hero"))
    local kids = {}
    for k in T:children(parent) do kids[#kids + 1] = k end
    assert.same({ e }, kids)
  end)

  it("fires on_add for the copy, components in registration order, values written", function()
    local e = w:create()
    P:add(e, 1, 2); V:add(e, 3, 4); Tag:add(e)
    local log = {}
    Tag:on_add(function(x) log[#log + 1] = "Tag " .. V:field(x, "dx") end)
    V:on_add(function(x) log[#log + 1] = "V " .. P:field(x, "y") end)
    P:on_add(function(x)
      assert.is_true(Tag:has(x))
      log[#log + 1] = "P " .. V:field(x, "dy")
    end)
    w:clone(e)
    assert.same({ "P 4.0", "V 2.0", "Tag 3.0" }, log)
  end)

  it("refuses a dead or invalid entity, creating nothing", function()
    local twin = build()
    local e, te = w:create(), twin:create()
    P:add(e, 1, 1)
    w:destroy(e); twin:destroy(te)
    for _, bad in ipairs({ e, ecs.null, ecs.entity(12345) }) do
      local err = text(refused(w, {}, w.clone, w, bad))
      assert.matches("world:clone", err, 1, true)
      assert.matches("not alive", err, 1, true)
    end
    refused(w, {}, w.clone, w, "x")
    same_next(w, twin)
    release(twin)
    local other = build()
    other:close()
    assert.matches("attempt to use a closed world", text(err_of(other.clone, other, e)), 1, true)
  end)
end)
