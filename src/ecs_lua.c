/*
** ecs_lua.c -- the Lua binding: module ecs.core.
**
** The only file of the core that includes lua.h. It is thin: it checks
** arguments, calls the core and converts results. Error policy (STYLE.md):
** wrong types raise through luaL_argerror/luaL_typeerror; misuse of a valid
** value raises "<function>: <message>" with the core's fixed message;
** predicates never raise for a well-formed handle that is dead or null.
**
** C state is finished before any Lua API call that can raise, so an error
** never leaves a world half-changed.
*/
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"

#include "ecs.h"
#include "ecs_lua.h"
#include "component.h"
#include "names.h"     /* transform branch */
#include "transform.h" /* transform branch */
#include "query.h"     /* queries section */

/* ======================================================================
** Entity handles
** ==================================================================== */

int ecs_lua_is_entity(lua_State *L, int idx) {
  uintptr_t v;
  if (lua_type(L, idx) != LUA_TLIGHTUSERDATA) return 0;
  v = (uintptr_t)lua_touserdata(L, idx);
  return (v & ECS_LUA_TAG_MASK) == ECS_LUA_TAG_ENTITY &&
         (v >> ECS_LUA_TAG_BITS) <= ECS_ID_MASK;
}

ecs_entity ecs_lua_check_entity(lua_State *L, int idx) {
  if (!ecs_lua_is_entity(L, idx)) luaL_typeerror(L, idx, "entity");
  return (ecs_entity)((uintptr_t)lua_touserdata(L, idx) >> ECS_LUA_TAG_BITS);
}

int ecs_lua_error(lua_State *L, const char *fname, ecs_err err) {
  return luaL_error(L, "%s: %s", fname, ecs_strerror(err));
}

/* ======================================================================
** Strings from Lua
**
** A Lua string carries its length and may hold zero bytes; names, schemas,
** column specs and expressions are text that a zero byte would end early
** (C functions, %s in messages) or make into a name nobody can type. Every
** string that reaches the core or a parser is checked here: a zero byte is
** an error, never a silent truncation.
** ==================================================================== */

/* 1 + the offset of the first zero byte of s, or 0 when there is none. */
static size_t zero_at(const char *s, size_t len) {
  const char *z = (const char *)memchr(s, 0, len);
  return z == NULL ? 0 : (size_t)(z - s) + 1u;
}

const char *ecs_lua_check_text(lua_State *L, int idx, size_t *len,
                               const char *fn) {
  size_t n, at;
  const char *s;
  if (lua_type(L, idx) != LUA_TSTRING) luaL_typeerror(L, idx, "string");
  s = lua_tolstring(L, idx, &n);
  if ((at = zero_at(s, n)) != 0)
    luaL_argerror(L, idx, lua_pushfstring(L, "%s: string contains an "
                  "embedded zero at position %I", fn, (lua_Integer)at));
  if (len != NULL) *len = n;
  return s;
}

#define check_text ecs_lua_check_text

#define check_entity ecs_lua_check_entity
#define push_entity ecs_lua_push_entity

/* ecs.is_entity(v) -> boolean; any value, never raises */
static int l_is_entity(lua_State *L) {
  luaL_checkany(L, 1);
  lua_pushboolean(L, ecs_lua_is_entity(L, 1));
  return 1;
}

/* ecs.id(e) -> integer */
static int l_id(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_entity(L, 1));
  return 1;
}

/* ecs.entity(id) -> handle (no liveness check) */
static int l_entity(lua_State *L) {
  lua_Integer id = luaL_checkinteger(L, 1);
  luaL_argcheck(L, id >= 0 && id <= (lua_Integer)ECS_ID_MASK, 1,
                "id out of range (0 to 1073741823)");
  push_entity(L, (ecs_entity)id);
  return 1;
}

/* ecs.index(e) -> integer */
static int l_index(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_entity_index(check_entity(L, 1)));
  return 1;
}

/* ecs.generation(e) -> integer */
static int l_generation(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_entity_generation(check_entity(L, 1)));
  return 1;
}

/* ecs.tostring(e) -> "entity(index.generation)" */
static int l_tostring(lua_State *L) {
  ecs_entity e = check_entity(L, 1);
  lua_pushfstring(L, "entity(%d.%d)", (int)ecs_entity_index(e),
                  (int)ecs_entity_generation(e));
  return 1;
}

/* ======================================================================
** Objects and calls in progress
**
** Every full userdata the binding hands to Lua (worlds, component
** managers, queries and their iteration states, native systems, plugin
** objects) begins with an lhead: its own address and its class tag. A
** userdata of another library that debug.setmetatable gave one of our
** metatables carries neither, so it is refused with a type error instead
** of being read as ours (every self is checked this way, not by its
** metatable).
**
** A world counts the calls in progress on it (busy). Methods run through
** one wrapper (l_method) that checks self and counts the call. A call may
** run Lua code it does not control: a finalizer at any allocation, a
** metamethod of a user table. If that code closes the world, the world
** is marked closed at once (every method then raises the closed-world
** error) but its core memory is released only when the last call in
** progress returns, so no call is left holding pointers into freed
** memory. A call that ends in an error does not return through the
** wrapper; its count then stays, and the memory of a world closed later
** is released by the world's __gc instead (never earlier than safe).
** Calls that run user code on purpose (Lua systems) uncount themselves
** around it: they hold no core pointer across it.
** ==================================================================== */

typedef struct lworld lworld;

typedef struct lhead {
  const void *self; /* the block's own address */
  const void *cls;  /* &<class>_tag */
  lworld *lw;       /* the world it belongs to (a world: itself) */
} lhead;

/* Class tags: only their addresses matter. */
static const char world_tag = 'w';
static const char comp_tag = 'c';
static const char query_tag = 'q';
static const char qiter_tag = 'i';
static const char columns_tag = 'k';
static const char native_tag = 'n';
static const char plugin_tag = 'p';

/* ======================================================================
** Worlds
**
** A world userdata holds the ecs_world pointer (NULL once closed) and has
** one user value: a table the binding keeps its Lua-side state in
** (component managers, transform and names objects, systems, Lua values of
** "lua" fields). Objects that belong to a world (managers, queries) hold
** the world userdata as their own user value, so the world outlives them
** and they can see whether it was closed.
** ==================================================================== */

struct lworld {
  lhead h;
  ecs_world *w;      /* NULL once closed */
  ecs_world *doomed; /* closed during a call: released when busy drops to 0 */
  unsigned busy;     /* calls in progress */
  uint64_t charged;  /* the core's allocation total already charged (charge) */
};

static void init_head(lhead *h, const void *cls, lworld *lw) {
  h->self = h;
  h->cls = cls;
  h->lw = lw;
}

/* The lhead of the userdata at idx if it is of class cls, else NULL. */
static lhead *test_object(lua_State *L, int idx, const void *cls) {
  lhead *h = (lhead *)lua_touserdata(L, idx);
  if (h == NULL || lua_type(L, idx) != LUA_TUSERDATA ||
      lua_rawlen(L, idx) < sizeof *h || h->self != (const void *)h ||
      h->cls != cls)
    return NULL;
  return h;
}

/* The type name luaL_typeerror would use: __name, or the basic type. */
static const char *value_type_name(lua_State *L, int idx);

/*
** Raise "bad argument #idx (<cname> expected, got <what>)"; a userdata
** wearing one of our metatables without being ours is called that, not
** by the class name it borrowed.
*/
static int object_error(lua_State *L, int idx, const char *cname) {
  const char *got = value_type_name(L, idx);
  if (lua_type(L, idx) == LUA_TUSERDATA && strcmp(got, cname) == 0)
    got = lua_pushfstring(L, "a userdata with a borrowed %s metatable", cname);
  return luaL_argerror(L, idx, lua_pushfstring(L, "%s expected, got %s", cname, got));
}

static lworld *test_lworld(lua_State *L, int idx) {
  return (lworld *)test_object(L, idx, &world_tag);
}

static lworld *to_lworld(lua_State *L, int idx) {
  lworld *lw = test_lworld(L, idx);
  if (lw == NULL) object_error(L, idx, ECS_LUA_WORLD);
  return lw;
}

#define CLOSED_WORLD "attempt to use a closed world"

ecs_world *ecs_lua_check_world(lua_State *L, int idx) {
  lworld *lw = to_lworld(L, idx);
  if (lw->w == NULL) luaL_error(L, CLOSED_WORLD);
  return lw->w;
}

/* The world's own methods: self is argument 1. */
static ecs_world *check_self(lua_State *L) {
  return ecs_lua_check_world(L, 1);
}

#define check_world(L, idx) check_self(L)

/* Release the core world of a closed world once no call is in progress. */
static void world_release(lworld *lw) {
  ecs_world *w = lw->doomed;
  lw->doomed = NULL;
  ecs_world_free(w);
}

static void world_enter(lworld *lw) { lw->busy++; }

static void world_leave(lworld *lw) {
  if (--lw->busy == 0 && lw->doomed != NULL) world_release(lw);
}

/*
** A method: the function, and how to check its self (argument 1): by
** class tag, or for plugin classes by tag and class name.
*/
typedef struct lmethod {
  lua_CFunction fn;
  const void *cls;
  const char *cname; /* for messages; for plugins also the class name */
} lmethod;

static lhead *test_plugin(lua_State *L, int idx, const char *tname);

/* Every method runs through here: check self, count the call. */
static int l_method(lua_State *L) {
  const lmethod *m = (const lmethod *)lua_touserdata(L, lua_upvalueindex(1));
  lhead *h = m->cls == &plugin_tag ? test_plugin(L, 1, m->cname)
                                     : test_object(L, 1, m->cls);
  lworld *lw;
  int n;
  if (h == NULL) return object_error(L, 1, m->cname);
  if ((lw = h->lw) == NULL) return m->fn(L); /* an object of no world */
  world_enter(lw);
  n = m->fn(L);
  world_leave(lw);
  return n;
}

/* Set the methods into the table on top of the stack, each wrapped. */
static void set_methods(lua_State *L, const luaL_Reg *methods,
                        const void *cls, const char *cname) {
  for (; methods->name != NULL; methods++) {
    lmethod *m = (lmethod *)lua_newuserdatauv(L, sizeof *m, 0);
    m->fn = methods->func;
    m->cls = cls;
    m->cname = cname;
    lua_pushcclosure(L, l_method, 1);
    lua_setfield(L, -2, methods->name);
  }
}

void *ecs_lua_enter(lua_State *L, int idx) {
  lhead *h = (lhead *)lua_touserdata(L, idx);
  if (h == NULL || lua_type(L, idx) != LUA_TUSERDATA ||
      lua_rawlen(L, idx) < sizeof *h || h->self != (const void *)h ||
      h->lw == NULL || h->lw->h.self != (const void *)h->lw)
    luaL_argerror(L, idx, "ecs object expected");
  world_enter(h->lw);
  return h->lw;
}

void ecs_lua_leave(void *token) {
  if (token != NULL) world_leave((lworld *)token);
}
/* The world of a method that began with check_self (index 1 is a world). */
#define self_lworld(L) ((lworld *)lua_touserdata(L, 1))

/*
** Lua's allocator, passed to the core so that a host's allocator (a memory
** limit, a test host's failing allocator) sees every block the core
** allocates. Lua's collector does not: blocks from lua_getallocf are
** outside its count (collectgarbage("count")), hence charge below.
*/
static ecs_world *new_core_world(lua_State *L) {
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  return ecs_world_new(f, ud);
}

/*
** Charge the world's new C memory to Lua's collector: what the core has
** allocated since the last charge is added to the collector's debt
** (LUA_GCSTEP with a size in KB), as if Lua had allocated it, so objects
** that own C memory (queries and their match lists, worlds) are collected
** at the pace their memory is made. Frees are not credited (as in Lua).
** The step may run finalizers, i.e. any Lua code, even world:close: call
** this only where the binding holds no core pointer it will use again,
** just before a method returns. Skipped while the collector is stopped
** (LUA_GCSTEP would run it anyway) or inside a finalizer (lua_gc is then
** refused: it returns -1).
*/
static void charge(lua_State *L, lworld *lw) {
  uint64_t total, kb;
  if (lw->w == NULL) return;
  ecs_world_memory(lw->w, &total);
  kb = (total - lw->charged) / 1024u;
  if (kb == 0) return;
  lw->charged += kb * 1024u; /* the remainder waits for the next charge */
  if (lua_gc(L, LUA_GCISRUNNING) <= 0) return;
  lua_gc(L, LUA_GCSTEP, kb > (uint64_t)INT_MAX ? INT_MAX : (int)kb);
}

#define ECS_LUA_WORLD_FIELDS "ecs.World.fields"
static void open_world_fields(lua_State *L, int widx); /* transform section */

/*
** ecs.world([options]) -> world
** The userdata is created closed (w == NULL) with its state table, and only
** then is the core world allocated, so a memory error at any point leaves
** nothing to leak: __gc of a closed world does nothing.
*/
static int l_world_new(lua_State *L) {
  lworld *lw;
  if (!lua_isnoneornil(L, 1)) luaL_checktype(L, 1, LUA_TTABLE);
  lw = (lworld *)lua_newuserdatauv(L, sizeof *lw, 1); /* world */
  memset(lw, 0, sizeof *lw);
  init_head(&lw->h, &world_tag, lw);
  /* its own metatable: a copy of the template, __index = fields table */
  lua_createtable(L, 0, 10);                             /* world, mt */
  luaL_getmetatable(L, ECS_LUA_WORLD);                   /* world, mt, tpl */
  lua_pushnil(L);
  while (lua_next(L, -2)) {                              /* ..., tpl, k, v */
    lua_pushvalue(L, -2);
    lua_insert(L, -2);                                   /* ..., tpl, k, k, v */
    lua_rawset(L, -5);
  }
  lua_pop(L, 1);                                         /* world, mt */
  lua_newtable(L);                                       /* world, mt, fields */
  luaL_getmetatable(L, ECS_LUA_WORLD_FIELDS);            /* {__index=methods} */
  lua_setmetatable(L, -2);
  lua_setfield(L, -2, "__index");                        /* world, mt */
  lua_setmetatable(L, -2);                               /* world */
  lua_newtable(L);                                       /* world, state */
  lua_setiuservalue(L, -2, 1);                           /* world */
  lw->w = new_core_world(L);
  if (lw->w == NULL) return luaL_error(L, "ecs.world: not enough memory");
  open_world_fields(L, lua_gettop(L));
  charge(L, lw);
  return 1;
}

static void components_world_closed(lua_State *L, int widx); /* components section */

/*
** world:close(); also __close. Idempotent. The world is closed at once;
** its core memory goes now, or when the calls in progress on it return.
*/
static int l_world_close(lua_State *L) {
  lworld *lw = to_lworld(L, 1);
  if (lw->w != NULL) {
    lw->doomed = lw->w;
    lw->w = NULL;
    components_world_closed(L, 1); /* components section */
    if (lw->busy == 0) world_release(lw);
  }
  return 0;
}

/*
** __gc: nothing can be running on an unreachable world (every call keeps
** its self, which keeps the world, on the stack), so release everything.
*/
static int l_world_gc(lua_State *L) {
  lworld *lw = to_lworld(L, 1);
  l_world_close(L);
  if (lw->doomed != NULL) world_release(lw);
  return 0;
}

/* world:create() -> e;  world:create(n) -> { e1, ..., en } */
static int l_world_create(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  ecs_err err;
  if (lua_isnoneornil(L, 2)) {
    ecs_entity e;
    err = ecs_create(w, &e);
    if (err != ECS_ERR_OK) return ecs_lua_error(L, "world:create", err);
    push_entity(L, e);
    charge(L, self_lworld(L));
    return 1;
  } else {
    lua_Integer n = luaL_checkinteger(L, 2);
    ecs_entity *buf;
    luaL_argcheck(L, n >= 0, 2, "count must not be negative");
    if (n > (lua_Integer)ECS_MAX_ENTITIES)
      return ecs_lua_error(L, "world:create", ECS_ERR_FULL);
    /* allocate everything that can raise before creating anything */
    lua_createtable(L, (int)n, 0);                       /* ..., list */
    buf = (ecs_entity *)lua_newuserdatauv(L, (size_t)n * sizeof *buf, 0);
    /* an allocation may run a finalizer that closes the world: look again */
    w = ecs_lua_check_world(L, 1);
    err = ecs_create_n(w, buf, (size_t)n);
    if (err != ECS_ERR_OK) return ecs_lua_error(L, "world:create", err);
    for (lua_Integer i = 0; i < n; i++) { /* array part is preallocated */
      push_entity(L, buf[i]);
      lua_rawseti(L, -3, i + 1);
    }
    lua_pop(L, 1);                                       /* ..., list */
    charge(L, self_lworld(L));
    return 1;
  }
}

/*
** world:destroy(e) -> boolean;  world:destroy({ e1, ... }) -> number
** A list is checked whole before anything is destroyed.
*/
static int l_world_destroy(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, 2), done = 0;
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, 2, i);
      if (!ecs_lua_is_entity(L, -1))
        return luaL_error(L, "bad argument #1 to 'destroy' (entity expected "
                          "at index %d, got %s)", (int)i, luaL_typename(L, -1));
      lua_pop(L, 1);
    }
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, 2, i);
      done += ecs_destroy(w, check_entity(L, -1));
      lua_pop(L, 1);
    }
    lua_pushinteger(L, done);
    return 1;
  }
  lua_pushboolean(L, ecs_destroy(w, check_entity(L, 2)));
  return 1;
}

