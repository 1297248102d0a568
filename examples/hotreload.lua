--[[
hotreload.lua -- hot reload of a running simulation. The game's definitions
(components, systems) are source text loaded with load(); halfway through, a
second version of the text is applied to the live world: Mover is redefined
in place (fields kept, renamed, retyped, added, dropped; values carried over)
and changed systems get their new bodies in their old places in the order.

  LUA_PATH='build/?.lua;build/?/init.lua;;' LUA_CPATH='build/?.so;;' \
    lua5.4 examples/hotreload.lua [--frames N]      (or ./demo.sh hotreload)

dt is 1/16 and the starting values are multiples of 1/4, so that
spec/examples/hotreload_spec.lua can redo the game in plain Lua to the last bit.
require("hotreload") gives the functions below without running anything.
]]
local ecs = require("ecs")

local hotreload = { DT = 1 / 16 }

-- Version 1 of the "file" game.lua: movers slide right and wrap around; a Lua
-- system ages them (hud is the game's display, handed to the chunk).
hotreload.V1 = [==[
return {
  components = { { name = "Mover", fields = { "x", "y", "speed", "age" } } },
  systems = {
    { name = "move", query = "Mover", body = "Mover.x = Mover.x + Mover.speed * dt" },
    { name = "wrap", query = "Mover", body = "Mover.x = Mover.x % 64" },
    { name = "tally", query = "Mover", body = function(dt, q)
        for n, age in q:columns("Mover.age") do
          for i = 1, n do age[i] = age[i] + dt; hud.oldest = math.max(hud.oldest or 0, age[i]) end
        end
      end },
  },
}
]==]

-- Version 2, as the designer saved it: speed becomes vx (single precision), a
-- new vy, age is gone; movers bob around the middle line (a new system, steer).
hotreload.V2 = [==[
return {
  components = { { name = "Mover", fields = { "x", "y", "vx:f32", "vy:f32" }, rename = { speed = "vx" } } },
  systems = {
    { name = "move", query = "Mover", body = "Mover.x = Mover.x + Mover.vx * dt; Mover.y = Mover.y + Mover.vy * dt" },
    { name = "wrap", query = "Mover", body = "Mover.x = Mover.x % 64" },
    { name = "tally", query = "Mover", body = function(_, q)
        hud.top = -math.huge
        for n, y in q:columns("Mover.y:in") do
          for i = 1, n do hud.top = math.max(hud.top, y[i]) end
        end
      end },
    { name = "steer", query = "Mover", body = "Mover.vy = Mover.vy + (32 - Mover.y) * 0.0625 * dt" },
  },
}
]==]

-- Apply a version of the source to the world: the first load creates, later ones
-- reload. Returns a list of lines saying what changed.
function hotreload.load(game, src, label)
  local world, log = game.world, {}
  local env = { math = math, hud = game.hud }
  local chunk, load_err
  if setfenv then -- luacheck: ignore 113 (Lua 5.1 and LuaJIT: load takes no text there)
    chunk, load_err = loadstring(src, "=" .. label) -- luacheck: ignore 113
    if chunk then setfenv(chunk, env) end -- luacheck: ignore 113
  else
    chunk, load_err = load(src, "=" .. label, "t", env)
  end
  local defs = assert(chunk, load_err)()
  -- 1. A changed system may name a field the new schema drops (Mover.speed): the
  --    redefinition would refuse it. Its new body may name fields that do not exist
  --    yet (Mover.vx): replace_system would refuse that. So park it first: a no-op
  --    Lua body holds its place in the order while the schemas change.
  local parked = {}
  for _, s in ipairs(defs.systems) do
    local old = game.bodies[s.name]
    if old ~= nil and old ~= s.body then
      world:replace_system(s.name, function() end)
      parked[s.name] = old
    end
  end
  -- 2. Components, redefined in place: the same manager object comes back, fields are
  --    matched by name (rename: old = new), new ones are zero, dropped ones go.
  local ok, err = pcall(function()
    for _, c in ipairs(defs.components) do
      local old = game.components[c.name]
      local was = old and table.concat(old:fields(), " ")
      local m = world:component(c.name, c.fields, { migrate = c.rename and { rename = c.rename } or true })
      assert(old == nil or rawequal(m, old), "migrate returned another object")
      game.components[c.name] = m
      local now = table.concat(m:fields(), " ")
      if old and was ~= now then log[#log + 1] = ("component %s: %s -> %s"):format(c.name, was, now) end
    end
  end)
  if not ok then -- nothing changed in the world: give the parked systems their old bodies back
    for name, body in pairs(parked) do world:replace_system(name, game.systems[name], body) end
    error(err, 0)
  end
  -- 3. Systems: new bodies in their old places; new ones at the end; gone ones removed.
  local seen = {}
  for _, s in ipairs(defs.systems) do
    local q = game.queries[s.query]
    if not q then q = world:query(game.components[s.query]); game.queries[s.query] = q end
    if game.bodies[s.name] == nil then
      world:system(s.name, q, s.body)
      log[#log + 1] = "system " .. s.name .. ": added"
    elseif parked[s.name] then
      world:replace_system(s.name, q, s.body)
      log[#log + 1] = "system " .. s.name .. ": replaced in its place"
    end
    game.bodies[s.name], game.systems[s.name], seen[s.name] = s.body, q, true
  end
  for name in pairs(game.bodies) do
    if not seen[name] then
      world:remove_system(name); game.bodies[name] = nil; game.systems[name] = nil
      log[#log + 1] = "system " .. name .. ": removed"
    end
  end
  return log
end

-- A world running version 1 with n movers (deterministic starting values).
function hotreload.new(n)
  local game = { world = ecs.world(), hud = {}, components = {}, queries = {}, bodies = {}, systems = {} }
  hotreload.load(game, hotreload.V1, "game.lua v1")
  local xs, ys, speeds = {}, {}, {}
  for i = 1, n do xs[i], ys[i], speeds[i] = (i * 7) % 64, (i * 13) % 64, 1 + (i % 8) * 0.25 end
  game.movers = game.world:spawn(n, { Mover = { x = xs, y = ys, speed = speeds } })
  return game
end

function hotreload.step(game, frames)
  for _ = 1, frames do game.world:update(hotreload.DT) end
end

-- The sum of every mover's x and y.
function hotreload.checksum(game)
  local sum = 0
  for n, x, y in game.queries.Mover:columns("Mover.x:in", "Mover.y:in") do
    for i = 1, n do sum = sum + x[i] + y[i] end
  end
  return sum
end

local function main(args)
  local frames = 240
  for i = 1, #args do
    if args[i] == "--frames" then
      local n = tonumber(args[i + 1] or "")
      frames = n and n == math.floor(n) and n or nil -- an integer (math.tointeger is 5.3+)
    end
  end
  if not frames or frames < 0 then io.stderr:write("usage: hotreload.lua [--frames N]\n"); os.exit(2) end
  local game = hotreload.new(64)
  local half = math.floor(frames / 2)
  hotreload.step(game, half)
  print(("v1 ran %d frames: order %s, oldest mover %.2f s"):format(
    half, table.concat(game.world:systems(), " "), game.hud.oldest or 0))
  print("the designer saves game.lua v2; reloading:")
  for _, line in ipairs(hotreload.load(game, hotreload.V2, "game.lua v2")) do print("  " .. line) end
  hotreload.step(game, frames - half)
  print(("v2 ran %d frames: order %s, top mover at y %.2f"):format(
    frames - half, table.concat(game.world:systems(), " "), game.hud.top or 0))
  assert(game.world:check())
  print(("hotreload: %d frames, reload at frame %d, %d movers, checksum %.6f"):format(
    frames, half, game.components.Mover:count(), hotreload.checksum(game)))
  game.world:close()
end

if ... == "hotreload" then return hotreload end -- require("hotreload")
main(arg or {})
