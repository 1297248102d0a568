/*
** system_order.c -- the order systems run in (system.h): within a phase,
** the order of addition, each system preceded by those it must run after
** (after/before); cycles refused. The ordering works in scratch kept with
** the system list, so it never allocates: it also runs when the outermost
** update returns, where nothing may fail.
*/
#include <stdio.h>

#include "system_private.h"

/* The ordering's scratch holds system_cap entries, so that ordering never
** allocates (it also runs when the outermost update returns). */
uint32_t ecsi_systems_scratch_cap(const ecs_world *w) {
  return w->system_order != NULL ? w->system_cap_scratch : 0u;
}

ecs_err ecsi_systems_scratch_reserve(ecs_world *w) {
  uint32_t ocap = ecsi_systems_scratch_cap(w), ncap = w->system_cap;
  void *o, *d;
  if (ncap <= ocap) return ECS_ERR_OK;
  o = ecsi_realloc(w, NULL, 0, (size_t)ncap * sizeof *w->system_order);
  if (o == NULL) return ECS_ERR_NOMEM;
  d = ecsi_realloc(w, NULL, 0, (size_t)ncap * 2u * sizeof *w->system_indeg);
  if (d == NULL) {
    ecsi_free(w, o, (size_t)ncap * sizeof *w->system_order);
    return ECS_ERR_NOMEM;
  }
  ecsi_free(w, w->system_order, (size_t)ocap * sizeof *w->system_order);
  ecsi_free(w, w->system_indeg, (size_t)ocap * 2u * sizeof *w->system_indeg);
  w->system_order = (ecs_system **)o;
  w->system_indeg = (uint32_t *)d;
  w->system_byseq = w->system_indeg + ncap;
  w->system_cap_scratch = ncap;
  return ECS_ERR_OK;
}

/* How many constraints put u before v (same phase: v after u, u before v). */
uint32_t ecsi_system_edges(const ecs_system *u, const ecs_system *v) {
  uint32_t n = 0;
  if (strcmp(u->phase, v->phase) != 0) return 0; /* u == v: a cycle of one */
  for (uint32_t k = 0; k < v->nafter; k++) n += strcmp(v->after[k], u->name) == 0;
  for (uint32_t k = 0; k < u->nbefore; k++) n += strcmp(u->before[k], v->name) == 0;
  return n;
}

enum { UNSEEN = 0, VISITING, PLACED, SKIPPED };

typedef struct orderer {
  ecs_system **sys;
  uint32_t *state, *byseq, m, placed;
  ecs_system **out;
} orderer;

/* Place v after every system that must run before it, those in the order
** they were added. @return false on a cycle (v's is then VISITING). */
static bool visit(orderer *o, uint32_t v) {
  if (o->state[v] == PLACED || o->state[v] == SKIPPED) return true;
  if (o->state[v] == VISITING) return false;
  o->state[v] = VISITING;
  for (uint32_t k = 0; k < o->m; k++) {
    uint32_t u = o->byseq[k];
    if (o->state[u] != SKIPPED && ecsi_system_edges(o->sys[u], o->sys[v]) != 0 && !visit(o, u))
      return false;
  }
  o->state[v] = PLACED;
  o->out[o->placed++] = o->sys[v];
  return true;
}

/*
** Order the live systems into w->system_order: the systems in the order
** they were added, each one preceded by those it must run after that are
** not placed yet (a depth-first walk over the constraints), so that
** constraints move as little as they need and everything else keeps the
** order of addition. O(n^2) comparisons of names for n systems: run when
** one is added or replaced, not per update. @return ECS_ERR_OK (*n_out
** systems), or ECS_ERR_CYCLE with the names of the systems on the cycle's
** path in msg.
*/
ecs_err ecsi_systems_order(ecs_world *w, uint32_t *n_out, char *msg,
                             size_t msgsize) {
  orderer o;
  uint32_t n = w->system_count;
  o.sys = w->system;
  o.state = w->system_indeg;
  o.byseq = w->system_byseq;
  o.out = w->system_order;
  o.m = o.placed = 0;
  for (uint32_t v = 0; v < n; v++) {
    o.state[v] = o.sys[v]->removed ? SKIPPED : UNSEEN;
    if (!o.sys[v]->removed) { /* insertion by sequence number */
      uint32_t k = o.m++;
      while (k > 0 && o.sys[o.byseq[k - 1]]->seq > o.sys[v]->seq) {
        o.byseq[k] = o.byseq[k - 1];
        k--;
      }
      o.byseq[k] = v;
    }
  }
  for (uint32_t k = 0; k < o.m; k++) {
    if (visit(&o, o.byseq[k])) continue;
    if (msg != NULL && msgsize > 0) {
      size_t at;
      ecsi_system_set_msg(msg, msgsize, "ordering constraints form a cycle among:");
      at = strlen(msg);
      for (uint32_t j = 0; j < o.m && at + 1 < msgsize; j++) {
        uint32_t v = o.byseq[j];
        int wrote;
        if (o.state[v] != VISITING) continue;
        wrote = snprintf(msg + at, msgsize - at, " %s", o.sys[v]->name);
        at = wrote < 0 || (size_t)wrote >= msgsize - at ? msgsize - 1 : at + (size_t)wrote;
      }
    }
    return ECS_ERR_CYCLE;
  }
  *n_out = o.placed;
  return ECS_ERR_OK;
}

/* Put the list in its order: now, or when the outermost update returns
** (a walk in progress reads it by position). */
void ecsi_systems_apply_order(ecs_world *w, uint32_t n) {
  if (w->updating > 0 || n != w->system_count) {
    w->system_unordered = true;
    return;
  }
  memcpy(w->system, w->system_order, (size_t)n * sizeof *w->system);
  w->system_unordered = false;
}

