/*
** query.c -- cached multi-component queries: the match list.
**
** Match list. A snapshot (qsnap) is one block: a header, the matching
** entities, one row column per "with" manager (term-major, stride cap),
** then one "continues" byte per position, so a run over a query reads the
** rows of one term contiguously and finds where rows stop being
** consecutive with memchr.
**
** Upkeep, O(1) per change. The list is kept up to date as the world
** changes, never rebuilt for a change: every query registers with the
** managers it names (component.c), which report each structural change
** as it happens: an entity whose set of components changed (add, remove)
** is looked up in the query's terms and appended to the list, removed
** from it (swap-remove) or has its rows updated; an entity whose row moved
** (a manager's swap-remove) has that row updated; an entity that dies
** (entity.c) is removed. A position map (entity index -> position, the
** records.h map) finds an entity in the list in O(1). So a change costs
** each query that names the touched manager a few lookups, and each query
** of the world one map read per destroyed entity.
**
** Full builds. The first use of a query builds its list: walking the
** smallest "with" manager and looking each live owner up in the others,
** O(smallest). A query rebuilds only when it could not keep up: a manager
** was cleared or loaded (bulk changes), or memory ran out while it
** recorded a change (it marks itself stale rather than fail the change).
**
** Pins. Readers (iterators, native runs, compiled programs) pin the
** current snapshot. A pinned snapshot is never written: the first change
** that must touch it copies it (copy on write) and retires the pinned one,
** which stays valid for its pinners and is freed by its last unpin, or
** with the query. A pinned snapshot that is still the current one is
** exact, so readers check entities one by one only after such a copy.
**
** Runs. cont[i] says the rows of every term at i are those at i - 1 plus
** one, kept by each change for the two positions it touches. Entities
** spawned in order line up in every manager, and a swap-remove in the
** list mirrors the managers' own swap-removes, so runs survive churn and
** runs over them use the columns in place.
**
** Files: this one keeps the lists; query_iter.c the pins and iterators
** that read them; query_run.c native runs; query_changes.c the filtered
** lists of queries with change terms; query_private.h the structs they
** share.
**
** Layer: query, above the managers, below expr (layers: alloc.h). expr.c
** keeps its programs in each query's extension slot; this file frees
** them through the hook the expr layer set, and knows nothing else of
** them. The managers call up into this file through ecs_private.h.
*/
#include <string.h>

#include "checksum.h"
#include "component_private.h"
#include "query_private.h"

/* ------------------------------------------------------------------------
** Creation and destruction
** --------------------------------------------------------------------- */

/*
** What the queries hear (barrier.h), while the world has any: a death (its
** entity leaves every list), and per manager watched (c->watch: each
** query and its term) an instance gained or lost, an instance moved, and
** the rows reordered wholesale (every query over them is stale, but the
** one whose order they now follow).
*/
static int on_died(ecs_world *w, void *self, const ecsi_change *ch) {
  (void)self;
  ecsi_queries_entity_died(w, ch->e);
  return 0;
}

static int on_instance(ecs_world *w, void *self, const ecsi_change *ch) {
  ecs_component *c = ch->c;
  (void)self;
  if (c == w->disabled) { /* every query is told, as of a "without" term */
    for (ecs_query *q = w->queries; q != NULL; q = q->next)
      if (!q->with_disabled)
        ecsi_query_entity_changed(w, q, ECS_QUERY_MAX_TERMS, ch->e, ch->n != 0);
    return 0;
  }
  for (uint32_t k = 0; k < c->nwatch; k++)
    ecsi_query_entity_changed(w, c->watch[k].q, c->watch[k].term, ch->e,
                              ch->n != 0);
  return 0;
}

static int on_moved(ecs_world *w, void *self, const ecsi_change *ch) {
  ecs_component *c = ch->c;
  (void)self;
  for (uint32_t k = 0; k < c->nwatch; k++)
    ecsi_query_row_moved(w, c->watch[k].q, c->watch[k].term, ch->e, ch->row);
  return 0;
}

static int on_reordered(ecs_world *w, void *self, const ecsi_change *ch) {
  ecs_component *c = ch->c;
  (void)self;
  if (c == w->disabled) /* who is disabled may have changed wholesale */
    for (ecs_query *q = w->queries; q != NULL; q = q->next)
      if (!q->with_disabled) ecsi_query_invalidate(q);
  for (uint32_t k = 0; k < c->nwatch; k++)
    if (c->watch[k].q != ch->arg) ecsi_query_invalidate(c->watch[k].q);
  return 0;
}

static const struct {
  ecsi_event ev;
  ecsi_subscriber_fn fn;
} heard[] = {
  {ECSI_EV_ENTITY_DIED, on_died},
  {ECSI_EV_INSTANCE_ADDED, on_instance},
  {ECSI_EV_INSTANCE_MOVED, on_moved},
  {ECSI_EV_ROWS_REORDERED, on_reordered},
};

/* Subscribed with the first query, unsubscribed with the last. */
static void listen(ecs_world *w, bool on) {
  for (size_t k = 0; k < sizeof heard / sizeof heard[0]; k++)
    if (on) /* one subscriber of its rank: cannot be full (barrier.h) */
      (void)ecsi_subscribe(&w->barrier, heard[k].ev, ECSI_RANK_QUERY,
                           heard[k].fn, NULL);
    else
      ecsi_unsubscribe(&w->barrier, heard[k].ev, heard[k].fn, NULL);
}

/*
** Validate first (no memory yet), then allocate, register with every
** manager named (undone on failure) and link at the head of the world's
** list. No snapshot is built here: the first use builds it, so creating a
** query is O(terms) whatever the world holds.
*/
ecs_err ecs_query_new(ecs_world *w, ecs_component *const *with, uint32_t nwith,
                      ecs_component *const *without, uint32_t nwithout,
                      ecs_query **out) {
  ecs_query *q;
  uint32_t n = nwith + nwithout;
  if (nwith == 0) return ECS_ERR_NO_TERMS;
  if (nwith > ECS_QUERY_MAX_TERMS || nwithout > ECS_QUERY_MAX_TERMS - nwith)
    return ECS_ERR_TOO_MANY_TERMS;
  /* a NULL manager is a C caller's slip, not a rule of queries: checked
  ** over every term first, so it wins over a duplicate wherever it is */
  for (uint32_t i = 0; i < n; i++)
    if ((i < nwith ? with[i] : without[i - nwith]) == NULL)
      return ECS_ERR_INVALID;
  for (uint32_t i = 0; i < n; i++) {
    const ecs_component *c = i < nwith ? with[i] : without[i - nwith];
    for (uint32_t j = 0; j < i; j++)
      if ((j < nwith ? with[j] : without[j - nwith]) == c)
        return ECS_ERR_DUPLICATE_TERM;
  }
  q = (ecs_query *)ecsi_realloc(w, NULL, 0, sizeof *q);
  if (q == NULL) return ECS_ERR_NOMEM;
  memset(q, 0, sizeof *q);
  q->nwith = nwith;
  q->nwithout = nwithout;
  q->serial = ++w->query_serial;
  for (uint32_t i = 0; i < n; i++) {
    q->term[i] = i < nwith ? with[i] : without[i - nwith];
    if (ecsi_component_watch(w, q->term[i], q, i) != ECS_ERR_OK) {
      while (i-- > 0) ecsi_component_unwatch(q->term[i], q);
      ecsi_free(w, q, sizeof *q);
      return ECS_ERR_NOMEM;
    }
  }
  if (w->queries == NULL) listen(w, true);
  q->next = w->queries;
  if (w->queries != NULL) w->queries->prev = q;
  w->queries = q;
  *out = q;
  return ECS_ERR_OK;
}


