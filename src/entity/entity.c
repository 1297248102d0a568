/*
** entity.c -- the entity manager (Bitsquid, "Building a Data-Oriented
** Entity System", part 1).
**
** An entity is an index into the slot array plus a generation. slot[i]
** holds the generation of the entity alive at index i; when index i is free
** it holds ECS_SLOT_FREE | next generation, which no 8-bit generation
** equals, so ecs_alive stays one read and one compare and rejects forged
** handles whose generation is ahead of the live one.
**
** Freed indices wait in a FIFO ring and are reused only while at least
** ECS_MINIMUM_FREE_INDICES are waiting, so an index runs 256 laps of a
** queue of 1024 before an id can come back. When no fresh index is left the
** queue is used whatever its length; when both are exhausted, ECS_ERR_FULL.
** When an index's generation wraps, managers purge their records of it
** (ecs_destroy), so a returning handle finds nothing of its predecessor.
**
** Invariant: the ring's capacity is at least slot_count, so every index can
** be queued at once and destroy never allocates.
**
** Entity layer (layers: alloc.h): below every manager, so it reaches them
** only through the registry's purge hooks (registry.c).
*/
#include <string.h>

#include "checksum.h"
#include "ecs_private.h"

#define MIN_SLOTS 64u

void ecsi_entities_free(ecs_world *w) {
  ecsi_free(w, w->head.slot, (size_t)w->slot_cap * sizeof(uint16_t));
  ecsi_free(w, w->free.item, (size_t)w->free.cap * sizeof(uint32_t));
  w->head.slot = NULL;
  w->free.item = NULL;
  w->head.slot_count = w->slot_cap = w->free.cap = 0;
  w->free.len = w->free.head = 0;
  w->live = 0;
}

/* Fresh indices left: [slot_count, ECS_MAX_ENTITIES]; index 0 is reserved. */
static uint32_t fresh_left(const ecs_world *w) {
  uint32_t used = w->head.slot_count ? w->head.slot_count : 1u;
  return ECS_MAX_ENTITIES + 1u - used;
}

/*
** Grow the ring to hold at least need items, keeping FIFO order: the
** wrapped tail [0, head + len - cap) moves after the old end.
*/
static ecs_err queue_reserve(ecs_world *w, uint32_t need) {
  ecsi_queue *q = &w->free;
  uint32_t ocap = q->cap;
  void *p = q->item;
  ecs_err err;
  if (need <= ocap) return ECS_ERR_OK;
  err = ecsi_grow(w, &p, &q->cap, need, sizeof(uint32_t), MIN_SLOTS);
  if (err != ECS_ERR_OK) return err;
  q->item = (uint32_t *)p;
  if (q->head + q->len > ocap) { /* wrapped: unwrap into the new space */
    uint32_t tail = q->head + q->len - ocap;
    memcpy(q->item + ocap, q->item, (size_t)tail * sizeof(uint32_t));
  }
  return ECS_ERR_OK;
}

/*
** Make room for n more fresh indices (slots and ring), all or nothing.
** The ring is grown first: if the slot array then fails to grow, the larger
** ring is harmless.
**
** A slot count of 0 is a table that never handed out an index, whatever
** its capacity: a new world, and one that an undo took back to that state
** with its slots still allocated. Index 0 is reserved then, before the
** first fresh index is taken.
*/
static ecs_err reserve_fresh(ecs_world *w, uint32_t n) {
  uint32_t start = w->head.slot_count ? w->head.slot_count : 1u;
  uint32_t need = start + n;
  void *p = w->head.slot;
  ecs_err err;
  if (n == 0) return ECS_ERR_OK;
  err = queue_reserve(w, need);
  if (err != ECS_ERR_OK) return err;
  err = ecsi_grow(w, &p, &w->slot_cap, need, sizeof(uint16_t), MIN_SLOTS);
  if (err != ECS_ERR_OK) return err;
  w->head.slot = (uint16_t *)p;
  if (w->head.slot_count == 0) { /* index 0 is reserved forever */
    w->head.slot[0] = ECS_SLOT_FREE;
    w->head.slot_count = 1;
  }
  return ECS_ERR_OK;
}

static uint32_t queue_pop(ecs_world *w) {
  ecsi_queue *q = &w->free;
  uint32_t i = q->item[q->head];
  q->head = (q->head + 1) & (q->cap - 1);
  q->len--;
  return i;
}

