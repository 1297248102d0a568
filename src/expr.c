/*
** expr.c -- column expressions compiled once, run over a query in blocks.
**
**   Position.x += Velocity.dx * dt; Position.y = clamp(Position.y, 0, h)
**
** Compilation is a recursive-descent parser (grammar in docs/queries.md)
** that emits code for a stack machine whose values are whole blocks: one
** instruction processes up to ECSI_BLOCK rows, so the interpreter's
** dispatch costs once per block and instruction, and the inner loops are
** plain loops over double arrays that the compiler vectorises.
**
** Code words: an opcode, then its operands. COL and STORE name a "with"
** term of the query and a field; CONST and PARAM index the constant pool
** and the parameter list. Statements run in order over a block, which is
** the same as running them in order per entity, since an entity's
** statements only touch its own rows.
**
** Everything that can go wrong is found before the run: unknown names and
** bad syntax at compile time, missing parameters by the caller; a run
** only fails for lack of scratch memory, and then before any store.
**
** Why a block machine and not a tree walk per entity: a tree walk pays a
** dispatch and a type switch per node and entity; paying them per block
** of 256 rows leaves only the arithmetic in the inner loops, which the
** compiler turns into SIMD code. The price is that
** every value is a 2 KB block of doubles, so the stack is kept shallow
** (MAX_DEPTH) and constants are fused into the instruction that uses
** them (SCALAR) instead of being spread over a block.
**
** Layer: expr, above query (layers: alloc.h). The machine reads rows from
** a pinned snapshot of the query (ecsi_query_pin) and columns through the
** managers' API; values are converted by the value layer (value.h) with
** its saturating rule, so a store of 300 into a u8 field gives 255.
*/
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "query.h"
#include "value.h"
#include "ecs_private.h"

/* deepest value stack: (MAX_DEPTH + 3) blocks of scratch, 38 KB at most */
#define MAX_DEPTH 16u
/* longest source: bounds the code and constant buffers sized from it */
#define MAX_SOURCE 65536u
/* deepest nesting of parentheses, calls and unary minus: the parser is
** recursive, so this bounds its C stack */
#define MAX_NESTING 200u

/*
** Opcodes, stored as code words. OP_ADD .. OP_DIV must stay consecutive:
** update_fast tests the range. The operands follow each opcode in the
** code (see exec for each instruction's shape).
*/
enum {
  OP_COL, OP_CONST, OP_PARAM, OP_STORE, OP_ADD, OP_SUB, OP_MUL, OP_DIV,
  OP_NEG, OP_MIN, OP_MAX, OP_ABS, OP_SQRT, OP_FLOOR, OP_CLAMP, OP_SCALAR,
  OP_UPDATE, OP_MOD, OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE, OP_SELECT,
  OP_AXPY
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
};

/* ------------------------------------------------------------------------
** The compiler
** --------------------------------------------------------------------- */

/*
** The compiler's state. The code and constant buffers are sized from the
** source length before parsing (no growth, so no failure halfway), then
** copied into the program's block, whose size is known only at the end.
** failed is sticky: the first error is the one reported, and every
** parsing function returns at once after it.
*/
typedef struct parser {
  ecs_query *q;
  const char *src;
  size_t len, pos;
  uint32_t *code;
  uint32_t ncode, code_cap;
  double *konst;
  uint32_t nconst, konst_cap;
  char *digits;       /* len + 1 bytes: a number's text, zero-terminated */
  size_t pname[ECS_PROGRAM_MAX_PARAMS], plen[ECS_PROGRAM_MAX_PARAMS]; /* offsets into src */
  uint32_t nparam;
  uint32_t depth, maxdepth; /* value stack now, and at most: sizes the run */
  uint32_t last_push; /* where the last CONST or PARAM was emitted */
  uint32_t nesting;   /* current depth of recursion */
  char *msg;
  size_t msgsize;
  bool failed;
  ecs_err failure;    /* the first error's code: EXPRESSION or a rule's */
} parser;

/*
** Record the first error (with a 1-based position) and stop. fmt always
** takes two "%.*s" pieces (unused ones are empty): every message quotes at
** most two slices of the source, which are not zero-terminated.
*/
static void fail(parser *p, size_t at, const char *fmt, const char *a,
                 int alen, const char *b, int blen) {
  char what[160];
  if (p->failed) return;
  p->failed = true;
  p->failure = ECS_ERR_EXPRESSION;
  snprintf(what, sizeof what, fmt, alen, a, blen, b);
  snprintf(p->msg, p->msgsize, "%s at position %u", what, (unsigned)at + 1u);
}

static void fail0(parser *p, size_t at, const char *text) {
  fail(p, at, "%.*s%.*s", text, (int)strlen(text), "", 0);
}

/* fail, for an error that breaks a rule with a code of its own (the
** resolver's unknown component or field, a field that holds no number). */
static void fail_as(parser *p, size_t at, ecs_err code, const char *fmt,
                    const char *a, int alen, const char *b, int blen) {
  bool first = !p->failed;
  fail(p, at, fmt, a, alen, b, blen);
  if (first) p->failure = code;
}

static void skip_space(parser *p) {
  while (p->pos < p->len && (p->src[p->pos] == ' ' || p->src[p->pos] == '\t' ||
                             p->src[p->pos] == '\n' || p->src[p->pos] == '\r'))
    p->pos++;
}

/* The next non-space character, or 0 at the end. */
static char peek(parser *p) {
  skip_space(p);
  return p->pos < p->len ? p->src[p->pos] : '\0';
}

static bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static size_t ident_len(const parser *p, size_t at) {
  size_t n = 0;
  if (at >= p->len || !is_alpha(p->src[at])) return 0;
  while (at + n < p->len && (is_alpha(p->src[at + n]) || is_digit(p->src[at + n])))
    n++;
  return n;
}

/* code_cap was sized from the source length: emitting cannot overflow. */
static void emit(parser *p, uint32_t w) {
  if (p->ncode < p->code_cap) p->code[p->ncode++] = w;
}

/*
** Track the stack depth an instruction leaves (delta: +1 push, -k pops).
** The machine never checks its stack pointer: this count, done once at
** compile time, is what guarantees that every pop has a value and that
** the scratch sized from maxdepth is enough.
*/
static void stack(parser *p, int delta, size_t at) {
  p->depth = (uint32_t)((int)p->depth + delta);
  if (p->depth > p->maxdepth) p->maxdepth = p->depth;
  if (p->depth > MAX_DEPTH) fail0(p, at, "expression too complex");
}

/*
** Component.field at the current position: resolves both names against
** the query's "with" terms (the one resolver, ecs_query_resolve_field, so
** expressions, q:columns and native systems word a mistake the same way).
** Entity and lua fields are refused here, at compile time: they hold
** handles and references, not numbers, and the machine only moves doubles.
** @return false (after failing) if it is not one.
*/
static bool field_ref(parser *p, uint32_t *term, uint32_t *field) {
  size_t at = p->pos, n = ident_len(p, at), m;
  const char *cname = p->src + at;
  uint32_t k, f;
  ecs_component *c;
  ecs_kind kind;
  ecs_err err;
  char why[128];
  if (n == 0 || at + n >= p->len || p->src[at + n] != '.') {
    fail0(p, at, "expected Component.field");
    return false;
  }
  m = ident_len(p, at + n + 1);
  if (m == 0) {
    fail0(p, at + n + 1, "expected a field name");
    return false;
  }
  if ((err = ecs_query_resolve_field(p->q, cname, n, cname + n + 1, m, &k,
                                     &f, why, sizeof why)) != ECS_ERR_OK) {
    fail_as(p, at, err, "%.*s%.*s", why, (int)strlen(why), "", 0);
    return false;
  }
  c = ecs_query_with(p->q, k);
  kind = ecs_type_kind(ecs_component_field(c, f)->type);
  if (kind == ECS_KIND_ENTITY || kind == ECS_KIND_REF) {
    fail_as(p, at, ECS_ERR_NOT_NUMERIC, "field '%.*s.%.*s' is not numeric",
            cname, (int)n, cname + n + 1, (int)m);
    return false;
  }
  p->pos = at + n + 1 + m;
  *term = k;
  *field = f;
  return true;
}

static void expr(parser *p);

/*
** Emit a binary op. When its right operand was just pushed as a constant
** or parameter, fuse the two: SCALAR op kind index works on the left
** operand in place, without filling a block with one value. last_push ==
** ncode - 2 says the CONST/PARAM is the last thing emitted, so it is the
** right operand; in "2 - x" the constant comes first and is not fused
** (fusing would need the operands swapped, wrong for - / % and the
** comparisons).
*/
static void emit_binary(parser *p, uint32_t op, size_t at) {
  if (p->ncode >= 2 && p->last_push == p->ncode - 2 &&
      (p->code[p->ncode - 2] == OP_CONST || p->code[p->ncode - 2] == OP_PARAM)) {
    uint32_t kind = p->code[p->ncode - 2] == OP_CONST ? 0u : 1u;
    uint32_t k = p->code[p->ncode - 1];
    p->ncode -= 2;
    emit(p, OP_SCALAR);
    emit(p, op);
    emit(p, kind);
    emit(p, k);
  } else {
    emit(p, op);
  }
  stack(p, -1, at);
}

/*
** The double nearest to the n characters of a number at buf (zero-
** terminated there), as Lua's tonumber reads them: strtod, retried with
** the locale's decimal point when that is not '.'. (strtod follows
** LC_NUMERIC, which a host may have set to a locale writing "1,5"; the
** grammar always writes "1.5".)
*/
static double to_double(char *buf, size_t n) {
  char *end;
  double v = strtod(buf, &end);
  if (end != buf + n) {
    char *dot = (char *)memchr(buf, '.', n);
    if (dot != NULL) {
      *dot = localeconv()->decimal_point[0];
      v = strtod(buf, &end);
    }
  }
  return v;
}

/*
** number: digits [. digits] [e [+-] digits], or . digits; of any length.
** The grammar is checked here, not by strtod, which would also accept
** hex, "inf" and "nan"; the text is copied into digits because the source
** is not zero-terminated. A letter right after the number ("2x") is an
** error rather than a number followed by a parameter.
*/
static void number(parser *p) {
  size_t at = p->pos, n = 0;
  while (at + n < p->len && is_digit(p->src[at + n])) n++;
  if (at + n < p->len && p->src[at + n] == '.') {
    n++;
    while (at + n < p->len && is_digit(p->src[at + n])) n++;
  }
  if (n == 1 && p->src[at] == '.') {
    fail0(p, at, "malformed number");
    return;
  }
  if (at + n < p->len && (p->src[at + n] == 'e' || p->src[at + n] == 'E')) {
    size_t e = n + 1;
    if (at + e < p->len && (p->src[at + e] == '+' || p->src[at + e] == '-')) e++;
    if (at + e >= p->len || !is_digit(p->src[at + e])) {
      fail0(p, at, "malformed number");
      return;
    }
    while (at + e < p->len && is_digit(p->src[at + e])) e++;
    n = e;
  }
  if (at + n < p->len && is_alpha(p->src[at + n])) {
    fail0(p, at, "malformed number");
    return;
  }
  memcpy(p->digits, p->src + at, n);
  p->digits[n] = '\0';
  p->pos = at + n;
  if (p->nconst < p->konst_cap) p->konst[p->nconst] = to_double(p->digits, n);
  p->last_push = p->ncode;
  emit(p, OP_CONST);
  emit(p, p->nconst++);
  stack(p, 1, at);
}

