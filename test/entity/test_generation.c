/*
** test_generation.c -- generations wrap: the core's managers (components,
** names, transform) against an index whose generation has run through all
** 256 values. The entity that gets an old handle back must find nothing of
** its predecessor, and each manager's check must report a record that
** outlived its generation (forged here by writing the slot array through
** the core's private header, which the managers cannot tell from a wrap
** without a purge).
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "ecs_private.h"
#include "component.h"
#include "names.h"
#include "transform.h"

typedef struct fixture {
  test_alloc a;
  ecs_world *w;
  ecs_component *c;
  ecs_names *n;
  ecs_transform *t;
} fixture;

static const ecs_field_def fields[] = {
  {"x", ECS_F64}, {"ref", ECS_LUA}, {"other", ECS_ENTITY}};

static bool setup(fixture *f) {
  memset(f, 0, sizeof *f);
  f->w = ecs_world_new(test_allocf, &f->a);
  return f->w != NULL &&
         ecs_component_new(f->w, "C", fields, 3, &f->c) == ECS_ERR_OK &&
         ecs_names_new(f->w, &f->n) == ECS_ERR_OK &&
         ecs_transform_new(f->w, &f->t) == ECS_ERR_OK;
}

/* Give e a record in every manager: x = 7, lua ref 5, a name, a transform
** at (1, 2, 3) under parent. */
static bool give(fixture *f, ecs_entity e, ecs_entity parent) {
  ecs_instance i;
  ecs_trs l = {{1, 2, 3}, {0, 0, 0, 1}, {1, 1, 1}};
  if (ecs_component_add(f->w, f->c, e, &i, NULL) != ECS_ERR_OK) return false;
  ((double *)ecs_component_column(f->c, 0))[i] = 7;
  ((uint32_t *)ecs_component_column(f->c, 1))[i] = 5;
  ((ecs_entity *)ecs_component_column(f->c, 2))[i] = parent;
  return ecs_names_set(f->n, e, "old", 3) == ECS_ERR_OK &&
         ecs_transform_add(f->t, e, &l) == ECS_ERR_OK &&
         ecs_transform_set_parent(f->t, e, parent, false) == ECS_ERR_OK;
}

/* Destroy e, then create and destroy until e's handle comes back. */
static bool reborn(ecs_world *w, ecs_entity e) {
  ecs_entity x;
  if (!ecs_destroy(w, e)) return false;
  for (long k = 0; k < 4000000L; k++) {
    if (ecs_create(w, &x) != ECS_ERR_OK) return false;
    if (x == e) return true;
    ecs_destroy(w, x);
  }
  return false;
}

