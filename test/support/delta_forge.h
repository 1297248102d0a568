/*
** delta_forge.h -- take a delta apart and put it back together, for the C
** tests that forge one (test/persist/test_journal.c) and the forged seeds of the
** delta fuzz corpus (test/fuzz/delta/). The format is docs/persistence.md,
** "Deltas, byte by byte": df_parse reads the header, the entity part
** (counts, slots, pushed indices, the pop count) and each manager's part
** (a component's records, each with its entity index, owner and the bytes
** of its values, then its layout and stamps as they are; another manager's
** whole save; the cursors at the end, as they are); df_build writes them out
** again and seals the checksum, so that a forged part reaches the check
** behind it. Edit the parsed form in between: move records between
** entries, name a manager twice, repeat an entity, change a count.
** Header-only: static inline.
*/
#ifndef ECS_TEST_DELTA_FORGE_H
#define ECS_TEST_DELTA_FORGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "membuf.h"
#include "snapshot.h"

#define DF_MAX 64u /* managers, and the records of one kept apart */

typedef struct df_rec {
  uint32_t index, owner;
  size_t at, len; /* the values' bytes in the source delta (owner != 0) */
} df_rec;

typedef struct df_man {
  size_t head_at, head_len; /* namespace, name, kind, mode (and schema) */
  uint32_t mode;
  uint32_t nrec;            /* mode 0: the records; count: what is written */
  uint32_t count;
  df_rec *rec;
  size_t body_at, body_len; /* mode 1: the save */
  size_t extras_at, extras_len; /* mode 0: the layout and stamps, as read */
} df_man;

typedef struct df_delta {
  const unsigned char *src;
  size_t n;
  uint32_t counts[6];       /* slot count before, after; queue; live */
  uint32_t nslot, npushed, npopped;
  uint32_t slot[DF_MAX * 64][2];
  uint32_t pushed[DF_MAX * 64];
  uint32_t nman;
  df_man man[DF_MAX];
  size_t cursors_at, cursors_len; /* the clock, cursors and owed times */
} df_delta;

static inline uint32_t df_get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Bytes of a value of each field type (ECS_TYPES order); lua: variable. */
static inline size_t df_type_size(uint32_t t) {
  static const unsigned char size[] = {4, 8, 1, 2, 4, 8, 1, 2, 4, 1, 4};
  return t < sizeof size ? size[t] : 0;
}

/* Parse the n bytes at src (a delta a journal wrote: not checked). The
** records are malloc'd: df_free. */
static inline bool df_parse(df_delta *d, const unsigned char *src, size_t n) {
  size_t at = 28;
  memset(d, 0, sizeof *d);
  d->src = src;
  d->n = n;
  for (int k = 0; k < 6; k++, at += 4) d->counts[k] = df_get32(src + at);
  d->nslot = df_get32(src + at);
  at += 4;
  if (d->nslot > DF_MAX * 64) return false;
  for (uint32_t k = 0; k < d->nslot; k++, at += 8) {
    d->slot[k][0] = df_get32(src + at);
    d->slot[k][1] = df_get32(src + at + 4);
  }
  d->npushed = df_get32(src + at);
  at += 4;
  if (d->npushed > DF_MAX * 64) return false;
  for (uint32_t k = 0; k < d->npushed; k++, at += 4) d->pushed[k] = df_get32(src + at);
  d->npopped = df_get32(src + at);
  d->nman = df_get32(src + at + 4);
  at += 8;
  if (d->nman > DF_MAX) return false;
  for (uint32_t m = 0; m < d->nman; m++) {
    df_man *x = &d->man[m];
    uint32_t types[64], nf = 0;
    x->head_at = at;
    at += 4;                      /* namespace */
    at += 4 + df_get32(src + at); /* name */
    at += 4 + df_get32(src + at); /* kind */
    x->mode = df_get32(src + at);
    at += 4;
    if (x->mode == 1) {
      x->head_len = at - x->head_at;
      x->body_len = (size_t)df_get32(src + at);
      x->body_at = at + 8;
      at = x->body_at + x->body_len;
      continue;
    }
    nf = df_get32(src + at);
    at += 4;
    if (nf > 64) return false;
    for (uint32_t f = 0; f < nf; f++, at += 4) types[f] = df_get32(src + at);
    x->head_len = at - x->head_at;
    x->nrec = x->count = df_get32(src + at);
    at += 4;
    x->rec = (df_rec *)calloc((size_t)x->nrec + 1, sizeof *x->rec);
    if (x->rec == NULL) return false;
    for (uint32_t r = 0; r < x->nrec; r++) {
      df_rec *rc = &x->rec[r];
      rc->index = df_get32(src + at);
      rc->owner = df_get32(src + at + 4);
      at += 8;
      rc->at = at;
      if (rc->owner != 0)
        for (uint32_t f = 0; f < nf; f++)
          at += types[f] == 11u ? 4u + df_get32(src + at) : df_type_size(types[f]);
      rc->len = at - rc->at;
    }
    /* the extras: flags, the layout (5 words and 3 a row), the stamps
    ** (kinds, then a count and 3 words each) */
    x->extras_at = at;
    {
      uint32_t flags = df_get32(src + at);
      at += 4;
      if (flags & 1u) at += 20 + 12 * (size_t)df_get32(src + at + 16);
      if (flags & 2u) at += 8 + 12 * (size_t)df_get32(src + at + 4);
    }
    x->extras_len = at - x->extras_at;
  }
  /* the cursors: clock, change queries (16 bytes each), systems */
  d->cursors_at = at;
  if (at + 8 > n) return false;
  at += 8 + 16 * (size_t)df_get32(src + at + 4);
  if (at + 4 > n) return false;
  {
    uint32_t ns = df_get32(src + at);
    at += 4;
    for (uint32_t k = 0; k < ns && at + 4 <= n; k++) at += 4 + df_get32(src + at) + 8;
  }
  d->cursors_len = at - d->cursors_at;
  return at + 8 == n;
}

