/*
** test_entity.c -- the entity manager, driven directly through ecs.h.
*/
#include "ecs.h"
#include "harness.h"

static ecs_world *new_world(test_alloc *a) {
  memset(a, 0, sizeof *a);
  return ecs_world_new(test_allocf, a);
}

TEST(Entity_create_gives_distinct_alive_handles) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_entity e[100];
  for (int i = 0; i < 100; i++) CHECK(ecs_create(w, &e[i]) == ECS_ERR_OK);
  for (int i = 0; i < 100; i++) {
    CHECK(ecs_alive(w, e[i]));
    CHECK(e[i] != ECS_NULL);
    CHECK_EQ_INT(ecs_entity_index(e[i]), i + 1); /* index 0 is reserved */
    CHECK_EQ_INT(ecs_entity_generation(e[i]), 0);
  }
  CHECK_EQ_INT(ecs_count(w), 100);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Entity_null_and_junk_are_never_alive) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_entity e;
  CHECK(!ecs_alive(w, ECS_NULL)); /* before any slot exists */
  CHECK(ecs_create(w, &e) == ECS_ERR_OK);
  CHECK(!ecs_alive(w, ECS_NULL));
  CHECK(!ecs_alive(w, ecs_make_entity(0, 1)));
  CHECK(!ecs_alive(w, ecs_make_entity(0, 255)));
  CHECK(!ecs_alive(w, ecs_make_entity(ECS_MAX_ENTITIES, 0)));
  CHECK(!ecs_alive(w, ecs_make_entity(2, 0)));        /* never created */
  CHECK(!ecs_alive(w, ecs_make_entity(1, 1)));        /* generation ahead */
  CHECK(!ecs_alive(w, ECS_ID_MASK));
  CHECK(!ecs_destroy(w, ECS_NULL));
  CHECK(!ecs_destroy(w, ecs_make_entity(1, 1)));
  CHECK(ecs_alive(w, e));
  CHECK_WORLD(w);
  ecs_world_free(w);
}

TEST(Entity_destroy_is_idempotent) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_entity e;
  CHECK(ecs_create(w, &e) == ECS_ERR_OK);
  CHECK(ecs_destroy(w, e));
  CHECK(!ecs_destroy(w, e));
  CHECK(!ecs_alive(w, e));
  CHECK_EQ_INT(ecs_count(w), 0);
  CHECK_EQ_INT(ecs_free_count(w), 1); /* queued once, not twice */
  /* the next generation, while queued, is not alive either */
  CHECK(!ecs_alive(w, ecs_make_entity(ecs_entity_index(e), 1)));
  CHECK_WORLD(w);
  ecs_world_free(w);
}

TEST(Entity_indices_reused_only_after_1024_free) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_entity e[2000], x;
  CHECK(ecs_create_n(w, e, 2000) == ECS_ERR_OK);
  /* free 1023: the queue is below the minimum, so fresh indices come */
  for (int i = 0; i < 1023; i++) CHECK(ecs_destroy(w, e[i]));
  CHECK(ecs_create(w, &x) == ECS_ERR_OK);
  CHECK_EQ_INT(ecs_entity_index(x), 2001);
  CHECK_EQ_INT(ecs_free_count(w), 1023);
  /* the 1024th free makes the queue long enough: FIFO, oldest first */
  CHECK(ecs_destroy(w, e[1023]));
  CHECK(ecs_create(w, &x) == ECS_ERR_OK);
  CHECK_EQ_INT(ecs_entity_index(x), ecs_entity_index(e[0]));
  CHECK_EQ_INT(ecs_entity_generation(x), 1);
  CHECK(!ecs_alive(w, e[0]));
  CHECK(ecs_alive(w, x));
  CHECK_EQ_INT(ecs_free_count(w), 1023);
  /* back below the minimum: fresh again */
  CHECK(ecs_create(w, &x) == ECS_ERR_OK);
  CHECK_EQ_INT(ecs_entity_index(x), 2002);
  CHECK_WORLD(w);
  ecs_world_free(w);
}

