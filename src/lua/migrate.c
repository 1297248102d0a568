/*
** migrate.c -- part of the Lua binding (src/lua/binding.h): hot reload of
** a component, world:component(name, fields, { migrate = ... }) on a name
** that exists (docs/persistence.md, "Migration and hot reload"), and
** world:restore(blob, { migrate = true }).
**
** A redefinition is checked and converted whole before the core changes
** anything (ecs_component_redefine): the new fields are matched to old
** ones by name (or by the rename map), and every value whose field changes
** type is read as Lua reads it and stored as C:set_field would store it
** (nil gives zero) into a buffer; a value the new type refuses raises,
** naming the component, the field and the entity. New lua values become
** references last, under lua_pcall, so that a memory error there releases
** the ones made. The core then builds the new columns from the old ones
** and the buffer. Then the Lua object takes the new schema: its types,
** its name index (user value 2), a new generation (prefabs made before
** refuse to spawn) and the world's schema generation (queries resolve
** their column specs again).
*/
#include <string.h>

#include "binding.h"
#include "schema_match.h"

int ecsl_redefined(lua_State *L, const char *cls, const char *fn,
                   const lcomponent *lc) {
  return luaL_error(L, "%s:%s: %s was redefined during the call (by a "
                    "finalizer): nothing was done", cls, fn,
                    ecs_component_name(lc->c));
}

/* The values of the fields that change type, row by row. */
typedef struct convert_buf {
  ecs_scalar *v;           /* nconv * size */
  uint32_t size, nconv;
  uint32_t slot[ECS_MAX_FIELDS]; /* new field -> its part of v */
} convert_buf;

static ecs_scalar take_converted(void *ud, uint32_t k, uint32_t i) {
  const convert_buf *b = (const convert_buf *)ud;
  return b->v[(size_t)b->slot[k] * b->size + i];
}

/* Is the owner of a row alive (a dead one's record is garbage)? */
static bool row_live(const ecs_world *w, ecs_entity e) {
  return (e & ECS_PURGED) == 0 && ecs_alive(w, e);
}

/*
** from[k] for every new field (the core's ecs_schema_match) with the
** rename map of the options at opts (migrate.rename, read raw: no
** metamethod of the caller's tables runs in between) read into entries:
** strings only, checked in the map's order, so a non-string entry raises
** after the core checked the entries before it.
*/
static void match_fields(lua_State *L, const ecs_component *c,
                         const ecs_field_def *defs, uint32_t n, int opts,
                         uint32_t *from) {
  ecs_rename *ren = NULL;
  size_t nren = 0, count = 0;
  int top = lua_gettop(L), ridx = 0;
  char msg[256];
  lua_pushliteral(L, "migrate");
  if (lua_rawget(L, opts) == LUA_TTABLE) {
    lua_pushliteral(L, "rename");
    if (lua_rawget(L, -2) == LUA_TTABLE) ridx = lua_gettop(L);
    else if (!lua_isnil(L, -1))
      luaL_error(L, "world:component: bad option 'rename' (table expected, "
                 "got %s)", luaL_typename(L, -1));
  }
  if (ridx != 0) {
    lua_pushnil(L);
    while (lua_next(L, ridx)) {
      lua_pop(L, 1);
      count++;
    }
    ren = (ecs_rename *)lua_newuserdatauv(L, (count > 0 ? count : 1) * sizeof *ren, 0);
    lua_pushnil(L);
    while (lua_next(L, ridx)) {                           /* old, new */
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING) {
        if (ecs_schema_check_renames(c, defs, n, ren, nren, msg, sizeof msg) !=
            ECS_ERR_OK)
          luaL_error(L, "world:component: %s", msg);
        luaL_error(L, "world:component: rename maps old field names to new "
                   "ones (strings), got %s = %s", luaL_typename(L, -2),
                   luaL_typename(L, -1));
      }
      ren[nren].old_name = lua_tolstring(L, -2, &ren[nren].old_len);
      ren[nren].new_name = lua_tolstring(L, -1, &ren[nren].new_len);
      nren++;
      lua_pop(L, 1);                                      /* old */
    }
  }
  if (ecs_schema_match(c, defs, n, ren, nren, from, msg, sizeof msg) != ECS_ERR_OK)
    luaL_error(L, "world:component: %s", msg);
  lua_settop(L, top);
}

