/*
** query_run.c -- native runs over a query, and the names of its columns.
**
** Runs. ecs_query_run and compiled programs (expr_run.c) visit the pinned
** snapshot in chunks. Where the rows of every term used are consecutive
** for a while (entities that were given their components together), the
** chunk is that whole run and columns are used in place; elsewhere chunks
** of ECSI_BLOCK rows are gathered into scratch memory and scattered back.
**
** Columns. A run names its columns as (manager, field) pairs, checked by
** one set of rules shared with native systems (ecsi_query_check_columns);
** "Component.field" text is resolved against the query's terms by the one
** resolver that expressions, q:columns specs and native systems use.
**
** Apart from the match list (query.c) because it only reads it: through a
** pin (ecsi_query_pin, ecs_private.h), like any reader, and the query's
** public API; it knows nothing of snapshots' layout or staleness.
**
** Layer: query, above the managers, below expr (layers: alloc.h).
*/
#include <stdio.h>
#include <string.h>

#include "query.h"
#include "ecs_private.h"


/* ------------------------------------------------------------------------
** Native systems
** --------------------------------------------------------------------- */

/*
** Gather or scatter n values of elem bytes through row[] (ecs_private.h;
** query_cursor.c's gathered chunks too). By size, not by
** type: copying moves bits, so four loops cover every field type (bool
** and u8 are one byte, f32 and u32 four ...), and no conversion happens.
*/
void ecsi_copy_rows(void *dst, const void *src, const uint32_t *row,
                      uint32_t n, size_t elem, bool gather) {
  uint8_t *d = (uint8_t *)dst;
  const uint8_t *sp = (const uint8_t *)src;
  /* gather: dst[j] = src[row[j]]; scatter: dst[row[j]] = src[j] */
  switch (elem) {
#define ECSI_COPY(T)                                                         \
  if (gather)                                                                \
    for (uint32_t j = 0; j < n; j++)                                         \
      ((T *)(void *)d)[j] = ((const T *)(const void *)sp)[row[j]];           \
  else                                                                       \
    for (uint32_t j = 0; j < n; j++)                                         \
      ((T *)(void *)d)[row[j]] = ((const T *)(const void *)sp)[j];           \
  break;
  case 1: ECSI_COPY(uint8_t)
  case 2: ECSI_COPY(uint16_t)
  case 4: ECSI_COPY(uint32_t)
  default: ECSI_COPY(uint64_t)
#undef ECSI_COPY
  }
}

#ifndef NDEBUG
/* FNV-1a over n bytes: debug builds compare read-only columns before and
** after a system's call with it. */
static uint64_t hash_bytes(const void *p, size_t n) {
  const uint8_t *b = (const uint8_t *)p;
  uint64_t h = 1469598103934665603u;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211u;
  return h;
}
#endif

/*
** Columns naming the same manager and field share one array (first[c] is
** the first such column): in place they alias anyway, and gathering them
** into one buffer too keeps a write through one visible through the other
** and scatters the group once, so both layouts give the same result. A
** group is written back when any of its columns is writable; a group that
** is only read is handed out read-only and, in debug builds, hashed before
** and after the call to catch a system that writes it anyway.
**
** Chunks: a run of at least ECSI_MIN_DIRECT_RUN rows consecutive in every term
** is handed to fn whole, pointing into the columns (no copy, and one call
** for the run); anything else goes in chunks of ECSI_BLOCK gathered into
** scratch, ECSI_BLOCK * 8 bytes per column (8: the widest field type).
** Shorter runs are gathered because a call per short run would cost more
** than the copies. fn may destroy entities: that moves no row (records
** stay until gc), so the pinned rows stay valid to the end of the run,
** and entities destroyed during it are still visited (the list was taken
** at the start).
*/
/* the texts of TOO_MANY_TERMS and TOO_MANY_COLUMNS in ecs.h say 32 */
_Static_assert(ECS_QUERY_MAX_TERMS == 32u, "update the limit in ECS_ERRORS");

