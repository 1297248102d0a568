/*
** native.c -- part of the Lua binding (src/lua/binding.h): native
** systems, C functions a plugin wraps with ecs_lua_push_native (class
** ecs.NativeSystem), and q:run(native [, dt]), which resolves their column
** specs against the query (as q:columns does) and runs them through the
** core (ecs_query_run_opts: split over the world's threads when the
** native says it may be, ecs_lua_native_parallel). world:system takes
** them too (system.c).
*/
#include "binding.h"

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
  nv->parallel = 0;
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

void ecs_lua_native_parallel(lua_State *L, int idx) {
  lnative *nv = (lnative *)ecsl_test_object(L, idx, &ecsl_native_tag);
  if (nv == NULL) ecsl_object_error(L, idx, ECS_LUA_NATIVE);
  else nv->parallel = 1;
}

/* Run the native at nidx over the query at qidx. @return entities. */
static size_t run_native(lua_State *L, int qidx, int nidx, double dt,
                         const char *fn) {
  lquery *lq = (lquery *)lua_touserdata(L, qidx);
  lnative *nv = (lnative *)lua_touserdata(L, nidx);
  ecs_column_ref cols[MAX_COLUMNS];
  size_t done;
  ecs_err err;
  uint32_t gen = ecsl_world_gen(lq->lw); /* checked after the specs' lookups */
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
  if (lq->lw->w == NULL) ecsl_closed(L);
  if (ecsl_world_gen(lq->lw) != gen)
    luaL_error(L, "%s: a component was redefined while its columns were looked up "
               "(by a finalizer)", fn);
  {
    ecs_run_opts opts;
    opts.parallel = nv->parallel != 0;
    err = ecs_query_run_opts(lq->lw->w, lq->q, cols, (uint32_t)nv->nspec, dt,
                             nv->fn, nv->ud, &opts, &done);
  }
  if (err != ECS_ERR_OK) ecsl_error(L, NULL, fn, err, NULL, 0);
  return done;
}

/* q:run(native [, dt]) -> entities processed */
int ecsl_l_query_run(lua_State *L) {
  double dt;
  ecsl_check_query(L, 1);
  if (ecsl_test_object(L, 2, &ecsl_native_tag) == NULL)
    return ecsl_object_error(L, 2, ECS_LUA_NATIVE);
  dt = (double)luaL_optnumber(L, 3, 0.0);
  lua_pushinteger(L, (lua_Integer)run_native(L, 1, 2, dt, "q:run"));
  ecsl_charge(L, ((lquery *)lua_touserdata(L, 1))->lw);
  return 1;
}

int ecsl_l_native_tostring(lua_State *L) {
  if (ecsl_test_object(L, 1, &ecsl_native_tag) == NULL)
    return ecsl_object_error(L, 1, ECS_LUA_NATIVE);
  lua_getiuservalue(L, 1, 2);
  lua_pushfstring(L, "ecs.NativeSystem (%s)", lua_tostring(L, -1));
  return 1;
}
