/*
** test_query.c -- queries, native systems and compiled expressions
** (query.h), through the core alone.
*/
#include <math.h>
#include <stdint.h>

#include "../support/harness.h"
#include "../support/membuf.h"
#include "ecs.h"
#include "component.h"
#include "journal.h"
#include "query.h"
#include "snapshot.h"

static const ecs_field_def pos_fields[] = {{"x", ECS_F32}, {"y", ECS_F32}};
static const ecs_field_def vel_fields[] = {{"dx", ECS_F32}, {"dy", ECS_F32}};
static const ecs_field_def hp_fields[] = {{"hp", ECS_I16}, {"alive", ECS_BOOL}};

/* ecs_component_remove without listeners: true when it removed. */
static bool rm(ecs_world *w, ecs_component *c, ecs_entity e) {
  bool done = false;
  return ecs_component_remove(w, c, e, &done) == ECS_ERR_OK && done;
}

typedef struct fixture {
  test_alloc a;
  ecs_world *w;
  ecs_component *P, *V, *H, *Tag;
} fixture;

static int setup(fixture *f) {
  memset(&f->a, 0, sizeof f->a);
  f->w = ecs_world_new(test_allocf, &f->a);
  return f->w != NULL &&
         ecs_component_new(f->w, "Position", pos_fields, 2, &f->P) == ECS_ERR_OK &&
         ecs_component_new(f->w, "Velocity", vel_fields, 2, &f->V) == ECS_ERR_OK &&
         ecs_component_new(f->w, "Health", hp_fields, 2, &f->H) == ECS_ERR_OK &&
         ecs_component_new(f->w, "Frozen", NULL, 0, &f->Tag) == ECS_ERR_OK;
}

static float *col_f(ecs_component *c, uint32_t field) {
  return (float *)ecs_component_column(c, field);
}

/* Give e Position (x, y) and, when v, Velocity (1, 2). */
static ecs_entity spawn(fixture *f, float x, float y, int v) {
  ecs_entity e;
  ecs_instance i;
  if (ecs_create(f->w, &e) != ECS_ERR_OK) return ECS_NULL;
  if (ecs_component_add(f->w, f->P, e, &i, NULL) != ECS_ERR_OK) return ECS_NULL;
  col_f(f->P, 0)[i] = x;
  col_f(f->P, 1)[i] = y;
  if (v) {
    if (ecs_component_add(f->w, f->V, e, &i, NULL) != ECS_ERR_OK) return ECS_NULL;
    col_f(f->V, 0)[i] = 1.0f;
    col_f(f->V, 1)[i] = 2.0f;
  }
  return e;
}

static size_t count_of(fixture *f, ecs_query *q) {
  size_t n = 0;
  if (ecs_query_count(f->w, q, &n) != ECS_ERR_OK) return (size_t)-1;
  return n;
}

TEST(Query_new_rejects_bad_terms) {
  fixture f;
  ecs_query *q = NULL;
  ecs_component *with[2], *without[1];
  ecs_component *many[ECS_QUERY_MAX_TERMS + 1];
  CHECK(setup(&f));
  /* one code per broken rule, each with the table's text */
  CHECK_EQ_INT(ecs_query_new(f.w, with, 0, NULL, 0, &q), ECS_ERR_NO_TERMS);
  CHECK(strcmp(ecs_strerror(ECS_ERR_NO_TERMS), "at least one component expected") == 0);
  with[0] = f.P;
  with[1] = f.P;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 2, NULL, 0, &q), ECS_ERR_DUPLICATE_TERM);
  with[1] = NULL; /* a C caller's slip, no rule of queries */
  CHECK_EQ_INT(ecs_query_new(f.w, with, 2, NULL, 0, &q), ECS_ERR_INVALID);
  without[0] = f.P;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 1, without, 1, &q), ECS_ERR_DUPLICATE_TERM);
  /* NULL is reported wherever it is, even after a duplicate */
  with[1] = f.P;
  without[0] = NULL;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 2, without, 1, &q), ECS_ERR_INVALID);
  /* the limit counts both lists: 32 is fine, 33 is not (checked first) */
  for (uint32_t k = 0; k <= ECS_QUERY_MAX_TERMS; k++) many[k] = f.P;
  CHECK_EQ_INT(ecs_query_new(f.w, many, ECS_QUERY_MAX_TERMS + 1, NULL, 0, &q),
               ECS_ERR_TOO_MANY_TERMS);
  CHECK_EQ_INT(ecs_query_new(f.w, many, ECS_QUERY_MAX_TERMS, many, 1, &q),
               ECS_ERR_TOO_MANY_TERMS);
  CHECK_EQ_INT(ecs_query_new(f.w, many, ECS_QUERY_MAX_TERMS, NULL, 0, &q),
               ECS_ERR_DUPLICATE_TERM);
  CHECK(strcmp(ecs_strerror(ECS_ERR_TOO_MANY_TERMS), "too many components (limit 32)") == 0);
  CHECK(q == NULL);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(Query_count_follows_adds_removes_and_destroys) {
  fixture f;
  ecs_query *q, *qx;
  ecs_component *with[2], *without[1];
  ecs_entity e[10];
  CHECK(setup(&f));
  with[0] = f.P;
  with[1] = f.V;
  without[0] = f.Tag;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 2, NULL, 0, &q), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_new(f.w, with, 2, without, 1, &qx), ECS_ERR_OK);
  CHECK_EQ_INT(count_of(&f, q), 0);
  for (int k = 0; k < 10; k++) CHECK((e[k] = spawn(&f, (float)k, 0, k % 2 == 0)) != ECS_NULL);
  CHECK_EQ_INT(count_of(&f, q), 5);
  CHECK(ecs_component_add(f.w, f.Tag, e[0], NULL, NULL) == ECS_ERR_OK);
  CHECK_EQ_INT(count_of(&f, qx), 4);
  CHECK(ecs_destroy(f.w, e[2]));
  CHECK_EQ_INT(count_of(&f, q), 4);      /* at once, before any gc */
  CHECK(rm(f.w, f.V, e[4]));
  CHECK_EQ_INT(count_of(&f, q), 3);
  CHECK(ecs_component_add(f.w, f.V, e[1], NULL, NULL) == ECS_ERR_OK);
  CHECK_EQ_INT(count_of(&f, q), 4);
  CHECK(ecs_query_matches(f.w, q, e[1]));
  CHECK(!ecs_query_matches(f.w, qx, e[0]));
  CHECK_WORLD(f.w);
  ecs_world_gc(f.w, SIZE_MAX);
  CHECK_EQ_INT(count_of(&f, q), 4);
  CHECK_WORLD(f.w);
  ecs_query_free(f.w, qx);
  ecs_world_free(f.w); /* frees q */
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* "Any" terms: at least one of them, kept through adds, removes and
** destroys (the world's check holds every list to ecs_query_matches);
** refusals change nothing; every allocation failing in turn. */
TEST(Query_any_terms_follow_every_change) {
  fixture f;
  ecs_query *q;
  ecs_component *with[1], *any[2], *twice[2];
  ecs_entity e[6];
  CHECK(setup(&f));
  with[0] = f.P;
  any[0] = f.V;
  any[1] = f.Tag;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 1, NULL, 0, &q), ECS_ERR_OK);
  for (int k = 0; k < 6; k++) CHECK((e[k] = spawn(&f, (float)k, 0, k % 2 == 0)) != ECS_NULL);
  CHECK_EQ_INT(count_of(&f, q), 6);
  twice[0] = f.V;
  twice[1] = f.V;
  CHECK_EQ_INT(ecs_query_require_any(f.w, q, twice, 2), ECS_ERR_DUPLICATE_TERM);
  CHECK_EQ_INT(ecs_query_require_any(f.w, q, with, 1), ECS_ERR_DUPLICATE_TERM);
  CHECK_EQ_INT(ecs_query_any_count(q), 0);
  CHECK_EQ_INT(ecs_query_require_any(f.w, q, any, 2), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_require_any(f.w, q, any, 2), ECS_ERR_INVALID);
  CHECK(ecs_query_any(q, 1) == f.Tag && ecs_query_any(q, 2) == NULL);
  CHECK_EQ_INT(count_of(&f, q), 3);           /* e0, e2, e4 have V */
  CHECK(ecs_component_add(f.w, f.Tag, e[1], NULL, NULL) == ECS_ERR_OK);
  CHECK(ecs_component_add(f.w, f.Tag, e[2], NULL, NULL) == ECS_ERR_OK);
  CHECK_EQ_INT(count_of(&f, q), 4);
  CHECK_WORLD(f.w);
  CHECK(rm(f.w, f.V, e[2]));                  /* still tagged */
  CHECK_EQ_INT(count_of(&f, q), 4);
  CHECK(rm(f.w, f.Tag, e[2]));                /* neither */
  CHECK_EQ_INT(count_of(&f, q), 3);
  CHECK(!ecs_query_matches(f.w, q, e[2]));
  CHECK(ecs_destroy(f.w, e[0]));
  CHECK_EQ_INT(count_of(&f, q), 2);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
  for (long fail = 1;; fail++) {
    ecs_err err;
    CHECK(setup(&f));
    with[0] = f.P; /* this world's managers */
    any[0] = f.V;
    any[1] = f.Tag;
    CHECK_EQ_INT(ecs_query_new(f.w, with, 1, NULL, 0, &q), ECS_ERR_OK);
    CHECK((e[0] = spawn(&f, 0, 0, 1)) != ECS_NULL);
    f.a.calls = 0;
    f.a.fail_at = fail;
    err = ecs_query_require_any(f.w, q, any, 2);
    f.a.fail_at = 0;
    if (err != ECS_ERR_OK) {
      CHECK_EQ_INT(err, ECS_ERR_NOMEM);
      CHECK_EQ_INT(ecs_query_any_count(q), 0);
    }
    CHECK_WORLD(f.w);
    ecs_world_free(f.w);
    CHECK_EQ_INT(f.a.blocks, 0);
    if (err == ECS_ERR_OK) {
      CHECK(fail > 1); /* the sweep did reach the allocations */
      break;
    }
  }
}