/* delta.c: room for slots slots and a queue of queue items. */
ecs_err ecsi_entities_reserve(ecs_world *w, uint32_t slots, uint32_t queue) {
  void *p = w->head.slot;
  ecs_err err = queue_reserve(w, slots > queue ? slots : queue);
  if (err != ECS_ERR_OK) return err;
  err = ecsi_grow(w, &p, &w->slot_cap, slots, sizeof(uint16_t), MIN_SLOTS);
  if (err != ECS_ERR_OK) return err;
  w->head.slot = (uint16_t *)p;
  return ECS_ERR_OK;
}

/* The change barrier (barrier.h): index is about to be handed out, off
** the free queue or fresh (the journal keeps the slot as it was). */
static void tell_taken(ecs_world *w, uint32_t index, bool queued) {
  ecsi_tell(w, ECSI_EV_INDEX_TAKEN, NULL, ECS_NULL, index, queued, NULL);
}

/* Take one index by the reuse policy; room must have been reserved. */
static ecs_entity take(ecs_world *w) {
  uint32_t i;
  if (w->free.len >= ECS_MINIMUM_FREE_INDICES || fresh_left(w) == 0) {
    tell_taken(w, w->free.item[w->free.head], true);
    i = queue_pop(w);
    w->head.slot[i] = (uint16_t)(w->head.slot[i] & ECS_GENERATION_MASK);
  } else {
    tell_taken(w, w->head.slot_count, false);
    i = w->head.slot_count++;
    w->head.slot[i] = 0;
  }
  w->live++;
  return ecs_make_entity(i, w->head.slot[i]);
}

/*
** How many of the next n creations will take a fresh index: fresh indices
** are used while fewer than the minimum are queued, and creating does not
** add to the queue, so that is min(fresh left, n) when the queue is short,
** and at most n - (queued - minimum + 1) otherwise.
*/
static uint32_t fresh_needed(const ecs_world *w, uint32_t n) {
  uint32_t fresh = fresh_left(w);
  uint32_t from_queue = 0;
  if (w->free.len >= ECS_MINIMUM_FREE_INDICES)
    from_queue = w->free.len - ECS_MINIMUM_FREE_INDICES + 1u;
  if (from_queue >= n) return 0;
  n -= from_queue;
  return n < fresh ? n : fresh;
}

ecs_err ecs_create_n(ecs_world *w, ecs_entity *out, size_t n) {
  uint32_t k, fresh;
  ecs_err err;
  if (n == 0) return ECS_ERR_OK;
  if (n > (size_t)fresh_left(w) + w->free.len) return ECS_ERR_FULL;
  k = (uint32_t)n;
  fresh = fresh_needed(w, k);
  err = reserve_fresh(w, fresh);
  if (err != ECS_ERR_OK) return err;
  for (uint32_t j = 0; j < k; j++) out[j] = take(w);
  return ECS_ERR_OK;
}

/* take()'s policy, step by step, on copies of the queue and the counter. */
ecs_err ecs_next_indices(const ecs_world *w, uint32_t *out, size_t n) {
  const ecsi_queue *q = &w->free;
  uint32_t len = q->len, head = q->head;
  uint32_t next = w->head.slot_count ? w->head.slot_count : 1u;
  if (n > (size_t)fresh_left(w) + q->len) return ECS_ERR_FULL;
  for (size_t j = 0; j < n; j++) {
    if (len >= ECS_MINIMUM_FREE_INDICES || next == ECS_MAX_ENTITIES + 1u) {
      out[j] = q->item[head];
      head = (head + 1) & (q->cap - 1);
      len--;
    } else {
      out[j] = next++;
    }
  }
  return ECS_ERR_OK;
}

ecs_err ecs_create(ecs_world *w, ecs_entity *out) {
  return ecs_create_n(w, out, 1);
}

/*
** When the next generation is 0 the index has run through all 256: its
** old handles would come back, so every manager purges the index now,
** before it can be handed out again (once per 256 destroys of an index,
** so the cost follows the work; purges never allocate or fail).
*/
void ecsi_entity_kill(ecs_world *w, ecs_entity e) {
  ecsi_queue *q = &w->free;
  uint32_t i = ecs_entity_index(e), next;
  ecsi_tell(w, ECSI_EV_ENTITY_DYING, NULL, e, 0, 0, NULL); /* the journal */
  next = (w->head.slot[i] + 1u) & ECS_GENERATION_MASK;
  w->head.slot[i] = (uint16_t)(ECS_SLOT_FREE | next);
  q->item[(q->head + q->len) & (q->cap - 1)] = i; /* cap >= slot_count */
  q->len++;
  w->live--;
  w->destroy_epoch++; /* rows handed out by query iterators may be stale */
  /* the transform, the queries */
  ecsi_tell(w, ECSI_EV_ENTITY_DIED, NULL, e, 0, 0, NULL);
  if (next == 0) ecsi_purge_index(w, i);
}

