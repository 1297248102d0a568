--[[
demo_spec.lua -- runs the demo (examples/arena.lua) for a few hundred frames
with a fixed seed and a small population, then checks invariants of the
outcome: entity counts conserved by the rules, the loot rule keeping
entity ids, no live component pointing at a dead entity, determinism for a
seed, and a valid PNG of the requested size holding the picture it was
given (read back by spec/support/png_read.lua). Runs in-process against
whichever build busted was pointed at (build/, build-asan/, rocks/), and
once as a subprocess through its command line.
]]
package.path = "examples/?.lua;examples/lib/?.lua;" .. package.path
local ecs = require("ecs")
local arena = require("arena")

local KINDS = { "asteroid", "enemy", "defender", "turret", "bullet", "pickup" }
local TAG = { asteroid = "Asteroid", enemy = "Enemy", defender = "Defender",
  turret = "Turret", bullet = "Bullet", pickup = "Pickup" }

-- The PNG reader: chunks and CRCs, the IDAT stream decoded by the model
-- decoder (spec/support/inflate.lua), rows unfiltered; raises on anything wrong.
local read_png = require("spec.support.png_read")

-- A digest of the final state: counts and every collider's position.
local digest = require("spec.support.arena_digest")

local function tmpname()
  local t = os.tmpname()
  return t
end

