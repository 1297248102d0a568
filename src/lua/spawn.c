/*
** spawn.c -- part of the Lua binding (src/lua/binding.h): world:spawn,
** world:prefab and world:clone (docs/components.md, "Spawning").
**
** A spawn is made in two halves. The Lua half reads and checks every
** value first -- a component's fields by name or position, each field one
** value for all or (but lua fields) an array of n values, converted into
** C buffers -- and makes the refs of lua fields, so that an error leaves
** nothing behind. The core half (ecs_spawn, src/storage/spawn.h) then
** asks which indices the n new entities will get, reserves room for them
** in every component, creates them and writes the values component by
** component in C: no Lua call, no lookup by name per entity.
** Last, with every entity complete, the ADD listeners (observers) are
** told, entity by entity in order, each entity's components in the order
** they were registered.
**
** A spawn's components are a "plan": a Lua array of entries { component,
** values, position }, values mapping field numbers (1-based) to values,
** sorted by position (the component's place in the world's registration
** order). A prefab keeps a plan; world:spawn(n, prefab, overrides) merges
** the overrides' plan into a copy of it; world:clone(e) makes a plan of
** e's values and spawns one entity.
*/
#include <string.h>

#include "binding.h"
#include "spawn.h"

#define ECS_LUA_PREFAB "ecs.prefab"
#define MAX_SPAWN_COMPONENTS 64

static const char prefab_tag = 'f';

typedef struct lprefab {
  lhead h; /* h.lw: the world the prefab was made for */
} lprefab;

enum { E_COMP = 1, E_VALS, E_POS, E_GEN };

/* ----------------------------------------------------------------------
** Values
** ------------------------------------------------------------------- */

/*
** Convert the value at idx for field k of lc without raising, by the rules
** every bulk path shares (ecsl_to_cvalue, columns.c): @return NULL, or
** what was expected ("number", ...; the type's name when an integer is out
** of its range). nil gives zero; lua fields are made refs by the caller.
*/
static const char *convert(lua_State *L, int idx, const lcomponent *lc,
                           uint32_t k, fvalue *out) {
  ecs_type ft = (ecs_type)lc->type[k];
  int t = lua_type(L, idx);
  cvalue c;
  const char *bad;
  out->i = 0;
  if (t == LUA_TNIL || ft == ECS_LUA) return NULL;
  if ((bad = ecsl_to_cvalue(L, idx, t, ft, &c)) != NULL) return bad;
  if (ecs_type_kind_inline(ft) == ECS_KIND_FLOAT) out->f = c.f;
  else out->i = c.i;
  return NULL;
}

static const char *fname(const lcomponent *lc, uint32_t k) {
  return ecs_component_field(lc->c, k)->name;
}

/* Raise "fn: C.f[at]: <expected> expected, got <type or value>", or for
** an integer out of its type's range "fn: C.f[at]: out of range for i32,
** got 70000". */
static int bad_value(lua_State *L, const char *fn, const lcomponent *lc,
                     uint32_t k, lua_Integer at, int idx, const char *expect) {
  const char *type = ecs_type_name((ecs_type)lc->type[k]);
  const char *got = lua_type(L, idx) == LUA_TNUMBER ? lua_tostring(L, idx)
                                                   : luaL_typename(L, idx);
  const char *where = at > 0
      ? lua_pushfstring(L, "%s.%s[%I]", ecs_component_name(lc->c), fname(lc, k), at)
      : lua_pushfstring(L, "%s.%s", ecs_component_name(lc->c), fname(lc, k));
  if (strcmp(expect, type) == 0)
    return luaL_error(L, "%s: %s: out of range for %s, got %s", fn, where, type, got);
  return luaL_error(L, "%s: %s: %s expected, got %s", fn, where, expect, got);
}

/* ----------------------------------------------------------------------
** Plans
** ------------------------------------------------------------------- */

