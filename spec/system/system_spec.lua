--[[
system_spec.lua -- world:system, world:update, world:systems,
world:remove_system, world:stats and world:reset_stats (docs/queries.md):
Lua and expression systems, the order they run in, parameters read at each
update, errors inside a system at the first, middle and last entity coming
out with their original value and leaving the world usable (RELIABILITY
R22-R24), and a native system from a C plugin when one is available.
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")

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
  after_each(function() release(w) end)

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

  it("counts wall time in stats, also while a system waits", function()
    -- the wait is in a child process: no processor time of this one
    w:system("waits", function() os.execute("sleep 0.2") end)
    w:update(0)
    local s = w:stats()[1]
    assert.equals("waits", s.name)
    assert.is_true(s.seconds >= 0.19, "seconds = " .. tostring(s.seconds))
  end)

  it("rejects bad arguments, naming them", function()
    local function system_err(...)
      local args = compat.pack(...)
      return err_of(function() return (w:system(compat.unpack(args, 1, args.n))) end) -- (no tail call: LuaJIT)
    end
    local fn = function() end
    local cases = {
      { { 42, q, fn }, "#1" }, { { nil, q, fn }, "#1" }, { { {}, q, fn }, "#1" },
      { { "s", nil, fn }, "#2" }, { { "s", P, fn }, "#2" }, { { "s", w, fn }, "#2" },
      { { "s", q, nil }, "#3" }, { { "s", q, 42 }, "#3" }, { { "s", q, {} }, "#3" },
      { { "s", q, "Position.x += k", 5 }, "#4" },
    }
    for _, c in ipairs(cases) do
      local msg = system_err(compat.unpack(c[1], 1, 4))
      assert.truthy(msg:find("bad argument " .. c[2] .. " to 'system'", 1, true), msg)
    end
    for _, v in ipairs({ 42, {}, true }) do
      local msg = err_of(function() return (w:remove_system(v)) end)
      assert.truthy(msg:find("bad argument #1 to 'remove_system'", 1, true), msg)
    end
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
  after_each(function() release(w) end)

  local tbl = setmetatable({}, { __tostring = function() return "a table error" end })
  local values = { { "a string", "boom" }, { "a table", tbl }, { "nil", nil } }
  -- a string comes out naming the system, with its traceback; any other
  -- value unchanged
  local function same_error(raised, err)
    if type(raised) ~= "string" then return assert.is_true(rawequal(raised, err)) end
    local head = "system 'fail': " .. raised .. "\nstack traceback:\n"
    assert.equals(head, err:sub(1, #head))
  end
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
        same_error(v[2], err)
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
        same_error(v[2], err)
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

  -- world:update ran a Lua system in a protected call and raised its error
  -- again: a traceback handler given to xpcall saw world:update's frames,
  -- not the system's, and the message did not say which system failed
  it("names the system in a string error and keeps the system's frames", function()
    local function helper(n)
      if n == 0 then error("deep trouble") end
      return helper(n - 1) + 1
    end
    local called_at
    w:system("ai", q, function()
      called_at = debug.getinfo(1, "l").currentline; local r = helper(2)
      return r
    end)
    local ok, tb = xpcall(function() w:update(0) end, debug.traceback) -- (5.1: no arguments)
    assert.is_false(ok)
    assert.matches("^system 'ai': [^\n]*system_spec%.lua:%d+: deep trouble\nstack traceback:\n", tb)
    -- the system's own line (where it called helper) and helper's frames
    assert.truthy(tb:find("system_spec.lua:" .. called_at .. ":", 1, true), tb)
    local _, helpers = tb:gsub("in [%w ]*'helper'", "")
    assert.is_true(helpers >= 3, tb)
    -- pcall gets the same text; the world works
    local msg = err_of(w.update, w, 0)
    assert.equals(tb:match("^[^\n]*"), msg:match("^[^\n]*"))
    assert.truthy(msg:find("system_spec.lua:" .. called_at .. ":", 1, true), msg)
    usable()
    -- the library's own errors inside a system are named the same way
    local dead = w:create()
    w:destroy(dead)
    w:replace_system("ai", q, function() P:set(dead, 1, 1) end)
    assert.matches("^system 'ai': [^\n]*Position:set: entity is not alive %(entity%(",
      err_of(w.update, w, 0))
    -- values that are not strings pass unchanged (numbers too)
    w:replace_system("ai", q, function() error(42, 0) end)
    assert.equals(42, err_of(w.update, w, 0))
    usable()
  end)

  it("names the observer in a string error and keeps the observer's frames", function()
    local function check(e)
      if P:field(e, "x") > 1 then error("too far", 0) end
    end
    local called_at
    P:on_set(function(e)
      called_at = debug.getinfo(1, "l").currentline; check(e)
    end)
    local e = es[1]
    local ok, tb = xpcall(function() P:set(e, 5, 0) end, debug.traceback)
    assert.is_false(ok)
    assert.matches("^on_set 'Position': too far\nstack traceback:\n", tb)
    assert.truthy(tb:find("system_spec.lua:" .. called_at .. ":", 1, true), tb)
    -- from a system: both names, both sets of frames
    local sys_at
    w:system("mover", q, function()
      sys_at = debug.getinfo(1, "l").currentline; P:set(e, 7, 0)
    end)
    ok, tb = xpcall(function() w:update(0) end, debug.traceback) -- (5.1: no arguments)
    assert.is_false(ok)
    assert.matches("^system 'mover': on_set 'Position': too far\nstack traceback:\n", tb)
    assert.truthy(tb:find("system_spec.lua:" .. called_at .. ":", 1, true), tb)
    assert.truthy(tb:find("system_spec.lua:" .. sys_at .. ":", 1, true), tb)
    -- observers of the transform and names are named after them
    local T = w.transform
    T:add(e)
    local o = T:on_set(function() error("no", 0) end)
    assert.matches("^on_set 'transform': no\n", err_of(function() T:set_local_position(e, 1, 2, 3) end))
    o:close()
    o = w.names:on_add(function() error("no", 0) end)
    assert.matches("^on_add 'names': no\n", err_of(function() w.names:set(e, "x") end))
    o:close()
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

-- The scheduler is the core's (include/system.h): the rules for changes made
-- while world:update runs, and what errors name.
describe("systems changed during an update", function()
  local w, P, q
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f64" })
    q = w:query(P)
    for _, e in ipairs(w:create(5)) do P:add(e, 0) end
  end)
  after_each(function() release(w) end)

  it("never runs a removed system again, not even later in the same update", function()
    local log = {}
    w:system("a", q, function() log[#log + 1] = "a"; w:remove_system("c") end)
    w:system("b", q, function() log[#log + 1] = "b" end)
    w:system("c", q, function() log[#log + 1] = "c" end)
    w:system("d", q, "Position.x += 1")
    w:update(0)
    assert.same({ "a", "b" }, log)
    assert.same({ "a", "b", "d" }, w:systems())
    assert.is_true(w:check())
    for e in q:entities() do assert.equals(1, P:field(e, "x")) end
  end)

  it("lets a system remove itself and reuse its name", function()
    local log = {}
    w:system("once", q, function()
      log[#log + 1] = "once"
      w:remove_system("once")
      w:system("once", q, function() log[#log + 1] = "again" end)
    end)
    w:update(0)
    assert.same({ "once" }, log)
    w:update(0)
    assert.same({ "once", "again" }, log)
    assert.same({ "once" }, w:systems())
    assert.equals("lua", w:stats()[1].kind)
    assert.equals(1, w:stats()[1].calls)
    assert.is_true(w:check())
  end)

  it("runs a system added during an update from the next update on", function()
    local log = {}
    w:system("a", q, function()
      log[#log + 1] = "a"
      if not w:systems()[2] then
        w:system("late", q, function() log[#log + 1] = "late" end)
      end
    end)
    w:update(0)
    assert.same({ "a" }, log)
    w:update(0)
    assert.same({ "a", "a", "late" }, log)
  end)

  it("names the system in the errors the library raises during update", function()
    local params = { speed = 1 }
    w:system("push", q, "Position.x += speed", params)
    params.speed = "fast"
    local msg = err_of(w.update, w, 0.1)
    assert.equals("world:update: system 'push': parameter 'speed' must be a number "
                  .. "(got string) at position 15", msg)
  end)

  it("raises a system's error after it closed the world, unchanged, and releases the world", function()
    local tbl = {}
    w:system("close", q, function() w:close(); error(tbl) end)
    local ok, err = pcall(w.update, w, 0)
    assert.is_false(ok)
    assert.is_true(rawequal(tbl, err))
    assert.equals("ecs.World (closed)", tostring(w))
  end)

  -- A finalizer that runs after the query's and before the world's (they
  -- run in the reverse order of their objects' creation) finds the system
  -- gone with its query, not a dangling one.
  it("drops a system whose query was collected before its world", function()
    local seen = {}
    local function make()
      local w2 = ecs.world()
      local P2 = w2:component("P", { "x:f64" })
      P2:add(w2:create(), 1)
      compat.finalizer(function()
        seen.ok, seen.err = pcall(w2.update, w2, 0)
        seen.systems = #w2:systems()
        seen.check = w2:check()
        w2:close()
      end)
      w2:system("s", w2:query(P2), "P.x += 1")
    end
    make()
    collectgarbage()
    collectgarbage()
    assert.is_true(seen.ok, tostring(seen.err))
    assert.equals(0, seen.systems)
    assert.is_true(seen.check)
  end)
end)

-- Native systems come from C plugins through ecs_lua_push_native; the
-- plugin plugins/motion.c provides integrate and damp.
describe("native systems (ecs.motion)", function()
  local motion = require("ecs.motion")
  local w, P, V, q, es, move
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f32", "y:f64" })
    V = w:component("Velocity", { "dx:f32", "dy:f64" })
    q = w:query(P, V)
    es = w:create(3000)
    for i, e in ipairs(es) do P:add(e, i, -i); V:add(e, i % 7, 0.5 * i) end
    move = motion.integrate("Position.x", "Velocity.dx:in", "Position.y", "Velocity.dy:in")
  end)
  after_each(function() release(w) end)

  local f32 = compat.f32

  -- what integrate computes, in Lua: f32 += f32 * (float)dt, f64 += f64 * dt
  local function expect(e, x, y, dt)
    local dx, dy = V:get(e)
    return f32(x + f32(dx * f32(dt))), y + dy * dt
  end

  it("runs once over the query with q:run and returns the entities processed", function()
    local want = {}
    for _, e in ipairs(es) do want[e] = { expect(e, P:field(e, "x"), P:field(e, "y"), 0.5) } end
    assert.equals(3000, q:run(move, 0.5))
    for _, e in ipairs(es) do assert.same(want[e], { P:get(e) }) end
  end)

  it("gives the same result over scattered rows (gathered and scattered back)", function()
    for i = 1, 3000, 3 do                      -- permute Velocity's rows
      local dx, dy = V:get(es[i])
      V:remove(es[i]); V:add(es[i], dx, dy)
    end
    for i = 2, 3000, 5 do w:destroy(es[i]) end
    local want = {}
    for _, e in ipairs(es) do
      if w:alive(e) then want[e] = { expect(e, P:field(e, "x"), P:field(e, "y"), 0.25) } end
    end
    assert.equals(q:count(), q:run(move, 0.25))
    for e, v in pairs(want) do assert.same(v, { P:get(e) }) end
  end)

  it("uses dt = 0 when none is given", function()
    local before = { P:get(es[10]) }
    q:run(move)
    assert.same(before, { P:get(es[10]) })
  end)

  it("runs as a system at each update, with update's dt", function()
    w:system("move", q, move)
    local want = {}
    for _, e in ipairs(es) do want[e] = { expect(e, P:field(e, "x"), P:field(e, "y"), 0.125) } end
    w:update(0.125)
    for _, e in ipairs(es) do assert.same(want[e], { P:get(e) }) end
    local st = w:stats()
    assert.equals(1, st[1].calls)
    assert.equals(3000, st[1].entities)
    assert.equals("string", type(st[1].kind))
  end)

  it("works on queries of two worlds (specs resolved per query)", function()
    local w2 = ecs.world()
    local V2 = w2:component("Velocity", { "dy:f64", "dx:f32" })   -- another layout
    local P2 = w2:component("Position", { "y:f64", "x:f32" })
    local e = w2:create()
    P2:add(e, 1, 2); V2:add(e, 10, 20)
    assert.equals(1, w2:query(V2, P2):run(move, 0.5))
    assert.same({ 6, 12 }, { P2:get(e) })
    q:run(move, 0)
    w2:close()
  end)

  it("damps a column (a native system with its own data)", function()
    local damp = motion.damp("Velocity.dy", 0.5)
    local dy = V:field(es[4], "dy")
    q:run(damp, 1)
    assert.equals(dy * 0.5, V:field(es[4], "dy"))
    collectgarbage(); collectgarbage()          -- the factor lives with the object
    q:run(damp, 1)
    assert.equals(dy * 0.25, V:field(es[4], "dy"))
  end)

  it("refuses a read-only (:in) target: native systems never write :in columns", function()
    local before = {}
    for _, e in ipairs(es) do before[e] = { P:get(e) } end
    for _, case in ipairs({
      { function() return motion.integrate("Position.x:in", "Velocity.dx:in") end,
        "motion.integrate: target 'Position.x:in' is read-only (:in)" },
      { function() return motion.integrate("Position.x", "Velocity.dx:in", "Position.y:in", "Velocity.dy") end,
        "motion.integrate: target 'Position.y:in' is read-only (:in)" },
      { function() return motion.damp("Velocity.dy:in", 0.5) end,
        "motion.damp: target 'Velocity.dy:in' is read-only (:in)" },
    }) do
      local msg = err_of(case[1])
      assert.truthy(msg:find(case[2], 1, true), msg)
    end
    for _, e in ipairs(es) do assert.same(before[e], { P:get(e) }) end
  end)

  -- The same systems over a fresh world (rows contiguous: columns used in
  -- place) and a churned one (components removed and re-added: rows
  -- gathered into 256-row blocks and scattered back) give the same values,
  -- and :in columns never change.
  it("gives the same result in place and gathered, and leaves :in columns alone", function()
    local function build(churn)
      local w2 = ecs.world()
      local P2 = w2:component("Position", { "x:f32", "y:f64" })
      local V2 = w2:component("Velocity", { "dx:f32", "dy:f64" })
      local list = w2:create(2000)
      for i, e in ipairs(list) do P2:add(e, i, -i); V2:add(e, i % 7, 0.5 * i) end
      if churn then
        for i = 1, #list, 3 do
          local e = list[i]
          local dx, dy = V2:get(e)
          V2:remove(e); V2:add(e, dx, dy)
          if i % 5 == 1 then
            local x, y = P2:get(e)
            P2:remove(e); P2:add(e, x, y)
          end
        end
      end
      return { w = w2, P = P2, V = V2, es = list, q = w2:query(P2, V2) }
    end
    local fresh, churned = build(false), build(true)
    local natives = {
      move,
      motion.integrate("Position.x", "Position.x"),          -- one field, written twice
      motion.integrate("Position.y", "Position.y:in"),       -- read through an alias
      motion.integrate("Position.x", "Velocity.dx"),         -- a rate left writable
      motion.integrate("Velocity.dx", "Position.x:in"),      -- then changed on purpose
      motion.damp("Position.y", 0.5),
    }
    local function values(t, M)                 -- every value, in creation order
      local out = {}
      for i, e in ipairs(t.es) do out[i] = { M:get(e) } end
      return out
    end
    for frame = 1, 3 do
      for k, native in ipairs(natives) do
        for _, t in ipairs({ fresh, churned }) do
          local vin = values(t, t.V)
          assert.equals(2000, t.q:run(native, 0.125 * frame))
          if k ~= 5 then                         -- Velocity only read: unchanged
            assert.same(vin, values(t, t.V))
          end
        end
        assert.same(values(fresh, fresh.P), values(churned, churned.P))
        assert.same(values(fresh, fresh.V), values(churned, churned.V))
      end
    end
    release(fresh.w)
    release(churned.w)
  end)

  it("rejects specs that do not resolve against the query", function()
    local Dead = w:component("Dead", { "t" })
    local q2 = w:query({ P, without = { Dead } })
    local before = {}
    for _, e in ipairs(es) do before[e] = { P:get(e) } end
    for _, native in ipairs({
      motion.integrate("Position.z", "Velocity.dx:in"),
      motion.integrate("Nope.x", "Velocity.dx:in"),
      motion.integrate("Dead.t", "Position.x:in"),
      motion.integrate("Position.x", "Velocity.dx:in"),          -- Velocity not a term of q2
    }) do
      local ok, msg = pcall(q2.run, q2, native, 1)
      assert.is_false(ok)
      assert.equals("string", type(msg))
      ok = pcall(w.system, w, "bad", q2, native)
      if ok then assert.is_false(pcall(w.update, w, 1)); w:remove_system("bad") end
    end
    assert.same({}, w:systems())
    for _, e in ipairs(es) do assert.same(before[e], { P:get(e) }) end
  end)

  it("rejects values that are not native systems", function()
    for _, v in ipairs({ 1, "move", {}, print, P, q, w }) do
      local msg = err_of(function() return (q:run(v, 1)) end) -- no tail call: LuaJIT names no function there
      assert.truthy(msg:find("bad argument #1 to 'run'", 1, true), msg)
    end
    assert.truthy(err_of(function() return (q:run(move, "x")) end):find("bad argument #2 to 'run'", 1, true))
    assert.truthy(err_of(function() return (motion.integrate("Position.x")) end):find("motion.integrate", 1, true))
  end)

  it("raises attempt to use a closed world from q:run after close", function()
    w:close()
    assert.truthy(err_of(function() return (q:run(move, 1)) end):find("attempt to use a closed world", 1, true))
  end)
end)
