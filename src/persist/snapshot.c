/*
** snapshot.c -- save a world whole, load it back all or nothing
** (snapshot.h; docs/persistence.md has the format byte by byte).
**
**   header     "ECSS", u32 version (2; 1 is read too), u32 flags (0)
**   entities   entity.c's table: slots, then the free queue; then (since
**              version 2) cursors.c's: the change clock, the change
**              queries' cursors, the systems' owed time
**   payloads   each manager's save hook output, in registration order
**   host       the host's section (the Lua binding's lua values)
**   directory  u64 entities size, u32 manager count, per manager its
**              namespace, name, kind, schema (per field a u32 word, the
**              type | the cleanup policy << 8, and the name; format 1:
**              the type alone) and u64 payload size, then u64 host size
**   trailer    u64 offset of the directory, u64 XXH64 of every byte
**              before this last field
** Every number written here is little-endian. The directory comes last
** so that a save streams through any writer (the payload sizes are known
** only once written); a load holds the whole snapshot in memory, reads
** the trailer first and checks that the parts tile the bytes exactly (no
** gap, no overlap, nothing after), so nothing is skipped silently.
**
** Loading, all or nothing: (1) open: header, directory (and checksum,
** which a load given bytes not checked yet computes while it copies the
** parts: the entity slots and the component columns are hashed in the
** pass that copies them, the rest when (4) is done); (2)
** match every manager of the snapshot to the world's (namespace and
** name), with its kind and schema; (3) read the entity table aside and
** swap it in (a second swap undoes it: nothing allocated); (4) load each
** manager into a twin of itself (class hook twin), which checks its
** entities against the new table; (5) map lua references through the
** host; (6) commit: swap each twin in (class hook swap, cannot fail; a
** component's reports the old records' lua references), free the twins,
** which now hold the old records, clear the managers the snapshot does
** not hold, make every query stale. Any failure in (1)-(5) frees the
** twins unswapped and swaps the old entity table back: the world is as
** it was (the drop list of lua references may have grown). Peak memory is
** the old state and the new side by side, as for one manager's load.
**
** Layer: world (layers: alloc.h).
*/
#include <string.h>

#include "checksum.h"
#include "component.h"
#include "ecs_private.h"
#include "snapshot.h"
#include "journal_private.h"

#define HEADER_SIZE 12u
#define TRAILER_SIZE 16u
/* the smallest directory entry: ns, name length and one byte, kind
** length, field count, payload size */
#define ENTRY_MIN (4u + 4u + 1u + 4u + 4u + 8u)

static const unsigned char magic[4] = {'E', 'C', 'S', 'S'};

static void put_u64(unsigned char *b, uint64_t v) {
  for (int k = 0; k < 8; k++) b[k] = (unsigned char)(v >> (8 * k));
}

uint64_t ecs_snapshot_hash(const void *data, size_t size) {
  ecsi_xxh64 s;
  ecsi_xxh64_init(&s);
  ecsi_xxh64_update(&s, (const unsigned char *)data, size);
  return ecsi_xxh64_digest(&s);
}

/* ------------------------------------------------------------------------
** Save
** --------------------------------------------------------------------- */

/*
** The writer every part goes through: it forwards to the caller's
** writer, counts the bytes (the directory's sizes and offsets) and hashes
** them. Large blocks (a component's column) go in pieces of 32 KB, each
** hashed right after it was forwarded, while it is still in cache.
*/
typedef struct hwriter {
  ecs_writer *out;
  unsigned char *(*room)(void *ud, size_t n); /* ecs_snapshot_opts */
  ecsi_xxh64 h;
  uint64_t count;
} hwriter;

#define PIECE ((size_t)32 * 1024)
#define ROOM_AT_LEAST 4096u /* smaller writes: through out->write */

static ecs_err hw_write(void *ud, const void *data, size_t size) {
  hwriter *hw = (hwriter *)ud;
  const unsigned char *p = (const unsigned char *)data;
  if (hw->room != NULL && size >= ROOM_AT_LEAST) {
    unsigned char *dst = hw->room(hw->out->ud, size);
    if (dst == NULL) return ECS_ERR_NOMEM;
    ecsi_xxh64_update_copy(&hw->h, dst, p, size);
    hw->count += size;
    return ECS_ERR_OK;
  }
  while (size > 0) {
    size_t k = size < PIECE ? size : PIECE;
    ecs_err err = ecs_write(hw->out, p, k);
    if (err != ECS_ERR_OK) return err;
    ecsi_xxh64_update(&hw->h, p, k);
    hw->count += k;
    p += k;
    size -= k;
  }
  return ECS_ERR_OK;
}

