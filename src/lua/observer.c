/*
** observer.c -- part of the Lua binding (src/lua/binding.h): observers,
** C:on_add(fn), C:on_remove(fn), C:on_set(fn) on components and on
** world.transform and world.names (docs/observers.md).
**
** An observer is a listener of the core (ecs.h, ecs_manager_listen) whose
** ud is the observer block and whose fn is observe() below, the
** trampoline into Lua. The core cannot be unwound by a Lua error, so the
** trampoline runs the Lua function in a protected call and, when it
** raises, keeps the error value (the registry, under error_key) and
** returns ECS_ERR_CALLBACK; the method that triggered the event then
** fails with that code, and ecsl_error raises the kept value (as the
** message handler, observer_msgh, left it: a string named after the
** observer with its frames, any other value unchanged)
** (ecsl_observer_reraise). The change that was reported stands and the
** core's state is complete at every notification, so the world is
** consistent.
**
** Which lua_State runs the function: the trampoline does not know the
** thread of the call that triggered the event (a core call may come from
** a coroutine, a finalizer, a C system). It uses one thread of its own,
** created with the first observer and kept in the registry: never
** resumed, so its status is always LUA_OK and calls on it are allowed
** from whatever thread is running (calls nest on its stack, and every
** push is popped before the trampoline returns). The Lua function runs
** under lua_pcall on it; nothing else the trampoline does can raise.
**
** Lifetime: an open observer is anchored in its world's state table
** (anchor_key), so it keeps running when the script drops it; the
** trampoline finds it through a weak table of the registry (index_key)
** keyed by its address. close() (also __close) unlistens and unanchors;
** __gc of an observer still open (its world being collected) unlistens
** only. A closed world has freed its listeners: nothing to undo then.
*/
#include "binding.h"

const char ecsl_observer_tag = 'o';

static const char thread_key = 't'; /* registry: the thread of observers */
static const char index_key = 'x';  /* registry: weak { [address] = obs } */
static const char error_key = 'e';  /* registry: { [1] = kept?, [2] = error } */
static const char anchor_key = 'a'; /* world state: { [obs] = true } */
#ifdef LUA_JITLIBNAME
static const char resync_key = 'r'; /* registry: a function that does nothing */
#endif

#define ECS_LUA_OBSERVER "ecs.Observer"

typedef struct lobserver {
  lhead h;         /* h.lw: the world of the observed manager */
  void *manager;   /* the observed manager; NULL once closed */
  lua_State *T;    /* the thread observers run on */
  unsigned events; /* one ECS_EVENT_* bit */
} lobserver;

/*
** The message handler of an observer's protected call (upvalues: the
** prefix "on_set 'Position'", the observer's function). It runs where the
** error was raised, so a string error leaves as "<prefix>: <error>" with
** the traceback of the observer's frames (its function's and what it
** called: the protected call ends them) after it; any other value passes
** as it is. The function's frame is the innermost one on the observers'
** thread that runs it (observers that nest run on the same thread, above
** the outer one's frames).
*/
static int observer_msgh(lua_State *T) {
  lua_Debug ar;
  int level, last = 0;
  if (lua_type(T, 1) != LUA_TSTRING) return 1;
  for (level = 1; lua_getstack(T, level, &ar); level++) {
    int at;
    lua_getinfo(T, "f", &ar);
    at = lua_rawequal(T, -1, lua_upvalueindex(2));
    lua_pop(T, 1);
    if (at) {
      last = level;
      break;
    }
  }
  return ecsl_prefix_error(T, lua_tostring(T, lua_upvalueindex(1)), last);
}

/*
** The listener of every observer (ecs_listener_fn). Only the observer's
** function runs protected: the lookups before it (registry, weak index,
** user values) and the entity (a light userdata) allocate nothing and
** cannot raise, and keeping its error writes two array slots that
** shared_state made. One protected call per event, with the observer's
** message handler (made with it: nothing is made per event).
*/
static ecs_err observe(ecs_world *w, void *manager, ecs_entity e,
                       ecs_event event, void *ud) {
  lobserver *o = (lobserver *)ud;
  lua_State *T = o->T;
  ecs_err err = ECS_ERR_OK;
  int top;
  (void)w;
  (void)manager;
  (void)event;
  if (o->manager == NULL || o->h.lw->w == NULL) return ECS_ERR_OK;
  if (!lua_checkstack(T, 7)) return ECS_ERR_NOMEM;
  top = lua_gettop(T);
  lua_rawgetp(T, LUA_REGISTRYINDEX, &index_key);          /* index */
  if (lua_rawgetp(T, -1, o) == LUA_TUSERDATA) {           /* index, obs */
    lua_getiuservalue(T, -1, 3);                          /* ..., msgh */
    lua_getiuservalue(T, -2, 2);                          /* ..., msgh, fn */
    push_entity(T, e);
    if (lua_pcall(T, 1, 0, top + 3) != LUA_OK) {          /* ..., err */
      lua_rawgetp(T, LUA_REGISTRYINDEX, &error_key);      /* ..., err, kept */
      lua_insert(T, -2);
      lua_rawseti(T, -2, 2);
      lua_pushboolean(T, 1);
      lua_rawseti(T, -2, 1);
      err = ECS_ERR_CALLBACK;
    }
  }
  lua_settop(T, top);
  return err;
}

