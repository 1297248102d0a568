/*
** test_journal.c -- the journal, deltas and undo, on the core directly
** (journal.h): random changes of a base world (journal_base.h) carried to
** a replica by deltas, undo back to the mark, the state hash against a
** fresh computation, damaged and forged deltas, and out of memory in
** delta, apply and undo.
**
** With ECS_WRITE_DELTA_SEEDS=dir it also writes the seeds of the delta
** fuzz corpus (test/fuzz/delta/): deltas of jb_change against the base.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../support/delta_forge.h"
#include "ecs_private.h" /* w->journal: the hash from scratch */
#include "../support/harness.h"
#include "../support/journal_base.h"
#include "../support/membuf.h"
#include "query.h"
#include "snapshot.h"

static uint64_t state_hash(ecs_world *w) {
  uint64_t h = 0;
  if (ecs_world_state_hash(w, NULL, &h, NULL) != ECS_ERR_OK) abort();
  return h;
}

/* The hash from scratch: no journal in the way. */
static uint64_t full_hash(ecs_world *w) {
  ecs_journal *j = w->journal; /* (test only: the struct is the core's) */
  uint64_t h;
  w->journal = NULL;
  h = state_hash(w);
  w->journal = j;
  return h;
}

static ecs_err delta(ecs_world *w, ecs_journal *j, membuf *out) {
  const void *p;
  size_t n;
  ecs_err err = ecs_journal_delta(w, j, NULL, &p, &n, NULL);
  if (err != ECS_ERR_OK) return err;
  out->n = 0;
  if (membuf_write(out, p, n) != ECS_ERR_OK) abort();
  ecs_journal_mark(w, j);
  return ECS_ERR_OK;
}

static ecs_err apply(ecs_world *w, const membuf *d) {
  ecs_delta dd;
  ecs_err err = ecs_delta_open(w, &dd, d->p, d->n);
  if (err != ECS_ERR_OK) return err;
  return ecs_delta_apply(w, &dd, NULL, NULL, NULL);
}

static void snap(const ecs_world *w, membuf *b) {
  ecs_writer out = membuf_writer(b);
  b->n = 0;
  if (ecs_world_save(w, &out) != ECS_ERR_OK) abort();
}

TEST(Journal_deltas_carry_random_changes_to_a_replica) {
  jb_world a, r;
  ecs_journal *j;
  membuf d = {0};
  CHECK_EQ_INT(jb_build(&a, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(jb_build(&r, NULL, NULL), ECS_ERR_OK);
  CHECK(state_hash(a.w) == state_hash(r.w));
  CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL) == ECS_ERR_JOURNAL_OPEN, 1);
  for (uint32_t round = 1; round <= 60; round++) {
    CHECK_EQ_INT(jb_change(&a, round, 1 + (int)(round % 7) * 15), ECS_ERR_OK);
    CHECK(state_hash(a.w) == full_hash(a.w)); /* the incremental hash */
    CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_OK);
    CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_OK);
    CHECK(state_hash(r.w) == state_hash(a.w));
    CHECK_WORLD(r.w);
    /* the same delta again: the replica is no longer its base (unless the
    ** changes left the state as it was: then base and result are equal) */
    if (memcmp(d.p + 12, d.p + 20, 8) != 0)
      CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_BASE);
    { /* the same next ids (asked without creating) */
      uint32_t na[4], nr[4];
      CHECK_EQ_INT(ecs_next_indices(a.w, na, 4), ECS_ERR_OK);
      CHECK_EQ_INT(ecs_next_indices(r.w, nr, 4), ECS_ERR_OK);
      CHECK(memcmp(na, nr, sizeof na) == 0);
    }
  }
  CHECK_WORLD(a.w);
  ecs_journal_close(a.w, j);
  free(d.p);
  ecs_world_free(a.w);
  ecs_world_free(r.w);
}

/*
** After-images (src/persist/journal_image.c): two equal worlds get the same
** changes; in one every single write ends with ecs_component_written (the
** journal copies the row then), in the other with a plain touch (the
** delta reads the row). Their deltas must be equal byte for byte, round
** after round, with single writes placed where a bulk writer writes the
** same rows after them: inside a native run's chunks (rows of the chunk
** and of later chunks, then written through the view), inside a cursor
** loop (pinned: no copy), before an entity's removal or death, twice in a
** row, and two prepared before either is told.
*/
typedef struct told_world {
  jb_world b;
  ecs_journal *j;
  ecs_query *q;
  bool written; /* end single writes as one complete write (else bulk) */
  uint32_t seed;
} told_world;

static void told_write(told_world *t, ecs_instance i, uint32_t v) {
  ecs_component_write_begin(t->b.w, t->b.P, NULL, i, 1);
  ((float *)ecs_component_column(t->b.P, 0))[i] = (float)v;
  ((double *)ecs_component_column(t->b.P, 1))[i] = v * 0.25;
  if (t->written) ecs_component_write_end(t->b.w, t->b.P, NULL, i, 1);
  else ecs_component_write_end(t->b.w, t->b.P, &(ecs_instance){i}, 0, 1);
}

/* A row of P whose owner lives (most rows of a world without gc do not),
** or the row of a dead one after 16 tries. */
static ecs_instance told_row(told_world *t) {
  uint32_t n = ecs_component_size(t->b.P), i = 0;
  for (int k = 0; k < 16 && n > 0; k++) {
    i = jb_rand(&t->seed) % n;
    if (ecs_alive(t->b.w, ecs_component_entities(t->b.P)[i])) break;
  }
  return i;
}

/* A native system: a single write of some row of the run (maybe one a
** later chunk hands out), then every row of the chunk through the view. */
static void told_system(ecs_world *w, const ecs_view *v, void *ud) {
  told_world *t = (told_world *)ud;
  uint32_t n = ecs_component_size(t->b.P);
  (void)w;
  if (n > 0) told_write(t, told_row(t), jb_rand(&t->seed));
  for (uint32_t k = 0; k < v->count; k++) ((float *)v->out[0])[k] += 1.0f;
}

