/*
** ecs_plugin.h -- what a C plugin includes: the public headers of the core
** and the binding, and the table of functions through which it calls them.
**
** A plugin is a Lua C module of its own (ecs/<name>.so, loaded with
** require("ecs.<name>")). Lua opens C modules with RTLD_LOCAL, so the
** functions of ecs.core are not visible to another module's symbol lookup:
** a plugin that called ecs_count directly would fail to load with
** "undefined symbol: ecs_count". Instead ecs.core hands out one table of
** function pointers, struct ecs_api, and the macros at the end of this
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
** Versions: ECS_API_VERSION changes when a function of the table changes
** its meaning or signature or leaves it; functions added later are
** appended (the table's size grows), so an ecs.core newer than the headers
** a plugin was built with still serves it. ECS_PLUGIN_INIT raises a Lua
** error at require time when the versions differ or the core's table is
** smaller than the plugin's: rebuild the plugin against the headers of the
** ecs.core it runs with.
*/
#ifndef ECS_PLUGIN_H
#define ECS_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lua.h"
#include "lauxlib.h"
#include "ecs_compat.h" /* one API on Lua 5.1-5.4 and LuaJIT */

#include "ecs.h"
#include "records.h"
#include "component.h"
#include "transform.h"
#include "names.h"
#include "query.h"
#include "value.h"
#include "system.h"
#include "ecs_lua.h"
#include "snapshot.h"

#define ECS_API_VERSION 9 /* 9: ecs_snapshot grew checked */

/* The registry field where ecs.core leaves the table (a light userdata). */
#define ECS_API_REGISTRY_KEY "ecs.core.api"

