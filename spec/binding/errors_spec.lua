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
local compat = require("spec.support.lua")
-- a file handle's type name in messages: its __name, which 5.1 and 5.2 do not set
local FILE = compat.version >= "5.3" and "FILE*" or "userdata"
local err_of = require("spec.support.err_of")
local sweep = require("spec.support.sweep")

-- the sweep itself is spec/support/sweep.lua; spec/binding/surface_spec.lua checks
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
      { function() return (w:alive(1)) end, "bad argument #1 to 'alive' (entity expected, got number)" },
      { function() return (w:alive()) end, "bad argument #1 to 'alive' (entity expected, got no value)" },
      { function() return (w:destroy("x")) end, "bad argument #1 to 'destroy' (entity expected, got string)" },
      { function() return (w:create("x")) end, "bad argument #1 to 'create' (number expected, got string)" },
      { function() return (w:create(1.5)) end, "bad argument #1 to 'create' (number has no integer representation)" },
      { function() return (w:create(-1)) end, "bad argument #1 to 'create' (count must not be negative)" },
      { function() return (w.create({})) end, "ecs.World expected, got table" },
      { function() return (w.create(io.stdout)) end, "ecs.World expected, got " .. FILE },
      { function() return (ecs.index(io.stdout)) end,
        "bad argument #1 to 'index' (entity expected, got " .. FILE .. ")" },
      { function() return (ecs.tostring(nil)) end, "bad argument #1 to 'tostring' (entity expected, got nil)" },
      { function() return (ecs.entity(math.floor(2 ^ 30))) end,
        "bad argument #1 to 'entity' (id out of range (0 to 1073741823))" },
      { function() return (ecs.world(5)) end, "bad argument #1 to 'world' (table expected, got number)" },
    }
    for _, c in ipairs(cases) do
      assert.matches(c[2], err_of(c[1]), 1, true)
    end
  end)

  it("reports a bad self for dot-calls", function()
    local fake = setmetatable({}, { __index = debug.getmetatable(w).__index })
    assert.matches("calling 'count' on bad self", err_of(function() return (fake:count()) end), 1, true)
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

--[[
One code per broken rule (ECS_ERRORS in include/ecs.h): each reaches Lua as
"Class:method: <the code's text>" through the binding's one helper, errors
about an entity name it, and a closed world has one text. The texts below
are the table's; a C test asserts the code behind each (test/).
]]
describe("error codes", function()
  local w, P, V, F, B
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f32", "y:f32" })
    V = w:component("Velocity", { "dx:f32", "dy:f32" })
    F = w:component("Frozen")
    B = w:component("Brain", { "script:lua" })
  end)
  after_each(function() w:close() end)

  -- the error from the function's name on (without a position prefix)
  local function msg(f, ...)
    local err = err_of(f, ...)
    assert.is_string(err)
    return (err:gsub("^[^:]*:%d+: ", ""))
  end

  it("name each broken rule of a query with its own text", function()
    local many = {}
    for k = 1, 33 do many[k] = w:component("C" .. k) end
    local cases = {
      { function() return (w:query()) end, "world:query: at least one component expected" },
      { function() return (w:query(P, P)) end, "world:query: component 'Position' listed twice" },
      { function() return (w:query({ P, without = { V, P } })) end,
        "world:query: component 'Position' listed twice" },
      { function() return (w:query(compat.unpack(many))) end,
        "world:query: too many components (limit 32)" },
      { function() return (w:query({ P, without = { compat.unpack(many, 1, 32) } })) end,
        "world:query: too many components (limit 32)" },
    }
    for _, c in ipairs(cases) do assert.equals(c[2], msg(c[1])) end
    -- 32 terms is the limit, not past it
    assert.is_truthy(w:query(compat.unpack(many, 1, 32)))
  end)

  it("name unknown, excluded, lua and non-numeric fields wherever they are resolved", function()
    local q = w:query({ P, B, without = { F } })
    local cases = {
      { q.columns, "Position.z", "q:columns: column 'Position.z': unknown field 'Position.z'" },
      { q.columns, "Velocity.dx",
        "q:columns: column 'Velocity.dx': component 'Velocity' is not among the query's components (Position, Brain)" },
      { q.columns, "Frozen.x", "q:columns: column 'Frozen.x': component 'Frozen' is excluded by the query" },
      { q.columns, "Brain.script", "q:columns: column 'Brain.script': lua fields are not columns" },
      { q.apply, "Position.x = Brain.script", "q:apply: field 'Brain.script' is not numeric at position 14" },
      { q.apply, "Position.z = 1", "q:apply: unknown field 'Position.z' at position 1" },
    }
    for _, c in ipairs(cases) do assert.equals(c[3], msg(c[1], q, c[2])) end
    local e = w:create()
    P:add(e, 1, 2)
    assert.equals("Position:field: unknown field 'z'", msg(P.field, P, e, "z"))
    assert.equals("Position:add: unknown field 'z'", msg(P.add, P, e, { z = 1 }))
  end)

  it("let the core check transform values, with the table's texts", function()
    local T = w.transform
    local e = w:create()
    T:add(e)
    assert.equals("transform:set_local_position: non-finite number",
      msg(T.set_local_position, T, e, 0 / 0, 0, 0))
    assert.equals("transform:set_local_scale: non-finite number",
      msg(T.set_local_scale, T, e, 1, -math.huge, 1))
    assert.equals("transform:set_local_rotation: rotation quaternion must be non-zero",
      msg(T.set_local_rotation, T, e, 0, 0, 0, 0))
    assert.equals("transform:add: rotation quaternion must be non-zero",
      msg(T.add, T, e, { rotation = { 0, 0, 0, 0 } }))
    -- a batch says which element, and changes nothing
    local f = w:create()
    T:add(f)
    assert.equals("transform:set_local_rotations: rotation quaternion must be non-zero at index 2",
      msg(T.set_local_rotations, T, { e, f }, { 1, 0 }, { 0, 0 }, { 0, 0 }, { 1, 0 }))
    assert.same({ 0, 0, 0, 1 }, { T:local_rotation(e) })
  end)

  it("name the entity an error is about", function()
    local e, dead = w:create(), w:create()
    w:destroy(dead)
    local T, N = w.transform, w.names
    local function note(x) return " (" .. ecs.tostring(x) .. ")" end
    assert.equals("Position:set: entity does not have the component" .. note(e),
      msg(P.set, P, e, 1, 2))
    assert.equals("Position:add: entity is not alive" .. note(dead), msg(P.add, P, dead, 1, 2))
    assert.equals("transform:local_position: entity has no transform" .. note(e),
      msg(T.local_position, T, e))
    assert.equals("transform:world_matrix: entity is not alive" .. note(dead),
      msg(T.world_matrix, T, dead))
    assert.equals("names:set: entity is not alive" .. note(dead), msg(N.set, N, dead, "x"))
    T:add(e)
    assert.equals("transform:set_local_positions: entities[2] is not alive or has no transform"
      .. note(dead), msg(T.set_local_positions, T, { e, dead }, { 1, 2 }, { 1, 2 }, { 1, 2 }))
    -- plugins raise through the same helper (ecs_lua_error)
    local PM = require("ecs.pointmass").new(w)
    assert.equals("pointmass:add: entity is not alive" .. note(dead), msg(PM.add, PM, dead, 1))
    assert.equals("pointmass:set_velocity: entity does not have the component" .. note(e),
      msg(PM.set_velocity, PM, e, 1, 2, 3))
    -- an error that is not about an entity's state does not name it
    assert.equals("transform:set_local_position: non-finite number",
      msg(T.set_local_position, T, e, 0 / 0, 0, 0))
  end)

  it("have one closed-world text, without a function name", function()
    local q = w:query(P)
    local T = w.transform
    w:close()
    for _, f in ipairs({
      function() return (w:create()) end,
      function() return (P:add(ecs.null)) end,
      function() return (q:count()) end,
      function() return (w:query(P)) end,
      function() return (T:add(ecs.null)) end,
    }) do
      assert.equals("attempt to use a closed world", msg(f))
    end
  end)
end)
