/*
** object.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

/* Class tags and state keys: only their addresses matter (binding.h). */
const char ecsl_world_tag = 'w';
const char ecsl_comp_tag = 'c';
const char ecsl_query_tag = 'q';
const char ecsl_qiter_tag = 'i';
const char ecsl_columns_tag = 'k';
const char ecsl_native_tag = 'n';
const char ecsl_plugin_tag = 'p';
const char ecsl_components_key = 'c';
const char ecsl_refs_key = 'r';
const char ecsl_plugins_key = 'p';
const char ecsl_systems_key = 's';
const char ecsl_qiter_next_key = 'n';

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
size_t ecsl_zero_at(const char *s, size_t len) {
  const char *z = (const char *)memchr(s, 0, len);
  return z == NULL ? 0 : (size_t)(z - s) + 1u;
}

const char *ecs_lua_check_text(lua_State *L, int idx, size_t *len,
                               const char *fn) {
  size_t n, at;
  const char *s;
  if (lua_type(L, idx) != LUA_TSTRING) luaL_typeerror(L, idx, "string");
  s = lua_tolstring(L, idx, &n);
  if ((at = ecsl_zero_at(s, n)) != 0)
    luaL_argerror(L, idx, lua_pushfstring(L, "%s: string contains an "
                  "embedded zero at position %I", fn, (lua_Integer)at));
  if (len != NULL) *len = n;
  return s;
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
** one wrapper (ecsl_l_method) that checks self and counts the call. A call may
** run Lua code it does not control: a finalizer at any allocation, a
** metamethod of a user table. If that code closes the world, the world
** is marked closed at once (every method then raises the closed-world
** error) but its core memory is released only when the last call in
** progress returns, so no call is left holding pointers into freed
** memory. A call that ends in an error does not return through the
** wrapper; its count then stays, and the memory of a world closed later
** is released by the world's __gc instead (never earlier than safe).
** world:update runs Lua systems while the core's scheduler is in progress,
** so it stays counted meanwhile (a system that closes the world has it
** released when update returns); it catches their errors and uncounts
** itself before raising them, so a failing system leaves no count.
** ==================================================================== */


void ecsl_init_head(lhead *h, const void *cls, lworld *lw) {
  h->self = h;
  h->cls = cls;
  h->lw = lw;
}

/*
** Raise "bad argument #idx (<cname> expected, got <what>)"; a userdata
** wearing one of our metatables without being ours is called that, not
** by the class name it borrowed.
*/
int ecsl_object_error(lua_State *L, int idx, const char *cname) {
  const char *got = ecsl_value_type_name(L, idx);
  if (lua_type(L, idx) == LUA_TUSERDATA && strcmp(got, cname) == 0)
    got = lua_pushfstring(L, "a userdata with a borrowed %s metatable", cname);
  return luaL_argerror(L, idx, lua_pushfstring(L, "%s expected, got %s", cname, got));
}

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

lworld *ecsl_test_lworld(lua_State *L, int idx) {
  return (lworld *)ecsl_test_object(L, idx, &ecsl_world_tag);
}

lworld *ecsl_to_lworld(lua_State *L, int idx) {
  lworld *lw = ecsl_test_lworld(L, idx);
  if (lw == NULL) ecsl_object_error(L, idx, ECS_LUA_WORLD);
  return lw;
}


ecs_world *ecs_lua_check_world(lua_State *L, int idx) {
  lworld *lw = ecsl_to_lworld(L, idx);
  if (lw->w == NULL) ecsl_closed(L);
  return lw->w;
}


/* Release the core world of a closed world once no call is in progress. */
void ecsl_world_release(lworld *lw) {
  ecs_world *w = lw->doomed;
  lw->schema_gen = ecs_world_schema_gen(w); /* ecsl_world_gen from now on */
  lw->doomed = NULL;
  ecs_world_free(w);
}

static void world_enter(lworld *lw) { lw->busy++; }

static void world_leave(lworld *lw) {
  if (--lw->busy == 0 && lw->doomed != NULL) ecsl_world_release(lw);
}



/*
** Every method runs through here: check self, count the call. Self is
** checked here and only here (the method reads it with ecsl_self): of
** class m->cls and, for plugin classes, named m->cname. Inline, and with
** two API calls for the shape: lua_touserdata gives NULL for everything
** but userdata, and lua_rawlen gives 0 for a light userdata, so a block
** of at least an lhead is a full userdata.
*/
int ecsl_l_method(lua_State *L) {
  const lmethod *m = (const lmethod *)lua_touserdata(L, lua_upvalueindex(1));
  lhead *h = (lhead *)lua_touserdata(L, 1);
  lworld *lw;
  int n;
  if (m->cls == &ecsl_plugin_tag) {
    const plugin_head *ph = (const plugin_head *)(void *)h;
    if (h == NULL || lua_rawlen(L, 1) < sizeof *ph || h->self != (const void *)h ||
        h->cls != m->cls ||
        (ph->o.tname != m->cname && strcmp(ph->o.tname, m->cname) != 0))
      return ecsl_object_error(L, 1, m->cname);
  } else if (h == NULL || lua_rawlen(L, 1) < sizeof *h ||
             h->self != (const void *)h || h->cls != m->cls) {
    return ecsl_object_error(L, 1, m->cname);
  }
  if ((lw = h->lw) == NULL) return m->fn(L); /* an object of no world */
  world_enter(lw);
  n = m->fn(L);
  world_leave(lw);
  return n;
}

/* Set the methods into the table on top of the stack, each wrapped. */
void ecsl_set_methods(lua_State *L, const luaL_Reg *methods,
                        const void *cls, const char *cname) {
  for (; methods->name != NULL; methods++) {
    lmethod *m = (lmethod *)lua_newuserdatauv(L, sizeof *m, 0);
    m->fn = methods->func;
    m->cls = cls;
    m->cname = cname;
    lua_pushcclosure(L, ecsl_l_method, 1);
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

/* ======================================================================
** Errors
**
** The core returns a code per broken rule, with its text in the one table
** (ECS_ERRORS in include/ecs.h); the binding raises it here and nowhere else,
** so a rule reads the same from every method and a C test of the code is
** also a test of what Lua sees. Texts the binding writes itself are for
** what only it knows: Lua types, table shapes, element positions.
** ==================================================================== */

/*
** Raise "cls:method: text" for code err. text is detail when not NULL
** (the core's own message with a position or a name, or a word the
** method's contract uses: "entity has no transform"), else the table's
** text. cls NULL: "method: text", for module functions and names with a
** separator of their own ("ecs.world", "world.transform"). An error about
** an entity's state (ECS_ERR_DEAD, ECS_ERR_MISSING) ends with the entity
** at eidx (0: none), " (entity(12.3))": the one place that rule is kept.
** ECS_ERR_CLOSED raises the closed-world text alone (ecsl_closed);
** ECS_ERR_CALLBACK the error an observer raised, as its message handler
** left it, when one is kept (observer.c). Does not return.
*/
int ecsl_error(lua_State *L, const char *cls, const char *method, ecs_err err,
               const char *detail, int eidx) {
  const char *text = detail != NULL ? detail : ecs_strerror(err);
  const char *note = "";
  if (err == ECS_ERR_CLOSED) return ecsl_closed(L);
  if (err == ECS_ERR_CALLBACK) ecsl_observer_reraise(L); /* an observer's */
  if (eidx != 0 && (err == ECS_ERR_DEAD || err == ECS_ERR_MISSING))
    note = ecsl_entity_note(L, eidx);
  if (cls == NULL) return luaL_error(L, "%s: %s%s", method, text, note);
  return luaL_error(L, "%s:%s: %s%s", cls, method, text, note);
}

/*
** The number luaL_argerror gives the argument at stack index arg of the
** running C function: one less when it was called as a method (with a
** colon, so that self is not counted), as Lua's own messages say
** ("bad argument #1 to 'query'" for the first argument after self).
** Messages the binding words itself ("world:query: bad argument #1
** (unknown key 'x')") number their argument through here, so that one
** call never gets two numberings. Error paths only.
*/
int ecsl_arg_number(lua_State *L, int arg) {
  lua_Debug ar;
  if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) &&
      ar.namewhat != NULL && strcmp(ar.namewhat, "method") == 0)
    return arg - 1;
  return arg;
}

/*
** Push "stack traceback:\n\t..." for levels 1 .. last of L's stack (last
** < 1: every level), as Lua's own traceback words them, from the function
** that raised on: a message handler (level 0) keeps, with the error, the
** frames a catch would unwind (ecsl_system_msgh, the observers'). Written
** here rather than cut out of luaL_traceback, whose lines per level vary
** (tail calls) and whose levels run to the bottom of the stack. A deep
** stack shows its first 12 levels and its last 10. Error paths only.
*/
#define TB_HEAD 12
#define TB_TAIL 10
void ecsl_push_traceback(lua_State *L, int last) {
  luaL_Buffer b;
  lua_Debug ar;
  int level;
  if (last < 1) { /* every level: count them */
    last = 0;
    while (lua_getstack(L, last + 1, &ar)) last++;
  }
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "stack traceback:");
  for (level = 1; level <= last && lua_getstack(L, level, &ar); level++) {
    if (level == TB_HEAD + 1 && last - TB_HEAD > TB_TAIL) {
      int skip = last - TB_HEAD - TB_TAIL;
      lua_pushfstring(L, "\n\t...\t(skipping %d levels)", skip);
      luaL_addvalue(&b);
      level += skip - 1;
      continue;
    }
#if LUA_VERSION_NUM >= 502
    lua_getinfo(L, "Slnt", &ar);
#else
    lua_getinfo(L, "Sln", &ar);
#endif
    if (ar.currentline > 0)
      lua_pushfstring(L, "\n\t%s:%d: in ", ar.short_src, ar.currentline);
    else
      lua_pushfstring(L, "\n\t%s: in ", ar.short_src);
    luaL_addvalue(&b);
    if (ar.namewhat != NULL && *ar.namewhat != '\0')
      lua_pushfstring(L, "%s '%s'", strcmp(ar.namewhat, "global") == 0
                                        ? "function" : ar.namewhat,
                      ar.name != NULL ? ar.name : "?");
    else if (*ar.what == 'm')
      lua_pushliteral(L, "main chunk");
    else if (*ar.what == 'C')
      lua_pushliteral(L, "?");
    else
      lua_pushfstring(L, "function <%s:%d>", ar.short_src, ar.linedefined);
    luaL_addvalue(&b);
#if LUA_VERSION_NUM >= 502
    if (ar.istailcall) luaL_addstring(&b, "\n\t(...tail calls...)");
#endif
  }
  luaL_pushresult(&b);
}

