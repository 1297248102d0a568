/*
** barrier.c -- the change barrier's subscriber tables (barrier.h).
**
** Base layer: no world, no allocation.
*/
#include <string.h>

#include "barrier.h"

ecs_err ecsi_subscribe(ecsi_barrier *b, ecsi_event ev, int rank,
                       ecsi_subscriber_fn fn, void *self) {
  ecsi_subscriber *s = b->sub[ev];
  uint32_t n = b->count[ev], at = n;
  for (uint32_t k = 0; k < n; k++)
    if (s[k].fn == fn && s[k].self == self) return ECS_ERR_OK;
  if (n >= ECSI_BARRIER_MAX) return ECS_ERR_FULL;
  /* after every subscriber of the same or a lower rank */
  while (at > 0 && s[at - 1].rank > rank) at--;
  memmove(&s[at + 1], &s[at], (size_t)(n - at) * sizeof *s);
  s[at].fn = fn;
  s[at].self = self;
  s[at].rank = rank;
  b->count[ev] = (uint8_t)(n + 1);
  return ECS_ERR_OK;
}

void ecsi_unsubscribe(ecsi_barrier *b, ecsi_event ev, ecsi_subscriber_fn fn,
                      void *self) {
  ecsi_subscriber *s = b->sub[ev];
  uint32_t n = b->count[ev];
  for (uint32_t k = 0; k < n; k++)
    if (s[k].fn == fn && s[k].self == self) {
      memmove(&s[k], &s[k + 1], (size_t)(n - k - 1) * sizeof *s);
      b->count[ev] = (uint8_t)(n - 1);
      return;
    }
}

int ecsi_barrier_emit(const ecsi_barrier *b, ecs_world *w, ecsi_event ev,
                      const ecsi_change *ch) {
  const ecsi_subscriber *s = b->sub[ev];
  for (uint32_t k = 0; k < b->count[ev]; k++) {
    int r = s[k].fn(w, s[k].self, ch);
    if (r != 0) return r;
  }
  return 0;
}
