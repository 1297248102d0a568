/*
** test_snapshot.c -- whole-world snapshots (snapshot.h): save, load into a
** new world and in place, the ids handed out afterwards, and loads that
** must fail with the world unchanged: every truncation, every byte
** flipped three ways, an extended snapshot, forged parts sealed with a
** correct checksum, managers the world lacks or has with another schema,
** every allocation failing in turn. Core only.
**
** "Unchanged" is checked through the world's own snapshot (its bytes say
** everything a load could change, the free queue's order included),
** world:check, and the memory the world holds.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"
#include "names.h"
#include "query.h"
#include "snapshot.h"
#include "transform.h"

/* ------------------------------------------------------------------------
** Helpers
** --------------------------------------------------------------------- */

/* A growing buffer behind an ecs_writer (malloc: not the world's
** allocator); fail_at: the n-th write fails. */
typedef struct membuf {
  unsigned char *p;
  size_t n, cap;
  int writes, fail_at;
} membuf;

static ecs_err membuf_write(void *ud, const void *data, size_t size) {
  membuf *b = (membuf *)ud;
  if (b->fail_at != 0 && ++b->writes == b->fail_at) return ECS_ERR_LOCKED;
  if (b->n + size > b->cap) {
    size_t ncap = b->cap ? b->cap : 64;
    unsigned char *np;
    while (ncap < b->n + size) ncap *= 2;
    np = (unsigned char *)realloc(b->p, ncap);
    if (np == NULL) return ECS_ERR_NOMEM;
    b->p = np;
    b->cap = ncap;
  }
  memcpy(b->p + b->n, data, size);
  b->n += size;
  return ECS_ERR_OK;
}

static ecs_err snap(const ecs_world *w, membuf *b) {
  ecs_writer out;
  out.write = membuf_write;
  out.ud = b;
  b->n = 0;
  return ecs_world_save(w, &out);
}

/* snap, with a host section of n bytes at host */
static ecs_err snap_host(const ecs_world *w, membuf *b, const void *host,
                         size_t n) {
  ecs_writer out;
  ecs_snapshot_opts o;
  memset(&o, 0, sizeof o);
  o.host = host;
  o.host_size = n;
  out.write = membuf_write;
  out.ud = b;
  b->n = 0;
  return ecs_world_save_opts(w, &out, &o);
}

static ecs_err load(ecs_world *w, const unsigned char *p, size_t n) {
  ecs_reader in;
  in.data = p;
  in.size = n;
  in.pos = 0;
  return ecs_world_load(w, &in);
}

static int same(const membuf *a, const membuf *b) {
  return a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
}

static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; k--) v = v << 8 | p[k];
  return v;
}

static void put32(unsigned char *p, uint32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (unsigned char)(v >> (8 * k));
}

