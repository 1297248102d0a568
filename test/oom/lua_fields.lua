-- lua_fields.lua -- many lua fields: values held and dropped (refs drained)
-- through add, set, remove, destroy and gc.
return function(ecs, W)
  local B = W:component("Brain", { "script:lua", "memo:lua", "n:i32" })
  local es = W:create(200)
  for i, e in ipairs(es) do B:add(e, function() return i end, { i, tostring(i) }, i) end
  for i = 1, 200, 2 do B:set(es[i], "s" .. i, nil, i) end
  for i = 1, 200, 3 do B:set_field(es[i], "memo", { big = string.rep("x", i) }) end
  for i = 1, 200, 7 do B:remove(es[i]) end
  W:destroy({ table.unpack(es, 1, 100) })
  B:gc(5)
  for i = 101, 200 do B:add(es[i], "again", "and again", -i) end
  W:destroy(es)
  B:gc()
  assert(B:count() == 0)
end
