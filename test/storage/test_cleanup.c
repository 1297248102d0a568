/*
** test_cleanup.c -- entity fields that clean up (cleanup.c) through the
** core alone: each policy, chains and cycles without recursion, one sweep
** per hold, listeners that raise or change the world during a sweep, and
** the policies' own errors.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"

static const ecs_field_def ref_fields[] = {{"to", ECS_ENTITY}, {"w", ECS_F32}};

typedef struct fixture {
  test_alloc a;
  ecs_world *w;
  ecs_component *Clear, *Remove, *Destroy;
} fixture;

static int setup(fixture *f) {
  memset(f, 0, sizeof *f);
  f->w = ecs_world_new(test_allocf, &f->a);
  return f->w != NULL &&
         ecs_component_new(f->w, "Clear", ref_fields, 2, &f->Clear) == ECS_ERR_OK &&
         ecs_component_new(f->w, "Remove", ref_fields, 2, &f->Remove) == ECS_ERR_OK &&
         ecs_component_new(f->w, "Destroy", ref_fields, 2, &f->Destroy) == ECS_ERR_OK &&
         ecs_component_set_cleanup(f->w, f->Clear, 0, ECS_CLEANUP_CLEAR) == ECS_ERR_OK &&
         ecs_component_set_cleanup(f->w, f->Remove, 0, ECS_CLEANUP_REMOVE) == ECS_ERR_OK &&
         ecs_component_set_cleanup(f->w, f->Destroy, 0, ECS_CLEANUP_DESTROY) == ECS_ERR_OK;
}

static ecs_entity make(fixture *f) {
  ecs_entity e = ECS_NULL;
  (void)ecs_create(f->w, &e);
  return e;
}

/* holder gets c with to = target, w = 7. */
static int hold(fixture *f, ecs_component *c, ecs_entity holder, ecs_entity target) {
  ecs_instance i;
  if (ecs_component_add(f->w, c, holder, &i, NULL) != ECS_ERR_OK) return 0;
  ((ecs_entity *)ecs_component_column(c, 0))[i] = target;
  ((float *)ecs_component_column(c, 1))[i] = 7.0f;
  return 1;
}

static ecs_entity to_of(fixture *f, ecs_component *c, ecs_entity holder) {
  ecs_instance i = ecs_component_lookup(f->w, c, holder);
  return i == ECS_NO_INSTANCE ? (ecs_entity)UINT32_MAX
                              : ((ecs_entity *)ecs_component_column(c, 0))[i];
}

