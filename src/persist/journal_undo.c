/*
** journal_undo.c -- taking a world back to its journal's mark (journal.h,
** ecs_journal_undo): the entity table in place (slots, the free queue,
** counts), every captured (component, entity) state put back, the
** managers kept whole reloaded from their saves at the mark. All or
** nothing: everything that can fail (room for the instances, the twins
** loaded against the mark's table) comes before the commit.
**
** Layer: world (with journal.c, which records what this reads).
*/
#include <string.h>

#include "journal_private.h"

/* ------------------------------------------------------------------------
** Undo
** --------------------------------------------------------------------- */

/* The entity table as it was at the mark, in place; saved gets what is
** needed to put the present one back (slot states, the ring positions
** written). */
typedef struct table_undo {
  uint16_t *state;   /* nslot: the states now */
  uint32_t *ring;    /* the ring's items overwritten: npopped of them, or
                     ** the whole ring (full) */
  uint32_t slot_count, live, head, len;
  bool full;
} table_undo;

/* Does putting the popped indices back in front overflow the ring (more
** pops since the mark than room beside the queue now)? Then undo rebuilds
** the ring whole. */
static bool ring_overflows(const ecs_world *w, const ecs_journal *j) {
  return (uint64_t)j->npopped + w->free.len > w->free.cap;
}

static void table_to_mark(ecs_world *w, const ecs_journal *j, table_undo *u) {
  ecsi_queue *q = &w->free;
  uint32_t mask = q->cap - 1u, head;
  u->slot_count = w->head.slot_count;
  u->live = w->live;
  u->head = q->head;
  u->len = q->len;
  u->full = ring_overflows(w, j);
  for (uint32_t n = 0; n < j->nslot; n++) {
    uint32_t i = j->slot[n].index;
    /* (past the count, after a restore to a smaller table: unused) */
    u->state[n] = i < w->head.slot_count ? w->head.slot[i] : ECS_SLOT_FREE;
    w->head.slot[i] = j->slot[n].old;
  }
  /* the queue at the mark: the first mark_qlen of the popped indices then
  ** the queue now (the free queue is a FIFO: the mark's queue followed by
  ** the pushes is the pops followed by the queue now) */
  if (u->full) {
    memcpy(u->ring, q->item, (size_t)q->cap * sizeof *u->ring);
    for (uint32_t k = 0; k < j->mark_qlen; k++)
      q->item[k] = k < j->npopped ? j->popped[k]
                                  : u->ring[(u->head + k - j->npopped) & mask];
    q->head = 0;
    q->len = j->mark_qlen;
  } else {
    head = (q->head - j->npopped) & mask;
    for (uint32_t n = 0; n < j->npopped; n++) {
      u->ring[n] = q->item[(head + n) & mask];
      q->item[(head + n) & mask] = j->popped[n];
    }
    q->head = head;
    q->len = q->len + j->npopped - j->npushed;
  }
  if (j->mark_slot_count > 0) w->head.slot[0] = ECS_SLOT_FREE; /* (reserved) */
  w->head.slot_count = j->mark_slot_count;
  w->live = j->mark_live;
}

static void table_back(ecs_world *w, const ecs_journal *j, const table_undo *u) {
  ecsi_queue *q = &w->free;
  uint32_t mask = q->cap - 1u;
  if (u->full) {
    memcpy(q->item, u->ring, (size_t)q->cap * sizeof *u->ring);
  } else {
    for (uint32_t n = 0; n < j->npopped; n++)
      q->item[(u->head - j->npopped + n) & mask] = u->ring[n];
  }
  q->head = u->head;
  q->len = u->len;
  w->head.slot_count = u->slot_count;
  w->live = u->live;
  for (uint32_t n = j->nslot; n-- > 0;)
    w->head.slot[j->slot[n].index] = u->state[n];
}

/* The layout of jc's component at the mark (journal.c, "Layout"): its
** recorded rows, sorted by row (in place: the mark moves after undo). */
static ecsi_layout mark_layout(ecsi_jcomp *jc) {
  ecsi_layout l;
  ecsi_layout_sort(jc->row, jc->nrow);
  l.size = jc->mark_size;
  l.gc_cursor = jc->mark_cursor;
  l.churn = jc->mark_churn;
  l.rows = jc->row;
  l.n = jc->nrow;
  return l;
}