/*
** The message handler's part shared by systems and observers: for a
** string error at 1, push "<prefix>: <error>\n<traceback of levels 1 ..
** last>" and return it; any other value is returned as it is (a table
** error stays the same table). Error paths only.
*/
int ecsl_prefix_error(lua_State *L, const char *prefix, int last) {
  if (lua_type(L, 1) != LUA_TSTRING) {
    lua_settop(L, 1);
    return 1;
  }
  lua_pushfstring(L, "%s: ", prefix);
  lua_pushvalue(L, 1);
  lua_pushliteral(L, "\n");
  ecsl_push_traceback(L, last);
  lua_concat(L, 4);
  return 1;
}

/*
** The one closed-world text, "attempt to use a closed world", from the
** table (ECS_ERR_CLOSED) and without a function name, like liolib's
** "attempt to use a closed file": the self checks that raise it run
** before any method knows its name, and specs compare it whole.
*/
int ecsl_closed(lua_State *L) {
  return luaL_error(L, "%s", ecs_strerror(ECS_ERR_CLOSED));
}

/*
** " (entity(12.3))" naming the entity at idx, for errors that concern it,
** or "" when idx holds no entity handle. May allocate (only on error
** paths, right before raising).
*/
const char *ecsl_entity_note(lua_State *L, int idx) {
  ecs_entity e;
  if (!ecs_lua_is_entity(L, idx)) return "";
  e = ecs_lua_check_entity(L, idx);
  return lua_pushfstring(L, " (entity(%d.%d))", (int)ecs_entity_index(e),
                         (int)ecs_entity_generation(e));
}

/*
** Give the metatable on top of the stack its methods (each wrapped, checked
** by class tag cls) as __index, and as __methods for the argument sweep.
*/
void ecsl_class_methods(lua_State *L, const luaL_Reg *methods,
                        const void *cls, const char *cname) {
  lua_newtable(L);                                       /* mt, methods */
  ecsl_set_methods(L, methods, cls, cname);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, -2, "__methods");                      /* mt */
}