/*
** Unlink, then free what hangs off the query: expr.c's programs (through
** its hook, before the query they point at goes), the current snapshot,
** retired ones still pinned (a pinner must not outlive its query), and
** the scratch.
*/
void ecs_query_free(ecs_world *w, ecs_query *q) {
  if (q == NULL) return;
  /* the systems over q go first */
  ecsi_tell(w, ECSI_EV_QUERY_FREED, NULL, ECS_NULL, 0, 0, q);
  if (q->prev != NULL) q->prev->next = q->next;
  else w->queries = q->next;
  if (q->next != NULL) q->next->prev = q->prev;
  if (w->queries == NULL) listen(w, false);
  for (uint32_t k = 0; k < q->nwith + q->nwithout + q->nany; k++)
    ecsi_component_unwatch(q->term[k], q);
  ecsi_query_untrack(w, q);
  if (q->ext_free != NULL) q->ext_free(w, q); /* programs point at q */
  /* filtered snapshots first (retired, pinning cur or a retired one) */
  for (qsnap **p = &q->retired; *p != NULL;) {
    qsnap *s = *p;
    if (s->basis == NULL) {
      p = &s->next_retired;
      continue;
    }
    *p = s->next_retired;
    snap_free(w, s);
  }
  snap_free(w, q->cur);
  while (q->retired != NULL) {
    qsnap *s = q->retired;
    q->retired = s->next_retired;
    snap_free(w, s);
  }
  ecs_record_map_free(w, &q->pos);
  ecsi_free(w, q->scratch, q->scratch_size);
  ecsi_free(w, q->flag, q->flag_cap);
  ecsi_free(w, q, sizeof *q);
}

void ecsi_queries_free(ecs_world *w) {
  while (w->queries != NULL) ecs_query_free(w, w->queries);
}

/*
** The signature that tells a query's cursor from another's (cursors.c):
** the number of "with" and "without" terms, each term's name in order,
** and the change terms. Names, not managers: a world made by ecs.restore
** has other managers of the same names.
*/
uint64_t ecsi_query_signature(const ecs_query *q) {
  uint64_t h = ecsi_mix64((uint64_t)q->nwith << 32 | q->nwithout);
  if (q->nany > 0) h = ecsi_mix64(h ^ 0x616e79u ^ q->nany);
  if (q->opt_mask != 0) h = ecsi_mix64(h ^ 0x6f70740000000000u ^ q->opt_mask);
  for (uint32_t k = 0; k < q->nwith + q->nwithout + q->nany; k++) {
    const char *name = ecs_component_name(q->term[k]);
    uint64_t n = 0xcbf29ce484222325u; /* FNV-1a of the name */
    for (; *name != '\0'; name++) n = (n ^ (unsigned char)*name) * 0x100000001b3u;
    h = ecsi_mix64(h ^ n);
  }
  if (q->with_disabled) h = ecsi_mix64(h ^ 0x64697361626c6564u);
  return ecsi_mix64(h ^ ((uint64_t)q->changed_mask << 32 | q->added_mask));
}

ecs_err ecs_query_require_any(ecs_world *w, ecs_query *q,
                              ecs_component *const *any, uint32_t n) {
  uint32_t first = q->nwith + q->nwithout;
  if (n == 0) return ECS_ERR_OK;
  if (any == NULL || q->nany != 0) return ECS_ERR_INVALID;
  if (n > ECS_QUERY_MAX_TERMS - first) return ECS_ERR_TOO_MANY_TERMS;
  for (uint32_t i = 0; i < n; i++) if (any[i] == NULL) return ECS_ERR_INVALID;
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t j = 0; j < first; j++)
      if (q->term[j] == any[i]) return ECS_ERR_DUPLICATE_TERM;
    for (uint32_t j = 0; j < i; j++)
      if (any[j] == any[i]) return ECS_ERR_DUPLICATE_TERM;
  }
  for (uint32_t i = 0; i < n; i++) {
    q->term[first + i] = any[i];
    if (ecsi_component_watch(w, any[i], q, first + i) != ECS_ERR_OK) {
      while (i-- > 0) ecsi_component_unwatch(any[i], q);
      return ECS_ERR_NOMEM;
    }
  }
  q->nany = n;
  q->built = false;
  return ECS_ERR_OK;
}

uint32_t ecs_query_any_count(const ecs_query *q) { return q->nany; }

ecs_component *ecs_query_any(const ecs_query *q, uint32_t k) {
  return k < q->nany ? q->term[q->nwith + q->nwithout + k] : NULL;
}

ecs_err ecs_query_set_optional(ecs_query *q, uint32_t mask) {
  if (mask == q->opt_mask) return ECS_ERR_OK;
  if ((mask & 1u) != 0 || (q->nwith < 32u && mask >> q->nwith != 0) ||
      (mask & (q->changed_mask | q->added_mask)) != 0 || q->cur != NULL ||
      q->ext != NULL)
    return ECS_ERR_INVALID;
  q->opt_mask = mask;
  return ECS_ERR_OK;
}

uint32_t ecs_query_optional(const ecs_query *q) { return q->opt_mask; }

void ecs_query_include_disabled(ecs_query *q, bool on) {
  if (q->with_disabled != on) q->built = false;
  q->with_disabled = on;
}

bool ecs_query_includes_disabled(const ecs_query *q) { return q->with_disabled; }

void **ecsi_query_ext(ecs_query *q) { return &q->ext; }

void ecsi_query_set_ext_free(ecs_query *q, ecsi_query_ext_free fn) {
  q->ext_free = fn;
}

uint32_t ecs_query_with_count(const ecs_query *q) { return q->nwith; }

uint32_t ecs_query_without_count(const ecs_query *q) { return q->nwithout; }

ecs_component *ecs_query_with(const ecs_query *q, uint32_t k) {
  return k < q->nwith ? q->term[k] : NULL;
}

ecs_component *ecs_query_without(const ecs_query *q, uint32_t k) {
  return k < q->nwithout ? q->term[q->nwith + k] : NULL;
}

int ecs_query_term(const ecs_query *q, const ecs_component *c) {
  for (uint32_t k = 0; k < q->nwith; k++)
    if (q->term[k] == c) return (int)k;
  return -1;
}

