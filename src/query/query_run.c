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
** resolver that expressions, q:columns specs and native systems use; a
** q:columns spec's whole text ("P.x:in", "entity") is read here too
** (column_spec.h).
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
#include "column_spec.h"
#include "ecs_private.h"
#include "pool.h"


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
    /* an optional term's instance may be absent: read-only */
    if (cols[c].write && (ecs_query_optional(q) >> ecs_query_term(q, cols[c].c) & 1u))
      return ECS_ERR_READONLY_FIELD;
  }
  return ECS_ERR_OK;
}

/* A run: the columns' layout, the pinned list, what fn gets, and one
** flag per part (a read-only column changed). In the caller's memory:
** ecs_query_run_opts's stack, or a batch's ecsi_split (pool.h). */
typedef struct run_job {
  ecsi_rows r;
  ecs_query *q;
  ecs_column_ref cols[ECS_QUERY_MAX_TERMS];
  uint32_t ncols;
  uint32_t term[ECS_QUERY_MAX_TERMS], first[ECS_QUERY_MAX_TERMS];
  bool written[ECS_QUERY_MAX_TERMS];
  size_t elem[ECS_QUERY_MAX_TERMS];
  ecs_type type[ECS_QUERY_MAX_TERMS];
  double dt;
  ecs_system_fn fn;
  void *ud;
  ecs_world *w;
  uint8_t *scratch;  /* per thread: scratch_stride bytes */
  size_t scratch_stride;
  uint32_t parts;
  bool touch;        /* stamp each chunk here (one thread), else after */
  bool owned;        /* a written column is an owned component's */
  bool bad[ECSI_MAX_PARTS]; /* per part: a read-only column changed */
} run_job;
_Static_assert(sizeof(run_job) <= ECSI_SPLIT_BYTES, "raise ECSI_SPLIT_BYTES");

/* Gather an optional term's column: zeros where its instance is absent
** (ECS_NO_INSTANCE; an absent row is in no run, so never direct). */
static void gather_optional(uint8_t *dst, const uint8_t *src, const uint32_t *row,
                            uint32_t n, size_t elem) {
  for (uint32_t j = 0; j < n; j++)
    if (row[j] == ECS_NO_INSTANCE) memset(dst + (size_t)j * elem, 0, elem);
    else memcpy(dst + (size_t)j * elem, src + (size_t)row[j] * elem, elem);
}

/* Positions [i0, i1) of the list, chunk by chunk, on one thread. */
static void run_range(run_job *j, uint8_t *scratch, uint32_t i0, uint32_t i1,
                      bool *bad) {
  const ecsi_rows *r = &j->r;
  const void *colp[ECS_QUERY_MAX_TERMS];
  void *outp[ECS_QUERY_MAX_TERMS];
  ecs_view view;
  view.dt = j->dt;
  view.column = colp;
  view.out = outp;
  view.type = j->type;
  view.ncolumns = j->ncols;
  for (uint32_t i = i0; i < i1 && !*bad;) {
    uint32_t n;
    bool direct;
    void *p[ECS_QUERY_MAX_TERMS];
#ifndef NDEBUG
    uint64_t sum[ECS_QUERY_MAX_TERMS];
#endif
    if (ecsi_rows_live(r, &i, i1, 1) == 0) break; /* past the holes at i */
    n = ecsi_rows_run(r, i, i1 - i); /* (a run never holds a hole) */
    direct = n >= ECSI_MIN_DIRECT_RUN;
    if (!direct) n = ecsi_rows_live(r, &i, i1, ECSI_BLOCK); /* to the next hole */
    for (uint32_t c = 0; c < j->ncols; c++) {
      const uint32_t *row = r->row + (size_t)j->term[c] * r->stride + i;
      uint8_t *base = (uint8_t *)ecs_component_column(j->cols[c].c, j->cols[c].field);
      if (j->first[c] != c) {
        p[c] = p[j->first[c]];
      } else if (direct) {
        p[c] = base + (size_t)row[0] * j->elem[c];
      } else {
        p[c] = scratch + (size_t)c * ECSI_BLOCK * 8u;
        if (ecs_query_optional(j->q) >> j->term[c] & 1u)
          gather_optional((uint8_t *)p[c], base, row, n, j->elem[c]);
        else
          ecsi_copy_rows(p[c], base, row, n, j->elem[c], true);
      }
      colp[c] = p[c];
      outp[c] = j->cols[c].write ? p[c] : NULL;
#ifndef NDEBUG
      if (j->first[c] == c && !j->written[c])
        sum[c] = hash_bytes(p[c], (size_t)n * j->elem[c]);
#endif
    }
    view.count = n;
    view.entities = r->entity + i;
    j->fn(j->w, &view, j->ud);
#ifndef NDEBUG
    for (uint32_t c = 0; c < j->ncols; c++)
      if (j->first[c] == c && !j->written[c] &&
          sum[c] != hash_bytes(p[c], (size_t)n * j->elem[c]))
        *bad = true;
#endif
    /* scatter back the groups some column may have written; read-only
    ** groups are dropped (a write to them was a contract violation) */
    if (!direct)
      for (uint32_t c = 0; c < j->ncols; c++)
        if (j->first[c] == c && j->written[c])
          ecsi_copy_rows(ecs_component_column(j->cols[c].c, j->cols[c].field), p[c],
                         r->row + (size_t)j->term[c] * r->stride + i, n,
                         j->elem[c], false);
    /* change stamps of the rows of every written column's manager (a
    ** manager written through two columns is stamped twice: the same) */
    if (j->touch)
      for (uint32_t c = 0; c < j->ncols; c++)
        if (j->first[c] == c && j->written[c]) {
          const uint32_t *row = r->row + (size_t)j->term[c] * r->stride + i;
          if (direct) ecsi_write_end(j->w, j->cols[c].c, NULL, row[0], n, false);
          else ecsi_write_end(j->w, j->cols[c].c, row, 0, n, false);
        }
    i += n;
  }
}

