--[[
callback_spec.lua -- errors and yields inside callbacks (RELIABILITY R22,
R24). For every function that calls back into Lua -- message handlers
(lua/ecs/message.lua), Lua systems run by world:update, the functions of
q:each and q:each_chunk, and the loops q:entities(), q:columns(),
world:entities(), component:entities(), transform:children() -- an error raised at the first, middle and last
entity comes out as the original error object (a string, a table with
__tostring, nil; a Lua system's string error names the system and carries
its traceback), and the world is usable afterwards: consistent, not
locked, the same query iterates fully. A coroutine.yield inside a callback
that C calls fails cleanly ("attempt to yield across a C-call boundary")
and the coroutine stays usable; inside loops driven by Lua it just works.
]]
local ecs = require("ecs")
local message = require("ecs.message")
local err_of = require("spec.support.err_of")

local N = 9
local AT = { first = 1, middle = 5, last = N }

local function error_objects()
  local t = setmetatable({}, { __tostring = function() return "a table error" end })
  return { { "string", "boom" }, { "table with __tostring", t }, { "nil", nil } }
end

-- A world with N entities having P (and a transform chain for messages).
local function fixture()
  local w = ecs.world()
  local P = w:component("P", { "x:f32", "s:lua" })
  local es = w:create(N)
  for i, e in ipairs(es) do
    P:add(e, i, { i })
    w.transform:add(e)
    if i > 1 then w.transform:set_parent(e, es[i - 1]) end
  end
  return w, P, es
end

-- After the error: consistent, structural changes work, loops complete.
local function usable(w, P, q)
  assert.is_true(w:check())
  local e = w:create()
  P:add(e, 0, nil)
  assert.is_true(P:remove(e))
  assert.is_true(w:destroy(e))
  local n = 0
  for _ in P:entities() do n = n + 1 end
  assert.equals(P:count(), n)
  if q then
    local m = 0
    for _ in q:entities() do m = m + 1 end
    assert.equals(q:count(), m)
    local rows = 0
    for k in q:columns("P.x") do rows = rows + k end
    assert.equals(q:count(), rows)
    assert.equals(q:count(), q:apply("P.x += 0"))
  end
  assert.is_true(w:check())
end