static void put64(unsigned char *p, uint64_t v) {
  for (int k = 0; k < 8; k++) p[k] = (unsigned char)(v >> (8 * k));
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* After editing a snapshot: its checksum made right again, so that the
** edit reaches the checks behind it. */
static void seal(unsigned char *p, size_t n) {
  uint64_t h = ecs_snapshot_hash(p, n - 8);
  for (int k = 0; k < 8; k++) p[n - 8 + (size_t)k] = (unsigned char)(h >> (8 * k));
}

/*
** The snapshot b (this core's format) rewritten in format 1, as an older
** core wrote it: no cursors after the entity table, each field's directory
** word its type alone, components in layout 2 (live records only: b must
** hold no dead record; no gc cursor, churn or stamps). Other managers'
** parts are kept (their layouts did not change, or load in both). For the
** tests of what a load does with an older snapshot.
*/
static void to_format1(const membuf *b, membuf *out) {
  const unsigned char *p = b->p;
  uint64_t dir_at = get64(p + b->n - 16), esize = get64(p + dir_at);
  uint32_t n = get32(p + dir_at + 8), slots = get32(p + 12), q;
  size_t at = dir_at + 12, pay = 12 + (size_t)esize, table;
  membuf dir;
  unsigned char w[8];
  memset(&dir, 0, sizeof dir);
  out->n = 0;
  /* header, then the entity table without the cursors */
  q = get32(p + 16 + 2 * (size_t)slots);
  table = 4 + 2 * (size_t)slots + 4 + 4 * (size_t)q;
  (void)membuf_write(out, p, 12);
  put32(out->p + 4, 1);
  (void)membuf_write(out, p + 12, table);
  put64(w, table);
  (void)membuf_write(&dir, w, 8);
  (void)membuf_write(&dir, p + dir_at + 8, 4);
  for (uint32_t k = 0; k < n; k++) {
    uint32_t ns = get32(p + at), len, nf;
    uint64_t psize;
    size_t start = out->n;
    (void)membuf_write(&dir, p + at, 4); /* namespace */
    at += 4;
    len = get32(p + at); /* name */
    (void)membuf_write(&dir, p + at, 4 + (size_t)len);
    at += 4 + len;
    len = get32(p + at); /* kind */
    (void)membuf_write(&dir, p + at, 4 + (size_t)len);
    at += 4 + len;
    nf = get32(p + at);
    (void)membuf_write(&dir, p + at, 4);
    at += 4;
    for (uint32_t f = 0; f < nf; f++) { /* type word, name */
      put32(w, get32(p + at) & 0xffu);
      (void)membuf_write(&dir, w, 4);
      len = get32(p + at + 4);
      (void)membuf_write(&dir, p + at + 4, 4 + (size_t)len);
      at += 8 + len;
    }
    psize = get64(p + at);
    at += 8;
    if (ns == 1) { /* a component: layout 3 -> 2 */
      const unsigned char *c = p + pay;
      size_t i = 8, values = 0, rec = 0;
      uint32_t cnf = get32(c + 4);
      put32(w, 2);
      (void)membuf_write(out, w, 4);
      (void)membuf_write(out, c + 4, 4);
      for (uint32_t f = 0; f < cnf; f++) {
        uint32_t t = get32(c + i);
        values += t == 11u ? 4 : (size_t)ecs_type_size((ecs_type)t);
        i += 8 + get32(c + i + 4);
      }
      (void)membuf_write(out, c + 8, i - 8); /* the fields */
      i += 8;                                /* past the cursor and churn */
      for (;;) {                             /* the owners */
        uint32_t v = get32(c + i);
        size_t e = (v & 0x80000000u) ? 8 : 4;
        if (v != 0) rec += (v & 0x80000000u) ? get32(c + i + 4) : 1;
        (void)membuf_write(out, c + i, v == 0 ? 4 : e);
        i += v == 0 ? 4 : e;
        if (v == 0) break;
      }
      (void)membuf_write(out, c + i, rec * values); /* the columns */
    } else {
      (void)membuf_write(out, p + pay, (size_t)psize);
    }
    pay += (size_t)psize;
    put64(w, out->n - start);
    (void)membuf_write(&dir, w, 8);
  }
  /* the host section, the directory, the trailer */
  (void)membuf_write(out, p + pay, (size_t)(dir_at - pay));
  (void)membuf_write(&dir, p + at, 8); /* its size */
  put64(w, out->n);
  (void)membuf_write(out, dir.p, dir.n);
  (void)membuf_write(out, w, 8);
  (void)membuf_write(out, w, 8); /* the checksum's room */
  seal(out->p, out->n);
  free(dir.p);
}

/* The worlds the tests build: every field type, the transform with a
** hierarchy, names; entities destroyed so that the free queue holds some. */
static const ecs_field_def all_fields[] = {
  {"a", ECS_F32}, {"b", ECS_F64}, {"c", ECS_I8}, {"d", ECS_I16},
  {"e", ECS_I32}, {"f", ECS_I64}, {"g", ECS_U8}, {"h", ECS_U16},
  {"i", ECS_U32}, {"j", ECS_BOOL}, {"k", ECS_ENTITY}, {"l", ECS_LUA}
};
#define NF 12u
static const ecs_field_def pos_fields[] = {{"x", ECS_F32}, {"y", ECS_F32}};

typedef struct fixture {
  test_alloc a;
  ecs_world *w;
  ecs_component *all, *pos, *tag;
  ecs_transform *t;
  ecs_names *n;
} fixture;

/* The managers only, registered in the order every fixture uses. */
static int fixture_managers(fixture *f) {
  memset(&f->a, 0, sizeof f->a);
  f->w = ecs_world_new(test_allocf, &f->a);
  return f->w != NULL &&
         ecs_transform_new(f->w, &f->t) == ECS_ERR_OK &&
         ecs_names_new(f->w, &f->n) == ECS_ERR_OK &&
         ecs_component_new(f->w, "All", all_fields, NF, &f->all) == ECS_ERR_OK &&
         ecs_component_new(f->w, "Pos", pos_fields, 2, &f->pos) == ECS_ERR_OK &&
         ecs_component_new(f->w, "Tag", NULL, 0, &f->tag) == ECS_ERR_OK;
}

#define NE 40

/* Managers and content: entities (some destroyed, their records left for
** gc), a value of every type, a forest with a kept world matrix, names. */
static int fixture_fill(fixture *f, uint32_t salt) {
  ecs_entity e[NE];
  if (ecs_create_n(f->w, e, NE) != ECS_ERR_OK) return 0;
  for (uint32_t k = 0; k < NE; k++) {
    ecs_instance i;
    if (k % 2 == 0) {
      if (ecs_component_add(f->w, f->all, e[k], &i, NULL) != ECS_ERR_OK) return 0;
      ((float *)ecs_component_column(f->all, 0))[i] = (float)k * 0.5f + (float)salt;
      ((double *)ecs_component_column(f->all, 1))[i] = -(double)k / 3.0;
      ((int8_t *)ecs_component_column(f->all, 2))[i] = (int8_t)(-(int)k);
      ((int16_t *)ecs_component_column(f->all, 3))[i] = (int16_t)(k * 300);
      ((int32_t *)ecs_component_column(f->all, 4))[i] = (int32_t)(k * 70000);
      ((int64_t *)ecs_component_column(f->all, 5))[i] = -((int64_t)k << 40);
      ((uint8_t *)ecs_component_column(f->all, 6))[i] = (uint8_t)(200 + k % 50);
      ((uint16_t *)ecs_component_column(f->all, 7))[i] = (uint16_t)(k * 1000);
      ((uint32_t *)ecs_component_column(f->all, 8))[i] = 4000000000u - k;
      ((uint8_t *)ecs_component_column(f->all, 9))[i] = (uint8_t)(k % 3 == 1);
      ((ecs_entity *)ecs_component_column(f->all, 10))[i] = e[(k + 7) % NE];
      ((uint32_t *)ecs_component_column(f->all, 11))[i] = k % 5 ? salt * 100u + k : 0;
    }
    if (ecs_component_add(f->w, f->pos, e[k], &i, NULL) != ECS_ERR_OK) return 0;
    ((float *)ecs_component_column(f->pos, 0))[i] = (float)k;
    if (k % 3 == 0 && ecs_component_add(f->w, f->tag, e[k], NULL, NULL) != ECS_ERR_OK)
      return 0;
    if (k < 20) {
      ecs_trs l = {{(double)k, 1, 2}, {0, 0, 0, 1}, {1, 1, 1}};
      if (ecs_transform_add(f->t, e[k], &l) != ECS_ERR_OK) return 0;
      if (k > 0 && k % 4 != 0 &&
          ecs_transform_set_parent(f->t, e[k], e[k - 1], k % 8 == 3) != ECS_ERR_OK)
        return 0;
    }
    if (k % 7 == 0) {
      char name[16];
      int len = snprintf(name, sizeof name, "n%u", (unsigned)(k % 14));
      if (ecs_names_set(f->n, e[k], name, (size_t)len) != ECS_ERR_OK) return 0;
    }
  }
  for (uint32_t k = 0; k < NE; k += 5) ecs_destroy(f->w, e[k]);
  return 1;
}

static void fixture_free(fixture *f) {
  uint32_t refs[64];
  while (ecs_drain_refs(f->w, refs, 64) > 0) {}
  ecs_world_free(f->w);
}

/* ------------------------------------------------------------------------
** Round trips
** --------------------------------------------------------------------- */

/* Into a second world with the same managers: the same snapshot bytes
** (entity table, free queue order, every manager's records), the same
** ids handed out afterwards, and the same again after more changes. */
TEST(Snapshot_round_trip_into_a_new_world) {
  fixture x, y;
  membuf b, b2;
  ecs_entity ex[30], ey[30];
  memset(&b, 0, sizeof b);
  memset(&b2, 0, sizeof b2);
  CHECK(fixture_managers(&x) && fixture_fill(&x, 1));
  CHECK(fixture_managers(&y));
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
  CHECK_EQ_INT(load(y.w, b.p, b.n), ECS_ERR_OK);
  CHECK_WORLD(y.w);
  CHECK_EQ_INT(snap(y.w, &b2), ECS_ERR_OK);
  CHECK(same(&b, &b2));
  CHECK_EQ_INT(ecs_count(y.w), ecs_count(x.w));
  CHECK_EQ_INT(ecs_free_count(y.w), ecs_free_count(x.w));
  /* the next ids, fresh and from the queue, then after destroys */
  CHECK_EQ_INT(ecs_create_n(x.w, ex, 30), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(y.w, ey, 30), ECS_ERR_OK);
  CHECK(memcmp(ex, ey, sizeof ex) == 0);
  for (int k = 0; k < 30; k += 2) {
    ecs_destroy(x.w, ex[k]);
    ecs_destroy(y.w, ey[k]);
  }
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
  CHECK_EQ_INT(snap(y.w, &b2), ECS_ERR_OK);
  CHECK(same(&b, &b2));
  /* world matrices bit for bit, including the kept ones */
  for (uint32_t i = 0; i < ecs_transform_size(x.t); i++) {
    ecs_entity e = ecs_transform_entity_at(x.t, i);
    double mx[16], my[16];
    if (!ecs_alive(x.w, e)) continue;
    CHECK_EQ_INT(ecs_transform_get_world(x.t, e, mx), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_transform_get_world(y.t, e, my), ECS_ERR_OK);
    CHECK(memcmp(mx, my, sizeof mx) == 0);
    CHECK_EQ_INT(ecs_transform_parent(y.t, e), ecs_transform_parent(x.t, e));
  }
  CHECK(ecs_names_find(y.n, "n0", 2) == ecs_names_find(x.n, "n0", 2));
  CHECK(ecs_names_find(y.n, "n7", 2) == ecs_names_find(x.n, "n7", 2));
  CHECK_WORLD(x.w);
  CHECK_WORLD(y.w);
  free(b.p);
  free(b2.p);
  fixture_free(&x);
  fixture_free(&y);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

/* In place, after the world moved on: it becomes the snapshot again (the
** lua refs of the replaced instances go to the drop list), and a world
** with nothing in it round-trips too. */
TEST(Snapshot_load_in_place_rolls_back) {
  fixture x;
  membuf b, b2;
  ecs_entity e[10];
  uint32_t refs[64];
  size_t dropped = 0, held = 0, n;
  memset(&b, 0, sizeof b);
  memset(&b2, 0, sizeof b2);
  CHECK(fixture_managers(&x));
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK); /* empty */
  CHECK(fixture_fill(&x, 2));
  CHECK_EQ_INT(snap(x.w, &b2), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(x.w, e, 10), ECS_ERR_OK);
  for (int k = 0; k < 10; k++) CHECK_EQ_INT(ecs_component_add(x.w, x.pos, e[k], NULL, NULL), 0);
  ecs_destroy(x.w, e[3]);
  ecs_component_gc(x.w, x.all, SIZE_MAX);
  while ((n = ecs_drain_refs(x.w, refs, 64)) > 0) dropped += n;
  for (uint32_t i = 0; i < ecs_component_size(x.all); i++)
    held += ((uint32_t *)ecs_component_column(x.all, 11))[i] != 0;
  CHECK_EQ_INT(load(x.w, b2.p, b2.n), ECS_ERR_OK);
  CHECK_WORLD(x.w);
  CHECK_EQ_INT(ecs_dropped_refs(x.w), held); /* every old cell reported */
  while (ecs_drain_refs(x.w, refs, 64) > 0) {}
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
  CHECK(same(&b, &b2));
  /* back to the empty world, then forward again */
  {
    membuf empty;
    memset(&empty, 0, sizeof empty);
    fixture_free(&x);
    CHECK_EQ_INT(x.a.blocks, 0);
    CHECK(fixture_managers(&x));
    CHECK_EQ_INT(snap(x.w, &empty), ECS_ERR_OK);
    CHECK(fixture_fill(&x, 3));
    CHECK_EQ_INT(load(x.w, empty.p, empty.n), ECS_ERR_OK);
    CHECK_WORLD(x.w);
    CHECK_EQ_INT(ecs_count(x.w), 0);
    CHECK_EQ_INT(ecs_component_size(x.all) + ecs_component_size(x.pos), 0);
    CHECK_EQ_INT(ecs_transform_size(x.t), 0);
    CHECK_EQ_INT(load(x.w, b2.p, b2.n), ECS_ERR_OK);
    CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
    CHECK(same(&b, &b2));
    free(empty.p);
  }
  free(b.p);
  free(b2.p);
  fixture_free(&x);
  CHECK_EQ_INT(x.a.blocks, 0);
}

/* A query over the components is made stale and reads the loaded state;
** listeners hear nothing of a load. */
static ecs_err count_events(ecs_world *w, void *m, ecs_entity e, ecs_event ev,
                            void *ud) {
  (void)w;
  (void)m;
  (void)e;
  (void)ev;
  ++*(int *)ud;
  return ECS_ERR_OK;
}

TEST(Snapshot_load_makes_queries_stale_and_notifies_nobody) {
  fixture x;
  membuf b;
  ecs_query *q;
  ecs_component *with[2];
  size_t before, after;
  ecs_entity e[5];
  int heard = 0;
  memset(&b, 0, sizeof b);
  CHECK(fixture_managers(&x) && fixture_fill(&x, 1));
  with[0] = x.pos;
  with[1] = x.all;
  CHECK_EQ_INT(ecs_query_new(x.w, with, 2, NULL, 0, &q), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_query_count(x.w, q, &before), ECS_ERR_OK);
  CHECK(before > 0);
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_manager_listen(x.w, x.pos, ECS_EVENT_ADD | ECS_EVENT_REMOVE |
                                  ECS_EVENT_SET, count_events, &heard), 0);
  CHECK_EQ_INT(ecs_create_n(x.w, e, 5), ECS_ERR_OK);
  for (int k = 0; k < 5; k++) {
    CHECK_EQ_INT(ecs_component_add(x.w, x.pos, e[k], NULL, NULL), 0);
    CHECK_EQ_INT(ecs_component_add(x.w, x.all, e[k], NULL, NULL), 0);
  }
  CHECK_EQ_INT(ecs_query_count(x.w, q, &after), ECS_ERR_OK);
  CHECK_EQ_INT(after, before + 5);
  heard = 0;
  CHECK_EQ_INT(load(x.w, b.p, b.n), ECS_ERR_OK);
  CHECK_EQ_INT(heard, 0);
  CHECK_EQ_INT(ecs_query_count(x.w, q, &after), ECS_ERR_OK);
  CHECK_EQ_INT(after, before);
  CHECK_WORLD(x.w);
  free(b.p);
  fixture_free(&x);
  CHECK_EQ_INT(x.a.blocks, 0);
}

