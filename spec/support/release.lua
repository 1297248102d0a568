--[[
release.lua -- the shared after_each of specs that own a world: unless the
test closed it, the world must pass its consistency check, then it is
closed. Usage: after_each(function() release(w) end)
]]
return function(w)
  if not pcall(w.count, w) then return end -- closed by the test itself
  local ok, bad = w:check()
  w:close()
  assert(ok, "world:check() failed: " .. tostring(bad))
end