/*
** The built-in functions. max_args UINT32_MAX marks the variadic ones
** (min, max), which fold pairwise as their arguments come; the others
** have a fixed arity and one instruction that pops all their arguments.
*/
static const struct {
  const char *name;
  uint32_t op, min_args, max_args;
} functions[] = {
  {"min", OP_MIN, 2, UINT32_MAX}, {"max", OP_MAX, 2, UINT32_MAX},
  {"abs", OP_ABS, 1, 1}, {"sqrt", OP_SQRT, 1, 1}, {"floor", OP_FLOOR, 1, 1},
  {"clamp", OP_CLAMP, 3, 3}, {"select", OP_SELECT, 3, 3},
};

/* name(args) at at (n bytes), the '(' at the current position. */
static void call(parser *p, size_t at, size_t n) {
  uint32_t fi, nargs = 0;
  for (fi = 0; fi < sizeof functions / sizeof functions[0]; fi++)
    if (strlen(functions[fi].name) == n &&
        memcmp(functions[fi].name, p->src + at, n) == 0)
      break;
  if (fi == sizeof functions / sizeof functions[0]) {
    fail(p, at, "unknown function '%.*s'%.*s", p->src + at, (int)n, "", 0);
    return;
  }
  p->pos++; /* ( */
  if (peek(p) != ')') {
    for (;;) {
      expr(p);
      if (p->failed) return;
      nargs++;
      /* min and max fold as they go: the stack stays shallow */
      if (nargs > 1 && functions[fi].max_args > 3)
        emit_binary(p, functions[fi].op, at);
      if (peek(p) != ',') break;
      p->pos++;
    }
  }
  if (peek(p) != ')') {
    fail0(p, p->pos, "expected ')' or ','");
    return;
  }
  p->pos++;
  if (nargs < functions[fi].min_args || nargs > functions[fi].max_args) {
    const char *fmt = functions[fi].min_args == functions[fi].max_args
      ? "function '%.*s' takes %.*s argument(s)"
      : "function '%.*s' takes at least %.*s arguments";
    char count[8];
    snprintf(count, sizeof count, "%u", (unsigned)functions[fi].min_args);
    fail(p, at, fmt, p->src + at, (int)n, count, (int)strlen(count));
    return;
  }
  if (functions[fi].max_args <= 3) {
    emit(p, functions[fi].op);
    stack(p, 1 - (int)nargs, at);
  }
}

/*
** A bare name is a parameter: numbered by first appearance (the order
** ecs_program_param_name reports and run expects), its first position
** kept so that a caller can say where a missing value was needed.
*/
static void param(parser *p, size_t at, size_t n) {
  uint32_t k;
  for (k = 0; k < p->nparam; k++)
    if (p->plen[k] == n && memcmp(p->src + p->pname[k], p->src + at, n) == 0)
      break;
  if (k == p->nparam) {
    if (p->nparam == ECS_PROGRAM_MAX_PARAMS) {
      fail0(p, at, "too many parameters");
      return;
    }
    p->pname[k] = at;
    p->plen[k] = n;
    p->nparam++;
  }
  p->pos = at + n;
  p->last_push = p->ncode;
  emit(p, OP_PARAM);
  emit(p, k);
  stack(p, 1, at);
}

/*
** primary := number | ( expr ) | Component.field | name ( args ) | name
** An identifier is told apart by what follows it: '.' a field, '(' a
** call, anything else a parameter.
*/
static void primary(parser *p) {
  char c = peek(p);
  size_t at = p->pos, n;
  if (is_digit(c) || c == '.') {
    number(p);
  } else if (c == '(') {
    p->pos++;
    expr(p);
    if (p->failed) return;
    if (peek(p) != ')') fail0(p, p->pos, "expected ')'");
    else p->pos++;
  } else if ((n = ident_len(p, at)) > 0) {
    if (at + n < p->len && p->src[at + n] == '.') {
      uint32_t term, field;
      if (!field_ref(p, &term, &field)) return;
      emit(p, OP_COL);
      emit(p, term);
      emit(p, field);
      stack(p, 1, at);
    } else {
      p->pos = at + n;
      if (peek(p) == '(') call(p, at, n);
      else param(p, at, n);
    }
  } else if (c == '\0') {
    fail0(p, at, "expected an expression, got the end");
  } else {
    fail(p, at, "expected an expression near '%.*s'%.*s", p->src + at, 1, "", 0);
  }
}

/*
** Enter one level of nesting; false (after failing) beyond MAX_NESTING.
** Counting in unary is enough: every way the parser recurses (a
** parenthesis, a call's argument, a unary minus) passes through it.
*/
static bool nest(parser *p, size_t at) {
  if (++p->nesting <= MAX_NESTING) return true;
  fail0(p, at, "expression nested too deeply");
  return false;
}

static void unary(parser *p) {
  size_t at = p->pos;
  if (!nest(p, at)) return;
  if (peek(p) == '-') {
    p->pos++;
    unary(p);
    emit(p, OP_NEG);
  } else {
    primary(p);
  }
  p->nesting--;
}

/* term := unary { (* | / | %) unary }, left associative */
static void term(parser *p) {
  unary(p);
  while (!p->failed &&
         (peek(p) == '*' || peek(p) == '/' || peek(p) == '%')) {
    size_t at = p->pos;
    char c = p->src[p->pos++];
    uint32_t op = c == '*' ? OP_MUL : c == '/' ? OP_DIV : OP_MOD;
    unary(p);
    emit_binary(p, op, at);
  }
}

