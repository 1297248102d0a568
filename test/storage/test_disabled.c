/*
** test_disabled.c -- disabled entities (component.h, "Disabled entities")
** through the core alone: the queries' lists before and after the tag
** exists, the checker over them, snapshots that leave an unused tag out
** and make it when they hold it, and every allocation failing in turn.
*/
#include "../support/harness.h"
#include "../support/membuf.h"
#include "ecs.h"
#include "component.h"
#include "query.h"
#include "snapshot.h"

static const ecs_field_def pos_fields[] = {{"x", ECS_F64}};

typedef struct fixture {
  test_alloc a;
  ecs_world *w;
  ecs_component *P;
  ecs_entity e[4];
} fixture;

static int setup(fixture *f) {
  ecs_instance row;
  memset(f, 0, sizeof *f);
  f->w = ecs_world_new(test_allocf, &f->a);
  if (f->w == NULL ||
      ecs_component_new(f->w, "P", pos_fields, 1, &f->P) != ECS_ERR_OK)
    return 0;
  for (int k = 0; k < 4; k++)
    if (ecs_create(f->w, &f->e[k]) != ECS_ERR_OK ||
        ecs_component_add(f->w, f->P, f->e[k], &row, NULL) != ECS_ERR_OK)
      return 0;
  return 1;
}

static size_t count(fixture *f, ecs_query *q) {
  size_t n = 0;
  (void)ecs_query_count(f->w, q, &n);
  return n;
}

