/*
** test_system.c -- the world's systems and ecs_world_update (system.h),
** through the core alone: what a C host or plugin does without Lua.
*/
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"
#include "query.h"
#include "system.h"

static const ecs_field_def pos_fields[] = {{"x", ECS_F32}, {"y", ECS_F32}};
static const ecs_field_def vel_fields[] = {{"dx", ECS_F32}, {"dy", ECS_F32}};
static const ecs_field_def log_fields[] = {{"v", ECS_LUA}};

typedef struct fixture {
  test_alloc a;
  ecs_world *w;
  ecs_component *P, *V, *L;
  ecs_query *q;
  ecs_entity e[10];
} fixture;

/* A world with 10 entities with Position (k, 0) and Velocity (1, 2). */
static int setup(fixture *f) {
  ecs_component *with[2];
  memset(f, 0, sizeof *f);
  f->w = ecs_world_new(test_allocf, &f->a);
  if (f->w == NULL ||
      ecs_component_new(f->w, "Position", pos_fields, 2, &f->P) != ECS_ERR_OK ||
      ecs_component_new(f->w, "Velocity", vel_fields, 2, &f->V) != ECS_ERR_OK ||
      ecs_component_new(f->w, "Log", log_fields, 1, &f->L) != ECS_ERR_OK)
    return 0;
  for (int k = 0; k < 10; k++) {
    ecs_instance i;
    if (ecs_create(f->w, &f->e[k]) != ECS_ERR_OK ||
        ecs_component_add(f->w, f->P, f->e[k], &i, NULL) != ECS_ERR_OK)
      return 0;
    ((float *)ecs_component_column(f->P, 0))[i] = (float)k;
    ((float *)ecs_component_column(f->P, 1))[i] = 0.0f;
    if (ecs_component_add(f->w, f->V, f->e[k], &i, NULL) != ECS_ERR_OK)
      return 0;
    ((float *)ecs_component_column(f->V, 0))[i] = 1.0f;
    ((float *)ecs_component_column(f->V, 1))[i] = 2.0f;
  }
  with[0] = f->P;
  with[1] = f->V;
  return ecs_query_new(f->w, with, 2, NULL, 0, &f->q) == ECS_ERR_OK;
}

static float px(fixture *f, int k) {
  return ((float *)ecs_component_column(f->P, 0))[
      ecs_component_lookup(f->w, f->P, f->e[k])];
}

/* x += dx * dt: what a plugin's native system does. */
static void integrate(ecs_world *w, const ecs_view *v, void *ud) {
  float *x = (float *)v->out[0];
  const float *dx = (const float *)v->column[1];
  (void)w;
  *(int *)ud += 1;
  for (uint32_t k = 0; k < v->count; k++) x[k] += dx[k] * (float)v->dt;
}

/* A manager that counts the world's gc runs. */
static size_t count_gc(ecs_world *w, void *self, size_t budget) {
  (void)w;
  (void)budget;
  ++*(int *)self;
  return 0;
}
static void no_purge(ecs_world *w, void *self, uint32_t index) {
  (void)w;
  (void)self;
  (void)index;
}
static void no_free(ecs_world *w, void *self) {
  (void)w;
  (void)self;
}
static const ecs_manager_class gc_counter = {
  .kind = "counter",
  .gc = count_gc,
  .free = no_free,
  .purge = no_purge,
};

/* ------------------------------------------------------------------------
** External systems that log their runs and can act on the world
** --------------------------------------------------------------------- */

typedef struct probe {
  char log[64];    /* one letter per run, in order */
  int n;
  const char *remove[3]; /* systems the next run of 'a' removes */
  ecs_system_desc add;   /* a system the next run of 'a' adds (name set) */
  ecs_err fail;          /* what 'b' returns */
  int nest;              /* 'a' updates the world again this many times */
  char remover;          /* the system that removes (0: 'a') */
  ecs_system_desc replace; /* a system the next run of 'a' replaces */
} probe;

static ecs_err logger(ecs_world *w, ecs_system *s, double dt, void *ctx,
                      size_t *processed) {
  probe *p = (probe *)ctx;
  const char *name = ecs_system_name(s);
  (void)dt;
  if (p->n < 63) p->log[p->n++] = name[0];
  *processed = (size_t)(name[0] - 'a' + 1);
  if (name[0] == (p->remover ? p->remover : 'a')) {
    for (int k = 0; k < 3; k++)
      if (p->remove[k] != NULL) ecs_system_remove(w, p->remove[k]);
    memset(p->remove, 0, sizeof p->remove);
  }
  if (name[0] == 'a') {
    if (p->replace.name != NULL) {
      ecs_err err = ecs_system_replace(w, &p->replace, NULL, NULL, 0);
      p->replace.name = NULL;
      if (err != ECS_ERR_OK) return err;
    }
    if (p->add.name != NULL) {
      ecs_err err = ecs_system_add(w, &p->add, NULL, NULL, 0);
      p->add.name = NULL;
      if (err != ECS_ERR_OK) return err;
    }
    if (p->nest > 0) {
      p->nest--;
      return ecs_world_update(w, dt, ctx, NULL);
    }
  }
  if (name[0] == 'b') return p->fail;
  return ECS_ERR_OK;
}

