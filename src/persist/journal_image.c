/*
** journal_image.c -- after-images: the values a captured instance has now,
** taken at the write, so that a delta need not read the rows again.
**
** A delta carries, for each (component, entity) captured since the mark,
** the instance as it is now, and the state hash moves by its hash before
** and after. Read at the delta, those rows are scattered over the columns
** (a change of 1% of a large world is one cache miss per column, the
** owner and the entity slot, per change). Taken at the write, the row is in
** the cache already: a single write (ecs_component_prewrite, the values,
** then ecs_component_written instead of ecs_component_touch: the binding's
** set paths, set_field, q:each, the cleanup policies, a delta's put, a
** plugin's write) tells the journal at its end, and the journal writes
** the instance's record
** as a delta carries it (entity index, owner, values) into a log of its
** component, with the instance's hash before and after. A delta then
** copies each component's log, in one memcpy when every capture has a
** current image that changed the instance (the usual frame of scattered
** writes), and adds the sum of the hashes' differences kept as images come
** and go; else it walks the captures and reads the rows only of those
** without a current image.
**
** An image is only ever used while it is certainly the row: it is made
** at ecs_component_written of the very instance the last single capture
** of its component prepared (jc->memo), and it goes stale
**   - at every later single capture of its index (a prewrite, a remove, an
**     add, a destroy, a delta's put: ecsi_journal_reprepare), until the
**     ecs_component_written that follows takes it again;
**   - at every write of many rows (prewrite_n/_range and touch_n/_range:
**     systems, q:apply, q:columns, set_many, a C system's chunks, a
**     pointer loop's chunks): ecsi_journal_bulk moves the component's
**     epoch, and every
**     image of an older epoch is stale. A C system or a Lua body that sets
**     one instance inside a bulk writer's run is covered: the run touches
**     its chunk after the body, and the touch makes the image stale;
**   - while the component is pinned (a pointer loop holds its columns),
**     no image is taken;
**   - components with lua fields take none (their cells' values are the
**     host's), nor do instances whose values are written with no
**     ecs_component_written after them (spawn's).
** A capture without a current image is read from the row, as before.
** ecs_world_check compares every current image with its row
** (ecsi_journal_check), so that the model tests and fuzzers that check
** the world after each step catch a write path that would leave one
** stale.
**
** Finding a capture by its index (to make its image stale) is a small
** open-addressing table of the imaged captures, O(changes). A plain
** ecs_component_touch takes no image: a writer that touches before it
** writes stays correct, its rows read at the delta.
**
** Layer: world (with journal.c).
*/
#include <string.h>

#include "checksum.h"
#include "journal_private.h"

static uint32_t find_slot(const ecsi_jcomp *jc, uint32_t index) {
  uint32_t mask = jc->findcap - 1u, k = (uint32_t)ecsi_mix64(index) & mask;
  while (jc->find[k] != 0 && jc->cap[jc->find[k] - 1u].index != index)
    k = (k + 1u) & mask;
  return k;
}

static bool grow_bytes(ecs_world *w, void **p, size_t *cap, size_t need) {
  size_t ncap = *cap ? *cap : 1024u;
  void *q;
  if (need <= *cap) return true;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 4u) return false;
    ncap *= 2u;
  }
  if ((q = ecsi_realloc(w, *p, *cap, ncap)) == NULL) return false;
  *p = q;
  *cap = ncap;
  return true;
}

/* Room for one more image: its record, its bookkeeping, its table entry
** (a load of at most 1/2). */
static bool image_reserve(ecs_world *w, ecsi_jcomp *jc) {
  size_t rs = ecsi_record_size(jc->c);
  if (jc->nimg < jc->imgcap && (jc->nimg + 1u) * 2u <= jc->findcap &&
      ((size_t)jc->nimg + 1u) * rs <= jc->reccap)
    return true; /* the usual case: room from an earlier interval */
  if ((size_t)jc->nimg + 1u > SIZE_MAX / 4u / rs ||
      !grow_bytes(w, (void **)&jc->rec, &jc->reccap, (jc->nimg + 1u) * rs))
    return false;
  if (jc->nimg == jc->imgcap &&
      ecsi_grow(w, (void **)&jc->img, &jc->imgcap, jc->nimg + 1u, sizeof *jc->img,
                64) != ECS_ERR_OK)
    return false;
  if ((jc->nimg + 1u) * 2u > jc->findcap) {
    uint32_t ncap = jc->findcap ? jc->findcap * 2u : 64u, *old = jc->find;
    uint32_t ocap = jc->findcap;
    if (jc->findcap > UINT32_MAX / 4u) return false;
    jc->find = (uint32_t *)ecsi_realloc(w, NULL, 0, (size_t)ncap * sizeof(uint32_t));
    if (jc->find == NULL) {
      jc->find = old;
      return false;
    }
    memset(jc->find, 0, (size_t)ncap * sizeof(uint32_t));
    jc->findcap = ncap;
    for (uint32_t k = 0; k < ocap; k++)
      if (old[k] != 0) jc->find[find_slot(jc, jc->cap[old[k] - 1u].index)] = old[k];
    ecsi_free(w, old, (size_t)ocap * sizeof(uint32_t));
  }
  return true;
}

