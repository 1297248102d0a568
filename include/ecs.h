/*
** ecs.h -- public C interface of the ecs core.
**
** The core knows nothing of Lua. It allocates only through an allocator
** with lua_Alloc's signature (so a Lua binding can pass Lua's own allocator)
** and counts what it holds (ecs_world_memory), returns an ecs_err from
** every fallible function and never longjmps. There is no global mutable state: everything lives in an
** ecs_world.
**
** The contract every layer of the core implements a part of (alloc.c:
** allocation and memory; value.c: field types; entity.c and registry.c:
** entities and managers; world.c: lifetime, gc, check, errors, clock).
** The layers and their order are described in alloc.h. Includes only the
** C library's headers.
*/
#ifndef ECS_H
#define ECS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
** Entities
** An entity is a 30-bit id: generation (8 bits) << 22 | index (22 bits).
** Index 0 is never handed out, so ECS_NULL (id 0) means "no entity".
** --------------------------------------------------------------------- */
typedef uint32_t ecs_entity;

#define ECS_INDEX_BITS 22
#define ECS_GENERATION_BITS 8
#define ECS_INDEX_MASK ((1u << ECS_INDEX_BITS) - 1u)
#define ECS_GENERATION_MASK ((1u << ECS_GENERATION_BITS) - 1u)
#define ECS_ID_MASK ((1u << (ECS_INDEX_BITS + ECS_GENERATION_BITS)) - 1u)
/* largest index, and so the most entities alive at once: 4194303 */
#define ECS_MAX_ENTITIES ECS_INDEX_MASK
/* freed indices are reused only while at least this many are waiting */
#define ECS_MINIMUM_FREE_INDICES 1024u
#define ECS_NULL ((ecs_entity)0)

#define ecs_entity_index(e) ((uint32_t)(e) & ECS_INDEX_MASK)
#define ecs_entity_generation(e) \
  (((uint32_t)(e) >> ECS_INDEX_BITS) & ECS_GENERATION_MASK)
#define ecs_make_entity(index, gen) \
  ((ecs_entity)((((uint32_t)(gen) & ECS_GENERATION_MASK) << ECS_INDEX_BITS) | \
                ((uint32_t)(index) & ECS_INDEX_MASK)))

