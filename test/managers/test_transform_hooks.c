/*
** test_transform_hooks.c -- the transform manager's class hooks (has,
** clear, stats, schema, save, load) and its notifications (transform.h,
** "Notifications"; ecs.h, ecs_manager_class and listeners). Core only.
*/
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "transform.h"
#include "../support/membuf.h" /* membuf: a growing buffer behind an ecs_writer */

/* ------------------------------------------------------------------------
** Fixtures
** --------------------------------------------------------------------- */

static ecs_world *new_world(test_alloc *a, ecs_transform **t) {
  ecs_world *w;
  memset(a, 0, sizeof *a);
  w = ecs_world_new(test_allocf, a);
  if (w != NULL && ecs_transform_new(w, t) != ECS_ERR_OK) {
    ecs_world_free(w);
    return NULL;
  }
  return w;
}

static const ecs_manager_class *class_of(const ecs_world *w) {
  const ecs_manager_class *cls = NULL;
  ecs_manager_find(w, "transform", &cls);
  return cls;
}

static ecs_trs trs(double px, double py, double pz, double qx, double qy,
                   double qz, double qw, double sx, double sy, double sz) {
  ecs_trs l = {{px, py, pz}, {qx, qy, qz, qw}, {sx, sy, sz}};
  return l;
}

static ecs_err save(ecs_world *w, ecs_transform *t, membuf *b) {
  ecs_writer wr = membuf_writer(b);
  b->n = 0;
  return class_of(w)->save(w, t, &wr);
}

static ecs_err load(ecs_world *w, ecs_transform *t, const unsigned char *data,
                    size_t size, size_t *pos) {
  ecs_reader in;
  ecs_err err;
  in.data = data;
  in.size = size;
  in.pos = 0;
  err = class_of(w)->load(w, t, &in);
  if (pos != NULL) *pos = in.pos;
  return err;
}

/* Hand-made streams: the layout of docs/transform.md, "Save and load". */
static void put_u32(membuf *b, uint32_t v) { membuf_write(b, &v, sizeof v); }
static void put_record(membuf *b, ecs_entity e, ecs_entity parent, uint8_t flags,
                       const ecs_trs *l, const double *world) {
  put_u32(b, e);
  put_u32(b, parent);
  membuf_write(b, &flags, 1);
  membuf_write(b, l, sizeof *l);
  if (world != NULL) membuf_write(b, world, 16 * sizeof(double));
}

/*
** Everything a failed load must leave as it was: the rows in order (dead
** ones included) with their entities and world matrices, what save
** writes, the stats and the world's memory.
*/
typedef struct fingerprint {
  membuf saved;
  uint32_t size;
  ecs_entity entity[256];
  double world[256][16];
  ecs_manager_stats stats;
  size_t memory;
} fingerprint;

static int take(ecs_world *w, ecs_transform *t, fingerprint *f) {
  const ecs_manager_class *cls = class_of(w);
  f->size = ecs_transform_size(t);
  if (f->size > 256) return 0;
  for (uint32_t i = 0; i < f->size; i++) {
    f->entity[i] = ecs_transform_entity_at(t, i);
    memcpy(f->world[i], ecs_transform_world_at(t, i), sizeof f->world[i]);
  }
  memset(&f->stats, 0, sizeof f->stats);
  cls->stats(w, t, &f->stats);
  f->memory = ecs_world_memory(w, NULL);
  return save(w, t, &f->saved) == ECS_ERR_OK;
}

static int same(ecs_world *w, ecs_transform *t, const fingerprint *f) {
  fingerprint g;
  int ok;
  memset(&g, 0, sizeof g);
  ok = take(w, t, &g) && g.size == f->size &&
       memcmp(g.entity, f->entity, f->size * sizeof f->entity[0]) == 0 &&
       memcmp(g.world, f->world, f->size * sizeof f->world[0]) == 0 &&
       g.stats.records == f->stats.records && g.stats.live == f->stats.live &&
       g.stats.bytes == f->stats.bytes && g.memory == f->memory &&
       g.saved.n == f->saved.n &&
       memcmp(g.saved.p, f->saved.p, f->saved.n) == 0;
  membuf_free(&g.saved);
  return ok;
}

/*
** A scene with everything save must handle, on entities 1..N of a world
** (the same handles in any world built the same way): a hierarchy with
** rotations and non-uniform scales; keep_world re-parenting (worlds that
** are not parent x local, sheared ones included); a destroyed parent
** whose children became roots with their world kept; a removed parent;
** a chain whose world matrices overflowed to inf; dead rows awaiting gc;
** entities without a transform. @return 0 if a step failed.
*/
#define SCENE_N 40
static int scene_entities(ecs_world *w, ecs_entity *e) {
  if (ecs_create_n(w, e, SCENE_N) != ECS_ERR_OK) return 0;
  /* 30 and 31 are destroyed: the same handles die in every copy */
  return ecs_destroy(w, e[30]) && ecs_destroy(w, e[31]);
}

static int scene_transforms(ecs_world *w, ecs_transform *t, ecs_entity *e) {
  ecs_trs l;
  for (int k = 0; k < 30; k++) {
    double a = 0.3 * k;
    l = trs(k, -k * 0.5, 2, sin(a), 0.2, cos(a), 0.7, 1 + k % 3, 1,
            0.5 + k % 2);
    if (ecs_transform_add(t, e[k], &l) != ECS_ERR_OK) return 0;
  }
  /* a tree: k under (k - 1) / 2 for k in 1..14 */
  for (int k = 1; k < 15; k++)
    if (ecs_transform_set_parent(t, e[k], e[(k - 1) / 2], false) != ECS_ERR_OK)
      return 0;
  /* keep_world moves: shear (non-uniform scale under rotated parents) */
  if (ecs_transform_set_parent(t, e[15], e[5], true) != ECS_ERR_OK) return 0;
  if (ecs_transform_set_parent(t, e[16], e[15], true) != ECS_ERR_OK) return 0;
  if (ecs_transform_set_parent(t, e[17], e[16], false) != ECS_ERR_OK) return 0;
  if (ecs_transform_set_parent(t, e[13], e[2], true) != ECS_ERR_OK) return 0;
  /* a destroyed parent: 18's children 19, 20 become roots, world kept */
  if (ecs_transform_set_parent(t, e[18], e[1], false) != ECS_ERR_OK) return 0;
  if (ecs_transform_set_parent(t, e[19], e[18], false) != ECS_ERR_OK) return 0;
  if (ecs_transform_set_parent(t, e[20], e[18], false) != ECS_ERR_OK) return 0;
  if (ecs_transform_set_parent(t, e[21], e[20], false) != ECS_ERR_OK) return 0;
  if (!ecs_destroy(w, e[18])) return 0;
  /* a removed parent: 23 becomes a root */
  if (ecs_transform_set_parent(t, e[23], e[22], false) != ECS_ERR_OK) return 0;
  if (ecs_transform_remove(t, e[22]) != ECS_ERR_OK) return 0;
  /* overflow: 26 under 25 under 24, scales 1e200: 26's world holds inf;
  ** then 25 dies, so 26 is a root whose world is not finite */
  l = trs(0, 0, 0, 0, 0, 0, 1, 1e200, 1e200, 1e200);
  if (ecs_transform_set_local(t, e[24], &l) != ECS_ERR_OK) return 0;
  if (ecs_transform_set_local(t, e[25], &l) != ECS_ERR_OK) return 0;
  if (ecs_transform_set_parent(t, e[25], e[24], false) != ECS_ERR_OK) return 0;
  if (ecs_transform_set_parent(t, e[26], e[25], false) != ECS_ERR_OK) return 0;
  if (ecs_transform_set_parent(t, e[27], e[24], false) != ECS_ERR_OK) return 0;
  if (!ecs_destroy(w, e[25])) return 0;
  /* 28, 29 and 32..39 have none; 29 had one and lost it */
  if (ecs_transform_remove(t, e[29]) != ECS_ERR_OK) return 0;
  return ecs_world_check(w) == NULL;
}

