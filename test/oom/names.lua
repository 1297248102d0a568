-- names.lua -- names: long names, odd bytes (a zero byte is an error:
-- spec/binding/strings_spec.lua), renames, shared names,
-- growth of the hash table, clear, destroy, gc.
return function(ecs, W)
  local N = W.names
  local es = W:create(300)
  for i, e in ipairs(es) do N:set(e, "entity-" .. i) end
  for i = 1, 300, 3 do N:set(es[i], string.rep("long", 50) .. i) end
  N:set(es[2], "a\1b\255")
  assert(N:get(es[2]) == "a\1b\255")
  for i = 1, 300, 5 do N:set(es[i], "shared") end
  assert(N:find("shared") ~= nil)
  for i = 1, 300, 7 do N:clear(es[i]) end
  W:destroy({ table.unpack(es, 1, 150) })
  N:gc(3)
  N:gc()
  for i = 151, 300 do N:set(es[i], "renamed" .. i) end
  assert(N:find("renamed300") == es[300])
end
