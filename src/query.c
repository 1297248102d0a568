/*
** query.c -- cached multi-component queries: the match list.
**
** Match list. A snapshot (qsnap) is one block: a header, the matching
** entities, then one row column per "with" manager (term-major, stride
** cap), so a run over a query reads the rows of one term contiguously.
** The query's current snapshot is rebuilt in place when it is stale and
** nobody pins it; when it is pinned (an iteration is in progress, in Lua
** or in C) the rebuild writes a new block and the old one is "retired":
** it stays valid for its pinners and is freed when the last pin goes, or
** with the query.
**
** Staleness. The snapshot records the version of every manager of the
** query and the world's destroy epoch when it was built. Any difference
** means some instance was created, reused, removed or reclaimed, columns
** moved, or an entity died: the next use rebuilds. Rebuilding walks the
** smallest "with" manager (its rows come out increasing, which the checker
** uses) and looks each live owner up in the other managers.
**
** Readers. The iterators (ecs_query_iter_*) and the pins that native
** runs (query_run.c) and compiled programs (expr_run.c) take are here,
** next to the snapshot they hold; what runs do with the rows is not.
**
** Why a cached list at all: the Bitsquid managers keep each component in
** its own dense array with no shared order, so a match needs one lookup
** per manager per entity. Doing that once per change rather than once per
** frame makes a query over an unchanging world cost only the loop over
** its list, with row numbers that let runs use the columns as arrays.
**
** Layer: query, above the managers, below expr (layers: alloc.h). expr.c
** keeps its programs in each query's extension slot; this file frees
** them through the hook the expr layer set, and knows nothing else of
** them.
*/
#include <string.h>

#include "query.h"
#include "ecs_private.h"

/*
** One snapshot of the match list, in one block: this header, then
** entity[cap], then row[nwith * cap] (term k's rows at row + k * cap),
** then runend[cap]. pins counts the readers holding it; while pinned it
** is never written, and freed only with its query, which is what makes
** iterations safe against rebuilds triggered from inside them.
*/
typedef struct qsnap {
  struct qsnap *next_retired;
  size_t bytes;
  uint32_t pins;
  uint32_t count, cap;
  uint32_t sized_for; /* the need its capacity was computed from */
  uint32_t driver; /* the "with" term the rebuild walked */
  ecs_entity *entity;
  uint32_t *row;
  /* runend[i]: the end of the run holding position i, over which the rows
  ** of every "with" term are consecutive (so columns work in place) */
  uint32_t *runend;
} qsnap;

/*
** A query. The terms are fixed at creation; everything else is cache:
** the snapshot, the versions it was built from (seen, seen_epoch), the
** scratch that runs and programs reuse between calls, and expr.c's slot.
*/
struct ecs_query {
  ecs_query *prev, *next; /* the world's list */
  uint32_t nwith, nwithout;
  ecs_component *term[ECS_QUERY_MAX_TERMS]; /* with, then without */
  uint64_t seen[ECS_QUERY_MAX_TERMS];       /* versions at the rebuild */
  uint64_t seen_epoch;
  bool built;     /* cur matches the versions in seen */
  qsnap *cur;     /* NULL until the first rebuild */
  qsnap *retired; /* pinned snapshots replaced by a rebuild */
  void *scratch;
  size_t scratch_size;
  void *ext;                     /* expr.c's programs (ecsi_query_ext) */
  ecsi_query_ext_free ext_free;  /* frees ext, or NULL */
};

/* ------------------------------------------------------------------------
** Creation and destruction
** --------------------------------------------------------------------- */

