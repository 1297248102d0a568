/*
** many.c -- part of the Lua binding (src/lua/binding.h): one field of
** many entities in one call, C:get_many(list, field) and
** C:set_many(list, field, values) (docs/components.md, "Many entities at
** once"): the seeds' batch lookup (Open Sea) from Lua. The entities are
** looked up in one pass (ecs_component_lookup_n), the values cross the C
** API once each, and no method is called per entity.
*/
#include "binding.h"

/* The list at idx: a Lua array of n entities, into es (n entries).
** @return n. Raises for a non-entity element, naming its index. */
static lua_Integer read_list(lua_State *L, int idx, const lcomponent *lc,
                             const char *fn, ecs_entity **es) {
  lua_Integer n;
  luaL_checktype(L, idx, LUA_TTABLE);
  n = (lua_Integer)lua_rawlen(L, idx);
  *es = (ecs_entity *)lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof **es, 0);
  for (lua_Integer i = 0; i < n; i++) {
    lua_rawgeti(L, idx, i + 1);
    if (!ecs_lua_is_entity(L, -1))
      luaL_error(L, "%s:%s: list[%I] is not an entity (got %s)",
                 ecs_component_name(lc->c), fn, i + 1, luaL_typename(L, -1));
    (*es)[i] = ecs_lua_check_entity(L, -1);
    lua_pop(L, 1);
  }
  return n;
}

/* The refs table of the world of the manager at 1 (created if need be). */
static int push_refs(lua_State *L) {
  lua_getiuservalue(L, 1, 1);                             /* world */
  ecsl_need_state_field(L, lua_gettop(L), &ecsl_refs_key);
  lua_remove(L, -2);
  return lua_gettop(L);
}

/*
** C:get_many(list, field) -> values
** values[i] is field of list[i], nil where list[i] is dead or lacks the
** component (as C:field); values.n = #list, as table.pack sets it.
*/
static int l_get_many(lua_State *L) {
  lcomponent *lc = ecsl_self(L, lcomponent);
  ecs_entity *es;
  ecs_instance *rows;
  lua_Integer n;
  uint32_t k, gen;
  int refs = 0, out;
  if (lc->c == NULL || lc->lw->w == NULL) return ecsl_closed(L);
  k = ecsl_check_field(L, lc, 3, "get_many");
  gen = ecsl_comp_gen(lc); /* see ecsl_redefined */
  n = read_list(L, 2, lc, "get_many", &es);
  rows = (ecs_instance *)lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *rows, 0);
  if (lc->type[k] == ECS_LUA) refs = push_refs(L);
  lua_createtable(L, (int)n, 1);
  out = lua_gettop(L);
  lua_pushinteger(L, n);
  lua_setfield(L, out, "n");
  /* the allocations above may have run a finalizer that closed the world;
  ** none below allocates but the pushes, which run no Lua code */
  if (lc->lw->w == NULL) return ecsl_closed(L);
  if (ecsl_comp_gen(lc) != gen) return ecsl_redefined(L, ecs_component_name(lc->c), "get_many", lc);
  ecs_component_lookup_n(lc->lw->w, lc->c, es, rows, (size_t)n);
  for (lua_Integer i = 0; i < n; i++) {
    if (rows[i] == ECS_NO_INSTANCE) continue;
    ecsl_push_field(L, lc, k, rows[i], refs);
    lua_rawseti(L, out, i + 1);
  }
  return 1;
}

typedef struct refjob {
  uint32_t *ref;
  lua_Integer n, done;
} refjob;

/* refs, value, job (protected): n refs of value. */
static int make_refs(lua_State *L) {
  refjob *j = (refjob *)lua_touserdata(L, 3);
  for (; j->done < j->n; j->done++) {
    lua_pushvalue(L, 2);
    j->ref[j->done] = (uint32_t)luaL_ref(L, 1);
  }
  return 0;
}

/*
** n refs of the value at vidx in the refs table at refs, into out, all or
** none (making a ref may raise a memory error): @return true, or false
** with the refs made so far released and the error value on top.
*/
bool ecsl_ref_n(lua_State *L, int refs, int vidx, uint32_t *out, lua_Integer n) {
  refjob job;
  job.ref = out;
  job.n = n;
  job.done = 0;
  refs = lua_absindex(L, refs);
  vidx = lua_absindex(L, vidx);
  lua_pushcfunction(L, make_refs);
  lua_pushvalue(L, refs);
  lua_pushvalue(L, vidx);
  lua_pushlightuserdata(L, &job);
  if (lua_pcall(L, 3, 0, 0) == LUA_OK) return true;
  for (lua_Integer i = 0; i < job.done; i++) luaL_unref(L, refs, (int)out[i]);
  return false;
}

