/*
** names.h -- the names manager: one name per entity, found again in O(1).
**
** Names are byte strings (any bytes, embedded zeros included), copied into
** memory from the world's allocator. Lookup hashes the name (FNV-1a, 32
** bits) into a chained table; a hash collision costs one extra comparison,
** never a wrong answer, because the stored string is compared too.
** Several live entities may share a name: find returns the one that
** received it most recently. Names vanish with their entity at once for
** get and find; the records are reclaimed by gc.
**
** Layer: managers, above entity and below query (layers: alloc.h).
** Includes ecs.h only.
*/
#ifndef ECS_NAMES_H
#define ECS_NAMES_H

#include "ecs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ecs_names ecs_names;

/* Create w's names manager, registered under "names".
** @return ECS_ERR_EXISTS, ECS_ERR_NOMEM. */
ecs_err ecs_names_new(ecs_world *w, ecs_names **out);

/* @return w's names manager, or NULL. */
ecs_names *ecs_names_of(const ecs_world *w);

/* Name e (replacing any name it had).
** @return ECS_ERR_DEAD, ECS_ERR_NOMEM (then nothing changed). */
ecs_err ecs_names_set(ecs_names *m, ecs_entity e, const char *s, size_t len);

/* e's name (len in *len), or NULL if e is not alive or has none. The
** pointer is valid until the next set, clear or gc. */
const char *ecs_names_get(const ecs_names *m, ecs_entity e, size_t *len);

/* Remove e's name. @return false if it had none (or is not alive). */
bool ecs_names_clear(ecs_names *m, ecs_entity e);

/* The live entity most recently given this name, or ECS_NULL. */
ecs_entity ecs_names_find(const ecs_names *m, const char *s, size_t len);

/* Records in use, including dead entities' records awaiting gc. */
size_t ecs_names_size(const ecs_names *m);

/* Reclaim up to budget records of dead entities (also ecs_world_gc). */
size_t ecs_names_gc(ecs_names *m, size_t budget);

#ifdef __cplusplus
}
#endif

#endif