static ecs_err add_logger(ecs_world *w, const char *name) {
  ecs_system_desc d = {0};
  d.name = name;
  d.kind = ECS_SYSTEM_EXTERNAL;
  d.call = logger;
  return ecs_system_add(w, &d, NULL, NULL, 0);
}

/* The names of the systems in run order, as one letter each. */
static void order(const ecs_world *w, char *out) {
  uint32_t cursor = 0;
  ecs_system *s;
  while (ecs_system_next(w, &cursor, &s)) *out++ = ecs_system_name(s)[0];
  *out = '\0';
}

TEST(System_runs_in_order_and_counts_stats) {
  fixture f;
  probe p = {0};
  char names[16];
  ecs_system *s, *failed = (ecs_system *)&p;
  ecs_system_stats st;
  CHECK(setup(&f));
  CHECK_EQ_INT(add_logger(f.w, "c"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "a"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_system_count(f.w), 3);
  order(f.w, names);
  CHECK(strcmp(names, "cab") == 0);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.5, &p, &failed), ECS_ERR_OK);
  CHECK(failed == NULL);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.5, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "cabcab") == 0);
  s = ecs_system_find(f.w, "c");
  CHECK(s != NULL);
  CHECK(strcmp(ecs_system_name(s), "c") == 0);
  CHECK_EQ_INT(ecs_system_kind_of(s), ECS_SYSTEM_EXTERNAL);
  CHECK(ecs_system_callback(s) == logger);
  CHECK(ecs_system_query(s) == NULL);
  ecs_system_get_stats(s, &st);
  CHECK_EQ_INT(st.calls, 2);
  CHECK_EQ_INT(st.entities, 6); /* 'c' reports 3 per run */
  CHECK(st.seconds >= 0.0);
  ecs_system_reset_stats(f.w);
  ecs_system_get_stats(s, &st);
  CHECK_EQ_INT(st.calls, 0);
  CHECK_EQ_INT(st.entities, 0);
  CHECK(st.seconds == 0.0);
  CHECK(ecs_system_find(f.w, "d") == NULL);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(System_add_rejects_bad_descriptions) {
  fixture f;
  ecs_system_desc d;
  ecs_column_ref cols[ECS_QUERY_MAX_TERMS + 1];
  ecs_system *s = NULL;
  char msg[128];
  CHECK(setup(&f));
  CHECK_EQ_INT(add_logger(f.w, "a"), ECS_ERR_OK);
  memset(&d, 0, sizeof d);
  d.kind = ECS_SYSTEM_EXTERNAL;
  d.call = logger;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_INVALID);
  CHECK(strstr(msg, "name") != NULL);
  d.name = "a";
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_EXISTS);
  CHECK(strstr(msg, "already exists") != NULL);
  d.name = "z";
  d.call = NULL;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_INVALID);
  d.kind = (ecs_system_kind)99;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_INVALID);
  CHECK(strstr(msg, "kind") != NULL);
  /* expressions: a query, a text that compiles, a hook for parameters */
  memset(&d, 0, sizeof d);
  d.name = "e";
  d.kind = ECS_SYSTEM_EXPR;
  d.expr = "Position.x += 1";
  d.expr_len = strlen(d.expr);
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_INVALID);
  d.query = f.q;
  d.expr = "Position.z += 1";
  d.expr_len = strlen(d.expr);
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_UNKNOWN_FIELD);
  CHECK(strstr(msg, "unknown field 'Position.z' at position 1") != NULL);
  d.expr = "Position.x += ";
  d.expr_len = strlen(d.expr);
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_EXPRESSION);
  CHECK(strstr(msg, "expected an expression") != NULL);
  d.expr = "Position.x += k * dt";
  d.expr_len = strlen(d.expr);
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_INVALID);
  CHECK(strstr(msg, "params hook") != NULL);
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, NULL, 0), ECS_ERR_INVALID);
  /* native systems: a query, a function, columns that resolve */
  memset(&d, 0, sizeof d);
  d.name = "n";
  d.kind = ECS_SYSTEM_NATIVE;
  d.fn = NULL;
  d.query = f.q;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_INVALID);
  CHECK(strstr(msg, "function") != NULL);
  for (uint32_t k = 0; k <= ECS_QUERY_MAX_TERMS; k++) {
    cols[k].c = f.P;
    cols[k].field = 0;
    cols[k].write = true;
  }
  d.fn = integrate; /* never called */
  d.cols = cols;
  d.ncols = ECS_QUERY_MAX_TERMS + 1;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_TOO_MANY_COLUMNS);
  CHECK(strcmp(msg, "too many columns (limit 32)") == 0); /* the table's text */
  d.ncols = 1;
  cols[0].c = f.L; /* not a term of the query */
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_UNKNOWN_COMPONENT);
  cols[0].c = f.P;
  cols[0].field = 2;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_UNKNOWN_FIELD);
  cols[0].c = NULL;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_INVALID);
  d.cols = NULL;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, msg, sizeof msg), ECS_ERR_INVALID);
  CHECK(strstr(msg, "missing") != NULL);
  CHECK(s == NULL);
  CHECK_EQ_INT(ecs_system_count(f.w), 1);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(System_remove_frees_the_name) {
  fixture f;
  probe p = {0};
  char names[16];
  CHECK(setup(&f));
  CHECK_EQ_INT(add_logger(f.w, "a"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "c"), ECS_ERR_OK);
  CHECK(ecs_system_remove(f.w, "b"));
  CHECK(!ecs_system_remove(f.w, "b"));
  CHECK(!ecs_system_remove(f.w, "nope"));
  CHECK(!ecs_system_remove(f.w, NULL));
  CHECK(ecs_system_find(f.w, NULL) == NULL);
  order(f.w, names);
  CHECK(strcmp(names, "ac") == 0);
  CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK); /* the name is free again */
  order(f.w, names);
  CHECK(strcmp(names, "acb") == 0);
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "acb") == 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* Removal during an update: at once for runs, later for memory. */
TEST(System_removed_during_an_update_is_not_run_again) {
  fixture f;
  probe p = {0};
  char names[16];
  CHECK(setup(&f));
  CHECK_EQ_INT(add_logger(f.w, "a"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "c"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "d"), ECS_ERR_OK);
  p.remove[0] = "a"; /* itself */
  p.remove[1] = "c";
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "abd") == 0);
  order(f.w, names);
  CHECK(strcmp(names, "bd") == 0);
  CHECK_EQ_INT(ecs_system_count(f.w), 2);
  CHECK_WORLD(f.w); /* the removed ones were freed */
  p.n = 0;
  memset(p.log, 0, sizeof p.log);
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "bd") == 0);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(System_added_during_an_update_runs_from_the_next) {
  fixture f;
  probe p = {0};
  CHECK(setup(&f));
  CHECK_EQ_INT(add_logger(f.w, "a"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK);
  p.add.name = "c";
  p.add.kind = ECS_SYSTEM_EXTERNAL;
  p.add.call = logger;
  p.remove[0] = "b"; /* and the same update removes one before it */
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "a") == 0);
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "aac") == 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* An external system may update the world again; removals wait for the
** outermost update, additions run in the nested one. */
TEST(System_updates_nest) {
  fixture f;
  probe p = {0};
  char names[16];
  CHECK(setup(&f));
  CHECK_EQ_INT(add_logger(f.w, "a"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK);
  p.nest = 1;
  p.remove[0] = "b";
  p.add.name = "c";
  p.add.kind = ECS_SYSTEM_EXTERNAL;
  p.add.call = logger;
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "aac") == 0); /* outer a, inner a and c; b gone */
  order(f.w, names);
  CHECK(strcmp(names, "ac") == 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(System_failure_stops_the_update_and_names_the_system) {
  fixture f;
  probe p = {0};
  ecs_system *failed = NULL;
  ecs_system_stats st;
  int gcs = 0;
  CHECK(setup(&f));
  CHECK_EQ_INT(ecs_manager_register(f.w, "counter", &gc_counter, &gcs),
               ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "a"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "c"), ECS_ERR_OK);
  p.fail = ECS_ERR_DEAD;
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, &failed), ECS_ERR_DEAD);
  CHECK(failed == ecs_system_find(f.w, "b"));
  CHECK(strcmp(p.log, "ab") == 0);
  ecs_system_get_stats(failed, &st);
  CHECK_EQ_INT(st.calls, 0); /* a failed run is not counted */
  CHECK_EQ_INT(gcs, 0);      /* nor is the gc run after a failure */
  p.fail = ECS_ERR_OK;
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, &failed), ECS_ERR_OK);
  CHECK(failed == NULL);
  CHECK(strcmp(p.log, "ababc") == 0);
  CHECK_EQ_INT(gcs, 1);
  /* a system that fails after it was removed is not named: the update's
  ** end frees it */
  p.fail = ECS_ERR_NOMEM;
  p.remover = 'b';
  p.remove[0] = "b";
  failed = (ecs_system *)&p;
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, &failed), ECS_ERR_NOMEM);
  CHECK(failed == NULL);
  CHECK(ecs_system_find(f.w, "b") == NULL);
  CHECK_EQ_INT(ecs_system_count(f.w), 2);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(System_disabled_is_skipped) {
  fixture f;
  probe p = {0};
  ecs_system *b;
  CHECK(setup(&f));
  CHECK_EQ_INT(add_logger(f.w, "a"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK);
  b = ecs_system_find(f.w, "b");
  CHECK(ecs_system_enabled(b));
  ecs_system_enable(b, false);
  CHECK(!ecs_system_enabled(b));
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  ecs_system_enable(b, true);
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "aab") == 0);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* ------------------------------------------------------------------------
** Native and expression systems: a plugin's systems, no Lua
** --------------------------------------------------------------------- */

