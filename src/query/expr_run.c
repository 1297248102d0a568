/*
** expr_run.c -- the block machine: runs a compiled program over a query.
**
** Why a block machine and not a tree walk per entity: a tree walk pays a
** dispatch and a type switch per node and entity; paying them per block
** of 256 rows leaves only the arithmetic in the inner loops, which the
** compiler turns into SIMD code. The price is that
** every value is a 2 KB block of doubles, so the stack is kept shallow
** (MAX_DEPTH) and constants are fused into the instruction that uses
** them (SCALAR) instead of being spread over a block.
**
** The machine trusts its program: the compiler (expr_compile.c) proved
** the names, the types and the stack depths, so exec checks nothing per
** instruction. Rows come from a pinned snapshot of the query, whose runs
** of consecutive rows let a block read and write columns in place.
**
** Layer: expr, above query (layers: alloc.h).
*/
#include <math.h>
#include <string.h>

#include "expr_private.h"
#include "pool.h"
#include "value.h"

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

/* Load a column of an optional term: zero where the instance is absent
** (ECS_NO_INSTANCE), whatever the layout (an absent row is in no run). */
static void load_optional(double *out, const void *base, ecs_type type,
                          const uint32_t *row, uint32_t n) {
  for (uint32_t j = 0; j < n; j++)
    if (row[j] == ECS_NO_INSTANCE) out[j] = 0.0;
    else ecs_value_load_f64(out + j, base, type, row + j, 1, false);
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
      bool opt = ecs_query_optional(p->q) >> ts & 1u;
      pc += 7;
      /* x -= y * v is x += y * (-v): negation is exact, same result */
      if (opt || !axpy_fast(bop == OP_SUB ? -v : v, base, type, row[0], src, stype,
                            srow[0], n, contiguous)) {
        double *y = stackmem + (size_t)sp * ECSI_BLOCK; /* free blocks */
        double *x = y + ECSI_BLOCK;
        if (opt) load_optional(y, src, stype, srow, n);
        else ecs_value_load_f64(y, src, stype, srow, n, contiguous);
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
        if (ecs_query_optional(p->q) >> t & 1u) load_optional(TOP, base, type, row, n);
        else ecs_value_load_f64(TOP, base, type, row, n, contiguous);
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
    case OP_CHAIN: { /* d v c x -> max(d, c), select(d, v, x): "... or c and x" */
      double *x = TOP, *c = x - ECSI_BLOCK, *v = c - ECSI_BLOCK, *d = v - ECSI_BLOCK;
      for (uint32_t j = 0; j < ECSI_BLOCK; j++) {
        if (d[j] == 0.0) v[j] = x[j];
        d[j] = d[j] != 0.0 || c[j] != 0.0 ? 1.0 : 0.0;
      }
      sp -= 2;
      break;
    }
    default: return; /* unreachable: the compiler emits only the above */
    }
  }
#undef TOP
}

/*
** Row splitting (threads = n, pool.h): a run of at least ECSI_PAR_MIN_ROWS
** rows is cut at block boundaries into ECSI_PARTS_PER_THREAD ranges per
** thread, each run by exec on whichever thread takes it, with a value
** stack of its own. The blocks are the ones the single-threaded loop runs
** (the same i, n and contiguity), and exec writes only its block's rows
** and reads nothing another row writes, so the result is the same bit
** for bit. What needs the world (the journal's captures, change stamps,
** an owner's written hook) stays on the calling thread, before and after.
** A program that writes an owned component (the transform, a plugin
** manager) runs on one thread: its owner's hook cleans and propagates
** block by block, and a later block may read what it computed.
*/

typedef struct par_run {
  const ecs_program *p;
  const ecsi_rows *r;
  const double *params;
  double *stackmem;   /* threads stacks of stack doubles */
  size_t stack;
  uint32_t blocks, parts;
} par_run;

