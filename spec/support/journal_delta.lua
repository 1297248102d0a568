--[[
journal_delta.lua -- take a delta (journal:delta()) apart and put it back
together, for specs that forge one: parse gives the fields the format
(docs/persistence.md, the journal's deltas) lays out -- the header, the
entity part (counts, slots, pushed indices, pops), each manager's part (the
records of a component, each with its values as raw byte strings, then its
layout and stamps as one raw string, m.extras; or the whole save of another
manager) and the cursors at the end (raw, d.cursors); build writes them out
again and seals
the checksum, so that a forged field reaches the check that owns it.
  local jd = require("spec.support.journal_delta")
  local p = jd.parse(delta); p.slots[1].state = 7; world:apply_delta(jd.build(p))
]]
local xxh64 = require("spec.support.xxh64")

local M = {}
local unpack, pack = string.unpack, string.pack

-- Bytes of a value of each field type (ECS_TYPES order); lua (11): variable.
M.SIZE = { [0] = 4, 8, 1, 2, 4, 8, 1, 2, 4, 1, 4 }
M.LUA = 11

function M.parse(s)
  local d = { managers = {}, slots = {}, pushed = {} }
  local p
  d.magic, d.version, d.flags, d.base, d.result, p = unpack("<c4I4I4i8i8", s)
  d.old_count, d.new_count, d.old_qlen, d.new_qlen, d.old_live, d.new_live, p =
    unpack("<I4I4I4I4I4I4", s, p)
  local n
  n, p = unpack("<I4", s, p)
  for k = 1, n do
    local index, state
    index, state, p = unpack("<I4I4", s, p)
    d.slots[k] = { index = index, state = state }
  end
  n, p = unpack("<I4", s, p)
  for k = 1, n do d.pushed[k], p = unpack("<I4", s, p) end
  d.npopped, p = unpack("<I4", s, p)
  n, p = unpack("<I4", s, p)
  for k = 1, n do
    local m = {}
    m.ns, m.name, m.kind, m.mode, p = unpack("<I4s4s4I4", s, p)
    if m.mode == 0 then
      local nf, nr
      m.types = {}
      nf, p = unpack("<I4", s, p)
      for f = 1, nf do m.types[f], p = unpack("<I4", s, p) end
      nr, p = unpack("<I4", s, p)
      m.records = {}
      for r = 1, nr do
        local rec = { values = {} }
        rec.index, rec.owner, p = unpack("<I4I4", s, p)
        if rec.owner ~= 0 then
          for f, t in ipairs(m.types) do
            local v
            if t == M.LUA then v, p = unpack("<s4", s, p)
            else
              v = s:sub(p, p + M.SIZE[t] - 1)
              p = p + M.SIZE[t]
            end
            rec.values[f] = v
          end
        end
        m.records[r] = rec
      end
      -- the layout (5 words, then 3 a row) and the stamps (kinds, a count,
      -- 3 words each), kept as they are
      local at = p
      local flags
      flags, p = unpack("<I4", s, p)
      if flags & 1 ~= 0 then p = p + 20 + 12 * unpack("<I4", s, p + 16) end
      if flags & 2 ~= 0 then p = p + 8 + 12 * unpack("<I4", s, p + 4) end
      m.extras = s:sub(at, p - 1)
    else
      m.save, p = unpack("<s8", s, p)
    end
    d.managers[k] = m
  end
  -- the cursors: the clock, the change queries (16 bytes each), the systems
  local at = p
  local nq, ns
  nq = unpack("<I4", s, p + 4)
  p = p + 8 + 16 * nq
  ns, p = unpack("<I4", s, p)
  for _ = 1, ns do p = p + 4 + unpack("<I4", s, p) + 8 end
  d.cursors = s:sub(at, p - 1)
  d.checksum, p = unpack("<i8", s, p)
  assert(p == #s + 1, "journal_delta.parse: bytes after the checksum")
  return d
end

-- The manager part named name (and of namespace ns: 0 manager, 1 component).
function M.find(d, name, ns)
  for _, m in ipairs(d.managers) do
    if m.name == name and (ns == nil or m.ns == ns) then return m end
  end
end

-- The delta d describes, with a correct checksum. Counts are taken from
-- the lists unless d.count_* overrides them (forged counts).
function M.build(d)
  local c = d.counts or {}
  local out = {
    pack("<c4I4I4i8i8", d.magic, d.version, d.flags, d.base, d.result),
    pack("<I4I4I4I4I4I4", d.old_count, d.new_count, d.old_qlen, d.new_qlen, d.old_live, d.new_live),
    pack("<I4", c.slots or #d.slots),
  }
  for _, sl in ipairs(d.slots) do out[#out + 1] = pack("<I4I4", sl.index, sl.state) end
  out[#out + 1] = pack("<I4", c.pushed or #d.pushed)
  for _, i in ipairs(d.pushed) do out[#out + 1] = pack("<I4", i) end
  out[#out + 1] = pack("<I4I4", d.npopped, c.managers or #d.managers)
  for _, m in ipairs(d.managers) do
    out[#out + 1] = pack("<I4s4s4I4", m.ns, m.name, m.kind, m.mode)
    if m.mode == 0 then
      out[#out + 1] = pack("<I4", m.count_types or #m.types)
      for _, t in ipairs(m.types) do out[#out + 1] = pack("<I4", t) end
      out[#out + 1] = pack("<I4", m.count_records or #m.records)
      for _, rec in ipairs(m.records) do
        out[#out + 1] = pack("<I4I4", rec.index, rec.owner)
        if rec.owner ~= 0 then
          for f, t in ipairs(m.types) do
            local v = rec.values[f]
            out[#out + 1] = t == M.LUA and pack("<s4", v) or v
          end
        end
      end
      out[#out + 1] = m.extras or pack("<I4", 0)
    else
      out[#out + 1] = pack("<s8", m.save)
    end
  end
  out[#out + 1] = d.cursors or pack("<I4I4I4", 0, 0, 0)
  out[#out + 1] = string.rep("\0", 8)
  return xxh64.seal(table.concat(out))
end

-- A copy of a parsed delta (forge one field of it, keep the original).
function M.copy(d)
  local function deep(v)
    if type(v) ~= "table" then return v end
    local t = {}
    for k, x in pairs(v) do t[k] = deep(x) end
    return t
  end
  return deep(d)
end

return M
