/*
** transform.h -- the transform manager (Bitsquid, "Building a
** Data-Oriented Entity System", part 3), public C API for plugins.
**
** Every instance is a row of one buffer with the columns entity, local
** (position, rotation quaternion, scale), world (4x4 column-major doubles),
** parent, first_child, next_sibling, prev_sibling: links are instance
** indices, no per-node allocation. World matrices are always current:
** every write recomputes world = parent_world * local for the instance and
** all its descendants at once (no dirty flags, so readers never see last
** frame's data).
**
** Instance indices are valid until the next add, remove, set_parent or
** gc (swap-remove and the parent-first swap move rows); look them up again
** (ecs_transform_lookup, _lookup_n) after any of those.
**
** Dead entities: destroying an entity makes it vanish at once (has is
** false, it is nobody's parent or child); its children become roots whose
** world matrix is kept exactly and whose local transform becomes the TRS
** decomposition of that world matrix. Rows are reclaimed by gc (lazy);
** when the index's generation wraps first, the row is marked purged, so
** the entity that gets the old handle back has no row, parent or child.
**
** Notifications (ecs_manager_listen on ecs_transform_of(w)): ADD (then
** SET: ecs.h) after ecs_transform_add gave e a new transform (its values
** set); REMOVE
** before ecs_transform_remove takes one away (still readable); SET after
** a local transform or parent was written (set_local, set_position,
** set_rotation, set_scale, set_parent, add to an entity that had one, the
** bulk setters: once per entity, after the whole batch). The entity
** notified is the one written: descendants whose world matrix followed
** are not, nor are children orphaned by a remove, nor anything destroy,
** gc, sort, clear or load changes. A listener runs when the manager is
** consistent and may do anything (destroy e, re-parent, remove); the
** manager reads nothing it held before the call. A listener's error is
** returned by the call that notified, and the change stands (for
** REMOVE: the transform is still removed).
**
** Class hooks (ecs.h, ecs_manager_class): has, clear, stats, schema
** (position_x..z, rotation_x..w, scale_x..z as f64, parent as entity),
** save and load. The stream holds the live records, parents before
** children, with the world matrix only where it is not parent world x
** local; load checks all of it before it changes anything and restores
** every local, parent, child order and world matrix exactly
** (docs/transform.md, "Save and load").
**
** Layer: managers, above entity and below query (layers: alloc.h).
** Includes ecs.h and component.h (ecs_component, ecs_instance and
** ECS_NO_INSTANCE: a transform's rows are instances like a component's).
*/
#ifndef ECS_TRANSFORM_H
#define ECS_TRANSFORM_H

#include "ecs.h"
#include "component.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A local transform: world = parent_world * T(position) R(rotation) S(scale) */
typedef struct ecs_trs {
  double position[3];
  double rotation[4]; /* unit quaternion x, y, z, w */
  double scale[3];
} ecs_trs;

typedef struct ecs_transform ecs_transform;

/*
** Create the transform manager of w and register it under "transform".
** @return ECS_ERR_EXISTS if w already has one, ECS_ERR_NOMEM.
*/
ecs_err ecs_transform_new(ecs_world *w, ecs_transform **out);

/*
** The columns of t as a generic component (not registered: it belongs to
** t), row for row with t's rows: f64 fields px py pz (local position),
** qx qy qz qw (rotation), sx sy sz (scale), and wx wy wz (world position,
** read-only: ecs_component_readonly). A query term like any component:
** native systems and compiled expressions read and write it, and every
** bulk write is followed by the propagation of the rows written (the
** values cleaned first: docs/transform.md, "Transforms in queries").
** Its instances and schema are t's: ecs_component_emplace, _add,
** _reserve, _remove and _redefine refuse it (ECS_ERR_INVALID) and
** ecs_component_gc reclaims nothing there.
*/
ecs_component *ecs_transform_columns(const ecs_transform *t);

/* The world t belongs to. */
ecs_world *ecs_transform_world(const ecs_transform *t);

/* @return w's transform manager, or NULL if it has none. */
ecs_transform *ecs_transform_of(const ecs_world *w);

