/*
** test_migrate.c -- redefining a live component (component.h,
** ecs_component_redefine) on the core directly: values kept, moved,
** converted and zeroed; lua references of dropped fields on the drop list;
** native systems' columns mapped and expression systems checked against
** the new schema (refusals change nothing); and out of memory at every
** allocation of a redefinition, which fails whole.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "component.h"
#include "../support/harness.h"
#include "../support/membuf.h"
#include "query.h"
#include "snapshot.h"
#include "system.h"

#define N 300u

static void snap(const ecs_world *w, membuf *b) {
  ecs_writer out = membuf_writer(b);
  b->n = 0;
  if (ecs_world_save(w, &out) != ECS_ERR_OK) abort();
}

static bool same_snap(const ecs_world *w, const membuf *b) {
  membuf now = {0};
  bool same;
  snap(w, &now);
  same = now.n == b->n && memcmp(now.p, b->p, b->n) == 0;
  free(now.p);
  return same;
}

/* P { x:f64, y:f32, n:i32, ref:lua, gone:f64 } over N entities, every
** third destroyed (dead records the gc has not reclaimed). */
typedef struct fixture {
  ecs_world *w;
  ecs_component *p;
  ecs_entity e[N];
  ecs_query *q;
} fixture;

static const ecs_field_def old_fields[] = {
    {"x", ECS_F64}, {"y", ECS_F32}, {"n", ECS_I32}, {"ref", ECS_LUA},
    {"gone", ECS_F64}};

static ecs_err build(fixture *f, ecs_alloc_fn alloc, void *ud) {
  ecs_err err;
  memset(f, 0, sizeof *f);
  if ((f->w = ecs_world_new(alloc, ud)) == NULL) return ECS_ERR_NOMEM;
  if ((err = ecs_component_new(f->w, "P", old_fields, 5, &f->p)) != ECS_ERR_OK)
    return err;
  for (uint32_t i = 0; i < N; i++) {
    ecs_instance r;
    if ((err = ecs_create(f->w, &f->e[i])) != ECS_ERR_OK) return err;
    if ((err = ecs_component_add(f->w, f->p, f->e[i], &r, NULL)) != ECS_ERR_OK)
      return err;
    ((double *)ecs_component_column(f->p, 0))[r] = i + 0.5;
    ((float *)ecs_component_column(f->p, 1))[r] = (float)i * 2.0f;
    ((int32_t *)ecs_component_column(f->p, 2))[r] = (int32_t)i;
    ((uint32_t *)ecs_component_column(f->p, 3))[r] = i % 4 == 0 ? 0 : 1000 + i;
    ((double *)ecs_component_column(f->p, 4))[r] = -1.0;
  }
  for (uint32_t i = 0; i < N; i += 3) (void)ecs_destroy(f->w, f->e[i]);
  return ecs_query_new(f->w, &f->p, 1, NULL, 0, &f->q);
}

/* The host's conversion: n (i32) becomes f64 n * 10 (a stand-in for the
** binding's checked store), read from the old column by row. */
typedef struct conv {
  ecs_component *p;
  int32_t old_n[N + 64];
  uint32_t calls;
} conv;

static ecs_scalar convert(void *ud, uint32_t k, uint32_t i) {
  conv *c = (conv *)ud;
  ecs_scalar v;
  (void)k;
  c->calls++;
  v.f = c->old_n[i] * 10.0;
  return v;
}

static void read_old_n(conv *c, ecs_component *p) {
  memset(c, 0, sizeof *c);
  c->p = p;
  for (uint32_t i = 0; i < ecs_component_size(p); i++)
    c->old_n[i] = ((const int32_t *)ecs_component_column(p, 2))[i];
}

/* new: { z:i32 (new), xx:f64 <- x, n:f64 <- n (converted), ref:lua, y:f32 } */
static const ecs_field_def new_fields[] = {
    {"z", ECS_I32}, {"xx", ECS_F64}, {"n", ECS_F64}, {"ref", ECS_LUA},
    {"y", ECS_F32}};