/* A native system that sums its one column (doubles of the chunk). */
static void sum_column(ecs_world *w, const ecs_view *view, void *ud) {
  const float *v = (const float *)view->column[0];
  (void)w;
  for (uint32_t i = 0; i < view->count; i++) *(double *)ud += (double)v[i];
}

/* Optional terms: matches with or without them, their rows followed as
** they come and go (the world's check holds each row to a lookup and the
** runs to the rows), zeros where absent in programs and native runs,
** refused writes, cursors and change terms. */
TEST(Query_optional_terms_read_zero_where_absent) {
  fixture f;
  ecs_query *q;
  ecs_component *with[2];
  ecs_entity e[40];
  ecs_program *p;
  ecs_column_ref col, wcol;
  ecs_query_cursor *cur;
  char msg[128];
  double sum = 0;
  CHECK(setup(&f));
  with[0] = f.P;
  with[1] = f.V;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 2, NULL, 0, &q), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_set_optional(q, 1u), ECS_ERR_INVALID);   /* the driver */
  CHECK_EQ_INT(ecs_query_set_optional(q, 4u), ECS_ERR_INVALID);   /* no term 2 */
  CHECK_EQ_INT(ecs_query_set_optional(q, 2u), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_optional(q), 2u);
  CHECK_EQ_INT(ecs_query_track_changes(f.w, q, with + 1, 1, NULL, 0), ECS_ERR_INVALID);
  for (int k = 0; k < 40; k++) CHECK((e[k] = spawn(&f, (float)k, 0, k % 3 == 0)) != ECS_NULL);
  CHECK_EQ_INT(count_of(&f, q), 40);
  CHECK_EQ_INT(ecs_query_set_optional(q, 0u), ECS_ERR_INVALID);   /* used */
  CHECK(ecs_query_matches(f.w, q, e[1]));
  CHECK_WORLD(f.w);
  CHECK(rm(f.w, f.V, e[0]));
  CHECK(ecs_component_add(f.w, f.V, e[1], NULL, NULL) == ECS_ERR_OK);
  CHECK(ecs_destroy(f.w, e[3]));
  CHECK_EQ_INT(count_of(&f, q), 39);
  CHECK_WORLD(f.w);
  /* V.dx is 1 where present (spawn), 0 where added bare (e1), absent
  ** elsewhere: a program reads zeros there */
  CHECK_EQ_INT(ecs_query_program(f.w, q, "Position.y = Velocity.dx + 5", 28, &p, msg,
                                 sizeof msg), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_program_run(f.w, p, NULL, NULL), ECS_ERR_OK);
  CHECK(col_f(f.P, 1)[ecs_component_lookup(f.w, f.P, e[6])] == 6.0f);
  CHECK(col_f(f.P, 1)[ecs_component_lookup(f.w, f.P, e[7])] == 5.0f);
  CHECK(col_f(f.P, 1)[ecs_component_lookup(f.w, f.P, e[1])] == 5.0f);
  CHECK_EQ_INT(ecs_query_program(f.w, q, "Velocity.dx = 1", 15, &p, msg, sizeof msg),
               ECS_ERR_READONLY_FIELD);
  /* a native run gathers zeros where absent; a written column is refused */
  col.c = f.V;
  col.field = 0;
  col.write = false;
  CHECK_EQ_INT(ecs_query_run(f.w, q, &col, 1, 0, sum_column, &sum, NULL), ECS_ERR_OK);
  CHECK(sum == 12.0); /* e6, e9, ..., e39: 12 of them with dx = 1 */
  wcol = col;
  wcol.write = true;
  CHECK_EQ_INT(ecs_query_run(f.w, q, &wcol, 1, 0, sum_column, &sum, NULL),
               ECS_ERR_READONLY_FIELD);
  cur = (ecs_query_cursor *)malloc(ecs_query_cursor_size());
  CHECK(cur != NULL);
  CHECK_EQ_INT(ecs_query_cursor_begin(f.w, q, &col, 1, cur), ECS_ERR_INVALID);
  free(cur);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** A pinned snapshot survives a rebuild; the iterator skips entities that
