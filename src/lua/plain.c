/*
** plain.c -- part of the Lua binding (src/lua/binding.h): Lua values as
** plain data, the bytes snapshots (src/lua/snapshot.c) and deltas
** (src/lua/journal.c) carry for lua fields (docs/persistence.md):
**   value: u8 tag, then 1 false, 2 true (nothing more), 3 integer (i64),
**   4 float (f64 bits), 5 string (u32 length, bytes), 6 table (u32 pairs,
**   then each key and value), 7 entity handle (u32 id)
** little-endian. Plain data is nil (an empty cell), booleans, numbers,
** strings, entity handles and tables of these without cycles or
** metatables, nested at most ECSL_PLAIN_DEPTH deep.
*/
#include "binding.h"
#include "plain.h"
#include "checksum.h" /* ecsi_mix64 */
#include "snapshot.h" /* ecs_snapshot_hash: XXH64 */

enum { T_FALSE = 1, T_TRUE, T_INT, T_FLOAT, T_STRING, T_TABLE, T_ENTITY };

/*
** Writing values allocates nothing Lua's collector sees (the buffer's
** blocks come from the allocator directly, the stack only grows), so no
** finalizer can run while the section is written and then saved with the
** core's part: the two describe the same moment. Cycles are found on the
** path from the value to the table being written (at most MAX_DEPTH).
*/
/* The checks of a table about to be walked at depth (path: the tables
** above it): NULL, or what makes it not plain data; *nomem when the stack
** cannot take its pairs. */
static const char *enter_table(lua_State *L, int idx, const void **path,
                               int depth, bool *nomem) {
  if (lua_getmetatable(L, idx)) {
    lua_pop(L, 1);
    return "a table with a metatable is not plain data";
  }
  for (int k = 0; k < depth; k++)
    if (path[k] == lua_topointer(L, idx))
      return "a table that contains itself (a cycle) is not plain data";
  if (depth >= ECSL_PLAIN_DEPTH) return "tables nested too deeply (limit 100)";
  path[depth] = lua_topointer(L, idx);
  if (!lua_checkstack(L, 6)) *nomem = true;
  return NULL;
}

typedef struct enc {
  lua_State *L;
  ecs_writer *out;
  const void *path[ECSL_PLAIN_DEPTH]; /* the tables being written */
  bool nomem;
} enc;

static void put(enc *e, const void *p, size_t n) {
  if (!e->nomem && ecs_write(e->out, p, n) != ECS_ERR_OK) e->nomem = true;
}

static void put_u32(enc *e, uint32_t v) {
  unsigned char b[4];
  for (int k = 0; k < 4; k++) b[k] = (unsigned char)(v >> (8 * k));
  put(e, b, 4);
}

static void put_u64(enc *e, uint64_t v) {
  unsigned char b[8];
  for (int k = 0; k < 8; k++) b[k] = (unsigned char)(v >> (8 * k));
  put(e, b, 8);
}

static void put_tag(enc *e, int tag) {
  unsigned char t = (unsigned char)tag;
  put(e, &t, 1);
}