/* ------------------------------------------------------------------------
** Refused loads
** --------------------------------------------------------------------- */

/* The load of p (n bytes) into f is refused with err and f is exactly as
** it was: its snapshot, its check, its memory. */
/* The load of the bytes [p, p + n) into f (with opts o, which may be NULL)
** failed and changed nothing: no byte of f's snapshot, no byte of memory,
** the reader where it was; *err says why. */
static int refused_opts(fixture *f, const unsigned char *p, size_t n,
                        const ecs_snapshot_opts *o, ecs_err *err) {
  membuf before, after;
  size_t mem = ecs_world_memory(f->w, NULL);
  int ok;
  ecs_reader in;
  memset(&before, 0, sizeof before);
  memset(&after, 0, sizeof after);
  if (snap(f->w, &before) != ECS_ERR_OK) return 0;
  in.data = p;
  in.size = n;
  in.pos = 0;
  *err = ecs_world_load_opts(f->w, &in, o, NULL);
  ok = *err != ECS_ERR_OK && in.pos == 0 && snap(f->w, &after) == ECS_ERR_OK &&
       same(&before, &after) && ecs_world_check(f->w) == NULL &&
       ecs_world_memory(f->w, NULL) == mem;
  free(before.p);
  free(after.p);
  return ok;
}

