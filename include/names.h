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
** Listeners (ecs_manager_listen on the manager): ECS_EVENT_ADD (then SET:
** ecs.h) after an entity without a name gets one, ECS_EVENT_SET after a
** named entity is renamed (set), ECS_EVENT_REMOVE before clear drops a name (still
** readable). gc, the class's clear and load, and an entity's death
** report nothing. The manager class implements every hook (ecs.h): its
** schema is one field, "name", described as u8 (a byte string; see
** names.c), and save/load keep names, their holders and the order they
** were given in (which find depends on).
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

/* Name e (replacing any name it had); then ADD (e had none) or SET.
** @return ECS_ERR_DEAD, ECS_ERR_NOMEM (then nothing changed), or the first
**         listener's error (the name was set all the same). */
ecs_err ecs_names_set(ecs_names *m, ecs_entity e, const char *s, size_t len);

/* e's name (len in *len), or NULL if e is not alive or has none. The
** pointer is valid until the next set, clear or gc. */
const char *ecs_names_get(const ecs_names *m, ecs_entity e, size_t *len);

/* Remove e's name, after REMOVE (a clear of e from inside its listeners
** drops the name at once, without a second REMOVE).
** @param cleared receives false if e had none (or is not alive); may be
**                NULL.
** @return ECS_ERR_OK, or the first listener's error (e's name is removed
**         all the same, even one a listener gave it meanwhile). */
ecs_err ecs_names_clear(ecs_names *m, ecs_entity e, bool *cleared);

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
