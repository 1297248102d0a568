/*
** transform.c -- part of the Lua binding (src/lua/binding.h).
*/
#include "binding.h"

/* ======================================================================
** Transform and names
**
** world.transform and world.names are plugin objects (full userdata of
** class ECS_LUA_TRANSFORM / ECS_LUA_NAMES holding the core manager, user
** value 1: the world) created on first access through the world's
** __index (l_world_index) and kept in the world's plugin table. The core
** managers are owned by the world (registered as "transform" and
** "names"); a closed world makes every method raise "attempt to use a
** closed world".
**
** Errors are the core's codes through ecsl_error: "transform:<method>:
** entity is not alive (entity(12.3))", "...: entity has no transform
** (entity(12.3))" (the contract's word for ECS_ERR_MISSING here),
** "transform:set_parent: parenting would create a cycle", "...: non-finite
** number", "...: rotation quaternion must be non-zero"; the core checks
** the values, the binding only their Lua types and, in tables, which
** element is wrong. names likewise. Predicates (has) return false for
** dead, stale and null handles; get/find return nil.
** ==================================================================== */




/*
** The manager of a method: self, argument 1, whose class ecsl_l_method
** checked already (a plugin object named tname): only the closed world is
** left to check.
*/
static void *check_builtin(lua_State *L) {
  plugin_head *ph = ecsl_self(L, plugin_head);
  if (ph->o.h.lw == NULL || ph->o.h.lw->w == NULL) ecsl_closed(L);
  return ph + 1;
}

static ecs_transform *check_tr(lua_State *L) {
  return ((ltransform *)check_builtin(L))->t;
}

static ecs_names *check_names(lua_State *L) {
  return ((lnames *)check_builtin(L))->m;
}

