/*
** fuzz_ops.c -- libFuzzer target: an op-sequence interpreter over the core
** C API (RELIABILITY R10), checked against a tiny model.
**
** The input bytes are read as a program: each op is one byte choosing the
** operation, followed by the bytes it needs (an entity slot, a count, a
** budget, a schema ...); missing bytes read as 0, so every input is a
** valid program. One world is driven through entity create/destroy
** (single and batch), generic components (registration with fuzzed
** schemas, add, remove, lookup, lookup_n, gc, lua refs), the transform
** (add, remove, set_parent, setters, destroy_tree, sort, gc), names
** (set, clear, find, gc) and queries (new with/without, count, up to four
** iterations kept open across other ops, so that snapshots stay pinned
** while the world changes and every compare rebuilds them, free). A model (flags per created entity: alive,
** component mask, transform, parent, name; a with/without mask per
** query) predicts every observable
** result; after each op ecs_world_check runs and the model is compared
** with the world for every tracked entity.
**
** An op may arm the allocator to fail the k-th next allocation: the op
** that hits it must return ECS_ERR_NOMEM and change nothing the model can
** see (all-or-nothing), and the world must still pass the check.
**
** Lua refs: every new instance of a component with a "lua" field gets a
** fresh ref; every ref drained must be one that was written and not
** drained before, and at the end (everything destroyed, full gc) every
** written ref has been drained exactly once.
**
** Built two ways: with clang -fsanitize=fuzzer (tools/fuzz.sh) and, with
** any compiler, linked to test/fuzz_replay.c, which feeds the committed
** corpus test/fuzz/ops/ to LLVMFuzzerTestOneInput (ctest: fuzz_ops_replay).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h" /* test_alloc: counts blocks, fails the k-th growth */
#include "ecs.h"
#include "component.h"
#include "names.h"
#include "query.h"
#include "transform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_TRACKED 256
#define MAX_COMPS 16
#define MAX_REFS 65536u
#define MAX_QUERIES 8
#define MAX_ITERS 4

/* Fail loudly: libFuzzer reports the abort with the input. */
#define ENSURE(cond)                                                     \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "fuzz_ops: %s:%d: %s (op %zu)\n", __FILE__,         \
              __LINE__, #cond, st->ops);                                 \
      abort();                                                           \
    }                                                                    \
  } while (0)

typedef struct input {
  const uint8_t *p;
  size_t n, at;
} input;

static uint8_t byte(input *in) {
  return in->at < in->n ? in->p[in->at++] : 0;
}

typedef struct tracked {
  ecs_entity e;
  uint8_t alive, has_tr, name; /* name: 0 none, else 1 + index in names[] */
  int parent;                  /* tracked slot of the parent, or -1 */
  uint32_t comps;              /* bit c: has component c */
  uint64_t name_stamp;
} tracked;

typedef struct comp_model {
  ecs_component *c;
  int lua_field; /* index of a "lua" field, or -1 */
} comp_model;

typedef struct query_model {
  ecs_query *q;
  uint32_t with, without; /* component masks */
} query_model;

typedef struct state {
  ecs_world *w;
  test_alloc alloc;
  uint64_t allocated; /* ecs_world_memory's total at the last compare */
  ecs_transform *tr;
  ecs_names *nm;
  tracked t[MAX_TRACKED];
  size_t nt, ops;
  comp_model comp[MAX_COMPS];
  size_t ncomp;
  char comp_names[MAX_COMPS][16];
  uint64_t stamp;
  query_model query[MAX_QUERIES];
  size_t nquery;
  ecs_query_iter iter[MAX_ITERS]; /* open iterations (iter.snap != NULL) */
  size_t iter_query[MAX_ITERS];
  uint64_t iter_changes[MAX_ITERS]; /* st->changes when each began */
  uint8_t yielded[MAX_ITERS][MAX_TRACKED];
  uint64_t changes; /* counts ops that may change what queries match */
  uint32_t next_ref, drained;
  uint8_t ref_state[MAX_REFS]; /* 0 unused, 1 written, 2 drained */
} state;

