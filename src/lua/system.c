/*
** system.c -- part of the Lua binding (src/lua/binding.h): world:system,
** world:replace_system, world:remove_system, the system list and stats,
** and the walk of world:update over the core's scheduler. Native systems
** (C functions) are native.c's objects.
*/
#include "binding.h"

/* ----------------------------------------------------------------------
** Systems and world:update
**
** The systems live in the core (include/system.h): their order, names, kinds,
** enabled flags, stats, and the scheduler (ecs_world_update). The binding
** keeps only what the core cannot: the Lua values each system needs
** alive, in a table in the world's state (under ecsl_systems_key) that
** maps the system's name (unique among the live systems, and kept by
** world:replace_system, which swaps the record under it) to a record
** { body, query or false, params or false }: the function, expression text or native
** object, the query userdata (keeps the core query alive as long as the
** system) and the params table. A Lua function is an external system
** whose callback (call_lua) calls it; an expression system's params hook
** (params_lua) reads its table.
**
** The core is running while they run, so neither may raise through it:
** each does its Lua work in a protected call and returns an error code;
** the error value waits on the stack and world:update raises it once the
** core has returned: a Lua system's error as its message handler left it
** (system_msgh: a string named after the system, with the system's
** frames; any other value unchanged), a params metamethod's unchanged,
** while errors of the library itself name the system ("world:update:
** system 'move': not enough memory"). Lua code run by a system may close the
** world: the update is a call in progress, so the core world stays until
** it returns, and the callback stops the walk.
** ------------------------------------------------------------------- */

enum { REC_BODY = 1, REC_QUERY, REC_PARAMS };

/* The context of one world:update, passed through the core to callbacks. */
typedef struct lupdate {
  const void *tag;  /* &ecsl_systems_key: this is the binding's */
  lua_State *L;
  lworld *lw;
  int map;          /* stack index of the map of records (or of nil) */
  int raised;       /* a callback's error value is on top of L */
  int closed;       /* a system closed the world */
} lupdate;

static lupdate *to_update(void *ctx) {
  lupdate *u = (lupdate *)ctx;
  return u != NULL && u->tag == &ecsl_systems_key ? u : NULL;
}

/* Push the record of core system s from the map at 1 (protected code). */
static void push_record(lua_State *L, ecs_system *s) {
  if (!lua_istable(L, 1)) lua_pushnil(L);
  else lua_pushstring(L, ecs_system_name(s));
  if (!lua_istable(L, 1) || lua_rawget(L, 1) != LUA_TTABLE)
    luaL_error(L, "world:update: system '%s' has no Lua values",
               ecs_system_name(s));
}

/*
** map, s, dt, lw -> entities (protected): call fn(dt, query); its count,
** or the query's.
*/
static int lua_system_body(lua_State *L) {
  ecs_system *s = (ecs_system *)lua_touserdata(L, 2);
  lworld *lw = (lworld *)lua_touserdata(L, 4);
  lua_Integer cnt;
  size_t done = 0;
  int isint;
  uint64_t loads;
  /* a finalizer run by an allocation since the walk called the system
  ** (the pushes of call_lua) may have closed the world: it does not run */
  if (lw->w == NULL) return 0;
  loads = ecs_world_loads(lw->w);
  push_record(L, s);                                      /* 5: record */
  lua_rawgeti(L, 5, REC_QUERY);                           /* 6: q or false */
  lua_rawgeti(L, 5, REC_BODY);                            /* 7: fn */
  lua_pushvalue(L, 3);
  if (lua_toboolean(L, 6)) lua_pushvalue(L, 6);
  else lua_pushnil(L);                                    /* no query */
  lua_call(L, 2, 1);                                      /* 7: result */
  if (lw->w == NULL) return 0; /* it closed the world */
  /* the system's update is a pass of its query, unless fn loaded a world:
  ** what it loaded counts as written for the next pass (as for loops) */
  if (lua_toboolean(L, 6) && ecs_world_loads(lw->w) == loads) {
    lquery *lq = (lquery *)lua_touserdata(L, 6);
    if (lq != NULL && lq->q != NULL) ecs_query_complete(lw->w, lq->q);
  }
  cnt = lua_tointegerx(L, 7, &isint);
  if (isint && cnt >= 0) {
    done = (size_t)cnt;
  } else if (lua_toboolean(L, 6)) {
    lquery *lq = ecsl_check_query(L, 6);
    size_t matches;
    if (ecs_query_count(lw->w, lq->q, &matches) == ECS_ERR_OK) done = matches;
  }
  lua_pushinteger(L, (lua_Integer)done);
  return 1;
}