static void told_round(told_world *t, uint32_t round) {
  ecs_world *w = t->b.w;
  ecs_component *P = t->b.P;
  t->seed = round * 7919u + 1u;
  if (jb_change(&t->b, round, 20) != ECS_ERR_OK) abort();
  for (int k = 0; k < 8; k++) { /* new instances, given values at once */
    ecs_entity e;
    ecs_instance i;
    if (ecs_create(w, &e) != ECS_ERR_OK ||
        ecs_component_add(w, P, e, &i, NULL) != ECS_ERR_OK)
      abort();
    told_write(t, i, jb_rand(&t->seed));
  }
  for (int k = 0; k < 40; k++) {
    uint32_t n = ecs_component_size(P), op = jb_rand(&t->seed) % 9u;
    ecs_instance i, i2;
    const ecs_entity *own = ecs_component_entities(P);
    if (n == 0) break;
    i = told_row(t);
    i2 = told_row(t);
    switch (op) {
    case 0: case 1: told_write(t, i, jb_rand(&t->seed)); break;
    case 2: /* twice */
      told_write(t, i, jb_rand(&t->seed));
      told_write(t, i, jb_rand(&t->seed));
      break;
    case 3: { /* two prepared, then told in the other order */
      ecs_component_write_begin(w, P, NULL, i, 1);
      ecs_component_write_begin(w, P, NULL, i2, 1);
      ((float *)ecs_component_column(P, 0))[i] = 3.0f;
      ((float *)ecs_component_column(P, 0))[i2] = 4.0f;
      if (t->written) {
        ecs_component_write_end(w, P, NULL, i2, 1);
        ecs_component_write_end(w, P, NULL, i, 1);
      } else {
        ecs_component_write_end(w, P, &(ecs_instance){i2}, 0, 1);
        ecs_component_write_end(w, P, &(ecs_instance){i}, 0, 1);
      }
      break;
    }
    case 4: { /* written, then removed or its entity destroyed */
      ecs_entity e = own[i];
      told_write(t, i, 5);
      if (ecs_alive(w, e)) {
        if (jb_rand(&t->seed) & 1u) (void)ecs_destroy(w, e);
        else (void)ecs_component_remove(w, P, e, NULL);
      }
      break;
    }
    case 5: { /* a native run whose chunks write after single writes */
      ecs_column_ref col = {P, 0, true};
      if (ecs_query_run(w, t->q, &col, 1, 1.0, told_system, t, NULL) != ECS_ERR_OK)
        abort();
      break;
    }
    case 6: { /* a cursor loop: pinned, a single write inside, then the pointer */
      ecs_column_ref col = {P, 0, true};
      ecs_query_cursor *cur = (ecs_query_cursor *)malloc(ecs_query_cursor_size());
      void *ptr[1];
      uint32_t count;
      told_write(t, i, 77); /* before: the first chunk makes it stale */
      if (cur == NULL || ecs_query_cursor_begin(w, t->q, &col, 1, cur) != ECS_ERR_OK)
        abort();
      while (ecs_query_cursor_next(w, cur, ptr, NULL, &count) == ECS_ERR_OK &&
             count > 0) {
        told_write(t, told_row(t), 9);
        for (uint32_t r = 0; r < count; r++) ((float *)ptr[0])[r] -= 2.0f;
      }
      ecs_query_cursor_end(w, cur, true);
      free(cur);
      break;
    }
    case 7: /* dead records collected: rows move under the images */
      (void)ecs_component_gc(w, P, 1u + jb_rand(&t->seed) % 8u);
      break;
    default: /* a plain touch after a told write, then written again */
      told_write(t, i, 1);
      ecs_component_write_end(w, P, &(ecs_instance){i}, 0, 1);
      told_write(t, i, 2);
      break;
    }
  }
}

TEST(Journal_after_images_give_the_deltas_the_rows_give) {
  told_world t[2];
  membuf d[2] = {{0}, {0}};
  for (int k = 0; k < 2; k++) {
    ecs_component *with[2];
    CHECK_EQ_INT(jb_build(&t[k].b, NULL, NULL), ECS_ERR_OK);
    with[0] = t[k].b.P; /* the bulk writers take the rows with V: the */
    with[1] = t[k].b.V; /* others keep their images */
    CHECK_EQ_INT(ecs_query_new(t[k].b.w, with, 2, NULL, 0, &t[k].q), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_journal_open(t[k].b.w, NULL, &t[k].j, NULL), ECS_ERR_OK);
    t[k].written = k == 0;
  }
  for (uint32_t round = 1; round <= 80; round++) {
    for (int k = 0; k < 2; k++) {
      told_round(&t[k], round);
      CHECK_WORLD(t[k].b.w); /* every current image equals its row */
      CHECK(state_hash(t[k].b.w) == full_hash(t[k].b.w));
      CHECK_EQ_INT(delta(t[k].b.w, t[k].j, &d[k]), ECS_ERR_OK);
    }
    CHECK(d[0].n == d[1].n && memcmp(d[0].p, d[1].p, d[0].n) == 0);
  }
  for (int k = 0; k < 2; k++) {
    ecs_journal_close(t[k].b.w, t[k].j);
    ecs_query_free(t[k].b.w, t[k].q);
    ecs_world_free(t[k].b.w);
    free(d[k].p);
  }
}

/* An image that finds no memory is not taken (the delta reads the row);
** a capture that finds none loses the journal, as before. Each allocation
** of a run of single writes fails in turn: the delta is the one of a world
** told with plain touches, or the journal says it is lost. */
TEST(Journal_after_images_without_memory_read_the_rows) {
  for (long n = 1; n < 2000; n++) {
    test_alloc ta = {0, 0, 0, 0, 0};
    told_world t[2];
    membuf d[2] = {{0}, {0}};
    bool lost, reached;
    for (int k = 0; k < 2; k++) {
      CHECK_EQ_INT(jb_build(&t[k].b, k == 0 ? test_allocf : NULL, &ta), ECS_ERR_OK);
      CHECK_EQ_INT(ecs_journal_open(t[k].b.w, NULL, &t[k].j, NULL), ECS_ERR_OK);
      t[k].written = k == 0;
      t[k].seed = 5;
      t[k].q = NULL;
    }
    ta.fail_at = ta.calls + n;
    for (int k = 0; k < 2; k++)
      for (int m = 0; m < 60; m++) told_write(&t[k], told_row(&t[k]), (uint32_t)m);
    lost = ecs_journal_lost(t[0].j, NULL);
    reached = ta.calls >= ta.fail_at;
    ta.fail_at = 0;
    CHECK_WORLD(t[0].b.w);
    if (!lost) {
      for (int k = 0; k < 2; k++) CHECK_EQ_INT(delta(t[k].b.w, t[k].j, &d[k]), ECS_ERR_OK);
      CHECK(d[0].n == d[1].n && memcmp(d[0].p, d[1].p, d[0].n) == 0);
    }
    for (int k = 0; k < 2; k++) {
      ecs_journal_close(t[k].b.w, t[k].j);
      ecs_world_free(t[k].b.w);
      free(d[k].p);
    }
    CHECK_EQ_INT(ta.blocks, 0);
    if (!reached) { /* nothing failed: every allocation point was swept */
      CHECK(n > 5);
      break;
    }
  }
}

TEST(Journal_undo_returns_to_the_mark) {
  jb_world a;
  ecs_journal *j;
  membuf before = {0}, after = {0}, d = {0};
  CHECK_EQ_INT(jb_build(&a, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL), ECS_ERR_OK);
  for (uint32_t round = 1; round <= 40; round++) {
    uint64_t h = state_hash(a.w);
    ecs_entity e1, e2;
    snap(a.w, &before);
    CHECK_EQ_INT(jb_change(&a, 100 + round, 5 + (int)round * 3), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_journal_undo(a.w, j), ECS_ERR_OK);
    CHECK_WORLD(a.w);
    CHECK(state_hash(a.w) == h);
    CHECK(full_hash(a.w) == h);
    CHECK_EQ_INT(ecs_journal_pending(j), 0);
    /* the same next ids as before the changes: compare with a restore */
    {
      ecs_world *c = ecs_world_new(NULL, NULL);
      jb_world cb;
      ecs_reader in;
      CHECK_EQ_INT(jb_build(&cb, NULL, NULL), ECS_ERR_OK);
      in.data = before.p;
      in.size = before.n;
      in.pos = 0;
      CHECK_EQ_INT(ecs_world_load(cb.w, &in), ECS_ERR_OK);
      CHECK_EQ_INT(ecs_create(cb.w, &e1), ECS_ERR_OK);
      CHECK_EQ_INT(ecs_create(a.w, &e2), ECS_ERR_OK);
      CHECK(e1 == e2);
      ecs_world_free(cb.w);
      ecs_world_free(c);
    }
    /* keep going from here: a delta moves the mark */
    CHECK_EQ_INT(jb_change(&a, 200 + round, 10), ECS_ERR_OK);
    CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_OK);
  }
  /* an undo with nothing changed changes nothing */
  snap(a.w, &before);
  CHECK_EQ_INT(ecs_journal_undo(a.w, j), ECS_ERR_OK);
  snap(a.w, &after);
  CHECK(before.n == after.n && memcmp(before.p, after.p, before.n) == 0);
  ecs_journal_close(a.w, j);
  free(before.p);
  free(after.p);
  free(d.p);
  ecs_world_free(a.w);
}

