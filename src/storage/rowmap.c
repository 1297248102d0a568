/*
** rowmap.c -- the component managers' entity index -> row map
** (rowmap.h): ranges, their promotion to pages, and the Robin Hood hash
** table for the ranges that stay sparse.
*/
#include <string.h>

#include "rowmap.h"

#define DISP_BITS (ECSI_ROWMAP_DISP_MAX << ECSI_ROWMAP_DISP_SHIFT)
#define PAGE_BYTES ((size_t)ECSI_ROWMAP_PAGE_SIZE * sizeof(uint32_t))
#define OFF(index) ((index) & (ECSI_ROWMAP_PAGE_SIZE - 1u))

static uint32_t key_of(const ecs_entity *owners, uint32_t s) {
  return ecs_entity_index(owners[(s & ECSI_ROWMAP_ROW_MASK) - 1u]);
}

/* ------------------------------------------------------------------------
** The hash table
** --------------------------------------------------------------------- */

static uint32_t with_disp(uint32_t s, uint32_t d) {
  if (d > ECSI_ROWMAP_DISP_MAX) d = ECSI_ROWMAP_DISP_MAX;
  return (s & ~DISP_BITS) | (d << ECSI_ROWMAP_DISP_SHIFT);
}

/* The displacement of the entry s at slot p: stored, or computed from its
** key where the stored one saturated. */
static uint32_t disp_of(const ecsi_rowmap *m, const ecs_entity *owners,
                        uint32_t s, uint32_t p) {
  uint32_t d = (s >> ECSI_ROWMAP_DISP_SHIFT) & ECSI_ROWMAP_DISP_MAX, home;
  if (d != ECSI_ROWMAP_DISP_MAX) return d;
  home = ecsi_rowmap_home(m->cap, key_of(owners, s));
  return p >= home ? p - home : p + m->cap - home;
}

/*
** Robin Hood insertion: the new entry takes the first slot whose entry is
** closer to its home than the new one would be, and that entry is carried
** on the same way. Before the first such exchange, a slot at the same
** displacement with the same fingerprint may hold the same index: then
** nothing is inserted and the result is false. The table has a free slot.
*/
static bool put(ecsi_rowmap *m, const ecs_entity *owners, uint32_t index,
                uint32_t row) {
  uint32_t p = ecsi_rowmap_home(m->cap, index), d = 0;
  uint32_t carry = ecsi_rowmap_fp(index) | (row + 1u);
  bool mine = true; /* still carrying the new entry */
  for (;;) {
    uint32_t s = m->slot[p], sd;
    if (s == 0) {
      m->slot[p] = with_disp(carry, d);
      m->count++;
      return true;
    }
    sd = disp_of(m, owners, s, p);
    if (mine && sd == d && (s ^ carry) >> ECSI_ROWMAP_FP_SHIFT == 0 &&
        key_of(owners, s) == index)
      return false;
    if (sd < d) {
      m->slot[p] = with_disp(carry, d);
      carry = s;
      d = sd;
      mine = false;
    }
    if (++p == m->cap) p = 0;
    d++;
  }
}

/* Backward shift from slot p: each following entry away from its home
** moves one slot closer, up to an empty slot or an entry at its home. */
static void take_out(ecsi_rowmap *m, const ecs_entity *owners, uint32_t p) {
  for (;;) {
    uint32_t q = p + 1u == m->cap ? 0 : p + 1u, s = m->slot[q], sd;
    if (s == 0) break;
    sd = disp_of(m, owners, s, q);
    if (sd == 0) break;
    m->slot[p] = with_disp(s, sd - 1u);
    p = q;
  }
  m->slot[p] = 0;
  m->count--;
}

/* Slots for n entries at a load of at most 0.8. */
static uint32_t slots_for(uint32_t n) {
  return n + n / 4u + 1u;
}

/* A table of ncap slots (> count) with every entry of m's; m's blocks are
** kept on failure. */
static ecs_err rehash(ecs_world *w, ecsi_rowmap *m, const ecs_entity *owners,
                      uint32_t ncap) {
  ecsi_rowmap t = *m;
  t.cap = ncap;
  t.count = 0;
  t.slot = (uint32_t *)ecsi_realloc(w, NULL, 0, (size_t)ncap * sizeof(uint32_t));
  if (t.slot == NULL) return ECS_ERR_NOMEM;
  memset(t.slot, 0, (size_t)ncap * sizeof(uint32_t));
  for (uint32_t p = 0; p < m->cap; p++)
    if (m->slot[p] != 0)
      (void)put(&t, owners, key_of(owners, m->slot[p]),
                (m->slot[p] & ECSI_ROWMAP_ROW_MASK) - 1u);
  ecsi_free(w, m->slot, (size_t)m->cap * sizeof(uint32_t));
  m->slot = t.slot;
  m->cap = ncap;
  return ECS_ERR_OK;
}