static const uint32_t new_from[] = {ECS_NO_FIELD, 0, 2, 3, 1};

TEST(Migrate_keeps_moves_converts_and_zeroes) {
  fixture f;
  conv c;
  char msg[200];
  size_t slots;
  uint32_t live = 0;
  CHECK_EQ_INT(build(&f, NULL, NULL), ECS_ERR_OK);
  read_old_n(&c, f.p);
  slots = ecs_dropped_refs(f.w);
  CHECK_EQ_INT(ecs_component_redefine(f.w, f.p, new_fields, 5, new_from,
                                      convert, &c, msg, sizeof msg),
               ECS_ERR_OK);
  CHECK_WORLD(f.w);
  CHECK(ecs_component_find(f.w, "P") == f.p);
  CHECK_EQ_INT(ecs_component_field_count(f.p), 5);
  CHECK(strcmp(ecs_component_field(f.p, 1)->name, "xx") == 0);
  CHECK_EQ_INT(ecs_component_field_index(f.p, "gone", 4), -1);
  for (uint32_t i = 0; i < N; i++) {
    ecs_instance r = ecs_component_lookup(f.w, f.p, f.e[i]);
    if (i % 3 == 0) {
      CHECK(r == ECS_NO_INSTANCE);
      continue;
    }
    live++;
    CHECK(r != ECS_NO_INSTANCE);
    CHECK_EQ_INT(((const int32_t *)ecs_component_column(f.p, 0))[r], 0);
    CHECK(((const double *)ecs_component_column(f.p, 1))[r] == i + 0.5);
    CHECK(((const double *)ecs_component_column(f.p, 2))[r] == i * 10.0);
    CHECK_EQ_INT(((const uint32_t *)ecs_component_column(f.p, 3))[r],
                 i % 4 == 0 ? 0 : 1000 + i);
    CHECK(((const float *)ecs_component_column(f.p, 4))[r] == (float)i * 2.0f);
  }
  CHECK_EQ_INT(c.calls, live); /* the live rows only */
  CHECK_EQ_INT(ecs_component_count(f.w, f.p), live);
  /* the lua field stayed lua: no reference was let go */
  CHECK_EQ_INT(ecs_dropped_refs(f.w), slots);
  /* the query sees the new layout */
  {
    size_t n = 0;
    ecs_program *prog;
    CHECK_EQ_INT(ecs_query_program(f.w, f.q, "P.z = P.xx + P.n", 16, &prog,
                                   msg, sizeof msg),
                 ECS_ERR_OK);
    CHECK_EQ_INT(ecs_program_run(f.w, prog, NULL, &n), ECS_ERR_OK);
    CHECK_EQ_INT(n, live);
    for (uint32_t i = 1; i < N; i += 3) {
      ecs_instance r = ecs_component_lookup(f.w, f.p, f.e[i]);
      CHECK_EQ_INT(((const int32_t *)ecs_component_column(f.p, 0))[r],
                   (int32_t)(i + 0.5 + i * 10.0));
    }
  }
  /* new instances take the new layout, gc still runs */
  {
    ecs_entity e;
    ecs_instance r;
    CHECK_EQ_INT(ecs_create(f.w, &e), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_component_add(f.w, f.p, e, &r, NULL), ECS_ERR_OK);
    CHECK(((const double *)ecs_component_column(f.p, 1))[r] == 0.0);
    (void)ecs_component_gc(f.w, f.p, SIZE_MAX);
    CHECK_WORLD(f.w);
  }
  ecs_world_free(f.w);
}

