--[[
plugin_build_spec.lua -- C plugins are modules of their own (plugins/,
include/ecs_plugin.h): a plugin built outside the tree, against the headers
installed next to the module (require("ecs").include_dir: build/ecs/include
under CMake, <lua dir>/ecs/include under the rock), loads next to ecs.core
and works on its worlds; the shipped plugins load in a fresh interpreter;
the function table covers every public function, with a macro for each.
]]
local ecs = require("ecs")
local compat = require("spec.support.lua")

local files = require("spec.support.files")
local read, write, exists = files.read, files.write, files.exists

local function quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- Run a shell command; @return ok, its output (stdout and stderr).
local function run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  local ok = p:close()
  return ok == true, out
end

-- The directories holding the lua.h of the Lua running the specs (and,
-- before 5.3, lua-compat-5.3's compat-5.3.h, which the tree carries in
-- vendor/lua-compat-5.3/: README "Lua versions"), as cc's -I options, quoted.
local function lua_incdir()
  local num = compat.jit and "501" or compat.version:gsub("%.", "0")
  local tag = compat.jit and "luajit-2.1" or "lua" .. compat.version
  local dirs = { os.getenv("LUA_INCDIR") or "", "/usr/include/" .. tag, "/usr/local/include/" .. tag,
                 "/usr/local/include", "/usr/include" }
  for _, d in ipairs(dirs) do
    if d ~= "" and exists(d .. "/lua.h") and read(d .. "/lua.h"):find("LUA_VERSION_NUM%s+" .. num)
       and compat.jit == exists(d .. "/luajit.h") then
      if num >= "503" then return "-I" .. quote(d) end
      return "-I" .. quote(d) .. " -I" .. quote("vendor/lua-compat-5.3")
    end
  end
  error("no lua.h of " .. tag .. " found (set LUA_INCDIR)")
end