/* Change stamps of every block's rows in every target's manager. */
static void touch_blocks(ecs_world *w, const ecs_program *p,
                         const ecsi_rows *r, uint32_t i, uint32_t n,
                         bool contiguous) {
  for (uint32_t t = 0, m = p->written; m != 0; t++, m >>= 1) {
    const uint32_t *row = r->row + (size_t)t * r->stride + i;
    if (!(m & 1u)) continue;
    if (contiguous) ecsi_write_end(w, ecs_query_with(p->q, t), NULL, row[0], n, false);
    else ecsi_write_end(w, ecs_query_with(p->q, t), row, 0, n, false);
  }
}

/*
** Block b: positions [b * ECSI_BLOCK, (b + 1) * ECSI_BLOCK) of the list,
** run as the stretches between its holes (one stretch when it has none),
** each contiguous when the run at its start covers it. w non-NULL: each
** stretch's rows are stamped after it runs (on the calling thread).
*/
static void run_block(ecs_world *w, const ecs_program *p, const ecsi_rows *r,
                      uint32_t b, const double *params, double *stackmem) {
  uint32_t i = b * ECSI_BLOCK, end = r->count - i < ECSI_BLOCK ? r->count : i + ECSI_BLOCK;
  for (uint32_t n; (n = ecsi_rows_live(r, &i, end, ECSI_BLOCK)) != 0; i += n) {
    /* the run at i covers the stretch: every term's rows consecutive */
    bool contiguous = ecsi_rows_run(r, i, n) == n;
    if (stackmem != NULL) exec(p, r, i, n, contiguous, params, stackmem);
    if (w != NULL) touch_blocks(w, p, r, i, n, contiguous); /* an owner's hook runs per block */
  }
}

static void par_part(void *ud, uint32_t worker, uint32_t part) {
  const par_run *j = (const par_run *)ud;
  uint32_t b0 = (uint32_t)((uint64_t)j->blocks * part / j->parts);
  uint32_t b1 = (uint32_t)((uint64_t)j->blocks * (part + 1u) / j->parts);
  double *stackmem = j->stackmem + (size_t)worker * j->stack;
  for (uint32_t b = b0; b < b1; b++) run_block(NULL, j->p, j->r, b, j->params, stackmem);
}

/* The threads a run of p over count rows uses (1: this thread alone). */
static uint32_t run_threads(const ecs_world *w, const ecs_program *p,
                            uint32_t count) {
  if (w->pool == NULL || count < ECSI_PAR_MIN_ROWS) return 1;
  for (uint32_t t = 0, m = p->written; m != 0; t++, m >>= 1)
    if ((m & 1u) && ecs_component_owned(ecs_query_with(p->q, t))) return 1;
  return ecsi_pool_threads(w->pool);
}

/* An open journal keeps the targets' values before any is written. */
static void prewrite_targets(ecs_world *w, const ecs_program *p, const ecsi_rows *r) {
  for (uint32_t t = 0, m = p->written; m != 0; t++, m >>= 1)
    if (m & 1u)
      for (uint32_t i = 0, n; (n = ecsi_rows_live(r, &i, r->count, UINT32_MAX)) != 0; i += n)
        ecsi_write_begin(w, ecs_query_with(p->q, t),
                         r->row + (size_t)t * r->stride + i, 0, n, false);
}