/* world:alive(e) -> boolean */
static int l_world_alive(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  lua_pushboolean(L, ecs_alive(w, check_entity(L, 2)));
  return 1;
}

/* world:count() -> live entities */
static int l_world_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_count(check_world(L, 1)));
  return 1;
}

/* world:memory() -> bytes of C memory the world holds (ecs_world_memory) */
static int l_world_memory(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_world_memory(check_world(L, 1), NULL));
  return 1;
}

/*
** world:entities() -> iterator over live entities, in index order.
** Stateless: the control value is the last entity returned, so the loop
** allocates nothing. Destroying entities during the loop is allowed;
** entities created during it are visited if they take a higher index.
*/
static int l_world_entities_next(lua_State *L) {
  ecs_world *w = ecs_lua_check_world(L, 1);
  uint32_t cursor = 0;
  ecs_entity e;
  if (!lua_isnil(L, 2)) cursor = ecs_entity_index(check_entity(L, 2)) + 1u;
  if (!ecs_next_entity(w, &cursor, &e)) return 0;
  push_entity(L, e);
  return 1;
}

static int l_world_entities(lua_State *L) {
  check_world(L, 1);
  lua_pushcfunction(L, l_world_entities_next);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

/* world:check() -> true, or false and the first violated invariant */
static int l_world_check(lua_State *L) {
  const char *bad = ecs_world_check(check_world(L, 1));
  if (bad == NULL) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  lua_pushstring(L, bad);
  return 2;
}

/* Budget of dead records each manager reclaims per world:update. */
#define UPDATE_GC_BUDGET 64u

static void run_systems(lua_State *L, double dt); /* queries section */

/*
** world:update([dt]) -- runs every system once in registration order, then
** a budgeted gc of every manager
*/
static int l_world_update(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  double dt = (double)luaL_optnumber(L, 2, 0.0);
  lua_settop(L, 2);
  run_systems(L, dt);
  if ((w = to_lworld(L, 1)->w) == NULL) return 0; /* a system closed it */
  ecs_world_gc(w, UPDATE_GC_BUDGET);
  ecs_lua_drain_refs(L, 1); /* components section: release dropped values */
  charge(L, self_lworld(L)); /* the systems' growth, and plugins' since */
  return 0;
}

/* world:__tostring() */
static int l_world_tostring(lua_State *L) {
  lworld *lw = to_lworld(L, 1);
  if (lw->w == NULL) lua_pushliteral(L, "ecs.World (closed)");
  else lua_pushfstring(L, "ecs.World (%p)", (void *)lw);
  return 1;
}

/* ======================================================================
** Component managers and C plugins (components branch, issue #3)
**
** world:component(name, schema) creates a core manager (component.h) and
** its Lua object, a full userdata of class ECS_LUA_COMPONENT:
**   user value 1: the world userdata (keeps it alive; closed check),
**   user value 2: { field name = field number } -- names are resolved by
**                 one table lookup, never by comparing strings.
** The world's state table holds, under light-userdata keys (no string
** is created, so nothing there can fail at close or in __gc):
**   [&components_key] = { [1..n] = managers in creation order },
**   [&refs_key]       = table of the Lua values of "lua" fields, indexed
**                       by luaL_ref; the core stores those refs.
** Values of "lua" fields are thus reachable by Lua's GC while an instance
** holds them; the core reports the refs of instances it drops, and
** drain_refs unrefs them after every call that can drop some.
** ==================================================================== */

static const char components_key = 'c';
static const char refs_key = 'r';
static const char plugins_key = 'p';

typedef struct lcomponent {
  lhead h;             /* h.lw: inside the world userdata (user value 1) */
  lworld *lw;          /* == h.lw */
  ecs_component *c;    /* NULL until registered */
  uint32_t nfields, nlua;
} lcomponent;

/* A converted field value, before it is written to its column. */
typedef union fvalue {
  double f;
  int64_t i;
  uint32_t ref;
} fvalue;

/* Unref every dropped lua ref of w; refs is the refs table's index. */
static void drain_refs_at(lua_State *L, ecs_world *w, int refs) {
  uint32_t buf[64];
  size_t n;
  do {
    n = ecs_drain_refs(w, buf, sizeof buf / sizeof buf[0]);
    for (size_t k = 0; k < n; k++) luaL_unref(L, refs, (int)buf[k]);
  } while (n == sizeof buf / sizeof buf[0]);
}

/* Push the table under key in the state of the world at widx (or nil). */
static int push_state_field(lua_State *L, int widx, const void *key) {
  int t;
  lua_getiuservalue(L, widx, 1);                          /* state */
  t = lua_rawgetp(L, -1, key);                            /* state, v */
  lua_remove(L, -2);                                      /* v */
  return t;
}

/* Push the table under key in the world's state, creating it. */
static void need_state_field(lua_State *L, int widx, const void *key) {
  if (push_state_field(L, widx, key) != LUA_TNIL) return;
  lua_pop(L, 1);
  lua_getiuservalue(L, widx, 1);                          /* state */
  lua_newtable(L);                                        /* state, t */
  lua_pushvalue(L, -1);
  lua_rawsetp(L, -3, key);
  lua_remove(L, -2);                                      /* t */
}

void ecs_lua_drain_refs(lua_State *L, int world_idx) {
  lworld *lw = test_lworld(L, world_idx);
  if (lw == NULL || lw->w == NULL || ecs_dropped_refs(lw->w) == 0) return;
  world_idx = lua_absindex(L, world_idx);
  if (push_state_field(L, world_idx, &refs_key) == LUA_TTABLE)
    drain_refs_at(L, lw->w, lua_gettop(L));
  lua_pop(L, 1);
}

/*
** Called by world:close before the core world goes: forget the Lua values
** of "lua" fields, so they are collectable even while the world userdata
** or its managers are still referenced. Assigning nil to an existing key
** never allocates, so this cannot raise (close is also __gc).
*/
static void components_world_closed(lua_State *L, int widx) {
  lua_getiuservalue(L, widx, 1);                          /* state */
  if (lua_type(L, -1) == LUA_TTABLE) {
    if (lua_rawgetp(L, -1, &refs_key) != LUA_TNIL) {
      lua_pushnil(L);
      lua_rawsetp(L, -3, &refs_key);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/*
** Each manager has its own metatable (so that its __index table can hold
** its name next to the methods, and a method call is one table lookup);
** __name is "ecs.Component". A manager is recognised by its lhead.
*/

/* True when the value at idx is a component manager (never raises). */
static int is_comp(lua_State *L, int idx) {
  return test_object(L, idx, &comp_tag) != NULL;
}

static lcomponent *to_comp(lua_State *L, int idx) {
  lcomponent *lc = (lcomponent *)test_object(L, idx, &comp_tag);
  if (lc == NULL) object_error(L, idx, ECS_LUA_COMPONENT);
  return lc;
}

/* The manager at idx with its world open. */
static lcomponent *check_comp(lua_State *L, int idx, ecs_world **w) {
  lcomponent *lc = to_comp(L, idx);
  if (lc->c == NULL || lc->lw->w == NULL)
    luaL_error(L, CLOSED_WORLD);
  *w = lc->lw->w;
  return lc;
}

ecs_component *ecs_lua_check_component(lua_State *L, int idx, ecs_world **w) {
  ecs_world *cw;
  lcomponent *lc = check_comp(L, idx, &cw);
  if (w != NULL) *w = cw;
  return lc->c;
}

/* Push the refs table of the manager at idx (it exists when nlua > 0). */
static int push_comp_refs(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 1);                           /* world */
  push_state_field(L, lua_gettop(L), &refs_key);          /* world, refs */
  lua_remove(L, -2);                                      /* refs */
  return lua_gettop(L);
}

static void drain_comp(lua_State *L, const lcomponent *lc, ecs_world *w) {
  if (lc->nlua == 0 || ecs_dropped_refs(w) == 0) return;
  push_comp_refs(L, 1);
  drain_refs_at(L, w, lua_gettop(L));
  lua_pop(L, 1);
}

static int comp_error(lua_State *L, const lcomponent *lc, const char *fn,
                      ecs_err err) {
  return luaL_error(L, "%s:%s: %s", ecs_component_name(lc->c), fn,
                    ecs_strerror(err));
}

/* The type name luaL_typeerror would use: __name, or the basic type. */
static const char *value_type_name(lua_State *L, int idx) {
  const char *name;
  if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING) {
    name = lua_tostring(L, -1); /* kept alive by the metatable */
    lua_pop(L, 1);
    return name;
  }
  if (lua_type(L, idx) == LUA_TLIGHTUSERDATA) return "light userdata";
  return luaL_typename(L, idx);
}

/* Inclusive ranges of the integer types, indexed by ecs_type. */
static const int64_t int_min[ECS_TYPE__COUNT] = {
  [ECS_I8] = INT8_MIN, [ECS_I16] = INT16_MIN, [ECS_I32] = INT32_MIN,
  [ECS_I64] = INT64_MIN
};
static const int64_t int_max[ECS_TYPE__COUNT] = {
  [ECS_I8] = INT8_MAX, [ECS_I16] = INT16_MAX, [ECS_I32] = INT32_MAX,
  [ECS_I64] = INT64_MAX, [ECS_U8] = UINT8_MAX, [ECS_U16] = UINT16_MAX,
  [ECS_U32] = UINT32_MAX
};

/*
** Convert the value at idx for field k (nil and none give zero: 0, false,
** ecs.null, nil). Numbers must be numbers (no string coercion); integer
** fields take integral values in range by Lua's own conversion
** (math.tointeger); an f32 field stores the nearest float, magnitudes
** beyond FLT_MAX becoming +-inf; bool takes booleans; entity takes
** handles. Errors name the manager, method and field.
*/
static void check_value(lua_State *L, int idx, const lcomponent *lc,
                        const char *fn, uint32_t k, fvalue *out) {
  const ecs_field_def *f = ecs_component_field(lc->c, k);
  int t = lua_type(L, idx);
  const char *expect;
  out->i = 0;
  if (t == LUA_TNIL || t == LUA_TNONE) return;
  switch (f->type) {
  case ECS_F32: case ECS_F64:
    if (t != LUA_TNUMBER) { expect = "a number"; break; }
    out->f = (double)lua_tonumber(L, idx);
    if (f->type == ECS_F32) {
      if (out->f > (double)FLT_MAX) out->f = (double)HUGE_VALF;
      else if (out->f < -(double)FLT_MAX) out->f = -(double)HUGE_VALF;
    }
    return;
  case ECS_BOOL:
    if (t != LUA_TBOOLEAN) { expect = "a boolean"; break; }
    out->i = lua_toboolean(L, idx);
    return;
  case ECS_ENTITY:
    if (!ecs_lua_is_entity(L, idx)) { expect = "an entity"; break; }
    out->i = (int64_t)ecs_lua_check_entity(L, idx);
    return;
  case ECS_LUA:
    return; /* any value: made a ref by the caller */
  default: {
    int isint;
    lua_Integer v;
    if (t != LUA_TNUMBER) { expect = "an integer"; break; }
    v = lua_tointegerx(L, idx, &isint);
    if (!isint)
      luaL_error(L, "%s:%s: field '%s' expects an integer, got %s",
                 ecs_component_name(lc->c), fn, f->name,
                 lua_tostring(L, idx)); /* a number: converts in place */
    if ((int64_t)v < int_min[f->type] || (int64_t)v > int_max[f->type])
      luaL_error(L, "%s:%s: field '%s' (%s) out of range, got %I",
                 ecs_component_name(lc->c), fn, f->name,
                 ecs_type_name(f->type), v);
    out->i = (int64_t)v;
    return;
  }
  }
  luaL_error(L, "%s:%s: field '%s' expects %s, got %s",
             ecs_component_name(lc->c), fn, f->name, expect,
             value_type_name(L, idx));
}

static void write_value(ecs_component *c, uint32_t k, ecs_instance i,
                        const fvalue *v) {
  void *col = ecs_component_column(c, k);
  switch (ecs_component_field(c, k)->type) {
  case ECS_F32: ((float *)col)[i] = (float)v->f; break;
  case ECS_F64: ((double *)col)[i] = v->f; break;
  case ECS_I8: ((int8_t *)col)[i] = (int8_t)v->i; break;
  case ECS_I16: ((int16_t *)col)[i] = (int16_t)v->i; break;
  case ECS_I32: ((int32_t *)col)[i] = (int32_t)v->i; break;
  case ECS_I64: ((int64_t *)col)[i] = v->i; break;
  case ECS_U8: case ECS_BOOL: ((uint8_t *)col)[i] = (uint8_t)v->i; break;
  case ECS_U16: ((uint16_t *)col)[i] = (uint16_t)v->i; break;
  case ECS_U32: ((uint32_t *)col)[i] = (uint32_t)v->i; break;
  case ECS_ENTITY: ((ecs_entity *)col)[i] = (ecs_entity)v->i; break;
  case ECS_LUA: ((uint32_t *)col)[i] = v->ref; break;
  default: break;
  }
}

/* Push field k of instance i; refs is the refs table's index (or 0). */
static void push_value(lua_State *L, ecs_component *c, uint32_t k,
                       ecs_instance i, int refs) {
  void *col = ecs_component_column(c, k);
  switch (ecs_component_field(c, k)->type) {
  case ECS_F32: lua_pushnumber(L, (lua_Number)((float *)col)[i]); break;
  case ECS_F64: lua_pushnumber(L, (lua_Number)((double *)col)[i]); break;
  case ECS_I8: lua_pushinteger(L, ((int8_t *)col)[i]); break;
  case ECS_I16: lua_pushinteger(L, ((int16_t *)col)[i]); break;
  case ECS_I32: lua_pushinteger(L, ((int32_t *)col)[i]); break;
  case ECS_I64: lua_pushinteger(L, (lua_Integer)((int64_t *)col)[i]); break;
  case ECS_U8: lua_pushinteger(L, ((uint8_t *)col)[i]); break;
  case ECS_U16: lua_pushinteger(L, ((uint16_t *)col)[i]); break;
  case ECS_U32: lua_pushinteger(L, (lua_Integer)((uint32_t *)col)[i]); break;
  case ECS_BOOL: lua_pushboolean(L, ((uint8_t *)col)[i] != 0); break;
  case ECS_ENTITY: push_entity(L, ((ecs_entity *)col)[i]); break;
  case ECS_LUA: {
    uint32_t ref = ((uint32_t *)col)[i];
    if (ref == 0) lua_pushnil(L);
    else lua_rawgeti(L, refs, (lua_Integer)ref);
    break;
  }
  default: lua_pushnil(L); break;
  }
}

/*
** The field number of the string at idx, or an error naming the field.
** One raw lookup in the manager's name table (user value 2 of arg 1).
*/
static uint32_t check_field(lua_State *L, const lcomponent *lc, int idx,
                            const char *fn) {
  int isint;
  lua_Integer k;
  if (lua_type(L, idx) != LUA_TSTRING) luaL_typeerror(L, idx, "string");
  lua_getiuservalue(L, 1, 2);                             /* names */
  lua_pushvalue(L, idx);
  lua_rawget(L, -2);                                      /* names, k */
  k = lua_tointegerx(L, -1, &isint);
  lua_pop(L, 2);
  if (!isint) { /* no field name holds a zero: report that first */
    check_text(L, idx, NULL,
               lua_pushfstring(L, "%s:%s", ecs_component_name(lc->c), fn));
    luaL_error(L, "%s:%s: unknown field '%s'", ecs_component_name(lc->c), fn,
               lua_tostring(L, idx));
  }
  return (uint32_t)k;
}

/*
** Making refs for lua fields may raise (a memory error growing the refs
** table) after some were made: make_refs runs under lua_pcall and records
** its progress in a ref_job, so the caller can unref them and re-raise.
*/
typedef struct ref_job {
  uint32_t field[ECS_MAX_FIELDS], ref[ECS_MAX_FIELDS];
  int n, done;
} ref_job;

static int make_refs(lua_State *L) { /* job, refs, v1..vn */
  ref_job *job = (ref_job *)lua_touserdata(L, 1);
  for (int k = 0; k < job->n; k++) {
    lua_pushvalue(L, 3 + k);
    job->ref[k] = (uint32_t)luaL_ref(L, 2);
    job->done = k + 1;
  }
  return 0;
}

/*
** Shared by add and set: Position:add(e, x, y) or Position:add(e, {x=, y=}).
** The table form is used when exactly one value is given, it is a table,
** and the first field is not of type lua (for which a table is a value).
** Order, so that an error never leaves a half-done change: check the
** entity and every value; make refs for lua fields (all or none); then the
** core add (on NOMEM the refs are unref'd);
** then write every column, unref'ing replaced lua values; drain.
*/
static int comp_write(lua_State *L, int is_add) {
  const char *fn = is_add ? "add" : "set";
  ecs_world *w;
  lcomponent *lc = check_comp(L, 1, &w);
  ecs_entity e = check_entity(L, 2);
  int top = lua_gettop(L), refs = 0, tform;
  uint32_t nf = lc->nfields;
  fvalue val[ECS_MAX_FIELDS];
  int src[ECS_MAX_FIELDS]; /* stack index of each field's value, 0: none */
  ecs_instance i = ECS_NO_INSTANCE;
  bool existed = false;
  ecs_err err;
  if (!ecs_alive(w, e)) return comp_error(L, lc, fn, ECS_ERR_DEAD);
  if (!is_add && (i = ecs_component_lookup(w, lc->c, e)) == ECS_NO_INSTANCE)
    return comp_error(L, lc, fn, ECS_ERR_MISSING);
  tform = top == 3 && nf > 0 && lua_type(L, 3) == LUA_TTABLE &&
          ecs_component_field(lc->c, 0)->type != ECS_LUA;
  for (uint32_t k = 0; k < nf; k++) src[k] = 0;
  if (tform) {
    /* move each named value to the stack, so that refs see it later */
    luaL_checkstack(L, (int)nf + 4, "too many fields");
    lua_settop(L, 3 + (int)nf);           /* slots 4..3+nf: values by field */
    lua_getiuservalue(L, 1, 2);                           /* ..., names */
    lua_pushnil(L);
    while (lua_next(L, 3)) {                             /* names, key, v */
      int isint;
      lua_Integer k;
      if (lua_type(L, -2) != LUA_TSTRING)
        return luaL_error(L, "%s:%s: field names must be strings, got %s",
                          ecs_component_name(lc->c), fn, luaL_typename(L, -2));
      lua_pushvalue(L, -2);
      lua_rawget(L, -4);                                 /* names, key, v, k */
      k = lua_tointegerx(L, -1, &isint);
      lua_pop(L, 1);
      if (!isint) {
        size_t klen, at;
        const char *key = lua_tolstring(L, -2, &klen);
        if ((at = zero_at(key, klen)) != 0)
          return luaL_error(L, "%s:%s: field name contains an embedded zero "
                            "at position %I", ecs_component_name(lc->c), fn,
                            (lua_Integer)at);
        return luaL_error(L, "%s:%s: unknown field '%s'",
                          ecs_component_name(lc->c), fn, key);
      }
      lua_replace(L, 4 + (int)k);                        /* names, key */
      src[k] = 4 + (int)k;
    }
    lua_pop(L, 1);
  } else {
    if ((uint32_t)(top - 2) > nf)
      return luaL_error(L, "%s:%s: too many values (%d fields)",
                        ecs_component_name(lc->c), fn, (int)nf);
    for (uint32_t k = 0; k < nf && (int)k + 3 <= top; k++) src[k] = 3 + (int)k;
  }
  for (uint32_t k = 0; k < nf; k++) {
    val[k].i = 0; /* missing: zero, false, ecs.null or nil */
    if (src[k] != 0) check_value(L, src[k], lc, fn, k, &val[k]);
  }
  if (lc->nlua > 0) {
    ref_job job;
    job.n = job.done = 0;
    refs = push_comp_refs(L, 1);
    luaL_checkstack(L, (int)lc->nlua + 3, "too many fields");
    lua_pushcfunction(L, make_refs);          /* light: no allocation */
    lua_pushlightuserdata(L, &job);
    lua_pushvalue(L, refs);
    for (uint32_t k = 0; k < nf; k++) {
      if (ecs_component_field(lc->c, k)->type != ECS_LUA) continue;
      val[k].ref = 0;
      if (src[k] == 0 || lua_isnil(L, src[k])) continue;
      job.field[job.n++] = k;
      lua_pushvalue(L, src[k]);
    }
    if (job.n <= 1) {
      /* one ref at most: if it raises, none was made; no pcall needed */
      if (job.n == 1) job.ref[0] = (uint32_t)luaL_ref(L, refs);
      lua_pop(L, 3);                          /* make_refs, job, refs */
    } else if (lua_pcall(L, 2 + job.n, 0, 0) != LUA_OK) {
      for (int k = 0; k < job.done; k++) luaL_unref(L, refs, (int)job.ref[k]);
      return lua_error(L);                    /* the same error object */
    }
    for (int k = 0; k < job.n; k++) val[job.field[k]].ref = job.ref[k];
    /* making refs allocates, and a GC step may run finalizers that change
    ** the world (or close it): look everything up again */
    err = ECS_ERR_OK;
    if (lc->lw->w == NULL) err = ECS_ERR_INVALID;
    else if (!ecs_alive(lc->lw->w, e)) err = ECS_ERR_DEAD;
    else if (!is_add && (i = ecs_component_lookup(lc->lw->w, lc->c, e)) == ECS_NO_INSTANCE)
      err = ECS_ERR_MISSING;
    if (err != ECS_ERR_OK) {
      for (int k = 0; k < job.n; k++) luaL_unref(L, refs, (int)job.ref[k]);
      if (err == ECS_ERR_INVALID) return luaL_error(L, "attempt to use a closed world");
      return comp_error(L, lc, fn, err);
    }
    w = lc->lw->w;
  }
  if (is_add) {
    err = ecs_component_add(w, lc->c, e, &i, &existed);
    if (err != ECS_ERR_OK) {
      for (uint32_t k = 0; k < nf && refs != 0; k++)
        if (ecs_component_field(lc->c, k)->type == ECS_LUA && val[k].ref)
          luaL_unref(L, refs, (int)val[k].ref);
      return comp_error(L, lc, fn, err);
    }
  }
  for (uint32_t k = 0; k < nf; k++) {
    if (ecs_component_field(lc->c, k)->type == ECS_LUA) {
      uint32_t old = ((uint32_t *)ecs_component_column(lc->c, k))[i];
      write_value(lc->c, k, i, &val[k]);
      if (old != 0) luaL_unref(L, refs, (int)old);
    } else {
      write_value(lc->c, k, i, &val[k]);
    }
  }
  if (refs != 0) drain_refs_at(L, w, refs);
  if (is_add) charge(L, lc->lw);
  return 0;
}

/* Position:add(e, ...) -- creates or overwrites; missing fields are zero */
static int l_comp_add(lua_State *L) { return comp_write(L, 1); }

/* Position:set(e, ...) -- like add, but e must have the component */
static int l_comp_set(lua_State *L) { return comp_write(L, 0); }

/* Position:get(e) -> values in schema order, or nothing */
static int l_comp_get(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = check_comp(L, 1, &w);
  ecs_entity e = check_entity(L, 2);
  ecs_instance i;
  int refs = 0;
  luaL_checkstack(L, (int)lc->nfields + 2, "too many fields");
  if (lc->nlua > 0) refs = push_comp_refs(L, 1);
  /* nothing below allocates, so i stays valid while values are pushed */
  i = ecs_component_lookup(w, lc->c, e);
  if (i == ECS_NO_INSTANCE) return 0;
  for (uint32_t k = 0; k < lc->nfields; k++) push_value(L, lc->c, k, i, refs);
  return (int)lc->nfields;
}

/* Position:field(e, "x") -> value, or nil if e has no Position */
static int l_comp_field(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = check_comp(L, 1, &w);
  ecs_entity e = check_entity(L, 2);
  uint32_t k = check_field(L, lc, 3, "field");
  ecs_instance i = ecs_component_lookup(w, lc->c, e);
  int refs = 0;
  if (i == ECS_NO_INSTANCE) {
    lua_pushnil(L);
    return 1;
  }
  if (ecs_component_field(lc->c, k)->type == ECS_LUA) refs = push_comp_refs(L, 1);
  push_value(L, lc->c, k, i, refs);
  return 1;
}

/* Position:set_field(e, "x", v) -- e must have the component */
static int l_comp_set_field(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = check_comp(L, 1, &w);
  ecs_entity e = check_entity(L, 2);
  uint32_t k = check_field(L, lc, 3, "set_field");
  ecs_instance i;
  fvalue v;
  lua_settop(L, 4);
  if (!ecs_alive(w, e)) return comp_error(L, lc, "set_field", ECS_ERR_DEAD);
  i = ecs_component_lookup(w, lc->c, e);
  if (i == ECS_NO_INSTANCE) return comp_error(L, lc, "set_field", ECS_ERR_MISSING);
  check_value(L, 4, lc, "set_field", k, &v);
  if (ecs_component_field(lc->c, k)->type == ECS_LUA) {
    int refs = push_comp_refs(L, 1);
    uint32_t old;
    v.ref = 0;
    if (!lua_isnil(L, 4)) {
      lua_pushvalue(L, 4);
      v.ref = (uint32_t)luaL_ref(L, refs); /* may raise: nothing changed */
      /* a GC step during luaL_ref may have run finalizers: look again */
      if (lc->lw->w == NULL || !ecs_alive(lc->lw->w, e) ||
          (i = ecs_component_lookup(lc->lw->w, lc->c, e)) == ECS_NO_INSTANCE) {
        luaL_unref(L, refs, (int)v.ref);
        if (lc->lw->w == NULL) return luaL_error(L, "attempt to use a closed world");
        return comp_error(L, lc, "set_field", ecs_alive(lc->lw->w, e) ?
                          ECS_ERR_MISSING : ECS_ERR_DEAD);
      }
    }
    old = ((uint32_t *)ecs_component_column(lc->c, k))[i];
    write_value(lc->c, k, i, &v);
    if (old != 0) luaL_unref(L, refs, (int)old);
    return 0;
  }
  write_value(lc->c, k, i, &v);
  return 0;
}

/* Position:has(e) -> boolean (false for dead, stale or null handles) */
static int l_comp_has(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = check_comp(L, 1, &w);
  lua_pushboolean(L, ecs_component_lookup(w, lc->c, check_entity(L, 2)) !=
                         ECS_NO_INSTANCE);
  return 1;
}

/* Position:remove(e) -> boolean (false if e is dead or had none) */
static int l_comp_remove(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = check_comp(L, 1, &w);
  bool done = ecs_component_remove(w, lc->c, check_entity(L, 2));
  drain_comp(L, lc, w);
  lua_pushboolean(L, done);
  return 1;
}

/* Position:count() -> instances whose entity is alive */
static int l_comp_count(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = check_comp(L, 1, &w);
  lua_pushinteger(L, (lua_Integer)ecs_component_count(w, lc->c));
  return 1;
}

/* Position:size() -> instances stored, dead entities' records included */
static int l_comp_size(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = check_comp(L, 1, &w);
  lua_pushinteger(L, (lua_Integer)ecs_component_size(lc->c));
  return 1;
}

/*
** Position:gc([budget]) -> records reclaimed. Without a budget every dead
** record goes; with one, Bitsquid's random probing reclaims at most budget.
*/
static int l_comp_gc(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = check_comp(L, 1, &w);
  size_t budget = SIZE_MAX, n;
  if (!lua_isnoneornil(L, 2)) {
    lua_Integer b = luaL_checkinteger(L, 2);
    luaL_argcheck(L, b >= 0, 2, "budget must not be negative");
    if ((lua_Unsigned)b < SIZE_MAX) budget = (size_t)b;
  }
  n = ecs_component_gc(w, lc->c, budget);
  drain_comp(L, lc, w);
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

/* Position:fields() -> { "x:f32", "y:f32" } (the schema, normalised) */
static int l_comp_fields(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = check_comp(L, 1, &w);
  lua_createtable(L, (int)lc->nfields, 0);
  for (uint32_t k = 0; k < lc->nfields; k++) {
    const ecs_field_def *f = ecs_component_field(lc->c, k);
    lua_pushfstring(L, "%s:%s", f->name, ecs_type_name(f->type));
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  return 1;
}

/*
** The iterator of Position:entities(): upvalues manager, position. It
** walks the instances downwards, so removing the current entity's
** component (which moves an already visited instance into its place) or
** adding new ones (appended, so not visited) during the loop is safe.
*/
static int l_comp_entities_next(lua_State *L) {
  lcomponent *lc = (lcomponent *)lua_touserdata(L, lua_upvalueindex(1));
  ecs_world *w = lc->lw->w;
  lua_Integer pos = lua_tointeger(L, lua_upvalueindex(2));
  const ecs_entity *own;
  if (w == NULL) return luaL_error(L, "attempt to use a closed world");
  own = ecs_component_entities(lc->c);
  if (pos > (lua_Integer)ecs_component_size(lc->c))
    pos = (lua_Integer)ecs_component_size(lc->c);
  while (pos > 0) {
    ecs_entity e = own[--pos];
    if (ecs_alive(w, e)) {
      lua_pushinteger(L, pos);
      lua_replace(L, lua_upvalueindex(2));
      push_entity(L, e);
      return 1;
    }
  }
  lua_pushinteger(L, 0);
  lua_replace(L, lua_upvalueindex(2));
  return 0;
}

/* Position:entities() -> iterator over entities having it (alive) */
static int l_comp_entities(lua_State *L) {
  ecs_world *w;
  lcomponent *lc = check_comp(L, 1, &w);
  lua_settop(L, 1);
  lua_pushinteger(L, (lua_Integer)ecs_component_size(lc->c));
  lua_pushcclosure(L, l_comp_entities_next, 2);
  return 1;
}

static int l_comp_tostring(lua_State *L) {
  lcomponent *lc = to_comp(L, 1);
  if (lc->c == NULL || lc->lw->w == NULL)
    lua_pushliteral(L, "ecs.Component (closed world)");
  else
    lua_pushfstring(L, "ecs.Component(%s)", ecs_component_name(lc->c));
  return 1;
}

static const luaL_Reg comp_methods[] = {
  {"add", l_comp_add},
  {"set", l_comp_set},
  {"get", l_comp_get},
  {"field", l_comp_field},
  {"set_field", l_comp_set_field},
  {"has", l_comp_has},
  {"remove", l_comp_remove},
  {"count", l_comp_count},
  {"size", l_comp_size},
  {"gc", l_comp_gc},
  {"fields", l_comp_fields},
  {"entities", l_comp_entities},
  {NULL, NULL}
};

/*
** The registry metatable ECS_LUA_COMPONENT only holds what every manager's
** own metatable copies: the methods table (__methods) and __tostring.
*/
static void open_components(lua_State *L) {
  luaL_newmetatable(L, ECS_LUA_COMPONENT);               /* mt */
  lua_newtable(L);                                       /* mt, methods */
  set_methods(L, comp_methods, &comp_tag, ECS_LUA_COMPONENT);
  lua_setfield(L, -2, "__methods");
  lua_pushcfunction(L, l_comp_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}

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

static bool is_ident(const char *s, size_t len) {
  if (len == 0 || !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') ||
                    (s[0] >= 'A' && s[0] <= 'Z')))
    return false;
  for (size_t k = 1; k < len; k++)
    if (!(s[k] == '_' || (s[k] >= 'a' && s[k] <= 'z') ||
          (s[k] >= 'A' && s[k] <= 'Z') || (s[k] >= '0' && s[k] <= '9')))
      return false;
  return true;
}

/*
** world:component(name [, schema]) -> manager
** schema is a list of "field:type" strings (a bare "field" is f64); nil or
** absent makes a tag. Everything that can raise (parsing, the Lua objects,
** the registry entries) happens before the core manager is created; if
** the core then fails, the registry entries are removed (no allocation).
*/
static int l_world_component(lua_State *L) {
  ecs_world *w = check_world(L, 1);
  size_t len, n = 0;
  const char *name;
  ecs_field_def *defs;
  lcomponent *lc;
  lua_Integer slot;
  ecs_err err;
  name = check_text(L, 2, &len, "world:component");
  if (!is_ident(name, len)) /* "Position.x" must stay unambiguous in queries */
    return luaL_argerror(L, 2, "component name must be an identifier");
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    n = (size_t)lua_rawlen(L, 3);
  }
  lua_settop(L, 3);
  if (n > ECS_MAX_FIELDS)
    return luaL_error(L, "world:component: too many fields (limit %d)",
                      (int)ECS_MAX_FIELDS);
  if (ecs_component_find(w, name) != NULL)
    return ecs_lua_error(L, "world:component", ECS_ERR_EXISTS);
  defs = (ecs_field_def *)lua_newuserdatauv(L, (n + 1) * sizeof *defs, 0); /* 4 */
  lua_createtable(L, (int)n, 0);                          /* 5: field names */
  lua_createtable(L, 0, (int)n);                          /* 6: name -> k */
  for (size_t k = 0; k < n; k++) {
    size_t slen, flen, at;
    const char *s, *colon;
    int type = ECS_F64;
    if (lua_rawgeti(L, 3, (lua_Integer)k + 1) != LUA_TSTRING)
      return luaL_error(L, "world:component: schema entry %d must be a "
                        "string, got %s", (int)k + 1, luaL_typename(L, -1));
    s = lua_tolstring(L, -1, &slen);
    if ((at = zero_at(s, slen)) != 0)
      return luaL_error(L, "world:component: schema entry %d contains an "
                        "embedded zero at position %I", (int)k + 1,
                        (lua_Integer)at);
    colon = (const char *)memchr(s, ':', slen);
    flen = colon != NULL ? (size_t)(colon - s) : slen;
    if (!is_ident(s, flen))
      return luaL_error(L, "world:component: invalid field name in '%s'", s);
    lua_pushlstring(L, s, flen);                          /* entry, fname */
    if (colon != NULL) {
      type = ecs_type_parse(colon + 1, slen - flen - 1);
      if (type < 0)
        return luaL_error(L, "world:component: field '%s' has unknown type "
                          "'%s'", lua_tostring(L, -1), colon + 1);
    }
    lua_pushvalue(L, -1);
    if (lua_rawget(L, 6) != LUA_TNIL)
      return luaL_error(L, "world:component: duplicate field '%s'",
                        lua_tostring(L, -2));
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushinteger(L, (lua_Integer)k);
    lua_rawset(L, 6);                                     /* names[f] = k */
    defs[k].name = lua_tostring(L, -1);  /* kept alive by table 5 */
    defs[k].type = (ecs_type)type;
    lua_rawseti(L, 5, (lua_Integer)k + 1);
    lua_pop(L, 1);
  }
  lc = (lcomponent *)lua_newuserdatauv(L, sizeof *lc, 2); /* 7: manager */
  lc->lw = to_lworld(L, 1);
  init_head(&lc->h, &comp_tag, lc->lw);
  lc->c = NULL;
  lc->nfields = (uint32_t)n;
  lc->nlua = 0;
  for (size_t k = 0; k < n; k++) lc->nlua += defs[k].type == ECS_LUA;
  push_comp_metatable(L, name);
  lua_setmetatable(L, 7);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, 7, 1);
  lua_pushvalue(L, 6);
  lua_setiuservalue(L, 7, 2);
  if (lc->nlua > 0) {
    need_state_field(L, 1, &refs_key);
    lua_pop(L, 1);
  }
  need_state_field(L, 1, &components_key);                /* 8: registry */
  slot = (lua_Integer)lua_rawlen(L, 8) + 1;
  lua_pushvalue(L, 7);
  lua_rawseti(L, 8, slot);    /* the last thing that may raise */
  /* the allocations above may have run finalizers: the world may be gone */
  if ((w = lc->lw->w) == NULL) return luaL_error(L, "attempt to use a closed world");
  err = ecs_component_new(w, name, defs, (uint32_t)n, &lc->c);
  if (err != ECS_ERR_OK) {
    lc->c = NULL;
    lua_pushnil(L);
    lua_rawseti(L, 8, slot);  /* an existing key: no allocation */
    return ecs_lua_error(L, "world:component", err);
  }
  lua_pushvalue(L, 7);
  charge(L, lc->lw);
  return 1;
}

/* world:components() -> list of component managers, in creation order */
static int l_world_components(lua_State *L) {
  lua_Integer n;
  check_world(L, 1);
  if (push_state_field(L, 1, &components_key) != LUA_TTABLE) {
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

/* ----------------------------------------------------------------------
** C plugins (ecs_lua.h)
** ------------------------------------------------------------------- */

/*
** The storage of a plugin object follows this header. Lua aligns userdata
** blocks for LUAI_MAXALIGN (a pointer, a double, a lua_Integer), so the
** header is padded to that, not to max_align_t.
*/
typedef union plugin_head {
  struct {
    lhead h;           /* class plugin_tag; h.lw its world */
    const char *tname; /* its class name */
  } o;
  double d;
  lua_Integer i;
  void *p;
} plugin_head;

/* The plugin object of class tname at idx (NULL if it is not one). */
static lhead *test_plugin(lua_State *L, int idx, const char *tname) {
  plugin_head *ph = (plugin_head *)test_object(L, idx, &plugin_tag);
  if (ph == NULL || lua_rawlen(L, idx) < sizeof *ph ||
      (ph->o.tname != tname && strcmp(ph->o.tname, tname) != 0))
    return NULL;
  return &ph->o.h;
}

void ecs_lua_plugin_class(lua_State *L, const char *tname,
                          const luaL_Reg *methods) {
  if (luaL_newmetatable(L, tname)) {                     /* mt */
    lua_newtable(L);                                     /* mt, methods */
    set_methods(L, methods, &plugin_tag, tname);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__index");
    lua_setfield(L, -2, "__methods");
    lua_pushliteral(L, "locked");
    lua_setfield(L, -2, "__metatable");
  }
  lua_pop(L, 1);
}

int ecs_lua_plugin_get(lua_State *L, int world_idx, const char *tname) {
  world_idx = lua_absindex(L, world_idx);
  ecs_lua_check_world(L, world_idx);
  if (push_state_field(L, world_idx, &plugins_key) != LUA_TTABLE) {
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
  init_head(&h->o.h, &plugin_tag, to_lworld(L, world_idx));
  h->o.tname = tname;
  luaL_setmetatable(L, tname);
  lua_pushvalue(L, world_idx);
  lua_setiuservalue(L, -2, 1);                            /* obj */
  need_state_field(L, world_idx, &plugins_key);          /* obj, plugins */
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, tname);
  lua_pop(L, 1);                                          /* obj */
  return h + 1;
}

void *ecs_lua_object_new(lua_State *L, const char *tname, size_t size,
                         int nuvalue) {
  plugin_head *h = (plugin_head *)lua_newuserdatauv(L, sizeof *h + size, nuvalue);
  memset(h, 0, sizeof *h + size);
  init_head(&h->o.h, &plugin_tag, NULL);
  h->o.tname = tname;
  luaL_setmetatable(L, tname);
  return h + 1;
}

void ecs_lua_plugin_detach(lua_State *L, int world_idx, const char *tname) {
  world_idx = lua_absindex(L, world_idx);
  if (push_state_field(L, world_idx, &plugins_key) == LUA_TTABLE) {
    lua_pushnil(L);
    lua_setfield(L, -2, tname); /* an existing key: no allocation */
  }
  lua_pop(L, 1);
}

void *ecs_lua_plugin_check(lua_State *L, int idx, const char *tname,
                           ecs_world **w) {
  lhead *h = test_plugin(L, idx, tname);
  if (h == NULL) object_error(L, idx, tname);
  if (h->lw != NULL && h->lw->w == NULL) luaL_error(L, CLOSED_WORLD);
  if (w != NULL) *w = h->lw != NULL ? h->lw->w : NULL;
  return (plugin_head *)(void *)h + 1;
}

/* The plugins compiled into ecs.core, loadable as require("ecs.<name>"). */
int luaopen_ecs_pointmass(lua_State *L);
int luaopen_ecs_mesh(lua_State *L);
int luaopen_ecs_grid(lua_State *L); /* demo (issue 7) */
int luaopen_ecs_motion(lua_State *L); /* queries section: native systems */

static void preload_plugins(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_ecs_pointmass);
  lua_setfield(L, -2, "ecs.pointmass");
  lua_pushcfunction(L, luaopen_ecs_mesh);
  lua_setfield(L, -2, "ecs.mesh");
  lua_pushcfunction(L, luaopen_ecs_grid);
  lua_setfield(L, -2, "ecs.grid");
  lua_pushcfunction(L, luaopen_ecs_motion);
  lua_setfield(L, -2, "ecs.motion");
  lua_pop(L, 1);
}

/* ===================== end of the components section ================= */

/* ======================================================================
** Transform and names (transform branch, issue #5)
**
** world.transform and world.names are plugin objects (full userdata of
** class ECS_LUA_TRANSFORM / ECS_LUA_NAMES holding the core manager, user
** value 1: the world) created on first access through the world's
** __index (l_world_index) and kept in the world's plugin table. The core
** managers are owned by the world (registered as "transform" and
** "names"); a closed world makes every method raise "attempt to use a
** closed world".
**
** Errors: "transform:<method>: entity is not alive", "...: entity has no
** transform", "transform:set_parent: parenting would create a cycle",
** "...: non-finite number", "...: rotation quaternion must be non-zero";
** names likewise. Predicates (has) return false for dead, stale and null
** handles; get/find return nil.
** ==================================================================== */

#define ECS_LUA_TRANSFORM "ecs.Transform"
#define ECS_LUA_NAMES "ecs.Names"

typedef struct ltransform {
  ecs_transform *t;
} ltransform;

typedef struct lnames {
  ecs_names *m;
} lnames;

/*
** The manager at index 1. Methods run through l_method, which checked
** the class of self already: only the closed world is left to check.
*/
static void *check_builtin(lua_State *L, const char *tname) {
  lhead *h = test_plugin(L, 1, tname);
  if (h != NULL && h->lw->w != NULL) return (plugin_head *)(void *)h + 1;
  return ecs_lua_plugin_check(L, 1, tname, NULL);
}

static ecs_transform *check_tr(lua_State *L) {
  return ((ltransform *)check_builtin(L, ECS_LUA_TRANSFORM))->t;
}

static ecs_names *check_names(lua_State *L) {
  return ((lnames *)check_builtin(L, ECS_LUA_NAMES))->m;
}

static int tr_fail(lua_State *L, const char *fn, ecs_err err) {
  switch (err) {
    case ECS_ERR_DEAD: return luaL_error(L, "transform:%s: entity is not alive", fn);
    case ECS_ERR_MISSING:
      return luaL_error(L, "transform:%s: entity has no transform", fn);
    case ECS_ERR_INVALID:
      return luaL_error(L, "transform:%s: non-finite number or zero rotation", fn);
    default: return luaL_error(L, "transform:%s: %s", fn, ecs_strerror(err));
  }
}

/* A finite number argument (type errors through luaL_checknumber). */
static double check_finite(lua_State *L, int idx, const char *fn) {
  double v = (double)luaL_checknumber(L, idx);
  if (!isfinite(v)) luaL_error(L, "transform:%s: non-finite number", fn);
  return v;
}

static void check_quat(lua_State *L, const double q[4], const char *fn) {
  if (q[0] == 0 && q[1] == 0 && q[2] == 0 && q[3] == 0)
    luaL_error(L, "transform:%s: rotation quaternion must be non-zero", fn);
}

/* Read n finite numbers from the table field key of the table at idx. */
static void read_vec(lua_State *L, int idx, const char *key, double *out,
                     int n) {
  if (lua_getfield(L, idx, key) == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  if (!lua_istable(L, -1))
    luaL_error(L, "transform:add: %s must be a table of %d numbers", key, n);
  for (int k = 0; k < n; k++) {
    int isnum;
    lua_geti(L, -1, k + 1);
    out[k] = (double)lua_tonumberx(L, -1, &isnum);
    if (!isnum)
      luaL_error(L, "transform:add: %s must be a table of %d numbers", key, n);
    if (!isfinite(out[k]))
      luaL_error(L, "transform:add: %s[%d] is not a finite number", key, k + 1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* T:add(e [, {position=, rotation=, scale=}]) */
static int l_tr_add(lua_State *L) {
  ecs_transform *t = check_tr(L);
  ecs_entity e = check_entity(L, 2);
  ecs_trs l = {{0, 0, 0}, {0, 0, 0, 1}, {1, 1, 1}};
  ecs_err err;
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    read_vec(L, 3, "position", l.position, 3);
    read_vec(L, 3, "rotation", l.rotation, 4);
    read_vec(L, 3, "scale", l.scale, 3);
    check_quat(L, l.rotation, "add");
  }
  err = ecs_transform_add(t, e, &l);
  if (err != ECS_ERR_OK) return tr_fail(L, "add", err);
  charge(L, ((plugin_head *)lua_touserdata(L, 1))->o.h.lw);
  return 0;
}

/* T:remove(e) -> boolean */
static int l_tr_remove(lua_State *L) {
  ecs_transform *t = check_tr(L);
  lua_pushboolean(L, ecs_transform_remove(t, check_entity(L, 2)));
  return 1;
}

/* T:has(e) -> boolean */
static int l_tr_has(lua_State *L) {
  ecs_transform *t = check_tr(L);
  lua_pushboolean(L, ecs_transform_has(t, check_entity(L, 2)));
  return 1;
}

/* The live row of e or an error naming fn. */
static uint32_t tr_row(lua_State *L, ecs_transform *t, int idx, const char *fn) {
  ecs_entity e = check_entity(L, idx);
  uint32_t i = ecs_transform_instance(t, e);
  if (i == ECS_NO_INSTANCE)
    tr_fail(L, fn, ecs_alive(ecs_transform_world(t), e) ? ECS_ERR_MISSING
                                                        : ECS_ERR_DEAD);
  return i;
}

/* T:set_local_position(e, x, y, z) */
static int l_tr_set_local_position(lua_State *L) {
  ecs_transform *t = check_tr(L);
  ecs_entity e = check_entity(L, 2);
  double x = check_finite(L, 3, "set_local_position");
  double y = check_finite(L, 4, "set_local_position");
  double z = check_finite(L, 5, "set_local_position");
  ecs_err err = ecs_transform_set_position(t, e, x, y, z);
  if (err != ECS_ERR_OK) return tr_fail(L, "set_local_position", err);
  return 0;
}

/* T:set_local_rotation(e, x, y, z, w) -- normalized */
static int l_tr_set_local_rotation(lua_State *L) {
  ecs_transform *t = check_tr(L);
  ecs_entity e = check_entity(L, 2);
  double q[4];
  ecs_err err;
  for (int k = 0; k < 4; k++) q[k] = check_finite(L, 3 + k, "set_local_rotation");
  check_quat(L, q, "set_local_rotation");
  err = ecs_transform_set_rotation(t, e, q[0], q[1], q[2], q[3]);
  if (err != ECS_ERR_OK) return tr_fail(L, "set_local_rotation", err);
  return 0;
}

/* T:set_local_scale(e, x, y, z) */
static int l_tr_set_local_scale(lua_State *L) {
  ecs_transform *t = check_tr(L);
  ecs_entity e = check_entity(L, 2);
  double x = check_finite(L, 3, "set_local_scale");
  double y = check_finite(L, 4, "set_local_scale");
  double z = check_finite(L, 5, "set_local_scale");
  ecs_err err = ecs_transform_set_scale(t, e, x, y, z);
  if (err != ECS_ERR_OK) return tr_fail(L, "set_local_scale", err);
  return 0;
}

static void push_numbers(lua_State *L, const double *v, int n) {
  luaL_checkstack(L, n, NULL);
  for (int k = 0; k < n; k++) lua_pushnumber(L, (lua_Number)v[k]);
}

static int tr_local(lua_State *L, const char *fn, int part) {
  ecs_transform *t = check_tr(L);
  ecs_trs l;
  ecs_err err = ecs_transform_get_local(t, check_entity(L, 2), &l);
  if (err != ECS_ERR_OK) return tr_fail(L, fn, err);
  if (part == 0) push_numbers(L, l.position, 3);
  else if (part == 1) push_numbers(L, l.rotation, 4);
  else push_numbers(L, l.scale, 3);
  return part == 1 ? 4 : 3;
}

/* T:local_position(e) -> x, y, z */
static int l_tr_local_position(lua_State *L) {
  return tr_local(L, "local_position", 0);
}

/* T:local_rotation(e) -> x, y, z, w */
static int l_tr_local_rotation(lua_State *L) {
  return tr_local(L, "local_rotation", 1);
}

/* T:local_scale(e) -> x, y, z */
static int l_tr_local_scale(lua_State *L) {
  return tr_local(L, "local_scale", 2);
}

/* T:world_position(e) -> x, y, z */
static int l_tr_world_position(lua_State *L) {
  ecs_transform *t = check_tr(L);
  uint32_t i = tr_row(L, t, 2, "world_position");
  push_numbers(L, ecs_transform_world_at(t, i) + 12, 3);
  return 3;
}

/* T:world_rotation(e) -> x, y, z, w */
static int l_tr_world_rotation(lua_State *L) {
  ecs_transform *t = check_tr(L);
  double q[4];
  ecs_err err = ecs_transform_get_world_rotation(t, check_entity(L, 2), q);
  if (err != ECS_ERR_OK) return tr_fail(L, "world_rotation", err);
  push_numbers(L, q, 4);
  return 4;
}

/* T:world_matrix(e) -> 16 numbers, column-major */
static int l_tr_world_matrix(lua_State *L) {
  ecs_transform *t = check_tr(L);
  uint32_t i = tr_row(L, t, 2, "world_matrix");
  push_numbers(L, ecs_transform_world_at(t, i), 16);
  return 16;
}

/* T:set_parent(child, parent [, keep_world]) -- ecs.null detaches */
static int l_tr_set_parent(lua_State *L) {
  ecs_transform *t = check_tr(L);
  ecs_entity c = check_entity(L, 2), p = check_entity(L, 3);
  int keep = lua_toboolean(L, 4);
  ecs_err err = ecs_transform_set_parent(t, c, p, keep != 0);
  switch (err) {
    case ECS_ERR_OK: return 0;
    case ECS_ERR_CYCLE:
      return luaL_error(L, "transform:set_parent: parenting would create a cycle");
    case ECS_ERR_INVALID: {
      const char *why = ecs_transform_keep_world_error(t, c, p);
      return luaL_error(L, "transform:set_parent: %s",
                        why != NULL ? why : "keep_world failed");
    }
    case ECS_ERR_DEAD:
      return luaL_error(L, "transform:set_parent: %s is not alive",
                        ecs_alive(ecs_transform_world(t), c) ? "parent" : "child");
    default:
      return luaL_error(L, "transform:set_parent: %s has no transform",
                        ecs_transform_has(t, c) ? "parent" : "child");
  }
}

/* T:parent(e) -> parent or ecs.null */
static int l_tr_parent(lua_State *L) {
  ecs_transform *t = check_tr(L);
  uint32_t i = tr_row(L, t, 2, "parent");
  (void)i;
  push_entity(L, ecs_transform_parent(t, check_entity(L, 2)));
  return 1;
}

static int l_tr_children_next(lua_State *L) {
  lua_Integer k = lua_tointeger(L, lua_upvalueindex(2)) + 1;
  /* the transform (upvalue 3): a closed world ends the loop with an error */
  ecs_lua_plugin_check(L, lua_upvalueindex(3), ECS_LUA_TRANSFORM, NULL);
  if (lua_rawgeti(L, lua_upvalueindex(1), k) == LUA_TNIL) return 1;
  lua_pushinteger(L, k);
  lua_replace(L, lua_upvalueindex(2));
  return 1;
}

/* T:children(e) -> iterator over the live children at the time of the
** call, in attachment order */
static int l_tr_children(lua_State *L) {
  ecs_transform *t = check_tr(L);
  ecs_entity e = check_entity(L, 2), c;
  lua_Integer n = 0;
  tr_row(L, t, 2, "children");
  lua_newtable(L);
  for (c = ecs_transform_first_child(t, e); c != ECS_NULL;
       c = ecs_transform_next_sibling(t, c)) {
    push_entity(L, c);
    lua_rawseti(L, -2, ++n);
  }
  lua_pushinteger(L, 0);
  lua_pushvalue(L, 1);
  lua_pushcclosure(L, l_tr_children_next, 3);
  return 1;
}

/* T:destroy_tree(e) -> number of entities destroyed */
static int l_tr_destroy_tree(lua_State *L) {
  ecs_transform *t = check_tr(L);
  tr_row(L, t, 2, "destroy_tree");
  lua_pushinteger(L, (lua_Integer)ecs_transform_destroy_tree(t, check_entity(L, 2)));
  return 1;
}

/* An optional gc budget as component gc takes it: none = everything. */
static size_t gc_budget(lua_State *L, int idx) {
  lua_Integer b;
  if (lua_isnoneornil(L, idx)) return SIZE_MAX;
  b = luaL_checkinteger(L, idx);
  luaL_argcheck(L, b >= 0, idx, "budget must not be negative");
  return (lua_Unsigned)b < SIZE_MAX ? (size_t)b : SIZE_MAX;
}

/* T:gc([budget]) -> rows reclaimed */
static int l_tr_gc(lua_State *L) {
  ecs_transform *t = check_tr(L);
  lua_pushinteger(L, (lua_Integer)ecs_transform_gc(t, gc_budget(L, 2)));
  return 1;
}

/* T:size() -> rows in use (dead entities' rows until gc included) */
static int l_tr_size(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)ecs_transform_size(check_tr(L)));
  return 1;
}

/* The row of the value at the top of the stack, or an error. */
static uint32_t batch_row(lua_State *L, ecs_transform *t, lua_Integer k,
                          const char *fn) {
  ecs_entity e;
  uint32_t row;
  if (!ecs_lua_is_entity(L, -1))
    luaL_error(L, "transform:%s: entities[%d] is not an entity", fn, (int)k);
  e = (ecs_entity)((uintptr_t)lua_touserdata(L, -1) >> ECS_LUA_TAG_BITS);
  row = ecs_transform_instance(t, e);
  if (row == ECS_NO_INSTANCE)
    luaL_error(L, "transform:%s: entities[%d] is not alive or has no transform",
               fn, (int)k);
  return row;
}

/*
** T:set_local_positions(entities, xs, ys, zs): entities[i] gets local
** position xs[i], ys[i], zs[i]; every world matrix below is updated once.
** All or nothing: everything is read and checked (into a scratch block
** owned by Lua, so an error cannot leak it) before anything is set.
*/
static int l_tr_set_local_positions(lua_State *L) {
  static const char fn[] = "set_local_positions";
  static const char *const axis[3] = {"xs", "ys", "zs"};
  ecs_transform *t = check_tr(L);
  lua_Integer n;
  uint32_t *rows;
  double *xyz;
  size_t bytes;
  ecs_err err;
  for (int a = 2; a <= 5; a++) luaL_checktype(L, a, LUA_TTABLE);
  lua_settop(L, 5);
  n = (lua_Integer)lua_rawlen(L, 2);
  if ((size_t)n > SIZE_MAX / 64u) return luaL_error(L, "transform:%s: too many", fn);
  bytes = (size_t)n * 3u * sizeof(double);
  xyz = (double *)lua_newuserdatauv(L, bytes + (size_t)n * sizeof(uint32_t), 0);
  rows = (uint32_t *)(void *)((char *)xyz + bytes);
  for (lua_Integer k = 0; k < n; k++) {     /* one pass: 4 reads, 1 pop */
    lua_rawgeti(L, 2, k + 1);
    lua_rawgeti(L, 3, k + 1);
    lua_rawgeti(L, 4, k + 1);
    lua_rawgeti(L, 5, k + 1);               /* ..., e, x, y, z */
    for (int a = 0; a < 3; a++) {
      int isnum;
      double v = (double)lua_tonumberx(L, a - 3, &isnum);
      if (!isnum || !isfinite(v))
        luaL_error(L, "transform:%s: %s[%d] is not a finite number", fn, axis[a],
                   (int)(k + 1));
      xyz[3 * k + a] = v;
    }
    lua_pop(L, 3);
    rows[k] = batch_row(L, t, k + 1, fn);
    lua_pop(L, 1);
  }
  err = ecs_transform_set_positions(t, rows, xyz, (size_t)n);
  if (err != ECS_ERR_OK) return tr_fail(L, fn, err);
  return 0;
}

/*
** T:set_local_rotations(entities, xs, ys, zs, ws) and
** T:set_local_scales(entities, xs, ys, zs): like set_local_positions
** (checked first, all or nothing, one propagation), through
** ecs_transform_set_locals. Rotations are normalized.
*/
static int tr_batch_locals(lua_State *L, int rotation, const char *fn) {
  static const char *const axis[4] = {"xs", "ys", "zs", "ws"};
  ecs_transform *t = check_tr(L);
  int na = rotation ? 4 : 3;
  lua_Integer n;
  uint32_t *rows;
  ecs_trs *locals;
  ecs_err err;
  for (int a = 2; a <= 2 + na; a++) luaL_checktype(L, a, LUA_TTABLE);
  lua_settop(L, 2 + na);
  n = (lua_Integer)lua_rawlen(L, 2);
  if ((size_t)n > SIZE_MAX / 128u) return luaL_error(L, "transform:%s: too many", fn);
  locals = (ecs_trs *)lua_newuserdatauv(L, (size_t)n * (sizeof *locals + sizeof *rows), 0);
  rows = (uint32_t *)(void *)(locals + n);
  for (lua_Integer k = 0; k < n; k++) {
    double v[4];
    ecs_entity e;
    for (int a = 0; a < na; a++) {
      int isnum;
      lua_rawgeti(L, 3 + a, k + 1);
      v[a] = (double)lua_tonumberx(L, -1, &isnum);
      lua_pop(L, 1);
      if (!isnum || !isfinite(v[a]))
        luaL_error(L, "transform:%s: %s[%d] is not a finite number", fn, axis[a],
                   (int)(k + 1));
    }
    if (rotation) check_quat(L, v, fn);
    lua_rawgeti(L, 2, k + 1);
    rows[k] = batch_row(L, t, k + 1, fn);
    e = (ecs_entity)((uintptr_t)lua_touserdata(L, -1) >> ECS_LUA_TAG_BITS);
    lua_pop(L, 1);
    ecs_transform_get_local(t, e, &locals[k]); /* cannot fail: e has a row */
    if (rotation) memcpy(locals[k].rotation, v, sizeof locals[k].rotation);
    else memcpy(locals[k].scale, v, sizeof locals[k].scale);
  }
  err = ecs_transform_set_locals(t, rows, locals, (size_t)n);
  if (err != ECS_ERR_OK) return tr_fail(L, fn, err);
  return 0;
}

static int l_tr_set_local_rotations(lua_State *L) {
  return tr_batch_locals(L, 1, "set_local_rotations");
}

static int l_tr_set_local_scales(lua_State *L) {
  return tr_batch_locals(L, 0, "set_local_scales");
}

/*
** T:world_positions(entities [, xs, ys, zs]) -> xs, ys, zs: the world
** positions of the entities, written into the given tables (new ones when
** absent).
*/
static int l_tr_world_positions(lua_State *L) {
  static const char fn[] = "world_positions";
  ecs_transform *t = check_tr(L);
  lua_Integer n;
  luaL_checktype(L, 2, LUA_TTABLE);
  n = (lua_Integer)lua_rawlen(L, 2);
  lua_settop(L, 5);
  for (int a = 3; a <= 5; a++) {
    if (lua_isnil(L, a)) {
      lua_createtable(L, n > INT32_MAX ? 0 : (int)n, 0);
      lua_replace(L, a);
    } else {
      luaL_checktype(L, a, LUA_TTABLE);
    }
  }
  for (lua_Integer k = 0; k < n; k++) {
    const double *m;
    lua_rawgeti(L, 2, k + 1);
    m = ecs_transform_world_at(t, batch_row(L, t, k + 1, fn));
    lua_pop(L, 1);
    lua_pushnumber(L, (lua_Number)m[12]);
    lua_rawseti(L, 3, k + 1);
    lua_pushnumber(L, (lua_Number)m[13]);
    lua_rawseti(L, 4, k + 1);
    lua_pushnumber(L, (lua_Number)m[14]);
    lua_rawseti(L, 5, k + 1);
  }
  lua_settop(L, 5);
  return 3;
}

static int l_tr_tostring(lua_State *L) {
  lua_pushfstring(L, "ecs.Transform (%p)", lua_touserdata(L, 1));
  return 1;
}

static const luaL_Reg tr_methods[] = {
  {"add", l_tr_add},
  {"remove", l_tr_remove},
  {"has", l_tr_has},
  {"set_local_position", l_tr_set_local_position},
  {"set_local_rotation", l_tr_set_local_rotation},
  {"set_local_scale", l_tr_set_local_scale},
  {"local_position", l_tr_local_position},
  {"local_rotation", l_tr_local_rotation},
  {"local_scale", l_tr_local_scale},
  {"world_position", l_tr_world_position},
  {"world_rotation", l_tr_world_rotation},
  {"world_matrix", l_tr_world_matrix},
  {"set_parent", l_tr_set_parent},
  {"parent", l_tr_parent},
  {"children", l_tr_children},
  {"destroy_tree", l_tr_destroy_tree},
  {"set_local_positions", l_tr_set_local_positions},
  {"set_local_rotations", l_tr_set_local_rotations},
  {"set_local_scales", l_tr_set_local_scales},
  {"world_positions", l_tr_world_positions},
  {"gc", l_tr_gc},
  {"size", l_tr_size},
  {NULL, NULL}
};

/* names:set(e, name) -- name is a string; the entity must be alive */
static int l_nm_set(lua_State *L) {
  ecs_names *m = check_names(L);
  ecs_entity e = check_entity(L, 2);
  size_t len;
  const char *s;
  ecs_err err;
  s = check_text(L, 3, &len, "names:set");
  err = ecs_names_set(m, e, s, len);
  if (err == ECS_ERR_DEAD) return luaL_error(L, "names:set: entity is not alive");
  if (err != ECS_ERR_OK) return luaL_error(L, "names:set: %s", ecs_strerror(err));
  charge(L, ((plugin_head *)lua_touserdata(L, 1))->o.h.lw);
  return 0;
}

/* names:get(e) -> name or nil */
static int l_nm_get(lua_State *L) {
  ecs_names *m = check_names(L);
  size_t len;
  const char *s = ecs_names_get(m, check_entity(L, 2), &len);
  if (s == NULL) lua_pushnil(L);
  else lua_pushlstring(L, s, len);
  return 1;
}

/* names:clear(e) -> boolean (false if it had no name) */
static int l_nm_clear(lua_State *L) {
  ecs_names *m = check_names(L);
  lua_pushboolean(L, ecs_names_clear(m, check_entity(L, 2)));
  return 1;
}

/* names:find(name) -> entity or nil */
static int l_nm_find(lua_State *L) {
  ecs_names *m = check_names(L);
  size_t len;
  const char *s;
  ecs_entity e;
  s = check_text(L, 2, &len, "names:find");
  e = ecs_names_find(m, s, len);
  if (e == ECS_NULL) lua_pushnil(L);
  else push_entity(L, e);
  return 1;
}

/* names:gc([budget]) -> records reclaimed */
static int l_nm_gc(lua_State *L) {
  ecs_names *m = check_names(L);
  lua_pushinteger(L, (lua_Integer)ecs_names_gc(m, gc_budget(L, 2)));
  return 1;
}

static int l_nm_tostring(lua_State *L) {
  lua_pushfstring(L, "ecs.Names (%p)", lua_touserdata(L, 1));
  return 1;
}

static const luaL_Reg nm_methods[] = {
  {"set", l_nm_set},
  {"get", l_nm_get},
  {"clear", l_nm_clear},
  {"find", l_nm_find},
  {"gc", l_nm_gc},
  {NULL, NULL}
};

/* A built-in plugin class (check_builtin) with its __tostring. */
static void builtin_class(lua_State *L, const char *tname, const luaL_Reg *methods,
                          lua_CFunction tostring) {
  ecs_lua_plugin_class(L, tname, methods);
  luaL_getmetatable(L, tname);                           /* mt */
  lua_pushcfunction(L, tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}

static void open_builtins(lua_State *L) {
  builtin_class(L, ECS_LUA_TRANSFORM, tr_methods, l_tr_tostring);
  builtin_class(L, ECS_LUA_NAMES, nm_methods, l_nm_tostring);
}

/*
** Push world.transform or world.names (widx: the world), creating it on
** first access: the Lua object first (a memory error then leaves nothing
** behind), then the core manager, unless C code registered one already.
*/
static void push_builtin(lua_State *L, int widx, int which) {
  const char *tname = which == 0 ? ECS_LUA_TRANSFORM : ECS_LUA_NAMES;
  ecs_world *w = ecs_lua_check_world(L, widx);
  void *obj;
  ecs_err err = ECS_ERR_OK;
  if (ecs_lua_plugin_get(L, widx, tname) != LUA_TNIL) return;
  lua_pop(L, 1);
  obj = ecs_lua_plugin_new(L, widx, tname, which == 0 ? sizeof(ltransform)
                                                      : sizeof(lnames));
  if (which == 0) {
    ltransform *o = (ltransform *)obj;
    o->t = ecs_transform_of(w);
    if (o->t == NULL) err = ecs_transform_new(w, &o->t);
  } else {
    lnames *o = (lnames *)obj;
    o->m = ecs_names_of(w);
    if (o->m == NULL) err = ecs_names_new(w, &o->m);
  }
  if (err != ECS_ERR_OK) {
    ecs_lua_plugin_detach(L, widx, tname);
    luaL_error(L, "world.%s: %s", which == 0 ? "transform" : "names",
               ecs_strerror(err));
  }
}

/*
** The fields every world has: world.transform and world.names, created with
** the world and stored in its own __index table (whose metatable sends
** every other key to the shared methods table), so a method lookup is two
** table reads and no function call.
*/
static void open_world_fields(lua_State *L, int widx) {
  lua_getmetatable(L, widx);                             /* mt */
  lua_getfield(L, -1, "__index");                        /* mt, fields */
  push_builtin(L, widx, 0);
  lua_setfield(L, -2, "transform");
  push_builtin(L, widx, 1);
  lua_setfield(L, -2, "names");
  lua_pop(L, 2);
}

/*
** ecs._lightuserdata(n) -> a light userdata with pointer value n: lets
** specs pass light userdata that are not entity handles (test only).
*/
static int l_lightuserdata(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  lua_pushlightuserdata(L, (void *)(uintptr_t)(lua_Unsigned)n);
  return 1;
}

/* ================== end of the transform and names section ============ */

/* ======================================================================
** Queries and systems (issue #4; docs/queries.md)
**
** A query is a full userdata of class ECS_LUA_QUERY (lquery) with user
** values: 1 the world userdata (keeps it alive; closed check), 2 a cache
** table (resolved column specs, one reusable iterator and one reusable
** columns state; compiled programs live in the core query), 3 the list of its
** managers (keeps them alive; q:components()). The core query (query.h)
** belongs to the core world, which frees it at close; the userdata frees
** it on __gc while the world is open.
**
** Systems live in the world's state table under systems_key: a list of
** records { name, query, kind, function | expression text | native, params,
** calls, seconds, entities } in run order. The list is replaced, never
** edited in place, when a system is removed, so an update in progress
** walks a stable list.
** ==================================================================== */

#define ECS_LUA_QUERY "ecs.Query"
#define ECS_LUA_QUERY_ITER "ecs.QueryIterator"
#define ECS_LUA_COLUMNS "ecs.Columns"
#define ECS_LUA_NATIVE "ecs.NativeSystem"
/* rows per chunk of q:columns */
#define COLUMNS_CHUNK 1024u
/* most specs in one q:columns call or one native system */
#define MAX_COLUMNS 64

static const char systems_key = 's';

typedef struct lquery {
  lhead h;
  lworld *lw; /* == h.lw */
  ecs_query *q;
  uint32_t nwith;
} lquery;

/* Cache slots in user value 2 of a query */
enum { QC_ITER = 1, QC_COLUMNS = 2, QC_SPECS = 3 };

static lquery *check_query(lua_State *L, int idx) {
  lquery *lq = (lquery *)test_object(L, idx, &query_tag);
  if (lq == NULL) object_error(L, idx, ECS_LUA_QUERY);
  if (lq->q == NULL || lq->lw->w == NULL) luaL_error(L, CLOSED_WORLD);
  return lq;
}

static int query_fail(lua_State *L, const char *fn, ecs_err err) {
  return luaL_error(L, "q:%s: %s", fn, ecs_strerror(err));
}

/* Push cache table slot k of the query at qidx, creating it. */
static int push_query_cache(lua_State *L, int qidx, int k) {
  lua_getiuservalue(L, qidx, 2);                          /* cache */
  if (lua_rawgeti(L, -1, k) == LUA_TNIL) {                /* cache, nil */
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, k);
  }
  lua_remove(L, -2);
  return lua_gettop(L);
}

/* The manager at idx (stack index arg of the call), of the world lw. */
static ecs_component *query_term(lua_State *L, int idx, lworld *lw, int arg) {
  lcomponent *lc;
  if (!is_comp(L, idx))
    luaL_argerror(L, arg, lua_pushfstring(L, "component expected, got %s",
                                          value_type_name(L, idx)));
  lc = (lcomponent *)lua_touserdata(L, idx);
  if (lc->c == NULL || lc->lw->w == NULL)
    luaL_error(L, "attempt to use a closed world");
  if (lc->lw != lw) luaL_argerror(L, arg, "component of another world");
  return lc->c;
}

/*
** world:query(C1, C2, ...) or world:query({ C1, C2, without = { C3 } })
** Terms are checked and collected in a list (user value 3) before the core
** query is made, so nothing raises after it exists.
*/
static int l_world_query(lua_State *L) {
  ecs_component *term[ECS_QUERY_MAX_TERMS];
  uint32_t nwith = 0, nwithout = 0;
  lworld *lw;
  lquery *lq;
  ecs_err err;
  int top, list;
  check_world(L, 1);
  lw = to_lworld(L, 1);
  top = lua_gettop(L);
  lua_createtable(L, top, 1);                             /* list */
  list = lua_gettop(L);
  if (top == 2 && lua_type(L, 2) == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, 2), m = 0;
    int wo;
    if (n > (lua_Integer)ECS_QUERY_MAX_TERMS)
      return luaL_error(L, "world:query: too many components (limit %d)",
                        (int)ECS_QUERY_MAX_TERMS);
    for (lua_Integer k = 1; k <= n; k++) {
      lua_rawgeti(L, 2, k);
      term[nwith++] = query_term(L, -1, lw, 2);
      lua_rawseti(L, list, (lua_Integer)nwith);
    }
    lua_pushliteral(L, "without");
    wo = lua_rawget(L, 2);
    if (wo != LUA_TNIL) {
      if (wo != LUA_TTABLE)
        return luaL_error(L, "world:query: 'without' must be a list of "
                          "components, got %s", luaL_typename(L, -1));
      m = (lua_Integer)lua_rawlen(L, -1);
      if (m > (lua_Integer)(ECS_QUERY_MAX_TERMS - nwith))
        return luaL_error(L, "world:query: too many components (limit %d)",
                          (int)ECS_QUERY_MAX_TERMS);
      for (lua_Integer k = 1; k <= m; k++) {
        lua_rawgeti(L, -1, k);
        term[nwith + nwithout++] = query_term(L, -1, lw, 2);
        lua_rawseti(L, list, (lua_Integer)(nwith + nwithout));
      }
    }
    lua_pop(L, 1);
  } else {
    if (top - 1 > (int)ECS_QUERY_MAX_TERMS)
      return luaL_error(L, "world:query: too many components (limit %d)",
                        (int)ECS_QUERY_MAX_TERMS);
    for (int k = 2; k <= top; k++) {
      term[nwith++] = query_term(L, k, lw, k);
      lua_pushvalue(L, k);
      lua_rawseti(L, list, (lua_Integer)nwith);
    }
  }
  if (nwith == 0 && top == 2 && lua_type(L, 2) == LUA_TTABLE)
    return luaL_argerror(L, 2, "at least one component expected");
  if (nwith == 0)
    return luaL_error(L, "world:query: at least one component expected");
  for (uint32_t i = 0; i < nwith + nwithout; i++)
    for (uint32_t j = 0; j < i; j++)
      if (term[i] == term[j])
        return luaL_error(L, "world:query: component '%s' listed twice",
                          ecs_component_name(term[i]));
  lua_pushinteger(L, (lua_Integer)nwith);
  lua_setfield(L, list, "n");                             /* with count */
  lq = (lquery *)lua_newuserdatauv(L, sizeof *lq, 3);     /* list, q */
  init_head(&lq->h, &query_tag, lw);
  lq->lw = lw;
  lq->q = NULL;
  lq->nwith = nwith;
  luaL_setmetatable(L, ECS_LUA_QUERY);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  lua_newtable(L);
  lua_setiuservalue(L, -2, 2);
  lua_pushvalue(L, list);
  lua_setiuservalue(L, -2, 3);
  if (lw->w == NULL) return luaL_error(L, "attempt to use a closed world");
  err = ecs_query_new(lw->w, term, nwith, term + nwith, nwithout, &lq->q);
  if (err != ECS_ERR_OK) {
    lq->q = NULL;
    return ecs_lua_error(L, "world:query", err);
  }
  charge(L, lw);
  return 1;
}

/* __gc: free the core query while the world is open. Never raises. */
static int l_query_gc(lua_State *L) {
  lquery *lq = (lquery *)test_object(L, 1, &query_tag);
  if (lq == NULL) return 0;
  if (lq->q != NULL && lq->lw->w != NULL) ecs_query_free(lq->lw->w, lq->q);
  lq->q = NULL;
  return 0;
}

/* q:count() -> live matches */
static int l_query_count(lua_State *L) {
  lquery *lq = check_query(L, 1);
  size_t n;
  ecs_err err = ecs_query_count(lq->lw->w, lq->q, &n);
  if (err != ECS_ERR_OK) return query_fail(L, "count", err);
  lua_pushinteger(L, (lua_Integer)n);
  charge(L, lq->lw); /* a rebuilt match list */
  return 1;
}

/* q:components() -> { with managers }, { without managers } */
static int l_query_components(lua_State *L) {
  lquery *lq = check_query(L, 1);
  lua_Integer n;
  lua_getiuservalue(L, 1, 3);                             /* list */
  n = (lua_Integer)lua_rawlen(L, -1);
  lua_createtable(L, (int)lq->nwith, 0);
  lua_createtable(L, (int)(n - (lua_Integer)lq->nwith), 0);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, -3, k);
    if (k <= (lua_Integer)lq->nwith) lua_rawseti(L, -3, k);
    else lua_rawseti(L, -2, k - (lua_Integer)lq->nwith);
  }
  return 2;
}

static int l_query_tostring(lua_State *L) {
  lquery *lq = (lquery *)test_object(L, 1, &query_tag);
  if (lq == NULL) return object_error(L, 1, ECS_LUA_QUERY);
  if (lq->q == NULL || lq->lw->w == NULL) lua_pushliteral(L, "ecs.Query (closed)");
  else lua_pushfstring(L, "ecs.Query (%p)", (void *)lq);
  return 1;
}

/* ----------------------------------------------------------------------
** q:entities(): a pinned snapshot walked by a reusable iterator object
** whose __close (the generic for's fourth value) and __gc unpin it.
** ------------------------------------------------------------------- */

typedef struct lqiter {
  lhead h;
  lquery *lq;
  ecs_query_iter it;
  int active;
} lqiter;

static void qiter_end(lqiter *qi) {
  if (qi->active && qi->lq->q != NULL && qi->lq->lw->w != NULL)
    ecs_query_iter_end(qi->lq->lw->w, &qi->it);
  qi->active = 0;
}

static int l_qiter_close(lua_State *L) {
  lqiter *qi = (lqiter *)test_object(L, 1, &qiter_tag);
  if (qi != NULL) qiter_end(qi);
  return 0;
}

/*
** The per-entity step, made once (open_queries). Checking the state is a
** look at its lhead, not the registry lookup by name of luaL_checkudata.
*/
static const char qiter_next_key = 'n';

static int l_qiter_next(lua_State *L) {
  lqiter *qi = (lqiter *)test_object(L, 1, &qiter_tag);
  ecs_entity e;
  if (qi == NULL) return object_error(L, 1, ECS_LUA_QUERY_ITER);
  lua_settop(L, 1);
  if (!qi->active) return 0;
  if (qi->lq->q == NULL || qi->lq->lw->w == NULL)
    return luaL_error(L, "attempt to use a closed world");
  if (!ecs_query_iter_next(qi->lq->lw->w, &qi->it, &e)) {
    qiter_end(qi);
    return 0;
  }
  push_entity(L, e);
  return 1;
}

/* q:entities() -> next, iterator, nil, iterator */
static int l_query_entities(lua_State *L) {
  lquery *lq = check_query(L, 1);
  lqiter *qi;
  ecs_err err;
  lua_getiuservalue(L, 1, 2);                             /* cache */
  if (lua_rawgeti(L, -1, QC_ITER) == LUA_TUSERDATA &&
      !((lqiter *)lua_touserdata(L, -1))->active) {
    qi = (lqiter *)lua_touserdata(L, -1);                 /* reuse it */
  } else {
    lua_pop(L, 1);
    qi = (lqiter *)lua_newuserdatauv(L, sizeof *qi, 1);
    init_head(&qi->h, &qiter_tag, lq->lw);
    qi->lq = lq;
    qi->active = 0;
    luaL_setmetatable(L, ECS_LUA_QUERY_ITER);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);                          /* keeps q alive */
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, QC_ITER);
  }
  if (lq->lw->w == NULL) return luaL_error(L, "attempt to use a closed world");
  err = ecs_query_iter_begin(lq->lw->w, lq->q, &qi->it);
  if (err != ECS_ERR_OK) return query_fail(L, "entities", err);
  qi->active = 1;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &qiter_next_key);    /* cache, it, next */
  lua_insert(L, -2);                                      /* cache, next, it */
  lua_pushnil(L);
  lua_pushvalue(L, -2);                                   /* next, it, nil, it */
  charge(L, lq->lw); /* the loop body may run any Lua too */
  return 4;
}

