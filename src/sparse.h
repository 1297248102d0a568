/*
** sparse.h -- the entity index -> record map of every built-in manager
** (component, transform, names). Internal to the core.
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

/*
** Every non-NONE entry v, as (index, v) pairs, for consistency checks:
** @return NULL, or the text of fn's first complaint.
*/
const char *ecsi_sparse_each(const ecsi_sparse *m,
                             const char *(*fn)(const void *ud, uint32_t index,
                                               uint32_t v),
                             const void *ud);

#endif
