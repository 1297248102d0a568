/*
** sparse.h -- what the built-in managers share: the lazy gc policy (all of
** them) and the entity index -> record page table (transform and names;
** component managers, of which a world has many, each thinly spread, use
** the paged hash map of rowmap.h). Internal to the core; plugins get the
** same map and policy from the public records.h.
**
** The map is records.h's ecs_record_map, under the core's internal names
** (the built-in managers were written against these; an alias costs
** nothing). Its layout, page size and the reasons for them are described
** there.
**
** The policy is here, as the static inline ecsi_lazy_gc: each built-in
** manager's call, with its own constant records table, compiles to direct
** calls of its owner and drop, so one policy in the source costs no
** indirect call per record at run time. The public ecs_record_gc
** (sparse.c) is this same function, called through a table.
**
** Layer: managers, the part they share (layers: alloc.h). Includes
** alloc.h and records.h only.
*/
#ifndef ECS_SPARSE_H
#define ECS_SPARSE_H

#include "alloc.h"
#include "records.h"

#define ECSI_NONE ECS_RECORD_NONE
#define ECSI_PAGE_BITS ECS_RECORD_PAGE_BITS
#define ECSI_PAGE_SIZE ECS_RECORD_PAGE_SIZE

typedef ecs_record_map ecsi_sparse;
#define ecsi_sparse_get ecs_record_map_get
#define ecsi_sparse_set ecs_record_map_set
#define ecsi_sparse_reserve ecs_record_map_reserve
#define ecsi_sparse_free ecs_record_map_free
#define ecsi_sparse_each ecs_record_map_each
#define ecsi_sparse_bytes ecs_record_map_bytes

/* ------------------------------------------------------------------------
** The lazy gc
** --------------------------------------------------------------------- */

/* A manager's records as the gc sees them (records.h, ecs_record_ops). */
typedef ecs_record_ops ecsi_records;

/*
** A manager whose records must change at a death rather than at gc (the
** transform, whose children of e become roots) subscribes to the change
** barrier's ENTITY_DIED (barrier.h): it hears every destroy of e, once e
** is dead, before the queries; it must not allocate, fail, call back into
** the world or move records.
*/

/*
** The one lazy-gc policy of the managers (its contract: records.h,
** ecs_record_gc). A record is dead when its owner is not alive: managers
** are not told when an entity dies (ecs.h, "Records and generations"), so
** gc is what finds those records.
**
** budget == SIZE_MAX sweeps everything, from the end down, so the record
** each drop brings into i was already seen alive and nothing is looked at
** twice.
**
** Otherwise an incremental scan from *cursor, which the manager keeps
** between calls: at most budget records reclaimed, at most 4 * budget +
** 64 live ones looked at, and never more than one lap. A drop brings the
** last record into the cursor's place, which is looked at next. So a
** per-frame call (world:update) costs O(budget) when nothing is dead, and
** as the cursor laps the records every dead one is reached within
** size / (4 * budget + 64) calls, whatever the death rate.
**
** Why not Bitsquid's random probes that stop after 4 live records in a
** row (the old policy of the component manager and the plugins): while
** most records are alive they stop almost at once, so a low steady death
** rate leaves dead records waiting indefinitely, holding memory and
** walked by every query rebuild; and a random order makes runs hard to
** reproduce.
** @return how many records were reclaimed.
*/
static inline size_t ecsi_lazy_gc(ecs_world *w, void *self,
                                  const ecsi_records *r, const uint32_t *size,
                                  uint32_t *cursor, size_t budget) {
  size_t done = 0, live_seen = 0, limit;
  if (budget == SIZE_MAX) {
    for (uint32_t i = *size; i-- > 0;)
      if (!ecs_alive(w, r->owner(self, i))) {
        r->drop(w, self, i);
        done++;
      }
    *cursor = 0;
    return done;
  }
  limit = budget > (SIZE_MAX - 64u) / 4u ? SIZE_MAX : budget * 4u + 64u;
  while (*size > 0 && done < budget && live_seen < limit &&
         live_seen < *size) {
    if (*cursor >= *size) *cursor = 0; /* a lap ends: start over */
    if (!ecs_alive(w, r->owner(self, *cursor))) {
      r->drop(w, self, *cursor);
      done++;
    } else {
      (*cursor)++;
      live_seen++;
    }
  }
  return done;
}

#endif
