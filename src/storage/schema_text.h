/*
** schema_text.h -- the cleanup suffix of a schema entry's text,
** "field:entity!clear" (!remove, !destroy: docs/components.md, "Entity
** fields that clean up"), as world:component takes it; the rest of the
** entry is ecs_schema_entry_parse's (component.h).
**
** Private to the core and the binding (not in the plugin table).
**
** Layer: storage (schema.c).
*/
#ifndef ECS_SCHEMA_TEXT_H
#define ECS_SCHEMA_TEXT_H

#include <stddef.h>

#include "component.h"

/*
** The cleanup suffix of the entry s[0 .. *len): *policy receives its
** policy (ECS_CLEANUP_NONE: no '!'), *suffix the text after the '!'
** (NULL: none), and *len is cut to before the '!'.
** @return ECS_ERR_OK, or ECS_ERR_INVALID for a policy other than clear,
**         remove or destroy.
*/
ecs_err ecs_schema_entry_cleanup(const char *s, size_t *len,
                                 ecs_cleanup *policy, const char **suffix);

#endif