TEST(Cleanup_each_policy) {
  fixture f;
  ecs_entity t, u, h1, h2, h3, h4;
  CHECK(setup(&f));
  t = make(&f), u = make(&f);
  h1 = make(&f), h2 = make(&f), h3 = make(&f), h4 = make(&f);
  CHECK(hold(&f, f.Clear, h1, t) && hold(&f, f.Remove, h2, t) &&
        hold(&f, f.Destroy, h3, t) && hold(&f, f.Clear, h4, u));
  CHECK(hold(&f, f.Remove, h1, u)); /* h1: two components, two targets */
  CHECK_EQ_INT(ecs_component_cleanup(f.Destroy, 0), ECS_CLEANUP_DESTROY);
  CHECK_EQ_INT(ecs_component_cleanup(f.Destroy, 1), ECS_CLEANUP_NONE);
  CHECK(ecs_destroy(f.w, t));
  CHECK(to_of(&f, f.Clear, h1) == ECS_NULL);
  CHECK(to_of(&f, f.Remove, h1) == u);             /* another target */
  CHECK(to_of(&f, f.Remove, h2) == (ecs_entity)UINT32_MAX); /* removed */
  CHECK(ecs_alive(f.w, h2));
  CHECK(!ecs_alive(f.w, h3));
  CHECK(to_of(&f, f.Clear, h4) == u);
  CHECK(ecs_destroy(f.w, u));
  CHECK(to_of(&f, f.Clear, h4) == ECS_NULL);
  CHECK(ecs_component_lookup(f.w, f.Remove, h1) == ECS_NO_INSTANCE);
  CHECK(ecs_world_check(f.w) == NULL);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(Cleanup_chains_and_cycles_end_without_recursion) {
  fixture f;
  static ecs_entity chain[20000];
  ecs_entity x, y, self;
  CHECK(setup(&f));
  for (int k = 0; k < 20000; k++) chain[k] = make(&f);
  /* chain[k + 1] holds chain[k]: destroying the head takes them all */
  for (int k = 0; k + 1 < 20000; k++)
    CHECK(hold(&f, f.Destroy, chain[k + 1], chain[k]));
  CHECK(ecs_destroy(f.w, chain[0]));
  CHECK_EQ_INT(ecs_count(f.w), 0);
  x = make(&f), y = make(&f), self = make(&f);
  CHECK(hold(&f, f.Destroy, x, y) && hold(&f, f.Destroy, y, x));
  CHECK(hold(&f, f.Destroy, self, self));
  CHECK(ecs_destroy(f.w, x));
  CHECK(!ecs_alive(f.w, y));
  /* a chain made in the other order: one pass per link, still correct */
  for (int k = 0; k < 50; k++) chain[k] = make(&f);
  for (int k = 0; k + 1 < 50; k++)
    CHECK(hold(&f, f.Destroy, chain[k], chain[k + 1]));
  CHECK(ecs_destroy(f.w, chain[49]));
  for (int k = 0; k < 50; k++) CHECK(!ecs_alive(f.w, chain[k]));
  CHECK(ecs_destroy(f.w, self));
  CHECK_EQ_INT(ecs_count(f.w), 0);
  CHECK(ecs_world_check(f.w) == NULL);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(Cleanup_hold_sweeps_once_at_release) {
  fixture f;
  ecs_entity t[4], h[4];
  CHECK(setup(&f));
  for (int k = 0; k < 4; k++) {
    t[k] = make(&f);
    h[k] = make(&f);
    CHECK(hold(&f, f.Clear, h[k], t[k]));
  }
  ecs_cleanup_hold(f.w);
  ecs_cleanup_hold(f.w); /* nested */
  CHECK(ecs_destroy(f.w, t[0]));
  CHECK(to_of(&f, f.Clear, h[0]) == t[0]); /* not yet */
  CHECK_EQ_INT(ecs_cleanup_release(f.w), ECS_ERR_OK);
  CHECK(to_of(&f, f.Clear, h[0]) == t[0]); /* the outer hold remains */
  CHECK_EQ_INT(ecs_cleanup_release(f.w), ECS_ERR_OK);
  CHECK(to_of(&f, f.Clear, h[0]) == ECS_NULL);
  CHECK_EQ_INT(ecs_cleanup_release(f.w), ECS_ERR_OK); /* unbalanced: nothing */
  CHECK_EQ_INT(ecs_destroy_n(f.w, t + 1, 3), 3);
  for (int k = 1; k < 4; k++) CHECK(to_of(&f, f.Clear, h[k]) == ECS_NULL);
  /* a handle already dead when written goes at the next destroy */
  {
    ecs_entity dead = make(&f), other = make(&f);
    CHECK(ecs_destroy(f.w, dead));
    CHECK(hold(&f, f.Clear, h[0], dead));
    CHECK(to_of(&f, f.Clear, h[0]) == dead);
    CHECK(ecs_destroy(f.w, other));
    CHECK(to_of(&f, f.Clear, h[0]) == ECS_NULL);
  }
  /* many at once */
  {
    ecs_entity t2[40], h2[40];
    for (int k = 0; k < 40; k++) {
      t2[k] = make(&f);
      h2[k] = make(&f);
      CHECK(hold(&f, f.Clear, h2[k], t2[k]));
    }
    CHECK_EQ_INT(ecs_destroy_n(f.w, t2, 40), 40);
    for (int k = 0; k < 40; k++) CHECK(to_of(&f, f.Clear, h2[k]) == ECS_NULL);
  }
  CHECK(ecs_world_check(f.w) == NULL);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* A REMOVE listener: fails, and (ud != NULL) destroys *ud once. */
typedef struct lis_state {
  fixture *f;
  int calls;
  ecs_entity victim;
} lis_state;

static ecs_err failing_listener(ecs_world *w, void *manager, ecs_entity e,
                                ecs_event event, void *ud) {
  lis_state *s = (lis_state *)ud;
  (void)manager;
  (void)e;
  (void)event;
  s->calls++;
  if (s->victim != ECS_NULL) {
    ecs_entity v = s->victim;
    s->victim = ECS_NULL;
    (void)ecs_destroy(w, v); /* a destroy in the middle of a sweep */
  }
  return ECS_ERR_INVALID;
}

TEST(Cleanup_listeners_that_fail_or_destroy_during_a_sweep) {
  fixture f;
  lis_state s;
  ecs_entity t, h1, h2, t2, h3;
  CHECK(setup(&f));
  memset(&s, 0, sizeof s);
  s.f = &f;
  t = make(&f), h1 = make(&f), h2 = make(&f), t2 = make(&f), h3 = make(&f);
  CHECK(hold(&f, f.Remove, h1, t) && hold(&f, f.Remove, h2, t));
  CHECK(hold(&f, f.Clear, h3, t2));
  s.victim = t2;
  CHECK_EQ_INT(ecs_manager_listen(f.w, f.Remove, ECS_EVENT_REMOVE,
                                  failing_listener, &s), ECS_ERR_OK);
  {
    bool gone;
    ecs_err err = ecs_destroy_report(f.w, t, &gone);
    CHECK(gone);
    CHECK_EQ_INT(err, ECS_ERR_INVALID); /* the listener's, after the sweep */
  }
  CHECK_EQ_INT(s.calls, 2);
  CHECK(ecs_component_lookup(f.w, f.Remove, h1) == ECS_NO_INSTANCE);
  CHECK(ecs_component_lookup(f.w, f.Remove, h2) == ECS_NO_INSTANCE);
  CHECK(!ecs_alive(f.w, t2));               /* destroyed by the listener */
  CHECK(to_of(&f, f.Clear, h3) == ECS_NULL); /* and swept all the same */
  CHECK(ecs_world_check(f.w) == NULL);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/*
** A REMOVE listener that redefines the component being swept (hot reload
** from an observer): the sweep must read the new schema, never the old
** field numbers in it. Three layouts: the policy field moves to another
** number (holders left naming the dead entity), an unrelated u32 takes its
** number (a live entity's holder destroyed because the u32 equalled the
** dead id), the fields shrink to u8 (a read past the column: ASan).
*/
typedef struct redef_state {
  ecs_component *c;
  const ecs_field_def *defs;
  const uint32_t *from;
  uint32_t n, policy_field; /* ECS_NO_FIELD: no policy in the new schema */
  ecs_cleanup policy;
  int calls;
} redef_state;

static ecs_err redefining_listener(ecs_world *w, void *manager, ecs_entity e,
                                   ecs_event event, void *ud) {
  redef_state *s = (redef_state *)ud;
  (void)manager;
  (void)e;
  (void)event;
  if (s->calls++ > 0) return ECS_ERR_OK;
  if (ecs_component_redefine(w, s->c, s->defs, s->n, s->from, NULL, NULL,
                             NULL, 0) != ECS_ERR_OK)
    return ECS_ERR_INVALID;
  if (s->policy_field != ECS_NO_FIELD)
    (void)ecs_component_set_cleanup(w, s->c, s->policy_field, s->policy);
  return ECS_ERR_OK;
}

/* Does any live holder of c name a dead entity in a policy field? */
static int names_dead(ecs_world *w, ecs_component *c) {
  for (uint32_t k = 0; k < ecs_component_field_count(c); k++) {
    const ecs_entity *v = (const ecs_entity *)ecs_component_column(c, k);
    if (ecs_component_cleanup(c, k) == ECS_CLEANUP_NONE) continue;
    for (uint32_t i = 0; i < ecs_component_size(c); i++)
      if (ecs_alive(w, ecs_component_entities(c)[i]) && v[i] != ECS_NULL &&
          !ecs_alive(w, v[i]))
        return 1;
  }
  return 0;
}

TEST(Cleanup_a_listener_redefines_the_component_during_the_sweep) {
  static const ecs_field_def first[] = {{"n", ECS_U32}, {"to", ECS_ENTITY}};
  static const ecs_field_def moved[] = {{"to", ECS_ENTITY}, {"n", ECS_U32}};
  static const ecs_field_def small[] = {{"a", ECS_U8}, {"b", ECS_U8}, {"c", ECS_U8}};
  static const uint32_t moved_from[] = {1, 0};
  static const uint32_t small_from[] = {ECS_NO_FIELD, ECS_NO_FIELD, ECS_NO_FIELD};
  for (int layout = 0; layout < 3; layout++) {
    test_alloc a;
    ecs_world *w;
    ecs_component *c;
    redef_state s;
    ecs_entity t, other, hs[40], odd;
    ecs_instance i;
    memset(&a, 0, sizeof a);
    memset(&s, 0, sizeof s);
    CHECK((w = ecs_world_new(test_allocf, &a)) != NULL);
    /* layout 1 starts from the moved order, so that n takes to's number */
    CHECK_EQ_INT(ecs_component_new(w, "Rd", layout == 1 ? moved : first, 2, &c), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_component_set_cleanup(w, c, layout == 1 ? 0 : 1,
                                           layout == 1 ? ECS_CLEANUP_DESTROY
                                                       : ECS_CLEANUP_REMOVE),
                 ECS_ERR_OK);
    CHECK(ecs_create(w, &t) == ECS_ERR_OK && ecs_create(w, &other) == ECS_ERR_OK);
    for (int k = 0; k < 40; k++) {
      CHECK(ecs_create(w, &hs[k]) == ECS_ERR_OK);
      CHECK(ecs_component_add(w, c, hs[k], &i, NULL) == ECS_ERR_OK);
      ((uint32_t *)ecs_component_column(c, layout == 1 ? 1 : 0))[i] = 5;
      ((ecs_entity *)ecs_component_column(c, layout == 1 ? 0 : 1))[i] = t;
    }
    /* a holder of a live entity whose u32 equals the dead one's id */
    CHECK(ecs_create(w, &odd) == ECS_ERR_OK);
    CHECK(ecs_component_add(w, c, odd, &i, NULL) == ECS_ERR_OK);
    ((uint32_t *)ecs_component_column(c, layout == 1 ? 1 : 0))[i] = (uint32_t)t;
    ((ecs_entity *)ecs_component_column(c, layout == 1 ? 0 : 1))[i] = other;
    s.c = c;
    s.n = layout == 2 ? 3 : 2;
    s.defs = layout == 0 ? moved : layout == 1 ? first : small;
    s.from = layout == 2 ? small_from : moved_from;
    s.policy_field = layout == 0 ? 0 : layout == 1 ? 1 : ECS_NO_FIELD;
    s.policy = layout == 1 ? ECS_CLEANUP_DESTROY : ECS_CLEANUP_REMOVE;
    CHECK_EQ_INT(ecs_manager_listen(w, c, ECS_EVENT_REMOVE, redefining_listener, &s),
                 ECS_ERR_OK);
    CHECK(ecs_destroy(w, t));
    CHECK(s.calls >= 1);
    CHECK(!names_dead(w, c));
    CHECK(ecs_alive(w, odd));
    CHECK(ecs_component_lookup(w, c, odd) != ECS_NO_INSTANCE);
    if (layout == 0) /* every holder of t lost Rd */
      for (int k = 0; k < 40; k++)
        CHECK(ecs_component_lookup(w, c, hs[k]) == ECS_NO_INSTANCE);
    if (layout == 1) /* every holder of t was destroyed */
      for (int k = 0; k < 40; k++) CHECK(!ecs_alive(w, hs[k]));
    CHECK_WORLD(w);
    ecs_world_free(w);
    CHECK_EQ_INT(a.blocks, 0);
  }
}

TEST(Cleanup_policy_errors) {
  fixture f;
  ecs_component *Tag;
  CHECK(setup(&f));
  CHECK_EQ_INT(ecs_component_new(f.w, "Tag", NULL, 0, &Tag), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_set_cleanup(f.w, f.Clear, 1, ECS_CLEANUP_CLEAR),
               ECS_ERR_INVALID); /* an f32 */
  CHECK_EQ_INT(ecs_component_set_cleanup(f.w, f.Clear, 2, ECS_CLEANUP_CLEAR),
               ECS_ERR_UNKNOWN_FIELD);
  CHECK_EQ_INT(ecs_component_set_cleanup(f.w, Tag, 0, ECS_CLEANUP_CLEAR),
               ECS_ERR_UNKNOWN_FIELD);
  CHECK_EQ_INT(ecs_component_set_cleanup(f.w, f.Clear, 0, (ecs_cleanup)9),
               ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_component_cleanup(f.Clear, 0), ECS_CLEANUP_CLEAR);
  CHECK_EQ_INT(ecs_component_cleanup(f.Clear, 7), ECS_CLEANUP_NONE);
  /* policies off: a destroy no longer sweeps */
  CHECK_EQ_INT(ecs_component_set_cleanup(f.w, f.Clear, 0, ECS_CLEANUP_NONE), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_set_cleanup(f.w, f.Remove, 0, ECS_CLEANUP_NONE), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_set_cleanup(f.w, f.Destroy, 0, ECS_CLEANUP_NONE), ECS_ERR_OK);
  {
    ecs_entity t = make(&f), h = make(&f);
    CHECK(hold(&f, f.Clear, h, t));
    CHECK(ecs_destroy(f.w, t));
    CHECK(to_of(&f, f.Clear, h) == t);
  }
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Cleanup_each_policy),
  CASE(Cleanup_chains_and_cycles_end_without_recursion),
  CASE(Cleanup_hold_sweeps_once_at_release),
  CASE(Cleanup_listeners_that_fail_or_destroy_during_a_sweep),
  CASE(Cleanup_a_listener_redefines_the_component_during_the_sweep),
  CASE(Cleanup_policy_errors),
};

TEST_MAIN(cases)
