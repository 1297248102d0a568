/*
** disabled.c -- disabled entities (component.h, "Disabled entities").
**
** The flag is a tag component, registered when the world first needs it
** under ECS_DISABLED_NAME (a name ecs_component_new refuses, so no user
** component can collide with it). Being a component, it needs nothing
** new from the rest of the core: snapshots, deltas, undo and the journal
** carry it as any tag, a destroy drops it with the entity's other
** instances, and the queries hear its instances come and go through the
** change barrier like any other (query.c treats it as a "without" term of
** every query that does not include disabled entities). A world that
** never disables anything has no such manager at all.
**
** Layer: managers (storage), beside the generic components it uses.
*/
#include "component_private.h"

ecs_component *ecs_world_disabled(const ecs_world *w) { return w->disabled; }

ecs_err ecs_world_disabled_ready(ecs_world *w) {
  ecs_component *c;
  ecs_err err;
  if (w->disabled != NULL) return ECS_ERR_OK;
  err = ecsi_component_new_reserved(w, ECS_DISABLED_NAME, &c);
  if (err != ECS_ERR_OK) return err;
  w->disabled = c;
  return ECS_ERR_OK;
}

ecs_err ecs_entity_disable(ecs_world *w, ecs_entity e) {
  ecs_instance row;
  ecs_err err;
  if (!ecs_alive(w, e)) return ECS_ERR_DEAD;
  if ((err = ecs_world_disabled_ready(w)) != ECS_ERR_OK) return err;
  return ecs_component_add(w, w->disabled, e, &row, NULL);
}

ecs_err ecs_entity_enable(ecs_world *w, ecs_entity e) {
  if (!ecs_alive(w, e)) return ECS_ERR_DEAD;
  if (w->disabled == NULL) return ECS_ERR_OK;
  return ecs_component_remove(w, w->disabled, e, NULL);
}

bool ecs_entity_enabled(const ecs_world *w, ecs_entity e) {
  return ecs_alive(w, e) &&
         (w->disabled == NULL ||
          ecs_component_lookup(w, w->disabled, e) == ECS_NO_INSTANCE);
}