static ecs_err write_u64(ecs_writer *out, uint64_t v) {
  unsigned char b[8];
  put_u64(b, v);
  return ecs_write(out, b, sizeof b);
}

static ecs_err write_text(ecs_writer *out, const char *s) {
  size_t len = s != NULL ? strlen(s) : 0;
  ecs_err err;
  if (len > UINT32_MAX) return ECS_ERR_INVALID;
  err = ecs_write_u32(out, (uint32_t)len);
  if (err == ECS_ERR_OK) err = ecs_write(out, s, len);
  return err;
}

/*
** A field's schema word: its type, and its cleanup policy (component.h)
** in bits 8-15: the policy is part of the definition that a load compares
** and ecs.restore recreates. Managers other than generic components have
** no policies.
*/
static uint32_t field_word(const ecsi_manager *m, const ecs_field_def *def,
                           uint32_t k) {
  uint32_t p = ecs_component_is(m->cls)
                   ? (uint32_t)ecs_component_cleanup((const ecs_component *)m->self, k)
                   : 0u;
  return (uint32_t)def->type | p << 8;
}

/* The type and policy of a word, checked: a known type, a known policy,
** a policy on entity fields only, nothing above. */
static bool split_word(uint32_t word, uint32_t version, uint32_t *type,
                       uint32_t *policy) {
  *type = version < 2 ? word : word & 0xffu;
  *policy = version < 2 ? 0u : word >> 8;
  return *type < (uint32_t)ECS_TYPE__COUNT &&
         *policy <= (uint32_t)ECS_CLEANUP_DESTROY &&
         (*policy == 0 || *type == (uint32_t)ECS_ENTITY);
}

/* One directory entry: namespace, name, kind, schema, payload size. */
static ecs_err write_entry(const ecs_world *w, const ecsi_manager *m,
                           uint64_t payload, ecs_writer *out) {
  ecs_field_def defs[ECS_MAX_FIELDS];
  uint32_t nf = 0;
  ecs_err err;
  if (m->cls->schema != NULL) nf = m->cls->schema(w, m->self, defs, ECS_MAX_FIELDS);
  if (nf > ECS_MAX_FIELDS) return ECS_ERR_INVALID; /* a schema no load could match */
  err = ecs_write_u32(out, (uint32_t)m->ns);
  if (err == ECS_ERR_OK) err = write_text(out, m->name);
  if (err == ECS_ERR_OK) err = write_text(out, m->cls->kind);
  if (err == ECS_ERR_OK) err = ecs_write_u32(out, nf);
  for (uint32_t k = 0; k < nf && err == ECS_ERR_OK; k++) {
    err = ecs_write_u32(out, field_word(m, &defs[k], k));
    if (err == ECS_ERR_OK) err = write_text(out, defs[k].name);
  }
  if (err == ECS_ERR_OK) err = write_u64(out, payload);
  return err;
}

/* The tag of disabled entities while it holds no record: left out, so
** that a world that disabled nothing (or enabled all again) saves the
** bytes it would have saved without it. (A disabled entity destroyed
** leaves a dead record until the lazy gc, as with every component: it is
** saved, so that a delta that drops it finds it in the replica.) */
static bool left_out(const ecs_world *w, const ecsi_manager *m) {
  return m->self == (void *)w->disabled && w->disabled != NULL &&
         ecs_component_size(w->disabled) == 0;
}

