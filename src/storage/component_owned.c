/*
** component_owned.c -- owned components (component.h, "Owned components"): the row
** operations an owning manager drives. Each keeps what every generic
** component keeps (the map exact, stamps with their rows, the version
** moving, the watching queries told) so that queries over an owned
** component work exactly as over any other.
**
** Layer: managers (layers: alloc.h).
*/
#include <string.h>

#include "component.h"
#include "component_private.h"

ecs_err ecs_owned_new(ecs_world *w, const char *name,
                       const ecs_field_def *fields, uint32_t nfields,
                       uint64_t readonly, const ecs_owner *owner, void *ud,
                       ecs_component **out) {
  ecs_component *c;
  ecs_err err = ecsi_component_make(w, name, fields, nfields, &c);
  if (err != ECS_ERR_OK) return err;
  c->owner = owner;
  c->owner_ud = ud;
  c->readonly = readonly;
  *out = c;
  return ECS_ERR_OK;
}

void ecs_owned_free(ecs_world *w, ecs_component *c) {
  if (c != NULL) ecsi_component_free(w, c);
}

ecs_err ecs_owned_reserve(ecs_world *w, ecs_component *c, uint32_t need,
                           uint32_t index) {
  ecs_err err;
  if (index != UINT32_MAX &&
      (err = ecsi_rowmap_reserve(w, &c->map, owners(c), index)) != ECS_ERR_OK)
    return err;
  if ((err = ecsi_component_refs_reserve(w, c->nlua)) != ECS_ERR_OK)
    return err;
  return ecsi_component_data_reserve(w, c, need);
}

uint32_t ecs_owned_append(ecs_world *w, ecs_component *c, ecs_entity e) {
  uint32_t i = c->size++;
  owners(c)[i] = e;
  ecsi_component_zero_row(c, i);
  ecsi_rowmap_insert(&c->map, owners(c), ecs_entity_index(e), i);
  w->ref_slots += c->nlua;
  ecsi_ticks_stamp_new(w, c, i, 1);
  c->version++;
  ecsi_component_tell_changed(w, c, e, true);
  return i;
}

void ecs_owned_remove_at(ecs_world *w, ecs_component *c, uint32_t i) {
  ecsi_component_remove_at(w, c, i);
}

/*
** The map first: a's entry goes, b's moves to a, a's comes back at b (a
** removal leaves the room an insert needs); each step while owners[]
** still names what the map expects.
*/
void ecs_owned_swap(ecs_world *w, ecs_component *c, uint32_t a, uint32_t b) {
  ecs_entity *own = owners(c), ea = own[a], eb = own[b];
  if (a == b) return;
  ecsi_rowmap_remove(&c->map, own, ecs_entity_index(ea));
  ecsi_rowmap_move(&c->map, own, ecs_entity_index(eb), a);
  own[a] = eb;
  own[b] = ea;
  ecsi_rowmap_insert(&c->map, own, ecs_entity_index(ea), b);
  for (uint32_t k = 0; k < c->nfields; k++) {
    uint8_t *base = col(c, k), tmp[8];
    size_t e = c->elem[k];
    memcpy(tmp, base + (size_t)a * e, e);
    memcpy(base + (size_t)a * e, base + (size_t)b * e, e);
    memcpy(base + (size_t)b * e, tmp, e);
  }
  for (int k = 0; k < ECSI_TICK_KINDS; k++)
    if (c->ticks.at[k] != NULL) {
      uint32_t t = c->ticks.at[k][a];
      c->ticks.at[k][a] = c->ticks.at[k][b];
      c->ticks.at[k][b] = t;
    }
  c->version++;
  if (ecs_alive(w, eb)) ecsi_component_tell_moved(w, c, eb, a);
  if (ecs_alive(w, ea)) ecsi_component_tell_moved(w, c, ea, b);
}

bool ecs_owned_permute(ecs_world *w, ecs_component *c,
                        const ecs_entity *order) {
  if (c->size == 0) return true;
  return ecsi_component_reorder_rows(w, c, order, c->size, NULL);
}

void ecs_owned_purge(ecs_component *c, uint32_t index) {
  uint32_t i = map_get(c, index);
  if (i != ECS_NO_INSTANCE) owners(c)[i] = ecs_mark_purged(owners(c)[i]);
}

double *ecs_owned_f64(ecs_component *c, uint32_t k) {
  return (double *)(void *)col(c, k);
}

ecs_entity *ecs_owned_owners(ecs_component *c) { return owners(c); }

/* The blocks go too: an owner's clear leaves it as new (the stamps stay
** while queries watch them: they are the queries' and cover no row). */
void ecs_owned_clear(ecs_world *w, ecs_component *c) {
  ecsi_component_clear(w, c);
  ecsi_free(w, c->data, c->stride * c->cap);
  c->data = NULL;
  c->cap = 0;
  ecsi_rowmap_free(w, &c->map);
  memset(&c->map, 0, sizeof c->map);
}

ecs_err ecs_owned_take_prepare(ecs_world *w, ecs_component *c,
                                const ecs_component *from) {
  return ecsi_ticks_reserve(w, c, from->cap);
}

void ecs_owned_take(ecs_world *w, ecs_component *c, ecs_component *from) {
  ecsi_component_swap(w, c, from);
}

size_t ecs_owned_bytes(const ecs_world *w, const ecs_component *c) {
  ecs_manager_stats s;
  memset(&s, 0, sizeof s);
  ecsi_component_stats(w, c, &s);
  return s.bytes;
}

const char *ecs_owned_check(const ecs_world *w, const ecs_component *c,
                             const ecs_entity *rows, uint32_t n) {
  if (c->size != n) return "owned component: not as many rows as its owner";
  for (uint32_t i = 0; i < n; i++)
    if (owners(c)[i] != rows[i])
      return "owned component: a row's owner differs from its owner's row";
  return ecsi_component_check(w, c);
}

uint32_t *ecs_owned_changed(const ecs_world *w, ecs_component *c,
                             uint32_t *now) {
  *now = ecsi_clock_now(w);
  return c->ticks.at[ECSI_TICK_CHANGED];
}

uint32_t ecs_owned_find(const ecs_component *c, uint32_t index) {
  return map_get(c, index);
}

bool ecs_component_owned(const ecs_component *c) { return c->owner != NULL; }
