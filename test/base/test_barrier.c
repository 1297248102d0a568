/*
** test_barrier.c -- the change barrier (src/base/barrier.h): subscribers
** run in rank order whatever order they came in, a subscriber is there
** once, a kind holds ECSI_BARRIER_MAX, an ask stops at the first answer,
** unsubscribing leaves the others in order; and the world's parts
** subscribe while they live: the journal while open, the queries while
** any exists, the transform with the manager; a world with none of them
** hears nothing.
*/
#include "../support/harness.h"
#include "ecs_private.h"
#include "component.h"
#include "journal.h"
#include "query.h"
#include "transform.h"

typedef struct trace {
  int order[16];
  int n;
} trace;

typedef struct who {
  trace *t;
  int id;
  int answer;
} who;

static int heard(ecs_world *w, void *self, const ecsi_change *ch) {
  who *s = (who *)self;
  (void)w;
  (void)ch;
  s->t->order[s->t->n++] = s->id;
  return s->answer;
}

TEST(Barrier_runs_subscribers_in_rank_order_then_arrival) {
  ecsi_barrier b;
  trace t = {{0}, 0};
  who a = {&t, 1, 0}, c = {&t, 2, 0}, d = {&t, 3, 0}, e = {&t, 4, 0};
  ecsi_change ch = {0};
  memset(&b, 0, sizeof b);
  CHECK_EQ_INT(ecsi_subscribe(&b, ECSI_EV_ENTITY_DIED, ECSI_RANK_PERSIST, heard, &a), ECS_ERR_OK);
  CHECK_EQ_INT(ecsi_subscribe(&b, ECSI_EV_ENTITY_DIED, ECSI_RANK_QUERY, heard, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecsi_subscribe(&b, ECSI_EV_ENTITY_DIED, ECSI_RANK_MANAGERS, heard, &d), ECS_ERR_OK);
  CHECK_EQ_INT(ecsi_subscribe(&b, ECSI_EV_ENTITY_DIED, ECSI_RANK_QUERY, heard, &e), ECS_ERR_OK);
  /* the same subscriber twice: once */
  CHECK_EQ_INT(ecsi_subscribe(&b, ECSI_EV_ENTITY_DIED, ECSI_RANK_QUERY, heard, &c), ECS_ERR_OK);
  CHECK_EQ_INT(b.count[ECSI_EV_ENTITY_DIED], 4);
  CHECK_EQ_INT(b.count[ECSI_EV_ENTITY_DYING], 0);
  CHECK_EQ_INT(ecsi_barrier_emit(&b, NULL, ECSI_EV_ENTITY_DIED, &ch), 0);
  CHECK_EQ_INT(t.n, 4);
  CHECK_EQ_INT(t.order[0], 3); /* managers */
  CHECK_EQ_INT(t.order[1], 2); /* query, first come */
  CHECK_EQ_INT(t.order[2], 4); /* query, second */
  CHECK_EQ_INT(t.order[3], 1); /* persist */
  /* unsubscribing keeps the others' order; unknown ones are ignored */
  ecsi_unsubscribe(&b, ECSI_EV_ENTITY_DIED, heard, &c);
  ecsi_unsubscribe(&b, ECSI_EV_ENTITY_DIED, heard, &c);
  ecsi_unsubscribe(&b, ECSI_EV_ENTITY_DYING, heard, &a);
  CHECK_EQ_INT(b.count[ECSI_EV_ENTITY_DIED], 3);
  t.n = 0;
  (void)ecsi_barrier_emit(&b, NULL, ECSI_EV_ENTITY_DIED, &ch);
  CHECK_EQ_INT(t.n, 3);
  CHECK_EQ_INT(t.order[0], 3);
  CHECK_EQ_INT(t.order[1], 4);
  CHECK_EQ_INT(t.order[2], 1);
}

TEST(Barrier_an_ask_stops_at_the_first_answer_and_kinds_are_bounded) {
  ecsi_barrier b;
  trace t = {{0}, 0};
  who s[ECSI_BARRIER_MAX + 1];
  ecsi_change ch = {0};
  memset(&b, 0, sizeof b);
  for (int k = 0; k <= ECSI_BARRIER_MAX; k++) {
    s[k].t = &t;
    s[k].id = k;
    s[k].answer = k == 1 ? 1 : 0;
  }
  for (int k = 0; k < ECSI_BARRIER_MAX; k++)
    CHECK_EQ_INT(ecsi_subscribe(&b, ECSI_EV_REF_DROPPED, ECSI_RANK_STORAGE, heard, &s[k]),
                 ECS_ERR_OK);
  CHECK_EQ_INT(ecsi_subscribe(&b, ECSI_EV_REF_DROPPED, ECSI_RANK_STORAGE, heard,
                              &s[ECSI_BARRIER_MAX]),
               ECS_ERR_FULL);
  CHECK_EQ_INT(ecsi_barrier_emit(&b, NULL, ECSI_EV_REF_DROPPED, &ch), 1);
  CHECK_EQ_INT(t.n, 2); /* 0 said nothing, 1 answered: the rest did not run */
}

static const ecs_field_def pos[] = {{"x", ECS_F32}, {"y", ECS_F32}};

TEST(Barrier_world_parts_subscribe_while_they_live) {
  ecs_world *w = ecs_world_new(NULL, NULL);
  ecs_component *P;
  ecs_query *q1, *q2;
  ecs_journal *j;
  ecs_transform *tr;
  ecs_entity e;
  CHECK(w != NULL);
  for (int k = 0; k < ECSI_EV__COUNT; k++) CHECK_EQ_INT(w->barrier.count[k], 0);
  CHECK_EQ_INT(ecs_component_new(w, "P", pos, 2, &P), ECS_ERR_OK);
  CHECK(!ecsi_heard(w, ECSI_EV_INSTANCE_ADDED));
  /* the queries: with the first, until the last */
  CHECK_EQ_INT(ecs_query_new(w, &P, 1, NULL, 0, &q1), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_new(w, &P, 1, NULL, 0, &q2), ECS_ERR_OK);
  CHECK_EQ_INT(w->barrier.count[ECSI_EV_INSTANCE_ADDED], 1);
  CHECK_EQ_INT(w->barrier.count[ECSI_EV_ENTITY_DIED], 1);
  ecs_query_free(w, q1);
  CHECK(ecsi_heard(w, ECSI_EV_INSTANCE_ADDED));
  ecs_query_free(w, q2);
  CHECK(!ecsi_heard(w, ECSI_EV_INSTANCE_ADDED));
  CHECK(!ecsi_heard(w, ECSI_EV_ENTITY_DIED));
  /* the journal: while open */
  CHECK_EQ_INT(ecs_journal_open(w, NULL, &j, NULL), ECS_ERR_OK);
  CHECK(ecsi_heard(w, ECSI_EV_WRITE_BEGIN));
  CHECK(ecsi_heard(w, ECSI_EV_INDEX_TAKEN));
  CHECK(ecsi_heard(w, ECSI_EV_REF_DROPPED));
  ecs_journal_close(w, j);
  for (int k = 0; k < ECSI_EV__COUNT; k++) CHECK_EQ_INT(w->barrier.count[k], 0);
  /* the transform: with the manager, before the queries */
  CHECK_EQ_INT(ecs_transform_new(w, &tr), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_new(w, &P, 1, NULL, 0, &q1), ECS_ERR_OK);
  CHECK_EQ_INT(w->barrier.count[ECSI_EV_ENTITY_DIED], 2);
  CHECK_EQ_INT(w->barrier.sub[ECSI_EV_ENTITY_DIED][0].rank, ECSI_RANK_MANAGERS);
  CHECK_EQ_INT(w->barrier.sub[ECSI_EV_ENTITY_DIED][1].rank, ECSI_RANK_QUERY);
  /* and what they hear keeps the world whole */
  CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_add(w, P, e, NULL, NULL), ECS_ERR_OK);
  CHECK(ecs_destroy(w, e));
  CHECK(ecs_world_check(w) == NULL);
  ecs_world_free(w);
}

static const test_case cases[] = {
  CASE(Barrier_runs_subscribers_in_rank_order_then_arrival),
  CASE(Barrier_an_ask_stops_at_the_first_answer_and_kinds_are_bounded),
  CASE(Barrier_world_parts_subscribe_while_they_live),
};

TEST_MAIN(cases)