/* Image k stops being current. */
static void uncurrent(ecsi_jcomp *jc, uint32_t k) {
  ecsi_jimg *im = &jc->img[k];
  if (im->epoch != jc->epoch) return;
  jc->ncur--;
  jc->nsame -= im->same;
  jc->sum -= im->after - im->before;
  im->epoch = 0;
}

void ecsi_journal_reprepare(ecsi_jcomp *jc, uint32_t index) {
  uint32_t k;
  if (jc->memo != 0 && jc->cap[jc->memo - 1u].index == index)
    return; /* prepared already (an add, then its values) */
  jc->memo = 0;
  if (jc->nimg == 0) return;
  k = jc->find[find_slot(jc, index)];
  if (k == 0) return; /* never imaged: read from its row */
  uncurrent(jc, jc->cap[k - 1u].img - 1u);
  jc->memo = k;
}

void ecsi_journal_bulk(ecs_component *c) {
  ecsi_jcomp *jc = c->journal;
  if (jc == NULL) return;
  jc->memo = 0;
  if (jc->ncur == 0) return; /* no image to make stale */
  jc->ncur = jc->nsame = 0;
  jc->sum = 0;
  if (++jc->epoch == 0) { /* wrapped: no image may match by chance */
    for (uint32_t k = 0; k < jc->nimg; k++) jc->img[k].epoch = 0;
    jc->epoch = 1;
  }
}

void ecsi_journal_touched(ecs_world *w, ecs_component *c, uint32_t row) {
  ecs_journal *j = w->journal;
  ecsi_jcomp *jc = c->journal;
  ecsi_jcap *cap;
  ecsi_jimg *im;
  ecs_entity owner;
  size_t size = ecsi_packed_size(c);
  unsigned char *rec;
  uint32_t k;
  if (jc == NULL || jc->memo == 0 || j->lost) return;
  cap = &jc->cap[jc->memo - 1u];
  jc->memo = 0; /* one image per prepared write */
  if (c->nlua != 0 || c->pins != 0 || row >= c->size || !ecsi_little_endian())
    return; /* (records are the machine's words: a delta's order) */
  owner = owners(c)[row];
  if (ecs_entity_index(owner) != cap->index || !ecs_alive(w, owner)) return;
  if (cap->img == 0) { /* its first: a record, a hash of its old state */
    if (!image_reserve(w, jc)) return; /* no memory: read from its row */
    k = jc->nimg++;
    cap->img = k + 1u;
    jc->find[find_slot(jc, cap->index)] = (uint32_t)(cap - jc->cap) + 1u;
    im = &jc->img[k];
    im->before = 0;
    im->epoch = 0;
    if (cap->owner != 0)
      im->before = ecsi_hash_plain(jc->name_hash, cap->owner,
                                   ecsi_captured(j, cap->at), size);
    memcpy(jc->rec + (size_t)k * ecsi_record_size(c), &cap->index, 4);
  } else {
    k = cap->img - 1u;
    uncurrent(jc, k);
    im = &jc->img[k];
  }
  rec = jc->rec + (size_t)k * ecsi_record_size(c);
  memcpy(rec + 4, &owner, 4);
  ecsi_pack_row(c, row, rec + 8);
  im->after = ecsi_hash_plain(jc->name_hash, owner, rec + 8, size);
  im->same = cap->owner == owner &&
             (size == 0 || memcmp(ecsi_captured(j, cap->at), rec + 8, size) == 0);
  im->epoch = jc->epoch;
  jc->ncur++;
  jc->nsame += im->same;
  jc->sum += im->after - im->before;
}

