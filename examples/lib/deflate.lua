--[[
deflate.lua -- a DEFLATE (RFC 1951) and zlib (RFC 1950) compressor in pure
Lua 5.4, no dependency: what examples/lib/png.lua compresses its image with.

  local deflate = require("deflate")
  deflate.compress(data [, opts])  --> a raw DEFLATE stream (string)
  deflate.zlib(data [, opts])      --> a zlib stream: header 78 9C, DEFLATE, Adler-32
  deflate.adler32(data [, adler])  --> Adler-32 of data, continuing from adler (1 to start)

data is a string, or a sequence of byte values 1..#data (integers 0..255,
e.g. the rows a PNG writer built). A table is checked first ("deflate.zlib:
bad argument #1 (byte 3 is 256, ...)") and then not copied but worked on in
place: while the call runs its entries are 8-byte words (to_words, below),
and they are bytes again when it returns (a float such as 110.0 comes back
as the integer 110). opts.block = "dynamic", "fixed" or "stored" forces
that block type (for tests); without it each block is written in whichever
of the three is smallest. Output is deterministic: the same input gives the
same bytes.

Speed and size (the development machine, Lua 5.4): the arena's 768 px
picture, 1.77 MB of filtered rows, in about 0.4 s to 94.8 KB of DEFLATE
(zlib level 6 on the same rows: 95.1 KB; level 9: 81.0 KB); 1.2 MB of
random words in 1.3 s to 318 KB (zlib level 6: 308 KB). So roughly 1 to 4
MB/s, with zlib level 6's output size within a few percent.

How it compresses:
  * LZ77 over a 32 KB window (distances 1..32768, lengths 3..258). Every
    position is inserted in a hash table of 3-byte prefixes (65536 heads)
    with chains through the window (prev, indexed by position mod 32768),
    as zlib does; a search follows at most MAX_CHAIN links (a quarter of
    that when the pending match is already GOOD_LENGTH long) and stops at
    a match of NICE_LENGTH. A 3-byte match further than 4096 back is not
    worth its distance code and is dropped (zlib's TOO_FAR).
  * Lazy matching (zlib's deflate_slow): a match found at p is held while
    p + 1 is searched; a longer match there emits p as a literal instead.
    No lazy search after a match of LAZY_LENGTH or more.
  * Blocks of at most BLOCK_SYMBOLS symbols (literals or matches). Each is
    costed, to the bit, as a dynamic Huffman block (RFC 1951 3.2.7: its
    own literal/length and distance codes, limited to 15 bits, sent as
    code lengths run-length coded with symbols 16/17/18 under a code
    length code limited to 7 bits), as a fixed Huffman block (3.2.6) and
    as stored blocks (3.2.4, at most 65535 bytes each, byte-aligned), and
    the smallest is written: random data comes out stored, a few bytes
    come out fixed.
  * Code lengths: Huffman's algorithm (two queues over the symbols sorted
    by frequency), then, if a code is longer than the limit, the lengths
    are capped and the Kraft sum repaired by moving leaves down one level
    at a time (miniz's method), and assigned again, shortest to the most
    frequent. Every code written is complete: a tree with one used symbol
    (or none: a block without matches) gets a second, unused one, as zlib
    does, so that strict decoders accept it.
]]
local deflate = {}

local MAX_CHAIN = 128     -- links followed per search (these four are zlib's level 6)
local GOOD_LENGTH = 8     -- a pending match this long: search a quarter of the chain
local LAZY_LENGTH = 16    -- a pending match this long: no lazy search
local NICE_LENGTH = 128   -- a match this long ends a search
local TOO_FAR = 4096      -- a 3-byte match further back than this is dropped
local BLOCK_SYMBOLS = 32768
local WSIZE = 32768       -- the window: the largest distance DEFLATE can code
local WMASK = WSIZE - 1
local HBITS = 16          -- hash heads: 2^HBITS

-- RFC 1951 3.2.5: length codes 257..285 and distance codes 0..29 (base, extra bits).
local LEN_BASE = { [0] = 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
  35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 }
local LEN_EXTRA = { [0] = 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
  3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 }
local DIST_BASE = { [0] = 1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
  257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577 }
local DIST_EXTRA = { [0] = 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
  7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 }
-- The order code length code lengths are sent in (3.2.7).
local CL_ORDER = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 }

-- LEN_CODE[len] = index into LEN_BASE (symbol 257 + index); DIST_CODE[dist] likewise.
local LEN_CODE, DIST_CODE = {}, {}
for c = 0, 28 do
  for l = LEN_BASE[c], LEN_BASE[c] + (1 << LEN_EXTRA[c]) - 1 do LEN_CODE[l] = c end
end
LEN_CODE[258] = 28 -- 258 has a code of its own (285), not 284 with extra bits 31
for c = 0, 29 do
  for d = DIST_BASE[c], DIST_BASE[c] + (1 << DIST_EXTRA[c]) - 1 do DIST_CODE[d] = c end
end

-- code, reversed to be sent least significant bit first (Huffman codes go most significant first).
local function reverse(code, len)
  local r = 0
  for _ = 1, len do r = (r << 1) | (code & 1); code = code >> 1 end
  return r
end

-- Canonical codes (3.2.2) for lengths[0..n-1], bit-reversed, in a table indexed like lengths.
local function canonical(lengths, n)
  local count, next_code = {}, {}
  for l = 0, 15 do count[l] = 0 end
  for s = 0, n - 1 do count[lengths[s]] = count[lengths[s]] + 1 end
  count[0] = 0
  local code = 0
  for l = 1, 15 do code = (code + count[l - 1]) << 1; next_code[l] = code end
  local codes = {}
  for s = 0, n - 1 do
    local l = lengths[s]
    if l > 0 then codes[s] = reverse(next_code[l], l); next_code[l] = next_code[l] + 1 else codes[s] = 0 end
  end
  return codes
end

-- The fixed Huffman code (3.2.6).
local FIXED_LIT_LEN, FIXED_DIST_LEN = {}, {}
for s = 0, 287 do
  FIXED_LIT_LEN[s] = s < 144 and 8 or s < 256 and 9 or s < 280 and 7 or 8
end
for s = 0, 29 do FIXED_DIST_LEN[s] = 5 end
local FIXED_LIT_CODE = canonical(FIXED_LIT_LEN, 288)
local FIXED_DIST_CODE = canonical(FIXED_DIST_LEN, 30)

--[[
Code lengths for freq[0..n-1], none longer than limit: a table indexed 0..n-1.
A complete code always: with fewer than two used symbols, unused ones are
added (length 1) until there are two.
]]
local function code_lengths(freq, n, limit)
  local lengths, used = {}, {}
  for s = 0, n - 1 do
    lengths[s] = 0
    if freq[s] > 0 then used[#used + 1] = s end
  end
  local s = 0
  while #used < 2 do
    if freq[s] == 0 and lengths[s] == 0 then used[#used + 1] = s; lengths[s] = 1 end
    s = s + 1
  end
  if #used == 2 then lengths[used[1]], lengths[used[2]] = 1, 1; return lengths end
  -- leaves ascending by frequency (ties by symbol, so the result is deterministic)
  table.sort(used, function(x, y)
    if freq[x] ~= freq[y] then return freq[x] < freq[y] end
    return x < y
  end)
  -- Huffman's algorithm with two queues: the leaves, and the internal nodes
  -- (made in non-decreasing weight order). Nodes 1..m are leaves, m+1.. internal.
  local m = #used
  local weight, parent = {}, {}
  for k = 1, m do weight[k] = freq[used[k]] end
  local leaf, node, made = 1, m + 1, m
  local function take()
    if leaf <= m and (node > made or weight[leaf] <= weight[node]) then
      leaf = leaf + 1; return leaf - 1
    end
    node = node + 1; return node - 1
  end
  for _ = 1, m - 1 do
    local x, y = take(), take()
    made = made + 1
    weight[made] = weight[x] + weight[y]
    parent[x], parent[y] = made, made
  end
  -- depths: the root (made) is 0, parents are made after their children
  local depth = { [made] = 0 }
  for k = made - 1, 1, -1 do depth[k] = depth[parent[k]] + 1 end
  local count, deepest = {}, 0
  for l = 1, math.max(limit, m) do count[l] = 0 end
  for k = 1, m do
    local d = depth[k]
    count[d] = count[d] + 1
    if d > deepest then deepest = d end
  end
  if deepest > limit then
    -- cap, then repair the Kraft sum: each step takes a leaf off the deepest
    -- level and splits a shallower leaf into two one level down (sum - 1)
    for l = limit + 1, deepest do count[limit] = count[limit] + count[l]; count[l] = 0 end
    local total = 0
    for l = 1, limit do total = total + (count[l] << (limit - l)) end
    while total > (1 << limit) do
      count[limit] = count[limit] - 1
      for l = limit - 1, 1, -1 do
        if count[l] > 0 then
          count[l] = count[l] - 1
          count[l + 1] = count[l + 1] + 2
          break
        end
      end
      total = total - 1
    end
    deepest = limit
  end
  -- the longest codes to the least frequent symbols
  local k = 1
  for l = deepest, 1, -1 do
    for _ = 1, count[l] do lengths[used[k]] = l; k = k + 1 end
  end
  return lengths
end

-- The output: bytes in out[1..on], bits not yet whole bytes in bb (bc of them).
local function writer()
  return { out = {}, on = 0, bb = 0, bc = 0 }
end

-- Append the low n bits of v (n <= 32).
local function put(w, v, n)
  local bb, bc = w.bb | (v << w.bc), w.bc + n
  while bc >= 8 do
    w.on = w.on + 1
    w.out[w.on] = bb & 255
    bb, bc = bb >> 8, bc - 8
  end
  w.bb, w.bc = bb, bc
end

-- The run-length coded code lengths (3.2.7) of lengths seq[1..m]: symbols and their extra values.
local function rle(seq, m)
  local syms, extras = {}, {}
  local k = 1
  while k <= m do
    local v = seq[k]
    local run = 1
    while k + run <= m and seq[k + run] == v do run = run + 1 end
    k = k + run
    if v == 0 then
      while run >= 11 do
        local r = math.min(run, 138)
        syms[#syms + 1], extras[#extras + 1] = 18, r - 11
        run = run - r
      end
      if run >= 3 then syms[#syms + 1], extras[#extras + 1] = 17, run - 3; run = 0 end
    elseif run >= 4 then
      syms[#syms + 1], extras[#extras + 1] = v, 0
      run = run - 1
      while run >= 3 do
        local r = math.min(run, 6)
        syms[#syms + 1], extras[#extras + 1] = 16, r - 3
        run = run - r
      end
    end
    for _ = 1, run do syms[#syms + 1], extras[#extras + 1] = v, 0 end
  end
  return syms, extras
end

local CL_EXTRA = { [16] = 2, [17] = 3, [18] = 7 }

-- The bits of syms[1..ns] under lit/dist lengths, extra bits included, EOB included.
local function data_bits(lfreq, dfreq, llen, dlen)
  local bits = 0
  for s = 0, 285 do
    local f = lfreq[s]
    if f > 0 then
      bits = bits + f * llen[s]
      if s > 256 then bits = bits + f * LEN_EXTRA[s - 257] end
    end
  end
  for s = 0, 29 do
    local f = dfreq[s]
    if f > 0 then bits = bits + f * (dlen[s] + DIST_EXTRA[s]) end
  end
  return bits
end

-- Huffman-coded symbols syms[1..ns] and the end of block, under the given (reversed) codes.
local function put_symbols(w, syms, ns, lcode, llen, dcode, dlen)
  local out, on, bb, bc = w.out, w.on, w.bb, w.bc
  for k = 1, ns do
    local v = syms[k]
    if v < 256 then
      bb = bb | (lcode[v] << bc); bc = bc + llen[v]
    else
      local len, dist = v >> 16, v & 0xFFFF
      local c = LEN_CODE[len]
      local s = 257 + c
      bb = bb | (lcode[s] << bc); bc = bc + llen[s]
      local e = LEN_EXTRA[c]
      if e > 0 then bb = bb | ((len - LEN_BASE[c]) << bc); bc = bc + e end
      if bc >= 32 then
        out[on + 1], out[on + 2] = bb & 255, (bb >> 8) & 255
        out[on + 3], out[on + 4] = (bb >> 16) & 255, (bb >> 24) & 255
        on, bb, bc = on + 4, bb >> 32, bc - 32
      end
      c = DIST_CODE[dist]
      bb = bb | (dcode[c] << bc); bc = bc + dlen[c]
      e = DIST_EXTRA[c]
      if e > 0 then bb = bb | ((dist - DIST_BASE[c]) << bc); bc = bc + e end
    end
    if bc >= 32 then
      out[on + 1], out[on + 2] = bb & 255, (bb >> 8) & 255
      out[on + 3], out[on + 4] = (bb >> 16) & 255, (bb >> 24) & 255
      on, bb, bc = on + 4, bb >> 32, bc - 32
    end
  end
  w.on, w.bb, w.bc = on, bb, bc
  put(w, lcode[256], llen[256])
end

-- Stored blocks of bytes first..last of W (words: see to_words; any length, even 0);
-- the last one final if final.
local function put_stored(w, W, first, last, final)
  repeat
    local len = math.min(65535, last - first + 1)
    local fin = (final and first + len > last) and 1 or 0
    put(w, fin, 3) -- BTYPE 00
    if w.bc > 0 then put(w, 0, 8 - w.bc) end
    put(w, len, 16)
    put(w, len ~ 0xFFFF, 16)
    local out, on = w.out, w.on
    for k = 0, len - 1 do out[on + 1 + k] = W[first + k] >> 56 end
    w.on = on + len
    first = first + len
  until first > last
end

-- Bits that stored blocks of n bytes take, starting bc bits into a byte.
local function stored_bits(n, bc)
  local pos = bc
  repeat
    local len = math.min(65535, n)
    pos = pos + 3
    pos = (pos + 7) // 8 * 8 + 32 + 8 * len
    n = n - len
  until n <= 0
  return pos - bc
end

--[[
Write one block (or run of stored blocks) holding syms[1..ns], which code
bytes first..last of W: dynamic, fixed or stored, whichever is smallest (or force).
]]
local function put_block(w, W, first, last, syms, ns, final, force)
  local lfreq, dfreq = {}, {}
  for s = 0, 285 do lfreq[s] = 0 end
  for s = 0, 29 do dfreq[s] = 0 end
  for k = 1, ns do
    local v = syms[k]
    if v < 256 then
      lfreq[v] = lfreq[v] + 1
    else
      local s = 257 + LEN_CODE[v >> 16]
      lfreq[s] = lfreq[s] + 1
      s = DIST_CODE[v & 0xFFFF]
      dfreq[s] = dfreq[s] + 1
    end
  end
  lfreq[256] = 1

  -- dynamic: the codes, then their description
  local llen = code_lengths(lfreq, 286, 15)
  local dlen = code_lengths(dfreq, 30, 15)
  local hlit, hdist = 286, 30
  while llen[hlit - 1] == 0 do hlit = hlit - 1 end -- never below 257: EOB is used
  while dlen[hdist - 1] == 0 do hdist = hdist - 1 end -- never below 2: two codes always
  local seq = {}
  for s = 0, hlit - 1 do seq[#seq + 1] = llen[s] end
  for s = 0, hdist - 1 do seq[#seq + 1] = dlen[s] end
  local cl_syms, cl_extras = rle(seq, #seq)
  local cl_freq = {}
  for s = 0, 18 do cl_freq[s] = 0 end
  for k = 1, #cl_syms do cl_freq[cl_syms[k]] = cl_freq[cl_syms[k]] + 1 end
  local cl_len = code_lengths(cl_freq, 19, 7)
  local hclen = 19
  while hclen > 4 and cl_len[CL_ORDER[hclen]] == 0 do hclen = hclen - 1 end -- 4 at least (3.2.7)
  local dyn = 3 + 5 + 5 + 4 + 3 * hclen + data_bits(lfreq, dfreq, llen, dlen)
  for k = 1, #cl_syms do dyn = dyn + cl_len[cl_syms[k]] + (CL_EXTRA[cl_syms[k]] or 0) end

  local fixed = 3 + data_bits(lfreq, dfreq, FIXED_LIT_LEN, FIXED_DIST_LEN)
  local stored = stored_bits(last - first + 1, w.bc)

  local kind = force
  if not kind then
    kind = "dynamic"
    if fixed <= dyn then kind = "fixed" end
    if stored < math.min(dyn, fixed) then kind = "stored" end
  end
  local fin = final and 1 or 0
  if kind == "stored" then
    put_stored(w, W, first, last, final)
  elseif kind == "fixed" then
    put(w, fin | (1 << 1), 3)
    put_symbols(w, syms, ns, FIXED_LIT_CODE, FIXED_LIT_LEN, FIXED_DIST_CODE, FIXED_DIST_LEN)
  else
    put(w, fin | (2 << 1), 3)
    put(w, hlit - 257, 5)
    put(w, hdist - 1, 5)
    put(w, hclen - 4, 4)
    for k = 1, hclen do put(w, cl_len[CL_ORDER[k]], 3) end
    local cl_code = canonical(cl_len, 19)
    for k = 1, #cl_syms do
      local s = cl_syms[k]
      put(w, cl_code[s], cl_len[s])
      if s >= 16 then put(w, cl_extras[k], CL_EXTRA[s]) end
    end
    put_symbols(w, syms, ns, canonical(llen, 286), llen, canonical(dlen, 30), dlen)
  end
end

-- data (a string) as a sequence of byte values.
local function bytes_of(s)
  local d, n = {}, 0
  for i = 1, #s, 4096 do
    local chunk = { string.byte(s, i, math.min(i + 4095, #s)) }
    table.move(chunk, 1, #chunk, n + 1, d)
    n = n + #chunk
  end
  return d
end

-- The bytes out[1..n] as a string.
local function string_of(out, n)
  local parts = {}
  for i = 1, n, 4096 do parts[#parts + 1] = string.char(table.unpack(out, i, math.min(i + 4095, n))) end
  return table.concat(parts)
end

local BYTE = {}
for v = 0, 255 do BYTE[v] = true end

-- data as a sequence of bytes (a string is converted; a table is checked, not copied).
local function check_args(fname, data, opts)
  local t = type(data)
  if t ~= "string" and t ~= "table" then
    error(("deflate.%s: bad argument #1 (string or table of bytes expected, got %s)"):format(fname, t), 3)
  end
  if opts ~= nil then
    if type(opts) ~= "table" then
      error(("deflate.%s: bad argument #2 (table expected, got %s)"):format(fname, type(opts)), 3)
    end
    local b = opts.block
    if b ~= nil and b ~= "dynamic" and b ~= "fixed" and b ~= "stored" then
      error(("deflate.%s: opts.block must be \"dynamic\", \"fixed\" or \"stored\", got %s")
        :format(fname, tostring(b)), 3)
    end
  end
  if t == "string" then return bytes_of(data), true end
  for k = 1, #data do
    local v = data[k]
    if not BYTE[v] then
      error(("deflate.%s: bad argument #1 (byte %d is %s, not an integer 0..255)")
        :format(fname, k, tostring(v)), 3)
    end
  end
  return data, false
end

--[[
Bytes d[1..n] become words in place: d[i] holds bytes i..i+7, the first
one in the top 8 bits (zeros past n). The match search then compares 8
bytes a step, a 3-byte hash key is d[i] >> 40 and byte i is d[i] >> 56.
from_words undoes it.
]]
local function to_words(d, n)
  local x = 0
  for k = 1, 7 do x = (x << 8) | (k <= n and d[k] or 0) end
  for i = 1, n - 7 do
    x = (x << 8) | d[i + 7] -- still a byte: index i + 7 is converted later
    d[i] = x
  end
  for i = math.max(1, n - 6), n do
    x = x << 8
    d[i] = x
  end
end

local function from_words(d, n)
  for i = 1, n do d[i] = d[i] >> 56 end
end

--[[
The DEFLATE stream of the n bytes in words W (to_words), appended to w.
The LZ77 pass below runs over every input byte: keep its loop free of
calls and allocation.
]]
local function compress(w, W, n, force)
  local head, prev = {}, {}
  for h = 1, 1 << HBITS do head[h] = 0 end
  for p = 1, WSIZE do prev[p] = 0 end
  local syms, ns = {}, 0
  local first = 1                      -- the first byte of the current block
  local last3 = n - 2                  -- the last position with 3 bytes ahead
  local pend_len, pend_dist = 0, 0     -- the match found at i - 1, if any (length >= 3)
  local pend = false                   -- byte i - 1 is still to be emitted (literal or pend_len match)
  local HSHIFT = 56 - HBITS
  local i = 1
  while i <= n do
    -- insert i into its chain; cand = the most recent earlier position with its hash
    local cand = 0
    if i <= last3 then
      local h = (((W[i] >> 40) * 0x9E3779B1) >> HSHIFT) + 1
      cand = head[h]
      head[h] = i
      prev[(i & WMASK) + 1] = cand
    end
    -- the longest match at i that beats the pending one (3 bytes at least)
    local len, dist = 0, 0
    local best = pend_len > 2 and pend_len or 2
    local maxlen = n - i + 1
    if maxlen > 258 then maxlen = 258 end
    if cand > 0 and pend_len < LAZY_LENGTH and best < maxlen then
      local lo = i - WSIZE
      local chain = pend_len >= GOOD_LENGTH and MAX_CHAIN >> 2 or MAX_CHAIN
      -- a candidate must agree on bytes 0..best to beat best: test the 8 bytes
      -- ending at best (the first best + 1 bytes while best < 7) before the rest
      local off = best >= 7 and best - 7 or 0
      local wb, shift = W[i + off], best >= 7 and 0 or (7 - best) << 3
      while cand >= lo and cand > 0 do
        if (W[cand + off] ~ wb) >> shift == 0 then
          local l, x = 0
          repeat
            x = W[cand + l] ~ W[i + l]
            if x ~= 0 then break end
            l = l + 8
          until l >= maxlen
          if x ~= 0 then -- count the equal leading bytes of the differing word
            if x >> 32 == 0 then l = l + 4; x = x << 32 end
            if x >> 48 == 0 then l = l + 2; x = x << 16 end
            if x >> 56 == 0 then l = l + 1 end
          end
          if l > maxlen then l = maxlen end
          if l > best then
            best, len, dist = l, l, i - cand
            if l >= NICE_LENGTH or l >= maxlen then break end
            if best >= 7 then off, shift = best - 7, 0 else shift = (7 - best) << 3 end
            wb = W[i + off]
          end
        end
        chain = chain - 1
        -- prev of the window's oldest position was overwritten by i: stop there
        if chain == 0 or cand == lo then break end
        cand = prev[(cand & WMASK) + 1]
      end
      if len == 3 and dist > TOO_FAR then len = 0 end
    end
    if pend_len >= 3 and len <= pend_len then
      -- the pending match at i - 1 wins: emit it, insert the positions it covers
      ns = ns + 1
      syms[ns] = (pend_len << 16) | pend_dist
      local stop = i + pend_len - 2 -- the match covers i - 1 .. stop
      local ins = stop < last3 and stop or last3
      for j = i + 1, ins do
        local h = (((W[j] >> 40) * 0x9E3779B1) >> HSHIFT) + 1
        prev[(j & WMASK) + 1] = head[h]
        head[h] = j
      end
      i = stop + 1
      pend, pend_len = false, 0
      if ns >= BLOCK_SYMBOLS and i <= n then
        put_block(w, W, first, i - 1, syms, ns, false, force)
        first, ns = i, 0
      end
    else
      if pend then
        ns = ns + 1
        syms[ns] = W[i - 1] >> 56
        if ns >= BLOCK_SYMBOLS then
          put_block(w, W, first, i - 1, syms, ns, false, force)
          first, ns = i, 0
        end
      end
      pend, pend_len, pend_dist = true, len, dist
      i = i + 1
    end
  end
  if pend then ns = ns + 1; syms[ns] = W[n] >> 56 end
  put_block(w, W, first, n, syms, ns, true, force)
  if w.bc > 0 then put(w, 0, 8 - w.bc) end
end

-- Adler-32 (RFC 1950) of bytes d[1..#d], continuing from adler.
local function adler_of(d, adler)
  local a, b = adler & 0xFFFF, adler >> 16
  local n = #d
  -- 5552 bytes is the longest run whose sums stay below 2^32 (zlib's NMAX);
  -- Lua integers are 64 bits, but reducing often keeps the numbers small.
  for i = 1, n, 5552 do
    for k = i, math.min(i + 5551, n) do a = a + d[k]; b = b + a end
    a, b = a % 65521, b % 65521
  end
  return (b << 16) | a
end

-- The DEFLATE stream of bytes d (a table: converted to words and back, see to_words).
local function deflate_bytes(w, d, own, force)
  local n = #d
  to_words(d, n)
  compress(w, d, n, force)
  if not own then from_words(d, n) end
end

-- Not part of the interface: for spec/examples/deflate_spec.lua, which checks the length limits.
deflate._code_lengths = code_lengths

function deflate.compress(data, opts)
  local d, own = check_args("compress", data, opts)
  local w = writer()
  deflate_bytes(w, d, own, opts and opts.block)
  return string_of(w.out, w.on)
end

function deflate.zlib(data, opts)
  local d, own = check_args("zlib", data, opts)
  local adler = adler_of(d, 1)
  local w = writer()
  put(w, 0x78, 8) -- CMF: method 8 (deflate), 32 KB window
  put(w, 0x9C, 8) -- FLG: default level, no dictionary; 0x789C is a multiple of 31
  deflate_bytes(w, d, own, opts and opts.block)
  for shift = 24, 0, -8 do put(w, (adler >> shift) & 255, 8) end
  return string_of(w.out, w.on)
end

function deflate.adler32(data, adler)
  local t = type(data)
  if t ~= "string" and t ~= "table" then
    error(("deflate.adler32: bad argument #1 (string or table of bytes expected, got %s)"):format(t), 2)
  end
  if adler ~= nil and (math.type(adler) ~= "integer" or adler < 0 or adler > 0xFFFFFFFF) then
    error("deflate.adler32: bad argument #2 (a 32-bit integer expected)", 2)
  end
  return adler_of(t == "string" and bytes_of(data) or data, adler or 1)
end

return deflate
