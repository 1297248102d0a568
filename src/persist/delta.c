/*
** delta.c -- applying a delta written by a journal (journal.h; the format:
** docs/persistence.md, "Deltas, byte by byte").
**
** Deltas come from the network (examples/replicate.lua): nothing in the
** bytes is trusted, checksum or not. All or nothing, in stages.
**
** open checks every structural rule of the bytes, with nothing changed:
** the checksum and the framing (every count against the bytes left, every
** part ending where the next begins); the entity part alone -- slot counts
** within the limit, live and queued adding up to the slots used, every
** slot named at most once, in range and well formed, every slot a count
** change adds or drops named, every pushed index a named slot, the pops
** and the queue lengths agreeing; and the managers -- each present in the
** world with its kind and schema and named once, each record's entity
** index in range and named once per component, its owner a handle of that
** index, its bool and entity values well formed, its lua cells framed.
**
** apply: (0) the managers again (the world may have changed since open:
** the host makes its values in between, and a finalizer may redefine a
** component then); (1) the world's state hash must be the delta's base;
** (2) the entity part against the world -- its counts are the base's, the
** indices popped are named slots, and after the queue operations each
** named slot is queued exactly when it is free and in range (what the
** base's invariants then make true of every slot); (3) room is reserved:
** slots, the queue, each component's records; (4) the entity table is
** changed in place, keeping what undoes it; (5) every owner is checked
** alive at its index under the new table and the managers kept whole are
** loaded into twins; a failure there puts the table back; (6) commit,
** where nothing fails: purges of indices whose generation went back (a
** wrap, or a restore of an older state) or that fall past a smaller slot
** count, queries told of the entities that died, records put, twins
** swapped in.
**
** The world's own journal, if it has one, records the delta's changes
** like any others (a relay can pass them on).
**
** Layer: world (with journal.c).
*/
#include <stdlib.h>
#include <string.h>

#include "journal_private.h"
#include "snapshot.h"

/*
** A bounded reader: at never passes n, so "n - at < k" is the whole bounds
** check and cannot overflow. Every reader of a delta is made with n =
** size - 8: the trailer (the checksum) is never read as content.
*/
typedef struct rd {
  const unsigned char *p;
  size_t at, n;
} rd;

static bool r32(rd *r, uint32_t *v) {
  if (r->n - r->at < 4) return false;
  *v = (uint32_t)r->p[r->at] | (uint32_t)r->p[r->at + 1] << 8 |
       (uint32_t)r->p[r->at + 2] << 16 | (uint32_t)r->p[r->at + 3] << 24;
  r->at += 4;
  return true;
}

static bool r64(rd *r, uint64_t *v) {
  uint32_t lo, hi;
  if (!r32(r, &lo) || !r32(r, &hi)) return false;
  *v = (uint64_t)hi << 32 | lo;
  return true;
}

/* n is 64-bit: a count read from the bytes times a record size cannot
** wrap before it is compared, even where size_t has 32 bits. */
static bool rskip(rd *r, uint64_t n) {
  if (r->n - r->at < n) return false;
  r->at += (size_t)n;
  return true;
}

/* Past the encoded values of one present record at r (open checked them:
** every length is within the part). */
static void skip_values(rd *r, const ecs_component *c) {
  for (uint32_t f = 0; f < c->nfields; f++) {
    uint32_t len = 0;
    if (c->field[f].type != ECS_LUA) {
      r->at += c->elem[f];
      continue;
    }
    (void)r32(r, &len);
    r->at += len;
  }
}

static bool rtext(rd *r, const char **s, size_t *len) {
  uint32_t n;
  if (!r32(r, &n) || r->n - r->at < n) return false;
  *s = (const char *)r->p + r->at;
  *len = n;
  r->at += n;
  return true;
}

/* The entity part's fixed fields (docs/persistence.md, "Deltas, byte by
** byte": the six counts, then s slots, p pushes, the pop count); the slot
** and push lists are only framed here, read where they are checked. */
typedef struct ehead {
  uint32_t old_count, new_count, old_qlen, new_qlen, old_live, new_live;
  uint32_t nslot, npushed, npopped;
  size_t slots_at, pushed_at;
} ehead;

static bool read_entities(rd *r, ehead *e) {
  if (!r32(r, &e->old_count) || !r32(r, &e->new_count) ||
      !r32(r, &e->old_qlen) || !r32(r, &e->new_qlen) ||
      !r32(r, &e->old_live) || !r32(r, &e->new_live) || !r32(r, &e->nslot))
    return false;
  e->slots_at = r->at;
  if (!rskip(r, (uint64_t)e->nslot * 8u) || !r32(r, &e->npushed)) return false;
  e->pushed_at = r->at;
  return rskip(r, (uint64_t)e->npushed * 4u) && r32(r, &e->npopped);
}

/* The part of the delta after its header (magic, version, flags, base,
** result): the entity part, then the managers. */
#define ENTITIES_AT 28u

/* The slots an entity part can name: [1, span). A slot is named when its
** state changed, and also when it lies between the two counts (added or
** dropped): the larger count bounds both. */
static uint32_t span_of(const ehead *e) {
  return e->old_count > e->new_count ? e->old_count : e->new_count;
}

/* Slots used by a table of count slots (index 0 is reserved). */
static uint32_t used_of(uint32_t count) { return count > 0 ? count - 1u : 0; }

/* A u32 at a place a bounded reader already framed. */
static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* A slot state as a world stores it: live with its generation, or
** ECS_SLOT_FREE | the next generation. Anything else is no state a world
** makes (and table_apply would cut it to the slot's 16 bits). */
static bool state_ok(uint32_t s) {
  return s <= ECS_GENERATION_MASK ||
         (s >= ECS_SLOT_FREE && s <= (ECS_SLOT_FREE | ECS_GENERATION_MASK));
}

static bool is_free(uint32_t s) { return s >= ECS_SLOT_FREE; }

/* A named slot: state after (the delta's), old (the world's, filled by
** check_entities), and how many times the queue holds it once the pushes
** and pops are done, which must come to 1 or 0 (check_entities). */
typedef struct nslot {
  uint32_t index, state, old, pos; /* pos: in the delta's list */
  int32_t occ;                     /* queue occurrences, counted */
} nslot;

static int by_index(const void *a, const void *b) {
  uint32_t x = ((const nslot *)a)->index, y = ((const nslot *)b)->index;
  return x < y ? -1 : x > y;
}

static int by_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Binary search of the sorted slots: pushes and pops are matched to them
** in O(log n) each, with no table sized by an index the bytes give. */
static nslot *find_slot(nslot *s, uint32_t n, uint32_t index) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (s[mid].index < index) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && s[lo].index == index ? &s[lo] : NULL;
}

