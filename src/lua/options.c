/*
** options.c -- part of the Lua binding (src/lua/binding.h): the one check
** of option tables and lists. Unknown keys are errors, never silently
** ignored (API.md, "Scheduling"): `world:query{ P, withou = { H } }` would
** otherwise drop the exclusion, and `world:component("P", { x = "f32" })`
** would make a tag.
*/
#include "binding.h"

/*
** Check the keys of the table at idx (the argument at stack index arg of
** fn): integer keys 1..#t when list is true, and the strings of allowed
** (NULL-terminated, may be NULL for none). Anything else raises
**   fn: bad argument #n (unknown option 'withou')
** or, for a list, (list expected, got key 'x'), n numbered as
** luaL_argerror numbers arg (ecsl_arg_number), so that both kinds of
** message count the same way. Values are the caller's to check.
** Stack-neutral; no allocation beyond the error message.
*/
void ecsl_check_keys(lua_State *L, int idx, int arg, const char *fn,
                     const char *const *allowed, bool list) {
  lua_Integer n = list ? (lua_Integer)lua_rawlen(L, idx) : 0;
  idx = lua_absindex(L, idx);
  arg = ecsl_arg_number(L, arg);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1); /* the value */
    if (list && lua_isinteger(L, -1)) {
      lua_Integer k = lua_tointeger(L, -1);
      if (k >= 1 && k <= n) continue;
    }
    if (lua_type(L, -1) == LUA_TSTRING && allowed != NULL) {
      const char *key = lua_tostring(L, -1);
      const char *const *a = allowed;
      while (*a != NULL && strcmp(*a, key) != 0) a++;
      if (*a != NULL) continue;
    }
    if (lua_type(L, -1) == LUA_TNUMBER) /* the error ends the walk: */
      lua_tostring(L, -1);               /* converting the key is fine */
    if (lua_type(L, -1) == LUA_TSTRING)
      lua_pushfstring(L, "%s: bad argument #%d (%s '%s')", fn, arg,
                      list && allowed == NULL ? "list expected, got key"
                      : list ? "unknown key" : "unknown option",
                      lua_tostring(L, -1));
    else
      lua_pushfstring(L, "%s: bad argument #%d (%s %s key)", fn, arg,
                      list ? "list expected, got a" : "unknown option: a",
                      luaL_typename(L, -1));
    lua_error(L);
  }
}
