/*
** system.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

/* ----------------------------------------------------------------------
** Native systems: C functions wrapped by ecs_lua_push_native, resolved
** against a query when run (column specs as in q:columns).
** ------------------------------------------------------------------- */


void ecs_lua_push_native(lua_State *L, const char *name, ecs_system_fn fn,
                         void *ud, const char *const *specs, int nspecs) {
  lnative *nv;
  luaL_argcheck(L, nspecs >= 0 && nspecs <= MAX_COLUMNS, 1,
                "too many columns for a native system");
  nv = (lnative *)lua_newuserdatauv(L, sizeof *nv, 3);
  ecsl_init_head(&nv->h, &ecsl_native_tag, NULL);
  nv->fn = fn;
  nv->ud = ud;
  nv->nspec = nspecs;
  luaL_setmetatable(L, ECS_LUA_NATIVE);
  lua_createtable(L, nspecs, 0);
  for (int k = 0; k < nspecs; k++) {
    lua_pushstring(L, specs[k]);
    lua_rawseti(L, -2, k + 1);
  }
  lua_setiuservalue(L, -2, 1);
  lua_pushstring(L, name);
  lua_setiuservalue(L, -2, 2);
}

/* Run the native at nidx over the query at qidx. @return entities. */
static size_t run_native(lua_State *L, int qidx, int nidx, double dt,
                         const char *fn) {
  lquery *lq = (lquery *)lua_touserdata(L, qidx);
  lnative *nv = (lnative *)lua_touserdata(L, nidx);
  ecs_column_ref cols[MAX_COLUMNS];
  size_t done;
  ecs_err err;
  luaL_checkstack(L, 4, NULL);
  lua_getiuservalue(L, nidx, 1);                          /* specs */
  for (int k = 0; k < nv->nspec; k++) {
    colspec s;
    lua_rawgeti(L, -1, k + 1);
    s = ecsl_check_spec(L, qidx, lua_gettop(L), fn);
    if (s.term == ENTITY_TERM)
      luaL_error(L, "%s: 'entity' is not a column of native systems (they "
                 "get view->entities)", fn);
    lua_pop(L, 1);
    cols[k].c = ecs_query_with(lq->q, s.term);
    cols[k].field = s.field;
    cols[k].write = s.write != 0;
  }
  lua_pop(L, 1);
  if (lq->lw->w == NULL) luaL_error(L, "attempt to use a closed world");
  err = ecs_query_run(lq->lw->w, lq->q, cols, (uint32_t)nv->nspec, dt, nv->fn,
                      nv->ud, &done);
  if (err != ECS_ERR_OK) luaL_error(L, "%s: %s", fn, ecs_strerror(err));
  return done;
}

/* q:run(native [, dt]) -> entities processed */
static int l_query_run(lua_State *L) {
  double dt;
  ecsl_check_query(L, 1);
  if (ecsl_test_object(L, 2, &ecsl_native_tag) == NULL)
    return ecsl_object_error(L, 2, ECS_LUA_NATIVE);
  dt = (double)luaL_optnumber(L, 3, 0.0);
  lua_pushinteger(L, (lua_Integer)run_native(L, 1, 2, dt, "q:run"));
  ecsl_charge(L, ((lquery *)lua_touserdata(L, 1))->lw);
  return 1;
}

static int l_native_tostring(lua_State *L) {
  if (ecsl_test_object(L, 1, &ecsl_native_tag) == NULL)
    return ecsl_object_error(L, 1, ECS_LUA_NATIVE);
  lua_getiuservalue(L, 1, 2);
  lua_pushfstring(L, "ecs.NativeSystem (%s)", lua_tostring(L, -1));
  return 1;
}

/* ----------------------------------------------------------------------
** Systems and world:update
** ------------------------------------------------------------------- */

static const char *const kind_name[] = { "", "lua", "expression", "native" };

/* Push the world's system list (creating it). */
static int push_systems(lua_State *L, int widx) {
  ecsl_need_state_field(L, widx, &ecsl_systems_key);
  return lua_gettop(L);
}

