/*
** component_hooks.c -- the manager interface of generic components
** (component.c is the manager itself): has, clear, stats, schema, the
** save/load layout, and the twin/swap pair of staged loads (snapshot.c).
** They work on the manager's storage through component_private.h and
** change it only as component.c's own operations do (the refs to drop,
** the queries to tell).
**
** Layer: managers (layers: alloc.h).
*/
#include <string.h>

#include "component_private.h"


bool ecsi_component_has(const ecs_world *w, const void *self, ecs_entity e) {
  return ecs_component_lookup(w, (const ecs_component *)self, e) !=
         ECS_NO_INSTANCE;
}

/*
** Every instance goes, dead owners' records included; their lua refs go
** to the drop list (the room is the instances' own: ref_slots counts their
** cells until the end, so the list never overflows). The block, the map's
** slots and the capacity stay, as remove and gc keep them: a manager that
** is cleared and filled again (a level reloaded) does not allocate again.
*/
void ecsi_component_clear(ecs_world *w, void *self) {
  ecs_component *c = (ecs_component *)self;
  ecsi_tell_layout_all(w, c);
  for (uint32_t i = 0; i < c->size; i++) ecsi_component_drop_refs(w, c, i);
  ecsi_rowmap_clear(&c->map);
  w->ref_slots -= (size_t)c->size * c->nlua;
  c->size = 0;
  c->gc_cursor = c->churn = 0;
  c->version++;
  ecsi_component_tell_stale(w, c);
}

/* Its three kinds of block: meta (schema and names), columns, map. */
void ecsi_component_stats(const ecs_world *w, const void *self,
                            ecs_manager_stats *out) {
  const ecs_component *c = (const ecs_component *)self;
  out->records = c->size;
  out->live = ecs_component_count(w, c);
  out->bytes = c->meta_size + c->schema_size + c->stride * c->cap + ecsi_rowmap_bytes(&c->map) +
               c->watch_cap * sizeof *c->watch + ecsi_ticks_bytes(c);
}

uint32_t ecsi_component_schema(const ecs_world *w, const void *self,
                                 ecs_field_def *out, uint32_t max) {
  const ecs_component *c = (const ecs_component *)self;
  (void)w;
  for (uint32_t k = 0; k < c->nfields && k < max; k++) out[k] = c->field[k];
  return c->nfields;
}

/*
** The saved layout (u32 = ecs_write_u32, little-endian; values as stored,
** in the machine's order, which a snapshot requires to be little-endian):
**   u32 LAYOUT (3)       so that another layout can be told from this one
**   u32 nfields          then per field: u32 type, u32 name length, name
**                        (the layout of the values: cleanup policies,
**                        which do not change it, are in the snapshot's
**                        directory, which a load compares first)
**   u32 gc_cursor        where the lazy gc goes on (at most the records)
**   u32 churn            ecsi_component_churn
**   owners               every record's entity in row order, the dead
**                        ones' too, as u32 entries, ending with u32 0:
**                          h (bits 30, 31 clear): one entity, the handle h;
**                          h | RUN, u32 n (n >= 2): n entities h, h + 1,
**                          ..., h + n - 1 (consecutive indices, one
**                          generation: entities created together)
**                          h | PURGED_ENTRY: one record purged in place
**                          (ecs_mark_purged: its index wrapped)
**   per field, in schema order: its column, one value (of the field's
**                        size) per record listed: a dead record's are 0
**   stamps               the change stamps a query could still tell from
**                        0, per kind (change.c, "Stamps saved")
** The schema comes first so that load refuses data of another schema
** before it reads any record. The owner list ends with a terminator
** rather than starting with a count, so save makes one pass over the
** rows; load reads the list once to count and checks that count *
** (stride - 4) bytes of columns follow, before it allocates anything.
**
** The dead records (garbage the lazy gc has not reclaimed yet), the gc's
** cursor and the churn are saved because they decide the rows' order from
** now on: the gc brings the last row into a dead record's place when it
** reaches it, and query lists follow the rows (query.c, "Upkeep"). A world
** restored from the bytes therefore moves its rows as the saved one does,
** and a game whose rules depend on iteration order replays bit for bit
** (API.md, "Replay promise"). Their values are not (nothing reads them):
** zeros, so that equal worlds save equal bytes.
**
** Layout 2 (before the dead records were kept) still loads: the same
** without gc_cursor, churn and stamps (0, 0, and every row stamped new
** after the load), live records only.
** Columns, not records: save and load are a copy per column (one memcpy
** when no record is dead), and entities created together -- the usual
** case -- cost 8 bytes a run, not 4 each.
*/
#define LAYOUT 3u
#define LAYOUT_LIVE 2u
#define RUN 0x80000000u
#define PURGED_ENTRY 0x40000000u
#define GATHER 4096u /* bytes gathered per write */