/* The registration position (1-based) of the component c in the world at
** 1, or 0. The list is the world's components table, at list. */
static lua_Integer position_of(lua_State *L, int list, const ecs_component *c) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, list);
  for (lua_Integer k = 1; k <= n; k++) {
    lhead *h;
    lua_rawgeti(L, list, k);
    h = ecsl_test_object(L, -1, &ecsl_comp_tag);
    lua_pop(L, 1);
    if (h != NULL && ((lcomponent *)(void *)h)->c == c) return k;
  }
  return 0;
}

/* Push the component object at position pos of the list at list. */
static lcomponent *push_component(lua_State *L, int list, lua_Integer pos) {
  lua_rawgeti(L, list, pos);
  return (lcomponent *)lua_touserdata(L, -1);
}

/*
** The key at kidx of a spec: a component of the world at 1, or its name.
** @return its registration position; raises otherwise.
*/
static lua_Integer key_position(lua_State *L, int list, int kidx,
                                const char *fn) {
  ecs_world *w = check_world(L, 1);
  lua_Integer pos = 0;
  if (lua_type(L, kidx) == LUA_TSTRING) {
    size_t len, at;
    const char *name = lua_tolstring(L, kidx, &len);
    ecs_component *c;
    if ((at = ecsl_zero_at(name, len)) != 0)
      luaL_error(L, "%s: component name contains an embedded zero at position %I",
                 fn, (lua_Integer)at);
    c = ecs_component_find(w, name);
    if (c != NULL) pos = position_of(L, list, c);
    if (pos == 0)
      luaL_error(L, "%s: unknown component '%s'", fn, lua_tostring(L, kidx));
    return pos;
  }
  {
    lhead *h = ecsl_test_object(L, kidx, &ecsl_comp_tag);
    const lcomponent *lc = (const lcomponent *)(void *)h;
    if (h == NULL)
      luaL_error(L, "%s: keys must be components or their names, got %s", fn,
                 luaL_typename(L, kidx));
    if (lc->lw != self_lworld(L) || lc->c == NULL)
      luaL_error(L, "%s: component of another world", fn);
    pos = position_of(L, list, lc->c);
    if (pos == 0) luaL_error(L, "%s: component of another world", fn);
  }
  return pos;
}

/*
** Read the fields of the component lc from the value at vidx (true, or a
** table of fields by name or position) into a new table { [k] = value }
** (k 1-based), pushed. Arrays are left to the spawn, which knows n; a
** prefab refuses them (arrays == 0).
*/
static void read_fields(lua_State *L, int cidx, const lcomponent *lc, int vidx,
                        int arrays, const char *fn) {
  int vals;
  lua_newtable(L);
  vals = lua_gettop(L);
  if (lua_type(L, vidx) == LUA_TBOOLEAN && lua_toboolean(L, vidx)) return;
  if (lua_type(L, vidx) != LUA_TTABLE)
    luaL_error(L, "%s: %s: true or a table of fields expected, got %s", fn,
               ecs_component_name(lc->c), luaL_typename(L, vidx));
  lua_getiuservalue(L, cidx, 2);                          /* names */
  lua_pushnil(L);
  while (lua_next(L, vidx)) {                             /* names, key, v */
    lua_Integer k;
    int isint;
    if (lua_type(L, -2) == LUA_TNUMBER) {
      k = lua_tointegerx(L, -2, &isint);
      if (!isint || k < 1 || k > (lua_Integer)lc->nfields)
        luaL_error(L, "%s: %s: no field number %s (%d fields)", fn,
                   ecs_component_name(lc->c), lua_tostring(L, -2),
                   (int)lc->nfields);
    } else if (lua_type(L, -2) == LUA_TSTRING) {
      size_t len, at;
      const char *key = lua_tolstring(L, -2, &len);
      if ((at = ecsl_zero_at(key, len)) != 0)
        luaL_error(L, "%s: %s: field name contains an embedded zero at position %I",
                   fn, ecs_component_name(lc->c), (lua_Integer)at);
      lua_pushvalue(L, -2);
      lua_rawget(L, -4);                                  /* names, key, v, k */
      k = lua_tointegerx(L, -1, &isint) + 1;
      lua_pop(L, 1);
      if (!isint)
        luaL_error(L, "%s: %s: unknown field '%s'", fn,
                   ecs_component_name(lc->c), lua_tostring(L, -2));
    } else {
      k = 0;
      luaL_error(L, "%s: %s: field names must be strings or numbers, got %s",
                 fn, ecs_component_name(lc->c), luaL_typename(L, -2));
    }
    if (lua_rawgeti(L, vals, k) != LUA_TNIL)
      luaL_error(L, "%s: %s: field '%s' given twice", fn,
                 ecs_component_name(lc->c), fname(lc, (uint32_t)k - 1u));
    lua_pop(L, 1);
    if (lc->type[k - 1] != ECS_LUA) {
      fvalue v;
      const char *expect;
      if (lua_type(L, -1) == LUA_TTABLE) {
        if (!arrays)
          luaL_error(L, "%s: %s.%s: per-entity arrays are for world:spawn", fn,
                     ecs_component_name(lc->c), fname(lc, (uint32_t)k - 1u));
      } else if ((expect = convert(L, lua_gettop(L), lc, (uint32_t)k - 1u, &v)) != NULL) {
        bad_value(L, fn, lc, (uint32_t)k - 1u, 0, lua_gettop(L), expect);
      }
    }
    lua_pushvalue(L, -1);
    lua_rawseti(L, vals, k);                              /* names, key, v */
    lua_pop(L, 1);
  }
  lua_pop(L, 1);                                          /* vals */
}