/* ------------------------------------------------------------------------
** Matching
** --------------------------------------------------------------------- */
/* Whether e holds at least one of q's "any" terms. */
static bool any_present(const ecs_world *w, const ecs_query *q, ecs_entity e) {
  for (uint32_t k = q->nwith + q->nwithout; k < q->nwith + q->nwithout + q->nany; k++)
    if (ecs_component_lookup(w, q->term[k], e) != ECS_NO_INSTANCE) return true;
  return false;
}

bool ecs_query_matches(const ecs_world *w, const ecs_query *q, ecs_entity e) {
  if (!ecs_alive(w, e)) return false;
  for (uint32_t k = 0; k < q->nwith; k++)
    if (!(q->opt_mask >> k & 1u) &&
        ecs_component_lookup(w, q->term[k], e) == ECS_NO_INSTANCE)
      return false;
  for (uint32_t k = q->nwith; k < q->nwith + q->nwithout; k++)
    if (ecs_component_lookup(w, q->term[k], e) != ECS_NO_INSTANCE) return false;
  if (q->nany > 0 && !any_present(w, q, e)) return false;
  return q->with_disabled || w->disabled == NULL ||
         ecs_component_lookup(w, w->disabled, e) == ECS_NO_INSTANCE;
}

/* As ecs_query_matches, with e's row in each "with" manager in rows[]. */
static bool match_rows(const ecs_world *w, const ecs_query *q, ecs_entity e,
                       uint32_t *rows) {
  if (!ecs_alive(w, e)) return false;
  for (uint32_t k = 0; k < q->nwith; k++)
    if ((rows[k] = ecs_component_lookup(w, q->term[k], e)) == ECS_NO_INSTANCE &&
        !(q->opt_mask >> k & 1u))
      return false;
  for (uint32_t k = q->nwith; k < q->nwith + q->nwithout; k++)
    if (ecs_component_lookup(w, q->term[k], e) != ECS_NO_INSTANCE) return false;
  if (q->nany > 0 && !any_present(w, q, e)) return false;
  return q->with_disabled || w->disabled == NULL ||
         ecs_component_lookup(w, w->disabled, e) == ECS_NO_INSTANCE;
}

/* ------------------------------------------------------------------------
** Snapshots
** --------------------------------------------------------------------- */

/* The fewest entries a snapshot is given room for. */
#define MIN_SNAP_CAP 16u

/*
** Room for a snapshot that must hold need entries and replaces one of cap
** old (0: none). Capacity grows only when the need exceeds it, then by at
** least half (amortised growth); otherwise it is sized to the need. Never
** below MIN_SNAP_CAP, never above UINT32_MAX, so it is always under
** 1.5 x max(need, MIN_SNAP_CAP): a pinned snapshot replaced over and over
** does not compound.
*/
static uint32_t snap_capacity(uint32_t need, uint32_t old) {
  uint64_t cap = need < MIN_SNAP_CAP ? MIN_SNAP_CAP : need;
  if (old != 0 && need > old) {
    uint64_t grown = (uint64_t)old + old / 2u;
    if (grown > cap) cap = grown;
  }
  return cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
}

/* Bytes of a snapshot of cap entries, or 0 when that overflows size_t. */
static size_t snap_bytes(const ecs_query *q, uint32_t cap) {
  size_t per = sizeof(ecs_entity) + (size_t)q->nwith * sizeof(uint32_t) + 1u;
  size_t words = SNAP_HOLE_WORDS(cap) * sizeof(uint64_t);
  if ((size_t)cap > (SIZE_MAX - sizeof(qsnap) - words) / per) return 0;
  return sizeof(qsnap) + words + (size_t)cap * per;
}


/* A new empty snapshot with room for need entries next to one of old. */
qsnap *ecsi_snap_new(ecs_world *w, const ecs_query *q, uint32_t need,
                       uint32_t old) {
  uint32_t cap = snap_capacity(need, old);
  size_t bytes = snap_bytes(q, cap);
  qsnap *s = bytes == 0 ? NULL : (qsnap *)ecsi_realloc(w, NULL, 0, bytes);
  if (s == NULL) return NULL;
  memset(s, 0, sizeof *s);
  s->bytes = bytes;
  s->cap = cap;
  s->sized_for = need;
  s->hole = (uint64_t *)(void *)(s + 1);
  memset(s->hole, 0, SNAP_HOLE_WORDS(cap) * sizeof(uint64_t));
  s->entity = (ecs_entity *)(void *)(s->hole + SNAP_HOLE_WORDS(cap));
  s->row = (uint32_t *)(void *)(s->entity + cap);
  s->cont = (uint8_t *)(void *)(s->row + (size_t)cap * q->nwith);
  return s;
}

/* ns replaces q->cur: the old one is freed, or retired while pinned. */
static void snap_replace(ecs_world *w, ecs_query *q, qsnap *ns) {
  qsnap *s = q->cur;
  if (s != NULL) {
    if (s->pins > 0) {
      s->next_retired = q->retired;
      q->retired = s;
    } else {
      snap_free(w, s);
    }
  }
  q->cur = ns;
}

/*
** Make q->cur a snapshot a change may write, with room for need entries:
** an unpinned one large enough stays; a pinned one is copied (and retired),
** one too small is copied into a larger block, and one four times too large
** for need is copied into a smaller one when that succeeds. The positions
** do not change, so the position map stays right. On failure (no memory)
** q is marked stale: its next use rebuilds, and the change is not lost.
*/
static bool snap_writable(ecs_world *w, ecs_query *q, uint32_t need) {
  qsnap *s = q->cur, *ns;
  uint32_t floor;
  bool fits;
  if (need < s->count) need = s->count; /* the copy takes every entry */
  floor = need < MIN_SNAP_CAP ? MIN_SNAP_CAP : need;
  fits = s->pins == 0 && s->cap >= need;
  if (fits && s->cap / 4u <= floor) return true;
  ns = ecsi_snap_new(w, q, need, s->cap);
  if (ns == NULL) {
    if (fits) return true; /* the shrink only failed: keep it as it is */
    q->built = false;
    return false;
  }
  ns->count = s->count;
  memcpy(ns->entity, s->entity, (size_t)s->count * sizeof *s->entity);
  for (uint32_t k = 0; k < q->nwith; k++)
    memcpy(ns->row + (size_t)k * ns->cap, s->row + (size_t)k * s->cap,
           (size_t)s->count * sizeof *s->row);
  memcpy(ns->cont, s->cont, s->count);
  memcpy(ns->hole, s->hole, SNAP_HOLE_WORDS(s->count) * sizeof(uint64_t));
  snap_replace(w, q, ns);
  return true;
}

/* Recompute cont[i] (nothing when i is past the end): 0 at a hole and
** right after one. */
void ecsi_snap_cont_fix(const ecs_query *q, qsnap *s, uint32_t i) {
  uint32_t k = 0;
  if (i >= s->count) return;
  if (i > 0 && s->entity[i] != ECS_NULL && s->entity[i - 1u] != ECS_NULL)
    for (; k < q->nwith; k++) {
      const uint32_t *row = s->row + (size_t)k * s->cap;
      /* an absent optional instance (ECS_NO_INSTANCE) is in no run */
      if (row[i] != row[i - 1] + 1u || row[i] == ECS_NO_INSTANCE ||
          row[i - 1] == ECS_NO_INSTANCE)
        break;
    }
  else if (i > 0)
    k = q->nwith + 1u;
  s->cont[i] = (uint8_t)(i > 0 && k == q->nwith);
}