static int build_scene(ecs_world *w, ecs_transform *t, ecs_entity *e) {
  return scene_entities(w, e) && scene_transforms(w, t, e);
}

/* The world-matrix records of a stream written by save (-1: malformed). */
static long stored_worlds(const membuf *b) {
  size_t pos = 8;
  uint32_t count;
  long worlds = 0;
  if (b->n < 8) return -1;
  memcpy(&count, b->p + 4, 4);
  for (uint32_t k = 0; k < count; k++) {
    uint8_t flags;
    if (pos + 9 + 80 > b->n) return -1;
    flags = b->p[pos + 8];
    pos += 9 + 80;
    if (flags & 1u) {
      worlds++;
      pos += 128;
    }
  }
  return pos == b->n ? worlds : -1;
}

/* e has the same transform in both worlds, to the bit. */
static int same_transform(ecs_transform *a, ecs_transform *b, ecs_entity e) {
  ecs_trs la, lb;
  double wa[16], wb[16];
  ecs_entity ca, cb;
  if (ecs_transform_has(a, e) != ecs_transform_has(b, e)) return 0;
  if (!ecs_transform_has(a, e)) return 1;
  if (ecs_transform_get_local(a, e, &la) != ECS_ERR_OK ||
      ecs_transform_get_local(b, e, &lb) != ECS_ERR_OK ||
      memcmp(&la, &lb, sizeof la) != 0)
    return 0;
  if (ecs_transform_get_world(a, e, wa) != ECS_ERR_OK ||
      ecs_transform_get_world(b, e, wb) != ECS_ERR_OK ||
      memcmp(wa, wb, sizeof wa) != 0)
    return 0;
  if (ecs_transform_parent(a, e) != ecs_transform_parent(b, e)) return 0;
  ca = ecs_transform_first_child(a, e);
  cb = ecs_transform_first_child(b, e);
  while (ca == cb && ca != ECS_NULL) {
    ca = ecs_transform_next_sibling(a, ca);
    cb = ecs_transform_next_sibling(b, cb);
  }
  return ca == cb;
}

/* ------------------------------------------------------------------------
** has, schema, stats, clear
** --------------------------------------------------------------------- */

TEST(Hooks_has_and_schema) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  const ecs_manager_class *cls;
  ecs_entity e, f;
  ecs_field_def defs[16];
  static const char *const names[] = {
    "position_x", "position_y", "position_z", "rotation_x",
    "rotation_y", "rotation_z", "rotation_w", "scale_x",
    "scale_y",    "scale_z",    "parent"};
  CHECK(w != NULL);
  cls = class_of(w);
  CHECK(cls != NULL && cls->has && cls->clear && cls->stats && cls->schema &&
        cls->save && cls->load);
  CHECK(ecs_create(w, &e) == ECS_ERR_OK && ecs_create(w, &f) == ECS_ERR_OK);
  CHECK(ecs_transform_add(t, e, NULL) == ECS_ERR_OK);
  CHECK(cls->has(w, t, e));
  CHECK(!cls->has(w, t, f));
  CHECK(!cls->has(w, t, ECS_NULL));
  CHECK(ecs_destroy(w, e));
  CHECK(!cls->has(w, t, e)); /* its row waits for gc, unseen */
  /* the schema: the stored doubles and the parent */
  CHECK_EQ_INT(cls->schema(w, t, NULL, 0), 11);
  memset(defs, 0, sizeof defs);
  CHECK_EQ_INT(cls->schema(w, t, defs, 3), 11);
  CHECK(defs[2].name != NULL && strcmp(defs[2].name, "position_z") == 0);
  CHECK(defs[3].name == NULL); /* max respected */
  CHECK_EQ_INT(cls->schema(w, t, defs, 16), 11);
  for (int k = 0; k < 11; k++) {
    CHECK(strcmp(defs[k].name, names[k]) == 0);
    CHECK_EQ_INT(defs[k].type, k < 10 ? ECS_F64 : ECS_ENTITY);
  }
  CHECK(defs[11].name == NULL);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* bytes is every block the manager holds: the world's memory moves with
** it, and nothing else does, through every kind of change. */
TEST(Hooks_stats_follow_memory) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  const ecs_manager_class *cls;
  ecs_manager_stats st;
  ecs_entity e[SCENE_N];
  size_t rest, fresh;
  membuf b;
  memset(&b, 0, sizeof b);
  CHECK(w != NULL);
  cls = class_of(w);
  memset(&st, 0, sizeof st);
  cls->stats(w, t, &st);
  CHECK_EQ_INT(st.records, 0);
  CHECK_EQ_INT(st.live, 0);
  CHECK(st.bytes > 0); /* the manager itself */
  fresh = st.bytes;
#define REST() (memset(&st, 0, sizeof st), cls->stats(w, t, &st), \
                ecs_world_memory(w, NULL) - st.bytes)
  CHECK(scene_entities(w, e)); /* the entities' memory is not the manager's */
  rest = REST();
  CHECK(scene_transforms(w, t, e));
  CHECK_EQ_INT(REST(), rest);
  /* 28 records were added, 2 removed; 18 and 25 are dead rows */
  CHECK_EQ_INT(st.records, ecs_transform_size(t));
  CHECK_EQ_INT(st.records, 28);
  CHECK_EQ_INT(st.live, 26);
  CHECK(st.bytes > fresh + 28 * (16 + 10) * sizeof(double) + 4096);
  CHECK_EQ_INT(ecs_transform_sort(t), ECS_ERR_OK);
  CHECK_EQ_INT(REST(), rest);
  /* a map page far away */
  {
    ecs_entity far[1100];
    CHECK(ecs_create_n(w, far, 1100) == ECS_ERR_OK);
    rest = REST();
    CHECK(ecs_transform_add(t, far[1099], NULL) == ECS_ERR_OK);
    CHECK(ecs_entity_index(far[1099]) >= 1024);
    CHECK_EQ_INT(REST(), rest);
  }
  CHECK_EQ_INT(ecs_world_gc(w, SIZE_MAX), 2);
  CHECK_EQ_INT(REST(), rest);
  CHECK_EQ_INT(st.records, st.live);
  CHECK(save(w, t, &b) == ECS_ERR_OK);
  CHECK(load(w, t, b.p, b.n, NULL) == ECS_ERR_OK);
  CHECK_EQ_INT(REST(), rest);
  cls->clear(w, t);
  CHECK_EQ_INT(REST(), rest);
  CHECK_EQ_INT(st.bytes, fresh);
#undef REST
  membuf_free(&b);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

static ecs_err count_listener(ecs_world *w, void *m, ecs_entity e,
                              ecs_event ev, void *ud) {
  (void)w, (void)m, (void)e, (void)ev;
  ++*(int *)ud;
  return ECS_ERR_OK;
}

