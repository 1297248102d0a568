/*
** query.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

/* ======================================================================
** Queries and systems (docs/queries.md)
**
** A query is a full userdata of class ECS_LUA_QUERY (lquery) with user
** values: 1 the world userdata (keeps it alive; closed check), 2 a cache
** table (resolved column specs, one reusable iterator and one reusable
** state each for q:columns, q:each and q:each_chunk; compiled programs
** live in the core query), 3 the list of its
** managers (keeps them alive; q:components()). The core query (query.h)
** belongs to the core world, which frees it at close; the userdata frees
** it on __gc while the world is open.
**
** Systems live in the core (include/system.h); system.c keeps the Lua values
** they need (their query userdata among them) in the world's state table.
** ==================================================================== */

/* rows per chunk of q:columns */
/* most specs in one q:columns call or one native system */




lquery *ecsl_check_query(lua_State *L, int idx) {
  lquery *lq = (lquery *)ecsl_test_object(L, idx, &ecsl_query_tag);
  if (lq == NULL) ecsl_object_error(L, idx, ECS_LUA_QUERY);
  if (lq->q == NULL || lq->lw->w == NULL) ecsl_closed(L);
  return lq;
}

int ecsl_query_fail(lua_State *L, const char *fn, ecs_err err) {
  return ecsl_error(L, "q", fn, err, NULL, 0);
}

/* Push cache table slot k of the query at qidx, creating it. */
int ecsl_push_query_cache(lua_State *L, int qidx, int k) {
  lua_getiuservalue(L, qidx, 2);                          /* cache */
  if (lua_rawgeti(L, -1, k) == LUA_TNIL) {                /* cache, nil */
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, k);
  }
  lua_remove(L, -2);
  return lua_gettop(L);
}

/* The manager at idx (stack index arg of the call), of the world lw. */
static ecs_component *query_term(lua_State *L, int idx, lworld *lw, int arg) {
  lcomponent *lc;
  ecs_component *tc;
  if (!ecsl_is_comp(L, idx)) {
    if ((tc = ecsl_plugin_term(L, idx, lw, arg)) != NULL) return tc;
    luaL_argerror(L, arg, lua_pushfstring(L, "component expected, got %s",
                                          ecsl_value_type_name(L, idx)));
  }
  lc = (lcomponent *)lua_touserdata(L, idx);
  if (lc->c == NULL || lc->lw->w == NULL)
    ecsl_closed(L);
  if (lc->lw != lw) luaL_argerror(L, arg, "component of another world");
  return lc->c;
}

/*
** world:query's error for the core's code: a duplicate is named (its name
** is a word the core's code cannot carry), "world:query: component
** 'Position' listed twice".
*/
static int query_new_error(lua_State *L, ecs_component *const *term,
                           uint32_t n, ecs_err err) {
  const char *detail = NULL;
  if (err == ECS_ERR_DUPLICATE_TERM)
    for (uint32_t i = 0; i < n && detail == NULL; i++)
      for (uint32_t j = 0; j < i; j++)
        if (term[i] == term[j]) {
          detail = lua_pushfstring(L, "component '%s' listed twice",
                                   ecs_component_name(term[i]));
          break;
        }
  return ecsl_error(L, "world", "query", err, detail, 0);
}

/*
** The list at key of the query table at 2 (without, changed, added): its
** managers appended to out[*n ..] (at most max in all), their objects to
** the table at vals (from index *n + 1 on). Absent: nothing.
*/
static void read_terms(lua_State *L, const char *key, lworld *lw,
                       ecs_component **out, uint32_t *n, uint32_t max,
                       int vals) {
  lua_Integer m;
  int t;
  lua_pushstring(L, key);
  t = lua_rawget(L, 2); /* raw: no metamethod of the query table runs */
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  if (t != LUA_TTABLE)
    luaL_error(L, "world:query: '%s' must be a list of components, got %s",
               key, luaL_typename(L, -1));
  ecsl_check_keys(L, -1, 2, "world:query", NULL, true);
  m = (lua_Integer)lua_rawlen(L, -1);
  if (m > (lua_Integer)(max - *n))
    ecsl_error(L, "world", "query", ECS_ERR_TOO_MANY_TERMS, NULL, 0);
  for (lua_Integer k = 1; k <= m; k++) {
    lua_rawgeti(L, -1, k);
    out[(*n)++] = query_term(L, -1, lw, 2);
    lua_rawseti(L, vals, (lua_Integer)*n);
  }
  lua_pop(L, 1);
}