/* ------------------------------------------------------------------------
** Upkeep: one change at a time
**
** The order. A list holds its matches in the order of their rows in the
** first "with" manager (the driver, term 0): the order a walk over that
** manager's rows meets them. So the order is a function of the managers'
** rows alone, never of the history of the query: a query made now, one
** made a thousand frames ago, one rebuilt after a load and one in a world
** restored from a snapshot list the same entities in the same order, and
** a game whose rules depend on that order replays bit for bit (API.md,
** "Replay promise"). Rows are world state; snapshots, undo and deltas
** carry them.
**
** Keeping that order costs O(1) per change (O(log count) for a driver
** row that moves), because the list may hold holes and may be out of order
** between passes:
** - entries [0, sorted) are in driver order; a new match whose driver row
**   is past the last of them (what spawning and adding do: new rows go at
**   the end of the driver) is appended there;
** - an entry that stops matching in [0, sorted) leaves a hole (its entity
**   set to ECS_NULL and its bit set in the snapshot's hole bitmap, its
**   driver row kept so that the part stays ordered, its index's position
**   map entry kept), one in the tail is swap-removed within the tail;
** - a new match that takes the row its index's last entity had (a dead
**   record reused in place: the usual case once indices are recycled)
**   finds that entity's hole through the position map, in O(1);
** - a driver row that moves (the swap of a remove or of the gc: the last
**   row into the hole of the removed one) moves its entry into the hole
**   that row's entity left, found by a binary search over the driver
**   rows, when there is one: the usual case of a death followed by its
**   gc, which then leaves neither a hole nor a tail;
** - any other match that cannot be appended in order shifts the entries
**   between its place and a hole at most NEAR away into that hole; with
**   none near it goes to the unsorted tail [sorted, count).
** A count needs no order (it subtracts the holes). A pass does
** (ecsi_query_order): the tail's entries are put in holes at most FAR
** from their places while there are some, and what is left is sorted by
** driver row and merged in (normalize: O(count), once, whatever the
** number of changes), which drops the holes. Holes are otherwise dropped
** once they are more than count / 8 + 64 (so O(1) per change, amortised).
** Readers skip holes: the bitmap gives the stretches between them a word
** at a time (ecsi_rows_live), and every run stops at one (the run flags,
** cont, are 0 at a hole and right after it; right for [0, sorted) at all
** times and 0 in the tail).
** --------------------------------------------------------------------- */

/*
** Count one change to record; @return false when q gives up following
** changes until its next use. A query that is not used while the world
** changes a lot (a bulk re-add, a level torn down, a query dropped but
** not yet collected) would pay for every change; past count / 32 + 64
** changes since its last use it marks itself stale instead, and the
** rebuild at its next use costs O(matches), less than the changes it
** replaces. So a change costs O(1) either way, amortised.
*/
static bool record_change(ecs_query *q) {
  if (++q->pending <= q->cur->count / 32u + 64u) return true;
  q->built = false;
  return false;
}

/* e's position in the list, or ECS_RECORD_NONE (an older entity at the
** same index is not e: its entry, if any, is its own). */
static uint32_t position_of(const ecs_query *q, ecs_entity e) {
  uint32_t p = ecs_record_map_get(&q->pos, ecs_entity_index(e));
  return p < q->cur->count && q->cur->entity[p] == e ? p : ECS_RECORD_NONE;
}

/* Entry i's driver row (term 0's). */
static inline uint32_t driver_row(const qsnap *s, uint32_t i) {
  return s->row[i];
}

/* Put entry from's entity and rows at to (the position map follows). */
static void entry_move(ecs_query *q, qsnap *s, uint32_t to, uint32_t from) {
  snap_put(s, to, s->entity[from]);
  for (uint32_t k = 0; k < q->nwith; k++)
    s->row[(size_t)k * s->cap + to] = s->row[(size_t)k * s->cap + from];
  if (s->entity[to] != ECS_NULL)
    ecs_record_map_set(&q->pos, ecs_entity_index(s->entity[to]), to);
}

/* The position in [0, sorted) of the hole whose driver row is row, or
** NONE: the entries there are in driver order, holes included. */
static uint32_t hole_of(const ecs_query *q, uint32_t row) {
  const qsnap *s = q->cur;
  uint32_t lo = 0, hi = q->sorted;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2u;
    if (driver_row(s, mid) < row) lo = mid + 1u;
    else hi = mid;
  }
  return lo < q->sorted && driver_row(s, lo) == row && s->entity[lo] == ECS_NULL
             ? lo
             : ECS_RECORD_NONE;
}

/* How far an insertion looks for a hole to shift the entries into; how
** far a pass's placing of the tail looks (see normalize). */
#define NEAR 256u
#define FAR 4096u

/*
** Room for an entry of driver row row in order in [0, sorted), made from a
** hole at most NEAR entries away: the entries between the hole and the
** place shift by one into it (their positions follow). @return the
** position made free (still counted a hole: the caller fills it), or NONE
** when no hole is near (the entry then goes to the tail). The hole of the
** entity whose row it takes (a dead record reused in place, a row moved by
** the swap of a remove) is the place itself, and nothing shifts.
*/
static uint32_t room_near(ecs_query *q, uint32_t row, uint32_t near) {
  qsnap *s = q->cur;
  uint32_t lo = 0, hi = q->sorted, p, h;
  while (lo < hi) { /* p: the first entry whose driver row is row or past */
    uint32_t mid = lo + (hi - lo) / 2u;
    if (driver_row(s, mid) < row) lo = mid + 1u;
    else hi = mid;
  }
  p = lo;
  if (p < q->sorted && driver_row(s, p) == row)
    return s->entity[p] == ECS_NULL ? p : ECS_RECORD_NONE; /* (taken: cannot be) */
  /* the nearest hole at or after p, or before it */
  for (h = p; h < q->sorted && h - p < near; h++)
    if (s->entity[h] == ECS_NULL) {
      for (uint32_t j = h; j > p; j--) entry_move(q, s, j, j - 1u);
      for (uint32_t j = p + 1u; j <= h && j < q->sorted; j++) ecsi_snap_cont_fix(q, s, j);
      if (h + 1u < q->sorted) ecsi_snap_cont_fix(q, s, h + 1u);
      snap_put(s, p, ECS_NULL);
      return p;
    }
  for (h = p; h > 0 && p - h < near;) {
    h--;
    if (s->entity[h] == ECS_NULL) {
      for (uint32_t j = h; j + 1u < p; j++) entry_move(q, s, j, j + 1u);
      for (uint32_t j = h; j < p && j < q->sorted; j++) ecsi_snap_cont_fix(q, s, j);
      snap_put(s, p - 1u, ECS_NULL);
      return p - 1u;
    }
  }
  return ECS_RECORD_NONE;
}

