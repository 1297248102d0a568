/*
** component.h -- generic component managers (Bitsquid, "Building a
** Data-Oriented Entity System", part 2).
**
** A component manager owns every instance of one component type. Its schema
** (field names and ecs_type) is fixed at registration. Instances are stored
** as a structure of arrays in ONE allocation: the owner column (one
** ecs_entity per instance) followed by one column per field, all of the
** same capacity, so a whole-array update is a plain loop over a C array.
** Instances are dense in [0, size): removal swaps the last instance into
** the hole, so an instance number (ecs_instance) and a column pointer are
** valid only until the next structural change (add of a new instance,
** remove, gc); ecs_component_version() tells when that happened.
**
** Dead entities: the core does not tell managers when an entity dies. An
** instance whose owner is dead is invisible to every read (lookup, count)
** from that moment, and is reclaimed later by ecs_component_gc (a
** budgeted scan, or a full sweep), which ecs_world_gc runs for every
** manager.
** When the generation of an index wraps (ecs_destroy), the record at that
** index is marked ECS_PURGED in place, so the entity that gets the old
** handle back never sees it; nothing moves.
**
** "lua" fields store a uint32_t reference (0 = nil) that the binding maps to
** a Lua value. The core never calls Lua: when an instance holding non-zero
** references is dropped (remove, gc, reuse of a dead record), the
** references are appended to a per-world list that the binding drains with
** ecs_drain_refs and releases. Room for that list is reserved when an
** instance is created, so dropping never allocates and never fails.
**
** Listeners (ecs_manager_listen): ECS_EVENT_ADD (then SET: ecs.h) after
** ecs_component_add creates an instance, ECS_EVENT_REMOVE before
** ecs_component_remove removes one. The core has no setters (values are
** written straight into the columns), so ECS_EVENT_SET, and ADD after
** ecs_component_emplace, are reported by whoever writes the values (the
** core's write sequence, src/storage/write.h, for the binding's add, set
** and set_field). clear, load, gc and the death of an
** entity report nothing: a dead entity's record is garbage, not a remove.
**
** The manager class implements every hook (ecs.h): has, clear (keeps the
** capacity), stats, schema (the fields), save and load (a versioned
** layout: the schema, then the live instances; docs/components.md).
**
** See docs/components.md for the memory layout and its costs.
**
** Layer: managers, above entity and below query (layers: alloc.h).
** Includes ecs.h and value.h (ecs_scalar, for a redefinition's conversion).
*/
#ifndef ECS_COMPONENT_H
#define ECS_COMPONENT_H

#include "ecs.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ecs_component ecs_component;

/* An instance number: a row of the manager's columns, in [0, size). */
typedef uint32_t ecs_instance;
#define ECS_NO_INSTANCE ((ecs_instance)UINT32_MAX)

/* Most fields a component may have. */
#define ECS_MAX_FIELDS 255u

/* The kind string of generic component managers in the world registry. */
#define ECS_COMPONENT_KIND "component"

/*
** Create a component manager and register it with w under name. Names and
** the schema are copied.
** @param name   an identifier ([A-Za-z_][A-Za-z0-9_]*, so that "Name.field"
**               is unambiguous), unique among the component managers of
**               w (other managers, such as the transform or a plugin's,
**               have names of their own: ecs.h, ecs_namespace).
** @param fields nfields definitions (may be NULL when nfields is 0: a tag).
** @param out    receives the manager (owned by w, freed by ecs_world_free);
**               untouched on error.
** @return ECS_ERR_OK; ECS_ERR_EXISTS if a component of that name exists;
**         the codes of ecs_component_check_schema; ECS_ERR_NOMEM. On
**         error w is unchanged.
*/
ecs_err ecs_component_new(ecs_world *w, const char *name,
                          const ecs_field_def *fields, uint32_t nfields,
                          ecs_component **out);

/*
** Undo ecs_component_new of a component nothing uses yet: c must be the
** last manager registered in w and hold no record, and no query, system,
** listener, journal capture or pin may refer to it (a host that registered
** components for a load that then failed: world:restore). c is freed.
** @return ECS_ERR_OK, or ECS_ERR_INVALID (any of these does not hold:
**         nothing changes).
*/
ecs_err ecs_component_unregister(ecs_world *w, ecs_component *c);

