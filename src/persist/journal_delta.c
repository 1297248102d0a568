/*
** journal_delta.c -- the state hash and the writing of deltas (journal.h;
** the format: docs/persistence.md, "Deltas, byte by byte"). journal.c
** records the captures these read; delta.c applies what this writes.
**
** The state hash is a sum of 64-bit hashes, one per live instance of a
** generic component (its component's name, its owner, its values with
** lua cells as plain data), one per entity slot, one for the slot count,
** one for the free queue (a polynomial in its order: sum of h(q_k) P^k,
** P odd, so popping and pushing update it without a walk), one per other
** manager (its save). Sums do not depend on row order, and each capture
** updates them: the old instance's hash out, the new one's in.
**
** Layer: world (with journal.c).
*/
#include <string.h>

#include "journal_private.h"
#include "snapshot.h"

/* ------------------------------------------------------------------------
** Hashing (journal.h, "state hash")
** --------------------------------------------------------------------- */

/*
** Every term of the sum goes through ecsi_mix64 with a constant of its own
** kind (or the name's hash): a slot, the slot count, a queue item and an
** instance are mixed from different inputs, so that a term of one kind
** cannot cancel one of another in the sum. Changing any of these changes
** every state hash, hence what deltas carry as base and result: both ends
** of a replica must run the same code.
*/
uint64_t ecsi_hash_name(ecs_namespace ns, const char *name, size_t len) {
  return ecsi_mix64(ecs_snapshot_hash(name, len) + (uint64_t)ns);
}

/* A slot's state fits 16 bits (a generation, or ECS_SLOT_FREE | the next
** generation): index and state in one word, each slot a distinct input. */
uint64_t ecsi_hash_slot(uint32_t index, uint32_t state) {
  return ecsi_mix64(((uint64_t)index << 16 | state) ^ 0x51075107u);
}

uint64_t ecsi_hash_slot_count(uint32_t count) {
  return ecsi_mix64((uint64_t)count ^ 0xC0C0C0C0C0C0u);
}

uint64_t ecsi_hash_queue_item(uint32_t index) {
  return ecsi_mix64((uint64_t)index ^ 0xF4EE0000000u);
}

uint64_t ecsi_hash_whole(uint64_t name_hash, const void *bytes, size_t n) {
  return ecsi_mix64(name_hash ^ ecs_snapshot_hash(bytes, n));
}

/* A manager kept whole counts by its save, and not at all while it holds
** no live record: a world that registered an empty one is no other state
** than one that did not. */
uint64_t ecsi_whole_term(const ecs_world *w, uint32_t m, const void *bytes,
                         size_t n) {
  const ecs_manager_class *cls = w->manager[m].cls;
  if (cls->stats != NULL) {
    ecs_manager_stats st;
    memset(&st, 0, sizeof st);
    cls->stats(w, w->manager[m].self, &st);
    if (st.live == 0) return 0;
  }
  return ecsi_hash_whole(ecsi_manager_name_hash(w, m), bytes, n);
}

/* base^e mod 2^64 (square and multiply): the queue hash's shifts by P^k. */
static uint64_t pow_p(uint64_t base, uint64_t e) {
  uint64_t r = 1;
  while (e != 0) {
    if (e & 1u) r *= base;
    base *= base;
    e >>= 1;
  }
  return r;
}

/*
** P^-1 mod 2^64, which exists because P is odd: x = P is already right in
** its low 3 bits (an odd square is 1 mod 8), and each Newton step
** x *= 2 - P x doubles the bits that are right (3, 6, ..., 96 >= 64).
** Popping k items shifts every remaining term down by P^k: this undoes it.
*/
static uint64_t inverse_p(void) { /* Newton: x = P^-1 mod 2^64 */
  uint64_t p = ECSI_QUEUE_P, x = p;
  for (int k = 0; k < 6; k++) x *= 2u - p * x;
  return x;
}

/* The packed form is the one captures, after-images, records and hashes
** all use: field after field, no padding, lua cells as their 4-byte
** references; so "same row" is a memcmp and a record's values a memcpy. */
void ecsi_pack_row(const ecs_component *c, uint32_t i, unsigned char *out) {
  for (uint32_t k = 0; k < c->nfields; k++) {
    memcpy(out, col(c, k) + (size_t)i * c->elem[k], c->elem[k]);
    out += c->elem[k];
  }
}

/* A writer that only counts: encode_ref learns a value's length first. */
static ecs_err count_bytes(void *ud, const void *data, size_t size) {
  (void)data;
  *(size_t *)ud += size;
  return ECS_ERR_OK;
}

/* A lua cell as plain data: u32 length, then the host's bytes (encoded
** twice, counting first, so that nothing is allocated for it). */
static ecs_err encode_ref(const ecs_journal_host *host, uint32_t ref,
                          ecs_writer *out) {
  size_t len = 0;
  ecs_writer counter;
  ecs_err err;
  if (ref == 0) return ecs_write_u32(out, 0);
  counter.write = count_bytes;
  counter.ud = &len;
  if ((err = host->encode(host->ud, ref, &counter)) != ECS_ERR_OK) return err;
  /* length 0 is how an empty cell (ref 0) is written: a value that encodes
  ** to nothing would read back as no value, so it is refused */
  if (len == 0 || len > UINT32_MAX) return ECS_ERR_INVALID;
  if ((err = ecs_write_u32(out, (uint32_t)len)) != ECS_ERR_OK) return err;
  return host->encode(host->ud, ref, out);
}

