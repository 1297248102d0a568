--[[
png.lua -- a PNG writer with no dependency: 8-bit RGB, no interlace. Each
row gets the filter (None, Sub, Up or Paeth) that choose_filter below
thinks will compress best, and the rows are compressed with deflate.lua
(pure-Lua DEFLATE: LZ77 and Huffman coding, see its header) into a zlib
stream in one IDAT chunk. Checksums are computed here: CRC-32 (ISO 3309,
as PNG requires) for each chunk; Adler-32 for the zlib stream (deflate.lua).
The arena's 768 x 768 picture (examples/arena.lua) takes about 95 KB and
0.7 s to encode (1.77 MB with the stored blocks this wrote before).

  local png = require("png")
  local img = png.image(w, h, r, g, b)   -- filled with one colour
  img:set(x, y, r, g, b)                 -- 0-based pixel, 0..255 each; off-image is ignored
  img:get(x, y)                          --> r, g, b
  png.write(img, "out.png")              -- or png.encode(img) --> string
  png.crc32(s [, crc]), png.adler32(s [, adler])

png.encode raises "png.encode: pixel (x, y) has a value outside 0..255"
for a channel that is not an integer 0..255 (set does not check).
]]
local deflate = require("deflate")

local png = {}

-- The cost of a change of pattern in a row, in units of libpng's filter measure (choose_filter).
-- A knob for experiments: 0 gives libpng's heuristic.
png.BREAK_COST = 256

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
  return deflate.adler32(s, adler)
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

-- |v| of a filtered byte v read as signed: libpng's measure of a filtered row.
local SABS = {}
for v = 0, 255 do SABS[v] = v < 128 and v or 256 - v end

--[[
The filter type for row y (pixels px[r+1..r+st], the row above prow[po+1..po+st]):
0 None, 1 Sub, 2 Up or 4 Paeth, whichever row costs least. The cost is
libpng's (the sum of the filtered bytes read as signed magnitudes) plus
png.BREAK_COST for every pixel whose filtered bytes differ from those of
the pixel before it: LZ77 codes a repeating stretch as one match, and each
change of pattern costs a literal and a new match, which the sum does not
see. Measured on the arena's 768 px picture (a flat background with ~100k
isolated dots), compressed by deflate.lua:
  libpng's sum alone (BREAK_COST 0): Sub and Up rows, 136,642 bytes (each
    dot becomes two changes of pattern, in the row or in the next);
  BREAK_COST 256: None rows but two, 94,881 bytes; every row None: 94,561.