/*
** Room for everything undo puts back: each component whose rows changed
** gets the layout of the mark (component_layout.c: checked, room for its
** rows, map entries and moves), room[k] holding what it needs; the other
** components only get values back, in rows they have.
*/
static ecs_err undo_reserve(ecs_world *w, const ecs_journal *j,
                            ecsi_layout_room *room) {
  size_t refs = 0; /* lua cells dropped: the layouts', each value put back */
  ecs_err err = ECS_ERR_OK;
  uint32_t k;
  for (k = 0; k < j->ncomp; k++) {
    ecsi_jcomp *jc = j->comp[k];
    ecsi_layout l;
    refs += (size_t)jc->n * jc->c->nlua;
    if (!jc->laid) continue;
    l = mark_layout(jc);
    if ((err = ecsi_layout_reserve(w, jc->c, &l, &room[k])) != ECS_ERR_OK) break;
    refs += room[k].refs;
  }
  if (err == ECS_ERR_OK && (err = ecsi_component_refs_reserve(w, refs)) == ECS_ERR_OK)
    return ECS_ERR_OK;
  while (k-- > 0) ecsi_layout_release(w, &room[k]);
  return err;
}

/* Each captured instance's values and stamps as at the mark (in the row
** the layout gave it back). */
static void undo_values(ecs_world *w, const ecs_journal *j, const ecsi_jcomp *jc) {
  ecs_component *c = jc->c;
  for (uint32_t n = 0; n < jc->n; n++) {
    const ecsi_jcap *cap = &jc->cap[n];
    ecs_instance i;
    if (cap->owner == 0) continue; /* no live record then: the layout says */
    i = ecs_component_lookup(w, c, cap->owner);
    if (i == ECS_NO_INSTANCE) continue; /* (cannot be: the layout has it) */
    ecsi_component_put_values(w, c, i, ecsi_captured(j, cap->at));
    ecsi_ticks_set(c, i, cap->stamp);
  }
}

/* Twins loaded with the mark's saves, for the managers kept whole whose
** save changed; twins[m] NULL for the others. */
static ecs_err undo_twins(ecs_world *w, const ecs_journal *j, void **twin) {
  ecsi_jbuf now = {NULL, NULL, 0, 0};
  ecs_err err = ECS_ERR_OK;
  now.w = w;
  for (uint32_t m = 0; m < w->manager_count && err == ECS_ERR_OK; m++) {
    const ecs_manager_class *cls = w->manager[m].cls;
    const ecsi_jwhole *old;
    twin[m] = NULL;
    if (ecs_component_is(cls) || cls->save == NULL) continue;
    old = ecsi_journal_mark_whole(j, m, w->manager[m].self);
    /* when slots go back, records of entities made since the mark may
    ** linger as garbage in any manager: load the mark's records whole;
    ** else only a manager whose records differ (compared under the mark's
    ** table, as they will be read) */
    if (j->nslot == 0) {
      if ((err = ecsi_journal_save_whole(w, m, &now)) != ECS_ERR_OK) break;
      if (old != NULL && old->size == now.n &&
          (now.n == 0 || memcmp(old->bytes, now.p, now.n) == 0))
        continue;
    }
    if (cls->twin == NULL || cls->swap == NULL || cls->load == NULL) {
      err = ECS_ERR_INVALID; /* cannot be put back: refused, nothing done */
      break;
    }
    if ((twin[m] = cls->twin(w, w->manager[m].self)) == NULL) {
      err = ECS_ERR_NOMEM;
      break;
    }
    if (old != NULL) {
      ecs_reader in;
      in.data = old->bytes;
      in.size = old->size;
      in.pos = 0;
      err = cls->load(w, twin[m], &in);
      if (err == ECS_ERR_OK && in.pos != in.size) err = ECS_ERR_CORRUPT;
    }
  }
  ecsi_jbuf_free(&now);
  return err;
}

