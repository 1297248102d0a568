--[[
sweep.lua -- the argument sweep (RELIABILITY R18/R19): every function of the
surface (spec/support/surface.lua) -- module and plugin functions, the
methods of every object a world hands out -- called with junk values
(spec/support/junk.lua) in every position. Nothing may crash; each call
returns values or raises a string error; afterwards the world is consistent
and still works.

spec/binding/errors_spec.lua runs it over every junk value; spec/binding/surface_spec.lua
runs it over one and checks that it reaches every function and every method
of every class the binding registers.

  sweep.module_functions([pick]) -> reached, calls
  sweep.methods([pick])          -> reached, calls
pick(i) selects the junk values by index (default: all). reached is the set
of what was called: module functions by name ("ecs.world"), methods by class
and name ("ecs.World:create").
]]
local ecs = require("ecs")
local assert = require("luassert")
local junk = require("spec.support.junk")
local surface = require("spec.support.surface")

local sweep = {}

local function all() return true end

-- Call f with args under pcall; assert the outcome is allowed.
local function try(label, f, ...)
  local ok, err = pcall(f, ...)
  if not ok then
    assert(type(err) == "string", label .. ": error is not a string: " .. tostring(err))
  end
  return ok, err
end

function sweep.module_functions(pick)
  pick = pick or all
  local reached, calls = {}, 0
  local w = ecs.world()
  local values, other = junk.values(w)
  for _, fn in ipairs(surface.module_functions()) do
    local name, f = fn[1], fn[2]
    for ji, j in ipairs(values) do
      if pick(ji) then
        local label = name .. "(" .. j[1] .. ")"
        local ok, r = try(label, f, j[2])
        if ok and name == "ecs.world" then r:close() end
        ok, r = try(label, f, j[2], j[2])
        if ok and name == "ecs.world" then r:close() end
        try(label, f, w, j[2])
        try(label, f, j[2], 1, 1)
        calls = calls + 4
        reached[name] = true
      end
    end
  end
  assert(w:check())
  other:close()
  w:close()
  return reached, calls
end

function sweep.methods(pick)
  pick = pick or all
  local reached, calls = {}, 0
  local probe = ecs.world()
  local objs = surface.objects(probe)
  local nvalues = #junk.values(probe)
  for k, entry in ipairs(objs) do
    local kind = entry[1]
    local class = debug.getmetatable(entry[2]).__name
    for _, m in ipairs(surface.methods(entry[2])) do
      for ji = 1, nvalues do
        if pick(ji) then
          -- a fresh world per (method, value): a method like close may end it
          local w = ecs.world()
          local fresh, e = surface.objects(w)
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
          reached[class .. ":" .. m] = true
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
  end
  probe:close()
  return reached, calls
end

return sweep
