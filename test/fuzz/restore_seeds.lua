-- restore_seeds.lua -- writes the seed-* inputs of test/fuzz/restore/:
-- snapshots for test/fuzz/fuzz_restore.c (byte 0 the mode: bit 0 seal, bit 1
-- the Lua binding; see the header of fuzz_restore.c), each under 2 KB
-- (tools/fuzz.sh's -max_len). Run from the repository with the build on
-- the paths: LUA_PATH='build/?.lua;build/?/init.lua' LUA_CPATH='build/?.so'
-- lua5.4 test/fuzz/restore_seeds.lua test/fuzz/restore
--
-- Worlds whose managers are those of the target's core world (transform,
-- names, All of every field type, Tag) load there; the others reach the
-- Lua binding: ecs.restore creates their components and plugin managers.

local ecs = require("ecs")
local pm, mesh = require("ecs.pointmass"), require("ecs.mesh")
local out_dir = assert(arg[1], "usage: lua5.4 test/fuzz/restore_seeds.lua DIR")

local ALL = { "a:f32", "b:f64", "c:i8", "d:i16", "e:i32", "f:i64", "g:u8", "h:u16",
              "i:u32", "j:bool", "k:entity", "l:lua" }

local seeds = {}
local function seed(name, modes, blob)
  assert(#blob < 2000, name .. " is too long for -max_len")
  for _, m in ipairs(modes) do seeds[#seeds + 1] = { name .. "-" .. m, string.char(m) .. blob } end
end

-- like the core world: every field type, a hierarchy, names, a tag
local function core_like(n)
  local w = ecs.world()
  local A = w:component("All", ALL)
  local T = w:component("Tag")
  local es = w:create(n)
  for i, e in ipairs(es) do
    A:add(e, i / 2, -i, -i, i * 300, i * 70000, -i * 2 ^ 40, 200 + i, i * 1000, 4e9 - i,
          i % 2 == 0, es[(i % n) + 1], i % 3 == 0 and { i, "v", { true } } or nil)
    if i % 2 == 1 then T:add(e) end
    w.transform:add(e, { position = { i, 0, 0 } })
    if i > 1 and i % 3 ~= 0 then w.transform:set_parent(e, es[i - 1], i % 4 == 0) end
    if i % 4 == 0 then w.names:set(e, "e" .. i) end
  end
  for i = 1, n, 5 do w:destroy(es[i]) end
  return w
end

seed("core-empty", { 0, 1, 2, 3 }, core_like(0):snapshot())
seed("core-small", { 0, 1, 2, 3 }, core_like(6):snapshot())
seed("core-more", { 0, 1 }, core_like(9):snapshot())

-- disabled entities: the tag ecs.disabled, which a load makes itself
do
  local w = core_like(6)
  local es = {}
  for e in w:entities() do es[#es + 1] = e end
  w:disable(es[1])
  w:disable(es[3])
  w:disable(es[#es])
  w:destroy(es[3]) -- a dead record of the tag
  seed("disabled", { 0, 1, 2, 3 }, w:snapshot())
end

-- Lua worlds: components only ecs.restore can make, lua values, plugins
do
  local w = ecs.world()
  local B = w:component("Brain", { "script:lua", "n:i32" })
  local P = w:component("Position", { "x:f32", "y:f32" })
  w:component("Empty")
  local es = w:create(6)
  B:add(es[1], { 1, 2.5, "s", true, false, { nested = { deeper = { 0 / 0 ~= 0 / 0 } } } }, 1)
  B:add(es[2], "text", 2)
  B:add(es[3], 42, 3)
  B:add(es[4], math.huge, 4)
  for i, e in ipairs(es) do P:add(e, i, -i) end
  w:destroy(es[5])
  seed("lua-values", { 2, 3 }, w:snapshot())
end
do
  local w = ecs.world()
  local PM, M = pm.new(w), mesh.new(w)
  local es = w:create(4)
  for i, e in ipairs(es) do
    PM:add(e, i, i, 0, 0, 1, 0, 0)
    M:add(e, i)
    if i % 2 == 0 then M:add(e, i * 100) end
  end
  seed("plugins", { 2, 3 }, w:snapshot())
end

-- cleanup policies in the directory's field words (format 2)
do
  local w = ecs.world()
  local A = w:component("Aim", { "target:entity!clear", "n:i32" })
  local B = w:component("Leash", { "to:entity!remove", "by:entity!destroy", "k:u8" })
  local es = w:create(5)
  for i = 2, 5 do A:add(es[i], es[i - 1], i); B:add(es[i], es[1], es[i - 1], i) end
  w:destroy(es[3])
  seed("policies", { 2, 3 }, w:snapshot())
end

for _, s in ipairs(seeds) do
  local f = assert(io.open(out_dir .. "/seed-" .. s[1], "wb"))
  f:write(s[2])
  f:close()
end
print(#seeds .. " seeds written to " .. out_dir)
