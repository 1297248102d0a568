/*
** test_change.c -- change ticks (change.c) through the core alone: the
** stamps follow rows through swap-removes, re-alignment and loads; native
** runs and programs stamp what they write and complete their passes; the
** clock's renumbering keeps every answer; the terms' errors and memory.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "../support/membuf.h"
#include "ecs.h"
#include "ecs_private.h"
#include "component.h"
#include "query.h"
#include "snapshot.h"

static const ecs_field_def pos_fields[] = {{"x", ECS_F32}, {"y", ECS_F32}};
static const ecs_field_def vel_fields[] = {{"dx", ECS_F32}};

typedef struct fixture {
  test_alloc a;
  ecs_world *w;
  ecs_component *P, *V;
  ecs_entity e[64];
} fixture;

/* n entities, each with P (x = index) and, for even k, V. */
static int setup(fixture *f, int n) {
  memset(f, 0, sizeof *f);
  f->w = ecs_world_new(test_allocf, &f->a);
  if (f->w == NULL ||
      ecs_component_new(f->w, "P", pos_fields, 2, &f->P) != ECS_ERR_OK ||
      ecs_component_new(f->w, "V", vel_fields, 1, &f->V) != ECS_ERR_OK)
    return 0;
  for (int k = 0; k < n; k++) {
    ecs_instance i;
    if (ecs_create(f->w, &f->e[k]) != ECS_ERR_OK ||
        ecs_component_add(f->w, f->P, f->e[k], &i, NULL) != ECS_ERR_OK)
      return 0;
    ((float *)ecs_component_column(f->P, 0))[i] = (float)k;
    if (k % 2 == 0 &&
        ecs_component_add(f->w, f->V, f->e[k], NULL, NULL) != ECS_ERR_OK)
      return 0;
  }
  return 1;
}

/* A query over with[0..n) whose changed term is ch (added: ad), or NULL. */
static ecs_query *tracked(fixture *f, ecs_component *const *with, uint32_t n,
                          ecs_component *ch, ecs_component *ad) {
  ecs_query *q;
  if (ecs_query_new(f->w, with, n, NULL, 0, &q) != ECS_ERR_OK) return NULL;
  if (ecs_query_track_changes(f->w, q, &ch, ch != NULL, &ad, ad != NULL) !=
      ECS_ERR_OK) {
    ecs_query_free(f->w, q);
    return NULL;
  }
  return q;
}

/*
** One pass of q with an iterator: a bit per fixture entity visited (bit
** k for f->e[k]), completed at the end. ~0 on error.
*/
static uint64_t pass(fixture *f, ecs_query *q) {
  ecs_query_iter it;
  ecs_entity e;
  uint64_t seen = 0;
  if (ecs_query_iter_begin(f->w, q, &it) != ECS_ERR_OK) return ~(uint64_t)0;
  while (ecs_query_iter_next(f->w, &it, &e))
    for (int k = 0; k < 64; k++)
      if (f->e[k] == e) seen |= (uint64_t)1 << k;
  ecs_query_iter_end(f->w, &it);
  ecs_query_complete(f->w, q);
  return seen;
}

static void touch(fixture *f, ecs_component *c, int k) {
  ecs_component_write_end(f->w, c, &(ecs_instance){ecs_component_lookup(f->w, c, f->e[k])}, 0, 1);
}

#define BIT(k) ((uint64_t)1 << (k))

