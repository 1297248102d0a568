/*
** checksum.h -- XXH64, streaming (checksum.c). ecs_snapshot_hash
** (snapshot.h) is the one-shot form.
**
** Alloc layer (layers: alloc.h). Includes nothing of the core.
*/
#ifndef ECS_CHECKSUM_H
#define ECS_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

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

#endif
