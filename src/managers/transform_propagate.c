/*
** transform_propagate.c -- world matrices are always current (transform.h):
** every write recomputes the written row's world matrix and those of its
** live descendants at once, here.
**
** propagate walks a subtree without a stack: down through first_child,
** across through next_sibling, back up through parent; after
** ecs_transform_sort every subtree is contiguous, so the walk reads memory
** forward. The bulk setters (ecs_transform_set_locals, _set_positions)
** write every row of a batch first, then propagate once from each written
** row that no written ancestor covers (stamps in the mark column tell),
** then notify each entity once.
**
** This is the manager's hot path, so the product it computes per row
** (trs_matrix, mul_affine, compose: column-major 4x4 doubles, affine) is
** defined here, static, and the row checks are inline in
** transform_private.h: the walk calls nothing in another file, nor any
** function through the PLT, whatever the build's symbol visibility. The
** other files reach the product and the walk through the wrappers at the
** end, once per call.
**
** Layer: managers (layers: alloc.h).
*/
#include <float.h>
#include <math.h>

#include "transform_private.h"

/* {====================================================================
** The product: column-major 4x4 doubles, affine (last row 0 0 0 1)
** ===================================================================== */

/* M = T(p) R(q) S(s) */
static inline void trs_matrix(const ecs_trs *l, double m[16]) {
  double x = l->rotation[0], y = l->rotation[1], z = l->rotation[2];
  double w = l->rotation[3];
  double sx = l->scale[0], sy = l->scale[1], sz = l->scale[2];
  double xx = x * x, yy = y * y, zz = z * z;
  double xy = x * y, xz = x * z, yz = y * z, xw = x * w, yw = y * w, zw = z * w;
  m[0] = (1 - 2 * (yy + zz)) * sx;
  m[1] = 2 * (xy + zw) * sx;
  m[2] = 2 * (xz - yw) * sx;
  m[3] = 0;
  m[4] = 2 * (xy - zw) * sy;
  m[5] = (1 - 2 * (xx + zz)) * sy;
  m[6] = 2 * (yz + xw) * sy;
  m[7] = 0;
  m[8] = 2 * (xz + yw) * sz;
  m[9] = 2 * (yz - xw) * sz;
  m[10] = (1 - 2 * (xx + yy)) * sz;
  m[11] = 0;
  m[12] = l->position[0];
  m[13] = l->position[1];
  m[14] = l->position[2];
  m[15] = 1;
}

/*
** out = a * b for affine a, b; out may not alias a or b. b's last row is
** 0 0 0 1, so a's translation enters the last column only: the terms a
** product of full 4x4s would add, a[12 + r] * 0, are left out (they
** change nothing but the sign of a zero, or give NaN for an infinite
** translation).
*/
static inline void mul_affine(const double *a, const double *b, double *out) {
  for (int c = 0; c < 4; c++) {
    double b0 = b[c * 4], b1 = b[c * 4 + 1], b2 = b[c * 4 + 2];
    double t = c == 3 ? 1.0 : 0.0;
    for (int r = 0; r < 3; r++) {
      double v = a[r] * b0 + a[4 + r] * b1 + a[8 + r] * b2;
      out[c * 4 + r] = c == 3 ? v + a[12 + r] : v;
    }
    out[c * 4 + 3] = t;
  }
}

/*
** out = pw * TRS(l), or TRS(l) for a root (pw NULL). The one formula for a
** world matrix: propagation, save (which tells whether a stored world is
** this product) and load (which recomputes it) share it, so a world that
** was this product comes back bit for bit.
*/
static inline void compose(const double *pw, const ecs_trs *l, double *out) {
  if (pw == NULL) {
    trs_matrix(l, out);
  } else {
    double m[16];
    trs_matrix(l, m);
    mul_affine(pw, m, out);
  }
}

/* }==================================================================== */

/* {====================================================================
** Propagation
** ===================================================================== */

/*
** world[i] = parent world * local matrix (the parent's world is current),
** and the world position columns from it. k: the column bases.
*/
static void update_world(ecs_transform *t, const trs_cols *k, uint32_t i) {
  uint32_t p = t->parent[i];
  ecs_trs l;
  double *m = t->world[i];
  trs_load(k, i, &l);
  compose(p == NONE ? NULL : t->world[p], &l, m);
  k->v[TC_WX][i] = m[12];
  k->v[TC_WY][i] = m[13];
  k->v[TC_WZ][i] = m[14];
  if (k->changed != NULL) k->changed[i] = k->now; /* its world moved */
}

/*
** Recompute root's world and, depth first, every live descendant's. The
** walk is stackless: down through first_child, across through
** next_sibling, back up through parent until a sibling is found or root is
** reached. Dead nodes are not entered (see transform.c's file comment).
*/
static void propagate_with(ecs_transform *t, const trs_cols *k, uint32_t root) {
  uint32_t c;
  update_world(t, k, root);
  c = t->first_child[root];
  while (c != NONE) {
    if (row_alive(t, c)) {
      update_world(t, k, c);
      if (t->first_child[c] != NONE) {
        c = t->first_child[c];
        continue;
      }
    }
    while (t->next_sibling[c] == NONE) {
      c = t->parent[c];
      if (c == root) return;
    }
    c = t->next_sibling[c];
  }
}

