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
** rawget), never through a metamethod or tostring.
**
** The walk and the text are the core's (src/managers/inspect.c: the
** formatting of every value but a lua field's, the lines, their order,
** the cost); here are the sink into a luaL_Buffer, the short form of a
** Lua value, and the table form.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "binding.h"
#include "inspect.h"

#define COUNT_ENTRIES 1000 /* a table's entries are counted up to this */
#define INSPECT "world:inspect"

/* What the body reads: the world (nothing can close it during the body),
** the entity, the refs table's stack index (0: none), the string
** "__name" (the text form reads it without making it). */
typedef struct inspector {
  lua_State *L;
  ecs_world *w;
  ecs_entity e;
  int refs, name_key;
  luaL_Buffer *b; /* the string form's */
} inspector;

static void text_add(void *ud, const char *s, size_t n) {
  luaL_addlstring(((inspector *)ud)->b, s, n);
}

/* The name of the full userdata's class at -1, read raw (NULL: none fit
** to show). */
static const char *class_name(lua_State *L, int name_key, size_t *n) {
  const char *name = NULL;
  if (lua_getmetatable(L, -1)) {                          /* ..., v, mt */
    lua_pushvalue(L, name_key);
    if (lua_rawget(L, -2) == LUA_TSTRING) {               /* ..., v, mt, name */
      bool plain;
      name = lua_tolstring(L, -1, n);
      plain = *n > 0 && *n <= ECS_TEXT_SHOW;
      for (size_t i = 0; plain && i < *n; i++)
        plain = (unsigned char)name[i] >= 0x20u && name[i] != 0x7F;
      if (!plain) name = NULL;
    }
    lua_pop(L, 2);                                        /* ..., v */
  }
  return name;
}

/*
** The short form of the value of lua field reference ref (the text's
** lua_value). The value is pushed above the buffer's box only while it is
** read, and popped before anything is added to the buffer (luaL_add* want
** the box on top); text taken from it stays valid, as the refs table
** still holds the value and the collector is stopped.
*/
static void text_lua_value(void *ud, uint32_t ref) {
  inspector *in = (inspector *)ud;
  lua_State *L = in->L;
  ecs_text text = {text_add, text_lua_value, ud};
  char buf[64];
  const char *s = buf;
  size_t n = 0;
  int t;
  if (ref == 0 || in->refs == 0) {
    luaL_addstring(in->b, "nil");
    return;
  }
  t = lua_rawgeti(L, in->refs, (lua_Integer)ref);         /* ..., box, v */
  switch (t) {
  case LUA_TSTRING:
    s = lua_tolstring(L, -1, &n);
    lua_pop(L, 1);
    ecs_text_quoted(&text, s, n);
    return;
  case LUA_TNUMBER:
    if (lua_isinteger(L, -1))
      snprintf(buf, sizeof buf, LUA_INTEGER_FMT,
               (LUAI_UACINT)lua_tointeger(L, -1));
    else
      ecs_text_float(buf, sizeof buf, (double)lua_tonumber(L, -1), false, true);
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
    if (ecs_lua_is_entity(L, -1)) ecs_text_entity(buf, sizeof buf, check_entity(L, -1));
    else s = "userdata";
    break;
  case LUA_TUSERDATA: { /* its class name, read raw from its metatable */
    const char *name = class_name(L, in->name_key, &n);
    s = "userdata";
    if (name != NULL) {
      snprintf(buf, sizeof buf, "userdata(%s)", name);
      s = buf;
    }
    break;
  }
  default:
    s = lua_typename(L, t);
    break;
  }
  lua_pop(L, 1);                                          /* ..., box */
  luaL_addstring(in->b, s);
}

static int inspect_string(inspector *in) {
  luaL_Buffer b;
  ecs_text text = {text_add, text_lua_value, in};
  in->b = &b;
  luaL_buffinit(in->L, &b);
  ecs_inspect_text(in->w, in->e, &text);
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
  const ecs_names *names = ecs_names_of(in->w);
  const char *name, *mname;
  const ecs_manager_class *cls;
  void *self;
  size_t len, at;
  ecs_transform_view tv;
  if (!ecs_alive(in->w, in->e)) {
    lua_pushnil(L);
    return 1;
  }
  lua_newtable(L);                                        /* comps */
  for (at = 0; (self = ecs_manager_at(in->w, at, &mname, &cls)) != NULL; at++) {
    ecs_component *c = (ecs_component *)self;
    ecs_instance i = ecs_inspect_row(in->w, self, cls, in->e);
    uint32_t nf;
    if (i == ECS_NO_INSTANCE) continue;
    nf = ecs_component_field_count(c);
    lua_createtable(L, 0, (int)nf);                       /* comps, value */
    for (uint32_t k = 0; k < nf; k++) {
      const ecs_field_def *f = ecs_component_field(c, k);
      ecsl_push_scalar(L, f->type,
                       ecs_value_load_inline(ecs_component_column(c, k),
                                             f->type, i),
                       in->refs);
      lua_setfield(L, -2, f->name);
    }
    lua_setfield(L, -2, ecs_component_name(c));           /* comps */
  }
  lua_newtable(L);                                        /* comps, mgrs */
  if (names != NULL && (name = ecs_names_get(names, in->e, &len)) != NULL) {
    lua_pushlstring(L, name, len);
    lua_setfield(L, -2, "names");
  }
  if (ecs_inspect_transform(in->w, in->e, &tv)) {
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
    if (!ecs_inspect_plugin_has(in->w, self, cls, in->e)) continue;
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
  lua_settop(L, 3);
  if (ecsl_push_state_field(L, 1, &ecsl_refs_key) == LUA_TTABLE) in.refs = 4;
  lua_pushliteral(L, "__name");
  in.name_key = lua_gettop(L);
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
