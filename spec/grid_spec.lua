--[[
grid_spec.lua -- the uniform-grid plugin (examples/plugins/grid.c, used by
the demo) against a brute-force model: every pair and every nearest query
must agree, for points inside and outside the grid and radii spanning
several cells.
]]
local ecs = require("ecs")
local grid = require("ecs.grid")

-- A small deterministic PRNG (the spec must not depend on math.random's state).
local function rng(seed)
  local s = seed
  return function(lo, hi)
    s = (s * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
    local u = ((s >> 11) & 0xFFFFFFFF) / 0x100000000
    return lo + (hi - lo) * u
  end
end

local function f32(v) return string.unpack("<f", string.pack("<f", v)) end

describe("ecs.grid", function()
  local w, P, C
  before_each(function()
    w = ecs.world()
    P = w:component("Position", { "x:f32", "y:f32" })
    C = w:component("Collider", { "r:f32", "layer:u8", "mask:u16" })
  end)
  after_each(function() w:close() end)

  it("finds the same pairs and nearest entities as a brute-force scan", function()
    local rand = rng(7)
    local g = grid.new(8, 200, 120)
    for round = 1, 3 do
      local es = w:create(600)
      local model = {}
      for i, e in ipairs(es) do
        local x, y = f32(rand(-30, 230)), f32(rand(-30, 150))
        local r = f32(rand(0, round == 3 and 20 or 5))
        local layer = 1 << math.floor(rand(0, 3))
        local mask = math.floor(rand(0, 8))
        P:add(e, x, y)
        if i % 10 ~= 0 then  -- some have no collider
          C:add(e, r, layer, mask)
          model[#model + 1] = { e = e, x = x, y = y, r = r, layer = layer, mask = mask }
        end
      end
      -- some die before the build: they must not be binned
      local dead = {}
      for i = 3, #es, 17 do dead[es[i]] = true; w:destroy(es[i]) end
      local live = {}
      for _, m in ipairs(model) do if not dead[m.e] then live[#live + 1] = m end end
      assert.equals(#live, g:build(P, C))
      assert.equals(#live, g:count())

      local want = {}
      local nwant = 0
      for _, a in ipairs(live) do
        for _, b in ipairs(live) do
          if a ~= b and a.mask & b.layer ~= 0 then
            local dx, dy, rr = b.x - a.x, b.y - a.y, a.r + b.r
            if dx * dx + dy * dy <= rr * rr then
              want[ecs.id(a.e) .. ":" .. ecs.id(b.e)] = true
              nwant = nwant + 1
            end
          end
        end
      end
      local n, as, bs = g:pairs()
      assert.equals(nwant, n)
      for k = 1, n do
        local key = ecs.id(as[k]) .. ":" .. ecs.id(bs[k])
        assert.is_true(want[key], key)
        want[key] = nil   -- each pair once
      end
      assert.is_nil(next(want))

      for _ = 1, 200 do
        local x, y, rad, layers = rand(-40, 240), rand(-40, 160), rand(0, 60), math.floor(rand(1, 8))
        local best, bestd
        for _, m in ipairs(live) do
          if m.layer & layers ~= 0 then
            local d = math.sqrt((m.x - x) ^ 2 + (m.y - y) ^ 2)
            if d <= rad and (bestd == nil or d < bestd) then best, bestd = m.e, d end
          end
        end
        local e, d = g:nearest(x, y, rad, layers)
        if best == nil then
          assert.is_nil(e)
        else
          assert.near(bestd, d, 1e-9)
          local m
          for _, c in ipairs(live) do if c.e == e then m = c end end
          assert.near(bestd, math.sqrt((m.x - x) ^ 2 + (m.y - y) ^ 2), 1e-9)
        end
      end
      w:destroy(es)
    end
  end)

  it("skips the excepted entity and reuses output tables", function()
    local a, b = w:create(), w:create()
    P:add(a, 10, 10); C:add(a, 1, 1, 1)
    P:add(b, 12, 10); C:add(b, 1, 1, 0)
    local g = grid.new(4, 32, 32)
    g:build(P, C)
    assert.equals(b, (g:nearest(10, 10, 5, 1, a)))
    assert.equals(a, (g:nearest(10, 10, 5, 1)))
    local as, bs = { "old", "old", "keep" }, {}
    local n, as2, bs2 = g:pairs(as, bs)
    assert.equals(1, n)
    assert.equals(as, as2); assert.equals(bs, bs2)
    assert.equals(a, as[1]); assert.equals(b, bs[1]); assert.equals("keep", as[3])
  end)

  it("checks its arguments", function()
    local g = grid.new(4, 32, 32)
    local Bad = w:component("Bad", { "x:i32", "y:f32" })
    local cases = {
      { function() grid.new(0, 1, 1) end, "cell size must be positive" },
      { function() grid.new(1, 0 / 0, 1) end, "width must be positive" },
      { function() grid.new(1e-6, 1e6, 1e6) end, "too many cells" },
      { function() g:build(Bad, C) end, "needs a field 'x' of f32 or f64 type" },
      { function() g:build(P, P) end, "must differ" },
      { function() g:build(C, P) end, "needs a field 'x'" },
      { function() g:build(P, {}) end, "ecs.Component expected" },
      { function() g:nearest(0, 0, -1, 1) end, "radius must not be negative" },
      { function() g:nearest(0, 0, 1, 1, 5) end, "entity expected" },
      { function() g:pairs(5) end, "table expected" },
      { function() g.count({}) end, "ecs.Grid expected" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
    local other = ecs.world()
    local Q = other:component("Q", { "r:f32", "layer:u8", "mask:u8" })
    local ok, err = pcall(g.build, g, P, Q)
    assert.is_false(ok)
    assert.matches("component of another world", err, 1, true)
    other:close()
  end)

  it("survives every junk value in every position (no crash, string errors)", function()
    local junk = require("spec.support.junk")
    local values, other = junk.values(w)
    local g = grid.new(4, 64, 64)
    local e = w:create()
    P:add(e, 3, 3); C:add(e, 1, 1, 1)
    local function try(f, ...)
      local ok, err = pcall(f, ...)
      if not ok then assert.equals("string", type(err)) end
    end
    for _, j in ipairs(values) do
      local v = j[2]
      try(grid.new, v, 1, 1); try(grid.new, 1, v, 1); try(grid.new, 1, 1, v)
      for _, m in ipairs({ "build", "pairs", "nearest", "count", "size" }) do
        local f = g[m]
        try(f, v); try(f, g, v); try(f, g, P, v); try(f, g, v, C)
        try(f, g, 1, 2, v); try(f, g, 1, 2, 3, v); try(f, g, 1, 2, 3, 1, v)
      end
      assert.equals(1, g:build(P, C))   -- and it still works
      assert.equals(e, (g:nearest(3, 3, 1, 1)))
    end
    other:close()
  end)

  it("keeps answering from its last build after the world closed", function()
    local e = w:create()
    P:add(e, 1, 1); C:add(e, 1, 1, 1)
    local g = grid.new(4, 32, 32)
    g:build(P, C)
    w:close()
    assert.equals(1, g:count())
    assert.equals(0, (g:pairs()))
    assert.has_error(function() g:build(P, C) end, "attempt to use a closed world")
    w = ecs.world()
  end)
end)
