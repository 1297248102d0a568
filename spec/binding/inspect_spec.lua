--[[
inspect_spec.lua -- world:inspect(e [, { table = true }]): an entity's
components and their values, its name, its transform and the plugin
managers that have it, as one string or as tables (src/lua/inspect.c).
Every field type, the short forms of lua values (no metamethod of a user
value is called), quoting and cutting of text, dead, stale and null
handles, bad arguments and options, closed worlds, and a world that
finalizers try to change in the middle of the call.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")
local pointmass = require("ecs.pointmass")
local mesh = require("ecs.mesh")

-- The text of an error without the position luaL_error may put first.
local function msg(e) return (tostring(e):gsub("^[^:]*:%d+: ", "")) end

describe("world:inspect", function()
  local w
  before_each(function() w = ecs.world() end)
  after_each(function() release(w) end)

  it("lists the components in creation order, fields in schema order", function()
    local Position = w:component("Position", { "x:f32", "y:f32" })
    local Enemy = w:component("Enemy")
    local Health = w:component("Health", { "hp", "max:i32" })
    local e = w:create()
    Health:add(e, 7.25, 10)     -- added first, created last: listed last
    Enemy:add(e)
    Position:add(e, 1.5, 2)
    w.names:set(e, "player")
    assert.equals(table.concat({
      'entity(1.0) "player"',
      "  Position { x = 1.5, y = 2 }",
      "  Enemy",
      "  Health { hp = 7.25, max = 10 }",
    }, "\n"), w:inspect(e))
    -- the handle as ecs.tostring writes it, no name line when it has none
    local f = w:create()
    Enemy:add(f)
    assert.equals(ecs.tostring(f) .. "\n  Enemy", w:inspect(f))
    local g = w:create()
    assert.equals(ecs.tostring(g), w:inspect(g))
  end)

  it("shows every field type", function()
    local All = w:component("All", { "a:f32", "b:f64", "c:i8", "d:i16", "e:i32", "f:i64",
                                     "g:u8", "h:u16", "i:u32", "j:bool", "k:entity", "l:entity",
                                     "m:lua", "n:lua" })
    local e, other = w:create(), w:create()
    All:add(e, 0.1, 0.1, -128, -32768, -2147483648, math.mininteger, 255, 65535, 4294967295,
            true, other, ecs.null, "text", nil)
    assert.equals("entity(1.0)\n  All { a = 0.1, b = 0.1, c = -128, d = -32768, " ..
                  "e = -2147483648, f = -9223372036854775808, g = 255, h = 65535, " ..
                  "i = 4294967295, j = true, k = entity(2.0), l = null, m = \"text\", " ..
                  "n = nil }", w:inspect(e))
    All:set(e, { f = math.maxinteger, j = false })
    assert.matches("f = 9223372036854775807,", w:inspect(e), 1, true)
    assert.matches("j = false,", w:inspect(e), 1, true)
    assert.matches("k = null,", w:inspect(e), 1, true)
  end)

  it("writes f32 with the fewest digits that read back, f64 as %.14g", function()
    local F = w:component("F", { "s:f32", "d:f64" })
    local e = w:create()
    local cases = {
      { 0.1, "0.1", "0.1" }, { 1 / 3, "0.33333334", "0.33333333333333" },
      { 2, "2", "2" }, { -0.0, "-0", "-0" }, { 1e10, "1e+10", "10000000000" },
      { 123456789, "1.2345679e+08", "123456789" }, { 3.4e38, "3.4e+38", "3.4e+38" },
      { 1e-45, "1.4013e-45", "1e-45" }, { 0.1 + 0.2, "0.3", "0.3" },
      { math.huge, "inf", "inf" }, { -math.huge, "-inf", "-inf" }, { 0 / 0, "nan", "nan" },
      { -(0 / 0), "nan", "nan" }, { 1e300, "inf", "1e+300" },
    }
    for _, c in ipairs(cases) do
      F:add(e, c[1], c[1])
      assert.equals(("entity(1.0)\n  F { s = %s, d = %s }"):format(c[2], c[3]), w:inspect(e),
                    tostring(c[1]))
    end
    -- the f32 text reads back as the stored float, with 6 to 9 digits
    local G = w:component("G", { "s:f32" })
    for _, v in ipairs({ 0.1, 1 / 3, 2 / 3, 1e-7, 16777217, 0.7, 3.14159265, 1e-40 }) do
      F:add(e, v, 0)
      local s = w:inspect(e):match("s = ([^,]+),")
      G:add(e, tonumber(s))
      assert.equals(F:field(e, "s"), G:field(e, "s"), s)
      assert.is_true(#s:gsub("e.*", ""):gsub("%D", "") <= 9, s)
    end
    G:remove(e)
  end)

  it("shows lua values in short form, by type", function()
    local L = w:component("L", { "v:lua" })
    local e = w:create()
    local function show(v)
      L:add(e, v)
      return w:inspect(e):match("^entity%(1%.0%)\n  L { v = (.*) }$")
    end
    local big = {}
    for i = 1, 5000 do big[i] = i end
    local file = io.tmpfile()
    local cases = {
      { nil, "nil" }, { true, "true" }, { false, "false" },
      { 1, "1" }, { -7, "-7" }, { 1.0, "1.0" }, { -0.0, "-0.0" }, { 1.5, "1.5" },
      { 1e100, "1e+100" }, { math.mininteger, "-9223372036854775808" },
      { 0 / 0, "nan" }, { math.huge, "inf" }, { -math.huge, "-inf" },
      { "", '""' }, { "hi", '"hi"' },
      { {}, "{}" }, { { 1 }, "{1 entry}" }, { { 1, 2, x = 3 }, "{3 entries}" },
      { big, "{1000+ entries}" },
      { ecs.null, "null" }, { ecs.entity(5 | (3 << 22)), "entity(5.3)" },
      { print, "function" }, { coroutine.create(print), "thread" },
      { file, "userdata(FILE*)" }, { w, "userdata(ecs.World)" },
      { L, "userdata(ecs.Component)" },
    }
    for _, c in ipairs(cases) do
      assert.equals(c[2], show(c[1]), c[2])
    end
    file:close()
    -- exactly 1000 entries are counted whole
    local thousand = {}
    for i = 1, 1000 do thousand[i] = i end
    assert.equals("{1000 entries}", show(thousand))
    L:remove(e)
  end)

  it("calls no metamethod of a user value, nor tostring", function()
    local L = w:component("L", { "v:lua" })
    local e = w:create()
    local called = {}
    local mt = {}
    for _, k in ipairs({ "__tostring", "__index", "__newindex", "__len", "__pairs", "__call",
                         "__eq", "__lt", "__le", "__concat", "__close", "__name" }) do
      mt[k] = function() called[#called + 1] = k; error(k .. " must not be called") end
    end
    mt.__name = "Hostile" -- a table's __name is not shown: tables show their size
    mt.__metatable = "locked"
    local hostile = setmetatable({ 1, 2 }, mt)
    L:add(e, hostile)
    local s = w:inspect(e)
    assert.equals("entity(1.0)\n  L { v = {2 entries} }", s)
    local comps = w:inspect(e, { table = true })
    assert.equals(hostile, comps.L.v)
    assert.same({}, called)
    -- a userdata whose metatable's __name is not plain text shows as userdata
    local u = io.tmpfile()
    local umt = debug.getmetatable(u)
    local name = umt.__name
    for _, bad in ipairs({ "line\nbreak", string.rep("n", 61), "", 42 }) do
      rawset(umt, "__name", bad)
      L:set(e, u)
      local ok, got = pcall(w.inspect, w, e)
      rawset(umt, "__name", name)
      assert.is_true(ok, got)
      assert.equals("entity(1.0)\n  L { v = userdata }", got)
    end
    u:close()
  end)

  it("quotes text as a Lua literal on one line, cut past 60 bytes", function()
    local L = w:component("L", { "v:lua" })
    local e = w:create()
    local function show(v)
      L:add(e, v)
      return w:inspect(e):match("^entity%(1%.0%)\n  L { v = (.*) }$")
    end
    local s = "a\"b\\c\nd\re\tf\0g\1h\127i\200\255j"
    local q = show(s)
    assert.equals('"a\\"b\\\\c\\nd\\re\\tf\\000g\\001h\\127i\200\255j"', q)
    assert.equals(s, load("return " .. q)()) -- a valid literal of the same bytes
    assert.is_nil(q:find("\n", 1, true))
    local sixty = string.rep("x", 60)
    assert.equals('"' .. sixty .. '"', show(sixty))
    assert.equals('"' .. sixty .. '"...(61 bytes)', show(sixty .. "y"))
    assert.equals('"' .. sixty .. '"...(102400 bytes)', show(string.rep("x", 100 * 1024)))
    -- a cut never splits a UTF-8 sequence: 59 bytes, then a 2-byte one
    local u = string.rep("x", 59) .. "é" .. "tail"
    assert.equals('"' .. string.rep("x", 59) .. '"...(65 bytes)', show(u))
    -- names are quoted the same way
    w.names:set(e, "the \"boss\"\n")
    assert.equals('entity(1.0) "the \\"boss\\"\\n"', w:inspect(e):match("^[^\n]*"))
    w.names:set(e, "")
    assert.equals('entity(1.0) ""', w:inspect(e):match("^[^\n]*"))
    w.names:set(e, string.rep("n", 70))
    assert.equals('entity(1.0) "' .. string.rep("n", 60) .. '"...(70 bytes)',
                  w:inspect(e):match("^[^\n]*"))
  end)

  it("shows the transform: local position, rotation, scale, parent, world position", function()
    local T = w.transform
    local root, e = w:create(), w:create()
    T:add(root, { position = { 10, 0, 0 } })
    T:add(e, { position = { 1, 2, 3 }, rotation = { 0, 0, 0, 2 }, scale = { 2, 2, 2 } })
    T:set_parent(e, root)
    assert.equals("entity(2.0)\n  transform { position = { 1, 2, 3 }, rotation = { 0, 0, 0, 1 }, " ..
                  "scale = { 2, 2, 2 }, parent = entity(1.0), world_position = { 11, 2, 3 } }",
                  w:inspect(e))
    assert.equals("entity(1.0)\n  transform { position = { 10, 0, 0 }, rotation = { 0, 0, 0, 1 }, " ..
                  "scale = { 1, 1, 1 }, parent = null, world_position = { 10, 0, 0 } }",
                  w:inspect(root))
    -- after the components, before the plugins
    local P = w:component("P", { "x" })
    P:add(e, 1)
    pointmass.new(w):add(e, 1)
    local lines = {}
    for l in w:inspect(e):gmatch("[^\n]+") do lines[#lines + 1] = l:match("^  (%S+)") or l end
    assert.same({ "entity(2.0)", "P", "transform", "pointmass" }, lines)
    -- the table form's position, rotation and scale are what T:add takes
    local _, m = w:inspect(e, { table = true })
    assert.same({ position = { 1, 2, 3 }, rotation = { 0, 0, 0, 1 }, scale = { 2, 2, 2 },
                  parent = root, world_position = { 11, 2, 3 } }, m.transform)
    local copy = w:create()
    T:add(copy, { position = m.transform.position, rotation = m.transform.rotation,
                  scale = m.transform.scale })
    assert.same({ T:local_position(e) }, { T:local_position(copy) })
    assert.same({ T:local_rotation(e) }, { T:local_rotation(copy) })
    assert.same({ T:local_scale(e) }, { T:local_scale(copy) })
  end)

  it("shows the plugin managers that have the entity, by name", function()
    local PM = pointmass.new(w)
    local M = mesh.new(w)
    local e, f = w:create(), w:create()
    PM:add(e, 2, 1, 2, 3)
    M:add(e, 7)
    M:add(f, 7)
    assert.equals("entity(1.0)\n  pointmass\n  mesh", w:inspect(e))
    assert.equals("entity(2.0)\n  mesh", w:inspect(f))
    local comps, m = w:inspect(e, { table = true })
    assert.same({}, comps)
    assert.same({ pointmass = true, mesh = true }, m)
    PM:remove(e)
    assert.equals("entity(1.0)\n  mesh", w:inspect(e))
  end)

  it("keeps a component called transform apart from the transform manager", function()
    local C = w:component("transform", { "x:i8" })
    local N = w:component("names", { "n:u8" })
    local e = w:create()
    C:add(e, 4)
    N:add(e, 5)
    w.transform:add(e)
    w.names:set(e, "n")
    local comps, m = w:inspect(e, { table = true })
    assert.same({ transform = { x = 4 }, names = { n = 5 } }, comps)
    assert.equals("n", m.names)
    assert.same({ 0, 0, 0 }, m.transform.position)
    assert.equals(table.concat({ 'entity(1.0) "n"', "  transform { x = 4 }", "  names { n = 5 }",
      "  transform { position = { 0, 0, 0 }, rotation = { 0, 0, 0, 1 }, scale = { 1, 1, 1 }, " ..
      "parent = null, world_position = { 0, 0, 0 } }" }, "\n"), w:inspect(e))
  end)

  it("returns tables with { table = true }: values as get gives them", function()
    local P = w:component("P", { "x:f32", "y:f64", "i:u16", "b:bool", "t:entity", "v:lua", "n:lua" })
    local Tag = w:component("Tag")
    local e, other = w:create(), w:create()
    local value = { 1, 2 }
    P:add(e, 0.1, 0.1, 7, true, other, value, nil)
    Tag:add(e)
    w.names:set(e, "xy")
    local comps, m = w:inspect(e, { table = true })
    assert.same({ P = { x = P:field(e, "x"), y = 0.1, i = 7, b = true, t = other, v = value },
                  Tag = {} }, comps)
    assert.equals(value, comps.P.v)          -- the value itself, not a copy
    assert.is_true(math.type(comps.P.i) == "integer")
    assert.same({ names = "xy" }, m)
    -- nothing but the entity: two empty tables
    local bare = w:create()
    local c2, m2 = w:inspect(bare, { table = true })
    assert.same({}, c2)
    assert.same({}, m2)
    -- options that ask for the string
    assert.equals(w:inspect(e), w:inspect(e, {}))
    assert.equals(w:inspect(e), w:inspect(e, { table = false }))
    assert.equals(w:inspect(e), w:inspect(e, nil))
  end)

  it("says a dead, stale or null handle is not alive, and is no error", function()
    local P = w:component("P", { "x" })
    local e = w:create()
    P:add(e, 1)
    w:destroy(e)
    assert.equals("entity(1.0) (dead)", w:inspect(e))
    assert.is_nil(w:inspect(e, { table = true }))
    assert.equals("entity(0.0) (null)", w:inspect(ecs.null))
    assert.is_nil(w:inspect(ecs.null, { table = true }))
    -- a stale handle of a reused index, and a forged one
    local stale = ecs.entity(ecs.index(e) | ((ecs.generation(e) + 1) << 22))
    assert.equals("entity(1.1) (dead)", w:inspect(stale))
    assert.equals("entity(4194303.255) (dead)", w:inspect(ecs.entity((1 << 30) - 1)))
    -- a handle from another world is read as a handle of this one
    local w2 = ecs.world()
    local x = w2:create()
    assert.equals("entity(1.0) (dead)", w:inspect(x))
    w2:close()
  end)

  it("checks its arguments like the other methods", function()
    local e = w:create()
    local cases = {
      { function() return w:inspect(5) end, "bad argument #1 to 'inspect' (entity expected, got number)" },
      { function() return w:inspect() end, "bad argument #1 to 'inspect' (entity expected, got no value)" },
      { function() return w:inspect("e") end, "bad argument #1 to 'inspect' (entity expected, got string)" },
      { function() return w:inspect(io.stdout) end, "bad argument #1 to 'inspect' (entity expected, got FILE*)" },
      { function() return w:inspect(e, 5) end, "bad argument #2 to 'inspect' (table expected, got number)" },
      { function() return w:inspect(e, "table") end, "bad argument #2 to 'inspect' (table expected, got string)" },
      { function() return w:inspect(e, { x = 1 }) end, "world:inspect: bad argument #2 (unknown option 'x')" },
      { function() return w:inspect(e, { table = true, tabel = true }) end,
        "world:inspect: bad argument #2 (unknown option 'tabel')" },
      { function() return w:inspect(e, { true }) end, "world:inspect: bad argument #2 (unknown option '1')" },
      { function() return w:inspect(e, { [{}] = 1 }) end,
        "world:inspect: bad argument #2 (unknown option: a table key)" },
      { function() return w:inspect(e, { table = 1 }) end,
        "world:inspect: bad option 'table' (boolean expected, got number)" },
      { function() return w:inspect(e, { table = "yes" }) end,
        "world:inspect: bad option 'table' (boolean expected, got string)" },
      { function() return w.inspect({}, e) end,
        "bad argument #1 to 'inspect' (ecs.World expected, got table)" },
      { function() return w.inspect(nil, e) end,
        "bad argument #1 to 'inspect' (ecs.World expected, got nil)" },
    }
    for _, c in ipairs(cases) do
      assert.equals(c[2], msg(err_of(c[1])))
    end
  end)

  it("raises the closed-world error on a closed world, whatever the arguments", function()
    local e = w:create()
    w:close()
    for _, args in ipairs({ { e }, {}, { 5 }, { e, { table = true } }, { e, { x = 1 } } }) do
      assert.equals("attempt to use a closed world", msg(err_of(w.inspect, w, table.unpack(args))))
    end
  end)

  it("works on a restored world", function()
    local P = w:component("P", { "x:i32" })
    local e = w:create()
    P:add(e, 3)
    w.names:set(e, "a")
    local PM = pointmass.new(w)
    PM:add(e, 1)
    local r = ecs.restore(w:snapshot())
    assert.equals(w:inspect(e), r:inspect(e))
    r:close()
  end)

  it("leaves the collector as it found it", function()
    local e = w:create()
    assert.is_true(collectgarbage("isrunning"))
    w:inspect(e)
    w:inspect(e, { table = true })
    assert.is_true(collectgarbage("isrunning"))
    collectgarbage("stop")
    w:inspect(e)
    w:inspect(e, { table = true })
    local stopped = not collectgarbage("isrunning")
    collectgarbage("restart")
    assert.is_true(stopped)
    -- and after an error
    pcall(w.inspect, w, e, { x = 1 })
    assert.is_true(collectgarbage("isrunning"))
  end)

  it("runs no finalizer in the middle of the call: the world cannot change under it", function()
    local P = w:component("P", { "a:lua", "b:lua", "c:lua", "d:lua" })
    local Q = w:component("Q", { "x:f64" })
    local e = w:create()
    local long = string.rep("z", 60)
    P:add(e, long, long, long, long)
    Q:add(e, 5)
    for i = 1, 30 do w:component("C" .. i, { "v:lua" }):add(e, long) end
    local expected = w:inspect(e)
    assert.is_true(#expected > 2048) -- past a Lua buffer's first block (1 kB): it allocates
    local ran = 0
    local done = false
    local function arm()
      setmetatable({}, { __gc = function()
        if done then return end
        ran = ran + 1
        if w:alive(e) then w:destroy(e) end -- what a finalizer might do
        arm()
      end })
    end
    collectgarbage("incremental", 0, 0, 40)
    local pause = collectgarbage("setpause", 0)
    local stepmul = collectgarbage("setstepmul", 1000)
    collectgarbage()
    arm()
    local got = w:inspect(e)
    local after = {} -- an allocation outside the call: the finalizers run here
    done = true
    assert.is_table(after)
    collectgarbage("setpause", pause)
    collectgarbage("setstepmul", stepmul)
    collectgarbage("incremental", 0, 0, 13)
    collectgarbage()
    assert.equals(expected, got)
    assert.is_true(ran > 0) -- the finalizers did run, after the call
    assert.is_false(w:alive(e))
  end)
end)