/*
** The message handler of a Lua system's protected call (call_lua): it
** runs where the error was raised, its frames still there, so a string
** error leaves with "system '<name>': " before it and the traceback of
** the system's own frames after it (the protected call ends them, so a
** handler of the caller's, xpcall(world.update, debug.traceback, ...),
** would see world:update's frames only). Any other value passes as it
** is. The system is the argument (a light userdata, slot 2) of the frame
** of lua_system_body below the system's frames: found by walking up.
*/
static int system_msgh(lua_State *L) {
  lua_Debug ar;
  const ecs_system *s = NULL;
  int level, last = 0;
  if (lua_type(L, 1) != LUA_TSTRING) return 1;
  for (level = 1; lua_getstack(L, level, &ar); level++) {
    int at;
    lua_getinfo(L, "f", &ar);
    at = lua_tocfunction(L, -1) == lua_system_body;
    lua_pop(L, 1);
    if (at) {
      if (lua_getlocal(L, &ar, 2) != NULL) {
        s = (const ecs_system *)lua_touserdata(L, -1);
        lua_pop(L, 1);
      }
      last = level - 1;
      break;
    }
  }
  lua_pushfstring(L, "system '%s'", s != NULL ? ecs_system_name(s) : "?");
  return ecsl_prefix_error(L, lua_tostring(L, -1), last > 0 ? last : 1);
}

/*
** The end of a callback's protected call: keep its error for world:update.
** The codes only stop the core's walk (world:update looks at raised and
** closed, not at them), but they say what happened to a C reader of
** ecs_world_update: the host kept an error, or the world was closed.
*/
static ecs_err callback_end(lupdate *u, int status) {
  if (status != LUA_OK) {
    u->raised = 1; /* the error value stays on top */
    return ECS_ERR_CALLBACK;
  }
  if (u->lw->w == NULL) {
    u->closed = 1;
    return ECS_ERR_CLOSED; /* stop: the world is closed */
  }
  return ECS_ERR_OK;
}

/* The external system of a Lua function (ecs_system_call_fn). */
static ecs_err call_lua(ecs_world *w, ecs_system *s, double dt, void *ctx,
                        size_t *processed) {
  lupdate *u = to_update(ctx);
  lua_State *L;
  ecs_err err;
  (void)w;
  /* run by another host (a C caller's ctx): a slip, not a rule */
  if (u == NULL) return ECS_ERR_INVALID;
  L = u->L;
  if (!lua_checkstack(L, 6)) return ECS_ERR_NOMEM;
  ecsl_push_cfn(L, system_msgh);
  ecsl_push_cfn(L, lua_system_body);
  lua_pushvalue(L, u->map);
  lua_pushlightuserdata(L, s);
  lua_pushnumber(L, (lua_Number)dt);
  lua_pushlightuserdata(L, u->lw);
  err = callback_end(u, lua_pcall(L, 4, 1, lua_gettop(L) - 5));
  lua_remove(L, -2); /* the handler: the result or the error stays on top */
  if (u->raised) return err;
  *processed = (size_t)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return err;
}

