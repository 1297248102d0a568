/*
** test_transform.c -- the transform manager (transform.h), core only.
*/
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "transform.h"

static ecs_world *new_world(test_alloc *a, ecs_transform **t) {
  ecs_world *w;
  memset(a, 0, sizeof *a);
  w = ecs_world_new(test_allocf, a);
  if (w != NULL && ecs_transform_new(w, t) != ECS_ERR_OK) {
    ecs_world_free(w);
    return NULL;
  }
  return w;
}

static bool near(double a, double b) { return fabs(a - b) < 1e-9; }

static bool mat_near(const double *m, const double *e) {
  for (int k = 0; k < 16; k++)
    if (!(fabs(m[k] - e[k]) < 1e-9)) {
      fprintf(stderr, "  m[%d] = %.12g, expected %.12g\n", k, m[k], e[k]);
      return false;
    }
  return true;
}

static ecs_trs trs(double px, double py, double pz, double qx, double qy,
                   double qz, double qw, double sx, double sy, double sz) {
  ecs_trs l = {{px, py, pz}, {qx, qy, qz, qw}, {sx, sy, sz}};
  return l;
}

static ecs_entity make(ecs_world *w, ecs_transform *t, const ecs_trs *l) {
  ecs_entity e = ECS_NULL;
  if (ecs_create(w, &e) != ECS_ERR_OK) return ECS_NULL;
  if (ecs_transform_add(t, e, l) != ECS_ERR_OK) return ECS_NULL;
  return e;
}

/* naive affine product for the expectations */
static void mul(const double *a, const double *b, double *o) {
  for (int c = 0; c < 4; c++)
    for (int r = 0; r < 4; r++) {
      double s = 0;
      for (int k = 0; k < 4; k++) s += a[k * 4 + r] * b[c * 4 + k];
      o[c * 4 + r] = s;
    }
}

/* A naive TRS matrix, from the rotation matrix formula written out. */
static void naive_trs(const ecs_trs *l, double *m) {
  double x = l->rotation[0], y = l->rotation[1], z = l->rotation[2];
  double w = l->rotation[3];
  double r[3][3] = {
    {1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)},
    {2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)},
    {2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)}};
  memset(m, 0, 16 * sizeof *m);
  for (int c = 0; c < 3; c++)
    for (int k = 0; k < 3; k++) m[c * 4 + k] = r[k][c] * l->scale[c];
  m[12] = l->position[0];
  m[13] = l->position[1];
  m[14] = l->position[2];
  m[15] = 1;
}