/*
** Validate first (no memory yet), then allocate and link at the head of
** the world's list. No snapshot is built here: the first use builds it,
** so creating a query is O(terms) whatever the world holds.
*/
ecs_err ecs_query_new(ecs_world *w, ecs_component *const *with, uint32_t nwith,
                      ecs_component *const *without, uint32_t nwithout,
                      ecs_query **out) {
  ecs_query *q;
  uint32_t n = nwith + nwithout;
  if (nwith == 0) return ECS_ERR_NO_TERMS;
  if (nwith > ECS_QUERY_MAX_TERMS || nwithout > ECS_QUERY_MAX_TERMS - nwith)
    return ECS_ERR_TOO_MANY_TERMS;
  /* a NULL manager is a C caller's slip, not a rule of queries: checked
  ** over every term first, so it wins over a duplicate wherever it is */
  for (uint32_t i = 0; i < n; i++)
    if ((i < nwith ? with[i] : without[i - nwith]) == NULL)
      return ECS_ERR_INVALID;
  for (uint32_t i = 0; i < n; i++) {
    const ecs_component *c = i < nwith ? with[i] : without[i - nwith];
    for (uint32_t j = 0; j < i; j++)
      if ((j < nwith ? with[j] : without[j - nwith]) == c)
        return ECS_ERR_DUPLICATE_TERM;
  }
  q = (ecs_query *)ecsi_realloc(w, NULL, 0, sizeof *q);
  if (q == NULL) return ECS_ERR_NOMEM;
  memset(q, 0, sizeof *q);
  q->nwith = nwith;
  q->nwithout = nwithout;
  for (uint32_t i = 0; i < n; i++)
    q->term[i] = i < nwith ? with[i] : without[i - nwith];
  q->next = w->queries;
  if (w->queries != NULL) w->queries->prev = q;
  w->queries = q;
  *out = q;
  return ECS_ERR_OK;
}

static void snap_free(ecs_world *w, qsnap *s) {
  if (s != NULL) ecsi_free(w, s, s->bytes);
}

/*
** Unlink, then free what hangs off the query: expr.c's programs (through
** its hook, before the query they point at goes), the current snapshot,
** retired ones still pinned (a pinner must not outlive its query), and
** the scratch.
*/
void ecs_query_free(ecs_world *w, ecs_query *q) {
  if (q == NULL) return;
  ecsi_systems_query_freed(w, q); /* the systems over q go first */
  if (q->prev != NULL) q->prev->next = q->next;
  else w->queries = q->next;
  if (q->next != NULL) q->next->prev = q->prev;
  if (q->ext_free != NULL) q->ext_free(w, q); /* programs point at q */
  snap_free(w, q->cur);
  while (q->retired != NULL) {
    qsnap *s = q->retired;
    q->retired = s->next_retired;
    snap_free(w, s);
  }
  ecsi_free(w, q->scratch, q->scratch_size);
  ecsi_free(w, q, sizeof *q);
}

void ecsi_queries_free(ecs_world *w) {
  while (w->queries != NULL) ecs_query_free(w, w->queries);
}

void **ecsi_query_ext(ecs_query *q) { return &q->ext; }

void ecsi_query_set_ext_free(ecs_query *q, ecsi_query_ext_free fn) {
  q->ext_free = fn;
}

uint32_t ecs_query_with_count(const ecs_query *q) { return q->nwith; }

uint32_t ecs_query_without_count(const ecs_query *q) { return q->nwithout; }

ecs_component *ecs_query_with(const ecs_query *q, uint32_t k) {
  return k < q->nwith ? q->term[k] : NULL;
}

ecs_component *ecs_query_without(const ecs_query *q, uint32_t k) {
  return k < q->nwithout ? q->term[q->nwith + k] : NULL;
}

int ecs_query_term(const ecs_query *q, const ecs_component *c) {
  for (uint32_t k = 0; k < q->nwith; k++)
    if (q->term[k] == c) return (int)k;
  return -1;
}

/* ------------------------------------------------------------------------
** Matching and the cache
** --------------------------------------------------------------------- */
bool ecs_query_matches(const ecs_world *w, const ecs_query *q, ecs_entity e) {
  if (!ecs_alive(w, e)) return false;
  for (uint32_t k = 0; k < q->nwith; k++)
    if (ecs_component_lookup(w, q->term[k], e) == ECS_NO_INSTANCE) return false;
  for (uint32_t k = q->nwith; k < q->nwith + q->nwithout; k++)
    if (ecs_component_lookup(w, q->term[k], e) != ECS_NO_INSTANCE) return false;
  return true;
}

