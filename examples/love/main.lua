--[[
main.lua -- a small LÖVE scene on the ecs module (README.md here).
Run from the checkout, with the module built for LuaJIT (LÖVE's Lua):
  cmake -S . -B build-luajit -DECS_LUA=luajit && cmake --build build-luajit
  love examples/love [--frames N] [--seed S] [--screenshot FILE]
Sprites fall, bounce and fade; an expression system, compiled once and run
in C, moves them all; a left click spawns a burst at the mouse (hold to keep
spawning). Keys: space pauses, c clears, escape quits.
--frames N runs N frames at a fixed 1/60 s, clicking by itself every 20
frames, prints one summary line and quits with status 0: test.sh runs it
under xvfb-run. The module is looked up in $ECS_BUILD (a directory as
build-luajit/; default: build-luajit/ of the checkout holding this game).
]]

-- A run with a frame limit (test.sh, under xvfb-run) has nobody to read
-- LÖVE's error screen: an error goes to stderr and the exit status is 1.
local headless = os.getenv("ECS_LOVE_FRAMES") ~= nil
for _, a in ipairs(arg or {}) do headless = headless or a == "--frames" end
if headless then
  function love.errorhandler(msg)
    io.stderr:write("ecs love example: error: ", debug.traceback(tostring(msg), 2), "\n")
    io.stderr:flush()
    return function() return 1 end
  end
end

-- Where the module is: love.filesystem's require searches the game
-- directory for Lua files only, never for C modules, so package.path and
-- package.cpath get the build directory as an absolute path.
local function absolute(path)
  if path:sub(1, 1) == "/" then return path end
  return love.filesystem.getWorkingDirectory() .. "/" .. path
end
local build = os.getenv("ECS_BUILD")
build = build and build ~= "" and absolute(build)
  or absolute(love.filesystem.getSource()) .. "/../../build-luajit"
package.path = build .. "/?.lua;" .. build .. "/?/init.lua;" .. package.path
package.cpath = build .. "/?.so;" .. package.cpath
local ok, ecs = pcall(require, "ecs")
if not ok then
  error("cannot load the ecs module from " .. build .. " (build it for LuaJIT: cmake -S . -B build-luajit"
    .. " -DECS_LUA=luajit && cmake --build build-luajit; or set ECS_BUILD):\n" .. tostring(ecs), 0)
end

local MAX = 20000       -- live sprites at most
local BURST = 48        -- sprites per click
local params = { g = 400, w = 800, h = 600, bounce = 0.8 } -- read by "move" at each update

local world = ecs.world()
local Position = world:component("Position", { "x:f32", "y:f32" })
local Velocity = world:component("Velocity", { "dx:f32", "dy:f32" })
local Sprite = world:component("Sprite", { "size:f32", "r:f32", "g:f32", "b:f32" })
local Life = world:component("Life", { "t:f32" })

-- update phase: two expression systems in C, one rule in Lua
world:system("move", world:query(Position, Velocity), table.concat({
  "Velocity.dy += g * dt",
  "Position.x += Velocity.dx * dt",
  "Position.y += Velocity.dy * dt",
  "Velocity.dx = select(Position.x < 0, abs(Velocity.dx) * bounce, Velocity.dx)",
  "Velocity.dx = select(Position.x > w, -abs(Velocity.dx) * bounce, Velocity.dx)",
  "Velocity.dy = select(Position.y > h, -abs(Velocity.dy) * bounce, Velocity.dy)",
  "Position.x = clamp(Position.x, 0, w)",
  "Position.y = min(Position.y, h)",
}, "; "), params)
local lives = world:query(Life)
world:system("age", lives, "Life.t -= dt")
world:system("expire", lives, function(_, q)
  q:each(function(e, t) if t <= 0 then world:destroy(e) end end, "Life.t:in")
end)

-- draw phase: one sprite batch, filled from the columns chunk by chunk
local batch, dot
world:system("sprites", world:query(Position, Sprite, Life), function(_, q)
  batch:clear()
  q:each_chunk(function(n, x, y, size, r, g, b, t)
    for i = 1, n do
      local s = size[i] / 16
      batch:setColor(r[i], g[i], b[i], math.min(1, t[i]))
      batch:add(x[i] - size[i] / 2, y[i] - size[i] / 2, 0, s, s)
    end
  end, "Position.x:in", "Position.y:in", "Sprite.size:in", "Sprite.r:in", "Sprite.g:in", "Sprite.b:in",
     "Life.t:in")
  love.graphics.setColor(1, 1, 1, 1)
  love.graphics.draw(batch)
end, nil, { phase = "draw" })

local rng
local frames, limit, spawned, clicks, paused, done = 0, nil, 0, 0, false, false
local screenshot

-- n sprites at (x, y): one world:spawn, values as per-entity arrays
local function burst(x, y, n)
  n = math.min(n, MAX - world:count())
  if n <= 0 then return end
  local dx, dy, size, r, g, b, t = {}, {}, {}, {}, {}, {}, {}
  local hue = rng:random()
  for i = 1, n do
    local a, speed = rng:random() * 2 * math.pi, 60 + rng:random() * 240
    dx[i], dy[i] = math.cos(a) * speed, math.sin(a) * speed - 150
    size[i] = 6 + rng:random() * 14
    local h = (hue + rng:random() * 0.15) % 1 * 6
    r[i] = math.min(1, math.max(0, math.abs(h - 3) - 1))
    g[i] = math.min(1, math.max(0, 2 - math.abs(h - 2)))
    b[i] = math.min(1, math.max(0, 2 - math.abs(h - 4)))
    t[i] = 3 + rng:random() * 5
  end
  world:spawn(n, { Position = { x = x, y = y }, Velocity = { dx = dx, dy = dy },
                   Sprite = { size = size, r = r, g = g, b = b }, Life = { t = t } })
  spawned = spawned + n
end

function love.load(args)
  local seed = 1
  local i = 1
  while args[i] do
    local a, v = args[i], args[i + 1]
    if a == "--frames" and tonumber(v) then limit = math.floor(tonumber(v)); i = i + 2
    elseif a == "--seed" and tonumber(v) then seed = tonumber(v); i = i + 2
    elseif a == "--screenshot" and v then screenshot = v; i = i + 2
    else error("usage: love examples/love [--frames N] [--seed S] [--screenshot FILE] (got '"
      .. tostring(a) .. "')", 0) end
  end
  limit = limit or tonumber(os.getenv("ECS_LOVE_FRAMES") or "")
  rng = love.math.newRandomGenerator(seed)
  -- the sprite: a soft white disc of 16 px, tinted per sprite
  local data = love.image.newImageData(16, 16)
  data:mapPixel(function(px, py)
    local d = math.sqrt((px - 7.5) ^ 2 + (py - 7.5) ^ 2) / 8
    return 1, 1, 1, math.max(0, math.min(1, (1 - d) * 3))
  end)
  dot = love.graphics.newImage(data)
  batch = love.graphics.newSpriteBatch(dot, MAX, "stream")
  params.w, params.h = love.graphics.getDimensions()
  burst(params.w / 2, params.h / 3, 200)
end

function love.mousepressed(x, y, button)
  if button == 1 then
    clicks = clicks + 1
    burst(x, y, BURST)
  end
end

function love.keypressed(key)
  if key == "escape" then love.event.quit(0)
  elseif key == "space" then paused = not paused
  elseif key == "c" then
    local all = {}
    for e in lives:entities() do all[#all + 1] = e end
    world:destroy(all)
  end
end

function love.resize(w, h)
  params.w, params.h = w, h
end

function love.update(dt)
  frames = frames + 1
  if limit then
    dt = 1 / 60 -- fixed steps: the same run every time for a seed
    if frames % 20 == 0 then -- a click of its own, somewhere along the top
      love.mousepressed((frames * 97) % params.w, params.h / 4, 1)
    end
  elseif love.mouse.isDown(1) then
    burst(love.mouse.getX(), love.mouse.getY(), 4)
  end
  if not paused then world:update(math.min(dt, 1 / 20)) end
end

local function finish()
  print(("ecs love example: %d frames, %d entities, %d spawned, %d clicks"):format(
    frames, world:count(), spawned, clicks))
  io.stdout:flush()
  love.event.quit(0)
end

function love.draw()
  world:update(0, "draw")
  local move = 0
  for _, s in ipairs(world:stats()) do
    if s.name == "move" and s.calls > 0 then move = s.seconds / s.calls * 1e3 end
  end
  love.graphics.setColor(0, 0, 0, 0.6)
  love.graphics.rectangle("fill", 4, 4, 400, 36)
  love.graphics.setColor(1, 1, 1, 1)
  love.graphics.print(("%d sprites   %d fps   move (C): %.3f ms%s\nclick: spawn   space: pause   c: clear"
    .. "   esc: quit"):format(world:count(), love.timer.getFPS(), move, paused and "   (paused)" or ""), 8, 8)
  if limit and frames >= limit and not done then
    done = true
    if screenshot then
      love.graphics.captureScreenshot(function(image)
        local f = assert(io.open(screenshot, "wb"))
        f:write(image:encode("png"):getString())
        f:close()
        finish()
      end)
    else
      finish()
    end
  end
end

function love.quit()
  world:close()
end
