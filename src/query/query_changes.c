/*
** query_changes.c -- the passes of queries with change terms (change.c
** keeps the stamps): which matches of the list pass the terms, and the
** filtered snapshot a pass reads instead of the list. Apart from query.c
** (the lists) because it only reads a list and writes a copy of its own.
**
** Layer: query.
*/
#include <string.h>

#include "query_private.h"

/*
** The change terms' filter over snapshot s: flag[i] = 1 where position i
** passes (change.c's rule), 0 elsewhere, in q->flag (kept between passes:
** one byte per match). Run by run of consecutive rows (cont), so that each
** term's stamps are read as one array and the compare loop vectorises;
** bit kind of flag[i] collects "some term of that kind passed".
** @return the number passing, or UINT32_MAX when the flags' memory ran
** out.
*/
static uint32_t mark_passing(ecs_world *w, ecs_query *q, const qsnap *s) {
  uint8_t *flag;
  uint32_t n = 0, since = q->since, terms = 0;
  bool first = true;
  uint8_t need = (uint8_t)((q->changed_mask != 0 ? 1u : 0u) |
                           (q->added_mask != 0 ? 2u : 0u));
  if (s->count > q->flag_cap) {
    void *p = ecsi_realloc(w, q->flag, q->flag_cap, s->count);
    if (p == NULL) return UINT32_MAX;
    q->flag = (uint8_t *)p;
    q->flag_cap = s->count;
  }
  flag = q->flag;
  if (s->count == 0) return 0;
  for (uint32_t m = q->changed_mask; m != 0; m &= m - 1u) terms++;
  for (uint32_t m = q->added_mask; m != 0; m &= m - 1u) terms++;
  for (uint32_t kind = 0; kind < ECSI_TICK_KINDS; kind++) {
    uint32_t mask = kind == ECSI_TICK_CHANGED ? q->changed_mask : q->added_mask;
    /* one term in all: the flag is the answer (0 or 1) */
    uint8_t bit = (uint8_t)(terms == 1 ? 1u : 1u << kind);
    for (uint32_t k = 0; mask != 0; k++, mask >>= 1) {
      const uint32_t *tick, *row = s->row + (size_t)k * s->cap;
      if (!(mask & 1u)) continue;
      tick = ecsi_ticks_of(q->term[k], (int)kind);
      for (uint32_t i = 0; i < s->count;) {
        const uint8_t *stop = i + 1u < s->count
            ? (const uint8_t *)memchr(s->cont + i + 1u, 0, s->count - i - 1u)
            : NULL;
        uint32_t len = stop == NULL ? s->count - i
                                    : (uint32_t)(stop - (s->cont + i));
        const uint32_t *t = tick + row[i];
        uint8_t *fl = flag + i;
        if (s->entity[i] == ECS_NULL) { /* a hole (its own run): no match */
          if (first) fl[0] = 0;
          i++;
          continue;
        }
        if (first) /* the first term assigns: no clearing pass */
          for (uint32_t j = 0; j < len; j++)
            fl[j] = (uint8_t)((t[j] > since) ? bit : 0u);
        else
          for (uint32_t j = 0; j < len; j++)
            fl[j] |= (uint8_t)((t[j] > since) ? bit : 0u);
        i += len;
      }
      first = false;
    }
  }
  if (terms == 1) {
    for (uint32_t i = 0; i < s->count; i++) n += flag[i];
    return n;
  }
  for (uint32_t i = 0; i < s->count; i++) {
    uint8_t ok = (uint8_t)((flag[i] & need) == need);
    flag[i] = ok;
    n += ok;
  }
  return n;
}

ecs_err ecsi_query_count_passing(ecs_world *w, ecs_query *q, size_t *out) {
  uint32_t n = mark_passing(w, q, q->cur);
  if (n == UINT32_MAX) return ECS_ERR_NOMEM;
  *out = n;
  return ECS_ERR_OK;
}

/*
** The matches of the current snapshot (refreshed) that pass the change
** terms, copied with their rows into a snapshot of their own, which pins
** the current one (its basis: readers take the snapshot's rows as exact
** while the basis is still current and built, as for the basis itself)
** and is retired from the start, so that its last unpin frees it.
**
** Two steps, for speed when the passing matches are few and scattered:
** the positions are collected first (the flags read 8 at a time, so that
** unchanged stretches go by at 8 per step), into the room of the last
** term's rows; then entities and rows are gathered by position in loops
** with no branch, whose cache misses the processor overlaps (one miss
** after the other, they cost 5x more at 1% of 1M matches). The last
** term's rows are gathered in place, each slot read before it is written.
*/
qsnap *ecsi_query_filtered(ecs_world *w, ecs_query *q) {
  qsnap *s = q->cur, *f;
  uint32_t n = mark_passing(w, q, s), j = 0, *pos;
  /* room for one more: the branchless collection may write pos[n] */
  if (n == UINT32_MAX || (f = ecsi_snap_new(w, q, n + 1u, 0)) == NULL) return NULL;
  pos = f->row + (size_t)(q->nwith - 1u) * f->cap;
  for (uint32_t i = 0; i < s->count && j < n;) {
    uint64_t word;
    if (i + 8u <= s->count) {
      memcpy(&word, q->flag + i, 8);
      if (word == 0) {
        i += 8;
        continue;
      }
      for (uint32_t b = 0; b < 8; b++) /* no branch: j moves by the flag */
        pos[j] = i + b, j += q->flag[i + b];
      i += 8;
      continue;
    }
    pos[j] = i;
    j += q->flag[i++];
  }
  for (j = 0; j < n; j++) f->entity[j] = s->entity[pos[j]];
  for (uint32_t k = 0; k < q->nwith; k++) {
    const uint32_t *from = s->row + (size_t)k * s->cap;
    uint32_t *to = f->row + (size_t)k * f->cap;
    for (j = 0; j < n; j++) to[j] = from[pos[j]];
  }
  f->count = n;
  for (j = 0; j < n; j++) ecsi_snap_cont_fix(q, f, j);
  f->basis = s;
  s->pins++;
  f->next_retired = q->retired;
  q->retired = f;
  return f;
}

