/*
** cursors.c -- the world state that passes keep outside the managers: the
** change clock, each change query's last completed pass (its cursor), and
** each fixed-interval system's owed time. Snapshots save them, loads put
** them back, the journal keeps them at its mark (API.md, "Replay
** promise": a restored world stepped again must do what the saved one
** did, and a change query that reported everything after a restore, or a
** system that lost the time it owed, would not).
**
** Identity. Systems have names. Queries have none, so a change query is
** known by its creation number in its world (ecs_query.serial: 1 for the
** first query made, whatever kind) together with a signature of its terms
** (ecsi_query_signature): a world made by ecs.restore whose setup makes
** the same queries in the same order gives each the cursor the saved
** world's query of that number and terms had; a query whose number or
** terms match no saved one starts fresh (its next pass reports every
** match, as a new query's does). A load keeps what it brought (w->cursors)
** for the queries and systems made after it, so that setup code that runs
** after ecs.restore finds them; until a query takes one, snapshots save it
** (ecsi_cursors_save).
**
** Layout in a snapshot (docs/persistence.md, "The format"), little-endian:
**   u32 clock
**   u32 nq, then nq x (u32 serial, u64 signature, u32 since)
**   u32 ns, then ns x (u32 name length, the name, f64 owed time)
**
** Layer: world (with snapshot.c and the journal), above the queries and
** the systems.
*/
#include <math.h>
#include <string.h>

#include "checksum.h"
#include "ecs_private.h"
#include "query_private.h"
#include "system.h"

/* ------------------------------------------------------------------------
** Taking the cursors of a world
** --------------------------------------------------------------------- */

static bool change_query(const ecs_query *q) {
  return (q->changed_mask | q->added_mask) != 0;
}

/* Owed time is kept only by systems with an interval. */
static bool owes(const ecs_system *s) { return ecsi_system_interval(s) > 0.0; }

/* One block: the struct's arrays, then the names. */
static ecs_err cursors_alloc(ecs_world *w, uint32_t nq, uint32_t ns,
                             size_t names, ecsi_cursors *out) {
  size_t qb = (size_t)nq * sizeof *out->q, sb = (size_t)ns * sizeof *out->sys;
  size_t bytes = qb + sb + names;
  unsigned char *b = NULL;
  memset(out, 0, sizeof *out);
  if (bytes > 0 && (b = (unsigned char *)ecsi_realloc(w, NULL, 0, bytes)) == NULL)
    return ECS_ERR_NOMEM;
  out->block = b;
  out->bytes = bytes;
  if (b == NULL) return ECS_ERR_OK; /* nothing to point at (no b + 0 on NULL) */
  out->q = (ecsi_qcursor *)(void *)b;
  out->sys = (ecsi_scursor *)(void *)(b + qb);
  out->names = (char *)(b + qb + sb);
  out->nq = nq;
  out->nsys = ns;
  return ECS_ERR_OK;
}

void ecsi_cursors_free(ecs_world *w, ecsi_cursors *c) {
  ecsi_free(w, c->block, c->bytes);
  memset(c, 0, sizeof *c);
}

ecs_err ecsi_cursors_take(ecs_world *w, ecsi_cursors *out) {
  uint32_t nq = 0, ns = 0, cursor = 0, i = 0;
  size_t names = 0, at = 0;
  ecs_system *s;
  ecs_err err;
  for (const ecs_query *q = w->queries; q != NULL; q = q->next) nq += change_query(q);
  while (ecs_system_next(w, &cursor, &s))
    if (owes(s)) {
      ns++;
      names += strlen(ecs_system_name(s)) + 1u;
    }
  if ((err = cursors_alloc(w, nq, ns, names, out)) != ECS_ERR_OK) return err;
  out->clock = ecsi_world_clock(w);
  for (const ecs_query *q = w->queries; q != NULL; q = q->next)
    if (change_query(q)) {
      out->q[i].serial = q->serial;
      out->q[i].sig = ecsi_query_signature(q);
      out->q[i].since = q->since;
      i++;
    }
  cursor = i = 0;
  while (ecs_system_next(w, &cursor, &s))
    if (owes(s)) {
      size_t len = strlen(ecs_system_name(s));
      memcpy(out->names + at, ecs_system_name(s), len + 1u);
      out->sys[i].name = out->names + at;
      out->sys[i].len = len;
      out->sys[i].owed = ecsi_system_owed(s);
      at += len + 1u;
      i++;
    }
  return ECS_ERR_OK;
}

