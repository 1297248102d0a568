/*
** plugin.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"
#include "ecs_api.h"

/* ----------------------------------------------------------------------
** C plugins (ecs_lua.h)
** ------------------------------------------------------------------- */


/* The plugin object of class tname at idx (NULL if it is not one). */
lhead *ecsl_test_plugin(lua_State *L, int idx, const char *tname) {
  plugin_head *ph = (plugin_head *)ecsl_test_object(L, idx, &ecsl_plugin_tag);
  if (ph == NULL || lua_rawlen(L, idx) < sizeof *ph ||
      (ph->o.tname != tname && strcmp(ph->o.tname, tname) != 0))
    return NULL;
  return &ph->o.h;
}

void ecs_lua_plugin_class(lua_State *L, const char *tname,
                          const luaL_Reg *methods) {
  if (luaL_newmetatable(L, tname)) {                     /* mt */
    ecsl_class_methods(L, methods, &ecsl_plugin_tag, tname);
    lua_pushliteral(L, "locked");
    lua_setfield(L, -2, "__metatable");
  }
  lua_pop(L, 1);
}

int ecs_lua_plugin_get(lua_State *L, int world_idx, const char *tname) {
  world_idx = lua_absindex(L, world_idx);
  ecs_lua_check_world(L, world_idx);
  if (ecsl_push_state_field(L, world_idx, &ecsl_plugins_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_pushnil(L);
    return LUA_TNIL;
  }
  lua_getfield(L, -1, tname);
  lua_remove(L, -2);
  return lua_type(L, -1);
}

void *ecs_lua_plugin_new(lua_State *L, int world_idx, const char *tname,
                         size_t size) {
  plugin_head *h;
  world_idx = lua_absindex(L, world_idx);
  ecs_lua_check_world(L, world_idx);
  h = (plugin_head *)lua_newuserdatauv(L, sizeof *h + size, 1);
  memset(h, 0, sizeof *h + size);
  ecsl_init_head(&h->o.h, &ecsl_plugin_tag, ecsl_to_lworld(L, world_idx));
  h->o.tname = tname;
  luaL_setmetatable(L, tname);
  lua_pushvalue(L, world_idx);
  lua_setiuservalue(L, -2, 1);                            /* obj */
  ecsl_need_state_field(L, world_idx, &ecsl_plugins_key);          /* obj, plugins */
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, tname);
  lua_pop(L, 1);                                          /* obj */
  return h + 1;
}

void *ecs_lua_object_new(lua_State *L, const char *tname, size_t size,
                         int nuvalue) {
  plugin_head *h = (plugin_head *)lua_newuserdatauv(L, sizeof *h + size, nuvalue);
  memset(h, 0, sizeof *h + size);
  ecsl_init_head(&h->o.h, &ecsl_plugin_tag, NULL);
  h->o.tname = tname;
  luaL_setmetatable(L, tname);
  return h + 1;
}

void ecs_lua_plugin_detach(lua_State *L, int world_idx, const char *tname) {
  world_idx = lua_absindex(L, world_idx);
  if (ecsl_push_state_field(L, world_idx, &ecsl_plugins_key) == LUA_TTABLE) {
    lua_pushnil(L);
    lua_setfield(L, -2, tname); /* an existing key: no allocation */
  }
  lua_pop(L, 1);
}

void ecs_lua_plugin_manager(lua_State *L, int idx, void *self) {
  plugin_head *ph = (plugin_head *)ecsl_test_object(L, idx, &ecsl_plugin_tag);
  if (ph != NULL && lua_rawlen(L, idx) >= sizeof *ph) ph->o.manager = self;
}

/*
** A query term: the component of the manager the plugin object at idx
** stands for (ecs_lua_plugin_manager; the class's columns hook), or NULL
** when idx holds no plugin object. A plugin object of another world, of
** a closed world, or whose manager is not a query term is an error on
** argument arg.
*/
ecs_component *ecsl_plugin_term(lua_State *L, int idx, lworld *lw, int arg) {
  plugin_head *ph = (plugin_head *)ecsl_test_object(L, idx, &ecsl_plugin_tag);
  const ecs_manager_class *cls = NULL;
  const char *name = NULL;
  ecs_world *w;
  size_t n;
  if (ph == NULL || lua_rawlen(L, idx) < sizeof *ph) return NULL;
  if (ph->o.h.lw == NULL || ph->o.manager == NULL)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s is not a query term "
                                          "(a component expected)",
                                          ph->o.tname));
  if ((w = ph->o.h.lw->w) == NULL) ecsl_closed(L);
  n = ecs_manager_count(w);
  for (size_t i = 0; i < n && cls == NULL; i++) {
    const ecs_manager_class *c;
    const char *nm;
    if (ecs_manager_at(w, i, &nm, &c) == ph->o.manager) cls = c, name = nm;
  }
  if (cls == NULL || cls->columns == NULL)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s is not a query term "
                                          "(its manager has no columns)",
                                          ph->o.tname));
  if (ph->o.h.lw != lw)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s of another world", name));
  return cls->columns(w, ph->o.manager);
}

void *ecs_lua_plugin_check(lua_State *L, int idx, const char *tname,
                           ecs_world **w) {
  lhead *h = ecsl_test_plugin(L, idx, tname);
  if (h == NULL) ecsl_object_error(L, idx, tname);
  if (h->lw != NULL && h->lw->w == NULL) ecsl_closed(L);
  if (w != NULL) *w = h->lw != NULL ? h->lw->w : NULL;
  return (plugin_head *)(void *)h + 1;
}

/* ----------------------------------------------------------------------
** The function table of plugins (ecs_plugin.h)
**
** Plugins are modules of their own, opened by Lua with RTLD_LOCAL: they
** cannot link to the functions of this module, so they call them through
** this table, which luaopen_ecs_core leaves in the registry.
** ------------------------------------------------------------------- */

/*
** Every slot by name, from the one list (ecs_api_list.h): a designated
** initializer fills the member of that name wherever the table's order
** put it, and a function whose type differs from its entry's does not
** compile.
*/
static const struct ecs_api api = {
  .version = ECS_API_MAJOR,
  .size = (uint32_t)sizeof(struct ecs_api),
  .minor = ECS_API_MINOR,
#define ECS_API_FN(since, ret, name, params) .name = name,
#include "ecs_api_list.h"
#undef ECS_API_FN
};

void ecsl_open_api(lua_State *L) {
  lua_pushlightuserdata(L, (void *)(uintptr_t)&api);
  lua_setfield(L, LUA_REGISTRYINDEX, ECS_API_REGISTRY_KEY);
}
