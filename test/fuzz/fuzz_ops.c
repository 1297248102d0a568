/*
** fuzz_ops.c -- libFuzzer target: an op-sequence interpreter over the core
** C API (RELIABILITY R10), checked against a tiny model.
**
** The input bytes are read as a program: each op is one byte choosing the
** operation (op % 16), followed by the bytes it needs (an entity slot, a
** count, a budget, a schema ...); missing bytes read as 0, so every input
** is a valid program. One world is driven through entity create/destroy
** (single and batch), generic components (registration with fuzzed
** schemas, add, remove, lookup, lookup_n, gc, lua refs), the transform
** (add, remove, set_parent, setters, destroy_tree, sort, gc), names
** (set, clear, find, gc), queries (new with/without, count, up to four
** iterations kept open across other ops, so that snapshots stay pinned
** while the world changes and every compare rebuilds them, free), and
** the manager interface (ecs.h, ecs_manager_class) of every manager, a
** component, the transform or names, called through the class it
** registered, and the journal (journal_step: every 8th op a replica
** takes the world's delta and must hash alike). Op 12 is the entity walk; the other ops with op % 16 == 12
** (0x1C .. 0xEC) pick a manager with the next byte and, by op >> 4
** (mod 7), do:
**   0, 6  save, then load into the same manager, with up to three bytes
**         after the stream (the next part of a snapshot: load must stop
**         at its end). Nothing changes as the model sees it, and the
**         manager saves the same bytes again (values, parents, child
**         order, world matrices, stamps).
**   1     save, cut the stream at a fuzzed length, load: ECS_ERR_CORRUPT.
**         Every record is read whole, so a cut stream never loads.
**   2     save, xor one fuzzed byte, load. A reference reader
**         (load_verdict), written from the rules the docs list and not
**         from the managers' code, says whether the stream must load
**         (the data stays valid: a changed number, another live entity, a
**         lower count: docs/components.md "Load") or be ECS_ERR_CORRUPT,
**         and how many bytes its part takes; the load must agree, both
**         ways. After a success the world must pass its check at once and
**         the model of that manager becomes what the stream says (names
**         may then hold strings outside the fuzzer's list, stamps may tie,
**         the names clock goes past the largest stamp).
**   3     clear: every record goes, dead ones' too, and no listener hears.
**   4     a counting listener, in one of four slots: unlisten if
**         registered (a second unlisten finds nothing), else listen with
**         a fuzzed mask (0 and unknown bits, and a pointer that is no
**         manager, are ECS_ERR_INVALID).
**   5     the registry entry, kind and schema hook against the schema
**         registered, and the has hook for every tracked entity.
** Every stream a manager saves is read back through its documented layout
** (docs/components.md "Save layouts", docs/transform.md "Save and load")
** and must say what the model says: one record per live holder, the
** schema, values within load's rules, parents before children and the
** model's parent, each name with its stamp; the reference reader must
** accept it. A load that fails must leave the reader where it was, drop
** no ref, and leave the manager saving exactly the bytes it saved before.
**
** The model (per created entity: alive, component mask, transform,
** parent, name and stamp, the managers that may still hold a record of
** it once dead; a with/without mask per query; per listener, the events
** it must have heard) predicts every observable result. After each op
** ecs_world_check runs and the model is compared with the world for every
** tracked entity, with every manager's stats hook (live exactly; records
** between live and live plus the dead records that may linger, exactly
** live after a full gc, a clear or a load; the bytes of all managers
** within the world's), and with each listener's counts of ADD, REMOVE and
** SET (docs/components.md "Notifications", docs/transform.md
** "Notifications": ADD for a new record, SET for a write through the
** setters, a second transform add or a rename, REMOVE before a remove,
** names clear, destroy or destroy_tree, for each manager that has the
** entity; nothing for gc, sort, clear, load).
** The counting listener also checks that each event is in its mask and
** that the entity is alive with its record in place. gc must return the
** number by which the records fell.
**
** An op may arm the allocator to fail the k-th next allocation (a prefix
** byte 0xF0 + k - 1): the op that hits it must return ECS_ERR_NOMEM and
** change nothing the model can see (all-or-nothing), and the world must
** still pass the check. Loads (any of 0, 1, 2, 6 above) and listen are
** armed like the rest; only an armed op may run out of memory.
**
** Lua refs: every new instance of a component with a "lua" field gets a
** fresh ref; every ref drained must be one that is held (written, or taken
** over by a load, and not drained since). A load of a component drops the
** refs of every record it held, dead owners' included, and its new
** records hold the numbers the stream had: "taken over as read" (ecs.h),
** the binding that framed the stream vouching for them. The fuzzer plays
** that binding: a number dropped by this very load from this component is
** held again (it will be drained once more: in a same-world round trip
** each live record takes its own ref back, and the dead records' refs stay
** drained); any other non-zero number, which only a corrupted stream can
** give, is one the binding never handed out and is cleared to 0 before
** anything can drop it. So at the end (everything destroyed, full gc)
** every ref written or taken over has been drained exactly once.
**
** Built two ways: with clang -fsanitize=fuzzer (tools/fuzz.sh) and, with
** any compiler, linked to test/fuzz/fuzz_replay.c, which feeds the committed
** corpus test/fuzz/ops/ to LLVMFuzzerTestOneInput (ctest: fuzz_ops_replay).
** Until the manager ops existed every op % 16 == 12 was the walk; the
** committed inputs of that time were rewritten to use 0x0C, so they run
** the programs they were merged for. seed-mgr-* reach the manager ops;
** test/fuzz/ops_seeds.lua writes them (flip-* flip every byte of a small
** world's streams).
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../support/harness.h" /* test_alloc: counts blocks, fails the k-th growth */
#include "ecs.h"
#include "component.h"
#include "names.h"
#include "query.h"
#include "transform.h"
#include "journal.h"
#include "snapshot.h"
#include "../support/membuf.h" /* membuf: a growing buffer behind an ecs_writer (not the
                       ** world's memory: saving never meets the armed allocation) */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_TRACKED 256
#define MAX_COMPS 16
#define MAX_REFS 65536u
#define MAX_QUERIES 8
#define MAX_ITERS 4
#define MAX_LISTENERS 4

/* Managers as the model numbers them: components 0 .. MAX_COMPS - 1 (in
** registration order), then the transform and names. Bit m of a mask
** stands for manager m. */
#define MGR_TR MAX_COMPS
#define MGR_NM (MAX_COMPS + 1)
#define NMGR (MAX_COMPS + 2)

/* tracked.name for a name outside names[], which only a corrupted stream
** that load accepted can give (then tracked.extra holds it) */
#define NAME_EXTRA 255

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
  uint8_t alive, has_tr, name; /* name: 0 none, 1 + index in names[], NAME_EXTRA */
  int parent;                  /* tracked slot of the parent, or -1 */
  uint32_t comps;              /* bit c: has component c */
  uint32_t linger;             /* bit m: manager m may hold a dead record of e */
  uint64_t name_stamp;         /* the names manager's stamp: its clock at the set */
  char *extra;                 /* name == NAME_EXTRA: the name (malloc) */
  size_t extra_len;
} tracked;

typedef struct comp_model {
  ecs_component *c;
  int lua_field; /* index of the "lua" field the fuzzer writes refs to, or -1 */
  uint32_t nf;   /* the schema as registered, for the schema hook and save */
  uint8_t ftype[8];
  char fname[8][6];
} comp_model;

/* A counting listener (count_event) and what the model says it heard. */
struct state;
typedef struct listener_model {
  struct state *st;
  int mgr;                    /* the manager listened to, or -1: none */
  unsigned mask;              /* ECS_EVENT_* bits */
  uint64_t got[3], expect[3]; /* ADD, REMOVE, SET */
} listener_model;

