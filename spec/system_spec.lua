--[[
system_spec.lua -- world:system, world:update, world:systems,
world:remove_system, world:stats and world:reset_stats (docs/queries.md):
Lua and expression systems, the order they run in, parameters read at each
update, errors inside a system at the first, middle and last entity coming
out with their original value and leaving the world usable (RELIABILITY
R22-R24), and a native system from a C plugin when one is available.
]]
local ecs = require("ecs")

local function err_of(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return err
end

describe("world:system", function()
  local w, P, V, q, es
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f64", "y:f64" })
    V = w:component("Velocity", { "dx:f64", "dy:f64" })
    q = w:query(P, V)
    es = w:create(10)
    for i, e in ipairs(es) do P:add(e, 0, 0); V:add(e, i, -i) end
  end)
  after_each(function()
    if pcall(w.count, w) then
      assert.is_true(w:check())
      w:close()
    end
  end)

  it("calls a Lua system with dt and its query at each update", function()
    local calls = {}
    w:system("probe", q, function(dt, query)
      calls[#calls + 1] = { dt, query }
    end)
    w:update(0.5)
    w:update(0.25)
    assert.equals(2, #calls)
    assert.equals(0.5, calls[1][1])
    assert.equals(0.25, calls[2][1])
    assert.is_true(rawequal(q, calls[1][2]))
  end)

  it("runs a Lua system that moves entities through columns", function()
    w:system("move", q, function(dt, query)
      for n, x, y, dx, dy in query:columns("Position.x", "Position.y", "Velocity.dx:in", "Velocity.dy:in") do
        for i = 1, n do x[i] = x[i] + dx[i] * dt; y[i] = y[i] + dy[i] * dt end
      end
    end)
    w:update(0.5)
    w:update(0.5)
    for i, e in ipairs(es) do assert.same({ i, -i }, { P:get(e) }) end
  end)

  it("runs an expression system with dt bound at each update", function()
    w:system("drift", q, "Position.x += Velocity.dx * dt; Position.y = dt")
    w:update(0.5)
    for i, e in ipairs(es) do assert.same({ i * 0.5, 0.5 }, { P:get(e) }) end
    w:update(0.25)
    for i, e in ipairs(es) do assert.same({ i * 0.75, 0.25 }, { P:get(e) }) end
  end)

  it("reads the params of an expression system at each update", function()
    local params = { speed = 1 }
    w:system("push", q, "Position.x += speed", params)
    w:update(0.1)
    params.speed = 10
    w:update(0.1)
    params.speed = -0.5
    w:update(0.1)
    for _, e in ipairs(es) do assert.equals(10.5, (P:get(e))) end
  end)

  it("raises at update when a parameter became invalid, and recovers", function()
    local params = { speed = 1 }
    w:system("push", q, "Position.x += speed", params)
    params.speed = "fast"
    local msg = err_of(w.update, w, 0.1)
    assert.truthy(tostring(msg):find("speed", 1, true), tostring(msg))
    for _, e in ipairs(es) do assert.equals(0, (P:get(e))) end
    params.speed = 2
    w:update(0.1)
    for _, e in ipairs(es) do assert.equals(2, (P:get(e))) end
  end)

  it("rejects an expression with an error when the system is registered", function()
    local msg = err_of(w.system, w, "bad", q, "Position.z += 1")
    assert.truthy(msg:find("unknown field 'Position.z'", 1, true), msg)
    assert.same({}, w:systems())
    w:update(0.1)
  end)

  it("runs systems in registration order", function()
    local log = {}
    for _, name in ipairs({ "c", "a", "b", "z" }) do
      w:system(name, q, function() log[#log + 1] = name end)
    end
    w:update(0)
    w:update(0)
    assert.same({ "c", "a", "b", "z", "c", "a", "b", "z" }, log)
    assert.same({ "c", "a", "b", "z" }, w:systems())
  end)

  it("interleaves Lua and expression systems in order", function()
    local seen = {}
    w:system("set", q, "Position.x = 5")
    w:system("read", q, function()
      for e in q:entities() do seen[#seen + 1] = P:field(e, "x") end
    end)
    w:system("double", q, "Position.x *= 2")
    w:update(0)
    for _, x in ipairs(seen) do assert.equals(5, x) end
    assert.equals(10, #seen)
    for _, e in ipairs(es) do assert.equals(10, (P:get(e))) end
  end)

  it("rejects a duplicate name and keeps the first system", function()
    local ran = {}
    w:system("move", q, function() ran[#ran + 1] = "first" end)
    local msg = err_of(w.system, w, "move", q, function() ran[#ran + 1] = "second" end)
    assert.truthy(msg:find("system", 1, true), msg)
    err_of(w.system, w, "move", q, "Position.x = 1")
    w:update(0)
    assert.same({ "first" }, ran)
    assert.same({ "move" }, w:systems())
  end)

  it("removes systems by name", function()
    local log = {}
    for _, name in ipairs({ "a", "b", "c" }) do
      w:system(name, q, function() log[#log + 1] = name end)
    end
    assert.is_true(w:remove_system("b"))
    assert.is_false(w:remove_system("b"))
    assert.is_false(w:remove_system("nope"))
    assert.same({ "a", "c" }, w:systems())
    w:update(0)
    assert.same({ "a", "c" }, log)
    w:system("b", q, function() log[#log + 1] = "b2" end)   -- the name is free again
    assert.same({ "a", "c", "b" }, w:systems())
    w:update(0)
    assert.same({ "a", "c", "a", "c", "b2" }, log)
  end)

  it("releases the function of a removed system", function()
    local probe = setmetatable({}, { __mode = "v" })
    do
      local fn = function() end
      probe[1] = fn
      w:system("s", q, fn)
    end
    collectgarbage(); collectgarbage()
    assert.is_not_nil(probe[1])
    w:remove_system("s")
    collectgarbage(); collectgarbage()
    assert.is_nil(probe[1])
  end)

  it("reports stats per system and resets them", function()
    w:system("lua", q, function(_, query) for _ in query:entities() do end end)
    w:system("expr", q, "Position.x += 1")
    local st = w:stats()
    assert.equals(2, #st)
    assert.equals("lua", st[1].name)
    assert.equals("expr", st[2].name)
    for _, s in ipairs(st) do
      assert.equals(0, s.calls)
      assert.equals("string", type(s.kind))
    end
    assert.are_not.equal(st[1].kind, st[2].kind)
    for _ = 1, 3 do w:update(0.1) end
    st = w:stats()
    for _, s in ipairs(st) do
      assert.equals(3, s.calls)
      assert.equals("number", type(s.seconds))
      assert.is_true(s.seconds >= 0)
      assert.equals("number", type(s.entities))
    end
    assert.equals(30, st[2].entities)                -- 10 matches, 3 updates
    w:reset_stats()
    for _, s in ipairs(w:stats()) do
      assert.equals(0, s.calls)
      assert.equals(0, s.seconds)
      assert.equals(0, s.entities)
    end
    assert.same({ "lua", "expr" }, w:systems())      -- reset keeps the systems
  end)

  it("rejects bad arguments", function()
    assert.truthy(err_of(w.system, w, 42, q, function() end):find("#1", 1, true))
    assert.truthy(err_of(w.system, w, nil, q, function() end):find("#1", 1, true))
    assert.truthy(err_of(w.system, w, "s", nil, function() end):find("#2", 1, true))
    assert.truthy(err_of(w.system, w, "s", P, function() end):find("#2", 1, true))
    assert.truthy(err_of(w.system, w, "s", q, nil):find("#3", 1, true))
    assert.truthy(err_of(w.system, w, "s", q, 42):find("#3", 1, true))
    assert.truthy(err_of(w.system, w, "s", q, {}):find("#3", 1, true))
    assert.truthy(err_of(w.system, w, "s", q, "Position.x += k", 5):find("#4", 1, true))
    assert.truthy(err_of(w.remove_system, w, 42):find("#1", 1, true))
    assert.truthy(err_of(w.remove_system, w, {}):find("#1", 1, true))
    local other = ecs.world()
    local oq = other:query(other:component("Position", { "x" }))
    err_of(w.system, w, "s", oq, function() end)      -- a query of another world
    other:close()
    assert.same({}, w:systems())
  end)

  it("raises attempt to use a closed world after close", function()
    w:system("s", q, function() end)
    w:close()
    for _, call in ipairs({
      function() return w:system("t", q, function() end) end,
      function() return w:systems() end,
      function() return w:remove_system("s") end,
      function() return w:stats() end,
      function() return w:reset_stats() end,
      function() return w:update(0) end,
    }) do
      assert.truthy(tostring(err_of(call)):find("attempt to use a closed world", 1, true))
    end
  end)
end)

describe("errors inside systems", function()
  local w, P, V, q, es
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f64", "y:f64" })
    V = w:component("Velocity", { "dx:f64", "dy:f64" })
    q = w:query(P, V)
    es = w:create(30)
    for i, e in ipairs(es) do P:add(e, 0, 0); V:add(e, i, -i) end
  end)
  after_each(function()
    if pcall(w.count, w) then
      assert.is_true(w:check())
      w:close()
    end
  end)

  local tbl = setmetatable({}, { __tostring = function() return "a table error" end })
  local values = { { "a string", "boom" }, { "a table", tbl }, { "nil", nil } }
  local where = { { "first", 1 }, { "middle", 15 }, { "last", 30 } }

  -- the world works: structural changes, full iteration, counts, update
  local function usable()
    local n = 0
    for _ in q:entities() do n = n + 1 end
    assert.equals(q:count(), n)
    local total = 0
    for k, x in q:columns("Position.x") do
      for i = 1, k do x[i] = x[i] + 0 end
      total = total + k
    end
    assert.equals(n, total)
    local e = w:create()
    P:add(e); V:add(e)
    assert.equals(n + 1, q:count())
    V:remove(e)
    assert.equals(n, q:count())
    w:destroy(e)
    assert.is_true(w:check())
  end

  for _, v in ipairs(values) do
    for _, at in ipairs(where) do
      it(("propagates %s raised at the %s entity of q:entities() unchanged"):format(v[1], at[1]), function()
        local armed = true
        w:system("fail", q, function()
          local k = 0
          for e in q:entities() do
            k = k + 1
            P:set_field(e, "x", 1)
            if armed and k == at[2] then error(v[2], 0) end
          end
        end)
        local ok, err = pcall(w.update, w, 0.1)
        assert.is_false(ok)
        assert.is_true(rawequal(v[2], err))
        usable()
        armed = false
        w:update(0.1)                      -- update again works
        for _, e in ipairs(es) do assert.equals(1, P:field(e, "x")) end
        usable()
      end)

      it(("propagates %s raised at the %s chunk row of q:columns() unchanged"):format(v[1], at[1]), function()
        local armed = true
        w:system("fail", q, function(dt, query)
          for n, x, dx in query:columns("Position.x", "Velocity.dx:in") do
            for i = 1, n do
              x[i] = x[i] + dx[i] * dt
              if armed and i == at[2] then error(v[2], 0) end
            end
          end
        end)
        local ok, err = pcall(w.update, w, 1)
        assert.is_false(ok)
        assert.is_true(rawequal(v[2], err))
        usable()
        armed = false
        w:update(1)
        usable()
      end)
    end
  end

  it("propagates an error raised outside any loop, and later updates work", function()
    local fail = true
    local after = 0
    w:system("fail", q, function() if fail then error(tbl) end end)
    w:system("after", q, function() after = after + 1 end)
    local ok, err = pcall(w.update, w, 0)
    assert.is_false(ok)
    assert.equals(tbl, err)
    fail = false
    w:update(0)
    assert.is_true(after >= 1)
    usable()
  end)

  it("keeps a runtime error's message and position", function()
    w:system("fail", q, function() local t = nil; return t.field end)
    local msg = err_of(w.update, w, 0)
    assert.truthy(tostring(msg):find("system_spec.lua:%d+: attempt to index"), tostring(msg))
    usable()
  end)

  it("lets a system destroy every entity of its query", function()
    w:system("doom", q, function()
      for e in q:entities() do w:destroy(e) end
    end)
    w:system("after", q, "Position.x += 1")
    w:update(0)
    assert.equals(0, q:count())
    assert.equals(0, w:count())
    usable()
  end)

  it("survives a system that closes the world", function()
    w:system("close", q, function() w:close() end)
    w:system("after", q, "Position.x += 1")
    local ok, err = pcall(w.update, w, 0)
    if not ok then
      assert.truthy(tostring(err):find("attempt to use a closed world", 1, true), tostring(err))
    end
    assert.truthy(tostring(err_of(w.count, w)):find("attempt to use a closed world", 1, true))
  end)

  it("survives a system that removes systems during the update", function()
    local log = {}
    w:system("a", q, function() log[#log + 1] = "a"; w:remove_system("a"); w:remove_system("c") end)
    w:system("b", q, function() log[#log + 1] = "b" end)
    w:system("c", q, function() log[#log + 1] = "c" end)
    pcall(w.update, w, 0)          -- allowed or refused: either way consistent
    local names = w:systems()
    log = {}
    w:update(0)
    assert.same(names, log)
    usable()
  end)

  it("fails cleanly when a system yields, and stays usable", function()
    w:system("yield", q, function() coroutine.yield(1) end)
    local co = coroutine.create(function() w:update(0) end)
    local ok, err = coroutine.resume(co)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("yield", 1, true), tostring(err))
    w:remove_system("yield")
    w:system("ok", q, "Position.x += 1")
    w:update(0)
    usable()
  end)
end)

-- A native system needs a C plugin built with ecs_lua_push_native; the
-- specs below run only when one of the example plugins provides one.
describe("native systems", function()
  local plugin
  for _, name in ipairs({ "ecs.move", "ecs.native", "ecs.systems" }) do
    local ok, m = pcall(require, name)
    if ok then plugin = m; break end
  end

  if not plugin then
    pending("no example plugin exposes a native system")
    return
  end
end)
