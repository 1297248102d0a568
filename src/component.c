/*
** component.c -- generic component managers (Bitsquid part 2).
**
** Layout. One block holds every instance: the owner column (cap entities)
** followed by one column per field, in schema order, each of cap values.
** cap is 0 or a multiple of 8, so every column starts at a multiple of
** 8 bytes from the block (which the allocator aligns for any type): all
** columns are aligned without padding. Growth doubles cap with one
** realloc and then moves the columns up to their new offsets, highest
** first (a column's new offset is never below its old one, and never below
** the old end of the columns before it, so nothing unmoved is overwritten).
**
** Entity -> instance map: the managers' shared page table (sparse.h),
** whose empty entry ECSI_NONE is ECS_NO_INSTANCE. The map stores only the
** instance; the owner column holds the full entity, so a lookup compares
** the stored owner with the handle (generation included) and checks
** ecs_alive. Cost: 4 bytes per index of every touched page, plus 8 bytes
** of directory per 1024 indices; for dense indices that is about 4 bytes
** per instance, for a single instance 4 KB. A hash map would cost less
** for very sparse use but more per lookup; entity indices are dense
** (Bitsquid part 1 hands out the lowest fresh ones first).
**
** Invariants (checked by component_check): size <= cap; for every
** instance i, map[index(owner[i])] == i, and the map holds exactly size
** entries; so at most one record per entity index, live or dead; and no
** owner's generation is ahead of its slot's (ecs_record_valid): when an
** index's generation wraps, component_purge marks its record ECS_PURGED.
**
** Dead records. The entity manager does not tell managers when an entity
** dies, so a dead owner's instance stays in the columns, invisible to
** every read (lookup checks ecs_alive), until the lazy gc (sparse.h) or
** the next add at that index takes it. Destroying an entity is then O(1)
** whatever it owns, and iterations over the columns are never disturbed
** by a destroy.
**
** Layer: managers (layers: alloc.h).
*/
#include <string.h>

#include "component.h"
#include "ecs_private.h"
#include "sparse.h"

_Static_assert(ECSI_NONE == ECS_NO_INSTANCE,
               "the map's empty entry must read as no instance");

#define MIN_CAP 8u

/*
** One manager. The schema (name, fields, element sizes, lua fields,
** column prefixes) lives in the meta block with this struct and never
** changes; data, size, cap, the map and version change with instances.
*/
struct ecs_component {
  char *name;              /* in the meta block */
  ecs_field_def *field;    /* nfields, names in the meta block */
  uint8_t *elem;           /* size of one value of each field */
  uint32_t *lua_field;     /* indices of the nlua "lua" fields */
  uint32_t *prefix;        /* bytes per instance before column k (k <= nfields) */
  size_t meta_size;        /* bytes of the meta block (this struct first) */
  uint32_t nfields, nlua;
  size_t stride;           /* bytes per instance over all columns */
  void *data;              /* the one block of columns */
  uint32_t size, cap;
  ecsi_sparse map;         /* entity index -> instance */
  uint32_t gc_cursor;      /* where the lazy gc goes on (ecsi_lazy_gc) */
  uint64_t version;        /* structural changes and column moves */
  const struct removal *removing; /* REMOVEs being reported (see remove) */
  ecsi_watch *watch;       /* the queries that name this manager */
  uint32_t nwatch, watch_cap;
  /* a twin (staged loads, snapshot.c): the manager it stands in for, and
  ** a load deferred to the swap -- the owner list and columns in the
  ** stream, checked -- or NULL */
  const struct ecs_component *of;
  const unsigned char *defer_owners, *defer_cols;
  uint32_t defer_count;
};

static const ecs_manager_class component_class;

/* ------------------------------------------------------------------------
** Lua refs dropped by managers
**
** The core never calls Lua, yet dropping an instance must release the
** Lua values its "lua" fields hold. So drops only append the references
** to one per-world list, and the binding drains and releases them when
** it next runs. Room for every reference that could be dropped is
** reserved when an instance is created (ref_slots), so remove, gc and
** purge never allocate and never fail.
** --------------------------------------------------------------------- */

void ecsi_refs_free(ecs_world *w) {
  ecsi_free(w, w->ref_drop, w->ref_cap * sizeof(uint32_t));
  w->ref_drop = NULL;
  w->ref_len = w->ref_cap = w->ref_slots = 0;
}

/*
** Make room for nlua more lua cells: afterwards ref_cap >= ref_len +
** ref_slots + nlua. For one instance (add) that covers both a new instance
** (ref_slots grows by nlua) and the reuse of a dead record (ref_len grows
** by at most nlua); load reserves for all the instances it reads at once.
** Doubling, so the cost is amortised.
*/
static ecs_err refs_reserve(ecs_world *w, size_t nlua) {
  size_t need = w->ref_len + w->ref_slots + nlua, ncap;
  void *p;
  if (nlua == 0 || need <= w->ref_cap) return ECS_ERR_OK;
  ncap = w->ref_cap ? w->ref_cap : 64u;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2u) return ECS_ERR_NOMEM;
    ncap *= 2;
  }
  if (ncap > SIZE_MAX / sizeof(uint32_t)) return ECS_ERR_NOMEM;
  p = ecsi_realloc(w, w->ref_drop, w->ref_cap * sizeof(uint32_t),
                   ncap * sizeof(uint32_t));
  if (p == NULL) return ECS_ERR_NOMEM;
  w->ref_drop = (uint32_t *)p;
  w->ref_cap = ncap;
  return ECS_ERR_OK;
}

/* From the end of the list: O(1) per call, and the order means nothing. */
size_t ecs_drain_refs(ecs_world *w, uint32_t *buf, size_t max) {
  size_t n = w->ref_len < max ? w->ref_len : max;
  if (n == 0) return 0; /* ref_drop may be NULL: no memcpy from it */
  w->ref_len -= n;
  memcpy(buf, w->ref_drop + w->ref_len, n * sizeof(uint32_t));
  return n;
}

size_t ecs_dropped_refs(const ecs_world *w) { return w->ref_len; }

/* ------------------------------------------------------------------------
** Columns
** --------------------------------------------------------------------- */

/*
** Byte offset of field k's column (k == nfields: the end of the block).
** prefix[k] is the bytes one instance takes in the columns before k, so
** cap instances of each take prefix[k] * cap: the columns are laid out
** back to back, and a multiple-of-8 cap keeps each one aligned.
*/
static size_t col_offset(const ecs_component *c, uint32_t k, uint32_t cap) {
  return (size_t)c->prefix[k] * cap;
}

static ecs_entity *owners(const ecs_component *c) {
  return (ecs_entity *)c->data;
}

static uint8_t *col(const ecs_component *c, uint32_t k) {
  return (uint8_t *)c->data + col_offset(c, k, c->cap);
}

