/*
** fuzz_restore.c -- libFuzzer target: untrusted bytes given to the
** snapshot loaders (snapshot.h; Lua's ecs.restore and world:restore).
**
** Byte 0 picks the mode, the rest is the snapshot:
**   bit 0  seal: the last 8 bytes are overwritten with the XXH64 of the
**          bytes before them, so that forged contents get past the
**          checksum and reach the checks behind it (framing, directory,
**          entity table, each manager's load, the binding's lua values)
**   bit 1  the Lua binding instead of the core alone
**   bit 2  (core) no journal open across the load
** Core: a fixed world (transform, names, a component of every field type,
** a tag) loads the bytes. On success the world must pass its check and
** round-trip (its snapshot loaded into a world with the same managers
** saves the same bytes); on failure it must be exactly as before (its
** snapshot, check and memory), and the reader where it was. The directory
** reader walks every manager and field of bytes ecs_snapshot_open accepts.
** With a journal open across the load (bit 2 clear), a load that succeeds is
** recorded (its delta brings a copy of the world before it to the same
** state, its undo takes the world back), one that fails records nothing.
** Lua: ecs.restore(bytes), and world:restore(bytes) on a world with
** components (lua fields too), the built-ins and the point-mass and mesh
** plugins. Either succeeds -- the world then passes its check and its own
** snapshot restores -- or raises a string, the target world unchanged
** (the same snapshot bytes); after lua_close no block may be left.
** Built with libFuzzer by tools/fuzz.sh and, with any compiler, linked to
** test/fuzz/fuzz_replay.c for the committed corpus test/fuzz/restore/ (ctest:
** fuzz_restore_replay; test/fuzz/restore_seeds.lua writes its seeds).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "component.h"
#include "ecs.h"
#include "journal.h"
#include "names.h"
#include "snapshot.h"
#include "transform.h"

int luaopen_ecs_core(lua_State *L);
int luaopen_ecs_pointmass(lua_State *L);
int luaopen_ecs_mesh(lua_State *L);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ENSURE(c)                                                          \
  do {                                                                     \
    if (!(c)) {                                                            \
      fprintf(stderr, "fuzz_restore: %s:%d: %s\n", __FILE__, __LINE__, #c); \
      abort();                                                             \
    }                                                                      \
  } while (0)

/* ------------------------------------------------------------------------
** Core
** --------------------------------------------------------------------- */

typedef struct membuf {
  unsigned char *p;
  size_t n, cap;
} membuf;

static ecs_err membuf_write(void *ud, const void *data, size_t size) {
  membuf *b = (membuf *)ud;
  if (b->n + size > b->cap) {
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < b->n + size) ncap *= 2;
    b->p = (unsigned char *)realloc(b->p, ncap);
    ENSURE(b->p != NULL);
    b->cap = ncap;
  }
  if (size > 0) memcpy(b->p + b->n, data, size);
  b->n += size;
  return ECS_ERR_OK;
}

static void snap(const ecs_world *w, membuf *b) {
  ecs_writer out;
  out.write = membuf_write;
  out.ud = b;
  b->n = 0;
  ENSURE(ecs_world_save(w, &out) == ECS_ERR_OK);
}

static const ecs_field_def all_fields[] = {
  {"a", ECS_F32}, {"b", ECS_F64}, {"c", ECS_I8}, {"d", ECS_I16},
  {"e", ECS_I32}, {"f", ECS_I64}, {"g", ECS_U8}, {"h", ECS_U16},
  {"i", ECS_U32}, {"j", ECS_BOOL}, {"k", ECS_ENTITY}, {"l", ECS_LUA}
};

/* The fixed world: its managers, and with fill some records. */
static ecs_world *core_world(int fill) {
  ecs_world *w = ecs_world_new(NULL, NULL);
  ecs_transform *t;
  ecs_names *n;
  ecs_component *all, *tag;
  ecs_entity e[12];
  ENSURE(w != NULL);
  ENSURE(ecs_transform_new(w, &t) == ECS_ERR_OK);
  ENSURE(ecs_names_new(w, &n) == ECS_ERR_OK);
  ENSURE(ecs_component_new(w, "All", all_fields, 12, &all) == ECS_ERR_OK);
  ENSURE(ecs_component_new(w, "Tag", NULL, 0, &tag) == ECS_ERR_OK);
  if (!fill) return w;
  ENSURE(ecs_create_n(w, e, 12) == ECS_ERR_OK);
  for (int k = 0; k < 12; k++) {
    ecs_instance i;
    ENSURE(ecs_component_add(w, all, e[k], &i, NULL) == ECS_ERR_OK);
    ((float *)ecs_component_column(all, 0))[i] = (float)k;
    ((ecs_entity *)ecs_component_column(all, 10))[i] = e[(k + 1) % 12];
    if (k % 2) ENSURE(ecs_component_add(w, tag, e[k], NULL, NULL) == ECS_ERR_OK);
    ENSURE(ecs_transform_add(t, e[k], NULL) == ECS_ERR_OK);
    if (k > 0) ENSURE(ecs_transform_set_parent(t, e[k], e[k - 1], false) == ECS_ERR_OK);
  }
  ENSURE(ecs_names_set(n, e[3], "three", 5) == ECS_ERR_OK);
  ecs_destroy(w, e[5]);
  ecs_destroy(w, e[8]);
  return w;
}