/*
** The named slots of the entity part, sorted by index, into sorted (nslot
** of them), with the structural rules of the part checked: the counts
** within the limit (a count of 1 is no table a world makes), live and
** queued adding up to the slots used after, each slot in [1, span) and
** named once, a well formed state, free with generation 0 past the new
** count (a slot a smaller count drops reads as never used), every slot
** between the two counts named (the fresh ones a larger count adds, the
** ones a smaller count drops), every pushed index named, no more pops
** than the queue and the pushes hold, the new queue length what the
** operations make. The states before are the world's: apply fills them.
*/
static ecs_err read_slots(const ecs_delta *d, const ehead *e, nslot *sorted) {
  const unsigned char *sp = d->data + e->slots_at, *pp = d->data + e->pushed_at;
  uint32_t span = span_of(e), lo, band = 0;
  if (e->old_count > ECS_MAX_ENTITIES + 1u || e->new_count > ECS_MAX_ENTITIES + 1u ||
      (e->new_count == 1u && e->old_count != 1u) ||
      (uint64_t)e->new_live + e->new_qlen != used_of(e->new_count) ||
      (uint64_t)e->old_live + e->old_qlen != used_of(e->old_count) ||
      e->nslot > used_of(span) ||
      (uint64_t)e->npopped > (uint64_t)e->old_qlen + e->npushed ||
      (uint64_t)e->new_qlen != (uint64_t)e->old_qlen + e->npushed - e->npopped)
    return ECS_ERR_CORRUPT;
  for (uint32_t k = 0; k < e->nslot; k++) {
    nslot *s = &sorted[k];
    s->index = get32(sp + 8u * k);
    s->state = get32(sp + 8u * k + 4u);
    s->pos = k;
    s->old = ECS_SLOT_FREE;
    s->occ = 0;
    if (s->index == 0 || s->index >= span || !state_ok(s->state) ||
        (s->index >= e->new_count && s->state != ECS_SLOT_FREE))
      return ECS_ERR_CORRUPT;
  }
  if (e->nslot > 1) qsort(sorted, e->nslot, sizeof *sorted, by_index);
  /* named once: a slot named twice would be put twice and counted twice
  ** in the live total, which could then add up for a table it is not */
  for (uint32_t k = 1; k < e->nslot; k++)
    if (sorted[k].index == sorted[k - 1].index) return ECS_ERR_CORRUPT;
  /* the band between the counts, [lo, span), named whole: the indices are
  ** distinct and below span, so counting them is enough */
  lo = e->old_count < e->new_count ? e->old_count : e->new_count;
  if (lo == 0) lo = 1; /* index 0 is no slot */
  for (uint32_t k = 0; k < e->nslot; k++) band += sorted[k].index >= lo;
  if (band != (span > lo ? span - lo : 0)) return ECS_ERR_CORRUPT;
  /* a pushed index changes state (it is freed), so it is named: which
  ** also lets check_entities count its occurrences without a NULL test */
  for (uint32_t k = 0; k < e->npushed; k++)
    if (find_slot(sorted, e->nslot, get32(pp + 4u * k)) == NULL)
      return ECS_ERR_CORRUPT;
  return ECS_ERR_OK;
}

/* By namespace and name, as the registry keys them: a component and a
** manager may share a name. A linear scan per part (a part names one
** manager, each at most once). */
static int find_manager(const ecs_world *w, uint32_t ns, const char *name,
                        size_t len) {
  for (uint32_t m = 0; m < w->manager_count; m++)
    if ((uint32_t)w->manager[m].ns == ns &&
        strlen(w->manager[m].name) == len &&
        memcmp(w->manager[m].name, name, len) == 0)
      return (int)m;
  return -1;
}

/* One manager's head; *m its position in w (checked: kind, mode, schema). */
typedef struct mhead {
  int m;
  uint32_t mode, n; /* mode 0: n records; mode 1: n unused */
  uint64_t size;    /* mode 1: the save's bytes */
  size_t body_at;   /* records, or the save */
  /* mode 0, after the records (journal_delta.c, write_extras): flags (bit
  ** 0 the layout, bit 1 the stamps); the layout's sizes at the mark and
  ** now, gc cursor and churn now, and its nrows (row, then, now) at
  ** rows_at; nstamps (index, changed, added) at stamps_at */
  uint32_t flags, mark_size, new_size, cursor, churn, nrows, nstamps, kinds;
  size_t rows_at, stamps_at;
} mhead;

/* A handle a layout may name: an entity, or a record purged in place (a
** row keeps a purged record until the gc reclaims it, and the replica's
** rows must match the journal's world's row for row, dead ones too). */
static bool record_ok(uint32_t e) {
  return (e & ~(ECS_ID_MASK | ECS_PURGED)) == 0 && ecs_entity_index(e) != 0;
}

/*
** The extras after a component's records: flags, then the layout -- sizes
** within the limit, rows ascending and below the larger size, each row
** below the mark's size with an owner then, each below the new size with
** an owner now (and none past it), every row the new size adds named --
** and the stamps (each index in range: a row written with the value it had
** is no record but has a new stamp). Which owners the replica's rows hold
** is apply's to check.
*/
static bool read_extras(rd *r, const ehead *e, mhead *h) {
  uint32_t last = 0, added = 0;
  h->nrows = h->nstamps = 0;
  if (!r32(r, &h->flags) || h->flags > 3u) return false;
  if (h->flags & 1u) {
    if (!r32(r, &h->mark_size) || !r32(r, &h->new_size) || !r32(r, &h->cursor) ||
        !r32(r, &h->churn) || !r32(r, &h->nrows) || h->mark_size > ECS_MAX_ENTITIES ||
        h->new_size > ECS_MAX_ENTITIES || h->nrows > (r->n - r->at) / 12u)
      return false;
    h->rows_at = r->at;
    for (uint32_t k = 0; k < h->nrows; k++) {
      uint32_t row = 0, then = 0, now = 0;
      (void)r32(r, &row);
      (void)r32(r, &then);
      (void)r32(r, &now);
      if ((k > 0 && row <= last) || (row >= h->mark_size && row >= h->new_size) ||
          (then != 0) != (row < h->mark_size) || (now != 0) != (row < h->new_size) ||
          (then != 0 && !record_ok(then)) || (now != 0 && !record_ok(now)))
        return false;
      last = row;
      added += row >= h->mark_size;
    }
    if (h->new_size > h->mark_size && added != h->new_size - h->mark_size) return false;
  }
  if (h->flags & 2u) {
    if (!r32(r, &h->kinds) || h->kinds == 0 || h->kinds >= 1u << ECSI_TICK_KINDS ||
        !r32(r, &h->nstamps) || h->nstamps > (r->n - r->at) / 12u)
      return false;
    h->stamps_at = r->at;
    /* 12 bytes each: the index, then two stamps (ECSI_TICK_KINDS), the
    ** bound above checked them all */
    for (uint32_t k = 0; k < h->nstamps; k++) {
      uint32_t index = 0;
      (void)r32(r, &index);
      if (index == 0 || index >= e->new_count) return false;
      r->at += 8u;
    }
  }
  return true;
}