/* Raise: the value at -1 (old field j of entity e) does not fit type t. */
static int convert_error(lua_State *L, const ecs_component *c, uint32_t j,
                         ecs_entity e, ecs_type t, const char *expect) {
  const char *got = lua_type(L, -1) == LUA_TNUMBER
                        ? lua_pushfstring(L, "%s", lua_tostring(L, -1))
                        : luaL_typename(L, -1);
  bool range = strcmp(expect, ecs_type_name(t)) == 0; /* an integer too big */
  return luaL_error(L, "world:component: cannot convert %s.%s of entity(%d.%d) "
                    "to %s (%s%s, got %s)", ecs_component_name(c),
                    ecs_component_field(c, j)->name, (int)ecs_entity_index(e),
                    (int)ecs_entity_generation(e), ecs_type_name(t), expect,
                    range ? " out of range" : " expected", got);
}

/*
** The buffer of the values of the fields that change type (pushed), with
** every live value converted to a type other than lua, read and checked
** (raises, naming the component, field and entity).
*/
static convert_buf *convert_values(lua_State *L, ecs_component *c,
                                   const ecs_field_def *defs, uint32_t n,
                                   const uint32_t *from, int refs) {
  ecs_world *w = check_world(L, 1);
  convert_buf *b;
  int top;
  b = (convert_buf *)lua_newuserdatauv(L, sizeof *b, 1);
  memset(b, 0, sizeof *b);
  b->size = ecs_component_size(c);
  for (uint32_t k = 0; k < n; k++)
    if (from[k] != ECS_NO_FIELD &&
        defs[k].type != ecs_component_field(c, from[k])->type)
      b->slot[k] = b->nconv++;
  if (b->nconv > 0 && b->size > 0) {
    size_t cells = (size_t)b->nconv * b->size;
    b->v = (ecs_scalar *)lua_newuserdatauv(L, cells * sizeof *b->v, 0);
    memset(b->v, 0, cells * sizeof *b->v);
    lua_setiuservalue(L, -2, 1);
  }
  top = lua_gettop(L);
  /* to types other than lua: every live value read and checked (raises) */
  for (uint32_t k = 0; k < n && b->v != NULL; k++) {
    uint32_t j = from[k];
    const ecs_entity *own = ecs_component_entities(c);
    ecs_type ot, nt = defs[k].type;
    ecs_scalar *out;
    if (j == ECS_NO_FIELD || nt == ECS_LUA) continue;
    ot = ecs_component_field(c, j)->type;
    if (ot == nt) continue;
    out = b->v + (size_t)b->slot[k] * b->size;
    for (uint32_t i = 0; i < b->size; i++) {
      const char *expect;
      cvalue cv;
      int t;
      if (!row_live(w, own[i])) continue;
      ecsl_push_scalar(L, ot, ecs_value_load(ecs_component_column(c, j), ot, i),
                       refs);
      t = lua_type(L, -1);
      cv.i = 0;
      if (t != LUA_TNIL && (expect = ecsl_to_cvalue(L, -1, t, nt, &cv)) != NULL)
        (void)convert_error(L, c, j, own[i], nt, expect); /* raises */
      out[i] = cv;
      lua_settop(L, top);
    }
  }
  lua_settop(L, top);
  return b;
}

typedef struct ref_make {
  convert_buf *b;
  const uint32_t *from;
  const ecs_field_def *defs;
  uint32_t n;
  ecs_component *c;
  uint32_t done_k, done_i; /* progress: refs made before (k, i) */
} ref_make;

/* Protected: refs, job. The new lua values of the fields that become lua. */
static int make_lua_values(lua_State *L) {
  ref_make *m = (ref_make *)lua_touserdata(L, 2);
  const ecs_entity *own = ecs_component_entities(m->c);
  lworld *lw = (lworld *)lua_touserdata(L, 3);
  for (m->done_k = 0; m->done_k < m->n; m->done_k++) {
    uint32_t k = m->done_k, j = m->from[k];
    ecs_type ot;
    ecs_scalar *out;
    if (j == ECS_NO_FIELD || m->defs[k].type != ECS_LUA) continue;
    ot = ecs_component_field(m->c, j)->type;
    if (ot == ECS_LUA) continue;
    out = m->b->v + (size_t)m->b->slot[k] * m->b->size;
    for (m->done_i = 0; m->done_i < m->b->size; m->done_i++) {
      uint32_t i = m->done_i;
      if (lw->w == NULL || !row_live(lw->w, own[i])) continue;
      ecsl_push_scalar(L, ot, ecs_value_load(ecs_component_column(m->c, j), ot, i), 1);
      out[i].i = lua_isnil(L, -1) ? 0 : (int64_t)luaL_ref(L, 1);
      if (lua_gettop(L) > 3) lua_settop(L, 3); /* the nil */
    }
  }
  return 0;
}

