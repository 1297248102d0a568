/*
** names.c -- the names manager (see names.h).
**
** Records live in a dense array (swap-remove). Each record is on one
** doubly linked chain of the bucket table, selected by its stored hash;
** records are moved by fixing the neighbours' links and the bucket head.
** When an index's generation wraps, its record is marked ECS_PURGED
** (nm_purge), so no record's generation is ahead of its slot's.
** Each record carries the value of a counter at the time it was set, so
** that find can return the most recently named of several holders whatever
** order a chain is in (rehashing reorders chains).
*/
#include <stdlib.h>
#include <string.h>

#include "ecs_private.h"
#include "names.h"
#include "sparse.h"

#define NONE ECSI_NONE

typedef struct name_rec {
  ecs_entity e;
  uint32_t hash;
  uint32_t next, prev; /* chain links; prev NONE: head of its bucket */
  uint64_t stamp;      /* when the name was set */
  char *str;           /* len + 1 bytes, zero-terminated */
  size_t len;
} name_rec;

struct ecs_names {
  ecs_world *w;
  name_rec *rec;
  uint32_t n, cap;
  uint32_t *bucket; /* nbucket heads, a power of two (or 0) */
  uint32_t nbucket;
  uint64_t clock;
  uint32_t gc_cursor;
  ecsi_sparse map; /* entity index -> record */
};

static uint32_t fnv1a(const char *s, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) {
    h ^= (uint8_t)s[i];
    h *= 16777619u;
  }
  return h;
}

static uint32_t rec_of(const ecs_names *m, ecs_entity e) {
  uint32_t i;
  if (!ecs_alive(m->w, e)) return NONE;
  i = ecsi_sparse_get(&m->map, ecs_entity_index(e));
  if (i == NONE || m->rec[i].e != e) return NONE;
  return i;
}

static void chain_unlink(ecs_names *m, uint32_t i) {
  name_rec *r = &m->rec[i];
  if (r->prev != NONE) m->rec[r->prev].next = r->next;
  else m->bucket[r->hash & (m->nbucket - 1u)] = r->next;
  if (r->next != NONE) m->rec[r->next].prev = r->prev;
  r->next = r->prev = NONE;
}

static void chain_link(ecs_names *m, uint32_t i) {
  name_rec *r = &m->rec[i];
  uint32_t *head = &m->bucket[r->hash & (m->nbucket - 1u)];
  r->prev = NONE;
  r->next = *head;
  if (*head != NONE) m->rec[*head].prev = i;
  *head = i;
}

/* Drop record i: free its string, unlink, move the last record into i. */
static void drop_rec(ecs_names *m, uint32_t i) {
  uint32_t last = m->n - 1u, ix = ecs_entity_index(m->rec[i].e);
  chain_unlink(m, i);
  ecsi_free(m->w, m->rec[i].str, m->rec[i].len + 1u);
  if (ecsi_sparse_get(&m->map, ix) == i) ecsi_sparse_set(&m->map, ix, NONE);
  if (i != last) {
    name_rec *r = &m->rec[i];
    *r = m->rec[last];
    if (r->prev != NONE) m->rec[r->prev].next = i;
    else m->bucket[r->hash & (m->nbucket - 1u)] = i;
    if (r->next != NONE) m->rec[r->next].prev = i;
    ix = ecs_entity_index(r->e);
    if (ecsi_sparse_get(&m->map, ix) == last) ecsi_sparse_set(&m->map, ix, i);
  }
  m->n--;
}

/* Grow the table to keep the load factor at most 1, rechaining all. */
static ecs_err reserve_buckets(ecs_names *m, uint32_t need) {
  uint32_t nb = m->nbucket ? m->nbucket : 16u, *b;
  if (need <= m->nbucket) return ECS_ERR_OK;
  while (nb < need) {
    if (nb > UINT32_MAX / 2u) return ECS_ERR_NOMEM;
    nb *= 2u;
  }
  b = (uint32_t *)ecsi_realloc(m->w, NULL, 0, (size_t)nb * sizeof *b);
  if (b == NULL) return ECS_ERR_NOMEM;
  memset(b, 0xff, (size_t)nb * sizeof *b);
  ecsi_free(m->w, m->bucket, (size_t)m->nbucket * sizeof *m->bucket);
  m->bucket = b;
  m->nbucket = nb;
  for (uint32_t i = 0; i < m->n; i++) chain_link(m, i);
  return ECS_ERR_OK;
}