TEST(Transform_new_registers_once) {
  test_alloc a;
  ecs_transform *t = NULL, *t2 = NULL;
  ecs_world *w = new_world(&a, &t);
  CHECK(w != NULL && t != NULL);
  CHECK(ecs_transform_of(w) == t);
  CHECK_EQ_INT(ecs_transform_new(w, &t2), ECS_ERR_EXISTS);
  CHECK(t2 == NULL);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Transform_add_has_remove) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity e, f, stale;
  double m[16];
  ecs_trs l, bad = trs(0, 0, 0, 0, 0, 0, 0, 1, 1, 1);
  static const double id[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  CHECK(w != NULL);
  CHECK(ecs_create(w, &e) == ECS_ERR_OK && ecs_create(w, &f) == ECS_ERR_OK);
  CHECK(!ecs_transform_has(t, e));
  CHECK(!ecs_transform_has(t, ECS_NULL));
  CHECK_EQ_INT(ecs_transform_get_world(t, e, m), ECS_ERR_MISSING);
  CHECK_EQ_INT(ecs_transform_add(t, e, NULL), ECS_ERR_OK);
  CHECK(ecs_transform_has(t, e));
  CHECK_EQ_INT(ecs_transform_get_world(t, e, m), ECS_ERR_OK);
  CHECK(mat_near(m, id));
  CHECK_EQ_INT(ecs_transform_add(t, f, &bad), ECS_ERR_ZERO_ROTATION);
  bad.rotation[3] = (double)NAN;
  CHECK_EQ_INT(ecs_transform_add(t, f, &bad), ECS_ERR_NOT_FINITE);
  bad.rotation[3] = 1;
  bad.scale[2] = (double)-INFINITY;
  CHECK_EQ_INT(ecs_transform_add(t, f, &bad), ECS_ERR_NOT_FINITE);
  CHECK(!ecs_transform_has(t, f));
  /* rotations are normalized */
  l = trs(1, 2, 3, 0, 0, 0, 2, 1, 1, 1);
  CHECK_EQ_INT(ecs_transform_add(t, f, &l), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_get_local(t, f, &l), ECS_ERR_OK);
  CHECK(near(l.rotation[3], 1.0) && near(l.position[2], 3));
  CHECK_EQ_INT(ecs_transform_lookup(t, f), 1);
  {
    ecs_entity es[3] = {e, f, ECS_NULL};
    uint32_t out[3];
    ecs_transform_lookup_n(t, es, out, 3);
    CHECK(out[0] == 0 && out[1] == 1 && out[2] == ECS_NO_INSTANCE);
  }
  CHECK_EQ_INT(ecs_transform_remove(t, e), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_remove(t, e), ECS_ERR_MISSING);
  CHECK(!ecs_transform_has(t, e));
  CHECK_EQ_INT(ecs_transform_lookup(t, f), 0); /* swapped into row 0 */
  CHECK_WORLD(w);
  /* dead and stale handles */
  stale = f;
  CHECK(ecs_destroy(w, f));
  CHECK(!ecs_transform_has(t, stale));
  CHECK_EQ_INT(ecs_transform_add(t, stale, NULL), ECS_ERR_DEAD);
  CHECK_EQ_INT(ecs_transform_set_position(t, stale, 1, 2, 3), ECS_ERR_DEAD);
  CHECK_EQ_INT(ecs_transform_get_local(t, stale, &l), ECS_ERR_DEAD);
  CHECK_EQ_INT(ecs_transform_remove(t, stale), ECS_ERR_DEAD);
  CHECK_EQ_INT(ecs_transform_size(t), 1); /* awaits gc */
  CHECK_EQ_INT(ecs_world_gc(w, SIZE_MAX), 1);
  CHECK_EQ_INT(ecs_transform_size(t), 0);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* Hand-computed matrices: translation, 90 degrees about x, y, z, scale. */
TEST(Transform_hand_computed_matrices) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  double s = sqrt(0.5), m[16];
  ecs_trs tr = trs(1, 2, 3, 0, 0, 0, 1, 1, 1, 1);
  ecs_trs rx = trs(0, 0, 0, s, 0, 0, s, 1, 1, 1);
  ecs_trs ry = trs(0, 0, 0, 0, s, 0, s, 1, 1, 1);
  ecs_trs rz = trs(0, 0, 0, 0, 0, s, s, 1, 1, 1);
  ecs_trs sc = trs(0, 0, 0, 0, 0, 0, 1, 2, 3, 4);
  /* column-major expectations */
  static const double etr[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 2, 3, 1};
  /* Rx(90): y -> z, z -> -y */
  static const double erx[16] = {1, 0, 0, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1};
  /* Ry(90): z -> x, x -> -z */
  static const double ery[16] = {0, 0, -1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1};
  /* Rz(90): x -> y, y -> -x */
  static const double erz[16] = {0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  static const double esc[16] = {2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4, 0, 0, 0, 0, 1};
  /* translate (1,2,3) then under it rotate z 90 with scale (2,3,4), child
  ** at local (1,0,0): world position = (1,2,3) + Rz * (2,0,0) = (1,4,3) */
  ecs_trs p2 = trs(1, 2, 3, 0, 0, s, s, 2, 3, 4);
  ecs_trs c2 = trs(1, 0, 0, 0, 0, 0, 1, 1, 1, 1);
  ecs_entity e[5];
  CHECK(w != NULL);
  CHECK((e[0] = make(w, t, &tr)) != ECS_NULL);
  CHECK((e[1] = make(w, t, &rx)) != ECS_NULL);
  CHECK((e[2] = make(w, t, &ry)) != ECS_NULL);
  CHECK((e[3] = make(w, t, &rz)) != ECS_NULL);
  CHECK((e[4] = make(w, t, &sc)) != ECS_NULL);
  CHECK(ecs_transform_get_world(t, e[0], m) == ECS_ERR_OK && mat_near(m, etr));
  CHECK(ecs_transform_get_world(t, e[1], m) == ECS_ERR_OK && mat_near(m, erx));
  CHECK(ecs_transform_get_world(t, e[2], m) == ECS_ERR_OK && mat_near(m, ery));
  CHECK(ecs_transform_get_world(t, e[3], m) == ECS_ERR_OK && mat_near(m, erz));
  CHECK(ecs_transform_get_world(t, e[4], m) == ECS_ERR_OK && mat_near(m, esc));
  CHECK_EQ_INT(ecs_transform_set_local(t, e[0], &p2), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_set_local(t, e[1], &c2), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[1], e[0], false), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_get_world(t, e[1], m), ECS_ERR_OK);
  CHECK(near(m[12], 1) && near(m[13], 4) && near(m[14], 3));
  /* its x axis is the parent's: Rz*(2,0,0) = (0,2,0) */
  CHECK(near(m[0], 0) && near(m[1], 2) && near(m[2], 0));
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* A 5-deep chain of translations by 1 along x: world x = depth. */
TEST(Transform_chain_propagates) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_trs one = trs(1, 0, 0, 0, 0, 0, 1, 1, 1, 1);
  ecs_entity e[5];
  double m[16];
  CHECK(w != NULL);
  for (int k = 0; k < 5; k++) {
    CHECK((e[k] = make(w, t, &one)) != ECS_NULL);
    if (k > 0) CHECK_EQ_INT(ecs_transform_set_parent(t, e[k], e[k - 1], false), 0);
  }
  for (int k = 0; k < 5; k++) {
    CHECK_EQ_INT(ecs_transform_get_world(t, e[k], m), ECS_ERR_OK);
    CHECK(near(m[12], k + 1));
  }
  CHECK_EQ_INT(ecs_transform_set_position(t, e[0], 10, 0, 0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_get_world(t, e[4], m), ECS_ERR_OK);
  CHECK(near(m[12], 14));
  /* scale at the root scales the whole chain */
  CHECK_EQ_INT(ecs_transform_set_scale(t, e[0], 2, 2, 2), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_get_world(t, e[4], m), ECS_ERR_OK);
  CHECK(near(m[12], 18) && near(m[0], 2));
  CHECK(ecs_transform_parent(t, e[4]) == e[3]);
  CHECK(ecs_transform_parent(t, e[0]) == ECS_NULL);
  CHECK(ecs_transform_first_child(t, e[3]) == e[4]);
  CHECK(ecs_transform_next_sibling(t, e[4]) == ECS_NULL);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Transform_cycles_and_errors) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity e[4], bare, dead;
  CHECK(w != NULL);
  for (int k = 0; k < 4; k++) CHECK((e[k] = make(w, t, NULL)) != ECS_NULL);
  CHECK(ecs_create(w, &bare) == ECS_ERR_OK);
  CHECK((dead = make(w, t, NULL)) != ECS_NULL);
  CHECK(ecs_destroy(w, dead));
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[1], e[0], false), 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[2], e[1], false), 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[0], e[0], false), ECS_ERR_CYCLE);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[0], e[2], false), ECS_ERR_CYCLE);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[0], e[1], true), ECS_ERR_CYCLE);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[0], bare, false), ECS_ERR_MISSING);
  CHECK_EQ_INT(ecs_transform_set_parent(t, bare, e[0], false), ECS_ERR_MISSING);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[0], dead, false), ECS_ERR_DEAD);
  CHECK_EQ_INT(ecs_transform_set_parent(t, dead, e[0], false), ECS_ERR_DEAD);
  CHECK(ecs_transform_parent(t, e[0]) == ECS_NULL);
  /* moving a subtree elsewhere is fine, as is detaching */
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[1], e[3], false), 0);
  CHECK(ecs_transform_parent(t, e[1]) == e[3]);
  CHECK(ecs_transform_first_child(t, e[0]) == ECS_NULL);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[1], ECS_NULL, false), 0);
  CHECK(ecs_transform_parent(t, e[1]) == ECS_NULL);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* Children keep attachment order; removing rows fixes every link. */
