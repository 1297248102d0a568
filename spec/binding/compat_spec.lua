--[[
What differs between the Luas ecs supports (README "Lua versions"), run on
every one of them (Lua 5.1, 5.2, 5.3, 5.4, LuaJIT: this file is in the
subset they share): q:each_chunk writes back after every call, also when
fn raises; q:columns writes back at each step and at the loop's end, and
on `break` only where the generic for closes its fourth value (5.4);
numbers of i64 fields and entity ids before 5.3.
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")

local N = 2500 -- three chunks: 1024, 1024, 452

describe("on " .. _VERSION .. (compat.jit and " (LuaJIT)" or ""), function()
  local w, P, q, es
  before_each(function()
    w = ecs.world()
    P = w:component("P", { "x:f64", "k:i32" })
    q = w:query(P)
    es = {}
    for i = 1, N do
      es[i] = w:create()
      P:add(es[i], i, i)
    end
  end)
  after_each(function() w:close() end)

  local function xs()
    local t = {}
    for i = 1, N do t[i] = P:field(es[i], "x") end
    return t
  end

  describe("q:each_chunk(fn, spec, ...)", function()
    it("calls fn(n, columns...) once per chunk and writes each chunk back after its call", function()
      local seen, during = {}, {}
      local visited = q:each_chunk(function(n, e, x, k)
        seen[#seen + 1] = n
        -- the chunks before this one are written back already
        during[#during + 1] = P:field(es[1], "x")
        for i = 1, n do
          assert.equals(P:field(e[i], "x"), x[i])
          x[i] = -x[i]
          k[i] = k[i] * 2
        end
      end, "entity", "P.x", "P.k")
      assert.equals(N, visited)
      assert.same({ 1024, 1024, 452 }, seen)
      assert.same({ 1, -1, -1 }, during)
      for i = 1, N do
        assert.equals(-i, P:field(es[i], "x"))
        assert.equals(2 * i, P:field(es[i], "k"))
      end
    end)

    it("writes back the chunk fn was given when fn raises, and the error comes out unchanged", function()
      local calls = 0
      local marker = {}
      local ok, err = pcall(q.each_chunk, q, function(n, x)
        calls = calls + 1
        for i = 1, n do x[i] = 0 end
        if calls == 2 then error(marker) end
      end, "P.x")
      assert.is_false(ok)
      assert.equals(marker, err)
      local t = xs()
      assert.equals(0, t[1])     -- chunk 1: written after its call
      assert.equals(0, t[1025])  -- chunk 2: written although fn raised
      assert.equals(0, t[2048])
      assert.equals(2049, t[2049]) -- chunk 3: never reached
      -- the world is usable and the query runs again
      assert.equals(N, q:each_chunk(function() end, "P.x:in"))
    end)
  end)

  describe("q:columns(spec, ...)", function()
    it("writes each chunk back at the next step and the last one at the loop's end", function()
      local steps = 0
      for n, x in q:columns("P.x") do
        steps = steps + 1
        -- the chunk before this one was written back at this step
        if steps > 1 then assert.equals(-1, P:field(es[1], "x")) end
        for i = 1, n do x[i] = -x[i] end
      end
      assert.equals(3, steps)
      local t = xs()
      for i = 1, N do assert.equals(-i, t[i]) end
    end)

    it("on break, writes back the chunk in progress on Lua 5.4 only (elsewhere its writes are lost)", function()
      local steps = 0
      for n, x in q:columns("P.x") do
        steps = steps + 1
        for i = 1, n do x[i] = 0 end
        if steps == 2 then break end
      end
      local t = xs()
      assert.equals(0, t[1]) -- chunk 1: written back at step 2, on every Lua
      if compat.version >= "5.4" then
        assert.equals(0, t[1025]) -- the generic for closed its fourth value
      else
        assert.equals(1025, t[1025]) -- README "Lua versions": no to-be-closed variables
      end
      assert.equals(2049, t[2049])
      -- a loop left early does not block the next one
      local total = 0
      for n in q:columns("P.x:in") do total = total + n end
      assert.equals(N, total)
    end)

    it("on an error in the loop body, writes back the chunk in progress on Lua 5.4 only", function()
      local ok = pcall(function()
        for n, x in q:columns("P.x") do
          for i = 1, n do x[i] = 7 end
          error("stop")
        end
      end)
      assert.is_false(ok)
      assert.equals(compat.version >= "5.4" and 7 or 1, P:field(es[1], "x"))
    end)
  end)

  describe("numbers", function()
    it("i64 fields hold integers exact up to 2^53 on every Lua", function()
      local I = w:component("I", { "a:i64", "c:u32" })
      local e = w:create()
      I:add(e, 2 ^ 53, 4294967295)
      assert.equals(2 ^ 53, I:field(e, "a"))
      assert.equals(4294967295, I:field(e, "c"))
      I:set(e, -(2 ^ 53), 0)
      assert.equals(-(2 ^ 53), I:field(e, "a"))
      assert.equals("integer", compat.math_type(I:field(e, "a")))
      -- a non-integral number is refused for an integer field on every Lua
      assert.is_false(pcall(I.set, I, e, 0.5, 0))
    end)

    it("entity ids, counts and indices are integral numbers", function()
      local e = w:create()
      assert.equals("integer", compat.math_type(ecs.id(e)))
      assert.equals("integer", compat.math_type(w:count()))
      assert.equals(N + 1, w:count())
      assert.equals(e, ecs.entity(ecs.id(e), ecs.generation(e)))
    end)
  end)

  -- LuaJIT before its fix of 2023-09 (Debian 12's) kept the observers'
  -- thread as its current thread when pcall caught an error a method
  -- raised after one of its observers ran; the next trace exit then wrote
  -- into that thread's stack (a crash within a few thousand rounds of
  -- this loop before the binding's fix; src/lua/binding.h)
  it("says so when ecs.core was built for another Lua, with the loader's words", function()
    -- the dynamic linker's refusal of a module built for another Lua, as
    -- require reports it; the front end is loaded afresh over it
    local saved = { ecs = package.loaded.ecs, core = package.loaded["ecs.core"],
                    preload = package.preload["ecs.core"] }
    package.loaded.ecs, package.loaded["ecs.core"] = nil, nil
    package.preload["ecs.core"] = function()
      error("error loading module 'ecs.core' from file './core.so':\n\t./core.so: undefined symbol: lua_absindex", 0)
    end
    local ok, err = pcall(require, "ecs")
    package.loaded.ecs, package.loaded["ecs.core"] = saved.ecs, saved.core
    package.preload["ecs.core"] = saved.preload
    assert.is_false(ok)
    assert.truthy(tostring(err):find("built for another Lua than this one (" .. _VERSION, 1, true), err)
    assert.truthy(tostring(err):find("undefined symbol: lua_absindex", 1, true), err)
    assert.truthy(tostring(err):find(compat.jit and "cmake -DECS_LUA=luajit" or "--lua-version=", 1, true), err)
    -- any other failure passes as it is
    package.loaded.ecs, package.loaded["ecs.core"] = nil, nil
    package.preload["ecs.core"] = function() error("no such file", 0) end
    ok, err = pcall(require, "ecs")
    package.loaded.ecs, package.loaded["ecs.core"] = saved.ecs, saved.core
    package.preload["ecs.core"] = saved.preload
    assert.is_false(ok)
    assert.equals("no such file", err)
  end)

  it("gives every loop of an iterator the same step function", function()
    -- on LuaJIT and Lua 5.1 lua_pushcfunction makes a new closure each call,
    -- and a trace guards on the iterator's identity: a new step function per
    -- loop left the compiled frame loop at every frame
    local other = ecs.world()
    assert.are.equal((w:entities()), (other:entities()))
    assert.are.equal((q:entities()), (other:query(other:component("O", { "v:f64" })):entities()))
    other:close()
  end)

  describe("a method that raises after its observer ran", function()
    local function rounds(call)
      local fail, seen = false, 0
      local o = P:on_set(function() seen = seen + 1; if fail then error("boom") end end)
      local t = {}
      for i = 1, 1000 do t[i] = (i * 7919) % 13 end
      local function hot(n) -- a loop the JIT compiles, with side exits
        local s = 0
        for i = 1, #t do if t[i] > n then s = s + 1 else s = s - 0.5 end end
        return s
      end
      local acc = 0
      for k = 1, 3000 do
        fail = true
        local ok, err = call(k)
        assert(not ok and tostring(err):find("boom"), err)
        acc = acc + hot(k % 13)
        fail = false
        P:set_field(es[1], "x", k)
      end
      o:close()
      assert.equals(6000, seen)
      assert.equals(3000, P:field(es[1], "x"))
      assert.is_true(w:check())
      return acc
    end

    it("leaves the interpreter consistent when pcall catches the error", function()
      local acc = rounds(function(k) return pcall(P.set_field, P, es[1], "x", k) end)
      assert.equals(579577.5, acc)
    end)

    it("leaves it consistent when the method ran in a coroutine", function()
      rounds(function(k)
        local co = coroutine.create(function() P:set_field(es[1], "x", k) end)
        return coroutine.resume(co)
      end)
    end)
  end)
end)
