/*
** sparse.c -- the managers' entity index -> record map and the exported
** lazy gc (records.h, sparse.h).
*/
#include <string.h>

#include "sparse.h"

/*
** Reserve first: the page table grows (doubling, through ecsi_grow), then
** the page is allocated; a failure of the second step leaves a larger but
** valid page table, which is harmless.
*/
ecs_err ecs_record_map_reserve(ecs_world *w, ecs_record_map *m,
                               uint32_t index) {
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

void ecs_record_map_free(ecs_world *w, ecs_record_map *m) {
  for (uint32_t p = 0; p < m->page_count; p++)
    ecsi_free(w, m->page[p], ECSI_PAGE_SIZE * sizeof(uint32_t));
  ecsi_free(w, m->page, (size_t)m->page_count * sizeof(uint32_t *));
  m->page = NULL;
  m->page_count = 0;
}

const char *ecs_record_map_each(const ecs_record_map *m,
                                const char *(*fn)(const void *ud,
                                                  uint32_t index, uint32_t v),
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

/* What ecs_record_map_free gives back: the directory and every page. */
size_t ecs_record_map_bytes(const ecs_record_map *m) {
  size_t bytes = (size_t)m->page_count * sizeof(uint32_t *);
  for (uint32_t p = 0; p < m->page_count; p++)
    if (m->page[p] != NULL) bytes += ECSI_PAGE_SIZE * sizeof(uint32_t);
  return bytes;
}

/*
** For plugins: the policy of the built-in managers, not a copy of it. The
** owner and drop calls go through ops here (the compiler cannot see a
** plugin's functions), one indirect call per record looked at.
*/
size_t ecs_record_gc(ecs_world *w, void *self, const ecs_record_ops *ops,
                     const uint32_t *size, uint32_t *cursor, size_t budget) {
  return ecsi_lazy_gc(w, self, ops, size, cursor, budget);
}
