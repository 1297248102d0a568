/*
** world.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

/*
** Lua's allocator, passed to the core so that a host's allocator (a memory
** limit, a test host's failing allocator) sees every block the core
** allocates. Lua's collector does not: blocks from lua_getallocf are
** outside its count (collectgarbage("count")), hence ecsl_charge below.
*/
static ecs_world *new_core_world(lua_State *L) {
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  return ecs_world_new(f, ud);
}

/*
** Charge the world's new C memory to Lua's collector: what the core has
** allocated since the last ecsl_charge is added to the collector's debt
** (LUA_GCSTEP with a size in KB), as if Lua had allocated it, so objects
** that own C memory (queries and their match lists, worlds) are collected
** at the pace their memory is made. Frees are not credited (as in Lua).
** The step may run finalizers, i.e. any Lua code, even world:close: call
** this only where the binding holds no core pointer it will use again,
** just before a method returns. Skipped while the collector is stopped
** (LUA_GCSTEP would run it anyway) or inside a finalizer (lua_gc is then
** refused: it returns -1).
*/
void ecsl_charge(lua_State *L, lworld *lw) {
  uint64_t total, kb;
  if (lw->w == NULL) return;
  ecs_world_memory(lw->w, &total);
  kb = (total - lw->charged) / 1024u;
  if (kb == 0) return;
  lw->charged += kb * 1024u; /* the remainder waits for the next ecsl_charge */
  if (lua_gc(L, LUA_GCISRUNNING) <= 0) return;
  lua_gc(L, LUA_GCSTEP, kb > (uint64_t)INT_MAX ? INT_MAX : (int)kb);
}


/*
** ecs.world([options]) -> world
** The userdata is created closed (w == NULL) with its state table, and only
** then is the core world allocated, so a memory error at any point leaves
** nothing to leak: __gc of a closed world does nothing.
*/
/*
** ecs.world([{ threads = n }]) -- options are checked before anything is
** made: threads an integer from 1 to ECS_MAX_THREADS (docs/threads.md).
*/
int ecsl_l_world_new(lua_State *L) {
  static const char *const known[] = {"threads", NULL};
  lworld *lw;
  lua_Integer threads = 1;
  ecs_err err;
  if (!lua_isnoneornil(L, 1)) {
    luaL_checktype(L, 1, LUA_TTABLE);
    ecsl_check_keys(L, 1, 1, "ecs.world", known, false);
    if (lua_getfield(L, 1, "threads") != LUA_TNIL) {
      int isint;
      threads = lua_tointegerx(L, -1, &isint);
      if (lua_type(L, -1) != LUA_TNUMBER || !isint || threads < 1 || threads > (lua_Integer)ECS_MAX_THREADS)
        return luaL_error(L, "ecs.world: bad argument #1 (threads must be an "
                             "integer from 1 to %d, got %s)",
                          (int)ECS_MAX_THREADS, luaL_tolstring(L, -1, NULL));
    }
    lua_pop(L, 1);
  }
  lw = (lworld *)lua_newuserdatauv(L, sizeof *lw, 1); /* world */
  memset(lw, 0, sizeof *lw);
  ecsl_init_head(&lw->h, &ecsl_world_tag, lw);
  /* its own metatable: a copy of the template, __index = fields table */
  lua_createtable(L, 0, 10);                             /* world, mt */
  luaL_getmetatable(L, ECS_LUA_WORLD);                   /* world, mt, tpl */
  lua_pushnil(L);
  while (lua_next(L, -2)) {                              /* ..., tpl, k, v */
    lua_pushvalue(L, -2);
    lua_insert(L, -2);                                   /* ..., tpl, k, k, v */
    lua_rawset(L, -5);
  }
  lua_pop(L, 1);                                         /* world, mt */
  lua_newtable(L);                                       /* world, mt, fields */
  luaL_getmetatable(L, ECS_LUA_WORLD_FIELDS);            /* {__index=methods} */
  lua_setmetatable(L, -2);
  lua_setfield(L, -2, "__index");                        /* world, mt */
  lua_setmetatable(L, -2);                               /* world */
  lua_newtable(L);                                       /* world, state */
  lua_setiuservalue(L, -2, 1);                           /* world */
  lw->w = new_core_world(L);
  if (lw->w == NULL) return ecsl_error(L, NULL, "ecs.world", ECS_ERR_NOMEM, NULL, 0);
  if ((err = ecs_world_set_threads(lw->w, (uint32_t)threads)) != ECS_ERR_OK)
    return ecsl_error(L, NULL, "ecs.world", err, "could not start the threads", 0);
  ecsl_open_world_fields(L, lua_gettop(L));
  ecsl_charge(L, lw);
  return 1;
}