/* Push a new entry { component at cidx, vals at vidx, pos, gen }: gen is
** the component's generation (lcomponent.gen) its vals were read under. */
static void push_entry(lua_State *L, int cidx, int vidx, lua_Integer pos,
                       uint32_t gen) {
  lua_createtable(L, 4, 0);
  lua_pushvalue(L, cidx);
  lua_rawseti(L, -2, E_COMP);
  lua_pushvalue(L, vidx);
  lua_rawseti(L, -2, E_VALS);
  lua_pushinteger(L, pos);
  lua_rawseti(L, -2, E_POS);
  /* the schema its field numbers follow (migrate.c: a redefinition) */
  lua_pushinteger(L, (lua_Integer)gen);
  lua_rawseti(L, -2, E_GEN);
}

/*
** Add the spec at sidx to the table of entries by position at by (merging
** into an entry there: an override's values win over the prefab's), then
** push nothing. A component named twice in the one spec (by its name and
** as the object: { Position = {1}, [P] = {2} }) is an error: which value
** won would depend on the table's order.
*/
static void add_spec(lua_State *L, int list, int sidx, int by, int arrays,
                     const char *fn) {
  int seen;
  luaL_checkstack(L, 12, NULL);
  lua_newtable(L);                                        /* seen: pos -> true */
  seen = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, sidx)) {                             /* key, v */
    int top = lua_gettop(L);
    lua_Integer pos = key_position(L, list, top - 1, fn);
    const lcomponent *lc = push_component(L, list, pos);  /* key, v, comp */
    uint32_t gen = ecsl_comp_gen(lc);
    if (lua_rawgeti(L, seen, pos) != LUA_TNIL)
      luaL_error(L, "%s: component '%s' given twice (by name and as the "
                 "component)", fn, ecs_component_name(lc->c));
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
    lua_rawseti(L, seen, pos);
    read_fields(L, top + 1, lc, top, arrays, fn);         /* key, v, comp, vals */
    if (ecsl_comp_gen(lc) != gen) ecsl_redefined(L, "world", fn + 6, lc);
    if (lua_rawgeti(L, by, pos) == LUA_TTABLE) {          /* ..., entry */
      lua_rawgeti(L, -1, E_GEN);
      if ((uint32_t)lua_tointeger(L, -1) != gen) ecsl_redefined(L, "world", fn + 6, lc);
      lua_pop(L, 1);
      lua_rawgeti(L, -1, E_VALS);                         /* ..., entry, old */
      lua_pushnil(L);
      while (lua_next(L, top + 2)) {                      /* ..., k, v */
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -4);
      }
    } else {
      push_entry(L, top + 1, top + 2, pos, gen);
      lua_rawseti(L, by, pos);
    }
    lua_settop(L, top - 1);                               /* key */
  }
  lua_pop(L, 1);                                          /* seen */
}

