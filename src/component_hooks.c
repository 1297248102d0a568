/*
** component_hooks.c -- the manager interface of generic components
** (component.c is the manager itself): has, clear, stats, schema, and the
** save/load layout. They work on the manager's storage through
** component_private.h and change it only as component.c's own operations
** do (the refs to drop, the queries to tell).
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
** pages and the capacity stay, as remove and gc keep them: a manager that
** is cleared and filled again (a level reloaded) does not allocate again.
*/
void ecsi_component_clear(ecs_world *w, void *self) {
  ecs_component *c = (ecs_component *)self;
  const ecs_entity *own = owners(c);
  for (uint32_t i = 0; i < c->size; i++) {
    ecsi_component_drop_refs(w, c, i);
    ecsi_sparse_set(&c->map, ecs_entity_index(own[i]), ECS_NO_INSTANCE);
  }
  w->ref_slots -= (size_t)c->size * c->nlua;
  c->size = 0;
  c->gc_cursor = 0;
  c->version++;
  ecsi_component_tell_stale(c);
}

/* Its three kinds of block: meta (schema and names), columns, map. */
void ecsi_component_stats(const ecs_world *w, const void *self,
                            ecs_manager_stats *out) {
  const ecs_component *c = (const ecs_component *)self;
  out->records = c->size;
  out->live = ecs_component_count(w, c);
  out->bytes = c->meta_size + c->stride * c->cap + ecsi_sparse_bytes(&c->map) +
               c->watch_cap * sizeof *c->watch;
}

uint32_t ecsi_component_schema(const ecs_world *w, const void *self,
                                 ecs_field_def *out, uint32_t max) {
  const ecs_component *c = (const ecs_component *)self;
  (void)w;
  for (uint32_t k = 0; k < c->nfields && k < max; k++) out[k] = c->field[k];
  return c->nfields;
}

/*
** The saved layout (u32 = ecs_write_u32, machine byte order):
**   u32 LAYOUT (1)       so that a later layout can be told from this one
**   u32 nfields          then per field: u32 type, u32 name length, name
**   u32 count            live instances
**   count records of stride bytes: u32 owner, then each field's value in
**                        schema order, as stored (elem[k] bytes)
** The schema comes first so that load refuses data of another schema
** before it reads any record, and every record has the same size, so
** count is checked against the bytes that remain before anything is
** allocated. Only live instances are written: dead records are garbage.
*/
#define LAYOUT 1u

ecs_err ecsi_component_save(const ecs_world *w, const void *self,
                              ecs_writer *out) {
  const ecs_component *c = (const ecs_component *)self;
  const ecs_entity *own = owners(c);
  /* one record at a time, one write each: stride <= 4 + 255 * 8 bytes */
  unsigned char rec[sizeof(ecs_entity) + ECS_MAX_FIELDS * sizeof(double)];
  ecs_err err;
  if ((err = ecs_write_u32(out, LAYOUT)) != ECS_ERR_OK ||
      (err = ecs_write_u32(out, c->nfields)) != ECS_ERR_OK)
    return err;
  for (uint32_t k = 0; k < c->nfields; k++) {
    size_t len = strlen(c->field[k].name); /* an identifier: short */
    if ((err = ecs_write_u32(out, (uint32_t)c->field[k].type)) != ECS_ERR_OK ||
        (err = ecs_write_u32(out, (uint32_t)len)) != ECS_ERR_OK ||
        (err = ecs_write(out, c->field[k].name, len)) != ECS_ERR_OK)
      return err;
  }
  if ((err = ecs_write_u32(out, (uint32_t)ecs_component_count(w, c))) !=
      ECS_ERR_OK)
    return err;
  for (uint32_t i = 0; i < c->size; i++) {
    size_t at = sizeof(ecs_entity);
    if (!ecs_alive(w, own[i])) continue;
    memcpy(rec, &own[i], sizeof(ecs_entity));
    for (uint32_t k = 0; k < c->nfields; k++) {
      memcpy(rec + at, col(c, k) + (size_t)i * c->elem[k], c->elem[k]);
      at += c->elem[k];
    }
    if ((err = ecs_write(out, rec, at)) != ECS_ERR_OK) return err;
  }
  return ECS_ERR_OK;
}

