/*
** journal.c -- recording a world's changes from a mark: captures, the
** mark, open and close (journal.h; docs/persistence.md, "The
** journal"). delta.c applies what this writes.
**
** Captures. Before the first change of a (generic component, entity
** index) pair in the mark's interval, the pair's state is copied: absent,
** or the live owner and its row packed field after field. A bitmap per
** component (by index) makes every later change of the pair one bit test.
** Lua cells are captured as their references: the journal keeps a set of
** the references it captured, and when a cell drops one (overwritten,
** removed, collected) the cell asks the journal first (ecsi_journal_claim_ref):
** a captured reference stays alive until the mark moves, so undo puts back
** the very value, and a delta made later hashes what it was.
**
** Entities: the old state of each slot changed, the indices popped from
** the free queue and pushed onto it, in order; the slot count, live count
** and queue length at the mark. Undo needs no allocation for them: the
** queue at the mark is the popped indices, then the queue now without the
** indices pushed since.
**
** Other managers (transform, names, plugins) are kept whole: their save
** at the mark. A delta compares each with its save now and carries the
** whole of the ones that differ; undo loads the saved bytes into a twin
** and swaps it in.
**
** Errors while recording. A capture happens inside writes, destroys and
** sweeps that cannot fail; when it cannot get memory, the journal is
** marked lost instead, the write goes on, and the next delta or undo
** reports ECS_ERR_LOST: never a delta that silently misses a change.
**
** Layer: world (with snapshot.c), above the managers.
*/
#include <string.h>

#include "journal_private.h"
#include "snapshot.h"

/* ------------------------------------------------------------------------
** Small buffers
** --------------------------------------------------------------------- */

ecs_err ecsi_jbuf_reserve(ecsi_jbuf *b, size_t more) {
  size_t ncap;
  void *p;
  if (more <= b->cap - b->n) return ECS_ERR_OK;
  if (more > SIZE_MAX / 4 - b->n) return ECS_ERR_NOMEM;
  ncap = b->cap ? b->cap : 256;
  while (ncap < b->n + more) ncap *= 2;
  p = ecsi_realloc(b->w, b->p, b->cap, ncap);
  if (p == NULL) return ECS_ERR_NOMEM;
  b->p = (unsigned char *)p;
  b->cap = ncap;
  return ECS_ERR_OK;
}

ecs_err ecsi_jbuf_write(void *ud, const void *data, size_t size) {
  ecsi_jbuf *b = (ecsi_jbuf *)ud;
  if (size == 0) return ECS_ERR_OK;
  if (ecsi_jbuf_reserve(b, size) != ECS_ERR_OK) return ECS_ERR_NOMEM;
  memcpy(b->p + b->n, data, size);
  b->n += size;
  return ECS_ERR_OK;
}

void ecsi_jbuf_free(ecsi_jbuf *b) {
  ecsi_free(b->w, b->p, b->cap);
  b->p = NULL;
  b->n = b->cap = 0;
}

/* Grow an array of u32-sized counts (ecsi_grow works on uint32_t caps). */
static bool grow(ecs_world *w, void **p, uint32_t *cap, uint32_t need,
                 size_t elem) {
  return ecsi_grow(w, p, cap, need, elem, 16) == ECS_ERR_OK;
}

/* ------------------------------------------------------------------------
** Held references
** --------------------------------------------------------------------- */

static uint32_t held_slot(const ecs_journal *j, uint32_t ref) {
  uint32_t mask = j->heldcap - 1u, k = (uint32_t)ecsi_mix64(ref) & mask;
  while (j->held[k] != 0 && j->held[k] != ref) k = (k + 1u) & mask;
  return k;
}

/* Room for n more held references, in the set and in the world's list
** of released ones (so that releasing never allocates). */
static bool held_reserve(ecs_world *w, ecs_journal *j, uint32_t n) {
  size_t need = w->jref_len + j->nheld + n;
  if (need > w->jref_cap) {
    size_t ncap = w->jref_cap ? w->jref_cap : 64u;
    void *p;
    while (ncap < need) ncap *= 2u;
    p = ecsi_realloc(w, w->jref, w->jref_cap * sizeof(uint32_t),
                     ncap * sizeof(uint32_t));
    if (p == NULL) return false;
    w->jref = (uint32_t *)p;
    w->jref_cap = ncap;
  }
  if ((j->nheld + n) * 2u > j->heldcap) {
    uint32_t ncap = j->heldcap ? j->heldcap : 64u, *oh = j->held, ocap = j->heldcap;
    uint8_t *oo = j->orphan;
    while ((j->nheld + n) * 2u > ncap) {
      if (ncap > UINT32_MAX / 4u) return false;
      ncap *= 2u;
    }
    j->held = (uint32_t *)ecsi_realloc(w, NULL, 0, (size_t)ncap * sizeof(uint32_t));
    j->orphan = (uint8_t *)ecsi_realloc(w, NULL, 0, ncap);
    if (j->held == NULL || j->orphan == NULL) {
      ecsi_free(w, j->held, (size_t)ncap * sizeof(uint32_t));
      ecsi_free(w, j->orphan, ncap);
      j->held = oh;
      j->orphan = oo;
      return false;
    }
    memset(j->held, 0, (size_t)ncap * sizeof(uint32_t));
    j->heldcap = ncap;
    for (uint32_t k = 0; k < ocap; k++)
      if (oh[k] != 0) {
        uint32_t s = held_slot(j, oh[k]);
        j->held[s] = oh[k];
        j->orphan[s] = oo[k];
      }
    ecsi_free(w, oh, (size_t)ocap * sizeof(uint32_t));
    ecsi_free(w, oo, ocap);
  }
  return true;
}

