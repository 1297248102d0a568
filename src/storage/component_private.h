/*
** component_private.h -- what component.c (the manager: instances, gc,
** queries watching it) and component_hooks.c (its manager interface:
** has, clear, stats, schema, save, load) share: the struct, the column
** layout and the few operations both use. Not installed.
*/
#ifndef ECS_COMPONENT_PRIVATE_H
#define ECS_COMPONENT_PRIVATE_H

#include "component.h"
#include "ecs_private.h"
#include "rowmap.h"
#include "sparse.h"

#define MIN_CAP 8u

/*
** Change ticks (change.c): per row, the clock's tick of the last write
** (at[ECSI_TICK_CHANGED]) and of the creation (at[ECSI_TICK_ADDED]), kept
** only while some query watches that kind (watchers) and the manager has
** rows' room; cap[k] entries each, at least the columns' capacity.
*/
typedef struct ecsi_ticks {
  uint32_t *at[ECSI_TICK_KINDS];
  uint32_t cap[ECSI_TICK_KINDS];
  uint32_t watchers[ECSI_TICK_KINDS];
} ecsi_ticks;

/* change.c: the stamps a snapshot saves
** and a load brings (change.c, "Stamps saved"): per kind, n pairs (u32 row,
** u32 stamp) at at[k], in the stream, which outlives the load's swap;
** given: the stream had them (a layout 3), else the rows are stamped new */
typedef struct ecsi_saved_ticks {
  const unsigned char *at[ECSI_TICK_KINDS];
  uint32_t n[ECSI_TICK_KINDS];
  bool given;
} ecsi_saved_ticks;

/*
** One manager. The schema (name, fields, element sizes, lua fields,
** column prefixes) lives in the meta block with this struct, or after a
** redefinition (component_migrate.c) in a schema block of its own; data,
** size, cap, the map and version change with instances.
*/
struct ecs_component {
  char *name;              /* in the meta block */
  ecs_field_def *field;    /* nfields, names in the meta block */
  uint8_t *elem;           /* size of one value of each field */
  uint32_t *lua_field;     /* indices of the nlua "lua" fields */
  uint32_t *prefix;        /* bytes per instance before column k (k <= nfields) */
  size_t meta_size;        /* bytes of the meta block (this struct first) */
  void *schema_block;      /* the schema after a redefinition, or NULL */
  size_t schema_size;
  uint32_t nfields, nlua;
  size_t stride;           /* bytes per instance over all columns */
  void *data;              /* the one block of columns */
  uint32_t size, cap;
  ecsi_rowmap map;         /* entity index -> instance (rowmap.h) */
  uint32_t gc_cursor;      /* where the lazy gc goes on (ecsi_lazy_gc) */
  uint32_t churn;          /* ecsi_component_churn (ecs_private.h) */
  uint64_t version;        /* structural changes and column moves */
  uint32_t schema_gen;     /* redefinitions (component_migrate.c): field
                           ** numbers read before a change are stale */
  ecsi_watch *watch;       /* the queries that name this manager */
  ecsi_ticks ticks;        /* change ticks, while watched (change.c) */
  struct ecsi_jcomp *journal; /* captures of the open journal, or NULL */
  uint8_t *cleanup;        /* cleanup.c: policy per field, in the meta block */
  uint32_t ncleanup;       /* fields with a policy */
  uint32_t nwatch, watch_cap;
  /* a twin (staged loads, snapshot.c): the manager it stands in for, and
  ** a load deferred to the swap -- the owner list and columns in the
  ** stream, checked -- or NULL */
  const struct ecs_component *of;
  const unsigned char *defer_owners, *defer_cols;
  uint32_t defer_count;
  ecsi_saved_ticks loaded_ticks; /* a twin's: the stamps its load read */
  /* an owned component (component_owned.c): the manager that drives its
  ** rows and hears of bulk writes, or NULL; fields no bulk path writes */
  const struct ecs_owner *owner;
  void *owner_ud;
  uint64_t readonly; /* bit k: field k (k < 64) */
  uint32_t pins;     /* raw pointers out (ecs_component_pin): rows fixed */
};

