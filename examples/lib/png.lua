--[[
png.lua -- a PNG writer with no dependency: 8-bit RGB, no interlace, every
row with filter 0, the zlib stream made of stored (uncompressed) deflate
blocks. Checksums are computed here: CRC-32 (ISO 3309, as PNG requires)
for each chunk, Adler-32 for the zlib stream.

  local png = require("png")
  local img = png.image(w, h, r, g, b)   -- filled with one colour
  img:set(x, y, r, g, b)                 -- 0-based pixel, 0..255 each; off-image is ignored
  img:get(x, y)                          --> r, g, b
  png.write(img, "out.png")              -- or png.encode(img) --> string
  png.crc32(s [, crc]), png.adler32(s [, adler])
]]
local png = {}

local crc_table = {}
for n = 0, 255 do
  local c = n
  for _ = 1, 8 do
    if c & 1 == 1 then c = 0xEDB88320 ~ (c >> 1) else c = c >> 1 end
  end
  crc_table[n] = c
end

-- CRC-32 of s, continuing from crc (0 to start).
function png.crc32(s, crc)
  local c = (crc or 0) ~ 0xFFFFFFFF
  local byte, t = string.byte, crc_table
  for i = 1, #s, 4096 do
    local bytes = { byte(s, i, math.min(i + 4095, #s)) }
    for k = 1, #bytes do c = t[(c ~ bytes[k]) & 0xFF] ~ (c >> 8) end
  end
  return c ~ 0xFFFFFFFF
end

-- Adler-32 of s, continuing from adler (1 to start).
function png.adler32(s, adler)
  adler = adler or 1
  local a, b = adler & 0xFFFF, adler >> 16
  local byte = string.byte
  -- 5552 bytes is the longest run whose sums cannot overflow 32 bits (zlib's NMAX);
  -- Lua integers are 64 bits, but reducing often keeps the numbers small.
  for i = 1, #s, 4096 do
    local bytes = { byte(s, i, math.min(i + 4095, #s)) }
    for k = 1, #bytes do a = a + bytes[k]; b = b + a end
    a, b = a % 65521, b % 65521
  end
  return (b << 16) | a
end

local Image = {}
Image.__index = Image

-- A w x h image filled with (r, g, b); pixels are three bytes in one flat array.
function png.image(w, h, r, g, b)
  assert(math.type(w) == "integer" and w > 0 and math.type(h) == "integer" and h > 0,
    "png.image: width and height must be positive integers")
  r, g, b = r or 0, g or 0, b or 0
  local px = {}
  for i = 0, w * h - 1 do px[3 * i + 1], px[3 * i + 2], px[3 * i + 3] = r, g, b end
  return setmetatable({ width = w, height = h, px = px }, Image)
end

function Image:set(x, y, r, g, b)
  x, y = math.floor(x), math.floor(y)
  if x < 0 or y < 0 or x >= self.width or y >= self.height then return end
  local i = 3 * (y * self.width + x)
  local px = self.px
  px[i + 1], px[i + 2], px[i + 3] = r, g, b
end

function Image:get(x, y)
  local i = 3 * (y * self.width + x)
  return self.px[i + 1], self.px[i + 2], self.px[i + 3]
end

-- A filled disc of radius rad (pixels) centred on (cx, cy).
function Image:disc(cx, cy, rad, r, g, b)
  local r2 = rad * rad
  for dy = -math.ceil(rad), math.ceil(rad) do
    for dx = -math.ceil(rad), math.ceil(rad) do
      if dx * dx + dy * dy <= r2 then self:set(cx + dx, cy + dy, r, g, b) end
    end
  end
end

local function chunk(kind, data)
  return string.pack(">I4", #data) .. kind .. data .. string.pack(">I4", png.crc32(kind .. data))
end

-- The zlib stream of raw: header 78 01, stored blocks of at most 65535 bytes, Adler-32.
local function zlib_stored(raw)
  local out = { "\x78\x01" }
  local n = #raw
  local pos = 1
  repeat
    local len = math.min(65535, n - pos + 1)
    local final = (pos + len > n) and 1 or 0
    out[#out + 1] = string.pack("<BI2I2", final, len, len ~ 0xFFFF)
    out[#out + 1] = raw:sub(pos, pos + len - 1)
    pos = pos + len
  until pos > n
  out[#out + 1] = string.pack(">I4", png.adler32(raw))
  return table.concat(out)
end

-- The PNG file of img, as a string.
function png.encode(img)
  local w, h, px = img.width, img.height, img.px
  local rows = {}
  local char, unpack = string.char, table.unpack
  for y = 0, h - 1 do
    local row = { "\0" } -- filter type 0 (None)
    local base = 3 * w * y
    for x0 = 0, 3 * w - 1, 3000 do   -- string.char takes a bounded number of arguments
      local last = math.min(x0 + 2999, 3 * w - 1)
      row[#row + 1] = char(unpack(px, base + x0 + 1, base + last + 1))
    end
    rows[#rows + 1] = table.concat(row)
  end
  local ihdr = string.pack(">I4I4BBBBB", w, h, 8, 2, 0, 0, 0) -- 8-bit RGB
  return "\x89PNG\r\n\26\n" .. chunk("IHDR", ihdr) ..
    chunk("IDAT", zlib_stored(table.concat(rows))) .. chunk("IEND", "")
end

-- Write img to path; returns the number of bytes written, or raises.
function png.write(img, path)
  local data = png.encode(img)
  local f = assert(io.open(path, "wb"))
  assert(f:write(data))
  assert(f:close())
  return #data
end

return png
