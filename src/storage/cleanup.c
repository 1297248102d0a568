/*
** cleanup.c -- entity fields that clean up after the entity they name
** (component.h, ecs_component_set_cleanup): cleared, their instance
** removed, or their holder destroyed when that entity dies.
**
** A sweep, not an index: after a destroy, every instance of every
** component that has such a field is looked at, and each such field whose
** value names an entity that is not alive gets its policy. So the write
** paths (set, columns, spawn, load, ...) pay nothing and cannot miss a
** reference; the price is O(instances of those components) per destroy
** call, which ecs_cleanup_hold turns into one sweep per batch.
**
** The sweep allocates nothing. It repeats until a pass changes nothing:
** a holder destroyed by DESTROY is a new dead entity whose own references
** the next pass (or the same one, further on) finds, so a chain of any
** length is followed without recursion. Destroys made during the sweep
** (by it, or by REMOVE listeners it runs) only note themselves
** (cleanup_sweeping). Listeners may change anything: every row index is
** checked against the manager's size before use, and a removal swaps the
** last row into the hole, which is then looked at again; a listener that
** redefines a component (its fields renumbered, retyped, their policies
** changed) ends the pass over it and owes a new one, which reads the new
** schema from the start (sweep_component). Rows are walked
** in order, so a chain whose holders were created after their targets
** (the usual order) goes in one pass; another order takes more passes.
** A REMOVE on a component a pointer loop pins (ecs_component_pin: its
** rows must not move) is put off: the sweep leaves the holder and owes
** another sweep (cleanup_pending), which the loop's end runs (the
** binding's q:pointers, through ecs_cleanup_hold/release) or else the
** next destroy.
**
** Layer: managers (with component.c), above entity.
*/
#include "component_private.h"

ecs_err ecs_component_set_cleanup(ecs_world *w, ecs_component *c,
                                  uint32_t field, ecs_cleanup policy) {
  uint8_t old;
  if (field >= c->nfields) return ECS_ERR_UNKNOWN_FIELD;
  if (c->field[field].type != ECS_ENTITY ||
      (unsigned)policy > (unsigned)ECS_CLEANUP_DESTROY)
    return ECS_ERR_INVALID;
  old = c->cleanup[field]; /* in the meta block: setting never fails */
  c->cleanup[field] = (uint8_t)policy;
  /* a policy given during a sweep (an observer's redefinition): its
  ** field may name the dead already, and the pass over c may be over */
  if (w->cleanup_sweeping && policy != ECS_CLEANUP_NONE && policy != old)
    w->cleanup_pending = true;
  if (old == ECS_CLEANUP_NONE && policy != ECS_CLEANUP_NONE) {
    c->ncleanup++;
    w->cleanup_fields++;
  } else if (old != ECS_CLEANUP_NONE && policy == ECS_CLEANUP_NONE) {
    c->ncleanup--;
    w->cleanup_fields--;
  }
  return ECS_ERR_OK;
}

ecs_cleanup ecs_component_cleanup(const ecs_component *c, uint32_t field) {
  if (field >= c->nfields) return ECS_CLEANUP_NONE;
  return (ecs_cleanup)c->cleanup[field];
}

/* The policy of field k for the holder at row i, whose value names a dead
** entity; *err keeps the first listener error. */
static void apply_policy(ecs_world *w, ecs_component *c, uint32_t k,
                         uint32_t i, ecs_err *err) {
  ecs_entity holder = owners(c)[i];
  ecs_err e;
  bool gone;
  switch (c->cleanup[k]) {
  case ECS_CLEANUP_CLEAR:
    ecs_component_write_begin(w, c, NULL, i, 1);
    ((ecs_entity *)(void *)col(c, k))[i] = ECS_NULL;
    ecs_component_write_end(w, c, NULL, i, 1);
    return;
  case ECS_CLEANUP_REMOVE:
    /* a pointer loop holds c's rows (ecs_component_pin): the holder keeps
    ** c until a sweep after the loop (the binding runs one at its end) */
    if (ecs_component_pins(c) > 0) {
      w->cleanup_deferred = true;
      return;
    }
    e = ecs_component_remove(w, c, holder, NULL);
    break;
  default:
    /* a holder whose own destroy is reporting (dying) stays alive until
    ** that ends; the deaths, not this call, decide whether a pass follows */
    e = ecs_destroy_report(w, holder, &gone);
    break;
  }
  if (e != ECS_ERR_OK && *err == ECS_ERR_OK) *err = e;
}