/*
** Byte offset of field k's column (k == nfields: the end of the block).
** prefix[k] is the bytes one instance takes in the columns before k, so
** cap instances of each take prefix[k] * cap: the columns are laid out
** back to back, and a multiple-of-8 cap keeps each one aligned.
*/
static inline size_t col_offset(const ecs_component *c, uint32_t k, uint32_t cap) {
  return (size_t)c->prefix[k] * cap;
}

static inline ecs_entity *owners(const ecs_component *c) {
  return (ecs_entity *)c->data;
}

static inline uint8_t *col(const ecs_component *c, uint32_t k) {
  return (uint8_t *)c->data + col_offset(c, k, c->cap);
}

/* Field k's word in the schemas that snapshots and deltas write and
** compare: its type, and its cleanup policy (cleanup.c) in bits 8-15, so
** that a schema is compared whole. */
static inline uint32_t ecsi_field_word(const ecs_component *c, uint32_t k) {
  return (uint32_t)c->field[k].type | (uint32_t)c->cleanup[k] << 8;
}

/* The map's entry for index: an instance, or ECS_NO_INSTANCE. */
static inline uint32_t map_get(const ecs_component *c, uint32_t index) {
  return ecsi_rowmap_get(&c->map, owners(c), index);
}

/*
** schema.c: a schema's arrays laid out in one span of bytes: field
** definitions, element sizes, cleanup policies (zero), lua field indices,
** column prefixes, then the field names. ecs_component_new puts the span
** after the struct in the meta block; a redefinition (component_migrate.c)
** in a block of its own (block, size).
*/
typedef struct ecsi_schema {
  void *block;
  size_t size;
  ecs_field_def *field;
  uint8_t *elem, *cleanup;
  uint32_t *lua_field, *prefix;
  uint32_t nfields, nlua;
  size_t stride;
} ecsi_schema;
/* Bytes of the span for defs[0 .. n) (a multiple of 8 before the names). */
size_t ecsi_schema_size(const ecs_field_def *defs, uint32_t n);
/* Lay the span out at at (8-aligned, ecsi_schema_size bytes, zeroed) and
** describe it in *s (block and size left NULL and 0). */
void ecsi_schema_fill(void *at, const ecs_field_def *defs, uint32_t n,
                      ecsi_schema *s);

/* component.c: room in the world's drop list for nlua more lua cells; the
** refs of instance i to that list; every watching query made stale. */
ecs_err ecsi_component_refs_reserve(ecs_world *w, size_t nlua);
void ecsi_component_drop_refs(ecs_world *w, ecs_component *c, uint32_t i);
void ecsi_component_tell_stale(ecs_world *w, ecs_component *c);
/* The barrier's news of c's rows for whoever watches them (the queries):
** e got an instance of c (added) or lost it; e's instance moved to row;
** c's rows were permuted or replaced wholesale, in keep's order (NULL:
** none's). Inline: add and remove pay one test while nobody listens. */
static inline void ecsi_component_tell_changed(ecs_world *w, ecs_component *c,
                                               ecs_entity e, bool added) {
  ecsi_tell(w, ECSI_EV_INSTANCE_ADDED, c, e, 0, added, NULL);
}
static inline void ecsi_component_tell_moved(ecs_world *w, ecs_component *c,
                                             ecs_entity e, uint32_t row) {
  ecsi_tell(w, ECSI_EV_INSTANCE_MOVED, c, e, row, 0, NULL);
}
static inline void ecsi_component_tell_reordered(ecs_world *w, ecs_component *c,
                                                 const void *keep) {
  ecsi_tell(w, ECSI_EV_ROWS_REORDERED, c, ECS_NULL, 0, 0, keep);
}
/* component.c, for component_owned.c: swap-remove instance i (drops its
** refs, tells the watching queries); a manager made but not registered
** (ecs_component_new's first half: schema checked, name copied); free. */
void ecsi_component_remove_at(ecs_world *w, ecs_component *c, uint32_t i);
ecs_err ecsi_component_make(ecs_world *w, const char *name,
                            const ecs_field_def *fields, uint32_t nfields,
                            ecs_component **out);