/*
** The rules of a component's name and schema, checked in this order:
** ECS_ERR_COMPONENT_NAME (name is not an identifier), ECS_ERR_TOO_MANY_FIELDS
** (more than ECS_MAX_FIELDS), ECS_ERR_SCHEMA (fields NULL while nfields > 0),
** then per field ECS_ERR_FIELD_NAME (not an identifier), ECS_ERR_FIELD_TYPE
** (type out of range) and ECS_ERR_DUPLICATE_FIELD (a name seen before).
** @param at receives the index of the field at fault (0 otherwise); may
**           be NULL.
*/
ecs_err ecs_component_check_schema(const char *name,
                                   const ecs_field_def *fields,
                                   uint32_t nfields, uint32_t *at);

/* A field of a redefinition that takes no old field's values (zero). */
#define ECS_NO_FIELD UINT32_MAX

/*
** The value of new field k at row i of a redefinition, for a field whose
** type changes (ecs_component_redefine): the host converts the old value
** (it read and checked them all before the call: this cannot fail).
*/
typedef ecs_scalar (*ecs_component_convert_fn)(void *ud, uint32_t k,
                                               uint32_t i);

/*
** Redefine c in place with the schema defs[0 .. n) (hot reload: docs/
** persistence.md, "Migration and hot reload"). New field k takes the
** values of old field from[k] (ECS_NO_FIELD: zero; each old field at most
** once): copied when the type is the same, else from convert, called for
** every row whose owner is alive (dead records get zero). The manager
** keeps its identity, rows, map and change stamps; lua references of old
** fields dropped or converted go to the drop list; cleanup policies are
** cleared (set them again with ecs_component_set_cleanup); the compiled
** programs of its queries are forgotten and their lists made stale; an
** open journal loses track (ECS_ERR_LOST at its next use). Rows do not
** move, so iterations in progress go on, but column pointers and field
** numbers taken before the call are stale.
** @param msg receives the reason on failure (may be NULL when msgsize is 0).
** @return ECS_ERR_OK; the codes of ecs_component_check_schema;
**         ECS_ERR_LOCKED while a program from ecs_program_compile is held
**         over a query of c (it would name old fields);
**         ECS_ERR_UNKNOWN_FIELD, ECS_ERR_NOT_NUMERIC, ECS_ERR_LUA_FIELD
**         when a system's expression or native columns name a field the
**         new schema drops or makes unfit (msg names the system);
**         ECS_ERR_INVALID for a bad from[] (out of range, repeated, or a
**         type change without convert); ECS_ERR_NOMEM. On error nothing
**         changed.
*/
ecs_err ecs_component_redefine(ecs_world *w, ecs_component *c,
                               const ecs_field_def *defs, uint32_t n,
                               const uint32_t *from,
                               ecs_component_convert_fn convert, void *ud,
                               char *msg, size_t msgsize);

/*
** Parse one schema entry of the text form "field:type" (or "field", an
** f64) of len bytes: *name_len receives the length of the field name,
** *type its type. @return ECS_ERR_FIELD_NAME when the name before the
** colon is not an identifier, ECS_ERR_FIELD_TYPE when the text after it
** names no type (*name_len is set then, for the message).
*/
ecs_err ecs_schema_entry_parse(const char *s, size_t len, size_t *name_len,
                               ecs_type *type);

/* @return the component manager registered under name, or NULL (also when
**         name belongs to a manager of another kind). */
ecs_component *ecs_component_find(const ecs_world *w, const char *name);

/* @return true if the registered manager self is a generic component. */
bool ecs_component_is(const ecs_manager_class *cls);

/* @return the manager's name (owned by the manager). */
const char *ecs_component_name(const ecs_component *c);

/* @return the number of fields (0 for a tag). */
uint32_t ecs_component_field_count(const ecs_component *c);

/* @return field i's definition; i must be below the field count. */
const ecs_field_def *ecs_component_field(const ecs_component *c, uint32_t i);

/* True when no bulk path may write field k (q:apply and expression
** systems, native systems' writable columns, q:columns): the fields an
** owning manager computes itself, such as the transform's world position. */
bool ecs_component_readonly(const ecs_component *c, uint32_t field);

