/*
** system_private.h -- what system.c (systems: adding, removing, running)
** and system_order.c (their order: phases, after/before, the scratch of
** the ordering) share: the system block and the ordering's entry points.
** Not installed.
*/
#ifndef ECS_SYSTEM_PRIVATE_H
#define ECS_SYSTEM_PRIVATE_H

#include <string.h>

#include "system.h"
#include "ecs_private.h"

struct ecs_system {
  size_t size;            /* of the block */
  const char *name;       /* in the block */
  ecs_system_kind kind;
  bool enabled;
  bool removed;           /* during an update: see above */
  bool needs_params;      /* EXPR: a parameter other than "dt" */
  ecs_query *query;
  void *ud;
  ecs_system_fn fn;               /* NATIVE */
  bool parallel;                  /* NATIVE: ecs_run_opts.parallel */
  ecs_system_call_fn call;        /* EXTERNAL */
  ecs_system_params_fn params;    /* EXPR */
  const char *expr;               /* EXPR, in the block */
  size_t expr_len;
  ecs_column_ref *cols;           /* NATIVE, in the block */
  uint32_t ncols;
  uint32_t nparams;               /* EXPR */
  uint64_t dt_mask;               /* bit k: parameter k is "dt" */
  const char **pname;             /* in the block */
  uint32_t *ppos;                 /* in the block */
  ecs_system_stats stats;
  const char *phase;              /* in the block */
  const char **after, **before;   /* in the block: names */
  uint32_t nafter, nbefore;
  uint64_t seq;                   /* order of addition (kept by replace) */
  double interval, acc;           /* fixed interval (0: none), time owed */
};

/* Copy a message into msg (msgsize may be 0). */
static inline void ecsi_system_set_msg(char *msg, size_t msgsize, const char *text) {
  size_t n;
  if (msg == NULL || msgsize == 0) return;
  n = strlen(text);
  if (n >= msgsize) n = msgsize - 1;
  memcpy(msg, text, n);
  msg[n] = '\0';
}

/* system.c: the program of an expression system (the query's cached one
** for its text, compiled again if the cache let it go) */
ecs_err ecsi_system_program(ecs_world *w, ecs_system *s, ecs_program **p);

/* system_batch.c: run system *k and the systems after it among the first
** n, of phase, side by side when at least two can (then *k becomes the
** last one run, *err and *bad say how it went, and true comes back);
** false: system *k runs alone (nothing was run) */
bool ecsi_batch_run(ecs_world *w, const char *phase, uint32_t *k, uint32_t n, double dt,
                    ecs_err *err, ecs_system **bad);

/* system_order.c */
uint32_t ecsi_systems_scratch_cap(const ecs_world *w);
ecs_err ecsi_systems_scratch_reserve(ecs_world *w);
uint32_t ecsi_system_edges(const ecs_system *u, const ecs_system *v);
ecs_err ecsi_systems_order(ecs_world *w, uint32_t *n_out, char *msg,
                           size_t msgsize);
void ecsi_systems_apply_order(ecs_world *w, uint32_t n);

#endif
