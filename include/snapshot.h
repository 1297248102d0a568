/*
** snapshot.h -- a world's whole state as bytes, and a world made equal to
** such bytes again (docs/persistence.md has the format byte by byte).
**
** A snapshot holds the entity table (every slot's generation or free
** state and the free queue in order, so a loaded world hands out exactly
** the ids the saved one would have), then every registered manager in
** registration order -- its namespace, name, kind, schema and the bytes
** of its class's save hook, each framed by a length -- then an optional
** section of the host's (the Lua binding keeps the values of lua fields
** there), a directory of all of it, and a checksum (XXH64) over every
** byte before it. Every number the snapshot itself writes is
** little-endian; managers write their payloads with ecs_write_u32 (little
** endian) and ecs_write (the machine's order), so saving and loading are
** refused (ECS_ERR_INVALID) on a big-endian machine rather than produce
** bytes another machine would misread.
**
** Loading is all or nothing: the bytes are checked whole (checksum,
** framing, directory, each manager present in the world with the same
** kind and schema) before anything changes; then the entity table is
** read aside and every manager loads into a twin of itself (the class's
** twin hook), and only when all of them succeeded are they swapped in
** (swap, which cannot fail). So on any error -- bad data, a manager the
** world lacks, out of memory -- the world is exactly as it was.
**
** Layer: world (layers: alloc.h): above the managers and queries, whose
** state it replaces.
*/
#ifndef ECS_SNAPSHOT_H
#define ECS_SNAPSHOT_H

#include "ecs.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
** The format this core writes. It reads it and every older one:
**   1  a field's schema entry is its type alone (cleanup policies were not
**      saved: a load keeps the world's, a new world's components have none);
**      nothing after the entity table; components in their layout 2 (live
**      records only: component_hooks.c)
**   2  a field's entry is its type | its cleanup policy << 8 (ecs_cleanup,
**      component.h: entity fields only), compared with the world's on load;
**      the cursors after the entity table (cursors.c); components in layout
**      3 (every record in its row, the gc cursor, the churn, the stamps)
** Another version is ECS_ERR_VERSION.
*/
#define ECS_SNAPSHOT_VERSION 2u
#define ECS_SNAPSHOT_VERSION_MIN 1u

/*
** What a host adds to a snapshot and how it takes its part back (the Lua
** binding: the values of lua fields). Zeroed: nothing.
*/
typedef struct ecs_snapshot_opts {
  /* save: the host's section, stored as given (NULL, 0: empty) */
  const void *host;
  size_t host_size;
  /* load: called for every non-zero lua reference the snapshot's
  ** components hold, before anything changes: store the host's reference
  ** for it in *out, or return false for one it does not know (the load
  ** then fails with ECS_ERR_CORRUPT). Without it references are taken
  ** over as read. Must not call into the world. */
  bool (*map_ref)(void *ud, uint32_t ref, uint32_t *out);
  /* load: called once every reference was mapped, before anything
  ** changes; an error (the host's section held references no component
  ** used, say) fails the load. May be NULL. */
  ecs_err (*refs_done)(void *ud);
  void *ud;
  /* load: these very bytes as ecs_snapshot_open or ecs_snapshot_frame
  ** read them (a host that opened them to create managers first), so that
  ** they are not framed twice and their checksum is computed once (by the
  ** load, when opened->checked is false); ignored unless its data and
  ** size are the reader's. */
  const struct ecs_snapshot *opened;
  /* load: a generic component (ECS_NS_COMPONENT) of the snapshot that the
  ** world has not registered is skipped instead of failing the load with
  ** ECS_ERR_NO_MANAGER (migration: the Lua binding empties such components
  ** first, so that no lua reference of theirs reaches refs_done). */
  bool skip_unknown;
  /* save: room(out->ud, n) hands out the next n bytes of the output (they
  ** count as written) or NULL when it cannot (ECS_ERR_NOMEM), for an
  ** output in memory: the core then copies each large part (a column)
  ** into that room and hashes it in the same pass, instead of calling
  ** out->write and hashing after (one read of the world's memory, not
  ** two). Small writes still go through out->write: both must append to
  ** the same output. May be NULL. */
  unsigned char *(*room)(void *ud, size_t n);
} ecs_snapshot_opts;

/*
** Write w's snapshot to out. Nothing in w changes.
** @return ECS_ERR_OK, out's error, ECS_ERR_NOMEM (a small scratch block
**         for the directory), ECS_ERR_INVALID on a big-endian machine.
*/
ecs_err ecs_world_save(const ecs_world *w, ecs_writer *out);
ecs_err ecs_world_save_opts(const ecs_world *w, ecs_writer *out,
                            const ecs_snapshot_opts *opts);

