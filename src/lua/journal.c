/*
** journal.c -- part of the Lua binding (src/lua/binding.h): world:journal,
** j:delta, j:undo, j:close, world:apply_delta, world:state_hash
** (src/persist/journal.h; docs/persistence.md, "The journal").
**
** The core records and applies; the binding gives it the values of lua
** fields as plain data (src/lua/plain.c) through an encode hook that runs
** inside the core's calls: it reads the world's refs table and writes
** bytes through the core's writer, allocates nothing Lua's collector sees
** and never raises, so no finalizer and no longjmp can cut into the core.
** Applying a delta decodes its values into new references first (any
** error there leaves nothing behind), then hands them to the core, which
** either takes them all or gives them back.
**
** A journal object holds its world (user value 1), so the world outlives
** it; closing the world frees the core's journal, which the object then
** sees as closed.
*/
#include "binding.h"
#include "journal.h"
#include "plain.h"

#define ECS_LUA_JOURNAL "ecs.Journal"

const char ecsl_journal_tag = 'j';

typedef struct ljournal {
  lhead h;          /* h.lw: its world */
  ecs_journal *j;   /* NULL once closed */
} ljournal;

/* The encode hook's state: the thread and the refs table's index. */
typedef struct lhost {
  lua_State *L;
  int refs;          /* 0: the world has no refs table (no lua values) */
  const char *why;   /* what made the last value not plain data */
} lhost;

/* Run encode or hash (one of out, hout) over the value of ref: the
** core's hooks, which never raise. */
static ecs_err with_value(lhost *h, uint32_t ref, ecs_writer *out,
                          uint64_t *hout) {
  bool nomem = false;
  const char *bad;
  if (h->refs == 0) return ECS_ERR_INVALID;
  if (!lua_checkstack(h->L, 4)) return ECS_ERR_NOMEM;
  lua_rawgeti(h->L, h->refs, (lua_Integer)ref);
  bad = out != NULL ? ecsl_plain_encode(h->L, -1, out, &nomem)
                    : ecsl_plain_hash(h->L, -1, hout, &nomem);
  lua_pop(h->L, 1);
  if (nomem) return ECS_ERR_NOMEM;
  if (bad != NULL) {
    h->why = bad;
    return ECS_ERR_INVALID;
  }
  return ECS_ERR_OK;
}

static ecs_err encode(void *ud, uint32_t ref, ecs_writer *out) {
  return with_value((lhost *)ud, ref, out, NULL);
}

static ecs_err hash(void *ud, uint32_t ref, uint64_t *out) {
  return with_value((lhost *)ud, ref, NULL, out);
}

/* Fill host for the world at widx (pushes the refs table or nil). */
static ecs_journal_host *push_host(lua_State *L, int widx, lhost *h,
                                   ecs_journal_host *host) {
  h->L = L;
  h->why = NULL;
  h->refs = ecsl_push_state_field(L, widx, &ecsl_refs_key) == LUA_TTABLE
                ? lua_gettop(L) : 0;
  host->encode = encode;
  host->hash = hash;
  host->ud = h;
  return host;
}

/* Raise for err; ECS_ERR_INVALID names the component, field and entity. */
static int journal_error(lua_State *L, const char *fn, ecs_err err,
                         const ecs_journal_bad *bad, const lhost *h) {
  if (err == ECS_ERR_LOST && bad != NULL && bad->lost_memory)
    return luaL_error(L, "%s: %s (the journal could not record a change: "
                      "close it)", fn, ecs_strerror(ECS_ERR_NOMEM));
  if (err == ECS_ERR_INVALID && bad->component != NULL)
    return luaL_error(L, "%s: %s.%s of entity(%d.%d): %s (%s)", fn,
                      bad->component, bad->field,
                      (int)ecs_entity_index(bad->entity),
                      (int)ecs_entity_generation(bad->entity),
                      h->why != NULL ? h->why : "not plain data",
                      ECSL_PLAIN_TEXT);
  return ecsl_error(L, NULL, fn, err, NULL, 0);
}

/* The open journal of the object at 1, or an error. */
static ecs_journal *check_journal(lua_State *L, const char *fn) {
  ljournal *lj = ecsl_self(L, ljournal);
  if (lj->h.lw->w == NULL) ecsl_closed(L);
  if (lj->j == NULL || ecs_world_journal(lj->h.lw->w) != lj->j)
    luaL_error(L, "%s: the journal is closed", fn);
  return lj->j;
}