typedef struct query_model {
  ecs_query *q;
  uint32_t with, without; /* component masks */
  /* change terms (one "changed" component at most here): its mask, a
  ** query that has not completed a pass (every match due), and the
  ** entities written since its last completed pass */
  uint32_t changed;
  int fresh;
  uint8_t dirty[MAX_TRACKED];
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
  uint8_t due[MAX_ITERS][MAX_TRACKED]; /* change queries: chosen at begin */
  uint8_t iter_pins[MAX_ITERS];        /* pins each open iteration holds */
  uint64_t changes; /* counts ops that may change what queries match */
  uint32_t next_ref, drained;
  uint32_t written; /* refs written, plus those a load took over */
  uint32_t held[MAX_COMPS]; /* refs in state 1, per component */
  /* 0 unused, 1 held by an instance, 2 drained, 3 dropped by the load in
  ** progress (which may take it over again: load_refs) */
  uint8_t ref_state[MAX_REFS];
  uint8_t ref_comp[MAX_REFS]; /* the component whose instance got it */
  listener_model lis[MAX_LISTENERS];
  membuf buf[3]; /* saved, corrupted and saved-again streams */
  /* per manager: dead records a load brought that no tracked entity's
  ** linger bit accounts for (purged ones, forged handles) */
  uint32_t extra_dead[NMGR];
  /* journal_step: a journal of w and the replica its deltas keep equal */
  ecs_journal *j;
  ecs_world *rep;
  size_t rep_nman; /* managers the replica has */
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

/* Change terms: x's instance of component ci was written (or created). */
static void mark_written(state *st, size_t ci, const tracked *x) {
  for (size_t k = 0; k < st->nquery; k++)
    if (st->query[k].changed >> ci & 1u) st->query[k].dirty[slot_of(st, x)] = 1;
}

/* A pass of query k completed (the core was told): nothing is due. */
static void pass_done(state *st, size_t k) {
  st->query[k].fresh = 0;
  memset(st->query[k].dirty, 0, sizeof st->query[k].dirty);
}

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

static int model_has(const tracked *x, int m);
static void expect_event(state *st, int m, ecs_event ev);

/*
** A destroy reports REMOVE, e still alive, to the listeners of every
** manager that has e (ecs_destroy_report); beyond that, managers do not
** hear of deaths: a dead entity's records stay until gc,
** clear, load or a new record at the index takes them. linger marks the
** managers that may still hold one, so that stats can be bounded (see
** check_stats); a full gc of a manager clears its bit everywhere.
*/
static void model_kill(state *st, tracked *x) {
  for (int m = 0; m < NMGR; m++)
    if (model_has(x, m)) expect_event(st, m, ECS_EVENT_REMOVE);
  x->alive = 0;
  x->linger |= x->comps | (x->has_tr ? 1u << MGR_TR : 0) | (x->name ? 1u << MGR_NM : 0);
  orphan_children(st, slot_of(st, x));
}

static void unlinger(state *st, int m) {
  for (size_t i = 0; i < st->nt; i++) st->t[i].linger &= ~(1u << m);
  st->extra_dead[m] = 0;
}

/* The model's name of x (NULL for none). */
static const char *model_name(const tracked *x, size_t *len) {
  if (x->name == 0) return NULL;
  if (x->name == NAME_EXTRA) {
    *len = x->extra_len;
    return x->extra;
  }
  *len = name_len[x->name - 1];
  return names[x->name - 1];
}

/* name: 0 (none) or 1 + index in names[]. */
static void model_set_name(tracked *x, uint8_t name) {
  free(x->extra);
  x->extra = NULL;
  x->extra_len = 0;
  x->name = name;
}

/* A name read from a stream: one of names[] if it is one, else a copy. */
static void model_set_name_bytes(tracked *x, const uint8_t *s, size_t len) {
  model_set_name(x, 0);
  for (size_t k = 0; k < NNAMES; k++)
    if (name_len[k] == len && memcmp(names[k], s, len) == 0) {
      x->name = (uint8_t)(k + 1);
      return;
    }
  x->extra = malloc(len + 1);
  if (x->extra == NULL) abort();
  if (len > 0) memcpy(x->extra, s, len);
  x->extra_len = len;
  x->name = NAME_EXTRA;
}

/* Take every dropped ref off the world's list: each must be held (written
** and not drained before); `to` is 2 (drained for good) or 3 (dropped by
** a load, which may take it over: load_refs). */
static void drain_as(state *st, uint8_t to) {
  uint32_t buf[7];
  size_t n;
  do {
    n = ecs_drain_refs(st->w, buf, 7);
    for (size_t i = 0; i < n; i++) {
      ENSURE(buf[i] > 0 && buf[i] < MAX_REFS);
      ENSURE(st->ref_state[buf[i]] == 1);
      ENSURE(st->held[st->ref_comp[buf[i]]] > 0);
      st->ref_state[buf[i]] = to;
      st->held[st->ref_comp[buf[i]]]--;
      st->drained++;
    }
  } while (n == 7);
}

static void drain(state *st) { drain_as(st, 2); }

/* ---------------------------------------------------------------------
** Managers through their class (ecs.h, ecs_manager_class)
** ------------------------------------------------------------------ */
static void *mgr_self(state *st, int m) {
  if (m < MGR_TR) return (size_t)m < st->ncomp ? (void *)st->comp[m].c : NULL;
  return m == MGR_TR ? (void *)st->tr : (void *)st->nm;
}

/* The class self was registered with, and its registry index. */
static const ecs_manager_class *mgr_class(state *st, const void *self, size_t *index) {
  for (size_t i = 0; i < ecs_manager_count(st->w); i++) {
    const ecs_manager_class *cls = NULL;
    if (ecs_manager_at(st->w, i, NULL, &cls) == self) {
      if (index != NULL) *index = i;
      return cls;
    }
  }
  ENSURE(0 && "manager not registered");
  return NULL;
}

/* One of the managers that exist, chosen by a byte; -1 if none does. */
static int pick_manager(state *st, input *in) {
  int ids[NMGR];
  size_t n = 0;
  uint8_t b = byte(in);
  for (size_t c = 0; c < st->ncomp; c++) ids[n++] = (int)c;
  if (st->tr != NULL) ids[n++] = MGR_TR;
  if (st->nm != NULL) ids[n++] = MGR_NM;
  return n == 0 ? -1 : ids[b % n];
}

/* Does the model give x a record in manager m (the has hook's answer)? */
static int model_has(const tracked *x, int m) {
  if (!x->alive) return 0;
  if (m < MGR_TR) return (x->comps >> m & 1u) != 0;
  return m == MGR_TR ? x->has_tr != 0 : x->name != 0;
}

static size_t model_live(state *st, int m) {
  size_t n = 0;
  for (size_t i = 0; i < st->nt; i++) n += (size_t)model_has(&st->t[i], m);
  return n;
}

static int event_slot(ecs_event ev) {
  return ev == ECS_EVENT_ADD ? 0 : ev == ECS_EVENT_REMOVE ? 1 : 2;
}

/* Manager m reports ev once: every listener of m whose mask has it hears
** it. An ADD is followed by a SET (ecs.h: the new record's values were
** written), which the counting listeners, which change nothing, hear. */
static void expect_event(state *st, int m, ecs_event ev) {
  for (size_t k = 0; k < MAX_LISTENERS; k++)
    if (st->lis[k].mgr == m && (st->lis[k].mask & (unsigned)ev))
      st->lis[k].expect[event_slot(ev)]++;
  if (ev == ECS_EVENT_ADD) expect_event(st, m, ECS_EVENT_SET);
}

/*
** The counting listener. Besides counting it checks what every event
** promises (ecs.h): it comes from the manager listened to, is in the mask,
** and the entity is alive with its record in place (after ADD and SET
** the record is complete; before REMOVE it is still readable).
*/
static ecs_err count_event(ecs_world *w, void *manager, ecs_entity e, ecs_event event,
                           void *ud) {
  listener_model *l = (listener_model *)ud;
  state *st = l->st;
  ENSURE(w == st->w && l->mgr >= 0 && manager == mgr_self(st, l->mgr));
  ENSURE(event == ECS_EVENT_ADD || event == ECS_EVENT_REMOVE || event == ECS_EVENT_SET);
  ENSURE((l->mask & (unsigned)event) != 0);
  ENSURE(ecs_alive(w, e) && mgr_class(st, manager, NULL)->has(w, manager, e));
  l->got[event_slot(event)]++;
  return ECS_ERR_OK;
}

/* Records manager m holds (dead ones included), from its stats hook. */
static size_t mgr_records(state *st, int m) {
  ecs_manager_stats s = {0, 0, 0};
  void *self = mgr_self(st, m);
  mgr_class(st, self, NULL)->stats(st->w, self, &s);
  return s.records;
}

/* Records of every manager, as ecs_world_gc sees them. */
static size_t all_records(state *st) {
  size_t n = 0;
  for (size_t i = 0; i < ecs_manager_count(st->w); i++) {
    ecs_manager_stats s;
    ecs_manager_stats_at(st->w, i, &s);
    n += s.records;
  }
  return n;
}

/*
** Stats of manager m against the model: live exactly; records between
** live and live plus the dead records that may linger, exactly live when
** none may (after a full gc, a clear or a load). @return its bytes.
*/
static size_t check_stats(state *st, int m) {
  void *self = mgr_self(st, m);
  size_t index, linger = 0;
  const ecs_manager_class *cls = mgr_class(st, self, &index);
  ecs_manager_stats s = {0, 0, 0}, at;
  size_t live = model_live(st, m), size;
  cls->stats(st->w, self, &s);
  ecs_manager_stats_at(st->w, index, &at);
  ENSURE(at.records == s.records && at.live == s.live && at.bytes == s.bytes);
  for (size_t i = 0; i < st->nt; i++)
    linger += !st->t[i].alive && (st->t[i].linger >> m & 1u);
  ENSURE(s.live == live);
  linger += st->extra_dead[m];
  ENSURE(s.records >= live && s.records <= live + linger);
  if (linger == 0) ENSURE(s.records == live);
  size = m < MGR_TR ? ecs_component_size(st->comp[m].c)
         : m == MGR_TR ? ecs_transform_size(st->tr) : ecs_names_size(st->nm);
  ENSURE(s.records == size);
  ENSURE(s.bytes > 0); /* every manager holds at least its own struct */
  return s.bytes;
}

/*
** find(s) is the holder of s with the largest stamp. Only a corrupted
** stream that load accepted can give two holders the same stamp; find
** may then return either.
*/
static void check_find(state *st, const char *s, size_t len) {
  uint64_t best = 0;
  ecs_entity got = ecs_names_find(st->nm, s, len);
  const tracked *g = find_tracked(st, got);
  size_t l;
  for (size_t i = 0; i < st->nt; i++) {
    const tracked *x = &st->t[i];
    const char *n = model_name(x, &l);
    if (x->alive && n != NULL && l == len && memcmp(n, s, len) == 0 && x->name_stamp > best)
      best = x->name_stamp;
  }
  if (best == 0) {
    ENSURE(got == ECS_NULL);
    return;
  }
  {
    const char *n = g != NULL ? model_name(g, &l) : NULL;
    ENSURE(g != NULL && g->alive && n != NULL && l == len && memcmp(n, s, len) == 0);
    ENSURE(g->name_stamp == best);
  }
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
      size_t len = 0, mlen = 0;
      const char *s = ecs_names_get(st->nm, x->e, &len);
      const char *ms = model_name(x, &mlen);
      if (x->alive && ms != NULL) {
        ENSURE(s != NULL && len == mlen && memcmp(s, ms, len) == 0);
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
    size_t n = 0, got = 0, due = 0;
    const query_model *qm = &st->query[k];
    for (size_t i = 0; i < st->nt; i++) {
      int m = model_matches(qm, &st->t[i]);
      n += (size_t)m;
      due += m && (qm->changed == 0 || qm->fresh || qm->dirty[i]);
      if (st->t[i].alive) ENSURE(ecs_query_matches(st->w, qm->q, st->t[i].e) == (m != 0));
    }
    /* a change query counts what its next pass would visit */
    ENSURE(ecs_query_count(st->w, qm->q, &got) == ECS_ERR_OK);
    ENSURE(got == due);
    { /* one pin per open iteration (two when it took a filtered copy: the
      ** copy and the list it came from); a retired one only while pinned */
      ecs_query_stats qs;
      uint32_t pins = 0;
      for (size_t i = 0; i < MAX_ITERS; i++)
        if (st->iter[i].snap != NULL && st->iter_query[i] == k)
          pins += st->iter_pins[i];
      ecs_query_get_stats(qm->q, &qs);
      ENSURE(qs.pins == pins && qs.retired <= pins && qs.count == n);
    }
  }
  if (st->nm != NULL) {
    for (size_t k = 0; k < NNAMES; k++) check_find(st, names[k], name_len[k]);
    for (size_t i = 0; i < st->nt; i++)
      if (st->t[i].alive && st->t[i].name == NAME_EXTRA)
        check_find(st, st->t[i].extra, st->t[i].extra_len);
  }
  { /* the stats hook of every manager; their bytes are the world's */
    size_t bytes = 0;
    for (int m = 0; m < NMGR; m++)
      if (mgr_self(st, m) != NULL) bytes += check_stats(st, m);
    ENSURE(bytes <= (size_t)st->alloc.bytes);
  }
  for (size_t k = 0; k < MAX_LISTENERS; k++) /* every event, none twice */
    for (size_t j = 0; j < 3; j++) ENSURE(st->lis[k].got[j] == st->lis[k].expect[j]);
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
  st->comp[st->ncomp].nf = nf;
  for (uint32_t k = 0; k < nf; k++) {
    st->comp[st->ncomp].ftype[k] = (uint8_t)defs[k].type;
    memcpy(st->comp[st->ncomp].fname[k], fnames[k], sizeof fnames[k]);
  }
  memcpy(st->comp_names[st->ncomp], name, sizeof name);
  st->ncomp++;
}

/* Numeric fields of instance inst of component ci get values made from v
** (entity and lua fields keep theirs: the model tracks those). */
static void scribble(state *st, size_t ci, ecs_instance inst, uint8_t v) {
  ecs_component *c = st->comp[ci].c;
  for (uint32_t k = 0; k < st->comp[ci].nf; k++) {
    ecs_type t = (ecs_type)st->comp[ci].ftype[k];
    ecs_scalar s;
    ecs_kind kind = ecs_type_kind(t);
    if (kind == ECS_KIND_FLOAT) s.f = (double)v * 0.5 - 3.0;
    else if (kind == ECS_KIND_INT) s.i = (int64_t)(v + k);
    else if (kind == ECS_KIND_BOOL) s.i = (v + k) & 1u;
    else continue;
    ecs_value_store(ecs_component_column(c, k), t, inst, s);
  }
}

/* A write of an existing instance, told in one of the ways a writer may:
** prewrite, the values, then ecs_component_written (an open journal keeps
** an after-image) or a plain touch; a touch before the values; a written
** write followed by a second one prepared again; two instances prepared
** in a row, told in the other order. The world's check after the op
** compares every after-image with its row, and the journal step's
** replica follows the deltas. */
static void write_told(state *st, size_t ci, ecs_instance inst, input *in) {
  ecs_component *c = st->comp[ci].c;
  uint8_t how = byte(in) % 5, v = byte(in);
  ecs_instance other = v % ecs_component_size(c);
  tracked *y = find_tracked(st, ecs_component_entities(c)[other]);
  if (how == 4 && (y == NULL || !y->alive || other == inst)) how = 0;
  if (how == 4) mark_written(st, ci, y);
  ecs_component_write_begin(st->w, c, NULL, inst, 1);
  if (how == 1) ecs_component_write_end(st->w, c, &(ecs_instance){inst}, 0, 1);
  if (how == 4) ecs_component_write_begin(st->w, c, NULL, other, 1);
  scribble(st, ci, inst, v);
  if (how == 4) scribble(st, ci, other, (uint8_t)(v + 1u));
  if (how == 0 || how == 3 || how == 4) ecs_component_write_end(st->w, c, NULL, inst, 1);
  else if (how == 2) ecs_component_write_end(st->w, c, &(ecs_instance){inst}, 0, 1);
  if (how == 3) {
    ecs_component_write_begin(st->w, c, NULL, inst, 1);
    scribble(st, ci, inst, (uint8_t)(v ^ 0x5Au));
    ecs_component_write_end(st->w, c, NULL, inst, 1);
  }
  if (how == 4) ecs_component_write_end(st->w, c, NULL, other, 1);
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
  if (!existed) expect_event(st, (int)ci, ECS_EVENT_ADD);
  if (!existed || (st->ops & 1u)) { /* a new instance, or a write told */
    if (existed) write_told(st, ci, inst, in);
    mark_written(st, ci, x);
  }
  drain(st); /* reusing a dead record drops its refs */
  if (!existed && st->comp[ci].lua_field >= 0 && st->next_ref + 1 < MAX_REFS) {
    uint32_t *col = (uint32_t *)ecs_component_column(st->comp[ci].c,
                                                     (uint32_t)st->comp[ci].lua_field);
    ENSURE(col != NULL && col[inst] == 0);
    col[inst] = ++st->next_ref;
    st->ref_state[st->next_ref] = 1;
    st->ref_comp[st->next_ref] = (uint8_t)ci;
    st->held[ci]++;
    st->written++;
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
  if (had) {
    x->comps &= ~(1u << ci);
    expect_event(st, (int)ci, ECS_EVENT_REMOVE);
  }
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

/* gc reclaims dead records only, at most budget, and says how many: the
** records the stats hooks count drop by exactly that. */
static void op_gc(state *st, input *in) {
  uint8_t b = byte(in);
  size_t budget = b == 0 ? SIZE_MAX : b % 16, n;
  if (st->ncomp > 0 && (b & 1)) {
    int c = (int)(b % st->ncomp);
    size_t before = mgr_records(st, c);
    n = ecs_component_gc(st->w, st->comp[c].c, budget);
    ENSURE(n <= budget && before - mgr_records(st, c) == n);
    if (budget == SIZE_MAX) unlinger(st, c);
  } else {
    size_t before = all_records(st);
    n = ecs_world_gc(st->w, budget);
    ENSURE(before - all_records(st) == n);
    if (budget == SIZE_MAX)
      for (int m = 0; m < NMGR; m++) unlinger(st, m);
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
      x->has_tr = 1; /* a second add writes the local: SET, not ADD */
      expect_event(st, MGR_TR, has ? ECS_EVENT_SET : ECS_EVENT_ADD);
    } else {
      ENSURE(!has); /* only a new row allocates */
    }
    break;
  }
  case 1: /* remove */
    ENSURE((ecs_transform_remove(st->tr, e) == ECS_ERR_OK) == (has != 0));
    if (has) {
      x->has_tr = 0;
      x->parent = -1;
      orphan_children(st, slot_of(st, x));
      expect_event(st, MGR_TR, ECS_EVENT_REMOVE); /* the orphans are not told */
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
    if (err == ECS_ERR_OK) {
      x->parent = p == ECS_NULL ? -1 : slot_of(st, px);
      expect_event(st, MGR_TR, ECS_EVENT_SET);
    }
    break;
  }
  case 3:
    err = ecs_transform_set_position(st->tr, e, num(in), num(in), num(in));
    ENSURE(err == (!alive ? ECS_ERR_DEAD : !has ? ECS_ERR_MISSING : ECS_ERR_OK));
    if (err == ECS_ERR_OK) expect_event(st, MGR_TR, ECS_EVENT_SET);
    break;
  case 4:
    err = ecs_transform_set_rotation(st->tr, e, num(in), num(in), num(in), num(in));
    if (err == ECS_ERR_ZERO_ROTATION) break; /* zero quaternion */
    ENSURE(err == (!alive ? ECS_ERR_DEAD : !has ? ECS_ERR_MISSING : ECS_ERR_OK));
    if (err == ECS_ERR_OK) expect_event(st, MGR_TR, ECS_EVENT_SET);
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
    size_t budget, before;
    err = ecs_transform_get_world(st->tr, e, m);
    ENSURE(err == (!alive ? ECS_ERR_DEAD : !has ? ECS_ERR_MISSING : ECS_ERR_OK));
    budget = byte(in) % 8;
    before = mgr_records(st, MGR_TR);
    {
      size_t n = ecs_transform_gc(st->tr, budget);
      ENSURE(n <= budget && before - mgr_records(st, MGR_TR) == n);
    }
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
      expect_event(st, MGR_NM, x->name ? ECS_EVENT_SET : ECS_EVENT_ADD);
      model_set_name(x, (uint8_t)(k + 1));
      x->name_stamp = ++st->stamp; /* the manager's clock, one tick per set */
    }
    break;
  }
  case 1: {
    bool cleared = false;
    ENSURE(ecs_names_clear(st->nm, e, &cleared) == ECS_ERR_OK);
    ENSURE(cleared == (alive && x->name != 0));
    if (cleared) expect_event(st, MGR_NM, ECS_EVENT_REMOVE);
    if (alive) model_set_name(x, 0);
    break;
  }
  case 2: {
    size_t budget = byte(in) == 0 ? SIZE_MAX : 3, before = mgr_records(st, MGR_NM);
    size_t n = ecs_names_gc(st->nm, budget);
    ENSURE(n <= budget && before - mgr_records(st, MGR_NM) == n);
    if (budget == SIZE_MAX) unlinger(st, MGR_NM);
    break;
  }
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
  memset(&st->query[st->nquery], 0, sizeof st->query[st->nquery]);
  st->query[st->nquery].q = q;
  st->query[st->nquery].with = wm;
  st->query[st->nquery].without = wom;
  if (nw & 1u) { /* a changed term: the first "with" one */
    err = ecs_query_track_changes(st->w, q, with, 1, NULL, 0);
    ENSURE(err == ECS_ERR_OK || err == ECS_ERR_NOMEM);
    ENSURE(ecs_query_tracks_changes(q) == (err == ECS_ERR_OK));
    if (err == ECS_ERR_OK) {
      for (size_t c = 0; c < st->ncomp; c++)
        if (st->comp[c].c == with[0]) st->query[st->nquery].changed = 1u << c;
      st->query[st->nquery].fresh = 1;
    }
  }
  st->nquery++;
}

