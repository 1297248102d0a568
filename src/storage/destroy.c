/*
** destroy.c -- an entity destroyed with what depends on it: the managers'
** REMOVE reports while it is still alive (registry.c), its index freed
** (entity.c, ecsi_entity_kill), then the entity fields that named it
** cleaned (cleanup.c), one sweep for a whole batch.
**
** Storage layer (layers: alloc.h): above the entity layer, whose kill
** knows ids only, because the cleanup of entity fields belongs to the
** component managers.
*/
#include "ecs_private.h"
#include "sparse.h"

static bool dying(const ecs_world *w, ecs_entity e) {
  for (uint32_t k = 0; k < w->dying_count; k++)
    if (w->dying[k] == e) return true;
  return false;
}

/*
** With REMOVE listeners, e stays alive while they run (its components
** readable), marked dying so that a listener's destroy of e does nothing
** and no REMOVE is reported twice; then it dies whatever they returned.
** The dying array has room for one entity per nesting level (64) plus
** the outermost, and a deeper notification fails before it is reached,
** but the bound is checked all the same.
*/
ecs_err ecs_destroy_report(ecs_world *w, ecs_entity e, bool *destroyed) {
  ecs_err err = ECS_ERR_OK;
  *destroyed = false;
  if (!ecs_alive(w, e)) return ECS_ERR_OK;
  if (w->remove_listeners != 0) {
    if (dying(w, e)) return ECS_ERR_OK;
    if (w->dying_count >= sizeof w->dying / sizeof w->dying[0])
      return ECS_ERR_NESTING;
    w->dying[w->dying_count++] = e;
    err = ecsi_notify_destroy(w, e);
    w->dying_count--;
    /* a listener that dropped the last REMOVE listener may have destroyed e */
    if (!ecs_alive(w, e)) return err;
  }
  ecsi_entity_kill(w, e);
  *destroyed = true;
  if (w->cleanup_fields != 0) { /* entity fields naming e (cleanup.c) */
    ecs_err cerr = ecsi_cleanup_after_death(w);
    if (err == ECS_ERR_OK) err = cerr;
  }
  return err;
}

bool ecs_destroy(ecs_world *w, ecs_entity e) {
  bool done;
  if (w->remove_listeners == 0 && w->cleanup_fields == 0) {
    if (!ecs_alive(w, e)) return false;
    ecsi_entity_kill(w, e);
    return true;
  }
  (void)ecs_destroy_report(w, e, &done);
  return done;
}

/* One cleanup sweep for the whole batch (the hold), not one per entity. */
size_t ecs_destroy_n(ecs_world *w, const ecs_entity *es, size_t n) {
  size_t done = 0;
  ecs_cleanup_hold(w);
  for (size_t j = 0; j < n; j++) done += ecs_destroy(w, es[j]);
  (void)ecs_cleanup_release(w);
  return done;
}
