/*
** test_transform_columns.c -- the transform's columns (transform.h,
** ecs_transform_columns): an owned generic component row for row with the
** transform's rows through every row operation (add, remove, destroy, gc,
** the parent-first swap, sort, clear, load, a generation wrap), its
** values equal to the per-entity getters; bulk writes through compiled
** programs and native systems propagated at once and cleaned; read-only
** world positions refused as targets; change stamps; and out of memory at
** every allocation of add, sort and load, which leave the world as it was.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "component.h"
#include "../support/harness.h"
#include "journal.h"
#include "../support/membuf.h"
#include "query.h"
#include "snapshot.h"
#include "transform.h"

#define N 200u

static uint32_t seed = 2463534242u;
static uint32_t rnd(void) {
  seed ^= seed << 13;
  seed ^= seed >> 17;
  seed ^= seed << 5;
  return seed;
}

static ecs_reader reader_of(const unsigned char *p, size_t n) {
  ecs_reader in;
  in.data = p;
  in.size = n;
  in.pos = 0;
  return in;
}

static double col(ecs_component *c, uint32_t f, ecs_instance r) {
  return ((const double *)ecs_component_column(c, f))[r];
}

/*
** Every live entity with a transform: its row in the columns is its row
** in the transform and holds its local (ecs_transform_get_local: a child
** of a destroyed parent was made a root at the death) and its world
** position; then the world's invariants (the transform checks that the
** two managers' rows name the same owners).
*/
static const char *columns_agree(ecs_world *w, ecs_transform *t,
                                 const ecs_entity *e, uint32_t n) {
  ecs_component *c = ecs_transform_columns(t);
  for (uint32_t i = 0; i < n; i++) {
    ecs_trs l;
    double m[16], v[10];
    ecs_instance r = ecs_component_lookup(w, c, e[i]);
    if (!ecs_transform_has(t, e[i])) {
      if (r != ECS_NO_INSTANCE) return "a row without a transform";
      continue;
    }
    if (r == ECS_NO_INSTANCE) return "no row for a transform";
    if (r != ecs_transform_lookup(t, e[i])) return "rows differ";
    if (ecs_transform_get_world(t, e[i], m) != ECS_ERR_OK) return "get_world";
    for (uint32_t k = 0; k < 3; k++)
      if (col(c, 10 + k, r) != m[12 + k]) return "world position differs";
    if (ecs_transform_get_local(t, e[i], &l) != ECS_ERR_OK) return "get_local";
    memcpy(v, &l, sizeof v);
    for (uint32_t k = 0; k < 10; k++)
      if (col(c, k, r) != v[k]) return "local differs";
  }
  return ecs_world_check(w);
}