TEST(Transform_swap_remove_fixes_links) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity r, c[6], g;
  ecs_trs one = trs(1, 0, 0, 0, 0, 0, 1, 1, 1, 1);
  double m[16];
  CHECK(w != NULL);
  CHECK((r = make(w, t, &one)) != ECS_NULL);
  for (int k = 0; k < 6; k++) {
    CHECK((c[k] = make(w, t, &one)) != ECS_NULL);
    CHECK_EQ_INT(ecs_transform_set_parent(t, c[k], r, false), 0);
  }
  CHECK((g = make(w, t, &one)) != ECS_NULL); /* last row, has a parent */
  CHECK_EQ_INT(ecs_transform_set_parent(t, g, c[5], false), 0);
  {
    ecs_entity x = ecs_transform_first_child(t, r);
    for (int k = 0; k < 6; k++, x = ecs_transform_next_sibling(t, x))
      CHECK(x == c[k]);
    CHECK(x == ECS_NULL);
  }
  /* remove the first, a middle, the last child; the last row moves each
  ** time into the hole */
  CHECK_EQ_INT(ecs_transform_remove(t, c[0]), ECS_ERR_OK);
  CHECK_WORLD(w);
  CHECK_EQ_INT(ecs_transform_remove(t, c[3]), ECS_ERR_OK);
  CHECK_WORLD(w);
  CHECK_EQ_INT(ecs_transform_remove(t, c[5]), ECS_ERR_OK); /* g becomes a root, world kept */
  CHECK_WORLD(w);
  CHECK(ecs_transform_parent(t, g) == ECS_NULL);
  CHECK_EQ_INT(ecs_transform_get_world(t, g, m), 0);
  CHECK(near(m[12], 3));
  {
    ecs_entity want[3] = {c[1], c[2], c[4]};
    ecs_entity x = ecs_transform_first_child(t, r);
    for (int k = 0; k < 3; k++, x = ecs_transform_next_sibling(t, x))
      CHECK(x == want[k]);
    CHECK(x == ECS_NULL);
  }
  CHECK_EQ_INT(ecs_transform_set_position(t, r, 5, 0, 0), 0);
  for (int k = 1; k < 5; k++) {
    if (k == 3) continue;
    CHECK_EQ_INT(ecs_transform_get_world(t, c[k], m), 0);
    CHECK(near(m[12], 6));
  }
  /* remove the parent: children become roots in place */
  CHECK_EQ_INT(ecs_transform_remove(t, r), ECS_ERR_OK);
  CHECK_WORLD(w);
  CHECK_EQ_INT(ecs_transform_get_world(t, c[4], m), 0);
  CHECK(near(m[12], 6));
  {
    ecs_trs l;
    CHECK_EQ_INT(ecs_transform_get_local(t, c[4], &l), 0);
    CHECK(near(l.position[0], 6));
  }
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* Destroying a parent: children vanish from it at once, keep their world,
** and read back a local equal to it; gc then reclaims the row. */
TEST(Transform_dead_parent_orphans_children) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  double s = sqrt(0.5), m[16], m2[16];
  ecs_trs pl = trs(1, 2, 3, 0, s, 0, s, 2, 2, 2);
  ecs_trs cl = trs(1, 0, 0, 0, 0, 0, 1, 1, 1, 1);
  ecs_entity p, c, g, top;
  ecs_trs l;
  CHECK(w != NULL);
  CHECK((top = make(w, t, NULL)) != ECS_NULL);
  CHECK((p = make(w, t, &pl)) != ECS_NULL);
  CHECK((c = make(w, t, &cl)) != ECS_NULL);
  CHECK((g = make(w, t, &cl)) != ECS_NULL);
  CHECK_EQ_INT(ecs_transform_set_parent(t, p, top, false), 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, c, p, false), 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, g, c, false), 0);
  CHECK_EQ_INT(ecs_transform_get_world(t, c, m), 0);
  CHECK(ecs_destroy(w, p));
  CHECK(ecs_transform_parent(t, c) == ECS_NULL);
  CHECK(ecs_transform_first_child(t, top) == ECS_NULL);
  CHECK_EQ_INT(ecs_transform_get_world(t, c, m2), 0);
  CHECK(mat_near(m2, m));
  CHECK_EQ_INT(ecs_transform_get_local(t, c, &l), 0);
  CHECK(near(l.position[0], m[12]) && near(l.position[2], m[14]));
  CHECK(near(l.scale[0], 2) && near(fabs(l.rotation[1]), s));
  /* moving the former grandparent no longer moves c */
  CHECK_EQ_INT(ecs_transform_set_position(t, top, 100, 0, 0), 0);
  CHECK_EQ_INT(ecs_transform_get_world(t, c, m2), 0);
  CHECK(mat_near(m2, m));
  /* writing to c first makes it a real root */
  CHECK_EQ_INT(ecs_transform_set_scale(t, c, 2, 2, 2), 0);
  CHECK_EQ_INT(ecs_transform_get_world(t, c, m2), 0);
  CHECK(mat_near(m2, m));
  CHECK(ecs_transform_parent(t, g) == c);
  CHECK_WORLD(w);
  CHECK_EQ_INT(ecs_world_gc(w, SIZE_MAX), 1);
  CHECK_WORLD(w);
  CHECK_EQ_INT(ecs_transform_get_world(t, c, m2), 0);
  CHECK(mat_near(m2, m));
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* The ancestor chain of a new parent may cross a dead row: it is repaired
** so no physical cycle can form through it. */
TEST(Transform_reparent_through_dead_row) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity c, d, p;
  CHECK(w != NULL);
  CHECK((c = make(w, t, NULL)) != ECS_NULL);
  CHECK((d = make(w, t, NULL)) != ECS_NULL);
  CHECK((p = make(w, t, NULL)) != ECS_NULL);
  CHECK_EQ_INT(ecs_transform_set_parent(t, d, c, false), 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, p, d, false), 0);
  CHECK(ecs_destroy(w, d));
  CHECK_EQ_INT(ecs_transform_set_parent(t, c, p, false), 0); /* no cycle now */
  CHECK(ecs_transform_parent(t, c) == p);
  CHECK_WORLD(w);
  CHECK_EQ_INT(ecs_world_gc(w, SIZE_MAX), 1);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Transform_keep_world) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  double s = sqrt(0.5), m[16], m2[16];
  ecs_trs pl = trs(5, 0, 0, 0, 0, s, s, 2, 2, 2);
  ecs_trs cl = trs(1, 2, 3, s, 0, 0, s, 1, 1, 1);
  ecs_trs zero = trs(0, 0, 0, 0, 0, 0, 1, 0, 1, 1);
  ecs_trs l;
  ecs_entity p, c, z;
  CHECK(w != NULL);
  CHECK((p = make(w, t, &pl)) != ECS_NULL);
  CHECK((c = make(w, t, &cl)) != ECS_NULL);
  CHECK((z = make(w, t, &zero)) != ECS_NULL);
  CHECK_EQ_INT(ecs_transform_get_world(t, c, m), 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, c, p, true), 0);
  CHECK_EQ_INT(ecs_transform_get_world(t, c, m2), 0);
  CHECK(mat_near(m2, m));
  CHECK_EQ_INT(ecs_transform_get_local(t, c, &l), 0);
  /* local = inverse(parent) * world: position ((1,2,3) - (5,0,0)) rotated
  ** by -90 about z and halved: (-4,2,3) -> (2,4,3)/2 = (1, 2, 1.5) */
  CHECK(near(l.position[0], 1) && near(l.position[1], 2) && near(l.position[2], 1.5));
  CHECK(near(l.scale[0], 0.5));
  /* then moving the parent moves it; propagate agrees with the local */
  CHECK_EQ_INT(ecs_transform_set_position(t, p, 6, 0, 0), 0);
  CHECK_EQ_INT(ecs_transform_get_world(t, c, m2), 0);
  CHECK(near(m2[12], m[12] + 1));
  /* keep_world detach */
  CHECK_EQ_INT(ecs_transform_get_world(t, c, m), 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, c, ECS_NULL, true), 0);
  CHECK_EQ_INT(ecs_transform_get_world(t, c, m2), 0);
  CHECK(mat_near(m2, m));
  /* under a singular parent keep_world is refused, nothing changes */
  CHECK_EQ_INT(ecs_transform_set_parent(t, c, z, true), ECS_ERR_KEEP_WORLD);
  CHECK(ecs_transform_parent(t, c) == ECS_NULL);
  CHECK_EQ_INT(ecs_transform_set_parent(t, c, z, false), 0);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Transform_destroy_tree) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity r, k[4], other, dead_kid, orphan;
  CHECK(w != NULL);
  CHECK((r = make(w, t, NULL)) != ECS_NULL);
  CHECK((other = make(w, t, NULL)) != ECS_NULL);
  for (int i = 0; i < 4; i++) {
    CHECK((k[i] = make(w, t, NULL)) != ECS_NULL);
    CHECK_EQ_INT(ecs_transform_set_parent(t, k[i], i < 2 ? r : k[i - 1], false), 0);
  }
  CHECK((dead_kid = make(w, t, NULL)) != ECS_NULL);
  CHECK((orphan = make(w, t, NULL)) != ECS_NULL);
  CHECK_EQ_INT(ecs_transform_set_parent(t, dead_kid, k[3], false), 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, orphan, dead_kid, false), 0);
  CHECK(ecs_destroy(w, dead_kid)); /* orphan is now a root, not in r's tree */
  CHECK_EQ_INT(ecs_transform_destroy_tree(t, r), 5);
  CHECK(!ecs_alive(w, r));
  for (int i = 0; i < 4; i++) CHECK(!ecs_alive(w, k[i]));
  CHECK(ecs_alive(w, orphan) && ecs_alive(w, other));
  CHECK_EQ_INT(ecs_transform_destroy_tree(t, r), 0);
  CHECK_WORLD(w);
  CHECK_EQ_INT(ecs_world_gc(w, SIZE_MAX), 6);
  CHECK_WORLD(w);
  CHECK(ecs_transform_has(t, orphan));
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* Bulk setters give the same worlds as one call per entity. */
TEST(Transform_batch_matches_single) {
  test_alloc a, b;
  ecs_transform *t, *u;
  ecs_world *w = new_world(&a, &t), *v = new_world(&b, &u);
  ecs_entity e[20], f[20];
  uint32_t inst[21];
  double xyz[63];
  ecs_trs loc[21];
  CHECK(w != NULL && v != NULL);
  for (int k = 0; k < 20; k++) {
    ecs_trs l = trs(k, 1, 0, 0, 0, 0.1 * k, 1, 1, 1 + 0.1 * k, 1);
    CHECK((e[k] = make(w, t, &l)) != ECS_NULL);
    CHECK((f[k] = make(v, u, &l)) != ECS_NULL);
    if (k > 0) {
      CHECK_EQ_INT(ecs_transform_set_parent(t, e[k], e[(k - 1) / 2], false), 0);
      CHECK_EQ_INT(ecs_transform_set_parent(u, f[k], f[(k - 1) / 2], false), 0);
    }
  }
  /* a child before its ancestor, and a duplicate */
  for (int k = 0; k < 20; k++) {
    int j = (k * 7) % 20;
    ecs_trs l = trs(j * 0.5, -j, 2, 0.2, 0, 0, 1, 1, 2, 1);
    inst[k] = ecs_transform_lookup(t, e[j]);
    loc[k] = l;
    xyz[3 * k] = j;
    xyz[3 * k + 1] = 2;
    xyz[3 * k + 2] = -j;
  }
  inst[20] = inst[3];
  loc[20] = loc[3];
  xyz[60] = xyz[9];
  xyz[61] = xyz[10];
  xyz[62] = xyz[11];
  CHECK_EQ_INT(ecs_transform_set_locals(t, inst, loc, 21), 0);
  for (int k = 0; k < 20; k++)
    CHECK_EQ_INT(ecs_transform_set_local(u, f[(k * 7) % 20], &loc[k]), 0);
  for (int k = 0; k < 20; k++) {
    double m1[16], m2[16];
    CHECK_EQ_INT(ecs_transform_get_world(t, e[k], m1), 0);
    CHECK_EQ_INT(ecs_transform_get_world(u, f[k], m2), 0);
    CHECK(mat_near(m1, m2));
  }
  CHECK_EQ_INT(ecs_transform_set_positions(t, inst, xyz, 21), 0);
  for (int k = 0; k < 20; k++)
    CHECK_EQ_INT(ecs_transform_set_position(u, f[(k * 7) % 20], xyz[3 * k],
                                            xyz[3 * k + 1], xyz[3 * k + 2]), 0);
  for (int k = 0; k < 20; k++) {
    double m1[16], m2[16];
    CHECK_EQ_INT(ecs_transform_get_world(t, e[k], m1), 0);
    CHECK_EQ_INT(ecs_transform_get_world(u, f[k], m2), 0);
    CHECK(mat_near(m1, m2));
  }
  /* all or nothing */
  {
    double before[16], after[16];
    CHECK_EQ_INT(ecs_transform_get_world(t, e[0], before), 0);
    inst[5] = 999;
    xyz[0] = 1234;
    CHECK_EQ_INT(ecs_transform_set_positions(t, inst, xyz, 21), ECS_ERR_BAD_ROWS);
    inst[5] = inst[4];
    xyz[1] = (double)INFINITY;
    CHECK_EQ_INT(ecs_transform_set_positions(t, inst, xyz, 21), ECS_ERR_NOT_FINITE);
    /* set_locals: a row past the end, a zero and a non-finite rotation */
    inst[7] = ecs_transform_size(t);
    CHECK_EQ_INT(ecs_transform_set_locals(t, inst, loc, 21), ECS_ERR_BAD_ROWS);
    inst[7] = inst[6];
    loc[9].rotation[0] = loc[9].rotation[3] = 0;
    CHECK_EQ_INT(ecs_transform_set_locals(t, inst, loc, 21), ECS_ERR_ZERO_ROTATION);
    loc[9].rotation[3] = (double)NAN;
    CHECK_EQ_INT(ecs_transform_set_locals(t, inst, loc, 21), ECS_ERR_NOT_FINITE);
    CHECK_EQ_INT(ecs_transform_get_world(t, e[0], after), 0);
    CHECK(mat_near(before, after));
  }
  CHECK_WORLD(w);
  ecs_world_free(w);
  ecs_world_free(v);
  CHECK_EQ_INT(a.blocks, 0);
  CHECK_EQ_INT(b.blocks, 0);
}

