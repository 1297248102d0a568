/*
** ecs_lua.h -- the binding's interface for C plugins.
**
** A plugin is a manager written in C (its own layout, its own per-frame
** update) that registers with a world through ecs_manager_register and
** exposes itself to Lua with the helpers below: check a world argument,
** check and push entity handles. See plugins/ for complete ones. A plugin
** is a module of its own and includes ecs_plugin.h, not this header: its
** calls then go through the function table of ecs.core.
*/
#ifndef ECS_LUA_H
#define ECS_LUA_H

#include <stdint.h>

#include "lua.h"
#include "lauxlib.h"
#include "ecs_compat.h" /* one API on Lua 5.1-5.4 and LuaJIT */

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
** "world:create: too many entities (limit 4194303)", with the text of
** err in ECS_ERRORS (include/ecs.h). An error about an entity (ECS_ERR_DEAD,
** ECS_ERR_MISSING) names the entity handle at argument 2, the entity of a
** method called as obj:fn(e, ...): "pointmass:add: entity is not alive
** (entity(12.3))". ECS_ERR_CLOSED raises "attempt to use a closed world"
** alone, as every closed-world check does. Does not return.
*/
int ecs_lua_error(lua_State *L, const char *fname, ecs_err err);

/*
** Calls in progress. A plugin function that reaches a world through an
** argument other than its self (e.g. grid:build(Position, Collider)) and
** keeps core pointers across a Lua allocation or a metamethod call wraps
** that part in ecs_lua_enter(L, idx) ... ecs_lua_leave(token), idx being
** any object of that world (world, component, query, plugin object): a
** world:close() run meanwhile (by a finalizer, say) then releases the
** world's memory only at ecs_lua_leave. Methods registered through
** ecs_lua_plugin_class are counted this way already, for their self.
** ecs_lua_enter raises a type error for anything else.
*/
void *ecs_lua_enter(lua_State *L, int idx);
void ecs_lua_leave(void *token);

/*
** The string at idx (a string, no number coercion) and its length (len may
** be NULL), for text that goes to the core or a parser: a zero byte in it
** raises "bad argument #k to 'f' (<fn>: string contains an embedded zero at
** position n)" instead of ending the text early. Raises a type error for
** anything but a string.
*/
const char *ecs_lua_check_text(lua_State *L, int idx, size_t *len,
                               const char *fn);

/* ----------------------------------------------------------------------
** Components and C plugins
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
** plugins/pointmass.c for a complete one (about 40 lines of
** glue).
*/

/*
** Create the metatable tname if it does not exist yet: methods become its
** __index table (also __methods, for the argument sweep), __name is tname.
** Each method checks that its self is a plugin object of class tname
** (made by ecs_lua_plugin_new: a userdata of another library given this
** metatable is refused) and counts as a call in progress on its world.
** tname must be a string that outlives the module (a literal); classes
** are told apart by its text. Leaves nothing on the stack.
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
** Create an object of plugin class tname (ecs_lua_plugin_class first) that
** belongs to no world (a spatial grid, say) with size bytes of zeroed
** storage and nuvalue user values, and push it. Its methods check their
** self like those of plugin objects; ecs_lua_plugin_check returns its
** storage (and NULL as its world). @return the storage.
*/
void *ecs_lua_object_new(lua_State *L, const char *tname, size_t size,
                         int nuvalue);

/*
** Detach the plugin object of class tname from the world at world_idx
** (used when creating the C side failed after ecs_lua_plugin_new).
** Never raises.
*/
void ecs_lua_plugin_detach(lua_State *L, int world_idx, const char *tname);

/*
** Make the plugin object at idx (made by ecs_lua_plugin_new) stand for the
** manager self of its world in world:query and wherever a component is
** a term: self's class must have the columns hook (ecs.h), whose
** component the query then uses. Call it once the manager is registered.
** Never raises.
*/
void ecs_lua_plugin_manager(lua_State *L, int idx, void *self);

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

/*
** Let ecs.restore create this plugin's manager in the new world it makes:
** new_fn is called as new_fn(world) (the plugin's own "new": it creates
** the manager registered under the name manager, in ECS_NS_MANAGER, and
** may return anything) for every snapshot that holds a manager of that
** name. Registered per Lua state, usually from the plugin's luaopen_
** function; a later call for the same name replaces the function. A
** snapshot holding a plugin manager whose module was not loaded is an
** error naming it ("require its module first"). Raises only on memory
** errors.
*/
void ecs_lua_plugin_factory(lua_State *L, const char *manager,
                            lua_CFunction new_fn);

/* ----------------------------------------------------------------------
** Native systems (queries section; docs/queries.md)
** ------------------------------------------------------------------- */

/*
** Push a native system object wrapping fn: world:system(name, q, obj) runs
** it at every update, q:run(obj, dt) once. specs are column specs as for
** q:columns ("Position.x", "Velocity.dx:in"), resolved against the query
** it runs over; view->column[k] is spec k's column (read-only) and
** view->out[k] the same array for writing, NULL for a ":in" spec: a
** system that writes a column must refuse a ":in" spec for it (see
** motion.c's check_target). name is for messages.
** The object's user value 3 is free for the plugin: anchor there whatever
** ud points into (see plugins/motion.c). A plugin may also add a
** native system to a world directly, without Lua (ecs_system_add,
** include/system.h); world:systems and world:stats list it.
*/
void ecs_lua_push_native(lua_State *L, const char *name, ecs_system_fn fn,
                         void *ud, const char *const *specs, int nspecs);

/*
** Declare the native system object at idx safe on worker threads
** (query.h, ecs_run_opts.parallel: fn reads and writes only its view and
** computes each row on its own): on a world with threads its runs over
** 8192 rows or more are split over them. Raises if idx is not one.
*/
void ecs_lua_native_parallel(lua_State *L, int idx);

#endif
