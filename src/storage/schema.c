/*
** schema.c -- the rules of component names and schemas, and the parser of
** the text form "field:type" (component.h: ecs_component_check_schema,
** ecs_schema_entry_parse) and of its cleanup suffix "!clear"
** (schema_text.h).
**
** Managers layer, beside component.c (layers: alloc.h): the rules are the
** core's, so that the binding checks nothing of its own, and they need
** nothing of a manager, so they stand apart from its storage. Also the
** layout of a schema's arrays (component_private.h, ecsi_schema), shared
** by a new manager and a redefined one.
*/
#include <string.h>

#include "component_private.h"
#include "schema_gen.h"
#include "schema_text.h"

static size_t align8(size_t n) { return (n + 7u) / 8u * 8u; }

/* Offsets in the span: element sizes (then cleanup), lua fields, prefixes,
** names. */
static void schema_offsets(uint32_t n, size_t *elem, size_t *lua,
                           size_t *prefix, size_t *str) {
  *elem = align8((size_t)n * sizeof(ecs_field_def));
  *lua = align8(*elem + 2u * (size_t)n);
  *prefix = *lua + (size_t)n * sizeof(uint32_t);
  *str = *prefix + ((size_t)n + 1) * sizeof(uint32_t);
}

size_t ecsi_schema_size(const ecs_field_def *defs, uint32_t n) {
  size_t elem, lua, prefix, str, names = 0;
  schema_offsets(n, &elem, &lua, &prefix, &str);
  for (uint32_t k = 0; k < n; k++) names += strlen(defs[k].name) + 1;
  return str + names;
}

void ecsi_schema_fill(void *at, const ecs_field_def *defs, uint32_t n,
                      ecsi_schema *s) {
  size_t off_elem, off_lua, off_prefix, off_str;
  char *str;
  schema_offsets(n, &off_elem, &off_lua, &off_prefix, &off_str);
  memset(s, 0, sizeof *s);
  s->field = (ecs_field_def *)at;
  s->elem = (uint8_t *)at + off_elem;
  s->cleanup = s->elem + n; /* zero: no policy */
  s->lua_field = (uint32_t *)(void *)((char *)at + off_lua);
  s->prefix = (uint32_t *)(void *)((char *)at + off_prefix);
  str = (char *)at + off_str;
  s->nfields = n;
  s->stride = sizeof(ecs_entity);
  for (uint32_t k = 0; k < n; k++) {
    size_t len = strlen(defs[k].name) + 1;
    memcpy(str, defs[k].name, len);
    s->field[k].name = str;
    s->field[k].type = defs[k].type;
    s->elem[k] = (uint8_t)ecs_type_size(defs[k].type);
    s->prefix[k] = (uint32_t)s->stride;
    s->stride += s->elem[k];
    if (defs[k].type == ECS_LUA) s->lua_field[s->nlua++] = k;
    str += len;
  }
  s->prefix[n] = (uint32_t)s->stride;
}

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

ecs_err ecs_schema_entry_cleanup(const char *s, size_t *len,
                                 ecs_cleanup *policy, const char **suffix) {
  static const char *const names[] = {"clear", "remove", "destroy"};
  const char *bang = (const char *)memchr(s, '!', *len);
  size_t plen;
  *policy = ECS_CLEANUP_NONE;
  *suffix = NULL;
  if (bang == NULL) return ECS_ERR_OK;
  plen = *len - (size_t)(bang - s) - 1;
  *len = (size_t)(bang - s);
  *suffix = bang + 1;
  for (int p = 0; p < 3; p++)
    if (strlen(names[p]) == plen && memcmp(bang + 1, names[p], plen) == 0) {
      *policy = (ecs_cleanup)(ECS_CLEANUP_CLEAR + p);
      return ECS_ERR_OK;
    }
  return ECS_ERR_INVALID;
}

/* ------------------------------------------------------------------------
** Schema generations (schema_gen.h)
** --------------------------------------------------------------------- */

uint32_t ecs_component_schema_gen(const ecs_component *c) {
  return c->schema_gen;
}

uint32_t ecs_world_schema_gen(const ecs_world *w) { return w->schema_gen; }