TEST(Transform_parent_first_swap) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity c, p;
  CHECK(w != NULL);
  CHECK((c = make(w, t, NULL)) != ECS_NULL);
  CHECK((p = make(w, t, NULL)) != ECS_NULL);
  CHECK(ecs_transform_lookup(t, c) < ecs_transform_lookup(t, p));
  CHECK_EQ_INT(ecs_transform_set_parent(t, c, p, false), 0);
  CHECK(ecs_transform_lookup(t, p) < ecs_transform_lookup(t, c));
  CHECK(ecs_transform_parent(t, c) == p);
  CHECK_WORLD(w);
  ecs_transform_set_parent_first(t, false);
  CHECK_EQ_INT(ecs_transform_set_parent(t, c, ECS_NULL, false), 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, p, c, false), 0);
  CHECK(ecs_transform_lookup(t, c) > ecs_transform_lookup(t, p));
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* xorshift, so runs repeat */
static uint32_t rnd(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/*
** Random edits; after each, the world passes its check and every live
** node's world equals parent_world * TRS(local) (uniform scales, so the
** decomposition of kept worlds is exact up to rounding).
*/
TEST(Transform_random_edits_keep_invariants) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity e[64];
  uint32_t seed = 12345;
  CHECK(w != NULL);
  for (int k = 0; k < 64; k++) e[k] = ECS_NULL;
  for (int step = 0; step < 20000; step++) {
    int k = (int)(rnd(&seed) % 64), j = (int)(rnd(&seed) % 64);
    uint32_t op = rnd(&seed) % 10;
    double sc = 0.5 + (rnd(&seed) % 100) / 50.0;
    ecs_trs l = trs((double)(rnd(&seed) % 200) / 10 - 10, (double)(rnd(&seed) % 7),
                    -1, (double)(rnd(&seed) % 5) - 2, (double)(rnd(&seed) % 3),
                    (double)(rnd(&seed) % 4) - 1, 1 + (double)(rnd(&seed) % 3),
                    sc, sc, sc);
    if (!ecs_alive(w, e[k])) {
      e[k] = make(w, t, &l);
      CHECK(e[k] != ECS_NULL);
      continue;
    }
    switch (op) {
      case 0: CHECK(ecs_destroy(w, e[k])); break;
      case 1: CHECK_EQ_INT(ecs_transform_remove(t, e[k]), ECS_ERR_OK); ecs_destroy(w, e[k]); break;
      case 2: case 3: {
        ecs_err err = ecs_transform_set_parent(t, e[k], ecs_alive(w, e[j]) ? e[j] : ECS_NULL,
                                               rnd(&seed) % 2);
        CHECK(err == ECS_ERR_OK || err == ECS_ERR_CYCLE);
        break;
      }
      case 4: ecs_world_gc(w, rnd(&seed) % 3); break;
      case 5: if (rnd(&seed) % 20 == 0) ecs_transform_destroy_tree(t, e[k]); break;
      default: CHECK_EQ_INT(ecs_transform_set_local(t, e[k], &l), 0); break;
    }
    if (step % 50 == 0 || op < 2) {
      CHECK_WORLD(w);
      for (int i = 0; i < 64; i++) {
        ecs_trs li;
        ecs_entity p;
        double m[16], pm[16], lm[16], want[16];
        if (!ecs_transform_has(t, e[i])) continue;
        CHECK_EQ_INT(ecs_transform_get_local(t, e[i], &li), 0);
        CHECK_EQ_INT(ecs_transform_get_world(t, e[i], m), 0);
        naive_trs(&li, lm);
        p = ecs_transform_parent(t, e[i]);
        if (p != ECS_NULL) {
          CHECK_EQ_INT(ecs_transform_get_world(t, p, pm), 0);
          mul(pm, lm, want);
        } else {
          memcpy(want, lm, sizeof want);
        }
        for (int q = 0; q < 16; q++)
          if (!(fabs(m[q] - want[q]) < 1e-6 * (1 + fabs(want[q])))) {
            fprintf(stderr, "step %d node %d m[%d] %.12g want %.12g\n", step, i, q,
                    m[q], want[q]);
            CHECK(0);
          }
      }
    }
  }
  ecs_world_gc(w, SIZE_MAX);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* sort: depth-first order, links and map remapped, worlds unchanged. */
TEST(Transform_sort_orders_depth_first) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity e[200];
  double before[200][16];
  uint32_t seed = 99;
  CHECK(w != NULL);
  ecs_transform_set_parent_first(t, false);
  for (int k = 0; k < 200; k++) {
    ecs_trs l = trs(k, 1, 0, 0, 0, 0.01 * k, 1, 1, 1, 1);
    CHECK((e[k] = make(w, t, &l)) != ECS_NULL);
  }
  for (int k = 1; k < 200; k++) {
    ecs_err err = ecs_transform_set_parent(t, e[k], e[rnd(&seed) % 200], false);
    CHECK(err == ECS_ERR_OK || err == ECS_ERR_CYCLE);
  }
  CHECK(ecs_destroy(w, e[7]) && ecs_destroy(w, e[100])); /* dead rows too */
  for (int k = 0; k < 200; k++)
    if (ecs_alive(w, e[k])) CHECK_EQ_INT(ecs_transform_get_world(t, e[k], before[k]), 0);
  CHECK_EQ_INT(ecs_transform_sort(t), ECS_ERR_OK);
  CHECK_WORLD(w);
  for (int k = 0; k < 200; k++) {
    double m[16];
    uint32_t i = ecs_transform_lookup(t, e[k]);
    if (!ecs_alive(w, e[k])) continue;
    CHECK_EQ_INT(ecs_transform_get_world(t, e[k], m), 0);
    CHECK(mat_near(m, before[k]));
    if (ecs_transform_parent(t, e[k]) != ECS_NULL)
      CHECK(ecs_transform_lookup(t, ecs_transform_parent(t, e[k])) < i);
  }
  CHECK_EQ_INT(ecs_transform_set_position(t, e[0], 5, 5, 5), 0);
  CHECK_WORLD(w);
  ecs_world_gc(w, SIZE_MAX);
  CHECK_WORLD(w);
  /* out of memory: nothing changes */
  {
    uint32_t i0 = ecs_transform_lookup(t, e[1]);
    for (long off = 1; off <= 2; off++) {
      long blocks = a.blocks;
      a.fail_at = a.calls + off;
      CHECK_EQ_INT(ecs_transform_sort(t), ECS_ERR_NOMEM);
      a.fail_at = 0;
      CHECK_EQ_INT(a.blocks, blocks);
      CHECK_EQ_INT(ecs_transform_lookup(t, e[1]), i0);
      CHECK_WORLD(w);
    }
  }
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* One scenario; @return 1 when it ran to the end. */
static int oom_script(ecs_world *w, ecs_transform *t) {
  ecs_entity e[40];
  if (ecs_create_n(w, e, 40) != ECS_ERR_OK) return 0;
  for (int k = 0; k < 40; k++) {
    if (ecs_transform_add(t, e[k], NULL) != ECS_ERR_OK) return 0;
    if (k > 0 && ecs_transform_set_parent(t, e[k], e[k / 2], false) != ECS_ERR_OK)
      return 0;
    if (ecs_world_check(w) != NULL) return 0;
  }
  ecs_destroy(w, e[3]);
  ecs_world_gc(w, SIZE_MAX);
  {
    ecs_entity f[10];
    if (ecs_create_n(w, f, 10) != ECS_ERR_OK) return 0;
    for (int k = 0; k < 10; k++)
      if (ecs_transform_add(t, f[k], NULL) != ECS_ERR_OK) return 0;
  }
  return 1;
}

TEST(Transform_oom_at_every_allocation) {
  int done = 0;
  for (long n = 1; n < 200 && !done; n++) {
    test_alloc a;
    ecs_world *w;
    ecs_transform *t = NULL;
    memset(&a, 0, sizeof a);
    a.fail_at = n;
    w = ecs_world_new(test_allocf, &a);
    if (w != NULL) {
      if (ecs_transform_new(w, &t) == ECS_ERR_OK) {
        done = oom_script(w, t);
        if (!done) {
          const char *bad = ecs_world_check(w);
          if (bad != NULL) fprintf(stderr, "fail_at %ld: %s\n", n, bad);
          CHECK(bad == NULL);
          /* and it still works */
          a.fail_at = 0;
          {
            ecs_entity e;
            CHECK(ecs_create(w, &e) == ECS_ERR_OK);
            CHECK(ecs_transform_add(t, e, NULL) == ECS_ERR_OK);
            CHECK_WORLD(w);
          }
        }
      } else {
        CHECK(ecs_transform_of(w) == NULL);
      }
      ecs_world_free(w);
    }
    CHECK_EQ_INT(a.blocks, 0);
  }
  CHECK(done);
}

/*
** Building a chain node by node, each new node under the previous one:
** the new child is a leaf, so set_parent's cycle check is O(1) and the
** build linear (a walk over every ancestor made 200k nodes take minutes).
** Cycles through the chain are still refused, from either end.
*/
TEST(Transform_long_chain_builds_linear) {
  enum { N = 200000 };
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity *e = (ecs_entity *)malloc(N * sizeof *e);
  ecs_trs step = trs(1, 0, 0, 0, 0, 0, 1, 1, 1, 1);
  double m[16];
  int ok = w != NULL && e != NULL && ecs_create_n(w, e, N) == ECS_ERR_OK;
  for (uint32_t i = 0; ok && i < N; i++) {
    ok = ecs_transform_add(t, e[i], &step) == ECS_ERR_OK;
    if (ok && i > 0) ok = ecs_transform_set_parent(t, e[i], e[i - 1], false) == ECS_ERR_OK;
  }
  if (!ok) free(e);
  CHECK(ok);
  ok = ecs_transform_get_world(t, e[N - 1], m) == ECS_ERR_OK && m[12] == (double)N &&
       ecs_transform_parent(t, e[N - 1]) == e[N - 2] &&
       ecs_transform_set_parent(t, e[0], e[N - 1], false) == ECS_ERR_CYCLE &&
       ecs_transform_set_parent(t, e[N / 2], e[N - 1], true) == ECS_ERR_CYCLE &&
       ecs_transform_set_parent(t, e[0], e[1], false) == ECS_ERR_CYCLE &&
       ecs_world_check(w) == NULL;
  free(e);
  CHECK(ok);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* keep_world failures say which matrix is at fault; nothing changes. */
TEST(Transform_keep_world_errors_name_the_cause) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_trs huge = trs(0, 0, 0, 0, 0, 0, 1, 1e200, 1e200, 1e200);
  ecs_trs tiny = trs(0, 0, 0, 0, 0, 0, 1, 1e-200, 1e-200, 1e-200);
  ecs_trs small = trs(4, 5, 6, 0, 0, 0, 1, 1e-100, 1e-100, 1e-100);
  ecs_trs flat = trs(0, 0, 0, 0, 0, 0, 1, 1, 0, 1);
  ecs_trs one = trs(1, 2, 3, 0, 0, 0, 1, 1, 1, 1), l;
  ecs_entity p, c, o, f, ti, sm;
  double m[16], m2[16];
  const char *why;
  CHECK(w != NULL);
  CHECK((p = make(w, t, &huge)) != ECS_NULL);
  CHECK((c = make(w, t, &huge)) != ECS_NULL);
  CHECK((o = make(w, t, &one)) != ECS_NULL);
  CHECK((f = make(w, t, &flat)) != ECS_NULL);
  CHECK((ti = make(w, t, &tiny)) != ECS_NULL);
  CHECK((sm = make(w, t, &small)) != ECS_NULL);
  CHECK_EQ_INT(ecs_transform_set_parent(t, c, p, false), 0); /* world 1e400 */
  CHECK(ecs_transform_keep_world_error(t, o, ECS_NULL) == NULL);
  CHECK_EQ_INT(ecs_transform_set_parent(t, c, ECS_NULL, true), ECS_ERR_KEEP_WORLD);
  why = ecs_transform_keep_world_error(t, c, ECS_NULL);
  CHECK(why != NULL && strcmp(why, "keep_world: the child's world matrix is not finite") == 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, o, c, true), ECS_ERR_KEEP_WORLD);
  why = ecs_transform_keep_world_error(t, o, c);
  CHECK(why != NULL && strcmp(why, "keep_world: the parent's world matrix is not finite") == 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, o, f, true), ECS_ERR_KEEP_WORLD);
  why = ecs_transform_keep_world_error(t, o, f);
  CHECK(why != NULL && strcmp(why, "keep_world under a singular parent matrix") == 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, p, ti, true), ECS_ERR_KEEP_WORLD);
  why = ecs_transform_keep_world_error(t, p, ti);
  CHECK(why != NULL && strstr(why, "local transform that keeps the world matrix is not finite"));
  CHECK(ecs_transform_parent(t, c) == p && ecs_transform_parent(t, o) == ECS_NULL);
  /* a parent scaled by 1e-100 is invertible: the world is kept */
  CHECK_EQ_INT(ecs_transform_get_world(t, o, m), 0);
  CHECK_EQ_INT(ecs_transform_set_parent(t, o, sm, true), 0);
  CHECK_EQ_INT(ecs_transform_get_world(t, o, m2), 0);
  CHECK(mat_near(m2, m));
  CHECK_EQ_INT(ecs_transform_get_local(t, o, &l), 0);
  CHECK(fabs(l.position[0] / -3e100 - 1) < 1e-12 && fabs(l.scale[0] / 1e100 - 1) < 1e-12);
  /* the overflowed child orphaned by its parent's death gets a finite local */
  CHECK(ecs_destroy(w, p));
  CHECK_EQ_INT(ecs_transform_get_local(t, c, &l), 0);
  CHECK(l.scale[0] == DBL_MAX && isfinite(l.position[0]));
  CHECK(ecs_world_gc(w, SIZE_MAX) == 1);
  CHECK_WORLD(w);
  CHECK_EQ_INT(ecs_transform_set_position(t, c, 1, 2, 3), 0);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* Quaternions are normalized whatever their finite size; only 0 fails. */
