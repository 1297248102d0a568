#define _POSIX_C_SOURCE 199309L
/*
** bench_transform_query.c -- transforms as query terms, from C: 10k ships
** with 3 child turrets each (40k nodes). Per frame, every ship moves by
** its velocity and every turret's world position is read. Three ways,
** measured in the same run:
**   - propagation alone: the ships' new positions set in bulk by instance
**     (ecs_transform_set_positions: one batch propagation), nothing read;
**     the baseline;
**   - the query path: an expression "transform.px += Velocity.dx * dt"
**     (ecs_program_run over a query of Velocity and the transform's
**     columns), then a native system reading transform.wx .. wz of every
**     turret (a query of Turret and the columns);
**   - one call per node: ecs_transform_set_position per ship, then
**     ecs_transform_get_world per turret.
** Prints ns per node and each way's ratio to propagation alone.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ecs.h"
#include "query.h"
#include "transform.h"

#define SHIPS 10000
#define TURRETS 3
#define NODES (SHIPS * (TURRETS + 1))
#define FRAMES 20
#define RUNS 7

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ecs_entity ships[SHIPS], turrets[SHIPS * TURRETS];
static uint32_t ship_rows[SHIPS];
static double xyz[SHIPS * 3];
static volatile double sink;

static void check(ecs_err err) {
  if (err != ECS_ERR_OK) {
    fprintf(stderr, "bench_transform_query: %s\n", ecs_strerror(err));
    exit(1);
  }
}

static void sum_world(ecs_world *w, const ecs_view *v, void *ud) {
  const double *x = (const double *)v->column[0];
  const double *y = (const double *)v->column[1];
  const double *z = (const double *)v->column[2];
  double s = 0;
  (void)w;
  for (uint32_t i = 0; i < v->count; i++) s += x[i] + y[i] + z[i];
  *(double *)ud += s;
}

int main(void) {
  ecs_world *w = ecs_world_new(NULL, NULL);
  ecs_transform *t;
  ecs_component *vel, *tur, *cols;
  ecs_query *qmove, *qread;
  ecs_program *prog;
  ecs_column_ref wcols[3];
  static const ecs_field_def vdef[] = {{"dx", ECS_F64}, {"dy", ECS_F64}};
  double best_prop = 1e9, best_query = 1e9, best_calls = 1e9, dt = 1.0 / 60;
  char msg[128];
  if (w == NULL) return 1;
  check(ecs_transform_new(w, &t));
  check(ecs_component_new(w, "Velocity", vdef, 2, &vel));
  check(ecs_component_new(w, "Turret", NULL, 0, &tur));
  cols = ecs_transform_columns(t);
  for (uint32_t s = 0; s < SHIPS; s++) {
    ecs_trs l = {{s, 0, 0}, {0, 0, 0.3826834323650898, 0.9238795325112867}, {1, 1, 1}};
    ecs_instance i;
    check(ecs_create(w, &ships[s]));
    check(ecs_transform_add(t, ships[s], &l));
    check(ecs_component_add(w, vel, ships[s], &i, NULL));
    ((double *)ecs_component_column(vel, 0))[i] = 1.0 + s % 7;
    ((double *)ecs_component_column(vel, 1))[i] = 0.5;
    for (uint32_t k = 0; k < TURRETS; k++) {
      ecs_trs tl = {{0, 1.0 + k, 0}, {0, 0, 0, 1}, {1, 1, 1}};
      ecs_entity e;
      check(ecs_create(w, &e));
      check(ecs_transform_add(t, e, &tl));
      check(ecs_transform_set_parent(t, e, ships[s], false));
      check(ecs_component_add(w, tur, e, NULL, NULL));
      turrets[s * TURRETS + k] = e;
    }
  }
  {
    ecs_component *mv[2], *rd[2];
    mv[0] = vel;
    mv[1] = cols;
    rd[0] = tur;
    rd[1] = cols;
    check(ecs_query_new(w, mv, 2, NULL, 0, &qmove));
    check(ecs_query_new(w, rd, 2, NULL, 0, &qread));
  }
  {
    const char *src = "transform.px += Velocity.dx * dt; "
                      "transform.py += Velocity.dy * dt";
    if (ecs_program_compile(w, qmove, src, strlen(src), &prog, msg,
                            sizeof msg) != ECS_ERR_OK) {
      fprintf(stderr, "bench_transform_query: %s\n", msg);
      return 1;
    }
  }
  for (int k = 0; k < 3; k++) {
    wcols[k].c = cols;
    wcols[k].field = 10u + (uint32_t)k; /* wx, wy, wz */
    wcols[k].write = false;
  }
  ecs_transform_lookup_n(t, ships, ship_rows, SHIPS);
  for (int run = 0; run < RUNS; run++) {
    double t0 = now(), t1, t2, t3, sum = 0;
    for (int f = 0; f < FRAMES; f++) {
      for (uint32_t s = 0; s < SHIPS; s++) {
        xyz[3 * s] = s + f * dt;
        xyz[3 * s + 1] = f * dt;
        xyz[3 * s + 2] = 0;
      }
      check(ecs_transform_set_positions(t, ship_rows, xyz, SHIPS));
    }
    t1 = now();
    for (int f = 0; f < FRAMES; f++) {
      check(ecs_program_run(w, prog, &dt, NULL));
      check(ecs_query_run(w, qread, wcols, 3, dt, sum_world, &sum, NULL));
    }
    t2 = now();
    for (int f = 0; f < FRAMES; f++) {
      double m[16];
      for (uint32_t s = 0; s < SHIPS; s++)
        check(ecs_transform_set_position(t, ships[s], s + f * dt, f * dt, 0));
      for (uint32_t k = 0; k < SHIPS * TURRETS; k++) {
        check(ecs_transform_get_world(t, turrets[k], m));
        sum += m[12] + m[13] + m[14];
      }
    }
    t3 = now();
    sink = sum;
    if (t1 - t0 < best_prop) best_prop = t1 - t0;
    if (t2 - t1 < best_query) best_query = t2 - t1;
    if (t3 - t2 < best_calls) best_calls = t3 - t2;
  }
  if (ecs_world_check(w) != NULL) {
    fprintf(stderr, "bench_transform_query: %s\n", ecs_world_check(w));
    return 1;
  }
  printf("%d ships x %d turrets (%d nodes), per frame    ns/node  x propagation\n",
         SHIPS, TURRETS, NODES);
  printf("propagation alone (set_positions, bulk)     %8.1f  %6.2f\n",
         best_prop * 1e9 / FRAMES / NODES, 1.0);
  printf("expression + native read of wx wy wz        %8.1f  %6.2f\n",
         best_query * 1e9 / FRAMES / NODES, best_query / best_prop);
  printf("one call per node (set_position, get_world) %8.1f  %6.2f\n",
         best_calls * 1e9 / FRAMES / NODES, best_calls / best_prop);
  ecs_world_free(w);
  return 0;
}
