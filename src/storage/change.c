/*
** change.c -- change ticks: which rows of a component manager were
** written or added since a query last completed a pass.
**
** The world keeps a clock (ecs_world.change_clock). A manager named by a
** query's `changed` (or `added`) terms keeps one 32-bit stamp per row:
** the clock's tick when the row was last written (or created). A query
** remembers the tick of its last completed pass (since) and reports the
** rows stamped after it; completing a pass moves the clock on, so the
** pass's own writes, stamped with the tick it completed at, are not
** reported next time (API.md, "Reacting to changes").
**
** Costs: a manager no such query watches has no stamp arrays, and every
** write path pays one test of a NULL pointer; a watched one pays one
** 4-byte store per written row (not per field). The arrays follow the
** rows: they grow with the columns, the swap of a remove moves the last
** row's stamps, re-alignment permutes them, a load stamps every row.
**
** The clock is 32 bits. Before it runs out (ECSI_CLOCK_LIMIT) every stamp
** and every query's mark are renumbered down, the order between each
** stamp and each mark kept; a query that has not completed a pass for
** 2^30 ticks is treated as new (its next pass reports every match), so
** renumbering never hides a change.
**
** Layer: managers (with component.c), below query.
*/
#include <string.h>

#include "checksum.h"
#include "component.h"
#include "component_private.h"
#include "query_private.h"

/* ------------------------------------------------------------------------
** The stamp arrays of a manager
** --------------------------------------------------------------------- */

/*
** An array of kind k exists while some query watches kind k of c and the
** manager has room for rows (cap[k] >= the columns' capacity then); the
** write paths test only its pointer. Each array counts its own capacity,
** so a reserve that fails half way leaves both consistent.
*/
static ecs_err grow(ecs_world *w, ecsi_ticks *t, int k, uint32_t cap) {
  void *p;
  if (cap <= t->cap[k]) return ECS_ERR_OK;
  p = ecsi_realloc(w, t->at[k], (size_t)t->cap[k] * sizeof(uint32_t),
                   (size_t)cap * sizeof(uint32_t));
  if (p == NULL) return ECS_ERR_NOMEM;
  /* rows past the columns' size are never read before they are stamped */
  memset((uint32_t *)p + t->cap[k], 0,
         (size_t)(cap - t->cap[k]) * sizeof(uint32_t));
  t->at[k] = (uint32_t *)p;
  t->cap[k] = cap;
  return ECS_ERR_OK;
}

/* Room for cap rows in every kind kept (watched, or kept from a load). */
ecs_err ecsi_ticks_reserve(ecs_world *w, ecs_component *c, uint32_t cap) {
  for (int k = 0; k < ECSI_TICK_KINDS; k++)
    if ((c->ticks.watchers[k] > 0 || c->ticks.at[k] != NULL) &&
        grow(w, &c->ticks, k, cap) != ECS_ERR_OK)
      return ECS_ERR_NOMEM;
  return ECS_ERR_OK;
}

/*
** Start keeping stamps of kind for c (one more watcher). The first
** watcher allocates the array, sized to the columns, every row stamped 0:
** older than any mark a query can have (the watcher's query reports every
** match on its first pass anyway) -- unless a load kept one (the stamps
** of a restored world, waiting for its queries: see "Stamps saved").
*/
ecs_err ecsi_ticks_watch(ecs_world *w, ecs_component *c, int kind) {
  ecsi_ticks *t = &c->ticks;
  if (t->watchers[kind] == 0 && c->cap > 0 &&
      grow(w, t, kind, c->cap) != ECS_ERR_OK)
    return ECS_ERR_NOMEM;
  t->watchers[kind]++;
  return ECS_ERR_OK;
}

void ecsi_ticks_unwatch(ecs_world *w, ecs_component *c, int kind) {
  ecsi_ticks *t = &c->ticks;
  if (t->watchers[kind] == 0 || --t->watchers[kind] > 0) return;
  ecsi_free(w, t->at[kind], (size_t)t->cap[kind] * sizeof(uint32_t));
  t->at[kind] = NULL;
  t->cap[kind] = 0;
}

void ecsi_ticks_free(ecs_world *w, ecs_component *c) {
  ecsi_ticks *t = &c->ticks;
  for (int k = 0; k < ECSI_TICK_KINDS; k++)
    ecsi_free(w, t->at[k], (size_t)t->cap[k] * sizeof(uint32_t));
  memset(t, 0, sizeof *t);
}

