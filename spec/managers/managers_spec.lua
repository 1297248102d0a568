--[[
managers_spec.lua -- world:managers(): one entry per manager a world has
registered, in registration order, with what each holds (the class's
stats hook), and the events the binding's add, set, set_field and remove
report to a manager's listeners (through the test module's C listeners,
until Lua observers exist).
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")
local pointmass = require("ecs.pointmass")
local testkit = require("spec.support.testkit")

local function by_name(list, name, namespace)
  for _, m in ipairs(list) do
    if m.name == name and (namespace == nil or m.namespace == namespace) then return m end
  end
end

describe("world:managers()", function()
  local w
  before_each(function() w = ecs.world() end)
  after_each(function()
    local ok, bad = w:check()
    assert(ok, bad)
    w:close()
  end)

  it("lists every manager in registration order, with its kind and namespace", function()
    local before = w:managers()
    local P = w:component("P", { "x:f32", "y:f32" })
    local T = w:component("transform") -- a tag named like the transform manager
    assert.truthy(w.transform and w.names)
    local pm = pointmass.new(w)
    local list = w:managers()
    assert.equals(#before + 3, #list)
    for k = 1, #before do assert.equals(before[k].name, list[k].name) end
    local names = {}
    for k, m in ipairs(list) do names[k] = m.name .. "/" .. m.namespace end
    -- P, the tag and the plugin come last, in the order they were made
    assert.same({ "P/component", "transform/component", "pointmass/manager" },
      { names[#list - 2], names[#list - 1], names[#list] })
    local tm = by_name(list, "transform", "manager")
    assert.truthy(tm, "the built-in transform is listed")
    assert.equals("transform", tm.kind)
    assert.equals("component", by_name(list, "transform", "component").kind)
    assert.equals("names", by_name(list, "names", "manager").kind)
    assert.equals("component", by_name(list, "P").kind)
    assert.equals("manager", by_name(list, "pointmass").namespace)
    for _, m in ipairs(list) do
      assert.equals("string", type(m.kind))
      assert.is_true(compat.math_type(m.records) == "integer" and m.records >= 0)
      assert.is_true(compat.math_type(m.live) == "integer" and m.live <= m.records)
      assert.is_true(compat.math_type(m.bytes) == "integer" and m.bytes >= 0)
    end
    assert.truthy(P and T and pm)
  end)

  it("reports records, live records and bytes", function()
    local P = w:component("P", { "x:f32", "y:f32" })
    local e = w:create(100)
    local m0 = by_name(w:managers(), "P")
    assert.same({ 0, 0 }, { m0.records, m0.live })
    assert.is_true(m0.bytes > 0) -- the schema
    for k = 1, 100 do P:add(e[k], k, k) end
    local m1 = by_name(w:managers(), "P")
    assert.same({ 100, 100 }, { m1.records, m1.live })
    -- 100 instances of 12 bytes and the map's 4 bytes each at least
    assert.is_true(m1.bytes >= m0.bytes + 100 * (12 + 4))
    assert.is_true(m1.bytes < w:memory())
    -- a destroyed entity's record is held until gc
    w:destroy(e[1])
    local m2 = by_name(w:managers(), "P")
    assert.same({ 100, 99 }, { m2.records, m2.live })
    P:gc()
    local m3 = by_name(w:managers(), "P")
    assert.same({ 99, 99 }, { m3.records, m3.live })
    -- names count their strings
    w.names:set(e[2], string.rep("n", 1000))
    local n = by_name(w:managers(), "names")
    assert.same({ 1, 1 }, { n.records, n.live })
    assert.is_true(n.bytes > 1000)
  end)

  it("refuses a closed world and a non-world", function()
    local managers = w.managers
    assert.has_error(function() managers(w.names) end)
    assert.has_error(function() managers(nil) end)
    local v = ecs.world()
    v:close()
    assert.has_error(function() v:managers() end, "attempt to use a closed world")
  end)
end)

describe("listeners of the binding's changes", function()
  local w, P, L
  before_each(function()
    w = ecs.world()
    P = w:component("P", { "x:f64", "y:f64" })
    L = w:component("L", { "v:lua", "n:i32" })
  end)
  after_each(function()
    local ok, bad = w:check()
    assert(ok, bad)
    w:close()
  end)

  local function events(rec)
    local out = {}
    for k, r in ipairs(rec:take()) do out[k] = r.event end
    return table.concat(out, " ")
  end

  it("P:add reports ADD once the values are written, P:set and set_field SET", function()
    local kit = testkit.module or pending(testkit.missing)
    local rec = kit.listen(P, "ars")
    local e = w:create()
    P:add(e, 7, 8)
    local got = rec:take()
    assert.equals(2, #got) -- ADD, then SET: the new instance's values were written
    assert.same({ "add", e, true, 7 }, { got[1].event, got[1].entity, got[1].readable, got[1].value })
    assert.same({ "set", e, true, 7 }, { got[2].event, got[2].entity, got[2].readable, got[2].value })
    P:add(e, 9) -- e has it: values written over, a SET
    got = rec:take()
    assert.same({ "set", 9 }, { got[1].event, got[1].value })
    P:set(e, { x = 11 })
    assert.equals(11, rec:take()[1].value)
    P:set_field(e, "x", 12)
    got = rec:take()
    assert.same({ "set", 12 }, { got[1].event, got[1].value })
    assert.is_true(P:remove(e))
    got = rec:take()
    assert.same({ "remove", true, 12 }, { got[1].event, got[1].readable, got[1].value })
    assert.is_false(P:remove(e)) -- nothing to report
    assert.equals("", events(rec))
    assert.is_true(rec:close(P))
    P:add(e, 1, 1)
    assert.equals("", events(rec))
  end)

  it("reports through lua fields' paths too", function()
    local kit = testkit.module or pending(testkit.missing)
    local rec = kit.listen(L, "ars")
    local e = w:create()
    L:add(e, { 1 }, 5)
    L:set(e, "s", 6)
    L:set_field(e, "v", {})
    L:set_field(e, "v", nil)
    assert.equals("add set set set set", events(rec)) -- the add's SET first
    rec:close(L)
  end)

  it("raises a listener's error as the call's, the change standing", function()
    local kit = testkit.module or pending(testkit.missing)
    local rec = kit.listen(P, "ars", "fail")
    local e = w:create()
    assert.has_error(function() P:add(e, 1, 2) end, "P:add: invalid argument")
    assert.same({ 1, 2 }, { P:get(e) })
    assert.has_error(function() P:set(e, 3, 4) end, "P:set: invalid argument")
    assert.same({ 3, 4 }, { P:get(e) })
    assert.has_error(function() P:set_field(e, "y", 5) end, "P:set_field: invalid argument")
    assert.same({ 3, 5 }, { P:get(e) })
    assert.has_error(function() P:remove(e) end, "P:remove: invalid argument")
    assert.is_false(P:has(e))
    assert.equals("add set set remove", events(rec))
    -- lua values are released as usual: the removed instance's ref went
    local r2 = kit.listen(L, "r", "fail")
    local weak = setmetatable({}, { __mode = "v" })
    weak[1] = { "big" }
    L:add(e, weak[1], 1)
    assert.has_error(function() L:remove(e) end, "L:remove: invalid argument")
    assert.is_nil(L:get(e))
    collectgarbage()
    collectgarbage()
    assert.is_nil(weak[1])
    rec:close(P)
    r2:close(L)
  end)

  it("copes with listeners that remove the component or destroy the entity", function()
    local kit = testkit.module or pending(testkit.missing)
    local rec = kit.listen(L, "asr", "remove")
    local e = w:create()
    L:add(e, { 1 }, 1)                 -- ADD, then its listener removes it
    assert.is_false(L:has(e))
    assert.equals("add remove", events(rec))
    rec:close(L)
    local d = kit.listen(P, "asr", "destroy")
    P:add(e, 1, 2)
    assert.is_false(w:alive(e))
    local f = w:create()
    d:close(P)
    P:add(f, 1, 2)
    d = kit.listen(P, "r", "destroy")
    assert.is_true(P:remove(f))
    assert.is_false(w:alive(f))
    assert.equals(0, P:count())
    d:close(P)
  end)

  it("reports names being set, renamed and cleared", function()
    local kit = testkit.module or pending(testkit.missing)
    local N = w.names
    local rec = kit.listen(N, "ars")
    local e = w:create()
    N:set(e, "abc")
    N:set(e, "de")
    assert.is_true(N:clear(e))
    assert.is_false(N:clear(e))
    local got = rec:take()
    -- the first name: ADD, then SET; the rename: SET
    assert.same({ "add", "set", "set", "remove" },
      { got[1].event, got[2].event, got[3].event, got[4].event })
    assert.same({ 3, 3, 2, 2 }, { got[1].value, got[2].value, got[3].value, got[4].value })
    rec:close(N)
    rec = kit.listen(N, "ar", "fail")
    assert.has_error(function() N:set(e, "x") end, "names:set: invalid argument")
    assert.equals("x", N:get(e))
    assert.has_error(function() N:clear(e) end, "names:clear: invalid argument")
    assert.is_nil(N:get(e))
    rec:close(N)
  end)
end)