/* The values of a present record of c at r, well formed: bool values 0 or
** 1, entity values ids (30 bits), lua cells a u32 length and that many
** bytes (the host decodes those); *nlua counts the lua cells. */
static bool check_values(rd *r, const ecs_component *c, uint32_t *nlua) {
  for (uint32_t k = 0; k < c->nfields; k++) {
    ecs_type t = c->field[k].type;
    if (t == ECS_LUA) {
      uint32_t len = 0;
      if (!r32(r, &len) || !rskip(r, len)) return false;
      (*nlua)++;
      continue;
    }
    if (r->n - r->at < c->elem[k]) return false;
    /* only what a world could hold: a put copies these bytes unchecked */
    if (t == ECS_BOOL && r->p[r->at] > 1u) return false;
    if (t == ECS_ENTITY && (get32(r->p + r->at) & ~ECS_ID_MASK) != 0) return false;
    r->at += c->elem[k];
  }
  return true;
}

/*
** One manager's part at r, checked as far as the bytes and the world's
** managers go: the manager present with its kind, mode and schema (never
** an owned component: its owner's records are its owner's part), a save
** within the bytes, or records each at an entity index the entity part
** allows -- a present one below the new slot count, its owner a handle of
** that index; an absent one also where a smaller count drops a slot --
** and well formed values. The count of records is bounded by the bytes
** before anything is sized by it. Counts d's lua values and its largest
** record count.
*/
static ecs_err read_manager(const ecs_world *w, rd *r, ecs_delta *d,
                            const ehead *e, mhead *h) {
  uint32_t ns;
  const char *name, *kind;
  size_t nlen, klen;
  const ecs_manager_class *cls;
  if (!r32(r, &ns) || !rtext(r, &name, &nlen) || !rtext(r, &kind, &klen) ||
      !r32(r, &h->mode) || h->mode > 1)
    return ECS_ERR_CORRUPT;
  d->bad_name = name; /* points into the bytes: valid as long as they are */
  d->bad_name_len = nlen;
  if ((h->m = find_manager(w, ns, name, nlen)) < 0) return ECS_ERR_NO_MANAGER;
  cls = w->manager[h->m].cls;
  if (strlen(cls->kind) != klen || memcmp(cls->kind, kind, klen) != 0 ||
      (h->mode == 0) != ecs_component_is(cls))
    return ECS_ERR_SCHEMA_DIFFERS;
  if (h->mode == 1) {
    if (!r64(r, &h->size)) return ECS_ERR_CORRUPT;
    h->body_at = r->at;
    if (!rskip(r, h->size)) return ECS_ERR_CORRUPT;
    /* applied by loading a twin and swapping it in at the commit: a
    ** manager that cannot is not one a delta can carry */
    if (cls->twin == NULL || cls->swap == NULL || cls->load == NULL)
      return ECS_ERR_SCHEMA_DIFFERS;
    return ECS_ERR_OK;
  } else {
    const ecs_component *c = (const ecs_component *)w->manager[h->m].self;
    uint32_t nf, t;
    if (!r32(r, &nf)) return ECS_ERR_CORRUPT;
    if (nf != c->nfields || c->owner != NULL) return ECS_ERR_SCHEMA_DIFFERS;
    for (uint32_t k = 0; k < nf; k++) {
      if (!r32(r, &t)) return ECS_ERR_CORRUPT;
      if (t != ecsi_field_word(c, k)) return ECS_ERR_SCHEMA_DIFFERS; /* policy too */
    }
    /* a record is at least 8 bytes: a count beyond that is a lie, caught
    ** before max_records sizes a block by it */
    if (!r32(r, &h->n) || h->n > (r->n - r->at) / 8u) return ECS_ERR_CORRUPT;
    h->body_at = r->at;
    if (h->n > d->max_records) d->max_records = h->n;
    for (uint32_t k = 0; k < h->n; k++) {
      uint32_t index = 0, owner = 0;
      /* absent may name a slot the new count drops (its record goes);
      ** present only a slot that exists after */
      if (!r32(r, &index) || !r32(r, &owner) || index == 0 ||
          index >= (owner != 0 ? e->new_count : span_of(e)))
        return ECS_ERR_CORRUPT;
      if (owner == 0) continue;
      if ((owner & ~ECS_ID_MASK) != 0 || ecs_entity_index(owner) != index ||
          !check_values(r, c, &d->nvalues))
        return ECS_ERR_CORRUPT;
    }
    return read_extras(r, e, h) ? ECS_ERR_OK : ECS_ERR_CORRUPT;
  }
}

/* The entity indices of the records of the mode 0 part h, into out (h->n
** of them: read_manager framed the part, so no check here). */
static void record_indices(const ecs_delta *d, const ecs_component *c,
                           const mhead *h, uint32_t *out) {
  rd r;
  r.p = d->data;
  r.at = h->body_at;
  r.n = d->size - 8;
  for (uint32_t k = 0; k < h->n; k++) {
    uint32_t owner = 0;
    (void)r32(&r, &out[k]);
    (void)r32(&r, &owner);
    if (owner == 0) continue;
    skip_values(&r, c);
  }
}

