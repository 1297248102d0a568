/*
** ecs_compat.h -- one C API for every Lua the binding builds against: Lua 5.1,
** 5.2, 5.3, 5.4 and LuaJIT 2.1. Included right after lua.h and lauxlib.h
** by binding.h, ecs_lua.h and ecs_api.h (so by every binding file and
** every C plugin); the rest of the code is written against the 5.4 API.
**
** 5.4 and 5.3: nothing, or almost (5.3 lacks the 5.4 user values and
** luaL_typeerror). Before 5.3 the 5.3 API comes from lua-compat-5.3's
** compat-5.3.h (carried in vendor/lua-compat-5.3/; upstream
** github.com/lunarmodules/lua-compat-5.3), as static functions in each
** file that includes it. What 5.3 lacks of 5.4 is below:
**   - n user values per userdata (lua_newuserdatauv, lua_getiuservalue,
**     lua_setiuservalue): a userdata with n > 0 carries one table as its
**     single 5.1-5.3 user value (5.1: its environment), [0] = n, [i] the
**     i-th value; one with none has no table (5.1: the default
**     environment, which [0] tells apart);
**   - lua_gc with one or two arguments; LUA_GCISRUNNING on 5.1 (there
**     the collector is taken as running);
**   - luaL_typeerror, luaL_argexpected, lua_Unsigned and the integer
**     format on 5.1 and 5.2.
** Lua numbers before 5.3 are doubles only: lua_Integer is converted on
** the way in and out, so integers are exact up to 2^53 (README "Lua
** versions").
*/
#ifndef ECS_COMPAT_H
#define ECS_COMPAT_H

#include "lua.h"
#include "lauxlib.h"

#if !defined(LUA_VERSION_NUM) || LUA_VERSION_NUM < 501
#error "ecs: Lua 5.1 or later (or LuaJIT) expected"
#endif

#if LUA_VERSION_NUM < 503
/* lua-compat-5.3 is written for a lax warning set */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wcast-qual"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#endif
#ifndef COMPAT53_HAVE_STRERROR_R /* only its file functions use it */
#define COMPAT53_HAVE_STRERROR_R 0
#endif
#include "compat-5.3.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
/* lua_Integer-wide indices, as in 5.3 (compat-5.3 keeps 5.1's int) */
#undef lua_rawgeti
#define lua_rawgeti(L, i, n) \
  (lua_rawgeti((L), (i), (int)(n)), lua_type((L), -1))
#define lua_rawseti(L, i, n) lua_rawseti((L), (i), (int)(n))
#undef lua_Unsigned
#define lua_Unsigned unsigned long long
#ifndef LUA_INTEGER_FMT
#define LUA_INTEGER_FMT "%lld"
#endif
#undef LUAI_UACINT
#define LUAI_UACINT long long

/*
** lua_pushfstring and luaL_error with 5.3's %I (a lua_Integer), which 5.1
** and 5.2 do not know (they would read the wrong argument): the format is
** walked here, each piece pushed and joined.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
static inline const char *ecsl_compat_pushvfstring(lua_State *L, const char *fmt,
                                                   va_list ap) {
  const char *e;
  char b[64];
  lua_pushliteral(L, "");
  while ((e = strchr(fmt, '%')) != NULL) {
    lua_pushlstring(L, fmt, (size_t)(e - fmt));
    switch (e[1]) {
    case 's': {
      const char *s = va_arg(ap, const char *);
      lua_pushstring(L, s != NULL ? s : "(null)");
      break;
    }
    case 'c': b[0] = (char)va_arg(ap, int); lua_pushlstring(L, b, 1); break;
    case 'd': snprintf(b, sizeof b, "%d", va_arg(ap, int)); lua_pushstring(L, b); break;
    case 'I':
      snprintf(b, sizeof b, "%lld", (long long)va_arg(ap, lua_Integer));
      lua_pushstring(L, b);
      break;
    case 'f':
      snprintf(b, sizeof b, LUA_NUMBER_FMT, (LUAI_UACNUMBER)va_arg(ap, lua_Number));
      lua_pushstring(L, b);
      break;
    case 'p': snprintf(b, sizeof b, "%p", va_arg(ap, void *)); lua_pushstring(L, b); break;
    case '%': lua_pushliteral(L, "%"); break;
    default: lua_pushlstring(L, e, e[1] != '\0' ? 2 : 1); break;
    }
    lua_concat(L, 3);
    fmt = e + (e[1] != '\0' ? 2 : 1);
  }
  lua_pushstring(L, fmt);
  lua_concat(L, 2);
  return lua_tostring(L, -1);
}
static inline const char *ecsl_compat_pushfstring(lua_State *L, const char *fmt, ...) {
  const char *s;
  va_list ap;
  va_start(ap, fmt);
  s = ecsl_compat_pushvfstring(L, fmt, ap);
  va_end(ap);
  return s;
}
static inline int ecsl_compat_error(lua_State *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  luaL_where(L, 1);
  ecsl_compat_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  return lua_error(L);
}
#undef lua_pushfstring
#define lua_pushfstring ecsl_compat_pushfstring
#undef luaL_error
#define luaL_error ecsl_compat_error
#endif /* LUA_VERSION_NUM < 503 */