static void iter_end(state *st, size_t i) {
  if (st->iter[i].snap == NULL) return;
  ecs_query_iter_end(st->w, &st->iter[i]);
  ENSURE(st->iter[i].snap == NULL);
}

static void count_rows(ecs_world *w, const ecs_view *v, void *ud) {
  (void)w;
  *(size_t *)ud += v->count;
}

/*
** Begin, step or end one of the open iterations; free a query that none
** walks, or (bit 6 of the byte) run a native system with no column over
** one: runs re-align the managers of a query whose runs churn broke
** (query.c), which the world check after the op then checks, open
** iterations over other queries included. The byte's low two bits choose
** the action, the next two the iteration (inputs written for a single
** iteration use the first).
*/
static void op_query_iter(state *st, input *in) {
  uint8_t b = byte(in), which = b % 4;
  size_t it = (size_t)(b >> 2) % MAX_ITERS;
  ecs_query_iter *iter = &st->iter[it];
  uint8_t *yielded = st->yielded[it];
  if (st->nquery == 0) return;
  if (which == 0 && iter->snap == NULL) {
    size_t k = byte(in) % st->nquery;
    ecs_query_stats before, after;
    ecs_err err;
    ecs_query_get_stats(st->query[k].q, &before);
    err = ecs_query_iter_begin(st->w, st->query[k].q, iter);
    if (err == ECS_ERR_NOMEM) return;
    ENSURE(err == ECS_ERR_OK);
    ecs_query_get_stats(st->query[k].q, &after);
    st->iter_query[it] = k;
    st->iter_changes[it] = st->changes;
    /* one pin, or two for a copy made for the pass (the matches that pass
    ** the change terms, or the list without its holes) and the list it came
    ** from; a change query after its first pass always copies */
    st->iter_pins[it] = (uint8_t)(after.pins - before.pins);
    ENSURE(st->iter_pins[it] == 1 || st->iter_pins[it] == 2);
    if (st->query[k].changed != 0 && !st->query[k].fresh) ENSURE(st->iter_pins[it] == 2);
    memset(yielded, 0, MAX_TRACKED);
    for (size_t i = 0; i < st->nt; i++)
      st->due[it][i] = (uint8_t)(st->query[k].changed == 0 || st->query[k].fresh ||
                                 st->query[k].dirty[i]);
  } else if (which <= 1 && iter->snap != NULL) {
    size_t steps = 1 + byte(in) % 8;
    query_model *qm = &st->query[st->iter_query[it]];
    ecs_entity e;
    while (steps-- > 0) {
      tracked *x;
      if (!ecs_query_iter_next(st->w, iter, &e)) {
        /* the end: with no change since begin, every match was visited
        ** (of a change query: every one due when the pass began) */
        if (st->changes == st->iter_changes[it])
          for (size_t i = 0; i < st->nt; i++)
            ENSURE(yielded[i] == (uint8_t)(model_matches(qm, &st->t[i]) &&
                                           st->due[it][i]));
        iter_end(st, it);
        ecs_query_complete(st->w, qm->q);
        pass_done(st, st->iter_query[it]);
        return;
      }
      x = find_tracked(st, e);
      ENSURE(x != NULL && model_matches(qm, x)); /* alive and matching now */
      ENSURE(st->due[it][slot_of(st, x)]);       /* due when it began */
      ENSURE(!yielded[slot_of(st, x)]);          /* at most once */
      yielded[slot_of(st, x)] = 1;
    }
  } else if (which == 2) {
    iter_end(st, it);
  } else if (which == 3 && (b & 0x40) != 0) {
    size_t k = byte(in) % st->nquery, rows = 0, done = 0, count = 0, due = 0;
    ecs_err err = ecs_query_count(st->w, st->query[k].q, &count);
    if (err == ECS_ERR_NOMEM) return;
    ENSURE(err == ECS_ERR_OK);
    for (size_t i = 0; i < st->nt; i++)
      due += model_matches(&st->query[k], &st->t[i]) &&
             (st->query[k].changed == 0 || st->query[k].fresh ||
              st->query[k].dirty[i]);
    ENSURE(count == due);
    err = ecs_query_run(st->w, st->query[k].q, NULL, 0, 0.0, count_rows, &rows,
                        &done);
    if (err == ECS_ERR_NOMEM) return;
    ENSURE(err == ECS_ERR_OK && rows == done);
    ENSURE(count == done);
    pass_done(st, k); /* a run completes its pass */
  } else { /* 1 with nothing to step, or 3: free the last query unless walked */
    for (size_t i = 0; i < MAX_ITERS; i++)
      if (st->iter[i].snap != NULL && st->iter_query[i] == st->nquery - 1)
        return;
    ecs_query_free(st->w, st->query[--st->nquery].q);
  }
}

