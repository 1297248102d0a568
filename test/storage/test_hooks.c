/*
** test_hooks.c -- the manager interface of the component and names
** managers (ecs.h, ecs_manager_class): has, clear, stats, schema, save and
** load, through the class each registered, core only.
**
** Load is all-or-nothing: every truncation and many corruptions of a valid
** stream must fail with ECS_ERR_CORRUPT, and every allocation failure with
** ECS_ERR_NOMEM, with the manager exactly as before (compared through a
** fingerprint of everything it holds) and the reader where it was.
*/
#include <stdint.h>

#include "../support/harness.h"
#include "ecs.h"
#include "component.h"
#include "names.h"
#include "../support/membuf.h" /* membuf: a growing buffer behind an ecs_writer */

/* ------------------------------------------------------------------------
** Helpers
** --------------------------------------------------------------------- */

static ecs_reader reader_of(const unsigned char *p, size_t n) {
  ecs_reader in;
  in.data = p;
  in.size = n;
  in.pos = 0;
  return in;
}

/* The registry entry of manager self: its class. */
static const ecs_manager_class *class_of(const ecs_world *w, const void *self) {
  for (size_t i = 0; i < ecs_manager_count(w); i++) {
    const ecs_manager_class *cls;
    if (ecs_manager_at(w, i, NULL, &cls) == self) return cls;
  }
  return NULL;
}

static size_t index_of(const ecs_world *w, const void *self) {
  for (size_t i = 0; i < ecs_manager_count(w); i++)
    if (ecs_manager_at(w, i, NULL, NULL) == self) return i;
  return SIZE_MAX;
}

/* Save self into b (emptied first). */
static ecs_err save(const ecs_world *w, const void *self, membuf *b) {
  ecs_writer out = membuf_writer(b);
  b->n = 0;
  return class_of(w, self)->save(w, self, &out);
}

/* The same entities in every world: n created, every third destroyed. */
#define NE 60
static int make_entities(ecs_world *w, ecs_entity *e) {
  if (ecs_create_n(w, e, NE) != ECS_ERR_OK) return 0;
  for (int k = 0; k < NE; k += 3) ecs_destroy(w, e[k]);
  return 1;
}

/* ------------------------------------------------------------------------
** Component fixture: one field of every type
** --------------------------------------------------------------------- */

static const ecs_field_def all_fields[] = {
  {"a", ECS_F32}, {"b", ECS_F64}, {"c", ECS_I8}, {"d", ECS_I16},
  {"e", ECS_I32}, {"f", ECS_I64}, {"g", ECS_U8}, {"h", ECS_U16},
  {"i", ECS_U32}, {"j", ECS_BOOL}, {"k", ECS_ENTITY}, {"l", ECS_LUA}
};
#define NF 12u
#define LUA_FIELD 11u

typedef struct cworld {
  test_alloc a;
  ecs_world *w;
  ecs_component *c;
  ecs_entity e[NE];
} cworld;

static int cworld_new(cworld *x) {
  memset(&x->a, 0, sizeof x->a);
  x->w = ecs_world_new(test_allocf, &x->a);
  return x->w != NULL &&
         ecs_component_new(x->w, "P", all_fields, NF, &x->c) == ECS_ERR_OK &&
         make_entities(x->w, x->e);
}

/* Give every live entity k with k % 2 == odd an instance holding values
** derived from k and salt (refs: salt * 1000 + k, 0 for every 5th). */
static int cworld_fill(cworld *x, int odd, uint32_t salt) {
  for (uint32_t k = 0; k < NE; k++) {
    ecs_instance i;
    if (!ecs_alive(x->w, x->e[k]) || (int)(k % 2) != odd) continue;
    if (ecs_component_add(x->w, x->c, x->e[k], &i, NULL) != ECS_ERR_OK)
      return 0;
    ((float *)ecs_component_column(x->c, 0))[i] = (float)k * 0.5f + (float)salt;
    ((double *)ecs_component_column(x->c, 1))[i] = -(double)k / 3.0;
    ((int8_t *)ecs_component_column(x->c, 2))[i] = (int8_t)(-(int)k);
    ((int16_t *)ecs_component_column(x->c, 3))[i] = (int16_t)(k * 300);
    ((int32_t *)ecs_component_column(x->c, 4))[i] = (int32_t)(k * 70000);
    ((int64_t *)ecs_component_column(x->c, 5))[i] = -((int64_t)k << 40);
    ((uint8_t *)ecs_component_column(x->c, 6))[i] = (uint8_t)(200 + k % 50);
    ((uint16_t *)ecs_component_column(x->c, 7))[i] = (uint16_t)(k * 1000);
    ((uint32_t *)ecs_component_column(x->c, 8))[i] = 4000000000u - k;
    ((uint8_t *)ecs_component_column(x->c, 9))[i] = (uint8_t)(k % 3 == 1);
    ((ecs_entity *)ecs_component_column(x->c, 10))[i] = x->e[(k + 7) % NE];
    ((uint32_t *)ecs_component_column(x->c, 11))[i] =
        k % 5 == 0 ? 0 : salt * 1000u + k;
  }
  return 1;
}

/* Everything c holds, in order: size, owners, every column, and the
** world's dropped refs; compared bytewise for "unchanged". */
typedef struct fingerprint {
  unsigned char *p;
  size_t n;
} fingerprint;

static fingerprint cprint(const ecs_world *w, ecs_component *c) {
  fingerprint f;
  uint32_t size = ecs_component_size(c);
  size_t n = sizeof size + sizeof(size_t) + size * sizeof(ecs_entity), at = 0;
  size_t dropped = ecs_dropped_refs(w);
  for (uint32_t k = 0; k < NF; k++)
    n += size * ecs_type_size(ecs_component_field(c, k)->type);
  f.p = (unsigned char *)malloc(n);
  f.n = n;
  memcpy(f.p, &size, sizeof size);
  at += sizeof size;
  memcpy(f.p + at, &dropped, sizeof dropped);
  at += sizeof dropped;
  if (size > 0) {
    memcpy(f.p + at, ecs_component_entities(c), size * sizeof(ecs_entity));
    at += size * sizeof(ecs_entity);
    for (uint32_t k = 0; k < NF; k++) {
      size_t bytes = size * ecs_type_size(ecs_component_field(c, k)->type);
      memcpy(f.p + at, ecs_component_column(c, k), bytes);
      at += bytes;
    }
  }
  return f;
}

