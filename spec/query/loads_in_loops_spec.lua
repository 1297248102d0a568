--[[
loads_in_loops_spec.lua -- a whole-world load made inside a loop body
(docs/queries.md, "Loads inside loops"): world:restore (also with migrate),
j:undo and world:apply_delta inside q:columns, q:each_chunk, q:each,
q:entities, nested loops and Lua systems. The load wins: the loop drops
what it would have written back (also when the body wrote nothing, and
when the body raises or breaks after the load), ends at its next step, and
completes no changed/added pass, so after the loop the world equals what
was loaded, and change queries report the load. q:pointers refuses loads
instead (its pointers are the columns). In the common subset: every Lua.
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")
local err_of = require("spec.support.err_of")

local N = 3000 -- three q:columns chunks (1024 rows), twelve q:each chunks

-- A world of N entities with P (x = k, y = -k) and V (dx = 1), and its query.
local function fixture()
  local f = { w = ecs.world() }
  f.P = f.w:component("P", { "x:f64", "y:f32" })
  f.V = f.w:component("V", { "dx:f64" })
  f.es = f.w:create(N)
  for k, e in ipairs(f.es) do
    f.P:add(e, k, -k)
    f.V:add(e, 1)
  end
  f.q = f.w:query(f.P, f.V)
  return f
end

-- The loads: each returns a table with prepare(f), which records the
-- state to go back to and changes the world away from it, and load(f),
-- made inside the loop; f.want is the hash the world must have after it.
local loads = {
  restore = {
    prepare = function(f)
      f.blob = f.w:snapshot()
      f.want = f.w:state_hash()
      for k, e in ipairs(f.es) do f.P:set(e, 100 + k, 0) end
    end,
    load = function(f) f.w:restore(f.blob) end,
  },
  ["restore with migrate"] = {
    prepare = function(f)
      f.blob = f.w:snapshot()
      f.want = f.w:state_hash()
      for k, e in ipairs(f.es) do f.P:set(e, 100 + k, 0) end
    end,
    load = function(f) f.w:restore(f.blob, { migrate = true }) end,
  },
  undo = {
    prepare = function(f)
      if f.j then f.j:close() end
      f.want = f.w:state_hash()
      f.j = f.w:journal()
      for k, e in ipairs(f.es) do f.P:set(e, 100 + k, 0) end
    end,
    load = function(f) f.j:undo() end,
  },
  apply_delta = {
    -- the world is a replica one delta behind: the delta brings it level
    prepare = function(f)
      local src = ecs.restore(f.w:snapshot())
      local j = src:journal()
      local SP = src:find_component("P")
      for k, e in ipairs(f.es) do SP:set(e, 200 + k, 1) end
      f.delta = j:delta()
      f.want = src:state_hash()
      j:close()
      src:close()
    end,
    load = function(f) f.w:apply_delta(f.delta) end,
  },
}
local order = { "restore", "restore with migrate", "undo", "apply_delta" }

describe("a whole-world load inside a loop body", function()
  for _, name in ipairs(order) do
    local L = loads[name]
    describe("(" .. name .. ")", function()
      local f
      before_each(function()
        f = fixture()
        L.prepare(f)
      end)
      after_each(function()
        if f.j then f.j:close() end
        f.w:close()
      end)

      it("wins over q:columns: the chunk is dropped, also when the body wrote nothing, and the loop ends", function()
        local chunks = 0
        for n, x in f.q:columns("P.x", "P.y") do
          chunks = chunks + 1
          assert.equals(1024, n)
          if chunks == 1 then L.load(f) end
          x[1] = -1 -- written after the load: into the old world's copy
        end
        assert.equals(1, chunks)
        assert.equals(f.want, f.w:state_hash())
        assert.is_true(f.w:check())
        -- the body wrote nothing at all
        L.prepare(f)
        for _ in f.q:columns("P.x", "V.dx") do L.load(f) end
        assert.equals(f.want, f.w:state_hash())
      end)

      it("wins over q:columns left by break or by an error after the load", function()
        local steps = 0
        for _, x in f.q:columns("P.x") do
          steps = steps + 1
          L.load(f)
          x[2] = 5
          if steps == 1 then break end
        end
        assert.equals(1, steps)
        assert.equals(f.want, f.w:state_hash())
        L.prepare(f)
        local boom = {}
        local ok, err = pcall(function()
          for _, x in f.q:columns("P.x") do
            L.load(f)
            x[1] = "not a number" -- would be a write-back error: dropped with the chunk
            error(boom)
          end
        end)
        assert.is_false(ok)
        assert.equals(boom, err)
        assert.equals(f.want, f.w:state_hash())
        -- the query is usable
        local total = 0
        for n in f.q:columns("P.x:in") do total = total + n end
        assert.equals(N, total)
      end)

      it("wins over q:each_chunk, which returns normally, and over fn's error after the load", function()
        local calls = 0
        local visited = f.q:each_chunk(function(n, x)
          calls = calls + 1
          L.load(f)
          for i = 1, n do x[i] = 0 end
        end, "P.x", "P.y")
        assert.equals(1, calls)
        assert.equals(1024, visited)
        assert.equals(f.want, f.w:state_hash())
        L.prepare(f)
        local boom = setmetatable({}, { __tostring = function() return "boom" end })
        local ok, err = pcall(f.q.each_chunk, f.q, function(_, x)
          L.load(f)
          x[1] = 1
          error(boom)
        end, "P.x")
        assert.is_false(ok)
        assert.equals(boom, err)
        assert.equals(f.want, f.w:state_hash())
      end)

      it("wins over q:each: that entity's results are dropped and the loop ends", function()
        local calls = 0
        local visited = f.q:each(function(_, x, y)
          calls = calls + 1
          if calls == 1 then L.load(f) end
          return x + 1, y - 1
        end, "P.x", "P.y")
        assert.equals(1, calls)
        assert.equals(1, visited)
        assert.equals(f.want, f.w:state_hash())
        assert.is_true(f.w:check())
      end)

      it("ends q:entities at the next step", function()
        local seen = 0
        for _ in f.q:entities() do
          seen = seen + 1
          if seen == 3 then L.load(f) end
        end
        assert.equals(3, seen)
        assert.equals(f.want, f.w:state_hash())
      end)

      it("wins over every loop it is nested in", function()
        local outer, inner = 0, 0
        for _, x in f.q:columns("P.x") do
          outer = outer + 1
          f.q:each(function(_, y)
            inner = inner + 1
            if inner == 2 then L.load(f) end
            return y -- the same value: a write, but the world's hash stays
          end, "P.y")
          x[1] = 9
        end
        assert.equals(1, outer)
        assert.equals(2, inner)
        assert.equals(f.want, f.w:state_hash())
      end)

      -- a new change query's first pass visits every match: completed, the
      -- next would visit none of them (the load was made before its end)
      it("completes no changed pass", function()
        local moved = f.w:query({ f.P, changed = { f.P } })
        for _ in moved:columns("P.x:in") do L.load(f) end
        assert.equals(N, moved:count())
        L.prepare(f)
        moved = f.w:query({ f.P, changed = { f.P } })
        for _ in moved:entities() do L.load(f) end
        assert.equals(N, moved:count())
        L.prepare(f)
        moved = f.w:query({ f.P, changed = { f.P } })
        moved:each(function() L.load(f) end)
        assert.equals(N, moved:count())
        L.prepare(f)
        moved = f.w:query({ f.P, changed = { f.P } })
        moved:each_chunk(function() L.load(f) end, "P.x")
        assert.equals(N, moved:count())
      end)

      it("wins over loops inside a Lua system, whose update completes no pass", function()
        local moved = f.w:query({ f.P, changed = { f.P } })
        f.w:system("roll", moved, function(_, q)
          for _, x in q:columns("P.x") do
            L.load(f)
            x[1] = 0
          end
        end)
        f.w:update(0)
        assert.equals(f.want, f.w:state_hash())
        assert.equals(N, moved:count())
        assert.is_true(f.w:check())
      end)
    end)
  end

  if compat.jit then
    it("is refused inside q:pointers (the pointers are the columns), naming the pin", function()
      local f = fixture()
      loads.undo.prepare(f)
      local blob = f.w:snapshot()
      local src = ecs.restore(blob)
      local j2 = src:journal()
      src:find_component("P"):set(f.es[1], 1, 1)
      local d = j2:delta()
      local pinned = "in use by a pointer loop in progress"
      for _, x in f.q:pointers("P.x") do
        assert.matches(pinned, err_of(function() return f.w:restore(blob) end), 1, true)
        assert.matches(pinned, err_of(function() return f.j:undo() end), 1, true)
        assert.matches(pinned, err_of(function() return f.w:apply_delta(d) end), 1, true)
        x[1] = 42
      end
      assert.equals(42, f.P:field(f.es[1], "x"))
      f.j:undo() -- after the loop: fine
      assert.equals(f.want, f.w:state_hash())
      j2:close()
      src:close()
      f.j:close()
      f.w:close()
    end)
  end
end)