/* The position of the system named by the string at nidx in the list, or 0. */
static lua_Integer find_system(lua_State *L, int list, int nidx) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, list);
  for (lua_Integer k = 1; k <= n; k++) {
    int eq;
    lua_rawgeti(L, list, k);
    lua_rawgeti(L, -1, SYS_NAME);
    eq = lua_rawequal(L, -1, nidx);
    lua_pop(L, 2);
    if (eq) return k;
  }
  return 0;
}

/*
** world:system(name, query, fn | expr | native [, params])
** world:system(name, fn)  -- a Lua system with no query
*/
int ecsl_l_world_system(lua_State *L) {
  lquery *lq = NULL;
  int kind, list;
  check_world(L, 1);
  check_text(L, 2, NULL, "world:system");
  if (lua_type(L, 3) == LUA_TFUNCTION && lua_isnone(L, 4)) {
    lua_pushboolean(L, 0);                                /* no query */
    lua_insert(L, 3);
  } else {
    lq = ecsl_check_query(L, 3);
    if (lq->lw != ecsl_to_lworld(L, 1))
      return luaL_argerror(L, 3, "query of another world");
  }
  switch (lua_type(L, 4)) {
  case LUA_TFUNCTION: kind = KIND_LUA; break;
  case LUA_TSTRING: kind = KIND_EXPR; break;
  default:
    if (ecsl_test_object(L, 4, &ecsl_native_tag) == NULL)
      return luaL_typeerror(L, 4, "function, expression or native system");
    kind = KIND_NATIVE;
  }
  if (!lua_isnoneornil(L, 5)) luaL_checktype(L, 5, LUA_TTABLE);
  lua_settop(L, 5);
  list = push_systems(L, 1);                              /* 6 */
  if (find_system(L, list, 2) != 0)
    return luaL_error(L, "world:system: a system named '%s' already exists",
                      lua_tostring(L, 2));
  if (kind == KIND_EXPR) { /* compiled and checked ecsl_now; the text is kept */
    double v[ECS_PROGRAM_MAX_PARAMS];
    ecsl_program_params(L, 3, 4, lua_isnil(L, 5) ? 0 : 5, v, 1, 0.0, "world:system");
  } else if (kind == KIND_NATIVE) {
    lnative *nv = (lnative *)lua_touserdata(L, 4);
    lua_getiuservalue(L, 4, 1);                           /* check its specs */
    for (int k = 0; k < nv->nspec; k++) {
      lua_rawgeti(L, -1, k + 1);
      if (ecsl_check_spec(L, 3, lua_gettop(L), "world:system").term == ENTITY_TERM)
        return luaL_error(L, "world:system: 'entity' is not a column of "
                          "native systems");
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_createtable(L, SYS__COUNT - 1, 0);                  /* 7: record */
  lua_pushvalue(L, 2);
  lua_rawseti(L, 7, SYS_NAME);
  lua_pushvalue(L, 3);
  lua_rawseti(L, 7, SYS_QUERY);
  lua_pushinteger(L, kind);
  lua_rawseti(L, 7, SYS_KIND);
  lua_pushvalue(L, 4);
  lua_rawseti(L, 7, SYS_BODY);
  if (lua_isnil(L, 5)) lua_pushboolean(L, 0);
  else lua_pushvalue(L, 5);
  lua_rawseti(L, 7, SYS_PARAMS);
  for (int k = SYS_CALLS; k <= SYS_ENTITIES; k++) {
    lua_pushinteger(L, 0);
    if (k == SYS_SECONDS) {
      lua_pop(L, 1);
      lua_pushnumber(L, 0.0);
    }
    lua_rawseti(L, 7, k);
  }
  lua_rawseti(L, list, (lua_Integer)lua_rawlen(L, list) + 1);
  ecsl_charge(L, self_lworld(L)); /* a compiled program */
  return 0;
}

/* world:remove_system(name) -> boolean. The list is replaced, not edited. */
int ecsl_l_world_remove_system(lua_State *L) {
  lua_Integer at, n;
  int list;
  check_world(L, 1);
  check_text(L, 2, NULL, "world:remove_system");
  list = push_systems(L, 1);
  at = find_system(L, list, 2);
  if (at == 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  n = (lua_Integer)lua_rawlen(L, list);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer k = 1, j = 1; k <= n; k++) {
    if (k == at) continue;
    lua_rawgeti(L, list, k);
    lua_rawseti(L, -2, j++);
  }
  lua_getiuservalue(L, 1, 1);
  lua_insert(L, -2);
  lua_rawsetp(L, -2, &ecsl_systems_key);
  lua_pushboolean(L, 1);
  return 1;
}

/* world:systems() -> { names in run order } */
int ecsl_l_world_systems(lua_State *L) {
  lua_Integer n;
  int list;
  check_world(L, 1);
  list = push_systems(L, 1);
  n = (lua_Integer)lua_rawlen(L, list);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, list, k);
    lua_rawgeti(L, -1, SYS_NAME);
    lua_rawseti(L, -3, k);
    lua_pop(L, 1);
  }
  return 1;
}

