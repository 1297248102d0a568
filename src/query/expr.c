/*
** expr.c -- column expressions compiled once, run over a query in blocks.
**
**   Position.x += Velocity.dx * dt; Position.y = clamp(Position.y, 0, h)
**
** Three parts, one file each (expr_private.h has what they share): the
** compiler (expr_compile.c) turns the text into code words for a stack
** machine whose values are whole blocks of rows; the machine (expr_run.c)
** runs them over a query's pinned match list; this file keeps each
** query's programs, which belong to the query: a list in its extension
** slot that doubles as the cache of ecs_query_program, freed with it.
**
** Everything that can go wrong is found before the run: unknown names and
** bad syntax at compile time, missing parameters by the caller; a run
** only fails for lack of scratch memory, and then before any store.
**
** Layer: expr, above query (layers: alloc.h). The machine reads rows from
** a pinned snapshot of the query (ecsi_query_pin) and columns through the
** managers' API; values are converted by the value layer (value.h) with
** its saturating rule, so a store of 300 into a u8 field gives 255.
*/
#include <string.h>

#include "expr_private.h"

/* Unlink prog from its query's list and free it. */
static void program_free(ecs_world *w, ecs_program *prog) {
  ecs_program *p = programs_of(prog->q), *prev = NULL;
  while (p != NULL && p != prog) {
    prev = p;
    p = p->next;
  }
  if (p == prog) {
    if (prev != NULL) prev->next = prog->next;
    else set_programs(prog->q, prog->next);
  }
  ecsi_free(w, prog, prog->bytes);
}

/* The query's free hook: every program of q goes with it. */
void ecsi_expr_programs_free(ecs_world *w, ecs_query *q) {
  ecs_program *p = programs_of(q);
  while (p != NULL) {
    ecs_program *next = p->next;
    ecsi_free(w, p, p->bytes);
    p = next;
  }
  set_programs(q, NULL);
}

ecs_err ecsi_expr_check(ecs_world *w, ecs_query *q, const char *src,
                        size_t len, char *msg, size_t msgsize) {
  ecs_program *p;
  ecs_err err = ecsi_expr_compile(w, q, src, len, false, &p, msg, msgsize);
  if (err == ECS_ERR_OK) program_free(w, p);
  return err;
}

void ecsi_expr_forget(ecs_world *w, ecs_query *q) {
  ecs_program *p = programs_of(q);
  while (p != NULL) {
    ecs_program *next = p->next;
    if (p->cached) program_free(w, p); /* unlinks itself */
    p = next;
  }
}

ecs_err ecs_program_compile(ecs_world *w, ecs_query *q, const char *src,
                            size_t len, ecs_program **out, char *msg,
                            size_t msgsize) {
  return ecsi_expr_compile(w, q, src, len, false, out, msg, msgsize);
}

/*
** The query's list is its cache: a hit moves the program to the head, so
** the list runs from the most to the least recently used, and a miss
** compiles a new head and frees the last cached program beyond
** ECS_QUERY_MAX_PROGRAMS. A repeated text costs a walk to its place and
** one compare of the text; texts of other lengths cost a compare of sizes.
** Programs from ecs_program_compile share the list but are never counted
** or evicted: their callers hold them until the query goes.
*/
ecs_err ecs_query_program(ecs_world *w, ecs_query *q, const char *src,
                          size_t len, ecs_program **out, char *msg,
                          size_t msgsize) {
  ecs_program *p, *prev = NULL;
  uint32_t kept = 0;
  ecs_err err;
  if (msgsize > 0) msg[0] = '\0';
  for (p = programs_of(q); p != NULL; prev = p, p = p->next) {
    if (p->cached && p->srclen == len && memcmp(p->src, src, len) == 0) {
      if (prev != NULL) { /* move to the head */
        prev->next = p->next;
        p->next = programs_of(q);
        set_programs(q, p);
      }
      *out = p;
      return ECS_ERR_OK;
    }
  }
  if ((err = ecsi_expr_compile(w, q, src, len, true, out, msg, msgsize)) !=
      ECS_ERR_OK)
    return err;
  for (p = programs_of(q); p != NULL; p = p->next) {
    if (p->cached && ++kept > ECS_QUERY_MAX_PROGRAMS) {
      program_free(w, p); /* unlinks itself; at most one is over */
      break;
    }
  }
  return ECS_ERR_OK;
}

uint32_t ecs_query_program_count(ecs_query *q) {
  const ecs_program *p = programs_of(q);
  uint32_t n = 0;
  for (; p != NULL; p = p->next) n += p->cached;
  return n;
}

uint32_t ecs_program_param_count(const ecs_program *p) { return p->nparam; }

const char *ecs_program_param_name(const ecs_program *p, uint32_t i) {
  return i < p->nparam ? p->param[i] : NULL;
}

uint32_t ecs_program_param_position(const ecs_program *p, uint32_t i) {
  return i < p->nparam ? p->param_pos[i] : 0;
}