/*
** Reserve everything first (string copy, record slot, map page, buckets),
** then drop a dead predecessor's record at this index, then link; the
** listeners last, when the record is complete (ADD for a new name, SET for
** a renamed entity). The hash is taken from the copy: s may be the old
** name itself (set(e, get(e))), which is freed before the hash is needed.
*/
ecs_err ecs_names_set(ecs_names *m, ecs_entity e, const char *s, size_t len) {
  uint32_t i, ix = ecs_entity_index(e);
  char *copy;
  void *p;
  ecs_event event;
  ecs_err err;
  if (!ecs_alive(m->w, e)) return ECS_ERR_DEAD;
  if (len >= SIZE_MAX) return ECS_ERR_NOMEM;
  p = m->rec;
  err = ecsi_grow(m->w, &p, &m->cap, m->n + 1u, sizeof *m->rec, 16);
  if (err != ECS_ERR_OK) return err;
  m->rec = (name_rec *)p;
  err = ecsi_sparse_reserve(m->w, &m->map, ix);
  if (err != ECS_ERR_OK) return err;
  err = reserve_buckets(m, m->n + 1u);
  if (err != ECS_ERR_OK) return err;
  copy = (char *)ecsi_realloc(m->w, NULL, 0, len + 1u);
  if (copy == NULL) return ECS_ERR_NOMEM;
  if (len > 0) memcpy(copy, s, len);
  copy[len] = '\0';
  i = ecsi_sparse_get(&m->map, ix);
  if (i != NONE && m->rec[i].e != e) { /* a dead entity's record */
    drop_rec(m, i);
    i = NONE;
  }
  event = i == NONE ? ECS_EVENT_ADD : ECS_EVENT_SET;
  if (i == NONE) {
    i = m->n++;
    m->rec[i].e = e;
    m->rec[i].next = m->rec[i].prev = NONE;
    ecsi_sparse_set(&m->map, ix, i);
  } else {
    chain_unlink(m, i);
    ecsi_free(m->w, m->rec[i].str, m->rec[i].len + 1u);
  }
  m->rec[i].str = copy;
  m->rec[i].len = len;
  m->rec[i].hash = fnv1a(copy, len);
  m->rec[i].stamp = ++m->clock;
  chain_link(m, i);
  return ecs_manager_notify(m->w, m, e, event);
}

const char *ecs_names_get(const ecs_names *m, ecs_entity e, size_t *len) {
  uint32_t i = rec_of(m, e);
  if (i == NONE) return NULL;
  if (len != NULL) *len = m->rec[i].len;
  return m->rec[i].str;
}

/* Has the world any listener? (ecs_manager_notify's inline test.) */
static bool listened(const ecs_names *m) {
  return ((const ecs_world_head *)(const void *)m->w)->listeners != 0;
}

/* REMOVE first (the name still readable), then find the record again:
** the listeners may have renamed e, cleared its name or destroyed it. */
ecs_err ecs_names_clear(ecs_names *m, ecs_entity e, bool *cleared) {
  uint32_t i = rec_of(m, e);
  ecs_err err = ECS_ERR_OK;
  if (cleared != NULL) *cleared = i != NONE;
  if (i == NONE) return ECS_ERR_OK;
  if (listened(m)) { /* once per name: ecsi_notify_remove */
    err = ecsi_notify_remove(m->w, m, e);
    if ((i = rec_of(m, e)) == NONE) return err;
  }
  drop_rec(m, i);
  return err;
}