TEST(Hooks_clear_drops_everything) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  const ecs_manager_class *cls;
  ecs_manager_stats st;
  ecs_entity e[SCENE_N], g;
  int calls = 0;
  membuf b;
  memset(&b, 0, sizeof b);
  CHECK(w != NULL);
  cls = class_of(w);
  CHECK(build_scene(w, t, e));
  CHECK(ecs_manager_listen(w, t, ECS_EVENT_ADD | ECS_EVENT_REMOVE | ECS_EVENT_SET,
                           count_listener, &calls) == ECS_ERR_OK);
  cls->clear(w, t);
  CHECK_EQ_INT(calls, 0); /* clear notifies nobody */
  CHECK_WORLD(w);
  CHECK_EQ_INT(ecs_transform_size(t), 0);
  memset(&st, 0, sizeof st);
  cls->stats(w, t, &st);
  CHECK_EQ_INT(st.records, 0);
  for (int k = 0; k < SCENE_N; k++) {
    CHECK(!ecs_transform_has(t, e[k]));
    CHECK_EQ_INT(ecs_transform_parent(t, e[k]), ECS_NULL);
  }
  CHECK(save(w, t, &b) == ECS_ERR_OK);
  CHECK_EQ_INT(b.n, 8); /* format, count 0 */
  /* twice is harmless; the manager works as new, the setting kept */
  cls->clear(w, t);
  ecs_transform_set_parent_first(t, false);
  cls->clear(w, t);
  CHECK_EQ_INT(ecs_transform_add(t, e[3], NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_add(t, e[1], NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[3], e[1], false), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_lookup(t, e[3]), 0); /* no swap: setting kept */
  CHECK_EQ_INT(calls, 5); /* two adds (ADD, then SET each), set_parent */
  CHECK(ecs_create(w, &g) == ECS_ERR_OK);
  CHECK(!ecs_transform_has(t, g));
  CHECK_WORLD(w);
  membuf_free(&b);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* ------------------------------------------------------------------------
** save and load
** --------------------------------------------------------------------- */

TEST(Hooks_save_load_round_trip) {
  test_alloc a1, a2;
  ecs_transform *t1, *t2;
  ecs_world *w1 = new_world(&a1, &t1), *w2 = new_world(&a2, &t2);
  ecs_entity e[SCENE_N], f[SCENE_N];
  ecs_manager_stats st;
  membuf b, b2;
  size_t pos;
  memset(&b, 0, sizeof b);
  memset(&b2, 0, sizeof b2);
  CHECK(w1 != NULL && w2 != NULL);
  CHECK(build_scene(w1, t1, e));
  CHECK(scene_entities(w2, f));
  CHECK(memcmp(e, f, sizeof e) == 0); /* the same handles */
  /* w2 holds other records first: load replaces them */
  for (int k = 0; k < 10; k++) CHECK(ecs_transform_add(t2, f[k], NULL) == ECS_ERR_OK);
  CHECK(ecs_transform_set_parent(t2, f[0], f[9], false) == ECS_ERR_OK);
  CHECK(ecs_transform_add(t2, f[35], NULL) == ECS_ERR_OK);
  CHECK(save(w1, t1, &b) == ECS_ERR_OK);
  /* the worlds not recomputable from locals are stored, and only they */
  CHECK(stored_worlds(&b) >= 2); /* 16 (sheared), 26 (inf) at least */
  CHECK(stored_worlds(&b) < 26);
  CHECK(load(w2, t2, b.p, b.n, &pos) == ECS_ERR_OK);
  CHECK_EQ_INT(pos, b.n);
  CHECK_WORLD(w2);
  for (int k = 0; k < SCENE_N; k++) {
    if (!same_transform(t1, t2, e[k])) fprintf(stderr, "  entity %d\n", k);
    CHECK(same_transform(t1, t2, e[k]));
  }
  CHECK(!ecs_transform_has(t2, f[35]));
  memset(&st, 0, sizeof st);
  class_of(w2)->stats(w2, t2, &st);
  CHECK_EQ_INT(st.records, 26); /* live ones only */
  CHECK_EQ_INT(st.live, 26);
  /* saving the copy gives the same bytes */
  CHECK(save(w2, t2, &b2) == ECS_ERR_OK);
  CHECK(b2.n == b.n && memcmp(b.p, b2.p, b.n) == 0);
  /* the copy is laid out depth first: parents before children */
  for (int k = 0; k < SCENE_N; k++) {
    ecs_entity p = ecs_transform_parent(t2, e[k]);
    if (p != ECS_NULL)
      CHECK(ecs_transform_lookup(t2, p) < ecs_transform_lookup(t2, e[k]));
  }
  /* and it moves like the original */
  for (int k = 0; k < 3; k++) {
    CHECK(ecs_transform_set_position(t1, e[k], 1, k, 3) == ECS_ERR_OK);
    CHECK(ecs_transform_set_position(t2, e[k], 1, k, 3) == ECS_ERR_OK);
  }
  CHECK(ecs_transform_set_parent(t1, e[20], e[0], true) == ECS_ERR_OK);
  CHECK(ecs_transform_set_parent(t2, e[20], e[0], true) == ECS_ERR_OK);
  for (int k = 0; k < SCENE_N; k++) CHECK(same_transform(t1, t2, e[k]));
  /* loading into the world that saved works too (same entities) */
  CHECK(save(w1, t1, &b) == ECS_ERR_OK);
  CHECK(load(w1, t1, b.p, b.n, NULL) == ECS_ERR_OK);
  CHECK_WORLD(w1);
  for (int k = 0; k < SCENE_N; k++) CHECK(same_transform(t1, t2, e[k]));
  membuf_free(&b);
  membuf_free(&b2);
  ecs_world_free(w1);
  ecs_world_free(w2);
  CHECK_EQ_INT(a1.blocks, 0);
  CHECK_EQ_INT(a2.blocks, 0);
}

TEST(Hooks_save_reports_writer_errors) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity e[SCENE_N];
  membuf b;
  size_t full;
  memset(&b, 0, sizeof b);
  CHECK(w != NULL);
  CHECK(build_scene(w, t, e));
  CHECK(save(w, t, &b) == ECS_ERR_OK);
  full = b.n;
  b.limit_err = ECS_ERR_LOCKED; /* an error no other part gives */
  for (size_t limit = 1; limit < full; limit += 7) {
    b.limit = limit;
    CHECK_EQ_INT(save(w, t, &b), ECS_ERR_LOCKED); /* the writer's own */
  }
  b.limit = full;
  CHECK_EQ_INT(save(w, t, &b), ECS_ERR_OK);
  membuf_free(&b);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* A world (w2, t2) holding scene entities with a few records of its own,
** to load into. */
static int load_target(ecs_world *w, ecs_transform *t, ecs_entity *f) {
  if (!scene_entities(w, f)) return 0;
  for (int k = 0; k < 6; k++)
    if (ecs_transform_add(t, f[k * 5], NULL) != ECS_ERR_OK) return 0;
  if (ecs_transform_set_parent(t, f[5], f[0], false) != ECS_ERR_OK) return 0;
  if (!ecs_destroy(w, f[25])) return 0; /* a dead row (dead in the scene too) */
  return 1;
}

/*
** Every prefix of a valid stream is refused, and every stream with one
** byte changed either loads into a consistent manager or is refused;
** refusals change nothing (rows, worlds, saved bytes, memory).
*/
TEST(Hooks_load_truncated_or_flipped) {
  test_alloc a1, a2;
  ecs_transform *t1, *t2;
  ecs_world *w1 = new_world(&a1, &t1), *w2 = new_world(&a2, &t2);
  ecs_entity e[SCENE_N], f[SCENE_N];
  static const unsigned char masks[] = {0x01, 0x80, 0xff, 0x10};
  fingerprint before;
  membuf b;
  unsigned char *copy;
  long loaded = 0, refused = 0;
  memset(&b, 0, sizeof b);
  memset(&before, 0, sizeof before);
  CHECK(w1 != NULL && w2 != NULL);
  CHECK(build_scene(w1, t1, e));
  CHECK(load_target(w2, t2, f));
  CHECK(save(w1, t1, &b) == ECS_ERR_OK);
  CHECK(take(w2, t2, &before));
  /* the reference is the state a load of that gives (a successful load
  ** below is undone by loading it again) */
  CHECK(load(w2, t2, before.saved.p, before.saved.n, NULL) == ECS_ERR_OK);
  CHECK(take(w2, t2, &before));
  copy = (unsigned char *)malloc(b.n);
  CHECK(copy != NULL);
  for (size_t len = 0; len < b.n; len++) {
    size_t pos = 99;
    memcpy(copy, b.p, len);
    if (load(w2, t2, copy, len, &pos) != ECS_ERR_CORRUPT) {
      fprintf(stderr, "  prefix of %zu bytes\n", len);
      CHECK(0);
    }
    CHECK_EQ_INT(pos, 0);
    CHECK(same(w2, t2, &before));
  }
  CHECK_WORLD(w2);
  for (size_t i = 0; i < b.n; i++)
    for (size_t m = 0; m < sizeof masks; m++) {
      ecs_err err;
      memcpy(copy, b.p, b.n);
      copy[i] ^= masks[m];
      err = load(w2, t2, copy, b.n, NULL);
      if (err == ECS_ERR_OK) {
        const char *bad = ecs_world_check(w2);
        if (bad != NULL) fprintf(stderr, "  byte %zu ^ %#x: %s\n", i, masks[m], bad);
        CHECK(bad == NULL);
        loaded++;
        /* back to the original state for the next round */
        CHECK(load(w2, t2, before.saved.p, before.saved.n, NULL) == ECS_ERR_OK);
        continue;
      }
      if (err != ECS_ERR_CORRUPT)
        fprintf(stderr, "  byte %zu ^ %#x: %s\n", i, masks[m], ecs_strerror(err));
      CHECK_EQ_INT(err, ECS_ERR_CORRUPT);
      refused++;
      CHECK(same(w2, t2, &before));
    }
  CHECK_WORLD(w2);
  /* both outcomes happen (changed doubles are often still valid) */
  CHECK(loaded > 0 && refused > 0);
  free(copy);
  membuf_free(&b);
  membuf_free(&before.saved);
  ecs_world_free(w1);
  ecs_world_free(w2);
  CHECK_EQ_INT(a1.blocks, 0);
  CHECK_EQ_INT(a2.blocks, 0);
}

/*
** Hand-made streams: each refused with ECS_ERR_CORRUPT, nothing changed;
** and the valid ones they are made from load.
*/
TEST(Hooks_load_refuses_bad_streams) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity e[SCENE_N];
  ecs_trs id = trs(0, 0, 0, 0, 0, 0, 1, 1, 1, 1), l;
  double m[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 5, 6, 7, 1};
  fingerprint before;
  membuf b;
  long calls;
  size_t pos;
  memset(&b, 0, sizeof b);
  memset(&before, 0, sizeof before);
  CHECK(w != NULL);
  CHECK(load_target(w, t, e));
  CHECK(take(w, t, &before));
#define STREAM(count) (b.n = 0, put_u32(&b, 1), put_u32(&b, (count)))
#define REFUSED()                                                    \
  do {                                                               \
    CHECK_EQ_INT(load(w, t, b.p, b.n, &pos), ECS_ERR_CORRUPT);       \
    CHECK_EQ_INT(pos, 0);                                            \
    CHECK(same(w, t, &before));                                      \
    CHECK_WORLD(w);                                                  \
  } while (0)
  /* a valid one: 1 <- 2 <- 3, and 4 a root */
  STREAM(4);
  put_record(&b, e[1], ECS_NULL, 0, &id, NULL);
  put_record(&b, e[2], e[1], 0, &id, NULL);
  put_record(&b, e[3], e[2], 1, &id, m);
  put_record(&b, e[4], ECS_NULL, 0, &id, NULL);
  put_u32(&b, 0xdeadbeef); /* bytes after the stream are not load's */
  CHECK_EQ_INT(load(w, t, b.p, b.n, &pos), ECS_ERR_OK);
  CHECK_EQ_INT(pos, b.n - 4);
  CHECK_WORLD(w);
  CHECK_EQ_INT(ecs_transform_parent(t, e[3]), e[2]);
  {
    double got[16];
    CHECK(ecs_transform_get_world(t, e[3], got) == ECS_ERR_OK);
    CHECK(memcmp(got, m, sizeof m) == 0); /* stored world, as it was */
  }
  CHECK(load(w, t, before.saved.p, before.saved.n, NULL) == ECS_ERR_OK);
  CHECK(take(w, t, &before)); /* the reloaded state is the reference */
  /* format, count */
  b.n = 0, put_u32(&b, 2), put_u32(&b, 0);
  REFUSED();
  STREAM(1); /* a record short */
  REFUSED();
  /* a count the bytes cannot hold: refused before any allocation */
  STREAM(1000000);
  put_record(&b, e[1], ECS_NULL, 0, &id, NULL);
  calls = a.calls;
  CHECK_EQ_INT(load(w, t, b.p, b.n, NULL), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(a.calls, calls);
  REFUSED();
  STREAM(0xffffffffu);
  REFUSED();
  /* cycles: a parent must come before its child */
  STREAM(2);
  put_record(&b, e[1], e[2], 0, &id, NULL);
  put_record(&b, e[2], e[1], 0, &id, NULL);
  REFUSED();
  STREAM(1);
  put_record(&b, e[1], e[1], 0, &id, NULL); /* its own parent */
  REFUSED();
  STREAM(3);
  put_record(&b, e[1], ECS_NULL, 0, &id, NULL);
  put_record(&b, e[2], e[3], 0, &id, NULL);
  put_record(&b, e[3], e[2], 0, &id, NULL);
  REFUSED();
  /* dangling parents: alive but not in the stream, dead, forged */
  STREAM(1);
  put_record(&b, e[1], e[2], 0, &id, NULL);
  REFUSED();
  STREAM(2);
  put_record(&b, e[1], ECS_NULL, 0, &id, NULL);
  put_record(&b, e[2], e[30], 0, &id, NULL);
  REFUSED();
  STREAM(2);
  put_record(&b, e[1], ECS_NULL, 0, &id, NULL);
  put_record(&b, e[2], e[1] | ECS_PURGED, 0, &id, NULL);
  REFUSED();
  STREAM(2); /* a newer generation of a parent that is in the stream */
  put_record(&b, e[1], ECS_NULL, 0, &id, NULL);
  put_record(&b, e[2], ecs_make_entity(ecs_entity_index(e[1]), 1), 0, &id, NULL);
  REFUSED();
  /* entities: dead, stale, null, forged above 30 bits, repeated */
  STREAM(1);
  put_record(&b, e[30], ECS_NULL, 0, &id, NULL);
  REFUSED();
  STREAM(1);
  put_record(&b, ECS_NULL, ECS_NULL, 0, &id, NULL);
  REFUSED();
  STREAM(1);
  put_record(&b, 1u << 30, ECS_NULL, 0, &id, NULL); /* index 0, "free" */
  REFUSED();
  STREAM(1);
  put_record(&b, e[1] | (1u << 30), ECS_NULL, 0, &id, NULL);
  REFUSED();
  STREAM(2);
  put_record(&b, e[1], ECS_NULL, 0, &id, NULL);
  put_record(&b, e[1], ECS_NULL, 0, &id, NULL);
  REFUSED();
  STREAM(3);
  put_record(&b, e[1], ECS_NULL, 0, &id, NULL);
  put_record(&b, e[2], e[1], 0, &id, NULL);
  put_record(&b, e[2], ECS_NULL, 0, &id, NULL);
  REFUSED();
  /* flags */
  STREAM(1);
  put_record(&b, e[1], ECS_NULL, 2, &id, NULL);
  REFUSED();
  /* numbers: non-finite, zero or non-unit rotation */
  {
    const double bad[] = {(double)NAN, (double)INFINITY, -(double)INFINITY};
    for (int field = 0; field < 10; field++)
      for (int k = 0; k < 3; k++) {
        double *v = field < 3 ? &l.position[field]
                    : field < 7 ? &l.rotation[field - 3]
                                : &l.scale[field - 7];
        l = id;
        *v = bad[k];
        STREAM(1);
        put_record(&b, e[1], ECS_NULL, 0, &l, NULL);
        REFUSED();
      }
  }
  l = trs(0, 0, 0, 0, 0, 0, 0, 1, 1, 1);
  STREAM(1);
  put_record(&b, e[1], ECS_NULL, 0, &l, NULL);
  REFUSED();
  l = trs(0, 0, 0, 0, 0, 0, 2, 1, 1, 1); /* setters normalize, load does not */
  STREAM(1);
  put_record(&b, e[1], ECS_NULL, 0, &l, NULL);
  REFUSED();
  l = trs(0, 0, 0, 0, 0, 0, 1.0 + 1e-8, 1, 1, 1);
  STREAM(1);
  put_record(&b, e[1], ECS_NULL, 0, &l, NULL);
  REFUSED();
  /* a stored world must be affine; its other entries may be anything an
  ** overflow leaves (inf, NaN) */
  for (int k = 3; k < 16; k += 4) {
    double mm[16];
    memcpy(mm, m, sizeof mm);
    mm[k] = k == 15 ? 0.5 : 1e-300;
    STREAM(1);
    put_record(&b, e[1], ECS_NULL, 1, &id, mm);
    REFUSED();
  }
  {
    double mm[16];
    memcpy(mm, m, sizeof mm);
    mm[0] = (double)INFINITY;
    mm[5] = (double)NAN;
    STREAM(1);
    put_record(&b, e[1], ECS_NULL, 1, &id, mm);
    CHECK_EQ_INT(load(w, t, b.p, b.n, NULL), ECS_ERR_OK);
    CHECK_WORLD(w);
  }
#undef STREAM
#undef REFUSED
  membuf_free(&b);
  membuf_free(&before.saved);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* The k-th allocation of load fails, for every k: ECS_ERR_NOMEM and the
** manager unchanged (no block leaked), until load needs no more. */
TEST(Hooks_load_out_of_memory) {
  test_alloc a1, a2;
  ecs_transform *t1, *t2;
  ecs_world *w1 = new_world(&a1, &t1), *w2 = new_world(&a2, &t2);
  ecs_entity e[SCENE_N], f[SCENE_N], far[2100], far2[2100];
  fingerprint before;
  membuf b;
  int nomem = 0, done = 0;
  memset(&b, 0, sizeof b);
  memset(&before, 0, sizeof before);
  CHECK(w1 != NULL && w2 != NULL);
  CHECK(build_scene(w1, t1, e));
  CHECK(load_target(w2, t2, f));
  /* records on three map pages, so load allocates several blocks */
  CHECK(ecs_create_n(w1, far, 2100) == ECS_ERR_OK);
  CHECK(ecs_create_n(w2, far2, 2100) == ECS_ERR_OK);
  CHECK(memcmp(far, far2, sizeof far) == 0);
  CHECK(ecs_transform_add(t1, far[1500], NULL) == ECS_ERR_OK);
  CHECK(ecs_transform_add(t1, far[2099], NULL) == ECS_ERR_OK);
  CHECK(ecs_transform_set_parent(t1, far[2099], e[0], false) == ECS_ERR_OK);
  CHECK(save(w1, t1, &b) == ECS_ERR_OK);
  CHECK(take(w2, t2, &before));
  for (long k = 1; k < 50 && !done; k++) {
    long blocks = a2.blocks;
    ecs_err err;
    a2.fail_at = a2.calls + k;
    err = load(w2, t2, b.p, b.n, NULL);
    a2.fail_at = 0;
    if (err == ECS_ERR_NOMEM) {
      nomem++;
      CHECK_EQ_INT(a2.blocks, blocks);
      CHECK(same(w2, t2, &before));
      CHECK_WORLD(w2);
      continue;
    }
    CHECK_EQ_INT(err, ECS_ERR_OK);
    done = 1;
  }
  CHECK(done);
  CHECK(nomem >= 4); /* rows, directory, pages */
  CHECK_WORLD(w2);
  for (int k = 0; k < SCENE_N; k++) CHECK(same_transform(t1, t2, e[k]));
  CHECK(same_transform(t1, t2, far[2099]));
  membuf_free(&b);
  membuf_free(&before.saved);
  ecs_world_free(w1);
  ecs_world_free(w2);
  CHECK_EQ_INT(a1.blocks, 0);
  CHECK_EQ_INT(a2.blocks, 0);
}

/* ------------------------------------------------------------------------
** Notifications
** --------------------------------------------------------------------- */

/* What a listener saw: the event, the entity, and the state then. */
typedef struct seen {
  ecs_event event;
  ecs_entity e;
  bool has;
  ecs_trs local;
  double world[16];
  ecs_entity parent;
} seen;

typedef struct log_ud {
  ecs_transform *t;
  seen ev[64];
  int n;
  ecs_err reply;  /* what the listener returns */
  ecs_entity probe; /* an entity whose local is recorded as probe_x */
  double probe_x[64];
} log_ud;

static ecs_err log_listener(ecs_world *w, void *m, ecs_entity e, ecs_event ev,
                            void *ud) {
  log_ud *lg = (log_ud *)ud;
  seen *s;
  (void)w;
  if (m != lg->t || lg->n >= 64) return ECS_ERR_INVALID;
  s = &lg->ev[lg->n];
  memset(s, 0, sizeof *s);
  s->event = ev;
  s->e = e;
  s->has = ecs_transform_has(lg->t, e);
  ecs_transform_get_local(lg->t, e, &s->local);
  ecs_transform_get_world(lg->t, e, s->world);
  s->parent = ecs_transform_parent(lg->t, e);
  if (lg->probe != ECS_NULL) {
    ecs_trs pl;
    lg->probe_x[lg->n] = ecs_transform_get_local(lg->t, lg->probe, &pl) == ECS_ERR_OK
                             ? pl.position[0]
                             : -1;
  }
  lg->n++;
  return lg->reply;
}

TEST(Notify_add_set_remove_see_the_record) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity e[4];
  ecs_trs l = trs(1, 2, 3, 0, 0, 0, 1, 2, 2, 2), bad;
  log_ud lg;
  memset(&lg, 0, sizeof lg);
  lg.t = t;
  CHECK(w != NULL);
  CHECK(ecs_create_n(w, e, 4) == ECS_ERR_OK);
  CHECK(ecs_manager_listen(w, t, ECS_EVENT_ADD | ECS_EVENT_REMOVE | ECS_EVENT_SET,
                           log_listener, &lg) == ECS_ERR_OK);
  /* ADD, with the initial values readable, then SET (values written) */
  CHECK_EQ_INT(ecs_transform_add(t, e[0], &l), ECS_ERR_OK);
  CHECK_EQ_INT(lg.n, 2);
  CHECK(lg.ev[0].event == ECS_EVENT_ADD && lg.ev[0].e == e[0] && lg.ev[0].has);
  CHECK(lg.ev[0].local.position[2] == 3 && lg.ev[0].world[12] == 1);
  CHECK(lg.ev[1].event == ECS_EVENT_SET && lg.ev[1].e == e[0] && lg.ev[1].has);
  CHECK(lg.ev[1].local.position[2] == 3 && lg.ev[1].world[12] == 1);
  CHECK_EQ_INT(ecs_transform_add(t, e[1], NULL), ECS_ERR_OK);
  CHECK_EQ_INT(lg.n, 4);
  lg.n = 2; /* the numbering below counts from the second add's two */
  /* add to an entity that has one: a write, SET */
  l.position[0] = 7;
  CHECK_EQ_INT(ecs_transform_add(t, e[0], &l), ECS_ERR_OK);
  CHECK(lg.n == 3 && lg.ev[2].event == ECS_EVENT_SET && lg.ev[2].local.position[0] == 7);
  /* each setter: SET after, the new values and the world readable */
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[1], e[0], false), ECS_ERR_OK);
  CHECK(lg.n == 4 && lg.ev[3].event == ECS_EVENT_SET && lg.ev[3].e == e[1]);
  CHECK(lg.ev[3].parent == e[0] && lg.ev[3].world[12] == 7);
  CHECK_EQ_INT(ecs_transform_set_position(t, e[1], 5, 0, 0), ECS_ERR_OK);
  CHECK(lg.n == 5 && lg.ev[4].local.position[0] == 5 && lg.ev[4].world[12] == 17);
  CHECK_EQ_INT(ecs_transform_set_rotation(t, e[1], 0, 0, 0, 3), ECS_ERR_OK);
  CHECK(lg.n == 6 && lg.ev[5].local.rotation[3] == 1);
  CHECK_EQ_INT(ecs_transform_set_scale(t, e[1], 4, 4, 4), ECS_ERR_OK);
  CHECK(lg.n == 7 && lg.ev[6].local.scale[1] == 4 && lg.ev[6].world[5] == 8);
  CHECK_EQ_INT(ecs_transform_set_local(t, e[1], &l), ECS_ERR_OK);
  CHECK(lg.n == 8 && lg.ev[7].event == ECS_EVENT_SET);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[1], ECS_NULL, true), ECS_ERR_OK);
  CHECK(lg.n == 9 && lg.ev[8].parent == ECS_NULL);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[1], e[0], false), ECS_ERR_OK);
  CHECK_EQ_INT(lg.n, 10);
  /* failed calls notify nobody */
  bad = l;
  bad.scale[0] = (double)NAN;
  CHECK_EQ_INT(ecs_transform_set_local(t, e[1], &bad), ECS_ERR_NOT_FINITE);
  CHECK_EQ_INT(ecs_transform_add(t, e[2], &bad), ECS_ERR_NOT_FINITE);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[0], e[1], false), ECS_ERR_CYCLE);
  CHECK_EQ_INT(ecs_transform_set_position(t, e[2], 1, 1, 1), ECS_ERR_MISSING);
  CHECK_EQ_INT(ecs_transform_remove(t, e[2]), ECS_ERR_MISSING);
  CHECK_EQ_INT(lg.n, 10);
  /* REMOVE first, with the record whole (parent still set) */
  CHECK(ecs_transform_get_local(t, e[1], &l) == ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_remove(t, e[1]), ECS_ERR_OK);
  CHECK(lg.n == 11 && lg.ev[10].event == ECS_EVENT_REMOVE && lg.ev[10].has);
  CHECK(lg.ev[10].parent == e[0]);
  CHECK(memcmp(&lg.ev[10].local, &l, sizeof l) == 0);
  CHECK(!ecs_transform_has(t, e[1]));
  /* destroy reports REMOVE (e alive, its record in place); gc, sort,
  ** clear, load notify nobody */
  CHECK(ecs_transform_add(t, e[3], NULL) == ECS_ERR_OK);
  CHECK(ecs_transform_set_parent(t, e[3], e[0], false) == ECS_ERR_OK);
  lg.n = 0;
  CHECK(ecs_destroy(w, e[0]));
  CHECK_EQ_INT(lg.n, 1);
  lg.n = 0;
  CHECK_EQ_INT(ecs_world_gc(w, SIZE_MAX), 1);
  CHECK(ecs_transform_sort(t) == ECS_ERR_OK);
  {
    membuf b;
    memset(&b, 0, sizeof b);
    CHECK(save(w, t, &b) == ECS_ERR_OK);
    CHECK(load(w, t, b.p, b.n, NULL) == ECS_ERR_OK);
    membuf_free(&b);
  }
  class_of(w)->clear(w, t);
  CHECK_EQ_INT(lg.n, 0);
  /* masks: only the events asked for */
  CHECK(ecs_manager_unlisten(w, t, log_listener, &lg));
  CHECK(ecs_manager_listen(w, t, ECS_EVENT_REMOVE, log_listener, &lg) == ECS_ERR_OK);
  CHECK(ecs_transform_add(t, e[3], NULL) == ECS_ERR_OK);
  CHECK(ecs_transform_set_position(t, e[3], 1, 1, 1) == ECS_ERR_OK);
  CHECK_EQ_INT(lg.n, 0);
  CHECK(ecs_transform_remove(t, e[3]) == ECS_ERR_OK);
  CHECK_EQ_INT(lg.n, 1);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* A listener's error is the call's result; the change stands. */
