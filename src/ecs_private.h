/*
** ecs_private.h -- the world record and the core's internal interfaces:
** what the core's files share and nobody else sees (C tests aside).
**
** Layers, lowest first (the rules and folders are in base/alloc.h):
**   alloc, value -> entity (entity.c, registry.c)
**     -> managers (component, transform, names, sparse)
**     -> query -> expr -> world (system, persist, world.c)
** This header defines struct ecs_world, whose parts belong to the layers
** named beside them, and declares each layer's internal functions under
** that layer's name. Like Lua's lstate.h, it is the record every layer
** keeps its state in, not a layer of its own. Includes alloc.h (and
** through it ecs.h) only.
*/
#ifndef ECS_PRIVATE_H
#define ECS_PRIVATE_H

#include "alloc.h"
#include "barrier.h"

/*
** Free indices wait in a FIFO ring: items [head, head + len) modulo cap.
** cap is 0 or a power of two.
*/
typedef struct ecsi_queue {
  uint32_t *item;
  uint32_t cap, head, len;
} ecsi_queue;

/* A listener (ecs_manager_listen); fn == NULL once removed while
** notifications were running (dropped when the outermost returns). */
typedef struct ecsi_listener {
  const void *manager;
  unsigned events;
  ecs_listener_fn fn;
  void *ud;
} ecsi_listener;

typedef struct ecsi_manager {
  char *name;
  size_t name_size;
  ecs_namespace ns;
  const ecs_manager_class *cls;
  void *self;
  /* registry.c: bit k (k < 64) set while the destroy of dying[k] has
  ** reported this manager's REMOVE of it and that instance is still there
  ** (it goes with the entity: no second report) */
  uint64_t reported;
} ecsi_manager;

/* registry.c: a REMOVE being reported (ecsi_notify_remove), on the
** reporting call's stack; taken once the instance it is about was removed
** (by a call from inside the report, which reports nothing again). */
typedef struct ecsi_report {
  const void *manager;
  ecs_entity e;
  bool taken;
  struct ecsi_report *outer;
} ecsi_report;