/*
** Every manager's part (read_manager), each manager named once, each
** component's entity indices named once: one entry per manager is what
** apply reserves room for and puts, so a component split over two entries
** (or an index repeated) would outgrow its room. scratch: room for
** w->manager_count bytes and d->max_records indices, or NULL for the
** first pass, which finds max_records.
*/
static ecs_err read_managers(const ecs_world *w, ecs_delta *d, const ehead *e,
                             unsigned char *named, uint32_t *scratch) {
  rd r;
  r.p = d->data;
  r.at = d->managers_at;
  r.n = d->size - 8;
  d->nvalues = d->max_records = 0;
  if (named != NULL) memset(named, 0, w->manager_count);
  for (uint32_t k = 0; k < d->nmanagers; k++) {
    mhead h;
    ecs_err err = read_manager(w, &r, d, e, &h);
    if (err != ECS_ERR_OK) return err;
    if (named == NULL) continue;
    if (named[h.m]++ != 0) return ECS_ERR_CORRUPT;
    if (h.mode != 0 || h.n < 2) continue;
    record_indices(d, (const ecs_component *)w->manager[h.m].self, &h, scratch);
    qsort(scratch, h.n, sizeof *scratch, by_u32);
    for (uint32_t n = 1; n < h.n; n++)
      if (scratch[n] == scratch[n - 1]) return ECS_ERR_CORRUPT;
  }
  /* the cursors (cursors.c), which end the delta: they must end exactly
  ** at the trailer, so no byte of the delta goes unchecked */
  {
    ecs_reader in;
    in.data = r.p;
    in.size = r.n;
    in.pos = r.at;
    d->cursors_at = r.at;
    if (ecsi_cursors_skip(&in) != ECS_ERR_OK) return ECS_ERR_CORRUPT;
    r.at = in.pos;
  }
  return r.at == r.n ? ECS_ERR_OK : ECS_ERR_CORRUPT;
}

/*
** The order of the checks decides which error a bad delta gets: the magic,
** then the version before the checksum (a delta of another version is
** ECS_ERR_VERSION, not corrupt, whatever its layout), then the checksum
** (so a damaged delta is ECS_ERR_CORRUPT before any count in it is
** believed), then the framing. 36 bytes: the 28 of the header and the 8
** of the trailer.
*/
ecs_err ecs_delta_open(const ecs_world *w, ecs_delta *d, const void *data,
                       size_t size) {
  rd r;
  ehead e;
  uint32_t version = 0;
  uint64_t sum = 0;
  nslot *sorted = NULL;
  unsigned char *block = NULL;
  size_t sorted_size = 0, block_size = 0;
  ecs_err err;
  memset(d, 0, sizeof *d);
  r.p = (const unsigned char *)data;
  r.at = 0;
  r.n = size;
  if (size < 36 || memcmp(data, "ECSD", 4) != 0) return ECS_ERR_CORRUPT;
  r.at = 4;
  (void)r32(&r, &version);
  if (version != ECS_DELTA_VERSION) return ECS_ERR_VERSION;
  r.n = size - 8;
  {
    rd t = {r.p, size - 8, size};
    (void)r64(&t, &sum);
  }
  if (sum != ecs_snapshot_hash(data, size - 8)) return ECS_ERR_CORRUPT;
  if (!r32(&r, &d->flags) || d->flags != 0 || !r64(&r, &d->base) ||
      !r64(&r, &d->result) || !read_entities(&r, &e) ||
      !r32(&r, &d->nmanagers))
    return ECS_ERR_CORRUPT;
  d->data = (const unsigned char *)data;
  d->size = size;
  d->managers_at = r.at;
  /* the framing first (it bounds every count), then the rules that need
  ** room sized by those counts */
  if ((err = read_managers(w, d, &e, NULL, NULL)) != ECS_ERR_OK)
    return err;
  /* one block: the record indices (aligned, first), then a byte per
  ** manager of the world (+ 1 on each: never an allocation of 0 bytes,
  ** which the allocator treats as a free) */
  sorted_size = (size_t)e.nslot * sizeof *sorted + 1;
  block_size = (size_t)d->max_records * sizeof(uint32_t) + w->manager_count + 1;
  sorted = (nslot *)ecsi_scratch_realloc(w, NULL, 0, sorted_size);
  block = (unsigned char *)ecsi_scratch_realloc(w, NULL, 0, block_size);
  if (sorted == NULL || block == NULL) {
    err = ECS_ERR_NOMEM;
  } else if ((err = read_slots(d, &e, sorted)) == ECS_ERR_OK) {
    err = read_managers(w, d, &e, block + (size_t)d->max_records * sizeof(uint32_t),
                        (uint32_t *)(void *)block);
  }
  if (sorted != NULL) ecsi_scratch_realloc(w, sorted, sorted_size, 0);
  if (block != NULL) ecsi_scratch_realloc(w, block, block_size, 0);
  if (err != ECS_ERR_OK) return err;
  d->bad_name = NULL; /* set only with the error that names it */
  d->bad_name_len = 0;
  return ECS_ERR_OK;
}

/* The manager part at r as open read it (open checked it whole, and apply
** again that the world's managers still match). The part is read again
** rather than kept: open allocates nothing per manager. tmp takes the
** counts read_manager adds to, so d stays as open left it. */
static void next_manager(const ecs_world *w, const ecs_delta *d, rd *r,
                         mhead *h) {
  ecs_delta tmp = *d;
  rd e = {d->data, ENTITIES_AT, d->size - 8};
  ehead eh;
  (void)read_entities(&e, &eh);
  (void)read_manager(w, r, &tmp, &eh, h);
}

/*
** The values in the order apply consumes the host's references
** (decode_values' next): managers in the delta's order, records in
** order, lua cells in field order. The two walks must agree: refs[k] is
** the value of the k-th cell met here.
*/
ecs_err ecs_delta_each_value(const ecs_world *w, const ecs_delta *d,
                             ecs_err (*fn)(void *ud, const unsigned char *p,
                                           size_t len),
                             void *ud) {
  rd r;
  r.p = d->data;
  r.at = d->managers_at;
  r.n = d->size - 8;
  for (uint32_t k = 0; k < d->nmanagers; k++) {
    mhead h;
    const ecs_component *c;
    ecs_err err;
    rd v;
    next_manager(w, d, &r, &h);
    if (h.mode != 0) continue;
    c = (const ecs_component *)w->manager[h.m].self;
    if (c->nlua == 0) continue;
    v = r; /* (r is past the part: its extras too) */
    v.at = h.body_at;
    for (uint32_t n = 0; n < h.n; n++) {
      uint32_t index = 0, owner = 0;
      (void)r32(&v, &index);
      (void)r32(&v, &owner);
      if (owner == 0) continue;
      for (uint32_t f = 0; f < c->nfields; f++) {
        if (c->field[f].type == ECS_LUA) {
          uint32_t len = 0;
          (void)r32(&v, &len);
          if ((err = fn(ud, v.p + v.at, len)) != ECS_ERR_OK) return err;
          v.at += len;
        } else {
          v.at += c->elem[f];
        }
      }
    }
  }
  return ECS_ERR_OK;
}