static void held_add(ecs_journal *j, uint32_t ref) {
  uint32_t s = held_slot(j, ref);
  if (j->held[s] == ref) return;
  j->held[s] = ref;
  j->orphan[s] = 0;
  j->nheld++;
}

bool ecsi_journal_claim_ref(ecs_world *w, uint32_t ref) {
  ecs_journal *j = w->journal;
  uint32_t s;
  if (j == NULL || j->nheld == 0 || ref == 0) return false;
  s = held_slot(j, ref);
  if (j->held[s] != ref) return false;
  j->orphan[s] = 1;
  return true;
}

/* Forget every held reference; the ones no cell holds any more are
** released to the world's list (room reserved when they were captured). */
static void held_release(ecs_world *w, ecs_journal *j, bool release) {
  for (uint32_t k = 0; k < j->heldcap && j->nheld > 0; k++) {
    if (j->held[k] == 0) continue;
    if (release && j->orphan[k]) w->jref[w->jref_len++] = j->held[k];
    j->held[k] = 0;
    j->nheld--;
  }
  j->nheld = 0;
}

/* ------------------------------------------------------------------------
** Captures
** --------------------------------------------------------------------- */

static ecsi_jcomp *jcomp_of(ecs_world *w, ecs_journal *j, ecs_component *c) {
  ecsi_jcomp *jc = c->journal;
  if (jc != NULL) return jc;
  if (j->ncomp == j->compcap &&
      !grow(w, (void **)&j->comp, &j->compcap, j->ncomp + 1, sizeof *j->comp))
    return NULL;
  jc = (ecsi_jcomp *)ecsi_realloc(w, NULL, 0, sizeof *jc);
  if (jc == NULL) return NULL;
  memset(jc, 0, sizeof *jc);
  jc->c = c;
  jc->epoch = 1;
  for (uint32_t m = 0; m < w->manager_count; m++)
    if (w->manager[m].self == (void *)c) jc->name_hash = ecsi_manager_name_hash(w, m);
  j->comp[j->ncomp++] = jc;
  c->journal = jc;
  return jc;
}

static bool seen_test_set(ecs_world *w, uint32_t **bits, uint32_t *words,
                          uint32_t index, bool *was) {
  uint32_t word = index >> 5;
  if (word >= *words) {
    uint32_t old = *words, ncap = old;
    void *p = *bits;
    if (ecsi_grow(w, &p, &ncap, word + 1u, sizeof(uint32_t), 64) != ECS_ERR_OK)
      return false;
    *bits = (uint32_t *)p;
    memset(*bits + old, 0, (size_t)(ncap - old) * sizeof(uint32_t));
    *words = ncap;
  }
  *was = ((*bits)[word] >> (index & 31u) & 1u) != 0;
  (*bits)[word] |= 1u << (index & 31u);
  return true;
}

static void seen_clear(uint32_t *bits, uint32_t index) {
  bits[index >> 5] &= ~(1u << (index & 31u));
}

/* single: a write of this one instance follows (its after-image is
** prepared: journal_image.c); else one of many, whose caller makes every
** image of c stale (ecsi_journal_bulk). */
static void capture(ecs_world *w, ecs_component *c, uint32_t index,
                    bool single) {
  ecs_journal *j = w->journal;
  ecsi_jcomp *jc;
  ecsi_jcap *cap;
  bool was;
  uint32_t i;
  /* an owned component (the transform's columns) is its owner's: the
  ** journal keeps the owner whole, never the component's rows */
  if (j == NULL || j->lost || c->owner != NULL) return;
  jc = c->journal;
  if (jc != NULL && (index >> 5) < jc->seen_words &&
      (jc->seen[index >> 5] >> (index & 31u) & 1u)) {
    /* the common case: captured already */
    if (single) ecsi_journal_reprepare(jc, index);
    return;
  }
  if ((jc = jcomp_of(w, j, c)) == NULL ||
      (jc->n == jc->ncap &&
       !grow(w, (void **)&jc->cap, &jc->ncap, jc->n + 1, sizeof *jc->cap)) ||
      !held_reserve(w, j, c->nlua)) {
    ecsi_journal_lose(j, true);
    return;
  }
  i = map_get(c, index);
  cap = &jc->cap[jc->n];
  cap->index = index;
  cap->owner = 0;
  cap->row = i != ECS_NO_INSTANCE ? i : c->size; /* an add appends */
  cap->at = j->nbytes;
  cap->img = 0;
  for (int k = 0; k < ECSI_TICK_KINDS; k++)
    cap->stamp[k] = i != ECS_NO_INSTANCE && c->ticks.at[k] != NULL ? c->ticks.at[k][i] : 0;
  if (i != ECS_NO_INSTANCE && ecs_alive(w, owners(c)[i])) {
    size_t size = ecsi_packed_size(c);
    ecsi_jbuf b;
    b.w = w;
    b.p = j->bytes;
    b.n = j->nbytes;
    b.cap = j->bytecap;
    if (ecsi_jbuf_reserve(&b, size) != ECS_ERR_OK) {
      ecsi_journal_lose(j, true);
      return;
    }
    j->bytes = b.p;
    j->bytecap = b.cap;
    if (size > 0) ecsi_pack_row(c, i, j->bytes + j->nbytes);
    j->nbytes += size;
    cap->owner = owners(c)[i];
    for (uint32_t k = 0; k < c->nlua; k++) {
      uint32_t ref = ((const uint32_t *)(const void *)col(c, c->lua_field[k]))[i];
      if (ref != 0) held_add(j, ref);
    }
  }
  if (!seen_test_set(w, &jc->seen, &jc->seen_words, index, &was)) {
    j->nbytes = cap->at; /* (held refs stay held: harmless) */
    ecsi_journal_lose(j, true);
    return;
  }
  jc->n++;
  j->captures++;
  jc->memo = single ? jc->n : 0;
}