/* Part k of a split run (pool.h), on whichever thread takes it. */
static void run_part(void *ud, uint32_t worker, uint32_t part) {
  run_job *j = (run_job *)ud;
  uint32_t i0 = (uint32_t)((uint64_t)j->r.count * part / j->parts);
  uint32_t i1 = (uint32_t)((uint64_t)j->r.count * (part + 1u) / j->parts);
  run_range(j, j->scratch + (size_t)worker * j->scratch_stride, i0, i1, &j->bad[part]);
}

/* The columns' layout: columns naming one (manager, field) share the
** first one's array; a group is written when any of its columns is. */
static void layout(run_job *j, ecs_world *w, ecs_query *q, const ecs_column_ref *cols,
                   uint32_t ncols, double dt, ecs_system_fn fn, void *ud) {
  memset(j, 0, sizeof *j);
  j->w = w;
  j->q = q;
  j->ncols = ncols;
  j->dt = dt;
  j->fn = fn;
  j->ud = ud;
  j->scratch_stride = (size_t)(ncols ? ncols : 1) * ECSI_BLOCK * 8u;
  for (uint32_t c = 0; c < ncols; c++) {
    j->cols[c] = cols[c];
    j->type[c] = ecs_component_field(cols[c].c, cols[c].field)->type;
    j->term[c] = (uint32_t)ecs_query_term(q, cols[c].c);
    j->elem[c] = ecs_type_size(j->type[c]);
    j->first[c] = c;
    for (uint32_t d = 0; d < c; d++)
      if (cols[d].c == cols[c].c && cols[d].field == cols[c].field) {
        j->first[c] = j->first[d];
        break;
      }
    j->written[j->first[c]] = j->written[j->first[c]] || cols[c].write;
    j->owned = j->owned || (cols[c].write && ecs_component_owned(cols[c].c));
  }
}

/* An open journal keeps the rows' values before any is written. */
static void prewrite_cols(ecs_world *w, const run_job *j) {
  for (uint32_t c = 0; c < j->ncols; c++)
    if (j->first[c] == c && j->written[c])
      for (uint32_t i = 0, n; (n = ecsi_rows_live(&j->r, &i, j->r.count, UINT32_MAX)) != 0; i += n)
        ecsi_write_begin(w, j->cols[c].c,
                         j->r.row + (size_t)j->term[c] * j->r.stride + i, 0, n, false);
}

