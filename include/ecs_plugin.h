/*
** ecs_plugin.h -- what a C plugin includes: the public headers of the core
** and the binding, and the table of functions through which it calls them.
**
** A plugin is a Lua C module of its own (ecs/<name>.so, loaded with
** require("ecs.<name>")). Lua opens C modules with RTLD_LOCAL, so the
** functions of ecs.core are not visible to another module's symbol lookup:
** a plugin that called ecs_count directly would fail to load with
** "undefined symbol: ecs_count". Instead ecs.core hands out one table of
** function pointers, struct ecs_api (ecs_api.h), and the macros of this
** header turn every ecs_xxx(...) call of the plugin into a call through
** that table (as NumPy's C API does for the extension modules that import
** it). A plugin links nothing of ecs: it uses the one core every other
** module of the process uses (its worlds, its class tags), never a copy.
**
**   #include "ecs_plugin.h"
**
**   int luaopen_ecs_thing(lua_State *L);
**   int luaopen_ecs_thing(lua_State *L) {
**     ECS_PLUGIN_INIT(L);  -- require("ecs.core"), fetch and check the table
**     ...                  -- from here on ecs_xxx(...) calls work
**   }
**
** Build (no library to link; the Lua symbols come from the interpreter):
**   cc -shared -fPIC -I<ecs headers> -I<lua headers> thing.c -o ecs/thing.so
** where <ecs headers> is require("ecs").include_dir (the headers installed
** next to the Lua front end; see README "C plugins").
**
** The table's address is kept in a static variable of each translation
** unit: in a plugin of several files, every file that calls the core runs
** ECS_PLUGIN_INIT(L) before its first call (from an init function that the
** luaopen_ function calls, say), or receives the table from the file that
** ran it (ecs_plugin_get_api() there, ecs_plugin_set_api(api) here).
** Static inline helpers of the headers (ecs_alive, ecs_record_map_get,
** ecs_lua_push_entity) need no table.
**
** Versions: see ecs_api.h (ECS_API_MAJOR, ECS_API_MINOR): a plugin runs
** on an ecs.core of the same major version and the same or a later minor.
*/
#ifndef ECS_PLUGIN_H
#define ECS_PLUGIN_H

#include "ecs_api.h" /* the table, and every public header */

#ifndef ECS_API_ONLY /* defined: the table alone (what ecs_api.h gives) */

/* This translation unit's table (set by ECS_PLUGIN_INIT). */
static const struct ecs_api *ecs_plugin_api;

/*
** The table this translation unit uses (NULL before ECS_PLUGIN_INIT), and
** a way to hand it to another file of the plugin without a Lua state.
*/
static inline const struct ecs_api *ecs_plugin_get_api(void) {
  return ecs_plugin_api;
}
static inline void ecs_plugin_set_api(const struct ecs_api *api) {
  ecs_plugin_api = api;
}

/*
** The table of the ecs.core of L's state, checked against the version
** (major, minor) and size of the table this plugin was compiled with
** (ecs_api.h, "Versions"); loads ecs.core (require) if it is not loaded
** yet. Raises a Lua error naming both versions if the table cannot be had
** or does not serve the plugin: another major version, or an earlier
** minor (or a smaller table) than the plugin's.
*/
static inline const struct ecs_api *ecs_plugin_open_api(lua_State *L,
                                                        int major, int minor,
                                                        size_t size) {
  const struct ecs_api *api;
  if (lua_getfield(L, LUA_REGISTRYINDEX, ECS_API_REGISTRY_KEY) !=
      LUA_TLIGHTUSERDATA) {
    lua_pop(L, 1);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "ecs.core");
    lua_call(L, 1, 0);
    lua_getfield(L, LUA_REGISTRYINDEX, ECS_API_REGISTRY_KEY);
  }
  api = (const struct ecs_api *)lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (api == NULL)
    luaL_error(L, "ecs plugin: ecs.core left no plugin interface in the "
               "registry (" ECS_API_REGISTRY_KEY ")");
  else if ((int)api->version != major)
    /* before major 11 the table had no minor: name the major alone */
    luaL_error(L, "ecs plugin: built for plugin interface version %d.%d, "
               "but ecs.core provides version %d (another major version): "
               "rebuild the plugin against this ecs.core's headers",
               major, minor, (int)api->version);
  else if ((int)api->minor < minor || (size_t)api->size < size)
    luaL_error(L, "ecs plugin: built for plugin interface version %d.%d, "
               "but ecs.core provides version %d.%d (%d bytes, the plugin "
               "needs %d): use an ecs.core at least as new as the headers "
               "the plugin was built with, or rebuild it against this "
               "ecs.core's headers", major, minor, (int)api->version,
               (int)api->minor, (int)api->size, (int)size);
  return api;
}

