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

static const struct ecs_api api = {
  .version = ECS_API_VERSION,
  .size = (uint32_t)sizeof(struct ecs_api),
  /* ecs.h: worlds, managers, entities */
  .ecs_strerror = ecs_strerror,
  .ecs_world_new = ecs_world_new,
  .ecs_world_free = ecs_world_free,
  .ecs_world_allocator = ecs_world_allocator,
  .ecs_world_memory = ecs_world_memory,
  .ecs_type_size = ecs_type_size,
  .ecs_type_name = ecs_type_name,
  .ecs_type_parse = ecs_type_parse,
  .ecs_write = ecs_write,
  .ecs_read = ecs_read,
  .ecs_write_u32 = ecs_write_u32,
  .ecs_read_u32 = ecs_read_u32,
  .ecs_record_valid = ecs_record_valid,
  .ecs_manager_register_in = ecs_manager_register_in,
  .ecs_manager_find_in = ecs_manager_find_in,
  .ecs_manager_register = ecs_manager_register,
  .ecs_manager_find = ecs_manager_find,
  .ecs_manager_count = ecs_manager_count,
  .ecs_manager_at = ecs_manager_at,
  .ecs_manager_listen = ecs_manager_listen,
  .ecs_manager_unlisten = ecs_manager_unlisten,
  .ecs_manager_notify_listeners = ecs_manager_notify_listeners,
  .ecs_manager_stats_at = ecs_manager_stats_at,
  .ecs_world_gc = ecs_world_gc,
  .ecs_create = ecs_create,
  .ecs_create_n = ecs_create_n,
  .ecs_destroy = ecs_destroy,
  .ecs_destroy_n = ecs_destroy_n,
  .ecs_destroy_report = ecs_destroy_report,
  .ecs_count = ecs_count,
  .ecs_free_count = ecs_free_count,
  .ecs_next_entity = ecs_next_entity,
  .ecs_world_check = ecs_world_check,
  .ecs_clock = ecs_clock,
  /* component.h */
  .ecs_component_new = ecs_component_new,
  .ecs_component_check_schema = ecs_component_check_schema,
  .ecs_schema_entry_parse = ecs_schema_entry_parse,
  /* appended: snapshot.h, plugin factories */
  .ecs_world_save = ecs_world_save,
  .ecs_world_save_opts = ecs_world_save_opts,
  .ecs_world_load = ecs_world_load,
  .ecs_world_load_opts = ecs_world_load_opts,
  .ecs_snapshot_open = ecs_snapshot_open,
  .ecs_snapshot_manager_at = ecs_snapshot_manager_at,
  .ecs_snapshot_field = ecs_snapshot_field,
  .ecs_snapshot_hash = ecs_snapshot_hash,
  .ecs_lua_plugin_factory = ecs_lua_plugin_factory,
  .ecs_system_replace = ecs_system_replace,
  .ecs_next_indices = ecs_next_indices,
  .ecs_component_reserve = ecs_component_reserve,
  .ecs_component_emplace_n = ecs_component_emplace_n,
  .ecs_world_update_phase = ecs_world_update_phase,
  .ecs_system_phase = ecs_system_phase,
  .ecs_component_write_begin = ecs_component_write_begin,
  .ecs_component_write_end = ecs_component_write_end,
  .ecs_world_loads = ecs_world_loads,
  .ecs_query_iter_loaded = ecs_query_iter_loaded,
  .ecs_transform_destroy_tree_report = ecs_transform_destroy_tree_report,
  .ecs_snapshot_field_cleanup = ecs_snapshot_field_cleanup,
  .ecs_component_unregister = ecs_component_unregister,
  .ecs_component_keep_ref = ecs_component_keep_ref,
  .ecs_component_redefine = ecs_component_redefine,
  .ecs_component_readonly = ecs_component_readonly,
  .ecs_transform_columns = ecs_transform_columns,
  .ecs_owned_new = ecs_owned_new,
  .ecs_owned_free = ecs_owned_free,
  .ecs_owned_reserve = ecs_owned_reserve,
  .ecs_owned_append = ecs_owned_append,
  .ecs_owned_remove_at = ecs_owned_remove_at,
  .ecs_owned_swap = ecs_owned_swap,
  .ecs_owned_permute = ecs_owned_permute,
  .ecs_owned_purge = ecs_owned_purge,
  .ecs_owned_clear = ecs_owned_clear,
  .ecs_owned_take_prepare = ecs_owned_take_prepare,
  .ecs_owned_take = ecs_owned_take,
  .ecs_owned_bytes = ecs_owned_bytes,
  .ecs_owned_check = ecs_owned_check,
  .ecs_owned_f64 = ecs_owned_f64,
  .ecs_owned_changed = ecs_owned_changed,
  .ecs_owned_owners = ecs_owned_owners,
  .ecs_owned_find = ecs_owned_find,
  .ecs_lua_plugin_manager = ecs_lua_plugin_manager,
  .ecs_world_set_threads = ecs_world_set_threads,
  .ecs_world_threads = ecs_world_threads,
  .ecs_component_owned = ecs_component_owned,
  .ecs_world_split_runs = ecs_world_split_runs,
  .ecs_component_pin = ecs_component_pin,
  .ecs_component_unpin = ecs_component_unpin,
  .ecs_component_pins = ecs_component_pins,
  .ecs_world_pins = ecs_world_pins,
  .ecs_query_cursor_size = ecs_query_cursor_size,
  .ecs_query_cursor_begin = ecs_query_cursor_begin,
  .ecs_query_cursor_next = ecs_query_cursor_next,
  .ecs_query_cursor_end = ecs_query_cursor_end,
  .ecs_query_run_opts = ecs_query_run_opts,
  .ecs_lua_native_parallel = ecs_lua_native_parallel,
  .ecs_world_batches = ecs_world_batches,
  .ecs_snapshot_frame = ecs_snapshot_frame,
  .ecs_snapshot_check = ecs_snapshot_check,
  .ecs_query_track_changes = ecs_query_track_changes,
  .ecs_query_complete = ecs_query_complete,
  .ecs_query_tracks_changes = ecs_query_tracks_changes,
  .ecs_component_set_cleanup = ecs_component_set_cleanup,
  .ecs_component_cleanup = ecs_component_cleanup,
  .ecs_cleanup_hold = ecs_cleanup_hold,
  .ecs_cleanup_release = ecs_cleanup_release,
  .ecs_component_find = ecs_component_find,
  .ecs_component_is = ecs_component_is,
  .ecs_component_name = ecs_component_name,
  .ecs_component_field_count = ecs_component_field_count,
  .ecs_component_field = ecs_component_field,
  .ecs_component_field_index = ecs_component_field_index,
  .ecs_component_emplace = ecs_component_emplace,
  .ecs_component_add = ecs_component_add,
  .ecs_component_lookup = ecs_component_lookup,
  .ecs_component_lookup_n = ecs_component_lookup_n,
  .ecs_component_remove = ecs_component_remove,
  .ecs_component_size = ecs_component_size,
  .ecs_component_count = ecs_component_count,
  .ecs_component_entities = ecs_component_entities,
  .ecs_component_column = ecs_component_column,
  .ecs_component_gc = ecs_component_gc,
  .ecs_component_version = ecs_component_version,
  .ecs_drain_refs = ecs_drain_refs,
  .ecs_dropped_refs = ecs_dropped_refs,
  /* transform.h */
  .ecs_transform_new = ecs_transform_new,
  .ecs_transform_world = ecs_transform_world,
  .ecs_transform_of = ecs_transform_of,
  .ecs_transform_add = ecs_transform_add,
  .ecs_transform_remove = ecs_transform_remove,
  .ecs_transform_has = ecs_transform_has,
  .ecs_transform_lookup = ecs_transform_lookup,
  .ecs_transform_lookup_n = ecs_transform_lookup_n,
  .ecs_transform_size = ecs_transform_size,
  .ecs_transform_entity_at = ecs_transform_entity_at,
  .ecs_transform_world_at = ecs_transform_world_at,
  .ecs_transform_get_local = ecs_transform_get_local,
  .ecs_transform_get_world = ecs_transform_get_world,
  .ecs_transform_get_world_rotation = ecs_transform_get_world_rotation,
  .ecs_transform_set_local = ecs_transform_set_local,
  .ecs_transform_set_position = ecs_transform_set_position,
  .ecs_transform_set_rotation = ecs_transform_set_rotation,
  .ecs_transform_set_scale = ecs_transform_set_scale,
  .ecs_transform_set_locals = ecs_transform_set_locals,
  .ecs_transform_set_positions = ecs_transform_set_positions,
  .ecs_transform_set_parent = ecs_transform_set_parent,
  .ecs_transform_keep_world_error = ecs_transform_keep_world_error,
  .ecs_transform_parent = ecs_transform_parent,
  .ecs_transform_first_child = ecs_transform_first_child,
  .ecs_transform_next_sibling = ecs_transform_next_sibling,
  .ecs_transform_destroy_tree = ecs_transform_destroy_tree,
  .ecs_transform_set_parent_first = ecs_transform_set_parent_first,
  .ecs_transform_sort = ecs_transform_sort,
  .ecs_transform_gc = ecs_transform_gc,
  /* names.h */
  .ecs_names_new = ecs_names_new,
  .ecs_names_of = ecs_names_of,
  .ecs_names_set = ecs_names_set,
  .ecs_names_get = ecs_names_get,
  .ecs_names_clear = ecs_names_clear,
  .ecs_names_find = ecs_names_find,
  .ecs_names_size = ecs_names_size,
  .ecs_names_gc = ecs_names_gc,
  /* query.h */
  .ecs_query_new = ecs_query_new,
  .ecs_query_free = ecs_query_free,
  .ecs_query_with_count = ecs_query_with_count,
  .ecs_query_without_count = ecs_query_without_count,
  .ecs_query_with = ecs_query_with,
  .ecs_query_without = ecs_query_without,
  .ecs_query_term = ecs_query_term,
  .ecs_query_refresh = ecs_query_refresh,
  .ecs_query_count = ecs_query_count,
  .ecs_query_matches = ecs_query_matches,
  .ecs_query_get_stats = ecs_query_get_stats,
  .ecs_query_iter_begin = ecs_query_iter_begin,
  .ecs_query_iter_next = ecs_query_iter_next,
  .ecs_query_iter_chunk = ecs_query_iter_chunk,
  .ecs_query_iter_current = ecs_query_iter_current,
  .ecs_query_iter_end = ecs_query_iter_end,
  .ecs_query_run = ecs_query_run,
  .ecs_program_compile = ecs_program_compile,
  .ecs_query_program = ecs_query_program,
  .ecs_query_program_count = ecs_query_program_count,
  .ecs_program_param_count = ecs_program_param_count,
  .ecs_program_param_name = ecs_program_param_name,
  .ecs_program_param_position = ecs_program_param_position,
  .ecs_program_run = ecs_program_run,
  /* ecs_lua.h */
  .ecs_lua_is_entity = ecs_lua_is_entity,
  .ecs_lua_check_entity = ecs_lua_check_entity,
  .ecs_lua_check_world = ecs_lua_check_world,
  .ecs_lua_error = ecs_lua_error,
  .ecs_lua_enter = ecs_lua_enter,
  .ecs_lua_leave = ecs_lua_leave,
  .ecs_lua_check_text = ecs_lua_check_text,
  .ecs_lua_check_component = ecs_lua_check_component,
  .ecs_lua_plugin_class = ecs_lua_plugin_class,
  .ecs_lua_plugin_get = ecs_lua_plugin_get,
  .ecs_lua_plugin_new = ecs_lua_plugin_new,
  .ecs_lua_object_new = ecs_lua_object_new,
  .ecs_lua_plugin_detach = ecs_lua_plugin_detach,
  .ecs_lua_plugin_check = ecs_lua_plugin_check,
  .ecs_lua_drain_refs = ecs_lua_drain_refs,
  .ecs_lua_push_native = ecs_lua_push_native,
  /* value.h */
  .ecs_type_kind = ecs_type_kind,
  .ecs_type_min = ecs_type_min,
  .ecs_type_max = ecs_type_max,
  .ecs_value_fits = ecs_value_fits,
  .ecs_value_saturate = ecs_value_saturate,
  .ecs_value_load = ecs_value_load,
  .ecs_value_store = ecs_value_store,
  .ecs_value_load_rows = ecs_value_load_rows,
  .ecs_value_store_rows = ecs_value_store_rows,
  .ecs_value_load_f64 = ecs_value_load_f64,
  .ecs_value_store_f64 = ecs_value_store_f64,
  .ecs_query_resolve_field = ecs_query_resolve_field,
  /* system.h */
  .ecs_system_add = ecs_system_add,
  .ecs_system_remove = ecs_system_remove,
  .ecs_system_find = ecs_system_find,
  .ecs_system_count = ecs_system_count,
  .ecs_system_next = ecs_system_next,
  .ecs_system_name = ecs_system_name,
  .ecs_system_kind_of = ecs_system_kind_of,
  .ecs_system_query = ecs_system_query,
  .ecs_system_ud = ecs_system_ud,
  .ecs_system_callback = ecs_system_callback,
  .ecs_system_function = ecs_system_function,
  .ecs_system_expr = ecs_system_expr,
  .ecs_system_param_count = ecs_system_param_count,
  .ecs_system_param_name = ecs_system_param_name,
  .ecs_system_param_position = ecs_system_param_position,
  .ecs_system_enable = ecs_system_enable,
  .ecs_system_enabled = ecs_system_enabled,
  .ecs_system_get_stats = ecs_system_get_stats,
  .ecs_system_reset_stats = ecs_system_reset_stats,
  .ecs_world_update = ecs_world_update,
  /* records.h */
  .ecs_record_map_reserve = ecs_record_map_reserve,
  .ecs_record_map_free = ecs_record_map_free,
  .ecs_record_map_each = ecs_record_map_each,
  .ecs_record_map_bytes = ecs_record_map_bytes,
  .ecs_record_gc = ecs_record_gc,
};

void ecsl_open_api(lua_State *L) {
  lua_pushlightuserdata(L, (void *)(uintptr_t)&api);
  lua_setfield(L, LUA_REGISTRYINDEX, ECS_API_REGISTRY_KEY);
}