ecs_entity ecs_names_find(const ecs_names *m, const char *s, size_t len) {
  uint32_t h, i;
  const name_rec *best = NULL;
  if (m->nbucket == 0) return ECS_NULL;
  h = fnv1a(s, len);
  for (i = m->bucket[h & (m->nbucket - 1u)]; i != NONE; i = m->rec[i].next) {
    const name_rec *r = &m->rec[i];
    if (r->hash == h && r->len == len && memcmp(r->str, s, len) == 0 &&
        ecs_alive(m->w, r->e) && (best == NULL || r->stamp > best->stamp))
      best = r;
  }
  return best != NULL ? best->e : ECS_NULL;
}

size_t ecs_names_size(const ecs_names *m) { return m->n; }

/* The records as ecsi_lazy_gc sees them: entities, and drop_rec. */
static ecs_entity gc_owner(const void *self, uint32_t i) {
  return ((const ecs_names *)self)->rec[i].e;
}

static void gc_drop(ecs_world *w, void *self, uint32_t i) {
  (void)w;
  drop_rec((ecs_names *)self, i);
}

static const ecsi_records gc_records = {gc_owner, gc_drop};

/* The managers' one policy (sparse.h). */
size_t ecs_names_gc(ecs_names *m, size_t budget) {
  return ecsi_lazy_gc(m->w, m, &gc_records, &m->n, &m->gc_cursor, budget);
}

static size_t nm_gc(ecs_world *w, void *self, size_t budget) {
  (void)w;
  return ecs_names_gc((ecs_names *)self, budget);
}

/*
** The index's generation wrapped: mark its record purged in place, so no
** later entity with that index gets the old name or is found by it. The
** record stays chained until the next set at this index or gc drops it.
*/
static void nm_purge(ecs_world *w, void *self, uint32_t index) {
  ecs_names *m = (ecs_names *)self;
  uint32_t i = ecsi_sparse_get(&m->map, index);
  (void)w;
  if (i != NONE) m->rec[i].e = ecs_mark_purged(m->rec[i].e);
}

/* Free every block of m's records (strings, arrays, map), not m itself. */
static void nm_release(ecs_world *w, ecs_names *m) {
  for (uint32_t i = 0; i < m->n; i++)
    ecsi_free(w, m->rec[i].str, m->rec[i].len + 1u);
  ecsi_free(w, m->rec, (size_t)m->cap * sizeof *m->rec);
  ecsi_free(w, m->bucket, (size_t)m->nbucket * sizeof *m->bucket);
  ecsi_sparse_free(w, &m->map);
}

static void nm_free(ecs_world *w, void *self) {
  ecs_names *m = (ecs_names *)self;
  if (m == NULL) return;
  nm_release(w, m);
  ecsi_free(w, m, sizeof *m);
}

static const char *check_map_entry(const void *ud, uint32_t index,
                                   uint32_t v) {
  const ecs_names *m = (const ecs_names *)ud;
  if (v >= m->n) return "names: map points past the records";
  if (ecs_entity_index(m->rec[v].e) != index)
    return "names: map entry points at another entity's record";
  return NULL;
}

/*
** Invariants: each record is in the map, has the hash of its string, a
** terminated string, and sits in the chain of its bucket with symmetric
** links; the chains together hold exactly n records; the map holds only
** records.
*/
static const char *nm_check(const ecs_world *w, const void *self) {
  const ecs_names *m = (const ecs_names *)self;
  size_t chained = 0;
  if (m->n > m->cap) return "names: more records than capacity";
  if (m->n > 0 && m->nbucket < m->n) return "names: load factor above 1";
  for (uint32_t i = 0; i < m->n; i++) {
    const name_rec *r = &m->rec[i];
    if (ecsi_sparse_get(&m->map, ecs_entity_index(r->e)) != i)
      return "names: record missing from the map";
    if (!ecs_record_valid(w, r->e))
      return "names: record outlived its generation (wrap)";
    if (r->str == NULL || r->str[r->len] != '\0') return "names: bad string";
    if (r->hash != fnv1a(r->str, r->len)) return "names: stale hash";
    if (r->prev == NONE) {
      if (m->bucket[r->hash & (m->nbucket - 1u)] != i)
        return "names: chain head not in its bucket";
    } else if (r->prev >= m->n || m->rec[r->prev].next != i) {
      return "names: chain links not symmetric";
    }
    if (r->next != NONE && (r->next >= m->n || m->rec[r->next].prev != i))
      return "names: chain links not symmetric";
  }
  for (uint32_t b = 0; b < m->nbucket; b++) {
    for (uint32_t i = m->bucket[b]; i != NONE; i = m->rec[i].next) {
      if (i >= m->n) return "names: bucket points past the records";
      if ((m->rec[i].hash & (m->nbucket - 1u)) != b)
        return "names: record in the wrong bucket";
      if (++chained > m->n) return "names: chains loop";
    }
  }
  if (chained != m->n) return "names: records missing from the chains";
  return ecsi_sparse_each(&m->map, check_map_entry, m);
}

