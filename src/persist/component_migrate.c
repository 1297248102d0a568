/*
** component_migrate.c -- redefining a live component in place (hot
** reload: component.h, ecs_component_redefine; docs/persistence.md,
** "Migration and hot reload").
**
** The manager keeps its struct (every query, system, journal and host
** object points at it), its rows, its entity map and its change stamps;
** what changes is the schema and the column block. A redefinition is made
** in two halves:
**   - prepare (may fail, changes nothing): the new schema block and the
**     new column block, filled from the old one (kept fields copied,
**     converted ones from the host's hook, new ones zero); room on the
**     drop list for the lua references the old columns let go; every
**     native system's columns mapped to the new fields; every expression
**     system over a query of the manager compiled against the new schema
**     (swapped in for the check, swapped back when one fails);
**   - commit (never fails): the old references dropped, the old blocks
**     freed, the queries' compiled programs forgotten and their lists made
**     stale, an open journal told that it lost track.
** Loops over a query of the manager may be in progress: their pinned
** rows stay right (the rows do not move), but column pointers and field
** numbers taken before are stale (the Lua binding's q:columns and q:each
** stop with an error; a C caller takes them again, as after any growth).
**
** Persist layer: a redefinition reaches every layer below (the manager's
** columns, the queries' programs, the expression and native systems, the
** journal), so it sits above them all, with the snapshot loads it shares
** its rules with; the storage layer keeps only the column helpers.
*/
#include <stdio.h>
#include <string.h>

#include "component_private.h"
#include "expr_private.h"
#include "journal_private.h"
#include "query_private.h"
#include "system_private.h"
#include "value.h"

typedef ecsi_schema schema;

/* A schema in a block of its own. */
static ecs_err schema_make(ecs_world *w, const ecs_field_def *defs,
                           uint32_t n, schema *s) {
  size_t size = ecsi_schema_size(defs, n);
  void *block = ecsi_realloc(w, NULL, 0, size);
  if (block == NULL) return ECS_ERR_NOMEM;
  memset(block, 0, size);
  ecsi_schema_fill(block, defs, n, s);
  s->block = block;
  s->size = size;
  return ECS_ERR_OK;
}

/* Exchange the schema of c with s (s then holds c's old one; its block is
** NULL when c's schema lived in c's meta block). */
static void schema_swap(ecs_component *c, schema *s) {
  schema old;
  old.block = c->schema_block;
  old.size = c->schema_size;
  old.field = c->field;
  old.elem = c->elem;
  old.cleanup = c->cleanup;
  old.lua_field = c->lua_field;
  old.prefix = c->prefix;
  old.nfields = c->nfields;
  old.nlua = c->nlua;
  old.stride = c->stride;
  c->schema_block = s->block;
  c->schema_size = s->size;
  c->field = s->field;
  c->elem = s->elem;
  c->cleanup = s->cleanup;
  c->lua_field = s->lua_field;
  c->prefix = s->prefix;
  c->nfields = s->nfields;
  c->nlua = s->nlua;
  c->stride = s->stride;
  *s = old;
}

/* Is an instance's owner alive (a record of a dead one is garbage)? */
static bool row_live(const ecs_world *w, ecs_entity e) {
  return (e & ECS_PURGED) == 0 && ecs_alive(w, e);
}

static bool has_term(const ecs_query *q, const ecs_component *c) {
  for (uint32_t t = 0; t < q->nwith; t++)
    if (q->term[t] == c) return true;
  return false;
}

static void say(char *msg, size_t msgsize, const char *fmt, const char *a,
                const char *b, const char *d) {
  if (msg != NULL && msgsize > 0) snprintf(msg, msgsize, fmt, a, b, d);
}

