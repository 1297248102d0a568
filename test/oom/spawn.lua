-- spawn.lua -- world:spawn with per-entity arrays, lua fields and a query
-- watching, world:prefab with overrides, world:clone, while the allocator
-- fails: a spawn that runs out of memory leaves the world as it was (the
-- same count, the same instances, and the same next id), one that
-- completes gives every entity every value.
local state = {}

local function counts(W)
  local P, H = W:find_component("P"), W:find_component("H")
  local sum = 0
  for e in P:entities() do sum = sum + P:field(e, "x") end
  return { n = W:count(), p = P:count(), h = H:count(), sum = sum,
           q = state.q and state.q:count() or -1 }
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
    local H = W:component("H", { "hp:i32", "owner:entity" })
    state.q = W:query(P, H)
    local xs = {}
    for i = 1, 300 do xs[i] = i end
    state.before = counts(W)
    state.stage = "spawn"
    local es = W:spawn(300, { P = { x = xs, s = { "shared" } }, H = { hp = 5 } })
    state.stage = "spawned"
    assert(#es == 300 and P:field(es[300], "x") == 300)
    assert(P:field(es[1], "s")[1] == "shared")
    state.before = counts(W)
    state.stage = "prefab"
    local pf = W:prefab({ P = { x = 1 }, H = { 7, es[1] } })
    W:spawn(50, pf, { P = { s = "o" } })
    state.stage = "prefabbed"
    state.before = counts(W)
    state.stage = "clone"
    W:clone(es[2])
    state.es = es
    state.stage = "set_many"
    P:set_many(es, "s", { "z" })
    state.stage = "set_many_done"
    assert(P:get_many(es, "s")[300][1] == "z")
    P:set_many(es, "x", 1)
    state.stage = "done"
  end,
  verify = function(_, W)
    if state.stage == "set_many" then -- all or nothing: the old values, all of them
      local P = W:find_component("P")
      local v = P:get_many(state.es, "s")
      for i = 1, 300 do assert(v[i][1] == "shared", "a failed set_many changed a value") end
    end
    if state.stage == "spawn" or state.stage == "prefab" or state.stage == "clone" then
      local c = counts(W)
      c.n = c.n - 1 -- the host created one before verify
      local d = {}
      for k, v in pairs(state.before) do d[#d + 1] = k .. "=" .. tostring(v) .. "/" .. tostring(c[k]) end
      assert(same(state.before, c), "a failed " .. state.stage .. " changed the world: " .. table.concat(d, " "))
    end
    assert(W:check())
  end,
}
