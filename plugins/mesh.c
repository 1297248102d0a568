/*
** mesh.c -- a C plugin: a mesh manager where an entity may have several
** instances (Bitsquid part 2's next_instance chaining; require("ecs.mesh")).
**
**   local mesh = require("ecs.mesh")
**   local M = mesh.new(world)           -- one manager per world
**   M:add(e, mesh_id) --> how many meshes e has now (mesh_id: u32 integer)
**   M:meshes(e)       --> { mesh_id, ... } in the order they were added
**   M:remove(e, mesh_id) --> boolean (the first instance with that id)
**   M:remove_all(e)   --> number removed
**   M:has(e)  M:count()  M:size()  M:gc([budget])
**
** Layout: one block of three uint32_t columns -- owner, mesh, next -- and
** the core's entity-index -> record map (records.h), which here leads to
** an entity's first instance. An entity's instances form a singly linked
** chain through next (NO_LINK ends it). Removal swaps the last instance
** into the hole, so whoever linked to the last instance (the map, or its
** predecessor in its own chain) is repointed. All instances of a chain
** share their owner, so a chain left by a dead entity is found whole:
** adding to a newer entity with the same index first drops it. Instances
** of dead entities are reclaimed by the core's lazy-gc policy
** (ecs_record_gc), the one every built-in manager uses.
**
** The manager class has every hook of ecs.h's ecs_manager_class: gc,
** check, free, purge, and has, clear, stats, schema (one u32 field,
** "mesh"), save and load, twin and swap, and columns: a query term that
** yields each entity with meshes once, through the owned component "mesh"
** (component.h): a row per chain with `count` (read-only) and `mesh` (the
** first instance's id, rows_written), kept by m_add and row_sync.
**
** Listeners (ecs_manager_listen on this manager) hear ADD for every
** instance add appends (after it is linked; SET follows, ecs.h), REMOVE for every instance
** remove or remove_all takes (before it goes: the chain is still
** readable; the removal then applies to what e's chain holds when the
** listeners return). A listener's error is raised by the method after
** the reported change stands (remove_all stops there). gc, clear and load
** notify nobody.
**
** Saved form (save/load; machine byte order, framed by the snapshot): the
** number n of live entities with meshes (u32), then per entity its handle
** (u32), its instance count c >= 1 (u32) and its c mesh ids (u32) in
** chain order, the order of M:meshes(e).
*/
#include <string.h>

#include "ecs_plugin.h"

#define MESH_CLASS "ecs.Mesh"
#define MESH_NAME "mesh"
#define NO_LINK ECS_RECORD_NONE

typedef struct meshes {
  uint32_t size, cap;
  uint32_t gc_cursor;  /* where ecs_record_gc's scan goes on */
  uint32_t *block;     /* owner[cap], mesh[cap], next[cap] */
  ecs_record_map map;  /* entity index -> first instance */
  /* the query term's rows, one per chain (mesh_class.columns; the same
  ** object for the manager's whole life) */
  ecs_component *c;
  const struct meshes *of; /* a twin: the manager it stands in for */
} meshes;

enum { ROW_COUNT, ROW_MESH };
static const ecs_field_def row_fields[2] = {{"count", ECS_U32}, {"mesh", ECS_U32}};
#define ROW_READONLY (UINT64_C(1) << ROW_COUNT)

#define OWNER(m, i) ((m)->block[(i)])
#define MESH(m, i) ((m)->block[(size_t)(m)->cap + (i)])
#define NEXT(m, i) ((m)->block[2 * (size_t)(m)->cap + (i)])

static const ecs_field_def mesh_fields[1] = {{"mesh", ECS_U32}};

static void *m_alloc(ecs_world *w, void *p, size_t osize, size_t nsize) {
  void *ud;
  ecs_alloc_fn f = ecs_world_allocator(w, &ud);
  return f(ud, p, osize, nsize);
}

