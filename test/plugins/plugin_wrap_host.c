/*
** plugin_wrap_host.c -- the C plugins' purge and check (plugins/
** pointmass.c, mesh.c, linked in and preloaded), which only exist behind
** Lua: a host creates them from Lua, then forges, through the core's
** private header, the slot of a dead entity's index as a wrap that nobody
** purged would leave it. Each plugin's check must report the record that
** outlived its generation, and accept it once its purge ran.
** (spec/entity/generation_spec.lua checks, from Lua, that a returning handle
** finds nothing.)
*/
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "../support/harness.h"
#include "ecs.h"
#include "ecs_lua.h"
#include "ecs_private.h"

int luaopen_ecs_core(lua_State *L);
int luaopen_ecs_pointmass(lua_State *L);
int luaopen_ecs_mesh(lua_State *L);

static const char *const setup =
  "local core = require('ecs.core')\n"
  "W = core.world()\n"
  "local PM = require('ecs.pointmass').new(W)\n"
  "local M = require('ecs.mesh').new(W)\n"
  "E = W:create()\n"
  "PM:add(E, 1, 2, 3, 4)\n"
  "M:add(E, 5)\n"
  "M:add(E, 6)\n"
  "assert(W:destroy(E))\n"
  "assert(W:check())\n";

/* NULL-safe string equality (a check that passes returns NULL). */
static bool text_is(const char *s, const char *want) {
  return s != NULL && strcmp(s, want) == 0;
}

static const char *check_of(const ecs_world *w, const char *name) {
  const ecs_manager_class *cls;
  void *self = ecs_manager_find(w, name, &cls);
  return self != NULL ? cls->check(w, self) : "no such manager";
}

static void purge(ecs_world *w, const char *name, uint32_t index) {
  const ecs_manager_class *cls;
  void *self = ecs_manager_find(w, name, &cls);
  if (self != NULL) cls->purge(w, self, index);
}

TEST(Plugins_check_reports_a_record_that_outlived_a_wrap) {
  lua_State *L = luaL_newstate();
  ecs_world *w;
  ecs_entity e;
  uint32_t ix;
  uint16_t saved;
  CHECK(L != NULL);
  luaL_openlibs(L);
  luaL_requiref(L, "ecs.core", luaopen_ecs_core, 0);
  lua_pop(L, 1);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_ecs_pointmass);
  lua_setfield(L, -2, "ecs.pointmass");
  lua_pushcfunction(L, luaopen_ecs_mesh);
  lua_setfield(L, -2, "ecs.mesh");
  lua_pop(L, 1);
  if (luaL_dostring(L, setup) != LUA_OK) {
    fprintf(stderr, "setup: %s\n", lua_tostring(L, -1));
    lua_close(L);
    CHECK(0);
  }
  lua_getglobal(L, "W");
  w = ecs_lua_check_world(L, -1);
  lua_getglobal(L, "E");
  e = ecs_lua_check_entity(L, -1);
  lua_pop(L, 2);
  ix = ecs_entity_index(e);
  saved = w->head.slot[ix];
  w->head.slot[ix] = ECS_SLOT_FREE; /* wrapped: next generation 0 */
  CHECK(text_is(check_of(w, "pointmass"),
               "pointmass: record outlived its generation (wrap)"));
  CHECK(text_is(check_of(w, "mesh"),
               "mesh: record outlived its generation (wrap)"));
  purge(w, "pointmass", ix);
  purge(w, "mesh", ix);
  CHECK(check_of(w, "pointmass") == NULL);
  CHECK(check_of(w, "mesh") == NULL);
  CHECK(ecs_world_check(w) == NULL);
  w->head.slot[ix] = saved;
  CHECK(ecs_world_check(w) == NULL);
  CHECK(luaL_dostring(L, "assert(W:check()); W:close()") == LUA_OK);
  lua_close(L);
}

static const test_case cases[] = {
  CASE(Plugins_check_reports_a_record_that_outlived_a_wrap),
};

TEST_MAIN(cases)
