/*
** ecs_api_list.h -- the one list of the functions of the plugin table,
** struct ecs_api (ecs_api.h): every public function a C plugin may call,
** declared once here, grouped by the public header that declares it, in
** that header's order.
**
** Each entry is
**   ECS_API_FN(since, return type, name, (parameters))
** where since is the minor version of the table that added the function
** (ECS_API_MINOR; 0 for those the major version started with).
** Whoever includes this file defines ECS_API_FN first and gets one
** expansion per entry: ecs_api.h makes the members of struct ecs_api of
** it, ordered by since and then by this list; src/lua/plugin.c fills the
** core's table with it; test/plugins/plugin_table_host.c checks every slot
** against the core's function of that name; tools/plugin_api.lua writes
** ecs_plugin.h's call macros from it (a macro cannot define macros).
** Hence no include guard.
**
** Adding a function (the table's rule is in ecs_api.h, "Versions"):
**   1. declare it in its public header, as usual;
**   2. raise ECS_API_MINOR below by one and add the function's entry to
**      its header's group with since = that new ECS_API_MINOR (entries
**      added together share one since);
**   3. run `lua5.4 tools/plugin_api.lua` (rewrites ecs_plugin.h's calls;
**      spec/plugins/plugin_build_spec.lua fails while it is stale);
**   4. if the minor before the new one has no layout record yet in
**      test/plugins/plugin_table_host.c (frozen[]), add the line that test prints.
** The entries of earlier minors never change: their order is the layout
** compiled plugins rely on. Removing a function, changing its signature
** or its meaning, or moving an entry is a new major version: raise
** ECS_API_MAJOR, set ECS_API_MINOR and every since to 0.
*/
#ifndef ECS_API_FN
#error "define ECS_API_FN(since, ret, name, params) before including ecs_api_list.h"
#endif

/*
** The version of the table this list makes, MAJOR.MINOR (ecs_api.h,
** "Versions"); kept here, by the entries it counts, so that adding a
** function is an edit of this file alone. (Each inclusion defines them
** again, with the same text, which C allows.)
*/
#define ECS_API_MAJOR 11
#define ECS_API_MINOR 1

/* ecs.h: worlds, managers, entities */
ECS_API_FN(0, const char *, ecs_strerror, (ecs_err err))
ECS_API_FN(0, ecs_world *, ecs_world_new, (ecs_alloc_fn alloc, void *ud))
ECS_API_FN(0, ecs_err, ecs_world_set_threads, (ecs_world *w, uint32_t threads))
ECS_API_FN(0, uint32_t, ecs_world_threads, (const ecs_world *w))
ECS_API_FN(0, uint64_t, ecs_world_split_runs, (const ecs_world *w))
ECS_API_FN(0, uint64_t, ecs_world_batches, (const ecs_world *w))
ECS_API_FN(0, uint64_t, ecs_world_loads, (const ecs_world *w))
ECS_API_FN(0, void, ecs_world_free, (ecs_world *w))
ECS_API_FN(0, ecs_alloc_fn, ecs_world_allocator, (const ecs_world *w, void **ud))
ECS_API_FN(0, size_t, ecs_world_memory, (const ecs_world *w, uint64_t *allocated))
ECS_API_FN(0, size_t, ecs_type_size, (ecs_type t))
ECS_API_FN(0, const char *, ecs_type_name, (ecs_type t))
ECS_API_FN(0, int, ecs_type_parse, (const char *s, size_t len))
ECS_API_FN(0, ecs_err, ecs_write, (ecs_writer *out, const void *data, size_t size))
ECS_API_FN(0, ecs_err, ecs_read, (ecs_reader *in, void *data, size_t size))
ECS_API_FN(0, ecs_err, ecs_write_u32, (ecs_writer *out, uint32_t v))
ECS_API_FN(0, ecs_err, ecs_read_u32, (ecs_reader *in, uint32_t *v))
ECS_API_FN(0, bool, ecs_record_valid, (const ecs_world *w, ecs_entity e))
ECS_API_FN(0, ecs_err, ecs_manager_register_in, (ecs_world *w, ecs_namespace ns, const char *name,
           const ecs_manager_class *cls, void *self))
ECS_API_FN(0, void *, ecs_manager_find_in, (const ecs_world *w, ecs_namespace ns, const char *name,
           const ecs_manager_class **cls))
