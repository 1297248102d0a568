--[[
pointmass_spec.lua -- the point-mass C plugin (plugins/pointmass.c)
driven from Lua: creation per world, add/read/write, simulate() in C, dead
entities, gc, closed worlds and junk arguments.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")
local pointmass = require("ecs.pointmass")
local junk = require("spec.support.junk")

local function near(a, b) return math.abs(a - b) < 1e-4 end

describe("ecs.pointmass", function()
  local w, PM
  before_each(function()
    w = ecs.world()
    PM = pointmass.new(w)
  end)
  after_each(function() release(w) end)

  it("is one manager per world", function()
    assert.equals(PM, pointmass.new(w))
    local w2 = ecs.world()
    assert.are_not.equal(PM, pointmass.new(w2))
    w2:close()
    assert.equals(pointmass, require("ecs.pointmass"))
  end)

  it("adds, reads and writes point masses", function()
    local e = w:create()
    assert.is_false(PM:has(e))
    PM:add(e, 2, 1, 2, 3, 4, 5, 6)
    assert.is_true(PM:has(e))
    assert.equals(2, PM:mass(e))
    assert.same({ 1, 2, 3 }, { PM:position(e) })
    assert.same({ 4, 5, 6 }, { PM:velocity(e) })
    assert.same({ 0, 0, 0 }, { PM:acceleration(e) })
    PM:set_position(e, 7, 8, 9)
    PM:set_velocity(e, 0, 0, 0)
    PM:set_acceleration(e, 0, -10, 0)
    assert.same({ 7, 8, 9 }, { PM:position(e) })
    assert.same({ 0, -10, 0 }, { PM:acceleration(e) })
    assert.equals(1, PM:count())
    PM:add(e, 1) -- overwrites
    assert.same({ 0, 0, 0 }, { PM:position(e) })
    assert.equals(1, PM:count())
  end)

  it("simulates every instance in one C call", function()
    local es = w:create(100)
    for i, e in ipairs(es) do
      PM:add(e, 1, 0, 0, 0, i, 0, 0)
      PM:set_acceleration(e, 0, -10, 0)
    end
    for _ = 1, 10 do PM:simulate(0.1) end
    for i, e in ipairs(es) do
      local x, y = PM:position(e)
      local vx, vy = PM:velocity(e)
      assert.is_true(near(x, i), "x")          -- v constant along x
      assert.is_true(near(vy, -10), "vy")
      assert.is_true(near(y, -5.5), "y")       -- semi-implicit Euler: -0.1*10*(1+..+10)*0.1
      assert.is_true(near(vx, i))
    end
  end)

  it("copies positions into a world:component in one C call", function()
    local Position = w:component("Position", { "x:f32", "y:f64", "z:f32" })
    local Flat = w:component("Flat", { "x", "y" })
    local es = w:create(600)
    for i, e in ipairs(es) do
      PM:add(e, 1, i, -i, 2 * i)
      if i % 3 ~= 0 then Position:add(e) end
    end
    w:destroy(es[1])
    Flat:add(es[2])
    assert.equals(399, PM:copy_positions(Position))
    for i, e in ipairs(es) do
      if i % 3 ~= 0 and i ~= 1 then assert.same({ i, -i, 2 * i }, { Position:get(e) }) end
    end
    assert.equals(1, PM:copy_positions(Flat))
    assert.same({ 2, -2 }, { Flat:get(es[2]) })
    local Bad = w:component("Bad", { "x:i32", "y:f32" })
    assert.matches("fields x, y, z must be f32 or f64", err_of(function() PM:copy_positions(Bad) end), 1, true)
    local NoY = w:component("NoY", { "x" })
    assert.matches("component needs fields x and y", err_of(function() PM:copy_positions(NoY) end), 1, true)
    local w2 = ecs.world()
    local Other = w2:component("Position", { "x", "y" })
    assert.matches("component of another world", err_of(function() PM:copy_positions(Other) end), 1, true)
    w2:close()
    assert.matches("ecs.Component expected, got table", err_of(function() PM:copy_positions({}) end), 1, true)
  end)

  it("hides dead entities at once and reclaims them lazily", function()
    local es = w:create(20)
    for _, e in ipairs(es) do PM:add(e, 1) end
    for i = 1, 20, 2 do w:destroy(es[i]) end
    assert.equals(10, PM:count())
    assert.is_false(PM:has(es[1]))
    assert.equals(0, select("#", PM:position(es[1])))
    assert.is_false(PM:remove(es[1]))
    PM:simulate(1) -- dead records are updated harmlessly
    assert.equals(10, PM:gc())
    assert.equals(0, PM:gc())
    for i = 2, 20, 2 do assert.is_true(PM:has(es[i])) end
    assert.is_true(PM:remove(es[2]))
    assert.is_false(PM:has(es[2]))
    w:destroy(es)
    for _ = 1, 50 do w:update() end -- world:update runs the plugin's gc too
    assert.equals(0, PM:gc())
  end)

  -- The core's lazy-gc policy (records.h), shared with every manager: a
  -- budgeted scan that resumes where it stopped, so rare deaths anywhere
  -- are reached within n / (4 * budget + 64) + 1 calls.
  it("reaches rare dead records within one lap of budgeted calls", function()
    local es = w:create(1000)
    for _, e in ipairs(es) do PM:add(e, 1) end
    assert.equals(0, PM:gc(10)) -- the scan now stands past the first 104
    w:destroy({ es[100], es[700] })
    local got = 0
    for _ = 1, math.ceil(1000 / (4 * 10 + 64)) + 1 do got = got + PM:gc(10) end
    assert.equals(2, got)
    assert.equals(998, PM:count())
    assert.is_true(w:check())
  end)

  it("reports misuse with fixed messages", function()
    local e = w:create()
    assert.matches("pointmass:set_position: entity does not have the component",
      err_of(PM.set_position, PM, e, 1, 2, 3), 1, true)
    w:destroy(e)
    assert.matches("pointmass:add: entity is not alive", err_of(PM.add, PM, e, 1), 1, true)
    assert.matches("pointmass:set_velocity: entity is not alive",
      err_of(PM.set_velocity, PM, e, 1, 2, 3), 1, true)
    local f = w:create()
    assert.matches("mass must be positive", err_of(function() PM:add(f, 0) end), 1, true)
    assert.matches("not a finite float", err_of(function() PM:add(f, 1, 0 / 0) end), 1, true)
    assert.matches("not a finite float", err_of(function() PM:simulate(math.huge) end), 1, true)
    assert.matches("ecs.World expected, got no value", err_of(pointmass.new), 1, true)
    assert.matches("ecs.PointMass expected, got table", err_of(PM.count, {}), 1, true)
  end)

  it("refuses a closed world", function()
    local e = w:create()
    PM:add(e, 1)
    w:close()
    assert.matches("attempt to use a closed world", err_of(PM.simulate, PM, 1), 1, true)
    assert.matches("attempt to use a closed world", err_of(PM.has, PM, e), 1, true)
    assert.matches("attempt to use a closed world", err_of(pointmass.new, w), 1, true)
  end)

  it("survives junk in every position of every method", function()
    local e = w:create()
    PM:add(e, 1)
    local values, other = junk.values(w)
    for name, f in pairs(debug.getmetatable(PM).__methods) do
      for _, j in ipairs(values) do
        local v = j[2]
        for _, args in ipairs({ { v }, { PM, v }, { PM, e, v }, { PM, e, 1, v },
                                { PM, e, v, v, v, v } }) do
          local ok, err = pcall(f, (table.unpack or unpack)(args, 1, 6)) -- luacheck: ignore 113 (5.1)
          assert(ok or type(err) == "string", name .. " with " .. j[1])
        end
      end
    end
    other:close()
    assert.is_true(w:check())
  end)
end)