/* A writer of u32 entries through a small buffer. */
typedef struct u32out {
  ecs_writer *out;
  uint32_t n;
  ecs_err err;
  unsigned char b[GATHER];
} u32out;

static void put32(u32out *o, uint32_t v) {
  if (o->n + 4 > sizeof o->b) {
    if (o->err == ECS_ERR_OK) o->err = ecs_write(o->out, o->b, o->n);
    o->n = 0;
  }
  o->b[o->n] = (unsigned char)v;
  o->b[o->n + 1] = (unsigned char)(v >> 8);
  o->b[o->n + 2] = (unsigned char)(v >> 16);
  o->b[o->n + 3] = (unsigned char)(v >> 24);
  o->n += 4;
}

/* One entry of the owner list for len (0: none) owners from first. */
static void put_owners(u32out *o, ecs_entity first, uint32_t len) {
  if (len == 1) {
    put32(o, first);
  } else if (len > 1) {
    put32(o, first | RUN);
    put32(o, len);
  }
}

/* How many of own[i..n) continue the run own[i - 1] + 1, + 2, ...:
** blocks of 64 first (which compilers vectorize), then one by one. */
static uint32_t run_length(const ecs_entity *own, uint32_t i, uint32_t n) {
  ecs_entity next = own[i - 1] + 1u;
  uint32_t j = i;
  while (n - j >= 64) {
    const ecs_entity *p = own + j;
    uint32_t diff = 0;
    for (uint32_t k = 0; k < 64; k++) diff |= p[k] ^ (next + k);
    if (diff != 0) break;
    j += 64;
    next += 64;
  }
  while (j < n && own[j] == next) {
    j++;
    next++;
  }
  return j - i;
}

/* Are the len entities first, first + 1, ... all alive? One generation
** and consecutive indices below the slot count: a compare per slot. */
static bool run_alive(const ecs_world *w, ecs_entity first, uint32_t len) {
  const ecs_world_head *h = (const ecs_world_head *)(const void *)w;
  uint32_t index = ecs_entity_index(first), gen = first >> ECS_INDEX_BITS;
  uint32_t bad = 0;
  if (index == 0 || (first & ~ECS_ID_MASK) != 0 ||
      len - 1u > ECS_INDEX_MASK - index || (size_t)index + len > h->slot_count)
    return false;
  for (uint32_t j = 0; j < len; j++) bad |= (uint32_t)h->slot[index + j] ^ gen;
  return bad == 0;
}