/* Every lua reference is known to this host (it only counts them). */
static bool any_ref(void *ud, uint32_t ref, uint32_t *out) {
  ++*(size_t *)ud;
  *out = ref;
  return true;
}

/* The journal w had open across a load that succeeded: its delta brings
** a world equal to w before the load (another core_world(1)) to w's
** state, and its undo takes w back. */
static void journal_across(ecs_world *w, ecs_journal *j, uint64_t h0) {
  ecs_world *r = core_world(1);
  const void *p;
  size_t n;
  ecs_delta d;
  uint64_t hw, hr;
  ENSURE(!ecs_journal_lost(j, NULL));
  ENSURE(ecs_journal_delta(w, j, NULL, &p, &n, NULL) == ECS_ERR_OK);
  /* the deltas of a world that disables entities need the tag (component.h) */
  if (ecs_world_disabled(w) != NULL) ENSURE(ecs_world_disabled_ready(r) == ECS_ERR_OK);
  ENSURE(ecs_delta_open(r, &d, p, n) == ECS_ERR_OK);
  ENSURE(ecs_delta_apply(r, &d, NULL, NULL, NULL) == ECS_ERR_OK);
  ENSURE(ecs_world_check(r) == NULL);
  ENSURE(ecs_world_state_hash(w, NULL, &hw, NULL) == ECS_ERR_OK);
  ENSURE(ecs_world_state_hash(r, NULL, &hr, NULL) == ECS_ERR_OK);
  ENSURE(hw == hr);
  ENSURE(ecs_journal_undo(w, j) == ECS_ERR_OK);
  ENSURE(ecs_world_check(w) == NULL);
  ENSURE(ecs_world_state_hash(w, NULL, &hw, NULL) == ECS_ERR_OK);
  ENSURE(hw == h0);
  ecs_world_free(r);
}

static void core(const uint8_t *p, size_t n, bool journal) {
  ecs_world *w = core_world(1), *w2;
  membuf before = {0}, after = {0}, again = {0};
  ecs_snapshot s;
  ecs_snapshot_opts o;
  ecs_reader in;
  ecs_journal *j = NULL;
  size_t mem, refs = 0;
  uint32_t failed;
  uint64_t h0 = 0;
  ecs_err err;
  if (journal) { /* it records the load: its delta and undo are checked */
    ENSURE(ecs_journal_open(w, NULL, &j, NULL) == ECS_ERR_OK);
    ENSURE(ecs_world_state_hash(w, NULL, &h0, NULL) == ECS_ERR_OK);
  }
  mem = ecs_world_memory(w, NULL);
  snap(w, &before);
  if (ecs_snapshot_open(&s, p, n) == ECS_ERR_OK) { /* the directory reader */
    for (uint32_t i = 0; i < s.manager_count; i++) {
      ecs_snapshot_manager m;
      ENSURE(ecs_snapshot_manager_at(&s, i, &m) == ECS_ERR_OK);
      ENSURE(m.payload >= p && m.payload + m.payload_size <= p + n);
      for (uint32_t k = 0; k < m.nfields; k++) {
        ecs_type t;
        const char *name;
        size_t len;
        ecs_snapshot_field(&m, k, &t, &name, &len);
        ENSURE((int)t < (int)ECS_TYPE__COUNT && len > 0);
      }
    }
  }
  memset(&o, 0, sizeof o);
  o.map_ref = any_ref;
  o.ud = &refs;
  in.data = p;
  in.size = n;
  in.pos = 0;
  err = ecs_world_load_opts(w, &in, &o, &failed);
  ENSURE(ecs_world_check(w) == NULL);
  if (err == ECS_ERR_OK) {
    uint32_t drop[64];
    ENSURE(in.pos == n);
    while (ecs_drain_refs(w, drop, 64) > 0) {}
    snap(w, &after);
    w2 = core_world(0);
    in.data = after.p;
    in.size = after.n;
    in.pos = 0;
    ENSURE(ecs_world_load(w2, &in) == ECS_ERR_OK);
    ENSURE(ecs_world_check(w2) == NULL);
    snap(w2, &again);
    ENSURE(again.n == after.n && memcmp(again.p, after.p, after.n) == 0);
    while (ecs_drain_refs(w2, drop, 64) > 0) {}
    ecs_world_free(w2);
    if (j != NULL) journal_across(w, j, h0);
  } else {
    ENSURE(in.pos == 0);
    snap(w, &after);
    ENSURE(after.n == before.n && memcmp(after.p, before.p, before.n) == 0);
    ENSURE(ecs_world_memory(w, NULL) >= mem); /* a drop list may have grown */
    ENSURE(j == NULL || ecs_journal_pending(j) == 0); /* nothing recorded */
  }
  if (j != NULL) ecs_journal_close(w, j);
  ecs_world_free(w);
  free(before.p);
  free(after.p);
  free(again.p);
}

