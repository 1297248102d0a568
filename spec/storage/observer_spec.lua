--[[
observer_spec.lua -- C:on_add / on_remove / on_set on components,
world.transform and world.names (docs/observers.md): the order and timing
of every path, observers that change the world, each event once (removes,
destroys and re-adds from inside on_remove, and a random run checked against
the rule that each manager's events about an entity alternate), the nesting
bound, errors inside observers, close, closed worlds and argument errors.
Every step ends with world:check().
]]
local ecs = require("ecs")

local function setup()
  local w = ecs.world()
  local P = w:component("P", { "x:f64" })
  local Q = w:component("Q", { "y:f64" })
  return w, P, Q
end

-- An observer that logs "<tag> <entity index> <value read then>".
local function logger(log, tag, read)
  return function(e)
    log[#log + 1] = tag .. " " .. ecs.index(e) .. " " .. tostring(read and read(e))
  end
end

describe("observers", function()
  it("report add, set, set_field and remove in order, values as written", function()
    local w, P = setup()
    local log = {}
    local x = function(e) return P:field(e, "x") end
    P:on_add(logger(log, "add", x))
    P:on_set(logger(log, "set", x))
    P:on_remove(logger(log, "remove", x))
    local e = w:create()
    local i = ecs.index(e)
    P:add(e, 1); P:set(e, 2); P:set_field(e, "x", 3); P:add(e, { x = 4 }); P:remove(e)
    assert.is_false(P:remove(e))
    assert.same({ "add " .. i .. " 1.0", "set " .. i .. " 1.0", "set " .. i .. " 2.0",
                  "set " .. i .. " 3.0", "set " .. i .. " 4.0", "remove " .. i .. " 4.0" }, log)
    assert.is_true(w:check())
  end)

  -- on_set runs after add, set or set_field wrote a value: the first add
  -- too (after on_add), on every path that adds
  it("report on_set after on_add for every new instance, on every path that adds", function()
    local w, P, Q = setup()
    local T, N = w.transform, w.names
    local log = {}
    local function on(M, tag)
      M:on_add(function(e) log[#log + 1] = tag .. " add " .. ecs.index(e) end)
      M:on_set(function(e) log[#log + 1] = tag .. " set " .. ecs.index(e) end)
    end
    on(P, "P"); on(Q, "Q"); on(T, "T"); on(N, "N")
    local function took(f)
      log = {}
      f()
      return table.concat(log, ", ")
    end
    local e = w:create()
    local i = ecs.index(e)
    assert.equals(("P add %d, P set %d"):format(i, i), took(function() P:add(e, 1) end))
    assert.equals(("P set %d"):format(i), took(function() P:add(e, 2) end))
    assert.equals(("P set %d"):format(i), took(function() P:set(e, 3) end))
    assert.equals(("P set %d"):format(i), took(function() P:set_field(e, "x", 4) end))
    assert.equals(("P set %d"):format(i), took(function() P:set_many({ e }, "x", 5) end))
    assert.equals(("T add %d, T set %d"):format(i, i), took(function() T:add(e) end))
    assert.equals(("T set %d"):format(i), took(function() T:add(e) end))
    assert.equals(("N add %d, N set %d"):format(i, i), took(function() N:set(e, "a") end))
    assert.equals(("N set %d"):format(i), took(function() N:set(e, "b") end))
    local es
    local got = took(function() es = w:spawn(2, { P = { x = 1 }, Q = true }) end)
    local a, b = ecs.index(es[1]), ecs.index(es[2])
    assert.equals(("P add %d, P set %d, Q add %d, Q set %d, P add %d, P set %d, Q add %d, Q set %d")
      :format(a, a, a, a, b, b, b, b), got)
    local pf = w:prefab({ Q = { y = 1 } })
    got = took(function() es = w:spawn(1, pf, { P = true }) end)
    a = ecs.index(es[1])
    assert.equals(("P add %d, P set %d, Q add %d, Q set %d"):format(a, a, a, a), got)
    local c
    got = took(function() c = w:clone(es[1]) end)
    a = ecs.index(c)
    assert.equals(("P add %d, P set %d, Q add %d, Q set %d"):format(a, a, a, a), got)
    -- bulk writes report nothing (a changed query sees them)
    local q = w:query(P)
    assert.equals("", took(function()
      for n, xs in q:columns("P.x") do for k = 1, n do xs[k] = 9 end end
      q:each(function(_, x) return x + 1 end, "P.x")
      q:each_chunk(function(n, xs) for k = 1, n do xs[k] = 0 end end, "P.x")
      q:apply("P.x = 1")
    end))
    -- an on_add observer that removes the instance: no on_set for it
    local r = P:on_add(function(x) P:remove(x) end)
    local f = w:create()
    assert.equals(("P add %d"):format(ecs.index(f)), took(function() P:add(f, 1) end))
    r:close()
    assert.is_true(w:check())
  end)

  it("report remove on destroy, e alive and readable, per component in creation order", function()
    local w, P, Q = setup()
    local log = {}
    Q:on_remove(function(e) log[#log + 1] = "Q " .. Q:field(e, "y") .. " " .. tostring(w:alive(e)) end)
    P:on_remove(function(e) log[#log + 1] = "P " .. P:field(e, "x") .. " " .. tostring(w:alive(e)) end)
    local e = w:create()
    P:add(e, 1); Q:add(e, 2)
    assert.is_true(w:destroy(e))
    assert.same({ "P 1.0 true", "Q 2.0 true" }, log)
    assert.is_false(w:alive(e))
    assert.is_false(w:destroy(e))
    assert.same(2, #log)
    assert.is_true(w:check())
  end)

  it("batch paths fire per entity, in order (create(n) + add, destroy(list))", function()
    local w, P = setup()
    local added, removed = {}, {}
    P:on_add(function(e) added[#added + 1] = e end)
    P:on_remove(function(e) removed[#removed + 1] = e end)
    local es = w:create(5)
    for _, e in ipairs(es) do P:add(e, 0) end
    assert.same(es, added)
    assert.equal(4, w:destroy({ es[3], es[1], es[5], es[4] }))
    assert.same({ es[3], es[1], es[5], es[4] }, removed)
    assert.is_true(w:check())
  end)

  it("report the transform's add, set_local_*, set_parent, batch setters and remove", function()
    local w = ecs.world()
    local T = w.transform
    local log = {}
    T:on_add(function(e) log[#log + 1] = "add " .. ecs.index(e) end)
    T:on_set(function(e) log[#log + 1] = "set " .. ecs.index(e) .. " " .. T:local_position(e) end)
    T:on_remove(function(e) log[#log + 1] = "remove " .. ecs.index(e) .. " " .. tostring(T:has(e)) end)
    local a, b = w:create(), w:create()
    local ia, ib = ecs.index(a), ecs.index(b)
    T:add(a); T:add(b)
    T:set_local_position(a, 7, 0, 0)
    T:set_local_rotation(a, 0, 0, 0, 1)
    T:set_local_scale(a, 1, 1, 1)
    T:set_local_positions({ a, b }, { 1, 2 }, { 0, 0 }, { 0, 0 })
    T:remove(b)
    w:destroy(a)
    assert.same({ "add " .. ia, "set " .. ia .. " 0.0", "add " .. ib, "set " .. ib .. " 0.0",
                  "set " .. ia .. " 7.0", "set " .. ia .. " 7.0",
                  "set " .. ia .. " 7.0", "set " .. ia .. " 1.0", "set " .. ib .. " 2.0",
                  "remove " .. ib .. " true", "remove " .. ia .. " true" }, log)
    assert.is_true(w:check())
  end)

  it("report names set (new and rename), clear and destroy, the name readable", function()
    local w = ecs.world()
    local N = w.names
    local log = {}
    N:on_add(function(e) log[#log + 1] = "add " .. N:get(e) end)
    N:on_set(function(e) log[#log + 1] = "set " .. N:get(e) end)
    N:on_remove(function(e) log[#log + 1] = "remove " .. N:get(e) end)
    local e, f = w:create(), w:create()
    N:set(e, "a"); N:set(e, "b"); N:clear(e)
    assert.is_false(N:clear(e))
    N:set(f, "c"); w:destroy(f)
    assert.same({ "add a", "set a", "set b", "remove b", "add c", "set c", "remove c" }, log)
    assert.is_true(w:check())
  end)

  it("may destroy the observed entity in on_add", function()
    local w, P, Q = setup()
    local removed = 0
    P:on_add(function(e) w:destroy(e) end)
    P:on_remove(function() removed = removed + 1 end)
    local e = w:create()
    P:add(e, 1)
    assert.is_false(w:alive(e))
    assert.equal(1, removed)
    Q:add(w:create(), 1) -- other managers unaffected
    assert.is_true(w:check())
  end)

  it("may add in on_remove and destroy in on_remove without doubling events", function()
    local w, P, Q = setup()
    local log = {}
    P:on_remove(function(e)
      log[#log + 1] = "P"
      Q:add(e, 5)             -- Q's turn comes after P's: reported too
      w:destroy(e)            -- a no-op: e is being destroyed
    end)
    Q:on_add(function() log[#log + 1] = "Qadd" end)
    Q:on_remove(function(e) log[#log + 1] = "Q " .. Q:field(e, "y") end)
    local e = w:create()
    P:add(e, 1)
    assert.is_true(w:destroy(e))
    assert.same({ "P", "Qadd", "Q 5.0" }, log)
    assert.is_false(w:alive(e))
    assert.is_true(w:check())
  end)

  it("may remove the component again in on_add and re-add it in on_remove", function()
    local w, P = setup()
    local n = 0
    local o = P:on_add(function(e) n = n + 1; if n == 1 then P:remove(e) end end)
    local e = w:create()
    P:add(e, 1)
    assert.is_false(P:has(e))
    o:close()
    P:add(e, 2)
    local o2
    o2 = P:on_remove(function(x) o2:close(); P:add(x, 9) end)
    assert.is_true(P:remove(e)) -- on_remove cannot veto: the re-add is a set, then removed
    assert.is_false(P:has(e))
    assert.is_true(w:check())
  end)

  it("report one remove per destroy when on_remove destroys or removes its entity", function()
    local w, P, Q = setup()
    local T, N = w.transform, w.names
    local counts = {}
    local function count(tag) counts[tag] = (counts[tag] or 0) + 1 end
    P:on_remove(function(e) count("P"); w:destroy(e) end)    -- during P:remove(e)
    Q:on_remove(function(e) count("Q"); Q:remove(e) end)     -- during destroy(e)
    T:on_remove(function(e) count("T"); T:remove(e) end)     -- during T:remove(e)
    N:on_remove(function(e) count("N"); N:clear(e) end)      -- during N:clear(e)
    local e, f, g = w:create(), w:create(), w:create()
    P:add(e, 1); Q:add(e, 2)
    assert.is_true(P:remove(e))
    assert.is_false(w:alive(e))
    assert.same({ P = 1, Q = 1 }, counts)
    Q:add(f, 1)
    assert.is_true(w:destroy(f))
    T:add(g); N:set(g, "g")
    assert.is_true(T:remove(g)); assert.is_true(N:clear(g))
    assert.same({ P = 1, Q = 2, T = 1, N = 1 }, counts)
    assert.is_false(T:has(g)); assert.is_nil(N:get(g))
    assert.is_true(w:check())
  end)

  it("report the remove of a component re-added in on_remove, during remove and destroy", function()
    local w, P, Q = setup()
    local log = {}
    local function tagged(tag) return function() log[#log + 1] = tag end end
    P:on_add(tagged("P+")); P:on_set(tagged("P="))
    local again = true
    P:on_remove(function(e)
      log[#log + 1] = "P-"
      if again then again = false; P:remove(e); P:add(e, 7) end -- removed, then a new one
    end)
    local e = w:create()
    P:add(e, 1)
    assert.is_true(P:remove(e))
    -- (an add reports on_set after on_add: docs/observers.md, "Order")
    assert.same({ "P+", "P=", "P-", "P+", "P=", "P-" }, log) -- the new one went too: removed last
    assert.is_false(P:has(e))
    log, again = {}, false
    Q:on_remove(function(x) P:remove(x); P:add(x, 3) end) -- after P's turn: a new P
    P:add(e, 1); Q:add(e, 2)
    assert.is_true(w:destroy(e))
    assert.same({ "P+", "P=", "P-", "P+", "P=", "P-" }, log) -- each instance once, the new one too
    assert.is_true(w:check())
  end)

  it("never miss or double an event, whatever observers do (random, seed 1010)", function()
    -- Each manager's events about an entity must alternate: add, then sets,
    -- then remove, then add again...; a set may also come between a remove
    -- and the end of the call that reported it (the value is still there,
    -- going: an add from on_remove is a set). After every call, an entity
    -- has a component exactly when its last event was an add or a set not
    -- after a remove, and a dead entity has none. Observers remove, destroy,
    -- add, re-add and set at random, on their own entity or another, during
    -- remove, destroy, the cleanup of entity fields and each other's events.
    local w = ecs.world()
    local T, N = w.transform, w.names
    local comps = {
      A = w:component("A", { "x" }), B = w:component("B", { "y:i32" }),
      R = w:component("R", { "t:entity!remove" }), D = w:component("D", { "t:entity!destroy" }),
    }
    local names = { "A", "B", "R", "D", "T", "N" }
    local rnd = math.random
    math.randomseed(1010)
    local all, bad, state, depth, acted = {}, {}, {}, 0, 0
    local function pick() return all[rnd(#all)] end
    local function pick_live()
      for _ = 1, 8 do local e = pick(); if w:alive(e) then return e end end
      return nil
    end
    local function has(m, e)
      if not w:alive(e) then return false end
      if m == "T" then return T:has(e) elseif m == "N" then return N:get(e) ~= nil end
      return comps[m]:has(e)
    end
    local function add(m, e)
      if m == "T" then T:add(e) elseif m == "N" then N:set(e, "n" .. rnd(3))
      elseif m == "R" or m == "D" then comps[m]:add(e, pick_live() or ecs.null)
      else comps[m]:add(e, rnd(9)) end
    end
    local function remove(m, e)
      if m == "T" then T:remove(e) elseif m == "N" then N:clear(e) else comps[m]:remove(e) end
    end
    local function set(m, e)
      if not has(m, e) then return end
      if m == "T" then T:set_local_position(e, 1, 2, 3) elseif m == "N" then N:set(e, "s")
      elseif m == "A" then comps.A:set(e, 5) elseif m == "B" then comps.B:set_field(e, "y", 6) end
    end
    -- one random change to e (or another entity)
    local function act(e)
      local m, r = names[rnd(#names)], rnd(12)
      if rnd(3) == 1 or not w:alive(e) then e = pick_live() end
      if not e then return end
      acted = acted + 1
      depth = depth + 1
      if r <= 3 then remove(m, e)
      elseif r <= 5 then w:destroy(e)
      elseif r <= 8 then add(m, e)
      elseif r <= 10 then set(m, e)
      else remove(m, e); if w:alive(e) then add(m, e) end end
      depth = depth - 1
    end
    local function heard(m, kind)
      return function(e)
        local st = state[m]
        local key = ecs.tostring(e)
        if kind == "add" and st[e] == "in" then bad[#bad + 1] = m .. " add while in: " .. key
        elseif kind == "remove" and st[e] ~= "in" then bad[#bad + 1] = m .. " remove while out: " .. key
        elseif kind == "set" and not st[e] then bad[#bad + 1] = m .. " set while out: " .. key end
        if kind == "add" then st[e] = "in" elseif kind == "remove" then st[e] = "going" end
        if depth < 3 and rnd(4) == 1 then act(e) end
      end
    end
    for _, m in ipairs(names) do
      local M = m == "T" and T or m == "N" and N or comps[m]
      state[m] = {}
      M:on_add(heard(m, "add")); M:on_set(heard(m, "set")); M:on_remove(heard(m, "remove"))
    end
    for step = 1, 3000 do
      local r = rnd(10)
      if r <= 2 or #all < 4 then
        for _, e in ipairs(w:create(rnd(3))) do all[#all + 1] = e end
      elseif r <= 9 then
        local e = pick_live()
        if e then act(e) end
      else
        local list = {}
        for i = 1, rnd(4) do list[i] = pick() end
        w:destroy(list)
      end
      for _, e in ipairs(all) do
        for _, m in ipairs(names) do
          if state[m][e] == "going" then state[m][e] = nil end -- the call is over: gone
          if has(m, e) ~= (state[m][e] == "in") then
            bad[#bad + 1] = m .. " of " .. ecs.tostring(e) .. (has(m, e) and " held, its last event a remove"
              or " not held, its last event an add or set")
          end
        end
      end
      assert.same({}, bad, "step " .. step)
      if step % 500 == 0 then assert.is_true(w:check()) end
    end
    assert.is_true(acted > 2000, "too few actions: " .. acted)
    w:close()
  end)

  it("bound the nesting of observers that trigger each other at 64", function()
    local w, P = setup()
    local depth = 0
    P:on_add(function(e) depth = depth + 1; P:remove(e); P:add(e, 1) end)
    local e = w:create()
    local ok, err = pcall(P.add, P, e, 1)
    assert.is_false(ok)
    assert.matches("nested too deeply", err)
    assert.is_true(depth <= 64)
    assert.is_true(w:check())
    local q = w:query(P)
    for _ in q:entities() do end
  end)

  it("propagate an observer's error unchanged, the world consistent and queries usable", function()
    local w, P, Q = setup()
    local q = w:query(P)
    local token = { "mine" }
    local later = 0
    local o = P:on_add(function() error(token) end)
    P:on_add(function() later = later + 1 end)
    local e = w:create()
    local ok, err = pcall(P.add, P, e, 1)
    assert.is_false(ok)
    assert.equal(token, err)
    assert.is_true(P:has(e))   -- the change stands
    assert.equal(0, later)     -- later observers of that event did not run
    assert.is_true(w:check())
    local n = 0
    for _ in q:entities() do n = n + 1 end
    assert.equal(1, n)
    o:close()
    -- on_set, on_remove, destroy, transform, names: the same value out
    for _, case in ipairs({
      { P.on_set, function() P:set(e, 2) end },
      { P.on_set, function() P:set_field(e, "x", 3) end },
      { P.on_remove, function() P:remove(e) end },
    }) do
      local c = case[1](P, function() error(token) end)
      ok, err = pcall(case[2])
      assert.is_false(ok)
      assert.equal(token, err)
      c:close()
      assert.is_true(w:check())
    end
    local r = Q:on_remove(function() error("string error", 0) end)
    local es = w:create(3)
    for _, x in ipairs(es) do Q:add(x, 1) end
    ok, err = pcall(w.destroy, w, es)
    assert.is_false(ok)
    assert.equal("on_remove 'Q': string error", err:match("^[^\n]*")) -- a string names the observer
    assert.is_false(w:alive(es[1]))     -- the failing one died
    assert.is_true(w:alive(es[2]))      -- the rest are untouched
    r:close()
    assert.equal(2, w:destroy(es))
    local T, N = w.transform, w.names
    T:add(e)
    local t = T:on_set(function() error(token) end)
    ok, err = pcall(T.set_local_position, T, e, 1, 2, 3)
    assert.is_false(ok)
    assert.equal(token, err)
    t:close()
    local nm = N:on_remove(function() error(token) end)
    N:set(e, "n")
    ok, err = pcall(N.clear, N, e)
    assert.is_false(ok)
    assert.equal(token, err)
    assert.is_nil(N:get(e))
    nm:close()
    assert.is_true(w:check())
  end)

  -- T:destroy_tree dropped the errors of the observers its destroys ran;
  -- world:destroy raised them
  it("T:destroy_tree propagates observers' errors as world:destroy does", function()
    local w, P = setup()
    local T, N = w.transform, w.names
    local Aim = w:component("Aim", { "target:entity!remove" })
    local token = { "mine" }
    local function tree() -- root <- a <- a1, root <- b
      local root, a, a1, b = w:create(), w:create(), w:create(), w:create()
      for _, e in ipairs({ root, a, a1, b }) do T:add(e) end
      T:set_parent(a, root); T:set_parent(a1, a); T:set_parent(b, root)
      return root, a, a1, b
    end
    local function failing_at(fail) return function(e) if e == fail then error(token) end end end
    local cases = {
      { "component", function(fail) P:add(fail, 1); return P:on_remove(failing_at(fail)) end },
      { "transform", function(fail) return T:on_remove(failing_at(fail)) end },
      { "names", function(fail) N:set(fail, "x"); return N:on_remove(failing_at(fail)) end },
      { "cleanup", function(fail) -- a holder losing Aim when fail dies
        Aim:add(w:create(), fail)
        return Aim:on_remove(function() error(token) end)
      end },
    }
    for _, case in ipairs(cases) do
      for _, how in ipairs({ "destroy_tree", "destroy" }) do
        local root, a, a1, b = tree()
        local o = case[2](a)
        local ok, err
        if how == "destroy_tree" then ok, err = pcall(T.destroy_tree, T, root)
        else ok, err = pcall(w.destroy, w, a) end
        local where = case[1] .. " observer, " .. how
        assert.is_false(ok, where)
        assert.equal(token, err, where)
        assert.is_false(w:alive(a), where) -- the failing one died
        if how == "destroy" then
          assert.is_true(w:alive(a1) and w:alive(b) and w:alive(root), where)
        elseif case[1] == "cleanup" then -- the cleanup runs after the whole tree
          assert.is_false(w:alive(a1) or w:alive(b) or w:alive(root), where)
        else -- children first: a1, then a failed; b and root are left
          assert.is_false(w:alive(a1), where)
          assert.is_true(w:alive(b) and w:alive(root), where)
        end
        o:close()
        assert.is_true(w:check(), where)
        for _, e in ipairs({ root, a1, b }) do if w:alive(e) then w:destroy(e) end end
      end
    end
    assert.equal(0, Aim:count())
    assert.is_true(w:check())
  end)

  it("an error in a nested observer reaches the outer call unchanged", function()
    local w, P, Q = setup()
    local token = {}
    P:on_add(function(e) Q:add(e, 1) end)
    Q:on_add(function() error(token) end)
    local ok, err = pcall(P.add, P, w:create(), 1)
    assert.is_false(ok)
    assert.equal(token, err)
    assert.is_true(w:check())
  end)

  it("stop on close (idempotent, inside fn, <close>), and keep running when dropped", function()
    local w, P = setup()
    local n = 0
    local o = P:on_add(function() n = n + 1 end)
    assert.is_true(o:active())
    P:add(w:create(), 1)
    o:close(); o:close()
    assert.is_false(o:active())
    P:add(w:create(), 1)
    assert.equal(1, n)
    local self_closing
    self_closing = P:on_add(function() n = n + 1; self_closing:close() end)
    P:add(w:create(), 1); P:add(w:create(), 1)
    assert.equal(2, n)
    do
      local scoped <close> = P:on_add(function() n = n + 1 end)
      P:add(w:create(), 1)
      assert.is_true(scoped:active())
    end
    P:add(w:create(), 1)
    assert.equal(3, n)
    P:on_add(function() n = n + 1 end) -- dropped at once
    collectgarbage(); collectgarbage()
    P:add(w:create(), 1)
    assert.equal(4, n)
    assert.is_true(w:check())
  end)

  it("an observer made during an event hears the next one", function()
    local w, P = setup()
    local log = {}
    local made = false
    P:on_add(function()
      if not made then
        made = true
        P:on_add(function() log[#log + 1] = "new" end)
      end
      log[#log + 1] = "first"
    end)
    P:add(w:create(), 1); P:add(w:create(), 1)
    assert.same({ "first", "first", "new" }, log)
  end)

  it("on a closed world: making one raises, close and active still work", function()
    local w, P = setup()
    local o = P:on_add(function() end)
    local T = w.transform
    w:close()
    assert.has_error(function() P:on_add(function() end) end, "attempt to use a closed world")
    assert.has_error(function() T:on_set(function() end) end, "attempt to use a closed world")
    o:close()
    assert.is_false(o:active())
  end)

  it("a world closed by an observer ends the call cleanly", function()
    local w, P = setup()
    P:on_add(function() w:close() end)
    pcall(P.add, P, w:create(), 1)
    assert.has_error(function() w:count() end, "attempt to use a closed world")
  end)

  it("argument errors name the function", function()
    local w, P = setup()
    assert.has_error(function() P:on_add(3) end,
      "bad argument #1 to 'on_add' (P:on_add: function expected, got number)")
    assert.has_error(function() P:on_remove() end,
      "bad argument #1 to 'on_remove' (P:on_remove: function expected, got no value)")
    assert.has_error(function() w.transform:on_set({}) end,
      "bad argument #1 to 'on_set' (transform:on_set: function expected, got table)")
    assert.has_error(function() P.on_add(w, function() end) end)
    local o = P:on_add(function() end)
    assert.has_error(function() o.close(P) end)
    assert.matches("ecs.Observer", tostring(o))
  end)
end)