/*
** Give e a transform: local = *local (NULL: identity), no parent. If e
** already has one, its local transform is overwritten (parent kept).
** Rotations are normalized. Notifies ADD (a new transform) or SET.
** @return ECS_ERR_DEAD, ECS_ERR_NOT_FINITE (a number of local),
**         ECS_ERR_ZERO_ROTATION (a zero quaternion), ECS_ERR_NOMEM (then
**         nothing changed), or a listener's error (then e has its
**         transform).
*/
ecs_err ecs_transform_add(ecs_transform *t, ecs_entity e, const ecs_trs *local);

/*
** Remove e's transform; its children become roots (world kept). REMOVE
** is notified first, while e's transform is whole.
** @return ECS_ERR_DEAD or ECS_ERR_MISSING (nothing happened), or a
**         listener's error (the transform is removed all the same, unless
**         the listener destroyed e: then its row waits for gc like any
**         dead entity's).
*/
ecs_err ecs_transform_remove(ecs_transform *t, ecs_entity e);

/* True when e is alive and has a transform. */
bool ecs_transform_has(const ecs_transform *t, ecs_entity e);

/*
** @return e's instance (its row), or ECS_NO_INSTANCE (dead, stale, null,
** none). Named as ecs_component_lookup, its batch form with _n.
*/
ecs_instance ecs_transform_lookup(const ecs_transform *t, ecs_entity e);

/* Batch lookup: out[i] = ecs_transform_lookup(t, es[i]). */
void ecs_transform_lookup_n(const ecs_transform *t, const ecs_entity *es,
                            ecs_instance *out, size_t n);

/* Rows in use, including dead entities' rows awaiting gc. */
uint32_t ecs_transform_size(const ecs_transform *t);

/* Row accessors; i must be below ecs_transform_size. A dead row's entity
** may be marked ECS_PURGED (its index's generation wrapped). */
ecs_entity ecs_transform_entity_at(const ecs_transform *t, uint32_t i);
const double *ecs_transform_world_at(const ecs_transform *t, uint32_t i);

/* Local transform (for a child of a dead parent: the decomposition of its
** world matrix). @return ECS_ERR_DEAD, ECS_ERR_MISSING. */
ecs_err ecs_transform_get_local(const ecs_transform *t, ecs_entity e,
                                ecs_trs *out);

/* World matrix (16 doubles, column-major) into out. */
ecs_err ecs_transform_get_world(const ecs_transform *t, ecs_entity e,
                                double out[16]);

/* World rotation (unit quaternion x,y,z,w) from the world matrix. */
ecs_err ecs_transform_get_world_rotation(const ecs_transform *t,
                                         ecs_entity e, double out[4]);

/*
** Setters: write the local transform, then update e's world matrix and
** all its descendants', and notify SET. @return ECS_ERR_DEAD,
** ECS_ERR_MISSING, ECS_ERR_NOT_FINITE, ECS_ERR_ZERO_ROTATION, or a
** listener's error (the write stands); never allocate.
*/
ecs_err ecs_transform_set_local(ecs_transform *t, ecs_entity e,
                                const ecs_trs *local);
ecs_err ecs_transform_set_position(ecs_transform *t, ecs_entity e, double x,
                                   double y, double z);
ecs_err ecs_transform_set_rotation(ecs_transform *t, ecs_entity e, double x,
                                   double y, double z, double w);
ecs_err ecs_transform_set_scale(ecs_transform *t, ecs_entity e, double x,
                                double y, double z);

/*
** Bulk setters by instance: write n locals (or positions, xyz[3*i..]),
** then propagate once: each affected world matrix is computed once, even
** when both a node and its ancestor are in the batch. All or nothing: a
** bad instance (not a row of a live entity: ECS_ERR_BAD_ROWS) or value
** (ECS_ERR_NOT_FINITE, ECS_ERR_ZERO_ROTATION) fails before anything is
** written (duplicates: the last one wins). While the world has listeners,
** the entities are gathered for SET (once per entity, after the whole
** batch, in batch order; those a listener removes or destroys first are
** skipped): the list is allocated before anything is written, so
** ECS_ERR_NOMEM leaves the batch undone. The first listener error stops
** the notifications and is returned; the batch stands.
*/
ecs_err ecs_transform_set_locals(ecs_transform *t, const uint32_t *inst,
                                 const ecs_trs *locals, size_t n);