/*
** A snapshot is stale when any term's version or the destroy epoch moved
** since it was built. The epoch is needed because managers are not told
** when an entity dies, so a death changes no version; it makes every
** query stale on any destroy, a rebuild of O(smallest term) at the next
** use, which is the price of not tracking which queries held the entity.
*/
static bool is_stale(const ecs_world *w, const ecs_query *q) {
  if (!q->built || q->seen_epoch != w->destroy_epoch) return true;
  for (uint32_t k = 0; k < q->nwith + q->nwithout; k++)
    if (q->seen[k] != ecs_component_version(q->term[k])) return true;
  return false;
}

/* The fewest entries a snapshot is given room for. */
#define MIN_SNAP_CAP 16u

/*
** Room for a snapshot that must hold need entries and replaces one of cap
** old (0: none). Capacity grows only when the need exceeds it, then by at
** least half (amortised growth); otherwise it is sized to the need. Never
** below MIN_SNAP_CAP, never above UINT32_MAX, so it is always under
** 1.5 x max(need, MIN_SNAP_CAP): a pinned snapshot replaced over and over
** does not compound (the old rule, 1.5 x old capacity at every pinned
** rebuild, reached gigabytes in a few hundred frames).
*/
static uint32_t snap_capacity(uint32_t need, uint32_t old) {
  uint64_t cap = need < MIN_SNAP_CAP ? MIN_SNAP_CAP : need;
  if (old != 0 && need > old) {
    uint64_t grown = (uint64_t)old + old / 2u;
    if (grown > cap) cap = grown;
  }
  return cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
}

/* Bytes of a snapshot of cap entries, or 0 when that overflows size_t. */
static size_t snap_bytes(const ecs_query *q, uint32_t cap) {
  size_t per = sizeof(ecs_entity) + ((size_t)q->nwith + 1u) * sizeof(uint32_t);
  if ((size_t)cap > (SIZE_MAX - sizeof(qsnap)) / per) return 0;
  return sizeof(qsnap) + (size_t)cap * per;
}

/*
** Make q->cur a snapshot with room for need matches. The current one is
** reused when nobody pins it and it is large enough but not four times too
** large; else a new block replaces it and the old one is freed, or retired
** while pinned (freed by the last unpin). So every snapshot is sized by a
** need it was built for, and a query holds at most one snapshot per live
** pin plus the current one. On failure nothing changed, except that an
** oversized snapshot that could not be shrunk is kept as it is.
*/
static ecs_err snap_reserve(ecs_world *w, ecs_query *q, uint32_t need) {
  qsnap *s = q->cur, *ns;
  uint32_t cap;
  size_t bytes;
  bool fits = s != NULL && s->pins == 0 && s->cap >= need;
  if (fits && s->cap / 4u <= (need < MIN_SNAP_CAP ? MIN_SNAP_CAP : need))
    return ECS_ERR_OK;
  cap = snap_capacity(need, s != NULL ? s->cap : 0);
  bytes = snap_bytes(q, cap);
  ns = bytes == 0 ? NULL : (qsnap *)ecsi_realloc(w, NULL, 0, bytes);
  if (ns == NULL) return fits ? ECS_ERR_OK : ECS_ERR_NOMEM;
  memset(ns, 0, sizeof *ns);
  ns->bytes = bytes;
  ns->cap = cap;
  ns->sized_for = need;
  ns->entity = (ecs_entity *)(void *)(ns + 1);
  ns->row = (uint32_t *)(void *)(ns->entity + cap);
  ns->runend = ns->row + (size_t)cap * q->nwith;
  if (s != NULL) {
    if (s->pins > 0) {
      s->next_retired = q->retired;
      q->retired = s;
    } else {
      snap_free(w, s);
    }
  }
  q->cur = ns;
  return ECS_ERR_OK;
}

