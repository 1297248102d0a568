--[[
component_diff_spec.lua -- randomized differential test: 100,000 random
steps of create / destroy / add / set / set_field / remove / gc / update /
recycle (destroy an entity, churn until its index is reused) on
a world with three managers, mirrored in the pure-Lua model of
spec/support/component_model.lua. After every step every observable of
every tracked handle (live, dead and recycled-index ones) is compared:
has and get (all values) -- and field for the entity the step touched --
plus each manager's count; every 500 steps
the world's consistency checker runs. The seed is fixed, so a failure
reproduces; set ECS_DIFF_SEED to explore other sequences.
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")
local Model = require("spec.support.component_model")

local STEPS = 100000

-- busted's global assert is luassert's (slow in a hot loop): a plain one
local function check(cond, msg)
  if not cond then error(msg or "check failed", 2) end
  return cond
end
local MAX_TRACKED = 16

describe("components against a model", function()
  it("agree after every one of " .. STEPS .. " random steps", function()
    local seed = tonumber(os.getenv("ECS_DIFF_SEED") or "") or 20261122
    math.randomseed(seed)
    local rnd = math.random
    local w = ecs.world()
    local model = Model.new()
    local shared = { {}, {}, "str", 42.5, print }  -- values for the lua field
    local schemas = {
      A = { "x:i32", "y:f64", "s:lua", "b:bool" },
      B = { "t:entity", "k:u8" },
      T = nil,
    }
    local names = { "A", "B", "T" }
    local zero = { A = { 0, 0.0, nil, false }, B = { ecs.null, 0 }, T = {} }
    local nf = { A = 4, B = 2, T = 0 }
    local field_names = { A = { "x", "y", "s", "b" }, B = { "t", "k" }, T = {} }
    local mgr = {}
    for _, n in ipairs(names) do
      mgr[n] = w:component(n, schemas[n])
      model:component(n, nf[n])
    end

    local tracked = {}      -- handles, live or dead
    local function track(e)
      tracked[#tracked + 1] = e
      if #tracked > MAX_TRACKED then
        for i = 1, #tracked do   -- forget the oldest dead handle, else the oldest
          if not model:is_alive(ecs.id(tracked[i])) then
            table.remove(tracked, i)
            return
          end
        end
        -- all tracked handles alive: destroy the oldest, so the world
        -- stays small and every live entity stays observed
        local old = table.remove(tracked, 1)
        check(w:destroy(old) == model:destroy(ecs.id(old)))
      end
    end
    local function pick()
      if #tracked == 0 or rnd(20) == 1 then return ecs.null end
      return tracked[rnd(#tracked)]
    end

    local function random_value(name, k)
      if name == "A" then
        if k == 1 then return rnd(-2147483648, 2147483647)
        elseif k == 2 then return rnd() * 1e6 - 5e5
        elseif k == 3 then return rnd(6) == 6 and nil or shared[rnd(#shared)]
        else return rnd(2) == 1 end
      else
        if k == 1 then return #tracked > 0 and tracked[rnd(#tracked)] or ecs.null end
        return rnd(0, 255)
      end
    end

    -- arguments for add/set, and the values the model expects
    local function random_args(name)
      local n = nf[name]
      local expect = { compat.unpack(zero[name], 1, n) }
      if n > 0 and name ~= "A" or (name == "A" and rnd(2) == 1) then
        local args = {}
        local count = rnd(0, n)
        for k = 1, count do
          args[k] = random_value(name, k)
          if args[k] ~= nil then expect[k] = args[k] end
        end
        return args, count, expect
      elseif n > 0 then  -- by name
        local t = {}
        for k = 1, n do
          if rnd(2) == 1 then
            t[field_names[name][k]] = random_value(name, k)
            if t[field_names[name][k]] ~= nil then expect[k] = t[field_names[name][k]] end
          end
        end
        return { t }, 1, expect
      end
      return {}, 0, expect
    end

    local function check_entity(e, step, fields)
      local id = ecs.id(e)
      for _, n in ipairs(names) do
        local m = mgr[n]
        local want = model:get(n, id)
        local has = m:has(e)
        if has ~= (want ~= nil) then
          error(("step %d: %s:has(%s) = %s"):format(step, n, ecs.tostring(e), tostring(has)))
        end
        local got = compat.pack(m:get(e))
        if want == nil then
          check(got.n == 0, "get of absent")
        else
          if got.n ~= nf[n] then error(("step %d: %s:get count %d"):format(step, n, got.n)) end
          for k = 1, nf[n] do
            if got[k] ~= want[k] then
              error(("step %d: %s:get(%s)[%d] = %s, model %s"):format(step, n,
                ecs.tostring(e), k, tostring(got[k]), tostring(want[k])))
            end
          end
          if fields and nf[n] > 0 then
            local k = rnd(nf[n])
            check(m:field(e, field_names[n][k]) == want[k], "field")
          end
        end
      end
    end

    local ops, recycled, reused = 0, 0, 0  -- reused: adds that took a dead record
    for step = 1, STEPS do
      local r = rnd(100)
      local touched
      local name = names[rnd(3)]
      local m = mgr[name]
      if r <= 12 then                                   -- create
        local e = w:create()
        model:create(ecs.id(e))
        track(e)
      elseif r <= 20 then                               -- destroy
        local e = pick()
        touched = e
        check(w:destroy(e) == model:destroy(ecs.id(e)), "destroy")
      elseif r <= 50 then                               -- add
        local e = pick()
        touched = e
        local args, count, expect = random_args(name)
        local had, size0 = m:has(e), m:size()
        local ok, err = pcall(m.add, m, e, compat.unpack(args, 1, count))
        if ok and not had and m:size() == size0 then reused = reused + 1 end
        local mok, merr = model:add(name, ecs.id(e), expect)
        if ok ~= mok then
          error(("step %d: add ok %s, model %s (%s)"):format(step, tostring(ok), tostring(mok),
            tostring(err)))
        end
        if not ok and not err:find(merr, 1, true) then error(err) end
      elseif r <= 60 then                               -- set
        local e = pick()
        touched = e
        local args, count, expect = random_args(name)
        local ok, err = pcall(m.set, m, e, compat.unpack(args, 1, count))
        local mok, merr = model:set(name, ecs.id(e), expect)
        if ok ~= mok then error(("step %d: set ok %s, model %s"):format(step, tostring(ok), tostring(mok))) end
        if not ok and not err:find(merr, 1, true) then error(err) end
      elseif r <= 70 and nf[name] > 0 then              -- set_field
        local e = pick()
        touched = e
        local k = rnd(nf[name])
        local v = random_value(name, k)
        local ok, err = pcall(m.set_field, m, e, field_names[name][k], v)
        if v == nil then v = zero[name][k] end
        local mok, merr = model:set_field(name, ecs.id(e), k, v)
        if ok ~= mok then error(("step %d: set_field"):format(step)) end
        if not ok and not err:find(merr, 1, true) then error(err) end
      elseif r <= 85 then                               -- remove
        local e = pick()
        touched = e
        check(m:remove(e) == model:remove(name, ecs.id(e)), "remove")
      elseif r <= 95 then                               -- gc
        local b = rnd(0, 8)
        if b == 8 then m:gc() else m:gc(b) end
      elseif r == 96 then                               -- recycle an index
        -- destroy a tracked entity and churn until its index comes back, so
        -- that the new entity meets the dead records of the old one
        local old = pick()
        if old ~= ecs.null and model:is_alive(ecs.id(old)) then
          check(w:destroy(old) == model:destroy(ecs.id(old)))
          local x
          repeat
            x = w:create()
            if ecs.index(x) ~= ecs.index(old) then w:destroy(x) end
          until ecs.index(x) == ecs.index(old)
          model:create(ecs.id(x))
          track(x)
          touched = x
          recycled = recycled + 1
        end
      else
        w:update(0.016)
      end
      ops = ops + 1
      for i = 1, #tracked do check_entity(tracked[i], step, false) end
      if touched then check_entity(touched, step, true) end
      for _, n in ipairs(names) do
        if mgr[n]:count() ~= model:count(n) then
          error(("step %d: %s:count() = %d, model %d"):format(step, n, mgr[n]:count(), model:count(n)))
        end
        check(mgr[n]:size() >= mgr[n]:count())
      end
      do -- the consistency checker after every step
        local good, bad = w:check()
        check(good, bad)
      end
    end
    assert.equals(STEPS, ops)
    assert.is_true(recycled > 100)
    assert.is_true(reused > 10)
    for _, n in ipairs(names) do mgr[n]:gc() end
    for _, n in ipairs(names) do assert.equals(model:count(n), mgr[n]:size()) end
    w:close()
  end)
end)
