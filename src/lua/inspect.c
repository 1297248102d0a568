/*
** inspect.c -- part of the Lua binding (src/lua/binding.h): world:inspect,
** what an entity has and holds, for people reading it while debugging.
**
**   world:inspect(e)                    --> string
**   world:inspect(e, { table = true })  --> components, managers (tables)
**
** The string is one line for the entity, its handle as ecs.tostring gives
** it and its name when it has one, then one line per component it has
** (creation order, fields in schema order), then its transform, then one
** line per plugin manager that has it (registration order):
**
**   entity(5.0) "player"
**     Position { x = 1.5, y = 2 }
**     Enemy
**     transform { position = { 0, 0, 0 }, rotation = { 0, 0, 0, 1 },
**                 scale = { 1, 1, 1 }, parent = null, world_position = ... }
**     pointmass
**
** (the transform on one line). A dead or stale handle gives the one line
** "entity(5.1) (dead)", the null handle "entity(0.0) (null)"; neither is an
** error. Values: f64 and integer fields as %.14g and %d; f32 fields with
** the fewest digits (6 to 9) that read back as the same float, so 0.1 shows
** as 0.1, not as the double it widens to; NaN and infinities as nan, inf,
** -inf; bool as true/false; entity fields as handles (null for ecs.null).
** A lua field shows a short form of its value: nil, booleans and numbers as
** tostring writes them, strings quoted, tables as {} or {n entries} (at
** most 1000 counted: {1000+ entries}), entity handles as handles, a full
** userdata as userdata(<its metatable's __name>) or userdata, other values
** by their type name. Quoted text (strings, names) is a valid Lua literal
** with \", \\, \n, \r, \t and \ddd escapes, so every line stays one line;
** past 60 bytes it is cut (at a UTF-8 boundary) and the length follows:
** "abc..."...(200 bytes). A plugin's layout is its own, so a plugin
** manager shows its name only.
**
** The table form returns two tables: components by component name, each
** { field = value } as Component:get would give the values (a lua field's
** value itself; a tag: {}), and the other managers by manager name: names
** = the name, transform = { position = { x, y, z }, rotation = { x, y, z,
** w }, scale = { x, y, z }, parent = e, world_position = { x, y, z } } (the
** first three as T:add takes them), and true for each plugin manager that
** has e. Two tables because the two namespaces may share a name (a
** component called "transform"). A dead or null entity gives nil.
**
** Nothing of the caller's runs during the call, so the world cannot change
** under it: the body runs under lua_pcall with the collector stopped (no
** finalizer at an allocation; an error restarts it, then is raised again),
** and user values are read raw (rawgeti, next, the metatable's __name by
** rawget), never through a metamethod or tostring. The cost is two walks
** of the world's manager list (components, then plugins) with an O(1)
** lookup each, plus the output: nothing depends on the number of entities.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "binding.h"

#define SHOW_BYTES 60     /* quoted text longer than this is cut */
#define COUNT_ENTRIES 1000 /* a table's entries are counted up to this */
#define INSPECT "world:inspect"

/* What the body reads: the world (nothing can close it during the body),
** the entity, the refs table's stack index (0: none), the built-ins. */
typedef struct inspector {
  lua_State *L;
  ecs_world *w;
  ecs_entity e;
  int refs;
  const ecs_transform *transform; /* NULL: none */
  const ecs_names *names;         /* NULL: none */
} inspector;

/* ======================================================================
** Text
** ==================================================================== */