/*
** Every function of the public headers, named as they are: version and
** size first, then one pointer per function, header by header in the
** order of their declarations. ecs.core fills it in (src/lua/plugin.c);
** spec/plugin_build_spec.lua checks that no public function is missing.
*/
struct ecs_api {
  uint32_t version; /* ECS_API_VERSION of the core */
  uint32_t size;    /* sizeof(struct ecs_api) of the core */
  /* ecs.h: worlds, managers, entities */
  const char *(*ecs_strerror)(ecs_err err);
  ecs_world *(*ecs_world_new)(ecs_alloc_fn alloc, void *ud);
  void (*ecs_world_free)(ecs_world *w);
  ecs_alloc_fn (*ecs_world_allocator)(const ecs_world *w, void **ud);
  size_t (*ecs_world_memory)(const ecs_world *w, uint64_t *allocated);
  size_t (*ecs_type_size)(ecs_type t);
  const char *(*ecs_type_name)(ecs_type t);
  int (*ecs_type_parse)(const char *s, size_t len);
  ecs_err (*ecs_write)(ecs_writer *out, const void *data, size_t size);
  ecs_err (*ecs_read)(ecs_reader *in, void *data, size_t size);
  ecs_err (*ecs_write_u32)(ecs_writer *out, uint32_t v);
  ecs_err (*ecs_read_u32)(ecs_reader *in, uint32_t *v);
  bool (*ecs_record_valid)(const ecs_world *w, ecs_entity e);
  ecs_err (*ecs_manager_register_in)(ecs_world *w, ecs_namespace ns,
                                     const char *name,
                                     const ecs_manager_class *cls, void *self);
  void *(*ecs_manager_find_in)(const ecs_world *w, ecs_namespace ns,
                               const char *name,
                               const ecs_manager_class **cls);
  ecs_err (*ecs_manager_register)(ecs_world *w, const char *name,
                                  const ecs_manager_class *cls, void *self);
  void *(*ecs_manager_find)(const ecs_world *w, const char *name,
                            const ecs_manager_class **cls);
  size_t (*ecs_manager_count)(const ecs_world *w);
  void *(*ecs_manager_at)(const ecs_world *w, size_t i, const char **name,
                          const ecs_manager_class **cls);
  ecs_err (*ecs_manager_listen)(ecs_world *w, const void *manager,
                                unsigned events, ecs_listener_fn fn,
                                void *ud);
  bool (*ecs_manager_unlisten)(ecs_world *w, const void *manager,
                               ecs_listener_fn fn, void *ud);
  ecs_err (*ecs_manager_notify_listeners)(ecs_world *w, void *self,
                                          ecs_entity e, ecs_event event);
  void (*ecs_manager_stats_at)(const ecs_world *w, size_t i,
                               ecs_manager_stats *out);
  size_t (*ecs_world_gc)(ecs_world *w, size_t budget);
  ecs_err (*ecs_create)(ecs_world *w, ecs_entity *out);
  ecs_err (*ecs_create_n)(ecs_world *w, ecs_entity *out, size_t n);
  bool (*ecs_destroy)(ecs_world *w, ecs_entity e);
  size_t (*ecs_destroy_n)(ecs_world *w, const ecs_entity *es, size_t n);
  size_t (*ecs_count)(const ecs_world *w);
  size_t (*ecs_free_count)(const ecs_world *w);
  bool (*ecs_next_entity)(const ecs_world *w, uint32_t *cursor,
                          ecs_entity *out);
  const char *(*ecs_world_check)(const ecs_world *w);
  double (*ecs_clock)(void);
  /* component.h */
  ecs_err (*ecs_component_new)(ecs_world *w, const char *name,
                               const ecs_field_def *fields, uint32_t nfields,
                               ecs_component **out);
  ecs_component *(*ecs_component_find)(const ecs_world *w, const char *name);
  bool (*ecs_component_is)(const ecs_manager_class *cls);
  const char *(*ecs_component_name)(const ecs_component *c);
  uint32_t (*ecs_component_field_count)(const ecs_component *c);
  const ecs_field_def *(*ecs_component_field)(const ecs_component *c,
                                              uint32_t i);
  int (*ecs_component_field_index)(const ecs_component *c, const char *name,
                                   size_t len);
  ecs_err (*ecs_component_emplace)(ecs_world *w, ecs_component *c,
                                   ecs_entity e, ecs_instance *out,
                                   bool *existed);
  ecs_err (*ecs_component_add)(ecs_world *w, ecs_component *c, ecs_entity e,
                               ecs_instance *out, bool *existed);
  ecs_instance (*ecs_component_lookup)(const ecs_world *w,
                                       const ecs_component *c, ecs_entity e);
  void (*ecs_component_lookup_n)(const ecs_world *w, const ecs_component *c,
                                 const ecs_entity *in, ecs_instance *out,
                                 size_t n);
  ecs_err (*ecs_component_remove)(ecs_world *w, ecs_component *c,
                                  ecs_entity e, bool *removed);
  uint32_t (*ecs_component_size)(const ecs_component *c);
  size_t (*ecs_component_count)(const ecs_world *w, const ecs_component *c);
  const ecs_entity *(*ecs_component_entities)(const ecs_component *c);
  void *(*ecs_component_column)(ecs_component *c, uint32_t field);
  size_t (*ecs_component_gc)(ecs_world *w, ecs_component *c, size_t budget);
  uint64_t (*ecs_component_version)(const ecs_component *c);
  size_t (*ecs_drain_refs)(ecs_world *w, uint32_t *buf, size_t max);
  size_t (*ecs_dropped_refs)(const ecs_world *w);
  /* transform.h */
  ecs_err (*ecs_transform_new)(ecs_world *w, ecs_transform **out);
  ecs_world *(*ecs_transform_world)(const ecs_transform *t);
  ecs_transform *(*ecs_transform_of)(const ecs_world *w);
  ecs_err (*ecs_transform_add)(ecs_transform *t, ecs_entity e,
                               const ecs_trs *local);
  ecs_err (*ecs_transform_remove)(ecs_transform *t, ecs_entity e);
  bool (*ecs_transform_has)(const ecs_transform *t, ecs_entity e);
  uint32_t (*ecs_transform_instance)(const ecs_transform *t, ecs_entity e);
  void (*ecs_transform_lookup)(const ecs_transform *t, const ecs_entity *es,
                               uint32_t *out, size_t n);
  uint32_t (*ecs_transform_size)(const ecs_transform *t);
  ecs_entity (*ecs_transform_entity_at)(const ecs_transform *t, uint32_t i);
  const double *(*ecs_transform_world_at)(const ecs_transform *t, uint32_t i);
  ecs_err (*ecs_transform_get_local)(const ecs_transform *t, ecs_entity e,
                                     ecs_trs *out);
  ecs_err (*ecs_transform_get_world)(const ecs_transform *t, ecs_entity e,
                                     double out[16]);
  ecs_err (*ecs_transform_get_world_rotation)(const ecs_transform *t,
                                              ecs_entity e, double out[4]);
  ecs_err (*ecs_transform_set_local)(ecs_transform *t, ecs_entity e,
                                     const ecs_trs *local);
  ecs_err (*ecs_transform_set_position)(ecs_transform *t, ecs_entity e,
                                        double x, double y, double z);
  ecs_err (*ecs_transform_set_rotation)(ecs_transform *t, ecs_entity e,
                                        double x, double y, double z,
                                        double w);
  ecs_err (*ecs_transform_set_scale)(ecs_transform *t, ecs_entity e, double x,
                                     double y, double z);
  ecs_err (*ecs_transform_set_locals)(ecs_transform *t, const uint32_t *inst,
                                      const ecs_trs *locals, size_t n);
  ecs_err (*ecs_transform_set_positions)(ecs_transform *t,
                                         const uint32_t *inst,
                                         const double *xyz, size_t n);
  ecs_err (*ecs_transform_set_parent)(ecs_transform *t, ecs_entity child,
                                      ecs_entity parent, bool keep_world);
  const char *(*ecs_transform_keep_world_error)(const ecs_transform *t,
                                                ecs_entity child,
                                                ecs_entity parent);
  ecs_entity (*ecs_transform_parent)(const ecs_transform *t, ecs_entity e);
  ecs_entity (*ecs_transform_first_child)(const ecs_transform *t,
                                          ecs_entity e);
  ecs_entity (*ecs_transform_next_sibling)(const ecs_transform *t,
                                           ecs_entity e);
  size_t (*ecs_transform_destroy_tree)(ecs_transform *t, ecs_entity e);
  void (*ecs_transform_set_parent_first)(ecs_transform *t, bool on);
  ecs_err (*ecs_transform_sort)(ecs_transform *t);
  size_t (*ecs_transform_gc)(ecs_transform *t, size_t budget);
  /* names.h */
  ecs_err (*ecs_names_new)(ecs_world *w, ecs_names **out);
  ecs_names *(*ecs_names_of)(const ecs_world *w);
  ecs_err (*ecs_names_set)(ecs_names *m, ecs_entity e, const char *s,
                           size_t len);
  const char *(*ecs_names_get)(const ecs_names *m, ecs_entity e, size_t *len);
  ecs_err (*ecs_names_clear)(ecs_names *m, ecs_entity e, bool *cleared);
  ecs_entity (*ecs_names_find)(const ecs_names *m, const char *s, size_t len);
  size_t (*ecs_names_size)(const ecs_names *m);
  size_t (*ecs_names_gc)(ecs_names *m, size_t budget);
  /* query.h */
  ecs_err (*ecs_query_new)(ecs_world *w, ecs_component *const *with,
                           uint32_t nwith, ecs_component *const *without,
                           uint32_t nwithout, ecs_query **out);
  void (*ecs_query_free)(ecs_world *w, ecs_query *q);
  uint32_t (*ecs_query_with_count)(const ecs_query *q);
  uint32_t (*ecs_query_without_count)(const ecs_query *q);
  ecs_component *(*ecs_query_with)(const ecs_query *q, uint32_t k);
  ecs_component *(*ecs_query_without)(const ecs_query *q, uint32_t k);
  int (*ecs_query_term)(const ecs_query *q, const ecs_component *c);
  ecs_err (*ecs_query_refresh)(ecs_world *w, ecs_query *q);
  ecs_err (*ecs_query_count)(ecs_world *w, ecs_query *q, size_t *out);
  bool (*ecs_query_matches)(const ecs_world *w, const ecs_query *q,
                            ecs_entity e);
  void (*ecs_query_get_stats)(const ecs_query *q, ecs_query_stats *out);
  ecs_err (*ecs_query_iter_begin)(ecs_world *w, ecs_query *q,
                                  ecs_query_iter *it);
  bool (*ecs_query_iter_next)(const ecs_world *w, ecs_query_iter *it,
                              ecs_entity *e);
  uint32_t (*ecs_query_iter_chunk)(const ecs_world *w, ecs_query_iter *it,
                                   uint32_t max, ecs_entity *ents,
                                   uint32_t *rows);
  bool (*ecs_query_iter_current)(const ecs_world *w, const ecs_query_iter *it);
  void (*ecs_query_iter_end)(ecs_world *w, ecs_query_iter *it);
  ecs_err (*ecs_query_run)(ecs_world *w, ecs_query *q,
                           const ecs_column_ref *cols, uint32_t ncols,
                           double dt, ecs_system_fn fn, void *ud,
                           size_t *processed);
  ecs_err (*ecs_program_compile)(ecs_world *w, ecs_query *q, const char *src,
                                 size_t len, ecs_program **out, char *msg,
                                 size_t msgsize);
  ecs_err (*ecs_query_program)(ecs_world *w, ecs_query *q, const char *src,
                               size_t len, ecs_program **out, char *msg,
                               size_t msgsize);
  uint32_t (*ecs_query_program_count)(ecs_query *q);
  uint32_t (*ecs_program_param_count)(const ecs_program *p);
  const char *(*ecs_program_param_name)(const ecs_program *p, uint32_t i);
  uint32_t (*ecs_program_param_position)(const ecs_program *p, uint32_t i);
  ecs_err (*ecs_program_run)(ecs_world *w, ecs_program *p,
                             const double *params, size_t *processed);
  /* ecs_lua.h */
  int (*ecs_lua_is_entity)(lua_State *L, int idx);
  ecs_entity (*ecs_lua_check_entity)(lua_State *L, int idx);
  ecs_world *(*ecs_lua_check_world)(lua_State *L, int idx);
  int (*ecs_lua_error)(lua_State *L, const char *fname, ecs_err err);
  void *(*ecs_lua_enter)(lua_State *L, int idx);
  void (*ecs_lua_leave)(void *token);
  const char *(*ecs_lua_check_text)(lua_State *L, int idx, size_t *len,
                                    const char *fn);
  struct ecs_component *(*ecs_lua_check_component)(lua_State *L, int idx,
                                                   ecs_world **w);
  void (*ecs_lua_plugin_class)(lua_State *L, const char *tname,
                               const luaL_Reg *methods);
  int (*ecs_lua_plugin_get)(lua_State *L, int world_idx, const char *tname);
  void *(*ecs_lua_plugin_new)(lua_State *L, int world_idx, const char *tname,
                              size_t size);
  void *(*ecs_lua_object_new)(lua_State *L, const char *tname, size_t size,
                              int nuvalue);
  void (*ecs_lua_plugin_detach)(lua_State *L, int world_idx,
                                const char *tname);
  void *(*ecs_lua_plugin_check)(lua_State *L, int idx, const char *tname,
                                ecs_world **w);
  void (*ecs_lua_drain_refs)(lua_State *L, int world_idx);
  void (*ecs_lua_push_native)(lua_State *L, const char *name, ecs_system_fn fn,
                              void *ud, const char *const *specs, int nspecs);
  /* value.h: typed field values */
  ecs_kind (*ecs_type_kind)(ecs_type t);
  int64_t (*ecs_type_min)(ecs_type t);
  int64_t (*ecs_type_max)(ecs_type t);
  bool (*ecs_value_fits)(ecs_type t, int64_t v);
  int64_t (*ecs_value_saturate)(ecs_type t, double v);
  ecs_scalar (*ecs_value_load)(const void *col, ecs_type t, uint32_t row);
  void (*ecs_value_store)(void *col, ecs_type t, uint32_t row, ecs_scalar v);
  void (*ecs_value_load_rows)(ecs_scalar *dst, const void *col, ecs_type t,
                              const uint32_t *rows, uint32_t n, bool contiguous);
  void (*ecs_value_store_rows)(void *col, ecs_type t, const uint32_t *rows,
                               const ecs_scalar *src, uint32_t n, bool contiguous);
  void (*ecs_value_load_f64)(double *dst, const void *col, ecs_type t,
                             const uint32_t *rows, uint32_t n, bool contiguous);
  void (*ecs_value_store_f64)(void *col, ecs_type t, const uint32_t *rows,
                              const double *src, uint32_t n, bool contiguous);
  ecs_err (*ecs_query_resolve_field)(const ecs_query *q, const char *comp,
                                     size_t clen, const char *field, size_t flen,
                                     uint32_t *term, uint32_t *fieldno, char *msg,
                                     size_t msg_size);
  /* system.h: the world's systems */
  ecs_err (*ecs_system_add)(ecs_world *w, const ecs_system_desc *desc, ecs_system **out, char *msg, size_t msgsize);
  bool (*ecs_system_remove)(ecs_world *w, const char *name);
  ecs_system * (*ecs_system_find)(const ecs_world *w, const char *name);
  size_t (*ecs_system_count)(const ecs_world *w);
  bool (*ecs_system_next)(const ecs_world *w, uint32_t *cursor, ecs_system **out);
  const char * (*ecs_system_name)(const ecs_system *s);
  ecs_system_kind (*ecs_system_kind_of)(const ecs_system *s);
  ecs_query * (*ecs_system_query)(const ecs_system *s);
  void * (*ecs_system_ud)(const ecs_system *s);
  ecs_system_call_fn (*ecs_system_callback)(const ecs_system *s);
  ecs_system_fn (*ecs_system_function)(const ecs_system *s);
  const char * (*ecs_system_expr)(const ecs_system *s, size_t *len);
  uint32_t (*ecs_system_param_count)(const ecs_system *s);
  const char * (*ecs_system_param_name)(const ecs_system *s, uint32_t k);
  uint32_t (*ecs_system_param_position)(const ecs_system *s, uint32_t k);
  void (*ecs_system_enable)(ecs_system *s, bool enabled);
  bool (*ecs_system_enabled)(const ecs_system *s);
  void (*ecs_system_get_stats)(const ecs_system *s, ecs_system_stats *out);
  void (*ecs_system_reset_stats)(ecs_world *w);
  ecs_err (*ecs_world_update)(ecs_world *w, double dt, void *ctx, ecs_system **failed);
  /* records.h: the managers' entity -> record map and lazy gc */
  ecs_err (*ecs_record_map_reserve)(ecs_world *w, ecs_record_map *m,
                                    uint32_t index);
  void (*ecs_record_map_free)(ecs_world *w, ecs_record_map *m);
  const char *(*ecs_record_map_each)(const ecs_record_map *m,
                                     const char *(*fn)(const void *ud,
                                                       uint32_t index,
                                                       uint32_t v),
                                     const void *ud);
  size_t (*ecs_record_map_bytes)(const ecs_record_map *m);
  size_t (*ecs_record_gc)(ecs_world *w, void *self, const ecs_record_ops *ops,
                          const uint32_t *size, uint32_t *cursor,
                          size_t budget);
  /* appended: component.h, the schema rules */
  ecs_err (*ecs_component_check_schema)(const char *name,
                                        const ecs_field_def *fields,
                                        uint32_t nfields, uint32_t *at);
  ecs_err (*ecs_schema_entry_parse)(const char *s, size_t len,
                                    size_t *name_len, ecs_type *type);
  /* appended: ecs.h, destroy reporting REMOVE listeners' errors */
  ecs_err (*ecs_destroy_report)(ecs_world *w, ecs_entity e, bool *destroyed);
  /* appended: snapshot.h, and ecs_lua.h's plugin factories */
  ecs_err (*ecs_world_save)(const ecs_world *w, ecs_writer *out);
  ecs_err (*ecs_world_save_opts)(const ecs_world *w, ecs_writer *out,
                                 const ecs_snapshot_opts *opts);
  ecs_err (*ecs_world_load)(ecs_world *w, ecs_reader *in);
  ecs_err (*ecs_world_load_opts)(ecs_world *w, ecs_reader *in,
                                 const ecs_snapshot_opts *opts,
                                 uint32_t *failed);
  ecs_err (*ecs_snapshot_open)(ecs_snapshot *s, const void *data,
                               size_t size);
  ecs_err (*ecs_snapshot_manager_at)(const ecs_snapshot *s, uint32_t i,
                                     ecs_snapshot_manager *out);
  void (*ecs_snapshot_field)(const ecs_snapshot_manager *m, uint32_t k,
                             ecs_type *type, const char **name,
                             size_t *name_len);
  uint64_t (*ecs_snapshot_hash)(const void *data, size_t size);
  void (*ecs_lua_plugin_factory)(lua_State *L, const char *manager,
                                 lua_CFunction new_fn);
  /* appended: system.h, replacing a system in its place */
  ecs_err (*ecs_system_replace)(ecs_world *w, const ecs_system_desc *desc,
                                ecs_system **out, char *msg, size_t msgsize);
  /* appended: batches that reserve before they create (world:spawn) */
  ecs_err (*ecs_next_indices)(const ecs_world *w, uint32_t *out, size_t n);
  ecs_err (*ecs_component_reserve)(ecs_world *w, ecs_component *c,
                                   const uint32_t *index, size_t n);
  void (*ecs_component_emplace_n)(ecs_world *w, ecs_component *c,
                                  const ecs_entity *es, size_t n,
                                  ecs_instance *rows);
  /* appended: system.h, phases (ecs_system_desc grew: version 7) */
  ecs_err (*ecs_world_update_phase)(ecs_world *w, const char *phase, double dt,
                                    void *ctx, ecs_system **failed);
  const char *(*ecs_system_phase)(const ecs_system *s);
  /* appended: change ticks (component.h, query.h) */
  void (*ecs_component_touch)(ecs_world *w, ecs_component *c, ecs_instance i);
  void (*ecs_component_touch_n)(ecs_world *w, ecs_component *c,
                                const ecs_instance *rows, size_t n);
  void (*ecs_component_touch_range)(ecs_world *w, ecs_component *c,
                                    ecs_instance first, size_t n);
  ecs_err (*ecs_query_track_changes)(ecs_world *w, ecs_query *q,
                                     ecs_component *const *changed,
                                     uint32_t nchanged,
                                     ecs_component *const *added,
                                     uint32_t nadded);
  void (*ecs_query_complete)(ecs_world *w, ecs_query *q);
  bool (*ecs_query_tracks_changes)(const ecs_query *q);
  /* appended: entity fields that clean up (component.h, ecs.h) */
  ecs_err (*ecs_component_set_cleanup)(ecs_world *w, ecs_component *c,
                                       uint32_t field, ecs_cleanup policy);
  ecs_cleanup (*ecs_component_cleanup)(const ecs_component *c, uint32_t field);
  void (*ecs_cleanup_hold)(ecs_world *w);
  ecs_err (*ecs_cleanup_release)(ecs_world *w);
  /* appended: the journal (component.h, journal.h) */
  void (*ecs_component_prewrite)(ecs_world *w, ecs_component *c, ecs_instance i);
  void (*ecs_component_prewrite_n)(ecs_world *w, ecs_component *c,
                                   const ecs_instance *rows, size_t n);
  void (*ecs_component_prewrite_range)(ecs_world *w, ecs_component *c,
                                       ecs_instance first, size_t n);
  bool (*ecs_component_keep_ref)(ecs_world *w, uint32_t ref);
  /* appended: hot reload (component.h) */
  ecs_err (*ecs_component_redefine)(ecs_world *w, ecs_component *c,
                                    const ecs_field_def *defs, uint32_t n,
                                    const uint32_t *from,
                                    ecs_component_convert_fn convert, void *ud,
                                    char *msg, size_t msgsize);
  /* appended: transforms in queries (component.h, transform.h) */
  bool (*ecs_component_readonly)(const ecs_component *c, uint32_t field);
  ecs_component *(*ecs_transform_columns)(const ecs_transform *t);
  /* appended: plugin managers as query terms (component.h "Owned
  ** components", ecs.h's columns hook, ecs_lua.h) */
  ecs_err (*ecs_owned_new)(ecs_world *w, const char *name,
                           const ecs_field_def *fields, uint32_t nfields,
                           uint64_t readonly, const ecs_owner *owner, void *ud,
                           ecs_component **out);
  void (*ecs_owned_free)(ecs_world *w, ecs_component *c);
  ecs_err (*ecs_owned_reserve)(ecs_world *w, ecs_component *c, uint32_t need,
                               uint32_t index);
  uint32_t (*ecs_owned_append)(ecs_world *w, ecs_component *c, ecs_entity e);
  void (*ecs_owned_remove_at)(ecs_world *w, ecs_component *c, uint32_t i);
  void (*ecs_owned_swap)(ecs_world *w, ecs_component *c, uint32_t a, uint32_t b);
  bool (*ecs_owned_permute)(ecs_world *w, ecs_component *c,
                            const ecs_entity *order);
  void (*ecs_owned_purge)(ecs_component *c, uint32_t index);
  void (*ecs_owned_clear)(ecs_world *w, ecs_component *c);
  ecs_err (*ecs_owned_take_prepare)(ecs_world *w, ecs_component *c,
                                    const ecs_component *from);
  void (*ecs_owned_take)(ecs_world *w, ecs_component *c, ecs_component *from);
  size_t (*ecs_owned_bytes)(const ecs_world *w, const ecs_component *c);
  const char *(*ecs_owned_check)(const ecs_world *w, const ecs_component *c,
                                 const ecs_entity *rows, uint32_t n);
  double *(*ecs_owned_f64)(ecs_component *c, uint32_t k);
  uint32_t *(*ecs_owned_changed)(const ecs_world *w, ecs_component *c,
                                 uint32_t *now);
  ecs_entity *(*ecs_owned_owners)(ecs_component *c);
  uint32_t (*ecs_owned_find)(const ecs_component *c, uint32_t index);
  void (*ecs_lua_plugin_manager)(lua_State *L, int idx, void *self);
  /* appended: threads (ecs.h, component.h) */
  ecs_err (*ecs_world_set_threads)(ecs_world *w, uint32_t threads);
  uint32_t (*ecs_world_threads)(const ecs_world *w);
  bool (*ecs_component_owned)(const ecs_component *c);
  uint64_t (*ecs_world_split_runs)(const ecs_world *w);
  /* appended: pins and chunk cursors (component.h, query.h) */
  ecs_err (*ecs_component_pin)(ecs_world *w, ecs_component *c);
  void (*ecs_component_unpin)(ecs_world *w, ecs_component *c);
  uint32_t (*ecs_component_pins)(const ecs_component *c);
  uint32_t (*ecs_world_pins)(const ecs_world *w);
  size_t (*ecs_query_cursor_size)(void);
  ecs_err (*ecs_query_cursor_begin)(ecs_world *w, ecs_query *q,
                                    const ecs_column_ref *cols, uint32_t ncols,
                                    ecs_query_cursor *cur);
  ecs_err (*ecs_query_cursor_next)(ecs_world *w, ecs_query_cursor *cur,
                                   void **ptr, const ecs_entity **entities,
                                   uint32_t *count);
  void (*ecs_query_cursor_end)(ecs_world *w, ecs_query_cursor *cur, bool finish);
  /* appended: native runs split over threads (query.h, ecs_lua.h) */
  ecs_err (*ecs_query_run_opts)(ecs_world *w, ecs_query *q,
                                const ecs_column_ref *cols, uint32_t ncols,
                                double dt, ecs_system_fn fn, void *ud,
                                const ecs_run_opts *opts, size_t *processed);
  void (*ecs_lua_native_parallel)(lua_State *L, int idx);
  /* appended: batches of systems (ecs.h) */
  uint64_t (*ecs_world_batches)(const ecs_world *w);
  /* appended: snapshots framed now, checked by the load (snapshot.h) */
  ecs_err (*ecs_snapshot_frame)(ecs_snapshot *s, const void *data,
                                size_t size);
  ecs_err (*ecs_snapshot_check)(ecs_snapshot *s);
};

