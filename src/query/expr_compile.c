/*
** expr_compile.c -- the expression compiler: source text to a program.
**
** A recursive-descent parser (grammar in docs/queries.md) that emits code
** for a stack machine whose values are whole blocks (expr_run.c): one
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
** What the machine relies on is proved here, once: every name resolves
** against the query (the one resolver, ecs_query_resolve_field), every
** field read is numeric, and the stack depth of every instruction is
** counted (stack()), so the machine never checks its stack. The common
** shapes are fused into one instruction (SCALAR, UPDATE, AXPY).
**
** Layer: expr, above query (layers: alloc.h).
*/
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr_private.h"
#include "value.h"

/* longest source: bounds the code and constant buffers sized from it */
#define MAX_SOURCE 65536u

/* deepest nesting of parentheses, calls and unary minus: the parser is
** recursive, so this bounds its C stack */
#define MAX_NESTING 200u

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
  uint32_t written;          /* bit t: some statement stores into term t */
  uint32_t read;             /* bit t: some expression or x op= reads term t */
  uint32_t last_push; /* where the last CONST or PARAM was emitted */
  uint32_t nesting;   /* current depth of recursion */
  char *msg;
  size_t msgsize;
  bool failed;
  ecs_err failure;    /* the first error's code: EXPRESSION or a rule's */
  int kind;           /* what the last value parsed is: VAL_* below */
} parser;

/*
** What a parsed value is, for the conditional forms that read like Lua
** ("Conditions" below): a number; a truth value (a comparison, not, and
** or or of truth values: 1 or 0 on the stack, a number to arithmetic); or
** a condition's "c and x", which takes two stack slots (the truth value,
** then x) until an "or" gives the value where c is false.
*/
enum { VAL_NUMBER, VAL_TRUTH, VAL_AND };

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

