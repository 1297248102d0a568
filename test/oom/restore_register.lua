-- restore_register.lua -- world:restore of a snapshot holding components
-- the world has not registered: they are registered as ecs.restore makes
-- them (a cleanup policy and a lua field included), and the whole restore
-- is all or nothing. After any failure the world holds no new component
-- and its own as before; once it completed, it holds the snapshot's.
-- every key exists from the start: storing one must not allocate
local state = { stage = "" }

local function names(W)
  local out = {}
  for i, c in ipairs(W:components()) do out[i] = c.name .. "=" .. c:count() end
  return table.concat(out, " ")
end

return {
  run = function(ecs, W)
    state.stage = "build"
    local src = ecs.world()
    local P = src:component("P", { "x:f32" })
    local Q = src:component("Q", { "to:entity!clear", "s:lua" })
    local R = src:component("R", { "n:i32" })
    local es = src:create(20)
    for i, e in ipairs(es) do
      P:add(e, i)
      Q:add(e, es[1], { i, "v" })
      if i % 2 == 0 then R:add(e, i) end
    end
    local blob = src:snapshot()
    src:close()
    W:component("P", { "x:f32" }):add(W:create(), 99)
    state.stage = "restore"
    W:restore(blob)
    state.stage = "done"
  end,
  verify = function(ecs, W)
    assert(ecs)
    if state.stage == "restore" then
      assert(names(W) == "P=1", "a failed restore changed the components: " .. names(W))
      assert(W:find_component("Q") == nil and W:find_component("R") == nil,
             "a failed restore left a component registered")
    elseif state.stage == "done" then
      assert(names(W) == "P=20 Q=20 R=10", "the restored world differs: " .. names(W))
      assert(W:find_component("Q"):fields()[1] == "to:entity!clear", "the policy was lost")
    end
  end,
}