/* Whether c is among list[0 .. n). */
static bool has_term(ecs_component *const *list, uint32_t n,
                     const ecs_component *c) {
  for (uint32_t i = 0; i < n; i++)
    if (list[i] == c) return true;
  return false;
}

/*
** world:query(C1, C2, ...) or world:query({ C1, C2, without = { C3 },
** changed = { C1 }, added = { C4 } }). A manager of changed or added that
** is not among the components joins them (after the listed ones).
** Terms are checked and collected in a list (user value 3: with, then
** without) before the core query is made, so nothing raises after it
** exists but the change terms' memory, which frees it again.
*/
typedef struct qterms {
  ecs_component *term[ECS_QUERY_MAX_TERMS], *wo[ECS_QUERY_MAX_TERMS];
  ecs_component *chg[ECS_QUERY_MAX_TERMS], *add[ECS_QUERY_MAX_TERMS];
  ecs_component *any[ECS_QUERY_MAX_TERMS], *opt[ECS_QUERY_MAX_TERMS];
  uint32_t nwith, nwithout, nchg, nadd, nany, nopt;
  uint32_t opt_mask; /* bit k: "with" term k is optional (after the others) */
  bool disabled; /* { disabled = true }: disabled entities match too */
} qterms;

/*
** The table form, world:query{ A, B, without = {...}, changed = {...},
** added = {...} } (at 2): the terms into t, their objects into the list
** at list (with, then without); change terms not among the components
** join them.
*/
static void read_table_terms(lua_State *L, lworld *lw, int list, qterms *t) {
  static const char *const keys[] = {"without", "changed", "added", "any",
                                     "optional", "disabled", NULL};
  lua_Integer n = (lua_Integer)lua_rawlen(L, 2);
  int vals;
  ecsl_check_keys(L, 2, 2, "world:query", keys, true);
  lua_pushliteral(L, "disabled");
  switch (lua_rawget(L, 2)) {
  case LUA_TNIL: break;
  case LUA_TBOOLEAN: t->disabled = lua_toboolean(L, -1); break;
  default:
    luaL_error(L, "world:query: bad argument #%d (disabled must be a "
               "boolean, got %s)", ecsl_arg_number(L, 2), luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  if (n > (lua_Integer)ECS_QUERY_MAX_TERMS)
    ecsl_error(L, "world", "query", ECS_ERR_TOO_MANY_TERMS, NULL, 0);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, 2, k);
    t->term[t->nwith++] = query_term(L, -1, lw, 2);
    lua_rawseti(L, list, (lua_Integer)t->nwith);
  }
  lua_createtable(L, 0, 0);                               /* without's */
  vals = lua_gettop(L);
  read_terms(L, "without", lw, t->wo, &t->nwithout, ECS_QUERY_MAX_TERMS, vals);
  lua_createtable(L, 0, 0);                               /* changed's */
  read_terms(L, "changed", lw, t->chg, &t->nchg, ECS_QUERY_MAX_TERMS, vals + 1);
  lua_createtable(L, 0, 0);                               /* added's */
  read_terms(L, "added", lw, t->add, &t->nadd, ECS_QUERY_MAX_TERMS, vals + 2);
  lua_createtable(L, 0, 0);                               /* any's */
  read_terms(L, "any", lw, t->any, &t->nany, ECS_QUERY_MAX_TERMS, vals + 3);
  lua_createtable(L, 0, 0);                               /* optional's */
  read_terms(L, "optional", lw, t->opt, &t->nopt, ECS_QUERY_MAX_TERMS, vals + 4);
  for (uint32_t j = 0; j < t->nchg + t->nadd; j++) {
    ecs_component *c = j < t->nchg ? t->chg[j] : t->add[j - t->nchg];
    if (has_term(t->term, t->nwith, c) || has_term(t->wo, t->nwithout, c))
      continue;
    if (t->nwith + t->nwithout >= ECS_QUERY_MAX_TERMS)
      ecsl_error(L, "world", "query", ECS_ERR_TOO_MANY_TERMS, NULL, 0);
    t->term[t->nwith++] = c;
    lua_rawgeti(L, j < t->nchg ? vals + 1 : vals + 2,
                (lua_Integer)(j < t->nchg ? j + 1 : j - t->nchg + 1));
    lua_rawseti(L, list, (lua_Integer)t->nwith);
  }
  /* the optional terms: "with" terms after the others (the first term,
  ** the driver, is a required one) */
  for (uint32_t j = 0; j < t->nopt; j++) {
    ecs_component *c = t->opt[j];
    if (t->nwith == 0) luaL_argerror(L, 2, "at least one component expected "
                                     "besides the optional ones");
    for (uint32_t i = 0; i < t->nchg + t->nadd; i++)
      if ((i < t->nchg ? t->chg[i] : t->add[i - t->nchg]) == c)
        luaL_error(L, "world:query: component '%s' is optional and in '%s'",
                   ecs_component_name(c), i < t->nchg ? "changed" : "added");
    if (t->nwith >= ECS_QUERY_MAX_TERMS)
      ecsl_error(L, "world", "query", ECS_ERR_TOO_MANY_TERMS, NULL, 0);
    t->opt_mask |= 1u << t->nwith;
    t->term[t->nwith++] = c;
    lua_rawgeti(L, vals + 4, (lua_Integer)j + 1);
    lua_rawseti(L, list, (lua_Integer)t->nwith);
  }
  if (t->nwithout > ECS_QUERY_MAX_TERMS - t->nwith)
    ecsl_error(L, "world", "query", ECS_ERR_TOO_MANY_TERMS, NULL, 0);
  for (uint32_t j = 0; j < t->nwithout; j++) {
    t->term[t->nwith + j] = t->wo[j];
    lua_rawgeti(L, vals, (lua_Integer)j + 1);
    lua_rawseti(L, list, (lua_Integer)(t->nwith + j + 1));
  }
  if (t->nany > ECS_QUERY_MAX_TERMS - t->nwith - t->nwithout)
    ecsl_error(L, "world", "query", ECS_ERR_TOO_MANY_TERMS, NULL, 0);
  for (uint32_t j = 0; j < t->nany; j++) {                /* then any's */
    lua_rawgeti(L, vals + 3, (lua_Integer)j + 1);
    lua_rawseti(L, list, (lua_Integer)(t->nwith + t->nwithout + j + 1));
  }
  lua_settop(L, list);
}

