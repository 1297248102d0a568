/*
** test_component.c -- generic component managers (component.h).
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"
#include "query.h"
#include "schema_text.h"

static const ecs_field_def pos_fields[] = {
  {"x", ECS_F32}, {"y", ECS_F32}
};

static ecs_world *new_world(test_alloc *a) {
  memset(a, 0, sizeof *a);
  return ecs_world_new(test_allocf, a);
}

/* ecs_component_remove without listeners: true when it removed. */
static bool rm(ecs_world *w, ecs_component *c, ecs_entity e) {
  bool done = false;
  return ecs_component_remove(w, c, e, &done) == ECS_ERR_OK && done;
}

static float fx(ecs_component *c, ecs_instance i) {
  return ((float *)ecs_component_column(c, 0))[i];
}

/* A manager with one field of every type. */
static const ecs_field_def all_fields[] = {
  {"a", ECS_F32}, {"b", ECS_F64}, {"c", ECS_I8}, {"d", ECS_I16},
  {"e", ECS_I32}, {"f", ECS_I64}, {"g", ECS_U8}, {"h", ECS_U16},
  {"i", ECS_U32}, {"j", ECS_BOOL}, {"k", ECS_ENTITY}, {"l", ECS_LUA}
};

TEST(Component_new_validates_schema) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c = NULL, *d = NULL;
  ecs_field_def dup[] = {{"x", ECS_F32}, {"x", ECS_I32}};
  ecs_field_def empty[] = {{"", ECS_F32}};
  ecs_field_def bad[] = {{"1x", ECS_F32}};
  ecs_field_def dot[] = {{"a.b", ECS_F32}};
  ecs_field_def type[] = {{"x", (ecs_type)ECS_TYPE__COUNT}};
  ecs_field_def nul[] = {{NULL, ECS_F32}};
  static ecs_field_def many[ECS_MAX_FIELDS + 1];
  for (uint32_t k = 0; k <= ECS_MAX_FIELDS; k++) {
    many[k].name = "f";
    many[k].type = ECS_U8;
  }
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_component_new(w, "P", dup, 2, &c), ECS_ERR_DUPLICATE_FIELD);
  CHECK_EQ_INT(ecs_component_new(w, "P", empty, 1, &c), ECS_ERR_FIELD_NAME);
  CHECK_EQ_INT(ecs_component_new(w, "P", bad, 1, &c), ECS_ERR_FIELD_NAME);
  CHECK_EQ_INT(ecs_component_new(w, "P", dot, 1, &c), ECS_ERR_FIELD_NAME);
  CHECK_EQ_INT(ecs_component_new(w, "P", type, 1, &c), ECS_ERR_FIELD_TYPE);
  CHECK_EQ_INT(ecs_component_new(w, "P", nul, 1, &c), ECS_ERR_FIELD_NAME);
  CHECK_EQ_INT(ecs_component_new(w, "P", NULL, 1, &c), ECS_ERR_SCHEMA);
  CHECK_EQ_INT(ecs_component_new(w, "", pos_fields, 2, &c), ECS_ERR_COMPONENT_NAME);
  CHECK_EQ_INT(ecs_component_new(w, "P.x", pos_fields, 2, &c), ECS_ERR_COMPONENT_NAME);
  CHECK_EQ_INT(ecs_component_new(w, NULL, pos_fields, 2, &c), ECS_ERR_COMPONENT_NAME);
  CHECK_EQ_INT(ecs_component_new(w, "P", many, ECS_MAX_FIELDS + 1, &c),
               ECS_ERR_TOO_MANY_FIELDS);
  CHECK(c == NULL);
  CHECK_EQ_INT(ecs_manager_count(w), 0);
  {
    /* the checker names the field at fault; the text form's parser */
    uint32_t at = 99;
    size_t nl = 0;
    ecs_type t = ECS_U8;
    ecs_field_def three[] = {{"a", ECS_F32}, {"b", ECS_I8}, {"a", ECS_U8}};
    CHECK_EQ_INT(ecs_component_check_schema("P", three, 3, &at),
                 ECS_ERR_DUPLICATE_FIELD);
    CHECK_EQ_INT(at, 2);
    CHECK_EQ_INT(ecs_component_check_schema("P", three, 2, &at), ECS_ERR_OK);
    CHECK_EQ_INT(at, 0);
    CHECK_EQ_INT(ecs_schema_entry_parse("hp:i16", 6, &nl, &t), ECS_ERR_OK);
    CHECK(nl == 2 && t == ECS_I16);
    CHECK_EQ_INT(ecs_schema_entry_parse("hp", 2, &nl, &t), ECS_ERR_OK);
    CHECK(nl == 2 && t == ECS_F64);
    CHECK_EQ_INT(ecs_schema_entry_parse("hp:f16", 6, &nl, &t),
                 ECS_ERR_FIELD_TYPE);
    CHECK_EQ_INT(nl, 2);
    CHECK_EQ_INT(ecs_schema_entry_parse("hp:", 3, &nl, &t), ECS_ERR_FIELD_TYPE);
    CHECK_EQ_INT(ecs_schema_entry_parse(":f32", 4, &nl, &t), ECS_ERR_FIELD_NAME);
    CHECK_EQ_INT(ecs_schema_entry_parse("a.b", 3, &nl, &t), ECS_ERR_FIELD_NAME);
    CHECK_EQ_INT(ecs_schema_entry_parse("1x:u8", 5, &nl, &t), ECS_ERR_FIELD_NAME);
    CHECK_EQ_INT(ecs_schema_entry_parse("", 0, &nl, &t), ECS_ERR_FIELD_NAME);
  }
  { /* the cleanup suffix (schema_text.h) */
    ecs_cleanup p;
    const char *suffix;
    size_t len = 11;
    CHECK_EQ_INT(ecs_schema_entry_cleanup("t:entity!ab", &len, &p, &suffix),
                 ECS_ERR_INVALID);
    CHECK(len == 8 && strcmp(suffix, "ab") == 0);
    len = 16;
    CHECK_EQ_INT(ecs_schema_entry_cleanup("t:entity!destroy", &len, &p, &suffix),
                 ECS_ERR_OK);
    CHECK(len == 8 && p == ECS_CLEANUP_DESTROY && strcmp(suffix, "destroy") == 0);
    len = 14;
    CHECK_EQ_INT(ecs_schema_entry_cleanup("t:entity!clear", &len, &p, &suffix),
                 ECS_ERR_OK);
    CHECK(p == ECS_CLEANUP_CLEAR);
    len = 9;
    CHECK_EQ_INT(ecs_schema_entry_cleanup("t:entity!", &len, &p, &suffix),
                 ECS_ERR_INVALID);
    CHECK(len == 8 && suffix[0] == '\0');
    len = 8;
    CHECK_EQ_INT(ecs_schema_entry_cleanup("t:entity", &len, &p, &suffix),
                 ECS_ERR_OK);
    CHECK(len == 8 && p == ECS_CLEANUP_NONE && suffix == NULL);
  }
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &d), ECS_ERR_EXISTS);
  CHECK(d == NULL);
  CHECK_EQ_INT(ecs_component_new(w, "Tag", NULL, 0, &d), ECS_ERR_OK);
  CHECK(ecs_component_find(w, "P") == c);
  CHECK(ecs_component_find(w, "Tag") == d);
  CHECK(ecs_component_find(w, "Q") == NULL);
  CHECK(strcmp(ecs_component_name(c), "P") == 0);
  CHECK_EQ_INT(ecs_component_field_count(c), 2);
  CHECK_EQ_INT(ecs_component_field_count(d), 0);
  CHECK(strcmp(ecs_component_field(c, 1)->name, "y") == 0);
  CHECK_EQ_INT(ecs_component_field(c, 1)->type, ECS_F32);
  CHECK_EQ_INT(ecs_component_field_index(c, "y", 1), 1);
  CHECK_EQ_INT(ecs_component_field_index(c, "xy", 1), 0);
  CHECK_EQ_INT(ecs_component_field_index(c, "z", 1), -1);
  CHECK_EQ_INT(ecs_component_field_index(c, "", 0), -1);
  CHECK(ecs_component_column(c, 0) == NULL);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* A stand-in for a plugin's manager: one malloc'd byte. */