ECS_API_FN(0, ecs_err, ecs_manager_register, (ecs_world *w, const char *name,
           const ecs_manager_class *cls, void *self))
ECS_API_FN(0, void *, ecs_manager_find, (const ecs_world *w, const char *name,
           const ecs_manager_class **cls))
ECS_API_FN(0, size_t, ecs_manager_count, (const ecs_world *w))
ECS_API_FN(0, void *, ecs_manager_at, (const ecs_world *w, size_t i, const char **name,
           const ecs_manager_class **cls))
ECS_API_FN(0, ecs_err, ecs_manager_listen, (ecs_world *w, const void *manager, unsigned events,
           ecs_listener_fn fn, void *ud))
ECS_API_FN(0, bool, ecs_manager_unlisten, (ecs_world *w, const void *manager, ecs_listener_fn fn,
           void *ud))
ECS_API_FN(0, ecs_err, ecs_manager_notify_listeners, (ecs_world *w, void *self, ecs_entity e,
           ecs_event event))
ECS_API_FN(0, void, ecs_manager_stats_at, (const ecs_world *w, size_t i, ecs_manager_stats *out))
ECS_API_FN(0, size_t, ecs_world_gc, (ecs_world *w, size_t budget))
ECS_API_FN(0, ecs_err, ecs_create, (ecs_world *w, ecs_entity *out))
ECS_API_FN(0, ecs_err, ecs_create_n, (ecs_world *w, ecs_entity *out, size_t n))
ECS_API_FN(0, ecs_err, ecs_next_indices, (const ecs_world *w, uint32_t *out, size_t n))
ECS_API_FN(0, bool, ecs_destroy, (ecs_world *w, ecs_entity e))
ECS_API_FN(0, ecs_err, ecs_destroy_report, (ecs_world *w, ecs_entity e, bool *destroyed))
ECS_API_FN(0, size_t, ecs_destroy_n, (ecs_world *w, const ecs_entity *es, size_t n))
ECS_API_FN(0, void, ecs_cleanup_hold, (ecs_world *w))
ECS_API_FN(0, ecs_err, ecs_cleanup_release, (ecs_world *w))
ECS_API_FN(0, size_t, ecs_count, (const ecs_world *w))
ECS_API_FN(0, size_t, ecs_free_count, (const ecs_world *w))
ECS_API_FN(0, bool, ecs_next_entity, (const ecs_world *w, uint32_t *cursor, ecs_entity *out))
ECS_API_FN(0, const char *, ecs_world_check, (const ecs_world *w))
ECS_API_FN(0, double, ecs_clock, (void))

/* records.h: the managers' entity -> record map and lazy gc */
ECS_API_FN(0, ecs_err, ecs_record_map_reserve, (ecs_world *w, ecs_record_map *m, uint32_t index))
ECS_API_FN(0, void, ecs_record_map_free, (ecs_world *w, ecs_record_map *m))
ECS_API_FN(0, const char *, ecs_record_map_each, (const ecs_record_map *m,
           const char *(*fn)(const void *ud, uint32_t index, uint32_t v), const void *ud))
ECS_API_FN(0, size_t, ecs_record_map_bytes, (const ecs_record_map *m))
ECS_API_FN(0, size_t, ecs_record_gc, (ecs_world *w, void *self, const ecs_record_ops *ops,
           const uint32_t *size, uint32_t *cursor, size_t budget))

/* component.h: components, owned components, change ticks */
ECS_API_FN(0, ecs_err, ecs_component_new, (ecs_world *w, const char *name,
           const ecs_field_def *fields, uint32_t nfields, ecs_component **out))
ECS_API_FN(0, ecs_err, ecs_component_unregister, (ecs_world *w, ecs_component *c))
ECS_API_FN(0, ecs_err, ecs_component_check_schema, (const char *name, const ecs_field_def *fields,
           uint32_t nfields, uint32_t *at))
ECS_API_FN(0, ecs_err, ecs_component_redefine, (ecs_world *w, ecs_component *c,
           const ecs_field_def *defs, uint32_t n, const uint32_t *from,
           ecs_component_convert_fn convert, void *ud, char *msg, size_t msgsize))
