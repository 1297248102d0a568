/*
** columns.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

/* ----------------------------------------------------------------------
** Column specs "Component.field[:in]", resolved once per query and spec
** string (cache slot QC_SPECS: spec -> packed integer).
** ------------------------------------------------------------------- */

/* A spec as the cache keeps it, one integer: bit 0 write, bits 1-8 type,
** 9-16 field, 17-24 term (packed in ecsl_check_spec). */
static colspec unpack_spec(lua_Integer v) {
  colspec s;
  s.write = (int)(v & 1);
  s.type = (ecs_type)((v >> 1) & 0xff);
  s.field = (uint32_t)((v >> 9) & 0xff);
  s.term = (uint32_t)((v >> 17) & 0xff);
  return s;
}

/* The spec at idx for the query at qidx (fn names the caller in errors). */
colspec ecsl_check_spec(lua_State *L, int qidx, int idx, const char *fn) {
  lquery *lq = (lquery *)lua_touserdata(L, qidx);
  size_t len;
  const char *s;
  int isnum;
  char why[128];
  lua_Integer packed;
  ecs_column_spec spec;
  ecs_err err;
  check_text(L, idx, NULL, fn);
  if (lq->schema_gen != ecsl_world_gen(lq->lw)) { /* a component was redefined */
    lua_getiuservalue(L, qidx, 2);
    lua_pushnil(L);
    lua_rawseti(L, -2, QC_SPECS);
    lua_pop(L, 1);
    lq->schema_gen = ecsl_world_gen(lq->lw);
  }
  ecsl_push_query_cache(L, qidx, QC_SPECS);                    /* specs */
  lua_pushvalue(L, idx);
  lua_rawget(L, -2);                                      /* specs, packed */
  packed = lua_tointegerx(L, -1, &isnum);
  lua_pop(L, 2);
  if (isnum) return unpack_spec(packed);
  s = lua_tolstring(L, idx, &len);
  if ((err = ecs_query_column_spec(lq->q, s, len, &spec, why, sizeof why)) ==
      ECS_ERR_INVALID && why[0] == '\0')
    luaL_error(L, "%s: column '%s' must be 'Component.field'", fn, s);
  if (err == ECS_ERR_READONLY_FIELD)
    ecsl_error(L, NULL, fn, err, lua_pushfstring(L, "column '%s': %s (read "
               "it with '%s:in')", s, why, s), 0);
  if (err != ECS_ERR_OK)
    ecsl_error(L, NULL, fn, err, lua_pushfstring(L, "column '%s': %s", s, why), 0);
  if (spec.term == ECS_ENTITY_TERM) { /* the chunk's entities: not cached */
    colspec e = {ENTITY_TERM, 0, ECS_ENTITY, 0};
    return e;
  }
  packed = (lua_Integer)spec.write | (lua_Integer)spec.type << 1 |
           (lua_Integer)spec.field << 9 | (lua_Integer)spec.term << 17;
  ecsl_push_query_cache(L, qidx, QC_SPECS);
  lua_pushvalue(L, idx);
  lua_pushinteger(L, packed);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return unpack_spec(packed);
}

/* ----------------------------------------------------------------------
** q:columns(spec, ...): chunks of plain Lua arrays. The state object
** (lcolumns, reused between loops; a new one for a nested loop) holds the
** pinned iteration, the chunk's entities and rows, and scratch for the
** converted values of a write-back (checked whole before any is stored).
** User value 1: the query; 2: the list of Lua arrays. q:each_chunk (at the
** end) runs its loop with the same state, fill and write-back.
** ------------------------------------------------------------------- */



/* Raise the write-back error for row j of column k (the value is at -1). */
static int columns_bad(lua_State *L, lcolumns *st, uint32_t k, uint32_t j,
                       const char *expect) {
  ecs_component *c = ecs_query_with(st->lq->q, st->col[k].term);
  st->n = 0; /* nothing of this chunk is written back */
  if (lua_type(L, -1) == LUA_TNUMBER)
    return luaL_error(L, "%s: bad value for %s.%s at row %d (%s "
                      "expected, got %s)", st->fname, ecs_component_name(c),
                      ecs_component_field(c, st->col[k].field)->name,
                      (int)j + 1, expect, lua_tostring(L, -1));
  return luaL_error(L, "%s: bad value for %s.%s at row %d (%s "
                    "expected, got %s)", st->fname, ecs_component_name(c),
                    ecs_component_field(c, st->col[k].field)->name, (int)j + 1,
                    expect, ecsl_value_type_name(L, -1));
}