/* ----------------------------------------------------------------------
** Column specs "Component.field[:in]", resolved once per query and spec
** string (cache slot QC_SPECS: spec -> packed integer).
** ------------------------------------------------------------------- */

typedef struct colspec {
  uint32_t term, field;
  ecs_type type;
  int write;
} colspec;

static colspec unpack_spec(lua_Integer v) {
  colspec s;
  s.write = (int)(v & 1);
  s.type = (ecs_type)((v >> 1) & 0xff);
  s.field = (uint32_t)((v >> 9) & 0xff);
  s.term = (uint32_t)((v >> 17) & 0xff);
  return s;
}

/* term of the "entity" pseudo-column: the chunk's entities, read-only */
#define ENTITY_TERM 0xffu

/* The spec at idx for the query at qidx (fn names the caller in errors). */
static colspec check_spec(lua_State *L, int qidx, int idx, const char *fn) {
  lquery *lq = (lquery *)lua_touserdata(L, qidx);
  size_t len, clen, flen;
  const char *s, *dot, *fname;
  int isnum, write = 1, k = -1, f;
  lua_Integer packed;
  ecs_component *c = NULL;
  check_text(L, idx, NULL, fn);
  push_query_cache(L, qidx, QC_SPECS);                    /* specs */
  lua_pushvalue(L, idx);
  lua_rawget(L, -2);                                      /* specs, packed */
  packed = lua_tointegerx(L, -1, &isnum);
  lua_pop(L, 2);
  if (isnum) return unpack_spec(packed);
  s = lua_tolstring(L, idx, &len);
  if (len > 3 && memcmp(s + len - 3, ":in", 3) == 0) {
    write = 0;
    len -= 3;
  }
  if (len == 6 && memcmp(s, "entity", 6) == 0) {
    colspec e;
    e.term = ENTITY_TERM;
    e.field = 0;
    e.type = ECS_ENTITY;
    e.write = 0;
    return e;
  }
  dot = (const char *)memchr(s, '.', len);
  if (dot == NULL)
    luaL_error(L, "%s: column '%s' must be 'Component.field'", fn, s);
  clen = (size_t)(dot - s);
  fname = dot + 1;
  flen = len - clen - 1;
  for (uint32_t t = 0; t < lq->nwith; t++) {
    const char *name = ecs_component_name(ecs_query_with(lq->q, t));
    if (strlen(name) == clen && memcmp(name, s, clen) == 0) k = (int)t;
  }
  if (k < 0)
    luaL_error(L, "%s: column '%s': no component '%s' among the query's",
               fn, s, lua_pushlstring(L, s, clen));
  c = ecs_query_with(lq->q, (uint32_t)k);
  f = ecs_component_field_index(c, fname, flen);
  if (f < 0) luaL_error(L, "%s: column '%s': unknown field", fn, s);
  if (ecs_component_field(c, (uint32_t)f)->type == ECS_LUA)
    luaL_error(L, "%s: column '%s': lua fields are not columns", fn, s);
  packed = (lua_Integer)write | (lua_Integer)ecs_component_field(c, (uint32_t)f)->type << 1 |
           (lua_Integer)f << 9 | (lua_Integer)k << 17;
  push_query_cache(L, qidx, QC_SPECS);
  lua_pushvalue(L, idx);
  lua_pushinteger(L, packed);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return unpack_spec(packed);
}