/*
** A record's values as the format has them (docs/persistence.md, "Deltas,
** byte by byte": mode 0): other fields' bytes as stored, lua cells as
** plain data. The reader (delta.c, check_values) frames them by the
** component's schema alone, which is why the schema heads the part. On
** ECS_ERR_INVALID *bad says which cell, for the message the host raises.
*/
ecs_err ecsi_encode_packed(const ecs_component *c, const unsigned char *packed,
                           const ecs_journal_host *host, ecs_writer *out,
                           ecs_entity owner, ecs_journal_bad *bad) {
  ecs_err err = ECS_ERR_OK;
  for (uint32_t k = 0; k < c->nfields && err == ECS_ERR_OK; k++) {
    if (c->field[k].type != ECS_LUA) {
      err = ecs_write(out, packed, c->elem[k]);
    } else if (host == NULL || host->encode == NULL) {
      err = ecs_write_u32(out, 0); /* no host, no values: an empty cell */
    } else {
      uint32_t ref;
      memcpy(&ref, packed, sizeof ref);
      err = encode_ref(host, ref, out);
      if (err == ECS_ERR_INVALID && bad != NULL) {
        bad->component = c->name;
        bad->field = c->field[k].name;
        bad->entity = owner;
      }
    }
    packed += c->elem[k];
  }
  return err;
}

/*
** Owner and name go into the hash so that the same values under another
** entity, or in another component, are another term. buf holds at most
** 8 bytes a field (a lua cell's 4-byte reference becomes its 8-byte value
** hash), hence ECS_MAX_FIELDS * 8.
*/
ecs_err ecsi_hash_packed(const ecs_world *w, const ecs_component *c,
                         uint64_t name_hash, ecs_entity owner,
                         const unsigned char *packed,
                         const ecs_journal_host *host, uint64_t *out,
                         ecs_journal_bad *bad) {
  uint64_t acc = name_hash + (uint64_t)owner * 0x9E3779B97F4A7C15u;
  unsigned char buf[ECS_MAX_FIELDS * 8];
  size_t n = 0;
  (void)w;
  if (c->nlua == 0) { /* the common case: one hash of the packed bytes */
    *out = ecsi_hash_plain(name_hash, owner, packed, ecsi_packed_size(c));
    return ECS_ERR_OK;
  }
  /* lua cells count by their values' hash (the host's: a table's does not
  ** depend on the order its pairs are stored in), not their references */
  for (uint32_t k = 0; k < c->nfields; k++) {
    if (c->field[k].type == ECS_LUA) {
      uint32_t ref;
      uint64_t v = 0;
      memcpy(&ref, packed, sizeof ref);
      if (ref != 0 && host != NULL && host->hash != NULL) {
        ecs_err err = host->hash(host->ud, ref, &v);
        if (err != ECS_ERR_OK) {
          if (err == ECS_ERR_INVALID && bad != NULL) {
            bad->component = c->name;
            bad->field = c->field[k].name;
            bad->entity = owner;
          }
          return err;
        }
        v |= 1u; /* never the empty cell's 0 */
      }
      memcpy(buf + n, &v, 8);
      n += 8;
    } else {
      memcpy(buf + n, packed, c->elem[k]);
      n += c->elem[k];
    }
    packed += c->elem[k];
  }
  *out = ecsi_mix64(acc ^ ecsi_bytes_hash(buf, n));
  return ECS_ERR_OK;
}

/* ------------------------------------------------------------------------
** The state hash, whole (O(world))
** --------------------------------------------------------------------- */

/* sum of h(q_k) P^k over the queue front to back: order matters (the
** replica must hand out the same next ids), hence the powers of P. */
uint64_t ecsi_journal_queue_hash(const ecs_world *w) {
  const ecsi_queue *q = &w->free;
  uint64_t h = 0, p = 1;
  for (uint32_t k = 0; k < q->len; k++) {
    h += ecsi_hash_queue_item(q->item[(q->head + k) & (q->cap - 1u)]) * p;
    p *= ECSI_QUEUE_P;
  }
  return h;
}

/* Slot 0 is reserved (the null entity): not counted. Free slots count
** too: their next generation is state the replica must share. */
static uint64_t entities_hash(const ecs_world *w) {
  uint64_t h = ecsi_hash_slot_count(w->head.slot_count);
  for (uint32_t i = 1; i < w->head.slot_count; i++)
    h += ecsi_hash_slot(i, w->head.slot[i]);
  return h;
}

uint64_t ecsi_manager_name_hash(const ecs_world *w, uint32_t m) {
  return ecsi_hash_name(w->manager[m].ns, w->manager[m].name,
                        strlen(w->manager[m].name));
}

/* The live instance of c at index: its row, or ECS_NO_INSTANCE. The map
** may still hold a dead owner's record (the gc is lazy): not an instance. */
static uint32_t live_row(const ecs_world *w, const ecs_component *c,
                         uint32_t index) {
  uint32_t i = map_get(c, index);
  if (i == ECS_NO_INSTANCE || !ecs_alive(w, owners(c)[i])) return ECS_NO_INSTANCE;
  return i;
}