/* world:stats() -> { { name=, kind=, calls=, seconds=, entities= }, ... } */
int ecsl_l_world_stats(lua_State *L) {
  lua_Integer n;
  int list;
  check_world(L, 1);
  list = push_systems(L, 1);
  n = (lua_Integer)lua_rawlen(L, list);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, list, k);                              /* list, out, rec */
    lua_createtable(L, 0, 5);                             /* ..., rec, s */
    lua_rawgeti(L, -2, SYS_NAME);
    lua_setfield(L, -2, "name");
    lua_rawgeti(L, -2, SYS_KIND);
    lua_pushstring(L, kind_name[lua_tointeger(L, -1)]);
    lua_setfield(L, -3, "kind");
    lua_pop(L, 1);
    lua_rawgeti(L, -2, SYS_CALLS);
    lua_setfield(L, -2, "calls");
    lua_rawgeti(L, -2, SYS_SECONDS);
    lua_setfield(L, -2, "seconds");
    lua_rawgeti(L, -2, SYS_ENTITIES);
    lua_setfield(L, -2, "entities");
    lua_rawseti(L, -3, k);
    lua_pop(L, 1);
  }
  return 1;
}

/* world:reset_stats() */
int ecsl_l_world_reset_stats(lua_State *L) {
  lua_Integer n;
  int list;
  check_world(L, 1);
  list = push_systems(L, 1);
  n = (lua_Integer)lua_rawlen(L, list);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, list, k);
    lua_pushinteger(L, 0);
    lua_rawseti(L, -2, SYS_CALLS);
    lua_pushnumber(L, 0.0);
    lua_rawseti(L, -2, SYS_SECONDS);
    lua_pushinteger(L, 0);
    lua_rawseti(L, -2, SYS_ENTITIES);
    lua_pop(L, 1);
  }
  return 0;
}

/* Monotonic wall time in seconds (the core's clock). */
double ecsl_now(void) { return ecs_clock(); }