/*
** Are the len entities first, first + 1, ... ones a record may name in
** this world: index 1 or more, consecutive indices below the slot count,
** no wrap, each generation not ahead of its slot's (ecs_record_valid: the
** live one or an older one, or older than the next while the index is
** free)? Alive or not: the dead records are saved too. A purged record
** (first marked) needs only its index.
*/
static bool run_valid(const ecs_world *w, ecs_entity first, uint32_t len) {
  const ecs_world_head *h = (const ecs_world_head *)(const void *)w;
  uint32_t index = ecs_entity_index(first), gen = ecs_entity_generation(first);
  uint32_t bad = 0;
  if (index == 0 || (first & ~(ECS_ID_MASK | ECS_PURGED)) != 0 ||
      len - 1u > ECS_INDEX_MASK - index || (size_t)index + len > h->slot_count)
    return false;
  if ((first & ECS_PURGED) != 0) return len == 1;
  for (uint32_t j = 0; j < len; j++) {
    uint32_t s = h->slot[index + j];
    /* live: gen <= s; free: gen < the next generation (s's low bits) */
    bad |= s < ECS_SLOT_FREE ? (uint32_t)(gen > s)
                             : (uint32_t)(gen >= (s & ECS_GENERATION_MASK));
  }
  return bad == 0;
}

/* run_valid for loads, through the world's memo of the last long run
** found valid while a snapshot loads (ecs_private.h). */
static bool run_valid_load(ecs_world *w, ecs_entity first, uint32_t len) {
  enum { LONG_RUN = 1024 };
  if (!w->valid_memo || len < LONG_RUN || (first & ~ECS_ID_MASK) != 0)
    return run_valid(w, first, len);
  if (w->valid_len > 0 && first >= w->valid_first && len <= w->valid_len &&
      first - w->valid_first <= w->valid_len - len)
    return true;
  if (!run_valid(w, first, len)) return false;
  w->valid_first = first;
  w->valid_len = len;
  return true;
}

ecs_err ecsi_component_save(const ecs_world *w, const void *self,
                              ecs_writer *out) {
  const ecs_component *c = (const ecs_component *)self;
  const ecs_entity *own = owners(c);
  u32out o;
  uint32_t i = 0, len = 0;
  ecs_entity first = ECS_NULL;
  bool dead = false;
  ecs_err err;
  if ((err = ecs_write_u32(out, LAYOUT)) != ECS_ERR_OK ||
      (err = ecs_write_u32(out, c->nfields)) != ECS_ERR_OK)
    return err;
  for (uint32_t k = 0; k < c->nfields; k++) {
    size_t nlen = strlen(c->field[k].name); /* an identifier: short */
    if ((err = ecs_write_u32(out, (uint32_t)c->field[k].type)) != ECS_ERR_OK ||
        (err = ecs_write_u32(out, (uint32_t)nlen)) != ECS_ERR_OK ||
        (err = ecs_write(out, c->field[k].name, nlen)) != ECS_ERR_OK)
      return err;
  }
  if ((err = ecs_write_u32(out, c->gc_cursor)) != ECS_ERR_OK ||
      (err = ecs_write_u32(out, c->churn)) != ECS_ERR_OK)
    return err;
  o.out = out;
  o.n = 0;
  o.err = ECS_ERR_OK;
  /* One pass: every owner in row order, each run of consecutive handles
  ** as one entry (so the list depends on that order only: a loaded
  ** manager saves the same bytes); a run's block is tested alive at once
  ** (a dead record means the columns go row by row). */
  while (i < c->size) {
    ecs_entity e = own[i];
    if ((e & ECS_PURGED) != 0) {
      put_owners(&o, first, len);
      put32(&o, (e & ECS_ID_MASK) | PURGED_ENTRY);
      first = ECS_NULL;
      len = 0;
      dead = true;
      i++;
      continue;
    }
    if (len > 0 && e == first + len) {
      uint32_t block = 1 + run_length(own, i + 1, c->size);
      dead = dead || !run_alive(w, e, block);
      len += block;
      i += block;
      continue;
    }
    put_owners(&o, first, len);
    dead = dead || !ecs_alive(w, e);
    first = e;
    len = 1;
    i++;
  }
  put_owners(&o, first, len);
  put32(&o, 0);
  if (o.err == ECS_ERR_OK) o.err = ecs_write(out, o.b, o.n);
  if (o.err != ECS_ERR_OK) return o.err;
  for (uint32_t k = 0; k < c->nfields && c->size > 0; k++) { /* (size 0: */
    const uint8_t *from = col(c, k);                          /* maybe no block) */
    size_t e = c->elem[k], at = 0;
    if (!dead) { /* no dead record: the column as it is */
      if ((err = ecs_write(out, from, (size_t)c->size * e)) != ECS_ERR_OK)
        return err;
      continue;
    }
    for (i = 0; i < c->size; i++) {
      if (ecs_alive(w, own[i])) memcpy(o.b + at, from + (size_t)i * e, e);
      else memset(o.b + at, 0, e);
      if ((at += e) + e > sizeof o.b) {
        if ((err = ecs_write(out, o.b, at)) != ECS_ERR_OK) return err;
        at = 0;
      }
    }
    if ((err = ecs_write(out, o.b, at)) != ECS_ERR_OK) return err;
  }
  return ecsi_ticks_save(w, c, out);
}