/*
** Pins: while c is pinned, raw pointers into its columns
** (ecs_component_column) keep addressing the same rows of the same
** entities. Every change that would add, move or free a row fails with
** ECS_ERR_PINNED and changes nothing: a new instance, a removal, a
** re-order, a redefinition; world-wide changes (ecs_world_load, the
** journal's undo and deltas) fail while any manager of the world is
** pinned (ecs_world_pins); the lazy gc leaves c for later. Values may be
** written. Pins nest: each pin needs one unpin. Owned components
** (ecs_component_owned) cannot be pinned (ECS_ERR_INVALID): their
** manager moves their rows itself.
*/
ecs_err ecs_component_pin(ecs_world *w, ecs_component *c);
void ecs_component_unpin(ecs_world *w, ecs_component *c);
uint32_t ecs_component_pins(const ecs_component *c);
uint32_t ecs_world_pins(const ecs_world *w);

/* @return the index of the field named by the first len bytes of name, or
**         -1. A linear search: resolve names once, not per access. */
int ecs_component_field_index(const ecs_component *c, const char *name,
                              size_t len);

/*
** Give e an instance, without telling listeners: for callers that write
** the initial values first and then report the ADD themselves
** (ecs_manager_notify(w, c, e, ECS_EVENT_ADD) once the values are in,
** as the binding's Position:add does), so that a listener never sees the
** zeros of a half-made instance.
** If e already has one, it is returned with *existed = true and its values
** untouched. Otherwise a new instance is created with every field zeroed
** (lua refs 0 = nil) and *existed = false; a dead record left by an older
** entity with e's index is reused in place (its lua refs are dropped).
** @param e       must be alive in w.
** @param out     receives the instance (may be NULL).
** @param existed receives whether e already had one (may be NULL).
** @return ECS_ERR_OK; ECS_ERR_DEAD if e is not alive; ECS_ERR_NOMEM (then
**         nothing changed).
*/
ecs_err ecs_component_emplace(ecs_world *w, ecs_component *c, ecs_entity e,
                              ecs_instance *out, bool *existed);

/*
** Reserve what adding instances for the n entity indices index[] needs
** (column and map room, drop-list room for their lua cells), so that
** ecs_component_emplace of entities with those indices cannot fail with
** ECS_ERR_NOMEM afterwards, as long as nothing else adds to c meanwhile.
** Indices may repeat or already have instances (room is then to spare).
** @return ECS_ERR_OK or ECS_ERR_NOMEM (c unchanged but for room, which is
**         harmless).
*/
ecs_err ecs_component_reserve(ecs_world *w, ecs_component *c,
                              const uint32_t *index, size_t n);

/*
** ecs_component_emplace for n entities at once, after ecs_component_reserve
** of their indices: rows[k] receives es[k]'s instance. Each entity must be
** alive (not checked: a batch's caller made them); one that has an
** instance gets it back untouched, others get new zeroed instances.
** Never fails, never allocates. No listener is told (the caller writes
** the values, then reports ADD, as after emplace).
*/
void ecs_component_emplace_n(ecs_world *w, ecs_component *c,
                             const ecs_entity *es, size_t n,
                             ecs_instance *rows);

/*
** ecs_component_emplace, then, when the instance is new, ECS_EVENT_ADD to
** the manager's listeners (its values are the zeros). Listeners may
** change the world: *out is e's instance as it is after them
** (ECS_NO_INSTANCE if one removed it or destroyed e).
** @return as emplace, or the first listener's error (the instance was
**         added all the same).
*/
ecs_err ecs_component_add(ecs_world *w, ecs_component *c, ecs_entity e,
                          ecs_instance *out, bool *existed);

/*
** @return e's instance, or ECS_NO_INSTANCE if e has none or is not alive
**         (dead, stale, null or forged handles all give ECS_NO_INSTANCE).
*/
ecs_instance ecs_component_lookup(const ecs_world *w, const ecs_component *c,
                                  ecs_entity e);

/* Batch lookup (Open Sea): out[k] = ecs_component_lookup(w, c, in[k]). */
void ecs_component_lookup_n(const ecs_world *w, const ecs_component *c,
                            const ecs_entity *in, ecs_instance *out, size_t n);

