/*
** component_layout.c -- a generic component's rows put into a layout the
** caller gives: which entity owns each row (dead records included), how
** many rows, where the lazy gc goes on and the churn. The journal's undo
** puts back the layout of its mark, a delta's apply the layout its journal's
** world had (journal_undo.c, delta.c).
**
** Why the layout. Rows are world state: iteration follows them (query.c,
** "Upkeep": a list is in its first term's row order; C:entities walks the
** rows), and so does every later swap-remove and gc step. A world that got
** back its values but not its rows would iterate in another order from
** then on, and a game whose rules depend on that order would not replay
** (API.md, "Replay promise"). The journal therefore keeps the owner of
** every row it saw change (journal_layout.c), and this file makes a
** manager hold exactly the layout those describe.
**
** A layout is given as the pairs (row, owner) of the rows whose owner
** differs from the manager's, sorted by row; every other row below the
** layout's size keeps its owner. Data moves with its owner: an entity that
** has a row before and after keeps its values, lua cells and stamps (a
** delta's or undo's records then write the values that changed); one that
** gets a row it did not have gets zeros; one that loses its row has its
** lua references dropped (those the journal holds stay alive for it).
**
** Three steps, as everywhere in the core: check (every rule, nothing
** changed), reserve (every allocation, nothing observable changed), apply
** (cannot fail).
**
** Layer: managers (layers: alloc.h).
*/
#include <stdlib.h>
#include <string.h>

#include "component_private.h"


/* The pair of row, or NULL when row keeps its owner. */
static const ecsi_layout_row *pair_of(const ecsi_layout *l, uint32_t row) {
  uint32_t lo = 0, hi = l->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2u;
    if (l->rows[mid].row < row) lo = mid + 1u;
    else hi = mid;
  }
  return lo < l->n && l->rows[lo].row == row ? &l->rows[lo] : NULL;
}

static int by_row(const void *a, const void *b) {
  uint32_t x = ((const ecsi_layout_row *)a)->row, y = ((const ecsi_layout_row *)b)->row;
  return (x > y) - (x < y);
}

/* (a layout may record no row -- only the gc cursor and churn -- and then
** has no array: qsort must not be given a null pointer, even for 0) */
void ecsi_layout_sort(ecsi_layout_row *rows, uint32_t n) {
  if (n > 1) qsort(rows, n, sizeof *rows, by_row);
}

static int by_index(const void *a, const void *b) {
  uint32_t x = ecs_entity_index(*(const ecs_entity *)a);
  uint32_t y = ecs_entity_index(*(const ecs_entity *)b);
  return (x > y) - (x < y);
}

/* The row c holds e in (e's very handle, dead or purged), or NONE. */
static uint32_t row_of(const ecs_component *c, ecs_entity e) {
  uint32_t r = map_get(c, ecs_entity_index(e));
  return r != ECS_NO_INSTANCE && owners(c)[r] == e ? r : ECS_NO_INSTANCE;
}

/*
** The rules: pairs sorted by row with no row twice, every row below the
** size; every row from the manager's size up to the layout's given (it has
** no owner to keep); every owner a record this world's table allows
** (ecs_record_valid: an index below the slot count and a generation not
** ahead of its slot's; or purged); no index twice among the rows below the
** size, pairs and kept rows together. sorted: room for n owners (the
** reserve's scratch), left sorted by index.
*/
ecs_err ecsi_layout_check(const ecs_world *w, const ecs_component *c,
                          const ecsi_layout *l, ecs_entity *sorted) {
  uint32_t given = 0;
  if (l->size > ECS_MAX_ENTITIES || l->n > l->size) return ECS_ERR_CORRUPT;
  for (uint32_t k = 0; k < l->n; k++) {
    const ecsi_layout_row *p = &l->rows[k];
    if (p->row >= l->size || (k > 0 && p->row <= l->rows[k - 1u].row) ||
        !ecs_record_valid(w, p->owner))
      return ECS_ERR_CORRUPT;
    given += p->row >= c->size;
    sorted[k] = p->owner;
  }
  if (l->size > c->size && given != l->size - c->size) return ECS_ERR_CORRUPT;
  if (l->n > 1) qsort(sorted, l->n, sizeof *sorted, by_index);
  for (uint32_t k = 0; k < l->n; k++) {
    uint32_t index = ecs_entity_index(sorted[k]), r;
    if (k > 0 && ecs_entity_index(sorted[k - 1u]) == index) return ECS_ERR_CORRUPT;
    /* a row of c already holding this index keeps it unless the layout
    ** gives that row another owner or cuts it off */
    r = map_get(c, index);
    if (r != ECS_NO_INSTANCE && r < l->size && pair_of(l, r) == NULL)
      return ECS_ERR_CORRUPT;
  }
  return ECS_ERR_OK;
}

