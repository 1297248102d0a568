/*
** pointers.c -- part of the Lua binding (src/lua/binding.h): q:pointers,
** LuaJIT's zero-copy loop. Each step yields n and one FFI pointer per
** spec into the C columns (query.h's chunk cursor), typed by the field
** ("float *", "const double *" for ":in" ...) and offset so that p[1] .. p[n]
** are the chunk's rows: always the rows themselves, however short the
** run (query_cursor.c), so nothing is copied or written back and a write
** made meanwhile by another path (a set, a nested loop) is neither stale
** nor overwritten. The cursor pins the columns' managers: a change
** that would move the rows the pointers address raises ECS_ERR_PINNED
** until the loop ends, so no write through a pointer can land outside
** them. The loop holds its world too (busy): a world closed inside the
** loop is released when the loop ends.
**
** The state (class ecs.PointerLoop, registered on first use, where the FFI
** exists) ends when the loop runs out, by loop:close() (a loop left early
** by break or an error) or when the collector finalizes it.
*/
#include "binding.h"

#define ECS_LUA_POINTER_LOOP "ecs.PointerLoop"

static const char pointers_tag = 'p';
static const char ffi_key = 'f'; /* registry: { cast = ffi.cast, [k] = ctype } */

typedef struct lpointers {
  lhead h;
  lquery *lq;
  int active;            /* the cursor holds pins and the world (busy) */
  uint32_t ncols;
  size_t elem[ECS_QUERY_MAX_TERMS];
  uintptr_t base[ECS_QUERY_MAX_TERMS]; /* column k's values (fixed by the pins) */
  uint8_t shift[ECS_QUERY_MAX_TERMS];  /* log2 of elem[k]: a row from an offset */
} lpointers;

/* The cursor lives in the userdata after the state (query.h: the caller's
** memory), so that a loop allocates nothing in C. */
#define CURSOR_OFFSET ((sizeof(lpointers) + 7u) & ~(size_t)7u)
#define CURSOR(st) ((ecs_query_cursor *)(void *)((unsigned char *)(st) + CURSOR_OFFSET))

/* The pointer ctype of a field type, writable or not. */
static const char *ctype_name(ecs_type t, int write) {
  switch (t) {
#define CT(T, name) case T: return write ? name " *" : "const " name " *";
  CT(ECS_F32, "float") CT(ECS_F64, "double")
  CT(ECS_I8, "int8_t") CT(ECS_I16, "int16_t") CT(ECS_I32, "int32_t")
  CT(ECS_I64, "int64_t") CT(ECS_U8, "uint8_t") CT(ECS_U16, "uint16_t")
  CT(ECS_U32, "uint32_t") CT(ECS_BOOL, "bool")
#undef CT
  default: return NULL;
  }
}

/* End the loop: free the cursor (its pins), then let go of the world,
** which a close inside the loop left for the loop to release. Nothing
** is written back: every chunk was the rows themselves. Never raises. */
static void pointers_end(lpointers *st) {
  lworld *lw;
  ecs_world *w;
  if (!st->active) return;
  lw = st->lq->lw;
  w = lw->w != NULL ? lw->w : lw->doomed;
  if (w != NULL) ecs_query_cursor_end(w, CURSOR(st), false);
  st->active = 0;
  if (--lw->busy == 0 && lw->doomed != NULL) ecsl_world_release(lw);
}

/*
** The cleanup a loop put off (cleanup.c: a `!remove` policy on a pinned
** component waits for the pins to go), run when the loop ends by running
** out or by close(); its observers' errors come out of that call. A loop
** the collector finalizes leaves it to the next destroy.
*/
static void owed_cleanup(lua_State *L, lworld *lw, const char *fn) { /* q:<fn> */
  ecs_err err;
  if (lw->w == NULL) return;
  ecs_cleanup_hold(lw->w);
  if ((err = ecs_cleanup_release(lw->w)) != ECS_ERR_OK)
    ecsl_query_fail(L, fn, err);
}