/* ------------------------------------------------------------------------
** Putting them back
** --------------------------------------------------------------------- */

static const ecsi_qcursor *find_query(const ecsi_cursors *c, uint32_t serial,
                                      uint64_t sig) {
  return ecsi_kept_query(c, serial, sig);
}

static const ecsi_scursor *find_system(const ecsi_cursors *c, const char *name) {
  return ecsi_kept_system(c, name);
}

/*
** The world's clock, change queries and owing systems as c says: a query
** or system c does not know starts fresh (its next pass reports every
** match; no time owed).
*/
void ecsi_cursors_apply(ecs_world *w, const ecsi_cursors *c) {
  uint32_t cursor = 0;
  ecs_system *s;
  ecsi_world_set_clock(w, c->clock);
  for (ecs_query *q = w->queries; q != NULL; q = q->next)
    if (change_query(q)) {
      const ecsi_qcursor *qc = find_query(c, q->serial, ecsi_query_signature(q));
      q->since = qc != NULL ? qc->since : 0;
    }
  while (ecs_system_next(w, &cursor, &s))
    if (owes(s)) {
      const ecsi_scursor *sc = find_system(c, ecs_system_name(s));
      ecsi_system_set_owed(s, sc != NULL ? sc->owed : 0.0);
    }
}

uint32_t ecsi_cursors_floor(const ecs_world *w, const ecsi_cursors *c,
                            uint32_t floor) {
  for (const ecs_query *q = w->queries; q != NULL; q = q->next)
    if (change_query(q) && q->since != 0 && q->since < floor) floor = q->since;
  for (uint32_t k = 0; c != NULL && k < c->nq; k++)
    if (c->q[k].since != 0 && c->q[k].since < floor) floor = c->q[k].since;
  return floor;
}

/*
** A delta's cursors (delta.c): the queries and systems c knows take their
** cursors and owed times; the others keep theirs (a replica's own queries
** go on as they were), and the clock moves to c's if it is ahead. Stamps
** and cursors are only ever compared with one another, so a clock that is
** ahead of the source's keeps every answer the source would give.
*/
void ecsi_cursors_merge(ecs_world *w, const ecsi_cursors *c) {
  uint32_t cursor = 0;
  ecs_system *s;
  if (c->clock > ecsi_world_clock(w)) ecsi_world_set_clock(w, c->clock);
  for (ecs_query *q = w->queries; q != NULL; q = q->next)
    if (change_query(q)) {
      const ecsi_qcursor *qc = find_query(c, q->serial, ecsi_query_signature(q));
      if (qc != NULL) q->since = qc->since;
    }
  while (ecs_system_next(w, &cursor, &s))
    if (owes(s)) {
      const ecsi_scursor *sc = find_system(c, ecs_system_name(s));
      if (sc != NULL) ecsi_system_set_owed(s, sc->owed);
    }
}

static uint32_t kept_floor(const ecs_world *w, uint32_t floor);

void ecsi_cursors_keep(ecs_world *w, ecsi_cursors *c) {
  if (w->cursors == NULL) {
    w->cursors = (ecsi_cursors *)ecsi_realloc(w, NULL, 0, sizeof *c);
    if (w->cursors == NULL) { /* nothing kept: later queries start fresh */
      ecsi_cursors_free(w, c);
      return;
    }
  } else {
    ecsi_cursors_free(w, w->cursors);
  }
  *w->cursors = *c;
  memset(c, 0, sizeof *c);
  w->kept_floor = kept_floor;
}

void ecsi_cursors_forget(ecs_world *w) {
  if (w->cursors == NULL) return;
  ecsi_cursors_free(w, w->cursors);
  ecsi_free(w, w->cursors, sizeof *w->cursors);
  w->cursors = NULL;
  w->kept_floor = NULL;
}

/* ------------------------------------------------------------------------
** Bytes
** --------------------------------------------------------------------- */

static ecs_err write_u64(ecs_writer *out, uint64_t v) {
  unsigned char b[8];
  for (int k = 0; k < 8; k++) b[k] = (unsigned char)(v >> (8 * k));
  return ecs_write(out, b, sizeof b);
}

