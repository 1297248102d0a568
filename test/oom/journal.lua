-- journal.lua -- the journal under failing allocations: world:journal,
-- the captures of writes, destroys and creations, j:delta, apply_delta and
-- j:undo, with lua values, the built-ins and a plugin manager.
-- A capture that finds no memory marks the journal lost (the write itself
-- goes on) and the next delta or undo raises "not enough memory (the
-- journal could not record a change ...)"; a delta that fails leaves the
-- mark where it was; apply_delta and undo are all or nothing. verify checks
-- each: after any failure the source's journal (unless lost) still gives a
-- delta that makes the replica equal to the source, and the replica and
-- the source are each in one of the states they may be in.
-- every key exists from the start: storing one must not allocate (a run
-- must not fail between a call and the note of its result)
local state = { stage = "", R = false, j = false, es = false, d = false,
                source = false, mark = false, pre = false }

local function values(W)
  local P, V = W:find_component("P"), W:find_component("V")
  local out = {}
  for e in W:entities() do
    local p = { P:get(e) }
    if p[1] == nil and not V:has(e) then goto next end
    local row = { ecs_id = tostring(e), p[1] or "-", type(p[2]) == "table" and p[2][1] or p[2] or "-",
                  V:get(e) or "-", W.names:get(e) or "-" }
    if W.transform:has(e) then
      local x, y, z = W.transform:local_position(e)
      row[#row + 1] = x + 10 * y + 100 * z
    end
    out[#out + 1] = table.concat(row, ",", 1, #row)
    ::next::
  end
  table.sort(out)
  return table.concat(out, ";")
end

return {
  run = function(ecs, W)
    state.stage = "build"
    local P = W:component("P", { "x:f32", "s:lua" })
    local V = W:component("V", { "dx:f64" })
    local PM = require("ecs.pointmass").new(W)
    local es = W:create(40)
    for i, e in ipairs(es) do
      P:add(e, i, { i })
      if i % 2 == 0 then V:add(e, i) end
      if i <= 6 then W.transform:add(e) end
      if i % 5 == 0 then PM:add(e, 1, i) end
    end
    W.names:set(es[1], "one")
    state.es = es
    local R = ecs.restore(W:snapshot())
    state.R = R
    state.stage = "open"
    local j = W:journal()
    state.j = j
    state.stage = "record"
    for i = 1, 10 do P:set(es[i], -i, { "s", i }) end
    V:set_field(es[14], "dx", 0.5)
    -- single writes: their values copied at the write (after-images),
    -- whose room may fail (then the delta reads the rows)
    for i = 2, 40, 2 do V:set_field(es[i], "dx", i * 0.25) end
    V:set(es[16], -1)
    V:set(es[16], -2)
    W:destroy(es[11])
    W:destroy(es[12])
    for _, e in ipairs(W:create(5)) do V:add(e, 7) end
    W:spawn(3, { P = { x = 3, s = "spawned" } })
    W.transform:set_local_position(es[1], 1, 2, 3)
    W.names:set(es[3], "three")
    PM:remove(es[5])
    W:query(P):apply("P.x = P.x + 1")
    state.stage = "delta"
    local d = j:delta()
    state.d = d
    state.stage = "delta taken"
    state.stage = "apply"
    R:apply_delta(d)
    state.stage = "applied"
    state.mark = values(W)
    P:set(es[20], 99)
    W:destroy(es[21])
    W:create(3)
    W.names:clear(es[3])
    state.pre = values(W)
    state.stage = "undo"
    j:undo()
    state.stage = "done"
    assert(values(W) == state.mark)
  end,
  verify = function(_, W)
    local j, R = state.j, state.R
    if not j or not R then return end
    if state.stage == "apply" or state.stage == "delta taken" then
      -- (the host made an entity before verify: compare with the delta's
      -- result hash, bytes 21..28)
      state.source = string.unpack("<i8", state.d, 21)
      -- all or nothing: the replica is at the base or at the source
      if R:state_hash() ~= state.source then R:apply_delta(state.d) end
      assert(R:state_hash() == state.source, "a failed apply_delta changed the replica")
      return
    end
    if state.stage == "undo" then
      local v = values(W)
      assert(v == state.pre or v == state.mark, "a failed undo left the world half done")
      return
    end
    if state.stage ~= "record" and state.stage ~= "delta" then return end
    local fine, why = W:check() -- the journal's copies equal their rows
    assert(fine, why)
    -- the journal is lost, or its delta brings the replica to the source
    -- (a failed delta left the mark where it was)
    local ok, d = pcall(j.delta, j)
    if not ok then
      assert(tostring(d):find("not enough memory", 1, true), d)
      return
    end
    local applied, err = pcall(R.apply_delta, R, d)
    assert(applied, tostring(err) .. " (failed in stage " .. state.stage .. ")")
    assert(R:state_hash() == W:state_hash(), "replica differs from the source")
    assert(values(R) == values(W), "replica's values differ from the source's")
  end,
}
