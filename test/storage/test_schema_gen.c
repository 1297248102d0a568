/*
** test_schema_gen.c -- the counts of redefinitions (src/storage/schema_gen.h):
** each redefinition moves its component's count and its world's; a
** redefinition that fails, or a schema that stays, moves neither.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"
#include "schema_gen.h"

static const ecs_field_def pos[] = {{"x", ECS_F32}, {"y", ECS_F32}};
static const ecs_field_def pos3[] = {{"x", ECS_F32}, {"y", ECS_F32}, {"z", ECS_F32}};

TEST(Schema_gen_counts_redefinitions) {
  test_alloc a;
  ecs_world *w;
  ecs_component *p, *q;
  uint32_t from[3] = {0, 1, ECS_NO_FIELD}, bad[3] = {0, 0, ECS_NO_FIELD};
  memset(&a, 0, sizeof a);
  w = ecs_world_new(test_allocf, &a);
  CHECK_EQ_INT(ecs_component_new(w, "P", pos, 2, &p), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "Q", pos, 2, &q), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_world_schema_gen(w), 0);
  CHECK_EQ_INT(ecs_component_schema_gen(p), 0);
  CHECK_EQ_INT(ecs_component_redefine(w, p, pos3, 3, from, NULL, NULL, NULL, 0),
               ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_schema_gen(p), 1);
  CHECK_EQ_INT(ecs_component_schema_gen(q), 0);
  CHECK_EQ_INT(ecs_world_schema_gen(w), 1);
  CHECK_EQ_INT(ecs_component_redefine(w, q, pos3, 3, from, NULL, NULL, NULL, 0),
               ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_schema_gen(q), 1);
  CHECK_EQ_INT(ecs_world_schema_gen(w), 2);
  /* refused (an old field taken twice): nothing moves */
  CHECK_EQ_INT(ecs_component_redefine(w, p, pos3, 3, bad, NULL, NULL, NULL, 0),
               ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_component_schema_gen(p), 1);
  CHECK_EQ_INT(ecs_world_schema_gen(w), 2);
  /* out of memory at every allocation: nothing moves until it succeeds */
  for (long fail = 1;; fail++) {
    ecs_err err;
    a.fail_at = a.calls + fail;
    err = ecs_component_redefine(w, p, pos, 2, from, NULL, NULL, NULL, 0);
    a.fail_at = 0;
    if (err == ECS_ERR_OK) break;
    CHECK_EQ_INT(err, ECS_ERR_NOMEM);
    CHECK_EQ_INT(ecs_component_schema_gen(p), 1);
    CHECK_EQ_INT(ecs_world_schema_gen(w), 2);
  }
  CHECK_EQ_INT(ecs_component_schema_gen(p), 2);
  CHECK_EQ_INT(ecs_world_schema_gen(w), 3);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Schema_gen_counts_redefinitions),
};

TEST_MAIN(cases)
