-- cleanup.lua -- entity fields that clean up: components with !clear,
-- !remove and !destroy fields created, filled and swept by single, list
-- and tree destroys while on_remove observers allocate.
return {
  run = function(ecs, W)
    local Aim = W:component("Aim", { "target:entity!clear", "w:f32" })
    local Tether = W:component("Tether", { "to:entity!remove" })
    local Part = W:component("Part", { "of:entity!destroy" })
    local log = {}
    Tether:on_remove(function(e) log[#log + 1] = { e } end)
    local targets = W:create(20)
    for i = 1, 60 do
      local h = W:create()
      local t = targets[(i - 1) % 20 + 1]
      Aim:add(h, t, i)
      if i % 2 == 0 then Tether:add(h, t) end
      if i % 3 == 0 then Part:add(h, t) end
    end
    W:destroy(targets[1])
    W:destroy({ targets[2], targets[3], targets[4] })
    local T = W.transform
    local root = W:create()
    T:add(root)
    for i = 5, 8 do T:add(targets[i]); T:set_parent(targets[i], root) end
    T:destroy_tree(root)
    for e in Aim:entities() do
      local t = Aim:field(e, "target")
      assert(t == ecs.null or W:alive(t))
    end
  end,
  verify = function(ecs, W)
    local comps = {}
    for _, C in ipairs(W:components()) do comps[C.name] = C end
    local Aim = comps.Aim
    if not Aim then return end
    local t, h = W:create(), W:create()
    Aim:add(h, t, 1)
    W:destroy(t)
    assert(Aim:field(h, "target") == ecs.null)
  end,
}