TEST(System_native_runs_over_its_query) {
  fixture f;
  ecs_system_desc d = {0};
  ecs_column_ref cols[2];
  ecs_system *s, *failed;
  ecs_system_stats st;
  int chunks = 0;
  CHECK(setup(&f));
  cols[0].c = f.P; cols[0].field = 0; cols[0].write = true;
  cols[1].c = f.V; cols[1].field = 0; cols[1].write = false;
  d.name = "move";
  d.kind = ECS_SYSTEM_NATIVE;
  d.query = f.q;
  d.fn = integrate;
  d.ud = &chunks;
  d.cols = cols;
  d.ncols = 2;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, NULL, 0), ECS_ERR_OK);
  cols[0].field = 1; /* copied: later changes do not matter */
  CHECK(ecs_system_function(s) == integrate);
  CHECK(ecs_system_ud(s) == &chunks);
  CHECK(ecs_system_query(s) == f.q);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.5, NULL, &failed), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.5, NULL, &failed), ECS_ERR_OK);
  for (int k = 0; k < 10; k++) CHECK(px(&f, k) == (float)k + 1.0f);
  CHECK(chunks >= 2);
  ecs_system_get_stats(s, &st);
  CHECK_EQ_INT(st.calls, 2);
  CHECK_EQ_INT(st.entities, 20);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