/* Every cut and every changed byte of a delta: an error, and the replica
** as it was. */
TEST(Journal_damaged_deltas_change_nothing) {
  jb_world a, r;
  ecs_journal *j;
  membuf d = {0}, bad = {0}, s0 = {0}, s1 = {0};
  CHECK_EQ_INT(jb_build(&a, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(jb_build(&r, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(jb_change(&a, 7, 12), ECS_ERR_OK);
  CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_OK);
  snap(r.w, &s0);
  for (size_t cut = 0; cut < d.n; cut++) {
    bad.n = 0;
    CHECK_EQ_INT(membuf_write(&bad, d.p, cut), ECS_ERR_OK);
    CHECK(apply(r.w, &bad) != ECS_ERR_OK);
  }
  for (size_t at = 0; at < d.n; at++) {
    bad.n = 0;
    CHECK_EQ_INT(membuf_write(&bad, d.p, d.n), ECS_ERR_OK);
    bad.p[at] ^= 0x5a;
    CHECK(apply(r.w, &bad) != ECS_ERR_OK);
    /* sealed again: the checks behind the checksum */
    if (at + 8 < d.n) {
      uint64_t h = ecs_snapshot_hash(bad.p, bad.n - 8);
      for (int k = 0; k < 8; k++) bad.p[bad.n - 8 + (size_t)k] = (unsigned char)(h >> (8 * k));
      (void)apply(r.w, &bad); /* may apply (a forged but valid delta) */
      CHECK_WORLD(r.w);
      /* back to the base for the next byte */
      {
        ecs_reader in;
        in.data = s0.p;
        in.size = s0.n;
        in.pos = 0;
        CHECK_EQ_INT(ecs_world_load(r.w, &in), ECS_ERR_OK);
      }
    }
  }
  snap(r.w, &s1);
  CHECK(s0.n == s1.n && memcmp(s0.p, s1.p, s0.n) == 0);
  CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_OK);
  CHECK(state_hash(r.w) == state_hash(a.w));
  ecs_journal_close(a.w, j);
  free(d.p);
  free(bad.p);
  free(s0.p);
  free(s1.p);
  ecs_world_free(a.w);
  ecs_world_free(r.w);
}

/*
** Undo puts the free indices back exactly as they were at the mark: the
** slot count (also 0, a world that never made an entity), the queue in
** order. A property test: random creations (one, batches of up to 1300,
** which pass the 1024 entries after which freed indices are reused),
** destroys (one, many) and undos; after each undo the world's snapshot is
** the mark's byte for byte, its check passes, and the ids it hands out
** are the ones it would have handed out at the mark. Some rounds end with
** a delta instead, which a replica applies: its snapshot and next ids are
** the source's. Undo of a world's first entity used to leave the slot
** count 0 with the slots allocated, and the next create handed out index
** 0: ECS_NULL, alive.
*/
static void random_ops(ecs_world *w, ecs_component *P, uint32_t *s, int ops) {
  for (int k = 0; k < ops; k++) {
    uint32_t op = jb_rand(s) % 6u;
    if (op <= 1) { /* one */
      ecs_entity e;
      if (ecs_create(w, &e) != ECS_ERR_OK) abort();
      if (op == 1 && ecs_component_add(w, P, e, NULL, NULL) != ECS_ERR_OK) abort();
    } else if (op == 2) { /* a batch, some of them kept */
      uint32_t n = 1u + jb_rand(s) % 1300u;
      ecs_entity *es = (ecs_entity *)malloc(n * sizeof *es);
      if (es == NULL || ecs_create_n(w, es, n) != ECS_ERR_OK) abort();
      for (uint32_t i = 0; i < n; i++)
        if (jb_rand(s) % 3u == 0) (void)ecs_destroy(w, es[i]);
      free(es);
    } else { /* destroy some live ones */
      uint32_t n = op == 5 ? 1u + jb_rand(s) % 800u : 1u, cursor = 1;
      ecs_entity e;
      while (n > 0 && ecs_next_entity(w, &cursor, &e)) {
        if (jb_rand(s) % 2u == 0) {
          (void)ecs_destroy(w, e);
          n--;
        }
      }
    }
  }
}

#define NEXT_IDS 1500u

TEST(Journal_undo_restores_the_free_indices) {
  static const ecs_field_def pf[] = {{"x", ECS_I32}};
  uint32_t *want = (uint32_t *)malloc(NEXT_IDS * sizeof *want);
  ecs_entity *got = (ecs_entity *)malloc(NEXT_IDS * sizeof *got);
  CHECK(want != NULL && got != NULL);
  for (uint32_t seed = 1; seed <= 12; seed++) {
    uint32_t s = seed * 2654435761u;
    ecs_world *w = ecs_world_new(NULL, NULL), *rep = ecs_world_new(NULL, NULL);
    ecs_component *P, *RP;
    ecs_journal *j;
    membuf mark = {0}, now = {0}, d = {0};
    CHECK(w != NULL && rep != NULL);
    CHECK_EQ_INT(ecs_component_new(w, "P", pf, 1, &P), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_component_new(rep, "P", pf, 1, &RP), ECS_ERR_OK);
    if (seed % 3 != 1) random_ops(w, P, &s, (int)seed); /* else: never an entity */
    snap(w, &mark);
    {
      ecs_reader in = {mark.p, mark.n, 0};
      CHECK_EQ_INT(ecs_world_load(rep, &in), ECS_ERR_OK);
    }
    CHECK_EQ_INT(ecs_journal_open(w, NULL, &j, NULL), ECS_ERR_OK);
    for (uint32_t round = 0; round < 16; round++) {
      size_t k = NEXT_IDS;
      snap(w, &mark);
      if (ecs_next_indices(w, want, k) != ECS_ERR_OK) abort();
      random_ops(w, P, &s, 1 + (int)(jb_rand(&s) % 6u));
      if (round % 4 == 3) { /* a delta: the mark moves, the replica follows */
        CHECK_EQ_INT(delta(w, j, &d), ECS_ERR_OK);
        CHECK_EQ_INT(apply(rep, &d), ECS_ERR_OK);
        CHECK_WORLD(rep);
        snap(w, &now);
        snap(rep, &mark);
        CHECK(now.n == mark.n && memcmp(now.p, mark.p, now.n) == 0);
        CHECK_EQ_INT(ecs_next_indices(w, want, k), ECS_ERR_OK);
        CHECK_EQ_INT(ecs_next_indices(rep, got, k), ECS_ERR_OK);
        CHECK(memcmp(want, got, k * sizeof *want) == 0);
        continue;
      }
      CHECK_EQ_INT(ecs_journal_undo(w, j), ECS_ERR_OK);
      CHECK_WORLD(w);
      snap(w, &now);
      CHECK(now.n == mark.n && memcmp(now.p, mark.p, now.n) == 0);
      /* the ids the world hands out are the mark's */
      CHECK_EQ_INT(ecs_create_n(w, got, k), ECS_ERR_OK);
      CHECK_WORLD(w);
      for (size_t i = 0; i < k; i++) {
        if (ecs_entity_index(got[i]) != want[i])
          fprintf(stderr, "seed %u round %u: id %u is entity(%u.%u), the mark's next index %u\n",
                  (unsigned)seed, (unsigned)round, (unsigned)i,
                  (unsigned)ecs_entity_index(got[i]),
                  (unsigned)ecs_entity_generation(got[i]), (unsigned)want[i]);
        CHECK_EQ_INT(ecs_entity_index(got[i]), want[i]);
        CHECK(got[i] != ECS_NULL);
      }
      CHECK_EQ_INT(ecs_journal_undo(w, j), ECS_ERR_OK);
      CHECK_WORLD(w);
      snap(w, &now);
      CHECK(now.n == mark.n && memcmp(now.p, mark.p, now.n) == 0);
    }
    ecs_journal_close(w, j);
    ecs_world_free(w);
    ecs_world_free(rep);
    free(mark.p);
    free(now.p);
    free(d.p);
  }
  free(want);
  free(got);
}

/*
** Forged deltas, sealed with a correct checksum (test/support/delta_forge.h): each
** breaks one structural rule of the format -- every manager named once,
** every entity index once per component, counts within what the parts
** hold -- and must be refused with the replica exactly as it was (its
** snapshot bytes, its check); the real delta still applies after. The
** records of one component split over two entries used to pass: the room
** reserved for each entry was not summed, so 8 records broke the map and
** 9 or more wrote past the rows.
*/
typedef struct forge_case {
  const char *id, *what; /* id: the name of its seed in test/fuzz/delta/ */
  void (*edit)(df_delta *d, int p);
  ecs_err want; /* the error, or OK for any refusal: a count that the
                ** records do not fill misreads what follows as a manager */
} forge_case;

static void forge_split(df_delta *d, int p) { /* P's records over two entries */
  df_man *x = &d->man[p];
  uint32_t half = x->nrec / 2;
  (void)df_add_entry(d, (uint32_t)p, half, x->nrec - half);
  x->nrec = x->count = half;
}

static void forge_twice(df_delta *d, int p) { /* P's entry again, whole */
  (void)df_add_entry(d, (uint32_t)p, 0, d->man[p].nrec);
}

static void forge_entity_in_both(df_delta *d, int p) { /* one record in two entries */
  (void)df_add_entry(d, (uint32_t)p, 0, 1);
}

static void forge_entity_twice(df_delta *d, int p) { /* a record repeated */
  df_man *x = &d->man[p];
  x->rec[x->nrec++] = x->rec[0];
  x->count++;
}

static void forge_entity_twice_absent(df_delta *d, int p) { /* repeated absent */
  df_man *x = &d->man[p];
  x->rec[x->nrec] = x->rec[0];
  x->rec[x->nrec].owner = 0;
  x->nrec++;
  x->count++;
}

static void forge_count_more(df_delta *d, int p) { d->man[p].count++; }
static void forge_count_less(df_delta *d, int p) { d->man[p].count--; }
static void forge_count_huge(df_delta *d, int p) { d->man[p].count = 0x7fffffffu; }

static void forge_index_zero(df_delta *d, int p) { d->man[p].rec[0].index = 0; }

static void forge_index_past(df_delta *d, int p) { /* past the new slot count */
  d->man[p].rec[0].index = d->counts[1];
}

static void forge_owner_elsewhere(df_delta *d, int p) { /* owner of another index */
  d->man[p].rec[0].owner = d->man[p].rec[1].owner;
}

static void forge_owner_high_bits(df_delta *d, int p) {
  d->man[p].rec[0].owner |= 0x40000000u;
}

static void forge_whole_twice(df_delta *d, int p) { /* the transform twice */
  int t = df_find(d, "transform");
  (void)p;
  if (t >= 0) (void)df_add_entry(d, (uint32_t)t, 0, 0);
}

static void forge_managers_more(df_delta *d, int p) {
  (void)p;
  d->nman++; /* an entry the bytes do not hold */
  d->man[d->nman - 1] = d->man[0];
  d->man[d->nman - 1].rec = NULL;
  d->man[d->nman - 1].nrec = d->man[d->nman - 1].count = 0;
  d->man[d->nman - 1].mode = 0;
}

static void forge_slot_twice(df_delta *d, int p) {
  (void)p;
  d->slot[d->nslot][0] = d->slot[0][0];
  d->slot[d->nslot][1] = d->slot[0][1];
  d->nslot++;
}

static void forge_slots_huge(df_delta *d, int p) {
  (void)p;
  d->counts[1] = ECS_MAX_ENTITIES + 2u;
}

static void forge_live_off(df_delta *d, int p) { /* live + queued != slots - 1 */
  (void)p;
  d->counts[5]++;
}

static void forge_queue_off(df_delta *d, int p) {
  (void)p;
  d->counts[3]++;
}

static void forge_pops_huge(df_delta *d, int p) {
  (void)p;
  d->npopped = 0xffffffffu;
}

static void forge_push_unnamed(df_delta *d, int p) { /* a push of no slot named */
  (void)p;
  d->pushed[d->npushed++] = 1;
  d->counts[3]++;
}

static const forge_case forge_cases[] = {
    {"split", "P's records split over two entries", forge_split, ECS_ERR_CORRUPT},
    {"twice", "P named twice", forge_twice, ECS_ERR_CORRUPT},
    {"entity_in_both", "one entity in two entries of P", forge_entity_in_both, ECS_ERR_CORRUPT},
    {"entity_twice", "one entity twice in P's entry", forge_entity_twice, ECS_ERR_CORRUPT},
    {"entity_twice_absent", "one entity twice in P's entry, once absent", forge_entity_twice_absent, ECS_ERR_CORRUPT},
    {"count_more", "P's count one more than its records", forge_count_more, ECS_ERR_OK},
    {"count_less", "P's count one less than its records", forge_count_less, ECS_ERR_OK},
    {"count_huge", "P's count huge", forge_count_huge, ECS_ERR_CORRUPT},
    {"index_zero", "a record at index 0", forge_index_zero, ECS_ERR_CORRUPT},
    {"index_past", "a record past the slot count", forge_index_past, ECS_ERR_CORRUPT},
    {"owner_elsewhere", "a record whose owner has another index", forge_owner_elsewhere, ECS_ERR_CORRUPT},
    {"owner_high_bits", "a record whose owner has bits above the id", forge_owner_high_bits, ECS_ERR_CORRUPT},
    {"whole_twice", "the transform named twice", forge_whole_twice, ECS_ERR_CORRUPT},
    {"managers_more", "one manager more than the bytes hold", forge_managers_more, ECS_ERR_OK},
    {"slot_twice", "a slot named twice", forge_slot_twice, ECS_ERR_CORRUPT},
    {"slots_huge", "a slot count past the limit", forge_slots_huge, ECS_ERR_CORRUPT},
    {"live_off", "live and queued do not add up", forge_live_off, ECS_ERR_CORRUPT},
    {"queue_off", "a queue length that the operations do not make", forge_queue_off, ECS_ERR_CORRUPT},
    {"pops_huge", "pops beyond any queue", forge_pops_huge, ECS_ERR_CORRUPT},
    {"push_unnamed", "a push of a slot not named", forge_push_unnamed, ECS_ERR_CORRUPT},
};

/* The source of the forged deltas: the base world, made new instances of
** P (the first one given a transform too), a few more changes; its delta
** into d. */
static ecs_err forge_source(jb_world *a, uint32_t made, membuf *d) {
  ecs_journal *j;
  ecs_err err;
  if ((err = jb_build(a, NULL, NULL)) != ECS_ERR_OK ||
      (err = ecs_journal_open(a->w, NULL, &j, NULL)) != ECS_ERR_OK)
    return err;
  for (uint32_t k = 0; k < made && err == ECS_ERR_OK; k++) {
    ecs_entity e;
    ecs_trs trs = {{1, 2, 3}, {0, 0, 0, 1}, {1, 1, 1}};
    if ((err = ecs_create(a->w, &e)) == ECS_ERR_OK &&
        (err = ecs_component_add(a->w, a->P, e, NULL, NULL)) == ECS_ERR_OK &&
        (err = jb_write_p(a, e, k + 1)) == ECS_ERR_OK && k == 0)
      err = ecs_transform_add(a->t, e, &trs); /* a manager kept whole */
  }
  if (err == ECS_ERR_OK) err = jb_change(a, made, 6);
  if (err == ECS_ERR_OK) err = delta(a->w, j, d);
  ecs_journal_close(a->w, j);
  return err;
}

/* Forged case k of the delta d into out. */
static bool forge(df_delta *fd, const membuf *d, size_t k, membuf *out) {
  int p;
  if (!df_parse(fd, d->p, d->n) || (p = df_find(fd, "P")) < 0 ||
      fd->man[p].nrec < 2) {
    df_free(fd);
    return false;
  }
  forge_cases[k].edit(fd, p);
  df_build(fd, out);
  df_free(fd);
  return true;
}

TEST(Journal_forged_deltas_are_refused_whole) {
  df_delta *fd = (df_delta *)malloc(sizeof *fd);
  CHECK(fd != NULL);
  for (uint32_t made = 2; made <= 24; made++) {
    jb_world a, r;
    membuf d = {0}, bad = {0}, s0 = {0}, s1 = {0};
    CHECK_EQ_INT(forge_source(&a, made, &d), ECS_ERR_OK);
    CHECK_EQ_INT(jb_build(&r, NULL, NULL), ECS_ERR_OK);
    snap(r.w, &s0);
    for (size_t k = 0; k < sizeof forge_cases / sizeof forge_cases[0]; k++) {
      ecs_err err;
      CHECK(forge(fd, &d, k, &bad));
      err = apply(r.w, &bad);
      if (forge_cases[k].want == ECS_ERR_OK ? err == ECS_ERR_OK || err == ECS_ERR_NOMEM
                                            : err != forge_cases[k].want) {
        fprintf(stderr, "%u made, %s: %s\n", (unsigned)made, forge_cases[k].what,
                ecs_strerror(err));
        CHECK(false);
      }
      CHECK_WORLD(r.w);
      snap(r.w, &s1);
      CHECK(s0.n == s1.n && memcmp(s0.p, s1.p, s0.n) == 0);
    }
    /* the parts put back together unchanged: the very delta, which applies */
    CHECK(df_parse(fd, d.p, d.n));
    df_build(fd, &bad);
    df_free(fd);
    CHECK(bad.n == d.n && memcmp(bad.p, d.p, d.n) == 0);
    CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_OK);
    CHECK(state_hash(r.w) == state_hash(a.w));
    CHECK_WORLD(r.w);
    ecs_world_free(a.w);
    ecs_world_free(r.w);
    free(d.p);
    free(bad.p);
    free(s0.p);
    free(s1.p);
  }
  free(fd);
}

/* The world a delta was opened against may change before it is applied
** (the host makes its lua values in between, and a finalizer may run
** then): a component redefined since is an error of the apply, never a
** read of the records under the old layout. */
TEST(Journal_a_delta_opened_then_a_component_redefined) {
  static const ecs_field_def wider[] = {
      {"x", ECS_F64}, {"y", ECS_F64}, {"flag", ECS_BOOL}, {"t", ECS_ENTITY},
      {"n", ECS_I8}, {"z", ECS_F64}};
  static const uint32_t from[] = {ECS_NO_FIELD, 1, 2, 3, 4, ECS_NO_FIELD};
  jb_world a, r;
  ecs_journal *j;
  membuf d = {0}, s0 = {0}, s1 = {0};
  ecs_delta dd;
  CHECK_EQ_INT(jb_build(&a, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(jb_build(&r, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(jb_change(&a, 3, 40), ECS_ERR_OK);
  CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_delta_open(r.w, &dd, d.p, d.n), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_redefine(r.w, r.P, wider, 6, from, NULL, NULL, NULL, 0),
               ECS_ERR_OK);
  snap(r.w, &s0);
  CHECK_EQ_INT(ecs_delta_apply(r.w, &dd, NULL, NULL, NULL), ECS_ERR_SCHEMA_DIFFERS);
  snap(r.w, &s1);
  CHECK(s0.n == s1.n && memcmp(s0.p, s1.p, s0.n) == 0);
  CHECK_WORLD(r.w);
  ecs_journal_close(a.w, j);
  ecs_world_free(a.w);
  ecs_world_free(r.w);
  free(d.p);
  free(s0.p);
  free(s1.p);
}

/* Out of memory at each allocation of a delta, an apply and an undo: the
** call fails whole (the mark, the replica, the world as they were). */
TEST(Journal_out_of_memory_fails_whole) {
  for (long n = 1; n < 400; n++) {
    test_alloc ta = {0, 0, 0, 0, 1};
    jb_world a, r;
    ecs_journal *j;
    membuf d = {0}, s0 = {0}, s1 = {0};
    uint64_t ha, hr;
    ecs_err err;
    bool failed = false;
    CHECK_EQ_INT(jb_build(&a, test_allocf, &ta), ECS_ERR_OK);
    CHECK_EQ_INT(jb_build(&r, test_allocf, &ta), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL), ECS_ERR_OK);
    CHECK_EQ_INT(jb_change(&a, 11, 30), ECS_ERR_OK);
    ha = state_hash(a.w);
    hr = state_hash(r.w);
    ta.fail_at = ta.calls + n;
    err = delta(a.w, j, &d);
    if (err == ECS_ERR_OK) err = apply(r.w, &d);
    ta.fail_at = 0;
    if (err != ECS_ERR_OK) {
      failed = true;
      CHECK_EQ_INT(err, ECS_ERR_NOMEM);
      CHECK(state_hash(r.w) == hr);
      /* the mark did not move when the delta failed: a new one applies */
      if (d.n == 0) CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_OK);
      CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_OK);
    }
    CHECK(state_hash(r.w) == ha);
    CHECK_WORLD(r.w);
    /* undo */
    snap(a.w, &s0);
    CHECK_EQ_INT(jb_change(&a, 12, 30), ECS_ERR_OK);
    snap(a.w, &s1);
    ta.fail_at = ta.calls + n;
    err = ecs_journal_undo(a.w, j);
    ta.fail_at = 0;
    CHECK_WORLD(a.w);
    if (err != ECS_ERR_OK) {
      membuf s2 = {0};
      failed = true;
      CHECK_EQ_INT(err, ECS_ERR_NOMEM);
      snap(a.w, &s2);
      CHECK(s2.n == s1.n && memcmp(s2.p, s1.p, s1.n) == 0);
      free(s2.p);
      CHECK_EQ_INT(ecs_journal_undo(a.w, j), ECS_ERR_OK);
    }
    CHECK(state_hash(a.w) == ha);
    ecs_journal_close(a.w, j);
    ecs_world_free(a.w);
    ecs_world_free(r.w);
    CHECK_EQ_INT(ta.blocks, 0);
    free(d.p);
    free(s0.p);
    free(s1.p);
    if (!failed) { /* nothing failed: every allocation point was swept */
      CHECK(n > 20);
      break;
    }
  }
}

/* Captures that find no memory lose the journal, never a change. */
TEST(Journal_lost_captures_are_reported) {
  test_alloc ta = {0, 0, 0, 0, 0};
  jb_world a;
  ecs_journal *j;
  bool memory = false;
  membuf d = {0};
  CHECK_EQ_INT(jb_build(&a, test_allocf, &ta), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL), ECS_ERR_OK);
  ta.fail_at = ta.calls + 1;
  ta.sticky = 1;
  (void)jb_change(&a, 3, 20);
  ta.fail_at = 0;
  CHECK(ecs_journal_lost(j, &memory));
  CHECK(memory);
  CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_LOST);
  CHECK_EQ_INT(ecs_journal_undo(a.w, j), ECS_ERR_LOST);
  CHECK_WORLD(a.w);
  ecs_journal_close(a.w, j);
  CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL), ECS_ERR_OK);
  CHECK(!ecs_journal_lost(j, NULL));
  ecs_journal_close(a.w, j);
  ecs_world_free(a.w);
  CHECK_EQ_INT(ta.blocks, 0);
  free(d.p);
}