ecs_err ecs_world_save_opts(const ecs_world *w, ecs_writer *out,
                            const ecs_snapshot_opts *opts) {
  hwriter hw;
  ecs_writer o;
  uint64_t *psize = NULL, start, esize, dir_at;
  size_t n = w->manager_count;
  unsigned char b[8];
  size_t left = 0;
  ecs_err err;
  if (!ecsi_little_endian()) return ECS_ERR_INVALID;
  for (size_t i = 0; i < n; i++) left += left_out(w, &w->manager[i]);
  hw.out = out;
  hw.room = opts != NULL ? opts->room : NULL;
  hw.count = 0;
  ecsi_xxh64_init(&hw.h);
  o.write = hw_write;
  o.ud = &hw;
  if (n > 0) { /* a const world: uncounted scratch, like its checks */
    psize = (uint64_t *)ecsi_scratch_realloc(w, NULL, 0, n * sizeof *psize);
    if (psize == NULL) return ECS_ERR_NOMEM;
  }
  err = ecs_write(&o, magic, sizeof magic);
  if (err == ECS_ERR_OK) err = ecs_write_u32(&o, ECS_SNAPSHOT_VERSION);
  if (err == ECS_ERR_OK) err = ecs_write_u32(&o, 0); /* flags */
  start = hw.count;
  if (err == ECS_ERR_OK) err = ecsi_entities_save(w, &o);
  if (err == ECS_ERR_OK) err = ecsi_cursors_save(w, &o);
  esize = hw.count - start;
  for (size_t i = 0; i < n && err == ECS_ERR_OK; i++) {
    const ecsi_manager *m = &w->manager[i];
    if (left_out(w, m)) continue;
    start = hw.count;
    if (m->cls->save != NULL) err = m->cls->save(w, m->self, &o);
    psize[i] = hw.count - start;
  }
  if (err == ECS_ERR_OK && opts != NULL && opts->host_size > 0)
    err = ecs_write(&o, opts->host, opts->host_size);
  dir_at = hw.count;
  if (err == ECS_ERR_OK) err = write_u64(&o, esize);
  if (err == ECS_ERR_OK) err = ecs_write_u32(&o, (uint32_t)(n - left));
  for (size_t i = 0; i < n && err == ECS_ERR_OK; i++)
    if (!left_out(w, &w->manager[i]))
      err = write_entry(w, &w->manager[i], psize[i], &o);
  if (err == ECS_ERR_OK)
    err = write_u64(&o, opts != NULL ? (uint64_t)opts->host_size : 0);
  if (err == ECS_ERR_OK) err = write_u64(&o, dir_at);
  if (err == ECS_ERR_OK) { /* the checksum, not hashed itself */
    put_u64(b, ecsi_xxh64_digest(&hw.h));
    err = ecs_write(out, b, sizeof b);
  }
  if (psize != NULL) ecsi_scratch_realloc(w, psize, n * sizeof *psize, 0);
  return err;
}

ecs_err ecs_world_save(const ecs_world *w, ecs_writer *out) {
  return ecs_world_save_opts(w, out, NULL);
}

/* ------------------------------------------------------------------------
** Opening a snapshot: the header, the checksum, the directory
** --------------------------------------------------------------------- */

/* A cursor over [at, end) that fails instead of reading past end. */
typedef struct cursor {
  const unsigned char *p;
  size_t at, end;
} cursor;

static bool take(cursor *c, size_t n, const unsigned char **out) {
  if (c->end - c->at < n) return false;
  if (out != NULL) *out = c->p + c->at;
  c->at += n;
  return true;
}

static bool take_u32(cursor *c, uint32_t *v) {
  const unsigned char *q;
  if (!take(c, 4, &q)) return false;
  *v = ecsi_get_u32(q);
  return true;
}

static bool take_u64(cursor *c, uint64_t *v) {
  const unsigned char *q;
  if (!take(c, 8, &q)) return false;
  *v = ecsi_get_u64(q);
  return true;
}

/* A length-prefixed text of at least min bytes with no zero byte. */
static bool take_text(cursor *c, size_t min, const char **s, size_t *len) {
  uint32_t n;
  const unsigned char *q;
  if (!take_u32(c, &n) || n < min || !take(c, n, &q)) return false;
  if (n > 0 && memchr(q, 0, n) != NULL) return false;
  *s = (const char *)q;
  *len = n;
  return true;
}

