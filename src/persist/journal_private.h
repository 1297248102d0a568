/*
** journal_private.h -- what journal.c (recording, deltas, undo),
** delta.c (applying a delta) and the write paths of the core share. Not
** installed.
*/
#ifndef ECS_JOURNAL_PRIVATE_H
#define ECS_JOURNAL_PRIVATE_H

#include <string.h>

#include "checksum.h"
#include "component_private.h"
#include "journal.h"
#include "snapshot.h"

/* A captured (component, entity index): the state before the first
** change of the mark's interval. owner 0: no live instance; else the row's
** values packed field after field (lua cells as their references) at
** bytes + at. */
typedef struct ecsi_jcap {
  uint32_t index;
  ecs_entity owner;
  uint32_t row;  /* where the instance was (or would go): a hint, checked */
  uint32_t img;  /* its after-image + 1 (journal_image.c), or 0 */
  uint32_t stamp[ECSI_TICK_KINDS]; /* its change stamps then (0: none kept) */
  size_t at;
} ecsi_jcap;

/* An after-image's bookkeeping; its values are a record of jc->rec. */
typedef struct ecsi_jimg {
  uint64_t before, after; /* the instance's hash at the mark (0: absent), now */
  uint32_t epoch;         /* current when jc->epoch */
  uint32_t same;          /* 1: now as at the mark (nothing to carry) */
} ecsi_jimg;

/* The captures of one generic component (ecs_component.journal). */
typedef struct ecsi_jcomp {
  ecs_component *c;
  uint32_t *seen;       /* bitmap by entity index: captured */
  uint32_t seen_words;
  ecsi_jcap *cap;
  uint32_t n, ncap;
  /* after-images (journal_image.c) */
  uint64_t name_hash;   /* the component's, for the state hash */
  unsigned char *rec;   /* nimg records of a delta: index, owner, values */
  size_t reccap;
  ecsi_jimg *img;
  uint32_t nimg, imgcap;
  uint32_t *find;       /* open addressing: entity index -> capture + 1 */
  uint32_t findcap;
  uint32_t memo;        /* capture + 1 a single write prepared, or 0 */
  uint32_t epoch;       /* images of other epochs are stale */
  uint32_t ncur, nsame; /* current images; of those, the unchanged */
  uint64_t sum;         /* sum of after - before over the current images */
  /* the layout at the mark (journal.c, "Layout"): laid once a row's owner,
  ** the size or the gc cursor changed since; then the size, cursor and
  ** churn at the mark, and the owner then of every row below that size
  ** whose owner changed, each once (row_seen: a bitmap by row) */
  bool laid;
  uint32_t mark_size, mark_cursor, mark_churn;
  uint32_t *row_seen, row_words;
  ecsi_layout_row *row;
  uint32_t nrow, rowcap;
} ecsi_jcomp;

/* The journal (journal.c records, journal_delta.c writes deltas). */
typedef struct ecsi_jslot {
  uint32_t index;
  uint16_t old;
} ecsi_jslot;

typedef struct ecsi_jwhole {
  void *self;
  unsigned char *bytes; /* its save at the mark */
  size_t size, cap;
  uint64_t hash;        /* ecsi_hash_whole of it */
} ecsi_jwhole;

typedef struct ecsi_jbuf {
  ecs_world *w;
  unsigned char *p;
  size_t n, cap;
} ecsi_jbuf;

typedef struct ecsi_jwalk {
  ecsi_jbuf *out;        /* the delta being written, or NULL: hash only */
  uint64_t hash;    /* the state hash now */
  uint64_t qhash;   /* the queue's part of it */
  ecsi_jwhole *whole;    /* the saves now (out only) */
  uint32_t nwhole;
} ecsi_jwalk;

struct ecs_journal {
  ecs_world *w;
  ecsi_jcomp **comp;       /* components with captures (or a bitmap) */
  uint32_t ncomp, compcap;
  unsigned char *bytes;    /* the captured rows */
  size_t nbytes, bytecap;
  size_t captures;         /* pairs captured since the mark */
  /* entities */
  uint32_t *slot_seen, slot_words;
  ecsi_jslot *slot;
  uint32_t nslot, slotcap;
  uint32_t *popped, npopped, poppedcap;
  uint32_t *pushed, npushed, pushedcap;
  uint32_t mark_slot_count, mark_live, mark_qlen;
  uint64_t mark_qhash;
  /* held references: open addressing, 0 empty; orphan[k]: its cell let go */
  uint32_t *held;
  uint8_t *orphan;
  uint32_t heldcap, nheld;
  /* the other managers, by registration position at the mark */
  ecsi_jwhole *whole;
  uint32_t nwhole;
  /* the change clock, queries' cursors and systems' owed time at the mark
  ** (cursors.c), which undo puts back */
  ecsi_cursors cursors;
  uint64_t hash;           /* the world's state hash at the mark */
  bool lost, lost_memory;   /* ecsi_journal_lose */
  /* the last delta's bytes, and the mark it would move to (ecs_journal_mark) */
  ecsi_jbuf out;
  ecsi_jwalk pending;
  bool has_pending;
  size_t pending_changes;
};


