/*
** test_records.c -- the public entity -> record map and lazy gc
** (include/records.h) as a plugin uses them: a toy manager built on them, its
** memory counted by the world, out-of-memory all or nothing, and the gc's
** budget and reach (the one policy of every manager).
*/
#include "../support/harness.h"
#include "ecs.h"
#include "records.h"

#define TOY_MAX 1024u

/* A toy manager: dense records (owner only), the map, the gc's cursor;
** looked counts the owner calls, i.e. the records the gc looked at. */
typedef struct toy {
  ecs_entity owner[TOY_MAX];
  uint32_t size, cursor;
  ecs_record_map map;
  uint32_t *looked;
} toy;

static ecs_entity toy_owner(const void *self, uint32_t i) {
  const toy *t = (const toy *)self;
  ++*t->looked;
  return t->owner[i];
}

static void toy_drop(ecs_world *w, void *self, uint32_t i) {
  toy *t = (toy *)self;
  uint32_t last = --t->size;
  (void)w;
  ecs_record_map_set(&t->map, ecs_entity_index(t->owner[i]), ECS_RECORD_NONE);
  if (i != last) {
    t->owner[i] = t->owner[last];
    ecs_record_map_set(&t->map, ecs_entity_index(t->owner[i]), i);
  }
}

static const ecs_record_ops toy_ops = {toy_owner, toy_drop};

static ecs_err toy_add(ecs_world *w, toy *t, ecs_entity e) {
  ecs_err err = ecs_record_map_reserve(w, &t->map, ecs_entity_index(e));
  if (err != ECS_ERR_OK) return err;
  t->owner[t->size] = e;
  ecs_record_map_set(&t->map, ecs_entity_index(e), t->size++);
  return ECS_ERR_OK;
}

/* each: every entry names a record of its index. */
static const char *entry_ok(const void *ud, uint32_t index, uint32_t v) {
  const toy *t = (const toy *)ud;
  if (v >= t->size || ecs_entity_index(t->owner[v]) != index)
    return "entry without its record";
  return NULL;
}

/* each: collect (index, v) pairs into a flat array; complain at the
** limit-th. */
typedef struct pairs {
  uint32_t *out;
  uint32_t *n;
  uint32_t limit;
} pairs;
static const char *collect(const void *ud, uint32_t index, uint32_t v) {
  const pairs *p = (const pairs *)ud;
  p->out[2 * *p->n] = index;
  p->out[2 * *p->n + 1] = v;
  return ++*p->n == p->limit ? "enough" : NULL;
}