static const char *const names[] = {"a", "b", "player", "", "a\0b", "long-name-0123456789"};
static const size_t name_len[] = {1, 1, 6, 0, 3, 20};
#define NNAMES (sizeof names / sizeof names[0])

static ecs_entity pick_entity(state *st, input *in) {
  uint8_t b = byte(in);
  if (b == 255) return ECS_NULL;
  if (b == 254) return ecs_make_entity(ECS_MAX_ENTITIES, 7); /* forged */
  if (st->nt == 0) return ECS_NULL;
  return st->t[b % st->nt].e;
}

static tracked *find_tracked(state *st, ecs_entity e) {
  for (size_t i = 0; i < st->nt; i++)
    if (st->t[i].e == e) return &st->t[i];
  return NULL;
}

static int slot_of(state *st, const tracked *x) { return (int)(x - st->t); }

/* Parent as the world reports it: roots, dead parents, no parent: -1. */
static int model_parent(state *st, const tracked *x) {
  if (!x->alive || !x->has_tr || x->parent < 0) return -1;
  {
    const tracked *p = &st->t[x->parent];
    return p->alive && p->has_tr ? x->parent : -1;
  }
}

/* Children of a node that loses its transform or dies become roots. */
static void orphan_children(state *st, int slot) {
  for (size_t i = 0; i < st->nt; i++)
    if (st->t[i].parent == slot) st->t[i].parent = -1;
}

static void model_kill(state *st, tracked *x) {
  x->alive = 0;
  orphan_children(st, slot_of(st, x));
}

static void drain(state *st) {
  uint32_t buf[7];
  size_t n;
  do {
    n = ecs_drain_refs(st->w, buf, 7);
    for (size_t i = 0; i < n; i++) {
      ENSURE(buf[i] > 0 && buf[i] < MAX_REFS);
      ENSURE(st->ref_state[buf[i]] == 1);
      st->ref_state[buf[i]] = 2;
      st->drained++;
    }
  } while (n == 7);
}

static int model_matches(const query_model *qm, const tracked *x) {
  return x->alive && (x->comps & qm->with) == qm->with && (x->comps & qm->without) == 0;
}

