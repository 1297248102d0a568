/*
** oom_host.c -- the out-of-memory scenario runner (RELIABILITY R1-R3, R25).
**
** Usage: oom_host scenario.lua [scenario.lua ...]
**
** A scenario file returns either a function run(ecs, world) or a table
** { run = function(ecs, world) ... end, verify = function(ecs, world) ... end }.
** For N = 1, 2, ... the host builds a fresh Lua state whose allocator fails
** every growing allocation from the Nth one on (a single failure would be
** absorbed: Lua collects and retries once), creates a world and runs the
** scenario, until one run completes. After every run it disarms the
** allocator and demands:
**   - a failing run ended in an error whose text holds "not enough memory"
**     (anything else, or a non-string error, fails the sweep);
**   - the world, unless the scenario closed it, passes world:check(), takes
**     one more entity and passes the check again, and the scenario's
**     verify(ecs, world) (if any) succeeds;
**   - after lua_close no block is left (the core allocates through Lua's
**     allocator, so this covers C and Lua memory alike). Odd runs close the
**     world before lua_close, even runs leave it alive for lua_close to
**     finalize, so both ways of ending a world are swept.
** The world is created inside the armed region too, so ecs.world() itself
** is swept. The ecs module (and its Lua front end, from ECS_LUA_DIR) is
** loaded before arming.
** Prints one line per scenario: "<file>: N failure points, completed".
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "../support/harness.h" /* test_alloc, sticky: every growth from the Nth fails */

int luaopen_ecs_core(lua_State *L);
/* the plugins (plugins/), linked in and preloaded as ecs.<name> */
int luaopen_ecs_pointmass(lua_State *L);
int luaopen_ecs_mesh(lua_State *L);
int luaopen_ecs_grid(lua_State *L);
int luaopen_ecs_motion(lua_State *L);

static void preload_plugins(lua_State *L) {
  static const luaL_Reg plugins[] = {
    {"ecs.pointmass", luaopen_ecs_pointmass}, {"ecs.mesh", luaopen_ecs_mesh},
    {"ecs.grid", luaopen_ecs_grid}, {"ecs.motion", luaopen_ecs_motion},
    {NULL, NULL}};
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  luaL_setfuncs(L, plugins, 0);
  lua_pop(L, 1);
}

#ifndef ECS_LUA_DIR
#define ECS_LUA_DIR "lua"
#endif

#define MAX_RUNS 200000L

/*
** Runs in the state before arming: loads ecs and the scenario, leaves
** ECS, RUN and VERIFY as globals.
*/
static const char *const setup =
  "local path, file = ...\n"
  "package.path = path .. '/?.lua;' .. path .. '/?/init.lua'\n"
  "package.cpath = ''\n"
  "ECS = require('ecs')\n"
  "require('ecs.message')\n"
  "local s = assert(loadfile(file))()\n"
  "if type(s) == 'function' then s = { run = s } end\n"
  "assert(type(s) == 'table' and type(s.run) == 'function', file .. ': scenario must return a function or { run = f }')\n"
  "RUN, VERIFY = s.run, s.verify\n";

/* The armed part: create the world, run the scenario. */
static const char *const armed =
  "W = nil\n"
  "W = ECS.world()\n"
  "return RUN(ECS, W)\n";

/* After a run (disarmed): the world is consistent and still works. */
static const char *const verify =
  "local W = W\n"
  "if W == nil or not pcall(W.count, W) then return true end\n"
  "local ok, bad = W:check()\n"
  "if not ok then error('world check after the run: ' .. tostring(bad), 0) end\n"
  "local e = W:create()\n"
  "assert(W:alive(e), 'a new entity is alive')\n"
  "if VERIFY then VERIFY(ECS, W) end\n"
  "ok, bad = W:check()\n"
  "if not ok then error('world check after verify: ' .. tostring(bad), 0) end\n"
  "return true\n";

static const char *const close_world =
  "if W ~= nil then W:close() end\n";

static int run_chunk(lua_State *L, const char *code, const char *name) {
  return luaL_loadbuffer(L, code, strlen(code), name) || lua_pcall(L, 0, LUA_MULTRET, 0);
}

static const char *errtext(lua_State *L) {
  const char *m = lua_tostring(L, -1);
  return m != NULL ? m : luaL_typename(L, -1);
}

/* One sweep. @return 0 on success. */
static int sweep(const char *file) {
  long failures = 0;
  for (long n = 1; n < MAX_RUNS; n++) {
    test_alloc a = {0, 0, 0, 0, 1};
    lua_State *L = lua_newstate(test_allocf, &a);
    int rc, done = 0;
    if (L == NULL) {
      fprintf(stderr, "%s: cannot create a Lua state\n", file);
      return 1;
    }
    luaL_openlibs(L);
    luaL_requiref(L, "ecs.core", luaopen_ecs_core, 0);
    lua_pop(L, 1);
    preload_plugins(L);
    if (luaL_loadbuffer(L, setup, strlen(setup), "=setup") != LUA_OK) {
      fprintf(stderr, "%s: setup: %s\n", file, errtext(L));
      lua_close(L);
      return 1;
    }
    lua_pushstring(L, ECS_LUA_DIR);
    lua_pushstring(L, file);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
      fprintf(stderr, "%s: setup: %s\n", file, errtext(L));
      lua_close(L);
      return 1;
    }
    a.fail_at = a.calls + n; /* arm */
    rc = run_chunk(L, armed, "=scenario");
    a.fail_at = 0;           /* disarm */
    if (rc == LUA_OK) {
      done = 1;
    } else {
      const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
      failures++;
      if (msg == NULL || strstr(msg, "not enough memory") == NULL) {
        fprintf(stderr, "%s: run %ld: expected a memory error, got: %s\n", file, n,
                errtext(L));
        lua_close(L);
        return 1;
      }
    }
    lua_settop(L, 0);
    if (run_chunk(L, verify, "=verify") != LUA_OK) {
      fprintf(stderr, "%s: run %ld (%s): %s\n", file, n, done ? "completed" : "failed",
              errtext(L));
      lua_close(L);
      return 1;
    }
    lua_settop(L, 0);
    if (n % 2 == 1 && run_chunk(L, close_world, "=close") != LUA_OK) {
      fprintf(stderr, "%s: run %ld: close: %s\n", file, n, errtext(L));
      lua_close(L);
      return 1;
    }
    lua_close(L);
    if (a.blocks != 0) {
      fprintf(stderr, "%s: run %ld: %ld blocks left after lua_close\n", file, n, a.blocks);
      return 1;
    }
    if (done) {
      printf("%s: %ld failure points, completed\n", file, failures);
      if (failures == 0) {
        fprintf(stderr, "%s: no allocation was ever failed\n", file);
        return 1;
      }
      return 0;
    }
  }
  fprintf(stderr, "%s: did not complete within %ld runs\n", file, MAX_RUNS);
  return 1;
}

int main(int argc, char **argv) {
  int bad = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s scenario.lua ...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; i++) bad |= sweep(argv[i]);
  return bad;
}