/* ------------------------------------------------------------------------
** Ranges and pages
** --------------------------------------------------------------------- */

static uint32_t *new_page(ecs_world *w) {
  uint32_t *pg = (uint32_t *)ecsi_realloc(w, NULL, 0, PAGE_BYTES);
  if (pg != NULL) memset(pg, 0xff, PAGE_BYTES); /* all ECSI_ROWMAP_NONE */
  return pg;
}

static ecs_err cover(ecs_world *w, ecsi_rowmap *m, uint32_t r) {
  uint32_t n = m->nrange;
  ecsi_rowrange *g;
  if (r < n) return ECS_ERR_OK;
  n = n ? n : 4u;
  while (n <= r) n *= 2u; /* r < 4096: no overflow */
  g = (ecsi_rowrange *)ecsi_realloc(w, m->range, m->nrange * sizeof *g,
                                    n * sizeof *g);
  if (g == NULL) return ECS_ERR_NOMEM;
  memset(g + m->nrange, 0, (n - m->nrange) * sizeof *g);
  m->range = g;
  m->nrange = n;
  return ECS_ERR_OK;
}

ecs_err ecsi_rowmap_reserve(ecs_world *w, ecsi_rowmap *m,
                            const ecs_entity *owners, uint32_t index) {
  uint32_t r = index >> ECSI_ROWMAP_PAGE_BITS;
  const ecsi_rowrange *g;
  ecs_err err = cover(w, m, r);
  if (err != ECS_ERR_OK) return err;
  g = &m->range[r];
  if (g->page != NULL) return ECS_ERR_OK;
  if (g->fill + 1u >= ECSI_ROWMAP_PROMOTE) { /* the insert promotes */
    if (m->spare == NULL && (m->spare = new_page(w)) == NULL)
      return ECS_ERR_NOMEM;
    return ECS_ERR_OK;
  }
  if (m->count + 1u >= m->cap - m->cap / 5u) { /* load above 0.8 */
    uint32_t ncap = m->cap < 16u ? 16u : m->cap + m->cap / 4u;
    return rehash(w, m, owners, ncap);
  }
  return ECS_ERR_OK;
}

static void promote(ecsi_rowmap *m, const ecs_entity *owners, uint32_t r);

ecs_err ecsi_rowmap_reserve_n(ecs_world *w, ecsi_rowmap *m,
                              const ecs_entity *owners, const uint32_t *index,
                              size_t n) {
  uint32_t top = 0, *add;
  size_t in_table = 0;
  ecs_err err = ECS_ERR_OK;
  if (n == 0) return ECS_ERR_OK;
  for (size_t k = 0; k < n; k++)
    if (index[k] > top) top = index[k];
  if ((err = cover(w, m, top >> ECSI_ROWMAP_PAGE_BITS)) != ECS_ERR_OK) return err;
  add = (uint32_t *)ecsi_realloc(w, NULL, 0, m->nrange * sizeof *add);
  if (add == NULL) return ECS_ERR_NOMEM;
  memset(add, 0, m->nrange * sizeof *add);
  for (size_t k = 0; k < n; k++) add[index[k] >> ECSI_ROWMAP_PAGE_BITS]++;
  for (uint32_t r = 0; r < m->nrange && err == ECS_ERR_OK; r++) {
    if (add[r] == 0 || m->range[r].page != NULL) continue;
    if ((size_t)m->range[r].fill + add[r] + 1u >= ECSI_ROWMAP_PROMOTE) {
      if (m->spare == NULL && (m->spare = new_page(w)) == NULL)
        err = ECS_ERR_NOMEM;
      else
        promote(m, owners, r); /* early: harmless, and no page is needed later */
    } else {
      in_table += add[r];
    }
  }
  ecsi_free(w, add, m->nrange * sizeof *add);
  if (err == ECS_ERR_OK && in_table > 0 &&
      m->count + in_table + 1u >= m->cap - m->cap / 5u) {
    size_t need = m->count + in_table + 1u;
    size_t ncap = need + need / 4u + 2u;
    if (ncap > UINT32_MAX / 2u) return ECS_ERR_NOMEM;
    err = rehash(w, m, owners, (uint32_t)ncap);
  }
  return err;
}

