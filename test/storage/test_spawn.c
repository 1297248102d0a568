/*
** test_spawn.c -- a batch spawn (src/storage/spawn.h): the values by mode,
** the ADD events in order once every entity is complete, all or nothing.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"
#include "spawn.h"

static const ecs_field_def pos_fields[] = {{"x", ECS_F32}, {"y", ECS_I32}};
static const ecs_field_def tag_fields[] = {{"v", ECS_LUA}, {"n", ECS_U8}};

static ecs_world *new_world(test_alloc *a) {
  memset(a, 0, sizeof *a);
  return ecs_world_new(test_allocf, a);
}

/* Logs the ADDs: the entity, and whether its instances of both
** components were there with their values when it was told. */
typedef struct adds {
  ecs_component *p, *t;
  ecs_entity seen[8];
  int n, complete;
  ecs_err ret;
} adds;

static ecs_err on_add(ecs_world *w, void *m, ecs_entity e, ecs_event ev,
                      void *ud) {
  adds *a = (adds *)ud;
  (void)m;
  if (ev != ECS_EVENT_ADD) return ECS_ERR_OK;
  if (a->n < 8) a->seen[a->n] = e;
  a->n++;
  if (ecs_component_lookup(w, a->p, e) != ECS_NO_INSTANCE &&
      ecs_component_lookup(w, a->t, e) != ECS_NO_INSTANCE)
    a->complete++;
  return a->ret;
}

TEST(Spawn_values_by_mode_and_events_in_order) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *p, *t;
  ecs_spawn_field pf[2], tf[2];
  ecs_spawn_component comp[2];
  ecs_scalar xs[3];
  uint32_t refs[3] = {5, 0, 6}, idx[3];
  ecs_entity es[3];
  ecs_instance rows[3];
  adds log;
  bool created;
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &p), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "T", tag_fields, 2, &t), ECS_ERR_OK);
  memset(&log, 0, sizeof log);
  log.p = p;
  log.t = t;
  CHECK_EQ_INT(ecs_manager_listen(w, p, ECS_EVENT_ADD, on_add, &log), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_manager_listen(w, t, ECS_EVENT_ADD, on_add, &log), ECS_ERR_OK);
  for (int i = 0; i < 3; i++) xs[i].f = 1.5 * i;
  memset(pf, 0, sizeof pf);
  memset(tf, 0, sizeof tf);
  pf[0].mode = ECS_SPAWN_EACH;
  pf[0].each = xs;
  pf[1].mode = ECS_SPAWN_ONE;
  pf[1].one.i = -4;
  tf[0].mode = ECS_SPAWN_REFS;
  tf[0].refs = refs;
  tf[1].mode = ECS_SPAWN_ZERO;
  comp[0].c = p;
  comp[0].field = pf;
  comp[1].c = t;
  comp[1].field = tf;
  CHECK_EQ_INT(ecs_spawn(w, comp, 2, 3, es, idx, rows, &created), ECS_ERR_OK);
  CHECK(created);
  for (int i = 0; i < 3; i++) {
    ecs_instance r = ecs_component_lookup(w, p, es[i]), q;
    CHECK(r != ECS_NO_INSTANCE);
    CHECK(((float *)ecs_component_column(p, 0))[r] == (float)(1.5 * i));
    CHECK_EQ_INT(((int32_t *)ecs_component_column(p, 1))[r], -4);
    q = ecs_component_lookup(w, t, es[i]);
    CHECK(q != ECS_NO_INSTANCE);
    CHECK_EQ_INT(((uint32_t *)ecs_component_column(t, 0))[q], refs[i]);
    CHECK_EQ_INT(((uint8_t *)ecs_component_column(t, 1))[q], 0);
  }
  /* entity by entity, each one's components in order, all complete */
  CHECK_EQ_INT(log.n, 6);
  CHECK_EQ_INT(log.complete, 6);
  for (int i = 0; i < 6; i++) CHECK(log.seen[i] == es[i / 2]);
  /* a listener's error stops the reports; the entities stay */
  log.n = 0;
  log.ret = ECS_ERR_INVALID;
  tf[0].mode = ECS_SPAWN_ZERO;
  CHECK_EQ_INT(ecs_spawn(w, comp, 2, 3, es, idx, rows, &created), ECS_ERR_INVALID);
  CHECK(created);
  CHECK_EQ_INT(log.n, 1);
  CHECK_EQ_INT(ecs_count(w), 6);
  CHECK(ecs_manager_unlisten(w, p, on_add, &log));
  CHECK(ecs_manager_unlisten(w, t, on_add, &log));
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* Nothing changes when one component cannot take them (pinned), nor when
** memory runs out at any allocation. */
TEST(Spawn_all_or_nothing) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *p, *t;
  ecs_spawn_field pf[2], tf[2];
  ecs_spawn_component comp[2];
  uint32_t idx[4];
  ecs_entity es[4];
  ecs_instance rows[4];
  bool created = true;
  ecs_err err;
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &p), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "T", tag_fields, 2, &t), ECS_ERR_OK);
  memset(pf, 0, sizeof pf);
  memset(tf, 0, sizeof tf);
  pf[0].mode = ECS_SPAWN_ONE;
  pf[0].one.f = 2.0;
  comp[0].c = p;
  comp[0].field = pf;
  comp[1].c = t;
  comp[1].field = tf;
  CHECK_EQ_INT(ecs_component_pin(w, t), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_spawn(w, comp, 2, 4, es, idx, rows, &created), ECS_ERR_PINNED);
  CHECK(!created);
  CHECK_EQ_INT(ecs_count(w), 0);
  CHECK_EQ_INT(ecs_component_size(p), 0);
  ecs_component_unpin(w, t);
  for (size_t fail = 0;; fail++) {
    a.fail_at = a.calls + (long)fail + 1;
    err = ecs_spawn(w, comp, 2, 4, es, idx, rows, &created);
    a.fail_at = 0;
    if (err == ECS_ERR_OK) break;
    CHECK_EQ_INT(err, ECS_ERR_NOMEM);
    CHECK(!created);
    CHECK_EQ_INT(ecs_count(w), 0);
    CHECK_EQ_INT(ecs_component_size(p), 0);
    CHECK_EQ_INT(ecs_component_size(t), 0);
    CHECK_WORLD(w);
  }
  CHECK(created);
  CHECK_EQ_INT(ecs_count(w), 4);
  CHECK_EQ_INT(ecs_component_size(t), 4);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Spawn_values_by_mode_and_events_in_order),
  CASE(Spawn_all_or_nothing),
};

TEST_MAIN(cases)