static ecs_err row_hash(ecs_world *w, const ecs_component *c, uint64_t nh,
                        uint32_t i, const ecs_journal_host *host, uint64_t *out,
                        ecs_journal_bad *bad) {
  unsigned char packed[ECS_MAX_FIELDS * 8];
  ecsi_pack_row(c, i, packed);
  return ecsi_hash_packed(w, c, nh, owners(c)[i], packed, host, out, bad);
}

/* Manager m's save into b, from its start (b is reused between managers). */
ecs_err ecsi_journal_save_whole(ecs_world *w, uint32_t m, ecsi_jbuf *b) {
  ecs_writer out;
  out.write = ecsi_jbuf_write;
  out.ud = b;
  b->n = 0;
  return w->manager[m].cls->save(w, w->manager[m].self, &out);
}

/*
** The state hash from nothing: what a journal starts from at its open, and
** what a world without a journal (or whose journal lost track) has to pay
** for, in apply_delta's base check too. It must equal what walk_all
** reaches by updates, term for term: dead records are skipped here as
** live_row skips them there.
*/
ecs_err ecsi_journal_full_hash(ecs_world *w, const ecs_journal_host *host,
                         uint64_t *out, ecs_journal_bad *bad) {
  uint64_t h = entities_hash(w) + ecsi_journal_queue_hash(w);
  ecsi_jbuf b = {NULL, NULL, 0, 0};
  ecs_err err = ECS_ERR_OK;
  b.w = w;
  for (uint32_t m = 0; m < w->manager_count && err == ECS_ERR_OK; m++) {
    const ecs_manager_class *cls = w->manager[m].cls;
    uint64_t nh = ecsi_manager_name_hash(w, m);
    if (ecs_component_is(cls)) {
      const ecs_component *c = (const ecs_component *)w->manager[m].self;
      for (uint32_t i = 0; i < c->size && err == ECS_ERR_OK; i++) {
        uint64_t r;
        if (!ecs_alive(w, owners(c)[i])) continue;
        if ((err = row_hash(w, c, nh, i, host, &r, bad)) == ECS_ERR_OK) h += r;
      }
    } else if (cls->save != NULL) {
      if ((err = ecsi_journal_save_whole(w, m, &b)) == ECS_ERR_OK)
        h += ecsi_whole_term(w, m, b.p, b.n);
    }
  }
  ecsi_jbuf_free(&b);
  if (err == ECS_ERR_OK) *out = h;
  return err;
}

/* ------------------------------------------------------------------------
** Deltas (the format: docs/persistence.md, "Deltas, byte by byte")
** --------------------------------------------------------------------- */

/* Little-endian by bytes, whatever the machine: the format's order. Counts
** whose value is known only at the end are written as 0, then patched in
** place with put_u32 at the offset noted before (b->p may move meanwhile:
** offsets, never pointers, are kept). */
static void put_u32(unsigned char *b, uint32_t v) {
  for (int k = 0; k < 4; k++) b[k] = (unsigned char)(v >> (8 * k));
}

static ecs_err w32(ecsi_jbuf *b, uint32_t v) {
  unsigned char x[4];
  put_u32(x, v);
  return ecsi_jbuf_write(b, x, 4);
}

static ecs_err w64(ecsi_jbuf *b, uint64_t v) {
  unsigned char x[8];
  put_u32(x, (uint32_t)v);
  put_u32(x + 4, (uint32_t)(v >> 32));
  return ecsi_jbuf_write(b, x, 8);
}

static ecs_err wtext(ecsi_jbuf *b, const char *s) {
  size_t n = strlen(s);
  ecs_err err = w32(b, (uint32_t)n);
  return err != ECS_ERR_OK ? err : ecsi_jbuf_write(b, s, n);
}

/*
** Q_now = drop k (Q_mark ++ pushed), k = the pops: its hash from the
** mark's, in O(pops + pushes). The queue is FIFO, so the k popped indices
** are the first k of Q_mark ++ pushed: appending the pushes adds their
** terms at powers from P^len(Q_mark) on; subtracting the popped terms
** (at P^0 .. P^(k-1), where they stood) leaves the rest at P^k and up,
** and multiplying by P^-k moves it down to where Q_now's terms stand.
*/
static uint64_t queue_hash_now(const ecs_journal *j) {
  uint64_t h = j->mark_qhash, pk = 1, hl = 0, hp = 0;
  for (uint32_t k = 0; k < j->npushed; k++) {
    hl += ecsi_hash_queue_item(j->pushed[k]) * pk;
    pk *= ECSI_QUEUE_P;
  }
  h += pow_p(ECSI_QUEUE_P, j->mark_qlen) * hl;
  pk = 1;
  for (uint32_t k = 0; k < j->npopped; k++) {
    hp += ecsi_hash_queue_item(j->popped[k]) * pk;
    pk *= ECSI_QUEUE_P;
  }
  return (h - hp) * pow_p(inverse_p(), j->npopped);
}


