/*
** spawn.c -- a batch spawn (spawn.h): the core half of world:spawn and
** world:clone. The binding reads and converts every value and makes the
** refs of lua fields first; here nothing can fail once the first entity
** is made, so a spawn is all or nothing.
**
** Layer: managers (spawn.h).
*/
#include "spawn.h"

/*
** Write field k of the new instances rows[0 .. n) from f, one column at a
** time: the type is looked at once, the column found once. A ZERO field
** keeps the zeros emplace wrote.
*/
static void write_column(ecs_component *c, uint32_t k,
                         const ecs_spawn_field *f, const ecs_instance *rows,
                         size_t n) {
  ecs_type t = ecs_component_field(c, k)->type;
  void *col = ecs_component_column(c, k);
  switch (f->mode) {
  case ECS_SPAWN_ZERO:
    return;
  case ECS_SPAWN_REFS:
    for (size_t i = 0; i < n; i++) ((uint32_t *)col)[rows[i]] = f->refs[i];
    return;
  case ECS_SPAWN_EACH:
    if (t == ECS_F32) { /* the common case, unrolled */
      for (size_t i = 0; i < n; i++) ((float *)col)[rows[i]] = (float)f->each[i].f;
      return;
    }
    for (size_t i = 0; i < n; i++) ecs_value_store_inline(col, t, rows[i], f->each[i]);
    return;
  case ECS_SPAWN_ONE:
    for (size_t i = 0; i < n; i++) ecs_value_store_inline(col, t, rows[i], f->one);
    return;
  }
}

/* The ADD listeners, with every entity complete: entity by entity, each
** entity's components in order; listeners may change anything, so each
** instance is looked up again. */
static ecs_err notify_adds(ecs_world *w, const ecs_spawn_component *comp,
                           uint32_t m, size_t n, const ecs_entity *es) {
  ecs_err err = ECS_ERR_OK;
  if (((const ecs_world_head *)(const void *)w)->listeners == 0) return err;
  for (size_t i = 0; i < n && err == ECS_ERR_OK; i++)
    for (uint32_t j = 0; j < m && err == ECS_ERR_OK; j++) {
      if (ecs_component_lookup(w, comp[j].c, es[i]) == ECS_NO_INSTANCE)
        continue; /* a listener removed it, or destroyed the entity */
      err = ecs_manager_notify_listeners(w, comp[j].c, es[i], ECS_EVENT_ADD);
    }
  return err;
}

ecs_err ecs_spawn(ecs_world *w, const ecs_spawn_component *comp, uint32_t m,
                  size_t n, ecs_entity *es, uint32_t *index,
                  ecs_instance *rows, bool *created) {
  ecs_err err = ecs_next_indices(w, index, n);
  *created = false;
  for (uint32_t j = 0; j < m && err == ECS_ERR_OK; j++)
    err = ecs_component_reserve(w, comp[j].c, index, n);
  if (err == ECS_ERR_OK) err = ecs_create_n(w, es, n);
  if (err != ECS_ERR_OK) return err;
  for (uint32_t j = 0; j < m; j++) {
    ecs_component *c = comp[j].c;
    uint32_t nf = ecs_component_field_count(c);
    ecs_component_emplace_n(w, c, es, n, rows); /* reserved: cannot fail */
    for (uint32_t k = 0; k < nf; k++) write_column(c, k, &comp[j].field[k], rows, n);
  }
  *created = true;
  return notify_adds(w, comp, m, n, es);
}
