/*
** inspect.h -- the text form of an entity (world:inspect's string): one
** line for the entity, one per component it has, its transform, one per
** plugin manager that has it. Formatting only, over the core's data; the
** rules of the text are in src/lua/inspect.c's header, which documents
** world:inspect.
**
** The text goes to a sink the caller gives: add takes the pieces in
** order, lua_value writes the short form of a lua field's reference
** (the core does not know Lua values). Either may not return (the
** binding's buffer raises on a memory error): the functions here hold
** nothing and change nothing, so leaving them midway is safe.
**
** Private to the core and the binding (not in the plugin table).
**
** Layer: managers (components, the transform, the names).
*/
#ifndef ECS_INSPECT_H
#define ECS_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "component.h"
#include "transform.h"

#define ECS_TEXT_SHOW 60 /* quoted text longer than this is cut */

typedef struct ecs_text {
  void (*add)(void *ud, const char *s, size_t n);
  void (*lua_value)(void *ud, uint32_t ref); /* ref 0: nil */
  void *ud;
} ecs_text;

/* The zero-terminated s to t. */
void ecs_text_add(const ecs_text *t, const char *s);

/* s[0 .. n) quoted as a Lua literal, cut past ECS_TEXT_SHOW bytes (at a
** UTF-8 boundary) with its length after. */
void ecs_text_quoted(const ecs_text *t, const char *s, size_t n);

/* A number of a float column (f32: the shortest text that reads back as
** the float) or a Lua float (lua_float: ".0" where it looks integral). */
void ecs_text_float(char *buf, size_t size, double v, bool f32,
                    bool lua_float);

/* "entity(i.g)", or "null". */
void ecs_text_entity(char *buf, size_t size, ecs_entity e);

/* e's transform as inspect shows it (false: no transform manager, or e
** has no transform). */
typedef struct ecs_transform_view {
  ecs_trs local;
  ecs_entity parent;
  double world[3];
} ecs_transform_view;

bool ecs_inspect_transform(const ecs_world *w, ecs_entity e,
                           ecs_transform_view *out);

/* Is manager self (of class cls) a plugin's that has e? (Not a component,
** nor the transform or the names, which inspect shows its own way.) */
bool ecs_inspect_plugin_has(const ecs_world *w, const void *self,
                            const ecs_manager_class *cls, ecs_entity e);

/* e's instance in manager self if it is a component that has e. */
ecs_instance ecs_inspect_row(const ecs_world *w, const void *self,
                             const ecs_manager_class *cls, ecs_entity e);

/* The whole text of e ("entity(0.0) (null)", "entity(5.1) (dead)", or its
** lines). */
void ecs_inspect_text(const ecs_world *w, ecs_entity e, const ecs_text *t);

#endif
