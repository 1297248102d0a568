/*
** test_threads.c -- the worker pool (src/base/pool.c) and the world's thread
** setting (ecs_world_set_threads): every part of a job runs exactly once
** on any number of threads; the setting's limits; expression programs
** split over threads give the same bits as one thread, with the same
** change stamps and journal captures; many worlds each with a pool.
** Built with -fsanitize=thread by test.sh's TSan stage.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>

#include "component.h"
#include "ecs_private.h"
#include "expr.h"
#include "../support/harness.h"
#include "journal.h"
#include "pool.h"
#include "query.h"
#include "system.h"

typedef struct parts {
  atomic_uint ran[1000];
  atomic_uint by_worker[8];
} parts;

static void count_part(void *ud, uint32_t worker, uint32_t part) {
  parts *p = (parts *)ud;
  atomic_fetch_add(&p->ran[part], 1u);
  atomic_fetch_add(&p->by_worker[worker], 1u);
}

TEST(Pool_runs_every_part_once) {
  ecs_world *w = ecs_world_new(NULL, NULL);
  static parts p;
  CHECK(w != NULL);
  for (uint32_t threads = 2; threads <= 8; threads++) {
    ecsi_pool *pool;
    CHECK_EQ_INT(ecsi_pool_new(w, threads, &pool), ECS_ERR_OK);
    CHECK_EQ_INT(ecsi_pool_threads(pool), threads);
    for (uint32_t n = 0; n <= 1000; n += 37) {
      uint32_t total = 0;
      for (uint32_t k = 0; k < 1000; k++) atomic_store(&p.ran[k], 0u);
      for (uint32_t k = 0; k < 8; k++) atomic_store(&p.by_worker[k], 0u);
      ecsi_pool_run(pool, count_part, &p, n);
      for (uint32_t k = 0; k < 1000; k++) CHECK_EQ_INT(atomic_load(&p.ran[k]), k < n ? 1 : 0);
      for (uint32_t k = 0; k < 8; k++) {
        if (k >= threads) CHECK_EQ_INT(atomic_load(&p.by_worker[k]), 0);
        total += atomic_load(&p.by_worker[k]);
      }
      CHECK_EQ_INT(total, n);
    }
    ecsi_pool_free(w, pool);
  }
  ecsi_pool_free(w, NULL);
  ecs_world_free(w);
}

TEST(World_threads_setting_has_limits) {
  ecs_world *w = ecs_world_new(NULL, NULL);
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_world_threads(w), 1);
  CHECK_EQ_INT(ecs_world_set_threads(w, 0), ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_world_set_threads(w, ECS_MAX_THREADS + 1), ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_world_threads(w), 1);
  CHECK_EQ_INT(ecs_world_set_threads(w, 3), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_threads(w), 3);
  CHECK_EQ_INT(ecs_world_set_threads(w, 3), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_set_threads(w, 2), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_threads(w), 2);
  CHECK_EQ_INT(ecs_world_set_threads(w, 1), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_threads(w), 1);
  CHECK_EQ_INT(ecs_world_set_threads(w, 4), ECS_ERR_OK);
  CHECK_WORLD(w);
  ecs_world_free(w); /* joins the idle workers */
}

/* A system that tries to change the thread count during the update. */
static ecs_err change_threads(ecs_world *w, ecs_system *s, double dt, void *ctx,
                              size_t *processed) {
  (void)s;
  (void)dt;
  (void)processed;
  *(ecs_err *)ctx = ecs_world_set_threads(w, 3);
  return ECS_ERR_OK;
}