static uint32_t *row_col(const meshes *m, int k) {
  return (uint32_t *)ecs_component_column(m->c, (uint32_t)k);
}

/* A bulk write stored rows: mesh is the first instance's id. */
static void rows_written(ecs_world *w, void *ud, ecs_component *c,
                         const uint32_t *rows, uint32_t first, size_t n) {
  meshes *m = (meshes *)ud;
  const ecs_entity *own = ecs_owned_owners(c);
  const uint32_t *id = row_col(m, ROW_MESH);
  (void)w;
  for (size_t j = 0; j < n; j++) {
    uint32_t r = rows != NULL ? rows[j] : first + (uint32_t)j;
    uint32_t head = ecs_record_map_get(&m->map, ecs_entity_index(own[r]));
    if (head != NO_LINK && OWNER(m, head) == own[r]) MESH(m, head) = id[r];
  }
}

static const ecs_owner rows_owner = {rows_written};

static ecs_err rows_new(ecs_world *w, meshes *m) {
  return ecs_owned_new(w, MESH_NAME, row_fields, 2, ROW_READONLY, &rows_owner,
                       m, &m->c);
}

/* Stamp row r as written now (change queries). */
static void row_stamp(const ecs_world *w, meshes *m, uint32_t r) {
  uint32_t now, *at = ecs_owned_changed(w, m->c, &now);
  if (at != NULL) at[r] = now;
}

/* Room for need instances in the block (doubling); all or nothing. The
** cap stays below 2^30, so neither the doubling nor 12 * cap wraps. */
static ecs_err m_grow(ecs_world *w, meshes *m, uint32_t need) {
  uint32_t ncap = m->cap ? m->cap : 16u, *b;
  if (need <= m->cap) return ECS_ERR_OK;
  if (need > (1u << 30)) return ECS_ERR_NOMEM;
  while (ncap < need) ncap *= 2;
  b = (uint32_t *)m_alloc(w, NULL, 0, (size_t)ncap * 12u);
  if (b == NULL) return ECS_ERR_NOMEM;
  for (int c = 0; c < 3 && m->size > 0; c++)
    memcpy(b + (size_t)c * ncap, m->block + (size_t)c * m->cap,
           (size_t)m->size * 4u);
  m_alloc(w, m->block, (size_t)m->cap * 12u, 0);
  m->block = b;
  m->cap = ncap;
  return ECS_ERR_OK;
}

/* Room for one more instance, for e's index in the map and for a row. */
static ecs_err m_reserve(ecs_world *w, meshes *m, ecs_entity e) {
  ecs_err err = ecs_record_map_reserve(w, &m->map, ecs_entity_index(e));
  if (err == ECS_ERR_OK)
    err = ecs_owned_reserve(w, m->c, ecs_component_size(m->c) + 1u,
                            ecs_entity_index(e));
  if (err != ECS_ERR_OK) return err;
  return m_grow(w, m, m->size + 1u);
}

/* Free the block and the map: no instances left (clear, free, load). */
static void m_release(ecs_world *w, meshes *m) {
  m_alloc(w, m->block, (size_t)m->cap * 12u, 0);
  ecs_record_map_free(w, &m->map);
  m->block = NULL;
  m->size = m->cap = m->gc_cursor = 0;
}

/* Repoint the link to instance from (the map entry of its owner's index,
** or its predecessor's next) to `to`. */
static void relink(meshes *m, uint32_t from, uint32_t to) {
  uint32_t index = ecs_entity_index(OWNER(m, from));
  uint32_t j = ecs_record_map_get(&m->map, index);
  if (j == from) {
    ecs_record_map_set(&m->map, index, to);
    return;
  }
  while (NEXT(m, j) != from) j = NEXT(m, j);
  NEXT(m, j) = to;
}

