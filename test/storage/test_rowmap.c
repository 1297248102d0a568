/*
** test_rowmap.c -- the component managers' entity index -> row map
** (src/storage/rowmap.h) against a model: random inserts, removals and row moves
** as a manager makes them (swap-remove) over dense ranges (promoted to
** pages) and sparse ones (the hash table), keys chosen to collide so that
** displacements saturate (the slow path that reads keys), the map checked
** along the way, build's duplicate refusal, out of memory.
*/
#include <stdlib.h>
#include <string.h>

#include "../support/harness.h"
#include "rowmap.h"

#define MAXN 4096u

/* A manager's records as the map sees them: an owner column, dense. */
typedef struct rows {
  ecs_entity owner[MAXN];
  uint32_t size;
  ecsi_rowmap map;
  int32_t model[65536]; /* index -> row + 1, small indices */
} rows;

static uint64_t rng = 88172645463325252ull;
static uint32_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)rng;
}

static void rows_add(ecs_world *w, rows *r, uint32_t index) {
  uint32_t i = r->size++;
  if (ecsi_rowmap_reserve(w, &r->map, r->owner, index) != ECS_ERR_OK) abort();
  r->owner[i] = ecs_make_entity(index, 1);
  ecsi_rowmap_insert(&r->map, r->owner, index, i);
  r->model[index] = (int32_t)i + 1;
}

static void rows_remove_at(rows *r, uint32_t i) {
  uint32_t last = r->size - 1, gone = ecs_entity_index(r->owner[i]);
  ecsi_rowmap_remove(&r->map, r->owner, gone);
  r->model[gone] = 0;
  if (i != last) {
    r->owner[i] = r->owner[last];
    ecsi_rowmap_move(&r->map, r->owner, ecs_entity_index(r->owner[i]), i);
    r->model[ecs_entity_index(r->owner[i])] = (int32_t)i + 1;
  }
  r->size--;
}

/* The map agrees with the model for every index in [1, hi). */
static int agrees(const rows *r, uint32_t hi) {
  for (uint32_t x = 1; x < hi; x++) {
    uint32_t got = ecsi_rowmap_get(&r->map, r->owner, x);
    uint32_t want = r->model[x] ? (uint32_t)r->model[x] - 1u : ECSI_ROWMAP_NONE;
    if (got != want) return 0;
  }
  return 1;
}

/* Indices below 65535 whose home in a table of `slots` is 0: a pile-up. */
static uint32_t colliding(uint32_t slots, uint32_t *out, uint32_t n) {
  uint32_t k = 0;
  for (uint32_t x = 1; x < 65535u && k < n; x++)
    if (ecsi_rowmap_home(slots, x) == 0) out[k++] = x;
  return k;
}

static uint32_t pages_of(const ecsi_rowmap *m) {
  uint32_t n = 0;
  for (uint32_t r = 0; r < m->nrange; r++) n += m->range[r].page != NULL;
  return n;
}