/* ------------------------------------------------------------------------
** Apply
** --------------------------------------------------------------------- */

/* Where a state stands in an index's lap: live g at 2g + 1, free with next
** generation n at 2n; a step back is a wrap, or a restore of an older
** state, or a slot a smaller count drops (free, generation 0): purge. */
static uint32_t lap_pos(uint32_t s) {
  return is_free(s) ? 2u * (s & ECS_GENERATION_MASK)
                    : 2u * s + 1u;
}

/*
** (2) the entity part against w; sorted gets the named slots by index,
** popped the indices the pops take (first of the queue, then of pushed).
** open checked the part's own rules. The rule checked here is the world's
** invariant after the operations: a slot below the count is queued once
** when free and never when live. Unnamed slots keep their state and are
** not touched by the operations, so checking the named ones is enough.
*/
static ecs_err check_entities(const ecs_world *w, const ecs_delta *d,
                              const ehead *e, nslot *sorted, uint32_t *popped) {
  const unsigned char *pp = d->data + e->pushed_at;
  const ecsi_queue *q = &w->free;
  uint32_t live = e->old_live, old_count = w->head.slot_count;
  ecs_err err;
  if (e->old_count != old_count || e->old_qlen != q->len ||
      e->old_live != w->live)
    return ECS_ERR_BASE;
  if ((err = read_slots(d, e, sorted)) != ECS_ERR_OK) return err;
  for (uint32_t k = 0; k < e->nslot; k++) {
    nslot *s = &sorted[k];
    s->old = s->index < old_count ? w->head.slot[s->index] : ECS_SLOT_FREE;
    /* queued now exactly when free (an index past the count is not) */
    s->occ = s->index < old_count && is_free(s->old) ? 1 : 0;
    live += (uint32_t)!is_free(s->state);
    live -= (uint32_t)(s->index < old_count && !is_free(s->old));
  }
  if (live != e->new_live) return ECS_ERR_CORRUPT;
  for (uint32_t k = 0; k < e->npushed; k++) /* (named: read_slots) */
    find_slot(sorted, e->nslot, get32(pp + 4u * k))->occ++;
  for (uint32_t k = 0; k < e->npopped; k++) {
    uint32_t i = k < q->len ? q->item[(q->head + k) & (q->cap - 1u)]
                            : get32(pp + 4u * (k - q->len));
    nslot *s = find_slot(sorted, e->nslot, i);
    /* a popped index is taken for an entity: its state changes, so a
    ** delta that does not name it is not one a journal wrote */
    if (s == NULL) return ECS_ERR_CORRUPT;
    s->occ--;
    popped[k] = i;
  }
  /* queued after exactly when free and within the new count */
  for (uint32_t k = 0; k < e->nslot; k++)
    if (sorted[k].occ !=
        (is_free(sorted[k].state) && sorted[k].index < e->new_count ? 1 : 0))
      return ECS_ERR_CORRUPT;
  return ECS_ERR_OK;
}

/* (4) the table in place; u keeps what puts it back. Only the counts and
** the ring's head and length need keeping: the named slots' old states are
** in sorted, and the pushes go into ring positions past the queue's end,
** which nothing reads once the length is put back. */
typedef struct table_back {
  uint32_t slot_count, live, head, len;
} table_back;

static void table_apply(ecs_world *w, const ecs_delta *d, const ehead *e,
                        const nslot *sorted, table_back *u) {
  ecsi_queue *q = &w->free;
  uint32_t mask = q->cap - 1u;
  const unsigned char *pp = d->data + e->pushed_at;
  u->slot_count = w->head.slot_count;
  u->live = w->live;
  u->head = q->head;
  u->len = q->len;
  /* a world's first entity sets up slot 0 (reserved, never named) */
  if (w->head.slot_count == 0 && e->new_count > 0) w->head.slot[0] = ECS_SLOT_FREE;
  for (uint32_t k = 0; k < e->nslot; k++)
    w->head.slot[sorted[k].index] = (uint16_t)sorted[k].state;
  /* the ring has room for them (ecsi_entities_reserve in apply), so the
  ** positions past len hold no queued index */
  for (uint32_t k = 0; k < e->npushed; k++) /* into unused ring positions */
    q->item[(q->head + q->len + k) & mask] = get32(pp + 4u * k);
  q->head = (q->head + e->npopped) & mask;
  q->len = e->new_qlen;
  w->head.slot_count = e->new_count;
  w->live = e->new_live;
}

/* Slots at or past the old count were unused: the old count hides them
** again, whatever table_apply wrote there. */
static void table_restore(ecs_world *w, const ehead *e, const nslot *sorted,
                          const table_back *u) {
  for (uint32_t k = 0; k < e->nslot; k++)
    if (sorted[k].index < u->slot_count)
      w->head.slot[sorted[k].index] = (uint16_t)sorted[k].old;
  w->free.head = u->head;
  w->free.len = u->len;
  w->head.slot_count = u->slot_count;
  w->live = u->live;
}

/* Decode the encoded values of one record at r into packed (lua cells:
** the next references); open checked them. */
static void decode_values(rd *r, const ecs_component *c, unsigned char *packed,
                          const uint32_t *refs, uint32_t *next) {
  for (uint32_t k = 0; k < c->nfields; k++) {
    if (c->field[k].type == ECS_LUA) {
      uint32_t len = 0, ref = refs != NULL ? refs[*next] : 0;
      (void)r32(r, &len);
      r->at += len;
      (*next)++;
      memcpy(packed, &ref, 4);
    } else {
      memcpy(packed, r->p + r->at, c->elem[k]);
      r->at += c->elem[k];
    }
    packed += c->elem[k];
  }
}