/*
** A restore while a journal records is recorded like any change: the
** delta since the mark carries a replica to the restored state, and undo
** takes the world back to the mark. Rounds of random changes, each with
** one or two restores of checkpoints: older ones (fewer slots: the slot
** count goes down, indices are dropped), newer ones (more), the same
** state, a world without entities; changes before and after; then a
** delta that a replica applies (a relay with a journal of its own passes
** it on), or an undo. The worlds must hash alike, pass their checks and
** hand out the same next ids.
*/
/* The base's managers and n entities, each with P (fewer slots than the
** base: a checkpoint older than it). */
static ecs_err jb_small(jb_world *b, uint32_t n) {
  static const ecs_field_def pf[] = {
      {"x", ECS_F32}, {"y", ECS_F64}, {"flag", ECS_BOOL}, {"t", ECS_ENTITY},
      {"n", ECS_I8}};
  static const ecs_field_def vf[] = {{"dx", ECS_I32}, {"big", ECS_I64}};
  ecs_err err;
  memset(b, 0, sizeof *b);
  if ((b->w = ecs_world_new(NULL, NULL)) == NULL) return ECS_ERR_NOMEM;
  if ((err = ecs_component_new(b->w, "P", pf, 5, &b->P)) != ECS_ERR_OK ||
      (err = ecs_component_new(b->w, "V", vf, 2, &b->V)) != ECS_ERR_OK ||
      (err = ecs_transform_new(b->w, &b->t)) != ECS_ERR_OK ||
      (err = ecs_names_new(b->w, &b->n)) != ECS_ERR_OK)
    return err;
  for (uint32_t k = 0; k < n && err == ECS_ERR_OK; k++) {
    ecs_entity e;
    if ((err = ecs_create(b->w, &e)) == ECS_ERR_OK &&
        (err = ecs_component_add(b->w, b->P, e, NULL, NULL)) == ECS_ERR_OK)
      err = jb_write_p(b, e, k);
  }
  return err;
}