/* Blanks, and comments as Lua writes them: "--" to the end of the line,
** "--[[ ... ]]" (or with as many '=' between the brackets) to its close;
** an unclosed long comment runs to the end. */
static void skip_space(parser *p) {
  for (;;) {
    while (p->pos < p->len && (p->src[p->pos] == ' ' || p->src[p->pos] == '\t' ||
                               p->src[p->pos] == '\n' || p->src[p->pos] == '\r'))
      p->pos++;
    if (p->pos + 1 >= p->len || p->src[p->pos] != '-' || p->src[p->pos + 1] != '-')
      return;
    p->pos += 2;
    if (p->pos < p->len && p->src[p->pos] == '[') {
      size_t at = p->pos + 1, level = 0;
      while (at < p->len && p->src[at] == '=') at++, level++;
      if (at < p->len && p->src[at] == '[') { /* a long comment */
        for (p->pos = at + 1; p->pos < p->len; p->pos++) {
          size_t k = p->pos + 1, eq = 0;
          if (p->src[p->pos] != ']') continue;
          while (k < p->len && p->src[k] == '=') k++, eq++;
          if (eq == level && k < p->len && p->src[k] == ']') {
            p->pos = k + 1;
            break;
          }
        }
        continue;
      }
    }
    while (p->pos < p->len && p->src[p->pos] != '\n') p->pos++;
  }
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
  if (p->depth > MAX_DEPTH)
    fail0(p, at, "expression too complex (more than 16 values pending at once: "
                 "split it into statements)");
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

/* Whether the word (and, or, not...) stands at at, as a whole name (the
** callers peek first: at is past the blanks). */
static bool keyword(const parser *p, size_t at, const char *word) {
  size_t n = strlen(word);
  return ident_len(p, at) == n && memcmp(p->src + at, word, n) == 0;
}

/* A constant's slot (the buffer is sized from the source: room). */
static uint32_t add_const(parser *p, double v) {
  if (p->nconst < p->konst_cap) p->konst[p->nconst] = v;
  return p->nconst++;
}

/* The value just parsed is used as a number: "c and x" without its "or"
** is not one. */
static void as_number(parser *p, size_t at) {
  if (!p->failed && p->kind == VAL_AND)
    fail0(p, at, "'c and x' needs 'or y', the value where c does not hold "
                 "(c and x or y)");
}

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
      size_t arg = p->pos;
      expr(p);
      as_number(p, arg);
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
  static const char *const reserved[] = {
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function",
    "goto", "if", "in", "local", "nil", "not", "or", "repeat", "return", "then",
    "true", "until", "while"};
  uint32_t k;
  for (k = 0; k < sizeof reserved / sizeof reserved[0]; k++)
    if (keyword(p, at, reserved[k])) {
      fail(p, at, "'%.*s' is a Lua keyword, not a parameter name%.*s", p->src + at, (int)n, "", 0);
      return;
    }
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
  p->kind = VAL_NUMBER;
  if (is_digit(c) || c == '.') {
    number(p);
  } else if (c == '(') {
    p->pos++;
    expr(p); /* keeps its kind: "(c and x) or y" */
    if (p->failed) return;
    if (peek(p) != ')') fail0(p, p->pos, "expected ')'");
    else p->pos++;
  } else if (keyword(p, at, "true") || keyword(p, at, "false")) {
    p->pos = at + (p->src[at] == 't' ? 4u : 5u);
    p->last_push = p->ncode;
    emit(p, OP_CONST);
    emit(p, add_const(p, p->src[at] == 't' ? 1.0 : 0.0));
    stack(p, 1, at);
    p->kind = VAL_TRUTH;
  } else if (keyword(p, at, "if") || keyword(p, at, "then") ||
             keyword(p, at, "else") || keyword(p, at, "elseif") ||
             keyword(p, at, "end")) {
    n = ident_len(p, at);
    fail(p, at, "expected an expression near '%.*s' (a condition reads as in "
         "Lua: 'c and x or y'%.*s)", p->src + at, (int)n, "", 0);
  } else if ((n = ident_len(p, at)) > 0 && (keyword(p, at, "and") ||
                                           keyword(p, at, "or"))) {
    fail(p, at, "expected an expression near '%.*s'%.*s", p->src + at, (int)n, "", 0);
  } else if ((n = ident_len(p, at)) > 0) {
    if (at + n < p->len && p->src[at + n] == '.') {
      uint32_t term, field;
      if (!field_ref(p, &term, &field)) return;
      p->read |= 1u << term;
      emit(p, OP_COL);
      emit(p, term);
      emit(p, field);
      stack(p, 1, at);
      /* a bool field reads as Lua's true or false: a truth value */
      p->kind = ecs_component_field(ecs_query_with(p->q, term), field)->type == ECS_BOOL
                    ? VAL_TRUTH : VAL_NUMBER;
      return;
    } else {
      p->pos = at + n;
      if (peek(p) == '(') call(p, at, n);
      else param(p, at, n);
      p->kind = VAL_NUMBER;
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
  char c = peek(p);
  size_t at = p->pos;
  if (!nest(p, at)) return;
  if (c == '-') {
    p->pos++;
    unary(p);
    as_number(p, at);
    emit(p, OP_NEG);
    p->kind = VAL_NUMBER;
  } else if (keyword(p, at, "not")) {
    p->pos += 3;
    unary(p);
    if (!p->failed && p->kind != VAL_TRUTH)
      fail0(p, at, "'not' takes a condition (a comparison; in Lua a number "
                   "is always true)");
    /* not t: t == 0 */
    p->last_push = p->ncode;
    emit(p, OP_CONST);
    emit(p, add_const(p, 0.0));
    stack(p, 1, at);
    emit_binary(p, OP_EQ, at);
    p->kind = VAL_TRUTH;
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
    as_number(p, at);
    unary(p);
    as_number(p, at);
    emit_binary(p, op, at);
    p->kind = VAL_NUMBER;
  }
}

/* sum := term { (+ | -) term }, left associative */
static void sum(parser *p) {
  term(p);
  while (!p->failed && (peek(p) == '+' || peek(p) == '-')) {
    size_t at = p->pos;
    uint32_t op = p->src[p->pos++] == '+' ? OP_ADD : OP_SUB;
    as_number(p, at);
    term(p);
    as_number(p, at);
    emit_binary(p, op, at);
    p->kind = VAL_NUMBER;
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
** comparison := sum [relop sum]; a comparison gives 1 or 0. At most one
** comparison: "a < b < c" stops at the second '<' ("expected ';'"):
** chained, it would compare the 0/1 of a < b with c, rarely what is meant.
*/
static void comparison(parser *p) {
  uint32_t op;
  size_t len;
  sum(p);
  if (!p->failed && (op = relop(p, &len)) != 0) {
    size_t at = p->pos;
    as_number(p, at);
    p->pos += len;
    sum(p);
    as_number(p, at);
    emit_binary(p, op, at);
    p->kind = VAL_TRUTH;
    if (!p->failed && relop(p, &len) != 0)
      fail0(p, p->pos, "comparisons do not chain: write 'a < b and b < c'");
  }
}

/*
** Conditions, as Lua reads them:
**   conjunction := comparison { "and" comparison }
**   expr        := conjunction [ "or" expr ]
** Every lane computes both sides (the machine runs column-wise), so the
** forms are selections, with Lua's results where Lua's truth and ours
** agree: a comparison, not, and or or of conditions is a truth value (1
** or 0); "c and x" with x a number is x where c holds, else false, kept
** as two values until "or y" makes it select(c, x, y): so "c and x or y"
** is x where c holds, else y, even when x is 0 (a number is true in Lua).
** A chain "c1 and x or c2 and y or z" is select(c1, x, select(c2, y, z)),
** folded left to right in two stack slots (CHAIN keeps "some ci held"
** and the value of the first that did), so its length is not bounded by
** the stack. What
** Lua would give as "true or a number" (t or x, c and x or t...) or
** always true (x and ..., x or ... with x a number) is refused, with the
** form that works.
*/
static void conjunction(parser *p) {
  comparison(p);
  while (!p->failed && (peek(p), keyword(p, p->pos, "and"))) {
    size_t at = p->pos;
    int left = p->kind;
    if (left == VAL_NUMBER) {
      fail0(p, at, "the left side of 'and' is a number, which Lua holds true: "
                   "compare it (x ~= 0 and ...)");
      return;
    }
    if (left == VAL_AND) {
      fail0(p, at, "'c and x and ...': put the conditions first (c1 and c2 and x)");
      return;
    }
    p->pos += 3;
    comparison(p);
    if (p->failed) return;
    if (p->kind == VAL_TRUTH) {
      emit_binary(p, OP_MUL, at); /* both truth values: 1 only if both */
    } else if (p->kind == VAL_NUMBER) {
      p->kind = VAL_AND; /* the truth value, then x: two slots */
    } else {
      fail0(p, at, "'and' of a condition and 'c and x': use parentheses and 'or'");
      return;
    }
  }
}

static void expr(parser *p) {
  conjunction(p);
  while (!p->failed && (peek(p), keyword(p, p->pos, "or"))) {
    size_t at = p->pos;
    int left = p->kind;
    if (left == VAL_NUMBER) {
      fail0(p, at, "the left side of 'or' is a number, which Lua holds true: "
                   "write 'c and x or y'");
      break;
    }
    p->pos += 2;
    conjunction(p);
    if (p->failed) break;
    if (left == VAL_AND && p->kind == VAL_AND) {
      /* "c1 and x1 or c2 and x2": folded as it goes, two slots whatever
      ** the length: (c1 or c2, select(c1, x1, x2)) */
      emit(p, OP_CHAIN);
      stack(p, -2, at);
      p->kind = VAL_AND;
    } else if (left == VAL_AND) {
      emit(p, OP_SELECT); /* select(c, x, y) */
      stack(p, -2, at);
      p->kind = VAL_NUMBER;
    } else if (p->kind == VAL_TRUTH) {
      emit_binary(p, OP_MAX, at); /* either truth value */
      p->kind = VAL_TRUTH;
    } else {
      fail0(p, at, "'c or x' (c a condition) would be true or a number: "
                   "write 'c and 1 or x'");
    }
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
  if (ecs_component_readonly(ecs_query_with(p->q, t), f)) {
    const char *cn = ecs_component_name(ecs_query_with(p->q, t));
    const char *fn = ecs_component_field(ecs_query_with(p->q, t), f)->name;
    fail_as(p, at, ECS_ERR_READONLY_FIELD, "field '%.*s.%.*s' is read-only",
            cn, (int)strlen(cn), fn, (int)strlen(fn));
    return;
  }
  if (ecs_query_optional(p->q) >> t & 1u) {
    const char *cn = ecs_component_name(ecs_query_with(p->q, t));
    fail_as(p, at, ECS_ERR_READONLY_FIELD, "'%.*s' is an optional term: its "
            "fields are read-only%.*s", cn, (int)strlen(cn), "", 0);
    return;
  }
  p->written |= 1u << t; /* t < ECS_QUERY_MAX_TERMS (32) */
  c = peek(p);
  if ((c == '+' || c == '-' || c == '*' || c == '/') && p->pos + 1 < p->len &&
      p->src[p->pos + 1] == '=') {
    op = c == '+' ? OP_ADD : c == '-' ? OP_SUB : c == '*' ? OP_MUL : OP_DIV;
    p->read |= 1u << t; /* x op= e reads x */
    p->pos += 2;
  } else if (c == '=') {
    p->pos++;
  } else {
    fail0(p, p->pos, "expected '=', '+=', '-=', '*=' or '/='");
    return;
  }
  start = p->ncode;
  {
    size_t rhs = p->pos;
    expr(p);
    as_number(p, rhs);
  }
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
    else if (c == '?' || keyword(p, p->pos, "then") || keyword(p, p->pos, "if") ||
             keyword(p, p->pos, "else"))
      fail(p, p->pos, "expected ';' near '%.*s' (a condition reads as in Lua: "
           "'c and x or y'%.*s)", p->src + p->pos, 1, "", 0);
    else if (c != '\0') fail(p, p->pos, "expected ';' near '%.*s'%.*s",
                             p->src + p->pos, 1, "", 0);
  }
  if (!p->failed && statements == 0) fail0(p, 0, "empty program");
}

/*
** Compile src for q into a new program at the head of q's list. Order:
** checks that need no memory (length, zero bytes), then the work buffers,
** parsing, and the program's one block; the work buffers are freed on
** every path (done:). On any error nothing is linked and msg says why.
*/
ecs_err ecsi_expr_compile(ecs_world *w, ecs_query *q, const char *src,
                          size_t len, bool cached, ecs_program **out,
                          char *msg, size_t msgsize) {
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
  prog->written = p.written;
  prog->read = p.read;
  prog->next = programs_of(q);
  set_programs(q, prog);
  ecsi_query_set_ext_free(q, ecsi_expr_programs_free);
  *out = prog;
done:
  ecsi_free(w, p.code, p.code_cap * sizeof *p.code);
  ecsi_free(w, p.konst, p.konst_cap * sizeof *p.konst);
  ecsi_free(w, p.digits, len + 1u);
  if (err == ECS_ERR_NOMEM) snprintf(msg, msgsize, "not enough memory");
  return err;
}
