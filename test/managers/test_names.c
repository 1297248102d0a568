/*
** test_names.c -- the names manager (names.h), core only.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "names.h"

static ecs_world *new_world(test_alloc *a, ecs_names **m) {
  ecs_world *w;
  memset(a, 0, sizeof *a);
  w = ecs_world_new(test_allocf, a);
  if (w != NULL && ecs_names_new(w, m) != ECS_ERR_OK) {
    ecs_world_free(w);
    return NULL;
  }
  return w;
}

static ecs_err set(ecs_names *m, ecs_entity e, const char *s) {
  return ecs_names_set(m, e, s, strlen(s));
}

static ecs_entity find(ecs_names *m, const char *s) {
  return ecs_names_find(m, s, strlen(s));
}

TEST(Names_set_get_find_clear) {
  test_alloc a;
  ecs_names *m = NULL, *m2 = NULL;
  ecs_world *w = new_world(&a, &m);
  ecs_entity e, f;
  size_t len = 0;
  const char *s;
  bool done = false;
  CHECK(w != NULL && m != NULL);
  CHECK(ecs_names_of(w) == m);
  CHECK_EQ_INT(ecs_names_new(w, &m2), ECS_ERR_EXISTS);
  CHECK(ecs_create(w, &e) == 0 && ecs_create(w, &f) == 0);
  CHECK(ecs_names_get(m, e, &len) == NULL);
  CHECK(find(m, "player") == ECS_NULL);
  CHECK_EQ_INT(set(m, e, "player"), 0);
  s = ecs_names_get(m, e, &len);
  CHECK(s != NULL && len == 6 && strcmp(s, "player") == 0);
  CHECK(find(m, "player") == e);
  CHECK(find(m, "playe") == ECS_NULL);
  CHECK(find(m, "") == ECS_NULL);
  /* rename */
  CHECK_EQ_INT(set(m, e, "hero"), 0);
  CHECK(find(m, "player") == ECS_NULL);
  CHECK(find(m, "hero") == e);
  /* embedded zero and empty names */
  CHECK_EQ_INT(ecs_names_set(m, f, "a\0b", 3), 0);
  CHECK(ecs_names_find(m, "a\0b", 3) == f);
  CHECK(ecs_names_find(m, "a", 1) == ECS_NULL);
  CHECK_EQ_INT(set(m, f, ""), 0);
  CHECK(find(m, "") == f);
  CHECK(ecs_names_clear(m, f, &done) == ECS_ERR_OK && done);
  CHECK(ecs_names_clear(m, f, &done) == ECS_ERR_OK && !done);
  CHECK(ecs_names_clear(m, f, NULL) == ECS_ERR_OK);
  CHECK(find(m, "") == ECS_NULL);
  CHECK(ecs_names_get(m, f, NULL) == NULL);
  CHECK_EQ_INT(set(m, ECS_NULL, "x"), ECS_ERR_DEAD);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* Several holders: find returns the most recent live one. */