static int refused(fixture *f, const unsigned char *p, size_t n, ecs_err *err) {
  return refused_opts(f, p, n, NULL, err);
}

/* refused, for a host that framed the bytes first (ecs_snapshot_frame):
** the load, given them as opened, computes the checksum itself. 2 when
** even framing refused them (err says why). */
static int refused_framed(fixture *f, const unsigned char *p, size_t n,
                          ecs_err *err) {
  ecs_snapshot s;
  ecs_snapshot_opts o;
  if ((*err = ecs_snapshot_frame(&s, p, n)) != ECS_ERR_OK) return 2;
  if (s.checked) return 0;
  memset(&o, 0, sizeof o);
  o.opened = &s;
  return refused_opts(f, p, n, &o, err);
}

/*
** The checksum taken while loading (ecs_snapshot_frame, then the load
** hashes the parts as it copies them): framing leaves it unchecked and
** ecs_snapshot_check checks it; a load given a framed snapshot accepts
** the good bytes, into a world holding other entities and into an empty
** one (every column copied through the hash), and refuses every flipped
** byte -- the ones it copies, the ones it only parses, the host's section
** it does not read -- with CORRUPT (a flip that framing or the version
** check already refuses aside), the world unchanged; an error the damage
** causes first (a manager the world lacks, a schema that differs) is
** reported as the damage.
*/
TEST(Snapshot_checksum_checked_while_loading) {
  fixture x, y, z;
  membuf b;
  unsigned char *p;
  ecs_snapshot s;
  ecs_snapshot_opts o;
  ecs_reader in;
  ecs_err err;
  static const char host[] = "bytes of the host's own";
  size_t framed_loads = 0;
  memset(&b, 0, sizeof b);
  CHECK(fixture_managers(&x) && fixture_fill(&x, 1));
  CHECK(fixture_managers(&y) && fixture_fill(&y, 2));
  CHECK(fixture_managers(&z));
  CHECK_EQ_INT(snap_host(x.w, &b, host, sizeof host), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_snapshot_frame(&s, b.p, b.n), ECS_ERR_OK);
  CHECK(!s.checked);
  CHECK_EQ_INT(ecs_snapshot_check(&s), ECS_ERR_OK);
  CHECK(s.checked);
  CHECK_EQ_INT(ecs_snapshot_open(&s, b.p, b.n), ECS_ERR_OK);
  CHECK(s.checked);
  p = (unsigned char *)malloc(b.n);
  CHECK(p != NULL);
  memcpy(p, b.p, b.n);
  /* a refused load may leave the drop list of lua references the room it
  ** reserved (snapshot.h): reserved in the empty world before counting */
  p[b.n - 1] ^= 1;
  (void)refused_framed(&z, p, b.n, &err);
  CHECK_EQ_INT(err, ECS_ERR_CORRUPT);
  p[b.n - 1] ^= 1;
  for (size_t at = 0; at < b.n; at++) {
    int r;
    p[at] ^= 0x20;
    r = refused_framed(&y, p, b.n, &err);
    if (r == 2) { /* the framing's own checks: header, version, directory */
      CHECK(err == ECS_ERR_CORRUPT || (err == ECS_ERR_VERSION && at >= 4 && at < 8));
    } else {
      CHECK(r == 1);
      CHECK_EQ_INT(err, ECS_ERR_CORRUPT);
      CHECK_EQ_INT(refused_framed(&z, p, b.n, &err), 1);
      CHECK_EQ_INT(err, ECS_ERR_CORRUPT);
      CHECK_EQ_INT(ecs_snapshot_frame(&s, p, b.n), ECS_ERR_OK);
      CHECK_EQ_INT(ecs_snapshot_check(&s), ECS_ERR_CORRUPT);
      CHECK(!s.checked);
      framed_loads++;
    }
    p[at] ^= 0x20;
  }
  CHECK(framed_loads > b.n / 2); /* most flips reach the load */
  /* the good bytes, framed, into both worlds: equal to x after */
  for (int k = 0; k < 2; k++) {
    fixture *f = k == 0 ? &y : &z;
    membuf again;
    memset(&again, 0, sizeof again);
    CHECK_EQ_INT(ecs_snapshot_frame(&s, b.p, b.n), ECS_ERR_OK);
    memset(&o, 0, sizeof o);
    o.opened = &s;
    in.data = b.p;
    in.size = b.n;
    in.pos = 0;
    CHECK_EQ_INT(ecs_world_load_opts(f->w, &in, &o, NULL), ECS_ERR_OK);
    CHECK(in.pos == b.n);
    CHECK_WORLD(f->w);
    CHECK_EQ_INT(snap_host(f->w, &again, host, sizeof host), ECS_ERR_OK);
    CHECK(same(&again, &b));
    free(again.p);
  }
  free(p);
  free(b.p);
  fixture_free(&x);
  fixture_free(&y);
  fixture_free(&z);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks + z.a.blocks, 0);
}