ECS_API_FN(0, ecs_err, ecs_schema_entry_parse, (const char *s, size_t len, size_t *name_len,
           ecs_type *type))
ECS_API_FN(0, ecs_component *, ecs_component_find, (const ecs_world *w, const char *name))
ECS_API_FN(0, bool, ecs_component_is, (const ecs_manager_class *cls))
ECS_API_FN(0, const char *, ecs_component_name, (const ecs_component *c))
ECS_API_FN(0, uint32_t, ecs_component_field_count, (const ecs_component *c))
ECS_API_FN(0, const ecs_field_def *, ecs_component_field, (const ecs_component *c, uint32_t i))
ECS_API_FN(0, bool, ecs_component_readonly, (const ecs_component *c, uint32_t field))
ECS_API_FN(0, ecs_err, ecs_component_pin, (ecs_world *w, ecs_component *c))
ECS_API_FN(0, void, ecs_component_unpin, (ecs_world *w, ecs_component *c))
ECS_API_FN(0, uint32_t, ecs_component_pins, (const ecs_component *c))
ECS_API_FN(0, uint32_t, ecs_world_pins, (const ecs_world *w))
ECS_API_FN(0, int, ecs_component_field_index, (const ecs_component *c, const char *name,
           size_t len))
ECS_API_FN(0, ecs_err, ecs_component_emplace, (ecs_world *w, ecs_component *c, ecs_entity e,
           ecs_instance *out, bool *existed))
ECS_API_FN(0, ecs_err, ecs_component_reserve, (ecs_world *w, ecs_component *c,
           const uint32_t *index, size_t n))
ECS_API_FN(0, void, ecs_component_emplace_n, (ecs_world *w, ecs_component *c, const ecs_entity *es,
           size_t n, ecs_instance *rows))
ECS_API_FN(0, ecs_err, ecs_component_add, (ecs_world *w, ecs_component *c, ecs_entity e,
           ecs_instance *out, bool *existed))
ECS_API_FN(0, ecs_instance, ecs_component_lookup, (const ecs_world *w, const ecs_component *c,
           ecs_entity e))
ECS_API_FN(0, void, ecs_component_lookup_n, (const ecs_world *w, const ecs_component *c,
           const ecs_entity *in, ecs_instance *out, size_t n))
ECS_API_FN(0, ecs_err, ecs_component_remove, (ecs_world *w, ecs_component *c, ecs_entity e,
           bool *removed))
ECS_API_FN(0, uint32_t, ecs_component_size, (const ecs_component *c))
ECS_API_FN(0, size_t, ecs_component_count, (const ecs_world *w, const ecs_component *c))
ECS_API_FN(0, const ecs_entity *, ecs_component_entities, (const ecs_component *c))
ECS_API_FN(0, void *, ecs_component_column, (ecs_component *c, uint32_t field))
ECS_API_FN(0, size_t, ecs_component_gc, (ecs_world *w, ecs_component *c, size_t budget))
ECS_API_FN(0, uint64_t, ecs_component_version, (const ecs_component *c))
ECS_API_FN(0, ecs_err, ecs_component_set_cleanup, (ecs_world *w, ecs_component *c, uint32_t field,
           ecs_cleanup policy))
ECS_API_FN(0, ecs_cleanup, ecs_component_cleanup, (const ecs_component *c, uint32_t field))
ECS_API_FN(0, void, ecs_component_write_begin, (ecs_world *w, ecs_component *c,
           const ecs_instance *rows, ecs_instance first, size_t n))
ECS_API_FN(0, void, ecs_component_write_end, (ecs_world *w, ecs_component *c,
           const ecs_instance *rows, ecs_instance first, size_t n))
ECS_API_FN(0, bool, ecs_component_keep_ref, (ecs_world *w, uint32_t ref))
ECS_API_FN(0, size_t, ecs_drain_refs, (ecs_world *w, uint32_t *buf, size_t max))
ECS_API_FN(0, size_t, ecs_dropped_refs, (const ecs_world *w))
ECS_API_FN(0, ecs_err, ecs_owned_new, (ecs_world *w, const char *name, const ecs_field_def *fields,
           uint32_t nfields, uint64_t readonly, const ecs_owner *owner, void *ud,
           ecs_component **out))