/* The captured values at offset at (a tag's are no bytes at all: never
** an offset from a NULL block). */
static inline const unsigned char *ecsi_captured(const ecs_journal *j,
                                                 size_t at) {
  return j->bytes != NULL ? j->bytes + at : (const unsigned char *)"";
}

/* journal.c and journal_delta.c */
ecs_err ecsi_jbuf_reserve(ecsi_jbuf *b, size_t more);
ecs_err ecsi_jbuf_write(void *ud, const void *data, size_t size);
void ecsi_jbuf_free(ecsi_jbuf *b);
uint64_t ecsi_journal_queue_hash(const ecs_world *w);
ecs_err ecsi_journal_full_hash(ecs_world *w, const ecs_journal_host *host,
                               uint64_t *out, ecs_journal_bad *bad);
ecs_err ecsi_journal_save_whole(ecs_world *w, uint32_t m, ecsi_jbuf *b);
const ecsi_jwhole *ecsi_journal_mark_whole(const ecs_journal *j, uint32_t m,
                                           const void *self);
void ecsi_journal_mark_reset(ecs_world *w, ecs_journal *j, bool release);
void ecsi_journal_whole_free(ecs_world *w, ecs_journal *j);
void ecsi_journal_pending_free(ecs_world *w, ecs_journal *j);
uint64_t ecsi_manager_name_hash(const ecs_world *w, uint32_t m);

/* The write paths: capture before changing the state of (c, index). */
void ecsi_journal_capture(ecs_world *w, ecs_component *c, uint32_t index);
static inline void ecsi_journal_row(ecs_world *w, ecs_component *c,
                                    uint32_t row) {
  if (w->journal != NULL)
    ecsi_journal_capture(w, c, ecs_entity_index(owners(c)[row]));
}
void ecsi_journal_rows(ecs_world *w, ecs_component *c, const uint32_t *rows,
                       size_t n);
void ecsi_journal_range(ecs_world *w, ecs_component *c, uint32_t first,
                        size_t n);
/* The write paths: row's owner (or c's size, or its gc cursor: row
** UINT32_MAX) is about to change. */
void ecsi_journal_layout_at(ecs_world *w, ecs_component *c, uint32_t row);
static inline void ecsi_journal_layout(ecs_world *w, ecs_component *c,
                                       uint32_t row) {
  if (w->journal != NULL) ecsi_journal_layout_at(w, c, row);
}
/* ... every row's owner (a re-order, a clear, a load). */
void ecsi_journal_layout_all(ecs_world *w, ecs_component *c);
/* entity.c: slot index is about to change (old: its state now); a queue
** pop and a push. */
void ecsi_journal_slot(ecs_world *w, uint32_t index);
void ecsi_journal_popped(ecs_world *w, uint32_t index);
void ecsi_journal_pushed(ecs_world *w, uint32_t index);
/* entity.c: e is dying: capture its instances. */
void ecsi_journal_dying(ecs_world *w, ecs_entity e);
/* a cell drops ref: true when the journal keeps it (an old value). */
bool ecsi_journal_claim_ref(ecs_world *w, uint32_t ref);
/* The journal can no longer describe the changes since its mark (nomem:
** a capture found no memory). */
void ecsi_journal_lose(ecs_journal *j, bool nomem);
/* component_migrate.c: a component was redefined: the journal lost its
** base. */
void ecsi_journal_restored(ecs_world *w);
/* snapshot.c: the world is about to be loaded whole (its commit, called
** with the world's own entity table in place): the state staged. */
typedef struct ecsi_load_view {
  const ecsi_entity_table *next; /* the table loaded */
  void *const *twin;             /* snapshot entry -> its twin, or NULL */
  const uint32_t *which;         /* snapshot entry -> world manager (or
                                 ** UINT32_MAX: skipped) */
  const uint8_t *matched;        /* world manager -> the snapshot holds it */
  uint32_t n;                    /* snapshot entries */
  const ecsi_cursors *cursors;   /* the cursors loaded, or NULL (version 1) */
} ecsi_load_view;
void ecsi_journal_loading(ecs_world *w, const ecsi_load_view *v);
/* ecs_world_free */
void ecsi_journal_free(ecs_world *w);
/* component.c: a component being freed forgets its captures. */
void ecsi_journal_forget(ecs_world *w, ecs_component *c);

