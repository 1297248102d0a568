--[[
transform_model.lua -- a naive pure-Lua scene graph, the reference for the
differential spec of world.transform.

Each node has a local transform (position, unit quaternion, scale), a
parent (or nil) and an ordered list of children. World matrices are
computed recursively on every read, with no caching at all:
  world(n) = n.frozen or world(parent) * TRS(local)    (identity above roots)
n.frozen models the cases where the contract keeps a world matrix exactly
instead of recomputing it (keep_world reparenting, children of a destroyed
parent): it holds until n or an ancestor is next recomputed.
Matrices are 16 numbers, column-major.
]]
local M = {}
M.__index = M

function M.new()
  return setmetatable({ nodes = {} }, M)
end

local function normalize(q)
  local n = math.sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3] + q[4] * q[4])
  return { q[1] / n, q[2] / n, q[3] / n, q[4] / n }
end

-- T(p) R(q) S(s), written out from the rotation matrix formula
function M.trs(p, q, s)
  local x, y, z, w = q[1], q[2], q[3], q[4]
  local r = {
    { 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w) },
    { 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w) },
    { 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y) },
  }
  local m = {}
  for c = 1, 3 do
    for row = 1, 3 do m[(c - 1) * 4 + row] = r[row][c] * s[c] end
    m[(c - 1) * 4 + 4] = 0
  end
  m[13], m[14], m[15], m[16] = p[1], p[2], p[3], 1
  return m
end

function M.mul(a, b)
  local o = {}
  for c = 0, 3 do
    for r = 1, 4 do
      local s = 0
      for k = 0, 3 do s = s + a[k * 4 + r] * b[c * 4 + k + 1] end
      o[c * 4 + r] = s
    end
  end
  return o
end

function M:add(id, p, q, s)
  self.nodes[id] = { p = { p[1], p[2], p[3] }, q = normalize(q), s = { s[1], s[2], s[3] },
                     children = {} }
end

function M:has(id) return self.nodes[id] ~= nil end

function M:world(id)
  local n = self.nodes[id]
  if n.frozen then return n.frozen end
  local l = M.trs(n.p, n.q, n.s)
  if n.parent == nil then return l end
  return M.mul(self:world(n.parent), l)
end

-- every node of id's subtree (id included), depth first
function M:subtree(id, out)
  out = out or {}
  out[#out + 1] = id
  for _, c in ipairs(self.nodes[id].children) do self:subtree(c, out) end
  return out
end

-- the implementation recomputes a subtree: frozen values end there
function M:thaw(id)
  for _, x in ipairs(self:subtree(id)) do self.nodes[x].frozen = nil end
end

local function remove_value(list, v)
  for i = #list, 1, -1 do
    if list[i] == v then table.remove(list, i) end
  end
end

function M:unlink(id)
  local n = self.nodes[id]
  if n.parent then remove_value(self.nodes[n.parent].children, id) end
  n.parent = nil
end

function M:set_local(id, p, q, s)
  local n = self.nodes[id]
  if p then n.p = { p[1], p[2], p[3] } end
  if q then n.q = normalize(q) end
  if s then n.s = { s[1], s[2], s[3] } end
  self:thaw(id)
end

-- true when making c a child of p would create a cycle
function M:would_cycle(c, p)
  local a = p
  while a ~= nil do
    if a == c then return true end
    a = self.nodes[a].parent
  end
  return false
end

-- keep_world: readback(id) -> p, q, s gives the implementation's new local
function M:set_parent(c, p, keep_world, readback)
  local kept = keep_world and self:world(c)
  self:unlink(c)
  if p ~= nil then
    self.nodes[c].parent = p
    local kids = self.nodes[p].children
    kids[#kids + 1] = c
  end
  if keep_world then
    local n = self.nodes[c]
    n.p, n.q, n.s = readback(c)
    n.frozen = kept
  else
    self:thaw(c)
  end
end

-- c lost its parent to a removal or destruction: a root with world kept
function M:orphan(c, readback)
  local kept = self:world(c)
  self:unlink(c)
  local n = self.nodes[c]
  n.p, n.q, n.s = readback(c)
  n.frozen = kept
end

-- id loses its transform; its children become roots (readback after)
function M:remove(id)
  local kids = {}
  for i, c in ipairs(self.nodes[id].children) do kids[i] = c end
  local worlds = {}
  for _, c in ipairs(kids) do worlds[c] = self:world(c) end
  self:unlink(id)
  for _, c in ipairs(kids) do
    self.nodes[c].parent = nil
    self.nodes[c].frozen = worlds[c]
  end
  self.nodes[id] = nil
  return kids -- the caller reads their locals back
end

return M