/*
** ecsl_push_cfn(L, f): lua_pushcfunction for the calls made per loop (a
** protected body, an iterator). 5.1 and LuaJIT allocate a closure per
** push (5.2 on push light C functions): there the function is made once
** per state and site, kept in the registry under the site's own key.
*/
#if LUA_VERSION_NUM == 501
#define ecsl_push_cfn(L, f)                                                  \
  do {                                                                       \
    static const char ecsl_cfn_key = 0;                                      \
    if (lua_rawgetp((L), LUA_REGISTRYINDEX, &ecsl_cfn_key) != LUA_TFUNCTION) { \
      lua_pop((L), 1);                                                       \
      lua_pushcfunction((L), (f));                                           \
      lua_pushvalue((L), -1);                                                \
      lua_rawsetp((L), LUA_REGISTRYINDEX, &ecsl_cfn_key);                    \
    }                                                                        \
  } while (0)
#else
#define ecsl_push_cfn(L, f) lua_pushcfunction((L), (f))
#endif

#if LUA_VERSION_NUM < 504

#ifndef LUAMOD_API
#define LUAMOD_API LUALIB_API
#endif

#ifndef LUA_GCISRUNNING /* 5.1 (not LuaJIT): unknown, taken as running */
#define LUA_GCISRUNNING (-1)
#define ECSL_COMPAT_NO_ISRUNNING 1
#endif
/* 5.1 cannot tell whether the collector runs, and its LUA_GCSTEP restarts
** a stopped one: there the binding charges no C memory to the collector
** (its only LUA_GCSTEP), and the calls that stop the collector for a
** moment (world:inspect, the journal) restart it after (README "Lua
** versions"). */
static inline int ecsl_compat_gc(lua_State *L, int what, int data) {
  if (what == -1) return 1;
#ifdef ECSL_COMPAT_NO_ISRUNNING
  if (what == LUA_GCSTEP) return 0;
#endif
  return lua_gc(L, what, data);
}
#define ECSL_COMPAT_GC(L, what, data, ...) ecsl_compat_gc((L), (what), (data))
#undef lua_gc
#define lua_gc(...) ECSL_COMPAT_GC(__VA_ARGS__, 0, 0)

/* the one user value: a table with [0] = n, or nothing of ours; pushes
** the table and returns 1 if it has an n-th value, else pushes nothing */
static inline int ecsl_compat_uvtable(lua_State *L, int idx, int n) {
  lua_getuservalue(L, idx);
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_rawgeti(L, -1, 0);
    if (lua_type(L, -1) == LUA_TNUMBER && n >= 1 && n <= (int)lua_tonumber(L, -1)) {
      lua_pop(L, 1);
      return 1;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 0;
}
static inline void *lua_newuserdatauv(lua_State *L, size_t size, int nuv) {
  void *p = lua_newuserdata(L, size);
  if (nuv > 0) {
    lua_createtable(L, nuv, 1);
    lua_pushinteger(L, nuv);
    lua_rawseti(L, -2, 0);
    lua_setuservalue(L, -2);
  }
  return p;
}
static inline int lua_getiuservalue(lua_State *L, int idx, int n) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) != LUA_TUSERDATA || !ecsl_compat_uvtable(L, idx, n)) {
    lua_pushnil(L);
    return LUA_TNONE;
  }
  lua_rawgeti(L, -1, n);
  lua_remove(L, -2);
  return lua_type(L, -1);
}
static inline int lua_setiuservalue(lua_State *L, int idx, int n) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) != LUA_TUSERDATA || !ecsl_compat_uvtable(L, idx, n)) {
    lua_pop(L, 1);
    return 0;
  }
  lua_insert(L, -2);                                      /* t, v */
  lua_rawseti(L, -2, n);
  lua_pop(L, 1);
  return 1;
}

#ifndef luaL_typeerror /* 5.4's, with __name */
static inline int ecsl_compat_typeerror(lua_State *L, int arg, const char *tname) {
  const char *msg, *typearg;
  if (luaL_getmetafield(L, arg, "__name") == LUA_TSTRING)
    typearg = lua_tostring(L, -1);
  else if (lua_type(L, arg) == LUA_TLIGHTUSERDATA)
    typearg = "light userdata";
  else
    typearg = luaL_typename(L, arg);
  msg = lua_pushfstring(L, "%s expected, got %s", tname, typearg);
  return luaL_argerror(L, arg, msg);
}
#define luaL_typeerror ecsl_compat_typeerror
#define ECSL_COMPAT_TYPEERROR 1
#endif
#ifndef luaL_argexpected
#define luaL_argexpected(L, cond, arg, tname) \
  ((void)((cond) || luaL_typeerror(L, (arg), (tname))))
#endif

#if LUA_VERSION_NUM < 503
/* 5.3's integer arguments: an integral number (or a string of one), not
** 5.1's and 5.2's truncation of 1.5 to 1 */
static inline lua_Integer ecsl_compat_checkinteger(lua_State *L, int arg) {
  int isnum = 0;
  lua_Integer d = lua_tointegerx(L, arg, &isnum);
  if (!isnum) {
    if (lua_isnumber(L, arg))
      luaL_argerror(L, arg, "number has no integer representation");
    else
      luaL_typeerror(L, arg, "number");
  }
  return d;
}
static inline lua_Integer ecsl_compat_optinteger(lua_State *L, int arg, lua_Integer def) {
  return lua_isnoneornil(L, arg) ? def : ecsl_compat_checkinteger(L, arg);
}
#undef luaL_checkinteger
#define luaL_checkinteger ecsl_compat_checkinteger
#undef luaL_optinteger
#define luaL_optinteger ecsl_compat_optinteger
#endif

#endif /* LUA_VERSION_NUM < 504 */

#endif