-- The plugin sources of the tree: { "grid", "mesh", ... }.
local function plugin_names()
  local out = {}
  local p = assert(io.popen("ls plugins/*.c"))
  for f in p:lines() do out[#out + 1] = f:match("([%w_]+)%.c$") end
  p:close()
  table.sort(out)
  return out
end

-- The compiler runs without the sanitizer runtimes some runs preload.
local CC = "env -u LD_PRELOAD cc -std=c11 -Wall -Wextra -Werror -pedantic -Wshadow -Wconversion " ..
           "-Wsign-conversion -Wcast-qual -Wundef -Wstrict-prototypes -Wmissing-prototypes"

-- A plugin of the kind a user writes: module functions on a world, a
-- plugin object with a manager registered with the world, a column read.
local PROBE = [[
#include <string.h>

#include "ecs_plugin.h"

#define COUNTER_CLASS "probe.Counter"

typedef struct counter {
  lua_Integer bumps;
} counter;

/* the manager the world owns: a block from the world's allocator */
static void counter_free(ecs_world *w, void *self) {
  void *ud;
  ecs_alloc_fn f = ecs_world_allocator(w, &ud);
  f(ud, self, sizeof(counter), 0);
}

static const ecs_manager_class counter_class = {.kind = "probe",
                                                .free = counter_free};

typedef struct lcounter {
  counter *c;
} lcounter;

/* probe.spawn(world, n) -> n new entities */
static int l_spawn(lua_State *L) {
  ecs_world *w = ecs_lua_check_world(L, 1);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n >= 0 && n <= 16, 2, "0 to 16 entities");
  for (lua_Integer i = 0; i < n; i++) {
    ecs_entity e;
    ecs_err err = ecs_create(w, &e);
    if (err != ECS_ERR_OK) return ecs_lua_error(L, "probe.spawn", err);
    ecs_lua_push_entity(L, e);
  }
  return (int)n;
}

/* probe.alive(world, e) -> boolean, through the header's inline ecs_alive */
static int l_alive(lua_State *L) {
  ecs_world *w = ecs_lua_check_world(L, 1);
  lua_pushboolean(L, ecs_alive(w, ecs_lua_check_entity(L, 2)));
  return 1;
}

/* probe.sum(component, field) -> sum of an f64 field over live owners */
static int l_sum(lua_State *L) {
  ecs_world *w;
  ecs_component *c = ecs_lua_check_component(L, 1, &w);
  const char *name = luaL_checkstring(L, 2);
  int f = ecs_component_field_index(c, name, strlen(name));
  const double *col;
  const ecs_entity *owner = ecs_component_entities(c);
  double sum = 0;
  luaL_argcheck(L, f >= 0 && ecs_component_field(c, (uint32_t)f)->type == ECS_F64,
                2, "an f64 field");
  col = (const double *)ecs_component_column(c, (uint32_t)f);
  for (uint32_t i = 0; i < ecs_component_size(c); i++)
    if (ecs_alive(w, owner[i])) sum += col[i];
  lua_pushnumber(L, sum);
  return 1;
}

/* counter:bump() -> bumps so far */
static int l_bump(lua_State *L) {
  lcounter *o = (lcounter *)ecs_lua_plugin_check(L, 1, COUNTER_CLASS, NULL);
  lua_pushinteger(L, ++o->c->bumps);
  return 1;
}

static const luaL_Reg counter_methods[] = {{"bump", l_bump}, {NULL, NULL}};

/* probe.counter(world) -> the world's counter (made once) */
static int l_counter(lua_State *L) {
  ecs_world *w;
  lcounter *o;
  counter *c;
  void *ud;
  ecs_alloc_fn f;
  ecs_err err;
  if (ecs_lua_plugin_get(L, 1, COUNTER_CLASS) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  o = (lcounter *)ecs_lua_plugin_new(L, 1, COUNTER_CLASS, sizeof *o);
  w = ecs_lua_check_world(L, 1);
  f = ecs_world_allocator(w, &ud);
  c = (counter *)f(ud, NULL, 0, sizeof *c);
  if (c == NULL) err = ECS_ERR_NOMEM;
  else {
    c->bumps = 0;
    err = ecs_manager_register(w, "probe", &counter_class, c);
  }
  if (err != ECS_ERR_OK) {
    ecs_lua_plugin_detach(L, 1, COUNTER_CLASS);
    return ecs_lua_error(L, "probe.counter", err);
  }
  o->c = c;
  return 1;
}

/* the other file of the plugin */
void helper_init(const struct ecs_api *api);
size_t helper_count(const ecs_world *w);

/* probe.count(world) -> its live entities, counted by the other file */
static int l_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)helper_count(ecs_lua_check_world(L, 1)));
  return 1;
}

VERSION_OVERRIDE

int luaopen_ecs_NAME(lua_State *L);

int luaopen_ecs_NAME(lua_State *L) {
  static const luaL_Reg fns[] = {{"spawn", l_spawn}, {"alive", l_alive},
    {"sum", l_sum}, {"counter", l_counter}, {"count", l_count}, {NULL, NULL}};
  ECS_PLUGIN_INIT(L);
  helper_init(ecs_plugin_get_api());
  ecs_lua_plugin_class(L, COUNTER_CLASS, counter_methods);
  luaL_newlib(L, fns);
  return 1;
}
]]

-- Its second file: handed the table by the first.
local HELPER = [[
#include "ecs_plugin.h"

void helper_init(const struct ecs_api *api);
size_t helper_count(const ecs_world *w);

void helper_init(const struct ecs_api *api) { ecs_plugin_set_api(api); }

size_t helper_count(const ecs_world *w) { return ecs_count(w); }
]]

