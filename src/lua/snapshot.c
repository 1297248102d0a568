/*
** snapshot.c -- part of the Lua binding (src/lua/binding.h): world:snapshot,
** world:restore, ecs.restore, world:find_component (docs/persistence.md).
**
** The core saves and loads everything but the values of lua fields,
** whose cells hold references into the world's refs table
** (src/lua/component.c). The binding keeps those values in the
** snapshot's host section (snapshot.h, ecs_snapshot_opts), as plain data:
**   u32 LUA_LAYOUT (1), u32 count, then count entries: u32 reference (as
**   the saving world's cells hold it), value
**   value: u8 tag, then 1 false, 2 true (nothing more), 3 integer (i64),
**   4 float (f64 bits), 5 string (u32 length, bytes), 6 table (u32 pairs,
**   then each key and value), 7 entity handle (u32 id)
** little-endian. A restore decodes every value first (a Lua error there
** leaves nothing behind), then makes one new reference per entry, hands
** the core a map from old to new references (it rewrites the cells of
** the components it loads aside, before anything changes, and refuses a
** cell the section does not name or an entry no cell uses) and releases
** the new references again if the load fails; the old values of the
** replaced instances are released through the drop list, as after any
** remove.
**
** Buffers: the snapshot is written into a C block owned by a userdata box
** (its __gc frees it), so a Lua error anywhere leaks nothing, and the
** core never sees a longjmp (its writer reports ECS_ERR_NOMEM). The box
** stays in the world's state for the next snapshot (a rollback loop takes
** one per frame): its block is kept while the next snapshot needs at
** least a quarter of it, and goes with world:close.
*/
#include <stdlib.h>

#include "binding.h"
#include "snapshot.h"
#include "plain.h"

#define LUA_LAYOUT 1u
#define BUFFER_MT "ecs.SnapshotBuffer"
#define FACTORIES_KEY "ecs.core.factories"

static const char buffer_key = 0; /* the world's kept snapshot buffer */

/* ======================================================================
** Buffers
** ==================================================================== */

typedef struct lbuf {
  unsigned char *p;
  size_t n, cap;
  lua_Alloc f;
  void *ud;
} lbuf;

static int lbuf_gc(lua_State *L) {
  lbuf *b = (lbuf *)lua_touserdata(L, 1);
  if (b != NULL && b->p != NULL) b->f(b->ud, b->p, b->cap, 0);
  if (b != NULL) {
    b->p = NULL;
    b->n = b->cap = 0;
  }
  return 0;
}

