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
** Entity -> instance map (rowmap.h): direct pages for the ranges of 1024
** indices where the manager's entities are dense, a hash table for the
** rest, so its memory follows the instances whichever entities have them.
** The map stores only the instance; the owner column holds the full
** entity, so a lookup compares the stored owner with the handle
** (generation included) and checks ecs_alive.
**
** Growth. The capacity grows by a quarter (doubling below 64), so the
** slack of the columns stays below 25% of their bytes (12% on average):
** with many component types, memory at scale is mostly columns. A growth
** moves every column, O(size); growth by a quarter makes that 5 moves per
** instance over a manager's life (2 with doubling). Batch paths reserve
** their whole need at once.
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

#include "component_private.h"

_Static_assert(ECSI_ROWMAP_NONE == ECS_NO_INSTANCE,
               "the map's empty entry must read as no instance");


/* ------------------------------------------------------------------------
** Columns
** --------------------------------------------------------------------- */

/*
** Grow the block so that it holds at least need instances. On failure
** nothing changed.
*/
ecs_err ecsi_component_data_reserve(ecs_world *w, ecs_component *c,
                                    uint32_t need) {
  uint32_t ocap = c->cap, ncap;
  void *p;
  if (need <= ocap) return ECS_ERR_OK;
  ncap = ocap < 64u ? ocap * 2u : ocap + ocap / 4u;
  if (ncap < need) ncap = need;
  ncap = (ncap + MIN_CAP - 1u) / MIN_CAP * MIN_CAP; /* need <= 2^22: no overflow */
  if ((size_t)ncap > SIZE_MAX / c->stride) return ECS_ERR_NOMEM;
  if (ecsi_ticks_reserve(w, c, ncap) != ECS_ERR_OK) return ECS_ERR_NOMEM;
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

void ecsi_component_tell_stale(ecs_world *w, ecs_component *c) {
  ecsi_component_tell_reordered(w, c, NULL);
}

/* ------------------------------------------------------------------------
** Instances
** --------------------------------------------------------------------- */

/* Append the non-zero lua refs of instance i to the world's drop list. */
void ecsi_component_drop_refs(ecs_world *w, ecs_component *c, uint32_t i) {
  for (uint32_t k = 0; k < c->nlua; k++) {
    uint32_t *cell = (uint32_t *)(void *)col(c, c->lua_field[k]) + i;
    if (*cell != 0) {
      /* an old value the journal captured stays alive for it */
      if (!ecs_component_keep_ref(w, *cell))
        w->ref_drop[w->ref_len++] = *cell; /* room reserved: see refs_reserve */
      *cell = 0;
    }
  }
}

void ecsi_component_zero_row(ecs_component *c, uint32_t i) {
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
/* One more structural change (saturating: the count only gates). */
static void churn_one(ecs_component *c) {
  if (c->churn != UINT32_MAX) c->churn++;
}

uint32_t ecsi_component_churn(const ecs_component *c) { return c->churn; }

void ecsi_component_churn_reset(ecs_world *w, ecs_component *c) {
  if (c->churn == 0) return;
  ecsi_tell_layout(w, c, UINT32_MAX); /* world state: journaled */
  c->churn = 0;
}

void ecsi_component_remove_at(ecs_world *w, ecs_component *c, uint32_t i) {
  ecs_entity *own = owners(c);
  uint32_t last = c->size - 1;
  ecs_entity gone = own[i];
  ecsi_tell_layout(w, c, i);
  ecsi_tell_layout(w, c, last);
  ecsi_component_drop_refs(w, c, i);
  ecsi_rowmap_remove(&c->map, own, ecs_entity_index(own[i]));
  if (i != last) {
    for (uint32_t k = 0; k < c->nfields; k++) {
      uint8_t *base = col(c, k);
      memcpy(base + (size_t)i * c->elem[k], base + (size_t)last * c->elem[k],
             c->elem[k]);
    }
    own[i] = own[last]; /* own[last] stays until the map is told */
    ecsi_ticks_move(c, i, last);
    ecsi_rowmap_move(&c->map, own, ecs_entity_index(own[i]), i);
  }
  c->size--;
  w->ref_slots -= c->nlua;
  c->version++;
  churn_one(c);
  if (c->size == 0) c->churn = 0; /* no rows, no order to keep: as new */
  if (c->nwatch != 0 || c == w->disabled) { /* every query hears that one */
    if (i != last) ecsi_component_tell_moved(w, c, own[i], i);
    /* a dead owner (gc) left every list when it died: nothing to tell */
    if (ecs_alive(w, gone)) ecsi_component_tell_changed(w, c, gone, false);
  }
}

/*
** Reserve everything first (column and map space, drop-list room), then
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
  if (c->owner != NULL) return ECS_ERR_INVALID; /* its owner's rows */
  if (!ecs_alive(w, e)) return ECS_ERR_DEAD;
  i = map_get(c, index);
  if (i != ECS_NO_INSTANCE && owners(c)[i] == e) {
    if (out != NULL) *out = i;
    if (existed != NULL) *existed = true;
    return ECS_ERR_OK;
  }
  if (c->pins != 0) return ECS_ERR_PINNED; /* a new row, maybe a move */
  if ((err = ecsi_component_refs_reserve(w, c->nlua)) != ECS_ERR_OK) return err;
  if (i != ECS_NO_INSTANCE) {
    ecsi_tell_instance(w, c, index);
    ecsi_tell_layout(w, c, i);
    /* a dead record of an older entity at this index: reuse it in place */
    ecsi_component_drop_refs(w, c, i);
    ecsi_component_zero_row(c, i);
    owners(c)[i] = e;
  } else {
    if ((err = ecsi_rowmap_reserve(w, &c->map, owners(c), index)) != ECS_ERR_OK ||
        (err = ecsi_component_data_reserve(w, c, c->size + 1)) != ECS_ERR_OK)
      return err;
    ecsi_tell_instance(w, c, index);
    ecsi_tell_layout(w, c, c->size);
    i = c->size++;
    owners(c)[i] = e;
    ecsi_component_zero_row(c, i);
    ecsi_rowmap_insert(&c->map, owners(c), index, i);
    w->ref_slots += c->nlua;
  }
  ecsi_ticks_stamp_new(w, c, i, 1);
  c->version++;
  churn_one(c);
  ecsi_component_tell_changed(w, c, e, true);
  if (out != NULL) *out = i;
  if (existed != NULL) *existed = false;
  return ECS_ERR_OK;
}

ecs_err ecs_component_reserve(ecs_world *w, ecs_component *c,
                              const uint32_t *index, size_t n) {
  ecs_err err;
  if (c->owner != NULL) return ECS_ERR_INVALID; /* its owner's rows */
  if (n == 0) return ECS_ERR_OK;
  if (c->pins != 0) return ECS_ERR_PINNED;
  if (n > ECS_MAX_ENTITIES) return ECS_ERR_NOMEM; /* more than can exist */
  if ((err = ecsi_component_refs_reserve(w, n * c->nlua)) != ECS_ERR_OK ||
      (err = ecsi_rowmap_reserve_n(w, &c->map, owners(c), index, n)) != ECS_ERR_OK)
    return err;
  return ecsi_component_data_reserve(w, c, c->size + (uint32_t)n > ECS_MAX_ENTITIES
                                ? ECS_MAX_ENTITIES
                                : c->size + (uint32_t)n);
}

/* New instances are appended (zeroed in one pass per column at the end);
** a dead record at an index is reused in place, as emplace does. */
void ecs_component_emplace_n(ecs_world *w, ecs_component *c,
                             const ecs_entity *es, size_t n,
                             ecs_instance *rows) {
  uint32_t first = c->size;
  for (size_t k = 0; k < n; k++) {
    ecs_entity e = es[k];
    uint32_t index = ecs_entity_index(e), i = map_get(c, index);
    if (i != ECS_NO_INSTANCE && owners(c)[i] == e) {
      rows[k] = i;
      continue;
    }
    ecsi_tell_instance(w, c, index);
    ecsi_tell_layout(w, c, i != ECS_NO_INSTANCE ? i : c->size);
    if (i != ECS_NO_INSTANCE) {
      ecsi_component_drop_refs(w, c, i);
      ecsi_component_zero_row(c, i);
      owners(c)[i] = e;
    } else {
      i = c->size++;
      owners(c)[i] = e;
      ecsi_rowmap_insert(&c->map, owners(c), index, i);
      w->ref_slots += c->nlua;
    }
    rows[k] = i;
    churn_one(c);
    ecsi_ticks_stamp_new(w, c, i, 1);
    ecsi_component_tell_changed(w, c, e, true);
  }
  for (uint32_t f = 0; f < c->nfields && c->size > first; f++)
    memset(col(c, f) + (size_t)first * c->elem[f], 0,
           (size_t)(c->size - first) * c->elem[f]);
  c->version++;
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
** REMOVE first, while the instance is still readable; then look e up
** again, because a listener may have moved the instance (adds, removes),
** removed it or destroyed e (then its record waits for gc like any dead
** one). Only then is the instance dropped.
*/
ecs_err ecs_component_remove(ecs_world *w, ecs_component *c, ecs_entity e,
                             bool *removed) {
  uint32_t i = ecs_component_lookup(w, c, e);
  ecs_err err = ECS_ERR_OK;
  if (c->owner != NULL) { /* its owner's rows */
    if (removed != NULL) *removed = false;
    return ECS_ERR_INVALID;
  }
  if (i != ECS_NO_INSTANCE && c->pins != 0) { /* the last row would move */
    if (removed != NULL) *removed = false;
    return ECS_ERR_PINNED;
  }
  if (removed != NULL) *removed = i != ECS_NO_INSTANCE;
  if (i == ECS_NO_INSTANCE) return ECS_ERR_OK;
  if (w->head.listeners != 0) { /* once per instance: ecsi_notify_remove */
    err = ecsi_notify_remove(w, c, e);
    i = ecs_component_lookup(w, c, e);
    if (i == ECS_NO_INSTANCE) return err;
  }
  ecsi_tell_instance(w, c, ecs_entity_index(e));
  ecsi_component_remove_at(w, c, i);
  return err;
}

/*
** The journal's and the delta's write: make the state of c at index the
** given one, whatever it is now. Absent: any record at index goes (a dead
** one too: a record must not outlive an entity undo takes back). Present:
** the owner's record, reused in place or appended (room reserved), with
** the packed values; lua cells take the references given, and the ones
** they held are dropped unless they are the same.
*/
/* Row i's values from packed (ecsi_pack_row's order); a lua cell that held
** another reference drops it, unless the journal keeps it. */
void ecsi_component_put_values(ecs_world *w, ecs_component *c, uint32_t i,
                               const unsigned char *packed) {
  for (uint32_t k = 0; k < c->nfields; k++) {
    uint8_t *cell = col(c, k) + (size_t)i * c->elem[k];
    if (c->field[k].type == ECS_LUA) {
      uint32_t old, ref;
      memcpy(&old, cell, sizeof old);
      memcpy(&ref, packed, sizeof ref);
      if (old != 0 && old != ref && !ecs_component_keep_ref(w, old))
        w->ref_drop[w->ref_len++] = old; /* room: the cell's own */
    }
    memcpy(cell, packed, c->elem[k]);
    packed += c->elem[k];
  }
}

void ecsi_component_put(ecs_world *w, ecs_component *c, uint32_t index,
                        ecs_entity owner, const unsigned char *packed) {
  uint32_t i = map_get(c, index);
  bool fresh = false;
  if (owner == 0) {
    if (i != ECS_NO_INSTANCE) ecsi_component_remove_at(w, c, i);
    return;
  }
  if (i == ECS_NO_INSTANCE) {
    ecsi_tell_layout(w, c, c->size);
    i = c->size++;
    owners(c)[i] = owner;
    ecsi_component_zero_row(c, i);
    ecsi_rowmap_insert(&c->map, owners(c), index, i);
    w->ref_slots += c->nlua;
    fresh = true;
  } else if (owners(c)[i] != owner) {
    ecsi_tell_layout(w, c, i);
    /* a dead (or purged) record at the index, reused in place: every field
    ** is written below, its lua cells dropped there unless they hold the
    ** very references put back (a record undo revives) */
    owners(c)[i] = owner;
    fresh = true;
  }
  ecsi_component_put_values(w, c, i, packed);
  if (fresh) {
    ecsi_ticks_stamp_new(w, c, i, 1);
    c->version++;
    churn_one(c);
    ecsi_component_tell_changed(w, c, owner, true);
  } else {
    ecs_component_write_end(w, c, NULL, i, 1);
  }
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
** (ecsi_component_remove_at, which drops the refs and bumps the version). */
static ecs_entity gc_owner(const void *self, uint32_t i) {
  return owners((const ecs_component *)self)[i];
}

static void gc_drop(ecs_world *w, void *self, uint32_t i) {
  ecsi_component_remove_at(w, (ecs_component *)self, i);
}

static const ecsi_records gc_records = {gc_owner, gc_drop};

/* The managers' one policy (sparse.h), which drops lua refs on the way. */
size_t ecs_component_gc(ecs_world *w, ecs_component *c, size_t budget) {
  if (c->owner != NULL) return 0; /* its owner reclaims its rows */
  if (c->pins != 0) return 0;      /* rows fixed: collected after the loop */
  if (c->size > 0) ecsi_tell_layout(w, c, UINT32_MAX); /* the cursor moves */
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
  if (i == ECS_NO_INSTANCE) return;
  ecsi_tell_layout(w, c, i);
  owners(c)[i] = ecs_mark_purged(owners(c)[i]);
}

/*
** The world is going: its drop list goes too, so refs are not reported.
** ref_slots is lowered all the same, so the world's count stays exact
** while the managers registered before this one are freed.
*/
void ecsi_component_free(ecs_world *w, void *self) {
  ecs_component *c = (ecs_component *)self;
  ecsi_rowmap_free(w, &c->map);
  ecsi_free(w, c->data, c->stride * c->cap);
  ecsi_free(w, c->watch, c->watch_cap * sizeof *c->watch);
  ecsi_ticks_free(w, c);
  ecsi_free(w, c->schema_block, c->schema_size);
  w->cleanup_fields -= c->ncleanup;
  w->ref_slots -= (size_t)c->size * c->nlua;
  ecsi_free(w, c, c->meta_size);
}

const char *ecsi_component_check(const ecs_world *w, const void *self) {
  const ecs_component *c = (const ecs_component *)self;
  const ecs_entity *own = owners(c);
  if (c->size > c->cap) return "component: size exceeds capacity";
  if (c->cap % MIN_CAP != 0) return "component: capacity not a multiple of 8";
  if ((c->data == NULL) != (c->cap == 0)) return "component: block and capacity disagree";
  if (w->ref_cap < w->ref_len + w->ref_slots)
    return "component: no room reserved for dropped lua refs";
  for (int k = 0; k < ECSI_TICK_KINDS; k++) /* change.c: stamps per row */
    if (((c->ticks.watchers[k] > 0 || c->ticks.at[k] != NULL) &&
         c->ticks.cap[k] < c->cap) ||
        (c->ticks.at[k] == NULL) != (c->ticks.cap[k] == 0))
      return "component: change stamps do not cover the rows";
  for (uint32_t i = 0; i < c->size; i++) {
    uint32_t index = ecs_entity_index(own[i]);
    if (index == 0 || (own[i] & ~(ECS_ID_MASK | ECS_PURGED)) != 0)
      return "component: owner is not an entity";
    if (!ecs_record_valid(w, own[i]))
      return "component: record outlived its generation (wrap)";
  }
  return ecsi_rowmap_check(&c->map, own, c->size);
}


static const ecs_manager_class component_class = {
  .kind = ECS_COMPONENT_KIND,
  .gc = component_gc,
  .check = ecsi_component_check,
  .free = ecsi_component_free,
  .purge = component_purge,
  .has = ecsi_component_has,
  .clear = ecsi_component_clear,
  .stats = ecsi_component_stats,
  .schema = ecsi_component_schema,
  .save = ecsi_component_save,
  .load = ecsi_component_load,
  .twin = ecsi_component_twin,
  .swap = ecsi_component_swap,
};

ecs_err ecs_component_pin(ecs_world *w, ecs_component *c) {
  if (c->owner != NULL) return ECS_ERR_INVALID;
  c->pins++;
  w->pins++;
  return ECS_ERR_OK;
}

void ecs_component_unpin(ecs_world *w, ecs_component *c) {
  if (c->pins == 0) return;
  c->pins--;
  w->pins--;
}

uint32_t ecs_component_pins(const ecs_component *c) { return c->pins; }

uint32_t ecs_world_pins(const ecs_world *w) { return w->pins; }

bool ecs_component_readonly(const ecs_component *c, uint32_t field) {
  return field < 64u && (c->readonly >> field & 1u) != 0;
}

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
ecs_err ecsi_component_make(ecs_world *w, const char *name,
                            const ecs_field_def *fields, uint32_t nfields,
                            ecs_component **out) {
  size_t off_schema, off_name, size;
  ecs_component *c;
  ecsi_schema s;
  /* the core's own tags have names no user component can take */
  bool reserved = strcmp(name, ECS_DISABLED_NAME) == 0;
  ecs_err err = ecs_component_check_schema(reserved ? "reserved" : name,
                                           fields, nfields, NULL);
  if (err != ECS_ERR_OK) return err;
  off_schema = align_up(sizeof *c);
  off_name = off_schema + ecsi_schema_size(fields, nfields);
  size = off_name + strlen(name) + 1;
  c = (ecs_component *)ecsi_realloc(w, NULL, 0, size);
  if (c == NULL) return ECS_ERR_NOMEM;
  memset(c, 0, size);
  c->meta_size = size;
  ecsi_schema_fill((char *)c + off_schema, fields, nfields, &s);
  c->field = s.field;
  c->elem = s.elem;
  c->cleanup = s.cleanup;
  c->lua_field = s.lua_field;
  c->prefix = s.prefix;
  c->nfields = s.nfields;
  c->nlua = s.nlua;
  c->stride = s.stride;
  c->name = (char *)c + off_name;
  memcpy(c->name, name, strlen(name) + 1);
  *out = c;
  return ECS_ERR_OK;
}

ecs_err ecs_component_new(ecs_world *w, const char *name,
                          const ecs_field_def *fields, uint32_t nfields,
                          ecs_component **out) {
  ecs_component *c;
  ecs_err err = ecs_component_check_schema(name, fields, nfields, NULL);
  if (err != ECS_ERR_OK) return err;
  if (ecs_manager_find_in(w, ECS_NS_COMPONENT, name, NULL) != NULL)
    return ECS_ERR_EXISTS;
  if ((err = ecsi_component_make(w, name, fields, nfields, &c)) != ECS_ERR_OK)
    return err;
  err = ecs_manager_register_in(w, ECS_NS_COMPONENT, name, &component_class,
                                c); /* frees c on error */
  if (err != ECS_ERR_OK) return err;
  *out = c;
  return ECS_ERR_OK;
}

ecs_err ecsi_component_new_reserved(ecs_world *w, const char *name,
                                    ecs_component **out) {
  ecs_component *c;
  ecs_err err;
  if (ecs_manager_find_in(w, ECS_NS_COMPONENT, name, NULL) != NULL)
    return ECS_ERR_EXISTS;
  if ((err = ecsi_component_make(w, name, NULL, 0, &c)) != ECS_ERR_OK)
    return err;
  err = ecs_manager_register_in(w, ECS_NS_COMPONENT, name, &component_class,
                                c); /* frees c on error */
  if (err != ECS_ERR_OK) return err;
  *out = c;
  return ECS_ERR_OK;
}

/* Nothing refers to c but the registry: no record, query (systems have
** one), journal capture, pin or owner; then the registry's own rules. */
ecs_err ecs_component_unregister(ecs_world *w, ecs_component *c) {
  bool disabled = c == w->disabled;
  if (c->size != 0 || c->nwatch != 0 || c->journal != NULL || c->pins != 0 ||
      c->owner != NULL || !ecsi_manager_unregister_last(w, c))
    return ECS_ERR_INVALID;
  if (disabled) w->disabled = NULL;
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