/* Range r's entries leave the table for the spare page. */
static void promote(ecsi_rowmap *m, const ecs_entity *owners, uint32_t r) {
  uint32_t *pg = m->spare, base = r << ECSI_ROWMAP_PAGE_BITS;
  m->spare = NULL;
  for (uint32_t k = 0, left = m->range[r].fill; k < ECSI_ROWMAP_PAGE_SIZE && left > 0;
       k++) {
    uint32_t p = ecsi_rowmap_find(m, owners, base + k);
    if (p == ECSI_ROWMAP_NONE) continue;
    pg[k] = (m->slot[p] & ECSI_ROWMAP_ROW_MASK) - 1u;
    take_out(m, owners, p);
    left--;
  }
  m->range[r].page = pg;
}

void ecsi_rowmap_insert(ecsi_rowmap *m, const ecs_entity *owners,
                        uint32_t index, uint32_t row) {
  ecsi_rowrange *g = &m->range[index >> ECSI_ROWMAP_PAGE_BITS];
  if (g->page == NULL && g->fill + 1u >= ECSI_ROWMAP_PROMOTE)
    promote(m, owners, index >> ECSI_ROWMAP_PAGE_BITS);
  g->fill++;
  if (g->page != NULL)
    g->page[OFF(index)] = row;
  else
    (void)put(m, owners, index, row);
}

void ecsi_rowmap_remove(ecsi_rowmap *m, const ecs_entity *owners,
                        uint32_t index) {
  ecsi_rowrange *g = &m->range[index >> ECSI_ROWMAP_PAGE_BITS];
  g->fill--;
  if (g->page != NULL)
    g->page[OFF(index)] = ECSI_ROWMAP_NONE;
  else
    take_out(m, owners, ecsi_rowmap_find(m, owners, index));
}

void ecsi_rowmap_move(ecsi_rowmap *m, const ecs_entity *owners,
                      uint32_t index, uint32_t row) {
  ecsi_rowrange *g = &m->range[index >> ECSI_ROWMAP_PAGE_BITS];
  if (g->page != NULL) {
    g->page[OFF(index)] = row;
  } else {
    uint32_t p = ecsi_rowmap_find(m, owners, index);
    m->slot[p] = (m->slot[p] & ~ECSI_ROWMAP_ROW_MASK) | (row + 1u);
  }
}

void ecsi_rowmap_clear(ecsi_rowmap *m) {
  for (uint32_t r = 0; r < m->nrange; r++) {
    if (m->range[r].page != NULL && m->range[r].fill > 0)
      memset(m->range[r].page, 0xff, PAGE_BYTES);
    m->range[r].fill = 0;
  }
  if (m->cap > 0) memset(m->slot, 0, (size_t)m->cap * sizeof(uint32_t));
  m->count = 0;
}

/*
** Count the entries of each range, give a page to each range that fills
** one, size the table for the rest, then place every row (a second entry
** at an index is refused there).
**
** The common case goes fast: a range whose whole page of indices its
** owners name once each, in order, in consecutive rows (a load of a
** manager whose entities were created together). Counting finds such
** ranges (FULL_RUN in fill while building); their pages are filled with
** row, row + 1, ... without being cleared first or checked slot by slot:
** fill == 1024 says no other owner falls in the range, so none repeats.
*/
#define FULL_RUN 0x80000000u /* in fill while building: see above */

static void count_ranges(ecsi_rowmap *m, const ecs_entity *owners,
                         uint32_t size) {
  uint32_t cur = 0, run = 0, next = 0;
  bool in_order = false;
  /* each stretch of owners in one range is counted in a register (an
  ** increment in memory per owner waits for the one before it) */
  for (uint32_t i = 0; i <= size; i++) {
    uint32_t x = i < size ? ecs_entity_index(owners[i]) : UINT32_MAX;
    uint32_t r = x >> ECSI_ROWMAP_PAGE_BITS;
    if (r != cur || i == size) {
      if (run > 0) {
        bool full = in_order && run == ECSI_ROWMAP_PAGE_SIZE &&
                    m->range[cur].fill == 0;
        m->range[cur].fill += run;
        if (full) m->range[cur].fill |= FULL_RUN;
        else m->range[cur].fill &= ~FULL_RUN; /* another stretch came */
      }
      if (i == size) break;
      cur = r;
      run = 0;
      in_order = OFF(x) == 0;
      next = x;
    }
    in_order = in_order && x == next;
    next = x + 1u;
    run++;
  }
}