/*
** Grow the block so that it holds at least need instances. On failure
** nothing changed.
*/
static ecs_err data_reserve(ecs_world *w, ecs_component *c, uint32_t need) {
  uint32_t ocap = c->cap, ncap = c->cap ? c->cap : MIN_CAP;
  void *p;
  if (need <= ocap) return ECS_ERR_OK;
  while (ncap < need) ncap *= 2; /* need <= ECS_MAX_ENTITIES: no overflow */
  if ((size_t)ncap > SIZE_MAX / c->stride) return ECS_ERR_NOMEM;
  p = ecsi_realloc(w, c->data, c->stride * ocap, c->stride * ncap);
  if (p == NULL) return ECS_ERR_NOMEM;
  c->data = p;
  c->cap = ncap;
  for (uint32_t k = c->nfields; k-- > 0;) /* highest column first */
    memmove((uint8_t *)p + col_offset(c, k, ncap),
            (uint8_t *)p + col_offset(c, k, ocap), (size_t)c->size * c->elem[k]);
  c->version++; /* column pointers moved */
  return ECS_ERR_OK;
}

/* The map's entry for index: an instance, or ECS_NO_INSTANCE. */
static uint32_t map_get(const ecs_component *c, uint32_t index) {
  return ecsi_sparse_get(&c->map, index);
}

/* ------------------------------------------------------------------------
** The queries watching this manager
**
** A query keeps its match list up to date as instances come and go
** (query.c): every query registers with each manager it names, and the
** manager reports, after each structural change, the entity whose set of
** components changed and the entity whose row moved (swap-remove). The
** reports are upcalls into query.c (ecs_private.h): they never fail and
** never allocate here (a query that cannot keep up marks itself stale and
** rebuilds at its next use). Bulk changes (clear, load) make every
** watching query stale instead.
** --------------------------------------------------------------------- */

ecs_err ecsi_component_watch(ecs_world *w, ecs_component *c,
                             struct ecs_query *q, uint32_t term) {
  if (c->nwatch == c->watch_cap) {
    uint32_t ncap = c->watch_cap ? c->watch_cap * 2u : 4u;
    void *p = ecsi_realloc(w, c->watch, c->watch_cap * sizeof *c->watch,
                           ncap * sizeof *c->watch);
    if (p == NULL) return ECS_ERR_NOMEM;
    c->watch = (ecsi_watch *)p;
    c->watch_cap = ncap;
  }
  c->watch[c->nwatch].q = q;
  c->watch[c->nwatch].term = term;
  c->nwatch++;
  return ECS_ERR_OK;
}

void ecsi_component_unwatch(ecs_component *c, const struct ecs_query *q) {
  for (uint32_t k = 0; k < c->nwatch; k++)
    if (c->watch[k].q == q) {
      c->watch[k] = c->watch[--c->nwatch];
      return;
    }
}

static void tell_changed(ecs_world *w, ecs_component *c, ecs_entity e,
                         bool added) {
  for (uint32_t k = 0; k < c->nwatch; k++)
    ecsi_query_entity_changed(w, c->watch[k].q, c->watch[k].term, e, added);
}

static void tell_moved(ecs_world *w, ecs_component *c, ecs_entity e,
                       uint32_t row) {
  for (uint32_t k = 0; k < c->nwatch; k++)
    ecsi_query_row_moved(w, c->watch[k].q, c->watch[k].term, e, row);
}

static void tell_stale(ecs_component *c) {
  for (uint32_t k = 0; k < c->nwatch; k++)
    ecsi_query_invalidate(c->watch[k].q);
}

/*
** Re-alignment (query.c, ecsi_query_align): put the instances of the n
** entities first[] at rows 0 .. n-1 in that order, every other instance
** after them in its current order. The columns are copied into a new
** block in one pass (no per-row search: dest[] maps each old row to its
** new one). Every watching query but keep is made stale (its rows moved);
** keep's rows are the caller's to set. Readers of pinned snapshots see the
** version move and look rows up again. @return false, with nothing
** changed, when memory ran out or first[] names an entity this manager
** has no instance for (re-alignment is an optimisation: it may not happen).
*/
bool ecsi_component_reorder(ecs_world *w, ecs_component *c,
                            const ecs_entity *first, uint32_t n,
                            const struct ecs_query *keep) {
  const ecs_entity *own = owners(c);
  uint32_t *dest, next = n;
  uint8_t *nd;
  if (n > c->size || c->size == 0) return false;
  dest = (uint32_t *)ecsi_realloc(w, NULL, 0, (size_t)c->size * sizeof *dest);
  if (dest == NULL) return false;
  nd = (uint8_t *)ecsi_realloc(w, NULL, 0, c->stride * c->cap);
  if (nd == NULL) {
    ecsi_free(w, dest, (size_t)c->size * sizeof *dest);
    return false;
  }
  memset(dest, 0xff, (size_t)c->size * sizeof *dest);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t r = map_get(c, ecs_entity_index(first[i]));
    if (r == ECS_NO_INSTANCE || own[r] != first[i] || dest[r] != UINT32_MAX) {
      ecsi_free(w, nd, c->stride * c->cap);
      ecsi_free(w, dest, (size_t)c->size * sizeof *dest);
      return false;
    }
    dest[r] = i;
  }
  for (uint32_t r = 0; r < c->size; r++)
    if (dest[r] == UINT32_MAX) dest[r] = next++;
  for (uint32_t r = 0; r < c->size; r++)
    ((ecs_entity *)(void *)nd)[dest[r]] = own[r];
  for (uint32_t k = 0; k < c->nfields; k++) {
    const uint8_t *from = col(c, k);
    uint8_t *to = nd + col_offset(c, k, c->cap);
    size_t e = c->elem[k];
    if (e == 4) {
      for (uint32_t r = 0; r < c->size; r++)
        memcpy(to + (size_t)dest[r] * 4u, from + (size_t)r * 4u, 4u);
    } else {
      for (uint32_t r = 0; r < c->size; r++)
        memcpy(to + (size_t)dest[r] * e, from + (size_t)r * e, e);
    }
  }
  ecsi_free(w, c->data, c->stride * c->cap);
  c->data = nd;
  own = owners(c);
  for (uint32_t r = 0; r < c->size; r++)
    ecsi_sparse_set(&c->map, ecs_entity_index(own[r]), r);
  ecsi_free(w, dest, (size_t)c->size * sizeof *dest);
  c->gc_cursor = 0;
  c->version++;
  for (uint32_t k = 0; k < c->nwatch; k++)
    if (c->watch[k].q != keep) ecsi_query_invalidate(c->watch[k].q);
  return true;
}

/* ------------------------------------------------------------------------
** Instances
** --------------------------------------------------------------------- */

/* Append the non-zero lua refs of instance i to the world's drop list. */
static void drop_refs(ecs_world *w, ecs_component *c, uint32_t i) {
  for (uint32_t k = 0; k < c->nlua; k++) {
    uint32_t *cell = (uint32_t *)(void *)col(c, c->lua_field[k]) + i;
    if (*cell != 0) {
      w->ref_drop[w->ref_len++] = *cell; /* room reserved: see refs_reserve */
      *cell = 0;
    }
  }
}

static void zero_fields(ecs_component *c, uint32_t i) {
  for (uint32_t k = 0; k < c->nfields; k++)
    memset(col(c, k) + (size_t)i * c->elem[k], 0, c->elem[k]);
}