ECS_API_FN(0, void, ecs_owned_free, (ecs_world *w, ecs_component *c))
ECS_API_FN(0, ecs_err, ecs_owned_reserve, (ecs_world *w, ecs_component *c, uint32_t need,
           uint32_t index))
ECS_API_FN(0, uint32_t, ecs_owned_append, (ecs_world *w, ecs_component *c, ecs_entity e))
ECS_API_FN(0, void, ecs_owned_remove_at, (ecs_world *w, ecs_component *c, uint32_t i))
ECS_API_FN(0, void, ecs_owned_swap, (ecs_world *w, ecs_component *c, uint32_t a, uint32_t b))
ECS_API_FN(0, bool, ecs_owned_permute, (ecs_world *w, ecs_component *c, const ecs_entity *order))
ECS_API_FN(0, void, ecs_owned_purge, (ecs_component *c, uint32_t index))
ECS_API_FN(0, void, ecs_owned_clear, (ecs_world *w, ecs_component *c))
ECS_API_FN(0, ecs_err, ecs_owned_take_prepare, (ecs_world *w, ecs_component *c,
           const ecs_component *from))
ECS_API_FN(0, void, ecs_owned_take, (ecs_world *w, ecs_component *c, ecs_component *from))
ECS_API_FN(0, bool, ecs_component_owned, (const ecs_component *c))
ECS_API_FN(0, uint32_t, ecs_owned_find, (const ecs_component *c, uint32_t index))
ECS_API_FN(0, size_t, ecs_owned_bytes, (const ecs_world *w, const ecs_component *c))
ECS_API_FN(0, const char *, ecs_owned_check, (const ecs_world *w, const ecs_component *c,
           const ecs_entity *rows, uint32_t n))
ECS_API_FN(0, double *, ecs_owned_f64, (ecs_component *c, uint32_t k))
ECS_API_FN(0, uint32_t *, ecs_owned_changed, (const ecs_world *w, ecs_component *c, uint32_t *now))
ECS_API_FN(0, ecs_entity *, ecs_owned_owners, (ecs_component *c))
ECS_API_FN(1, ecs_err, ecs_entity_disable, (ecs_world *w, ecs_entity e))
ECS_API_FN(1, ecs_err, ecs_entity_enable, (ecs_world *w, ecs_entity e))
ECS_API_FN(1, bool, ecs_entity_enabled, (const ecs_world *w, ecs_entity e))
ECS_API_FN(1, ecs_component *, ecs_world_disabled, (const ecs_world *w))
ECS_API_FN(1, ecs_err, ecs_world_disabled_ready, (ecs_world *w))

/* transform.h: the transform hierarchy */
ECS_API_FN(0, ecs_err, ecs_transform_new, (ecs_world *w, ecs_transform **out))
ECS_API_FN(0, ecs_component *, ecs_transform_columns, (const ecs_transform *t))
ECS_API_FN(0, ecs_world *, ecs_transform_world, (const ecs_transform *t))
ECS_API_FN(0, ecs_transform *, ecs_transform_of, (const ecs_world *w))
ECS_API_FN(0, ecs_err, ecs_transform_add, (ecs_transform *t, ecs_entity e, const ecs_trs *local))
ECS_API_FN(0, ecs_err, ecs_transform_remove, (ecs_transform *t, ecs_entity e))
ECS_API_FN(0, bool, ecs_transform_has, (const ecs_transform *t, ecs_entity e))
ECS_API_FN(0, ecs_instance, ecs_transform_lookup, (const ecs_transform *t, ecs_entity e))
ECS_API_FN(0, void, ecs_transform_lookup_n, (const ecs_transform *t, const ecs_entity *es,
           ecs_instance *out, size_t n))
ECS_API_FN(0, uint32_t, ecs_transform_size, (const ecs_transform *t))
ECS_API_FN(0, ecs_entity, ecs_transform_entity_at, (const ecs_transform *t, uint32_t i))
ECS_API_FN(0, const double *, ecs_transform_world_at, (const ecs_transform *t, uint32_t i))
ECS_API_FN(0, ecs_err, ecs_transform_get_local, (const ecs_transform *t, ecs_entity e,
           ecs_trs *out))
ECS_API_FN(0, ecs_err, ecs_transform_get_world, (const ecs_transform *t, ecs_entity e,
           double out[16]))