/* Compare the world with the model. */
static void compare(state *st) {
  const char *bad = ecs_world_check(st->w);
  if (bad != NULL) {
    fprintf(stderr, "fuzz_ops: world check: %s (op %zu)\n", bad, st->ops);
    abort();
  }
  /* the world counts exactly what its allocator holds; the total only grows */
  uint64_t allocated;
  ENSURE(ecs_world_memory(st->w, &allocated) == (size_t)st->alloc.bytes);
  ENSURE(allocated >= st->allocated);
  st->allocated = allocated;
  size_t alive = 0;
  for (size_t i = 0; i < st->nt; i++) {
    tracked *x = &st->t[i];
    ENSURE(ecs_alive(st->w, x->e) == (x->alive != 0));
    alive += x->alive;
    for (size_t c = 0; c < st->ncomp; c++) {
      int has = ecs_component_lookup(st->w, st->comp[c].c, x->e) != ECS_NO_INSTANCE;
      ENSURE(has == (x->alive && (x->comps >> c & 1u)));
    }
    if (st->tr != NULL) {
      int p = model_parent(st, x);
      ENSURE(ecs_transform_has(st->tr, x->e) == (x->alive && x->has_tr));
      ENSURE(ecs_transform_parent(st->tr, x->e) == (p < 0 ? ECS_NULL : st->t[p].e));
    }
    if (st->nm != NULL) {
      size_t len = 0;
      const char *s = ecs_names_get(st->nm, x->e, &len);
      if (x->alive && x->name) {
        ENSURE(s != NULL && len == name_len[x->name - 1] &&
               memcmp(s, names[x->name - 1], len) == 0);
      } else {
        ENSURE(s == NULL);
      }
    }
  }
  ENSURE(ecs_count(st->w) == alive);
  for (size_t c = 0; c < st->ncomp; c++) {
    size_t n = 0;
    for (size_t i = 0; i < st->nt; i++) n += st->t[i].alive && (st->t[i].comps >> c & 1u);
    ENSURE(ecs_component_count(st->w, st->comp[c].c) == n);
    ENSURE(ecs_component_size(st->comp[c].c) >= n);
  }
  for (size_t k = 0; k < st->nquery; k++) {
    size_t n = 0, got = 0;
    for (size_t i = 0; i < st->nt; i++) {
      int m = model_matches(&st->query[k], &st->t[i]);
      n += (size_t)m;
      if (st->t[i].alive) ENSURE(ecs_query_matches(st->w, st->query[k].q, st->t[i].e) == (m != 0));
    }
    ENSURE(ecs_query_count(st->w, st->query[k].q, &got) == ECS_ERR_OK);
    ENSURE(got == n);
    { /* one pin per open iteration; a retired snapshot only while pinned */
      ecs_query_stats qs;
      uint32_t pins = 0;
      for (size_t i = 0; i < MAX_ITERS; i++)
        pins += st->iter[i].snap != NULL && st->iter_query[i] == k;
      ecs_query_get_stats(st->query[k].q, &qs);
      ENSURE(qs.pins == pins && qs.retired <= pins && qs.count == n);
    }
  }
  if (st->nm != NULL) {
    for (size_t k = 0; k < NNAMES; k++) {
      const tracked *best = NULL;
      for (size_t i = 0; i < st->nt; i++) {
        const tracked *x = &st->t[i];
        if (x->alive && x->name == k + 1 && (best == NULL || x->name_stamp > best->name_stamp))
          best = x;
      }
      ENSURE(ecs_names_find(st->nm, names[k], name_len[k]) == (best ? best->e : ECS_NULL));
    }
  }
}

static void track_new(state *st, ecs_entity e) {
  tracked *x;
  ENSURE(find_tracked(st, e) == NULL || !find_tracked(st, e)->alive);
  ENSURE(st->nt < MAX_TRACKED);
  x = &st->t[st->nt++];
  memset(x, 0, sizeof *x);
  x->e = e;
  x->alive = 1;
  x->parent = -1;
}

/* ---------------------------------------------------------------------
** Operations
** ------------------------------------------------------------------ */
static void op_create(state *st) {
  ecs_entity e;
  ecs_err err;
  if (st->nt == MAX_TRACKED) return;
  err = ecs_create(st->w, &e);
  if (err == ECS_ERR_NOMEM) return;
  ENSURE(err == ECS_ERR_OK);
  ENSURE(ecs_alive(st->w, e));
  track_new(st, e);
}

static void op_create_n(state *st, input *in) {
  ecs_entity es[32];
  size_t n = byte(in) % 33;
  ecs_err err;
  if (st->nt + n > MAX_TRACKED) return; /* every entity stays followed */
  err = ecs_create_n(st->w, es, n);
  if (err == ECS_ERR_NOMEM) return;
  ENSURE(err == ECS_ERR_OK);
  for (size_t i = 0; i < n; i++) track_new(st, es[i]);
}

static void op_destroy(state *st, input *in) {
  ecs_entity e = pick_entity(st, in);
  tracked *x = find_tracked(st, e);
  int was = x != NULL && x->alive;
  ENSURE(ecs_destroy(st->w, e) == (was != 0));
  if (was) model_kill(st, x);
}

static void op_destroy_n(state *st, input *in) {
  ecs_entity es[16];
  size_t n = byte(in) % 17, expect = 0;
  for (size_t i = 0; i < n; i++) es[i] = pick_entity(st, in);
  for (size_t i = 0; i < n; i++) { /* duplicates count once */
    tracked *x = find_tracked(st, es[i]);
    if (x != NULL && x->alive) {
      model_kill(st, x);
      expect++;
    }
  }
  ENSURE(ecs_destroy_n(st->w, es, n) == expect);
}