TEST(Notify_listener_error_is_returned) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity e[3];
  ecs_trs l;
  log_ud lg;
  memset(&lg, 0, sizeof lg);
  lg.t = t;
  lg.reply = ECS_ERR_LOCKED;
  CHECK(w != NULL);
  CHECK(ecs_create_n(w, e, 3) == ECS_ERR_OK);
  CHECK(ecs_transform_add(t, e[1], NULL) == ECS_ERR_OK);
  CHECK(ecs_manager_listen(w, t, ECS_EVENT_ADD | ECS_EVENT_REMOVE | ECS_EVENT_SET,
                           log_listener, &lg) == ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_add(t, e[0], NULL), ECS_ERR_LOCKED);
  CHECK(ecs_transform_has(t, e[0]));
  CHECK_EQ_INT(ecs_transform_set_position(t, e[0], 4, 5, 6), ECS_ERR_LOCKED);
  CHECK(ecs_transform_get_local(t, e[0], &l) == ECS_ERR_OK && l.position[1] == 5);
  CHECK_EQ_INT(ecs_transform_set_parent(t, e[0], e[1], false), ECS_ERR_LOCKED);
  CHECK_EQ_INT(ecs_transform_parent(t, e[0]), e[1]);
  CHECK_EQ_INT(ecs_transform_remove(t, e[1]), ECS_ERR_LOCKED);
  CHECK(!ecs_transform_has(t, e[1]));
  CHECK_EQ_INT(ecs_transform_parent(t, e[0]), ECS_NULL);
  CHECK_EQ_INT(lg.n, 4);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* A listener failing on one node of destroy_tree: the error is returned
