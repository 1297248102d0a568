/*
** journal.h -- the changes of a world as bytes: a journal records what
** changes from a mark on; a delta carries those changes to a copy of the
** world as it was at the mark; undo takes the world back to the mark
** (docs/persistence.md, "The journal").
**
** What a journal records, and what it costs. Generic components by
** (component, entity index): before the first change of a mark's interval
** -- a value written, the instance added or removed, its entity destroyed
** -- the old state (absent, or the owner and the row's bytes) is captured
** once; later changes of the same pair cost one bit test. The entity table
** by slot (the old state of each slot changed) and the free queue by
** operation (the indices popped and pushed). So recording is O(changes),
** and a world without a journal pays one pointer test per write. The
** other managers (transform, names, plugins) are kept whole: their saved
** bytes at the mark, compared with their bytes now when a delta is made,
** so that a delta or an undo costs O(those managers) -- a limit documented
** in docs/persistence.md, with the design that would lift it.
**
** A state hash (ecs_world_state_hash) names a world's state: the sum of a
** 64-bit hash of every live (component, entity) instance, of every entity
** slot and of the free queue's order, and of each other manager's saved
** bytes. Equal worlds have equal hashes whatever their row order; a delta
** carries the hash of its base and of its result, and applying it to a
** world whose hash is not the base's fails and changes nothing. The
** journal keeps its world's hash at the mark and updates it per change,
** so making a delta stays O(changes).
**
** Layer: world (with snapshot.h), above the managers.
*/
#ifndef ECS_JOURNAL_H
#define ECS_JOURNAL_H

#include "ecs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ECS_DELTA_VERSION 2u

typedef struct ecs_journal ecs_journal;

/*
** What the host (the Lua binding) does for values the core holds only as
** references (lua fields). Zeroed: references are hashed and carried as
** empty cells (a world without lua fields needs nothing).
*/
typedef struct ecs_journal_host {
  /* Write the value of reference ref (never 0) as plain data to out.
  ** @return ECS_ERR_OK, out's error, or ECS_ERR_INVALID for a value that
  ** is not plain data (the host keeps the reason; the core keeps which
  ** component, field and entity: ecs_journal_bad_value). Must not call
  ** into the world. */
  ecs_err (*encode)(void *ud, uint32_t ref, ecs_writer *out);
  /* The hash of that value, for the state hash: equal values (a table and
  ** its copy, whatever order their pairs are stored in) hash alike.
  ** @return ECS_ERR_OK, or ECS_ERR_INVALID as for encode. */
  ecs_err (*hash)(void *ud, uint32_t ref, uint64_t *out);
  void *ud;
} ecs_journal_host;

/* Where the last ECS_ERR_INVALID of encode was (for the error text). */
typedef struct ecs_journal_bad {
  const char *component, *field;
  ecs_entity entity;
  bool lost_memory; /* (the binding's: ecs_journal_lost) */
} ecs_journal_bad;

/*
** Start recording w's changes; the mark is now. One journal per world at a
** time. Computes the world's hash once (O(world)).
** @return ECS_ERR_OK, ECS_ERR_JOURNAL_OPEN, ECS_ERR_NOMEM,
**         ECS_ERR_INVALID (a lua value that is not plain data: *bad).
*/
ecs_err ecs_journal_open(ecs_world *w, const ecs_journal_host *host,
                         ecs_journal **out, ecs_journal_bad *bad);

/* Stop recording and free j (the references it held go to the world's
** drop list, drained with ecs_drain_refs). */
void ecs_journal_close(ecs_world *w, ecs_journal *j);

/* The world's journal, or NULL. */
ecs_journal *ecs_world_journal(const ecs_world *w);

/*
** The changes since the mark as a delta: *data, *size stay valid until the
** next call on j. The mark does not move: ecs_journal_mark moves it to the
** state this delta leads to (call it once the bytes are safe, with no
** change in between: a change there marks the journal lost).
** @return ECS_ERR_OK, ECS_ERR_NOMEM, ECS_ERR_INVALID (a lua value that is
**         not plain data: *bad), ECS_ERR_LOST (the journal could not
**         record some change -- out of memory at a write that could not
**         fail, or a component redefined since the mark -- and must be
**         closed). A restore since the mark is recorded (snapshot.c tells
**         the journal what it replaces).
*/
ecs_err ecs_journal_delta(ecs_world *w, ecs_journal *j,
                          const ecs_journal_host *host, const void **data,
                          size_t *size, ecs_journal_bad *bad);