/* Fetch and check the table; every luaopen_ function of a plugin runs it
** before it calls the core. */
#define ECS_PLUGIN_INIT(L)                                                 \
  ((void)(ecs_plugin_api = ecs_plugin_open_api(                            \
              (L), ECS_API_MAJOR, ECS_API_MINOR, sizeof(struct ecs_api))))

/*
** Calls by name: ecs_count(w) becomes (ecs_plugin_api->ecs_count)(w). A
** macro's own name is not replaced again inside its expansion, so the
** field keeps the function's name. One macro per entry of ecs_api_list.h,
** written by tools/plugin_api.lua. (ecs.h's macro ecs_manager_notify
** expands to ecs_manager_notify_listeners; records.h's ecs_record_map_get
** and _set, like the other inline helpers, need no table.)
*/
/* The calls, generated from ecs_api_list.h by tools/plugin_api.lua: do not edit. */
/* ecs.h: worlds, managers, entities */
#define ecs_strerror (ecs_plugin_api->ecs_strerror)
#define ecs_world_new (ecs_plugin_api->ecs_world_new)
#define ecs_world_set_threads (ecs_plugin_api->ecs_world_set_threads)
#define ecs_world_threads (ecs_plugin_api->ecs_world_threads)
#define ecs_world_split_runs (ecs_plugin_api->ecs_world_split_runs)
#define ecs_world_batches (ecs_plugin_api->ecs_world_batches)
#define ecs_world_loads (ecs_plugin_api->ecs_world_loads)
#define ecs_world_free (ecs_plugin_api->ecs_world_free)
#define ecs_world_allocator (ecs_plugin_api->ecs_world_allocator)
#define ecs_world_memory (ecs_plugin_api->ecs_world_memory)
#define ecs_type_size (ecs_plugin_api->ecs_type_size)
#define ecs_type_name (ecs_plugin_api->ecs_type_name)
#define ecs_type_parse (ecs_plugin_api->ecs_type_parse)
#define ecs_write (ecs_plugin_api->ecs_write)
#define ecs_read (ecs_plugin_api->ecs_read)
#define ecs_write_u32 (ecs_plugin_api->ecs_write_u32)
#define ecs_read_u32 (ecs_plugin_api->ecs_read_u32)
#define ecs_record_valid (ecs_plugin_api->ecs_record_valid)
#define ecs_manager_register_in (ecs_plugin_api->ecs_manager_register_in)
#define ecs_manager_find_in (ecs_plugin_api->ecs_manager_find_in)
#define ecs_manager_register (ecs_plugin_api->ecs_manager_register)
#define ecs_manager_find (ecs_plugin_api->ecs_manager_find)
#define ecs_manager_count (ecs_plugin_api->ecs_manager_count)
#define ecs_manager_at (ecs_plugin_api->ecs_manager_at)
#define ecs_manager_listen (ecs_plugin_api->ecs_manager_listen)
#define ecs_manager_unlisten (ecs_plugin_api->ecs_manager_unlisten)
#define ecs_manager_notify_listeners \
  (ecs_plugin_api->ecs_manager_notify_listeners)