/* The stamps of a run made on other threads, here; its read-only check. */
static ecs_err after_split(ecs_world *w, const run_job *j) {
  ecs_err err = ECS_ERR_OK;
  for (uint32_t c = 0; c < j->ncols; c++)
    if (j->first[c] == c && j->written[c])
      for (uint32_t i = 0, n; (n = ecsi_rows_live(&j->r, &i, j->r.count, UINT32_MAX)) != 0; i += n)
        ecsi_write_end(w, j->cols[c].c,
                       j->r.row + (size_t)j->term[c] * j->r.stride + i, 0, n, false);
  for (uint32_t k = 0; k < j->parts; k++)
    if (j->bad[k]) err = ECS_ERR_READONLY;
  return err;
}

ecs_err ecs_query_run_opts(ecs_world *w, ecs_query *q, const ecs_column_ref *cols,
                           uint32_t ncols, double dt, ecs_system_fn fn, void *ud,
                           const ecs_run_opts *opts, size_t *processed) {
  uint32_t threads = 1;
  run_job job;
  ecs_err err = ECS_ERR_OK;
  if (processed != NULL) *processed = 0;
  if ((err = ecsi_query_check_columns(q, cols, ncols)) != ECS_ERR_OK)
    return err;
  layout(&job, w, q, cols, ncols, dt, fn, ud);
  /* everything that can fail comes before the first call of fn */
  job.scratch = (uint8_t *)ecsi_query_scratch(w, q, job.scratch_stride);
  if (job.scratch == NULL) return ECS_ERR_NOMEM;
  ecsi_query_align(w, q);
  if ((err = ecsi_query_pin(w, q, &job.r)) != ECS_ERR_OK) return err;
  /* split over the pool: a run declared safe on workers, long enough, that
  ** writes no owned component (its owner's hook runs chunk by chunk); a
  ** scratch per thread, or, without the memory, this thread alone */
  if (opts != NULL && opts->parallel && w->pool != NULL && !job.owned &&
      job.r.count >= ECSI_PAR_MIN_ROWS) {
    uint8_t *all;
    threads = ecsi_pool_threads(w->pool);
    all = (uint8_t *)ecsi_query_scratch(w, q, job.scratch_stride * threads);
    if (all == NULL) threads = 1;
    else job.scratch = all;
  }
  prewrite_cols(w, &job);
  if (threads > 1) {
    job.parts = threads * ECSI_PARTS_PER_THREAD;
    job.touch = false;
    ecsi_pool_run(w->pool, run_part, &job, job.parts);
    w->split_runs++;
    err = after_split(w, &job);
  } else {
    job.parts = 1;
    job.touch = true;
    run_range(&job, job.scratch, 0, job.r.count, &job.bad[0]);
    if (job.bad[0]) err = ECS_ERR_READONLY;
  }
  ecsi_query_unpin(w, q, job.r.snap);
  if (processed != NULL) *processed = job.r.count - job.r.holes;
  if (err == ECS_ERR_OK) ecs_query_complete(w, q);
  return err;
}

ecs_err ecsi_native_begin(ecs_world *w, ecs_query *q, const ecs_column_ref *cols,
                          uint32_t ncols, double dt, ecs_system_fn fn, void *ud,
                          ecsi_split *s) {
  run_job *j = (run_job *)(void *)s->job.bytes;
  uint32_t threads = ecsi_pool_threads(w->pool);
  ecs_err err;
  if ((err = ecsi_query_check_columns(q, cols, ncols)) != ECS_ERR_OK)
    return err;
  layout(j, w, q, cols, ncols, dt, fn, ud);
  if (j->owned) return ECS_ERR_INVALID; /* the scheduler keeps them out */
  j->scratch = (uint8_t *)ecsi_query_scratch(w, q, j->scratch_stride * threads);
  if (j->scratch == NULL) return ECS_ERR_NOMEM;
  if ((err = ecsi_query_pin(w, q, &j->r)) != ECS_ERR_OK) return err;
  prewrite_cols(w, j);
  j->parts = j->r.count >= ECSI_PAR_MIN_ROWS ? threads * ECSI_PARTS_PER_THREAD
                                             : (j->r.count > 0 ? 1u : 0u);
  j->touch = false;
  s->fn = run_part;
  s->parts = j->parts;
  return ECS_ERR_OK;
}

