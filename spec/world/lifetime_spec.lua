--[[
lifetime_spec.lua -- how worlds and the objects they hand out die
(RELIABILITY R17, R27): closing a world while managers, transform/names,
plugins, queries and iterators are alive makes every one of them raise
"attempt to use a closed world"; __gc and __close are idempotent and never
raise; a world dies by close(), by <close>, by being dropped and collected
(only once nothing it handed out is alive), and (in test/oom/oom_host.c) by
lua_close with the world still open.
]]
local ecs = require("ecs")
local surface = require("spec.support.surface")

local CLOSED = "attempt to use a closed world"

local function full_gc()
  collectgarbage()
  collectgarbage()
end

local function raises_closed(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "did not raise")
  assert.is_string(err)
  assert.truthy(err:find(CLOSED, 1, true), err)
end

-- A world with one of everything, and an entity that has everything.
local function populated()
  local w = ecs.world()
  local objs, e = surface.objects(w)
  local byname = {}
  for _, o in ipairs(objs) do byname[o[1]] = o[2] end
  local T = w.transform
  T:add(e)
  local c = w:create()
  T:add(c)
  T:set_parent(c, e)
  w.names:set(e, "e")
  local P = byname.component
  P:add(c, 3, 4)
  return w, objs, byname, e, c
end