/* ------------------------------------------------------------------------
** Change terms of a query (moved from change.c, which keeps the stamps)
** --------------------------------------------------------------------- */

/* The cursor a load kept for the query of that number and terms, or NULL
** (cursors.c keeps them; a query made after the load goes on from its). */
const ecsi_qcursor *ecsi_kept_query(const ecsi_cursors *c, uint32_t serial,
                                    uint64_t sig) {
  for (uint32_t k = 0; k < c->nq; k++)
    if (c->q[k].serial == serial && c->q[k].sig == sig) return &c->q[k];
  return NULL;
}


ecs_err ecs_query_track_changes(ecs_world *w, ecs_query *q,
                                ecs_component *const *changed,
                                uint32_t nchanged,
                                ecs_component *const *added, uint32_t nadded) {
  uint32_t mask[ECSI_TICK_KINDS] = {0, 0}, fresh[ECSI_TICK_KINDS];
  for (int kind = 0; kind < ECSI_TICK_KINDS; kind++) {
    ecs_component *const *list = kind == ECSI_TICK_CHANGED ? changed : added;
    uint32_t n = kind == ECSI_TICK_CHANGED ? nchanged : nadded;
    if (n > 0 && list == NULL) return ECS_ERR_INVALID;
    for (uint32_t j = 0; j < n; j++) {
      int t;
      if (list[j] == NULL) return ECS_ERR_INVALID;
      t = ecs_query_term(q, list[j]);
      if (t < 0 || (uint32_t)t >= q->nwith) return ECS_ERR_UNKNOWN_COMPONENT;
      if (q->opt_mask >> t & 1u) return ECS_ERR_INVALID; /* may be absent */
      mask[kind] |= 1u << t;
    }
  }
  fresh[ECSI_TICK_CHANGED] = mask[ECSI_TICK_CHANGED] & ~q->changed_mask;
  fresh[ECSI_TICK_ADDED] = mask[ECSI_TICK_ADDED] & ~q->added_mask;
  /* watch every new (term, kind); undo them all on failure */
  for (int kind = 0; kind < ECSI_TICK_KINDS; kind++)
    for (uint32_t k = 0; k < q->nwith; k++) {
      if (!(fresh[kind] >> k & 1u)) continue;
      if (ecsi_ticks_watch(w, q->term[k], kind) != ECS_ERR_OK) {
        for (int k2 = 0; k2 <= kind; k2++)
          for (uint32_t j = 0; j < (k2 == kind ? k : q->nwith); j++)
            if (fresh[k2] >> j & 1u) ecsi_ticks_unwatch(w, q->term[j], k2);
        return ECS_ERR_NOMEM;
      }
    }
  q->changed_mask |= mask[ECSI_TICK_CHANGED];
  q->added_mask |= mask[ECSI_TICK_ADDED];
  /* report every match once; or, for a query made after a load whose
  ** saved world had this query (number and terms), go on from its cursor */
  if ((fresh[0] | fresh[1]) != 0) {
    const ecsi_qcursor *kept =
        w->cursors != NULL ? ecsi_kept_query(w->cursors, q->serial, ecsi_query_signature(q))
                           : NULL;
    q->since = kept != NULL ? kept->since : 0;
  }
  return ECS_ERR_OK;
}

bool ecs_query_tracks_changes(const ecs_query *q) {
  return (q->changed_mask | q->added_mask) != 0;
}

/* ecs_query_free: the query's stamps are no longer needed. */
void ecsi_query_untrack(ecs_world *w, ecs_query *q) {
  for (uint32_t k = 0; k < q->nwith; k++) {
    if (q->changed_mask >> k & 1u)
      ecsi_ticks_unwatch(w, q->term[k], ECSI_TICK_CHANGED);
    if (q->added_mask >> k & 1u)
      ecsi_ticks_unwatch(w, q->term[k], ECSI_TICK_ADDED);
  }
  q->changed_mask = q->added_mask = 0;
}