/* sum := term { (+ | -) term }, left associative */
static void sum(parser *p) {
  term(p);
  while (!p->failed && (peek(p) == '+' || peek(p) == '-')) {
    size_t at = p->pos;
    uint32_t op = p->src[p->pos++] == '+' ? OP_ADD : OP_SUB;
    term(p);
    emit_binary(p, op, at);
  }
}

/* A comparison operator at the current position: its op and length. */
static uint32_t relop(parser *p, size_t *len) {
  char c = peek(p), d = p->pos + 1 < p->len ? p->src[p->pos + 1] : '\0';
  *len = d == '=' ? 2 : 1;
  switch (c) {
  case '<': return d == '=' ? OP_LE : OP_LT;
  case '>': return d == '=' ? OP_GE : OP_GT;
  case '=': return d == '=' ? OP_EQ : 0;
  case '~': return d == '=' ? OP_NE : 0;
  default: return 0;
  }
}

/*
** expr := sum [relop sum]; a comparison gives 1 or 0. At most one
** comparison: "a < b < c" stops at the second '<' ("expected ';'"):
** chained, it would compare the 0/1 of a < b with c, rarely what is meant.
*/
static void expr(parser *p) {
  uint32_t op;
  size_t len;
  sum(p);
  if (!p->failed && (op = relop(p, &len)) != 0) {
    size_t at = p->pos;
    p->pos += len;
    sum(p);
    emit_binary(p, op, at);
  }
}

/*
** statement := Component.field (= | += | -= | *= | /=) expr
** Two shapes get their own instruction, because they are most of what
** systems write and each saves whole passes over a block:
** - x += y * k and x -= y * k, with k a constant or parameter: AXPY,
**   recognised after the fact from the 7 code words the expression
**   compiled to (COL ts fs, SCALAR MUL kind k) and replaced;
** - x op= e: UPDATE, read-modify-write of x in one pass. The right side is
**   evaluated whole first: x *= a + b is x * (a + b).
*/
static void statement(parser *p) {
  uint32_t t, f, op = OP_STORE, start;
  size_t at;
  char c;
  peek(p);
  at = p->pos;
  if (ident_len(p, at) == 0) {
    fail0(p, at, "expected Component.field");
    return;
  }
  if (!field_ref(p, &t, &f)) return;
  c = peek(p);
  if ((c == '+' || c == '-' || c == '*' || c == '/') && p->pos + 1 < p->len &&
      p->src[p->pos + 1] == '=') {
    op = c == '+' ? OP_ADD : c == '-' ? OP_SUB : c == '*' ? OP_MUL : OP_DIV;
    p->pos += 2;
  } else if (c == '=') {
    p->pos++;
  } else {
    fail0(p, p->pos, "expected '=', '+=', '-=', '*=' or '/='");
    return;
  }
  start = p->ncode;
  expr(p);
  if (p->failed) return;
  if ((op == OP_ADD || op == OP_SUB) && p->ncode == start + 7 &&
      p->code[start] == OP_COL && p->code[start + 3] == OP_SCALAR &&
      p->code[start + 4] == OP_MUL) {
    /* x += y * k (k a constant or parameter): one fused pass (AXPY) */
    uint32_t ts = p->code[start + 1], fs = p->code[start + 2];
    uint32_t kind = p->code[start + 5], k = p->code[start + 6];
    p->ncode = start;
    emit(p, OP_AXPY);
    emit(p, op);
    emit(p, t);
    emit(p, f);
    emit(p, ts);
    emit(p, fs);
    emit(p, kind);
    emit(p, k);
    stack(p, -1, at);
    return;
  }
  if (op != OP_STORE) { /* x op= e: x = x op (e) in one pass (UPDATE) */
    emit(p, OP_UPDATE);
    emit(p, op);
  } else {
    emit(p, OP_STORE);
  }
  emit(p, t);
  emit(p, f);
  stack(p, -1, at);
}

/* program := statement { ; statement } [;] -- at least one statement */
static void program(parser *p) {
  uint32_t statements = 0;
  while (!p->failed) {
    char c = peek(p);
    if (c == '\0') break;
    statement(p);
    statements++;
    if (p->failed) break;
    c = peek(p);
    if (c == ';') p->pos++;
    else if (c != '\0') fail(p, p->pos, "expected ';' near '%.*s'%.*s",
                             p->src + p->pos, 1, "", 0);
  }
  if (!p->failed && statements == 0) fail0(p, 0, "empty program");
}

/*
** A query's programs, most recently used first, are a list that expr.c
** keeps in the query's extension slot (ecsi_query_ext): query.c knows
** nothing of programs and frees them through programs_free, the hook
** set when the first one is linked, so the dependency runs one way.
*/
static ecs_program *programs_of(ecs_query *q) {
  return (ecs_program *)*ecsi_query_ext(q);
}

static void set_programs(ecs_query *q, ecs_program *head) {
  *ecsi_query_ext(q) = head;
}

/* Unlink prog from its query's list and free it. */
static void program_free(ecs_world *w, ecs_program *prog) {
  ecs_program *p = programs_of(prog->q), *prev = NULL;
  while (p != NULL && p != prog) {
    prev = p;
    p = p->next;
  }
  if (p == prog) {
    if (prev != NULL) prev->next = prog->next;
    else set_programs(prog->q, prog->next);
  }
  ecsi_free(w, prog, prog->bytes);
}

