/*
** query_cursor.c -- chunk cursors: ecs_query_run turned inside out, for a
** caller that holds raw column pointers between chunks and runs code of
** its own in between (Lua's q:pointers on LuaJIT, a job system).
**
** A cursor pins the query's match list (as every reader does) and the
** managers of its columns (ecs_component_pin): while it lives, no change
** may move or free the rows its pointers address, so a pointer handed out
** stays valid whatever the caller does until the next chunk; a change that
** would move rows fails with ECS_ERR_PINNED instead.
**
** Every chunk is a run (positions at which the rows of the columns' terms
** are consecutive), handed out in place however short. Unlike
** ecs_query_run, which calls no code of the caller's between gathering a
** block and scattering it back, a cursor's caller runs anything between
** two chunks: a copy held for it would be a second version of the rows,
** stale for every other path (a set, a nested loop) that writes them
** meanwhile and written back over them at the end. So the caller always
** holds the rows themselves, and a write by any path is seen by every
** other at once, whatever the layout; a query whose rows are scattered
** costs a chunk per run instead (ecsi_query_align keeps runs long where
** it can, before the pins).
**
** Written columns are stamped (change ticks) and captured by an open
** journal when their chunk is handed out, before the caller writes: a
** caller that abandons the loop (an error, a break) leaves no write
** unstamped.
**
** Layer: query, beside query_run.c (layers: alloc.h).
*/
#include <string.h>

#include "query.h"
#include "ecs_private.h"

struct ecs_query_cursor {
  ecs_query *q;
  ecsi_rows r;      /* the pinned list; r.snap NULL once finished */
  uint32_t pos;     /* next position in the list */
  uint32_t ncols;
  uint32_t nterms;  /* distinct terms of the columns (term_of) */
  bool all_terms;   /* they are every "with" term of q */
  ecs_column_ref col[ECS_QUERY_MAX_TERMS];
  uint32_t term[ECS_QUERY_MAX_TERMS];  /* column -> the query's term */
  uint32_t term_of[ECS_QUERY_MAX_TERMS]; /* the distinct terms */
  uint32_t first[ECS_QUERY_MAX_TERMS]; /* the first column of its field */
  bool written[ECS_QUERY_MAX_TERMS];   /* (first columns) some column writes */
  bool pinned[ECS_QUERY_MAX_TERMS];    /* this column pinned its manager */
  size_t elem[ECS_QUERY_MAX_TERMS];
  uint8_t *base[ECS_QUERY_MAX_TERMS];  /* the columns: fixed by the pins */
};

/* Unpin the list and the managers (once). */
static void release(ecs_world *w, ecs_query_cursor *cur) {
  if (cur->r.snap == NULL) return;
  ecsi_query_unpin(w, cur->q, cur->r.snap);
  cur->r.snap = NULL;
  for (uint32_t c = 0; c < cur->ncols; c++)
    if (cur->pinned[c]) ecs_component_unpin(w, cur->col[c].c);
}

size_t ecs_query_cursor_size(void) { return sizeof(ecs_query_cursor); }

/*
** Length of the run at position i: the positions from i on at which the
** rows of every term the columns use are consecutive. The list's run bytes
** say it for all of q's terms at once (a memchr); a break among them is
** looked at again for the columns' own terms only, so that a term no
** column reads (a tag, a component read through another loop) does not
** cut the chunks.
*/
static uint32_t run_length(const ecs_query_cursor *cur, uint32_t i) {
  const ecsi_rows *r = &cur->r;
  uint32_t n = ecsi_rows_run(r, i, UINT32_MAX);
  if (cur->all_terms) return n;
  while (i + n < r->count) {
    uint32_t p = i + n;
    if (r->entity[p] == ECS_NULL) return n; /* a hole: stale rows */
    for (uint32_t t = 0; t < cur->nterms; t++) {
      const uint32_t *row = r->row + (size_t)cur->term_of[t] * r->stride;
      if (row[p] != row[p - 1] + 1u) return n;
    }
    n += ecsi_rows_run(r, p, UINT32_MAX);
  }
  return n;
}

