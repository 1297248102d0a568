/*
** write.h -- the write sequence of one instance's values: the order of
** its checks, the write bracket's begin, the values into the columns,
** its end and the listeners (the binding's Position:add, set and
** set_field, which only convert the values and call these); and the bulk
** write of one field over many instances (C:set_many).
**
** Private to the core and the binding (not in the plugin table): a
** plugin writes its columns itself, inside ecs_component_write_begin and
** ecs_component_write_end.
**
** Layer: storage: it calls the component managers' own calls (the write
** bracket, keep_ref) and the registry.
*/
#ifndef ECS_WRITE_H
#define ECS_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "component.h"

/* What a write did, for the caller to finish its side. */
typedef struct ecs_write_result {
  ecs_instance row; /* e's instance when the values went in */
  bool existed;     /* an add found an instance (the event was SET) */
  bool written;     /* the values are in: an error now is a listener's */
  uint32_t nold;    /* old[0 .. nold): lua refs the write replaced that */
  uint32_t old[ECS_MAX_FIELDS]; /* no journal keeps: the caller releases */
} ecs_write_result;

/*
** The checks a write makes first, for a caller that wants their errors
** before the ones of its own values (a value of the wrong type for a
** dead entity is reported as the dead entity).
** @param add  an add (e needs no instance) rather than a set.
** @param row  receives e's instance, or ECS_NO_INSTANCE: the hint that
**             spares ecs_component_write a lookup.
** @return ECS_ERR_OK, ECS_ERR_DEAD (e not alive), ECS_ERR_MISSING (a set
**         and e has no instance).
** Inline: the binding's set makes it once per call.
*/
static inline ecs_err ecs_component_write_check(const ecs_world *w,
                                                const ecs_component *c,
                                                ecs_entity e, bool add,
                                                ecs_instance *row) {
  *row = ECS_NO_INSTANCE;
  if (!ecs_alive(w, e)) return ECS_ERR_DEAD;
  *row = ecs_component_lookup(w, c, e);
  if (!add && *row == ECS_NO_INSTANCE) return ECS_ERR_MISSING;
  return ECS_ERR_OK;
}

/*
** Write vals[0 .. n) into fields first .. first + n of e's instance of c:
** the checks of ecs_component_write_check again (the caller's conversion
** may have run code that changed the world), then for an add the instance
** (ecs_component_emplace: zeros, no listener), then the write bracket's
** begin, the values (converted already by the checked rule of value.h: .f
** for the float kinds, .i else; a lua field's .i is a ref the caller
** made, 0 for nil), its end; then ECS_EVENT_ADD (a new instance) or ECS_EVENT_SET to c's
** listeners, last, as a listener may change anything.
** @param row  e's instance as the caller last saw it (the row of
**             ecs_component_write_check), or ECS_NO_INSTANCE: checked,
**             then used instead of a lookup when it still is e's.
** @param r receives what the write did (r->old: the refs to release,
**          also when a listener failed).
** @return ECS_ERR_OK; before the write (r->written false, nothing
**         changed): ECS_ERR_DEAD, ECS_ERR_MISSING, ECS_ERR_INVALID (fields
**         out of range), or emplace's codes (ECS_ERR_NOMEM, ECS_ERR_PINNED,
**         ECS_ERR_INVALID); after it (r->written true): the first
**         listener's error.
*/
ecs_err ecs_component_write(ecs_world *w, ecs_component *c, ecs_entity e,
                            ecs_instance row, bool add, uint32_t first,
                            uint32_t n, const ecs_scalar *vals,
                            ecs_write_result *r);

/*
** The bulk write of one field: field k of c's instances rows[0 .. n)
** takes vals[i] (vals NULL: *one for every row), converted already by the
** checked rule of value.h, inside one write bracket over the rows (C:
** set_many). A lua field takes refs[i] instead (a ref the caller made, 0
** for nil), and refs[i] receives the ref it replaced that no journal
** keeps (0: none): the caller releases those. The rows are the caller's
** lookup, with nothing run since; no listener runs (the caller reports
** ECS_EVENT_SET per entity after, as a listener may change anything).
*/
void ecs_component_write_field_n(ecs_world *w, ecs_component *c, uint32_t k,
                                 const ecs_instance *rows, size_t n,
                                 const ecs_scalar *vals, const ecs_scalar *one,
                                 uint32_t *refs);

#endif