/* The query's free hook: every program of q goes with it. */
static void programs_free(ecs_world *w, ecs_query *q) {
  ecs_program *p = programs_of(q);
  while (p != NULL) {
    ecs_program *next = p->next;
    ecsi_free(w, p, p->bytes);
    p = next;
  }
  set_programs(q, NULL);
}

/*
** Compile src for q into a new program at the head of q's list. Order:
** checks that need no memory (length, zero bytes), then the work buffers,
** parsing, and the program's one block; the work buffers are freed on
** every path (done:). On any error nothing is linked and msg says why.
*/
static ecs_err compile(ecs_world *w, ecs_query *q, const char *src, size_t len,
                       bool cached, ecs_program **out, char *msg,
                       size_t msgsize) {
  parser p;
  ecs_program *prog;
  size_t names = 0, bytes;
  char *text;
  const char *zero;
  ecs_err err = ECS_ERR_OK;
  if (msgsize > 0) msg[0] = '\0';
  if (len > MAX_SOURCE) {
    snprintf(msg, msgsize, "expression too long (limit %u bytes)", MAX_SOURCE);
    return ECS_ERR_EXPRESSION;
  }
  /* src is len bytes, not C text: a zero byte is an error, not the end */
  if ((zero = (const char *)memchr(src, 0, len)) != NULL) {
    snprintf(msg, msgsize, "zero byte in the expression at position %u",
             (unsigned)(zero - src) + 1u);
    return ECS_ERR_EXPRESSION;
  }
  memset(&p, 0, sizeof p);
  p.q = q;
  p.src = src;
  p.len = len;
  p.msg = msg;
  p.msgsize = msgsize;
  /* every token emits at most 3 words per source byte, plus a store;
  ** at most one constant per source byte (a number takes a digit) */
  p.code_cap = (uint32_t)(3u * len + 8u);
  p.konst_cap = (uint32_t)(len + 1u);
  p.code = (uint32_t *)ecsi_realloc(w, NULL, 0, p.code_cap * sizeof *p.code);
  p.konst = (double *)ecsi_realloc(w, NULL, 0, p.konst_cap * sizeof *p.konst);
  p.digits = (char *)ecsi_realloc(w, NULL, 0, len + 1u);
  if (p.code == NULL || p.konst == NULL || p.digits == NULL) {
    err = ECS_ERR_NOMEM;
    goto done;
  }
  program(&p);
  if (p.failed) {
    err = p.failure;
    goto done;
  }
  for (uint32_t k = 0; k < p.nparam; k++) names += p.plen[k] + 1;
  bytes = sizeof *prog + p.ncode * sizeof(uint32_t) +
          p.nconst * sizeof(double) + p.nparam * sizeof(char *) +
          p.nparam * sizeof(uint32_t) + names + len;
  /* doubles first after the struct keep their alignment */
  prog = (ecs_program *)ecsi_realloc(w, NULL, 0, bytes);
  if (prog == NULL) {
    err = ECS_ERR_NOMEM;
    goto done;
  }
  memset(prog, 0, sizeof *prog);
  prog->q = q;
  prog->bytes = bytes;
  prog->konst = (double *)(void *)(prog + 1);
  prog->param = (const char **)(void *)(prog->konst + p.nconst);
  prog->code = (uint32_t *)(void *)(prog->param + p.nparam);
  prog->param_pos = prog->code + p.ncode;
  text = (char *)(prog->param_pos + p.nparam);
  if (p.nconst) memcpy(prog->konst, p.konst, p.nconst * sizeof(double));
  memcpy(prog->code, p.code, p.ncode * sizeof(uint32_t));
  prog->ncode = p.ncode;
  prog->nparam = p.nparam;
  for (uint32_t k = 0; k < p.nparam; k++) {
    memcpy(text, src + p.pname[k], p.plen[k]);
    text[p.plen[k]] = '\0';
    prog->param[k] = text;
    prog->param_pos[k] = (uint32_t)p.pname[k] + 1u;
    text += p.plen[k] + 1;
  }
  if (len > 0) memcpy(text, src, len);
  prog->src = text;
  prog->srclen = len;
  prog->cached = cached;
  prog->depth = p.maxdepth;
  prog->next = programs_of(q);
  set_programs(q, prog);
  ecsi_query_set_ext_free(q, programs_free);
  *out = prog;
done:
  ecsi_free(w, p.code, p.code_cap * sizeof *p.code);
  ecsi_free(w, p.konst, p.konst_cap * sizeof *p.konst);
  ecsi_free(w, p.digits, len + 1u);
  if (err == ECS_ERR_NOMEM) snprintf(msg, msgsize, "not enough memory");
  return err;
}

ecs_err ecs_program_compile(ecs_world *w, ecs_query *q, const char *src,
                            size_t len, ecs_program **out, char *msg,
                            size_t msgsize) {
  return compile(w, q, src, len, false, out, msg, msgsize);
}

/*
** The query's list is its cache: a hit moves the program to the head, so
** the list runs from the most to the least recently used, and a miss
** compiles a new head and frees the last cached program beyond
** ECS_QUERY_MAX_PROGRAMS. A repeated text costs a walk to its place and
** one compare of the text; texts of other lengths cost a compare of sizes.
** Programs from ecs_program_compile share the list but are never counted
** or evicted: their callers hold them until the query goes.
*/
ecs_err ecs_query_program(ecs_world *w, ecs_query *q, const char *src,
                          size_t len, ecs_program **out, char *msg,
                          size_t msgsize) {
  ecs_program *p, *prev = NULL;
  uint32_t kept = 0;
  ecs_err err;
  if (msgsize > 0) msg[0] = '\0';
  for (p = programs_of(q); p != NULL; prev = p, p = p->next) {
    if (p->cached && p->srclen == len && memcmp(p->src, src, len) == 0) {
      if (prev != NULL) { /* move to the head */
        prev->next = p->next;
        p->next = programs_of(q);
        set_programs(q, p);
      }
      *out = p;
      return ECS_ERR_OK;
    }
  }
  if ((err = compile(w, q, src, len, true, out, msg, msgsize)) != ECS_ERR_OK)
    return err;
  for (p = programs_of(q); p != NULL; p = p->next) {
    if (p->cached && ++kept > ECS_QUERY_MAX_PROGRAMS) {
      program_free(w, p); /* unlinks itself; at most one is over */
      break;
    }
  }
  return ECS_ERR_OK;
}

