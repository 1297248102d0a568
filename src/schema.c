/*
** schema.c -- the rules of component names and schemas, and the parser of
** the text form "field:type" (component.h: ecs_component_check_schema,
** ecs_schema_entry_parse).
**
** Managers layer, beside component.c (layers: alloc.h): the rules are the
** core's, so that the binding checks nothing of its own, and they need
** nothing of a manager, so they stand apart from its storage.
*/
#include <string.h>

#include "component.h"

static bool ident_char(char c, bool first) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (!first && c >= '0' && c <= '9');
}

/* [A-Za-z_][A-Za-z0-9_]*, so that "Name.field" is unambiguous. */
static bool is_ident(const char *s, size_t len) {
  if (len == 0 || !ident_char(s[0], true)) return false;
  for (size_t k = 1; k < len; k++)
    if (!ident_char(s[k], false)) return false;
  return true;
}

static bool is_field_name(const char *s) {
  return s != NULL && is_ident(s, strlen(s));
}

ecs_err ecs_component_check_schema(const char *name, const ecs_field_def *f,
                                   uint32_t n, uint32_t *at) {
  if (at != NULL) *at = 0;
  if (!is_field_name(name)) return ECS_ERR_COMPONENT_NAME;
  if (n > ECS_MAX_FIELDS) return ECS_ERR_TOO_MANY_FIELDS;
  if (n > 0 && f == NULL) return ECS_ERR_SCHEMA;
  for (uint32_t k = 0; k < n; k++) {
    ecs_err err = ECS_ERR_OK;
    if (!is_field_name(f[k].name)) err = ECS_ERR_FIELD_NAME;
    else if ((unsigned)f[k].type >= (unsigned)ECS_TYPE__COUNT)
      err = ECS_ERR_FIELD_TYPE;
    for (uint32_t j = 0; j < k && err == ECS_ERR_OK; j++)
      if (strcmp(f[j].name, f[k].name) == 0) err = ECS_ERR_DUPLICATE_FIELD;
    if (err != ECS_ERR_OK) {
      if (at != NULL) *at = k;
      return err;
    }
  }
  return ECS_ERR_OK;
}

ecs_err ecs_schema_entry_parse(const char *s, size_t len, size_t *name_len,
                               ecs_type *type) {
  const char *colon = (const char *)memchr(s, ':', len);
  size_t flen = colon != NULL ? (size_t)(colon - s) : len;
  int t = ECS_F64; /* a bare name is a number, as Lua's are */
  *name_len = flen;
  if (!is_ident(s, flen)) return ECS_ERR_FIELD_NAME;
  if (colon != NULL && (t = ecs_type_parse(colon + 1, len - flen - 1)) < 0)
    return ECS_ERR_FIELD_TYPE;
  *type = (ecs_type)t;
  return ECS_ERR_OK;
}
