/*
** schema_gen.h -- how many times schemas changed: a counter per component
** and one per world, each incremented by every redefinition
** (ecs_component_redefine). Whoever resolved field numbers or read values
** by a schema (the binding's converted values, cached column specs,
** prefab plans) compares the counter it saw then with the one now: field
** numbers read before a change are stale.
**
** Private to the core and the binding (not in the plugin table).
**
** Layer: managers (src/storage/schema.c).
*/
#ifndef ECS_SCHEMA_GEN_H
#define ECS_SCHEMA_GEN_H

#include <stdint.h>

#include "component.h"

/* Redefinitions of c since it was made. */
uint32_t ecs_component_schema_gen(const ecs_component *c);

/* Redefinitions of any component of w since w was made. */
uint32_t ecs_world_schema_gen(const ecs_world *w);

#endif