/* A new empty buffer box on the stack (may raise: nothing to leak). */
static lbuf *lbuf_new(lua_State *L) {
  lbuf *b = (lbuf *)lua_newuserdatauv(L, sizeof *b, 0);
  memset(b, 0, sizeof *b);
  b->f = lua_getallocf(L, &b->ud);
  if (luaL_newmetatable(L, BUFFER_MT)) {
    lua_pushcfunction(L, lbuf_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushliteral(L, "locked");
    lua_setfield(L, -2, "__metatable");
  }
  lua_setmetatable(L, -2);
  return b;
}

/* Room for size more bytes; false (nothing changed) when out of memory. */
static bool lbuf_reserve(lbuf *b, size_t size) {
  size_t ncap;
  void *p;
  if (size <= b->cap - b->n) return true;
  if (size > SIZE_MAX / 2 - b->n) return false;
  ncap = b->cap ? b->cap : 256;
  while (ncap < b->n + size) ncap *= 2;
  p = b->f(b->ud, b->p, b->cap, ncap);
  if (p == NULL) return false;
  b->p = (unsigned char *)p;
  b->cap = ncap;
  return true;
}

/* ecs_snapshot_opts.room: the next size bytes of the buffer. */
static unsigned char *lbuf_room(void *ud, size_t size) {
  lbuf *b = (lbuf *)ud;
  unsigned char *p;
  if (!lbuf_reserve(b, size)) return NULL;
  p = b->p + b->n;
  b->n += size;
  return p;
}

static ecs_err lbuf_write(void *ud, const void *data, size_t size) {
  unsigned char *p;
  if (size == 0) return ECS_ERR_OK; /* an empty buffer has no room yet */
  if ((p = lbuf_room(ud, size)) == NULL) return ECS_ERR_NOMEM;
  memcpy(p, data, size);
  return ECS_ERR_OK;
}

/* ======================================================================
** Lua values as plain data (the host section)
** ==================================================================== */

/* Counts and references of the host section, through the plain writer. */
typedef struct enc {
  ecs_writer out;
  bool nomem;
} enc;

static void put_u32(enc *e, uint32_t v) {
  unsigned char b[4];
  for (int k = 0; k < 4; k++) b[k] = (unsigned char)(v >> (8 * k));
  if (!e->nomem && ecs_write(&e->out, b, 4) != ECS_ERR_OK) e->nomem = true;
}

/*
** Write the host section of the world at widx into b: the value of every
** lua field of every live instance, keyed by its reference. Raises for a
** value that is not plain data, naming the component, field and entity;
** allocates nothing the collector sees (see enc).
*/
static void save_lua_values(lua_State *L, int widx, lbuf *b, const char *fn) {
  ecs_world *w = ecs_lua_check_world(L, widx);
  enc e;
  int refs, top = lua_gettop(L);
  size_t count_at;
  uint32_t count = 0;
  e.out.write = lbuf_write;
  e.out.ud = b;
  e.nomem = false;
  put_u32(&e, LUA_LAYOUT);
  count_at = b->n;
  put_u32(&e, 0);
  if (ecsl_push_state_field(L, widx, &ecsl_refs_key) == LUA_TTABLE) {
    refs = lua_gettop(L);
    for (size_t m = 0; m < ecs_manager_count(w); m++) {
      const ecs_manager_class *cls;
      ecs_component *c = (ecs_component *)ecs_manager_at(w, m, NULL, &cls);
      uint32_t nf;
      if (!ecs_component_is(cls)) continue;
      nf = ecs_component_field_count(c);
      for (uint32_t k = 0; k < nf; k++) {
        const uint32_t *cell;
        if (ecs_component_field(c, k)->type != ECS_LUA) continue;
        cell = (const uint32_t *)ecs_component_column(c, k);
        for (uint32_t i = 0; i < ecs_component_size(c); i++) {
          ecs_entity owner = ecs_component_entities(c)[i];
          const char *bad;
          bool nomem = false;
          if (cell[i] == 0 || !ecs_alive(w, owner)) continue;
          put_u32(&e, cell[i]);
          lua_rawgeti(L, refs, (lua_Integer)cell[i]);
          if (!e.nomem) bad = ecsl_plain_encode(L, -1, &e.out, &nomem);
          else bad = NULL;
          e.nomem = e.nomem || nomem;
          if (bad != NULL)
            luaL_error(L, "%s: %s.%s of entity(%d.%d): %s (%s)", fn,
                       ecs_component_name(c), ecs_component_field(c, k)->name,
                       (int)ecs_entity_index(owner),
                       (int)ecs_entity_generation(owner), bad, ECSL_PLAIN_TEXT);
          lua_settop(L, refs);
          count++;
        }
      }
    }
  }
  lua_settop(L, top);
  if (e.nomem) ecsl_error(L, NULL, fn, ECS_ERR_NOMEM, NULL, 0);
  for (int k = 0; k < 4; k++)
    b->p[count_at + (size_t)k] = (unsigned char)(count >> (8 * k));
}

/* One entry of the reference map: the saved reference, the new one, the
** position of its value in the values table, whether a cell used it. */
typedef struct refentry {
  uint32_t old, ref, slot;
  uint32_t used;
} refentry;

typedef struct refmap {
  uint32_t n, done; /* entries; new references made so far */
  refentry e[1];
} refmap;

static int cmp_entry(const void *a, const void *b) {
  uint32_t x = ((const refentry *)a)->old, y = ((const refentry *)b)->old;
  return x < y ? -1 : x > y;
}

/* ecs_snapshot_opts.map_ref: binary search; each entry serves one cell. */
static bool map_ref(void *ud, uint32_t ref, uint32_t *out) {
  refmap *m = (refmap *)ud;
  uint32_t lo = 0, hi = m->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (m->e[mid].old < ref) lo = mid + 1;
    else hi = mid;
  }
  if (lo == m->n || m->e[lo].old != ref || m->e[lo].used) return false;
  m->e[lo].used = 1;
  *out = m->e[lo].ref;
  return true;
}