/*
** Rebuild the match list when it is stale. The smallest "with" manager
** drives: every match has an instance in each "with" manager, so walking
** the smallest visits the fewest candidates, and the others answer in
** O(1) each through their maps. Walking the driver in instance order
** makes its rows increasing, so no entity is listed twice and, when the
** other terms' rows increase alongside, runs appear.
**
** On ECS_ERR_NOMEM the old list stays (its pinners keep reading it) but
** built is cleared, so the next use tries again instead of trusting it.
** A snapshot being rebuilt in place is never pinned (snap_reserve).
*/
ecs_err ecs_query_refresh(ecs_world *w, ecs_query *q) {
  uint32_t driver = 0, n = 0, cap;
  const ecs_entity *own;
  qsnap *s;
  ecs_err err;
  if (!is_stale(w, q)) return ECS_ERR_OK;
  for (uint32_t k = 1; k < q->nwith; k++)
    if (ecs_component_size(q->term[k]) < ecs_component_size(q->term[driver]))
      driver = k;
  if ((err = snap_reserve(w, q, ecs_component_size(q->term[driver]))) !=
      ECS_ERR_OK) {
    q->built = false;
    return err;
  }
  s = q->cur;
  cap = s->cap;
  own = ecs_component_entities(q->term[driver]);
  for (uint32_t i = 0, size = ecs_component_size(q->term[driver]); i < size;
       i++) {
    ecs_entity e = own[i];
    uint32_t k;
    if (!ecs_alive(w, e)) continue;
    for (k = 0; k < q->nwith; k++) {
      uint32_t r = k == driver ? i : ecs_component_lookup(w, q->term[k], e);
      if (r == ECS_NO_INSTANCE) break;
      s->row[(size_t)k * cap + n] = r;
    }
    if (k < q->nwith) continue;
    for (k = q->nwith; k < q->nwith + q->nwithout; k++)
      if (ecs_component_lookup(w, q->term[k], e) != ECS_NO_INSTANCE) break;
    if (k < q->nwith + q->nwithout) continue;
    s->entity[n++] = e;
  }
  s->count = n;
  s->driver = driver;
  /* runs, from the end: position i continues the run of i + 1 when every
  ** term's row at i + 1 is its row at i plus one; one pass, and
  ** ecsi_rows_run is then one subtraction */
  for (uint32_t i = n; i-- > 0;) {
    uint32_t k = 0;
    if (i + 1 < n)
      for (; k < q->nwith; k++) {
        const uint32_t *row = s->row + (size_t)k * cap;
        if (row[i + 1] != row[i] + 1u) break;
      }
    s->runend[i] = i + 1 < n && k == q->nwith ? s->runend[i + 1] : i + 1;
  }
  for (uint32_t k = 0; k < q->nwith + q->nwithout; k++)
    q->seen[k] = ecs_component_version(q->term[k]);
  q->seen_epoch = w->destroy_epoch;
  q->built = true;
  return ECS_ERR_OK;
}

ecs_err ecs_query_count(ecs_world *w, ecs_query *q, size_t *out) {
  ecs_err err = ecs_query_refresh(w, q);
  *out = err == ECS_ERR_OK ? q->cur->count : 0;
  return err;
}

void ecs_query_get_stats(const ecs_query *q, ecs_query_stats *out) {
  memset(out, 0, sizeof *out);
  if (q->cur != NULL) {
    out->count = q->cur->count;
    out->capacity = q->cur->cap;
    out->sized_for = q->cur->sized_for;
    out->pins = q->cur->pins;
    out->bytes = q->cur->bytes;
  }
  for (const qsnap *s = q->retired; s != NULL; s = s->next_retired) {
    out->retired++;
    out->pins += s->pins;
    out->bytes += s->bytes;
  }
}

/* ------------------------------------------------------------------------
** Pinned snapshots
** --------------------------------------------------------------------- */

/*
** Refresh, then take a pin on the current snapshot and describe it in
** *out. The pin is the whole protocol: a rebuild while it is held writes
** a new block and retires this one (snap_reserve), so *out stays valid
** until the matching unpin, whatever the reader does in between.
*/
ecs_err ecsi_query_pin(ecs_world *w, ecs_query *q, ecsi_rows *out) {
  ecs_err err = ecs_query_refresh(w, q);
  if (err != ECS_ERR_OK) return err;
  q->cur->pins++;
  out->count = q->cur->count;
  out->stride = q->cur->cap;
  out->entity = q->cur->entity;
  out->row = q->cur->row;
  out->runend = q->cur->runend;
  out->snap = q->cur;
  return ECS_ERR_OK;
}

