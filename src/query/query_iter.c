/*
** query_iter.c -- readers of the match lists (query.c): pins, the scratch
** runs reuse, run lengths, and the iterators of query.h. A pinned
** snapshot is never written (query.c copies it before a change), so a
** reader holding a pin reads a stable block whatever happens meanwhile;
** whether that block is still the truth is the one question it asks.
*/
#include <string.h>

#include "query_private.h"

/* The position of the lowest set bit of x (x != 0). */
static inline uint32_t lowest_bit(uint64_t x) {
#if defined(__GNUC__)
  return (uint32_t)__builtin_ctzll(x);
#else
  uint32_t n = 0;
  while ((x & 1u) == 0) {
    x >>= 1;
    n++;
  }
  return n;
#endif
}

/* ------------------------------------------------------------------------
** Pinned snapshots
** --------------------------------------------------------------------- */

/*
** Refresh, then take a pin on the current snapshot and describe it in
** *out. The pin is the whole protocol: a change or rebuild while it is
** held writes a new block and retires this one, so *out stays valid
** until the matching unpin, whatever the reader does in between.
*/
ecs_err ecsi_query_pin(ecs_world *w, ecs_query *q, ecsi_rows *out) {
  ecs_err err = ecsi_query_order(w, q);
  qsnap *s = q->cur;
  if (err != ECS_ERR_OK) return err;
  out->holes = q->holes;
  /* change terms after a first pass: a snapshot of the matches that pass
  ** (without holes) */
  if (q->since != 0 && (q->changed_mask | q->added_mask) != 0) {
    if ((s = ecsi_query_filtered(w, q)) == NULL) return ECS_ERR_NOMEM;
    out->holes = 0;
  }
  s->pins++;
  out->hole = s->hole;
  out->count = s->count;
  out->stride = s->cap;
  out->entity = s->entity;
  out->row = s->row;
  out->cont = s->cont;
  out->snap = s;
  return ECS_ERR_OK;
}

/*
** Drop a pin. The current snapshot just loses a pin (the next rebuild
** reuses it); a retired one is freed with its last pin. The current
** snapshot with no pin left is left alone, so unpinning it twice is
** harmless (a retired one is gone after its last unpin).
*/
void ecsi_query_unpin(ecs_world *w, ecs_query *q, void *snap) {
  qsnap *s = (qsnap *)snap, **p;
  if (s == NULL || s->pins == 0) return;
  if (--s->pins > 0 || s == q->cur) return;
  for (p = &q->retired; *p != NULL; p = &(*p)->next_retired)
    if (*p == s) {
      qsnap *basis = s->basis;
      *p = s->next_retired;
      snap_free(w, s);
      if (basis != NULL) ecsi_query_unpin(w, q, basis); /* a filtered one */
      return;
    }
}

/*
** Scratch kept by the query and reused by every run and program on it:
** it only grows, so a system running every frame allocates once. Taken
** before the pin by its users, so that its failure changes nothing.
*/
void *ecsi_query_scratch(ecs_world *w, ecs_query *q, size_t size) {
  void *p;
  if (size <= q->scratch_size) return q->scratch;
  p = ecsi_realloc(w, q->scratch, q->scratch_size, size);
  if (p == NULL) return NULL;
  q->scratch = p;
  q->scratch_size = size;
  return p;
}

uint32_t ecsi_rows_run(const ecsi_rows *r, uint32_t i, uint32_t max) {
  uint32_t left = r->count - i, n = max < left ? max : left;
  const uint8_t *stop;
  if (n <= 1u) return n;
  stop = (const uint8_t *)memchr(r->cont + i + 1u, 0, n - 1u);
  return stop == NULL ? n : (uint32_t)(stop - (r->cont + i));
}

uint32_t ecsi_rows_live(const ecsi_rows *r, uint32_t *i, uint32_t end,
                        uint32_t max) {
  uint32_t at = *i, stop;
  if (at >= end) return 0;
  if (r->holes == 0) return end - at < max ? end - at : max;
  /* past the holes: the first clear bit from at, a word at a time */
  for (;;) {
    uint64_t live = ~r->hole[at >> 6] >> (at & 63u);
    if (live != 0) {
      at += lowest_bit(live);
      break;
    }
    at = (at | 63u) + 1u;
    if (at >= end) break;
  }
  if (at >= end) {
    *i = end;
    return 0;
  }
  *i = at;
  stop = end - at < max ? end : at + max;
  /* to the next hole: the first set bit after at, before stop */
  for (uint32_t p = at;;) {
    uint64_t holes = r->hole[p >> 6] >> (p & 63u);
    if (holes != 0) {
      p += lowest_bit(holes);
      return (p < stop ? p : stop) - at;
    }
    p = (p | 63u) + 1u;
    if (p >= stop) return stop - at;
  }
}

