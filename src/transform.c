/*
** transform.c -- the transform manager (Bitsquid part 3). See transform.h
** for the contract; this file explains the mechanics.
**
** Storage: one buffer of cap + 1 rows holding the columns world, local,
** entity, parent, first_child, next_sibling, prev_sibling, mark. Row cap is
** a scratch row used to swap two rows through move_row.
**
** Links: children of a node form a list first_child -> next_sibling; the
** first child's prev_sibling is the LAST child (so appending is O(1)); the
** last child's next_sibling is NONE. Roots have prev = next = NONE.
**
** Dead entities stay linked until gc, but are skipped: propagation does not
** descend into a dead node (its children became roots with their world
** kept, so nothing above may move them), and readers treat a dead parent as
** no parent. Before any write to a node whose parent is dead, the node is
** orphaned for real (orphan_row): unlinked, local = decompose(world).
** Because set_parent repairs the ancestor chain of the new parent that way
** whenever the child could be physically above it (may_be_below), the
** physical links stay acyclic even through dead rows.
*/
#include <float.h>
#include <math.h>
#include <string.h>

#include "sparse.h"
#include "transform.h"

#define NONE ECSI_NONE
#define MIN_ROWS 16u

struct ecs_transform {
  ecs_world *w;
  uint32_t n, cap;          /* rows [0, n) in use; buffer holds cap + 1 */
  void *buf;
  size_t buf_size;
  double (*world)[16];
  ecs_trs *local;
  ecs_entity *entity;
  uint32_t *parent, *first_child, *next_sibling, *prev_sibling;
  uint32_t *mark;           /* batch propagation stamps */
  uint32_t epoch;           /* last stamp used */
  uint32_t gc_cursor;
  bool parent_first;
  ecsi_sparse map;          /* entity index -> row */
};

/* {====================================================================
** Math: column-major 4x4 doubles, affine (last row 0 0 0 1)
** ===================================================================== */

