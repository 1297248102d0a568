--[[
errors_spec.lua -- the argument sweep (RELIABILITY R18/R19) and the error
policy. Every function reachable from require("ecs") -- module functions and
the methods of every object a world hands out -- is called with every kind of
junk value in every position. Nothing may crash; each call returns values or
raises a string error; afterwards the world is consistent and still works.
New methods are covered automatically because they are found by walking the
metatables.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local sweep = require("spec.support.sweep")

-- the sweep itself is spec/support/sweep.lua; spec/surface_spec.lua checks
-- that it reaches every function and method
describe("argument sweep", function()
  it("module functions survive every junk value", function()
    local _, calls = sweep.module_functions()
    assert.is_true(calls > 100)
  end)

  it("every method of every object survives every junk value in every position", function()
    local _, calls = sweep.methods()
    assert.is_true(calls > 100)
  end)
end)

describe("error messages", function()
  local w
  before_each(function() w = ecs.world() end)
  after_each(function() w:close() end)

  it("name the argument and the expected type", function()
    local cases = {
      { function() return w:alive(1) end, "bad argument #1 to 'alive' (entity expected, got number)" },
      { function() return w:alive() end, "bad argument #1 to 'alive' (entity expected, got no value)" },
      { function() return w:destroy("x") end, "bad argument #1 to 'destroy' (entity expected, got string)" },
      { function() return w:create("x") end, "bad argument #1 to 'create' (number expected, got string)" },
      { function() return w:create(1.5) end, "bad argument #1 to 'create' (number has no integer representation)" },
      { function() return w:create(-1) end, "bad argument #1 to 'create' (count must not be negative)" },
      { function() return w.create({}) end, "ecs.World expected, got table" },
      { function() return w.create(io.stdout) end, "ecs.World expected, got FILE*" },
      { function() return ecs.index(io.stdout) end, "bad argument #1 to 'index' (entity expected, got FILE*)" },
      { function() return ecs.tostring(nil) end, "bad argument #1 to 'tostring' (entity expected, got nil)" },
      { function() return ecs.entity(1 << 30) end, "bad argument #1 to 'entity' (id out of range (0 to 1073741823))" },
      { function() return ecs.world(5) end, "bad argument #1 to 'world' (table expected, got number)" },
    }
    for _, c in ipairs(cases) do
      assert.matches(c[2], err_of(c[1]), 1, true)
    end
  end)

  it("reports a bad self for dot-calls", function()
    local fake = setmetatable({}, { __index = debug.getmetatable(w).__index })
    assert.matches("calling 'count' on bad self", err_of(function() return fake:count() end), 1, true)
  end)

  it("predicates never raise for well-formed dead, stale or null handles", function()
    local e = w:create()
    w:destroy(e)
    assert.is_false(w:alive(e))
    assert.is_false(w:alive(ecs.null))
    assert.is_false(w:destroy(e))
    assert.is_false(w:destroy(ecs.null))
  end)
end)