/* The error of method fn for the core's code (the entity: argument 2). */
static int tr_fail(lua_State *L, const char *fn, ecs_err err) {
  return ecsl_error(L, "transform", fn, err,
                    err == ECS_ERR_MISSING ? "entity has no transform" : NULL, 2);
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

/* T:add(e [, {position=, rotation=, scale=}]): any other key is an error */
static int l_tr_add(lua_State *L) {
  ecs_transform *t = check_tr(L);
  ecs_entity e = check_entity(L, 2);
  ecs_trs l = {{0, 0, 0}, {0, 0, 0, 1}, {1, 1, 1}};
  ecs_err err;
  if (!lua_isnoneornil(L, 3)) {
    static const char *const known[] = {"position", "rotation", "scale", NULL};
    luaL_checktype(L, 3, LUA_TTABLE);
    ecsl_check_keys(L, 3, 3, "transform:add", known, false);
    read_vec(L, 3, "position", l.position, 3);
    read_vec(L, 3, "rotation", l.rotation, 4);
    read_vec(L, 3, "scale", l.scale, 3);
  }
  err = ecs_transform_add(t, e, &l);
  if (err != ECS_ERR_OK) return tr_fail(L, "add", err);
  ecsl_charge(L, ((plugin_head *)lua_touserdata(L, 1))->o.h.lw);
  return 0;
}

/* T:remove(e) -> boolean (false: e is dead or has no transform). Asked
** first, so that a listener's error is raised, never taken for false. */
static int l_tr_remove(lua_State *L) {
  ecs_transform *t = check_tr(L);
  ecs_entity e = check_entity(L, 2);
  ecs_err err;
  if (!ecs_transform_has(t, e)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  err = ecs_transform_remove(t, e);
  if (err != ECS_ERR_OK) return tr_fail(L, "remove", err);
  lua_pushboolean(L, 1);
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
  uint32_t i = ecs_transform_lookup(t, e);
  if (i == ECS_NO_INSTANCE)
    tr_fail(L, fn, ecs_alive(ecs_transform_world(t), e) ? ECS_ERR_MISSING
                                                        : ECS_ERR_DEAD);
  return i;
}

/* T:set_local_position(e, x, y, z) */
static int l_tr_set_local_position(lua_State *L) {
  ecs_transform *t = check_tr(L);
  ecs_entity e = check_entity(L, 2);
  double x = (double)luaL_checknumber(L, 3);
  double y = (double)luaL_checknumber(L, 4);
  double z = (double)luaL_checknumber(L, 5);
  ecs_err err = ecs_transform_set_position(t, e, x, y, z); /* checks them */
  if (err != ECS_ERR_OK) return tr_fail(L, "set_local_position", err);
  return 0;
}

/* T:set_local_rotation(e, x, y, z, w) -- normalized */
static int l_tr_set_local_rotation(lua_State *L) {
  ecs_transform *t = check_tr(L);
  ecs_entity e = check_entity(L, 2);
  double q[4];
  ecs_err err;
  for (int k = 0; k < 4; k++) q[k] = (double)luaL_checknumber(L, 3 + k);
  err = ecs_transform_set_rotation(t, e, q[0], q[1], q[2], q[3]);
  if (err != ECS_ERR_OK) return tr_fail(L, "set_local_rotation", err);
  return 0;
}

/* T:set_local_scale(e, x, y, z) */
static int l_tr_set_local_scale(lua_State *L) {
  ecs_transform *t = check_tr(L);
  ecs_entity e = check_entity(L, 2);
  double x = (double)luaL_checknumber(L, 3);
  double y = (double)luaL_checknumber(L, 4);
  double z = (double)luaL_checknumber(L, 5);
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
  const char *detail = NULL;
  switch (err) {
    case ECS_ERR_OK: return 0;
    case ECS_ERR_KEEP_WORLD: /* the core can say which matrix is at fault */
      detail = ecs_transform_keep_world_error(t, c, p);
      break;
    case ECS_ERR_DEAD:
      detail = ecs_alive(ecs_transform_world(t), c) ? "parent is not alive"
                                                    : "child is not alive";
      break;
    case ECS_ERR_MISSING:
      detail = ecs_transform_has(t, c) ? "parent has no transform"
                                       : "child has no transform";
      break;
    default:
      break;
  }
  /* no entity note: the texts say which argument, and specs compare them
  ** whole ("transform:set_parent: parent has no transform") */
  return ecsl_error(L, "transform", "set_parent", err, detail, 0);
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

/*
** T:destroy_tree(e) -> number of entities destroyed. An observer's error
** (on_remove of any manager of a dying entity, the cleanup's too) is
** raised as world:destroy raises it, after the walk stopped there.
*/
static int l_tr_destroy_tree(lua_State *L) {
  ecs_transform *t = check_tr(L);
  size_t done;
  ecs_err err;
  tr_row(L, t, 2, "destroy_tree");
  err = ecs_transform_destroy_tree_report(t, check_entity(L, 2), &done);
  if (err != ECS_ERR_OK) return ecsl_error(L, "transform", "destroy_tree", err, NULL, 0);
  lua_pushinteger(L, (lua_Integer)done);
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
  row = ecs_transform_lookup(t, e);
  if (row == ECS_NO_INSTANCE)
    luaL_error(L, "transform:%s: entities[%d] is not alive or has no transform%s",
               fn, (int)k, ecsl_entity_note(L, -1));
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
    /* the core refuses it too (set_locals), but without saying which one,
    ** and only after every element was read: checked here to name it */
    if (rotation && v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0)
      ecsl_error(L, "transform", fn, ECS_ERR_ZERO_ROTATION,
                 lua_pushfstring(L, "%s at index %d",
                                 ecs_strerror(ECS_ERR_ZERO_ROTATION), (int)(k + 1)),
                 0);
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
  {"on_add", ecsl_l_on_add},
  {"on_remove", ecsl_l_on_remove},
  {"on_set", ecsl_l_on_set},
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
  if (err != ECS_ERR_OK) return ecsl_error(L, "names", "set", err, NULL, 2);
  ecsl_charge(L, ((plugin_head *)lua_touserdata(L, 1))->o.h.lw);
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

/* names:clear(e) -> boolean (false if it had no name); a REMOVE
** listener's error is raised after the name went */
static int l_nm_clear(lua_State *L) {
  ecs_names *m = check_names(L);
  bool done;
  ecs_err err = ecs_names_clear(m, check_entity(L, 2), &done);
  if (err != ECS_ERR_OK) return ecsl_error(L, "names", "clear", err, NULL, 0);
  lua_pushboolean(L, done);
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
  {"on_add", ecsl_l_on_add},
  {"on_remove", ecsl_l_on_remove},
  {"on_set", ecsl_l_on_set},
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

void ecsl_open_builtins(lua_State *L) {
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
    if (err == ECS_ERR_OK) ecs_lua_plugin_manager(L, -1, o->t); /* a query term */
  } else {
    lnames *o = (lnames *)obj;
    o->m = ecs_names_of(w);
    if (o->m == NULL) err = ecs_names_new(w, &o->m);
  }
  if (err != ECS_ERR_OK) {
    ecs_lua_plugin_detach(L, widx, tname);
    ecsl_error(L, NULL, which == 0 ? "world.transform" : "world.names", err,
               NULL, 0);
  }
}

/*
** The fields every world has: world.transform and world.names, created with
** the world and stored in its own __index table (whose metatable sends
** every other key to the shared methods table), so a method lookup is two
** table reads and no function call.
*/
void ecsl_open_world_fields(lua_State *L, int widx) {
  lua_getmetatable(L, widx);                             /* mt */
  lua_getfield(L, -1, "__index");                        /* mt, fields */
  push_builtin(L, widx, 0);
  lua_setfield(L, -2, "transform");
  push_builtin(L, widx, 1);
  lua_setfield(L, -2, "names");
  lua_pop(L, 2);
}