/*
** Remove instance i: drop its refs, move the last instance into the hole,
** fix the map. Never allocates.
**
** Swap-remove keeps instances dense in [0, size), so every column stays
** a plain array a system can loop over without holes or a liveness mask,
** and removal is O(fields) whatever the size. The price: the last
** instance changes number, so instance numbers and row caches are valid
** only until the next structural change, which version++ announces
** (queries rebuild their rows from it). The refs are dropped first,
** while cell i still holds them; the moved instance's refs move with it.
*/
static void remove_at(ecs_world *w, ecs_component *c, uint32_t i) {
  ecs_entity *own = owners(c);
  uint32_t last = c->size - 1;
  ecs_entity gone = own[i];
  drop_refs(w, c, i);
  ecsi_sparse_set(&c->map, ecs_entity_index(own[i]), ECS_NO_INSTANCE);
  if (i != last) {
    for (uint32_t k = 0; k < c->nfields; k++) {
      uint8_t *base = col(c, k);
      memcpy(base + (size_t)i * c->elem[k], base + (size_t)last * c->elem[k],
             c->elem[k]);
    }
    own[i] = own[last];
    ecsi_sparse_set(&c->map, ecs_entity_index(own[i]), i);
  }
  c->size--;
  w->ref_slots -= c->nlua;
  c->version++;
  if (c->nwatch != 0) {
    if (i != last) tell_moved(w, c, own[i], i);
    tell_changed(w, c, gone, false);
  }
}

/*
** Reserve everything first (map page, column space, drop-list room), then
** mutate: on ECS_ERR_NOMEM nothing observable changed (a page or a larger
** block may have been allocated, which the invariants allow).
**
** The map holds one record per index, so an index whose record belongs
** to a dead older entity is reused in place rather than removed and
** appended: no other instance moves, and no page or column space is
** needed (only the drop-list room for the old refs).
*/
ecs_err ecs_component_emplace(ecs_world *w, ecs_component *c, ecs_entity e,
                              ecs_instance *out, bool *existed) {
  uint32_t index = ecs_entity_index(e), i;
  ecs_err err;
  if (!ecs_alive(w, e)) return ECS_ERR_DEAD;
  i = map_get(c, index);
  if (i != ECS_NO_INSTANCE && owners(c)[i] == e) {
    if (out != NULL) *out = i;
    if (existed != NULL) *existed = true;
    return ECS_ERR_OK;
  }
  if ((err = refs_reserve(w, c->nlua)) != ECS_ERR_OK) return err;
  if (i != ECS_NO_INSTANCE) {
    /* a dead record of an older entity at this index: reuse it in place */
    drop_refs(w, c, i);
    zero_fields(c, i);
    owners(c)[i] = e;
  } else {
    if ((err = ecsi_sparse_reserve(w, &c->map, index)) != ECS_ERR_OK)
      return err;
    if ((err = data_reserve(w, c, c->size + 1)) != ECS_ERR_OK) return err;
    i = c->size++;
    owners(c)[i] = e;
    zero_fields(c, i);
    ecsi_sparse_set(&c->map, index, i);
    w->ref_slots += c->nlua;
  }
  c->version++;
  if (c->nwatch != 0) tell_changed(w, c, e, true);
  if (out != NULL) *out = i;
  if (existed != NULL) *existed = false;
  return ECS_ERR_OK;
}

/*
** emplace, then ADD for a new instance (its values are the zeros emplace
** wrote, so they are complete). The listeners may change anything, e's
** instance included: it is looked up again afterwards, never assumed.
*/
ecs_err ecs_component_add(ecs_world *w, ecs_component *c, ecs_entity e,
                          ecs_instance *out, bool *existed) {
  ecs_instance i;
  bool had;
  ecs_err err = ecs_component_emplace(w, c, e, &i, &had);
  if (err != ECS_ERR_OK) return err;
  if (existed != NULL) *existed = had;
  if (!had && w->head.listeners != 0) {
    err = ecs_manager_notify_listeners(w, c, e, ECS_EVENT_ADD);
    i = ecs_component_lookup(w, c, e);
  }
  if (out != NULL) *out = i;
  return err;
}

/*
** Three checks, cheapest first: the map entry (an instance at e's index),
** the stored owner (the same full handle: a stale or forged generation
** fails here, and so does a purged record), then ecs_alive (the handle is
** e's, but e may have died since and its record not yet been reclaimed).
*/
ecs_instance ecs_component_lookup(const ecs_world *w, const ecs_component *c,
                                  ecs_entity e) {
  uint32_t i = map_get(c, ecs_entity_index(e));
  if (i == ECS_NO_INSTANCE || owners(c)[i] != e || !ecs_alive(w, e))
    return ECS_NO_INSTANCE;
  return i;
}

void ecs_component_lookup_n(const ecs_world *w, const ecs_component *c,
                            const ecs_entity *in, ecs_instance *out,
                            size_t n) {
  for (size_t k = 0; k < n; k++) out[k] = ecs_component_lookup(w, c, in[k]);
}

/*
** The REMOVEs a manager is reporting: one frame per remove whose
** listeners are running, on that call's C stack, innermost first. A
** listener that removes the same entity again (directly, or through
** other entities' listeners) finds its frame and removes it without a
** second REMOVE: it was reported once and is going anyway, and reporting
** it again would let two listeners that remove each other's entities
** recurse without end.
*/
typedef struct removal {
  ecs_entity e;
  const struct removal *outer;
} removal;

static bool being_removed(const ecs_component *c, ecs_entity e) {
  for (const removal *r = c->removing; r != NULL; r = r->outer)
    if (r->e == e) return true;
  return false;
}

/*
** REMOVE first, while the instance is still readable; then look e up
** again, because a listener may have moved the instance (adds, removes),
** removed it or destroyed e (then its record waits for gc like any dead
** one). Only then is the instance dropped.
*/
ecs_err ecs_component_remove(ecs_world *w, ecs_component *c, ecs_entity e,
                             bool *removed) {
  uint32_t i = ecs_component_lookup(w, c, e);
  ecs_err err = ECS_ERR_OK;
  if (removed != NULL) *removed = i != ECS_NO_INSTANCE;
  if (i == ECS_NO_INSTANCE) return ECS_ERR_OK;
  if (w->head.listeners != 0 && !being_removed(c, e)) {
    removal frame;
    frame.e = e;
    frame.outer = c->removing;
    c->removing = &frame;
    err = ecs_manager_notify_listeners(w, c, e, ECS_EVENT_REMOVE);
    c->removing = frame.outer;
    i = ecs_component_lookup(w, c, e);
    if (i == ECS_NO_INSTANCE) return err;
  }
  remove_at(w, c, i);
  return err;
}

uint32_t ecs_component_size(const ecs_component *c) { return c->size; }

size_t ecs_component_count(const ecs_world *w, const ecs_component *c) {
  const ecs_entity *own = owners(c);
  size_t n = 0;
  for (uint32_t i = 0; i < c->size; i++) n += ecs_alive(w, own[i]);
  return n;
}

