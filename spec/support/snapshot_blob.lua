--[[
snapshot_blob.lua -- take a snapshot (world:snapshot()) apart and put it
back together, for specs that forge one: parse gives the parts the
format (docs/persistence.md) frames -- header, entity table, each
manager's payload and directory entry, the binding's lua values -- as
strings; build lays them out again with the sizes the directory needs
and a correct checksum, so a forged part reaches the check that owns it.
]]
local xxh64 = require("spec.support.xxh64")

local M = {}
local unpack, pack = string.unpack, string.pack

function M.parse(s)
  local dir = unpack("<i8", s, #s - 15) + 1
  local p = dir
  local esize, n
  esize, n, p = unpack("<i8I4", s, p)
  local b = { header = s:sub(1, 12), entities = s:sub(13, 12 + esize), managers = {} }
  local at = 13 + esize
  for i = 1, n do
    local m = { fields = {} }
    local nf
    m.ns, m.name, m.kind, nf, p = unpack("<I4s4s4I4", s, p)
    for k = 1, nf do
      local t, fname
      t, fname, p = unpack("<I4s4", s, p)
      m.fields[k] = { type = t, name = fname }
    end
    local size
    size, p = unpack("<i8", s, p)
    m.payload = s:sub(at, at + size - 1)
    at = at + size
    b.managers[i] = m
  end
  local hsize = unpack("<i8", s, p)
  b.host = s:sub(at, at + hsize - 1)
  return b
end

-- The manager entry named name (and of namespace ns: 0 manager, 1 component).
function M.find(b, name, ns)
  for _, m in ipairs(b.managers) do
    if m.name == name and (ns == nil or m.ns == ns) then return m end
  end
end

function M.build(b)
  local out = { b.header, b.entities }
  for _, m in ipairs(b.managers) do out[#out + 1] = m.payload end
  out[#out + 1] = b.host
  local body = table.concat(out)
  local dir = { pack("<i8I4", #b.entities, #b.managers) }
  for _, m in ipairs(b.managers) do
    dir[#dir + 1] = pack("<I4s4s4I4", m.ns, m.name, m.kind, #m.fields)
    for _, f in ipairs(m.fields) do dir[#dir + 1] = pack("<I4s4", f.type, f.name) end
    dir[#dir + 1] = pack("<i8", #m.payload)
  end
  dir[#dir + 1] = pack("<i8i8", #b.host, #body)
  return xxh64.seal(body .. table.concat(dir) .. string.rep("\0", 8))
end

return M