ecs_err ecs_query_cursor_begin(ecs_world *w, ecs_query *q,
                               const ecs_column_ref *cols, uint32_t ncols,
                               ecs_query_cursor *cur) {
  ecs_err err;
  memset(cur, 0, sizeof *cur);
  if ((err = ecsi_query_check_columns(q, cols, ncols)) != ECS_ERR_OK)
    return err;
  for (uint32_t c = 0; c < ncols; c++)
    if (ecs_component_owned(cols[c].c) ||
        (ecs_query_optional(q) >> ecs_query_term(q, cols[c].c) & 1u)) /* no place */
      return ECS_ERR_INVALID;
  cur->q = q;
  cur->ncols = ncols;
  for (uint32_t c = 0; c < ncols; c++) {
    cur->col[c] = cols[c];
    cur->term[c] = (uint32_t)ecs_query_term(q, cols[c].c);
    cur->elem[c] = ecs_type_size(ecs_component_field(cols[c].c, cols[c].field)->type);
    cur->first[c] = c;
    for (uint32_t d = 0; d < c; d++)
      if (cols[d].c == cols[c].c && cols[d].field == cols[c].field) {
        cur->first[c] = cur->first[d];
        break;
      }
    cur->written[cur->first[c]] = cur->written[cur->first[c]] || cols[c].write;
  }
  for (uint32_t c = 0; c < ncols; c++) {
    bool seen = false;
    for (uint32_t t = 0; t < cur->nterms && !seen; t++)
      seen = cur->term_of[t] == cur->term[c];
    if (!seen) cur->term_of[cur->nterms++] = cur->term[c];
  }
  cur->all_terms = cur->nterms == ecs_query_with_count(q);
  ecsi_query_align(w, q); /* before the pins: it re-orders rows */
  if ((err = ecsi_query_pin(w, q, &cur->r)) != ECS_ERR_OK) {
    cur->r.snap = NULL;
    return err;
  }
  for (uint32_t c = 0; c < ncols; c++) {
    bool seen = false;
    for (uint32_t d = 0; d < c && !seen; d++) seen = cols[d].c == cols[c].c;
    if (!seen) cur->pinned[c] = ecs_component_pin(w, cols[c].c) == ECS_ERR_OK;
  }
  for (uint32_t c = 0; c < ncols; c++) /* pinned: no change moves them now */
    cur->base[c] = (uint8_t *)ecs_component_column(cols[c].c, cols[c].field);
  return ECS_ERR_OK;
}

ecs_err ecs_query_cursor_next(ecs_world *w, ecs_query_cursor *cur,
                              void **ptr, const ecs_entity **entities,
                              uint32_t *count) {
  uint32_t i = cur->pos, n;
  *count = 0;
  if (cur->r.snap == NULL) return ECS_ERR_OK;
  if (ecsi_rows_live(&cur->r, &i, cur->r.count, 1) == 0) { /* the end: a changed/added pass is complete */
    release(w, cur);
    ecs_query_complete(w, cur->q);
    return ECS_ERR_OK;
  }
  n = run_length(cur, i);
  for (uint32_t c = 0; c < cur->ncols; c++) {
    uint32_t row = cur->r.row[(size_t)cur->term[c] * cur->r.stride + i];
    if (cur->first[c] != c) {
      ptr[c] = ptr[cur->first[c]];
      continue;
    }
    if (cur->written[c]) { /* before the caller writes */
      ecsi_write_begin(w, cur->col[c].c, NULL, row, n, false);
      ecsi_write_end(w, cur->col[c].c, NULL, row, n, false);
    }
    ptr[c] = cur->base[c] + (size_t)row * cur->elem[c];
  }
  if (entities != NULL) *entities = cur->r.entity + i;
  cur->pos = i + n;
  *count = n;
  return ECS_ERR_OK;
}

void ecs_query_cursor_end(ecs_world *w, ecs_query_cursor *cur, bool finish) {
  (void)finish; /* nothing is ever held aside: see the top of the file */
  release(w, cur);
}