/* Dropping a lua field (or changing its type) lets every non-zero
** reference go to the drop list, dead records' included. */
TEST(Migrate_drops_the_references_of_lua_fields_it_drops) {
  fixture f;
  static const ecs_field_def fields[] = {{"x", ECS_F64}};
  static const uint32_t from[] = {0};
  size_t before, held = 0;
  uint32_t buf[N];
  CHECK_EQ_INT(build(&f, NULL, NULL), ECS_ERR_OK);
  for (uint32_t i = 0; i < ecs_component_size(f.p); i++)
    held += ((const uint32_t *)ecs_component_column(f.p, 3))[i] != 0;
  before = ecs_dropped_refs(f.w);
  CHECK_EQ_INT(ecs_component_redefine(f.w, f.p, fields, 1, from, NULL, NULL,
                                      NULL, 0),
               ECS_ERR_OK);
  CHECK_WORLD(f.w);
  CHECK_EQ_INT(ecs_dropped_refs(f.w), before + held);
  CHECK_EQ_INT(ecs_drain_refs(f.w, buf, N), before + held);
  ecs_world_free(f.w);
}

static void add_one(ecs_world *w, const ecs_view *v, void *ud) {
  (void)w;
  (void)ud;
  for (uint32_t i = 0; i < v->count; i++) ((double *)v->out[0])[i] += 1.0;
}

/* A native system's columns follow their field to its new place; a
** system that names a dropped field, or an expression that does, refuses
** the redefinition, which then changes nothing. */
TEST(Migrate_maps_native_columns_and_checks_expressions) {
  fixture f;
  conv c;
  membuf before = {0};
  char msg[200];
  ecs_column_ref col = {NULL, 0, true};
  ecs_system_desc nd, ed;
  ecs_system *s;
  CHECK_EQ_INT(build(&f, NULL, NULL), ECS_ERR_OK);
  col.c = f.p;
  memset(&nd, 0, sizeof nd);
  nd.name = "native";
  nd.kind = ECS_SYSTEM_NATIVE;
  nd.query = f.q;
  nd.fn = add_one;
  nd.cols = &col;
  nd.ncols = 1;
  CHECK_EQ_INT(ecs_system_add(f.w, &nd, &s, msg, sizeof msg), ECS_ERR_OK);
  memset(&ed, 0, sizeof ed);
  ed.name = "expr";
  ed.kind = ECS_SYSTEM_EXPR;
  ed.query = f.q;
  ed.expr = "P.gone = P.x";
  ed.expr_len = strlen(ed.expr);
  CHECK_EQ_INT(ecs_system_add(f.w, &ed, &s, msg, sizeof msg), ECS_ERR_OK);
  snap(f.w, &before);
  /* the expression names "gone", which new_fields drop */
  read_old_n(&c, f.p);
  CHECK_EQ_INT(ecs_component_redefine(f.w, f.p, new_fields, 5, new_from,
                                      convert, &c, msg, sizeof msg),
               ECS_ERR_UNKNOWN_FIELD);
  CHECK(strstr(msg, "system 'expr'") != NULL);
  CHECK(same_snap(f.w, &before));
  CHECK_EQ_INT(ecs_component_field_count(f.p), 5);
  CHECK_WORLD(f.w);
  CHECK_EQ_INT(ecs_world_update(f.w, 1.0, NULL, NULL), ECS_ERR_OK);
  CHECK(ecs_system_remove(f.w, "expr"));
  /* a native system reading a dropped field: refused */
  {
    static const ecs_field_def fields[] = {{"y", ECS_F32}};
    static const uint32_t from[] = {1};
    CHECK_EQ_INT(ecs_component_redefine(f.w, f.p, fields, 1, from, NULL, NULL,
                                        msg, sizeof msg),
                 ECS_ERR_UNKNOWN_FIELD);
    CHECK(strstr(msg, "system 'native'") != NULL);
  }
  /* x moves to field 1 (xx): the native system follows it */
  snap(f.w, &before);
  read_old_n(&c, f.p);
  CHECK_EQ_INT(ecs_component_redefine(f.w, f.p, new_fields, 5, new_from,
                                      convert, &c, msg, sizeof msg),
               ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_update(f.w, 1.0, NULL, NULL), ECS_ERR_OK);
  for (uint32_t i = 1; i < N; i += 3) {
    ecs_instance r = ecs_component_lookup(f.w, f.p, f.e[i]);
    CHECK(((const double *)ecs_component_column(f.p, 1))[r] == i + 2.5);
  }
  /* bad from[]: out of range, repeated, a type change without convert */
  {
    static const ecs_field_def two[] = {{"a", ECS_F64}, {"b", ECS_F64}};
    static const uint32_t range[] = {9, ECS_NO_FIELD}, twice[] = {1, 1},
                          noconv[] = {1, ECS_NO_FIELD};
    static const ecs_field_def i32[] = {{"a", ECS_I32}, {"b", ECS_F64}};
    CHECK_EQ_INT(ecs_component_redefine(f.w, f.p, two, 2, range, NULL, NULL,
                                        NULL, 0), ECS_ERR_INVALID);
    CHECK_EQ_INT(ecs_component_redefine(f.w, f.p, two, 2, twice, NULL, NULL,
                                        NULL, 0), ECS_ERR_INVALID);
    CHECK_EQ_INT(ecs_component_redefine(f.w, f.p, i32, 2, noconv, NULL, NULL,
                                        NULL, 0), ECS_ERR_INVALID);
    CHECK_EQ_INT(ecs_component_redefine(f.w, f.p, two, 2, NULL, NULL, NULL,
                                        NULL, 0), ECS_ERR_INVALID);
  }
  CHECK_WORLD(f.w);
  free(before.p);
  ecs_world_free(f.w);
}

