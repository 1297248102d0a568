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
** hole[(cap + 63) / 64], entity[cap], then row[nwith * cap] (term k's rows at row + k * cap),
** then cont[cap]. pins counts the readers holding it; while pinned it is
** never written, and freed only with its query or its last unpin.
*/
typedef struct qsnap {
  struct qsnap *next_retired;
  size_t bytes;
  uint32_t pins;
  uint32_t count, cap;
  uint32_t sized_for; /* the need its capacity was computed from */
  /* hole[i / 64] bit i % 64: entity[i] is ECS_NULL (a hole, query.c
  ** "Upkeep"); 0 past count. Readers skip holes a word at a time. */
  uint64_t *hole;
  ecs_entity *entity;
  uint32_t *row;
  /* cont[i]: i > 0 and every term's row at i is its row at i - 1 plus one
  ** (so the run holding i - 1 goes on through i); cont[0] is 0 */
  uint8_t *cont;
  /* a filtered snapshot (the matches that pass the change terms, made for
  ** one pass): the current snapshot it was taken from, which it keeps
  ** pinned; NULL for the query's own snapshots */
  struct qsnap *basis;
} qsnap;

/*
** A query. The terms are fixed at creation; everything else is cache:
** the snapshot and its position map, the scratch that runs and programs
** reuse between calls, and expr.c's slot.
*/
struct ecs_query {
  ecs_query *prev, *next; /* the world's list */
  uint32_t nwith, nwithout;
  uint32_t nany;      /* "any" terms: at least one of them (after without) */
  uint32_t opt_mask;  /* bit k: "with" term k is optional (its row may be
                      ** ECS_NO_INSTANCE; never term 0, the driver) */
  ecs_component *term[ECS_QUERY_MAX_TERMS]; /* with, without, then any */
  bool built;         /* cur (and pos) match the world */
  bool with_disabled; /* lists disabled entities too (else the tag of
                      ** w->disabled acts as one more "without" term) */
  uint32_t serial;    /* its number among the world's queries (cursors.c) */
  uint32_t pending;   /* changes recorded since the last use (refresh) */
  uint32_t sorted;    /* entries [0, sorted) of cur in driver order
                      ** (query.c, "Upkeep"); the rest an unsorted tail */
  uint32_t holes;     /* entries of [0, sorted) set to ECS_NULL */
  qsnap *cur;         /* NULL until the first build */
  qsnap *retired;     /* pinned snapshots replaced since */
  ecs_record_map pos; /* entity index -> position in cur, while built */
  void *scratch;
  size_t scratch_size;
  /* change terms (change.c): bit k of changed_mask (added_mask) set when
  ** "with" term k is named by `changed` (`added`); since: the tick of the
  ** last completed pass, 0 before the first */
  uint32_t changed_mask, added_mask, since;
  uint8_t *flag;      /* query.c: which matches pass them, flag_cap bytes */
  uint32_t flag_cap;
  void *ext;                     /* expr.c's programs (ecsi_query_ext) */
  ecsi_query_ext_free ext_free;  /* frees ext, or NULL */
};

/* change.c: stop watching the stamps of q's change terms. */
void ecsi_query_untrack(ecs_world *w, ecs_query *q);
/* query.c: a new empty snapshot with room for need entries next to one
** of old (NULL: no memory); the run flag of entry i (cont) recomputed. */
qsnap *ecsi_snap_new(ecs_world *w, const ecs_query *q, uint32_t need,
                     uint32_t old);
void ecsi_snap_cont_fix(const ecs_query *q, qsnap *s, uint32_t i);
/* query_changes.c: a filtered snapshot of q's current one (see
** qsnap.basis), for one pass, NULL when memory ran out; the number of
** matches that pass q's change terms (q->since != 0), or ECS_ERR_NOMEM. */
qsnap *ecsi_query_filtered(ecs_world *w, ecs_query *q);
/* query.c: ecs_query_refresh, then the list in driver order for a pass
** (its tail merged; holes may stay). */
ecs_err ecsi_query_order(ecs_world *w, ecs_query *q);
ecs_err ecsi_query_count_passing(ecs_world *w, ecs_query *q, size_t *out);

/* Words of a hole bitmap of cap entries. */
#define SNAP_HOLE_WORDS(cap) (((size_t)(cap) + 63u) / 64u)

/* Set entry i's entity (a hole when e is ECS_NULL), its hole bit with it. */
static inline void snap_put(qsnap *s, uint32_t i, ecs_entity e) {
  uint64_t bit = (uint64_t)1 << (i & 63u);
  s->entity[i] = e;
  if (e == ECS_NULL) s->hole[i >> 6] |= bit;
  else s->hole[i >> 6] &= ~bit;
}

static inline void snap_free(ecs_world *w, qsnap *s) {
  if (s != NULL) ecsi_free(w, s, s->bytes);
}

#endif
