--[[
component_model.lua -- a pure-Lua model of entities and component managers,
the reference for the randomized differential test. It has none of the
C side's machinery (no swap-remove, no map, no lazy gc): an entity's
components live in plain tables keyed by entity id and vanish the moment
the entity dies, which is exactly what the contract says every read sees.
]]
local Model = {}
Model.__index = Model

function Model.new()
  return setmetatable({ alive = {}, comps = {}, nfields = {} }, Model)
end

-- Register a component with n fields.
function Model:component(name, nfields)
  self.comps[name] = {}
  self.nfields[name] = nfields
end

function Model:create(id) self.alive[id] = true end

function Model:destroy(id)
  if not self.alive[id] then return false end
  self.alive[id] = nil
  for _, c in pairs(self.comps) do c[id] = nil end
  return true
end

function Model:is_alive(id) return self.alive[id] == true end

-- add: error if dead; overwrites; missing values are zero (given as defaults).
function Model:add(name, id, values)
  if not self.alive[id] then return false, "entity is not alive" end
  self.comps[name][id] = values
  return true
end

function Model:set(name, id, values)
  if not self.alive[id] then return false, "entity is not alive" end
  if not self.comps[name][id] then return false, "entity does not have the component" end
  self.comps[name][id] = values
  return true
end

function Model:set_field(name, id, k, v)
  if not self.alive[id] then return false, "entity is not alive" end
  local r = self.comps[name][id]
  if not r then return false, "entity does not have the component" end
  local copy = { (table.unpack or unpack)(r, 1, self.nfields[name]) } -- luacheck: ignore 113
  copy[k] = v
  self.comps[name][id] = copy
  return true
end

function Model:remove(name, id)
  if not self.alive[id] or not self.comps[name][id] then return false end
  self.comps[name][id] = nil
  return true
end

function Model:has(name, id) return self.comps[name][id] ~= nil end

function Model:get(name, id) return self.comps[name][id] end

function Model:count(name)
  local n = 0
  for _ in pairs(self.comps[name]) do n = n + 1 end
  return n
end

return Model