/*
** Raise the error an observer kept, if any (ecsl_error calls this for
** ECS_ERR_CALLBACK): the value as the observer's function raised it.
*/
void ecsl_observer_reraise(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &error_key) == LUA_TTABLE) {
    lua_rawgeti(L, -1, 1);
    if (lua_toboolean(L, -1)) {
      lua_pushboolean(L, 0);
      lua_rawseti(L, -3, 1);                              /* kept, true */
      lua_rawgeti(L, -2, 2);                              /* kept, true, err */
      lua_pushboolean(L, 0);
      lua_rawseti(L, -4, 2); /* an array slot: stays, allocates nothing */
      lua_error(L);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

#ifdef LUA_JITLIBNAME
static int do_nothing(lua_State *L) {
  (void)L;
  return 0;
}

/*
** Call into the VM on L, the thread about to raise (binding.h, LuaJIT):
** LuaJIT then takes L as its current thread again. Nothing to do before
** the first observer of the Lua state (no call into another thread yet);
** the function was made with it (shared_state), so this allocates nothing.
*/
void ecsl_thread_resync(lua_State *L) {
  if (!lua_checkstack(L, 1)) return;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &resync_key) == LUA_TFUNCTION)
    lua_call(L, 0, 0);
  else
    lua_pop(L, 1);
}
#endif

/* The registry entries every observer uses, made once per Lua state. */
static lua_State *shared_state(lua_State *L) {
  lua_State *T;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &index_key) == LUA_TNIL) {
    lua_newtable(L);                                      /* nil, index */
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &index_key);
  }
  lua_pop(L, 1);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &error_key) == LUA_TNIL) {
    lua_createtable(L, 2, 0);
    lua_pushboolean(L, 0);
    lua_rawseti(L, -2, 1);
    lua_pushboolean(L, 0);
    lua_rawseti(L, -2, 2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &error_key);
  }
  lua_pop(L, 1);
#ifdef LUA_JITLIBNAME
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &resync_key) == LUA_TNIL) {
    lua_pushcfunction(L, do_nothing);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &resync_key);
  }
  lua_pop(L, 1);
#endif
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &thread_key) != LUA_TTHREAD) {
    lua_pop(L, 1);
    lua_newthread(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &thread_key);
  }
  T = lua_tothread(L, -1);
  lua_pop(L, 1);
  return T;
}

/*
** The observed manager of self (argument 1, checked by ecsl_l_method):
** a component, world.transform or world.names; *cls names it in errors.
*/
static void *observed(lua_State *L, const char **cls) {
  lhead *h = (lhead *)lua_touserdata(L, 1);
  if (h->lw == NULL || h->lw->w == NULL) ecsl_closed(L);
  if (h->cls == &ecsl_comp_tag) {
    lcomponent *lc = (lcomponent *)(void *)h;
    *cls = ecs_component_name(lc->c);
    return lc->c;
  } else {
    plugin_head *ph = (plugin_head *)(void *)h;
    if (strcmp(ph->o.tname, ECS_LUA_TRANSFORM) == 0) {
      *cls = "transform";
      return ((ltransform *)(void *)(ph + 1))->t;
    }
    *cls = "names";
    return ((lnames *)(void *)(ph + 1))->m;
  }
}

/* Remove the anchor and index entries of the observer at idx (existing
** keys: setting them to nil allocates nothing). */
static void unanchor(lua_State *L, int idx, lobserver *o) {
  int top = lua_gettop(L);
  idx = lua_absindex(L, idx);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &index_key) == LUA_TTABLE) {
    lua_pushnil(L);
    lua_rawsetp(L, -2, o);
  }
  lua_pop(L, 1);
  lua_getiuservalue(L, idx, 1);                           /* observed */
  if (lua_getiuservalue(L, -1, 1) == LUA_TUSERDATA &&     /* observed, world */
      ecsl_push_state_field(L, -1, &anchor_key) == LUA_TTABLE) {
    lua_pushvalue(L, idx);
    lua_pushnil(L);
    lua_rawset(L, -3);
  }
  lua_settop(L, top);
}

