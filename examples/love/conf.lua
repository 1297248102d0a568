-- conf.lua -- LÖVE settings of the ecs example (README.md here).
-- No sound: the scene makes none, and a headless run (xvfb-run, test.sh)
-- has no audio device. A run with a frame limit does not wait for vsync.
function love.conf(t)
  local headless = os.getenv("ECS_LOVE_FRAMES") ~= nil
  for _, a in ipairs(arg or {}) do headless = headless or a == "--frames" end
  t.identity = "ecs-love-example"
  t.version = "11.4"
  t.window.title = "ecs: sprites moved by an expression system (click to spawn)"
  t.window.width = 800
  t.window.height = 600
  t.window.resizable = true
  t.window.vsync = headless and 0 or 1
  t.modules.audio = false
  t.modules.sound = false
  t.modules.joystick = false
  t.modules.physics = false
  t.modules.video = false
end