/*
** The change terms of the new query lq. On failure the core query goes
** again (lq->q NULL) and the error is raised; a change term that is also
** excluded is no "with" term to the core (UNKNOWN_COMPONENT): named here.
*/
static void track_changes(lua_State *L, lworld *lw, lquery *lq,
                          const qterms *t) {
  ecs_err err = ecs_query_track_changes(lw->w, lq->q, t->chg, t->nchg, t->add,
                                        t->nadd);
  if (err == ECS_ERR_OK) return;
  ecs_query_free(lw->w, lq->q);
  lq->q = NULL;
  if (err == ECS_ERR_UNKNOWN_COMPONENT)
    for (uint32_t j = 0; j < t->nchg + t->nadd; j++) {
      ecs_component *c = j < t->nchg ? t->chg[j] : t->add[j - t->nchg];
      if (has_term(t->wo, t->nwithout, c))
        luaL_error(L, "world:query: component '%s' is both excluded and in "
                   "'%s'", ecs_component_name(c),
                   j < t->nchg ? "changed" : "added");
    }
  ecsl_error(L, "world", "query", err, NULL, 0);
}

int ecsl_l_world_query(lua_State *L) {
  qterms t;
  lworld *lw;
  lquery *lq;
  ecs_err err;
  int top, list;
  check_world(L, 1);
  lw = ecsl_to_lworld(L, 1);
  top = lua_gettop(L);
  t.nwith = t.nwithout = t.nchg = t.nadd = t.nany = t.nopt = 0;
  t.opt_mask = 0;
  t.disabled = false;
  lua_createtable(L, top, 1);                             /* list */
  list = lua_gettop(L);
  if (top == 2 && lua_type(L, 2) == LUA_TTABLE) {
    read_table_terms(L, lw, list, &t);
  } else {
    if (top - 1 > (int)ECS_QUERY_MAX_TERMS)
      return ecsl_error(L, "world", "query", ECS_ERR_TOO_MANY_TERMS, NULL, 0);
    for (int k = 2; k <= top; k++) {
      t.term[t.nwith++] = query_term(L, k, lw, k);
      lua_pushvalue(L, k);
      lua_rawseti(L, list, (lua_Integer)t.nwith);
    }
  }
  if (t.nwith == 0 && top == 2 && lua_type(L, 2) == LUA_TTABLE)
    return luaL_argerror(L, 2, "at least one component expected");
  lua_pushinteger(L, (lua_Integer)t.nwith);
  lua_setfield(L, list, "n");                             /* with count */
  lua_pushinteger(L, (lua_Integer)t.nany);
  lua_setfield(L, list, "nany");                          /* any's, last */
  lua_pushinteger(L, (lua_Integer)t.opt_mask);
  lua_setfield(L, list, "optional");                      /* with's bits */
  lq = (lquery *)lua_newuserdatauv(L, sizeof *lq, 3);     /* list, q */
  ecsl_init_head(&lq->h, &ecsl_query_tag, lw);
  lq->lw = lw;
  lq->q = NULL;
  lq->nwith = t.nwith;
  lq->schema_gen = ecsl_world_gen(lq->lw);
  luaL_setmetatable(L, ECS_LUA_QUERY);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  lua_newtable(L);
  lua_setiuservalue(L, -2, 2);
  lua_pushvalue(L, list);
  lua_setiuservalue(L, -2, 3);
  if (lw->w == NULL) return ecsl_closed(L);
  /* the core checks the terms (none, too many, twice): its code decides */
  err = ecs_query_new(lw->w, t.term, t.nwith, t.term + t.nwith, t.nwithout,
                      &lq->q);
  if (err != ECS_ERR_OK) {
    lq->q = NULL;
    return query_new_error(L, t.term, t.nwith + t.nwithout, err);
  }
  ecs_query_include_disabled(lq->q, t.disabled);
  (void)ecs_query_set_optional(lq->q, t.opt_mask); /* new: cannot fail */
  if (t.nany > 0 &&
      (err = ecs_query_require_any(lw->w, lq->q, t.any, t.nany)) != ECS_ERR_OK) {
    ecs_component *all[ECS_QUERY_MAX_TERMS];
    uint32_t n = t.nwith + t.nwithout;
    ecs_query_free(lw->w, lq->q);
    lq->q = NULL;
    memcpy(all, t.term, n * sizeof *all);
    for (uint32_t j = 0; j < t.nany && n < ECS_QUERY_MAX_TERMS; j++) all[n++] = t.any[j];
    return query_new_error(L, all, n, err);
  }
  if (t.nchg + t.nadd > 0) track_changes(L, lw, lq, &t);
  ecsl_charge(L, lw);
  return 1;
}