/* ------------------------------------------------------------------------
** Errors: one table, one code and one message per broken rule (C tests
** assert the code, specs match the text: the Lua binding raises
** "Class:method: <text>"). The values are part of the plugin interface:
** codes are only ever appended (before ECS_ERR__COUNT), never renumbered.
** INVALID is left for argument errors of the C API that no rule of the
** Lua API can cause (a NULL pointer, an unknown namespace or kind).
** --------------------------------------------------------------------- */
#define ECS_ERRORS(X)                                                       \
  X(OK, "ok")                                                               \
  X(NOMEM, "not enough memory")                                             \
  X(FULL, "too many entities (limit 4194303)")                              \
  X(DEAD, "entity is not alive")                                            \
  X(MISSING, "entity does not have the component")                          \
  X(EXISTS, "a component with this name already exists")                    \
  X(SCHEMA, "invalid component schema")                                     \
  X(CYCLE, "parenting would create a cycle")                                \
  X(LOCKED, "world is locked by an iteration in progress")                  \
  X(INVALID, "invalid argument")                                            \
  X(READONLY, "a system wrote a read-only column")                          \
  X(CORRUPT, "invalid or truncated data")                                   \
  /* appended: the rules ECS_ERR_INVALID used to stand for */              \
  X(CLOSED, "attempt to use a closed world")                                \
  X(NOT_FINITE, "non-finite number")                                        \
  X(ZERO_ROTATION, "rotation quaternion must be non-zero")                  \
  X(BAD_ROWS, "an instance is not a live row")                              \
  X(KEEP_WORLD, "keep_world: no finite local transform keeps the world "    \
                "matrix")                                                   \
  X(NO_TERMS, "at least one component expected")                            \
  X(TOO_MANY_TERMS, "too many components (limit 32)")                       \
  X(DUPLICATE_TERM, "a component is listed twice")                          \
  X(TOO_MANY_COLUMNS, "too many columns (limit 32)")                        \
  X(UNKNOWN_COMPONENT, "the component is not among the query's")          \
  X(EXCLUDED, "the component is excluded by the query")                     \
  X(UNKNOWN_FIELD, "unknown field")                                         \
  X(LUA_FIELD, "lua fields are not columns")                                \
  X(NOT_NUMERIC, "the field is not numeric")                                \
  X(EXPRESSION, "invalid expression")                                       \
  X(BAD_CLASS, "a manager class with gc needs purge")                       \
  X(CALLBACK, "a system's callback failed")                                  \
  X(NESTING, "listeners nested too deeply (limit 64)")                      \
  X(COMPONENT_NAME, "component name must be an identifier")                 \
  X(FIELD_NAME, "invalid field name")                                       \
  X(FIELD_TYPE, "unknown type")                                             \
  X(DUPLICATE_FIELD, "duplicate field")                                     \
  X(TOO_MANY_FIELDS, "too many fields (limit 255)")                      \
  /* appended: snapshots (snapshot.h) */                                   \
  X(NO_MANAGER, "the snapshot holds a manager the world does not have")    \
  X(SCHEMA_DIFFERS, "a manager's schema in the snapshot differs from the " \
                    "world's")                                              \
  X(VERSION, "unsupported snapshot format version")                       \
  /* appended: systems */                                                  \
  X(NO_SYSTEM, "no system with this name")                                 \
  /* appended: the journal (journal.h) */                                  \
  X(JOURNAL_OPEN, "a journal is already recording this world")            \
  X(LOST, "the journal lost track of a change (out of memory, or a "        \
          "component redefined since its mark): close it")                  \
  X(BASE, "the world differs from the delta's base")                      \
  /* appended: fields only their manager writes (component.h) */           \
  X(READONLY_FIELD, "the field is read-only")                               \
  /* appended: two terms of a query with one name (a user component and a \
  ** manager's owned one, such as "transform" or "mesh") */               \
  X(AMBIGUOUS, "two of the query's components have this name")           \
  /* appended: raw column pointers out (ecs_component_pin, query.h's    \
  ** chunk cursors): no change may move or free the rows they address */ \
  X(PINNED, "the component's columns are in use by a pointer loop in "     \
            "progress (make structural changes after it; a loop left early " \
            "keeps them until it is closed)")                                 \
  /* appended: an update of a phase no system has (system.h) */            \
  X(NO_PHASE, "no system has this phase")

typedef enum ecs_err {
#define ECS__ENUM(name, msg) ECS_ERR_##name,
  ECS_ERRORS(ECS__ENUM)
#undef ECS__ENUM
  ECS_ERR__COUNT
} ecs_err;

/* @return the fixed message for err ("unknown error" if out of range). */
const char *ecs_strerror(ecs_err err);