/*
** world:close(); also __close. Idempotent. The world is closed at once;
** its core memory goes now, or when the calls in progress on it return.
*/
int ecsl_l_world_close(lua_State *L) {
  lworld *lw = ecsl_to_lworld(L, 1);
  if (lw->w != NULL) {
    lw->doomed = lw->w;
    lw->w = NULL;
    ecsl_components_world_closed(L, 1);
    ecsl_snapshot_world_closed(L, 1);
    if (lw->busy == 0) ecsl_world_release(lw);
  }
  return 0;
}

/*
** __gc: nothing can be running on an unreachable world (every call keeps
** its self, which keeps the world, on the stack), so release everything.
*/
int ecsl_l_world_gc(lua_State *L) {
  /* never raises: before 5.4 an error in __gc reaches the allocating call
  ** (a foreign userdata given the world metatable is not ours to close) */
  lworld *lw = ecsl_test_lworld(L, 1);
  if (lw == NULL) return 0;
  ecsl_l_world_close(L);
  if (lw->doomed != NULL) ecsl_world_release(lw);
  return 0;
}

/* world:create() -> e;  world:create(n) -> { e1, ..., en } */
int ecsl_l_world_create(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  ecs_err err;
  if (lua_isnoneornil(L, 2)) {
    ecs_entity e;
    err = ecs_create(w, &e);
    if (err != ECS_ERR_OK) return ecs_lua_error(L, "world:create", err);
    push_entity(L, e);
    ecsl_charge(L, self_lworld(L));
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
    /* an allocation may run a finalizer that closes the world: look again */
    w = ecs_lua_check_world(L, 1);
    err = ecs_create_n(w, buf, (size_t)n);
    if (err != ECS_ERR_OK) return ecs_lua_error(L, "world:create", err);
    for (lua_Integer i = 0; i < n; i++) { /* array part is preallocated */
      push_entity(L, buf[i]);
      lua_rawseti(L, -3, i + 1);
    }
    lua_pop(L, 1);                                       /* ..., list */
    ecsl_charge(L, self_lworld(L));
    return 1;
  }
}

/*
** world:destroy(e) -> boolean;  world:destroy({ e1, ... }) -> number
** A list is checked whole before anything is destroyed. on_remove
** observers run for each entity in turn (ecs_destroy_report); one's error
** is raised after its entity died, the entities after it untouched.
*/
int ecsl_l_world_destroy(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, 2), done = 0;
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, 2, i);
      if (!ecs_lua_is_entity(L, -1))
        return luaL_argerror(L, 2, lua_pushfstring(L, "entity expected at "
                             "index %d, got %s", (int)i, luaL_typename(L, -1)));
      lua_pop(L, 1);
    }
    /* entity fields with a cleanup policy: one sweep for the list, after
    ** it (also when an observer's error stops it) */
    ecs_cleanup_hold(w);
    for (lua_Integer i = 1; i <= n; i++) {
      bool one;
      ecs_err err;
      lua_rawgeti(L, 2, i);
      err = ecs_destroy_report(w, check_entity(L, -1), &one);
      if (err != ECS_ERR_OK) { /* an observer's: the rest stay alive */
        if (self_lworld(L)->w != NULL) (void)ecs_cleanup_release(w);
        return ecsl_error(L, "world", "destroy", err, NULL, 0);
      }
      done += one;
      lua_pop(L, 1);
      if ((w = self_lworld(L)->w) == NULL) break; /* an observer closed it */
    }
    if (w != NULL) {
      ecs_err err = ecs_cleanup_release(w);
      if (err != ECS_ERR_OK) return ecsl_error(L, "world", "destroy", err, NULL, 0);
    }
    lua_pushinteger(L, done);
    return 1;
  } else {
    bool one;
    ecs_err err = ecs_destroy_report(w, check_entity(L, 2), &one);
    if (err != ECS_ERR_OK) return ecsl_error(L, "world", "destroy", err, NULL, 0);
    lua_pushboolean(L, one);
    return 1;
  }
}

/* world:alive(e) -> boolean */
int ecsl_l_world_alive(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  lua_pushboolean(L, ecs_alive(w, check_entity(L, 2)));
  return 1;
}

/*
** world:disable(e), world:enable(e) -> nothing; world:enabled(e) ->
** boolean (false for a dead entity). Disabled entities keep their
** components; queries skip them unless made with { disabled = true }
** (docs/queries.md, "Disabled entities").
*/
static int switch_entity(lua_State *L, bool on) {
  ecs_world *w = check_world(L, 1);
  ecs_entity e = check_entity(L, 2);
  ecs_err err = on ? ecs_entity_enable(w, e) : ecs_entity_disable(w, e);
  if (err != ECS_ERR_OK)
    return ecsl_error(L, "world", on ? "enable" : "disable", err, NULL, 2);
  return 0;
}

