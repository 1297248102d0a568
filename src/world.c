/*
** world.c -- world lifetime and the world-wide check.
**
** The top layer (layers: alloc.h): it creates the world record and frees
** it layer by layer, and dispatches the check to every layer; nothing
** below calls into it. Allocation is in alloc.c, the manager registry
** and the world-wide gc in registry.c, field types in value.c, error
** texts in errors.c, the clock in clock.c.
*/

#include "ecs_private.h"
#include "journal_private.h"
#include "pool.h"

ecs_world *ecs_world_new(ecs_alloc_fn alloc, void *ud) {
  return ecsi_world_alloc(alloc, ud, sizeof(ecs_world));
}

/*
** Top down, each layer freeing its own parts: queries point into
** managers, so they go first; then the managers (last registered first),
** the refs they dropped, the entities, and the world's block, which
** ecsi_free counts before it frees.
*/
void ecs_world_free(ecs_world *w) {
  if (w == NULL) return;
  ecsi_pool_free(w, w->pool); /* idle: joined first */
  ecsi_journal_free(w); /* its captures point into managers */
  ecsi_systems_free(w); /* systems point to queries: first */
  ecsi_queries_free(w); /* queries point into managers: next */
  ecsi_managers_free(w);
  ecsi_refs_free(w);
  ecsi_entities_free(w);
  ecsi_cursors_forget(w);
  ecsi_free(w, w, sizeof *w);
}

ecs_err ecs_world_set_threads(ecs_world *w, uint32_t threads) {
  ecsi_pool *p = NULL;
  ecs_err err;
  if (threads < 1 || threads > ECS_MAX_THREADS) return ECS_ERR_INVALID;
  if (w->updating != 0) return ECS_ERR_LOCKED;
  if (threads == ecs_world_threads(w)) return ECS_ERR_OK;
  if (threads > 1 && (err = ecsi_pool_new(w, threads, &p)) != ECS_ERR_OK)
    return err;
  ecsi_pool_free(w, w->pool);
  w->pool = p;
  return ECS_ERR_OK;
}

uint64_t ecs_world_split_runs(const ecs_world *w) { return w->split_runs; }
uint64_t ecs_world_batches(const ecs_world *w) { return w->batches; }
uint64_t ecs_world_loads(const ecs_world *w) { return w->loads; }

uint32_t ecs_world_threads(const ecs_world *w) {
  return w->pool != NULL ? ecsi_pool_threads(w->pool) : 1u;
}

const char *ecs_world_check(const ecs_world *w) {
  const char *bad = ecsi_entities_check(w);
  if (bad == NULL) bad = ecsi_queries_check(w);
  if (bad == NULL) bad = ecsi_systems_check(w);
  if (bad == NULL) bad = ecsi_journal_check(w);
  for (uint32_t i = 0; bad == NULL && i < w->manager_count; i++)
    if (w->manager[i].cls->check != NULL)
      bad = w->manager[i].cls->check(w, w->manager[i].self);
  return bad;
}