/*
** Within one lap of an index's generations, records are made only for
** live entities and the slot's generation only grows, so a record's
** generation is at most the live one, or below the next one while free;
** the lap ends with a purge (ecs_destroy). ECS_PURGED records are exempt.
*/
bool ecs_record_valid(const ecs_world *w, ecs_entity e) {
  uint32_t i = ecs_entity_index(e), g = ecs_entity_generation(e), s;
  if (i == 0 || i >= w->head.slot_count) return false;
  if (((uint32_t)e & ~(ECS_ID_MASK | ECS_PURGED)) != 0) return false;
  if (((uint32_t)e & ECS_PURGED) != 0) return true;
  s = w->head.slot[i];
  if (s < ECS_SLOT_FREE) return g <= s;
  return g < (s & ECS_GENERATION_MASK);
}

size_t ecs_count(const ecs_world *w) { return w->live; }

size_t ecs_free_count(const ecs_world *w) { return w->free.len; }

bool ecs_next_entity(const ecs_world *w, uint32_t *cursor, ecs_entity *out) {
  uint32_t i = *cursor;
  const uint16_t *slot = w->head.slot;
  if (i == 0) i = 1;
  for (; i < w->head.slot_count; i++) {
    if (slot[i] < ECS_SLOT_FREE) {
      *out = ecs_make_entity(i, slot[i]);
      *cursor = i + 1;
      return true;
    }
  }
  *cursor = i;
  return false;
}

/*
** Invariants: slot 0 free; live + queued == slot_count - 1 (every used
** index is either alive or queued exactly once); the ring can hold every
** index; every queued index is a free slot and appears once.
*/
const char *ecsi_entities_check(const ecs_world *w) {
  const ecsi_queue *q = &w->free;
  uint32_t live = 0, n = w->head.slot_count;
  uint8_t *seen;
  const char *bad = NULL;
  if (w->slot_cap < n) return "entities: slot_count exceeds capacity";
  if (n == 0) {
    if (w->live != 0 || q->len != 0) return "entities: counts without slots";
    return NULL;
  }
  if (w->head.slot[0] < ECS_SLOT_FREE) return "entities: index 0 is alive";
  for (uint32_t i = 1; i < n; i++) {
    if (w->head.slot[i] > (ECS_SLOT_FREE | ECS_GENERATION_MASK))
      return "entities: slot holds an impossible value";
    live += w->head.slot[i] < ECS_SLOT_FREE;
  }
  if (live != w->live) return "entities: live count is wrong";
  if (q->cap < n) return "entities: free queue cannot hold every index";
  if ((q->cap & (q->cap - 1)) != 0) return "entities: ring size not a power of two";
  if ((size_t)live + q->len != (size_t)n - 1)
    return "entities: live + queued differs from indices used";
  seen = (uint8_t *)ecsi_scratch_realloc(w, NULL, 0, n);
  if (seen != NULL) memset(seen, 0, n);
  for (uint32_t k = 0; k < q->len && bad == NULL; k++) {
    uint32_t i = q->item[(q->head + k) & (q->cap - 1)];
    if (i == 0 || i >= n) bad = "entities: queued index out of range";
    else if (w->head.slot[i] < ECS_SLOT_FREE) bad = "entities: queued index is alive";
    else if (seen != NULL && seen[i]++) bad = "entities: index queued twice";
  }
  if (seen != NULL) ecsi_scratch_realloc(w, seen, n, 0);
  return bad;
}

/* ------------------------------------------------------------------------
** The entity table in a snapshot (snapshot.c frames it; the layout is in
** docs/persistence.md, "Entities"): every slot's value as it is held
** (generation, or ECS_SLOT_FREE | next generation), then the free queue
** oldest first. That is the whole state of this manager, so a loaded
** world hands out the very ids, in the very order, the saved one would.
** Little-endian, as every count of a snapshot.
** --------------------------------------------------------------------- */