const ecs_entity *ecs_component_entities(const ecs_component *c) {
  return owners(c);
}

void *ecs_component_column(ecs_component *c, uint32_t field) {
  if (c->data == NULL) return NULL;
  return col(c, field);
}

uint64_t ecs_component_version(const ecs_component *c) { return c->version; }

/* The instances as ecsi_lazy_gc sees them: owners, and swap-remove
** (remove_at, which drops the refs and bumps the version). */
static ecs_entity gc_owner(const void *self, uint32_t i) {
  return owners((const ecs_component *)self)[i];
}

static void gc_drop(ecs_world *w, void *self, uint32_t i) {
  remove_at(w, (ecs_component *)self, i);
}

static const ecsi_records gc_records = {gc_owner, gc_drop};

/* The managers' one policy (sparse.h), which drops lua refs on the way. */
size_t ecs_component_gc(ecs_world *w, ecs_component *c, size_t budget) {
  return ecsi_lazy_gc(w, c, &gc_records, &c->size, &c->gc_cursor, budget);
}

/* ------------------------------------------------------------------------
** Manager class
** --------------------------------------------------------------------- */

static size_t component_gc(ecs_world *w, void *self, size_t budget) {
  return ecs_component_gc(w, (ecs_component *)self, budget);
}

/*
** The index's generation wrapped: mark its record (if any) purged in
** place. Nothing moves, so iterations and pinned query rows stay valid;
** the record is dead for every read, reused in place by the next add at
** this index or reclaimed by gc (which drops its lua refs then).
*/
static void component_purge(ecs_world *w, void *self, uint32_t index) {
  ecs_component *c = (ecs_component *)self;
  uint32_t i = map_get(c, index);
  (void)w;
  if (i != ECS_NO_INSTANCE) owners(c)[i] = ecs_mark_purged(owners(c)[i]);
}

/*
** The world is going: its drop list goes too, so refs are not reported.
** ref_slots is lowered all the same, so the world's count stays exact
** while the managers registered before this one are freed.
*/
static void component_free(ecs_world *w, void *self) {
  ecs_component *c = (ecs_component *)self;
  ecsi_sparse_free(w, &c->map);
  ecsi_free(w, c->data, c->stride * c->cap);
  ecsi_free(w, c->watch, c->watch_cap * sizeof *c->watch);
  w->ref_slots -= (size_t)c->size * c->nlua;
  ecsi_free(w, c, c->meta_size);
}

/*
** Every map entry names an instance whose owner has that index. With the
** owner loop (each instance is found through its owner's index) this
** makes the map a one-to-one image of the instances: no stale entries.
*/
static const char *check_map_entry(const void *ud, uint32_t index,
                                   uint32_t i) {
  const ecs_component *c = (const ecs_component *)ud;
  if (i >= c->size) return "component: map points past the instances";
  if (ecs_entity_index(owners(c)[i]) != index)
    return "component: map holds stale entries";
  return NULL;
}

static const char *component_check(const ecs_world *w, const void *self) {
  const ecs_component *c = (const ecs_component *)self;
  const ecs_entity *own = owners(c);
  if (c->size > c->cap) return "component: size exceeds capacity";
  if (c->cap % MIN_CAP != 0) return "component: capacity not a multiple of 8";
  if ((c->data == NULL) != (c->cap == 0)) return "component: block and capacity disagree";
  if (w->ref_cap < w->ref_len + w->ref_slots)
    return "component: no room reserved for dropped lua refs";
  for (uint32_t i = 0; i < c->size; i++) {
    uint32_t index = ecs_entity_index(own[i]);
    if (index == 0 || (own[i] & ~(ECS_ID_MASK | ECS_PURGED)) != 0)
      return "component: owner is not an entity";
    if (map_get(c, index) != i) return "component: map disagrees with owner column";
    if (!ecs_record_valid(w, own[i]))
      return "component: record outlived its generation (wrap)";
  }
  return ecsi_sparse_each(&c->map, check_map_entry, c);
}


/* ------------------------------------------------------------------------
** The manager interface: has, clear, stats, schema, save and load
** --------------------------------------------------------------------- */

static bool component_has(const ecs_world *w, const void *self, ecs_entity e) {
  return ecs_component_lookup(w, (const ecs_component *)self, e) !=
         ECS_NO_INSTANCE;
}

/*
** Every instance goes, dead owners' records included; their lua refs go
** to the drop list (the room is the instances' own: ref_slots counts their
** cells until the end, so the list never overflows). The block, the map's
** pages and the capacity stay, as remove and gc keep them: a manager that
** is cleared and filled again (a level reloaded) does not allocate again.
*/
static void component_clear(ecs_world *w, void *self) {
  ecs_component *c = (ecs_component *)self;
  const ecs_entity *own = owners(c);
  for (uint32_t i = 0; i < c->size; i++) {
    drop_refs(w, c, i);
    ecsi_sparse_set(&c->map, ecs_entity_index(own[i]), ECS_NO_INSTANCE);
  }
  w->ref_slots -= (size_t)c->size * c->nlua;
  c->size = 0;
  c->gc_cursor = 0;
  c->version++;
  tell_stale(c);
}

/* Its three kinds of block: meta (schema and names), columns, map. */
static void component_stats(const ecs_world *w, const void *self,
                            ecs_manager_stats *out) {
  const ecs_component *c = (const ecs_component *)self;
  out->records = c->size;
  out->live = ecs_component_count(w, c);
  out->bytes = c->meta_size + c->stride * c->cap + ecsi_sparse_bytes(&c->map) +
               c->watch_cap * sizeof *c->watch;
}

static uint32_t component_schema(const ecs_world *w, const void *self,
                                 ecs_field_def *out, uint32_t max) {
  const ecs_component *c = (const ecs_component *)self;
  (void)w;
  for (uint32_t k = 0; k < c->nfields && k < max; k++) out[k] = c->field[k];
  return c->nfields;
}

/*
** The saved layout (u32 = ecs_write_u32, little-endian; values as stored,
** in the machine's order, which a snapshot requires to be little-endian):
**   u32 LAYOUT (2)       so that another layout can be told from this one
**   u32 nfields          then per field: u32 type, u32 name length, name
**   owners               the live instances' entities in row order, as
**                        u32 entries, ending with u32 0:
**                          h (bit 31 clear): one entity, the handle h;
**                          h | RUN, u32 n (n >= 2): n entities h, h + 1,
**                          ..., h + n - 1 (consecutive indices, one
**                          generation: entities created together)
**   per field, in schema order: its column, one value (of the field's
**                        size) per entity listed
** The schema comes first so that load refuses data of another schema
** before it reads any record. The owner list ends with a terminator
** rather than starting with a count, so save makes one pass over the
** rows; load reads the list once to count and checks that count *
** (stride - 4) bytes of columns follow, before it allocates anything. Only live instances are written (dead records
** are garbage). Columns, not records: save and load are a copy per column
** (one memcpy when no record is dead), and entities created together --
** the usual case -- cost 8 bytes a run, not 4 each.
*/
#define LAYOUT 2u
#define RUN 0x80000000u
#define GATHER 4096u /* bytes gathered per write */

