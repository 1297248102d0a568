/*
** fuzz_delta.c -- libFuzzer target: untrusted bytes given to the delta
** loader (journal.h: ecs_delta_open, ecs_delta_apply; Lua's
** world:apply_delta).
**
** Byte 0 picks the mode, the rest is the delta:
**   bit 0  seal: the last 8 bytes are overwritten with the XXH64 of the
**          bytes before them, so that forged contents get past the
**          checksum and reach the checks behind it (framing, managers,
**          the entity part, records, the managers kept whole)
**   bit 1  rebase: bytes 12..19 (the base hash) are set to the target
**          world's hash first, so that forged deltas get past the base
**          check too
** The target is the base world of journal_base.h (the seeds in
** test/fuzz/delta/ are deltas of changes to it, written by test_journal
** with ECS_WRITE_DELTA_SEEDS). The delta either applies -- the world then
** passes its check, takes a journal, changes and gives a delta that a
** copy of it applies -- or fails with the world exactly as before (its
** snapshot bytes, its check). Built with libFuzzer by tools/fuzz.sh and,
** with any compiler, linked to test/fuzz/fuzz_replay.c for the committed
** corpus (ctest: fuzz_delta_replay).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../support/journal_base.h"
#include "../support/membuf.h"
#include "snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ENSURE(c)                                                        \
  do {                                                                   \
    if (!(c)) {                                                          \
      fprintf(stderr, "fuzz_delta: %s:%d: %s\n", __FILE__, __LINE__, #c); \
      abort();                                                           \
    }                                                                    \
  } while (0)

static void snap(const ecs_world *w, membuf *b) {
  ecs_writer out = membuf_writer(b);
  b->n = 0;
  ENSURE(ecs_world_save(w, &out) == ECS_ERR_OK);
}

static void put64(unsigned char *p, uint64_t v) {
  for (int k = 0; k < 8; k++) p[k] = (unsigned char)(v >> (8 * k));
}

/* After a delta applied: the world still records and replicates. */
static void still_works(jb_world *b) {
  jb_world copy;
  membuf s = {0};
  ecs_journal *j;
  ecs_delta d;
  const void *p;
  size_t n;
  ecs_reader in;
  uint64_t h1, h2;
  snap(b->w, &s);
  ENSURE(jb_build(&copy, NULL, NULL) == ECS_ERR_OK);
  in.data = s.p;
  in.size = s.n;
  in.pos = 0;
  ENSURE(ecs_world_load(copy.w, &in) == ECS_ERR_OK);
  ENSURE(ecs_journal_open(b->w, NULL, &j, NULL) == ECS_ERR_OK);
  ENSURE(jb_change(b, 99, 20) == ECS_ERR_OK);
  ENSURE(ecs_journal_delta(b->w, j, NULL, &p, &n, NULL) == ECS_ERR_OK);
  ENSURE(ecs_delta_open(copy.w, &d, p, n) == ECS_ERR_OK);
  ENSURE(ecs_delta_apply(copy.w, &d, NULL, NULL, NULL) == ECS_ERR_OK);
  ENSURE(ecs_world_state_hash(copy.w, NULL, &h1, NULL) == ECS_ERR_OK);
  ENSURE(ecs_world_state_hash(b->w, NULL, &h2, NULL) == ECS_ERR_OK);
  ENSURE(h1 == h2);
  ENSURE(ecs_world_check(copy.w) == NULL);
  ecs_journal_close(b->w, j);
  ecs_world_free(copy.w);
  free(s.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  jb_world b;
  membuf before = {0}, after = {0};
  unsigned char *bytes;
  size_t n;
  ecs_delta d;
  ecs_err err;
  uint64_t hash;
  if (size < 1) return 0;
  n = size - 1;
  bytes = (unsigned char *)malloc(n + 1);
  ENSURE(bytes != NULL);
  memcpy(bytes, data + 1, n);
  ENSURE(jb_build(&b, NULL, NULL) == ECS_ERR_OK);
  ENSURE(ecs_world_state_hash(b.w, NULL, &hash, NULL) == ECS_ERR_OK);
  if ((data[0] & 2u) && n >= 20) put64(bytes + 12, hash);
  if ((data[0] & 1u) && n >= 8) put64(bytes + n - 8, ecs_snapshot_hash(bytes, n - 8));
  snap(b.w, &before);
  err = ecs_delta_open(b.w, &d, bytes, n);
  if (err == ECS_ERR_OK) err = ecs_delta_apply(b.w, &d, NULL, NULL, NULL);
  ENSURE(ecs_world_check(b.w) == NULL);
  if (err == ECS_ERR_OK) {
    still_works(&b);
  } else {
    ENSURE(err == ECS_ERR_CORRUPT || err == ECS_ERR_VERSION ||
           err == ECS_ERR_BASE || err == ECS_ERR_NO_MANAGER ||
           err == ECS_ERR_SCHEMA_DIFFERS);
    snap(b.w, &after);
    ENSURE(before.n == after.n && memcmp(before.p, after.p, before.n) == 0);
  }
  ecs_world_free(b.w);
  free(before.p);
  free(after.p);
  free(bytes);
  return 0;
}