/* __gc: unpin only (a finalizer must not raise nor run observers). */
static int pointers_gc(lua_State *L) {
  lpointers *st = (lpointers *)ecsl_test_object(L, 1, &pointers_tag);
  if (st != NULL) pointers_end(st);
  return 0;
}

/* loop:close(): end a loop left early; its pins go at once. Idempotent. */
static int pointers_close(lua_State *L) {
  lpointers *st = ecsl_self(L, lpointers);
  int active = st->active;
  pointers_end(st);
  if (active) owed_cleanup(L, st->lq->lw, "pointers");
  return 0;
}

/*
** The step is Lua code run by LuaJIT's compiler (push_step), not a C
** function: every chunk is a run of rows handed out in place however
** short (query_cursor.c), so a query whose rows are scattered takes a step
** per run, and a step through the Lua API (a C function called from a
** trace ends it; one ffi.cast call per column) cost 160-340 ns where a
** compiled step costs a few. The step calls pointers_run through the FFI
** (a plain C function: no Lua API, no error) and adds each column's row
** to the loop's typed base pointers, kept in the entry's table `loops`
** (loop -> { p1, p2, ... }, weak keys): a column's rows never move while
** its manager is pinned, so its base is taken once per loop. The end of
** the loop, and a state that is not a loop, go to C functions of the Lua
** API (pointers_finish, pointers_bad).
*/

/* The next run into rows (row of column k's first value), its length, or
** 0 at the end (or for a loop closed or whose world was closed). */
static uint32_t pointers_run(void *loop, uint32_t *rows) {
  lpointers *st = (lpointers *)loop;
  void *ptr[ECS_QUERY_MAX_TERMS];
  uint32_t n = 0;
  if (!st->active || st->lq->lw->w == NULL) return 0;
  if (ecs_query_cursor_next(st->lq->lw->w, CURSOR(st), ptr, NULL, &n) != ECS_ERR_OK)
    return 0; /* (it has no error left to return: the end says it) */
  for (uint32_t k = 0; k < st->ncols && n > 0; k++)
    rows[k] = (uint32_t)(((uintptr_t)ptr[k] - st->base[k]) >> st->shift[k]);
  return n;
}

/* pointers_run's address, where the FFI reads it (a function pointer
** cannot be a light userdata in ISO C: the struct's address is). */
typedef struct pointers_api {
  uint32_t (*run)(void *loop, uint32_t *rows);
} pointers_api;
static const pointers_api ffi_api = {pointers_run};

/* loop -> (nothing): the end, reached when pointers_run returned 0. */
static int pointers_finish(lua_State *L) {
  lpointers *st = (lpointers *)ecsl_test_object(L, 1, &pointers_tag);
  if (st == NULL || !st->active) return 0;
  pointers_end(st); /* ran out, or the world was closed in the loop */
  ecsl_charge(L, st->lq->lw); /* an open journal's captures of its chunks */
  owed_cleanup(L, st->lq->lw, "pointers");
  return 0;
}

/* x -> error: the step was given something that is not a loop. */
static int pointers_bad(lua_State *L) {
  return ecsl_object_error(L, 1, ECS_LUA_POINTER_LOOP);
}

/*
** The step for loops of ncols columns, one function object for all of
** them (cached in the entry): LuaJIT's trace of a loop guards on the
** iterator's identity (a new function per loop made a new side trace each
** frame, until the loop was blacklisted: 1.5x slower per entity).
*/
static void push_step(lua_State *L, int entry, uint32_t ncols) {
  luaL_Buffer b;
  if (lua_rawgeti(L, entry, (lua_Integer)ncols) == LUA_TFUNCTION) return;
  lua_pop(L, 1);
  luaL_buffinit(L, &b);
  luaL_addstring(&b,
    "local loops, run, rows, finish, bad = ...\n"
    "return function(loop)\n"
    "  local p = loops[loop]\n"
    "  if p == nil then return bad(loop) end\n"
    "  local n = run(loop, rows)\n"
    "  if n == 0 then return finish(loop) end\n"
    "  return n");
  for (uint32_t k = 0; k < ncols; k++) {
    lua_pushfstring(L, ", p[%d] + rows[%d]", (int)k + 1, (int)k);
    luaL_addvalue(&b);
  }
  luaL_addstring(&b, "\nend\n");
  luaL_pushresult(&b);                                    /* src */
  if (luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1),
                      "=q:pointers") != 0)
    lua_error(L);
  lua_remove(L, -2);                                      /* chunk */
  lua_getfield(L, entry, "loops");
  lua_getfield(L, entry, "run");
  lua_getfield(L, entry, "rows");
  lua_pushcfunction(L, pointers_finish);
  lua_pushcfunction(L, pointers_bad);
  lua_call(L, 5, 1);                                      /* step */
  lua_pushvalue(L, -1);
  lua_rawseti(L, entry, (lua_Integer)ncols);
}

