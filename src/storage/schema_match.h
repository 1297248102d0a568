/*
** schema_match.h -- a new schema matched to a component's old one (hot
** reload: world:component(name, fields, { migrate = ... }), and
** world:restore(blob, { migrate = true })): which old field each new
** field takes its values from, by name or by a rename map, with the
** rules the map must keep; and whether two schemas are the same.
**
** Private to the core and the binding (not in the plugin table). The
** caller then converts the values of the fields that change type and
** calls ecs_component_redefine with from[].
**
** Layer: storage (schema.c's neighbour: reads a component's schema only).
*/
#ifndef ECS_SCHEMA_MATCH_H
#define ECS_SCHEMA_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "component.h"

/* One entry of a rename map: old field name -> new field name. */
typedef struct ecs_rename {
  const char *old_name, *new_name;
  size_t old_len, new_len;
} ecs_rename;

/*
** The checks of each entry of ren[0 .. nren), in order: old_name is a
** field of c, new_name one of defs[0 .. n), no two entries give the same
** new name. A caller that meets an entry it cannot convert checks the
** entries before it first, so the first error in the map's order wins.
** @return ECS_ERR_OK, or ECS_ERR_INVALID with the reason in msg (without
**         the caller's function name).
*/
ecs_err ecs_schema_check_renames(const ecs_component *c,
                                 const ecs_field_def *defs, uint32_t n,
                                 const ecs_rename *ren, size_t nren,
                                 char *msg, size_t size);

/*
** from[k] for every new field k: the old field of the same name, or of
** the old name ren gives it; ECS_NO_FIELD for a new field, and for one
** whose name is an old field renamed away (its values go to its new name
** only). Checks ren first (ecs_schema_check_renames), then that no entry
** renames a field to the name of an old field that stays (that field's
** values would be lost without a word).
** @return ECS_ERR_OK, or ECS_ERR_INVALID with the reason in msg.
*/
ecs_err ecs_schema_match(const ecs_component *c, const ecs_field_def *defs,
                         uint32_t n, const ecs_rename *ren, size_t nren,
                         uint32_t *from, char *msg, size_t size);

/* Is defs[0 .. n) c's schema, field for field, each from its own
** (a reload that changed nothing: no redefinition)? */
bool ecs_schema_same_as(const ecs_component *c, const ecs_field_def *defs,
                        uint32_t n, const uint32_t *from);

/* Do c and d have the same fields, in order, with the same types and
** cleanup policies (the whole schema)? */
bool ecs_schema_same_fields(const ecs_component *c, const ecs_component *d);

#endif
