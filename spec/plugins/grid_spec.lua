--[[
grid_spec.lua -- the uniform-grid plugin (plugins/grid.c, used by
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

--[[
Hostile numbers (issue 11): every combination of hostile values for the
three arguments of grid.new, and for each grid that results a build over
entities at hostile positions with hostile radii and layer bits, the pairs,
and nearest queries with hostile arguments, all checked against a model.
A grid either works (and its answers are the model's) or new raises a clean
error naming it; nothing may crash (this file also runs under ASan).
]]
describe("ecs.grid with hostile numbers", function()
  local HUGE, NAN, DMAX = math.huge, 0 / 0, 1.7976931348623157e308
  local MAXI, MINI = math.maxinteger, math.mininteger
  local NUMS = { 0, -0.0, -1, 1, 3, 0.5, 1e-30, 5e-324, 2.2250738585072014e-308, 1e30,
                 1e300, DMAX, HUGE, -HUGE, NAN, MAXI, MINI, 4096, 2 ^ 53 }
  local LIMIT = 1 << 24

  -- the grid's view of a stored number: clamped to 1e30, then an f32
  local function f32c(v)
    if v ~= v then return v end
    if v > 1e30 then v = 1e30 elseif v < -1e30 then v = -1e30 end
    return (string.unpack("<f", string.pack("<f", v)))
  end

  -- the cells grid.new must make, or nil when it must refuse
  local function model_size(c, wd, ht)
    local function ok(v) return v > 0 and v < HUGE end
    if not (ok(c) and ok(wd) and ok(ht)) then return nil end
    local cols = math.max(1.0, math.ceil(wd / c) + 0.0)
    local rows = math.max(1.0, math.ceil(ht / c) + 0.0)
    if cols * rows > LIMIT then return nil end
    return cols, rows
  end

  local w, P, C, live
  setup(function()
    w = ecs.world()
    P = w:component("HPos", { "x:f64", "y:f64" })
    C = w:component("HCol", { "r:f64", "layer:i64", "mask:i64" })
    local spots = {
      { 0, 0 }, { 1, 1 }, { -5, 3 }, { 0.25, 0.75 }, { 1e30, 1e30 }, { -1e300, 0 },
      { HUGE, -HUGE }, { NAN, 1 }, { 5e-324, -0.0 }, { 3.4e38, 1e-30 }, { 2 ^ 24, 2 ^ 53 },
      { MAXI + 0.0, MINI + 0.0 }, { 2, 0 }, { 0, NAN },
    }
    local radii = { 0, 1, 0.5, 1e300, HUGE, NAN, -1, 1e-30, 3, 1e30, 5e-324, 2, 0.5, 1 }
    local layers = { 1, 2, 1, 3, 1 << 32, 1, MINI, -1, 1, 2, 1, 1, 5, 1 }
    local masks = { -1, 1, 0, 2, 1, MINI, 1, 3, (1 << 32) | 1, 0, -1, 1, 4, 1 }
    live = {}
    for i, s in ipairs(spots) do
      local e = w:create()
      P:add(e, s[1], s[2])
      C:add(e, radii[i], layers[i], masks[i])
      local r = radii[i]
      live[#live + 1] = { e = e, x = f32c(s[1]), y = f32c(s[2]),
                          r = r >= 0 and f32c(r) or 0.0,
                          layer = layers[i] & 0xFFFFFFFF, mask = masks[i] & 0xFFFFFFFF }
    end
  end)
  teardown(function() w:close() end)

  local function model_pairs()
    local want, n = {}, 0
    for _, a in ipairs(live) do
      for _, b in ipairs(live) do
        if a ~= b and a.mask & b.layer ~= 0 then
          local dx, dy, rr = b.x - a.x, b.y - a.y, a.r + b.r
          if dx * dx + dy * dy <= rr * rr then
            local key = ecs.id(a.e) .. ":" .. ecs.id(b.e)
            want[key] = (want[key] or 0) + 1
            n = n + 1
          end
        end
      end
    end
    return want, n
  end

  local function dist(dx, dy)   -- without overflow, like C's hypot
    local m = math.max(math.abs(dx), math.abs(dy))
    if math.abs(dx) == HUGE or math.abs(dy) == HUGE then return HUGE end
    if dx ~= dx or dy ~= dy then return NAN end
    if m == 0 then return m end
    return m * math.sqrt((dx / m) ^ 2 + (dy / m) ^ 2)
  end

  -- a plain check for the hot loops (busted's asserts cost more than the grid)
  local function expect(cond, where, ...)
    if not cond then error(string.format(where, ...), 2) end
  end

  -- check g:nearest(x, y, rad, layers) against the model
  local function check_nearest(g, x, y, rad, layers, where)
    local ok, e, d = pcall(function() return g:nearest(x, y, rad, layers) end)
    if rad ~= rad or rad < 0 then
      expect(not ok, "%s: no error", where)
      expect(e:find("bad argument #3 to 'nearest' (radius must ", 1, true), "%s: %s", where, e)
      return
    end
    expect(ok, "%s: %s", where, e)
    if x ~= x or y ~= y then expect(e == nil, "%s: not nil", where); return end
    local far = not (math.abs(x) < 1e150 and math.abs(y) < 1e150)
    local best, found
    for _, m in ipairs(live) do
      m.key = nil
      if m.layer & layers ~= 0 then
        local dx, dy = m.x - x, m.y - y
        local k = far and dist(dx, dy) or dx * dx + dy * dy
        m.key = k
        if (far and k <= rad) or (not far and k <= rad * rad) then
          if best == nil or k < best then best = k end
        end
      end
      if m.e == e then found = m end
    end
    if not far then
      if best == nil then expect(e == nil, "%s: found one", where); return end
      expect(found, "%s: found none", where)
      expect(found.key == best, "%s: not the nearest", where)
      expect(d == math.sqrt(best), "%s: distance %.17g", where, d)
    else -- hypot may differ from the model in the last bit: compare loosely
      local tol = 1e-12
      if e == nil then
        expect(best == nil or best >= rad * (1 - tol), "%s: found none", where)
        return
      end
      expect(found and found.key, "%s: an entity of another layer", where)
      expect(found.key <= rad * (1 + tol), "%s: beyond radius", where)
      expect(best == nil or found.key <= best * (1 + tol) or found.key == best,
        "%s: not the nearest", where)
      expect(d == found.key or math.abs(d - found.key) <= found.key * tol,
        "%s: distance %.17g", where, d)
    end
  end

  local QX = { 0, -1, 0.5, 1e30, 1e300, -HUGE, NAN, 5e-324, 2 ^ 53, 3 }
  local QR = { 0, 1, 1e30, HUGE, -1, NAN, 5e-324, 1e300, 2.5, 0.5, -0.0 }
  local QL = { 1, -1, 0, MINI, 3 }

  it("makes a grid for every valid combination of new's arguments, and it answers like the model", function()
    local made, refused, q = 0, 0, 0
    for _, c in ipairs(NUMS) do
      for _, wd in ipairs(NUMS) do
        for _, ht in ipairs(NUMS) do
          local where = string.format("grid.new(%.17g, %.17g, %.17g)", c, wd, ht)
          local ok, g = pcall(grid.new, c, wd, ht)
          local cols, rows = model_size(c, wd, ht)
          if not ok then
            expect(cols == nil, "%s refused: %s", where, g)
            expect(type(g) == "string" and (g:find("^bad argument #%d to 'ecs%.grid%.new' %(")
              or g:find("^grid%.new: too many cells")), "%s: %s", where, g)
            refused = refused + 1
          else
            expect(cols, "%s made a grid", where)
            made = made + 1
            local gc, gr, gcell = g:size()
            expect(cols == gc and rows == gr and c + 0.0 == gcell, "%s: size %s %s %s",
              where, gc, gr, gcell)
            expect(g:build(P, C) == #live, "%s: build", where)
            local want, nwant = model_pairs()
            local n, as, bs = g:pairs()
            expect(n == nwant, "%s: %d pairs, model %d", where, n, nwant)
            for k = 1, n do
              local key = ecs.id(as[k]) .. ":" .. ecs.id(bs[k])
              expect(want[key], "%s: pair %s", where, key)
              want[key] = want[key] - 1
              if want[key] == 0 then want[key] = nil end
            end
            expect(next(want) == nil, "%s: a pair missing", where)
            -- a rotating sample of the query space for each grid
            for j = 1, 12 do
              q = q + 1
              local x = QX[q % #QX + 1]
              local y = QX[(q // #QX + j) % #QX + 1]
              local rad = QR[(q * 7 + j) % #QR + 1]
              local layers = QL[(q * 3 + j) % #QL + 1]
              check_nearest(g, x, y, rad, layers,
                where .. string.format(":nearest(%.17g, %.17g, %.17g, %d)", x, y, rad, layers))
            end
            if cols * rows > 1e5 then g = nil; collectgarbage() end  -- luacheck: ignore 311 (up to 64 MB each)
          end
        end
      end
    end
    assert.is_true(made >= 700 and refused >= 6000, made .. " made, " .. refused .. " refused")
  end)

  it("stops at 2^24 cells, counted after rounding up, with at least one cell a side", function()
    local cases = {
      { 1, 2 ^ 24, 1, 2 ^ 24, 1 }, { 1, 1, 2 ^ 24, 1, 2 ^ 24 }, { 1, 2 ^ 12, 2 ^ 12, 2 ^ 12, 2 ^ 12 },
      { 1, 2 ^ 24 + 1, 1 }, { 1, 2 ^ 24, 1.5 }, { 0.5, 2 ^ 23, 1 }, { 1, 2 ^ 12 + 0.5, 2 ^ 12 },
      { 1e300, 1e-30, 1e-30, 1, 1 }, { DMAX, 5e-324, DMAX, 1, 1 }, { 5e-324, 5e-324, 5e-324, 1, 1 },
      { 1e-30, 1, 1e-30 }, { 5e-324, 1, 1 }, { 5e-324, DMAX, DMAX },
    }
    for _, c in ipairs(cases) do
      local where = string.format("grid.new(%.17g, %.17g, %.17g)", c[1], c[2], c[3])
      local ok, g = pcall(grid.new, c[1], c[2], c[3])
      if c[4] then
        assert.is_true(ok, where)
        local cols, rows = g:size()
        assert.equals(c[4], cols, where)
        assert.equals(c[5], rows, where)
        assert.equals(#live, g:build(P, C), where)
        assert.equals(select(2, model_pairs()), (g:pairs()), where)
        check_nearest(g, 0.5, 0.5, HUGE, -1, where)
        g = nil -- luacheck: ignore 311 (dropped for the collector)
        collectgarbage()
      else
        assert.is_false(ok, where)
        assert.matches("^grid%.new: too many cells %(.* x .*, limit 16777216%)$", g)
      end
    end
  end)

  it("takes every hostile number in every argument of every method: works or a clean error", function()
    local g = grid.new(1, 8, 8)
    g:build(P, C)
    local methods = { "build", "pairs", "nearest", "count", "size" }
    local base = { build = { P, C }, pairs = {}, nearest = { 0, 0, 1, 1 }, count = {}, size = {} }
    local call = {  -- method calls, so that errors can name the method
      build = function(...) return g:build(...) end,
      pairs = function(...) return g:pairs(...) end,
      nearest = function(...) return g:nearest(...) end,
      count = function(...) return g:count(...) end,
      size = function(...) return g:size(...) end,
    }
    for _, m in ipairs(methods) do
      for pos = 1, 5 do
        for _, v in ipairs(NUMS) do
          local args = { table.unpack(base[m]) }
          args[pos] = v
          local ok, err = pcall(call[m], table.unpack(args, 1, 5))
          if not ok then
            assert.equals("string", type(err))
            assert.matches("to '" .. m .. "'", err, 1, true)
          end
        end
      end
    end
    assert.equals(#live, g:count())
  end)
end)