/* Push the plan of the entries by position at by: an array in position
** order. */
static void push_plan(lua_State *L, int list, int by) {
  lua_Integer n = list != 0 ? (lua_Integer)lua_rawlen(L, list) : 0, m = 0;
  lua_newtable(L);
  for (lua_Integer pos = 1; pos <= n; pos++) {
    if (lua_rawgeti(L, by, pos) == LUA_TTABLE) lua_rawseti(L, -2, ++m);
    else lua_pop(L, 1);
  }
  if (m > MAX_SPAWN_COMPONENTS)
    luaL_error(L, "world:spawn: too many components (limit %d)",
               MAX_SPAWN_COMPONENTS);
}

/* Copy the plan at pidx into the table by position at by (values copied,
** so that merging does not change the prefab's). */
static void copy_plan(lua_State *L, int pidx, int by) {
  lua_Integer m = (lua_Integer)lua_rawlen(L, pidx);
  for (lua_Integer j = 1; j <= m; j++) {
    int top;
    lua_rawgeti(L, pidx, j);                              /* entry */
    top = lua_gettop(L);
    lua_rawgeti(L, top, E_COMP);
    lua_rawgeti(L, top, E_GEN);
    if (lua_tointeger(L, -1) != ecsl_comp_gen((const lcomponent *)lua_touserdata(L, -2)))
      luaL_error(L, "world:spawn: the prefab was made before %s was redefined: "
                 "make it again", ecs_component_name(
                     ((const lcomponent *)lua_touserdata(L, -2))->c));
    lua_pop(L, 1);
    lua_newtable(L);                                      /* entry, comp, vals */
    lua_rawgeti(L, top, E_VALS);
    lua_pushnil(L);
    while (lua_next(L, top + 3)) {                        /* ..., old, k, v */
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, top + 2);
    }
    lua_pop(L, 1);
    lua_rawgeti(L, top, E_POS);
    push_entry(L, top + 1, top + 2, lua_tointeger(L, -1),
               ecsl_comp_gen((const lcomponent *)lua_touserdata(L, top + 1))); /* checked above */
    lua_rawseti(L, by, lua_tointeger(L, -2));
    lua_settop(L, top - 1);
  }
}

static int push_components_list(lua_State *L) {
  if (ecsl_push_state_field(L, 1, &ecsl_components_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
  }
  return lua_gettop(L);
}

/* ----------------------------------------------------------------------
** The spawn itself
** ------------------------------------------------------------------- */

typedef struct scomp {
  lcomponent *lc;
  uint32_t gen;     /* the schema the plan's field numbers follow */
  uint32_t nfields; /* f[0 .. nfields) are in use */
  ecs_spawn_field f[ECS_MAX_FIELDS];
} scomp;

/* Let go of the refs made so far: every REFS field of the first ncomp
** components. */
static void unref_all(lua_State *L, int refs, scomp *sc, int ncomp,
                      lua_Integer n) {
  for (int j = 0; j < ncomp; j++)
    for (uint32_t k = 0; k < sc[j].nfields; k++)
      if (sc[j].f[k].mode == ECS_SPAWN_REFS && sc[j].f[k].refs != NULL)
        for (lua_Integer i = 0; i < n; i++)
          if (sc[j].f[k].refs[i] != 0)
            luaL_unref(L, refs, (int)sc[j].f[k].refs[i]);
}

/* A buffer of n (at least one) elements of size bytes, kept alive by the
** table at keep. */
static void *keep_buffer(lua_State *L, int keep, lua_Integer n, size_t size) {
  void *p = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * size, 0);
  lua_rawseti(L, keep, (lua_Integer)lua_rawlen(L, keep) + 1);
  return p;
}