/* One subtree: the column bases looked up once for the walk. */
static void propagate(ecs_transform *t, uint32_t root) {
  trs_cols k;
  trs_cols_of(t, &k);
  propagate_with(t, &k, root);
}

/* Has the world any listener? Batches gather entities only then. */
static bool listening(const ecs_transform *t) {
  return ((const ecs_world_head *)(const void *)t->w)->listeners != 0;
}

/*
** k unused mark stamps; @return the first. Stamps only grow, so no row
** carries one yet; near the top of uint32 every mark is reset to 0 first.
*/
static uint32_t fresh_stamps(ecs_transform *t, uint32_t k) {
  uint32_t base;
  if (t->epoch > UINT32_MAX - k) {
    for (uint32_t i = 0; i < t->n; i++) t->mark[i] = 0;
    t->epoch = 0;
  }
  base = t->epoch + 1u;
  t->epoch += k;
  return base;
}

/*
** Propagate once after a batch: stamp every written row with a fresh
** epoch; a row is propagated only if none of its (live-linked) ancestors
** is stamped, since that ancestor's walk covers it; each propagated row is
** restamped epoch + 1 so duplicates in the batch are walked once.
*/
static void propagate_batch(ecs_transform *t, const uint32_t *inst,
                            uint32_t first, size_t n) {
  uint32_t base = fresh_stamps(t, 2u);
  trs_cols cols; /* the bases once for the batch: walks move no row */
  trs_cols_of(t, &cols);
#define ROW(k) (inst != NULL ? inst[k] : first + (uint32_t)(k))
  for (size_t k = 0; k < n; k++) t->mark[ROW(k)] = base;
  for (size_t k = 0; k < n; k++) {
    uint32_t i = ROW(k), a;
    bool covered = false;
    if (t->mark[i] != base) continue; /* already walked */
    for (a = t->parent[i]; a != NONE && row_alive(t, a); a = t->parent[a])
      if (t->mark[a] >= base) {
        covered = true;
        break;
      }
    if (covered) continue;
    t->mark[i] = base + 1u;
    propagate_with(t, &cols, i);
  }
#undef ROW
}

/*
** A batch's notifications (SET once per entity written, after the whole
** batch) need the entities' handles, read after the writes but before
** the first listener runs, since a listener may move rows. With no
** listener in the world nothing is gathered; otherwise the list is
** allocated here, before anything is written, so that running out of
** memory leaves the batch undone (all or nothing).
*/
static ecs_err batch_begin(ecs_transform *t, size_t n, ecs_entity **es) {
  *es = NULL;
  if (n == 0 || !listening(t)) return ECS_ERR_OK;
  if (n > SIZE_MAX / sizeof **es) return ECS_ERR_NOMEM;
  *es = (ecs_entity *)ecsi_realloc(t->w, NULL, 0, n * sizeof **es);
  return *es == NULL ? ECS_ERR_NOMEM : ECS_ERR_OK;
}

/*
** SET for each entity of the batch, once (a fresh stamp in the mark
** column tells duplicates apart), in the order of its first row, then es
** is freed. An entity a listener removed or destroyed before its turn is
** skipped. The first error stops the notifications; the batch stands.
*/
static ecs_err batch_notify(ecs_transform *t, const uint32_t *inst, size_t n,
                            ecs_entity *es) {
  size_t m = 0;
  uint32_t s;
  ecs_err err = ECS_ERR_OK;
  if (es == NULL) return ECS_ERR_OK;
  s = fresh_stamps(t, 1u);
  for (size_t k = 0; k < n; k++)
    if (t->mark[inst[k]] != s) {
      t->mark[inst[k]] = s;
      es[m++] = t->entity[inst[k]];
    }
  for (size_t j = 0; j < m && err == ECS_ERR_OK; j++)
    if (row_of(t, es[j]) != NONE) err = notify(t, es[j], ECS_EVENT_SET);
  ecsi_free(t->w, es, n * sizeof *es);
  return err;
}

/* Instances given to the bulk setters: rows in use, of live entities. */
static bool valid_rows(const ecs_transform *t, const uint32_t *inst, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (inst[k] >= t->n || !row_alive(t, inst[k])) return false;
  return true;
}

ecs_err ecs_transform_set_locals(ecs_transform *t, const uint32_t *inst,
                                 const ecs_trs *locals, size_t n) {
  ecs_trs tmp;
  ecs_entity *es;
  ecs_err err;
  if (!valid_rows(t, inst, n)) return ECS_ERR_BAD_ROWS;
  for (size_t k = 0; k < n; k++)
    if ((err = ecsi_transform_clean_trs(&locals[k], &tmp)) != ECS_ERR_OK)
      return err;
  err = batch_begin(t, n, &es);
  if (err != ECS_ERR_OK) return err;
  for (size_t k = 0; k < n; k++) {
    repair(t, inst[k]);
    (void)ecsi_transform_clean_trs(&locals[k], &tmp);
    put_local_row(t, inst[k], &tmp);
  }
  propagate_batch(t, inst, 0, n);
  return batch_notify(t, inst, n, es);
}