/* ------------------------------------------------------------------------
** Allocation: lua_Alloc's contract. nsize == 0 frees and returns NULL;
** otherwise returns a block of nsize bytes holding the first
** min(osize, nsize) bytes of ptr, or NULL (ptr untouched) on failure.
** --------------------------------------------------------------------- */
typedef void *(*ecs_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

/* ------------------------------------------------------------------------
** Worlds
** --------------------------------------------------------------------- */
typedef struct ecs_world ecs_world;

/*
** The first member of every ecs_world: what ecs_alive needs, public so that
** it can be inlined. Do not write to it.
** slot[i] is the generation of the live entity at index i, or
** ECS_SLOT_FREE | generation when index i is free (or was never used).
** ecs_alive compares the slot with every bit of the handle above the index
** (e >> 22, at most 1023 for a 32-bit handle), so a free slot must exceed
** 1023: then it equals no handle at all, also forged ones with bits 30 or
** 31 set (an 0x100 flag would make handle 1 << 30 "alive" at index 0).
*/
typedef struct ecs_world_head {
  uint16_t *slot;
  uint32_t slot_count; /* indices [0, slot_count) have a slot */
  uint32_t listeners;  /* registered listeners (ecs_manager_notify) */
} ecs_world_head;

#define ECS_SLOT_FREE 0x8000u

/*
** Create an empty world.
** @param alloc allocator (lua_Alloc-compatible); NULL uses realloc/free.
** @param ud    passed to alloc unchanged.
** @return the world, or NULL when out of memory.
*/
ecs_world *ecs_world_new(ecs_alloc_fn alloc, void *ud);

/*
** Threads (docs/threads.md): run world:update's expression systems (and
** q:apply) on `threads` threads, the caller and threads - 1 workers the
** world starts now and joins when the setting changes or it is freed.
** One large system's rows are split in ranges over the threads; results
** are the same as with one thread, bit for bit. 1 (the default) starts
** nothing. @return ECS_ERR_INVALID outside 1 .. ECS_MAX_THREADS,
** ECS_ERR_LOCKED during world_update, ECS_ERR_NOMEM when memory or a
** thread cannot be had (the setting is then unchanged).
*/
#define ECS_MAX_THREADS 64u
ecs_err ecs_world_set_threads(ecs_world *w, uint32_t threads);
uint32_t ecs_world_threads(const ecs_world *w);
/* Program runs split over threads since w was made (a statistic). */
uint64_t ecs_world_split_runs(const ecs_world *w);
/* Batches since w was made: runs of two or more systems whose accesses
** do not conflict, side by side in one job of the threads (a statistic;
** ecs_world_update, system.h). */
uint64_t ecs_world_batches(const ecs_world *w);
/*
** Whole-world loads committed in w since it was made: ecs_world_load (a
** snapshot restored in place), ecs_journal_undo and ecs_delta_apply each
** count one when they succeed. A caller that holds state about the world
** across code that may load one (a loop that writes values back, a pass it
** means to complete) compares two readings: a different count means that
** state describes a world that is gone (ecs_query_iter_loaded, query.h).
*/
uint64_t ecs_world_loads(const ecs_world *w);

/* Free a world and everything it owns. NULL is a no-op. */
void ecs_world_free(ecs_world *w);

/*
** The world's allocator, for plugins that allocate on its behalf: it calls
** the allocator given to ecs_world_new and counts the blocks as the
** world's (ecs_world_memory).
*/
ecs_alloc_fn ecs_world_allocator(const ecs_world *w, void **ud);

/*
** Bytes of every block the world holds now (the core's and those allocated
** through ecs_world_allocator), and, when allocated is not NULL, the
** running total of bytes it has allocated (each new block and each growth;
** frees do not lower it). A binding uses the total's increase to pace a
** garbage collector that cannot see these blocks.
*/
size_t ecs_world_memory(const ecs_world *w, uint64_t *allocated);

/* ------------------------------------------------------------------------
** Field types of component columns: X(NAME, lowercase name, C type)
** A "lua" field holds a reference (uint32_t, 0 = nil) that the binding maps
** to a Lua value; the core only stores, moves and reports dropped refs.
** --------------------------------------------------------------------- */
#define ECS_TYPES(X)             \
  X(F32, "f32", float)           \
  X(F64, "f64", double)          \
  X(I8, "i8", int8_t)            \
  X(I16, "i16", int16_t)         \
  X(I32, "i32", int32_t)         \
  X(I64, "i64", int64_t)         \
  X(U8, "u8", uint8_t)           \
  X(U16, "u16", uint16_t)        \
  X(U32, "u32", uint32_t)        \
  X(BOOL, "bool", uint8_t)       \
  X(ENTITY, "entity", ecs_entity) \
  X(LUA, "lua", uint32_t)

typedef enum ecs_type {
#define ECS__TYPE(name, text, ctype) ECS_##name,
  ECS_TYPES(ECS__TYPE)
#undef ECS__TYPE
  ECS_TYPE__COUNT
} ecs_type;

/* One field of a schema: a name ([A-Za-z_][A-Za-z0-9_]*) and a type. */
typedef struct ecs_field_def {
  const char *name;
  ecs_type type;
} ecs_field_def;

/* @return the size in bytes of one value of type t (0 if out of range). */
size_t ecs_type_size(ecs_type t);
/* @return "f32", "entity", ... (NULL if out of range). */
const char *ecs_type_name(ecs_type t);
/* @return the type named by the first len bytes of s, or -1. */
int ecs_type_parse(const char *s, size_t len);

/* ------------------------------------------------------------------------
** Managers. Every manager a world owns (generic components, the transform,
** names, C plugins) is registered with it under a unique name together
** with a class; the world calls the class to collect garbage, purge an
** index whose generation wraps, check invariants and free the manager when
** the world goes.
**
** Records and generations. A manager keeps a record per entity, found by
** the entity's index and told apart from a newer entity's by the full
** handle it stores. The world does not tell managers when an entity dies:
** a dead entity's record is invisible (its stored handle is no longer
** alive) and is reclaimed later by gc. Generations have 8 bits, so after
** 256 destroys of one index a handle comes back; before that can happen
** the world calls every manager's purge for that index (from ecs_destroy,
** when the slot's generation wraps from 255 to 0), so a record never
** outlives the 256 generations of its index and a new entity never sees
** an old entity's data.
**
** Invariant (checked by each manager's check through ecs_record_valid):
** every record whose stored handle is not marked ECS_PURGED has an index
** below the slot count and a generation not ahead of its slot's: at most
** the live generation, or below the next one while the index is free.
** --------------------------------------------------------------------- */
/*
** Byte streams for a manager's save and load. A writer appends through a
** callback (a growing buffer, a file); a reader reads a block of memory
** (a snapshot held whole, as a Lua string is). ecs_write_u32 and
** ecs_read_u32 use little-endian order whatever the machine; other values
** a manager writes with ecs_write are in the machine's order, which a
** snapshot (snapshot.h) requires to be little-endian too.
*/
typedef struct ecs_writer {
  /* append size bytes: ECS_ERR_OK or the error that stops the save */
  ecs_err (*write)(void *ud, const void *data, size_t size);
  void *ud;
} ecs_writer;

typedef struct ecs_reader {
  const unsigned char *data;
  size_t size; /* bytes at data */
  size_t pos;  /* the next byte to read */
} ecs_reader;

/* out->write(out->ud, data, size) (nothing for size 0). */
ecs_err ecs_write(ecs_writer *out, const void *data, size_t size);
/* Copy the next size bytes to data and move past them.
** @return ECS_ERR_CORRUPT (nothing read) if fewer than size remain. */
ecs_err ecs_read(ecs_reader *in, void *data, size_t size);
/* 32-bit counts and sizes, little-endian (byte by byte: any machine). */
ecs_err ecs_write_u32(ecs_writer *out, uint32_t v);
ecs_err ecs_read_u32(ecs_reader *in, uint32_t *v);

/* What a manager holds, for world:managers() and memory accounting. */
typedef struct ecs_manager_stats {
  size_t records; /* records held, dead ones not yet reclaimed included */
  size_t live;    /* of those, the ones whose entity is alive */
  size_t bytes;   /* bytes of memory the manager holds (its blocks) */
} ecs_manager_stats;

/*
** Changes a manager reports to listeners (observers are built on them):
** ADD after an entity gains a record, its initial values written;
** REMOVE before a record goes (still readable); SET after a value was
** written through the manager's setters. Bit flags, for masks.
*/
typedef enum ecs_event {
  ECS_EVENT_ADD = 1,
  ECS_EVENT_REMOVE = 2,
  ECS_EVENT_SET = 4
} ecs_event;

typedef struct ecs_manager_class {
  const char *kind; /* "component", "transform", a plugin's own word */
  /* reclaim up to budget records of dead entities (SIZE_MAX = all);
  ** @return how many were reclaimed. May be NULL (then so may purge: a
  ** manager without gc keeps no records of entities). */
  size_t (*gc)(ecs_world *w, void *self, size_t budget);
  /* @return NULL or the first violated invariant. May be NULL. */
  const char *(*check)(const ecs_world *w, const void *self);
  /* release everything self owns, self included. Required. */
  void (*free)(ecs_world *w, void *self);
  /* Make every record of entity index `index` unreachable for good: no
  ** future entity with that index may see it (the usual way: set
  ** ECS_PURGED on the stored handle, which gc reclaims later). Called by
  ** ecs_destroy when the index's generation wraps; the index is free.
  ** Must not allocate, fail, call back into the world or move records
  ** (iterations over the manager and pinned query rows may be in
  ** progress). O(records of that index). Required when gc is set. */
  void (*purge)(ecs_world *w, void *self, uint32_t index);

  /* The hooks below may each be NULL: the manager then has nothing to
  ** clear, reports zero stats, has no schema, saves nothing, and so on. */

  /* Does the live entity e have a record here? O(1). */
  bool (*has)(const ecs_world *w, const void *self, ecs_entity e);
  /* Drop every record (the manager itself, its schema and settings stay).
  ** Never fails; notifies no listener. Like gc, must not run while an
  ** iteration over the manager is in progress (callers check). */
  void (*clear)(ecs_world *w, void *self);
  /* Fill *out (zeroed by the caller). */
  void (*stats)(const ecs_world *w, const void *self, ecs_manager_stats *out);
  /* The fields of one record, as a component's schema: @return their
  ** number and store the first min(number, max) in out (names owned by
  ** the manager, valid while it lives). */
  uint32_t (*schema)(const ecs_world *w, const void *self, ecs_field_def *out,
                     uint32_t max);
  /* Write the records of live entities (handles and data) to out, in a
  ** layout of the manager's choosing that load reads back. Lua fields are
  ** written as their reference numbers: whoever saves them keeps the
  ** values they stand for. @return ECS_ERR_OK or out's error. */
  ecs_err (*save)(const ecs_world *w, const void *self, ecs_writer *out);
  /* Replace every record with those read from in (written by save). The
  ** entities named must be alive (a snapshot restores entities first);
  ** Lua references are taken over as read. All or nothing: on
  ** ECS_ERR_CORRUPT (bad data, dead entities) or ECS_ERR_NOMEM the
  ** manager is unchanged. Notifies no listener. */
  ecs_err (*load)(ecs_world *w, void *self, ecs_reader *in);

  /* Staged loads (snapshots: ecs_world_load loads every manager aside
  ** and only then trades them all in, so that a failure anywhere leaves
  ** the whole world unchanged). Both or neither; a class with load but
  ** without them can still be part of a snapshot, see snapshot.h. */

  /* A new manager like self, with its schema and settings and no record,
  ** owned by the caller and registered nowhere: the caller loads into it
  ** and then swaps it with self, or frees it (free). @return NULL when
  ** out of memory. */
  void *(*twin)(ecs_world *w, const void *self);
  /* Give self the records of its twin: afterwards self holds what twin
  ** held, and twin self's old records, which the caller frees (free);
  ** what they must report on going (a component's lua references, to
  ** the drop list) swap reports. Allocates nothing and never fails;
  ** self's identity and what is not a record (settings, listeners,
  ** queries that watch it, which are made stale as a load makes them)
  ** stay. Notifies no listener. */
  void (*swap)(ecs_world *w, void *self, void *twin);

  /* Appended: the manager as a query term. The generic component whose
  ** rows are the manager's records (an owned component it created and
  ** drives, component.h "Owned components"), the same object for the
  ** manager's whole life: queries, q:apply, expression and C systems and
  ** q:columns read and write its columns. A Lua plugin object stands for
  ** it in world:query once ecs_lua_plugin_manager names its manager
  ** (ecs_lua.h). May be NULL: the manager is not a query term. */
  struct ecs_component *(*columns)(const ecs_world *w, void *self);
} ecs_manager_class;

/*
** A stored handle with this bit set belongs to a purged record: it is never
** alive (ecs_alive compares the bits above the index with an 8-bit
** generation) and never equals a handle, while ecs_entity_index still
** gives its index.
*/
#define ECS_PURGED 0x80000000u
#define ecs_mark_purged(e) ((ecs_entity)((uint32_t)(e) | ECS_PURGED))

/*
** For managers' checks: may a record storing handle e exist? True when e
** is marked ECS_PURGED, or e's index has a slot and e's generation is not
** ahead of the slot's (see "Records and generations" above). False means
** the record survived a generation wrap, or was never a real entity's.
*/
bool ecs_record_valid(const ecs_world *w, ecs_entity e);

/*
** Names are unique within one of two namespaces, so that a user's
** component may be called "transform", "names" or "pointmass" next to the
** manager of that name: ECS_NS_COMPONENT holds the generic component
** managers (component.h), ECS_NS_MANAGER every other one (the transform,
** names, C plugins).
*/
typedef enum ecs_namespace {
  ECS_NS_MANAGER = 0,
  ECS_NS_COMPONENT = 1
} ecs_namespace;

/*
** Register self under name (copied) in namespace ns. The world owns self
** from here on and frees it through cls->free, even when registration
** fails.
** @return ECS_ERR_EXISTS if the name is taken in ns, ECS_ERR_NOMEM,
**         ECS_ERR_BAD_CLASS for a cls with gc but no purge,
**         ECS_ERR_INVALID for an unknown namespace.
*/
ecs_err ecs_manager_register_in(ecs_world *w, ecs_namespace ns,
                                const char *name,
                                const ecs_manager_class *cls, void *self);

/* @return the manager registered under name in ns, or NULL. */
void *ecs_manager_find_in(const ecs_world *w, ecs_namespace ns,
                          const char *name, const ecs_manager_class **cls);

/* ecs_manager_register_in and ecs_manager_find_in in ECS_NS_MANAGER (the
** namespace of plugins; components are found with ecs_component_find). */
ecs_err ecs_manager_register(ecs_world *w, const char *name,
                             const ecs_manager_class *cls, void *self);
void *ecs_manager_find(const ecs_world *w, const char *name,
                       const ecs_manager_class **cls);

/* Number of registered managers; ecs_manager_at(w, i) for i below it (two
** managers may share a name in different namespaces: cls tells them apart). */
size_t ecs_manager_count(const ecs_world *w);
void *ecs_manager_at(const ecs_world *w, size_t i, const char **name,
                     const ecs_manager_class **cls);

/*
** Listeners: fn(w, manager, e, event, ud) runs for each event in `events`
** (ECS_EVENT_* bits) that the manager `manager` (a registered self)
** reports through ecs_manager_notify. Listeners run in the order they
** were added, synchronously, and may change the world (the manager
** notifies where its own state is complete). An ADD is followed by a
** SET (the new record's values were written): every ADD listener, then
** every SET listener, unless an ADD listener failed or took the record
** away (removed it, destroyed the entity); a manager reports ADD only. A listener's error stops
** the others and is returned by the call that triggered it; the change
** that was reported stands. Notifications nest (a listener's change is
** reported to listeners in turn) at most 64 deep: a
** deeper one is not delivered and fails with ECS_ERR_NESTING, so two
** listeners that undo each other's change end with an error instead of
** overflowing the C stack.
** @return ECS_ERR_NOMEM, or ECS_ERR_INVALID if manager is not registered
**         in w, fn is NULL, or events has no known bit or an unknown one.
*/
typedef ecs_err (*ecs_listener_fn)(ecs_world *w, void *manager, ecs_entity e,
                                   ecs_event event, void *ud);
ecs_err ecs_manager_listen(ecs_world *w, const void *manager, unsigned events,
                           ecs_listener_fn fn, void *ud);
/* Remove the listener added with these manager, fn and ud (the earliest
** such, if several); safe from inside a listener. @return false if none. */
bool ecs_manager_unlisten(ecs_world *w, const void *manager,
                          ecs_listener_fn fn, void *ud);

/*
** For managers: report event on e to the listeners of manager `self`.
** ecs_manager_notify costs one load and a branch while the world has no
** listener. A macro rather than an inline function so that in a plugin
** the call goes through the function table (ecs_plugin.h); it evaluates
** w twice.
** @return ECS_ERR_OK or the first listener's error.
*/
ecs_err ecs_manager_notify_listeners(ecs_world *w, void *self, ecs_entity e,
                                     ecs_event event);
#define ecs_manager_notify(w, self, e, event)                              \
  (((const ecs_world_head *)(const void *)(w))->listeners == 0             \
       ? ECS_ERR_OK                                                        \
       : ecs_manager_notify_listeners((w), (self), (e), (event)))

/* Stats of manager i (ecs_manager_at): zeros when its class has none. */
void ecs_manager_stats_at(const ecs_world *w, size_t i,
                          ecs_manager_stats *out);

/* Run every manager's gc with the given budget each; @return total. */
size_t ecs_world_gc(ecs_world *w, size_t budget);

/* ------------------------------------------------------------------------
** Entity manager (Bitsquid part 1)
** --------------------------------------------------------------------- */

/*
** True when e is alive in w: one bounds check, one array read, one compare.
** False for ECS_NULL, destroyed and stale handles, and forged ids whose
** generation is ahead of the slot's.
*/
static inline bool ecs_alive(const ecs_world *w, ecs_entity e) {
  const ecs_world_head *h = (const ecs_world_head *)(const void *)w;
  uint32_t i = ecs_entity_index(e);
  return i < h->slot_count && h->slot[i] == ((uint32_t)e >> ECS_INDEX_BITS);
}

/*
** Create one entity.
** @param out receives the new entity.
** @return ECS_ERR_OK, ECS_ERR_NOMEM, or ECS_ERR_FULL when 4194303 entities
**         are alive. On error nothing changed.
*/
ecs_err ecs_create(ecs_world *w, ecs_entity *out);

/*
** Create n entities, all or nothing.
** @param out array of at least n entities.
*/
ecs_err ecs_create_n(ecs_world *w, ecs_entity *out, size_t n);

/*
** The indices the next n creations will hand out, in order, the world
** unchanged: so that a batch (world:spawn) can reserve what its entities
** need in every manager before it creates them, and stay all or nothing.
** @return ECS_ERR_OK, or ECS_ERR_FULL when fewer than n can be created.
*/
ecs_err ecs_next_indices(const ecs_world *w, uint32_t *out, size_t n);

/*
** Destroy e. Its index joins the free queue with the next generation.
** Managers' records of e vanish at once for every read and are reclaimed
** by gc. When the generation wraps (e's was 255), every manager's purge
** runs for e's index first, so the next entity to take it starts with no
** record anywhere. Never allocates and never fails. Managers' REMOVE
** listeners are told first (ecs_destroy_report, whose errors this drops).
** @return true if e was alive; false (and nothing happens) for a dead,
**         stale or null handle: never a double free.
*/
bool ecs_destroy(ecs_world *w, ecs_entity e);

/*
** ecs_destroy reporting a listener's error. While the world has a
** listener of ECS_EVENT_REMOVE, destroy first reports REMOVE of e to
** each manager (registration order) that has such a listener and has a
** record of e, e still alive and its records readable; a destroy of e
** from inside those listeners does nothing (false). The first error
** stops the reports; e is destroyed all the same. ecs_destroy is this
** call with the error dropped.
** @param destroyed set to whether e was alive and is destroyed now.
** @return ECS_ERR_OK or the first listener's error (ECS_ERR_NESTING
**         when notifications nest too deeply).
*/
ecs_err ecs_destroy_report(ecs_world *w, ecs_entity e, bool *destroyed);

/* Destroy every alive entity in es. @return how many were destroyed. */
size_t ecs_destroy_n(ecs_world *w, const ecs_entity *es, size_t n);

/*
** Entity fields with a cleanup policy (component.h,
** ecs_component_set_cleanup) are swept after every destroy; between a hold
** and its release (holds nest) the destroys only note it, and the release
** of the outermost hold sweeps once for all of them (ecs_destroy_n does).
** @return of release: the first error of a REMOVE listener the sweep ran
**         (the sweep goes on to the end all the same).
*/
void ecs_cleanup_hold(ecs_world *w);
ecs_err ecs_cleanup_release(ecs_world *w);

/* Number of live entities. */
size_t ecs_count(const ecs_world *w);

/* Number of indices waiting in the free queue. */
size_t ecs_free_count(const ecs_world *w);

/*
** Iterate live entities in index order.
** Start with *cursor = 0; each call stores the next live entity in *out and
** returns true, or returns false at the end. Destroying entities during the
** walk is allowed; entities created during it are visited only if they take
** an index above the cursor.
*/
bool ecs_next_entity(const ecs_world *w, uint32_t *cursor, ecs_entity *out);

/*
** Check every invariant of the world: the entity manager, then every
** registered manager's class check.
** @return NULL if consistent, else a static text naming the first violation.
*/
const char *ecs_world_check(const ecs_world *w);

/* Seconds of a monotonic clock (for intervals; the origin is arbitrary). */
double ecs_clock(void);

#ifdef __cplusplus
}
#endif

#endif
