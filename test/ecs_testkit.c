/*
** ecs_testkit.c -- the Lua module "ecs_testkit": helpers the specs need and
** the shipped module must not offer. Built by CMake only with ECS_TESTS (as
** <build>/ecs_testkit.so, next to ecs/core.so); never part of the rockspec.
** The specs load it through spec/support/testkit.lua.
*/
#include <stdint.h>

#include "lua.h"
#include "lauxlib.h"

/*
** testkit.lightuserdata(n) -> a light userdata with pointer value n: lets
** specs pass light userdata that are not entity handles.
*/
static int l_lightuserdata(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  lua_pushlightuserdata(L, (void *)(uintptr_t)(lua_Unsigned)n);
  return 1;
}

static const luaL_Reg testkit_functions[] = {
  {"lightuserdata", l_lightuserdata},
  {NULL, NULL}
};

LUAMOD_API int luaopen_ecs_testkit(lua_State *L);

LUAMOD_API int luaopen_ecs_testkit(lua_State *L) {
  luaL_newlib(L, testkit_functions);
  return 1;
}