/*
** Read the directory entry at c into m (payload not set). Checked: a
** known namespace, a non-empty name, every field's type (and, from format
** 2, policy) known and name non-empty, at most ECS_MAX_FIELDS fields.
*/
static bool take_entry(cursor *c, ecs_snapshot_manager *m, uint64_t *psize,
                       uint32_t version) {
  uint32_t ns, nf;
  if (!take_u32(c, &ns) || ns > (uint32_t)ECS_NS_COMPONENT ||
      !take_text(c, 1, &m->name, &m->name_len) ||
      !take_text(c, 0, &m->kind, &m->kind_len) || !take_u32(c, &nf) ||
      nf > ECS_MAX_FIELDS)
    return false;
  m->ns = (ecs_namespace)ns;
  m->nfields = nf;
  m->fields = c->p + c->at;
  for (uint32_t k = 0; k < nf; k++) {
    uint32_t word, type, policy;
    const char *s;
    size_t len;
    if (!take_u32(c, &word) || !split_word(word, version, &type, &policy) ||
        !take_text(c, 1, &s, &len))
      return false;
  }
  return take_u64(c, psize);
}

/* The header, the checksum (when hashed: else s->checked stays false),
** the directory and the framing. */
static ecs_err open_snapshot(ecs_snapshot *s, const void *data, size_t size,
                             bool hashed) {
  const unsigned char *p = (const unsigned char *)data;
  uint64_t dir_at, esize, hsize, used;
  uint32_t n, version;
  cursor c;
  if (!ecsi_little_endian()) return ECS_ERR_INVALID;
  memset(s, 0, sizeof *s);
  if (size < HEADER_SIZE + TRAILER_SIZE || memcmp(p, magic, 4) != 0)
    return ECS_ERR_CORRUPT;
  version = ecsi_get_u32(p + 4);
  if (version < ECS_SNAPSHOT_VERSION_MIN || version > ECS_SNAPSHOT_VERSION)
    return ECS_ERR_VERSION;
  if (hashed && ecs_snapshot_hash(p, size - 8) != ecsi_get_u64(p + size - 8))
    return ECS_ERR_CORRUPT;
  if (ecsi_get_u32(p + 8) != 0) return ECS_ERR_CORRUPT; /* flags */
  dir_at = ecsi_get_u64(p + size - TRAILER_SIZE);
  if (dir_at < HEADER_SIZE || dir_at > size - TRAILER_SIZE) return ECS_ERR_CORRUPT;
  c.p = p;
  c.at = (size_t)dir_at;
  c.end = size - TRAILER_SIZE;
  if (!take_u64(&c, &esize) || !take_u32(&c, &n) ||
      n > (c.end - c.at) / ENTRY_MIN)
    return ECS_ERR_CORRUPT;
  /* the parts must tile [0, dir_at): header, entities, payloads, host */
  used = HEADER_SIZE;
  if (esize < 8 || esize > dir_at - used) return ECS_ERR_CORRUPT;
  used += esize;
  s->managers_at = (size_t)used;
  for (uint32_t i = 0; i < n; i++) {
    ecs_snapshot_manager m;
    uint64_t ps;
    if (!take_entry(&c, &m, &ps, version) || ps > dir_at - used)
      return ECS_ERR_CORRUPT;
    used += ps;
  }
  if (!take_u64(&c, &hsize) || hsize != dir_at - used || c.at != c.end)
    return ECS_ERR_CORRUPT;
  s->data = p;
  s->size = size;
  s->entities_size = (size_t)esize;
  s->directory_at = (size_t)dir_at;
  s->host_at = (size_t)used;
  s->host_size = (size_t)hsize;
  s->manager_count = n;
  s->checked = hashed;
  return ECS_ERR_OK;
}

ecs_err ecs_snapshot_open(ecs_snapshot *s, const void *data, size_t size) {
  return open_snapshot(s, data, size, true);
}

ecs_err ecs_snapshot_frame(ecs_snapshot *s, const void *data, size_t size) {
  return open_snapshot(s, data, size, false);
}

static bool checksum_matches(const ecs_snapshot *s, uint64_t hash) {
  return hash == ecsi_get_u64(s->data + s->size - 8);
}

ecs_err ecs_snapshot_check(ecs_snapshot *s) {
  if (!s->checked && s->data != NULL &&
      checksum_matches(s, ecs_snapshot_hash(s->data, s->size - 8)))
    s->checked = true;
  return s->checked ? ECS_ERR_OK : ECS_ERR_CORRUPT;
}