** stopped matching and never yields entities created after it began.
*/
TEST(Query_iteration_pins_a_snapshot) {
  fixture f;
  ecs_query *q;
  ecs_query_iter it, it2;
  ecs_component *with[1];
  ecs_entity e[6], x, created;
  size_t seen = 0;
  CHECK(setup(&f));
  with[0] = f.P;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 1, NULL, 0, &q), ECS_ERR_OK);
  for (int k = 0; k < 6; k++) CHECK((e[k] = spawn(&f, (float)k, 0, 0)) != ECS_NULL);
  CHECK_EQ_INT(ecs_query_iter_begin(f.w, q, &it), ECS_ERR_OK);
  CHECK(ecs_query_iter_next(f.w, &it, &x));
  seen++;
  CHECK(ecs_destroy(f.w, e[5]));              /* not yet visited: skipped */
  CHECK((created = spawn(&f, 9, 9, 0)) != ECS_NULL); /* created: not visited */
  CHECK_EQ_INT(count_of(&f, q), 6);           /* rebuilds while pinned */
  CHECK_WORLD(f.w);                            /* retired snapshot is pinned */
  CHECK_EQ_INT(ecs_query_iter_begin(f.w, q, &it2), ECS_ERR_OK); /* nested */
  while (ecs_query_iter_next(f.w, &it, &x)) {
    CHECK(x != e[5] && x != created);
    seen++;
  }
  CHECK_EQ_INT(seen, 5);
  ecs_query_iter_end(f.w, &it);
  ecs_query_iter_end(f.w, &it);                /* idempotent */
  seen = 0;
  while (ecs_query_iter_next(f.w, &it2, &x)) seen++;
  CHECK_EQ_INT(seen, 6);
  ecs_query_iter_end(f.w, &it2);
  CHECK_WORLD(f.w);
  /* a snapshot still pinned when the world goes is freed with it */
  CHECK_EQ_INT(ecs_query_iter_begin(f.w, q, &it), ECS_ERR_OK);
  CHECK(ecs_destroy(f.w, e[0]));
  CHECK_EQ_INT(count_of(&f, q), 5);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** A whole-world load (a snapshot loaded in place, an undo, a delta applied)
** ends every iteration begun before it: the list describes the world it
** replaced, so next and chunk report the end, current is false, and
** loaded tells the caller to drop what it would write back. A load that
** fails changes nothing and ends nothing; an iteration begun after the
** load visits the loaded world.
*/
static bool iter_ended_by_load(fixture *f, ecs_query_iter *it, uint64_t loads) {
  ecs_entity x, ents[4];
  uint32_t rows[4];
  bool ok = ecs_world_loads(f->w) == loads + 1 && ecs_query_iter_loaded(f->w, it) &&
            !ecs_query_iter_current(f->w, it) && !ecs_query_iter_next(f->w, it, &x) &&
            ecs_query_iter_chunk(f->w, it, 4, ents, rows) == 0;
  ecs_query_iter_end(f->w, it);
  return ok && ecs_query_iter_loaded(f->w, it); /* still said after the end */
}

TEST(Query_iterations_end_at_a_whole_world_load) {
  fixture f, r;
  ecs_query *q, *rq;
  ecs_query_iter it;
  ecs_component *with[1];
  ecs_journal *j;
  ecs_entity e[6], x;
  ecs_reader in;
  ecs_delta d;
  membuf blob = {0};
  ecs_writer out;
  const void *dp;
  size_t dn, seen = 0;
  uint64_t loads;
  CHECK(setup(&f));
  with[0] = f.P;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 1, NULL, 0, &q), ECS_ERR_OK);
  for (int k = 0; k < 6; k++) CHECK((e[k] = spawn(&f, (float)k, 0, 0)) != ECS_NULL);
  out = membuf_writer(&blob);
  CHECK_EQ_INT(ecs_world_save(f.w, &out), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_loads(f.w), 0);
  /* a snapshot loaded in place; one that fails first (truncated) */
  CHECK_EQ_INT(ecs_query_iter_begin(f.w, q, &it), ECS_ERR_OK);
  CHECK(ecs_query_iter_next(f.w, &it, &x));
  in.data = blob.p;
  in.size = blob.n - 1;
  in.pos = 0;
  CHECK(ecs_world_load(f.w, &in) != ECS_ERR_OK);
  CHECK(!ecs_query_iter_loaded(f.w, &it));
  CHECK(ecs_query_iter_next(f.w, &it, &x));
  loads = ecs_world_loads(f.w);
  in.size = blob.n;
  in.pos = 0;
  CHECK_EQ_INT(ecs_world_load(f.w, &in), ECS_ERR_OK);
  CHECK(iter_ended_by_load(&f, &it, loads));
  CHECK_EQ_INT(ecs_query_iter_begin(f.w, q, &it), ECS_ERR_OK); /* after it */
  CHECK(!ecs_query_iter_loaded(f.w, &it));
  while (ecs_query_iter_next(f.w, &it, &x)) seen++;
  CHECK_EQ_INT(seen, 6);
  ecs_query_iter_end(f.w, &it);
  /* an undo */
  CHECK_EQ_INT(ecs_journal_open(f.w, NULL, &j, NULL), ECS_ERR_OK);
  CHECK(ecs_destroy(f.w, e[2]));
  CHECK_EQ_INT(ecs_query_iter_begin(f.w, q, &it), ECS_ERR_OK);
  loads = ecs_world_loads(f.w);
  CHECK_EQ_INT(ecs_journal_undo(f.w, j), ECS_ERR_OK);
  CHECK(iter_ended_by_load(&f, &it, loads));
  /* a delta applied to a replica */
  memset(&r.a, 0, sizeof r.a);
  CHECK((r.w = ecs_world_new(test_allocf, &r.a)) != NULL);
  CHECK_EQ_INT(ecs_component_new(r.w, "Position", pos_fields, 2, &r.P), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(r.w, "Velocity", vel_fields, 2, &r.V), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(r.w, "Health", hp_fields, 2, &r.H), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(r.w, "Frozen", NULL, 0, &r.Tag), ECS_ERR_OK);
  in.pos = 0;
  CHECK_EQ_INT(ecs_world_load(r.w, &in), ECS_ERR_OK);
  with[0] = r.P;
  CHECK_EQ_INT(ecs_query_new(r.w, with, 1, NULL, 0, &rq), ECS_ERR_OK);
  ecs_component_write_begin(f.w, f.P, NULL, ecs_component_lookup(f.w, f.P, e[1]), 1);
  col_f(f.P, 0)[ecs_component_lookup(f.w, f.P, e[1])] = 10; /* a change */
  ecs_component_write_end(f.w, f.P, &(ecs_instance){ecs_component_lookup(f.w, f.P, e[1])}, 0, 1);
  CHECK_EQ_INT(ecs_journal_delta(f.w, j, NULL, &dp, &dn, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_delta_open(r.w, &d, dp, dn), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_iter_begin(r.w, rq, &it), ECS_ERR_OK);
  loads = ecs_world_loads(r.w);
  CHECK_EQ_INT(ecs_delta_apply(r.w, &d, NULL, NULL, NULL), ECS_ERR_OK);
  CHECK(iter_ended_by_load(&r, &it, loads));
  CHECK_WORLD(r.w);
  CHECK_WORLD(f.w);
  ecs_journal_close(f.w, j);
  membuf_free(&blob);
  ecs_world_free(r.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
  CHECK_EQ_INT(r.a.blocks, 0);
}

/* Chunks return current rows, re-looked-up after structural changes. */
TEST(Query_chunks_report_current_rows) {
  fixture f;
  ecs_query *q;
  ecs_query_iter it;
  ecs_component *with[2];
  ecs_entity e[8], ents[4];
  uint32_t rows[2 * 4], n, total = 0;
  CHECK(setup(&f));
  with[0] = f.P;
  with[1] = f.V;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 2, NULL, 0, &q), ECS_ERR_OK);
  for (int k = 0; k < 8; k++) CHECK((e[k] = spawn(&f, (float)k, 0, 1)) != ECS_NULL);
  CHECK_EQ_INT(ecs_query_iter_begin(f.w, q, &it), ECS_ERR_OK);
  n = ecs_query_iter_chunk(f.w, &it, 4, ents, rows);
  CHECK_EQ_INT(n, 4);
  CHECK(ecs_query_iter_current(f.w, &it));
  CHECK(rm(f.w, f.P, e[0])); /* moves e[7]'s P row */
  CHECK(!ecs_query_iter_current(f.w, &it));
  total = n;
  while ((n = ecs_query_iter_chunk(f.w, &it, 4, ents, rows)) > 0) {
    for (uint32_t j = 0; j < n; j++) {
      CHECK_EQ_INT(rows[j], ecs_component_lookup(f.w, f.P, ents[j]));
      CHECK_EQ_INT(rows[4 + j], ecs_component_lookup(f.w, f.V, ents[j]));
    }
    total += n;
  }
  CHECK_EQ_INT(total, 8);
  ecs_query_iter_end(f.w, &it);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