/*
** Slot n of the journal's captures is as it was at the mark (captured by an
** apply_delta that was refused, say): left out of a delta. Past both slot
** counts it never existed; below them its state is the same -- unless the
** free queue moved, when it could be an index that went round all 256
** generations, which the queue's operations name: kept then.
*/
static bool slot_unchanged(const ecs_world *w, const ecs_journal *j,
                           uint32_t n) {
  uint32_t i = j->slot[n].index;
  if (i >= w->head.slot_count && i >= j->mark_slot_count) return true;
  return i < w->head.slot_count && i < j->mark_slot_count &&
         w->head.slot[i] == j->slot[n].old && j->npushed == 0 &&
         j->npopped == 0;
}

/*
** The entity part: the hash brought from the mark to now (every captured
** slot's old term out, its term now in, counted only below the count it
** belongs to; the count's and the queue's terms replaced), then, when a
** delta is written, the six counts, the slots changed and the queue
** operations, in the order of docs/persistence.md, "Deltas, byte by byte".
** The slot list is the journal's captures minus those back at their mark
** state, so its count is patched after the walk.
*/
static ecs_err walk_entities(ecs_world *w, const ecs_journal *j, ecsi_jwalk *k) {
  ecsi_jbuf *b = k->out;
  ecs_err err = ECS_ERR_OK;
  size_t count_at;
  uint32_t written = 0, skip;
  k->hash += ecsi_hash_slot_count(w->head.slot_count) -
             ecsi_hash_slot_count(j->mark_slot_count);
  for (uint32_t n = 0; n < j->nslot; n++) {
    uint32_t i = j->slot[n].index;
    if (i < j->mark_slot_count) k->hash -= ecsi_hash_slot(i, j->slot[n].old);
    if (i < w->head.slot_count) k->hash += ecsi_hash_slot(i, w->head.slot[i]);
  }
  k->qhash = queue_hash_now(j);
  k->hash += k->qhash - j->mark_qhash;
  if (b == NULL) return ECS_ERR_OK;
  if ((err = w32(b, j->mark_slot_count)) != ECS_ERR_OK ||
      (err = w32(b, w->head.slot_count)) != ECS_ERR_OK ||
      (err = w32(b, j->mark_qlen)) != ECS_ERR_OK ||
      (err = w32(b, w->free.len)) != ECS_ERR_OK ||
      (err = w32(b, j->mark_live)) != ECS_ERR_OK ||
      (err = w32(b, w->live)) != ECS_ERR_OK)
    return err;
  count_at = b->n;
  if ((err = w32(b, j->nslot)) != ECS_ERR_OK) return err; /* patched below */
  for (uint32_t n = 0; n < j->nslot && err == ECS_ERR_OK; n++) {
    uint32_t i = j->slot[n].index;
    if (slot_unchanged(w, j, n)) continue;
    written++;
    if ((err = w32(b, i)) == ECS_ERR_OK)
      /* a slot a smaller count dropped reads as never used (free, next
      ** generation 0): what delta.c requires of slots past the new count */
      err = w32(b, i < w->head.slot_count ? w->head.slot[i] : ECS_SLOT_FREE);
  }
  if (err == ECS_ERR_OK) put_u32(b->p + count_at, written);
  /* the queue operations, as few as describe it: pops beyond the mark's
  ** queue took indices pushed since, which the delta need not carry (an
  ** index pushed then popped again may lie past both slot counts, after a
  ** restore made the count smaller: no slot a delta names) */
  skip = j->npopped > j->mark_qlen ? j->npopped - j->mark_qlen : 0;
  if (err == ECS_ERR_OK) err = w32(b, j->npushed - skip);
  for (uint32_t n = skip; n < j->npushed && err == ECS_ERR_OK; n++)
    err = w32(b, j->pushed[n]);
  if (err == ECS_ERR_OK) err = w32(b, j->npopped - skip);
  return err;
}

/* A manager's part begins with how the replica finds its own manager of
** that name and checks it is the same kind (delta.c, read_manager); mode
** 0: per-entity records (a generic component), 1: its save whole. */
static ecs_err manager_head(ecsi_jbuf *b, const ecs_world *w, uint32_t m,
                            uint32_t mode) {
  ecs_err err;
  if ((err = w32(b, (uint32_t)w->manager[m].ns)) != ECS_ERR_OK ||
      (err = wtext(b, w->manager[m].name)) != ECS_ERR_OK ||
      (err = wtext(b, w->manager[m].cls->kind)) != ECS_ERR_OK)
    return err;
  return w32(b, mode);
}

/* Captured rows are scattered over the columns: the walk asks the memory
** system for the next PREFETCH of them (owner, slot, every column) before
** it reads the first, so that their cache misses overlap. */
#define PREFETCH 16u

/* Called at the start of each batch of PREFETCH captures: asks for the
** batch after it (for the last batch: for this one), so its misses are
** under way while this batch is read; captures with a current image are
** not read from their rows and are not asked for. */
static void prefetch_rows(const ecs_world *w, const ecs_component *c,
                          const ecsi_jcomp *jc,
                          const ecsi_jcap *cap, uint32_t left) {
#if defined(__GNUC__)
  uint32_t n = left < 2u * PREFETCH ? left : 2u * PREFETCH;
  for (uint32_t k = PREFETCH < n ? PREFETCH : 0; k < n; k++) {
    uint32_t r = cap[k].row;
    if (r >= c->size || ecsi_image(jc, &cap[k]) != NULL) continue;
    __builtin_prefetch(&owners(c)[r]);
    __builtin_prefetch(&w->head.slot[cap[k].index]);
    for (uint32_t f = 0; f < c->nfields; f++)
      __builtin_prefetch(col(c, f) + (size_t)r * c->elem[f]);
  }
#else
  (void)w;
  (void)c;
  (void)jc;
  (void)cap;
  (void)left;
#endif
}

