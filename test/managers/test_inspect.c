/*
** test_inspect.c -- the text form of an entity (inspect.h), core only:
** the lines, their order, the formatting of every value kind, quoting
** and cutting, the transform line, dead and null handles.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"
#include "inspect.h"
#include "names.h"
#include "transform.h"

typedef struct sink {
  char buf[1024];
  size_t len;
} sink;

static void sink_add(void *ud, const char *s, size_t n) {
  sink *k = (sink *)ud;
  if (k->len + n >= sizeof k->buf) n = sizeof k->buf - 1 - k->len;
  memcpy(k->buf + k->len, s, n);
  k->len += n;
  k->buf[k->len] = '\0';
}

/* A lua field's value as the binding would hand it: here "<ref N>". */
static void sink_lua(void *ud, uint32_t ref) {
  char b[32];
  snprintf(b, sizeof b, ref == 0 ? "nil" : "<ref %u>", (unsigned)ref);
  sink_add(ud, b, strlen(b));
}

static const char *text_of(ecs_world *w, ecs_entity e, sink *k) {
  ecs_text t;
  t.add = sink_add;
  t.lua_value = sink_lua;
  t.ud = k;
  k->len = 0;
  k->buf[0] = '\0';
  ecs_inspect_text(w, e, &t);
  return k->buf;
}

TEST(Inspect_components_values_names_transform) {
  test_alloc a;
  ecs_world *w;
  ecs_component *pos = NULL, *tag = NULL;
  ecs_names *names = NULL;
  ecs_transform *tr = NULL;
  ecs_field_def f[] = {{"x", ECS_F64}, {"y", ECS_F32}, {"n", ECS_I32},
                       {"ok", ECS_BOOL}, {"t", ECS_ENTITY}, {"v", ECS_LUA}};
  ecs_entity e, g;
  ecs_instance i;
  ecs_trs local = {{1, 2, 3}, {0, 0, 0, 1}, {1, 1, 1}};
  sink k;
  const char *want;
  memset(&a, 0, sizeof a);
  w = ecs_world_new(test_allocf, &a);
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_component_new(w, "Position", f, 6, &pos), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "Enemy", NULL, 0, &tag), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_names_new(w, &names), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_new(w, &tr), ECS_ERR_OK);
  CHECK(ecs_create(w, &e) == 0 && ecs_create(w, &g) == 0);
  CHECK_EQ_INT(ecs_component_add(w, pos, e, &i, NULL), ECS_ERR_OK);
  ((double *)ecs_component_column(pos, 0))[i] = 1.5;
  ((float *)ecs_component_column(pos, 1))[i] = 0.1f;
  ((int32_t *)ecs_component_column(pos, 2))[i] = -7;
  ((uint8_t *)ecs_component_column(pos, 3))[i] = 1;
  ((ecs_entity *)ecs_component_column(pos, 4))[i] = g;
  ((uint32_t *)ecs_component_column(pos, 5))[i] = 3;
  CHECK_EQ_INT(ecs_component_add(w, tag, e, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_names_set(names, e, "pl\"ayer\n", 8), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_add(tr, e, &local), ECS_ERR_OK);
  want = "entity(1.0) \"pl\\\"ayer\\n\"\n"
         "  Position { x = 1.5, y = 0.1, n = -7, ok = true, t = entity(2.0), "
         "v = <ref 3> }\n"
         "  Enemy\n"
         "  transform { position = { 1, 2, 3 }, rotation = { 0, 0, 0, 1 }, "
         "scale = { 1, 1, 1 }, parent = null, world_position = { 1, 2, 3 } }";
  if (strcmp(text_of(w, e, &k), want) != 0) fprintf(stderr, "got: %s\n", k.buf);
  CHECK(strcmp(k.buf, want) == 0);
  /* g has nothing; null; dead */
  CHECK(strcmp(text_of(w, g, &k), "entity(2.0)") == 0);
  CHECK(strcmp(text_of(w, ECS_NULL, &k), "entity(0.0) (null)") == 0);
  CHECK(ecs_destroy(w, g));
  CHECK(strcmp(text_of(w, g, &k), "entity(2.0) (dead)") == 0);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Inspect_quoted_cut_and_numbers) {
  sink k;
  ecs_text t;
  char b[64], s[80];
  t.add = sink_add;
  t.lua_value = sink_lua;
  t.ud = &k;
  /* 59 'a' then a 2-byte character across the cut: cut before it */
  memset(s, 'a', 59);
  s[59] = (char)0xC3;
  s[60] = (char)0xA9;
  s[61] = '\t';
  s[62] = 1;
  k.len = 0;
  ecs_text_quoted(&t, s, 63);
  CHECK(k.len == 1 + 59 + 1 + strlen("...(63 bytes)"));
  CHECK(strcmp(k.buf + 61, "...(63 bytes)") == 0);
  k.len = 0;
  ecs_text_quoted(&t, "\t\001\x7f\\", 4);
  CHECK(strcmp(k.buf, "\"\\t\\001\\127\\\\\"") == 0);
  ecs_text_float(b, sizeof b, 2.0, false, true);
  CHECK(strcmp(b, "2.0") == 0);
  ecs_text_float(b, sizeof b, 2.0, false, false);
  CHECK(strcmp(b, "2") == 0);
  ecs_text_float(b, sizeof b, -1.0 / 0.0, false, false);
  CHECK(strcmp(b, "-inf") == 0);
  ecs_text_float(b, sizeof b, (double)(float)0.3, true, false);
  CHECK(strcmp(b, "0.3") == 0);
}

static const test_case cases[] = {
  CASE(Inspect_components_values_names_transform),
  CASE(Inspect_quoted_cut_and_numbers),
};

TEST_MAIN(cases)