void ecsi_journal_capture(ecs_world *w, ecs_component *c, uint32_t index) {
  capture(w, c, index, true);
}

/* ------------------------------------------------------------------------
** Layout
**
** A component's rows are world state (component_layout.c says why): undo
** puts back the rows of the mark and a delta carries the rows of now. So
** the first change of the interval to a component's size, gc cursor or a
** row's owner records the size, cursor and churn of the mark, and the
** first change of each row below that size records the row's owner then
** (a row at or past it did not exist at the mark). A delta's rows are then
** those recorded and those past the mark's size; undo's are the recorded
** ones. Rows whose owner only moved (the swap of a remove) are recorded
** too: their owner's values move with it and need no capture.
** --------------------------------------------------------------------- */

void ecsi_journal_layout_at(ecs_world *w, ecs_component *c, uint32_t row) {
  ecs_journal *j = w->journal;
  ecsi_jcomp *jc;
  bool was;
  if (j == NULL || j->lost || c->owner != NULL) return;
  if ((jc = jcomp_of(w, j, c)) == NULL) {
    ecsi_journal_lose(j, true);
    return;
  }
  if (!jc->laid) {
    jc->laid = true;
    jc->mark_size = c->size;
    jc->mark_cursor = c->gc_cursor;
    jc->mark_churn = ecsi_component_churn(c);
  }
  if (row >= jc->mark_size) return;
  if ((row >> 5) < jc->row_words && (jc->row_seen[row >> 5] >> (row & 31u) & 1u))
    return;
  if ((jc->nrow == jc->rowcap &&
       !grow(w, (void **)&jc->row, &jc->rowcap, jc->nrow + 1, sizeof *jc->row)) ||
      !seen_test_set(w, &jc->row_seen, &jc->row_words, row, &was)) {
    ecsi_journal_lose(j, true);
    return;
  }
  jc->row[jc->nrow].row = row;
  jc->row[jc->nrow].owner = owners(c)[row];
  jc->nrow++;
}

void ecsi_journal_layout_all(ecs_world *w, ecs_component *c) {
  if (w->journal == NULL) return;
  ecsi_journal_layout_at(w, c, UINT32_MAX);
  for (uint32_t r = 0; r < c->size && w->journal != NULL && !w->journal->lost; r++)
    ecsi_journal_layout_at(w, c, r);
}

void ecsi_journal_rows(ecs_world *w, ecs_component *c, const uint32_t *rows,
                       size_t n) {
  if (w->journal == NULL) return;
  for (size_t k = 0; k < n; k++)
    if (rows[k] < c->size)
      capture(w, c, ecs_entity_index(owners(c)[rows[k]]), false);
  ecsi_journal_bulk(c);
}

void ecsi_journal_range(ecs_world *w, ecs_component *c, uint32_t first,
                        size_t n) {
  if (w->journal == NULL) return;
  for (size_t k = 0; k < n && first + k < c->size; k++)
    capture(w, c, ecs_entity_index(owners(c)[first + k]), false);
  ecsi_journal_bulk(c);
}

void ecsi_journal_slot(ecs_world *w, uint32_t index) {
  ecs_journal *j = w->journal;
  bool was;
  if (j == NULL || j->lost) return;
  if ((index >> 5) < j->slot_words &&
      (j->slot_seen[index >> 5] >> (index & 31u) & 1u))
    return;
  if ((j->nslot == j->slotcap &&
       !grow(w, (void **)&j->slot, &j->slotcap, j->nslot + 1, sizeof *j->slot)) ||
      !seen_test_set(w, &j->slot_seen, &j->slot_words, index, &was)) {
    ecsi_journal_lose(j, true);
    return;
  }
  j->slot[j->nslot].index = index;
  j->slot[j->nslot].old = index < w->head.slot_count ? w->head.slot[index]
                                                     : (uint16_t)ECS_SLOT_FREE;
  j->nslot++;
}

static void log_index(ecs_world *w, uint32_t **a, uint32_t *n, uint32_t *cap,
                      uint32_t index) {
  ecs_journal *j = w->journal;
  if (j == NULL || j->lost) return;
  if (*n == *cap && !grow(w, (void **)a, cap, *n + 1, sizeof **a)) {
    ecsi_journal_lose(j, true);
    return;
  }
  (*a)[(*n)++] = index;
}