TEST(Columns_schema_and_read_only_fields) {
  static const char *names[] = {"px", "py", "pz", "qx", "qy", "qz", "qw",
                                "sx", "sy", "sz", "wx", "wy", "wz"};
  ecs_world *w = ecs_world_new(NULL, NULL);
  ecs_transform *t;
  ecs_component *c, *user;
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_transform_new(w, &t), ECS_ERR_OK);
  c = ecs_transform_columns(t);
  CHECK(c != NULL);
  CHECK(strcmp(ecs_component_name(c), "transform") == 0);
  CHECK_EQ_INT(ecs_component_field_count(c), 13);
  for (uint32_t k = 0; k < 13; k++) {
    CHECK(strcmp(ecs_component_field(c, k)->name, names[k]) == 0);
    CHECK_EQ_INT(ecs_component_field(c, k)->type, ECS_F64);
    CHECK_EQ_INT(ecs_component_readonly(c, k), k >= 10);
  }
  CHECK(!ecs_component_readonly(c, 64));
  { /* its rows and schema are the transform's */
    ecs_entity e;
    uint32_t ix;
    bool removed = true;
    char msg[64];
    CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
    ix = ecs_entity_index(e);
    CHECK_EQ_INT(ecs_component_add(w, c, e, NULL, NULL), ECS_ERR_INVALID);
    CHECK_EQ_INT(ecs_component_reserve(w, c, &ix, 1), ECS_ERR_INVALID);
    CHECK_EQ_INT(ecs_transform_add(t, e, NULL), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_component_remove(w, c, e, &removed), ECS_ERR_INVALID);
    CHECK(!removed && ecs_transform_has(t, e));
    CHECK(ecs_destroy(w, e));
    CHECK_EQ_INT(ecs_component_gc(w, c, SIZE_MAX), 0);
    CHECK_EQ_INT(ecs_component_redefine(w, c, NULL, 0, NULL, NULL, NULL, msg,
                                        sizeof msg), ECS_ERR_INVALID);
    CHECK(strcmp(msg, "'transform' belongs to another manager") == 0);
    CHECK_EQ_INT(ecs_transform_gc(t, SIZE_MAX), 1);
  }
  /* not registered: a user component may take the name */
  CHECK(ecs_component_find(w, "transform") == NULL);
  CHECK_EQ_INT(ecs_component_new(w, "transform", NULL, 0, &user), ECS_ERR_OK);
  CHECK(user != c);
  CHECK_WORLD(w);
  ecs_world_free(w);
}

/* Random row operations; after each, rows agree and the world checks. */
TEST(Columns_follow_every_row_operation) {
  ecs_world *w = ecs_world_new(NULL, NULL);
  ecs_transform *t;
  ecs_entity e[N];
  membuf b = {0};
  const char *bad;
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_transform_new(w, &t), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(w, e, N), ECS_ERR_OK);
  for (int step = 0; step < 4000; step++) {
    uint32_t i = rnd() % N, j = rnd() % N;
    switch (rnd() % 12) {
    case 0: case 1: case 2: {
      ecs_trs l = {{rnd() % 7, rnd() % 5, 1}, {0, 0, 0.6, 0.8}, {1, 2, 1}};
      (void)ecs_transform_add(t, e[i], &l);
      break;
    }
    case 3: (void)ecs_transform_remove(t, e[i]); break;
    case 4: case 5:
      (void)ecs_transform_set_parent(t, e[i], rnd() % 4 ? e[j] : ECS_NULL,
                                     rnd() % 2);
      break;
    case 6:
      if (ecs_alive(w, e[i])) {
        CHECK(ecs_destroy(w, e[i]));
        CHECK_EQ_INT(ecs_create(w, &e[i]), ECS_ERR_OK); /* reuses an index */
      }
      break;
    case 7: (void)ecs_transform_gc(t, rnd() % 8); break;
    case 8: CHECK_EQ_INT(ecs_transform_sort(t), ECS_ERR_OK); break;
    case 9: (void)ecs_transform_set_position(t, e[i], 1, 2, 3); break;
    case 10: { /* save and load the whole world: a staged twin swap */
      ecs_writer out = membuf_writer(&b);
      ecs_reader in;
      b.n = 0;
      CHECK_EQ_INT(ecs_world_save(w, &out), ECS_ERR_OK);
      in = reader_of(b.p, b.n);
      CHECK_EQ_INT(ecs_world_load(w, &in), ECS_ERR_OK);
      break;
    }
    default:
      if (rnd() % 50 == 0) {
        const ecs_manager_class *cls;
        (void)ecs_manager_find(w, "transform", &cls);
        cls->clear(w, t);
      }
      break;
    }
    if ((bad = columns_agree(w, t, e, N)) != NULL) {
      fprintf(stderr, "step %d: %s\n", step, bad);
      CHECK(bad == NULL);
    }
  }
  free(b.p);
  ecs_world_free(w);
}