static int is_ident(const char *s) {
  if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return 0;
  for (s++; *s; s++)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9')))
      return 0;
  return 1;
}

/* A name from the input: mostly well-formed, sometimes not. */
static void read_name(input *in, char *out, size_t cap) {
  static const char alphabet[] = "abcefgklmosxyzAB_019 .-";
  size_t len = byte(in) % (cap - 1);
  for (size_t i = 0; i < len; i++) out[i] = alphabet[byte(in) % (sizeof alphabet - 1)];
  out[len] = '\0';
}

/* Components have a namespace of their own: "transform" may be one. */
static int registered(state *st, const char *name) {
  for (size_t c = 0; c < st->ncomp; c++)
    if (strcmp(st->comp_names[c], name) == 0) return 1;
  return 0;
}

static void op_component_new(state *st, input *in) {
  char name[16], fnames[8][6];
  ecs_field_def defs[8];
  uint32_t nf = byte(in) % 9;
  ecs_component *c = NULL;
  ecs_err err, expect = ECS_ERR_OK;
  int lua_field = -1;
  read_name(in, name, sizeof name);
  for (uint32_t k = 0; k < nf; k++) {
    read_name(in, fnames[k], sizeof fnames[k]);
    defs[k].name = fnames[k];
    defs[k].type = (ecs_type)(byte(in) % (ECS_TYPE__COUNT + 1)); /* one past: bad */
  }
  if (!is_ident(name)) expect = ECS_ERR_COMPONENT_NAME;
  for (uint32_t k = 0; k < nf && expect == ECS_ERR_OK; k++) {
    if (!is_ident(fnames[k])) expect = ECS_ERR_FIELD_NAME;
    else if ((unsigned)defs[k].type >= ECS_TYPE__COUNT) expect = ECS_ERR_FIELD_TYPE;
    for (uint32_t j = 0; j < k && expect == ECS_ERR_OK; j++)
      if (strcmp(fnames[j], fnames[k]) == 0) expect = ECS_ERR_DUPLICATE_FIELD;
  }
  if (expect == ECS_ERR_OK && registered(st, name)) expect = ECS_ERR_EXISTS;
  if (expect == ECS_ERR_OK && st->ncomp == MAX_COMPS) return; /* model full */
  err = ecs_component_new(st->w, name, nf ? defs : NULL, nf, &c);
  if (err == ECS_ERR_NOMEM && expect == ECS_ERR_OK) return;
  ENSURE(err == expect);
  if (err != ECS_ERR_OK) return;
  ENSURE(c != NULL && ecs_component_find(st->w, name) == c);
  ENSURE(ecs_component_field_count(c) == nf);
  for (uint32_t k = 0; k < nf; k++)
    if (defs[k].type == ECS_LUA) lua_field = (int)k;
  st->comp[st->ncomp].c = c;
  st->comp[st->ncomp].lua_field = lua_field;
  memcpy(st->comp_names[st->ncomp], name, sizeof name);
  st->ncomp++;
}

