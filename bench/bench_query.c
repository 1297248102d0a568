#define _POSIX_C_SOURCE 199309L
/*
** bench_query.c -- p += v * dt over N entities with Position{x:f32,y:f32}
** and Velocity{dx:f32,dy:f32}, three ways in C, measured in the same run:
**   c_loop   a hand-written loop over the managers' columns (the entities
**            were added to both together, so row i is the same entity in
**            both: the floor for any query machinery);
**   native   ecs_query_run with a system doing the same loop on the view;
**   program  ecs_program_run of the compiled expression
**            "Position.x += Velocity.dx * dt; Position.y += Velocity.dy * dt".
** Prints ns per entity per frame (best of RUNS) and the ratios. Built with
** the library's own flags (no -O3), so that the ratios compare the query
** machinery and the expression interpreter with direct code, not compilers.
** bench/bench_query.lua runs this binary when it sits next to the module.
** Usage: bench_query_c [N [FRAMES]]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ecs.h"
#include "component.h"
#include "query.h"

#define RUNS 5

/* Process CPU time, as os.clock on the Lua side: bench_query.lua divides
** by these figures, and on a shared machine wall time would count the
** time other processes ran. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *plain_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    free(p);
    return NULL;
  }
  return realloc(p, nsize);
}

static void fail(const char *what) {
  fprintf(stderr, "bench_query: %s\n", what);
  exit(1);
}

/* The update, the same for the hand-written loop and the native system. */
static void move(float *restrict x, float *restrict y,
                 const float *restrict dx, const float *restrict dy,
                 uint32_t n, float dt) {
  for (uint32_t i = 0; i < n; i++) {
    x[i] += dx[i] * dt;
    y[i] += dy[i] * dt;
  }
}

static void move_system(ecs_world *w, const ecs_view *v, void *ud) {
  (void)w;
  (void)ud;
  move((float *)v->out[0], (float *)v->out[1],
       (const float *)v->column[2], (const float *)v->column[3], v->count,
       (float)v->dt);
}

int main(int argc, char **argv) {
  long n_arg = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
  long f_arg = argc > 2 ? strtol(argv[2], NULL, 10) : 100;
  uint32_t n, frames;
  static const ecs_field_def pos[] = {{"x", ECS_F32}, {"y", ECS_F32}};
  static const ecs_field_def vel[] = {{"dx", ECS_F32}, {"dy", ECS_F32}};
  static const char expr[] =
      "Position.x += Velocity.dx * dt; Position.y += Velocity.dy * dt";
  const float dt = 1.0f / 60.0f;
  const double dtd = 1.0 / 60.0;
  double t_loop = 1e9, t_native = 1e9, t_prog = 1e9;
  ecs_world *w;
  ecs_component *P, *V, *terms[2];
  ecs_query *q;
  ecs_program *prog;
  ecs_entity *ents;
  char msg[128];
  volatile float sink;

  if (n_arg < 1 || n_arg > 4000000 || f_arg < 1 || f_arg > 100000)
    fail("usage: bench_query_c [N [FRAMES]]");
  n = (uint32_t)n_arg;
  frames = (uint32_t)f_arg;

  w = ecs_world_new(plain_alloc, NULL);
  ents = malloc(n * sizeof *ents);
  if (w == NULL || ents == NULL) fail("world");
  if (ecs_create_n(w, ents, n) != ECS_ERR_OK) fail("create");
  if (ecs_component_new(w, "Position", pos, 2, &P) != ECS_ERR_OK ||
      ecs_component_new(w, "Velocity", vel, 2, &V) != ECS_ERR_OK)
    fail("component");
  for (uint32_t i = 0; i < n; i++) {
    ecs_instance k;
    if (ecs_component_add(w, P, ents[i], &k, NULL) != ECS_ERR_OK) fail("add");
    ((float *)ecs_component_column(P, 0))[k] = (float)i * 0.5f;
    ((float *)ecs_component_column(P, 1))[k] = (float)i * -0.25f;
    if (ecs_component_add(w, V, ents[i], &k, NULL) != ECS_ERR_OK) fail("add");
    ((float *)ecs_component_column(V, 0))[k] = (float)(i % 7) - 3.0f;
    ((float *)ecs_component_column(V, 1))[k] = (float)(i % 5) - 2.0f;
  }
  terms[0] = P;
  terms[1] = V;
  if (ecs_query_new(w, terms, 2, NULL, 0, &q) != ECS_ERR_OK) fail("query");
  if (ecs_program_compile(w, q, expr, strlen(expr), &prog, msg, sizeof msg) !=
      ECS_ERR_OK)
    fail(msg);

  for (int r = 0; r < RUNS; r++) {
    double t;
    size_t done = 0;
    ecs_column_ref cols[4] = {
      {P, 0, true}, {P, 1, true}, {V, 0, false}, {V, 1, false}};
    double params[1];
    uint32_t np = ecs_program_param_count(prog);
    if (np != 1 || strcmp(ecs_program_param_name(prog, 0), "dt") != 0)
      fail("program parameters");
    params[0] = dtd;

    t = now();
    for (uint32_t f = 0; f < frames; f++) {
      uint32_t size = ecs_component_size(P);
      move((float *)ecs_component_column(P, 0), (float *)ecs_component_column(P, 1),
           (const float *)ecs_component_column(V, 0),
           (const float *)ecs_component_column(V, 1), size, dt);
    }
    t = now() - t;
    if (t < t_loop) t_loop = t;

    t = now();
    for (uint32_t f = 0; f < frames; f++)
      if (ecs_query_run(w, q, cols, 4, dtd, move_system, NULL, &done) !=
              ECS_ERR_OK ||
          done != n)
        fail("run");
    t = now() - t;
    if (t < t_native) t_native = t;

    t = now();
    for (uint32_t f = 0; f < frames; f++)
      if (ecs_program_run(w, prog, params, &done) != ECS_ERR_OK || done != n)
        fail("program");
    t = now() - t;
    if (t < t_prog) t_prog = t;
  }
  sink = ((float *)ecs_component_column(P, 0))[n - 1];
  (void)sink;

  {
    double per = 1e9 / ((double)n * (double)frames);
    printf("queries in C: %u entities, %u frames, best of %d\n", n, frames, RUNS);
    printf("c_loop   ns/entity %8.3f\n", t_loop * per);
    printf("native   ns/entity %8.3f   x c_loop %6.2f\n", t_native * per,
           t_native / t_loop);
    printf("program  ns/entity %8.3f   x c_loop %6.2f\n", t_prog * per,
           t_prog / t_loop);
  }
  ecs_query_free(w, q);
  ecs_world_free(w);
  free(ents);
  return 0;
}