/* __gc: free the core query while the world is open. Never raises. */
int ecsl_l_query_gc(lua_State *L) {
  lquery *lq = (lquery *)ecsl_test_object(L, 1, &ecsl_query_tag);
  if (lq == NULL) return 0;
  if (lq->q != NULL && lq->lw->w != NULL) ecs_query_free(lq->lw->w, lq->q);
  lq->q = NULL;
  return 0;
}

/* q:count() -> live matches */
int ecsl_l_query_count(lua_State *L) {
  lquery *lq = ecsl_check_query(L, 1);
  size_t n;
  ecs_err err = ecs_query_count(lq->lw->w, lq->q, &n);
  if (err != ECS_ERR_OK) return ecsl_query_fail(L, "count", err);
  lua_pushinteger(L, (lua_Integer)n);
  ecsl_charge(L, lq->lw); /* a rebuilt match list */
  return 1;
}

/* q:components() -> { with managers }, { without managers } */
int ecsl_l_query_components(lua_State *L) {
  lquery *lq = ecsl_check_query(L, 1);
  lua_Integer n;
  lua_Integer nany, opt;
  lua_getiuservalue(L, 1, 3);                             /* list */
  n = (lua_Integer)lua_rawlen(L, -1);
  lua_getfield(L, -1, "nany");
  nany = lua_tointeger(L, -1);
  lua_getfield(L, -2, "optional");
  opt = lua_tointeger(L, -1);
  lua_pop(L, 2);
  n -= nany;                                              /* with, without */
  lua_createtable(L, (int)lq->nwith, 0);                  /* list, with */
  lua_createtable(L, (int)(n - (lua_Integer)lq->nwith), 0);
  lua_createtable(L, (int)nany, 0);
  lua_createtable(L, 0, 0);                   /* list, with, wo, any, opt */
  for (lua_Integer k = 1; k <= n + nany; k++) {
    int to = k <= (lua_Integer)lq->nwith ? ((opt >> (k - 1) & 1) ? -1 : -4)
             : k <= n ? -3 : -2;
    lua_Integer at = (lua_Integer)lua_rawlen(L, to) + 1;
    lua_rawgeti(L, -5, k);
    lua_rawseti(L, to - 1, at);
  }
  return 4;
}