/* ecs_snapshot_opts.refs_done: every value must have had its cell. */
static ecs_err refs_done(void *ud) {
  const refmap *m = (const refmap *)ud;
  for (uint32_t k = 0; k < m->n; k++)
    if (!m->e[k].used) return ECS_ERR_CORRUPT;
  return ECS_ERR_OK;
}

/* Protected: a reference for each value (refmap, refs, values). */
static int make_refs(lua_State *L) {
  refmap *m = (refmap *)lua_touserdata(L, 1);
  for (; m->done < m->n; m->done++) {
    lua_rawgeti(L, 3, (lua_Integer)m->e[m->done].slot);
    m->e[m->done].ref = (uint32_t)luaL_ref(L, 2);
  }
  return 0;
}

static void unref_all(lua_State *L, int refs, refmap *m) {
  for (uint32_t k = 0; k < m->done; k++)
    luaL_unref(L, refs, (int)m->e[k].ref);
  m->done = 0;
}

/*
** Decode the host section [p, p + n) of a snapshot: push the reference
** map (a userdata, sorted by saved reference) and the table of values it
** indexes. Raises for bad data (nothing made yet).
*/
static refmap *load_lua_values(lua_State *L, const unsigned char *p, size_t n,
                               const char *fn) {
  ecsl_plain_dec d;
  uint32_t count;
  refmap *m;
  d.p = p;
  d.at = 0;
  d.n = n;
  d.fn = fn;
  count = 0; /* n == 0: a snapshot saved without the binding */
  if (n > 0) {
    if (ecsl_plain_uint(L, &d, 4) != LUA_LAYOUT) ecsl_plain_fail(L, &d);
    count = (uint32_t)ecsl_plain_uint(L, &d, 4);
  }
  if (count > (d.n - d.at) / 5) ecsl_plain_fail(L, &d); /* u32 ref + a tag each */
  m = (refmap *)lua_newuserdatauv(L, sizeof *m + (size_t)count * sizeof m->e[0], 0);
  m->n = count;
  m->done = 0;
  lua_createtable(L, (int)count, 0);                     /* map, values */
  for (uint32_t k = 0; k < count; k++) {
    m->e[k].old = (uint32_t)ecsl_plain_uint(L, &d, 4);
    m->e[k].slot = k + 1;
    m->e[k].used = 0;
    m->e[k].ref = 0;
    if (m->e[k].old == 0) ecsl_plain_fail(L, &d);
    ecsl_plain_decode(L, &d);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  if (d.at != d.n) ecsl_plain_fail(L, &d);
  qsort(m->e, count, sizeof m->e[0], cmp_entry);
  for (uint32_t k = 1; k < count; k++)
    if (m->e[k].old == m->e[k - 1].old) ecsl_plain_fail(L, &d); /* one per cell */
  return m;
}

/* ======================================================================
** Restore
** ==================================================================== */

/* The text of a load error, naming the snapshot's manager it is about. */
static const char *load_error_text(lua_State *L, const ecs_snapshot *s,
                                   ecs_err err, uint32_t failed) {
  ecs_snapshot_manager m;
  if (failed == UINT32_MAX || ecs_snapshot_manager_at(s, failed, &m) != ECS_ERR_OK)
    return ecs_strerror(err);
  lua_pushlstring(L, m.name, m.name_len);
  lua_pushlstring(L, m.kind, m.kind_len);
  return lua_pushfstring(L, "%s (%s '%s')", ecs_strerror(err),
                         m.ns == ECS_NS_COMPONENT ? "component" : lua_tostring(L, -1),
                         lua_tostring(L, -2));
}

/*
** The world at widx becomes equal to the snapshot (string) at bidx, or
** raises with the world unchanged. The snapshot was opened into *s.
*/
void ecsl_restore_into(lua_State *L, int widx, int bidx, const ecs_snapshot *s,
                       const char *fn, bool skip_unknown) {
  size_t len;
  const char *blob = lua_tolstring(L, bidx, &len);
  lworld *lw = ecsl_to_lworld(L, widx);
  ecs_snapshot_opts opts;
  ecs_reader in;
  refmap *m;
  uint32_t failed = UINT32_MAX;
  int refs, top = lua_gettop(L);
  ecs_err err;
  m = load_lua_values(L, s->data + s->host_at, s->host_size, fn); /* map, values */
  ecsl_need_state_field(L, widx, &ecsl_refs_key);        /* map, values, refs */
  refs = lua_gettop(L);
  if (m->n > 0) {
    lua_pushcfunction(L, make_refs);
    lua_pushlightuserdata(L, m);
    lua_pushvalue(L, refs);
    lua_pushvalue(L, refs - 1);
    if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
      unref_all(L, refs, m);
      lua_error(L);                           /* the same error object */
    }
  }
  /* the allocations above may have run finalizers that closed the world */
  if (lw->w == NULL) {
    unref_all(L, refs, m);
    ecsl_closed(L);
  }
  memset(&opts, 0, sizeof opts);
  opts.map_ref = map_ref;
  opts.refs_done = refs_done;
  opts.ud = m;
  opts.opened = s; /* framed once; checked there or by the load */
  opts.skip_unknown = skip_unknown;
  in.data = (const unsigned char *)blob;
  in.size = len;
  in.pos = 0;
  err = ecs_world_load_opts(lw->w, &in, &opts, &failed);
  if (err != ECS_ERR_OK) {
    unref_all(L, refs, m);
    ecsl_error(L, NULL, fn, err, load_error_text(L, s, err, failed), 0);
  }
  ecs_lua_drain_refs(L, widx); /* the replaced instances' values */
  lua_settop(L, top);
}