struct ecs_world {
  ecs_world_head head;   /* must stay first: ecs_alive reads it */
  ecsi_heap heap;        /* alloc: must stay second (ecsi_world_start) */
  /* entity */
  uint32_t slot_cap;     /* allocated slots (>= head.slot_count) */
  uint32_t live;         /* live entities */
  ecsi_queue free;       /* freed indices, oldest first */
  /* component_hooks.c: the last long run of ids found valid (a record's
  ** owners, alive or not) while snapshot.c's load holds the memo on (from
  ** its entity table's swap to its end: the table does not change in
  ** between). A snapshot's managers name the same runs: each is checked
  ** once per load, not once per manager. Off for every other load. */
  bool valid_memo;
  ecs_entity valid_first;
  uint32_t valid_len;
  /* snapshot.c: while a load checks the snapshot's checksum as it reads
  ** it, the hash so far (checksum.h); NULL otherwise. The bulk copies of
  ** the load (entity slots, component columns) go through
  ** ecsi_read_hashed, which hashes what they copy in the same pass. */
  struct ecsi_xxh64_cursor *load_hash;
  ecsi_manager *manager; /* registry.c: managers, in registration order */
  uint32_t manager_count, manager_cap;
  ecsi_listener *listener; /* registry.c: in the order they were added */
  uint32_t listener_count, listener_cap;
  uint32_t notifying;      /* notifications in progress */
  bool listener_dead;      /* some entry has fn == NULL */
  uint32_t remove_listeners; /* listeners with ECS_EVENT_REMOVE (destroy) */
  /* entities whose destroy is reporting REMOVE (ecs_destroy_report): a
  ** nested destroy of one of them does nothing. At most one per nesting
  ** level of notifications, so the array never overflows. */
  ecs_entity dying[65];
  uint32_t dying_count;
  /* registry.c: ADDs reported for dying[k] while its destroy reports (a
  ** component given to it after its manager's turn: another pass), and
  ** the REMOVEs being reported, innermost first (ecsi_notify_remove) */
  uint32_t dying_adds[65];
  ecsi_report *reporting;
  /* cleanup.c: entity fields with a cleanup policy in all managers; holds
  ** (ecs_cleanup_hold) and sweeps in progress; a death not yet swept */
  uint32_t cleanup_fields, cleanup_holds;
  bool cleanup_sweeping, cleanup_pending, cleanup_deferred;
  /* component: lua refs dropped by component managers, waiting for the
  ** binding (ecs_drain_refs). Invariant: ref_cap >= ref_len + ref_slots,
  ** where ref_slots counts the lua-field cells of every stored instance, so
  ** dropping never allocates. */
  uint32_t *ref_drop;
  size_t ref_len, ref_cap, ref_slots;
  /* component_migrate.c: redefinitions of any component (schema_gen.h) */
  uint32_t schema_gen;
  /* disabled.c: the tag of disabled entities (ECS_DISABLED_NAME), NULL
  ** until the world first needs it; the queries skip its holders */
  struct ecs_component *disabled;
  /* query: the world's queries (a doubly linked list), and a counter of
  ** destroyed entities (entity.c counts; query.c's iterators compare it to
  ** tell whether rows they handed out are still exact). */
  struct ecs_query *queries;
  uint64_t destroy_epoch;
  /* whole-world loads committed (snapshot.c, journal_undo.c, delta.c each
  ** count theirs at its commit): an iteration begun before one is over,
  ** and what its loop would write back belongs to the world it replaced
  ** (ecs_query_iter_loaded, ecs_world_loads) */
  uint64_t loads;
  /* change.c: the change clock (its tick is change_clock + 1) */
  uint32_t change_clock;
  /* journal.c: the open journal, or NULL; references old values held by
  ** journals no longer need (drained with ref_drop; room reserved when
  ** each was captured, so releasing never allocates) */
  struct ecs_journal *journal;
  uint32_t *jref;
  size_t jref_len, jref_cap;
  /* system.c: the systems in run order; updates in progress, and systems
  ** removed during them (freed when the outermost returns) */
  struct ecs_system **system;
  uint32_t system_count, system_cap, system_dead, updating;
  /* scratch of the ordering (system_cap entries each), kept so that
  ** ordering never allocates; the next system's sequence number; set when
  ** the list must be ordered again once the outermost update returns */
  struct ecs_system **system_order;
  uint32_t *system_indeg, *system_byseq; /* byseq: in indeg's block */
  uint64_t system_seq;
  uint32_t system_cap_scratch;
  bool system_unordered;
  /* pool.c: the worker threads (ecs_world_set_threads), or NULL for one
  ** thread */
  struct ecsi_pool *pool;
  uint64_t split_runs; /* expr_run.c: program runs split over the pool */
  uint64_t batches;    /* system.c: batches of systems run side by side */
  uint32_t pins;       /* component.c: pins over all managers (world-wide
                       ** changes such as load and undo check it) */
  /* query.c: queries made so far (a query's serial is its number) */
  uint32_t query_serial;
  /* cursors.c: what the last load brought for the change queries and
  ** systems made after it, or NULL. stamp_limit: while a snapshot's load
  ** reads the managers, the latest stamp its clock allows (its tick: the
  ** components' stamps are taken then, change.c "Stamps saved"), else 0 */
  struct ecsi_cursors *cursors;
  uint32_t stamp_limit;
  /* barrier.h: who hears of each kind of change */
  ecsi_barrier barrier;
  /* cursors.c, while a load's cursors are kept: the oldest of them that
  ** no change query took, or floor if none is older (change.c saves the
  ** stamps a kept cursor can still tell apart); NULL otherwise. The one
  ** question a lower layer asks an upper one, through a hook it set. */
  uint32_t (*kept_floor)(const ecs_world *w, uint32_t floor);
};