void ecsi_component_free(ecs_world *w, void *self);
/* A tag registered under a name of the core's own (ECS_DISABLED_NAME),
** which ecs_component_new refuses: disabled.c. */
ecs_err ecsi_component_new_reserved(ecs_world *w, const char *name,
                                    ecs_component **out);
const char *ecsi_component_check(const ecs_world *w, const void *self);
ecs_err ecsi_component_data_reserve(ecs_world *w, ecs_component *c,
                                    uint32_t need);
void ecsi_component_zero_row(ecs_component *c, uint32_t i);
void ecsi_component_put_values(ecs_world *w, ecs_component *c, uint32_t i,
                               const unsigned char *packed);
/* ecsi_component_reorder for owned components too (their owner's call) */
bool ecsi_component_reorder_rows(ecs_world *w, ecs_component *c,
                                 const ecs_entity *first, uint32_t n,
                                 const struct ecs_query *keep);

/*
** component_layout.c: a layout of c's rows (its size, gc cursor and churn,
** and the owner of every row that differs from c's, sorted by row), and
** the three steps that give c that layout: check (ECS_ERR_CORRUPT;
** sorted: room for n owners), reserve (check included; then room holds
** what apply needs, released by apply or ecsi_layout_release), apply.
*/
typedef struct ecsi_layout_row {
  uint32_t row;
  ecs_entity owner;
} ecsi_layout_row;
typedef struct ecsi_layout {
  uint32_t size, gc_cursor, churn;
  const ecsi_layout_row *rows;
  uint32_t n;
} ecsi_layout;
typedef struct ecsi_layout_room {
  unsigned char *block;
  size_t bytes;
  ecs_entity *sorted;  /* the owners, by index */
  unsigned char *data; /* each owner's values and stamps, gathered */
  /* lua cells the apply may send to the drop list or add (its rows that
  ** change owner and the rows it adds): the caller reserves them with the
  ** rest of its operation's, in one ecsi_component_refs_reserve (reserves
  ** are not cumulative) */
  size_t refs;
} ecsi_layout_room;
/* Sort pairs by row (the journal records them in the order rows changed). */
void ecsi_layout_sort(ecsi_layout_row *rows, uint32_t n);
ecs_err ecsi_layout_check(const ecs_world *w, const ecs_component *c,
                          const ecsi_layout *l, ecs_entity *sorted);
ecs_err ecsi_layout_reserve(ecs_world *w, ecs_component *c,
                            const ecsi_layout *l, ecsi_layout_room *room);
void ecsi_layout_release(ecs_world *w, ecsi_layout_room *room);
/* After a reserve: does the layout give e (its very handle) a row? */
bool ecsi_layout_holds(const ecs_component *c, const ecsi_layout *l,
                       const ecsi_layout_room *room, ecs_entity e);
void ecsi_layout_apply(ecs_world *w, ecs_component *c, const ecsi_layout *l,
                       ecsi_layout_room *room);

/* change.c: the stamp arrays (see ecsi_ticks). */
ecs_err ecsi_ticks_save(const ecs_world *w, const ecs_component *c,
                        ecs_writer *out);
ecs_err ecsi_ticks_read(const ecs_world *w, ecs_reader *in, uint32_t count,
                        ecsi_saved_ticks *out);
/* Room in c's arrays, an array made for every kind t has stamps of. */
ecs_err ecsi_ticks_keep(ecs_world *w, ecs_component *c,
                        const ecsi_saved_ticks *t, uint32_t cap);