TEST(Entity_generation_wraps_after_256_laps) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_entity first, e[1024];
  uint32_t idx;
  CHECK(ecs_create(w, &first) == ECS_ERR_OK);
  idx = ecs_entity_index(first);
  CHECK(ecs_create_n(w, e, 1023) == ECS_ERR_OK);
  CHECK(ecs_destroy(w, first));
  CHECK_EQ_INT(ecs_destroy_n(w, e, 1023), 1023);
  /* 1024 queued: every create reuses the oldest index; destroying it
  ** again sends it to the back of the queue. Index idx comes back once per
  ** lap of 1024 creations, one generation later each time. */
  for (int lap = 1; lap <= 256; lap++) {
    ecs_entity got = ECS_NULL;
    for (int k = 0; k < 1024; k++) {
      ecs_entity x;
      CHECK(ecs_create(w, &x) == ECS_ERR_OK);
      if (ecs_entity_index(x) == idx) got = x;
      CHECK(ecs_destroy(w, x));
    }
    CHECK_EQ_INT(ecs_entity_index(got), idx);
    CHECK_EQ_INT(ecs_entity_generation(got), lap & 255);
    if (lap < 256) CHECK(got != first);
    else CHECK(got == first); /* the id reappears after 256 x 1024 reuses */
  }
  CHECK_EQ_INT(ecs_count(w), 0);
  CHECK_WORLD(w);
  ecs_world_free(w);
}

TEST(Entity_capacity_limit_is_an_error) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_entity x;
  static ecs_entity all[ECS_MAX_ENTITIES];
  CHECK(ecs_create_n(w, all, ECS_MAX_ENTITIES) == ECS_ERR_OK);
  CHECK_EQ_INT(ecs_count(w), ECS_MAX_ENTITIES);
  CHECK(ecs_create(w, &x) == ECS_ERR_FULL);
  CHECK(ecs_create_n(w, &x, 1) == ECS_ERR_FULL);
  CHECK_EQ_INT(ecs_count(w), ECS_MAX_ENTITIES);
  /* one free index: the queue is used whatever its length */
  CHECK(ecs_destroy(w, all[7]));
  CHECK(ecs_create(w, &x) == ECS_ERR_OK);
  CHECK_EQ_INT(ecs_entity_index(x), ecs_entity_index(all[7]));
  CHECK_EQ_INT(ecs_entity_generation(x), 1);
  CHECK(ecs_create(w, &x) == ECS_ERR_FULL);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Entity_batch_is_all_or_nothing_when_full) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  static ecs_entity all[ECS_MAX_ENTITIES];
  CHECK(ecs_create_n(w, all, ECS_MAX_ENTITIES - 5) == ECS_ERR_OK);
  CHECK(ecs_create_n(w, all, 6) == ECS_ERR_FULL);
  CHECK_EQ_INT(ecs_count(w), ECS_MAX_ENTITIES - 5);
  CHECK(ecs_create_n(w, all, 5) == ECS_ERR_OK);
  CHECK_WORLD(w);
  ecs_world_free(w);
}

TEST(Entity_iteration_visits_live_entities_in_order) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_entity e[10], x;
  uint32_t cursor = 0;
  int n = 0;
  CHECK(ecs_create_n(w, e, 10) == ECS_ERR_OK);
  for (int i = 0; i < 10; i += 2) CHECK(ecs_destroy(w, e[i]));
  while (ecs_next_entity(w, &cursor, &x)) {
    CHECK(x == e[2 * n + 1]);
    n++;
  }
  CHECK_EQ_INT(n, 5);
  ecs_world_free(w);
}