TEST(Names_shared_names_and_death) {
  test_alloc a;
  ecs_names *m;
  ecs_world *w = new_world(&a, &m);
  ecs_entity e[3], r;
  CHECK(w != NULL);
  CHECK(ecs_create_n(w, e, 3) == 0);
  for (int k = 0; k < 3; k++) CHECK_EQ_INT(set(m, e[k], "orc"), 0);
  CHECK(find(m, "orc") == e[2]);
  CHECK_EQ_INT(set(m, e[0], "orc"), 0); /* named again: most recent */
  CHECK(find(m, "orc") == e[0]);
  CHECK(ecs_destroy(w, e[0]));
  CHECK(find(m, "orc") == e[2]); /* vanished at once */
  CHECK(ecs_names_get(m, e[0], NULL) == NULL);
  CHECK_EQ_INT(ecs_names_size(m), 3);
  CHECK_EQ_INT(ecs_world_gc(w, SIZE_MAX), 1);
  CHECK_EQ_INT(ecs_names_size(m), 2);
  CHECK(find(m, "orc") == e[2]);
  CHECK_WORLD(w);
  /* a dead entity's record at a reused index is replaced */
  CHECK(ecs_destroy(w, e[2]));
  {
    /* force reuse of e[2]'s index: the queue needs 1024 waiting */
    ecs_entity many[1100];
    CHECK(ecs_create_n(w, many, 1100) == 0);
    ecs_destroy_n(w, many, 1100);
    CHECK(ecs_create(w, &r) == 0);
    while (ecs_entity_index(r) != ecs_entity_index(e[2])) CHECK(ecs_create(w, &r) == 0);
  }
  CHECK_EQ_INT(set(m, r, "troll"), 0);
  CHECK(ecs_names_get(m, e[2], NULL) == NULL);
  CHECK(find(m, "orc") == e[1]);
  CHECK(find(m, "troll") == r);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* Many names (rehashing), many collisions in the low bits, gc budgets. */
TEST(Names_many_names) {
  test_alloc a;
  ecs_names *m;
  ecs_world *w = new_world(&a, &m);
  static ecs_entity e[5000];
  char buf[32];
  CHECK(w != NULL);
  CHECK(ecs_create_n(w, e, 5000) == 0);
  for (int k = 0; k < 5000; k++) {
    snprintf(buf, sizeof buf, "n%d", k);
    CHECK_EQ_INT(set(m, e[k], buf), 0);
  }
  CHECK_WORLD(w);
  for (int k = 0; k < 5000; k++) {
    snprintf(buf, sizeof buf, "n%d", k);
    CHECK(find(m, buf) == e[k]);
  }
  for (int k = 0; k < 5000; k += 2) ecs_destroy(w, e[k]);
  {
    size_t total = 0, got;
    while ((got = ecs_world_gc(w, 100)) > 0) {
      CHECK(got <= 100);
      total += got;
      CHECK_WORLD(w);
    }
    CHECK_EQ_INT(total, 2500);
  }
  for (int k = 0; k < 5000; k++) {
    snprintf(buf, sizeof buf, "n%d", k);
    CHECK(find(m, buf) == (k % 2 ? e[k] : ECS_NULL));
  }
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static int oom_script(ecs_world *w, ecs_names *m) {
  ecs_entity e[40];
  char buf[16];
  if (ecs_create_n(w, e, 40) != 0) return 0;
  for (int k = 0; k < 40; k++) {
    snprintf(buf, sizeof buf, "e%d", k % 7);
    if (set(m, e[k], buf) != ECS_ERR_OK) return 0;
    if (ecs_world_check(w) != NULL) return 0;
  }
  for (int k = 0; k < 40; k += 3) {
    if (set(m, e[k], "renamed") != ECS_ERR_OK) return 0;
  }
  ecs_destroy(w, e[5]);
  ecs_world_gc(w, SIZE_MAX);
  return 1;
}

TEST(Names_oom_at_every_allocation) {
  int done = 0;
  for (long n = 1; n < 400 && !done; n++) {
    test_alloc a;
    ecs_world *w;
    ecs_names *m = NULL;
    memset(&a, 0, sizeof a);
    a.fail_at = n;
    w = ecs_world_new(test_allocf, &a);
    if (w != NULL) {
      if (ecs_names_new(w, &m) == ECS_ERR_OK) {
        done = oom_script(w, m);
        if (!done) {
          ecs_entity e;
          CHECK_WORLD(w);
          a.fail_at = 0;
          CHECK(ecs_create(w, &e) == 0);
          CHECK(set(m, e, "after") == 0);
          CHECK(find(m, "after") == e);
          CHECK_WORLD(w);
        }
      } else {
        CHECK(ecs_names_of(w) == NULL);
      }
      ecs_world_free(w);
    }
    CHECK_EQ_INT(a.blocks, 0);
  }
  CHECK(done);
}

static const test_case cases[] = {
  CASE(Names_set_get_find_clear),
  CASE(Names_shared_names_and_death),
  CASE(Names_many_names),
  CASE(Names_oom_at_every_allocation),
};

TEST_MAIN(cases)
