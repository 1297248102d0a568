/*
** test_cursor.c -- chunk cursors (query_cursor.c) and component pins
** (ecs_component_pin) through the core alone: every chunk is a run of the
** rows themselves, however short, so writes by any path are seen by all
** and none is overwritten; written columns are stamped when handed out;
** while a cursor lives every change that would move its managers' rows
** fails with ECS_ERR_PINNED and changes nothing, and the gc leaves them
** alone; ending releases everything (finish or not); errors and memory.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "../support/membuf.h"
#include "ecs.h"
#include "component.h"
#include "query.h"
#include "snapshot.h"
#include "journal.h"

static const ecs_field_def pos_fields[] = {{"x", ECS_F64}, {"y", ECS_F32}};
static const ecs_field_def vel_fields[] = {{"dx", ECS_F64}};

typedef struct fixture {
  test_alloc a;
  ecs_world *w;
  ecs_component *P, *V;
  ecs_query *q;
  ecs_entity e[300];
  unsigned char mem[4096];
} fixture;

static ecs_query_cursor *cursor(fixture *f) {
  return (ecs_query_cursor *)(void *)f->mem;
}

/* n entities with P (x = k) and V (dx = 1); V in the reverse order when
** reversed, so that no run of rows is consecutive in both, and then 2n
** entities with P alone, so that the query (under half of P) is never
** re-aligned and its runs stay one row long. */
static int setup(fixture *f, int n, int reversed) {
  ecs_component *with[2];
  memset(f, 0, sizeof *f);
  if (ecs_query_cursor_size() > sizeof f->mem) return 0;
  f->w = ecs_world_new(test_allocf, &f->a);
  if (f->w == NULL ||
      ecs_component_new(f->w, "P", pos_fields, 2, &f->P) != ECS_ERR_OK ||
      ecs_component_new(f->w, "V", vel_fields, 1, &f->V) != ECS_ERR_OK)
    return 0;
  for (int k = 0; k < n; k++) {
    ecs_instance i;
    if (ecs_create(f->w, &f->e[k]) != ECS_ERR_OK ||
        ecs_component_add(f->w, f->P, f->e[k], &i, NULL) != ECS_ERR_OK)
      return 0;
    ((double *)ecs_component_column(f->P, 0))[i] = k;
  }
  for (int j = 0; j < n; j++) {
    int k = reversed ? n - 1 - j : j;
    ecs_instance i;
    if (ecs_component_add(f->w, f->V, f->e[k], &i, NULL) != ECS_ERR_OK) return 0;
    ((double *)ecs_component_column(f->V, 0))[i] = 1;
  }
  for (int k = 0; reversed && k < 2 * n; k++) {
    ecs_entity x;
    if (ecs_create(f->w, &x) != ECS_ERR_OK ||
        ecs_component_add(f->w, f->P, x, NULL, NULL) != ECS_ERR_OK)
      return 0;
  }
  with[0] = f->P;
  with[1] = f->V;
  return ecs_query_new(f->w, with, 2, NULL, 0, &f->q) == ECS_ERR_OK;
}

static double x_of(fixture *f, int k) {
  return ((double *)ecs_component_column(f->P, 0))[ecs_component_lookup(f->w, f->P, f->e[k])];
}

/* x += dx over every chunk; returns the number of chunks (or -1). */
static int move_all(fixture *f, uint32_t *largest) {
  ecs_column_ref cols[2] = {{NULL, 0, true}, {NULL, 0, false}};
  void *p[2];
  uint32_t n;
  int chunks = 0;
  cols[0].c = f->P;
  cols[1].c = f->V;
  *largest = 0;
  if (ecs_query_cursor_begin(f->w, f->q, cols, 2, cursor(f)) != ECS_ERR_OK) return -1;
  for (;;) {
    if (ecs_query_cursor_next(f->w, cursor(f), p, NULL, &n) != ECS_ERR_OK) return -1;
    if (n == 0) break;
    for (uint32_t j = 0; j < n; j++) ((double *)p[0])[j] += ((const double *)p[1])[j];
    if (n > *largest) *largest = n;
    chunks++;
  }
  ecs_query_cursor_end(f->w, cursor(f), true);
  return chunks;
}

