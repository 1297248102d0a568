/*
** binding.h -- what the files of the Lua binding (src/lua/) share.
**
** The binding is module ecs.core: one file per bound object (world,
** entity, component and its field values, plugin, transform and names,
** query, columns, system, module), the only code that includes lua.h. It
** is thin: it checks arguments, calls the core and converts results.
** Error policy (STYLE.md): wrong types raise through luaL_argerror /
** luaL_typeerror; misuse of a valid value raises "Class:method: <text>"
** through ecsl_error, with the text of the core's code (ECS_ERRORS),
** naming the entity when the error is about one; a closed world raises
** the one text of ECS_ERR_CLOSED (ecsl_closed); predicates never raise for
** a well-formed handle that is dead or null.
**
** C state is finished before any Lua API call that can raise, so an error
** never leaves a world half-changed. Shared names carry the ecsl_ prefix.
*/
#ifndef ECS_BINDING_H
#define ECS_BINDING_H

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"
#include "ecs_compat.h" /* one API on Lua 5.1-5.4 and LuaJIT */
#include "lualib.h"     /* LUA_JITLIBNAME: LuaJIT's, below */

/*
** LuaJIT: every raise from the binding first makes a call on the raising
** thread (ecsl_thread_resync, observer.c). Observers run on a thread of
** their own (observer.c); a call into another thread leaves LuaJIT's
** "current thread" (cur_L, which trace exits restore state into) on that
** thread until the caller calls into the VM again or returns. LuaJIT
** before its fix of 2023-09 (e86990f7, LuaJIT issue #1066; Debian 12 ships
** one from 2022) does not reset it when pcall() catches an error raised
** from C, so a method that raised after one of its observers ran left a
** trace exit writing into the observers' thread: a corrupted stack, then
** a crash. Raises only: a method that returns resets cur_L itself. The
** wrapped names below are all the binding raises with (lauxlib's own
** luaL_check* run before any core call, so before any observer).
*/
#ifdef LUA_JITLIBNAME
void ecsl_thread_resync(lua_State *L);
#undef luaL_error /* ecs_compat.h's: LuaJIT is a 5.1 */
#define luaL_error(L, ...) (ecsl_thread_resync(L), ecsl_compat_error(L, __VA_ARGS__))
#define lua_error(L) (ecsl_thread_resync(L), lua_error(L))
#define luaL_argerror(L, a, m) (ecsl_thread_resync(L), luaL_argerror(L, a, m))
#ifdef ECSL_COMPAT_TYPEERROR
#undef luaL_typeerror
#define luaL_typeerror(L, a, t) (ecsl_thread_resync(L), ecsl_compat_typeerror(L, a, t))
#endif
#endif

/*
** Hidden symbols in ecs/core.so however it is built. CMake compiles with
** -fvisibility=hidden; the rock's builtin build cannot (its compiler flags
** are LuaRocks' CFLAGS: a rockspec sets defines and include directories,
** no flags). So from here to the end of every binding file (binding.h is
** their first include; no pop) declarations are hidden: the binding's own
** functions and, through the headers below, every core function it calls,
** which the linker then hides in the module too (the most restrictive
** visibility of a symbol wins), making those calls direct instead of
** through the PLT. Lua's API, declared above, stays as it is; the one
** exported symbol, luaopen_ecs_core, says so itself (ECS_EXPORT).
*/
#if defined(__GNUC__) && !defined(_WIN32)
#pragma GCC visibility push(hidden)
#endif

#include "ecs.h"
#include "ecs_lua.h"
#include "component.h"
#include "names.h"
#include "transform.h"
#include "query.h"
#include "value.h"
#include "system.h"
#include "snapshot.h"
#include "write.h"
#include "column_spec.h"
#include "schema_gen.h"