typedef struct params {
  double k;
  int calls;
  ecs_err fail;
  const char *remove; /* the hook removes this system */
} params;

static ecs_err set_k(ecs_world *w, ecs_system *s, double *values, void *ctx) {
  params *pr = (params *)ecs_system_ud(s);
  (void)ctx;
  pr->calls++;
  for (uint32_t k = 0; k < ecs_system_param_count(s); k++)
    if (strcmp(ecs_system_param_name(s, k), "k") == 0) values[k] = pr->k;
  if (pr->remove != NULL) ecs_system_remove(w, pr->remove);
  return pr->fail;
}

TEST(System_expression_binds_dt_and_its_parameters) {
  fixture f;
  ecs_system_desc d = {0};
  params pr = {0};
  ecs_system *s, *failed;
  ecs_system_stats st;
  size_t len;
  CHECK(setup(&f));
  d.name = "push";
  d.kind = ECS_SYSTEM_EXPR;
  d.query = f.q;
  d.expr = "Position.x += k * dt; Position.y = dt";
  d.expr_len = strlen(d.expr);
  d.params = set_k;
  d.ud = &pr;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, NULL, 0), ECS_ERR_OK);
  CHECK(strcmp(ecs_system_expr(s, &len), d.expr) == 0);
  CHECK_EQ_INT(len, d.expr_len);
  CHECK_EQ_INT(ecs_system_param_count(s), 2);
  CHECK(strcmp(ecs_system_param_name(s, 0), "k") == 0);
  CHECK_EQ_INT(ecs_system_param_position(s, 0), 15);
  CHECK(strcmp(ecs_system_param_name(s, 1), "dt") == 0);
  CHECK(ecs_system_param_name(s, 2) == NULL);
  pr.k = 4;
  CHECK_EQ_INT(ecs_world_update(f.w, 0.5, NULL, &failed), ECS_ERR_OK);
  pr.k = -2;
  CHECK_EQ_INT(ecs_world_update(f.w, 0.25, NULL, &failed), ECS_ERR_OK);
  for (int k = 0; k < 10; k++) CHECK(px(&f, k) == (float)k + 1.5f);
  CHECK_EQ_INT(pr.calls, 2);
  ecs_system_get_stats(s, &st);
  CHECK_EQ_INT(st.entities, 20);
  /* the hook's error stops the update, naming the system */
  pr.fail = ECS_ERR_CALLBACK;
  CHECK_EQ_INT(ecs_world_update(f.w, 1, NULL, &failed), ECS_ERR_CALLBACK);
  CHECK(failed == s);
  for (int k = 0; k < 10; k++) CHECK(px(&f, k) == (float)k + 1.5f);
  /* a hook that removes its system: it is not run */
  pr.fail = ECS_ERR_OK;
  pr.remove = "push";
  CHECK_EQ_INT(ecs_world_update(f.w, 1, NULL, &failed), ECS_ERR_OK);
  for (int k = 0; k < 10; k++) CHECK(px(&f, k) == (float)k + 1.5f);
  CHECK_EQ_INT(ecs_system_count(f.w), 0);
  /* dt alone needs no hook */
  memset(&d, 0, sizeof d);
  d.name = "drift";
  d.kind = ECS_SYSTEM_EXPR;
  d.query = f.q;
  d.expr = "Position.x += dt";
  d.expr_len = strlen(d.expr);
  CHECK_EQ_INT(ecs_system_add(f.w, &d, &s, NULL, 0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(f.w, 2, NULL, &failed), ECS_ERR_OK);
  for (int k = 0; k < 10; k++) CHECK(px(&f, k) == (float)k + 3.5f);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* More than ECS_QUERY_MAX_PROGRAMS expression systems on one query: the
** query's cache lets programs go, and each is compiled again. */
TEST(System_expressions_outlive_the_program_cache) {
  fixture f;
  char text[ECS_QUERY_MAX_PROGRAMS + 8][32], name[8];
  uint32_t n = ECS_QUERY_MAX_PROGRAMS + 8;
  CHECK(setup(&f));
  for (uint32_t k = 0; k < n; k++) {
    ecs_system_desc d = {0};
    snprintf(text[k], sizeof text[k], "Position.x += 1 + %u * 0", k);
    snprintf(name, sizeof name, "s%u", k);
    d.name = name;
    d.kind = ECS_SYSTEM_EXPR;
    d.query = f.q;
    d.expr = text[k];
    d.expr_len = strlen(text[k]);
    CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  }
  CHECK_EQ_INT(ecs_world_update(f.w, 0, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(f.w, 0, NULL, NULL), ECS_ERR_OK);
  for (int k = 0; k < 10; k++) CHECK(px(&f, k) == (float)k + 2.0f * (float)n);
  CHECK(ecs_query_program_count(f.q) <= ECS_QUERY_MAX_PROGRAMS);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* Freeing a query removes its systems, outside and during an update. */
static ecs_err free_query(ecs_world *w, ecs_system *s, double dt, void *ctx,
                          size_t *processed) {
  (void)s;
  (void)dt;
  (void)processed;
  ecs_query_free(w, *(ecs_query **)ctx);
  *(ecs_query **)ctx = NULL;
  return ECS_ERR_OK;
}

TEST(System_query_free_removes_its_systems) {
  fixture f;
  ecs_system_desc d = {0};
  ecs_component *with[1];
  ecs_query *q2;
  char names[16];
  CHECK(setup(&f));
  d.kind = ECS_SYSTEM_EXPR;
  d.query = f.q;
  d.expr = "Position.x += 1";
  d.expr_len = strlen(d.expr);
  d.name = "e";
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  memset(&d, 0, sizeof d);
  d.name = "f";
  d.kind = ECS_SYSTEM_EXTERNAL;
  d.call = free_query;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  with[0] = f.P;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 1, NULL, 0, &q2), ECS_ERR_OK);
  d.name = "g"; /* an external system may have a query too */
  d.query = q2;
  d.call = logger;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  memset(&d, 0, sizeof d);
  d.name = "h";
  d.kind = ECS_SYSTEM_EXPR;
  d.query = q2;
  d.expr = "Position.y += 1";
  d.expr_len = strlen(d.expr);
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  ecs_query_free(f.w, f.q); /* outside an update */
  order(f.w, names);
  CHECK(strcmp(names, "fgh") == 0);
  /* during one: 'f' frees q2, so 'g' and 'h' (after it) are not run */
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &q2, NULL), ECS_ERR_OK);
  CHECK(q2 == NULL);
  order(f.w, names);
  CHECK(strcmp(names, "f") == 0);
  for (int k = 0; k < 10; k++) {
    CHECK(px(&f, k) == (float)k);
    CHECK(((float *)ecs_component_column(f.P, 1))[
              ecs_component_lookup(f.w, f.P, f.e[k])] == 0.0f);
  }
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* ------------------------------------------------------------------------
** Out of memory: every allocation of add and update may fail
** --------------------------------------------------------------------- */