/*
** (5) the records of every component: owners alive at their index under
** the new table, and -- in a part without a layout, whose rows do not
** change -- each with its row already (rows are only ever given by a
** layout: a record that would add an instance without one is not a delta
** a journal writes).
*/
static ecs_err check_records(ecs_world *w, const ecs_delta *d) {
  rd r;
  r.p = d->data;
  r.at = d->managers_at;
  r.n = d->size - 8;
  for (uint32_t k = 0; k < d->nmanagers; k++) {
    mhead h;
    ecs_component *c;
    rd o;
    next_manager(w, d, &r, &h);
    if (h.mode != 0) continue;
    c = (ecs_component *)w->manager[h.m].self;
    o.p = d->data;
    o.at = h.body_at;
    o.n = d->size - 8;
    for (uint32_t n = 0; n < h.n; n++) {
      uint32_t index = 0, owner = 0;
      (void)r32(&o, &index);
      (void)r32(&o, &owner);
      if (owner == 0) continue;
      if (!ecs_alive(w, owner) ||
          (!(h.flags & 1u) && ecs_component_lookup(w, c, owner) == ECS_NO_INSTANCE))
        return ECS_ERR_CORRUPT;
      skip_values(&o, c);
    }
  }
  return ECS_ERR_OK;
}

/* (4) The world's own journal captures every pair the records name, before
** anything changes, so that its own delta or undo covers this apply. */
static void capture_records(ecs_world *w, const ecs_delta *d) {
  rd r = {d->data, d->managers_at, d->size - 8};
  for (uint32_t k = 0; k < d->nmanagers; k++) {
    mhead h;
    ecs_component *c;
    rd v;
    next_manager(w, d, &r, &h);
    if (h.mode != 0) continue;
    c = (ecs_component *)w->manager[h.m].self;
    v = r;
    v.at = h.body_at;
    for (uint32_t n = 0; n < h.n; n++) {
      uint32_t index = 0, owner = 0;
      (void)r32(&v, &index);
      (void)r32(&v, &owner);
      ecsi_journal_capture(w, c, index);
      if (owner != 0) skip_values(&v, c);
    }
  }
}

/* Bytes of the pairs of a layout part of nrows rows (+ 1: never 0). */
static size_t pairs_size(uint32_t nrows) {
  return (size_t)nrows * sizeof(ecsi_layout_row) + 1;
}

/*
** (5) A component part with a layout: the world's rows must be the mark's
** (its size, and each row the delta changes held by the owner the delta
** says it had: else the world is not the delta's base), and the layout the
** delta gives must be one the world can hold (component_layout.c, under
** the new table), every present record's owner in it. l, pairs (freed by
** the caller) and room are set for the commit.
*/
static ecs_err prepare_layout(ecs_world *w, const ecs_delta *d, const mhead *h,
                              ecs_component *c, ecsi_layout *l,
                              ecsi_layout_row **pairs, ecsi_layout_room *room) {
  rd r = {d->data, h->rows_at, d->size - 8};
  uint32_t n = 0;
  ecs_err err;
  if (c->size != h->mark_size) return ECS_ERR_BASE;
  *pairs = (ecsi_layout_row *)ecsi_realloc(w, NULL, 0, pairs_size(h->nrows));
  if (*pairs == NULL) return ECS_ERR_NOMEM;
  for (uint32_t k = 0; k < h->nrows; k++) {
    uint32_t row = 0, then = 0, now = 0;
    (void)r32(&r, &row);
    (void)r32(&r, &then);
    (void)r32(&r, &now);
    /* the hash does not depend on rows, so the base check could not see
    ** a replica whose rows differ: this does */
    if (row < h->mark_size && owners(c)[row] != then) return ECS_ERR_BASE;
    if (now == 0) continue; /* a row the new size cuts off */
    (*pairs)[n].row = row;
    (*pairs)[n].owner = now;
    n++;
  }
  l->size = h->new_size;
  l->gc_cursor = h->cursor;
  l->churn = h->churn;
  l->rows = *pairs;
  l->n = n;
  if ((err = ecsi_layout_reserve(w, c, l, room)) != ECS_ERR_OK) return err;
  r.at = h->body_at;
  for (uint32_t k = 0; k < h->n; k++) { /* every present owner is held */
    uint32_t index = 0, owner = 0;
    (void)r32(&r, &index);
    (void)r32(&r, &owner);
    if (owner == 0) continue;
    if (!ecsi_layout_holds(c, l, room, owner)) return ECS_ERR_CORRUPT;
    skip_values(&r, c);
  }
  return ECS_ERR_OK;
}

/* (6) The stamps of a part's present records: the kinds the delta's world
** keeps take its stamps; a kind only this world keeps, or every kind when
** the delta carries none, counts the records as written (and those new to
** c as added) now. isnew[k]: record k's owner had no row before. */
static void apply_stamps(ecs_world *w, const ecs_delta *d, const mhead *h,
                         ecs_component *c, const uint8_t *isnew) {
  rd r = {d->data, h->body_at, d->size - 8};
  /* first, for each kind the delta carries no stamps of, every present
  ** record counts as changed now (and as added now, if new to c); then,
  ** for the kinds it carries, the journal's world's stamps */
  uint32_t kinds = (h->flags & 2u) ? h->kinds : 0, now = ecsi_clock_now(w);
  for (uint32_t k = 0, p = 0; k < h->n; k++) {
    uint32_t index = 0, owner = 0;
    ecs_instance i;
    bool fresh;
    (void)r32(&r, &index);
    (void)r32(&r, &owner);
    if (owner == 0) continue;
    fresh = isnew[p++] != 0;
    skip_values(&r, c);
    i = ecs_component_lookup(w, c, owner);
    if (i == ECS_NO_INSTANCE) continue;
    for (int t = 0; t < ECSI_TICK_KINDS; t++)
      if (c->ticks.at[t] != NULL && !(kinds >> t & 1u) &&
          (t == ECSI_TICK_CHANGED || fresh))
        c->ticks.at[t][i] = now;
  }
  if (kinds != 0) {
    r.at = h->stamps_at;
    for (uint32_t k = 0; k < h->nstamps; k++) {
      uint32_t index = 0, s[ECSI_TICK_KINDS] = {0, 0};
      uint32_t i;
      (void)r32(&r, &index);
      for (int t = 0; t < ECSI_TICK_KINDS; t++) (void)r32(&r, &s[t]);
      i = map_get(c, index);
      if (i == ECS_NO_INSTANCE || !ecs_alive(w, owners(c)[i])) continue;
      for (int t = 0; t < ECSI_TICK_KINDS; t++)
        if (c->ticks.at[t] != NULL && (kinds >> t & 1u)) c->ticks.at[t][i] = s[t];
    }
  }
}