/*
** Write the value at idx (absolute). @return NULL, or what makes it not
** plain data (the caller names the entity and field). Never raises: a
** stack that cannot grow counts as out of memory (e->nomem).
*/
static const char *enc_value(enc *e, int idx, int depth) {
  lua_State *L = e->L;
  switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN:
      put_tag(e, lua_toboolean(L, idx) ? T_TRUE : T_FALSE);
      return NULL;
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) {
        put_tag(e, T_INT);
        put_u64(e, (uint64_t)lua_tointeger(L, idx));
      } else {
        double d = (double)lua_tonumber(L, idx);
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        put_tag(e, T_FLOAT);
        put_u64(e, bits);
      }
      return NULL;
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(L, idx, &len);
      if (len > UINT32_MAX) return "a string longer than 4 GB";
      put_tag(e, T_STRING);
      put_u32(e, (uint32_t)len);
      put(e, s, len);
      return NULL;
    }
    case LUA_TTABLE: {
      uint32_t pairs = 0;
      const char *bad = NULL;
      if ((bad = enter_table(L, idx, e->path, depth, &e->nomem)) != NULL ||
          e->nomem)
        return bad;
      lua_pushnil(L);
      while (lua_next(L, idx)) {
        lua_pop(L, 1);
        pairs++;
      }
      put_tag(e, T_TABLE);
      put_u32(e, pairs);
      lua_pushnil(L);
      while (bad == NULL && !e->nomem && lua_next(L, idx)) { /* ..., k, v */
        int top = lua_gettop(L);
        bad = enc_value(e, top - 1, depth + 1);
        if (bad == NULL) bad = enc_value(e, top, depth + 1);
        lua_pop(L, 1);
      }
      if (bad != NULL || e->nomem) lua_pop(L, 1); /* the key */
      return bad;
    }
    case LUA_TNIL:
      return "nil is not a value here"; /* refs never hold nil */
    case LUA_TFUNCTION:
      return "a function is not plain data";
    case LUA_TLIGHTUSERDATA:
      if (ecs_lua_is_entity(L, idx)) {
        put_tag(e, T_ENTITY);
        put_u32(e, (uint32_t)ecs_lua_check_entity(L, idx));
        return NULL;
      }
      return "a light userdata is not plain data";
    case LUA_TUSERDATA:
      return "a userdata is not plain data";
    case LUA_TTHREAD:
      return "a coroutine is not plain data";
    default:
      return "a value of this type is not plain data";
  }
}

const char *ecsl_plain_encode(lua_State *L, int idx, ecs_writer *out,
                              bool *nomem) {
  enc e;
  const char *bad;
  e.L = L;
  e.out = out;
  e.nomem = false;
  bad = enc_value(&e, lua_absindex(L, idx), 0);
  *nomem = e.nomem;
  return e.nomem ? NULL : bad;
}

/* ----------------------------------------------------------------------
** Hashing: like encoding, the same walk, a sum for tables
** ------------------------------------------------------------------- */

#define mix ecsi_mix64 /* checksum.h: the state hash's mixer */

typedef struct hsh {
  lua_State *L;
  const void *path[ECSL_PLAIN_DEPTH];
  bool nomem;
} hsh;

/* A value that is not plain data counts by what it is, not by what it
** holds: only within this Lua state, which is all that needs it (such a
** value cannot be carried by a snapshot or a delta, so no other world can
** be equal). */
static uint64_t identity(lua_State *L, int idx) {
  return mix((uint64_t)(uintptr_t)lua_topointer(L, idx) ^
             ((uint64_t)lua_type(L, idx) << 48));
}

static const char *hash_value(hsh *h, int idx, int depth, uint64_t *out) {
  lua_State *L = h->L;
  switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN:
      *out = mix(lua_toboolean(L, idx) ? T_TRUE : T_FALSE);
      return NULL;
    case LUA_TNUMBER: {
      uint64_t bits;
      if (lua_isinteger(L, idx)) {
        bits = (uint64_t)lua_tointeger(L, idx);
        *out = mix(bits ^ ((uint64_t)T_INT << 56) ^ 0x1111);
      } else {
        double d = (double)lua_tonumber(L, idx);
        memcpy(&bits, &d, sizeof bits);
        *out = mix(mix(bits) ^ T_FLOAT);
      }
      return NULL;
    }
    case LUA_TSTRING: {
      size_t len;
      const char *p = lua_tolstring(L, idx, &len);
      *out = mix(ecs_snapshot_hash(p, len) ^ T_STRING);
      return NULL;
    }
    case LUA_TTABLE: {
      uint64_t sum = 0;
      const char *bad = NULL;
      if (enter_table(L, idx, h->path, depth, &h->nomem) != NULL) {
        *out = identity(L, idx); /* a metatable, a cycle, too deep */
        return NULL;
      }
      if (h->nomem) return NULL;
      lua_pushnil(L);
      while (bad == NULL && !h->nomem && lua_next(L, idx)) { /* ..., k, v */
        int top = lua_gettop(L);
        uint64_t hk = 0, hv = 0;
        bad = hash_value(h, top - 1, depth + 1, &hk);
        if (bad == NULL) bad = hash_value(h, top, depth + 1, &hv);
        sum += mix(hk * 0x9E3779B97F4A7C15u + hv); /* order-free: a sum */
        lua_pop(L, 1);
      }
      if (bad != NULL || h->nomem) lua_pop(L, 1); /* the key */
      *out = mix(sum ^ T_TABLE);
      return bad;
    }
    case LUA_TLIGHTUSERDATA:
      if (ecs_lua_is_entity(L, idx)) {
        *out = mix((uint64_t)(uint32_t)ecs_lua_check_entity(L, idx) ^
                   ((uint64_t)T_ENTITY << 40));
        return NULL;
      }
      *out = identity(L, idx);
      return NULL;
    default: /* functions, userdata, coroutines: by identity */
      *out = identity(L, idx);
      return NULL;
  }
}