typedef struct run_log {
  uint32_t calls, rows, direct;
  ecs_component *P;
} run_log;

static void integrate(ecs_world *w, const ecs_view *v, void *ud) {
  run_log *log = (run_log *)ud;
  float *x = (float *)v->out[0];
  const float *dx = (const float *)v->column[1];
  (void)w;
  log->calls++;
  log->rows += v->count;
  if (v->column[0] >= ecs_component_column(log->P, 0) &&
      v->column[0] < (const void *)(col_f(log->P, 0) + ecs_component_size(log->P)))
    log->direct++;
  for (uint32_t k = 0; k < v->count; k++) x[k] += dx[k] * (float)v->dt;
}

/*
** Contiguous rows are handed over in place (one call for the whole run);
** scattered ones are gathered and scattered back. Both give the same sums.
*/
TEST(Query_run_in_place_and_gathered) {
  fixture f;
  ecs_query *q;
  ecs_component *with[2];
  ecs_column_ref cols[2];
  ecs_entity e[600];
  run_log log;
  size_t done;
  uint32_t calls_before;
  CHECK(setup(&f));
  with[0] = f.P;
  with[1] = f.V;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 2, NULL, 0, &q), ECS_ERR_OK);
  for (int k = 0; k < 600; k++) CHECK((e[k] = spawn(&f, (float)k, 0, 1)) != ECS_NULL);
  cols[0].c = f.P; cols[0].field = 0; cols[0].write = true;
  cols[1].c = f.V; cols[1].field = 0; cols[1].write = false;
  memset(&log, 0, sizeof log);
  log.P = f.P;
  CHECK_EQ_INT(ecs_query_run(f.w, q, cols, 2, 0.5, integrate, &log, &done), ECS_ERR_OK);
  CHECK_EQ_INT(done, 600);
  CHECK_EQ_INT(log.calls, 1);                  /* one contiguous run */
  CHECK_EQ_INT(log.direct, 1);
  /* entities with Velocity alone make Velocity over twice the query's
  ** size, so the run does not re-align it (Query_realigns_after_churn) */
  for (int k = 0; k < 700; k++) {
    ecs_entity x;
    CHECK_EQ_INT(ecs_create(f.w, &x), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_component_add(f.w, f.V, x, NULL, NULL), ECS_ERR_OK);
  }
  /* scramble Velocity's rows: remove and re-add every third */
  for (int k = 0; k < 600; k += 3) {
    ecs_instance i;
    CHECK(rm(f.w, f.V, e[k]));
    CHECK(ecs_component_add(f.w, f.V, e[k], &i, NULL) == ECS_ERR_OK);
    col_f(f.V, 0)[i] = 1.0f;
  }
  memset(&log, 0, sizeof log);
  log.P = f.P;
  CHECK_EQ_INT(ecs_query_run(f.w, q, cols, 2, 0.5, integrate, &log, &done), ECS_ERR_OK);
  CHECK_EQ_INT(done, 600);
  CHECK(log.calls > 1);
  for (int k = 0; k < 600; k++) {
    ecs_instance i = ecs_component_lookup(f.w, f.P, e[k]);
    CHECK(fabs((double)col_f(f.P, 0)[i] - (k + 1.0)) < 1e-4);
  }
  /* bad columns: a field out of range, a manager not in the query, lua */
  calls_before = log.calls;
  cols[1].field = 5;
  CHECK_EQ_INT(ecs_query_run(f.w, q, cols, 2, 0, integrate, &log, NULL),
               ECS_ERR_UNKNOWN_FIELD);
  cols[1].c = f.H;
  cols[1].field = 0;
  CHECK_EQ_INT(ecs_query_run(f.w, q, cols, 2, 0, integrate, &log, NULL),
               ECS_ERR_UNKNOWN_COMPONENT);
  cols[1].c = NULL;
  CHECK_EQ_INT(ecs_query_run(f.w, q, cols, 2, 0, integrate, &log, NULL), ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_query_run(f.w, q, NULL, 2, 0, integrate, &log, NULL), ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_query_run(f.w, q, cols, ECS_QUERY_MAX_TERMS + 1, 0, integrate,
                             &log, NULL), ECS_ERR_TOO_MANY_COLUMNS);
  {
    /* a lua field holds references, not numbers */
    static const ecs_field_def brain_fields[] = {{"script", ECS_LUA}};
    ecs_component *B, *with2[3];
    ecs_query *q2;
    ecs_column_ref lua_col[1];
    CHECK_EQ_INT(ecs_component_new(f.w, "Brain", brain_fields, 1, &B), ECS_ERR_OK);
    with2[0] = f.P;
    with2[1] = f.V;
    with2[2] = B;
    CHECK_EQ_INT(ecs_query_new(f.w, with2, 3, NULL, 0, &q2), ECS_ERR_OK);
    lua_col[0].c = B;
    lua_col[0].field = 0;
    lua_col[0].write = false;
    CHECK_EQ_INT(ecs_query_run(f.w, q2, lua_col, 1, 0, integrate, &log, NULL),
                 ECS_ERR_LUA_FIELD);
  }
  CHECK_EQ_INT(log.calls, calls_before); /* checked before any call */
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* Capacity within what a need justifies: under 1.5 x max(need, 16). */
static int sized(const ecs_query_stats *st, uint32_t need) {
  uint32_t m = need < 16u ? 16u : need;
  return st->capacity >= need && st->capacity <= m + m / 2u;
}

