/*
** component_owned.h -- owned components: a generic component manager that
** another manager (the transform) creates for itself and drives, so that
** its per-entity values are ordinary columns every bulk path reads and
** writes (queries, q:apply, expression and C systems, q:columns), while
** the owner keeps its rows in step with its own.
**
** An owned component is not registered with the world: no name lookup
** finds it, snapshots and the journal do not see it (the owner saves and
** loads those values as part of its own records), and the world's gc
** and purge do not reach it (the owner runs them through the calls
** below). Its rows move only through these calls, never through a
** query's re-alignment, so the owner may rely on row i of the component
** being its own row i. Queries watch it like any component: every
** structural change here is reported to them.
**
** The owner hears of bulk writes (ecs_component_touch and its _n and
** _range forms, which every bulk write path calls after writing):
** written(w, ud, c, rows, first, n) with rows[0 .. n) or, when rows is
** NULL, the rows first .. first + n. Fields marked read-only are refused
** as targets by every bulk path (ecs_component_readonly). The public
** calls that would change its rows or schema behind the owner's back
** refuse it: ecs_component_emplace, _reserve, _remove and _redefine
** return ECS_ERR_INVALID, ecs_component_gc reclaims nothing; the journal
** captures none of its rows (it keeps the owner whole).
**
** Layer: managers (layers: alloc.h). Not installed.
*/
#ifndef ECS_COMPONENT_OWNED_H
#define ECS_COMPONENT_OWNED_H

#include "component.h"

typedef struct ecsi_owner {
  void (*written)(ecs_world *w, void *ud, ecs_component *c,
                  const uint32_t *rows, uint32_t first, size_t n);
} ecsi_owner;

/*
** A component named name (not registered: another manager or component
** may have that name) with the given fields, fields whose bit is set in
** readonly (k < 64) read-only. @return ECS_ERR_NOMEM or a schema error.
*/
ecs_err ecsi_owned_new(ecs_world *w, const char *name,
                       const ecs_field_def *fields, uint32_t nfields,
                       uint64_t readonly, const ecsi_owner *owner, void *ud,
                       ecs_component **out);
void ecsi_owned_free(ecs_world *w, ecs_component *c);

/* Room for need rows and a map entry at entity index `index` (UINT32_MAX:
** none): afterwards ecsi_owned_append cannot fail. */
ecs_err ecsi_owned_reserve(ecs_world *w, ecs_component *c, uint32_t need,
                           uint32_t index);
/* Append e (no instance at its index: the owner removed any dead one
** first) with every field zero; @return its row. */
uint32_t ecsi_owned_append(ecs_world *w, ecs_component *c, ecs_entity e);
/* Swap-remove row i (the last row moves into it). */
void ecsi_owned_remove_at(ecs_world *w, ecs_component *c, uint32_t i);
/* Exchange rows a and b (values, owners, stamps). */
void ecsi_owned_swap(ecs_world *w, ecs_component *c, uint32_t a, uint32_t b);
/* Put the rows in the order of order[0 .. size) (every owner once).
** @return false, nothing changed, when out of memory. */
bool ecsi_owned_permute(ecs_world *w, ecs_component *c,
                        const ecs_entity *order);
/* The index's generation wrapped: mark its row's owner purged. */
void ecsi_owned_purge(ecs_component *c, uint32_t index);
/* Every row goes, and the blocks (the owner is as new). */
void ecsi_owned_clear(ecs_world *w, ecs_component *c);
/* Give c the rows of from (a component made with the same schema and
** filled aside, as by a load): prepare reserves what take needs, take
** cannot fail; from is left empty and the watching queries stale. */
ecs_err ecsi_owned_take_prepare(ecs_world *w, ecs_component *c,
                                const ecs_component *from);
void ecsi_owned_take(ecs_world *w, ecs_component *c, ecs_component *from);
/* Bytes c holds; NULL or the first way its rows differ from rows[0 .. n). */
size_t ecsi_owned_bytes(const ecs_world *w, const ecs_component *c);
const char *ecsi_owned_check(const ecs_world *w, const ecs_component *c,
                             const ecs_entity *rows, uint32_t n);
/* Field k's column as doubles (an f64 field). */
double *ecsi_owned_f64(ecs_component *c, uint32_t k);
/* The change stamps of the rows (NULL while no query watches changes)
** and the stamp of a write now: an owner that writes its rows itself
** stamps them, as ecs_component_touch would. */
uint32_t *ecsi_owned_changed(const ecs_world *w, ecs_component *c,
                             uint32_t *now);
/* The owners column (row i's entity). */
ecs_entity *ecsi_owned_owners(ecs_component *c);

#endif