describe("the demo (examples/arena.lua)", function()
  local OPTS = { frames = 360, entities = 2500, seed = 11 }
  local sim

  setup(function() sim = arena.run(OPTS) end)
  teardown(function() sim.world:close() end)

  it("exercises its rules", function()
    assert.is_true(sim.waves >= 3)
    assert.is_true(sim.hits > 0)
    assert.is_true(sim.splits > 0)
    assert.is_true(sim.looted > 0)
    assert.is_true(sim.spawned.bullet > 0 and sim.destroyed.bullet > 0)
    assert.is_true(sim.peak >= OPTS.entities)
    local ok, err = sim.world:check()
    assert.is_true(ok, err)
  end)

  it("conserves entity counts: spawned + converted in - converted out - destroyed = alive", function()
    local census = arena.census(sim)
    local total_spawned, total_destroyed, total_alive = 0, 0, 0
    for _, k in ipairs(KINDS) do
      local moved = (k == "pickup" and sim.looted or 0) - (k == "enemy" and sim.looted or 0)
      assert.equals(sim.spawned[k] + moved - sim.destroyed[k], census[k], k)
      total_spawned = total_spawned + sim.spawned[k]
      total_destroyed = total_destroyed + sim.destroyed[k]
      total_alive = total_alive + census[k]
    end
    assert.equals(sim.world:count(), total_alive)
    assert.equals(sim.world:count(), total_spawned - total_destroyed)
    -- every live entity is of exactly one kind
    for e in sim.world:entities() do
      local kinds = 0
      for _, k in ipairs(KINDS) do if sim.c[TAG[k]]:has(e) then kinds = kinds + 1 end end
      assert.equals(1, kinds, ecs.tostring(e))
    end
    -- ships are point masses (and only ships)
    assert.equals(sim.c.Ship:count(), sim.PM:count())
  end)

  it("turns a dead raider into a pickup that keeps its entity id", function()
    local w, c = sim.world, sim.c
    local seen_alive = 0
    assert.equals(sim.looted, #sim.loot_ids)
    for _, id in ipairs(sim.loot_ids) do
      local e = ecs.entity(id)
      if w:alive(e) then
        seen_alive = seen_alive + 1
        assert.is_true(c.Pickup:has(e))
        assert.is_true(c.Position:has(e) and c.Velocity:has(e) and c.Collider:has(e))
        assert.is_false(c.Enemy:has(e) or c.Ship:has(e) or c.Health:has(e))
        assert.is_false(sim.PM:has(e) or w.transform:has(e))
        assert.equals(arena.layers.pickup, c.Collider:field(e, "layer"))
      end
    end
    -- pickups live 10 s and are only made by looting, so recent ones are still there
    assert.is_true(seen_alive > 0)
    assert.equals(seen_alive, c.Pickup:count())
  end)

  it("leaves no live component pointing at a dead entity", function()
    local w, c, T = sim.world, sim.c, sim.world.transform
    local checked = 0
    for e in c.Turret:entities() do
      local target = c.Turret:field(e, "target")
      assert.is_true(target == ecs.null or w:alive(target), "turret target")
      local parent = T:parent(e)
      assert.is_true(w:alive(parent), "turret without a live ship")
      assert.is_true(c.Enemy:has(parent) or c.Defender:has(parent))
      checked = checked + 1
    end
    for e in c.Bullet:entities() do
      local owner = c.Bullet:field(e, "owner")
      assert.is_true(owner == ecs.null or w:alive(owner), "bullet owner")
      checked = checked + 1
    end
    for e in w:entities() do
      if T:has(e) then
        local p = T:parent(e)
        assert.is_true(p == ecs.null or w:alive(p))
      end
    end
    assert.is_true(checked > 0)
    assert.is_true(c.Bullet:count() > 0)
  end)

  it("plays the same game for the same seed, and another for another seed", function()
    local again = arena.run(OPTS)
    assert.equals(digest(sim), digest(again))
    assert.same(sim.spawned, again.spawned)
    assert.same(sim.destroyed, again.destroyed)
    assert.same(sim.loot_ids, again.loot_ids)
    local png = require("png")
    assert.equals(png.encode(arena.render(sim, 64)), png.encode(arena.render(again, 64)))
    again.world:close()
    local other = arena.run({ frames = 60, entities = OPTS.entities, seed = OPTS.seed + 1 })
    local same_seed = arena.run({ frames = 60, entities = OPTS.entities, seed = OPTS.seed })
    assert.are_not.equal(digest(same_seed), digest(other))
    other.world:close()
    same_seed.world:close()
  end)

  it("writes a valid PNG of the requested size, holding the picture it was given", function()
    local png = require("png")
    local path = tmpname()
    local img = arena.render(sim, 120)
    png.write(img, path)
    local f = assert(io.open(path, "rb"))
    local data = f:read("*a")
    f:close()
    os.remove(path)
    local got = read_png(data)
    assert.equals(120, got.width)
    assert.equals(120, got.height)
    assert.equals(120 * 120 * 3, #got.pixels)
    local colours = {}
    for y = 0, got.height - 1 do
      for x = 0, got.width - 1 do
        local p = 3 * (y * got.width + x) + 1
        local r, g, b = img:get(x, y)
        assert.same({ r, g, b }, { got.pixels:byte(p, p + 2) })
        colours[got.pixels:sub(p, p + 2)] = true
      end
    end
    local n = 0
    for _ in pairs(colours) do n = n + 1 end
    assert.is_true(n >= 4, "the picture shows several kinds of things")
  end)

  it("reports a corrupted PNG (the checker is not blind)", function()
    local png = require("png")
    local data = png.encode(arena.render(sim, 16))
    assert.is_truthy(pcall(read_png, data))
    local bad = data:sub(1, 40) .. string.char((data:byte(41) + 1) % 256) .. data:sub(42)
    assert.is_false(pcall(read_png, bad))
  end)

  it("runs from the command line", function()
    local path = tmpname()
    local cmd = ("LUA_PATH=%q LUA_CPATH=%q lua5.4 examples/arena.lua --frames 30 --entities 800 " ..
      "--seed 2 --image %q --size 40 2>&1"):format(package.path, package.cpath, path)
    local p = assert(io.popen(cmd))
    local out = p:read("*a")
    local ok = p:close()
    assert.is_true(ok, out)
    assert.matches("ms/frame", out, 1, true)
    assert.matches("collide", out, 1, true)
    assert.matches("wrote " .. path, out, 1, true)
    local f = assert(io.open(path, "rb"))
    local got = read_png(f:read("*a"))
    f:close()
    os.remove(path)
    assert.equals(40, got.width)
    assert.equals(40, got.height)
    local p2 = assert(io.popen(("LUA_PATH=%q LUA_CPATH=%q lua5.4 examples/arena.lua --frames x 2>&1")
      :format(package.path, package.cpath)))
    local out2 = p2:read("*a")
    assert.is_falsy(p2:close())
    assert.matches("--frames needs an integer", out2, 1, true)
  end)
end)
