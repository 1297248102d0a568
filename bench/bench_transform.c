#define _POSIX_C_SOURCE 199309L
/*
** bench_transform.c -- the transform manager from C: 10k roots with 4
** children each; per frame, set every root's local position (propagating
** to its children) and read every leaf's world position. Prints ns per
** node (frame time / 50k nodes) for:
**   - the bulk API (ecs_transform_set_positions by instance, world_at),
**   - one ecs_transform_set_position call per root (entity API),
** and for three memory layouts of the rows: built parent-then-children
** (ordered), built in shuffled order with the parent-first swap off, and
** shuffled with it on, shuffled then ecs_transform_sort; and a naive pointer-based scene graph (a malloc'd
** node per entity, recursive update) measured in the same run.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ecs.h"
#include "transform.h"

#define ROOTS 10000
#define KIDS 4
#define NODES (ROOTS * (KIDS + 1))
#define FRAMES 50
#define RUNS 9

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t seed = 2463534242u;
static uint32_t rnd(void) {
  seed ^= seed << 13;
  seed ^= seed >> 17;
  seed ^= seed << 5;
  return seed;
}

static ecs_entity roots[ROOTS], leaves[ROOTS * KIDS];
static uint32_t root_rows[ROOTS], leaf_rows[ROOTS * KIDS];
static double xyz[ROOTS * 3];
static volatile double sink;

/* layout 0: ordered; 1: shuffled, swap off; 2: shuffled, swap on;
** 3: shuffled, then ecs_transform_sort */
static ecs_world *build(int layout, ecs_transform **tp) {
  ecs_world *w = ecs_world_new(NULL, NULL);
  ecs_transform *t;
  static ecs_entity all[NODES];
  static uint32_t order[NODES];
  ecs_trs l = {{1, 0, 0}, {0, 0, 0.3826834323650898, 0.9238795325112867}, {1, 1, 1}};
  if (w == NULL || ecs_transform_new(w, &t) != ECS_ERR_OK) exit(1);
  if (ecs_create_n(w, all, NODES) != ECS_ERR_OK) exit(1);
  for (uint32_t i = 0; i < NODES; i++) order[i] = i;
  if (layout != 0)
    for (uint32_t i = NODES - 1; i > 0; i--) {
      uint32_t j = rnd() % (i + 1), tmp = order[i];
      order[i] = order[j];
      order[j] = tmp;
    }
  ecs_transform_set_parent_first(t, layout != 1);
  for (uint32_t i = 0; i < NODES; i++)
    if (ecs_transform_add(t, all[order[i]], &l) != ECS_ERR_OK) exit(1);
  for (uint32_t r = 0; r < ROOTS; r++) {
    roots[r] = all[r * (KIDS + 1)];
    for (uint32_t k = 0; k < KIDS; k++) {
      leaves[r * KIDS + k] = all[r * (KIDS + 1) + 1 + k];
      if (ecs_transform_set_parent(t, leaves[r * KIDS + k], roots[r], false) != 0)
        exit(1);
    }
  }
  if (layout == 3 && ecs_transform_sort(t) != ECS_ERR_OK) exit(1);
  *tp = t;
  return w;
}

static double frame_bulk(ecs_transform *t, int frame) {
  double sum = 0;
  for (uint32_t r = 0; r < ROOTS; r++) {
    xyz[3 * r] = r + frame * 0.01;
    xyz[3 * r + 1] = frame;
    xyz[3 * r + 2] = 0;
  }
  ecs_transform_lookup_n(t, roots, root_rows, ROOTS);
  if (ecs_transform_set_positions(t, root_rows, xyz, ROOTS) != ECS_ERR_OK) exit(1);
  ecs_transform_lookup_n(t, leaves, leaf_rows, ROOTS * KIDS);
  for (uint32_t i = 0; i < ROOTS * KIDS; i++)
    sum += ecs_transform_world_at(t, leaf_rows[i])[12];
  return sum;
}

/* propagation alone: rows looked up once, positions set in bulk */
static void frame_propagate(ecs_transform *t, int frame) {
  for (uint32_t r = 0; r < ROOTS; r++) xyz[3 * r + 1] = frame;
  if (ecs_transform_set_positions(t, root_rows, xyz, ROOTS) != ECS_ERR_OK) exit(1);
}