/* Release the refs make_lua_values made before it stopped. */
static void unmake_lua_values(lua_State *L, int refs, const ref_make *m) {
  for (uint32_t k = 0; k < m->n && k <= m->done_k; k++) {
    uint32_t j = m->from[k];
    const ecs_scalar *out;
    uint32_t upto = k < m->done_k ? m->b->size : m->done_i;
    if (j == ECS_NO_FIELD || m->defs[k].type != ECS_LUA ||
        ecs_component_field(m->c, j)->type == ECS_LUA)
      continue;
    out = m->b->v + (size_t)m->b->slot[k] * m->b->size;
    for (uint32_t i = 0; i < upto; i++)
      if (out[i].i != 0) luaL_unref(L, refs, (int)out[i].i);
  }
}

/*
** The redefinition of the existing component named by the string at nidx
** to defs[0 .. n) (world at 1; the new name -> k table at index, the
** options at opts). Pushes the manager object and returns 1.
*/
int ecsl_component_redefine(lua_State *L, int nidx, const ecs_field_def *defs,
                            uint32_t n, const uint8_t *cleanup, int index,
                            int opts) {
  ecs_world *w = check_world(L, 1);
  ecs_component *c = ecs_component_find(w, lua_tostring(L, nidx));
  uint32_t from[ECS_MAX_FIELDS];
  convert_buf *b;
  lcomponent *lc;
  ref_make m;
  uint32_t gen;
  uint64_t version;
  int comp, refs;
  char msg[256];
  ecs_err err;
  if ((lc = ecsl_push_component(L, 1, c)) == NULL)
    return luaL_error(L, "world:component: no Lua object for component '%s'",
                      ecs_component_name(c));
  comp = lua_gettop(L);
  gen = ecsl_comp_gen(lc);
  /* the rows the buffer below follows: a finalizer run by an allocation
  ** may add, remove or move instances (checked before the core's call) */
  version = ecs_component_version(c);
  match_fields(L, c, defs, n, opts, from);
  if (ecs_schema_same_as(c, defs, n, from)) { /* nothing to convert: policies only */
    for (uint32_t k = 0; k < n; k++)
      if (defs[k].type == ECS_ENTITY)
        (void)ecs_component_set_cleanup(w, c, k, (ecs_cleanup)cleanup[k]);
    lua_pushvalue(L, comp);
    return 1;
  }
  /* the refs table, made now if the new schema is the first with lua */
  ecsl_need_state_field(L, 1, &ecsl_refs_key);
  refs = lua_gettop(L);
  b = convert_values(L, c, defs, n, from, refs);
  /* to lua: the references, all or none */
  memset(&m, 0, sizeof m);
  m.b = b;
  m.from = from;
  m.defs = defs;
  m.n = n;
  m.c = c;
  if (b->v != NULL) {
    lua_pushcfunction(L, make_lua_values);
    lua_pushvalue(L, refs);
    lua_pushlightuserdata(L, &m);
    lua_pushlightuserdata(L, lc->lw);
    if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
      unmake_lua_values(L, refs, &m);
      return lua_error(L);
    }
  }
  if ((w = lc->lw->w) == NULL || ecsl_comp_gen(lc) != gen ||
      ecs_component_version(c) != version) {
    m.done_k = n;
    unmake_lua_values(L, refs, &m);
    if (w == NULL) return ecsl_closed(L);
    return ecsl_redefined(L, "world", "component", lc);
  }
  err = ecs_component_redefine(w, c, defs, n, from, take_converted, b, msg,
                               sizeof msg);
  if (err != ECS_ERR_OK) {
    m.done_k = n;
    unmake_lua_values(L, refs, &m);
    if (msg[0] != '\0' && err != ECS_ERR_NOMEM)
      return luaL_error(L, "world:component: %s", msg);
    return ecs_lua_error(L, "world:component", err);
  }
  /* the Lua object takes the new schema (nothing below raises but the
  ** drain of the dropped references, after everything is in place) */
  lc->nfields = n;
  lc->nlua = 0;
  for (uint32_t k = 0; k < n; k++) {
    lc->nlua += defs[k].type == ECS_LUA;
    lc->type[k] = (uint8_t)defs[k].type;
    if (cleanup[k] != ECS_CLEANUP_NONE) /* an entity field: cannot fail */
      (void)ecs_component_set_cleanup(w, c, k, (ecs_cleanup)cleanup[k]);
  }
  lua_pushvalue(L, index);
  lua_setiuservalue(L, comp, 2);
  ecs_lua_drain_refs(L, 1);
  ecsl_charge(L, lc->lw);
  lua_pushvalue(L, comp);
  return 1;
}

/* ----------------------------------------------------------------------
** world:restore(blob, { migrate = true }) (world at 1, blob at 2). The
** blob is restored into a scratch world (ecs.restore), whose components
** are then redefined to the live world's schemas (the rules above, fields
** matched by name) or, for a component the live world does not have,
** emptied; the scratch world's snapshot is then restored into the live
** one, skipping those. The live world changes only in that last step,
** which is all or nothing; the scratch world is closed on every path.
** ------------------------------------------------------------------- */