#define ecs_manager_stats_at (ecs_plugin_api->ecs_manager_stats_at)
#define ecs_world_gc (ecs_plugin_api->ecs_world_gc)
#define ecs_create (ecs_plugin_api->ecs_create)
#define ecs_create_n (ecs_plugin_api->ecs_create_n)
#define ecs_next_indices (ecs_plugin_api->ecs_next_indices)
#define ecs_destroy (ecs_plugin_api->ecs_destroy)
#define ecs_destroy_report (ecs_plugin_api->ecs_destroy_report)
#define ecs_destroy_n (ecs_plugin_api->ecs_destroy_n)
#define ecs_cleanup_hold (ecs_plugin_api->ecs_cleanup_hold)
#define ecs_cleanup_release (ecs_plugin_api->ecs_cleanup_release)
#define ecs_count (ecs_plugin_api->ecs_count)
#define ecs_free_count (ecs_plugin_api->ecs_free_count)
#define ecs_next_entity (ecs_plugin_api->ecs_next_entity)
#define ecs_world_check (ecs_plugin_api->ecs_world_check)
#define ecs_clock (ecs_plugin_api->ecs_clock)
/* records.h: the managers' entity -> record map and lazy gc */
#define ecs_record_map_reserve (ecs_plugin_api->ecs_record_map_reserve)
#define ecs_record_map_free (ecs_plugin_api->ecs_record_map_free)
#define ecs_record_map_each (ecs_plugin_api->ecs_record_map_each)
#define ecs_record_map_bytes (ecs_plugin_api->ecs_record_map_bytes)
#define ecs_record_gc (ecs_plugin_api->ecs_record_gc)
/* component.h: components, owned components, change ticks */
#define ecs_component_new (ecs_plugin_api->ecs_component_new)
#define ecs_component_unregister (ecs_plugin_api->ecs_component_unregister)
#define ecs_component_check_schema (ecs_plugin_api->ecs_component_check_schema)
#define ecs_component_redefine (ecs_plugin_api->ecs_component_redefine)
#define ecs_schema_entry_parse (ecs_plugin_api->ecs_schema_entry_parse)
#define ecs_component_find (ecs_plugin_api->ecs_component_find)
#define ecs_component_is (ecs_plugin_api->ecs_component_is)
#define ecs_component_name (ecs_plugin_api->ecs_component_name)
#define ecs_component_field_count (ecs_plugin_api->ecs_component_field_count)
#define ecs_component_field (ecs_plugin_api->ecs_component_field)
#define ecs_component_readonly (ecs_plugin_api->ecs_component_readonly)
#define ecs_component_pin (ecs_plugin_api->ecs_component_pin)
#define ecs_component_unpin (ecs_plugin_api->ecs_component_unpin)
#define ecs_component_pins (ecs_plugin_api->ecs_component_pins)
#define ecs_world_pins (ecs_plugin_api->ecs_world_pins)
#define ecs_component_field_index (ecs_plugin_api->ecs_component_field_index)
#define ecs_component_emplace (ecs_plugin_api->ecs_component_emplace)
#define ecs_component_reserve (ecs_plugin_api->ecs_component_reserve)
#define ecs_component_emplace_n (ecs_plugin_api->ecs_component_emplace_n)
#define ecs_component_add (ecs_plugin_api->ecs_component_add)
#define ecs_component_lookup (ecs_plugin_api->ecs_component_lookup)
#define ecs_component_lookup_n (ecs_plugin_api->ecs_component_lookup_n)
#define ecs_component_remove (ecs_plugin_api->ecs_component_remove)
#define ecs_component_size (ecs_plugin_api->ecs_component_size)
#define ecs_component_count (ecs_plugin_api->ecs_component_count)
#define ecs_component_entities (ecs_plugin_api->ecs_component_entities)
#define ecs_component_column (ecs_plugin_api->ecs_component_column)
#define ecs_component_gc (ecs_plugin_api->ecs_component_gc)
#define ecs_component_version (ecs_plugin_api->ecs_component_version)
#define ecs_component_set_cleanup (ecs_plugin_api->ecs_component_set_cleanup)
#define ecs_component_cleanup (ecs_plugin_api->ecs_component_cleanup)
#define ecs_component_write_begin (ecs_plugin_api->ecs_component_write_begin)
#define ecs_component_write_end (ecs_plugin_api->ecs_component_write_end)
#define ecs_component_keep_ref (ecs_plugin_api->ecs_component_keep_ref)
#define ecs_drain_refs (ecs_plugin_api->ecs_drain_refs)
#define ecs_dropped_refs (ecs_plugin_api->ecs_dropped_refs)
#define ecs_owned_new (ecs_plugin_api->ecs_owned_new)
#define ecs_owned_free (ecs_plugin_api->ecs_owned_free)
#define ecs_owned_reserve (ecs_plugin_api->ecs_owned_reserve)
#define ecs_owned_append (ecs_plugin_api->ecs_owned_append)
#define ecs_owned_remove_at (ecs_plugin_api->ecs_owned_remove_at)
#define ecs_owned_swap (ecs_plugin_api->ecs_owned_swap)
#define ecs_owned_permute (ecs_plugin_api->ecs_owned_permute)
#define ecs_owned_purge (ecs_plugin_api->ecs_owned_purge)
#define ecs_owned_clear (ecs_plugin_api->ecs_owned_clear)
#define ecs_owned_take_prepare (ecs_plugin_api->ecs_owned_take_prepare)
#define ecs_owned_take (ecs_plugin_api->ecs_owned_take)
#define ecs_component_owned (ecs_plugin_api->ecs_component_owned)
#define ecs_owned_find (ecs_plugin_api->ecs_owned_find)
#define ecs_owned_bytes (ecs_plugin_api->ecs_owned_bytes)
#define ecs_owned_check (ecs_plugin_api->ecs_owned_check)
#define ecs_owned_f64 (ecs_plugin_api->ecs_owned_f64)
#define ecs_owned_changed (ecs_plugin_api->ecs_owned_changed)
#define ecs_owned_owners (ecs_plugin_api->ecs_owned_owners)
#define ecs_entity_disable (ecs_plugin_api->ecs_entity_disable)
#define ecs_entity_enable (ecs_plugin_api->ecs_entity_enable)
#define ecs_entity_enabled (ecs_plugin_api->ecs_entity_enabled)
#define ecs_world_disabled (ecs_plugin_api->ecs_world_disabled)
#define ecs_world_disabled_ready (ecs_plugin_api->ecs_world_disabled_ready)
/* transform.h: the transform hierarchy */
#define ecs_transform_new (ecs_plugin_api->ecs_transform_new)
#define ecs_transform_columns (ecs_plugin_api->ecs_transform_columns)
#define ecs_transform_world (ecs_plugin_api->ecs_transform_world)
#define ecs_transform_of (ecs_plugin_api->ecs_transform_of)
#define ecs_transform_add (ecs_plugin_api->ecs_transform_add)
#define ecs_transform_remove (ecs_plugin_api->ecs_transform_remove)
#define ecs_transform_has (ecs_plugin_api->ecs_transform_has)
#define ecs_transform_lookup (ecs_plugin_api->ecs_transform_lookup)
#define ecs_transform_lookup_n (ecs_plugin_api->ecs_transform_lookup_n)
#define ecs_transform_size (ecs_plugin_api->ecs_transform_size)
#define ecs_transform_entity_at (ecs_plugin_api->ecs_transform_entity_at)
#define ecs_transform_world_at (ecs_plugin_api->ecs_transform_world_at)
#define ecs_transform_get_local (ecs_plugin_api->ecs_transform_get_local)
#define ecs_transform_get_world (ecs_plugin_api->ecs_transform_get_world)
#define ecs_transform_get_world_rotation \
  (ecs_plugin_api->ecs_transform_get_world_rotation)