/* A number of a float column or a Lua float (lua_float adds ".0" where
** the text looks like an integer, as tostring does). */
static void fmt_float(char *buf, size_t size, double v, bool f32,
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

static void fmt_entity(char *buf, size_t size, ecs_entity e) {
  if (e == ECS_NULL) snprintf(buf, size, "null");
  else snprintf(buf, size, "entity(%u.%u)", (unsigned)ecs_entity_index(e),
                (unsigned)ecs_entity_generation(e));
}

/* s quoted (see the top of the file), cut past SHOW_BYTES. */
static void add_quoted(luaL_Buffer *b, const char *s, size_t n) {
  size_t shown = n;
  if (n > SHOW_BYTES) { /* cut before a continuation byte, not inside */
    shown = SHOW_BYTES;
    while (shown > 0 && ((unsigned char)s[shown] & 0xC0u) == 0x80u) shown--;
  }
  luaL_addchar(b, '"');
  for (size_t i = 0; i < shown; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    if (c == '"' || c == '\\') {
      luaL_addchar(b, '\\');
      luaL_addchar(b, (char)c);
    } else if (c == '\n') {
      luaL_addstring(b, "\\n");
    } else if (c == '\r') {
      luaL_addstring(b, "\\r");
    } else if (c == '\t') {
      luaL_addstring(b, "\\t");
    } else if (c < 0x20u || c == 0x7Fu) {
      snprintf(esc, sizeof esc, "\\%03u", (unsigned)c);
      luaL_addstring(b, esc);
    } else {
      luaL_addchar(b, (char)c);
    }
  }
  luaL_addchar(b, '"');
  if (shown < n) {
    char more[48];
    snprintf(more, sizeof more, "...(%zu bytes)", n);
    luaL_addstring(b, more);
  }
}

/*
** The short form of the value of lua field reference ref. The value is
** pushed above the buffer's box only while it is read, and popped before
** anything is added to the buffer (luaL_add* want the box on top); text
** taken from it stays valid, as the refs table still holds the value and
** the collector is stopped.
*/
static void add_lua_value(inspector *in, luaL_Buffer *b, uint32_t ref) {
  lua_State *L = in->L;
  char buf[64];
  const char *s = buf;
  size_t n = 0;
  int t;
  if (ref == 0 || in->refs == 0) {
    luaL_addstring(b, "nil");
    return;
  }
  t = lua_rawgeti(L, in->refs, (lua_Integer)ref);         /* ..., box, v */
  switch (t) {
  case LUA_TSTRING:
    s = lua_tolstring(L, -1, &n);
    lua_pop(L, 1);
    add_quoted(b, s, n);
    return;
  case LUA_TNUMBER:
    if (lua_isinteger(L, -1))
      snprintf(buf, sizeof buf, LUA_INTEGER_FMT,
               (LUAI_UACINT)lua_tointeger(L, -1));
    else
      fmt_float(buf, sizeof buf, (double)lua_tonumber(L, -1), false, true);
    break;
  case LUA_TBOOLEAN:
    s = lua_toboolean(L, -1) ? "true" : "false";
    break;
  case LUA_TTABLE: {
    size_t count = 0;
    lua_pushnil(L);                                       /* ..., v, nil */
    while (lua_next(L, -2)) {                             /* ..., v, k, x */
      lua_pop(L, 1);
      if (++count > COUNT_ENTRIES) {
        lua_pop(L, 1);                                    /* ..., v */
        break;
      }
    }
    if (count == 0) s = "{}";
    else if (count > COUNT_ENTRIES)
      snprintf(buf, sizeof buf, "{%d+ entries}", COUNT_ENTRIES);
    else snprintf(buf, sizeof buf, "{%zu %s}", count,
                  count == 1 ? "entry" : "entries");
    break;
  }
  case LUA_TLIGHTUSERDATA:
    if (ecs_lua_is_entity(L, -1)) fmt_entity(buf, sizeof buf, check_entity(L, -1));
    else s = "userdata";
    break;
  case LUA_TUSERDATA: { /* its class name, read raw from its metatable */
    s = "userdata";
    if (lua_getmetatable(L, -1)) {                        /* ..., v, mt */
      lua_pushliteral(L, "__name");
      if (lua_rawget(L, -2) == LUA_TSTRING) {             /* ..., v, mt, name */
        const char *name = lua_tolstring(L, -1, &n);
        bool plain = n > 0 && n <= SHOW_BYTES;
        for (size_t i = 0; plain && i < n; i++)
          plain = (unsigned char)name[i] >= 0x20u && name[i] != 0x7F;
        if (plain) {
          snprintf(buf, sizeof buf, "userdata(%s)", name);
          s = buf;
        }
      }
      lua_pop(L, 2);                                      /* ..., v */
    }
    break;
  }
  default:
    s = lua_typename(L, t);
    break;
  }
  lua_pop(L, 1);                                          /* ..., box */
  luaL_addstring(b, s);
}

/* Value v of a field of type t. */
static void add_scalar(inspector *in, luaL_Buffer *b, ecs_type t,
                       ecs_scalar v) {
  char buf[64];
  const char *s = buf;
  switch (ecs_type_kind_inline(t)) {
  case ECS_KIND_FLOAT: fmt_float(buf, sizeof buf, v.f, t == ECS_F32, false); break;
  case ECS_KIND_INT: snprintf(buf, sizeof buf, "%" PRId64, v.i); break;
  case ECS_KIND_BOOL: s = v.i != 0 ? "true" : "false"; break;
  case ECS_KIND_ENTITY: fmt_entity(buf, sizeof buf, (ecs_entity)v.i); break;
  case ECS_KIND_REF: add_lua_value(in, b, (uint32_t)v.i); return;
  default: s = "?"; break;
  }
  luaL_addstring(b, s);
}

/* "{ a, b, c }" of n doubles. */
static void add_vector(luaL_Buffer *b, const double *v, int n) {
  char buf[64];
  luaL_addstring(b, "{ ");
  for (int i = 0; i < n; i++) {
    if (i > 0) luaL_addstring(b, ", ");
    fmt_float(buf, sizeof buf, v[i], false, false);
    luaL_addstring(b, buf);
  }
  luaL_addstring(b, " }");
}

/* ======================================================================
** The managers that have e
** ==================================================================== */

/* e's transform: its local, parent and world position (false: none). */
typedef struct tview {
  ecs_trs local;
  ecs_entity parent;
  double world[3];
} tview;

static bool read_transform(const inspector *in, tview *out) {
  const ecs_transform *t = in->transform;
  uint32_t i;
  if (t == NULL || (i = ecs_transform_lookup(t, in->e)) == ECS_NO_INSTANCE ||
      ecs_transform_get_local(t, in->e, &out->local) != ECS_ERR_OK)
    return false;
  out->parent = ecs_transform_parent(t, in->e);
  memcpy(out->world, ecs_transform_world_at(t, i) + 12, sizeof out->world);
  return true;
}

/* Is manager self (of class cls) a plugin's that has e? (Not a component,
** nor the transform or names, which the caller shows its own way.) */
static bool plugin_has(const inspector *in, const void *self,
                       const ecs_manager_class *cls) {
  return !ecs_component_is(cls) && cls->has != NULL &&
         self != (const void *)in->transform && self != (const void *)in->names &&
         cls->has(in->w, self, in->e);
}

/* The instance of e in manager self if it is a component that has e. */
static ecs_instance component_row(const inspector *in, void *self,
                                  const ecs_manager_class *cls) {
  if (!ecs_component_is(cls)) return ECS_NO_INSTANCE;
  return ecs_component_lookup(in->w, (const ecs_component *)self, in->e);
}

static ecs_scalar field_value(ecs_component *c, uint32_t k, ecs_instance i) {
  return ecs_value_load_inline(ecs_component_column(c, k),
                               ecs_component_field(c, k)->type, i);
}

/* ======================================================================
** The two forms
** ==================================================================== */

static int inspect_string(inspector *in) {
  lua_State *L = in->L;
  luaL_Buffer b;
  char buf[64];
  const ecs_names *names = in->names;
  const char *name = NULL;
  size_t len = 0, at = 0;
  const char *mname;
  const ecs_manager_class *cls;
  void *self;
  tview tv;
  if (in->e == ECS_NULL) {
    lua_pushliteral(L, "entity(0.0) (null)");
    return 1;
  }
  luaL_buffinit(L, &b);
  fmt_entity(buf, sizeof buf, in->e);
  luaL_addstring(&b, buf);
  if (!ecs_alive(in->w, in->e)) {
    luaL_addstring(&b, " (dead)");
    luaL_pushresult(&b);
    return 1;
  }
  if (names != NULL && (name = ecs_names_get(names, in->e, &len)) != NULL) {
    luaL_addchar(&b, ' ');
    add_quoted(&b, name, len);
  }
  for (at = 0; (self = ecs_manager_at(in->w, at, &mname, &cls)) != NULL; at++) {
    ecs_component *c = (ecs_component *)self;
    ecs_instance i = component_row(in, self, cls);
    uint32_t nf;
    if (i == ECS_NO_INSTANCE) continue;
    luaL_addstring(&b, "\n  ");
    luaL_addstring(&b, ecs_component_name(c));
    nf = ecs_component_field_count(c);
    for (uint32_t k = 0; k < nf; k++) {
      const ecs_field_def *f = ecs_component_field(c, k);
      luaL_addstring(&b, k == 0 ? " { " : ", ");
      luaL_addstring(&b, f->name);
      luaL_addstring(&b, " = ");
      add_scalar(in, &b, f->type, field_value(c, k, i));
    }
    if (nf > 0) luaL_addstring(&b, " }");
  }
  if (read_transform(in, &tv)) {
    luaL_addstring(&b, "\n  transform { position = ");
    add_vector(&b, tv.local.position, 3);
    luaL_addstring(&b, ", rotation = ");
    add_vector(&b, tv.local.rotation, 4);
    luaL_addstring(&b, ", scale = ");
    add_vector(&b, tv.local.scale, 3);
    luaL_addstring(&b, ", parent = ");
    fmt_entity(buf, sizeof buf, tv.parent);
    luaL_addstring(&b, buf);
    luaL_addstring(&b, ", world_position = ");
    add_vector(&b, tv.world, 3);
    luaL_addstring(&b, " }");
  }
  for (at = 0; (self = ecs_manager_at(in->w, at, &mname, &cls)) != NULL; at++) {
    if (!plugin_has(in, self, cls)) continue;
    luaL_addstring(&b, "\n  ");
    luaL_addstring(&b, mname);
  }
  luaL_pushresult(&b);
  return 1;
}

/* Set t[key] = { v[0], ..., v[n-1] } for the table t on top. */
static void set_vector(lua_State *L, const char *key, const double *v, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushnumber(L, (lua_Number)v[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, key);
}

static int inspect_table(inspector *in) {
  lua_State *L = in->L;
  const ecs_names *names = in->names;
  const char *name, *mname;
  const ecs_manager_class *cls;
  void *self;
  size_t len, at;
  tview tv;
  if (!ecs_alive(in->w, in->e)) {
    lua_pushnil(L);
    return 1;
  }
  lua_newtable(L);                                        /* comps */
  for (at = 0; (self = ecs_manager_at(in->w, at, &mname, &cls)) != NULL; at++) {
    ecs_component *c = (ecs_component *)self;
    ecs_instance i = component_row(in, self, cls);
    uint32_t nf;
    if (i == ECS_NO_INSTANCE) continue;
    nf = ecs_component_field_count(c);
    lua_createtable(L, 0, (int)nf);                       /* comps, value */
    for (uint32_t k = 0; k < nf; k++) {
      const ecs_field_def *f = ecs_component_field(c, k);
      ecsl_push_scalar(L, f->type, field_value(c, k, i), in->refs);
      lua_setfield(L, -2, f->name);
    }
    lua_setfield(L, -2, ecs_component_name(c));           /* comps */
  }
  lua_newtable(L);                                        /* comps, mgrs */
  if (names != NULL && (name = ecs_names_get(names, in->e, &len)) != NULL) {
    lua_pushlstring(L, name, len);
    lua_setfield(L, -2, "names");
  }
  if (read_transform(in, &tv)) {
    lua_createtable(L, 0, 5);                             /* ..., mgrs, tr */
    set_vector(L, "position", tv.local.position, 3);
    set_vector(L, "rotation", tv.local.rotation, 4);
    set_vector(L, "scale", tv.local.scale, 3);
    push_entity(L, tv.parent);
    lua_setfield(L, -2, "parent");
    set_vector(L, "world_position", tv.world, 3);
    lua_setfield(L, -2, "transform");                     /* comps, mgrs */
  }
  for (at = 0; (self = ecs_manager_at(in->w, at, &mname, &cls)) != NULL; at++) {
    if (!plugin_has(in, self, cls)) continue;
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, mname);
  }
  return 2;
}

/* The body, run protected with the collector stopped: world, e, as_table. */
static int inspect_body(lua_State *L) {
  inspector in;
  bool as_table = lua_toboolean(L, 3);
  in.L = L;
  in.w = ecsl_self(L, lworld)->w;
  if (in.w == NULL) return ecsl_closed(L); /* (the caller checked: a guard) */
  in.e = check_entity(L, 2);
  in.refs = 0;
  in.transform = ecs_transform_of(in.w);
  in.names = ecs_names_of(in.w);
  lua_settop(L, 3);
  if (ecsl_push_state_field(L, 1, &ecsl_refs_key) == LUA_TTABLE) in.refs = 4;
  return as_table ? inspect_table(&in) : inspect_string(&in);
}

/*
** world:inspect(e [, { table = true }]) -> string | components, managers
** (the top of the file says what, and why the collector is stopped).
*/
int ecsl_l_world_inspect(lua_State *L) {
  int base, running, status;
  bool as_table = false;
  check_world(L, 1);
  check_entity(L, 2);
  if (!lua_isnoneornil(L, 3)) {
    static const char *const known[] = {"table", NULL};
    luaL_checktype(L, 3, LUA_TTABLE);
    ecsl_check_keys(L, 3, 3, INSPECT, known, false);
    lua_pushliteral(L, "table");
    if (lua_rawget(L, 3) != LUA_TNIL && !lua_isboolean(L, -1))
      return luaL_error(L, INSPECT ": bad option 'table' (boolean expected, "
                        "got %s)", luaL_typename(L, -1));
    as_table = lua_toboolean(L, -1);
    /* making the key may have run a finalizer that closed the world */
    check_world(L, 1);
  }
  lua_settop(L, 2);
  base = lua_gettop(L);
  running = lua_gc(L, LUA_GCISRUNNING);
  if (running > 0) lua_gc(L, LUA_GCSTOP);
  /* nothing from here to the call allocates */
  lua_pushcfunction(L, inspect_body);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushboolean(L, as_table);
  status = lua_pcall(L, 3, LUA_MULTRET, 0);
  if (running > 0) lua_gc(L, LUA_GCRESTART);
  if (status != LUA_OK) return lua_error(L);
  return lua_gettop(L) - base;
}