#define check_text ecs_lua_check_text
#define check_entity ecsl_check_entity
#define push_entity ecs_lua_push_entity
/*
** The world at idx, or an error: "bad argument #idx (ecs.World expected,
** got ...)" or the closed-world one. At index 1 of a world method, self,
** ecsl_l_method checked the class already and only closedness is left
** (ecsl_check_self: the constant index folds the test away); any other
** index is checked whole. Not for index 1 of a function that is not a
** world method (ecs_lua_check_world there).
*/
#define check_world(L, idx) \
  ((idx) == 1 ? ecsl_check_self(L) : ecs_lua_check_world(L, (idx)))
/* the metatable of every world's fields table: { __index = methods } */
#define ECS_LUA_WORLD_FIELDS "ecs.World.fields"

#define self_lworld(L) ((lworld *)lua_touserdata(L, 1))
#define ECS_LUA_TRANSFORM "ecs.Transform"
#define ECS_LUA_NAMES "ecs.Names"
#define ECS_LUA_QUERY "ecs.Query"
#define ECS_LUA_QUERY_ITER "ecs.QueryIterator"
#define ECS_LUA_COLUMNS "ecs.Columns"
#define ECS_LUA_NATIVE "ecs.NativeSystem"
#define COLUMNS_CHUNK 1024u
#define MAX_COLUMNS 64
#define ENTITY_TERM ECS_ENTITY_TERM /* term of q:columns' "entity": read-only */
#define WRITE_BACK_BATCH 64 /* values a write-back pushes, then pops at once */

typedef struct lworld lworld;

/* Class tags and state keys: only their addresses matter. */
extern const char ecsl_world_tag;
extern const char ecsl_comp_tag;
extern const char ecsl_query_tag;
extern const char ecsl_qiter_tag;
extern const char ecsl_columns_tag;
extern const char ecsl_native_tag;
extern const char ecsl_plugin_tag;
extern const char ecsl_observer_tag;
extern const char ecsl_components_key;
extern const char ecsl_refs_key;
extern const char ecsl_plugins_key;
extern const char ecsl_systems_key;
extern const char ecsl_qiter_next_key;

typedef struct lhead {
  const void *self; /* the block's own address */
  const void *cls;  /* &<class>_tag */
  lworld *lw;       /* the world it belongs to (a world: itself) */
} lhead;

struct lworld {
  lhead h;
  ecs_world *w;      /* NULL once closed */
  ecs_world *doomed; /* closed during a call: released when busy drops to 0 */
  unsigned busy;     /* calls in progress */
  uint64_t charged;  /* the core's allocation total already charged (ecsl_charge) */
  uint32_t schema_gen; /* the core's count of redefinitions when the world
                       ** was released (ecsl_world_gen) */
};

/*
** A method: the function, and how to check its self (argument 1): by
** class tag, or for plugin classes by tag and class name.
*/
typedef struct lmethod {
  lua_CFunction fn;
  const void *cls;
  const char *cname; /* for messages; for plugins also the class name */
} lmethod;

typedef struct lcomponent {
  lhead h;             /* h.lw: inside the world userdata (user value 1) */
  lworld *lw;          /* == h.lw */
  ecs_component *c;    /* NULL until registered */
  uint32_t nfields, nlua;
  uint8_t type[];      /* nfields (room for ECS_MAX_FIELDS): each field's
                       ** ecs_type, read without a call into the core;
                       ** changed only by a redefinition */
} lcomponent;

/* A converted field value, before it is written to its column (.i of a
** lua field: its ref). */
typedef ecs_scalar fvalue;

/*
** Making refs for lua fields may raise (a memory error growing the refs
** table) after some were made: make_refs runs under lua_pcall and records
** its progress in a ref_job, so the caller can unref them and re-raise.
*/
typedef struct ref_job {
  uint32_t field[ECS_MAX_FIELDS], ref[ECS_MAX_FIELDS];
  int n, done;
} ref_job;