int ecsl_l_world_disable(lua_State *L) { return switch_entity(L, false); }
int ecsl_l_world_enable(lua_State *L) { return switch_entity(L, true); }

int ecsl_l_world_enabled(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  lua_pushboolean(L, ecs_entity_enabled(w, check_entity(L, 2)));
  return 1;
}

/* world:count() -> live entities */
int ecsl_l_world_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_count(check_world(L, 1)));
  return 1;
}

/* world:memory() -> bytes of C memory the world holds (ecs_world_memory) */
int ecsl_l_world_memory(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_world_memory(check_world(L, 1), NULL));
  return 1;
}

/*
** world:managers() -> { { name=, kind=, namespace=, records=, live=,
** bytes= }, ... }: one entry per manager the world registered, in
** registration order (ecs_manager_at, ecs_manager_stats_at). namespace is
** "component" for world:component's managers, "manager" for the others
** (transform, names, plugins). Every Lua allocation may run a finalizer
** that closes the world, so the world is checked again for each entry and
** the entry's name, the only pointer into it, is copied first.
*/
int ecsl_l_world_managers(lua_State *L) {
  size_t i = 0;
  lua_createtable(L, (int)ecs_manager_count(check_world(L, 1)), 0);
  for (;;) {
    ecs_world *w = check_world(L, 1);
    const ecs_manager_class *cls;
    const char *name;
    ecs_manager_stats st;
    void *self = ecs_manager_at(w, i, &name, &cls);
    bool component;
    if (self == NULL) break;
    /* a name is unique in its namespace: this one is a component's if
    ** the component namespace maps it to this very manager */
    component = ecs_manager_find_in(w, ECS_NS_COMPONENT, name, NULL) == self;
    ecs_manager_stats_at(w, i, &st);
    lua_pushstring(L, name);                              /* out, name */
    lua_createtable(L, 0, 6);                             /* out, name, t */
    lua_insert(L, -2);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, cls->kind != NULL ? cls->kind : "");
    lua_setfield(L, -2, "kind");
    lua_pushstring(L, component ? "component" : "manager");
    lua_setfield(L, -2, "namespace");
    lua_pushinteger(L, (lua_Integer)st.records);
    lua_setfield(L, -2, "records");
    lua_pushinteger(L, (lua_Integer)st.live);
    lua_setfield(L, -2, "live");
    lua_pushinteger(L, (lua_Integer)st.bytes);
    lua_setfield(L, -2, "bytes");
    lua_rawseti(L, -2, (lua_Integer)++i);
  }
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

/* The step is one function object for every loop (ecsl_push_cfn): a
** LuaJIT trace that guards on the iterator's identity would otherwise be
** left at every loop. */
int ecsl_l_world_entities(lua_State *L) {
  check_world(L, 1);
  ecsl_push_cfn(L, l_world_entities_next);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

/* world:check() -> true, or false and the first violated invariant (the
** core's, then the binding's records of Lua systems) */
int ecsl_l_world_check(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  const char *bad = ecs_world_check(w);
  if (bad == NULL) bad = ecsl_check_systems(L, w);
  if (bad == NULL) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  lua_pushstring(L, bad);
  return 2;
}

/*
** world:update([dt [, phase]]) -- runs the systems of the phase ("update")
** once each in their order, then a budgeted gc of every manager
** (ecs_world_update_phase). dt must be finite: the core refuses NaN and
** the infinities too (they would stay in what a fixed-interval system is
** owed), and this says which argument.
*/
int ecsl_l_world_update(lua_State *L) {
  double dt;
  const char *phase = "update";
  check_world(L, 1);
  dt = (double)luaL_optnumber(L, 2, 0.0);
  if (!isfinite(dt))
    return luaL_argerror(L, 2, lua_pushfstring(L, "dt must be a finite "
                         "number, got %f", (lua_Number)dt));
  if (!lua_isnoneornil(L, 3)) phase = check_text(L, 3, NULL, "world:update");
  lua_settop(L, 3); /* the phase's text stays held at 3 */
  if (!ecsl_run_systems(L, dt, phase)) return 0; /* a system closed the world */
  ecs_lua_drain_refs(L, 1); /* components section: release dropped values */
  ecsl_charge(L, self_lworld(L)); /* the systems' growth, and plugins' since */
  return 0;
}

/* world:__tostring() */
int ecsl_l_world_tostring(lua_State *L) {
  lworld *lw = ecsl_to_lworld(L, 1);
  if (lw->w == NULL) lua_pushliteral(L, "ecs.World (closed)");
  else lua_pushfstring(L, "ecs.World (%p)", (void *)lw);
  return 1;
}
