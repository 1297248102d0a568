/*
** query_cursor.c -- chunk cursors: ecs_query_run turned inside out, for a
** caller that holds raw column pointers between chunks and runs code of
** its own in between (Lua's q:pointers on LuaJIT, a job system).
**
** A cursor pins the query's match list (as every reader does) and the
** managers of its columns (ecs_component_pin): while it lives, no change
** may move or free the rows its pointers address, so a pointer handed out
** stays valid whatever the caller does until the next chunk; a change that
** would move rows fails with ECS_ERR_PINNED instead. Chunks are ecs_query_
** run's: a run of consecutive rows is handed out in place (zero copies);
** elsewhere ECSI_BLOCK rows are gathered into the cursor's scratch and
** scattered back when the caller asks for the next chunk or finishes.
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
  uint32_t n;       /* rows of the chunk handed out */
  bool gathered;    /* the chunk is in scratch: scatter it back */
  uint32_t ncols;
  ecs_column_ref col[ECS_QUERY_MAX_TERMS];
  uint32_t term[ECS_QUERY_MAX_TERMS];  /* column -> the query's term */
  uint32_t first[ECS_QUERY_MAX_TERMS]; /* the first column of its field */
  bool written[ECS_QUERY_MAX_TERMS];   /* (first columns) some column writes */
  bool pinned[ECS_QUERY_MAX_TERMS];    /* this column pinned its manager */
  size_t elem[ECS_QUERY_MAX_TERMS];
  uint8_t *scratch; /* ncols * ECSI_BLOCK * 8 bytes, from the first
                    ** gathered chunk to the end */
};

/* Scatter the chunk handed out back to its rows (gathered chunks only). */
static void put_back(ecs_query_cursor *cur) {
  if (cur->gathered)
    for (uint32_t c = 0; c < cur->ncols; c++)
      if (cur->first[c] == c && cur->written[c])
        ecsi_copy_rows(ecs_component_column(cur->col[c].c, cur->col[c].field),
                       cur->scratch + (size_t)c * ECSI_BLOCK * 8u,
                       cur->r.row + (size_t)cur->term[c] * cur->r.stride +
                           cur->pos - cur->n,
                       cur->n, cur->elem[c], false);
  cur->gathered = false;
  cur->n = 0;
}

/* Unpin the list and the managers (once). */
static void release(ecs_world *w, ecs_query_cursor *cur) {
  if (cur->r.snap == NULL) return;
  ecsi_query_unpin(w, cur->q, cur->r.snap);
  cur->r.snap = NULL;
  for (uint32_t c = 0; c < cur->ncols; c++)
    if (cur->pinned[c]) ecs_component_unpin(w, cur->col[c].c);
}

size_t ecs_query_cursor_size(void) { return sizeof(ecs_query_cursor); }

static size_t scratch_size(const ecs_query_cursor *cur) {
  return (size_t)cur->ncols * ECSI_BLOCK * 8u;
}

ecs_err ecs_query_cursor_begin(ecs_world *w, ecs_query *q,
                               const ecs_column_ref *cols, uint32_t ncols,
                               ecs_query_cursor *cur) {
  ecs_err err;
  memset(cur, 0, sizeof *cur);
  if ((err = ecsi_query_check_columns(q, cols, ncols)) != ECS_ERR_OK)
    return err;
  for (uint32_t c = 0; c < ncols; c++)
    if (ecs_component_owned(cols[c].c)) return ECS_ERR_INVALID;
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
  return ECS_ERR_OK;
}

ecs_err ecs_query_cursor_next(ecs_world *w, ecs_query_cursor *cur,
                              void **ptr, const ecs_entity **entities,
                              uint32_t *count) {
  uint32_t i = cur->pos, n;
  bool direct;
  put_back(cur);
  *count = 0;
  if (cur->r.snap == NULL) return ECS_ERR_OK;
  if (i >= cur->r.count) { /* the end: a changed/added pass is complete */
    release(w, cur);
    ecs_query_complete(w, cur->q);
    return ECS_ERR_OK;
  }
  n = ecsi_rows_run(&cur->r, i, UINT32_MAX);
  direct = n >= ECSI_MIN_DIRECT_RUN;
  if (!direct) {
    n = cur->r.count - i < ECSI_BLOCK ? cur->r.count - i : ECSI_BLOCK;
    if (cur->scratch == NULL && /* the first gathered chunk: kept till end */
        (cur->scratch = (uint8_t *)ecsi_realloc(w, NULL, 0, scratch_size(cur))) == NULL)
      return ECS_ERR_NOMEM;
  }
  for (uint32_t c = 0; c < cur->ncols; c++) {
    const uint32_t *row = cur->r.row + (size_t)cur->term[c] * cur->r.stride + i;
    ecs_component *m = cur->col[c].c;
    uint8_t *base = (uint8_t *)ecs_component_column(m, cur->col[c].field);
    if (cur->first[c] != c) {
      ptr[c] = ptr[cur->first[c]];
      continue;
    }
    if (cur->written[c]) { /* before the caller writes */
      ecs_component_prewrite_n(w, m, row, n);
      if (direct) ecs_component_touch_range(w, m, row[0], n);
      else ecs_component_touch_n(w, m, row, n);
    }
    if (direct) {
      ptr[c] = base + (size_t)row[0] * cur->elem[c];
    } else {
      ptr[c] = cur->scratch + (size_t)c * ECSI_BLOCK * 8u;
      ecsi_copy_rows(ptr[c], base, row, n, cur->elem[c], true);
    }
  }
  if (entities != NULL) *entities = cur->r.entity + i;
  cur->gathered = !direct;
  cur->n = n;
  cur->pos = i + n;
  *count = n;
  return ECS_ERR_OK;
}

void ecs_query_cursor_end(ecs_world *w, ecs_query_cursor *cur, bool finish) {
  if (finish) put_back(cur);
  cur->gathered = false;
  release(w, cur);
  if (cur->scratch != NULL) {
    ecsi_free(w, cur->scratch, scratch_size(cur));
    cur->scratch = NULL;
  }
}