/* ---------------------------------------------------------------------
** The manager interface: save, load, clear, listeners, schema, has
** ------------------------------------------------------------------ */
/* A save may need scratch (the names' and the transform's order): an armed
** failure there is ECS_ERR_NOMEM, which changes nothing; the save is then
** made again with the failure disarmed. */
static void save_to(state *st, int m, membuf *b) {
  void *self = mgr_self(st, m);
  ecs_writer out = membuf_writer(b);
  ecs_err err;
  b->n = 0;
  err = mgr_class(st, self, NULL)->save(st->w, self, &out);
  if (err == ECS_ERR_NOMEM && st->alloc.fail_at != 0) {
    st->alloc.fail_at = 0;
    b->n = 0;
    out = membuf_writer(b);
    err = mgr_class(st, self, NULL)->save(st->w, self, &out);
  }
  ENSURE(err == ECS_ERR_OK);
}

/* The next k bytes of a saved stream (out NULL: skip them). */
static void take(state *st, input *r, void *out, size_t k) {
  ENSURE(r->n - r->at >= k);
  if (out != NULL && k > 0) memcpy(out, r->p + r->at, k);
  r->at += k;
}

static uint32_t take_u32(state *st, input *r) {
  uint32_t v;
  take(st, r, &v, sizeof v);
  return v;
}