void ecsi_journal_popped(ecs_world *w, uint32_t index) {
  if (w->journal != NULL)
    log_index(w, &w->journal->popped, &w->journal->npopped,
              &w->journal->poppedcap, index);
}

void ecsi_journal_pushed(ecs_world *w, uint32_t index) {
  if (w->journal != NULL)
    log_index(w, &w->journal->pushed, &w->journal->npushed,
              &w->journal->pushedcap, index);
}

/* Every generic component holding a live record of e captures it: its
** entity is about to die (a destroy does not visit the managers). */
void ecsi_journal_dying(ecs_world *w, ecs_entity e) {
  uint32_t index = ecs_entity_index(e);
  if (w->journal == NULL) return;
  for (uint32_t m = 0; m < w->manager_count; m++) {
    ecs_component *c;
    uint32_t i;
    if (!ecs_component_is(w->manager[m].cls)) continue;
    c = (ecs_component *)w->manager[m].self;
    i = map_get(c, index);
    if (i != ECS_NO_INSTANCE && owners(c)[i] == e)
      ecsi_journal_capture(w, c, index);
  }
}

void ecsi_journal_restored(ecs_world *w) {
  if (w->journal != NULL) ecsi_journal_lose(w->journal, false);
}

/* ------------------------------------------------------------------------
** A load (snapshot.c: world:restore, a migrating restore's last step)
** replaces the world's whole state at once. The journal records it as it
** records the same changes made one by one, so that a delta still carries
** the world from the mark to the loaded state and undo still takes it
** back to the mark. Before the commit, with the world's own entity table
** in place and the loaded state staged beside it (the new table, each
** manager's twin), every (component, entity index) pair whose state the
** load changes is captured (a pair changed since the mark keeps its state
** at the mark, as always), every slot whose state changes or that a change
** of the slot count adds or drops, and the free queue as operations. The
** pairs are found by comparing each component with its twin: a twin that
** keeps the owners in their rows (a rollback) row by row and column by
** column, in blocks; any other by the rows where both hold the same owner,
** then by entity index. So a restore costs, with a journal open, a compare
** of the old and new state and a capture of each pair that changed: what
** the delta then carries.
** --------------------------------------------------------------------- */

static uint32_t queued(const ecsi_queue *q, uint32_t k) {
  return q->item[(q->head + k) & (q->cap - 1u)];
}

/* A slot's state in a table of count slots (free, generation 0, past it). */
static uint32_t slot_state(const uint16_t *slot, uint32_t count, uint32_t i) {
  return i < count ? slot[i] : ECS_SLOT_FREE;
}

/* Two values of e bytes (a field's: 1, 2, 4 or 8) are the same: loads of
** those sizes, where a call to memcmp, or a copy of a variable size,
** would cost more than the rest. */
static inline bool same_value(const uint8_t *x, const uint8_t *y, size_t e) {
  switch (e) {
  case 1: return *x == *y;
  case 2: {
    uint16_t a, b;
    memcpy(&a, x, 2);
    memcpy(&b, y, 2);
    return a == b;
  }
  case 4: {
    uint32_t a, b;
    memcpy(&a, x, 4);
    memcpy(&b, y, 4);
    return a == b;
  }
  case 8: {
    uint64_t a, b;
    memcpy(&a, x, 8);
    memcpy(&b, y, 8);
    return a == b;
  }
  default: return memcmp(x, y, e) == 0;
  }
}

/* Row i of c holds what row k of its twin t holds. A lua cell of the twin
** holds a reference the host made for the loaded value: another one than
** any cell of c holds, whatever the value (empty cells aside). */
static bool same_as_twin(const ecs_component *c, uint32_t i,
                         const ecs_component *t, uint32_t k) {
  for (uint32_t f = 0; f < c->nfields; f++) {
    size_t e = c->elem[f];
    const uint8_t *x = col(c, f) + (size_t)i * e, *y = col(t, f) + (size_t)k * e;
    if (c->field[f].type == ECS_LUA) {
      uint32_t rx, ry;
      memcpy(&rx, x, sizeof rx);
      memcpy(&ry, y, sizeof ry);
      if (rx != 0 || ry != 0) return false;
    } else if (!same_value(x, y, e)) {
      return false;
    }
  }
  return true;
}

/*
** Stamps are part of a pair's state: undo puts back each captured pair's
** stamps with its values, and only those, so a load that changes a row's
** stamps and not its values must capture it too, or undo would leave the
** loaded stamps under the mark's cursors (a change query would miss, or
** repeat, what it would have reported at the mark). Two stamps that no
** cursor can tell apart -- both at most the floor: the oldest completed
** pass of the queries now, at the mark and in the snapshot -- are the
** same, so a rollback captures only the rows whose stamps some query
** sees differ.
*/
typedef struct stamp_view {
  const ecsi_saved_ticks *loaded; /* the twin's */
  uint32_t floor;
} stamp_view;

/* The stamp of kind k the load gives the twin's row r (0 unless listed:
** ecsi_ticks_load). */
static uint32_t loaded_stamp(const ecsi_saved_ticks *t, int k, uint32_t r) {
  uint32_t lo = 0, hi = t->n[k];
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2u, row = ecsi_get_u32(t->at[k] + 8u * mid);
    if (row == r) return ecsi_get_u32(t->at[k] + 8u * mid + 4u);
    if (row < r) lo = mid + 1u; else hi = mid;
  }
  return 0;
}