int ecsl_l_query_tostring(lua_State *L) {
  lquery *lq = (lquery *)ecsl_test_object(L, 1, &ecsl_query_tag);
  if (lq == NULL) return ecsl_object_error(L, 1, ECS_LUA_QUERY);
  if (lq->q == NULL || lq->lw->w == NULL) lua_pushliteral(L, "ecs.Query (closed)");
  else lua_pushfstring(L, "ecs.Query (%p)", (void *)lq);
  return 1;
}

/* ----------------------------------------------------------------------
** q:entities(): a pinned snapshot walked by a reusable iterator object
** whose __close (the generic for's fourth value) and __gc unpin it.
** ------------------------------------------------------------------- */


static void qiter_end(lqiter *qi) {
  if (qi->active && qi->lq->q != NULL && qi->lq->lw->w != NULL)
    ecs_query_iter_end(qi->lq->lw->w, &qi->it);
  qi->active = 0;
}

int ecsl_l_qiter_close(lua_State *L) {
  lqiter *qi = (lqiter *)ecsl_test_object(L, 1, &ecsl_qiter_tag);
  if (qi != NULL) qiter_end(qi);
  return 0;
}

/*
** The per-entity step, made once (ecsl_open_queries). Checking the state is a
** look at its lhead, not the registry lookup by name of luaL_checkudata.
*/

int ecsl_l_qiter_next(lua_State *L) {
  lqiter *qi = (lqiter *)ecsl_test_object(L, 1, &ecsl_qiter_tag);
  ecs_entity e;
  if (qi == NULL) return ecsl_object_error(L, 1, ECS_LUA_QUERY_ITER);
  lua_settop(L, 1);
  if (!qi->active) return 0;
  if (qi->lq->q == NULL || qi->lq->lw->w == NULL)
    return ecsl_closed(L);
  if (!ecs_query_iter_next(qi->lq->lw->w, &qi->it, &e)) {
    qiter_end(qi);
    /* the pass ran to its end, unless a whole-world load ended it */
    if (!ecs_query_iter_loaded(qi->lq->lw->w, &qi->it))
      ecs_query_complete(qi->lq->lw->w, qi->lq->q);
    return 0;
  }
  push_entity(L, e);
  return 1;
}

/* q:entities() -> next, iterator, nil, iterator */
int ecsl_l_query_entities(lua_State *L) {
  lquery *lq = ecsl_check_query(L, 1);
  lqiter *qi;
  ecs_err err;
  lua_getiuservalue(L, 1, 2);                             /* cache */
  if (lua_rawgeti(L, -1, QC_ITER) == LUA_TUSERDATA &&
      !((lqiter *)lua_touserdata(L, -1))->active) {
    qi = (lqiter *)lua_touserdata(L, -1);                 /* reuse it */
  } else {
    lua_pop(L, 1);
    qi = (lqiter *)lua_newuserdatauv(L, sizeof *qi, 1);
    ecsl_init_head(&qi->h, &ecsl_qiter_tag, lq->lw);
    qi->lq = lq;
    qi->active = 0;
    luaL_setmetatable(L, ECS_LUA_QUERY_ITER);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);                          /* keeps q alive */
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, QC_ITER);
  }
  if (lq->lw->w == NULL) return ecsl_closed(L);
  err = ecs_query_iter_begin(lq->lw->w, lq->q, &qi->it);
  if (err != ECS_ERR_OK) return ecsl_query_fail(L, "entities", err);
  qi->active = 1;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &ecsl_qiter_next_key);    /* cache, it, next */
  lua_insert(L, -2);                                      /* cache, next, it */
  lua_pushnil(L);
  lua_pushvalue(L, -2);                                   /* next, it, nil, it */
  ecsl_charge(L, lq->lw); /* the loop body may run any Lua too */
  return 4;
}

/* ----------------------------------------------------------------------
** q:apply(expr [, params]): programs compiled once per query and text,
** kept by the core query (ecs_query_program: the ECS_QUERY_MAX_PROGRAMS
** most recently used texts), so a new text per frame costs a compile but
** no memory. A program pointer is used at once: anything that runs Lua
** code may ask the query for other texts and evict it.
** ------------------------------------------------------------------- */

/* The program for the expression at sidx on the query at qidx. */
static ecs_program *query_program(lua_State *L, int qidx, int sidx,
                                  const char *fn) {
  lquery *lq = (lquery *)lua_touserdata(L, qidx);
  ecs_program *p;
  char msg[256];
  size_t len;
  const char *src = check_text(L, sidx, &len, fn);
  ecs_err err;
  if (lq->q == NULL || lq->lw->w == NULL)
    ecsl_closed(L);
  err = ecs_query_program(lq->lw->w, lq->q, src, len, &p, msg, sizeof msg);
  if (err != ECS_ERR_OK) ecsl_error(L, NULL, fn, err, msg, 0); /* a position */
  return p;
}