/* ------------------------------------------------------------------------
** The manager interface: has, clear, stats, schema, save and load
** --------------------------------------------------------------------- */

static bool nm_has(const ecs_world *w, const void *self, ecs_entity e) {
  (void)w;
  return rec_of((const ecs_names *)self, e) != NONE;
}

/*
** Every record goes, with its string; the arrays keep their capacity (as
** after clears of single names), the buckets are emptied. The clock goes
** on: stamps only ever grow.
*/
static void nm_clear(ecs_world *w, void *self) {
  ecs_names *m = (ecs_names *)self;
  for (uint32_t i = 0; i < m->n; i++) {
    ecsi_sparse_set(&m->map, ecs_entity_index(m->rec[i].e), NONE);
    ecsi_free(w, m->rec[i].str, m->rec[i].len + 1u);
  }
  if (m->nbucket > 0)
    memset(m->bucket, 0xff, (size_t)m->nbucket * sizeof *m->bucket);
  m->n = 0;
  m->gc_cursor = 0;
}

static void nm_stats(const ecs_world *w, const void *self,
                     ecs_manager_stats *out) {
  const ecs_names *m = (const ecs_names *)self;
  size_t bytes = sizeof *m + (size_t)m->cap * sizeof *m->rec +
                 (size_t)m->nbucket * sizeof *m->bucket +
                 ecsi_sparse_bytes(&m->map);
  out->records = m->n;
  for (uint32_t i = 0; i < m->n; i++) {
    bytes += m->rec[i].len + 1u;
    out->live += ecs_alive(w, m->rec[i].e);
  }
  out->bytes = bytes;
}

/*
** One field, "name", described as u8: a name is a byte string of any
** length (zeros included), and the schema's types are fixed-size values,
** so the nearest honest description is its element type, the way a C
** declaration says char name[]. Not lua: no Lua reference is involved,
** nothing for the binding to keep. The save layout below carries each
** name's length.
*/
static uint32_t nm_schema(const ecs_world *w, const void *self,
                          ecs_field_def *out, uint32_t max) {
  static const ecs_field_def name_field = {"name", ECS_U8};
  (void)w;
  (void)self;
  if (max > 0) out[0] = name_field;
  return 1;
}

/*
** The saved layout (machine byte order):
**   u32 LAYOUT (2), u32 count (live records), then per record
**   u32 entity, u64 stamp, u64 length, the name's bytes.
** The stamp is the order in which names were given (find returns the most
** recent holder of a shared name), so a loaded manager answers find as
** the saved one did. Records are saved oldest first, each stamp as its
** rank (1 for the oldest), not as the counter's value or in row order:
** the counter also counted names since taken away, the rows' order is the
** history of sets and gc, and two managers that give the same answers
** must save the same bytes (a journal compares saves; the state hash
** hashes them). Records are at least 20 bytes, which bounds count by the
** bytes left before anything is allocated. Layout 1 (before stamps were
** ranks) still loads: any order, stamps as the counter gave them.
*/
#define LAYOUT 2u
#define LAYOUT_COUNTER 1u
#define REC_MIN (4u + 8u + 8u)
/* Stamps count sets one by one from 1: no world reaches 2^62, so a larger
** one is corrupt, and the clock, set past the largest loaded, never wraps. */
#define STAMP_MAX ((uint64_t)1 << 62)