/*
** Drop a pin. The current snapshot just loses a pin (the next rebuild
** reuses it); a retired one is freed with its last pin. The current
** snapshot with no pin left is left alone, so unpinning it twice is
** harmless (a retired one is gone after its last unpin).
*/
void ecsi_query_unpin(ecs_world *w, ecs_query *q, void *snap) {
  qsnap *s = (qsnap *)snap, **p;
  if (s == NULL || s->pins == 0) return;
  if (--s->pins > 0 || s == q->cur) return;
  for (p = &q->retired; *p != NULL; p = &(*p)->next_retired)
    if (*p == s) {
      *p = s->next_retired;
      snap_free(w, s);
      return;
    }
}

/*
** Scratch kept by the query and reused by every run and program on it:
** it only grows, so a system running every frame allocates once. Taken
** before the pin by its users, so that its failure changes nothing.
*/
void *ecsi_query_scratch(ecs_world *w, ecs_query *q, size_t size) {
  void *p;
  if (size <= q->scratch_size) return q->scratch;
  p = ecsi_realloc(w, q->scratch, q->scratch_size, size);
  if (p == NULL) return NULL;
  q->scratch = p;
  q->scratch_size = size;
  return p;
}

uint32_t ecsi_rows_run(const ecsi_rows *r, uint32_t i, uint32_t max) {
  uint32_t n = r->runend[i] - i;
  return n < max ? n : max;
}

/*
** Changes whenever a version of q's managers or the destroy epoch does:
** all are counters that only go up, so their sum moves if any of them
** moved (a 64-bit sum does not wrap in practice). One number per chunk
** instead of a copy of every version in the iterator.
*/
static uint64_t stamp(const ecs_world *w, const ecs_query *q) {
  uint64_t sum = w->destroy_epoch;
  for (uint32_t k = 0; k < q->nwith + q->nwithout; k++)
    sum += ecs_component_version(q->term[k]);
  return sum;
}

bool ecs_query_iter_current(const ecs_world *w, const ecs_query_iter *it) {
  return it->snap != NULL && stamp(w, it->q) == it->stamp;
}

ecs_err ecs_query_iter_begin(ecs_world *w, ecs_query *q, ecs_query_iter *it) {
  ecsi_rows r;
  ecs_err err = ecsi_query_pin(w, q, &r);
  it->q = q;
  it->snap = err == ECS_ERR_OK ? r.snap : NULL;
  it->pos = 0;
  return err;
}

/*
** The snapshot may be older than the world (entities destroyed, instances
** removed during the loop), so each entity is checked against the
** current state before it is handed out.
*/
bool ecs_query_iter_next(const ecs_world *w, ecs_query_iter *it,
                         ecs_entity *e) {
  const qsnap *s = (const qsnap *)it->snap;
  if (s == NULL) return false;
  while (it->pos < s->count) {
    ecs_entity x = s->entity[it->pos++];
    if (ecs_query_matches(w, it->q, x)) {
      *e = x;
      return true;
    }
  }
  return false;
}

/*
** Two ways, chosen per chunk: while the pinned snapshot is the current
** one and not stale, its entities and rows are exact, and a chunk is two
** memcpy; once anything changed, each entity is checked and its rows
** looked up again, as iter_next does. The stamp taken here lets
** ecs_query_iter_current tell the caller whether the rows it got are
** still exact after it ran code of its own.
*/
uint32_t ecs_query_iter_chunk(const ecs_world *w, ecs_query_iter *it,
                              uint32_t max, ecs_entity *ents, uint32_t *rows) {
  const qsnap *s = (const qsnap *)it->snap;
  const ecs_query *q = it->q;
  uint32_t n = 0;
  if (s == NULL) return 0;
  it->stamp = stamp(w, q);
  if (s == q->cur && !is_stale(w, q)) { /* the snapshot is the truth */
    n = s->count - it->pos < max ? s->count - it->pos : max;
    memcpy(ents, s->entity + it->pos, (size_t)n * sizeof *ents);
    for (uint32_t k = 0; k < q->nwith; k++)
      memcpy(rows + (size_t)k * max, s->row + (size_t)k * s->cap + it->pos,
             (size_t)n * sizeof *rows);
    it->pos += n;
    return n;
  }
  while (n < max && it->pos < s->count) { /* something changed: look up */
    ecs_entity e = s->entity[it->pos++];
    if (!ecs_query_matches(w, q, e)) continue;
    for (uint32_t k = 0; k < q->nwith; k++)
      rows[(size_t)k * max + n] = ecs_component_lookup(w, q->term[k], e);
    ents[n++] = e;
  }
  return n;
}