/* Put e (rows: its rows) in the hole at i of the ordered part. */
static void fill_hole(ecs_query *q, uint32_t i, ecs_entity e,
                      const uint32_t *rows) {
  qsnap *s = q->cur;
  snap_put(s, i, e);
  for (uint32_t k = 0; k < q->nwith; k++) s->row[(size_t)k * s->cap + i] = rows[k];
  ecs_record_map_set(&q->pos, ecs_entity_index(e), i);
  q->holes--;
  ecsi_snap_cont_fix(q, s, i);
  if (i + 1u < q->sorted) ecsi_snap_cont_fix(q, s, i + 1u);
}

/*
** A new match: appended to the ordered part when its driver row is past
** the last entry's (holes keep theirs, so the part stays ordered); put in
** the hole of the entity whose driver row it has, if there is one (a dead
** record reused in place by a new entity at its index: the usual case once
** indices are recycled); else to the unsorted tail.
*/
static void list_insert(ecs_world *w, ecs_query *q, ecs_entity e,
                        const uint32_t *rows) {
  qsnap *s;
  uint32_t i;
  bool ordered;
  if (q->cur->count == UINT32_MAX) {
    q->built = false;
    return;
  }
  /* writable as it is first: a hole taken needs no more room */
  if (!snap_writable(w, q, q->cur->count)) return;
  if (ecs_record_map_reserve(w, &q->pos, ecs_entity_index(e)) != ECS_ERR_OK) {
    q->built = false;
    return;
  }
  s = q->cur;
  ordered = q->sorted == s->count &&
            (s->count == 0 || rows[0] > driver_row(s, s->count - 1u));
  /* the hole its index's last entity left, when e took that entity's row
  ** (list_remove keeps the position: O(1), no search) */
  i = ecs_record_map_get(&q->pos, ecs_entity_index(e));
  if (!ordered && i < q->sorted && s->entity[i] == ECS_NULL &&
      driver_row(s, i) == rows[0]) {
    fill_hole(q, i, e, rows);
    return;
  }
  if (!ordered && q->holes > 0 &&
      (i = room_near(q, rows[0], NEAR)) != ECS_RECORD_NONE) {
    fill_hole(q, i, e, rows);
    return;
  }
  if (!snap_writable(w, q, s->count + 1u)) return; /* (stale: rebuilt) */
  s = q->cur;
  i = s->count++;
  snap_put(s, i, e);
  for (uint32_t k = 0; k < q->nwith; k++) s->row[(size_t)k * s->cap + i] = rows[k];
  ecs_record_map_set(&q->pos, ecs_entity_index(e), i);
  s->cont[i] = 0;
  if (ordered) {
    q->sorted = s->count;
    ecsi_snap_cont_fix(q, s, i);
  }
}

/* Position p stops matching: a hole in the ordered part (or nothing, at
** its end), a swap-remove in the tail. */
static void list_remove(ecs_world *w, ecs_query *q, uint32_t p) {
  qsnap *s;
  if (!snap_writable(w, q, q->cur->count)) return;
  s = q->cur;
  if (p >= q->sorted) { /* the tail: its flags are all 0 */
    ecs_record_map_set(&q->pos, ecs_entity_index(s->entity[p]), ECS_RECORD_NONE);
    uint32_t last = --s->count;
    if (p != last) entry_move(q, s, p, last);
    return;
  }
  if (p + 1u == s->count) { /* the last entry, no tail: gone, with the */
    snap_put(s, p, ECS_NULL); /* holes before it */
    while (s->count > 0 && s->entity[s->count - 1u] == ECS_NULL) {
      --s->count; /* past the end: its hole bit cleared */
      s->hole[s->count >> 6] &= ~((uint64_t)1 << (s->count & 63u));
      if (s->count != p) q->holes--;
    }
    q->sorted = s->count;
    return;
  }
  snap_put(s, p, ECS_NULL);
  q->holes++;
  s->cont[p] = 0;
  if (p + 1u < q->sorted) s->cont[p + 1u] = 0;
}

/*
** Term k's row of the entry at p is now row. Another term's row is set in
** place; a driver row that changes moves the entry (out of the ordered
** part, into the tail), since the order is the driver's.
*/
static void list_set_row(ecs_world *w, ecs_query *q, uint32_t p, uint32_t k,
                         uint32_t row) {
  qsnap *s = q->cur;
  if (s->row[(size_t)k * s->cap + p] == row) return;
  if (k == 0) {
    uint32_t rows[ECS_QUERY_MAX_TERMS], h;
    ecs_entity e = s->entity[p];
    for (uint32_t t = 0; t < q->nwith; t++) rows[t] = s->row[(size_t)t * s->cap + p];
    rows[0] = row;
    if ((h = hole_of(q, row)) != ECS_RECORD_NONE && snap_writable(w, q, s->count)) {
      /* into the hole of the entity whose row it takes: in order. h is
      ** filled first, so that the remove of p (after h: its row was the
      ** largest, or p is in the tail) cannot drop it as a trailing hole */
      s = q->cur;
      snap_put(s, h, e);
      for (uint32_t t = 0; t < q->nwith; t++) s->row[(size_t)t * s->cap + h] = rows[t];
      q->holes--;
      list_remove(w, q, p); /* (writable: no copy; clears e's position) */
      s = q->cur;
      ecs_record_map_set(&q->pos, ecs_entity_index(e), h);
      ecsi_snap_cont_fix(q, s, h);
      if (h + 1u < q->sorted) ecsi_snap_cont_fix(q, s, h + 1u);
      return;
    }
    list_remove(w, q, p);
    if (q->built) list_insert(w, q, e, rows);
    return;
  }
  if (!snap_writable(w, q, s->count)) return;
  s = q->cur;
  s->row[(size_t)k * s->cap + p] = row;
  if (p < q->sorted) {
    ecsi_snap_cont_fix(q, s, p);
    if (p + 1u < q->sorted) ecsi_snap_cont_fix(q, s, p + 1u);
  }
}

/*
** e gained (added) or lost its instance in the manager of term. Only what
** that change can do is looked at: gaining a "with" term or losing a
** "without" term can make e match (its rows are looked up; it was not
** listed, since it lacked a term); the opposite can only make it stop
** matching (one read of the position map, no lookup). An entity that
** starts matching was not listed (it lacked a term), so it is appended
** without looking for it first: the checker (ecsi_queries_check) holds
** the list to that.
*/
void ecsi_query_entity_changed(ecs_world *w, ecs_query *q, uint32_t term,
                               ecs_entity e, bool added) {
  uint32_t rows[ECS_QUERY_MAX_TERMS], p;
  if (!q->built) return;
  if (term < q->nwith && (q->opt_mask >> term & 1u)) {
    /* an optional term: a listed e's row, present or not; no match changes */
    if ((p = position_of(q, e)) != ECS_RECORD_NONE && record_change(q))
      list_set_row(w, q, p, term,
                   added ? ecs_component_lookup(w, q->term[term], e)
                         : ECS_NO_INSTANCE);
    return;
  }
  if (term >= q->nwith + q->nwithout && term < ECS_QUERY_MAX_TERMS) {
    /* an "any" term: a gain may make e match (unless another one already
    ** did: it is listed then), a loss unmatch it (unless another stays) */
    p = position_of(q, e);
    if (added ? p != ECS_RECORD_NONE : p == ECS_RECORD_NONE) return;
    if (!record_change(q)) return;
    if (added) {
      if (match_rows(w, q, e, rows)) list_insert(w, q, e, rows);
    } else if (!any_present(w, q, e)) {
      list_remove(w, q, p);
    }
    return;
  }
  if (added == (term < q->nwith)) {
    if (!record_change(q)) return;
    if (match_rows(w, q, e, rows)) list_insert(w, q, e, rows);
  } else if ((p = position_of(q, e)) != ECS_RECORD_NONE &&
             record_change(q)) {
    list_remove(w, q, p);
  }
}