/* Bytes of one gathered row: the owner's values, then its stamps. */
static size_t gathered_size(const ecs_component *c) {
  return c->stride - sizeof(ecs_entity) + ECSI_TICK_KINDS * sizeof(uint32_t);
}

ecs_err ecsi_layout_reserve(ecs_world *w, ecs_component *c,
                            const ecsi_layout *l, ecsi_layout_room *room) {
  size_t bytes = (size_t)l->n * (sizeof(ecs_entity) + gathered_size(c)) + 1u;
  uint32_t *index = NULL, nnew = 0;
  ecs_err err;
  memset(room, 0, sizeof *room);
  if (l->size > c->size &&
      (err = ecsi_component_data_reserve(w, c, l->size)) != ECS_ERR_OK)
    return err;
  /* drop room (the caller's to reserve): the rows that grow, and every
  ** row that changes owner (its old owner's refs go to the drop list while
  ** the row stays counted) */
  room->refs = ((size_t)(l->size > c->size ? l->size - c->size : 0) + l->n) * c->nlua;
  if ((room->block = (unsigned char *)ecsi_realloc(w, NULL, 0, bytes)) == NULL)
    return ECS_ERR_NOMEM;
  room->bytes = bytes;
  room->sorted = (ecs_entity *)(void *)room->block;
  room->data = room->block + (size_t)l->n * sizeof(ecs_entity);
  if ((err = ecsi_layout_check(w, c, l, room->sorted)) != ECS_ERR_OK) goto fail;
  /* map room for the indices that get an entry they have not now */
  if (l->n > 0) {
    index = (uint32_t *)ecsi_realloc(w, NULL, 0, (size_t)l->n * sizeof *index);
    if (index == NULL) {
      err = ECS_ERR_NOMEM;
      goto fail;
    }
    for (uint32_t k = 0; k < l->n; k++)
      if (map_get(c, ecs_entity_index(l->rows[k].owner)) == ECS_NO_INSTANCE)
        index[nnew++] = ecs_entity_index(l->rows[k].owner);
    err = ecsi_rowmap_reserve_n(w, &c->map, owners(c), index, nnew);
    ecsi_free(w, index, (size_t)l->n * sizeof *index);
    if (err != ECS_ERR_OK) goto fail;
  }
  return ECS_ERR_OK;
fail:
  ecsi_layout_release(w, room);
  return err;
}

void ecsi_layout_release(ecs_world *w, ecsi_layout_room *room) {
  ecsi_free(w, room->block, room->bytes);
  memset(room, 0, sizeof *room);
}

/* Does the layout give e a row (its very handle)? room->sorted is the
** layout's owners by index. */
static bool kept(const ecsi_layout *l, const ecsi_layout_room *room,
                 ecs_entity e) {
  uint32_t lo = 0, hi = l->n, index = ecs_entity_index(e);
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2u;
    if (ecs_entity_index(room->sorted[mid]) < index) lo = mid + 1u;
    else hi = mid;
  }
  return lo < l->n && room->sorted[lo] == e;
}