/*
** map, s, values, lw -> (protected): read the parameters of expression
** system s from its params table. A read may run a metamethod (any Lua
** code); the names belong to s, which stays valid during the update.
*/
static int params_body(lua_State *L) {
  ecs_system *s = (ecs_system *)lua_touserdata(L, 2);
  double *v = (double *)lua_touserdata(L, 3);
  push_record(L, s);                                      /* 5: record */
  if (lua_rawgeti(L, 5, REC_PARAMS) != LUA_TTABLE)        /* 6: params */
    return luaL_error(L, "world:update: system '%s' has no params table",
                      ecs_system_name(s));
  for (uint32_t k = 0; k < ecs_system_param_count(s); k++) {
    const char *name = ecs_system_param_name(s, k);
    if (strcmp(name, "dt") == 0) continue;
    if (lua_getfield(L, 6, name) != LUA_TNUMBER)
      return luaL_error(L, "world:update: system '%s': parameter '%s' must be "
                        "a number (got %s) at position %d", ecs_system_name(s),
                        name, luaL_typename(L, -1),
                        (int)ecs_system_param_position(s, k));
    v[k] = (double)lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  return 0;
}

/* The params hook of an expression system with a params table. */
static ecs_err params_lua(ecs_world *w, ecs_system *s, double *values,
                          void *ctx) {
  lupdate *u = to_update(ctx);
  lua_State *L;
  (void)w;
  if (u == NULL) return ECS_ERR_INVALID; /* another host: as call_lua */
  L = u->L;
  if (!lua_checkstack(L, 5)) return ECS_ERR_NOMEM;
  lua_pushcfunction(L, params_body);
  lua_pushvalue(L, u->map);
  lua_pushlightuserdata(L, s);
  lua_pushlightuserdata(L, values);
  lua_pushlightuserdata(L, u->lw);
  return callback_end(u, lua_pcall(L, 4, 0, 0));
}

/* EXISTS names the system: the table's text is about components. */
static int system_exists(lua_State *L, const char *name) {
  return ecsl_error(L, "world", "system", ECS_ERR_EXISTS,
                    lua_pushfstring(L, "a system named '%s' already exists",
                                    name), 0);
}

/* map, name: map[name] = false unless it has a value (run protected: a
** new key may need memory); after it, setting map[name] cannot fail. */
static int hold_record(lua_State *L) {
  lua_settop(L, 2);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, 1) == LUA_TNIL) {
    lua_settop(L, 2);
    lua_pushboolean(L, 0);
    lua_rawset(L, 1);
  }
  return 0;
}

/* Read opts[key] (a name or a list of names) into names (at most
** MAX_ORDER_NAMES; the strings stay held by opts; optarg: where the
** options were written, for messages). @return how many. */
#define MAX_ORDER_NAMES 64
static uint32_t read_names(lua_State *L, int opts, const char *key,
                           const char **names, const char *fn, int optarg) {
  uint32_t n = 0;
  int t = lua_getfield(L, opts, key), at = lua_gettop(L);
  if (t == LUA_TSTRING) {
    names[n++] = check_text(L, at, NULL, fn);
  } else if (t == LUA_TTABLE) {
    lua_Integer len = (lua_Integer)lua_rawlen(L, at);
    if (len > MAX_ORDER_NAMES)
      luaL_error(L, "%s: %s: at most %d names", fn, key, MAX_ORDER_NAMES);
    ecsl_check_keys(L, at, optarg, fn, NULL, true);
    for (lua_Integer k = 1; k <= len; k++) {
      if (lua_rawgeti(L, at, k) != LUA_TSTRING)
        luaL_error(L, "%s: %s[%I]: a system name expected, got %s", fn, key, k,
                   luaL_typename(L, -1));
      names[n++] = check_text(L, lua_gettop(L), NULL, fn); /* held by the list */
      lua_pop(L, 1);
    }
  } else if (t != LUA_TNIL) {
    luaL_error(L, "%s: %s: a system name or a list of names expected, got %s",
               fn, key, luaL_typename(L, at));
  }
  lua_pop(L, 1);
  return n;
}

/* The scheduling options' keys (the order the messages name them in). */
static const char *const option_keys[] = {"phase", "after", "before", "interval", NULL};

