--[[
bench_changed.lua -- change detection (docs/queries.md, "Change detection"),
ratios measured in one run (issue 15's targets):

  C1  a `changed` query over N entities of which 1% were written since its
      last pass, against a full pass of the same loop over every entity:
      q:each (a Lua function per entity) and q:apply (C), each ratio at
      most 5%.
  C2  the writes themselves: set_field on 1% of the entities, P watched by
      a changed query against P watched by none (the stamp is one store).
  C3  a full q:apply pass over a watched component against an unwatched
      one (the run stamps every row it writes).

Best of 5 runs each. Usage: lua5.4 bench/bench_changed.lua [N]
(with ecs on package.cpath/path; N defaults to 1000000).
]]
local ecs = require("ecs")

local N = tonumber(arg and arg[1]) or 1000000
local K = N // 100 -- the entities written per frame: 1%
local clock = os.clock

local function best(f)
  local b = math.huge
  for _ = 1, 5 do b = math.min(b, f()) end
  return b
end

local function world_of(n)
  local w = ecs.world()
  local P = w:component("P", { "x:f32", "y:f32" })
  w:spawn(n, { P = { x = 1, y = 2 } })
  return w, P
end

-- the K entities written each frame: spread over the whole list
local function victims(w, P)
  local es, list = {}, {}
  for e in w:query(P):entities() do es[#es + 1] = e end
  math.randomseed(7)
  for k = 1, K do list[k] = es[math.random(#es)] end
  return list
end

local function noop(_, x) return x end -- returns x: each writes it back

do -- C1
  local w, P = world_of(N)
  local full = w:query(P)
  local moved = w:query({ P, changed = { P } })
  local list = victims(w, P)
  local visit = function() end
  moved:each(visit, "P.x:in") -- its first pass: every match
  local t_full_each = best(function()
    local t0 = clock()
    full:each(visit, "P.x:in")
    return clock() - t0
  end)
  local t_changed_each = best(function()
    for k = 1, K do P:set_field(list[k], "x", k) end
    local t0 = clock()
    moved:each(visit, "P.x:in")
    return clock() - t0
  end)
  local t_full_apply = best(function()
    local t0 = clock()
    full:apply("P.y = P.x * 2")
    return clock() - t0
  end)
  moved:apply("P.y = P.x * 2") -- completes a pass after full's writes
  local t_changed_apply = best(function()
    for k = 1, K do P:set_field(list[k], "x", k) end
    local t0 = clock()
    moved:apply("P.y = P.x * 2")
    return clock() - t0
  end)
  print(string.format("C1 %d entities, %d written (1%%):", N, K))
  print(string.format("   each : full pass %.2f ms, changed pass %.3f ms, ratio %.3f (target 0.05)",
    t_full_each * 1e3, t_changed_each * 1e3, t_changed_each / t_full_each))
  print(string.format("   apply: full pass %.2f ms, changed pass %.3f ms, ratio %.3f",
    t_full_apply * 1e3, t_changed_apply * 1e3, t_changed_apply / t_full_apply))
  w:close()
end

do -- C2, C3
  local function writes(watch)
    local w, P = world_of(N)
    local q = watch and w:query({ P, changed = { P } }) or nil
    local list = victims(w, P)
    local t_set = best(function()
      local t0 = clock()
      for k = 1, K do P:set_field(list[k], "x", k) end
      return clock() - t0
    end)
    local all = w:query(P)
    local t_apply = best(function()
      local t0 = clock()
      all:apply("P.x += 1")
      return clock() - t0
    end)
    local t_each = best(function()
      local t0 = clock()
      all:each(noop, "P.x")
      return clock() - t0
    end)
    if q then q:count() end
    w:close()
    return t_set, t_apply, t_each
  end
  local s0, a0, e0 = writes(false)
  local s1, a1, e1 = writes(true)
  print(string.format("C2 set_field of %d entities: %.2f ms unwatched, %.2f ms watched, ratio %.2f",
    K, s0 * 1e3, s1 * 1e3, s1 / s0))
  print(string.format("C3 apply over %d: %.2f ms unwatched, %.2f ms watched, ratio %.2f",
    N, a0 * 1e3, a1 * 1e3, a1 / a0))
  print(string.format("   each writing back over %d: %.1f ms unwatched, %.1f ms watched, ratio %.2f",
    N, e0 * 1e3, e1 * 1e3, e1 / e0))
end