/*
** One pass over c: every policy field of a live holder that names a dead
** entity gets its policy. Column by column: a tight loop over the values
** (the column's address taken again only after a policy ran, since its
** listeners may have moved it), the holder looked at only for a hit. A
** removal moves the last row into row i, which is then looked at again.
** Rows added during the pass (a listener's) wait for the next one, so a
** listener that adds back what the sweep removes cannot keep a pass going.
**
** A listener may also redefine c (hot reload, component_migrate.c): field
** k is then another field, of another type and policy, in a column of
** another size. Nothing read under the old schema is used after that:
** the pass over c ends there and owes another whole pass (which reads the
** new schema from its start), so fields are resolved afresh rather than
** followed across the change. The rows stay where they were, so only the
** rows already looked at are looked at twice.
*/
static void sweep_component(ecs_world *w, ecs_component *c, ecs_err *err) {
  const uint32_t gen = c->schema_gen;
  for (uint32_t k = 0; k < c->nfields; k++) {
    uint32_t end = c->size;
    const ecs_entity *vals;
    if (c->cleanup[k] == ECS_CLEANUP_NONE || end == 0) continue;
    vals = (const ecs_entity *)(const void *)col(c, k);
    for (uint32_t i = 0; i < end && i < c->size; i++) {
      ecs_entity v = vals[i], holder;
      if (v == ECS_NULL || ecs_alive(w, v)) continue;
      holder = owners(c)[i];
      if (!ecs_alive(w, holder)) continue; /* a dead record: garbage */
      apply_policy(w, c, k, i, err);
      if (c->schema_gen != gen) { /* redefined by a listener: start over */
        w->cleanup_pending = true;
        return;
      }
      vals = (const ecs_entity *)(const void *)col(c, k);
      if (i < c->size && owners(c)[i] != holder) { /* a row moved in */
        if (end > c->size) end = c->size; /* the last of them moved: seen */
        i--;
      }
    }
  }
}

/*
** Sweep every component with a policy; when somebody died during a pass
** (holders it destroyed, or a listener's doing), another pass follows,
** until a pass sees no death. Rows are walked in order, so a chain whose
** holders come after their targets goes in one pass.
*/
static ecs_err sweep(ecs_world *w) {
  ecs_err err = ECS_ERR_OK;
  w->cleanup_sweeping = true;
  do {
    w->cleanup_pending = false;
    for (uint32_t m = 0; m < w->manager_count; m++) {
      ecs_component *c;
      if (!ecs_component_is(w->manager[m].cls)) continue;
      c = (ecs_component *)w->manager[m].self;
      if (c->ncleanup > 0) sweep_component(w, c, &err);
    }
  } while (w->cleanup_pending);
  w->cleanup_sweeping = false;
  /* removals a pin put off: the next sweep owes them */
  if (w->cleanup_deferred) {
    w->cleanup_deferred = false;
    w->cleanup_pending = true;
  }
  return err;
}

/* Somebody died: sweep, unless a sweep or a hold is in progress. */
ecs_err ecsi_cleanup_after_death(ecs_world *w) {
  w->cleanup_pending = true;
  if (w->cleanup_sweeping || w->cleanup_holds > 0) return ECS_ERR_OK;
  return sweep(w);
}

void ecs_cleanup_hold(ecs_world *w) { w->cleanup_holds++; }

ecs_err ecs_cleanup_release(ecs_world *w) {
  if (w->cleanup_holds == 0 || --w->cleanup_holds > 0) return ECS_ERR_OK;
  if (!w->cleanup_pending || w->cleanup_sweeping || w->cleanup_fields == 0) {
    if (!w->cleanup_sweeping) w->cleanup_pending = false;
    return ECS_ERR_OK;
  }
  return sweep(w);
}