/* The checks that need no memory: no C caller holds a program over a
** query of c, every native system's columns survive. */
static ecs_err check_users(ecs_world *w, const ecs_component *c,
                           const uint32_t *to, char *msg, size_t msgsize) {
  for (uint32_t k = 0; k < c->nwatch; k++) {
    ecs_query *q = c->watch[k].q;
    const ecs_program *p;
    for (p = programs_of(q); p != NULL; p = p->next)
      if (!p->cached) {
        say(msg, msgsize, "a C program compiled over a query of %s "
            "(ecs_program_compile) holds its old schema%s%s", c->name, "", "");
        return ECS_ERR_LOCKED;
      }
  }
  for (uint32_t i = 0; i < w->system_count; i++) {
    const ecs_system *s = w->system[i];
    if (s->removed || s->kind != ECS_SYSTEM_NATIVE) continue;
    for (uint32_t k = 0; k < s->ncols; k++)
      if (s->cols[k].c == c && to[s->cols[k].field] == ECS_NO_FIELD) {
        say(msg, msgsize, "system '%s' reads %s.%s, a field the new schema "
            "drops", s->name, c->name, c->field[s->cols[k].field].name);
        return ECS_ERR_UNKNOWN_FIELD;
      }
  }
  return ECS_ERR_OK;
}

/* A native system's column whose field changes type to one it cannot
** read (a lua field): checked with the new schema at hand. */
static ecs_err check_native_types(ecs_world *w, const ecs_component *c,
                                  const uint32_t *to, const schema *ns,
                                  char *msg, size_t msgsize) {
  for (uint32_t i = 0; i < w->system_count; i++) {
    const ecs_system *s = w->system[i];
    if (s->removed || s->kind != ECS_SYSTEM_NATIVE) continue;
    for (uint32_t k = 0; k < s->ncols; k++)
      if (s->cols[k].c == c &&
          ns->field[to[s->cols[k].field]].type == ECS_LUA) {
        say(msg, msgsize, "system '%s' reads %s.%s, which becomes a lua "
            "field", s->name, c->name, c->field[s->cols[k].field].name);
        return ECS_ERR_LUA_FIELD;
      }
  }
  return ECS_ERR_OK;
}

/* With the new schema swapped in: compile every expression system over a
** query of c (and forget the compiled programs, which name old fields). */
static ecs_err check_expressions(ecs_world *w, const ecs_component *c,
                                 char *msg, size_t msgsize) {
  for (uint32_t i = 0; i < w->system_count; i++) {
    const ecs_system *s = w->system[i];
    char buf[200];
    ecs_err err;
    if (s->removed || s->kind != ECS_SYSTEM_EXPR || s->query == NULL ||
        !has_term(s->query, c))
      continue;
    err = ecsi_expr_check(w, s->query, s->expr, s->expr_len, buf, sizeof buf);
    if (err != ECS_ERR_OK) {
      if (err == ECS_ERR_NOMEM) return err;
      say(msg, msgsize, "system '%s': %s%s", s->name, buf, "");
      return err;
    }
  }
  return ECS_ERR_OK;
}