/*
** The table at pidx is an expression system's params, with no options
** after it. If it is not empty and every key is an option's name that the
** expression p does not use as a parameter, it is options written in the
** params' place (world:system(name, q, expr, { phase = "draw" })): raise,
** showing the call that works. A parameter named like an option (an
** expression that reads "interval") keeps it params.
*/
static void options_as_params(lua_State *L, int pidx, const ecs_program *p,
                              const char *fn) {
  luaL_Buffer b;
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, pidx)) {
    const char *const *k = option_keys;
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      lua_pop(L, 1);
      return;
    }
    while (*k != NULL && strcmp(*k, lua_tostring(L, -1)) != 0) k++;
    if (*k == NULL) {
      lua_pop(L, 1);
      return;
    }
    for (uint32_t j = 0; j < ecs_program_param_count(p); j++)
      if (strcmp(ecs_program_param_name(p, j), *k) == 0) {
        lua_pop(L, 1);
        return;
      }
    n++;
  }
  if (n == 0) return;
  luaL_buffinit(L, &b);
  for (int pass = 0; pass < 2; pass++) { /* the names, then the call */
    int first = 1;
    if (pass == 1) luaL_addstring(&b, n > 1 ? " are options, not parameters of "
                                  "the expression: pass them fifth, " :
                                  " is an option, not a parameter of the "
                                  "expression: pass it fifth, ");
    if (pass == 1) {
      luaL_addstring(&b, fn);
      luaL_addstring(&b, "(name, query, expr, params or nil, { ");
    }
    for (const char *const *k = option_keys; *k != NULL; k++) {
      lua_getfield(L, pidx, *k);
      if (!lua_isnil(L, -1)) {
        lua_pop(L, 1);
        if (!first) luaL_addstring(&b, ", ");
        luaL_addstring(&b, *k);
        if (pass == 1) luaL_addstring(&b, " = ...");
        first = 0;
      } else {
        lua_pop(L, 1);
      }
    }
    if (pass == 1) luaL_addstring(&b, " })");
  }
  luaL_pushresult(&b);
  luaL_error(L, "%s: bad argument #%d (%s)", fn, ecsl_arg_number(L, pidx),
             lua_tostring(L, -1));
}

/*
** Put world:system's arguments in the one layout the rest reads:
**   1 world, 2 name, 3 query (false: none), 4 body, 5 params (nil: none),
**   6 options (nil: none)
** from the forms a user writes (see the comment of define_system). Sets
** *optarg to the stack index the options were written at (0: none), for
** messages about them, and *kind to the body's kind. Types are checked
** here, where the values are, so that messages number them as written.
*/
static void system_args(lua_State *L, const char *fn, int *optarg,
                        ecs_system_kind *kind) {
  int body, params = 0, opts = 0;
  *optarg = 0;
  if (lua_type(L, 3) == LUA_TFUNCTION) {         /* (name, fn [, options]) */
    body = 3;
    if (!lua_isnoneornil(L, 5))
      luaL_argerror(L, 5, lua_pushfstring(L, "no more arguments: %s(name, fn "
                                          "[, options])", fn));
    if (!lua_isnoneornil(L, 4)) {
      luaL_checktype(L, 4, LUA_TTABLE);
      opts = 4;
    }
    *kind = ECS_SYSTEM_EXTERNAL;
  } else {                                 /* (name, query, body, ...) */
    lquery *lq = ecsl_check_query(L, 3);
    if (lq->lw != ecsl_to_lworld(L, 1)) luaL_argerror(L, 3, "query of another world");
    body = 4;
    switch (lua_type(L, 4)) {
    case LUA_TFUNCTION: *kind = ECS_SYSTEM_EXTERNAL; break;
    case LUA_TSTRING: *kind = ECS_SYSTEM_EXPR; break;
    default:
      if (ecsl_test_object(L, 4, &ecsl_native_tag) == NULL)
        luaL_typeerror(L, 4, "function, expression or native system");
      *kind = ECS_SYSTEM_NATIVE;
    }
    if (!lua_isnoneornil(L, 5)) luaL_checktype(L, 5, LUA_TTABLE);
    if (!lua_isnoneornil(L, 6)) luaL_checktype(L, 6, LUA_TTABLE);
    if (*kind == ECS_SYSTEM_EXPR) {          /* (..., expr [, params [, opts]]) */
      if (!lua_isnoneornil(L, 5)) params = 5;
      if (!lua_isnoneornil(L, 6)) opts = 6;
    } else if (!lua_isnoneornil(L, 6)) {     /* (..., fn, nil, opts) */
      /* a Lua function or a native system has no params: a table in
      ** their place beside options is a mistake, not something to drop */
      if (!lua_isnoneornil(L, 5))
        luaL_argerror(L, 5, lua_pushfstring(L, "%s takes no params: give its "
                      "options here, %s(name, query, %s, options)",
                      *kind == ECS_SYSTEM_NATIVE ? "a native system" : "a Lua system",
                      fn, *kind == ECS_SYSTEM_NATIVE ? "native" : "fn"));
      opts = 6;
    } else if (!lua_isnoneornil(L, 5)) {     /* (..., fn, opts) */
      opts = 5;
    }
  }
  *optarg = opts;
  /* the layout: copies pushed above 6, then moved down into 6..3 */
  if (lua_gettop(L) < 6) lua_settop(L, 6);
  luaL_checkstack(L, 4, NULL);
  if (body == 4) lua_pushvalue(L, 3); else lua_pushboolean(L, 0);
  lua_pushvalue(L, body);
  if (params != 0) lua_pushvalue(L, params); else lua_pushnil(L);
  if (opts != 0) lua_pushvalue(L, opts); else lua_pushnil(L);
  for (int k = 6; k >= 3; k--) lua_replace(L, k);
  lua_settop(L, 6);
}

