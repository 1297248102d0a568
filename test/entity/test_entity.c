/*
** test_entity.c -- the entity manager, driven directly through ecs.h.
*/
#include "ecs.h"
#include "../support/harness.h"

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
  /* bits above the 30-bit id: index 0 and every free index hold
  ** ECS_SLOT_FREE | generation, which no handle's upper bits may equal */
  for (uint32_t hi = 1; hi < 4; hi++) {
    for (uint32_t g = 0; g < 256; g++) {
      CHECK(!ecs_alive(w, (ecs_entity)(hi << 30 | g << 22)));     /* index 0 */
      CHECK(!ecs_alive(w, (ecs_entity)(hi << 30 | g << 22 | 2u))); /* free */
      CHECK(!ecs_alive(w, (ecs_entity)(hi << 30 | g << 22 | 1u)));
    }
  }
  CHECK(!ecs_destroy(w, (ecs_entity)(1u << 30)));
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

/*
** A probe manager: one record (a stored handle) per index below PROBE_N,
** gc reclaims dead ones, purge marks the index's record purged and counts
** the call. With forgetful set its purge does nothing, as a manager
** without the fix would: its check must then see the record outlive the
** wrap.
*/
#define PROBE_N 2048
typedef struct probe {
  ecs_world *w;
  ecs_entity rec[PROBE_N];   /* ECS_NULL: no record */
  uint32_t purged[PROBE_N];  /* purge calls per index */
  long calls, bad_calls;
  bool forgetful;
  int *freed;
} probe;

static size_t probe_gc(ecs_world *w, void *self, size_t budget) {
  probe *p = (probe *)self;
  size_t done = 0;
  for (uint32_t i = 0; i < PROBE_N && done < budget; i++)
    if (p->rec[i] != ECS_NULL && !ecs_alive(w, p->rec[i])) {
      p->rec[i] = ECS_NULL;
      done++;
    }
  return done;
}

static void probe_purge(ecs_world *w, void *self, uint32_t index) {
  probe *p = (probe *)self;
  p->calls++;
  /* called once the index is free, with its next generation 0 */
  if (index >= PROBE_N || ecs_alive(w, ecs_make_entity(index, 0)) ||
      ecs_alive(w, ecs_make_entity(index, 255)))
    p->bad_calls++;
  if (index < PROBE_N) {
    p->purged[index]++;
    if (!p->forgetful && p->rec[index] != ECS_NULL)
      p->rec[index] = ecs_mark_purged(p->rec[index]);
  }
}

static const char *probe_check(const ecs_world *w, const void *self) {
  const probe *p = (const probe *)self;
  for (uint32_t i = 0; i < PROBE_N; i++)
    if (p->rec[i] != ECS_NULL && !ecs_record_valid(w, p->rec[i]))
      return "probe: record outlived its generation (wrap)";
  return NULL;
}

static void probe_free(ecs_world *w, void *self) {
  probe *p = (probe *)self;
  (void)w; /* static in the tests: nothing to release */
  if (p->freed != NULL) ++*p->freed;
}

static const ecs_manager_class probe_class = {
  .kind = "probe",
  .gc = probe_gc,
  .check = probe_check,
  .free = probe_free,
  .purge = probe_purge,
};
static const ecs_manager_class no_purge_class = {
  .kind = "no purge",
  .gc = probe_gc,
  .check = probe_check,
  .free = probe_free,
};
static const ecs_manager_class no_records_class = {
  .kind = "no records",
  .free = probe_free,
};

/* Each of 1024 indices is destroyed once, then once per lap of laps. */
static void run_laps(ecs_world *w, int laps) {
  ecs_entity x;
  for (int k = 0; k < laps * 1024; k++) {
    if (ecs_create(w, &x) != ECS_ERR_OK) return;
    ecs_destroy(w, x);
  }
}