/*
** Remove e's instance (the last instance moves into its place). The
** manager's listeners get ECS_EVENT_REMOVE first, while the instance is
** still readable; what they do is respected (e's instance is looked up
** again after them: if one removed it or destroyed e, nothing is left to
** do). A remove of e from inside a listener of e's REMOVE removes at once
** without reporting REMOVE again.
** @param removed receives true if e was alive and had one, false otherwise
**                (a dead owner's record stays until gc). May be NULL.
** @return ECS_ERR_OK, or the first listener's error (the instance was
**         removed all the same).
*/
ecs_err ecs_component_remove(ecs_world *w, ecs_component *c, ecs_entity e,
                             bool *removed);

/* @return instances stored, records of dead owners included. */
uint32_t ecs_component_size(const ecs_component *c);

/* @return instances whose owner is alive. O(size): one ecs_alive each. */
size_t ecs_component_count(const ecs_world *w, const ecs_component *c);

/* @return the owner column: owner of instance i at [i], i in [0, size).
**         The owner may be dead (check ecs_alive), and a dead one may be
**         marked ECS_PURGED (ecs_entity_index still gives its index). */
const ecs_entity *ecs_component_entities(const ecs_component *c);

/*
** @return the base of field's column, typed by the field's ecs_type
**         (float *, int32_t *, uint32_t * of refs for "lua" ...), or NULL
**         while the manager has never held an instance. Valid until the
**         next add of a new instance, remove or gc.
** @param field below the field count.
*/
void *ecs_component_column(ecs_component *c, uint32_t field);

/*
** Reclaim records of dead owners.
** With a finite budget this is the lazy gc every manager shares: scan on
** from where the last call stopped, remove dead instances, and stop once
** budget records were reclaimed, 4 * budget + 64 live ones were seen or
** every instance was looked at. budget == SIZE_MAX sweeps every instance.
** @return how many records were reclaimed.
*/
size_t ecs_component_gc(ecs_world *w, ecs_component *c, size_t budget);

/* @return a counter incremented by every structural change (instance
**         created, reused, removed or reclaimed, columns moved by growth).
**         Caches of instance numbers or column pointers are stale when it
**         differs from the value they were built with. */
uint64_t ecs_component_version(const ecs_component *c);

/*
** Cleanup of entity fields (cleanup.c). A field of type ECS_ENTITY may
** say what happens when the entity it names is destroyed: CLEAR sets it to
** ECS_NULL (no listener is told: it is not a set), REMOVE removes the
** holder's instance of this component (REMOVE listeners are told), DESTROY
** destroys the holder (and so on down a chain). It happens during the
** destroy (ecs_destroy, ecs_destroy_report, ecs_destroy_n), by a sweep over
** the instances of every component that has such a field: O(instances of
** those components) per destroy call, nothing for a world without them.
** A field whose value is a dead entity when the sweep runs is treated the
** same, whenever that entity died. REMOVE on a pinned component
** (ecs_component_pin) is put off: the holder keeps it and the next sweep
** (the next destroy, or ecs_cleanup_release of a hold) owes it. Policies
** are part of the schema: snapshots (format 2) and deltas carry them in
** each field's word, type | policy << 8, and loads compare them.
** @return ECS_ERR_UNKNOWN_FIELD (field out of range), ECS_ERR_INVALID (not
**         an entity field, or policy unknown).
*/
typedef enum ecs_cleanup {
  ECS_CLEANUP_NONE = 0,
  ECS_CLEANUP_CLEAR,
  ECS_CLEANUP_REMOVE,
  ECS_CLEANUP_DESTROY
} ecs_cleanup;
ecs_err ecs_component_set_cleanup(ecs_world *w, ecs_component *c,
                                  uint32_t field, ecs_cleanup policy);
ecs_cleanup ecs_component_cleanup(const ecs_component *c, uint32_t field);

