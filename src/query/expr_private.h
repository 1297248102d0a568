/*
** expr_private.h -- what the expression files share and nobody else
** sees: the code words (opcodes) the compiler emits and the machine runs,
** the compiled program's block, and the query's list of programs.
** Included by src/expr*.c only.
**
** The files, one concept each (expr.h is the contract):
**   expr.c          a query's programs: the list in its extension slot,
**                   the cache of ecs_query_program, the public entry
**                   points that compile, the parameter accessors
**   expr_compile.c  the compiler: source text to code words, checked
**                   against the query, into one block
**   expr_run.c      the block machine that runs a program over a query
**
** Layer: expr, above query (layers: alloc.h). Includes expr.h, query.h
** and ecs_private.h.
*/
#ifndef ECS_EXPR_PRIVATE_H
#define ECS_EXPR_PRIVATE_H

#include "expr.h"
#include "query.h"
#include "ecs_private.h"

/* deepest value stack: (MAX_DEPTH + 3) blocks of scratch, 38 KB at most */
#define MAX_DEPTH 16u

/*
** Opcodes, stored as code words. OP_ADD .. OP_DIV must stay consecutive:
** update_fast tests the range. The operands follow each opcode in the
** code (see exec for each instruction's shape).
*/
enum {
  OP_COL, OP_CONST, OP_PARAM, OP_STORE, OP_ADD, OP_SUB, OP_MUL, OP_DIV,
  OP_NEG, OP_MIN, OP_MAX, OP_ABS, OP_SQRT, OP_FLOOR, OP_CLAMP, OP_SCALAR,
  OP_UPDATE, OP_MOD, OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE, OP_SELECT,
  OP_AXPY, OP_CHAIN
};

/*
** A compiled program is one block (bytes): this struct, then the constant
** pool (doubles first, so they are aligned), the parameter names'
** pointers, the code, the parameters' positions, the names' text and the
** source text. One allocation to make and to free, and the source is kept
** so that ecs_query_program can recognise a text it compiled before.
*/
struct ecs_program {
  struct ecs_program *next;  /* the query's list, most recently used first */
  ecs_query *q;
  size_t bytes;              /* the whole block, this struct first */
  const char *src;           /* the source text (in the block), srclen bytes */
  size_t srclen;
  bool cached;               /* made by ecs_query_program: may be evicted */
  uint32_t *code;
  uint32_t ncode;
  double *konst;
  uint32_t nparam;
  const char **param;        /* names, in the block */
  uint32_t *param_pos;       /* 1-based position of each one's first use */
  uint32_t depth;            /* deepest stack the code reaches */
  uint32_t written;          /* bit t: the program stores into "with" term t */
  uint32_t read;             /* bit t: the program reads "with" term t */
};

/*
** A query's programs, most recently used first, are a list that expr.c
** keeps in the query's extension slot (ecsi_query_ext): query.c knows
** nothing of programs and frees them through ecsi_expr_programs_free,
** the hook set when the first one is linked, so the dependency runs one
** way.
*/
static inline ecs_program *programs_of(ecs_query *q) {
  return (ecs_program *)*ecsi_query_ext(q);
}

static inline void set_programs(ecs_query *q, ecs_program *head) {
  *ecsi_query_ext(q) = head;
}

/* expr_compile.c: compile src for q into a new program at the head of
** q's list (ecs_program_compile, ecs_query_program). */
ecs_err ecsi_expr_compile(ecs_world *w, ecs_query *q, const char *src,
                          size_t len, bool cached, ecs_program **out,
                          char *msg, size_t msgsize);

/* expr.c: the query's free hook, set by compile with the first program. */
void ecsi_expr_programs_free(ecs_world *w, ecs_query *q);
/* component_migrate.c: does src compile for q (nothing kept)? Forget the
** programs ecs_query_program compiled for q (a schema changed). */
ecs_err ecsi_expr_check(ecs_world *w, ecs_query *q, const char *src,
                        size_t len, char *msg, size_t msgsize);
void ecsi_expr_forget(ecs_world *w, ecs_query *q);

#endif
