/*
** transform_private.h -- what the transform manager's files share and
** nobody else sees: the manager's record (struct ecs_transform), the
** small helpers every one of them uses, and the few functions one file
** defines for the others. Included by src/transform*.c only.
**
** The files, one concept each (transform.h is the contract):
**   transform.c            storage: rows, links, add and remove, the
**                          per-entity getters and setters, gc, sort
**   transform_hierarchy.c  parenting: set_parent (cycles, keep_world),
**                          the family readers, destroy_tree
**   transform_propagate.c  world matrices: the propagate walk, batches
**                          and the bulk setters
**   transform_math.c       decomposition, inverse, validation of locals
**   transform_hooks.c      the manager-class hooks: gc, purge, free,
**                          check, has, clear, stats, schema, save, load
**
** The row lookups and repair are here, static inline, because every file
** needs them and the bulk setters run them per row. The forward product
** (TRS to matrix, compose) is not: it lives with the walk that runs it per
** row (transform_propagate.c), static there so that the walk calls it as
** directly as before the split, and the other files, which need it once
** per call (add, save, load, keep_world), reach it through ecsi_ wrappers.
**
** Layer: managers, above entity and below query (layers: alloc.h).
** Includes sparse.h and transform.h.
*/
#ifndef ECS_TRANSFORM_PRIVATE_H
#define ECS_TRANSFORM_PRIVATE_H

#include <math.h>

#include "component.h"
#include "ecs_private.h"
#include "sparse.h"
#include "transform.h"

#define NONE ECSI_NONE

struct ecs_transform {
  ecs_world *w;
  uint32_t n, cap;          /* rows [0, n) in use; buffer holds cap + 1 */
  void *buf;
  size_t buf_size;
  double (*world)[16];
  ecs_component *c;         /* the locals and world positions, row for row */
  const ecs_transform *of;  /* a twin: the manager it stands in for */
  ecs_entity *entity;
  uint32_t *parent, *first_child, *next_sibling, *prev_sibling;
  uint32_t *mark;           /* batch propagation stamps */
  uint32_t epoch;           /* last stamp used */
  uint32_t gc_cursor;
  bool parent_first;
  ecsi_sparse map;          /* entity index -> row */
};

/* {====================================================================
** Internal functions, by the file that defines them
** ===================================================================== */

/* transform.c: the rows and links; the component of the locals */
ecs_err ecsi_transform_columns_new(ecs_world *w, ecs_transform *t);
ecs_err ecsi_transform_reserve_rows(ecs_transform *t, uint32_t need);
void ecsi_transform_link_row(ecs_transform *t, uint32_t c, uint32_t p);
void ecsi_transform_unlink_row(ecs_transform *t, uint32_t c);
void ecsi_transform_swap_rows(ecs_transform *t, uint32_t a, uint32_t b);
void ecsi_transform_orphan_row(ecs_transform *t, uint32_t c);

/* transform_math.c */
bool ecsi_transform_relative_to(const double *parent, const double *world,
                                double *out);
bool ecsi_transform_decompose(const double *m, ecs_trs *out);
ecs_err ecsi_transform_clean_trs(const ecs_trs *in, ecs_trs *out);
/* A rotation's length as ecsi_transform_clean_trs computes it (this sum,
** this order), and whether clean_trs would give l back unchanged: every
** number finite, a rotation of length exactly 1 (divided by 1). Inline:
** a bulk write's clean pass asks it of every written row. */
static inline double ecsi_rotation_length(const double q[4]) {
  double n = 0;
  for (int i = 0; i < 4; i++) n += q[i] * q[i];
  return sqrt(n);
}

static inline bool ecsi_transform_trs_is_clean(const ecs_trs *l) {
  for (int i = 0; i < 3; i++)
    if (!isfinite(l->position[i]) || !isfinite(l->scale[i])) return false;
  for (int i = 0; i < 4; i++)
    if (!isfinite(l->rotation[i])) return false;
  return ecsi_rotation_length(l->rotation) == 1.0;
}

/* transform_propagate.c: the one formula for a world matrix, and the walk
** that applies it to a subtree (wrappers of its static functions) */
void ecsi_transform_trs_matrix(const ecs_trs *l, double m[16]);
void ecsi_transform_mul_affine(const double *a, const double *b,
                               double *out);
void ecsi_transform_compose(const double *pw, const ecs_trs *l,
                            double *out);
void ecsi_transform_propagate(ecs_transform *t, uint32_t root);

/* transform_hooks.c: the class, which ecs_transform_new registers */
extern const ecs_manager_class ecsi_transform_class;

/* transform_propagate.c: what bulk writes to the columns trigger */
extern const ecs_owner ecsi_transform_owner;

/* }==================================================================== */

