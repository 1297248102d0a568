--[[
query_model.lua -- a pure-Lua model of entities, components and queries,
the reference for the randomized differential test of spec/query/query_spec.lua.
An entity is a set of component names; a query is a list of "with" names
and a list of "without" names; its matches are found by brute force over
every live entity, which is exactly what the contract says a query sees.
]]
local Model = {}
Model.__index = Model

function Model.new()
  return setmetatable({ ents = {} }, Model)  -- id -> set of component names
end

function Model:create(id) self.ents[id] = {} end

function Model:destroy(id)
  if not self.ents[id] then return false end
  self.ents[id] = nil
  return true
end

function Model:alive(id) return self.ents[id] ~= nil end

-- add: false when the entity is dead (the binding raises).
function Model:add(name, id)
  local s = self.ents[id]
  if not s then return false end
  s[name] = true
  return true
end

function Model:remove(name, id)
  local s = self.ents[id]
  if not s or not s[name] then return false end
  s[name] = nil
  return true
end

function Model:has(name, id)
  local s = self.ents[id]
  return s ~= nil and s[name] == true
end

-- q = { with = { names }, without = { names } }
function Model:matches(q, id)
  local s = self.ents[id]
  if not s then return false end
  for _, n in ipairs(q.with) do if not s[n] then return false end end
  for _, n in ipairs(q.without) do if s[n] then return false end end
  return true
end

-- The set of matching ids (id -> true) and its size.
function Model:match_set(q)
  local set, n = {}, 0
  for id in pairs(self.ents) do
    if self:matches(q, id) then set[id] = true; n = n + 1 end
  end
  return set, n
end

return Model