/*
** Each round pins the current snapshot (an iteration begins), makes a
** change the query must record (a match spawned and destroyed) and counts
** while pinned, then unpins: the copy that replaces the pinned snapshot is
** sized by the need, not by the old capacity (which made it grow 1.5x per
** round, to an allocation failure at about round 47). A change the query
** does not see copies nothing. Then growth while pinned, and several pins
** at once: at most one retired snapshot per live pin, each freed by its
** last unpin.
*/
TEST(Query_pinned_rebuilds_stay_sized_by_need) {
  fixture f;
  ecs_query *q;
  ecs_query_iter it[4];
  ecs_query_stats st;
  ecs_component *with[1];
  ecs_entity x, e0;
  size_t n;
  CHECK(setup(&f));
  with[0] = f.P;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 1, NULL, 0, &q), ECS_ERR_OK);
  ecs_query_get_stats(q, &st);
  CHECK_EQ_INT(st.capacity, 0);
  for (int k = 0; k < 16; k++) CHECK(spawn(&f, (float)k, 0, 0) != ECS_NULL);
  for (int round = 0; round < 1000; round++) {
    CHECK_EQ_INT(ecs_query_iter_begin(f.w, q, &it[0]), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_create(f.w, &x), ECS_ERR_OK);
    CHECK(ecs_destroy(f.w, x));             /* not a match: no copy */
    ecs_query_get_stats(q, &st);
    CHECK_EQ_INT(st.retired, 0);
    CHECK((x = spawn(&f, 0, 0, 0)) != ECS_NULL); /* a match: copied */
    CHECK(ecs_destroy(f.w, x));
    CHECK_EQ_INT(ecs_query_count(f.w, q, &n), ECS_ERR_OK);
    CHECK_EQ_INT(n, 16);
    ecs_query_get_stats(q, &st);
    CHECK(sized(&st, 16));
    CHECK_EQ_INT(st.retired, 1);             /* the pinned one */
    CHECK_EQ_INT(st.pins, 1);
    ecs_query_iter_end(f.w, &it[0]);
    ecs_query_get_stats(q, &st);
    CHECK_EQ_INT(st.retired, 0);             /* freed by its last unpin */
    CHECK_EQ_INT(st.pins, 0);
    if (round % 100 == 0) CHECK_WORLD(f.w);
  }
  /* growth while pinned: the list is sized by its matches (dead records
  ** the managers still hold do not count) */
  CHECK_EQ_INT(ecs_query_iter_begin(f.w, q, &it[0]), ECS_ERR_OK);
  CHECK((e0 = spawn(&f, 0, 0, 0)) != ECS_NULL);
  for (uint32_t k = 17; k < 3000; k++) {
    CHECK(spawn(&f, 0, 0, 0) != ECS_NULL);
    if (k % 7 == 0) {
      CHECK_EQ_INT(ecs_query_count(f.w, q, &n), ECS_ERR_OK);
      CHECK_EQ_INT(n, k + 1);
      ecs_query_get_stats(q, &st);
      CHECK(sized(&st, (uint32_t)n));
      CHECK_EQ_INT(st.retired, 1);
    }
  }
  ecs_query_iter_end(f.w, &it[0]);
  CHECK_WORLD(f.w);
  /* four nested pins, a change and a rebuild under each */
  for (int k = 0; k < 4; k++) {
    CHECK_EQ_INT(ecs_query_iter_begin(f.w, q, &it[k]), ECS_ERR_OK);
    CHECK(spawn(&f, 0, 0, 0) != ECS_NULL);
    CHECK_EQ_INT(ecs_query_count(f.w, q, &n), ECS_ERR_OK);
    ecs_query_get_stats(q, &st);
    CHECK_EQ_INT(st.retired, (uint32_t)k + 1u);
    CHECK_EQ_INT(st.pins, (uint32_t)k + 1u);
    CHECK(sized(&st, (uint32_t)n));
    CHECK(st.bytes < (size_t)(k + 2) * 2u * (size_t)st.capacity *
                         (sizeof(ecs_entity) + 2u * sizeof(uint32_t)) + 4096u);
    CHECK_WORLD(f.w);
  }
  for (int k = 4; k-- > 0;) ecs_query_iter_end(f.w, &it[k]);
  ecs_query_get_stats(q, &st);
  CHECK_EQ_INT(st.retired, 0);
  CHECK_EQ_INT(st.pins, 0);
  /* shrinking: most entities go; the next unpinned rebuild fits the need */
  for (uint32_t k = 0; k < 2990; k++) {
    CHECK_EQ_INT(ecs_create(f.w, &x), ECS_ERR_OK);
    (void)x;
  }
  {
    uint32_t cursor = 0;
    ecs_entity y;
    while (ecs_next_entity(f.w, &cursor, &y))
      if (y != e0) ecs_destroy(f.w, y);
  }
  ecs_world_gc(f.w, SIZE_MAX);
  CHECK_EQ_INT(ecs_query_count(f.w, q, &n), ECS_ERR_OK);
  CHECK_EQ_INT(n, 1);
  ecs_query_get_stats(q, &st);
  CHECK(st.capacity <= 64u); /* shrunk as the matches went: cap / 4 <= 16 */
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* ------------------------------------------------------------------------
** Read-only (":in") columns of native systems
** --------------------------------------------------------------------- */

typedef struct view_log {
  int bad;                    /* views not as documented */
  uint32_t in_place, gathered; /* calls with column 0 in place, gathered */
  ecs_component *P;
} view_log;

/* x += dx * dt through the view's pointers; checks what it is handed. */
static void integrate_checked(ecs_world *w, const ecs_view *v, void *ud) {
  view_log *log = (view_log *)ud;
  const float *x0 = col_f(log->P, 0);
  (void)w;
  if (v->out[0] == NULL || v->out[0] != v->column[0] || v->out[1] != NULL)
    log->bad++;
  if (v->column[0] >= (const void *)x0 &&
      v->column[0] < (const void *)(x0 + ecs_component_size(log->P)))
    log->in_place++;
  else
    log->gathered++;
  for (uint32_t k = 0; k < v->count; k++)
    ((float *)v->out[0])[k] += ((const float *)v->column[1])[k] * (float)v->dt;
}

#ifndef NDEBUG /* the check that catches it exists in debug builds only */
/* Writes its read-only column 1 anyway (a system breaking the contract). */
static void cheat(ecs_world *w, const ecs_view *v, void *ud) {
  float *dx;
  (void)w;
  (void)ud;
  memcpy(&dx, &v->column[1], sizeof dx); /* casts the const away */
  for (uint32_t k = 0; k < v->count; k++) dx[k] = 99.0f;
}
#endif

/* Columns 0 and 1 are both Position.x: adds 1 through each. */
static void twice(ecs_world *w, const ecs_view *v, void *ud) {
  (void)w;
  (void)ud;
  for (uint32_t k = 0; k < v->count; k++) ((float *)v->out[0])[k] += 1.0f;
  for (uint32_t k = 0; k < v->count; k++) ((float *)v->out[1])[k] += 1.0f;
  for (uint32_t k = 0; k < v->count; k++) /* column 2 reads the same */
    if (((const float *)v->column[2])[k] != ((const float *)v->column[0])[k])
      ((float *)v->out[0])[k] = -1.0f;
}