/* (0) the managers as open found them: a component redefined since open
** (by a finalizer while the host made the values) is the error open would
** have given, and the values the host made are still one per lua cell.
** The counts must match too: refs has d->nvalues entries and isnew is
** sized by d->max_records; a schema that framed them otherwise would read
** past both. */
static ecs_err recheck_managers(const ecs_world *w, const ecs_delta *d,
                                const ehead *e) {
  ecs_delta tmp = *d;
  rd r = {d->data, d->managers_at, d->size - 8};
  tmp.nvalues = tmp.max_records = 0;
  for (uint32_t k = 0; k < d->nmanagers; k++) {
    mhead h;
    ecs_err err = read_manager(w, &r, &tmp, e, &h);
    if (err != ECS_ERR_OK) return err;
  }
  return tmp.nvalues == d->nvalues && tmp.max_records == d->max_records
             ? ECS_ERR_OK
             : ECS_ERR_SCHEMA_DIFFERS;
}

/*
** e is alive again at its old generation (the delta of a restore or an
** undo that took its destroy back). A component may still hold e's record
** from before its death, which the lazy gc had not reclaimed: the record
** is e's instance again, with no add to tell the queries that list the
** component (the record's values and layout may stay as they are, so
** neither the put nor the layout below tells them). They rebuild at their
** next use, as after a restore that revives entities.
*/
static void tell_revived(ecs_world *w, ecs_entity e) {
  for (uint32_t m = 0; m < w->manager_count; m++) {
    ecs_component *c;
    if (!ecs_component_is(w->manager[m].cls)) continue;
    c = (ecs_component *)w->manager[m].self;
    if (c->nwatch > 0 && ecs_component_lookup(w, c, e) != ECS_NO_INSTANCE)
      ecsi_component_tell_stale(w, c);
  }
}

