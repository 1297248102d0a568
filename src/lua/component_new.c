/*
** component_new.c -- part of the Lua binding (src/lua/binding.h):
** world:component(name, fields) -- the field list checked and parsed into
** a schema, the core manager made, its Lua object with its own metatable --
** and world:components(). The methods of the objects made here are in
** component.c.
*/
#include "binding.h"
#include "schema_text.h"

/* Push a new metatable for a manager named name. */
static void push_comp_metatable(lua_State *L, const char *name) {
  int base, index;
  lua_createtable(L, 0, 8);                              /* mt */
  luaL_getmetatable(L, ECS_LUA_COMPONENT);               /* mt, base */
  base = lua_gettop(L);
  lua_createtable(L, 0, 16);                             /* mt, base, index */
  index = lua_gettop(L);
  lua_getfield(L, base, "__methods");
  lua_pushnil(L);
  while (lua_next(L, -2)) {                 /* copy the methods */
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, index);
  }
  lua_setfield(L, base - 1, "__methods");  /* mt.__methods = methods */
  lua_pushstring(L, name);
  lua_setfield(L, index, "name");
  lua_setfield(L, base - 1, "__index");
  lua_getfield(L, base, "__tostring");
  lua_setfield(L, base - 1, "__tostring");
  lua_pop(L, 1);                                         /* mt */
  lua_pushliteral(L, ECS_LUA_COMPONENT);
  lua_setfield(L, -2, "__name");
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
}

/*
** The arguments of world:component after the name: the schema (a list,
** or nil: a tag) and the options (migrate). @return whether to migrate;
** *n receives the number of schema entries.
*/
static int read_component_args(lua_State *L, size_t *n) {
  int migrate = 0;
  *n = 0;
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    ecsl_check_keys(L, 3, 3, "world:component", NULL, true);
    *n = (size_t)lua_rawlen(L, 3);
  }
  if (!lua_isnoneornil(L, 4)) { /* options: migrate */
    static const char *const known[] = {"migrate", NULL};
    luaL_checktype(L, 4, LUA_TTABLE);
    ecsl_check_keys(L, 4, 4, "world:component", known, false);
    lua_pushliteral(L, "migrate");
    lua_rawget(L, 4); /* raw: no metamethod runs before the redefinition */
    migrate = lua_toboolean(L, -1);
    if (lua_type(L, -1) == LUA_TTABLE) {
      static const char *const mkeys[] = {"rename", NULL};
      ecsl_check_keys(L, -1, 4, "world:component", mkeys, false);
    } else if (!lua_isnil(L, -1) && !lua_isboolean(L, -1)) {
      luaL_error(L, "world:component: bad option 'migrate' (true or a "
                 "table expected, got %s)", luaL_typename(L, -1));
    }
    lua_pop(L, 1);
  }
  lua_settop(L, 4);
  return migrate;
}

/*
** Schema entry k (the list at 3) into defs[k] and cleanup[k] (the text
** read by the core: ecs_schema_entry_cleanup, ecs_schema_entry_parse);
** its field name into the list of names at 6 and the table name -> k at 7.
*/
static void read_entry(lua_State *L, size_t k, ecs_field_def *defs,
                       uint8_t *cleanup) {
  size_t slen, flen, at;
  const char *s, *bang;
  ecs_cleanup policy;
  ecs_type type;
  ecs_err err;
  if (lua_rawgeti(L, 3, (lua_Integer)k + 1) != LUA_TSTRING)
    luaL_error(L, "world:component: schema entry %d must be a string, got %s",
               (int)k + 1, luaL_typename(L, -1));
  s = lua_tolstring(L, -1, &slen);
  if ((at = ecsl_zero_at(s, slen)) != 0)
    luaL_error(L, "world:component: schema entry %d contains an embedded "
               "zero at position %I", (int)k + 1, (lua_Integer)at);
  if (ecs_schema_entry_cleanup(s, &slen, &policy, &bang) != ECS_ERR_OK)
    luaL_error(L, "world:component: unknown cleanup '%s' in '%s' (clear, "
               "remove or destroy expected)", bang, s);
  cleanup[k] = (uint8_t)policy;
  err = ecs_schema_entry_parse(s, slen, &flen, &type);
  if (err == ECS_ERR_FIELD_NAME)
    luaL_error(L, "world:component: %s in '%s'", ecs_strerror(err), s);
  if (err != ECS_ERR_OK)                   /* FIELD_TYPE */
    luaL_error(L, "world:component: field '%s' has %s '%s'",
               lua_pushlstring(L, s, flen), ecs_strerror(err),
               lua_pushlstring(L, s + flen + 1, slen - flen - 1));
  if (cleanup[k] != ECS_CLEANUP_NONE && type != ECS_ENTITY)
    luaL_error(L, "world:component: field '%s' has a cleanup ('%s') but is "
               "not an entity field", lua_pushlstring(L, s, flen), bang);
  lua_pushlstring(L, s, flen);                            /* entry, fname */
  lua_pushvalue(L, -1);
  lua_pushinteger(L, (lua_Integer)k);
  lua_rawset(L, 7);                                       /* names[f] = k */
  defs[k].name = lua_tostring(L, -1);    /* kept alive by table 6 */
  defs[k].type = type;
  lua_rawseti(L, 6, (lua_Integer)k + 1);
  lua_pop(L, 1);
}