describe("plugins built outside the tree", function()
  local dir, inc, luainc, cpath

  -- Compile PROBE as module ecs.<name> into dir/ecs/; @return ok, output.
  local function build(name, version_override)
    local src, helper = dir .. "/" .. name .. ".c", dir .. "/" .. name .. "_helper.c"
    write(src, (PROBE:gsub("NAME", name):gsub("VERSION_OVERRIDE", version_override or "")))
    write(helper, HELPER)
    return run(CC .. " -shared -fPIC -I" .. quote(inc) .. " " .. luainc .. " " ..
               quote(src) .. " " .. quote(helper) .. " -o " .. quote(dir .. "/ecs/" .. name .. ".so"))
  end

  setup(function()
    inc = assert(ecs.include_dir, "require('ecs').include_dir is not set")
    luainc = lua_incdir()
    local ok, out = run("mktemp -d")
    assert(ok, out)
    dir = out:gsub("%s+$", "")
    assert(run("mkdir " .. quote(dir .. "/ecs")))
    cpath = package.cpath
    package.cpath = dir .. "/?.so;" .. package.cpath
  end)

  -- package.cpath outlives the file: the specs after it read the build
  -- under test from its first entry (spec/project/layers_tool_spec.lua)
  teardown(function()
    if cpath then package.cpath = cpath end
    if dir then run("rm -rf " .. quote(dir)) end
  end)

  it("the installed headers hold everything ecs_plugin.h includes", function()
    -- ecs_plugin.h includes ecs_api.h (the table), which includes the rest
    local n, seen = 0, {}
    local function follow(name)
      local text = read(inc .. "/" .. name)
      for h in text:gmatch('\n#include "([%w_]+%.h)"') do
        if h ~= "lua.h" and h ~= "lauxlib.h" and not seen[h] then
          seen[h] = true
          assert(exists(inc .. "/" .. h), h .. " is not installed in " .. inc)
          n = n + 1
          if name == "ecs_plugin.h" then follow(h) end
        end
      end
    end
    follow("ecs_plugin.h")
    assert.is_true(seen["ecs_api.h"])
    assert.equal(13, n) -- ecs_api, ecs_api_list, ecs_compat, ecs, records, component, transform, names, query,
                        -- value, system, ecs_lua, snapshot
  end)

  it("compile against the installed headers with the project's warnings, load with require and work on a world",
     function()
    local ok, out = build("probe")
    assert(ok, "compiling the probe plugin failed:\n" .. out)
    local probe = require("ecs.probe")
    local w = ecs.world()
    local a, b, c = probe.spawn(w, 3)
    assert.equal(3, w:count())
    for _, e in ipairs({ a, b, c }) do
      assert.is_true(w:alive(e))
      assert.is_true(probe.alive(w, e))
    end
    assert.equal(3, probe.count(w))
    assert(w:destroy(b))
    assert.is_false(probe.alive(w, b))
    assert.equal(2, probe.count(w))
    local P = w:component("Weight", { "kg:f64" })
    P:add(a, 1.5)
    P:add(c, 2.25)
    assert.equal(3.75, probe.sum(P, "kg"))
    w:destroy(c)
    assert.equal(1.5, probe.sum(P, "kg"))
    local counter = probe.counter(w)
    assert.equal(counter, probe.counter(w))
    assert.equal(1, counter:bump())
    assert.equal(2, counter:bump())
    assert.is_true(w:check())
    assert.has_error(function() probe.spawn({}, 1) end)
    assert.has_error(function() counter.bump({}) end)
    w:close()
    assert.has_error(function() counter:bump() end, "attempt to use a closed world")
  end)

  -- The table's version (include/ecs_api.h, "Versions"): MAJOR.MINOR.
  local function version()
    local h = read(inc .. "/ecs_api_list.h")
    return tonumber(h:match("\n#define ECS_API_MAJOR (%d+)")), tonumber(h:match("\n#define ECS_API_MINOR (%d+)"))
  end

  it("a plugin built for another major interface version is refused at require", function()
    local major, minor = version()
    local ok, out = build("probe_v999", "#undef ECS_API_MAJOR\n#define ECS_API_MAJOR 999\n")
    assert(ok, "compiling the probe plugin failed:\n" .. out)
    local ok2, err = pcall(require, "ecs.probe_v999")
    assert.is_false(ok2)
    assert.matches("built for plugin interface version 999." .. minor .. ", but ecs.core provides version " ..
                   major .. " (another major version)", err, 1, true)
  end)

  -- A later minor may call a function this core does not have; an earlier
  -- one is served (test/plugins/plugin_table_host.c loads one against a larger table).
  it("a plugin built for a later minor interface version is refused at require", function()
    local major, minor = version()
    local ok, out = build("probe_next", "#undef ECS_API_MINOR\n#define ECS_API_MINOR " .. (minor + 1) .. "\n")
    assert(ok, "compiling the probe plugin failed:\n" .. out)
    local ok2, err = pcall(require, "ecs.probe_next")
    assert.is_false(ok2)
    assert.matches("built for plugin interface version " .. major .. "." .. (minor + 1) ..
                   ", but ecs.core provides version " .. major .. "." .. minor .. " (", err, 1, true)
  end)
end)

