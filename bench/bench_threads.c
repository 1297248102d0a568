/*
** bench_threads.c -- expression programs split over threads
** (ecs_world_set_threads), measured in the same run against threads = 1:
**   one    "P.x += V.dx * dt; P.y += V.dy * dt" over N entities (1M);
**   frame  four independent programs, each over its own pair of
**          components on N / 4 entities (250k), one after the other, as
**          world:update runs four expression systems;
**   heavy  one arithmetic-heavy program over N entities (sqrt, min, max,
**          division: the bound is the arithmetic, not memory bandwidth);
**   update the frame's four programs as four expression systems, through
**          ecs_world_update: with threads, side by side in one batch
**          (their accesses do not conflict), each split by rows.
** Wall time (CLOCK_MONOTONIC: threads run at once), best of RUNS, ms per
** frame, and the speedup of each thread count over one thread.
** Usage: build-rel/bench_threads_c [N [max threads]]
*/
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "component.h"
#include "ecs.h"
#include "expr.h"
#include "query.h"
#include "system.h"

#define RUNS 7
#define FRAMES 5

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fail(const char *what) {
  fprintf(stderr, "bench_threads: %s\n", what);
  exit(1);
}

typedef struct pair {
  ecs_query *q;
  ecs_program *p;
  char text[256]; /* its source */
} pair;

/* A pair of components P<k>{x,y f32} and V<k>{dx,dy f32} on n entities,
** a query over both and the program src compiled on it. */
static pair make_pair(ecs_world *w, int k, uint32_t n, const char *src) {
  static const ecs_field_def pf[] = {{"x", ECS_F32}, {"y", ECS_F32}};
  static const ecs_field_def vf[] = {{"dx", ECS_F32}, {"dy", ECS_F32}};
  char pn[8], vn[8], text[256], msg[128];
  ecs_component *c[2];
  pair out;
  snprintf(pn, sizeof pn, "P%d", k);
  snprintf(vn, sizeof vn, "V%d", k);
  if (ecs_component_new(w, pn, pf, 2, &c[0]) != ECS_ERR_OK ||
      ecs_component_new(w, vn, vf, 2, &c[1]) != ECS_ERR_OK)
    fail("components");
  for (uint32_t i = 0; i < n; i++) {
    ecs_entity e;
    ecs_instance r;
    if (ecs_create(w, &e) != ECS_ERR_OK ||
        ecs_component_add(w, c[0], e, &r, NULL) != ECS_ERR_OK)
      fail("add");
    ((float *)ecs_component_column(c[0], 0))[r] = (float)i;
    if (ecs_component_add(w, c[1], e, &r, NULL) != ECS_ERR_OK) fail("add");
    ((float *)ecs_component_column(c[1], 0))[r] = 1.0f + (float)(i % 7);
    ((float *)ecs_component_column(c[1], 1))[r] = 0.5f;
  }
  if (ecs_query_new(w, c, 2, NULL, 0, &out.q) != ECS_ERR_OK) fail("query");
  /* the program names P and V: write it for this pair's names */
  {
    size_t o = 0;
    for (const char *s = src; *s != '\0' && o + 3 < sizeof text; s++) {
      text[o++] = *s;
      if ((*s == 'P' || *s == 'V') && s[1] == '.') text[o++] = (char)('0' + k);
    }
    text[o] = '\0';
  }
  if (ecs_program_compile(w, out.q, text, strlen(text), &out.p, msg, sizeof msg) != ECS_ERR_OK)
    fail(msg);
  memcpy(out.text, text, sizeof text);
  return out;
}

/* ms per frame of the programs, best of RUNS */
static double measure(ecs_world *w, pair *pairs, int npairs) {
  double best = 1e30, dt = 1.0 / 60.0;
  for (int r = 0; r < RUNS; r++) {
    double t = now();
    for (int f = 0; f < FRAMES; f++)
      for (int k = 0; k < npairs; k++)
        if (ecs_program_run(w, pairs[k].p, &dt, NULL) != ECS_ERR_OK) fail("run");
    t = (now() - t) / FRAMES;
    if (t < best) best = t;
  }
  return best * 1e3;
}

/* ms per frame of world updates, best of RUNS */
static double measure_update(ecs_world *w) {
  double best = 1e30;
  for (int r = 0; r < RUNS; r++) {
    double t = now();
    for (int f = 0; f < FRAMES; f++)
      if (ecs_world_update(w, 1.0 / 60.0, NULL, NULL) != ECS_ERR_OK) fail("update");
    t = (now() - t) / FRAMES;
    if (t < best) best = t;
  }
  return best * 1e3;
}

/* The pair's program as an expression system. */
static void add_system(ecs_world *w, int k, const pair *pr) {
  ecs_system_desc d;
  char name[16];
  snprintf(name, sizeof name, "s%d", k);
  memset(&d, 0, sizeof d);
  d.name = name;
  d.kind = ECS_SYSTEM_EXPR;
  d.query = pr->q;
  d.expr = pr->text;
  d.expr_len = strlen(pr->text);
  if (ecs_system_add(w, &d, NULL, NULL, 0) != ECS_ERR_OK) fail("system");
}

static const char *const W2 = "P.x += V.dx * dt; P.y += V.dy * dt";
static const char *const HEAVY =
    "P.x = sqrt(abs(P.x * V.dx + P.y)) / (1 + abs(V.dy)) + min(P.x, 1e6); "
    "P.y = max(P.y - V.dy * dt, sqrt(abs(P.y)) * 0.5) + P.x / (2 + abs(V.dx))";

int main(int argc, char **argv) {
  uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1000000u;
  uint32_t maxt = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 2u;
  double base[4] = {0, 0, 0, 0};
  printf("%u entities; ms per frame, best of %d runs of %d frames\n", n, RUNS, FRAMES);
  printf("%-8s %10s %10s %10s %10s\n", "threads", "one", "frame", "heavy", "update");
  for (uint32_t threads = 1; threads <= maxt; threads++) {
    ecs_world *w = ecs_world_new(NULL, NULL);
    pair one, heavy, four[4];
    double ms[4];
    if (w == NULL || ecs_world_set_threads(w, threads) != ECS_ERR_OK) fail("world");
    one = make_pair(w, 0, n, W2);
    for (int k = 0; k < 4; k++) four[k] = make_pair(w, k + 1, n / 4, W2);
    heavy = make_pair(w, 5, n, HEAVY);
    ms[0] = measure(w, &one, 1);
    ms[1] = measure(w, four, 4);
    ms[2] = measure(w, &heavy, 1);
    for (int k = 0; k < 4; k++) add_system(w, k, &four[k]);
    ms[3] = measure_update(w);
    if (threads == 1) memcpy(base, ms, sizeof ms);
    printf("%-8u %7.2f ms %7.2f ms %7.2f ms %7.2f ms", threads, ms[0], ms[1], ms[2], ms[3]);
    if (threads > 1)
      printf("   speedup %.2fx %.2fx %.2fx %.2fx", base[0] / ms[0], base[1] / ms[1],
             base[2] / ms[2], base[3] / ms[3]);
    printf("\n");
    ecs_world_free(w);
  }
  return 0;
}
