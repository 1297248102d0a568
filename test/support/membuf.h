/*
** membuf.h -- a growing byte buffer behind an ecs_writer, for the tests
** that save managers (test_hooks, test_transform_hooks, plugin_hooks_host,
** fuzz_ops): one writer instead of one per file.
**
** The buffer is malloc'd, not the world's memory: saving never disturbs
** the allocation counts of a test allocator, nor meets an armed failing
** one. A zeroed membuf is empty and writes always succeed; two failures
** can be asked for (0: off):
**   fail_write = k  the k-th write fails with ECS_ERR_NOMEM (writes counts
**                   them, only while fail_write is set): a sweep over
**                   every write of a save;
**   limit = n       a write that would pass n bytes fails with limit_err,
**                   or ECS_ERR_NOMEM when that is ECS_ERR_OK (a full disk).
** Growth that fails (realloc) is ECS_ERR_NOMEM too, nothing written.
** Header-only: static inline, so a file that uses part of it gets no
** unused-function warning.
*/
#ifndef ECS_TEST_MEMBUF_H
#define ECS_TEST_MEMBUF_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ecs.h"

typedef struct membuf {
  unsigned char *p;
  size_t n, cap;
  int writes, fail_write;
  size_t limit;
  ecs_err limit_err;
} membuf;

/* The write function of membuf_writer: append size bytes of data. */
static inline ecs_err membuf_write(void *ud, const void *data, size_t size) {
  membuf *b = (membuf *)ud;
  if (b->fail_write != 0 && ++b->writes == b->fail_write) return ECS_ERR_NOMEM;
  if (b->limit != 0 && b->n + size > b->limit)
    return b->limit_err != ECS_ERR_OK ? b->limit_err : ECS_ERR_NOMEM;
  if (size > b->cap - b->n) {
    size_t ncap = b->cap ? b->cap : 256;
    unsigned char *np;
    while (ncap - b->n < size) ncap *= 2;
    np = (unsigned char *)realloc(b->p, ncap);
    if (np == NULL) return ECS_ERR_NOMEM;
    b->p = np;
    b->cap = ncap;
  }
  if (size > 0) memcpy(b->p + b->n, data, size);
  b->n += size;
  return ECS_ERR_OK;
}

/* An ecs_writer appending to b. */
static inline ecs_writer membuf_writer(membuf *b) {
  ecs_writer out;
  out.write = membuf_write;
  out.ud = b;
  return out;
}

/* Free b's bytes and make it empty again (its settings too). */
static inline void membuf_free(membuf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* True when a and b hold the same bytes. */
static inline bool membuf_same(const membuf *a, const membuf *b) {
  return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
}

#endif