ecs_err ecsi_entities_save(const ecs_world *w, ecs_writer *out) {
  const ecsi_queue *q = &w->free;
  uint32_t n = w->head.slot_count;
  unsigned char buf[256 * 4];
  ecs_err err = ecs_write_u32(out, n);
  if (err != ECS_ERR_OK) return err;
  if (ecsi_little_endian()) {
    err = ecs_write(out, w->head.slot, (size_t)n * sizeof(uint16_t));
  } else {
    for (uint32_t i = 0; i < n && err == ECS_ERR_OK;) {
      uint32_t k = 0;
      for (; k < 256u * 2u && i < n; i++, k += 2) {
        buf[k] = (unsigned char)w->head.slot[i];
        buf[k + 1] = (unsigned char)(w->head.slot[i] >> 8);
      }
      err = ecs_write(out, buf, k);
    }
  }
  if (err == ECS_ERR_OK) err = ecs_write_u32(out, q->len);
  /* the ring's two runs: [head, cap) then [0, rest); u32 each */
  for (uint32_t k = 0; k < q->len && err == ECS_ERR_OK;) {
    uint32_t at = (q->head + k) & (q->cap - 1u);
    uint32_t run = q->cap - at < q->len - k ? q->cap - at : q->len - k;
    if (ecsi_little_endian()) {
      err = ecs_write(out, q->item + at, (size_t)run * sizeof(uint32_t));
      k += run;
    } else {
      uint32_t j = 0;
      for (; j < 256u && j < run; j++) {
        uint32_t v = q->item[at + j];
        buf[4 * j] = (unsigned char)v;
        buf[4 * j + 1] = (unsigned char)(v >> 8);
        buf[4 * j + 2] = (unsigned char)(v >> 16);
        buf[4 * j + 3] = (unsigned char)(v >> 24);
      }
      err = ecs_write(out, buf, (size_t)j * 4u);
      k += j;
    }
  }
  return err;
}

static uint32_t pow2_at_least(uint32_t n) {
  uint32_t c = MIN_SLOTS;
  while (c < n) c *= 2u; /* n <= ECS_MAX_ENTITIES + 1 = 2^22 */
  return c;
}

void ecsi_entities_table_free(ecs_world *w, ecsi_entity_table *t) {
  ecsi_free(w, t->slot, (size_t)t->slot_cap * sizeof(uint16_t));
  ecsi_free(w, t->free.item, (size_t)t->free.cap * sizeof(uint32_t));
  memset(t, 0, sizeof *t);
}

/* Bit 0x4000 is never set in a slot (free slots are 0x8000 | 8 bits), so
** reading marks queued indices with it, and clears it after. */
#define SEEN 0x4000u