/*
** The cursors a load kept (w->cursors) that no change query of w has
** taken (none made since with that number and terms) are world state
** still: a query made later goes on from one. So a snapshot saves them
** beside the queries' own, and the stamps they can tell apart: a world
** made by ecs.restore and saved again before its setup made its queries,
** such as the scratch world of a migrating restore, hands them on (the
** restore in place that ends a migrating restore then puts back the
** blob's cursors and stamps, as a plain restore does).
*/
static bool unclaimed(const ecs_world *w, const ecsi_qcursor *k) {
  for (const ecs_query *q = w->queries; q != NULL; q = q->next)
    if (change_query(q) && q->serial == k->serial && ecsi_query_signature(q) == k->sig)
      return false;
  return true;
}

/* At most floor: the oldest completed pass among the kept cursors that no
** query of w has taken; change.c asks it through w->kept_floor, which
** ecsi_cursors_keep sets while cursors are kept. */
static uint32_t kept_floor(const ecs_world *w, uint32_t floor) {
  for (uint32_t k = 0; w->cursors != NULL && k < w->cursors->nq; k++) {
    const ecsi_qcursor *qc = &w->cursors->q[k];
    if (qc->since != 0 && qc->since < floor && unclaimed(w, qc)) floor = qc->since;
  }
  return floor;
}

/* The world's cursors as the layout above says, with no allocation (a
** const world: ecs_world_save). */
ecs_err ecsi_cursors_save(const ecs_world *w, ecs_writer *out) {
  uint32_t nq = 0, ns = 0, cursor = 0, nkept = w->cursors != NULL ? w->cursors->nq : 0;
  ecs_system *s;
  ecs_err err = ecs_write_u32(out, ecsi_world_clock(w));
  for (const ecs_query *q = w->queries; q != NULL; q = q->next) nq += change_query(q);
  for (uint32_t k = 0; k < nkept; k++) nq += unclaimed(w, &w->cursors->q[k]);
  if (err == ECS_ERR_OK) err = ecs_write_u32(out, nq);
  for (const ecs_query *q = w->queries; q != NULL && err == ECS_ERR_OK; q = q->next)
    if (change_query(q) &&
        (err = ecs_write_u32(out, q->serial)) == ECS_ERR_OK &&
        (err = write_u64(out, ecsi_query_signature(q))) == ECS_ERR_OK)
      err = ecs_write_u32(out, q->since);
  for (uint32_t k = 0; k < nkept && err == ECS_ERR_OK; k++) {
    const ecsi_qcursor *qc = &w->cursors->q[k];
    if (unclaimed(w, qc) && (err = ecs_write_u32(out, qc->serial)) == ECS_ERR_OK &&
        (err = write_u64(out, qc->sig)) == ECS_ERR_OK)
      err = ecs_write_u32(out, qc->since);
  }
  while (ecs_system_next(w, &cursor, &s)) ns += owes(s);
  if (err == ECS_ERR_OK) err = ecs_write_u32(out, ns);
  cursor = 0;
  while (err == ECS_ERR_OK && ecs_system_next(w, &cursor, &s)) {
    const char *name = ecs_system_name(s);
    size_t len = strlen(name);
    double owed;
    uint64_t bits;
    if (!owes(s)) continue;
    owed = ecsi_system_owed(s);
    memcpy(&bits, &owed, sizeof bits);
    if ((err = ecs_write_u32(out, (uint32_t)len)) == ECS_ERR_OK &&
        (err = ecs_write(out, name, len)) == ECS_ERR_OK)
      err = write_u64(out, bits);
  }
  return err;
}


/*
** Read the layout above into out (one block), every rule checked: counts
** within the bytes, no serial 0, every since at most the clock, names of 1
** to 255 bytes without a 0, owed times finite and not negative (an entry
** given twice is harmless: the first one is found). Nothing of the world
** changes; on failure out holds nothing.
*/
static bool read_u64(ecs_reader *in, uint64_t *v) {
  uint32_t lo, hi;
  if (ecs_read_u32(in, &lo) != ECS_ERR_OK || ecs_read_u32(in, &hi) != ECS_ERR_OK)
    return false;
  *v = (uint64_t)hi << 32 | lo;
  return true;
}

