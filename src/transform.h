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
** (ecs_transform_lookup) after any of those.
**
** Dead entities: destroying an entity makes it vanish at once (has is
** false, it is nobody's parent or child); its children become roots whose
** world matrix is kept exactly and whose local transform becomes the TRS
** decomposition of that world matrix. Rows are reclaimed by gc (lazy);
** when the index's generation wraps first, the row is marked purged, so
** the entity that gets the old handle back has no row, parent or child.
**
** Layer: managers, above entity and below query (layers: alloc.h).
** Includes ecs.h only.
*/
#ifndef ECS_TRANSFORM_H
#define ECS_TRANSFORM_H

#include "ecs.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ECS_NO_INSTANCE /* also in component.h */
typedef uint32_t ecs_instance;
#define ECS_NO_INSTANCE ((ecs_instance)UINT32_MAX)
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

/* The world t belongs to. */
ecs_world *ecs_transform_world(const ecs_transform *t);

/* @return w's transform manager, or NULL if it has none. */
ecs_transform *ecs_transform_of(const ecs_world *w);

/*
** Give e a transform: local = *local (NULL: identity), no parent. If e
** already has one, its local transform is overwritten (parent kept).
** Rotations are normalized.
** @return ECS_ERR_DEAD, ECS_ERR_NOT_FINITE (a number of local),
**         ECS_ERR_ZERO_ROTATION (a zero quaternion), ECS_ERR_NOMEM (then
**         nothing changed).
*/
ecs_err ecs_transform_add(ecs_transform *t, ecs_entity e, const ecs_trs *local);

/* Remove e's transform; its children become roots (world kept).
** @return false if e had none or is not alive. */
bool ecs_transform_remove(ecs_transform *t, ecs_entity e);

/* True when e is alive and has a transform. */
bool ecs_transform_has(const ecs_transform *t, ecs_entity e);

/* @return e's instance, or ECS_NO_INSTANCE (dead, stale, null, none). */
uint32_t ecs_transform_instance(const ecs_transform *t, ecs_entity e);

/* Batch lookup: out[i] = ecs_transform_instance(t, es[i]). */
void ecs_transform_lookup(const ecs_transform *t, const ecs_entity *es,
                          uint32_t *out, size_t n);

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
** all its descendants'. @return ECS_ERR_DEAD, ECS_ERR_MISSING,
** ECS_ERR_NOT_FINITE, ECS_ERR_ZERO_ROTATION; never allocate.
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
** written (duplicates: the last one wins).
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
** @return ECS_ERR_DEAD (child or parent not alive), ECS_ERR_MISSING (either
**         has no transform), ECS_ERR_CYCLE (parent is child or below it),
**         ECS_ERR_KEEP_WORLD (keep_world impossible: see
**         ecs_transform_keep_world_error). Checking for a cycle costs the
**         smaller of the parent's depth and the child's subtree size
**         (nothing for a childless child).
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
** Destroy e and every live descendant as entities (ecs_destroy); their
** rows go at the next gc. Never allocates.
** @return the number of entities destroyed (0 if e has no transform).
*/
size_t ecs_transform_destroy_tree(ecs_transform *t, ecs_entity e);

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