/* The snapshot (string) at bidx framed into *s, its checksum checked
** now or (framed only) left to the load. */
static void open_blob(lua_State *L, int bidx, ecs_snapshot *s, const char *fn,
                      bool check) {
  size_t len;
  const char *blob;
  ecs_err err;
  if (lua_type(L, bidx) != LUA_TSTRING) luaL_typeerror(L, bidx, "string");
  blob = lua_tolstring(L, bidx, &len);
  err = check ? ecs_snapshot_open(s, blob, len) : ecs_snapshot_frame(s, blob, len);
  if (err != ECS_ERR_OK) ecsl_error(L, NULL, fn, err, NULL, 0);
}

void ecsl_open_snapshot(lua_State *L, int bidx, ecs_snapshot *s,
                        const char *fn) {
  open_blob(L, bidx, s, fn, true);
}

/*
** Call the function below its nargs arguments, protected. ecs.restore and
** world:restore only frame the blob: the load checks the checksum in the
** pass that copies the columns (ecs_snapshot_frame). So when what runs
** before the load -- the managers made from the blob's schemas, its lua
** values read -- raises, damaged bytes may be the cause: the error is the
** one a checked open raises first when the checksum does not match, and
** stands as raised when it does.
*/
static void call_blaming_blob(lua_State *L, const ecs_snapshot *s,
                              const char *fn, int nargs, int nresults) {
  if (lua_pcall(L, nargs, nresults, 0) != LUA_OK) {
    ecs_snapshot t = *s;
    if (ecs_snapshot_check(&t) != ECS_ERR_OK)
      ecsl_error(L, NULL, fn, ECS_ERR_CORRUPT, NULL, 0);
    lua_error(L); /* the same error object */
  }
}

static void create_managers(lua_State *L, int widx, const ecs_snapshot *s,
                            int made);