/* Every proper prefix, the snapshot with a byte more, every byte flipped
** three ways: CORRUPT (VERSION for the version word), nothing changed. */
TEST(Snapshot_refuses_every_truncation_and_flip) {
  fixture x, y;
  membuf b;
  unsigned char *p;
  static const unsigned char masks[] = {0x01, 0x40, 0xff};
  ecs_err err;
  memset(&b, 0, sizeof b);
  CHECK(fixture_managers(&x) && fixture_fill(&x, 1));
  CHECK(fixture_managers(&y) && fixture_fill(&y, 2));
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
  for (size_t n = 0; n < b.n; n++) {
    CHECK(refused(&y, b.p, n, &err));
    CHECK_EQ_INT(err, ECS_ERR_CORRUPT);
  }
  p = (unsigned char *)malloc(b.n + 1);
  CHECK(p != NULL);
  memcpy(p, b.p, b.n);
  p[b.n] = 0;
  CHECK(refused(&y, p, b.n + 1, &err));
  CHECK_EQ_INT(err, ECS_ERR_CORRUPT);
  for (size_t at = 0; at < b.n; at++) {
    for (size_t m = 0; m < sizeof masks; m++) {
      p[at] = (unsigned char)(b.p[at] ^ masks[m]);
      CHECK(refused(&y, p, b.n, &err));
      CHECK_EQ_INT(err, at >= 4 && at < 8 ? ECS_ERR_VERSION : ECS_ERR_CORRUPT);
      p[at] = b.p[at];
    }
  }
  free(p);
  free(b.p);
  fixture_free(&x);
  fixture_free(&y);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

/* Managers: one the world lacks (named), one of another schema or kind
** (named), the same one twice; a manager the snapshot lacks is emptied. */
TEST(Snapshot_matches_managers_by_name_kind_and_schema) {
  fixture x;
  test_alloc a;
  ecs_world *w;
  ecs_component *c;
  membuf b, b2;
  ecs_reader in;
  ecs_err err;
  uint32_t failed;
  ecs_snapshot s;
  ecs_snapshot_manager m;
  static const ecs_field_def other[] = {{"x", ECS_F32}, {"z", ECS_F32}};
  memset(&b, 0, sizeof b);
  memset(&b2, 0, sizeof b2);
  memset(&a, 0, sizeof a);
  CHECK(fixture_managers(&x) && fixture_fill(&x, 1));
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
  /* the directory, as a host reads it */
  CHECK_EQ_INT(ecs_snapshot_open(&s, b.p, b.n), ECS_ERR_OK);
  CHECK_EQ_INT(s.manager_count, 5);
  CHECK_EQ_INT(ecs_snapshot_manager_at(&s, 3, &m), ECS_ERR_OK);
  CHECK(m.ns == ECS_NS_COMPONENT && m.name_len == 3 && memcmp(m.name, "Pos", 3) == 0);
  CHECK(m.kind_len == 9 && memcmp(m.kind, "component", 9) == 0);
  CHECK_EQ_INT(m.nfields, 2);
  {
    ecs_type t;
    const char *name;
    size_t len;
    ecs_snapshot_field(&m, 1, &t, &name, &len);
    CHECK(t == ECS_F32 && len == 1 && name[0] == 'y');
  }
  CHECK_EQ_INT(ecs_snapshot_manager_at(&s, 5, &m), ECS_ERR_INVALID);
  /* a world without "Pos" */
  w = ecs_world_new(test_allocf, &a);
  CHECK(w != NULL);
  CHECK_EQ_INT(ecs_transform_new(w, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_names_new(w, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "All", all_fields, NF, &c), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w, "Tag", NULL, 0, &c), ECS_ERR_OK);
  in.data = b.p;
  in.size = b.n;
  in.pos = 0;
  CHECK_EQ_INT(ecs_world_load_opts(w, &in, NULL, &failed), ECS_ERR_NO_MANAGER);
  CHECK_EQ_INT(failed, 3);
  CHECK_EQ_INT(ecs_count(w), 0);
  /* "Pos" of another schema */
  CHECK_EQ_INT(ecs_component_new(w, "Pos", other, 2, &c), ECS_ERR_OK);
  in.pos = 0;
  CHECK_EQ_INT(ecs_world_load_opts(w, &in, NULL, &failed), ECS_ERR_SCHEMA_DIFFERS);
  CHECK_EQ_INT(failed, 3);
  CHECK_WORLD(w);
  ecs_world_free(w);
  /* in the fixture's own world a component the snapshot lacks is emptied */
  CHECK_EQ_INT(ecs_component_new(x.w, "Late", pos_fields, 2, &c), ECS_ERR_OK);
  {
    ecs_entity e;
    CHECK_EQ_INT(ecs_create(x.w, &e), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_component_add(x.w, c, e, NULL, NULL), ECS_ERR_OK);
  }
  CHECK_EQ_INT(load(x.w, b.p, b.n), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_size(c), 0);
  CHECK_WORLD(x.w);
  /* the same manager twice: a forged directory (entry 4 renamed "Pos") */
  CHECK_EQ_INT(snap(x.w, &b2), ECS_ERR_OK);
  {
    size_t at = (size_t)get64(b2.p + b2.n - 16), k;
    const unsigned char *tag = NULL;
    for (k = at; k + 7 < b2.n; k++)
      if (memcmp(b2.p + k, "\3\0\0\0Tag", 7) == 0) tag = b2.p + k;
    CHECK(tag != NULL);
    memcpy(b2.p + (tag - b2.p) + 4, "Pos", 3);
    seal(b2.p, b2.n);
    CHECK(refused(&x, b2.p, b2.n, &err));
    CHECK(err == ECS_ERR_CORRUPT || err == ECS_ERR_SCHEMA_DIFFERS);
  }
  free(b.p);
  free(b2.p);
  fixture_free(&x);
  CHECK_EQ_INT(x.a.blocks + a.blocks, 0);
}

/*
** Forged parts under a correct checksum: each is refused by the check
** that owns it and the world is unchanged. The entity table: a slot
** count beyond the limit or the bytes, slot 0 alive, impossible slots
** (a stray bit between the free bit and the generation, first or last),
** a queue that names a live index, an index twice, or misses a free one;
** the directory: a payload size that breaks the tiling; a manager's
** payload with a byte too many.
*/
TEST(Snapshot_refuses_forged_parts) {
  fixture x, y;
  membuf b;
  unsigned char *p;
  ecs_err err;
  size_t ent = 12, nslots, queue;
  memset(&b, 0, sizeof b);
  CHECK(fixture_managers(&x) && fixture_fill(&x, 1));
  CHECK(fixture_managers(&y) && fixture_fill(&y, 2));
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
  p = (unsigned char *)malloc(b.n);
  CHECK(p != NULL);
  nslots = get32(b.p + ent);
  queue = ent + 4 + 2 * nslots; /* the queue's length, then its indices */
  CHECK(nslots > 1 && get32(b.p + queue) > 2);
#define FORGE(edit)                          \
  do {                                       \
    memcpy(p, b.p, b.n);                     \
    edit;                                    \
    seal(p, b.n);                            \
    CHECK(refused(&y, p, b.n, &err));        \
    CHECK_EQ_INT(err, ECS_ERR_CORRUPT);      \
  } while (0)
  FORGE(put32(p + ent, ECS_MAX_ENTITIES + 2u));
  FORGE(put32(p + ent, (uint32_t)nslots + 1000u));
  FORGE(p[ent + 5] = 0);                         /* slot 0 alive */
  FORGE(p[ent + 4 + 3] = 0x40);                  /* slot 1: 0x4000 | gen */
  FORGE(p[ent + 4 + 3] = 0x01);                  /* slot 1: generation 256+ */
  FORGE(p[ent + 4 + 3] = 0x81);                  /* slot 1: free, bit 8 set */
  FORGE(p[ent + 4 + 2 * nslots - 1] = 0x20);     /* the last slot, a stray bit */
  FORGE(put32(p + queue + 4, get32(p + queue + 8)));   /* an index twice */
  FORGE(put32(p + queue + 4, 2));                /* a live index (e[1]) */
  FORGE(put32(p + queue + 4, (uint32_t)nslots)); /* out of range */
  FORGE(put32(p + queue, get32(b.p + queue) - 1)); /* one free index missed */
  {
    /* the entities part one byte longer in the directory */
    size_t dir = (size_t)get64(b.p + b.n - 16);
    FORGE(p[dir] = (unsigned char)(p[dir] + 1));
  }
#undef FORGE
  free(p);
  free(b.p);
  fixture_free(&x);
  fixture_free(&y);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

/* ------------------------------------------------------------------------
** Out of memory and writer errors
** --------------------------------------------------------------------- */

/* The writer's error at every write is returned; saving allocates at most
** its scratch block, whose failure is NOMEM, nothing changed. */
TEST(Snapshot_save_errors) {
  fixture x;
  membuf b;
  int writes;
  size_t mem;
  memset(&b, 0, sizeof b);
  CHECK(fixture_managers(&x) && fixture_fill(&x, 1));
  b.fail_at = 1 << 30;
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
  writes = b.writes;
  CHECK(writes > 10);
  for (int k = 1; k <= writes; k++) {
    b.fail_at = k;
    b.writes = 0;
    CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_LOCKED); /* the writer's own code */
    CHECK_EQ_INT(b.writes, k);
  }
  b.fail_at = 0;
  mem = ecs_world_memory(x.w, NULL);
  x.a.fail_at = x.a.calls + 1;
  x.a.sticky = 1;
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_NOMEM);
  x.a.fail_at = 0;
  CHECK_EQ_INT(ecs_world_memory(x.w, NULL), mem);
  CHECK_WORLD(x.w);
  free(b.p);
  fixture_free(&x);
  CHECK_EQ_INT(x.a.blocks, 0);
}

