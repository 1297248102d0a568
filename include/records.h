/*
** records.h -- the entity -> record map and the lazy gc that every
** manager of the core uses, for managers written outside it (C plugins).
**
** A manager keeps a record per entity in dense arrays and finds it by the
** entity's index (ecs.h, "Records and generations"). Two parts of that are
** the same in every manager and live here once:
**
** - ecs_record_map: entity index -> record number, a two-level page table
**   (a directory of page pointers, pages of ECS_RECORD_PAGE_SIZE numbers
**   filled with ECS_RECORD_NONE). A lookup is two dependent reads; the map
**   holds only the number, the manager compares the handle stored in the
**   record (generation included), so nothing changes here when an entity
**   dies. About 4 bytes per record while indices are dense, 4 KB for a lone
**   record, 8 bytes of directory per 1024 indices.
** - ecs_record_gc: the one lazy-gc policy (reclaim records of dead
**   entities: a budgeted scan resumed at a cursor the manager keeps).
**
** The core's own managers (component, transform, names) use the same
** struct and the same policy through src/storage/sparse.h, with the policy inlined
** so that their owner and drop calls are direct; a plugin calls the
** exported ecs_record_gc (through the function table of ecs_plugin.h),
** which runs that very code.
**
** The map's lookup and store are static inline (no table call on the
** paths a plugin runs per record); growing, freeing, walking and measuring
** it are functions. Includes ecs.h only.
*/
#ifndef ECS_RECORDS_H
#define ECS_RECORDS_H

#include "ecs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The empty entry of the map, and a handy "no record" for managers. */
#define ECS_RECORD_NONE UINT32_MAX
#define ECS_RECORD_PAGE_BITS 10u
#define ECS_RECORD_PAGE_SIZE (1u << ECS_RECORD_PAGE_BITS)

/* Zero-initialize ({0} or memset) for an empty map. Its blocks come from
** the world's allocator and count as the world's (ecs_world_memory). */
typedef struct ecs_record_map {
  uint32_t **page;     /* page[i >> ECS_RECORD_PAGE_BITS], NULL until used */
  uint32_t page_count; /* entries in page[] */
} ecs_record_map;

/* @return the number stored for index, or ECS_RECORD_NONE. */
static inline uint32_t ecs_record_map_get(const ecs_record_map *m,
                                          uint32_t index) {
  uint32_t p = index >> ECS_RECORD_PAGE_BITS;
  if (p >= m->page_count || m->page[p] == NULL) return ECS_RECORD_NONE;
  return m->page[p][index & (ECS_RECORD_PAGE_SIZE - 1u)];
}

/*
** Store v for index. The slot must have been reserved (ecs_record_map_reserve)
** unless v is ECS_RECORD_NONE: clearing an index that has no page is a
** no-op, so clearing never needs a reservation.
*/
static inline void ecs_record_map_set(ecs_record_map *m, uint32_t index,
                                      uint32_t v) {
  uint32_t p = index >> ECS_RECORD_PAGE_BITS;
  if (p >= m->page_count || m->page[p] == NULL) return; /* only for NONE */
  m->page[p][index & (ECS_RECORD_PAGE_SIZE - 1u)] = v;
}

/*
** Make sure index has a slot, so that ecs_record_map_set cannot fail: call
** it before the first change of an add, and the add stays all or nothing.
** @return ECS_ERR_OK or ECS_ERR_NOMEM (the map is then as it was, or has
**         a larger directory, which is harmless).
*/
ecs_err ecs_record_map_reserve(ecs_world *w, ecs_record_map *m,
                               uint32_t index);

/* Release the map's blocks; it is empty (and reusable) afterwards. */
void ecs_record_map_free(ecs_world *w, ecs_record_map *m);

/*
** Call fn(ud, index, v) for every entry v that is not ECS_RECORD_NONE, in
** index order, for consistency checks (every entry names a record of that
** index): @return NULL, or the text of fn's first complaint.
*/
const char *ecs_record_map_each(const ecs_record_map *m,
                                const char *(*fn)(const void *ud,
                                                  uint32_t index, uint32_t v),
                                const void *ud);

/* @return bytes the map holds (directory and pages), for stats hooks. */
size_t ecs_record_map_bytes(const ecs_record_map *m);

/*
** A manager's records as the gc sees them. Records are dense in
** [0, *size); owner(self, i) is the handle record i stores; drop(w, self,
** i) removes record i by swap-remove (the last record moves into i, *size
** goes down by one) and must not allocate, fail or call listeners (the
** entity is dead: nobody is told, ecs.h).
*/
typedef struct ecs_record_ops {
  ecs_entity (*owner)(const void *self, uint32_t i);
  void (*drop)(ecs_world *w, void *self, uint32_t i);
} ecs_record_ops;

/*
** The lazy gc of every manager: reclaim records whose owner is not alive
** (the world does not tell managers when an entity dies, so this is what
** finds them), the policy of a manager class's gc hook.
**
** budget == SIZE_MAX sweeps every record, from the end down (each drop
** brings in a record already seen alive), and sets *cursor to 0.
** Otherwise an incremental scan from *cursor, which the manager keeps
** between calls (start it at 0): at most budget records reclaimed, at most
** 4 * budget + 64 live ones looked at, never more than one lap. So a
** per-frame call (world:update) costs O(budget) while nothing dies, and
** every dead record is reached within size / (4 * budget + 64) + 1 calls
** whatever the death rate (random probes, the old policy, could leave a
** lone dead record waiting indefinitely).
** @return how many records were reclaimed.
*/
size_t ecs_record_gc(ecs_world *w, void *self, const ecs_record_ops *ops,
                     const uint32_t *size, uint32_t *cursor, size_t budget);

#ifdef __cplusplus
}
#endif

#endif
