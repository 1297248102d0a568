/*
** spawn.h -- a batch spawn: n new entities, each with the same components,
** their values given once for all or one per entity (the binding's
** world:spawn, world:clone; docs/components.md, "Spawning").
**
** Private to the core and the binding (not in the plugin table).
**
** Layer: managers (src/storage/): it calls the entity layer and the
** component managers.
*/
#ifndef ECS_SPAWN_H
#define ECS_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "component.h"

/* How the n values of one field of a spawn are given. */
typedef enum ecs_spawn_mode {
  ECS_SPAWN_ZERO, /* none: the zeros of a new instance */
  ECS_SPAWN_ONE,  /* .one for every entity */
  ECS_SPAWN_EACH, /* .each[i] for entity i */
  ECS_SPAWN_REFS  /* a lua field: .refs[i] for entity i (refs the caller made) */
} ecs_spawn_mode;

typedef struct ecs_spawn_field {
  ecs_spawn_mode mode;
  ecs_scalar one;
  const ecs_scalar *each;
  const uint32_t *refs;
} ecs_spawn_field;

/* One component of a spawn: field k of it from field[k]. Values are
** converted already (the checked rule of value.h). */
typedef struct ecs_spawn_component {
  ecs_component *c;
  const ecs_spawn_field *field;
} ecs_spawn_component;

/*
** Create n entities es[0 .. n) and give each the m components of comp
** with their values, in C, component by component; then, with every
** entity complete, ECS_EVENT_ADD to the listeners, entity by entity in
** order, each entity's components in the order of comp (skipping an
** instance a listener removed, or an entity it destroyed).
** Nothing changes unless everything can be made: the indices the entities
** will get are asked for first (ecs_next_indices) and room for them
** reserved in every component.
** @param index, rows  scratch of n entries each.
** @param created      receives whether the entities were made (an error
**                     then is the first listener's).
** @return ECS_ERR_OK; before anything changed (*created false):
**         ECS_ERR_FULL (fewer than n entities can be made), ECS_ERR_NOMEM,
**         ECS_ERR_PINNED, ECS_ERR_INVALID (an owned component); after
**         (*created true): the first listener's error.
*/
ecs_err ecs_spawn(ecs_world *w, const ecs_spawn_component *comp, uint32_t m,
                  size_t n, ecs_entity *es, uint32_t *index,
                  ecs_instance *rows, bool *created);

#endif