/* The chain of owner (index its index) changed: its row follows (count
** and first mesh; the row goes with the chain's last instance). */
static void row_sync(ecs_world *w, meshes *m, ecs_entity owner) {
  uint32_t index = ecs_entity_index(owner);
  uint32_t r = ecs_owned_find(m->c, index), head, n = 0;
  if (r == ECS_NO_INSTANCE || ecs_owned_owners(m->c)[r] != owner) return;
  head = ecs_record_map_get(&m->map, index);
  if (head == NO_LINK || OWNER(m, head) != owner) {
    ecs_owned_remove_at(w, m->c, r);
    return;
  }
  for (uint32_t j = head; j != NO_LINK; j = NEXT(m, j)) n++;
  row_col(m, ROW_COUNT)[r] = n;
  row_col(m, ROW_MESH)[r] = MESH(m, head);
  row_stamp(w, m, r);
}

/* Unlink instance i from its chain, then swap the last instance in; the
** chain's row follows. */
static void m_remove_at(ecs_world *w, meshes *m, uint32_t i) {
  uint32_t last = m->size - 1;
  ecs_entity owner = OWNER(m, i);
  relink(m, i, NEXT(m, i));
  if (i != last) {
    relink(m, last, i);
    OWNER(m, i) = OWNER(m, last);
    MESH(m, i) = MESH(m, last);
    NEXT(m, i) = NEXT(m, last);
  }
  m->size--;
  row_sync(w, m, owner);
}

/* Remove every instance of the chain at index. */
static void m_remove_chain(ecs_world *w, meshes *m, uint32_t index) {
  uint32_t i;
  while ((i = ecs_record_map_get(&m->map, index)) != NO_LINK) m_remove_at(w, m, i);
}

/* First instance of e, or NO_LINK (also for dead owners). */
static uint32_t m_first(const ecs_world *w, const meshes *m, ecs_entity e) {
  uint32_t i;
  if (!ecs_alive(w, e)) return NO_LINK;
  i = ecs_record_map_get(&m->map, ecs_entity_index(e));
  return i != NO_LINK && OWNER(m, i) == e ? i : NO_LINK;
}

/* Append an instance to e's chain (e alive). @return e's instance count. */
static ecs_err m_add(ecs_world *w, meshes *m, ecs_entity e, uint32_t mesh,
                     uint32_t *count) {
  uint32_t index = ecs_entity_index(e), i, head, tail = NO_LINK;
  ecs_err err = m_reserve(w, m, e);
  if (err != ECS_ERR_OK) return err;
  head = ecs_record_map_get(&m->map, index);
  if (head != NO_LINK && OWNER(m, head) != e) {
    m_remove_chain(w, m, index); /* left by a dead entity with this index */
    head = NO_LINK;
  }
  *count = 1;
  for (uint32_t j = head; j != NO_LINK; j = NEXT(m, j)) {
    tail = j;
    ++*count;
  }
  i = m->size++;
  OWNER(m, i) = e;
  MESH(m, i) = mesh;
  NEXT(m, i) = NO_LINK;
  if (tail == NO_LINK) {
    uint32_t r;
    ecs_record_map_set(&m->map, index, i);
    r = ecs_owned_append(w, m->c, e); /* room reserved; a new row stamps itself */
    row_col(m, ROW_COUNT)[r] = 1;
    row_col(m, ROW_MESH)[r] = mesh;
  } else {
    uint32_t r = ecs_owned_find(m->c, index);
    NEXT(m, tail) = i;
    row_col(m, ROW_COUNT)[r] = *count;
    row_stamp(w, m, r);
  }
  return ECS_ERR_OK;
}

/* The instances as the core's lazy gc sees them: owners, swap-remove. A
** dead chain goes an instance at a time, each drop relinking the rest. */
static ecs_entity gc_owner(const void *self, uint32_t i) {
  return OWNER((const meshes *)self, i);
}
static void gc_drop(ecs_world *w, void *self, uint32_t i) {
  m_remove_at(w, (meshes *)self, i);
}
static const ecs_record_ops gc_ops = {gc_owner, gc_drop};

