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
#include "query.h"

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

/* ----------------------------------------------------------------------
** Components and C plugins (components branch)
** ------------------------------------------------------------------- */

/* Metatable of generic component managers (world:component). */
#define ECS_LUA_COMPONENT "ecs.Component"

/*
** The core manager of the ecs.Component at idx (world:component), for C
** code that works on its columns (component.h). Raises a type error for
** anything else and "attempt to use a closed world" once its world is
** closed. @param w receives the world (may be NULL).
*/
struct ecs_component;
struct ecs_component *ecs_lua_check_component(lua_State *L, int idx,
                                              ecs_world **w);

/*
** A plugin is a manager written in C: it keeps its own data (allocated
** with ecs_world_allocator, owned by the world through
** ecs_manager_register, so the world frees it; counted in world:memory()
** and charged to Lua's collector at the binding's next charging call,
** such as world:update) and exposes methods to Lua
** through a plugin object: a full userdata of class tname that keeps its
** world alive and refuses to work once the world is closed. A plugin has
** one object per world, found again with ecs_lua_plugin_get. See
** examples/plugins/pointmass.c for a complete one (about 40 lines of
** glue).
*/

/*
** Create the metatable tname if it does not exist yet: methods become its
** __index table (also __methods, for the argument sweep), __name is tname.
** Leaves nothing on the stack.
*/
void ecs_lua_plugin_class(lua_State *L, const char *tname,
                          const luaL_Reg *methods);

/*
** Push the plugin object of class tname attached to the world at
** world_idx, or nil. @return the pushed value's type (LUA_TNIL if none).
*/
int ecs_lua_plugin_get(lua_State *L, int world_idx, const char *tname);

/*
** Create a plugin object of class tname (ecs_lua_plugin_class first) with
** size bytes of zeroed storage for the plugin, attach it to the world at
** world_idx and push it. Raises only on memory errors, before anything is
** attached. @return the storage.
*/
void *ecs_lua_plugin_new(lua_State *L, int world_idx, const char *tname,
                         size_t size);

/*
** Detach the plugin object of class tname from the world at world_idx
** (used when creating the C side failed after ecs_lua_plugin_new).
** Never raises.
*/
void ecs_lua_plugin_detach(lua_State *L, int world_idx, const char *tname);

/*
** The storage of the plugin object of class tname at idx. Raises a type
** error for anything else and "attempt to use a closed world" once its
** world is closed. @param w receives the world (may be NULL).
*/
void *ecs_lua_plugin_check(lua_State *L, int idx, const char *tname,
                           ecs_world **w);

/*
** Release the Lua values of "lua" fields that component managers of the
** world at world_idx dropped (remove, gc). The binding calls it after every
** call that can drop some; a plugin that runs ecs_world_gc or a component
** gc calls it too. Never raises.
*/
void ecs_lua_drain_refs(lua_State *L, int world_idx);

/* ----------------------------------------------------------------------
** Native systems (queries section; docs/queries.md)
** ------------------------------------------------------------------- */

/*
** Push a native system object wrapping fn: world:system(name, q, obj) runs
** it at every update, q:run(obj, dt) once. specs are column specs as for
** q:columns ("Position.x", "Velocity.dx:in"), resolved against the query
** it runs over; view->column[k] is spec k's column. name is for messages.
** The object's user value 3 is free for the plugin: anchor there whatever
** ud points into (see examples/plugins/motion.c).
*/
void ecs_lua_push_native(lua_State *L, const char *name, ecs_system_fn fn,
                         void *ud, const char *const *specs, int nspecs);

#endif