#ifndef ECS_API_ONLY /* ecs.core itself defines ECS_API_ONLY */

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
** The table of the ecs.core of L's state, checked against the version and
** size this plugin was compiled with; loads ecs.core (require) if it is not
** loaded yet. Raises a Lua error if it cannot be had or does not fit.
*/
static inline const struct ecs_api *ecs_plugin_open_api(lua_State *L,
                                                        int version) {
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
  else if ((int)api->version != version ||
           api->size < (uint32_t)sizeof(struct ecs_api))
    luaL_error(L, "ecs plugin: built for plugin interface version %d "
               "(%d bytes), but ecs.core provides version %d (%d bytes): "
               "rebuild the plugin against this ecs.core's headers",
               version, (int)sizeof(struct ecs_api), (int)api->version,
               (int)api->size);
  return api;
}

/* Fetch and check the table; every luaopen_ function of a plugin runs it
** before it calls the core. */
#define ECS_PLUGIN_INIT(L) \
  ((void)(ecs_plugin_api = ecs_plugin_open_api((L), ECS_API_VERSION)))

/*
** Calls by name: ecs_count(w) becomes (ecs_plugin_api->ecs_count)(w). A
** macro's own name is not replaced again inside its expansion, so the
** field keeps the function's name.
*/
/* ecs.h: worlds, managers, entities */
#define ecs_strerror (ecs_plugin_api->ecs_strerror)
#define ecs_world_new (ecs_plugin_api->ecs_world_new)
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
/* (ecs.h's macro ecs_manager_notify expands to this one) */
#define ecs_manager_notify_listeners \
  (ecs_plugin_api->ecs_manager_notify_listeners)