/* An array kept for the next interval unless this one used an eighth of
** it (after a burst: the room goes back). */
static bool oversized(size_t cap, size_t used) {
  return cap > 4096u && used * 8u < cap;
}

void ecsi_journal_images_reset(ecs_world *w, ecsi_jcomp *jc) {
  size_t rs = ecsi_record_size(jc->c);
  jc->memo = 0;
  jc->ncur = jc->nsame = 0;
  jc->sum = 0;
  if (jc->nimg == 0) return;
  if (oversized(jc->findcap, (size_t)jc->nimg * 2u) ||
      oversized(jc->reccap, (size_t)jc->nimg * rs)) {
    ecsi_journal_images_free(w, jc);
    return;
  }
  jc->nimg = 0;
  memset(jc->find, 0, (size_t)jc->findcap * sizeof(uint32_t));
}

void ecsi_journal_images_free(ecs_world *w, ecsi_jcomp *jc) {
  ecsi_free(w, jc->find, (size_t)jc->findcap * sizeof(uint32_t));
  ecsi_free(w, jc->rec, jc->reccap);
  ecsi_free(w, jc->img, (size_t)jc->imgcap * sizeof *jc->img);
  jc->find = NULL;
  jc->rec = NULL;
  jc->img = NULL;
  jc->findcap = jc->imgcap = jc->nimg = 0;
  jc->reccap = 0;
  jc->memo = jc->ncur = jc->nsame = 0;
  jc->sum = 0;
}

static const char *check_one(const ecs_world *w, const ecs_journal *j,
                             const ecsi_jcomp *jc) {
  const ecs_component *c = jc->c;
  size_t size = ecsi_packed_size(c), rs = ecsi_record_size(c);
  uint32_t nimg = 0, ncur = 0, nsame = 0;
  uint64_t sum = 0;
  for (uint32_t m = 0; m < w->manager_count; m++)
    if (w->manager[m].self == (const void *)c &&
        ecsi_manager_name_hash(w, m) != jc->name_hash)
      return "journal: a component's name hash is not its name's";
  for (uint32_t n = 0; n < jc->n; n++) {
    const ecsi_jcap *cap = &jc->cap[n];
    const ecsi_jimg *im = ecsi_image(jc, cap);
    const unsigned char *rec;
    ecs_entity owner;
    uint64_t h = 0;
    uint32_t i, index;
    if (cap->img == 0) continue;
    nimg++;
    if (cap->img > jc->nimg || jc->find[find_slot(jc, cap->index)] != n + 1u)
      return "journal: an imaged capture is not in its component's table";
    rec = jc->rec + (size_t)(cap->img - 1u) * rs;
    memcpy(&index, rec, 4);
    if (index != cap->index) return "journal: an after-image names another entity";
    if (cap->owner != 0)
      (void)ecsi_hash_packed(w, c, jc->name_hash, cap->owner,
                             ecsi_captured(j, cap->at), NULL, &h, NULL);
    if (h != jc->img[cap->img - 1u].before)
      return "journal: an after-image's old hash is not the capture's";
    if (im == NULL) continue;
    ncur++;
    nsame += im->same;
    sum += im->after - im->before;
    memcpy(&owner, rec + 4, 4);
    i = map_get(c, cap->index);
    if (i == ECS_NO_INSTANCE || owners(c)[i] != owner || !ecs_alive(w, owner))
      return "journal: an after-image names an instance that is not there";
    if (!ecsi_same_row(c, i, rec + 8))
      return "journal: an after-image differs from its row";
    (void)ecsi_hash_packed(w, c, jc->name_hash, owner, rec + 8, NULL, &h, NULL);
    if (h != im->after) return "journal: an after-image's hash is not its values'";
    if (im->same != (uint32_t)(cap->owner == owner &&
                               (size == 0 || memcmp(ecsi_captured(j, cap->at),
                                                    rec + 8, size) == 0)))
      return "journal: an after-image is marked unchanged wrongly";
  }
  if (nimg != jc->nimg || ncur != jc->ncur || nsame != jc->nsame || sum != jc->sum)
    return "journal: the after-images' counts or sum are wrong";
  return NULL;
}

const char *ecsi_journal_check(const ecs_world *w) {
  const ecs_journal *j = w->journal;
  if (j == NULL || j->lost) return NULL;
  for (uint32_t k = 0; k < j->ncomp; k++) {
    const char *bad = check_one(w, j, j->comp[k]);
    if (bad != NULL) return bad;
  }
  return NULL;
}