/* The layout's framing (counts within the bytes, names of 1 to 255 bytes
** without a 0): in moves past it; *names: the names' bytes with their 0s. */
static ecs_err frame(ecs_reader *in, uint32_t *nq, uint32_t *ns, size_t *names) {
  uint32_t clock;
  *names = 0;
  if (ecs_read_u32(in, &clock) != ECS_ERR_OK || ecs_read_u32(in, nq) != ECS_ERR_OK ||
      *nq > (in->size - in->pos) / 16u)
    return ECS_ERR_CORRUPT;
  in->pos += (size_t)*nq * 16u;
  if (ecs_read_u32(in, ns) != ECS_ERR_OK || *ns > (in->size - in->pos) / 13u)
    return ECS_ERR_CORRUPT;
  for (uint32_t k = 0; k < *ns; k++) {
    uint32_t len;
    if (ecs_read_u32(in, &len) != ECS_ERR_OK || len == 0 || len > 255u ||
        len > in->size - in->pos || in->size - in->pos - len < 8u)
      return ECS_ERR_CORRUPT;
    if (memchr(in->data + in->pos, 0, len) != NULL) return ECS_ERR_CORRUPT;
    in->pos += (size_t)len + 8u;
    *names += (size_t)len + 1u;
  }
  return ECS_ERR_OK;
}

ecs_err ecsi_cursors_skip(ecs_reader *in) {
  ecs_reader r = *in;
  uint32_t nq, ns;
  size_t names;
  if (frame(&r, &nq, &ns, &names) != ECS_ERR_OK) return ECS_ERR_CORRUPT;
  { /* the values' rules, read in place */
    ecs_reader v = *in;
    uint32_t clock, since, len;
    uint64_t bits;
    double owed;
    (void)ecs_read_u32(&v, &clock);
    v.pos += 4u;
    for (uint32_t k = 0; k < nq; k++) {
      uint32_t serial;
      (void)ecs_read_u32(&v, &serial);
      v.pos += 8u;
      (void)ecs_read_u32(&v, &since);
      if (serial == 0 || since > clock) return ECS_ERR_CORRUPT;
    }
    v.pos += 4u;
    for (uint32_t k = 0; k < ns; k++) {
      (void)ecs_read_u32(&v, &len);
      v.pos += len;
      bits = 0;
      (void)read_u64(&v, &bits);
      memcpy(&owed, &bits, sizeof owed);
      if (!isfinite(owed) || owed < 0.0) return ECS_ERR_CORRUPT;
    }
  }
  *in = r;
  return ECS_ERR_OK;
}

ecs_err ecsi_cursors_read(ecs_world *w, ecs_reader *in, ecsi_cursors *out) {
  uint32_t clock, nq, ns;
  size_t start = in->pos, names = 0, at = 0;
  ecs_err err;
  memset(out, 0, sizeof *out);
  if (frame(in, &nq, &ns, &names) != ECS_ERR_OK) goto corrupt;
  clock = ecsi_get_u32(in->data + start);
  if ((err = cursors_alloc(w, nq, ns, names, out)) != ECS_ERR_OK) {
    in->pos = start;
    return err;
  }
  in->pos = start + 8u;
  out->clock = clock;
  for (uint32_t k = 0; k < nq; k++) {
    ecsi_qcursor *qc = &out->q[k];
    (void)ecs_read_u32(in, &qc->serial);
    (void)read_u64(in, &qc->sig);
    (void)ecs_read_u32(in, &qc->since);
    if (qc->serial == 0 || qc->since > clock) goto corrupt_free;
  }
  in->pos += 4u;
  for (uint32_t k = 0; k < ns; k++) {
    ecsi_scursor *sc = &out->sys[k];
    uint32_t len;
    uint64_t bits = 0;
    (void)ecs_read_u32(in, &len);
    memcpy(out->names + at, in->data + in->pos, len);
    out->names[at + len] = '\0';
    in->pos += len;
    (void)read_u64(in, &bits);
    memcpy(&sc->owed, &bits, sizeof sc->owed);
    sc->name = out->names + at;
    sc->len = len;
    at += (size_t)len + 1u;
    if (!isfinite(sc->owed) || sc->owed < 0.0) goto corrupt_free;
  }
  return ECS_ERR_OK;
corrupt_free:
  ecsi_cursors_free(w, out);
corrupt:
  in->pos = start;
  return ECS_ERR_CORRUPT;
}