** (ecs_transform_destroy_tree_report), the walk stops after that node
** died (children first), the rest of the tree stays. */
static ecs_err fail_on(ecs_world *w, void *m, ecs_entity e, ecs_event ev,
                       void *ud) {
  (void)w;
  (void)m;
  (void)ev;
  return e == *(const ecs_entity *)ud ? ECS_ERR_LOCKED : ECS_ERR_OK;
}

TEST(Notify_destroy_tree_returns_a_listener_error) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity e[4], fail;
  size_t done = 99;
  CHECK(w != NULL);
  CHECK(ecs_create_n(w, e, 4) == ECS_ERR_OK);
  for (int k = 0; k < 4; k++) CHECK(ecs_transform_add(t, e[k], NULL) == ECS_ERR_OK);
  /* e0 <- e1 <- e2, e0 <- e3 */
  CHECK(ecs_transform_set_parent(t, e[1], e[0], false) == ECS_ERR_OK);
  CHECK(ecs_transform_set_parent(t, e[2], e[1], false) == ECS_ERR_OK);
  CHECK(ecs_transform_set_parent(t, e[3], e[0], false) == ECS_ERR_OK);
  fail = e[1];
  CHECK(ecs_manager_listen(w, t, ECS_EVENT_REMOVE, fail_on, &fail) == ECS_ERR_OK);
  CHECK_EQ_INT(ecs_transform_destroy_tree_report(t, e[0], &done), ECS_ERR_LOCKED);
  CHECK_EQ_INT(done, 2);
  CHECK(!ecs_alive(w, e[2]) && !ecs_alive(w, e[1]));
  CHECK(ecs_alive(w, e[0]) && ecs_alive(w, e[3]));
  CHECK_EQ_INT(ecs_transform_parent(t, e[3]), e[0]);
  CHECK_WORLD(w);
  /* no failure left: the rest goes */
  CHECK_EQ_INT(ecs_transform_destroy_tree_report(t, e[0], &done), ECS_ERR_OK);
  CHECK_EQ_INT(done, 2);
  CHECK_EQ_INT(ecs_transform_destroy_tree_report(t, e[0], &done), ECS_ERR_OK);
  CHECK_EQ_INT(done, 0);
  /* the plain call drops the error and goes on, as ecs_destroy_n does */
  CHECK(ecs_create_n(w, e, 3) == ECS_ERR_OK);
  for (int k = 0; k < 3; k++) CHECK(ecs_transform_add(t, e[k], NULL) == ECS_ERR_OK);
  CHECK(ecs_transform_set_parent(t, e[1], e[0], false) == ECS_ERR_OK);
  CHECK(ecs_transform_set_parent(t, e[2], e[0], false) == ECS_ERR_OK);
  fail = e[1];
  CHECK_EQ_INT(ecs_transform_destroy_tree(t, e[0]), 3);
  CHECK(!ecs_alive(w, e[0]));
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

