--[[
annotations_spec.lua -- the LuaLS annotation file (types/ecs.lua) covers the
whole Lua API: every function of every module (require("ecs"), the C
plugins plugins/<name>.c as ecs.<name>, the Lua helpers lua/ecs/<name>.lua
as ecs.<name>) and every method of every object, with a ---@param for each
parameter; nothing is annotated that does not exist.

The methods are read from the live objects, not from a list: the method
tables of their metatables (debug.getmetatable, since the metatables are
locked: getmetatable gives "locked"), and every "ecs.*" class of the
registry that has methods (__methods), so a class no object here reaches
(the journal, say, once it exists) fails until it is annotated. A class is
matched by its type name (__name), the name error messages give.
]]
local ecs = require("ecs")

local ANNOTATIONS = "types/ecs.lua"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function ls(pattern)
  local out = {}
  local p = assert(io.popen("ls " .. pattern .. " 2>/dev/null"))
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

--[[
The annotation file: classes[name] = { [fname] = { sep = "." or ":",
params = { names }, documented = { [param] = type text }, line = n } }.
A class is bound to the local that follows its ---@class line
(`local World = {}`); `function World:create(n)` is then ecs.World:create.
A function's doc block is the run of --- lines right above it.
]]
local function parse(text)
  local classes, var_class, pending, doc = {}, {}, nil, {}
  local n = 0
  for line in (text:gsub("\r\n", "\n") .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    local cls = line:match("^%-%-%-@class%s+([%w_.]+)")
    if cls then
      pending = cls
      classes[cls] = classes[cls] or {}
    end
    local var = line:match("^local%s+([%w_]+)%s*=%s*{%s*}%s*$")
    if var and pending then
      var_class[var] = pending
      pending = nil
    end
    local pname, ptype = line:match("^%-%-%-@param%s+([%w_.]+)%??%s+(%S.*)$")
    if pname then doc[pname] = ptype end
    local v, sep, fname, args = line:match("^function%s+([%w_]+)([.:])([%w_]+)%s*%(([^)]*)%)")
    if v then
      local owner = var_class[v]
      assert(owner, ANNOTATIONS .. ":" .. n .. ": function of " .. v .. ", which is bound to no ---@class")
      local params = {}
      for a in args:gmatch("[^,%s]+") do params[#params + 1] = a end
      classes[owner][fname] = { sep = sep, params = params, documented = doc, line = n }
    end
    if not line:match("^%-%-%-") then doc = {} end
  end
  return classes
end

-- The functions a table offers under string keys (not metamethods),
-- following __index tables as a lookup does (a world's fields table
-- falls back on its methods through its own metatable).
local function functions_of(t)
  local out = {}
  for _ = 1, 8 do
    if type(t) ~= "table" then break end
    for k, v in pairs(t) do
      if type(k) == "string" and type(v) == "function" and not k:match("^__") then out[k] = true end
    end
    local mt = debug.getmetatable(t)
    t = mt and rawget(mt, "__index")
  end
  return out
end

-- The methods of an object: those of its metatable's method table.
local function methods_of(obj)
  local mt = assert(debug.getmetatable(obj), "an object without a metatable")
  return functions_of(rawget(mt, "__methods") or rawget(mt, "__index"))
end

local function type_name(obj)
  local mt = debug.getmetatable(obj)
  return mt and rawget(mt, "__name")
end

-- The modules of the tree: ecs, every C plugin, every Lua helper.
local function module_names()
  local out = { "ecs" }
  for _, f in ipairs(ls("plugins/*.c")) do out[#out + 1] = "ecs." .. f:match("([%w_]+)%.c$") end
  for _, f in ipairs(ls("lua/ecs/*.lua")) do
    local name = f:match("([%w_]+)%.lua$")
    if name ~= "init" then out[#out + 1] = "ecs." .. name end
  end
  table.sort(out)
  return out
end

--[[
What exists at run time: { [class] = { kind = "module" | "object",
functions = { [name] = true } } }, from the modules, objects made of
each kind, and the registry's ecs.* classes.
]]
local function runtime_api()
  local api = {}
  local function add(class, kind, fns)
    local entry = api[class] or { kind = kind, functions = {} }
    api[class] = entry
    for k in pairs(fns) do entry.functions[k] = true end
  end
  local mods = {}
  for _, name in ipairs(module_names()) do
    mods[name] = require(name)
    add(name, "module", functions_of(mods[name]))
  end

  local world = ecs.world()
  local Position = world:component("Position", { "x:f32", "y:f32" })
  local Collider = world:component("Collider", { "r:f32", "layer:u32", "mask:u32" })
  local Tag = world:component("Tag")
  local objects = {
    world, Position, Tag, world:query(Position), world:query({ Position, without = { Tag } }),
    world.transform, world.names, Position:on_add(function() end), world.names:on_set(function() end),
  }
  if mods["ecs.pointmass"] then objects[#objects + 1] = mods["ecs.pointmass"].new(world) end
  if mods["ecs.mesh"] then objects[#objects + 1] = mods["ecs.mesh"].new(world) end
  if mods["ecs.grid"] then
    local g = mods["ecs.grid"].new(1, 4, 4)
    g:build(Position, Collider)
    objects[#objects + 1] = g
  end
  if rawget(_G, "jit") then -- q:pointers' loop state (its class needs the FFI)
    local _, loop = world:query(Position):pointers("Position.x")
    objects[#objects + 1] = loop
  end
  for _, obj in ipairs(objects) do
    add(assert(type_name(obj), "an object without __name"), "object", methods_of(obj))
  end
  if mods["ecs.message"] then -- a Lua class: no __name
    add("ecs.message.Bus", "object", methods_of(mods["ecs.message"].new(world)))
  end

  for k, v in pairs(debug.getregistry()) do
    if type(k) == "string" and k:match("^ecs%.") and type(v) == "table"
        and type(rawget(v, "__methods")) == "table" then
      add(k, "object", functions_of(rawget(v, "__methods")))
    end
  end
  world:close()
  -- q:pointers' loop state: its class is registered where the FFI exists
  -- (LuaJIT, on first use, above), and annotated for every Lua
  if not rawget(_G, "jit") then add("ecs.PointerLoop", "object", { close = true }) end
  return api
end

local function sorted(set)
  local out = {}
  for k in pairs(set) do out[#out + 1] = k end
  table.sort(out)
  return out
end

describe("the LuaLS annotation file " .. ANNOTATIONS, function()
  local text = read(ANNOTATIONS)
  local annotated = parse(text)
  local api = runtime_api()

  it("is a ---@meta file that loads as Lua and returns the module's class table", function()
    assert.truthy(text:match("^%-%-%-@meta ecs\n"), "the first line must be ---@meta ecs")
    local chunk = assert(loadfile(ANNOTATIONS))
    assert.equal("table", type(chunk()))
  end)

  it("annotates every function of every module and every method of every object", function()
    local missing = {}
    for _, class in ipairs(sorted(api)) do
      local entry = api[class]
      local sep = entry.kind == "module" and "." or ":"
      for _, fname in ipairs(sorted(entry.functions)) do
        if not (annotated[class] and annotated[class][fname]) then
          missing[#missing + 1] = class .. sep .. fname
        end
      end
    end
    assert(#missing == 0, "not annotated in " .. ANNOTATIONS .. ": " .. table.concat(missing, ", "))
  end)

  it("annotates nothing that does not exist", function()
    local extra = {}
    for _, class in ipairs(sorted(annotated)) do
      for _, fname in ipairs(sorted(annotated[class])) do
        if not (api[class] and api[class].functions[fname]) then
          extra[#extra + 1] = class .. annotated[class][fname].sep .. fname ..
                              " (line " .. annotated[class][fname].line .. ")"
        end
      end
    end
    assert(#extra == 0, "annotated but absent at run time: " .. table.concat(extra, ", "))
  end)

  it("writes module functions with '.' and methods with ':'", function()
    local wrong = {}
    for class, fns in pairs(annotated) do
      local want = api[class] and (api[class].kind == "module" and "." or ":")
      for fname, f in pairs(fns) do
        if want and f.sep ~= want then wrong[#wrong + 1] = class .. f.sep .. fname end
      end
    end
    table.sort(wrong)
    assert(#wrong == 0, "wrong separator: " .. table.concat(wrong, ", "))
  end)

  it("gives every parameter a ---@param with a type", function()
    local bad = {}
    for _, class in ipairs(sorted(annotated)) do
      for _, fname in ipairs(sorted(annotated[class])) do
        local f = annotated[class][fname]
        for _, p in ipairs(f.params) do
          if not f.documented[p] then bad[#bad + 1] = class .. f.sep .. fname .. "(" .. p .. ")" end
        end
      end
    end
    assert(#bad == 0, "parameters without ---@param: " .. table.concat(bad, ", "))
  end)

  it("covers the modules and classes the tree has", function()
    -- a guard on the inventory itself, so that the checks above cannot
    -- pass by finding nothing
    for _, class in ipairs({ "ecs", "ecs.World", "ecs.Component", "ecs.Query", "ecs.Transform",
                             "ecs.Names", "ecs.Observer" }) do
      assert.truthy(api[class], class .. " not found at run time")
      assert.truthy(next(api[class].functions), class .. " has no functions at run time")
    end
    assert.truthy(api["ecs.World"].functions.create)
    assert.truthy(api.ecs.functions.world)
  end)

  -- the annotations once said that ecs.world knows no option (threads it
  -- does) and that names are unique (several entities may share one)
  it("says what ecs.world's options and names' set accept", function()
    local function doc_of(fn) -- the comment lines just above "function <fn>("
      local at = assert(text:find("\nfunction " .. fn:gsub("%.", "%%.") .. "%("), fn)
      local before = text:sub(1, at)
      return before:match("([^\n]*\n[^\n]*\n[^\n]*\n)$")
    end
    local world_doc = doc_of("ecs.world")
    local w = ecs.world({ threads = 1 }) -- known: the annotation must say so
    w:close()
    assert.truthy(world_doc:find("threads", 1, true), world_doc)
    assert.falsy(world_doc:find("no option", 1, true), world_doc)
    local set_doc = doc_of("Names:set")
    w = ecs.world()
    local a, b = w:create(), w:create()
    w.names:set(a, "twin")
    w.names:set(b, "twin") -- allowed: names are not unique
    assert.equals("twin", w.names:get(a))
    assert.equals(b, w.names:find("twin"))
    w:close()
    assert.falsy(set_doc:find("unique", 1, true), set_doc)
    assert.truthy(set_doc:find("share", 1, true), set_doc)
  end)

  it("is installed by the rockspec, beside the headers (<lua dir>/ecs/types/ecs.lua)", function()
    local rockspec = read("ecs-scm-1.rockspec")
    assert.truthy(rockspec:find('["ecs.types.ecs"] = "' .. ANNOTATIONS .. '"', 1, true),
                  "the rockspec's build.install.lua must install " .. ANNOTATIONS .. " as ecs.types.ecs")
    -- against the installed rock (busted --run=rocks): it is in the tree
    local init = package.searchpath("ecs", package.path)
    local luadir = init and init:match("^(.-)/ecs/init%.lua$")
    if luadir and exists(luadir .. "/ecs/include/ecs_plugin.h") and
        init:match("/share/lua/5%.4/ecs/init%.lua$") then
      local installed = luadir .. "/ecs/types/ecs.lua"
      assert.truthy(exists(installed), installed .. " missing from the installed rock")
      assert.equal(text, read(installed))
    end
  end)
end)