/* A generation wrap purges the row in both (tr_check compares owners). */
TEST(Columns_follow_a_generation_wrap) {
  ecs_world *w = ecs_world_new(NULL, NULL);
  ecs_transform *t;
  ecs_entity e;
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_transform_new(w, &t), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_add(t, e, NULL), ECS_ERR_OK);
  for (int k = 0; k < 300; k++) {
    CHECK(ecs_destroy(w, e));
    CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
    CHECK_WORLD(w);
  }
  CHECK_EQ_INT(ecs_transform_add(t, e, NULL), ECS_ERR_OK);
  CHECK_WORLD(w);
  ecs_world_free(w);
}

/* Ships (Velocity) with children; a program moves the ships. */
typedef struct scene {
  ecs_world *w;
  ecs_transform *t;
  ecs_component *v, *c;
  ecs_query *q, *all;
  ecs_entity ship[20], kid[40];
} scene;

static ecs_err scene_new(scene *s) {
  static const ecs_field_def vdef[] = {{"dx", ECS_F64}};
  ecs_component *terms[2];
  ecs_err err;
  memset(s, 0, sizeof *s);
  if ((s->w = ecs_world_new(NULL, NULL)) == NULL) return ECS_ERR_NOMEM;
  if ((err = ecs_transform_new(s->w, &s->t)) != ECS_ERR_OK ||
      (err = ecs_component_new(s->w, "Velocity", vdef, 1, &s->v)) != ECS_ERR_OK)
    return err;
  s->c = ecs_transform_columns(s->t);
  for (uint32_t i = 0; i < 20; i++) {
    ecs_trs l = {{i, 0, 0}, {0, 0, 0.6, 0.8}, {2, 2, 2}};
    ecs_instance r;
    if ((err = ecs_create(s->w, &s->ship[i])) != ECS_ERR_OK ||
        (err = ecs_transform_add(s->t, s->ship[i], &l)) != ECS_ERR_OK ||
        (err = ecs_component_add(s->w, s->v, s->ship[i], &r, NULL)) != ECS_ERR_OK)
      return err;
    ((double *)ecs_component_column(s->v, 0))[r] = 1.0 + i;
    for (uint32_t k = 0; k < 2; k++) {
      ecs_trs kl = {{0, 1.0 + k, 0}, {0, 0, 0, 1}, {1, 1, 1}};
      ecs_entity *kid = &s->kid[2 * i + k];
      if ((err = ecs_create(s->w, kid)) != ECS_ERR_OK ||
          (err = ecs_transform_add(s->t, *kid, &kl)) != ECS_ERR_OK ||
          (err = ecs_transform_set_parent(s->t, *kid, s->ship[i], false)) != ECS_ERR_OK)
        return err;
    }
  }
  terms[0] = s->v;
  terms[1] = s->c;
  if ((err = ecs_query_new(s->w, terms, 2, NULL, 0, &s->q)) != ECS_ERR_OK)
    return err;
  return ecs_query_new(s->w, &s->c, 1, NULL, 0, &s->all);
}

static ecs_err run(scene *s, const char *src, double dt) {
  ecs_program *p;
  char msg[128];
  ecs_err err = ecs_program_compile(s->w, s->q, src, strlen(src), &p, msg,
                                    sizeof msg);
  return err != ECS_ERR_OK ? err : ecs_program_run(s->w, p, &dt, NULL);
}