static double frame_calls(ecs_transform *t, int frame) {
  double sum = 0, m[16];
  for (uint32_t r = 0; r < ROOTS; r++)
    if (ecs_transform_set_position(t, roots[r], r + frame * 0.01, frame, 0) != 0) exit(1);
  for (uint32_t i = 0; i < ROOTS * KIDS; i++) {
    if (ecs_transform_get_world(t, leaves[i], m) != ECS_ERR_OK) exit(1);
    sum += m[12];
  }
  return sum;
}

/* The naive baseline: a heap node per entity, pointers, recursive update. */
typedef struct node {
  double p[3], q[4], s[3];
  double world[16];
  struct node *parent;
  struct node *child[KIDS];
  int nchild;
} node;

static void naive_local(const node *n, double *m) {
  double x = n->q[0], y = n->q[1], z = n->q[2], w = n->q[3];
  m[0] = (1 - 2 * (y * y + z * z)) * n->s[0];
  m[1] = 2 * (x * y + z * w) * n->s[0];
  m[2] = 2 * (x * z - y * w) * n->s[0];
  m[4] = 2 * (x * y - z * w) * n->s[1];
  m[5] = (1 - 2 * (x * x + z * z)) * n->s[1];
  m[6] = 2 * (y * z + x * w) * n->s[1];
  m[8] = 2 * (x * z + y * w) * n->s[2];
  m[9] = 2 * (y * z - x * w) * n->s[2];
  m[10] = (1 - 2 * (x * x + y * y)) * n->s[2];
  m[3] = m[7] = m[11] = 0;
  m[12] = n->p[0];
  m[13] = n->p[1];
  m[14] = n->p[2];
  m[15] = 1;
}

static void naive_update(node *n) {
  double l[16];
  naive_local(n, l);
  if (n->parent == NULL) {
    memcpy(n->world, l, sizeof l);
  } else {
    const double *a = n->parent->world;
    for (int c = 0; c < 4; c++)
      for (int r = 0; r < 4; r++) {
        double s = 0;
        for (int k = 0; k < 4; k++) s += a[k * 4 + r] * l[c * 4 + k];
        n->world[c * 4 + r] = s;
      }
  }
  for (int i = 0; i < n->nchild; i++) naive_update(n->child[i]);
}

/*
** Seconds to build a chain of n nodes, each new node parented to the
** previous one (set_parent calls only; best of RUNS). Linear when
** set_parent's cycle check costs nothing for a leaf child: the 40k/10k
** ratio is then about 4 (it was 16 when every ancestor was walked).
*/
static double chain_build(uint32_t n) {
  double best = 1e9;
  ecs_entity *e = (ecs_entity *)malloc(n * sizeof *e);
  if (e == NULL) exit(1);
  for (int run = 0; run < RUNS; run++) {
    ecs_world *w = ecs_world_new(NULL, NULL);
    ecs_transform *t;
    double t0;
    if (w == NULL || ecs_transform_new(w, &t) != ECS_ERR_OK) exit(1);
    if (ecs_create_n(w, e, n) != ECS_ERR_OK) exit(1);
    for (uint32_t i = 0; i < n; i++)
      if (ecs_transform_add(t, e[i], NULL) != ECS_ERR_OK) exit(1);
    t0 = now();
    for (uint32_t i = 1; i < n; i++)
      if (ecs_transform_set_parent(t, e[i], e[i - 1], false) != ECS_ERR_OK) exit(1);
    t0 = now() - t0;
    if (t0 < best) best = t0;
    ecs_world_free(w);
  }
  free(e);
  return best;
}