static void op_add(state *st, input *in) {
  size_t ci;
  ecs_entity e;
  tracked *x;
  ecs_instance inst = ECS_NO_INSTANCE;
  bool existed = false;
  ecs_err err;
  if (st->ncomp == 0) return;
  ci = byte(in) % st->ncomp;
  e = pick_entity(st, in);
  x = find_tracked(st, e);
  err = ecs_component_add(st->w, st->comp[ci].c, e, &inst, &existed);
  if (x == NULL || !x->alive) {
    ENSURE(err == ECS_ERR_DEAD);
    return;
  }
  if (err == ECS_ERR_NOMEM) return;
  ENSURE(err == ECS_ERR_OK);
  ENSURE(existed == ((x->comps >> ci & 1u) != 0));
  ENSURE(inst < ecs_component_size(st->comp[ci].c));
  ENSURE(ecs_component_entities(st->comp[ci].c)[inst] == e);
  x->comps |= 1u << ci;
  drain(st); /* reusing a dead record drops its refs */
  if (!existed && st->comp[ci].lua_field >= 0 && st->next_ref + 1 < MAX_REFS) {
    uint32_t *col = (uint32_t *)ecs_component_column(st->comp[ci].c,
                                                     (uint32_t)st->comp[ci].lua_field);
    ENSURE(col != NULL && col[inst] == 0);
    col[inst] = ++st->next_ref;
    st->ref_state[st->next_ref] = 1;
  }
}

static void op_remove(state *st, input *in) {
  size_t ci;
  ecs_entity e;
  tracked *x;
  int had;
  if (st->ncomp == 0) return;
  ci = byte(in) % st->ncomp;
  e = pick_entity(st, in);
  x = find_tracked(st, e);
  had = x != NULL && x->alive && (x->comps >> ci & 1u);
  {
    bool removed = false;
    ENSURE(ecs_component_remove(st->w, st->comp[ci].c, e, &removed) ==
           ECS_ERR_OK);
    ENSURE(removed == (had != 0));
  }
  if (had) x->comps &= ~(1u << ci);
  drain(st);
}

static void op_lookup_n(state *st, input *in) {
  ecs_entity es[16];
  ecs_instance out[16];
  size_t ci, n = byte(in) % 17;
  if (st->ncomp == 0) return;
  ci = byte(in) % st->ncomp;
  for (size_t i = 0; i < n; i++) es[i] = pick_entity(st, in);
  ecs_component_lookup_n(st->w, st->comp[ci].c, es, out, n);
  for (size_t i = 0; i < n; i++)
    ENSURE(out[i] == ecs_component_lookup(st->w, st->comp[ci].c, es[i]));
}

static void op_gc(state *st, input *in) {
  uint8_t b = byte(in);
  size_t budget = b == 0 ? SIZE_MAX : b % 16;
  if (st->ncomp > 0 && (b & 1)) {
    ecs_component_gc(st->w, st->comp[b % st->ncomp].c, budget);
  } else {
    ecs_world_gc(st->w, budget);
  }
  drain(st);
}

static void op_transform_new(state *st) {
  ecs_transform *t = NULL;
  ecs_err err = ecs_transform_new(st->w, &t);
  if (st->tr != NULL) {
    ENSURE(err == ECS_ERR_EXISTS);
    return;
  }
  if (err == ECS_ERR_NOMEM) return;
  ENSURE(err == ECS_ERR_OK && ecs_transform_of(st->w) == t);
  st->tr = t;
}

static double num(input *in) {
  static const double v[] = {0, 1, -1, 0.5, 2, 10, -3.25, 1e-3};
  return v[byte(in) % 8];
}