/* The schema part of the layout must be this manager's, field by field
** (names are compared where they lie in the stream: no copy, no limit). */
static ecs_err load_schema(const ecs_component *c, ecs_reader *in) {
  uint32_t v, type, len;
  if (ecs_read_u32(in, &v) != ECS_ERR_OK || v != LAYOUT ||
      ecs_read_u32(in, &v) != ECS_ERR_OK || v != c->nfields)
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

/*
** Is the value just read into row i of field k one this manager could
** hold? bool fields hold 0 or 1 (the value layer stores nothing else,
** and queries test them bytewise), entity fields 30-bit handles (what
** check_entity lets through: dead ones are fine, as in any entity field).
** Numbers take any bits, NaNs included. Lua refs cannot be checked here:
** the binding that frames the stream vouches for them.
*/
static bool value_ok(const ecs_component *c, const ecs_component *tmp,
                     uint32_t k, uint32_t i) {
  ecs_type t = c->field[k].type;
  if (t == ECS_BOOL) return ((const uint8_t *)(const void *)col(tmp, k))[i] <= 1u;
  if (t == ECS_ENTITY)
    return (((const ecs_entity *)(const void *)col(tmp, k))[i] &
            ~ECS_ID_MASK) == 0;
  return true;
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
  size_t start = in->pos;
  uint32_t count;
  ecs_err err = load_schema(c, in);
  if (err == ECS_ERR_OK && (err = ecs_read_u32(in, &count)) == ECS_ERR_OK &&
      (count > ECS_MAX_ENTITIES ||
       (size_t)count > (in->size - in->pos) / c->stride))
    err = ECS_ERR_CORRUPT; /* more records than bytes left for them */
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
  for (uint32_t i = 0; i < count; i++) {
    ecs_entity e;
    uint32_t index;
    if (ecs_read_u32(in, &e) != ECS_ERR_OK ||
        (e & ~ECS_ID_MASK) != 0 || !ecs_alive(w, e))
      goto corrupt; /* the entities named must be alive (ecs.h) */
    index = ecs_entity_index(e);
    if ((err = ecsi_sparse_reserve(w, &tmp.map, index)) != ECS_ERR_OK)
      goto fail;
    if (ecsi_sparse_get(&tmp.map, index) != ECSI_NONE)
      goto corrupt; /* the same entity twice */
    ecsi_sparse_set(&tmp.map, index, i);
    owners(&tmp)[i] = e;
    tmp.size = i + 1;
    for (uint32_t k = 0; k < c->nfields; k++)
      if (ecs_read(in, col(&tmp, k) + (size_t)i * c->elem[k], c->elem[k]) !=
              ECS_ERR_OK ||
          !value_ok(c, &tmp, k, i))
        goto corrupt;
  }
  /* the swap: nothing below can fail */
  for (uint32_t i = 0; i < c->size; i++) ecsi_component_drop_refs(w, c, i);
  w->ref_slots = w->ref_slots - (size_t)c->size * c->nlua +
                 (size_t)count * c->nlua;
  ecsi_sparse_free(w, &c->map);
  ecsi_free(w, c->data, c->stride * c->cap);
  c->data = tmp.data;
  c->cap = tmp.cap;
  c->size = count;
  c->map = tmp.map;
  c->gc_cursor = 0;
  c->version++;
  ecsi_component_tell_stale(c);
  return ECS_ERR_OK;
corrupt:
  err = ECS_ERR_CORRUPT;
fail:
  ecsi_sparse_free(w, &tmp.map);
  ecsi_free(w, tmp.data, c->stride * tmp.cap);
fail_read:
  in->pos = start;
  return err;
}

