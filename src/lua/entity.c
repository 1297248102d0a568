/*
** entity.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

/* ======================================================================
** Entity handles
** ==================================================================== */

int ecs_lua_is_entity(lua_State *L, int idx) {
  uintptr_t v;
  if (lua_type(L, idx) != LUA_TLIGHTUSERDATA) return 0;
  v = (uintptr_t)lua_touserdata(L, idx);
  return (v & ECS_LUA_TAG_MASK) == ECS_LUA_TAG_ENTITY &&
         (v >> ECS_LUA_TAG_BITS) <= ECS_ID_MASK;
}

ecs_entity ecs_lua_check_entity(lua_State *L, int idx) {
  if (!ecs_lua_is_entity(L, idx)) luaL_typeerror(L, idx, "entity");
  return (ecs_entity)((uintptr_t)lua_touserdata(L, idx) >> ECS_LUA_TAG_BITS);
}

/* Methods take (self, entity, ...): an error about an entity names the
** one at argument 2 (ecsl_error keeps the rule of when). */
int ecs_lua_error(lua_State *L, const char *fname, ecs_err err) {
  return ecsl_error(L, NULL, fname, err, NULL, 2);
}

/* ecs.is_entity(v) -> boolean; any value, never raises */
int ecsl_l_is_entity(lua_State *L) {
  luaL_checkany(L, 1);
  lua_pushboolean(L, ecs_lua_is_entity(L, 1));
  return 1;
}

/* ecs.id(e) -> integer */
int ecsl_l_id(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_entity(L, 1));
  return 1;
}

/* ecs.entity(id) -> handle (no liveness check) */
int ecsl_l_entity(lua_State *L) {
  lua_Integer id = luaL_checkinteger(L, 1);
  luaL_argcheck(L, id >= 0 && id <= (lua_Integer)ECS_ID_MASK, 1,
                "id out of range (0 to 1073741823)");
  push_entity(L, (ecs_entity)id);
  return 1;
}

/* ecs.index(e) -> integer */
int ecsl_l_index(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_entity_index(check_entity(L, 1)));
  return 1;
}

/* ecs.generation(e) -> integer */
int ecsl_l_generation(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_entity_generation(check_entity(L, 1)));
  return 1;
}

/* ecs.tostring(e) -> "entity(index.generation)" */
int ecsl_l_tostring(lua_State *L) {
  ecs_entity e = check_entity(L, 1);
  lua_pushfstring(L, "entity(%d.%d)", (int)ecs_entity_index(e),
                  (int)ecs_entity_generation(e));
  return 1;
}