/* ----------------------------------------------------------------------
** q:columns(spec, ...): chunks of plain Lua arrays. The state object
** (lcolumns, reused between loops; a new one for a nested loop) holds the
** pinned iteration, the chunk's entities and rows, and scratch for the
** converted values of a write-back (checked whole before any is stored).
** User value 1: the query; 2: the list of Lua arrays.
** ------------------------------------------------------------------- */

typedef union cvalue {
  double f;
  int64_t i;
} cvalue;

typedef struct lcolumns {
  lhead h;
  lquery *lq;
  ecs_query_iter it;
  int active;
  uint32_t n;        /* rows of the chunk waiting for write-back (0: none) */
  uint32_t ncols, cap_cols;
  colspec col[MAX_COLUMNS];
  ecs_entity *ent;   /* COLUMNS_CHUNK */
  uint32_t *rows;    /* nwith * COLUMNS_CHUNK */
  cvalue *scratch;   /* cap_cols * COLUMNS_CHUNK */
} lcolumns;

/* Store one converted value of column spec s at row r. */
static void store_cvalue(void *base, ecs_type t, uint32_t r, cvalue v) {
  switch (t) {
  case ECS_F32: ((float *)base)[r] = (float)v.f; break;
  case ECS_F64: ((double *)base)[r] = v.f; break;
  case ECS_I8: ((int8_t *)base)[r] = (int8_t)v.i; break;
  case ECS_I16: ((int16_t *)base)[r] = (int16_t)v.i; break;
  case ECS_I32: ((int32_t *)base)[r] = (int32_t)v.i; break;
  case ECS_I64: ((int64_t *)base)[r] = v.i; break;
  case ECS_U8: case ECS_BOOL: ((uint8_t *)base)[r] = (uint8_t)v.i; break;
  case ECS_U16: ((uint16_t *)base)[r] = (uint16_t)v.i; break;
  case ECS_U32: ((uint32_t *)base)[r] = (uint32_t)v.i; break;
  case ECS_ENTITY: ((ecs_entity *)base)[r] = (ecs_entity)v.i; break;
  default: break;
  }
}