ECS_API_FN(0, ecs_err, ecs_transform_get_world_rotation, (const ecs_transform *t, ecs_entity e,
           double out[4]))
ECS_API_FN(0, ecs_err, ecs_transform_set_local, (ecs_transform *t, ecs_entity e,
           const ecs_trs *local))
ECS_API_FN(0, ecs_err, ecs_transform_set_position, (ecs_transform *t, ecs_entity e, double x,
           double y, double z))
ECS_API_FN(0, ecs_err, ecs_transform_set_rotation, (ecs_transform *t, ecs_entity e, double x,
           double y, double z, double w))
ECS_API_FN(0, ecs_err, ecs_transform_set_scale, (ecs_transform *t, ecs_entity e, double x, double y,
           double z))
ECS_API_FN(0, ecs_err, ecs_transform_set_locals, (ecs_transform *t, const uint32_t *inst,
           const ecs_trs *locals, size_t n))
ECS_API_FN(0, ecs_err, ecs_transform_set_positions, (ecs_transform *t, const uint32_t *inst,
           const double *xyz, size_t n))
ECS_API_FN(0, ecs_err, ecs_transform_set_parent, (ecs_transform *t, ecs_entity child,
           ecs_entity parent, bool keep_world))
ECS_API_FN(0, const char *, ecs_transform_keep_world_error, (const ecs_transform *t,
           ecs_entity child, ecs_entity parent))
ECS_API_FN(0, ecs_entity, ecs_transform_parent, (const ecs_transform *t, ecs_entity e))
ECS_API_FN(0, ecs_entity, ecs_transform_first_child, (const ecs_transform *t, ecs_entity e))
ECS_API_FN(0, ecs_entity, ecs_transform_next_sibling, (const ecs_transform *t, ecs_entity e))
ECS_API_FN(0, size_t, ecs_transform_destroy_tree, (ecs_transform *t, ecs_entity e))
ECS_API_FN(0, ecs_err, ecs_transform_destroy_tree_report, (ecs_transform *t, ecs_entity e,
           size_t *destroyed))
ECS_API_FN(0, void, ecs_transform_set_parent_first, (ecs_transform *t, bool on))
ECS_API_FN(0, ecs_err, ecs_transform_sort, (ecs_transform *t))
ECS_API_FN(0, size_t, ecs_transform_gc, (ecs_transform *t, size_t budget))

/* names.h: entity names */
ECS_API_FN(0, ecs_err, ecs_names_new, (ecs_world *w, ecs_names **out))
ECS_API_FN(0, ecs_names *, ecs_names_of, (const ecs_world *w))
ECS_API_FN(0, ecs_err, ecs_names_set, (ecs_names *m, ecs_entity e, const char *s, size_t len))
ECS_API_FN(0, const char *, ecs_names_get, (const ecs_names *m, ecs_entity e, size_t *len))
ECS_API_FN(0, ecs_err, ecs_names_clear, (ecs_names *m, ecs_entity e, bool *cleared))
ECS_API_FN(0, ecs_entity, ecs_names_find, (const ecs_names *m, const char *s, size_t len))
ECS_API_FN(0, size_t, ecs_names_size, (const ecs_names *m))
ECS_API_FN(0, size_t, ecs_names_gc, (ecs_names *m, size_t budget))

/* query.h: queries, iterators, runs, chunk cursors */
ECS_API_FN(0, ecs_err, ecs_query_new, (ecs_world *w, ecs_component *const *with, uint32_t nwith,
           ecs_component *const *without, uint32_t nwithout, ecs_query **out))
ECS_API_FN(0, ecs_err, ecs_query_track_changes, (ecs_world *w, ecs_query *q,
           ecs_component *const *changed, uint32_t nchanged, ecs_component *const *added,
           uint32_t nadded))