/* A writer of u32 entries through a small buffer. */
typedef struct u32out {
  ecs_writer *out;
  uint32_t n;
  ecs_err err;
  unsigned char b[GATHER];
} u32out;

static void put32(u32out *o, uint32_t v) {
  if (o->n + 4 > sizeof o->b) {
    if (o->err == ECS_ERR_OK) o->err = ecs_write(o->out, o->b, o->n);
    o->n = 0;
  }
  o->b[o->n] = (unsigned char)v;
  o->b[o->n + 1] = (unsigned char)(v >> 8);
  o->b[o->n + 2] = (unsigned char)(v >> 16);
  o->b[o->n + 3] = (unsigned char)(v >> 24);
  o->n += 4;
}

/* One entry of the owner list for len (0: none) owners from first. */
static void put_owners(u32out *o, ecs_entity first, uint32_t len) {
  if (len == 1) {
    put32(o, first);
  } else if (len > 1) {
    put32(o, first | RUN);
    put32(o, len);
  }
}

/* How many of own[i..n) continue the run own[i - 1] + 1, + 2, ...:
** blocks of 64 first (which compilers vectorize), then one by one. */
static uint32_t run_length(const ecs_entity *own, uint32_t i, uint32_t n) {
  ecs_entity next = own[i - 1] + 1u;
  uint32_t j = i;
  while (n - j >= 64) {
    const ecs_entity *p = own + j;
    uint32_t diff = 0;
    for (uint32_t k = 0; k < 64; k++) diff |= p[k] ^ (next + k);
    if (diff != 0) break;
    j += 64;
    next += 64;
  }
  while (j < n && own[j] == next) {
    j++;
    next++;
  }
  return j - i;
}

/* Are the len entities first, first + 1, ... all alive? One generation
** and consecutive indices below the slot count: a compare per slot. */
static bool run_alive(const ecs_world *w, ecs_entity first, uint32_t len) {
  const ecs_world_head *h = (const ecs_world_head *)(const void *)w;
  uint32_t index = ecs_entity_index(first), gen = first >> ECS_INDEX_BITS;
  uint32_t bad = 0;
  if (index == 0 || (first & ~ECS_ID_MASK) != 0 ||
      len - 1u > ECS_INDEX_MASK - index || (size_t)index + len > h->slot_count)
    return false;
  for (uint32_t j = 0; j < len; j++) bad |= (uint32_t)h->slot[index + j] ^ gen;
  return bad == 0;
}

static ecs_err component_save(const ecs_world *w, const void *self,
                              ecs_writer *out) {
  const ecs_component *c = (const ecs_component *)self;
  const ecs_entity *own = owners(c);
  u32out o;
  uint32_t count = 0, i = 0, len = 0, slow_until = 0;
  ecs_entity first = ECS_NULL;
  ecs_err err;
  if ((err = ecs_write_u32(out, LAYOUT)) != ECS_ERR_OK ||
      (err = ecs_write_u32(out, c->nfields)) != ECS_ERR_OK)
    return err;
  for (uint32_t k = 0; k < c->nfields; k++) {
    size_t nlen = strlen(c->field[k].name); /* an identifier: short */
    if ((err = ecs_write_u32(out, (uint32_t)c->field[k].type)) != ECS_ERR_OK ||
        (err = ecs_write_u32(out, (uint32_t)nlen)) != ECS_ERR_OK ||
        (err = ecs_write(out, c->field[k].name, nlen)) != ECS_ERR_OK)
      return err;
  }
  o.out = out;
  o.n = 0;
  o.err = ECS_ERR_OK;
  /* One pass: the live owners in row order, each run of consecutive
  ** handles among them as one entry (so the list depends on that order
  ** only: a loaded manager saves the same bytes). Where rows continue the
  ** run, the block of them is taken at once if all are alive; a block
  ** with a dead row goes row by row. */
  while (i < c->size) {
    ecs_entity e = own[i];
    if (i >= slow_until && len > 0 && e == first + len) {
      uint32_t block = 1 + run_length(own, i + 1, c->size);
      if (run_alive(w, e, block)) {
        len += block;
        count += block;
        i += block;
        continue;
      }
      slow_until = i + block;
    }
    i++;
    if (!ecs_alive(w, e)) continue;
    count++;
    if (len > 0 && e == first + len) {
      len++;
      continue;
    }
    put_owners(&o, first, len);
    first = e;
    len = 1;
  }
  put_owners(&o, first, len);
  put32(&o, 0);
  if (o.err == ECS_ERR_OK) o.err = ecs_write(out, o.b, o.n);
  if (o.err != ECS_ERR_OK) return o.err;
  for (uint32_t k = 0; k < c->nfields && count > 0; k++) { /* (count 0: */
    const uint8_t *from = col(c, k);                        /* maybe no block) */
    size_t e = c->elem[k], at = 0;
    if (count == c->size) { /* no dead record: the column as it is */
      if ((err = ecs_write(out, from, (size_t)count * e)) != ECS_ERR_OK)
        return err;
      continue;
    }
    for (i = 0; i < c->size; i++) {
      if (!ecs_alive(w, own[i])) continue;
      memcpy(o.b + at, from + (size_t)i * e, e);
      if ((at += e) + e > sizeof o.b) {
        if ((err = ecs_write(out, o.b, at)) != ECS_ERR_OK) return err;
        at = 0;
      }
    }
    if ((err = ecs_write(out, o.b, at)) != ECS_ERR_OK) return err;
  }
  return ECS_ERR_OK;
}

/* The schema part of the layout must be this manager's, field by field
** (names are compared where they lie in the stream: no copy, no limit). */
static ecs_err load_schema(const ecs_component *c, ecs_reader *in) {
  uint32_t v, type, len;
  if (ecs_read_u32(in, &v) != ECS_ERR_OK || v != LAYOUT ||
      ecs_read_u32(in, &v) != ECS_ERR_OK || v != c->nfields)
    return ECS_ERR_CORRUPT;
  for (uint32_t k = 0; k < c->nfields; k++) {
    const char *name = c->field[k].name;
    if (ecs_read_u32(in, &type) != ECS_ERR_OK ||
        type != (uint32_t)c->field[k].type ||
        ecs_read_u32(in, &len) != ECS_ERR_OK || len != strlen(name) ||
        len > in->size - in->pos || memcmp(in->data + in->pos, name, len) != 0)
      return ECS_ERR_CORRUPT;
    in->pos += len;
  }
  return ECS_ERR_OK;
}

