/*
** query.h -- cached multi-component queries and native systems. No Lua
** here. Compiled column expressions are in expr.h.
**
** A query names the component managers an entity must have ("with") and
** must not have ("without"). It keeps a match list: the matching entities
** and, per "with" manager, each one's instance row. The list is built at
** the first use (walking the smallest "with" manager and looking each
** owner up in the others) and then kept up to date: the managers report
** every structural change to the queries that name them and entity
** deaths reach every query, each costing O(1) per query (query.c).
**
** Iteration works on a pinned snapshot of the list: while a snapshot is
** pinned, a change copies the list and the old one is freed when its last
** pin goes. Readers of a replaced snapshot re-check each entity against
** the current state, so structural changes during an iteration are safe.
**
** The world owns its queries: ecs_world_free frees those still alive.
**
** Layer: query, above the managers and below expr (layers: alloc.h).
** Includes ecs.h and component.h, and expr.h at the end only for
** compatibility (see there).
*/
#ifndef ECS_QUERY_H
#define ECS_QUERY_H

#include "ecs.h"
#include "component.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ecs_query ecs_query;

/* Most "with" plus "without" managers in one query. */
#define ECS_QUERY_MAX_TERMS 32u

/*
** Create a query over nwith managers that must all be present and nwithout
** that must all be absent.
** @return ECS_ERR_NO_TERMS when nwith is 0, ECS_ERR_TOO_MANY_TERMS when
**         the total exceeds ECS_QUERY_MAX_TERMS, ECS_ERR_INVALID when a
**         manager is NULL, ECS_ERR_DUPLICATE_TERM when one is listed twice
**         (in either list); ECS_ERR_NOMEM. The managers must belong to w.
*/
ecs_err ecs_query_new(ecs_world *w, ecs_component *const *with, uint32_t nwith,
                      ecs_component *const *without, uint32_t nwithout,
                      ecs_query **out);

/*
** Change terms: from now on q's passes visit only the matches of which
** some manager of changed[] had a row written (ecs_component_write_end
** and the core's write paths) and some manager of added[] gained the
** instance, since q last completed a pass (ecs_query_complete); each
** list that is empty does not filter. A query's first pass, and the first
** after its terms changed, visits every match. The managers must be
** "with" terms of q. Terms only add: a manager given twice is watched
** once.
** @return ECS_ERR_UNKNOWN_COMPONENT (not a "with" term), ECS_ERR_INVALID
**         (a NULL), ECS_ERR_NOMEM (then nothing changed).
*/
ecs_err ecs_query_track_changes(ecs_world *w, ecs_query *q,
                                ecs_component *const *changed,
                                uint32_t nchanged,
                                ecs_component *const *added, uint32_t nadded);

/*
** A pass over q completed now: its next pass visits what changed from now
** on (not the writes made before or during this one). ecs_query_run and
** compiled programs complete their passes themselves; iterators
** (ecs_query_iter_*) do not: their caller completes the pass when its
** loop ran to the end. Nothing for a query without change terms.
*/
void ecs_query_complete(ecs_world *w, ecs_query *q);

/* @return whether q has change terms (ecs_query_track_changes). */
bool ecs_query_tracks_changes(const ecs_query *q);

/* Free q (and the programs compiled for it). Pinned snapshots go too, and
** the systems that run over q (system.h). */
void ecs_query_free(ecs_world *w, ecs_query *q);

/* @return the number of "with" (or "without") managers, and the k-th. */
uint32_t ecs_query_with_count(const ecs_query *q);
uint32_t ecs_query_without_count(const ecs_query *q);
ecs_component *ecs_query_with(const ecs_query *q, uint32_t k);
ecs_component *ecs_query_without(const ecs_query *q, uint32_t k);

/*
** Resolve "Component.field" (comp[0..clen), field[0..flen)) against q's
** "with" managers: the one resolver of expressions, q:columns specs and
** native systems. @return ECS_ERR_OK with *term and *fieldno, or an error
** with msg (msg_size bytes, may be 0) saying why:
** ECS_ERR_UNKNOWN_COMPONENT "component 'X' is not among the query's
** components (P, V)" (whether or not the world has an X), ECS_ERR_EXCLUDED
** "component 'X' is excluded by the query", ECS_ERR_UNKNOWN_FIELD
** "unknown field 'P.z'" or, for a field with a ':' (a column spec's
** suffix other than ":in", which its reader takes off), "unknown suffix
** ':out' (...)", ECS_ERR_AMBIGUOUS "component name 'X' is
** ambiguous: two of the query's components have it". Whether the field's type suits the use (numeric
** for expressions: ECS_ERR_NOT_NUMERIC; not lua for columns:
** ECS_ERR_LUA_FIELD) is the caller's rule.
*/
ecs_err ecs_query_resolve_field(const ecs_query *q, const char *comp,
                                size_t clen, const char *field, size_t flen,
                                uint32_t *term, uint32_t *fieldno, char *msg,
                                size_t msg_size);

