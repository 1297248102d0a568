/*
** ecs_testkit.c -- the Lua module "ecs_testkit": helpers the specs need and
** the shipped module must not offer. Built by CMake only with ECS_TESTS (as
** <build>/ecs_testkit.so, next to ecs/core.so); never part of the rockspec.
** The specs load it through spec/support/testkit.lua.
**
** It reaches the core the way a C plugin does (ecs_plugin.h's function
** table, fetched from whichever ecs.core is loaded), so that specs can
** register C listeners (ecs_manager_listen) before Lua observers exist.
*/
#include <stdint.h>
#include <string.h>

#include "ecs_plugin.h"

/*
** testkit.lightuserdata(n) -> a light userdata with pointer value n: lets
** specs pass light userdata that are not entity handles.
*/
static int l_lightuserdata(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  lua_pushlightuserdata(L, (void *)(uintptr_t)(lua_Unsigned)n);
  return 1;
}

/* ------------------------------------------------------------------------
** Listeners that record what they are told
** --------------------------------------------------------------------- */

#define RECORDER "ecs_testkit.Recorder"
#define MAX_RECORDS 64

typedef struct record {
  ecs_event event;
  ecs_entity e;
  int readable; /* the instance (or name) could be read when called */
  double value; /* field 0 of the instance, or the name's length */
} record;

/* A listener's state. Anchored in the registry for good, so that a world
** never calls one that was collected (test-only: the leak is bounded). */
typedef struct recorder {
  ecs_world *w;
  void *manager;
  int is_names;
  int action; /* 0 none, 1 fail, 2 remove the component, 3 destroy */
  int n;
  record rec[MAX_RECORDS];
} recorder;

static ecs_err record_event(ecs_world *w, void *manager, ecs_entity e,
                            ecs_event event, void *ud) {
  recorder *r = (recorder *)ud;
  record *out = &r->rec[r->n < MAX_RECORDS - 1 ? r->n++ : MAX_RECORDS - 1];
  bool done;
  out->event = event;
  out->e = e;
  out->readable = 0;
  out->value = 0;
  if (r->is_names) {
    size_t len;
    if (ecs_names_get((ecs_names *)manager, e, &len) != NULL) {
      out->readable = 1;
      out->value = (double)len;
    }
  } else {
    ecs_component *c = (ecs_component *)manager;
    ecs_instance i = ecs_component_lookup(w, c, e);
    if (i != ECS_NO_INSTANCE) {
      out->readable = 1;
      if (ecs_component_field_count(c) > 0) {
        ecs_type t = ecs_component_field(c, 0)->type;
        ecs_scalar v = ecs_value_load(ecs_component_column(c, 0), t, i);
        out->value = ecs_type_kind(t) == ECS_KIND_FLOAT ? v.f : (double)v.i;
      }
    }
  }
  switch (r->action) {
  case 1: return ECS_ERR_INVALID;
  case 2:
    if (r->is_names) return ecs_names_clear((ecs_names *)manager, e, &done);
    return ecs_component_remove(w, (ecs_component *)manager, e, &done);
  case 3: ecs_destroy(w, e); break;
  default: break;
  }
  return ECS_ERR_OK;
}

/* The manager of a component object or of world.names at idx. */
static void *check_manager(lua_State *L, int idx, ecs_world **w,
                           int *is_names) {
  if (luaL_testudata(L, idx, "ecs.Names") != NULL) {
    ecs_lua_plugin_check(L, idx, "ecs.Names", w);
    *is_names = 1;
    return ecs_names_of(*w);
  }
  *is_names = 0;
  return ecs_lua_check_component(L, idx, w);
}

/*
** testkit.listen(manager, events [, action]) -> recorder
** manager: a component object or world.names; events: letters of "ars"
** (add, remove, set); action: "fail" (the listener returns
** ECS_ERR_INVALID), "remove" (removes what it is told about), "destroy"
** (destroys the entity), or nil.
*/
static int l_listen(lua_State *L) {
  static const char *const actions[] = {"none", "fail", "remove", "destroy", NULL};
  const char *ev = luaL_checkstring(L, 2);
  unsigned events = 0;
  recorder *r;
  ecs_world *w;
  int is_names, action = luaL_checkoption(L, 3, "none", actions);
  void *m = check_manager(L, 1, &w, &is_names);
  for (; *ev; ev++)
    events |= *ev == 'a' ? ECS_EVENT_ADD : *ev == 'r' ? ECS_EVENT_REMOVE :
              *ev == 's' ? ECS_EVENT_SET : 0;
  r = (recorder *)lua_newuserdatauv(L, sizeof *r, 0);
  memset(r, 0, sizeof *r);
  luaL_setmetatable(L, RECORDER);
  lua_pushvalue(L, -1);
  luaL_ref(L, LUA_REGISTRYINDEX); /* anchored: see recorder */
  r->w = w;
  r->manager = m;
  r->is_names = is_names;
  r->action = action;
  if (ecs_manager_listen(w, m, events, record_event, r) != ECS_ERR_OK)
    return luaL_error(L, "testkit.listen: cannot listen");
  return 1;
}

/* recorder:take() -> { { event=, entity=, readable=, value= }, ... }, and
** forgets them */
static int l_take(lua_State *L) {
  recorder *r = (recorder *)luaL_checkudata(L, 1, RECORDER);
  static const char *const names[] = {"?", "add", "remove", "?", "set"};
  lua_createtable(L, r->n, 0);
  for (int k = 0; k < r->n; k++) {
    lua_createtable(L, 0, 4);
    lua_pushstring(L, names[r->rec[k].event & 7]);
    lua_setfield(L, -2, "event");
    ecs_lua_push_entity(L, r->rec[k].e);
    lua_setfield(L, -2, "entity");
    lua_pushboolean(L, r->rec[k].readable);
    lua_setfield(L, -2, "readable");
    lua_pushnumber(L, r->rec[k].value);
    lua_setfield(L, -2, "value");
    lua_rawseti(L, -2, k + 1);
  }
  r->n = 0;
  return 1;
}

/* recorder:close(manager): stop listening (the manager object proves its
** world is still open) */
static int l_close(lua_State *L) {
  recorder *r = (recorder *)luaL_checkudata(L, 1, RECORDER);
  ecs_world *w;
  int is_names;
  void *m = check_manager(L, 2, &w, &is_names);
  lua_pushboolean(L, w == r->w && ecs_manager_unlisten(w, m, record_event, r));
  return 1;
}

static const luaL_Reg recorder_methods[] = {
  {"take", l_take},
  {"close", l_close},
  {NULL, NULL}
};

/* testkit.batches(world) -> batches of systems run side by side */
static int l_batches(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_world_batches(ecs_lua_check_world(L, 1)));
  return 1;
}

/* testkit.split_runs(world) -> program runs split over the world's
** threads so far (docs/threads.md) */
static int l_split_runs(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_world_split_runs(ecs_lua_check_world(L, 1)));
  return 1;
}

static const luaL_Reg testkit_functions[] = {
  {"split_runs", l_split_runs},
  {"batches", l_batches},
  {"lightuserdata", l_lightuserdata},
  {"listen", l_listen},
  {NULL, NULL}
};

LUAMOD_API int luaopen_ecs_testkit(lua_State *L);

LUAMOD_API int luaopen_ecs_testkit(lua_State *L) {
  ECS_PLUGIN_INIT(L);
  luaL_newmetatable(L, RECORDER);
  luaL_newlib(L, recorder_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newlib(L, testkit_functions);
  return 1;
}