/*
** The storage of a plugin object follows this header. Lua aligns userdata
** blocks for LUAI_MAXALIGN (a pointer, a double, a lua_Integer), so the
** header is padded to that, not to max_align_t.
*/
typedef union plugin_head {
  struct {
    lhead h;           /* class plugin_tag; h.lw its world */
    const char *tname; /* its class name */
    void *manager;     /* the manager it stands for in queries, or NULL */
  } o;
  double d;
  lua_Integer i;
  void *p;
} plugin_head;

typedef struct ltransform {
  ecs_transform *t;
} ltransform;

/* transform.c: world.transform as a query term, or NULL (not one) */
ecs_component *ecsl_plugin_term(lua_State *L, int idx, lworld *lw,
                                   int arg);

typedef struct lnames {
  ecs_names *m;
} lnames;

typedef struct lquery {
  lhead h;
  lworld *lw; /* == h.lw */
  ecs_query *q;
  uint32_t nwith;
  uint32_t schema_gen; /* lw->schema_gen its cached specs were resolved at */
} lquery;

/* Cache slots in user value 2 of a query */
enum { QC_ITER = 1, QC_COLUMNS = 2, QC_SPECS = 3, QC_EACH = 4, QC_CHUNK = 5 };

typedef struct lqiter {
  lhead h;
  lquery *lq;
  ecs_query_iter it;
  int active;
} lqiter;

typedef ecs_column_spec colspec; /* column_spec.h */

typedef ecs_scalar cvalue;

typedef struct lcolumns {
  lhead h;
  lquery *lq;
  ecs_query_iter it;
  int active;
  uint32_t n;        /* rows of the chunk waiting for write-back (0: none) */
  uint32_t ncols, cap_cols;
  uint32_t schema_gen; /* lw->schema_gen at the loop's start (migrate.c) */
  const char *fname;   /* "q:columns" or "q:each_chunk", for messages */
  colspec col[MAX_COLUMNS];
  ecs_entity *ent;   /* COLUMNS_CHUNK */
  uint32_t *rows;    /* nwith * COLUMNS_CHUNK */
  cvalue *scratch;   /* cap_cols * COLUMNS_CHUNK */
} lcolumns;

typedef struct lnative {
  lhead h; /* no world */
  ecs_system_fn fn;
  void *ud;
  int nspec;
  int parallel; /* ecs_lua_native_parallel: safe on worker threads */
} lnative;


/* object.c */
int ecsl_arg_number(lua_State *L, int arg);
void ecsl_push_traceback(lua_State *L, int last);
int ecsl_prefix_error(lua_State *L, const char *prefix, int last);
void ecsl_class_methods(lua_State *L, const luaL_Reg *methods,
                        const void *cls, const char *cname);
int ecsl_closed(lua_State *L);
const char *ecsl_entity_note(lua_State *L, int idx);
int ecsl_error(lua_State *L, const char *cls, const char *method, ecs_err err,
               const char *detail, int eidx);
void ecsl_init_head(lhead *h, const void *cls, lworld *lw);
int ecsl_l_method(lua_State *L);
int ecsl_object_error(lua_State *L, int idx, const char *cname);
void ecsl_set_methods(lua_State *L, const luaL_Reg *methods, const void *cls, const char *cname);
lworld *ecsl_test_lworld(lua_State *L, int idx);
lworld *ecsl_to_lworld(lua_State *L, int idx);
void ecsl_world_release(lworld *lw);
size_t ecsl_zero_at(const char *s, size_t len);

/* options.c: unknown keys of an option table or list are errors. */
void ecsl_check_keys(lua_State *L, int idx, int arg, const char *fn,
                     const char *const *allowed, bool list);

/*
** The lhead of the userdata at idx if it is of class cls, else NULL.
** lua_touserdata gives NULL for everything but userdata, and lua_rawlen
** 0 for a light userdata: a block of at least an lhead is a full userdata.
*/
static inline lhead *ecsl_test_object(lua_State *L, int idx, const void *cls) {
  lhead *h = (lhead *)lua_touserdata(L, idx);
  if (h == NULL || lua_rawlen(L, idx) < sizeof *h ||
      h->self != (const void *)h || h->cls != cls)
    return NULL;
  return h;
}

