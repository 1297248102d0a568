--[[
deflate_spec.lua -- examples/lib/deflate.lua, the pure-Lua compressor the
demo's PNG writer (examples/lib/png.lua) uses, and the PNGs it makes.
Every stream is decoded by spec/support/inflate.lua, a strict decoder
written from RFC 1951/1950 apart from the compressor, and must give back
its input: empty input, one byte, all 256 byte values, runs around the
258-byte match limit, repeats exactly 32768 bytes back (the window's
edge), random data (stored blocks), text, data over 64 KB and over 1 MB,
each block type forced; code lengths stay within 15 and 7 bits. The PNGs
(the arena's picture at the demo's size, and images made to need each
filter) are read back chunk by chunk, their rows unfiltered and compared
with the pixels png.lua was given; the arena's is under 200 KB. The same
streams go through python3's zlib when python3 is installed (another
decoder, not written here); without it that test is pending, with the
reason printed.
]]
package.path = "examples/?.lua;examples/lib/?.lua;" .. package.path
local deflate = require("deflate")
local png = require("png")
local inflate = require("spec.support.inflate")
local read_png = require("spec.support.png_read")
local files = require("spec.support.files")

-- A deterministic generator of integers 0..2^31-1 (a 64-bit LCG, top bits).
local function rng(seed)
  local x = seed
  return function()
    x = x * 6364136223846793005 + 1442695040888963407
    return (x >> 33) & 0x7FFFFFFF
  end
end

local function random_bytes(n, seed)
  local r, t = rng(seed), {}
  for i = 1, n do t[i] = string.char(r() & 255) end
  return table.concat(t)
end

-- Text from a small vocabulary: words, spaces, punctuation, numbers.
local WORDS = { "the", "entity", "component", "system", "world", "query", "of", "and", "a", "to",
  "archetype", "chunk", "column", "deflate", "window", "match", "literal", "Huffman", "code", "block",
  "stored", "fixed", "dynamic", "length", "distance", "is", "in", "every", "frame", "raider" }