static void op_transform(state *st, input *in) {
  uint8_t which = byte(in) % 8;
  ecs_entity e = pick_entity(st, in);
  tracked *x = find_tracked(st, e);
  int alive = x != NULL && x->alive, has = alive && x->has_tr;
  ecs_err err;
  if (st->tr == NULL) return;
  switch (which) {
  case 0: { /* add */
    ecs_trs l = {{num(in), num(in), num(in)}, {0, 0, 0, 1}, {1, 1, 1}};
    l.scale[0] = 1 + (double)(byte(in) % 3);
    err = ecs_transform_add(st->tr, e, (byte(in) & 1) ? &l : NULL);
    if (!alive) {
      ENSURE(err == ECS_ERR_DEAD);
    } else if (err != ECS_ERR_NOMEM) {
      ENSURE(err == ECS_ERR_OK);
      x->has_tr = 1;
    }
    break;
  }
  case 1: /* remove */
    ENSURE((ecs_transform_remove(st->tr, e) == ECS_ERR_OK) == (has != 0));
    if (has) {
      x->has_tr = 0;
      x->parent = -1;
      orphan_children(st, slot_of(st, x));
    }
    break;
  case 2: { /* set_parent */
    ecs_entity p = pick_entity(st, in);
    tracked *px = find_tracked(st, p);
    bool keep = byte(in) & 1;
    ecs_err expect = ECS_ERR_OK;
    /* the child is checked first, then the parent */
    if (!alive) {
      expect = ECS_ERR_DEAD;
    } else if (!has) {
      expect = ECS_ERR_MISSING;
    } else if (p != ECS_NULL && (px == NULL || !px->alive)) {
      expect = ECS_ERR_DEAD;
    } else if (p != ECS_NULL && !px->has_tr) {
      expect = ECS_ERR_MISSING;
    } else if (p != ECS_NULL) {
      for (int a = slot_of(st, px); a >= 0; a = model_parent(st, &st->t[a]))
        if (a == slot_of(st, x)) expect = ECS_ERR_CYCLE;
    }
    err = ecs_transform_set_parent(st->tr, e, p, keep);
    if (keep && expect == ECS_ERR_OK && err == ECS_ERR_KEEP_WORLD) break; /* singular */
    if (err != expect)
      fprintf(stderr, "set_parent: got %s, model says %s\n", ecs_strerror(err),
              ecs_strerror(expect));
    ENSURE(err == expect);
    if (err == ECS_ERR_OK) x->parent = p == ECS_NULL ? -1 : slot_of(st, px);
    break;
  }
  case 3:
    err = ecs_transform_set_position(st->tr, e, num(in), num(in), num(in));
    ENSURE(err == (!alive ? ECS_ERR_DEAD : !has ? ECS_ERR_MISSING : ECS_ERR_OK));
    break;
  case 4:
    err = ecs_transform_set_rotation(st->tr, e, num(in), num(in), num(in), num(in));
    if (err == ECS_ERR_ZERO_ROTATION) break; /* zero quaternion */
    ENSURE(err == (!alive ? ECS_ERR_DEAD : !has ? ECS_ERR_MISSING : ECS_ERR_OK));
    break;
  case 5: { /* destroy_tree: e and every live descendant */
    size_t expect = 0;
    if (has) {
      int changed = 1;
      uint8_t *mark = calloc(st->nt, 1);
      ENSURE(mark != NULL);
      mark[slot_of(st, x)] = 1;
      while (changed) {
        changed = 0;
        for (size_t i = 0; i < st->nt; i++) {
          int p = model_parent(st, &st->t[i]);
          if (!mark[i] && p >= 0 && mark[p]) {
            mark[i] = 1;
            changed = 1;
          }
        }
      }
      for (size_t i = 0; i < st->nt; i++) expect += mark[i];
      ENSURE(ecs_transform_destroy_tree(st->tr, e) == expect);
      for (size_t i = 0; i < st->nt; i++)
        if (mark[i]) model_kill(st, &st->t[i]);
      free(mark);
    } else {
      ENSURE(ecs_transform_destroy_tree(st->tr, e) == 0);
    }
    break;
  }
  case 6:
    err = ecs_transform_sort(st->tr);
    ENSURE(err == ECS_ERR_OK || err == ECS_ERR_NOMEM);
    break;
  default: {
    double m[16];
    err = ecs_transform_get_world(st->tr, e, m);
    ENSURE(err == (!alive ? ECS_ERR_DEAD : !has ? ECS_ERR_MISSING : ECS_ERR_OK));
    ecs_transform_gc(st->tr, byte(in) % 8);
    break;
  }
  }
}