/*
** Churn breaks the runs of a query that holds most of its managers; the
** next run re-orders the managers to follow its list, so it runs in place
** again with the same results; a second run re-orders nothing; another
** query over the same manager stays right (it rebuilds).
*/
TEST(Query_realigns_after_churn) {
  fixture f;
  ecs_query *q, *qp;
  ecs_component *with[2];
  ecs_column_ref cols[2];
  ecs_entity e[600];
  run_log log;
  size_t done, n;
  uint64_t version;
  ecs_query_iter it;
  ecs_entity x;
  CHECK(setup(&f));
  with[0] = f.P;
  with[1] = f.V;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 2, NULL, 0, &q), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_new(f.w, with, 1, NULL, 0, &qp), ECS_ERR_OK);
  for (int k = 0; k < 600; k++) CHECK((e[k] = spawn(&f, (float)k, 0, 1)) != ECS_NULL);
  CHECK_EQ_INT(ecs_query_count(f.w, qp, &n), ECS_ERR_OK);
  for (int k = 0; k < 600; k += 3) {
    ecs_instance i;
    CHECK(rm(f.w, f.V, e[k]));
    CHECK(ecs_component_add(f.w, f.V, e[k], &i, NULL) == ECS_ERR_OK);
    col_f(f.V, 0)[i] = 1.0f;
  }
  cols[0].c = f.P; cols[0].field = 0; cols[0].write = true;
  cols[1].c = f.V; cols[1].field = 0; cols[1].write = false;
  memset(&log, 0, sizeof log);
  log.P = f.P;
  CHECK_EQ_INT(ecs_query_run(f.w, q, cols, 2, 0.5, integrate, &log, &done), ECS_ERR_OK);
  CHECK_EQ_INT(done, 600);
  CHECK_EQ_INT(log.calls, 1); /* re-aligned: one run, in place */
  CHECK_EQ_INT(log.direct, 1);
  for (int k = 0; k < 600; k++) {
    ecs_instance i = ecs_component_lookup(f.w, f.P, e[k]);
    CHECK(fabs((double)col_f(f.P, 0)[i] - (k + 0.5)) < 1e-4);
  }
  CHECK_WORLD(f.w);
  version = ecs_component_version(f.P);
  memset(&log, 0, sizeof log);
  log.P = f.P;
  CHECK_EQ_INT(ecs_query_run(f.w, q, cols, 2, 0.5, integrate, &log, &done), ECS_ERR_OK);
  CHECK_EQ_INT(log.calls, 1);
  CHECK(ecs_component_version(f.P) == version); /* nothing re-ordered */
  CHECK_EQ_INT(ecs_query_count(f.w, qp, &n), ECS_ERR_OK);
  CHECK_EQ_INT(n, 600);
  n = 0;
  CHECK_EQ_INT(ecs_query_iter_begin(f.w, qp, &it), ECS_ERR_OK);
  while (ecs_query_iter_next(f.w, &it, &x)) n++;
  ecs_query_iter_end(f.w, &it);
  CHECK_EQ_INT(n, 600);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** Two worlds with the same values, one fresh (rows contiguous: columns in
** place) and one churned (components removed and re-added: rows gathered).
** Every run gives both the same result and never changes a read-only
** column; a system writing one is caught in debug builds in both layouts.
*/
TEST(Query_run_read_only_columns_do_not_depend_on_layout) {
  fixture f[2];
  ecs_query *q[2];
  ecs_entity e[2][500];
  ecs_column_ref cols[3];
  view_log log[2];
  size_t done;
  for (int wi = 0; wi < 2; wi++) {
    ecs_component *with[2];
    CHECK(setup(&f[wi]));
    with[0] = f[wi].P;
    with[1] = f[wi].V;
    CHECK_EQ_INT(ecs_query_new(f[wi].w, with, 2, NULL, 0, &q[wi]), ECS_ERR_OK);
    for (int k = 0; k < 500; k++) {
      ecs_instance i;
      CHECK((e[wi][k] = spawn(&f[wi], (float)k, 0, 1)) != ECS_NULL);
      i = ecs_component_lookup(f[wi].w, f[wi].V, e[wi][k]);
      col_f(f[wi].V, 0)[i] = (float)(k % 13);
    }
  }
  for (int k = 0; k < 1100; k++) { /* no re-alignment in world 1 */
    ecs_entity x;
    CHECK_EQ_INT(ecs_create(f[1].w, &x), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_component_add(f[1].w, f[1].V, x, NULL, NULL), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_component_add(f[1].w, f[1].P, x, NULL, NULL), ECS_ERR_OK);
    CHECK(rm(f[1].w, f[1].V, x));
    CHECK_EQ_INT(ecs_component_add(f[1].w, f[1].V, x, NULL, NULL), ECS_ERR_OK);
    CHECK(rm(f[1].w, f[1].P, x));
  }
  for (int k = 0; k < 500; k += 3) { /* churn world 1 */
    ecs_instance i;
    float dx = col_f(f[1].V, 0)[ecs_component_lookup(f[1].w, f[1].V, e[1][k])];
    CHECK(rm(f[1].w, f[1].V, e[1][k]));
    CHECK(ecs_component_add(f[1].w, f[1].V, e[1][k], &i, NULL) == ECS_ERR_OK);
    col_f(f[1].V, 0)[i] = dx;
    if (k % 2 == 0) {
      float x = col_f(f[1].P, 0)[ecs_component_lookup(f[1].w, f[1].P, e[1][k])];
      CHECK(rm(f[1].w, f[1].P, e[1][k]));
      CHECK(ecs_component_add(f[1].w, f[1].P, e[1][k], &i, NULL) == ECS_ERR_OK);
      col_f(f[1].P, 0)[i] = x;
    }
  }
  for (int wi = 0; wi < 2; wi++) {
    cols[0].c = f[wi].P; cols[0].field = 0; cols[0].write = true;
    cols[1].c = f[wi].V; cols[1].field = 0; cols[1].write = false;
    memset(&log[wi], 0, sizeof log[wi]);
    log[wi].P = f[wi].P;
    CHECK_EQ_INT(ecs_query_run(f[wi].w, q[wi], cols, 2, 0.5, integrate_checked,
                               &log[wi], &done), ECS_ERR_OK);
    CHECK_EQ_INT(done, 500);
    CHECK_EQ_INT(log[wi].bad, 0);
    /* the same field twice, writable both times, and read a third time */
    cols[1].c = f[wi].P; cols[1].field = 0; cols[1].write = true;
    cols[2].c = f[wi].P; cols[2].field = 0; cols[2].write = false;
    CHECK_EQ_INT(ecs_query_run(f[wi].w, q[wi], cols, 3, 0, twice, NULL, &done),
                 ECS_ERR_OK);
  }
  CHECK(log[0].in_place == 1 && log[0].gathered == 0); /* one run */
  CHECK(log[1].gathered > 0);
  for (int k = 0; k < 500; k++) {
    float x[2], dx[2];
    for (int wi = 0; wi < 2; wi++) {
      x[wi] = col_f(f[wi].P, 0)[ecs_component_lookup(f[wi].w, f[wi].P, e[wi][k])];
      dx[wi] = col_f(f[wi].V, 0)[ecs_component_lookup(f[wi].w, f[wi].V, e[wi][k])];
    }
    CHECK(x[0] == x[1]);
    CHECK(x[0] == (float)k + (float)(k % 13) * 0.5f + 2.0f);
    CHECK(dx[0] == (float)(k % 13) && dx[1] == dx[0]); /* never written */
  }
#ifndef NDEBUG
  /* debug builds catch a write to a read-only column, in both layouts */
  for (int wi = 0; wi < 2; wi++) {
    cols[0].c = f[wi].P; cols[0].field = 0; cols[0].write = true;
    cols[1].c = f[wi].V; cols[1].field = 0; cols[1].write = false;
    CHECK_EQ_INT(ecs_query_run(f[wi].w, q[wi], cols, 2, 0, cheat, NULL, NULL),
                 ECS_ERR_READONLY);
  }
  CHECK(strcmp(ecs_strerror(ECS_ERR_READONLY),
               "a system wrote a read-only column") == 0);
#endif
  for (int wi = 0; wi < 2; wi++) {
    CHECK_WORLD(f[wi].w);
    ecs_world_free(f[wi].w);
    CHECK_EQ_INT(f[wi].a.blocks, 0);
  }
}