#define ecs_transform_set_local (ecs_plugin_api->ecs_transform_set_local)
#define ecs_transform_set_position (ecs_plugin_api->ecs_transform_set_position)
#define ecs_transform_set_rotation (ecs_plugin_api->ecs_transform_set_rotation)
#define ecs_transform_set_scale (ecs_plugin_api->ecs_transform_set_scale)
#define ecs_transform_set_locals (ecs_plugin_api->ecs_transform_set_locals)
#define ecs_transform_set_positions \
  (ecs_plugin_api->ecs_transform_set_positions)
#define ecs_transform_set_parent (ecs_plugin_api->ecs_transform_set_parent)
#define ecs_transform_keep_world_error \
  (ecs_plugin_api->ecs_transform_keep_world_error)
#define ecs_transform_parent (ecs_plugin_api->ecs_transform_parent)
#define ecs_transform_first_child (ecs_plugin_api->ecs_transform_first_child)
#define ecs_transform_next_sibling (ecs_plugin_api->ecs_transform_next_sibling)
#define ecs_transform_destroy_tree (ecs_plugin_api->ecs_transform_destroy_tree)
#define ecs_transform_destroy_tree_report \
  (ecs_plugin_api->ecs_transform_destroy_tree_report)
#define ecs_transform_set_parent_first \
  (ecs_plugin_api->ecs_transform_set_parent_first)
