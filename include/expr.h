/*
** expr.h -- compiled column expressions over a query's matches:
**
**   Position.x += Velocity.dx * dt; Position.y = clamp(Position.y, 0, h)
**
** The grammar is in docs/queries.md. A program is compiled once against
** the "with" managers of a query (query.h) and run over its matches in
** blocks of rows. A program belongs to its query and is freed with it
** (or, for one from ecs_query_program, when evicted). No Lua here.
**
** Layer: expr, above query (layers: alloc.h). The dependency runs one
** way: expr.c uses the query's API and pinned snapshots; query.c knows
** nothing of programs and frees them through a hook. Includes ecs.h only
** (ecs_query is declared again below, as C11 allows), so that query.h can
** include this header for compatibility without a cycle.
*/
#ifndef ECS_EXPR_H
#define ECS_EXPR_H

#include "ecs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ecs_query ecs_query; /* query.h */
typedef struct ecs_program ecs_program;

/* Most named parameters in one program. */
#define ECS_PROGRAM_MAX_PARAMS 64u

/* Most programs a query keeps for ecs_query_program. */
#define ECS_QUERY_MAX_PROGRAMS 32u

/*
** Compile src (len bytes; a zero byte in them is an error) against q's
** "with" managers. The program lives until q is freed.
** @param msg receives a message naming the position on any error
**        ("unknown field 'Position.z' at position 12"); msgsize >= 1.
** @return ECS_ERR_OK; ECS_ERR_UNKNOWN_COMPONENT, ECS_ERR_EXCLUDED,
**         ECS_ERR_UNKNOWN_FIELD (the resolver's, ecs_query_resolve_field),
**         ECS_ERR_NOT_NUMERIC (an entity or lua field),
**         ECS_ERR_READONLY_FIELD (a statement stores into a field
**         ecs_component_readonly names), ECS_ERR_EXPRESSION
**         (any other mistake: syntax, unknown function, a limit);
**         ECS_ERR_NOMEM.
*/
ecs_err ecs_program_compile(ecs_world *w, ecs_query *q, const char *src,
                            size_t len, ecs_program **out, char *msg,
                            size_t msgsize);

/*
** The program for src on q, compiled once per text: q keeps the programs
** of the ECS_QUERY_MAX_PROGRAMS texts it was most recently asked for, and
** compiling another frees the least recently used of them. So the program
** is valid until that many other texts were compiled here for q: use it
** at once (nothing that can ask q for other texts in between).
** Arguments and errors as for ecs_program_compile.
*/
ecs_err ecs_query_program(ecs_world *w, ecs_query *q, const char *src,
                          size_t len, ecs_program **out, char *msg,
                          size_t msgsize);

/* Number of programs q keeps for ecs_query_program (at most
** ECS_QUERY_MAX_PROGRAMS). */
uint32_t ecs_query_program_count(ecs_query *q);

/* Named parameters of the program, in the order run expects them. */
uint32_t ecs_program_param_count(const ecs_program *p);
const char *ecs_program_param_name(const ecs_program *p, uint32_t i);
/* 1-based position in the source of parameter i's first use (for errors). */
uint32_t ecs_program_param_position(const ecs_program *p, uint32_t i);

/*
** Run p over every match of its query, blocks of rows at a time.
** @param params one value per parameter (ecs_program_param_name order).
** @return ECS_ERR_OK or ECS_ERR_NOMEM (then nothing changed).
*/
ecs_err ecs_program_run(ecs_world *w, ecs_program *p, const double *params,
                        size_t *processed);

#ifdef __cplusplus
}
#endif

#endif