/* M = T(p) R(q) S(s) */
static void trs_matrix(const ecs_trs *l, double m[16]) {
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

/* out = a * b for affine a, b; out may not alias a or b */
static void mul_affine(const double *a, const double *b, double *out) {
  for (int c = 0; c < 4; c++) {
    double b0 = b[c * 4], b1 = b[c * 4 + 1], b2 = b[c * 4 + 2];
    double b3 = c == 3 ? 1.0 : 0.0;
    for (int r = 0; r < 3; r++)
      out[c * 4 + r] = a[r] * b0 + a[4 + r] * b1 + a[8 + r] * b2 + a[12 + r] * b3;
    out[c * 4 + 3] = b3;
  }
}

/*
** Length of (a, b, c). Components outside [1e-150, 1e150] are scaled by
** the largest first, so the squares neither overflow nor underflow; in
** that range the plain formula (bit for bit the old result). Callers pass
** finite components (a NaN may be missed by the scaling).
*/
static double norm3(double a, double b, double c) {
  double k = fabs(a);
  if (fabs(b) > k) k = fabs(b);
  if (fabs(c) > k) k = fabs(c);
  if (k > 1e-150 && k < 1e150) return sqrt(a * a + b * b + c * c);
  if (!(k > 0) || !isfinite(k)) return k;
  a /= k;
  b /= k;
  c /= k;
  return k * sqrt(a * a + b * b + c * c);
}

/*
** Inverse of the 3x3 block of an affine matrix with finite entries, into
** out[16] (column-major, translation 0). A = U D with D the column lengths
** and U unit columns, so inv(A) = inv(D) inv(U); inv(U) by cofactors
** (|det U| <= 1, cofactors at most 1 in size), which stays in range for
** scales far from 1 where the cofactors of A itself would underflow or
** overflow (a parent scaled by 1e-100 is invertible). @return false when A
** is singular: a zero column, det U = 0, or an inverse that does not fit
** in doubles.
*/
static bool inverse3(const double *m, double *out) {
  double n[3], u[9], a, b, c, d, e, f, g, h, i, A, B, C, det, s;
  for (int col = 0; col < 3; col++) {
    n[col] = norm3(m[col * 4], m[col * 4 + 1], m[col * 4 + 2]);
    if (!(n[col] > 0) || !isfinite(n[col])) return false;
    for (int r = 0; r < 3; r++) u[col * 3 + r] = m[col * 4 + r] / n[col];
  }
  a = u[0], b = u[3], c = u[6], d = u[1], e = u[4], f = u[7];
  g = u[2], h = u[5], i = u[8];
  A = e * i - f * h, B = -(d * i - f * g), C = d * h - e * g;
  det = a * A + b * B + c * C;
  if (!(fabs(det) > 0)) return false;
  s = 1.0 / det;
  out[0] = A * s;
  out[1] = B * s;
  out[2] = C * s;
  out[4] = -(b * i - c * h) * s;
  out[5] = (a * i - c * g) * s;
  out[6] = -(a * h - b * g) * s;
  out[8] = (b * f - c * e) * s;
  out[9] = -(a * f - c * d) * s;
  out[10] = (a * e - b * d) * s;
  out[3] = out[7] = out[11] = out[12] = out[13] = out[14] = 0;
  out[15] = 1;
  for (int col = 0; col < 3; col++)
    for (int r = 0; r < 3; r++) {
      out[col * 4 + r] /= n[r]; /* row r of inv(U) over n[r] */
      if (!isfinite(out[col * 4 + r])) return false;
    }
  return true;
}

/*
** out = inverse(parent) * world: the local transform that keeps world
** under parent, with the translation taken as inv(A) (world_t - parent_t)
** so that no separate inverse translation can overflow. Entries may come
** out non-finite (huge values); the caller checks. @return false when the
** parent's 3x3 block is singular (see inverse3).
*/
static bool relative_to(const double *parent, const double *world,
                        double *out) {
  double inv[16], d[16];
  if (!inverse3(parent, inv)) return false;
  memcpy(d, world, sizeof d);
  for (int r = 0; r < 3; r++) d[12 + r] = world[12 + r] - parent[12 + r];
  mul_affine(inv, d, out);
  return true;
}

static bool all_finite(const double *v, int n) {
  for (int k = 0; k < n; k++)
    if (!isfinite(v[k])) return false;
  return true;
}

/* Unit quaternion of an orthonormal rotation matrix (Shepperd's method). */
static void quat_from_rot(const double r[9], double q[4]) {
  /* r[c * 3 + row] */
  double m00 = r[0], m10 = r[1], m20 = r[2], m01 = r[3], m11 = r[4];
  double m21 = r[5], m02 = r[6], m12 = r[7], m22 = r[8];
  double tr = m00 + m11 + m22, s, n;
  if (tr > 0) {
    s = sqrt(tr + 1.0) * 2;
    q[3] = 0.25 * s;
    q[0] = (m21 - m12) / s;
    q[1] = (m02 - m20) / s;
    q[2] = (m10 - m01) / s;
  } else if (m00 > m11 && m00 > m22) {
    s = sqrt(1.0 + m00 - m11 - m22) * 2;
    q[3] = (m21 - m12) / s;
    q[0] = 0.25 * s;
    q[1] = (m01 + m10) / s;
    q[2] = (m02 + m20) / s;
  } else if (m11 > m22) {
    s = sqrt(1.0 + m11 - m00 - m22) * 2;
    q[3] = (m02 - m20) / s;
    q[0] = (m01 + m10) / s;
    q[1] = 0.25 * s;
    q[2] = (m12 + m21) / s;
  } else {
    s = sqrt(1.0 + m22 - m00 - m11) * 2;
    q[3] = (m10 - m01) / s;
    q[0] = (m02 + m20) / s;
    q[1] = (m12 + m21) / s;
    q[2] = 0.25 * s;
  }
  n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (!(n > 0) || !isfinite(n)) {
    q[0] = q[1] = q[2] = 0;
    q[3] = 1;
    return;
  }
  for (int k = 0; k < 4; k++) q[k] /= n;
}

/*
** TRS decomposition of an affine matrix: position = column 3, scale =
** column lengths (x negated when the basis is left-handed), rotation from
** the normalized columns. Exact for matrices built from TRS chains without
** shear; with shear (non-uniform scale under a rotated parent) the
** rotation is that of the normalized columns, an approximation. A column
** of length 0 gives rotation identity.
**
** The result is always finite with a unit rotation (locals must be): a
** world matrix that overflowed (finite locals can multiply past DBL_MAX)
** decomposes with an infinite position component clamped to +-DBL_MAX, a
** NaN one to 0, a column that is not finite or whose length overflows to
** scale DBL_MAX, and rotation identity. @return false when it had to do
** that (m not exactly representable as a finite TRS).
*/
static bool decompose(const double *m, ecs_trs *out) {
  double s[3], r[9], det;
  bool ok = true, exact = true;
  for (int k = 0; k < 3; k++) {
    double v = m[12 + k];
    if (!isfinite(v)) {
      exact = false;
      v = v > 0 ? DBL_MAX : v < 0 ? -DBL_MAX : 0.0;
    }
    out->position[k] = v;
  }
  for (int c = 0; c < 3; c++) {
    if (!all_finite(m + c * 4, 3)) {
      s[c] = HUGE_VAL;
    } else {
      s[c] = norm3(m[c * 4], m[c * 4 + 1], m[c * 4 + 2]);
      if (!(s[c] > 1e-300)) ok = false;
    }
    if (!isfinite(s[c])) {
      s[c] = DBL_MAX;
      exact = ok = false;
    }
  }
  if (ok) {
    for (int c = 0; c < 3; c++)
      for (int k = 0; k < 3; k++) r[c * 3 + k] = m[c * 4 + k] / s[c];
    det = r[0] * (r[4] * r[8] - r[7] * r[5]) -
          r[3] * (r[1] * r[8] - r[7] * r[2]) +
          r[6] * (r[1] * r[5] - r[4] * r[2]);
    if (det < 0) {
      s[0] = -s[0];
      for (int k = 0; k < 3; k++) r[k] = -r[k];
    }
  } else if (exact) { /* a column of length (about) 0: the sign of det(m) */
    det = m[0] * (m[5] * m[10] - m[9] * m[6]) -
          m[4] * (m[1] * m[10] - m[9] * m[2]) +
          m[8] * (m[1] * m[6] - m[5] * m[2]);
    if (det < 0) s[0] = -s[0];
  }
  out->scale[0] = s[0];
  out->scale[1] = s[1];
  out->scale[2] = s[2];
  if (!ok) {
    out->rotation[0] = out->rotation[1] = out->rotation[2] = 0;
    out->rotation[3] = 1;
    return exact;
  }
  quat_from_rot(r, out->rotation);
  return exact;
}

/*
** Validate and normalize a local transform: every number finite, the
** quaternion non-zero. A quaternion whose largest component is outside
** [1e-150, 1e150] is divided by that component first, so that the sum of
** squares neither overflows ((1e200, 1e200, 0, 0) is a fine rotation) nor
** underflows. @return ECS_ERR_OK, ECS_ERR_NOT_FINITE (any number) or
** ECS_ERR_ZERO_ROTATION (out untouched on error).
*/
static ecs_err clean_trs(const ecs_trs *in, ecs_trs *out) {
  double n = 0, k = 0;
  ecs_trs v = *in;
  for (int i = 0; i < 3; i++)
    if (!isfinite(v.position[i]) || !isfinite(v.scale[i]))
      return ECS_ERR_NOT_FINITE;
  for (int i = 0; i < 4; i++) {
    if (!isfinite(v.rotation[i])) return ECS_ERR_NOT_FINITE;
    if (fabs(v.rotation[i]) > k) k = fabs(v.rotation[i]);
  }
  if (!(k > 0)) return ECS_ERR_ZERO_ROTATION; /* (0, 0, 0, 0) */
  if (!(k > 1e-150 && k < 1e150))
    for (int i = 0; i < 4; i++) v.rotation[i] /= k;
  for (int i = 0; i < 4; i++) n += v.rotation[i] * v.rotation[i];
  n = sqrt(n);
  for (int i = 0; i < 4; i++) v.rotation[i] /= n;
  *out = v;
  return ECS_ERR_OK;
}

static const ecs_trs identity = {{0, 0, 0}, {0, 0, 0, 1}, {1, 1, 1}};

/* }==================================================================== */

/* {====================================================================
** Rows and links
** ===================================================================== */

static bool row_alive(const ecs_transform *t, uint32_t i) {
  return ecs_alive(t->w, t->entity[i]);
}

/* @return e's row or NONE; checks liveness and the generation. */
static uint32_t row_of(const ecs_transform *t, ecs_entity e) {
  uint32_t i;
  if (!ecs_alive(t->w, e)) return NONE;
  i = ecsi_sparse_get(&t->map, ecs_entity_index(e));
  if (i == NONE || t->entity[i] != e) return NONE;
  return i;
}

/* e's row, or why there is none (defined with the accessors). */
static ecs_err find_row(const ecs_transform *t, ecs_entity e, uint32_t *i);

/*
** Report event on e to the listeners (ecs.h, "Listeners"). Called last in
** every write (first in remove): a listener may change the world, add,
** remove or destroy anything, which moves rows, so nothing read before
** the call is used after it. @return the first listener's error.
*/
static ecs_err notify(ecs_transform *t, ecs_entity e, ecs_event event) {
  return ecs_manager_notify(t->w, t, e, event);
}

/* Has the world any listener? Batches gather entities only then. */
static bool listening(const ecs_transform *t) {
  return ((const ecs_world_head *)(const void *)t->w)->listeners != 0;
}

/* Byte size of a buffer of rows rows; column order keeps doubles aligned. */
static size_t row_bytes(void) {
  return sizeof(double[16]) + sizeof(ecs_trs) + sizeof(ecs_entity) +
         5 * sizeof(uint32_t);
}

static void set_columns(ecs_transform *t, void *buf, uint32_t rows) {
  char *p = (char *)buf;
  t->world = (double (*)[16])(void *)p;
  p += (size_t)rows * sizeof(double[16]);
  t->local = (ecs_trs *)(void *)p;
  p += (size_t)rows * sizeof(ecs_trs);
  t->entity = (ecs_entity *)(void *)p;
  p += (size_t)rows * sizeof(ecs_entity);
  t->parent = (uint32_t *)(void *)p;
  t->first_child = t->parent + rows;
  t->next_sibling = t->first_child + rows;
  t->prev_sibling = t->next_sibling + rows;
  t->mark = t->prev_sibling + rows;
}

/*
** Make room for need rows: a new buffer, each column copied, the old one
** freed. On failure nothing changed.
*/
static ecs_err reserve_rows(ecs_transform *t, uint32_t need) {
  uint32_t ncap = t->cap ? t->cap : MIN_ROWS;
  size_t size;
  void *nb;
  ecs_transform old = *t;
  if (need <= t->cap) return ECS_ERR_OK;
  while (ncap < need) {
    if (ncap > (UINT32_MAX - 2u) / 2u) return ECS_ERR_NOMEM;
    ncap *= 2;
  }
  if ((size_t)ncap + 1u > SIZE_MAX / row_bytes()) return ECS_ERR_NOMEM;
  size = ((size_t)ncap + 1u) * row_bytes();
  nb = ecsi_realloc(t->w, NULL, 0, size);
  if (nb == NULL) return ECS_ERR_NOMEM;
  set_columns(t, nb, ncap + 1u);
  if (old.n > 0) {
    size_t n = old.n;
    memcpy(t->world, old.world, n * sizeof *t->world);
    memcpy(t->local, old.local, n * sizeof *t->local);
    memcpy(t->entity, old.entity, n * sizeof *t->entity);
    memcpy(t->parent, old.parent, n * sizeof(uint32_t));
    memcpy(t->first_child, old.first_child, n * sizeof(uint32_t));
    memcpy(t->next_sibling, old.next_sibling, n * sizeof(uint32_t));
    memcpy(t->prev_sibling, old.prev_sibling, n * sizeof(uint32_t));
    memcpy(t->mark, old.mark, n * sizeof(uint32_t));
  }
  ecsi_free(t->w, old.buf, old.buf_size);
  t->buf = nb;
  t->buf_size = size;
  t->cap = ncap;
  return ECS_ERR_OK;
}

/* Append c to p's children (the first child's prev is the last child). */
static void link_row(ecs_transform *t, uint32_t c, uint32_t p) {
  uint32_t f = t->first_child[p];
  t->parent[c] = p;
  t->next_sibling[c] = NONE;
  if (f == NONE) {
    t->first_child[p] = c;
    t->prev_sibling[c] = c;
  } else {
    uint32_t last = t->prev_sibling[f];
    t->next_sibling[last] = c;
    t->prev_sibling[c] = last;
    t->prev_sibling[f] = c;
  }
}

/* Take c out of its parent's child list; c becomes a root. */
static void unlink_row(ecs_transform *t, uint32_t c) {
  uint32_t p = t->parent[c], f, nx;
  if (p == NONE) return;
  f = t->first_child[p];
  nx = t->next_sibling[c];
  if (f == c) {
    t->first_child[p] = nx;
    if (nx != NONE) t->prev_sibling[nx] = t->prev_sibling[c];
  } else {
    uint32_t pr = t->prev_sibling[c];
    t->next_sibling[pr] = nx;
    if (nx != NONE) t->prev_sibling[nx] = pr;
    else t->prev_sibling[f] = pr; /* c was last */
  }
  t->parent[c] = t->next_sibling[c] = t->prev_sibling[c] = NONE;
}

/*
** Move row s to row d (d's old content is overwritten) and redirect every
** link that pointed at s: the parent's first_child, the neighbours' next
** and prev (including the first child's prev when s is the last child),
** the children's parent, and the map. The links are read from the moved
** row itself, so this works in the middle of a swap through the scratch
** row.
*/
static void move_row(ecs_transform *t, uint32_t s, uint32_t d) {
  uint32_t p, ch, ix;
  memcpy(t->world[d], t->world[s], sizeof t->world[d]);
  t->local[d] = t->local[s];
  t->entity[d] = t->entity[s];
  t->parent[d] = t->parent[s];
  t->first_child[d] = t->first_child[s];
  t->next_sibling[d] = t->next_sibling[s];
  t->prev_sibling[d] = t->prev_sibling[s];
  t->mark[d] = t->mark[s];
  p = t->parent[d];
  if (t->prev_sibling[d] == s) t->prev_sibling[d] = d; /* only child */
  if (p != NONE) {
    if (t->first_child[p] == s) t->first_child[p] = d;
    else t->next_sibling[t->prev_sibling[d]] = d;
    if (t->next_sibling[d] != NONE) {
      t->prev_sibling[t->next_sibling[d]] = d;
    } else {
      uint32_t f = t->first_child[p];
      if (f != d) t->prev_sibling[f] = d;
    }
  }
  for (ch = t->first_child[d]; ch != NONE; ch = t->next_sibling[ch])
    t->parent[ch] = d;
  ix = ecs_entity_index(t->entity[d]);
  if (ecsi_sparse_get(&t->map, ix) == s) ecsi_sparse_set(&t->map, ix, d);
}

static void swap_rows(ecs_transform *t, uint32_t a, uint32_t b) {
  move_row(t, a, t->cap); /* the scratch row */
  move_row(t, b, a);
  move_row(t, t->cap, b);
}

/*
** out = pw * TRS(l), or TRS(l) for a root (pw NULL). The one formula for a
** world matrix: propagation, save (which tells whether a stored world is
** this product) and load (which recomputes it) share it, so a world that
** was this product comes back bit for bit.
*/
static void compose(const double *pw, const ecs_trs *l, double *out) {
  if (pw == NULL) {
    trs_matrix(l, out);
  } else {
    double m[16];
    trs_matrix(l, m);
    mul_affine(pw, m, out);
  }
}

/* world[i] = parent world * local matrix (the parent's world is current) */
static void update_world(ecs_transform *t, uint32_t i) {
  uint32_t p = t->parent[i];
  compose(p == NONE ? NULL : t->world[p], &t->local[i], t->world[i]);
}

/*
** Recompute root's world and, depth first, every live descendant's. The
** walk is stackless: down through first_child, across through
** next_sibling, back up through parent until a sibling is found or root is
** reached. Dead nodes are not entered (see the file comment).
*/
static void propagate(ecs_transform *t, uint32_t root) {
  uint32_t c;
  update_world(t, root);
  c = t->first_child[root];
  while (c != NONE) {
    if (row_alive(t, c)) {
      update_world(t, c);
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

/* Make c a real root: world kept exactly, local = its decomposition. */
static void orphan_row(ecs_transform *t, uint32_t c) {
  decompose(t->world[c], &t->local[c]);
  unlink_row(t, c);
}

/* Before writing to live row i: if its parent died, orphan it for real. */
static void repair(ecs_transform *t, uint32_t i) {
  uint32_t p = t->parent[i];
  if (p != NONE && !row_alive(t, p)) orphan_row(t, i);
}

/* Drop row i: children become roots (world kept), then swap-remove. */
static void drop_row(ecs_transform *t, uint32_t i) {
  uint32_t last = t->n - 1u, ix = ecs_entity_index(t->entity[i]);
  while (t->first_child[i] != NONE) orphan_row(t, t->first_child[i]);
  unlink_row(t, i);
  if (ecsi_sparse_get(&t->map, ix) == i) ecsi_sparse_set(&t->map, ix, NONE);
  if (i != last) move_row(t, last, i);
  t->n--;
}

/* }==================================================================== */

/* {====================================================================
** Public API
** ===================================================================== */

/* The rows as ecsi_lazy_gc sees them: entities, and drop_row. */
static ecs_entity gc_owner(const void *self, uint32_t i) {
  return ((const ecs_transform *)self)->entity[i];
}

static void gc_drop(ecs_world *w, void *self, uint32_t i) {
  (void)w;
  drop_row((ecs_transform *)self, i);
}

static const ecsi_records gc_records = {gc_owner, gc_drop};

/* The managers' one policy (sparse.h); dropped rows' children become
** roots with their world matrix kept (drop_row). */
size_t ecs_transform_gc(ecs_transform *t, size_t budget) {
  return ecsi_lazy_gc(t->w, t, &gc_records, &t->n, &t->gc_cursor, budget);
}

static size_t tr_gc(ecs_world *w, void *self, size_t budget) {
  (void)w;
  return ecs_transform_gc((ecs_transform *)self, budget);
}

/*
** The index's generation wrapped: mark its row's entity purged, so the row
** is dead for good. Links are left alone (like any dead row's): its
** children already read as roots, and it is unlinked by gc or by the next
** add at this index, so a new entity never inherits its parent, children
** or matrices. Nothing moves (ecs_transform_destroy_tree may be walking).
*/
static void tr_purge(ecs_world *w, void *self, uint32_t index) {
  ecs_transform *t = (ecs_transform *)self;
  uint32_t i = ecsi_sparse_get(&t->map, index);
  (void)w;
  if (i != NONE) t->entity[i] = ecs_mark_purged(t->entity[i]);
}

static void tr_free(ecs_world *w, void *self) {
  ecs_transform *t = (ecs_transform *)self;
  if (t == NULL) return;
  ecsi_free(w, t->buf, t->buf_size);
  ecsi_sparse_free(w, &t->map);
  ecsi_free(w, t, sizeof *t);
}

typedef struct check_ud {
  const ecs_transform *t;
} check_ud;

static const char *check_map_entry(const void *ud, uint32_t index,
                                   uint32_t v) {
  const ecs_transform *t = ((const check_ud *)ud)->t;
  if (v >= t->n) return "transform: map points past the rows";
  if (ecs_entity_index(t->entity[v]) != index)
    return "transform: map entry points at another entity's row";
  return NULL;
}

/*
** Invariants: every row is in the map and the map only holds rows; links
** in range and symmetric (each child's parent is the list owner, prev/next
** mirror each other, the first child's prev is the last); every row with a
** parent is in its parent's list (counts agree); roots are not in lists;
** the parent relation is acyclic; locals are finite with unit rotations.
*/
static const char *tr_check(const ecs_world *w, const void *self) {
  const ecs_transform *t = (const ecs_transform *)self;
  uint32_t n = t->n;
  size_t with_parent = 0, listed = 0;
  uint8_t *state;
  void *ud;
  ecs_alloc_fn alloc = ecs_world_allocator(w, &ud);
  const char *bad = NULL;
  check_ud cu;
  if (n > t->cap) return "transform: more rows than capacity";
  for (uint32_t i = 0; i < n; i++) {
    uint32_t p = t->parent[i], f = t->first_child[i], c, count = 0;
    const ecs_trs *l = &t->local[i];
    double qn = 0;
    if (ecsi_sparse_get(&t->map, ecs_entity_index(t->entity[i])) != i)
      return "transform: row missing from the map";
    if (ecs_entity_index(t->entity[i]) == 0) return "transform: null entity row";
    if (!ecs_record_valid(w, t->entity[i]))
      return "transform: row outlived its generation (wrap)";
    if (p != NONE && (p >= n || p == i)) return "transform: bad parent link";
    if (p == NONE && (t->next_sibling[i] != NONE || t->prev_sibling[i] != NONE))
      return "transform: root has sibling links";
    with_parent += p != NONE;
    for (int k = 0; k < 3; k++)
      if (!isfinite(l->position[k]) || !isfinite(l->scale[k]))
        return "transform: non-finite local";
    for (int k = 0; k < 4; k++) qn += l->rotation[k] * l->rotation[k];
    if (!(fabs(qn - 1.0) < 1e-9)) return "transform: rotation not unit";
    if (f == NONE) continue;
    if (f >= n) return "transform: bad first_child link";
    if (t->prev_sibling[f] >= n) return "transform: first child has no last";
    for (c = f; c != NONE; c = t->next_sibling[c]) {
      if (c >= n) return "transform: bad next_sibling link";
      if (t->parent[c] != i) return "transform: child's parent is not the owner";
      if (c != f && t->next_sibling[t->prev_sibling[c]] != c)
        return "transform: prev/next links not symmetric";
      if (t->next_sibling[c] == NONE && t->prev_sibling[f] != c)
        return "transform: first child's prev is not the last child";
      if (++count > n) return "transform: sibling list loops";
    }
    listed += count;
  }
  if (listed != with_parent) return "transform: rows missing from child lists";
  cu.t = t;
  bad = ecsi_sparse_each(&t->map, check_map_entry, &cu);
  if (bad != NULL) return bad;
  /* acyclic: 0 unknown, 1 on the current path, 2 known to reach a root */
  state = n ? (uint8_t *)alloc(ud, NULL, 0, n) : NULL;
  if (state == NULL) {
    for (uint32_t i = 0; i < n && bad == NULL; i++) {
      uint32_t a = i, steps = 0;
      while (a != NONE && bad == NULL) {
        a = t->parent[a];
        if (++steps > n) bad = "transform: parent links form a cycle";
      }
    }
    return bad;
  }
  memset(state, 0, n);
  for (uint32_t i = 0; i < n && bad == NULL; i++) {
    uint32_t a = i;
    while (a != NONE && state[a] == 0) {
      state[a] = 1;
      a = t->parent[a];
    }
    if (a != NONE && state[a] == 1) bad = "transform: parent links form a cycle";
    for (a = i; a != NONE && state[a] == 1; a = t->parent[a]) state[a] = 2;
  }
  alloc(ud, state, n, 0);
  return bad;
}

/* {====================================================================
** The class hooks beyond gc and check: has, clear, stats, schema, save,
** load (ecs.h, ecs_manager_class)
** ===================================================================== */

static bool tr_has(const ecs_world *w, const void *self, ecs_entity e) {
  (void)w;
  return row_of((const ecs_transform *)self, e) != NONE;
}

/*
** Every row goes, and the memory with it: the buffer and the map's pages
** are freed, so the manager is as ecs_transform_new left it (the
** parent-first setting stays). Nothing is linked any more, so every
** invariant of tr_check holds trivially.
*/
static void tr_clear(ecs_world *w, void *self) {
  ecs_transform *t = (ecs_transform *)self;
  ecsi_free(w, t->buf, t->buf_size);
  ecsi_sparse_free(w, &t->map);
  t->buf = NULL;
  t->buf_size = 0;
  t->n = t->cap = 0;
  t->world = NULL;
  t->local = NULL;
  t->entity = NULL;
  t->parent = t->first_child = t->next_sibling = t->prev_sibling = NULL;
  t->mark = NULL;
  t->epoch = t->gc_cursor = 0;
}

/* Bytes of the map: its directory and the pages in use (sparse.c). */
static size_t map_bytes(const ecsi_sparse *m) {
  size_t bytes = (size_t)m->page_count * sizeof *m->page;
  for (uint32_t p = 0; p < m->page_count; p++)
    if (m->page[p] != NULL) bytes += ECSI_PAGE_SIZE * sizeof(uint32_t);
  return bytes;
}

/* The manager's three blocks: itself, the row buffer (every column, the
** scratch row included) and the map. */
static void tr_stats(const ecs_world *w, const void *self,
                     ecs_manager_stats *out) {
  const ecs_transform *t = (const ecs_transform *)self;
  (void)w;
  out->records = t->n;
  out->live = 0;
  for (uint32_t i = 0; i < t->n; i++) out->live += row_alive(t, i);
  out->bytes = sizeof *t + t->buf_size + map_bytes(&t->map);
}

/*
** A record as the user sees and saves it: the local transform in the
** doubles it is stored in, and the parent. The world matrix is left out:
** it is derived (parent world x local), and load recomputes it.
*/
static const ecs_field_def tr_fields[] = {
  {"position_x", ECS_F64}, {"position_y", ECS_F64}, {"position_z", ECS_F64},
  {"rotation_x", ECS_F64}, {"rotation_y", ECS_F64}, {"rotation_z", ECS_F64},
  {"rotation_w", ECS_F64}, {"scale_x", ECS_F64},    {"scale_y", ECS_F64},
  {"scale_z", ECS_F64},    {"parent", ECS_ENTITY},
};

static uint32_t tr_schema(const ecs_world *w, const void *self,
                          ecs_field_def *out, uint32_t max) {
  uint32_t n = (uint32_t)(sizeof tr_fields / sizeof tr_fields[0]);
  (void)w;
  (void)self;
  for (uint32_t k = 0; k < n && k < max; k++) out[k] = tr_fields[k];
  return n;
}

/*
** The stream (docs/transform.md, "Save and load"), machine byte order:
**   u32 TR_FORMAT, u32 count, then count records, each
**   u32 entity, u32 parent (ECS_NULL for a root), u8 flags,
**   10 f64 local (position xyz, rotation xyzw, scale xyz),
**   and, when flags has TR_WORLD, 16 f64 world matrix (column-major).
** Records come in depth-first order, parents before children and
** children in attachment order, so load links each record as it reads it
** and needs no second pass; a parent after its child is corrupt, which
** also rules out cycles.
**
** The world matrix is stored only where it is not what load would
** recompute (compose of the parent's world and the local): after
** set_parent with keep_world (the world kept exactly, the local its
** decomposition) and for children of destroyed parents (saved as roots
** with the decomposed local, world kept). So load restores every world
** matrix bit for bit, and a plain hierarchy costs 89 bytes a record.
*/
#define TR_FORMAT 1u
#define TR_WORLD 1u
#define TR_RECORD_MIN (2u * sizeof(uint32_t) + 1u + sizeof(ecs_trs))

_Static_assert(sizeof(ecs_trs) == 10 * sizeof(double),
               "ecs_trs is saved as 10 doubles");

/* Save live row i, a child of live row p (NONE: saved as a root). */
static ecs_err save_row(const ecs_transform *t, uint32_t i, uint32_t p,
                        ecs_writer *out) {
  ecs_trs l = t->local[i];
  double m[16];
  uint8_t flags = 0;
  ecs_err err;
  if (p == NONE && t->parent[i] != NONE) /* parent dead: see get_local */
    decompose(t->world[i], &l);
  compose(p == NONE ? NULL : t->world[p], &l, m);
  if (memcmp(m, t->world[i], sizeof m) != 0) flags |= TR_WORLD;
  err = ecs_write_u32(out, t->entity[i]);
  if (err == ECS_ERR_OK)
    err = ecs_write_u32(out, p == NONE ? ECS_NULL : t->entity[p]);
  if (err == ECS_ERR_OK) err = ecs_write(out, &flags, 1);
  if (err == ECS_ERR_OK) err = ecs_write(out, &l, sizeof l);
  if (err == ECS_ERR_OK && (flags & TR_WORLD))
    err = ecs_write(out, t->world[i], sizeof t->world[i]);
  return err;
}

/* Save root r and its live descendants: propagate's walk, writing. */
static ecs_err save_tree(const ecs_transform *t, uint32_t r, ecs_writer *out) {
  ecs_err err = save_row(t, r, NONE, out);
  uint32_t c = t->first_child[r];
  while (c != NONE && err == ECS_ERR_OK) {
    if (row_alive(t, c)) {
      err = save_row(t, c, t->parent[c], out);
      if (t->first_child[c] != NONE) {
        c = t->first_child[c];
        continue;
      }
    }
    while (t->next_sibling[c] == NONE) {
      c = t->parent[c];
      if (c == r) return err;
    }
    c = t->next_sibling[c];
  }
  return err;
}

/*
** Live rows only. The roots of the saved forest are the live rows whose
** parent is none or dead; the walk from each does not enter dead nodes
** (whose live children are roots themselves), so every live row is
** written exactly once, and count is known before the first record.
*/
static ecs_err tr_save(const ecs_world *w, const void *self,
                       ecs_writer *out) {
  const ecs_transform *t = (const ecs_transform *)self;
  uint32_t live = 0;
  ecs_err err;
  (void)w;
  for (uint32_t i = 0; i < t->n; i++) live += row_alive(t, i);
  err = ecs_write_u32(out, TR_FORMAT);
  if (err == ECS_ERR_OK) err = ecs_write_u32(out, live);
  for (uint32_t r = 0; r < t->n && err == ECS_ERR_OK; r++) {
    uint32_t p = t->parent[r];
    if (row_alive(t, r) && (p == NONE || !row_alive(t, p)))
      err = save_tree(t, r, out);
  }
  return err;
}

/* The rule the setters and tr_check apply: finite numbers, a unit
** rotation (within the check's tolerance: load does not normalize, so
** that saved values come back bit for bit). */
static bool valid_local(const ecs_trs *l) {
  double qn = 0;
  for (int k = 0; k < 3; k++)
    if (!isfinite(l->position[k]) || !isfinite(l->scale[k])) return false;
  for (int k = 0; k < 4; k++) qn += l->rotation[k] * l->rotation[k];
  return fabs(qn - 1.0) < 1e-9; /* false for NaN and inf too */
}

/*
** Read and check one record into row nt->n of the new rows (reserved),
** linking it under its parent. @return ECS_ERR_CORRUPT for anything
** save could not have written for this world: an entity that is not
** alive (or not a 30-bit id), one already read, a parent not read
** before, unknown flags, a local that breaks valid_local, a world
** matrix that is not affine (its last row is 0 0 0 1). World matrices
** may hold inf and NaN: an overflowed chain has them (docs,
** "Overflow"), and a saved world is restored as it was.
*/
static ecs_err load_row(ecs_transform *nt, ecs_reader *in) {
  uint32_t e, pe, p = NONE, i = nt->n;
  uint8_t flags;
  ecs_trs l;
  double m[16];
  ecs_err err = ecs_read_u32(in, &e);
  if (err == ECS_ERR_OK) err = ecs_read_u32(in, &pe);
  if (err == ECS_ERR_OK) err = ecs_read(in, &flags, 1);
  if (err == ECS_ERR_OK) err = ecs_read(in, &l, sizeof l);
  if (err == ECS_ERR_OK && (flags & TR_WORLD)) err = ecs_read(in, m, sizeof m);
  if (err != ECS_ERR_OK) return err;
  if ((e & ~ECS_ID_MASK) != 0 || !ecs_alive(nt->w, e) ||
      ecsi_sparse_get(&nt->map, ecs_entity_index(e)) != NONE)
    return ECS_ERR_CORRUPT;
  if (pe != ECS_NULL) {
    p = ecsi_sparse_get(&nt->map, ecs_entity_index(pe));
    if (p == NONE || nt->entity[p] != pe) return ECS_ERR_CORRUPT;
  }
  if ((flags & ~TR_WORLD) != 0 || !valid_local(&l)) return ECS_ERR_CORRUPT;
  if ((flags & TR_WORLD) && !(m[3] == 0 && m[7] == 0 && m[11] == 0 && m[15] == 1))
    return ECS_ERR_CORRUPT;
  err = ecsi_sparse_reserve(nt->w, &nt->map, ecs_entity_index(e));
  if (err != ECS_ERR_OK) return err;
  nt->n++;
  nt->entity[i] = e;
  nt->local[i] = l;
  nt->parent[i] = nt->first_child[i] = NONE;
  nt->next_sibling[i] = nt->prev_sibling[i] = NONE;
  nt->mark[i] = 0;
  if (p != NONE) link_row(nt, i, p);
  if (flags & TR_WORLD) memcpy(nt->world[i], m, sizeof m);
  else compose(p == NONE ? NULL : nt->world[p], &l, nt->world[i]);
  ecsi_sparse_set(&nt->map, ecs_entity_index(e), i);
  return ECS_ERR_OK;
}

/*
** All or nothing: the new rows and map are built aside (nt) while the
** stream is read and checked, and replace the old ones only when every
** record was read; on any error the new blocks are freed, the manager is
** untouched and the reader is back where it was. The count is checked
** against the bytes left before anything is allocated for it, so a
** forged count cannot make load allocate more than the stream could
** fill. The rows come out depth first (the stream's order), the layout
** ecs_transform_sort would give.
*/
static ecs_err tr_load(ecs_world *w, void *self, ecs_reader *in) {
  ecs_transform *t = (ecs_transform *)self, nt;
  size_t start = in->pos;
  uint32_t format, count;
  ecs_err err = ecs_read_u32(in, &format);
  if (err == ECS_ERR_OK) err = ecs_read_u32(in, &count);
  if (err == ECS_ERR_OK &&
      (format != TR_FORMAT || count > ECS_MAX_ENTITIES ||
       count > (in->size - in->pos) / TR_RECORD_MIN))
    err = ECS_ERR_CORRUPT;
  if (err != ECS_ERR_OK) {
    in->pos = start;
    return err;
  }
  memset(&nt, 0, sizeof nt);
  nt.w = w;
  err = reserve_rows(&nt, count);
  for (uint32_t k = 0; k < count && err == ECS_ERR_OK; k++)
    err = load_row(&nt, in);
  if (err != ECS_ERR_OK) {
    ecsi_free(w, nt.buf, nt.buf_size);
    ecsi_sparse_free(w, &nt.map);
    in->pos = start;
    return err;
  }
  ecsi_free(w, t->buf, t->buf_size);
  ecsi_sparse_free(w, &t->map);
  nt.parent_first = t->parent_first; /* a setting, not a record */
  *t = nt;
  return ECS_ERR_OK;
}

/* }==================================================================== */

static const ecs_manager_class transform_class = {
  .kind = "transform",
  .gc = tr_gc,
  .check = tr_check,
  .free = tr_free,
  .purge = tr_purge,
  .has = tr_has,
  .clear = tr_clear,
  .stats = tr_stats,
  .schema = tr_schema,
  .save = tr_save,
  .load = tr_load,
};

ecs_err ecs_transform_new(ecs_world *w, ecs_transform **out) {
  ecs_transform *t;
  ecs_err err;
  if (ecs_manager_find(w, "transform", NULL) != NULL) return ECS_ERR_EXISTS;
  t = (ecs_transform *)ecsi_realloc(w, NULL, 0, sizeof *t);
  if (t == NULL) return ECS_ERR_NOMEM;
  memset(t, 0, sizeof *t);
  t->w = w;
  t->parent_first = true;
  err = ecs_manager_register(w, "transform", &transform_class, t);
  if (err != ECS_ERR_OK) return err; /* t freed by the registry */
  if (out != NULL) *out = t;
  return ECS_ERR_OK;
}

ecs_world *ecs_transform_world(const ecs_transform *t) { return t->w; }

ecs_transform *ecs_transform_of(const ecs_world *w) {
  const ecs_manager_class *cls;
  void *m = ecs_manager_find(w, "transform", &cls);
  return m != NULL && cls == &transform_class ? (ecs_transform *)m : NULL;
}

/*
** Reserve the row and the map page first; then, if the index still holds
** the row of a dead earlier entity, drop that row; then append.
*/
ecs_err ecs_transform_add(ecs_transform *t, ecs_entity e, const ecs_trs *local) {
  ecs_trs l = identity;
  uint32_t i, ix = ecs_entity_index(e);
  ecs_err err;
  if (!ecs_alive(t->w, e)) return ECS_ERR_DEAD;
  if (local != NULL && (err = clean_trs(local, &l)) != ECS_ERR_OK) return err;
  i = row_of(t, e);
  if (i != NONE) {
    repair(t, i);
    t->local[i] = l;
    propagate(t, i);
    return notify(t, e, ECS_EVENT_SET); /* a write, not a new record */
  }
  err = reserve_rows(t, t->n + 1u);
  if (err != ECS_ERR_OK) return err;
  err = ecsi_sparse_reserve(t->w, &t->map, ix);
  if (err != ECS_ERR_OK) return err;
  i = ecsi_sparse_get(&t->map, ix);
  if (i != NONE) drop_row(t, i); /* a dead entity's row at this index */
  i = t->n++;
  t->entity[i] = e;
  t->local[i] = l;
  t->parent[i] = t->first_child[i] = NONE;
  t->next_sibling[i] = t->prev_sibling[i] = NONE;
  t->mark[i] = 0;
  trs_matrix(&l, t->world[i]);
  ecsi_sparse_set(&t->map, ix, i);
  return notify(t, e, ECS_EVENT_ADD);
}

/*
** REMOVE is reported first, while the row is whole; the listener may
** move rows, remove e's row itself or destroy e, so the row is looked up
** again. A destroyed e keeps its (now dead) row until gc, like any dead
** entity's; otherwise the row goes, whatever the listener returned.
*/
ecs_err ecs_transform_remove(ecs_transform *t, ecs_entity e) {
  uint32_t i;
  ecs_err err = find_row(t, e, &i);
  if (err != ECS_ERR_OK) return err;
  err = notify(t, e, ECS_EVENT_REMOVE);
  i = row_of(t, e);
  if (i != NONE) drop_row(t, i);
  return err;
}

bool ecs_transform_has(const ecs_transform *t, ecs_entity e) {
  return row_of(t, e) != NONE;
}

uint32_t ecs_transform_instance(const ecs_transform *t, ecs_entity e) {
  return row_of(t, e);
}

void ecs_transform_lookup(const ecs_transform *t, const ecs_entity *es,
                          uint32_t *out, size_t n) {
  for (size_t k = 0; k < n; k++) out[k] = row_of(t, es[k]);
}

uint32_t ecs_transform_size(const ecs_transform *t) { return t->n; }

ecs_entity ecs_transform_entity_at(const ecs_transform *t, uint32_t i) {
  return t->entity[i];
}

const double *ecs_transform_world_at(const ecs_transform *t, uint32_t i) {
  return t->world[i];
}

static ecs_err find_row(const ecs_transform *t, ecs_entity e, uint32_t *i) {
  if (!ecs_alive(t->w, e)) return ECS_ERR_DEAD;
  *i = row_of(t, e);
  return *i == NONE ? ECS_ERR_MISSING : ECS_ERR_OK;
}

ecs_err ecs_transform_get_local(const ecs_transform *t, ecs_entity e,
                                ecs_trs *out) {
  uint32_t i, p;
  ecs_err err = find_row(t, e, &i);
  if (err != ECS_ERR_OK) return err;
  p = t->parent[i];
  if (p != NONE && !row_alive(t, p)) decompose(t->world[i], out);
  else *out = t->local[i];
  return ECS_ERR_OK;
}

ecs_err ecs_transform_get_world(const ecs_transform *t, ecs_entity e,
                                double out[16]) {
  uint32_t i;
  ecs_err err = find_row(t, e, &i);
  if (err != ECS_ERR_OK) return err;
  memcpy(out, t->world[i], sizeof(double[16]));
  return ECS_ERR_OK;
}

ecs_err ecs_transform_get_world_rotation(const ecs_transform *t,
                                         ecs_entity e, double out[4]) {
  uint32_t i;
  ecs_trs d;
  ecs_err err = find_row(t, e, &i);
  if (err != ECS_ERR_OK) return err;
  decompose(t->world[i], &d);
  memcpy(out, d.rotation, sizeof d.rotation);
  return ECS_ERR_OK;
}

ecs_err ecs_transform_set_local(ecs_transform *t, ecs_entity e,
                                const ecs_trs *local) {
  uint32_t i;
  ecs_trs l;
  ecs_err err = find_row(t, e, &i);
  if (err != ECS_ERR_OK) return err;
  if ((err = clean_trs(local, &l)) != ECS_ERR_OK) return err;
  repair(t, i);
  t->local[i] = l;
  propagate(t, i);
  return notify(t, e, ECS_EVENT_SET);
}

/* The component setters start from the effective local (see get_local). */
ecs_err ecs_transform_set_position(ecs_transform *t, ecs_entity e, double x,
                                   double y, double z) {
  ecs_trs l;
  ecs_err err = ecs_transform_get_local(t, e, &l);
  if (err != ECS_ERR_OK) return err;
  l.position[0] = x;
  l.position[1] = y;
  l.position[2] = z;
  return ecs_transform_set_local(t, e, &l);
}

ecs_err ecs_transform_set_rotation(ecs_transform *t, ecs_entity e, double x,
                                   double y, double z, double w) {
  ecs_trs l;
  ecs_err err = ecs_transform_get_local(t, e, &l);
  if (err != ECS_ERR_OK) return err;
  l.rotation[0] = x;
  l.rotation[1] = y;
  l.rotation[2] = z;
  l.rotation[3] = w;
  return ecs_transform_set_local(t, e, &l);
}

ecs_err ecs_transform_set_scale(ecs_transform *t, ecs_entity e, double x,
                                double y, double z) {
  ecs_trs l;
  ecs_err err = ecs_transform_get_local(t, e, &l);
  if (err != ECS_ERR_OK) return err;
  l.scale[0] = x;
  l.scale[1] = y;
  l.scale[2] = z;
  return ecs_transform_set_local(t, e, &l);
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
static void propagate_batch(ecs_transform *t, const uint32_t *inst, size_t n) {
  uint32_t base = fresh_stamps(t, 2u);
  for (size_t k = 0; k < n; k++) t->mark[inst[k]] = base;
  for (size_t k = 0; k < n; k++) {
    uint32_t i = inst[k], a;
    bool covered = false;
    if (t->mark[i] != base) continue; /* already walked */
    for (a = t->parent[i]; a != NONE && row_alive(t, a); a = t->parent[a])
      if (t->mark[a] >= base) {
        covered = true;
        break;
      }
    if (covered) continue;
    t->mark[i] = base + 1u;
    propagate(t, i);
  }
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
    if ((err = clean_trs(&locals[k], &tmp)) != ECS_ERR_OK) return err;
  err = batch_begin(t, n, &es);
  if (err != ECS_ERR_OK) return err;
  for (size_t k = 0; k < n; k++) {
    repair(t, inst[k]);
    (void)clean_trs(&locals[k], &t->local[inst[k]]);
  }
  propagate_batch(t, inst, n);
  return batch_notify(t, inst, n, es);
}

ecs_err ecs_transform_set_positions(ecs_transform *t, const uint32_t *inst,
                                    const double *xyz, size_t n) {
  ecs_entity *es;
  ecs_err err;
  if (!valid_rows(t, inst, n)) return ECS_ERR_BAD_ROWS;
  for (size_t k = 0; k < 3 * n; k++)
    if (!isfinite(xyz[k])) return ECS_ERR_NOT_FINITE;
  err = batch_begin(t, n, &es);
  if (err != ECS_ERR_OK) return err;
  for (size_t k = 0; k < n; k++) {
    ecs_trs *l = &t->local[inst[k]];
    repair(t, inst[k]);
    l->position[0] = xyz[3 * k];
    l->position[1] = xyz[3 * k + 1];
    l->position[2] = xyz[3 * k + 2];
  }
  propagate_batch(t, inst, n);
  return batch_notify(t, inst, n, es);
}

/*
** Could linking c under p close a loop of the physical links (dead rows
** included)? Only if p is below c, which needs c to have children: a leaf
** answers at once, so building a chain node by node stays linear. Else
** walk up from p and, step for step, depth first through c's subtree;
** whichever ends first answers, so the cost is the smaller of p's depth
** and c's subtree size (the subtree walk moves at most two links a node).
*/
static bool may_be_below(const ecs_transform *t, uint32_t p, uint32_t c) {
  uint32_t up = p, down = t->first_child[c];
  while (down != NONE) {
    if (t->parent[up] == c) return true;
    up = t->parent[up];
    if (up == NONE) return false; /* p's chain ends at a root without c */
    if (down == p) return true;
    if (t->first_child[down] != NONE) {
      down = t->first_child[down];
      continue;
    }
    while (t->next_sibling[down] == NONE) {
      down = t->parent[down];
      if (down == c) return false; /* c's subtree ends without p */
    }
    down = t->next_sibling[down];
  }
  return false;
}

/*
** The local transform that keeps c's world matrix under p (NONE: as a
** root), into *l. @return NULL, or why there is none (the text after
** "transform:set_parent: "; the binding reports it).
*/
static const char *keep_world_local(const ecs_transform *t, uint32_t c,
                                    uint32_t p, ecs_trs *l) {
  double m[16];
  if (!all_finite(t->world[c], 16))
    return "keep_world: the child's world matrix is not finite";
  if (p == NONE) {
    memcpy(m, t->world[c], sizeof m);
  } else {
    if (!all_finite(t->world[p], 16))
      return "keep_world: the parent's world matrix is not finite";
    if (!relative_to(t->world[p], t->world[c], m))
      return "keep_world under a singular parent matrix";
  }
  if (!decompose(m, l) || clean_trs(l, l) != ECS_ERR_OK)
    return "keep_world: the local transform that keeps the world matrix is not finite";
  return NULL;
}

/*
** Order: find both rows; repair the child; reject cycles, repairing the
** parent's ancestor chain where it crosses a dead row when the child
** could be above it (so the physical links stay acyclic); compute the
** kept-world local if asked (may fail, see keep_world_local); only then
** relink. The parent-first swap runs last and moves rows only.
*/
ecs_err ecs_transform_set_parent(ecs_transform *t, ecs_entity child,
                                 ecs_entity parent, bool keep_world) {
  uint32_t c, p = NONE;
  ecs_trs l;
  ecs_err err = find_row(t, child, &c);
  if (err != ECS_ERR_OK) return err;
  if (parent != ECS_NULL) {
    uint32_t a;
    err = find_row(t, parent, &p);
    if (err != ECS_ERR_OK) return err;
    repair(t, c);
    if (p == c) return ECS_ERR_CYCLE;
    if (may_be_below(t, p, c))
      for (a = p; t->parent[a] != NONE; a = t->parent[a]) {
        if (!row_alive(t, t->parent[a])) {
          orphan_row(t, a);
          break;
        }
        if (t->parent[a] == c) return ECS_ERR_CYCLE;
      }
  } else {
    repair(t, c);
  }
  if (keep_world && keep_world_local(t, c, p, &l) != NULL)
    return ECS_ERR_KEEP_WORLD;
  unlink_row(t, c);
  if (p != NONE) link_row(t, c, p);
  if (keep_world) t->local[c] = l; /* world kept exactly, subtree unmoved */
  else propagate(t, c);
  if (p != NONE && t->parent_first && c < p) swap_rows(t, c, p);
  return notify(t, child, ECS_EVENT_SET);
}

const char *ecs_transform_keep_world_error(const ecs_transform *t,
                                           ecs_entity child,
                                           ecs_entity parent) {
  uint32_t c, p = NONE;
  ecs_trs l;
  if (find_row(t, child, &c) != ECS_ERR_OK) return NULL;
  if (parent != ECS_NULL && find_row(t, parent, &p) != ECS_ERR_OK) return NULL;
  return keep_world_local(t, c, p, &l);
}

ecs_entity ecs_transform_parent(const ecs_transform *t, ecs_entity e) {
  uint32_t i = row_of(t, e), p;
  if (i == NONE) return ECS_NULL;
  p = t->parent[i];
  if (p == NONE || !row_alive(t, p)) return ECS_NULL;
  return t->entity[p];
}

static ecs_entity live_from(const ecs_transform *t, uint32_t c) {
  for (; c != NONE; c = t->next_sibling[c])
    if (row_alive(t, c)) return t->entity[c];
  return ECS_NULL;
}

ecs_entity ecs_transform_first_child(const ecs_transform *t, ecs_entity e) {
  uint32_t i = row_of(t, e);
  return i == NONE ? ECS_NULL : live_from(t, t->first_child[i]);
}

ecs_entity ecs_transform_next_sibling(const ecs_transform *t, ecs_entity e) {
  uint32_t i = row_of(t, e), p;
  if (i == NONE) return ECS_NULL;
  p = t->parent[i];
  if (p == NONE || !row_alive(t, p)) return ECS_NULL;
  return live_from(t, t->next_sibling[i]);
}

/*
** The propagate walk again, destroying each live node before descending
** into it: a node's liveness is tested before it is destroyed, and the
** links do not change (rows go at gc), so the walk needs no memory.
*/
size_t ecs_transform_destroy_tree(ecs_transform *t, ecs_entity e) {
  uint32_t root = row_of(t, e), c;
  size_t done = 0;
  if (root == NONE) return 0;
  done += ecs_destroy(t->w, t->entity[root]);
  c = t->first_child[root];
  while (c != NONE) {
    if (row_alive(t, c)) {
      done += ecs_destroy(t->w, t->entity[c]);
      if (t->first_child[c] != NONE) {
        c = t->first_child[c];
        continue;
      }
    }
    while (t->next_sibling[c] == NONE) {
      c = t->parent[c];
      if (c == root) return done;
    }
    c = t->next_sibling[c];
  }
  return done;
}

/*
** Reorder every row depth first (pre-order, roots in row order, dead rows
** included): parents before children and each subtree contiguous, so
** propagation walks memory forward. A new buffer and an old -> new table
** are allocated first; on failure nothing changed.
*/
ecs_err ecs_transform_sort(ecs_transform *t) {
  uint32_t n = t->n, k = 0, *newpos;
  void *nb;
  ecs_transform old = *t;
  if (n == 0) return ECS_ERR_OK;
  newpos = (uint32_t *)ecsi_realloc(t->w, NULL, 0, (size_t)n * sizeof *newpos);
  if (newpos == NULL) return ECS_ERR_NOMEM;
  nb = ecsi_realloc(t->w, NULL, 0, t->buf_size);
  if (nb == NULL) {
    ecsi_free(t->w, newpos, (size_t)n * sizeof *newpos);
    return ECS_ERR_NOMEM;
  }
  for (uint32_t r = 0; r < n; r++) {
    uint32_t c;
    if (old.parent[r] != NONE) continue;
    newpos[r] = k++;
    c = old.first_child[r];
    while (c != NONE) {
      newpos[c] = k++;
      if (old.first_child[c] != NONE) {
        c = old.first_child[c];
        continue;
      }
      while (old.next_sibling[c] == NONE) {
        c = old.parent[c];
        if (c == r) break;
      }
      if (c == r) break;
      c = old.next_sibling[c];
    }
  }
  set_columns(t, nb, t->cap + 1u);
#define REMAP(v) ((v) == NONE ? NONE : newpos[v])
  for (uint32_t i = 0; i < n; i++) {
    uint32_t d = newpos[i];
    memcpy(t->world[d], old.world[i], sizeof t->world[d]);
    t->local[d] = old.local[i];
    t->entity[d] = old.entity[i];
    t->mark[d] = old.mark[i];
    t->parent[d] = REMAP(old.parent[i]);
    t->first_child[d] = REMAP(old.first_child[i]);
    t->next_sibling[d] = REMAP(old.next_sibling[i]);
    t->prev_sibling[d] = REMAP(old.prev_sibling[i]);
    ecsi_sparse_set(&t->map, ecs_entity_index(old.entity[i]), d);
  }
#undef REMAP
  ecsi_free(t->w, old.buf, old.buf_size);
  ecsi_free(t->w, newpos, (size_t)n * sizeof *newpos);
  t->buf = nb;
  return ECS_ERR_OK;
}

void ecs_transform_set_parent_first(ecs_transform *t, bool on) {
  t->parent_first = on;
}

/* }==================================================================== */