/* Push LuaJIT's ffi table entry (registry) or raise where there is none. */
static void push_ffi(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &ffi_key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "ffi");
  if (!lua_isfunction(L, -2) || lua_pcall(L, 1, 1, 0) != 0 ||
      !lua_istable(L, -1))
    luaL_error(L, "q:pointers: needs LuaJIT's FFI, which this Lua does not "
               "have (use q:columns or q:each_chunk)");
  lua_newtable(L);                                        /* ffi, entry */
  lua_getfield(L, -2, "cast");
  lua_setfield(L, -2, "cast");
  lua_getfield(L, -2, "typeof");
  lua_setfield(L, -2, "typeof");
  lua_getfield(L, -2, "new");                             /* ffi, entry, new */
  lua_pushliteral(L, "uint32_t[?]");
  lua_pushinteger(L, (lua_Integer)ECS_QUERY_MAX_TERMS);
  lua_call(L, 2, 1);
  lua_setfield(L, -2, "rows"); /* every step's: read at once, so shared */
  lua_getfield(L, -2, "cast");
  lua_pushliteral(L, "struct { uint32_t (*run)(void *, uint32_t *); } *");
  lua_pushlightuserdata(L, (void *)(uintptr_t)&ffi_api);
  lua_call(L, 2, 1);
  lua_getfield(L, -1, "run");
  lua_setfield(L, -3, "run");
  lua_pop(L, 1);
  lua_newtable(L);                                        /* ffi, entry, loops */
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_setfield(L, -2, "loops");
  lua_remove(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ffi_key);
  /* the state's class, now that it can exist */
  if (luaL_newmetatable(L, ECS_LUA_POINTER_LOOP)) {
    static const luaL_Reg meta[] = {
      {"__gc", pointers_gc}, {"__close", pointers_gc}, {NULL, NULL}};
    static const luaL_Reg methods[] = {{"close", pointers_close}, {NULL, NULL}};
    luaL_setfuncs(L, meta, 0);
    ecsl_class_methods(L, methods, &pointers_tag, ECS_LUA_POINTER_LOOP);
    lua_pushliteral(L, "locked");
    lua_setfield(L, -2, "__metatable");
  }
  lua_pop(L, 1);
}