/* Every allocation of a load failed in turn (and all after it): NOMEM,
** the world unchanged, until the load succeeds. Both into a world that
** holds other records and into an empty one. */
TEST(Snapshot_load_is_all_or_nothing_under_oom) {
  for (int empty = 0; empty < 2; empty++) {
    fixture x, y;
    membuf b, b2;
    int nomem = 0, done = 0;
    memset(&b, 0, sizeof b);
    memset(&b2, 0, sizeof b2);
    CHECK(fixture_managers(&x) && fixture_fill(&x, 1));
    CHECK(fixture_managers(&y) && (empty || fixture_fill(&y, 2)));
    CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
    for (long k = 1; !done && k < 10000; k++) {
      membuf before;
      ecs_err err;
      ecs_reader in;
      size_t mem = ecs_world_memory(y.w, NULL);
      memset(&before, 0, sizeof before);
      CHECK_EQ_INT(snap(y.w, &before), ECS_ERR_OK);
      in.data = b.p;
      in.size = b.n;
      in.pos = 0;
      y.a.fail_at = y.a.calls + k;
      y.a.sticky = 1;
      err = ecs_world_load(y.w, &in);
      y.a.fail_at = 0;
      if (err == ECS_ERR_NOMEM) {
        nomem++;
        CHECK_EQ_INT(in.pos, 0);
        CHECK_EQ_INT(snap(y.w, &b2), ECS_ERR_OK);
        CHECK(same(&before, &b2));
        CHECK_WORLD(y.w);
        /* a component's load may have grown the drop list: never shrinks */
        CHECK(ecs_world_memory(y.w, NULL) >= mem);
      } else {
        CHECK_EQ_INT(err, ECS_ERR_OK);
        done = 1;
      }
      free(before.p);
    }
    CHECK(done);
    CHECK(nomem >= 8); /* scratch, slots, queue, twins, blocks, pages */
    CHECK_EQ_INT(snap(y.w, &b2), ECS_ERR_OK);
    CHECK(same(&b, &b2));
    CHECK_WORLD(y.w);
    free(b.p);
    free(b2.p);
    fixture_free(&x);
    fixture_free(&y);
    CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
  }
}

/* ------------------------------------------------------------------------
** Hosts: lua references through map_ref, the host's section
** --------------------------------------------------------------------- */

typedef struct refmap {
  uint32_t from[64], to[64];
  int n, used[64], done_calls;
  ecs_err done_err;
} refmap;

static bool map_ref(void *ud, uint32_t ref, uint32_t *out) {
  refmap *m = (refmap *)ud;
  for (int k = 0; k < m->n; k++)
    if (m->from[k] == ref && !m->used[k]) {
      m->used[k] = 1;
      *out = m->to[k];
      return true;
    }
  return false;
}

static ecs_err refs_done(void *ud) {
  refmap *m = (refmap *)ud;
  m->done_calls++;
  return m->done_err;
}

