--[[
transform_query_spec.lua -- world.transform as a query term: with / without /
changed / added terms; the columns transform.px .. sz and read-only wx .. wz
on every bulk path (cleaning, normalization, propagation); bulk writes against
the per-entity setters on random hierarchies (differential); structural
changes inside loops; journal, delta and snapshots; errors; GC stress.
]]
local ecs = require("ecs")
local err_of = require("spec.support.err_of")
local Model = require("spec.support.transform_model")

local ROT = { "transform.qx", "transform.qy", "transform.qz", "transform.qw" }
local TEN = { "transform.px", "transform.py", "transform.pz", "transform.sx", "transform.sy", "transform.sz",
              ROT[1], ROT[2], ROT[3], ROT[4] }
local DBL_MAX = 1.7976931348623157e308

local prng = require("spec.support.prng") -- a seeded 64-bit LCG

-- the 24 Hurwitz units: quaternions whose sum of squares is exactly 1
local HURWITZ = {}
for m = 0, 23 do
  local q = { 0, 0, 0, 0 }
  for i = 1, 4 do q[i] = m >= 8 and (((m - 8) >> (i - 1)) & 1 == 0 and 0.5 or -0.5) or q[i] end
  if m < 8 then q[m // 2 + 1] = m % 2 == 0 and 1 or -1 end
  HURWITZ[m + 1] = q
end

-- locals (px py pz qx qy qz qw sx sy sz) then the world matrix, per call
local NAMES = { "px", "py", "pz", "qx", "qy", "qz", "qw", "sx", "sy", "sz" }
local function state(T, e)
  local t = { T:local_position(e) }
  for _, v in ipairs({ T:local_rotation(e) }) do t[#t + 1] = v end
  for _, v in ipairs({ T:local_scale(e) }) do t[#t + 1] = v end
  for _, v in ipairs({ T:world_matrix(e) }) do t[#t + 1] = v end
  return t
end

local function depth(T, e)
  local d = 0
  while T:parent(e) ~= ecs.null do e, d = T:parent(e), d + 1 end
  return d
end
local function height(T, e)
  local h = 0
  for c in T:children(e) do h = math.max(h, 1 + height(T, c)) end
  return h
end
-- c may become p's child: no cycle, and no tree deeper than 6
local function can_parent(w, T, c, p)
  if c == p or not (w:alive(c) and w:alive(p) and T:has(c) and T:has(p)) then return false end
  local a = T:parent(p)
  while a ~= ecs.null and a ~= c do a = T:parent(a) end
  return a ~= c and depth(T, p) + 1 + height(T, c) <= 6
end

-- the matches of q are exactly the list want
local function assert_matches(q, want, label)
  local got, n, due = {}, 0, q:count()
  for e in q:entities() do got[e], n = true, n + 1 end
  assert(n == #want and due == n, ("%s: %d matches (count %d), expected %d"):format(label, n, due, #want))
  for _, e in ipairs(want) do assert(got[e], label .. ": " .. ecs.tostring(e) .. " not matched") end
end

-- every world matrix against a recomputation from the per-call local reads
local function assert_current(w, T, label)
  for e in w:entities() do
    if T:has(e) then
      local m, x = nil, e
      repeat
        local l = Model.trs({ T:local_position(x) }, { T:local_rotation(x) }, { T:local_scale(x) })
        m = m and Model.mul(l, m) or l
        x = T:parent(x)
      until x == ecs.null
      local got = { T:world_matrix(e) }
      for k = 1, 16 do
        assert(math.abs(got[k] - m[k]) <= 1e-9 * (1 + math.abs(m[k])),
               ("%s: %s world[%d] = %.17g, recomputed %.17g"):format(label, ecs.tostring(e), k, got[k], m[k]))
      end
    end
  end
end

-- n entities with V; chains of four (uniform scale 2, a quarter turn about z)
local function world_with(n)
  local w = ecs.world()
  local T, V = w.transform, w:component("V", { "dx", "dy", "dz" })
  local es = w:create(n)
  for i, e in ipairs(es) do
    V:add(e, i, -i, 0.5)
    T:add(e, { position = { i, 2 * i, 0 }, rotation = { 0, 0, 1, 1 }, scale = { 2, 2, 2 } })
    if i % 4 ~= 1 then T:set_parent(e, es[i - 1]) end
  end
  return w, T, V, es, w:query(V, T)
end

describe("world.transform as a query term", function()
  it("with / without / plain terms follow T:add, T:remove, destroy, destroy_tree and world:restore", function()
    local r, w = prng(11), ecs.world()
    local T, V = w.transform, w:component("V", { "dx" })
    local with, without, plain = w:query(V, T), w:query({ V, without = { T } }), w:query(T)
    local es = w:create(40)
    for i, e in ipairs(es) do if i % 3 > 0 then V:add(e, i) end end
    local function oracle()
      local a, b, c = {}, {}, {}
      for e in w:entities() do
        if T:has(e) then c[#c + 1] = e end
        if T:has(e) and V:has(e) then a[#a + 1] = e elseif V:has(e) then b[#b + 1] = e end
      end
      return { a, b, c }
    end
    local function check(label, want)
      assert_matches(with, want[1], label .. " with")
      assert_matches(without, want[2], label .. " without")
      assert_matches(plain, want[3], label .. " plain")
      assert.is_true(w:check())
    end
    local blob, saved
    for step = 1, 300 do
      local i = r.int(#es)
      local e, op = es[i], r.int(6)
      if not w:alive(e) then
        es[i] = w:create()
        if r.int(2) == 1 then V:add(es[i], step) end
      elseif op == 1 and not T:has(e) then T:add(e, { position = { step, 0, 0 } })
      elseif op == 2 then T:remove(e)
      elseif op == 3 then w:destroy(e)
      elseif op == 4 and T:has(e) then T:destroy_tree(e)
      elseif op == 5 then
        local p = es[r.int(#es)]
        if can_parent(w, T, e, p) then T:set_parent(e, p, r.int(2) == 1) end
      elseif V:has(e) then V:remove(e)
      else V:add(e, step)
      end
      check("step " .. step, oracle())
      if step == 100 then
        blob, saved = w:snapshot(), oracle()
      elseif step == 200 then
        w:restore(blob) -- in place: the query objects stay valid
        check("restored", saved)
      end
    end
    w:close()
  end)

  it("changed / added terms see setters, propagation, bulk writes, T:add and restore", function()
    local w = ecs.world()
    local T, V = w.transform, w:component("V", { "dx" })
    local es = w:create(6)
    for i, e in ipairs(es) do V:add(e, i) end
    for i = 1, 5 do T:add(es[i], { position = { i, 0, 0 } }) end
    T:set_parent(es[2], es[1])
    T:set_parent(es[3], es[2])
    local changed, added, q = w:query({ V, changed = { T } }), w:query({ V, added = { T } }), w:query(V, T)
    local function pass(label, want_changed, want_added)
      assert_matches(changed, want_changed, label .. " changed")
      assert_matches(added, want_added or {}, label .. " added")
    end
    local first = { es[1], es[2], es[3], es[4], es[5] }
    pass("first", first, first)
    pass("second", {})
    T:set_local_position(es[1], 9, 0, 0)
    pass("root moved", { es[1], es[2], es[3] })
    T:set_local_rotation(es[2], 0, 0, 1, 0)
    pass("middle turned", { es[2], es[3] })
    T:set_local_scales({ es[4] }, { 2 }, { 2 }, { 2 })
    pass("batch setter", { es[4] })
    T:add(es[6])
    pass("T:add", { es[6] }, { es[6] })
    local heard = 0 -- bulk writes notify no transform observer
    local o = T:on_set(function() heard = heard + 1 end)
    q:apply("transform.py += 1")
    pass("q:apply", { es[1], es[2], es[3], es[4], es[5], es[6] })
    for _ in q:columns("transform.px:in", "transform.wx:in") do end
    pass("read-only columns", {})
    q:each(function(e, px) if e == es[2] then return px + 1 end end, "transform.px")
    pass("q:each on one", { es[2], es[3] })
    w:system("lift", w:query({ V, T, without = { w:component("Skip") } }), "transform.pz += dt")
    w:update(0.5)
    pass("system", { es[1], es[2], es[3], es[4], es[5], es[6] })
    assert.equals(0, heard)
    T:set_local_scale(es[5], 1, 1, 1)
    assert.equals(1, heard)
    o:close()
    pass("setter", { es[5] })
    T:remove(es[6])
    pass("T:remove", {})
    local blob = w:snapshot()
    T:destroy_tree(es[2])
    assert.equals(3, q:count())
    w:restore(blob)
    pass("restore", first, first)
    assert.equals(5, q:count())
    assert.same({ 9, 1, 0.5 }, { T:world_position(es[1]) })
    assert.same({ 12, 2, 1 }, { T:world_position(es[2]) })
    local with, without = q:components()
    assert.equals(T, with[2])
    assert.same({}, without)
    with, without = w:query({ V, without = { T } }):components()
    assert.same({ V }, with)
    assert.equals(T, without[1])
    assert.is_true(w:check())
    w:close()
  end)

  -- two identical worlds (same seed): A moves through the bulk paths, B
  -- through the per-entity setters with the same arithmetic (one setter
  -- call per entity and op, as the bulk path cleans each row once); every
  -- local and world matrix must stay exactly equal
  local function differential(seed, opt)
    local function scene()
      local r, w = prng(seed), ecs.world()
      local T, V, Skip = w.transform, w:component("V", { "dx", "dy", "dz", "dw" }), w:component("Skip")
      local es = w:create(80)
      for i, e in ipairs(es) do
        V:add(e, r.float(-1, 1), r.float(-1, 1), r.float(-1, 1), r.float(-1, 1))
        if r.int(4) == 1 then Skip:add(e) end
        if r.int(10) > 1 then
          local rot = opt.hurwitz and HURWITZ[r.int(24)]
                      or { r.float(-1, 1), r.float(-1, 1), r.float(-1, 1), r.float(0.2, 1) }
          T:add(e, { position = { r.float(-5, 5), r.float(-5, 5), r.float(-5, 5) }, rotation = rot,
                     scale = { r.float(0.5, 2), r.float(0.5, 2), r.float(0.5, 2) } })
          local p = es[r.int(i)]
          if can_parent(w, T, e, p) then T:set_parent(e, p) end
        end
      end
      return { w = w, T = T, V = V, Skip = Skip, es = es, all = w:query(V, T),
               part = w:query({ V, T, without = { Skip } }) }
    end
    local A, B = scene(), scene()
    A.w:system("drift", A.part, "transform.px += V.dw * dt; transform.pz -= V.dy * dt")
    local integrate = require("ecs.motion").integrate("transform.py", "V.dz:in")
    local es = A.es -- the same handles in both worlds
    local function each_b(target, fn)
      for _, e in ipairs(es) do
        if B.w:alive(e) and B.T:has(e) and B.V:has(e) and (target == "all" or not B.Skip:has(e)) then
          fn(B.T, e, B.V:get(e))
        end
      end
    end
    local function compare(label)
      for i, e in ipairs(es) do
        assert(A.w:alive(e) == B.w:alive(e) and A.T:has(e) == B.T:has(e), label)
        local a, b = A.T:has(e) and state(A.T, e) or {}, B.T:has(e) and state(B.T, e) or {}
        for k = 1, #a do
          if a[k] ~= b[k] then
            error(("%s: entity #%d %s: bulk %.17g, setters %.17g"):format(label, i,
                  NAMES[k] or ("world[" .. (k - 10) .. "]"), a[k], b[k]))
          end
        end
      end
    end
    compare("built")
    local r = prng(seed + 1)
    for round = 1, 60 do
      local kind, target, k = r.int(8), r.int(2) == 1 and "all" or "part", r.float(-0.3, 0.3)
      local function b_set(what, fx, fy, fz) -- what: "position" or "scale"
        each_b(target, function(T, e, ...)
          local x, y, z = T["local_" .. what](T, e)
          T["set_local_" .. what](T, e, fx(x, ...), fy(y, ...), fz(z, ...))
        end)
      end
      local function keep(v) return v end
      if kind == 1 then
        A[target]:apply("transform.px += V.dx * k; transform.py -= V.dy * k; "
                        .. "transform.pz = transform.pz * 0.5 + V.dz", { k = k })
        b_set("position", function(x, dx) return x + dx * k end, function(y, _, dy) return y - dy * k end,
              function(z, _, _, dz) return z * 0.5 + dz end)
      elseif kind == 2 then
        A[target]:apply("transform.sx *= 1 + V.dx * k; transform.sz *= 1 - V.dz * k", { k = k })
        b_set("scale", function(x, dx) return x * (1 + dx * k) end, keep,
              function(z, _, _, dz) return z * (1 - dz * k) end)
      elseif kind == 3 and opt.hurwitz then
        local h = HURWITZ[r.int(24)]
        A[target]:apply("transform.qx = a; transform.qy = b; transform.qz = c; transform.qw = d",
                        { a = h[1], b = h[2], c = h[3], d = h[4] })
        each_b(target, function(T, e) T:set_local_rotation(e, h[1], h[2], h[3], h[4]) end)
      elseif kind == 3 then
        A[target]:apply("transform.qx += V.dx * k; transform.qy += V.dy * k; "
                        .. "transform.qz += V.dz * k; transform.qw += V.dw * k", { k = k })
        each_b(target, function(T, e, dx, dy, dz, dw)
          local x, y, z, qw = T:local_rotation(e)
          T:set_local_rotation(e, x + dx * k, y + dy * k, z + dz * k, qw + dw * k)
        end)
      elseif kind == 4 then
        for n, px, py, dx, dw in A[target]:columns("transform.px", "transform.py", "V.dx:in", "V.dw:in") do
          for i = 1, n do px[i], py[i] = px[i] + dx[i] * k, py[i] * dw[i] end
        end
        b_set("position", function(x, dx) return x + dx * k end, function(y, _, _, _, dw) return y * dw end, keep)
      elseif kind == 5 then
        A[target]:each(function(_, sx, sy, dz) return sx * (1 + dz * k), sy end,
                       "transform.sx", "transform.sy", "V.dz:in")
        b_set("scale", function(x, _, _, dz) return x * (1 + dz * k) end, keep, keep)
      elseif kind == 6 then
        A.w:update(k)
        B.w:update(k)
        target = "part"
        b_set("position", function(x, _, _, _, dw) return x + dw * k end, keep,
              function(z, _, dy) return z - dy * k end)
      elseif kind == 7 then
        A[target]:run(integrate, k)
        b_set("position", keep, function(y, _, _, dz) return y + dz * k end, keep)
      else -- the same structural change in both worlds
        local e, p, sub, kw = es[r.int(#es)], es[r.int(#es)], r.int(5), r.int(2) == 1
        for _, W in ipairs({ A, B }) do
          if sub == 1 and can_parent(W.w, W.T, e, p) then W.T:set_parent(e, p, true)
          elseif sub == 2 and W.w:alive(e) and W.T:has(e) then W.T:set_parent(e, ecs.null, kw)
          elseif sub == 3 and W.w:alive(p) and (opt.orphans or not W.T:has(p) or height(W.T, p) == 0) then
            W.w:destroy(p) -- with opt.orphans, p's children keep their world matrices
          elseif sub == 4 and W.w:alive(e) and not W.T:has(e) then
            W.T:add(e, { position = { round, 1, 2 }, scale = { 1, 2, 3 } })
          elseif sub == 5 and W.w:alive(p) then W.T:remove(p)
          end
        end
      end
      compare(("round %d, op %d on %s"):format(round, kind, target))
    end
    assert.is_true(A.w:check())
    assert.is_true(B.w:check())
  end

  it("bulk writes equal the per-entity setters exactly: exactly unit rotations, no orphans", function()
    differential(101, { hurwitz = true })
    differential(202, { hurwitz = true })
  end)

  it("bulk writes equal the per-entity setters exactly: rows whose parent was destroyed", function()
    differential(303, { hurwitz = true, orphans = true })
  end)

  it("bulk writes equal the per-entity setters exactly: arbitrary rotations", function()
    differential(404, {})
  end)

  it("refuses writes to transform.wx .. wz on every bulk path; reads them; is current after each write", function()
    local w, T, V, es, q = world_with(20)
    local motion = require("ecs.motion")
    local watch = w:query({ V, changed = { T } })
    for _ in watch:entities() do end
    local before = {}
    for i, e in ipairs(es) do before[i] = state(T, e) end
    local function refused(f, want)
      local msg = tostring(err_of(f))
      assert(msg:find(want, 1, true), ("expected %q in %q"):format(want, msg))
    end
    for _, f in ipairs({ "transform.wx", "transform.wy", "transform.wz" }) do
      local col = "column '" .. f .. "': the field is read-only (read it with '" .. f .. ":in')"
      local field = "field '" .. f .. "' is read-only at position "
      refused(function() q:apply("V.dx = 1; " .. f .. " += 1") end, "q:apply: " .. field .. "11")
      refused(function() w:system("s", q, f .. " = dt") end, "world:system: " .. field .. "1")
      refused(function() for _ in q:columns("transform.px", f) do end end, "q:columns: " .. col)
      refused(function() q:each(function() end, f) end, "q:each: " .. col)
      refused(function() q:run(motion.integrate(f, "V.dx:in"), 1) end, "q:run: " .. col)
      refused(function() w:system("n", q, motion.integrate(f, "V.dx:in")) end, "world:system: " .. col)
      w:system("ok", q, "transform.px += 0")
      refused(function() w:replace_system("ok", q, f .. " -= 1") end, "world:replace_system: " .. field .. "1")
      assert.same({ "ok" }, w:systems())
      w:remove_system("ok")
    end
    for i, e in ipairs(es) do assert.same(before[i], state(T, e)) end -- nothing was written
    assert.equals(0, watch:count())
    local seen = 0
    for n, e, wx, wy, wz in q:columns("entity", "transform.wx:in", "transform.wy:in", "transform.wz:in") do
      for i = 1, n do assert.same({ T:world_position(e[i]) }, { wx[i], wy[i], wz[i] }) end
      seen = seen + n
    end
    assert.equals(20, seen)
    q:each(function(e, x, y, z) assert.same({ T:world_position(e) }, { x, y, z }) end,
           "transform.wx:in", "transform.wy:in", "transform.wz:in")
    q:apply("V.dx = transform.wx; V.dy = transform.wy; V.dz = transform.wz")
    for _, e in ipairs(es) do assert.same({ T:world_position(e) }, { V:get(e) }) end
    -- every path leaves the rows it wrote, and their descendants, current at once
    local Child = w:component("Child")
    local roots = w:query({ V, T, without = { Child } })
    for i, e in ipairs(es) do if i % 4 ~= 1 then Child:add(e) end end
    w:system("up", roots, "transform.py += dt")
    for _, qq in ipairs({ q, roots }) do
      qq:apply("transform.px += 0.25")
      assert_current(w, T, "q:apply")
      for n, pz in qq:columns("transform.pz") do for i = 1, n do pz[i] = pz[i] - i end end
      assert_current(w, T, "q:columns")
      qq:each(function(_, sx) return sx * 1.5 end, "transform.sx")
      assert_current(w, T, "q:each")
      qq:run(motion.integrate("transform.px", "V.dx:in"), 0.125)
      assert_current(w, T, "q:run")
      w:update(0.5)
      assert_current(w, T, "system")
    end
    w:close()
  end)

  it("cleans what a bulk path stores: NaN, infinities, zero and non-finite rotations", function()
    local w, T, _, es, q = world_with(3)
    local paths = {
      function(v)
        q:apply("transform.px = a; transform.py = b; transform.pz = c; transform.sx = a; transform.sy = b; "
                .. "transform.sz = c; transform.qx = d; transform.qy = d; transform.qz = d; transform.qw = d", v)
      end,
      function(v)
        for n, px, py, pz, sx, sy, sz, qx, qy, qz, qw in q:columns(table.unpack(TEN)) do
          for i = 1, n do
            px[i], py[i], pz[i], sx[i], sy[i], sz[i] = v.a, v.b, v.c, v.a, v.b, v.c
            qx[i], qy[i], qz[i], qw[i] = v.d, v.d, v.d, v.d
          end
        end
      end,
      function(v) q:each(function() return v.a, v.b, v.c, v.a, v.b, v.c, v.d, v.d, v.d, v.d end, table.unpack(TEN)) end,
    }
    for path, write in ipairs(paths) do
      -- d = 0.5: a clean rotation (of length exactly 1) beside unclean numbers
      for _, d in ipairs({ 0, 0 / 0, math.huge, -math.huge, 0.5 }) do
        local r = d == 0.5 and 0.5 or nil
        write({ a = 0 / 0, b = math.huge, c = -math.huge, d = d })
        for _, e in ipairs(es) do
          assert.same({ 0, DBL_MAX, -DBL_MAX, r or 0, r or 0, r or 0, r or 1, 0, DBL_MAX, -DBL_MAX },
                      { table.unpack(state(T, e), 1, 10) }, "path " .. path)
        end
        assert.same({ 0, DBL_MAX, -DBL_MAX }, { T:world_position(es[1]) })
        assert.is_true(w:check())
      end
      write({ a = 1, b = 2, c = 3, d = 0.5 }) -- finite again: the hierarchy recomputes
      local s = state(T, es[3]) -- (the rotation's value: the tests below)
      assert.same({ 1, 2, 3, 1, 2, 3 }, { s[1], s[2], s[3], s[8], s[9], s[10] }, "path " .. path)
      assert(math.abs(s[4] ^ 2 + s[5] ^ 2 + s[6] ^ 2 + s[7] ^ 2 - 1) < 1e-15, "path " .. path)
      assert_current(w, T, "path " .. path)
    end
    w:close()
  end)

  -- a rotation stored by q:apply against the same one given to T:set_local_rotation
  local function same_as_setter(rotations)
    local w = ecs.world()
    local T, Ref = w.transform, w:component("Ref")
    local e, ref = w:create(), w:create()
    T:add(e)
    T:add(ref)
    Ref:add(ref)
    local q = w:query({ T, without = { Ref } })
    for _, r in ipairs(rotations) do
      T:set_local_rotation(ref, r[1], r[2], r[3], r[4])
      q:apply("transform.qx = a; transform.qy = b; transform.qz = c; transform.qw = d",
              { a = r[1], b = r[2], c = r[3], d = r[4] })
      assert.same({ T:local_rotation(ref) }, { T:local_rotation(e) }, table.concat(r, ", "))
    end
    w:close()
  end

  it("normalizes a non-unit bulk-written rotation to the setter's digits", function()
    same_as_setter({ { 0, 0, 0, -2 }, { 0, 0, 3, 4 }, { 1, 2, 3, 4 }, { -0.3, 0.1, 0.7, 0.2 } })
  end)

  it("keeps a tiny or huge finite bulk-written rotation (not the identity), as the setter does", function()
    same_as_setter({ { 1e-200, 0, 0, 0 }, { 3e-170, -4e-170, 0, 0 }, { 1e200, 1e200, 0, 0 } })
  end)

  it("normalizes a rotation written whole by q:columns or q:each once, as q:apply does", function()
    local w = ecs.world()
    local T, e = w.transform, w:create()
    T:add(e)
    local q = w:query(T)
    q:apply("transform.qx = 0; transform.qy = 0.5; transform.qz = 0.5; transform.qw = 0.5")
    local want = { T:local_rotation(e) } -- (0, 1, 1, 1) / sqrt(3)
    T:set_local_rotation(e, 0, 0, 0, 1)
    for _, x, y, z, qw in q:columns(table.unpack(ROT)) do x[1], y[1], z[1], qw[1] = 0, 0.5, 0.5, 0.5 end
    assert.same(want, { T:local_rotation(e) }, "q:columns")
    T:set_local_rotation(e, 0, 0, 0, 1)
    q:each(function() return 0, 0.5, 0.5, 0.5 end, table.unpack(ROT))
    assert.same(want, { T:local_rotation(e) }, "q:each")
    w:close()
  end)

  it("survives structural changes inside q:columns and q:each loops", function()
    local r, w = prng(5), ecs.world()
    local T, V = w.transform, w:component("V", { "dx" })
    local es = w:create(1500) -- two chunks of q:columns
    for i, e in ipairs(es) do
      V:add(e, r.float(-1, 1))
      local s = r.float(0.5, 2) -- uniform: no shear, so kept world matrices are plain TRS
      T:add(e, { position = { r.float(-9, 9), r.float(-9, 9), 0 }, scale = { s, s, s },
                 rotation = { r.float(-1, 1), r.float(-1, 1), r.float(-1, 1), 1 } })
      local p = es[r.int(i)]
      if can_parent(w, T, e, p) then T:set_parent(e, p) end
    end
    local q = w:query(V, T)
    local function chaos()
      local e, p, op = es[r.int(#es)], es[r.int(#es)], r.int(6)
      if not w:alive(e) then return end
      if op == 1 and can_parent(w, T, e, p) then T:set_parent(e, p, r.int(2) == 1)
      elseif op == 2 then T:remove(e)
      elseif op == 3 then w:destroy(e)
      elseif op == 4 and not T:has(e) then T:add(e, { position = { 1, 2, 3 } })
      elseif op == 5 and T:has(e) then T:destroy_tree(e)
      elseif op == 6 then
        es[#es + 1] = w:create()
        T:add(es[#es])
        V:add(es[#es], 1)
      end
    end
    for round = 1, 6 do
      for n, px, sx, sy, sz, dx in q:columns("transform.px", "transform.sx", "transform.sy", "transform.sz",
                                             "V.dx:in") do
        for i = 1, n do
          px[i], sx[i], sy[i], sz[i] = px[i] + dx[i], sx[i] * 1.01, sy[i] * 1.01, sz[i] * 1.01
          if i % 50 == round then chaos() end
        end
      end
      q:each(function(_, pz, dx)
        if r.int(40) == 1 then chaos() end
        return pz - dx
      end, "transform.pz", "V.dx:in")
      assert.is_true(w:check())
      assert_current(w, T, "round " .. round)
    end
    w:close()
  end)

  it("journal undo, delta and snapshots round-trip bulk writes exactly", function()
    local w, T, _, es, q = world_with(30)
    local part = w:query({ T, without = { w:component("Skip") } })
    local function all() local t = {} for i, e in ipairs(es) do t[i] = state(T, e) end return t end
    local function bulk(k)
      q:apply("transform.px += V.dx * k; transform.qx += 0.5; transform.sy *= 2", { k = k })
      for _, pz in q:columns("transform.pz") do for i = 1, #pz do pz[i] = k * i end end
      q:each(function(_, z) return z + k end, "transform.sz")
      part:apply("transform.qw = -transform.qw")
    end
    local replica = ecs.restore(w:snapshot())
    local base, h = all(), w:state_hash()
    local j = w:journal()
    bulk(0.25)
    T:destroy_tree(es[2])
    j:undo()
    assert.same(base, all())
    assert.equals(h, w:state_hash())
    bulk(0.5)
    replica:apply_delta(j:delta()) -- the mark moves to here
    local mid = all()
    assert.not_same(base, mid)
    for i, e in ipairs(es) do assert.same(mid[i], state(replica.transform, e)) end
    assert.equals(w:state_hash(), replica:state_hash())
    bulk(-3)
    j:undo()
    assert.same(mid, all())
    j:close()
    local blob = w:snapshot()
    local copy = ecs.restore(blob)
    for i, e in ipairs(es) do assert.same(mid[i], state(copy.transform, e)) end
    bulk(1)
    w:restore(blob)
    assert.same(mid, all())
    assert.equals(30, copy:query(copy.transform):apply("transform.py += 1"))
    assert.equals(mid[1][2] + 1, select(2, copy.transform:world_position(es[1]))) -- a root
    assert.is_true(w:check() and copy:check() and replica:check())
    for _, x in ipairs({ w, copy, replica }) do x:close() end
  end)

  it("raises for a transform of another world and for closed worlds", function()
    local w, T, V, _, q = world_with(2)
    local w2 = ecs.world()
    local V2 = w2:component("V", { "dx" })
    for _, f in ipairs({ function() return w2:query(T) end, function() return w2:query(V2, T) end,
                         function() return w2:query({ V2, without = { T } }) end,
                         function() return w2:query({ V2, changed = { T } }) end,
                         function() return w2:query({ added = { T } }) end }) do
      assert.matches("bad argument #%d to 'query' %(transform of another world%)", err_of(f))
    end
    assert.matches("component 'transform' listed twice", err_of(function() return w:query(T, T) end))
    assert.matches("component 'transform' listed twice", err_of(function() return w:query({ T, without = { T } }) end))
    assert.matches("'transform' is both excluded and in 'changed'",
                   err_of(function() return w:query({ V, without = { T }, changed = { T } }) end))
    w2:close()
    local T2 = w2.transform
    assert.matches("attempt to use a closed world", err_of(function() return w:query(V, T2) end))
    assert.matches("attempt to use a closed world", err_of(function() return w:query({ V, without = { T2 } }) end))
    w:close()
    for _, f in ipairs({ function() return w:query(T) end, function() return q:count() end,
                         function() return q:apply("transform.px = 1") end,
                         function() for _ in q:columns("transform.wx:in") do end end,
                         function() return q:each(function() end, "transform.px") end }) do
      assert.matches("attempt to use a closed world", err_of(f))
    end
  end)

  it("stays sound under full collections inside loops and dropped queries and worlds", function()
    local w, T, V, es, q = world_with(300)
    for round = 1, 3 do
      for n, px, e in q:columns("transform.px", "entity") do
        for i = 1, n, 60 do
          collectgarbage("collect")
          px[i] = px[i] + 1
          w:query({ V, changed = { T } }) -- dropped at once
          if i == 61 then w:destroy(e[i]) end
        end
      end
      q:each(function(_, py)
        if py % 7 == 0 then collectgarbage("collect") end
        return py + round
      end, "transform.py")
      do local scratch = ecs.world() scratch:query(scratch.transform):apply("transform.px = 1") end
      collectgarbage("collect")
      assert.is_true(w:check())
    end
    assert.equals(297, q:count())
    for i, e in ipairs(es) do
      -- a child of a destroyed parent became a root then, its local the
      -- decomposition of its world matrix: not 2 * i plus the rounds
      if w:alive(e) and (i % 4 == 1 or w:alive(es[i - 1])) then
        assert.equals(2 * i + 6, select(2, T:local_position(e)))
      end
    end
    assert_current(w, T, "after the collections")
    w:close()
  end)
end)