/* Raise the write-back error for row j of column k (the value is at -1). */
static int columns_bad(lua_State *L, lcolumns *st, uint32_t k, uint32_t j,
                       const char *expect) {
  ecs_component *c = ecs_query_with(st->lq->q, st->col[k].term);
  st->n = 0; /* nothing of this chunk is written back */
  if (lua_type(L, -1) == LUA_TNUMBER)
    return luaL_error(L, "q:columns: bad value for %s.%s at row %d (%s "
                      "expected, got %s)", ecs_component_name(c),
                      ecs_component_field(c, st->col[k].field)->name,
                      (int)j + 1, expect, lua_tostring(L, -1));
  return luaL_error(L, "q:columns: bad value for %s.%s at row %d (%s "
                    "expected, got %s)", ecs_component_name(c),
                    ecs_component_field(c, st->col[k].field)->name, (int)j + 1,
                    expect, value_type_name(L, -1));
}

/* Values read per batch in a write-back: pushed together, popped once. */
#define WRITE_BACK_BATCH 64

/*
** Convert and check the n values of array t (an absolute index) for a
** column of type ty into out. Values come onto the stack in batches (one
** pop per batch); a bad one raises through columns_bad, or, when quiet,
** makes it return false with the stack as it found it.
*/
static bool columns_read(lua_State *L, lcolumns *st, uint32_t k, int t,
                         uint32_t n, cvalue *out, bool quiet) {
  ecs_type ty = st->col[k].type;
  int base = lua_gettop(L);
  luaL_checkstack(L, WRITE_BACK_BATCH + 2, "columns write-back");
  for (uint32_t j0 = 0; j0 < n; j0 += WRITE_BACK_BATCH) {
    uint32_t m = n - j0 < WRITE_BACK_BATCH ? n - j0 : WRITE_BACK_BATCH;
    int type[WRITE_BACK_BATCH];
    for (uint32_t j = 0; j < m; j++)
      type[j] = lua_rawgeti(L, t, (lua_Integer)(j0 + j) + 1);
    for (uint32_t j = 0; j < m; j++) {
      int idx = base + 1 + (int)j;
      cvalue *o = &out[j0 + j];
      const char *bad = NULL;
      switch (ty) {
      case ECS_F32: case ECS_F64:
        if (type[j] == LUA_TNUMBER) o->f = (double)lua_tonumberx(L, idx, NULL);
        else bad = "number";
        break;
      case ECS_BOOL:
        if (type[j] == LUA_TBOOLEAN) o->i = lua_toboolean(L, idx);
        else bad = "boolean";
        break;
      case ECS_ENTITY:
        if (ecs_lua_is_entity(L, idx)) o->i = (int64_t)ecs_lua_check_entity(L, idx);
        else bad = "entity";
        break;
      default: {
        int isint = 0;
        lua_Integer v = type[j] == LUA_TNUMBER ? lua_tointegerx(L, idx, &isint) : 0;
        if (!isint) bad = "integer";
        else if ((int64_t)v < int_min[ty] || (int64_t)v > int_max[ty])
          bad = ecs_type_name(ty);
        else o->i = (int64_t)v;
      }
      }
      if (bad != NULL) {
        if (quiet) {
          lua_settop(L, base);
          return false;
        }
        lua_pushvalue(L, idx);
        columns_bad(L, st, k, j0 + j, bad);
      }
    }
    lua_settop(L, base);
  }
  return true;
}

