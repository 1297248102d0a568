/*
** journal_base.h -- a fixed world and deterministic changes to it, shared
** by test/persist/test_journal.c (which also writes the seeds of the delta fuzz
** corpus) and test/fuzz/fuzz_delta.c (whose target world is this base), so
** that a seed delta applies to the fuzz target's world.
**
** The base: components P {x f32, y f64, flag bool, t entity, n i8} and
** V {dx i32, big u64-as-i64}, the transform and names, 40 entities with
** some of each, a parent chain, a few names, and 1100 destroyed entities
** (so the free queue reuses indices). jb_change applies ops pseudo-random
** changes from a seed through the core's public calls.
*/
#ifndef ECS_TEST_JOURNAL_BASE_H
#define ECS_TEST_JOURNAL_BASE_H

#include <stdio.h>
#include <string.h>

#include "component.h"
#include "ecs.h"
#include "journal.h"
#include "names.h"
#include "transform.h"

typedef struct jb_world {
  ecs_world *w;
  ecs_component *P, *V;
  ecs_transform *t;
  ecs_names *n;
} jb_world;

static inline uint32_t jb_rand(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/* A live entity, or ECS_NULL (at most 64 tries). */
static inline ecs_entity jb_pick(const ecs_world *w, uint32_t *s) {
  size_t n = ecs_count(w);
  for (int k = 0; k < 64 && n > 0; k++) {
    uint32_t cursor = 1 + jb_rand(s) % 2000u;
    ecs_entity e;
    if (ecs_next_entity(w, &cursor, &e)) return e;
  }
  return ECS_NULL;
}

static inline ecs_err jb_write_p(jb_world *b, ecs_entity e, uint32_t v) {
  ecs_instance i = ecs_component_lookup(b->w, b->P, e);
  if (i == ECS_NO_INSTANCE) return ECS_ERR_MISSING;
  ecs_component_write_begin(b->w, b->P, NULL, i, 1);
  ((float *)ecs_component_column(b->P, 0))[i] = (float)v;
  ((double *)ecs_component_column(b->P, 1))[i] = v * 0.5;
  ((uint8_t *)ecs_component_column(b->P, 2))[i] = (uint8_t)(v & 1u);
  ((ecs_entity *)ecs_component_column(b->P, 3))[i] = e;
  ((int8_t *)ecs_component_column(b->P, 4))[i] = (int8_t)(v & 0x7f);
  ecs_component_write_end(b->w, b->P, &(ecs_instance){i}, 0, 1);
  return ECS_ERR_OK;
}

/* The base world into b (b->w made with alloc, ud). */
static inline ecs_err jb_build(jb_world *b, ecs_alloc_fn alloc, void *ud) {
  static const ecs_field_def pf[] = {
      {"x", ECS_F32}, {"y", ECS_F64}, {"flag", ECS_BOOL}, {"t", ECS_ENTITY},
      {"n", ECS_I8}};
  static const ecs_field_def vf[] = {{"dx", ECS_I32}, {"big", ECS_I64}};
  ecs_entity es[40], junk[1100], prev = ECS_NULL;
  ecs_err err;
  memset(b, 0, sizeof *b);
  if ((b->w = ecs_world_new(alloc, ud)) == NULL) return ECS_ERR_NOMEM;
  if ((err = ecs_component_new(b->w, "P", pf, 5, &b->P)) != ECS_ERR_OK ||
      (err = ecs_component_new(b->w, "V", vf, 2, &b->V)) != ECS_ERR_OK ||
      (err = ecs_transform_new(b->w, &b->t)) != ECS_ERR_OK ||
      (err = ecs_names_new(b->w, &b->n)) != ECS_ERR_OK ||
      (err = ecs_create_n(b->w, es, 40)) != ECS_ERR_OK ||
      (err = ecs_create_n(b->w, junk, 1100)) != ECS_ERR_OK)
    return err;
  (void)ecs_destroy_n(b->w, junk, 1100);
  for (uint32_t k = 0; k < 40; k++) {
    if (k % 3 != 2) {
      if ((err = ecs_component_add(b->w, b->P, es[k], NULL, NULL)) != ECS_ERR_OK)
        return err;
      (void)jb_write_p(b, es[k], k * 7u);
    }
    if (k % 2 == 0 &&
        (err = ecs_component_add(b->w, b->V, es[k], NULL, NULL)) != ECS_ERR_OK)
      return err;
    if (k < 8) {
      ecs_trs trs = {{k, 1, 2}, {0, 0, 0, 1}, {1, 1, 1}};
      if ((err = ecs_transform_add(b->t, es[k], &trs)) != ECS_ERR_OK) return err;
      if (prev != ECS_NULL &&
          (err = ecs_transform_set_parent(b->t, es[k], prev, false)) != ECS_ERR_OK)
        return err;
      prev = es[k];
    }
    if (k % 10 == 0) {
      char name[16];
      int len = snprintf(name, sizeof name, "e%u", (unsigned)k);
      if ((err = ecs_names_set(b->n, es[k], name, (size_t)len)) != ECS_ERR_OK)
        return err;
    }
  }
  return ECS_ERR_OK;
}

/* ops changes from seed; stops at the first error (returned). */
static inline ecs_err jb_change(jb_world *b, uint32_t seed, int ops) {
  uint32_t s = seed * 2654435761u + 1u;
  ecs_err err = ECS_ERR_OK;
  for (int k = 0; k < ops && err == ECS_ERR_OK; k++) {
    ecs_entity e = jb_pick(b->w, &s), f;
    uint32_t op = jb_rand(&s) % 10u;
    if (e == ECS_NULL) op = 0;
    switch (op) {
    case 0: err = ecs_create(b->w, &f); break;
    case 1: (void)ecs_destroy(b->w, e); break;
    case 2: err = ecs_component_add(b->w, b->P, e, NULL, NULL); break;
    case 3: err = ecs_component_remove(b->w, b->V, e, NULL); break;
    case 4: err = ecs_component_add(b->w, b->V, e, NULL, NULL); break;
    case 5: (void)jb_write_p(b, e, jb_rand(&s)); break;
    case 6: {
      ecs_trs trs = {{1, 2, (double)(jb_rand(&s) % 100u)}, {0, 0, 0, 1}, {1, 1, 1}};
      err = ecs_transform_add(b->t, e, &trs);
      break;
    }
    case 7: {
      char name[16];
      int len = snprintf(name, sizeof name, "n%u", (unsigned)(jb_rand(&s) % 50u));
      err = ecs_names_set(b->n, e, name, (size_t)len);
      break;
    }
    case 8: {
      ecs_entity many[40];
      if ((err = ecs_create_n(b->w, many, 40)) == ECS_ERR_OK)
        (void)ecs_destroy_n(b->w, many, 40);
      break;
    }
    default: err = ecs_component_remove(b->w, b->P, e, NULL); break;
    }
    if (err == ECS_ERR_EXISTS || err == ECS_ERR_DEAD) err = ECS_ERR_OK;
  }
  return err;
}

#endif
