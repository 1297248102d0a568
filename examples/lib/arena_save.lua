--[[
arena_save.lua -- the arena's save files (examples/arena.lua, --save and
--load): the file layout, a text form of Lua data that reads back exactly
(and runs nothing), and the checks a loaded state must pass. The format is
described in the header comment of examples/arena.lua.

  local save = require("arena_save")
  save.write(path, snapshot, grid_blob, state)  --> bytes written
  save.read(path)            --> { snapshot =, grid =, state = } or raises
  save.VERSION, save.KINDS, save.WHEEL
]]
local arena = {}

-- the slots of the arena's timer wheels (more than a bullet's or a
-- pickup's life in frames); examples/arena.lua takes it from here
local WHEEL = 1024

------------------------------------------------------------------ save files
-- The format is described in the header comment.
local SAVE_MAGIC, SAVE_VERSION = "ecs-arena-save", 1
local MAX_DEPTH = 16 -- tables nested deeper are refused (the state uses 3)

local function adler32(s)
  local a, b = 1, 0
  for i = 1, #s, 4096 do
    local bytes = { s:byte(i, math.min(i + 4095, #s)) }
    for k = 1, #bytes do a = a + bytes[k]; b = b + a end
    a, b = a % 65521, b % 65521
  end
  return (b << 16) | a
end

-- Lua data as text that parse_data reads back exactly: integers in decimal,
-- floats as hex floats (every bit), strings with %q, booleans, and tables of
-- these (the array part first, then the other keys in a fixed order).
local function is_name(k)
  return type(k) == "string" and k:match("^[%a_][%w_]*$") ~= nil and k ~= "true" and k ~= "false"
end
local function key_before(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return ta == "number" end
  return a < b
end
local function serialize(v, out, depth)
  local t = type(v)
  if t == "number" then
    if math.type(v) == "integer" then
      out[#out + 1] = v == math.mininteger and "0x8000000000000000" or ("%d"):format(v)
    elseif v ~= v then error("arena: cannot save a NaN", 0)
    elseif v == math.huge or v == -math.huge then out[#out + 1] = v > 0 and "1e9999" or "-1e9999"
    else out[#out + 1] = ("%a"):format(v) end
  elseif t == "string" then out[#out + 1] = ("%q"):format(v)
  elseif t == "boolean" then out[#out + 1] = tostring(v)
  elseif t == "table" then
    if depth >= MAX_DEPTH then error("arena: cannot save tables nested this deep", 0) end
    out[#out + 1] = "{"
    local n, keys = 0, {}
    while v[n + 1] ~= nil do n = n + 1 end -- the array part: 1..n, no holes
    for i = 1, n do
      if i > 1 then out[#out + 1] = "," end
      serialize(v[i], out, depth + 1)
    end
    for k in pairs(v) do
      if not (math.type(k) == "integer" and k >= 1 and k <= n) then
        if type(k) ~= "string" and type(k) ~= "number" or k ~= k then
          error("arena: cannot save a key of type " .. type(k), 0)
        end
        keys[#keys + 1] = k
      end
    end
    table.sort(keys, key_before)
    local sep = depth == 0 and "\n" or ""
    for j, k in ipairs(keys) do
      if j > 1 or n > 0 then out[#out + 1] = "," end
      out[#out + 1] = sep
      if is_name(k) then out[#out + 1] = k else
        out[#out + 1] = "["; serialize(k, out, depth + 1); out[#out + 1] = "]"
      end
      out[#out + 1] = "="
      serialize(v[k], out, depth + 1)
    end
    out[#out + 1] = sep .. "}"
  else
    error("arena: cannot save a " .. t, 0)
  end
  return out
end

-- The reader of exactly what serialize writes (and nothing else: no
-- expressions, no calls). Raises "state: what at byte N".
local function parse_data(text)
  local pos = 1
  local function fail(what) error(("state: %s at byte %d"):format(what, pos), 0) end
  local function skip() pos = text:find("[^ \t\r\n]", pos) or #text + 1 end
  local function token() return text:match("^[%w_%.%+%-]+", pos) end
  local value
  local function str()
    local i = pos + 1
    while true do -- to the first unescaped quote
      local c = text:find('[\\"]', i)
      if not c then fail("unfinished string") end
      if text:byte(c) == 34 then
        -- one string literal and nothing else: load cannot run anything here
        local f = load("return " .. text:sub(pos, c), "=state", "t", {})
        if not f then fail("bad string") end
        pos = c + 1
        return f()
      end
      i = c + 2
    end
  end
  local function tbl(depth)
    if depth >= MAX_DEPTH then fail("tables nested too deep") end
    pos = pos + 1 -- {
    local t, n = {}, 0
    while true do
      skip()
      local c = text:sub(pos, pos)
      if c == "}" then pos = pos + 1; return t end
      local k
      if c == "[" then
        pos = pos + 1; skip()
        k = value(depth + 1)
        skip()
        if text:sub(pos, pos) ~= "]" then fail("']' expected") end
        pos = pos + 1; skip()
        if text:sub(pos, pos) ~= "=" then fail("'=' expected") end
        pos = pos + 1
      else
        local name = token()
        if name and is_name(name) then
          pos = pos + #name; skip()
          if text:sub(pos, pos) ~= "=" then fail("'=' expected") end
          pos = pos + 1
          k = name
        else
          n = n + 1
          k = n
        end
      end
      if type(k) ~= "string" and type(k) ~= "number" then fail("bad key") end
      if t[k] ~= nil then fail("repeated key") end
      skip()
      t[k] = value(depth + 1)
      skip()
      c = text:sub(pos, pos)
      if c == "," then pos = pos + 1 elseif c ~= "}" then fail("',' or '}' expected") end
    end
  end
  function value(depth)
    skip()
    local c = text:sub(pos, pos)
    if c == "{" then return tbl(depth) end
    if c == '"' then return str() end
    local tok = token()
    if not tok then fail(c == "" and "unexpected end" or "unexpected '" .. c .. "'") end
    local v
    if tok == "true" then v = true elseif tok == "false" then v = false
    else
      v = tonumber(tok)
      if v == nil or v ~= v then fail("bad value '" .. tok .. "'") end
    end
    pos = pos + #tok
    return v
  end
  local v = value(0)
  skip()
  if pos <= #text then fail("trailing text") end
  return v
end

-- What the state must hold (checked on load, before anything runs).
local KINDS = { "asteroid", "enemy", "defender", "turret", "bullet", "pickup" }
local COUNTERS = { "frame", "entities", "seed", "rng", "asteroid_target", "station", "monolith",
  "looted", "waves", "peak", "hits", "splits", "collected", "respawns" }
local MAX_ID = (1 << 30) - 1

local function check_state(st)
  local function need(ok, what) if not ok then error("state: " .. what, 0) end end
  local function int(v, lo, hi) return math.type(v) == "integer" and v >= lo and v <= (hi or math.maxinteger) end
  local function ids(l, what)
    need(type(l) == "table", what .. " is not a table")
    for k, id in pairs(l) do
      need(int(k, 1, #l) and int(id, 0, MAX_ID), what .. " is not a list of entity ids")
    end
  end
  need(type(st) == "table", "not a table")
  need(st.version == SAVE_VERSION, "unsupported state version " .. tostring(st.version))
  for _, k in ipairs(COUNTERS) do
    need(math.type(st[k]) == "integer", k .. " is missing or not an integer")
  end
  need(st.rng ~= 0, "rng state is 0")
  need(st.frame >= 0 and st.entities >= 100 and st.seed >= 0, "frame, entities or seed out of range")
  for _, k in ipairs({ "station", "monolith" }) do need(int(st[k], 1, MAX_ID), k .. " is not an entity id") end
  for _, t in ipairs({ "spawned", "destroyed" }) do
    need(type(st[t]) == "table", t .. " is missing")
    for _, k in ipairs(KINDS) do need(int(st[t][k], 0), t .. "." .. k .. " is not a count") end
  end
  ids(st.loot_ids, "loot_ids")
  need(#st.loot_ids == st.looted, "loot_ids does not hold looted ids")
  for _, w in ipairs({ "bullet_wheel", "pickup_wheel" }) do
    need(type(st[w]) == "table", w .. " is missing")
    for slot, l in pairs(st[w]) do
      need(int(slot, 0, WHEEL - 1), w .. " has a bad slot")
      ids(l, w)
    end
  end
end

-- Write the save file (to FILE.tmp, then renamed over FILE: a failed save
-- never leaves half a file under the name).
local function write_save(path, snapshot, grid_blob, state)
  local text = table.concat(serialize(state, {}, 0))
  local tmp = path .. ".tmp"
  local f, err = io.open(tmp, "wb")
  if not f then error(("arena: cannot write the save file: %s"):format(err), 0) end
  local ok, werr = f:write(
    ("%s %d\n"):format(SAVE_MAGIC, SAVE_VERSION),
    ("snapshot %d\n"):format(#snapshot), snapshot, "\n",
    ("grid %d\n"):format(#grid_blob), grid_blob, "\n",
    ("state %d %d\n"):format(#text, adler32(text)), text, "\n",
    "end\n")
  local size = ok and f:seek("end")
  if ok then ok, werr = f:close() else f:close() end
  if ok then ok, werr = os.rename(tmp, path) end
  if not ok then
    os.remove(tmp)
    error(("arena: cannot write the save file %s: %s"):format(path, werr), 0)
  end
  return size -- bytes written
end

-- Read and check a save file: { snapshot =, grid =, state = } or raises
-- "arena: FILE: what is wrong".
function arena.read(path)
  local function bad(why) error(("arena: %s: %s"):format(path, why), 0) end
  local f, err = io.open(path, "rb")
  if not f then error(("arena: cannot open the save file: %s"):format(err), 0) end
  local data = f:read("*a")
  f:close()
  if not data then bad("cannot be read") end
  local pos = 1
  local function line(what)
    local l, nxt = data:match("^([^\n]*)\n()", pos)
    if not l or #l > 80 then bad(("truncated or not a save file (the %s line is missing)"):format(what)) end
    pos = nxt
    return l
  end
  local function body(name)
    local l = line(name)
    local n, rest = l:match("^" .. name .. " (%d+)(.*)$")
    if not n then bad(("corrupt: '%s <length>' expected at byte %d"):format(name, pos - #l - 1)) end
    n = math.tointeger(tonumber(n))
    if not n or pos + n > #data then
      bad(("truncated: the %s section needs %s bytes, %d are left"):format(name, tostring(n), #data - pos))
    end
    local b = data:sub(pos, pos + n - 1)
    pos = pos + n
    if data:sub(pos, pos) ~= "\n" then bad(("corrupt: the %s section does not end where it should"):format(name)) end
    pos = pos + 1
    return b, rest
  end
  local magic, version = (data:match("^([^\n]*)\n") or ""):match("^(%S+) (%d+)$")
  if magic ~= SAVE_MAGIC then bad("not an arena save file") end
  if tonumber(version) ~= SAVE_VERSION then bad("unsupported save format version " .. version) end
  line("header")
  local save = {}
  save.snapshot = body("snapshot")
  save.grid = body("grid")
  local text, rest = body("state")
  local sum = math.tointeger(tonumber(rest:match("^ (%d+)$")))
  if not sum then bad("corrupt: the state section has no checksum") end
  if sum ~= adler32(text) then bad("corrupt: the state section fails its checksum") end
  if line("end") ~= "end" or pos ~= #data + 1 then bad("corrupt: 'end' expected at the end of the file") end
  local ok, st = pcall(parse_data, text)
  if ok then
    local good, err2 = pcall(check_state, st)
    if not good then ok, st = false, err2 end
  end
  if not ok then bad("corrupt " .. tostring(st)) end
  save.state = st
  return save
end


arena.write = write_save
arena.VERSION = SAVE_VERSION
arena.KINDS = KINDS
arena.WHEEL = WHEEL
return arena