TEST(System_out_of_memory_at_every_allocation) {
  for (long fail = 1;; fail++) {
    fixture f;
    ecs_system_desc d = {0};
    ecs_column_ref cols[2];
    ecs_system *failed = NULL;
    params pr = {0};
    probe p = {0};
    size_t before;
    ecs_err err = ECS_ERR_OK;
    int chunks = 0, ok, step = 0;
    const char *names[] = {"move", "push", "log"};
    CHECK(setup(&f));
    f.a.calls = 0; /* fail the fail-th allocation from here on */
    f.a.fail_at = fail;
    f.a.sticky = 1;
    cols[0].c = f.P; cols[0].field = 0; cols[0].write = true;
    cols[1].c = f.V; cols[1].field = 0; cols[1].write = false;
    d.name = names[0];
    d.kind = ECS_SYSTEM_NATIVE;
    d.query = f.q;
    d.fn = integrate;
    d.ud = &chunks;
    d.cols = cols;
    d.ncols = 2;
    before = ecs_system_count(f.w);
    ok = (err = ecs_system_add(f.w, &d, NULL, NULL, 0)) == ECS_ERR_OK;
    if (ok) {
      step++;
      memset(&d, 0, sizeof d);
      d.name = names[1];
      d.kind = ECS_SYSTEM_EXPR;
      d.query = f.q;
      d.expr = "Position.y = Position.y * k + Velocity.dy * dt";
      d.expr_len = strlen(d.expr);
      d.params = set_k;
      d.ud = &pr;
      before = ecs_system_count(f.w);
      ok = (err = ecs_system_add(f.w, &d, NULL, NULL, 0)) == ECS_ERR_OK;
    }
    if (ok) {
      step++;
      before = ecs_system_count(f.w);
      ok = (err = add_logger(f.w, names[2])) == ECS_ERR_OK;
    }
    if (ok) {
      step++;
      ok = (err = ecs_world_update(f.w, 0.5, &p, &failed)) == ECS_ERR_OK;
      if (!ok) CHECK(failed != NULL);
    }
    if (!ok) {
      CHECK_EQ_INT(err, ECS_ERR_NOMEM);
      if (step < 3) { /* the failed add changed nothing */
        CHECK_EQ_INT(ecs_system_count(f.w), before);
        CHECK(ecs_system_find(f.w, names[step]) == NULL);
      }
    }
    f.a.fail_at = 0;
    CHECK_WORLD(f.w);
    CHECK_EQ_INT(ecs_world_update(f.w, 0.5, &p, NULL), ECS_ERR_OK);
    CHECK_WORLD(f.w);
    ecs_world_free(f.w);
    CHECK_EQ_INT(f.a.blocks, 0);
    if (ok) {
      CHECK(fail > 4); /* the sweep did reach the allocations */
      break;
    }
  }
}