/* A record's entity: alive, tracked, and the first record of it. */
static tracked *saved_entity(state *st, ecs_entity e, uint8_t *seen) {
  tracked *x = find_tracked(st, e);
  ENSURE(x != NULL && x->alive && !seen[slot_of(st, x)]);
  seen[slot_of(st, x)] = 1;
  return x;
}

/* transform.c's rule for a loaded local (docs/transform.md, "Save and
** load"): every number finite, the rotation a unit quaternion within 1e-9. */
static int local_ok(const double l[10]) {
  double qn = 0;
  for (int k = 0; k < 3; k++)
    if (!isfinite(l[k]) || !isfinite(l[7 + k])) return 0;
  for (int k = 0; k < 4; k++) qn += l[3 + k] * l[3 + k];
  return fabs(qn - 1.0) < 1e-9;
}

/*
** Read a stream manager m saved through the layout its docs give
** (docs/components.md "Save layouts", docs/transform.md "Save and
** load"): it must say what the model says, exactly: the schema, one record
** per entity that has one (live ones; a component also lists the dead
** records its gc has not reclaimed yet, with zero values), values within
** the rules load enforces, parents before their children and the parent
** the model has, names with their stamps, and nothing after the last
** record.
*/
/* x's name's rank among the live names by the model's stamps (1: oldest). */
static uint64_t name_rank(state *st, const tracked *x) {
  uint64_t rank = 0;
  for (size_t i = 0; i < st->nt; i++)
    rank += st->t[i].alive && st->t[i].name != 0 &&
            st->t[i].name_stamp <= x->name_stamp;
  return rank;
}

static size_t check_stream(state *st, int m, const membuf *b) {
  input r = {b->p, b->n, 0};
  uint32_t count;
  uint8_t *seen = (uint8_t *)calloc(st->nt + 1, 1);
  uint8_t *dead = NULL;
  size_t stamps_at = b->n;
  ENSURE(seen != NULL);
  /* the layout number: 3 for components (columns), 2 for names, 1 for the transform */
  ENSURE(take_u32(st, &r) == (m < MGR_TR ? 3u : m == MGR_TR ? 1u : 2u));
  if (m < MGR_TR) {
    const comp_model *cm = &st->comp[m];
    uint32_t v, n, records = 0;
    ENSURE(take_u32(st, &r) == cm->nf);
    for (uint32_t k = 0; k < cm->nf; k++) {
      size_t len = strlen(cm->fname[k]);
      ENSURE(take_u32(st, &r) == cm->ftype[k]);
      ENSURE(take_u32(st, &r) == len);
      ENSURE(r.n - r.at >= len && memcmp(r.p + r.at, cm->fname[k], len) == 0);
      r.at += len;
    }
    (void)take_u32(st, &r); /* the gc cursor */
    (void)take_u32(st, &r); /* the churn */
    /* the owner list: handles, runs (bit 31, then a length of 2 or
    ** more) of consecutive handles, purged records (bit 30), a 0 at the
    ** end; the live ones are the model's, each once */
    count = 0;
    dead = (uint8_t *)calloc(ecs_component_size(st->comp[m].c) + 1u, 1);
    ENSURE(dead != NULL);
    while ((v = take_u32(st, &r)) != 0) {
      n = 1;
      if (v & 0x80000000u) {
        ENSURE((v & 0x40000000u) == 0);
        v &= ~0x80000000u;
        n = take_u32(st, &r);
        ENSURE(n >= 2);
      }
      for (uint32_t j = 0; j < n; j++, records++) {
        ENSURE(records < ecs_component_size(st->comp[m].c));
        if ((v & 0x40000000u) != 0 || !ecs_alive(st->w, v + j)) {
          dead[records] = 1;
          continue;
        }
        ENSURE(saved_entity(st, v + j, seen)->comps >> m & 1u);
        count++;
      }
    }
    ENSURE(records == ecs_component_size(st->comp[m].c));
    ENSURE(count == model_live(st, m));
    for (uint32_t k = 0; k < cm->nf; k++) {
      for (uint32_t i = 0; i < records; i++) {
        /* values are compared as bytes by the callers; here only the
        ** rules load enforces: a bool is 0 or 1, an entity a 30-bit id;
        ** and a dead record's are zeros */
        uint8_t val[8] = {0}, any = 0;
        ecs_entity ev;
        size_t size = ecs_type_size((ecs_type)cm->ftype[k]);
        take(st, &r, val, size);
        memcpy(&ev, val, sizeof ev);
        if (cm->ftype[k] == ECS_BOOL) ENSURE(val[0] <= 1);
        if (cm->ftype[k] == ECS_ENTITY) ENSURE((ev & ~ECS_ID_MASK) == 0);
        for (size_t q = 0; q < size; q++) any |= val[q];
        if (dead[i]) ENSURE(any == 0);
      }
    }
    /* the stamps a query could still tell from 0: per kind, rows ascending,
    ** live records only */
    stamps_at = r.at;
    for (int k = 0; k < 2; k++) {
      uint32_t ns = take_u32(st, &r), last = 0;
      ENSURE(ns <= count);
      for (uint32_t j = 0; j < ns; j++) {
        uint32_t row = take_u32(st, &r), stamp = take_u32(st, &r);
        ENSURE(row < records && !dead[row] && (j == 0 || row > last) && stamp != 0);
        last = row;
      }
    }
  } else if (m == MGR_TR) {
    count = take_u32(st, &r);
    ENSURE(count == model_live(st, m));
    for (uint32_t i = 0; i < count; i++) {
      ecs_entity e = take_u32(st, &r), pe = take_u32(st, &r);
      uint8_t flags;
      double l[10];
      tracked *x, *px = NULL;
      take(st, &r, &flags, 1);
      ENSURE(flags <= 1); /* 1: the world matrix follows the local */
      take(st, &r, l, sizeof l);
      ENSURE(local_ok(l));
      take(st, &r, NULL, flags ? 16 * sizeof(double) : 0);
      x = saved_entity(st, e, seen);
      if (pe != ECS_NULL) { /* depth first: the parent came before */
        px = find_tracked(st, pe);
        ENSURE(px != NULL && seen[slot_of(st, px)]);
      }
      ENSURE(x->has_tr && model_parent(st, x) == (px != NULL ? slot_of(st, px) : -1));
    }
  } else {
    count = take_u32(st, &r);
    ENSURE(count == model_live(st, m));
    for (uint32_t i = 0; i < count; i++) {
      tracked *x = saved_entity(st, take_u32(st, &r), seen);
      uint64_t stamp, len;
      size_t ml = 0;
      const char *ms = model_name(x, &ml);
      take(st, &r, &stamp, sizeof stamp);
      take(st, &r, &len, sizeof len);
      ENSURE(len <= r.n - r.at);
      ENSURE(ms != NULL && ml == len && memcmp(ms, r.p + r.at, ml) == 0);
      /* saved oldest first, each stamp as its rank among the live names */
      ENSURE(stamp == (uint64_t)i + 1u && stamp == name_rank(st, x));
      r.at += (size_t)len;
    }
  }
  ENSURE(r.at == r.n); /* nothing after the last record */
  free(dead);
  free(seen);
  return stamps_at;
}

/* The next k bytes of a stream that may be cut or corrupted: 0 if fewer
** than k are left (out NULL: skip them). */
static int get(input *r, void *out, size_t k) {
  if (r->n - r->at < k) return 0;
  if (out != NULL && k > 0) memcpy(out, r->p + r->at, k);
  r->at += k;
  return 1;
}