typedef struct ranked {
  uint64_t stamp;
  uint32_t row;
} ranked;

static int by_stamp(const void *a, const void *b) {
  uint64_t x = ((const ranked *)a)->stamp, y = ((const ranked *)b)->stamp;
  return (x > y) - (x < y);
}

/* The live records oldest first, each stamped with its rank. */
static ecs_err nm_save(const ecs_world *w, const void *self, ecs_writer *out) {
  const ecs_names *m = (const ecs_names *)self;
  uint32_t live = 0, k = 0;
  ranked *order = NULL;
  ecs_err err;
  for (uint32_t i = 0; i < m->n; i++) live += ecs_alive(w, m->rec[i].e);
  if (live > 0) { /* a const world: uncounted scratch, like its checks */
    order = (ranked *)ecsi_scratch_realloc(w, NULL, 0, (size_t)live * sizeof *order);
    if (order == NULL) return ECS_ERR_NOMEM;
    for (uint32_t i = 0; i < m->n; i++)
      if (ecs_alive(w, m->rec[i].e)) {
        order[k].stamp = m->rec[i].stamp;
        order[k++].row = i;
      }
    qsort(order, live, sizeof *order, by_stamp);
  }
  if ((err = ecs_write_u32(out, LAYOUT)) == ECS_ERR_OK)
    err = ecs_write_u32(out, live);
  for (k = 0; k < live && err == ECS_ERR_OK; k++) {
    const name_rec *r = &m->rec[order[k].row];
    uint64_t len = r->len, rank = (uint64_t)k + 1u;
    if ((err = ecs_write_u32(out, r->e)) == ECS_ERR_OK &&
        (err = ecs_write(out, &rank, sizeof rank)) == ECS_ERR_OK &&
        (err = ecs_write(out, &len, sizeof len)) == ECS_ERR_OK)
      err = ecs_write(out, r->str, r->len);
  }
  if (order != NULL) ecsi_scratch_realloc(w, order, (size_t)live * sizeof *order, 0);
  return err;
}

/*
** All or nothing: the records are built in a manager of their own (tmp:
** arrays, buckets, map and strings), each checked as it is read: a live
** 30-bit entity not seen before (one name per entity; names themselves
** may repeat, as set allows), a stamp in range, a length within the
** bytes left. Only when the whole part was read does tmp replace m's
** records; on any failure tmp is freed and the reader put back.
*/
static ecs_err nm_load(ecs_world *w, void *self, ecs_reader *in) {
  ecs_names *m = (ecs_names *)self;
  ecs_names tmp;
  size_t start = in->pos;
  uint32_t v, count;
  uint64_t clock = m->clock, last = 0;
  ecs_err err = ECS_ERR_CORRUPT;
  memset(&tmp, 0, sizeof tmp);
  tmp.w = w;
  if (ecs_read_u32(in, &v) != ECS_ERR_OK || (v != LAYOUT && v != LAYOUT_COUNTER) ||
      ecs_read_u32(in, &count) != ECS_ERR_OK || count > ECS_MAX_ENTITIES ||
      count > (in->size - in->pos) / REC_MIN)
    goto fail;
  if (count > 0) {
    void *p = NULL;
    err = ecsi_grow(w, &p, &tmp.cap, count, sizeof *tmp.rec, 16);
    if (err != ECS_ERR_OK) goto fail;
    tmp.rec = (name_rec *)p;
    if ((err = reserve_buckets(&tmp, count)) != ECS_ERR_OK) goto fail;
  }
  for (uint32_t i = 0; i < count; i++) {
    name_rec *r = &tmp.rec[i];
    ecs_entity e;
    uint64_t stamp, len;
    uint32_t ix;
    err = ECS_ERR_CORRUPT;
    if (ecs_read_u32(in, &e) != ECS_ERR_OK || (e & ~ECS_ID_MASK) != 0 ||
        !ecs_alive(w, e) ||
        ecs_read(in, &stamp, sizeof stamp) != ECS_ERR_OK || stamp == 0 ||
        stamp > STAMP_MAX || ecs_read(in, &len, sizeof len) != ECS_ERR_OK ||
        len > in->size - in->pos || (v == LAYOUT && stamp <= last))
      goto fail; /* (layout 2: oldest first, no stamp twice) */
    last = stamp;
    ix = ecs_entity_index(e);
    if ((err = ecsi_sparse_reserve(w, &tmp.map, ix)) != ECS_ERR_OK) goto fail;
    if (ecsi_sparse_get(&tmp.map, ix) != NONE) {
      err = ECS_ERR_CORRUPT; /* a second name for one entity */
      goto fail;
    }
    if ((r->str = (char *)ecsi_realloc(w, NULL, 0, (size_t)len + 1u)) ==
        NULL) {
      err = ECS_ERR_NOMEM;
      goto fail;
    }
    (void)ecs_read(in, r->str, (size_t)len); /* len bytes are there */
    r->str[len] = '\0';
    r->len = (size_t)len;
    r->e = e;
    r->hash = fnv1a(r->str, r->len);
    r->stamp = stamp;
    if (stamp > clock) clock = stamp;
    tmp.n = i + 1; /* from here on nm_release frees this record */
    ecsi_sparse_set(&tmp.map, ix, i);
    chain_link(&tmp, i);
  }
  nm_release(w, m);
  m->rec = tmp.rec;
  m->n = tmp.n;
  m->cap = tmp.cap;
  m->bucket = tmp.bucket;
  m->nbucket = tmp.nbucket;
  m->map = tmp.map;
  m->clock = clock;
  m->gc_cursor = 0;
  return ECS_ERR_OK;
fail:
  nm_release(w, &tmp);
  in->pos = start;
  return err;
}

