/*
** sparse.h -- what every built-in manager (component, transform, names)
** shares: the entity index -> record map and the lazy gc policy. Internal
** to the core.
**
** A two-level page table indexed by entity index: a directory of page
** pointers (doubling as needed, at most 4096 of them for 4M indices) and
** pages of ECSI_PAGE_SIZE uint32 record numbers, allocated the first time
** an index in their range gets a record and filled with ECSI_NONE. A
** lookup is two dependent reads, no hashing and no probing. The map
** stores only the record number: each manager keeps the full handle in
** the record and compares it (generation included), so the map needs no
** update when an entity dies.
**
** Page size: 1024 entries (4 KB). Entity indices are dense (entity.c hands
** out the lowest fresh ones first), so pages fill up: about 4 bytes per
** record for dense use, 4 KB for a lone record, and 8 bytes of directory
** per 1024 indices. Larger pages would cost more for small or scattered
** managers and save nothing on lookups.
**
** Layer: managers, the part they share (layers: alloc.h). Includes
** alloc.h only.
*/
#ifndef ECS_SPARSE_H
#define ECS_SPARSE_H

#include "alloc.h"

#define ECSI_NONE UINT32_MAX
#define ECSI_PAGE_BITS 10u
#define ECSI_PAGE_SIZE (1u << ECSI_PAGE_BITS)

typedef struct ecsi_sparse {
  uint32_t **page;     /* page[i >> ECSI_PAGE_BITS], NULL until first use */
  uint32_t page_count; /* entries in page[] */
} ecsi_sparse;

static inline uint32_t ecsi_sparse_get(const ecsi_sparse *m, uint32_t index) {
  uint32_t p = index >> ECSI_PAGE_BITS;
  if (p >= m->page_count || m->page[p] == NULL) return ECSI_NONE;
  return m->page[p][index & (ECSI_PAGE_SIZE - 1u)];
}

/* Make sure index has a slot (so that ecsi_sparse_set cannot fail). */
ecs_err ecsi_sparse_reserve(ecs_world *w, ecsi_sparse *m, uint32_t index);

/*
** Store v at index. The slot must have been reserved (ecsi_sparse_reserve)
** unless v is ECSI_NONE: clearing an index that has no page is a no-op.
*/
static inline void ecsi_sparse_set(ecsi_sparse *m, uint32_t index,
                                   uint32_t v) {
  uint32_t p = index >> ECSI_PAGE_BITS;
  if (p >= m->page_count || m->page[p] == NULL) return; /* only for NONE */
  m->page[p][index & (ECSI_PAGE_SIZE - 1u)] = v;
}

void ecsi_sparse_free(ecs_world *w, ecsi_sparse *m);

/* Bytes of the map's blocks (directory and pages), for a manager's stats. */
size_t ecsi_sparse_bytes(const ecsi_sparse *m);

/*
** Every non-NONE entry v, as (index, v) pairs, for consistency checks:
** @return NULL, or the text of fn's first complaint.
*/
const char *ecsi_sparse_each(const ecsi_sparse *m,
                             const char *(*fn)(const void *ud, uint32_t index,
                                               uint32_t v),
                             const void *ud);

/* ------------------------------------------------------------------------
** The lazy gc
** --------------------------------------------------------------------- */

/*
** A manager's records as the gc sees them. Records are dense in
** [0, *size); owner(self, i) is the handle record i stores; drop(w, self,
** i) removes record i by swap-remove (the last record moves into i, *size
** goes down by one) and never allocates.
*/
typedef struct ecsi_records {
  ecs_entity (*owner)(const void *self, uint32_t i);
  void (*drop)(ecs_world *w, void *self, uint32_t i);
} ecsi_records;

/*
** The one lazy-gc policy of the managers: reclaim records of dead
** entities. A record is dead when its owner is not alive: managers are not
** told when an entity dies (ecs.h, "Records and generations"), so gc is
** what finds those records.
**
** budget == SIZE_MAX sweeps everything, from the end down, so the record
** each drop brings into i was already seen alive and nothing is looked at
** twice.
**
** Otherwise an incremental scan from *cursor, which the manager keeps
** between calls: at most budget records reclaimed, at most 4 * budget +
** 64 live ones looked at, and never more than one lap. A drop brings the
** last record into the cursor's place, which is looked at next. So a
** per-frame call (world:update) costs O(budget) when nothing is dead, and
** as the cursor laps the records every dead one is reached within
** size / (4 * budget + 64) calls, whatever the death rate.
**
** Why not Bitsquid's random probes that stop after 4 live records in a
** row (the component manager's old policy): while most records are alive
** they stop almost at once, so a low steady death rate leaves dead
** records waiting indefinitely, holding memory and walked by every query
** rebuild; and a random order makes runs hard to reproduce.
**
** Static inline so that each manager's call, with its own constant
** records table, compiles to direct calls of its owner and drop: one
** policy in the source, no indirect call per record at run time.
** @return how many records were reclaimed.
*/
static inline size_t ecsi_lazy_gc(ecs_world *w, void *self,
                                  const ecsi_records *r, const uint32_t *size,
                                  uint32_t *cursor, size_t budget) {
  size_t done = 0, live_seen = 0, limit;
  if (budget == SIZE_MAX) {
    for (uint32_t i = *size; i-- > 0;)
      if (!ecs_alive(w, r->owner(self, i))) {
        r->drop(w, self, i);
        done++;
      }
    *cursor = 0;
    return done;
  }
  limit = budget > (SIZE_MAX - 64u) / 4u ? SIZE_MAX : budget * 4u + 64u;
  while (*size > 0 && done < budget && live_seen < limit &&
         live_seen < *size) {
    if (*cursor >= *size) *cursor = 0; /* a lap ends: start over */
    if (!ecs_alive(w, r->owner(self, *cursor))) {
      r->drop(w, self, *cursor);
      done++;
    } else {
      (*cursor)++;
      live_seen++;
    }
  }
  return done;
}

#endif
