/*
** inspect.c -- the text form of an entity (inspect.h), world:inspect's
** string: the formatting of the values, the order of the lines, which
** managers show. The binding gives the sink and the short form of a lua
** value; everything else is here, so that another front end (a text dump,
** a JSON form later) reads the same walk.
**
** The cost is two walks of the world's manager list (components, then
** plugins) with an O(1) lookup each, plus the output: nothing depends on
** the number of entities.
**
** Layer: managers (inspect.h).
*/
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"
#include "names.h"
#include "value.h"

void ecs_text_add(const ecs_text *t, const char *s) {
  t->add(t->ud, s, strlen(s));
}

void ecs_text_float(char *buf, size_t size, double v, bool f32,
                    bool lua_float) {
  if (isnan(v)) {
    snprintf(buf, size, "nan");
  } else if (isinf(v)) {
    snprintf(buf, size, "%s", v < 0 ? "-inf" : "inf");
  } else if (f32) { /* the shortest text that reads back as this float */
    float f = (float)v;
    for (int p = 6; p <= 9; p++) {
      snprintf(buf, size, "%.*g", p, v);
      if (strtof(buf, NULL) == f) break;
    }
  } else {
    snprintf(buf, size, "%.14g", v);
    if (lua_float && buf[strspn(buf, "-0123456789")] == '\0')
      snprintf(buf + strlen(buf), size - strlen(buf), ".0");
  }
}

void ecs_text_entity(char *buf, size_t size, ecs_entity e) {
  if (e == ECS_NULL) snprintf(buf, size, "null");
  else snprintf(buf, size, "entity(%u.%u)", (unsigned)ecs_entity_index(e),
                (unsigned)ecs_entity_generation(e));
}

void ecs_text_quoted(const ecs_text *t, const char *s, size_t n) {
  size_t shown = n;
  if (n > ECS_TEXT_SHOW) { /* cut before a continuation byte, not inside */
    shown = ECS_TEXT_SHOW;
    while (shown > 0 && ((unsigned char)s[shown] & 0xC0u) == 0x80u) shown--;
  }
  ecs_text_add(t, "\"");
  for (size_t i = 0; i < shown; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      t->add(t->ud, esc, 2);
    } else if (c == '\n') {
      ecs_text_add(t, "\\n");
    } else if (c == '\r') {
      ecs_text_add(t, "\\r");
    } else if (c == '\t') {
      ecs_text_add(t, "\\t");
    } else if (c < 0x20u || c == 0x7Fu) {
      snprintf(esc, sizeof esc, "\\%03u", (unsigned)c);
      ecs_text_add(t, esc);
    } else {
      t->add(t->ud, (const char *)&s[i], 1);
    }
  }
  ecs_text_add(t, "\"");
  if (shown < n) {
    char more[48];
    snprintf(more, sizeof more, "...(%zu bytes)", n);
    ecs_text_add(t, more);
  }
}

/* Value v of a field of type ty. */
static void add_scalar(const ecs_text *t, ecs_type ty, ecs_scalar v) {
  char buf[64];
  const char *s = buf;
  switch (ecs_type_kind_inline(ty)) {
  case ECS_KIND_FLOAT: ecs_text_float(buf, sizeof buf, v.f, ty == ECS_F32, false); break;
  case ECS_KIND_INT: snprintf(buf, sizeof buf, "%" PRId64, v.i); break;
  case ECS_KIND_BOOL: s = v.i != 0 ? "true" : "false"; break;
  case ECS_KIND_ENTITY: ecs_text_entity(buf, sizeof buf, (ecs_entity)v.i); break;
  case ECS_KIND_REF: t->lua_value(t->ud, (uint32_t)v.i); return;
  default: s = "?"; break;
  }
  ecs_text_add(t, s);
}

/* "{ a, b, c }" of n doubles. */
static void add_vector(const ecs_text *t, const double *v, int n) {
  char buf[64];
  ecs_text_add(t, "{ ");
  for (int i = 0; i < n; i++) {
    if (i > 0) ecs_text_add(t, ", ");
    ecs_text_float(buf, sizeof buf, v[i], false, false);
    ecs_text_add(t, buf);
  }
  ecs_text_add(t, " }");
}

