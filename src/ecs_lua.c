/*
** ecs_lua.c -- the Lua binding: module ecs.core.
**
** The only file of the core that includes lua.h. It is thin: it checks
** arguments, calls the core and converts results. Error policy (STYLE.md):
** wrong types raise through luaL_argerror/luaL_typeerror; misuse of a valid
** value raises "<function>: <message>" with the core's fixed message;
** predicates never raise for a well-formed handle that is dead or null.
**
** C state is finished before any Lua API call that can raise, so an error
** never leaves a world half-changed.
*/
#include <stdint.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"

#include "ecs.h"
#include "ecs_lua.h"

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

int ecs_lua_error(lua_State *L, const char *fname, ecs_err err) {
  return luaL_error(L, "%s: %s", fname, ecs_strerror(err));
}

#define check_entity ecs_lua_check_entity
#define push_entity ecs_lua_push_entity

/* ecs.is_entity(v) -> boolean; any value, never raises */
static int l_is_entity(lua_State *L) {
  luaL_checkany(L, 1);
  lua_pushboolean(L, ecs_lua_is_entity(L, 1));
  return 1;
}

/* ecs.id(e) -> integer */
static int l_id(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_entity(L, 1));
  return 1;
}

/* ecs.entity(id) -> handle (no liveness check) */
static int l_entity(lua_State *L) {
  lua_Integer id = luaL_checkinteger(L, 1);
  luaL_argcheck(L, id >= 0 && id <= (lua_Integer)ECS_ID_MASK, 1,
                "id out of range (0 to 1073741823)");
  push_entity(L, (ecs_entity)id);
  return 1;
}

/* ecs.index(e) -> integer */
static int l_index(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_entity_index(check_entity(L, 1)));
  return 1;
}

/* ecs.generation(e) -> integer */
static int l_generation(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_entity_generation(check_entity(L, 1)));
  return 1;
}

/* ecs.tostring(e) -> "entity(index.generation)" */
static int l_tostring(lua_State *L) {
  ecs_entity e = check_entity(L, 1);
  lua_pushfstring(L, "entity(%d.%d)", (int)ecs_entity_index(e),
                  (int)ecs_entity_generation(e));
  return 1;
}

/* ======================================================================
** Worlds
**
** A world userdata holds the ecs_world pointer (NULL once closed) and has
** one user value: a table the binding keeps its Lua-side state in
** (component managers, transform and names objects, systems, Lua values of
** "lua" fields). Objects that belong to a world (managers, queries) hold
** the world userdata as their own user value, so the world outlives them
** and they can see whether it was closed.
** ==================================================================== */

typedef struct lworld {
  ecs_world *w;
} lworld;

static lworld *to_lworld(lua_State *L, int idx) {
  return (lworld *)luaL_checkudata(L, idx, ECS_LUA_WORLD);
}

ecs_world *ecs_lua_check_world(lua_State *L, int idx) {
  lworld *lw = to_lworld(L, idx);
  if (lw->w == NULL) luaL_error(L, "attempt to use a closed world");
  return lw->w;
}

/*
** The fast path used by the world's own methods, which carry the world
** metatable as upvalue 1: one metatable fetch and a raw compare instead of
** a registry lookup by name. Anything unusual takes the checked path, which
** raises the proper error.
*/
static ecs_world *check_self(lua_State *L) {
  lworld *lw = (lworld *)lua_touserdata(L, 1);
  if (lw != NULL && lua_getmetatable(L, 1)) {
    int same = lua_rawequal(L, -1, lua_upvalueindex(1));
    lua_pop(L, 1);
    if (same && lw->w != NULL) return lw->w;
  }
  return ecs_lua_check_world(L, 1);
}

#define check_world(L, idx) check_self(L)

/*
** Lua's allocator, passed to the core so that Lua's accounting (and a test
** host's failing allocator) sees every block the core allocates.
*/
static ecs_world *new_core_world(lua_State *L) {
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  return ecs_world_new(f, ud);
}

/*
** ecs.world([options]) -> world
** The userdata is created closed (w == NULL) with its state table, and only
** then is the core world allocated, so a memory error at any point leaves
** nothing to leak: __gc of a closed world does nothing.
*/
static int l_world_new(lua_State *L) {
  lworld *lw;
  if (!lua_isnoneornil(L, 1)) luaL_checktype(L, 1, LUA_TTABLE);
  lw = (lworld *)lua_newuserdatauv(L, sizeof *lw, 1); /* world */
  lw->w = NULL;
  luaL_setmetatable(L, ECS_LUA_WORLD);
  lua_newtable(L);                                       /* world, state */
  lua_setiuservalue(L, -2, 1);                           /* world */
  lw->w = new_core_world(L);
  if (lw->w == NULL) return luaL_error(L, "ecs.world: not enough memory");
  return 1;
}

/* world:close(); also __gc and __close. Idempotent. */
static int l_world_close(lua_State *L) {
  lworld *lw = to_lworld(L, 1);
  if (lw->w != NULL) {
    ecs_world *w = lw->w;
    lw->w = NULL;
    ecs_world_free(w);
  }
  return 0;
}