describe("closing a world", function()
  it("makes every method of every object it handed out raise", function()
    local w, objs, _, e = populated()
    w:close()
    local n = 0
    for _, o in ipairs(objs) do
      for _, m in ipairs(o[3] and {} or surface.methods(o[2])) do
        -- close stays idempotent (world and observer); an observer's active
        -- answers false
        if not ((o[1] == "world" or o[1] == "observer" or o[1] == "journal") and
                m == "close") and
           not ((o[1] == "observer" or o[1] == "journal") and m == "active") then
          raises_closed(o[2][m], o[2], e)
          raises_closed(o[2][m], o[2])
          n = n + 1
        end
      end
    end
    assert.is_true(n > 50)
  end)

  it("makes iterators started before the close raise on their next step", function()
    local w, _, by, e = populated()
    local P, T, q = by.component, w.transform, by.query
    w:create(5)
    local loops = {
      { "world:entities", function() return w:entities() end },
      { "component:entities", function() return P:entities() end },
      { "transform:children", function() return T:children(e) end },
      { "query:entities", function() return q:entities() end },
      { "query:columns", function() return q:columns("JunkPosition.x") end },
    }
    for _, l in ipairs(loops) do
      local w2 = ecs.world() -- each loop on a fresh world: the close ends it
      local objs2 = surface.objects(w2)
      local x = w2:create()
      objs2[2][2]:add(x, 1, 2)
      w2.transform:add(x)
      local y = w2:create()
      objs2[2][2]:add(y, 1, 2)
      w2.transform:add(y)
      w2.transform:set_parent(y, x)
      local make = ({
        ["world:entities"] = function() return w2:entities() end,
        ["component:entities"] = function() return objs2[2][2]:entities() end,
        ["transform:children"] = function() return w2.transform:children(x) end,
        ["query:entities"] = function() return objs2[3][2]:entities() end,
        ["query:columns"] = function() return objs2[3][2]:columns("JunkPosition.x") end,
      })[l[1]]
      local ok, err = pcall(function()
        for _ in make() do w2:close() end
      end)
      assert.is_false(ok, l[1] .. " went on after close")
      assert.truthy(tostring(err):find(CLOSED, 1, true), l[1] .. ": " .. tostring(err))
      w2:close() -- idempotent
    end
    w:close()
  end)

  it("makes a q:each_chunk loop raise when its fn closed the world", function()
    local w2 = ecs.world()
    local objs2 = surface.objects(w2)
    local P2, q2 = objs2[2][2], objs2[3][2]
    for _ = 1, 3 do P2:add(w2:create(), 1, 2) end
    local calls = 0
    local ok, err = pcall(q2.each_chunk, q2, function(n, x)
      calls = calls + 1
      for i = 1, n do x[i] = 5 end
      w2:close()
    end, "JunkPosition.x")
    assert.is_false(ok)
    assert.truthy(tostring(err):find(CLOSED, 1, true), tostring(err))
    assert.equals(1, calls)
    raises_closed(q2.each_chunk, q2, function() end, "JunkPosition.x")
    w2:close() -- idempotent
  end)

  it("is idempotent through close, __close and __gc, which never raise", function()
    local w, objs = populated()
    local mt = debug.getmetatable(w)
    assert.is_true(pcall(w.close, w))
    assert.is_true(pcall(w.close, w))
    assert.is_true(pcall(mt.__close, w))
    assert.is_true(pcall(mt.__gc, w))
    for _, o in ipairs(objs) do
      local omt = debug.getmetatable(o[2])
      for _, k in ipairs({ "__gc", "__close" }) do
        if omt[k] then
          assert.is_true(pcall(omt[k], o[2]), o[1] .. " " .. k)
          assert.is_true(pcall(omt[k], o[2]), o[1] .. " " .. k .. " twice")
        end
      end
    end
  end)

  it("finalizers of objects never raise while their world is open", function()
    local w, objs = populated()
    local warnings = {}
    -- finalizer errors become warnings in 5.4: catch them
    for _, o in ipairs(objs) do
      local omt = debug.getmetatable(o[2])
      if omt.__gc and o[1] ~= "world" then
        local ok, err = pcall(omt.__gc, o[2])
        if not ok then warnings[#warnings + 1] = o[1] .. ": " .. tostring(err) end
      end
    end
    assert.same({}, warnings)
    assert.is_true(w:check())
    w:close()
  end)

  it("keeps handles comparable and never alive", function()
    local w = ecs.world()
    local e = w:create()
    local f = e
    w:close()
    assert.equals(f, e)
    raises_closed(w.alive, w, e)
    assert.is_true(ecs.is_entity(e))
  end)
end)

describe("ways a world dies", function()
  it("close() releases its Lua values", function()
    local w = ecs.world()
    local B = w:component("B", { "v:lua" })
    local probe = setmetatable({ v = {} }, { __mode = "v" })
    B:add(w:create(), probe.v)
    full_gc()
    assert.is_not_nil(probe.v)
    w:close()
    full_gc()
    assert.is_nil(probe.v)
  end)

  it("<close> closes it at scope exit, also on error", function()
    local kept
    do
      local w <close> = ecs.world()
      kept = w
      w:create()
    end
    raises_closed(kept.count, kept)
    local ok = pcall(function()
      local w <close> = ecs.world()
      kept = w
      error("leave")
    end)
    assert.is_false(ok)
    raises_closed(kept.count, kept)
  end)

  it("dropped and collected, once nothing it handed out is alive", function()
    local probe = setmetatable({}, { __mode = "v" })
    local P, T, q
    do
      local w = ecs.world()
      probe.w = w
      P = w:component("P", { "x" })
      T = w.transform
      q = w:query(P)
      local e = w:create()
      P:add(e, 1)
    end
    full_gc()
    assert.is_not_nil(probe.w, "collected while its managers are alive")
    assert.equals(1, P:count()) -- still works
    assert.equals(0, T:size())
    assert.equals(1, q:count())
    P, T, q = nil, nil, nil -- luacheck: ignore 311 (dropped for the collector)
    full_gc()
    assert.is_nil(probe.w, "never collected")
  end)

  it("many worlds created and dropped leave memory near its baseline", function()
    full_gc()
    local before = collectgarbage("count")
    for i = 1, 2000 do
      local w = ecs.world()
      local P = w:component("P", { "x", "s:lua" })
      P:add(w:create(), i, { i })
      if i % 2 == 0 then w:close() end
    end
    full_gc()
    assert.is_true(collectgarbage("count") < before + 256, "grew by "
      .. (collectgarbage("count") - before) .. " kB")
  end)
end)