void ecs_journal_mark(ecs_world *w, ecs_journal *j);

/*
** Take w back to the mark: every change since is undone (listeners hear
** nothing: it is a bulk change, like a restore). The mark stays.
** @return ECS_ERR_OK, ECS_ERR_NOMEM (nothing changed), ECS_ERR_LOST.
*/
ecs_err ecs_journal_undo(ecs_world *w, ecs_journal *j);

/* Has j lost track (ECS_ERR_LOST)? *memory: because a capture ran out of
** memory (else a component redefined since the mark). May be NULL. */
bool ecs_journal_lost(const ecs_journal *j, bool *memory);

/* Changes recorded since the mark (captured instances and slots): 0 when
** nothing changed. */
size_t ecs_journal_pending(const ecs_journal *j);

/*
** The state hash of w (see above): O(changes) when w has a journal that
** has not lost track, else O(world).
** @return ECS_ERR_OK, ECS_ERR_NOMEM, ECS_ERR_INVALID (*bad).
*/
ecs_err ecs_world_state_hash(ecs_world *w, const ecs_journal_host *host,
                             uint64_t *out, ecs_journal_bad *bad);

/*
** Applying a delta, in two steps so that the host can make its values
** (lua fields) between them: open checks every structural rule of the
** bytes (checksum, framing, every count against the bytes left, the
** entity part's own rules, each manager present in w with its kind and
** schema and named once, each component's entity indices in range and
** named once, values well formed) and changes nothing; the host then
** makes a reference for each of the d->nvalues values (0 for an empty
** cell); apply checks the managers again (w may have changed since open),
** the base hash, the entity part against w and every owner, reserves
** everything, and only then changes w. Either applies all or changes
** nothing.
*/
typedef struct ecs_delta {
  const unsigned char *data;
  size_t size;
  uint32_t flags, nvalues;
  uint64_t base, result;  /* the state hashes before and after */
  size_t managers_at;     /* where the managers' parts start */
  size_t cursors_at;      /* where the cursors (cursors.c) start */
  uint32_t nmanagers, max_records;
  /* on ECS_ERR_NO_MANAGER or ECS_ERR_SCHEMA_DIFFERS: the manager's name */
  const char *bad_name;
  size_t bad_name_len;
} ecs_delta;

/* @return ECS_ERR_OK, ECS_ERR_CORRUPT, ECS_ERR_VERSION,
**         ECS_ERR_NO_MANAGER, ECS_ERR_SCHEMA_DIFFERS (d->bad_name),
**         ECS_ERR_NOMEM (room for the checks: the delta's slots and
**         largest component part). */
ecs_err ecs_delta_open(const ecs_world *w, ecs_delta *d, const void *data,
                       size_t size);
/* Call fn for each of the d->nvalues lua values in order: its plain-data
** bytes (len 0: an empty cell). Stops at fn's first error. */
ecs_err ecs_delta_each_value(const ecs_world *w, const ecs_delta *d,
                             ecs_err (*fn)(void *ud, const unsigned char *p,
                                           size_t len),
                             void *ud);
/* refs: d->nvalues references (or NULL when there are none); on success
** they belong to w, on failure to the caller.
** @return ECS_ERR_OK, ECS_ERR_BASE (w's hash is not the base's),
**         ECS_ERR_CORRUPT (an entity, index or value the bytes cannot
**         mean), ECS_ERR_NO_MANAGER or ECS_ERR_SCHEMA_DIFFERS (a manager
**         of w changed since open), ECS_ERR_NOMEM, ECS_ERR_INVALID (*bad,
**         hashing w). */
ecs_err ecs_delta_apply(ecs_world *w, const ecs_delta *d, const uint32_t *refs,
                        const ecs_journal_host *host, ecs_journal_bad *bad);

#ifdef __cplusplus
}
#endif

#endif