/* Do row i of c and row r of its twin have stamps no query tells apart? */
static bool same_stamps(const ecs_component *c, uint32_t i, const stamp_view *sv,
                        uint32_t r) {
  for (int k = 0; k < ECSI_TICK_KINDS; k++) {
    uint32_t now, then;
    if (c->ticks.at[k] == NULL) continue; /* no stamps kept, none loaded */
    if (!sv->loaded->given) return false; /* every row stamped new */
    now = c->ticks.at[k][i];
    then = loaded_stamp(sv->loaded, k, r);
    if (now != then && (now > sv->floor || then > sv->floor)) return false;
  }
  return true;
}

/* The twin keeps c's owners in their rows and brings new columns (the
** stream's, t->defer_cols): the rows whose values differ, found by blocks
** of rows compared whole. */
#define LOAD_BLOCK 256u

/* Is e alive in the table t (the one a load brings)? */
static bool alive_in(const ecsi_entity_table *t, ecs_entity e) {
  uint32_t i = ecs_entity_index(e);
  return (e & ~ECS_ID_MASK) == 0 && i != 0 && i < t->slot_count &&
         t->slot[i] == ecs_entity_generation(e);
}

static void load_rows_kept(ecs_world *w, ecs_component *c,
                           const ecs_component *t, const ecsi_entity_table *next,
                           const stamp_view *sv) {
  const unsigned char *from = t->defer_cols;
  uint32_t n = t->defer_count;
  /* a record a snapshot keeps may be dead (its values then 0): one whose
  ** owner lives on one side only changes, whatever the values; one live
  ** on both whose stamps differ changes too */
  for (uint32_t i = 0; i < n; i++) {
    bool now = ecs_alive(w, owners(c)[i]);
    if (now != alive_in(next, owners(c)[i]) || (now && !same_stamps(c, i, sv, i)))
      capture(w, c, ecs_entity_index(owners(c)[i]), false);
  }
  for (uint32_t f = 0; f < c->nfields; f++) {
    size_t e = c->elem[f];
    const uint8_t *old = col(c, f);
    for (uint32_t s = 0; s < n; s += LOAD_BLOCK) {
      uint32_t len = n - s < LOAD_BLOCK ? n - s : LOAD_BLOCK;
      if (memcmp(old + (size_t)s * e, from + (size_t)s * e, (size_t)len * e) == 0)
        continue;
      for (uint32_t i = s; i < s + len; i++)
        if (!same_value(old + (size_t)i * e, from + (size_t)i * e, e))
          capture(w, c, ecs_entity_index(owners(c)[i]), false);
    }
    from += (size_t)n * e;
  }
}

/* The twin t holds the loaded instances of c in its own rows. */
static void load_rows_new(ecs_world *w, ecs_component *c,
                          const ecs_component *t, const ecsi_entity_table *next,
                          const stamp_view *sv) {
  const ecs_entity *oc = owners(c), *ot = owners(t);
  /* each old instance: gone, or another owner, or other values */
  for (uint32_t i = 0; i < c->size; i++) {
    ecs_entity o = oc[i];
    uint32_t k;
    if (!ecs_alive(w, o)) continue; /* no state: the loop below sees its index */
    if (i < t->size && ot[i] == o) {
      k = i; /* the same row: no lookup */
    } else {
      k = map_get(t, ecs_entity_index(o));
      if (k == ECS_NO_INSTANCE || ot[k] != o) {
        capture(w, c, ecs_entity_index(o), false);
        continue;
      }
    }
    if (!alive_in(next, o)) { /* a dead record in the snapshot: it dies */
      capture(w, c, ecs_entity_index(o), false);
      continue;
    }
    if (!same_as_twin(c, i, t, k) || !same_stamps(c, i, sv, k))
      capture(w, c, ecs_entity_index(o), false);
  }
  /* each new instance whose index held no live instance of its owner */
  for (uint32_t k = 0; k < t->size; k++) {
    ecs_entity o = ot[k];
    uint32_t i = k < c->size && oc[k] == o ? k : map_get(c, ecs_entity_index(o));
    if (i == ECS_NO_INSTANCE || oc[i] != o || !ecs_alive(w, o))
      capture(w, c, ecs_entity_index(o), false);
  }
}