/* journal_image.c: after-images, the values a capture's instance has now,
** taken when a single write is told complete (ecs_component_written). */
void ecsi_journal_reprepare(ecsi_jcomp *jc, uint32_t index);
void ecsi_journal_touched(ecs_world *w, ecs_component *c, uint32_t row);
void ecsi_journal_bulk(ecs_component *c);
void ecsi_journal_images_reset(ecs_world *w, ecsi_jcomp *jc);
void ecsi_journal_images_free(ecs_world *w, ecsi_jcomp *jc);
const char *ecsi_journal_check(const ecs_world *w);
/* Bytes of one packed row (lua cells as 4-byte references): the fields'
** (prefix[0] is the owner column's). */
static inline size_t ecsi_packed_size(const ecs_component *c) {
  return c->prefix[c->nfields] - c->prefix[0];
}
/* A record of jc->rec: u32 entity index, u32 owner, the packed values (a
** delta's record, in the machine's order: little-endian, snapshot.h). */
static inline size_t ecsi_record_size(const ecs_component *c) {
  return 8u + ecsi_packed_size(c);
}
/* The current image of cap, or NULL. */
static inline const ecsi_jimg *ecsi_image(const ecsi_jcomp *jc,
                                          const ecsi_jcap *cap) {
  const ecsi_jimg *im = cap->img != 0 ? &jc->img[cap->img - 1u] : NULL;
  return im != NULL && im->epoch == jc->epoch ? im : NULL;
}

/* journal.c, for delta.c: hashing (ecsi_mix64: checksum.h) */
uint64_t ecsi_hash_name(ecs_namespace ns, const char *name, size_t len);
uint64_t ecsi_hash_slot(uint32_t index, uint32_t state);
uint64_t ecsi_hash_slot_count(uint32_t count);
uint64_t ecsi_hash_queue_item(uint32_t index);
uint64_t ecsi_hash_whole(uint64_t name_hash, const void *bytes, size_t n);
uint64_t ecsi_whole_term(const ecs_world *w, uint32_t m, const void *bytes,
                         size_t n);
#define ECSI_QUEUE_P 0x9E3779B97F4A7C15u /* odd: invertible mod 2^64 */

/* Row i of c holds exactly the packed values (lua cells: the same
** references). */
bool ecsi_same_row(const ecs_component *c, uint32_t i,
                   const unsigned char *packed);
/* Copy row i of c into packed form at out. */
void ecsi_pack_row(const ecs_component *c, uint32_t i, unsigned char *out);
/* Write row values at packed (lua cells as references) as plain data
** (lua cells as u32 length and the host's bytes) to out. */
ecs_err ecsi_encode_packed(const ecs_component *c, const unsigned char *packed,
                           const ecs_journal_host *host, ecs_writer *out,
                           ecs_entity owner, ecs_journal_bad *bad);
/* The hash of n packed bytes (a row of a component without lua fields): a
** few words through the mixer, more through XXH64. Both sides of a delta
** compute the same. */
static inline uint64_t ecsi_bytes_hash(const unsigned char *p, size_t n) {
  uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15u, v;
  if (n > 64) return ecs_snapshot_hash(p, n);
  for (; n >= 8; p += 8, n -= 8) {
    memcpy(&v, p, 8); /* the machine's order: little-endian (snapshot.h) */
    h = ecsi_mix64(h ^ v);
  }
  if (n > 0) {
    v = 0;
    memcpy(&v, p, n);
    h = ecsi_mix64(h ^ v ^ 0xFF);
  }
  return h;
}
/* ecsi_hash_packed of an instance of a component without lua fields. */
static inline uint64_t ecsi_hash_plain(uint64_t name_hash, ecs_entity owner,
                                       const unsigned char *packed, size_t n) {
  return ecsi_mix64((name_hash + (uint64_t)owner * 0x9E3779B97F4A7C15u) ^
                    ecsi_bytes_hash(packed, n));
}
/* Hash of an instance: its component's name hash, owner and encoded
** values. */
ecs_err ecsi_hash_packed(const ecs_world *w, const ecs_component *c,
                         uint64_t name_hash, ecs_entity owner,
                         const unsigned char *packed,
                         const ecs_journal_host *host, uint64_t *out,
                         ecs_journal_bad *bad);


#endif