/* n bytes copied: a few words inline for the sizes records usually have
** (a call to memcpy per changed row would cost more than the rest of its
** record). */
static void small_copy(unsigned char *to, const unsigned char *from, size_t n) {
  uint64_t x, u;
  uint32_t p, r;
  /* 4..16 bytes as two overlapping words (the last word starts at n - 8,
  ** or n - 4): every byte covered, no loop, no call */
  if (n > 16 || n < 4) {
    memcpy(to, from, n);
  } else if (n >= 8) {
    memcpy(&x, from, 8);
    memcpy(&u, from + n - 8, 8);
    memcpy(to, &x, 8);
    memcpy(to + n - 8, &u, 8);
  } else {
    memcpy(&p, from, 4);
    memcpy(&r, from + n - 4, 4);
    memcpy(to, &p, 4);
    memcpy(to + n - 4, &r, 4);
  }
}

/* Bytes, not values: a lua cell is the same only with the same reference,
** and a float is the same only with the same bits (-0.0 is not 0.0, a NaN
** equals itself), which is what a replica must reproduce. */
bool ecsi_same_row(const ecs_component *c, uint32_t i,
                   const unsigned char *packed) {
  for (uint32_t k = 0; k < c->nfields; k++) {
    if (memcmp(col(c, k) + (size_t)i * c->elem[k], packed, c->elem[k]) != 0)
      return false;
    packed += c->elem[k];
  }
  return true;
}

/*
** After a component's records (docs/persistence.md, "Deltas, byte by
** byte"): u32 flags (bit 0: the layout follows, bit 1: the stamps), then
** the layout -- the size at the mark and now, the gc cursor and churn now,
** and each row whose owner differs from the mark's (row, owner then, owner
** now; 0 for none), rows ascending -- so that a replica's rows become the
** journal's world's row for row (component_layout.c says why), and the
** replica checks that its rows are the mark's; then, when the component
** keeps stamps, which kinds it keeps and the stamps of the row of every
** instance captured (also one written with the value it had: no record,
** but a new stamp), so that a replica's change queries report what the
** world's would. *laid: anything was written (the component must then be
** named).
*/
static ecs_err write_extras(ecs_world *w, ecsi_jcomp *jc, ecsi_jbuf *b,
                            bool *laid) {
  ecs_component *c = jc->c;
  uint32_t flags = 0, nrows = 0, flags_at = (uint32_t)b->n;
  bool stamps = false;
  ecs_err err;
  /* stamps exist only while some query watches the component */
  for (int t = 0; t < ECSI_TICK_KINDS; t++) stamps = stamps || c->ticks.at[t] != NULL;
  if ((err = w32(b, 0)) != ECS_ERR_OK) return err; /* flags: patched below */
  if (jc->laid) {
    size_t count_at;
    ecsi_layout_sort(jc->row, jc->nrow); /* the reader requires rows ascending */
    if ((err = w32(b, jc->mark_size)) != ECS_ERR_OK || (err = w32(b, c->size)) != ECS_ERR_OK ||
        (err = w32(b, c->gc_cursor)) != ECS_ERR_OK ||
        (err = w32(b, ecsi_component_churn(c))) != ECS_ERR_OK)
      return err;
    count_at = b->n;
    if ((err = w32(b, 0)) != ECS_ERR_OK) return err;
    /* rows below the mark's size whose owner changed since (and back
    ** again: those are left out), then every row the size grew by, whose
    ** owner then was none */
    for (uint32_t k = 0; k < jc->nrow; k++) {
      uint32_t r = jc->row[k].row;
      ecs_entity now = r < c->size ? owners(c)[r] : ECS_NULL;
      if (now == jc->row[k].owner) continue;
      if ((err = w32(b, r)) != ECS_ERR_OK || (err = w32(b, jc->row[k].owner)) != ECS_ERR_OK ||
          (err = w32(b, now)) != ECS_ERR_OK)
        return err;
      nrows++;
    }
    for (uint32_t r = jc->mark_size; r < c->size; r++, nrows++)
      if ((err = w32(b, r)) != ECS_ERR_OK || (err = w32(b, 0)) != ECS_ERR_OK ||
          (err = w32(b, owners(c)[r])) != ECS_ERR_OK)
        return err;
    put_u32(b->p + count_at, nrows);
    if (nrows > 0 || jc->mark_size != c->size || jc->mark_cursor != c->gc_cursor ||
        jc->mark_churn != ecsi_component_churn(c))
      flags |= 1u;
    else
      b->n = count_at - 16u; /* nothing moved: no layout (the four words) */
  }
  /* each stamp entry: index, then ECSI_TICK_KINDS words (the reader
  ** steps 8 bytes past each index: two kinds, changed and added) */
  if (stamps && jc->n > 0) {
    size_t count_at = b->n + 4u;
    uint32_t n = 0, kinds = 0;
    for (int t = 0; t < ECSI_TICK_KINDS; t++)
      if (c->ticks.at[t] != NULL) kinds |= 1u << t;
    if ((err = w32(b, kinds)) != ECS_ERR_OK || (err = w32(b, 0)) != ECS_ERR_OK) return err;
    for (uint32_t k = 0; k < jc->n; k++) {
      uint32_t i = live_row(w, c, jc->cap[k].index);
      if (i == ECS_NO_INSTANCE) continue;
      if ((err = w32(b, jc->cap[k].index)) != ECS_ERR_OK) return err;
      for (int t = 0; t < ECSI_TICK_KINDS; t++)
        if ((err = w32(b, c->ticks.at[t] != NULL ? c->ticks.at[t][i] : 0)) != ECS_ERR_OK)
          return err;
      n++;
    }
    put_u32(b->p + count_at, n);
    flags |= 2u;
  }
  put_u32(b->p + flags_at, flags);
  *laid = flags != 0;
  return ECS_ERR_OK;
}