/* world:journal() -> j: records every change from now on */
int ecsl_l_world_journal(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  lworld *lw = self_lworld(L);
  ljournal *lj;
  lhost h;
  ecs_journal_host host;
  ecs_journal_bad bad;
  ecs_err err;
  lua_settop(L, 1);
  lj = (ljournal *)lua_newuserdatauv(L, sizeof *lj, 1);  /* world, j */
  ecsl_init_head(&lj->h, &ecsl_journal_tag, lw);
  lj->j = NULL;
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, 2, 1);
  luaL_setmetatable(L, ECS_LUA_JOURNAL);
  if ((w = lw->w) == NULL) return ecsl_closed(L); /* a finalizer closed it */
  memset(&bad, 0, sizeof bad);
  push_host(L, 1, &h, &host);                             /* world, j, refs */
  err = ecs_journal_open(w, &host, &lj->j, &bad);
  if (err != ECS_ERR_OK) return journal_error(L, "world:journal", err, &bad, &h);
  lua_settop(L, 2);
  ecsl_charge(L, lw);
  return 1;
}

/* Push the string [p, p + n) (light userdata, size): run protected with
** the collector stopped, so that no finalizer runs while the core holds
** the delta it has not marked yet. */
static int push_bytes(lua_State *L) {
  const char *p = (const char *)lua_touserdata(L, 1);
  size_t n = (size_t)lua_tointeger(L, 2);
  lua_pushlstring(L, p, n);
  return 1;
}

/* Copy [p, p + n) into a Lua string on the stack; no finalizer runs.
** @return false, with the error object pushed, when out of memory. */
static bool push_string_quietly(lua_State *L, const void *p, size_t n) {
  int running = lua_gc(L, LUA_GCISRUNNING), status;
  if (running > 0) lua_gc(L, LUA_GCSTOP);
  lua_pushcfunction(L, push_bytes);
  lua_pushlightuserdata(L, (void *)(uintptr_t)p);
  lua_pushinteger(L, (lua_Integer)n);
  status = lua_pcall(L, 2, 1, 0);
  if (running > 0) lua_gc(L, LUA_GCRESTART);
  return status == LUA_OK;
}

/* j:delta() -> string: the changes since the mark; the mark moves to now */
static int l_journal_delta(lua_State *L) {
  ecs_journal *j = check_journal(L, "journal:delta");
  ecs_world *w = ecsl_self(L, ljournal)->h.lw->w;
  lhost h;
  ecs_journal_host host;
  ecs_journal_bad bad;
  const void *data;
  size_t size;
  ecs_err err;
  lua_settop(L, 1);
  lua_getiuservalue(L, 1, 1);                               /* j, world */
  /* values released earlier are unref'd now, before anything changes:
  ** nothing after the mark moves may raise */
  ecs_lua_drain_refs(L, 2);
  if ((w = ecsl_self(L, ljournal)->h.lw->w) == NULL) return ecsl_closed(L);
  memset(&bad, 0, sizeof bad);
  push_host(L, 2, &h, &host);                               /* j, world, refs */
  err = ecs_journal_delta(w, j, &host, &data, &size, &bad);
  (void)ecs_journal_lost(j, &bad.lost_memory);
  if (err != ECS_ERR_OK) return journal_error(L, "journal:delta", err, &bad, &h);
  if (!push_string_quietly(L, data, size)) return lua_error(L); /* unmarked */
  ecs_journal_mark(w, j); /* the old values it let go: drained next time */
  return 1;
}

/* j:undo(): the world goes back to the journal's mark */
static int l_journal_undo(lua_State *L) {
  ecs_journal *j = check_journal(L, "journal:undo");
  ecs_world *w = ecsl_self(L, ljournal)->h.lw->w;
  ecs_err err;
  lua_settop(L, 1);
  lua_getiuservalue(L, 1, 1);                               /* j, world */
  ecs_lua_drain_refs(L, 2); /* before: nothing after the undo may raise */
  if ((w = ecsl_self(L, ljournal)->h.lw->w) == NULL) return ecsl_closed(L);
  err = ecs_journal_undo(w, j);
  if (err != ECS_ERR_OK) {
    ecs_journal_bad bad;
    memset(&bad, 0, sizeof bad);
    (void)ecs_journal_lost(j, &bad.lost_memory);
    return journal_error(L, "journal:undo", err, &bad, NULL);
  }
  return 0; /* the values undone wait in the drop list for the next drain */
}

