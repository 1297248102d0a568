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
  ecs_namespace ns;
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
  size_t bytes;          /* held now: every block of the world's allocator */
  uint64_t allocated;    /* running total of growths (never decreases) */
  ecsi_manager *manager; /* registered managers, in registration order */
  uint32_t manager_count, manager_cap;
  /* component.c: lua refs dropped by component managers, waiting for the
  ** binding (ecs_drain_refs). Invariant: ref_cap >= ref_len + ref_slots,
  ** where ref_slots counts the lua-field cells of every stored instance, so
  ** dropping never allocates. */
  uint32_t *ref_drop;
  size_t ref_len, ref_cap, ref_slots;
  /* query.c: the world's queries (a doubly linked list), and a counter of
  ** destroyed entities that tells cached match lists they may be stale. */
  struct ecs_query *queries;
  uint64_t destroy_epoch;
  /* system.c: the systems in run order; updates in progress, and systems
  ** removed during them (freed when the outermost returns) */
  struct ecs_system **system;
  uint32_t system_count, system_cap, system_dead, updating;
};

/*
** Allocation helpers. ecsi_realloc returns NULL on failure and leaves the
** old block untouched; callers store the result only after checking it.
** Both keep w->bytes and w->allocated (ecs_world_memory) up to date.
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

/* query.c */
/* Rows per block of native runs and compiled programs (gathered chunks,
** the expression machine's values). */
#define ECSI_BLOCK 256u
void ecsi_queries_free(ecs_world *w);
const char *ecsi_queries_check(const ecs_world *w);

/*
** A pinned snapshot of a query's match list, for expr.c and query.c's
** runs: count entities; the row of "with" manager k for position i is
** row[k * stride + i].
*/
typedef struct ecsi_rows {
  uint32_t count, stride;
  const ecs_entity *entity;
  const uint32_t *row;
  const uint32_t *runend; /* see qsnap in query.c */
  void *snap;
} ecsi_rows;
struct ecs_query;
struct ecs_program;
ecs_err ecsi_query_pin(ecs_world *w, struct ecs_query *q, ecsi_rows *out);
void ecsi_query_unpin(ecs_world *w, struct ecs_query *q, void *snap);
/* Scratch memory owned by the query (reused between runs). */
void *ecsi_query_scratch(ecs_world *w, struct ecs_query *q, size_t size);
/* Programs compiled for a query are freed with it. */
struct ecs_program **ecsi_query_programs(struct ecs_query *q);
void ecsi_program_free(ecs_world *w, struct ecs_program *p);
/* Length of the run at position i over which the rows of every "with"
** term are consecutive (at least 1, at most max). O(1). */
uint32_t ecsi_rows_run(const ecsi_rows *r, uint32_t i, uint32_t max);

/* world.c: run every manager's purge for index (its generation wrapped) */
void ecsi_purge_index(ecs_world *w, uint32_t index);

/* system.c */
void ecsi_systems_free(ecs_world *w);
const char *ecsi_systems_check(const ecs_world *w);
void ecsi_systems_query_freed(ecs_world *w, const struct ecs_query *q);

/* entity.c */
void ecsi_entities_free(ecs_world *w);
const char *ecsi_entities_check(const ecs_world *w);

#endif