ecs_err ecs_transform_set_positions(ecs_transform *t, const uint32_t *inst,
                                    const double *xyz, size_t n);

/*
** Parent child under parent (ECS_NULL detaches). keep_world false keeps
** the local transform (the world matrix follows the new parent); true keeps
** the world matrix exactly and sets local to its decomposition relative to
** the new parent. Children are kept in attachment order.
** Notifies SET for child.
** @return ECS_ERR_DEAD (child or parent not alive), ECS_ERR_MISSING (either
**         has no transform), ECS_ERR_CYCLE (parent is child or below it),
**         ECS_ERR_KEEP_WORLD (keep_world impossible: see
**         ecs_transform_keep_world_error). Checking for a cycle costs the
**         smaller of the parent's depth and the child's subtree size
**         (nothing for a childless child); or a listener's error (the
**         new parent stands).
*/
ecs_err ecs_transform_set_parent(ecs_transform *t, ecs_entity child,
                                 ecs_entity parent, bool keep_world);

/*
** Why set_parent(child, parent, true) fails with ECS_ERR_KEEP_WORLD: "keep_world
** under a singular parent matrix" (a zero scale above, or one too small to
** invert in doubles), "keep_world: the child's world matrix is not
** finite", "...: the parent's world matrix is not finite" (world matrices
** can overflow although every local is finite), or "...: the local
** transform that keeps the world matrix is not finite". @return NULL when
** keep_world would succeed, or either entity has no transform.
*/
const char *ecs_transform_keep_world_error(const ecs_transform *t,
                                           ecs_entity child,
                                           ecs_entity parent);

/* Parent of e, ECS_NULL for roots, dead parents and entities without one. */
ecs_entity ecs_transform_parent(const ecs_transform *t, ecs_entity e);

/* First live child of e / next live sibling of e; ECS_NULL at the end. */
ecs_entity ecs_transform_first_child(const ecs_transform *t, ecs_entity e);
ecs_entity ecs_transform_next_sibling(const ecs_transform *t, ecs_entity e);

/*
** Destroy e and every live descendant as entities (ecs_destroy), each
** after its descendants; their rows go at the next gc. Never allocates.
** Drops the errors of listeners and goes on, as ecs_destroy_n does
** (ecs_transform_destroy_tree_report returns them, and stops).
** @return the number of entities destroyed (0 if e has no transform).
*/
size_t ecs_transform_destroy_tree(ecs_transform *t, ecs_entity e);

/*
** ecs_transform_destroy_tree reporting a listener's error (a REMOVE
** listener of any manager of a dying entity, the cleanup of entity fields
** included; ecs_destroy_report). The first error stops the walk once the
** entity whose listener failed is destroyed: the descendants destroyed
** before it stay destroyed, the rest of the tree alive.
** @param destroyed set to the number of entities destroyed.
** @return ECS_ERR_OK or the first listener's error.
*/
ecs_err ecs_transform_destroy_tree_report(ecs_transform *t, ecs_entity e,
                                          size_t *destroyed);

/*
** Keep parents before children where cheap: when set_parent links a child
** stored before its parent, the two rows are swapped (Bitsquid's trick).
** On by default; switchable to measure its effect.
*/
void ecs_transform_set_parent_first(ecs_transform *t, bool on);

/*
** Reorder all rows depth first (parents before children, every subtree
** contiguous), which the swap trick alone cannot achieve for rows added in
** random order. O(rows); allocates a second buffer for the copy.
** @return ECS_ERR_NOMEM (then nothing changed).
*/
ecs_err ecs_transform_sort(ecs_transform *t);

/* Reclaim up to budget dead rows (also run by ecs_world_gc). */
size_t ecs_transform_gc(ecs_transform *t, size_t budget);

#ifdef __cplusplus
}
#endif

#endif
