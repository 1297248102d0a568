/*
** barrier.h -- the change barrier: how news of a change travels up the
** layers. Internal to the core.
**
** A layer that changes something (the entity layer frees an index, a
** component manager adds an instance or has rows written) emits an event
** of that kind; the layers above that care (the journal, the queries, the
** transform, the systems) subscribed to it. The emitter names no one: a
** lower layer never calls a higher one by name (alloc.h, "Layers"). The
** world holds one table of subscribers per kind of event
** (ecs_world.barrier); an event nobody hears costs one load and one branch
** (ecsi_heard), and its payload is built only when someone does.
**
** Subscribers of one kind run in rank order (their layer: a lower rank
** first), then in the order they subscribed, so the order does not depend
** on which part of the world was made first. The table is fixed-size:
** subscribing never allocates and a world's own parts fit (ECSI_BARRIER_MAX
** per kind; the core subscribes at most one part per rank).
**
** Base layer: knows the world only as a pointer it hands back.
*/
#ifndef ECS_BARRIER_H
#define ECS_BARRIER_H

#include "ecs.h"

struct ecs_component;

/*
** The kinds of event, and what each carries (ecsi_change). "Before"
** events come while the old state is still there to be kept; "after"
** events once the change is done.
*/
typedef enum ecsi_event {
  /* entity layer (entity.c) */
  ECSI_EV_INDEX_TAKEN,    /* before: index row is handed out; n = 1 when it
                          ** comes off the free queue, 0 when fresh */
  ECSI_EV_ENTITY_DYING,   /* before: e's index is freed (e still alive) */
  ECSI_EV_ENTITY_DIED,    /* after: e is dead, its index queued */
  /* storage layer (component*.c, change.c) */
  ECSI_EV_INSTANCE_BEGIN, /* before: the instance of entity index row in c
                          ** is added, removed or overwritten whole */
  ECSI_EV_INSTANCE_ADDED, /* after: e got an instance of c (n = 1), or lost
                          ** it (n = 0) */
  ECSI_EV_INSTANCE_MOVED, /* after: e's instance of c now sits at row */
  ECSI_EV_ROWS_REORDERED, /* after: c's rows were permuted; arg = the query
                          ** whose order they now follow, or NULL */
  ECSI_EV_LAYOUT,         /* before: row of c (n = 1; UINT32_MAX: the size)
                          ** or every row (n = 0) may change owner */
  ECSI_EV_WRITE_BEGIN,    /* before: values of c's rows are written: rows[0
                          ** .. n), or row .. row + n when rows is NULL;
                          ** one: the single row of one complete write */
  ECSI_EV_WRITE_END,      /* after: the same rows were written */
  ECSI_EV_REF_DROPPED,    /* a lua cell let go of ref (row): a subscriber
                          ** that keeps it returns 1 (the first one wins) */
  /* query layer (query.c) */
  ECSI_EV_QUERY_FREED,    /* before: query arg is freed */
  ECSI_EV__COUNT
} ecsi_event;

/* What an event carries; each kind sets the members its line names. */
typedef struct ecsi_change {
  struct ecs_component *c;
  ecs_entity e;
  uint32_t row;          /* a row, an index, or the first of a range */
  const uint32_t *rows;  /* rows written, or NULL */
  size_t n;
  const void *arg;
  bool one;              /* WRITE_*: one complete write of one row */
} ecsi_change;

/* A subscriber: @return 0, or for the kinds that ask (REF_DROPPED) 1 to
** say "mine": the emit stops there and returns it. */
typedef int (*ecsi_subscriber_fn)(ecs_world *w, void *self,
                                  const ecsi_change *ch);

/* Ranks: the layer a subscriber belongs to. */
enum {
  ECSI_RANK_STORAGE = 1,
  ECSI_RANK_MANAGERS = 2,
  ECSI_RANK_QUERY = 3,
  ECSI_RANK_SYSTEM = 4,
  ECSI_RANK_PERSIST = 5
};

#define ECSI_BARRIER_MAX 6

typedef struct ecsi_subscriber {
  ecsi_subscriber_fn fn;
  void *self;
  int rank;
} ecsi_subscriber;

typedef struct ecsi_barrier {
  uint8_t count[ECSI_EV__COUNT];
  ecsi_subscriber sub[ECSI_EV__COUNT][ECSI_BARRIER_MAX];
} ecsi_barrier;

/*
** Subscribe fn (with self, at rank) to kind ev. Subscribing the same fn
** and self twice does nothing. @return ECS_ERR_FULL when the kind has
** ECSI_BARRIER_MAX subscribers already (a core defect: the core's parts
** fit), else ECS_ERR_OK.
*/
ecs_err ecsi_subscribe(ecsi_barrier *b, ecsi_event ev, int rank,
                       ecsi_subscriber_fn fn, void *self);
/* Undo ecsi_subscribe (nothing when fn and self are not subscribed). Safe
** from inside an emit of another kind; not of the same kind. */
void ecsi_unsubscribe(ecsi_barrier *b, ecsi_event ev, ecsi_subscriber_fn fn,
                      void *self);
/* Every subscriber of ev, in order; the first nonzero result stops the
** emit and is returned. Call through ecsi_emit (ecs_private.h) once
** ecsi_heard says someone listens. */
int ecsi_barrier_emit(const ecsi_barrier *b, ecs_world *w, ecsi_event ev,
                      const ecsi_change *ch);

#endif