ECS_API_FN(0, void, ecs_query_complete, (ecs_world *w, ecs_query *q))
ECS_API_FN(0, bool, ecs_query_tracks_changes, (const ecs_query *q))
ECS_API_FN(0, void, ecs_query_free, (ecs_world *w, ecs_query *q))
ECS_API_FN(0, uint32_t, ecs_query_with_count, (const ecs_query *q))
ECS_API_FN(0, uint32_t, ecs_query_without_count, (const ecs_query *q))
ECS_API_FN(0, ecs_component *, ecs_query_with, (const ecs_query *q, uint32_t k))
ECS_API_FN(0, ecs_component *, ecs_query_without, (const ecs_query *q, uint32_t k))
ECS_API_FN(0, ecs_err, ecs_query_resolve_field, (const ecs_query *q, const char *comp, size_t clen,
           const char *field, size_t flen, uint32_t *term, uint32_t *fieldno, char *msg,
           size_t msg_size))
ECS_API_FN(0, int, ecs_query_term, (const ecs_query *q, const ecs_component *c))
ECS_API_FN(0, ecs_err, ecs_query_refresh, (ecs_world *w, ecs_query *q))
ECS_API_FN(0, ecs_err, ecs_query_count, (ecs_world *w, ecs_query *q, size_t *out))
ECS_API_FN(1, ecs_err, ecs_query_require_any, (ecs_world *w, ecs_query *q, ecs_component *const *any, uint32_t n))
ECS_API_FN(1, uint32_t, ecs_query_any_count, (const ecs_query *q))
ECS_API_FN(1, ecs_component *, ecs_query_any, (const ecs_query *q, uint32_t k))
ECS_API_FN(1, ecs_err, ecs_query_set_optional, (ecs_query *q, uint32_t mask))
ECS_API_FN(1, uint32_t, ecs_query_optional, (const ecs_query *q))
ECS_API_FN(1, void, ecs_query_include_disabled, (ecs_query *q, bool on))
ECS_API_FN(1, bool, ecs_query_includes_disabled, (const ecs_query *q))
ECS_API_FN(0, bool, ecs_query_matches, (const ecs_world *w, const ecs_query *q, ecs_entity e))
ECS_API_FN(0, void, ecs_query_get_stats, (const ecs_query *q, ecs_query_stats *out))
ECS_API_FN(0, ecs_err, ecs_query_iter_begin, (ecs_world *w, ecs_query *q, ecs_query_iter *it))
ECS_API_FN(0, bool, ecs_query_iter_next, (const ecs_world *w, ecs_query_iter *it, ecs_entity *e))
ECS_API_FN(0, uint32_t, ecs_query_iter_chunk, (const ecs_world *w, ecs_query_iter *it, uint32_t max,
           ecs_entity *ents, uint32_t *rows))
ECS_API_FN(0, bool, ecs_query_iter_current, (const ecs_world *w, const ecs_query_iter *it))
ECS_API_FN(0, bool, ecs_query_iter_loaded, (const ecs_world *w, const ecs_query_iter *it))
ECS_API_FN(0, void, ecs_query_iter_end, (ecs_world *w, ecs_query_iter *it))
ECS_API_FN(0, ecs_err, ecs_query_run, (ecs_world *w, ecs_query *q, const ecs_column_ref *cols,
           uint32_t ncols, double dt, ecs_system_fn fn, void *ud, size_t *processed))
ECS_API_FN(0, ecs_err, ecs_query_run_opts, (ecs_world *w, ecs_query *q, const ecs_column_ref *cols,
           uint32_t ncols, double dt, ecs_system_fn fn, void *ud, const ecs_run_opts *opts,
           size_t *processed))
ECS_API_FN(0, size_t, ecs_query_cursor_size, (void))
ECS_API_FN(0, ecs_err, ecs_query_cursor_begin, (ecs_world *w, ecs_query *q,
           const ecs_column_ref *cols, uint32_t ncols, ecs_query_cursor *cur))
ECS_API_FN(0, ecs_err, ecs_query_cursor_next, (ecs_world *w, ecs_query_cursor *cur, void **ptr,
           const ecs_entity **entities, uint32_t *count))
ECS_API_FN(0, void, ecs_query_cursor_end, (ecs_world *w, ecs_query_cursor *cur, bool finish))

/* expr.h: expression programs (query.h includes it) */
ECS_API_FN(0, ecs_err, ecs_program_compile, (ecs_world *w, ecs_query *q, const char *src,
           size_t len, ecs_program **out, char *msg, size_t msgsize))
ECS_API_FN(0, ecs_err, ecs_query_program, (ecs_world *w, ecs_query *q, const char *src, size_t len,
           ecs_program **out, char *msg, size_t msgsize))
