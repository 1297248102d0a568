/*
** test_write.c -- the write sequence of one instance (src/persist/write.h):
** the order of its checks, the values, the events, the lua refs it hands
** back, the journal.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"
#include "journal.h"
#include "write.h"

static const ecs_field_def fields[] = {
  {"x", ECS_F32}, {"n", ECS_I16}, {"ok", ECS_BOOL}, {"v", ECS_LUA}
};

static ecs_world *new_world(test_alloc *a) {
  memset(a, 0, sizeof *a);
  return ecs_world_new(test_allocf, a);
}

/* A listener that logs its events and returns *ud's error. */
typedef struct log {
  int adds, sets;
  ecs_err ret;
} log_t;

static ecs_err logger(ecs_world *w, void *m, ecs_entity e, ecs_event ev,
                      void *ud) {
  log_t *l = (log_t *)ud;
  (void)w; (void)m; (void)e;
  if (ev == ECS_EVENT_ADD) l->adds++;
  if (ev == ECS_EVENT_SET) l->sets++;
  return l->ret;
}

static void vals4(ecs_scalar *v, double x, int64_t n, int64_t ok, int64_t ref) {
  v[0].f = x;
  v[1].i = n;
  v[2].i = ok;
  v[3].i = ref;
}

TEST(Write_checks_in_order) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  ecs_entity e, dead;
  ecs_scalar v[4];
  ecs_write_result r;
  ecs_instance row;
  vals4(v, 1.5, 2, 1, 0);
  CHECK_EQ_INT(ecs_component_new(w, "P", fields, 4, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(w, &dead), ECS_ERR_OK);
  CHECK(ecs_destroy(w, dead));
  CHECK_EQ_INT(ecs_component_write_check(w, c, dead, true, &row), ECS_ERR_DEAD);
  CHECK_EQ_INT(ecs_component_write_check(w, c, dead, false, &row), ECS_ERR_DEAD);
  CHECK_EQ_INT(ecs_component_write_check(w, c, e, false, &row), ECS_ERR_MISSING);
  CHECK_EQ_INT(ecs_component_write_check(w, c, e, true, &row), ECS_ERR_OK);
  CHECK(row == ECS_NO_INSTANCE);
  CHECK_EQ_INT(ecs_component_write(w, c, dead, ECS_NO_INSTANCE, true, 0, 4, v, &r), ECS_ERR_DEAD);
  CHECK(!r.written);
  CHECK_EQ_INT(ecs_component_write(w, c, e, ECS_NO_INSTANCE, false, 0, 4, v, &r), ECS_ERR_MISSING);
  CHECK(!r.written);
  /* fields out of range: nothing happens, not even the add */
  CHECK_EQ_INT(ecs_component_write(w, c, e, ECS_NO_INSTANCE, true, 2, 3, v, &r), ECS_ERR_INVALID);
  CHECK_EQ_INT(ecs_component_write(w, c, e, ECS_NO_INSTANCE, true, 5, 0, v, &r), ECS_ERR_INVALID);
  CHECK(ecs_component_lookup(w, c, e) == ECS_NO_INSTANCE);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Write_add_then_set_values_and_events) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  ecs_entity e;
  ecs_scalar v[4];
  ecs_write_result r;
  ecs_instance i;
  log_t l = {0, 0, ECS_ERR_OK};
  CHECK_EQ_INT(ecs_component_new(w, "P", fields, 4, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_manager_listen(w, c, ECS_EVENT_ADD | ECS_EVENT_SET, logger, &l),
               ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
  vals4(v, 1.5, -7, 1, 3);
  CHECK_EQ_INT(ecs_component_write(w, c, e, ECS_NO_INSTANCE, true, 0, 4, v, &r), ECS_ERR_OK);
  CHECK(r.written && !r.existed && r.nold == 0);
  CHECK_EQ_INT(l.adds, 1); /* then SET: an add is a write (registry.c) */
  CHECK_EQ_INT(l.sets, 1);
  i = ecs_component_lookup(w, c, e);
  CHECK(i == r.row);
  CHECK(((float *)ecs_component_column(c, 0))[i] == 1.5f);
  CHECK_EQ_INT(((int16_t *)ecs_component_column(c, 1))[i], -7);
  CHECK_EQ_INT(((uint8_t *)ecs_component_column(c, 2))[i], 1);
  CHECK_EQ_INT(((uint32_t *)ecs_component_column(c, 3))[i], 3);
  /* an add over an instance is a set; the replaced ref comes back */
  vals4(v, 2.5, 9, 0, 4);
  CHECK_EQ_INT(ecs_component_write(w, c, e, ECS_NO_INSTANCE, true, 0, 4, v, &r), ECS_ERR_OK);
  CHECK(r.written && r.existed);
  CHECK_EQ_INT(r.nold, 1);
  CHECK_EQ_INT(r.old[0], 3);
  CHECK_EQ_INT(l.adds, 1);
  CHECK_EQ_INT(l.sets, 2);
  /* one field (set_field): the others stay */
  v[0].i = 5;
  CHECK_EQ_INT(ecs_component_write(w, c, e, ECS_NO_INSTANCE, false, 1, 1, v, &r), ECS_ERR_OK);
  CHECK(((float *)ecs_component_column(c, 0))[i] == 2.5f);
  CHECK_EQ_INT(((int16_t *)ecs_component_column(c, 1))[i], 5);
  CHECK_EQ_INT(((uint32_t *)ecs_component_column(c, 3))[i], 4);
  CHECK_EQ_INT(r.nold, 0);
  CHECK_EQ_INT(l.sets, 3);
  /* a listener's error comes back with the values in */
  l.ret = ECS_ERR_INVALID;
  v[0].i = 0; /* the lua field to nil: ref 4 comes back */
  CHECK_EQ_INT(ecs_component_write(w, c, e, ECS_NO_INSTANCE, false, 3, 1, v, &r), ECS_ERR_INVALID);
  CHECK(r.written);
  CHECK_EQ_INT(r.nold, 1);
  CHECK_EQ_INT(r.old[0], 4);
  CHECK_EQ_INT(((uint32_t *)ecs_component_column(c, 3))[i], 0);
  CHECK(ecs_manager_unlisten(w, c, logger, &l));
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* An open journal keeps the old values: their refs are not handed back
** (they come back through ecs_drain_refs once the journal lets go), and
** its undo restores them. */
TEST(Write_under_a_journal) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  ecs_journal *j;
  ecs_entity e;
  ecs_scalar v[4];
  ecs_write_result r;
  uint32_t buf[8];
  size_t n = 0, got;
  CHECK_EQ_INT(ecs_component_new(w, "P", fields, 4, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
  vals4(v, 1.0, 1, 1, 7);
  CHECK_EQ_INT(ecs_component_write(w, c, e, ECS_NO_INSTANCE, true, 0, 4, v, &r), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_journal_open(w, NULL, &j, NULL), ECS_ERR_OK);
  vals4(v, 2.0, 2, 0, 8);
  CHECK_EQ_INT(ecs_component_write(w, c, e, ECS_NO_INSTANCE, false, 0, 4, v, &r), ECS_ERR_OK);
  CHECK_EQ_INT(r.nold, 0); /* the journal keeps 7 */
  CHECK(ecs_journal_pending(j) > 0);
  CHECK_EQ_INT(ecs_journal_undo(w, j), ECS_ERR_OK);
  CHECK(((float *)ecs_component_column(c, 0))[r.row] == 1.0f);
  CHECK_EQ_INT(((uint32_t *)ecs_component_column(c, 3))[r.row], 7);
  ecs_journal_close(w, j);
  /* 8, which the undo replaced, is dropped; 7 is back in its cell */
  while ((got = ecs_drain_refs(w, buf + n, 8 - n)) > 0) n += got;
  CHECK_EQ_INT(n, 1);
  CHECK_EQ_INT(buf[0], 8);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* The row hint is checked: a stale one (the instance moved, or is another
** entity's) is looked up again, never written through. */
TEST(Write_row_hint_checked) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  ecs_entity e1, e2;
  ecs_scalar v[4];
  ecs_write_result r;
  ecs_instance row1, row2;
  CHECK_EQ_INT(ecs_component_new(w, "P", fields, 4, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(w, &e1), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(w, &e2), ECS_ERR_OK);
  vals4(v, 1.0, 1, 0, 0);
  CHECK_EQ_INT(ecs_component_write(w, c, e1, ECS_NO_INSTANCE, true, 0, 4, v, &r),
               ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_write(w, c, e2, ECS_NO_INSTANCE, true, 0, 4, v, &r),
               ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_write_check(w, c, e1, false, &row1), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_write_check(w, c, e2, false, &row2), ECS_ERR_OK);
  CHECK(row1 != row2 && row1 != ECS_NO_INSTANCE && row2 != ECS_NO_INSTANCE);
  /* e2's row given for e1: e1's own row is written */
  vals4(v, 7.0, 7, 1, 0);
  CHECK_EQ_INT(ecs_component_write(w, c, e1, row2, false, 0, 4, v, &r), ECS_ERR_OK);
  CHECK(r.row == row1);
  CHECK(((float *)ecs_component_column(c, 0))[row1] == 7.0f);
  CHECK(((float *)ecs_component_column(c, 0))[row2] == 1.0f);
  /* a row past the size; e1 removed: the set finds no instance */
  CHECK_EQ_INT(ecs_component_write(w, c, e1, 99, false, 0, 4, v, &r), ECS_ERR_OK);
  CHECK(r.row == row1);
  CHECK_EQ_INT(ecs_component_remove(w, c, e1, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_write(w, c, e1, row1, false, 0, 4, v, &r),
               ECS_ERR_MISSING);
  CHECK(!r.written);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* The bulk write of one field: every row, one value or one each, the lua
** refs it replaced handed back (but those a journal keeps), no event. */
TEST(Write_field_n_values_refs_journal) {
  test_alloc a;
  ecs_world *w = new_world(&a);
  ecs_component *c;
  ecs_journal *j;
  ecs_entity e[3];
  ecs_instance rows[3];
  ecs_scalar v[4], each[3], one;
  ecs_write_result r;
  log_t l = {0, 0, ECS_ERR_OK};
  uint32_t refs[3];
  CHECK_EQ_INT(ecs_component_new(w, "P", fields, 4, &c), ECS_ERR_OK);
  for (int i = 0; i < 3; i++) {
    CHECK_EQ_INT(ecs_create(w, &e[i]), ECS_ERR_OK);
    vals4(v, 0.0, 0, 0, i == 1 ? 0 : 10 + i);
    CHECK_EQ_INT(ecs_component_write(w, c, e[i], ECS_NO_INSTANCE, true, 0, 4, v, &r),
                 ECS_ERR_OK);
  }
  CHECK_EQ_INT(ecs_manager_listen(w, c, ECS_EVENT_ADD | ECS_EVENT_SET, logger, &l), ECS_ERR_OK);
  ecs_component_lookup_n(w, c, e, rows, 3);
  one.f = 2.5;
  ecs_component_write_field_n(w, c, 0, rows, 3, NULL, &one, NULL);
  for (int i = 0; i < 3; i++) CHECK(((float *)ecs_component_column(c, 0))[rows[i]] == 2.5f);
  each[0].i = -1, each[1].i = 5, each[2].i = 300;
  ecs_component_write_field_n(w, c, 1, rows, 3, each, NULL, NULL);
  CHECK_EQ_INT(((int16_t *)ecs_component_column(c, 1))[rows[2]], 300);
  CHECK_EQ_INT(((int16_t *)ecs_component_column(c, 1))[rows[0]], -1);
  refs[0] = 20, refs[1] = 21, refs[2] = 0;
  ecs_component_write_field_n(w, c, 3, rows, 3, NULL, NULL, refs);
  CHECK(refs[0] == 10 && refs[1] == 0 && refs[2] == 12); /* replaced */
  CHECK_EQ_INT(((uint32_t *)ecs_component_column(c, 3))[rows[1]], 21);
  CHECK(l.adds == 0 && l.sets == 0);
  /* an open journal keeps what it replaces: nothing handed back */
  CHECK_EQ_INT(ecs_journal_open(w, NULL, &j, NULL), ECS_ERR_OK);
  refs[0] = 30, refs[1] = 31, refs[2] = 32;
  ecs_component_write_field_n(w, c, 3, rows, 3, NULL, NULL, refs);
  CHECK(refs[0] == 0 && refs[1] == 0 && refs[2] == 0);
  CHECK(ecs_journal_pending(j) > 0);
  ecs_journal_close(w, j);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Write_field_n_values_refs_journal),
  CASE(Write_row_hint_checked),
  CASE(Write_checks_in_order),
  CASE(Write_add_then_set_values_and_events),
  CASE(Write_under_a_journal),
};

TEST_MAIN(cases)