/*
** The write bracket: whoever writes the columns of c directly (the
** binding's set, a plugin, a C system) calls ecs_component_write_begin
** before writing and ecs_component_write_end after, with the same rows:
** rows[0 .. n), or, when rows is NULL, the rows first .. first + n. The
** core does it for its own write paths (loads, native and expression
** runs, q:apply). Begin lets an open journal keep what the values were
** (journal.h); end stamps the rows for queries with `changed` terms
** (query.h), tells an owned component's owner (below), and lets the
** journal know. Rows past the size are ignored; a world that has neither
** a journal nor a change query pays a test or two.
**
** One row given alone (rows NULL, n 1) is one complete write: its values
** are final until the next begin of it, so an open journal keeps a copy
** of them at the end (with their hash) and its next delta need not read
** the row again (src/persist/journal_image.c). That makes deltas of
** scattered writes several times faster; never write the row between
** its end and its next begin. A list or a range is a bulk write: the
** journal reads its rows when it needs them.
*/
void ecs_component_write_begin(ecs_world *w, ecs_component *c,
                               const ecs_instance *rows, ecs_instance first,
                               size_t n);
void ecs_component_write_end(ecs_world *w, ecs_component *c,
                             const ecs_instance *rows, ecs_instance first,
                             size_t n);

/*
** A lua cell of c let go of ref (overwritten by whoever writes the
** columns directly): @return true when an open journal keeps it as an
** old value (it comes back through ecs_drain_refs when the journal no
** longer needs it), false when the caller releases it now.
*/
bool ecs_component_keep_ref(ecs_world *w, uint32_t ref);

/*
** Move up to max dropped lua refs of w into buf (any order).
** @return how many were moved; call again while it returns max.
*/
size_t ecs_drain_refs(ecs_world *w, uint32_t *buf, size_t max);

/* @return the number of dropped lua refs waiting to be drained. */
size_t ecs_dropped_refs(const ecs_world *w);

/*
** Owned components: a generic component manager that
** another manager (the transform) creates for itself and drives, so that
** its per-entity values are ordinary columns every bulk path reads and
** writes (queries, q:apply, expression and C systems, q:columns), while
** the owner keeps its rows in step with its own.
**
** An owned component is not registered with the world: no name lookup
** finds it, snapshots and the journal do not see it (the owner saves and
** loads those values as part of its own records), and the world's gc
** and purge do not reach it (the owner runs them through the calls
** below). Its rows move only through these calls, never through a
** query's re-alignment, so the owner may rely on row i of the component
** being its own row i. Queries watch it like any component: every
** structural change here is reported to them.
**
** The owner hears of writes (ecs_component_write_end, which every write
** path calls after writing):
** written(w, ud, c, rows, first, n) with rows[0 .. n) or, when rows is
** NULL, the rows first .. first + n. Fields marked read-only are refused
** as targets by every bulk path (ecs_component_readonly). The public
** calls that would change its rows or schema behind the owner's back
** refuse it: ecs_component_emplace, _reserve, _remove and _redefine
** return ECS_ERR_INVALID, ecs_component_gc reclaims nothing; the journal
** captures none of its rows (it keeps the owner whole).
**
** Implemented in component_owned.c. A C plugin keeps its records in
** one the same way (plugins/pointmass.c), and exposes it to queries through
** its manager class's columns hook (ecs.h).
*/
typedef struct ecs_owner {
  void (*written)(ecs_world *w, void *ud, ecs_component *c,
                  const uint32_t *rows, uint32_t first, size_t n);
} ecs_owner;

/*
** A component named name (not registered: another manager or component
** may have that name) with the given fields, fields whose bit is set in
** readonly (k < 64) read-only. @return ECS_ERR_NOMEM or a schema error.
*/
ecs_err ecs_owned_new(ecs_world *w, const char *name,
                       const ecs_field_def *fields, uint32_t nfields,
                       uint64_t readonly, const ecs_owner *owner, void *ud,
                       ecs_component **out);
void ecs_owned_free(ecs_world *w, ecs_component *c);

/* Room for need rows and a map entry at entity index `index` (UINT32_MAX:
** none): afterwards ecs_owned_append cannot fail. */
ecs_err ecs_owned_reserve(ecs_world *w, ecs_component *c, uint32_t need,
                           uint32_t index);
