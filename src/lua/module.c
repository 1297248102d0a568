/*
** module.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

static const luaL_Reg world_methods[] = {
  {"create", ecsl_l_world_create},
  {"destroy", ecsl_l_world_destroy},
  {"alive", ecsl_l_world_alive},
  {"disable", ecsl_l_world_disable},
  {"enable", ecsl_l_world_enable},
  {"enabled", ecsl_l_world_enabled},
  {"count", ecsl_l_world_count},
  {"memory", ecsl_l_world_memory},
  {"managers", ecsl_l_world_managers},
  {"entities", ecsl_l_world_entities},
  {"update", ecsl_l_world_update},
  {"check", ecsl_l_world_check},
  {"close", ecsl_l_world_close},
  {"component", ecsl_l_world_component},
  {"components", ecsl_l_world_components},
  {"query", ecsl_l_world_query},
  {"system", ecsl_l_world_system},
  {"remove_system", ecsl_l_world_remove_system},
  {"replace_system", ecsl_l_world_replace_system},
  {"enable_system", ecsl_l_world_enable_system},
  {"spawn", ecsl_l_world_spawn},
  {"prefab", ecsl_l_world_prefab},
  {"clone", ecsl_l_world_clone},
  {"systems", ecsl_l_world_systems},
  {"stats", ecsl_l_world_stats},
  {"reset_stats", ecsl_l_world_reset_stats},
  {"snapshot", ecsl_l_world_snapshot},
  {"restore", ecsl_l_world_restore},
  {"find_component", ecsl_l_world_find_component},
  {"journal", ecsl_l_world_journal},
  {"apply_delta", ecsl_l_world_apply_delta},
  {"state_hash", ecsl_l_world_state_hash},
  {"inspect", ecsl_l_world_inspect},
  {NULL, NULL}
};

static const luaL_Reg world_meta[] = {
  {"__gc", ecsl_l_world_gc},
  {"__close", ecsl_l_world_close},
  {"__tostring", ecsl_l_world_tostring},
  {NULL, NULL}
};

/*
** The class template every world's metatable is copied from (__name,
** metamethods, __methods for the argument sweep), and the
** shared metatable of every world's fields table: { __index = methods }.
*/
static void open_world(lua_State *L) {
  luaL_newmetatable(L, ECS_LUA_WORLD);                   /* tpl */
  luaL_setfuncs(L, world_meta, 0);
  lua_newtable(L);                                       /* tpl, methods */
  ecsl_set_methods(L, world_methods, &ecsl_world_tag, ECS_LUA_WORLD);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__methods");
  luaL_newmetatable(L, ECS_LUA_WORLD_FIELDS);            /* tpl, methods, fmt */
  lua_insert(L, -2);                                     /* tpl, fmt, methods */
  lua_setfield(L, -2, "__index");                        /* tpl, fmt */
  lua_pop(L, 1);
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
}

/* ======================================================================
** Module
** ==================================================================== */

static const luaL_Reg module_functions[] = {
  {"is_entity", ecsl_l_is_entity},
  {"id", ecsl_l_id},
  {"entity", ecsl_l_entity},
  {"index", ecsl_l_index},
  {"generation", ecsl_l_generation},
  {"tostring", ecsl_l_tostring},
  {"world", ecsl_l_world_new},
  {"restore", ecsl_l_restore},
  {NULL, NULL}
};

/* The one exported symbol when the module is built with hidden
** visibility (CMakeLists.txt). */
#if defined(__GNUC__) && !defined(_WIN32)
#define ECS_EXPORT __attribute__((visibility("default")))
#else
#define ECS_EXPORT
#endif

ECS_EXPORT LUAMOD_API int luaopen_ecs_core(lua_State *L);

ECS_EXPORT LUAMOD_API int luaopen_ecs_core(lua_State *L) {
#if LUA_VERSION_NUM >= 502
  /* a module built for another Lua whose symbols all resolved: stop it
  ** here ("version mismatch"), before any call into a foreign API */
  luaL_checkversion(L);
#endif
#if LUA_VERSION_NUM == 501
  /* Lua 5.1 and LuaJIT finalize userdata newest first, and each C library
  ** require loaded is a userdata whose __gc unloads it: at lua_close a
  ** plugin (ecs.mesh, ...) required after a world was created would be
  ** unloaded before that world's __gc frees its manager through the
  ** plugin's code. So C libraries stay loaded until the process ends
  ** there, as 5.2+ keeps them until lua_close's very end. */
  luaL_getmetatable(L, "_LOADLIB");
  if (lua_istable(L, -1)) {
    lua_pushnil(L);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
#endif
  open_world(L);
  ecsl_open_components(L);
  ecsl_open_api(L);
  ecsl_open_builtins(L);
  ecsl_open_queries(L);
  ecsl_open_observers(L);
  ecsl_open_spawn(L);
  ecsl_open_journals(L);
  luaL_newlib(L, module_functions);
  push_entity(L, ECS_NULL);
  lua_setfield(L, -2, "null");
  lua_pushinteger(L, (lua_Integer)ECS_MAX_ENTITIES);
  lua_setfield(L, -2, "MAX_ENTITIES");
  return 1;
}