int main(void) {
  static const char *layout_name[4] = {"ordered build", "shuffled, swap off",
                                       "shuffled, swap on", "shuffled, then sort"};
  double best_bulk[4], best_calls[4], best_prop[4], best_naive = 1e9;
  static node *nroots[ROOTS], *nleaves[ROOTS * KIDS];
  for (int layout = 0; layout < 4; layout++) {
    ecs_transform *t;
    ecs_world *w = build(layout, &t);
    best_bulk[layout] = best_calls[layout] = best_prop[layout] = 1e9;
    for (int run = 0; run < RUNS; run++) {
      double t0 = now(), tp;
      ecs_transform_lookup_n(t, roots, root_rows, ROOTS);
      for (int f = 0; f < FRAMES; f++) frame_propagate(t, f);
      tp = now() - t0;
      if (tp < best_prop[layout]) best_prop[layout] = tp;
      t0 = now();
      for (int f = 0; f < FRAMES; f++) sink = frame_bulk(t, f);
      double t1 = now();
      for (int f = 0; f < FRAMES; f++) sink = frame_calls(t, f);
      double t2 = now();
      if (t1 - t0 < best_bulk[layout]) best_bulk[layout] = t1 - t0;
      if (t2 - t1 < best_calls[layout]) best_calls[layout] = t2 - t1;
    }
    if (ecs_world_check(w) != NULL) return 1;
    ecs_world_free(w);
  }
  /* naive pointer scene graph, nodes malloc'd in shuffled order */
  {
    static node *pool[NODES];
    for (int i = 0; i < NODES; i++) {
      pool[i] = (node *)calloc(1, sizeof(node));
      if (pool[i] == NULL) return 1;
    }
    for (int i = NODES - 1; i > 0; i--) {
      int j = (int)(rnd() % (uint32_t)(i + 1));
      node *tmp = pool[i];
      pool[i] = pool[j];
      pool[j] = tmp;
    }
    for (int r = 0; r < ROOTS; r++) {
      node *n = pool[r * (KIDS + 1)];
      nroots[r] = n;
      for (int k = 0; k < KIDS + 1; k++) {
        node *x = pool[r * (KIDS + 1) + k];
        x->p[0] = 1;
        x->q[2] = 0.3826834323650898;
        x->q[3] = 0.9238795325112867;
        x->s[0] = x->s[1] = x->s[2] = 1;
        if (k > 0) {
          x->parent = n;
          n->child[n->nchild++] = x;
          nleaves[r * KIDS + k - 1] = x;
        }
      }
      naive_update(n);
    }
    for (int run = 0; run < RUNS; run++) {
      double t0 = now(), sum = 0;
      for (int f = 0; f < FRAMES; f++) {
        for (int r = 0; r < ROOTS; r++) {
          nroots[r]->p[0] = r + f * 0.01;
          nroots[r]->p[1] = f;
          naive_update(nroots[r]);
        }
        for (int i = 0; i < ROOTS * KIDS; i++) sum += nleaves[i]->world[12];
      }
      sink = sum;
      t0 = now() - t0;
      if (t0 < best_naive) best_naive = t0;
    }
    for (int i = 0; i < NODES; i++) free(pool[i]);
  }
  printf("transform from C: %d roots x %d children, %d frames, best of %d\n",
         ROOTS, KIDS, FRAMES, RUNS);
  printf("%-44s %10s %8s\n", "frame (set roots, read leaves)", "ns/node", "x naive");
  for (int layout = 0; layout < 4; layout++) {
    double b = best_bulk[layout] * 1e9 / FRAMES / NODES;
    double c = best_calls[layout] * 1e9 / FRAMES / NODES;
    double n = best_naive * 1e9 / FRAMES / NODES;
    double p = best_prop[layout] * 1e9 / FRAMES / NODES;
    printf("propagation only, %-26s %10.1f %8.2f\n", layout_name[layout], p, p / n);
    printf("bulk by instance, %-26s %10.1f %8.2f\n", layout_name[layout], b, b / n);
    printf("one call per entity, %-23s %10.1f %8.2f\n", layout_name[layout], c, c / n);
  }
  printf("%-44s %10.1f %8.2f\n", "naive pointer scene graph (baseline)",
         best_naive * 1e9 / FRAMES / NODES, 1.0);
  {
    double c10 = chain_build(10000), c40 = chain_build(40000);
    printf("chain build (set_parent to the previous node): 10k %.2f ms, 40k %.2f ms, "
           "ratio 40k/10k %.2f (linear: 4)\n", c10 * 1e3, c40 * 1e3, c40 / c10);
  }
  return 0;
}
