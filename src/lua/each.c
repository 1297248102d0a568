/*
** each.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

/* ======================================================================
** q:each(fn, spec...): fn(e, v1, v2, ...) once per match, its results
** written back to the writable specs (docs/queries.md).
**
** One Lua call per entity and nothing else per entity: the specs are
** resolved once per query and text (ecsl_check_spec, as q:columns), the
** iteration state (an leach: the pinned snapshot and one chunk of entities
** and rows) is reused between loops, values go straight from the columns
** to the stack and back (include/value.h), and no string is made except for
** an error.
**
** The loop runs in a protected call (each_body under lua_pcall), so that
** whatever ends it -- fn's error, a bad result, a yield across the call,
** a memory error, a world closed by fn -- unpins the snapshot and uncounts
** the call (as world:update does for a system's error) before the error
** goes on, unchanged.
**
** Rows. A chunk's rows are exact while ecs_query_iter_current says so.
** Once fn changed the structure, every further entity of the chunk is
** checked (alive, still matching) and its rows looked up again before fn
** sees it, and each write-back looks its row up again (a field of an
** entity that died or lost that component is skipped). The column
** pointers are taken again with the rows: a structural change may move
** a manager's storage.
** ==================================================================== */

/* entities per chunk: rows of nwith terms each */
#define EACH_CHUNK 256u

/* Class tag of the state (never handed to Lua: it sits in the cache). */
static const char each_tag = 'e';

typedef struct leach {
  lhead h;
  lquery *lq;
  ecs_query_iter it;
  int active;
  uint32_t nspec, nwrite;
  uint32_t schema_gen;               /* ecsl_world_gen(lw) at the start */
  colspec spec[MAX_COLUMNS];
  ecs_component *comp[MAX_COLUMNS];  /* of spec k (NULL: "entity") */
  void *base[MAX_COLUMNS];           /* its column, valid with the rows */
  uint32_t row[MAX_COLUMNS];         /* the entity's row in it */
  uint8_t kind[MAX_COLUMNS];         /* ecs_kind of spec k's type */
  uint8_t wspec[MAX_COLUMNS];        /* the writable specs, in order */
  uint64_t same_before[MAX_COLUMNS]; /* results r' < r of r's component */
  cvalue out[MAX_COLUMNS];           /* converted results, then stored */
  ecs_entity ent[EACH_CHUNK];
  uint32_t *rows;                    /* nwith * EACH_CHUNK, after the struct */
} leach;

/* A state for the query lq (on the stack: the new userdata). */
static leach *new_each(lua_State *L, lquery *lq) {
  size_t head = (sizeof(leach) + 7u) & ~(size_t)7u;
  size_t bytes = head + (size_t)lq->nwith * EACH_CHUNK * sizeof(uint32_t);
  leach *st = (leach *)lua_newuserdatauv(L, bytes, 0);
  memset(st, 0, sizeof *st);
  ecsl_init_head(&st->h, &each_tag, lq->lw);
  st->lq = lq;
  st->rows = (uint32_t *)(void *)((char *)st + head);
  return st;
}

static void each_end(leach *st) {
  if (st->active && st->lq->q != NULL && st->lq->lw->w != NULL)
    ecs_query_iter_end(st->lq->lw->w, &st->it);
  st->active = 0;
}

/*
** Rows and columns of entity j of the chunk: from the chunk while it is
** exact (current), else looked up. @return false when e is no longer
** alive or matching (then it is skipped).
*/
static bool each_locate(leach *st, ecs_world *w, uint32_t j, bool current) {
  ecs_entity e = st->ent[j];
  if (current) {
    for (uint32_t k = 0; k < st->nspec; k++)
      if (st->comp[k] != NULL)
        st->row[k] = st->rows[(size_t)st->spec[k].term * EACH_CHUNK + j];
    return true;
  }
  if (!ecs_query_matches(w, st->lq->q, e)) return false;
  for (uint32_t k = 0; k < st->nspec; k++) {
    if (st->comp[k] == NULL) continue;
    st->row[k] = ecs_component_lookup(w, st->comp[k], e);
    st->base[k] = ecs_component_column(st->comp[k], st->spec[k].field);
  }
  return true;
}

/* Raise "q:each: bad value for P.x (number expected, got string)
** (entity(3.0))" for writable spec k; the value is at idx. */
static int each_bad(lua_State *L, leach *st, uint32_t k, int idx,
                    const char *expect, ecs_entity e) {
  ecs_component *c = st->comp[k];
  const char *got;
  const char *field = ecs_component_field(c, st->spec[k].field)->name;
  const char *name = ecs_component_name(c);
  luaL_checkstack(L, 4, "q:each");
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_pushvalue(L, idx);
    got = lua_tostring(L, -1); /* the copy converts, not the result */
  } else {
    got = ecsl_value_type_name(L, idx);
  }
  push_entity(L, e);
  return luaL_error(L, "q:each: bad value for %s.%s (%s expected, got %s)%s",
                    name, field, expect, got,
                    ecsl_entity_note(L, lua_gettop(L)));
}