/* world:create() -> e;  world:create(n) -> { e1, ..., en } */
static int l_world_create(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  ecs_err err;
  if (lua_isnoneornil(L, 2)) {
    ecs_entity e;
    err = ecs_create(w, &e);
    if (err != ECS_ERR_OK) return ecs_lua_error(L, "world:create", err);
    push_entity(L, e);
    return 1;
  } else {
    lua_Integer n = luaL_checkinteger(L, 2);
    ecs_entity *buf;
    luaL_argcheck(L, n >= 0, 2, "count must not be negative");
    if (n > (lua_Integer)ECS_MAX_ENTITIES)
      return ecs_lua_error(L, "world:create", ECS_ERR_FULL);
    /* allocate everything that can raise before creating anything */
    lua_createtable(L, (int)n, 0);                       /* ..., list */
    buf = (ecs_entity *)lua_newuserdatauv(L, (size_t)n * sizeof *buf, 0);
    err = ecs_create_n(w, buf, (size_t)n);
    if (err != ECS_ERR_OK) return ecs_lua_error(L, "world:create", err);
    for (lua_Integer i = 0; i < n; i++) { /* array part is preallocated */
      push_entity(L, buf[i]);
      lua_rawseti(L, -3, i + 1);
    }
    lua_pop(L, 1);                                       /* ..., list */
    return 1;
  }
}

/*
** world:destroy(e) -> boolean;  world:destroy({ e1, ... }) -> number
** A list is checked whole before anything is destroyed.
*/
static int l_world_destroy(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, 2), done = 0;
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, 2, i);
      if (!ecs_lua_is_entity(L, -1))
        return luaL_error(L, "bad argument #1 to 'destroy' (entity expected "
                          "at index %d, got %s)", (int)i, luaL_typename(L, -1));
      lua_pop(L, 1);
    }
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, 2, i);
      done += ecs_destroy(w, check_entity(L, -1));
      lua_pop(L, 1);
    }
    lua_pushinteger(L, done);
    return 1;
  }
  lua_pushboolean(L, ecs_destroy(w, check_entity(L, 2)));
  return 1;
}

/* world:alive(e) -> boolean */
static int l_world_alive(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  lua_pushboolean(L, ecs_alive(w, check_entity(L, 2)));
  return 1;
}

/* world:count() -> live entities */
static int l_world_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_count(check_world(L, 1)));
  return 1;
}

/*
** world:entities() -> iterator over live entities, in index order.
** Stateless: the control value is the last entity returned, so the loop
** allocates nothing. Destroying entities during the loop is allowed;
** entities created during it are visited if they take a higher index.
*/
static int l_world_entities_next(lua_State *L) {
  ecs_world *w = ecs_lua_check_world(L, 1);
  uint32_t cursor = 0;
  ecs_entity e;
  if (!lua_isnil(L, 2)) cursor = ecs_entity_index(check_entity(L, 2)) + 1u;
  if (!ecs_next_entity(w, &cursor, &e)) return 0;
  push_entity(L, e);
  return 1;
}

static int l_world_entities(lua_State *L) {
  check_world(L, 1);
  lua_pushcfunction(L, l_world_entities_next);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

/* world:check() -> true, or false and the first violated invariant */
static int l_world_check(lua_State *L) {
  const char *bad = ecs_world_check(check_world(L, 1));
  if (bad == NULL) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  lua_pushstring(L, bad);
  return 2;
}

/* Budget of dead records each manager reclaims per world:update. */
#define UPDATE_GC_BUDGET 64u

/* world:update([dt]) -- runs a budgeted gc of every manager */
static int l_world_update(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  luaL_optnumber(L, 2, 0.0);
  ecs_world_gc(w, UPDATE_GC_BUDGET);
  return 0;
}

/* world:__tostring() */
static int l_world_tostring(lua_State *L) {
  lworld *lw = to_lworld(L, 1);
  if (lw->w == NULL) lua_pushliteral(L, "ecs.World (closed)");
  else lua_pushfstring(L, "ecs.World (%p)", (void *)lw);
  return 1;
}

static const luaL_Reg world_methods[] = {
  {"create", l_world_create},
  {"destroy", l_world_destroy},
  {"alive", l_world_alive},
  {"count", l_world_count},
  {"entities", l_world_entities},
  {"update", l_world_update},
  {"check", l_world_check},
  {"close", l_world_close},
  {NULL, NULL}
};

static const luaL_Reg world_meta[] = {
  {"__gc", l_world_close},
  {"__close", l_world_close},
  {"__tostring", l_world_tostring},
  {NULL, NULL}
};

static void open_world(lua_State *L) {
  luaL_newmetatable(L, ECS_LUA_WORLD);                   /* mt */
  luaL_setfuncs(L, world_meta, 0);
  luaL_newlibtable(L, world_methods);                    /* mt, methods */
  lua_pushvalue(L, -2);                                  /* mt, methods, mt */
  luaL_setfuncs(L, world_methods, 1);  /* upvalue 1: the metatable */
  lua_setfield(L, -2, "__index");
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
}

/* ======================================================================
** Module
** ==================================================================== */

static const luaL_Reg module_functions[] = {
  {"is_entity", l_is_entity},
  {"id", l_id},
  {"entity", l_entity},
  {"index", l_index},
  {"generation", l_generation},
  {"tostring", l_tostring},
  {"world", l_world_new},
  {NULL, NULL}
};

LUAMOD_API int luaopen_ecs_core(lua_State *L);

LUAMOD_API int luaopen_ecs_core(lua_State *L) {
  open_world(L);
  luaL_newlib(L, module_functions);
  push_entity(L, ECS_NULL);
  lua_setfield(L, -2, "null");
  lua_pushinteger(L, (lua_Integer)ECS_MAX_ENTITIES);
  lua_setfield(L, -2, "MAX_ENTITIES");
  return 1;
}