/* The schema part of the layout must be this manager's, field by field
** (names are compared where they lie in the stream: no copy, no limit);
** *layout gets which of the two layouts the stream has. */
static ecs_err load_schema(const ecs_component *c, ecs_reader *in,
                           uint32_t *layout) {
  uint32_t v, type, len;
  if (ecs_read_u32(in, &v) != ECS_ERR_OK || (v != LAYOUT && v != LAYOUT_LIVE))
    return ECS_ERR_CORRUPT;
  *layout = v;
  if (ecs_read_u32(in, &v) != ECS_ERR_OK || v != c->nfields)
    return ECS_ERR_CORRUPT;
  for (uint32_t k = 0; k < c->nfields; k++) {
    const char *name = c->field[k].name;
    if (ecs_read_u32(in, &type) != ECS_ERR_OK ||
        type != (uint32_t)c->field[k].type ||
        ecs_read_u32(in, &len) != ECS_ERR_OK || len != strlen(name) ||
        len > in->size - in->pos || memcmp(in->data + in->pos, name, len) != 0)
      return ECS_ERR_CORRUPT;
    in->pos += len;
  }
  return ECS_ERR_OK;
}

/* The entry just read (v, with n read for a run) as its first owner:
** a purged one gets its mark back. */
static ecs_entity entry_owner(uint32_t v) {
  return (v & PURGED_ENTRY) != 0 ? ecs_mark_purged(v & ECS_ID_MASK)
                                 : v & ~RUN;
}

/*
** Read the owner list once, without keeping anything: its records' count
** (at most ECS_MAX_ENTITIES), and whether it is well formed (a terminator
** within the bytes, runs of at least 2, no other bit than RUN, or
** PURGED_ENTRY alone in layout 3); and whether the columns that follow it
** fit in the bytes left.
*/
static ecs_err count_owners(ecs_reader in, size_t values, uint32_t layout,
                            uint32_t *count) {
  uint32_t v, n, total = 0;
  for (;;) {
    if (ecs_read_u32(&in, &v) != ECS_ERR_OK) return ECS_ERR_CORRUPT;
    if (v == 0) break;
    n = 1;
    if ((v & RUN) != 0 && (ecs_read_u32(&in, &n) != ECS_ERR_OK || n < 2))
      return ECS_ERR_CORRUPT;
    if ((v & PURGED_ENTRY) != 0 && (layout != LAYOUT || (v & RUN) != 0 ||
                                    (v & ECS_ID_MASK) == 0))
      return ECS_ERR_CORRUPT;
    if ((v & ~(RUN | PURGED_ENTRY | ECS_ID_MASK)) != 0 ||
        n > ECS_MAX_ENTITIES - total)
      return ECS_ERR_CORRUPT;
    total += n;
  }
  if (values > 0 && (size_t)total > (in.size - in.pos) / values)
    return ECS_ERR_CORRUPT; /* more records than bytes left for them */
  *count = total;
  return ECS_ERR_OK;
}