/*
** Write fn's nres results (at stack 3..) to the writable specs of entity
** e: all are converted and checked first (a bad one raises and nothing of
** e is written), then stored, at the rows fn was given while they are
** exact (fn changed no structure: current), else at the entity's row now
** (skipped when it has none: e died or lost that component).
*/
static void each_store(lua_State *L, leach *st, ecs_entity e, int nres,
                       bool current) {
  ecs_world *w;
  uint64_t set = 0; /* bit r: result r is not nil (MAX_COLUMNS <= 64) */
  if (nres > (int)st->nwrite) {
    luaL_checkstack(L, 3, "q:each");
    push_entity(L, e);
    luaL_error(L, "q:each: too many results (%d for %d writable field%s)%s",
               nres, (int)st->nwrite, st->nwrite == 1 ? "" : "s",
               ecsl_entity_note(L, lua_gettop(L)));
  }
  for (int r = 0; r < nres; r++) {
    int idx = 3 + r, t = lua_type(L, idx);
    uint32_t k = st->wspec[r];
    const char *bad;
    if (t == LUA_TNIL) continue;
    bad = ecsl_to_cvalue(L, idx, t, st->spec[k].type, &st->out[r]);
    if (bad != NULL) each_bad(L, st, k, idx, bad, e);
    set |= (uint64_t)1 << r;
  }
  if (set == 0) return;
  w = st->lq->lw->w; /* open: checked by the caller */
  for (int r = 0; r < nres; r++) {
    uint32_t k = st->wspec[r];
    ecs_component *c = st->comp[k];
    ecs_instance i;
    if (!(set & ((uint64_t)1 << r))) continue;
    if (current) {
      ecs_component_write_begin(w, c, NULL, st->row[k], 1);
      ecs_value_store(st->base[k], st->spec[k].type, st->row[k], st->out[r]);
    } else if ((i = ecs_component_lookup(w, c, e)) != ECS_NO_INSTANCE) {
      ecs_component_write_begin(w, c, NULL, i, 1);
      ecs_value_store(ecs_component_column(c, st->spec[k].field),
                      st->spec[k].type, i, st->out[r]);
    }
  }
  /* then each component written is touched once: a manager that owns one
  ** (the transform) sees the row's new values whole */
  for (int r = 0; r < nres; r++) {
    uint32_t k = st->wspec[r];
    ecs_component *c = st->comp[k];
    ecs_instance i;
    if (!(set & ((uint64_t)1 << r)) || (set & st->same_before[r])) continue;
    if (current) ecs_component_write_end(w, c, NULL, st->row[k], 1);
    else if ((i = ecs_component_lookup(w, c, e)) != ECS_NO_INSTANCE)
      ecs_component_write_end(w, c, NULL, i, 1);
  }
}

/* st, fn -> (protected) entities visited */
static int each_body(lua_State *L) {
  leach *st = (leach *)lua_touserdata(L, 1);
  lworld *lw = st->lq->lw;
  uint32_t nspec = st->nspec;
  lua_Integer visited = 0;
  /* fn, e and the values; the results get their room from lua_call */
  luaL_checkstack(L, (int)nspec + 2, "q:each: too many columns");
  for (;;) {
    ecs_world *w = lw->w;
    uint32_t n;
    bool current = true;
    if (w == NULL) return ecsl_closed(L);
    if (st->schema_gen != ecsl_world_gen(lw))
      return luaL_error(L, "q:each: " ECSL_REDEFINED_TEXT);
    /* 0 after a whole-world load too: the loop is over */
    n = ecs_query_iter_chunk(w, &st->it, EACH_CHUNK, st->ent, st->rows);
    if (n == 0) break;
    for (uint32_t k = 0; k < nspec; k++)
      if (st->comp[k] != NULL)
        st->base[k] = ecs_component_column(st->comp[k], st->spec[k].field);
    for (uint32_t j = 0; j < n; j++) {
      ecs_entity e = st->ent[j];
      int nres;
      if (!each_locate(st, w, j, current)) continue;
      lua_pushvalue(L, 2);
      push_entity(L, e);
      for (uint32_t k = 0; k < nspec; k++) {
        ecs_type t = st->spec[k].type;
        ecs_scalar v;
        if (st->comp[k] == NULL) {
          push_entity(L, e);
          continue;
        }
        if (st->row[k] == ECS_NO_INSTANCE) memset(&v, 0, sizeof v); /* optional */
        else v = ecs_value_load(st->base[k], t, st->row[k]);
        if (st->kind[k] == ECS_KIND_FLOAT) lua_pushnumber(L, (lua_Number)v.f);
        else ecsl_push_scalar(L, t, v, 0);
      }
      lua_call(L, (int)nspec + 1, LUA_MULTRET);
      visited++;
      /* fn may have closed the world, loaded one (its results and the
      ** rest of the loop belong to the world the load replaced: a
      ** rollback wins), changed the structure, or redefined a component
      ** (the specs then name other fields) */
      if ((w = lw->w) == NULL) return ecsl_closed(L);
      if (ecs_query_iter_loaded(w, &st->it)) {
        lua_settop(L, 2);
        goto over;
      }
      if (st->schema_gen != ecsl_world_gen(lw))
        return luaL_error(L, "q:each: " ECSL_REDEFINED_TEXT);
      if (current) current = ecs_query_iter_current(w, &st->it);
      nres = lua_gettop(L) - 2;
      if (nres > 0) {
        each_store(L, st, e, nres, current);
        lua_settop(L, 2);
      }
    }
  }
over:
  lua_pushinteger(L, visited);
  return 1;
}

