/*
** rowmap.h -- a component manager's entity index -> row map: direct
** pages where the manager's entities are dense, a hash table where they
** are sparse, so its memory follows the instances, not the index range.
**
** Why not only the page table of records.h. A page table costs 4 bytes per
** index of every page it touches. Entity indices are dense, but which
** entities have a given component need not be: in a world of 100k entities
** and 150 component types of which each entity has 12, every page of
** every manager is touched, and the maps cost 50 bytes per instance
** against 10 bytes of component data. Why not only a hash table: a lookup
** in a page is one read and no branch, so a walk over many entities keeps
** many reads in flight; a probe loop's data-dependent branches stop that
** (measured, 1M entities: 1.1 ns per lookup in index order through pages,
** 10 ns through a hash table; in random order 8 vs 37 ns).
**
** So each range of 1024 indices (a page's worth) is either a page -- once
** it holds ECSI_ROWMAP_PROMOTE entries (75%: at most 5.3 bytes per entry)
** -- or lives in the hash table. A directory entry per range (16 bytes per
** 1024 indices) holds the page pointer and the range's entry count, so a
** lookup in a range with no entry stops there (has() on a rare component).
** Ranges are promoted when they fill, never demoted: a page stays until
** the manager is freed or its map rebuilt (a load), as pages always did.
**
** The hash table. Robin Hood linear probing; an entry's home is the
** multiplicative hash of the index scaled to the slot count (Lemire's
** fast range, so the count need not be a power of two and grows by a
** quarter). A slot is one uint32: the row + 1 (22 bits, 0 meaning an
** empty slot), the displacement from home (6 bits, 63 meaning "63 or
** more": the real one is then computed from the key) and 4 bits of the
** index as a fingerprint. The key is not stored: the owner column holds it
** (owners[row]), so a probe that reaches a slot with its displacement and
** fingerprint compares owners[row], which the caller reads next anyway to
** compare the full handle. A miss stops at the first slot closer to its
** home than the probe is; a removal shifts the following entries back by
** one using the stored displacements. The load stays at most 0.8.
**
** The map always holds exactly the instances: for every row r below the
** manager's size, index(owners[r]) -> r. Rows fit in 22 bits because a
** manager holds at most one record per entity index (ECS_MAX_ENTITIES).
**
** Layer: managers (layers: alloc.h). Includes alloc.h only.
*/
#ifndef ECS_ROWMAP_H
#define ECS_ROWMAP_H

#include "alloc.h"

#define ECSI_ROWMAP_NONE UINT32_MAX
#define ECSI_ROWMAP_PAGE_BITS 10u
#define ECSI_ROWMAP_PAGE_SIZE (1u << ECSI_ROWMAP_PAGE_BITS)
#define ECSI_ROWMAP_PROMOTE (ECSI_ROWMAP_PAGE_SIZE / 4u * 3u)
#define ECSI_ROWMAP_ROW_BITS 22u
#define ECSI_ROWMAP_ROW_MASK ((1u << ECSI_ROWMAP_ROW_BITS) - 1u)
#define ECSI_ROWMAP_DISP_SHIFT ECSI_ROWMAP_ROW_BITS
#define ECSI_ROWMAP_DISP_MAX 63u /* saturated: compute from the key */
#define ECSI_ROWMAP_FP_SHIFT 28u

_Static_assert(ECS_MAX_ENTITIES <= ECSI_ROWMAP_ROW_MASK,
               "rows + 1 of a full manager must fit in a slot");

/* A range of 1024 indices: its page, or NULL while it lives in the hash
** table; and how many entries it has (in the page or the table). */
typedef struct ecsi_rowrange {
  uint32_t *page;
  uint32_t fill;
} ecsi_rowrange;

typedef struct ecsi_rowmap {
  ecsi_rowrange *range; /* nrange entries: every index with an entry */
  uint32_t nrange;
  uint32_t *slot;       /* the hash table: cap slots, 0 = empty */
  uint32_t cap, count;  /* slots, entries in them */
  uint32_t *spare;      /* a page reserved for the next promotion */
} ecsi_rowmap;

static inline uint32_t ecsi_rowmap_home(uint32_t cap, uint32_t index) {
  return (uint32_t)(((uint64_t)(index * 0x9E3779B1u) * cap) >> 32);
}

static inline uint32_t ecsi_rowmap_fp(uint32_t index) {
  return (index & 15u) << ECSI_ROWMAP_FP_SHIFT;
}