/* The replacement's runs log the upper-case letter. */
static ecs_err shouter(ecs_world *w, ecs_system *s, double dt, void *ctx,
                       size_t *processed) {
  probe *p = (probe *)ctx;
  (void)w;
  (void)dt;
  if (p->n < 63) p->log[p->n++] = (char)(ecs_system_name(s)[0] - 'a' + 'A');
  *processed = 0;
  return ECS_ERR_OK;
}

TEST(System_replace_keeps_the_place_and_the_enabled_flag) {
  fixture f;
  probe p = {0};
  ecs_system_desc d = {0};
  ecs_system *s = NULL;
  ecs_system_stats st;
  char names[16], msg[128];
  CHECK(setup(&f));
  CHECK_EQ_INT(add_logger(f.w, "a"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "c"), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  ecs_system_enable(ecs_system_find(f.w, "c"), false);
  /* b becomes an expression system, in b's place */
  d.name = "b";
  d.kind = ECS_SYSTEM_EXPR;
  d.query = f.q;
  d.expr = "Position.x = Position.x + 100";
  d.expr_len = strlen(d.expr);
  CHECK_EQ_INT(ecs_system_replace(f.w, &d, &s, msg, sizeof msg), ECS_ERR_OK);
  CHECK(s == ecs_system_find(f.w, "b"));
  CHECK_EQ_INT(ecs_system_kind_of(s), ECS_SYSTEM_EXPR);
  ecs_system_get_stats(s, &st);
  CHECK_EQ_INT(st.calls, 0);
  order(f.w, names);
  CHECK(strcmp(names, "abc") == 0);
  CHECK_EQ_INT(ecs_system_count(f.w), 3);
  /* c, disabled, stays disabled when replaced */
  memset(&d, 0, sizeof d);
  d.name = "c";
  d.kind = ECS_SYSTEM_EXTERNAL;
  d.call = shouter;
  CHECK_EQ_INT(ecs_system_replace(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  CHECK(!ecs_system_enabled(ecs_system_find(f.w, "c")));
  ecs_system_enable(ecs_system_find(f.w, "c"), true);
  p.n = 0;
  memset(p.log, 0, sizeof p.log);
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "aC") == 0); /* b ran its expression: no letter */
  CHECK(px(&f, 3) == 103.0f);
  /* no such system; an expression that does not compile: nothing changes */
  d.name = "z";
  CHECK_EQ_INT(ecs_system_replace(f.w, &d, NULL, msg, sizeof msg),
               ECS_ERR_NO_SYSTEM);
  CHECK(strcmp(msg, "no system with this name") == 0);
  memset(&d, 0, sizeof d);
  d.name = "c";
  d.kind = ECS_SYSTEM_EXPR;
  d.query = f.q;
  d.expr = "Position.z = 1";
  d.expr_len = strlen(d.expr);
  CHECK(ecs_system_replace(f.w, &d, NULL, msg, sizeof msg) != ECS_ERR_OK);
  CHECK(strstr(msg, "Position.z") != NULL);
  CHECK_EQ_INT(ecs_system_kind_of(ecs_system_find(f.w, "c")), ECS_SYSTEM_EXTERNAL);
  d.name = NULL;
  CHECK_EQ_INT(ecs_system_replace(f.w, &d, NULL, NULL, 0), ECS_ERR_INVALID);
  order(f.w, names);
  CHECK(strcmp(names, "abc") == 0);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* During an update: a later system's replacement runs in this update, the
** running system's from the next; the old bodies never run again. */
TEST(System_replaced_during_an_update) {
  fixture f;
  probe p = {0};
  char names[16];
  CHECK(setup(&f));
  CHECK_EQ_INT(add_logger(f.w, "a"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "c"), ECS_ERR_OK);
  p.replace.name = "c";
  p.replace.kind = ECS_SYSTEM_EXTERNAL;
  p.replace.call = shouter;
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "abC") == 0);
  CHECK_WORLD(f.w); /* the old c was freed when the update ended */
  p.replace.name = "a"; /* itself */
  p.replace.kind = ECS_SYSTEM_EXTERNAL;
  p.replace.call = shouter;
  p.n = 0;
  memset(p.log, 0, sizeof p.log);
  p.nest = 1; /* and an update nested in the old a's run */
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "aAbCbC") == 0); /* the nested walk starts anew: A */
  order(f.w, names);
  CHECK(strcmp(names, "abc") == 0);
  CHECK_EQ_INT(ecs_system_count(f.w), 3);
  CHECK_WORLD(f.w);
  p.n = 0;
  memset(p.log, 0, sizeof p.log);
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "AbC") == 0);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* Every allocation of a replacement fails in turn: the old system stays. */
TEST(System_replace_out_of_memory_changes_nothing) {
  for (long fail = 1;; fail++) {
    fixture f;
    ecs_system_desc d = {0};
    ecs_err err;
    char names[16];
    CHECK(setup(&f));
    CHECK_EQ_INT(add_logger(f.w, "a"), ECS_ERR_OK);
    CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK);
    d.name = "a";
    d.kind = ECS_SYSTEM_EXPR;
    d.query = f.q;
    d.expr = "Position.x = Position.x + Velocity.dx * dt";
    d.expr_len = strlen(d.expr);
    f.a.calls = 0;
    f.a.fail_at = fail;
    f.a.sticky = 1;
    err = ecs_system_replace(f.w, &d, NULL, NULL, 0);
    f.a.fail_at = 0;
    order(f.w, names);
    CHECK(strcmp(names, "ab") == 0);
    CHECK_WORLD(f.w);
    if (err == ECS_ERR_OK) {
      CHECK_EQ_INT(ecs_system_kind_of(ecs_system_find(f.w, "a")), ECS_SYSTEM_EXPR);
      CHECK(fail > 1);
      ecs_world_free(f.w);
      CHECK_EQ_INT(f.a.blocks, 0);
      break;
    }
    CHECK_EQ_INT(err, ECS_ERR_NOMEM);
    CHECK_EQ_INT(ecs_system_kind_of(ecs_system_find(f.w, "a")), ECS_SYSTEM_EXTERNAL);
    ecs_world_free(f.w);
    CHECK_EQ_INT(f.a.blocks, 0);
  }
}

