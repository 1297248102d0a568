/*
** checksum.h -- XXH64, streaming (checksum.c). ecs_snapshot_hash
** (snapshot.h) is the one-shot form.
**
** Alloc layer (layers: alloc.h). Includes nothing of the core.
*/
#ifndef ECS_CHECKSUM_H
#define ECS_CHECKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Little-endian words, as XXH64 and the byte formats that carry it
** (snapshots, deltas) read them on any machine. */
/* splitmix64's finaliser: a bijection of 64-bit words, the mixer of the
** state hash (journal) and of query signatures (cursors.c). */
static inline uint64_t ecsi_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9u;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBu;
  x ^= x >> 31;
  return x;
}

static inline bool ecsi_little_endian(void) {
  const uint16_t one = 1;
  return *(const unsigned char *)&one == 1;
}

static inline uint32_t ecsi_get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static inline uint64_t ecsi_get_u64(const unsigned char *p) {
  return (uint64_t)ecsi_get_u32(p) | (uint64_t)ecsi_get_u32(p + 4) << 32;
}

typedef struct ecsi_xxh64 {
  uint64_t v[4], total;
  unsigned char mem[32];
  size_t memsize;
} ecsi_xxh64;

void ecsi_xxh64_init(ecsi_xxh64 *s);
void ecsi_xxh64_update(ecsi_xxh64 *s, const unsigned char *p, size_t n);
/* ecsi_xxh64_update(s, p, n), and p's n bytes copied to dst in the same
** pass: the copy and the hash read p once. */
void ecsi_xxh64_update_copy(ecsi_xxh64 *s, unsigned char *dst,
                            const unsigned char *p, size_t n);
uint64_t ecsi_xxh64_digest(const ecsi_xxh64 *s);

/*
** The XXH64 of the bytes [from, end), taken in order while a reader
** copies parts of them out: what a snapshot's load does to check the
** checksum in the pass that copies the columns (one read of the bytes,
** not two). The bytes before to are hashed.
*/
typedef struct ecsi_xxh64_cursor {
  ecsi_xxh64 h;
  const unsigned char *to, *end;
} ecsi_xxh64_cursor;

void ecsi_xxh64_cursor_init(ecsi_xxh64_cursor *c, const unsigned char *from,
                            const unsigned char *end);

/* Hash the bytes from the cursor to p (none when p is behind it or
** outside [from, end]). */
void ecsi_xxh64_cursor_to(ecsi_xxh64_cursor *c, const unsigned char *p);

/* Copy the n bytes at p to dst. Those of them in [to, end) are hashed in
** the same pass, after the bytes between the cursor and p: the cursor
** moves past them. Bytes behind the cursor (hashed already) or outside
** the block are only copied. */
void ecsi_xxh64_cursor_copy(ecsi_xxh64_cursor *c, unsigned char *dst,
                            const unsigned char *p, size_t n);

#endif