/*
** The program for the expression at sidx on the query at qidx, with its
** parameters read from the table at pidx (0: none) into v; a parameter
** named "dt" takes dt when has_dt. A params table with a metatable may run
** Lua code on each read, so the program is looked up again after each.
*/
ecs_program *ecsl_program_params(lua_State *L, int qidx, int sidx, int pidx,
                                   double *v, int has_dt, double dt,
                                   const char *fn) {
  ecs_program *p = query_program(L, qidx, sidx, fn);
  int meta = pidx != 0 && lua_getmetatable(L, pidx);
  if (meta) lua_pop(L, 1);
  for (uint32_t k = 0; k < ecs_program_param_count(p); k++) {
    const char *name = ecs_program_param_name(p, k);
    int t;
    if (has_dt && strcmp(name, "dt") == 0) {
      v[k] = dt;
      continue;
    }
    if (pidx == 0)
      luaL_error(L, "%s: parameter '%s' needs a params table at position %d",
                 fn, name, (int)ecs_program_param_position(p, k));
    t = lua_getfield(L, pidx, name);
    if (meta) p = query_program(L, qidx, sidx, fn); /* same text, same order */
    if (t != LUA_TNUMBER)
      luaL_error(L, "%s: parameter '%s' must be a number (got %s) at "
                 "position %d", fn, ecs_program_param_name(p, k),
                 luaL_typename(L, -1), (int)ecs_program_param_position(p, k));
    v[k] = (double)lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  return p;
}

/* q:apply(expr [, params]) -> entities processed */
int ecsl_l_query_apply(lua_State *L) {
  lquery *lq = ecsl_check_query(L, 1);
  double params[ECS_PROGRAM_MAX_PARAMS];
  ecs_program *p;
  size_t done;
  ecs_err err;
  if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  lua_settop(L, 3);
  p = ecsl_program_params(L, 1, 2, lua_isnil(L, 3) ? 0 : 3, params, 0, 0.0,
                     "q:apply");
  err = ecs_program_run(lq->lw->w, p, params, &done);
  if (err != ECS_ERR_OK) return ecsl_query_fail(L, "apply", err);
  lua_pushinteger(L, (lua_Integer)done);
  ecsl_charge(L, lq->lw);
  return 1;
}

/* q:programs() -> compiled expressions the query keeps (at most 32) */
int ecsl_l_query_programs(lua_State *L) {
  lquery *lq = ecsl_check_query(L, 1);
  lua_pushinteger(L, (lua_Integer)ecs_query_program_count(lq->q));
  return 1;
}

/* ----------------------------------------------------------------------
** The classes of queries and of what their methods return (loops,
** natives), registered once per Lua state (module.c).
** ------------------------------------------------------------------- */

static const luaL_Reg query_methods[] = {
  {"count", ecsl_l_query_count},
  {"entities", ecsl_l_query_entities},
  {"columns", ecsl_l_query_columns},
  {"each", ecsl_l_query_each},
  {"each_chunk", ecsl_l_query_each_chunk},
  {"pointers", ecsl_l_query_pointers},
  {"apply", ecsl_l_query_apply},
  {"programs", ecsl_l_query_programs},
  {"run", ecsl_l_query_run},
  {"components", ecsl_l_query_components},
  {NULL, NULL}
};

/* A class: methods (if any) as __index and __methods, plus metamethods. */
static void query_class(lua_State *L, const char *tname, const luaL_Reg *methods,
                        const luaL_Reg *meta) {
  luaL_newmetatable(L, tname);
  luaL_setfuncs(L, meta, 0);
  if (methods != NULL) ecsl_class_methods(L, methods, &ecsl_query_tag, tname);
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
    {"__tostring", ecsl_l_native_tostring}, {NULL, NULL}};
  query_class(L, ECS_LUA_QUERY, query_methods, query_meta);
  query_class(L, ECS_LUA_QUERY_ITER, NULL, iter_meta);
  lua_pushcfunction(L, ecsl_l_qiter_next);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ecsl_qiter_next_key);
  query_class(L, ECS_LUA_COLUMNS, NULL, columns_meta);
  query_class(L, ECS_LUA_NATIVE, NULL, native_meta);
}