/*
** The reference reader: what load must do with the n bytes at p in
** manager m, from the rules the docs list ("Load" in docs/components.md,
** "Save and load" in docs/transform.md), written apart from the managers'
** code. @return ECS_ERR_OK (the stream loads, and *used is how many bytes
** its part takes) or ECS_ERR_CORRUPT. With apply (only after the manager
** loaded it), the model of m becomes what the stream says: its records,
** parents, names and stamps, the names clock past the largest stamp.
** The managers also refuse a count larger than the bytes left could hold
** before reading any record; reading the records one by one gives the
** same verdict (no record is shorter than that bound), so it is not
** checked apart here.
*/
static ecs_err load_verdict(state *st, int m, const uint8_t *p, size_t n, int apply,
                            size_t *used) {
  input r = {p, n, 0};
  uint32_t v, count, bit = 1u << m, layout;
  uint64_t last_stamp = 0;
  uint8_t *seen = (uint8_t *)calloc(st->nt + 1, 1), *index_seen = NULL;
  ecs_err verdict = ECS_ERR_CORRUPT;
  ENSURE(seen != NULL);
  if (apply) { /* every record is replaced */
    for (size_t i = 0; i < st->nt; i++) {
      tracked *x = &st->t[i];
      if (m < MGR_TR) {
        x->comps &= ~bit;
      } else if (m == MGR_TR) {
        x->has_tr = 0;
        x->parent = -1;
      } else {
        model_set_name(x, 0);
      }
    }
  }
  /* the layout number: 3 (or the older 2) for components (columns), 2 (or
  ** the older 1) for names, 1 for the transform */
  if (!get(&r, &v, 4)) goto done;
  layout = v;
  if (m < MGR_TR ? v != 3u && v != 2u : m == MGR_TR ? v != 1u : v != 2u && v != 1u) goto done;
  if (m < MGR_TR) {
    const comp_model *cm = &st->comp[m];
    uint32_t records = 0;
    if (!get(&r, &v, 4) || v != cm->nf) goto done;
    for (uint32_t k = 0; k < cm->nf; k++) {
      size_t len = strlen(cm->fname[k]);
      if (!get(&r, &v, 4) || v != cm->ftype[k] || !get(&r, &v, 4) || v != len ||
          r.n - r.at < len || memcmp(r.p + r.at, cm->fname[k], len) != 0)
        goto done; /* another schema */
      r.at += len;
    }
    /* layout 3: the gc cursor and the churn, any values */
    if (layout == 3u && (!get(&r, &v, 4) || !get(&r, &v, 4))) goto done;
    /* the owner list, to its 0: a handle (bits 30, 31 clear), or bit 31
    ** and a length of at least 2 for a run of consecutive handles, or (in
    ** layout 3) bit 30 alone for a purged record; each a record the world
    ** could hold (ecs_record_valid: index below the slot count, generation
    ** not ahead of its slot's), alive or dead, each index once (a run may
    ** not carry its index into the generation bits) */
    count = 0;
    index_seen = (uint8_t *)calloc(ECS_MAX_ENTITIES / 8u + 1u, 1);
    ENSURE(index_seen != NULL);
    for (;;) {
      uint32_t len = 1;
      int purged;
      if (!get(&r, &v, 4)) goto done;
      if (v == 0) break;
      if ((v & 0x80000000u) && (!get(&r, &len, 4) || len < 2)) goto done;
      purged = (v & 0x40000000u) != 0;
      if (purged && (layout != 3u || (v & 0x80000000u))) goto done;
      v &= ~0xc0000000u;
      for (uint32_t j = 0; j < len; j++, records++) {
        ecs_entity e = v + j;
        uint32_t index = ecs_entity_index(v) + j;
        tracked *x;
        if ((uint64_t)ecs_entity_index(v) + j > ECS_INDEX_MASK ||
            !ecs_record_valid(st->w, purged ? ecs_mark_purged(e) : e))
          goto done;
        if (((unsigned)index_seen[index / 8u] >> (index % 8u)) & 1u) goto done; /* twice */
        index_seen[index / 8u] |= (uint8_t)(1u << (index % 8u));
        if (purged || !ecs_alive(st->w, e)) { /* a dead record: it lingers */
          x = purged ? NULL : find_tracked(st, e);
          if (apply && x != NULL && !x->alive) x->linger |= bit;
          else if (apply) st->extra_dead[m]++;
          continue;
        }
        x = find_tracked(st, e);
        ENSURE(x != NULL); /* every live entity is tracked */
        seen[slot_of(st, x)] = 1;
        count++;
      }
    }
    for (uint32_t k = 0; k < cm->nf; k++) { /* the columns */
      for (uint32_t i = 0; i < records; i++) {
        uint8_t val[8];
        ecs_entity ev;
        if (!get(&r, val, ecs_type_size((ecs_type)cm->ftype[k]))) goto done;
        memcpy(&ev, val, sizeof ev);
        if (cm->ftype[k] == ECS_BOOL && val[0] > 1) goto done;
        if (cm->ftype[k] == ECS_ENTITY && (ev & ~ECS_ID_MASK) != 0) goto done;
      }
    }
    /* layout 3: per kind of stamp, n pairs (row, stamp), rows ascending
    ** below the records, stamps not 0 (a manager loaded alone takes none of
    ** them: every row is stamped new) */
    for (int k = 0; layout == 3u && k < 2; k++) {
      uint32_t ns, last = 0;
      if (!get(&r, &ns, 4) || ns > records || ns > (r.n - r.at) / 8u) goto done;
      for (uint32_t j = 0; j < ns; j++) {
        uint32_t row, stamp;
        (void)get(&r, &row, 4);
        (void)get(&r, &stamp, 4);
        if (row >= records || (j > 0 && row <= last) || stamp == 0) goto done;
        last = row;
      }
    }
    if (apply)
      for (size_t i = 0; i < st->nt; i++)
        if (seen[slot_of(st, &st->t[i])]) st->t[i].comps |= bit;
  } else if (m == MGR_TR) {
    if (!get(&r, &count, 4)) goto done;
    for (uint32_t i = 0; i < count; i++) {
      ecs_entity e, pe;
      uint8_t flags;
      double l[10], w[16];
      tracked *x, *px = NULL;
      if (!get(&r, &e, 4) || !get(&r, &pe, 4) || !get(&r, &flags, 1) || !get(&r, l, sizeof l) ||
          ((flags & 1) && !get(&r, w, sizeof w)))
        goto done; /* a record cut short */
      if ((e & ~ECS_ID_MASK) != 0 || !ecs_alive(st->w, e)) goto done;
      x = find_tracked(st, e);
      ENSURE(x != NULL);
      if (seen[slot_of(st, x)]) goto done;
      if (pe != ECS_NULL) { /* an entity of an earlier record, handle and all */
        px = find_tracked(st, pe);
        if (px == NULL || !seen[slot_of(st, px)]) goto done;
      }
      if ((flags & ~1u) != 0 || !local_ok(l)) goto done;
      if ((flags & 1) && !(w[3] == 0 && w[7] == 0 && w[11] == 0 && w[15] == 1)) goto done;
      seen[slot_of(st, x)] = 1;
      if (apply) {
        x->has_tr = 1;
        x->parent = px != NULL ? slot_of(st, px) : -1;
      }
    }
  } else {
    if (!get(&r, &count, 4)) goto done;
    for (uint32_t i = 0; i < count; i++) {
      ecs_entity e;
      uint64_t stamp, len;
      tracked *x;
      if (!get(&r, &e, 4) || (e & ~ECS_ID_MASK) != 0 || !ecs_alive(st->w, e) ||
          !get(&r, &stamp, 8) || stamp == 0 || stamp > (uint64_t)1 << 62 || !get(&r, &len, 8) ||
          len > r.n - r.at || (layout == 2u && stamp <= last_stamp))
        goto done; /* (layout 2: oldest first, no stamp twice) */
      last_stamp = stamp;
      x = find_tracked(st, e);
      ENSURE(x != NULL);
      if (seen[slot_of(st, x)]) goto done; /* a second name for one entity */
      seen[slot_of(st, x)] = 1;
      if (apply) {
        model_set_name_bytes(x, r.p + r.at, (size_t)len);
        x->name_stamp = stamp;
        if (stamp > st->stamp) st->stamp = stamp; /* the clock goes past it */
      }
      r.at += (size_t)len;
    }
  }
  verdict = ECS_ERR_OK;
  *used = r.at;
done:
  free(seen);
  free(index_seen);
  ENSURE(!apply || verdict == ECS_ERR_OK);
  return verdict;
}

/* Non-zero refs the live instances of component m hold (0 for others). */
static uint32_t live_refs(state *st, int m) {
  uint32_t n = 0, *col;
  if (m >= MGR_TR || st->comp[m].lua_field < 0) return 0;
  col = (uint32_t *)ecs_component_column(st->comp[m].c, (uint32_t)st->comp[m].lua_field);
  for (size_t i = 0; i < st->nt; i++) {
    ecs_instance inst = ecs_component_lookup(st->w, st->comp[m].c, st->t[i].e);
    if (inst != ECS_NO_INSTANCE) n += col[inst] != 0;
  }
  return n;
}

/*
** Refs after a load of component m. The load dropped the refs of every
** record m held, dead owners' included (drained into state 3), and its
** new records hold the numbers the stream had: "taken over as read"
** (ecs.h), the binding that framed the stream vouching for them. The
** fuzzer plays that binding: a number in state 3 of this component is
** held again (and must be drained once more later); any other non-zero
** number, which only a corrupted stream can give (strict 0), is one the
** binding never handed out, and is cleared to nil (0) before anything can
** drop it. Whatever no new record took stays drained.
*/
static void load_refs(state *st, int m, int strict) {
  const comp_model *cm = &st->comp[m];
  for (uint32_t k = 0; k < cm->nf; k++) {
    uint32_t *col = (uint32_t *)ecs_component_column(cm->c, k);
    if (cm->ftype[k] != ECS_LUA || col == NULL) continue;
    for (uint32_t i = 0; i < ecs_component_size(cm->c); i++) {
      uint32_t r = col[i];
      if (r == 0) continue;
      if ((int)k == cm->lua_field && r < MAX_REFS && st->ref_state[r] == 3 &&
          st->ref_comp[r] == (uint8_t)m) {
        st->ref_state[r] = 1; /* a second record with r finds it held */
        st->held[m]++;
        st->written++;
      } else {
        ENSURE(!strict);
        col[i] = 0;
      }
    }
  }
  for (uint32_t r = 1; r <= st->next_ref; r++)
    if (st->ref_state[r] == 3) st->ref_state[r] = 2;
}