/*
** The scheduling options of a system (the table at 6, argument optarg of
** the call): phase, interval, after, before, into d.
*/
static void read_schedule(lua_State *L, const char *fn, int optarg,
                          ecs_system_desc *d, const char **after,
                          const char **before) {
  ecsl_check_keys(L, 6, optarg, fn, option_keys, false);
  d->phase = "update"; /* options given: they are the schedule */
  if (lua_getfield(L, 6, "phase") != LUA_TNIL) {
    size_t len;
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "%s: phase: a name expected, got %s", fn,
                 luaL_typename(L, -1));
    d->phase = check_text(L, lua_gettop(L), &len, fn); /* held by 6 */
    if (len == 0) luaL_error(L, "%s: the phase must not be empty", fn);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 6, "interval") != LUA_TNIL) {
    lua_Number iv = lua_tonumber(L, -1);
    if (lua_type(L, -1) != LUA_TNUMBER || !(iv > 0) || iv > 1e300)
      luaL_error(L, "%s: interval: a positive finite number expected, got %s",
                 fn, lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1)
                                                     : luaL_typename(L, -1));
    d->interval = (double)iv;
  }
  lua_pop(L, 1);
  d->nafter = read_names(L, 6, "after", after, fn, optarg);
  d->after = after;
  d->nbefore = read_names(L, 6, "before", before, fn, optarg);
  d->before = before;
}

/* The columns of a native system (at 4) over the query lq (at 3), resolved
** into cols, and its function, into d. */
static void native_columns(lua_State *L, const char *fn, const lquery *lq,
                           ecs_system_desc *d, ecs_column_ref *cols) {
  lnative *nv = (lnative *)lua_touserdata(L, 4);
  lua_getiuservalue(L, 4, 1);                             /* specs */
  for (int k = 0; k < nv->nspec; k++) {
    colspec cs;
    lua_rawgeti(L, -1, k + 1);
    cs = ecsl_check_spec(L, 3, lua_gettop(L), fn);
    if (cs.term == ENTITY_TERM)
      luaL_error(L, "%s: 'entity' is not a column of native systems", fn);
    lua_pop(L, 1);
    cols[k].c = ecs_query_with(lq->q, cs.term);
    cols[k].field = cs.field;
    cols[k].write = cs.write != 0;
  }
  lua_pop(L, 1);
  d->fn = nv->fn;
  d->ud = nv->ud;
  d->parallel = nv->parallel != 0;
  d->cols = cols;
  d->ncols = (uint32_t)nv->nspec;
}

/* The core refused the system (err, msg): let go of the key held in the
** map at map, unless in use, and raise. */
static int define_failed(lua_State *L, const char *fn, bool replacing, int map,
                         ecs_err err, const char *msg) {
  const char *name = lua_tostring(L, 2);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, map) == LUA_TBOOLEAN) {
    lua_pushvalue(L, 2);
    lua_pushnil(L); /* assigning nil never allocates */
    lua_rawset(L, map);
  }
  if (err == ECS_ERR_EXISTS) return system_exists(L, name);
  if (err == ECS_ERR_NO_SYSTEM)
    return luaL_error(L, "%s: no system named '%s'", fn, name);
  /* msg: the table's text, or the compiler's */
  return ecsl_error(L, "world", replacing ? "replace_system" : "system", err,
                    msg[0] != '\0' ? msg : NULL, 0);
}

