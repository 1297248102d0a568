/*
** plugin.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

/* ----------------------------------------------------------------------
** C plugins (ecs_lua.h)
** ------------------------------------------------------------------- */


/* The plugin object of class tname at idx (NULL if it is not one). */
lhead *ecsl_test_plugin(lua_State *L, int idx, const char *tname) {
  plugin_head *ph = (plugin_head *)ecsl_test_object(L, idx, &ecsl_plugin_tag);
  if (ph == NULL || lua_rawlen(L, idx) < sizeof *ph ||
      (ph->o.tname != tname && strcmp(ph->o.tname, tname) != 0))
    return NULL;
  return &ph->o.h;
}

void ecs_lua_plugin_class(lua_State *L, const char *tname,
                          const luaL_Reg *methods) {
  if (luaL_newmetatable(L, tname)) {                     /* mt */
    lua_newtable(L);                                     /* mt, methods */
    ecsl_set_methods(L, methods, &ecsl_plugin_tag, tname);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__index");
    lua_setfield(L, -2, "__methods");
    lua_pushliteral(L, "locked");
    lua_setfield(L, -2, "__metatable");
  }
  lua_pop(L, 1);
}

int ecs_lua_plugin_get(lua_State *L, int world_idx, const char *tname) {
  world_idx = lua_absindex(L, world_idx);
  ecs_lua_check_world(L, world_idx);
  if (ecsl_push_state_field(L, world_idx, &ecsl_plugins_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_pushnil(L);
    return LUA_TNIL;
  }
  lua_getfield(L, -1, tname);
  lua_remove(L, -2);
  return lua_type(L, -1);
}

void *ecs_lua_plugin_new(lua_State *L, int world_idx, const char *tname,
                         size_t size) {
  plugin_head *h;
  world_idx = lua_absindex(L, world_idx);
  ecs_lua_check_world(L, world_idx);
  h = (plugin_head *)lua_newuserdatauv(L, sizeof *h + size, 1);
  memset(h, 0, sizeof *h + size);
  ecsl_init_head(&h->o.h, &ecsl_plugin_tag, ecsl_to_lworld(L, world_idx));
  h->o.tname = tname;
  luaL_setmetatable(L, tname);
  lua_pushvalue(L, world_idx);
  lua_setiuservalue(L, -2, 1);                            /* obj */
  ecsl_need_state_field(L, world_idx, &ecsl_plugins_key);          /* obj, plugins */
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, tname);
  lua_pop(L, 1);                                          /* obj */
  return h + 1;
}

void *ecs_lua_object_new(lua_State *L, const char *tname, size_t size,
                         int nuvalue) {
  plugin_head *h = (plugin_head *)lua_newuserdatauv(L, sizeof *h + size, nuvalue);
  memset(h, 0, sizeof *h + size);
  ecsl_init_head(&h->o.h, &ecsl_plugin_tag, NULL);
  h->o.tname = tname;
  luaL_setmetatable(L, tname);
  return h + 1;
}

void ecs_lua_plugin_detach(lua_State *L, int world_idx, const char *tname) {
  world_idx = lua_absindex(L, world_idx);
  if (ecsl_push_state_field(L, world_idx, &ecsl_plugins_key) == LUA_TTABLE) {
    lua_pushnil(L);
    lua_setfield(L, -2, tname); /* an existing key: no allocation */
  }
  lua_pop(L, 1);
}

void *ecs_lua_plugin_check(lua_State *L, int idx, const char *tname,
                           ecs_world **w) {
  lhead *h = ecsl_test_plugin(L, idx, tname);
  if (h == NULL) ecsl_object_error(L, idx, tname);
  if (h->lw != NULL && h->lw->w == NULL) luaL_error(L, CLOSED_WORLD);
  if (w != NULL) *w = h->lw != NULL ? h->lw->w : NULL;
  return (plugin_head *)(void *)h + 1;
}

/* The plugins compiled into ecs.core, loadable as require("ecs.<name>"). */
int luaopen_ecs_pointmass(lua_State *L);
int luaopen_ecs_mesh(lua_State *L);
int luaopen_ecs_grid(lua_State *L); /* demo (issue 7) */
int luaopen_ecs_motion(lua_State *L); /* queries section: native systems */

void ecsl_preload_plugins(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_ecs_pointmass);
  lua_setfield(L, -2, "ecs.pointmass");
  lua_pushcfunction(L, luaopen_ecs_mesh);
  lua_setfield(L, -2, "ecs.mesh");
  lua_pushcfunction(L, luaopen_ecs_grid);
  lua_setfield(L, -2, "ecs.grid");
  lua_pushcfunction(L, luaopen_ecs_motion);
  lua_setfield(L, -2, "ecs.motion");
  lua_pop(L, 1);
}

