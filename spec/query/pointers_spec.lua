--[[
q:pointers(spec, ...) -- LuaJIT's zero-copy loop (docs/queries.md): typed FFI
pointers into the C columns, p[1] .. p[n] per chunk. While a loop is in
progress the columns' managers are pinned: a change that would move their
rows raises instead of leaving a pointer to freed or reused memory. On the
other Luas (no FFI) the method raises a clear error. In the common subset:
this file runs on every Lua.
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")
local err_of = require("spec.support.err_of")

local PINNED = "the component's columns are in use by a pointer loop in progress "
  .. "(make structural changes after it; a loop left early keeps them until it is closed)"

if not compat.jit then
  describe("q:pointers without LuaJIT", function()
    it("raises: this Lua has no FFI", function()
      local w = ecs.world()
      local P = w:component("P", { "x:f32" })
      P:add(w:create(), 1)
      local q = w:query(P)
      assert.matches("q:pointers: needs LuaJIT's FFI, which this Lua does not have "
        .. "(use q:columns or q:each_chunk)", err_of(function() return q:pointers("P.x") end), 1, true)
      -- and nothing is left pinned
      P:add(w:create(), 2)
      assert.equals(2, q:count())
      w:close()
    end)
  end)
  return
end

local ffi = require("ffi")

describe("q:pointers on LuaJIT", function()
  local w, P, V, q
  local N = 3000
  local es
  before_each(function()
    w = ecs.world()
    P = w:component("P", { "x:f32", "y:f64", "n:i32", "b:bool", "u:u8", "big:i64" })
    V = w:component("V", { "dx:f32", "dy:f64", "ref:entity", "any:lua" })
    es = {}
    for i = 1, N do
      es[i] = w:create()
      P:add(es[i], i, 2 * i, i, false, i % 256, i)
      V:add(es[i], 1, 0.5)
    end
    q = w:query(P, V)
  end)
  after_each(function() w:close() end)

  it("yields n and typed pointers, 1-based, that write the columns in place", function()
    local total, chunks = 0, 0
    for n, x, y, k, b, dx, dy in q:pointers("P.x", "P.y", "P.n", "P.b", "V.dx:in", "V.dy:in") do
      chunks = chunks + 1
      assert.is_true(n > 0)
      assert.is_true(ffi.istype("float *", x))
      assert.is_true(ffi.istype("double *", y))
      assert.is_true(ffi.istype("int32_t *", k))
      assert.is_true(ffi.istype("bool *", b))
      assert.is_true(ffi.istype("const float *", dx))
      for i = 1, n do
        x[i] = x[i] + dx[i]
        y[i] = y[i] + dy[i]
        k[i] = -k[i]
        b[i] = true
      end
      total = total + n
    end
    assert.equals(N, total)
    assert.equals(1, chunks) -- rows given together are one run: no copies
    for i = 1, N do
      local x, y, k, b = P:get(es[i])
      assert.equals(i + 1, x)
      assert.equals(2 * i + 0.5, y)
      assert.equals(-i, k)
      assert.equals(true, b)
    end
    assert.is_true(w:check())
  end)

  it("gives every loop the same step function, so that a frame loop's traces stay valid", function()
    -- LuaJIT guards on the iterator's identity: a new function per loop
    -- left the compiled frame loop at every frame (1.5x slower per entity)
    local f1, s1 = q:pointers("P.x")
    local f2, s2 = w:query(V):pointers("V.dx:in")
    assert.are.equal(f1, f2)
    assert.are_not.equal(s1, s2)
    s1:close(); s2:close()
  end)

  it("hands out every run in place, however short: rows that are not consecutive are chunks of their own", function()
    local w2 = ecs.world()
    local A = w2:component("A", { "v:f64" })
    local B = w2:component("B", { "w:f64" })
    local list = {}
    for i = 1, 600 do list[i] = w2:create(); A:add(list[i], i) end
    for i = 600, 1, -1 do B:add(list[i], 10 * i) end -- B's rows in the reverse order
    -- the query under half of A: never re-aligned, no two rows consecutive in both
    for _ = 1, 1200 do A:add(w2:create(), 0) end
    local qq = w2:query(A, B)
    local chunks, total = 0, 0
    for n, a, b in qq:pointers("A.v", "B.w:in") do
      chunks = chunks + 1
      total = total + n
      for i = 1, n do a[i] = a[i] + b[i] end
    end
    assert.equals(600, total)
    assert.equals(600, chunks) -- one row per run: no copy, nothing written back
    for i = 1, 600 do assert.equals(11 * i, A:field(list[i], "v")) end
    -- a loop over B alone is cut by B's rows only, in the query's order (its
    -- driver's, A's rows: docs/queries.md "Iteration order"), where B's rows
    -- descend: a run each; a query driven by B visits them in one run
    chunks = 0
    for n in qq:pointers("B.w") do chunks = chunks + 1; assert.equals(1, n) end
    assert.equals(600, chunks)
    chunks = 0
    for n in w2:query(B, A):pointers("B.w") do chunks = chunks + 1; assert.equals(600, n) end
    assert.equals(1, chunks)
    assert.is_true(w2:check())
    w2:close()
  end)

  -- Regression: runs under 32 rows were copied and written back when the
  -- loop moved on, over a set or a nested loop made meanwhile, so the
  -- result depended on how many rows the query had and how they lay.
  it("keeps writes made during the loop by other paths, seen at once, whatever the rows", function()
    local layouts = {
      { 10, 1 },   -- 10 entities spawned together: one run of 10 rows
      { 10, 3 },   -- every third entity: runs of one row
      { 1000, 1 }, -- one run of 1000
      { 1000, 3 }, -- 334 runs of one row
    }
    for _, layout in ipairs(layouts) do
      local size, every = layout[1], layout[2]
      local w2 = ecs.world()
      local A = w2:component("A", { "v:f64", "k:i32" })
      local B = w2:component("B", { "w:f64" })
      local list = {}
      for i = 1, size * every do
        local e = w2:create()
        A:add(e, i, 0)
        if (i - 1) % every == 0 then B:add(e, 1); list[#list + 1] = e end
      end
      local qq = w2:query(A, B)
      -- A:set inside the loop, the body writing nothing: kept, and seen through the pointers
      local first, seen = true, 0
      for n, v in qq:pointers("A.v") do
        if first then
          first = false
          for k, e in ipairs(list) do A:set(e, -k, 0) end
        end
        for i = 1, n do if v[i] < 0 then seen = seen + 1 end end
      end
      assert.equals(#list, seen)
      for k, e in ipairs(list) do assert.equals(-k, A:field(e, "v")) end
      -- a nested loop writing the rows, the outer loop writing another field
      first = true
      for n, v, k in qq:pointers("A.v:in", "A.k") do
        if first then
          first = false
          for m, v2 in qq:pointers("A.v") do
            for i = 1, m do v2[i] = 7 end
          end
        end
        for i = 1, n do k[i] = v[i] end -- reads what the nested loop wrote
      end
      for _, e in ipairs(list) do
        assert.same({ 7, 7 }, { A:get(e) })
      end
      assert.is_true(w2:check())
      w2:close()
    end
  end)

  it("yields nothing over an empty query, also of a component that never had a row", function()
    local w2 = ecs.world()
    local A = w2:component("A", { "v:f64" })
    local steps = 0
    for _ in w2:query(A):pointers("A.v") do steps = steps + 1 end
    local e = w2:create()
    A:add(e, 1)
    A:remove(e)
    for _ in w2:query(A):pointers("A.v") do steps = steps + 1 end
    assert.equals(0, steps)
    A:add(e, 2) -- the loops ended: nothing pinned
    w2:close()
  end)

  it("marks written rows as changed, and only those of written columns", function()
    local changed = w:query({ P, changed = { P } })
    local vchanged = w:query({ V, changed = { V } })
    local function pass(cq)
      local k = 0
      for _ in cq:entities() do k = k + 1 end
      return k
    end
    pass(changed)
    pass(vchanged)
    assert.equals(0, pass(changed))
    for n, x, dx in q:pointers("P.x", "V.dx:in") do
      for i = 1, n do x[i] = dx[i] end
    end
    assert.equals(N, pass(changed))
    assert.equals(0, pass(vchanged))
  end)

  it("completes a changed pass when it runs to its end, not when left early", function()
    local moved = w:query({ P, changed = { P } })
    local function visits()
      local k = 0
      for n in moved:pointers("P.x:in") do k = k + n end
      return k
    end
    assert.equals(N, visits()) -- the first pass: every match
    assert.equals(0, visits())
    P:set(es[5], 1, 2, 3, true, 4, 5)
    local step, loop = moved:pointers("P.x:in")
    assert.equals(1, step(loop))
    loop:close() -- left early: the pass is not complete
    assert.equals(1, visits())
    assert.equals(0, visits())
  end)

  it("refuses structural changes to the pinned components while the loop runs", function()
    local e = w:create()
    local s1, l1 = q:pointers("P.x")
    local ok, err = pcall(function()
      for _ in s1, l1 do
        P:add(e, 1)
      end
    end)
    assert.is_false(ok)
    assert.matches("P:add: " .. PINNED, err, 1, true)
    l1:close() -- the loop was left by the error: its pins stay until closed or collected
    -- inside a loop: removal, redefinition, restore and undo all refuse
    local step, loop = q:pointers("P.x", "V.dx")
    local n = step(loop)
    assert.equals(N, n)
    assert.equals("P:remove: " .. PINNED, err_of(function() return P:remove(es[1]) end))
    assert.matches(PINNED, err_of(function() return V:add(e, 1) end), 1, true)
    assert.matches("columns are in use by a pointer loop",
      err_of(function() return w:component("P", { "x:f64" }, { migrate = true }) end), 1, true)
    local blob = w:snapshot()
    assert.matches(PINNED, err_of(function() return w:restore(blob) end), 1, true)
    -- other components are free
    local H = w:component("H", { "hp:i32" })
    H:add(e, 3)
    -- destroying is allowed: the row stays until the loop ends and the collector runs
    w:destroy(es[2])
    loop:close()
    P:add(e, 1)
    P:remove(es[1])
    assert.is_true(w:check())
  end)

  it("puts off a !remove cleanup of a pinned component to the loop's end, and destroy succeeds", function()
    local T = w:component("T", { "x:f32", "to:entity!remove" })
    local target, other = w:create(), w:create()
    local holders = {}
    for i = 1, 5 do holders[i] = w:create(); T:add(holders[i], i, i <= 3 and target or other) end
    local removed = {}
    local o = T:on_remove(function(e) removed[#removed + 1] = e end)
    local qt = w:query(T)
    local steps = 0
    for n, x in qt:pointers("T.x") do
      steps = steps + 1
      assert.is_true(w:destroy(target)) -- no error: the removals wait for the pins
      assert.is_false(w:alive(target))
      assert.equals(5, T:count())       -- the rows the pointers address stay
      assert.equals(0, #removed)
      for i = 1, n do x[i] = x[i] * 10 end
    end
    assert.equals(1, steps)
    assert.equals(3, #removed) -- the loop's end ran the cleanup it put off
    assert.equals(2, T:count())
    assert.equals(40, T:field(holders[4], "x"))
    assert.is_false(T:has(holders[1]))
    -- closed early: close() runs it, and an observer's error comes out of close()
    local boom = {}
    o:close()
    local o2 = T:on_remove(function() error(boom) end)
    local step, loop = qt:pointers("T.x")
    step(loop)
    w:destroy(other)
    assert.equals(2, T:count())
    local ok, err = pcall(loop.close, loop)
    assert.is_false(ok)
    assert.equals(boom, err)
    assert.equals(0, T:count())
    o2:close()
    -- collected: the next destroy does it
    local T2 = w:component("T2", { "x:f32", "to:entity!remove" })
    local t2, h2 = w:create(), w:create()
    T2:add(h2, 1, t2)
    do
      local f, st = w:query(T2):pointers("T2.x")
      f(st)
      w:destroy(t2)
      assert.is_true(T2:has(h2))
    end
    collectgarbage()
    collectgarbage()
    w:destroy(w:create())
    assert.is_false(T2:has(h2))
    assert.is_true(w:check())
  end)

  it("releases the pins when the loop runs out, by loop:close(), and when collected", function()
    for _ in q:pointers("P.x") do end
    P:add(w:create(), 1) -- ran out
    local step, loop = q:pointers("P.x")
    step(loop)
    loop:close()
    loop:close() -- idempotent
    assert.is_nil(step(loop)) -- a closed loop is over
    P:add(w:create(), 2)
    do
      local f, s = q:pointers("P.x")
      f(s) -- left as a break would leave it
    end
    collectgarbage()
    collectgarbage()
    P:add(w:create(), 3)
    assert.is_true(w:check())
  end)

  it("a loop left by an error keeps the world usable once closed or collected", function()
    local step, loop = q:pointers("P.x")
    local ok = pcall(function()
      for _, x in step, loop do
        x[1] = 42
        error("boom")
      end
    end)
    assert.is_false(ok)
    assert.equals(42, P:field(es[1], "x")) -- written in place before the error
    loop:close()
    P:add(w:create(), 1)
    assert.is_true(w:check())
  end)

  it("a world closed inside the loop ends it; its memory stays until the loop ends", function()
    local steps = 0
    for n, x in q:pointers("P.x") do
      steps = steps + 1
      w:close()
      x[n] = 1 -- still the loop's memory: no wild write
    end
    assert.equals(1, steps)
    assert.equals("attempt to use a closed world", err_of(function() return w:create() end))
  end)

  it("nests, and pins each manager once per loop", function()
    local outer = 0
    for n, x in q:pointers("P.x:in") do
      for m, y in q:pointers("P.y") do
        for i = 1, m do y[i] = x[i] end
        outer = outer + n
      end
    end
    assert.equals(N, outer)
    P:add(w:create(), 1)
    assert.equals(3, P:field(es[3], "y"))
  end)

  it("lets the journal undo writes made through pointers", function()
    local j = w:journal()
    for n, x in q:pointers("P.x") do
      for i = 1, n do x[i] = 0 end
    end
    assert.equals(0, P:field(es[7], "x"))
    j:undo()
    assert.equals(7, P:field(es[7], "x"))
    j:close()
  end)

  it("carries into a delta a single write made in a loop, then overwritten through a pointer", function()
    local r = ecs.restore(w:snapshot())
    local j = w:journal()
    P:set_field(es[5], "x", 500)    -- copied at the write; stale once the loop starts
    for n, x in q:pointers("P.x") do
      P:set_field(es[5], "x", 1000) -- the loop pins P: the journal copies no values now
      for i = 1, n do x[i] = -i end -- then every row through the pointer
    end
    P:set_field(es[6], "y", 2000)   -- after the loop: its values copied at the write
    r:apply_delta(j:delta())
    assert.equals(w:state_hash(), r:state_hash())
    local RP = r:find_component("P")
    for _, k in ipairs({ 1, 5, 6, N }) do
      assert.same({ P:get(es[k]) }, { RP:get(es[k]) })
    end
    assert.equals(-5, RP:field(es[5], "x"))
    assert.is_true(w:check())
    j:close()
    r:close()
  end)

  it("refuses specs it cannot point at, naming the column", function()
    assert.equals("q:pointers: column 'V.ref': entity values have no pointer type (use q:columns)",
      err_of(function() return q:pointers("V.ref") end))
    assert.equals("q:pointers: column 'entity': entity values have no pointer type (use q:columns)",
      err_of(function() return q:pointers("entity") end))
    assert.matches("lua fields are not columns", err_of(function() return q:pointers("V.any") end))
    assert.matches("bad argument #2 to '%S+' %(column spec expected%)",
      err_of(function() return q:pointers() end))
    assert.matches("unknown field", err_of(function() return q:pointers("P.nope") end))
    local T = w.transform
    T:add(es[1])
    local tq = w:query(T)
    assert.matches("q:pointers: column 'transform.px': transform's columns are its manager's",
      err_of(function() return tq:pointers("transform.px") end), 1, true)
    -- nothing was left pinned by the refusals
    P:add(w:create(), 1)
    V:add(w:create(), 1)
  end)

  it("agrees with a model over random worlds, structural changes tried inside loops", function()
    for seed = 1, 4 do
      local s = seed * 7919
      local function rnd(n) -- Park-Miller: exact in doubles on every Lua
        s = s * 16807 % 2147483647
        return s % n + 1
      end
      local w3 = ecs.world()
      local A = w3:component("A", { "x:f64", "k:i32" })
      local B = w3:component("B", { "dx:f64" })
      local qq = w3:query(A, B)
      local ents, mA, mB = {}, {}, {}
      local function pick() return ents[rnd(#ents)] end
      for _ = 1, 300 do
        local op = rnd(6)
        if op == 1 or #ents == 0 then
          local e = w3:create()
          ents[#ents + 1] = e
          if rnd(4) > 1 then A:add(e, rnd(100), rnd(9)); mA[e] = { A:field(e, "x"), A:field(e, "k") } end
          if rnd(3) > 1 then B:add(e, rnd(5)); mB[e] = B:field(e, "dx") end
        elseif op == 2 then
          local e = pick()
          if w3:alive(e) then w3:destroy(e); mA[e] = nil; mB[e] = nil end
        elseif op == 3 then
          local e = pick()
          if w3:alive(e) then
            if mA[e] then A:remove(e); mA[e] = nil else A:add(e, 1, 2); mA[e] = { 1, 2 } end
          end
        elseif op == 4 then
          local e = pick()
          if w3:alive(e) then
            if mB[e] then B:remove(e); mB[e] = nil else B:add(e, 3); mB[e] = 3 end
          end
        else -- a loop: x += dx, k = -k; structural changes tried inside
          local victim = pick()
          local fresh = w3:create()
          for n, x, k, dx in qq:pointers("A.x", "A.k", "B.dx:in") do
            for i = 1, n do x[i] = x[i] + dx[i]; k[i] = -k[i] end
            assert.matches(PINNED, err_of(function() return A:add(fresh, 1) end), 1, true)
            if w3:alive(victim) and mB[victim] then
              assert.matches(PINNED, err_of(function() return B:remove(victim) end), 1, true)
            end
          end
          -- every entity that matched when the loop started was visited once
          for e, a in pairs(mA) do
            if mB[e] then a[1] = a[1] + mB[e]; a[2] = -a[2] end
          end
          ents[#ents + 1] = fresh
          if rnd(2) == 1 and w3:alive(victim) then
            w3:destroy(victim); mA[victim] = nil; mB[victim] = nil
          end
        end
      end
      for _, e in ipairs(ents) do
        if w3:alive(e) then
          assert.equals(mA[e] ~= nil, A:has(e))
          assert.equals(mB[e] ~= nil, B:has(e))
          if mA[e] then
            assert.equals(mA[e][1], A:field(e, "x"))
            assert.equals(mA[e][2], A:field(e, "k"))
          end
        end
      end
      assert.is_true(w3:check())
      w3:close()
    end
  end)

  it("gives i64 and u8 columns their C types", function()
    for n, big, u in q:pointers("P.big", "P.u:in") do
      assert.is_true(ffi.istype("int64_t *", big))
      assert.is_true(ffi.istype("const uint8_t *", u))
      for i = 1, n do big[i] = big[i] * 2 end
    end
    assert.equals(2 * 77, P:field(es[77], "big"))
  end)
end)