/* The core's one policy (records.h); SIZE_MAX sweeps everything. */
static size_t m_gc(ecs_world *w, void *self, size_t budget) {
  meshes *m = (meshes *)self;
  return ecs_record_gc(w, m, &gc_ops, &m->size, &m->gc_cursor, budget);
}

/* What check_chain needs: the world, the manager, a count of instances
** reached (ecs_record_map_each hands a const pointer through). */
typedef struct chain_check {
  const ecs_world *w;
  const meshes *m;
  uint32_t *reached;
} chain_check;

/* The chain that the map entry of index x leads to is well formed. */
static const char *check_chain(const void *ud, uint32_t x, uint32_t head) {
  const chain_check *cc = (const chain_check *)ud;
  const meshes *m = cc->m;
  uint32_t steps = 0;
  if (head >= m->size) return "mesh: link past the instances";
  for (uint32_t i = head; i != NO_LINK; i = NEXT(m, i)) {
    if (i >= m->size) return "mesh: link past the instances";
    if (ecs_entity_index(OWNER(m, i)) != x) return "mesh: chain of another index";
    if (OWNER(m, i) != OWNER(m, head)) return "mesh: chain mixes owners";
    if (!ecs_record_valid(cc->w, OWNER(m, i)))
      return "mesh: record outlived its generation (wrap)";
    if (++steps > m->size) return "mesh: chain loops";
    ++*cc->reached;
  }
  return NULL;
}

/* The rows mirror the chains: one per chain (a dead owner's too), with
** its owner, length and first mesh id. */
static const char *rows_check(const ecs_world *w, const meshes *m) {
  const ecs_entity *own = ecs_owned_owners(m->c);
  uint32_t nrows = ecs_component_size(m->c), heads = 0;
  for (uint32_t i = 0; i < m->size; i++)
    heads += ecs_record_map_get(&m->map, ecs_entity_index(OWNER(m, i))) == i;
  if (heads != nrows) return "mesh: not one row per chain";
  for (uint32_t r = 0; r < nrows; r++) {
    uint32_t head = ecs_record_map_get(&m->map, ecs_entity_index(own[r])), n = 0;
    if (head == NO_LINK || OWNER(m, head) != own[r]) return "mesh: a row without its chain";
    for (uint32_t j = head; j != NO_LINK; j = NEXT(m, j)) n++;
    if (row_col(m, ROW_COUNT)[r] != n || row_col(m, ROW_MESH)[r] != MESH(m, head))
      return "mesh: a row's count or mesh differs from its chain";
  }
  return ecs_owned_check(w, m->c, own, nrows);
}

/* Every chain is well formed: each instance is reached exactly once, from
** the map entry of its owner's index, through instances of the same owner. */
static const char *m_check(const ecs_world *w, const void *self) {
  const meshes *m = (const meshes *)self;
  uint32_t reached = 0;
  chain_check cc;
  const char *bad;
  if (m->size > m->cap) return "mesh: size exceeds capacity";
  cc.w = w;
  cc.m = m;
  cc.reached = &reached;
  if ((bad = ecs_record_map_each(&m->map, check_chain, &cc)) != NULL) return bad;
  if (reached != m->size) return "mesh: instances not reachable from the map";
  return rows_check(w, m);
}

/* The index's generation wrapped: mark its chain's owners purged, so no
** later entity with that index sees these meshes; the chain is dropped
** whole by gc or by the next add at this index. Nothing moves. */
static void m_purge(ecs_world *w, void *self, uint32_t index) {
  meshes *m = (meshes *)self;
  (void)w;
  for (uint32_t i = ecs_record_map_get(&m->map, index); i != NO_LINK; i = NEXT(m, i))
    OWNER(m, i) = ecs_mark_purged(OWNER(m, i));
  ecs_owned_purge(m->c, index);
}

