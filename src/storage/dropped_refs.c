/*
** dropped_refs.c -- the world's list of Lua references that managers
** dropped (component.c's lua fields on remove, gc, purge and clear; the
** journal's old values), which the binding drains and releases.
**
** The core never calls Lua, yet dropping an instance must release the
** Lua values its "lua" fields hold. So drops only append the references
** to one per-world list, and the binding drains and releases them when
** it next runs. Room for every reference that could be dropped is
** reserved when an instance is created (ref_slots), so remove, gc and
** purge never allocate and never fail.
**
** Layer: managers (layers: alloc.h).
*/
#include <string.h>

#include "component_private.h"

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
ecs_err ecsi_component_refs_reserve(ecs_world *w, size_t nlua) {
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
  size_t n = w->ref_len < max ? w->ref_len : max, m;
  if (n > 0) { /* ref_drop may be NULL: no memcpy from it */
    w->ref_len -= n;
    memcpy(buf, w->ref_drop + w->ref_len, n * sizeof(uint32_t));
  }
  /* then the old values journals let go (journal.c) */
  m = w->jref_len < max - n ? w->jref_len : max - n;
  if (m > 0) {
    w->jref_len -= m;
    memcpy(buf + n, w->jref + w->jref_len, m * sizeof(uint32_t));
  }
  return n + m;
}

size_t ecs_dropped_refs(const ecs_world *w) {
  return w->ref_len + w->jref_len;
}

/* A cell let go of ref: whoever keeps old values (the journal, through
** the barrier) may keep it; else the caller drops it. */
bool ecs_component_keep_ref(ecs_world *w, uint32_t ref) {
  ecsi_change ch = {0};
  if (!ecsi_heard(w, ECSI_EV_REF_DROPPED)) return false;
  ch.row = ref;
  return ecsi_emit(w, ECSI_EV_REF_DROPPED, &ch) == 1;
}
