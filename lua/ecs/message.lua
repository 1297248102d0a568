--[[
ecs.message -- send a message to an entity and its subtree.

As in "Component Entity Models in C++" (scene graph integration): handlers
are registered per component and message name; sending a message to an
entity visits the entity, then its children depth first through
world.transform:children (in attachment order), and for each visited entity
calls, in registration order, every handler of that message whose
component the entity has.

  local message = require("ecs.message")
  local bus = message.new(world)
  bus:on(Health, "damage", function(e, amount) ... end) -- a manager (any
                                  -- object with :has(e)) or a component name
  local calls = bus:send(car, "damage", 10)   -- car and everything below it
  bus:send_up(wheel, "bump")                  -- wheel, its parent, ... root
  bus:off(Health, "damage", fn)               -- unregister (fn nil: all)

Handlers may create, destroy and reparent entities: the children of a node
are read when the node is visited, and an entity that is no longer alive
when its turn comes is skipped. An error in a handler propagates unchanged
(the walk holds no state outside the call). Entities without a transform
receive the message themselves and have no subtree.
]]
local null = require("ecs").null

local message = {}

local Bus = {}
Bus.__index = Bus

local function check_name(name, fname)
  if type(name) ~= "string" then
    error(("message:%s: message name must be a string, got %s"):format(fname, type(name)), 3)
  end
end

-- A component given by name is looked up in world:components() at send
-- time (so it may be created after the handler is registered).
local function resolve(self, component)
  if type(component) ~= "string" then return component end
  local cache = self.by_name[component]
  if cache then return cache end
  if self.world.components then
    for _, c in ipairs(self.world:components()) do
      if c.name == component then
        self.by_name[component] = c
        return c
      end
    end
  end
  return nil
end

--- message.new(world) -> bus
function message.new(world)
  if world == nil or type(world.alive) ~= "function" then
    error("message.new: a world expected", 2)
  end
  return setmetatable({ world = world, handlers = {}, by_name = {} }, Bus)
end

--- bus:on(component, name, fn): fn(e, ...) for entities having component
function Bus:on(component, name, fn)
  local ct = type(component)
  if ct ~= "string" and (ct ~= "table" and ct ~= "userdata" or component.has == nil) then
    error("message:on: component must be a name or a manager with has()", 2)
  end
  check_name(name, "on")
  if type(fn) ~= "function" then error("message:on: handler must be a function", 2) end
  local list = self.handlers[name]
  if not list then
    list = {}
    self.handlers[name] = list
  end
  list[#list + 1] = { component = component, fn = fn }
  return self
end

--- bus:off(component, name [, fn]) -> number of handlers removed
function Bus:off(component, name, fn)
  check_name(name, "off")
  local list, kept, removed = self.handlers[name] or {}, {}, 0
  for _, h in ipairs(list) do
    if h.component == component and (fn == nil or h.fn == fn) then
      removed = removed + 1
    else
      kept[#kept + 1] = h
    end
  end
  self.handlers[name] = kept
  return removed
end

-- Deliver to one entity; returns the number of handler calls.
local function deliver(self, list, e, ...)
  local calls = 0
  for i = 1, #list do
    local h = list[i]
    local c = resolve(self, h.component)
    if c ~= nil and self.world:alive(e) and c:has(e) then
      h.fn(e, ...)
      calls = calls + 1
    end
  end
  return calls
end

--- bus:send(e, name, ...) -> number of handler calls (e and its subtree)
function Bus:send(e, name, ...)
  check_name(name, "send")
  local world = self.world
  if not world:alive(e) then return 0 end
  local list = self.handlers[name]
  if not list or #list == 0 then return 0 end
  local T = world.transform
  local calls = 0
  -- explicit stack of entities still to visit: depth first, pre-order
  local stack, top = { e }, 1
  while top > 0 do
    local x = stack[top]
    stack[top] = nil
    top = top - 1
    if world:alive(x) then
      calls = calls + deliver(self, list, x, ...)
      if world:alive(x) and T:has(x) then
        local kids, n = {}, 0
        for c in T:children(x) do
          n = n + 1
          kids[n] = c
        end
        for i = n, 1, -1 do -- pushed in reverse: visited in order
          top = top + 1
          stack[top] = kids[i]
        end
      end
    end
  end
  return calls
end

--- bus:send_up(e, name, ...) -> number of handler calls (e, then ancestors)
function Bus:send_up(e, name, ...)
  check_name(name, "send_up")
  local world = self.world
  local list = self.handlers[name]
  if not list or #list == 0 then return 0 end
  local T = world.transform
  local calls, x = 0, e
  while x ~= null and world:alive(x) do
    calls = calls + deliver(self, list, x, ...)
    if not (world:alive(x) and T:has(x)) then break end
    x = T:parent(x)
  end
  return calls
end

return message