static void m_free(ecs_world *w, void *self) {
  meshes *m = (meshes *)self;
  m_release(w, m);
  ecs_owned_free(w, m->c);
  m_alloc(w, m, sizeof *m, 0);
}

/* ------------------------------------------------------------------------
** The manager interface's optional hooks (ecs.h, ecs_manager_class)
** --------------------------------------------------------------------- */

static bool m_has(const ecs_world *w, const void *self, ecs_entity e) {
  return m_first(w, (const meshes *)self, e) != NO_LINK;
}

/* Every instance goes, and with them the memory. */
static void m_clear(ecs_world *w, void *self) {
  meshes *m = (meshes *)self;
  m_release(w, m);
  ecs_owned_clear(w, m->c);
}

static void m_stats(const ecs_world *w, const void *self,
                    ecs_manager_stats *out) {
  const meshes *m = (const meshes *)self;
  out->records = m->size;
  out->live = 0;
  for (uint32_t i = 0; i < m->size; i++) out->live += ecs_alive(w, OWNER(m, i));
  out->bytes = sizeof *m + (size_t)m->cap * 12u + ecs_record_map_bytes(&m->map) +
               ecs_owned_bytes(w, m->c);
}

static uint32_t m_schema(const ecs_world *w, const void *self,
                         ecs_field_def *out, uint32_t max) {
  (void)w;
  (void)self;
  if (max > 0) out[0] = mesh_fields[0];
  return 1;
}

/* Is instance i the first of a live entity's chain? */
static bool live_head(const ecs_world *w, const meshes *m, uint32_t i) {
  return ecs_alive(w, OWNER(m, i)) &&
         ecs_record_map_get(&m->map, ecs_entity_index(OWNER(m, i))) == i;
}

/* The saved form: see the top of the file. Chains of live entities only,
** in the order of their first instances. */
static ecs_err m_save(const ecs_world *w, const void *self, ecs_writer *out) {
  const meshes *m = (const meshes *)self;
  uint32_t n = 0;
  ecs_err err;
  for (uint32_t i = 0; i < m->size; i++) n += live_head(w, m, i);
  if ((err = ecs_write_u32(out, n)) != ECS_ERR_OK) return err;
  for (uint32_t i = 0; i < m->size; i++) {
    uint32_t c = 0;
    if (!live_head(w, m, i)) continue;
    for (uint32_t j = i; j != NO_LINK; j = NEXT(m, j)) c++;
    if ((err = ecs_write_u32(out, OWNER(m, i))) != ECS_ERR_OK ||
        (err = ecs_write_u32(out, c)) != ECS_ERR_OK)
      return err;
    for (uint32_t j = i; j != NO_LINK; j = NEXT(m, j))
      if ((err = ecs_write_u32(out, MESH(m, j))) != ECS_ERR_OK) return err;
  }
  return ECS_ERR_OK;
}

/* Read one entity's chain into fresh (see m_load). */
static ecs_err load_chain(ecs_world *w, meshes *fresh, ecs_reader *r) {
  uint32_t e, c, index, first;
  ecs_err err;
  if ((err = ecs_read_u32(r, &e)) != ECS_ERR_OK ||
      (err = ecs_read_u32(r, &c)) != ECS_ERR_OK)
    return err;
  index = ecs_entity_index(e);
  /* at least one mesh, all of them present; a live entity, not a repeat */
  if (c == 0 || c > (r->size - r->pos) / 4u || !ecs_alive(w, e) ||
      ecs_record_map_get(&fresh->map, index) != NO_LINK)
    return ECS_ERR_CORRUPT;
  if (c > (1u << 30) - fresh->size) return ECS_ERR_NOMEM; /* m_grow's cap */
  if ((err = ecs_record_map_reserve(w, &fresh->map, index)) != ECS_ERR_OK ||
      (err = ecs_owned_reserve(w, fresh->c, ecs_component_size(fresh->c) + 1u,
                               index)) != ECS_ERR_OK ||
      (err = m_grow(w, fresh, fresh->size + c)) != ECS_ERR_OK)
    return err;
  first = fresh->size;
  for (uint32_t k = 0; k < c; k++) {
    uint32_t i = fresh->size;
    /* cannot fail (c was checked against the bytes left); checked anyway */
    if ((err = ecs_read_u32(r, &MESH(fresh, i))) != ECS_ERR_OK) return err;
    fresh->size++;
    OWNER(fresh, i) = e;
    NEXT(fresh, i) = k + 1 < c ? i + 1 : NO_LINK;
  }
  ecs_record_map_set(&fresh->map, index, first);
  first = ecs_owned_append(w, fresh->c, e); /* its row */
  row_col(fresh, ROW_COUNT)[first] = c;
  row_col(fresh, ROW_MESH)[first] = MESH(fresh, fresh->size - c);
  return ECS_ERR_OK;
}

