/*
** query_private.h -- the structs query.c (the match lists) and
** query_iter.c (pins and iterators) share. Not installed; nothing outside
** the query layer includes it.
*/
#ifndef ECS_QUERY_PRIVATE_H
#define ECS_QUERY_PRIVATE_H

#include "query.h"
#include "ecs_private.h"
#include "records.h"

/*
** One snapshot of the match list, in one block: this header, then
** entity[cap], then row[nwith * cap] (term k's rows at row + k * cap),
** then cont[cap]. pins counts the readers holding it; while pinned it is
** never written, and freed only with its query or its last unpin.
*/
typedef struct qsnap {
  struct qsnap *next_retired;
  size_t bytes;
  uint32_t pins;
  uint32_t count, cap;
  uint32_t sized_for; /* the need its capacity was computed from */
  ecs_entity *entity;
  uint32_t *row;
  /* cont[i]: i > 0 and every term's row at i is its row at i - 1 plus one
  ** (so the run holding i - 1 goes on through i); cont[0] is 0 */
  uint8_t *cont;
} qsnap;

/*
** A query. The terms are fixed at creation; everything else is cache:
** the snapshot and its position map, the scratch that runs and programs
** reuse between calls, and expr.c's slot.
*/
struct ecs_query {
  ecs_query *prev, *next; /* the world's list */
  uint32_t nwith, nwithout;
  ecs_component *term[ECS_QUERY_MAX_TERMS]; /* with, then without */
  bool built;         /* cur (and pos) match the world */
  uint32_t pending;   /* changes recorded since the last use (refresh) */
  uint32_t churn;     /* changes since the runs were last looked at */
  qsnap *cur;         /* NULL until the first build */
  qsnap *retired;     /* pinned snapshots replaced since */
  ecs_record_map pos; /* entity index -> position in cur, while built */
  void *scratch;
  size_t scratch_size;
  void *ext;                     /* expr.c's programs (ecsi_query_ext) */
  ecsi_query_ext_free ext_free;  /* frees ext, or NULL */
};

static inline void snap_free(ecs_world *w, qsnap *s) {
  if (s != NULL) ecsi_free(w, s, s->bytes);
}

#endif
