-- snapshot.lua -- world:snapshot, world:restore and ecs.restore with lua
-- values, the built-ins and a plugin manager. A restore that runs out of
-- memory must leave the world as it was before it (all or nothing); one
-- that completes must leave it as the snapshot says. (The host then
-- creates an entity: counts and values are compared, not snapshots.)
local state = {}

local function counts(W)
  local P, V = W:find_component("P"), W:find_component("V")
  local PM = require("ecs.pointmass").new(W)
  local x, t = {}, 0
  for e in P:entities() do
    local v = P:get(e)
    x[#x + 1] = tostring(v)
  end
  for e in W:entities() do
    if W.transform:has(e) then t = t + 1 end
  end
  return { p = P:count(), v = V:count(), pm = PM:count(), t = t,
           name = W.names:find("two") ~= nil, sum = #table.concat(x) }
end

local function same(a, b)
  for k, v in pairs(a) do
    if b[k] ~= v then return false end
  end
  return true
end

return {
  run = function(ecs, W)
    state.stage = "build"
    local P = W:component("P", { "x:f32", "s:lua" })
    local V = W:component("V", { "dx:f64" })
    local PM = require("ecs.pointmass").new(W)
    local es = W:create(60)
    for i, e in ipairs(es) do
      P:add(e, i, { i, "v", { deep = i } })
      if i % 2 == 0 then
        V:add(e, i)
        PM:add(e, 1, i)
      end
      if i <= 10 then W.transform:add(e) end
      if i > 1 and i <= 10 then W.transform:set_parent(e, es[i - 1]) end
    end
    W.names:set(es[2], "two")
    W:destroy(es[5])
    local blob = W:snapshot()
    state.snap = counts(W)
    for i = 1, 30 do
      local e = W:create()
      P:add(e, -i, "later")
      V:add(e, -i)
    end
    W:destroy(es[7])
    W.names:clear(es[2])
    state.before = counts(W)
    state.stage = "restore"
    W:restore(blob)
    state.stage = "restored"
    local W2 = ecs.restore(blob)
    assert(W2:check())
    assert(same(state.snap, counts(W2)))
    W2:close()
    state.stage = "done"
  end,
  verify = function(ecs, W)
    assert(ecs)
    if state.stage == "restore" then
      assert(same(state.before, counts(W)), "a failed restore changed the world")
    elseif state.stage == "restored" or state.stage == "done" then
      local c = counts(W)
      for k, v in pairs(state.snap) do
        assert(c[k] == v, ("the restored world differs from the snapshot: %s %s vs %s")
                          :format(k, tostring(c[k]), tostring(v)))
      end
    end
  end,
}