/*
** Are the values just read into column k of tmp (count of them) ones this
** manager could hold? bool fields hold 0 or 1 (the value layer stores
** nothing else, and queries test them bytewise), entity fields 30-bit
** handles (what check_entity lets through: dead ones are fine, as in any
** entity field). Numbers take any bits, NaNs included. Lua refs cannot be
** checked here: the binding that frames the stream vouches for them.
*/
static bool column_ok(const ecs_component *tmp, uint32_t k, uint32_t count) {
  ecs_type t = tmp->field[k].type;
  if (t == ECS_BOOL) {
    const uint8_t *v = col(tmp, k);
    uint8_t any = 0;
    for (uint32_t i = 0; i < count; i++) any |= v[i];
    return any <= 1u;
  }
  if (t == ECS_ENTITY) {
    const ecs_entity *v = (const ecs_entity *)(const void *)col(tmp, k);
    ecs_entity any = 0;
    for (uint32_t i = 0; i < count; i++) any |= v[i];
    return (any & ~ECS_ID_MASK) == 0;
  }
  return true;
}

/*
** Owners first .. first + len - 1 (or the one purged record first) for
** instances i .. i + len - 1 of tmp, each an index the loaded table has
** (a record may be dead: its entity is then not alive in that table, as
** when it was saved). That each index is named once is checked when the
** map is built from the owner column.
*/
static ecs_err take_owners(ecs_world *w, ecs_component *tmp,
                           ecs_entity first, uint32_t len, uint32_t i) {
  ecs_entity *own = owners(tmp);
  if (!run_valid_load(w, first, len)) return ECS_ERR_CORRUPT;
  if ((first & ECS_PURGED) != 0) own[i] = first;
  else
    for (uint32_t j = 0; j < len; j++) own[i + j] = first + j;
  tmp->size = i + len;
  return ECS_ERR_OK;
}

/*
** A twin's load that the swap can do in place (snapshot.c's rollbacks: the
** stream stays valid until the swap): when the manager it stands in for
** has the very owners of the stream in the very rows (a rollback usually
** finds them: the entities that had the component then still have it) and
** no lua field (whose refs a host maps in the twin's cells), everything is
** checked here -- owners valid (named once: they are c's), columns within
** the rules -- and the swap copies the columns into the existing block:
** no block allocated, none freed, the map untouched.
** @return ECS_ERR_OK (t->defer_* set, in past the part), ECS_ERR_CORRUPT,
** or NOT_DEFERRABLE (nothing read: the caller loads the usual way).
*/
#define NOT_DEFERRABLE ((ecs_err)(ECS_ERR_NOMEM + ECS_ERR__COUNT))

static bool same_owners(const ecs_component *c, ecs_reader in,
                        uint32_t count) {
  const ecs_entity *own = owners(c);
  uint32_t v, n, i = 0;
  if (count != c->size) return false;
  for (;;) {
    uint32_t diff = 0;
    ecs_entity first;
    (void)ecs_read_u32(&in, &v);
    if (v == 0) return true;
    n = 1;
    if (v & RUN) (void)ecs_read_u32(&in, &n);
    first = entry_owner(v);
    if (n > count - i) return false;
    if ((first & ECS_PURGED) != 0) {
      diff = own[i] ^ first;
    } else {
      const ecs_entity *p = own + i;
      for (uint32_t j = 0; j < n; j++) diff |= p[j] ^ (first + j);
    }
    if (diff != 0) return false;
    i += n;
  }
}