static inline void df_free(df_delta *d) {
  for (uint32_t m = 0; m < d->nman; m++) free(d->man[m].rec);
  d->nman = 0;
}

/* Append manager m's entry again, with the records [first, first + n) of
** it (the new entry shares m's records: free only m's). */
static inline df_man *df_add_entry(df_delta *d, uint32_t m, uint32_t first,
                                   uint32_t n) {
  df_man *x = &d->man[d->nman++];
  *x = d->man[m];
  x->rec = (df_rec *)malloc(((size_t)n + 1) * sizeof *x->rec);
  if (x->rec != NULL && n > 0)
    memcpy(x->rec, d->man[m].rec + first, (size_t)n * sizeof *x->rec);
  x->nrec = x->count = n;
  return x;
}

/* The entry of the manager named name (its first), or -1. */
static inline int df_find(const df_delta *d, const char *name) {
  size_t len = strlen(name);
  for (uint32_t m = 0; m < d->nman; m++) {
    const unsigned char *h = d->src + d->man[m].head_at + 4;
    if (df_get32(h) == len && memcmp(h + 4, name, len) == 0) return (int)m;
  }
  return -1;
}

static inline void df_put32(membuf *b, uint32_t v) {
  unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8),
                        (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
  (void)membuf_write(b, x, 4);
}

static inline void df_put64(membuf *b, uint64_t v) {
  df_put32(b, (uint32_t)v);
  df_put32(b, (uint32_t)(v >> 32));
}

/* The delta d describes, sealed with a correct checksum, into out. */
static inline void df_build(const df_delta *d, membuf *out) {
  out->n = 0;
  (void)membuf_write(out, d->src, 28);
  for (int k = 0; k < 6; k++) df_put32(out, d->counts[k]);
  df_put32(out, d->nslot);
  for (uint32_t k = 0; k < d->nslot; k++) {
    df_put32(out, d->slot[k][0]);
    df_put32(out, d->slot[k][1]);
  }
  df_put32(out, d->npushed);
  for (uint32_t k = 0; k < d->npushed; k++) df_put32(out, d->pushed[k]);
  df_put32(out, d->npopped);
  df_put32(out, d->nman);
  for (uint32_t m = 0; m < d->nman; m++) {
    const df_man *x = &d->man[m];
    (void)membuf_write(out, d->src + x->head_at, x->head_len);
    if (x->mode == 1) {
      df_put64(out, x->body_len);
      (void)membuf_write(out, d->src + x->body_at, x->body_len);
      continue;
    }
    df_put32(out, x->count);
    for (uint32_t r = 0; r < x->nrec; r++) {
      df_put32(out, x->rec[r].index);
      df_put32(out, x->rec[r].owner);
      if (x->rec[r].owner != 0)
        (void)membuf_write(out, d->src + x->rec[r].at, x->rec[r].len);
    }
    (void)membuf_write(out, d->src + x->extras_at, x->extras_len);
  }
  (void)membuf_write(out, d->src + d->cursors_at, d->cursors_len);
  df_put64(out, ecs_snapshot_hash(out->p, out->n));
}

#endif