uint32_t ecs_query_program_count(ecs_query *q) {
  const ecs_program *p = programs_of(q);
  uint32_t n = 0;
  for (; p != NULL; p = p->next) n += p->cached;
  return n;
}

uint32_t ecs_program_param_count(const ecs_program *p) { return p->nparam; }

const char *ecs_program_param_name(const ecs_program *p, uint32_t i) {
  return i < p->nparam ? p->param[i] : NULL;
}

uint32_t ecs_program_param_position(const ecs_program *p, uint32_t i) {
  return i < p->nparam ? p->param_pos[i] : 0;
}

/* ------------------------------------------------------------------------
** The machine
**
** Arithmetic runs over whole blocks (ECSI_BLOCK lanes, a constant trip
** count, restrict operands), which compilers vectorise at -O2; lanes past
** the block's rows hold leftovers and are never stored. Loads and stores
** have a whole-block contiguous fast path for the same reason.
**
** All arithmetic is in doubles, whatever the field types: one code path,
** exact for every f32 and for integers up to 2^53 in magnitude (all but
** the far ends of i64), and the store rounds or saturates once, at the
** end (value layer). Division by
** zero, sqrt of a negative and the like give IEEE infinities and NaNs,
** which the stores turn into the type's bound or 0 for integer fields.
** --------------------------------------------------------------------- */

/*
** a[j] = a[j] op b[j] over a whole block. % is floored, as Lua's is for
** floats (a nonzero result has the divisor's sign); comparisons give 1.0 or
** 0.0, which select and arithmetic take as they are.
*/
static void binary(uint32_t op, double *restrict a, const double *restrict b) {
#define ECSI_LANES(EXPR) for (uint32_t j = 0; j < ECSI_BLOCK; j++) a[j] = (EXPR); break;
  switch (op) {
  case OP_ADD: ECSI_LANES(a[j] + b[j])
  case OP_SUB: ECSI_LANES(a[j] - b[j])
  case OP_MUL: ECSI_LANES(a[j] * b[j])
  case OP_DIV: ECSI_LANES(a[j] / b[j])
  case OP_MIN: ECSI_LANES(b[j] < a[j] ? b[j] : a[j])
  case OP_MAX: ECSI_LANES(b[j] > a[j] ? b[j] : a[j])
  case OP_MOD: ECSI_LANES(a[j] - floor(a[j] / b[j]) * b[j])
  case OP_LT: ECSI_LANES(a[j] < b[j] ? 1.0 : 0.0)
  case OP_LE: ECSI_LANES(a[j] <= b[j] ? 1.0 : 0.0)
  case OP_GT: ECSI_LANES(a[j] > b[j] ? 1.0 : 0.0)
  case OP_GE: ECSI_LANES(a[j] >= b[j] ? 1.0 : 0.0)
  case OP_EQ: ECSI_LANES(a[j] == b[j] ? 1.0 : 0.0)
  case OP_NE: ECSI_LANES(a[j] != b[j] ? 1.0 : 0.0)
  default: break;
  }
}

/* a[j] = a[j] op v over a whole block (a constant or parameter operand) */
static void binary_scalar(uint32_t op, double *restrict a, double v) {
  switch (op) {
  case OP_ADD: ECSI_LANES(a[j] + v)
  case OP_SUB: ECSI_LANES(a[j] - v)
  case OP_MUL: ECSI_LANES(a[j] * v)
  case OP_DIV: ECSI_LANES(a[j] / v)
  case OP_MIN: ECSI_LANES(v < a[j] ? v : a[j])
  case OP_MAX: ECSI_LANES(v > a[j] ? v : a[j])
  case OP_MOD: ECSI_LANES(a[j] - floor(a[j] / v) * v)
  case OP_LT: ECSI_LANES(a[j] < v ? 1.0 : 0.0)
  case OP_LE: ECSI_LANES(a[j] <= v ? 1.0 : 0.0)
  case OP_GT: ECSI_LANES(a[j] > v ? 1.0 : 0.0)
  case OP_GE: ECSI_LANES(a[j] >= v ? 1.0 : 0.0)
  case OP_EQ: ECSI_LANES(a[j] == v ? 1.0 : 0.0)
  case OP_NE: ECSI_LANES(a[j] != v ? 1.0 : 0.0)
  default: break;
  }
#undef ECSI_LANES
}

