--[[
id_set.lua -- sets of entities written as text, for assert.equal: the
sorted ids joined by commas, so that a failure shows which ids differ.
  local id_set = require("spec.support.id_set")
  assert.equal(id_set.of(a, b), id_set.visited(q))   -- q:entities() as a set
]]
local ecs = require("ecs")

local M = {}

local function text(list)
  table.sort(list)
  return table.concat(list, ",")
end

-- The entities given.
function M.of(...)
  local out = {}
  for _, e in ipairs({ ... }) do out[#out + 1] = ecs.id(e) end
  return text(out)
end

-- The entities a pass of q:entities() visits.
function M.visited(q)
  local out = {}
  for e in q:entities() do out[#out + 1] = ecs.id(e) end
  return text(out)
end

return M
