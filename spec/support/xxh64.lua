--[[
xxh64.lua -- XXH64 (seed 0) in plain Lua 5.4 (integers wrap around on
overflow, >> is a logical shift), for specs that forge snapshots: a forged
part only reaches the checks behind the checksum once the snapshot is
sealed again (docs/persistence.md, "Trailer").
]]
local P1, P2, P3, P4, P5 =
  -7046029288634856825, -4417276706812531889, 1609587929392839161,
  -8796714831421723037, 2870177450012600261

local function rotl(x, r) return (x << r) | (x >> (64 - r)) end
local function round(acc, v) return rotl(acc + v * P2, 31) * P1 end
local function merge(acc, v) return (acc ~ round(0, v)) * P1 + P4 end

local unpack = string.unpack

local function xxh64(s, n)
  n = n or #s
  local p, h = 1
  if n >= 32 then
    local v1, v2, v3, v4 = P1 + P2, P2, 0, -P1
    while p + 31 <= n do
      local a, b, c, d = unpack("<i8i8i8i8", s, p)
      v1, v2, v3, v4 = round(v1, a), round(v2, b), round(v3, c), round(v4, d)
      p = p + 32
    end
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)
    h = merge(merge(merge(merge(h, v1), v2), v3), v4)
  else
    h = P5
  end
  h = h + n
  while p + 7 <= n do
    h = rotl(h ~ round(0, (unpack("<i8", s, p))), 27) * P1 + P4
    p = p + 8
  end
  if p + 3 <= n then
    h = rotl(h ~ ((unpack("<I4", s, p)) * P1), 23) * P2 + P3
    p = p + 4
  end
  while p <= n do
    h = rotl(h ~ (s:byte(p) * P5), 11) * P1
    p = p + 1
  end
  h = (h ~ (h >> 33)) * P2
  h = (h ~ (h >> 29)) * P3
  return h ~ (h >> 32)
end

local M = { hash = xxh64 }

-- The snapshot s with its checksum (the last 8 bytes) made right again.
function M.seal(s)
  return s:sub(1, -9) .. string.pack("<i8", xxh64(s, #s - 8))
end

return M