static void op_names(state *st, input *in) {
  uint8_t which = byte(in) % 4;
  ecs_entity e = pick_entity(st, in);
  tracked *x = find_tracked(st, e);
  int alive = x != NULL && x->alive;
  if (st->nm == NULL) {
    ecs_names *m = NULL;
    ecs_err err = ecs_names_new(st->w, &m);
    if (err == ECS_ERR_NOMEM) return;
    ENSURE(err == ECS_ERR_OK);
    st->nm = m;
    return;
  }
  switch (which) {
  case 0: {
    size_t k = byte(in) % NNAMES;
    ecs_err err = ecs_names_set(st->nm, e, names[k], name_len[k]);
    if (!alive) {
      ENSURE(err == ECS_ERR_DEAD);
    } else if (err != ECS_ERR_NOMEM) {
      ENSURE(err == ECS_ERR_OK);
      x->name = (uint8_t)(k + 1);
      x->name_stamp = ++st->stamp;
    }
    break;
  }
  case 1: {
    bool cleared = false;
    ENSURE(ecs_names_clear(st->nm, e, &cleared) == ECS_ERR_OK);
    ENSURE(cleared == (alive && x->name != 0));
    if (alive) x->name = 0;
    break;
  }
  case 2:
    ecs_names_gc(st->nm, byte(in) == 0 ? SIZE_MAX : 3);
    break;
  default:
    break; /* find is compared after every op */
  }
}

/* The world's entity walk visits exactly the live entities, in order. */
static void op_walk(state *st) {
  uint32_t cursor = 0;
  ecs_entity e, last = ECS_NULL;
  size_t n = 0;
  while (ecs_next_entity(st->w, &cursor, &e)) {
    ENSURE(ecs_alive(st->w, e));
    ENSURE(n == 0 || ecs_entity_index(e) > ecs_entity_index(last));
    last = e;
    n++;
  }
  ENSURE(n == ecs_count(st->w));
}

/* ---------------------------------------------------------------------
** Queries
** ------------------------------------------------------------------ */
static void op_query_new(state *st, input *in) {
  ecs_component *with[3], *without[2];
  uint32_t nw = byte(in) % 4, nwo = byte(in) % 3, wm = 0, wom = 0;
  int dup = 0;
  ecs_query *q = NULL;
  ecs_err err;
  if (st->ncomp == 0 || st->nquery == MAX_QUERIES) return;
  for (uint32_t k = 0; k < nw; k++) {
    size_t c = byte(in) % st->ncomp;
    with[k] = st->comp[c].c;
    if ((wm | wom) >> c & 1u) dup = 1;
    wm |= 1u << c;
  }
  for (uint32_t k = 0; k < nwo; k++) {
    size_t c = byte(in) % st->ncomp;
    without[k] = st->comp[c].c;
    if ((wm | wom) >> c & 1u) dup = 1;
    wom |= 1u << c;
  }
  err = ecs_query_new(st->w, with, nw, without, nwo, &q);
  if (nw == 0 || dup) {
    ENSURE(err == (nw == 0 ? ECS_ERR_NO_TERMS : ECS_ERR_DUPLICATE_TERM));
    return;
  }
  if (err == ECS_ERR_NOMEM) return;
  ENSURE(err == ECS_ERR_OK && q != NULL);
  st->query[st->nquery].q = q;
  st->query[st->nquery].with = wm;
  st->query[st->nquery].without = wom;
  st->nquery++;
}

static void iter_end(state *st, size_t i) {
  if (st->iter[i].snap == NULL) return;
  ecs_query_iter_end(st->w, &st->iter[i]);
  ENSURE(st->iter[i].snap == NULL);
}