TEST(World_threads_cannot_change_during_an_update) {
  ecs_world *w = ecs_world_new(NULL, NULL);
  ecs_system_desc d;
  ecs_err seen = ECS_ERR_OK;
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_world_set_threads(w, 2), ECS_ERR_OK);
  memset(&d, 0, sizeof d);
  d.name = "change";
  d.kind = ECS_SYSTEM_EXTERNAL;
  d.call = change_threads;
  CHECK_EQ_INT(ecs_system_add(w, &d, NULL, NULL, 0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(w, 0.1, &seen, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(seen, ECS_ERR_LOCKED);
  CHECK_EQ_INT(ecs_world_threads(w), 2);
  CHECK_WORLD(w);
  ecs_world_free(w);
}

/* A world of n entities with P{x f32, y f64, k i32} and, for most, V{dx
** f32, dy f64}; some destroyed, so rows are not all contiguous. */
typedef struct fixture {
  ecs_world *w;
  ecs_component *P, *V;
  ecs_query *q;
} fixture;

static int make_in(fixture *f, uint32_t n, uint32_t threads, test_alloc *a);
static int make(fixture *f, uint32_t n, uint32_t threads) { return make_in(f, n, threads, NULL); }

/* The world's memory from a (NULL: malloc). */
static int make_in(fixture *f, uint32_t n, uint32_t threads, test_alloc *a) {
  static const ecs_field_def pf[] = {{"x", ECS_F32}, {"y", ECS_F64}, {"k", ECS_I32}};
  static const ecs_field_def vf[] = {{"dx", ECS_F32}, {"dy", ECS_F64}};
  ecs_component *with[2];
  f->w = a != NULL ? ecs_world_new(test_allocf, a) : ecs_world_new(NULL, NULL);
  if (f->w == NULL || ecs_world_set_threads(f->w, threads) != ECS_ERR_OK ||
      ecs_component_new(f->w, "P", pf, 3, &f->P) != ECS_ERR_OK ||
      ecs_component_new(f->w, "V", vf, 2, &f->V) != ECS_ERR_OK)
    return 0;
  for (uint32_t i = 0; i < n; i++) {
    ecs_entity e;
    ecs_instance k;
    if (ecs_create(f->w, &e) != ECS_ERR_OK) return 0;
    if (ecs_component_add(f->w, f->P, e, &k, NULL) != ECS_ERR_OK) return 0;
    ((float *)ecs_component_column(f->P, 0))[k] = (float)i * 0.25f;
    ((double *)ecs_component_column(f->P, 1))[k] = -(double)i / 3.0;
    ((int32_t *)ecs_component_column(f->P, 2))[k] = (int32_t)(i % 1000) - 500;
    if (i % 5 != 0) {
      if (ecs_component_add(f->w, f->V, e, &k, NULL) != ECS_ERR_OK) return 0;
      ((float *)ecs_component_column(f->V, 0))[k] = (float)(i % 17) - 8.0f;
      ((double *)ecs_component_column(f->V, 1))[k] = sqrt((double)i);
    }
    if (i % 97 == 3 && !ecs_destroy(f->w, e)) return 0;
  }
  with[0] = f->P;
  with[1] = f->V;
  return ecs_query_new(f->w, with, 2, NULL, 0, &f->q) == ECS_ERR_OK;
}

static const char *const programs[] = {
  "P.x += V.dx * dt",
  "P.y = P.y * 0.99 + sqrt(abs(P.x)) - V.dy / (1 + abs(P.y)); P.k = P.k + 3",
  "P.x = clamp(P.x * V.dx, -1e30, 1e30); P.k = select(P.x > 0, P.k * 2, P.k - 7)",
  "P.y -= V.dy * dt; P.x = floor(P.y) % 13",
};

TEST(Programs_give_the_same_bits_on_any_number_of_threads) {
  fixture f[3];
  uint32_t threads[3] = {1, 2, 5};
  const uint32_t n = 50000;
  for (int k = 0; k < 3; k++) CHECK(make(&f[k], n, threads[k]));
  for (size_t s = 0; s < sizeof programs / sizeof *programs; s++) {
    for (int k = 0; k < 3; k++) {
      ecs_program *p;
      char msg[128];
      double dt = 1.0 / 60.0;
      size_t done;
      CHECK_EQ_INT(ecs_program_compile(f[k].w, f[k].q, programs[s],
                                       strlen(programs[s]), &p, msg, sizeof msg),
                   ECS_ERR_OK);
      CHECK_EQ_INT(ecs_program_param_count(p) <= 1, 1);
      uint64_t split = ecs_world_split_runs(f[k].w);
      CHECK_EQ_INT(ecs_program_run(f[k].w, p, &dt, &done), ECS_ERR_OK);
      CHECK(done > 30000);
      /* runs over 8192 rows or more are split where there are threads */
      CHECK_EQ_INT(ecs_world_split_runs(f[k].w) - split, threads[k] > 1 ? 1 : 0);
    }
    for (int k = 1; k < 3; k++) {
      CHECK_EQ_INT(ecs_component_size(f[k].P), ecs_component_size(f[0].P));
      for (uint32_t c = 0; c < 3; c++)
        CHECK(memcmp(ecs_component_column(f[k].P, c), ecs_component_column(f[0].P, c),
                     (size_t)ecs_component_size(f[0].P) *
                         ecs_type_size(ecs_component_field(f[0].P, c)->type)) == 0);
    }
  }
  for (int k = 0; k < 3; k++) {
    CHECK_WORLD(f[k].w);
    ecs_world_free(f[k].w);
  }
}

TEST(Threaded_runs_stamp_changes_and_feed_the_journal) {
  fixture f;
  ecs_component *with[1];
  ecs_component *changed[1];
  ecs_query *moved;
  ecs_journal *j;
  ecs_program *p;
  char msg[128];
  double dt = 0.5;
  float before;
  size_t n, m;
  ecs_entity probe;
  CHECK(make(&f, 40000, 2));
  with[0] = f.P;
  changed[0] = f.P;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 1, NULL, 0, &moved), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_track_changes(f.w, moved, changed, 1, NULL, 0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_count(f.w, moved, &n), ECS_ERR_OK);
  CHECK(n > 0);
  ecs_query_complete(f.w, moved);
  CHECK_EQ_INT(ecs_query_count(f.w, moved, &n), ECS_ERR_OK);
  CHECK_EQ_INT(n, 0);
  CHECK_EQ_INT(ecs_journal_open(f.w, NULL, &j, NULL), ECS_ERR_OK);
  probe = ecs_component_entities(f.P)[1]; /* rows may move (alignment): by entity */
  before = ((float *)ecs_component_column(f.P, 0))[ecs_component_lookup(f.w, f.P, probe)];
  CHECK_EQ_INT(ecs_program_compile(f.w, f.q, "P.x += V.dx * dt", 16, &p, msg, sizeof msg),
               ECS_ERR_OK);
  CHECK_EQ_INT(ecs_program_run(f.w, p, &dt, NULL), ECS_ERR_OK);
  /* every row the program wrote counts as changed: the q matches */
  CHECK_EQ_INT(ecs_query_count(f.w, moved, &n), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_count(f.w, f.q, &m), ECS_ERR_OK);
  CHECK_EQ_INT(n, m);
  CHECK(((float *)ecs_component_column(f.P, 0))[ecs_component_lookup(f.w, f.P, probe)] != before);
  CHECK_EQ_INT(ecs_journal_undo(f.w, j), ECS_ERR_OK);
  CHECK(((float *)ecs_component_column(f.P, 0))[ecs_component_lookup(f.w, f.P, probe)] == before);
  ecs_journal_close(f.w, j);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
}

/* A native system: P.x += V.dx * dt; P.y = P.y * 0.5 + V.dy; P.k += 1
** (row by row: safe on workers). */
static void native_move(ecs_world *w, const ecs_view *v, void *ud) {
  float *x = (float *)v->out[0];
  double *y = (double *)v->out[1];
  int32_t *k = (int32_t *)v->out[2];
  const float *dx = (const float *)v->column[3];
  const double *dy = (const double *)v->column[4];
  (void)w;
  (void)ud;
  for (uint32_t i = 0; i < v->count; i++) {
    x[i] += dx[i] * (float)v->dt;
    y[i] = y[i] * 0.5 + dy[i];
    k[i] += 1;
  }
}

#ifndef NDEBUG
/* Writes a column it was given read-only (a contract violation). */
static void native_cheat(ecs_world *w, const ecs_view *v, void *ud) {
  (void)w;
  (void)ud;
  if (v->count > 0) ((float *)(uintptr_t)v->column[0])[0] += 1.0f;
}
#endif

TEST(Native_runs_declared_parallel_give_the_same_bits_on_any_number_of_threads) {
  fixture f[3];
  uint32_t threads[3] = {1, 2, 3};
  ecs_run_opts par = {true}, seq = {false};
  const uint32_t n = 60000;
  for (int k = 0; k < 3; k++) CHECK(make(&f[k], n, threads[k]));
  for (int round = 0; round < 3; round++) {
    for (int k = 0; k < 3; k++) {
      ecs_column_ref cols[5];
      size_t done;
      uint64_t split = ecs_world_split_runs(f[k].w);
      cols[0].c = f[k].P; cols[0].field = 0; cols[0].write = true;
      cols[1].c = f[k].P; cols[1].field = 1; cols[1].write = true;
      cols[2].c = f[k].P; cols[2].field = 2; cols[2].write = true;
      cols[3].c = f[k].V; cols[3].field = 0; cols[3].write = false;
      cols[4].c = f[k].V; cols[4].field = 1; cols[4].write = false;
      CHECK_EQ_INT(ecs_query_run_opts(f[k].w, f[k].q, cols, 5, 0.25, native_move, NULL,
                                      round == 1 ? &seq : &par, &done), ECS_ERR_OK);
      CHECK(done > 40000);
      /* split where there are threads and the run is declared parallel */
      CHECK_EQ_INT(ecs_world_split_runs(f[k].w) - split,
                   threads[k] > 1 && round != 1 ? 1 : 0);
      /* churn between rounds: rows stop being consecutive (gathered chunks) */
      for (uint32_t i = 0; i < 3000; i += 7) {
        ecs_entity e = ecs_component_entities(f[k].V)[i % ecs_component_size(f[k].V)];
        if (!ecs_alive(f[k].w, e)) continue; /* a dead record, till gc */
        CHECK_EQ_INT(ecs_component_remove(f[k].w, f[k].V, e, NULL), ECS_ERR_OK);
        CHECK_EQ_INT(ecs_component_add(f[k].w, f[k].V, e, NULL, NULL), ECS_ERR_OK);
      }
    }
    for (int k = 1; k < 3; k++) {
      CHECK_EQ_INT(ecs_component_size(f[k].P), ecs_component_size(f[0].P));
      for (uint32_t c = 0; c < 3; c++)
        CHECK(memcmp(ecs_component_column(f[k].P, c), ecs_component_column(f[0].P, c),
                     (size_t)ecs_component_size(f[0].P) *
                         ecs_type_size(ecs_component_field(f[0].P, c)->type)) == 0);
    }
  }
#ifndef NDEBUG
  { /* a worker's contract violation is reported as on one thread */
    ecs_column_ref ro = {NULL, 0, false};
    ro.c = f[1].P;
    CHECK_EQ_INT(ecs_query_run_opts(f[1].w, f[1].q, &ro, 1, 0, native_cheat, NULL, &par,
                                    NULL), ECS_ERR_READONLY);
  }
#endif
  for (int k = 0; k < 3; k++) {
    CHECK_WORLD(f[k].w);
    ecs_world_free(f[k].w);
  }
}

/* Z.z += 1 + Z.z * dt (row by row: safe on workers) */
static void native_tick(ecs_world *w, const ecs_view *v, void *ud) {
  double *z = (double *)v->out[0];
  (void)w;
  (void)ud;
  for (uint32_t i = 0; i < v->count; i++) z[i] += 1.0 + z[i] * v->dt;
}

static int add_system(fixture *f, const char *name, ecs_query *q, const char *expr) {
  ecs_system_desc d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.kind = ECS_SYSTEM_EXPR;
  d.query = q;
  d.expr = expr;
  d.expr_len = strlen(expr);
  return ecs_system_add(f->w, &d, NULL, NULL, 0) == ECS_ERR_OK;
}

/* P, V (make), W and Z on every entity with P; five systems: s1, s2 and
** the native s3 do not conflict (one batch), s4 shares s1's query (it
** ends that batch) and s5 does not conflict with s4 (a second batch). */
static int make_frame_in(fixture *f, uint32_t n, uint32_t threads, ecs_component **W,
                         ecs_component **Z, test_alloc *a);
static int make_frame(fixture *f, uint32_t threads, ecs_component **W, ecs_component **Z) {
  return make_frame_in(f, 30000, threads, W, Z, NULL);
}

static int make_frame_in(fixture *f, uint32_t n, uint32_t threads, ecs_component **W,
                         ecs_component **Z, test_alloc *a) {
  static const ecs_field_def wf[] = {{"a", ECS_F64}};
  static const ecs_field_def zf[] = {{"z", ECS_F64}};
  ecs_component *one[1];
  ecs_query *qw, *qz, *qv;
  ecs_column_ref col = {NULL, 0, true};
  ecs_system_desc d;
  if (!make_in(f, n, threads, a) ||
      ecs_component_new(f->w, "W", wf, 1, W) != ECS_ERR_OK ||
      ecs_component_new(f->w, "Z", zf, 1, Z) != ECS_ERR_OK)
    return 0;
  for (uint32_t i = 0; i < ecs_component_size(f->P); i++) {
    ecs_entity e = ecs_component_entities(f->P)[i];
    ecs_instance k;
    if (!ecs_alive(f->w, e)) continue;
    if (ecs_component_add(f->w, *W, e, &k, NULL) != ECS_ERR_OK) return 0;
    ((double *)ecs_component_column(*W, 0))[k] = (double)i / 7.0;
    if (i % 3 == 0) continue;
    if (ecs_component_add(f->w, *Z, e, &k, NULL) != ECS_ERR_OK) return 0;
    ((double *)ecs_component_column(*Z, 0))[k] = (double)(i % 11);
  }
  one[0] = *W;
  if (ecs_query_new(f->w, one, 1, NULL, 0, &qw) != ECS_ERR_OK) return 0;
  one[0] = *Z;
  if (ecs_query_new(f->w, one, 1, NULL, 0, &qz) != ECS_ERR_OK) return 0;
  one[0] = f->V;
  if (ecs_query_new(f->w, one, 1, NULL, 0, &qv) != ECS_ERR_OK) return 0;
  if (!add_system(f, "s1", f->q, "P.x += V.dx * dt; P.y = P.y * 0.5 + V.dy") ||
      !add_system(f, "s2", qw, "W.a = sqrt(abs(W.a)) * 3 + dt"))
    return 0;
  memset(&d, 0, sizeof d);
  col.c = *Z;
  d.name = "s3";
  d.kind = ECS_SYSTEM_NATIVE;
  d.query = qz;
  d.fn = native_tick;
  d.cols = &col;
  d.ncols = 1;
  d.parallel = true;
  if (ecs_system_add(f->w, &d, NULL, NULL, 0) != ECS_ERR_OK) return 0;
  return add_system(f, "s4", f->q, "P.k = P.k + 1") &&
         add_system(f, "s5", qv, "V.dy = V.dy * 0.75 + 1");
}

TEST(Systems_that_do_not_conflict_run_in_batches_with_the_same_bits) {
  fixture f[3];
  ecs_component *W[3], *Z[3];
  uint32_t threads[3] = {1, 2, 3};
  for (int k = 0; k < 3; k++) CHECK(make_frame(&f[k], threads[k], &W[k], &Z[k]));
  for (int frame = 0; frame < 4; frame++)
    for (int k = 0; k < 3; k++) {
      uint64_t b = ecs_world_batches(f[k].w);
      CHECK_EQ_INT(ecs_world_update(f[k].w, 0.125, NULL, NULL), ECS_ERR_OK);
      /* {s1, s2, s3} and {s4, s5} where there are threads */
      CHECK_EQ_INT(ecs_world_batches(f[k].w) - b, threads[k] > 1 ? 2 : 0);
    }
  for (int k = 1; k < 3; k++) {
    ecs_component *c0[4] = {f[0].P, f[0].V, W[0], Z[0]};
    ecs_component *ck[4] = {f[k].P, f[k].V, W[k], Z[k]};
    for (int m = 0; m < 4; m++) {
      CHECK_EQ_INT(ecs_component_size(ck[m]), ecs_component_size(c0[m]));
      for (uint32_t c = 0; c < ecs_component_field_count(c0[m]); c++)
        CHECK(memcmp(ecs_component_column(ck[m], c), ecs_component_column(c0[m], c),
                     (size_t)ecs_component_size(c0[m]) *
                         ecs_type_size(ecs_component_field(c0[m], c)->type)) == 0);
    }
  }
  /* the stats count each system's runs */
  for (int k = 0; k < 3; k++) {
    ecs_system_stats st;
    ecs_system_get_stats(ecs_system_find(f[k].w, "s3"), &st);
    CHECK_EQ_INT(st.calls, 4);
    CHECK(st.entities > 0);
    CHECK_WORLD(f[k].w);
    ecs_world_free(f[k].w);
  }
}

/* A batch's writes are captured by the journal before any is made, and
** stamped for changed queries. */
TEST(Batches_feed_the_journal_and_stamp_changes) {
  fixture f;
  ecs_component *W, *Z, *changed[1], *with[1];
  ecs_query *moved;
  ecs_journal *j;
  size_t n, m;
  void *before[4];
  size_t bytes[4];
  ecs_component *all[4];
  CHECK(make_frame(&f, 2, &W, &Z));
  all[0] = f.P; all[1] = f.V; all[2] = W; all[3] = Z;
  with[0] = Z;
  changed[0] = Z;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 1, NULL, 0, &moved), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_track_changes(f.w, moved, changed, 1, NULL, 0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_count(f.w, moved, &n), ECS_ERR_OK);
  ecs_query_complete(f.w, moved);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.125, NULL, NULL), ECS_ERR_OK); /* aligns */
  ecs_query_complete(f.w, moved);
  for (int k = 0; k < 4; k++) {
    bytes[k] = (size_t)ecs_component_size(all[k]) *
               ecs_type_size(ecs_component_field(all[k], 0)->type);
    before[k] = malloc(bytes[k]);
    CHECK(before[k] != NULL);
    memcpy(before[k], ecs_component_column(all[k], 0), bytes[k]);
  }
  CHECK_EQ_INT(ecs_journal_open(f.w, NULL, &j, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.125, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_batches(f.w), 4);
  CHECK_EQ_INT(ecs_query_count(f.w, moved, &n), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_count(f.w, Z), (size_t)n); /* every Z row changed */
  CHECK(memcmp(before[3], ecs_component_column(Z, 0), bytes[3]) != 0);
  CHECK_EQ_INT(ecs_journal_undo(f.w, j), ECS_ERR_OK);
  for (int k = 0; k < 4; k++) {
    CHECK_EQ_INT((size_t)ecs_component_size(all[k]) *
                     ecs_type_size(ecs_component_field(all[k], 0)->type), bytes[k]);
    CHECK(memcmp(before[k], ecs_component_column(all[k], 0), bytes[k]) == 0);
    free(before[k]);
  }
  (void)m;
  ecs_journal_close(f.w, j);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
}