static void dummy_free(ecs_world *w, void *self) {
  (void)w;
  free(self);
}
static const ecs_manager_class dummy_class = {
  .kind = "dummy",
  .free = dummy_free,
};

TEST(Component_names_apart_from_other_managers) {
  test_alloc a;
  for (int order = 0; order < 2; order++) {
    ecs_world *w = new_world(&a);
    ecs_component *c = NULL;
    void *pm = NULL;
    const ecs_manager_class *cls = NULL;
    if (order == 1) {
      CHECK_EQ_INT(ecs_component_new(w, "pointmass", pos_fields, 2, &c),
                   ECS_ERR_OK);
    }
    pm = malloc(1);
    CHECK_EQ_INT(ecs_manager_register(w, "pointmass", &dummy_class, pm),
                 ECS_ERR_OK);
    if (order == 0) {
      CHECK_EQ_INT(ecs_component_new(w, "pointmass", pos_fields, 2, &c),
                   ECS_ERR_OK);
    }
    CHECK(ecs_manager_find(w, "pointmass", &cls) == pm && cls == &dummy_class);
    CHECK(ecs_manager_find_in(w, ECS_NS_MANAGER, "pointmass", NULL) == pm);
    CHECK(ecs_manager_find_in(w, ECS_NS_COMPONENT, "pointmass", &cls) == c);
    CHECK(ecs_component_is(cls));
    CHECK(ecs_component_find(w, "pointmass") == c);
    CHECK_EQ_INT(ecs_manager_count(w), 2);
    /* each namespace still refuses its own duplicates */
    CHECK_EQ_INT(ecs_manager_register(w, "pointmass", &dummy_class, malloc(1)),
                 ECS_ERR_EXISTS);
    CHECK_EQ_INT(ecs_component_new(w, "pointmass", NULL, 0, &c), ECS_ERR_EXISTS);
    CHECK_EQ_INT(ecs_manager_register_in(w, (ecs_namespace)2, "x",
                                         &dummy_class, malloc(1)),
                 ECS_ERR_INVALID);
    CHECK_EQ_INT(ecs_manager_count(w), 2);
    CHECK_WORLD(w);
    ecs_world_free(w);
    CHECK_EQ_INT(a.blocks, 0);
  }
}