static ecs_err load_deferred(ecs_world *w, ecs_component *t, ecs_reader *in,
                             uint32_t count) {
  const ecs_component *c = t->of;
  size_t at = in->pos;
  const unsigned char *owners = in->data + in->pos;
  ecs_err err = ECS_ERR_OK;
  uint32_t v, n;
  if (!same_owners(c, *in, count)) return NOT_DEFERRABLE;
  for (;;) { /* the list was read once by count_owners: it is well formed */
    (void)ecs_read_u32(in, &v);
    if (v == 0) break;
    n = 1;
    if (v & RUN) (void)ecs_read_u32(in, &n);
    if (!run_valid_load(w, entry_owner(v), n)) {
      err = ECS_ERR_CORRUPT;
      break;
    }
  }
  if (err != ECS_ERR_OK) {
    in->pos = at;
    return err;
  }
  t->defer_cols = in->data + in->pos;
  for (uint32_t k = 0; k < c->nfields; k++) { /* count_owners: the bytes are there */
    const unsigned char *col_at = in->data + in->pos;
    size_t bytes = (size_t)count * c->elem[k];
    if (c->field[k].type == ECS_BOOL) {
      uint8_t any = 0;
      for (size_t i = 0; i < bytes; i++) any |= col_at[i];
      if (any > 1u) err = ECS_ERR_CORRUPT;
    } else if (c->field[k].type == ECS_ENTITY) {
      uint32_t any = 0;
      for (size_t i = 0; i < bytes; i += 4) {
        uint32_t e;
        memcpy(&e, col_at + i, 4);
        any |= e;
      }
      if ((any & ~ECS_ID_MASK) != 0) err = ECS_ERR_CORRUPT;
    }
    in->pos += bytes;
  }
  if (err != ECS_ERR_OK) {
    in->pos = at;
    return err;
  }
  t->defer_owners = owners;
  t->defer_count = count;
  return ECS_ERR_OK;
}

/* The swap of a deferred twin t into c (see load_deferred): the owners and
** the map are right as they are; the columns come from the stream. */
static void swap_deferred(ecs_component *c, ecs_component *t) {
  for (uint32_t k = 0, at = 0; k < c->nfields && t->defer_count > 0; k++) {
    size_t bytes = (size_t)t->defer_count * c->elem[k];
    memcpy(col(c, k), t->defer_cols + at, bytes);
    at += (uint32_t)bytes;
  }
  c->size = t->defer_count;
  t->defer_owners = t->defer_cols = NULL;
  t->defer_count = 0;
}