describe("shipped plugins", function()
  it("each plugins/<name>.c is a rockspec module ecs.<name> of that one source", function()
    local rockspec = read("ecs-scm-1.rockspec")
    local names = plugin_names()
    assert(#names >= 4)
    for _, n in ipairs(names) do
      assert(rockspec:find('["ecs.' .. n .. '"] = { sources = { "plugins/' .. n .. '.c" }', 1, true),
             "ecs." .. n .. " is not a rockspec module of plugins/" .. n .. ".c")
    end
    assert.is_nil(rockspec:find('"plugins/[%w_]+%.c",'), "a plugin compiled into another module")
  end)

  it("load with require in a fresh interpreter, without require('ecs') first", function()
    for _, n in ipairs(plugin_names()) do
      local code = "local m = require('ecs." .. n .. "'); assert(type(m) == 'table'); " ..
                   "assert(package.loaded['ecs.core']); assert(not package.loaded['ecs']); print('ok')"
      local ok, out = run("LUA_PATH=" .. quote(package.path) .. " LUA_CPATH=" .. quote(package.cpath) ..
                          " " .. compat.command .. " -e " .. quote(code))
      assert(ok and out:find("ok"), "ecs." .. n .. ": " .. out)
    end
  end)
end)

describe("the plugin function table", function()
  -- Names of the functions the public headers declare and of the fields of
  -- struct ecs_api (made from include/ecs_api_list.h; test/plugins/plugin_table_host.c
  -- checks that the core fills each with the function of its name).
  local function names()
    local inc = assert(ecs.include_dir)
    local ok, text = run("env -u LD_PRELOAD cc -E -P -DECS_API_ONLY -I" .. quote(inc) .. " " ..
                         lua_incdir() .. " " .. quote(inc .. "/ecs_plugin.h"))
    assert(ok, text)
    local fields = {}
    local body = assert(text:match("struct ecs_api%s*(%b{})"))
    for f in body:gmatch("%(%*%s*(ecs_[%w_]+)%)") do fields[#fields + 1] = f end
    local declared = {}
    for stmt in text:gsub("%b{}", ";"):gmatch("[^;]+") do
      stmt = stmt:gsub("%s+", " ")
      if not stmt:find("typedef") and not stmt:find("static") then
        local name = stmt:match("%f[%w_](ecs_[%w_]+)%s*%b()%s*$")
        if name then declared[#declared + 1] = name end
      end
    end
    table.sort(fields)
    table.sort(declared)
    return declared, fields
  end

  it("has a field for every public function", function()
    local declared, fields = names()
    assert(#declared > 100, "too few declarations found: " .. #declared)
    assert.same(declared, fields) -- a new public function: add its entry to include/ecs_api_list.h
  end)

  -- Without its macro, a plugin's call of a table function names the core's
  -- symbol: a shipped plugin then fails to load ("undefined symbol"), and
  -- one linked into a host with the core calls it behind the table's back.
  it("redirects every field of the table with a macro", function()
    local _, fields = names()
    local text = read(assert(ecs.include_dir) .. "/ecs_plugin.h"):gsub("\\\n%s*", " ")
    local missing = {}
    for _, f in ipairs(fields) do
      local pattern = "\n#define " .. f .. "%s+%(ecs_plugin_api%->" .. f .. "%)"
      if not text:find(pattern) then missing[#missing + 1] = f end
    end
    assert.same({}, missing) -- run lua5.4 tools/plugin_api.lua
  end)

  it("has the call macros tools/plugin_api.lua writes from the list", function()
    local tool = dofile("tools/plugin_api.lua")
    local plugin, list = read("include/ecs_plugin.h"), read("include/ecs_api_list.h")
    assert.equal(#names(), #tool.entries(list))
    assert.is_true(tool.update(plugin, list) == plugin,
                   "include/ecs_plugin.h is stale: run lua5.4 tools/plugin_api.lua")
  end)
end)