void ecsi_journal_loading(ecs_world *w, const ecsi_load_view *v) {
  ecs_journal *j = w->journal;
  const ecsi_entity_table *next = v->next;
  const ecsi_queue *q = &w->free, *nq = &next->free;
  uint32_t old_count = w->head.slot_count, lo, span, pops = q->len;
  stamp_view sv;
  if (j == NULL || j->lost) return;
  sv.floor = ecsi_cursors_floor(w, v->cursors, ecsi_cursors_floor(w, &j->cursors, UINT32_MAX));
  /* the components the load stages, each against its twin */
  for (uint32_t i = 0; i < v->n; i++) {
    ecs_component *c;
    if (v->which[i] == UINT32_MAX || v->twin[i] == NULL ||
        !ecs_component_is(w->manager[v->which[i]].cls))
      continue;
    c = (ecs_component *)w->manager[v->which[i]].self;
    sv.loaded = &((const ecs_component *)v->twin[i])->loaded_ticks;
    if (((const ecs_component *)v->twin[i])->defer_owners != NULL) {
      load_rows_kept(w, c, (const ecs_component *)v->twin[i], next, &sv);
      ecsi_journal_layout_at(w, c, UINT32_MAX); /* its cursor and churn */
    } else {
      load_rows_new(w, c, (const ecs_component *)v->twin[i], next, &sv);
      ecsi_journal_layout_all(w, c); /* its rows ("Layout") */
    }
    ecsi_journal_bulk(c); /* its rows change under every image */
  }
  /* the ones the load empties: every live instance goes */
  for (uint32_t m = 0; m < w->manager_count; m++)
    if (!v->matched[m] && ecs_component_is(w->manager[m].cls)) {
      ecs_component *c = (ecs_component *)w->manager[m].self;
      for (uint32_t i = 0; i < c->size; i++)
        if (ecs_alive(w, owners(c)[i]))
          capture(w, c, ecs_entity_index(owners(c)[i]), false);
      ecsi_journal_layout_all(w, c);
      ecsi_journal_bulk(c);
    }
  /* the queue: the fewest operations that make next's of the world's --
  ** pop the world's up to where next's begins, if what follows is next's
  ** start (indices are queued once: there is one such place at most),
  ** then push the rest of next's; else pop all of it and push all of
  ** next's. A rollback's queues differ by a few operations. */
  if (q->len > 0 && nq->len > 0) {
    uint32_t first = queued(nq, 0), k = 0;
    while (k < q->len && queued(q, k) != first) k++;
    if (k < q->len && q->len - k <= nq->len) {
      uint32_t i = 0;
      while (k + i < q->len && queued(q, k + i) == queued(nq, i)) i++;
      if (k + i == q->len) pops = k;
    }
  }
  /* the slots: each that changes, each between the two counts (a delta
  ** names them all), each the queue operations name (so does a delta).
  ** A twin that keeps c's rows has owners alive in the loaded table; one
  ** dead now (a destroy the load takes back, its record not collected
  ** yet) is at an index whose slot changes: absent before, whatever its
  ** values, so captured here */
  span = old_count > next->slot_count ? old_count : next->slot_count;
  lo = old_count < next->slot_count ? old_count : next->slot_count;
  if (lo == 0) lo = 1;
  for (uint32_t i = 1; i < span; i++) {
    if (i < lo && slot_state(w->head.slot, old_count, i) ==
                      slot_state(next->slot, next->slot_count, i))
      continue;
    ecsi_journal_slot(w, i);
    for (uint32_t e = 0; e < v->n; e++) {
      const ecs_component *t = (const ecs_component *)v->twin[e];
      ecs_component *c;
      uint32_t k;
      if (v->which[e] == UINT32_MAX || t == NULL ||
          !ecs_component_is(w->manager[v->which[e]].cls) || t->defer_owners == NULL)
        continue;
      c = (ecs_component *)w->manager[v->which[e]].self;
      if ((k = map_get(c, i)) != ECS_NO_INSTANCE && !ecs_alive(w, owners(c)[k]))
        capture(w, c, i, false);
    }
  }
  for (uint32_t k = 0; k < pops; k++) {
    ecsi_journal_slot(w, queued(q, k));
    ecsi_journal_popped(w, queued(q, k));
  }
  for (uint32_t k = q->len - pops; k < nq->len; k++) {
    ecsi_journal_slot(w, queued(nq, k));
    ecsi_journal_pushed(w, queued(nq, k));
  }
}

void ecsi_journal_lose(ecs_journal *j, bool nomem) {
  if (!j->lost) j->lost_memory = nomem;
  j->lost = true;
}

bool ecs_journal_lost(const ecs_journal *j, bool *memory) {
  if (memory != NULL) *memory = j->lost && j->lost_memory;
  return j->lost;
}

void ecsi_journal_forget(ecs_world *w, ecs_component *c) {
  ecs_journal *j = w->journal;
  ecsi_jcomp *jc = c->journal;
  if (jc == NULL) return;
  ecsi_journal_images_free(w, jc);
  ecsi_free(w, jc->seen, (size_t)jc->seen_words * sizeof(uint32_t));
  ecsi_free(w, jc->cap, (size_t)jc->ncap * sizeof *jc->cap);
  ecsi_free(w, jc->row_seen, (size_t)jc->row_words * sizeof(uint32_t));
  ecsi_free(w, jc->row, (size_t)jc->rowcap * sizeof *jc->row);
  if (j != NULL)
    for (uint32_t k = 0; k < j->ncomp; k++)
      if (j->comp[k] == jc) {
        j->comp[k] = j->comp[--j->ncomp];
        break;
      }
  ecsi_free(w, jc, sizeof *jc);
  c->journal = NULL;
}

/* ------------------------------------------------------------------------
** The mark
** --------------------------------------------------------------------- */

