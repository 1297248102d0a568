/*
** system.h -- the world's systems and their scheduler. No Lua here.
**
** A system is a named piece of work run by ecs_world_update, once per
** update of its phase ("update" unless it names another: a host runs
** "draw" with ecs_world_update_phase), in order: within a phase, after
** the systems it names in after and before those it names in before,
** otherwise in the order the systems were added (a stable topological
** order; constraints that form a cycle are refused when the system that
** closes it is added). Three kinds:
**   ECS_SYSTEM_EXPR      a compiled expression (query.h, "Position.x +=
**                        Velocity.dx * dt") over a query;
**   ECS_SYSTEM_NATIVE    a C function over a query, given the columns it
**                        asked for (ecs_query_run);
**   ECS_SYSTEM_EXTERNAL  a callback with an opaque pointer: what a binding
**                        uses for systems written in its language (the Lua
**                        binding's Lua functions), or a C host for work
**                        that is not a loop over one query.
** Each has a name unique in its world, an enabled flag and stats (calls,
** seconds of ecs_clock, entities processed). A plugin registers a native
** system from C with ecs_system_add, without Lua; a C host runs them all
** with ecs_world_update. The world owns its systems and frees them with
** itself. docs/queries.md ("Systems") has an example.
**
** Changes during an update. A system (or anything it calls) may add and
** remove systems while ecs_world_update runs:
**   - a system added during an update is not run by the updates already in
**     progress; it runs from the next update that starts;
**   - a removed system is never run again, in this update or later; the
**     walk goes on with the systems after it. Its memory stays until the
**     outermost update returns (the walk may be inside it), but its name
**     is free at once and it is no longer found or iterated;
**   - ecs_world_free must not be called during an update.
** A system's query must outlive it: ecs_query_free removes the systems
** that run over the query it frees.
*/
#ifndef ECS_SYSTEM_H
#define ECS_SYSTEM_H

#include "ecs.h"
#include "query.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ecs_system ecs_system;

typedef enum ecs_system_kind {
  ECS_SYSTEM_EXPR = 1,
  ECS_SYSTEM_NATIVE,
  ECS_SYSTEM_EXTERNAL
} ecs_system_kind;

/* Most gc records each manager reclaims per ecs_world_update. */
#define ECS_UPDATE_GC_BUDGET 64u

/*
** An external system: do this update's work. ctx is the pointer given to
** ecs_world_update (the host's, for this update: a plugin's external
** system in a world that a binding updates gets the binding's; keep what
** it needs in ecs_system_ud(s)). Store the entities processed (for stats)
** in *processed, which starts at 0.
** @return ECS_ERR_OK, or an error that stops the update: ecs_world_update
**         returns it as it is and names s as the failed system. A
**         callback whose failure has no code of the table (an error the
**         host keeps, such as a Lua error) returns ECS_ERR_CALLBACK; one
**         that finds its world closed by the host, ECS_ERR_CLOSED.
*/
typedef ecs_err (*ecs_system_call_fn)(ecs_world *w, ecs_system *s, double dt,
                                      void *ctx, size_t *processed);

/*
** An expression system's parameters, before each run: store the value of
** parameter k (ecs_system_param_name) in values[k], for every k but those
** named "dt", which hold the update's dt already. Errors as for
** ecs_system_call_fn. The hook may run anything (even remove s: then s is
** not run).
*/
typedef ecs_err (*ecs_system_params_fn)(ecs_world *w, ecs_system *s,
                                        double *values, void *ctx);

/*
** What ecs_system_add needs; zero means "none" (designated initializers
** keep calls readable: { .name = "move", .kind = ECS_SYSTEM_NATIVE, ... }).
** Everything pointed to is copied or only read during the call, except
** query (must outlive the system) and ud.
*/
typedef struct ecs_system_desc {
  const char *name;       /* required; unique among the world's systems */
  ecs_system_kind kind;
  ecs_query *query;       /* EXPR and NATIVE: required; EXTERNAL: optional */
  void *ud;               /* NATIVE: passed to fn; else for ecs_system_ud */
  /* ECS_SYSTEM_EXPR */
  const char *expr;       /* expr_len bytes; compiled now (errors in msg) */
  size_t expr_len;
  ecs_system_params_fn params; /* required if a parameter is not "dt" */
  /* ECS_SYSTEM_NATIVE */
  ecs_system_fn fn;
  const ecs_column_ref *cols; /* ncols (at most ECS_QUERY_MAX_TERMS) */
  uint32_t ncols;
  bool parallel; /* fn is safe on worker threads (query.h, ecs_run_opts):
                 ** its runs are split over the world's threads */
  /* ECS_SYSTEM_EXTERNAL */
  ecs_system_call_fn call;
  /* scheduling (any kind): the phase (NULL: "update"); systems of the
  ** same phase this one runs after and before (names; names of no system
  ** of its phase are ignored). For ecs_system_replace, phase NULL keeps
  ** the old system's phase, after and before. */
  const char *phase;
  const char *const *after;
  uint32_t nafter;
  const char *const *before;
  uint32_t nbefore;
  /* > 0: a fixed interval in the units of dt: each update adds its dt to
  ** the system's accumulator and runs it once per whole interval there,
  ** with dt = interval, at most ECS_SYSTEM_MAX_CATCHUP times (the rest of
  ** a longer lag is dropped); 0: once per update with the update's dt.
  ** Kept by ecs_system_replace with the rest of the schedule. */
  double interval;
} ecs_system_desc;

#define ECS_SYSTEM_MAX_CATCHUP 4u