static void twins_free(ecs_world *w, void **twin, uint32_t n) {
  for (uint32_t m = 0; m < n; m++)
    if (twin[m] != NULL) w->manager[m].cls->free(w, twin[m]);
}

ecs_err ecs_journal_undo(ecs_world *w, ecs_journal *j) {
  table_undo u;
  void **twin = NULL;
  uint32_t nm = w->manager_count;
  size_t state_size = (size_t)j->nslot * sizeof *u.state + 1;
  size_t ring_size = 0;
  size_t twin_size = (size_t)nm * sizeof *twin + 1;
  size_t room_size = (size_t)j->ncomp * sizeof(ecsi_layout_room) + 1;
  ecsi_layout_room *room = NULL;
  ecs_err err;
  if (w->pins != 0) return ECS_ERR_PINNED;
  if (j->lost) return ECS_ERR_LOST;
  memset(&u, 0, sizeof u);
  if ((room = (ecsi_layout_room *)ecsi_realloc(w, NULL, 0, room_size)) == NULL)
    return ECS_ERR_NOMEM;
  memset(room, 0, room_size);
  /* a restore since the mark may have left a table smaller than the
  ** mark's, or than the indices captured before it: room for every slot
  ** put back, and a ring that holds them all */
  {
    uint32_t need = j->mark_slot_count;
    for (uint32_t n = 0; n < j->nslot; n++)
      if (j->slot[n].index >= need) need = j->slot[n].index + 1u;
    if ((err = ecsi_entities_reserve(w, need, need)) != ECS_ERR_OK) {
      ecsi_free(w, room, room_size);
      return err;
    }
  }
  ring_size = (size_t)(ring_overflows(w, j) ? w->free.cap : j->npopped) *
                  sizeof *u.ring + 1;
  u.state = (uint16_t *)ecsi_realloc(w, NULL, 0, state_size);
  u.ring = (uint32_t *)ecsi_realloc(w, NULL, 0, ring_size);
  twin = (void **)ecsi_realloc(w, NULL, 0, twin_size);
  if (u.state == NULL || u.ring == NULL || twin == NULL) {
    err = ECS_ERR_NOMEM;
    goto done;
  }
  memset(twin, 0, (size_t)nm * sizeof *twin);
  /* the layouts are checked and the twins load against the mark's table */
  table_to_mark(w, j, &u);
  if ((err = undo_reserve(w, j, room)) != ECS_ERR_OK ||
      (err = undo_twins(w, j, twin)) != ECS_ERR_OK) {
    table_back(w, j, &u);
    twins_free(w, twin, nm);
    goto done;
  }
  /* commit: nothing below fails; the journal hears none of it. Every
  ** component whose rows changed gets the mark's rows back exactly (the
  ** records of entities made since go with them: no purge is needed), then
  ** every captured instance its values and stamps. The managers kept whole
  ** are reloaded from their saves at the mark. */
  w->journal = NULL;
  for (uint32_t k = 0; k < j->ncomp; k++) {
    ecsi_jcomp *jc = j->comp[k];
    if (jc->laid) {
      ecsi_layout l = mark_layout(jc);
      ecsi_layout_apply(w, jc->c, &l, &room[k]);
    }
    undo_values(w, j, jc);
  }
  for (uint32_t m = 0; m < nm; m++)
    if (twin[m] != NULL) {
      w->manager[m].cls->swap(w, w->manager[m].self, twin[m]);
      w->manager[m].cls->free(w, twin[m]);
    }
  ecsi_cursors_apply(w, &j->cursors);
  w->journal = j;
  w->destroy_epoch++;
  w->loads++; /* loops begun before it are over */
  ecsi_queries_invalidate(w);
  ecsi_journal_mark_reset(w, j, false); /* every held reference is in its cell again */
done: /* (an apply released its room: releasing it again does nothing) */
  for (uint32_t k = 0; k < j->ncomp; k++) ecsi_layout_release(w, &room[k]);
  ecsi_free(w, room, room_size);
  ecsi_free(w, u.state, state_size);
  ecsi_free(w, u.ring, ring_size);
  ecsi_free(w, twin, twin_size);
  return err;
}