/*
** The Lua object of a new manager named name with the schema defs[0 ..
** n), pushed (at 8), with its metatable, user values (the world, the
** names at 7) and its entry in the world's registry (pushed, at 9).
** @return its slot in the registry.
*/
static lua_Integer new_component_object(lua_State *L, const char *name,
                                        const ecs_field_def *defs, size_t n) {
  lcomponent *lc;
  lua_Integer slot;
  lc = (lcomponent *)lua_newuserdatauv(L, sizeof *lc + ECS_MAX_FIELDS, 2); /* 8: manager */
  lc->lw = ecsl_to_lworld(L, 1);
  ecsl_init_head(&lc->h, &ecsl_comp_tag, lc->lw);
  lc->c = NULL;
  lc->nfields = (uint32_t)n;
  lc->nlua = 0;
  for (size_t k = 0; k < n; k++) {
    lc->nlua += defs[k].type == ECS_LUA;
    lc->type[k] = (uint8_t)defs[k].type;
  }
  push_comp_metatable(L, name);
  lua_setmetatable(L, 8);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, 8, 1);
  lua_pushvalue(L, 7);
  lua_setiuservalue(L, 8, 2);
  if (lc->nlua > 0) {
    ecsl_need_state_field(L, 1, &ecsl_refs_key);
    lua_pop(L, 1);
  }
  ecsl_need_state_field(L, 1, &ecsl_components_key);                /* 9: registry */
  slot = (lua_Integer)lua_rawlen(L, 9) + 1;
  lua_pushvalue(L, 8);
  lua_rawseti(L, 9, slot);    /* the last thing that may raise */
  return slot;
}

/*
** world:component(name [, schema]) -> manager
** schema is a list of "field:type" strings (a bare "field" is f64); nil or
** absent makes a tag. Everything that can raise (parsing, the Lua objects,
** the registry entries) happens before the core manager is created; if
** the core then fails, the registry entries are removed (no allocation).
*/
int ecsl_l_world_component(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  size_t len, n;
  const char *name;
  ecs_field_def *defs;
  uint8_t cleanup[ECS_MAX_FIELDS];
  lcomponent *lc;
  lua_Integer slot;
  uint32_t at;
  ecs_err err;
  int migrate;
  name = check_text(L, 2, &len, "world:component");
  /* "Position.x" must stay unambiguous in queries: the core's rule */
  if (ecs_component_check_schema(name, NULL, 0, NULL) != ECS_ERR_OK)
    return luaL_argerror(L, 2, ecs_strerror(ECS_ERR_COMPONENT_NAME));
  migrate = read_component_args(L, &n);
  if (n > ECS_MAX_FIELDS)
    return ecsl_error(L, "world", "component", ECS_ERR_TOO_MANY_FIELDS, NULL,
                      0);
  if (ecs_component_find(w, name) != NULL && !migrate)
    return ecs_lua_error(L, "world:component", ECS_ERR_EXISTS);
  defs = (ecs_field_def *)lua_newuserdatauv(L, (n + 1) * sizeof *defs, 0); /* 5 */
  lua_createtable(L, (int)n, 0);                          /* 6: field names */
  lua_createtable(L, 0, (int)n);                          /* 7: name -> k */
  for (size_t k = 0; k < n; k++) read_entry(L, k, defs, cleanup);
  err = ecs_component_check_schema(name, defs, (uint32_t)n, &at);
  if (err != ECS_ERR_OK)                   /* DUPLICATE_FIELD */
    return luaL_error(L, "world:component: %s '%s'", ecs_strerror(err),
                      defs[at].name);
  if (migrate && ecs_component_find(w, name) != NULL) {
    lua_pushvalue(L, 2);
    return ecsl_component_redefine(L, lua_gettop(L), defs, (uint32_t)n,
                                   cleanup, 7, 4);
  }
  slot = new_component_object(L, name, defs, n);
  lc = (lcomponent *)lua_touserdata(L, 8);
  /* the allocations above may have run finalizers: the world may be gone */
  if ((w = lc->lw->w) == NULL) return ecsl_closed(L);
  err = ecs_component_new(w, name, defs, (uint32_t)n, &lc->c);
  if (err != ECS_ERR_OK) {
    lc->c = NULL;
    lua_pushnil(L);
    lua_rawseti(L, 9, slot);  /* an existing key: no allocation */
    return ecs_lua_error(L, "world:component", err);
  }
  for (size_t k = 0; k < n; k++) /* checked above: cannot fail */
    if (cleanup[k] != ECS_CLEANUP_NONE)
      (void)ecs_component_set_cleanup(w, lc->c, (uint32_t)k,
                                      (ecs_cleanup)cleanup[k]);
  lua_pushvalue(L, 8);
  ecsl_charge(L, lc->lw);
  return 1;
}

/* world:components() -> list of component managers, in creation order */
int ecsl_l_world_components(lua_State *L) {
  lua_Integer n;
  check_world(L, 1);
  if (ecsl_push_state_field(L, 1, &ecsl_components_key) != LUA_TTABLE) {
    lua_newtable(L);
    return 1;
  }
  n = (lua_Integer)lua_rawlen(L, -1);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, -2, k);
    lua_rawseti(L, -2, k);
  }
  return 1;
}