#define ecs_manager_stats_at (ecs_plugin_api->ecs_manager_stats_at)
#define ecs_world_gc (ecs_plugin_api->ecs_world_gc)
#define ecs_create (ecs_plugin_api->ecs_create)
#define ecs_create_n (ecs_plugin_api->ecs_create_n)
#define ecs_destroy (ecs_plugin_api->ecs_destroy)
#define ecs_destroy_n (ecs_plugin_api->ecs_destroy_n)
#define ecs_destroy_report (ecs_plugin_api->ecs_destroy_report)
#define ecs_count (ecs_plugin_api->ecs_count)
#define ecs_free_count (ecs_plugin_api->ecs_free_count)
#define ecs_next_entity (ecs_plugin_api->ecs_next_entity)
#define ecs_world_check (ecs_plugin_api->ecs_world_check)
#define ecs_clock (ecs_plugin_api->ecs_clock)
/* component.h */
#define ecs_component_check_schema \
  (ecs_plugin_api->ecs_component_check_schema)
#define ecs_schema_entry_parse (ecs_plugin_api->ecs_schema_entry_parse)
#define ecs_component_new (ecs_plugin_api->ecs_component_new)
#define ecs_component_find (ecs_plugin_api->ecs_component_find)
#define ecs_component_is (ecs_plugin_api->ecs_component_is)
#define ecs_component_name (ecs_plugin_api->ecs_component_name)
#define ecs_component_field_count (ecs_plugin_api->ecs_component_field_count)
#define ecs_component_field (ecs_plugin_api->ecs_component_field)
#define ecs_component_field_index (ecs_plugin_api->ecs_component_field_index)
#define ecs_component_emplace (ecs_plugin_api->ecs_component_emplace)
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
#define ecs_drain_refs (ecs_plugin_api->ecs_drain_refs)
#define ecs_dropped_refs (ecs_plugin_api->ecs_dropped_refs)
/* transform.h */
#define ecs_transform_new (ecs_plugin_api->ecs_transform_new)
#define ecs_transform_world (ecs_plugin_api->ecs_transform_world)
#define ecs_transform_of (ecs_plugin_api->ecs_transform_of)
#define ecs_transform_add (ecs_plugin_api->ecs_transform_add)
#define ecs_transform_remove (ecs_plugin_api->ecs_transform_remove)
#define ecs_transform_has (ecs_plugin_api->ecs_transform_has)
#define ecs_transform_instance (ecs_plugin_api->ecs_transform_instance)
#define ecs_transform_lookup (ecs_plugin_api->ecs_transform_lookup)
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
#define ecs_transform_set_parent_first \
  (ecs_plugin_api->ecs_transform_set_parent_first)