/* The format version of an opened snapshot. */
static uint32_t version_of(const ecs_snapshot *s) {
  return ecsi_get_u32(s->data + 4);
}

/* The entries in order from the first: each call fills m with the next
** (the directory was checked by ecs_snapshot_open). */
typedef struct dir_walk {
  cursor c;
  size_t payload_at;
} dir_walk;

static void walk_start(const ecs_snapshot *s, dir_walk *dw) {
  dw->c.p = s->data;
  dw->c.at = s->directory_at + 12; /* past the entities size and count */
  dw->c.end = s->size - TRAILER_SIZE;
  dw->payload_at = s->managers_at;
}

static void walk_next(const ecs_snapshot *s, dir_walk *dw,
                      ecs_snapshot_manager *m) {
  uint64_t ps = 0;
  (void)take_entry(&dw->c, m, &ps, version_of(s));
  m->payload = s->data + dw->payload_at;
  m->payload_size = (size_t)ps;
  dw->payload_at += (size_t)ps;
}

ecs_err ecs_snapshot_manager_at(const ecs_snapshot *s, uint32_t i,
                                ecs_snapshot_manager *out) {
  dir_walk dw;
  if (i >= s->manager_count) return ECS_ERR_INVALID;
  walk_start(s, &dw);
  for (uint32_t k = 0; k <= i; k++) walk_next(s, &dw, out);
  return ECS_ERR_OK;
}

void ecs_snapshot_field(const ecs_snapshot_manager *m, uint32_t k,
                        ecs_type *type, const char **name, size_t *name_len) {
  const unsigned char *p = m->fields;
  for (uint32_t j = 0;; j++) {
    uint32_t t = ecsi_get_u32(p), len = ecsi_get_u32(p + 4);
    if (j == k) {
      *type = (ecs_type)(t & 0xffu); /* format 2: the policy above */
      *name = (const char *)(p + 8);
      *name_len = len;
      return;
    }
    p += 8 + len;
  }
}

unsigned ecs_snapshot_field_cleanup(const ecs_snapshot_manager *m, uint32_t k) {
  const unsigned char *p = m->fields;
  for (uint32_t j = 0; j < k; j++) p += 8 + ecsi_get_u32(p + 4);
  return ecsi_get_u32(p) >> 8; /* 0 in format 1: types are below 256 */
}

/* ------------------------------------------------------------------------
** Load
** --------------------------------------------------------------------- */

/* The world's manager registered under m's namespace and name, or -1. */
static long find_manager(const ecs_world *w, const ecs_snapshot_manager *m) {
  for (uint32_t j = 0; j < w->manager_count; j++) {
    const ecsi_manager *x = &w->manager[j];
    if (x->ns == m->ns && x->name_size == m->name_len + 1 &&
        memcmp(x->name, m->name, m->name_len) == 0)
      return (long)j;
  }
  return -1;
}

static bool same_text(const char *a, const char *b, size_t blen) {
  size_t alen = a != NULL ? strlen(a) : 0;
  return alen == blen && (blen == 0 || memcmp(a, b, blen) == 0);
}

/* Does world manager x have m's kind and schema? The cleanup policies are
** part of it (a snapshot of format 1 did not save them: the world's stand). */
static bool same_schema(const ecs_world *w, const ecsi_manager *x,
                        const ecs_snapshot_manager *m, uint32_t version) {
  ecs_field_def defs[ECS_MAX_FIELDS];
  uint32_t nf = 0;
  if (!same_text(x->cls->kind, m->kind, m->kind_len)) return false;
  if (x->cls->schema != NULL) nf = x->cls->schema(w, x->self, defs, ECS_MAX_FIELDS);
  if (nf != m->nfields) return false;
  for (uint32_t k = 0; k < nf; k++) {
    ecs_type t;
    const char *name;
    size_t len;
    ecs_snapshot_field(m, k, &t, &name, &len);
    if (t != defs[k].type || !same_text(defs[k].name, name, len)) return false;
    if (version >= 2 &&
        ecs_snapshot_field_cleanup(m, k) != field_word(x, &defs[k], k) >> 8)
      return false;
  }
  return true;
}