TEST(Entity_out_of_memory_at_every_allocation) {
  /* fail allocation N for N = 1, 2, ... until the scenario succeeds */
  for (long fail = 1;; fail++) {
    test_alloc a;
    ecs_world *w;
    ecs_entity e[3000];
    ecs_err err = ECS_ERR_OK;
    memset(&a, 0, sizeof a);
    a.fail_at = fail;
    w = ecs_world_new(test_allocf, &a);
    if (w == NULL) continue;
    for (int round = 0; round < 3 && err == ECS_ERR_OK; round++) {
      size_t before = ecs_count(w);
      err = ecs_create_n(w, e, 3000);
      if (err != ECS_ERR_OK) {
        CHECK(err == ECS_ERR_NOMEM);
        CHECK_EQ_INT(ecs_count(w), before); /* all or nothing */
        break;
      }
      CHECK_EQ_INT(ecs_destroy_n(w, e, 1500), 1500);
    }
    CHECK_WORLD(w);
    ecs_world_free(w);
    CHECK_EQ_INT(a.blocks, 0);
    CHECK_EQ_INT(a.bytes, 0);
    if (err == ECS_ERR_OK) break;
  }
}

TEST(Entity_error_table_has_a_text_per_code) {
  CHECK(strcmp(ecs_strerror(ECS_ERR_NOMEM), "not enough memory") == 0);
  CHECK(strcmp(ecs_strerror(ECS_ERR_FULL),
               "too many entities (limit 4194303)") == 0);
  CHECK(strcmp(ecs_strerror((ecs_err)999), "unknown error") == 0);
  for (int i = 0; i < (int)ECS_ERR__COUNT; i++)
    CHECK(ecs_strerror((ecs_err)i)[0] != '\0');
}

/* ecs_world_memory: exactly what the world's allocator holds for it,
** plugin blocks (ecs_world_allocator) included; the total only grows. */
TEST(World_memory_counts_every_block) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_entity e[3000];
  uint64_t t0, t1, t2, t3;
  void *ud, *p;
  ecs_alloc_fn f;
  CHECK_EQ_INT(ecs_world_memory(w, &t0), a.bytes);
  CHECK(t0 > 0);
  CHECK_EQ_INT(ecs_create_n(w, e, 3000), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_memory(w, &t1), a.bytes);
  CHECK(t1 > t0 + 3000 * sizeof(uint16_t));
  f = ecs_world_allocator(w, &ud);
  p = f(ud, NULL, 0, 1000);
  CHECK(p != NULL);
  p = f(ud, p, 1000, 5000);
  CHECK(p != NULL);
  CHECK_EQ_INT(ecs_world_memory(w, &t2), a.bytes);
  CHECK_EQ_INT(t2, t1 + 5000);
  CHECK(f(ud, p, 5000, 0) == NULL);
  CHECK_EQ_INT(ecs_world_memory(w, &t3), a.bytes); /* back down... */
  CHECK_EQ_INT(t3, t2);                            /* ...the total is not */
  a.fail_at = a.calls + 1; /* a failed growth changes nothing */
  CHECK(f(ud, NULL, 0, 64) == NULL);
  a.fail_at = 0;
  CHECK_EQ_INT(ecs_world_memory(w, &t3), a.bytes);
  CHECK_EQ_INT(t3, t2);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Entity_create_gives_distinct_alive_handles),
  CASE(Entity_null_and_junk_are_never_alive),
  CASE(Entity_destroy_is_idempotent),
  CASE(Entity_indices_reused_only_after_1024_free),
  CASE(Entity_generation_wraps_after_256_laps),
  CASE(Entity_capacity_limit_is_an_error),
  CASE(Entity_batch_is_all_or_nothing_when_full),
  CASE(Entity_iteration_visits_live_entities_in_order),
  CASE(Entity_out_of_memory_at_every_allocation),
  CASE(Entity_error_table_has_a_text_per_code),
  CASE(World_memory_counts_every_block),
};

TEST_MAIN(cases)