static int same_print(fingerprint a, fingerprint b) {
  int same = a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
  free(b.p);
  return same;
}

/* Do x and y hold the same instances for the same entities (live ones),
** field by field? */
static int same_components(cworld *x, cworld *y) {
  if (ecs_component_count(x->w, x->c) != ecs_component_count(y->w, y->c))
    return 0;
  for (uint32_t k = 0; k < NE; k++) {
    ecs_instance i = ecs_component_lookup(x->w, x->c, x->e[k]);
    ecs_instance j = ecs_component_lookup(y->w, y->c, y->e[k]);
    if ((i == ECS_NO_INSTANCE) != (j == ECS_NO_INSTANCE)) return 0;
    if (i == ECS_NO_INSTANCE) continue;
    for (uint32_t f = 0; f < NF; f++) {
      size_t sz = ecs_type_size(all_fields[f].type);
      if (memcmp((unsigned char *)ecs_component_column(x->c, f) + i * sz,
                 (unsigned char *)ecs_component_column(y->c, f) + j * sz,
                 sz) != 0)
        return 0;
    }
  }
  return 1;
}

/* ------------------------------------------------------------------------
** Component: has, clear, stats, schema
** --------------------------------------------------------------------- */

TEST(Component_hooks_has_stats_schema) {
  cworld x;
  const ecs_manager_class *cls;
  ecs_manager_stats st;
  ecs_field_def defs[NF + 1];
  size_t mi;
  CHECK(cworld_new(&x));
  cls = class_of(x.w, x.c);
  mi = index_of(x.w, x.c);
  CHECK(cls != NULL && cls->has && cls->clear && cls->stats && cls->schema &&
        cls->save && cls->load);
  memset(&st, 0, sizeof st);
  cls->stats(x.w, x.c, &st);
  CHECK_EQ_INT(st.records, 0);
  CHECK_EQ_INT(st.live, 0);
  CHECK(st.bytes > 0); /* the meta block */
  CHECK(cworld_fill(&x, 1, 1));
  CHECK(cls->has(x.w, x.c, x.e[1]));
  CHECK(!cls->has(x.w, x.c, x.e[2]));       /* alive, no instance */
  CHECK(!cls->has(x.w, x.c, x.e[3]));       /* destroyed */
  CHECK(!cls->has(x.w, x.c, ECS_NULL));
  CHECK(!cls->has(x.w, x.c, ECS_ID_MASK));  /* forged */
  ecs_destroy(x.w, x.e[1]);                 /* dead record: records, not live */
  ecs_manager_stats_at(x.w, mi, &st);
  CHECK_EQ_INT(st.records, ecs_component_size(x.c));
  CHECK_EQ_INT(st.live, ecs_component_size(x.c) - 1);
  CHECK_EQ_INT(st.live, ecs_component_count(x.w, x.c));
  /* meta + columns + map: every block of it, so at most the world's */
  CHECK(st.bytes > (size_t)ecs_component_size(x.c) * (45u + 4u)); /* 4+: map */
  CHECK(st.bytes < ecs_world_memory(x.w, NULL));
  ecs_manager_stats_at(x.w, 99, &st); /* no such manager: zeros */
  CHECK_EQ_INT(st.records + st.live + st.bytes, 0);
  CHECK_EQ_INT(cls->schema(x.w, x.c, NULL, 0), NF);
  memset(defs, 0, sizeof defs);
  CHECK_EQ_INT(cls->schema(x.w, x.c, defs, 3), NF);
  CHECK(strcmp(defs[2].name, "c") == 0 && defs[2].type == ECS_I8);
  CHECK(defs[3].name == NULL); /* only max were stored */
  CHECK_EQ_INT(cls->schema(x.w, x.c, defs, NF + 1), NF);
  for (uint32_t k = 0; k < NF; k++)
    CHECK(strcmp(defs[k].name, all_fields[k].name) == 0 &&
          defs[k].type == all_fields[k].type);
  ecs_world_free(x.w);
  CHECK_EQ_INT(x.a.blocks, 0);
}