TEST(Entity_wrap_purges_every_manager_once_per_256_destroys) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  static probe p, q;
  int freed = 0;
  ecs_entity e[1024];
  memset(&p, 0, sizeof p);
  memset(&q, 0, sizeof q);
  p.freed = q.freed = &freed;
  CHECK(ecs_manager_register(w, "probe", &probe_class, &p) == ECS_ERR_OK);
  CHECK(ecs_manager_register(w, "empty", &no_records_class, &q) == ECS_ERR_OK);
  CHECK(ecs_create_n(w, e, 1024) == ECS_ERR_OK);
  for (int i = 0; i < 1024; i++) p.rec[ecs_entity_index(e[i])] = e[i];
  CHECK_EQ_INT(ecs_destroy_n(w, e, 1024), 1024); /* destroy 1 of 256 */
  run_laps(w, 254);                              /* destroys 2 .. 255 */
  CHECK_EQ_INT(p.calls, 0);
  CHECK_WORLD(w);
  run_laps(w, 1); /* destroy 256: every index wraps once */
  CHECK_EQ_INT(p.calls, 1024);
  CHECK_EQ_INT(p.bad_calls, 0);
  for (int i = 0; i < 1024; i++) {
    uint32_t ix = ecs_entity_index(e[i]);
    CHECK_EQ_INT(p.purged[ix], 1);
    CHECK(p.rec[ix] == ecs_mark_purged(e[i])); /* marked, not moved */
    CHECK(!ecs_alive(w, p.rec[ix]));
  }
  CHECK_WORLD(w); /* purged records are valid */
  run_laps(w, 256);
  CHECK_EQ_INT(p.calls, 2048); /* once more per index, 256 destroys later */
  CHECK_WORLD(w);
  CHECK_EQ_INT(ecs_world_gc(w, SIZE_MAX), 1024);
  ecs_world_free(w);
  CHECK_EQ_INT(freed, 2);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Entity_check_fails_on_a_record_that_outlived_a_wrap) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  static probe p;
  ecs_entity e[1024], x;
  const char *bad;
  memset(&p, 0, sizeof p);
  p.forgetful = true; /* a manager that ignores the wrap */
  CHECK(ecs_manager_register(w, "probe", &probe_class, &p) == ECS_ERR_OK);
  CHECK(ecs_create_n(w, e, 1024) == ECS_ERR_OK);
  p.rec[ecs_entity_index(e[0])] = e[0];
  CHECK_EQ_INT(ecs_destroy_n(w, e, 1024), 1024);
  run_laps(w, 254);
  CHECK_WORLD(w); /* generation 0 is behind the next one (255) */
  run_laps(w, 1);
  bad = ecs_world_check(w); /* free, next generation 0: 0 is not below it */
  CHECK(bad != NULL && strcmp(bad, "probe: record outlived its generation (wrap)") == 0);
  /* the very bug: the old handle is alive again and would see the record */
  do {
    CHECK(ecs_create(w, &x) == ECS_ERR_OK);
    if (x != e[0]) ecs_destroy(w, x);
  } while (x != e[0]);
  CHECK(ecs_alive(w, p.rec[ecs_entity_index(e[0])]));
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Entity_register_refuses_gc_without_purge) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  static probe p;
  int freed = 0;
  memset(&p, 0, sizeof p);
  p.freed = &freed;
  CHECK(ecs_manager_register(w, "bad", &no_purge_class, &p) == ECS_ERR_BAD_CLASS);
  CHECK_EQ_INT(freed, 1); /* the world owned it, and freed it */
  CHECK(ecs_manager_find(w, "bad", NULL) == NULL);
  CHECK_EQ_INT(ecs_manager_count(w), 0);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Entity_record_valid_follows_the_slot) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_entity e, f;
  uint32_t i;
  CHECK(ecs_create(w, &e) == ECS_ERR_OK);
  CHECK(ecs_create(w, &f) == ECS_ERR_OK);
  i = ecs_entity_index(e);
  /* live at generation 0: 0 only */
  CHECK(ecs_record_valid(w, e));
  CHECK(!ecs_record_valid(w, ecs_make_entity(i, 1)));
  CHECK(!ecs_record_valid(w, ecs_make_entity(i, 255)));
  CHECK(ecs_destroy(w, e));
  /* free, next generation 1: below 1 only */
  CHECK(ecs_record_valid(w, e));
  CHECK(!ecs_record_valid(w, ecs_make_entity(i, 1)));
  /* purged: always, but only for an index in use */
  CHECK(ecs_record_valid(w, ecs_mark_purged(ecs_make_entity(i, 200))));
  CHECK(!ecs_record_valid(w, ecs_mark_purged(ecs_make_entity(3, 0))));
  /* never an index out of range, index 0, or stray high bits */
  CHECK(!ecs_record_valid(w, ecs_make_entity(3, 0)));
  CHECK(!ecs_record_valid(w, ECS_NULL));
  CHECK(!ecs_record_valid(w, f | 0x40000000u));
  CHECK(ecs_record_valid(w, f));
  ecs_world_free(w);
}

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
  CASE(Entity_wrap_purges_every_manager_once_per_256_destroys),
  CASE(Entity_check_fails_on_a_record_that_outlived_a_wrap),
  CASE(Entity_register_refuses_gc_without_purge),
  CASE(Entity_record_valid_follows_the_slot),
  CASE(World_memory_counts_every_block),
};

TEST_MAIN(cases)