ECS_API_FN(0, uint32_t, ecs_query_program_count, (ecs_query *q))
ECS_API_FN(0, uint32_t, ecs_program_param_count, (const ecs_program *p))
ECS_API_FN(0, const char *, ecs_program_param_name, (const ecs_program *p, uint32_t i))
ECS_API_FN(0, uint32_t, ecs_program_param_position, (const ecs_program *p, uint32_t i))
ECS_API_FN(0, ecs_err, ecs_program_run, (ecs_world *w, ecs_program *p, const double *params,
           size_t *processed))

/* value.h: typed field values */
ECS_API_FN(0, ecs_kind, ecs_type_kind, (ecs_type t))
ECS_API_FN(0, int64_t, ecs_type_min, (ecs_type t))
ECS_API_FN(0, int64_t, ecs_type_max, (ecs_type t))
ECS_API_FN(0, bool, ecs_value_fits, (ecs_type t, int64_t v))
ECS_API_FN(0, int64_t, ecs_value_saturate, (ecs_type t, double v))
ECS_API_FN(0, ecs_scalar, ecs_value_load, (const void *col, ecs_type t, uint32_t row))
ECS_API_FN(0, void, ecs_value_store, (void *col, ecs_type t, uint32_t row, ecs_scalar v))
ECS_API_FN(0, void, ecs_value_load_rows, (ecs_scalar *dst, const void *col, ecs_type t,
           const uint32_t *rows, uint32_t n, bool contiguous))
ECS_API_FN(0, void, ecs_value_store_rows, (void *col, ecs_type t, const uint32_t *rows,
           const ecs_scalar *src, uint32_t n, bool contiguous))
ECS_API_FN(0, void, ecs_value_load_f64, (double *dst, const void *col, ecs_type t,
           const uint32_t *rows, uint32_t n, bool contiguous))
ECS_API_FN(0, void, ecs_value_store_f64, (void *col, ecs_type t, const uint32_t *rows,
           const double *src, uint32_t n, bool contiguous))

/* system.h: the world's systems */
ECS_API_FN(0, ecs_err, ecs_system_add, (ecs_world *w, const ecs_system_desc *desc, ecs_system **out,
           char *msg, size_t msgsize))
ECS_API_FN(0, ecs_err, ecs_system_replace, (ecs_world *w, const ecs_system_desc *desc,
           ecs_system **out, char *msg, size_t msgsize))
ECS_API_FN(0, bool, ecs_system_remove, (ecs_world *w, const char *name))
ECS_API_FN(0, ecs_system *, ecs_system_find, (const ecs_world *w, const char *name))
ECS_API_FN(0, size_t, ecs_system_count, (const ecs_world *w))
ECS_API_FN(0, bool, ecs_system_next, (const ecs_world *w, uint32_t *cursor, ecs_system **out))
ECS_API_FN(0, const char *, ecs_system_name, (const ecs_system *s))
ECS_API_FN(0, ecs_system_kind, ecs_system_kind_of, (const ecs_system *s))
ECS_API_FN(0, ecs_query *, ecs_system_query, (const ecs_system *s))
ECS_API_FN(0, void *, ecs_system_ud, (const ecs_system *s))
ECS_API_FN(0, ecs_system_call_fn, ecs_system_callback, (const ecs_system *s))
ECS_API_FN(0, ecs_system_fn, ecs_system_function, (const ecs_system *s))
ECS_API_FN(0, const char *, ecs_system_expr, (const ecs_system *s, size_t *len))
ECS_API_FN(0, uint32_t, ecs_system_param_count, (const ecs_system *s))
ECS_API_FN(0, const char *, ecs_system_param_name, (const ecs_system *s, uint32_t k))
ECS_API_FN(0, uint32_t, ecs_system_param_position, (const ecs_system *s, uint32_t k))
ECS_API_FN(0, void, ecs_system_enable, (ecs_system *s, bool enabled))
ECS_API_FN(0, bool, ecs_system_enabled, (const ecs_system *s))
ECS_API_FN(0, void, ecs_system_get_stats, (const ecs_system *s, ecs_system_stats *out))
ECS_API_FN(0, const char *, ecs_system_phase, (const ecs_system *s))
ECS_API_FN(0, void, ecs_system_reset_stats, (ecs_world *w))
ECS_API_FN(0, ecs_err, ecs_world_update, (ecs_world *w, double dt, void *ctx, ecs_system **failed))
ECS_API_FN(0, ecs_err, ecs_world_update_phase, (ecs_world *w, const char *phase, double dt,
           void *ctx, ecs_system **failed))