local function text(n, seed)
  local r, t, len = rng(seed), {}, 0
  while len < n do
    local k = r() % 40
    local word = WORDS[k % #WORDS + 1]
    if k >= 37 then word = tostring(r() % 100000) end
    local sep = ({ " ", " ", " ", " ", ", ", ". ", "\n" })[r() % 7 + 1]
    t[#t + 1] = word .. sep
    len = len + #word + #sep
  end
  return table.concat(t):sub(1, n)
end

local function bytes_all()
  local t = {}
  for v = 0, 255 do t[#t + 1] = string.char(v) end
  return table.concat(t)
end

-- The inputs every encoding is checked on (name -> bytes), made once.
local samples
local function get_samples()
  if samples then return samples end
  local win = random_bytes(32768, 3)
  -- over 1 MB: 55 copies of 20 KB of text (within the window), each with a few bytes changed
  local base, copies = text(20000, 7), {}
  local r = rng(8)
  for k = 1, 55 do
    local c = { base:byte(1, -1) }
    for _ = 1, 20 do c[r() % #c + 1] = r() & 255 end
    copies[k] = string.char(table.unpack(c))
  end
  samples = {
    { "empty", "" },
    { "one byte", "a" },
    { "all 256 byte values", bytes_all() },
    { "all 256 byte values twice", bytes_all() .. bytes_all() },
    { "a run of 1000", string.rep("z", 1000) },
    { "repeat 32768 back", win .. win },
    { "repeat 32767 back", win:sub(2) .. win:sub(2) },
    { "repeat 32769 back (out of reach)", random_bytes(32769, 4) .. random_bytes(32769, 4) },
    { "random 100000", random_bytes(100000, 5) },
    { "text 100000", text(100000, 6) },
    { "over 1 MB", table.concat(copies) },
  }
  -- runs around the match length limit, between other bytes
  for _, len in ipairs({ 1, 2, 3, 4, 5, 6, 257, 258, 259, 260, 261, 262, 515, 516, 517, 518, 519, 774 }) do
    samples[#samples + 1] = { "a run of " .. len, "ab" .. string.rep("x", len) .. "cd" }
  end
  return samples
end

local function hex(s, n)
  return (s:sub(1, n or 16):gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

-- deflate.compress or deflate.zlib (fn) of data, kind of block forced or not: made once, for
-- the tests here and the python3 check.
local made = {}
local function stream(fn, data, kind)
  local key = fn .. "/" .. (kind or "any")
  made[key] = made[key] or {}
  local z = made[key][data]
  if not z then
    z = deflate[fn](data, kind and { block = kind } or nil)
    made[key][data] = z
  end
  return z
end

-- Decodes with the model and compares with the input; returns the model's info.
local function round_trip(name, data, opts)
  local z = stream("compress", data, opts and opts.block)
  local ok, out, info = pcall(inflate.raw, z)
  assert(ok, name .. ": " .. tostring(out))
  assert(out == data, ("%s: decoded %d bytes, expected %d"):format(name, #out, #data))
  assert(info.stop == #z + 1, name .. ": bytes after the stream")
  return info, z
end

describe("deflate.compress and deflate.zlib (examples/lib/deflate.lua)", function()
  it("round-trips every sample through the model decoder, choosing its blocks", function()
    for _, s in ipairs(get_samples()) do
      local name, data = s[1], s[2]
      local z, zz = stream("compress", data), stream("zlib", data)
      assert(zz == "\x78\x9c" .. z .. string.pack(">I4", inflate.adler32(data)),
        name .. ": zlib = header .. raw .. Adler-32")
      local ok, out, info = pcall(inflate.zlib, zz)
      assert(ok, name .. ": " .. tostring(out))
      assert(out == data, ("%s: decoded %d bytes, expected %d"):format(name, #out, #data))
      -- never much worse than stored: a block codes 32768 symbols (so 32768 bytes at least, but
      -- for the last), and stored it costs 5 bytes more than its data; a byte of padding
      local worst = #data + 5 * (#data // 32768 + 1) + 1
      assert(#z <= worst, ("%s: %d bytes from %d"):format(name, #z, #data))
      assert(#info.blocks >= 1)
    end
  end)

  it("codes small inputs as fixed blocks, compressible ones as dynamic blocks, random data stored", function()
    assert.same({ "fixed" }, (round_trip("empty", "")).blocks)
    assert.same({ "fixed" }, (round_trip("one byte", "a")).blocks)
    assert.equals("0300", hex(deflate.compress(""))) -- BFINAL 1, BTYPE 01, EOB (7 zero bits)
    assert.equals("789c030000000001", hex(deflate.zlib("")))
    local info, z = round_trip("random", random_bytes(200000, 9))
    for _, b in ipairs(info.blocks) do assert.equals("stored", b) end
    assert.is_true(#z <= 200000 + 5 * #info.blocks + 1)
    local t = text(300000, 10)
    info, z = round_trip("text", t)
    for _, b in ipairs(info.blocks) do assert.equals("dynamic", b) end
    assert.is_true(#z < #t / 3, ("text: %d bytes from %d"):format(#z, #t))
  end)

  it("round-trips each block type forced, on every sample", function()
    for _, kind in ipairs({ "dynamic", "fixed", "stored" }) do
      for _, s in ipairs(get_samples()) do
        if #s[2] <= 200000 then
          local info = round_trip(s[1] .. " as " .. kind, s[2], { block = kind })
          for _, b in ipairs(info.blocks) do assert.equals(kind, b, s[1]) end
        end
      end
    end
  end)

  it("uses matches of length 258 and distance 32768, never further", function()
    local info = round_trip("run", "ab" .. string.rep("x", 774) .. "cd")
    assert.is_true((info.lengths[258] or 0) >= 2, "258-byte matches")
    -- 2 + 774 x: literal x, then 773 = 258 + 258 + 257
    assert.equals(1, info.lengths[257])
    local win = random_bytes(32768, 3)
    info = round_trip("window", win .. win)
    assert.equals(32768, info.max_dist)
    assert.is_true((info.lengths[258] or 0) >= 100)
    info = round_trip("window - 1", win:sub(2) .. win:sub(2))
    assert.equals(32767, info.max_dist)
    -- 32769 back is out of the window: the repeat cannot be coded by distance
    local far = random_bytes(32769, 4)
    local z
    info, z = round_trip("window + 1", far .. far)
    assert.is_true(info.max_dist <= 32768)
    assert.is_true(#z > 2 * 32769 * 0.99, "random data 32769 bytes back stays uncompressed")
  end)

  it("keeps code lengths within 15 bits (7 for the code length code) on skewed data", function()
    -- Fibonacci frequencies: Huffman's algorithm alone would make codes as long as the alphabet
    local fib = { 1, 1 }
    for k = 3, 30 do fib[k] = fib[k - 1] + fib[k - 2] end
    local function check(n, limit, freq_of)
      local freq = {}
      for s = 0, n - 1 do freq[s] = freq_of(s) end
      local lengths = deflate._code_lengths(freq, n, limit)
      local kraft, longest = 0, 0
      for s = 0, n - 1 do
        local l = lengths[s]
        if freq[s] > 0 then assert.is_true(l >= 1, "a used symbol without a code") end
        if l > 0 then kraft = kraft + (1 << (limit - l)) end
        if l > longest then longest = l end
      end
      assert.equals(1 << limit, kraft, "the code is complete")
      assert.equals(limit, longest)
      -- more frequent symbols never get longer codes
      for a = 0, n - 1 do
        for b = 0, n - 1 do
          if freq[a] > freq[b] and freq[b] > 0 then assert.is_true(lengths[a] <= lengths[b]) end
        end
      end
      return lengths
    end
    check(30, 15, function(s) return fib[s + 1] end)
    check(286, 15, function(s) return s < 30 and fib[s + 1] or 0 end)
    check(19, 7, function(s) return fib[s + 1] end)
    -- with room enough, Huffman's lengths stay as they are: 1, 2, 3, ... 29, 29
    local free = deflate._code_lengths((function()
      local f = {}
      for s = 0, 29 do f[s] = fib[s + 1] end
      return f
    end)(), 30, 40)
    assert.equals(29, free[0])
    assert.equals(1, free[29])
    -- one used symbol, or none: two codes of one bit, still complete
    local one = deflate._code_lengths({ [0] = 0, 0, 5, 0 }, 4, 15)
    assert.same({ [0] = 1, 0, 1, 0 }, one)
    local none = deflate._code_lengths({ [0] = 0, 0, 0 }, 3, 15)
    assert.same({ [0] = 1, 1, 0 }, none)
    -- end to end: literals with geometric frequencies (byte k twice as rare as k - 1)
    local r, t = rng(12), {}
    for i = 1, 150000 do
      local k = 0
      while k < 40 and r() & 1 == 1 do k = k + 1 end
      t[i] = string.char(k * 6 + 1)
    end
    local info = round_trip("geometric", table.concat(t))
    assert.equals(15, info.longest)
  end)

  it("takes a table of bytes as it takes a string, and leaves the table as it was", function()
    local s = text(70000, 13) .. random_bytes(3000, 14)
    local t = { s:byte(1, 60000) }
    for i = 60001, #s do t[i] = s:byte(i) end
    local copy = table.move(t, 1, #t, 1, {})
    assert.equals(deflate.compress(s), deflate.compress(t))
    assert.same(copy, t)
    assert.equals(deflate.zlib(s), deflate.zlib(t))
    assert.same(copy, t)
    assert.equals(deflate.adler32(s), deflate.adler32(t))
  end)

  it("computes Adler-32, continuing from a given value", function()
    assert.equals(0x11E60398, deflate.adler32("Wikipedia"))
    assert.equals(1, deflate.adler32(""))
    local s = text(20000, 15)
    assert.equals(inflate.adler32(s), deflate.adler32(s))
    assert.equals(deflate.adler32(s), deflate.adler32(s:sub(7001), deflate.adler32(s:sub(1, 7000))))
    assert.equals(deflate.adler32(s), png.adler32(s))
    local big = string.rep("\255", 100000) -- sums reduced often enough
    assert.equals(inflate.adler32(big), deflate.adler32(big))
  end)

  it("refuses what is not bytes, naming the argument", function()
    local function err(f, ...)
      local ok, e = pcall(f, ...)
      assert.is_false(ok)
      return e
    end
    assert.matches("deflate.compress: bad argument #1 (string or table of bytes expected, got nil)",
      err(deflate.compress), 1, true)
    assert.matches("deflate.zlib: bad argument #1 (string or table of bytes expected, got number)",
      err(deflate.zlib, 5), 1, true)
    for _, bad in ipairs({ 256, -1, 1.5, "7", true }) do
      assert.matches("deflate.compress: bad argument #1 (byte 3 is " .. tostring(bad),
        err(deflate.compress, { 1, 2, bad, 4 }), 1, true)
    end
    assert.matches("deflate.compress: bad argument #2 (table expected, got string)",
      err(deflate.compress, "x", "fixed"), 1, true)
    assert.matches('opts.block must be "dynamic", "fixed" or "stored", got huffman',
      err(deflate.zlib, "x", { block = "huffman" }), 1, true)
    assert.matches("deflate.adler32: bad argument #2",
      err(deflate.adler32, "x", 1.5), 1, true)
  end)
end)

describe("the model decoder (spec/support/inflate.lua) is not blind", function()
  it("rejects damaged streams", function()
    local z = deflate.zlib(text(5000, 16))
    assert.is_truthy(pcall(inflate.zlib, z))
    local function broken(s, what)
      local ok, e = pcall(inflate.zlib, s)
      assert.is_false(ok, what)
      return e
    end
    assert.matches("Adler%-32", broken(z:sub(1, -2) .. string.char((z:byte(-1) + 1) % 256), "adler"))
    assert.matches("FCHECK", broken("\x78\x9d" .. z:sub(3), "header"))
    assert.matches("bytes after", broken(z .. "\0", "trailing"))
    assert.matches("ends early", broken(z:sub(1, #z // 2), "cut"))
    assert.matches("block type 3", broken("\x78\x9c\x07\0\0\0\0\1", "btype 3"))
    assert.matches("LEN and NLEN", broken("\x78\x9c\x01\x01\x00\x00\x00\x61" .. "\0\0\0\0", "nlen"))
    -- a flipped bit in the compressed data (not in the last byte's padding): some check catches it
    local tried, caught = 0, 0
    for i = 3, #z - 5, 37 do
      local bad = z:sub(1, i - 1) .. string.char(z:byte(i) ~ 16) .. z:sub(i + 1)
      tried = tried + 1
      if not pcall(inflate.zlib, bad) then caught = caught + 1 end
    end
    assert.is_true(tried > 10)
    assert.equals(tried, caught)
  end)
end)

-- The pixels of img (png.image) as a string, 3 bytes a pixel.
local function pixels(img)
  local parts, px = {}, img.px
  for i = 1, #px, 4096 do parts[#parts + 1] = string.char(table.unpack(px, i, math.min(i + 4095, #px))) end
  return table.concat(parts)
end

-- An image of w x h whose pixel (x, y) is f(x, y) -> r, g, b.
local function image_of(w, h, f)
  local img = png.image(w, h)
  for y = 0, h - 1 do
    for x = 0, w - 1 do img:set(x, y, f(x, y)) end
  end
  return img
end

-- Images made to need each filter: name -> image (made once).
local filter_images
local function get_filter_images()
  if filter_images then return filter_images end
  local r = rng(17)
  filter_images = {
    -- every row the same ramp: Up gives zeros (Sub on the first row)
    { "horizontal ramp", image_of(96, 40, function(x) return x * 3 % 256, x * 5 % 256, x * 7 % 256 end) },
    -- every row one colour: Sub gives zeros after the first pixel
    { "vertical ramp", image_of(96, 40, function(_, y) return y * 3 % 256, y * 5 % 256, y * 7 % 256 end) },
    -- a ramp along the diagonal: the up-left neighbour is the pixel, and Paeth finds it
    { "diagonal ramp", image_of(96, 40, function(x, y)
      local v = x - y + 120
      return v, 255 - v, (v * 3) // 4
    end) },
    -- flat with sparse dots: None (see png.lua, choose_filter)
    { "dots", (function()
      local img = png.image(96, 40, 8, 10, 20)
      for _ = 1, 200 do img:set(r() % 96, r() % 40, 110, 105, 100) end
      return img
    end)() },
    -- noise
    { "noise", image_of(50, 20, function() return r() & 255, r() & 255, r() & 255 end) },
    { "1 x 1", png.image(1, 1, 1, 2, 3) },
    { "2000 x 2", image_of(2000, 2, function(x, y) return x % 256, (x // 256 + y) % 256, 7 end) },
  }
  return filter_images
end

-- The arena's picture at the demo's size (examples/arena.lua's defaults: 100k entities, 768 px),
-- 10 frames in (the picture is mostly its ~100k asteroids from the start): the image and its
-- PNG (made once).
local arena_png
local function get_arena_png()
  if arena_png then return arena_png end
  local arena = require("arena")
  local sim = arena.run({ frames = 10, seed = 1 })
  local img = arena.render(sim, 768)
  sim.world:close()
  local data = png.encode(img)
  arena_png = { img = img, data = data, read = read_png(data) }
  return arena_png
end

describe("png.encode (examples/lib/png.lua)", function()
  it("writes the arena's picture in under 200 KB, and it reads back to the pixels it was given", function()
    local a = get_arena_png()
    assert.is_true(#a.data < 200 * 1024, ("the arena's picture takes %d bytes"):format(#a.data))
    local got = a.read
    assert.equals(768, got.width)
    assert.equals(768, got.height)
    assert.same({ "IHDR", "IDAT", "IEND" }, got.chunks)
    assert(got.pixels == pixels(a.img), "the pixels read back differ from those written")
    -- 3 bytes a pixel uncompressed: the picture is mostly background
    assert.is_true(#a.data < #got.pixels / 8)
  end)

  it("chooses a filter per row (None, Sub, Up, Paeth all used), and every image reads back", function()
    local seen = {}
    for _, c in ipairs(get_filter_images()) do
      local name, img = c[1], c[2]
      local data = png.encode(img)
      local got = read_png(data)
      assert.equals(img.width, got.width, name)
      assert.equals(img.height, got.height, name)
      assert(got.pixels == pixels(img), name .. ": the pixels read back differ")
      for t in pairs(got.filters) do seen[t] = true end
    end
    assert.same({ [0] = true, [1] = true, [2] = true, [4] = true }, seen)
    -- the ramps are coded by their filters: a tiny fraction of their size
    local ramp = get_filter_images()[1][2]
    assert.is_true(#png.encode(ramp) < 96 * 40 * 3 / 20)
  end)

  it("writes the file png.encode makes, and is deterministic", function()
    local img = get_filter_images()[4][2]
    local path = os.tmpname()
    local n = png.write(img, path)
    local data = files.read(path)
    os.remove(path)
    assert.equals(#data, n)
    assert.equals(png.encode(img), data)
    assert.equals(data, png.encode(img))
  end)

  it("refuses a pixel value outside 0..255, naming the pixel", function()
    for _, bad in ipairs({ 256, -1, 2.5, "x" }) do
      local img = png.image(4, 3, 1, 2, 3)
      img.px[3 * (2 * 4 + 1) + 2] = bad -- pixel (1, 2), green
      local ok, err = pcall(png.encode, img)
      assert.is_false(ok)
      assert.matches("png.encode: pixel (1, 2) has a value outside 0..255", err, 1, true)
    end
  end)
end)

-- python3's zlib, if it is there: the reason it cannot be used, or nil.
local function python_missing()
  local p = io.popen("python3 -c 'import zlib; print(zlib.ZLIB_VERSION)' 2>&1")
  local out = p and p:read("*a") or ""
  local ok = p and p:close()
  if not ok then
    return "python3 with its zlib module is not available (" .. (out:match("[^\n]+") or "no output") .. ")"
  end
  return nil, out:match("[^\n]+")
end

describe("python3's zlib (an independent decoder)", function()
  local missing, version = python_missing()
  if missing then
    local why = missing .. ": the streams are checked by the model decoder only"
    io.stderr:write("deflate_spec: ", why, "\n")
    pending(why)
    return
  end

  it("decodes every stream to its input (zlib " .. tostring(version) .. ")", function()
    local cases = {} -- { name, stream, expected, wbits }
    for _, s in ipairs(get_samples()) do
      cases[#cases + 1] = { s[1], stream("zlib", s[2]), s[2], 15 }
      cases[#cases + 1] = { s[1] .. " (raw)", stream("compress", s[2]), s[2], -15 }
      if #s[2] <= 200000 then
        for _, kind in ipairs({ "dynamic", "fixed", "stored" }) do
          cases[#cases + 1] = { s[1] .. " (raw, " .. kind .. ")", stream("compress", s[2], kind), s[2], -15 }
        end
      end
    end
    local got = get_arena_png().read
    cases[#cases + 1] = { "arena IDAT", got.zlib, got.raw, 15 }
    for _, c in ipairs(get_filter_images()) do
      local g = read_png(png.encode(c[2]))
      cases[#cases + 1] = { c[1] .. " IDAT", g.zlib, g.raw, 15 }
    end
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local list = {}
    for k, c in ipairs(cases) do
      files.write(("%s/%d.z"):format(dir, k), c[2])
      files.write(("%s/%d.raw"):format(dir, k), c[3])
      list[#list + 1] = ("%d:%d"):format(k, c[4])
    end
    local script = table.concat({
      "import sys, zlib",
      "d = sys.argv[1]",
      "for arg in sys.argv[2:]:",
      "    k, wbits = arg.split(':')",
      "    z = open(d + '/' + k + '.z', 'rb').read()",
      "    want = open(d + '/' + k + '.raw', 'rb').read()",
      "    try:",
      "        dec = zlib.decompressobj(int(wbits))",
      "        got = dec.decompress(z) + dec.flush()",
      "        print(k, 'ok' if got == want and dec.eof and not dec.unused_data",
      "              else 'differs (%d bytes, expected %d)' % (len(got), len(want)))",
      "    except zlib.error as e:",
      "        print(k, 'error', e)",
    }, "\n")
    files.write(dir .. "/check.py", script)
    local p = assert(io.popen(("python3 %s/check.py %s %s 2>&1"):format(dir, dir, table.concat(list, " "))))
    local out = p:read("*a")
    p:close()
    os.execute("rm -rf " .. dir)
    local checked = 0
    for k, c in ipairs(cases) do
      local line = out:match("\n" .. k .. " ([^\n]*)") or out:match("^" .. k .. " ([^\n]*)")
      assert.equals("ok", line, c[1] .. ": " .. tostring(line) .. "\n" .. out)
      checked = checked + 1
    end
    assert.equals(#cases, checked)
    assert.is_true(checked > 100)
  end)
end)

-- The samples, streams and images above are made once for the whole file: let them go with it,
-- so that the specs after this one run with the heap they would have had without it (the
-- finalizer timing of spec/storage/migrate_spec.lua, for one, depends on it).
teardown(function()
  samples, filter_images, arena_png = nil, nil, nil
  made = {}
  collectgarbage()
  collectgarbage()
end)