/* Every allocation of a redefinition fails in turn: the call fails whole
** (the snapshot byte for byte as before), then succeeds. */
TEST(Migrate_out_of_memory_fails_whole) {
  for (long n = 1; n < 200; n++) {
    test_alloc ta = {0, 0, 0, 0, 1};
    fixture f;
    conv c;
    membuf before = {0};
    ecs_system_desc ed;
    ecs_system *s;
    char msg[200];
    ecs_err err;
    bool failed = false;
    CHECK_EQ_INT(build(&f, test_allocf, &ta), ECS_ERR_OK);
    memset(&ed, 0, sizeof ed);
    ed.name = "expr";
    ed.kind = ECS_SYSTEM_EXPR;
    ed.query = f.q;
    ed.expr = "P.x = P.x + 1";
    ed.expr_len = strlen(ed.expr);
    CHECK_EQ_INT(ecs_system_add(f.w, &ed, &s, msg, sizeof msg), ECS_ERR_OK);
    {
      static const ecs_field_def fields[] = {
          {"x", ECS_F64}, {"n", ECS_F64}, {"w", ECS_LUA}};
      static const uint32_t from[] = {0, 2, ECS_NO_FIELD};
      snap(f.w, &before);
      read_old_n(&c, f.p);
      ta.fail_at = ta.calls + n;
      err = ecs_component_redefine(f.w, f.p, fields, 3, from, convert, &c,
                                   msg, sizeof msg);
      ta.fail_at = 0;
      CHECK_WORLD(f.w);
      if (err != ECS_ERR_OK) {
        failed = true;
        CHECK_EQ_INT(err, ECS_ERR_NOMEM);
        CHECK(same_snap(f.w, &before));
        CHECK_EQ_INT(ecs_component_field_count(f.p), 5);
        CHECK_EQ_INT(ecs_component_redefine(f.w, f.p, fields, 3, from, convert,
                                            &c, msg, sizeof msg),
                     ECS_ERR_OK);
      }
      CHECK_EQ_INT(ecs_component_field_count(f.p), 3);
      CHECK_EQ_INT(ecs_world_update(f.w, 1.0, NULL, NULL), ECS_ERR_OK);
    }
    ecs_world_free(f.w);
    CHECK_EQ_INT(ta.blocks, 0);
    free(before.p);
    if (!failed) {
      CHECK(n > 3);
      break;
    }
  }
}

static const test_case cases[] = {
    CASE(Migrate_keeps_moves_converts_and_zeroes),
    CASE(Migrate_drops_the_references_of_lua_fields_it_drops),
    CASE(Migrate_maps_native_columns_and_checks_expressions),
    CASE(Migrate_out_of_memory_fails_whole),
};

TEST_MAIN(cases)