static bool staged(const ecs_manager_class *cls) {
  return cls->load != NULL && cls->twin != NULL && cls->swap != NULL;
}

/*
** Through the host, the lua references of every instance of a staged
** component twin: each non-zero cell becomes the host's reference for
** it. A partly mapped twin is never swapped in (the load fails), and a
** twin that is dropped unswapped is freed, which reports nothing, so no
** cell is ever reported to the host as dropped: the host releases what
** it made.
*/
static ecs_err map_refs(const ecs_snapshot_opts *opts, ecs_component *c) {
  uint32_t nf = ecs_component_field_count(c), n = ecs_component_size(c);
  for (uint32_t k = 0; k < nf; k++) {
    uint32_t *cell;
    if (ecs_component_field(c, k)->type != ECS_LUA) continue;
    cell = (uint32_t *)ecs_component_column(c, k);
    for (uint32_t i = 0; i < n; i++)
      if (cell[i] != 0 && !opts->map_ref(opts->ud, cell[i], &cell[i]))
        return ECS_ERR_CORRUPT;
  }
  return ECS_ERR_OK;
}

/* A reader over one part of the snapshot. */
static ecs_reader part_reader(const unsigned char *p, size_t size) {
  ecs_reader r;
  r.data = p;
  r.size = size;
  r.pos = 0;
  return r;
}