TEST(Notify_batches_once_per_entity_after_the_batch) {
  test_alloc a;
  ecs_transform *t;
  ecs_world *w = new_world(&a, &t);
  ecs_entity e[4];
  uint32_t rows[5];
  double xyz[15];
  ecs_trs locals[5];
  long calls;
  log_ud lg;
  memset(&lg, 0, sizeof lg);
  lg.t = t;
  CHECK(w != NULL);
  CHECK(ecs_create_n(w, e, 4) == ECS_ERR_OK);
  for (int k = 0; k < 4; k++) CHECK(ecs_transform_add(t, e[k], NULL) == ECS_ERR_OK);
  CHECK(ecs_transform_set_parent(t, e[1], e[0], false) == ECS_ERR_OK);
  ecs_transform_lookup_n(t, e, rows, 4);
  /* no listener: the batch allocates nothing */
  for (int k = 0; k < 15; k++) xyz[k] = k;
  calls = a.calls;
  CHECK(ecs_transform_set_positions(t, rows, xyz, 4) == ECS_ERR_OK);
  CHECK_EQ_INT(a.calls, calls);
  CHECK(ecs_manager_listen(w, t, ECS_EVENT_SET, log_listener, &lg) == ECS_ERR_OK);
  /* 3, 1, 3 (duplicate), 2: SET for 3, 1, 2 in that order, the last
  ** entity's value already written when the first is notified */
  rows[0] = ecs_transform_lookup(t, e[3]);
  rows[1] = ecs_transform_lookup(t, e[1]);
  rows[2] = rows[0];
  rows[3] = ecs_transform_lookup(t, e[2]);
  for (int k = 0; k < 12; k++) xyz[k] = 100 + k;
  lg.probe = e[2];
  CHECK_EQ_INT(ecs_transform_set_positions(t, rows, xyz, 4), ECS_ERR_OK);
  CHECK_EQ_INT(lg.n, 3);
  CHECK(lg.ev[0].e == e[3] && lg.ev[1].e == e[1] && lg.ev[2].e == e[2]);
  CHECK(lg.ev[0].local.position[0] == 106); /* the last duplicate won */
  CHECK(lg.probe_x[0] == 109);
  CHECK(lg.ev[1].world[12] == 103 + 0); /* e[1] under e[0] at 0 */
  /* set_locals likewise */
  lg.n = 0;
  for (int k = 0; k < 5; k++) locals[k] = trs(k, 0, 0, 0, 0, 0, 1, 1, 1, 1);
  rows[4] = rows[1];
  CHECK_EQ_INT(ecs_transform_set_locals(t, rows, locals, 5), ECS_ERR_OK);
  CHECK_EQ_INT(lg.n, 3);
  CHECK(lg.ev[1].e == e[1] && lg.ev[1].local.position[0] == 4);
  CHECK(lg.probe_x[0] == 3);
  /* an error stops the notifications; the batch stands */
  lg.n = 0;
  lg.reply = ECS_ERR_LOCKED;
  for (int k = 0; k < 12; k++) xyz[k] = 200;
  CHECK_EQ_INT(ecs_transform_set_positions(t, rows, xyz, 4), ECS_ERR_LOCKED);
  CHECK_EQ_INT(lg.n, 1);
  CHECK(lg.probe_x[0] == 200);
  lg.reply = ECS_ERR_OK;
  /* invalid batches notify nobody, out of memory writes nothing */
  lg.n = 0;
  xyz[4] = (double)NAN;
  CHECK_EQ_INT(ecs_transform_set_positions(t, rows, xyz, 4), ECS_ERR_NOT_FINITE);
  xyz[4] = 300;
  for (int k = 0; k < 12; k++) xyz[k] = 300;
  a.fail_at = a.calls + 1;
  CHECK_EQ_INT(ecs_transform_set_positions(t, rows, xyz, 4), ECS_ERR_NOMEM);
  a.fail_at = a.calls + 1;
  CHECK_EQ_INT(ecs_transform_set_locals(t, rows, locals, 4), ECS_ERR_NOMEM);
  a.fail_at = 0;
  CHECK_EQ_INT(lg.n, 0);
  {
    ecs_trs l;
    CHECK(ecs_transform_get_local(t, e[2], &l) == ECS_ERR_OK);
    CHECK(l.position[0] == 200);
  }
  CHECK_EQ_INT(ecs_transform_set_positions(t, rows, xyz, 0), ECS_ERR_OK);
  CHECK_EQ_INT(lg.n, 0);
  CHECK_WORLD(w);
  ecs_world_free(w);
  CHECK_EQ_INT(a.blocks, 0);
}

