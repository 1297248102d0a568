--[[
names_spec.lua -- world.names through require("ecs").
]]
local ecs = require("ecs")
local testkit = require("spec.support.testkit")

describe("world.names", function()
  local w, N
  before_each(function()
    w = ecs.world()
    N = w.names
  end)
  after_each(function()
    local ok, bad = w:check()
    assert(ok, bad)
    w:close()
  end)

  it("is one object per world", function()
    assert.equals(N, w.names)
    assert.matches("^ecs.Names", tostring(N))
  end)

  it("sets, gets, finds and clears", function()
    local e, f = w:create(), w:create()
    assert.is_nil(N:get(e))
    assert.is_nil(N:find("player"))
    N:set(e, "player")
    assert.equals("player", N:get(e))
    assert.equals(e, N:find("player"))
    N:set(e, "hero")
    assert.is_nil(N:find("player"))
    assert.equals(e, N:find("hero"))
    -- a name is text: a zero byte in it is an error (spec/binding/strings_spec.lua)
    assert.has_error(function() N:set(f, "a\0b") end)
    assert.is_nil(N:get(f))
    assert.has_error(function() N:find("a\0b") end)
    N:set(f, "")
    assert.equals(f, N:find(""))
    assert.is_true(N:clear(f))
    assert.is_false(N:clear(f))
    assert.is_nil(N:get(f))
    assert.is_nil(N:find(""))
  end)

  it("finds the most recently named of several holders", function()
    local a, b, c = w:create(), w:create(), w:create()
    N:set(a, "orc")
    N:set(b, "orc")
    N:set(c, "orc")
    assert.equals(c, N:find("orc"))
    N:set(a, "orc")
    assert.equals(a, N:find("orc"))
    N:clear(a)
    assert.equals(c, N:find("orc"))
  end)

  it("forgets names with their entity at once", function()
    local e, f = w:create(), w:create()
    N:set(e, "x")
    N:set(f, "x")
    w:destroy(f)
    assert.equals(e, N:find("x"))
    assert.is_nil(N:get(f))
    assert.is_false(N:clear(f))
    w:destroy(e)
    assert.is_nil(N:find("x"))
    assert.equals(2, N:gc())
    assert.equals(0, N:gc())
  end)

  it("handles many names", function()
    local es = w:create(3000)
    for i, e in ipairs(es) do N:set(e, "n" .. i) end
    for i, e in ipairs(es) do assert(N:find("n" .. i) == e) end
    for i = 1, 3000, 2 do w:destroy(es[i]) end
    w:update(0)
    for i, e in ipairs(es) do assert(N:find("n" .. i) == (i % 2 == 0 and e or nil)) end
  end)

  it("raises clear errors, and type errors for junk", function()
    local e, dead = w:create(), w:create()
    w:destroy(dead)
    local cases = {
      { function() N:set(dead, "x") end, "names:set: entity is not alive" },
      { function() N:set(ecs.null, "x") end, "names:set: entity is not alive" },
      { function() N:set(e, 5) end, "bad argument #2 to 'set' %(string expected, got number%)" },
      { function() N:set(e) end, "bad argument #2 to 'set' %(string expected, got no value%)" },
      { function() N:set(5, "x") end, "bad argument #1 to 'set' %(entity expected, got number%)" },
      { function() N:find(nil) end, "bad argument #1 to 'find' %(string expected, got nil%)" },
      { function() N.get(w, e) end, "ecs.Names expected" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err)
    end
    assert.is_nil(N:get(dead))
    assert.is_nil(N:get(ecs.null))
    assert.is_false(N:clear(ecs.null))
  end)

  it("takes a light userdata that is not an entity handle for a type error", function()
    local kit = testkit.module or pending(testkit.missing)
    local lud = kit.lightuserdata(0x1000)
    for _, call in ipairs({ function() return N:get(lud) end, function() return N:set(lud, "x") end,
                            function() return N:clear(lud) end }) do
      local ok, err = pcall(call)
      assert.is_false(ok)
      assert.matches("entity expected, got light userdata", err)
    end
  end)

  it("survives junk in every argument of every method", function()
    local e = w:create()
    local other = ecs.world()
    local dead = w:create()
    w:destroy(dead)
    -- a light userdata that is no entity handle, when the test module is built
    local lud = testkit.module and testkit.module.lightuserdata(4) or false
    local junk = {
      nil, false, 0, 1.5, 0 / 0, "", "x", {}, function() end, lud,
      dead, ecs.null, ecs.entity(math.floor(2 ^ 30) - 1), other, other:create(), io.stdout,
      string.rep("y", 100000),
    }
    for m, f in pairs(debug.getmetatable(N).__index) do
      for i = 1, #junk + 1 do
        local j = junk[i]
        for _, args in ipairs({ { j }, { e, j }, { j, "x" }, { j, j } }) do
          local ok, err = pcall(f, N, args[1], args[2])
          if not ok then assert.equals("string", type(err), m) end
        end
        assert.is_false(pcall(f, j, e))
      end
    end
    local ok, bad = w:check()
    assert(ok, bad)
    N:set(e, "still works")
    assert.equals(e, N:find("still works"))
    other:close()
  end)

  it("refuses to work once the world is closed", function()
    local w2 = ecs.world()
    local N2 = w2.names
    w2:close()
    assert.matches("attempt to use a closed world", select(2, pcall(N2.find, N2, "x")))
  end)
end)