size_t ecsi_ticks_bytes(const ecs_component *c) {
  return ((size_t)c->ticks.cap[0] + c->ticks.cap[1]) * sizeof(uint32_t);
}

/* Rows [first, first + n): written and added now (a new instance, a
** loaded one). */
void ecsi_ticks_stamp_new(const ecs_world *w, ecs_component *c,
                          uint32_t first, uint32_t n) {
  uint32_t now = ecsi_clock_now(w);
  for (int k = 0; k < ECSI_TICK_KINDS; k++) {
    uint32_t *a = c->ticks.at[k];
    if (a != NULL)
      for (uint32_t i = 0; i < n; i++) a[first + i] = now;
  }
}

/*
** Re-alignment: the row r goes to dest[r]. into[k] are fresh arrays of
** cap[k] entries the caller allocated (ecsi_ticks_alloc_like) where
** at[k] is not NULL; they replace the old ones.
*/
/* Fresh arrays like c's (for a permutation): false, none left, when one
** could not be allocated. */
bool ecsi_ticks_alloc_like(ecs_world *w, const ecs_component *c,
                           uint32_t **into) {
  for (int k = 0; k < ECSI_TICK_KINDS; k++) {
    into[k] = NULL;
    if (c->ticks.at[k] == NULL) continue;
    into[k] = (uint32_t *)ecsi_realloc(
        w, NULL, 0, (size_t)c->ticks.cap[k] * sizeof(uint32_t));
    if (into[k] == NULL) {
      while (k-- > 0)
        ecsi_free(w, into[k], (size_t)c->ticks.cap[k] * sizeof(uint32_t));
      return false;
    }
    memset(into[k], 0, (size_t)c->ticks.cap[k] * sizeof(uint32_t));
  }
  return true;
}

void ecsi_ticks_permute(ecs_world *w, ecs_component *c, const uint32_t *dest,
                        uint32_t **into) {
  ecsi_ticks *t = &c->ticks;
  for (int k = 0; k < ECSI_TICK_KINDS; k++) {
    if (t->at[k] == NULL) continue;
    for (uint32_t r = 0; r < c->size; r++) into[k][dest[r]] = t->at[k][r];
    ecsi_free(w, t->at[k], (size_t)t->cap[k] * sizeof(uint32_t));
    t->at[k] = into[k];
  }
}

/* ------------------------------------------------------------------------
** Stamps saved (component_hooks.c's layout 3)
**
** A snapshot keeps, per kind, the stamps some query could still tell from
** 0: those later than the floor, the oldest cursor of the queries that
** watch that kind of c and have completed a pass (a query that has not
** reports every match anyway, and a query made later, after a load, gets
** one of those cursors or starts fresh). All the others are 0 to every
** query, so they are saved as 0: a pass over a restored world reports what
** the saved one's would have, and equal worlds save equal bytes. The
** layout per kind: u32 n, then n x (u32 row, u32 stamp), rows ascending,
** live rows only, stamps later than the floor.
**
** A snapshot's load writes them into c's arrays, making an array for a
** kind that has stamps and no watcher yet (kept: the queries of a world
** made by ecs.restore come after its load), and stamps every other row 0.
** A manager's part loaded alone (its class's load, with no snapshot's
** clock and cursors around it) stamps every row new, as a write would.
** --------------------------------------------------------------------- */

/* The latest stamp no query of c's that watches kind can tell from 0. */
static uint32_t floor_of(const ecs_component *c, int kind) {
  uint32_t floor = UINT32_MAX;
  for (uint32_t k = 0; k < c->nwatch; k++) {
    const ecs_query *q = c->watch[k].q;
    uint32_t mask = kind == ECSI_TICK_CHANGED ? q->changed_mask : q->added_mask;
    if ((mask >> c->watch[k].term & 1u) && q->since != 0 && q->since < floor)
      floor = q->since;
  }
  return floor;
}