/*
** Staged loads (snapshot.c): a twin starts at m's clock, so that its load
** keeps the clock past every stamp m gave; swap trades every record and
** the clock, leaving m's identity and the REMOVEs it is reporting.
*/
static void *nm_twin(ecs_world *w, const void *self) {
  const ecs_names *m = (const ecs_names *)self;
  ecs_names *t = (ecs_names *)ecsi_realloc(w, NULL, 0, sizeof *t);
  if (t == NULL) return NULL;
  memset(t, 0, sizeof *t);
  t->w = w;
  t->clock = m->clock;
  return t;
}

static void nm_swap(ecs_world *w, void *self, void *twin) {
  ecs_names *a = (ecs_names *)self, *b = (ecs_names *)twin, tmp = *a;
  (void)w;
  *a = *b;
  *b = tmp;
  a->gc_cursor = b->gc_cursor = 0;
}

static const ecs_manager_class names_class = {
  .kind = "names",
  .gc = nm_gc,
  .check = nm_check,
  .free = nm_free,
  .purge = nm_purge,
  .has = nm_has,
  .clear = nm_clear,
  .stats = nm_stats,
  .schema = nm_schema,
  .save = nm_save,
  .load = nm_load,
  .twin = nm_twin,
  .swap = nm_swap,
};

ecs_err ecs_names_new(ecs_world *w, ecs_names **out) {
  ecs_names *m;
  ecs_err err;
  if (ecs_manager_find(w, "names", NULL) != NULL) return ECS_ERR_EXISTS;
  m = (ecs_names *)ecsi_realloc(w, NULL, 0, sizeof *m);
  if (m == NULL) return ECS_ERR_NOMEM;
  memset(m, 0, sizeof *m);
  m->w = w;
  err = ecs_manager_register(w, "names", &names_class, m);
  if (err != ECS_ERR_OK) return err;
  if (out != NULL) *out = m;
  return ECS_ERR_OK;
}

ecs_names *ecs_names_of(const ecs_world *w) {
  const ecs_manager_class *cls;
  void *m = ecs_manager_find(w, "names", &cls);
  return m != NULL && cls == &names_class ? (ecs_names *)m : NULL;
}