TEST(Programs_write_locals_and_world_matrices_follow) {
  scene a, b;
  CHECK_EQ_INT(scene_new(&a), ECS_ERR_OK);
  CHECK_EQ_INT(scene_new(&b), ECS_ERR_OK);
  CHECK_EQ_INT(run(&a, "transform.px += Velocity.dx * dt; transform.sy = 3",
                   0.5), ECS_ERR_OK);
  for (uint32_t i = 0; i < 20; i++) { /* the per-entity path, same values */
    ecs_trs l;
    CHECK_EQ_INT(ecs_transform_get_local(b.t, b.ship[i], &l), ECS_ERR_OK);
    l.position[0] += (1.0 + i) * 0.5;
    l.scale[1] = 3;
    CHECK_EQ_INT(ecs_transform_set_local(b.t, b.ship[i], &l), ECS_ERR_OK);
  }
  for (uint32_t i = 0; i < 40; i++) {
    double ma[16], mb[16];
    CHECK_EQ_INT(ecs_transform_get_world(a.t, a.kid[i], ma), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_transform_get_world(b.t, b.kid[i], mb), ECS_ERR_OK);
    CHECK(memcmp(ma, mb, sizeof ma) == 0);
  }
  CHECK_WORLD(a.w);
  /* the world position is no target */
  CHECK_EQ_INT(run(&a, "transform.wx = 1", 0), ECS_ERR_READONLY_FIELD);
  {
    ecs_column_ref ref = {a.c, 11, true};
    CHECK_EQ_INT(ecs_query_run(a.w, a.all, &ref, 1, 0, NULL, NULL, NULL),
                 ECS_ERR_READONLY_FIELD);
  }
  ecs_world_free(a.w);
  ecs_world_free(b.w);
}