/*
** Field k of component sc from the value at at (its type t): one value,
** an array of n values (but lua fields), or a lua field's value (made refs
** later), checked and converted.
*/
static void convert_field(lua_State *L, int keep, const scomp *sc, uint32_t k,
                          int at, int t, lua_Integer n, const char *fn,
                          ecs_spawn_field *f) {
  const lcomponent *lc = sc->lc;
  f->mode = ECS_SPAWN_ZERO;
  f->refs = NULL;
  if (lc->type[k] == ECS_LUA) {
    if (t != LUA_TNIL) f->mode = ECS_SPAWN_REFS;
  } else if (t == LUA_TTABLE) {
    fvalue *a;
    lua_Integer len = (lua_Integer)lua_rawlen(L, at);
    if (len != n)
      luaL_error(L, "%s: %s.%s: expected %I values, got %I", fn,
                 ecs_component_name(lc->c), fname(lc, k), n, len);
    a = (fvalue *)keep_buffer(L, keep, n, sizeof *a);
    for (lua_Integer i = 0; i < n; i++) {
      const char *expect;
      lua_rawgeti(L, at, i + 1);
      if ((expect = convert(L, at + 1, lc, k, &a[i])) != NULL)
        bad_value(L, fn, lc, k, i + 1, at + 1, expect);
      lua_pop(L, 1);
    }
    f->mode = ECS_SPAWN_EACH;
    f->each = a;
  } else if (t != LUA_TNIL) {
    const char *expect = convert(L, at, lc, k, &f->one);
    if (expect != NULL) bad_value(L, fn, lc, k, 0, at, expect);
    f->mode = ECS_SPAWN_ONE;
  }
}

/* The refs of the lua fields of the m components, n each: all or none.
** @return the refs table's index, or 0 (none made). */
static int make_spawn_refs(lua_State *L, int keep, scomp *sc, int m,
                           lua_Integer n) {
  int refs = 0;
  for (int j = 0; j < m; j++)
    for (uint32_t k = 0; k < sc[j].nfields; k++) {
      ecs_spawn_field *f = &sc[j].f[k];
      uint32_t *ref;
      if (f->mode != ECS_SPAWN_REFS) continue;
      if (refs == 0) {
        ecsl_need_state_field(L, 1, &ecsl_refs_key);
        refs = lua_gettop(L);
      }
      ref = (uint32_t *)keep_buffer(L, keep, n, sizeof *ref);
      memset(ref, 0, (size_t)(n > 0 ? n : 1) * sizeof *ref);
      f->refs = ref;
      lua_rawgeti(L, keep + 1 + j, (lua_Integer)k + 1);   /* the value */
      if (!ecsl_ref_n(L, refs, -1, ref, n)) {
        f->mode = ECS_SPAWN_ZERO; /* its refs went already; the others' below */
        unref_all(L, refs, sc, m, n);
        lua_error(L);
      }
      lua_pop(L, 1);
    }
  return refs;
}

/*
** Read the m entries of the plan at pidx into sc, leaving each entry's
** values table on the stack (anchored: keep + 1 + j), then check and
** convert every value, before anything changes.
*/
static void read_plan(lua_State *L, int pidx, int keep, scomp *sc, int m,
                      lua_Integer n, const char *fn) {
  luaL_checkstack(L, 2 * m + 16, NULL);
  for (int j = 0; j < m; j++) {
    lua_rawgeti(L, pidx, j + 1);
    lua_rawgeti(L, -1, E_VALS);
    lua_rawgeti(L, -2, E_COMP);
    sc[j].lc = (lcomponent *)lua_touserdata(L, -1);
    sc[j].nfields = sc[j].lc->nfields;
    lua_rawgeti(L, -3, E_GEN);
    sc[j].gen = (uint32_t)lua_tointeger(L, -1);
    lua_pop(L, 2);
    lua_remove(L, -2);                                    /* ..., vals_j */
  }
  for (int j = 0; j < m; j++)
    for (uint32_t k = 0; k < sc[j].nfields; k++) {
      int t = lua_rawgeti(L, keep + 1 + j, (lua_Integer)k + 1);
      convert_field(L, keep, &sc[j], k, lua_gettop(L), t, n, fn, &sc[j].f[k]);
      lua_pop(L, 1);
    }
}