TEST(Cursor_in_place_chunks_write_the_columns) {
  fixture f;
  uint32_t largest;
  CHECK(setup(&f, 300, 0));
  CHECK_EQ_INT(move_all(&f, &largest), 1); /* one run: no copies */
  CHECK_EQ_INT(largest, 300);
  for (int k = 0; k < 300; k++) CHECK(x_of(&f, k) == k + 1);
  CHECK_EQ_INT(ecs_component_pins(f.P), 0);
  CHECK_EQ_INT(ecs_world_pins(f.w), 0);
  CHECK_WORLD(f.w);
  ecs_query_free(f.w, f.q);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* Every run is handed out in place, however short: with V's rows running
** backwards against P's, each chunk is one row, and its pointers are the
** rows themselves. A column list that leaves a term out is cut by its
** own terms' runs only: P's rows alone are one run (the list is in the
** order of P's rows, its first term), V's alone are runs of one. */
TEST(Cursor_hands_out_every_run_in_place) {
  fixture f;
  ecs_column_ref cols[2] = {{NULL, 0, true}, {NULL, 0, false}};
  void *p[2];
  const ecs_entity *ents;
  uint32_t largest, n;
  int chunks;
  CHECK(setup(&f, 300, 1));
  chunks = move_all(&f, &largest);
  CHECK_EQ_INT(chunks, 300);
  CHECK_EQ_INT(largest, 1);
  for (int k = 0; k < 300; k++) CHECK(x_of(&f, k) == k + 1);
  cols[0].c = f.P;
  cols[1].c = f.V;
  CHECK_EQ_INT(ecs_query_cursor_begin(f.w, f.q, cols, 2, cursor(&f)), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_cursor_next(f.w, cursor(&f), p, &ents, &n), ECS_ERR_OK);
  CHECK_EQ_INT(n, 1);
  CHECK(p[0] == (double *)ecs_component_column(f.P, 0) +
                    ecs_component_lookup(f.w, f.P, ents[0]));
  CHECK(p[1] == (double *)ecs_component_column(f.V, 0) +
                    ecs_component_lookup(f.w, f.V, ents[0]));
  ecs_query_cursor_end(f.w, cursor(&f), true);
  /* P alone (the list follows P's rows): consecutive over the whole
  ** list; V alone: every row a run of its own */
  CHECK_EQ_INT(ecs_query_cursor_begin(f.w, f.q, cols, 1, cursor(&f)), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_cursor_next(f.w, cursor(&f), p, NULL, &n), ECS_ERR_OK);
  CHECK_EQ_INT(n, 300);
  CHECK_EQ_INT(ecs_query_cursor_next(f.w, cursor(&f), p, NULL, &n), ECS_ERR_OK);
  CHECK_EQ_INT(n, 0);
  ecs_query_cursor_end(f.w, cursor(&f), true);
  CHECK_EQ_INT(ecs_query_cursor_begin(f.w, f.q, cols + 1, 1, cursor(&f)), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_cursor_next(f.w, cursor(&f), p, NULL, &n), ECS_ERR_OK);
  CHECK_EQ_INT(n, 1);
  ecs_query_cursor_end(f.w, cursor(&f), true);
  CHECK_WORLD(f.w);
  ecs_query_free(f.w, f.q);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* Writes made by other paths while a chunk is handed out (a store into
** the column, a nested cursor) are seen through the chunk's pointers at
** once and never overwritten, whatever the layout or the ending: the
** cursor holds no copy. (It used to gather runs under 32 rows into
** scratch and scatter them back over such writes.) */
TEST(Cursor_writes_by_other_paths_during_a_chunk_stay) {
  for (int reversed = 0; reversed <= 1; reversed++)
    for (int finish = 0; finish <= 1; finish++) {
      fixture f;
      ecs_column_ref col = {NULL, 0, true};
      void *p[1], *q[1];
      const ecs_entity *ents;
      uint32_t n, m;
      double *x;
      CHECK(setup(&f, reversed ? 300 : 10, reversed));
      col.c = f.P;
      x = (double *)ecs_component_column(f.P, 0);
      CHECK_EQ_INT(ecs_query_cursor_begin(f.w, f.q, &col, 1, cursor(&f)), ECS_ERR_OK);
      CHECK_EQ_INT(ecs_query_cursor_next(f.w, cursor(&f), p, &ents, &n), ECS_ERR_OK);
      CHECK(n > 0);
      x[ecs_component_lookup(f.w, f.P, ents[0])] = -7; /* another path */
      CHECK(((double *)p[0])[0] == -7);                /* seen at once */
      {
        uint64_t mem[512]; /* aligned for pointers and 64-bit integers */
        ecs_query_cursor *inner = (ecs_query_cursor *)(void *)mem;
        CHECK(ecs_query_cursor_size() <= sizeof mem);
        CHECK_EQ_INT(ecs_query_cursor_begin(f.w, f.q, &col, 1, inner), ECS_ERR_OK);
        while (ecs_query_cursor_next(f.w, inner, q, NULL, &m) == ECS_ERR_OK && m > 0)
          for (uint32_t j = 0; j < m; j++) ((double *)q[0])[j] = 5;
        ecs_query_cursor_end(f.w, inner, true);
      }
      for (uint32_t j = 0; j < n; j++) CHECK(((double *)p[0])[j] == 5);
      if (finish) /* the rest of the loop, writing nothing */
        while (ecs_query_cursor_next(f.w, cursor(&f), p, NULL, &n) == ECS_ERR_OK && n > 0) {
        }
      ecs_query_cursor_end(f.w, cursor(&f), finish != 0);
      for (int k = 0; k < (reversed ? 300 : 10); k++) CHECK(x_of(&f, k) == 5);
      CHECK_WORLD(f.w);
      ecs_query_free(f.w, f.q);
      ecs_world_free(f.w);
      CHECK_EQ_INT(f.a.blocks, 0);
    }
}

TEST(Cursor_pins_refuse_every_move_and_change_nothing) {
  fixture f;
  ecs_column_ref col = {NULL, 0, true};
  void *p[1];
  uint32_t n, idx;
  ecs_entity x;
  bool removed = true;
  membuf out;
  ecs_writer wr;
  ecs_reader in;
  CHECK(setup(&f, 100, 0));
  memset(&out, 0, sizeof out);
  wr = membuf_writer(&out);
  CHECK_EQ_INT(ecs_world_save(f.w, &wr), ECS_ERR_OK);
  col.c = f.P;
  CHECK_EQ_INT(ecs_query_cursor_begin(f.w, f.q, &col, 1, cursor(&f)), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_cursor_next(f.w, cursor(&f), p, NULL, &n), ECS_ERR_OK);
  CHECK_EQ_INT(n, 100);
  CHECK_EQ_INT(ecs_component_pins(f.P), 1);
  CHECK_EQ_INT(ecs_component_pins(f.V), 0);
  CHECK_EQ_INT(ecs_create(f.w, &x), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_add(f.w, f.P, x, NULL, NULL), ECS_ERR_PINNED);
  CHECK(ecs_component_lookup(f.w, f.P, x) == ECS_NO_INSTANCE);
  idx = ecs_entity_index(x);
  CHECK_EQ_INT(ecs_component_reserve(f.w, f.P, &idx, 1), ECS_ERR_PINNED);
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, f.e[3], &removed), ECS_ERR_PINNED);
  CHECK(!removed);
  CHECK(ecs_component_lookup(f.w, f.P, f.e[3]) != ECS_NO_INSTANCE);
  /* removing what is not there moves nothing: fine */
  CHECK_EQ_INT(ecs_component_remove(f.w, f.P, x, &removed), ECS_ERR_OK);
  /* other managers are free; a destroyed entity keeps its row (no gc) */
  CHECK_EQ_INT(ecs_component_remove(f.w, f.V, f.e[5], NULL), ECS_ERR_OK);
  CHECK(ecs_destroy(f.w, f.e[7]));
  ecs_world_gc(f.w, SIZE_MAX);
  CHECK_EQ_INT(ecs_component_size(f.P), 100);
  /* world-wide changes while anything is pinned */
  in.data = out.p;
  in.size = out.n;
  in.pos = 0;
  CHECK_EQ_INT(ecs_world_load(f.w, &in), ECS_ERR_PINNED);
  ((double *)p[0])[99] = -1; /* the pointer is still the row's */
  CHECK_WORLD(f.w);
  ecs_query_cursor_end(f.w, cursor(&f), true);
  ecs_query_cursor_end(f.w, cursor(&f), true); /* idempotent */
  CHECK_EQ_INT(ecs_component_pins(f.P), 0);
  CHECK(x_of(&f, 99) == -1);
  CHECK_EQ_INT(ecs_component_add(f.w, f.P, x, NULL, NULL), ECS_ERR_OK);
  ecs_world_gc(f.w, SIZE_MAX);
  CHECK_EQ_INT(ecs_component_size(f.P), 100); /* e[7] gone, x added */
  CHECK_WORLD(f.w);
  membuf_free(&out);
  ecs_query_free(f.w, f.q);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

TEST(Cursor_errors_hold_nothing_and_memory_failures_are_clean) {
  fixture f;
  ecs_column_ref cols[2] = {{NULL, 0, true}, {NULL, 0, false}};
  void *p[2];
  uint32_t n;
  CHECK(setup(&f, 300, 1));
  cols[0].c = f.P; /* cols[1].c NULL */
  CHECK_EQ_INT(ecs_query_cursor_begin(f.w, f.q, cols, 2, cursor(&f)), ECS_ERR_INVALID);
  cols[1].c = f.V;
  cols[0].field = 7; /* no such field */
  CHECK_EQ_INT(ecs_query_cursor_begin(f.w, f.q, cols, 2, cursor(&f)), ECS_ERR_UNKNOWN_FIELD);
  ecs_query_cursor_end(f.w, cursor(&f), true); /* a no-op after an error */
  CHECK_EQ_INT(ecs_world_pins(f.w), 0);
  cols[0].field = 0;
  CHECK_EQ_INT(ecs_query_cursor_begin(f.w, f.q, cols, 2, cursor(&f)), ECS_ERR_OK);
  f.a.fail_at = f.a.calls + 1; /* a step allocates nothing: no copy to make */
  CHECK_EQ_INT(ecs_query_cursor_next(f.w, cursor(&f), p, NULL, &n), ECS_ERR_OK);
  f.a.fail_at = 0;
  CHECK_EQ_INT(n, 1);
  CHECK_EQ_INT(ecs_world_pins(f.w), 2);
  ecs_query_cursor_end(f.w, cursor(&f), true);
  CHECK_EQ_INT(ecs_world_pins(f.w), 0);
  CHECK_EQ_INT(ecs_component_pin(f.w, f.P), ECS_ERR_OK); /* pins nest */
  CHECK_EQ_INT(ecs_component_pin(f.w, f.P), ECS_ERR_OK);
  ecs_component_unpin(f.w, f.P);
  CHECK_EQ_INT(ecs_component_pins(f.P), 1);
  ecs_component_unpin(f.w, f.P);
  ecs_component_unpin(f.w, f.P); /* below zero: ignored */
  CHECK_EQ_INT(ecs_world_pins(f.w), 0);
  CHECK_WORLD(f.w);
  ecs_query_free(f.w, f.q);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

/* A REMOVE policy on a pinned component waits for the pin: the destroy
** succeeds, the holder keeps its row, and the sweep after the unpin
** (a hold's release, or the next destroy) removes it. */
TEST(Cursor_pins_put_off_remove_cleanups) {
  static const ecs_field_def tether_fields[] = {{"x", ECS_F64}, {"to", ECS_ENTITY}};
  fixture f;
  ecs_component *T;
  ecs_entity target, holder, other;
  ecs_instance i;
  CHECK(setup(&f, 4, 0));
  CHECK_EQ_INT(ecs_component_new(f.w, "T", tether_fields, 2, &T), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_set_cleanup(f.w, T, 1, ECS_CLEANUP_REMOVE), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(f.w, &target), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(f.w, &holder), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create(f.w, &other), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_add(f.w, T, holder, &i, NULL), ECS_ERR_OK);
  ((ecs_entity *)ecs_component_column(T, 1))[i] = target;
  CHECK_EQ_INT(ecs_component_pin(f.w, T), ECS_ERR_OK);
  CHECK(ecs_destroy(f.w, target));
  CHECK_EQ_INT(ecs_component_count(f.w, T), 1); /* put off */
  CHECK_WORLD(f.w);
  ecs_cleanup_hold(f.w);
  CHECK_EQ_INT(ecs_cleanup_release(f.w), ECS_ERR_OK); /* still pinned */
  CHECK_EQ_INT(ecs_component_count(f.w, T), 1);
  ecs_component_unpin(f.w, T);
  ecs_cleanup_hold(f.w);
  CHECK_EQ_INT(ecs_cleanup_release(f.w), ECS_ERR_OK); /* owed: swept now */
  CHECK_EQ_INT(ecs_component_count(f.w, T), 0);
  /* without a release, the next destroy owes it */
  CHECK_EQ_INT(ecs_component_add(f.w, T, other, &i, NULL), ECS_ERR_OK);
  ((ecs_entity *)ecs_component_column(T, 1))[i] = holder;
  CHECK_EQ_INT(ecs_component_pin(f.w, T), ECS_ERR_OK);
  CHECK(ecs_destroy(f.w, holder));
  CHECK_EQ_INT(ecs_component_count(f.w, T), 1);
  ecs_component_unpin(f.w, T);
  CHECK(ecs_destroy(f.w, f.e[0]));
  CHECK_EQ_INT(ecs_component_count(f.w, T), 0);
  CHECK_WORLD(f.w);
  ecs_query_free(f.w, f.q);
  ecs_world_free(f.w);
  CHECK_EQ_INT(f.a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Cursor_pins_put_off_remove_cleanups),
  CASE(Cursor_in_place_chunks_write_the_columns),
  CASE(Cursor_hands_out_every_run_in_place),
  CASE(Cursor_writes_by_other_paths_during_a_chunk_stay),
  CASE(Cursor_pins_refuse_every_move_and_change_nothing),
  CASE(Cursor_errors_hold_nothing_and_memory_failures_are_clean),
};

TEST_MAIN(cases)