/*
** Convert the value at idx (of Lua type t, lua_type's answer) for a field
** of type ty into *o by the checked rule (docs/components.md), as
** Position:set does: numbers for float fields (f32 stores the nearest
** float, magnitudes beyond FLT_MAX becoming +-inf), integral numbers within
** the type's range for integer fields, booleans for bool, handles for
** entity. @return NULL, or what was expected ("number", "integer", "i8",
** ...) when the value does not fit. Never raises; no string coercion.
** The one conversion of q:columns' write-back and q:each's results.
*/
const char *ecsl_to_cvalue(lua_State *L, int idx, int t, ecs_type ty,
                           cvalue *o) {
  switch (ecs_type_kind_inline(ty)) {
  case ECS_KIND_FLOAT:
    if (t != LUA_TNUMBER) return "number";
    o->f = (double)lua_tonumberx(L, idx, NULL);
    if (ty == ECS_F32) { /* (float) of a double beyond FLT_MAX is undefined */
      if (o->f > (double)FLT_MAX) o->f = (double)HUGE_VALF;
      else if (o->f < -(double)FLT_MAX) o->f = -(double)HUGE_VALF;
    }
    return NULL;
  case ECS_KIND_BOOL:
    if (t != LUA_TBOOLEAN) return "boolean";
    o->i = lua_toboolean(L, idx);
    return NULL;
  case ECS_KIND_ENTITY:
    if (!ecs_lua_is_entity(L, idx)) return "entity";
    o->i = (int64_t)ecsl_check_entity(L, idx);
    return NULL;
  default: {
    int isint = 0;
    lua_Integer v = t == LUA_TNUMBER ? lua_tointegerx(L, idx, &isint) : 0;
    if (!isint) return "integer";
    if (!ecs_value_fits(ty, (int64_t)v)) return ecs_type_name(ty);
    o->i = (int64_t)v;
    return NULL;
  }
  }
}

/*
** Convert and check the n values of array t (an absolute index) for a
** column of type ty into out. Values come onto the stack in batches of
** WRITE_BACK_BATCH (one pop per batch); a bad one raises through
** columns_bad, or, when quiet, makes it return false with the stack as it
** found it.
*/
static bool columns_read(lua_State *L, lcolumns *st, uint32_t k, int t,
                         uint32_t n, cvalue *out, bool quiet) {
  ecs_type ty = st->col[k].type;
  int base = lua_gettop(L);
  luaL_checkstack(L, WRITE_BACK_BATCH + 2, "columns write-back");
  for (uint32_t j0 = 0; j0 < n; j0 += WRITE_BACK_BATCH) {
    uint32_t m = n - j0 < WRITE_BACK_BATCH ? n - j0 : WRITE_BACK_BATCH;
    int type[WRITE_BACK_BATCH];
    for (uint32_t j = 0; j < m; j++)
      type[j] = lua_rawgeti(L, t, (lua_Integer)(j0 + j) + 1);
    for (uint32_t j = 0; j < m; j++) {
      int idx = base + 1 + (int)j;
      const char *bad = ecsl_to_cvalue(L, idx, type[j], ty, &out[j0 + j]);
      if (bad != NULL) {
        if (quiet) {
          lua_settop(L, base);
          return false;
        }
        lua_pushvalue(L, idx);
        columns_bad(L, st, k, j0 + j, bad);
      }
    }
    lua_settop(L, base);
  }
  return true;
}