TEST(Change_terms_first_pass_all_then_what_was_written) {
  fixture f;
  ecs_query *q;
  size_t n;
  CHECK(setup(&f, 8));
  CHECK((q = tracked(&f, &f.P, 1, f.P, NULL)) != NULL);
  CHECK(ecs_query_tracks_changes(q));
  CHECK_EQ_INT(ecs_query_count(f.w, q, &n), ECS_ERR_OK);
  CHECK_EQ_INT(n, 8);
  CHECK(pass(&f, q) == 0xFF);
  CHECK(pass(&f, q) == 0);
  touch(&f, f.P, 3);
  touch(&f, f.P, 6);
  touch(&f, f.V, 4); /* another manager: not P's change */
  CHECK_EQ_INT(ecs_query_count(f.w, q, &n), ECS_ERR_OK);
  CHECK_EQ_INT(n, 2);
  CHECK(pass(&f, q) == (BIT(3) | BIT(6)));
  /* a pass that is not completed leaves the mark where it was */
  touch(&f, f.P, 1);
  {
    ecs_query_iter it;
    ecs_entity e;
    CHECK_EQ_INT(ecs_query_iter_begin(f.w, q, &it), ECS_ERR_OK);
    CHECK(ecs_query_iter_next(f.w, &it, &e));
    CHECK(e == f.e[1]);
    ecs_query_iter_end(f.w, &it);
  }
  CHECK(pass(&f, q) == BIT(1));
  CHECK(ecs_world_check(f.w) == NULL);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(Change_stamps_follow_swap_removes_and_new_instances) {
  fixture f;
  ecs_query *q, *qa;
  ecs_component *with[2];
  CHECK(setup(&f, 8));
  with[0] = f.P;
  with[1] = f.V;
  CHECK((q = tracked(&f, &f.P, 1, f.P, NULL)) != NULL);
  CHECK((qa = tracked(&f, with, 2, NULL, f.V)) != NULL);
  CHECK(pass(&f, q) == 0xFF);
  CHECK(pass(&f, qa) == 0x55);
  touch(&f, f.P, 7); /* the last row */
  {
    bool done;
    CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[0], &done), ECS_ERR_OK);
    CHECK(done); /* e[7] moved into row 0 with its stamp */
  }
  CHECK(pass(&f, q) == BIT(7));
  /* a new instance is changed and added; a reused one too */
  CHECK_EQ_INT(ecs_component_add(f.w, f.V, f.e[1], NULL, NULL), ECS_ERR_OK);
  CHECK(pass(&f, qa) == BIT(1));
  CHECK(pass(&f, qa) == 0);
  CHECK(ecs_destroy(f.w, f.e[2]));
  CHECK_EQ_INT(ecs_create(f.w, &f.e[2]), ECS_ERR_OK); /* may reuse index */
  CHECK_EQ_INT(ecs_component_add(f.w, f.P, f.e[2], NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_add(f.w, f.V, f.e[2], NULL, NULL), ECS_ERR_OK);
  CHECK(pass(&f, qa) == BIT(2));
  CHECK(pass(&f, q) == BIT(2)); /* the new P; V's add is not P's change */
  CHECK(ecs_world_check(f.w) == NULL);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(Change_stamps_follow_realignment) {
  fixture f;
  ecs_query *q;
  ecs_entity order[8];
  CHECK(setup(&f, 8));
  CHECK((q = tracked(&f, &f.P, 1, f.P, NULL)) != NULL);
  CHECK(pass(&f, q) == 0xFF);
  touch(&f, f.P, 1);
  touch(&f, f.P, 2);
  for (int k = 0; k < 8; k++) order[k] = f.e[7 - k]; /* reversed */
  CHECK(ecsi_component_reorder(f.w, f.P, order, 8, NULL));
  CHECK_EQ_INT(ecs_component_lookup(f.w, f.P, f.e[7]), 0);
  CHECK(pass(&f, q) == (BIT(1) | BIT(2)));
  /* out of memory: the reorder is given up, nothing moved */
  f.a.fail_at = f.a.calls + 3; /* dest, block, then the stamps */
  CHECK(!ecsi_component_reorder(f.w, f.P, f.e, 8, NULL));
  f.a.fail_at = 0;
  CHECK_EQ_INT(ecs_component_lookup(f.w, f.P, f.e[7]), 0);
  touch(&f, f.P, 4);
  CHECK(pass(&f, q) == BIT(4));
  CHECK(ecs_world_check(f.w) == NULL);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** A load brings the clock, the cursors and the stamps a query could still
** tell from 0 (cursors.c; change.c, "Stamps saved"): a pass right after it
** reports what the saved world's next pass would have, whether the rows
** stayed (a rollback loads in place) or not; a query made after a load in
** another world, with the saved one's creation number and terms, goes on
** from its cursor, and one with other terms starts fresh.
*/
TEST(Change_load_brings_cursors_and_stamps) {
  fixture f, g;
  ecs_query *q, *qa, *g1, *g2, *g3;
  membuf b;
  ecs_writer out;
  ecs_reader in;
  CHECK(setup(&f, 6));
  memset(&b, 0, sizeof b);
  out = membuf_writer(&b);
  CHECK((q = tracked(&f, &f.P, 1, f.P, NULL)) != NULL);
  CHECK((qa = tracked(&f, &f.P, 1, NULL, f.P)) != NULL);
  CHECK(pass(&f, q) == 0x3F);
  CHECK(pass(&f, qa) == 0x3F);
  touch(&f, f.P, 1);
  touch(&f, f.P, 2);
  CHECK_EQ_INT(ecs_world_save(f.w, &out), ECS_ERR_OK);
  CHECK(pass(&f, q) == (BIT(1) | BIT(2)));
  CHECK(pass(&f, q) == 0);
  /* a rollback over the same world (same owners, same rows) */
  in.data = b.p;
  in.size = b.n;
  in.pos = 0;
  CHECK_EQ_INT(ecs_world_load(f.w, &in), ECS_ERR_OK);
  CHECK(pass(&f, q) == (BIT(1) | BIT(2)));
  CHECK(pass(&f, qa) == 0);
  CHECK(pass(&f, q) == 0);
  /* after a remove the rows differ: the load builds the manager aside */
  CHECK(ecs_destroy(f.w, f.e[0]));
  CHECK(ecs_world_gc(f.w, SIZE_MAX) > 0);
  in.pos = 0;
  CHECK_EQ_INT(ecs_world_load(f.w, &in), ECS_ERR_OK);
  CHECK(pass(&f, q) == (BIT(1) | BIT(2)));
  CHECK(pass(&f, qa) == 0);
  CHECK(ecs_world_check(f.w) == NULL);
  /* another world, loaded, then its queries made: the first two as the
  ** saved world made them, the third with terms of its own */
  CHECK(setup(&g, 0));
  in.pos = 0;
  CHECK_EQ_INT(ecs_world_load(g.w, &in), ECS_ERR_OK);
  memcpy(g.e, f.e, sizeof g.e);
  CHECK((g1 = tracked(&g, &g.P, 1, g.P, NULL)) != NULL);
  CHECK((g2 = tracked(&g, &g.P, 1, NULL, g.P)) != NULL);
  CHECK((g3 = tracked(&g, &g.V, 1, g.V, NULL)) != NULL);
  CHECK(pass(&g, g1) == (BIT(1) | BIT(2)));
  CHECK(pass(&g, g2) == 0);
  CHECK(pass(&g, g3) == (BIT(0) | BIT(2) | BIT(4)));
  CHECK(ecs_world_check(g.w) == NULL);
  membuf_free(&b);
  ecs_world_free(f.w);
  ecs_world_free(g.w);
  CHECK_EQ_INT(f.a.blocks + g.a.blocks, 0);
}

/* A native system adding 1 to column 0 (written) and reading column 1. */
static void bump(ecs_world *w, const ecs_view *v, void *ud) {
  float *x = (float *)v->out[0];
  (void)w;
  (void)ud;
  for (uint32_t j = 0; j < v->count; j++) x[j] += 1.0f;
}

TEST(Change_runs_and_programs_stamp_their_targets_and_complete) {
  fixture f;
  ecs_query *q, *all, *qv;
  ecs_column_ref cols[2];
  ecs_program *p;
  char msg[128];
  size_t done;
  CHECK(setup(&f, 10));
  CHECK((q = tracked(&f, &f.P, 1, f.P, NULL)) != NULL);
  CHECK((qv = tracked(&f, &f.V, 1, f.V, NULL)) != NULL);
  CHECK_EQ_INT(ecs_query_new(f.w, &f.V, 1, NULL, 0, &all), ECS_ERR_OK);
  CHECK(pass(&f, q) == 0x3FF);
  CHECK(pass(&f, qv) == 0x155);
  /* a run over the entities with V writes P.x and reads V.dx */
  {
    ecs_component *with[2];
    ecs_query *pv;
    with[0] = f.V;
    with[1] = f.P;
    CHECK_EQ_INT(ecs_query_new(f.w, with, 2, NULL, 0, &pv), ECS_ERR_OK);
    cols[0].c = f.P;
    cols[0].field = 0;
    cols[0].write = true;
    cols[1].c = f.V;
    cols[1].field = 0;
    cols[1].write = false;
    CHECK_EQ_INT(ecs_query_run(f.w, pv, cols, 2, 0.0, bump, NULL, &done),
                 ECS_ERR_OK);
    CHECK_EQ_INT(done, 5);
    CHECK(pass(&f, q) == 0x155); /* P written where V is */
    CHECK(pass(&f, qv) == 0);    /* V only read */
    /* a program writes V.dx: V's rows stamped, P's not */
    CHECK_EQ_INT(ecs_query_program(f.w, pv, "V.dx = P.x * 2", 14, &p, msg,
                                   sizeof msg), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_program_run(f.w, p, NULL, &done), ECS_ERR_OK);
    CHECK(pass(&f, qv) == 0x155);
    CHECK(pass(&f, q) == 0);
    ecs_query_free(f.w, pv);
  }
  /* a tracked query's own run completes its pass: its writes not seen */
  cols[0].c = f.P;
  cols[0].field = 0;
  cols[0].write = true;
  CHECK_EQ_INT(ecs_query_run(f.w, q, cols, 1, 0.0, bump, NULL, &done),
               ECS_ERR_OK);
  CHECK_EQ_INT(done, 0); /* nothing changed since its last pass */
  touch(&f, f.P, 9);
  CHECK_EQ_INT(ecs_query_run(f.w, q, cols, 1, 0.0, bump, NULL, &done),
               ECS_ERR_OK);
  CHECK_EQ_INT(done, 1);
  CHECK(pass(&f, q) == 0);
  CHECK(ecs_world_check(f.w) == NULL);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(Change_clock_renumbering_keeps_every_answer) {
  fixture f;
  ecs_query *q, *busy, *old;
  CHECK(setup(&f, 8));
  CHECK((q = tracked(&f, &f.P, 1, f.P, NULL)) != NULL);
  CHECK((busy = tracked(&f, &f.V, 1, f.V, NULL)) != NULL);
  CHECK((old = tracked(&f, &f.P, 1, NULL, f.P)) != NULL);
  CHECK(pass(&f, old) == 0xFF); /* its mark: tick 1 */
  ecsi_world_set_clock(f.w, ECSI_CLOCK_LIMIT - 5);
  CHECK(pass(&f, q) == 0xFF);
  touch(&f, f.P, 4);
  for (int k = 0; k < 10; k++) (void)pass(&f, busy); /* crosses the limit */
  CHECK(ecsi_world_clock(f.w) < (1u << 30) + 16u);
  touch(&f, f.P, 6);
  CHECK(pass(&f, q) == (BIT(4) | BIT(6)));
  CHECK(pass(&f, q) == 0);
  /* a mark older than 2^30 ticks: that query reports every match once */
  CHECK(pass(&f, old) == 0xFF);
  CHECK(pass(&f, old) == 0);
  CHECK(ecs_world_check(f.w) == NULL);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(Change_terms_errors_memory_and_release) {
  fixture f;
  ecs_query *q;
  ecs_component *bad = NULL;
  size_t base, with_ticks;
  long k;
  int nomem = 0;
  CHECK(setup(&f, 40));
  CHECK_EQ_INT(ecs_query_new(f.w, &f.P, 1, &f.V, 1, &q), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_track_changes(f.w, q, &f.V, 1, NULL, 0),
               ECS_ERR_UNKNOWN_COMPONENT); /* a "without" term */
  CHECK_EQ_INT(ecs_query_track_changes(f.w, q, &bad, 1, NULL, 0),
               ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_query_track_changes(f.w, q, NULL, 1, NULL, 0),
               ECS_ERR_INVALID);
  CHECK(!ecs_query_tracks_changes(q));
  ecs_query_free(f.w, q);
  base = ecs_world_memory(f.w, NULL);
  CHECK_EQ_INT(ecs_query_new(f.w, &f.P, 1, NULL, 0, &q), ECS_ERR_OK);
  /* out of memory: nothing changed, every allocation in turn */
  for (k = 1; k < 10; k++) {
    ecs_err err;
    f.a.fail_at = f.a.calls + k;
    err = ecs_query_track_changes(f.w, q, &f.P, 1, &f.P, 1);
    f.a.fail_at = 0;
    if (err == ECS_ERR_OK) break;
    CHECK_EQ_INT(err, ECS_ERR_NOMEM);
    CHECK(!ecs_query_tracks_changes(q));
    nomem++;
  }
  CHECK_EQ_INT(nomem, 2); /* the two stamp arrays */
  with_ticks = ecs_world_memory(f.w, NULL);
  CHECK(with_ticks >= base + 2u * 40u * sizeof(uint32_t));
  /* growth with stamps: a failing allocation leaves a consistent world */
  for (k = 1; k < 6; k++) {
    ecs_entity e;
    int i;
    CHECK_EQ_INT(ecs_create(f.w, &e), ECS_ERR_OK);
    f.a.fail_at = f.a.calls + k;
    for (i = 0; i < 200; i++) {
      ecs_entity x;
      if (ecs_create(f.w, &x) != ECS_ERR_OK ||
          ecs_component_add(f.w, f.P, x, NULL, NULL) != ECS_ERR_OK)
        break;
    }
    f.a.fail_at = 0;
    CHECK(ecs_world_check(f.w) == NULL);
  }
  CHECK(ecsi_ticks_of(f.P, ECSI_TICK_CHANGED) != NULL);
  CHECK(ecsi_ticks_of(f.P, ECSI_TICK_ADDED) != NULL);
  ecs_query_free(f.w, q); /* the last watcher: the stamps go */
  CHECK(ecsi_ticks_of(f.P, ECSI_TICK_CHANGED) == NULL);
  CHECK(ecsi_ticks_of(f.P, ECSI_TICK_ADDED) == NULL);
  CHECK(ecs_world_check(f.w) == NULL);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Change_terms_first_pass_all_then_what_was_written),
  CASE(Change_stamps_follow_swap_removes_and_new_instances),
  CASE(Change_stamps_follow_realignment),
  CASE(Change_load_brings_cursors_and_stamps),
  CASE(Change_runs_and_programs_stamp_their_targets_and_complete),
  CASE(Change_clock_renumbering_keeps_every_answer),
  CASE(Change_terms_errors_memory_and_release),
};

TEST_MAIN(cases)