/*
** Read every chain into a fresh manager, checking as it goes (the entity
** count against the bytes left before anything is allocated, each
** chain's length likewise; live entities, each once, at least one mesh
** each), and only then trade it for the old one, so any failure (bad data
** or out of memory) leaves the manager and the reader as they were. Peak
** memory: both managers for a moment.
*/
static ecs_err m_load(ecs_world *w, void *self, ecs_reader *in) {
  meshes *m = (meshes *)self, fresh;
  ecs_reader r = *in;
  uint32_t n;
  ecs_err err;
  memset(&fresh, 0, sizeof fresh);
  if ((err = ecs_read_u32(&r, &n)) != ECS_ERR_OK) return err;
  /* every entity takes at least 12 bytes: handle, count, one mesh */
  if (n > (r.size - r.pos) / 12u) return ECS_ERR_CORRUPT;
  if ((err = rows_new(w, &fresh)) != ECS_ERR_OK) return err;
  for (uint32_t k = 0; k < n && err == ECS_ERR_OK; k++)
    err = load_chain(w, &fresh, &r);
  /* the rows go to m's own component (queries watch that one); a twin's
  ** to the component of the manager it stands in for, at the swap */
  if (err == ECS_ERR_OK)
    err = ecs_owned_take_prepare(w, m->of != NULL ? m->of->c : m->c, fresh.c);
  if (err != ECS_ERR_OK) {
    m_release(w, &fresh);
    ecs_owned_free(w, fresh.c);
    return err;
  }
  m_release(w, m);
  ecs_owned_take(w, m->c, fresh.c);
  ecs_owned_free(w, fresh.c);
  fresh.c = m->c;
  fresh.of = m->of;
  *m = fresh;
  in->pos = r.pos;
  return ECS_ERR_OK;
}

/* Staged loads (snapshots): an empty manager to load into, then a trade
** of records with the registered one; each keeps its component object
** (queries watch the registered one's) and takes the other's rows. */
static void *m_twin(ecs_world *w, const void *self) {
  meshes *t = (meshes *)m_alloc(w, NULL, 0, sizeof *t);
  if (t == NULL) return NULL;
  memset(t, 0, sizeof *t);
  t->of = (const meshes *)self;
  if (rows_new(w, t) != ECS_ERR_OK) {
    m_alloc(w, t, sizeof *t, 0);
    return NULL;
  }
  return t;
}

static void m_swap(ecs_world *w, void *self, void *twin) {
  meshes *a = (meshes *)self, *b = (meshes *)twin, tmp = *a;
  ecs_component *ca = a->c, *cb = b->c;
  *a = *b;
  *b = tmp;
  a->c = ca;
  b->c = cb;
  a->of = b->of = NULL;
  ecs_owned_take(w, ca, cb); /* the twin's load reserved what a needs */
}

/* The manager as a query term: one row per entity with meshes. */
static ecs_component *m_columns(const ecs_world *w, void *self) {
  (void)w;
  return ((meshes *)self)->c;
}