TEST(Records_map_lookup_reserve_each_bytes_and_oom) {
  test_alloc a = {0};
  ecs_world *w = ecs_world_new(test_allocf, &a);
  ecs_record_map m = {0};
  size_t mem0;
  uint32_t got[8], n = 0;
  pairs p;
  CHECK(w != NULL);
  mem0 = ecs_world_memory(w, NULL);
  CHECK_EQ_INT(ecs_record_map_get(&m, 5), ECS_RECORD_NONE);
  ecs_record_map_set(&m, 5, ECS_RECORD_NONE); /* no page: a no-op */
  CHECK_EQ_INT(ecs_record_map_bytes(&m), 0);
  CHECK_EQ_INT(ecs_record_map_reserve(w, &m, 5), ECS_ERR_OK);
  CHECK(ecs_record_map_bytes(&m) > 0);
  CHECK_EQ_INT(ecs_record_map_bytes(&m), ecs_world_memory(w, NULL) - mem0);
  ecs_record_map_set(&m, 5, 7);
  CHECK_EQ_INT(ecs_record_map_get(&m, 5), 7);
  CHECK_EQ_INT(ecs_record_map_get(&m, 6), ECS_RECORD_NONE);
  CHECK_EQ_INT(ecs_record_map_get(&m, ECS_INDEX_MASK), ECS_RECORD_NONE);
  /* the largest index: the directory grows to 4096 pages */
  CHECK_EQ_INT(ecs_record_map_reserve(w, &m, ECS_INDEX_MASK), ECS_ERR_OK);
  ecs_record_map_set(&m, ECS_INDEX_MASK, 9);
  ecs_record_map_set(&m, 1030, ECS_RECORD_NONE); /* directory, no page */
  CHECK_EQ_INT(ecs_record_map_get(&m, ECS_INDEX_MASK), 9);
  CHECK_EQ_INT(ecs_record_map_bytes(&m), ecs_world_memory(w, NULL) - mem0);
  /* out of memory: the page of index 3000 cannot be had; nothing changes
  ** but what the function allows (the directory was large already) */
  a.fail_at = a.calls + 1;
  CHECK_EQ_INT(ecs_record_map_reserve(w, &m, 3000), ECS_ERR_NOMEM);
  a.fail_at = 0;
  CHECK_EQ_INT(ecs_record_map_get(&m, 3000), ECS_RECORD_NONE);
  CHECK_EQ_INT(ecs_record_map_bytes(&m), ecs_world_memory(w, NULL) - mem0);
  CHECK_EQ_INT(ecs_record_map_reserve(w, &m, 3000), ECS_ERR_OK);
  ecs_record_map_set(&m, 3000, 1);
  ecs_record_map_set(&m, 3001, 2);
  /* each: index order, the callback's complaint stops the walk */
  p.out = got;
  p.n = &n;
  p.limit = 5;
  CHECK(ecs_record_map_each(&m, collect, &p) == NULL);
  CHECK_EQ_INT(n, 4); /* 5, 3000, 3001, max */
  CHECK_EQ_INT(got[0], 5);
  CHECK_EQ_INT(got[1], 7);
  CHECK_EQ_INT(got[2], 3000);
  CHECK_EQ_INT(got[4], 3001);
  CHECK_EQ_INT(got[6], ECS_INDEX_MASK);
  CHECK_EQ_INT(got[7], 9);
  n = 0;
  p.limit = 3; /* the third call (index 3001) complains: the walk stops */
  CHECK(strcmp(ecs_record_map_each(&m, collect, &p), "enough") == 0);
  CHECK_EQ_INT(n, 3);
  /* free: every block back, the map empty and reusable */
  ecs_record_map_free(w, &m);
  CHECK_EQ_INT(ecs_world_memory(w, NULL), mem0);
  CHECK_EQ_INT(ecs_record_map_bytes(&m), 0);
  CHECK_EQ_INT(ecs_record_map_get(&m, 5), ECS_RECORD_NONE);
  CHECK_EQ_INT(ecs_record_map_reserve(w, &m, 5), ECS_ERR_OK);
  ecs_record_map_free(w, &m);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Records_gc_is_budgeted_and_reaches_a_lone_dead_record_within_a_lap) {
  test_alloc a = {0};
  ecs_world *w = ecs_world_new(test_allocf, &a);
  static toy t; /* 4 KB of owners: not on the stack */
  ecs_entity es[1000];
  uint32_t looked = 0, calls;
  size_t got = 0;
  CHECK(w != NULL);
  memset(&t, 0, sizeof t);
  t.looked = &looked;
  CHECK_EQ_INT(ecs_create_n(w, es, 1000), ECS_ERR_OK);
  for (int i = 0; i < 1000; i++) CHECK_EQ_INT(toy_add(w, &t, es[i]), ECS_ERR_OK);
  /* nothing dead: one call looks at 4 * budget + 64 records, no more */
  CHECK_EQ_INT(ecs_record_gc(w, &t, &toy_ops, &t.size, &t.cursor, 10), 0);
  CHECK_EQ_INT(looked, 4 * 10 + 64);
  looked = 0; /* budget 0: nothing looked at, the cursor stays */
  CHECK_EQ_INT(ecs_record_gc(w, &t, &toy_ops, &t.size, &t.cursor, 0), 0);
  CHECK_EQ_INT(looked, 0);
  /* rare deaths, one far ahead of the cursor and one just behind it:
  ** both reached within 1000 / (4 * 10 + 64) + 1 calls (the scan resumes
  ** where it stopped and laps) */
  CHECK_EQ_INT(t.cursor, 4 * 10 + 64); /* record i is es[i] so far */
  CHECK(ecs_destroy(w, es[600]));
  CHECK(ecs_destroy(w, es[4 * 10 + 64 - 1]));
  calls = 1000 / (4 * 10 + 64) + 1;
  for (uint32_t k = 0; k < calls; k++)
    got += ecs_record_gc(w, &t, &toy_ops, &t.size, &t.cursor, 10);
  CHECK_EQ_INT(got, 2);
  CHECK_EQ_INT(t.size, 998);
  CHECK(ecs_record_map_each(&t.map, entry_ok, &t) == NULL);
  /* many dead: at most budget per call, every one reclaimed in the end */
  for (int i = 0; i < 1000; i += 7) ecs_destroy(w, es[i]);
  got = 0;
  for (int k = 0; k < 100 && got < 143; k++) {
    size_t n = ecs_record_gc(w, &t, &toy_ops, &t.size, &t.cursor, 3);
    CHECK(n <= 3);
    got += n;
  }
  CHECK_EQ_INT(got, 143); /* the multiples of 7 below 1000 (not 600) */
  CHECK(ecs_record_map_each(&t.map, entry_ok, &t) == NULL);
  /* SIZE_MAX sweeps everything and rewinds the cursor */
  for (int i = 1; i < 1000; i += 2) ecs_destroy(w, es[i]);
  got = ecs_record_gc(w, &t, &toy_ops, &t.size, &t.cursor, SIZE_MAX);
  CHECK(got > 0);
  CHECK_EQ_INT(t.cursor, 0);
  for (uint32_t i = 0; i < t.size; i++) CHECK(ecs_alive(w, t.owner[i]));
  CHECK_EQ_INT(t.size, ecs_count(w));
  CHECK(ecs_record_map_each(&t.map, entry_ok, &t) == NULL);
  ecs_record_map_free(w, &t.map);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Records_map_lookup_reserve_each_bytes_and_oom),
  CASE(Records_gc_is_budgeted_and_reaches_a_lone_dead_record_within_a_lap),
};

TEST_MAIN(cases)