/* Memory that fails while a batch begins: nothing of the batch ran, the
** world is consistent, and the next update runs it. */
TEST(A_batch_that_cannot_begin_changes_nothing) {
  int failed = 0;
  long calls = 0;
  for (long k = 1; k <= calls + 1; k++) {
    fixture f;
    test_alloc a;
    ecs_component *W, *Z;
    ecs_system *bad = NULL;
    double before;
    ecs_err err;
    memset(&a, 0, sizeof a);
    CHECK(make_frame_in(&f, 2000, 2, &W, &Z, &a));
    before = ((double *)ecs_component_column(Z, 0))[0];
    if (k == 1) { /* how many allocations an update makes */
      long c0;
      fixture g;
      test_alloc b;
      ecs_component *W2, *Z2;
      memset(&b, 0, sizeof b);
      CHECK(make_frame_in(&g, 2000, 2, &W2, &Z2, &b));
      c0 = b.calls;
      CHECK_EQ_INT(ecs_world_update(g.w, 0.125, NULL, NULL), ECS_ERR_OK);
      calls = b.calls - c0;
      CHECK(calls > 0);
      ecs_world_free(g.w);
      (void)W2;
      (void)Z2;
    }
    a.fail_at = a.calls + k;
    err = ecs_world_update(f.w, 0.125, NULL, &bad);
    a.fail_at = 0;
    if (err != ECS_ERR_OK) {
      CHECK_EQ_INT(err, ECS_ERR_NOMEM);
      CHECK(bad != NULL);
      failed++;
      if (ecs_world_batches(f.w) == 0) /* the first batch (s1, s2, s3) ran nothing */
        CHECK(((double *)ecs_component_column(Z, 0))[0] == before);
      CHECK_WORLD(f.w);
      CHECK_EQ_INT(ecs_world_update(f.w, 0.125, NULL, NULL), ECS_ERR_OK);
    }
    CHECK_WORLD(f.w);
    ecs_world_free(f.w);
    CHECK_EQ_INT(a.blocks, 0);
  }
  CHECK(failed > 0);
}

