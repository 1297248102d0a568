--[[
threads_spec.lua -- ecs.world({ threads = n }): expression systems,
q:apply and C systems declared safe on workers (ecs.motion) split over n
threads give the same bits as one thread, over random
worlds and random programs; change terms, the journal, owned components
(the transform) and Lua systems beside them; option errors; many worlds
each with a pool, closed while idle. (The C side: test/system/test_threads.c.)
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local testkit = require("spec.support.testkit")

local prng = require("spec.support.prng") -- a seeded 64-bit LCG

local N = 16000 -- above the rows a run needs before it is split (8192)

-- the same random world on any number of threads
local function world_of(seed, threads)
  local r = prng(seed)
  local w = ecs.world({ threads = threads })
  local A = w:component("A", { "x:f32", "y:f64", "k:i32", "b:u8" })
  local B = w:component("B", { "u:f64", "v:f32", "s:i16" })
  local Tag = w:component("Tag", { "t:u8" })
  local es = w:create(N)
  for i, e in ipairs(es) do
    A:add(e, r.float(-100, 100), r.float(-1e3, 1e3), r.int(2000) - 1000, r.int(255))
    if r.int(4) > 1 then B:add(e, r.float(-10, 10), r.float(0, 5), r.int(600) - 300) end
    if r.int(3) == 1 then Tag:add(e, 1) end
    if i % 89 == 7 then w:destroy(e) end
  end
  return w, A, B, Tag
end

local FIELDS = { "A.x", "A.y", "A.k", "A.b", "B.u", "B.v", "B.s" }
local function expr(r, d)
  local k = r.int(d > 2 and 3 or 9)
  if k == 1 then return FIELDS[r.int(#FIELDS)] end
  if k == 2 then return tostring(r.int(50) / 4) end
  if k == 3 then return "dt" end
  if k <= 6 then
    return "(" .. expr(r, d + 1) .. ({ " + ", " - ", " * ", " / " })[r.int(4)] .. expr(r, d + 1) .. ")"
  end
  if k == 7 then return ({ "sqrt", "abs", "floor" })[r.int(3)] .. "(" .. expr(r, d + 1) .. ")" end
  if k == 8 then return "min(" .. expr(r, d + 1) .. ", " .. expr(r, d + 1) .. ")" end
  return "select(" .. expr(r, d + 1) .. " > 0, " .. expr(r, d + 1) .. ", " .. expr(r, d + 1) .. ")"
end
local function program(r)
  local out = {}
  for i = 1, r.int(3) do
    local target = FIELDS[r.int(#FIELDS)]
    out[i] = target .. (r.int(2) == 1 and " = " or " += ") .. expr(r, 0)
  end
  return table.concat(out, "; ")
end

-- every value of every instance, in query order (the same on every
-- thread count: the worlds are built alike), as one flat array of numbers
-- (no string per value: the spec also runs under an aggressive collector)
local function dump(w, ...)
  local out, n = {}, 0
  for _, C in ipairs({ ... }) do
    local specs = {}
    for k, f in ipairs(C:fields()) do specs[k] = C.name .. "." .. f:match("^[^:]*") .. ":in" end
    w:query(C):each_chunk(function(m, ...)
      for k = 1, select("#", ...) do
        local col = select(k, ...)
        for i = 1, m do n = n + 1 out[n] = col[i] end
      end
    end, table.unpack(specs))
  end
  return out
end

-- a and b hold the same numbers bit for bit (NaN and the sign of zero too)
local function same_bits(a, b)
  if #a ~= #b then return false, "lengths " .. #a .. " and " .. #b end
  for i = 1, #a do
    local x, y = a[i], b[i]
    if not (x == y and (x ~= 0 or 1 / x == 1 / y) or (x ~= x and y ~= y)) then
      return false, ("value %d: %a and %a"):format(i, x, y)
    end
  end
  return true
end

-- results[2] and results[3] (2 and 3 threads) hold results[1]'s bits
local function same_on_every_count(results, seed, what)
  for t = 2, 3 do
    local ok, why = same_bits(results[1], results[t])
    assert(ok, "seed " .. seed .. ", " .. t .. " threads: " .. tostring(why) ..
      (what and ": " .. what or ""))
  end
end

describe("ecs.world({ threads = n })", function()
  it("gives expression systems and q:apply the same bits as one thread", function()
    for seed = 1, 3 do
      local r = prng(100 + seed)
      local progs = {}
      for i = 1, 4 do progs[i] = program(r) end
      local results = {}
      for _, threads in ipairs({ 1, 2, 3 }) do
        local w, A, B, Tag = world_of(seed, threads)
        w:system("s1", w:query(A, B), progs[1])
        w:system("s2", w:query({ A, without = { Tag } }), (progs[2]:gsub("B%.%a", "A.y")))
        w:system("lua", function() end) -- a Lua system between them
        w:system("s3", w:query(A, B, Tag), progs[3])
        for _ = 1, 3 do w:update(1 / 60) end
        w:query(A, B):apply(progs[4], { dt = 0.25 })
        results[threads] = dump(w, A, B)
        if testkit.module then -- s1 (3 updates) and the apply ran split, s3 (~4k rows) did not
          local split = testkit.module.split_runs(w)
          if threads == 1 then assert.equal(0, split) else assert.is_true(split >= 4) end
        end
        assert.is_true(w:check())
        w:close()
      end
      same_on_every_count(results, seed, table.concat(progs, " | "))
    end
  end)

  it("splits C systems declared safe on workers (ecs.motion), with the same bits", function()
    local motion = require("ecs.motion")
    for seed = 1, 2 do
      local results = {}
      for _, threads in ipairs({ 1, 2, 3 }) do
        local w, A, B = world_of(seed, threads)
        local q = w:query(A, B)
        w:system("move", q, motion.integrate("A.x", "B.v:in", "A.y", "B.u:in", "A.k", "B.s:in"))
        w:system("damp", w:query(A), motion.damp("A.y", 0.25))
        for _ = 1, 3 do w:update(1 / 60) end
        q:run(motion.integrate("A.b", "B.v:in"), 0.5)
        results[threads] = dump(w, A, B)
        if testkit.module then -- move and damp per update, and the run
          local split = testkit.module.split_runs(w)
          if threads == 1 then assert.equal(0, split) else assert.equal(7, split) end
        end
        assert.is_true(w:check())
        w:close()
      end
      same_on_every_count(results, seed)
    end
  end)

  it("stamps threaded writes for change terms and records them in the journal", function()
    local w, A, B = world_of(7, 2)
    local q = w:query(A, B)
    local moved = w:query({ A, changed = { A } })
    moved:count()
    for _ in moved:entities() do end
    assert.equal(0, moved:count())
    local before = dump(w, A, B)
    assert.is_true(#before > 2 * N)
    local j = w:journal()
    local replica = ecs.restore(w:snapshot())
    q:apply("A.x += B.v * dt", { dt = 2 })
    assert.equal(q:count(), moved:count())
    local after = dump(w, A, B)
    assert.is_false(same_bits(before, after))
    replica:apply_delta(j:delta())
    -- by entity: the replica's rows need not be in the same order
    local RA, RB = replica:find_component("A"), replica:find_component("B")
    local mine, theirs = {}, {}
    for e in w:query(A):entities() do
      for _, v in ipairs({ A:get(e) }) do mine[#mine + 1] = v end
      for _, v in ipairs({ RA:get(e) }) do theirs[#theirs + 1] = v end
      if B:has(e) then
        for _, v in ipairs({ B:get(e) }) do mine[#mine + 1] = v end
        for _, v in ipairs({ RB:get(e) }) do theirs[#theirs + 1] = v end
      end
    end
    assert.is_true(same_bits(mine, theirs))
    q:apply("A.y = 0")
    assert.is_false(same_bits(after, dump(w, A, B)))
    j:undo() -- back to the mark, which j:delta() moved to after the first apply
    assert.is_true(same_bits(after, dump(w, A, B)))
    j:close()
    assert.is_true(w:check() and replica:check())
  end)

  it("runs programs that write the transform on one thread, with the same result", function()
    local out = {}
    for _, threads in ipairs({ 1, 2 }) do
      local w = ecs.world({ threads = threads })
      local V = w:component("V", { "dx:f64" })
      local T = w.transform
      local es = w:create(N)
      for i, e in ipairs(es) do
        V:add(e, i % 13)
        T:add(e, { position = { i, 0, 0 } })
        if i > 1 and i % 3 == 0 then T:set_parent(e, es[i - 1]) end
      end
      w:query(V, T):apply("transform.px += V.dx * 0.5; transform.py = transform.wx * 0.001")
      local t = {}
      for _, e in ipairs(es) do t[#t + 1] = string.format("%a %a", T:world_position(e)) end
      out[threads] = table.concat(t, "\n")
      assert.is_true(w:check())
      w:close()
    end
    assert.equal(out[1], out[2])
  end)

  it("runs systems that do not conflict side by side (batches), with the same bits", function()
    local motion = require("ecs.motion")
    local function fields_of(...)
      local out = {}
      for _, C in ipairs({ ... }) do
        for _, f in ipairs(C:fields()) do out[#out + 1] = C.name .. "." .. f:match("^[^:]*") end
      end
      return out
    end
    local function expr_of(r, fields, d)
      local k = r.int(d > 2 and 2 or 5)
      if k == 1 then return fields[r.int(#fields)] end
      if k == 2 then return tostring(r.int(40) / 8) end
      if k == 3 then return "dt" end
      if k == 4 then return "sqrt(abs(" .. expr_of(r, fields, d + 1) .. "))" end
      return "(" .. expr_of(r, fields, d + 1) .. ({ " + ", " - ", " * " })[r.int(3)] ..
        expr_of(r, fields, d + 1) .. ")"
    end
    local batched = 0
    for seed = 1, 4 do
      local plan = prng(100 + seed) -- the same systems on every thread count
      local shapes = {}
      for i = 1, 7 do shapes[i] = plan.int(6) end
      local progs = {}
      local results = {}
      for _, threads in ipairs({ 1, 2, 3 }) do
        local w, A, B = world_of(seed, threads)
        local C = w:component("C", { "c:f64" })
        local nth = 0
        for e in w:query(A):entities() do nth = nth + 1; if nth % 3 > 0 then C:add(e, nth / 5) end end
        local sets = { { A }, { B }, { C }, { A, B }, { B, C } }
        local r = prng(200 + seed)
        for i, shape in ipairs(shapes) do
          if shape == 6 then
            if i % 2 == 0 then
              w:system("lua" .. i, function() end) -- a Lua system: a barrier
            else
              w:system("c" .. i, w:query(C), motion.damp("C.c", 0.125)) -- native, parallel
            end
          else
            local set = sets[shape]
            local fields = fields_of(table.unpack(set))
            local target = fields[r.int(#fields)]
            progs[i] = progs[i] or (target .. " = " .. expr_of(r, fields, 0))
            w:system("s" .. i, w:query(table.unpack(set)), progs[i])
          end
        end
        for _ = 1, 3 do w:update(1 / 30) end
        results[threads] = dump(w, A, B, C)
        if testkit.module then
          local b = testkit.module.batches(w)
          if threads == 1 then assert.equal(0, b) else batched = batched + b end
        end
        assert.is_true(w:check())
        w:close()
      end
      same_on_every_count(results, seed)
    end
    if testkit.module then assert.is_true(batched > 0) end
    -- which systems go side by side: one batch per update, {b, t}
    local w, A, B, Tag = world_of(9, 2)
    w:system("a", w:query(A), "A.y = A.y * 0.5 + dt")
    w:system("r", w:query(B, A), "B.v = A.y * 0.5") -- reads what a writes: after a
    w:system("lua", function() end)                   -- a barrier
    w:system("b", w:query(B), "B.u = B.u + 1")
    w:system("t", w:query(Tag), "Tag.t = 2")          -- beside b
    for _ = 1, 2 do w:update(0.5) end
    if testkit.module then assert.equal(2, testkit.module.batches(w)) end
    for _, st in ipairs(w:stats()) do assert.equal(2, st.calls) end
    w:close()
    -- a system added during an update runs from the next one, also where it could join a batch
    w, A, B = world_of(10, 2)
    local e = w:create()
    B:add(e, 2, 1, 0)
    local u0 = B:field(e, "u")
    local added = false
    w:system("adds", function()
      if not added then added = true; w:system("late", w:query(B), "B.u = B.u + 1") end
    end)
    w:system("a", w:query(A), "A.y = A.y + 1")
    w:update(0.5)
    assert.equal(u0, B:field(e, "u"))
    w:update(0.5)
    assert.equal(u0 + 1, B:field(e, "u"))
    w:close()
  end)

  it("checks its option", function()
    assert.matches("threads must be an integer from 1 to 64, got 0", err_of(function() ecs.world({ threads = 0 }) end))
    assert.matches("got 65", err_of(function() ecs.world({ threads = 65 }) end))
    assert.matches("got 1.5", err_of(function() ecs.world({ threads = 1.5 }) end))
    assert.matches("got two", err_of(function() ecs.world({ threads = "two" }) end))
    assert.matches("got 2", err_of(function() ecs.world({ threads = "2" }) end)) -- a number, not a string
    assert.matches("unknown option 'thread'", err_of(function() ecs.world({ thread = 2 }) end))
    local w = ecs.world({ threads = 1 })
    assert.is_true(w:check())
    w:close()
  end)

  it("lets a Lua system close its threaded world during the update", function()
    local w = ecs.world({ threads = 2 })
    local A = w:component("A", { "x:f64" })
    for _, e in ipairs(w:create(N)) do A:add(e, 1) end
    w:system("double", w:query(A), "A.x *= 2")
    w:system("quit", function() w:close() end)
    w:system("after", w:query(A), "A.x += 1")
    local ok, err = pcall(w.update, w, 0.1) -- returns or raises "closed world": either is fine
    assert.is_true(ok or tostring(err):find("closed world", 1, true) ~= nil)
    assert.matches("closed world", err_of(function() w:query(A) end))
    assert.matches("closed world", err_of(function() w:update(0.1) end))
  end)

  it("lets many worlds each keep a pool, closed while idle or collected", function()
    do -- the even ones are left to the collector
      local worlds = {}
      for i = 1, 16 do worlds[i] = ecs.world({ threads = 2 + i % 3 }) end
      for i = 1, 16, 2 do worlds[i]:close() end
      for i = 2, 16, 2 do
        local A = worlds[i]:component("A", { "x:f64" })
        for _ = 1, 10 do A:add(worlds[i]:create(), 1) end
        worlds[i]:query(A):apply("A.x *= 2")
      end
    end
    collectgarbage()
    collectgarbage()
    local w = ecs.world({ threads = 4 })
    local A = w:component("A", { "x:f64" })
    for _, e in ipairs(w:create(N)) do A:add(e, 1) end
    w:query(A):apply("A.x += 1")
    local sum = 0
    for n, x in w:query(A):columns("A.x:in") do for i = 1, n do sum = sum + x[i] end end
    assert.equal(2 * N, sum)
    w:close()
  end)
end)