/* @return the position of c among the "with" managers, or -1. */
int ecs_query_term(const ecs_query *q, const ecs_component *c);

/* Build the match list if it is not up to date (first use, or a change
** it could not follow). @return ECS_ERR_OK or ECS_ERR_NOMEM (then the
** query stays stale and the next use tries again). */
ecs_err ecs_query_refresh(ecs_world *w, ecs_query *q);

/* Number of live matches (refreshes first). */
ecs_err ecs_query_count(ecs_world *w, ecs_query *q, size_t *out);

/*
** "Any" terms: from now on q matches only entities that also hold at
** least one of any[0 .. n) (n = 0: nothing changes). They give no columns
** (read them with ecs_component_lookup). Once per query; the managers may
** not be among q's other terms.
** @return ECS_ERR_INVALID (a NULL, or q has any terms already),
**         ECS_ERR_TOO_MANY_TERMS (all terms past ECS_QUERY_MAX_TERMS),
**         ECS_ERR_DUPLICATE_TERM, ECS_ERR_NOMEM (then nothing changed).
*/
ecs_err ecs_query_require_any(ecs_world *w, ecs_query *q,
                              ecs_component *const *any, uint32_t n);
/*
** Optional terms: bit k of mask makes "with" term k optional: q matches
** entities without it too, and where it is absent its row is
** ECS_NO_INSTANCE and its columns read as zeros (expressions, native
** systems, the binding's loops). The columns of an optional term are
** read-only everywhere (a written spec, an assignment, a writable native
** column of one is refused), and optional terms take no part in
** re-alignment. Term 0 (the driver) cannot be optional.
** @return ECS_ERR_INVALID (bit 0, a bit past the "with" terms, a change
**         term, or q was used already: set it right after
**         ecs_query_new). ecs_query_optional gives the mask.
*/
ecs_err ecs_query_set_optional(ecs_query *q, uint32_t mask);
uint32_t ecs_query_optional(const ecs_query *q);

/* The count of q's "any" terms, and the k-th (NULL past the count). */
uint32_t ecs_query_any_count(const ecs_query *q);
ecs_component *ecs_query_any(const ecs_query *q, uint32_t k);

/*
** Whether q lists disabled entities too (component.h, "Disabled
** entities"); off for a new query. A change makes the list stale: the
** next use builds it whole.
*/
void ecs_query_include_disabled(ecs_query *q, bool on);
bool ecs_query_includes_disabled(const ecs_query *q);

/* @return true if the live entity e matches q now (no cache involved). */
bool ecs_query_matches(const ecs_world *w, const ecs_query *q, ecs_entity e);

/*
** Memory held by q's match lists and position map (for tests and tools).
** A list is sized by the need it was made for (its matches, or the
** smallest "with" manager's size for a full build): at least that, under
** 1.5 times max(need, 16); it shrinks when its matches fall under a quarter. Besides the current list, a query
** keeps only replaced lists that are still pinned, freed by their last
** unpin: at most one list per live pin, plus one.
*/
typedef struct ecs_query_stats {
  uint32_t count;     /* entries of the current list */
  uint32_t capacity;  /* its room (0 before the first refresh) */
  uint32_t sized_for; /* the need its capacity was computed from */
  uint32_t retired;   /* replaced lists still pinned */
  uint32_t pins;      /* live pins over all lists */
  size_t bytes;       /* all lists together */
} ecs_query_stats;

void ecs_query_get_stats(const ecs_query *q, ecs_query_stats *out);

/* ------------------------------------------------------------------------
** Iteration over a pinned snapshot
** --------------------------------------------------------------------- */
typedef struct ecs_query_iter {
  ecs_query *q;
  void *snap;     /* the pinned snapshot (opaque) */
  uint32_t pos;   /* next position in the snapshot */
  uint64_t stamp; /* the world's structure as of the last chunk */
  uint64_t loads; /* ecs_world_loads at the begin */
} ecs_query_iter;