/*
** A dense run (indices 1 .. 1000: its range is promoted to a page once it
** holds 768) and random changes over 20000 indices (sparse ranges: the
** table, rehashed as it grows), checked against the model.
*/
TEST(Rowmap_random_changes_match_a_model) {
  test_alloc a = {0};
  ecs_world *w = ecs_world_new(test_allocf, &a);
  static rows r;
  uint32_t hi = 20000;
  size_t mem0;
  memset(&r, 0, sizeof r);
  CHECK(w != NULL);
  mem0 = ecs_world_memory(w, NULL);
  CHECK_EQ_INT(ecsi_rowmap_get(&r.map, r.owner, 5), ECSI_ROWMAP_NONE);
  for (uint32_t x = 1; x <= 1000; x++) {
    rows_add(w, &r, x);
    if (x == ECSI_ROWMAP_PROMOTE - 2u || x == ECSI_ROWMAP_PROMOTE) {
      CHECK_EQ_INT(pages_of(&r.map), x == ECSI_ROWMAP_PROMOTE ? 1 : 0);
      CHECK(ecsi_rowmap_check(&r.map, r.owner, r.size) == NULL);
    }
  }
  CHECK(agrees(&r, hi));
  for (int step = 0; step < 40000; step++) {
    uint32_t op = next_rand() % 100u;
    if (op < 55 && r.size < MAXN) {
      uint32_t x = 1u + next_rand() % (hi - 1u);
      if (r.model[x] == 0) rows_add(w, &r, x);
    } else if (r.size > 0) {
      rows_remove_at(&r, next_rand() % r.size);
    }
    if (step % 997 == 0) {
      CHECK(ecsi_rowmap_check(&r.map, r.owner, r.size) == NULL);
      CHECK(agrees(&r, hi));
    }
  }
  CHECK(ecsi_rowmap_check(&r.map, r.owner, r.size) == NULL);
  CHECK(agrees(&r, hi));
  CHECK_EQ_INT(ecsi_rowmap_bytes(&r.map), ecs_world_memory(w, NULL) - mem0);
  /* a rebuild finds the same rows */
  {
    ecsi_rowmap again;
    CHECK_EQ_INT(ecsi_rowmap_build(w, &again, r.owner, r.size), ECS_ERR_OK);
    ecsi_rowmap_free(w, &r.map);
    r.map = again;
    CHECK(ecsi_rowmap_check(&r.map, r.owner, r.size) == NULL);
    CHECK(agrees(&r, hi));
  }
  ecsi_rowmap_clear(&r.map);
  CHECK(ecsi_rowmap_check(&r.map, r.owner, 0) == NULL);
  CHECK_EQ_INT(ecsi_rowmap_get(&r.map, r.owner, ecs_entity_index(r.owner[0])),
               ECSI_ROWMAP_NONE);
  ecsi_rowmap_free(w, &r.map);
  CHECK_EQ_INT(ecsi_rowmap_bytes(&r.map), 0);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/*
** 150 keys with one home in the table build makes for them (188 slots):
** displacements reach 149, far past the 6 bits a slot stores, so lookups,
** misses and removals (backward shift) take the path that reads the key.
** Then removals from the middle of the pile, and inserts that rehash it.
*/
TEST(Rowmap_saturated_displacements_read_the_key) {
  test_alloc a = {0};
  ecs_world *w = ecs_world_new(test_allocf, &a);
  static rows r;
  static uint32_t pile[200];
  uint32_t n;
  memset(&r, 0, sizeof r);
  CHECK(w != NULL);
  n = colliding(150u + 150u / 4u + 1u, pile, 200);
  CHECK_EQ_INT(n, 200);
  for (uint32_t k = 0; k < 150; k++) {
    r.owner[k] = ecs_make_entity(pile[k], 1);
    r.model[pile[k]] = (int32_t)k + 1;
  }
  r.size = 150;
  CHECK_EQ_INT(ecsi_rowmap_build(w, &r.map, r.owner, r.size), ECS_ERR_OK);
  CHECK_EQ_INT(r.map.cap, 188);
  CHECK_EQ_INT(pages_of(&r.map), 0);
  CHECK(ecsi_rowmap_check(&r.map, r.owner, r.size) == NULL);
  CHECK(agrees(&r, 65535)); /* pile[150 ..] miss through the whole pile */
  for (uint32_t k = 0; k < 60; k++) rows_remove_at(&r, r.size / 2u);
  CHECK(ecsi_rowmap_check(&r.map, r.owner, r.size) == NULL);
  CHECK(agrees(&r, 65535));
  for (uint32_t k = 150; k < 200; k++) rows_add(w, &r, pile[k]);
  CHECK(ecsi_rowmap_check(&r.map, r.owner, r.size) == NULL);
  CHECK(agrees(&r, 65535));
  while (r.size > 0) {
    rows_remove_at(&r, r.size / 2u);
    if (r.size % 17u == 0) {
      CHECK(ecsi_rowmap_check(&r.map, r.owner, r.size) == NULL);
      CHECK(agrees(&r, 65535));
    }
  }
  CHECK_EQ_INT(r.map.count, 0);
  ecsi_rowmap_free(w, &r.map);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* build refuses an index named twice (a load's check), in the table and
** in a page, and leaves its output alone; so does out of memory. reserve
** out of memory leaves the map usable. */
TEST(Rowmap_build_refuses_duplicates_and_survives_oom) {
  test_alloc a = {0};
  ecs_world *w = ecs_world_new(test_allocf, &a);
  static ecs_entity own[1001];
  ecsi_rowmap m, keep;
  size_t mem0;
  int nomem = 0;
  CHECK(w != NULL);
  memset(&m, 0, sizeof m);
  memset(&keep, 0, sizeof keep);
  mem0 = ecs_world_memory(w, NULL);
  own[0] = ecs_make_entity(3, 1);
  own[1] = ecs_make_entity(9, 1);
  own[2] = ecs_make_entity(3, 2); /* index 3 again, another generation */
  own[3] = ecs_make_entity(4, 1);
  m.count = 77; /* untouched on failure */
  CHECK_EQ_INT(ecsi_rowmap_build(w, &m, own, 4), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(m.count, 77);
  CHECK_EQ_INT(ecs_world_memory(w, NULL), mem0);
  for (uint32_t k = 0; k < 1000; k++) own[k] = ecs_make_entity(k + 1, 1);
  own[1000] = ecs_make_entity(500, 3); /* in a range that gets a page */
  CHECK_EQ_INT(ecsi_rowmap_build(w, &m, own, 1001), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(m.count, 77);
  CHECK_EQ_INT(ecs_world_memory(w, NULL), mem0);
  for (long k = 1; k < 10; k++) { /* every allocation of build fails in turn */
    ecs_err err;
    a.fail_at = a.calls + k;
    own[999] = ecs_make_entity(60000, 1); /* a range of its own: the table */
    err = ecsi_rowmap_build(w, &m, own, 1000);
    a.fail_at = 0;
    if (err == ECS_ERR_OK) break;
    CHECK_EQ_INT(err, ECS_ERR_NOMEM);
    CHECK_EQ_INT(m.count, 77);
    CHECK_EQ_INT(ecs_world_memory(w, NULL), mem0);
    nomem++;
  }
  CHECK(nomem >= 3); /* directory, page, table */
  CHECK(ecsi_rowmap_check(&m, own, 1000) == NULL);
  CHECK_EQ_INT(pages_of(&m), 1);
  CHECK_EQ_INT(m.count, 1);
  CHECK_EQ_INT(ecsi_rowmap_get(&m, own, 60000), 999);
  CHECK_EQ_INT(ecsi_rowmap_bytes(&m), ecs_world_memory(w, NULL) - mem0);
  /* reserve out of memory: the directory cannot grow to index 3000000 */
  a.fail_at = a.calls + 1;
  CHECK_EQ_INT(ecsi_rowmap_reserve(w, &m, own, 3000000), ECS_ERR_NOMEM);
  a.fail_at = 0;
  CHECK(ecsi_rowmap_check(&m, own, 1000) == NULL);
  CHECK_EQ_INT(ecsi_rowmap_get(&m, own, 3000000), ECSI_ROWMAP_NONE);
  /* a corrupt map is reported */
  CHECK_EQ_INT(ecsi_rowmap_build(w, &keep, own + 998, 2), ECS_ERR_OK);
  keep.slot[ecsi_rowmap_find(&keep, own + 998, 60000)] ^= 1u;
  CHECK(ecsi_rowmap_check(&keep, own + 998, 2) != NULL);
  ecsi_rowmap_free(w, &keep);
  ecsi_rowmap_free(w, &m);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/*
** Build's fast path: a range whose 1024 indices are named once each, in
** order, in consecutive rows gets its page filled without the per-slot
** check. Checked: such ranges next to a range in reverse order, a range
** filled by two stretches, a partial one and a sparse one, every index
** against where it is; and each way a fast range can hide a duplicate
** (the same index again after the run, before it, a run's index in
** another generation) is refused, with nothing left allocated.
*/
TEST(Rowmap_build_fills_whole_ranges_at_once) {
  test_alloc a = {0};
  ecs_world *w = ecs_world_new(test_allocf, &a);
  static ecs_entity own[5000];
  ecsi_rowmap m;
  size_t mem0;
  uint32_t n = 0, x;
  CHECK(w != NULL);
  memset(&m, 0, sizeof m);
  mem0 = ecs_world_memory(w, NULL);
  for (x = 1024; x < 2048; x++) own[n++] = ecs_make_entity(x, 1);    /* fast */
  for (x = 3071; x >= 2048; x--) own[n++] = ecs_make_entity(x, 1);   /* reversed */
  for (x = 4096; x < 5120; x++) own[n++] = ecs_make_entity(x, 2);    /* fast */
  for (x = 3072; x < 3584; x++) own[n++] = ecs_make_entity(x, 1);    /* two halves */
  own[n++] = ecs_make_entity(60000, 1);                             /* sparse */
  for (x = 3584; x < 4096; x++) own[n++] = ecs_make_entity(x, 1);
  for (x = 5120; x < 5500; x++) own[n++] = ecs_make_entity(x, 1);    /* partial */
  CHECK_EQ_INT(ecsi_rowmap_build(w, &m, own, n), ECS_ERR_OK);
  CHECK(ecsi_rowmap_check(&m, own, n) == NULL);
  for (uint32_t i = 0; i < n; i++)
    CHECK_EQ_INT(ecsi_rowmap_get(&m, own, ecs_entity_index(own[i])), i);
  CHECK_EQ_INT(ecsi_rowmap_get(&m, own, 1023), ECSI_ROWMAP_NONE);
  CHECK_EQ_INT(ecsi_rowmap_get(&m, own, 5500), ECSI_ROWMAP_NONE);
  for (uint32_t r = 0; r < m.nrange; r++) /* no build flag left behind */
    CHECK(m.range[r].fill <= ECSI_ROWMAP_PAGE_SIZE);
  ecsi_rowmap_free(w, &m);
  CHECK_EQ_INT(ecs_world_memory(w, NULL), mem0);
  /* duplicates next to a run of a whole range */
  n = 0;
  for (x = 1024; x < 2048; x++) own[n++] = ecs_make_entity(x, 1);
  own[n++] = ecs_make_entity(1500, 1);                              /* after */
  m.count = 77;
  CHECK_EQ_INT(ecsi_rowmap_build(w, &m, own, n), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(m.count, 77);
  CHECK_EQ_INT(ecs_world_memory(w, NULL), mem0);
  own[0] = ecs_make_entity(1030, 3);                                /* before */
  for (x = 1024, n = 1; x < 2048; x++) own[n++] = ecs_make_entity(x, 1);
  CHECK_EQ_INT(ecsi_rowmap_build(w, &m, own, n), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(ecs_world_memory(w, NULL), mem0);
  for (x = 1024, n = 0; x < 2048; x++) own[n++] = ecs_make_entity(x, 1);
  own[500] = ecs_make_entity(1024 + 499, 2); /* in order broken: a repeat */
  CHECK_EQ_INT(ecsi_rowmap_build(w, &m, own, n), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(m.count, 77);
  CHECK_EQ_INT(ecs_world_memory(w, NULL), mem0);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/*
** Build for owners known to ascend (a load's runs): the ranges are counted
** from a few owners each (a binary search for each range's end). Random
** strictly ascending sets -- whole ranges, ranges cut at either end or
** with holes, ranges left empty, single owners, long gaps into the hash
** table's ranges -- give the very map the general build gives: the same
** page or table for each range, the same counts, every index at its row,
** the map's own check passing. Out of memory at every allocation leaves
** nothing allocated.
*/
TEST(Rowmap_build_ascending_equals_build) {
  test_alloc a = {0};
  ecs_world *w = ecs_world_new(test_allocf, &a);
  static ecs_entity own[40000];
  CHECK(w != NULL);
  for (uint32_t round = 0; round < 300u; round++) {
    ecsi_rowmap m1, m2;
    uint32_t n = 0, x = 1 + next_rand() % 3000u;
    uint32_t mode = next_rand() % 4u;
    while (n < 30000u && x < ECS_MAX_ENTITIES) {
      uint32_t pick = next_rand() % 100u;
      own[n++] = ecs_make_entity(x, 1u + x % 3u);
      if (mode == 0 || pick < 85u) x += 1u;              /* dense */
      else if (pick < 95u) x += 2u + next_rand() % 40u;  /* holes */
      else if (pick < 99u) x += 1024u + next_rand() % 5000u; /* gap */
      else x += 200000u;                                  /* far */
      if (n >= (round % 7u + 1u) * 4000u) break;
    }
    if (round % 50u == 0) n = round % 100u == 0 ? 0 : 1; /* empty, single */
    memset(&m1, 0, sizeof m1);
    memset(&m2, 0, sizeof m2);
    CHECK_EQ_INT(ecsi_rowmap_build(w, &m1, own, n), ECS_ERR_OK);
    CHECK_EQ_INT(ecsi_rowmap_build_ascending(w, &m2, own, n), ECS_ERR_OK);
    CHECK(ecsi_rowmap_check(&m2, own, n) == NULL);
    CHECK_EQ_INT(m1.nrange, m2.nrange);
    CHECK_EQ_INT(m1.cap, m2.cap);
    CHECK_EQ_INT(m1.count, m2.count);
    for (uint32_t r = 0; r < m1.nrange; r++) {
      CHECK_EQ_INT(m1.range[r].fill, m2.range[r].fill);
      CHECK((m1.range[r].page == NULL) == (m2.range[r].page == NULL));
      if (m1.range[r].page != NULL)
        CHECK(memcmp(m1.range[r].page, m2.range[r].page,
                     ECSI_ROWMAP_PAGE_SIZE * sizeof(uint32_t)) == 0);
    }
    if (m1.cap > 0)
      CHECK(memcmp(m1.slot, m2.slot, m1.cap * sizeof(uint32_t)) == 0);
    for (uint32_t i = 0; i < n; i++)
      CHECK_EQ_INT(ecsi_rowmap_get(&m2, own, ecs_entity_index(own[i])), i);
    ecsi_rowmap_free(w, &m1);
    ecsi_rowmap_free(w, &m2);
  }
  { /* out of memory at each allocation: refused, nothing kept */
    size_t mem0 = ecs_world_memory(w, NULL);
    uint32_t n = 0;
    ecsi_rowmap m;
    ecs_err err;
    for (uint32_t x = 1; x < 5000u; x++) own[n++] = ecs_make_entity(x, 1);
    for (uint32_t x = 9000; x < 9100u; x++) own[n++] = ecs_make_entity(x, 1);
    for (long k = 1;; k++) { /* every allocation of build fails in turn */
      memset(&m, 0, sizeof m);
      a.fail_at = a.calls + k;
      err = ecsi_rowmap_build_ascending(w, &m, own, n);
      a.fail_at = 0;
      if (err == ECS_ERR_OK) break;
      CHECK_EQ_INT(err, ECS_ERR_NOMEM);
      CHECK_EQ_INT(ecs_world_memory(w, NULL), mem0);
    }
    CHECK(ecsi_rowmap_check(&m, own, n) == NULL);
    ecsi_rowmap_free(w, &m);
    CHECK_EQ_INT(ecs_world_memory(w, NULL), mem0);
  }
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Rowmap_build_ascending_equals_build),
  CASE(Rowmap_build_fills_whole_ranges_at_once),
  CASE(Rowmap_random_changes_match_a_model),
  CASE(Rowmap_saturated_displacements_read_the_key),
  CASE(Rowmap_build_refuses_duplicates_and_survives_oom),
};

TEST_MAIN(cases)