ecs_err ecs_delta_apply(ecs_world *w, const ecs_delta *d, const uint32_t *refs,
                        const ecs_journal_host *host, ecs_journal_bad *bad) {
  rd r;
  ehead e;
  nslot *sorted = NULL;
  uint32_t *popped = NULL, nm = w->manager_count;
  void **twin = NULL;
  ecsi_layout *lay = NULL;
  ecsi_layout_row **pairs = NULL;
  ecsi_layout_room *room = NULL;
  uint32_t *nrows = NULL;
  uint8_t *isnew = NULL;
  ecsi_cursors cur;
  size_t sorted_size, popped_size, twin_size, lay_size, isnew_size, cells = 0;
  table_back u;
  uint64_t h;
  ecs_err err;
  /* a pointer loop or cursor holds columns whose rows this may move */
  if (w->pins != 0) return ECS_ERR_PINNED;
  r.p = d->data;
  r.at = ENTITIES_AT;
  r.n = d->size - 8;
  (void)read_entities(&r, &e);
  /* (1) after (0), which is cheap and names the manager that changed; the
  ** hash is O(changes) when w has a journal of its own, else O(world) */
  if ((err = recheck_managers(w, d, &e)) != ECS_ERR_OK) return err;
  if ((err = ecs_world_state_hash(w, host, &h, bad)) != ECS_ERR_OK) return err;
  if (h != d->base) return ECS_ERR_BASE;
  /* (open bounded the pops by the base's queue and the pushes) */
  sorted_size = (size_t)e.nslot * sizeof *sorted + 1;
  popped_size = (size_t)e.npopped * sizeof *popped + 1;
  twin_size = (size_t)nm * sizeof *twin + 1;
  lay_size = (size_t)nm * (sizeof *lay + sizeof *pairs + sizeof *room + sizeof *nrows) + 1;
  isnew_size = (size_t)d->max_records + 1;
  memset(&cur, 0, sizeof cur);
  sorted = (nslot *)ecsi_realloc(w, NULL, 0, sorted_size);
  popped = (uint32_t *)ecsi_realloc(w, NULL, 0, popped_size);
  twin = (void **)ecsi_realloc(w, NULL, 0, twin_size);
  lay = (ecsi_layout *)ecsi_realloc(w, NULL, 0, lay_size);
  isnew = (uint8_t *)ecsi_realloc(w, NULL, 0, isnew_size);
  if (sorted == NULL || popped == NULL || twin == NULL ||
      lay == NULL || isnew == NULL) {
    err = ECS_ERR_NOMEM;
    goto done;
  }
  /* zeroed: the cleanup at done frees only what was made */
  memset(twin, 0, twin_size);
  memset(lay, 0, lay_size);
  pairs = (ecsi_layout_row **)(void *)(lay + nm);
  room = (ecsi_layout_room *)(void *)(pairs + nm);
  nrows = (uint32_t *)(void *)(room + nm);
  /* the cursors are read (and allocated) now: the commit cannot fail */
  {
    ecs_reader in;
    in.data = d->data;
    in.size = d->size - 8;
    in.pos = d->cursors_at;
    if ((err = ecsi_cursors_read(w, &in, &cur)) != ECS_ERR_OK) goto done;
  }
  /* (2) the entity part; (3) room for the table */
  /* (at least 2 slots, 0 being reserved; the ring: the queue as it is and
  ** the pushes, which table_apply writes before the pops move the head) */
  if ((err = check_entities(w, d, &e, sorted, popped)) != ECS_ERR_OK ||
      (err = ecsi_entities_reserve(w, e.new_count > 2u ? e.new_count : 2u,
                                   w->free.len + e.npushed + 1u)) != ECS_ERR_OK)
    goto done;
  /* (4) the table, the world's own journal capturing first: the slots,
  ** the entities that die, and every pair the records name, all under the
  ** old table (a capture is the state before; one taken for an apply that
  ** then fails describes the world as it stays) */
  if (w->journal != NULL) {
    for (uint32_t k = 0; k < e.nslot; k++) {
      const nslot *s = &sorted[k];
      ecsi_journal_slot(w, s->index);
      if (s->index < w->head.slot_count && !is_free(s->old) && s->state != s->old)
        ecsi_journal_dying(w, ecs_make_entity(s->index, s->old));
    }
    capture_records(w, d);
  }
  table_apply(w, d, &e, sorted, &u);
  /* (5) records, layouts and twins against the new table: an owner is
  ** alive only under it (an entity the delta creates), and every failure
  ** from here to the commit puts the old table back */
  err = check_records(w, d);
  r.at = d->managers_at;
  for (uint32_t k = 0; k < d->nmanagers && err == ECS_ERR_OK; k++) {
    mhead mh;
    const ecs_manager_class *cls;
    ecs_reader in;
    next_manager(w, d, &r, &mh);
    if (mh.mode == 0) /* lua cells: each record's, put over the row's */
      cells += (size_t)mh.n * ((ecs_component *)w->manager[mh.m].self)->nlua;
    if (mh.mode == 0 && (mh.flags & 1u)) {
      nrows[mh.m] = mh.nrows;
      err = prepare_layout(w, d, &mh, (ecs_component *)w->manager[mh.m].self,
                           &lay[mh.m], &pairs[mh.m], &room[mh.m]);
      cells += room[mh.m].refs;
      continue;
    }
    if (mh.mode != 1) continue;
    cls = w->manager[mh.m].cls;
    if ((twin[mh.m] = cls->twin(w, w->manager[mh.m].self)) == NULL) {
      err = ECS_ERR_NOMEM;
      break;
    }
    in.data = d->data + mh.body_at;
    in.size = (size_t)mh.size;
    in.pos = 0;
    err = cls->load(w, twin[mh.m], &in);
    if (err == ECS_ERR_OK && in.pos != in.size) err = ECS_ERR_CORRUPT;
  }
  /* the drop list's room for all of it at once (reserves do not add up) */
  if (err == ECS_ERR_OK) err = ecsi_component_refs_reserve(w, cells);
  if (err != ECS_ERR_OK) {
    table_restore(w, &e, sorted, &u);
    for (uint32_t m = 0; m < nm; m++)
      if (twin[m] != NULL) w->manager[m].cls->free(w, twin[m]);
    goto done;
  }
  /* (6) commit: nothing below fails (every block, ring, row and drop-list
  ** entry was reserved above); the order is the one a destroy and a load
  ** keep: managers purge and queries forget the dead first, then records */
  for (uint32_t k = 0; k < e.nslot; k++) {
    const nslot *s = &sorted[k];
    if (s->index >= u.slot_count || s->state == s->old) continue;
    /* the components' rows are the delta's world's (their layouts): only
    ** the managers kept whole purge */
    if (lap_pos(s->state) < lap_pos(s->old))
      for (uint32_t m = 0; m < nm; m++)
        if (!ecs_component_is(w->manager[m].cls) && w->manager[m].cls->purge != NULL)
          w->manager[m].cls->purge(w, w->manager[m].self, s->index);
    if (!is_free(s->old))
      ecsi_queries_entity_died(w, ecs_make_entity(s->index, s->old));
    if (!is_free(s->state)) tell_revived(w, ecs_make_entity(s->index, s->state));
  }
  /* the queue operations as the world's own journal records its own:
  ** in the order they happened (pushes, then the pops that follow them) */
  if (w->journal != NULL) {
    const unsigned char *pp = d->data + e.pushed_at;
    for (uint32_t k = 0; k < e.npushed; k++) ecsi_journal_pushed(w, get32(pp + 4u * k));
    for (uint32_t k = 0; k < e.npopped; k++) ecsi_journal_popped(w, popped[k]);
  }
  /* each component: the journal's captures (the state before), the layout
  ** (the rows as the delta's world has them: data moves with its owner),
  ** the values of each present record (a component without a layout puts
  ** its records as before: add, remove, write), the stamps */
  {
    uint32_t next = 0;
    r.at = d->managers_at;
    for (uint32_t k = 0; k < d->nmanagers; k++) {
      mhead mh;
      ecs_component *c;
      rd v;
      uint32_t p = 0;
      next_manager(w, d, &r, &mh);
      if (mh.mode != 0) continue;
      c = (ecs_component *)w->manager[mh.m].self;
      v = r; /* (r is past the part) */
      v.at = mh.body_at;
      for (uint32_t n = 0; n < mh.n; n++) {
        uint32_t index = 0, owner = 0;
        (void)r32(&v, &index);
        (void)r32(&v, &owner);
        if (owner == 0) continue;
        /* before the layout moves owners into rows: "added" is about
        ** the world before the delta */
        isnew[p++] = ecs_component_lookup(w, c, owner) == ECS_NO_INSTANCE;
        skip_values(&v, c);
      }
      if (mh.flags & 1u) ecsi_layout_apply(w, c, &lay[mh.m], &room[mh.m]);
      v.at = mh.body_at;
      for (uint32_t n = 0; n < mh.n; n++) {
        uint32_t index = 0, owner = 0;
        unsigned char packed[ECS_MAX_FIELDS * 8];
        (void)r32(&v, &index);
        (void)r32(&v, &owner);
        if (owner != 0) decode_values(&v, c, packed, refs, &next);
        if (owner != 0)
          ecsi_component_put_values(w, c, ecs_component_lookup(w, c, owner), packed);
      }
      apply_stamps(w, d, &mh, c, isnew);
    }
  }
  for (uint32_t m = 0; m < nm; m++)
    if (twin[m] != NULL) {
      w->manager[m].cls->swap(w, w->manager[m].self, twin[m]);
      w->manager[m].cls->free(w, twin[m]);
    }
  /* a smaller slot count (the delta of a restore): the dead records the
  ** managers kept whole still hold at the indices it dropped would outlive
  ** their slots -- each reclaims its dead records now, one whole lap (O(the
  ** world), as the restore it carries). The components' rows are the
  ** delta's world's, dead records and all: no gc there. */
  if (e.new_count < u.slot_count)
    for (uint32_t m = 0; m < nm; m++)
      if (!ecs_component_is(w->manager[m].cls) && w->manager[m].cls->gc != NULL)
        (void)w->manager[m].cls->gc(w, w->manager[m].self, SIZE_MAX);
  ecsi_cursors_merge(w, &cur);
  ecsi_cursors_keep(w, &cur);
  /* rows handed out before are no longer exact (iterators compare it) */
  w->destroy_epoch++;
  w->loads++; /* loops begun before it are over */
done:
  if (room != NULL) { /* (set once every block was allocated) */
    for (uint32_t m = 0; m < nm; m++) {
      ecsi_layout_release(w, &room[m]); /* (nothing left after an apply) */
      if (pairs[m] != NULL) ecsi_free(w, pairs[m], pairs_size(nrows[m]));
    }
  }
  ecsi_free(w, lay, lay_size);
  ecsi_free(w, isnew, isnew_size);
  ecsi_cursors_free(w, &cur);
  ecsi_free(w, sorted, sorted_size);
  ecsi_free(w, popped, popped_size);
  ecsi_free(w, twin, twin_size);
  return err;
}