/* The change barrier (barrier.h): does anyone hear ev? Emit it. */
static inline bool ecsi_heard(const ecs_world *w, ecsi_event ev) {
  return w->barrier.count[ev] != 0;
}
static inline int ecsi_emit(ecs_world *w, ecsi_event ev, const ecsi_change *ch) {
  return ecsi_barrier_emit(&w->barrier, w, ev, ch);
}
/* Emit ev about c, e, row, n and arg (each kind's members: barrier.h),
** building the payload only when someone hears it. */
static inline void ecsi_tell(ecs_world *w, ecsi_event ev,
                             struct ecs_component *c, ecs_entity e,
                             uint32_t row, size_t n, const void *arg) {
  if (ecsi_heard(w, ev)) {
    ecsi_change ch = {0};
    ch.c = c;
    ch.e = e;
    ch.row = row;
    ch.n = n;
    ch.arg = arg;
    (void)ecsi_emit(w, ev, &ch);
  }
}

/* alloc.c finds the heap by position: keep the two layouts in step. */
_Static_assert(offsetof(struct ecs_world, heap) ==
                   offsetof(ecsi_world_start, heap),
               "struct ecs_world must start like ecsi_world_start");

/* ------------------------------------------------------------------------
** entity: entity.c (ids) and registry.c (the managers that keep records
** by entity index)
** --------------------------------------------------------------------- */
void ecsi_entities_free(ecs_world *w);
const char *ecsi_entities_check(const ecs_world *w);
/* Run every manager's purge for index (its generation wrapped). */
void ecsi_purge_index(ecs_world *w, uint32_t index);
/* entity.c: free e's index (e alive): its slot's next generation, the
** free queue, the death told (ecs_destroy, storage/destroy.c, calls it
** once the managers' REMOVE reports are done). */
void ecsi_entity_kill(ecs_world *w, ecs_entity e);
/* registry.c: report REMOVE of e to the REMOVE listeners of every manager
** that has e (ecs_destroy_report; e is the last of w->dying); the first
** error stops. Each instance of e is reported once, a component given to
** e during it included. */
ecs_err ecsi_notify_destroy(ecs_world *w, ecs_entity e);
/* registry.c: report REMOVE of e's instance in the manager self, which
** the caller then looks up again and removes. An instance whose REMOVE is
** being reported already (by an outer remove of it, or by e's destroy) is
** not reported again: the call returns at once and the outer report learns
** that its instance went. When the instance reported was removed from
** inside and e has one again (re-added: its ADD was reported), that one's
** REMOVE is reported too before the call returns. For managers that hold
** one instance per entity (components, transform, names). */
ecs_err ecsi_notify_remove(ecs_world *w, void *self, ecs_entity e);
/* Free every manager, last registered first, and the registry. */
void ecsi_managers_free(ecs_world *w);
/* Drop the last manager registered, when it is self and no listener (nor a
** report in progress) names it: freed through its class. false: nothing
** changes. */
bool ecsi_manager_unregister_last(ecs_world *w, void *self);

/* The entity table as a snapshot holds it (entity.c; snapshot.c frames
** it): the slots and the free queue, and the live count they imply. */
typedef struct ecsi_entity_table {
  uint16_t *slot;
  uint32_t slot_count, slot_cap, live;
  ecsi_queue free;
} ecsi_entity_table;
ecs_err ecsi_entities_save(const ecs_world *w, ecs_writer *out);
/* Read and check a saved table into new blocks (ECS_ERR_CORRUPT,
** ECS_ERR_NOMEM: nothing allocated, in->pos unchanged). */
ecs_err ecsi_entities_read(ecs_world *w, ecs_reader *in,
                           ecsi_entity_table *t);
/* stream.c: ecs_read, where the bytes copied are hashed on the way when
** w->load_hash is set (a snapshot's load checking its checksum). */
ecs_err ecsi_read_hashed(ecs_world *w, ecs_reader *in, void *data,
                         size_t size);
/* Room for slots slots and a free queue of queue items (delta.c). */
ecs_err ecsi_entities_reserve(ecs_world *w, uint32_t slots, uint32_t queue);
/* Trade the world's table for t (t gets the old one); never fails. */
void ecsi_entities_swap(ecs_world *w, ecsi_entity_table *t);
void ecsi_entities_table_free(ecs_world *w, ecsi_entity_table *t);
/* Do w's table and t hold the same living entities (every index alive in
** one is alive in the other, with the same generation)? */
bool ecsi_entities_same_lives(const ecs_world *w, const ecsi_entity_table *t);