/*
** The self (argument 1) of a method, as type T. Every method runs through
** ecsl_l_method (ecsl_set_methods registers nothing else), which checked
** self's class already: a method reads it here and checks nothing more of
** it but whether its world is closed. Only for methods: a metamethod or a
** function that takes an object elsewhere checks it (ecsl_test_object).
*/
#define ecsl_self(L, T) ((T *)lua_touserdata(L, 1))

/* The world of a world method (self is argument 1), or the closed-world
** error. */
static inline ecs_world *ecsl_check_self(lua_State *L) {
  ecs_world *w = ecsl_self(L, lworld)->w;
  if (w == NULL) ecsl_closed(L);
  return w;
}

/*
** ecs_lua_check_entity inline, for the methods that take an entity on
** every call (the same test: a light userdata with the entity tag and an
** id within 30 bits; the same type error).
*/
static inline ecs_entity ecsl_check_entity(lua_State *L, int idx) {
  uintptr_t v = (uintptr_t)lua_touserdata(L, idx);
  if (lua_type(L, idx) != LUA_TLIGHTUSERDATA ||
      (v & ECS_LUA_TAG_MASK) != ECS_LUA_TAG_ENTITY ||
      (v >> ECS_LUA_TAG_BITS) > ECS_ID_MASK)
    luaL_typeerror(L, idx, "entity");
  return (ecs_entity)(v >> ECS_LUA_TAG_BITS);
}

/*
** The counts of redefinitions (schema_gen.h) of the world of lw and of
** the component of lc: values, cached specs and plans read under one are
** stale when it moved (ecsl_redefined). A world closed during the call in
** progress is still there (doomed) until the call returns, and its
** counts with it; a released world keeps the count it had.
*/
static inline uint32_t ecsl_world_gen(const lworld *lw) {
  const ecs_world *w = lw->w != NULL ? lw->w : lw->doomed;
  return w != NULL ? ecs_world_schema_gen(w) : lw->schema_gen;
}
static inline uint32_t ecsl_comp_gen(const lcomponent *lc) {
  const lworld *lw = lc->lw;
  return lw->w != NULL || lw->doomed != NULL ? ecs_component_schema_gen(lc->c)
                                             : 0;
}

/* entity.c */
int ecsl_l_entity(lua_State *L);
int ecsl_l_generation(lua_State *L);
int ecsl_l_id(lua_State *L);
int ecsl_l_index(lua_State *L);
int ecsl_l_is_entity(lua_State *L);
int ecsl_l_tostring(lua_State *L);

/* world.c */
void ecsl_charge(lua_State *L, lworld *lw);
int ecsl_l_world_alive(lua_State *L);
int ecsl_l_world_check(lua_State *L);
int ecsl_l_world_close(lua_State *L);
int ecsl_l_world_count(lua_State *L);
int ecsl_l_world_create(lua_State *L);
int ecsl_l_world_destroy(lua_State *L);
int ecsl_l_world_disable(lua_State *L);
int ecsl_l_world_enable(lua_State *L);
int ecsl_l_world_enabled(lua_State *L);
int ecsl_l_world_entities(lua_State *L);
int ecsl_l_world_gc(lua_State *L);
int ecsl_l_world_memory(lua_State *L);
int ecsl_l_world_managers(lua_State *L);
int ecsl_l_world_new(lua_State *L);
int ecsl_l_world_tostring(lua_State *L);
int ecsl_l_world_update(lua_State *L);

/* component.c */
void ecsl_components_world_closed(lua_State *L, int widx);
int ecsl_is_comp(lua_State *L, int idx);
int ecsl_l_world_component(lua_State *L);
int ecsl_l_world_components(lua_State *L);