-- Runs body(raise) where raise(i) throws obj when i is the chosen position;
-- asserts the same object comes out and the world is usable. With named
-- (a system's errors), a string comes out as "<named>: <string>" followed
-- by the traceback of the system's frames; other values unchanged.
local function each_case(name, body, named)
  for pos, at in pairs(AT) do
    for _, eo in ipairs(error_objects()) do
      it(name .. ": " .. eo[1] .. " at the " .. pos .. " entity", function()
        local w, P, es = fixture()
        local q = w:query(P)
        local function raise(i)
          if i == at then error(eo[2], 0) end
        end
        local ok, err = pcall(body, w, P, es, q, raise)
        assert.is_false(ok)
        if named and type(eo[2]) == "string" then
          local head = named .. ": " .. eo[2] .. "\nstack traceback:\n"
          assert.equals(head, err:sub(1, #head))
        else
          assert.is_true(rawequal(err, eo[2]), "error object changed: " .. tostring(err))
        end
        usable(w, P, q)
        w:close()
      end)
    end
  end
end

describe("errors inside callbacks", function()
  each_case("message handler (send)", function(w, P, es, _, raise)
    local bus = message.new(w)
    local i = 0
    bus:on(P, "hit", function() i = i + 1 raise(i) end)
    bus:send(es[1], "hit")
  end)

  each_case("message handler (send_up)", function(w, _, es, _, raise)
    local bus = message.new(w)
    local i = 0
    bus:on("P", "hit", function() i = i + 1 raise(i) end)
    bus:send_up(es[N], "hit")
  end)

  each_case("world:entities loop", function(w, _, _, _, raise)
    local i = 0
    for _ in w:entities() do i = i + 1 raise(i) end
  end)

  each_case("component:entities loop", function(_, P, _, _, raise)
    local i = 0
    for _ in P:entities() do i = i + 1 raise(i) end
  end)

  each_case("transform:children loop", function(w, _, es, _, raise)
    local T, i = w.transform, 0
    for _, e in ipairs(es) do T:set_parent(e, es[1] == e and ecs.null or es[1]) end
    for _ in T:children(es[1]) do i = i + 1 raise(i + 1) end
    raise(1) -- the first entity is the parent itself
  end)

  each_case("query:entities loop", function(w, _, _, q, raise)
    local i = 0
    for _ in q:entities() do i = i + 1 raise(i) end
    assert(w)
  end)

  each_case("query:columns loop, inside the chunk", function(_, _, _, q, raise)
    for n, x in q:columns("P.x") do
      for i = 1, n do x[i] = -1 raise(i) end
    end
  end)

  each_case("q:each function", function(_, _, _, q, raise)
    local i = 0
    q:each(function(_, x) i = i + 1 raise(i) return x + 1 end, "P.x")
  end)

  each_case("q:each_chunk function, inside the chunk", function(_, _, _, q, raise)
    q:each_chunk(function(n, x) for i = 1, n do x[i] = -1 raise(i) end end, "P.x")
  end)

  each_case("Lua system over a query (world:update)", function(w, _, _, q, raise)
    w:system("s", q, function(dt, sq)
      assert(dt == 0.5)
      local i = 0
      for _ in sq:entities() do i = i + 1 raise(i) end
    end)
    w:update(0.5)
  end, "system 's'")

  each_case("Lua system without a query (world:update)", function(w, _, _, _, raise)
    local calls = 0
    w:system("s", function() calls = calls + 1 raise(calls) end)
    for _ = 1, N do w:update(0.1) end
  end, "system 's'")

  it("a system that failed runs again on the next update, and later systems too", function()
    local w, P = fixture()
    local q = w:query(P)
    local runs, after, fail = 0, 0, true
    w:system("a", q, function() runs = runs + 1 if fail then error("once", 0) end end)
    w:system("b", function() after = after + 1 end)
    assert.equals("system 'a': once", err_of(function() w:update(0.1) end):match("^[^\n]*"))
    fail = false
    w:update(0.1)
    assert.equals(2, runs)
    assert.equals(1, after)
    usable(w, P, q)
    w:close()
  end)

  it("columns written before the error are written back (Lua 5.4; README \"Lua versions\")", function()
    local w, P = fixture()
    local q = w:query(P)
    local before = {}
    for e in P:entities() do before[e] = (P:get(e)) end
    pcall(function()
      for n, x in q:columns("P.x") do
        for i = 1, n do x[i] = 100 end
        error("after writing")
      end
    end)
    -- older Luas have no to-be-closed variables: the chunk in progress is lost
    local old = require("spec.support.lua").version < "5.4"
    for e in P:entities() do assert.equals(old and before[e] or 100, (P:get(e))) end
    w:close()
  end)
end)

describe("coroutine.yield inside callbacks", function()
  local YIELD = "attempt to yield across .*C%-call boundary" -- each Lua words it its own way

  it("inside a Lua system (called from C) fails cleanly and the coroutine goes on", function()
    local w, P = fixture()
    local q = w:query(P)
    w:system("y", q, function() coroutine.yield("from system") end)
    local co = coroutine.create(function()
      local ok, err = pcall(w.update, w, 0.1)
      coroutine.yield(ok, err)
      return "finished"
    end)
    local ok, ok2, err = coroutine.resume(co)
    assert.is_true(ok)
    assert.is_false(ok2)
    assert.matches(YIELD, err)
    assert.same({ true, "finished" }, { coroutine.resume(co) })
    assert.is_true(w:remove_system("y"))
    usable(w, P, q)
    w:close()
  end)

  it("inside q:each (fn called from C) fails cleanly and the coroutine goes on", function()
    local w, P = fixture()
    local q = w:query(P)
    local co = coroutine.create(function()
      local ok, err = pcall(q.each, q, function(e) coroutine.yield(e) end)
      coroutine.yield(ok, err)
      return "finished"
    end)
    local ok, ok2, err = coroutine.resume(co)
    assert.is_true(ok)
    assert.is_false(ok2)
    assert.matches(YIELD, err)
    assert.same({ true, "finished" }, { coroutine.resume(co) })
    usable(w, P, q)
    w:close()
  end)

  it("inside q:each_chunk (fn called from C) fails cleanly and the coroutine goes on", function()
    local w, P = fixture()
    local q = w:query(P)
    local co = coroutine.create(function()
      local ok, err = pcall(q.each_chunk, q, function(n, x)
        for i = 1, n do x[i] = 7 end
        coroutine.yield(n)
      end, "P.x")
      coroutine.yield(ok, err)
      return "finished"
    end)
    local ok, ok2, err = coroutine.resume(co)
    assert.is_true(ok)
    assert.is_false(ok2)
    assert.matches(YIELD, err)
    assert.same({ true, "finished" }, { coroutine.resume(co) })
    for e in P:entities() do assert.equals(7, (P:get(e))) end -- written back before the error
    usable(w, P, q)
    w:close()
  end)

  it("inside Lua-driven loops works, and a loop abandoned in a dead coroutine releases the world", function()
    local w, P = fixture()
    local q = w:query(P)
    local loops = {
      function() for e in w:entities() do coroutine.yield(e) end end,
      function() for e in P:entities() do coroutine.yield(e) end end,
      function() for e in q:entities() do coroutine.yield(e) end end,
      function()
        for n, x in q:columns("P.x") do for i = 1, n do x[i] = 7 coroutine.yield(i) end end
      end,
    }
    for _, loop in ipairs(loops) do
      local co = coroutine.wrap(loop)
      local n = 0
      while co() ~= nil do n = n + 1 end
      assert.equals(N, n)
      -- abandoned half way: the coroutine is collected with the loop open
      local co2 = coroutine.create(loop)
      assert.is_true(coroutine.resume(co2))
      co2 = nil -- luacheck: ignore
      collectgarbage()
      collectgarbage()
      usable(w, P, q)
    end
    w:close()
  end)

  it("inside a message handler works (the bus is Lua)", function()
    local w, P, es = fixture()
    local bus = message.new(w)
    bus:on(P, "ping", function(e) coroutine.yield(e) end)
    local co = coroutine.wrap(function() return bus:send(es[1], "ping") end)
    local seen = 0
    local r = co()
    while ecs.is_entity(r) do seen = seen + 1 r = co() end
    assert.equals(N, seen)
    assert.equals(N, r)
    usable(w, P, nil)
    w:close()
  end)
end)