#define ecs_transform_sort (ecs_plugin_api->ecs_transform_sort)
#define ecs_transform_gc (ecs_plugin_api->ecs_transform_gc)
/* names.h: entity names */
#define ecs_names_new (ecs_plugin_api->ecs_names_new)
#define ecs_names_of (ecs_plugin_api->ecs_names_of)
#define ecs_names_set (ecs_plugin_api->ecs_names_set)
#define ecs_names_get (ecs_plugin_api->ecs_names_get)
#define ecs_names_clear (ecs_plugin_api->ecs_names_clear)
#define ecs_names_find (ecs_plugin_api->ecs_names_find)
#define ecs_names_size (ecs_plugin_api->ecs_names_size)
#define ecs_names_gc (ecs_plugin_api->ecs_names_gc)
/* query.h: queries, iterators, runs, chunk cursors */
#define ecs_query_new (ecs_plugin_api->ecs_query_new)
#define ecs_query_track_changes (ecs_plugin_api->ecs_query_track_changes)
#define ecs_query_complete (ecs_plugin_api->ecs_query_complete)
#define ecs_query_tracks_changes (ecs_plugin_api->ecs_query_tracks_changes)
#define ecs_query_free (ecs_plugin_api->ecs_query_free)
#define ecs_query_with_count (ecs_plugin_api->ecs_query_with_count)
#define ecs_query_without_count (ecs_plugin_api->ecs_query_without_count)
#define ecs_query_with (ecs_plugin_api->ecs_query_with)
#define ecs_query_without (ecs_plugin_api->ecs_query_without)
#define ecs_query_resolve_field (ecs_plugin_api->ecs_query_resolve_field)
#define ecs_query_term (ecs_plugin_api->ecs_query_term)
#define ecs_query_refresh (ecs_plugin_api->ecs_query_refresh)
#define ecs_query_count (ecs_plugin_api->ecs_query_count)
#define ecs_query_require_any (ecs_plugin_api->ecs_query_require_any)
#define ecs_query_any_count (ecs_plugin_api->ecs_query_any_count)
#define ecs_query_any (ecs_plugin_api->ecs_query_any)
#define ecs_query_set_optional (ecs_plugin_api->ecs_query_set_optional)
#define ecs_query_optional (ecs_plugin_api->ecs_query_optional)
#define ecs_query_include_disabled (ecs_plugin_api->ecs_query_include_disabled)
#define ecs_query_includes_disabled \
  (ecs_plugin_api->ecs_query_includes_disabled)
