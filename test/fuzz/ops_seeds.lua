-- ops_seeds.lua -- writes the seed-mgr-* inputs of test/fuzz/ops/: programs
-- for test/fuzz/fuzz_ops.c that reach the manager interface (ops with
-- op % 16 == 12 other than 12; see the header of fuzz_ops.c for every op's
-- bytes). Run from the repository: lua5.4 test/fuzz/ops_seeds.lua test/fuzz/ops
--
-- Every seed starts from world(n): n entities, three components (box with
-- f64, lua, bool and entity fields; zzz without fields; kg with an f32 and
-- two lua fields), the transform with a small hierarchy, and names. The
-- fuzzer numbers managers in that order: box 0, zzz 1, kg 2, transform 3,
-- names 4 (the manager byte is taken modulo 5).

local out_dir = assert(arg[1], "usage: lua5.4 test/fuzz/ops_seeds.lua DIR")

local ALPHA = "abcefgklmosxyzAB_019 .-" -- read_name's alphabet
local T = { f32 = 0, f64 = 1, i8 = 2, i16 = 3, i32 = 4, i64 = 5, u8 = 6, u16 = 7, u32 = 8,
            bool = 9, entity = 10, lua = 11 }
-- manager ops, by op >> 4 (mod 7): 6 round trip, 1 cut, 2 flip, 3 clear,
-- 4 listen, 5 schema and has
local RT, TRUNC, FLIP, CLEAR, LISTEN, INSPECT = 0x6C, 0x1C, 0x2C, 0x3C, 0x4C, 0x5C
local M = { box = 0, zzz = 1, kg = 2, tr = 3, nm = 4 }
local ALL = { M.box, M.zzz, M.kg, M.tr, M.nm }