/* Stop j (idempotent; nothing to do once its world closed: the world's
** close freed it). */
static void stop(lua_State *L, ljournal *lj, int jidx) {
  if (lj->j == NULL) return;
  if (lj->h.lw != NULL && lj->h.lw->w != NULL &&
      ecs_world_journal(lj->h.lw->w) == lj->j) {
    ecs_journal_close(lj->h.lw->w, lj->j);
    lj->j = NULL;
    lua_getiuservalue(L, jidx, 1);
    ecs_lua_drain_refs(L, lua_gettop(L));
    lua_pop(L, 1);
  }
  lj->j = NULL;
}

/* j:close(): stops recording; also __close and __gc */
static int l_journal_close(lua_State *L) {
  stop(L, ecsl_self(L, ljournal), 1);
  return 0;
}

static int l_journal_meta_close(lua_State *L) {
  ljournal *lj = (ljournal *)ecsl_test_object(L, 1, &ecsl_journal_tag);
  if (lj != NULL) stop(L, lj, 1);
  return 0;
}

/* j:active() -> boolean: recording (not closed, its world open) */
static int l_journal_active(lua_State *L) {
  ljournal *lj = ecsl_self(L, ljournal);
  lua_pushboolean(L, lj->j != NULL && lj->h.lw->w != NULL &&
                         ecs_world_journal(lj->h.lw->w) == lj->j);
  return 1;
}

static int l_journal_tostring(lua_State *L) {
  lua_pushfstring(L, "ecs.Journal (%p)", lua_touserdata(L, 1));
  return 1;
}

/* ======================================================================
** Applying deltas
** ==================================================================== */

/* The values of a delta, decoded: a table at the top of the stack. */
typedef struct vjob {
  lua_State *L;
  int values;
  uint32_t n;
  const char *fn;
} vjob;

static ecs_err decode_value(void *ud, const unsigned char *p, size_t len) {
  vjob *v = (vjob *)ud;
  ecsl_plain_dec d;
  v->n++;
  if (len == 0) return ECS_ERR_OK; /* an empty cell: no value */
  d.p = p;
  d.at = 0;
  d.n = len;
  d.fn = v->fn;
  ecsl_plain_decode(v->L, &d); /* raises for bad data: nothing made yet */
  if (d.at != d.n) ecsl_plain_fail(v->L, &d);
  lua_rawseti(v->L, v->values, (lua_Integer)v->n);
  return ECS_ERR_OK;
}

/* make refs for values[1..n] (nil: 0) into refs[]; under pcall */
static int make_value_refs(lua_State *L) { /* refs*, n, values, reftable */
  uint32_t *refs = (uint32_t *)lua_touserdata(L, 1);
  lua_Integer n = lua_tointeger(L, 2);
  for (lua_Integer k = 1; k <= n; k++) {
    if (lua_rawgeti(L, 3, k) == LUA_TNIL) {
      lua_pop(L, 1);
      continue;
    }
    refs[k - 1] = (uint32_t)luaL_ref(L, 4);
  }
  return 0;
}

static void unref_values(lua_State *L, int reftable, const uint32_t *refs,
                         uint32_t n) {
  for (uint32_t k = 0; k < n; k++)
    if (refs[k] != 0) luaL_unref(L, reftable, (int)refs[k]);
}

static const char *delta_error_text(lua_State *L, ecs_err err,
                                    const ecs_delta *d) {
  const char *what = err == ECS_ERR_NO_MANAGER
                         ? "the delta names a manager the world does not have"
                     : err == ECS_ERR_SCHEMA_DIFFERS
                         ? "a manager's schema in the delta differs from the world's"
                     : err == ECS_ERR_VERSION
                         ? "unsupported delta format version"
                         : ecs_strerror(err);
  if (d->bad_name == NULL) return what;
  lua_pushlstring(L, d->bad_name, d->bad_name_len);
  return lua_pushfstring(L, "%s ('%s')", what, lua_tostring(L, -1));
}