TEST(Snapshot_host_section_and_ref_mapping) {
  fixture x, y;
  membuf b;
  ecs_snapshot_opts o;
  ecs_reader in;
  ecs_snapshot s;
  refmap m;
  uint32_t *cell, drained[64];
  static const char host[] = "the host's own bytes";
  memset(&b, 0, sizeof b);
  memset(&m, 0, sizeof m);
  CHECK(fixture_managers(&x) && fixture_fill(&x, 1));
  CHECK(fixture_managers(&y) && fixture_fill(&y, 2));
  CHECK_EQ_INT(snap_host(x.w, &b, host, sizeof host), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_snapshot_open(&s, b.p, b.n), ECS_ERR_OK);
  CHECK(s.host_size == sizeof host && memcmp(b.p + s.host_at, host, sizeof host) == 0);
  /* x's refs (live instances): each mapped to a number of y's */
  cell = (uint32_t *)ecs_component_column(x.all, 11);
  for (uint32_t i = 0; i < ecs_component_size(x.all); i++)
    if (cell[i] != 0 && ecs_alive(x.w, ecs_component_entities(x.all)[i])) {
      m.from[m.n] = cell[i];
      m.to[m.n] = 5000u + (uint32_t)m.n;
      m.n++;
    }
  CHECK(m.n > 2);
  memset(&o, 0, sizeof o);
  o.map_ref = map_ref;
  o.refs_done = refs_done;
  o.ud = &m;
  /* a reference the host does not know: CORRUPT, nothing changed */
  m.n--;
  in.data = b.p;
  in.size = b.n;
  in.pos = 0;
  while (ecs_drain_refs(y.w, drained, 64) > 0) {}
  CHECK_EQ_INT(ecs_world_load_opts(y.w, &in, &o, NULL), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(ecs_dropped_refs(y.w), 0); /* nothing reported */
  CHECK_EQ_INT(m.done_calls, 0);
  m.n++;
  memset(m.used, 0, sizeof m.used);
  /* the host refuses at the end: CORRUPT */
  m.done_err = ECS_ERR_CORRUPT;
  CHECK_EQ_INT(ecs_world_load_opts(y.w, &in, &o, NULL), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(m.done_calls, 1);
  CHECK_EQ_INT(ecs_dropped_refs(y.w), 0);
  CHECK_WORLD(y.w);
  m.done_err = ECS_ERR_OK;
  memset(m.used, 0, sizeof m.used);
  CHECK_EQ_INT(ecs_world_load_opts(y.w, &in, &o, NULL), ECS_ERR_OK);
  for (int k = 0; k < m.n; k++) CHECK(m.used[k]);
  cell = (uint32_t *)ecs_component_column(y.all, 11);
  for (uint32_t i = 0; i < ecs_component_size(y.all); i++)
    CHECK(cell[i] == 0 || (cell[i] >= 5000u && cell[i] < 5000u + (uint32_t)m.n));
  CHECK(ecs_dropped_refs(y.w) > 0); /* y's old cells */
  CHECK_WORLD(y.w);
  free(b.p);
  fixture_free(&x);
  fixture_free(&y);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

/* ------------------------------------------------------------------------
** Managers without twin and swap
** --------------------------------------------------------------------- */

/* A manager that holds one number, loaded in place (no twin, no swap). */
typedef struct counter {
  uint32_t value, fail;
} counter;

static void ctr_free(ecs_world *w, void *self) {
  void *ud;
  ecs_world_allocator(w, &ud)(ud, self, sizeof(counter), 0);
}

static ecs_err ctr_save(const ecs_world *w, const void *self, ecs_writer *out) {
  (void)w;
  return ecs_write_u32(out, ((const counter *)self)->value);
}

static ecs_err ctr_load(ecs_world *w, void *self, ecs_reader *in) {
  counter *c = (counter *)self;
  uint32_t v;
  (void)w;
  if (c->fail) return ECS_ERR_NOMEM;
  if (ecs_read_u32(in, &v) != ECS_ERR_OK) return ECS_ERR_CORRUPT;
  c->value = v;
  return ECS_ERR_OK;
}

static const ecs_manager_class counter_class = {
  .kind = "counter", .free = ctr_free, .save = ctr_save, .load = ctr_load,
};

static counter *add_counter(ecs_world *w, const char *name, uint32_t v) {
  void *ud;
  counter *c = (counter *)ecs_world_allocator(w, &ud)(ud, NULL, 0, sizeof *c);
  if (c == NULL) return NULL;
  c->value = v;
  c->fail = 0;
  return ecs_manager_register(w, name, &counter_class, c) == ECS_ERR_OK ? c : NULL;
}

TEST(Snapshot_managers_without_twin_load_in_place_last) {
  fixture x, y;
  membuf b, before, after;
  counter *cx, *cy, *c2;
  uint32_t failed;
  ecs_reader in;
  memset(&b, 0, sizeof b);
  memset(&before, 0, sizeof before);
  memset(&after, 0, sizeof after);
  CHECK(fixture_managers(&x) && fixture_fill(&x, 1));
  CHECK(fixture_managers(&y) && fixture_fill(&y, 2));
  CHECK((cx = add_counter(x.w, "ctr", 7)) != NULL);
  CHECK((cy = add_counter(y.w, "ctr", 9)) != NULL);
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
  /* its load fails after every other manager was staged: nothing changes */
  cy->fail = 1;
  CHECK_EQ_INT(snap(y.w, &before), ECS_ERR_OK);
  in.data = b.p;
  in.size = b.n;
  in.pos = 0;
  CHECK_EQ_INT(ecs_world_load_opts(y.w, &in, NULL, &failed), ECS_ERR_NOMEM);
  CHECK_EQ_INT(failed, 5);
  CHECK_EQ_INT(snap(y.w, &after), ECS_ERR_OK);
  CHECK(same(&before, &after));
  CHECK_EQ_INT(cy->value, 9);
  cy->fail = 0;
  CHECK_EQ_INT(load(y.w, b.p, b.n), ECS_ERR_OK);
  CHECK_EQ_INT(cy->value, 7);
  CHECK_WORLD(y.w);
  /* two such managers in a snapshot: refused before anything changes */
  CHECK((c2 = add_counter(x.w, "ctr2", 1)) != NULL);
  CHECK(add_counter(y.w, "ctr2", 2) != NULL);
  CHECK_EQ_INT(snap(x.w, &b), ECS_ERR_OK);
  CHECK_EQ_INT(snap(y.w, &before), ECS_ERR_OK);
  in.data = b.p;
  in.size = b.n;
  in.pos = 0;
  CHECK_EQ_INT(ecs_world_load(y.w, &in), ECS_ERR_INVALID);
  CHECK_EQ_INT(snap(y.w, &after), ECS_ERR_OK);
  CHECK(same(&before, &after));
  (void)c2;
  free(b.p);
  free(before.p);
  free(after.p);
  fixture_free(&x);
  fixture_free(&y);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

/* ecs_snapshot_opts.room over a membuf: the next n bytes; fail_at: the
** n-th call fails. */
static int room_calls, room_fail_at;
static unsigned char *membuf_room(void *ud, size_t n) {
  membuf *b = (membuf *)ud;
  if (++room_calls == room_fail_at) return NULL;
  if (b->n + n > b->cap) {
    size_t ncap = b->cap ? b->cap : 64;
    unsigned char *np;
    while (ncap < b->n + n) ncap *= 2;
    if ((np = (unsigned char *)realloc(b->p, ncap)) == NULL) return NULL;
    b->p = np;
    b->cap = ncap;
  }
  b->n += n;
  return b->p + b->n - n;
}

/*
** A save through room (each large part copied and hashed in one pass) is
** byte for byte the save through write, for columns of every length
** modulo the hash's 32-byte stripes (1-byte, 2-byte, 8-byte fields, 0 to
** 9000 rows, and a host section), so that the stripe buffered between
** parts is carried over from any offset; a room that fails is NOMEM.
*/
TEST(Snapshot_save_through_room_equals_write) {
  static const ecs_field_def odd[] = {{"a", ECS_U8}, {"b", ECS_I16}, {"c", ECS_F64}};
  static const uint32_t sizes[] = {0, 1, 31, 33, 4095, 4097, 5000, 9000};
  static const unsigned char host[5000] = {1, 2, 3};
  for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
    test_alloc a = {0};
    ecs_world *w = ecs_world_new(test_allocf, &a);
    ecs_component *c, *d;
    membuf plain, roomy;
    ecs_writer out;
    ecs_snapshot_opts opts;
    CHECK(w != NULL);
    CHECK_EQ_INT(ecs_component_new(w, "Odd", odd, 3, &c), ECS_ERR_OK);
    CHECK_EQ_INT(ecs_component_new(w, "Pos", pos_fields, 2, &d), ECS_ERR_OK);
    for (uint32_t i = 0; i < sizes[z]; i++) {
      ecs_entity e;
      ecs_instance k;
      CHECK_EQ_INT(ecs_create(w, &e), ECS_ERR_OK);
      CHECK_EQ_INT(ecs_component_add(w, c, e, &k, NULL), ECS_ERR_OK);
      ((uint8_t *)ecs_component_column(c, 0))[k] = (uint8_t)(i * 7);
      ((int16_t *)ecs_component_column(c, 1))[k] = (int16_t)(i * 31);
      ((double *)ecs_component_column(c, 2))[k] = i * 0.25;
      if (i % 3 != 0) CHECK_EQ_INT(ecs_component_add(w, d, e, NULL, NULL), ECS_ERR_OK);
    }
    memset(&plain, 0, sizeof plain);
    memset(&roomy, 0, sizeof roomy);
    memset(&opts, 0, sizeof opts);
    opts.host = host;
    opts.host_size = z % 2 ? sizeof host : 7;
    out.write = membuf_write;
    out.ud = &plain;
    CHECK_EQ_INT(ecs_world_save_opts(w, &out, &opts), ECS_ERR_OK);
    opts.room = membuf_room;
    out.ud = &roomy;
    room_calls = room_fail_at = 0;
    CHECK_EQ_INT(ecs_world_save_opts(w, &out, &opts), ECS_ERR_OK);
    CHECK(same(&plain, &roomy));
    CHECK(sizes[z] < 4096 || room_calls > 0); /* large columns went through room */
    if (room_calls > 0) {
      roomy.n = 0;
      room_fail_at = room_calls;
      room_calls = 0;
      CHECK_EQ_INT(ecs_world_save_opts(w, &out, &opts), ECS_ERR_NOMEM);
      room_fail_at = 0;
    }
    free(plain.p);
    free(roomy.p);
    CHECK_WORLD(w);
    ecs_world_free(w);
    CHECK_EQ_INT(a.blocks, 0);
  }
}

/*
** Cleanup policies are part of a schema: saved in the directory as the
** field's word type | policy << 8 (format 2), compared by a load in place
** (another policy is another schema), read back by a host. A snapshot of
** format 1 (words without policies) still loads, the world's policies
** standing; a policy bit in a format 1 word, an unknown policy, a policy
** on a field that is not an entity, another version: refused.
*/
static unsigned char *dir_word(membuf *b, const char *pattern, size_t len) {
  size_t at = (size_t)get64(b->p + b->n - 16);
  for (size_t k = at; k + len < b->n; k++)
    if (memcmp(b->p + k, pattern, len) == 0) return b->p + k - 4;
  return NULL;
}

TEST(Snapshot_cleanup_policies_are_part_of_the_schema) {
  static const ecs_field_def ref_fields[] = {{"to", ECS_ENTITY}, {"n", ECS_I32}};
  test_alloc a;
  ecs_world *x, *y;
  ecs_component *cx, *cy;
  ecs_entity e[3];
  membuf b, plain, old1;
  ecs_snapshot s;
  ecs_snapshot_manager m;
  unsigned char *word;
  ecs_instance i;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  memset(&plain, 0, sizeof plain);
  memset(&old1, 0, sizeof old1);
  CHECK((x = ecs_world_new(test_allocf, &a)) != NULL);
  CHECK((y = ecs_world_new(test_allocf, &a)) != NULL);
  CHECK_EQ_INT(ecs_component_new(x, "Ref", ref_fields, 2, &cx), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(y, "Ref", ref_fields, 2, &cy), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_create_n(x, e, 3), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_add(x, cx, e[1], &i, NULL), ECS_ERR_OK);
  ((ecs_entity *)ecs_component_column(cx, 0))[i] = e[0];
  CHECK_EQ_INT(snap(x, &plain), ECS_ERR_OK); /* no policy yet */
  CHECK_EQ_INT(ecs_component_set_cleanup(x, cx, 0, ECS_CLEANUP_CLEAR), ECS_ERR_OK);
  CHECK_EQ_INT(snap(x, &b), ECS_ERR_OK);
  CHECK_EQ_INT(get32(b.p + 4), 2);
  CHECK_EQ_INT(ecs_snapshot_open(&s, b.p, b.n), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_snapshot_manager_at(&s, 0, &m), ECS_ERR_OK);
  {
    ecs_type t;
    const char *name;
    size_t len;
    ecs_snapshot_field(&m, 0, &t, &name, &len);
    CHECK(t == ECS_ENTITY && len == 2);
    CHECK_EQ_INT(ecs_snapshot_field_cleanup(&m, 0), ECS_CLEANUP_CLEAR);
    CHECK_EQ_INT(ecs_snapshot_field_cleanup(&m, 1), ECS_CLEANUP_NONE);
  }
  word = dir_word(&b, "\2\0\0\0to", 6);
  CHECK(word != NULL && get32(word) == ((uint32_t)ECS_ENTITY | 1u << 8));
  /* in place: y's Ref has no policy, then another, then the same */
  CHECK_EQ_INT(load(y, b.p, b.n), ECS_ERR_SCHEMA_DIFFERS);
  CHECK_EQ_INT(ecs_count(y), 0);
  CHECK_EQ_INT(ecs_component_set_cleanup(y, cy, 0, ECS_CLEANUP_REMOVE), ECS_ERR_OK);
  CHECK_EQ_INT(load(y, b.p, b.n), ECS_ERR_SCHEMA_DIFFERS);
  CHECK_EQ_INT(ecs_component_set_cleanup(y, cy, 0, ECS_CLEANUP_CLEAR), ECS_ERR_OK);
  CHECK_EQ_INT(load(y, b.p, b.n), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_count(y), 3);
  /* format 1: no policies saved; the world's stand */
  to_format1(&plain, &old1);
  free(plain.p);
  plain = old1;
  CHECK_EQ_INT(get32(plain.p + 4), 1);
  CHECK_EQ_INT(load(y, plain.p, plain.n), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_cleanup(cy, 0), ECS_CLEANUP_CLEAR);
  CHECK(ecs_destroy(y, e[0]));
  CHECK(((ecs_entity *)ecs_component_column(cy, 0))[ecs_component_lookup(y, cy, e[1])] == ECS_NULL);
  CHECK_WORLD(y);
  /* a policy in a format 1 word; bad words in format 2; another version */
  put32(b.p + 4, 1);
  seal(b.p, b.n);
  CHECK_EQ_INT(load(y, b.p, b.n), ECS_ERR_CORRUPT);
  put32(b.p + 4, 2);
  put32(word, (uint32_t)ECS_ENTITY | 4u << 8);
  seal(b.p, b.n);
  CHECK_EQ_INT(load(y, b.p, b.n), ECS_ERR_CORRUPT);
  put32(word, (uint32_t)ECS_ENTITY | 1u << 16);
  seal(b.p, b.n);
  CHECK_EQ_INT(load(y, b.p, b.n), ECS_ERR_CORRUPT);
  word = dir_word(&b, "\1\0\0\0n", 5);
  CHECK(word != NULL && get32(word) == (uint32_t)ECS_I32);
  put32(word, (uint32_t)ECS_I32 | 1u << 8);
  seal(b.p, b.n);
  CHECK_EQ_INT(load(y, b.p, b.n), ECS_ERR_CORRUPT);
  put32(word, (uint32_t)ECS_I32);
  put32(b.p + 4, 3);
  seal(b.p, b.n);
  CHECK_EQ_INT(load(y, b.p, b.n), ECS_ERR_VERSION);
  CHECK_WORLD(y);
  free(b.p);
  free(plain.p);
  ecs_world_free(x);
  ecs_world_free(y);
  CHECK_EQ_INT(a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Snapshot_cleanup_policies_are_part_of_the_schema),
  CASE(Snapshot_save_through_room_equals_write),
  CASE(Snapshot_round_trip_into_a_new_world),
  CASE(Snapshot_load_in_place_rolls_back),
  CASE(Snapshot_load_makes_queries_stale_and_notifies_nobody),
  CASE(Snapshot_refuses_every_truncation_and_flip),
  CASE(Snapshot_checksum_checked_while_loading),
  CASE(Snapshot_matches_managers_by_name_kind_and_schema),
  CASE(Snapshot_refuses_forged_parts),
  CASE(Snapshot_save_errors),
  CASE(Snapshot_load_is_all_or_nothing_under_oom),
  CASE(Snapshot_host_section_and_ref_mapping),
  CASE(Snapshot_managers_without_twin_load_in_place_last),
};

TEST_MAIN(cases)