/*
** The rules a column list must keep to be run (ecs_query_run) or to make
** a native system (system.c checks them once, when the system is added),
** in one place so that both refuse the same lists with the same codes.
*/
ecs_err ecsi_query_check_columns(const ecs_query *q, const ecs_column_ref *cols,
                                 uint32_t ncols) {
  if (ncols > ECS_QUERY_MAX_TERMS) return ECS_ERR_TOO_MANY_COLUMNS;
  if (ncols > 0 && cols == NULL) return ECS_ERR_INVALID;
  for (uint32_t c = 0; c < ncols; c++) {
    if (cols[c].c == NULL) return ECS_ERR_INVALID;
    if (ecs_query_term(q, cols[c].c) < 0) return ECS_ERR_UNKNOWN_COMPONENT;
    if (cols[c].field >= ecs_component_field_count(cols[c].c))
      return ECS_ERR_UNKNOWN_FIELD;
    /* a lua field holds references the binding resolves: no numbers */
    if (ecs_component_field(cols[c].c, cols[c].field)->type == ECS_LUA)
      return ECS_ERR_LUA_FIELD;
    /* a field its manager computes (the transform's world position) */
    if (cols[c].write && ecs_component_readonly(cols[c].c, cols[c].field))
      return ECS_ERR_READONLY_FIELD;
  }
  return ECS_ERR_OK;
}

ecs_err ecs_query_run(ecs_world *w, ecs_query *q, const ecs_column_ref *cols,
                      uint32_t ncols, double dt, ecs_system_fn fn, void *ud,
                      size_t *processed) {
  uint32_t term[ECS_QUERY_MAX_TERMS], first[ECS_QUERY_MAX_TERMS];
  bool written[ECS_QUERY_MAX_TERMS];
  const void *colp[ECS_QUERY_MAX_TERMS];
  void *outp[ECS_QUERY_MAX_TERMS];
  ecs_type type[ECS_QUERY_MAX_TERMS];
  size_t elem[ECS_QUERY_MAX_TERMS];
  uint8_t *scratch;
  ecsi_rows r;
  ecs_view view;
  ecs_err err = ECS_ERR_OK;
  size_t done = 0;
  if (processed != NULL) *processed = 0;
  if ((err = ecsi_query_check_columns(q, cols, ncols)) != ECS_ERR_OK)
    return err;
  for (uint32_t c = 0; c < ncols; c++) {
    type[c] = ecs_component_field(cols[c].c, cols[c].field)->type;
    term[c] = (uint32_t)ecs_query_term(q, cols[c].c);
    elem[c] = ecs_type_size(type[c]);
    first[c] = c;
    for (uint32_t d = 0; d < c; d++)
      if (cols[d].c == cols[c].c && cols[d].field == cols[c].field) {
        first[c] = first[d];
        break;
      }
    written[c] = false;
    written[first[c]] = written[first[c]] || cols[c].write;
  }
  /* everything that can fail comes before the first call of fn */
  scratch = (uint8_t *)ecsi_query_scratch(w, q, (size_t)(ncols ? ncols : 1) *
                                                    ECSI_BLOCK * 8u);
  if (scratch == NULL) return ECS_ERR_NOMEM;
  ecsi_query_align(w, q);
  if ((err = ecsi_query_pin(w, q, &r)) != ECS_ERR_OK) return err;
  /* an open journal keeps the rows' values before any is written */
  for (uint32_t c = 0; c < ncols; c++)
    if (first[c] == c && written[c])
      ecs_component_prewrite_n(w, cols[c].c, r.row + (size_t)term[c] * r.stride,
                               r.count);
  view.dt = dt;
  view.column = colp;
  view.out = outp;
  view.type = type;
  view.ncolumns = ncols;
  for (uint32_t i = 0; i < r.count && err == ECS_ERR_OK;) {
    uint32_t n = ecsi_rows_run(&r, i, UINT32_MAX);
    bool direct = n >= ECSI_MIN_DIRECT_RUN;
    void *p[ECS_QUERY_MAX_TERMS];
#ifndef NDEBUG
    uint64_t sum[ECS_QUERY_MAX_TERMS];
#endif
    if (!direct) n = r.count - i < ECSI_BLOCK ? r.count - i : ECSI_BLOCK;
    for (uint32_t c = 0; c < ncols; c++) {
      const uint32_t *row = r.row + (size_t)term[c] * r.stride + i;
      uint8_t *base = (uint8_t *)ecs_component_column(cols[c].c, cols[c].field);
      if (first[c] != c) {
        p[c] = p[first[c]];
      } else if (direct) {
        p[c] = base + (size_t)row[0] * elem[c];
      } else {
        p[c] = scratch + (size_t)c * ECSI_BLOCK * 8u;
        ecsi_copy_rows(p[c], base, row, n, elem[c], true);
      }
      colp[c] = p[c];
      outp[c] = cols[c].write ? p[c] : NULL;
#ifndef NDEBUG
      if (first[c] == c && !written[c])
        sum[c] = hash_bytes(p[c], (size_t)n * elem[c]);
#endif
    }
    view.count = n;
    view.entities = r.entity + i;
    fn(w, &view, ud);
#ifndef NDEBUG
    for (uint32_t c = 0; c < ncols; c++)
      if (first[c] == c && !written[c] &&
          sum[c] != hash_bytes(p[c], (size_t)n * elem[c]))
        err = ECS_ERR_READONLY;
#endif
    /* scatter back the groups some column may have written; read-only
    ** groups are dropped (a write to them was a contract violation) */
    if (!direct)
      for (uint32_t c = 0; c < ncols; c++)
        if (first[c] == c && written[c])
          ecsi_copy_rows(ecs_component_column(cols[c].c, cols[c].field), p[c],
                    r.row + (size_t)term[c] * r.stride + i, n, elem[c], false);
    /* change stamps of the rows of every written column's manager (a
    ** manager written through two columns is stamped twice: the same) */
    for (uint32_t c = 0; c < ncols; c++)
      if (first[c] == c && written[c]) {
        const uint32_t *row = r.row + (size_t)term[c] * r.stride + i;
        if (direct) ecs_component_touch_range(w, cols[c].c, row[0], n);
        else ecs_component_touch_n(w, cols[c].c, row, n);
      }
    i += n;
    done += n;
  }
  ecsi_query_unpin(w, q, r.snap);
  if (processed != NULL) *processed = done;
  if (err == ECS_ERR_OK) ecs_query_complete(w, q);
  return err;
}