/* Store n converted values: at rows[j] (exact rows), or, when the loop
** body changed the structure, at each still-matching entity's row now. */
static void columns_store(ecs_world *w, lcolumns *st, colspec s,
                          const cvalue *in, uint32_t n, bool current) {
  ecs_component *c = ecs_query_with(st->lq->q, s.term);
  void *base = ecs_component_column(c, s.field);
  const uint32_t *rows = st->rows + (size_t)s.term * COLUMNS_CHUNK;
  if (!current) {
    for (uint32_t j = 0; j < n; j++)
      if (ecs_query_matches(w, st->lq->q, st->ent[j]))
        store_cvalue(base, s.type, ecs_component_lookup(w, c, st->ent[j]),
                     in[j]);
    return;
  }
#define STORE_ROWS(T, V)                                                     \
  {                                                                          \
    T *col = (T *)base;                                                      \
    for (uint32_t j = 0; j < n; j++) col[rows[j]] = (T)(V);                  \
  }                                                                          \
  break;
  switch (s.type) {
  case ECS_F32: STORE_ROWS(float, in[j].f) /* beyond FLT_MAX: inf (Annex F) */
  case ECS_F64: STORE_ROWS(double, in[j].f)
  case ECS_I8: STORE_ROWS(int8_t, in[j].i)
  case ECS_I16: STORE_ROWS(int16_t, in[j].i)
  case ECS_I32: STORE_ROWS(int32_t, in[j].i)
  case ECS_I64: STORE_ROWS(int64_t, in[j].i)
  case ECS_U8: case ECS_BOOL: STORE_ROWS(uint8_t, in[j].i)
  case ECS_U16: STORE_ROWS(uint16_t, in[j].i)
  case ECS_U32: STORE_ROWS(uint32_t, in[j].i)
  case ECS_ENTITY: STORE_ROWS(ecs_entity, in[j].i)
  default: break;
  }
#undef STORE_ROWS
}

