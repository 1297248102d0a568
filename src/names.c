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
#include <string.h>

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
** then drop a dead predecessor's record at this index, then link.
*/
ecs_err ecs_names_set(ecs_names *m, ecs_entity e, const char *s, size_t len) {
  uint32_t i, ix = ecs_entity_index(e);
  char *copy;
  void *p;
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
  m->rec[i].hash = fnv1a(s, len);
  m->rec[i].stamp = ++m->clock;
  chain_link(m, i);
  return ECS_ERR_OK;
}

const char *ecs_names_get(const ecs_names *m, ecs_entity e, size_t *len) {
  uint32_t i = rec_of(m, e);
  if (i == NONE) return NULL;
  if (len != NULL) *len = m->rec[i].len;
  return m->rec[i].str;
}

bool ecs_names_clear(ecs_names *m, ecs_entity e) {
  uint32_t i = rec_of(m, e);
  if (i == NONE) return false;
  drop_rec(m, i);
  return true;
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

static void nm_free(ecs_world *w, void *self) {
  ecs_names *m = (ecs_names *)self;
  if (m == NULL) return;
  for (uint32_t i = 0; i < m->n; i++)
    ecsi_free(w, m->rec[i].str, m->rec[i].len + 1u);
  ecsi_free(w, m->rec, (size_t)m->cap * sizeof *m->rec);
  ecsi_free(w, m->bucket, (size_t)m->nbucket * sizeof *m->bucket);
  ecsi_sparse_free(w, &m->map);
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

static const ecs_manager_class names_class = {
  .kind = "names",
  .gc = nm_gc,
  .check = nm_check,
  .free = nm_free,
  .purge = nm_purge,
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
