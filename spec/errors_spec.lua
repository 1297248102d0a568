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
local junk = require("spec.support.junk")
local surface = require("spec.support.surface")

-- The surface (spec/support/surface.lua): module and plugin functions, the
-- objects a world hands out (plugins included) and their methods.
local objects = surface.objects
local methods = surface.methods

-- Call f with args under pcall; assert the outcome is allowed.
local function try(label, f, ...)
  local ok, err = pcall(f, ...)
  if not ok then
    assert(type(err) == "string", label .. ": error is not a string: " .. tostring(err))
  end
  return ok, err
end

describe("argument sweep", function()
  it("module functions survive every junk value", function()
    local w = ecs.world()
    local values, other = junk.values(w)
    for _, fn in ipairs(surface.module_functions()) do
      local name, f = fn[1], fn[2]
      for _, j in ipairs(values) do
        local label = name .. "(" .. j[1] .. ")"
        local ok, r = try(label, f, j[2])
        if ok and name == "ecs.world" then r:close() end
        ok, r = try(label, f, j[2], j[2])
        if ok and name == "ecs.world" then r:close() end
        try(label, f, w, j[2])
        try(label, f, j[2], 1, 1)
      end
    end
    assert.is_true(w:check())
    other:close()
    w:close()
  end)

  it("every method of every object survives every junk value in every position", function()
    local probe = ecs.world()
    local objs = objects(probe)
    local calls = 0
    for k, entry in ipairs(objs) do
      local kind = entry[1]
      for _, m in ipairs(methods(entry[2])) do
        for ji = 1, #junk.values(probe) do
          -- a fresh world per (method, value): a method like close may end it
          local w = ecs.world()
          local fresh, e = objects(w)
          local obj = fresh[k][2]
          local values, other = junk.values(w)
          local j = values[ji]
          local f = obj[m]
          local label = kind .. ":" .. m .. " with " .. j[1]
          try(label, f, j[2])                   -- bad self
          try(label, f, obj, j[2])
          try(label, f, obj, j[2], j[2])
          try(label, f, obj, e, j[2])
          try(label, f, obj, j[2], e)
          try(label, f, obj, e, j[2], j[2])
          try(label, f, obj, "x", j[2])
          calls = calls + 7
          local ok = pcall(w.count, w)
          if ok then
            local good, bad = w:check()
            assert(good, label .. ": world inconsistent: " .. tostring(bad))
            local x = w:create()                -- and it still works
            assert(w:alive(x), label)
            w:close()
          end
          other:close()
        end
      end
    end
    assert(calls > 100)
    probe:close()
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