/*
** world:system(name, query, fn | expr | native [, params [, opts]])
** world:system(name, query, fn | native, opts)  -- no params: options next
** world:system(name, fn [, opts])  -- a Lua system with no query
** world:replace_system(name, ...)  -- the same arguments, for a system
**   that exists: the new one takes its place in the run order
** A Lua function or a native system takes no params, so the table after
** it is its options (the fifth place, after a nil, works too); an
** expression's fourth argument is its params, and options written there
** are refused with the call that works (options_as_params).
** Everything that can raise comes before the core system is made: the
** record's key is held first (map[name] = false, protected), so that
** storing the record after the core call cannot fail.
*/
static int define_system(lua_State *L, bool replacing) {
  const char *fn = replacing ? "world:replace_system" : "world:system";
  const char *after[MAX_ORDER_NAMES], *before[MAX_ORDER_NAMES];
  ecs_column_ref cols[MAX_COLUMNS];
  ecs_system_desc d;
  ecs_system *s;
  ecs_world *w;
  lquery *lq = NULL;
  char msg[256];
  ecs_err err;
  int map, optarg;
  uint32_t gen; /* the schemas native columns are resolved under */
  check_world(L, 1);
  gen = ecsl_world_gen(self_lworld(L));
  check_text(L, 2, NULL, fn);
  memset(&d, 0, sizeof d);
  system_args(L, fn, &optarg, &d.kind);
  lua_settop(L, 6);
  if (lua_toboolean(L, 3)) lq = (lquery *)lua_touserdata(L, 3);
  if (!lua_isnil(L, 6)) /* else: add runs in "update"; replace keeps the old schedule */
    read_schedule(L, fn, optarg, &d, after, before);
  ecsl_need_state_field(L, 1, &ecsl_systems_key);         /* 7: map */
  map = 7;
  /* checked before compiling anything; the core checks again below */
  if (!replacing && ecs_system_find(check_world(L, 1), lua_tostring(L, 2)) != NULL)
    return system_exists(L, lua_tostring(L, 2));
  if (replacing && ecs_system_find(check_world(L, 1), lua_tostring(L, 2)) == NULL)
    return luaL_error(L, "%s: no system named '%s'", fn, lua_tostring(L, 2));
  if (d.kind == ECS_SYSTEM_EXPR) { /* checked now (compile, parameters) */
    double v[ECS_PROGRAM_MAX_PARAMS];
    const ecs_program *p =
        ecsl_program_params(L, 3, 4, lua_isnil(L, 5) ? 0 : 5, v, 1, 0.0, fn);
    if (optarg == 0 && !lua_isnil(L, 5)) options_as_params(L, 5, p, fn);
    d.expr = lua_tolstring(L, 4, &d.expr_len);
    d.params = lua_isnil(L, 5) ? NULL : params_lua;
  } else if (d.kind == ECS_SYSTEM_NATIVE) { /* columns resolved now */
    native_columns(L, fn, lq, &d, cols);
  } else {
    d.call = call_lua;
  }
  lua_createtable(L, 3, 0);                               /* 8: record */
  lua_pushvalue(L, 4);
  lua_rawseti(L, 8, REC_BODY);
  lua_pushvalue(L, 3);
  lua_rawseti(L, 8, REC_QUERY);
  if (lua_isnil(L, 5)) lua_pushboolean(L, 0);
  else lua_pushvalue(L, 5);
  lua_rawseti(L, 8, REC_PARAMS);
  luaL_checkstack(L, 4, NULL);
  lua_pushcfunction(L, hold_record);
  lua_pushvalue(L, map);
  lua_pushvalue(L, 2);
  lua_call(L, 2, 0); /* memory errors propagate: nothing changed yet */
  /* the allocations above may have run a finalizer that closed the world
  ** or defined a system of this name */
  w = check_world(L, 1);
  d.name = lua_tostring(L, 2);
  d.query = lq != NULL ? lq->q : NULL;
  if (d.kind == ECS_SYSTEM_NATIVE && ecsl_world_gen(self_lworld(L)) != gen) {
    err = ECS_ERR_SCHEMA; /* a finalizer redefined a component: stale columns */
    snprintf(msg, sizeof msg, "a component was redefined while the columns "
             "were looked up (by a finalizer)");
  } else {
    err = replacing ? ecs_system_replace(w, &d, &s, msg, sizeof msg)
                    : ecs_system_add(w, &d, &s, msg, sizeof msg);
  }
  if (err != ECS_ERR_OK) return define_failed(L, fn, replacing, map, err, msg);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 8);
  lua_rawset(L, map); /* the key is there: no allocation */
  ecsl_charge(L, self_lworld(L)); /* a compiled program */
  return 0;
}