/*
** count_ranges for owners whose indices strictly ascend: a range's owners
** are one stretch of rows, which starts where the last one ended and can
** be no longer than the indices left in the range, so one read (the
** stretch fills that room) or a binary search finds its end, and the
** owners between are not read. 1024 owners in a range are its whole page
** in order (FULL_RUN).
*/
static void count_ascending(ecsi_rowmap *m, const ecs_entity *owners,
                            uint32_t size) {
  uint32_t i = 0;
  while (i < size) {
    uint32_t x = ecs_entity_index(owners[i]), r = x >> ECSI_ROWMAP_PAGE_BITS;
    uint32_t end = (r + 1u) << ECSI_ROWMAP_PAGE_BITS;
    uint32_t lo = i + 1u, hi = size - i < end - x ? size : i + (end - x);
    if (ecs_entity_index(owners[hi - 1u]) < end) lo = hi;
    while (lo < hi) { /* the first row past the range, in [lo, hi] */
      uint32_t mid = lo + (hi - lo) / 2u;
      if (ecs_entity_index(owners[mid]) < end) lo = mid + 1u;
      else hi = mid;
    }
    m->range[r].fill = lo - i;
    if (lo - i == ECSI_ROWMAP_PAGE_SIZE) m->range[r].fill |= FULL_RUN;
    i = lo;
  }
}

static ecs_err build(ecs_world *w, ecsi_rowmap *out, const ecs_entity *owners,
                     uint32_t size, bool ascending) {
  ecsi_rowmap m;
  uint32_t top = 0, in_table = 0;
  ecs_err err = ECS_ERR_OK;
  memset(&m, 0, sizeof m);
  if (ascending && size > 0)
    top = ecs_entity_index(owners[size - 1u]);
  else
    for (uint32_t i = 0; i < size; i++)
      if (ecs_entity_index(owners[i]) > top) top = ecs_entity_index(owners[i]);
  if (size > 0 && (err = cover(w, &m, top >> ECSI_ROWMAP_PAGE_BITS)) != ECS_ERR_OK)
    return err;
  if (ascending)
    count_ascending(&m, owners, size);
  else
    count_ranges(&m, owners, size);
  for (uint32_t r = 0; r < m.nrange && err == ECS_ERR_OK; r++) {
    uint32_t fill = m.range[r].fill & ~FULL_RUN;
    if (m.range[r].fill & FULL_RUN) { /* every slot written below */
      m.range[r].page = (uint32_t *)ecsi_realloc(w, NULL, 0, PAGE_BYTES);
      if (m.range[r].page == NULL) err = ECS_ERR_NOMEM;
    } else if (fill >= ECSI_ROWMAP_PROMOTE) {
      if ((m.range[r].page = new_page(w)) == NULL) err = ECS_ERR_NOMEM;
    } else {
      in_table += fill;
    }
  }
  if (err == ECS_ERR_OK && in_table > 0) {
    m.cap = slots_for(in_table);
    m.slot = (uint32_t *)ecsi_realloc(w, NULL, 0, (size_t)m.cap * sizeof(uint32_t));
    if (m.slot == NULL)
      err = ECS_ERR_NOMEM;
    else
      memset(m.slot, 0, (size_t)m.cap * sizeof(uint32_t));
  }
  for (uint32_t i = 0; i < size && err == ECS_ERR_OK; i++) {
    uint32_t x = ecs_entity_index(owners[i]);
    ecsi_rowrange *g = &m.range[x >> ECSI_ROWMAP_PAGE_BITS];
    uint32_t *pg = g->page;
    if (g->fill & FULL_RUN) { /* its first owner: the run starts here */
      for (uint32_t k = 0; k < ECSI_ROWMAP_PAGE_SIZE; k++) pg[k] = i + k;
      g->fill &= ~FULL_RUN;
      i += ECSI_ROWMAP_PAGE_SIZE - 1u;
    } else if (pg != NULL) {
      if (pg[OFF(x)] != ECSI_ROWMAP_NONE) err = ECS_ERR_CORRUPT;
      pg[OFF(x)] = i;
    } else if (!put(&m, owners, x, i)) {
      err = ECS_ERR_CORRUPT;
    }
  }
  if (err != ECS_ERR_OK) {
    for (uint32_t r = 0; r < m.nrange; r++) m.range[r].fill &= ~FULL_RUN;
    ecsi_rowmap_free(w, &m);
    return err;
  }
  *out = m;
  return ECS_ERR_OK;
}