static const ecs_manager_class mesh_class = {
  .kind = "mesh",
  .gc = m_gc,
  .check = m_check,
  .free = m_free,
  .purge = m_purge,
  .has = m_has,
  .clear = m_clear,
  .stats = m_stats,
  .schema = m_schema,
  .save = m_save,
  .load = m_load,
  .twin = m_twin,
  .swap = m_swap,
  .columns = m_columns,
};

/* ------------------------------------------------------------------------
** Lua glue
** --------------------------------------------------------------------- */

typedef struct lmesh {
  meshes *m;
} lmesh;

static meshes *check_mesh(lua_State *L, ecs_world **w) {
  return ((lmesh *)ecs_lua_plugin_check(L, 1, MESH_CLASS, w))->m;
}

static uint32_t check_mesh_id(lua_State *L, int idx) {
  lua_Integer id = luaL_checkinteger(L, idx);
  luaL_argcheck(L, id >= 0 && id <= (lua_Integer)UINT32_MAX, idx,
                "mesh id out of range (0 to 4294967295)");
  return (uint32_t)id;
}

/* M:add(e, mesh_id) -> number of meshes e has now */
static int l_mesh_add(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  uint32_t id = check_mesh_id(L, 3), n;
  ecs_err err;
  if (!ecs_alive(w, e)) return ecs_lua_error(L, "mesh:add", ECS_ERR_DEAD);
  if ((err = m_add(w, m, e, id, &n)) != ECS_ERR_OK ||
      (err = ecs_manager_notify(w, m, e, ECS_EVENT_ADD)) != ECS_ERR_OK)
    return ecs_lua_error(L, "mesh:add", err); /* a listener's: the add stands */
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

/* M:meshes(e) -> { mesh_id, ... } (empty for none or a dead entity) */
static int l_mesh_meshes(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  lua_Integer n = 0, len = 0;
  uint32_t i;
  for (i = m_first(w, m, e); i != NO_LINK; i = NEXT(m, i)) len++;
  /* sized up front: the stores below never allocate, so no GC step (and
  ** no finalizer) can change the chain while it is walked */
  lua_createtable(L, (int)len, 0);
  m = check_mesh(L, &w); /* the allocation may have run a finalizer closing the world */
  for (i = m_first(w, m, e); i != NO_LINK && n < len; i = NEXT(m, i)) {
    lua_pushinteger(L, (lua_Integer)MESH(m, i));
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

/* The first instance of e with mesh id, or NO_LINK. */
static uint32_t m_find(const ecs_world *w, const meshes *m, ecs_entity e,
                       uint32_t id) {
  uint32_t i = m_first(w, m, e);
  while (i != NO_LINK && MESH(m, i) != id) i = NEXT(m, i);
  return i;
}

/* M:remove(e, mesh_id) -> boolean. REMOVE is reported first, while the
** chain is readable; the listeners may move or drop instances, so the
** instance is looked up again before it goes. */
static int l_mesh_remove(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  uint32_t id = check_mesh_id(L, 3), i;
  ecs_err err;
  if (m_find(w, m, e, id) == NO_LINK) {
    lua_pushboolean(L, 0);
    return 1;
  }
  err = ecs_manager_notify(w, m, e, ECS_EVENT_REMOVE);
  if ((i = m_find(w, m, e, id)) != NO_LINK) m_remove_at(w, m, i);
  if (err != ECS_ERR_OK) return ecs_lua_error(L, "mesh:remove", err);
  lua_pushboolean(L, 1);
  return 1;
}

/* M:remove_all(e) -> number removed: the instances e has on entry, first
** to last, each reported (REMOVE) before it goes; a listener's error
** stops it there (the reported one is gone). Bounded by the count on
** entry, so a listener that adds meshes to e cannot keep it going. */
static int l_mesh_remove_all(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  uint32_t n = 0, todo = 0, i;
  ecs_err err = ECS_ERR_OK;
  for (i = m_first(w, m, e); i != NO_LINK; i = NEXT(m, i)) todo++;
  while (n < todo && err == ECS_ERR_OK && m_first(w, m, e) != NO_LINK) {
    err = ecs_manager_notify(w, m, e, ECS_EVENT_REMOVE);
    if ((i = m_first(w, m, e)) == NO_LINK) break; /* a listener took them */
    m_remove_at(w, m, i);
    n++;
  }
  if (err != ECS_ERR_OK) return ecs_lua_error(L, "mesh:remove_all", err);
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

static int l_mesh_has(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  lua_pushboolean(L, m_first(w, m, ecs_lua_check_entity(L, 2)) != NO_LINK);
  return 1;
}

/* M:count() -> instances whose entity is alive */
static int l_mesh_count(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  lua_Integer n = 0;
  for (uint32_t i = 0; i < m->size; i++) n += ecs_alive(w, OWNER(m, i));
  lua_pushinteger(L, n);
  return 1;
}

/* M:size() -> instances stored, dead entities' included */
static int l_mesh_size(lua_State *L) {
  ecs_world *w;
  lua_pushinteger(L, (lua_Integer)check_mesh(L, &w)->size);
  return 1;
}

static int l_mesh_gc(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  size_t budget = SIZE_MAX;
  if (!lua_isnoneornil(L, 2)) {
    lua_Integer b = luaL_checkinteger(L, 2);
    luaL_argcheck(L, b >= 0, 2, "budget must not be negative");
    budget = (size_t)b;
  }
  lua_pushinteger(L, (lua_Integer)m_gc(w, m, budget));
  return 1;
}

static const luaL_Reg mesh_methods[] = {
  {"add", l_mesh_add}, {"meshes", l_mesh_meshes}, {"remove", l_mesh_remove},
  {"remove_all", l_mesh_remove_all}, {"has", l_mesh_has},
  {"count", l_mesh_count}, {"size", l_mesh_size}, {"gc", l_mesh_gc},
  {NULL, NULL}
};

/* mesh.new(world) -> the world's mesh manager (created once) */
static int l_mesh_new(lua_State *L) {
  ecs_world *w; /* ecs_lua_plugin_get checks the world */
  meshes *m;
  lmesh *o;
  ecs_err err;
  if (ecs_lua_plugin_get(L, 1, MESH_CLASS) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  o = (lmesh *)ecs_lua_plugin_new(L, 1, MESH_CLASS, sizeof *o);
  w = ecs_lua_check_world(L, 1); /* a finalizer run by that allocation may have closed it */
  m = (meshes *)m_alloc(w, NULL, 0, sizeof *m);
  if (m == NULL) err = ECS_ERR_NOMEM;
  else {
    memset(m, 0, sizeof *m);
    if ((err = rows_new(w, m)) != ECS_ERR_OK) m_alloc(w, m, sizeof *m, 0);
    else err = ecs_manager_register(w, MESH_NAME, &mesh_class, m); /* frees m on error */
  }
  if (err != ECS_ERR_OK) {
    ecs_lua_plugin_detach(L, 1, MESH_CLASS);
    return ecs_lua_error(L, "mesh.new", err);
  }
  o->m = m;
  ecs_lua_plugin_manager(L, -1, m); /* a query term (mesh_class.columns) */
  return 1;
}

int luaopen_ecs_mesh(lua_State *L);

int luaopen_ecs_mesh(lua_State *L) {
  ECS_PLUGIN_INIT(L);
  ecs_lua_plugin_class(L, MESH_CLASS, mesh_methods);
  ecs_lua_plugin_factory(L, MESH_NAME, l_mesh_new); /* for ecs.restore */
  lua_newtable(L);
  lua_pushcfunction(L, l_mesh_new);
  lua_setfield(L, -2, "new");
  return 1;
}