#define ecs_transform_sort (ecs_plugin_api->ecs_transform_sort)
#define ecs_transform_gc (ecs_plugin_api->ecs_transform_gc)
/* names.h */
#define ecs_names_new (ecs_plugin_api->ecs_names_new)
#define ecs_names_of (ecs_plugin_api->ecs_names_of)
#define ecs_names_set (ecs_plugin_api->ecs_names_set)
#define ecs_names_get (ecs_plugin_api->ecs_names_get)
#define ecs_names_clear (ecs_plugin_api->ecs_names_clear)
#define ecs_names_find (ecs_plugin_api->ecs_names_find)
#define ecs_names_size (ecs_plugin_api->ecs_names_size)
#define ecs_names_gc (ecs_plugin_api->ecs_names_gc)
/* query.h */
#define ecs_query_new (ecs_plugin_api->ecs_query_new)
#define ecs_query_free (ecs_plugin_api->ecs_query_free)
#define ecs_query_with_count (ecs_plugin_api->ecs_query_with_count)
#define ecs_query_without_count (ecs_plugin_api->ecs_query_without_count)
#define ecs_query_with (ecs_plugin_api->ecs_query_with)
#define ecs_query_without (ecs_plugin_api->ecs_query_without)
#define ecs_query_term (ecs_plugin_api->ecs_query_term)
#define ecs_query_refresh (ecs_plugin_api->ecs_query_refresh)
#define ecs_query_count (ecs_plugin_api->ecs_query_count)
#define ecs_query_matches (ecs_plugin_api->ecs_query_matches)
#define ecs_query_get_stats (ecs_plugin_api->ecs_query_get_stats)
#define ecs_query_iter_begin (ecs_plugin_api->ecs_query_iter_begin)
#define ecs_query_iter_next (ecs_plugin_api->ecs_query_iter_next)
#define ecs_query_iter_chunk (ecs_plugin_api->ecs_query_iter_chunk)
#define ecs_query_iter_current (ecs_plugin_api->ecs_query_iter_current)
#define ecs_query_iter_end (ecs_plugin_api->ecs_query_iter_end)
#define ecs_query_run (ecs_plugin_api->ecs_query_run)
#define ecs_program_compile (ecs_plugin_api->ecs_program_compile)
#define ecs_query_program (ecs_plugin_api->ecs_query_program)
#define ecs_query_program_count (ecs_plugin_api->ecs_query_program_count)
#define ecs_program_param_count (ecs_plugin_api->ecs_program_param_count)
#define ecs_program_param_name (ecs_plugin_api->ecs_program_param_name)
#define ecs_program_param_position (ecs_plugin_api->ecs_program_param_position)
#define ecs_program_run (ecs_plugin_api->ecs_program_run)
/* ecs_lua.h */
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
#define ecs_lua_plugin_check (ecs_plugin_api->ecs_lua_plugin_check)
#define ecs_lua_drain_refs (ecs_plugin_api->ecs_lua_drain_refs)
#define ecs_lua_push_native (ecs_plugin_api->ecs_lua_push_native)

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
#define ecs_query_resolve_field (ecs_plugin_api->ecs_query_resolve_field)