void ecs_query_iter_end(ecs_world *w, ecs_query_iter *it) {
  if (it->snap == NULL) return;
  ecsi_query_unpin(w, it->q, it->snap);
  it->snap = NULL;
}

/* ------------------------------------------------------------------------
** Consistency
** --------------------------------------------------------------------- */

/*
** A snapshot's capacity was computed from the need of the rebuild that
** made it (snap_capacity): at least that need, at most 1.5 x max(need,
** MIN_SNAP_CAP); its size matches. (Rebuilds that reuse it in place need
** no more than its capacity and, unless shrinking it failed, more than a
** quarter of it.)
*/
static bool snap_sized(const ecs_query *q, const qsnap *s) {
  uint64_t m = s->sized_for < MIN_SNAP_CAP ? MIN_SNAP_CAP : s->sized_for;
  return s->cap >= s->sized_for && s->cap >= MIN_SNAP_CAP &&
         (uint64_t)s->cap <= m + m / 2u && s->bytes == snap_bytes(q, s->cap);
}

/*
** For a query whose snapshot is up to date: every entry matches with the
** right rows, the driver's rows increase (so no entity is listed twice),
** and the number of entries equals a brute-force count over the driver.
*/
static const char *query_check(const ecs_world *w, const ecs_query *q) {
  const qsnap *s = q->cur;
  const ecs_component *d;
  const ecs_entity *own;
  size_t expect = 0;
  for (const qsnap *r = q->retired; r != NULL; r = r->next_retired) {
    if (r->pins == 0) return "query: an unpinned snapshot is retired";
    if (!snap_sized(q, r)) return "query: a snapshot is not sized by its need";
  }
  if (s != NULL && !snap_sized(q, s))
    return "query: a snapshot is not sized by its need";
  if (s == NULL || is_stale(w, q)) return NULL;
  if (s->count > s->cap || s->driver >= q->nwith)
    return "query: snapshot count exceeds its capacity";
  for (uint32_t i = 0; i < s->count; i++) {
    if (!ecs_query_matches(w, q, s->entity[i]))
      return "query: a cached entity does not match";
    for (uint32_t k = 0; k < q->nwith; k++)
      if (s->row[(size_t)k * s->cap + i] !=
          ecs_component_lookup(w, q->term[k], s->entity[i]))
        return "query: a cached row is wrong";
    if (i > 0 && s->row[(size_t)s->driver * s->cap + i] <=
                     s->row[(size_t)s->driver * s->cap + i - 1])
      return "query: cached rows out of order";
    if (s->runend[i] <= i || s->runend[i] > s->count ||
        (i > 0 && s->runend[i - 1] != i && s->runend[i - 1] != s->runend[i]))
      return "query: cached runs are wrong";
  }
  d = q->term[s->driver];
  own = ecs_component_entities(d);
  for (uint32_t i = 0; i < ecs_component_size(d); i++)
    expect += ecs_query_matches(w, q, own[i]);
  if (expect != s->count) return "query: cached match count is wrong";
  return NULL;
}

const char *ecsi_queries_check(const ecs_world *w) {
  for (const ecs_query *q = w->queries; q != NULL; q = q->next) {
    const char *bad = query_check(w, q);
    if (bad != NULL) return bad;
    if (q->next != NULL && q->next->prev != q) return "query: list broken";
  }
  return NULL;
}