/* c's rows [0, size) stamped as t says. */
void ecsi_ticks_load(ecs_world *w, ecs_component *c, const ecsi_saved_ticks *t);
/* Row i's stamps, per kind (a kind c keeps no stamps of is left out). */
static inline void ecsi_ticks_set(ecs_component *c, uint32_t i,
                                  const uint32_t *stamp) {
  for (int k = 0; k < ECSI_TICK_KINDS; k++)
    if (c->ticks.at[k] != NULL) c->ticks.at[k][i] = stamp[k];
}
ecs_err ecsi_ticks_reserve(ecs_world *w, ecs_component *c, uint32_t cap);
void ecsi_ticks_free(ecs_world *w, ecs_component *c);
size_t ecsi_ticks_bytes(const ecs_component *c);
void ecsi_ticks_stamp_new(const ecs_world *w, ecs_component *c,
                          uint32_t first, uint32_t n);
bool ecsi_ticks_alloc_like(ecs_world *w, const ecs_component *c,
                           uint32_t **into);
void ecsi_ticks_permute(ecs_world *w, ecs_component *c, const uint32_t *dest,
                        uint32_t **into);
/* The swap of a remove: row from's stamps go to row to. */
static inline void ecsi_ticks_move(ecs_component *c, uint32_t to,
                                   uint32_t from) {
  for (int k = 0; k < ECSI_TICK_KINDS; k++)
    if (c->ticks.at[k] != NULL) c->ticks.at[k][to] = c->ticks.at[k][from];
}

/* component.c: put the state of c at index: absent (owner 0: any record
** at index removed), or owner's instance with the packed values (lua
** cells as references the instance takes over; the ones it held are
** dropped unless equal). Room must have been reserved (ecs_component_reserve
** for index). Notifies no listener; tells queries; stamps changes. */
void ecsi_component_put(ecs_world *w, ecs_component *c, uint32_t index,
                        ecs_entity owner, const unsigned char *packed);

/*
** News of the component managers' changes, through the change barrier
** (barrier.h): before an instance of the entity at index is added,
** removed or overwritten whole; before row (UINT32_MAX: the size or gc
** cursor) or every row may get another owner. The journal hears them to
** keep the state at its mark; nobody listening costs one test.
*/
static inline void ecsi_tell_instance(ecs_world *w, ecs_component *c,
                                      uint32_t index) {
  ecsi_tell(w, ECSI_EV_INSTANCE_BEGIN, c, ECS_NULL, index, 0, NULL);
}
static inline void ecsi_tell_layout(ecs_world *w, ecs_component *c,
                                    uint32_t row) {
  ecsi_tell(w, ECSI_EV_LAYOUT, c, ECS_NULL, row, 1, NULL);
}
static inline void ecsi_tell_layout_all(ecs_world *w, ecs_component *c) {
  ecsi_tell(w, ECSI_EV_LAYOUT, c, ECS_NULL, 0, 0, NULL);
}

/* component_hooks.c: the manager class's hooks (ecs.h, ecs_manager_class). */
bool ecsi_component_has(const ecs_world *w, const void *self, ecs_entity e);
void ecsi_component_clear(ecs_world *w, void *self);
void ecsi_component_stats(const ecs_world *w, const void *self,
                          ecs_manager_stats *out);
uint32_t ecsi_component_schema(const ecs_world *w, const void *self,
                               ecs_field_def *out, uint32_t max);
ecs_err ecsi_component_save(const ecs_world *w, const void *self,
                            ecs_writer *out);
ecs_err ecsi_component_load(ecs_world *w, void *self, ecs_reader *in);
void *ecsi_component_twin(ecs_world *w, const void *self);
void ecsi_component_swap(ecs_world *w, void *self, void *twin);
/* A twin loaded the same owners in the same rows as its component's: its
** swap changes values only (queries stay as they are). */
bool ecsi_component_twin_keeps_rows(const void *twin);

#endif