/*
** C:on_add(fn), C:on_remove(fn), C:on_set(fn) -> observer. Everything
** that allocates (the observer, its registry and anchor entries) comes
** before the core's listen, and a failed listen undoes them, so an error
** leaves nothing behind.
*/
static int observer_new(lua_State *L, unsigned events, const char *fn) {
  const char *cls = NULL;
  void *manager = observed(L, &cls);
  lworld *lw = ((lhead *)lua_touserdata(L, 1))->lw;
  lua_State *T;
  lobserver *o;
  ecs_err err;
  if (lua_type(L, 2) != LUA_TFUNCTION)
    return luaL_argerror(L, 2, lua_pushfstring(L, "%s:%s: function expected, got %s",
                                               cls, fn, luaL_typename(L, 2)));
  lua_settop(L, 2);
  T = shared_state(L);
  o = (lobserver *)lua_newuserdatauv(L, sizeof *o, 3);   /* self, fn, obs */
  memset(o, 0, sizeof *o);
  ecsl_init_head(&o->h, &ecsl_observer_tag, lw);
  o->T = T;
  o->events = events;
  luaL_setmetatable(L, ECS_LUA_OBSERVER);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, 3, 1);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, 3, 2);
  lua_pushfstring(L, "%s '%s'", fn, cls);                 /* errors' prefix */
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, observer_msgh, 2);
  lua_setiuservalue(L, 3, 3);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &index_key);          /* ..., obs, index */
  lua_pushvalue(L, 3);
  lua_rawsetp(L, -2, o);
  lua_pop(L, 1);
  lua_getiuservalue(L, 1, 1);                             /* ..., obs, world */
  ecsl_need_state_field(L, 4, &anchor_key);               /* ..., world, anchors */
  lua_pushvalue(L, 3);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_settop(L, 3);
  /* a finalizer run by those allocations may have closed the world */
  err = lw->w == NULL ? ECS_ERR_CLOSED
                      : ecs_manager_listen(lw->w, manager, events, observe, o);
  if (err != ECS_ERR_OK) {
    unanchor(L, 3, o);
    return ecsl_error(L, cls, fn, err, NULL, 0);
  }
  o->manager = manager;
  ecsl_charge(L, lw);
  return 1;
}

int ecsl_l_on_add(lua_State *L) { return observer_new(L, ECS_EVENT_ADD, "on_add"); }
int ecsl_l_on_remove(lua_State *L) { return observer_new(L, ECS_EVENT_REMOVE, "on_remove"); }
int ecsl_l_on_set(lua_State *L) { return observer_new(L, ECS_EVENT_SET, "on_set"); }

/* Stop o: unlisten unless its world is closed (then its listeners are
** gone already). Idempotent. */
static void stop(lobserver *o) {
  if (o->manager == NULL) return;
  if (o->h.lw != NULL && o->h.lw->w != NULL)
    ecs_manager_unlisten(o->h.lw->w, o->manager, observe, o);
  o->manager = NULL;
}

/* o:close() -- stops it; safe to call again, also from inside its own
** function and on a closed world. */
static int l_obs_close(lua_State *L) {
  lobserver *o = ecsl_self(L, lobserver);
  if (o->manager == NULL) return 0;
  stop(o);
  unanchor(L, 1, o);
  return 0;
}

/* __close(o, err) and __gc(o): like close; anything else is left alone. */
static int l_obs_meta_close(lua_State *L) {
  lobserver *o = (lobserver *)ecsl_test_object(L, 1, &ecsl_observer_tag);
  if (o != NULL && o->manager != NULL) {
    stop(o);
    unanchor(L, 1, o);
  }
  return 0;
}

static int l_obs_gc(lua_State *L) {
  lobserver *o = (lobserver *)ecsl_test_object(L, 1, &ecsl_observer_tag);
  if (o != NULL) stop(o);
  return 0;
}

/* o:active() -> boolean: not closed, and its world open */
static int l_obs_active(lua_State *L) {
  lobserver *o = ecsl_self(L, lobserver);
  lua_pushboolean(L, o->manager != NULL && o->h.lw->w != NULL);
  return 1;
}

static int l_obs_tostring(lua_State *L) {
  lua_pushfstring(L, "ecs.Observer (%p)", lua_touserdata(L, 1));
  return 1;
}

static const luaL_Reg obs_methods[] = {
  {"close", l_obs_close},
  {"active", l_obs_active},
  {NULL, NULL}
};

void ecsl_open_observers(lua_State *L) {
  luaL_newmetatable(L, ECS_LUA_OBSERVER);                 /* mt */
  lua_newtable(L);                                        /* mt, methods */
  ecsl_set_methods(L, obs_methods, &ecsl_observer_tag, ECS_LUA_OBSERVER);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__methods");
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_obs_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, l_obs_meta_close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, l_obs_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
}