/* {====================================================================
** The columns: the owned component "transform" (component.h, "Owned components") holds
** each row's local transform and world position, row for row with the
** manager's own rows, so that queries and every bulk path use them
** ===================================================================== */

enum {
  TC_PX, TC_PY, TC_PZ, TC_QX, TC_QY, TC_QZ, TC_QW, TC_SX, TC_SY, TC_SZ,
  TC_WX, TC_WY, TC_WZ, TC_FIELDS
};

typedef struct trs_cols {
  double *v[TC_FIELDS];
  uint32_t *changed; /* the rows' change stamps, or NULL */
  uint32_t now;
} trs_cols;

/* The column bases, valid until the component's rows next grow or move. */
static inline void trs_cols_of(const ecs_transform *t, trs_cols *k) {
  for (int f = 0; f < TC_FIELDS; f++) k->v[f] = ecs_owned_f64(t->c, (uint32_t)f);
  k->changed = ecs_owned_changed(t->w, t->c, &k->now);
}

static inline void trs_load(const trs_cols *k, uint32_t i, ecs_trs *l) {
  for (int f = 0; f < 3; f++) l->position[f] = k->v[TC_PX + f][i];
  for (int f = 0; f < 4; f++) l->rotation[f] = k->v[TC_QX + f][i];
  for (int f = 0; f < 3; f++) l->scale[f] = k->v[TC_SX + f][i];
}

static inline void trs_store(const trs_cols *k, uint32_t i, const ecs_trs *l) {
  if (k->changed != NULL) k->changed[i] = k->now;
  for (int f = 0; f < 3; f++) k->v[TC_PX + f][i] = l->position[f];
  for (int f = 0; f < 4; f++) k->v[TC_QX + f][i] = l->rotation[f];
  for (int f = 0; f < 3; f++) k->v[TC_SX + f][i] = l->scale[f];
}

/* Row i's stored local / write it (one row: the bases looked up here). */
static inline void get_local_row(const ecs_transform *t, uint32_t i,
                                 ecs_trs *l) {
  trs_cols k;
  trs_cols_of(t, &k);
  trs_load(&k, i, l);
}

static inline void put_local_row(ecs_transform *t, uint32_t i,
                                 const ecs_trs *l) {
  trs_cols k;
  trs_cols_of(t, &k);
  trs_store(&k, i, l);
}

/* Row i's world position columns from its world matrix. */
static inline void put_world_row(ecs_transform *t, uint32_t i) {
  for (int f = 0; f < 3; f++)
    ecs_owned_f64(t->c, (uint32_t)(TC_WX + f))[i] = t->world[i][12 + f];
}

/* }==================================================================== */

/* {====================================================================
** Rows: lookups, notification, repair (inline: used per row)
** ===================================================================== */

static inline bool row_alive(const ecs_transform *t, uint32_t i) {
  return ecs_alive(t->w, t->entity[i]);
}

/* @return e's row or NONE; checks liveness and the generation. */
static inline uint32_t row_of(const ecs_transform *t, ecs_entity e) {
  uint32_t i;
  if (!ecs_alive(t->w, e)) return NONE;
  i = ecsi_sparse_get(&t->map, ecs_entity_index(e));
  if (i == NONE || t->entity[i] != e) return NONE;
  return i;
}

/* e's row, or why there is none (ECS_ERR_DEAD, ECS_ERR_MISSING). */
static inline ecs_err find_row(const ecs_transform *t, ecs_entity e,
                               uint32_t *i) {
  if (!ecs_alive(t->w, e)) return ECS_ERR_DEAD;
  *i = row_of(t, e);
  return *i == NONE ? ECS_ERR_MISSING : ECS_ERR_OK;
}

/*
** Report event on e to the listeners (ecs.h, "Listeners"). Called last in
** every write (first in remove): a listener may change the world, add,
** remove or destroy anything, which moves rows, so nothing read before
** the call is used after it. @return the first listener's error.
*/
static inline ecs_err notify(ecs_transform *t, ecs_entity e, ecs_event event) {
  return ecs_manager_notify(t->w, t, e, event);
}

/* Before writing to live row i: if its parent died, orphan it for real. */
static inline void repair(ecs_transform *t, uint32_t i) {
  uint32_t p = t->parent[i];
  if (p != NONE && !row_alive(t, p)) ecsi_transform_orphan_row(t, i);
}

/* }==================================================================== */

static inline bool all_finite(const double *v, int n) {
  for (int k = 0; k < n; k++)
    if (!isfinite(v[k])) return false;
  return true;
}

/* transform.c: the barrier's ENTITY_DIED (its subscriber while it lives). */
int ecsi_transform_died(ecs_world *w, void *self, const ecsi_change *ch);

#endif
