--[[
inflate.lua -- a DEFLATE (RFC 1951) and zlib (RFC 1950) decoder in plain
Lua: the model spec/examples/deflate_spec.lua and spec/examples/demo_spec.lua decode with.
Written from the RFCs alone, sharing nothing with the compressor
(examples/lib/deflate.lua): Huffman codes are decoded a bit at a time by
walking the canonical code's lengths (as zlib's puff.c does), slow and
simple. It is strict where the RFC leaves room, so that a sloppy stream
fails here even if a lenient decoder would take it:
  * a Huffman code must be complete (its lengths fill the code space),
    except a distance code with a single code of one bit (3.2.7 allows
    it) or with no codes at all (data that is all literals);
  * an over-subscribed code, a repeat code 16 with nothing before it, a
    repeat past HLIT + HDIST, HLIT > 286, HDIST > 30, an end-of-block code
    of length 0, literal/length symbols 286..287, distance symbols 30..31,
    a distance reaching before the start of the output, LEN ~= ~NLEN,
    a distance over 32768 (zlib's window, CINFO 7), block type 3, input
    ending early: all raise "inflate: <what>".

  local inflate = require("spec.support.inflate")
  local data, info = inflate.raw(s [, pos])  -- a raw DEFLATE stream starting at byte pos
  local data, info = inflate.zlib(s)         -- header, DEFLATE, Adler-32; nothing may follow
  inflate.adler32(s)

info: blocks (a list of "stored", "fixed" or "dynamic"), max_dist, the
largest distance used, lengths (lengths[l] = the number of matches of
length l), longest (the longest code in a dynamic block's literal/length
and distance codes), stop (the byte after the stream's last byte).
]]
local inflate = {}

local function fail(what) error("inflate: " .. what, 0) end

-- Length and distance bases and extra bits (3.2.5), built from the table's pattern.
local LBASE, LEXTRA, DBASE, DEXTRA = {}, {}, {}, {}
do
  local base = 3
  for sym = 257, 284 do
    local extra = sym < 265 and 0 or (sym - 261) // 4
    LBASE[sym], LEXTRA[sym] = base, extra
    base = base + (1 << extra)
  end
  LBASE[285], LEXTRA[285] = 258, 0
  base = 1
  for sym = 0, 29 do
    local extra = sym < 4 and 0 or (sym - 2) // 2
    DBASE[sym], DEXTRA[sym] = base, extra
    base = base + (1 << extra)
  end
end

-- A bit reader over s from byte pos: bits come least significant first (3.1.1).
-- r.bits(n) reads n bits, r.align() skips to a byte boundary, r.pos() is the next whole byte.
local function reader(s, pos)
  local cur, left = 0, 0 -- the byte being read and how many of its bits are left
  local r = {}
  function r.bits(n)
    local v = 0
    for k = 0, n - 1 do
      if left == 0 then
        cur = s:byte(pos)
        if not cur then fail("the input ends early") end
        pos, left = pos + 1, 8
      end
      v = v | ((cur & 1) << k)
      cur, left = cur >> 1, left - 1
    end
    return v
  end
  function r.align() left = 0 end
  function r.pos() return pos end
  function r.skip(n) pos = pos + n end
  return r
end

--[[
A canonical Huffman code (3.2.2) from lengths[0..n-1]: count[l] codes of
length l, and the symbols in code order. Raises if over-subscribed, or if
incomplete unless allowed (allow_one: a single code of length 1; allow_none:
no codes at all).
]]
local function code(lengths, n, what, allow_one, allow_none)
  local count = {}
  for l = 0, 15 do count[l] = 0 end
  for sym = 0, n - 1 do count[lengths[sym]] = count[lengths[sym]] + 1 end
  local left, used = 1, n - count[0]
  for l = 1, 15 do
    left = (left << 1) - count[l]
    if left < 0 then fail(what .. " code is over-subscribed") end
  end
  if left > 0 then
    local ok = (used == 0 and allow_none) or (used == 1 and count[1] == 1 and allow_one)
    if not ok then fail(what .. " code is incomplete") end
  end
  local offs, symbol = { [1] = 0 }, {}
  for l = 1, 14 do offs[l + 1] = offs[l] + count[l] end
  for sym = 0, n - 1 do
    local l = lengths[sym]
    if l > 0 then symbol[offs[l]] = sym; offs[l] = offs[l] + 1 end
  end
  local longest = 0
  for l = 1, 15 do if count[l] > 0 then longest = l end end
  return { count = count, symbol = symbol, used = used, what = what, longest = longest }
end

-- One symbol: the code's bits arrive most significant first (3.1.1).
local function decode(r, h)
  local c, first, index = 0, 0, 0
  for l = 1, 15 do
    c = c | r.bits(1)
    local n = h.count[l]
    if c - first < n then return h.symbol[index + c - first] end
    index = index + n
    first = (first + n) << 1
    c = c << 1
  end
  fail("a bit pattern that is no " .. h.what .. " code")
end

local FIXED_LIT, FIXED_DIST
do
  local lengths = {}
  for sym = 0, 287 do
    lengths[sym] = (sym <= 143 and 8) or (sym <= 255 and 9) or (sym <= 279 and 7) or 8
  end
  FIXED_LIT = code(lengths, 288, "literal/length")
  local d = {} -- 32 codes of 5 bits; 30 and 31 never occur in valid data (3.2.6)
  for sym = 0, 31 do d[sym] = 5 end
  FIXED_DIST = code(d, 32, "distance")
end

local ORDER = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 }