/* Row r's owner leaves r (step 2 of apply). */
static void leave(ecs_world *w, ecs_component *c, const ecsi_layout *l,
                  const ecsi_layout_room *room, uint32_t r) {
  ecs_entity x = owners(c)[r];
  if (!kept(l, room, x)) ecsi_component_drop_refs(w, c, r);
  ecsi_rowmap_remove(&c->map, owners(c), ecs_entity_index(x));
}

bool ecsi_layout_holds(const ecs_component *c, const ecsi_layout *l,
                       const ecsi_layout_room *room, ecs_entity e) {
  uint32_t r;
  if (kept(l, room, e)) return true;
  r = row_of(c, e);
  return r != ECS_NO_INSTANCE && r < l->size && pair_of(l, r) == NULL;
}

void ecsi_layout_apply(ecs_world *w, ecs_component *c, const ecsi_layout *l,
                       ecsi_layout_room *room) {
  size_t g = gathered_size(c);
  uint32_t old = c->size;
  /* an open journal (a relay's, or a delta applied under one) records
  ** the rows that change (undo turns its own off first) */
  if (ecsi_heard(w, ECSI_EV_LAYOUT)) {
    ecsi_tell_layout(w, c, UINT32_MAX);
    for (uint32_t k = 0; k < l->n && l->rows[k].row < old; k++)
      ecsi_tell_layout(w, c, l->rows[k].row);
    for (uint32_t r = l->size; r < old; r++) ecsi_tell_layout(w, c, r);
  }
  /* 1. gather: each owner's values and stamps from the row it has now */
  for (uint32_t k = 0; k < l->n; k++) {
    unsigned char *to = room->data + (size_t)k * g;
    uint32_t r = row_of(c, l->rows[k].owner);
    memset(to, 0, g);
    if (r == ECS_NO_INSTANCE) continue;
    for (uint32_t f = 0; f < c->nfields; f++) {
      memcpy(to, col(c, f) + (size_t)r * c->elem[f], c->elem[f]);
      to += c->elem[f];
    }
    for (int t = 0; t < ECSI_TICK_KINDS; t++, to += sizeof(uint32_t))
      if (c->ticks.at[t] != NULL) memcpy(to, &c->ticks.at[t][r], sizeof(uint32_t));
  }
  /* 2. every row that changes owner or is cut off: its owner's entry
  ** goes (owners[] still names every entry), its refs too unless the
  ** owner keeps a row (its cells travel in the gathered values) */
  for (uint32_t k = 0; k < l->n && l->rows[k].row < old; k++)
    leave(w, c, l, room, l->rows[k].row);
  for (uint32_t r = l->size; r < old; r++) leave(w, c, l, room, r);
  /* 3. the rows as the layout gives them */
  c->size = l->size;
  for (uint32_t k = 0; k < l->n; k++) {
    const unsigned char *from = room->data + (size_t)k * g;
    uint32_t r = l->rows[k].row;
    owners(c)[r] = l->rows[k].owner;
    for (uint32_t f = 0; f < c->nfields; f++) {
      memcpy(col(c, f) + (size_t)r * c->elem[f], from, c->elem[f]);
      from += c->elem[f];
    }
    for (int t = 0; t < ECSI_TICK_KINDS; t++, from += sizeof(uint32_t))
      if (c->ticks.at[t] != NULL) memcpy(&c->ticks.at[t][r], from, sizeof(uint32_t));
  }
  /* 4. their entries (every other row's entry stayed) */
  for (uint32_t k = 0; k < l->n; k++)
    ecsi_rowmap_insert(&c->map, owners(c), ecs_entity_index(l->rows[k].owner),
                       l->rows[k].row);
  w->ref_slots = w->ref_slots - (size_t)old * c->nlua + (size_t)l->size * c->nlua;
  c->gc_cursor = l->gc_cursor;
  c->churn = l->churn;
  c->version++;
  ecsi_component_tell_stale(w, c);
  ecsi_layout_release(w, room);
}