/*
** Changes whenever a version of q's managers or the destroy epoch does:
** all are counters that only go up, so their sum moves if any of them
** moved (a 64-bit sum does not wrap in practice). One number per chunk
** instead of a copy of every version in the iterator.
*/
static uint64_t stamp(const ecs_world *w, const ecs_query *q) {
  uint64_t sum = w->destroy_epoch;
  for (uint32_t k = 0; k < q->nwith + q->nwithout + q->nany; k++)
    sum += ecs_component_version(q->term[k]);
  /* the tag of disabled entities is one more "without" term (query.c) */
  if (!q->with_disabled && w->disabled != NULL)
    sum += ecs_component_version(w->disabled) + 1u;
  return sum;
}

/* Whether the pinned snapshot s (or the one it was filtered from) is
** still the current list and the list is up to date: its rows are exact. */
static bool exact(const ecs_query *q, const qsnap *s) {
  return (s->basis != NULL ? s->basis : s) == q->cur && q->built;
}

bool ecs_query_iter_current(const ecs_world *w, const ecs_query_iter *it) {
  return it->snap != NULL && it->loads == w->loads &&
         stamp(w, it->q) == it->stamp;
}

bool ecs_query_iter_loaded(const ecs_world *w, const ecs_query_iter *it) {
  return it->loads != w->loads;
}

ecs_err ecs_query_iter_begin(ecs_world *w, ecs_query *q, ecs_query_iter *it) {
  ecsi_rows r;
  ecs_err err = ecsi_query_pin(w, q, &r);
  it->q = q;
  it->snap = err == ECS_ERR_OK ? r.snap : NULL;
  it->pos = 0;
  it->stamp = stamp(w, q); /* as of the begin, until the first chunk */
  it->loads = w->loads;
  return err;
}

/*
** The snapshot may be older than the world (entities destroyed, instances
** removed during the loop), so each entity is checked against the
** current state before it is handed out.
*/
bool ecs_query_iter_next(const ecs_world *w, ecs_query_iter *it,
                         ecs_entity *e) {
  const qsnap *s = (const qsnap *)it->snap;
  if (s == NULL || it->loads != w->loads) return false;
  if (exact(it->q, s)) { /* untouched since the pin: exact, but holes */
    while (it->pos < s->count && s->entity[it->pos] == ECS_NULL) it->pos++;
    if (it->pos >= s->count) return false;
    *e = s->entity[it->pos++];
    return true;
  }
  while (it->pos < s->count) {
    ecs_entity x = s->entity[it->pos++];
    if (x != ECS_NULL && ecs_query_matches(w, it->q, x)) {
      *e = x;
      return true;
    }
  }
  return false;
}

/*
** Two ways, chosen per chunk: while the pinned snapshot is the current
** one and not stale, its entities and rows are exact, and a chunk is two
** memcpy; once anything changed, each entity is checked and its rows
** looked up again, as iter_next does. The stamp taken here lets
** ecs_query_iter_current tell the caller whether the rows it got are
** still exact after it ran code of its own.
*/
uint32_t ecs_query_iter_chunk(const ecs_world *w, ecs_query_iter *it,
                              uint32_t max, ecs_entity *ents, uint32_t *rows) {
  const qsnap *s = (const qsnap *)it->snap;
  const ecs_query *q = it->q;
  uint32_t n = 0;
  if (s == NULL || it->loads != w->loads) return 0;
  it->stamp = stamp(w, q);
  if (exact(q, s)) { /* the snapshot is the truth: stretches between holes */
    ecsi_rows r;
    r.count = s->count;
    r.holes = it->q->holes;
    r.hole = s->hole;
    r.entity = s->entity;
    while (n < max) {
      uint32_t m = ecsi_rows_live(&r, &it->pos, s->count, max - n);
      if (m == 0) break;
      memcpy(ents + n, s->entity + it->pos, (size_t)m * sizeof *ents);
      for (uint32_t k = 0; k < q->nwith; k++)
        memcpy(rows + (size_t)k * max + n, s->row + (size_t)k * s->cap + it->pos,
               (size_t)m * sizeof *rows);
      it->pos += m;
      n += m;
    }
    return n;
  }
  while (n < max && it->pos < s->count) { /* something changed: look up */
    ecs_entity e = s->entity[it->pos++];
    if (e == ECS_NULL || !ecs_query_matches(w, q, e)) continue;
    for (uint32_t k = 0; k < q->nwith; k++)
      rows[(size_t)k * max + n] = ecs_component_lookup(w, q->term[k], e);
    ents[n++] = e;
  }
  return n;
}

void ecs_query_iter_end(ecs_world *w, ecs_query_iter *it) {
  if (it->snap == NULL) return;
  ecsi_query_unpin(w, it->q, it->snap);
  it->snap = NULL;
}