static void load_blob(ecs_world *w, const membuf *b) {
  ecs_reader in;
  in.data = b->p;
  in.size = b->n;
  in.pos = 0;
  if (ecs_world_load(w, &in) != ECS_ERR_OK) abort();
}

/* a and b are the same state: full hashes, next ids. */
static bool same_state(ecs_world *a, ecs_world *b) {
  uint32_t na[1200], nb[1200];
  return full_hash(a) == full_hash(b) && ecs_count(a) == ecs_count(b) &&
         ecs_next_indices(a, na, 1200) == ECS_ERR_OK &&
         ecs_next_indices(b, nb, 1200) == ECS_ERR_OK &&
         memcmp(na, nb, sizeof na) == 0;
}

TEST(Journal_records_a_restore) {
  membuf cp[4] = {{0}, {0}, {0}, {0}}, mark = {0}, d = {0}, dr = {0};
  jb_world a, r, r2, e;
  ecs_journal *j, *jr;
  uint32_t s = 77;
  /* the checkpoints: a world without entities, the base, and two later */
  CHECK_EQ_INT(jb_small(&e, 0), ECS_ERR_OK);
  snap(e.w, &cp[0]);
  ecs_world_free(e.w);
  CHECK_EQ_INT(jb_build(&a, NULL, NULL), ECS_ERR_OK);
  snap(a.w, &cp[1]);
  CHECK_EQ_INT(jb_change(&a, 1, 300), ECS_ERR_OK);
  snap(a.w, &cp[2]);
  CHECK_EQ_INT(jb_change(&a, 2, 300), ECS_ERR_OK);
  snap(a.w, &cp[3]);
  load_blob(a.w, &cp[1]);
  /* the replica and a relay's replica, at the base */
  CHECK_EQ_INT(jb_build(&r, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(jb_build(&r2, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_journal_open(r.w, NULL, &jr, NULL), ECS_ERR_OK);
  for (uint32_t round = 0; round < 48; round++) {
    uint32_t op = jb_rand(&s);
    uint64_t h = full_hash(a.w);
    snap(a.w, &mark);
    if (op & 1u) CHECK_EQ_INT(jb_change(&a, 100 + round, 1 + (int)(op >> 8) % 40), ECS_ERR_OK);
    load_blob(a.w, &cp[(op >> 1) % 4u]);
    CHECK(!ecs_journal_lost(j, NULL));
    CHECK_WORLD(a.w);
    CHECK(state_hash(a.w) == full_hash(a.w)); /* the journal's hash follows */
    if (op & 8u) load_blob(a.w, &cp[(op >> 4) % 4u]);
    if (op & 64u) CHECK_EQ_INT(jb_change(&a, 200 + round, 1 + (int)(op >> 12) % 40), ECS_ERR_OK);
    CHECK(state_hash(a.w) == full_hash(a.w));
    if (round % 3 == 2) { /* back to the mark */
      ecs_world *c = ecs_world_new(NULL, NULL);
      jb_world cb;
      CHECK_EQ_INT(ecs_journal_undo(a.w, j), ECS_ERR_OK);
      CHECK_WORLD(a.w);
      CHECK(full_hash(a.w) == h);
      CHECK(state_hash(a.w) == h);
      CHECK_EQ_INT(jb_build(&cb, NULL, NULL), ECS_ERR_OK);
      load_blob(cb.w, &mark);
      CHECK(same_state(a.w, cb.w));
      ecs_world_free(cb.w);
      ecs_world_free(c);
      continue;
    }
    /* the delta carries the replica there; the replica's journal carries
    ** the relay's replica */
    CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_OK);
    CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_OK);
    CHECK_WORLD(r.w);
    CHECK(same_state(a.w, r.w));
    CHECK(state_hash(r.w) == full_hash(r.w));
    if (round % 4 == 1) { /* the relay undoes what it applied, then again */
      CHECK_EQ_INT(ecs_journal_undo(r.w, jr), ECS_ERR_OK);
      CHECK_WORLD(r.w);
      CHECK(same_state(r.w, r2.w));
      CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_OK);
    }
    CHECK_EQ_INT(delta(r.w, jr, &dr), ECS_ERR_OK);
    CHECK_EQ_INT(apply(r2.w, &dr), ECS_ERR_OK);
    CHECK_WORLD(r2.w);
    CHECK(same_state(a.w, r2.w));
  }
  ecs_journal_close(a.w, j);
  ecs_journal_close(r.w, jr);
  ecs_world_free(a.w);
  ecs_world_free(r.w);
  ecs_world_free(r2.w);
  /* lockstep: a replica that is the source's state by the same history,
  ** dead records included (peers replaying the same inputs); the source
  ** restores a checkpoint with fewer slots, and the replica's dead records
  ** at the slots dropped must not outlive them */
  CHECK_EQ_INT(jb_build(&a, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(jb_build(&r, NULL, NULL), ECS_ERR_OK);
  snap(a.w, &mark);
  for (int k = 0; k < 2; k++) { /* the same on both: new slots, dead records */
    jb_world *x = k == 0 ? &a : &r;
    ecs_entity es[1500];
    ecs_trs trs = {{1, 2, 3}, {0, 0, 0, 1}, {1, 1, 1}};
    CHECK_EQ_INT(ecs_create_n(x->w, es, 1500), ECS_ERR_OK);
    for (int i = 0; i < 1500; i += 3) {
      CHECK_EQ_INT(ecs_component_add(x->w, x->P, es[i], NULL, NULL), ECS_ERR_OK);
      CHECK_EQ_INT(ecs_transform_add(x->t, es[i], &trs), ECS_ERR_OK);
    }
    for (int i = 0; i < 1500; i += 2) (void)ecs_destroy(x->w, es[i]);
    CHECK_EQ_INT(jb_change(x, 9, 100), ECS_ERR_OK);
  }
  CHECK(full_hash(a.w) == full_hash(r.w));
  CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL), ECS_ERR_OK);
  snap(a.w, &cp[0]);
  CHECK(df_get32(mark.p + 12) < df_get32(cp[0].p + 12)); /* fewer slots */
  load_blob(a.w, &mark);
  CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_OK);
  CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_OK);
  CHECK_WORLD(r.w);
  CHECK(same_state(a.w, r.w));
  ecs_journal_close(a.w, j);
  ecs_world_free(a.w);
  ecs_world_free(r.w);
  for (int k = 0; k < 4; k++) free(cp[k].p);
  free(mark.p);
  free(d.p);
  free(dr.p);
}

