/*
** lua_oom_transform.c -- world.transform and world.names under a failing
** allocator (RELIABILITY R1), after lua_oom_component.c: a Lua state whose
** allocator fails every growing allocation from the Nth on runs a workload
** of transform and names calls (creation of the managers, add, set_parent,
** batch calls, children, destroy_tree, gc, names set/find/clear), for
** N = 1, 2, ... until the workload completes. Each run must end in a Lua error or
** success -- never a crash --, leave every world passing world:check()
** with a normal operation still working, and free every block at
** lua_close. Built by CMake when Lua's library is found (it links Lua,
** unlike the core's tests).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "harness.h"

int luaopen_ecs_core(lua_State *L);

/*
** Lua assumes that shrinking never fails, so only allocations that grow
** can fail: every one from number fail_at on, until disarmed (one failure
** alone would be absorbed: Lua collects and retries a failed allocation).
*/
typedef struct oom_alloc {
  long blocks, grows, fail_at;
} oom_alloc;

static void *oom_allocf(void *ud, void *p, size_t osize, size_t nsize) {
  oom_alloc *a = (oom_alloc *)ud;
  void *np;
  if (nsize == 0) {
    if (p != NULL) {
      a->blocks--;
      free(p);
    }
    return NULL;
  }
  if (p == NULL || nsize > osize) {
    a->grows++;
    if (a->fail_at != 0 && a->grows >= a->fail_at) return NULL;
  }
  np = realloc(p, nsize);
  if (np != NULL && p == NULL) a->blocks++;
  return np;
}

static const char *const workload =
  "local ecs = require('ecs.core')\n"
  "W = ecs.world()\n"
  "local T, N = W.transform, W.names\n"
  "local es = W:create(60)\n"
  "for i, e in ipairs(es) do\n"
  "  T:add(e, { position = { i, 0, 0 }, rotation = { 0, 0, 1, 1 } })\n"
  "  if i > 1 then T:set_parent(e, es[i // 2]) end\n"
  "  N:set(e, 'n' .. (i % 7))\n"
  "end\n"
  "local xs, ys, zs = {}, {}, {}\n"
  "for i = 1, 60 do xs[i], ys[i], zs[i] = i, 1, 2 end\n"
  "T:set_local_positions(es, xs, ys, zs)\n"
  "T:set_local_scales(es, xs, ys, zs)\n"
  "T:set_local_rotations(es, xs, ys, zs, xs)\n"
  "local wx = T:world_positions(es)\n"
  "assert(#wx == 60)\n"
  "local r = W:create() T:add(r, { scale = { 2, 2, 2 } })\n"
  "for c in T:children(es[1]) do T:set_parent(c, r, true) end\n"
  "local m = { T:world_matrix(es[50]) }\n"
  "assert(#m == 16)\n"
  "W:destroy(es[3])\n"
  "T:destroy_tree(es[5])\n"
  "T:remove(es[9])\n"
  "N:clear(es[10])\n"
  "assert(N:find('n1') ~= nil)\n"
  "T:gc(2) N:gc(1) W:update() T:gc() N:gc()\n"
  "for i = 1, 30 do local e = W:create() T:add(e) N:set(e, 'new' .. i) end\n"
  "return 'done'\n";

/* After a run: the world (if made) is consistent and still works. */
static const char *const verify =
  "if W == nil then return true end\n"
  "local ok, bad = W:check()\n"
  "if not ok then error(bad) end\n"
  "local e, f = W:create(), W:create()\n"
  "local T, N = W.transform, W.names\n"
  "T:add(e) T:add(f) T:set_parent(f, e) T:set_local_position(e, 1, 2, 3)\n"
  "assert(select(3, T:world_position(f)) == 3)\n"
  "N:set(e, 'verify') assert(N:find('verify') == e)\n"
  "ok, bad = W:check()\n"
  "if not ok then error(bad) end\n"
  "return true\n";

TEST(Transform_binding_survives_oom_at_every_allocation) {
  int completed = 0, failures = 0;
  for (long n = 1; n < 20000 && !completed; n++) {
    oom_alloc a = {0, 0, 0};
    lua_State *L = lua_newstate(oom_allocf, &a);
    int rc;
    CHECK(L != NULL);
    luaL_openlibs(L);
    luaL_requiref(L, "ecs.core", luaopen_ecs_core, 0);
    lua_pop(L, 1);
    a.fail_at = a.grows + n; /* arm */
    rc = luaL_dostring(L, workload);
    a.fail_at = 0;           /* disarm */
    if (rc == LUA_OK) {
      completed = 1;
    } else {
      const char *msg = lua_tostring(L, -1);
      failures++;
      if (msg == NULL || strstr(msg, "not enough memory") == NULL) {
        fprintf(stderr, "run %ld: unexpected error: %s\n", n, msg ? msg : "?");
        CHECK(0);
      }
    }
    lua_settop(L, 0);
    if (luaL_dostring(L, verify) != LUA_OK) {
      fprintf(stderr, "run %ld: %s\n", n, lua_tostring(L, -1));
      CHECK(0);
    }
    lua_close(L);
    CHECK_EQ_INT(a.blocks, 0);
  }
  printf("workload completed after %d failed runs\n", failures);
  CHECK(completed);
  CHECK(failures > 100);
}

static const test_case cases[] = {
  CASE(Transform_binding_survives_oom_at_every_allocation),
};

TEST_MAIN(cases)