void ecsi_query_row_moved(ecs_world *w, ecs_query *q, uint32_t term,
                          ecs_entity e, uint32_t row) {
  uint32_t p;
  if (!q->built || term >= q->nwith) return;
  if ((p = position_of(q, e)) != ECS_RECORD_NONE && record_change(q))
    list_set_row(w, q, p, term, row);
}

void ecsi_query_invalidate(ecs_query *q) { q->built = false; }

void ecsi_queries_invalidate(ecs_world *w) {
  for (ecs_query *q = w->queries; q != NULL; q = q->next) q->built = false;
}

/* Every query that lists e drops it: one map read per query. */
void ecsi_queries_entity_died(ecs_world *w, ecs_entity e) {
  for (ecs_query *q = w->queries; q != NULL; q = q->next) {
    uint32_t p;
    if (q->built && (p = position_of(q, e)) != ECS_RECORD_NONE &&
        record_change(q))
      list_remove(w, q, p);
  }
}

/* ------------------------------------------------------------------------
** Normalizing: the list put in driver order (see "Upkeep")
** --------------------------------------------------------------------- */

/*
** Sort key[0 .. n) (driver row << 32 | position) ascending: insertion
** sort when short, else a least-significant-digit radix sort of the
** driver rows (11 bits a pass, as many passes as the largest row needs)
** through tmp (n more keys). Driver rows are unique, so any stable sort
** gives the one order.
*/
static void sort_keys(uint64_t *key, uint64_t *tmp, uint32_t n) {
  uint32_t top = 0, shift = 32, count[2048];
  uint64_t *from = key, *to = tmp;
  if (n < 64u) {
    for (uint32_t i = 1; i < n; i++) {
      uint64_t x = key[i];
      uint32_t j = i;
      for (; j > 0 && key[j - 1u] > x; j--) key[j] = key[j - 1u];
      key[j] = x;
    }
    return;
  }
  for (uint32_t i = 0; i < n; i++)
    if ((uint32_t)(key[i] >> 32) > top) top = (uint32_t)(key[i] >> 32);
  do {
    uint64_t *swap;
    uint32_t sum = 0;
    memset(count, 0, sizeof count);
    for (uint32_t i = 0; i < n; i++) count[(from[i] >> shift) & 2047u]++;
    for (uint32_t d = 0; d < 2048u; d++) {
      uint32_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (uint32_t i = 0; i < n; i++) to[count[(from[i] >> shift) & 2047u]++] = from[i];
    swap = from;
    from = to;
    to = swap;
    shift += 11;
  } while (shift < 64u && (top >> (shift - 32u)) != 0);
  if (from != key) memcpy(key, from, (size_t)n * sizeof *key);
}

/*
** Put the list in driver order: the holes of [0, sorted) dropped, the
** tail sorted and merged in (from the back, in place, the tail's entries
** first copied aside). Every entry that moves gets its position map entry
** and its run flag. @return ECS_ERR_NOMEM with nothing changed when the
** tail's copy or the sort's keys find no memory (a pinned list is copied
** first: snap_writable).
*/
/*
** The tail's entries put in order one by one, each into a hole at most
** FAR entries from its place (room_near), last first, while there are
** holes: what a list that keeps the holes of its removals does with the
** matches that came in between, instead of the O(count) merge (which would
** drop those holes, so that the next entries could not use them). Stops
** at the first entry with no hole near it; the merge does the rest.
*/
static void place_tail(ecs_world *w, ecs_query *q) {
  qsnap *s;
  if (!snap_writable(w, q, q->cur->count)) return;
  s = q->cur;
  while (s->count > q->sorted && q->holes > 0) {
    uint32_t rows[ECS_QUERY_MAX_TERMS], last = s->count - 1u, p;
    ecs_entity e = s->entity[last];
    for (uint32_t k = 0; k < q->nwith; k++) rows[k] = s->row[(size_t)k * s->cap + last];
    s->count = last; /* popped: room_near reads [0, sorted) only */
    if ((p = room_near(q, rows[0], FAR)) == ECS_RECORD_NONE) {
      s->count = last + 1u; /* back, untouched */
      return;
    }
    fill_hole(q, p, e, rows);
  }
}

static ecs_err normalize(ecs_world *w, ecs_query *q, bool force) {
  qsnap *s;
  uint32_t m, live = 0, first_moved, stride;
  size_t kbytes, ebytes;
  uint64_t *key;
  uint32_t *tail;
  if (!force && q->sorted < q->cur->count && q->holes > 0) place_tail(w, q);
  s = q->cur;
  if (q->sorted == s->count &&
      (q->holes == 0 || (!force && q->holes <= s->count / 8u + 64u)))
    return ECS_ERR_OK;
  if (!snap_writable(w, q, s->count)) return ECS_ERR_NOMEM;
  s = q->cur;
  m = s->count - q->sorted;
  stride = 1u + q->nwith; /* a tail entry: entity, then its rows */
  kbytes = (size_t)m * 2u * sizeof *key;
  ebytes = (size_t)m * stride * sizeof *tail;
  key = m == 0 ? NULL : (uint64_t *)ecsi_realloc(w, NULL, 0, kbytes);
  tail = m == 0 ? NULL : (uint32_t *)ecsi_realloc(w, NULL, 0, ebytes);
  if (m != 0 && (key == NULL || tail == NULL)) {
    ecsi_free(w, key, key == NULL ? 0 : kbytes);
    ecsi_free(w, tail, tail == NULL ? 0 : ebytes);
    return ECS_ERR_NOMEM;
  }
  /* the tail, sorted, copied aside */
  for (uint32_t j = 0; j < m; j++)
    key[j] = (uint64_t)driver_row(s, q->sorted + j) << 32 | (q->sorted + j);
  sort_keys(key, key + m, m);
  for (uint32_t j = 0; j < m; j++) {
    uint32_t from = (uint32_t)key[j], *t = tail + (size_t)j * stride;
    t[0] = s->entity[from];
    for (uint32_t k = 0; k < q->nwith; k++) t[1u + k] = s->row[(size_t)k * s->cap + from];
  }
  /* the ordered part without its holes, in place */
  first_moved = q->sorted;
  for (uint32_t i = 0; i < q->sorted; i++) {
    if (s->entity[i] == ECS_NULL) {
      if (first_moved > live) first_moved = live;
      continue;
    }
    if (i != live) entry_move(q, s, live, i);
    live++;
  }
  /* merge from the back: out walks down from the new end */
  if (m != 0) {
    uint32_t i = live, j = m, out = live + m;
    while (j > 0) {
      const uint32_t *t = tail + (size_t)(j - 1u) * stride;
      out--;
      if (i > 0 && driver_row(s, i - 1u) > t[1]) {
        entry_move(q, s, out, --i);
        continue;
      }
      snap_put(s, out, t[0]);
      for (uint32_t k = 0; k < q->nwith; k++) s->row[(size_t)k * s->cap + out] = t[1u + k];
      ecs_record_map_set(&q->pos, ecs_entity_index(t[0]), out);
      j--;
    }
    if (out < first_moved) first_moved = out;
  }
  s->count = q->sorted = live + m;
  q->holes = 0;
  memset(s->hole, 0, SNAP_HOLE_WORDS(s->cap) * sizeof(uint64_t));
  for (uint32_t i = first_moved; i < s->count; i++) ecsi_snap_cont_fix(q, s, i);
  ecsi_free(w, key, kbytes);
  ecsi_free(w, tail, ebytes);
  return ECS_ERR_OK;
}

/* ------------------------------------------------------------------------
** Re-alignment
**
** Runs let q:apply and C systems use the columns in place; churn breaks
** them: an entity that loses and regains Velocity comes back at the end
** of Velocity but keeps its Position row, so Position's rows no longer
** follow Velocity's and every block is gathered and scattered (4-5x
** slower). Before a run, once the query's components had count / 8 + 64
** structural changes (their churn: so the O(count) look and re-order are
** amortised over them, a few row copies per change), the query counts the
** run breaks of its list (its matches in order, holes left out); with more
** than count / 8 it re-orders the instances of each of its "with" managers
** to follow its list (ecsi_component_reorder: one pass per manager, after
** which every term's row at position i is i and the whole list is one
** run), else it marks them in order. Either way their churn starts over:
** two queries that want different orders cannot make each other re-align
** frame after frame. The churn is world state (saved with the rows), and
** the test reads only the list, so a restored world re-aligns when its
** original does (API.md, "Replay promise"). Only a query that holds at
** least half of each of its managers re-aligns (the pass is O(manager
** size)). Nothing is re-aligned while the list is pinned or memory is short
** (it is an optimisation; the run gathers as before). Other queries over
** those managers rebuild at their next use.
** --------------------------------------------------------------------- */

/* The breaks of the list as a pass reads it (holes left out): pairs of
** consecutive matches some term's rows of which are not consecutive. */
static uint32_t live_breaks(const ecs_query *q, const qsnap *s) {
  uint32_t breaks = 0, prev = UINT32_MAX;
  for (uint32_t i = 0; i < s->count; i++) {
    if (s->entity[i] == ECS_NULL) continue;
    if (prev != UINT32_MAX)
      for (uint32_t k = 0; k < q->nwith; k++)
        if (s->row[(size_t)k * s->cap + i] != s->row[(size_t)k * s->cap + prev] + 1u) {
          breaks++;
          break;
        }
    prev = i;
  }
  return breaks;
}

void ecsi_query_align(ecs_world *w, ecs_query *q) {
  qsnap *s;
  uint64_t churn = 0;
  uint32_t count;
  if (q->opt_mask != 0) return; /* absent instances have no place to take */
  if (ecsi_query_order(w, q) != ECS_ERR_OK) return;
  s = q->cur;
  count = s->count - q->holes;
  if (s->pins > 0) return;
  for (uint32_t k = 0; k < q->nwith; k++) churn += ecsi_component_churn(q->term[k]);
  if (churn < count / 8u + 64u) return;
  /* the re-order costs O(size) per manager: only where q holds at least
  ** half of each, so that it stays O(count) */
  for (uint32_t k = 0; k < q->nwith; k++)
    if (ecs_component_size(q->term[k]) / 2u > count ||
        ecs_component_pins(q->term[k]) != 0)
      return;
  if (live_breaks(q, s) <= count / 8u + 1u) {
    for (uint32_t k = 0; k < q->nwith; k++) ecsi_component_churn_reset(w, q->term[k]);
    return;
  }
  /* the list without holes first: the rows go to its positions */
  if (normalize(w, q, true) != ECS_ERR_OK) return;
  s = q->cur;
  for (uint32_t k = 0; k < q->nwith; k++) {
    uint32_t *row = s->row + (size_t)k * s->cap;
    if (!ecsi_component_reorder(w, q->term[k], s->entity, s->count, q)) {
      q->built = false; /* rows of the terms before k moved: rebuild */
      return;
    }
    for (uint32_t i = 0; i < s->count; i++) row[i] = i;
  }
  for (uint32_t i = 0; i < s->count; i++) s->cont[i] = i > 0;
}

/* ------------------------------------------------------------------------
** Full builds
** --------------------------------------------------------------------- */

/* Empty the position map without freeing its pages (a rebuild refills
** them): O(pages), no allocation, cannot fail. */
static void pos_clear(ecs_record_map *m) {
  for (uint32_t p = 0; p < m->page_count; p++)
    if (m->page[p] != NULL)
      memset(m->page[p], 0xff, ECS_RECORD_PAGE_SIZE * sizeof(uint32_t));
}

/*
** Bring the match list up to date (its order is ecsi_query_order's). A stale one
** (the first use, or after a change the query could not follow) is built
** whole: the smallest "with" manager is walked, since every match has an
** instance in each "with" manager and the others answer in O(1) each
** through their maps; when the smallest is not the driver the list is
** then sorted into driver order like a tail. The list goes into a fresh
** block when the current one is pinned (which retires it), or does not
** fit, or is four times too large.
**
** On ECS_ERR_NOMEM q stays stale (its pinners keep reading what they
** pinned) and the next use tries again.
*/
ecs_err ecs_query_refresh(ecs_world *w, ecs_query *q) {
  uint32_t walk = 0, n = 0, need, cap;
  const ecs_entity *own;
  qsnap *s = q->cur;
  ecs_err err;
  q->pending = 0;
  if (q->built) return ECS_ERR_OK;
  for (uint32_t k = 1; k < q->nwith; k++)
    if (!(q->opt_mask >> k & 1u) &&
        ecs_component_size(q->term[k]) < ecs_component_size(q->term[walk]))
      walk = k;
  need = ecs_component_size(q->term[walk]);
  if (s == NULL || s->pins > 0 || s->cap < need ||
      s->cap / 4u > (need < MIN_SNAP_CAP ? MIN_SNAP_CAP : need)) {
    qsnap *ns = ecsi_snap_new(w, q, need, s != NULL ? s->cap : 0);
    if (ns == NULL) return ECS_ERR_NOMEM;
    snap_replace(w, q, ns);
    s = ns;
  }
  cap = s->cap;
  pos_clear(&q->pos);
  s->count = 0;
  q->holes = 0;
  memset(s->hole, 0, SNAP_HOLE_WORDS(s->cap) * sizeof(uint64_t));
  own = ecs_component_entities(q->term[walk]);
  for (uint32_t i = 0; i < need; i++) {
    uint32_t rows[ECS_QUERY_MAX_TERMS];
    ecs_entity e = own[i];
    if (!match_rows(w, q, e, rows)) continue;
    if (ecs_record_map_reserve(w, &q->pos, ecs_entity_index(e)) != ECS_ERR_OK)
      return ECS_ERR_NOMEM; /* q stays stale; s is not pinned */
    ecs_record_map_set(&q->pos, ecs_entity_index(e), n);
    for (uint32_t k = 0; k < q->nwith; k++) s->row[(size_t)k * cap + n] = rows[k];
    snap_put(s, n, e);
    s->count = ++n;
    if (walk == 0) ecsi_snap_cont_fix(q, s, n - 1u);
  }
  q->sorted = walk == 0 ? n : 0; /* else all of it is a tail to sort */
  if (walk != 0) {
    memset(s->cont, 0, n);
    if ((err = normalize(w, q, true)) != ECS_ERR_OK) return err; /* stays stale */
  }
  q->built = true;
  return ECS_ERR_OK;
}

/*
** Up to date and in driver order, for a pass (a count needs neither the
** order nor the holes dropped). A built list whose merge finds no memory
** for the copy of a pinned block is stale: built whole.
*/
ecs_err ecsi_query_order(ecs_world *w, ecs_query *q) {
  ecs_err err = ecs_query_refresh(w, q);
  if (err != ECS_ERR_OK) return err;
  if ((err = normalize(w, q, false)) == ECS_ERR_OK || q->built) return err;
  return ecs_query_refresh(w, q);
}

/* With change terms (after a first pass): the matches the next pass
** would visit (query_changes.c). */
ecs_err ecs_query_count(ecs_world *w, ecs_query *q, size_t *out) {
  ecs_err err = ecs_query_refresh(w, q);
  *out = 0;
  if (err != ECS_ERR_OK) return err;
  if (q->since == 0 || (q->changed_mask | q->added_mask) == 0) {
    *out = q->cur->count - q->holes;
    return err;
  }
  return ecsi_query_count_passing(w, q, out);
}

void ecs_query_get_stats(const ecs_query *q, ecs_query_stats *out) {
  memset(out, 0, sizeof *out);
  if (q->cur != NULL) {
    out->count = q->cur->count - q->holes;
    out->capacity = q->cur->cap;
    out->sized_for = q->cur->sized_for;
    out->pins = q->cur->pins;
    out->bytes = q->cur->bytes;
  }
  out->bytes += ecs_record_map_bytes(&q->pos) + q->flag_cap;
  for (const qsnap *r = q->retired; r != NULL; r = r->next_retired) {
    out->retired++;
    out->pins += r->pins;
    out->bytes += r->bytes;
  }
}

/* ------------------------------------------------------------------------
** Consistency
** --------------------------------------------------------------------- */

/*
** A snapshot's capacity was computed from the need it was made for
** (snap_capacity): at least that need, at most 1.5 x max(need,
** MIN_SNAP_CAP); its size matches.
*/
static bool snap_sized(const ecs_query *q, const qsnap *s) {
  uint64_t m = s->sized_for < MIN_SNAP_CAP ? MIN_SNAP_CAP : s->sized_for;
  return s->cap >= MIN_SNAP_CAP && (uint64_t)s->cap <= m + m / 2u &&
         s->count <= s->cap && s->bytes == snap_bytes(q, s->cap);
}

/*
** For a query whose list is up to date: every entry but the holes matches
** with the right rows, the position map names every listed entity's entry
** (so no entity is listed twice), the number of entries equals a
** brute-force count over the first "with" manager, the ordered part is in
** driver order (holes included) with as many holes as counted and none in
** the tail, and the run flags are right there (0 in the tail).
*/
static const char *query_check(const ecs_world *w, const ecs_query *q) {
  const qsnap *s = q->cur;
  const ecs_component *d = q->term[0];
  const ecs_entity *own;
  size_t expect = 0;
  uint32_t holes = 0;
  for (const qsnap *r = q->retired; r != NULL; r = r->next_retired) {
    if (r->pins == 0) return "query: an unpinned snapshot is retired";
    if (!snap_sized(q, r)) return "query: a snapshot is not sized by its need";
  }
  if (s != NULL && !snap_sized(q, s))
    return "query: a snapshot is not sized by its need";
  if (!q->built) return NULL;
  if (s == NULL) return "query: built without a list";
  if (q->sorted > s->count) return "query: the ordered part is past the end";
  for (uint32_t i = 0; i < s->count; i++) {
    bool cont = i > 0 && i < q->sorted && s->entity[i - 1u] != ECS_NULL;
    if (((s->hole[i >> 6] >> (i & 63u)) & 1u) != (s->entity[i] == ECS_NULL))
      return "query: a hole bit is wrong";
    if (i > 0 && i < q->sorted && s->row[i] <= s->row[i - 1u])
      return "query: the list is not in the driver's order";
    if (s->entity[i] == ECS_NULL) {
      if (i >= q->sorted) return "query: a hole in the unsorted tail";
      if (s->cont[i] != 0) return "query: cached runs are wrong";
      holes++;
      continue;
    }
    if (!ecs_query_matches(w, q, s->entity[i]))
      return "query: a cached entity does not match";
    if (ecs_record_map_get(&q->pos, ecs_entity_index(s->entity[i])) != i)
      return "query: position map disagrees with the list";
    for (uint32_t k = 0; k < q->nwith; k++) {
      const uint32_t *row = s->row + (size_t)k * s->cap;
      if (row[i] != ecs_component_lookup(w, q->term[k], s->entity[i]))
        return "query: a cached row is wrong";
      if (i > 0 && (row[i] != row[i - 1] + 1u || row[i] == ECS_NO_INSTANCE ||
                    row[i - 1] == ECS_NO_INSTANCE))
        cont = false;
    }
    if (s->cont[i] != (uint8_t)cont) return "query: cached runs are wrong";
  }
  if (holes != q->holes) return "query: holes miscounted";
  for (uint32_t i = s->count; i < s->cap; i++)
    if ((s->hole[i >> 6] >> (i & 63u)) & 1u) return "query: a hole bit past the end";
  own = ecs_component_entities(d);
  for (uint32_t i = 0; i < ecs_component_size(d); i++)
    expect += ecs_query_matches(w, q, own[i]);
  if (expect != s->count - holes) return "query: cached match count is wrong";
  return NULL; /* (map entries of indices not listed may be stale: a hole's
               ** index keeps its position, list_remove) */
}

const char *ecsi_queries_check(const ecs_world *w) {
  for (const ecs_query *q = w->queries; q != NULL; q = q->next) {
    const char *bad = query_check(w, q);
    if (bad != NULL) return bad;
    if (q->next != NULL && q->next->prev != q) return "query: list broken";
  }
  return NULL;
}