ecs_err ecs_world_load_opts(ecs_world *w, ecs_reader *in,
                            const ecs_snapshot_opts *opts, uint32_t *failed) {
  ecs_snapshot s;
  ecsi_entity_table tab;
  ecsi_cursors cur;
  dir_walk dw;
  uint32_t n, nw = w->manager_count, direct = UINT32_MAX, bad = UINT32_MAX;
  uint32_t *which = NULL;  /* snapshot entry -> world manager */
  void **twin = NULL;      /* snapshot entry -> its twin, or NULL */
  uint8_t *matched = NULL; /* world manager -> held by the snapshot */
  size_t scratch = 0;
  bool swapped = false, rows_kept = true;
  ecsi_xxh64_cursor sum; /* the checksum while w->load_hash is &sum */
  ecs_err err;
  memset(&cur, 0, sizeof cur);
  if (w->pins != 0) return ECS_ERR_PINNED;
  if (in->pos > in->size) return ECS_ERR_CORRUPT;
  if (opts != NULL && opts->opened != NULL &&
      opts->opened->data == in->data + in->pos &&
      opts->opened->size == in->size - in->pos && ecsi_little_endian()) {
    s = *opts->opened;
    err = ECS_ERR_OK;
  } else {
    err = ecs_snapshot_frame(&s, in->data + in->pos, in->size - in->pos);
  }
  if (err != ECS_ERR_OK) goto done;
  if (!s.checked) { /* hashed as the parts are copied: (1) ends at (5) */
    ecsi_xxh64_cursor_init(&sum, s.data, s.data + s.size - 8);
    w->load_hash = &sum;
  }
  n = s.manager_count;
  /* the tag of disabled entities, made first when the snapshot holds it
  ** (component.h, "Disabled entities"; a failed load leaves it empty) */
  if (w->disabled == NULL) {
    walk_start(&s, &dw);
    for (uint32_t i = 0; i < n && err == ECS_ERR_OK; i++) {
      ecs_snapshot_manager m;
      walk_next(&s, &dw, &m);
      if (m.ns == ECS_NS_COMPONENT &&
          same_text(ECS_DISABLED_NAME, m.name, m.name_len))
        err = ecs_world_disabled_ready(w);
    }
    if (err != ECS_ERR_OK) goto done;
    nw = w->manager_count;
  }
  /* (2) match: every entry to a world manager, once, kind and schema */
  scratch = (size_t)n * (sizeof *which + sizeof *twin) + nw;
  if (scratch > 0) {
    unsigned char *b = (unsigned char *)ecsi_realloc(w, NULL, 0, scratch);
    if (b == NULL) {
      err = ECS_ERR_NOMEM;
      goto done;
    }
    twin = (void **)(void *)b;
    which = (uint32_t *)(void *)(b + (size_t)n * sizeof *twin);
    matched = b + (size_t)n * (sizeof *twin + sizeof *which);
    memset(twin, 0, (size_t)n * sizeof *twin);
    memset(matched, 0, nw);
  }
  walk_start(&s, &dw);
  for (uint32_t i = 0; i < n; i++) {
    ecs_snapshot_manager m;
    const ecsi_manager *x;
    long j;
    walk_next(&s, &dw, &m);
    bad = i;
    if ((j = find_manager(w, &m)) < 0) {
      if (opts != NULL && opts->skip_unknown && m.ns == ECS_NS_COMPONENT) {
        which[i] = UINT32_MAX; /* skipped: its part is not read */
        continue;
      }
      err = ECS_ERR_NO_MANAGER;
      goto done;
    }
    x = &w->manager[j];
    if (matched[j]) { /* the same manager twice */
      err = ECS_ERR_CORRUPT;
      goto done;
    }
    if (!same_schema(w, x, &m, version_of(&s))) {
      err = ECS_ERR_SCHEMA_DIFFERS;
      goto done;
    }
    if (x->cls->load == NULL && m.payload_size > 0) {
      err = ECS_ERR_CORRUPT; /* data for a manager that cannot load */
      goto done;
    }
    if (x->cls->load != NULL && !staged(x->cls)) {
      if (direct != UINT32_MAX) {
        err = ECS_ERR_INVALID; /* see ecs_world_load in snapshot.h */
        goto done;
      }
      direct = i;
    }
    matched[j] = 1;
    which[i] = (uint32_t)j;
  }
  bad = UINT32_MAX;
  /* (3) the entity table, read aside and swapped in; the cursors (version
  ** 2), read aside, their clock the one stamps are checked against */
  {
    ecs_reader r = part_reader(s.data + HEADER_SIZE, s.entities_size);
    err = ecsi_entities_read(w, &r, &tab);
    if (err == ECS_ERR_OK && ecsi_get_u32(s.data + 4) >= 2u) {
      err = ecsi_cursors_read(w, &r, &cur);
      if (err != ECS_ERR_OK) ecsi_entities_table_free(w, &tab);
    }
    if (err == ECS_ERR_OK && r.pos != r.size) {
      ecsi_entities_table_free(w, &tab);
      err = ECS_ERR_CORRUPT;
    }
    if (err != ECS_ERR_OK) goto done;
    ecsi_entities_swap(w, &tab); /* tab: the world's old table */
    swapped = true;
    w->stamp_limit = ecsi_get_u32(s.data + 4) >= 2u ? cur.clock + 1u : UINT32_MAX;
    w->valid_memo = true; /* until done: the table stays as it is */
    w->valid_len = 0;
  }
  /* (4) every staged manager into its twin */
  walk_start(&s, &dw);
  for (uint32_t i = 0; i < n; i++) {
    ecs_snapshot_manager m;
    const ecsi_manager *x;
    ecs_reader r;
    walk_next(&s, &dw, &m);
    if (which[i] == UINT32_MAX) continue; /* skipped */
    x = &w->manager[which[i]];
    if (!staged(x->cls)) continue;
    bad = i;
    if ((twin[i] = x->cls->twin(w, x->self)) == NULL) {
      err = ECS_ERR_NOMEM;
      goto done;
    }
    r = part_reader(m.payload, m.payload_size);
    err = x->cls->load(w, twin[i], &r);
    if (err == ECS_ERR_OK && r.pos != r.size) err = ECS_ERR_CORRUPT;
    if (err != ECS_ERR_OK) goto done;
    /* (5) lua references through the host */
    if (opts != NULL && opts->map_ref != NULL && ecs_component_is(x->cls) &&
        (err = map_refs(opts, (ecs_component *)twin[i])) != ECS_ERR_OK)
      goto done;
  }
  bad = UINT32_MAX;
  if (w->load_hash != NULL) { /* the bytes no load copied, then the sum */
    ecsi_xxh64_cursor_to(&sum, sum.end);
    w->load_hash = NULL;
    if (!checksum_matches(&s, ecsi_xxh64_digest(&sum.h))) {
      err = ECS_ERR_CORRUPT;
      goto done;
    }
  }
  if (opts != NULL && opts->refs_done != NULL &&
      (err = opts->refs_done(opts->ud)) != ECS_ERR_OK)
    goto done;
  /* the one manager without twin and swap, loaded in place, last */
  if (direct != UINT32_MAX) {
    ecs_snapshot_manager m;
    const ecsi_manager *x = &w->manager[which[direct]];
    ecs_reader r;
    (void)ecs_snapshot_manager_at(&s, direct, &m);
    r = part_reader(m.payload, m.payload_size);
    bad = direct;
    err = x->cls->load(w, x->self, &r);
    if (err == ECS_ERR_OK && r.pos != r.size) err = ECS_ERR_CORRUPT;
    if (err != ECS_ERR_OK) goto done; /* its load left it as it was */
    bad = UINT32_MAX;
  }
  /* (6) commit: nothing below fails. Queries are made stale, unless every
  ** component keeps its owners in their rows, none is emptied and the
  ** same entities live (a rollback that only changed values): then their
  ** lists still hold. (Records of dead entities are saved too: the same
  ** owners can be alive in one table and dead in the other.) A
  ** journal records the load: its captures read the state replaced,
  ** under the old table (journal.c). */
  if (w->journal != NULL) {
    ecsi_load_view v;
    ecsi_entities_swap(w, &tab); /* tab: the new table, for a moment */
    v.next = &tab;
    v.twin = twin;
    v.which = which;
    v.matched = matched;
    v.n = n;
    v.cursors = ecsi_get_u32(s.data + 4) >= 2u ? &cur : NULL;
    ecsi_journal_loading(w, &v);
    ecsi_entities_swap(w, &tab);
  }
  for (uint32_t i = 0; i < n; i++) {
    const ecsi_manager *x;
    if (twin[i] == NULL) continue;
    x = &w->manager[which[i]];
    if (ecs_component_is(x->cls) && !ecsi_component_twin_keeps_rows(twin[i]))
      rows_kept = false;
    x->cls->swap(w, x->self, twin[i]);
    x->cls->free(w, twin[i]);
    twin[i] = NULL;
  }
  for (uint32_t j = 0; j < nw; j++)
    if (!matched[j] && w->manager[j].cls->clear != NULL) {
      if (ecs_component_is(w->manager[j].cls) &&
          ecs_component_size((const ecs_component *)w->manager[j].self) > 0)
        rows_kept = false;
      w->manager[j].cls->clear(w, w->manager[j].self);
    }
  if (rows_kept && !ecsi_entities_same_lives(w, &tab)) rows_kept = false;
  ecsi_entities_table_free(w, &tab);
  swapped = false;
  if (ecsi_get_u32(s.data + 4) >= 2u) { /* the clock and the cursors */
    ecsi_cursors_apply(w, &cur);
    ecsi_cursors_keep(w, &cur);
  }
  if (!rows_kept) ecsi_queries_invalidate(w);
  w->loads++; /* loops begun before it are over */
  in->pos = in->size;
done:
  w->stamp_limit = 0;
  w->valid_memo = false;
  w->valid_len = 0;
  ecsi_cursors_free(w, &cur);
  /* an error met while the checksum was still being taken: damaged
  ** bytes are blamed as a checked open would have, before anything else */
  if (err != ECS_ERR_OK && w->load_hash != NULL &&
      ecs_snapshot_check(&s) != ECS_ERR_OK) {
    err = ECS_ERR_CORRUPT;
    bad = UINT32_MAX;
  }
  w->load_hash = NULL;
  if (err != ECS_ERR_OK) {
    for (uint32_t i = 0; twin != NULL && i < s.manager_count; i++)
      if (twin[i] != NULL) w->manager[which[i]].cls->free(w, twin[i]);
    if (swapped) {
      ecsi_entities_swap(w, &tab); /* the old table back; tab: the new */
      ecsi_entities_table_free(w, &tab);
      ecsi_queries_invalidate(w);
    }
  }
  if (scratch > 0 && twin != NULL) ecsi_free(w, twin, scratch);
  if (failed != NULL) *failed = err == ECS_ERR_OK ? UINT32_MAX : bad;
  return err;
}

ecs_err ecs_world_load(ecs_world *w, ecs_reader *in) {
  return ecs_world_load_opts(w, in, NULL, NULL);
}