/*
** One generic component's part, and its share of the hash: per captured
** (component, entity index) whose state now differs from the captured
** one, the old instance's term out, the new one's in, and a record of the
** state now -- (index, owner, values) when present, (index, 0) when
** absent; then its extras. The state at the mark is in the capture, the
** state now in the row (or the after-image taken at the write, which
** saves reading the row). k->out NULL: the hash only (ecs_world_state_hash).
*/
static ecs_err walk_component(ecs_world *w, const ecs_journal *j, uint32_t m,
                              const ecs_journal_host *host, ecsi_jwalk *k,
                              uint32_t *nman, ecs_journal_bad *bad) {
  ecs_component *c = (ecs_component *)w->manager[m].self;
  const ecsi_jcomp *jc = c->journal;
  uint64_t nh = ecsi_manager_name_hash(w, m);
  ecsi_jbuf *b = k->out;
  size_t size = ecsi_packed_size(c), count_at = 0, head_at = 0;
  uint32_t written = 0;
  bool whole;
  ecs_writer out;
  ecs_err err = ECS_ERR_OK;
  if (jc == NULL || (jc->n == 0 && !jc->laid)) return ECS_ERR_OK;
  out.write = ecsi_jbuf_write;
  out.ud = b;
  if (b != NULL) {
    head_at = b->n;
    if ((err = manager_head(b, w, m, 0)) != ECS_ERR_OK ||
        (err = w32(b, c->nfields)) != ECS_ERR_OK)
      return err;
    for (uint32_t f = 0; f < c->nfields && err == ECS_ERR_OK; f++)
      err = w32(b, ecsi_field_word(c, f)); /* type and cleanup policy */
    count_at = b->n;
    if (err == ECS_ERR_OK) err = w32(b, jc->n); /* patched below */
    /* room for every record (more for lua values, written as they come):
    ** the fast paths below write into it without a check per record; the
    ** first test keeps n * (8 + size) from overflowing */
    if (err == ECS_ERR_OK &&
        (size_t)jc->n > (SIZE_MAX / 4 - b->n) / (8 + size))
      err = ECS_ERR_NOMEM;
    if (err == ECS_ERR_OK) err = ecsi_jbuf_reserve(b, (size_t)jc->n * (8 + size));
  }
  /* (images are taken only for components without lua fields: with
  ** captures, whole implies fixed-size records) */
  whole = err == ECS_ERR_OK && jc->ncur == jc->n && jc->nsame == 0;
  if (whole) {
    /* every capture has a current image that changed its instance: the
    ** records are the log, in capture order, in one copy (room reserved:
    ** no lua field) */
    written = jc->n;
    k->hash += jc->sum;
    if (b != NULL && jc->n > 0) { /* (none: no log, rec may be null) */
      memcpy(b->p + b->n, jc->rec, (size_t)jc->n * (8 + size));
      b->n += (size_t)jc->n * (8 + size);
    }
  }
  for (uint32_t n = 0; n < jc->n && err == ECS_ERR_OK && !whole; n++) {
    const ecsi_jcap *cap = &jc->cap[n];
    const ecsi_jimg *im = ecsi_image(jc, cap);
    uint32_t i = cap->row;
    uint64_t h;
    /* an image's hashes were taken with it: before and after, so the
    ** hash needs no row either */
    if (im != NULL) { /* taken at the write (journal_image.c) */
      if (im->same) continue;
      written++;
      k->hash += im->after - im->before;
      if (b != NULL) { /* room reserved: no lua field */
        small_copy(b->p + b->n, jc->rec + (size_t)(cap->img - 1u) * (8 + size),
                   8 + size);
        b->n += 8 + size;
      }
      continue;
    }
    /* the rows are scattered: ask for a batch ahead before using one */
    if (n % PREFETCH == 0) prefetch_rows(w, c, jc, jc->cap + n, jc->n - n);
    /* where the capture saw the row, unless it moved since */
    if (i >= c->size || ecs_entity_index(owners(c)[i]) != cap->index ||
        !ecs_alive(w, owners(c)[i]))
      i = live_row(w, c, cap->index);
    /* written but not changed (a system that stores what was there, an
    ** entity made and destroyed): nothing to carry, nothing to hash */
    if (i == ECS_NO_INSTANCE ? cap->owner == 0
                             : cap->owner == owners(c)[i] &&
                                   ecsi_same_row(c, i, ecsi_captured(j, cap->at)))
      continue;
    written++;
    /* the captured state's term leaves the sum, the present state's
    ** enters; the capture keeps old lua values alive (held references),
    ** so the host can still hash them */
    if (cap->owner != 0) {
      err = ecsi_hash_packed(w, c, nh, cap->owner, ecsi_captured(j, cap->at), host,
                             &h, bad);
      k->hash -= h;
    }
    if (err == ECS_ERR_OK && i != ECS_NO_INSTANCE) {
      unsigned char packed[ECS_MAX_FIELDS * 8];
      ecsi_pack_row(c, i, packed);
      err = ecsi_hash_packed(w, c, nh, owners(c)[i], packed, host, &h, bad);
      k->hash += h;
      if (err == ECS_ERR_OK && b != NULL) {
        /* fixed-size record straight into the reserved room; with lua
        ** cells the size is known only as they are encoded */
        if (c->nlua == 0 && b->cap - b->n >= 8 + size) { /* room reserved */
          put_u32(b->p + b->n, cap->index);
          put_u32(b->p + b->n + 4, owners(c)[i]);
          memcpy(b->p + b->n + 8, packed, size);
          b->n += 8 + size;
        } else if ((err = w32(b, cap->index)) == ECS_ERR_OK &&
                   (err = w32(b, owners(c)[i])) == ECS_ERR_OK) {
          err = ecsi_encode_packed(c, packed, host, &out, owners(c)[i], bad);
        }
      }
    } else if (err == ECS_ERR_OK && b != NULL &&
               (err = w32(b, cap->index)) == ECS_ERR_OK) {
      err = w32(b, 0); /* absent now: the replica removes its record */
    }
  }
  if (err == ECS_ERR_OK && b != NULL) {
    bool laid = false;
    put_u32(b->p + count_at, written);
    err = write_extras(w, c->journal, b, &laid);
    /* a component with nothing to carry is not named: a replica made
    ** before it was registered need not have it */
    if (err == ECS_ERR_OK && written == 0 && !laid) b->n = head_at;
    else if (err == ECS_ERR_OK) (*nman)++;
  } else if (written > 0) {
    (*nman)++; /* (hash only: the count is not used) */
  }
  return err;
}