ecs_err ecs_transform_set_positions(ecs_transform *t, const uint32_t *inst,
                                    const double *xyz, size_t n) {
  trs_cols c;
  ecs_entity *es;
  ecs_err err;
  if (!valid_rows(t, inst, n)) return ECS_ERR_BAD_ROWS;
  for (size_t k = 0; k < 3 * n; k++)
    if (!isfinite(xyz[k])) return ECS_ERR_NOT_FINITE;
  err = batch_begin(t, n, &es);
  if (err != ECS_ERR_OK) return err;
  trs_cols_of(t, &c); /* writes move no row */
  for (size_t k = 0; k < n; k++) {
    uint32_t i = inst[k];
    repair(t, i);
    if (c.changed != NULL) c.changed[i] = c.now;
    c.v[TC_PX][i] = xyz[3 * k];
    c.v[TC_PY][i] = xyz[3 * k + 1];
    c.v[TC_PZ][i] = xyz[3 * k + 2];
  }
  propagate_batch(t, inst, 0, n);
  return batch_notify(t, inst, n, es);
}

/* {====================================================================
** Bulk writes through the columns: q:apply, expression and native
** systems, q:columns (component.h, "Owned components": every one of them touches the
** rows it wrote, and the touch brings them here)
** ===================================================================== */

/*
** What a bulk path may have stored, made a valid local: NaN becomes 0 and
** an infinity the largest finite double of its sign (position and scale),
** and the rotation is normalized, a zero or non-finite one becoming the
** identity. The per-entity setters refuse such values instead; a bulk
** write has already happened when the manager hears of it.
*/
static double finite_or(double v) {
  if (isnan(v)) return 0.0;
  if (isinf(v)) return v > 0 ? DBL_MAX : -DBL_MAX;
  return v;
}

static void clean_row(const trs_cols *k, uint32_t i) {
  ecs_trs l;
  bool bad_rotation = false;
  trs_load(k, i, &l);
  /* the usual row, already clean: nothing to change, nothing to store */
  if (ecsi_transform_trs_is_clean(&l)) return;
  for (int f = 0; f < 3; f++) {
    l.position[f] = finite_or(l.position[f]);
    l.scale[f] = finite_or(l.scale[f]);
  }
  for (int f = 0; f < 4; f++) bad_rotation |= !isfinite(l.rotation[f]);
  if (bad_rotation) {
    l.rotation[0] = l.rotation[1] = l.rotation[2] = 0.0;
    l.rotation[3] = 1.0;
  }
  /* the setters' normalization, bit for bit; only a zero rotation is left
  ** for it to refuse */
  if (ecsi_transform_clean_trs(&l, &l) != ECS_ERR_OK) {
    l.rotation[0] = l.rotation[1] = l.rotation[2] = 0.0;
    l.rotation[3] = 1.0;
  }
  trs_store(k, i, &l);
}

/*
** The rows written (rows[0 .. n), or first .. first + n): each live one
** cleaned and made a real root if its parent died (the write is its new
** local, relative to nothing), then one batch propagation. No SET is
** notified: like every bulk write to a component, these tell no listener.
*/
static void columns_written(ecs_world *w, void *ud, ecs_component *c,
                            const uint32_t *rows, uint32_t first, size_t n) {
  ecs_transform *t = (ecs_transform *)ud;
  trs_cols k;
  (void)w;
  (void)c;
  trs_cols_of(t, &k);
  for (size_t j = 0; j < n; j++) {
    uint32_t i = rows != NULL ? rows[j] : first + (uint32_t)j, p;
    if (i >= t->n) continue;
    clean_row(&k, i);
    p = t->parent[i];
    if (p != NONE && !row_alive(t, p)) ecsi_transform_unlink_row(t, i);
  }
  if (rows == NULL) {
    if (first < t->n)
      propagate_batch(t, NULL, first, first + n > t->n ? t->n - first : n);
  } else {
    for (size_t j = 0; j < n; j++) /* rows past the end: none in practice */
      if (rows[j] >= t->n) return;
    propagate_batch(t, rows, 0, n);
  }
}

const ecs_owner ecsi_transform_owner = {columns_written};

/* }==================================================================== */

/* {====================================================================
** For the other transform files: wrappers, so that the calls above
** stay direct calls of static functions in every build (where symbols
** are not hidden, as in the rockspec's build of ecs.core, a global
** function is called through the PLT even from its own file, and gcc
** does not inline it there)
** ===================================================================== */

void ecsi_transform_trs_matrix(const ecs_trs *l, double m[16]) {
  trs_matrix(l, m);
}

void ecsi_transform_mul_affine(const double *a, const double *b,
                               double *out) {
  mul_affine(a, b, out);
}

void ecsi_transform_compose(const double *pw, const ecs_trs *l,
                            double *out) {
  compose(pw, l, out);
}

void ecsi_transform_propagate(ecs_transform *t, uint32_t root) {
  propagate(t, root);
}

/* }==================================================================== */