/*
** Read the owner list once, without keeping anything: its entities'
** count (at most ECS_MAX_ENTITIES), and whether it is well formed (a
** terminator within the bytes, runs of at least 2, bit 30 clear); and
** whether the columns that follow it fit in the bytes left.
*/
static ecs_err count_owners(ecs_reader in, size_t values, uint32_t *count) {
  uint32_t v, n, total = 0;
  for (;;) {
    if (ecs_read_u32(&in, &v) != ECS_ERR_OK) return ECS_ERR_CORRUPT;
    if (v == 0) break;
    n = 1;
    if ((v & RUN) != 0 && (ecs_read_u32(&in, &n) != ECS_ERR_OK || n < 2))
      return ECS_ERR_CORRUPT;
    if ((v & ~(RUN | ECS_ID_MASK)) != 0 || n > ECS_MAX_ENTITIES - total)
      return ECS_ERR_CORRUPT;
    total += n;
  }
  if (values > 0 && (size_t)total > (in.size - in.pos) / values)
    return ECS_ERR_CORRUPT; /* more records than bytes left for them */
  *count = total;
  return ECS_ERR_OK;
}

/*
** Are the values just read into column k of tmp (count of them) ones this
** manager could hold? bool fields hold 0 or 1 (the value layer stores
** nothing else, and queries test them bytewise), entity fields 30-bit
** handles (what check_entity lets through: dead ones are fine, as in any
** entity field). Numbers take any bits, NaNs included. Lua refs cannot be
** checked here: the binding that frames the stream vouches for them.
*/
static bool column_ok(const ecs_component *tmp, uint32_t k, uint32_t count) {
  ecs_type t = tmp->field[k].type;
  if (t == ECS_BOOL) {
    const uint8_t *v = col(tmp, k);
    uint8_t any = 0;
    for (uint32_t i = 0; i < count; i++) any |= v[i];
    return any <= 1u;
  }
  if (t == ECS_ENTITY) {
    const ecs_entity *v = (const ecs_entity *)(const void *)col(tmp, k);
    ecs_entity any = 0;
    for (uint32_t i = 0; i < count; i++) any |= v[i];
    return (any & ~ECS_ID_MASK) == 0;
  }
  return true;
}

_Static_assert(ECSI_NONE == UINT32_MAX, "take_owners tests free map entries "
               "as all ones");

/*
** Owners first .. first + len - 1 for instances i .. i + len - 1 of tmp:
** each alive (the entities named must be: ecs.h) and named once. Three
** passes over arrays (the slots, the map, the owner column); a map page
** is reserved once, when the indices enter it.
*/
static ecs_err take_owners(ecs_world *w, ecs_component *tmp, ecs_entity first,
                           uint32_t len, uint32_t i, uint32_t *page) {
  uint32_t index = ecs_entity_index(first);
  ecs_entity *own = owners(tmp);
  ecs_err err;
  if (!run_alive(w, first, len)) return ECS_ERR_CORRUPT;
  for (uint32_t j = 0; j < len;) { /* page by page */
    uint32_t x = index + j, off = x & (ECSI_PAGE_SIZE - 1u), used = 0;
    uint32_t n = ECSI_PAGE_SIZE - off < len - j ? ECSI_PAGE_SIZE - off : len - j;
    uint32_t *pg;
    if ((x >> ECSI_PAGE_BITS) != *page) {
      if ((err = ecsi_sparse_reserve(w, &tmp->map, x)) != ECS_ERR_OK)
        return err;
      *page = x >> ECSI_PAGE_BITS;
    }
    pg = tmp->map.page[x >> ECSI_PAGE_BITS] + off;
    for (uint32_t k = 0; k < n; k++) used |= ~pg[k]; /* ECSI_NONE: all ones */
    if (used != 0) return ECS_ERR_CORRUPT; /* the same entity twice */
    for (uint32_t k = 0; k < n; k++) pg[k] = i + j + k;
    j += n;
  }
  for (uint32_t j = 0; j < len; j++) own[i + j] = first + j;
  tmp->size = i + len;
  return ECS_ERR_OK;
}

/*
** A twin's load that the swap can do in place (snapshot.c's rollbacks: the
** stream stays valid until the swap): when the manager it stands in for
** has the capacity for count instances and map pages for every owner, and
** no lua field (whose refs a host maps in the twin's cells), everything is
** checked here -- owners alive and named once (a bitmap of the indices),
** columns within the rules -- and the swap copies the owners and columns
** into the existing block and map: no block allocated, none freed.
** @return ECS_ERR_OK (t->defer_* set, in past the part), ECS_ERR_CORRUPT,
** ECS_ERR_NOMEM (the bitmap), or NOT_DEFERRABLE (nothing read: the
** caller loads the usual way).
*/
#define NOT_DEFERRABLE ((ecs_err)(ECS_ERR_NOMEM + ECS_ERR__COUNT))

/* Are bits [a, a + n) of seen all clear? Then set them: a byte at a time
** where the range covers whole bytes. */
static bool mark_range(uint8_t *seen, uint32_t a, uint32_t n) {
  uint32_t end = a + n, bytes;
  uint8_t any = 0;
  for (; a < end && (a & 7u) != 0; a++) {
    if (seen[a >> 3] & (1u << (a & 7u))) return false;
    seen[a >> 3] = (uint8_t)(seen[a >> 3] | (1u << (a & 7u)));
  }
  bytes = (end - a) >> 3;
  if (bytes > 0) {
    const uint8_t *p = seen + (a >> 3);
    for (uint32_t k = 0; k < bytes; k++) any |= p[k];
    if (any != 0) return false;
    memset(seen + (a >> 3), 0xff, bytes);
    a += bytes * 8u;
  }
  for (; a < end; a++) {
    if (seen[a >> 3] & (1u << (a & 7u))) return false;
    seen[a >> 3] = (uint8_t)(seen[a >> 3] | (1u << (a & 7u)));
  }
  return true;
}

static bool map_has_page(const ecsi_sparse *m, uint32_t index) {
  uint32_t p = index >> ECSI_PAGE_BITS;
  return p < m->page_count && m->page[p] != NULL;
}

