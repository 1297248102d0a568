/*
** fuzz_lua.c -- libFuzzer target: untrusted strings through the Lua binding
** (RELIABILITY R11), in an embedded Lua state per input.
**
** Byte 0 picks the mode, the rest is split at '\n' into pieces:
**   mode 0  schema: world:component(piece1, { piece2, piece3, ... })
**   mode 1  field names: a fixed component, then C:field(e, p),
**           C:set_field(e, p, 1) and C:add(e, { [p] = 1 }) for each piece
**   mode 2  expressions: q:apply(piece, params) and world:system(name, q,
**           piece) over a fixed query of two components and the transform
**           (a small hierarchy: transform.px .. sz, read-only wx .. wz)
**   mode 3  column specs: for ... in q:columns(pieces...) and
**           q:each_chunk(fn, pieces...) (same)
**   mode 4  migration (byte 0 >= 200): a populated component with an
**           expression system redefined with { migrate = ... } to the
**           pieces as its schema, a piece "old=new" a rename; then the
**           system, reads, columns, and a restore of the old snapshot
**           with { migrate = ... }
** Every call runs under lua_pcall: it must succeed or raise a string error.
** After each call the world must pass world:check() and still create
** entities; after lua_close no block may be left.
** Built with libFuzzer by tools/fuzz.sh and, with any compiler, linked to
** test/fuzz/fuzz_replay.c for the committed corpus test/fuzz/lua/
** (ctest: fuzz_lua_replay).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

int luaopen_ecs_core(lua_State *L);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

/*
** The driver, in Lua: MODE and PIECES are set by the host. The harness
** functions raise (so the host aborts) only when an invariant is broken;
** errors of the calls under test are caught and must be strings.
*/
static const char *const driver =
  "local ecs, MODE, PIECES = ...\n"
  "local W = ecs.world()\n"
  "local function sane(label)\n"
  "  local ok, bad = W:check()\n"
  "  if not ok then error('INVARIANT ' .. label .. ': ' .. tostring(bad), 0) end\n"
  "  local e = W:create()\n"
  "  if not W:alive(e) then error('INVARIANT ' .. label .. ': create', 0) end\n"
  "end\n"
  "local function try(label, f, ...)\n"
  "  local ok, err = pcall(f, ...)\n"
  "  if not ok and type(err) ~= 'string' then\n"
  "    error('INVARIANT ' .. label .. ': non-string error ' .. tostring(err), 0)\n"
  "  end\n"
  "  sane(label)\n"
  "  return ok, err\n"
  "end\n"
  "if MODE == 0 then\n"
  "  local specs = {}\n"
  "  for i = 2, #PIECES do specs[#specs + 1] = PIECES[i] end\n"
  "  local ok, C = try('component', W.component, W, PIECES[1] or '', specs)\n"
  "  if ok then\n"
  "    local e = W:create()\n"
  "    try('add', C.add, C, e)\n"
  "    try('get', C.get, C, e)\n"
  "    for _, f in ipairs(C:fields()) do try('field', C.field, C, e, f:match('^[^:]*')) end\n"
  "    try('remove', C.remove, C, e)\n"
  "    try('again', W.component, W, PIECES[1], specs)\n"
  "  end\n"
  "elseif MODE == 1 then\n"
  "  local C = W:component('C', { 'x:f32', 'y:i8', 's:lua', 'b:bool', 'e:entity' })\n"
  "  local e = W:create()\n"
  "  C:add(e, 1, 2, 'v', true, e)\n"
  "  for _, p in ipairs(PIECES) do\n"
  "    try('field', C.field, C, e, p)\n"
  "    try('set_field', C.set_field, C, e, p, 1)\n"
  "    try('add by name', C.add, C, e, { [p] = 1 })\n"
  "  end\n"
  "elseif MODE == 4 then\n"
  "  local C = W:component('C', { 'x:f32', 'y:i8', 's:lua', 'b:bool', 'e:entity', 'n:f64' })\n"
  "  local es = W:create(6)\n"
  "  for i, e in ipairs(es) do C:add(e, i + 0.5, i, i % 2 == 0 and i or 'v', true, e, i) end\n"
  "  W:destroy(es[6])\n"
  "  local q = W:query(C)\n"
  "  W:system('sx', q, 'C.x = C.x + 1')\n"
  "  local blob = W:snapshot()\n"
  "  local fields, rename = {}, {}\n"
  "  for _, p in ipairs(PIECES) do\n"
  "    local a, b = p:match('^(.-)=(.*)$')\n"
  "    if a then rename[a] = b else fields[#fields + 1] = p end\n"
  "  end\n"
  "  try('redefine', W.component, W, 'C', fields, { migrate = { rename = rename } })\n"
  "  try('update', W.update, W, 0.1)\n"
  "  try('get', function() for _, e in ipairs(es) do if C:has(e) then C:get(e) end end end)\n"
  "  try('columns', function()\n"
  "    for _, f in ipairs(C:fields()) do\n"
  "      pcall(function() for _ in q:columns('C.' .. f:match('^[^:!]*')) do end end)\n"
  "    end\n"
  "  end)\n"
  "  try('restore', W.restore, W, blob, { migrate = { rename = { C = rename } } })\n"
  "  try('update', W.update, W, 0.1)\n"
  "elseif W.query ~= nil then\n"
  "  local P = W:component('Position', { 'x:f32', 'y:f64', 'n:i32' })\n"
  "  local V = W:component('Velocity', { 'dx:f32', 'dy:f32', 'k:u8' })\n"
  "  local T, prev = W.transform, nil\n"
  "  for i = 1, 5 do\n"
  "    local e = W:create() P:add(e, i, -i, i) V:add(e, 1, 2, 3)\n"
  "    T:add(e, { position = { i, 0, 0 } })\n"
  "    if prev and i % 2 == 0 then T:set_parent(e, prev) end\n"
  "    prev = e\n"
  "  end\n"
  "  local q = W:query(P, V, T)\n"
  "  if MODE == 2 then\n"
  "    for i, p in ipairs(PIECES) do\n"
  "      try('apply', q.apply, q, p, { dt = 0.5, k = 2 })\n"
  "      try('system', W.system, W, 'fz' .. i, q, p)\n"
  "    end\n"
  "    try('update', W.update, W, 0.1)\n"
  "  else\n"
  "    try('columns', function()\n"
  "      for n, a in q:columns(table.unpack(PIECES, 1, math.min(#PIECES, 20))) do\n"
  "        if type(a) == 'table' then for i = 1, n do a[i] = a[i] end end\n"
  "      end\n"
  "    end)\n"
  "    try('each_chunk', q.each_chunk, q, function(n, a)\n"
  "      if type(a) == 'table' then for i = 1, n do a[i] = a[i] end end\n"
  "    end, table.unpack(PIECES, 1, math.min(#PIECES, 20)))\n"
  "  end\n"
  "end\n"
  "W:close()\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  count_alloc a = {0};
  lua_State *L;
  size_t start, i, npieces = 0;
  if (size == 0) return 0;
  L = lua_newstate(count_allocf, &a);
  if (L == NULL) abort();
  luaL_openlibs(L);
  luaL_requiref(L, "ecs.core", luaopen_ecs_core, 0); /* ecs */
  if (luaL_loadbuffer(L, driver, strlen(driver), "=driver") != LUA_OK) abort();
  lua_insert(L, -2);                                 /* driver, ecs */
  lua_pushinteger(L, data[0] >= 200 ? 4 : data[0] % 4);
  lua_newtable(L);                                   /* driver, ecs, mode, pieces */
  for (start = i = 1; i <= size; i++) {
    if (i == size || data[i] == '\n') {
      if (npieces < 300) {
        lua_pushlstring(L, (const char *)data + start, i - start);
        lua_rawseti(L, -2, (lua_Integer)++npieces);
      }
      start = i + 1;
    }
  }
  if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
    fprintf(stderr, "fuzz_lua: %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_close(L);
  if (a.blocks != 0) {
    fprintf(stderr, "fuzz_lua: %ld blocks left after lua_close\n", a.blocks);
    abort();
  }
  return 0;
}