/* The hash slot of index's entry, or ECSI_ROWMAP_NONE. */
static inline uint32_t ecsi_rowmap_find(const ecsi_rowmap *m,
                                        const ecs_entity *owners,
                                        uint32_t index) {
  uint32_t p, d = 0, fp = ecsi_rowmap_fp(index);
  if (m->count == 0) return ECSI_ROWMAP_NONE;
  p = ecsi_rowmap_home(m->cap, index);
  for (;;) {
    uint32_t s = m->slot[p];
    uint32_t sd = (s >> ECSI_ROWMAP_DISP_SHIFT) & ECSI_ROWMAP_DISP_MAX;
    if (s == 0) return ECSI_ROWMAP_NONE;
    if (sd < d && sd != ECSI_ROWMAP_DISP_MAX) return ECSI_ROWMAP_NONE;
    /* an entry of the same home has our displacement here */
    if ((sd == d || sd == ECSI_ROWMAP_DISP_MAX) &&
        (s & (15u << ECSI_ROWMAP_FP_SHIFT)) == fp &&
        ecs_entity_index(owners[(s & ECSI_ROWMAP_ROW_MASK) - 1u]) == index)
      return p;
    if (++p == m->cap) p = 0;
    d++;
  }
}

/* The row of index, or ECSI_ROWMAP_NONE. owners[] is the owner column
** the rows index. */
static inline uint32_t ecsi_rowmap_get(const ecsi_rowmap *m,
                                       const ecs_entity *owners,
                                       uint32_t index) {
  uint32_t r = index >> ECSI_ROWMAP_PAGE_BITS, p;
  const ecsi_rowrange *g;
  if (r >= m->nrange) return ECSI_ROWMAP_NONE;
  g = &m->range[r];
  if (g->page != NULL) return g->page[index & (ECSI_ROWMAP_PAGE_SIZE - 1u)];
  if (g->fill == 0) return ECSI_ROWMAP_NONE;
  p = ecsi_rowmap_find(m, owners, index);
  return p == ECSI_ROWMAP_NONE ? p : (m->slot[p] & ECSI_ROWMAP_ROW_MASK) - 1u;
}

/*
** Make room for an entry at index, so that the insert that follows cannot
** fail: the directory covers index, and the entry's range has a page or
** the table a free slot (or a page is set aside for the range's
** promotion). owners[] names every entry (a rehash reads the keys).
** @return ECS_ERR_OK or ECS_ERR_NOMEM (the map is as it was, or has more
** room, which is harmless).
*/
ecs_err ecsi_rowmap_reserve(ecs_world *w, ecsi_rowmap *m,
                            const ecs_entity *owners, uint32_t index);

/*
** ecsi_rowmap_reserve for n entries at once, at index[0 .. n) (which have
** no entry yet; repeats are counted twice, which only reserves more): the
** ranges they fill are promoted to pages now, and the table grows to hold
** the rest, so that n inserts follow without a failure.
*/
ecs_err ecsi_rowmap_reserve_n(ecs_world *w, ecsi_rowmap *m,
                              const ecs_entity *owners, const uint32_t *index,
                              size_t n);

/* Add index -> row: index has no entry, room was reserved, and owners[row]
** already names index. Never allocates, never fails. */
void ecsi_rowmap_insert(ecsi_rowmap *m, const ecs_entity *owners,
                        uint32_t index, uint32_t row);

/* Remove index's entry (it must exist); owners[] still names every entry. */
void ecsi_rowmap_remove(ecsi_rowmap *m, const ecs_entity *owners,
                        uint32_t index);

/* index's entry (it must exist) now names row; owners[] still names it at
** its old row. */
void ecsi_rowmap_move(ecsi_rowmap *m, const ecs_entity *owners,
                      uint32_t index, uint32_t row);

/* Empty the map, keeping its blocks. */
void ecsi_rowmap_clear(ecsi_rowmap *m);

/*
** A map holding index(owners[r]) -> r for r in [0, size), in *out (pages
** for the ranges that fill them, the table for the rest); *out is
** untouched on failure. The caller frees the old map when it takes the
** new one.
** @return ECS_ERR_OK, ECS_ERR_NOMEM, or ECS_ERR_CORRUPT when two owners
** share an index (a load's check).
*/
ecs_err ecsi_rowmap_build(ecs_world *w, ecsi_rowmap *out,
                          const ecs_entity *owners, uint32_t size);

/*
** ecsi_rowmap_build for owners whose indices strictly ascend, which the
** caller knows (a load reads them as ascending runs): the ranges are
** counted from O(log) owners each instead of from every owner. Owners that
** do not ascend give a wrong map: the caller must be sure.
*/
ecs_err ecsi_rowmap_build_ascending(ecs_world *w, ecsi_rowmap *out,
                                    const ecs_entity *owners, uint32_t size);

void ecsi_rowmap_free(ecs_world *w, ecsi_rowmap *m);

/* @return bytes of the map: directory, pages, table. */
size_t ecsi_rowmap_bytes(const ecsi_rowmap *m);

/*
** For checks: NULL when the map holds exactly index(owners[r]) -> r for r
** in [0, size), every range's count right, every slot's displacement and
** fingerprint right and the Robin Hood order kept; else the first
** complaint.
*/
const char *ecsi_rowmap_check(const ecsi_rowmap *m, const ecs_entity *owners,
                              uint32_t size);

#endif
