/*
** schema_match.c -- a new schema matched to a component's old one
** (schema_match.h): the rename map's rules and the field map from[] of
** ecs_component_redefine. A map has at most one entry per old field, so
** the quadratic scans below stay within ECS_MAX_FIELDS squared.
**
** Layer: storage (schema_match.h).
*/
#include <stdio.h>
#include <string.h>

#include "schema_match.h"

static bool same_name(const char *a, size_t alen, const char *b, size_t blen) {
  return alen == blen && memcmp(a, b, alen) == 0;
}

/* Is name the name of one of defs[0 .. n)? */
static bool new_field(const ecs_field_def *defs, uint32_t n, const char *name,
                      size_t len) {
  for (uint32_t k = 0; k < n; k++)
    if (same_name(defs[k].name, strlen(defs[k].name), name, len)) return true;
  return false;
}

/* The entry of ren whose old (or new) name is name, or NULL. */
static const ecs_rename *find_rename(const ecs_rename *ren, size_t nren,
                                     const char *name, size_t len, bool old) {
  for (size_t r = 0; r < nren; r++)
    if (old ? same_name(ren[r].old_name, ren[r].old_len, name, len)
            : same_name(ren[r].new_name, ren[r].new_len, name, len))
      return &ren[r];
  return NULL;
}

ecs_err ecs_schema_check_renames(const ecs_component *c,
                                 const ecs_field_def *defs, uint32_t n,
                                 const ecs_rename *ren, size_t nren,
                                 char *msg, size_t size) {
  for (size_t r = 0; r < nren; r++) {
    const ecs_rename *e = &ren[r];
    if (ecs_component_field_index(c, e->old_name, e->old_len) < 0) {
      snprintf(msg, size, "rename: '%s' is not a field of %s", e->old_name,
               ecs_component_name(c));
      return ECS_ERR_INVALID;
    }
    if (!new_field(defs, n, e->new_name, e->new_len)) {
      snprintf(msg, size, "rename: '%s' is not a field of the new schema",
               e->new_name);
      return ECS_ERR_INVALID;
    }
    if (find_rename(ren, r, e->new_name, e->new_len, false) != NULL) {
      snprintf(msg, size, "rename: two fields renamed to '%s'", e->new_name);
      return ECS_ERR_INVALID;
    }
  }
  return ECS_ERR_OK;
}

ecs_err ecs_schema_match(const ecs_component *c, const ecs_field_def *defs,
                         uint32_t n, const ecs_rename *ren, size_t nren,
                         uint32_t *from, char *msg, size_t size) {
  ecs_err err = ecs_schema_check_renames(c, defs, n, ren, nren, msg, size);
  if (err != ECS_ERR_OK) return err;
  for (size_t r = 0; r < nren; r++) {
    const ecs_rename *e = &ren[r];
    if (ecs_component_field_index(c, e->new_name, e->new_len) >= 0 &&
        find_rename(ren, nren, e->new_name, e->new_len, true) == NULL) {
      snprintf(msg, size, "rename: '%s' is kept as a field, so another field "
               "cannot be renamed to it (rename it too)", e->new_name);
      return ECS_ERR_INVALID;
    }
  }
  for (uint32_t k = 0; k < n; k++) {
    size_t len = strlen(defs[k].name);
    const ecs_rename *e = find_rename(ren, nren, defs[k].name, len, false);
    int j;
    if (e != NULL) j = ecs_component_field_index(c, e->old_name, e->old_len);
    else if (find_rename(ren, nren, defs[k].name, len, true) != NULL) j = -1;
    else j = ecs_component_field_index(c, defs[k].name, len);
    from[k] = j < 0 ? ECS_NO_FIELD : (uint32_t)j;
  }
  return ECS_ERR_OK;
}

bool ecs_schema_same_as(const ecs_component *c, const ecs_field_def *defs,
                        uint32_t n, const uint32_t *from) {
  if (n != ecs_component_field_count(c)) return false;
  for (uint32_t k = 0; k < n; k++)
    if (from[k] != k || defs[k].type != ecs_component_field(c, k)->type ||
        strcmp(defs[k].name, ecs_component_field(c, k)->name) != 0)
      return false;
  return true;
}

bool ecs_schema_same_fields(const ecs_component *c, const ecs_component *d) {
  uint32_t n = ecs_component_field_count(c);
  if (n != ecs_component_field_count(d)) return false;
  for (uint32_t k = 0; k < n; k++)
    if (ecs_component_field(c, k)->type != ecs_component_field(d, k)->type ||
        ecs_component_cleanup(c, k) != ecs_component_cleanup(d, k) ||
        strcmp(ecs_component_field(c, k)->name,
               ecs_component_field(d, k)->name) != 0)
      return false;
  return true;
}