TEST(Component_add_lookup_remove) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  ecs_entity e[3];
  ecs_instance i;
  bool existed = true;
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(w, e, 3), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_lookup(w, c, e[0]), ECS_NO_INSTANCE);
  CHECK_EQ_INT(ecs_component_add(w, c, e[0], &i, &existed), ECS_ERR_OK);
  CHECK(!existed);
  CHECK_EQ_INT(i, 0);
  CHECK(fx(c, i) == 0.0f);
  ((float *)ecs_component_column(c, 0))[i] = 5.0f;
  CHECK_EQ_INT(ecs_component_add(w, c, e[0], &i, &existed), ECS_ERR_OK);
  CHECK(existed);
  CHECK(fx(c, i) == 5.0f); /* untouched */
  CHECK_EQ_INT(ecs_component_lookup(w, c, e[0]), 0);
  CHECK_EQ_INT(ecs_component_lookup(w, c, e[1]), ECS_NO_INSTANCE);
  CHECK_EQ_INT(ecs_component_lookup(w, c, ECS_NULL), ECS_NO_INSTANCE);
  CHECK_EQ_INT(ecs_component_lookup(w, c, ECS_ID_MASK), ECS_NO_INSTANCE);
  CHECK_EQ_INT(ecs_component_add(w, c, ECS_NULL, &i, NULL), ECS_ERR_DEAD);
  CHECK_EQ_INT(ecs_component_add(w, c, ECS_ID_MASK, &i, NULL), ECS_ERR_DEAD);
  /* a forged handle: e[0]'s index, generation ahead */
  CHECK_EQ_INT(ecs_component_lookup(w, c, ecs_make_entity(ecs_entity_index(e[0]), 1)),
               ECS_NO_INSTANCE);
  CHECK_EQ_INT(ecs_component_count(w, c), 1);
  CHECK(!rm(w, c, e[1]));
  CHECK(rm(w, c, e[0]));
  CHECK(!rm(w, c, e[0]));
  CHECK_EQ_INT(ecs_component_size(c), 0);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* Removing from the middle moves the last instance into the hole. */
