/*
** sparse.c -- paged entity index -> instance map (see sparse.h).
*/
#include <string.h>

#include "sparse.h"

/*
** Reserve first: the page table grows (doubling, through ecsi_grow), then
** the page is allocated; a failure of the second step leaves a larger but
** valid page table, which is harmless.
*/
ecs_err ecsi_sparse_reserve(ecs_world *w, ecsi_sparse *m, uint32_t index) {
  uint32_t p = index >> ECSI_PAGE_BITS, ocount = m->page_count;
  uint32_t *page;
  if (p >= ocount) {
    void *v = m->page;
    uint32_t cap = ocount;
    ecs_err err = ecsi_grow(w, &v, &cap, p + 1u, sizeof(uint32_t *), 8);
    if (err != ECS_ERR_OK) return err;
    m->page = (uint32_t **)v;
    for (uint32_t i = ocount; i < cap; i++) m->page[i] = NULL;
    m->page_count = cap;
  }
  if (m->page[p] != NULL) return ECS_ERR_OK;
  page = (uint32_t *)ecsi_realloc(w, NULL, 0, ECSI_PAGE_SIZE * sizeof(uint32_t));
  if (page == NULL) return ECS_ERR_NOMEM;
  memset(page, 0xff, ECSI_PAGE_SIZE * sizeof(uint32_t)); /* all ECSI_NONE */
  m->page[p] = page;
  return ECS_ERR_OK;
}

void ecsi_sparse_free(ecs_world *w, ecsi_sparse *m) {
  for (uint32_t p = 0; p < m->page_count; p++)
    ecsi_free(w, m->page[p], ECSI_PAGE_SIZE * sizeof(uint32_t));
  ecsi_free(w, m->page, (size_t)m->page_count * sizeof(uint32_t *));
  m->page = NULL;
  m->page_count = 0;
}

size_t ecsi_sparse_bytes(const ecsi_sparse *m) {
  size_t bytes = (size_t)m->page_count * sizeof(uint32_t *);
  for (uint32_t p = 0; p < m->page_count; p++)
    if (m->page[p] != NULL) bytes += ECSI_PAGE_SIZE * sizeof(uint32_t);
  return bytes;
}

const char *ecsi_sparse_each(const ecsi_sparse *m,
                             const char *(*fn)(const void *ud, uint32_t index,
                                               uint32_t v),
                             const void *ud) {
  for (uint32_t p = 0; p < m->page_count; p++) {
    if (m->page[p] == NULL) continue;
    for (uint32_t k = 0; k < ECSI_PAGE_SIZE; k++) {
      uint32_t v = m->page[p][k];
      if (v != ECSI_NONE) {
        const char *bad = fn(ud, (p << ECSI_PAGE_BITS) | k, v);
        if (bad != NULL) return bad;
      }
    }
  }
  return NULL;
}