/* A manager kept whole: included when its save differs from the mark's. */
/* The save now goes to k->whole when a delta is written: if the mark moves
** to this delta, these saves are the new mark's (ecs_journal_mark), and
** the next delta compares against them without saving again. */
static ecs_err walk_whole(ecs_world *w, const ecs_journal *j, uint32_t m,
                          ecsi_jwalk *k, uint32_t *nman) {
  const ecsi_jwhole *old = ecsi_journal_mark_whole(j, m, w->manager[m].self);
  ecsi_jbuf now = {NULL, NULL, 0, 0};
  uint64_t h;
  ecs_err err;
  now.w = w;
  if ((err = ecsi_journal_save_whole(w, m, &now)) != ECS_ERR_OK) {
    ecsi_jbuf_free(&now);
    return err;
  }
  if ((old != NULL && old->size == now.n &&
       (now.n == 0 || memcmp(old->bytes, now.p, now.n) == 0)) ||
      (old == NULL && ecsi_whole_term(w, m, now.p, now.n) == 0)) {
    /* unchanged; or registered since the mark and still empty: a replica
    ** need not have it */
    h = old != NULL ? old->hash : 0;
  } else {
    h = ecsi_whole_term(w, m, now.p, now.n);
    k->hash += h - (old != NULL ? old->hash : 0);
    if (k->out != NULL) {
      (*nman)++;
      if ((err = manager_head(k->out, w, m, 1)) != ECS_ERR_OK ||
          (err = w64(k->out, now.n)) != ECS_ERR_OK ||
          (err = ecsi_jbuf_write(k->out, now.p, now.n)) != ECS_ERR_OK) {
        ecsi_jbuf_free(&now);
        return err;
      }
    }
  }
  if (k->whole != NULL) {
    k->whole[m].self = w->manager[m].self;
    k->whole[m].bytes = now.p;
    k->whole[m].size = now.n;
    k->whole[m].cap = now.cap;
    k->whole[m].hash = h;
  } else {
    ecsi_jbuf_free(&now);
  }
  return ECS_ERR_OK;
}

/*
** The whole walk: the hash from the mark's to now, and the delta's body
** when k->out is set. The order is the format's and the applier's: the
** entity part first (records are checked against the table it makes),
** then the managers in registration order (the count of those named is
** patched: a component with nothing to carry is left out), then the
** cursors (the change clock, queries' cursors, systems' owed time).
*/
static ecs_err walk_all(ecs_world *w, const ecs_journal *j,
                        const ecs_journal_host *host, ecsi_jwalk *k,
                        ecs_journal_bad *bad) {
  size_t count_at = 0;
  uint32_t nman = 0;
  ecs_err err;
  k->hash = j->hash;
  if ((err = walk_entities(w, j, k)) != ECS_ERR_OK) return err;
  if (k->out != NULL) {
    count_at = k->out->n;
    if ((err = w32(k->out, 0)) != ECS_ERR_OK) return err;
  }
  for (uint32_t m = 0; m < w->manager_count && err == ECS_ERR_OK; m++) {
    const ecs_manager_class *cls = w->manager[m].cls;
    if (ecs_component_is(cls)) {
      err = walk_component(w, j, m, host, k, &nman, bad);
    } else if (cls->save != NULL) {
      err = walk_whole(w, j, m, k, &nman);
    }
  }
  if (err == ECS_ERR_OK && k->out != NULL) {
    ecs_writer out;
    put_u32(k->out->p + count_at, nman);
    out.write = ecsi_jbuf_write;
    out.ud = k->out;
    err = ecsi_cursors_save(w, &out); /* the clock, cursors and owed times */
  }
  return err;
}