/* migrate.c (and the loops that must stop when a component of theirs is
** redefined: q:columns, q:each) */
#define ECSL_REDEFINED_TEXT "a component was redefined during the loop"
/* Raise "<Comp>:<fn>: <Comp> was redefined during the call ...": a
** finalizer, run by an allocation between reading values and writing
** them, redefined the component (the values follow the old schema). */
int ecsl_redefined(lua_State *L, const char *cls, const char *fn,
                   const lcomponent *lc);

int ecsl_component_redefine(lua_State *L, int comp, const ecs_field_def *defs,
                            uint32_t n, const uint8_t *cleanup, int index,
                            int opts);
void ecsl_restore_migrate(lua_State *L);
void ecsl_need_state_field(lua_State *L, int widx, const void *key);
void ecsl_open_components(lua_State *L);
int ecsl_push_state_field(lua_State *L, int widx, const void *key);

/* observer.c */
int ecsl_l_on_add(lua_State *L);
int ecsl_l_on_remove(lua_State *L);
int ecsl_l_on_set(lua_State *L);
void ecsl_observer_reraise(lua_State *L);
void ecsl_open_observers(lua_State *L);

/* field.c */
uint32_t ecsl_check_field(lua_State *L, const lcomponent *lc, int idx, const char *fn);
void ecsl_check_value(lua_State *L, int idx, const lcomponent *lc, const char *fn, uint32_t k, fvalue *out);
const char *ecsl_value_type_name(lua_State *L, int idx);

/*
** Field values between Lua and a column, inline: get, field, set and
** set_field convert one value per field and call, and q:columns one per
** row, so none of them makes a call for it (the value layer's inline
** bodies, value.h).
*/

/* Push value v of a field of type t; refs is the refs table's index. */
static inline void ecsl_push_scalar(lua_State *L, ecs_type t, ecs_scalar v,
                                    int refs) {
  switch (ecs_type_kind_inline(t)) {
  case ECS_KIND_FLOAT: lua_pushnumber(L, (lua_Number)v.f); break;
  case ECS_KIND_INT: lua_pushinteger(L, (lua_Integer)v.i); break;
  case ECS_KIND_BOOL: lua_pushboolean(L, v.i != 0); break;
  case ECS_KIND_ENTITY: push_entity(L, (ecs_entity)v.i); break;
  case ECS_KIND_REF:
    if (v.i == 0 || refs == 0) lua_pushnil(L);
    else lua_rawgeti(L, refs, (lua_Integer)v.i);
    break;
  default: lua_pushnil(L); break;
  }
}

/* Push field k of instance i of the manager lc; refs is the refs table's
** index (or 0). */
static inline void ecsl_push_field(lua_State *L, const lcomponent *lc,
                                   uint32_t k, ecs_instance i, int refs) {
  ecs_type t = (ecs_type)lc->type[k];
  ecsl_push_scalar(L, t, ecs_value_load_inline(ecs_component_column(lc->c, k),
                                               t, i), refs);
}

/* Write the converted value v (ecsl_check_value) of field k at instance i. */
static inline void ecsl_write_value(const lcomponent *lc, uint32_t k,
                                    ecs_instance i, const fvalue *v) {
  ecs_type t = (ecs_type)lc->type[k];
  ecs_scalar s;
  if (ecs_type_kind_inline(t) == ECS_KIND_FLOAT) s.f = v->f;
  else s.i = v->i;
  ecs_value_store_inline(ecs_component_column(lc->c, k), t, i, s);
}

/* plugin.c */
void ecsl_open_api(lua_State *L);
lhead *ecsl_test_plugin(lua_State *L, int idx, const char *tname);

/* transform.c */
void ecsl_open_builtins(lua_State *L);
void ecsl_open_world_fields(lua_State *L, int widx);