/*
** All or nothing: the new instances are built aside (a block and a map of
** their own, in tmp, which shares c's schema), every record checked on the
** way, and swapped in only when all of the stream's part was read. Before
** that the drop list gets room for the new instances' cells, so that
** dropping the old ones cannot fail either (ref_len grows by at most the
** old cells, which ref_slots stops counting). On any failure tmp is freed
** and the reader is put back where it was.
*/
ecs_err ecsi_component_load(ecs_world *w, void *self, ecs_reader *in) {
  ecs_component *c = (ecs_component *)self;
  ecs_component tmp = *c;
  const ecs_world_head *h = (const ecs_world_head *)(const void *)w;
  size_t start = in->pos, values = c->stride - sizeof(ecs_entity);
  uint32_t count = 0, i = 0, v, n, last = 0, layout = 0, cursor = 0, churn = 0;
  ecsi_saved_ticks ticks;
  bool ascending = true;
  ecs_err err = load_schema(c, in, &layout);
  if (err == ECS_ERR_OK && layout == LAYOUT &&
      (ecs_read_u32(in, &cursor) != ECS_ERR_OK ||
       ecs_read_u32(in, &churn) != ECS_ERR_OK))
    err = ECS_ERR_CORRUPT;
  if (err == ECS_ERR_OK) err = count_owners(*in, values, layout, &count);
  if (err == ECS_ERR_OK && count > h->slot_count)
    err = ECS_ERR_CORRUPT; /* more than the indices: some twice */
  memset(&ticks, 0, sizeof ticks);
  if (err == ECS_ERR_OK && c->of != NULL && c->nlua == 0 &&
      c->of->cap >= count && c->size == 0) {
    err = load_deferred(w, c, in, count);
    if (err == ECS_ERR_OK && layout == LAYOUT)
      err = ecsi_ticks_read(w, in, count, &ticks);
    if (err == ECS_ERR_OK)
      err = ecsi_ticks_keep(w, (ecs_component *)(uintptr_t)c->of, &ticks,
                            c->of->cap);
    if (err != NOT_DEFERRABLE) {
      if (err != ECS_ERR_OK) {
        in->pos = start;
        c->defer_owners = c->defer_cols = NULL;
        c->defer_count = 0;
      }
      c->gc_cursor = cursor;
      c->churn = churn;
      c->loaded_ticks = ticks;
      return err;
    }
    err = ECS_ERR_OK;
  }
  if (err != ECS_ERR_OK) goto fail_read;
  if ((err = ecsi_component_refs_reserve(w, (size_t)count * c->nlua)) != ECS_ERR_OK)
    goto fail_read;
  tmp.data = NULL;
  tmp.size = 0;
  tmp.cap = (count + MIN_CAP - 1) / MIN_CAP * MIN_CAP;
  memset(&tmp.map, 0, sizeof tmp.map);
  if (tmp.cap > 0 &&
      (tmp.data = ecsi_realloc(w, NULL, 0, c->stride * tmp.cap)) == NULL) {
    err = ECS_ERR_NOMEM;
    goto fail;
  }
  for (;;) { /* the list was read once: it is well formed, it ends */
    ecs_entity first;
    (void)ecs_read_u32(in, &v);
    if (v == 0) break;
    n = 1;
    if (v & RUN) (void)ecs_read_u32(in, &n);
    first = entry_owner(v);
    if ((err = take_owners(w, &tmp, first, n, i)) != ECS_ERR_OK)
      goto fail;
    /* index 0 is no entity's: the first run is past last = 0 */
    ascending = ascending && ecs_entity_index(first) > last;
    last = ecs_entity_index(first) + n - 1u; /* take_owners: no wrap */
    i += n;
  }
  /* runs that each start past the last one's end: every index once, in
  ** order, which is what a save writes for a manager whose rows follow
  ** its entities' creation (the map then reads a few owners per page) */
  err = ascending ? ecsi_rowmap_build_ascending(w, &tmp.map, owners(&tmp), count)
                  : ecsi_rowmap_build(w, &tmp.map, owners(&tmp), count);
  if (err != ECS_ERR_OK)
    goto fail; /* NOMEM, or CORRUPT: an entity twice */
  /* the change stamps of the manager the rows will go to (c, or the one
  ** a twin stands in for): room for them now, while failing is allowed */
  if (ecsi_ticks_reserve(w, c->of != NULL ? (ecs_component *)(uintptr_t)c->of : c,
                         tmp.cap) != ECS_ERR_OK) {
    err = ECS_ERR_NOMEM;
    goto fail;
  }
  for (uint32_t k = 0; k < c->nfields && count > 0; k++) /* (no block: 0) */
    if (ecsi_read_hashed(w, in, col(&tmp, k), (size_t)count * c->elem[k]) !=
            ECS_ERR_OK ||
        !column_ok(&tmp, k, count))
      goto corrupt;
  if (layout == LAYOUT && ecsi_ticks_read(w, in, count, &ticks) != ECS_ERR_OK)
    goto corrupt;
  if (ecsi_ticks_keep(w, c->of != NULL ? (ecs_component *)(uintptr_t)c->of : c,
                      &ticks, tmp.cap) != ECS_ERR_OK) {
    err = ECS_ERR_NOMEM;
    goto fail;
  }
  /* the swap: nothing below can fail */
  for (i = 0; i < c->size; i++) ecsi_component_drop_refs(w, c, i);
  w->ref_slots = w->ref_slots - (size_t)c->size * c->nlua +
                 (size_t)count * c->nlua;
  ecsi_rowmap_free(w, &c->map);
  ecsi_free(w, c->data, c->stride * c->cap);
  c->data = tmp.data;
  c->cap = tmp.cap;
  c->size = count;
  c->map = tmp.map;
  c->gc_cursor = cursor;
  c->churn = churn;
  c->version++;
  /* a twin's stamps go to its manager at the swap; a manager loaded
  ** itself takes them now */
  c->loaded_ticks = ticks;
  if (c->of == NULL) ecsi_ticks_load(w, c, &ticks);
  ecsi_component_tell_stale(w, c);
  return ECS_ERR_OK;
corrupt:
  err = ECS_ERR_CORRUPT;
fail:
  ecsi_rowmap_free(w, &tmp.map);
  ecsi_free(w, tmp.data, c->stride * tmp.cap);
fail_read:
  in->pos = start;
  return err;
}