/* ------------------------------------------------------------------------
** managers: component.c
** --------------------------------------------------------------------- */
void ecsi_refs_free(ecs_world *w);
/* The queries that name a component manager, each with the term it is
** there (component.c keeps the list, query.c registers; see "The queries
** watching this manager" in component.c). */
struct ecs_query;
struct ecs_component;
/*
** Change ticks (change.c). The kinds of stamp a manager keeps per row;
** the clock's current tick (never 0: 0 means "before every mark"); the
** clock value at which stamps and marks are renumbered down.
*/
#define ECSI_TICK_CHANGED 0
#define ECSI_TICK_ADDED 1
#define ECSI_TICK_KINDS 2
#define ECSI_CLOCK_LIMIT 0xF0000000u
static inline uint32_t ecsi_clock_now(const ecs_world *w) {
  return w->change_clock + 1u;
}
ecs_err ecsi_ticks_watch(ecs_world *w, struct ecs_component *c, int kind);
void ecsi_ticks_unwatch(ecs_world *w, struct ecs_component *c, int kind);
const uint32_t *ecsi_ticks_of(const struct ecs_component *c, int kind);
/* change.c: the write bracket of component.h with `one` said outright:
** the core's bulk paths (runs, chunk cursors) write many rows, or end a
** row's bracket before it is written, and say false. */
void ecsi_write_begin(ecs_world *w, struct ecs_component *c,
                      const uint32_t *rows, uint32_t first, size_t n,
                      bool one);
void ecsi_write_end(ecs_world *w, struct ecs_component *c,
                    const uint32_t *rows, uint32_t first, size_t n,
                    bool one);
/* cleanup.c: an entity died (entity.c, after it is dead): sweep now, or
** note it for the sweep in progress or the hold's release. */
ecs_err ecsi_cleanup_after_death(ecs_world *w);

/* The clock set (tests, to reach the renumbering; loads) and read. */
void ecsi_world_set_clock(ecs_world *w, uint32_t clock);
uint32_t ecsi_world_clock(const ecs_world *w);

typedef struct ecsi_watch {
  struct ecs_query *q;
  uint32_t term;
} ecsi_watch;
ecs_err ecsi_component_watch(ecs_world *w, struct ecs_component *c,
                             struct ecs_query *q, uint32_t term);
void ecsi_component_unwatch(struct ecs_component *c,
                            const struct ecs_query *q);
bool ecsi_component_reorder(ecs_world *w, struct ecs_component *c,
                            const ecs_entity *first, uint32_t n,
                            const struct ecs_query *keep);
/* Structural changes (instances added, reused, removed) since c's rows
** were last re-ordered: the re-alignment's amortisation (query.c). World
** state, saved with the rows, so that a restored world re-aligns when the
** original would. */
uint32_t ecsi_component_churn(const struct ecs_component *c);
/* The rows were looked at and found in order: the churn starts over. */
void ecsi_component_churn_reset(ecs_world *w, struct ecs_component *c);

/* ------------------------------------------------------------------------
** query: query.c (match lists, pins) and query_run.c (runs, columns), for
** the expr files, system.c and world.c
** --------------------------------------------------------------------- */
/* Rows per block of native runs and compiled programs (gathered chunks,
** the expression machine's values). */
#define ECSI_BLOCK 256u
void ecsi_queries_free(ecs_world *w);
const char *ecsi_queries_check(const ecs_world *w);
/*
** Upcalls that keep match lists up to date (query.c), made by the layers
** below it: component.c after each structural change of a manager (e
** gained or lost its instance in the manager of q's term; e's row in term
** moved to row; bulk changes make the query stale) and entity.c when an
** entity dies. None of them
** fails: a query that cannot record a change (no memory for its list)
** marks itself stale and rebuilds at its next use.
*/
void ecsi_query_entity_changed(ecs_world *w, struct ecs_query *q,
                               uint32_t term, ecs_entity e, bool added);
void ecsi_query_row_moved(ecs_world *w, struct ecs_query *q, uint32_t term,
                          ecs_entity e, uint32_t row);