static ecs_err load_deferred(ecs_world *w, ecs_component *t, ecs_reader *in,
                             uint32_t count) {
  const ecs_component *c = t->of;
  const ecs_world_head *h = (const ecs_world_head *)(const void *)w;
  size_t bits = ((size_t)h->slot_count + 7u) / 8u, at = in->pos;
  const unsigned char *owners = in->data + in->pos;
  uint8_t *seen;
  ecs_err err = ECS_ERR_OK;
  uint32_t v, n, page = UINT32_MAX;
  if (bits == 0) bits = 1;
  seen = (uint8_t *)ecsi_realloc(w, NULL, 0, bits);
  if (seen == NULL) return ECS_ERR_NOMEM;
  memset(seen, 0, bits);
  for (;;) { /* the list was read once by count_owners: it is well formed */
    (void)ecs_read_u32(in, &v);
    if (v == 0) break;
    n = 1;
    if (v & RUN) (void)ecs_read_u32(in, &n);
    v &= ~RUN;
    if (!run_alive(w, v, n)) {
      err = ECS_ERR_CORRUPT;
      break;
    }
    if (!mark_range(seen, ecs_entity_index(v), n)) {
      err = ECS_ERR_CORRUPT; /* an entity twice */
      break;
    }
    for (uint32_t x = ecs_entity_index(v), end = x + n; x < end;) {
      if ((x >> ECSI_PAGE_BITS) != page && !map_has_page(&c->map, x))
        err = NOT_DEFERRABLE;
      page = x >> ECSI_PAGE_BITS;
      x = (page + 1u) << ECSI_PAGE_BITS; /* the next page */
    }
  }
  ecsi_free(w, seen, bits);
  if (err != ECS_ERR_OK) {
    in->pos = at;
    return err;
  }
  t->defer_cols = in->data + in->pos;
  for (uint32_t k = 0; k < c->nfields; k++) { /* count_owners: the bytes are there */
    const unsigned char *col_at = in->data + in->pos;
    size_t bytes = (size_t)count * c->elem[k];
    if (c->field[k].type == ECS_BOOL) {
      uint8_t any = 0;
      for (size_t i = 0; i < bytes; i++) any |= col_at[i];
      if (any > 1u) err = ECS_ERR_CORRUPT;
    } else if (c->field[k].type == ECS_ENTITY) {
      uint32_t any = 0;
      for (size_t i = 0; i < bytes; i += 4) {
        uint32_t e;
        memcpy(&e, col_at + i, 4);
        any |= e;
      }
      if ((any & ~ECS_ID_MASK) != 0) err = ECS_ERR_CORRUPT;
    }
    in->pos += bytes;
  }
  if (err != ECS_ERR_OK) {
    in->pos = at;
    return err;
  }
  t->defer_owners = owners;
  t->defer_count = count;
  return ECS_ERR_OK;
}

/* The swap of a deferred twin t into c (see load_deferred): c's old
** instances go (nothing of theirs to report: no lua field), t's come in
** from the stream, into c's block and map. */
static bool same_owners(const ecs_component *c, ecs_reader in,
                        uint32_t count) {
  const ecs_entity *own = owners(c);
  uint32_t v, n, i = 0;
  if (count != c->size) return false;
  for (;;) {
    uint32_t diff = 0;
    (void)ecs_read_u32(&in, &v);
    if (v == 0) return true;
    n = 1;
    if (v & RUN) (void)ecs_read_u32(&in, &n);
    v &= ~RUN;
    if (n > count - i) return false;
    {
      const ecs_entity *p = own + i;
      for (uint32_t j = 0; j < n; j++) diff |= p[j] ^ (v + j);
    }
    if (diff != 0) return false;
    i += n;
  }
}

static void swap_deferred(ecs_component *c, ecs_component *t) {
  ecs_entity *own = owners(c);
  ecs_reader in;
  uint32_t v, n, i = 0, size = c->size;
  in.data = t->defer_owners;
  in.size = (size_t)(t->defer_cols - t->defer_owners);
  in.pos = 0;
  /* a rollback usually finds the very owners in the very rows: then the
  ** owner column and the map are right as they are */
  if (!same_owners(c, in, t->defer_count)) {
    for (uint32_t k = 0; k < size; k++)
      ecsi_sparse_set(&c->map, ecs_entity_index(own[k]), ECS_NO_INSTANCE);
    for (;;) {
      (void)ecs_read_u32(&in, &v);
      if (v == 0) break;
      n = 1;
      if (v & RUN) (void)ecs_read_u32(&in, &n);
      v &= ~RUN;
      for (uint32_t j = 0; j < n; j++) own[i + j] = v + j;
      for (uint32_t j = 0, x = ecs_entity_index(v); j < n;) { /* page by page */
        uint32_t off = x & (ECSI_PAGE_SIZE - 1u);
        uint32_t m = ECSI_PAGE_SIZE - off < n - j ? ECSI_PAGE_SIZE - off : n - j;
        uint32_t *pg = c->map.page[x >> ECSI_PAGE_BITS] + off; /* it exists */
        for (uint32_t k = 0; k < m; k++) pg[k] = i + j + k;
        j += m;
        x += m;
      }
      i += n;
    }
  }
  for (uint32_t k = 0, at = 0; k < c->nfields && t->defer_count > 0; k++) {
    size_t bytes = (size_t)t->defer_count * c->elem[k];
    memcpy(col(c, k), t->defer_cols + at, bytes);
    at += (uint32_t)bytes;
  }
  c->size = t->defer_count;
  t->defer_owners = t->defer_cols = NULL;
  t->defer_count = 0;
}

/*
** All or nothing: the new instances are built aside (a block and a map of
** their own, in tmp, which shares c's schema), every record checked on the
** way, and swapped in only when all of the stream's part was read. Before
** that the drop list gets room for the new instances' cells, so that
** dropping the old ones cannot fail either (ref_len grows by at most the
** old cells, which ref_slots stops counting). On any failure tmp is freed
** and the reader is put back where it was.
*/
static ecs_err component_load(ecs_world *w, void *self, ecs_reader *in) {
  ecs_component *c = (ecs_component *)self;
  ecs_component tmp = *c;
  size_t start = in->pos, values = c->stride - sizeof(ecs_entity);
  uint32_t count = 0, page = UINT32_MAX, i = 0, v, n;
  ecs_err err = load_schema(c, in);
  if (err == ECS_ERR_OK) err = count_owners(*in, values, &count);
  if (err == ECS_ERR_OK && count > ecs_count(w))
    err = ECS_ERR_CORRUPT; /* more than the live entities: some twice */
  if (err == ECS_ERR_OK && c->of != NULL && c->nlua == 0 &&
      c->of->cap >= count && c->size == 0) {
    err = load_deferred(w, c, in, count);
    if (err != NOT_DEFERRABLE) {
      if (err != ECS_ERR_OK) in->pos = start;
      return err;
    }
    err = ECS_ERR_OK;
  }
  if (err != ECS_ERR_OK) goto fail_read;
  if ((err = refs_reserve(w, (size_t)count * c->nlua)) != ECS_ERR_OK)
    goto fail_read;
  tmp.data = NULL;
  tmp.size = 0;
  tmp.cap = (count + MIN_CAP - 1) / MIN_CAP * MIN_CAP;
  memset(&tmp.map, 0, sizeof tmp.map);
  if (tmp.cap > 0 &&
      (tmp.data = ecsi_realloc(w, NULL, 0, c->stride * tmp.cap)) == NULL) {
    err = ECS_ERR_NOMEM;
    goto fail;
  }
  for (;;) { /* the list was read once: it is well formed, it ends */
    (void)ecs_read_u32(in, &v);
    if (v == 0) break;
    n = 1;
    if (v & RUN) (void)ecs_read_u32(in, &n);
    if ((err = take_owners(w, &tmp, v & ~RUN, n, i, &page)) != ECS_ERR_OK)
      goto fail;
    i += n;
  }
  for (uint32_t k = 0; k < c->nfields && count > 0; k++) /* (no block: 0) */
    if (ecs_read(in, col(&tmp, k), (size_t)count * c->elem[k]) != ECS_ERR_OK ||
        !column_ok(&tmp, k, count))
      goto corrupt;
  /* the swap: nothing below can fail */
  for (i = 0; i < c->size; i++) drop_refs(w, c, i);
  w->ref_slots = w->ref_slots - (size_t)c->size * c->nlua +
                 (size_t)count * c->nlua;
  ecsi_sparse_free(w, &c->map);
  ecsi_free(w, c->data, c->stride * c->cap);
  c->data = tmp.data;
  c->cap = tmp.cap;
  c->size = count;
  c->map = tmp.map;
  c->gc_cursor = 0;
  c->version++;
  tell_stale(c);
  return ECS_ERR_OK;
corrupt:
  err = ECS_ERR_CORRUPT;
fail:
  ecsi_sparse_free(w, &tmp.map);
  ecsi_free(w, tmp.data, c->stride * tmp.cap);
fail_read:
  in->pos = start;
  return err;
}