TEST(Component_swap_remove) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  ecs_entity e[5];
  ecs_instance i;
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(w, e, 5), ECS_ERR_OK);
  for (int k = 0; k < 5; k++) {
    CHECK_EQ_INT(ecs_component_add(w, c, e[k], &i, NULL), ECS_ERR_OK);
    ((float *)ecs_component_column(c, 0))[i] = (float)k;
    ((float *)ecs_component_column(c, 1))[i] = (float)(10 * k);
  }
  CHECK(rm(w, c, e[1]));
  CHECK_EQ_INT(ecs_component_size(c), 4);
  CHECK_EQ_INT(ecs_component_lookup(w, c, e[4]), 1);
  CHECK(ecs_component_entities(c)[1] == e[4]);
  CHECK(fx(c, 1) == 4.0f);
  CHECK(((float *)ecs_component_column(c, 1))[1] == 40.0f);
  CHECK(rm(w, c, e[4])); /* now in the middle again */
  CHECK_EQ_INT(ecs_component_lookup(w, c, e[3]), 1);
  CHECK(fx(c, 1) == 3.0f);
  CHECK(rm(w, c, e[3])); /* the last one */
  CHECK_EQ_INT(ecs_component_size(c), 2);
  CHECK_EQ_INT(ecs_component_lookup(w, c, e[0]), 0);
  CHECK_EQ_INT(ecs_component_lookup(w, c, e[2]), 1);
  CHECK(fx(c, 1) == 2.0f);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/*
** Growth by doubling keeps every value of every column (all types), and
** every column is aligned for its type.
*/
TEST(Component_growth_keeps_values) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  enum { N = 5000 };
  static ecs_entity e[N];
  uint32_t nf = (uint32_t)(sizeof all_fields / sizeof all_fields[0]);
  CHECK_EQ_INT(ecs_component_new(w, "All", all_fields, nf, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(w, e, N), ECS_ERR_OK);
  for (uint32_t k = 0; k < N; k++) {
    ecs_instance i;
    CHECK_EQ_INT(ecs_component_add(w, c, e[k], &i, NULL), ECS_ERR_OK);
    CHECK_EQ_INT(i, k);
    ((float *)ecs_component_column(c, 0))[i] = (float)k;
    ((double *)ecs_component_column(c, 1))[i] = (double)k;
    ((int8_t *)ecs_component_column(c, 2))[i] = (int8_t)k;
    ((int16_t *)ecs_component_column(c, 3))[i] = (int16_t)k;
    ((int32_t *)ecs_component_column(c, 4))[i] = (int32_t)k;
    ((int64_t *)ecs_component_column(c, 5))[i] = (int64_t)k;
    ((uint8_t *)ecs_component_column(c, 6))[i] = (uint8_t)k;
    ((uint16_t *)ecs_component_column(c, 7))[i] = (uint16_t)k;
    ((uint32_t *)ecs_component_column(c, 8))[i] = (uint32_t)k;
    ((uint8_t *)ecs_component_column(c, 9))[i] = (uint8_t)(k & 1);
    ((ecs_entity *)ecs_component_column(c, 10))[i] = e[k];
  }
  for (uint32_t f = 0; f < nf; f++)
    CHECK((uintptr_t)ecs_component_column(c, f) % 8 == 0);
  for (uint32_t k = 0; k < N; k++) {
    ecs_instance i = ecs_component_lookup(w, c, e[k]);
    CHECK_EQ_INT(i, k);
    CHECK(((float *)ecs_component_column(c, 0))[i] == (float)k);
    CHECK(((double *)ecs_component_column(c, 1))[i] == (double)k);
    CHECK(((int8_t *)ecs_component_column(c, 2))[i] == (int8_t)k);
    CHECK(((int16_t *)ecs_component_column(c, 3))[i] == (int16_t)k);
    CHECK(((int32_t *)ecs_component_column(c, 4))[i] == (int32_t)k);
    CHECK(((int64_t *)ecs_component_column(c, 5))[i] == (int64_t)k);
    CHECK(((uint8_t *)ecs_component_column(c, 6))[i] == (uint8_t)k);
    CHECK(((uint16_t *)ecs_component_column(c, 7))[i] == (uint16_t)k);
    CHECK(((uint32_t *)ecs_component_column(c, 8))[i] == (uint32_t)k);
    CHECK(((uint8_t *)ecs_component_column(c, 9))[i] == (uint8_t)(k & 1));
    CHECK(((ecs_entity *)ecs_component_column(c, 10))[i] == e[k]);
    CHECK(((uint32_t *)ecs_component_column(c, 11))[i] == 0);
  }
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* Reads ignore dead owners at once; the budgeted gc converges to none. */
TEST(Component_gc_converges) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  enum { N = 2000 };
  static ecs_entity e[N];
  size_t total = 0;
  int calls = 0;
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(w, e, N), ECS_ERR_OK);
  for (int k = 0; k < N; k++)
    CHECK_EQ_INT(ecs_component_add(w, c, e[k], NULL, NULL), ECS_ERR_OK);
  for (int k = 0; k < N; k += 3) ecs_destroy(w, e[k]); /* 667 dead */
  CHECK_EQ_INT(ecs_component_size(c), N);
  CHECK_EQ_INT(ecs_component_count(w, c), N - 667);
  CHECK_EQ_INT(ecs_component_lookup(w, c, e[0]), ECS_NO_INSTANCE);
  CHECK(!rm(w, c, e[0]));
  CHECK_EQ_INT(ecs_component_gc(w, c, 0), 0);
  while (ecs_component_size(c) > N - 667 && calls < 100000) {
    size_t n = ecs_component_gc(w, c, 8);
    CHECK(n <= 8);
    total += n;
    calls++;
  }
  CHECK_EQ_INT(total, 667);
  CHECK_EQ_INT(ecs_component_size(c), N - 667);
  for (int k = 0; k < N; k++)
    CHECK_EQ_INT(ecs_component_lookup(w, c, e[k]) != ECS_NO_INSTANCE, k % 3 != 0);
  /* with nothing dead, a budgeted gc scans a bounded stretch and reclaims
  ** nothing */
  CHECK_EQ_INT(ecs_component_gc(w, c, 8), 0);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/*
** The budgeted gc resumes where it stopped and looks at no more than
** 4 * budget + 64 live instances a call, so a lone dead record among N is
** reclaimed within N / (4 * budget + 64) + 1 calls: a low death rate
** cannot leave dead records behind (random probes that stop after a few
** live ones would almost never find it).
*/
TEST(Component_gc_reaches_every_record_within_a_lap) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  enum { N = 2000, BUDGET = 8 };
  static ecs_entity e[N];
  size_t total = 0;
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(w, e, N), ECS_ERR_OK);
  for (int k = 0; k < N; k++)
    CHECK_EQ_INT(ecs_component_add(w, c, e[k], NULL, NULL), ECS_ERR_OK);
  for (int round = 0; round < 3; round++) { /* the cursor carries on */
    ecs_destroy(w, e[(round * 701 + 37) % N]);
    for (int k = 0; k < N / (4 * BUDGET + 64) + 1; k++)
      total += ecs_component_gc(w, c, BUDGET);
    CHECK_EQ_INT(total, (size_t)round + 1u);
    CHECK_EQ_INT(ecs_component_size(c), N - round - 1);
  }
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Component_gc_full_sweep_and_world_gc) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c, *t;
  enum { N = 1000 };
  static ecs_entity e[N];
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "T", NULL, 0, &t), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(w, e, N), ECS_ERR_OK);
  for (int k = 0; k < N; k++) {
    ecs_instance i;
    CHECK_EQ_INT(ecs_component_add(w, c, e[k], &i, NULL), ECS_ERR_OK);
    ((float *)ecs_component_column(c, 0))[i] = (float)k;
    if (k % 2) CHECK_EQ_INT(ecs_component_add(w, t, e[k], NULL, NULL), ECS_ERR_OK);
  }
  for (int k = 0; k < N; k++)
    if (k % 5 == 0) ecs_destroy(w, e[k]);
  CHECK_EQ_INT(ecs_component_gc(w, c, SIZE_MAX), N / 5);
  CHECK_EQ_INT(ecs_component_size(c), N - N / 5);
  for (int k = 0; k < N; k++) {
    ecs_instance i = ecs_component_lookup(w, c, e[k]);
    if (k % 5 == 0) {
      CHECK_EQ_INT(i, ECS_NO_INSTANCE);
    } else {
      CHECK(i != ECS_NO_INSTANCE);
      CHECK(fx(c, i) == (float)k);
    }
  }
  CHECK_EQ_INT(ecs_world_gc(w, SIZE_MAX), N / 10); /* the tag's dead: odd k%5==0 */
  CHECK_EQ_INT(ecs_component_size(t), N / 2 - N / 10);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Component_lookup_n) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  ecs_entity e[6], in[8];
  ecs_instance out[8];
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(w, e, 6), ECS_ERR_OK);
  for (int k = 0; k < 6; k += 2)
    CHECK_EQ_INT(ecs_component_add(w, c, e[k], NULL, NULL), ECS_ERR_OK);
  ecs_destroy(w, e[4]);
  for (int k = 0; k < 6; k++) in[k] = e[k];
  in[6] = ECS_NULL;
  in[7] = ECS_ID_MASK;
  ecs_component_lookup_n(w, c, in, out, 8);
  CHECK_EQ_INT(out[0], 0);
  CHECK_EQ_INT(out[1], ECS_NO_INSTANCE);
  CHECK_EQ_INT(out[2], 1);
  CHECK_EQ_INT(out[3], ECS_NO_INSTANCE);
  CHECK_EQ_INT(out[4], ECS_NO_INSTANCE); /* dead owner */
  CHECK_EQ_INT(out[5], ECS_NO_INSTANCE);
  CHECK_EQ_INT(out[6], ECS_NO_INSTANCE);
  CHECK_EQ_INT(out[7], ECS_NO_INSTANCE);
  ecs_component_lookup_n(w, c, in, out, 0);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/*
** An entity whose index was used by a dead entity that still has a record:
** the new entity does not see the old record, and adding reuses it zeroed.
*/
TEST(Component_dead_record_of_reused_index) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  ecs_entity old, e, other;
  ecs_instance i, j;
  bool existed = true;
  uint64_t v;
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(w, &other), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(w, &old), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_add(w, c, other, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_add(w, c, old, &i, NULL), ECS_ERR_OK);
  ((float *)ecs_component_column(c, 0))[i] = 7.0f;
  ecs_destroy(w, old);
  /* cycle the free queue until old's index comes back */
  do {
    CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
    if (ecs_entity_index(e) != ecs_entity_index(old)) ecs_destroy(w, e);
  } while (ecs_entity_index(e) != ecs_entity_index(old));
  CHECK(e != old);
  CHECK_EQ_INT(ecs_component_lookup(w, c, e), ECS_NO_INSTANCE);
  CHECK_EQ_INT(ecs_component_lookup(w, c, old), ECS_NO_INSTANCE);
  CHECK(!rm(w, c, e));
  CHECK_EQ_INT(ecs_component_count(w, c), 1);
  v = ecs_component_version(c);
  CHECK_EQ_INT(ecs_component_add(w, c, e, &j, &existed), ECS_ERR_OK);
  CHECK(!existed);
  CHECK_EQ_INT(j, i); /* reused in place */
  CHECK(fx(c, j) == 0.0f);
  CHECK(ecs_component_version(c) != v);
  CHECK_EQ_INT(ecs_component_size(c), 2);
  CHECK_EQ_INT(ecs_component_count(w, c), 2);
  CHECK_EQ_INT(ecs_component_lookup(w, c, old), ECS_NO_INSTANCE);
  CHECK_EQ_INT(ecs_component_gc(w, c, SIZE_MAX), 0);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* Non-zero lua refs are reported once when their instance goes. */