/*
** Begin, step or end one of the open iterations; free a query that none
** walks. The byte's low two bits choose the action, the next two the
** iteration (inputs written for a single iteration use the first).
*/
static void op_query_iter(state *st, input *in) {
  uint8_t b = byte(in), which = b % 4;
  size_t it = (size_t)(b >> 2) % MAX_ITERS;
  ecs_query_iter *iter = &st->iter[it];
  uint8_t *yielded = st->yielded[it];
  if (st->nquery == 0) return;
  if (which == 0 && iter->snap == NULL) {
    size_t k = byte(in) % st->nquery;
    ecs_err err = ecs_query_iter_begin(st->w, st->query[k].q, iter);
    if (err == ECS_ERR_NOMEM) return;
    ENSURE(err == ECS_ERR_OK);
    st->iter_query[it] = k;
    st->iter_changes[it] = st->changes;
    memset(yielded, 0, MAX_TRACKED);
  } else if (which <= 1 && iter->snap != NULL) {
    size_t steps = 1 + byte(in) % 8;
    query_model *qm = &st->query[st->iter_query[it]];
    ecs_entity e;
    while (steps-- > 0) {
      tracked *x;
      if (!ecs_query_iter_next(st->w, iter, &e)) {
        /* the end: with no change since begin, every match was visited */
        if (st->changes == st->iter_changes[it])
          for (size_t i = 0; i < st->nt; i++)
            ENSURE(yielded[i] == (uint8_t)model_matches(qm, &st->t[i]));
        iter_end(st, it);
        return;
      }
      x = find_tracked(st, e);
      ENSURE(x != NULL && model_matches(qm, x)); /* alive and matching now */
      ENSURE(!yielded[slot_of(st, x)]);          /* at most once */
      yielded[slot_of(st, x)] = 1;
    }
  } else if (which == 2) {
    iter_end(st, it);
  } else { /* 1 with nothing to step, or 3: free the last query unless walked */
    for (size_t i = 0; i < MAX_ITERS; i++)
      if (st->iter[i].snap != NULL && st->iter_query[i] == st->nquery - 1)
        return;
    ecs_query_free(st->w, st->query[--st->nquery].q);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static state s; /* large: not on the stack */
  state *st = &s;
  input in = {data, size, 0};
  memset(st, 0, sizeof *st);
  st->w = ecs_world_new(test_allocf, &st->alloc);
  if (st->w == NULL) abort();
  while (in.at < in.n) {
    uint8_t op = byte(&in);
    st->ops++;
    if (op >= 0xF0) { /* arm: the k-th next allocation of the next op fails */
      st->alloc.fail_at = st->alloc.calls + 1 + (op & 0x0F);
      op = byte(&in);
    }
    if (op % 16 != 8 && op % 16 != 12 && op % 16 != 14) st->changes++;
    switch (op % 16) {
    case 0: op_create(st); break;
    case 1: op_create_n(st, &in); break;
    case 2: op_destroy(st, &in); break;
    case 3: op_destroy_n(st, &in); break;
    case 4: op_component_new(st, &in); break;
    case 5: case 6: op_add(st, &in); break;
    case 7: op_remove(st, &in); break;
    case 8: op_lookup_n(st, &in); break;
    case 9: op_gc(st, &in); break;
    case 10: if (st->tr == NULL) op_transform_new(st); else op_transform(st, &in); break;
    case 11: op_names(st, &in); break;
    case 12: op_walk(st); break;
    case 13: op_transform(st, &in); break;
    case 14: op_query_iter(st, &in); break;
    default: op_query_new(st, &in); break;
    }
    st->alloc.fail_at = 0;
    compare(st);
  }
  for (size_t i = 0; i < MAX_ITERS; i++) iter_end(st, i);
  /* Everything destroyed and swept: every ref drained exactly once. */
  for (size_t i = 0; i < st->nt; i++)
    if (st->t[i].alive) ecs_destroy(st->w, st->t[i].e);
  {
    uint32_t cursor = 0;
    ecs_entity e;
    while (ecs_next_entity(st->w, &cursor, &e)) ecs_destroy(st->w, e);
  }
  ecs_world_gc(st->w, SIZE_MAX);
  drain(st);
  ENSURE(st->drained == st->next_ref);
  ENSURE(ecs_world_check(st->w) == NULL);
  ecs_world_free(st->w);
  ENSURE(st->alloc.blocks == 0);
  return 0;
}
