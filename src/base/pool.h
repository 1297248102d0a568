/*
** pool.h -- a world's worker threads (ecs_world_set_threads): n - 1
** workers started with the world's setting and joined when it changes or
** the world is freed; the calling thread is the n-th.
**
** One job at a time, run by ecsi_pool_run from the world's own thread:
** fn(ud, worker, part) for every part 0 .. parts - 1, each exactly once,
** spread over the caller (worker 0) and the workers (1 .. n - 1), which
** take parts in turn from a shared counter; ecsi_pool_run returns when
** all are done. Which worker runs which part varies from run to run, so
** a job whose parts write disjoint memory and read nothing another part
** writes gives the same result however it is spread (the expression
** systems' row ranges: expr_run.c).
**
** fn must not allocate from the world, call into the world's managers
** (stamps, hooks, the journal) or raise: the caller does what needs the
** world before and after the run. Between jobs the workers watch for
** the next one for some tens of microseconds (a frame's systems follow
** each other closely), then sleep on a condition variable: an idle pool
** costs nothing.
**
** Threads: POSIX threads, the one platform dependency of the core
** (portable C11 otherwise; <threads.h> is missing from some C libraries
** a game ships with, macOS's among them).
**
** Layer: base, beside alloc (layers: alloc.h); the world owns a pool,
** the expression runners split their work over it.
*/
#ifndef ECS_POOL_H
#define ECS_POOL_H

#include <stddef.h>

#include "ecs.h"

typedef struct ecsi_pool ecsi_pool;
typedef void (*ecsi_job_fn)(void *ud, uint32_t worker, uint32_t part);

/* A pool of threads - 1 workers (threads >= 2). @return ECS_ERR_NOMEM
** when memory or a thread cannot be had (nothing is left running). */
ecs_err ecsi_pool_new(ecs_world *w, uint32_t threads, ecsi_pool **out);
/* Stop and join the workers, free the pool (NULL: nothing). */
void ecsi_pool_free(ecs_world *w, ecsi_pool *p);
/* The threads that run a job: the workers and the caller. */
uint32_t ecsi_pool_threads(const ecsi_pool *p);
/* Run fn over parts 0 .. parts - 1 on every thread; returns when done. */
void ecsi_pool_run(ecsi_pool *p, ecsi_job_fn fn, void *ud, uint32_t parts);

/*
** One run of a batch (system.c runs systems whose accesses do not
** conflict side by side): its parts and the state they read, kept in the
** caller's memory from its begin (expr_run.c, query_run.c: on the world's
** thread) to its end. job is that state, of a type private to its
** module (each checks that it fits).
*/
#define ECSI_SPLIT_BYTES 4096u
typedef struct ecsi_split {
  ecsi_job_fn fn;
  uint32_t parts;
  union {
    max_align_t align;
    unsigned char bytes[ECSI_SPLIT_BYTES];
  } job;
} ecsi_split;
/* Run every part of splits[0 .. n) in one job (n <= ECSI_MAX_BATCH). */
void ecsi_pool_run_splits(ecsi_pool *p, ecsi_split *splits, uint32_t n);
#define ECSI_MAX_BATCH 8u

#endif