/* Forget every capture: the mark is now. Held references whose cells let
** them go are released when release is set (undo put them all back). */
void ecsi_journal_mark_reset(ecs_world *w, ecs_journal *j, bool release) {
  for (uint32_t k = 0; k < j->ncomp; k++) {
    ecsi_jcomp *jc = j->comp[k];
    for (uint32_t n = 0; n < jc->n; n++) seen_clear(jc->seen, jc->cap[n].index);
    jc->n = 0;
    for (uint32_t n = 0; n < jc->nrow; n++) seen_clear(jc->row_seen, jc->row[n].row);
    jc->nrow = 0;
    jc->laid = false;
    ecsi_journal_images_reset(w, jc);
  }
  for (uint32_t n = 0; n < j->nslot; n++) seen_clear(j->slot_seen, j->slot[n].index);
  j->nslot = j->npopped = j->npushed = 0;
  j->nbytes = 0;
  j->captures = 0;
  held_release(w, j, release);
  j->mark_slot_count = w->head.slot_count;
  j->mark_live = w->live;
  j->mark_qlen = w->free.len;
  ecsi_cursors_free(w, &j->cursors);
  if (ecsi_cursors_take(w, &j->cursors) != ECS_ERR_OK) ecsi_journal_lose(j, true);
}

void ecsi_journal_whole_free(ecs_world *w, ecs_journal *j) {
  for (uint32_t m = 0; m < j->nwhole; m++)
    ecsi_free(w, j->whole[m].bytes, j->whole[m].cap);
  ecsi_free(w, j->whole, (size_t)j->nwhole * sizeof *j->whole);
  j->whole = NULL;
  j->nwhole = 0;
}

/* The saves of the managers that are not generic components, now. */
static ecs_err whole_save_all(ecs_world *w, ecsi_jwhole **out, uint32_t *nout) {
  uint32_t n = w->manager_count;
  ecsi_jwhole *a = NULL;
  ecs_err err = ECS_ERR_OK;
  if (n > 0) {
    a = (ecsi_jwhole *)ecsi_realloc(w, NULL, 0, (size_t)n * sizeof *a);
    if (a == NULL) return ECS_ERR_NOMEM;
    memset(a, 0, (size_t)n * sizeof *a);
  }
  for (uint32_t m = 0; m < n && err == ECS_ERR_OK; m++) {
    const ecs_manager_class *cls = w->manager[m].cls;
    ecsi_jbuf b = {NULL, NULL, 0, 0};
    a[m].self = w->manager[m].self;
    if (ecs_component_is(cls) || cls->save == NULL) continue;
    b.w = w;
    err = ecsi_journal_save_whole(w, m, &b);
    a[m].bytes = b.p;
    a[m].size = b.n;
    a[m].cap = b.cap;
    a[m].hash = ecsi_whole_term(w, m, b.p, b.n);
  }
  if (err != ECS_ERR_OK) {
    for (uint32_t m = 0; m < n; m++) ecsi_free(w, a[m].bytes, a[m].cap);
    ecsi_free(w, a, (size_t)n * sizeof *a);
    return err;
  }
  *out = a;
  *nout = n;
  return ECS_ERR_OK;
}

/* ------------------------------------------------------------------------
** What the journal hears (barrier.h)
**
** While a journal is open it hears every change the layers below make,
** before the old state goes: an index handed out or freed, an instance
** added, removed or written, rows that get another owner, a lua value let
** go. Undo silences it by setting w->journal to NULL while it puts the
** mark back, so each handler checks that first.
** --------------------------------------------------------------------- */

static int on_index_taken(ecs_world *w, void *self, const ecsi_change *ch) {
  (void)self;
  if (w->journal == NULL) return 0;
  ecsi_journal_slot(w, ch->row);
  if (ch->n != 0) ecsi_journal_popped(w, ch->row);
  return 0;
}

static int on_entity_dying(ecs_world *w, void *self, const ecsi_change *ch) {
  uint32_t i = ecs_entity_index(ch->e);
  (void)self;
  if (w->journal == NULL) return 0;
  ecsi_journal_dying(w, ch->e);
  ecsi_journal_slot(w, i);
  ecsi_journal_pushed(w, i);
  return 0;
}

static int on_instance_begin(ecs_world *w, void *self, const ecsi_change *ch) {
  (void)self;
  if (w->journal != NULL) ecsi_journal_capture(w, ch->c, ch->row);
  return 0;
}

static int on_layout(ecs_world *w, void *self, const ecsi_change *ch) {
  (void)self;
  if (w->journal == NULL) return 0;
  if (ch->n != 0) ecsi_journal_layout_at(w, ch->c, ch->row);
  else ecsi_journal_layout_all(w, ch->c);
  return 0;
}

/* One row alone is one complete write (component.h): captured so that
** its end may keep the new values (journal_image.c). */
static int on_write_begin(ecs_world *w, void *self, const ecsi_change *ch) {
  ecs_component *c = ch->c;
  (void)self;
  if (w->journal == NULL) return 0;
  if (ch->one) {
    if (ch->row < c->size)
      ecsi_journal_capture(w, c, ecs_entity_index(owners(c)[ch->row]));
  } else if (ch->rows != NULL) ecsi_journal_rows(w, c, ch->rows, ch->n);
  else ecsi_journal_range(w, c, ch->row, ch->n);
  return 0;
}

static int on_write_end(ecs_world *w, void *self, const ecsi_change *ch) {
  (void)self;
  if (w->journal == NULL) return 0;
  if (ch->one) ecsi_journal_touched(w, ch->c, ch->row);
  else ecsi_journal_bulk(ch->c);
  return 0;
}

static int on_ref_dropped(ecs_world *w, void *self, const ecsi_change *ch) {
  (void)self;
  return ecsi_journal_claim_ref(w, ch->row) ? 1 : 0;
}