-- The literal/length and distance codes of a dynamic block (3.2.7).
local function dynamic_codes(r)
  local hlit, hdist, hclen = r.bits(5) + 257, r.bits(5) + 1, r.bits(4) + 4
  if hlit > 286 then fail("HLIT > 286") end
  if hdist > 30 then fail("HDIST > 30") end
  local cl = {}
  for sym = 0, 18 do cl[sym] = 0 end
  for k = 1, hclen do cl[ORDER[k]] = r.bits(3) end
  local clcode = code(cl, 19, "code length")
  local lengths, k = {}, 0
  while k < hlit + hdist do
    local sym = decode(r, clcode)
    if sym < 16 then
      lengths[k], k = sym, k + 1
    else
      local v, rep
      if sym == 16 then
        if k == 0 then fail("repeat code 16 with no length before it") end
        v, rep = lengths[k - 1], 3 + r.bits(2)
      elseif sym == 17 then
        v, rep = 0, 3 + r.bits(3)
      else
        v, rep = 0, 11 + r.bits(7)
      end
      if k + rep > hlit + hdist then fail("code lengths repeat past HLIT + HDIST") end
      for _ = 1, rep do lengths[k], k = v, k + 1 end
    end
  end
  if lengths[256] == 0 then fail("no code for the end of block") end
  local lit, dist = {}, {}
  for sym = 0, 285 do lit[sym] = sym < hlit and lengths[sym] or 0 end
  for sym = 0, 29 do dist[sym] = sym < hdist and lengths[hlit + sym] or 0 end
  return code(lit, 286, "literal/length"), code(dist, 30, "distance", true, true)
end

function inflate.raw(s, pos)
  local r = reader(s, pos or 1)
  local out, n = {}, 0
  local info = { blocks = {}, max_dist = 0, lengths = {}, longest = 0 }
  repeat
    local final = r.bits(1)
    local btype = r.bits(2)
    if btype == 0 then
      info.blocks[#info.blocks + 1] = "stored"
      r.align()
      local p = r.pos()
      if p + 3 > #s then fail("the input ends early") end
      local len, nlen = string.unpack("<I2I2", s, p)
      if len ~ 0xFFFF ~= nlen then fail("LEN and NLEN do not match") end
      if p + 3 + len > #s then fail("the input ends early") end
      for k = 1, len do out[n + k] = s:byte(p + 3 + k) end
      n = n + len
      r.skip(4 + len)
    elseif btype == 3 then
      fail("block type 3")
    else
      local lit, dist
      if btype == 1 then
        info.blocks[#info.blocks + 1] = "fixed"
        lit, dist = FIXED_LIT, FIXED_DIST
      else
        info.blocks[#info.blocks + 1] = "dynamic"
        lit, dist = dynamic_codes(r)
        info.longest = math.max(info.longest, lit.longest, dist.longest)
      end
      while true do
        local sym = decode(r, lit)
        if sym < 256 then
          n = n + 1
          out[n] = sym
        elseif sym == 256 then
          break
        else
          if sym > 285 then fail("literal/length symbol " .. sym) end
          local len = LBASE[sym] + r.bits(LEXTRA[sym])
          if dist.used == 0 then fail("a distance with no distance code") end
          local dsym = decode(r, dist)
          if dsym > 29 then fail("distance symbol " .. dsym) end
          local d = DBASE[dsym] + r.bits(DEXTRA[dsym])
          if d > n then fail(("distance %d with %d bytes out"):format(d, n)) end
          if d > 32768 then fail(("distance %d beyond the 32 KB window"):format(d)) end
          for _ = 1, len do out[n + 1] = out[n + 1 - d]; n = n + 1 end
          if d > info.max_dist then info.max_dist = d end
          info.lengths[len] = (info.lengths[len] or 0) + 1
        end
      end
    end
  until final == 1
  r.align()
  info.stop = r.pos()
  local parts = {}
  for i = 1, n, 4096 do parts[#parts + 1] = string.char(table.unpack(out, i, math.min(i + 4095, n))) end
  return table.concat(parts), info
end

function inflate.adler32(s)
  local a, b = 1, 0
  for i = 1, #s do a = (a + s:byte(i)) % 65521; b = (b + a) % 65521 end
  return (b << 16) | a
end

function inflate.zlib(s)
  if #s < 6 then fail("too short for a zlib stream") end
  local cmf, flg = s:byte(1, 2)
  if cmf & 0x0F ~= 8 then fail("compression method is not 8 (deflate)") end
  if cmf >> 4 > 7 then fail("window larger than 32 KB") end
  if (cmf * 256 + flg) % 31 ~= 0 then fail("FCHECK") end
  if flg & 0x20 ~= 0 then fail("a preset dictionary") end
  local data, info = inflate.raw(s, 3)
  if info.stop + 3 > #s then fail("the input ends early (Adler-32)") end
  if string.unpack(">I4", s, info.stop) ~= inflate.adler32(data) then fail("Adler-32 does not match") end
  if info.stop + 4 ~= #s + 1 then fail("bytes after the zlib stream") end
  return data, info
end

return inflate