/*
** Staged loads (snapshot.c). A twin shares c's schema: its meta pointers
** lead into c's meta block, which outlives it, and it owns only its
** struct (meta_size says so), columns and map; no query watches it.
** swap trades instances, columns and map; the queries watching c go
** stale, as after a load. The old instances' lua refs go to the drop
** list there (as clear would: room is theirs), and the twin is left
** with no instance, for free.
*/
void *ecsi_component_twin(ecs_world *w, const void *self) {
  const ecs_component *c = (const ecs_component *)self;
  ecs_component *t = (ecs_component *)ecsi_realloc(w, NULL, 0, sizeof *t);
  if (t == NULL) return NULL;
  *t = *c;
  t->meta_size = sizeof *t;
  t->schema_block = NULL; /* c's, read through: c frees it */
  t->schema_size = 0;
  t->data = NULL;
  t->size = t->cap = t->gc_cursor = t->churn = 0;
  memset(&t->map, 0, sizeof t->map);
  t->version = 0;
  t->watch = NULL;
  t->nwatch = t->watch_cap = 0;
  memset(&t->ticks, 0, sizeof t->ticks); /* c keeps its stamps */
  t->ncleanup = 0; /* c's policies (read through its meta): not counted twice */
  t->of = c; /* the twin may defer its load into it */
  t->defer_owners = t->defer_cols = NULL;
  t->defer_count = 0;
  memset(&t->loaded_ticks, 0, sizeof t->loaded_ticks);
  return t;
}

bool ecsi_component_twin_keeps_rows(const void *twin) {
  return ((const ecs_component *)twin)->defer_owners != NULL;
}

void ecsi_component_swap(ecs_world *w, void *self, void *twin) {
  ecs_component *c = (ecs_component *)self, *t = (ecs_component *)twin;
  ecs_component old = *c;
  if (t->defer_owners != NULL) {
    /* the same owners in the same rows: only values change, so the
    ** queries' match lists (entities and rows) still hold; iterations in
    ** progress see the version move and look their rows up again */
    swap_deferred(c, t);
    ecsi_ticks_load(w, c, &t->loaded_ticks);
    c->gc_cursor = t->gc_cursor;
    c->churn = t->churn;
    c->version++;
    return;
  }
  c->data = t->data;
  c->size = t->size;
  c->cap = t->cap;
  c->map = t->map;
  t->data = old.data;
  t->size = old.size;
  t->cap = old.cap;
  t->map = old.map;
  c->gc_cursor = t->gc_cursor;
  c->churn = t->churn;
  t->gc_cursor = t->churn = 0;
  c->version++;
  t->version++;
  ecsi_ticks_load(w, c, &t->loaded_ticks); /* room: reserved by t's load */
  if (t->nlua > 0)
    for (uint32_t i = 0; i < t->size; i++) ecsi_component_drop_refs(w, t, i);
  w->ref_slots -= (size_t)t->size * t->nlua;
  t->size = 0;
  ecsi_component_tell_stale(w, c);
}