/*
** Spawn n entities from the plan at pidx; push the array of them. fn names
** the calling method in messages. The Lua half (values, refs, buffers)
** first; then the core's spawn (spawn.h), which makes the entities, writes
** the values and tells the ADD listeners.
*/
static void spawn_plan(lua_State *L, lua_Integer n, int pidx, const char *fn) {
  int m = (int)lua_rawlen(L, pidx), keep, refs, out;
  scomp *sc;
  ecs_spawn_component *comp;
  uint32_t *idx;
  ecs_entity *es;
  ecs_instance *rows;
  lworld *lw = self_lworld(L);
  bool created;
  ecs_err err;
  lua_newtable(L);                                        /* keep: buffers */
  keep = lua_gettop(L);
  sc = (scomp *)keep_buffer(L, keep, m, sizeof *sc);
  comp = (ecs_spawn_component *)keep_buffer(L, keep, m, sizeof *comp);
  read_plan(L, pidx, keep, sc, m, n, fn);
  refs = make_spawn_refs(L, keep, sc, m, n);
  /* the buffers of the core half, and the result: the last allocations */
  idx = (uint32_t *)keep_buffer(L, keep, n, sizeof *idx);
  es = (ecs_entity *)keep_buffer(L, keep, n, sizeof *es);
  rows = (ecs_instance *)keep_buffer(L, keep, n, sizeof *rows);
  lua_createtable(L, (int)n, 0);
  out = lua_gettop(L);
  /* nothing below allocates Lua memory until the values are in (a
  ** finalizer may have closed the world or redefined a component above) */
  if (lw->w == NULL) {
    if (refs != 0) unref_all(L, refs, sc, m, n);
    ecsl_closed(L);
  }
  for (int j = 0; j < m; j++) { /* see ecsl_redefined */
    if (ecsl_comp_gen(sc[j].lc) != sc[j].gen) {
      if (refs != 0) unref_all(L, refs, sc, m, n);
      ecsl_redefined(L, "world", fn + 6, sc[j].lc);
    }
    comp[j].c = sc[j].lc->c;
    comp[j].field = sc[j].f;
  }
  err = ecs_spawn(lw->w, comp, (uint32_t)m, (size_t)n, es, idx, rows, &created);
  if (!created) {
    if (refs != 0) unref_all(L, refs, sc, m, n);
    ecsl_error(L, "world", fn + 6, err, NULL, 0); /* fn: "world:..." */
  }
  for (lua_Integer i = 0; i < n; i++) {
    push_entity(L, es[i]);
    lua_rawseti(L, out, i + 1); /* the array part was made for n */
  }
  /* reused dead records, and the listeners, dropped refs */
  ecs_lua_drain_refs(L, 1);
  if (lw->w != NULL) ecsl_charge(L, lw);
  if (err != ECS_ERR_OK) ecsl_error(L, "world", fn + 6, err, NULL, 0);
  lua_replace(L, keep); /* the result where keep was, on top */
  lua_settop(L, keep);
}

static lua_Integer check_count(lua_State *L, int idx) {
  lua_Integer n = luaL_checkinteger(L, idx);
  luaL_argcheck(L, n >= 0, idx, "count must not be negative");
  luaL_argcheck(L, n <= (lua_Integer)ECS_MAX_ENTITIES, idx,
                "count exceeds the entity limit (4194303)");
  return n;
}

static lprefab *test_prefab(lua_State *L, int idx) {
  return (lprefab *)(void *)ecsl_test_object(L, idx, &prefab_tag);
}