int ecsl_l_world_system(lua_State *L) { return define_system(L, false); }

int ecsl_l_world_replace_system(lua_State *L) { return define_system(L, true); }

/* world:remove_system(name) -> boolean */
int ecsl_l_world_remove_system(lua_State *L) {
  ecs_system *s;
  int map;
  check_world(L, 1);
  check_text(L, 2, NULL, "world:remove_system");
  ecsl_push_state_field(L, 1, &ecsl_systems_key);         /* map or nil */
  map = lua_gettop(L);
  s = ecs_system_find(check_world(L, 1), lua_tostring(L, 2));
  if (s == NULL) {
    lua_pushboolean(L, 0);
    return 1;
  }
  /* drop its record (assigning nil never allocates), then the system */
  if (lua_istable(L, map)) {
    lua_pushvalue(L, 2);
    lua_pushnil(L);
    lua_rawset(L, map);
  }
  ecs_system_remove(check_world(L, 1), lua_tostring(L, 2));
  lua_pushboolean(L, 1);
  return 1;
}

/*
** world:systems() -> { names in run order }
** Pushing a name may run a finalizer that adds or removes systems: the
** walk reads the list afresh at each step and a system's fields before
** any allocation.
*/
int ecsl_l_world_systems(lua_State *L) {
  ecs_system *s;
  uint32_t cursor = 0;
  lua_Integer n = 0;
  lua_createtable(L, (int)ecs_system_count(check_world(L, 1)), 0);
  while (ecs_system_next(check_world(L, 1), &cursor, &s)) {
    lua_pushstring(L, ecs_system_name(s));
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

/* The kind of s as stats reports it. */
static const char *kind_name(const ecs_system *s) {
  switch (ecs_system_kind_of(s)) {
  case ECS_SYSTEM_EXPR: return "expression";
  case ECS_SYSTEM_NATIVE: return "native";
  default: return ecs_system_callback(s) == call_lua ? "lua" : "external";
  }
}

/* world:stats() -> { { name=, kind=, calls=, seconds=, entities= }, ... } */
int ecsl_l_world_stats(lua_State *L) {
  ecs_system *s;
  uint32_t cursor = 0;
  lua_Integer n = 0;
  const char *only = NULL;
  check_world(L, 1);
  if (!lua_isnoneornil(L, 2)) only = check_text(L, 2, NULL, "world:stats");
  lua_settop(L, 2);
  lua_createtable(L, (int)ecs_system_count(check_world(L, 1)), 0);
  while (ecs_system_next(check_world(L, 1), &cursor, &s)) {
    ecs_system_stats st;
    if (only != NULL && strcmp(ecs_system_phase(s), only) != 0) continue;
    const char *kind = kind_name(s);
    bool on = ecs_system_enabled(s);
    const ecs_system *again;
    ecs_system_get_stats(s, &st);
    lua_pushstring(L, ecs_system_name(s)); /* s is not used after this */
    lua_createtable(L, 0, 6);                             /* out, name, t */
    lua_insert(L, -2);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, kind);
    lua_setfield(L, -2, "kind");
    lua_pushinteger(L, (lua_Integer)st.calls);
    lua_setfield(L, -2, "calls");
    lua_pushnumber(L, (lua_Number)st.seconds);
    lua_setfield(L, -2, "seconds");
    lua_pushinteger(L, (lua_Integer)st.entities);
    lua_setfield(L, -2, "entities");
    lua_pushboolean(L, on);
    lua_setfield(L, -2, "enabled");
    /* a finalizer run by the pushes above may have removed s: its phase is
    ** read from the system of that name, if it is still there */
    lua_getfield(L, -1, "name");
    again = ecs_system_find(check_world(L, 1), lua_tostring(L, -1));
    lua_pop(L, 1);
    if (again != NULL) {
      lua_pushstring(L, ecs_system_phase(again));
      lua_setfield(L, -2, "phase");
    }
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

/*
** world:enable_system(name, on): a disabled system keeps its place and is
** skipped by world:update (its stats stay). on is a boolean.
*/
int ecsl_l_world_enable_system(lua_State *L) {
  ecs_system *s;
  check_world(L, 1);
  check_text(L, 2, NULL, "world:enable_system");
  luaL_checktype(L, 3, LUA_TBOOLEAN);
  s = ecs_system_find(check_world(L, 1), lua_tostring(L, 2));
  if (s == NULL)
    return luaL_error(L, "world:enable_system: no system named '%s'",
                      lua_tostring(L, 2));
  ecs_system_enable(s, lua_toboolean(L, 3) != 0);
  return 0;
}

/* world:reset_stats() */
int ecsl_l_world_reset_stats(lua_State *L) {
  ecs_system_reset_stats(check_world(L, 1));
  return 0;
}

/*
** Push "no system has the phase 'x' (phases: a, b)": the distinct phases
** of the world's systems, sorted, or "none". An error path: allocates.
*/
static const char *no_phase_text(lua_State *L, ecs_world *w, const char *phase) {
  luaL_Buffer b;
  const char *last = NULL;
  ecs_system *s;
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "no system has the phase '%s' (phases: ", phase);
  luaL_addvalue(&b);
  for (;;) { /* the least phase above last: sorted, each once */
    const char *next = NULL;
    uint32_t cursor = 0;
    while (ecs_system_next(w, &cursor, &s)) {
      const char *p = ecs_system_phase(s);
      if ((last == NULL || strcmp(p, last) > 0) &&
          (next == NULL || strcmp(p, next) < 0))
        next = p;
    }
    if (next == NULL) break;
    if (last != NULL) luaL_addstring(&b, ", ");
    luaL_addstring(&b, next);
    last = next;
  }
  if (last == NULL) luaL_addstring(&b, "none");
  luaL_addchar(&b, ')');
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

/*
** The update of the world at 1: run the systems (ecs_world_update, which
** ends with a budgeted gc). @return 1, or 0 when a system closed the
** world. Raises a system's error, after uncounting this call (raising
** skips the method wrapper's count; see object.c), so that a Lua system's
** error leaves no count behind.
*/
int ecsl_run_systems(lua_State *L, double dt, const char *phase) {
  lupdate u;
  ecs_system *bad;
  ecs_err err;
  const char *detail = NULL;
  lworld *lw = self_lworld(L);
  u.tag = &ecsl_systems_key;
  u.L = L;
  u.lw = lw;
  u.raised = u.closed = 0;
  ecsl_push_state_field(L, 1, &ecsl_systems_key);         /* map or nil */
  u.map = lua_gettop(L);
  err = ecs_world_update_phase(check_world(L, 1), phase, dt, &u, &bad);
  if (err == ECS_ERR_OK) {
    lua_settop(L, u.map - 1);
    return 1;
  }
  if (u.closed && !u.raised) return 0;
  /* the library's own error names the system: read its name (and the
  ** code's text) before the uncount below may release the world */
  if (!u.raised && bad != NULL)
    detail = lua_pushfstring(L, "system '%s': %s", ecs_system_name(bad),
                             ecs_strerror(err));
  else if (err == ECS_ERR_NO_PHASE)
    detail = no_phase_text(L, check_world(L, 1), phase);
  if (--lw->busy == 0 && lw->doomed != NULL) ecsl_world_release(lw);
  if (u.raised) return lua_error(L); /* as system_msgh left it */
  return ecsl_error(L, "world", "update", err, detail, 0);
}

/*
** For world:check: every Lua system has its record, with a function
** (@return NULL or the problem).
*/
const char *ecsl_check_systems(lua_State *L, ecs_world *w) {
  const char *bad = NULL;
  ecs_system *s;
  uint32_t cursor = 0;
  int map;
  ecsl_push_state_field(L, 1, &ecsl_systems_key);
  map = lua_gettop(L);
  while (bad == NULL && ecs_system_next(w, &cursor, &s)) {
    if (ecs_system_callback(s) != call_lua) continue;
    if (!lua_istable(L, map)) {
      bad = "system: a Lua system has no record";
      break;
    }
    lua_pushstring(L, ecs_system_name(s));
    if (lua_rawget(L, map) != LUA_TTABLE)
      bad = "system: a Lua system has no record";
    else if (lua_rawgeti(L, -1, REC_BODY) != LUA_TFUNCTION)
      bad = "system: a Lua system has no function";
    lua_settop(L, map);
  }
  lua_settop(L, map - 1);
  return bad;
}