/*
** col[j] = col[j] op src[j] in one pass, for the common case: a whole
** contiguous block of an f32 or f64 column and + - * /. The result is bit
** for bit the long way's (load to double, the same double operation,
** round once to T), without the two extra passes; integer fields take the
** long way for the value layer's saturating store.
** @return false when the case is not covered (the caller goes the long way).
*/
static bool update_fast(uint32_t op, void *base, ecs_type t, uint32_t row0,
                        const double *restrict src, uint32_t n,
                        bool contiguous) {
  if (!contiguous || n != ECSI_BLOCK || op > OP_DIV || op < OP_ADD) return false;
#define ECSI_RMW(T, OPER)                                                    \
  {                                                                          \
    T *restrict d = (T *)base + row0;                                        \
    for (uint32_t j = 0; j < ECSI_BLOCK; j++)                                \
      d[j] = (T)((double)d[j] OPER src[j]);                                  \
  }                                                                          \
  return true;
#define ECSI_RMW_TYPE(T)                                                     \
  switch (op) {                                                              \
  case OP_ADD: ECSI_RMW(T, +)                                                \
  case OP_SUB: ECSI_RMW(T, -)                                                \
  case OP_MUL: ECSI_RMW(T, *)                                                \
  default: ECSI_RMW(T, /)                                                    \
  }
  if (t == ECS_F32) ECSI_RMW_TYPE(float)
  if (t == ECS_F64) ECSI_RMW_TYPE(double)
#undef ECSI_RMW_TYPE
#undef ECSI_RMW
  return false;
}

/*
** x[j] += y[j] * v in one pass, for a whole contiguous block of two f32 or
** two f64 columns (x and y may be the same column: same index, no
** overlap problem). The same column takes a loop without restrict (the
** pointers alias; each lane reads x[j] before writing it, so the result
** is the same); distinct columns are distinct memory, and restrict lets
** the compiler vectorise. Same arithmetic as the long way: y * v and the
** sum in double, one rounding. @return false when the case is not covered.
*/
static bool axpy_fast(double v, void *xb, ecs_type xt, uint32_t xr,
                      const void *yb, ecs_type yt, uint32_t yr, uint32_t n,
                      bool contiguous) {
  if (!contiguous || n != ECSI_BLOCK || xt != yt) return false;
  /* distinct columns never overlap; the same column is the same rows */
  if (xt == ECS_F32 && xb == yb && xr == yr) {
    float *x = (float *)xb + xr;
    for (uint32_t j = 0; j < ECSI_BLOCK; j++)
      x[j] = (float)((double)x[j] + (double)x[j] * v);
  } else if (xt == ECS_F32) {
    float *restrict x = (float *)xb + xr;
    const float *restrict y = (const float *)yb + yr;
    for (uint32_t j = 0; j < ECSI_BLOCK; j++)
      x[j] = (float)((double)x[j] + (double)y[j] * v);
  } else if (xt == ECS_F64 && xb == yb && xr == yr) {
    double *x = (double *)xb + xr;
    for (uint32_t j = 0; j < ECSI_BLOCK; j++) x[j] = x[j] + x[j] * v;
  } else if (xt == ECS_F64) {
    double *restrict x = (double *)xb + xr;
    const double *restrict y = (const double *)yb + yr;
    for (uint32_t j = 0; j < ECSI_BLOCK; j++) x[j] = x[j] + y[j] * v;
  } else {
    return false;
  }
  return true;
}