/* world:spawn(n, spec | prefab [, overrides]) -> { e1, ..., en } */
int ecsl_l_world_spawn(lua_State *L) {
  lua_Integer n;
  lprefab *pf;
  int list, by;
  check_world(L, 1);
  n = check_count(L, 2);
  pf = test_prefab(L, 3);
  if (pf == NULL) {
    luaL_argexpected(L, lua_type(L, 3) == LUA_TTABLE, 3, "table or prefab");
    if (!lua_isnoneornil(L, 4))
      return luaL_argerror(L, 4, "overrides need a prefab");
  } else {
    if (pf->h.lw != self_lworld(L))
      return luaL_argerror(L, 3, "prefab of another world");
    if (!lua_isnoneornil(L, 4)) luaL_checktype(L, 4, LUA_TTABLE);
  }
  lua_settop(L, 4);
  list = push_components_list(L);                         /* 5 */
  lua_newtable(L);                                        /* 6: by position */
  by = lua_gettop(L);
  if (pf == NULL) {
    add_spec(L, list, 3, by, 1, "world:spawn");
  } else {
    lua_getiuservalue(L, 3, 1);                           /* the prefab's plan */
    copy_plan(L, lua_gettop(L), by);
    lua_pop(L, 1);
    if (!lua_isnil(L, 4)) add_spec(L, list, 4, by, 1, "world:spawn");
  }
  push_plan(L, list, by);                                 /* 7: plan */
  spawn_plan(L, n, 7, "world:spawn");
  return 1;
}

static int prefab_tostring(lua_State *L) {
  lua_pushfstring(L, "ecs.prefab: %p", lua_touserdata(L, 1));
  return 1;
}

/* world:prefab(spec) -> prefab */
int ecsl_l_world_prefab(lua_State *L) {
  lprefab *pf;
  int list, by;
  check_world(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  list = push_components_list(L);                         /* 3 */
  lua_newtable(L);                                        /* 4 */
  by = lua_gettop(L);
  add_spec(L, list, 2, by, 0, "world:prefab");
  push_plan(L, list, by);                                 /* 5: plan */
  pf = (lprefab *)lua_newuserdatauv(L, sizeof *pf, 1);
  ecsl_init_head(&pf->h, &prefab_tag, self_lworld(L));
  luaL_setmetatable(L, ECS_LUA_PREFAB);
  lua_pushvalue(L, 5);
  lua_setiuservalue(L, -2, 1);
  return 1;
}

/* world:clone(e) -> a new entity with every component of e */
int ecsl_l_world_clone(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  lua_Integer nc;
  int list, plan, refs;
  if (!ecs_alive(w, e))
    return ecsl_error(L, "world", "clone", ECS_ERR_DEAD, NULL, 0);
  lua_settop(L, 2);
  list = push_components_list(L);                         /* 3 */
  lua_newtable(L);                                        /* 4: plan */
  plan = lua_gettop(L);
  lua_getiuservalue(L, 1, 1);
  lua_rawgetp(L, -1, &ecsl_refs_key);                     /* 5, 6: refs or nil */
  refs = lua_istable(L, -1) ? lua_gettop(L) : 0;
  nc = (lua_Integer)lua_rawlen(L, list);
  luaL_checkstack(L, 8, NULL);
  for (lua_Integer pos = 1, m = 0; pos <= nc; pos++) {
    lcomponent *lc = push_component(L, list, pos);        /* comp */
    int cidx = lua_gettop(L);
    uint32_t gen;
    ecs_instance i;
    if (lc == NULL || lc->c == NULL || lc->lw->w == NULL ||
        (i = ecs_component_lookup(lc->lw->w, lc->c, e)) == ECS_NO_INSTANCE) {
      lua_pop(L, 1);
      continue;
    }
    gen = ecsl_comp_gen(lc); /* the final check of spawn_plan compares it */
    lua_createtable(L, (int)lc->nfields, 0);              /* comp, vals */
    for (uint32_t k = 0; k < lc->nfields; k++) {
      /* pushing may allocate; no Lua code runs until the spawn, so i holds */
      ecsl_push_field(L, lc, k, i, refs);
      lua_rawseti(L, -2, (lua_Integer)k + 1);
    }
    push_entry(L, cidx, cidx + 1, pos, gen);
    lua_rawseti(L, plan, ++m);
    lua_settop(L, cidx - 1);
  }
  spawn_plan(L, 1, plan, "world:clone");
  lua_rawgeti(L, -1, 1);
  return 1;
}

void ecsl_open_spawn(lua_State *L) {
  luaL_newmetatable(L, ECS_LUA_PREFAB);
  lua_pushcfunction(L, prefab_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
}