static const struct {
  ecsi_event ev;
  ecsi_subscriber_fn fn;
} heard[] = {
  {ECSI_EV_INDEX_TAKEN, on_index_taken},
  {ECSI_EV_ENTITY_DYING, on_entity_dying},
  {ECSI_EV_INSTANCE_BEGIN, on_instance_begin},
  {ECSI_EV_LAYOUT, on_layout},
  {ECSI_EV_WRITE_BEGIN, on_write_begin},
  {ECSI_EV_WRITE_END, on_write_end},
  {ECSI_EV_REF_DROPPED, on_ref_dropped},
};

static void unlisten(ecs_world *w, ecs_journal *j) {
  for (size_t k = 0; k < sizeof heard / sizeof heard[0]; k++)
    ecsi_unsubscribe(&w->barrier, heard[k].ev, heard[k].fn, j);
}

static ecs_err listen(ecs_world *w, ecs_journal *j) {
  for (size_t k = 0; k < sizeof heard / sizeof heard[0]; k++) {
    ecs_err err = ecsi_subscribe(&w->barrier, heard[k].ev, ECSI_RANK_PERSIST,
                                 heard[k].fn, j);
    if (err != ECS_ERR_OK) {
      unlisten(w, j);
      return err;
    }
  }
  return ECS_ERR_OK;
}

/* The mark's save of manager m, or NULL when it was registered later. */
const ecsi_jwhole *ecsi_journal_mark_whole(const ecs_journal *j, uint32_t m,
                                const void *self) {
  if (m < j->nwhole && j->whole[m].self == self) return &j->whole[m];
  return NULL;
}

ecs_err ecs_journal_open(ecs_world *w, const ecs_journal_host *host,
                         ecs_journal **out, ecs_journal_bad *bad) {
  ecs_journal *j;
  ecs_err err;
  if (w->journal != NULL) return ECS_ERR_JOURNAL_OPEN;
  j = (ecs_journal *)ecsi_realloc(w, NULL, 0, sizeof *j);
  if (j == NULL) return ECS_ERR_NOMEM;
  memset(j, 0, sizeof *j);
  j->w = w;
  if ((err = ecsi_journal_full_hash(w, host, &j->hash, bad)) != ECS_ERR_OK ||
      (err = whole_save_all(w, &j->whole, &j->nwhole)) != ECS_ERR_OK) {
    ecsi_free(w, j, sizeof *j);
    return err;
  }
  j->mark_qhash = ecsi_journal_queue_hash(w);
  ecsi_journal_mark_reset(w, j, false);
  if (j->lost) { /* no memory for the cursors */
    ecsi_journal_whole_free(w, j);
    ecsi_free(w, j, sizeof *j);
    return ECS_ERR_NOMEM;
  }
  if ((err = listen(w, j)) != ECS_ERR_OK) {
    ecs_journal_close(w, j); /* frees all it has */
    return err;
  }
  w->journal = j;
  *out = j;
  return ECS_ERR_OK;
}

void ecs_journal_close(ecs_world *w, ecs_journal *j) {
  if (j == NULL) return;
  held_release(w, j, true);
  for (uint32_t k = 0; k < j->ncomp; k++) {
    ecsi_jcomp *jc = j->comp[k];
    jc->c->journal = NULL;
    ecsi_journal_images_free(w, jc);
    ecsi_free(w, jc->seen, (size_t)jc->seen_words * sizeof(uint32_t));
    ecsi_free(w, jc->cap, (size_t)jc->ncap * sizeof *jc->cap);
    ecsi_free(w, jc->row_seen, (size_t)jc->row_words * sizeof(uint32_t));
    ecsi_free(w, jc->row, (size_t)jc->rowcap * sizeof *jc->row);
    ecsi_free(w, jc, sizeof *jc);
  }
  ecsi_free(w, j->comp, (size_t)j->compcap * sizeof *j->comp);
  ecsi_free(w, j->bytes, j->bytecap);
  ecsi_free(w, j->slot_seen, (size_t)j->slot_words * sizeof(uint32_t));
  ecsi_free(w, j->slot, (size_t)j->slotcap * sizeof *j->slot);
  ecsi_free(w, j->popped, (size_t)j->poppedcap * sizeof(uint32_t));
  ecsi_free(w, j->pushed, (size_t)j->pushedcap * sizeof(uint32_t));
  ecsi_free(w, j->held, (size_t)j->heldcap * sizeof(uint32_t));
  ecsi_free(w, j->orphan, j->heldcap);
  ecsi_journal_whole_free(w, j);
  ecsi_journal_pending_free(w, j);
  ecsi_cursors_free(w, &j->cursors);
  ecsi_jbuf_free(&j->out);
  if (w->journal == j) w->journal = NULL;
  unlisten(w, j);
  ecsi_free(w, j, sizeof *j);
}

void ecsi_journal_free(ecs_world *w) {
  ecs_journal_close(w, w->journal);
  ecsi_free(w, w->jref, w->jref_cap * sizeof(uint32_t));
  w->jref = NULL;
  w->jref_len = w->jref_cap = 0;
}

ecs_journal *ecs_world_journal(const ecs_world *w) { return w->journal; }

size_t ecs_journal_pending(const ecs_journal *j) {
  return j->captures + j->nslot;
}
