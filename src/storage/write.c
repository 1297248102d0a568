/*
** write.c -- the write sequence of one instance's values (write.h).
**
** Every writer that is not a bulk path goes through here: the checks in
** their order, the instance (add), the write bracket's begin (an open
** journal keeps the old values, through the change barrier), the values,
** its end (the change ticks, the journal's copy of one complete write),
** the listeners last; keep_ref per replaced lua ref. The one bulk path
** here is C:set_many's, one field over many rows in one bracket, whose
** listeners its caller runs.
**
** Layer: storage (write.h), beside the write bracket (change.c).
*/
#include "write.h"
#include "component_private.h"

/* The values into row i, inside the write bracket; the lua refs replaced
** that no journal keeps go to r->old. */
static void write_values(ecs_world *w, ecs_component *c, ecs_instance i,
                         uint32_t first, uint32_t n, const ecs_scalar *vals,
                         ecs_write_result *r) {
  ecs_component_write_begin(w, c, NULL, i, 1); /* one complete write */
  for (uint32_t j = 0; j < n; j++) {
    uint32_t k = first + j;
    ecs_type t = c->field[k].type;
    void *base = col(c, k);
    if (t == ECS_LUA) {
      uint32_t old = ((uint32_t *)base)[i];
      ((uint32_t *)base)[i] = (uint32_t)vals[j].i;
      if (old != 0 && !ecs_component_keep_ref(w, old)) r->old[r->nold++] = old;
    } else {
      ecs_value_store_inline(base, t, i, vals[j]);
    }
  }
  ecs_component_write_end(w, c, NULL, i, 1);
}

ecs_err ecs_component_write(ecs_world *w, ecs_component *c, ecs_entity e,
                            ecs_instance row, bool add, uint32_t first,
                            uint32_t n, const ecs_scalar *vals,
                            ecs_write_result *r) {
  ecs_instance i;
  ecs_err err;
  r->row = ECS_NO_INSTANCE;
  r->existed = r->written = false;
  r->nold = 0;
  if (first > c->nfields || n > c->nfields - first || c->owner != NULL)
    return ECS_ERR_INVALID; /* an owned component: its owner's rows */
  if (!ecs_alive(w, e)) return ECS_ERR_DEAD;
  if (row < c->size && owners(c)[row] == e) { /* the hint holds: e's */
    i = row;
    r->existed = true;
  } else if (add) {
    if ((err = ecs_component_emplace(w, c, e, &i, &r->existed)) != ECS_ERR_OK)
      return err;
  } else {
    if ((i = ecs_component_lookup(w, c, e)) == ECS_NO_INSTANCE)
      return ECS_ERR_MISSING;
    r->existed = true;
  }
  r->row = i;
  write_values(w, c, i, first, n, vals, r);
  r->written = true;
  return ecs_manager_notify(w, c, e, r->existed ? ECS_EVENT_SET
                                                : ECS_EVENT_ADD);
}

void ecs_component_write_field_n(ecs_world *w, ecs_component *c, uint32_t k,
                                 const ecs_instance *rows, size_t n,
                                 const ecs_scalar *vals, const ecs_scalar *one,
                                 uint32_t *refs) {
  ecs_type t = c->field[k].type;
  void *base = col(c, k);
  ecs_component_write_begin(w, c, rows, 0, n);
  if (t == ECS_LUA) {
    for (size_t i = 0; i < n; i++) {
      uint32_t old = ((uint32_t *)base)[rows[i]];
      ((uint32_t *)base)[rows[i]] = refs[i];
      refs[i] = old != 0 && !ecs_component_keep_ref(w, old) ? old : 0;
    }
  } else {
    for (size_t i = 0; i < n; i++)
      ecs_value_store_inline(base, t, rows[i], vals != NULL ? vals[i] : *one);
  }
  ecs_component_write_end(w, c, rows, 0, n);
}