/* The stamps of a run made on other threads, block by block, here. */
static void touch_all(ecs_world *w, const ecs_program *p, const ecsi_rows *r) {
  for (uint32_t b = 0; (uint64_t)b * ECSI_BLOCK < r->count; b++) run_block(w, p, r, b, NULL, NULL);
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
  size_t stack = (size_t)(p->depth + 3u) * ECSI_BLOCK;
  uint32_t threads;
  double *stackmem;
  ecsi_rows r;
  ecs_err err;
  if (processed != NULL) *processed = 0;
  stackmem = (double *)ecsi_query_scratch(w, p->q, stack * sizeof(double));
  if (stackmem == NULL) return ECS_ERR_NOMEM;
  /* lanes past a short block are computed too: give them defined values
  ** (no reads of uninitialised memory; they are never stored) */
  memset(stackmem, 0, stack * sizeof(double));
  ecsi_query_align(w, p->q);
  if ((err = ecsi_query_pin(w, p->q, &r)) != ECS_ERR_OK) return err;
  /* a stack per thread, only for a run that is split: without the memory
  ** the run stays on this thread (the same result, so no error) */
  if ((threads = run_threads(w, p, r.count)) > 1) {
    double *all = (double *)ecsi_query_scratch(w, p->q, stack * threads * sizeof(double));
    if (all == NULL) threads = 1;
    else memset(stackmem = all, 0, stack * threads * sizeof(double));
  }
  prewrite_targets(w, p, &r);
  if (threads > 1) {
    par_run job;
    job.p = p;
    job.r = &r;
    job.params = params;
    job.stackmem = stackmem;
    job.stack = stack;
    job.blocks = (r.count + ECSI_BLOCK - 1u) / ECSI_BLOCK;
    job.parts = threads * ECSI_PARTS_PER_THREAD;
    if (job.parts > job.blocks) job.parts = job.blocks;
    ecsi_pool_run(w->pool, par_part, &job, job.parts);
    w->split_runs++;
    touch_all(w, p, &r);
  } else {
    for (uint32_t b = 0; (uint64_t)b * ECSI_BLOCK < r.count; b++)
      run_block(w, p, &r, b, params, stackmem);
  }
  ecsi_query_unpin(w, p->q, r.snap);
  if (processed != NULL) *processed = r.count - r.holes;
  ecs_query_complete(w, p->q);
  return ECS_ERR_OK;
}

/* ------------------------------------------------------------------------
** Runs in a batch (system.c): begun here, their parts run with the other
** systems' in one pool job (pool.h, ecsi_split), ended here.
** --------------------------------------------------------------------- */

typedef struct batch_run {
  par_run j; /* what the parts read; j.r is r, j.params params */
  ecsi_rows r;
  double params[ECS_PROGRAM_MAX_PARAMS];
} batch_run;
_Static_assert(sizeof(batch_run) <= ECSI_SPLIT_BYTES, "raise ECSI_SPLIT_BYTES");

uint32_t ecsi_program_written(const ecs_program *p) { return p->written; }
uint32_t ecsi_program_read(const ecs_program *p) { return p->read; }

ecs_err ecsi_program_begin(ecs_world *w, ecs_program *p, const double *params,
                           ecsi_split *s) {
  batch_run *b = (batch_run *)(void *)s->job.bytes;
  size_t stack = (size_t)(p->depth + 3u) * ECSI_BLOCK;
  uint32_t threads = ecsi_pool_threads(w->pool);
  double *mem;
  ecs_err err;
  mem = (double *)ecsi_query_scratch(w, p->q, stack * threads * sizeof(double));
  if (mem == NULL) return ECS_ERR_NOMEM;
  memset(mem, 0, stack * threads * sizeof(double));
  if ((err = ecsi_query_pin(w, p->q, &b->r)) != ECS_ERR_OK) return err;
  prewrite_targets(w, p, &b->r);
  memcpy(b->params, params, (size_t)p->nparam * sizeof(double));
  b->j.p = p;
  b->j.r = &b->r;
  b->j.params = b->params;
  b->j.stackmem = mem;
  b->j.stack = stack;
  b->j.blocks = (b->r.count + ECSI_BLOCK - 1u) / ECSI_BLOCK;
  b->j.parts = b->r.count >= ECSI_PAR_MIN_ROWS ? threads * ECSI_PARTS_PER_THREAD : 1u;
  if (b->j.parts > b->j.blocks) b->j.parts = b->j.blocks;
  s->fn = par_part;
  s->parts = b->j.parts;
  return ECS_ERR_OK;
}

void ecsi_program_end(ecs_world *w, ecsi_split *s, bool ran, size_t *processed) {
  batch_run *b = (batch_run *)(void *)s->job.bytes;
  ecs_program *p = (ecs_program *)(uintptr_t)b->j.p;
  if (ran) {
    if (b->j.parts > 1) w->split_runs++;
    touch_all(w, p, &b->r);
  }
  ecsi_query_unpin(w, p->q, b->r.snap);
  if (processed != NULL) *processed = ran ? b->r.count - b->r.holes : 0;
  if (ran) ecs_query_complete(w, p->q);
}