/*
** Write the pending chunk back: convert and check every value of every
** writable column into scratch (nothing is stored if one is bad), then
** store them (the core's ecs_query_chunk_store). Rows are exact unless
** the loop body changed the structure.
** A bad value raises, or, when quiet (the loop body raised an error that
** must come out unchanged), drops the chunk silently.
**
** A whole-world load made by the loop body (world:restore, j:undo,
** world:apply_delta) drops the chunk before anything else is looked at:
** its values were read from the world the load replaced, and a rollback
** must leave the world equal to what it loaded, also when the body wrote
** nothing (docs/queries.md, "Loads inside loops"). The loop then ends.
*/
static void columns_write_back(lua_State *L, lcolumns *st, int sidx,
                               bool quiet) {
  ecs_world *w = st->lq->lw->w;
  uint32_t n = st->n, slot = 0;
  bool current;
  int arrays;
  if (n == 0) return;
  if (ecs_query_iter_loaded(w, &st->it)) {
    st->n = 0;
    return;
  }
  if (st->schema_gen != ecsl_world_gen(st->lq->lw)) { /* the specs are stale */
    st->n = 0;
    if (quiet) return;
    luaL_error(L, "%s: " ECSL_REDEFINED_TEXT " (its writes are lost)",
               st->fname);
  }
  lua_getiuservalue(L, sidx, 2);                          /* arrays */
  arrays = lua_gettop(L);
  for (uint32_t k = 0; k < st->ncols; k++) {
    if (!st->col[k].write) continue;
    lua_rawgeti(L, arrays, (lua_Integer)k + 1);           /* arrays, t */
    if (!columns_read(L, st, k, lua_gettop(L), n,
                      st->scratch + (size_t)slot++ * COLUMNS_CHUNK, quiet)) {
      lua_pop(L, 2);
      st->n = 0;
      return;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  current = ecs_query_iter_current(w, &st->it);
  ecs_query_chunk_store(w, st->lq->q, st->col, st->ncols, st->scratch, st->ent,
                        st->rows, COLUMNS_CHUNK, n, current);
  st->n = 0;
}

static void columns_end(lcolumns *st) {
  if (st->active && st->lq->q != NULL && st->lq->lw->w != NULL)
    ecs_query_iter_end(st->lq->lw->w, &st->it);
  st->active = 0;
  st->n = 0;
}

/*
** __close: write back the pending chunk (also on break and error). The
** iteration ends first: the write-back needs only the chunk's own copy of
** entities and rows, and may raise -- except when the loop is left by an
** error (argument 2): then a chunk with a bad value is dropped whole and
** the loop's own error goes on unchanged.
*/
int ecsl_l_columns_close(lua_State *L) {
  lcolumns *st = (lcolumns *)ecsl_test_object(L, 1, &ecsl_columns_tag);
  int pending;
  uint32_t n;
  if (st == NULL) return 0;
  pending = st->active && st->lq->q != NULL && st->lq->lw->w != NULL;
  n = st->n;
  bool raised = !lua_isnoneornil(L, 2);
  columns_end(st);
  if (pending && n > 0) {
    st->n = n;
    columns_write_back(L, st, 1, raised);
  }
  st->n = 0;
  return 0;
}

/* __gc: unpin only (a finalizer must not raise). */
int ecsl_l_columns_gc(lua_State *L) {
  lcolumns *st = (lcolumns *)ecsl_test_object(L, 1, &ecsl_columns_tag);
  if (st != NULL) columns_end(st);
  return 0;
}

/* Push column k of the chunk's n rows into its array (at t). */
static void columns_fill(lua_State *L, lcolumns *st, uint32_t k, int t,
                         uint32_t n) {
  colspec s = st->col[k];
  ecs_component *c;
  const void *base;
  const uint32_t *rows;
  if (s.term == ENTITY_TERM) {
    for (uint32_t j = 0; j < n; j++) {
      push_entity(L, st->ent[j]);
      lua_rawseti(L, t, (lua_Integer)j + 1);
    }
    return;
  }
  c = ecs_query_with(st->lq->q, s.term);
  base = ecs_component_column(c, s.field);
  rows = st->rows + (size_t)s.term * COLUMNS_CHUNK;
  if (ecs_query_optional(st->lq->q) >> s.term & 1u) { /* zero where absent */
    ecs_scalar zero;
    memset(&zero, 0, sizeof zero);
    for (uint32_t j = 0; j < n; j++) {
      ecsl_push_scalar(L, s.type, rows[j] == ECS_NO_INSTANCE ? zero
                       : ecs_value_load_inline(base, s.type, rows[j]), 0);
      lua_rawseti(L, t, (lua_Integer)j + 1);
    }
    return;
  }
  /* one pass from the column: one case per type (value.h's list), where
  ** the type is a constant, so the inline load and push fold into a loop
  ** with no dispatch inside */
#define COLUMNS_FILL(NAME, T, M)                                             \
  case ECS_##NAME:                                                           \
    for (uint32_t j = 0; j < n; j++) {                                       \
      ecsl_push_scalar(L, ECS_##NAME,                                        \
                       ecs_value_load_inline(base, ECS_##NAME, rows[j]), 0); \
      lua_rawseti(L, t, (lua_Integer)j + 1);                                 \
    }                                                                        \
    break;
  switch (s.type) {
  ECS_VALUE_TYPES(COLUMNS_FILL)
  default: break;
  }
#undef COLUMNS_FILL
}

/*
** Fill the arrays of the state at sidx with the chunk's n rows, and push
** n and the arrays (ncols + 1 values). st->n is left to the caller: while
** it is 0, a memory error here writes nothing back.
*/
static void columns_push_chunk(lua_State *L, lcolumns *st, int sidx,
                               uint32_t n) {
  int arrays;
  luaL_checkstack(L, (int)st->ncols + 4, "too many columns");
  lua_getiuservalue(L, sidx, 2);                          /* arrays */
  arrays = lua_gettop(L);
  lua_pushinteger(L, (lua_Integer)n);                     /* arrays, n */
  for (uint32_t k = 0; k < st->ncols; k++) {
    lua_rawgeti(L, arrays, (lua_Integer)k + 1);
    columns_fill(L, st, k, lua_gettop(L), n);
  }
  lua_remove(L, arrays);                                  /* n, arrays... */
}

/* The iterator: write back the last chunk, fill the next -> n, arrays... */
static int l_columns_next(lua_State *L) {
  lcolumns *st = (lcolumns *)ecsl_test_object(L, 1, &ecsl_columns_tag);
  ecs_world *w;
  if (st == NULL) return ecsl_object_error(L, 1, ECS_LUA_COLUMNS);
  uint32_t n;
  if (!st->active) return 0;
  if (st->lq->q == NULL || (w = st->lq->lw->w) == NULL)
    return ecsl_closed(L);
  lua_settop(L, 1);
  columns_write_back(L, st, 1, false);
  if (ecs_query_iter_loaded(w, &st->it)) { /* over: no pass completed */
    columns_end(st);
    return 0;
  }
  if (st->schema_gen != ecsl_world_gen(st->lq->lw))
    return luaL_error(L, "%s: " ECSL_REDEFINED_TEXT, st->fname);
  n = ecs_query_iter_chunk(w, &st->it, COLUMNS_CHUNK, st->ent, st->rows);
  if (n == 0) {
    columns_end(st);
    ecs_query_complete(w, st->lq->q); /* the pass ran to its end */
    return 0;
  }
  columns_push_chunk(L, st, 1, n);                        /* st, n, arrays... */
  st->n = n;
  return (int)st->ncols + 1;
}

/*
** A columns state for at least ncols columns over lq, of class tag (named
** fname in messages), pushed. Only q:columns' states (ecsl_columns_tag)
** are handed to Lua and get the metatable (__close, __gc); q:each_chunk's
** stay inside its call, which ends their iteration itself.
*/
static lcolumns *new_columns(lua_State *L, lquery *lq, uint32_t ncols,
                             const void *tag, const char *fname) {
  uint32_t cap = ncols < 8u ? 8u : ncols;
  size_t head = (sizeof(lcolumns) + 7u) & ~(size_t)7u;
  size_t bytes = head + (size_t)cap * COLUMNS_CHUNK * sizeof(cvalue) +
                 (size_t)COLUMNS_CHUNK * sizeof(ecs_entity) +
                 (size_t)lq->nwith * COLUMNS_CHUNK * sizeof(uint32_t);
  lcolumns *st = (lcolumns *)lua_newuserdatauv(L, bytes, 2);
  memset(st, 0, sizeof *st);
  ecsl_init_head(&st->h, tag, lq->lw);
  st->lq = lq;
  st->fname = fname;
  st->cap_cols = cap;
  st->scratch = (cvalue *)(void *)((char *)st + head);
  st->ent = (ecs_entity *)(void *)(st->scratch + (size_t)cap * COLUMNS_CHUNK);
  st->rows = st->ent + COLUMNS_CHUNK;
  if (tag == &ecsl_columns_tag) luaL_setmetatable(L, ECS_LUA_COLUMNS);
  lua_createtable(L, (int)cap, 0);
  lua_setiuservalue(L, -2, 2);
  return st;
}

/* Arrays 1..nspec of the state at sidx, preallocated so that filling
** never resizes them. */
static void columns_arrays(lua_State *L, int sidx, int nspec) {
  lua_getiuservalue(L, sidx, 2);
  for (int k = 1; k <= nspec; k++) {
    if (lua_rawgeti(L, -1, k) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_createtable(L, (int)COLUMNS_CHUNK, 0);
      lua_rawseti(L, -2, k);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

/*
** Push an idle state of class tag for nspec columns over the query lq
** (argument 1), its arrays made: the one in cache slot `slot` when it is
** idle and has room, else a new one, cached unless the slot holds a busy
** one (a nested loop's state is its own). Making the arrays may run a
** finalizer that starts a loop on the cached state: it is then busy, and
** a new one is taken. Nothing after the new one is cached allocates.
*/
static lcolumns *columns_state(lua_State *L, lquery *lq, int slot,
                               const void *tag, const char *fname,
                               int nspec) {
  lcolumns *st, *cached;
  int cache;
  lua_getiuservalue(L, 1, 2);                             /* cache */
  cache = lua_gettop(L);
  lua_rawgeti(L, cache, slot);                            /* cache, st? */
  st = (lcolumns *)ecsl_test_object(L, -1, tag);
  if (st != NULL && !st->active && st->cap_cols >= (uint32_t)nspec) {
    columns_arrays(L, cache + 1, nspec);
    if (!st->active) {
      lua_remove(L, cache);                               /* st */
      return st;
    }
  }
  lua_pop(L, 1);                                          /* cache */
  st = new_columns(L, lq, (uint32_t)nspec, tag, fname);   /* cache, st */
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);                            /* keeps q alive */
  columns_arrays(L, cache + 1, nspec);
  lua_rawgeti(L, cache, slot);
  cached = (lcolumns *)ecsl_test_object(L, -1, tag);
  lua_pop(L, 1);
  if (cached == NULL || !cached->active) {
    lua_pushvalue(L, -1);
    lua_rawseti(L, cache, slot);                          /* cache it */
  }
  lua_remove(L, cache);                                   /* st */
  return st;
}

/* Check the specs (arguments first .. top) of the method fn into spec
** -> how many. */
static int columns_specs(lua_State *L, int first, colspec *spec,
                         const char *fn) {
  int nspec = lua_gettop(L) - first + 1;
  if (nspec < 1) luaL_argerror(L, first, "column spec expected");
  if (nspec > MAX_COLUMNS)
    luaL_error(L, "%s: too many columns (limit %d)", fn, MAX_COLUMNS);
  for (int k = 0; k < nspec; k++)
    spec[k] = ecsl_check_spec(L, 1, first + k, fn);
  return nspec;
}

/* Set the loop's columns into st (the schemas they were resolved under:
** gen). */
static void columns_setup(lcolumns *st, const colspec *spec, int nspec,
                          uint32_t gen) {
  for (int k = 0; k < nspec; k++) st->col[k] = spec[k];
  st->ncols = (uint32_t)nspec;
  st->n = 0;
  st->schema_gen = gen;
}

/* q:columns(spec, ...) -> next, state, nil, state */
int ecsl_l_query_columns(lua_State *L) {
  lquery *lq = ecsl_check_query(L, 1);
  colspec spec[MAX_COLUMNS];
  lcolumns *st;
  ecs_err err;
  /* the schemas the specs are resolved under: a finalizer run by any
  ** allocation below may redefine a component (the loop then stops) */
  uint32_t gen = ecsl_world_gen(lq->lw);
  int nspec = columns_specs(L, 2, spec, "q:columns"), sidx;
  st = columns_state(L, lq, QC_COLUMNS, &ecsl_columns_tag, "q:columns", nspec);
  sidx = lua_gettop(L);
  columns_setup(st, spec, nspec, gen);
  if (lq->lw->w == NULL) return ecsl_closed(L);
  err = ecs_query_iter_begin(lq->lw->w, lq->q, &st->it);
  if (err != ECS_ERR_OK) return ecsl_query_fail(L, "columns", err);
  st->active = 1;
  ecsl_push_cfn(L, l_columns_next);
  lua_pushvalue(L, sidx);
  lua_pushnil(L);
  lua_pushvalue(L, sidx);
  ecsl_charge(L, lq->lw); /* the loop body may run any Lua too */
  return 4;
}

/* ----------------------------------------------------------------------
** q:each_chunk(fn, spec, ...): the callback form of q:columns, with no
** to-be-closed value: fn(n, arrays...) once per chunk, the arrays filled
** and written back by the same code as q:columns' (docs/queries.md).
**
** The loop runs in a protected call (each_chunk_body under lua_pcall), as
** q:each's does, so that whatever ends it (fn's error, a bad value at
** write-back, a memory error, a closed world, a redefinition) unpins the
** snapshot and uncounts the call before the error goes on, unchanged. fn
** itself runs in a protected call of its own, so that the chunk it was
** given is written back (quietly: a chunk with a bad value is dropped
** whole) before its error goes on, as q:columns' __close does.
**
** The state is a columns state of its own class, kept in its own cache
** slot: it is never handed to Lua, so no Lua code can step or close the
** loop it runs.
** ------------------------------------------------------------------- */

/* Class tag of q:each_chunk's states. */
static const char chunk_tag = 'k';

/* st, fn -> (protected) entities visited */
static int each_chunk_body(lua_State *L) {
  lcolumns *st = (lcolumns *)lua_touserdata(L, 1);
  lquery *lq = st->lq;
  lworld *lw = lq->lw;
  lua_Integer visited = 0;
  for (;;) {
    uint32_t n;
    int status;
    if (lw->w == NULL || lq->q == NULL) return ecsl_closed(L);
    if (ecs_query_iter_loaded(lw->w, &st->it)) break; /* fn loaded a world */
    if (st->schema_gen != ecsl_world_gen(lw))
      return luaL_error(L, "%s: " ECSL_REDEFINED_TEXT, st->fname);
    n = ecs_query_iter_chunk(lw->w, &st->it, COLUMNS_CHUNK, st->ent, st->rows);
    if (n == 0) break;
    lua_pushvalue(L, 2);                                  /* st, fn, fn */
    columns_push_chunk(L, st, 1, n);                      /* ..., n, arrays... */
    st->n = n;
    status = lua_pcall(L, (int)st->ncols + 1, 0, 0);      /* st, fn [, err] */
    if (lw->w == NULL || lq->q == NULL)
      st->n = 0; /* fn closed the world: nothing to write to */
    /* a redefinition by fn drops the chunk: raised when fn returned */
    columns_write_back(L, st, 1, status != LUA_OK);
    if (status != LUA_OK) return lua_error(L);            /* fn's error */
    visited += (lua_Integer)n;
  }
  lua_pushinteger(L, visited);
  return 1;
}

/* q:each_chunk(fn, spec, ...) -> entities visited */
int ecsl_l_query_each_chunk(lua_State *L) {
  lquery *lq = ecsl_check_query(L, 1);
  lworld *lw = lq->lw;
  colspec spec[MAX_COLUMNS];
  lcolumns *st;
  ecs_err err;
  uint32_t gen = ecsl_world_gen(lw); /* as q:columns: the specs' schemas */
  int nspec, status;
  luaL_checktype(L, 2, LUA_TFUNCTION);
  nspec = columns_specs(L, 3, spec, "q:each_chunk");
  lua_settop(L, 2);                                       /* q, fn */
  st = columns_state(L, lq, QC_CHUNK, &chunk_tag, "q:each_chunk", nspec);
  columns_setup(st, spec, nspec, gen);                    /* q, fn, st */
  ecsl_push_cfn(L, each_chunk_body);
  lua_pushvalue(L, 3);
  lua_pushvalue(L, 2);                          /* q, fn, st, body, st, fn */
  /* anything above may have run a finalizer: check the world last */
  if (lw->w == NULL || lq->q == NULL) return ecsl_closed(L);
  err = ecs_query_iter_begin(lw->w, lq->q, &st->it);
  if (err != ECS_ERR_OK) return ecsl_query_fail(L, "each_chunk", err);
  st->active = 1;
  status = lua_pcall(L, 2, 1, 0);                         /* q, fn, st, r */
  columns_end(st);
  if (status != LUA_OK) {
    /* uncount this call, which its error skips (object.c), then raise */
    if (--lw->busy == 0 && lw->doomed != NULL) ecsl_world_release(lw);
    return lua_error(L);
  }
  if (lw->w != NULL && lq->q != NULL && !ecs_query_iter_loaded(lw->w, &st->it))
    ecs_query_complete(lw->w, lq->q); /* the pass ran to its end */
  ecsl_charge(L, lw); /* fn may run any Lua */
  return 1;
}