/*
** Make w equal to the snapshot held by the bytes [in->pos, in->size),
** all or nothing. Every manager the snapshot holds must be registered in
** w under its namespace and name, with its kind and schema; w's managers
** the snapshot does not hold are emptied (their clear hook). Every query
** of w is made stale (unless every component kept the same owners in the
** same rows: then the match lists still hold); component, query and
** system objects stay valid.
** Listeners are not notified.
** @param failed when not NULL, receives the directory position
**        (ecs_snapshot_manager_at) of the manager an error is about, or
**        UINT32_MAX.
** @return ECS_ERR_OK (in->pos is then in->size); ECS_ERR_CORRUPT (bad,
**         cut or extended bytes, a checksum that does not match, a
**         manager's load refused its part), ECS_ERR_VERSION (another
**         format), ECS_ERR_NO_MANAGER, ECS_ERR_SCHEMA_DIFFERS (another
**         kind, or another schema: migration is not supported),
**         ECS_ERR_NOMEM, ECS_ERR_INVALID (a big-endian machine, or more
**         than one manager in the snapshot whose class loads but has no
**         twin and swap: such a manager is loaded in place, after all the
**         others were staged, which keeps the load all or nothing only
**         when there is one). On error w and in->pos are unchanged.
*/
ecs_err ecs_world_load(ecs_world *w, ecs_reader *in);
ecs_err ecs_world_load_opts(ecs_world *w, ecs_reader *in,
                            const ecs_snapshot_opts *opts, uint32_t *failed);

/*
** Reading a snapshot without a world: what a host needs to create the
** managers of a new world before loading it (ecs.restore).
*/
typedef struct ecs_snapshot {
  const unsigned char *data;
  size_t size;
  /* where the parts are (set by ecs_snapshot_open) */
  size_t entities_size, managers_at, directory_at, host_at, host_size;
  uint32_t manager_count;
  /* the checksum was found to match (ecs_snapshot_open, or
  ** ecs_snapshot_check after ecs_snapshot_frame) */
  bool checked;
} ecs_snapshot;

typedef struct ecs_snapshot_manager {
  ecs_namespace ns;
  const char *name; /* name_len bytes in the snapshot, no zero byte */
  size_t name_len;
  const char *kind; /* kind_len bytes, no zero byte */
  size_t kind_len;
  uint32_t nfields; /* its schema: ecs_snapshot_field */
  const unsigned char *payload; /* what its class's save wrote */
  size_t payload_size;
  const unsigned char *fields;  /* (private) the schema's entries */
} ecs_snapshot_manager;

/*
** Check the size bytes at data as a snapshot (header, version, checksum,
** directory and framing) and fill *s. @return ECS_ERR_OK,
** ECS_ERR_CORRUPT, ECS_ERR_VERSION, ECS_ERR_INVALID (big-endian).
*/
ecs_err ecs_snapshot_open(ecs_snapshot *s, const void *data, size_t size);

/*
** ecs_snapshot_open without the checksum (s->checked is false): for a host
** that reads the managers first and then loads (ecs.restore).
** ecs_world_load_opts, given it as opts->opened, checks the checksum
** itself while it copies the parts (one read of the bytes, not two) and
** refuses a mismatch with ECS_ERR_CORRUPT before anything changes; a host
** that fails before its load blames the bytes when ecs_snapshot_check
** does. Everything read from an unchecked snapshot is framed (every
** length was checked) but may be damaged.
*/
ecs_err ecs_snapshot_frame(ecs_snapshot *s, const void *data, size_t size);

/* Compute the checksum of a framed snapshot: ECS_ERR_OK (s->checked is
** then true) or ECS_ERR_CORRUPT. */
ecs_err ecs_snapshot_check(ecs_snapshot *s);

/* The i-th manager of an opened snapshot (i < s->manager_count), in the
** order they were saved (the saving world's registration order). O(i).
** @return ECS_ERR_OK or ECS_ERR_INVALID for i out of range. */
ecs_err ecs_snapshot_manager_at(const ecs_snapshot *s, uint32_t i,
                                ecs_snapshot_manager *out);

/* Field k < m->nfields of a manager's schema: its type and its name
** (name_len bytes of the snapshot, an identifier for components). */
void ecs_snapshot_field(const ecs_snapshot_manager *m, uint32_t k,
                        ecs_type *type, const char **name, size_t *name_len);
/* Field k < m->nfields's cleanup policy (an ecs_cleanup of component.h:
** ECS_CLEANUP_NONE = 0 for every field of a format 1 snapshot). */
unsigned ecs_snapshot_field_cleanup(const ecs_snapshot_manager *m, uint32_t k);

/* XXH64 (seed 0) of size bytes: the snapshot's checksum. */
uint64_t ecs_snapshot_hash(const void *data, size_t size);

#ifdef __cplusplus
}
#endif

#endif