/* Append e (no instance at its index: the owner removed any dead one
** first) with every field zero; @return its row. */
uint32_t ecs_owned_append(ecs_world *w, ecs_component *c, ecs_entity e);
/* Swap-remove row i (the last row moves into it). */
void ecs_owned_remove_at(ecs_world *w, ecs_component *c, uint32_t i);
/* Exchange rows a and b (values, owners, stamps). */
void ecs_owned_swap(ecs_world *w, ecs_component *c, uint32_t a, uint32_t b);
/* Put the rows in the order of order[0 .. size) (every owner once).
** @return false, nothing changed, when out of memory. */
bool ecs_owned_permute(ecs_world *w, ecs_component *c,
                        const ecs_entity *order);
/* The index's generation wrapped: mark its row's owner purged. */
void ecs_owned_purge(ecs_component *c, uint32_t index);
/* Every row goes, and the blocks (the owner is as new). */
void ecs_owned_clear(ecs_world *w, ecs_component *c);
/* Give c the rows of from (a component made with the same schema and
** filled aside, as by a load): prepare reserves what take needs, take
** cannot fail; from is left empty and the watching queries stale. */
ecs_err ecs_owned_take_prepare(ecs_world *w, ecs_component *c,
                                const ecs_component *from);
void ecs_owned_take(ecs_world *w, ecs_component *c, ecs_component *from);
/* Is c an owned component (another manager drives its rows and hears of
** bulk writes)? */
bool ecs_component_owned(const ecs_component *c);
/* The row whose owner has entity index `index` (alive, dead or purged), or
** ECS_NO_INSTANCE: an owner reusing the index removes that row first. */
uint32_t ecs_owned_find(const ecs_component *c, uint32_t index);
/* Bytes c holds; NULL or the first way its rows differ from rows[0 .. n). */
size_t ecs_owned_bytes(const ecs_world *w, const ecs_component *c);
const char *ecs_owned_check(const ecs_world *w, const ecs_component *c,
                             const ecs_entity *rows, uint32_t n);
/* Field k's column as doubles (an f64 field). */
double *ecs_owned_f64(ecs_component *c, uint32_t k);
/* The change stamps of the rows (NULL while no query watches changes)
** and the stamp of a write now: an owner that writes its rows itself
** stamps them, as ecs_component_write_end would. */
uint32_t *ecs_owned_changed(const ecs_world *w, ecs_component *c,
                             uint32_t *now);
/* The owners column (row i's entity). */
ecs_entity *ecs_owned_owners(ecs_component *c);

/* ------------------------------------------------------------------------
** Disabled entities (docs/queries.md, "Disabled entities"). A disabled
** entity keeps its components (lookups, has and get still see them); the
** queries skip it unless they include disabled entities
** (ecs_query_include_disabled). The flag is a tag the world registers
** when it first needs it, under a name no component can take; it travels
** with snapshots, deltas and undo as any component, and a snapshot leaves
** it out while it holds no record (a destroyed disabled entity's record
** stays until the lazy gc, as with every component).
** --------------------------------------------------------------------- */

#define ECS_DISABLED_NAME "ecs.disabled"

/*
** Disable / enable e. Disabling a disabled entity (or enabling an enabled
** one) changes nothing. Each query's list loses (gains) e in O(1) per
** query of the world.
** @return ECS_ERR_OK; ECS_ERR_DEAD (e is not alive: nothing changed);
**         ECS_ERR_NOMEM; ECS_ERR_PINNED while the tag is pinned.
*/
ecs_err ecs_entity_disable(ecs_world *w, ecs_entity e);
ecs_err ecs_entity_enable(ecs_world *w, ecs_entity e);
/* @return true when e is alive and not disabled. */
bool ecs_entity_enabled(const ecs_world *w, ecs_entity e);
/* @return the tag of disabled entities, or NULL before the world made it. */
ecs_component *ecs_world_disabled(const ecs_world *w);
/*
** Make the tag now (nothing when it exists). ecs_world_load does so for a
** snapshot that holds it; a host about to apply the deltas of a world
** that disables entities calls this first (ecs_delta_open answers
** ECS_ERR_NO_MANAGER naming ECS_DISABLED_NAME otherwise), and so does a
** host that registers components for a load it may undo
** (ecs_component_unregister takes the last registered manager only).
** @return ECS_ERR_OK or ECS_ERR_NOMEM.
*/
ecs_err ecs_world_disabled_ready(ecs_world *w);

#ifdef __cplusplus
}
#endif

#endif