/* Refresh q and pin its list. Every successful begin needs one end. */
ecs_err ecs_query_iter_begin(ecs_world *w, ecs_query *q, ecs_query_iter *it);

/*
** Next entity of the snapshot that is alive and matches q now.
** @return false at the end, and from the first call after a whole-world
** load (ecs_query_iter_loaded): the list describes the world it replaced.
*/
bool ecs_query_iter_next(const ecs_world *w, ecs_query_iter *it,
                         ecs_entity *e);

/*
** Up to max next entities of the snapshot that are alive and match now,
** with their current rows: ents[j], and rows[k * max + j] for "with"
** manager k. @return how many (0 at the end, and after a whole-world load,
** as ecs_query_iter_next); never fewer than one before the end.
*/
uint32_t ecs_query_iter_chunk(const ecs_world *w, ecs_query_iter *it,
                              uint32_t max, ecs_entity *ents, uint32_t *rows);

/*
** @return true if nothing structural happened to q's managers, no entity
** died and no whole-world load happened since the last
** ecs_query_iter_chunk: the rows it returned are still exact.
*/
bool ecs_query_iter_current(const ecs_world *w, const ecs_query_iter *it);

/*
** @return true if a whole-world load (ecs_world_load, ecs_journal_undo,
** ecs_delta_apply: ecs_world_loads) committed since it began: the
** iteration is over, whatever it handed out belongs to the world that
** load replaced, so a caller drops the values it would write back (a
** rollback wins over the loop that ran it) and does not complete the
** pass. Valid from the begin until the next begin, ended or not.
*/
bool ecs_query_iter_loaded(const ecs_world *w, const ecs_query_iter *it);

/* Unpin. Idempotent: it->snap is cleared. */
void ecs_query_iter_end(ecs_world *w, ecs_query_iter *it);

/* ------------------------------------------------------------------------
** Native systems
** --------------------------------------------------------------------- */

/*
** One column a native system uses. write false (":in" from Lua) makes the
** column read-only: the system reads it through view->column and gets no
** writable pointer for it (view->out[k] is NULL).
*/
typedef struct ecs_column_ref {
  ecs_component *c; /* a "with" manager of the query */
  uint32_t field;   /* below its field count; not a "lua" field */
  bool write;
} ecs_column_ref;

/*
** What a native system sees, one chunk at a time: count > 0 matching
** entities and, per requested column k, an array of count values typed by
** type[k] (float for ECS_F32 ...):
**   column[k]  the values, read-only (every column);
**   out[k]     the same array for writing, or NULL when column k is
**              read-only (ecs_column_ref.write false).
** The arrays point into the managers when the rows are contiguous, else
** into scratch buffers that are gathered before the call and scattered back
** after it (writable columns only). A system writes only through out[]:
** writing a read-only column (casting column[k]'s const away) is a
** contract violation whose effect would depend on that layout (kept in
** place, dropped when gathered); debug builds (no NDEBUG) detect it and
** ecs_query_run returns ECS_ERR_READONLY. Two columns naming the same
** field are one array in both layouts (a write through one is seen by the
** other), so the result never depends on the layout.
*/
typedef struct ecs_view {
  double dt;
  uint32_t count;
  const ecs_entity *entities;
  const void *const *column;
  void *const *out;
  const ecs_type *type;
  uint32_t ncolumns;
} ecs_view;

typedef void (*ecs_system_fn)(ecs_world *w, const ecs_view *view, void *ud);

/*
** Run fn over every match of q, chunk by chunk. fn may destroy entities
** but must not add or remove instances of q's managers, nor run their gc,
** and writes only the writable columns (view->out).
** @param processed receives the number of entities visited (may be NULL).
** @return ECS_ERR_TOO_MANY_COLUMNS (more than ECS_QUERY_MAX_TERMS),
**         ECS_ERR_UNKNOWN_COMPONENT (a column's manager is not a "with"
**         term), ECS_ERR_UNKNOWN_FIELD (its field is out of range),
**         ECS_ERR_LUA_FIELD (a lua field), ECS_ERR_READONLY_FIELD (a
**         writable column of a field ecs_component_readonly names),
**         ECS_ERR_INVALID (cols or a column's manager NULL);
**         ECS_ERR_NOMEM (then fn was not
**         called); in debug builds
**         ECS_ERR_READONLY when fn changed a read-only column that no
**         writable column names (the run stops after that chunk).
*/
ecs_err ecs_query_run(ecs_world *w, ecs_query *q, const ecs_column_ref *cols,
                      uint32_t ncols, double dt, ecs_system_fn fn, void *ud,
                      size_t *processed);

