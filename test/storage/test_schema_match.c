/*
** test_schema_match.c -- a new schema matched to a component's old one
** (schema_match.h), core only: by name, through a rename map, the map's
** rules and their messages, the same-schema tests.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"
#include "schema_match.h"

static ecs_rename R(const char *o, const char *n) {
  ecs_rename r;
  r.old_name = o;
  r.new_name = n;
  r.old_len = strlen(o);
  r.new_len = strlen(n);
  return r;
}

TEST(SchemaMatch_by_name_and_rename) {
  test_alloc a;
  ecs_world *w;
  ecs_component *c = NULL, *d = NULL;
  ecs_field_def old[] = {{"x", ECS_F64}, {"y", ECS_F64}, {"hp", ECS_I32}};
  ecs_field_def nw[] = {{"health", ECS_F64}, {"x", ECS_F64}, {"z", ECS_F64}};
  ecs_rename ren[3];
  uint32_t from[3];
  char msg[256];
  memset(&a, 0, sizeof a);
  w = ecs_world_new(test_allocf, &a);
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_component_new(w, "P", old, 3, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "Q", old, 3, &d), ECS_ERR_OK);
  /* by name only */
  CHECK_EQ_INT(ecs_schema_match(c, nw, 3, NULL, 0, from, msg, sizeof msg), ECS_ERR_OK);
  CHECK(from[0] == ECS_NO_FIELD && from[1] == 0 && from[2] == ECS_NO_FIELD);
  /* hp -> health; y -> z */
  ren[0] = R("hp", "health");
  ren[1] = R("y", "z");
  CHECK_EQ_INT(ecs_schema_match(c, nw, 3, ren, 2, from, msg, sizeof msg), ECS_ERR_OK);
  CHECK(from[0] == 2 && from[1] == 0 && from[2] == 1);
  /* x renamed away: its name gets nothing */
  ren[0] = R("x", "z");
  CHECK_EQ_INT(ecs_schema_match(c, nw, 3, ren, 1, from, msg, sizeof msg), ECS_ERR_OK);
  CHECK(from[0] == ECS_NO_FIELD && from[1] == ECS_NO_FIELD && from[2] == 0);
  /* the rules, in the map's order */
  ren[0] = R("w", "x");
  CHECK_EQ_INT(ecs_schema_match(c, nw, 3, ren, 1, from, msg, sizeof msg), ECS_ERR_INVALID);
  CHECK(strcmp(msg, "rename: 'w' is not a field of P") == 0);
  ren[0] = R("y", "q");
  CHECK_EQ_INT(ecs_schema_match(c, nw, 3, ren, 1, from, msg, sizeof msg), ECS_ERR_INVALID);
  CHECK(strcmp(msg, "rename: 'q' is not a field of the new schema") == 0);
  ren[0] = R("y", "z");
  ren[1] = R("hp", "z");
  CHECK_EQ_INT(ecs_schema_check_renames(c, nw, 3, ren, 1, msg, sizeof msg), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_schema_match(c, nw, 3, ren, 2, from, msg, sizeof msg), ECS_ERR_INVALID);
  CHECK(strcmp(msg, "rename: two fields renamed to 'z'") == 0);
  ren[0] = R("y", "x");
  CHECK_EQ_INT(ecs_schema_match(c, nw, 3, ren, 1, from, msg, sizeof msg), ECS_ERR_INVALID);
  CHECK(strcmp(msg, "rename: 'x' is kept as a field, so another field cannot "
                    "be renamed to it (rename it too)") == 0);
  ren[1] = R("x", "z");
  CHECK_EQ_INT(ecs_schema_match(c, nw, 3, ren, 2, from, msg, sizeof msg), ECS_ERR_OK);
  CHECK(from[1] == 1 && from[2] == 0);
  /* same schema, same fields */
  from[0] = 0, from[1] = 1, from[2] = 2;
  CHECK(ecs_schema_same_as(c, old, 3, from));
  CHECK(!ecs_schema_same_as(c, nw, 3, from));
  CHECK(!ecs_schema_same_as(c, old, 2, from));
  CHECK(ecs_schema_same_fields(c, d));
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static const test_case cases[] = {
  CASE(SchemaMatch_by_name_and_rename),
};

TEST_MAIN(cases)