/*
** C:set_many(list, field, values)
** values: one value for every entity, or (but for lua fields, which take
** any value as it is) a Lua array of #list values. Every entity must be
** alive and have the component, and every value fit: checked whole before
** anything is written. The write itself is the core's
** (ecs_component_write_field_n); then on_set observers, entity by entity
** in order (here: an observer may close the world).
*/
static int l_set_many(lua_State *L) {
  lcomponent *lc = ecsl_self(L, lcomponent);
  ecs_entity *es;
  ecs_instance *rows;
  fvalue one, *vals = NULL;
  uint32_t k, gen, *refv = NULL;
  lua_Integer n;
  int refs = 0;
  ecs_world *w;
  ecs_err err = ECS_ERR_OK;
  if (lc->c == NULL || lc->lw->w == NULL) return ecsl_closed(L);
  k = ecsl_check_field(L, lc, 3, "set_many");
  gen = ecsl_comp_gen(lc); /* checked again before writing: see ecsl_redefined */
  lua_settop(L, 4);
  n = read_list(L, 2, lc, "set_many", &es);                   /* 5 */
  rows = (ecs_instance *)lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *rows, 0);
  if (lc->type[k] != ECS_LUA && lua_type(L, 4) == LUA_TTABLE) {
    if ((lua_Integer)lua_rawlen(L, 4) != n)
      return luaL_error(L, "%s:set_many: %I values expected (one per entity), got %I",
                        ecs_component_name(lc->c), n, (lua_Integer)lua_rawlen(L, 4));
    vals = (fvalue *)lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *vals, 0);
    for (lua_Integer i = 0; i < n; i++) {
      lua_rawgeti(L, 4, i + 1);
      ecsl_check_value(L, lua_gettop(L), lc, "set_many", k, &vals[i]);
      lua_pop(L, 1);
    }
  } else if (lc->type[k] != ECS_LUA) {
    ecsl_check_value(L, 4, lc, "set_many", k, &one);
  }
  /* every entity alive with the component (looked up again after the
  ** refs below, which may run finalizers) */
  if (lc->lw->w == NULL) return ecsl_closed(L);
  ecs_component_lookup_n(lc->lw->w, lc->c, es, rows, (size_t)n);
  for (lua_Integer i = 0; i < n; i++)
    if (rows[i] == ECS_NO_INSTANCE)
      return ecsl_error(L, ecs_component_name(lc->c), "set_many",
                        ecs_alive(lc->lw->w, es[i]) ? ECS_ERR_MISSING : ECS_ERR_DEAD,
                        lua_pushfstring(L, "list[%I]: %s", i + 1,
                                        ecs_strerror(ecs_alive(lc->lw->w, es[i])
                                                         ? ECS_ERR_MISSING
                                                         : ECS_ERR_DEAD)),
                        0);
  if (lc->type[k] == ECS_LUA && n > 0) {
    refs = push_refs(L);
    refv = (uint32_t *)lua_newuserdatauv(L, (size_t)n * sizeof *refv, 0);
    memset(refv, 0, (size_t)n * sizeof *refv); /* nil: no refs */
    if (!lua_isnil(L, 4) && !ecsl_ref_n(L, refs, 4, refv, n)) return lua_error(L);
    if (lc->lw->w == NULL) err = ECS_ERR_CLOSED;
    else if (ecsl_comp_gen(lc) != gen) err = ECS_ERR_SCHEMA;
    else {
      ecs_component_lookup_n(lc->lw->w, lc->c, es, rows, (size_t)n);
      for (lua_Integer i = 0; i < n && err == ECS_ERR_OK; i++)
        if (rows[i] == ECS_NO_INSTANCE) err = ECS_ERR_MISSING;
    }
    if (err != ECS_ERR_OK) {
      for (lua_Integer i = 0; i < n; i++)
        if (refv[i] != 0) luaL_unref(L, refs, (int)refv[i]);
      if (err == ECS_ERR_CLOSED) return ecsl_closed(L);
      if (err == ECS_ERR_SCHEMA)
        return ecsl_redefined(L, ecs_component_name(lc->c), "set_many", lc);
      return ecsl_error(L, ecs_component_name(lc->c), "set_many", err, NULL, 0);
    }
  }
  if (ecsl_comp_gen(lc) != gen)
    return ecsl_redefined(L, ecs_component_name(lc->c), "set_many", lc);
  w = lc->lw->w;
  ecs_component_write_field_n(w, lc->c, k, rows, (size_t)n, vals, &one, refv);
  for (lua_Integer i = 0; refv != NULL && i < n; i++) /* the replaced refs */
    if (refv[i] != 0) luaL_unref(L, refs, (int)refv[i]);
  if (((const ecs_world_head *)(const void *)w)->listeners != 0) {
    for (lua_Integer i = 0; i < n && err == ECS_ERR_OK; i++) {
      if (lc->lw->w == NULL) break;
      if (ecs_component_lookup(lc->lw->w, lc->c, es[i]) == ECS_NO_INSTANCE)
        continue; /* an observer removed it or destroyed the entity */
      err = ecs_manager_notify_listeners(lc->lw->w, lc->c, es[i], ECS_EVENT_SET);
    }
    if (err != ECS_ERR_OK)
      return ecsl_error(L, ecs_component_name(lc->c), "set_many", err, NULL, 0);
  }
  return 0;
}

int ecsl_l_comp_get_many(lua_State *L) { return l_get_many(L); }
int ecsl_l_comp_set_many(lua_State *L) { return l_set_many(L); }
