/*
** system.c -- the world's systems and ecs_world_update (system.h).
**
** The world keeps its systems as an array of pointers in run order
** (w->system, w->system_count); each system is one block holding the
** struct, its resolved columns, its parameter table and its strings, so
** adding is two allocations (the array's growth and the block) and
** removing none.
**
** Walks and removal. ecs_world_update walks the array by position up to
** the count it started with; w->updating counts the updates in progress
** (they nest: an external system may update the world again). Outside an
** update, removal frees the block and closes the gap at once. During one,
** it only marks the system removed (it is skipped by every walk and by
** find, and its name is free) and counts it in w->system_dead: positions
** stay put, and the block stays valid for the walk that may be running it.
** The outermost update sweeps the removed ones when it returns. Additions
** append, past the bound of the walks in progress.
*/
#include <math.h>
#include <string.h>

#include "system_private.h"


static uint32_t find_at(const ecs_world *w, const char *name);

static void free_system(ecs_world *w, ecs_system *s) {
  ecsi_free(w, s, s->size);
}

/* ------------------------------------------------------------------------
** Adding
** --------------------------------------------------------------------- */

/* Bytes of a block, or 0 on overflow; a + b with overflow to SIZE_MAX. */
static size_t add_size(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/*
** The checks that need no allocation; for an expression, its program
** (compiled now: checked, and its parameters read). Sets *err (ECS_ERR_OK
** when desc is fine) and returns the message for msg: NULL for the
** table's text of *err, "" when msg holds the compiler's message already.
** A part of desc that is missing (a NULL name, query, fn or call, an
** unknown kind) is ECS_ERR_INVALID: a C caller's slip, which no rule of
** the Lua API can cause; the other failures have codes of their own.
*/
static const char *check_desc(ecs_world *w, const ecs_system_desc *d,
                              bool replacing, ecs_program **prog, ecs_err *err,
                              char *msg, size_t msgsize) {
  *err = ECS_ERR_INVALID;
  *prog = NULL;
  if (d->name == NULL) return "a system needs a name";
  if (!replacing && ecs_system_find(w, d->name) != NULL) {
    *err = ECS_ERR_EXISTS;
    return "a system with this name already exists";
  }
  if (replacing && ecs_system_find(w, d->name) == NULL) {
    *err = ECS_ERR_NO_SYSTEM;
    return NULL;
  }
  if (d->phase != NULL && d->phase[0] == '\0') return "a phase needs a name";
  if (!(d->interval >= 0.0) || d->interval > 1e300)
    return "an interval must be a finite number, 0 or more";
  if ((d->nafter > 0 && d->after == NULL) || (d->nbefore > 0 && d->before == NULL))
    return "after or before names missing";
  for (uint32_t k = 0; k < d->nafter; k++)
    if (d->after[k] == NULL) return "after names missing";
  for (uint32_t k = 0; k < d->nbefore; k++)
    if (d->before[k] == NULL) return "before names missing";
  switch (d->kind) {
  case ECS_SYSTEM_EXPR: {
    char buf[256];
    if (d->query == NULL) return "an expression system needs a query";
    if (d->expr == NULL) return "an expression system needs an expression";
    *err = ecs_query_program(w, d->query, d->expr, d->expr_len, prog, buf,
                             sizeof buf);
    if (*err != ECS_ERR_OK) { /* the compiler said why, with a position */
      ecsi_system_set_msg(msg, msgsize, buf);
      return "";
    }
    if (d->params == NULL)
      for (uint32_t k = 0; k < ecs_program_param_count(*prog); k++)
        if (strcmp(ecs_program_param_name(*prog, k), "dt") != 0) {
          *err = ECS_ERR_INVALID;
          return "an expression with parameters other than 'dt' needs a "
                 "params hook";
        }
    break;
  }
  case ECS_SYSTEM_NATIVE:
    if (d->query == NULL) return "a native system needs a query";
    if (d->fn == NULL) return "a native system needs a function";
    /* ecs_query_run's own rules, checked once here instead of per run */
    *err = ecsi_query_check_columns(d->query, d->cols, d->ncols);
    if (*err == ECS_ERR_INVALID) return "columns or a column's component missing";
    if (*err != ECS_ERR_OK) return NULL;
    break;
  case ECS_SYSTEM_EXTERNAL:
    if (d->call == NULL) return "an external system needs a callback";
    break;
  default:
    return "unknown system kind";
  }
  *err = ECS_ERR_OK;
  return NULL;
}

/*
** One block: the struct, columns, parameter names and positions, then the
** strings (name, expression, parameter names). Every part is a multiple of
** the next one's alignment (the struct and column refs of 8, pointers of
** their own size, positions of 4, strings of 1).
*/
/* Copy text to *at and move past it. @return the copy. */
static const char *copy_text(char **at, const char *text) {
  size_t n = strlen(text) + 1;
  char *to = *at;
  memcpy(to, text, n);
  *at += n;
  return to;
}

static void remove_at(ecs_world *w, uint32_t i);

/* A query is freed (the barrier's QUERY_FREED): the systems over it go
** first. */
static int on_query_freed(ecs_world *w, void *self, const ecsi_change *ch) {
  const struct ecs_query *q = (const struct ecs_query *)ch->arg;
  (void)self;
  for (uint32_t i = 0; i < w->system_count;) {
    ecs_system *s = w->system[i];
    if (!s->removed && s->query == q) {
      remove_at(w, i); /* closes the gap outside an update: look again */
      if (w->updating > 0) i++;
    } else {
      i++;
    }
  }
  return 0;
}

const ecsi_scursor *ecsi_kept_system(const ecsi_cursors *c, const char *name) {
  size_t len = strlen(name);
  for (uint32_t k = 0; k < c->nsys; k++)
    if (c->sys[k].len == len && memcmp(c->sys[k].name, name, len) == 0)
      return &c->sys[k];
  return NULL;
}

/* The time a system of that name owed when the last load's world was
** saved (cursors.c keeps it for the systems made after the load). */
static double kept_owed(const ecs_world *w, const char *name) {
  const ecsi_scursor *sc;
  if (w->cursors == NULL) return 0.0;
  sc = ecsi_kept_system(w->cursors, name);
  return sc != NULL ? sc->owed : 0.0;
}

/*
** Check desc and make its system's block (not yet in the list); room for
** one more in the list is reserved first, so that nothing is left to undo
** once the block exists.
*/
static ecs_err make_system(ecs_world *w, const ecs_system_desc *d,
                           bool replacing, ecs_system **out, char *msg,
                           size_t msgsize) {
  /* the schedule: the desc's, or for a replacement without a phase the
  ** old system's */
  const ecs_system *old = replacing && d->name != NULL ? ecs_system_find(w, d->name) : NULL;
  bool keep = old != NULL && d->phase == NULL;
  const char *phase = keep ? old->phase : d->phase != NULL ? d->phase : "update";
  const char *const *after = keep ? (const char *const *)old->after : d->after;
  const char *const *before = keep ? (const char *const *)old->before : d->before;
  uint32_t nafter = keep ? old->nafter : d->nafter;
  uint32_t nbefore = keep ? old->nbefore : d->nbefore;
  double interval = keep ? old->interval : d->interval;
  ecs_program *prog;
  ecs_err err;
  const char *bad;
  size_t size, name_len, at;
  uint32_t nparams = 0, ncols = 0;
  void *items;
  ecs_system *s;
  char *chars;
  if (msg != NULL && msgsize > 0) msg[0] = '\0';
  bad = check_desc(w, d, replacing, &prog, &err, msg, msgsize);
  if (err != ECS_ERR_OK) {
    if (bad == NULL) ecsi_system_set_msg(msg, msgsize, ecs_strerror(err));
    else if (*bad != '\0') ecsi_system_set_msg(msg, msgsize, bad);
    return err;
  }
  if (d->kind == ECS_SYSTEM_EXPR) nparams = ecs_program_param_count(prog);
  if (d->kind == ECS_SYSTEM_NATIVE) ncols = d->ncols;
  name_len = strlen(d->name);
  size = sizeof *s + ncols * sizeof *s->cols +
         (nparams + nafter + nbefore) * sizeof *s->pname +
         nparams * sizeof *s->ppos;
  size = add_size(size, add_size(name_len, 1));
  size = add_size(size, strlen(phase) + 1);
  for (uint32_t k = 0; k < nafter; k++) size = add_size(size, strlen(after[k]) + 1);
  for (uint32_t k = 0; k < nbefore; k++) size = add_size(size, strlen(before[k]) + 1);
  if (d->kind == ECS_SYSTEM_EXPR) size = add_size(size, add_size(d->expr_len, 1));
  for (uint32_t k = 0; k < nparams; k++)
    size = add_size(size, strlen(ecs_program_param_name(prog, k)) + 1);
  if (size == SIZE_MAX) return ECS_ERR_NOMEM;
  /* reserve the array's slot, then the block: nothing to undo after */
  items = w->system;
  err = ecsi_grow(w, &items, &w->system_cap, w->system_count + 1,
                  sizeof *w->system, 8);
  if (err != ECS_ERR_OK) return err;
  w->system = (ecs_system **)items;
  if ((err = ecsi_systems_scratch_reserve(w)) != ECS_ERR_OK) return err;
  s = (ecs_system *)ecsi_realloc(w, NULL, 0, size);
  if (s == NULL) return ECS_ERR_NOMEM;
  memset(s, 0, sizeof *s);
  s->size = size;
  s->kind = d->kind;
  s->enabled = true;
  s->query = d->query;
  s->ud = d->ud;
  s->fn = d->kind == ECS_SYSTEM_NATIVE ? d->fn : NULL;
  s->parallel = d->kind == ECS_SYSTEM_NATIVE && d->parallel;
  s->call = d->kind == ECS_SYSTEM_EXTERNAL ? d->call : NULL;
  s->params = d->kind == ECS_SYSTEM_EXPR ? d->params : NULL;
  at = sizeof *s;
  s->cols = (ecs_column_ref *)(void *)((char *)s + at);
  s->ncols = ncols;
  if (ncols > 0) memcpy(s->cols, d->cols, ncols * sizeof *s->cols);
  at += ncols * sizeof *s->cols;
  s->pname = (const char **)(void *)((char *)s + at);
  at += nparams * sizeof *s->pname;
  s->after = (const char **)(void *)((char *)s + at);
  at += nafter * sizeof *s->after;
  s->before = (const char **)(void *)((char *)s + at);
  at += nbefore * sizeof *s->before;
  s->ppos = (uint32_t *)(void *)((char *)s + at);
  at += nparams * sizeof *s->ppos;
  chars = (char *)s + at;
  memcpy(chars, d->name, name_len + 1);
  s->name = chars;
  chars += name_len + 1;
  if (d->kind == ECS_SYSTEM_EXPR) {
    memcpy(chars, d->expr, d->expr_len);
    chars[d->expr_len] = '\0';
    s->expr = chars;
    s->expr_len = d->expr_len;
    chars += d->expr_len + 1;
  }
  s->nparams = nparams;
  for (uint32_t k = 0; k < nparams; k++) {
    const char *pn = ecs_program_param_name(prog, k);
    size_t n = strlen(pn) + 1;
    memcpy(chars, pn, n);
    s->pname[k] = chars;
    s->ppos[k] = ecs_program_param_position(prog, k);
    chars += n;
    if (strcmp(pn, "dt") == 0) s->dt_mask |= (uint64_t)1 << k;
    else s->needs_params = true;
  }
  s->phase = copy_text(&chars, phase);
  s->nafter = nafter;
  for (uint32_t k = 0; k < nafter; k++) s->after[k] = copy_text(&chars, after[k]);
  s->nbefore = nbefore;
  for (uint32_t k = 0; k < nbefore; k++) s->before[k] = copy_text(&chars, before[k]);
  s->seq = old != NULL ? old->seq : w->system_seq++;
  s->interval = interval;
  /* a system made after a load owes what the saved one of its name did */
  s->acc = keep ? old->acc : interval > 0.0 ? kept_owed(w, s->name) : 0.0;
  *out = s;
  return ECS_ERR_OK;
}

ecs_err ecs_system_add(ecs_world *w, const ecs_system_desc *d,
                       ecs_system **out, char *msg, size_t msgsize) {
  ecs_system *s;
  uint32_t n;
  ecs_err err = make_system(w, d, false, &s, msg, msgsize);
  if (err != ECS_ERR_OK) return err;
  /* the systems hear of queries freed (barrier.h); subscribing again does
  ** nothing, and the one subscriber of its rank cannot find the kind full */
  (void)ecsi_subscribe(&w->barrier, ECSI_EV_QUERY_FREED, ECSI_RANK_SYSTEM,
                       on_query_freed, NULL);
  w->system[w->system_count++] = s;
  if ((err = ecsi_systems_order(w, &n, msg, msgsize)) != ECS_ERR_OK) {
    w->system_count--;
    free_system(w, s);
    return err;
  }
  ecsi_systems_apply_order(w, n);
  if (out != NULL) *out = s;
  return ECS_ERR_OK;
}

/*
** The new system takes the old one's place in the list. During an update
** the old one is marked removed and parked at the end of the list (the
** room make_system reserved), where the walks in progress do not reach
** and the sweep frees it; a walk that has not reached the place yet runs
** the new system there.
*/
ecs_err ecs_system_replace(ecs_world *w, const ecs_system_desc *d,
                           ecs_system **out, char *msg, size_t msgsize) {
  ecs_system *s, *old;
  uint32_t i, n;
  ecs_err err = make_system(w, d, true, &s, msg, msgsize);
  if (err != ECS_ERR_OK) return err;
  i = find_at(w, d->name);
  old = w->system[i];
  s->enabled = old->enabled;
  w->system[i] = s;
  if ((err = ecsi_systems_order(w, &n, msg, msgsize)) != ECS_ERR_OK) {
    w->system[i] = old;
    free_system(w, s);
    return err;
  }
  if (w->updating > 0) {
    old->removed = true;
    w->system[w->system_count++] = old;
    w->system_dead++;
  } else {
    free_system(w, old);
  }
  ecsi_systems_apply_order(w, n);
  if (out != NULL) *out = s;
  return ECS_ERR_OK;
}

/* ------------------------------------------------------------------------
** Removing and finding
** --------------------------------------------------------------------- */

/* Remove the live system at position i (see the top of the file). */
static void remove_at(ecs_world *w, uint32_t i) {
  ecs_system *s = w->system[i];
  if (w->updating > 0) {
    s->removed = true;
    w->system_dead++;
    return;
  }
  memmove(&w->system[i], &w->system[i + 1],
          (w->system_count - i - 1) * sizeof *w->system);
  w->system_count--;
  free_system(w, s);
}

/* Free the systems removed during the updates that just ended. */
static void sweep(ecs_world *w) {
  uint32_t j = 0;
  for (uint32_t i = 0; i < w->system_count; i++) {
    ecs_system *s = w->system[i];
    if (s->removed) free_system(w, s);
    else w->system[j++] = s;
  }
  w->system_count = j;
  w->system_dead = 0;
}

static uint32_t find_at(const ecs_world *w, const char *name) {
  for (uint32_t i = 0; i < w->system_count; i++)
    if (!w->system[i]->removed && strcmp(w->system[i]->name, name) == 0)
      return i;
  return UINT32_MAX;
}

bool ecs_system_remove(ecs_world *w, const char *name) {
  uint32_t i = name != NULL ? find_at(w, name) : UINT32_MAX;
  if (i == UINT32_MAX) return false;
  remove_at(w, i);
  return true;
}

ecs_system *ecs_system_find(const ecs_world *w, const char *name) {
  uint32_t i = name != NULL ? find_at(w, name) : UINT32_MAX;
  return i == UINT32_MAX ? NULL : w->system[i];
}

/* ecs_query_free: the systems over q go with it. */
void ecsi_systems_free(ecs_world *w) {
  uint32_t sc = ecsi_systems_scratch_cap(w);
  ecsi_unsubscribe(&w->barrier, ECSI_EV_QUERY_FREED, on_query_freed, NULL);
  for (uint32_t i = 0; i < w->system_count; i++) free_system(w, w->system[i]);
  ecsi_free(w, w->system_order, (size_t)sc * sizeof *w->system_order);
  ecsi_free(w, w->system_indeg, (size_t)sc * 2u * sizeof *w->system_indeg);
  w->system_order = NULL;
  w->system_indeg = w->system_byseq = NULL;
  ecsi_free(w, w->system, (size_t)w->system_cap * sizeof *w->system);
  w->system = NULL;
  w->system_count = w->system_cap = w->system_dead = 0;
}

size_t ecs_system_count(const ecs_world *w) {
  return (size_t)(w->system_count - w->system_dead);
}

bool ecs_system_next(const ecs_world *w, uint32_t *cursor, ecs_system **out) {
  while (*cursor < w->system_count) {
    ecs_system *s = w->system[(*cursor)++];
    if (!s->removed) {
      *out = s;
      return true;
    }
  }
  return false;
}

/* ------------------------------------------------------------------------
** Accessors
** --------------------------------------------------------------------- */

const char *ecs_system_name(const ecs_system *s) { return s->name; }
ecs_system_kind ecs_system_kind_of(const ecs_system *s) { return s->kind; }
ecs_query *ecs_system_query(const ecs_system *s) { return s->query; }
void *ecs_system_ud(const ecs_system *s) { return s->ud; }
ecs_system_call_fn ecs_system_callback(const ecs_system *s) { return s->call; }
ecs_system_fn ecs_system_function(const ecs_system *s) { return s->fn; }
const char *ecs_system_phase(const ecs_system *s) { return s->phase; }

const char *ecs_system_expr(const ecs_system *s, size_t *len) {
  if (len != NULL) *len = s->expr_len;
  return s->expr;
}

uint32_t ecs_system_param_count(const ecs_system *s) { return s->nparams; }

const char *ecs_system_param_name(const ecs_system *s, uint32_t k) {
  return k < s->nparams ? s->pname[k] : NULL;
}

uint32_t ecs_system_param_position(const ecs_system *s, uint32_t k) {
  return k < s->nparams ? s->ppos[k] : 0;
}

void ecs_system_enable(ecs_system *s, bool enabled) { s->enabled = enabled; }
bool ecs_system_enabled(const ecs_system *s) { return s->enabled; }

void ecs_system_get_stats(const ecs_system *s, ecs_system_stats *out) {
  *out = s->stats;
}

void ecs_system_reset_stats(ecs_world *w) {
  for (uint32_t i = 0; i < w->system_count; i++)
    memset(&w->system[i]->stats, 0, sizeof w->system[i]->stats);
}

/* ------------------------------------------------------------------------
** Running
** --------------------------------------------------------------------- */

/* The program of an expression system: the query's cached one for its
** text (compiled again if the cache let it go). */
ecs_err ecsi_system_program(ecs_world *w, ecs_system *s, ecs_program **p) {
  char msg[8]; /* the text compiled when it was added: no message */
  return ecs_query_program(w, s->query, s->expr, s->expr_len, p, msg,
                           sizeof msg);
}

/*
** The params hook may run anything: other texts compiled for the query
** could evict the program (so it is looked up again after the hook), s
** could be removed (then it is not run, and its query may be gone).
*/
static ecs_err run_expr(ecs_world *w, ecs_system *s, double dt, void *ctx,
                        size_t *done) {
  double v[ECS_PROGRAM_MAX_PARAMS];
  ecs_program *p;
  ecs_err err;
  for (uint32_t k = 0; k < s->nparams; k++)
    v[k] = (s->dt_mask >> k & 1u) ? dt : 0.0;
  if (s->needs_params) {
    if ((err = s->params(w, s, v, ctx)) != ECS_ERR_OK) return err;
    if (s->removed) return ECS_ERR_OK;
  }
  if ((err = ecsi_system_program(w, s, &p)) != ECS_ERR_OK) return err;
  return ecs_program_run(w, p, v, done);
}

static ecs_err run_one(ecs_world *w, ecs_system *s, double dt, void *ctx) {
  size_t done = 0;
  double t0 = ecs_clock();
  ecs_err err;
  switch (s->kind) {
  case ECS_SYSTEM_EXPR:
    err = run_expr(w, s, dt, ctx, &done);
    break;
  case ECS_SYSTEM_NATIVE: {
    ecs_run_opts opts;
    opts.parallel = s->parallel;
    err = ecs_query_run_opts(w, s->query, s->cols, s->ncols, dt, s->fn, s->ud,
                             &opts, &done);
    break;
  }
  default:
    err = s->call(w, s, dt, ctx, &done);
    break;
  }
  if (err == ECS_ERR_OK && !s->removed) {
    s->stats.calls++;
    s->stats.seconds += ecs_clock() - t0;
    s->stats.entities += done;
  }
  return err;
}

ecs_err ecs_world_update(ecs_world *w, double dt, void *ctx,
                         ecs_system **failed) {
  return ecs_world_update_phase(w, "update", dt, ctx, failed);
}

/* Has a system (enabled or not) the phase? */
static bool phase_known(const ecs_world *w, const char *phase) {
  for (uint32_t k = 0; k < w->system_count; k++)
    if (!w->system[k]->removed && strcmp(w->system[k]->phase, phase) == 0)
      return true;
  return false;
}

ecs_err ecs_world_update_phase(ecs_world *w, const char *phase, double dt,
                               void *ctx, ecs_system **failed) {
  uint32_t n = w->system_count;
  ecs_system *bad = NULL;
  ecs_err err = ECS_ERR_OK;
  if (failed != NULL) *failed = NULL;
  if (!isfinite(dt)) return ECS_ERR_NOT_FINITE;
  if (phase == NULL) phase = "update";
  /* a phase of no system is a mistake (a typo), not an update that runs
  ** nothing; "update", the default, needs none */
  if (strcmp(phase, "update") != 0 && !phase_known(w, phase))
    return ECS_ERR_NO_PHASE;
  w->updating++;
  for (uint32_t k = 0; k < n && err == ECS_ERR_OK; k++) {
    ecs_system *s = w->system[k];
    if (s->removed || !s->enabled || strcmp(s->phase, phase) != 0) continue;
    if (s->interval > 0.0) { /* fixed steps: the time owed, whole intervals */
      uint32_t runs = 0;
      s->acc += dt;
      /* a rewind (dt < 0) owes time back, as much as a lag may be owed:
      ** however many, they never sum to -inf */
      if (s->acc < -s->interval * (double)ECS_SYSTEM_MAX_CATCHUP)
        s->acc = -s->interval * (double)ECS_SYSTEM_MAX_CATCHUP;
      while (s->acc >= s->interval && err == ECS_ERR_OK && !s->removed) {
        s->acc -= s->interval;
        if (++runs > ECS_SYSTEM_MAX_CATCHUP) { /* a long lag: dropped */
          s->acc = 0.0;
          break;
        }
        if ((err = run_one(w, s, s->interval, ctx)) != ECS_ERR_OK) bad = s;
      }
      continue;
    }
    /* with threads: s and the systems after it side by side, if they can */
    if (w->pool != NULL && ecsi_batch_run(w, phase, &k, n, dt, &err, &bad)) continue;
    if ((err = run_one(w, s, dt, ctx)) != ECS_ERR_OK) bad = s;
  }
  /* a failed system that was removed meanwhile is not named: the sweep
  ** below may free it */
  if (bad != NULL && bad->removed) bad = NULL;
  if (--w->updating == 0) {
    uint32_t m;
    if (w->system_dead > 0) sweep(w);
    /* the systems added or replaced meanwhile take their places now
    ** (an accepted set of constraints has no cycle: this succeeds) */
    if (w->system_unordered && ecsi_systems_order(w, &m, NULL, 0) == ECS_ERR_OK)
      ecsi_systems_apply_order(w, m);
  }
  if (failed != NULL) *failed = bad;
  if (err != ECS_ERR_OK) return err;
  ecs_world_gc(w, ECS_UPDATE_GC_BUDGET);
  return ECS_ERR_OK;
}

/* ------------------------------------------------------------------------
** Invariants (ecs_world_check)
** --------------------------------------------------------------------- */

const char *ecsi_systems_check(const ecs_world *w) {
  uint32_t dead = 0;
  if (w->system_count > w->system_cap) return "system: count exceeds capacity";
  for (uint32_t i = 0; i < w->system_count; i++) {
    const ecs_system *s = w->system[i];
    if (s == NULL) return "system: a slot is empty";
    if (s->removed) {
      dead++;
      continue;
    }
    for (uint32_t j = 0; j < i; j++)
      if (!w->system[j]->removed && strcmp(w->system[j]->name, s->name) == 0)
        return "system: two systems share a name";
    switch (s->kind) {
    case ECS_SYSTEM_EXPR:
      if (s->query == NULL || s->expr == NULL || s->nparams > ECS_PROGRAM_MAX_PARAMS ||
          (s->needs_params && s->params == NULL))
        return "system: an expression system is incomplete";
      break;
    case ECS_SYSTEM_NATIVE:
      if (s->query == NULL || s->fn == NULL ||
          ecsi_query_check_columns(s->query, s->cols, s->ncols) != ECS_ERR_OK)
        return "system: a native system's columns do not resolve";
      break;
    case ECS_SYSTEM_EXTERNAL:
      if (s->call == NULL) return "system: an external system has no callback";
      break;
    default:
      return "system: unknown kind";
    }
    if (!(s->stats.seconds >= 0.0)) return "system: negative time in stats";
  }
  if (dead != w->system_dead) return "system: removed systems miscounted";
  if (w->updating == 0 && !w->system_unordered)
    for (uint32_t i = 0; i < w->system_count; i++)
      for (uint32_t j = i + 1; j < w->system_count; j++)
        if (ecsi_system_edges(w->system[j], w->system[i]) != 0)
          return "system: the list breaks an ordering constraint";
  if (ecsi_systems_scratch_cap(w) < w->system_count) return "system: ordering scratch too small";
  if (dead > 0 && w->updating == 0)
    return "system: a removed system outlived the updates";
  return NULL;
}

/* ------------------------------------------------------------------------
** Owed time (cursors.c)
** --------------------------------------------------------------------- */

double ecsi_system_interval(const ecs_system *s) { return s->interval; }

double ecsi_system_owed(const ecs_system *s) { return s->acc; }

void ecsi_system_set_owed(ecs_system *s, double owed) { s->acc = owed; }