void ecsi_query_invalidate(struct ecs_query *q);
/* Every query of w (a snapshot replaced the entity table). */
void ecsi_queries_invalidate(ecs_world *w);
/* Before a run (q:apply, native systems): re-align q's managers to its
** list when churn has broken its runs (query.c, "Re-alignment"). */
void ecsi_query_align(ecs_world *w, struct ecs_query *q);
void ecsi_queries_entity_died(ecs_world *w, ecs_entity e);

/*
** A pinned snapshot of a query's match list, for expr_run.c's and
** query_run.c's runs: count entities; the row of "with" manager k for
** position i is row[k * stride + i].
*/
typedef struct ecsi_rows {
  /* positions [0, count), holes of them: a position whose entity is
  ** ECS_NULL was a match that stopped matching, its rows stale, and is
  ** skipped by every reader (query.c, "Upkeep"); no run goes through it */
  uint32_t count, stride, holes;
  const uint64_t *hole; /* bit i: position i is a hole (see qsnap) */
  const ecs_entity *entity;
  const uint32_t *row;
  const uint8_t *cont; /* see qsnap in query.c */
  void *snap;
} ecsi_rows;
struct ecs_query;
ecs_err ecsi_query_pin(ecs_world *w, struct ecs_query *q, ecsi_rows *out);
void ecsi_query_unpin(ecs_world *w, struct ecs_query *q, void *snap);
/* The rules of a column list (query_run.c: ecs_query_run's, checked by
** system.c when a native system is added): ECS_ERR_OK, TOO_MANY_COLUMNS,
** UNKNOWN_COMPONENT, UNKNOWN_FIELD, LUA_FIELD, INVALID (NULL pointers). */
struct ecs_column_ref;
ecs_err ecsi_query_check_columns(const struct ecs_query *q,
                                 const struct ecs_column_ref *cols,
                                 uint32_t ncols);
/* Scratch memory owned by the query (reused between runs). */
void *ecsi_query_scratch(ecs_world *w, struct ecs_query *q, size_t size);
/* Length of the run at position i over which the rows of every "with"
** term are consecutive (at least 1, at most max): a scan of one byte per
** position (memchr). */
uint32_t ecsi_rows_run(const ecsi_rows *r, uint32_t i, uint32_t max);
/* The matches in a row from *i on: *i is moved past any holes, and the
** number of positions from there up to the next hole is returned, at most
** max and not past end; 0 when only holes are left before end. */
uint32_t ecsi_rows_live(const ecsi_rows *r, uint32_t *i, uint32_t end,
                        uint32_t max);
/* The shortest run worth using in place (shorter ones are gathered). */
#define ECSI_MIN_DIRECT_RUN 32u
/* Row splitting over the pool (pool.h; expr_run.c, query_run.c): runs of
** at least ECSI_PAR_MIN_ROWS rows, cut into ECSI_PARTS_PER_THREAD ranges
** per thread. */
#define ECSI_PAR_MIN_ROWS 8192u
#define ECSI_PARTS_PER_THREAD 4u
#define ECSI_MAX_PARTS (ECS_MAX_THREADS * ECSI_PARTS_PER_THREAD)
/*
** Runs in a batch (system.c: systems whose accesses do not conflict, run
** in one pool job; pool.h, ecsi_split). Begin, on the world's thread,
** after every run of the batch aligned its query: scratch for every
** thread, the pin, the journal's captures; the split's parts may then run
** on any thread. End (after the job, or instead of it when ran is false:
** then only the pin goes): stamps, the pin, the changed pass. Begin fails
** with ECS_ERR_NOMEM (or a pin's error) having changed nothing.
*/
struct ecsi_split;
struct ecs_program;
ecs_err ecsi_program_begin(ecs_world *w, struct ecs_program *p, const double *params,
                           struct ecsi_split *s);
void ecsi_program_end(ecs_world *w, struct ecsi_split *s, bool ran, size_t *processed);
/* bit t: the program stores into (reads) its query's "with" term t */
uint32_t ecsi_program_written(const struct ecs_program *p);
uint32_t ecsi_program_read(const struct ecs_program *p);
struct ecs_view;
ecs_err ecsi_native_begin(ecs_world *w, struct ecs_query *q,
                          const struct ecs_column_ref *cols, uint32_t ncols, double dt,
                          void (*fn)(ecs_world *w, const struct ecs_view *view, void *ud),
                          void *ud, struct ecsi_split *s);
