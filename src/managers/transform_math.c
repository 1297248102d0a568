/*
** transform_math.c -- the transform's math from a matrix back to a local
** transform, and the rule every local transform is held to. Matrices are
** column-major 4x4 doubles, affine (last row 0 0 0 1).
**
** decompose turns a world matrix into position, rotation and scale (a
** dead parent's children, get_local and get_world_rotation, save of an
** orphan); relative_to finds the local that keeps a world matrix under a
** new parent (set_parent with keep_world); clean_trs validates and
** normalizes every local a caller writes. They are written for range
** rather than speed: norms and inverses scale their inputs first, so
** transforms far from 1 (a parent scaled by 1e-100) stay finite and
** invertible, and whatever overflows still decomposes into finite numbers.
**
** The forward product (TRS to matrix, compose) is in
** transform_propagate.c instead, next to the walk that runs it per row.
**
** Layer: managers (layers: alloc.h); no state, only numbers.
*/
#include <float.h>
#include <math.h>
#include <string.h>

#include "transform_private.h"

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
bool ecsi_transform_relative_to(const double *parent, const double *world,
                                double *out) {
  double inv[16], d[16];
  if (!inverse3(parent, inv)) return false;
  memcpy(d, world, sizeof d);
  for (int r = 0; r < 3; r++) d[12 + r] = world[12 + r] - parent[12 + r];
  ecsi_transform_mul_affine(inv, d, out);
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
bool ecsi_transform_decompose(const double *m, ecs_trs *out) {
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
ecs_err ecsi_transform_clean_trs(const ecs_trs *in, ecs_trs *out) {
  double n, k = 0;
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
  n = ecsi_rotation_length(v.rotation);
  for (int i = 0; i < 4; i++) v.rotation[i] /= n;
  *out = v;
  return ECS_ERR_OK;
}