TEST(Component_lua_refs_dropped) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  ecs_field_def f[] = {{"hp", ECS_F64}, {"s", ECS_LUA}, {"t", ECS_LUA}};
  ecs_entity e[4];
  ecs_instance i;
  uint32_t buf[16];
  size_t n;
  CHECK_EQ_INT(ecs_component_new(w, "B", f, 3, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(w, e, 4), ECS_ERR_OK);
  for (uint32_t k = 0; k < 4; k++) {
    CHECK_EQ_INT(ecs_component_add(w, c, e[k], &i, NULL), ECS_ERR_OK);
    ((uint32_t *)ecs_component_column(c, 1))[i] = 10 + k;
    ((uint32_t *)ecs_component_column(c, 2))[i] = k == 2 ? 0 : 20 + k;
  }
  CHECK_EQ_INT(ecs_dropped_refs(w), 0);
  CHECK(rm(w, c, e[0])); /* moves e[3]'s refs, drops 10, 20 */
  CHECK_EQ_INT(ecs_dropped_refs(w), 2);
  i = ecs_component_lookup(w, c, e[3]);
  CHECK(((uint32_t *)ecs_component_column(c, 1))[i] == 13);
  CHECK(((uint32_t *)ecs_component_column(c, 2))[i] == 23);
  n = ecs_drain_refs(w, buf, 1);
  CHECK_EQ_INT(n, 1);
  n += ecs_drain_refs(w, buf + 1, 16);
  CHECK_EQ_INT(n, 2);
  CHECK((buf[0] == 10 && buf[1] == 20) || (buf[0] == 20 && buf[1] == 10));
  CHECK_EQ_INT(ecs_drain_refs(w, buf, 16), 0);
  ecs_destroy(w, e[2]); /* lazy: nothing dropped until gc */
  CHECK_EQ_INT(ecs_dropped_refs(w), 0);
  CHECK_EQ_INT(ecs_component_gc(w, c, SIZE_MAX), 1);
  CHECK_EQ_INT(ecs_drain_refs(w, buf, 16), 1); /* only the non-zero one */
  CHECK_EQ_INT(buf[0], 12);
  /* reuse of a dead record drops its refs too */
  ecs_destroy(w, e[1]);
  {
    ecs_entity n1;
    do {
      CHECK_EQ_INT(ecs_create(w, &n1), ECS_ERR_OK);
      if (ecs_entity_index(n1) != ecs_entity_index(e[1])) ecs_destroy(w, n1);
    } while (ecs_entity_index(n1) != ecs_entity_index(e[1]));
    CHECK_EQ_INT(ecs_component_add(w, c, n1, &i, NULL), ECS_ERR_OK);
    CHECK(((uint32_t *)ecs_component_column(c, 1))[i] == 0);
  }
  CHECK_EQ_INT(ecs_drain_refs(w, buf, 16), 2);
  CHECK_WORLD(w);
  ecs_world_free(w); /* refs of e[3] go with the world: no leak */
  CHECK_EQ_INT(a.blocks, 0);
}

/* Structural changes bump the version; writes to values do not. */
TEST(Component_version_counts_structural_changes) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  ecs_entity e;
  uint64_t v;
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
  v = ecs_component_version(c);
  CHECK_EQ_INT(ecs_component_add(w, c, e, NULL, NULL), ECS_ERR_OK);
  CHECK(ecs_component_version(c) > v);
  v = ecs_component_version(c);
  CHECK_EQ_INT(ecs_component_add(w, c, e, NULL, NULL), ECS_ERR_OK);
  CHECK(ecs_component_version(c) == v);
  CHECK_EQ_INT(ecs_component_gc(w, c, SIZE_MAX), 0);
  CHECK(ecs_component_version(c) == v);
  CHECK(rm(w, c, e));
  CHECK(ecs_component_version(c) > v);
  ecs_world_free(w);
}