/* snapshot.h: saving and loading worlds */
ECS_API_FN(0, ecs_err, ecs_world_save, (const ecs_world *w, ecs_writer *out))
ECS_API_FN(0, ecs_err, ecs_world_save_opts, (const ecs_world *w, ecs_writer *out,
           const ecs_snapshot_opts *opts))
ECS_API_FN(0, ecs_err, ecs_world_load, (ecs_world *w, ecs_reader *in))
ECS_API_FN(0, ecs_err, ecs_world_load_opts, (ecs_world *w, ecs_reader *in,
           const ecs_snapshot_opts *opts, uint32_t *failed))
ECS_API_FN(0, ecs_err, ecs_snapshot_open, (ecs_snapshot *s, const void *data, size_t size))
ECS_API_FN(0, ecs_err, ecs_snapshot_frame, (ecs_snapshot *s, const void *data, size_t size))
ECS_API_FN(0, ecs_err, ecs_snapshot_check, (ecs_snapshot *s))
ECS_API_FN(0, ecs_err, ecs_snapshot_manager_at, (const ecs_snapshot *s, uint32_t i,
           ecs_snapshot_manager *out))
ECS_API_FN(0, void, ecs_snapshot_field, (const ecs_snapshot_manager *m, uint32_t k, ecs_type *type,
           const char **name, size_t *name_len))
ECS_API_FN(0, unsigned, ecs_snapshot_field_cleanup, (const ecs_snapshot_manager *m, uint32_t k))
ECS_API_FN(0, uint64_t, ecs_snapshot_hash, (const void *data, size_t size))

/* ecs_lua.h: the binding's helpers for plugins */
ECS_API_FN(0, int, ecs_lua_is_entity, (lua_State *L, int idx))
ECS_API_FN(0, ecs_entity, ecs_lua_check_entity, (lua_State *L, int idx))
ECS_API_FN(0, ecs_world *, ecs_lua_check_world, (lua_State *L, int idx))
ECS_API_FN(0, int, ecs_lua_error, (lua_State *L, const char *fname, ecs_err err))
ECS_API_FN(0, void *, ecs_lua_enter, (lua_State *L, int idx))
ECS_API_FN(0, void, ecs_lua_leave, (void *token))
ECS_API_FN(0, const char *, ecs_lua_check_text, (lua_State *L, int idx, size_t *len,
           const char *fn))
ECS_API_FN(0, struct ecs_component *, ecs_lua_check_component, (lua_State *L, int idx,
           ecs_world **w))
ECS_API_FN(0, void, ecs_lua_plugin_class, (lua_State *L, const char *tname,
           const luaL_Reg *methods))
ECS_API_FN(0, int, ecs_lua_plugin_get, (lua_State *L, int world_idx, const char *tname))
ECS_API_FN(0, void *, ecs_lua_plugin_new, (lua_State *L, int world_idx, const char *tname,
           size_t size))
ECS_API_FN(0, void *, ecs_lua_object_new, (lua_State *L, const char *tname, size_t size,
           int nuvalue))
ECS_API_FN(0, void, ecs_lua_plugin_detach, (lua_State *L, int world_idx, const char *tname))
ECS_API_FN(0, void, ecs_lua_plugin_manager, (lua_State *L, int idx, void *self))
ECS_API_FN(0, void *, ecs_lua_plugin_check, (lua_State *L, int idx, const char *tname,
           ecs_world **w))
ECS_API_FN(0, void, ecs_lua_drain_refs, (lua_State *L, int world_idx))
ECS_API_FN(0, void, ecs_lua_plugin_factory, (lua_State *L, const char *manager,
           lua_CFunction new_fn))
ECS_API_FN(0, void, ecs_lua_push_native, (lua_State *L, const char *name, ecs_system_fn fn,
           void *ud, const char *const *specs, int nspecs))
ECS_API_FN(0, void, ecs_lua_native_parallel, (lua_State *L, int idx))