/* q:pointers(spec, ...) -> next, state, nil */
int ecsl_l_query_pointers(lua_State *L) {
  lquery *lq = ecsl_check_query(L, 1);
  int nspec = lua_gettop(L) - 1, top, ctypes;
  ecs_column_ref cols[ECS_QUERY_MAX_TERMS];
  lpointers *st;
  ecs_err err;
  /* the schemas the specs are resolved under: a finalizer run by any
  ** allocation below may redefine a component (then the types are stale) */
  uint32_t gen = ecsl_world_gen(lq->lw);
  if (nspec < 1) luaL_argerror(L, 2, "column spec expected");
  if (nspec > (int)ECS_QUERY_MAX_TERMS)
    luaL_error(L, "q:pointers: too many columns (limit %d)", (int)ECS_QUERY_MAX_TERMS);
  for (int k = 0; k < nspec; k++) {
    colspec s = ecsl_check_spec(L, 1, k + 2, "q:pointers");
    if (s.term == ENTITY_TERM || ctype_name(s.type, s.write) == NULL)
      luaL_error(L, "q:pointers: column '%s': entity values have no pointer "
                 "type (use q:columns)", lua_tostring(L, k + 2));
    cols[k].c = ecs_query_with(lq->q, s.term);
    cols[k].field = s.field;
    cols[k].write = s.write != 0;
    if (ecs_query_optional(lq->q) >> s.term & 1u)
      luaL_error(L, "q:pointers: column '%s': %s is an optional term, whose "
                 "absent instances have no place to point at (use q:columns "
                 "or q:each_chunk)", lua_tostring(L, k + 2),
                 ecs_component_name(cols[k].c));
    if (ecs_component_owned(cols[k].c))
      luaL_error(L, "q:pointers: column '%s': %s's columns are its manager's, "
                 "which moves their rows itself (use q:apply, q:columns or "
                 "q:each_chunk)", lua_tostring(L, k + 2),
                 ecs_component_name(cols[k].c));
  }
  push_ffi(L);                                            /* ffi */
  top = lua_gettop(L);
  lua_createtable(L, nspec, 0);                           /* ffi, ctypes */
  ctypes = lua_gettop(L);
  for (int k = 0; k < nspec; k++) {
    const ecs_field_def *f = ecs_component_field(cols[k].c, cols[k].field);
    const char *name = ctype_name(f->type, cols[k].write);
    lua_getfield(L, top, name);                           /* cached ctype */
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_getfield(L, top, "typeof");
      lua_pushstring(L, name);
      lua_call(L, 1, 1);
      lua_pushvalue(L, -1);
      lua_setfield(L, top, name);
    }
    lua_rawseti(L, ctypes, k + 1);
  }
  st = (lpointers *)lua_newuserdatauv(L, CURSOR_OFFSET + ecs_query_cursor_size(), 1);
  ecsl_init_head(&st->h, &pointers_tag, lq->lw);
  st->lq = lq;
  st->active = 0;
  st->ncols = (uint32_t)nspec;
  for (int k = 0; k < nspec; k++) {
    st->elem[k] = ecs_type_size(ecs_component_field(cols[k].c, cols[k].field)->type);
    for (st->shift[k] = 0; ((size_t)1 << st->shift[k]) < st->elem[k];) st->shift[k]++;
  }
  luaL_setmetatable(L, ECS_LUA_POINTER_LOOP);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);                            /* ffi, ctypes, st */
  push_step(L, top, (uint32_t)nspec);                     /* ..., st, step */
  lua_getfield(L, top, "loops");                          /* ..., st, step, loops */
  lua_pushvalue(L, -3);
  lua_createtable(L, nspec, 0);                           /* ..., loops, st, p */
  if (lq->lw->w == NULL) return ecsl_closed(L);
  if (ecsl_world_gen(lq->lw) != gen)
    return luaL_error(L, "q:pointers: " ECSL_REDEFINED_TEXT);
  err = ecs_query_cursor_begin(lq->lw->w, lq->q, cols, (uint32_t)nspec, CURSOR(st));
  if (err != ECS_ERR_OK) return ecsl_query_fail(L, "pointers", err);
  st->active = 1;
  lq->lw->busy++;
  /* the bases after the begin (its re-alignment may move rows): one
  ** element before row 0, so that base + row is p[1] of a run at row (a
  ** column with no storage yet stays NULL: pinned, it gets no row) */
  for (int k = 0; k < nspec; k++) {
    st->base[k] = (uintptr_t)ecs_component_column(cols[k].c, cols[k].field);
    lua_getfield(L, top, "cast");
    lua_rawgeti(L, ctypes, k + 1);
    lua_pushlightuserdata(L, (void *)(st->base[k] != 0 ? st->base[k] - st->elem[k] : 0));
    lua_call(L, 2, 1);
    lua_rawseti(L, -2, k + 1);
  }
  lua_rawset(L, -3);                                      /* ..., st, step, loops */
  lua_pop(L, 1);
  lua_insert(L, -2);                                      /* ..., step, st */
  lua_pushnil(L);
  return 3;
}