/*
** Write the pending chunk back: convert and check every value of every
** writable column into scratch (nothing is stored if one is bad), then
** store them. Rows are exact unless the loop body changed the structure.
** A bad value raises, or, when quiet (the loop body raised an error that
** must come out unchanged), drops the chunk silently.
*/
static void columns_write_back(lua_State *L, lcolumns *st, int sidx,
                               bool quiet) {
  ecs_world *w = st->lq->lw->w;
  uint32_t n = st->n, slot = 0;
  bool current;
  int arrays;
  if (n == 0) return;
  lua_getiuservalue(L, sidx, 2);                          /* arrays */
  arrays = lua_gettop(L);
  for (uint32_t k = 0; k < st->ncols; k++) {
    if (!st->col[k].write) continue;
    lua_rawgeti(L, arrays, (lua_Integer)k + 1);           /* arrays, t */
    if (!columns_read(L, st, k, lua_gettop(L), n,
                      st->scratch + (size_t)slot++ * COLUMNS_CHUNK, quiet)) {
      lua_pop(L, 2);
      st->n = 0;
      return;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  current = ecs_query_iter_current(w, &st->it);
  slot = 0;
  for (uint32_t k = 0; k < st->ncols; k++)
    if (st->col[k].write)
      columns_store(w, st, st->col[k],
                    st->scratch + (size_t)slot++ * COLUMNS_CHUNK, n, current);
  st->n = 0;
}

static void columns_end(lcolumns *st) {
  if (st->active && st->lq->q != NULL && st->lq->lw->w != NULL)
    ecs_query_iter_end(st->lq->lw->w, &st->it);
  st->active = 0;
  st->n = 0;
}

/*
** __close: write back the pending chunk (also on break and error). The
** iteration ends first: the write-back needs only the chunk's own copy of
** entities and rows, and may raise -- except when the loop is left by an
** error (argument 2): then a chunk with a bad value is dropped whole and
** the loop's own error goes on unchanged.
*/
static int l_columns_close(lua_State *L) {
  lcolumns *st = (lcolumns *)test_object(L, 1, &columns_tag);
  int pending;
  uint32_t n;
  if (st == NULL) return 0;
  pending = st->active && st->lq->q != NULL && st->lq->lw->w != NULL;
  n = st->n;
  bool raised = !lua_isnoneornil(L, 2);
  columns_end(st);
  if (pending && n > 0) {
    st->n = n;
    columns_write_back(L, st, 1, raised);
  }
  st->n = 0;
  return 0;
}

/* __gc: unpin only (a finalizer must not raise). */
static int l_columns_gc(lua_State *L) {
  lcolumns *st = (lcolumns *)test_object(L, 1, &columns_tag);
  if (st != NULL) columns_end(st);
  return 0;
}

/* Push column k of the chunk's n rows into its array (at t). */
static void columns_fill(lua_State *L, lcolumns *st, uint32_t k, int t,
                         uint32_t n) {
  colspec s = st->col[k];
  ecs_component *c;
  const void *base;
  const uint32_t *rows;
  if (s.term == ENTITY_TERM) {
    for (uint32_t j = 0; j < n; j++) {
      push_entity(L, st->ent[j]);
      lua_rawseti(L, t, (lua_Integer)j + 1);
    }
    return;
  }
  c = ecs_query_with(st->lq->q, s.term);
  base = ecs_component_column(c, s.field);
  rows = st->rows + (size_t)s.term * COLUMNS_CHUNK;
#define FILL(PUSH)                                                           \
  for (uint32_t j = 0; j < n; j++) {                                         \
    PUSH;                                                                    \
    lua_rawseti(L, t, (lua_Integer)j + 1);                                   \
  }                                                                          \
  break;
  switch (s.type) {
  case ECS_F32: FILL(lua_pushnumber(L, (lua_Number)((const float *)base)[rows[j]]))
  case ECS_F64: FILL(lua_pushnumber(L, ((const double *)base)[rows[j]]))
  case ECS_I8: FILL(lua_pushinteger(L, ((const int8_t *)base)[rows[j]]))
  case ECS_I16: FILL(lua_pushinteger(L, ((const int16_t *)base)[rows[j]]))
  case ECS_I32: FILL(lua_pushinteger(L, ((const int32_t *)base)[rows[j]]))
  case ECS_I64: FILL(lua_pushinteger(L, (lua_Integer)((const int64_t *)base)[rows[j]]))
  case ECS_U8: FILL(lua_pushinteger(L, ((const uint8_t *)base)[rows[j]]))
  case ECS_U16: FILL(lua_pushinteger(L, ((const uint16_t *)base)[rows[j]]))
  case ECS_U32: FILL(lua_pushinteger(L, (lua_Integer)((const uint32_t *)base)[rows[j]]))
  case ECS_BOOL: FILL(lua_pushboolean(L, ((const uint8_t *)base)[rows[j]] != 0))
  case ECS_ENTITY: FILL(push_entity(L, ((const ecs_entity *)base)[rows[j]]))
  default: break;
  }
#undef FILL
}

/* The iterator: write back the last chunk, fill the next -> n, arrays... */
static int l_columns_next(lua_State *L) {
  lcolumns *st = (lcolumns *)test_object(L, 1, &columns_tag);
  ecs_world *w;
  if (st == NULL) return object_error(L, 1, ECS_LUA_COLUMNS);
  uint32_t n;
  if (!st->active) return 0;
  if (st->lq->q == NULL || (w = st->lq->lw->w) == NULL)
    return luaL_error(L, "attempt to use a closed world");
  lua_settop(L, 1);
  columns_write_back(L, st, 1, false);
  n = ecs_query_iter_chunk(w, &st->it, COLUMNS_CHUNK, st->ent, st->rows);
  if (n == 0) {
    columns_end(st);
    return 0;
  }
  luaL_checkstack(L, (int)st->ncols + 4, "too many columns");
  lua_getiuservalue(L, 1, 2);                             /* st, arrays */
  lua_pushinteger(L, (lua_Integer)n);                     /* st, arrays, n */
  /* st->n is 0 here: a memory error while filling writes nothing back */
  for (uint32_t k = 0; k < st->ncols; k++) {
    lua_rawgeti(L, 2, (lua_Integer)k + 1);
    columns_fill(L, st, k, lua_gettop(L), n);
  }
  st->n = n;
  return (int)st->ncols + 1;
}

/* A columns state for nwith terms and at least ncols columns. */
static lcolumns *new_columns(lua_State *L, lquery *lq, uint32_t ncols) {
  uint32_t cap = ncols < 8u ? 8u : ncols;
  size_t head = (sizeof(lcolumns) + 7u) & ~(size_t)7u;
  size_t bytes = head + (size_t)cap * COLUMNS_CHUNK * sizeof(cvalue) +
                 (size_t)COLUMNS_CHUNK * sizeof(ecs_entity) +
                 (size_t)lq->nwith * COLUMNS_CHUNK * sizeof(uint32_t);
  lcolumns *st = (lcolumns *)lua_newuserdatauv(L, bytes, 2);
  memset(st, 0, sizeof *st);
  init_head(&st->h, &columns_tag, lq->lw);
  st->lq = lq;
  st->cap_cols = cap;
  st->scratch = (cvalue *)(void *)((char *)st + head);
  st->ent = (ecs_entity *)(void *)(st->scratch + (size_t)cap * COLUMNS_CHUNK);
  st->rows = st->ent + COLUMNS_CHUNK;
  luaL_setmetatable(L, ECS_LUA_COLUMNS);
  lua_createtable(L, (int)cap, 0);
  lua_setiuservalue(L, -2, 2);
  return st;
}

/* q:columns(spec, ...) -> next, state, nil, state */
static int l_query_columns(lua_State *L) {
  lquery *lq = check_query(L, 1);
  int nspec = lua_gettop(L) - 1, sidx;
  colspec spec[MAX_COLUMNS];
  lcolumns *st;
  ecs_err err;
  if (nspec < 1) return luaL_argerror(L, 2, "column spec expected");
  if (nspec > MAX_COLUMNS)
    return luaL_error(L, "q:columns: too many columns (limit %d)", MAX_COLUMNS);
  for (int k = 0; k < nspec; k++) spec[k] = check_spec(L, 1, k + 2, "q:columns");
  lua_getiuservalue(L, 1, 2);                             /* ..., cache */
  if (lua_rawgeti(L, -1, QC_COLUMNS) == LUA_TUSERDATA &&
      !((lcolumns *)lua_touserdata(L, -1))->active &&
      ((lcolumns *)lua_touserdata(L, -1))->cap_cols >= (uint32_t)nspec) {
    st = (lcolumns *)lua_touserdata(L, -1);
  } else {
    lua_pop(L, 1);
    st = new_columns(L, lq, (uint32_t)nspec);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);                          /* keeps q alive */
    if (lua_rawgeti(L, -2, QC_COLUMNS) != LUA_TUSERDATA ||
        !((lcolumns *)lua_touserdata(L, -1))->active) {
      lua_pop(L, 1);
      lua_pushvalue(L, -1);
      lua_rawseti(L, -3, QC_COLUMNS);                     /* cache it */
    } else {
      lua_pop(L, 1);
    }
  }
  sidx = lua_gettop(L);
  /* arrays 1..nspec, preallocated so that filling never resizes */
  lua_getiuservalue(L, sidx, 2);
  for (int k = 1; k <= nspec; k++) {
    if (lua_rawgeti(L, -1, k) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_createtable(L, (int)COLUMNS_CHUNK, 0);
      lua_rawseti(L, -2, k);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  for (int k = 0; k < nspec; k++) st->col[k] = spec[k];
  st->ncols = (uint32_t)nspec;
  st->n = 0;
  if (lq->lw->w == NULL) return luaL_error(L, "attempt to use a closed world");
  err = ecs_query_iter_begin(lq->lw->w, lq->q, &st->it);
  if (err != ECS_ERR_OK) return query_fail(L, "columns", err);
  st->active = 1;
  lua_pushcfunction(L, l_columns_next);
  lua_pushvalue(L, sidx);
  lua_pushnil(L);
  lua_pushvalue(L, sidx);
  charge(L, lq->lw); /* the loop body may run any Lua too */
  return 4;
}

/* ----------------------------------------------------------------------
** q:apply(expr [, params]): programs compiled once per query and text,
** kept by the core query (ecs_query_program: the ECS_QUERY_MAX_PROGRAMS
** most recently used texts), so a new text per frame costs a compile but
** no memory. A program pointer is used at once: anything that runs Lua
** code may ask the query for other texts and evict it.
** ------------------------------------------------------------------- */

/* The program for the expression at sidx on the query at qidx. */
static ecs_program *query_program(lua_State *L, int qidx, int sidx,
                                  const char *fn) {
  lquery *lq = (lquery *)lua_touserdata(L, qidx);
  ecs_program *p;
  char msg[256];
  size_t len;
  const char *src = check_text(L, sidx, &len, fn);
  ecs_err err;
  if (lq->q == NULL || lq->lw->w == NULL)
    luaL_error(L, "attempt to use a closed world");
  err = ecs_query_program(lq->lw->w, lq->q, src, len, &p, msg, sizeof msg);
  if (err != ECS_ERR_OK) luaL_error(L, "%s: %s", fn, msg);
  return p;
}

/*
** The program for the expression at sidx on the query at qidx, with its
** parameters read from the table at pidx (0: none) into v; a parameter
** named "dt" takes dt when has_dt. A params table with a metatable may run
** Lua code on each read, so the program is looked up again after each.
*/
static ecs_program *program_params(lua_State *L, int qidx, int sidx, int pidx,
                                   double *v, int has_dt, double dt,
                                   const char *fn) {
  ecs_program *p = query_program(L, qidx, sidx, fn);
  int meta = pidx != 0 && lua_getmetatable(L, pidx);
  if (meta) lua_pop(L, 1);
  for (uint32_t k = 0; k < ecs_program_param_count(p); k++) {
    const char *name = ecs_program_param_name(p, k);
    int t;
    if (has_dt && strcmp(name, "dt") == 0) {
      v[k] = dt;
      continue;
    }
    if (pidx == 0)
      luaL_error(L, "%s: parameter '%s' needs a params table at position %d",
                 fn, name, (int)ecs_program_param_position(p, k));
    t = lua_getfield(L, pidx, name);
    if (meta) p = query_program(L, qidx, sidx, fn); /* same text, same order */
    if (t != LUA_TNUMBER)
      luaL_error(L, "%s: parameter '%s' must be a number (got %s) at "
                 "position %d", fn, ecs_program_param_name(p, k),
                 luaL_typename(L, -1), (int)ecs_program_param_position(p, k));
    v[k] = (double)lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  return p;
}

/* q:apply(expr [, params]) -> entities processed */
static int l_query_apply(lua_State *L) {
  lquery *lq = check_query(L, 1);
  double params[ECS_PROGRAM_MAX_PARAMS];
  ecs_program *p;
  size_t done;
  ecs_err err;
  if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  lua_settop(L, 3);
  p = program_params(L, 1, 2, lua_isnil(L, 3) ? 0 : 3, params, 0, 0.0,
                     "q:apply");
  err = ecs_program_run(lq->lw->w, p, params, &done);
  if (err != ECS_ERR_OK) return query_fail(L, "apply", err);
  lua_pushinteger(L, (lua_Integer)done);
  charge(L, lq->lw);
  return 1;
}

/* q:programs() -> compiled expressions the query keeps (at most 32) */
static int l_query_programs(lua_State *L) {
  lquery *lq = check_query(L, 1);
  lua_pushinteger(L, (lua_Integer)ecs_query_program_count(lq->q));
  return 1;
}

/* ----------------------------------------------------------------------
** Native systems: C functions wrapped by ecs_lua_push_native, resolved
** against a query when run (column specs as in q:columns).
** ------------------------------------------------------------------- */

typedef struct lnative {
  lhead h; /* no world */
  ecs_system_fn fn;
  void *ud;
  int nspec;
} lnative;

void ecs_lua_push_native(lua_State *L, const char *name, ecs_system_fn fn,
                         void *ud, const char *const *specs, int nspecs) {
  lnative *nv;
  luaL_argcheck(L, nspecs >= 0 && nspecs <= MAX_COLUMNS, 1,
                "too many columns for a native system");
  nv = (lnative *)lua_newuserdatauv(L, sizeof *nv, 3);
  init_head(&nv->h, &native_tag, NULL);
  nv->fn = fn;
  nv->ud = ud;
  nv->nspec = nspecs;
  luaL_setmetatable(L, ECS_LUA_NATIVE);
  lua_createtable(L, nspecs, 0);
  for (int k = 0; k < nspecs; k++) {
    lua_pushstring(L, specs[k]);
    lua_rawseti(L, -2, k + 1);
  }
  lua_setiuservalue(L, -2, 1);
  lua_pushstring(L, name);
  lua_setiuservalue(L, -2, 2);
}

/* Run the native at nidx over the query at qidx. @return entities. */
static size_t run_native(lua_State *L, int qidx, int nidx, double dt,
                         const char *fn) {
  lquery *lq = (lquery *)lua_touserdata(L, qidx);
  lnative *nv = (lnative *)lua_touserdata(L, nidx);
  ecs_column_ref cols[MAX_COLUMNS];
  size_t done;
  ecs_err err;
  luaL_checkstack(L, 4, NULL);
  lua_getiuservalue(L, nidx, 1);                          /* specs */
  for (int k = 0; k < nv->nspec; k++) {
    colspec s;
    lua_rawgeti(L, -1, k + 1);
    s = check_spec(L, qidx, lua_gettop(L), fn);
    if (s.term == ENTITY_TERM)
      luaL_error(L, "%s: 'entity' is not a column of native systems (they "
                 "get view->entities)", fn);
    lua_pop(L, 1);
    cols[k].c = ecs_query_with(lq->q, s.term);
    cols[k].field = s.field;
    cols[k].write = s.write != 0;
  }
  lua_pop(L, 1);
  if (lq->lw->w == NULL) luaL_error(L, "attempt to use a closed world");
  err = ecs_query_run(lq->lw->w, lq->q, cols, (uint32_t)nv->nspec, dt, nv->fn,
                      nv->ud, &done);
  if (err != ECS_ERR_OK) luaL_error(L, "%s: %s", fn, ecs_strerror(err));
  return done;
}

/* q:run(native [, dt]) -> entities processed */
static int l_query_run(lua_State *L) {
  double dt;
  check_query(L, 1);
  if (test_object(L, 2, &native_tag) == NULL)
    return object_error(L, 2, ECS_LUA_NATIVE);
  dt = (double)luaL_optnumber(L, 3, 0.0);
  lua_pushinteger(L, (lua_Integer)run_native(L, 1, 2, dt, "q:run"));
  charge(L, ((lquery *)lua_touserdata(L, 1))->lw);
  return 1;
}

static int l_native_tostring(lua_State *L) {
  if (test_object(L, 1, &native_tag) == NULL)
    return object_error(L, 1, ECS_LUA_NATIVE);
  lua_getiuservalue(L, 1, 2);
  lua_pushfstring(L, "ecs.NativeSystem (%s)", lua_tostring(L, -1));
  return 1;
}

/* ----------------------------------------------------------------------
** Systems and world:update
** ------------------------------------------------------------------- */

enum { SYS_NAME = 1, SYS_QUERY, SYS_KIND, SYS_BODY, SYS_PARAMS, SYS_CALLS,
       SYS_SECONDS, SYS_ENTITIES, SYS__COUNT };
enum { KIND_LUA = 1, KIND_EXPR, KIND_NATIVE };
static const char *const kind_name[] = { "", "lua", "expression", "native" };

/* Push the world's system list (creating it). */
static int push_systems(lua_State *L, int widx) {
  need_state_field(L, widx, &systems_key);
  return lua_gettop(L);
}

/* The position of the system named by the string at nidx in the list, or 0. */
static lua_Integer find_system(lua_State *L, int list, int nidx) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, list);
  for (lua_Integer k = 1; k <= n; k++) {
    int eq;
    lua_rawgeti(L, list, k);
    lua_rawgeti(L, -1, SYS_NAME);
    eq = lua_rawequal(L, -1, nidx);
    lua_pop(L, 2);
    if (eq) return k;
  }
  return 0;
}

/*
** world:system(name, query, fn | expr | native [, params])
** world:system(name, fn)  -- a Lua system with no query
*/
static int l_world_system(lua_State *L) {
  lquery *lq = NULL;
  int kind, list;
  check_world(L, 1);
  check_text(L, 2, NULL, "world:system");
  if (lua_type(L, 3) == LUA_TFUNCTION && lua_isnone(L, 4)) {
    lua_pushboolean(L, 0);                                /* no query */
    lua_insert(L, 3);
  } else {
    lq = check_query(L, 3);
    if (lq->lw != to_lworld(L, 1))
      return luaL_argerror(L, 3, "query of another world");
  }
  switch (lua_type(L, 4)) {
  case LUA_TFUNCTION: kind = KIND_LUA; break;
  case LUA_TSTRING: kind = KIND_EXPR; break;
  default:
    if (test_object(L, 4, &native_tag) == NULL)
      return luaL_typeerror(L, 4, "function, expression or native system");
    kind = KIND_NATIVE;
  }
  if (!lua_isnoneornil(L, 5)) luaL_checktype(L, 5, LUA_TTABLE);
  lua_settop(L, 5);
  list = push_systems(L, 1);                              /* 6 */
  if (find_system(L, list, 2) != 0)
    return luaL_error(L, "world:system: a system named '%s' already exists",
                      lua_tostring(L, 2));
  if (kind == KIND_EXPR) { /* compiled and checked now; the text is kept */
    double v[ECS_PROGRAM_MAX_PARAMS];
    program_params(L, 3, 4, lua_isnil(L, 5) ? 0 : 5, v, 1, 0.0, "world:system");
  } else if (kind == KIND_NATIVE) {
    lnative *nv = (lnative *)lua_touserdata(L, 4);
    lua_getiuservalue(L, 4, 1);                           /* check its specs */
    for (int k = 0; k < nv->nspec; k++) {
      lua_rawgeti(L, -1, k + 1);
      if (check_spec(L, 3, lua_gettop(L), "world:system").term == ENTITY_TERM)
        return luaL_error(L, "world:system: 'entity' is not a column of "
                          "native systems");
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_createtable(L, SYS__COUNT - 1, 0);                  /* 7: record */
  lua_pushvalue(L, 2);
  lua_rawseti(L, 7, SYS_NAME);
  lua_pushvalue(L, 3);
  lua_rawseti(L, 7, SYS_QUERY);
  lua_pushinteger(L, kind);
  lua_rawseti(L, 7, SYS_KIND);
  lua_pushvalue(L, 4);
  lua_rawseti(L, 7, SYS_BODY);
  if (lua_isnil(L, 5)) lua_pushboolean(L, 0);
  else lua_pushvalue(L, 5);
  lua_rawseti(L, 7, SYS_PARAMS);
  for (int k = SYS_CALLS; k <= SYS_ENTITIES; k++) {
    lua_pushinteger(L, 0);
    if (k == SYS_SECONDS) {
      lua_pop(L, 1);
      lua_pushnumber(L, 0.0);
    }
    lua_rawseti(L, 7, k);
  }
  lua_rawseti(L, list, (lua_Integer)lua_rawlen(L, list) + 1);
  charge(L, self_lworld(L)); /* a compiled program */
  return 0;
}

/* world:remove_system(name) -> boolean. The list is replaced, not edited. */
static int l_world_remove_system(lua_State *L) {
  lua_Integer at, n;
  int list;
  check_world(L, 1);
  check_text(L, 2, NULL, "world:remove_system");
  list = push_systems(L, 1);
  at = find_system(L, list, 2);
  if (at == 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  n = (lua_Integer)lua_rawlen(L, list);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer k = 1, j = 1; k <= n; k++) {
    if (k == at) continue;
    lua_rawgeti(L, list, k);
    lua_rawseti(L, -2, j++);
  }
  lua_getiuservalue(L, 1, 1);
  lua_insert(L, -2);
  lua_rawsetp(L, -2, &systems_key);
  lua_pushboolean(L, 1);
  return 1;
}

/* world:systems() -> { names in run order } */
static int l_world_systems(lua_State *L) {
  lua_Integer n;
  int list;
  check_world(L, 1);
  list = push_systems(L, 1);
  n = (lua_Integer)lua_rawlen(L, list);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, list, k);
    lua_rawgeti(L, -1, SYS_NAME);
    lua_rawseti(L, -3, k);
    lua_pop(L, 1);
  }
  return 1;
}

/* world:stats() -> { { name=, kind=, calls=, seconds=, entities= }, ... } */
static int l_world_stats(lua_State *L) {
  lua_Integer n;
  int list;
  check_world(L, 1);
  list = push_systems(L, 1);
  n = (lua_Integer)lua_rawlen(L, list);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, list, k);                              /* list, out, rec */
    lua_createtable(L, 0, 5);                             /* ..., rec, s */
    lua_rawgeti(L, -2, SYS_NAME);
    lua_setfield(L, -2, "name");
    lua_rawgeti(L, -2, SYS_KIND);
    lua_pushstring(L, kind_name[lua_tointeger(L, -1)]);
    lua_setfield(L, -3, "kind");
    lua_pop(L, 1);
    lua_rawgeti(L, -2, SYS_CALLS);
    lua_setfield(L, -2, "calls");
    lua_rawgeti(L, -2, SYS_SECONDS);
    lua_setfield(L, -2, "seconds");
    lua_rawgeti(L, -2, SYS_ENTITIES);
    lua_setfield(L, -2, "entities");
    lua_rawseti(L, -3, k);
    lua_pop(L, 1);
  }
  return 1;
}