ecs_err ecsi_ticks_save(const ecs_world *w, const ecs_component *c,
                        ecs_writer *out) {
  const ecs_entity *own = (const ecs_entity *)c->data;
  for (int k = 0; k < ECSI_TICK_KINDS; k++) {
    const uint32_t *a = c->ticks.at[k];
    uint32_t floor = floor_of(c, k), n = 0;
    ecs_err err;
    if (w->kept_floor != NULL) floor = w->kept_floor(w, floor);
    for (uint32_t i = 0; a != NULL && i < c->size; i++)
      n += a[i] > floor && ecs_alive(w, own[i]);
    if ((err = ecs_write_u32(out, n)) != ECS_ERR_OK) return err;
    for (uint32_t i = 0; n > 0 && i < c->size; i++)
      if (a[i] > floor && ecs_alive(w, own[i]) &&
          ((err = ecs_write_u32(out, i)) != ECS_ERR_OK ||
           (err = ecs_write_u32(out, a[i])) != ECS_ERR_OK))
        return err;
  }
  return ECS_ERR_OK;
}

ecs_err ecsi_ticks_read(const ecs_world *w, ecs_reader *in, uint32_t count,
                        ecsi_saved_ticks *out) {
  uint32_t limit = w->stamp_limit != 0 ? w->stamp_limit : UINT32_MAX;
  for (int k = 0; k < ECSI_TICK_KINDS; k++) {
    uint32_t n, row, stamp;
    bool first = true;
    uint32_t last = 0;
    if (ecs_read_u32(in, &n) != ECS_ERR_OK || n > count ||
        n > (in->size - in->pos) / 8u)
      return ECS_ERR_CORRUPT;
    out->n[k] = n;
    out->at[k] = in->data + in->pos;
    for (uint32_t j = 0; j < n; j++) {
      (void)ecs_read_u32(in, &row);
      (void)ecs_read_u32(in, &stamp);
      if (row >= count || (!first && row <= last) || stamp == 0 || stamp > limit)
        return ECS_ERR_CORRUPT;
      first = false;
      last = row;
    }
  }
  /* stamps count only against the clock and cursors of their snapshot:
  ** a manager loaded alone (no snapshot around it) stamps its rows new */
  out->given = w->stamp_limit != 0;
  return ECS_ERR_OK;
}

ecs_err ecsi_ticks_keep(ecs_world *w, ecs_component *c,
                        const ecsi_saved_ticks *t, uint32_t cap) {
  for (int k = 0; k < ECSI_TICK_KINDS; k++)
    if (t->given && t->n[k] > 0 && grow(w, &c->ticks, k, cap) != ECS_ERR_OK)
      return ECS_ERR_NOMEM;
  return ECS_ERR_OK;
}

void ecsi_ticks_load(ecs_world *w, ecs_component *c, const ecsi_saved_ticks *t) {
  if (!t->given) { /* an older snapshot: every row written and added now */
    ecsi_ticks_stamp_new(w, c, 0, c->size);
    return;
  }
  for (int k = 0; k < ECSI_TICK_KINDS; k++) {
    uint32_t *a = c->ticks.at[k];
    if (a == NULL) continue;
    memset(a, 0, (size_t)c->size * sizeof *a);
    for (uint32_t j = 0; j < t->n[k]; j++) {
      uint32_t row = ecsi_get_u32(t->at[k] + 8u * j);
      a[row] = ecsi_get_u32(t->at[k] + 8u * j + 4u);
    }
  }
}

/* ------------------------------------------------------------------------
** Writes (component.h)
** --------------------------------------------------------------------- */

/* An owned component's owner hears of every bulk write (component.h, "Owned components"). */
static void tell_owner(ecs_world *w, ecs_component *c, const ecs_instance *rows,
                       ecs_instance first, size_t n) {
  if (c->owner != NULL && n > 0)
    c->owner->written(w, c->owner_ud, c, rows, first, n);
}

/*
** The write bracket (component.h): begin tells whoever keeps old values
** (the journal, through the barrier) before the rows change; end stamps
** the rows for change queries, tells an owned component's owner, and
** tells the barrier that the rows were written. A write of one row given
** alone (rows NULL, n 1) through the public pair is one complete write:
** its values are final until the next begin, so the journal may keep them
** at the end (journal_image.c). The core's bulk paths say `one` false
** whatever n is: a chunk cursor ends its rows' bracket before its caller
** writes them (query_cursor.c), and a run's rows are many.
*/
/* WRITE_BEGIN or WRITE_END, to whoever hears it. */
static void tell_rows(ecs_world *w, ecsi_event ev, ecs_component *c,
                      const ecs_instance *rows, ecs_instance first, size_t n,
                      bool one) {
  if (ecsi_heard(w, ev)) {
    ecsi_change ch = {0};
    ch.c = c;
    ch.rows = rows;
    ch.row = first;
    ch.n = n;
    ch.one = one;
    (void)ecsi_emit(w, ev, &ch);
  }
}

