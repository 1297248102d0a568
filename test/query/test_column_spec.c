/*
** test_column_spec.c -- q:columns specs as text (column_spec.h), core
** only: "Component.field", ":in", "entity", and each refusal with its
** code and message.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"
#include "column_spec.h"
#include "query.h"
#include "transform.h"

static ecs_err spec(const ecs_query *q, const char *s, ecs_column_spec *out,
                    char *msg) {
  return ecs_query_column_spec(q, s, strlen(s), out, msg, 128);
}

TEST(ColumnSpec_forms_and_refusals) {
  test_alloc a;
  ecs_world *w;
  ecs_component *c[2] = {NULL, NULL};
  ecs_transform *t = NULL;
  ecs_query *q = NULL;
  ecs_field_def f[] = {{"x", ECS_F32}, {"v", ECS_LUA}};
  ecs_column_spec s;
  char msg[128];
  memset(&a, 0, sizeof a);
  w = ecs_world_new(test_allocf, &a);
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_component_new(w, "P", f, 2, &c[0]), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_new(w, &t), ECS_ERR_OK);
  c[1] = ecs_transform_columns(t);
  CHECK(c[1] != NULL);
  CHECK_EQ_INT(ecs_query_new(w, c, 2, NULL, 0, &q), ECS_ERR_OK);
  CHECK_EQ_INT(spec(q, "P.x", &s, msg), ECS_ERR_OK);
  CHECK(s.term == 0 && s.field == 0 && s.type == ECS_F32 && s.write);
  CHECK_EQ_INT(spec(q, "P.x:in", &s, msg), ECS_ERR_OK);
  CHECK(s.term == 0 && s.field == 0 && !s.write);
  CHECK_EQ_INT(spec(q, "entity", &s, msg), ECS_ERR_OK);
  CHECK(s.term == ECS_ENTITY_TERM && s.type == ECS_ENTITY && !s.write);
  CHECK_EQ_INT(spec(q, "Px", &s, msg), ECS_ERR_INVALID);
  CHECK(msg[0] == '\0');
  CHECK_EQ_INT(spec(q, "Q.x", &s, msg), ECS_ERR_UNKNOWN_COMPONENT);
  CHECK(msg[0] != '\0');
  CHECK_EQ_INT(spec(q, "P.y", &s, msg), ECS_ERR_UNKNOWN_FIELD);
  CHECK_EQ_INT(spec(q, "P.v", &s, msg), ECS_ERR_LUA_FIELD);
  CHECK(strcmp(msg, ecs_strerror(ECS_ERR_LUA_FIELD)) == 0);
  CHECK_EQ_INT(spec(q, "transform.wx", &s, msg), ECS_ERR_READONLY_FIELD);
  CHECK(strcmp(msg, ecs_strerror(ECS_ERR_READONLY_FIELD)) == 0);
  CHECK_EQ_INT(spec(q, "transform.wx:in", &s, msg), ECS_ERR_OK);
  CHECK(s.term == 1 && !s.write);
  ecs_query_free(w, q);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* A chunk's values stored back: at the rows given while current, else at
** each still-matching entity's row now (one that left is skipped). */
TEST(ColumnSpec_chunk_store) {
  test_alloc a;
  ecs_world *w;
  ecs_component *c = NULL;
  ecs_query *q = NULL;
  ecs_field_def f[] = {{"x", ECS_F32}, {"n", ECS_I32}};
  ecs_column_spec cols[3];
  ecs_entity e[2];
  uint32_t rows[2];
  ecs_scalar vals[4]; /* stride 2: x then n */
  char msg[128];
  memset(&a, 0, sizeof a);
  w = ecs_world_new(test_allocf, &a);
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_component_new(w, "P", f, 2, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_new(w, &c, 1, NULL, 0, &q), ECS_ERR_OK);
  for (int i = 0; i < 2; i++) {
    CHECK_EQ_INT(ecs_create(w, &e[i]), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_component_add(w, c, e[i], NULL, NULL), ECS_ERR_OK);
    rows[i] = ecs_component_lookup(w, c, e[i]);
  }
  CHECK_EQ_INT(spec(q, "P.x", &cols[0], msg), ECS_ERR_OK);
  CHECK_EQ_INT(spec(q, "P.n:in", &cols[1], msg), ECS_ERR_OK);
  CHECK_EQ_INT(spec(q, "P.n", &cols[2], msg), ECS_ERR_OK);
  vals[0].f = 1.5, vals[1].f = 2.5, vals[2].i = 7, vals[3].i = 8;
  ecs_query_chunk_store(w, q, cols, 3, vals, e, rows, 2, 2, true);
  CHECK(((float *)ecs_component_column(c, 0))[rows[1]] == 2.5f);
  CHECK_EQ_INT(((int32_t *)ecs_component_column(c, 1))[rows[0]], 7);
  /* e[0] loses P: not current, it is skipped; e[1] found at its row now */
  CHECK_EQ_INT(ecs_component_remove(w, c, e[0], NULL), ECS_ERR_OK);
  vals[0].f = 9, vals[1].f = 10, vals[2].i = 11, vals[3].i = 12;
  ecs_query_chunk_store(w, q, cols, 3, vals, e, rows, 2, 2, false);
  CHECK(((float *)ecs_component_column(c, 0))[ecs_component_lookup(w, c, e[1])] == 10.0f);
  CHECK_EQ_INT(((int32_t *)ecs_component_column(c, 1))[ecs_component_lookup(w, c, e[1])], 12);
  CHECK_WORLD(w);
  ecs_query_free(w, q);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static const test_case cases[] = {
  CASE(ColumnSpec_chunk_store),
  CASE(ColumnSpec_forms_and_refusals),
};

TEST_MAIN(cases)