int ecsl_restore_error(lua_State *L) {
  const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  static const char *const from[] = {"ecs.restore: ", "world:component: "};
  for (int k = 0; msg != NULL && k < 2; k++) {
    size_t len = strlen(from[k]);
    if (strncmp(msg, from[k], len) == 0) {
      lua_pushfstring(L, "world:restore: %s", msg + len);
      break;
    }
  }
  return lua_error(L);
}

/* world:restore's load: 1 world, 2 blob, 3 its framed snapshot, 4 the
** list of the components it registers (create_managers, in place) */
static int restore_framed(lua_State *L) {
  const ecs_snapshot *s = (const ecs_snapshot *)lua_touserdata(L, 3);
  lua_settop(L, 4);
  create_managers(L, 1, s, 4);
  lua_settop(L, 2);
  ecsl_restore_into(L, 1, 2, s, "world:restore", false);
  return 0;
}

/* How many components of the snapshot the world at widx has not registered. */
static int missing_components(lua_State *L, int widx, const ecs_snapshot *s) {
  ecs_world *w = ecs_lua_check_world(L, widx);
  int n = 0;
  for (uint32_t i = 0; i < s->manager_count; i++) {
    ecs_snapshot_manager m;
    (void)ecs_snapshot_manager_at(s, i, &m);
    if (m.ns != ECS_NS_COMPONENT) continue;
    lua_pushlstring(L, m.name, m.name_len);
    n += ecs_component_find(w, lua_tostring(L, -1)) == NULL &&
         strcmp(lua_tostring(L, -1), ECS_DISABLED_NAME) != 0; /* the core's */
    lua_pop(L, 1);
  }
  return n;
}

