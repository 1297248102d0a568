--[[
png_read.lua -- reads the PNGs examples/lib/png.lua writes (8-bit RGB, no
interlace), independently of it: the chunks and their CRC-32s (computed
bitwise here, no table), IHDR, the IDAT data decoded by the model decoder
spec/support/inflate.lua (zlib header and Adler-32 checked there), and the
rows unfiltered (PNG 9.2-9.4: None, Sub, Up, Average, Paeth). Raises on
anything wrong.

  local read = require("spec.support.png_read")
  local img = read(data)
  --> { width, height, pixels (a string of 3 bytes per pixel, rows top to
  --    bottom), filters (filters[t] = the number of rows with filter t),
  --    zlib (the IDAT data, concatenated), raw (it decoded: the filtered
  --    rows), chunks (their types in order) }
]]
local inflate = require("spec.support.inflate")

local function crc32(s)
  local c = 0xFFFFFFFF
  for i = 1, #s do
    c = c ~ s:byte(i)
    for _ = 1, 8 do c = (c >> 1) ~ (0xEDB88320 & -(c & 1)) end
  end
  return c ~ 0xFFFFFFFF
end

return function(data)
  assert(data:sub(1, 8) == "\x89PNG\r\n\26\n", "signature")
  local pos, chunks, idat, ihdr = 9, {}, {}, nil
  while pos <= #data do
    assert(pos + 7 <= #data, "truncated chunk header")
    local len, kind = string.unpack(">I4c4", data, pos)
    local body = data:sub(pos + 8, pos + 7 + len)
    assert(#body == len and pos + 11 + len <= #data, "truncated chunk " .. kind)
    local crc = string.unpack(">I4", data, pos + 8 + len)
    assert(crc == crc32(kind .. body), "bad CRC in " .. kind)
    chunks[#chunks + 1] = kind
    if kind == "IDAT" then idat[#idat + 1] = body end
    if kind == "IHDR" then ihdr = body end
    pos = pos + 12 + len
  end
  assert(chunks[1] == "IHDR" and chunks[#chunks] == "IEND", "chunk order")
  assert(#ihdr == 13, "IHDR length")
  local w, h, depth, ctype, method, filter, interlace = string.unpack(">I4I4BBBBB", ihdr)
  assert(w > 0 and h > 0, "empty image")
  assert(depth == 8 and ctype == 2, "8-bit RGB")
  assert(method == 0 and filter == 0 and interlace == 0, "method 0, filter method 0, no interlace")
  local z = table.concat(idat)
  local raw = inflate.zlib(z)
  local st = 3 * w
  assert(#raw == h * (st + 1), ("%d bytes of rows, expected %d"):format(#raw, h * (st + 1)))
  local rows, filters = {}, {}
  local prev = {}
  for k = 1, st do prev[k] = 0 end
  for y = 0, h - 1 do
    local base = y * (st + 1) + 1
    local t = raw:byte(base)
    assert(t <= 4, "filter type " .. t)
    filters[t] = (filters[t] or 0) + 1
    local cur = { raw:byte(base + 1, base + st) }
    for k = 1, st do
      local a = k > 3 and cur[k - 3] or 0
      local b = prev[k]
      local c = k > 3 and prev[k - 3] or 0
      local pred
      if t == 0 then pred = 0
      elseif t == 1 then pred = a
      elseif t == 2 then pred = b
      elseif t == 3 then pred = (a + b) // 2
      else
        local p = a + b - c
        local pa, pb, pc = math.abs(p - a), math.abs(p - b), math.abs(p - c)
        if pa <= pb and pa <= pc then pred = a elseif pb <= pc then pred = b else pred = c end
      end
      cur[k] = (cur[k] + pred) % 256
    end
    rows[#rows + 1] = string.char(table.unpack(cur))
    prev = cur
  end
  return { width = w, height = h, pixels = table.concat(rows), filters = filters, zlib = z, raw = raw,
    chunks = chunks }
end