bool ecs_inspect_transform(const ecs_world *w, ecs_entity e,
                           ecs_transform_view *out) {
  const ecs_transform *t = ecs_transform_of(w);
  uint32_t i;
  if (t == NULL || (i = ecs_transform_lookup(t, e)) == ECS_NO_INSTANCE ||
      ecs_transform_get_local(t, e, &out->local) != ECS_ERR_OK)
    return false;
  out->parent = ecs_transform_parent(t, e);
  memcpy(out->world, ecs_transform_world_at(t, i) + 12, sizeof out->world);
  return true;
}

bool ecs_inspect_plugin_has(const ecs_world *w, const void *self,
                            const ecs_manager_class *cls, ecs_entity e) {
  return !ecs_component_is(cls) && cls->has != NULL &&
         self != (const void *)ecs_transform_of(w) &&
         self != (const void *)ecs_names_of(w) && cls->has(w, self, e);
}

ecs_instance ecs_inspect_row(const ecs_world *w, const void *self,
                             const ecs_manager_class *cls, ecs_entity e) {
  if (!ecs_component_is(cls)) return ECS_NO_INSTANCE;
  return ecs_component_lookup(w, (const ecs_component *)self, e);
}

/* " Name { a = 1, b = 2 }" lines of the components that have e. */
static void add_components(const ecs_world *w, ecs_entity e,
                           const ecs_text *t) {
  const ecs_manager_class *cls;
  void *self;
  for (size_t at = 0; (self = ecs_manager_at(w, at, NULL, &cls)) != NULL; at++) {
    ecs_component *c = (ecs_component *)self;
    ecs_instance i = ecs_inspect_row(w, self, cls, e);
    uint32_t nf;
    if (i == ECS_NO_INSTANCE) continue;
    ecs_text_add(t, "\n  ");
    ecs_text_add(t, ecs_component_name(c));
    nf = ecs_component_field_count(c);
    for (uint32_t k = 0; k < nf; k++) {
      const ecs_field_def *f = ecs_component_field(c, k);
      ecs_text_add(t, k == 0 ? " { " : ", ");
      ecs_text_add(t, f->name);
      ecs_text_add(t, " = ");
      add_scalar(t, f->type,
                 ecs_value_load_inline(ecs_component_column(c, k), f->type, i));
    }
    if (nf > 0) ecs_text_add(t, " }");
  }
}

void ecs_inspect_text(const ecs_world *w, ecs_entity e, const ecs_text *t) {
  char buf[64];
  const ecs_names *names = ecs_names_of(w);
  const char *name, *mname;
  const ecs_manager_class *cls;
  void *self;
  size_t len = 0;
  ecs_transform_view tv;
  if (e == ECS_NULL) {
    ecs_text_add(t, "entity(0.0) (null)");
    return;
  }
  ecs_text_entity(buf, sizeof buf, e);
  ecs_text_add(t, buf);
  if (!ecs_alive(w, e)) {
    ecs_text_add(t, " (dead)");
    return;
  }
  if (names != NULL && (name = ecs_names_get(names, e, &len)) != NULL) {
    ecs_text_add(t, " ");
    ecs_text_quoted(t, name, len);
  }
  add_components(w, e, t);
  if (ecs_inspect_transform(w, e, &tv)) {
    ecs_text_add(t, "\n  transform { position = ");
    add_vector(t, tv.local.position, 3);
    ecs_text_add(t, ", rotation = ");
    add_vector(t, tv.local.rotation, 4);
    ecs_text_add(t, ", scale = ");
    add_vector(t, tv.local.scale, 3);
    ecs_text_add(t, ", parent = ");
    ecs_text_entity(buf, sizeof buf, tv.parent);
    ecs_text_add(t, buf);
    ecs_text_add(t, ", world_position = ");
    add_vector(t, tv.world, 3);
    ecs_text_add(t, " }");
  }
  for (size_t at = 0; (self = ecs_manager_at(w, at, &mname, &cls)) != NULL; at++) {
    if (!ecs_inspect_plugin_has(w, self, cls, e)) continue;
    ecs_text_add(t, "\n  ");
    ecs_text_add(t, mname);
  }
}