TEST(Many_worlds_each_with_a_pool) {
  ecs_world *w[12];
  for (int i = 0; i < 12; i++) {
    w[i] = ecs_world_new(NULL, NULL);
    CHECK(w[i] != NULL);
    CHECK_EQ_INT(ecs_world_set_threads(w[i], 2 + (uint32_t)i % 3), ECS_ERR_OK);
  }
  for (int i = 0; i < 12; i += 2) ecs_world_free(w[i]);
  for (int i = 1; i < 12; i += 2) {
    CHECK_EQ_INT(ecs_world_threads(w[i]), 2 + (uint32_t)i % 3);
    ecs_world_free(w[i]);
  }
}

static const test_case cases[] = {
  CASE(Pool_runs_every_part_once),
  CASE(World_threads_setting_has_limits),
  CASE(World_threads_cannot_change_during_an_update),
  CASE(Programs_give_the_same_bits_on_any_number_of_threads),
  CASE(Threaded_runs_stamp_changes_and_feed_the_journal),
  CASE(Native_runs_declared_parallel_give_the_same_bits_on_any_number_of_threads),
  CASE(Systems_that_do_not_conflict_run_in_batches_with_the_same_bits),
  CASE(Batches_feed_the_journal_and_stamp_changes),
  CASE(A_batch_that_cannot_begin_changes_nothing),
  CASE(Many_worlds_each_with_a_pool),
};

TEST_MAIN(cases)