/*
** Fail every allocation in turn during a scripted sequence: each failing
** call returns ECS_ERR_NOMEM and changes nothing, the world stays
** consistent and everything is freed.
*/
static int oom_script(ecs_world *w, int *failed_at_step) {
  static const ecs_field_def f[] = {{"x", ECS_F32}, {"s", ECS_LUA}};
  ecs_component *c, *t;
  ecs_entity e[3000];
  ecs_err err;
  *failed_at_step = -1;
  if ((err = ecs_component_new(w, "P", f, 2, &c)) != ECS_ERR_OK) {
    if (err != ECS_ERR_NOMEM || ecs_component_find(w, "P") != NULL) return 0;
    *failed_at_step = 0;
    return 1;
  }
  if ((err = ecs_component_new(w, "T", NULL, 0, &t)) != ECS_ERR_OK) {
    if (err != ECS_ERR_NOMEM || ecs_component_find(w, "T") != NULL) return 0;
    *failed_at_step = 1;
    return 1;
  }
  if (ecs_create_n(w, e, 3000) != ECS_ERR_OK) {
    *failed_at_step = 2;
    return 1;
  }
  for (int k = 0; k < 3000; k++) {
    size_t before = ecs_component_size(c);
    uint64_t v = ecs_component_version(c);
    ecs_instance i;
    /* spread the indices so that several map pages are needed */
    ecs_entity x = e[(k * 7) % 3000];
    err = ecs_component_add(w, c, x, &i, NULL);
    if (err != ECS_ERR_OK) {
      if (err != ECS_ERR_NOMEM) return 0;
      if (ecs_component_size(c) != before) return 0;
      if (ecs_component_lookup(w, c, x) != ECS_NO_INSTANCE) return 0;
      (void)v;
      *failed_at_step = 3;
      return 1;
    }
    ((uint32_t *)ecs_component_column(c, 1))[i] = (uint32_t)k + 1;
    err = ecs_component_add(w, t, x, NULL, NULL);
    if (err != ECS_ERR_OK) {
      if (err != ECS_ERR_NOMEM) return 0;
      if (ecs_component_lookup(w, t, x) != ECS_NO_INSTANCE) return 0;
      *failed_at_step = 4;
      return 1;
    }
    if (k % 4 == 0) rm(w, c, x);
    if (k % 5 == 0) ecs_destroy(w, x);
  }
  ecs_component_gc(w, c, 100);
  ecs_component_gc(w, t, SIZE_MAX);
  return 1;
}

TEST(Component_oom_at_every_allocation) {
  int completed = 0;
  for (long n = 1; n < 2000 && !completed; n++) {
    test_alloc a;
    int step;
    ecs_world *w;
    memset(&a, 0, sizeof a);
    a.fail_at = n + 1; /* allocation 1 is the world itself */
    w = ecs_world_new(test_allocf, &a);
    CHECK(w != NULL);
    CHECK(oom_script(w, &step));
    CHECK_WORLD(w);
    if (step == -1) completed = 1;
    ecs_world_free(w);
    CHECK_EQ_INT(a.blocks, 0);
    CHECK_EQ_INT(a.bytes, 0);
  }
  CHECK(completed);
}

/* Memory: Position{x:f32,y:f32} costs 12 bytes a row plus the map. */
TEST(Component_memory_per_instance) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  enum { N = 100000 };
  static ecs_entity e[N];
  long base;
  CHECK_EQ_INT(ecs_create_n(w, e, N), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "P", pos_fields, 2, &c), ECS_ERR_OK);
  base = a.bytes;
  for (int k = 0; k < N; k++)
    CHECK_EQ_INT(ecs_component_add(w, c, e[k], NULL, NULL), ECS_ERR_OK);
  /* 131072 rows * 12 + 98 pages * 4 KB + directory = ~1.97 MB: < 24 B/row */
  CHECK((a.bytes - base) / N < 24);
  ecs_world_free(w);
}

/*
** Random operations against a trivial model (RELIABILITY R10, core only):
** entities in a small pool, two managers (one with a lua field), every
** lookup, value, count and dropped ref compared after each step.
*/
static uint32_t rnd_state = 12345u;
static uint32_t rnd(uint32_t n) {
  rnd_state ^= rnd_state << 13;
  rnd_state ^= rnd_state >> 17;
  rnd_state ^= rnd_state << 5;
  return rnd_state % n;
}

