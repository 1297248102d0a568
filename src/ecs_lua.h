/*
** ecs_lua.h -- the binding's interface for C plugins.
**
** A plugin is a manager written in C (its own layout, its own per-frame
** update) that registers with a world through ecs_manager_register and
** exposes itself to Lua with the helpers below: check a world argument,
** check and push entity handles. See examples/plugins/ for complete ones.
*/
#ifndef ECS_LUA_H
#define ECS_LUA_H

#include <stdint.h>

#include "lua.h"
#include "lauxlib.h"

#include "ecs.h"

/*
** Entity handles are light userdata whose pointer value is
** (id << 2) | ECS_LUA_TAG_ENTITY. The two low bits keep them apart from
** light userdata of other libraries, which point to aligned memory.
*/
#define ECS_LUA_TAG_BITS 2u
#define ECS_LUA_TAG_MASK 3u
#define ECS_LUA_TAG_ENTITY 1u

/* Metatable names (luaL_newmetatable), so type errors read "ecs.World". */
#define ECS_LUA_WORLD "ecs.World"

/* Push entity e as a handle. */
static inline void ecs_lua_push_entity(lua_State *L, ecs_entity e) {
  uintptr_t v = ((uintptr_t)(e & ECS_ID_MASK) << ECS_LUA_TAG_BITS) |
                ECS_LUA_TAG_ENTITY;
  lua_pushlightuserdata(L, (void *)v);
}

/*
** True when the value at idx is an entity handle: a light userdata with the
** entity tag and an id within 30 bits. Never raises.
*/
int ecs_lua_is_entity(lua_State *L, int idx);

/*
** The entity handle at idx, or a type error ("entity expected, got ...").
** Does not check liveness.
*/
ecs_entity ecs_lua_check_entity(lua_State *L, int idx);

/*
** The world of the ecs.World userdata at idx. Raises a type error for
** anything else and "attempt to use a closed world" for a closed one.
*/
ecs_world *ecs_lua_check_world(lua_State *L, int idx);

/*
** Raise the Lua error for err, prefixed by the function's name, e.g.
** "world:create: too many entities (limit 4194303)". Does not return.
*/
int ecs_lua_error(lua_State *L, const char *fname, ecs_err err);

#endif