/* query.c */
lquery *ecsl_check_query(lua_State *L, int idx);
int ecsl_l_qiter_close(lua_State *L);
int ecsl_l_qiter_next(lua_State *L);
int ecsl_l_query_apply(lua_State *L);
int ecsl_l_query_components(lua_State *L);
int ecsl_l_query_count(lua_State *L);
int ecsl_l_query_entities(lua_State *L);
int ecsl_l_query_gc(lua_State *L);
int ecsl_l_query_programs(lua_State *L);
int ecsl_l_query_tostring(lua_State *L);
int ecsl_l_world_query(lua_State *L);
ecs_program *ecsl_program_params(lua_State *L, int qidx, int sidx, int pidx, double *v, int has_dt, double dt, const char *fn);
int ecsl_push_query_cache(lua_State *L, int qidx, int k);
int ecsl_query_fail(lua_State *L, const char *fn, ecs_err err);
/* pointers.c: q:pointers (LuaJIT's FFI) */
int ecsl_l_query_pointers(lua_State *L);

/* columns.c */
colspec ecsl_check_spec(lua_State *L, int qidx, int idx, const char *fn);
int ecsl_l_columns_close(lua_State *L);
int ecsl_l_columns_gc(lua_State *L);
int ecsl_l_query_columns(lua_State *L);
int ecsl_l_query_each_chunk(lua_State *L);
const char *ecsl_to_cvalue(lua_State *L, int idx, int t, ecs_type ty, cvalue *o);

/* journal.c */
int ecsl_l_world_journal(lua_State *L);
int ecsl_l_world_apply_delta(lua_State *L);
int ecsl_l_world_state_hash(lua_State *L);
void ecsl_open_journals(lua_State *L);

/* snapshot.c */
int ecsl_l_restore(lua_State *L);
void ecsl_open_snapshot(lua_State *L, int bidx, ecs_snapshot *s,
                        const char *fn);
void ecsl_restore_into(lua_State *L, int widx, int bidx, const ecs_snapshot *s,
                       const char *fn, bool skip_unknown);
/* Raise the error at the top again, a message of the calls world:restore
** makes ("ecs.restore: ...", "world:component: ...") named world:restore. */
int ecsl_restore_error(lua_State *L);
void ecsl_call_method(lua_State *L, int oidx, const char *method, int nargs,
                      int nresults);
int ecsl_l_world_find_component(lua_State *L);
lcomponent *ecsl_push_component(lua_State *L, int widx, const ecs_component *c);
int ecsl_l_world_restore(lua_State *L);
int ecsl_l_world_snapshot(lua_State *L);
void ecsl_snapshot_world_closed(lua_State *L, int widx);

/* inspect.c */
int ecsl_l_world_inspect(lua_State *L);

/* each.c */
int ecsl_l_query_each(lua_State *L);

/* native.c */
int ecsl_l_native_tostring(lua_State *L);
int ecsl_l_query_run(lua_State *L);

/* system.c */
const char *ecsl_check_systems(lua_State *L, ecs_world *w);
int ecsl_l_world_remove_system(lua_State *L);
int ecsl_l_world_reset_stats(lua_State *L);
int ecsl_l_world_stats(lua_State *L);
int ecsl_l_world_system(lua_State *L);
int ecsl_l_world_replace_system(lua_State *L);
int ecsl_l_world_enable_system(lua_State *L);

/* many.c */
bool ecsl_ref_n(lua_State *L, int refs, int vidx, uint32_t *out, lua_Integer n);
int ecsl_l_comp_get_many(lua_State *L);
int ecsl_l_comp_set_many(lua_State *L);

/* spawn.c */
int ecsl_l_world_spawn(lua_State *L);
int ecsl_l_world_prefab(lua_State *L);
int ecsl_l_world_clone(lua_State *L);
void ecsl_open_spawn(lua_State *L);
int ecsl_l_world_systems(lua_State *L);
void ecsl_open_queries(lua_State *L);
int ecsl_run_systems(lua_State *L, double dt, const char *phase);

#endif