TEST(Transform_extreme_quaternions) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  double s = sqrt(0.5);
  static const double q[][8] = {
    {1e200, 1e200, 0, 0, 0, 0, 0, 0},
    {0, 0, -DBL_MAX, DBL_MAX, 0, 0, -1, 1},
    {1e-200, 0, 0, 1e-200, 0, 0, 0, 0},
    {5e-324, 0, 0, 0, 1, 0, 0, 0},
  };
  ecs_trs l;
  ecs_entity e;
  CHECK(w != NULL);
  CHECK((e = make(w, t, NULL)) != ECS_NULL);
  for (size_t k = 0; k < sizeof q / sizeof q[0]; k++) {
    CHECK_EQ_INT(ecs_transform_set_rotation(t, e, q[k][0], q[k][1], q[k][2], q[k][3]), 0);
    CHECK_EQ_INT(ecs_transform_get_local(t, e, &l), 0);
    for (int i = 0; i < 4; i++) {
      double want = q[k][i] == 0 ? 0 : (k == 3 ? 1 : q[k][i] > 0 ? s : -s);
      CHECK(fabs(l.rotation[i] - want) < 1e-15);
    }
  }
  CHECK_EQ_INT(ecs_transform_set_rotation(t, e, 0, 0, 0, 0), ECS_ERR_ZERO_ROTATION);
  CHECK_EQ_INT(ecs_transform_set_rotation(t, e, INFINITY, 0, 0, 1), ECS_ERR_NOT_FINITE);
  CHECK_EQ_INT(ecs_transform_set_position(t, e, 0, NAN, 0), ECS_ERR_NOT_FINITE);
  CHECK_EQ_INT(ecs_transform_set_scale(t, e, 1, 1, -INFINITY), ECS_ERR_NOT_FINITE);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Transform_new_registers_once),
  CASE(Transform_add_has_remove),
  CASE(Transform_hand_computed_matrices),
  CASE(Transform_chain_propagates),
  CASE(Transform_cycles_and_errors),
  CASE(Transform_swap_remove_fixes_links),
  CASE(Transform_dead_parent_orphans_children),
  CASE(Transform_reparent_through_dead_row),
  CASE(Transform_keep_world),
  CASE(Transform_destroy_tree),
  CASE(Transform_batch_matches_single),
  CASE(Transform_parent_first_swap),
  CASE(Transform_random_edits_keep_invariants),
  CASE(Transform_sort_orders_depth_first),
  CASE(Transform_oom_at_every_allocation),
  CASE(Transform_long_chain_builds_linear),
  CASE(Transform_keep_world_errors_name_the_cause),
  CASE(Transform_extreme_quaternions),
};

TEST_MAIN(cases)