static ecs_err compile(fixture *f, ecs_query *q, const char *src,
                       ecs_program **p, char *msg) {
  return ecs_program_compile(f->w, q, src, strlen(src), p, msg, 128);
}

TEST(Program_errors_name_positions) {
  static const struct { const char *src, *msg; ecs_err err; } bad[] = {
    {"", "empty program at position 1", ECS_ERR_EXPRESSION},
    {"Position.z = 1", "unknown field 'Position.z' at position 1", ECS_ERR_UNKNOWN_FIELD},
    {"Nope.x = 1", "component 'Nope' is not among the query's components (Position, Velocity) at position 1", ECS_ERR_UNKNOWN_COMPONENT},
    {"Position.x = 1 +", "expected an expression, got the end at position 17", ECS_ERR_EXPRESSION},
    {"Position.x = foo(1)", "unknown function 'foo' at position 14", ECS_ERR_EXPRESSION},
    {"Position.x = clamp(1, 2)", "function 'clamp' takes 3 argument(s) at position 14", ECS_ERR_EXPRESSION},
    {"Position.x = (1", "expected ')' at position 16", ECS_ERR_EXPRESSION},
    {"Position.x == 1", "expected an expression near '=' at position 13", ECS_ERR_EXPRESSION},
    {"Position.x = 1 Position.y = 2", "expected ';' near 'P' at position 16", ECS_ERR_EXPRESSION},
    {"Position.x = 1.5.", "expected ';' near '.' at position 17", ECS_ERR_EXPRESSION},
    {"Position.x = 2x", "malformed number at position 14", ECS_ERR_EXPRESSION},
    {"Frozen.x = 1", "component 'Frozen' is excluded by the query at position 1", ECS_ERR_EXCLUDED},
  };
  fixture f;
  ecs_query *q;
  ecs_program *p = NULL;
  ecs_component *with[2], *without[1];
  char msg[128];
  CHECK(setup(&f));
  with[0] = f.P;
  with[1] = f.V;
  without[0] = f.Tag;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 2, without, 1, &q), ECS_ERR_OK);
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    if (compile(&f, q, bad[k].src, &p, msg) != bad[k].err ||
        strcmp(msg, bad[k].msg) != 0)
      fprintf(stderr, "source %s: got '%s'\n", bad[k].src, msg);
    CHECK_EQ_INT(compile(&f, q, bad[k].src, &p, msg), bad[k].err);
    CHECK(strcmp(msg, bad[k].msg) == 0);
  }
  /* the source is len bytes: a zero byte inside is an error, not its end */
  CHECK_EQ_INT(ecs_program_compile(f.w, q, "Position.x = 5\0 junk", 20, &p,
                                   msg, sizeof msg), ECS_ERR_EXPRESSION);
  CHECK(strcmp(msg, "zero byte in the expression at position 15") == 0);
  CHECK(p == NULL);
  {
    /* entity (and lua) fields hold no number: NOT_NUMERIC, not a syntax error */
    static const ecs_field_def target_fields[] = {{"who", ECS_ENTITY}};
    ecs_component *T, *with2[2];
    ecs_query *q2;
    CHECK_EQ_INT(ecs_component_new(f.w, "Target", target_fields, 1, &T), ECS_ERR_OK);
    with2[0] = f.P;
    with2[1] = T;
    CHECK_EQ_INT(ecs_query_new(f.w, with2, 2, NULL, 0, &q2), ECS_ERR_OK);
    CHECK_EQ_INT(compile(&f, q2, "Position.x = Target.who", &p, msg), ECS_ERR_NOT_NUMERIC);
    CHECK(strcmp(msg, "field 'Target.who' is not numeric at position 14") == 0);
    /* the first error decides the code */
    CHECK_EQ_INT(compile(&f, q2, "Position.x = 1 +; Target.who = 1", &p, msg),
                 ECS_ERR_EXPRESSION);
  }
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** ecs_query_program keeps the ECS_QUERY_MAX_PROGRAMS most recently used
** texts: a repeated text is the same program, memory stays flat over many
** texts, and programs from ecs_program_compile are neither counted nor
** evicted.
*/
TEST(Program_cache_is_bounded) {
  fixture f;
  ecs_query *q;
  ecs_program *a, *p, *fixed;
  ecs_component *with[1];
  char msg[128], src[64];
  long bytes_full = 0;
  double one = 1.0;
  CHECK(setup(&f));
  with[0] = f.P;
  CHECK(spawn(&f, 0.0f, 0.0f, 0) != ECS_NULL);
  CHECK_EQ_INT(ecs_query_new(f.w, with, 1, NULL, 0, &q), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_program_compile(f.w, q, "Position.y += k", 15, &fixed, msg,
                                   sizeof msg), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_program(f.w, q, "Position.x = 1", 14, &a, msg,
                                 sizeof msg), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_program(f.w, q, "Position.x = 1", 14, &p, msg,
                                 sizeof msg), ECS_ERR_OK);
  CHECK(p == a);
  CHECK_EQ_INT(ecs_query_program_count(q), 1);
  CHECK_EQ_INT(ecs_query_program(f.w, q, "Position.x = ", 13, &p, msg,
                                 sizeof msg), ECS_ERR_EXPRESSION);
  CHECK_EQ_INT(ecs_query_program_count(q), 1);
  for (unsigned k = 0; k < 5000; k++) {
    snprintf(src, sizeof src, "Position.x = %05u", k);
    CHECK_EQ_INT(ecs_query_program(f.w, q, src, strlen(src), &p, msg,
                                   sizeof msg), ECS_ERR_OK);
    if (k < 40) { /* a, used again each time, stays */
      CHECK_EQ_INT(ecs_query_program(f.w, q, "Position.x = 1", 14, &p, msg,
                                     sizeof msg), ECS_ERR_OK);
      CHECK(p == a);
    }
    if (k == 100) bytes_full = f.a.bytes;
    CHECK(ecs_query_program_count(q) <= ECS_QUERY_MAX_PROGRAMS);
  }
  CHECK_EQ_INT(ecs_query_program_count(q), ECS_QUERY_MAX_PROGRAMS);
  CHECK_EQ_INT(f.a.bytes, bytes_full); /* same-sized texts: flat */
  CHECK_EQ_INT(ecs_program_run(f.w, p, NULL, NULL), ECS_ERR_OK);
  CHECK(col_f(f.P, 0)[0] == 4999.0f);
  CHECK_EQ_INT(ecs_program_run(f.w, fixed, &one, NULL), ECS_ERR_OK);
  CHECK(col_f(f.P, 1)[0] == 1.0f);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* Programs agree with the same arithmetic in C, in place and gathered. */
TEST(Program_runs_match_a_reference) {
  fixture f;
  ecs_query *q;
  ecs_program *p;
  ecs_component *with[3];
  ecs_entity e[700];
  char msg[128];
  double params[2];
  size_t done;
  CHECK(setup(&f));
  with[0] = f.P;
  with[1] = f.V;
  with[2] = f.H;
  CHECK_EQ_INT(ecs_query_new(f.w, with, 3, NULL, 0, &q), ECS_ERR_OK);
  for (int k = 0; k < 700; k++) {
    ecs_instance i;
    CHECK((e[k] = spawn(&f, (float)k, (float)-k, 1)) != ECS_NULL);
    CHECK(ecs_component_add(f.w, f.H, e[k], &i, NULL) == ECS_ERR_OK);
    ((int16_t *)ecs_component_column(f.H, 0))[i] = (int16_t)(k * 10);
  }
  for (int k = 0; k < 700; k += 5) { /* scatter Health's rows */
    ecs_instance i;
    int16_t hp = ((int16_t *)ecs_component_column(f.H, 0))
        [ecs_component_lookup(f.w, f.H, e[k])];
    CHECK(rm(f.w, f.H, e[k]));
    CHECK(ecs_component_add(f.w, f.H, e[k], &i, NULL) == ECS_ERR_OK);
    ((int16_t *)ecs_component_column(f.H, 0))[i] = hp;
  }
  CHECK_EQ_INT(compile(&f, q,
    "Position.x += Velocity.dx * dt; Position.y = clamp(Position.y, lo, 0) % 7;"
    "Health.hp = Health.hp + 30000; Health.alive = Health.hp > 32000 - dt",
    &p, msg), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_program_param_count(p), 2);
  CHECK(strcmp(ecs_program_param_name(p, 0), "dt") == 0);
  CHECK(strcmp(ecs_program_param_name(p, 1), "lo") == 0);
  params[0] = 0.25;
  params[1] = -100;
  CHECK_EQ_INT(ecs_program_run(f.w, p, params, &done), ECS_ERR_OK);
  CHECK_EQ_INT(done, 700);
  for (int k = 0; k < 700; k++) {
    ecs_instance ip = ecs_component_lookup(f.w, f.P, e[k]);
    ecs_instance ih = ecs_component_lookup(f.w, f.H, e[k]);
    double y = -k < -100 ? -100.0 : (double)-k;
    int hp = k * 10 + 30000 > 32767 ? 32767 : k * 10 + 30000; /* saturates */
    y = y - floor(y / 7) * 7;
    CHECK(fabs((double)col_f(f.P, 0)[ip] - (k + 0.25)) < 1e-4);
    CHECK(fabs((double)col_f(f.P, 1)[ip] - y) < 1e-4);
    CHECK_EQ_INT(((int16_t *)ecs_component_column(f.H, 0))[ih], hp);
    CHECK_EQ_INT(((uint8_t *)ecs_component_column(f.H, 1))[ih], hp > 32000 - 0.25);
  }
  CHECK_WORLD(f.w);
  ecs_world_free(f.w); /* frees the program with its query */
  CHECK_EQ_INT(f.a.blocks, 0);
}

static void bump(ecs_world *w, const ecs_view *v, void *ud) {
  float *x = (float *)v->out[0];
  (void)w;
  (void)ud;
  for (uint32_t k = 0; k < v->count; k++) x[k] += 1.0f;
}

/* Every allocation of new/refresh/compile/run may fail: clean errors. */
TEST(Query_out_of_memory_at_every_step) {
  for (long fail = 1;; fail++) {
    fixture f;
    ecs_query *q = NULL;
    ecs_program *p = NULL;
    ecs_component *with[2];
    ecs_column_ref cols[1];
    char msg[128];
    ecs_err err;
    size_t n = 0;
    int ok;
    if (!setup(&f)) { ecs_world_free(f.w); continue; }
    for (int k = 0; k < 40; k++) CHECK(spawn(&f, (float)k, 0, 1) != ECS_NULL);
    f.a.calls = 0;      /* fail the fail-th allocation from here on */
    f.a.fail_at = fail;
    with[0] = f.P;
    with[1] = f.V;
    cols[0].c = f.P; cols[0].field = 0; cols[0].write = true;
    ok = (err = ecs_query_new(f.w, with, 2, NULL, 0, &q)) == ECS_ERR_OK &&
         (err = ecs_query_count(f.w, q, &n)) == ECS_ERR_OK &&
         (err = compile(&f, q, "Position.x += 1", &p, msg)) == ECS_ERR_OK &&
         (err = ecs_program_run(f.w, p, NULL, NULL)) == ECS_ERR_OK &&
         (err = ecs_query_run(f.w, q, cols, 1, 0, bump, NULL, NULL)) == ECS_ERR_OK;
    if (!ok) CHECK_EQ_INT(err, ECS_ERR_NOMEM);
    f.a.fail_at = 0;
    CHECK_WORLD(f.w);
    ecs_world_free(f.w);
    CHECK_EQ_INT(f.a.blocks, 0);
    if (ok) {
      CHECK_EQ_INT(n, 40);
      CHECK(fail > 3); /* the sweep did reach the allocations */
      break;
    }
  }
}

static const test_case cases[] = {
  CASE(Query_new_rejects_bad_terms),
  CASE(Query_count_follows_adds_removes_and_destroys),
  CASE(Query_any_terms_follow_every_change),
  CASE(Query_optional_terms_read_zero_where_absent),
  CASE(Query_iteration_pins_a_snapshot),
  CASE(Query_chunks_report_current_rows),
  CASE(Query_run_in_place_and_gathered),
  CASE(Query_realigns_after_churn),
  CASE(Query_pinned_rebuilds_stay_sized_by_need),
  CASE(Query_run_read_only_columns_do_not_depend_on_layout),
  CASE(Program_errors_name_positions),
  CASE(Program_cache_is_bounded),
  CASE(Program_runs_match_a_reference),
  CASE(Query_out_of_memory_at_every_step),
  CASE(Query_iterations_end_at_a_whole_world_load),
};

TEST_MAIN(cases)