ecs_err ecsi_rowmap_build(ecs_world *w, ecsi_rowmap *out,
                          const ecs_entity *owners, uint32_t size) {
  return build(w, out, owners, size, false);
}

ecs_err ecsi_rowmap_build_ascending(ecs_world *w, ecsi_rowmap *out,
                                    const ecs_entity *owners, uint32_t size) {
  return build(w, out, owners, size, true);
}

void ecsi_rowmap_free(ecs_world *w, ecsi_rowmap *m) {
  for (uint32_t r = 0; r < m->nrange; r++) ecsi_free(w, m->range[r].page, PAGE_BYTES);
  ecsi_free(w, m->range, m->nrange * sizeof *m->range);
  ecsi_free(w, m->slot, (size_t)m->cap * sizeof(uint32_t));
  ecsi_free(w, m->spare, PAGE_BYTES);
  memset(m, 0, sizeof *m);
}

size_t ecsi_rowmap_bytes(const ecsi_rowmap *m) {
  size_t b = m->nrange * sizeof *m->range + (size_t)m->cap * sizeof(uint32_t);
  for (uint32_t r = 0; r < m->nrange; r++)
    if (m->range[r].page != NULL) b += PAGE_BYTES;
  return b + (m->spare != NULL ? PAGE_BYTES : 0);
}

static const char *check_table(const ecsi_rowmap *m, const ecs_entity *owners,
                               uint32_t size) {
  uint32_t used = 0;
  if (m->count > 0 && m->count >= m->cap) return "rowmap: no empty slot";
  for (uint32_t p = 0; p < m->cap; p++) {
    uint32_t s = m->slot[p], row, index, home, d, stored;
    if (s == 0) continue;
    used++;
    row = (s & ECSI_ROWMAP_ROW_MASK);
    if (row == 0 || row > size) return "rowmap: slot names no instance";
    index = ecs_entity_index(owners[row - 1u]);
    if (m->range[index >> ECSI_ROWMAP_PAGE_BITS].page != NULL)
      return "rowmap: an entry of a paged range is in the table";
    if ((s & (15u << ECSI_ROWMAP_FP_SHIFT)) != ecsi_rowmap_fp(index))
      return "rowmap: wrong fingerprint";
    home = ecsi_rowmap_home(m->cap, index);
    d = p >= home ? p - home : p + m->cap - home;
    stored = (s >> ECSI_ROWMAP_DISP_SHIFT) & ECSI_ROWMAP_DISP_MAX;
    if (stored != (d < ECSI_ROWMAP_DISP_MAX ? d : ECSI_ROWMAP_DISP_MAX))
      return "rowmap: wrong displacement";
    if (d > 0) { /* Robin Hood order: the slot before is no closer to home */
      uint32_t q = p == 0 ? m->cap - 1u : p - 1u, t = m->slot[q];
      if (t == 0 || disp_of(m, owners, t, q) + 1u < d)
        return "rowmap: Robin Hood order broken";
    }
  }
  return used != m->count ? "rowmap: count differs from the slots" : NULL;
}

const char *ecsi_rowmap_check(const ecsi_rowmap *m, const ecs_entity *owners,
                              uint32_t size) {
  uint32_t total = 0, paged = 0;
  const char *why = check_table(m, owners, size);
  if (why != NULL) return why;
  for (uint32_t r = 0; r < m->nrange; r++) {
    const uint32_t *pg = m->range[r].page;
    uint32_t n = 0;
    total += m->range[r].fill;
    if (pg == NULL) continue;
    for (uint32_t k = 0; k < ECSI_ROWMAP_PAGE_SIZE; k++) {
      if (pg[k] == ECSI_ROWMAP_NONE) continue;
      if (pg[k] >= size || ecs_entity_index(owners[pg[k]]) !=
                               (r << ECSI_ROWMAP_PAGE_BITS) + k)
        return "rowmap: a page entry names another index's row";
      n++;
    }
    if (n != m->range[r].fill) return "rowmap: a page's count is wrong";
    paged += n;
  }
  if (total != size || paged + m->count != size)
    return "rowmap: entry counts differ from the instances";
  for (uint32_t r = 0; r < size; r++) {
    uint32_t x = ecs_entity_index(owners[r]);
    if ((x >> ECSI_ROWMAP_PAGE_BITS) >= m->nrange)
      return "rowmap: an instance outside the directory";
    if (ecsi_rowmap_get(m, owners, x) != r)
      return "rowmap: an instance is not found at its row";
  }
  return NULL;
}