/* @return ECS_ERR_READONLY when a column handed out read-only changed
** (debug builds), else ECS_ERR_OK */
ecs_err ecsi_native_end(ecs_world *w, struct ecsi_split *s, bool ran, size_t *processed);
/* Gather (dst[j] = src[row[j]]) or scatter (dst[row[j]] = src[j]) n
** values of elem bytes (query_run.c). */
void ecsi_copy_rows(void *dst, const void *src, const uint32_t *row,
                    uint32_t n, size_t elem, bool gather);

/*
** What a layer above keeps per query (expr.c: the programs compiled for
** it), in one slot that query.c never looks into. The owner's hook frees
** it when the query goes (ecs_query_free, and so ecs_world_free): the way
** query.c frees programs without calling into expr.c, which is above it.
** Setting the hook again replaces it (there is one owner, expr.c).
*/
typedef void (*ecsi_query_ext_free)(ecs_world *w, struct ecs_query *q);
void **ecsi_query_ext(struct ecs_query *q);
void ecsi_query_set_ext_free(struct ecs_query *q, ecsi_query_ext_free fn);

/* ------------------------------------------------------------------------
** systems: system.c, for world.c
** --------------------------------------------------------------------- */
void ecsi_systems_free(ecs_world *w);
const char *ecsi_systems_check(const ecs_world *w);
/* A system's fixed interval (0: none) and the time it owes (cursors.c). */
struct ecs_system;
double ecsi_system_interval(const struct ecs_system *s);
double ecsi_system_owed(const struct ecs_system *s);
void ecsi_system_set_owed(struct ecs_system *s, double owed);

/* ------------------------------------------------------------------------
** cursors: cursors.c (the change clock, the change queries' cursors, the
** systems' owed time), for snapshot.c, the journal, change.c, system.c
** --------------------------------------------------------------------- */
typedef struct ecsi_qcursor {
  uint32_t serial, since;
  uint64_t sig;
} ecsi_qcursor;
typedef struct ecsi_scursor {
  const char *name; /* in the block */
  size_t len;
  double owed;
} ecsi_scursor;
typedef struct ecsi_cursors {
  uint32_t clock, nq, nsys;
  ecsi_qcursor *q;
  ecsi_scursor *sys;
  char *names;
  void *block; /* q, sys and names: one allocation */
  size_t bytes;
} ecsi_cursors;
/* query.c: a hash of q's terms (kinds, names, change terms) */
uint64_t ecsi_query_signature(const struct ecs_query *q);
ecs_err ecsi_cursors_take(ecs_world *w, ecsi_cursors *out);
ecs_err ecsi_cursors_save(const ecs_world *w, ecs_writer *out);
ecs_err ecsi_cursors_read(ecs_world *w, ecs_reader *in, ecsi_cursors *out);
/* Check the layout at in (every rule of ecsi_cursors_read) and move past it. */
ecs_err ecsi_cursors_skip(ecs_reader *in);
void ecsi_cursors_apply(ecs_world *w, const ecsi_cursors *c);
/* The latest stamp that no change query of w, nor any cursor of c (may be
** NULL), can tell from 0: the oldest cursor of a completed pass, at most
** floor. */
uint32_t ecsi_cursors_floor(const ecs_world *w, const ecsi_cursors *c,
                            uint32_t floor);
void ecsi_cursors_merge(ecs_world *w, const ecsi_cursors *c);
/* Keep c (taken over: c is emptied) for what is made from now on. */
void ecsi_cursors_keep(ecs_world *w, ecsi_cursors *c);
void ecsi_cursors_forget(ecs_world *w);
void ecsi_cursors_free(ecs_world *w, ecsi_cursors *c);
/* The cursors a load kept, looked up by the layer each belongs to (the
** query of that number and terms: query_changes.c; the system of that
** name: system.c), for the queries and systems made after the load and
** for cursors.c; NULL when c has none. */
const ecsi_qcursor *ecsi_kept_query(const ecsi_cursors *c, uint32_t serial,
                                    uint64_t sig);
const ecsi_scursor *ecsi_kept_system(const ecsi_cursors *c, const char *name);

#endif
