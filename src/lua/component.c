/*
** component.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

/* ======================================================================
** Component managers and C plugins
**
** world:component(name, schema) creates a core manager (component.h) and
** its Lua object, a full userdata of class ECS_LUA_COMPONENT:
**   user value 1: the world userdata (keeps it alive; closed check),
**   user value 2: { field name = field number } -- names are resolved by
**                 one table lookup, never by comparing strings.
** The world's state table holds, under light-userdata keys (no string
** is created, so nothing there can fail at close or in __gc):
**   [&ecsl_components_key] = { [1..n] = managers in creation order },
**   [&ecsl_refs_key]       = table of the Lua values of "lua" fields, indexed
**                       by luaL_ref; the core stores those refs.
** Values of "lua" fields are thus reachable by Lua's GC while an instance
** holds them; the core reports the refs of instances it drops, and
** drain_refs unrefs them after every call that can drop some.
** ==================================================================== */




/* Unref every dropped lua ref of w; refs is the refs table's index. */
static void drain_refs_at(lua_State *L, ecs_world *w, int refs) {
  uint32_t buf[64];
  size_t n;
  do {
    n = ecs_drain_refs(w, buf, sizeof buf / sizeof buf[0]);
    for (size_t k = 0; k < n; k++) luaL_unref(L, refs, (int)buf[k]);
  } while (n == sizeof buf / sizeof buf[0]);
}

/* Push the table under key in the state of the world at widx (or nil). */
int ecsl_push_state_field(lua_State *L, int widx, const void *key) {
  int t;
  lua_getiuservalue(L, widx, 1);                          /* state */
  t = lua_rawgetp(L, -1, key);                            /* state, v */
  lua_remove(L, -2);                                      /* v */
  return t;
}

/* Push the table under key in the world's state, creating it. */
void ecsl_need_state_field(lua_State *L, int widx, const void *key) {
  if (ecsl_push_state_field(L, widx, key) != LUA_TNIL) return;
  lua_pop(L, 1);
  lua_getiuservalue(L, widx, 1);                          /* state */
  lua_newtable(L);                                        /* state, t */
  lua_pushvalue(L, -1);
  lua_rawsetp(L, -3, key);
  lua_remove(L, -2);                                      /* t */
}

void ecs_lua_drain_refs(lua_State *L, int world_idx) {
  lworld *lw = ecsl_test_lworld(L, world_idx);
  if (lw == NULL || lw->w == NULL || ecs_dropped_refs(lw->w) == 0) return;
  world_idx = lua_absindex(L, world_idx);
  if (ecsl_push_state_field(L, world_idx, &ecsl_refs_key) == LUA_TTABLE)
    drain_refs_at(L, lw->w, lua_gettop(L));
  lua_pop(L, 1);
}