/* Phases and order: after/before over registration order, a cycle refused
** with nothing changed, one phase per update, replace keeping the
** schedule when its desc names no phase. */
TEST(System_phases_and_ordering_constraints) {
  fixture f;
  probe p = {0};
  ecs_system_desc d = {0};
  char names[16], msg[128];
  const char *after_c[] = {"c"}, *before_a[] = {"a"}, *after_b[] = {"b"};
  CHECK(setup(&f));
  d.kind = ECS_SYSTEM_EXTERNAL;
  d.call = logger;
  d.name = "a";
  d.after = after_c;
  d.nafter = 1;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  CHECK_EQ_INT(add_logger(f.w, "b"), ECS_ERR_OK);
  d.name = "c";
  d.nafter = 0;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  order(f.w, names);
  CHECK(strcmp(names, "cab") == 0); /* a waits for c; b keeps its turn */
  d.name = "d";
  d.phase = "draw";
  d.before = before_a; /* another phase: ignored */
  d.nbefore = 1;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  CHECK(strcmp(ecs_system_phase(ecs_system_find(f.w, "d")), "draw") == 0);
  CHECK(strcmp(ecs_system_phase(ecs_system_find(f.w, "a")), "update") == 0);
  /* c after b closes no cycle; c before... : e after b, b after e does */
  memset(&d, 0, sizeof d);
  d.kind = ECS_SYSTEM_EXTERNAL;
  d.call = logger;
  d.name = "e";
  d.before = after_b; /* e before b */
  d.nbefore = 1;
  d.after = after_b;  /* and after b */
  d.nafter = 1;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, msg, sizeof msg), ECS_ERR_CYCLE);
  CHECK(strstr(msg, "cycle among: b e") != NULL);
  CHECK(ecs_system_find(f.w, "e") == NULL);
  order(f.w, names);
  CHECK(strcmp(names, "cabd") == 0);
  CHECK_EQ_INT(ecs_world_update(f.w, 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "cab") == 0);
  CHECK_EQ_INT(ecs_world_update_phase(f.w, "draw", 0, &p, NULL), ECS_ERR_OK);
  CHECK(strcmp(p.log, "cabd") == 0);
  /* replace without a phase keeps a's schedule (after c) */
  memset(&d, 0, sizeof d);
  d.kind = ECS_SYSTEM_EXTERNAL;
  d.call = shouter;
  d.name = "a";
  CHECK_EQ_INT(ecs_system_replace(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  order(f.w, names);
  CHECK(strcmp(names, "cabd") == 0);
  d.phase = "update"; /* now the desc's: no constraint, back to its turn */
  CHECK_EQ_INT(ecs_system_replace(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  order(f.w, names);
  CHECK(strcmp(names, "abcd") == 0);
  d.phase = "";
  CHECK_EQ_INT(ecs_system_replace(f.w, &d, NULL, NULL, 0), ECS_ERR_INVALID);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* A fixed-interval system: once per whole interval owed, with dt =
** interval, at most ECS_SYSTEM_MAX_CATCHUP runs per update. */
static ecs_err count_dt(ecs_world *w, ecs_system *s, double dt, void *ctx,
                        size_t *processed) {
  probe *p = (probe *)ctx;
  (void)w;
  (void)s;
  if (dt == 0.25 && p->n < 63) p->log[p->n++] = 'q';
  *processed = 0;
  return ECS_ERR_OK;
}

TEST(System_fixed_interval) {
  fixture f;
  probe p = {0};
  ecs_system_desc d = {0};
  CHECK(setup(&f));
  d.name = "q";
  d.kind = ECS_SYSTEM_EXTERNAL;
  d.call = count_dt;
  d.interval = 0.25;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.5, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(p.n, 2);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.125, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(p.n, 2);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.125, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(p.n, 3);
  CHECK_EQ_INT(ecs_world_update(f.w, 100.0, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(p.n, 3 + (int)ECS_SYSTEM_MAX_CATCHUP);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.125, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(p.n, 3 + (int)ECS_SYSTEM_MAX_CATCHUP); /* the lag was dropped */
  d.name = "bad";
  d.interval = -1.0;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_INVALID);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** dt must be finite: a NaN or an infinity added to what an interval
** system is owed stays there for good (NaN: it never runs again). A
** negative dt is passed on; it takes time back from what an interval
** system is owed, at most ECS_SYSTEM_MAX_CATCHUP intervals below zero, so
** that rewinds however long cannot reach -inf either.
*/
TEST(System_update_refuses_a_non_finite_dt) {
  fixture f;
  probe p = {0};
  ecs_system_desc d = {0};
  ecs_system *bad = (ecs_system *)&p;
  double inf = HUGE_VAL, nan_ = nan("");
  CHECK(setup(&f));
  d.name = "q";
  d.kind = ECS_SYSTEM_EXTERNAL;
  d.call = count_dt;
  d.interval = 0.25;
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(f.w, nan_, &p, &bad), ECS_ERR_NOT_FINITE);
  CHECK(bad == NULL);
  CHECK_EQ_INT(ecs_world_update(f.w, inf, &p, NULL), ECS_ERR_NOT_FINITE);
  CHECK_EQ_INT(ecs_world_update_phase(f.w, "update", -inf, &p, NULL),
               ECS_ERR_NOT_FINITE);
  CHECK_EQ_INT(p.n, 0);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.25, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(p.n, 1); /* nothing was owed from the refused updates */
  /* a negative dt: 0.125 taken back, so 0.25 more owes 0.125 only */
  CHECK_EQ_INT(ecs_world_update(f.w, -0.125, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.25, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(p.n, 1);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.125, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(p.n, 2);
  /* rewinds summing beyond the largest double: bounded, still running */
  CHECK_EQ_INT(ecs_world_update(f.w, -DBL_MAX, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(f.w, -DBL_MAX, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(f.w, 0.25 * (double)ECS_SYSTEM_MAX_CATCHUP + 0.25,
                                &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(p.n, 3);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* A phase no system has: an error, not an update that runs nothing
** ("update", the default, needs none). Disabled systems count. */
TEST(System_update_of_a_phase_no_system_has) {
  fixture f;
  probe p = {0};
  ecs_system_desc d = {0};
  CHECK(setup(&f));
  CHECK_EQ_INT(ecs_world_update_phase(f.w, "update", 0.5, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update_phase(f.w, NULL, 0.5, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update_phase(f.w, "draw", 0.5, &p, NULL), ECS_ERR_NO_PHASE);
  d.name = "q";
  d.kind = ECS_SYSTEM_EXTERNAL;
  d.call = count_dt;
  d.phase = "draw";
  CHECK_EQ_INT(ecs_system_add(f.w, &d, NULL, NULL, 0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update_phase(f.w, "Draw", 0.25, &p, NULL), ECS_ERR_NO_PHASE);
  CHECK_EQ_INT(p.n, 0);
  CHECK_EQ_INT(ecs_world_update_phase(f.w, "draw", 0.25, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(p.n, 1);
  ecs_system_enable(ecs_system_find(f.w, "q"), false);
  CHECK_EQ_INT(ecs_world_update_phase(f.w, "draw", 0.25, &p, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(p.n, 1);
  CHECK(ecs_system_remove(f.w, "q"));
  CHECK_EQ_INT(ecs_world_update_phase(f.w, "draw", 0.25, &p, NULL), ECS_ERR_NO_PHASE);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

static const test_case cases[] = {
  CASE(System_runs_in_order_and_counts_stats),
  CASE(System_add_rejects_bad_descriptions),
  CASE(System_remove_frees_the_name),
  CASE(System_removed_during_an_update_is_not_run_again),
  CASE(System_added_during_an_update_runs_from_the_next),
  CASE(System_updates_nest),
  CASE(System_failure_stops_the_update_and_names_the_system),
  CASE(System_disabled_is_skipped),
  CASE(System_native_runs_over_its_query),
  CASE(System_expression_binds_dt_and_its_parameters),
  CASE(System_expressions_outlive_the_program_cache),
  CASE(System_query_free_removes_its_systems),
  CASE(System_out_of_memory_at_every_allocation),
  CASE(System_replace_keeps_the_place_and_the_enabled_flag),
  CASE(System_replaced_during_an_update),
  CASE(System_replace_out_of_memory_changes_nothing),
  CASE(System_phases_and_ordering_constraints),
  CASE(System_fixed_interval),
  CASE(System_update_refuses_a_non_finite_dt),
  CASE(System_update_of_a_phase_no_system_has),
};

TEST_MAIN(cases)
