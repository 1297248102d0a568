#define _POSIX_C_SOURCE 199309L
/*
** bench_entity.c -- entity create / alive / destroy from C, next to a bare
** array loop measured in the same run. Prints ns per entity and ratios.
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ecs.h"
#include "component.h"

#define N 1000000
#define RUNS 7

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ecs_entity ents[N];
static uint8_t bare_gen[N + 1];
static volatile size_t sink;

/*
** Recycling: 2048 entities, each with a record in two component managers;
** N times destroy one and create one. Indices cycle through the free
** queue (3072 of them once 1024 wait), so each is reused ~325 times and
** its generation wraps (a purge of both managers) about once in the run.
*/
#define RECYCLED 2048
static double recycle(void) {
  static const ecs_field_def f[] = {{"x", ECS_F32}};
  ecs_world *w = ecs_world_new(NULL, NULL);
  ecs_component *a, *b;
  ecs_entity e[RECYCLED];
  double t;
  if (ecs_component_new(w, "A", f, 1, &a) != ECS_ERR_OK ||
      ecs_component_new(w, "B", f, 1, &b) != ECS_ERR_OK ||
      ecs_create_n(w, e, RECYCLED) != ECS_ERR_OK)
    exit(1);
  for (int i = 0; i < RECYCLED; i++)
    if (ecs_component_add(w, a, e[i], NULL, NULL) != ECS_ERR_OK ||
        ecs_component_add(w, b, e[i], NULL, NULL) != ECS_ERR_OK)
      exit(1);
  t = now();
  for (int i = 0; i < N; i++) {
    ecs_destroy(w, e[i % RECYCLED]);
    ecs_create(w, &e[i % RECYCLED]);
  }
  t = now() - t;
  ecs_world_free(w);
  return t;
}

int main(void) {
  double best[6] = {1e9, 1e9, 1e9, 1e9, 1e9, 1e9};
  const char *name[6] = {"bare array read (baseline)", "ecs_alive",
                         "ecs_create (one call each)", "ecs_create_n (batch)",
                         "ecs_destroy", "destroy + create, recycled"};
  for (int r = 0; r < RUNS; r++) {
    ecs_world *w = ecs_world_new(NULL, NULL);
    double t;
    size_t hits = 0;
    for (int i = 0; i < N; i++) {
      if (ecs_create(w, &ents[i]) != ECS_ERR_OK) return 1;
      bare_gen[i + 1] = 0;
    }
    ecs_world_free(w);
    w = ecs_world_new(NULL, NULL);
    t = now();
    for (int i = 0; i < N; i++) ecs_create(w, &ents[i]);
    t = now() - t;
    if (t < best[2]) best[2] = t;
    ecs_world_free(w);

    w = ecs_world_new(NULL, NULL);
    t = now();
    if (ecs_create_n(w, ents, N) != ECS_ERR_OK) return 1;
    t = now() - t;
    if (t < best[3]) best[3] = t;

    /* baseline: the same index/generation compare over a bare array */
    t = now();
    for (int i = 0; i < N; i++) {
      uint32_t idx = ents[i] & ECS_INDEX_MASK;
      hits += idx <= N && bare_gen[idx] == (ents[i] >> ECS_INDEX_BITS);
    }
    t = now() - t;
    if (t < best[0]) best[0] = t;
    sink = hits;

    hits = 0;
    t = now();
    for (int i = 0; i < N; i++) hits += ecs_alive(w, ents[i]);
    t = now() - t;
    if (t < best[1]) best[1] = t;
    if (hits != N) return 1;
    sink = hits;

    t = now();
    for (int i = 0; i < N; i++) ecs_destroy(w, ents[i]);
    t = now() - t;
    if (t < best[4]) best[4] = t;
    ecs_world_free(w);

    t = recycle();
    if (t < best[5]) best[5] = t;
  }
  printf("%-30s %10s %8s\n", "C, 1M entities, best of 7", "ns/entity", "ratio");
  for (int k = 0; k < 6; k++)
    printf("%-30s %10.2f %8.2f\n", name[k], best[k] * 1e9 / N,
           best[k] / best[0]);
  return 0;
}