On a smooth, noisy image (a stand-in for a photograph) BREAK_COST 256
gives a file within 0.3% of the sum's choice (zlib level 6 on both).
Every byte is checked (0..255) on the way: the slow branch below sees
every value that differs from its left neighbour, and the fast one only
values equal to an already checked one.
]]
local function choose_filter(px, r, prow, po, w, y)
  local BREAK = png.BREAK_COST
  local sN, sS, sU, sP = 0, 0, 0, 0       -- libpng's sums
  local bN, bS, bU, bP = 0, 0, 0, 0       -- breaks
  local nN = 0                            -- None's sum for the last pixel
  local a0, a1, a2, c0, c1, c2 = 0, 0, 0, 0, 0, 0 -- the pixels left and up-left
  local s0, s1, s2, u0, u1, u2, p0, p1, p2 = 0, 0, 0, 0, 0, 0, 0, 0, 0 -- the last filtered pixel
  for j = 0, w - 1 do
    local i, q = r + 3 * j + 1, po + 3 * j + 1
    local x0, x1, x2 = px[i], px[i + 1], px[i + 2]
    local b0, b1, b2 = prow[q], prow[q + 1], prow[q + 2]
    if x0 == a0 and x1 == a1 and x2 == a2 and x0 == b0 and x1 == b1 and x2 == b2 then
      -- the pixel repeats its left and upper neighbours: Sub, Up, Paeth give 0, None repeats
      sN = sN + nN
      if (s0 | s1 | s2) ~= 0 then bS = bS + 1; s0, s1, s2 = 0, 0, 0 end
      if (u0 | u1 | u2) ~= 0 then bU = bU + 1; u0, u1, u2 = 0, 0, 0 end
      if (p0 | p1 | p2) ~= 0 then bP = bP + 1; p0, p1, p2 = 0, 0, 0 end
    else
      local n0, n1, n2 = SABS[x0], SABS[x1], SABS[x2]
      if not (n0 and n1 and n2) then
        error(("png.encode: pixel (%d, %d) has a value outside 0..255 (%s, %s, %s)")
          :format(j, y, tostring(x0), tostring(x1), tostring(x2)), 3)
      end
      nN = n0 + n1 + n2
      sN = sN + nN
      if x0 ~= a0 or x1 ~= a1 or x2 ~= a2 then bN = bN + 1 end
      local f0, f1, f2 = (x0 - a0) & 255, (x1 - a1) & 255, (x2 - a2) & 255
      sS = sS + SABS[f0] + SABS[f1] + SABS[f2]
      if f0 ~= s0 or f1 ~= s1 or f2 ~= s2 then bS = bS + 1; s0, s1, s2 = f0, f1, f2 end
      f0, f1, f2 = (x0 - b0) & 255, (x1 - b1) & 255, (x2 - b2) & 255
      sU = sU + SABS[f0] + SABS[f1] + SABS[f2]
      if f0 ~= u0 or f1 ~= u1 or f2 ~= u2 then bU = bU + 1; u0, u1, u2 = f0, f1, f2 end
      -- Paeth (PNG 9.4): the neighbour nearest to left + up - upleft, ties to left, then up
      local pa, pb, pc = b0 - c0, a0 - c0, a0 + b0 - c0 - c0
      if pa < 0 then pa = -pa end
      if pb < 0 then pb = -pb end
      if pc < 0 then pc = -pc end
      f0 = (pa <= pb and pa <= pc) and a0 or (pb <= pc and b0 or c0)
      pa, pb, pc = b1 - c1, a1 - c1, a1 + b1 - c1 - c1
      if pa < 0 then pa = -pa end
      if pb < 0 then pb = -pb end
      if pc < 0 then pc = -pc end
      f1 = (pa <= pb and pa <= pc) and a1 or (pb <= pc and b1 or c1)
      pa, pb, pc = b2 - c2, a2 - c2, a2 + b2 - c2 - c2
      if pa < 0 then pa = -pa end
      if pb < 0 then pb = -pb end
      if pc < 0 then pc = -pc end
      f2 = (pa <= pb and pa <= pc) and a2 or (pb <= pc and b2 or c2)
      f0, f1, f2 = (x0 - f0) & 255, (x1 - f1) & 255, (x2 - f2) & 255
      sP = sP + SABS[f0] + SABS[f1] + SABS[f2]
      if f0 ~= p0 or f1 ~= p1 or f2 ~= p2 then bP = bP + 1; p0, p1, p2 = f0, f1, f2 end
    end
    a0, a1, a2, c0, c1, c2 = x0, x1, x2, b0, b1, b2
  end
  local best, cost = 0, sN + BREAK * bN
  local c = sS + BREAK * bS
  if c < cost then best, cost = 1, c end
  c = sU + BREAK * bU
  if c < cost then best, cost = 2, c end
  c = sP + BREAK * bP
  if c < cost then best = 4 end
  return best
end

-- Row y filtered with filter type t into d[o+1..o+st] (the type byte is d[o]).
local function filter_row(t, d, o, px, r, prow, po, st)
  if t == 0 then
    table.move(px, r + 1, r + st, o + 1, d)
  elseif t == 1 then
    d[o + 1], d[o + 2], d[o + 3] = px[r + 1], px[r + 2], px[r + 3]
    for k = 4, st do d[o + k] = (px[r + k] - px[r + k - 3]) & 255 end
  elseif t == 2 then
    for k = 1, st do d[o + k] = (px[r + k] - prow[po + k]) & 255 end
  else
    for k = 1, st do
      local x, b = px[r + k], prow[po + k]
      local a, c = 0, 0
      if k > 3 then a, c = px[r + k - 3], prow[po + k - 3] end
      local pa, pb, pc = b - c, a - c, a + b - c - c
      if pa < 0 then pa = -pa end
      if pb < 0 then pb = -pb end
      if pc < 0 then pc = -pc end
      local pred = (pa <= pb and pa <= pc) and a or (pb <= pc and b or c)
      d[o + k] = (x - pred) & 255
    end
  end
end

-- The PNG file of img, as a string.
function png.encode(img)
  local w, h, px = img.width, img.height, img.px
  local st = 3 * w
  local zeros = {}
  for k = 1, st do zeros[k] = 0 end
  local d = {}
  for y = 0, h - 1 do
    local r = y * st
    local prow, po = px, r - st
    if y == 0 then prow, po = zeros, 0 end
    local t = choose_filter(px, r, prow, po, w, y)
    local o = y * (st + 1) + 1
    d[o] = t
    filter_row(t, d, o, px, r, prow, po, st)
  end
  local ihdr = string.pack(">I4I4BBBBB", w, h, 8, 2, 0, 0, 0) -- 8-bit RGB
  return "\x89PNG\r\n\26\n" .. chunk("IHDR", ihdr) ..
    chunk("IDAT", deflate.zlib(d)) .. chunk("IEND", "")
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
