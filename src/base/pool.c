/*
** pool.c -- a world's worker threads (pool.h).
**
** A job is published under the mutex with a new generation number; every
** worker that sees the generation change takes parts from the atomic
** counter until none is left, then reports under the mutex. The caller
** takes parts too and waits until every worker has reported, so no worker
** still reads the job when the next one is published, and a pool is
** joined only while idle.
**
** Layer: base, beside alloc (layers: alloc.h): it uses nothing of the
** core but the allocator, and the expression runners above it call it.
*/
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "ecs_private.h"
#include "pool.h"

typedef struct worker {
  ecsi_pool *pool;
  uint32_t index; /* 1 .. threads - 1; the caller is 0 */
  pthread_t thread;
} worker;

struct ecsi_pool {
  uint32_t threads;       /* workers + the caller */
  uint32_t started;       /* workers running */
  worker *worker;         /* threads - 1 of them */
  pthread_mutex_t mu;
  pthread_cond_t wake;    /* a job, or quit */
  pthread_cond_t done;    /* a worker reported */
  uint64_t generation;    /* of the job published last (under mu) */
  _Atomic uint64_t published; /* the same, for the workers' spin (no lock) */
  uint32_t reported;      /* workers done with it (under mu) */
  atomic_uint finished;   /* the same, for the caller's spin */
  bool quit;              /* (under mu) */
  /* the job: written under mu before the generation moves, read after */
  ecsi_job_fn fn;
  void *ud;
  uint32_t parts;
  atomic_uint next;       /* the next part to take */
};

static void take_parts(ecsi_pool *p, uint32_t who) {
  for (;;) {
    unsigned k = atomic_fetch_add_explicit(&p->next, 1u, memory_order_relaxed);
    if (k >= p->parts) return;
    p->fn(p->ud, who, (uint32_t)k);
  }
}

/*
** After a job a worker watches for the next one a little while before it
** sleeps: systems of a frame follow each other within microseconds, and a
** worker woken from the condition variable would start each one late.
** About SPIN loads of one word, some tens of microseconds; then it sleeps
** until the next job (an idle pool costs nothing).
*/
#define SPIN 20000

static void *worker_main(void *arg) {
  worker *self = (worker *)arg;
  ecsi_pool *p = self->pool;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    if (!p->quit && p->generation == seen) {
      pthread_mutex_unlock(&p->mu);
      for (int i = 0; i < SPIN; i++)
        if (atomic_load_explicit(&p->published, memory_order_relaxed) != seen) break;
      pthread_mutex_lock(&p->mu);
    }
    while (!p->quit && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
    if (p->quit) break;
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    take_parts(p, self->index);
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->finished, ++p->reported, memory_order_relaxed);
    if (p->reported == p->threads - 1u) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* Stop the started workers and join them; free everything. */
static void pool_destroy(ecs_world *w, ecsi_pool *p) {
  pthread_mutex_lock(&p->mu);
  p->quit = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (uint32_t i = 0; i < p->started; i++) pthread_join(p->worker[i].thread, NULL);
  pthread_cond_destroy(&p->done);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->mu);
  ecsi_free(w, p->worker, (size_t)(p->threads - 1u) * sizeof *p->worker);
  ecsi_free(w, p, sizeof *p);
}

ecs_err ecsi_pool_new(ecs_world *w, uint32_t threads, ecsi_pool **out) {
  ecsi_pool *p = (ecsi_pool *)ecsi_realloc(w, NULL, 0, sizeof *p);
  sigset_t all, old;
  *out = NULL;
  if (p == NULL) return ECS_ERR_NOMEM;
  memset(p, 0, sizeof *p);
  p->threads = threads;
  p->worker = (worker *)ecsi_realloc(w, NULL, 0,
                                     (size_t)(threads - 1u) * sizeof *p->worker);
  if (p->worker == NULL) {
    ecsi_free(w, p, sizeof *p);
    return ECS_ERR_NOMEM;
  }
  atomic_init(&p->next, 0u);
  atomic_init(&p->published, (uint64_t)0);
  atomic_init(&p->finished, 0u);
  if (pthread_mutex_init(&p->mu, NULL) != 0) goto no_mutex;
  if (pthread_cond_init(&p->wake, NULL) != 0) goto no_wake;
  if (pthread_cond_init(&p->done, NULL) != 0) goto no_done;
  /* workers take no signal: a host's handler (lua.c's SIGINT hook) must
  ** run on a thread that may touch its Lua state */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  for (uint32_t i = 0; i + 1u < threads; i++) {
    p->worker[i].pool = p;
    p->worker[i].index = i + 1u;
    if (pthread_create(&p->worker[i].thread, NULL, worker_main, &p->worker[i]) != 0)
      break;
    p->started++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (p->started + 1u < threads) {
    pool_destroy(w, p); /* joins the ones started */
    return ECS_ERR_NOMEM;
  }
  *out = p;
  return ECS_ERR_OK;
no_done:
  pthread_cond_destroy(&p->wake);
no_wake:
  pthread_mutex_destroy(&p->mu);
no_mutex:
  ecsi_free(w, p->worker, (size_t)(threads - 1u) * sizeof *p->worker);
  ecsi_free(w, p, sizeof *p);
  return ECS_ERR_NOMEM;
}

void ecsi_pool_free(ecs_world *w, ecsi_pool *p) {
  if (p != NULL) pool_destroy(w, p);
}

uint32_t ecsi_pool_threads(const ecsi_pool *p) { return p->threads; }

void ecsi_pool_run(ecsi_pool *p, ecsi_job_fn fn, void *ud, uint32_t parts) {
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->ud = ud;
  p->parts = parts;
  atomic_store_explicit(&p->next, 0u, memory_order_relaxed);
  p->reported = 0;
  atomic_store_explicit(&p->finished, 0u, memory_order_relaxed);
  p->generation++;
  atomic_store_explicit(&p->published, p->generation, memory_order_relaxed);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  take_parts(p, 0);
  /* the workers' last parts end about when the caller's do: watch first */
  for (int i = 0; i < SPIN; i++)
    if (atomic_load_explicit(&p->finished, memory_order_relaxed) == p->threads - 1u) break;
  pthread_mutex_lock(&p->mu);
  while (p->reported < p->threads - 1u) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

/* Part g of a batch's job: part g - (the parts of the splits before) of
** the split it falls in (a few splits: a linear walk). */
typedef struct batch_job {
  ecsi_split *s;
  uint32_t n;
} batch_job;

static void batch_part(void *ud, uint32_t thread, uint32_t part) {
  batch_job *b = (batch_job *)ud;
  for (uint32_t k = 0; k < b->n; k++) {
    if (part < b->s[k].parts) {
      b->s[k].fn(b->s[k].job.bytes, thread, part);
      return;
    }
    part -= b->s[k].parts;
  }
}

void ecsi_pool_run_splits(ecsi_pool *p, ecsi_split *splits, uint32_t n) {
  batch_job b;
  uint32_t parts = 0;
  b.s = splits;
  b.n = n;
  for (uint32_t k = 0; k < n; k++) parts += splits[k].parts;
  ecsi_pool_run(p, batch_part, &b, parts);
}