void ecsi_write_begin(ecs_world *w, ecs_component *c, const ecs_instance *rows,
                      ecs_instance first, size_t n, bool one) {
  tell_rows(w, ECSI_EV_WRITE_BEGIN, c, rows, first, n, one);
}

void ecsi_write_end(ecs_world *w, ecs_component *c, const ecs_instance *rows,
                    ecs_instance first, size_t n, bool one) {
  uint32_t *a = c->ticks.at[ECSI_TICK_CHANGED], now;
  if (one) { /* heard before the stamp */
    tell_rows(w, ECSI_EV_WRITE_END, c, NULL, first, 1, true);
    if (a != NULL && first < c->size) a[first] = ecsi_clock_now(w);
    if (first < c->size) tell_owner(w, c, NULL, first, 1);
    return;
  }
  if (rows != NULL) {
    if (a != NULL) {
      now = ecsi_clock_now(w);
      for (size_t j = 0; j < n; j++)
        if (rows[j] < c->size) a[rows[j]] = now;
    }
    tell_rows(w, ECSI_EV_WRITE_END, c, rows, 0, n, false);
    tell_owner(w, c, rows, 0, n);
    return;
  }
  if (first >= c->size) return;
  if (n > c->size - first) n = c->size - first;
  if (a != NULL) {
    now = ecsi_clock_now(w);
    for (size_t j = 0; j < n; j++) a[first + j] = now;
  }
  tell_rows(w, ECSI_EV_WRITE_END, c, NULL, first, n, false);
  tell_owner(w, c, NULL, first, n);
}

void ecs_component_write_begin(ecs_world *w, ecs_component *c,
                               const ecs_instance *rows, ecs_instance first,
                               size_t n) {
  ecsi_write_begin(w, c, rows, first, n, rows == NULL && n == 1);
}

void ecs_component_write_end(ecs_world *w, ecs_component *c,
                             const ecs_instance *rows, ecs_instance first,
                             size_t n) {
  ecsi_write_end(w, c, rows, first, n, rows == NULL && n == 1);
}

const uint32_t *ecsi_ticks_of(const ecs_component *c, int kind) {
  return c->ticks.at[kind];
}

/* ------------------------------------------------------------------------
** The clock
** --------------------------------------------------------------------- */

/*
** Renumber: base is the oldest mark still honoured (at most 2^30 ticks
** back); a stamp s becomes s - base + 1 (0 when older than base: older
** than every mark left), a mark m becomes m - base + 1, and a query whose
** mark is older than base becomes new (mark 0: its next pass reports every
** match). s > m is kept for every stamp and mark kept.
*/
static void renumber(ecs_world *w) {
  uint32_t now = ecsi_clock_now(w), base = now - (1u << 30);
  uint32_t oldest = now;
  for (ecs_query *q = w->queries; q != NULL; q = q->next)
    if ((q->changed_mask | q->added_mask) != 0 && q->since != 0 &&
        q->since >= base && q->since < oldest)
      oldest = q->since;
  base = oldest;
  for (uint32_t m = 0; m < w->manager_count; m++) {
    ecs_component *c;
    if (!ecs_component_is(w->manager[m].cls)) continue;
    c = (ecs_component *)w->manager[m].self;
    for (int k = 0; k < ECSI_TICK_KINDS; k++) {
      uint32_t *a = c->ticks.at[k];
      if (a == NULL) continue;
      for (uint32_t i = 0; i < c->size; i++)
        a[i] = a[i] < base ? 0 : a[i] - base + 1u;
    }
  }
  for (ecs_query *q = w->queries; q != NULL; q = q->next)
    if (q->since != 0) q->since = q->since < base ? 0 : q->since - base + 1u;
  w->change_clock = now - base; /* now becomes now - base + 1 */
}

/* A pass of q completed: its mark is now, and the clock moves on. */
void ecs_query_complete(ecs_world *w, ecs_query *q) {
  if ((q->changed_mask | q->added_mask) == 0) return;
  q->since = ecsi_clock_now(w);
  if (++w->change_clock >= ECSI_CLOCK_LIMIT) renumber(w);
}

void ecsi_world_set_clock(ecs_world *w, uint32_t clock) {
  w->change_clock = clock;
}

uint32_t ecsi_world_clock(const ecs_world *w) { return w->change_clock; }