TEST(Disabled_entities_leave_and_rejoin_every_query) {
  fixture f;
  ecs_query *before, *after, *all;
  ecs_component *P;
  CHECK(setup(&f));
  P = f.P;
  CHECK(ecs_query_new(f.w, &P, 1, NULL, 0, &before) == ECS_ERR_OK);
  CHECK_EQ_INT(count(&f, before), 4);
  CHECK(ecs_world_disabled(f.w) == NULL); /* nothing made before the need */
  CHECK(ecs_entity_disable(f.w, f.e[1]) == ECS_ERR_OK);
  CHECK(ecs_world_disabled(f.w) != NULL);
  CHECK(ecs_query_new(f.w, &P, 1, NULL, 0, &after) == ECS_ERR_OK);
  CHECK(ecs_query_new(f.w, &P, 1, NULL, 0, &all) == ECS_ERR_OK);
  ecs_query_include_disabled(all, true);
  CHECK(ecs_query_includes_disabled(all));
  CHECK(!ecs_query_includes_disabled(after));
  CHECK_EQ_INT(count(&f, before), 3);
  CHECK_EQ_INT(count(&f, after), 3);
  CHECK_EQ_INT(count(&f, all), 4);
  CHECK(!ecs_query_matches(f.w, before, f.e[1]));
  CHECK(ecs_query_matches(f.w, all, f.e[1]));
  CHECK(!ecs_entity_enabled(f.w, f.e[1]));
  CHECK(ecs_component_lookup(f.w, P, f.e[1]) != ECS_NO_INSTANCE);
  CHECK_WORLD(f.w);
  CHECK(ecs_entity_disable(f.w, f.e[1]) == ECS_ERR_OK); /* again: nothing */
  CHECK(ecs_entity_disable(f.w, f.e[3]) == ECS_ERR_OK);
  CHECK_EQ_INT(count(&f, after), 2);
  CHECK(ecs_entity_enable(f.w, f.e[1]) == ECS_ERR_OK);
  CHECK(ecs_entity_enable(f.w, f.e[1]) == ECS_ERR_OK);
  CHECK_EQ_INT(count(&f, before), 3);
  CHECK(ecs_entity_enabled(f.w, f.e[1]));
  CHECK_WORLD(f.w);
  ecs_query_include_disabled(all, false); /* stale: built again */
  CHECK_EQ_INT(count(&f, all), 3);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(Disabled_dead_entities_are_refused) {
  fixture f;
  CHECK(setup(&f));
  CHECK(ecs_destroy(f.w, f.e[0]));
  CHECK_EQ_INT(ecs_entity_disable(f.w, f.e[0]), ECS_ERR_DEAD);
  CHECK_EQ_INT(ecs_entity_enable(f.w, f.e[0]), ECS_ERR_DEAD);
  CHECK_EQ_INT(ecs_entity_disable(f.w, ECS_NULL), ECS_ERR_DEAD);
  CHECK(!ecs_entity_enabled(f.w, f.e[0]));
  CHECK(ecs_world_disabled(f.w) == NULL); /* a refusal makes nothing */
  CHECK(ecs_component_new(f.w, ECS_DISABLED_NAME, NULL, 0, NULL) ==
        ECS_ERR_COMPONENT_NAME);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

static ecs_err save(ecs_world *w, membuf *b) {
  ecs_writer out = membuf_writer(b);
  return ecs_world_save(w, &out);
}

static ecs_err load(ecs_world *w, const membuf *b) {
  ecs_reader in;
  in.data = b->p;
  in.size = b->n;
  in.pos = 0;
  return ecs_world_load(w, &in);
}

TEST(Disabled_snapshots_carry_the_flag_and_leave_an_unused_tag_out) {
  fixture f, g;
  membuf clean, off, again;
  ecs_query *q;
  ecs_component *gp;
  memset(&clean, 0, sizeof clean);
  memset(&off, 0, sizeof off);
  memset(&again, 0, sizeof again);
  CHECK(setup(&f));
  CHECK(save(f.w, &clean) == ECS_ERR_OK);
  CHECK(ecs_entity_disable(f.w, f.e[2]) == ECS_ERR_OK);
  CHECK(save(f.w, &off) == ECS_ERR_OK);
  CHECK(ecs_entity_enable(f.w, f.e[2]) == ECS_ERR_OK);
  CHECK(save(f.w, &again) == ECS_ERR_OK);
  CHECK(clean.n == again.n && memcmp(clean.p, again.p, clean.n) == 0);
  CHECK(off.n != clean.n);
  /* a world that never disabled anything takes the flag from the blob */
  CHECK(setup(&g));
  gp = g.P;
  CHECK(ecs_query_new(g.w, &gp, 1, NULL, 0, &q) == ECS_ERR_OK);
  CHECK_EQ_INT(count(&g, q), 4);
  CHECK(load(g.w, &off) == ECS_ERR_OK);
  CHECK(ecs_world_disabled(g.w) != NULL);
  CHECK_EQ_INT(count(&g, q), 3);
  CHECK(!ecs_entity_enabled(g.w, g.e[2]));
  CHECK_WORLD(g.w);
  CHECK(load(g.w, &clean) == ECS_ERR_OK); /* cleared again */
  CHECK_EQ_INT(count(&g, q), 4);
  CHECK(ecs_entity_enabled(g.w, g.e[2]));
  CHECK_WORLD(g.w);
  ecs_world_free(f.w);
  ecs_world_free(g.w);
  CHECK_EQ_INT(f.a.blocks, 0);
  CHECK_EQ_INT(g.a.blocks, 0);
  free(clean.p);
  free(off.p);
  free(again.p);
}

TEST(Disabled_out_of_memory_at_every_step) {
  for (long fail = 1;; fail++) {
    fixture f;
    ecs_query *q;
    ecs_component *P;
    ecs_err err;
    size_t n = 0;
    CHECK(setup(&f));
    P = f.P;
    CHECK(ecs_query_new(f.w, &P, 1, NULL, 0, &q) == ECS_ERR_OK);
    CHECK_EQ_INT(count(&f, q), 4);
    f.a.calls = 0;
    f.a.fail_at = fail;
    err = ecs_entity_disable(f.w, f.e[0]);
    if (err == ECS_ERR_OK) err = ecs_entity_disable(f.w, f.e[3]);
    if (err == ECS_ERR_OK) err = ecs_query_count(f.w, q, &n);
    f.a.fail_at = 0;
    if (err != ECS_ERR_OK) {
      CHECK_EQ_INT(err, ECS_ERR_NOMEM);
      CHECK_WORLD(f.w);
      /* whatever was disabled is skipped, nothing else */
      CHECK_EQ_INT(count(&f, q), 4u - !ecs_entity_enabled(f.w, f.e[0]) -
                                     !ecs_entity_enabled(f.w, f.e[3]));
    }
    CHECK_WORLD(f.w);
    ecs_world_free(f.w);
    CHECK_EQ_INT(f.a.blocks, 0);
    if (err == ECS_ERR_OK) {
      CHECK_EQ_INT(n, 2);
      CHECK(fail > 2); /* the sweep did reach the allocations */
      break;
    }
  }
}

static const test_case cases[] = {
  CASE(Disabled_entities_leave_and_rejoin_every_query),
  CASE(Disabled_dead_entities_are_refused),
  CASE(Disabled_snapshots_carry_the_flag_and_leave_an_unused_tag_out),
  CASE(Disabled_out_of_memory_at_every_step),
};

TEST_MAIN(cases)
