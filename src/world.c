/*
** world.c -- world lifetime, the world-wide gc and check, error texts and
** the clock.
**
** The top layer (layers: alloc.h): it creates the world record and frees
** it layer by layer, and dispatches gc and check to every layer; nothing
** below calls into it. Allocation is in alloc.c, the manager registry in
** registry.c, field types in value.c.
*/
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <time.h>

#include "ecs_private.h"
#include "journal_private.h"
#include "pool.h"

static const char *const error_text[] = {
#define ECS__TEXT(name, msg) msg,
  ECS_ERRORS(ECS__TEXT)
#undef ECS__TEXT
};

const char *ecs_strerror(ecs_err err) {
  if ((unsigned)err >= (unsigned)ECS_ERR__COUNT) return "unknown error";
  return error_text[err];
}

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

size_t ecs_world_gc(ecs_world *w, size_t budget) {
  size_t total = 0;
  for (uint32_t i = 0; i < w->manager_count; i++)
    if (w->manager[i].cls->gc != NULL)
      total += w->manager[i].cls->gc(w, w->manager[i].self, budget);
  return total;
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

/* ------------------------------------------------------------------------
** Clock: CLOCK_MONOTONIC where POSIX has it, else C11's timespec_get
** (wall time), else processor time.
** --------------------------------------------------------------------- */
double ecs_clock(void) {
#if defined(CLOCK_MONOTONIC)
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
#if defined(TIME_UTC)
  {
    struct timespec tu;
    if (timespec_get(&tu, TIME_UTC) == TIME_UTC)
      return (double)tu.tv_sec + (double)tu.tv_nsec * 1e-9;
  }
#endif
  return (double)clock() / (double)CLOCKS_PER_SEC;
}