/* ------------------------------------------------------------------------
** Listeners that change the world while they are notified
** --------------------------------------------------------------------- */

typedef struct hostile {
  ecs_transform *t;
  ecs_world *w;
  ecs_entity e[12];
  int mode, fired;
  ecs_entity notified[32];
  int n;
} hostile;

/*
** Each mode does something that moves rows or kills entities the manager
** was working on. It acts once (fired), then only records.
*/
static ecs_err hostile_listener(ecs_world *w, void *m, ecs_entity e,
                                ecs_event ev, void *ud) {
  hostile *h = (hostile *)ud;
  ecs_transform *t = (ecs_transform *)m;
  (void)ev;
  if (h->n < 32) h->notified[h->n++] = e;
  if (h->fired) return ECS_ERR_OK;
  h->fired = 1;
  switch (h->mode) {
    case 0: /* destroy the entity being notified */
      ecs_destroy(w, e);
      break;
    case 1: /* remove its transform (a nested REMOVE, a nested remove) */
      return ecs_transform_remove(t, e);
    case 2: { /* remove others (rows move), re-parent e's children */
      ecs_entity c;
      ecs_transform_remove(t, h->e[0]);
      ecs_transform_remove(t, h->e[1]);
      while ((c = ecs_transform_first_child(t, e)) != ECS_NULL)
        ecs_transform_set_parent(t, c, h->e[8], true);
      break;
    }
    case 3: { /* grow the rows (the buffer moves) and re-parent e */
      ecs_entity more[40];
      if (ecs_create_n(w, more, 40) != ECS_ERR_OK) return ECS_ERR_NOMEM;
      for (int k = 0; k < 40; k++) ecs_transform_add(t, more[k], NULL);
      ecs_transform_set_parent(t, e, more[39], false);
      ecs_transform_set_parent(t, more[0], e, false);
      break;
    }
    case 4: /* destroy the tree the entity is in, from its root */
      ecs_transform_destroy_tree(t, h->e[0]);
      break;
    case 5: /* destroy the entity notified next in a batch, remove another */
      ecs_destroy(w, h->e[6]);
      ecs_transform_remove(t, h->e[0]);
      ecs_world_gc(w, SIZE_MAX);
      break;
    default:
      break;
  }
  return ECS_ERR_OK;
}