/* ------------------------------------------------------------------------
** The one resolver of "Component.field" against a query's terms, shared
** by expressions (expr.c), q:columns specs and native systems (the
** binding), so that a name means the same and fails with the same text
** everywhere.
** --------------------------------------------------------------------- */

/* The with-term (or, with excluded, without-term) named by name[0..len):
** -1 for none, -2 when two have that name (a user component may share
** its name with a manager's owned component: world.transform's
** "transform", a plugin's "mesh"), so that a name never picks one of two
** silently. */
static int term_named(const ecs_query *q, const char *name, size_t len,
                      bool excluded) {
  uint32_t n = excluded ? ecs_query_without_count(q) : ecs_query_with_count(q);
  int found = -1;
  for (uint32_t t = 0; t < n; t++) {
    const char *s = ecs_component_name(excluded ? ecs_query_without(q, t)
                                                : ecs_query_with(q, t));
    if (strlen(s) == len && memcmp(s, name, len) == 0) {
      if (found >= 0) return -2;
      found = (int)t;
    }
  }
  return found;
}

ecs_err ecs_query_resolve_field(const ecs_query *q, const char *comp,
                                size_t clen, const char *field, size_t flen,
                                uint32_t *term, uint32_t *fieldno, char *msg,
                                size_t msg_size) {
  int k = term_named(q, comp, clen, false), f;
  int cl = clen > 200 ? 200 : (int)clen, fl = flen > 200 ? 200 : (int)flen;
  if (k == -2) {
    if (msg_size > 0)
      snprintf(msg, msg_size,
               "component name '%.*s' is ambiguous: two of the query's "
               "components have it", cl, comp);
    return ECS_ERR_AMBIGUOUS;
  }
  if (k < 0) {
    if (msg_size > 0)
      snprintf(msg, msg_size,
               term_named(q, comp, clen, true) >= 0
                   ? "component '%.*s' is excluded by the query"
                   : "unknown component '%.*s'",
               cl, comp);
    return term_named(q, comp, clen, true) >= 0 ? ECS_ERR_EXCLUDED
                                                : ECS_ERR_UNKNOWN_COMPONENT;
  }
  f = ecs_component_field_index(ecs_query_with(q, (uint32_t)k), field, flen);
  if (f < 0) {
    if (msg_size > 0)
      snprintf(msg, msg_size, "unknown field '%.*s.%.*s'", cl, comp, fl, field);
    return ECS_ERR_UNKNOWN_FIELD;
  }
  *term = (uint32_t)k;
  *fieldno = (uint32_t)f;
  return ECS_ERR_OK;
}