/*
** Run the systems of the world at 1 in order. The list is held on the
** stack, so a system that adds (appended, not run this update) or removes
** (a new list) systems does not disturb this walk. A Lua system's error
** propagates unchanged; nothing in C is left locked across the call.
*/
void ecsl_run_systems(lua_State *L, double dt) {
  lworld *lw = ecsl_to_lworld(L, 1);
  int list = push_systems(L, 1);
  lua_Integer n = (lua_Integer)lua_rawlen(L, list);
  for (lua_Integer k = 1; k <= n; k++) {
    int rec, kind;
    double t0;
    size_t done = 0;
    lua_rawgeti(L, list, k);
    rec = lua_gettop(L);
    lua_rawgeti(L, rec, SYS_QUERY);                       /* rec, q */
    lua_rawgeti(L, rec, SYS_KIND);
    kind = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    lua_rawgeti(L, rec, SYS_BODY);                        /* rec, q, body */
    t0 = ecsl_now();
    if (kind == KIND_LUA) { /* fn(dt, q): its count, or the query's */
      int isint;
      lua_Integer cnt;
      lua_pushnumber(L, (lua_Number)dt);
      if (lua_toboolean(L, rec + 1)) lua_pushvalue(L, rec + 1);
      else lua_pushnil(L);                                /* no query */
      /* the body is user code by design: this call is not in progress
      ** meanwhile (it keeps no core pointer across it), so a close
      ** there releases the world at once, and an error leaves no count */
      lw->busy--;
      lua_call(L, 2, 1);                                  /* rec, q, r */
      lw->busy++;
      if (lw->w == NULL) return; /* the system closed it */
      cnt = lua_tointegerx(L, -1, &isint);
      if (isint && cnt >= 0) {
        done = (size_t)cnt;
      } else if (lua_toboolean(L, rec + 1)) {
        lquery *lq = ecsl_check_query(L, rec + 1);
        size_t matches;
        if (ecs_query_count(lq->lw->w, lq->q, &matches) == ECS_ERR_OK)
          done = matches;
      }
    } else if (kind == KIND_EXPR) { /* body: the text, compiled at most once
                                        while the query keeps it */
      double v[ECS_PROGRAM_MAX_PARAMS];
      lquery *lq = ecsl_check_query(L, rec + 1);
      ecs_program *p;
      int pidx;
      lua_rawgeti(L, rec, SYS_PARAMS);
      pidx = lua_istable(L, -1) ? lua_gettop(L) : 0;
      p = ecsl_program_params(L, rec + 1, rec + 2, pidx, v, 1, dt, "world:update");
      if (lq->lw->w == NULL) return; /* a params metamethod closed it */
      if (ecs_program_run(lq->lw->w, p, v, &done) != ECS_ERR_OK)
        luaL_error(L, "world:update: not enough memory");
    } else {
      ecsl_check_query(L, rec + 1);
      done = run_native(L, rec + 1, rec + 2, dt, "world:update");
    }
    t0 = ecsl_now() - t0;
    lua_settop(L, rec);
    lua_rawgeti(L, rec, SYS_CALLS);
    lua_pushinteger(L, lua_tointeger(L, -1) + 1);
    lua_rawseti(L, rec, SYS_CALLS);
    lua_rawgeti(L, rec, SYS_SECONDS);
    lua_pushnumber(L, lua_tonumber(L, -1) + (lua_Number)t0);
    lua_rawseti(L, rec, SYS_SECONDS);
    lua_rawgeti(L, rec, SYS_ENTITIES);
    lua_pushinteger(L, lua_tointeger(L, -1) + (lua_Integer)done);
    lua_rawseti(L, rec, SYS_ENTITIES);
    lua_settop(L, list);
  }
  lua_pop(L, 1);
}

static const luaL_Reg query_methods[] = {
  {"count", ecsl_l_query_count},
  {"entities", ecsl_l_query_entities},
  {"columns", ecsl_l_query_columns},
  {"apply", ecsl_l_query_apply},
  {"programs", ecsl_l_query_programs},
  {"run", l_query_run},
  {"components", ecsl_l_query_components},
  {NULL, NULL}
};

/* A class: methods (if any) as __index and __methods, plus metamethods. */
static void query_class(lua_State *L, const char *tname, const luaL_Reg *methods,
                        const luaL_Reg *meta) {
  luaL_newmetatable(L, tname);
  luaL_setfuncs(L, meta, 0);
  if (methods != NULL) {
    lua_newtable(L);
    ecsl_set_methods(L, methods, &ecsl_query_tag, tname);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__index");
    lua_setfield(L, -2, "__methods");
  }
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
}

void ecsl_open_queries(lua_State *L) {
  static const luaL_Reg query_meta[] = {
    {"__gc", ecsl_l_query_gc}, {"__tostring", ecsl_l_query_tostring}, {NULL, NULL}};
  static const luaL_Reg iter_meta[] = {
    {"__close", ecsl_l_qiter_close}, {"__gc", ecsl_l_qiter_close}, {NULL, NULL}};
  static const luaL_Reg columns_meta[] = {
    {"__close", ecsl_l_columns_close}, {"__gc", ecsl_l_columns_gc}, {NULL, NULL}};
  static const luaL_Reg native_meta[] = {
    {"__tostring", l_native_tostring}, {NULL, NULL}};
  query_class(L, ECS_LUA_QUERY, query_methods, query_meta);
  query_class(L, ECS_LUA_QUERY_ITER, NULL, iter_meta);
  lua_pushcfunction(L, ecsl_l_qiter_next);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ecsl_qiter_next_key);
  query_class(L, ECS_LUA_COLUMNS, NULL, columns_meta);
  query_class(L, ECS_LUA_NATIVE, NULL, native_meta);
}