/*
** Load of m succeeded: every record it held was replaced by those of the
** stream (p, n), which the model takes as load_verdict reads them (dead
** records are not saved, so none lingers), and the manager must now save
** exactly that. strict: the stream is one the manager saved, whose records
** the model already has (refs: the refs they held, each taken back).
*/
static size_t loaded(state *st, int m, const uint8_t *p, size_t n, int strict, uint32_t refs) {
  size_t used, stamps_at;
  if (m < MGR_TR) {
    uint32_t held = st->held[m], d0 = st->drained;
    drain_as(st, 3);
    ENSURE(st->drained - d0 == held && st->held[m] == 0); /* all of m's, no other */
  }
  unlinger(st, m);
  load_verdict(st, m, p, n, 1, &used);
  save_to(st, m, &st->buf[2]);
  stamps_at = check_stream(st, m, &st->buf[2]);
  if (m < MGR_TR) {
    load_refs(st, m, strict);
    if (strict) ENSURE(st->held[m] == refs);
    for (size_t i = 0; i < st->nt; i++) /* a load writes every instance */
      if (st->t[i].alive && (st->t[i].comps >> m & 1u))
        mark_written(st, (size_t)m, &st->t[i]);
  }
  return stamps_at;
}

/* A load that failed changed nothing: the reader is back at the start,
** no ref was dropped, and the manager saves what it saved before. */
static void check_unchanged(state *st, int m, const membuf *before, const ecs_reader *r) {
  uint32_t d0 = st->drained;
  ENSURE(r->pos == 0);
  drain(st);
  ENSURE(st->drained == d0);
  save_to(st, m, &st->buf[2]);
  ENSURE(membuf_same(&st->buf[2], before));
}

/* Only an armed op may run out of memory. */
static int armed_nomem(const state *st, ecs_err err) {
  return err == ECS_ERR_NOMEM && st->alloc.fail_at != 0;
}

/*
** save, then load into the same manager, with up to three bytes after the
** stream (the next part of a snapshot, which load must not read). The
** world is unchanged as the model sees it and the manager saves the same
** bytes again (values, parents, stamps, child order, world matrices); an
** armed allocation failure must give ECS_ERR_NOMEM and change nothing.
*/
static void op_save_load(state *st, input *in, int m) {
  membuf *a = &st->buf[0];
  void *self = mgr_self(st, m);
  const ecs_manager_class *cls = mgr_class(st, self, NULL);
  size_t n, used = 0, tail = byte(in) % 4, stamps;
  uint32_t refs = live_refs(st, m);
  ecs_reader r;
  ecs_err err;
  save_to(st, m, a);
  check_stream(st, m, a);
  n = a->n;
  for (size_t k = 0; k < tail; k++) {
    uint8_t t = byte(in);
    ENSURE(membuf_write(a, &t, 1) == ECS_ERR_OK);
  }
  ENSURE(load_verdict(st, m, a->p, a->n, 0, &used) == ECS_ERR_OK && used == n);
  r.data = a->p;
  r.size = a->n;
  r.pos = 0;
  err = cls->load(st->w, self, &r);
  if (err != ECS_ERR_OK) {
    a->n = n;
    ENSURE(armed_nomem(st, err));
    check_unchanged(st, m, a, &r);
    return;
  }
  ENSURE(r.pos == n);
  stamps = loaded(st, m, a->p, a->n, 1, refs);
  a->n = n;
  /* the same bytes, but for the stamps: a manager loaded alone (not a
  ** snapshot's) stamps every row new, as a write does */
  ENSURE(stamps <= a->n && st->buf[2].n >= stamps &&
         memcmp(st->buf[2].p, a->p, stamps) == 0);
}

/*
** save, then load a corrupted copy: cut short (flip 0) or with one byte
** xored (flip 1). load_verdict says from the documented rules whether it
** must load: a cut stream never does (every record is read whole); a
** flipped one may, where the data stays valid (a changed number, another
** live entity, a lower count: docs/components.md "Load"). Then the world
** must pass its check, the reader stop where the verdict's reading did,
** and the manager hold what the stream says. Otherwise ECS_ERR_CORRUPT
** (or, armed, ECS_ERR_NOMEM) and nothing changed.
*/
static void op_corrupt_load(state *st, input *in, int m, int flip) {
  membuf *a = &st->buf[0], *c = &st->buf[1];
  void *self = mgr_self(st, m);
  const ecs_manager_class *cls = mgr_class(st, self, NULL);
  size_t at, used = 0;
  ecs_reader r;
  ecs_err err, verdict;
  save_to(st, m, a);
  check_stream(st, m, a);
  at = ((size_t)byte(in) | (size_t)byte(in) << 8) % a->n;
  c->n = 0;
  ENSURE(membuf_write(c, a->p, flip ? a->n : at) == ECS_ERR_OK);
  if (flip) {
    uint8_t x = byte(in);
    c->p[at] ^= x != 0 ? x : 0x80;
  }
  verdict = load_verdict(st, m, c->p, c->n, 0, &used);
  ENSURE(flip || verdict == ECS_ERR_CORRUPT);
  r.data = c->p;
  r.size = c->n;
  r.pos = 0;
  err = cls->load(st->w, self, &r);
  if (err == ECS_ERR_OK) {
    const char *bad = ecs_world_check(st->w);
    if (bad != NULL) {
      fprintf(stderr, "fuzz_ops: world check after a corrupted load: %s (op %zu)\n", bad,
              st->ops);
      abort();
    }
    ENSURE(verdict == ECS_ERR_OK && r.pos == used);
    loaded(st, m, c->p, c->n, 0, 0);
    return;
  }
  ENSURE(err == verdict || armed_nomem(st, err));
  check_unchanged(st, m, a, &r);
}

/* The class's clear: every record goes, dead ones too (their refs with
** them), and no listener hears of it. */
static void op_clear(state *st, int m) {
  void *self = mgr_self(st, m);
  uint32_t held = m < MGR_TR ? st->held[m] : 0, d0 = st->drained;
  mgr_class(st, self, NULL)->clear(st->w, self);
  drain(st);
  ENSURE(st->drained - d0 == held);
  for (size_t i = 0; i < st->nt; i++) {
    tracked *x = &st->t[i];
    if (m < MGR_TR) {
      x->comps &= ~(1u << m);
    } else if (m == MGR_TR) {
      x->has_tr = 0;
      x->parent = -1;
    } else {
      model_set_name(x, 0);
    }
  }
  unlinger(st, m);
}

/*
** Listener slot k (a byte): unlisten if registered (once: a second
** unlisten finds nothing), else listen to manager m with a mask from a
** byte: mostly a valid one, sometimes any four bits (0 and unknown bits
** are ECS_ERR_INVALID), sometimes a pointer that is no manager.
*/
static void op_listen(state *st, input *in, int m) {
  uint8_t b = byte(in), mb = byte(in);
  listener_model *l = &st->lis[b % MAX_LISTENERS];
  const void *self = mgr_self(st, m);
  unsigned mask = mb < 0xE0 ? 1u + mb % 7u : mb & 0x0Fu;
  int valid;
  ecs_err err;
  if (l->mgr >= 0) {
    void *was = mgr_self(st, l->mgr);
    ENSURE(ecs_manager_unlisten(st->w, was, count_event, l));
    ENSURE(!ecs_manager_unlisten(st->w, was, count_event, l));
    l->mgr = -1;
    return;
  }
  ENSURE(!ecs_manager_unlisten(st->w, self, count_event, l));
  if (mb >= 0xF0) self = st; /* registered nowhere */
  valid = self != (const void *)st && mask >= 1 && mask <= 7;
  err = ecs_manager_listen(st->w, self, mask, count_event, l);
  if (!valid) {
    ENSURE(err == ECS_ERR_INVALID);
    return;
  }
  if (armed_nomem(st, err)) return;
  ENSURE(err == ECS_ERR_OK);
  l->mgr = m;
  l->mask = mask;
  memset(l->got, 0, sizeof l->got);
  memset(l->expect, 0, sizeof l->expect);
}