/*
** How a run may go. parallel: fn is safe on worker threads -- it reads and
** writes only its view (no call into the world, its managers or Lua, no
** shared state of its own), and what it computes for a row does not
** depend on the other rows nor on how rows are grouped into chunks. On a
** world with threads (ecs_world_set_threads) a run of at least 8192 rows
** that writes no owned component is then split into ranges run by every
** thread (chunks end at the ranges' edges), with the same result as one
** thread; the change stamps, the journal's captures and owners' hooks stay
** on the calling thread. Without the memory for a scratch per thread the
** run stays on the calling thread.
*/
typedef struct ecs_run_opts {
  bool parallel;
} ecs_run_opts;

/* ecs_query_run with opts (NULL: ecs_query_run's way, one thread). */
ecs_err ecs_query_run_opts(ecs_world *w, ecs_query *q, const ecs_column_ref *cols,
                           uint32_t ncols, double dt, ecs_system_fn fn, void *ud,
                           const ecs_run_opts *opts, size_t *processed);

/* ------------------------------------------------------------------------
** Chunk cursors (query_cursor.c): ecs_query_run turned inside out, for a
** caller that runs code of its own between chunks while it holds raw
** pointers into the columns (Lua's q:pointers on LuaJIT).
** --------------------------------------------------------------------- */

typedef struct ecs_query_cursor ecs_query_cursor;

/* Bytes of a cursor: the caller owns its memory (a Lua userdata, a frame's
** arena), so that starting a loop allocates nothing. */
size_t ecs_query_cursor_size(void);

/*
** Start the cursor at cur (ecs_query_cursor_size() bytes, aligned for
** pointers and 64-bit integers) over q's matches as of now with the columns cols (the rules of
** ecs_query_run; owned components and optional terms are refused with
** ECS_ERR_INVALID: their manager moves their rows, an absent instance has
** no place). The managers of the columns are pinned
** (ecs_component_pin) until the cursor ends: no change can move the rows
** a chunk's pointers address, and an entity destroyed meanwhile keeps its
** row until then (later chunks may still hand it out). On an error nothing
** is held and ecs_query_cursor_end is a no-op. @return ECS_ERR_OK or the
** error of ecs_query_run's checks, ECS_ERR_NOMEM.
*/
ecs_err ecs_query_cursor_begin(ecs_world *w, ecs_query *q,
                               const ecs_column_ref *cols, uint32_t ncols,
                               ecs_query_cursor *cur);

/*
** Hand out the next chunk: *count rows, one run over which the rows of the
** columns' terms are consecutive (however short: nothing is ever copied);
** ptr[k] addresses the values of column k in place, its rows
** ptr[k][0 .. *count - 1]; *entities (if not NULL) the chunk's entities.
** Every path that writes those rows meanwhile (a set, a nested cursor)
** writes the same memory, so no write is ever lost or stale, whatever the
** layout. Written columns are stamped and captured by an open journal
** now, before the caller writes. *count is 0 at the end (the pins are
** released then, and a query with changed/added terms completes its pass,
** as after ecs_query_run; a cursor ended early completes nothing).
** @return ECS_ERR_OK (the code is kept for callers that check it).
*/
ecs_err ecs_query_cursor_next(ecs_world *w, ecs_query_cursor *cur,
                              void **ptr, const ecs_entity **entities,
                              uint32_t *count);

/* End the cursor: release its pins. finish is ignored (it asked for a
** gathered chunk to be written back, when cursors gathered short runs;
** kept in the signature). Idempotent. */
void ecs_query_cursor_end(ecs_world *w, ecs_query_cursor *cur, bool finish);

#ifdef __cplusplus
}
#endif

/*
** Compatibility: the compiled expressions (ecs_program_*,
** ecs_query_program) moved to expr.h, a layer above this one. Users of
** query.h from before the move (the Lua binding) still get them here;
** expr.h includes only ecs.h, so this adds no cycle, and query.c calls
** nothing of it.
*/
#include "expr.h"

#endif
