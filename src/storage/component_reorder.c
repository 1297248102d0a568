/*
** component_reorder.c -- re-alignment of a generic component's rows: the
** instances of a query's entities put first, in the query's order
** (query.c, ecsi_query_align), and an owned component's rows permuted to
** follow its owner's (component_owned.c).
**
** Layer: managers (layers: alloc.h).
*/
#include <string.h>

#include "component_private.h"


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
/* Free the arrays ecsi_ticks_alloc_like made for a reorder given up. */
static void ticks_drop(ecs_world *w, const ecs_component *c, uint32_t **t) {
  for (int k = 0; k < ECSI_TICK_KINDS; k++)
    if (t[k] != NULL)
      ecsi_free(w, t[k], (size_t)c->ticks.cap[k] * sizeof(uint32_t));
}

/* Owned components' rows follow their owner's (component.h, "Owned components"). */
bool ecsi_component_reorder(ecs_world *w, ecs_component *c,
                            const ecs_entity *first, uint32_t n,
                            const struct ecs_query *keep) {
  return c->owner == NULL && ecsi_component_reorder_rows(w, c, first, n, keep);
}

bool ecsi_component_reorder_rows(ecs_world *w, ecs_component *c,
                                 const ecs_entity *first, uint32_t n,
                                 const struct ecs_query *keep) {
  const ecs_entity *own = owners(c);
  uint32_t *dest, next = n, *ticks[ECSI_TICK_KINDS];
  uint8_t *nd;
  ecsi_rowmap map;
  if (n > c->size || c->size == 0) return false;
  dest = (uint32_t *)ecsi_realloc(w, NULL, 0, (size_t)c->size * sizeof *dest);
  if (dest == NULL) return false;
  nd = (uint8_t *)ecsi_realloc(w, NULL, 0, c->stride * c->cap);
  if (nd == NULL) {
    ecsi_free(w, dest, (size_t)c->size * sizeof *dest);
    return false;
  }
  if (!ecsi_ticks_alloc_like(w, c, ticks)) {
    ecsi_free(w, nd, c->stride * c->cap);
    ecsi_free(w, dest, (size_t)c->size * sizeof *dest);
    return false;
  }
  ecsi_tell_layout_all(w, c); /* every row may get another owner */
  memset(dest, 0xff, (size_t)c->size * sizeof *dest);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t r = map_get(c, ecs_entity_index(first[i]));
    if (r == ECS_NO_INSTANCE || own[r] != first[i] || dest[r] != UINT32_MAX) {
      ticks_drop(w, c, ticks);
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
  if (ecsi_rowmap_build(w, &map, (const ecs_entity *)(void *)nd, c->size) !=
      ECS_ERR_OK) {
    ticks_drop(w, c, ticks);
    ecsi_free(w, nd, c->stride * c->cap);
    ecsi_free(w, dest, (size_t)c->size * sizeof *dest);
    return false;
  }
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
  ecsi_ticks_permute(w, c, dest, ticks);
  ecsi_free(w, c->data, c->stride * c->cap);
  c->data = nd;
  ecsi_rowmap_free(w, &c->map);
  c->map = map;
  ecsi_free(w, dest, (size_t)c->size * sizeof *dest);
  c->gc_cursor = 0;
  c->churn = 0;
  c->version++;
  ecsi_component_tell_reordered(w, c, keep);
  return true;
}