/* A tree over h->e: 0 <- 1 <- 2 <- 3, 1 <- 4, 0 <- 5, 6, 7 roots, 8 a
** root, 9..11 children of 5. */
static int hostile_scene(hostile *h) {
  static const int parent[12] = {-1, 0, 1, 2, 1, 0, -1, -1, -1, 5, 5, 5};
  if (ecs_create_n(h->w, h->e, 12) != ECS_ERR_OK) return 0;
  for (int k = 0; k < 12; k++) {
    ecs_trs l = trs(k, 1, 0, 0, 0.3, 0, 1, 1 + k % 2, 1, 1);
    if (ecs_transform_add(h->t, h->e[k], &l) != ECS_ERR_OK) return 0;
  }
  for (int k = 0; k < 12; k++)
    if (parent[k] >= 0 &&
        ecs_transform_set_parent(h->t, h->e[k], h->e[parent[k]], false) !=
            ECS_ERR_OK)
      return 0;
  return 1;
}

TEST(Notify_hostile_listeners_leave_a_consistent_world) {
  for (int mode = 0; mode <= 5; mode++)
    for (int call = 0; call < 5; call++) {
      test_alloc a;
      hostile h;
      ecs_err err = ECS_ERR_OK;
      memset(&h, 0, sizeof h);
      h.w = new_world(&a, &h.t);
      CHECK(h.w != NULL);
      CHECK(hostile_scene(&h));
      h.mode = mode;
      CHECK(ecs_manager_listen(h.w, h.t,
                               ECS_EVENT_ADD | ECS_EVENT_REMOVE | ECS_EVENT_SET,
                               hostile_listener, &h) == ECS_ERR_OK);
      switch (call) {
        case 0: /* REMOVE: the row is looked up again after it */
          err = ecs_transform_remove(h.t, h.e[1]);
          CHECK(!ecs_transform_has(h.t, h.e[1]));
          CHECK_EQ_INT(h.notified[0], h.e[1]);
          break;
        case 1: { /* ADD */
          ecs_entity n;
          CHECK(ecs_create(h.w, &n) == ECS_ERR_OK);
          err = ecs_transform_add(h.t, n, NULL);
          CHECK_EQ_INT(h.notified[0], n);
          break;
        }
        case 2: /* SET from set_parent */
          err = ecs_transform_set_parent(h.t, h.e[3], h.e[5], false);
          break;
        case 3: /* SET from a setter */
          err = ecs_transform_set_position(h.t, h.e[2], 9, 9, 9);
          break;
        case 4: { /* a batch: 6 is destroyed before its turn, 0 removed */
          uint32_t rows[4];
          double xyz[12] = {0};
          ecs_entity es[4];
          es[0] = h.e[7], es[1] = h.e[6], es[2] = h.e[9], es[3] = h.e[0];
          ecs_transform_lookup_n(h.t, es, rows, 4);
          err = ecs_transform_set_positions(h.t, rows, xyz, 4);
          CHECK_EQ_INT(h.notified[0], h.e[7]);
          if (mode == 5) { /* 6 skipped (dead), 0 skipped (removed) */
            CHECK_EQ_INT(h.n, 4);
            CHECK_EQ_INT(h.notified[1], h.e[6]); /* the nested destroy */
            CHECK_EQ_INT(h.notified[2], h.e[0]); /* the nested REMOVE */
            CHECK_EQ_INT(h.notified[3], h.e[9]);
          }
          break;
        }
        default:
          break;
      }
      CHECK(err == ECS_ERR_OK || err == ECS_ERR_DEAD || err == ECS_ERR_MISSING);
      CHECK(h.n >= 1);
      {
        const char *bad = ecs_world_check(h.w);
        if (bad != NULL) fprintf(stderr, "  mode %d call %d: %s\n", mode, call, bad);
        CHECK(bad == NULL);
      }
      /* still fully usable */
      ecs_world_gc(h.w, SIZE_MAX);
      CHECK(ecs_manager_unlisten(h.w, h.t, hostile_listener, &h));
      for (int k = 0; k < 12; k++)
        if (ecs_transform_has(h.t, h.e[k]))
          CHECK(ecs_transform_set_position(h.t, h.e[k], 1, 2, 3) == ECS_ERR_OK);
      CHECK(ecs_transform_sort(h.t) == ECS_ERR_OK);
      CHECK_WORLD(h.w);
      ecs_world_free(h.w);
      CHECK_EQ_INT(a.blocks, 0);
    }
}

static const test_case cases[] = {
  CASE(Hooks_has_and_schema),
  CASE(Hooks_stats_follow_memory),
  CASE(Hooks_clear_drops_everything),
  CASE(Hooks_save_load_round_trip),
  CASE(Hooks_save_reports_writer_errors),
  CASE(Hooks_load_truncated_or_flipped),
  CASE(Hooks_load_refuses_bad_streams),
  CASE(Hooks_load_out_of_memory),
  CASE(Notify_add_set_remove_see_the_record),
  CASE(Notify_listener_error_is_returned),
  CASE(Notify_destroy_tree_returns_a_listener_error),
  CASE(Notify_batches_once_per_entity_after_the_batch),
  CASE(Notify_hostile_listeners_leave_a_consistent_world),
};

TEST_MAIN(cases)
