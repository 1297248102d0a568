/*
** ecs_private.h -- what the core's files share and nobody else sees.
*/
#ifndef ECS_PRIVATE_H
#define ECS_PRIVATE_H

#include "ecs.h"

/*
** Free indices wait in a FIFO ring: items [head, head + len) modulo cap.
** cap is 0 or a power of two.
*/
typedef struct ecsi_queue {
  uint32_t *item;
  uint32_t cap, head, len;
} ecsi_queue;

typedef struct ecsi_manager {
  char *name;
  size_t name_size;
  const ecs_manager_class *cls;
  void *self;
} ecsi_manager;

struct ecs_world {
  ecs_world_head head;   /* must stay first: ecs_alive reads it */
  uint32_t slot_cap;     /* allocated slots (>= head.slot_count) */
  uint32_t live;         /* live entities */
  ecsi_queue free;       /* freed indices, oldest first */
  ecs_alloc_fn alloc;
  void *alloc_ud;
  ecsi_manager *manager; /* registered managers, in registration order */
  uint32_t manager_count, manager_cap;
  /* component.c: lua refs dropped by component managers, waiting for the
  ** binding (ecs_drain_refs). Invariant: ref_cap >= ref_len + ref_slots,
  ** where ref_slots counts the lua-field cells of every stored instance, so
  ** dropping never allocates. */
  uint32_t *ref_drop;
  size_t ref_len, ref_cap, ref_slots;
};

/*
** Allocation helpers. ecsi_realloc returns NULL on failure and leaves the
** old block untouched; callers store the result only after checking it.
*/
void *ecsi_realloc(ecs_world *w, void *p, size_t osize, size_t nsize);
void ecsi_free(ecs_world *w, void *p, size_t size);

/*
** Grow an array of elem-sized items so that it holds at least need items.
** *cap doubles (starting at min_cap); on failure nothing changes.
*/
ecs_err ecsi_grow(ecs_world *w, void **p, uint32_t *cap, uint32_t need,
                  size_t elem, uint32_t min_cap);

/* component.c */
void ecsi_refs_free(ecs_world *w);

/* entity.c */
void ecsi_entities_free(ecs_world *w);
const char *ecsi_entities_check(const ecs_world *w);

#endif
