--[[
cleanup_spec.lua -- entity fields that clean up after the entity they name
(docs/components.md, "Entity fields that clean up"): "name:entity!clear",
"!remove" and "!destroy". Each policy (the field, the holder's other fields
and components, its life); many holders, several components, two policy
fields of one holder, live and null targets untouched; dead handles written
into a field (or by observers during the sweep) held until the next destroy
call that destroys somebody; chains of 2000 both ways, mixed chains, cycles,
self-references; batches (destroy(list) cleaned once after the whole list,
destroy_tree, inside q:entities(), observers and systems); observers
(on_remove with the value readable, no on_set for a clear, errors coming out
of destroy with the world consistent, observers that write, destroy, re-add
or close the world during the sweep, or redefine the holder's component:
fields renumbered, retyped or shrunk to u8, policies changed, and a random
run of such observers); changed queries, snapshots and
restores, C:fields() round trips, spawn, prefabs, clone, set_many, q:columns
and q:each writes; schema errors that create nothing; a randomized
differential run against a Lua model (fixed seed), with and without dead
handles written into the fields.
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")
local err_of = require("spec.support.err_of")
local release = require("spec.support.release")

local null = ecs.null

-- Every policy field (read from C:fields()) of a live holder that names a
-- dead entity, as "C.f of entity(i.g)": none once a destroy call returned.
local function dangling(w)
  local bad = {}
  for _, C in ipairs(w:components()) do
    for _, f in ipairs(C:fields()) do
      local name = f:match("^([%w_]+):entity!%a+$")
      if name then
        for e in C:entities() do
          local v = C:field(e, name)
          if v ~= null and not w:alive(v) then
            bad[#bad + 1] = C.name .. "." .. name .. " of " .. ecs.tostring(e)
          end
        end
      end
    end
  end
  return bad
end

-- The entities an observer of C's event hears, in order.
local function heard(C, event)
  local calls = {}
  C[event](C, function(e) calls[#calls + 1] = e end)
  return calls
end

describe("entity fields that clean up", function()
  local w, w2, Cl, Rm, De, Tag
  before_each(function()
    w = ecs.world()
    Cl = w:component("Cl", { "target:entity!clear", "n:i32", "other:entity" })
    Rm = w:component("Rm", { "to:entity!remove", "n:i32" })
    De = w:component("De", { "to:entity!destroy" })
    Tag = w:component("Tag", { "v" })
  end)
  after_each(function()
    if w2 then release(w2); w2 = nil end
    release(w)
  end)

  describe("each policy", function()
    it("!clear writes ecs.null into that field only; the holder keeps the rest", function()
      local t, o, h, h2 = w:create(), w:create(), w:create(), w:create()
      Cl:add(h, t, 7, o); Tag:add(h, 2.5)
      Cl:add(h2, o, 8, t) -- t in the field without a policy
      assert.is_true(w:destroy(t))
      assert.is_true(w:alive(h)); assert.is_true(Cl:has(h))
      assert.same({ null, 7, o }, { Cl:get(h) })
      assert.same({ o, 8, t }, { Cl:get(h2) }) -- no policy: the stale handle stays
      assert.same({ 2.5, 2 }, { Tag:field(h, "v"), Cl:count() })
    end)

    it("!remove takes only that component; the holder stays alive", function()
      local t, o, h = w:create(), w:create(), w:create()
      Rm:add(h, t, 5); Tag:add(h, 1); Cl:add(h, o, 3, t)
      assert.is_true(w:destroy(t))
      assert.is_true(w:alive(h)); assert.is_false(Rm:has(h))
      assert.same({ 0, 1 }, { Rm:count(), Tag:field(h, "v") })
      assert.same({ o, 3, t }, { Cl:get(h) })
    end)

    it("!destroy destroys the holder; a bystander naming a live entity stays", function()
      local t, o, h, b = w:create(), w:create(), w:create(), w:create()
      De:add(h, t); Tag:add(h, 1); Cl:add(h, o, 1, null); De:add(b, o)
      local before = w:count()
      assert.is_true(w:destroy(t))
      assert.is_false(w:alive(h)); assert.is_false(Tag:has(h))
      assert.equals(before - 2, w:count())
      assert.is_true(w:alive(b)); assert.equals(o, De:field(b, "to"))
      assert.same({ 0, 0, 1 }, { Tag:count(), Cl:count(), De:count() })
    end)
  end)

  describe("holders", function()
    it("cleans 100 holders of each component naming one target, no others", function()
      local t, o = w:create(), w:create()
      local cs, rs, ds, keep = w:create(100), w:create(100), w:create(100), w:create(30)
      for i = 1, 100 do Cl:add(cs[i], t, i); Rm:add(rs[i], t, i); De:add(ds[i], t) end
      for i = 1, 10 do Cl:add(keep[i], o); Rm:add(keep[10 + i], o); De:add(keep[20 + i], o) end
      w:destroy(t)
      for i = 1, 100 do
        assert.same({ null, i, null }, { Cl:get(cs[i]) })
        assert.is_false(Rm:has(rs[i])); assert.is_true(w:alive(rs[i]))
        assert.is_false(w:alive(ds[i]))
      end
      for i = 1, 30 do assert.is_true(w:alive(keep[i])) end
      assert.same({ o, o }, { Cl:field(keep[1], "target"), Rm:field(keep[11], "to") })
      assert.same({ 110, 10, 10 }, { Cl:count(), Rm:count(), De:count() })
      assert.same({}, dangling(w))
    end)

    it("cleans two policy fields of one holder independently", function()
      local Two = w:component("Two", { "a:entity!clear", "x", "b:entity!clear" })
      local Mix = w:component("Mix", { "a:entity!clear", "b:entity!remove" })
      local ta, tb, h = w:create(), w:create(), w:create()
      Two:add(h, ta, 1.5, tb); Mix:add(h, ta, tb)
      w:destroy(ta)
      assert.same({ null, 1.5, tb }, { Two:get(h) })
      assert.same({ null, tb }, { Mix:get(h) })
      w:destroy(tb)
      assert.same({ null, 1.5, null }, { Two:get(h) })
      assert.is_false(Mix:has(h)); assert.is_true(w:alive(h))
    end)

    it("leaves ecs.null fields alone, and a holder naming itself", function()
      local h, s = w:create(), w:create()
      Cl:add(h, null, 1); Rm:add(h, null, 2); De:add(h, null)
      Rm:add(s, s, 3); De:add(s, s); Cl:add(s, s)
      for _ = 1, 3 do w:destroy(w:create()) end
      assert.same({ null, 1, null }, { Cl:get(h) })
      assert.equals(2, Rm:field(h, "n")); assert.is_true(De:has(h))
      assert.same({ s, s }, { De:field(s, "to"), Rm:field(s, "to") })
      assert.is_true(w:destroy(s)) -- it names itself and dies once
      assert.is_false(w:alive(s)); assert.is_true(w:alive(h))
    end)

    it("lets a field given a dead handle hold it until the next destroy call", function()
      local dead, a, b, c, d = w:create(), w:create(), w:create(), w:create(), w:create()
      w:destroy(dead)
      Cl:add(a, dead, 1); Rm:add(b, dead, 1); De:add(c, dead)
      Cl:add(d, a); Cl:set_field(d, "target", dead)
      assert.same({ dead, dead, dead, dead },
        { Cl:field(a, "target"), Cl:field(d, "target"), Rm:field(b, "to"), De:field(c, "to") })
      w:destroy(w:create())
      assert.same({ null, null }, { Cl:field(a, "target"), Cl:field(d, "target") })
      assert.is_false(Rm:has(b)); assert.is_true(w:alive(b)); assert.is_false(w:alive(c))
    end)

    it("leaves them to a destroy call that destroys somebody, not one that destroys nobody", function()
      local dead, a, b = w:create(), w:create(), w:create()
      w:destroy(dead)
      Cl:add(a, dead); Rm:add(b, dead)
      assert.same({ false, 0, 0 }, { w:destroy(dead), w:destroy({}), w:destroy({ dead, dead }) })
      assert.same({ dead, true }, { Cl:field(a, "target"), Rm:has(b) })
      assert.equals(1, w:destroy({ dead, w:create() }))
      assert.same({ null, false }, { Cl:field(a, "target"), Rm:has(b) })
    end)
  end)

  describe("chains and cycles", function()
    for _, forward in ipairs({ true, false }) do
      it("follows a chain of 2000 !destroy holders (" .. (forward and "rows in order" or
        "rows reversed") .. "), each destroyed once", function()
        local removed = heard(Tag, "on_remove")
        local extra, es = w:create(), w:create(2000)
        for i = 1, 2000 do
          local j = forward and i - 1 or i + 1
          if es[j] then De:add(es[i], es[j]) end
          Tag:add(es[i], i)
        end
        local before = w:count()
        assert.is_true(w:destroy(forward and es[1] or es[2000]))
        assert.equals(before - 2000, w:count())
        for i = 1, 2000 do assert.is_false(w:alive(es[i])) end
        local seen = {}
        for _, e in ipairs(removed) do assert.is_nil(seen[e]); seen[e] = true end
        assert.equals(2000, #removed)
        assert.is_true(w:alive(extra)); assert.equals(0, De:count())
      end)
    end

    it("follows a mixed chain: destroy, then remove and clear of the next link", function()
      local t, h1, h2, h3, h4 = w:create(), w:create(), w:create(), w:create(), w:create()
      De:add(h1, t); Rm:add(h2, h1, 9); Cl:add(h3, h1, 4); De:add(h4, h1); Cl:add(h2, h4, 6)
      w:destroy(t)
      assert.same({ false, true, true, false }, { w:alive(h1), w:alive(h2), w:alive(h3), w:alive(h4) })
      assert.is_false(Rm:has(h2))
      assert.same({ { null, 6, null }, { null, 4, null } }, { { Cl:get(h2) }, { Cl:get(h3) } })
    end)

    it("ends cycles of 2 and 3 !destroy holders, each on_remove once", function()
      local removed = heard(De, "on_remove")
      local x, y = w:create(), w:create()
      De:add(x, y); De:add(y, x)
      assert.same({ true, false }, { w:destroy(x), w:alive(y) })
      local a, b, c, keep = w:create(), w:create(), w:create(), w:create()
      De:add(a, b); De:add(b, c); De:add(c, a); Cl:add(keep, b)
      assert.is_true(w:destroy(c))
      assert.same({ false, false, false }, { w:alive(a), w:alive(b), w:alive(c) })
      assert.same({ null, 5 }, { Cl:field(keep, "target"), #removed })
    end)
  end)

  describe("batches", function()
    it("cleans after destroy(list) of 50 targets, once the whole list died", function()
      local ts, hs = w:create(50), {}
      for i, t in ipairs(ts) do
        hs[i] = w:create(3)
        Cl:add(hs[i][1], t, i); Rm:add(hs[i][2], t, i); De:add(hs[i][3], t)
      end
      local seen -- during the list, holders of earlier entities are not cleaned yet
      Tag:add(ts[50], 0)
      Tag:on_remove(function() seen = Cl:field(hs[1][1], "target") end)
      assert.equals(50, w:destroy(ts))
      assert.equals(ts[1], seen)
      for i = 1, 50 do
        assert.same({ null, i, null }, { Cl:get(hs[i][1]) })
        assert.is_false(Rm:has(hs[i][2])); assert.is_true(w:alive(hs[i][2]))
        assert.is_false(w:alive(hs[i][3]))
      end
      assert.same({}, dangling(w))
      local t, h = w:create(), w:create() -- a list may name a holder after its target
      De:add(h, t)
      assert.equals(2, w:destroy({ t, h }))
    end)

    it("cleans after transform:destroy_tree for every node of the tree", function()
      local T = w.transform
      local nodes, hs = w:create(7), {}
      for i, e in ipairs(nodes) do
        T:add(e)
        if i > 1 then T:set_parent(e, nodes[math.floor((i - 2) / 2) + 1]) end
        hs[i] = w:create(3)
        Cl:add(hs[i][1], e); Rm:add(hs[i][2], e); De:add(hs[i][3], e)
      end
      local outside, ho = w:create(), w:create()
      T:add(outside); Cl:add(ho, outside)
      assert.equals(7, T:destroy_tree(nodes[1]))
      for i = 1, 7 do
        assert.is_false(w:alive(nodes[i]))
        assert.equals(null, Cl:field(hs[i][1], "target"))
        assert.is_false(Rm:has(hs[i][2])); assert.is_false(w:alive(hs[i][3]))
      end
      assert.equals(outside, Cl:field(ho, "target"))
      assert.same({}, dangling(w))
    end)

    it("cleans at once inside a q:entities() loop; cascaded deaths are not visited", function()
      local ts, hs = w:create(20), w:create(20)
      for i = 1, 20 do
        Tag:add(ts[i], i); Tag:add(hs[i], -i); De:add(hs[i], ts[i])
        Cl:add(w:create(), hs[i])
      end
      local targets = 0
      for e in w:query(Tag):entities() do
        assert.is_true(w:alive(e))
        if Tag:field(e, "v") > 0 then
          targets = targets + 1
          w:destroy(e)
          assert.same({}, dangling(w))
        end
      end
      for i = 1, 20 do assert.is_false(w:alive(hs[i])) end
      assert.same({ 20, 0, 20 }, { targets, Tag:count(), Cl:count() })
    end)

    it("cleans destroys made by an on_remove observer and by a system", function()
      local a, pa, hc, hr = w:create(), w:create(), w:create(), w:create()
      Tag:add(a, 1); Cl:add(hc, pa); Rm:add(hr, pa)
      Tag:on_remove(function(e) if e == a then w:destroy(pa) end end)
      w:destroy(a)
      assert.equals(null, Cl:field(hc, "target")); assert.is_false(Rm:has(hr))
      local ts, hs = w:create(10), w:create(10)
      for i, t in ipairs(ts) do Tag:add(t, i); De:add(hs[i], t) end
      w:system("cull", w:query(Tag), function(_, q)
        for e in q:entities() do if Tag:field(e, "v") % 2 == 0 then w:destroy(e) end end
        q:each(function(e, v) if v == 5 then w:destroy(e) end end, "Tag.v:in")
      end)
      w:update(0)
      for i = 1, 10 do assert.equals(i % 2 == 1 and i ~= 5, w:alive(hs[i])) end
      assert.same({}, dangling(w))
    end)
  end)

  describe("observers", function()
    it("runs on_remove of a !removed component with the value still readable", function()
      local t, h = w:create(), w:create()
      Rm:add(h, t, 5)
      local got
      Rm:on_remove(function(e)
        got = { e, Rm:has(e), Rm:field(e, "to"), Rm:field(e, "n"), w:alive(t), w:alive(e) }
      end)
      w:destroy(t)
      assert.same({ h, true, t, 5, false, true }, got) -- the handle of the dead target
    end)

    it("runs the on_remove observers of a !destroyed holder's components, holder alive", function()
      local t, h = w:create(), w:create()
      De:add(h, t); Tag:add(h, 3)
      local log = {}
      De:on_remove(function(e) log[#log + 1] = { "De", e, w:alive(e), De:field(e, "to") } end)
      Tag:on_remove(function(e) log[#log + 1] = { "Tag", e, w:alive(e), Tag:field(e, "v") } end)
      w:destroy(t)
      assert.same({ { "De", h, true, t }, { "Tag", h, true, 3 } }, log)
    end)

    it("raises the last observer error out of destroy, after the cleanup finished", function()
      local t, o, c, hs = w:create(), w:create(), w:create(), w:create(3)
      for _, h in ipairs(hs) do Rm:add(h, t); Cl:add(h, t) end
      Cl:add(c, t)
      local raised = {}
      local obs = Rm:on_remove(function()
        raised[#raised + 1] = { n = #raised + 1 }
        error(raised[#raised])
      end)
      local err = err_of(w.destroy, w, t)
      assert.same({ 3, true, false }, { #raised, raised[3] == err, w:alive(t) }) -- the same table
      for _, h in ipairs(hs) do
        assert.is_false(Rm:has(h)); assert.equals(null, Cl:field(h, "target"))
      end
      assert.equals(null, Cl:field(c, "target"))
      assert.same({}, dangling(w)); assert.is_true(w:check())
      obs:close(); Rm:add(c, o)
      assert.same({ true, false }, { w:destroy(o), Rm:has(c) })
    end)

    it("finishes a !destroy chain whose observers raise", function()
      local es = w:create(5)
      for i = 2, 5 do De:add(es[i], es[i - 1]); Tag:add(es[i], i) end
      Tag:on_remove(function(e) error(("no %d"):format(Tag:field(e, "v")), 0) end)
      -- es[5] dies last (an observer's string error names the observer)
      assert.equals("on_remove 'Tag': no 5", err_of(w.destroy, w, es[1]):match("^[^\n]*"))
      for i = 1, 5 do assert.is_false(w:alive(es[i])) end
      assert.is_true(w:check())
    end)

    it("cleans what died when an observer stops destroy(list)", function()
      local ts, hs = w:create(3), w:create(3)
      for i = 1, 3 do Cl:add(hs[i], ts[i]) end
      Tag:add(ts[2], 0)
      Tag:on_remove(function() error("stop", 0) end)
      assert.equals("on_remove 'Tag': stop", err_of(w.destroy, w, ts):match("^[^\n]*"))
      assert.same({ false, false, true }, { w:alive(ts[1]), w:alive(ts[2]), w:alive(ts[3]) })
      assert.same({ null, null, ts[3] },
        { Cl:field(hs[1], "target"), Cl:field(hs[2], "target"), Cl:field(hs[3], "target") })
    end)

    it("cleans after the deaths observers cause during the sweep, holders they add included", function()
      local t, u, v = w:create(), w:create(), w:create()
      local h, other, other2, hu = w:create(), w:create(), w:create(), w:create()
      Rm:add(h, t); Cl:add(other, u); Cl:add(other2, t); De:add(hu, u)
      local late
      Rm:on_remove(function()
        if late then return end
        Cl:set_field(other2, "target", u) -- u dies after this write
        late = w:create(); Rm:add(late, v, 1) -- a holder made during the sweep
        w:destroy(u); w:destroy(v)
      end)
      assert.is_true(w:destroy(t))
      assert.is_false(w:alive(u)); assert.is_false(w:alive(hu))
      assert.same({ null, null }, { Cl:field(other, "target"), Cl:field(other2, "target") })
      assert.is_true(w:alive(late)); assert.is_false(Rm:has(late))
      assert.same({}, dangling(w)); assert.is_true(w:check())
    end)

    it("leaves dead handles an observer writes during the sweep to the next destroy", function()
      local t, h, other = w:create(), w:create(), w:create()
      local late = w:create(2)
      Rm:add(h, t); Cl:add(other, h)
      local once = false
      Rm:on_remove(function()
        if once then return end
        once = true
        Cl:set_field(other, "target", t) -- Cl was swept before Rm
        Rm:add(late[1], t, 2); Rm:add(late[2], other, 3) -- rows the pass had not counted
      end)
      assert.is_true(w:destroy(t))
      local v = Cl:field(other, "target")
      assert.is_true(v == t or v == null); assert.is_true(w:check())
      assert.is_true(not Rm:has(late[1]) or Rm:field(late[1], "to") == t)
      w:destroy(w:create())
      assert.same({}, dangling(w))
      assert.same({ null, false, true }, { Cl:field(other, "target"), Rm:has(late[1]), Rm:has(late[2]) })
    end)

    it("ends when an observer re-adds the !removed component naming the dead target", function()
      local t, h = w:create(), w:create()
      Rm:add(h, t, 1)
      Rm:on_remove(function(e) Rm:add(e, t, 2) end)
      assert.is_true(w:destroy(t))
      assert.is_false(Rm:has(h)) -- the remove looks the instance up again after the observer
      assert.is_true(w:alive(h))
    end)

    describe("an observer that redefines the holder's component during the sweep", function()
      -- The sweep reads the schema the component has when it reads it: a
      -- redefinition (world:component(..., { migrate = true })) from an
      -- on_remove observer renumbers, retypes or drops the policy field.
      local function redefine_once(C, fields)
        local done = false
        C:on_remove(function()
          if done then return end
          done = true
          w:component(C.name, fields, { migrate = true })
        end)
      end

      it("reads no field past its column when the fields become u8", function()
        local R = w:component("R", { "a:u32", "b:u32", "to:entity!remove" })
        local t, hs = w:create(), w:create(50)
        for _, h in ipairs(hs) do R:add(h, 1, 2, t) end
        redefine_once(R, { "a:u8", "b:u8", "c:u8" })
        assert.is_true(w:destroy(t))
        assert.same({ "a:u8", "b:u8", "c:u8" }, R:fields())
        assert.equals(49, R:count()) -- the one removed before; then no policy is left
        assert.same({ 1, 2, 0 }, { R:get(hs[50]) })
        assert.is_true(w:check())
      end)

      it("destroys no holder of a live entity whose u32 equals the dead id", function()
        local R = w:component("R", { "to:entity!destroy", "n:u32" })
        local t, other = w:create(), w:create()
        local h, bystander = w:create(), w:create()
        R:add(h, t, 0)
        R:add(bystander, other, ecs.id(t)) -- an unrelated number that equals t's id
        redefine_once(R, { "n:u32", "to:entity!destroy" })
        assert.is_true(w:destroy(t))
        assert.is_false(w:alive(h))
        assert.is_true(w:alive(bystander))
        assert.same({ ecs.id(t), other }, { R:get(bystander) })
        assert.same({}, dangling(w)); assert.is_true(w:check())
      end)

      it("leaves no holder naming the dead entity when the policy field moves", function()
        local R = w:component("R", { "n:u32", "to:entity!remove" })
        local t, hs = w:create(), w:create(5)
        for i, h in ipairs(hs) do R:add(h, i, t) end
        redefine_once(R, { "to:entity!remove", "n:u32" })
        assert.is_true(w:destroy(t))
        for _, h in ipairs(hs) do assert.is_false(R:has(h)) end
        assert.same({}, dangling(w)); assert.is_true(w:check())
      end)

      it("takes the new policy of a field a redefinition keeps", function()
        local R = w:component("R", { "to:entity!remove", "n:u32" })
        local t, hs = w:create(), w:create(4)
        for i, h in ipairs(hs) do R:add(h, t, i) end
        redefine_once(R, { "n:u32", "to:entity!clear" })
        assert.is_true(w:destroy(t))
        local removed, cleared = 0, 0
        for _, h in ipairs(hs) do
          if not R:has(h) then removed = removed + 1
          elseif R:field(h, "to") == null then cleared = cleared + 1 end
        end
        assert.same({ 1, 3 }, { removed, cleared })
        assert.same({}, dangling(w)); assert.is_true(w:check())
      end)

      it("keeps the rule under random observers that redefine, destroy and add (seed 4242)", function()
        -- After every destroy call, whatever the observers did during its
        -- cleanup, no policy field of a live holder names a dead entity.
        local schemas = {
          { "n:u32", "t:entity!remove" },
          { "t:entity!remove", "n:u32" },
          { "a:u8", "t:entity!destroy", "b:u8" },
          { "t:entity!clear", "n:u8" },
          { "x:f64", "y:f64", "n:u16", "t:entity!destroy" },
          { "t:entity", "n:u32" },
        }
        local R = w:component("R", schemas[1])
        local S = w:component("S", { "t:entity!remove", "u:entity!clear" })
        local rnd = math.random
        math.randomseed(4242)
        local pool = {}
        local function live()
          local l = {}
          for _, e in ipairs(pool) do if w:alive(e) then l[#l + 1] = e end end
          pool = l
          return l[1] and l[rnd(#l)] or nil
        end
        local redefined, acted = 0, 0
        local function act()
          local r = rnd(10)
          acted = acted + 1
          if r <= 3 then
            w:component("R", schemas[rnd(#schemas)], { migrate = true })
            redefined = redefined + 1
          elseif r <= 5 then
            local e = live()
            if e then w:destroy(e) end
          elseif r <= 7 then
            local e, t = live(), live()
            if e and t then R:add(e, { t = t }) end
          elseif r == 8 then
            local e, t = live(), live()
            if e and t then S:add(e, t, t) end
          end
        end
        R:on_remove(function() if rnd(2) == 1 then act() end end)
        S:on_remove(function() if rnd(2) == 1 then act() end end)
        for step = 1, 1500 do
          local r = rnd(10)
          if r <= 3 or #pool < 5 then
            for _, e in ipairs(w:create(rnd(5))) do pool[#pool + 1] = e end
          elseif r <= 7 then
            local e, t = live(), live()
            if rnd(2) == 1 then R:add(e, { t = t })
            else S:add(e, t, live()) end
          else
            local e = live()
            w:destroy(e)
            local bad = dangling(w)
            assert.same({}, bad, "step " .. step)
            assert.is_true(w:check())
          end
        end
        assert.is_true(redefined > 20 and acted > 50, redefined .. " redefinitions, " .. acted .. " actions")
      end)
    end)

    it("survives an observer that closes the world during the sweep", function()
      local t, hs = w:create(), w:create(5)
      for _, h in ipairs(hs) do Rm:add(h, t); De:add(w:create(), h) end
      Rm:on_remove(function() w:close() end)
      local ok, err = pcall(w.destroy, w, t)
      assert.is_true(ok or tostring(err):find("attempt to use a closed world", 1, true) ~= nil)
      assert.matches("attempt to use a closed world", err_of(w.count, w), 1, true)
    end)
  end)

  describe("interplay", function()
    it("counts a !clear as a write for changed queries, but not as a set", function()
      local t, o, h1, h2, h3 = w:create(), w:create(), w:create(), w:create(), w:create()
      Cl:add(h1, t); Cl:add(h2, o); Cl:add(h3, o, 1, t)
      local q, sets = w:query({ Cl, changed = { Cl } }), heard(Cl, "on_set")
      for _ in q:entities() do end
      assert.equals(0, q:count())
      w:destroy(t)
      local seen = {}
      for e in q:entities() do seen[#seen + 1] = e end
      assert.same({ h1 }, seen)
      assert.same({ 0, null }, { #sets, Cl:field(h1, "target") })
    end)

    it("lets a q:columns write-back of handles that died in the loop hold until the next destroy", function()
      local ts, hs = w:create(3), w:create(3)
      for i = 1, 3 do Cl:add(hs[i], ts[i], i) end
      for n, target in w:query(Cl):columns("Cl.target") do
        for i = 1, n do w:destroy(target[i]) end -- cleared in C; the chunk is written back
      end
      for i = 1, 3 do assert.equals(ts[i], Cl:field(hs[i], "target")) end
      w:destroy(w:create())
      for i = 1, 3 do assert.same({ null, i, null }, { Cl:get(hs[i]) }) end
    end)

    it("keeps the policies through world:restore and ecs.restore: they are part of the schema", function()
      local t, h1, h2, h3 = w:create(), w:create(), w:create(), w:create()
      Cl:add(h1, t); Rm:add(h2, t); De:add(h3, t)
      local function state() return { Cl:field(h1, "target"), Rm:has(h2), w:alive(h3), w:alive(t) } end
      local blob = w:snapshot()
      w:destroy(t)
      w:restore(blob)
      assert.same({ t, true, true, true }, state())
      w:destroy(t)
      assert.same({ null, false, false, false }, state())
      w2 = ecs.restore(blob) -- the same schema, policies included
      local Cl2, Rm2, De2 = w2:find_component("Cl"), w2:find_component("Rm"), w2:find_component("De")
      assert.same({ "target:entity!clear", "n:i32", "other:entity" }, Cl2:fields())
      assert.same({ "to:entity!remove", "n:i32" }, Rm2:fields())
      assert.same({ "to:entity!destroy" }, De2:fields())
      assert.same(w:snapshot(), ecs.restore(w:snapshot()):snapshot())
      w2:destroy(t)
      assert.same({ null, false, false }, { Cl2:field(h1, "target"), Rm2:has(h2), w2:alive(h3) })
      -- a snapshot whose schema has no policies is another schema...
      w2:close()
      w2 = ecs.restore(blob)
      for _, C in ipairs(w2:components()) do
        local plain = {}
        for i, f in ipairs(C:fields()) do plain[i] = f:gsub("!%a+$", "") end
        w2:component(C.name, plain, { migrate = true })
      end
      w2:destroy(t) -- no policy: the fields keep naming t
      local other = w2:snapshot()
      assert.matches("world:restore: a manager's schema in the snapshot differs from the world's " ..
        "(component 'Cl')", err_of(w.restore, w, other), 1, true)
      -- ...which a migrating restore converts to the world's: policy fields given a dead
      -- handle by it hold it until the next destroy call that destroys somebody
      w:restore(other, { migrate = true })
      assert.same({ "target:entity!clear", "n:i32", "other:entity" }, Cl:fields())
      assert.same({ t, true, true, false }, state())
      w:destroy(w:create())
      assert.same({ null, false, false, false }, state())
    end)

    it("gives the suffix in C:fields(), and the entries make the same policies", function()
      assert.same({ "target:entity!clear", "n:i32", "other:entity" }, Cl:fields())
      assert.same({ "to:entity!remove", "n:i32" }, Rm:fields())
      assert.same({ "to:entity!destroy" }, De:fields())
      w2 = ecs.world()
      local C2, R2, D2 = w2:component("Cl", Cl:fields()), w2:component("Rm", Rm:fields()),
        w2:component("De", De:fields())
      assert.same(Cl:fields(), C2:fields()); assert.same(De:fields(), D2:fields())
      local t, a, b, c = w2:create(), w2:create(), w2:create(), w2:create()
      C2:add(a, t, 1, t); R2:add(b, t); D2:add(c, t)
      w2:destroy(t)
      assert.same({ null, 1, t }, { C2:get(a) })
      assert.is_false(R2:has(b)); assert.is_false(w2:alive(c))
    end)

    it("cleans fields written by spawn, a prefab, clone, set_many, columns and each", function()
      local K = w:component("K", { "a:entity!clear", "b:entity!remove" })
      local t1, t2, t3, t4 = w:create(), w:create(), w:create(), w:create()
      local sp = w:spawn(4, { Cl = { target = t1, n = { 1, 2, 3, 4 } }, De = { t2 }, Tag = true })
      local pf = w:spawn(2, w:prefab({ Rm = { to = t1 } }))
      local twin = w:clone(sp[1])
      local many, ks = w:create(3), w:create(4)
      for _, e in ipairs(many) do Rm:add(e, t4) end
      for _, e in ipairs(ks) do K:add(e) end
      Rm:set_many(many, "to", t3)
      local q = w:query(K)
      for n, a in q:columns("K.a") do for i = 1, n do a[i] = t4 end end
      q:each(function(e) if e == ks[1] or e == ks[2] then return t4 end end, "K.b")
      w:destroy(t4)
      for i, e in ipairs(ks) do
        assert.equals(i > 2, K:has(e))
        if i > 2 then assert.same({ null, null }, { K:get(e) }) end
      end
      for _, e in ipairs(many) do assert.is_true(Rm:has(e)) end
      w:destroy(t3)
      for _, e in ipairs(many) do assert.is_false(Rm:has(e)) end
      w:destroy(t1)
      for i, e in ipairs(sp) do assert.same({ null, i, null }, { Cl:get(e) }) end
      assert.same({ null, 1, null }, { Cl:get(twin) })
      assert.same({ false, false }, { Rm:has(pf[1]), Rm:has(pf[2]) })
      w:destroy(t2)
      for _, e in ipairs({ twin, compat.unpack(sp) }) do assert.is_false(w:alive(e)) end
      assert.same({}, dangling(w))
    end)
  end)

  describe("schema errors", function()
    local not_entity = "world:component: field 'a' has a cleanup ('%s') but is not an entity field"
    local cases = {
      { "a:f32!clear", not_entity:format("clear") },
      { "a:lua!destroy", not_entity:format("destroy") },
      { "a!clear", not_entity:format("clear") }, -- a bare name is an f64
      { "a:entity!boom",
        "world:component: unknown cleanup 'boom' in 'a:entity!boom' (clear, remove or destroy expected)" },
      { "a:entity!", "world:component: unknown cleanup '' in 'a:entity!'" },
      { "a:entity!Clear", "world:component: unknown cleanup 'Clear' in 'a:entity!Clear'" },
      { "a:entity!clear!clear", "world:component: unknown cleanup 'clear!clear'" },
      { "a:entity!clear ", "world:component: unknown cleanup 'clear '" },
    }
    for _, c in ipairs(cases) do
      it("refuses '" .. c[1] .. "' and creates nothing", function()
        local n = #w:components()
        for _, schema in ipairs({ { c[1] }, { "ok:entity!clear", "x", c[1] } }) do
          local err = err_of(w.component, w, "Bad", schema)
          assert.equals("string", type(err))
          assert.truthy(err:find(c[2], 1, true), err)
          assert.is_nil(w:find_component("Bad"))
          assert.equals(n, #w:components())
        end
        assert.same({ "a:entity!clear" }, w:component("Bad", { "a:entity!clear" }):fields())
      end)
    end
  end)

  for _, with_dead in ipairs({ false, true }) do
    it("matches a Lua model under random create/add/set/remove/destroy (seed 7177" ..
      (with_dead and ", dead handles written too)" or ")"), function()
      -- Model: a destroy call kills its entities, then every policy field of a
      -- live holder naming a dead entity gets its policy, to a fixpoint. Fields
      -- given dead handles hold them until then. With dead handles written, every
      -- destroy call kills somebody (the other case has a test of its own).
      local comps = {
        A = w:component("A", { "t:entity!clear" }),
        B = w:component("B", { "t:entity!remove", "s:entity!clear" }),
        D = w:component("D", { "t:entity!destroy", "k:i32" }),
        P = w:component("P", { "t:entity" }),
      }
      local names = { "A", "B", "D", "P" }
      local removes, model_removes = {}, { A = 0, B = 0, D = 0, P = 0 }
      local all, alive, has = {}, {}, {} -- has[name][e] = { t, s } (model values)
      local pool = {} -- the entities alive before the step, and those it created
      for _, name in ipairs(names) do
        has[name], removes[name] = {}, 0
        comps[name]:on_remove(function() removes[name] = removes[name] + 1 end)
      end
      local seed, rnd = 7177, math.random
      math.randomseed(seed)
      local function pick_alive()
        local live = {}
        for _, e in ipairs(pool) do if alive[e] then live[#live + 1] = e end end
        return live[1] and live[rnd(#live)]
      end
      local function ref()
        local r = rnd(10)
        if r <= 2 then return null elseif r == 3 and with_dead then return all[rnd(#all)] end
        return pick_alive() or null
      end
      local kills = 0
      local function model_remove(name, e)
        has[name][e] = nil; model_removes[name] = model_removes[name] + 1
      end
      local function model_kill(e)
        alive[e] = false; kills = kills + 1
        for _, name in ipairs(names) do if has[name][e] then model_remove(name, e) end end
      end
      local function model_sweep()
        local changed = true
        local function dead(v) return v ~= null and not alive[v] end
        while changed do
          changed = false
          for _, e in ipairs(pool) do
            local a, b, d = has.A[e], has.B[e], has.D[e]
            if alive[e] and a and dead(a[1]) then a[1] = null; changed = true end
            if alive[e] and b and dead(b[1]) then model_remove("B", e); changed = true
            elseif alive[e] and b and dead(b[2]) then b[2] = null; changed = true end
            if alive[e] and d and dead(d[1]) then model_kill(e); changed = true end
          end
        end
      end
      local function compare(where, swept)
        local live, still = 0, {}
        for _, e in ipairs(pool) do -- the dead are checked once, when they die
          if alive[e] ~= w:alive(e) then assert.equals(alive[e], w:alive(e), ecs.tostring(e) .. where) end
          if alive[e] then live = live + 1; still[live] = e end
          for _, name in ipairs(names) do
            local m, C = has[name][e], comps[name]
            local got = C:has(e) and { C:field(e, "t"), name == "B" and C:field(e, "s") or nil } or nil
            if m ~= got and (not m or not got or m[1] ~= got[1] or m[2] ~= got[2]) then
              assert.same(m, got, name .. " of " .. ecs.tostring(e) .. where)
            end
          end
        end
        pool = still
        assert.equals(live, w:count(), where)
        assert.same(model_removes, removes, where)
        if swept or not with_dead then assert.same({}, dangling(w), where) end
      end
      for step = 1, 2500 do
        local r, live, name = rnd(100), pick_alive(), names[rnd(4)]
        local op
        if r <= 30 or not live then
          op = "create"
          for _, e in ipairs(w:create(rnd(4))) do all[#all + 1] = e; pool[#pool + 1] = e; alive[e] = true end
        elseif r <= 58 then
          local vals = { ref(), name == "B" and ref() or nil }
          op = "add " .. name
          if name == "D" then comps.D:add(live, vals[1], step)
          else comps[name]:add(live, compat.unpack(vals, 1, name == "B" and 2 or 1)) end
          has[name][live] = vals
        elseif r <= 68 then
          op = "set " .. name
          if has[name][live] then
            local v = ref()
            comps[name]:set_field(live, "t", v); has[name][live][1] = v
          end
        elseif r <= 75 then
          op = "remove " .. name
          assert.equals(has[name][live] ~= nil, comps[name]:remove(live))
          if has[name][live] then model_remove(name, live) end
        elseif r <= 93 then
          local e = rnd(5) == 1 and not with_dead and all[rnd(#all)] or live
          op = "destroy " .. ecs.tostring(e)
          local expect = alive[e]
          assert.equals(expect, w:destroy(e), op)
          if expect then model_kill(e); model_sweep() end
        else
          local list, expect = { live }, 0
          for i = with_dead and 2 or 1, rnd(rnd(3) == 1 and 40 or 5) do
            list[i] = rnd(6) == 1 and all[rnd(#all)] or pick_alive()
          end
          op = "destroy(list of " .. #list .. ")"
          for _, e in ipairs(list) do if alive[e] then expect = expect + 1; model_kill(e) end end
          assert.equals(expect, w:destroy(list), op)
          model_sweep()
        end
        compare(" (seed " .. seed .. ", step " .. step .. ", " .. op .. ")", op:find("^destroy"))
        if step % 500 == 0 then assert.is_true(w:check()) end
      end
      assert.is_true(kills > 300, "too few deaths to mean anything: " .. kills)
    end)
  end
end)
