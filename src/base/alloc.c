/*
** alloc.c -- the core's allocator and its accounting (see alloc.h).
**
** Every block of a world, the world's own included, is allocated and
** freed here, so the heap's counters are exact: bytes is what the world
** holds now (ecs_world_memory), allocated the running total of growths,
** which a binding feeds to its collector as if Lua had allocated it.
*/
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* The default allocator: lua_Alloc's contract over realloc/free. */
static void *default_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    free(p);
    return NULL;
  }
  return realloc(p, nsize);
}

/*
** A world's heap, found by position (alloc.h, ecsi_world_start): the
** object at that offset is the world's ecsi_heap member, so the access is
** through its own type. The world is never const where it was made, so
** the const variant is for reads only.
*/
static ecsi_heap *heap_of(ecs_world *w) {
  return (ecsi_heap *)(void *)((char *)w + offsetof(ecsi_world_start, heap));
}

static const ecsi_heap *cheap_of(const ecs_world *w) {
  return (const ecsi_heap *)(const void *)((const char *)w +
                                           offsetof(ecsi_world_start, heap));
}

ecs_world *ecsi_world_alloc(ecs_alloc_fn alloc, void *ud, size_t size) {
  ecs_world *w;
  ecsi_heap *h;
  if (alloc == NULL) alloc = default_alloc;
  w = (ecs_world *)alloc(ud, NULL, 0, size);
  if (w == NULL) return NULL;
  memset(w, 0, size);
  h = heap_of(w);
  h->fn = alloc;
  h->ud = ud;
  h->bytes = size;
  h->allocated = size;
  return w;
}

/*
** Counters move only when the allocator succeeded (or freed): a failed
** growth leaves the old block, and so the old count, in place.
*/
void *ecsi_realloc(ecs_world *w, void *p, size_t osize, size_t nsize) {
  ecsi_heap *h = heap_of(w);
  void *np = h->fn(h->ud, p, osize, nsize);
  size_t old = p != NULL ? osize : 0;
  if (np != NULL || nsize == 0) {
    h->bytes = h->bytes - old + nsize;
    if (nsize > old) h->allocated += nsize - old;
  }
  return np;
}

/* Counted first: p may be the world itself, whose heap goes with it. */
void ecsi_free(ecs_world *w, void *p, size_t size) {
  if (p != NULL) {
    ecsi_heap *h = heap_of(w);
    ecs_alloc_fn fn = h->fn;
    void *ud = h->ud;
    h->bytes -= size;
    fn(ud, p, size, 0);
  }
}

/*
** Doubling growth. Sizes are checked against overflow of both uint32_t
** capacity and size_t bytes before anything is allocated.
*/
ecs_err ecsi_grow(ecs_world *w, void **p, uint32_t *cap, uint32_t need,
                  size_t elem, uint32_t min_cap) {
  uint32_t ncap = *cap ? *cap : min_cap;
  void *np;
  if (need <= *cap) return ECS_ERR_OK;
  while (ncap < need) {
    if (ncap > UINT32_MAX / 2) {
      ncap = need;
      break;
    }
    ncap *= 2;
  }
  if ((size_t)ncap > SIZE_MAX / elem) return ECS_ERR_NOMEM;
  np = ecsi_realloc(w, *p, (size_t)*cap * elem, (size_t)ncap * elem);
  if (np == NULL) return ECS_ERR_NOMEM;
  *p = np;
  *cap = ncap;
  return ECS_ERR_OK;
}

void *ecsi_scratch_realloc(const ecs_world *w, void *p, size_t osize,
                           size_t nsize) {
  const ecsi_heap *h = cheap_of(w);
  return h->fn(h->ud, p, osize, nsize);
}

/* What ecs_world_allocator hands out: the world's allocator, counted. */
static void *counted_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  return ecsi_realloc((ecs_world *)ud, p, osize, nsize);
}

/* The world is never const where it was made, so the counter may move. */
ecs_alloc_fn ecs_world_allocator(const ecs_world *w, void **ud) {
  if (ud != NULL) *ud = (void *)(uintptr_t)w;
  return counted_alloc;
}

size_t ecs_world_memory(const ecs_world *w, uint64_t *allocated) {
  const ecsi_heap *h = cheap_of(w);
  if (allocated != NULL) *allocated = h->allocated;
  return h->bytes;
}
