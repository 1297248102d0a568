/*
** column_spec.h -- a column spec of q:columns and q:each_chunk as text,
** "Component.field" (read and written back), "Component.field:in" (read
** only) or "entity" (the chunk's entities), resolved against a query.
**
** Also the write-back of a chunk of such columns.
**
** Private to the core and the binding (not in the plugin table).
**
** Layer: query (query_run.c, beside the resolver it calls).
*/
#ifndef ECS_COLUMN_SPEC_H
#define ECS_COLUMN_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query.h"

#define ECS_ENTITY_TERM 0xffu /* the term of "entity": read-only */

typedef struct ecs_column_spec {
  uint32_t term, field; /* field 0 for "entity" */
  ecs_type type;
  bool write;
} ecs_column_spec;

/*
** Resolve the spec s[0 .. len)
** against q: the field's term, number and type, and whether the column is
** written back. @return ECS_ERR_OK, or an error with msg saying why:
** ECS_ERR_INVALID with msg "" when s is not 'Component.field' (the
** caller names the form), the errors of ecs_query_resolve_field,
** ECS_ERR_LUA_FIELD (a lua field), ECS_ERR_READONLY_FIELD (a written
** column of a field others drive: the caller's message tells to read it
** with ':in', as s itself may not fit msg).
*/
ecs_err ecs_query_column_spec(const ecs_query *q, const char *s, size_t len,
                              ecs_column_spec *out, char *msg,
                              size_t msg_size);

/*
** Store a chunk's converted values back (q:columns' write-back): for each
** written column k of cols[0 .. ncols) in order, its n values (the s-th
** written column's at vals + s * stride) go to the chunk's entities
** ent[0 .. n), at the rows the chunk was given (rows + term * stride)
** while current (nothing changed the structure since), else at the row
** now of each entity the query still matches; each inside its write
** bracket's begin. Then every term written gets its bracket's end once,
** after all its columns: a manager that owns the component (the
** transform) sees each row's new values whole.
*/
void ecs_query_chunk_store(ecs_world *w, const ecs_query *q,
                           const ecs_column_spec *cols, uint32_t ncols,
                           const ecs_scalar *vals, const ecs_entity *ent,
                           const uint32_t *rows, size_t stride, uint32_t n,
                           bool current);

#endif