/* A rollback that finds the owners in their rows (the load copies the
** values into the columns in place): the journal compares the values,
** row by row where a block differs; an entity destroyed since the
** checkpoint, its records not collected, comes back (its slot changes,
** its rows stay). The delta carries exactly that; undo takes it back. */
TEST(Journal_records_a_rollback_in_place) {
  jb_world a, r;
  ecs_journal *j;
  membuf cp = {0}, mark = {0}, d = {0};
  CHECK_EQ_INT(jb_build(&a, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(jb_build(&r, NULL, NULL), ECS_ERR_OK);
  snap(a.w, &cp);
  CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL), ECS_ERR_OK);
  for (uint32_t round = 0; round < 12; round++) {
    uint32_t cursor = 1, n = 0;
    ecs_entity e;
    uint64_t h;
    while (ecs_next_entity(a.w, &cursor, &e)) { /* values only, or a destroy */
      if (++n % (round + 2) == 0) (void)jb_write_p(&a, e, round * 100 + n);
      if (round % 3 == 1 && n == 5 + round) (void)ecs_destroy(a.w, e);
    }
    /* the mark after the changes: the destroyed entity's records are not
    ** the journal's captures, the load alone brings it back */
    CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_OK);
    CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_OK);
    h = full_hash(a.w);
    snap(a.w, &mark);
    load_blob(a.w, &cp);
    CHECK_WORLD(a.w);
    CHECK(state_hash(a.w) == full_hash(a.w));
    if (round % 4 == 3) {
      CHECK_EQ_INT(ecs_journal_undo(a.w, j), ECS_ERR_OK);
      CHECK_WORLD(a.w);
      CHECK(full_hash(a.w) == h);
      continue;
    }
    CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_OK);
    CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_OK);
    CHECK_WORLD(r.w);
    CHECK(same_state(a.w, r.w));
  }
  ecs_journal_close(a.w, j);
  ecs_world_free(a.w);
  ecs_world_free(r.w);
  free(cp.p);
  free(mark.p);
  free(d.p);
}