/* world:reset_stats() */
static int l_world_reset_stats(lua_State *L) {
  lua_Integer n;
  int list;
  check_world(L, 1);
  list = push_systems(L, 1);
  n = (lua_Integer)lua_rawlen(L, list);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, list, k);
    lua_pushinteger(L, 0);
    lua_rawseti(L, -2, SYS_CALLS);
    lua_pushnumber(L, 0.0);
    lua_rawseti(L, -2, SYS_SECONDS);
    lua_pushinteger(L, 0);
    lua_rawseti(L, -2, SYS_ENTITIES);
    lua_pop(L, 1);
  }
  return 0;
}

/* Monotonic wall time in seconds (the core's clock). */
static double now(void) { return ecs_clock(); }

/*
** Run the systems of the world at 1 in order. The list is held on the
** stack, so a system that adds (appended, not run this update) or removes
** (a new list) systems does not disturb this walk. A Lua system's error
** propagates unchanged; nothing in C is left locked across the call.
*/
static void run_systems(lua_State *L, double dt) {
  lworld *lw = to_lworld(L, 1);
  int list = push_systems(L, 1);
  lua_Integer n = (lua_Integer)lua_rawlen(L, list);
  for (lua_Integer k = 1; k <= n; k++) {
    int rec, kind;
    double t0;
    size_t done = 0;
    lua_rawgeti(L, list, k);
    rec = lua_gettop(L);
    lua_rawgeti(L, rec, SYS_QUERY);                       /* rec, q */
    lua_rawgeti(L, rec, SYS_KIND);
    kind = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    lua_rawgeti(L, rec, SYS_BODY);                        /* rec, q, body */
    t0 = now();
    if (kind == KIND_LUA) { /* fn(dt, q): its count, or the query's */
      int isint;
      lua_Integer cnt;
      lua_pushnumber(L, (lua_Number)dt);
      if (lua_toboolean(L, rec + 1)) lua_pushvalue(L, rec + 1);
      else lua_pushnil(L);                                /* no query */
      /* the body is user code by design: this call is not in progress
      ** meanwhile (it keeps no core pointer across it), so a close
      ** there releases the world at once, and an error leaves no count */
      lw->busy--;
      lua_call(L, 2, 1);                                  /* rec, q, r */
      lw->busy++;
      if (lw->w == NULL) return; /* the system closed it */
      cnt = lua_tointegerx(L, -1, &isint);
      if (isint && cnt >= 0) {
        done = (size_t)cnt;
      } else if (lua_toboolean(L, rec + 1)) {
        lquery *lq = check_query(L, rec + 1);
        size_t matches;
        if (ecs_query_count(lq->lw->w, lq->q, &matches) == ECS_ERR_OK)
          done = matches;
      }
    } else if (kind == KIND_EXPR) { /* body: the text, compiled at most once
                                        while the query keeps it */
      double v[ECS_PROGRAM_MAX_PARAMS];
      lquery *lq = check_query(L, rec + 1);
      ecs_program *p;
      int pidx;
      lua_rawgeti(L, rec, SYS_PARAMS);
      pidx = lua_istable(L, -1) ? lua_gettop(L) : 0;
      p = program_params(L, rec + 1, rec + 2, pidx, v, 1, dt, "world:update");
      if (lq->lw->w == NULL) return; /* a params metamethod closed it */
      if (ecs_program_run(lq->lw->w, p, v, &done) != ECS_ERR_OK)
        luaL_error(L, "world:update: not enough memory");
    } else {
      check_query(L, rec + 1);
      done = run_native(L, rec + 1, rec + 2, dt, "world:update");
    }
    t0 = now() - t0;
    lua_settop(L, rec);
    lua_rawgeti(L, rec, SYS_CALLS);
    lua_pushinteger(L, lua_tointeger(L, -1) + 1);
    lua_rawseti(L, rec, SYS_CALLS);
    lua_rawgeti(L, rec, SYS_SECONDS);
    lua_pushnumber(L, lua_tonumber(L, -1) + (lua_Number)t0);
    lua_rawseti(L, rec, SYS_SECONDS);
    lua_rawgeti(L, rec, SYS_ENTITIES);
    lua_pushinteger(L, lua_tointeger(L, -1) + (lua_Integer)done);
    lua_rawseti(L, rec, SYS_ENTITIES);
    lua_settop(L, list);
  }
  lua_pop(L, 1);
}

static const luaL_Reg query_methods[] = {
  {"count", l_query_count},
  {"entities", l_query_entities},
  {"columns", l_query_columns},
  {"apply", l_query_apply},
  {"programs", l_query_programs},
  {"run", l_query_run},
  {"components", l_query_components},
  {NULL, NULL}
};

/* A class: methods (if any) as __index and __methods, plus metamethods. */
static void query_class(lua_State *L, const char *tname, const luaL_Reg *methods,
                        const luaL_Reg *meta) {
  luaL_newmetatable(L, tname);
  luaL_setfuncs(L, meta, 0);
  if (methods != NULL) {
    lua_newtable(L);
    set_methods(L, methods, &query_tag, tname);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__index");
    lua_setfield(L, -2, "__methods");
  }
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
}

static void open_queries(lua_State *L) {
  static const luaL_Reg query_meta[] = {
    {"__gc", l_query_gc}, {"__tostring", l_query_tostring}, {NULL, NULL}};
  static const luaL_Reg iter_meta[] = {
    {"__close", l_qiter_close}, {"__gc", l_qiter_close}, {NULL, NULL}};
  static const luaL_Reg columns_meta[] = {
    {"__close", l_columns_close}, {"__gc", l_columns_gc}, {NULL, NULL}};
  static const luaL_Reg native_meta[] = {
    {"__tostring", l_native_tostring}, {NULL, NULL}};
  query_class(L, ECS_LUA_QUERY, query_methods, query_meta);
  query_class(L, ECS_LUA_QUERY_ITER, NULL, iter_meta);
  lua_pushcfunction(L, l_qiter_next);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &qiter_next_key);
  query_class(L, ECS_LUA_COLUMNS, NULL, columns_meta);
  query_class(L, ECS_LUA_NATIVE, NULL, native_meta);
}

/* ===================== end of the queries section ===================== */

static const luaL_Reg world_methods[] = {
  {"create", l_world_create},
  {"destroy", l_world_destroy},
  {"alive", l_world_alive},
  {"count", l_world_count},
  {"memory", l_world_memory},
  {"entities", l_world_entities},
  {"update", l_world_update},
  {"check", l_world_check},
  {"close", l_world_close},
  {"component", l_world_component},   /* components section */
  {"components", l_world_components}, /* components section */
  {"query", l_world_query},           /* queries section */
  {"system", l_world_system},
  {"remove_system", l_world_remove_system},
  {"systems", l_world_systems},
  {"stats", l_world_stats},
  {"reset_stats", l_world_reset_stats},
  {NULL, NULL}
};

static const luaL_Reg world_meta[] = {
  {"__gc", l_world_gc},
  {"__close", l_world_close},
  {"__tostring", l_world_tostring},
  {NULL, NULL}
};

/*
** The class template every world's metatable is copied from (__name,
** metamethods, __methods for the argument sweep), and the
** shared metatable of every world's fields table: { __index = methods }.
*/
static void open_world(lua_State *L) {
  luaL_newmetatable(L, ECS_LUA_WORLD);                   /* tpl */
  luaL_setfuncs(L, world_meta, 0);
  lua_newtable(L);                                       /* tpl, methods */
  set_methods(L, world_methods, &world_tag, ECS_LUA_WORLD);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__methods");
  luaL_newmetatable(L, ECS_LUA_WORLD_FIELDS);            /* tpl, methods, fmt */
  lua_insert(L, -2);                                     /* tpl, fmt, methods */
  lua_setfield(L, -2, "__index");                        /* tpl, fmt */
  lua_pop(L, 1);
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
}

/* ======================================================================
** Module
** ==================================================================== */

static const luaL_Reg module_functions[] = {
  {"is_entity", l_is_entity},
  {"id", l_id},
  {"entity", l_entity},
  {"index", l_index},
  {"generation", l_generation},
  {"tostring", l_tostring},
  {"world", l_world_new},
  {NULL, NULL}
};

LUAMOD_API int luaopen_ecs_core(lua_State *L);

LUAMOD_API int luaopen_ecs_core(lua_State *L) {
  open_world(L);
  open_components(L);  /* components section */
  preload_plugins(L);  /* components section */
  open_builtins(L);    /* transform branch */
  open_queries(L);     /* queries section */
  luaL_newlib(L, module_functions);
  lua_pushcfunction(L, l_lightuserdata); /* transform branch: test helper */
  lua_setfield(L, -2, "_lightuserdata");
  push_entity(L, ECS_NULL);
  lua_setfield(L, -2, "null");
  lua_pushinteger(L, (lua_Integer)ECS_MAX_ENTITIES);
  lua_setfield(L, -2, "MAX_ENTITIES");
  return 1;
}