/*
** q:each(fn [, spec, ...]) -> entities visited
** Arguments are checked here (their errors name the argument); the loop
** runs in each_body, protected.
*/
int ecsl_l_query_each(lua_State *L) {
  lquery *lq = ecsl_check_query(L, 1);
  int nspec = lua_gettop(L) - 2, status;
  colspec spec[MAX_COLUMNS];
  leach *st;
  lworld *lw = lq->lw;
  uint32_t gen = ecsl_world_gen(lw); /* as q:columns: the specs' schemas */
  ecs_err err;
  luaL_checktype(L, 2, LUA_TFUNCTION);
  if (nspec > MAX_COLUMNS)
    return luaL_error(L, "q:each: too many columns (limit %d)", MAX_COLUMNS);
  for (int k = 0; k < nspec; k++) spec[k] = ecsl_check_spec(L, 1, k + 3, "q:each");
  lua_settop(L, 2);                                       /* q, fn */
  lua_getiuservalue(L, 1, 2);                             /* q, fn, cache */
  if (lua_rawgeti(L, 3, QC_EACH) == LUA_TUSERDATA &&
      (st = (leach *)ecsl_test_object(L, 4, &each_tag)) != NULL &&
      !st->active) {
    /* reuse it */
  } else {                                 /* none, or busy: a nested loop */
    lua_pop(L, 1);
    st = new_each(L, lq);
    if (lua_rawgeti(L, 3, QC_EACH) != LUA_TUSERDATA) {
      lua_pushvalue(L, 4);
      lua_rawseti(L, 3, QC_EACH);                         /* cache it */
    }
    lua_settop(L, 4);
  }                                                       /* q, fn, cache, st */
  if (lw->w == NULL || lq->q == NULL) return ecsl_closed(L); /* by a finalizer */
  st->nspec = (uint32_t)nspec;
  st->nwrite = 0;
  st->schema_gen = gen;
  for (int k = 0; k < nspec; k++) {
    st->spec[k] = spec[k];
    st->comp[k] = spec[k].term == ENTITY_TERM ? NULL
                                              : ecs_query_with(lq->q, spec[k].term);
    st->kind[k] = (uint8_t)ecs_type_kind(spec[k].type);
    if (spec[k].write) st->wspec[st->nwrite++] = (uint8_t)k;
  }
  for (uint32_t r = 0; r < st->nwrite; r++) { /* once per call, not per entity */
    st->same_before[r] = 0;
    for (uint32_t q = 0; q < r; q++)
      if (st->comp[st->wspec[q]] == st->comp[st->wspec[r]])
        st->same_before[r] |= (uint64_t)1 << q;
  }
  ecsl_push_cfn(L, each_body);
  lua_pushlightuserdata(L, st);
  lua_pushvalue(L, 2);                                    /* ..., body, st, fn */
  /* anything above may have run a finalizer: check the world last */
  if (lw->w == NULL || lq->q == NULL) return ecsl_closed(L);
  err = ecs_query_iter_begin(lw->w, lq->q, &st->it);
  if (err != ECS_ERR_OK) return ecsl_query_fail(L, "each", err);
  st->active = 1;
  status = lua_pcall(L, 2, 1, 0);
  each_end(st);
  if (status == LUA_OK && lw->w != NULL && lq->q != NULL &&
      !ecs_query_iter_loaded(lw->w, &st->it))
    ecs_query_complete(lw->w, lq->q); /* the pass ran to its end */
  if (status != LUA_OK) {
    /* uncount this call, which its error skips (object.c), then raise */
    if (--lw->busy == 0 && lw->doomed != NULL) ecsl_world_release(lw);
    return lua_error(L);
  }
  ecsl_charge(L, lw); /* fn may run any Lua */
  return 1;
}
