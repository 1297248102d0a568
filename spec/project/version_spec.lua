describe("the interpreter", function()
  -- Lua 5.4 unless the run picked another (.busted: --run=lua51 ... reads
  -- build-lua51/ ..., README "Lua versions")
  it("is the Lua the run picked: 5.4 by default", function()
    local v = package.cpath:match("build%-lua(%d)(%d)/")
    local want = package.cpath:find("build-luajit/", 1, true) and "Lua 5.1"
      or v and ("Lua %s.%s"):format(package.cpath:match("build%-lua(%d)(%d)/")) or "Lua 5.4"
    assert.are.equal(want, _VERSION)
    assert.are.equal(package.cpath:find("build-luajit/", 1, true) ~= nil, type(rawget(_G, "jit")) == "table")
  end)

  it("loads ecs with its C core", function()
    local ecs = require("ecs")
    assert.is_table(ecs)
    assert.is_function(ecs.world)
    assert.is_table(package.loaded["ecs.core"])
  end)
end)