/*
** Add a system after the existing ones (enabled, stats at zero).
** @param out receives the system (may be NULL); untouched on error.
** @param msg receives a message on any error (may be NULL when msgsize
**        is 0): the expression's compile error ("unknown field
**        'Position.z' at position 12"), or what is wrong with desc.
** @return ECS_ERR_OK; ECS_ERR_EXISTS if a system has that name; the
**         compiler's codes for an expression that does not compile
**         (ecs_program_compile); ecs_query_run's column codes
**         (TOO_MANY_COLUMNS, UNKNOWN_COMPONENT, UNKNOWN_FIELD, LUA_FIELD)
**         for native columns; ECS_ERR_INVALID for a NULL name, an
**         unknown kind, a missing query, fn, call or columns, or an
**         expression whose parameters other than "dt" have no params
**         hook; ECS_ERR_NOMEM. On error nothing changed.
*/
ecs_err ecs_system_add(ecs_world *w, const ecs_system_desc *desc,
                       ecs_system **out, char *msg, size_t msgsize);

/*
** Replace the system named desc->name by the one desc describes: it takes
** the old one's place in the run order and its enabled flag; its stats
** start at zero. During an update the old one is not run again (as if
** removed) and the new one runs from where the walk finds it: in this
** update if the walk has not reached its place yet.
** @return as ecs_system_add, but ECS_ERR_NO_SYSTEM when no system has that
**         name (instead of ECS_ERR_EXISTS when one has). On error nothing
**         changed.
*/
ecs_err ecs_system_replace(ecs_world *w, const ecs_system_desc *desc,
                           ecs_system **out, char *msg, size_t msgsize);

/* Remove the system named name (see the rules at the top).
** @return true if there was one. Never allocates, never fails. */
bool ecs_system_remove(ecs_world *w, const char *name);

/* @return the system named name, or NULL. */
ecs_system *ecs_system_find(const ecs_world *w, const char *name);

/* Number of systems (removed ones not counted). */
size_t ecs_system_count(const ecs_world *w);

/*
** Iterate the systems in run order: start with *cursor = 0; each call
** stores the next system in *out and returns true, or returns false at the
** end. Removing systems during the walk is allowed (see the rules above).
*/
bool ecs_system_next(const ecs_world *w, uint32_t *cursor, ecs_system **out);

const char *ecs_system_name(const ecs_system *s);
ecs_system_kind ecs_system_kind_of(const ecs_system *s);
ecs_query *ecs_system_query(const ecs_system *s);   /* NULL: none */
void *ecs_system_ud(const ecs_system *s);
/* EXTERNAL: the callback (a binding tells its own systems apart by it). */
ecs_system_call_fn ecs_system_callback(const ecs_system *s);
/* NATIVE: the function. */
ecs_system_fn ecs_system_function(const ecs_system *s);
/* EXPR: the source text (zero-terminated; len may be NULL). */
const char *ecs_system_expr(const ecs_system *s, size_t *len);

/* EXPR: the parameters, in the order of the values given to the hook;
** the position is 1-based in the text (its first use), for messages. */
uint32_t ecs_system_param_count(const ecs_system *s);
const char *ecs_system_param_name(const ecs_system *s, uint32_t k);
uint32_t ecs_system_param_position(const ecs_system *s, uint32_t k);

/* A disabled system is skipped by ecs_world_update (its stats stay). */
void ecs_system_enable(ecs_system *s, bool enabled);
bool ecs_system_enabled(const ecs_system *s);

typedef struct ecs_system_stats {
  uint64_t calls;    /* runs that succeeded */
  double seconds;    /* their total time (ecs_clock: wall time) */
  uint64_t entities; /* entities they processed */
} ecs_system_stats;

void ecs_system_get_stats(const ecs_system *s, ecs_system_stats *out);

/* The system's phase ("update" unless its desc named one). */
const char *ecs_system_phase(const ecs_system *s);

/* Set every system's stats to zero. */
void ecs_system_reset_stats(ecs_world *w);

/*
** One update: run every enabled system once, in order, with dt, then a
** budgeted gc of every manager (ecs_world_gc, ECS_UPDATE_GC_BUDGET).
** ctx is passed to external systems and params hooks.
** A system that fails stops the update there (no later system runs, no
** gc); its run is not counted in its stats.
** dt must be finite (a NaN or an infinity would stay in what a fixed-
** interval system is owed for good); a negative dt is passed on as it is
** and takes time back from what such a system is owed, which goes at most
** ECS_SYSTEM_MAX_CATCHUP intervals below zero (a longer rewind is dropped,
** as a longer lag is).
** @param failed receives the system that failed, or NULL (may be NULL).
** @return ECS_ERR_OK; ECS_ERR_NOT_FINITE (dt; nothing ran); an external
**         system's or params hook's error as it is; ECS_ERR_NOMEM;
**         ECS_ERR_READONLY (debug builds, see ecs_query_run).
*/
ecs_err ecs_world_update(ecs_world *w, double dt, void *ctx,
                         ecs_system **failed);

/* ecs_world_update for the systems of one phase (ecs_world_update runs
** the phase "update"; NULL is "update"); then the same budgeted gc. A
** phase other than "update" must be the phase of some system, enabled or
** not: else ECS_ERR_NO_PHASE and nothing runs (a mistyped phase would
** otherwise run nothing, silently). */
ecs_err ecs_world_update_phase(ecs_world *w, const char *phase, double dt,
                               void *ctx, ecs_system **failed);

#ifdef __cplusplus
}
#endif

#endif
