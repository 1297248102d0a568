-- message.lua -- the message bus (lua/ecs/message.lua) delivering through a
-- transform hierarchy while handlers allocate and change the world.
return function(ecs, W)
  local message = require("ecs.message")
  local Health = W:component("Health", { "hp:f32", "log:lua" })
  local T = W.transform
  local es = W:create(30)
  for i, e in ipairs(es) do
    T:add(e)
    if i > 1 then T:set_parent(e, es[(i + 1) // 2]) end
    Health:add(e, 100, {})
  end
  local bus = message.new(W)
  bus:on(Health, "damage", function(e, amount)
    local hp, log = Health:get(e)
    log[#log + 1] = "hit " .. amount
    Health:set(e, hp - amount, log)
    if hp - amount < 95 then W:destroy(e) end
  end)
  bus:on("Health", "heal", function(e) local x = W:create() Health:add(x, 1, { e }) end)
  for _ = 1, 3 do bus:send(es[1], "damage", 2) end
  bus:send_up(es[30], "heal")
  bus:off(Health, "damage")
end