#define ecs_system_add (ecs_plugin_api->ecs_system_add)
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
#define ecs_system_reset_stats (ecs_plugin_api->ecs_system_reset_stats)
#define ecs_world_update (ecs_plugin_api->ecs_world_update)
/* records.h (ecs_record_map_get and _set are inline: no table call) */
#define ecs_record_map_reserve (ecs_plugin_api->ecs_record_map_reserve)
#define ecs_record_map_free (ecs_plugin_api->ecs_record_map_free)
#define ecs_record_map_each (ecs_plugin_api->ecs_record_map_each)
#define ecs_record_map_bytes (ecs_plugin_api->ecs_record_map_bytes)
#define ecs_record_gc (ecs_plugin_api->ecs_record_gc)
/* snapshot.h */
#define ecs_world_save (ecs_plugin_api->ecs_world_save)
#define ecs_world_save_opts (ecs_plugin_api->ecs_world_save_opts)
#define ecs_world_load (ecs_plugin_api->ecs_world_load)
#define ecs_world_load_opts (ecs_plugin_api->ecs_world_load_opts)
#define ecs_snapshot_open (ecs_plugin_api->ecs_snapshot_open)
#define ecs_snapshot_manager_at (ecs_plugin_api->ecs_snapshot_manager_at)
#define ecs_snapshot_field (ecs_plugin_api->ecs_snapshot_field)
#define ecs_snapshot_hash (ecs_plugin_api->ecs_snapshot_hash)
#define ecs_lua_plugin_factory (ecs_plugin_api->ecs_lua_plugin_factory)
#define ecs_system_replace (ecs_plugin_api->ecs_system_replace)
#define ecs_next_indices (ecs_plugin_api->ecs_next_indices)
#define ecs_component_reserve (ecs_plugin_api->ecs_component_reserve)
#define ecs_component_emplace_n (ecs_plugin_api->ecs_component_emplace_n)
#define ecs_world_update_phase (ecs_plugin_api->ecs_world_update_phase)
#define ecs_system_phase (ecs_plugin_api->ecs_system_phase)
#define ecs_component_touch (ecs_plugin_api->ecs_component_touch)
#define ecs_component_touch_n (ecs_plugin_api->ecs_component_touch_n)
#define ecs_component_touch_range (ecs_plugin_api->ecs_component_touch_range)
#define ecs_component_prewrite (ecs_plugin_api->ecs_component_prewrite)
#define ecs_component_prewrite_n (ecs_plugin_api->ecs_component_prewrite_n)
#define ecs_component_prewrite_range (ecs_plugin_api->ecs_component_prewrite_range)
#define ecs_component_keep_ref (ecs_plugin_api->ecs_component_keep_ref)
#define ecs_component_redefine (ecs_plugin_api->ecs_component_redefine)
#define ecs_component_readonly (ecs_plugin_api->ecs_component_readonly)
#define ecs_transform_columns (ecs_plugin_api->ecs_transform_columns)
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
#define ecs_owned_bytes (ecs_plugin_api->ecs_owned_bytes)
#define ecs_owned_check (ecs_plugin_api->ecs_owned_check)
#define ecs_owned_f64 (ecs_plugin_api->ecs_owned_f64)
#define ecs_owned_changed (ecs_plugin_api->ecs_owned_changed)
#define ecs_owned_owners (ecs_plugin_api->ecs_owned_owners)
#define ecs_owned_find (ecs_plugin_api->ecs_owned_find)
#define ecs_lua_plugin_manager (ecs_plugin_api->ecs_lua_plugin_manager)
#define ecs_world_set_threads (ecs_plugin_api->ecs_world_set_threads)
#define ecs_world_threads (ecs_plugin_api->ecs_world_threads)
#define ecs_component_owned (ecs_plugin_api->ecs_component_owned)
#define ecs_world_split_runs (ecs_plugin_api->ecs_world_split_runs)
#define ecs_component_pin (ecs_plugin_api->ecs_component_pin)
#define ecs_component_unpin (ecs_plugin_api->ecs_component_unpin)
#define ecs_component_pins (ecs_plugin_api->ecs_component_pins)
#define ecs_world_pins (ecs_plugin_api->ecs_world_pins)
#define ecs_query_cursor_size (ecs_plugin_api->ecs_query_cursor_size)
#define ecs_query_cursor_begin (ecs_plugin_api->ecs_query_cursor_begin)
#define ecs_query_cursor_next (ecs_plugin_api->ecs_query_cursor_next)
#define ecs_query_cursor_end (ecs_plugin_api->ecs_query_cursor_end)
#define ecs_query_run_opts (ecs_plugin_api->ecs_query_run_opts)
#define ecs_lua_native_parallel (ecs_plugin_api->ecs_lua_native_parallel)
#define ecs_world_batches (ecs_plugin_api->ecs_world_batches)
#define ecs_snapshot_frame (ecs_plugin_api->ecs_snapshot_frame)
#define ecs_snapshot_check (ecs_plugin_api->ecs_snapshot_check)
#define ecs_query_track_changes (ecs_plugin_api->ecs_query_track_changes)
#define ecs_query_complete (ecs_plugin_api->ecs_query_complete)
#define ecs_query_tracks_changes (ecs_plugin_api->ecs_query_tracks_changes)
#define ecs_component_set_cleanup (ecs_plugin_api->ecs_component_set_cleanup)
#define ecs_component_cleanup (ecs_plugin_api->ecs_component_cleanup)
#define ecs_cleanup_hold (ecs_plugin_api->ecs_cleanup_hold)
#define ecs_cleanup_release (ecs_plugin_api->ecs_cleanup_release)

#endif /* ECS_API_ONLY */

#endif
