/*
** lua_oom_component.c -- the component binding and the C plugins under a
** failing allocator (RELIABILITY R1): a Lua state whose allocator fails
** the Nth growing allocation runs a workload of world:component, add, set,
** set_field, remove, destroy, gc, update and the plugins, for N = 1, 2, ...
** until the workload completes. Each run must end in a Lua error or
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
  "local P = W:component('P', { 'x:f32', 's:lua', 'e:entity', 'n:i16' })\n"
  "local T = W:component('T')\n"
  "local es = W:create(40)\n"
  "for i, e in ipairs(es) do\n"
  "  P:add(e, i, { i }, e, i)\n"
  "  if i % 2 == 0 then T:add(e) end\n"
  "end\n"
  "for i = 1, 40, 3 do P:set(es[i], { x = 1, s = 'str' .. i }) end\n"
  "for i = 1, 40, 4 do P:set_field(es[i], 's', {}) end\n"
  "for i = 1, 40, 5 do P:remove(es[i]) end\n"
  "W:destroy({ es[2], es[4], es[6], es[8] })\n"
  "P:gc(2) W:update() P:gc() T:gc()\n"
  "for i = 1, 30 do local e = W:create() P:add(e, 0, 'v' .. i) end\n"
  "local PM = require('ecs.pointmass').new(W)\n"
  "for i = 10, 30 do PM:add(es[i], 1, i) end\n"
  "PM:simulate(0.1)\n"
  "local M = require('ecs.mesh').new(W)\n"
  "for i = 10, 30 do M:add(es[i], 1) M:add(es[i], 2) end\n"
  "M:remove(es[10], 1)\n"
  "local Q = W:component('Q', { 'a', 'b:bool' })\n"
  "Q:add(es[12], 1, true)\n"
  "local list = W:components()\n"
  "assert(#list == 3)\n"
  "for e in P:entities() do local _ = P:get(e) end\n"
  "return 'done'\n";

/* After a run: the world (if made) is consistent and still works. */
static const char *const verify =
  "if W == nil then return true end\n"
  "local ok, bad = W:check()\n"
  "if not ok then error(bad) end\n"
  "local e = W:create()\n"
  "for _, C in ipairs(W:components()) do\n"
  "  if #C:fields() == 0 then C:add(e) else C:add(e, nil) end\n"
  "  assert(C:has(e))\n"
  "end\n"
  "ok, bad = W:check()\n"
  "if not ok then error(bad) end\n"
  "return true\n";

TEST(Component_binding_survives_oom_at_every_allocation) {
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
  CASE(Component_binding_survives_oom_at_every_allocation),
};

TEST_MAIN(cases)