ecs_err ecs_component_redefine(ecs_world *w, ecs_component *c,
                               const ecs_field_def *defs, uint32_t n,
                               const uint32_t *from,
                               ecs_component_convert_fn convert, void *ud,
                               char *msg, size_t msgsize) {
  uint32_t to[ECS_MAX_FIELDS]; /* old field -> new field, or ECS_NO_FIELD */
  const ecs_entity *own = owners(c);
  size_t dropped = 0;
  schema ns;
  void *data = NULL;
  ecs_err err;
  uint32_t at;
  if (c->pins != 0) {
    say(msg, msgsize, "%s's columns are in use by a pointer loop in progress%s%s",
        c->name, "", "");
    return ECS_ERR_PINNED;
  }
  if (c->owner != NULL) { /* its schema is its owner's */
    say(msg, msgsize, "'%s' belongs to another manager%s%s", c->name, "", "");
    return ECS_ERR_INVALID;
  }
  if (msg != NULL && msgsize > 0) msg[0] = '\0';
  if ((err = ecs_component_check_schema(c->name, defs, n, &at)) != ECS_ERR_OK) {
    if (err == ECS_ERR_DUPLICATE_FIELD || err == ECS_ERR_FIELD_NAME)
      say(msg, msgsize, "%s '%s'%s", ecs_strerror(err), defs[at].name, "");
    return err;
  }
  if (n > 0 && from == NULL) return ECS_ERR_INVALID;
  for (uint32_t j = 0; j < c->nfields; j++) to[j] = ECS_NO_FIELD;
  for (uint32_t k = 0; k < n; k++) {
    if (from[k] == ECS_NO_FIELD) continue;
    if (from[k] >= c->nfields || to[from[k]] != ECS_NO_FIELD) return ECS_ERR_INVALID;
    to[from[k]] = k;
    if (defs[k].type != c->field[from[k]].type && convert == NULL)
      return ECS_ERR_INVALID;
  }
  if ((err = check_users(w, c, to, msg, msgsize)) != ECS_ERR_OK) return err;
  /* the old lua cells let go: every cell of a lua field that is dropped or
  ** changes type, dead records' included */
  for (uint32_t j = 0; j < c->nlua; j++) {
    uint32_t f = c->lua_field[j];
    if (to[f] == ECS_NO_FIELD || defs[to[f]].type != ECS_LUA)
      dropped += c->size;
  }
  if ((err = schema_make(w, defs, n, &ns)) != ECS_ERR_OK) return err;
  if ((err = check_native_types(w, c, to, &ns, msg, msgsize)) != ECS_ERR_OK)
    goto fail;
  if ((size_t)c->cap > 0 && (size_t)c->cap > SIZE_MAX / ns.stride) {
    err = ECS_ERR_NOMEM;
    goto fail;
  }
  if ((err = ecsi_component_refs_reserve(w, dropped + (size_t)c->size * ns.nlua)) !=
      ECS_ERR_OK)
    goto fail;
  if (c->cap > 0) {
    uint8_t *d;
    if ((data = ecsi_realloc(w, NULL, 0, ns.stride * c->cap)) == NULL) {
      err = ECS_ERR_NOMEM;
      goto fail;
    }
    d = (uint8_t *)data;
    memset(d, 0, ns.stride * c->cap);
    memcpy(d, own, (size_t)c->size * sizeof(ecs_entity));
    for (uint32_t k = 0; k < n; k++) {
      uint8_t *dst = d + (size_t)ns.prefix[k] * c->cap;
      uint32_t j = from[k];
      if (j == ECS_NO_FIELD) continue;
      if (defs[k].type == c->field[j].type) {
        memcpy(dst, col(c, j), (size_t)c->size * c->elem[j]);
        continue;
      }
      for (uint32_t i = 0; i < c->size; i++)
        if (row_live(w, own[i]))
          ecs_value_store(dst, defs[k].type, i, convert(ud, k, i));
    }
  }
  /* the expression systems, compiled against the new schema */
  schema_swap(c, &ns);
  err = check_expressions(w, c, msg, msgsize);
  schema_swap(c, &ns);
  if (err != ECS_ERR_OK) goto fail;
  /* commit: nothing below fails */
  ecsi_journal_forget(w, c);
  ecsi_journal_restored(w);
  for (uint32_t j = 0; j < c->nlua; j++) {
    uint32_t f = c->lua_field[j];
    const uint32_t *cell = (const uint32_t *)(const void *)col(c, f);
    if (to[f] != ECS_NO_FIELD && defs[to[f]].type == ECS_LUA) continue;
    for (uint32_t i = 0; i < c->size; i++)
      if (cell[i] != 0 && !ecsi_journal_claim_ref(w, cell[i]))
        w->ref_drop[w->ref_len++] = cell[i]; /* reserved above */
  }
  w->ref_slots -= (size_t)c->size * c->nlua;
  w->ref_slots += (size_t)c->size * ns.nlua;
  w->cleanup_fields -= c->ncleanup;
  c->ncleanup = 0;
  for (uint32_t i = 0; i < w->system_count; i++) {
    ecs_system *s = w->system[i];
    if (s->removed || s->kind != ECS_SYSTEM_NATIVE) continue;
    for (uint32_t k = 0; k < s->ncols; k++)
      if (s->cols[k].c == c) s->cols[k].field = to[s->cols[k].field];
  }
  ecsi_free(w, c->data, c->stride * c->cap);
  c->data = data;
  schema_swap(c, &ns);
  if (ns.block != NULL) ecsi_free(w, ns.block, ns.size);
  for (uint32_t k = 0; k < c->nwatch; k++)
    ecsi_expr_forget(w, c->watch[k].q);
  c->version++;
  c->schema_gen++;
  w->schema_gen++;
  ecsi_component_tell_stale(w, c);
  return ECS_ERR_OK;
fail:
  if (data != NULL) ecsi_free(w, data, ns.stride * c->cap);
  ecsi_free(w, ns.block, ns.size);
  return err;
}