/*
** Run the whole program over one block: positions [i, i + n) of the
** pinned snapshot r, n <= ECSI_BLOCK. contiguous says that the rows of
** every "with" term are consecutive over the block, so each column is
** read and written as a plain array from row[0] on; otherwise every load
** gathers and every store scatters through the row numbers.
**
** The value stack is stackmem, blocks of ECSI_BLOCK doubles; sp counts
** the blocks in use. The compiler proved the depths (stack()), so there
** are no checks here: every statement leaves the stack empty, COL, CONST
** and PARAM push, binary ops and SCALAR leave one value where there were
** two (or one), STORE and UPDATE pop. AXPY and UPDATE also use the free
** blocks just above the top as temporaries (two at most), which the
** scratch's 3 blocks beyond the deepest stack cover.
**
** Column bases and types are looked up per instruction and block, not
** once per run: a few loads per 256 rows, too few for a per-run table of
** pointers to pay for itself.
*/
static void exec(const ecs_program *p, const ecsi_rows *r, uint32_t i,
                 uint32_t n, bool contiguous, const double *params,
                 double *stackmem) {
  uint32_t sp = 0; /* blocks on the stack; the top one is at sp - 1 */
#define TOP (stackmem + (size_t)(sp - 1u) * ECSI_BLOCK)
  for (uint32_t pc = 0; pc < p->ncode;) {
    uint32_t op = p->code[pc++];
    switch (op) {
    case OP_AXPY: { /* AXPY op t f ts fs kind k: col(t,f) op= col(ts,fs) * v */
      uint32_t bop = p->code[pc], t = p->code[pc + 1], f = p->code[pc + 2];
      uint32_t ts = p->code[pc + 3], fs = p->code[pc + 4];
      double v = p->code[pc + 5] == 0 ? p->konst[p->code[pc + 6]]
                                      : params[p->code[pc + 6]];
      ecs_component *c = ecs_query_with(p->q, t), *cs = ecs_query_with(p->q, ts);
      void *base = ecs_component_column(c, f);
      const void *src = ecs_component_column(cs, fs);
      const uint32_t *row = r->row + (size_t)t * r->stride + i;
      const uint32_t *srow = r->row + (size_t)ts * r->stride + i;
      ecs_type type = ecs_component_field(c, f)->type;
      ecs_type stype = ecs_component_field(cs, fs)->type;
      pc += 7;
      /* x -= y * v is x += y * (-v): negation is exact, same result */
      if (!axpy_fast(bop == OP_SUB ? -v : v, base, type, row[0], src, stype,
                     srow[0], n, contiguous)) {
        double *y = stackmem + (size_t)sp * ECSI_BLOCK; /* free blocks */
        double *x = y + ECSI_BLOCK;
        ecs_value_load_f64(y, src, stype, srow, n, contiguous);
        binary_scalar(OP_MUL, y, v);
        ecs_value_load_f64(x, base, type, row, n, contiguous);
        binary(bop, x, y);
        ecs_value_store_f64(base, type, row, x, n, contiguous);
      }
      break;
    }
    case OP_UPDATE: { /* UPDATE op t f: column = column op top */
      uint32_t bop = p->code[pc++], t = p->code[pc++], f = p->code[pc++];
      ecs_component *c = ecs_query_with(p->q, t);
      void *base = ecs_component_column(c, f);
      const uint32_t *row = r->row + (size_t)t * r->stride + i;
      ecs_type type = ecs_component_field(c, f)->type;
      double *top = TOP;
      if (!update_fast(bop, base, type, row[0], top, n, contiguous)) {
        double *tmp = top + ECSI_BLOCK; /* a spare block above the top */
        ecs_value_load_f64(tmp, base, type, row, n, contiguous);
        binary(bop, tmp, top);
        ecs_value_store_f64(base, type, row, tmp, n, contiguous);
      }
      sp--;
      break;
    }
    case OP_COL: case OP_STORE: {
      uint32_t t = p->code[pc++], f = p->code[pc++];
      ecs_component *c = ecs_query_with(p->q, t);
      void *base = ecs_component_column(c, f);
      const uint32_t *row = r->row + (size_t)t * r->stride + i;
      ecs_type type = ecs_component_field(c, f)->type;
      if (op == OP_COL) {
        sp++;
        ecs_value_load_f64(TOP, base, type, row, n, contiguous);
      } else {
        ecs_value_store_f64(base, type, row, TOP, n, contiguous);
        sp--;
      }
      break;
    }
    case OP_CONST: case OP_PARAM: { /* only where SCALAR could not fuse */
      double v = op == OP_CONST ? p->konst[p->code[pc]] : params[p->code[pc]];
      double *restrict top;
      pc++;
      sp++;
      top = TOP;
      for (uint32_t j = 0; j < ECSI_BLOCK; j++) top[j] = v;
      break;
    }
    case OP_SCALAR: { /* op, const (0) or param (1), index */
      uint32_t bop = p->code[pc], kind = p->code[pc + 1], k = p->code[pc + 2];
      pc += 3;
      binary_scalar(bop, TOP, kind == 0 ? p->konst[k] : params[k]);
      break;
    }
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MIN:
    case OP_MAX: case OP_MOD: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
    case OP_EQ: case OP_NE: {
      double *b = TOP;
      binary(op, b - ECSI_BLOCK, b);
      sp--;
      break;
    }
#define ECSI_UNARY(OP, EXPR)                                                 \
  case OP: {                                                                 \
    double *restrict t = TOP;                                                \
    for (uint32_t j = 0; j < ECSI_BLOCK; j++) t[j] = (EXPR);                 \
    break;                                                                   \
  }
    ECSI_UNARY(OP_NEG, -t[j])
    ECSI_UNARY(OP_ABS, fabs(t[j]))
    ECSI_UNARY(OP_SQRT, sqrt(t[j]))
    ECSI_UNARY(OP_FLOOR, floor(t[j]))
#undef ECSI_UNARY
    case OP_CLAMP: {
      double *hi = TOP, *lo = hi - ECSI_BLOCK, *x = lo - ECSI_BLOCK;
      for (uint32_t j = 0; j < ECSI_BLOCK; j++) {
        double v = x[j] < lo[j] ? lo[j] : x[j];
        x[j] = v > hi[j] ? hi[j] : v;
      }
      sp -= 2;
      break;
    }
    case OP_SELECT: { /* select(c, a, b): a where c ~= 0, else b */
      double *b = TOP, *a = b - ECSI_BLOCK, *c = a - ECSI_BLOCK;
      for (uint32_t j = 0; j < ECSI_BLOCK; j++) c[j] = c[j] != 0.0 ? a[j] : b[j];
      sp -= 2;
      break;
    }
    default: return; /* unreachable: the compiler emits only the above */
    }
  }
#undef TOP
}

/*
** Scratch first (the query's, reused between runs), then the pin: the one
** fallible step comes before any store, so a run is all or nothing. The
** snapshot is pinned for the run like every reader's (see query.c), and
** refreshed by the pin, so every position is a live match: no per-entity
** check is needed inside the blocks.
*/
ecs_err ecs_program_run(ecs_world *w, ecs_program *p, const double *params,
                        size_t *processed) {
  double *stackmem;
  ecsi_rows r;
  ecs_err err;
  if (processed != NULL) *processed = 0;
  stackmem = (double *)ecsi_query_scratch(
      w, p->q, (size_t)(p->depth + 3u) * ECSI_BLOCK * sizeof(double));
  if (stackmem == NULL) return ECS_ERR_NOMEM;
  /* lanes past a short block are computed too: give them defined values
  ** (no reads of uninitialised memory; they are never stored) */
  memset(stackmem, 0, (size_t)(p->depth + 3u) * ECSI_BLOCK * sizeof(double));
  if ((err = ecsi_query_pin(w, p->q, &r)) != ECS_ERR_OK) return err;
  for (uint32_t i = 0; i < r.count; i += ECSI_BLOCK) {
    uint32_t n = r.count - i < ECSI_BLOCK ? r.count - i : ECSI_BLOCK;
    /* the run at i covers the whole block: every term's rows consecutive */
    bool contiguous = ecsi_rows_run(&r, i, n) == n;
    exec(p, &r, i, n, contiguous, params, stackmem);
  }
  ecsi_query_unpin(w, p->q, r.snap);
  if (processed != NULL) *processed = r.count;
  return ECS_ERR_OK;
}