/*
** Read and check an entity table into t (new blocks, the world's own left
** alone): the slot count at most 2^22 and within the bytes left; slot 0
** free with generation 0 (as no world ever changes it); every other slot
** a generation (0..255) or ECS_SLOT_FREE | generation; the queue as long
** as there are free slots, each queued index a free slot, queued once
** (so live + queued == slot_count - 1, the invariant ecsi_entities_check
** states). Capacities are powers of two, at least the count, as the
** ring needs. On error nothing is allocated and in->pos is unchanged.
*/
ecs_err ecsi_entities_read(ecs_world *w, ecs_reader *in,
                           ecsi_entity_table *t) {
  size_t start = in->pos;
  uint32_t n, queued, live = 0, nfree = 0;
  ecs_err err;
  memset(t, 0, sizeof *t);
  if (ecs_read_u32(in, &n) != ECS_ERR_OK || n > ECS_MAX_ENTITIES + 1u ||
      (size_t)n > (in->size - in->pos) / sizeof(uint16_t))
    goto corrupt;
  if (n > 0) {
    uint32_t cap = pow2_at_least(n);
    t->slot = (uint16_t *)ecsi_realloc(w, NULL, 0, (size_t)cap * sizeof(uint16_t));
    if (t->slot == NULL) goto nomem;
    t->slot_cap = cap;
    t->free.item = (uint32_t *)ecsi_realloc(w, NULL, 0, (size_t)cap * sizeof(uint32_t));
    if (t->free.item == NULL) goto nomem;
    t->free.cap = cap;
    if (ecsi_little_endian()) { /* (the size was checked above) */
      (void)ecsi_read_hashed(w, in, t->slot, (size_t)n * sizeof(uint16_t));
    } else {
      const unsigned char *b = in->data + in->pos;
      for (uint32_t i = 0; i < n; i++)
        t->slot[i] = (uint16_t)(b[2 * i] | b[2 * i + 1] << 8);
      in->pos += (size_t)n * sizeof(uint16_t);
    }
    if (t->slot[0] != ECS_SLOT_FREE) goto corrupt;
    { /* a slot is a generation (0..255) or ECS_SLOT_FREE | one: no bit
      ** between them. Branch-free, so that the compiler vectorizes it
      ** (a rollback reads the table every frame) */
      uint32_t stray = 0;
      for (uint32_t i = 1; i < n; i++) {
        stray |= t->slot[i] & (uint32_t)~(ECS_SLOT_FREE | ECS_GENERATION_MASK);
        nfree += (t->slot[i] & ECS_SLOT_FREE) / ECS_SLOT_FREE;
      }
      if (stray != 0) goto corrupt;
      live = n - 1u - nfree;
    }
  }
  if (ecs_read_u32(in, &queued) != ECS_ERR_OK || queued != nfree ||
      (size_t)queued > (in->size - in->pos) / sizeof(uint32_t))
    goto corrupt;
  if (queued > 0) {
    const unsigned char *b = in->data + in->pos;
    uint32_t bad = 0, k;
    if (ecsi_little_endian()) { /* (the size was checked above) */
      (void)ecsi_read_hashed(w, in, t->free.item, (size_t)queued * sizeof(uint32_t));
    } else {
      for (k = 0; k < queued; k++) t->free.item[k] = ecsi_get_u32(b + 4 * k);
      in->pos += (size_t)queued * sizeof(uint32_t);
    }
    for (k = 0; k < queued; k++) {
      uint32_t i = t->free.item[k];
      if (i == 0 || i >= n || t->slot[i] < ECS_SLOT_FREE || (t->slot[i] & SEEN)) {
        bad = 1;
        break;
      }
      t->slot[i] = (uint16_t)(t->slot[i] | SEEN);
    }
    for (uint32_t j = 0; j < k; j++) { /* unmark what was marked */
      uint32_t i = t->free.item[j];
      t->slot[i] = (uint16_t)(t->slot[i] & ~SEEN);
    }
    if (bad) goto corrupt;
  }
  t->slot_count = n;
  t->free.head = 0;
  t->free.len = queued;
  t->live = live;
  return ECS_ERR_OK;
corrupt:
  err = ECS_ERR_CORRUPT;
  goto fail;
nomem:
  err = ECS_ERR_NOMEM;
fail:
  ecsi_entities_table_free(w, t);
  in->pos = start;
  return err;
}

/*
** Trade the world's entity table for t: afterwards the world has t's and
** t holds the world's former one (so a second swap undoes the first).
** Allocates nothing. The caller makes the world's queries stale.
*/
/* Index i's living generation in a table, or ECS_SLOT_FREE. */
static uint32_t life(const uint16_t *slot, uint32_t count, uint32_t i) {
  return i < count && slot[i] < ECS_SLOT_FREE ? slot[i] : ECS_SLOT_FREE;
}

bool ecsi_entities_same_lives(const ecs_world *w, const ecsi_entity_table *t) {
  uint32_t n = w->head.slot_count > t->slot_count ? w->head.slot_count
                                                  : t->slot_count;
  if (n == 0) return true; /* (two empty tables: maybe no slots at all) */
  if (w->head.slot_count == t->slot_count &&
      memcmp(w->head.slot, t->slot, (size_t)n * sizeof *t->slot) == 0)
    return true; /* the same table (a rollback of values): one compare */
  for (uint32_t i = 0; i < n; i++)
    if (life(w->head.slot, w->head.slot_count, i) != life(t->slot, t->slot_count, i))
      return false;
  return true;
}

void ecsi_entities_swap(ecs_world *w, ecsi_entity_table *t) {
  ecsi_entity_table old;
  old.slot = w->head.slot;
  old.slot_count = w->head.slot_count;
  old.slot_cap = w->slot_cap;
  old.free = w->free;
  old.live = w->live;
  w->head.slot = t->slot;
  w->head.slot_count = t->slot_count;
  w->slot_cap = t->slot_cap;
  w->free = t->free;
  w->live = t->live;
  w->destroy_epoch++; /* rows handed out by query iterators may be stale */
  *t = old;
}