/* clear drops every instance (dead records too), hands their refs to the
** drop list, allocates nothing (so it cannot fail), and the manager works
** on afterwards. */
TEST(Component_clear_drops_everything_and_never_allocates) {
  cworld x;
  const ecs_manager_class *cls;
  size_t refs = 0, dropped = 0;
  uint32_t buf[256];
  long calls;
  ecs_instance i;
  CHECK(cworld_new(&x));
  cls = class_of(x.w, x.c);
  CHECK(cworld_fill(&x, 1, 3));
  ecs_destroy(x.w, x.e[1]); /* a dead record with refs */
  for (uint32_t k = 0; k < ecs_component_size(x.c); k++)
    refs += ((uint32_t *)ecs_component_column(x.c, LUA_FIELD))[k] != 0;
  CHECK(refs > 0);
  calls = x.a.calls;
  x.a.fail_at = calls + 1; /* every allocation from here on fails */
  x.a.sticky = 1;
  cls->clear(x.w, x.c);
  CHECK_EQ_INT(x.a.calls, calls);
  x.a.fail_at = 0;
  CHECK_EQ_INT(ecs_component_size(x.c), 0);
  CHECK_EQ_INT(ecs_dropped_refs(x.w), refs);
  for (uint32_t k = 0; k < NE; k++) CHECK(!cls->has(x.w, x.c, x.e[k]));
  CHECK_WORLD(x.w);
  cls->clear(x.w, x.c); /* twice: nothing to do */
  CHECK_WORLD(x.w);
  while ((dropped = ecs_drain_refs(x.w, buf, 256)) > 0) refs -= dropped;
  CHECK_EQ_INT(refs, 0);
  CHECK_EQ_INT(ecs_component_add(x.w, x.c, x.e[2], &i, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(i, 0);
  CHECK(ecs_component_lookup(x.w, x.c, x.e[2]) == 0);
  CHECK_WORLD(x.w);
  ecs_world_free(x.w);
  CHECK_EQ_INT(x.a.blocks, 0);
}

/* ------------------------------------------------------------------------
** Component: save and load
** --------------------------------------------------------------------- */

/* Save, load into a second world with the same entities (and instances
** of its own, which go): equal contents; the second world's old refs are
** dropped, the loaded ones taken over; saving again gives the same bytes. */
TEST(Component_save_load_round_trip) {
  cworld x, y;
  membuf b, b2;
  ecs_reader in;
  size_t old_refs = 0;
  memset(&b, 0, sizeof b);
  memset(&b2, 0, sizeof b2);
  CHECK(cworld_new(&x) && cworld_new(&y));
  CHECK(cworld_fill(&x, 1, 1));
  ecs_destroy(x.w, x.e[5]); /* a dead record: saved (its place) */
  ecs_destroy(y.w, y.e[5]);
  CHECK(cworld_fill(&y, 0, 2));
  for (uint32_t k = 0; k < ecs_component_size(y.c); k++)
    old_refs += ((uint32_t *)ecs_component_column(y.c, LUA_FIELD))[k] != 0;
  CHECK_EQ_INT(save(x.w, x.c, &b), ECS_ERR_OK);
  CHECK(b.n > 0);
  in = reader_of(b.p, b.n);
  CHECK_EQ_INT(class_of(y.w, y.c)->load(y.w, y.c, &in), ECS_ERR_OK);
  CHECK_EQ_INT(in.pos, b.n); /* all of it, no more */
  CHECK(same_components(&x, &y));
  CHECK_EQ_INT(ecs_component_size(y.c), ecs_component_size(x.c));
  CHECK_EQ_INT(ecs_component_count(y.w, y.c), ecs_component_count(x.w, x.c));
  for (uint32_t k = 0; k < ecs_component_size(x.c); k++) /* row for row */
    CHECK_EQ_INT(ecs_component_entities(y.c)[k], ecs_component_entities(x.c)[k]);
  CHECK_EQ_INT(ecs_dropped_refs(y.w), old_refs);
  CHECK_WORLD(y.w);
  CHECK_EQ_INT(save(y.w, y.c, &b2), ECS_ERR_OK);
  CHECK(b2.n == b.n && memcmp(b.p, b2.p, b.n) == 0);
  /* an empty manager round-trips too, and loading it empties */
  class_of(x.w, x.c)->clear(x.w, x.c);
  CHECK_EQ_INT(save(x.w, x.c, &b), ECS_ERR_OK);
  in = reader_of(b.p, b.n);
  CHECK_EQ_INT(class_of(y.w, y.c)->load(y.w, y.c, &in), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_size(y.c), 0);
  CHECK_WORLD(y.w);
  /* and it grows again after that */
  CHECK(cworld_fill(&y, 1, 4));
  CHECK_WORLD(y.w);
  free(b.p);
  free(b2.p);
  ecs_world_free(x.w);
  ecs_world_free(y.w);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

/* The writer's error stops the save and is returned, at every write. */
TEST(Component_save_returns_the_writers_error) {
  cworld x;
  membuf b;
  int writes;
  CHECK(cworld_new(&x));
  CHECK(cworld_fill(&x, 1, 1));
  memset(&b, 0, sizeof b);
  CHECK_EQ_INT(save(x.w, x.c, &b), ECS_ERR_OK);
  b.fail_write = 1 << 30;
  b.writes = 0;
  CHECK_EQ_INT(save(x.w, x.c, &b), ECS_ERR_OK);
  writes = b.writes;
  CHECK(writes > 3);
  for (int k = 1; k <= writes; k++) {
    b.fail_write = k;
    b.writes = 0;
    CHECK_EQ_INT(save(x.w, x.c, &b), ECS_ERR_NOMEM);
    CHECK_EQ_INT(b.writes, k); /* stopped at the failing write */
  }
  free(b.p);
  ecs_world_free(x.w);
}

/* Every proper prefix of a valid stream is refused, changing nothing. */
TEST(Component_load_refuses_every_truncation) {
  cworld x, y;
  membuf b;
  fingerprint before;
  memset(&b, 0, sizeof b);
  CHECK(cworld_new(&x) && cworld_new(&y));
  CHECK(cworld_fill(&x, 1, 1));
  CHECK(cworld_fill(&y, 0, 2));
  CHECK_EQ_INT(save(x.w, x.c, &b), ECS_ERR_OK);
  before = cprint(y.w, y.c);
  for (size_t n = 0; n < b.n; n++) {
    ecs_reader in = reader_of(b.p, n);
    CHECK_EQ_INT(class_of(y.w, y.c)->load(y.w, y.c, &in), ECS_ERR_CORRUPT);
    CHECK_EQ_INT(in.pos, 0);
    CHECK(same_print(before, cprint(y.w, y.c)));
  }
  CHECK_WORLD(y.w);
  free(before.p);
  free(b.p);
  ecs_world_free(x.w);
  ecs_world_free(y.w);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

/*
** Where things are in the fixture's stream (docs/components.md, "Save
** layouts", layout 2): the schema (header bytes), the owner list -- the
** fixture's owners are never consecutive, so one u32 handle each -- and
** its terminator, then the columns, count values each.
*/
typedef struct clayout {
  size_t header, owners, count, col[NF], end;
} clayout;

static clayout layout_of(const cworld *x) {
  clayout l;
  size_t at;
  l.header = 4 + 4 + NF * (4 + 4 + 1); /* one-letter field names */
  l.count = ecs_component_size(x->c); /* every record, dead ones too */
  l.owners = l.header + 8;            /* after the gc cursor and churn */
  at = l.owners + 4 * l.count + 4;
  for (uint32_t k = 0; k < NF; k++) {
    l.col[k] = at;
    at += l.count * ecs_type_size(all_fields[k].type);
  }
  l.end = at + 8; /* two kinds of stamps, none kept (no query watches) */
  return l;
}

/*
** Every byte flipped three ways: the load either refuses it (CORRUPT,
** nothing changed) or accepts a stream that is still valid (a changed
** number, another live entity: the manager's part is self-consistent; a
** snapshot's checksum catches the rest), and the world passes its check.
** The structural bytes must be refused: the layout word, the field count,
** each type and name, the owner list's terminator, the high byte of a
** handle (a generation ahead of its slot's: all generations are 0 here;
** bit 31 without a run length; but bit 30 alone marks a purged record, a
** valid stream), bit 30 of entity fields, a bool other than 0 or 1. The
** gc cursor and the churn take any value.
*/
TEST(Component_load_refuses_corrupt_bytes) {
  cworld x, y;
  membuf b;
  fingerprint before;
  static const unsigned char masks[] = {0x01, 0x40, 0xff};
  size_t refused = 0;
  clayout l;
  memset(&b, 0, sizeof b);
  CHECK(cworld_new(&x) && cworld_new(&y));
  CHECK(cworld_fill(&x, 1, 1));
  CHECK(cworld_fill(&y, 0, 2));
  CHECK_EQ_INT(save(x.w, x.c, &b), ECS_ERR_OK);
  l = layout_of(&x);
  CHECK(l.count > 10);
  CHECK_EQ_INT(b.n, l.end);
  before = cprint(y.w, y.c);
  for (size_t at = 0; at < b.n; at++) {
    for (size_t m = 0; m < sizeof masks; m++) {
      ecs_reader in = reader_of(b.p, b.n);
      ecs_err err;
      /* layout, count, types, names; but layout 3 ^ 1 is the older layout
      ** 2, read as a shorter stream (the snapshot's tiling refuses the
      ** bytes it leaves) */
      int must_fail = at < l.header && !(at == 0 && masks[m] == 0x01);
      if (at >= l.owners && at < l.col[0])
        must_fail = at >= l.col[0] - 4 ||
                    ((at - l.owners) % 4 == 3 && masks[m] != 0x40);
      if (at >= l.col[9] && at < l.col[10]) must_fail = masks[m] != 0x01;
      if (at >= l.col[10] && at < l.col[11])
        must_fail = (at - l.col[10]) % 4 == 3 && (masks[m] & 0x40);
      b.p[at] ^= masks[m];
      err = class_of(y.w, y.c)->load(y.w, y.c, &in);
      b.p[at] ^= masks[m];
      CHECK(err == ECS_ERR_OK || err == ECS_ERR_CORRUPT);
      if (must_fail && err != ECS_ERR_CORRUPT) {
        fprintf(stderr, "byte %zu mask %02x accepted\n", at, masks[m]);
        CHECK(0);
      }
      if (err == ECS_ERR_CORRUPT) {
        refused++;
        CHECK_EQ_INT(in.pos, 0);
        CHECK(same_print(before, cprint(y.w, y.c)));
      } else {
        CHECK_WORLD(y.w);
        /* back to the first state for the next flip */
        class_of(y.w, y.c)->clear(y.w, y.c);
        CHECK(cworld_fill(&y, 0, 2));
        {
          uint32_t drain[64];
          while (ecs_drain_refs(y.w, drain, 64) > 0) {}
        }
        free(before.p);
        before = cprint(y.w, y.c);
      }
    }
  }
  CHECK(refused > l.header * 3);
  free(before.p);
  free(b.p);
  ecs_world_free(x.w);
  ecs_world_free(y.w);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

/* Records naming a dead entity, one named twice, values no store makes, a
** schema of another manager: each refused, nothing changed. */
TEST(Component_load_validates_records_and_schema) {
  cworld x, y;
  membuf b;
  fingerprint before;
  clayout l;
  ecs_component *other;
  ecs_field_def renamed[NF], retyped[NF];
  ecs_reader in;
  memset(&b, 0, sizeof b);
  CHECK(cworld_new(&x) && cworld_new(&y));
  CHECK(cworld_fill(&x, 1, 1));
  CHECK(cworld_fill(&y, 0, 2));
  before = cprint(y.w, y.c);
  CHECK_EQ_INT(save(x.w, x.c, &b), ECS_ERR_OK);
  l = layout_of(&x);
  /* the second owner is the first one's entity */
  {
    unsigned char *r1 = b.p + l.owners, *r2 = r1 + 4;
    unsigned char keep[4];
    memcpy(keep, r2, 4);
    memcpy(r2, r1, 4);
    in = reader_of(b.p, b.n);
    CHECK_EQ_INT(class_of(y.w, y.c)->load(y.w, y.c, &in), ECS_ERR_CORRUPT);
    CHECK(same_print(before, cprint(y.w, y.c)));
    memcpy(r2, keep, 4);
  }
  /* an entity dead in y (alive in x when it saved): a dead record, kept
  ** in its row and not counted; one whose generation is ahead of its
  ** slot's (a record no world could hold) is refused */
  ecs_destroy(y.w, y.e[1]);
  in = reader_of(b.p, b.n);
  CHECK_EQ_INT(class_of(y.w, y.c)->load(y.w, y.c, &in), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_size(y.c), ecs_component_size(x.c));
  CHECK_EQ_INT(ecs_component_count(y.w, y.c), ecs_component_size(x.c) - 1u);
  CHECK_WORLD(y.w);
  free(before.p);
  before = cprint(y.w, y.c);
  {
    unsigned char *r1 = b.p + l.owners, keep[4];
    ecs_entity ahead = ecs_make_entity(ecs_entity_index(y.e[2]),
                                       ecs_entity_generation(y.e[2]) + 1);
    memcpy(keep, r1, 4);
    memcpy(r1, &ahead, 4);
    in = reader_of(b.p, b.n);
    CHECK_EQ_INT(class_of(y.w, y.c)->load(y.w, y.c, &in), ECS_ERR_CORRUPT);
    CHECK(same_print(before, cprint(y.w, y.c)));
    memcpy(r1, keep, 4);
  }
  /* a bool of 2 for the last owner */
  ecs_destroy(x.w, x.e[1]); /* so that y's dead e[1] is not named */
  CHECK_EQ_INT(save(x.w, x.c, &b), ECS_ERR_OK);
  l = layout_of(&x);
  in = reader_of(b.p, b.n);
  CHECK_EQ_INT(class_of(y.w, y.c)->load(y.w, y.c, &in), ECS_ERR_OK);
  in = reader_of(b.p, b.n);
  b.p[l.col[10] - 1] = 2; /* j's last value: its column ends where k's starts */
  free(before.p);
  before = cprint(y.w, y.c);
  CHECK_EQ_INT(class_of(y.w, y.c)->load(y.w, y.c, &in), ECS_ERR_CORRUPT);
  CHECK(same_print(before, cprint(y.w, y.c)));
  b.p[l.col[10] - 1] = 0;
  /* another schema: same types renamed, or a type changed */
  memcpy(renamed, all_fields, sizeof renamed);
  memcpy(retyped, all_fields, sizeof retyped);
  renamed[4].name = "z";
  retyped[4].type = ECS_U32;
  CHECK_EQ_INT(ecs_component_new(y.w, "Q", renamed, NF, &other), ECS_ERR_OK);
  in = reader_of(b.p, b.n);
  CHECK_EQ_INT(class_of(y.w, other)->load(y.w, other, &in), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(ecs_component_new(y.w, "R", retyped, NF, &other), ECS_ERR_OK);
  in = reader_of(b.p, b.n);
  CHECK_EQ_INT(class_of(y.w, other)->load(y.w, other, &in), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(ecs_component_new(y.w, "S", all_fields, NF - 1, &other),
               ECS_ERR_OK);
  in = reader_of(b.p, b.n);
  CHECK_EQ_INT(class_of(y.w, other)->load(y.w, other, &in), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(ecs_component_size(other), 0);
  /* a handle with bits 30 and 31 set (a purged record, which is never a
  ** run) and a free index's slot bits: refused */
  {
    ecs_entity forged = (ecs_entity)(ecs_make_entity(ecs_entity_index(y.e[0]),
                                                     ecs_entity_generation(y.e[0]) + 1) |
                                     0xc0000000u);
    unsigned char *r1 = b.p + l.owners, keep[4];
    CHECK(!ecs_alive(y.w, forged));
    memcpy(keep, r1, 4);
    memcpy(r1, &forged, 4);
    in = reader_of(b.p, b.n);
    free(before.p);
    before = cprint(y.w, y.c);
    CHECK_EQ_INT(class_of(y.w, y.c)->load(y.w, y.c, &in), ECS_ERR_CORRUPT);
    CHECK(same_print(before, cprint(y.w, y.c)));
    memcpy(r1, keep, 4);
  }
  /* a run longer than the bytes left can hold, or than the entities
  ** alive, is refused before anything is allocated for it (not even the
  ** drop list's room) */
  {
    unsigned char keep[8];
    uint32_t big[] = {ECS_MAX_ENTITIES, ECS_MAX_ENTITIES + 1u, UINT32_MAX, 1000};
    memcpy(keep, b.p + l.owners, 8);
    for (int k = 0; k < 4; k++) {
      long calls = y.a.calls;
      uint32_t first = y.e[1] | 0x80000000u;
      memcpy(b.p + l.owners, &first, 4);
      memcpy(b.p + l.owners + 4, &big[k], 4);
      in = reader_of(b.p, b.n);
      CHECK_EQ_INT(class_of(y.w, y.c)->load(y.w, y.c, &in), ECS_ERR_CORRUPT);
      CHECK_EQ_INT(y.a.calls, calls);
    }
    memcpy(b.p + l.owners, keep, 8);
  }
  /* a reader already past its end */
  in = reader_of(b.p, b.n);
  in.pos = b.n + 1;
  CHECK_EQ_INT(class_of(y.w, y.c)->load(y.w, y.c, &in), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(in.pos, b.n + 1);
  CHECK_WORLD(y.w);
  free(before.p);
  free(b.p);
  ecs_world_free(x.w);
  ecs_world_free(y.w);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

/* Fail the k-th allocation of a load, for every k until it succeeds:
** NOMEM and nothing changed each time, then the right contents. */
TEST(Component_load_is_all_or_nothing_under_oom) {
  cworld x, y;
  membuf b;
  fingerprint before;
  int nomem = 0, done = 0;
  memset(&b, 0, sizeof b);
  CHECK(cworld_new(&x) && cworld_new(&y));
  CHECK(cworld_fill(&x, 1, 1));
  CHECK(cworld_fill(&y, 0, 2));
  CHECK_EQ_INT(save(x.w, x.c, &b), ECS_ERR_OK);
  for (long k = 1; !done && k < 1000; k++) {
    ecs_reader in = reader_of(b.p, b.n);
    ecs_err err;
    before = cprint(y.w, y.c);
    y.a.fail_at = y.a.calls + k;
    y.a.sticky = 1;
    err = class_of(y.w, y.c)->load(y.w, y.c, &in);
    y.a.fail_at = 0;
    if (err == ECS_ERR_NOMEM) {
      nomem++;
      CHECK_EQ_INT(in.pos, 0);
      CHECK(same_print(before, cprint(y.w, y.c)));
      free(before.p);
      CHECK_WORLD(y.w);
    } else {
      CHECK_EQ_INT(err, ECS_ERR_OK);
      free(before.p);
      done = 1;
    }
  }
  CHECK(done);
  CHECK(nomem >= 2); /* the block, the map */
  CHECK(same_components(&x, &y));
  CHECK_WORLD(y.w);
  free(b.p);
  ecs_world_free(x.w);
  ecs_world_free(y.w);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

/* A tag (no fields) and lua-only managers round-trip as well. */
TEST(Component_save_load_tags) {
  test_alloc a;
  ecs_world *w, *w2;
  ecs_component *t, *t2;
  ecs_entity e[NE], e2[NE];
  membuf b;
  ecs_reader in;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  w = ecs_world_new(test_allocf, &a);
  w2 = ecs_world_new(NULL, NULL);
  CHECK(w != NULL && w2 != NULL);
  CHECK(make_entities(w, e) && make_entities(w2, e2));
  CHECK_EQ_INT(ecs_component_new(w, "Tag", NULL, 0, &t), ECS_ERR_OK);
  CHECK_EQ_INT(ecs_component_new(w2, "Tag", NULL, 0, &t2), ECS_ERR_OK);
  for (int k = 1; k < NE; k += 3) CHECK_EQ_INT(ecs_component_add(w, t, e[k], NULL, NULL), 0);
  CHECK_EQ_INT(save(w, t, &b), ECS_ERR_OK);
  in = reader_of(b.p, b.n);
  CHECK_EQ_INT(class_of(w2, t2)->load(w2, t2, &in), ECS_ERR_OK);
  for (int k = 0; k < NE; k++)
    CHECK_EQ_INT(ecs_component_lookup(w2, t2, e2[k]) != ECS_NO_INSTANCE,
                 ecs_component_lookup(w, t, e[k]) != ECS_NO_INSTANCE);
  CHECK_WORLD(w2);
  free(b.p);
  ecs_world_free(w);
  ecs_world_free(w2);
  CHECK_EQ_INT(a.blocks, 0);
}

/* ------------------------------------------------------------------------
** Names
** --------------------------------------------------------------------- */

typedef struct nworld {
  test_alloc a;
  ecs_world *w;
  ecs_names *m;
  ecs_entity e[NE];
} nworld;

static int nworld_new(nworld *x) {
  memset(&x->a, 0, sizeof x->a);
  x->w = ecs_world_new(test_allocf, &x->a);
  return x->w != NULL && ecs_names_new(x->w, &x->m) == ECS_ERR_OK &&
         make_entities(x->w, x->e);
}

static ecs_err nset(nworld *x, uint32_t k, const char *s) {
  return ecs_names_set(x->m, x->e[k], s, strlen(s));
}

/* Names of every live k with k % 2 == odd: shared ones ("orc" for every
** 4th, given in an order find depends on), one with zero bytes, an empty
** one, unique ones. */
static int nworld_fill(nworld *x, int odd) {
  char buf[32];
  for (uint32_t k = 0; k < NE; k++) {
    ecs_err err;
    if (!ecs_alive(x->w, x->e[k]) || (int)(k % 2) != odd) continue;
    if (k % 4 == 1) err = nset(x, k, "orc");
    else if (k == 7) err = ecs_names_set(x->m, x->e[k], "a\0b", 3);
    else if (k == 11) err = nset(x, k, "");
    else {
      snprintf(buf, sizeof buf, "unit%u", (unsigned)k);
      err = nset(x, k, buf);
    }
    if (err != ECS_ERR_OK) return 0;
  }
  /* give "orc" again to an early holder: now the most recent */
  return !odd || nset(x, 5, "orc") == ECS_ERR_OK;
}

/* Everything m says: each entity's name, find of each, the records. */
static fingerprint nprint(nworld *x) {
  membuf b;
  fingerprint f;
  size_t size = ecs_names_size(x->m);
  memset(&b, 0, sizeof b);
  for (uint32_t k = 0; k < NE; k++) {
    size_t len = 0;
    const char *s = ecs_names_get(x->m, x->e[k], &len);
    ecs_writer out = membuf_writer(&b);
    ecs_entity found = s ? ecs_names_find(x->m, s, len) : ECS_NULL;
    ecs_write(&out, &len, sizeof len);
    if (s) ecs_write(&out, s, len);
    ecs_write(&out, &found, sizeof found);
  }
  {
    ecs_writer out = membuf_writer(&b);
    ecs_write(&out, &size, sizeof size);
  }
  f.p = b.p;
  f.n = b.n;
  return f;
}

/* Do two names managers give the same answers for the same entities? */
static int same_names(nworld *x, nworld *y) {
  fingerprint a = nprint(x), b = nprint(y);
  /* find answers are entities of each world: the same handles here */
  int same = a.n == b.n && memcmp(a.p, b.p, a.n - sizeof(size_t)) == 0;
  free(a.p);
  free(b.p);
  return same;
}

TEST(Names_hooks_has_clear_stats_schema) {
  nworld x;
  const ecs_manager_class *cls;
  ecs_manager_stats st;
  ecs_field_def def;
  long calls;
  CHECK(nworld_new(&x));
  cls = class_of(x.w, x.m);
  CHECK(cls != NULL && cls->has && cls->clear && cls->stats && cls->schema &&
        cls->save && cls->load);
  CHECK(nworld_fill(&x, 1));
  CHECK(cls->has(x.w, x.m, x.e[1]));
  CHECK(!cls->has(x.w, x.m, x.e[2]));
  CHECK(!cls->has(x.w, x.m, ECS_NULL));
  ecs_destroy(x.w, x.e[1]);
  memset(&st, 0, sizeof st);
  cls->stats(x.w, x.m, &st);
  CHECK_EQ_INT(st.records, ecs_names_size(x.m));
  CHECK_EQ_INT(st.live, st.records - 1);
  CHECK(st.bytes > st.records * 40u && st.bytes < ecs_world_memory(x.w, NULL));
  CHECK_EQ_INT(cls->schema(x.w, x.m, NULL, 0), 1);
  CHECK_EQ_INT(cls->schema(x.w, x.m, &def, 1), 1);
  CHECK(strcmp(def.name, "name") == 0 && def.type == ECS_U8);
  calls = x.a.calls;
  x.a.fail_at = calls + 1;
  x.a.sticky = 1;
  cls->clear(x.w, x.m);
  x.a.fail_at = 0;
  CHECK_EQ_INT(x.a.calls, calls); /* allocated nothing */
  CHECK_EQ_INT(ecs_names_size(x.m), 0);
  CHECK(ecs_names_find(x.m, "orc", 3) == ECS_NULL);
  CHECK(ecs_names_get(x.m, x.e[5], NULL) == NULL);
  CHECK_WORLD(x.w);
  memset(&st, 0, sizeof st);
  cls->stats(x.w, x.m, &st);
  CHECK_EQ_INT(st.records + st.live, 0);
  CHECK(nworld_fill(&x, 0)); /* usable again */
  CHECK(ecs_names_find(x.m, "unit2", 5) == x.e[2]);
  CHECK_WORLD(x.w);
  ecs_world_free(x.w);
  CHECK_EQ_INT(x.a.blocks, 0);
}

/* Round trip into a world with other names; find keeps answering with the
** most recent holder of a shared name; names set after load are newer
** than every loaded one. */
TEST(Names_save_load_round_trip) {
  nworld x, y;
  membuf b, b2;
  ecs_reader in;
  memset(&b, 0, sizeof b);
  memset(&b2, 0, sizeof b2);
  CHECK(nworld_new(&x) && nworld_new(&y));
  CHECK(nworld_fill(&x, 1));
  CHECK(nworld_fill(&y, 0));
  CHECK(ecs_names_find(x.m, "orc", 3) == x.e[5]);
  ecs_destroy(x.w, x.e[9]); /* a dead record: not saved */
  ecs_destroy(y.w, y.e[9]);
  CHECK_EQ_INT(save(x.w, x.m, &b), ECS_ERR_OK);
  in = reader_of(b.p, b.n);
  CHECK_EQ_INT(class_of(y.w, y.m)->load(y.w, y.m, &in), ECS_ERR_OK);
  CHECK_EQ_INT(in.pos, b.n);
  CHECK(same_names(&x, &y));
  CHECK(ecs_names_find(y.m, "orc", 3) == y.e[5]);
  CHECK(ecs_names_find(y.m, "a\0b", 3) == y.e[7]);
  CHECK(ecs_names_find(y.m, "", 0) == y.e[11]);
  CHECK_WORLD(y.w);
  CHECK_EQ_INT(save(y.w, y.m, &b2), ECS_ERR_OK);
  CHECK(b2.n == b.n && memcmp(b.p, b2.p, b.n) == 0);
  CHECK_WORLD(y.w);
  /* into a fresh manager (its clock at 0): a name set afterwards is newer
  ** than every loaded one */
  {
    nworld z;
    CHECK(nworld_new(&z));
    in = reader_of(b.p, b.n);
    CHECK_EQ_INT(class_of(z.w, z.m)->load(z.w, z.m, &in), ECS_ERR_OK);
    CHECK_EQ_INT(nset(&z, 13, "orc"), ECS_ERR_OK);
    CHECK(ecs_names_find(z.m, "orc", 3) == z.e[13]);
    CHECK_WORLD(z.w);
    ecs_world_free(z.w);
    CHECK_EQ_INT(z.a.blocks, 0);
  }
  free(b.p);
  free(b2.p);
  ecs_world_free(x.w);
  ecs_world_free(y.w);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

TEST(Names_load_refuses_truncations_and_corruption) {
  nworld x, y;
  membuf b;
  fingerprint before;
  static const unsigned char masks[] = {0x01, 0x40, 0xff};
  size_t refused = 0;
  memset(&b, 0, sizeof b);
  CHECK(nworld_new(&x) && nworld_new(&y));
  CHECK(nworld_fill(&x, 1));
  CHECK(nworld_fill(&y, 0));
  CHECK_EQ_INT(save(x.w, x.m, &b), ECS_ERR_OK);
  before = nprint(&y);
  for (size_t n = 0; n < b.n; n++) {
    ecs_reader in = reader_of(b.p, n);
    CHECK_EQ_INT(class_of(y.w, y.m)->load(y.w, y.m, &in), ECS_ERR_CORRUPT);
    CHECK_EQ_INT(in.pos, 0);
    CHECK(same_print(before, nprint(&y)));
  }
  /* flips: refused and unchanged, or accepted with a sound world; the
  ** layout word and the first record's entity, stamp and length bytes
  ** (past their low byte, any change leaves the valid range) must fail */
  for (size_t at = 0; at < b.n; at++) {
    for (size_t m = 0; m < sizeof masks; m++) {
      ecs_reader in = reader_of(b.p, b.n);
      ecs_err err;
      int must_fail = at < 4 || ((at == 8 + 3 || at == 8 + 4 + 7) &&
                                 (masks[m] & 0xc0)) ||
                      (at >= 8 + 12 + 2 && at < 8 + 12 + 8);
      b.p[at] ^= masks[m];
      err = class_of(y.w, y.m)->load(y.w, y.m, &in);
      b.p[at] ^= masks[m];
      CHECK(err == ECS_ERR_OK || err == ECS_ERR_CORRUPT);
      if (must_fail && err != ECS_ERR_CORRUPT) {
        fprintf(stderr, "byte %zu mask %02x accepted\n", at, masks[m]);
        CHECK(0);
      }
      if (err == ECS_ERR_CORRUPT) {
        refused++;
        CHECK_EQ_INT(in.pos, 0);
        CHECK(same_print(before, nprint(&y)));
      } else {
        CHECK_WORLD(y.w);
        class_of(y.w, y.m)->clear(y.w, y.m);
        CHECK(nworld_fill(&y, 0));
        free(before.p);
        before = nprint(&y);
      }
    }
  }
  CHECK(refused > 20);
  /* a name given twice to one entity */
  {
    membuf d;
    ecs_writer out;
    ecs_reader in;
    uint64_t stamp = 1, len = 1;
    memset(&d, 0, sizeof d);
    out = membuf_writer(&d);
    ecs_write_u32(&out, 1);
    ecs_write_u32(&out, 2);
    for (int k = 0; k < 2; k++) {
      ecs_write_u32(&out, y.e[1]);
      ecs_write(&out, &stamp, 8);
      ecs_write(&out, &len, 8);
      ecs_write(&out, "x", 1);
      stamp++;
    }
    in = reader_of(d.p, d.n);
    CHECK_EQ_INT(class_of(y.w, y.m)->load(y.w, y.m, &in), ECS_ERR_CORRUPT);
    CHECK(same_print(before, nprint(&y)));
    /* a forged handle: bit 30 and the slot bits of a free index */
    {
      ecs_entity forged = (ecs_entity)(ecs_make_entity(ecs_entity_index(y.e[0]),
                                                       ecs_entity_generation(y.e[0]) + 1) |
                                       0x40000000u);
      memcpy(d.p + 8 + 21, &forged, 4);
      in = reader_of(d.p, d.n);
      CHECK_EQ_INT(class_of(y.w, y.m)->load(y.w, y.m, &in), ECS_ERR_CORRUPT);
      CHECK(same_print(before, nprint(&y)));
    }
    /* a count the bytes left cannot hold: refused before allocating */
    {
      long calls = y.a.calls;
      uint32_t big = 3; /* 3 records of at least 20 bytes: not in 42 */
      memcpy(d.p + 4, &big, 4);
      in = reader_of(d.p, d.n);
      CHECK_EQ_INT(class_of(y.w, y.m)->load(y.w, y.m, &in), ECS_ERR_CORRUPT);
      CHECK_EQ_INT(y.a.calls, calls);
      big = 2;
      memcpy(d.p + 4, &big, 4);
    }
    /* the same stream with two entities is fine */
    memcpy(d.p + 8 + 21, &y.e[2], 4);
    in = reader_of(d.p, d.n);
    CHECK_EQ_INT(class_of(y.w, y.m)->load(y.w, y.m, &in), ECS_ERR_OK);
    CHECK(ecs_names_find(y.m, "x", 1) == y.e[2]); /* the larger stamp */
    free(d.p);
  }
  CHECK_WORLD(y.w);
  free(before.p);
  free(b.p);
  ecs_world_free(x.w);
  ecs_world_free(y.w);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

TEST(Names_load_is_all_or_nothing_under_oom) {
  nworld x, y;
  membuf b;
  fingerprint before;
  int nomem = 0, done = 0;
  memset(&b, 0, sizeof b);
  CHECK(nworld_new(&x) && nworld_new(&y));
  CHECK(nworld_fill(&x, 1));
  CHECK(nworld_fill(&y, 0));
  CHECK_EQ_INT(save(x.w, x.m, &b), ECS_ERR_OK);
  for (long k = 1; !done && k < 1000; k++) {
    ecs_reader in = reader_of(b.p, b.n);
    ecs_err err;
    before = nprint(&y);
    y.a.fail_at = y.a.calls + k;
    y.a.sticky = 1;
    err = class_of(y.w, y.m)->load(y.w, y.m, &in);
    y.a.fail_at = 0;
    if (err == ECS_ERR_NOMEM) {
      nomem++;
      CHECK_EQ_INT(in.pos, 0);
      CHECK(same_print(before, nprint(&y)));
      free(before.p);
      CHECK_WORLD(y.w);
    } else {
      CHECK_EQ_INT(err, ECS_ERR_OK);
      free(before.p);
      done = 1;
    }
  }
  CHECK(done);
  CHECK(nomem > 20); /* arrays, buckets, a page, every string */
  CHECK(same_names(&x, &y));
  CHECK_WORLD(y.w);
  free(b.p);
  ecs_world_free(x.w);
  ecs_world_free(y.w);
  CHECK_EQ_INT(x.a.blocks + y.a.blocks, 0);
}

/* set(e, get(e)): the string given is the old name itself, which set
** frees; the record must hash its copy (ASan sees the difference). */
TEST(Names_set_to_its_own_name) {
  nworld x;
  const char *s;
  size_t len;
  CHECK(nworld_new(&x));
  CHECK_EQ_INT(nset(&x, 1, "knight"), ECS_ERR_OK);
  s = ecs_names_get(x.m, x.e[1], &len);
  CHECK_EQ_INT(ecs_names_set(x.m, x.e[1], s, len), ECS_ERR_OK);
  CHECK(ecs_names_find(x.m, "knight", 6) == x.e[1]);
  CHECK_WORLD(x.w);
  ecs_world_free(x.w);
  CHECK_EQ_INT(x.a.blocks, 0);
}

static const test_case cases[] = {
  CASE(Component_hooks_has_stats_schema),
  CASE(Component_clear_drops_everything_and_never_allocates),
  CASE(Component_save_load_round_trip),
  CASE(Component_save_returns_the_writers_error),
  CASE(Component_load_refuses_every_truncation),
  CASE(Component_load_refuses_corrupt_bytes),
  CASE(Component_load_validates_records_and_schema),
  CASE(Component_load_is_all_or_nothing_under_oom),
  CASE(Component_save_load_tags),
  CASE(Names_hooks_has_clear_stats_schema),
  CASE(Names_save_load_round_trip),
  CASE(Names_load_refuses_truncations_and_corruption),
  CASE(Names_load_is_all_or_nothing_under_oom),
  CASE(Names_set_to_its_own_name),
};

TEST_MAIN(cases)