/* world:apply_delta(d): the world, equal to d's base, becomes equal to the
** journal's world when d was made; else an error and no change */
int ecsl_l_world_apply_delta(lua_State *L) {
  static const char fn[] = "world:apply_delta";
  ecs_world *w = check_world(L, 1);
  lworld *lw = self_lworld(L);
  size_t len;
  const char *data;
  ecs_delta d;
  uint32_t *refs = NULL;
  int reftable = 0;
  lhost h;
  ecs_journal_host host;
  ecs_journal_bad bad;
  ecs_err err;
  if (lua_type(L, 2) != LUA_TSTRING) return luaL_typeerror(L, 2, "string");
  lua_settop(L, 2);
  ecs_lua_drain_refs(L, 1); /* before: nothing after the apply may raise */
  if ((w = lw->w) == NULL) return ecsl_closed(L);
  data = lua_tolstring(L, 2, &len);
  err = ecs_delta_open(w, &d, data, len);
  if (err == ECS_ERR_NO_MANAGER && ecs_world_disabled(w) == NULL &&
      d.bad_name_len == sizeof ECS_DISABLED_NAME - 1 &&
      memcmp(d.bad_name, ECS_DISABLED_NAME, d.bad_name_len) == 0) {
    /* the source disabled entities: this world makes the tag too */
    if ((err = ecs_world_disabled_ready(w)) == ECS_ERR_OK)
      err = ecs_delta_open(w, &d, data, len);
  }
  if (err != ECS_ERR_OK)
    return ecsl_error(L, NULL, fn, err, delta_error_text(L, err, &d), 0);
  if (d.nvalues > 0) {
    vjob v;
    lua_createtable(L, (int)(d.nvalues < 1024 ? d.nvalues : 1024), 0); /* 3 */
    v.L = L;
    v.values = 3;
    v.n = 0;
    v.fn = fn;
    (void)ecs_delta_each_value(w, &d, decode_value, &v);
    refs = (uint32_t *)lua_newuserdatauv(L, (size_t)d.nvalues * sizeof *refs, 0);
    memset(refs, 0, (size_t)d.nvalues * sizeof *refs);      /* 4 */
    ecsl_need_state_field(L, 1, &ecsl_refs_key);              /* 5 */
    reftable = 5;
    lua_pushcfunction(L, make_value_refs);
    lua_pushlightuserdata(L, refs);
    lua_pushinteger(L, (lua_Integer)d.nvalues);
    lua_pushvalue(L, 3);
    lua_pushvalue(L, reftable);
    if (lua_pcall(L, 4, 0, 0) != LUA_OK) {
      unref_values(L, reftable, refs, d.nvalues);
      return lua_error(L);
    }
    /* the allocations may have run finalizers that closed the world */
    if ((w = lw->w) == NULL) {
      unref_values(L, reftable, refs, d.nvalues);
      return ecsl_closed(L);
    }
  }
  memset(&bad, 0, sizeof bad);
  push_host(L, 1, &h, &host);
  err = ecs_delta_apply(w, &d, refs, &host, &bad);
  if (err != ECS_ERR_OK) {
    if (refs != NULL) unref_values(L, reftable, refs, d.nvalues);
    if (err == ECS_ERR_INVALID) return journal_error(L, fn, err, &bad, &h);
    return ecsl_error(L, NULL, fn, err, NULL, 0);
  }
  return 0; /* the values replaced wait in the drop list for the next drain */
}

/* world:state_hash() -> integer: equal worlds have equal hashes */
int ecsl_l_world_state_hash(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  lhost h;
  ecs_journal_host host;
  ecs_journal_bad bad;
  uint64_t hash;
  ecs_err err;
  lua_settop(L, 1);
  memset(&bad, 0, sizeof bad);
  push_host(L, 1, &h, &host);
  err = ecs_world_state_hash(w, &host, &hash, &bad);
  if (err != ECS_ERR_OK) return journal_error(L, "world:state_hash", err, &bad, &h);
  lua_pushinteger(L, (lua_Integer)hash);
  return 1;
}

static const luaL_Reg journal_methods[] = {
  {"delta", l_journal_delta},
  {"undo", l_journal_undo},
  {"close", l_journal_close},
  {"active", l_journal_active},
  {NULL, NULL}
};

void ecsl_open_journals(lua_State *L) {
  luaL_newmetatable(L, ECS_LUA_JOURNAL);                   /* mt */
  lua_newtable(L);                                         /* mt, methods */
  ecsl_set_methods(L, journal_methods, &ecsl_journal_tag, ECS_LUA_JOURNAL);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__methods");
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_journal_meta_close);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, l_journal_meta_close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, l_journal_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
}
