-- migrate.lua -- migration under failing allocations: a live component
-- redefined in place (kept, renamed, dropped and converted fields, numbers
-- becoming lua values, an expression system checked against the new
-- schema) and a blob with older schemas restored with { migrate = true }.
-- Both are all or nothing: verify checks that after any failure the
-- component is wholly under its old schema with its old values or wholly
-- under the new one with the converted values, and that the restore left
-- the world as it was or made it the migrated blob's.
-- every key exists from the start: storing one must not allocate
local state = { stage = "", es = false, old = false, new = false,
                before = false, after = false }

local OLD = { "x:f64", "n:i32", "s:lua", "gone:lua" }
local NEW = { "x:f32", "n:lua", "s:lua", "t:lua" }

local function values(W)
  local P = W:find_component("P")
  local out = {}
  for i, e in ipairs(state.es) do
    local v = { P:get(e) }
    for k = 1, #v do
      if type(v[k]) == "table" then v[k] = "{" .. tostring(v[k][1]) .. "}" end
      v[k] = tostring(v[k])
    end
    out[i] = table.concat(v, ",")
  end
  return table.concat(P:fields(), " ") .. "|" .. table.concat(out, ";")
end

return {
  run = function(ecs, W)
    state.stage = "build"
    local P = W:component("P", OLD)
    local es = W:create(30)
    for i, e in ipairs(es) do P:add(e, i + 0.25, i, { i }, i % 3 == 0 and "g" or nil) end
    W:destroy(es[30])
    es[30] = nil
    state.es = es
    local q = W:query(P)
    W:system("move", q, "P.x = P.x + 1")
    state.old = values(W)
    state.stage = "redefine"
    assert(rawequal(P, W:component("P", NEW, { migrate = { rename = { gone = "t" } } })))
    state.stage = "redefined"
    state.new = values(W)
    W:update(1)
    -- a save of the old schema, restored with migration
    local old = ecs.world()
    local O = old:component("P", OLD)
    local Legacy = old:component("Legacy", { "a:lua" })
    local oes = old:create(30)
    for i, e in ipairs(oes) do O:add(e, i * 2, -i, "o" .. i, { i }); Legacy:add(e, { i }) end
    old:destroy(oes[30])
    local blob = old:snapshot()
    old:close()
    state.before = values(W)
    state.stage = "restore"
    W:restore(blob, { migrate = true })
    state.stage = "restored"
    state.after = values(W)
    assert(state.after:find("x:f32 n:lua s:lua t:lua|2.0,-1,o1;4.0,-2,o2;", 1, true) == 1, state.after)
    assert(W:find_component("Legacy") == nil)
    W:update(1)
  end,
  verify = function(_, W)
    if state.stage == "redefine" then
      local v = values(W)
      assert(v == state.old or v == state.new, "a failed redefinition left P half changed: " .. v)
      W:update(1) -- the system runs under whichever schema P has
    elseif state.stage == "restore" then
      local v = values(W)
      assert(v == state.before or v:find("x:f32 n:lua s:lua t:lua|2.0,-1,o1;4.0,-2,o2;", 1, true) == 1,
             "a failed migrating restore left the world half changed: " .. v)
    end
  end,
}