/*
** Called by world:close before the core world goes: forget the Lua values
** of "lua" fields, so they are collectable even while the world userdata
** or its managers are still referenced. Assigning nil to an existing key
** never allocates, so this cannot raise (close is also __gc).
*/
void ecsl_components_world_closed(lua_State *L, int widx) {
  lua_getiuservalue(L, widx, 1);                          /* state */
  if (lua_type(L, -1) == LUA_TTABLE) {
    if (lua_rawgetp(L, -1, &ecsl_refs_key) != LUA_TNIL) {
      lua_pushnil(L);
      lua_rawsetp(L, -3, &ecsl_refs_key);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/*
** Each manager has its own metatable (so that its __index table can hold
** its name next to the methods, and a method call is one table lookup);
** __name is "ecs.Component". A manager is recognised by its lhead.
*/

/* True when the value at idx is a component manager (never raises). */
int ecsl_is_comp(lua_State *L, int idx) {
  return ecsl_test_object(L, idx, &ecsl_comp_tag) != NULL;
}

static lcomponent *to_comp(lua_State *L, int idx) {
  lcomponent *lc = (lcomponent *)ecsl_test_object(L, idx, &ecsl_comp_tag);
  if (lc == NULL) ecsl_object_error(L, idx, ECS_LUA_COMPONENT);
  return lc;
}

/* The manager at idx with its world open. */
static lcomponent *check_comp(lua_State *L, int idx, ecs_world **w) {
  lcomponent *lc = to_comp(L, idx);
  if (lc->c == NULL || lc->lw->w == NULL)
    ecsl_closed(L);
  *w = lc->lw->w;
  return lc;
}

/*
** The manager of a method (self, argument 1, which ecsl_l_method checked)
** with its world open.
*/
static lcomponent *self_comp(lua_State *L, ecs_world **w) {
  lcomponent *lc = ecsl_self(L, lcomponent);
  if (lc->c == NULL || (*w = lc->lw->w) == NULL) ecsl_closed(L);
  return lc;
}

ecs_component *ecs_lua_check_component(lua_State *L, int idx, ecs_world **w) {
  ecs_world *cw;
  lcomponent *lc = check_comp(L, idx, &cw);
  if (w != NULL) *w = cw;
  return lc->c;
}

/* Push the refs table of the manager at idx (it exists when nlua > 0). */
static int push_comp_refs(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 1);                           /* world */
  ecsl_push_state_field(L, lua_gettop(L), &ecsl_refs_key);          /* world, refs */
  lua_remove(L, -2);                                      /* refs */
  return lua_gettop(L);
}

static void drain_comp(lua_State *L, const lcomponent *lc, ecs_world *w) {
  if (lc->nlua == 0 || ecs_dropped_refs(w) == 0) return;
  push_comp_refs(L, 1);
  drain_refs_at(L, w, lua_gettop(L));
  lua_pop(L, 1);
}

/* "Name:fn: text", naming the entity (argument 2) when the error is about
** it: "Position:set: entity does not have the component (entity(12.3))".
** A closed world is checked first: its manager's name may be gone. */
static int comp_error(lua_State *L, const lcomponent *lc, const char *fn,
                      ecs_err err) {
  if (err == ECS_ERR_CLOSED) return ecsl_closed(L);
  return ecsl_error(L, ecs_component_name(lc->c), fn, err, NULL, 2);
}


/* Release the dropped refs of the world of the manager at 1, whichever
** manager dropped them. */
static void drain_world(lua_State *L) {
  lua_getiuservalue(L, 1, 1);                             /* world */
  ecs_lua_drain_refs(L, lua_gettop(L));
  lua_pop(L, 1);
}

static int make_refs(lua_State *L) { /* job, refs, v1..vn */
  ref_job *job = (ref_job *)lua_touserdata(L, 1);
  for (int k = 0; k < job->n; k++) {
    lua_pushvalue(L, 3 + k);
    job->ref[k] = (uint32_t)luaL_ref(L, 2);
    job->done = k + 1;
  }
  return 0;
}

/* Let go of the refs of the lua fields of val (made by make_write_refs). */
static void unref_values(lua_State *L, const lcomponent *lc, int refs,
                         const fvalue *val, uint32_t first, uint32_t n) {
  for (uint32_t j = 0; j < n && refs != 0; j++)
    if (lc->type[first + j] == ECS_LUA && val[j].i != 0)
      luaL_unref(L, refs, (int)val[j].i);
}

/*
** The core's write of vals into fields first .. first + n of e (write.h),
** then the binding's side: the lua refs it replaced released, the dropped
** refs drained, a listener's error raised as the method's own (the
** change it reported stands). On an error before the write the refs of
** vals go again.
*/
static void write_instance(lua_State *L, const lcomponent *lc, const char *fn,
                           ecs_entity e, ecs_instance row, bool add,
                           uint32_t first, uint32_t n, const fvalue *val,
                           int refs) {
  ecs_world *w = lc->lw->w;
  ecs_write_result r;
  ecs_err err = ecs_component_write(w, lc->c, e, row, add, first, n, val, &r);
  if (!r.written) {
    unref_values(L, lc, refs, val, first, n);
    comp_error(L, lc, fn, err);
  }
  for (uint32_t k = 0; k < r.nold; k++) luaL_unref(L, refs, (int)r.old[k]);
  if (((const ecs_world_head *)(const void *)w)->listeners != 0) drain_world(L);
  else if (refs != 0) drain_refs_at(L, w, refs);
  if (err != ECS_ERR_OK) comp_error(L, lc, fn, err);
}

/*
** The table form of add and set, Position:add(e, {x=, y=}): each named
** value moved to stack slot 4 + its field number, src[k] set to it, so
** that make_write_refs finds it later.
*/
static void read_named_values(lua_State *L, const lcomponent *lc,
                              const char *fn, int *src) {
  uint32_t nf = lc->nfields;
  luaL_checkstack(L, (int)nf + 4, "too many fields");
  lua_settop(L, 3 + (int)nf);             /* slots 4..3+nf: values by field */
  lua_getiuservalue(L, 1, 2);                             /* ..., names */
  lua_pushnil(L);
  while (lua_next(L, 3)) {                               /* names, key, v */
    int isint;
    lua_Integer k;
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "%s:%s: field names must be strings, got %s",
                 ecs_component_name(lc->c), fn, luaL_typename(L, -2));
    lua_pushvalue(L, -2);
    lua_rawget(L, -4);                                   /* names, key, v, k */
    k = lua_tointegerx(L, -1, &isint);
    lua_pop(L, 1);
    if (!isint) {
      size_t klen, at;
      const char *key = lua_tolstring(L, -2, &klen);
      if ((at = ecsl_zero_at(key, klen)) != 0)
        luaL_error(L, "%s:%s: field name contains an embedded zero "
                   "at position %I", ecs_component_name(lc->c), fn,
                   (lua_Integer)at);
      ecsl_error(L, ecs_component_name(lc->c), fn, ECS_ERR_UNKNOWN_FIELD,
                 lua_pushfstring(L, "unknown field '%s'", key), 0);
    }
    lua_replace(L, 4 + (int)k);                          /* names, key */
    src[k] = 4 + (int)k;
  }
  lua_pop(L, 1);
}

/*
** The refs of the lua fields of val, the values of fields first .. first
** + n (val[j] of field first + j, its Lua value at src[j]), all or none, then
** the checks again: making refs allocates, and a GC step may run
** finalizers that change the world, close it or redefine the component.
** @return the refs table's index.
*/
static int make_write_refs(lua_State *L, const lcomponent *lc, const char *fn,
                           ecs_entity e, ecs_instance *row, bool add,
                           uint32_t gen,
                           uint32_t first, uint32_t n, const int *src,
                           fvalue *val) {
  ref_job job;
  int refs = push_comp_refs(L, 1);
  ecs_err err = ECS_ERR_OK;
  job.n = job.done = 0;
  luaL_checkstack(L, (int)lc->nlua + 3, "too many fields");
  lua_pushcfunction(L, make_refs);            /* light: no allocation */
  lua_pushlightuserdata(L, &job);
  lua_pushvalue(L, refs);
  for (uint32_t j = 0; j < n; j++) {
    if (lc->type[first + j] != ECS_LUA) continue;
    val[j].i = 0;
    if (src[j] == 0 || lua_isnil(L, src[j])) continue;
    job.field[job.n++] = j;
    lua_pushvalue(L, src[j]);
  }
  if (job.n <= 1) {
    /* one ref at most: if it raises, none was made; no pcall needed */
    if (job.n == 1) job.ref[0] = (uint32_t)luaL_ref(L, refs);
    lua_pop(L, 3);                            /* make_refs, job, refs */
  } else if (lua_pcall(L, 2 + job.n, 0, 0) != LUA_OK) {
    for (int k = 0; k < job.done; k++) luaL_unref(L, refs, (int)job.ref[k]);
    lua_error(L);                             /* the same error object */
  }
  for (int k = 0; k < job.n; k++) val[job.field[k]].i = (int64_t)job.ref[k];
  if (lc->lw->w == NULL) err = ECS_ERR_CLOSED;
  else if (ecsl_comp_gen(lc) != gen) err = ECS_ERR_SCHEMA;
  else err = ecs_component_write_check(lc->lw->w, lc->c, e, add, row);
  if (err != ECS_ERR_OK) {
    for (int k = 0; k < job.n; k++) luaL_unref(L, refs, (int)job.ref[k]);
    if (err == ECS_ERR_SCHEMA)
      ecsl_redefined(L, ecs_component_name(lc->c), fn, lc);
    comp_error(L, lc, fn, err);
  }
  return refs;
}

/*
** Shared by add and set: Position:add(e, x, y) or Position:add(e, {x=, y=}).
** The table form is used when exactly one value is given, it is a table,
** and the first field is not of type lua (for which a table is a value).
** Order, so that an error never leaves a half-done change: check the
** entity and every value; make refs for lua fields (all or none); then the
** core's write (write.h: the instance, the values, the listeners: ADD for
** a new instance, SET for values written over an existing one).
*/
static int comp_write(lua_State *L, int is_add) {
  const char *fn = is_add ? "add" : "set";
  ecs_world *w;
  lcomponent *lc = self_comp(L, &w);
  ecs_entity e = check_entity(L, 2);
  int top = lua_gettop(L), refs = 0;
  /* the schema's count, for the refs' recheck (lua fields only) */
  uint32_t nf = lc->nfields, gen = lc->nlua > 0 ? ecsl_comp_gen(lc) : 0;
  fvalue val[ECS_MAX_FIELDS];
  int src[ECS_MAX_FIELDS]; /* stack index of each field's value, 0: none */
  ecs_instance row;
  ecs_err err = ecs_component_write_check(w, lc->c, e, is_add, &row);
  if (err != ECS_ERR_OK) return comp_error(L, lc, fn, err);
  for (uint32_t k = 0; k < nf; k++) src[k] = 0;
  if (top == 3 && nf > 0 && lua_type(L, 3) == LUA_TTABLE &&
      lc->type[0] != ECS_LUA) {
    read_named_values(L, lc, fn, src);
  } else {
    if ((uint32_t)(top - 2) > nf)
      return luaL_error(L, "%s:%s: too many values (%d fields)",
                        ecs_component_name(lc->c), fn, (int)nf);
    for (uint32_t k = 0; k < nf && (int)k + 3 <= top; k++) src[k] = 3 + (int)k;
  }
  for (uint32_t k = 0; k < nf; k++) {
    val[k].i = 0; /* missing: zero, false, ecs.null or nil */
    if (src[k] != 0) ecsl_check_value(L, src[k], lc, fn, k, &val[k]);
  }
  if (lc->nlua > 0)
    refs = make_write_refs(L, lc, fn, e, &row, is_add, gen, 0, nf, src, val);
  write_instance(L, lc, fn, e, row, is_add, 0, nf, val, refs);
  if (is_add) ecsl_charge(L, lc->lw);
  return 0;
}

/* Position:add(e, ...) -- creates or overwrites; missing fields are zero */
static int l_comp_add(lua_State *L) { return comp_write(L, 1); }

/* Position:set(e, ...) -- like add, but e must have the component */
static int l_comp_set(lua_State *L) { return comp_write(L, 0); }

/* Position:get(e) -> values in schema order, or nothing */
static int l_comp_get(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = self_comp(L, &w);
  ecs_entity e = check_entity(L, 2);
  ecs_instance i;
  int refs = 0;
  /* a C function has LUA_MINSTACK free slots to begin with */
  if (lc->nfields + 2u > (uint32_t)LUA_MINSTACK)
    luaL_checkstack(L, (int)lc->nfields + 2, "too many fields");
  if (lc->nlua > 0) refs = push_comp_refs(L, 1);
  /* nothing below allocates, so i stays valid while values are pushed */
  i = ecs_component_lookup(w, lc->c, e);
  if (i == ECS_NO_INSTANCE) return 0;
  for (uint32_t k = 0; k < lc->nfields; k++) ecsl_push_field(L, lc, k, i, refs);
  return (int)lc->nfields;
}

/* Position:field(e, "x") -> value, or nil if e has no Position */
static int l_comp_field(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = self_comp(L, &w);
  ecs_entity e = check_entity(L, 2);
  uint32_t k = ecsl_check_field(L, lc, 3, "field");
  ecs_instance i = ecs_component_lookup(w, lc->c, e);
  int refs = 0;
  if (i == ECS_NO_INSTANCE) {
    lua_pushnil(L);
    return 1;
  }
  if (lc->type[k] == ECS_LUA) refs = push_comp_refs(L, 1);
  ecsl_push_field(L, lc, k, i, refs);
  return 1;
}

/* Position:set_field(e, "x", v) -- e must have the component */
static int l_comp_set_field(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = self_comp(L, &w);
  ecs_entity e = check_entity(L, 2);
  uint32_t k = ecsl_check_field(L, lc, 3, "set_field");
  uint32_t gen = lc->type[k] == ECS_LUA ? ecsl_comp_gen(lc) : 0; /* (refs) */
  int src = 4, refs = 0;
  ecs_instance row;
  fvalue v;
  ecs_err err;
  lua_settop(L, 4);
  if ((err = ecs_component_write_check(w, lc->c, e, false, &row)) != ECS_ERR_OK)
    return comp_error(L, lc, "set_field", err);
  ecsl_check_value(L, 4, lc, "set_field", k, &v);
  if (lc->type[k] == ECS_LUA)
    refs = make_write_refs(L, lc, "set_field", e, &row, false, gen, k, 1,
                           &src, &v);
  write_instance(L, lc, "set_field", e, row, false, k, 1, &v, refs);
  return 0;
}

/* Position:has(e) -> boolean (false for dead, stale or null handles) */
static int l_comp_has(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = self_comp(L, &w);
  lua_pushboolean(L, ecs_component_lookup(w, lc->c, check_entity(L, 2)) !=
                         ECS_NO_INSTANCE);
  return 1;
}

/*
** Position:remove(e) -> boolean (false if e is dead or had none). The
** core reports REMOVE before the instance goes; a listener's error is
** raised after it went (the refs it and the listeners dropped released).
*/
static int l_comp_remove(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = self_comp(L, &w);
  ecs_entity e = check_entity(L, 2);
  bool done;
  ecs_err err = ecs_component_remove(w, lc->c, e, &done);
  if (err != ECS_ERR_OK) {
    drain_world(L); /* listeners may have dropped any manager's refs */
    return comp_error(L, lc, "remove", err);
  }
  drain_comp(L, lc, w);
  lua_pushboolean(L, done);
  return 1;
}

/* Position:count() -> instances whose entity is alive */
static int l_comp_count(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = self_comp(L, &w);
  lua_pushinteger(L, (lua_Integer)ecs_component_count(w, lc->c));
  return 1;
}

/* Position:size() -> instances stored, dead entities' records included */
static int l_comp_size(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = self_comp(L, &w);
  lua_pushinteger(L, (lua_Integer)ecs_component_size(lc->c));
  return 1;
}

/*
** Position:gc([budget]) -> records reclaimed. Without a budget every dead
** record goes; with one, the lazy-gc scan (sparse.h) reclaims at most budget.
*/
static int l_comp_gc(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = self_comp(L, &w);
  size_t budget = SIZE_MAX, n;
  if (!lua_isnoneornil(L, 2)) {
    lua_Integer b = luaL_checkinteger(L, 2);
    luaL_argcheck(L, b >= 0, 2, "budget must not be negative");
    if ((lua_Unsigned)b < SIZE_MAX) budget = (size_t)b;
  }
  n = ecs_component_gc(w, lc->c, budget);
  drain_comp(L, lc, w);
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

/* Position:fields() -> { "x:f32", "y:f32" } (the schema, normalised) */
static int l_comp_fields(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = self_comp(L, &w);
  lua_createtable(L, (int)lc->nfields, 0);
  for (uint32_t k = 0; k < lc->nfields; k++) {
    static const char *const cleanup[] = {"", "!clear", "!remove", "!destroy"};
    const ecs_field_def *f = ecs_component_field(lc->c, k);
    /* the entry as world:component takes it, cleanup included */
    lua_pushfstring(L, "%s:%s%s", f->name, ecs_type_name(f->type),
                    cleanup[ecs_component_cleanup(lc->c, k)]);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  return 1;
}

/*
** The iterator of Position:entities(): upvalues manager, position. It
** walks the instances downwards, so removing the current entity's
** component (which moves an already visited instance into its place) or
** adding new ones (appended, so not visited) during the loop is safe.
*/
static int l_comp_entities_next(lua_State *L) {
  lcomponent *lc = (lcomponent *)lua_touserdata(L, lua_upvalueindex(1));
  ecs_world *w = lc->lw->w;
  lua_Integer pos = lua_tointeger(L, lua_upvalueindex(2));
  const ecs_entity *own;
  if (w == NULL) return ecsl_closed(L);
  own = ecs_component_entities(lc->c);
  if (pos > (lua_Integer)ecs_component_size(lc->c))
    pos = (lua_Integer)ecs_component_size(lc->c);
  while (pos > 0) {
    ecs_entity e = own[--pos];
    if (ecs_alive(w, e)) {
      lua_pushinteger(L, pos);
      lua_replace(L, lua_upvalueindex(2));
      push_entity(L, e);
      return 1;
    }
  }
  lua_pushinteger(L, 0);
  lua_replace(L, lua_upvalueindex(2));
  return 0;
}

/* Position:entities() -> iterator over entities having it (alive) */
static int l_comp_entities(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = self_comp(L, &w);
  lua_settop(L, 1);
  lua_pushinteger(L, (lua_Integer)ecs_component_size(lc->c));
  lua_pushcclosure(L, l_comp_entities_next, 2);
  return 1;
}

static int l_comp_tostring(lua_State *L) {
  lcomponent *lc = to_comp(L, 1);
  if (lc->c == NULL || lc->lw->w == NULL)
    lua_pushliteral(L, "ecs.Component (closed world)");
  else
    lua_pushfstring(L, "ecs.Component(%s)", ecs_component_name(lc->c));
  return 1;
}

static const luaL_Reg comp_methods[] = {
  {"on_add", ecsl_l_on_add},
  {"on_remove", ecsl_l_on_remove},
  {"on_set", ecsl_l_on_set},
  {"add", l_comp_add},
  {"set", l_comp_set},
  {"get", l_comp_get},
  {"field", l_comp_field},
  {"set_field", l_comp_set_field},
  {"get_many", ecsl_l_comp_get_many},
  {"set_many", ecsl_l_comp_set_many},
  {"has", l_comp_has},
  {"remove", l_comp_remove},
  {"count", l_comp_count},
  {"size", l_comp_size},
  {"gc", l_comp_gc},
  {"fields", l_comp_fields},
  {"entities", l_comp_entities},
  {NULL, NULL}
};

/*
** The registry metatable ECS_LUA_COMPONENT only holds what every manager's
** own metatable copies: the methods table (__methods) and __tostring.
*/
void ecsl_open_components(lua_State *L) {
  luaL_newmetatable(L, ECS_LUA_COMPONENT);               /* mt */
  lua_newtable(L);                                       /* mt, methods */
  ecsl_set_methods(L, comp_methods, &ecsl_comp_tag, ECS_LUA_COMPONENT);
  lua_setfield(L, -2, "__methods");
  lua_pushcfunction(L, l_comp_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}
