/*
** system_batch.c -- systems side by side: within ecs_world_update
** (system.c), on a world with threads, consecutive systems whose accesses
** do not conflict run in one job of the pool (pool.h), each split by rows
** as when alone (expr_run.c, query_run.c begin and end their runs).
**
** Layer: world (with system.c).
*/
#include <string.h>

#include "system_private.h"
#include "pool.h"

/* ------------------------------------------------------------------------
** On a world with threads, consecutive systems of a phase whose accesses
** do not conflict run in one job of the pool, each split by rows as when
** alone: the result is the one of running them one after the other,
** since none writes a component another reads or writes. A system takes
** part when nothing of its run needs the calling thread between rows: an
** expression system whose parameters are all dt (no params hook: that
** one calls the host) or a native system declared parallel, on no fixed
** step, writing no owned component (an owner's hook runs block by
** block). Its accesses: for an expression, the components of the terms
** its code loads (reads, x op= e included) and stores into (writes); for
** a native system, its columns. Two systems of one query never share a
** batch (their runs would share the query's scratch). Lua systems, and
** any system that cannot take part, end a batch: they run in order after
** it. Systems a batch passes over (disabled, of another phase) do not run
** anyway.
** --------------------------------------------------------------------- */

typedef struct access {
  const ecs_query *q;
  ecs_program *p;   /* expression systems' */
  uint32_t nread, nwrite;
  const ecs_component *read[ECS_QUERY_MAX_TERMS], *write[ECS_QUERY_MAX_TERMS];
} access;

/* Can s take part in a batch? Its accesses into *a when it can. */
static bool batch_access(ecs_world *w, ecs_system *s, access *a) {
  a->q = s->query;
  a->p = NULL;
  a->nread = a->nwrite = 0;
  if (s->interval > 0.0) return false;
  if (s->kind == ECS_SYSTEM_EXPR && !s->needs_params) {
    uint32_t rd, wr;
    if (ecsi_system_program(w, s, &a->p) != ECS_ERR_OK) return false; /* alone: it reports */
    rd = ecsi_program_read(a->p);
    wr = ecsi_program_written(a->p);
    for (uint32_t t = 0; t < ecs_query_with_count(s->query); t++) {
      const ecs_component *c = ecs_query_with(s->query, t);
      if (wr >> t & 1u) {
        if (ecs_component_owned(c)) return false;
        a->write[a->nwrite++] = c;
      }
      if (rd >> t & 1u) a->read[a->nread++] = c;
    }
    return true;
  }
  if (s->kind == ECS_SYSTEM_NATIVE && s->parallel) {
    for (uint32_t k = 0; k < s->ncols; k++) {
      if (s->cols[k].write) {
        if (ecs_component_owned(s->cols[k].c)) return false;
        a->write[a->nwrite++] = s->cols[k].c;
      } else {
        a->read[a->nread++] = s->cols[k].c;
      }
    }
    return true;
  }
  return false;
}

static bool among(const ecs_component *c, const ecs_component *const *list, uint32_t n) {
  for (uint32_t k = 0; k < n; k++)
    if (list[k] == c) return true;
  return false;
}

/* Does one of a and b write what the other reads or writes? */
static bool conflict(const access *a, const access *b) {
  if (a->q == b->q) return true;
  for (uint32_t k = 0; k < a->nwrite; k++)
    if (among(a->write[k], b->read, b->nread) || among(a->write[k], b->write, b->nwrite))
      return true;
  for (uint32_t k = 0; k < b->nwrite; k++)
    if (among(b->write[k], a->read, a->nread)) return true;
  return false;
}

/* The batch that starts at system k (its systems into sys, acc), among
** the first n (the systems of the update's start: one added meanwhile
** runs from the next update, as when alone): how many, and in *last the
** position of the last one. */
static uint32_t gather(ecs_world *w, const char *phase, uint32_t k, uint32_t n,
                       ecs_system **sys, access *acc, uint32_t *last) {
  uint32_t nb = 0;
  if (!batch_access(w, w->system[k], &acc[0])) return 0;
  sys[nb++] = w->system[k];
  *last = k;
  for (uint32_t j = k + 1; j < n && nb < ECSI_MAX_BATCH; j++) {
    ecs_system *t = w->system[j];
    if (t->removed || !t->enabled || strcmp(t->phase, phase) != 0) continue;
    if (!batch_access(w, t, &acc[nb])) break;
    for (uint32_t i = 0; i < nb; i++)
      if (conflict(&acc[i], &acc[nb])) return nb;
    sys[nb++] = t;
    *last = j;
  }
  return nb;
}

/*
** Run a batch: every query aligned first (a re-order moves rows, which a
** pinned run must not see), then every run begun (scratch, pin, the
** journal's captures: one that fails ends those begun, and nothing ran),
** one job for all their parts, then every run ended (stamps, pins,
** changed passes). The systems share the batch's time in their stats.
*/
static ecs_err run_batch(ecs_world *w, ecs_system **sys, access *acc, uint32_t nb,
                         double dt, ecs_system **bad) {
  ecsi_split split[ECSI_MAX_BATCH];
  size_t done[ECSI_MAX_BATCH];
  double t0 = ecs_clock(), share;
  ecs_err err = ECS_ERR_OK;
  for (uint32_t i = 0; i < nb; i++) ecsi_query_align(w, sys[i]->query);
  for (uint32_t i = 0; i < nb; i++) {
    ecs_system *s = sys[i];
    if (s->kind == ECS_SYSTEM_EXPR) {
      double v[ECS_PROGRAM_MAX_PARAMS];
      for (uint32_t k = 0; k < s->nparams; k++) v[k] = (s->dt_mask >> k & 1u) ? dt : 0.0;
      err = ecsi_program_begin(w, acc[i].p, v, &split[i]);
    } else {
      err = ecsi_native_begin(w, s->query, s->cols, s->ncols, dt, s->fn, s->ud, &split[i]);
    }
    if (err != ECS_ERR_OK) {
      for (uint32_t j = 0; j < i; j++) {
        if (sys[j]->kind == ECS_SYSTEM_EXPR) ecsi_program_end(w, &split[j], false, NULL);
        else (void)ecsi_native_end(w, &split[j], false, NULL);
      }
      *bad = s;
      return err;
    }
  }
  ecsi_pool_run_splits(w->pool, split, nb);
  w->batches++;
  for (uint32_t i = 0; i < nb; i++) {
    ecs_err e = ECS_ERR_OK;
    if (sys[i]->kind == ECS_SYSTEM_EXPR) ecsi_program_end(w, &split[i], true, &done[i]);
    else e = ecsi_native_end(w, &split[i], true, &done[i]);
    if (e != ECS_ERR_OK && err == ECS_ERR_OK) {
      err = e;
      *bad = sys[i];
    }
  }
  share = (ecs_clock() - t0) / (double)nb;
  for (uint32_t i = 0; i < nb; i++) {
    sys[i]->stats.calls++;
    sys[i]->stats.seconds += share;
    sys[i]->stats.entities += done[i];
  }
  return err;
}

bool ecsi_batch_run(ecs_world *w, const char *phase, uint32_t *k, uint32_t n, double dt,
                    ecs_err *err, ecs_system **bad) {
  ecs_system *sys[ECSI_MAX_BATCH];
  access acc[ECSI_MAX_BATCH];
  uint32_t last = *k, nb = gather(w, phase, *k, n, sys, acc, &last);
  if (nb < 2) return false;
  *err = run_batch(w, sys, acc, nb, dt, bad);
  *k = last;
  return true;
}