/* The delta of a restore with fewer slots, forged: every slot dropped
** must be named, free with generation 0 and unqueued after, and no record
** may hold an instance there. Each forgery is refused, the replica as it
** was; the real delta applies. */
TEST(Journal_forged_deltas_of_a_smaller_slot_count) {
  df_delta *fd = (df_delta *)malloc(sizeof *fd);
  jb_world a, r;
  ecs_journal *j;
  membuf base = {0}, d = {0}, bad = {0}, s0 = {0}, s1 = {0};
  ecs_entity es[300];
  uint32_t band = 0;
  CHECK(fd != NULL);
  CHECK_EQ_INT(jb_build(&a, NULL, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(jb_build(&r, NULL, NULL), ECS_ERR_OK);
  snap(a.w, &base);
  CHECK_EQ_INT(ecs_journal_open(a.w, NULL, &j, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(a.w, es, 300), ECS_ERR_OK); /* 1100 queued: reused */
  CHECK_EQ_INT(ecs_create_n(a.w, es, 300), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(a.w, es, 300), ECS_ERR_OK); /* fresh slots */
  for (int i = 0; i < 300; i += 2)
    CHECK_EQ_INT(ecs_component_add(a.w, a.P, es[i], NULL, NULL), ECS_ERR_OK);
  for (int i = 0; i < 300; i += 3) (void)ecs_destroy(a.w, es[i]);
  CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_OK);
  CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_OK);
  load_blob(a.w, &base); /* fewer slots */
  { /* and a present record: P given to an entity of the base without it */
    uint32_t cursor = 1;
    ecs_entity e;
    while (ecs_next_entity(a.w, &cursor, &e) &&
           ecs_component_lookup(a.w, a.P, e) != ECS_NO_INSTANCE) {
    }
    CHECK_EQ_INT(ecs_component_add(a.w, a.P, e, NULL, NULL), ECS_ERR_OK);
    CHECK_EQ_INT(jb_write_p(&a, e, 5), ECS_ERR_OK);
  }
  CHECK_EQ_INT(delta(a.w, j, &d), ECS_ERR_OK);
  CHECK(df_parse(fd, d.p, d.n));
  CHECK(fd->counts[1] < fd->counts[0]);
  for (uint32_t k = 0; k < fd->nslot; k++) band += fd->slot[k][0] >= fd->counts[1];
  CHECK(band == fd->counts[0] - fd->counts[1]);
  df_free(fd);
  snap(r.w, &s0);
  for (int k = 0; k < 6; k++) {
    int p;
    uint32_t first = 0; /* a slot the smaller count drops */
    CHECK(df_parse(fd, d.p, d.n));
    while (fd->slot[first][0] < fd->counts[1]) first++;
    p = df_find(fd, "P");
    switch (k) {
    case 0: /* a dropped slot not named */
      fd->slot[first][0] = fd->slot[fd->nslot - 1][0];
      fd->slot[first][1] = fd->slot[fd->nslot - 1][1];
      fd->nslot--;
      break;
    case 1: fd->slot[first][1] = 0; break;               /* live */
    case 2: fd->slot[first][1] = ECS_SLOT_FREE | 1u; break; /* free, generation 1 */
    case 3: /* still queued after: one pop fewer */
      fd->npopped--;
      fd->counts[3]++;
      fd->counts[5]--;
      break;
    case 4: { /* a present record moved to a dropped slot */
      uint32_t r0 = 0;
      CHECK(p >= 0);
      while (r0 < fd->man[p].nrec && fd->man[p].rec[r0].owner == 0) r0++;
      CHECK(r0 < fd->man[p].nrec);
      fd->man[p].rec[r0].index = fd->slot[first][0];
      fd->man[p].rec[r0].owner = ecs_make_entity(fd->slot[first][0], 0);
      break;
    }
    default: /* the new count one less: a slot it keeps named as dropped */
      fd->counts[1]--;
      break;
    }
    df_build(fd, &bad);
    df_free(fd);
    CHECK(apply(r.w, &bad) != ECS_ERR_OK);
    CHECK_WORLD(r.w);
    snap(r.w, &s1);
    CHECK(s0.n == s1.n && memcmp(s0.p, s1.p, s0.n) == 0);
  }
  CHECK_EQ_INT(apply(r.w, &d), ECS_ERR_OK);
  CHECK_WORLD(r.w);
  CHECK(same_state(a.w, r.w));
  ecs_journal_close(a.w, j);
  ecs_world_free(a.w);
  ecs_world_free(r.w);
  free(fd);
  free(base.p);
  free(d.p);
  free(bad.p);
  free(s0.p);
  free(s1.p);
}

/* ECS_WRITE_DELTA_SEEDS=dir: the fuzz corpus's seeds (mode byte, delta):
** deltas of jb_change, and the forged ones of forge_cases (sealed). */
static void write_seeds(const char *dir) {
  df_delta *fd = (df_delta *)malloc(sizeof *fd);
  static const uint32_t mades[] = {8, 9, 16};
  if (fd == NULL) abort();
  for (size_t m = 0; m < sizeof mades / sizeof mades[0]; m++) {
    jb_world a;
    membuf d = {0}, out = {0};
    if (forge_source(&a, mades[m], &d) != ECS_ERR_OK) abort();
    for (size_t k = 0; k < sizeof forge_cases / sizeof forge_cases[0]; k++) {
      char path[512];
      unsigned char mode = 0;
      FILE *f;
      if (!forge(fd, &d, k, &out)) abort();
      snprintf(path, sizeof path, "%s/forged_%s_%u", dir, forge_cases[k].id,
               (unsigned)mades[m]);
      if ((f = fopen(path, "wb")) == NULL) abort();
      fwrite(&mode, 1, 1, f);
      fwrite(out.p, 1, out.n, f);
      fclose(f);
    }
    ecs_world_free(a.w);
    free(d.p);
    free(out.p);
  }
  free(fd);
  /* deltas of restores: to a world of the same managers without entities,
  ** with fewer, the base itself after changes, one with more */
  for (uint32_t k = 0; k < 4; k++) {
    jb_world a, b;
    ecs_journal *j;
    membuf cp = {0}, d = {0};
    char path[512];
    unsigned char mode = 0;
    FILE *f;
    if ((k < 2 ? jb_small(&b, k * 30u) : jb_build(&b, NULL, NULL)) != ECS_ERR_OK ||
        (k == 3 && jb_change(&b, 31, 200) != ECS_ERR_OK))
      abort();
    snap(b.w, &cp);
    if (jb_build(&a, NULL, NULL) != ECS_ERR_OK ||
        ecs_journal_open(a.w, NULL, &j, NULL) != ECS_ERR_OK ||
        (k == 2 && jb_change(&a, 17, 60) != ECS_ERR_OK))
      abort();
    load_blob(a.w, &cp);
    if (delta(a.w, j, &d) != ECS_ERR_OK) abort();
    snprintf(path, sizeof path, "%s/restore_%u", dir, (unsigned)k);
    if ((f = fopen(path, "wb")) == NULL) abort();
    fwrite(&mode, 1, 1, f);
    fwrite(d.p, 1, d.n, f);
    fclose(f);
    ecs_journal_close(a.w, j);
    ecs_world_free(a.w);
    ecs_world_free(b.w);
    free(cp.p);
    free(d.p);
  }
  for (uint32_t seed = 1; seed <= 24; seed++) {
    jb_world a;
    ecs_journal *j;
    membuf d = {0};
    char path[512];
    FILE *f;
    unsigned char mode = (unsigned char)(seed % 4u);
    if (jb_build(&a, NULL, NULL) != ECS_ERR_OK ||
        ecs_journal_open(a.w, NULL, &j, NULL) != ECS_ERR_OK ||
        jb_change(&a, seed, (int)(seed * 5u)) != ECS_ERR_OK ||
        delta(a.w, j, &d) != ECS_ERR_OK)
      abort();
    snprintf(path, sizeof path, "%s/seed_%02u", dir, (unsigned)seed);
    if ((f = fopen(path, "wb")) == NULL) abort();
    fwrite(&mode, 1, 1, f);
    fwrite(d.p, 1, d.n, f);
    fclose(f);
    ecs_journal_close(a.w, j);
    ecs_world_free(a.w);
    free(d.p);
  }
}

static const test_case cases[] = {
    CASE(Journal_after_images_give_the_deltas_the_rows_give),
    CASE(Journal_after_images_without_memory_read_the_rows),
    CASE(Journal_deltas_carry_random_changes_to_a_replica),
    CASE(Journal_undo_returns_to_the_mark),
    CASE(Journal_undo_restores_the_free_indices),
    CASE(Journal_damaged_deltas_change_nothing),
    CASE(Journal_forged_deltas_are_refused_whole),
    CASE(Journal_a_delta_opened_then_a_component_redefined),
    CASE(Journal_out_of_memory_fails_whole),
    CASE(Journal_lost_captures_are_reported),
    CASE(Journal_records_a_restore),
    CASE(Journal_records_a_rollback_in_place),
    CASE(Journal_forged_deltas_of_a_smaller_slot_count),
};

int main(void) {
  const char *seeds = getenv("ECS_WRITE_DELTA_SEEDS");
  if (seeds != NULL) write_seeds(seeds);
  return test_run(cases, sizeof cases / sizeof cases[0]);
}