/* Protected: 1 the live world, 2 the scratch world, 3 the renames by
** component name. */
static int migrate_into(lua_State *L) {
  ecs_world *live = ecsl_to_lworld(L, 1)->w, *tmp = ecsl_to_lworld(L, 2)->w;
  lua_Integer n;
  bool skip = false;
  ecs_snapshot s;
  ecsl_call_method(L, 2, "components", 0, 1);                  /* 4: list */
  n = (lua_Integer)lua_rawlen(L, 4);
  for (lua_Integer k = 1; k <= n; k++) {
    lcomponent *lc;
    ecs_component *mine;
    lua_rawgeti(L, 4, k);                                 /* 5: comp */
    lc = (lcomponent *)lua_touserdata(L, 5);
    if (live == NULL || tmp == NULL) return ecsl_closed(L);
    mine = ecs_component_find(live, ecs_component_name(lc->c));
    if (mine == NULL) { /* the live world dropped it: emptied, skipped */
      const ecs_entity *own = ecs_component_entities(lc->c);
      for (uint32_t i = ecs_component_size(lc->c); i-- > 0;)
        if (ecs_alive(tmp, own[i]))
          (void)ecs_component_remove(tmp, lc->c, own[i], NULL); /* no listener */
      (void)ecs_component_gc(tmp, lc->c, SIZE_MAX);
      ecs_lua_drain_refs(L, 2);
      skip = true;
    } else {
      int rename;
      lua_pushstring(L, ecs_component_name(lc->c));
      rename = lua_rawget(L, 3) != LUA_TNIL;              /* 6 */
      if (rename || !ecs_schema_same_fields(mine, lc->c)) {
        lua_pushstring(L, ecs_component_name(lc->c));     /* 7: name */
        lua_pushvalue(L, 7);
        ecsl_call_method(L, 1, "find_component", 1, 1);        /* 8: live comp */
        ecsl_call_method(L, 8, "fields", 0, 1);                /* 9: its fields */
        lua_pushvalue(L, 7);                              /* 10: name */
        lua_pushvalue(L, 9);                              /* 11: fields */
        lua_createtable(L, 0, 1);                         /* 12: opts */
        lua_createtable(L, 0, 1);                         /* 13: migrate */
        lua_pushvalue(L, 6);
        lua_setfield(L, 13, "rename");
        lua_setfield(L, 12, "migrate");
        ecsl_call_method(L, 2, "component", 3, 0);
      }
    }
    lua_settop(L, 4);
    live = ecsl_to_lworld(L, 1)->w;
    tmp = ecsl_to_lworld(L, 2)->w;
  }
  ecsl_call_method(L, 2, "snapshot", 0, 1);                    /* 5: its blob */
  ecsl_open_snapshot(L, 5, &s, "world:restore");
  ecsl_restore_into(L, 1, 5, &s, "world:restore", skip);
  return 0;
}

void ecsl_restore_migrate(lua_State *L) {
  int status, renames = 0;
  lua_settop(L, 3);
  if (lua_istable(L, 3)) { /* migrate = { rename = { Comp = { old = "new" } } } */
    static const char *const mkeys[] = {"rename", NULL};
    ecsl_check_keys(L, 3, 3, "world:restore", mkeys, false);
    lua_pushliteral(L, "rename");
    if (lua_rawget(L, 3) != LUA_TNIL) {
      if (!lua_istable(L, -1))
        luaL_error(L, "world:restore: bad option 'rename' (table expected, "
                   "got %s)", luaL_typename(L, -1));
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING || !lua_istable(L, -1))
          luaL_error(L, "world:restore: rename maps component names to "
                     "tables of field renames, got %s = %s",
                     luaL_typename(L, -2), luaL_typename(L, -1));
        lua_pop(L, 1);
      }
      renames = 1;
    }
  } else {
    lua_pushnil(L);
  }
  if (!renames) {
    lua_settop(L, 2);
    lua_newtable(L);
  } else {
    lua_replace(L, 3);
    lua_settop(L, 3);
  }                                                       /* 3: renames */
  lua_pushcfunction(L, ecsl_l_restore);
  lua_pushvalue(L, 2);
  status = lua_pcall(L, 1, 1, 0);                         /* 4: scratch */
  if (status == LUA_OK) {
    lua_pushcfunction(L, migrate_into);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 4);
    lua_pushvalue(L, 3);
    status = lua_pcall(L, 3, 0, 0);                       /* 5: error? */
    ecsl_call_method(L, 4, "close", 0, 0);
  }
  if (status != LUA_OK) ecsl_restore_error(L); /* the messages name world:restore */
}