const char *ecsl_plain_hash(lua_State *L, int idx, uint64_t *out, bool *nomem) {
  hsh h;
  const char *bad;
  h.L = L;
  h.nomem = false;
  *out = 0;
  bad = hash_value(&h, lua_absindex(L, idx), 0, out);
  *nomem = h.nomem;
  return h.nomem ? NULL : bad;
}

int ecsl_plain_fail(lua_State *L, const ecsl_plain_dec *d) {
  return luaL_error(L, "%s: %s (lua values)", d->fn,
                    ecs_strerror(ECS_ERR_CORRUPT));
}

uint64_t ecsl_plain_uint(lua_State *L, ecsl_plain_dec *d, size_t size) {
  uint64_t v = 0;
  if (d->n - d->at < size) ecsl_plain_fail(L, d);
  for (size_t k = 0; k < size; k++) v |= (uint64_t)d->p[d->at + k] << (8 * k);
  d->at += size;
  return v;
}

/* Push the value at d; raises for anything save could not have written. */
static void dec_value(lua_State *L, ecsl_plain_dec *d, int depth) {
  int tag = (int)ecsl_plain_uint(L, d, 1);
  switch (tag) {
    case T_FALSE: case T_TRUE:
      lua_pushboolean(L, tag == T_TRUE);
      return;
    case T_INT:
      lua_pushinteger(L, (lua_Integer)ecsl_plain_uint(L, d, 8));
      return;
    case T_FLOAT: {
      uint64_t bits = ecsl_plain_uint(L, d, 8);
      double v;
      memcpy(&v, &bits, sizeof v);
      lua_pushnumber(L, (lua_Number)v);
      return;
    }
    case T_STRING: {
      size_t len = (size_t)ecsl_plain_uint(L, d, 4);
      if (d->n - d->at < len) ecsl_plain_fail(L, d);
      lua_pushlstring(L, (const char *)d->p + d->at, len);
      d->at += len;
      return;
    }
    case T_ENTITY: {
      uint32_t id = (uint32_t)ecsl_plain_uint(L, d, 4);
      if (id > ECS_ID_MASK) ecsl_plain_fail(L, d);
      push_entity(L, (ecs_entity)id);
      return;
    }
    case T_TABLE: {
      uint32_t pairs = (uint32_t)ecsl_plain_uint(L, d, 4);
      if (depth >= ECSL_PLAIN_DEPTH || pairs > (d->n - d->at) / 2) ecsl_plain_fail(L, d);
      luaL_checkstack(L, 4, "lua value nested too deeply");
      lua_createtable(L, 0, pairs < 64 ? (int)pairs : 64);
      for (uint32_t k = 0; k < pairs; k++) {
        dec_value(L, d, depth + 1);                      /* t, key */
        if (lua_type(L, -1) == LUA_TNUMBER && !lua_isinteger(L, -1) &&
            lua_tonumber(L, -1) != lua_tonumber(L, -1))
          ecsl_plain_fail(L, d);                                /* a NaN key */
        dec_value(L, d, depth + 1);                      /* t, key, value */
        lua_pushvalue(L, -2);
        if (lua_rawget(L, -4) != LUA_TNIL) ecsl_plain_fail(L, d); /* a key twice */
        lua_pop(L, 1);
        lua_rawset(L, -3);
      }
      return;
    }
    default:
      ecsl_plain_fail(L, d);
  }
}

void ecsl_plain_decode(lua_State *L, ecsl_plain_dec *d) {
  dec_value(L, d, 0);
}
