/*
** checksum.c -- XXH64 (Yann Collet's xxHash, 64-bit, seed 0), streaming
** (checksum.h): the checksum of snapshots and deltas, and the hash of
** names and values in the journal's state hash. Any single changed 8-byte
** word changes the result (every step is a bijection of the state), and
** random damage goes unseen with odds of 2^-64. Reads its input as
** little-endian words on any machine.
**
** Alloc layer, beside alloc.c (layers: alloc.h): no world, no allocation,
** no other core file. ecs_snapshot_hash (snapshot.c) is the one-shot form.
*/
#include <stdbool.h>
#include <string.h>

#include "checksum.h"

#define P1 0x9E3779B185EBCA87u
#define P2 0xC2B2AE3D27D4EB4Fu
#define P3 0x165667B19E3779F9u
#define P4 0x85EBCA77C2B2AE63u
#define P5 0x27D4EB2F165667C5u

static uint64_t rotl64(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

static uint64_t rd64(const unsigned char *p) {
  uint64_t v;
  if (ecsi_little_endian()) {
    memcpy(&v, p, 8);
    return v;
  }
  return ecsi_get_u64(p);
}

static uint64_t xround(uint64_t acc, uint64_t in) {
  acc += in * P2;
  acc = rotl64(acc, 31);
  return acc * P1;
}

static uint64_t xmerge(uint64_t acc, uint64_t v) {
  acc ^= xround(0, v);
  return acc * P1 + P4;
}

void ecsi_xxh64_init(ecsi_xxh64 *s) {
  s->v[0] = P1 + P2;
  s->v[1] = P2;
  s->v[2] = 0;
  s->v[3] = 0 - P1;
  s->total = 0;
  s->memsize = 0;
}

/* Whole stripes of 32 bytes from p (n a multiple of 32). */
static void stripes(ecsi_xxh64 *s, const unsigned char *p, size_t n) {
  uint64_t v0 = s->v[0], v1 = s->v[1], v2 = s->v[2], v3 = s->v[3];
  for (const unsigned char *end = p + n; p < end; p += 32) {
    v0 = xround(v0, rd64(p));
    v1 = xround(v1, rd64(p + 8));
    v2 = xround(v2, rd64(p + 16));
    v3 = xround(v3, rd64(p + 24));
  }
  s->v[0] = v0;
  s->v[1] = v1;
  s->v[2] = v2;
  s->v[3] = v3;
}

void ecsi_xxh64_update(ecsi_xxh64 *s, const unsigned char *p, size_t n) {
  s->total += n;
  if (s->memsize + n < 32) {
    if (n > 0) memcpy(s->mem + s->memsize, p, n);
    s->memsize += n;
    return;
  }
  if (s->memsize > 0) {
    size_t fill = 32 - s->memsize;
    memcpy(s->mem + s->memsize, p, fill);
    stripes(s, s->mem, 32);
    p += fill;
    n -= fill;
    s->memsize = 0;
  }
  stripes(s, p, n & ~(size_t)31);
  p += n & ~(size_t)31;
  n &= 31;
  if (n > 0) memcpy(s->mem, p, n);
  s->memsize = n;
}

/* ecsi_xxh64_update(s, p, n), and p's n bytes copied to dst in the same pass
** (each stripe hashed while it is in registers: the copy and the hash
** read p once). */
void ecsi_xxh64_update_copy(ecsi_xxh64 *s, unsigned char *dst, const unsigned char *p,
                            size_t n) {
  size_t head = s->memsize > 0 ? 32 - s->memsize : 0, whole;
  uint64_t v0, v1, v2, v3;
  if (head > n) head = n;
  if (head > 0) { /* complete the buffered stripe */
    memcpy(dst, p, head);
    ecsi_xxh64_update(s, p, head);
    dst += head;
    p += head;
    n -= head;
  }
  whole = n & ~(size_t)31;
  v0 = s->v[0];
  v1 = s->v[1];
  v2 = s->v[2];
  v3 = s->v[3];
  for (size_t k = 0; k < whole; k += 32) {
    memcpy(dst + k, p + k, 32);
    v0 = xround(v0, rd64(p + k));
    v1 = xround(v1, rd64(p + k + 8));
    v2 = xround(v2, rd64(p + k + 16));
    v3 = xround(v3, rd64(p + k + 24));
  }
  s->v[0] = v0;
  s->v[1] = v1;
  s->v[2] = v2;
  s->v[3] = v3;
  s->total += whole;
  if (n > whole) { /* the tail: into the buffer (memsize is 0 here) */
    memcpy(dst + whole, p + whole, n - whole);
    ecsi_xxh64_update(s, p + whole, n - whole);
  }
}

uint64_t ecsi_xxh64_digest(const ecsi_xxh64 *s) {
  const unsigned char *p = s->mem;
  size_t n = s->memsize;
  uint64_t h;
  if (s->total >= 32) {
    h = rotl64(s->v[0], 1) + rotl64(s->v[1], 7) + rotl64(s->v[2], 12) +
        rotl64(s->v[3], 18);
    for (int k = 0; k < 4; k++) h = xmerge(h, s->v[k]);
  } else {
    h = s->v[2] + P5; /* the seed, 0 */
  }
  h += s->total;
  for (; n >= 8; p += 8, n -= 8) {
    h ^= xround(0, rd64(p));
    h = rotl64(h, 27) * P1 + P4;
  }
  if (n >= 4) {
    h ^= (uint64_t)ecsi_get_u32(p) * P1;
    h = rotl64(h, 23) * P2 + P3;
    p += 4;
    n -= 4;
  }
  for (; n > 0; p++, n--) {
    h ^= (uint64_t)*p * P5;
    h = rotl64(h, 11) * P1;
  }
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

void ecsi_xxh64_cursor_init(ecsi_xxh64_cursor *c, const unsigned char *from,
                            const unsigned char *end) {
  ecsi_xxh64_init(&c->h);
  c->to = from;
  c->end = end;
}

/* Addresses compared as integers: a reader may hold bytes of another
** block, which the cursor must then leave alone. */
void ecsi_xxh64_cursor_to(ecsi_xxh64_cursor *c, const unsigned char *p) {
  uintptr_t a = (uintptr_t)p, to = (uintptr_t)c->to;
  if (a <= to || a > (uintptr_t)c->end) return;
  ecsi_xxh64_update(&c->h, c->to, a - to);
  c->to = p;
}

void ecsi_xxh64_cursor_copy(ecsi_xxh64_cursor *c, unsigned char *dst,
                            const unsigned char *p, size_t n) {
  uintptr_t a = (uintptr_t)p, to = (uintptr_t)c->to, end = (uintptr_t)c->end;
  size_t behind, past;
  if (a + n <= to || a >= end) { /* all hashed already, or not the block's */
    if (n > 0) memcpy(dst, p, n);
    return;
  }
  behind = a < to ? to - a : 0; /* hashed already: copied only */
  past = a + n > end ? (size_t)(a + n - end) : 0; /* not the block's */
  if (behind > 0) memcpy(dst, p, behind);
  ecsi_xxh64_cursor_to(c, p + behind);
  ecsi_xxh64_update_copy(&c->h, dst + behind, p + behind, n - behind - past);
  c->to = p + (n - past);
  if (past > 0) memcpy(dst + (n - past), p + (n - past), past);
}