TEST(Component_random_ops_match_model) {
  enum { POOL = 48, STEPS = 200000 };
  test_alloc a;
  ecs_world *w = new_world(&a);
  static const ecs_field_def f[] = {{"v", ECS_I32}, {"r", ECS_LUA}};
  ecs_component *c[2];
  ecs_entity pool[POOL];
  int has[2][POOL], val[2][POOL];
  uint32_t next_ref = 1, live_refs = 0, buf[64];
  long reused = 0; /* adds that took a dead record of an older entity */
  memset(has, 0, sizeof has);
  memset(pool, 0, sizeof pool);
  CHECK_EQ_INT(ecs_component_new(w, "A", f, 2, &c[0]), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "B", f, 1, &c[1]), ECS_ERR_OK);
  for (int step = 0; step < STEPS; step++) {
    int k = (int)rnd(POOL), m = (int)rnd(2), op = (int)rnd(10);
    ecs_entity e = pool[k];
    if (op == 0) { /* (re)create the slot's entity */
      if (ecs_alive(w, e)) {
        ecs_destroy(w, e);
        has[0][k] = has[1][k] = 0;
      }
      CHECK_EQ_INT(ecs_create(w, &pool[k]), ECS_ERR_OK);
    } else if (op == 1) { /* destroy */
      bool was = ecs_alive(w, e);
      CHECK_EQ_INT(ecs_destroy(w, e), was);
      has[0][k] = has[1][k] = 0;
    } else if (op <= 5) { /* add and write */
      ecs_instance i;
      bool existed;
      uint32_t size0 = ecs_component_size(c[m]);
      ecs_err err = ecs_component_add(w, c[m], e, &i, &existed);
      reused += err == ECS_ERR_OK && !existed && ecs_component_size(c[m]) == size0;
      if (!ecs_alive(w, e)) {
        CHECK_EQ_INT(err, ECS_ERR_DEAD);
      } else {
        CHECK_EQ_INT(err, ECS_ERR_OK);
        CHECK_EQ_INT(existed, has[m][k]);
        if (!existed) CHECK_EQ_INT(((int32_t *)ecs_component_column(c[m], 0))[i], 0);
        val[m][k] = (int)rnd(1000000);
        ((int32_t *)ecs_component_column(c[m], 0))[i] = val[m][k];
        if (m == 0) {
          uint32_t *r = (uint32_t *)ecs_component_column(c[m], 1) + i;
          if (*r == 0) live_refs++;
          else CHECK(existed);
          *r = next_ref++; /* the old ref is "released" by its owner here */
        }
        has[m][k] = 1;
      }
    } else if (op <= 7) { /* remove */
      CHECK_EQ_INT(rm(w, c[m], e), has[m][k]);
      has[m][k] = 0;
    } else if (op == 9 && rnd(4) == 0 && ecs_alive(w, e)) {
      /* recycle: destroy e and churn until its index comes back, so that
      ** the new entity meets e's dead records */
      ecs_entity x;
      ecs_destroy(w, e);
      has[0][k] = has[1][k] = 0;
      do {
        CHECK_EQ_INT(ecs_create(w, &x), ECS_ERR_OK);
        if (ecs_entity_index(x) != ecs_entity_index(e)) ecs_destroy(w, x);
      } while (ecs_entity_index(x) != ecs_entity_index(e));
      pool[k] = x;
    } else if (op == 8 || rnd(8) == 0) { /* gc, rarely a full sweep */
      size_t budget = rnd(16) == 0 ? SIZE_MAX : rnd(3);
      ecs_component_gc(w, c[m], budget);
    }
    /* drained refs: one per dropped instance of A that held one */
    for (size_t n; (n = ecs_drain_refs(w, buf, 64)) > 0;) {
      CHECK(n <= live_refs);
      live_refs -= (uint32_t)n;
    }
    for (int j = 0; j < POOL; j++)
      for (int q = 0; q < 2; q++) {
        ecs_instance i = ecs_component_lookup(w, c[q], pool[j]);
        CHECK_EQ_INT(i != ECS_NO_INSTANCE, has[q][j]);
        if (has[q][j]) CHECK_EQ_INT(((int32_t *)ecs_component_column(c[q], 0))[i], val[q][j]);
      }
    {
      size_t n0 = 0, n1 = 0;
      for (int j = 0; j < POOL; j++) n0 += (size_t)has[0][j], n1 += (size_t)has[1][j];
      CHECK_EQ_INT(ecs_component_count(w, c[0]), n0);
      CHECK_EQ_INT(ecs_component_count(w, c[1]), n1);
    }
    if (step % 1000 == 0) CHECK_WORLD(w);
  }
  CHECK(reused > 10);
  printf("random ops: %ld adds reused a dead record\n", reused);
  /* every instance of A still stored holds exactly one live ref */
  ecs_component_gc(w, c[0], SIZE_MAX);
  for (size_t n; (n = ecs_drain_refs(w, buf, 64)) > 0;) live_refs -= (uint32_t)n;
  CHECK_EQ_INT(live_refs, ecs_component_size(c[0]));
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/*
** Batches: ecs_next_indices foretells what ecs_create_n hands out (fresh
** indices, then the free queue once it is long enough); after
** ecs_component_reserve of those indices, ecs_component_emplace_n never
** allocates (checked with every allocation failing), keeps an existing
** instance, reuses a dead record in place and zeroes the new ones.
*/
TEST(Component_batch_reserve_then_emplace_n) {
  test_alloc a = {0};
  ecs_world *w = new_world(&a);
  ecs_component *c;
  static uint32_t idx[3000];
  static ecs_entity es[3000], old[3000];
  static ecs_instance rows[3000];
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_component_new(w, "Position", pos_fields, 2, &c), ECS_ERR_OK);
  /* fresh indices */
  CHECK_EQ_INT(ecs_next_indices(w, idx, 10), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(w, es, 10), ECS_ERR_OK);
  for (int k = 0; k < 10; k++) CHECK_EQ_INT(ecs_entity_index(es[k]), idx[k]);
  /* the queue, once it holds more than the minimum */
  CHECK_EQ_INT(ecs_create_n(w, old, 3000), ECS_ERR_OK);
  for (int k = 0; k < 3000; k += 2) CHECK(ecs_destroy(w, old[k]));
  CHECK_EQ_INT(ecs_next_indices(w, idx, 3000), ECS_ERR_OK);
  CHECK_EQ_INT(idx[0], ecs_entity_index(old[0])); /* the queue's head */
  CHECK_EQ_INT(idx[2999], ecs_entity_index(old[2999]) + 3000u - 477u); /* fresh */
  CHECK_EQ_INT(ecs_create_n(w, es, 3000), ECS_ERR_OK);
  for (int k = 0; k < 3000; k++) CHECK_EQ_INT(ecs_entity_index(es[k]), idx[k]);
  CHECK_EQ_INT(ecs_next_indices(w, idx, (size_t)ECS_MAX_ENTITIES), ECS_ERR_FULL);
  /* an instance already there (kept), a dead record (reused) */
  {
    ecs_instance i;
    CHECK_EQ_INT(ecs_component_add(w, c, es[5], &i, NULL), ECS_ERR_OK);
    ((float *)ecs_component_column(c, 0))[i] = 42.0f;
    CHECK_EQ_INT(ecs_component_add(w, c, old[1], &i, NULL), ECS_ERR_OK);
    CHECK(ecs_destroy(w, old[1]));
  }
  for (int k = 0; k < 3000; k++) idx[k] = ecs_entity_index(es[k]);
  /* reserve fails at each allocation: c is unchanged but for room */
  for (long f = 1;; f++) {
    ecs_err err;
    a.fail_at = a.calls + f;
    a.sticky = 1;
    err = ecs_component_reserve(w, c, idx, 3000);
    a.fail_at = 0;
    CHECK_EQ_INT(ecs_component_size(c), 2);
    CHECK_WORLD(w);
    if (err == ECS_ERR_OK) break;
    CHECK_EQ_INT(err, ECS_ERR_NOMEM);
  }
  a.fail_at = a.calls + 1; /* nothing may allocate from here */
  a.sticky = 1;
  ecs_component_emplace_n(w, c, es, 3000, rows);
  a.fail_at = 0;
  CHECK_EQ_INT(ecs_component_size(c), 3001); /* 2 + 3000 - the kept one */
  CHECK_EQ_INT(fx(c, rows[5]), 42.0f);
  for (int k = 0; k < 3000; k++) {
    CHECK_EQ_INT(ecs_component_lookup(w, c, es[k]), rows[k]);
    if (k != 5) CHECK_EQ_INT(fx(c, rows[k]), 0.0f);
  }
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static ecs_err nop_listener(ecs_world *w, void *m, ecs_entity e, ecs_event ev,
                            void *ud) {
  (void)w, (void)m, (void)e, (void)ev, (void)ud;
  return ECS_ERR_OK;
}