ecs_err ecsi_native_end(ecs_world *w, ecsi_split *s, bool ran, size_t *processed) {
  run_job *j = (run_job *)(void *)s->job.bytes;
  ecs_err err = ECS_ERR_OK;
  if (ran) {
    if (j->parts > 1) w->split_runs++;
    err = after_split(w, j);
  }
  ecsi_query_unpin(w, j->q, j->r.snap);
  if (processed != NULL) *processed = ran ? j->r.count - j->r.holes : 0;
  if (ran && err == ECS_ERR_OK) ecs_query_complete(w, j->q);
  return err;
}

ecs_err ecs_query_run(ecs_world *w, ecs_query *q, const ecs_column_ref *cols,
                      uint32_t ncols, double dt, ecs_system_fn fn, void *ud,
                      size_t *processed) {
  return ecs_query_run_opts(w, q, cols, ncols, dt, fn, ud, NULL, processed);
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

/*
** msg = "component 'X' is not among the query's components (P, V)": the
** query's "with" terms by name, as many as fit, then "...". Said whether
** or not the world has a component X (the query cannot tell, and "unknown
** component" sent users looking for a typo in a name that was right).
*/
static void not_in_query(const ecs_query *q, const char *comp, int cl,
                         char *msg, size_t msg_size) {
  uint32_t n = ecs_query_with_count(q);
  int used = snprintf(msg, msg_size, "component '%.*s' is not among the "
                      "query's components (", cl, comp);
  size_t at;
  if (used < 0 || (size_t)used >= msg_size) return; /* truncated: it ends */
  at = (size_t)used;
  for (uint32_t t = 0; t < n; t++) {
    const char *name = ecs_component_name(ecs_query_with(q, t));
    size_t len = strlen(name), sep = t > 0 ? 2u : 0u;
    /* room for this name, and for ", ...)" should the next not fit */
    if (at + sep + len + 7u > msg_size) {
      snprintf(msg + at, msg_size - at, "%s...)", sep > 0 ? ", " : "");
      return;
    }
    snprintf(msg + at, msg_size - at, "%s%s", sep > 0 ? ", " : "", name);
    at += sep + len;
  }
  snprintf(msg + at, msg_size - at, ")");
}

ecs_err ecs_query_resolve_field(const ecs_query *q, const char *comp,
                                size_t clen, const char *field, size_t flen,
                                uint32_t *term, uint32_t *fieldno, char *msg,
                                size_t msg_size) {
  int k = term_named(q, comp, clen, false), f;
  int cl = clen > 200 ? 200 : (int)clen, fl = flen > 200 ? 200 : (int)flen;
  const char *colon;
  if (k == -2) {
    if (msg_size > 0)
      snprintf(msg, msg_size,
               "component name '%.*s' is ambiguous: two of the query's "
               "components have it", cl, comp);
    return ECS_ERR_AMBIGUOUS;
  }
  if (k < 0) {
    bool excluded = term_named(q, comp, clen, true) >= 0;
    for (uint32_t a = 0; !excluded && a < ecs_query_any_count(q); a++) {
      const char *name = ecs_component_name(ecs_query_any(q, a));
      if (strlen(name) == clen && memcmp(name, comp, clen) == 0) {
        if (msg_size > 0)
          snprintf(msg, msg_size, "component '%.*s' is an 'any' term of the "
                   "query, which gives no columns (read it with get)", cl, comp);
        return ECS_ERR_UNKNOWN_COMPONENT;
      }
    }
    if (msg_size > 0 && excluded)
      snprintf(msg, msg_size, "component '%.*s' is excluded by the query", cl,
               comp);
    else if (msg_size > 0)
      not_in_query(q, comp, cl, msg, msg_size);
    return excluded ? ECS_ERR_EXCLUDED : ECS_ERR_UNKNOWN_COMPONENT;
  }
  /* a field name has no ':'; a column spec's suffix does ("P.x:in", which
  ** its reader takes off): any other is named as the mistake, not the
  ** field ("P.x:out" is not an unknown field of P) */
  if ((colon = memchr(field, ':', flen)) != NULL) {
    if (msg_size > 0)
      snprintf(msg, msg_size, "unknown suffix '%.*s' (':in' is the only one: "
               "a read-only column)", (int)(flen - (size_t)(colon - field) > 200
               ? 200 : flen - (size_t)(colon - field)), colon);
    return ECS_ERR_UNKNOWN_FIELD;
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

/* ------------------------------------------------------------------------
** Column specs (column_spec.h)
** --------------------------------------------------------------------- */

ecs_err ecs_query_column_spec(const ecs_query *q, const char *s, size_t len,
                              ecs_column_spec *out, char *msg,
                              size_t msg_size) {
  const char *dot;
  size_t clen;
  uint32_t k, f;
  ecs_component *c;
  ecs_err err;
  if (msg_size > 0) msg[0] = '\0';
  out->write = true;
  if (len > 3 && memcmp(s + len - 3, ":in", 3) == 0) {
    out->write = false;
    len -= 3;
  }
  if (len == 6 && memcmp(s, "entity", 6) == 0) { /* the chunk's entities */
    out->term = ECS_ENTITY_TERM;
    out->field = 0;
    out->type = ECS_ENTITY;
    out->write = false;
    return ECS_ERR_OK;
  }
  if ((dot = (const char *)memchr(s, '.', len)) == NULL) return ECS_ERR_INVALID;
  clen = (size_t)(dot - s);
  if ((err = ecs_query_resolve_field(q, s, clen, dot + 1, len - clen - 1, &k,
                                     &f, msg, msg_size)) != ECS_ERR_OK)
    return err;
  c = ecs_query_with(q, k);
  /* the rule of ecs_query_run (ECS_ERR_LUA_FIELD), checked here too so
  ** that the message names the column */
  if (ecs_type_kind(ecs_component_field(c, f)->type) == ECS_KIND_REF) {
    snprintf(msg, msg_size, "%s", ecs_strerror(ECS_ERR_LUA_FIELD));
    return ECS_ERR_LUA_FIELD;
  }
  if (out->write && ecs_component_readonly(c, f)) {
    snprintf(msg, msg_size, "%s", ecs_strerror(ECS_ERR_READONLY_FIELD));
    return ECS_ERR_READONLY_FIELD;
  }
  if (out->write && (ecs_query_optional(q) >> k & 1u)) {
    snprintf(msg, msg_size, "%s is an optional term: its fields are read-only",
             ecs_component_name(c));
    return ECS_ERR_READONLY_FIELD;
  }
  out->term = k;
  out->field = f;
  out->type = ecs_component_field(c, f)->type;
  return ECS_ERR_OK;
}

/* One written column's values (chunk_store). */
static void chunk_store_column(ecs_world *w, const ecs_query *q,
                               ecs_column_spec s, const ecs_scalar *in,
                               const ecs_entity *ent, const uint32_t *rows,
                               uint32_t n, bool current) {
  ecs_component *c = ecs_query_with(q, s.term);
  void *base = ecs_component_column(c, s.field);
  if (!current) {
    for (uint32_t j = 0; j < n; j++)
      if (ecs_query_matches(w, q, ent[j])) {
        ecs_instance i = ecs_component_lookup(w, c, ent[j]);
        ecs_component_write_begin(w, c, NULL, i, 1);
        ecs_value_store_inline(base, s.type, i, in[j]);
      }
    return;
  }
  ecs_component_write_begin(w, c, rows, 0, n);
  ecs_value_store_rows(base, s.type, rows, in, n, false);
}

void ecs_query_chunk_store(ecs_world *w, const ecs_query *q,
                           const ecs_column_spec *cols, uint32_t ncols,
                           const ecs_scalar *vals, const ecs_entity *ent,
                           const uint32_t *rows, size_t stride, uint32_t n,
                           bool current) {
  size_t slot = 0;
  for (uint32_t k = 0; k < ncols; k++)
    if (cols[k].write)
      chunk_store_column(w, q, cols[k], vals + slot++ * stride, ent,
                         rows + (size_t)cols[k].term * stride, n, current);
  for (uint32_t k = 0; k < ncols; k++) {
    bool first = cols[k].write;
    ecs_component *c;
    for (uint32_t j = 0; j < k && first; j++) /* each term once */
      if (cols[j].write && cols[j].term == cols[k].term) first = false;
    if (!first) continue;
    c = ecs_query_with(q, cols[k].term);
    if (current) {
      ecs_component_write_end(w, c, rows + (size_t)cols[k].term * stride, 0, n);
      continue;
    }
    for (uint32_t j = 0; j < n; j++)
      if (ecs_query_matches(w, q, ent[j]))
        ecs_component_write_end(w, c, NULL, ecs_component_lookup(w, c, ent[j]), 1);
  }
}