/*
** Staged loads (snapshot.c). A twin shares c's schema: its meta pointers
** lead into c's meta block, which outlives it, and it owns only its
** struct (meta_size says so), columns and map; no query watches it.
** swap trades instances, columns and map; the queries watching c go
** stale, as after a load. The old instances' lua refs go to the drop
** list there (as clear would: room is theirs), and the twin is left
** with no instance, for free.
*/
static void *component_twin(ecs_world *w, const void *self) {
  const ecs_component *c = (const ecs_component *)self;
  ecs_component *t = (ecs_component *)ecsi_realloc(w, NULL, 0, sizeof *t);
  if (t == NULL) return NULL;
  *t = *c;
  t->meta_size = sizeof *t;
  t->data = NULL;
  t->size = t->cap = t->gc_cursor = 0;
  memset(&t->map, 0, sizeof t->map);
  t->version = 0;
  t->removing = NULL;
  t->watch = NULL;
  t->nwatch = t->watch_cap = 0;
  t->of = c; /* the twin may defer its load into it */
  t->defer_owners = t->defer_cols = NULL;
  t->defer_count = 0;
  return t;
}

static void component_swap(ecs_world *w, void *self, void *twin) {
  ecs_component *c = (ecs_component *)self, *t = (ecs_component *)twin;
  ecs_component old = *c;
  if (t->defer_owners != NULL) {
    swap_deferred(c, t);
    c->gc_cursor = 0;
    c->version++;
    tell_stale(c);
    return;
  }
  c->data = t->data;
  c->size = t->size;
  c->cap = t->cap;
  c->map = t->map;
  t->data = old.data;
  t->size = old.size;
  t->cap = old.cap;
  t->map = old.map;
  c->gc_cursor = t->gc_cursor = 0;
  c->version++;
  t->version++;
  if (t->nlua > 0)
    for (uint32_t i = 0; i < t->size; i++) drop_refs(w, t, i);
  w->ref_slots -= (size_t)t->size * t->nlua;
  t->size = 0;
  tell_stale(c);
}

static const ecs_manager_class component_class = {
  .kind = ECS_COMPONENT_KIND,
  .gc = component_gc,
  .check = component_check,
  .free = component_free,
  .purge = component_purge,
  .has = component_has,
  .clear = component_clear,
  .stats = component_stats,
  .schema = component_schema,
  .save = component_save,
  .load = component_load,
  .twin = component_twin,
  .swap = component_swap,
};

bool ecs_component_is(const ecs_manager_class *cls) {
  return cls == &component_class;
}

/* ------------------------------------------------------------------------
** Registration
** --------------------------------------------------------------------- */

/* Round up to a multiple of the strictest alignment the meta block needs. */
static size_t align_up(size_t n) {
  const size_t a = sizeof(void *) > 8 ? sizeof(void *) : 8;
  return (n + a - 1) / a * a;
}

/*
** The struct, the field definitions, element sizes, lua-field indices and
** every name share one "meta" block, so a manager is three kinds of
** allocation: meta, the column block, and map pages.
*/
ecs_err ecs_component_new(ecs_world *w, const char *name,
                          const ecs_field_def *fields, uint32_t nfields,
                          ecs_component **out) {
  size_t names = strlen(name != NULL ? name : "") + 1, size, off_field,
         off_elem, off_lua, off_prefix, off_str;
  ecs_component *c;
  char *str;
  ecs_err err = ecs_component_check_schema(name, fields, nfields, NULL);
  if (err != ECS_ERR_OK) return err;
  if (ecs_manager_find_in(w, ECS_NS_COMPONENT, name, NULL) != NULL)
    return ECS_ERR_EXISTS;
  for (uint32_t k = 0; k < nfields; k++) names += strlen(fields[k].name) + 1;
  off_field = align_up(sizeof *c);
  off_elem = off_field + (size_t)nfields * sizeof(ecs_field_def);
  off_lua = align_up(off_elem + nfields);
  off_prefix = off_lua + (size_t)nfields * sizeof(uint32_t);
  off_str = off_prefix + ((size_t)nfields + 1) * sizeof(uint32_t);
  size = off_str + names;
  c = (ecs_component *)ecsi_realloc(w, NULL, 0, size);
  if (c == NULL) return ECS_ERR_NOMEM;
  memset(c, 0, size);
  c->meta_size = size;
  c->field = (ecs_field_def *)(void *)((char *)c + off_field);
  c->elem = (uint8_t *)c + off_elem;
  c->lua_field = (uint32_t *)(void *)((char *)c + off_lua);
  c->prefix = (uint32_t *)(void *)((char *)c + off_prefix);
  str = (char *)c + off_str;
  c->nfields = nfields;
  c->stride = sizeof(ecs_entity);
  for (uint32_t k = 0; k < nfields; k++) {
    size_t len = strlen(fields[k].name) + 1;
    memcpy(str, fields[k].name, len);
    c->field[k].name = str;
    c->field[k].type = fields[k].type;
    c->elem[k] = (uint8_t)ecs_type_size(fields[k].type);
    c->prefix[k] = (uint32_t)c->stride;
    c->stride += c->elem[k];
    if (fields[k].type == ECS_LUA) c->lua_field[c->nlua++] = k;
    str += len;
  }
  c->prefix[nfields] = (uint32_t)c->stride;
  memcpy(str, name, strlen(name) + 1);
  c->name = str;
  err = ecs_manager_register_in(w, ECS_NS_COMPONENT, name, &component_class,
                                c); /* frees c on error */
  if (err != ECS_ERR_OK) return err;
  *out = c;
  return ECS_ERR_OK;
}

ecs_component *ecs_component_find(const ecs_world *w, const char *name) {
  const ecs_manager_class *cls;
  void *self = ecs_manager_find_in(w, ECS_NS_COMPONENT, name, &cls);
  return self != NULL && cls == &component_class ? (ecs_component *)self : NULL;
}

const char *ecs_component_name(const ecs_component *c) { return c->name; }

uint32_t ecs_component_field_count(const ecs_component *c) {
  return c->nfields;
}

const ecs_field_def *ecs_component_field(const ecs_component *c, uint32_t i) {
  return &c->field[i];
}

int ecs_component_field_index(const ecs_component *c, const char *name,
                              size_t len) {
  for (uint32_t k = 0; k < c->nfields; k++)
    if (strlen(c->field[k].name) == len &&
        memcmp(c->field[k].name, name, len) == 0)
      return (int)k;
  return -1;
}