TEST(Generation_reborn_handle_finds_no_record_in_core_managers) {
  fixture f;
  ecs_entity pool[1100], p, v, ch;
  ecs_instance i;
  bool existed = true;
  uint32_t ref;
  ecs_trs l = {{0, 0, 0}, {0, 0, 0, 1}, {1, 1, 1}};
  CHECK(setup(&f));
  CHECK(ecs_create(f.w, &p) == ECS_ERR_OK);
  CHECK(ecs_create(f.w, &v) == ECS_ERR_OK);
  CHECK(ecs_create(f.w, &ch) == ECS_ERR_OK);
  CHECK(ecs_transform_add(f.t, p, NULL) == ECS_ERR_OK);
  CHECK(give(&f, v, p));
  CHECK(ecs_transform_add(f.t, ch, &l) == ECS_ERR_OK);
  CHECK(ecs_transform_set_parent(f.t, ch, v, false) == ECS_ERR_OK);
  CHECK(ecs_create_n(f.w, pool, 1100) == ECS_ERR_OK);
  CHECK_EQ_INT(ecs_destroy_n(f.w, pool, 1100), 1100);
  CHECK(reborn(f.w, v));
  CHECK_WORLD(f.w);
  CHECK(ecs_component_lookup(f.w, f.c, v) == ECS_NO_INSTANCE);
  CHECK_EQ_INT(ecs_component_count(f.w, f.c), 0);
  CHECK(ecs_names_get(f.n, v, NULL) == NULL);
  CHECK(ecs_names_find(f.n, "old", 3) == ECS_NULL);
  CHECK(!ecs_transform_has(f.t, v));
  CHECK(ecs_transform_first_child(f.t, p) == ECS_NULL);
  CHECK(ecs_transform_parent(f.t, ch) == ECS_NULL);
  /* adding again starts from zero; the old lua ref is reported dropped */
  CHECK(ecs_component_add(f.w, f.c, v, &i, &existed) == ECS_ERR_OK);
  CHECK(!existed);
  CHECK(((double *)ecs_component_column(f.c, 0))[i] == 0);
  CHECK(((ecs_entity *)ecs_component_column(f.c, 2))[i] == ECS_NULL);
  CHECK_EQ_INT(ecs_drain_refs(f.w, &ref, 1), 1);
  CHECK_EQ_INT(ref, 5);
  CHECK(ecs_transform_add(f.t, v, NULL) == ECS_ERR_OK);
  CHECK(ecs_transform_parent(f.t, v) == ECS_NULL);
  CHECK(ecs_transform_first_child(f.t, v) == ECS_NULL);
  CHECK(ecs_transform_parent(f.t, ch) == ECS_NULL);
  CHECK(ecs_names_set(f.n, v, "new", 3) == ECS_ERR_OK);
  CHECK(ecs_names_find(f.n, "new", 3) == v);
  CHECK_WORLD(f.w);
  CHECK_EQ_INT(ecs_world_gc(f.w, SIZE_MAX), 0); /* the old records went */
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* The first violation of the manager registered under name, or NULL. */
/* NULL-safe string equality (a check that passes returns NULL). */
static bool text_is(const char *s, const char *want) {
  return s != NULL && strcmp(s, want) == 0;
}

static const char *check_of(const ecs_world *w, const char *name) {
  const ecs_manager_class *cls;
  void *self = ecs_manager_find(w, name, &cls);
  if (self == NULL) self = ecs_manager_find_in(w, ECS_NS_COMPONENT, name, &cls);
  return self != NULL ? cls->check(w, self) : "no such manager";
}

TEST(Generation_each_check_reports_a_record_that_outlived_a_wrap) {
  fixture f;
  ecs_entity p, v, pool[1100];
  uint32_t ix;
  uint16_t saved;
  CHECK(setup(&f));
  CHECK(ecs_create(f.w, &p) == ECS_ERR_OK);
  CHECK(ecs_create(f.w, &v) == ECS_ERR_OK);
  CHECK(ecs_transform_add(f.t, p, NULL) == ECS_ERR_OK);
  CHECK(give(&f, v, p));
  CHECK(ecs_destroy(f.w, v));
  CHECK_WORLD(f.w);
  /* forge: the index free with next generation 0, as after a wrap that
  ** nobody purged -- v's records (generation 0) are now ahead */
  ix = ecs_entity_index(v);
  saved = f.w->head.slot[ix];
  f.w->head.slot[ix] = ECS_SLOT_FREE;
  CHECK(text_is(check_of(f.w, "C"),
               "component: record outlived its generation (wrap)"));
  CHECK(text_is(check_of(f.w, "names"),
               "names: record outlived its generation (wrap)"));
  CHECK(text_is(check_of(f.w, "transform"),
               "transform: row outlived its generation (wrap)"));
  CHECK(ecs_world_check(f.w) != NULL);
  /* a purge is what makes the same records acceptable */
  for (size_t k = 0; k < ecs_manager_count(f.w); k++) {
    const ecs_manager_class *cls;
    void *self = ecs_manager_at(f.w, k, NULL, &cls);
    cls->purge(f.w, self, ix);
  }
  CHECK_WORLD(f.w);
  CHECK(ecs_names_find(f.n, "old", 3) == ECS_NULL);
  f.w->head.slot[ix] = saved;
  CHECK_WORLD(f.w);
  /* a live slot: a record one generation ahead of it is caught too. 1100
  ** indices queued, so the oldest (v's, next generation 1) comes back */
  CHECK(ecs_create_n(f.w, pool, 1100) == ECS_ERR_OK);
  CHECK_EQ_INT(ecs_destroy_n(f.w, pool, 1100), 1100);
  CHECK(ecs_create(f.w, &v) == ECS_ERR_OK);
  CHECK_EQ_INT(ecs_entity_index(v), ix);
  CHECK_EQ_INT(ecs_entity_generation(v), 1);
  CHECK(give(&f, v, p));
  CHECK_WORLD(f.w);
  f.w->head.slot[ix] = 0; /* live at generation 0: v's records are ahead */
  CHECK(text_is(check_of(f.w, "C"),
               "component: record outlived its generation (wrap)"));
  CHECK(text_is(check_of(f.w, "names"),
               "names: record outlived its generation (wrap)"));
  CHECK(text_is(check_of(f.w, "transform"),
               "transform: row outlived its generation (wrap)"));
  f.w->head.slot[ix] = (uint16_t)ecs_entity_generation(v);
  CHECK_WORLD(f.w);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Generation_reborn_handle_finds_no_record_in_core_managers),
  CASE(Generation_each_check_reports_a_record_that_outlived_a_wrap),
};

TEST_MAIN(cases)