TEST(Bulk_writes_are_cleaned) {
  scene s;
  ecs_trs l;
  CHECK_EQ_INT(scene_new(&s), ECS_ERR_OK);
  CHECK_EQ_INT(run(&s, "transform.px = 0 / 0; transform.py = 1 / 0; "
                       "transform.qx = 0; transform.qy = 0; transform.qz = 0;"
                       " transform.qw = 0; transform.sz = -1 / 0", 0),
               ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_get_local(s.t, s.ship[3], &l), ECS_ERR_OK);
  CHECK(l.position[0] == 0 && l.position[1] == 1.7976931348623157e308);
  CHECK(l.rotation[0] == 0 && l.rotation[3] == 1);
  CHECK(l.scale[2] == -1.7976931348623157e308);
  CHECK_EQ_INT(run(&s, "transform.qx = 3; transform.qw = 4", 0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_get_local(s.t, s.ship[3], &l), ECS_ERR_OK);
  CHECK(fabs(l.rotation[0] - 0.6) < 1e-15 && fabs(l.rotation[3] - 0.8) < 1e-15);
  CHECK_WORLD(s.w);
  ecs_world_free(s.w);
}

/* Change stamps: a changes query sees bulk writes, setters, propagation. */
TEST(Changes_of_the_columns) {
  scene s;
  size_t n;
  ecs_query_iter it;
  ecs_entity e;
  CHECK_EQ_INT(scene_new(&s), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_track_changes(s.w, s.all, &s.c, 1, NULL, 0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_iter_begin(s.w, s.all, &it), ECS_ERR_OK);
  for (n = 0; ecs_query_iter_next(s.w, &it, &e);) n++;
  ecs_query_iter_end(s.w, &it);
  CHECK_EQ_INT(n, 60); /* first pass: everything */
  ecs_query_complete(s.w, s.all);
  CHECK_EQ_INT(ecs_transform_set_position(s.t, s.ship[0], 5, 5, 5), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_iter_begin(s.w, s.all, &it), ECS_ERR_OK);
  for (n = 0; ecs_query_iter_next(s.w, &it, &e);) n++;
  ecs_query_iter_end(s.w, &it);
  CHECK_EQ_INT(n, 3); /* the ship and its two children (their world moved) */
  ecs_query_complete(s.w, s.all);
  CHECK_EQ_INT(run(&s, "transform.pz += 1", 0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_iter_begin(s.w, s.all, &it), ECS_ERR_OK);
  for (n = 0; ecs_query_iter_next(s.w, &it, &e);) n++;
  ecs_query_iter_end(s.w, &it);
  CHECK_EQ_INT(n, 60);
  ecs_world_free(s.w);
}

/*
** The journal keeps the transform whole (its save at the mark): a bulk
** write to the columns captures no component row (such rows, put back by
** undo before the transform's own undo, would not follow its rows), and
** undo brings locals and world positions back exactly.
*/
TEST(Journal_keeps_the_transform_whole) {
  scene s;
  ecs_journal *j;
  ecs_trs before, after;
  double m0[16], m1[16];
  CHECK_EQ_INT(scene_new(&s), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_get_local(s.t, s.ship[4], &before), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_get_world(s.t, s.kid[9], m0), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_journal_open(s.w, NULL, &j, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(run(&s, "transform.px += Velocity.dx * dt; transform.qz = 1", 1),
               ECS_ERR_OK);
  CHECK_EQ_INT(ecs_journal_pending(j), 0);
  CHECK_EQ_INT(ecs_journal_undo(s.w, j), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_get_local(s.t, s.ship[4], &after), ECS_ERR_OK);
  CHECK(memcmp(&before, &after, sizeof before) == 0);
  CHECK_EQ_INT(ecs_transform_get_world(s.t, s.kid[9], m1), ECS_ERR_OK);
  CHECK(memcmp(m0, m1, sizeof m0) == 0);
  CHECK_WORLD(s.w);
  ecs_journal_close(s.w, j);
  ecs_world_free(s.w);
}

/* Out of memory at every allocation of add, sort and load: all or nothing. */
TEST(Out_of_memory_leaves_rows_aligned) {
  for (int what = 0; what < 3; what++) {
    for (long fail = 1;; fail++) {
      test_alloc ta = {0};
      ecs_world *w = ecs_world_new(test_allocf, &ta);
      ecs_transform *t;
      ecs_entity e[40];
      membuf b = {0};
      ecs_err err;
      CHECK(w != NULL);
      CHECK_EQ_INT(ecs_transform_new(w, &t), ECS_ERR_OK);
      CHECK_EQ_INT(ecs_create_n(w, e, 40), ECS_ERR_OK);
      for (uint32_t i = 0; i < 20; i++) {
        CHECK_EQ_INT(ecs_transform_add(t, e[i], NULL), ECS_ERR_OK);
        if (i > 0)
          CHECK_EQ_INT(ecs_transform_set_parent(t, e[i], e[(i * 7) % i], false),
                       ECS_ERR_OK);
      }
      if (what == 2) {
        ecs_writer out = membuf_writer(&b);
        CHECK_EQ_INT(ecs_world_save(w, &out), ECS_ERR_OK);
      }
      ta.fail_at = ta.calls + fail;
      if (what == 0) {
        err = ECS_ERR_OK;
        for (uint32_t i = 20; i < 40 && err == ECS_ERR_OK; i++)
          err = ecs_transform_add(t, e[i], NULL);
      } else if (what == 1) {
        err = ecs_transform_sort(t);
      } else {
        ecs_reader in = reader_of(b.p, b.n);
        err = ecs_world_load(w, &in);
      }
      ta.fail_at = 0;
      CHECK(err == ECS_ERR_OK || err == ECS_ERR_NOMEM);
      CHECK_WORLD(w);
      free(b.p);
      ecs_world_free(w);
      CHECK_EQ_INT(ta.blocks, 0);
      if (err == ECS_ERR_OK) break;
    }
  }
}

static const test_case cases[] = {
  {"Columns_schema_and_read_only_fields", Columns_schema_and_read_only_fields},
  {"Columns_follow_every_row_operation", Columns_follow_every_row_operation},
  {"Columns_follow_a_generation_wrap", Columns_follow_a_generation_wrap},
  {"Programs_write_locals_and_world_matrices_follow",
   Programs_write_locals_and_world_matrices_follow},
  {"Bulk_writes_are_cleaned", Bulk_writes_are_cleaned},
  {"Changes_of_the_columns", Changes_of_the_columns},
  {"Journal_keeps_the_transform_whole", Journal_keeps_the_transform_whole},
  {"Out_of_memory_leaves_rows_aligned", Out_of_memory_leaves_rows_aligned},
};

TEST_MAIN(cases)
