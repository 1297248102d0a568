/*
** alloc.h -- the core's allocator: every block a world holds goes through
** here and is counted. Internal to the core.
**
** Layers of the core, lowest first, each in its folder of src/ (the
** public headers in include/; tools/layers.map maps folders to layers):
**   alloc, value (base/, with checksum, pool, barrier, errors, clock)
**     -> entity (entity/)
**     -> managers (storage/: component, sparse, rowmap, change, cleanup;
**        managers/: transform, names)
**     -> query -> expr (both in query/)
**     -> world, cut into system/ -> persist/ -> world.c, the owner
** A file calls only into its own layer and those below it; a lower layer
** reaches an upper one only through the change barrier (barrier.h: it
** emits, the layers above subscribe) or a hook it was handed (the manager
** classes' gc, check, free and purge; the query's free hook for expr.c's
** programs; ecs_world.kept_floor). tools/layers.lua checks it in CI. Headers include only headers of their layer and below, with
** two documented exceptions that add no cycle: ecs_private.h, the world
** record every layer keeps its state in (like Lua's lstate.h), and
** query.h, which includes expr.h for the binding's sake.
**
** alloc is the lowest layer: it knows no owner and no other core file,
** so every file above allocates without depending on world.c, which frees
** everything and so depends on every layer. Like Lua's lmem.c under
** lstate.c: the owner frees its parts downward.
**
** Includes ecs.h only.
*/
#ifndef ECS_ALLOC_H
#define ECS_ALLOC_H

#include "ecs.h"

/*
** A world's allocator and its accounting: fn and ud as given to
** ecs_world_new; bytes held now (every block, the world's own included);
** the running total of bytes allocated (growths only, never lowered),
** which a binding uses to pace a collector that cannot see these blocks.
*/
typedef struct ecsi_heap {
  ecs_alloc_fn fn;
  void *ud;
  size_t bytes;
  uint64_t allocated;
} ecsi_heap;

/*
** How this layer finds a world's heap without seeing struct ecs_world
** (ecs_private.h, a layer above): every world starts with these two
** members, in this order, the way ecs_alive finds the public head by
** position. ecs_private.h asserts the layout at compile time.
*/
typedef struct ecsi_world_start {
  ecs_world_head head;
  ecsi_heap heap;
} ecsi_world_start;

/*
** Allocate a world's own block of size bytes (>= sizeof(ecsi_world_start))
** through alloc (NULL: realloc/free), zeroed, with its heap set up and
** the block counted. @return NULL when out of memory.
*/
ecs_world *ecsi_world_alloc(ecs_alloc_fn alloc, void *ud, size_t size);

/*
** ecsi_realloc has lua_Alloc's contract: NULL on failure with the old
** block untouched, so callers store the result only after checking it
** (osize means nothing when p is NULL). ecsi_free frees a block of size
** bytes (NULL is a no-op); p may be the world itself, as the last free.
** Both keep the heap's counters (ecs_world_memory) exact.
*/
void *ecsi_realloc(ecs_world *w, void *p, size_t osize, size_t nsize);
void ecsi_free(ecs_world *w, void *p, size_t size);

/*
** Grow an array of elem-sized items so that it holds at least need items.
** *cap doubles (starting at min_cap); on failure nothing changes.
*/
ecs_err ecsi_grow(ecs_world *w, void **p, uint32_t *cap, uint32_t need,
                  size_t elem, uint32_t min_cap);

/*
** Uncounted scratch memory for consistency checks, which take a const
** world and so must not move its counters: lua_Alloc's contract, straight
** to the world's allocator.
*/
void *ecsi_scratch_realloc(const ecs_world *w, void *p, size_t osize,
                           size_t nsize);

#endif