-- Append the bytes of each list in ... to p.
local function add(p, ...)
  for _, list in ipairs({ ... }) do
    for _, b in ipairs(list) do p[#p + 1] = b end
  end
  return p
end

local function name(s)
  local out = { #s }
  for i = 1, #s do out[#out + 1] = assert(ALPHA:find(s:sub(i, i), 1, true)) - 1 end
  return out
end

local function comp(n, fields)
  local out = add({ 4, #fields }, name(n))
  for _, f in ipairs(fields) do add(out, name(f[1]), { T[f[2]] }) end
  return out
end

local function world(ncreate)
  local p = { 1, ncreate or 24 }
  add(p, comp("box", { { "x", "f64" }, { "a", "lua" }, { "b", "bool" }, { "e", "entity" } }))
  add(p, comp("zzz", {}))
  add(p, comp("kg", { { "m", "f32" }, { "o", "lua" }, { "s", "lua" } }))
  for e = 0, 15 do add(p, { 5, 0, e }) end
  for e = 4, 11 do add(p, { 6, 1, e }) end
  for e = 8, 19 do add(p, { 5, 2, e }) end
  add(p, { 10 }) -- the transform
  for e = 0, 13 do add(p, { 13, 0, e, e % 8, 1, 2, e % 3, e & 1 }) end
  for _, cp in ipairs({ { 1, 0 }, { 2, 0 }, { 3, 1 }, { 4, 3 }, { 5, 4 }, { 7, 6 }, { 8, 6 }, { 9, 8 } }) do
    add(p, { 13, 2, cp[1], cp[2], cp[1] & 1 })
  end
  add(p, { 11, 0, 0 }) -- names
  for e = 0, 11 do add(p, { 11, 0, e, e % 6 }) end
  return p
end

local function kill(...)
  local p = {}
  for _, e in ipairs({ ... }) do add(p, { 2, e }) end
  return p
end

-- A fixed LCG, so that the seeds do not depend on math.random.
local function lcg(seed)
  local s = seed
  return function(n)
    s = (s * 1103515245 + 12345) % 2147483648
    return s % n
  end
end

local seeds = {}

-- Round trips of every manager, with dead records, under every early
-- allocation failure, after a full gc.
seeds["seed-mgr-roundtrip"] = function()
  local p = world()
  for _, m in ipairs(ALL) do add(p, { INSPECT, m, RT, m, 0, 0x7C, m, 3, 0xAA, 0xBB, 0xCC }) end
  add(p, kill(2, 9, 10, 15))
  for _, m in ipairs(ALL) do add(p, { RT, m, 1, 0x55, INSPECT, m }) end
  for _, m in ipairs(ALL) do
    for k = 0, 7 do add(p, { 0xF0 | k, RT, m, 0 }) end
  end
  add(p, { 9, 0 })
  for _, m in ipairs(ALL) do add(p, { RT, m, 0 }) end
  return p
end

-- Cuts at fixed lengths and flips at pseudo-random places, every manager.
seeds["seed-mgr-corrupt"] = function()
  local p = add(world(12), kill(3))
  local rnd = lcg(7)
  local xors = { 1, 2, 0x80, 0x40, 0xFF, 0x10, 4 }
  for _, m in ipairs(ALL) do
    for _, at in ipairs({ 0, 1, 4, 7, 8, 12, 20, 40, 90, 200, 400, 1000 }) do
      add(p, { TRUNC, m, at & 255, at >> 8 })
    end
    for _ = 1, 24 do
      local at = rnd(1200)
      add(p, { FLIP, m, at & 255, at >> 8, xors[rnd(#xors) + 1] })
    end
  end
  return p
end

-- Every byte of a small world's stream of manager m flipped in turn.
local function flip_every_byte(m, n, xors)
  return function()
    local p = world(6)
    for at = 0, n - 1 do
      for _, x in ipairs(xors) do add(p, { FLIP, m, at & 255, at >> 8, x }) end
    end
    return p
  end
end
seeds["seed-mgr-flip-box"] = flip_every_byte(M.box, 150, { 1, 0x80 })
seeds["seed-mgr-flip-transform"] = flip_every_byte(M.tr, 338, { 0x80 })
seeds["seed-mgr-flip-names"] = flip_every_byte(M.nm, 150, { 1, 0x80 })

-- Counting listeners on every kind of manager, events of every kind,
-- invalid masks, a non-manager, listen under an allocation failure.
seeds["seed-mgr-listen"] = function()
  local p = add(world(16), { 1, 8 }) -- entities 16 .. 23 hold nothing yet
  add(p, { LISTEN, M.box, 0, 6 })    -- slot 0: all events (mask 1 + 6 % 7)
  add(p, { LISTEN, M.tr, 1, 6 })     -- slot 1: all events
  add(p, { LISTEN, M.nm, 2, 2 })     -- slot 2: ADD | REMOVE
  add(p, { LISTEN, M.zzz, 3, 0 })    -- slot 3: ADD
  for e = 16, 23 do add(p, { 5, 0, e, 6, 1, e, 5, 0, e }) end -- ADD, ADD, nothing
  for e = 16, 19 do add(p, { 7, 0, e, 7, 0, e, 7, 1, e }) end -- REMOVE, nothing, unheard
  for e = 16, 21 do add(p, { 13, 0, e, 1, 1, 1, 0, 1, 13, 0, e, 2, 2, 2, 0, 0 }) end -- ADD, SET
  add(p, { 13, 2, 17, 16, 0, 13, 2, 18, 17, 1, 13, 2, 16, 18, 0 }) -- SET, SET, a cycle
  add(p, { 13, 3, 19, 1, 2, 3, 13, 4, 19, 0, 0, 0, 0, 13, 4, 19, 1, 0, 0, 0 }) -- SET, zero, SET
  add(p, { 13, 1, 20, 13, 1, 20, 13, 5, 16 }) -- REMOVE, nothing; destroy_tree reports nothing
  for e = 16, 23 do add(p, { 11, 0, e, e % 6 }) end -- ADD
  for e = 16, 23 do add(p, { 11, 0, e, 2 }) end     -- SET (not in slot 2's mask)
  for e = 16, 19 do add(p, { 11, 1, e, 11, 1, e }) end -- REMOVE, nothing
  add(p, { CLEAR, 1, RT, 2, 0, TRUNC, 4, 9, 0, FLIP, 0, 50, 0, 1, 9, 0, RT, 0, 0 }) -- nothing
  add(p, { LISTEN, 0, 0, 0 }) -- slot 0 off
  add(p, { 5, 0, 22, 7, 0, 22 })
  add(p, { LISTEN, 0, 0, 0xE0, LISTEN, 0, 0, 0xE8, LISTEN, 0, 0, 0xEF, -- masks 0, 8, 15
           LISTEN, 0, 0, 0xF3, LISTEN, 0, 0, 0xE5 })                   -- no manager; mask 5
  add(p, { 0xF0, LISTEN, 2, 1, 1 }) -- slot 1 off: nothing to allocate
  add(p, { 0xF0, LISTEN, 2, 1, 2 }) -- listen again, and the allocation fails
  add(p, { LISTEN, 2, 1, 2, 13, 0, 23, 0, 0, 0, 0, 0, 13, 1, 23 })
  add(p, { 5, 2, 22, 7, 2, 22, 11, 0, 22, 3, 11, 1, 22 })
  for k = 0, 3 do add(p, { 2, 16 + k, 1, 1, 5, 0, 24 + k, 5, 1, 24 + k }) end -- reused indices
  return p
end

-- Clear every manager, fill them again, round trips and flips after.
seeds["seed-mgr-clear"] = function()
  local p = add(world(20), kill(1, 5))
  for _, m in ipairs(ALL) do add(p, { CLEAR, m, INSPECT, m }) end
  local again = world(4)
  table.remove(again, 1) -- without its create_n: the registrations fail (they exist),
  table.remove(again, 1) -- the adds fill the cleared managers
  add(p, again)
  for _, m in ipairs(ALL) do add(p, { RT, m, 0, FLIP, m, 30, 0, 1 }) end
  add(p, { 9, 0 })
  return p
end

-- The names stream of world(6): u32 1, u32 count, then the records of
-- entities 0 .. 5 (u32 entity, u64 stamp, u64 length, the name); record 0
-- starts at byte 8, its stamp at 12. A stamp raised by a flip must raise the
-- clock, so that names set later are found first.
seeds["seed-mgr-names-clock"] = function()
  local p = world(6)
  add(p, { FLIP, M.nm, 17, 0, 1 })         -- record 0's stamp + 2^40: loads
  add(p, { 11, 0, 1, 0, 11, 0, 2, 0 })      -- "a" on entities 1 and 2
  add(p, { FLIP, M.nm, 19, 0, 0x40 })       -- a stamp above 2^62: corrupt
  add(p, { FLIP, M.nm, 12, 0, 7 })          -- a low byte: loads unless the stamp is 0
  add(p, { 11, 0, 3, 0, 11, 1, 2, 11, 1, 3 })
  add(p, { FLIP, M.nm, 20, 0, 1, FLIP, M.nm, 20, 0, 0x80, FLIP, M.nm, 8, 0, 1, FLIP, M.nm, 4, 0, 1 })
  add(p, { 11, 0, 4, 1, 11, 0, 5, 1, 11, 1, 4 })
  return p
end

-- Queries and open iterations across loads that change what they match.
-- The box stream of world(12): 44 header bytes, u32 count at 44, records
-- of 21 bytes from 48.
seeds["seed-mgr-queries"] = function()
  local p = world(12)
  add(p, { 15, 1, 0, 0 })          -- with box
  add(p, { 15, 2, 1, 0, 2, 1 })    -- with box and kg, without zzz
  add(p, { 15, 1, 1, 2, 0 })       -- with kg, without box
  add(p, { 14, 0, 0, 14, 4, 1, 14, 1, 2 }) -- iterations 0 and 1 open, a step
  add(p, { FLIP, M.box, 44, 0, 4 }) -- count 12 -> 8: four records go
  add(p, { 14, 1, 3, 14, 5, 2 })
  add(p, { FLIP, M.box, 48, 0, 1, FLIP, M.box, 69, 0, 2, RT, M.box, 0, RT, M.kg, 0 })
  add(p, { 14, 1, 7, 14, 5, 7, 14, 8, 0 })
  add(p, { CLEAR, M.box, 5, 0, 3, 5, 0, 4, 5, 2, 3, RT, M.kg, 1, 0, CLEAR, M.kg })
  add(p, { 14, 0, 1, 14, 1, 7, 14, 1, 7 })
  add(p, kill(5), { RT, M.box, 0, 9, 0, FLIP, M.box, 44, 0, 1, FLIP, M.box, 44, 0, 2 })
  return p
end

local names = {}
for k in pairs(seeds) do names[#names + 1] = k end
table.sort(names)
for _, k in ipairs(names) do
  local p = seeds[k]()
  local parts = {}
  for i, b in ipairs(p) do
    assert(b >= 0 and b < 256, k)
    parts[i] = string.char(b)
  end
  local f = assert(io.open(out_dir .. "/" .. k, "wb"))
  f:write(table.concat(parts))
  f:close()
  print(k, #p)
end