/* ------------------------------------------------------------------------
** Lua
** --------------------------------------------------------------------- */

typedef struct count_alloc {
  long blocks;
} count_alloc;

static void *count_allocf(void *ud, void *p, size_t osize, size_t nsize) {
  count_alloc *a = (count_alloc *)ud;
  void *np;
  (void)osize;
  if (nsize == 0) {
    if (p != NULL) {
      a->blocks--;
      free(p);
    }
    return NULL;
  }
  np = realloc(p, nsize);
  if (np != NULL && p == NULL) a->blocks++;
  return np;
}

static const char *const driver =
  "local ecs, BLOB = ...\n"
  "local pm, mesh = require('ecs.pointmass'), require('ecs.mesh')\n"
  "local function sane(w, label)\n"
  "  local ok, bad = w:check()\n"
  "  if not ok then error('INVARIANT ' .. label .. ': ' .. tostring(bad), 0) end\n"
  "end\n"
  "local ok, w2 = pcall(ecs.restore, BLOB)\n"
  "if ok then\n"
  "  sane(w2, 'ecs.restore')\n"
  "  local s = w2:snapshot()\n"
  "  local w3 = ecs.restore(s)\n"
  "  sane(w3, 'again')\n"
  "  w3:close(); w2:close()\n"
  "elseif type(w2) ~= 'string' then\n"
  "  error('INVARIANT non-string error ' .. tostring(w2), 0)\n"
  "end\n"
  "local W = ecs.world()\n"
  "local A = W:component('All', { 'a:f32', 'b:f64', 'c:i8', 'd:i16', 'e:i32', 'f:i64',\n"
  "  'g:u8', 'h:u16', 'i:u32', 'j:bool', 'k:entity', 'l:lua' })\n"
  "local B = W:component('Brain', { 'script:lua', 'n:i32' })\n"
  "local PM, M = pm.new(W), mesh.new(W)\n"
  "local es = W:create(8)\n"
  "for i, e in ipairs(es) do\n"
  "  A:add(e, i, -i, i, i, i, i, i, i, i, i % 2 == 0, es[1], { i, 'x' })\n"
  "  B:add(e, i % 3 == 0 and 'go' or nil, i)\n"
  "  PM:add(e, i, 1, 2, 3)\n"
  "  M:add(e, i * 10)\n"
  "  W.transform:add(e)\n"
  "end\n"
  "W.names:set(es[2], 'two')\n"
  "W:destroy(es[4])\n"
  "local before = W:snapshot()\n"
  "local rok, err = pcall(W.restore, W, BLOB)\n"
  "sane(W, 'world:restore')\n"
  "if rok then\n"
  "  local s = W:snapshot()\n"
  "  W:restore(s)\n"
  "  sane(W, 'again')\n"
  "else\n"
  "  if type(err) ~= 'string' then error('INVARIANT non-string error', 0) end\n"
  "  if W:snapshot() ~= before then error('INVARIANT a refused restore changed the world', 0) end\n"
  "end\n"
  "W:close()\n";

static void lua(const uint8_t *p, size_t n) {
  count_alloc a = {0};
  lua_State *L = lua_newstate(count_allocf, &a);
  ENSURE(L != NULL);
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_ecs_pointmass);
  lua_setfield(L, -2, "ecs.pointmass");
  lua_pushcfunction(L, luaopen_ecs_mesh);
  lua_setfield(L, -2, "ecs.mesh");
  lua_pop(L, 1);
  luaL_requiref(L, "ecs.core", luaopen_ecs_core, 0); /* ecs */
  ENSURE(luaL_loadbuffer(L, driver, strlen(driver), "=driver") == LUA_OK);
  lua_insert(L, -2);                                 /* driver, ecs */
  lua_pushlstring(L, (const char *)p, n);
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
    fprintf(stderr, "fuzz_restore: %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_close(L);
  if (a.blocks != 0) {
    fprintf(stderr, "fuzz_restore: %ld blocks left after lua_close\n", a.blocks);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *p;
  size_t n;
  if (size == 0) return 0;
  n = size - 1;
  p = (uint8_t *)malloc(n + 1); /* +1: never malloc(0) */
  ENSURE(p != NULL);
  if (n > 0) memcpy(p, data + 1, n);
  if ((data[0] & 1) && n >= 8) {
    uint64_t h = ecs_snapshot_hash(p, n - 8);
    for (int k = 0; k < 8; k++) p[n - 8 + (size_t)k] = (uint8_t)(h >> (8 * k));
  }
  if (data[0] & 2) lua(p, n);
  else core(p, n, (data[0] & 4) == 0);
  free(p);
  return 0;
}