/* The registry entry, the kind and the schema hook of m; has against the
** model for every tracked entity, and for the null and a forged one. */
static void op_inspect(state *st, int m) {
  void *self = mgr_self(st, m);
  size_t index;
  const ecs_manager_class *cls = mgr_class(st, self, &index), *cls2 = NULL;
  const char *name = NULL;
  ecs_field_def defs[12];
  uint32_t n;
  ENSURE(ecs_manager_at(st->w, index, &name, &cls2) == self && cls2 == cls && name != NULL);
  n = cls->schema(st->w, self, defs, 12);
  ENSURE(cls->schema(st->w, self, NULL, 0) == n); /* max 0: the count only */
  if (m < MGR_TR) {
    const comp_model *cm = &st->comp[m];
    ENSURE(strcmp(cls->kind, ECS_COMPONENT_KIND) == 0 && strcmp(name, st->comp_names[m]) == 0);
    ENSURE(n == cm->nf);
    for (uint32_t k = 0; k < n; k++)
      ENSURE(defs[k].type == (ecs_type)cm->ftype[k] && strcmp(defs[k].name, cm->fname[k]) == 0);
  } else if (m == MGR_TR) {
    ENSURE(strcmp(cls->kind, "transform") == 0 && strcmp(name, "transform") == 0);
    ENSURE(n == 11); /* the local's ten doubles, then the parent */
    for (uint32_t k = 0; k < 10; k++) ENSURE(defs[k].type == ECS_F64);
    ENSURE(defs[10].type == ECS_ENTITY && strcmp(defs[10].name, "parent") == 0);
  } else {
    ENSURE(strcmp(cls->kind, "names") == 0 && strcmp(name, "names") == 0);
    ENSURE(n == 1 && defs[0].type == ECS_U8 && strcmp(defs[0].name, "name") == 0);
  }
  for (size_t i = 0; i < st->nt; i++)
    ENSURE(cls->has(st->w, self, st->t[i].e) == (model_has(&st->t[i], m) != 0));
  ENSURE(!cls->has(st->w, self, ECS_NULL));
  ENSURE(!cls->has(st->w, self, ecs_make_entity(ECS_MAX_ENTITIES, 7)));
}

/* ---------------------------------------------------------------------
** The journal (journal.h), the differential step for deltas: every 8th
** op, a replica of the world -- the same managers, loaded from its
** snapshot -- takes the journal's delta and must then have the world's
** state hash and pass its check. The step starts over (a new snapshot)
** when the world gains a manager (the replica lacks it), when a
** manager is loaded or cleared through its own hooks (bulk changes that,
** like listeners, the journal does not hear: world loads are what it
** hears), and when an armed allocation failure made the journal lose
** track. While a component has a lua field it stays off: the model
** checks when each ref is drained, and a journal keeps old ones longer.
** ------------------------------------------------------------------ */
static void journal_stop(state *st) {
  if (st->j != NULL) ecs_journal_close(st->w, st->j);
  if (st->rep != NULL) ecs_world_free(st->rep);
  st->j = NULL;
  st->rep = NULL;
}

static bool journal_allowed(const state *st) {
  for (size_t k = 0; k < st->ncomp; k++)
    for (uint32_t f = 0; f < st->comp[k].nf; f++)
      if (st->comp[k].ftype[f] == ECS_LUA) return false;
  return true;
}

/* A world with the managers of w, in w's order, loaded from w's snapshot. */
static ecs_world *replica_of(state *st) {
  ecs_world *r = ecs_world_new(NULL, NULL);
  ecs_writer out = membuf_writer(&st->buf[0]);
  ecs_reader in;
  ENSURE(r != NULL);
  for (size_t i = 0; i < ecs_manager_count(st->w); i++) {
    const ecs_manager_class *cls = NULL;
    const char *name = NULL;
    void *self = ecs_manager_at(st->w, i, &name, &cls);
    if (ecs_component_is(cls)) {
      const ecs_component *c = (const ecs_component *)self;
      ecs_field_def defs[8];
      ecs_component *made;
      uint32_t nf = ecs_component_field_count(c);
      ENSURE(nf <= 8);
      for (uint32_t f = 0; f < nf; f++) defs[f] = *ecs_component_field(c, f);
      ENSURE(ecs_component_new(r, name, nf ? defs : NULL, nf, &made) == ECS_ERR_OK);
    } else if (self == (void *)st->tr) {
      ENSURE(ecs_transform_new(r, NULL) == ECS_ERR_OK);
    } else {
      ENSURE(self == (void *)st->nm && ecs_names_new(r, NULL) == ECS_ERR_OK);
    }
  }
  st->buf[0].n = 0;
  ENSURE(ecs_world_save(st->w, &out) == ECS_ERR_OK);
  in.data = st->buf[0].p;
  in.size = st->buf[0].n;
  in.pos = 0;
  ENSURE(ecs_world_load(r, &in) == ECS_ERR_OK);
  return r;
}

static void journal_step(state *st) {
  const void *p;
  size_t n;
  ecs_delta d;
  uint64_t hw, hr;
  ecs_err err;
  if (!journal_allowed(st) || (st->j != NULL && st->rep_nman != ecs_manager_count(st->w))) {
    journal_stop(st);
    return;
  }
  if (st->j == NULL) {
    st->rep = replica_of(st);
    st->rep_nman = ecs_manager_count(st->w);
    ENSURE(ecs_journal_open(st->w, NULL, &st->j, NULL) == ECS_ERR_OK);
    return;
  }
  err = ecs_journal_delta(st->w, st->j, NULL, &p, &n, NULL);
  if (err == ECS_ERR_LOST) { /* an armed failure hit a capture */
    journal_stop(st);
    return;
  }
  ENSURE(err == ECS_ERR_OK);
  err = ecs_delta_open(st->rep, &d, p, n);
  if (err != ECS_ERR_OK) fprintf(stderr, "fuzz_ops: delta_open: %s\n", ecs_strerror(err));
  ENSURE(err == ECS_ERR_OK);
  err = ecs_delta_apply(st->rep, &d, NULL, NULL, NULL);
  if (err != ECS_ERR_OK) fprintf(stderr, "fuzz_ops: delta_apply: %s\n", ecs_strerror(err));
  ENSURE(err == ECS_ERR_OK);
  ecs_journal_mark(st->w, st->j);
  ENSURE(ecs_world_state_hash(st->w, NULL, &hw, NULL) == ECS_ERR_OK);
  ENSURE(ecs_world_state_hash(st->rep, NULL, &hr, NULL) == ECS_ERR_OK);
  ENSURE(hw == hr);
  ENSURE(ecs_world_check(st->rep) == NULL);
  /* the same next ids */
  {
    uint32_t a[3], b[3];
    ENSURE(ecs_next_indices(st->w, a, 3) == ecs_next_indices(st->rep, b, 3));
    ENSURE(ecs_next_indices(st->w, a, 3) != ECS_ERR_OK || memcmp(a, b, sizeof a) == 0);
  }
}

/* Op 12 is the entity walk; the other ops with op % 16 == 12 (0x1C ..
** 0xEC) use the manager interface of a manager chosen by the next byte,
** op >> 4 saying how. */
static void op_manager(state *st, input *in, uint8_t op) {
  int m = pick_manager(st, in);
  if (m < 0) return;
  if ((op >> 4) % 7 >= 1 && (op >> 4) % 7 <= 3) journal_stop(st); /* see there */
  switch ((op >> 4) % 7) {
  case 1: op_corrupt_load(st, in, m, 0); break;
  case 2: op_corrupt_load(st, in, m, 1); break;
  case 3: op_clear(st, m); break;
  case 4: op_listen(st, in, m); break;
  case 5: op_inspect(st, m); break;
  default: op_save_load(st, in, m); break; /* 0 and 6: the round trip */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static state s; /* large: not on the stack */
  state *st = &s;
  input in = {data, size, 0};
  memset(st, 0, sizeof *st);
  for (size_t k = 0; k < MAX_LISTENERS; k++) {
    st->lis[k].st = st;
    st->lis[k].mgr = -1;
  }
  st->w = ecs_world_new(test_allocf, &st->alloc);
  if (st->w == NULL) abort();
  while (in.at < in.n) {
    uint8_t op = byte(&in);
    st->ops++;
    if (op >= 0xF0) { /* arm: the k-th next allocation of the next op fails */
      st->alloc.fail_at = st->alloc.calls + 1 + (op & 0x0F);
      op = byte(&in);
    }
    if (op % 16 != 8 && op != 12 && op % 16 != 14) st->changes++;
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
    case 12: if (op == 12) op_walk(st); else op_manager(st, &in, op); break;
    case 13: op_transform(st, &in); break;
    case 14: op_query_iter(st, &in); break;
    default: op_query_new(st, &in); break;
    }
    st->alloc.fail_at = 0;
    compare(st);
    if (st->ops % 8 == 0) journal_step(st);
  }
  journal_stop(st);
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
  ENSURE(st->drained == st->written);
  ENSURE(ecs_world_check(st->w) == NULL);
  ecs_world_free(st->w);
  ENSURE(st->alloc.blocks == 0);
  for (size_t i = 0; i < st->nt; i++) model_set_name(&st->t[i], 0);
  for (size_t k = 0; k < 3; k++) free(st->buf[k].p);
  return 0;
}
