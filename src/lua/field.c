/*
** field.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

/* The type name luaL_typeerror would use: __name, or the basic type. */
const char *ecsl_value_type_name(lua_State *L, int idx) {
  const char *name;
  if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING) {
    name = lua_tostring(L, -1); /* kept alive by the metatable */
    lua_pop(L, 1);
    return name;
  }
  if (lua_type(L, idx) == LUA_TLIGHTUSERDATA) return "light userdata";
  return luaL_typename(L, idx);
}

/* The name of field k (for messages). */
static const char *field_name(const lcomponent *lc, uint32_t k) {
  return ecs_component_field(lc->c, k)->name;
}

/*
** Convert the value at idx for field k (nil and none give zero: 0, false,
** ecs.null, nil). Numbers must be numbers (no string coercion); integer
** fields take integral values in range by Lua's own conversion
** (math.tointeger); an f32 field stores the nearest float, magnitudes
** beyond FLT_MAX becoming +-inf; bool takes booleans; entity takes
** handles. Errors name the manager, method and field.
*/
void ecsl_check_value(lua_State *L, int idx, const lcomponent *lc,
                        const char *fn, uint32_t k, fvalue *out) {
  ecs_type ft = (ecs_type)lc->type[k];
  int t = lua_type(L, idx);
  const char *expect;
  out->i = 0;
  if (t == LUA_TNIL || t == LUA_TNONE) return;
  switch (ecs_type_kind_inline(ft)) {
  case ECS_KIND_FLOAT:
    if (t != LUA_TNUMBER) { expect = "a number"; break; }
    out->f = (double)lua_tonumber(L, idx);
    if (ft == ECS_F32) {
      if (out->f > (double)FLT_MAX) out->f = (double)HUGE_VALF;
      else if (out->f < -(double)FLT_MAX) out->f = -(double)HUGE_VALF;
    }
    return;
  case ECS_KIND_BOOL:
    if (t != LUA_TBOOLEAN) { expect = "a boolean"; break; }
    out->i = lua_toboolean(L, idx);
    return;
  case ECS_KIND_ENTITY:
    if (!ecs_lua_is_entity(L, idx)) { expect = "an entity"; break; }
    out->i = (int64_t)ecs_lua_check_entity(L, idx);
    return;
  case ECS_KIND_REF:
    return; /* any value: made a ref by the caller */
  case ECS_KIND_INT: {
    int isint;
    lua_Integer v;
    if (t != LUA_TNUMBER) { expect = "an integer"; break; }
    v = lua_tointegerx(L, idx, &isint);
    if (!isint)
      luaL_error(L, "%s:%s: field '%s' expects an integer, got %s",
                 ecs_component_name(lc->c), fn, field_name(lc, k),
                 lua_tostring(L, idx)); /* a number: converts in place */
    if (!ecs_value_fits(ft, (int64_t)v)) /* the checked rule */
      luaL_error(L, "%s:%s: field '%s' (%s) out of range, got %I",
                 ecs_component_name(lc->c), fn, field_name(lc, k),
                 ecs_type_name(ft), v);
    out->i = (int64_t)v;
    return;
  }
  default: expect = "a value"; break;
  }
  luaL_error(L, "%s:%s: field '%s' expects %s, got %s",
             ecs_component_name(lc->c), fn, field_name(lc, k), expect,
             ecsl_value_type_name(L, idx));
}

/*
** The field number of the string at idx, or an error naming the field.
** One raw lookup in the manager's name table (user value 2 of arg 1).
*/
uint32_t ecsl_check_field(lua_State *L, const lcomponent *lc, int idx,
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
    ecsl_error(L, ecs_component_name(lc->c), fn, ECS_ERR_UNKNOWN_FIELD,
               lua_pushfstring(L, "unknown field '%s'", lua_tostring(L, idx)), 0);
  }
  return (uint32_t)k;
}
