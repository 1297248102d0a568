/*
** sparse.h -- entity index -> instance map shared by the built-in managers
** (transform, names). Internal to the core.
**
** Pages of 4096 uint32 entries indexed by entity index, allocated on first
** use and filled with ECSI_NONE, so a lookup is two reads and no hashing.
** A map of 4M indices costs 1024 page pointers plus the pages touched.
**
** Layer: managers, the part they share (layers: alloc.h). Includes
** alloc.h only.
*/
#ifndef ECS_SPARSE_H
#define ECS_SPARSE_H

#include "alloc.h"

#define ECSI_NONE UINT32_MAX
#define ECSI_PAGE_BITS 12u
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

/* Store v at index; the slot must have been reserved unless v is NONE. */
void ecsi_sparse_set(ecsi_sparse *m, uint32_t index, uint32_t v);

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