/*
** ecs_component_unregister undoes a registration nothing uses yet (a
** restore that registered components and then failed): the last manager,
** no record, query, listener or pin; otherwise it refuses and nothing
** changes. What it frees is all the component held.
*/
TEST(Component_unregister_only_what_nothing_uses) {
  static const ecs_field_def f[] = {{"to", ECS_ENTITY}, {"s", ECS_LUA}};
  test_alloc a;
  ecs_world *w;
  ecs_component *c, *d;
  ecs_query *q;
  ecs_entity e;
  int ud = 0;
  memset(&a, 0, sizeof a);
  CHECK((w = ecs_world_new(test_allocf, &a)) != NULL);
  CHECK_EQ_INT(ecs_component_new(w, "C", f, 2, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_set_cleanup(w, c, 0, ECS_CLEANUP_CLEAR), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "D", NULL, 0, &d), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_unregister(w, c), ECS_ERR_INVALID); /* not the last */
  CHECK_EQ_INT(ecs_component_unregister(w, d), ECS_ERR_OK);
  CHECK(ecs_component_find(w, "D") == NULL);
  CHECK_EQ_INT(ecs_manager_count(w), 1);
  /* a record (even a dead one), a query, a listener, a pin: refused */
  CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_add(w, c, e, NULL, NULL), ECS_ERR_OK);
  CHECK(ecs_destroy(w, e));
  CHECK_EQ_INT(ecs_component_unregister(w, c), ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_component_gc(w, c, SIZE_MAX), 1);
  CHECK_EQ_INT(ecs_query_new(w, &c, 1, NULL, 0, &q), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_unregister(w, c), ECS_ERR_INVALID);
  ecs_query_free(w, q);
  CHECK_EQ_INT(ecs_manager_listen(w, c, ECS_EVENT_ADD, nop_listener, &ud), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_unregister(w, c), ECS_ERR_INVALID);
  CHECK(ecs_manager_unlisten(w, c, nop_listener, &ud));
  CHECK_EQ_INT(ecs_component_pin(w, c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_unregister(w, c), ECS_ERR_INVALID);
  ecs_component_unpin(w, c);
  CHECK(ecs_component_find(w, "C") == c);
  CHECK_EQ_INT(ecs_component_unregister(w, c), ECS_ERR_OK);
  CHECK(ecs_component_find(w, "C") == NULL);
  CHECK_EQ_INT(ecs_manager_count(w), 0);
  CHECK_WORLD(w);
  /* a destroy no longer sweeps: the policy went with it */
  CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
  CHECK(ecs_destroy(w, e));
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Component_random_ops_match_model),
  CASE(Component_new_validates_schema),
  CASE(Component_names_apart_from_other_managers),
  CASE(Component_add_lookup_remove),
  CASE(Component_swap_remove),
  CASE(Component_growth_keeps_values),
  CASE(Component_gc_converges),
  CASE(Component_gc_reaches_every_record_within_a_lap),
  CASE(Component_gc_full_sweep_and_world_gc),
  CASE(Component_lookup_n),
  CASE(Component_dead_record_of_reused_index),
  CASE(Component_lua_refs_dropped),
  CASE(Component_version_counts_structural_changes),
  CASE(Component_oom_at_every_allocation),
  CASE(Component_memory_per_instance),
  CASE(Component_batch_reserve_then_emplace_n),
  CASE(Component_unregister_only_what_nothing_uses),
};

TEST_MAIN(cases)