/*
** A restore in place that failed after it registered components (list at
** made, in the order made): each is unregistered again, last first, and
** its object closed, so that the world is as it was. Nothing here
** allocates (it runs after an error, memory errors included). A component
** that something took hold of meanwhile (a finalizer's query, observer or
** instance: ecs_component_unregister refuses) stays registered, empty.
*/
static void unregister_made(lua_State *L, int widx, int made) {
  lworld *lw = ecsl_to_lworld(L, widx);
  for (lua_Integer k = (lua_Integer)lua_rawlen(L, made); k >= 1; k--) {
    lhead *h;
    lua_rawgeti(L, made, k);                             /* obj */
    h = ecsl_test_object(L, -1, &ecsl_comp_tag);
    if (h != NULL && lw->w != NULL) {
      lcomponent *lc = (lcomponent *)(void *)h;
      if (lc->c != NULL && ecs_component_unregister(lw->w, lc->c) == ECS_ERR_OK) {
        lc->c = NULL; /* its methods now raise as on a closed world */
        if (ecsl_push_state_field(L, widx, &ecsl_components_key) == LUA_TTABLE) {
          lua_Integer last = (lua_Integer)lua_rawlen(L, -1);
          lua_rawgeti(L, -1, last);                      /* obj, list, last */
          if (lua_rawequal(L, -1, -3)) {
            lua_pushnil(L);
            lua_rawseti(L, -3, last); /* an existing key: no allocation */
          }
          lua_pop(L, 1);
        }
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
}

/* world:restore(blob [, options]) -- the world becomes equal to blob */
int ecsl_l_world_restore(lua_State *L) {
  ecs_snapshot s;
  int migrate = 0;
  check_world(L, 1);
  open_blob(L, 2, &s, "world:restore", false);
  if (!lua_isnoneornil(L, 3)) {
    static const char *const known[] = {"migrate", NULL};
    luaL_checktype(L, 3, LUA_TTABLE);
    ecsl_check_keys(L, 3, 3, "world:restore", known, false);
    lua_pushliteral(L, "migrate");
    lua_rawget(L, 3);
    if (!lua_isnil(L, -1) && !lua_isboolean(L, -1) && !lua_istable(L, -1))
      return luaL_error(L, "world:restore: bad option 'migrate' (true or a "
                        "table expected, got %s)", luaL_typename(L, -1));
    migrate = lua_toboolean(L, -1);
    lua_replace(L, 3);
  }
  if (migrate) {
    lua_settop(L, 3);
    ecsl_restore_migrate(L); /* 3: the migrate option */
  } else {
    lua_settop(L, 2);
    /* 3: the components it registers, room made now: recording one of
    ** them allocates nothing (the list must be whole to be undone) */
    lua_createtable(L, missing_components(L, 1, &s), 0);
    lua_pushcfunction(L, restore_framed);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_pushlightuserdata(L, &s);
    lua_pushvalue(L, 3);
    if (lua_pcall(L, 4, 0, 0) != LUA_OK) {
      ecs_snapshot t = s;
      unregister_made(L, 1, 3);
      if (ecs_snapshot_check(&t) != ECS_ERR_OK) /* see call_blaming_blob */
        ecsl_error(L, NULL, "world:restore", ECS_ERR_CORRUPT, NULL, 0);
      ecsl_restore_error(L);                   /* the same error, renamed */
    }
  }
  ecsl_charge(L, self_lworld(L));
  return 0;
}

/* The factory registered for the manager named by the bytes [s, s+len),
** pushed, or nil. */
static int push_factory(lua_State *L, const char *s, size_t len) {
  int t;
  if (lua_getfield(L, LUA_REGISTRYINDEX, FACTORIES_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_pushnil(L);
    return LUA_TNIL;
  }
  lua_pushlstring(L, s, len);
  t = lua_rawget(L, -2);
  lua_remove(L, -2);
  return t;
}

void ecs_lua_plugin_factory(lua_State *L, const char *manager,
                            lua_CFunction new_fn) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, FACTORIES_KEY);
  lua_pushcfunction(L, new_fn);
  lua_setfield(L, -2, manager);
  lua_pop(L, 1);
}

/* Call obj:<method>(...) on the object at oidx with nargs arguments on
** the stack; leaves nresults (migrate.c uses it too). */
void ecsl_call_method(lua_State *L, int oidx, const char *method, int nargs,
                      int nresults) {
  lua_getfield(L, oidx, method);
  lua_insert(L, -1 - nargs);
  lua_pushvalue(L, oidx);
  lua_insert(L, -1 - nargs);
  lua_call(L, nargs + 1, nresults);
}

/*
** Create in the world at widx every manager of the snapshot it lacks:
** components from their schema (world:component, cleanup policies
** included), plugin managers through the factory their module registered
** (ecs_lua_plugin_factory). In place (made != 0: world:restore), a
** manager other than a component that the world lacks is an error naming
** it, raised before anything is created, and each component made is
** appended to the list at made (its room is there: no allocation), for
** an undo if the restore fails.
*/
static void create_managers(lua_State *L, int widx, const ecs_snapshot *s,
                            int made) {
  const char *fn = made != 0 ? "world:restore" : "ecs.restore";
  lua_Integer nmade = 0;
  /* the tag of disabled entities first, when the blob holds it: made
  ** after the components below, it would keep a failed restore from
  ** unregistering them (last first); made first, it stays and is empty,
  ** which no snapshot shows (component.h, "Disabled entities") */
  for (uint32_t i = 0; i < s->manager_count; i++) {
    ecs_snapshot_manager m;
    (void)ecs_snapshot_manager_at(s, i, &m);
    if (m.ns == ECS_NS_COMPONENT && m.name_len == sizeof ECS_DISABLED_NAME - 1 &&
        memcmp(m.name, ECS_DISABLED_NAME, m.name_len) == 0) {
      ecs_err err = ecs_world_disabled_ready(ecs_lua_check_world(L, widx));
      if (err != ECS_ERR_OK) ecsl_error(L, NULL, fn, err, NULL, 0);
    }
  }
  for (uint32_t i = 0; made != 0 && i < s->manager_count; i++) {
    ecs_snapshot_manager m;
    (void)ecs_snapshot_manager_at(s, i, &m);
    lua_pushlstring(L, m.name, m.name_len);
    if (m.ns != ECS_NS_COMPONENT &&
        ecs_manager_find(ecs_lua_check_world(L, widx), lua_tostring(L, -1), NULL) == NULL)
      ecsl_error(L, NULL, fn, ECS_ERR_NO_MANAGER,
                 load_error_text(L, s, ECS_ERR_NO_MANAGER, i), 0);
    lua_pop(L, 1);
  }
  for (uint32_t i = 0; i < s->manager_count; i++) {
    ecs_snapshot_manager m;
    ecs_world *w = ecs_lua_check_world(L, widx);
    (void)ecs_snapshot_manager_at(s, i, &m);
    lua_pushlstring(L, m.name, m.name_len);              /* name */
    if (m.ns == ECS_NS_COMPONENT) {
      const char *name = lua_tostring(L, -1);
      if ((made != 0 && ecs_component_find(w, name) != NULL) || /* the world's */
          strcmp(name, ECS_DISABLED_NAME) == 0) { /* the load makes it */
        lua_pop(L, 1);
        continue;
      }
      if (ecs_component_check_schema(name, NULL, 0, NULL) != ECS_ERR_OK ||
          ecs_component_find(w, name) != NULL)
        luaL_error(L, "%s: %s (component '%s')", fn,
                   ecs_strerror(ECS_ERR_CORRUPT), name);
      lua_createtable(L, (int)m.nfields, 0);             /* name, schema */
      for (uint32_t k = 0; k < m.nfields; k++) {
        /* the entry as world:component takes it, cleanup included (a
        ** format 1 snapshot has none: policies were not saved then) */
        static const char *const cleanup[] = {"", "!clear", "!remove", "!destroy"};
        ecs_type t;
        const char *fname;
        size_t flen;
        ecs_snapshot_field(&m, k, &t, &fname, &flen);
        lua_pushlstring(L, fname, flen);
        lua_pushfstring(L, "%s:%s%s", lua_tostring(L, -1), ecs_type_name(t),
                        cleanup[ecs_snapshot_field_cleanup(&m, k)]);
        lua_remove(L, -2);
        lua_rawseti(L, -2, (lua_Integer)k + 1);
      }
      ecsl_call_method(L, widx, "component", 2, 1);      /* manager */
      if (made != 0) lua_rawseti(L, made, ++nmade);
      else lua_pop(L, 1);
    } else {
      const char *name = lua_tostring(L, -1);
      if (ecs_manager_find(w, name, NULL) != NULL) { /* transform, names */
        lua_pop(L, 1);
        continue;
      }
      if (push_factory(L, m.name, m.name_len) == LUA_TNIL) {
        lua_pushlstring(L, m.kind, m.kind_len);
        luaL_error(L, "ecs.restore: the snapshot holds the manager '%s' "
                   "(%s) of a plugin that is not loaded: require its "
                   "module first", name, lua_tostring(L, -1));
      }
      lua_pushvalue(L, widx);
      lua_call(L, 1, 0);                                 /* name */
      if (ecs_manager_find(ecs_lua_check_world(L, widx), name, NULL) == NULL)
        luaL_error(L, "ecs.restore: the plugin's constructor did not create "
                   "the manager '%s'", name);
      lua_pop(L, 1);
    }
  }
}

/* ecs.restore's work: 1 blob, 2 its framed snapshot -> the new world */
static int restore_new(lua_State *L) {
  const ecs_snapshot *s = (const ecs_snapshot *)lua_touserdata(L, 2);
  int widx;
  lua_settop(L, 1);
  lua_pushcfunction(L, ecsl_l_world_new);
  lua_call(L, 0, 1);                                     /* blob, world */
  widx = lua_gettop(L);
  create_managers(L, widx, s, 0);
  ecsl_restore_into(L, widx, 1, s, "ecs.restore", false);
  ecsl_charge(L, ecsl_to_lworld(L, widx));
  return 1;
}

/* ecs.restore(blob) -> a new world equal to the one blob was taken of */
int ecsl_l_restore(lua_State *L) {
  ecs_snapshot s;
  open_blob(L, 1, &s, "ecs.restore", false);
  lua_settop(L, 1);
  lua_pushcfunction(L, restore_new);
  lua_pushvalue(L, 1);
  lua_pushlightuserdata(L, &s);
  call_blaming_blob(L, &s, "ecs.restore", 2, 1);
  return 1;
}

/* ======================================================================
** Snapshot, find_component
** ==================================================================== */

/* The world's kept buffer box, pushed (created on first use), emptied. */
static lbuf *kept_buffer(lua_State *L, int widx) {
  lbuf *b;
  if (ecsl_push_state_field(L, widx, &buffer_key) == LUA_TUSERDATA)
    b = (lbuf *)lua_touserdata(L, -1);
  else {
    lua_pop(L, 1);
    b = lbuf_new(L);                                     /* box */
    lua_getiuservalue(L, widx, 1);                       /* box, state */
    lua_pushvalue(L, -2);
    lua_rawsetp(L, -2, &buffer_key);
    lua_pop(L, 1);                                       /* box */
  }
  b->n = 0;
  return b;
}

/* world:close: free the kept buffer now (never raises: no allocation). */
void ecsl_snapshot_world_closed(lua_State *L, int widx) {
  if (ecsl_push_state_field(L, widx, &buffer_key) == LUA_TUSERDATA) {
    lbuf *b = (lbuf *)lua_touserdata(L, -1);
    if (b->p != NULL) b->f(b->ud, b->p, b->cap, 0);
    b->p = NULL;
    b->n = b->cap = 0;
  }
  lua_pop(L, 1);
}

/* world:snapshot() -> string */
int ecsl_l_world_snapshot(lua_State *L) {
  lbuf *host, *out;
  ecs_snapshot_opts opts;
  ecs_writer wr;
  ecs_world *w;
  ecs_err err;
  check_world(L, 1);
  lua_settop(L, 1);
  host = lbuf_new(L);                                    /* world, host */
  out = kept_buffer(L, 1);                               /* world, host, out */
  /* from here to the core's save nothing runs a finalizer (see enc) */
  save_lua_values(L, 1, host, "world:snapshot");
  w = ecs_lua_check_world(L, 1); /* the allocations above may have closed it */
  memset(&opts, 0, sizeof opts);
  opts.host = host->p;
  opts.host_size = host->n;
  opts.room = lbuf_room; /* columns copied and hashed in one pass */
  wr.write = lbuf_write;
  wr.ud = out;
  err = ecs_world_save_opts(w, &wr, &opts);
  if (err != ECS_ERR_OK) return ecsl_error(L, NULL, "world:snapshot", err, NULL, 0);
  lua_pushlstring(L, (const char *)out->p, out->n);     /* ..., blob */
  /* the host's block now, not at the next cycle; the kept one unless
  ** this snapshot needed at least a quarter of it */
  if (host->p != NULL) host->f(host->ud, host->p, host->cap, 0);
  host->p = NULL;
  host->n = host->cap = 0;
  if (out->n < out->cap / 4 && out->p != NULL) {
    out->f(out->ud, out->p, out->cap, 0);
    out->p = NULL;
    out->cap = 0;
  }
  out->n = 0;
  return 1;
}

/* The Lua object of the core component c (NULL: none) of the world at
** widx, pushed, or nil (returned NULL). */
lcomponent *ecsl_push_component(lua_State *L, int widx, const ecs_component *c) {
  lua_Integer n;
  if (c != NULL && ecsl_push_state_field(L, widx, &ecsl_components_key) == LUA_TTABLE) {
    n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer k = 1; k <= n; k++) {
      lhead *h;
      lua_rawgeti(L, -1, k);
      h = ecsl_test_object(L, -1, &ecsl_comp_tag);
      if (h != NULL && ((lcomponent *)(void *)h)->c == c) {
        lua_remove(L, -2);
        return (lcomponent *)(void *)h;
      }
      lua_pop(L, 1);
    }
  }
  if (c != NULL) lua_pop(L, 1);
  lua_pushnil(L);
  return NULL;
}

/* world:find_component(name) -> the component manager of that name, or nil */
int ecsl_l_world_find_component(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  const char *name = check_text(L, 2, NULL, "world:find_component");
  ecsl_push_component(L, 1, ecs_component_find(w, name));
  return 1;
}