#define ecs_query_matches (ecs_plugin_api->ecs_query_matches)
#define ecs_query_get_stats (ecs_plugin_api->ecs_query_get_stats)
#define ecs_query_iter_begin (ecs_plugin_api->ecs_query_iter_begin)
#define ecs_query_iter_next (ecs_plugin_api->ecs_query_iter_next)
#define ecs_query_iter_chunk (ecs_plugin_api->ecs_query_iter_chunk)
#define ecs_query_iter_current (ecs_plugin_api->ecs_query_iter_current)
#define ecs_query_iter_loaded (ecs_plugin_api->ecs_query_iter_loaded)
#define ecs_query_iter_end (ecs_plugin_api->ecs_query_iter_end)
#define ecs_query_run (ecs_plugin_api->ecs_query_run)
#define ecs_query_run_opts (ecs_plugin_api->ecs_query_run_opts)
#define ecs_query_cursor_size (ecs_plugin_api->ecs_query_cursor_size)
#define ecs_query_cursor_begin (ecs_plugin_api->ecs_query_cursor_begin)
#define ecs_query_cursor_next (ecs_plugin_api->ecs_query_cursor_next)
#define ecs_query_cursor_end (ecs_plugin_api->ecs_query_cursor_end)
/* expr.h: expression programs (query.h includes it) */
#define ecs_program_compile (ecs_plugin_api->ecs_program_compile)
#define ecs_query_program (ecs_plugin_api->ecs_query_program)
#define ecs_query_program_count (ecs_plugin_api->ecs_query_program_count)
#define ecs_program_param_count (ecs_plugin_api->ecs_program_param_count)
#define ecs_program_param_name (ecs_plugin_api->ecs_program_param_name)
#define ecs_program_param_position (ecs_plugin_api->ecs_program_param_position)
#define ecs_program_run (ecs_plugin_api->ecs_program_run)
/* value.h: typed field values */
#define ecs_type_kind (ecs_plugin_api->ecs_type_kind)
#define ecs_type_min (ecs_plugin_api->ecs_type_min)
#define ecs_type_max (ecs_plugin_api->ecs_type_max)
#define ecs_value_fits (ecs_plugin_api->ecs_value_fits)
#define ecs_value_saturate (ecs_plugin_api->ecs_value_saturate)
#define ecs_value_load (ecs_plugin_api->ecs_value_load)
#define ecs_value_store (ecs_plugin_api->ecs_value_store)
#define ecs_value_load_rows (ecs_plugin_api->ecs_value_load_rows)
#define ecs_value_store_rows (ecs_plugin_api->ecs_value_store_rows)
#define ecs_value_load_f64 (ecs_plugin_api->ecs_value_load_f64)
#define ecs_value_store_f64 (ecs_plugin_api->ecs_value_store_f64)
/* system.h: the world's systems */
#define ecs_system_add (ecs_plugin_api->ecs_system_add)
#define ecs_system_replace (ecs_plugin_api->ecs_system_replace)
#define ecs_system_remove (ecs_plugin_api->ecs_system_remove)
#define ecs_system_find (ecs_plugin_api->ecs_system_find)
#define ecs_system_count (ecs_plugin_api->ecs_system_count)
#define ecs_system_next (ecs_plugin_api->ecs_system_next)
#define ecs_system_name (ecs_plugin_api->ecs_system_name)
#define ecs_system_kind_of (ecs_plugin_api->ecs_system_kind_of)
#define ecs_system_query (ecs_plugin_api->ecs_system_query)
#define ecs_system_ud (ecs_plugin_api->ecs_system_ud)
#define ecs_system_callback (ecs_plugin_api->ecs_system_callback)
#define ecs_system_function (ecs_plugin_api->ecs_system_function)
#define ecs_system_expr (ecs_plugin_api->ecs_system_expr)
#define ecs_system_param_count (ecs_plugin_api->ecs_system_param_count)
#define ecs_system_param_name (ecs_plugin_api->ecs_system_param_name)
#define ecs_system_param_position (ecs_plugin_api->ecs_system_param_position)
#define ecs_system_enable (ecs_plugin_api->ecs_system_enable)
#define ecs_system_enabled (ecs_plugin_api->ecs_system_enabled)
#define ecs_system_get_stats (ecs_plugin_api->ecs_system_get_stats)
#define ecs_system_phase (ecs_plugin_api->ecs_system_phase)
#define ecs_system_reset_stats (ecs_plugin_api->ecs_system_reset_stats)
#define ecs_world_update (ecs_plugin_api->ecs_world_update)
#define ecs_world_update_phase (ecs_plugin_api->ecs_world_update_phase)
/* snapshot.h: saving and loading worlds */
#define ecs_world_save (ecs_plugin_api->ecs_world_save)
#define ecs_world_save_opts (ecs_plugin_api->ecs_world_save_opts)
#define ecs_world_load (ecs_plugin_api->ecs_world_load)
#define ecs_world_load_opts (ecs_plugin_api->ecs_world_load_opts)
#define ecs_snapshot_open (ecs_plugin_api->ecs_snapshot_open)
#define ecs_snapshot_frame (ecs_plugin_api->ecs_snapshot_frame)
#define ecs_snapshot_check (ecs_plugin_api->ecs_snapshot_check)
#define ecs_snapshot_manager_at (ecs_plugin_api->ecs_snapshot_manager_at)
#define ecs_snapshot_field (ecs_plugin_api->ecs_snapshot_field)
#define ecs_snapshot_field_cleanup (ecs_plugin_api->ecs_snapshot_field_cleanup)
#define ecs_snapshot_hash (ecs_plugin_api->ecs_snapshot_hash)
/* ecs_lua.h: the binding's helpers for plugins */
#define ecs_lua_is_entity (ecs_plugin_api->ecs_lua_is_entity)
#define ecs_lua_check_entity (ecs_plugin_api->ecs_lua_check_entity)
#define ecs_lua_check_world (ecs_plugin_api->ecs_lua_check_world)
#define ecs_lua_error (ecs_plugin_api->ecs_lua_error)
#define ecs_lua_enter (ecs_plugin_api->ecs_lua_enter)
#define ecs_lua_leave (ecs_plugin_api->ecs_lua_leave)
#define ecs_lua_check_text (ecs_plugin_api->ecs_lua_check_text)
#define ecs_lua_check_component (ecs_plugin_api->ecs_lua_check_component)
#define ecs_lua_plugin_class (ecs_plugin_api->ecs_lua_plugin_class)
#define ecs_lua_plugin_get (ecs_plugin_api->ecs_lua_plugin_get)
#define ecs_lua_plugin_new (ecs_plugin_api->ecs_lua_plugin_new)
#define ecs_lua_object_new (ecs_plugin_api->ecs_lua_object_new)
#define ecs_lua_plugin_detach (ecs_plugin_api->ecs_lua_plugin_detach)
#define ecs_lua_plugin_manager (ecs_plugin_api->ecs_lua_plugin_manager)
#define ecs_lua_plugin_check (ecs_plugin_api->ecs_lua_plugin_check)
#define ecs_lua_drain_refs (ecs_plugin_api->ecs_lua_drain_refs)
#define ecs_lua_plugin_factory (ecs_plugin_api->ecs_lua_plugin_factory)
#define ecs_lua_push_native (ecs_plugin_api->ecs_lua_push_native)
#define ecs_lua_native_parallel (ecs_plugin_api->ecs_lua_native_parallel)
/* End of the generated calls. */

#endif /* ECS_API_ONLY */

#endif