static void walk_free(ecs_world *w, ecsi_jwalk *k) {
  if (k->whole == NULL) return;
  for (uint32_t m = 0; m < k->nwhole; m++)
    ecsi_free(w, k->whole[m].bytes, k->whole[m].cap);
  ecsi_free(w, k->whole, (size_t)k->nwhole * sizeof *k->whole);
  k->whole = NULL;
}

void ecsi_journal_pending_free(ecs_world *w, ecs_journal *j) {
  walk_free(w, &j->pending);
  j->has_pending = false;
}

/*
** Writing a delta does not move the mark: the host still has to copy the
** bytes (a Lua string: may fail), and a delta the caller never got must
** not be lost from the next one. So the walk's results (the hash now, the
** saves of the managers kept whole) wait in j->pending for
** ecs_journal_mark, with the count of changes they describe.
*/
ecs_err ecs_journal_delta(ecs_world *w, ecs_journal *j,
                          const ecs_journal_host *host, const void **data,
                          size_t *size, ecs_journal_bad *bad) {
  ecsi_jbuf *b = &j->out;
  ecsi_jwalk *k = &j->pending;
  ecs_err err;
  if (j->lost) return ECS_ERR_LOST;
  ecsi_journal_pending_free(w, j);
  b->w = w;
  b->n = 0;
  memset(k, 0, sizeof *k);
  k->out = b;
  k->nwhole = w->manager_count;
  if (k->nwhole > 0) {
    k->whole = (ecsi_jwhole *)ecsi_realloc(w, NULL, 0, (size_t)k->nwhole * sizeof *k->whole);
    if (k->whole == NULL) return ECS_ERR_NOMEM;
    memset(k->whole, 0, (size_t)k->nwhole * sizeof *k->whole);
  }
  /* the header: magic, version, flags, base hash, result hash (offset 20,
  ** known after the walk); ENTITIES_AT in delta.c is its size, 28 */
  if ((err = ecsi_jbuf_write(b, "ECSD", 4)) == ECS_ERR_OK &&
      (err = w32(b, ECS_DELTA_VERSION)) == ECS_ERR_OK &&
      (err = w32(b, 0)) == ECS_ERR_OK &&
      (err = w64(b, j->hash)) == ECS_ERR_OK &&
      (err = w64(b, 0)) == ECS_ERR_OK) /* the result: patched below */
    err = walk_all(w, j, host, k, bad);
  if (err == ECS_ERR_OK) {
    put_u32(b->p + 20, (uint32_t)k->hash);
    put_u32(b->p + 24, (uint32_t)(k->hash >> 32));
    err = w64(b, ecs_snapshot_hash(b->p, b->n)); /* the trailer: all above */
  }
  k->out = NULL;
  if (err != ECS_ERR_OK) {
    walk_free(w, k);
    return err;
  }
  j->has_pending = true;
  j->pending_changes = ecs_journal_pending(j) + j->npopped + j->npushed;
  *data = b->p;
  *size = b->n;
  return ECS_ERR_OK;
}

/*
** The pending results become the mark only if nothing changed since the
** delta was written. A change in between would be in neither the delta
** nor, after the reset, the journal, so the caller must make none
** (journal.h; the binding stops the collector while it copies the bytes,
** so no finalizer can). What can be seen of one is caught here: a new
** capture, slot or queue operation changes the count, and the journal is
** then lost rather than made to miss it. (A second write of a pair
** captured already adds nothing to the count.)
*/
void ecs_journal_mark(ecs_world *w, ecs_journal *j) {
  if (!j->has_pending) return;
  if (j->pending_changes != ecs_journal_pending(j) + j->npopped + j->npushed) {
    ecsi_journal_lose(j, false); /* a change in between: never mark past it */
    ecsi_journal_pending_free(w, j);
    return;
  }
  ecsi_journal_whole_free(w, j);
  j->whole = j->pending.whole;
  j->nwhole = j->pending.nwhole;
  j->pending.whole = NULL;
  j->hash = j->pending.hash;
  j->mark_qhash = j->pending.qhash;
  j->has_pending = false;
  ecsi_journal_mark_reset(w, j, true);
}

/* With a journal that kept track, the hash is the mark's brought up to
** date by the walk (O(changes)); no bytes are written. */
ecs_err ecs_world_state_hash(ecs_world *w, const ecs_journal_host *host,
                             uint64_t *out, ecs_journal_bad *bad) {
  ecs_journal *j = w->journal;
  ecsi_jwalk k;
  ecs_err err;
  if (j == NULL || j->lost) return ecsi_journal_full_hash(w, host, out, bad);
  memset(&k, 0, sizeof k);
  if ((err = walk_all(w, j, host, &k, bad)) == ECS_ERR_OK) *out = k.hash;
  return err;
}

