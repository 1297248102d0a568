/*
** plugin_hooks_host.c -- the manager hooks and listeners of the C plugins
** (plugins/pointmass.c, mesh.c, linked in and preloaded). The plugins are
** made and filled from Lua, as users do; the hooks (has, clear, stats,
** schema, save, load), which no Lua method reaches, are called from here
** through the class the world holds, the way snapshots and observers
** drive managers.
**
** load must be all or nothing: every prefix of a good stream, every
** single-byte corruption of it and every out-of-memory point is tried
** against a manager holding a different state, which must come out
** byte-for-byte the same (saved again), with the same stats, the same
** world memory and a world that passes ecs_world_check; a corruption
** that load accepts must load back exactly what it read.
**
** Listeners: a C listener forwards each event to a Lua function ON,
** which records what it sees (and may change the world or return an
** error code), so the order and the state at each event are checked in
** Lua against what the plugin documents.
*/
#include <math.h>
#include <stdint.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "../support/harness.h"
#include "ecs.h"
#include "ecs_lua.h"
#include "../support/membuf.h" /* membuf: a growing buffer behind an ecs_writer */

int luaopen_ecs_core(lua_State *L);
int luaopen_ecs_pointmass(lua_State *L);
int luaopen_ecs_mesh(lua_State *L);

/* ------------------------------------------------------------------------
** The host: a Lua state on a counting allocator, ecs.core and the plugins
** ------------------------------------------------------------------- */
typedef struct host {
  lua_State *L;
  test_alloc a;
  ecs_world *w;
} host;

/* The world W of every script, filled by SETUP: point masses and meshes
** on 40 entities, some destroyed (dead records that save leaves out and
** load drops), chains shuffled by swap-removes. SNAP holds what each
** live entity had then, for comparisons after loads. */
static const char *const SETUP =
  "local core = require('ecs.core')\n"
  "W = core.world()\n"
  "PM = require('ecs.pointmass').new(W)\n"
  "M = require('ecs.mesh').new(W)\n"
  "E = W:create(40)\n"
  "for i = 1, 40 do\n"
  "  if i % 3 ~= 0 then\n"
  "    PM:add(E[i], i, i, -i, 0.5 * i, 1, 2, 3)\n"
  "    PM:set_acceleration(E[i], 0, -9.75, i)\n"
  "  end\n"
  "  for k = 1, i % 4 do M:add(E[i], i * 10 + k) end\n"
  "end\n"
  "PM:simulate(0.25)\n"
  "M:remove(E[6], 61); M:remove(E[7], 72)\n"
  "W:destroy({ E[1], E[5], E[10], E[11] })\n"
  "function snapshot()\n"
  "  local s = {}\n"
  "  for i = 1, 40 do\n"
  "    local e = E[i]\n"
  "    s[i] = { has = PM:has(e), mass = PM:mass(e), p = { PM:position(e) },\n"
  "             v = { PM:velocity(e) }, a = { PM:acceleration(e) },\n"
  "             meshes = M:meshes(e) }\n"
  "  end\n"
  "  return s\n"
  "end\n"
  "function same(a, b, path)\n"
  "  if type(a) ~= 'table' or type(b) ~= 'table' then\n"
  "    assert(a == b, path .. ': ' .. tostring(a) .. ' vs ' .. tostring(b))\n"
  "    return\n"
  "  end\n"
  "  for k, v in pairs(a) do same(v, b[k], path .. '.' .. tostring(k)) end\n"
  "  for k, v in pairs(b) do same(a[k], v, path .. '.' .. tostring(k)) end\n"
  "end\n"
  "SNAP = snapshot()\n"
  "assert(W:check())\n";

static bool run(host *h, const char *code) {
  if (luaL_dostring(h->L, code) == LUA_OK) return true;
  fprintf(stderr, "lua: %s\n", lua_tostring(h->L, -1));
  lua_pop(h->L, 1);
  return false;
}

static bool host_open(host *h) {
  memset(h, 0, sizeof *h);
  h->L = lua_newstate(test_allocf, &h->a);
  if (h->L == NULL) return false;
  luaL_openlibs(h->L);
  luaL_requiref(h->L, "ecs.core", luaopen_ecs_core, 0);
  lua_pop(h->L, 1);
  luaL_getsubtable(h->L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(h->L, luaopen_ecs_pointmass);
  lua_setfield(h->L, -2, "ecs.pointmass");
  lua_pushcfunction(h->L, luaopen_ecs_mesh);
  lua_setfield(h->L, -2, "ecs.mesh");
  lua_pop(h->L, 1);
  if (!run(h, SETUP)) return false;
  lua_getglobal(h->L, "W");
  h->w = ecs_lua_check_world(h->L, -1);
  lua_pop(h->L, 1);
  return true;
}

/* Close the world from Lua, then the state: every block must be back. */
static bool host_close(host *h) {
  bool ok = run(h, "assert(W:check()); W:close()");
  lua_close(h->L);
  return ok && h->a.blocks == 0;
}

static void *manager(host *h, const char *name, const ecs_manager_class **cls) {
  return ecs_manager_find(h->w, name, cls);
}

static ecs_err save(host *h, const char *name, membuf *out) {
  const ecs_manager_class *cls;
  void *self = manager(h, name, &cls);
  ecs_writer wr;
  wr.write = membuf_write;
  wr.ud = out;
  out->n = 0;
  return cls->save(h->w, self, &wr);
}

static ecs_err load(host *h, const char *name, const unsigned char *p,
                    size_t n, size_t *pos) {
  const ecs_manager_class *cls;
  void *self = manager(h, name, &cls);
  ecs_reader rd;
  ecs_err err;
  rd.data = p;
  rd.size = n;
  rd.pos = 0;
  err = cls->load(h->w, self, &rd);
  if (pos != NULL) *pos = rd.pos;
  return err;
}

static ecs_manager_stats stats(host *h, const char *name) {
  const ecs_manager_class *cls;
  void *self = manager(h, name, &cls);
  ecs_manager_stats s;
  memset(&s, 0, sizeof s);
  cls->stats(h->w, self, &s);
  return s;
}

static bool stats_same(ecs_manager_stats a, ecs_manager_stats b) {
  return a.records == b.records && a.live == b.live && a.bytes == b.bytes;
}

/* The live entity E[i] of the script. */
static ecs_entity entity(host *h, int i) {
  ecs_entity e;
  lua_getglobal(h->L, "E");
  lua_rawgeti(h->L, -1, i);
  e = ecs_lua_check_entity(h->L, -1);
  lua_pop(h->L, 2);
  return e;
}

/*
** The manager named must be unchanged by a load of data that fails: the
** same saved bytes, stats and world memory as `before`, `st`, `mem`, and
** a consistent world. @return NULL or what differs.
*/
static const char *unchanged(host *h, const char *name, const membuf *before,
                             ecs_manager_stats st, size_t mem) {
  membuf now = {0};
  const char *bad = NULL;
  if (save(h, name, &now) != ECS_ERR_OK) bad = "save failed";
  else if (!membuf_same(&now, before)) bad = "saved bytes differ";
  else if (!stats_same(stats(h, name), st)) bad = "stats differ";
  else if (ecs_world_memory(h->w, NULL) != mem) bad = "world memory differs";
  else if (ecs_world_check(h->w) != NULL) bad = ecs_world_check(h->w);
  membuf_free(&now);
  return bad;
}

/*
** Every prefix of good, every byte of good xor-ed with 0x01, 0x80 and
** 0xff, and every out-of-memory point of a load of good, against the
** manager's present state (which differs from good's). Failing loads
** must change nothing; accepted corruptions must save back as read (then
** the state is put back). @return NULL or a text naming the first
** violation (details on stderr).
*/
static const char *sweep(host *h, const char *name, const membuf *good,
                         size_t *accepted, size_t *refused) {
  static const unsigned char flips[] = {0x01, 0x80, 0xff};
  membuf before = {0}, copy = {0}, again = {0};
  ecs_manager_stats st = stats(h, name);
  size_t mem = ecs_world_memory(h->w, NULL), pos;
  const char *bad = NULL;
  ecs_err err;
  *accepted = *refused = 0;
  if (save(h, name, &before) != ECS_ERR_OK) return "save failed";
  if (membuf_same(&before, good)) bad = "the sweep needs a state that differs";
  /* truncated: every prefix is refused, the reader untouched */
  for (size_t len = 0; bad == NULL && len < good->n; len++) {
    err = load(h, name, good->p, len, &pos);
    if (err != ECS_ERR_CORRUPT || pos != 0) {
      fprintf(stderr, "%s: prefix of %zu bytes: err %d pos %zu\n", name, len,
              (int)err, pos);
      bad = "a truncated stream was not refused as corrupt";
    } else if ((bad = unchanged(h, name, &before, st, mem)) != NULL) {
      fprintf(stderr, "%s: prefix of %zu bytes\n", name, len);
    }
  }
  /* corrupted: one byte at a time */
  for (size_t i = 0; bad == NULL && i < good->n; i++) {
    for (size_t f = 0; bad == NULL && f < sizeof flips; f++) {
      copy.n = 0;
      membuf_write(&copy, good->p, good->n);
      copy.p[i] ^= flips[f];
      err = load(h, name, copy.p, copy.n, &pos);
      if (err == ECS_ERR_OK) {
        ++*accepted;
        /* it holds what it read: its part of the stream (a smaller count
        ** leaves bytes for whatever follows), saved back byte for byte */
        copy.n = pos;
        if (pos == 0 || save(h, name, &again) != ECS_ERR_OK ||
            !membuf_same(&again, &copy))
          bad = "an accepted stream does not save back as read";
        else if (ecs_world_check(h->w) != NULL)
          bad = ecs_world_check(h->w);
        else if (load(h, name, before.p, before.n, NULL) != ECS_ERR_OK)
          bad = "the state before could not be loaded back";
        else {
          st = stats(h, name); /* dead records are gone now */
          mem = ecs_world_memory(h->w, NULL);
          bad = unchanged(h, name, &before, st, mem);
        }
      } else {
        ++*refused;
        if (err != ECS_ERR_CORRUPT || pos != 0)
          bad = "a corrupt stream was refused with another error";
        else
          bad = unchanged(h, name, &before, st, mem);
      }
      if (bad != NULL)
        fprintf(stderr, "%s: byte %zu ^ 0x%02x: err %d\n", name, i,
                flips[f], (int)err);
    }
  }
  /* out of memory at each growth in turn, until the load completes */
  for (long k = 1; bad == NULL; k++) {
    h->a.fail_at = h->a.calls + k;
    err = load(h, name, good->p, good->n, &pos);
    h->a.fail_at = 0;
    if (err == ECS_ERR_OK) {
      if (k == 1) bad = "load allocated nothing";
      else if (save(h, name, &again) != ECS_ERR_OK || !membuf_same(&again, good))
        bad = "the load after the failures does not hold what it read";
      break;
    }
    if (err != ECS_ERR_NOMEM || pos != 0) bad = "out of memory gave another error";
    else bad = unchanged(h, name, &before, st, mem);
    if (bad != NULL) fprintf(stderr, "%s: failure at growth %ld\n", name, k);
  }
  membuf_free(&before);
  membuf_free(&copy);
  membuf_free(&again);
  return bad;
}

/* A stream in which the u32 at byte offset `at` is v (good otherwise). */
static ecs_err load_with(host *h, const char *name, const membuf *good,
                         size_t at, uint32_t v) {
  membuf copy = {0};
  ecs_err err;
  membuf_write(&copy, good->p, good->n);
  memcpy(copy.p + at, &v, sizeof v);
  err = load(h, name, copy.p, copy.n, NULL);
  membuf_free(&copy);
  return err;
}

static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* ------------------------------------------------------------------------
** pointmass
** --------------------------------------------------------------------- */

/* Saved record k of pointmass: entity at PM_AT(k), then ten f32 fields */
#define PM_REC 44u
#define PM_AT(k) (4u + (k) * PM_REC)

TEST(Pointmass_hooks_has_stats_schema_clear) {
  host h;
  const ecs_manager_class *cls;
  void *self;
  ecs_manager_stats st;
  ecs_field_def f[4];
  size_t mem;
  CHECK(host_open(&h));
  self = manager(&h, "pointmass", &cls);
  CHECK(self != NULL);
  CHECK(cls->has && cls->clear && cls->stats && cls->schema && cls->save &&
        cls->load);
  CHECK(cls->has(h.w, self, entity(&h, 2)));
  CHECK(!cls->has(h.w, self, entity(&h, 3)));  /* never had one */
  CHECK(!cls->has(h.w, self, entity(&h, 1)));  /* dead */
  CHECK(!cls->has(h.w, self, ECS_NULL));
  /* 27 of the 40 got one (i % 3 ~= 0); E1, E5, E10, E11 died since */
  st = stats(&h, "pointmass");
  CHECK_EQ_INT(st.records, 27);
  CHECK_EQ_INT(st.live, 23);
  CHECK(st.bytes > 27 * 44);
  /* schema: ten f32 fields; only max are written */
  memset(f, 0, sizeof f);
  f[2].name = "untouched";
  CHECK_EQ_INT(cls->schema(h.w, self, f, 2), 10);
  CHECK(strcmp(f[0].name, "mass") == 0 && f[0].type == ECS_F32);
  CHECK(strcmp(f[1].name, "x") == 0 && f[1].type == ECS_F32);
  CHECK(strcmp(f[2].name, "untouched") == 0);
  CHECK_EQ_INT(cls->schema(h.w, self, NULL, 0), 10);
  /* clear: no record, and its memory back to the world, byte for byte
  ** what stats reported */
  mem = ecs_world_memory(h.w, NULL);
  cls->clear(h.w, self);
  CHECK(!cls->has(h.w, self, entity(&h, 2)));
  CHECK_EQ_INT(stats(&h, "pointmass").records, 0);
  CHECK_EQ_INT(mem - ecs_world_memory(h.w, NULL),
               st.bytes - stats(&h, "pointmass").bytes);
  CHECK_WORLD(h.w);
  CHECK(run(&h, "assert(PM:count() == 0 and not PM:has(E[2]))\n"
                "PM:add(E[2], 1); assert(PM:count() == 1)"));
  CHECK_WORLD(h.w);
  CHECK(host_close(&h));
}

TEST(Pointmass_save_load_round_trip) {
  host h;
  membuf a = {0}, b = {0}, fail = {0};
  size_t pos;
  CHECK(host_open(&h));
  CHECK_EQ_INT(save(&h, "pointmass", &a), ECS_ERR_OK);
  CHECK_EQ_INT(a.n, 4 + 23 * PM_REC); /* live records only */
  /* an entity of the stream destroyed since: refused as a whole */
  CHECK(run(&h, "W:destroy(E[7])"));
  CHECK_EQ_INT(load(&h, "pointmass", a.p, a.n, &pos), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(pos, 0);
  CHECK(run(&h, "assert(PM:has(E[2]) and PM:count() == 22)"));
  CHECK_WORLD(h.w);
  CHECK(host_close(&h));
  /* every entity of the stream alive: change a value, remove a record,
  ** add one, overwrite one, then load the stream back over it */
  CHECK(host_open(&h));
  CHECK_EQ_INT(save(&h, "pointmass", &a), ECS_ERR_OK);
  CHECK(run(&h, "PM:set_position(E[2], 100, 100, 100); PM:remove(E[4])\n"
                "PM:add(E[3], 5); PM:add(E[40], 7)"));
  CHECK_EQ_INT(save(&h, "pointmass", &b), ECS_ERR_OK);
  CHECK(!membuf_same(&a, &b));
  /* trailing bytes are the next manager's: load stops after its own */
  membuf_write(&a, "junk", 4);
  CHECK_EQ_INT(load(&h, "pointmass", a.p, a.n, &pos), ECS_ERR_OK);
  CHECK_EQ_INT(pos, a.n - 4);
  a.n -= 4;
  CHECK_EQ_INT(save(&h, "pointmass", &b), ECS_ERR_OK);
  CHECK(membuf_same(&a, &b));
  CHECK_EQ_INT(stats(&h, "pointmass").records, 23); /* dead ones dropped */
  CHECK_EQ_INT(stats(&h, "pointmass").live, 23);
  CHECK(run(&h, "same(SNAP, snapshot(), 'snap')"));
  CHECK_WORLD(h.w);
  /* into a cleared manager, the same */
  {
    const ecs_manager_class *cls;
    void *self = manager(&h, "pointmass", &cls);
    cls->clear(h.w, self);
  }
  CHECK_EQ_INT(load(&h, "pointmass", a.p, a.n, NULL), ECS_ERR_OK);
  CHECK(run(&h, "same(SNAP, snapshot(), 'snap')"));
  /* an empty manager saves 4 bytes, which load back into nothing */
  CHECK(run(&h, "for i = 1, 40 do PM:remove(E[i]) end"));
  CHECK_EQ_INT(save(&h, "pointmass", &b), ECS_ERR_OK);
  CHECK_EQ_INT(b.n, 4);
  CHECK_EQ_INT(load(&h, "pointmass", a.p, a.n, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(load(&h, "pointmass", b.p, b.n, NULL), ECS_ERR_OK);
  CHECK_EQ_INT(stats(&h, "pointmass").records, 0);
  CHECK(run(&h, "assert(PM:count() == 0)"));
  /* the writer's error stops save and is returned */
  CHECK_EQ_INT(load(&h, "pointmass", a.p, a.n, NULL), ECS_ERR_OK);
  fail.limit = 100; /* a full disk: ECS_ERR_NOMEM */
  CHECK_EQ_INT(save(&h, "pointmass", &fail), ECS_ERR_NOMEM);
  CHECK_WORLD(h.w);
  membuf_free(&a);
  membuf_free(&b);
  membuf_free(&fail);
  CHECK(host_close(&h));
}

TEST(Pointmass_load_refuses_bad_data_and_out_of_memory_unchanged) {
  host h;
  membuf good = {0};
  size_t accepted, refused;
  const char *bad;
  ecs_entity ahead;
  CHECK(host_open(&h));
  /* E[2]'s index with a generation ahead of it: never alive */
  ahead = ecs_make_entity(ecs_entity_index(entity(&h, 2)),
                          ecs_entity_generation(entity(&h, 2)) + 1u);
  CHECK_EQ_INT(save(&h, "pointmass", &good), ECS_ERR_OK);
  CHECK(run(&h, "PM:set_position(E[2], 100, 100, 100); PM:remove(E[4])\n"
                "PM:add(E[3], 5); PM:add(E[40], 7)"));
  /* what load must refuse, one mistake each */
  {
    uint32_t e0, e1;
    memcpy(&e0, good.p + PM_AT(0), 4);
    memcpy(&e1, good.p + PM_AT(1), 4);
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, 0, 24), ECS_ERR_CORRUPT);
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, 0, UINT32_MAX),
                 ECS_ERR_CORRUPT); /* refused before allocating */
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1), e0),
                 ECS_ERR_CORRUPT); /* a repeat */
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1), ahead),
                 ECS_ERR_CORRUPT); /* a forged handle */
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1), entity(&h, 1)),
                 ECS_ERR_CORRUPT); /* a destroyed entity's */
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1), ECS_NULL),
                 ECS_ERR_CORRUPT);
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1),
                           ecs_mark_purged(e1)),
                 ECS_ERR_CORRUPT); /* a purged record's handle */
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1) + 4,
                           float_bits(0.0f)),
                 ECS_ERR_CORRUPT); /* mass 0 */
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1) + 4,
                           float_bits(-1.0f)),
                 ECS_ERR_CORRUPT);
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1) + 4,
                           float_bits(INFINITY)),
                 ECS_ERR_CORRUPT);
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1) + 4,
                           float_bits(NAN)),
                 ECS_ERR_CORRUPT);
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1) + 4 + 7 * 4,
                           float_bits(-INFINITY)),
                 ECS_ERR_CORRUPT); /* ax */
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(2) + 4 + 9 * 4,
                           float_bits(NAN)),
                 ECS_ERR_CORRUPT); /* az */
    CHECK_WORLD(h.w);
    /* positions and velocities may overflow in simulate: taken as read */
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1) + 8,
                           float_bits(INFINITY)),
                 ECS_ERR_OK);
    CHECK_EQ_INT(load_with(&h, "pointmass", &good, PM_AT(1) + 4 + 5 * 4,
                           float_bits(NAN)),
                 ECS_ERR_OK);
    CHECK_WORLD(h.w);
    CHECK(run(&h, "PM:set_position(E[2], 100, 100, 100); PM:remove(E[4])\n"
                  "PM:add(E[3], 5); PM:add(E[40], 7)"));
  }
  bad = sweep(&h, "pointmass", &good, &accepted, &refused);
  if (bad != NULL) fprintf(stderr, "pointmass sweep: %s\n", bad);
  CHECK(bad == NULL);
  /* both outcomes happened: values change, entities and masses refuse */
  CHECK(accepted > 0 && refused > 0);
  CHECK(run(&h, "same(SNAP, snapshot(), 'snap')"));
  CHECK_WORLD(h.w);
  membuf_free(&good);
  CHECK(host_close(&h));
}

/* ------------------------------------------------------------------------
** mesh
** --------------------------------------------------------------------- */

TEST(Mesh_hooks_has_stats_schema_clear) {
  host h;
  const ecs_manager_class *cls;
  void *self;
  ecs_manager_stats st;
  ecs_field_def f[2];
  size_t mem;
  CHECK(host_open(&h));
  self = manager(&h, "mesh", &cls);
  CHECK(self != NULL);
  CHECK(cls->has && cls->clear && cls->stats && cls->schema && cls->save &&
        cls->load);
  CHECK(cls->has(h.w, self, entity(&h, 2)));
  CHECK(!cls->has(h.w, self, entity(&h, 4))); /* 4 % 4 == 0: none */
  CHECK(!cls->has(h.w, self, entity(&h, 1))); /* dead */
  /* sum of i % 4 over 1..40 is 60, less the two removed; dead: E1 (1),
  ** E5 (1), E10 (2), E11 (3) */
  st = stats(&h, "mesh");
  CHECK_EQ_INT(st.records, 58);
  CHECK_EQ_INT(st.live, 51);
  CHECK(st.bytes > 58 * 12);
  CHECK_EQ_INT(cls->schema(h.w, self, f, 2), 1);
  CHECK(strcmp(f[0].name, "mesh") == 0 && f[0].type == ECS_U32);
  mem = ecs_world_memory(h.w, NULL);
  cls->clear(h.w, self);
  CHECK(!cls->has(h.w, self, entity(&h, 2)));
  CHECK_EQ_INT(stats(&h, "mesh").records, 0);
  CHECK_EQ_INT(mem - ecs_world_memory(h.w, NULL),
               st.bytes - stats(&h, "mesh").bytes);
  CHECK_WORLD(h.w);
  CHECK(run(&h, "assert(M:count() == 0); assert(M:add(E[2], 1) == 1)"));
  CHECK(host_close(&h));
}

TEST(Mesh_save_load_round_trip) {
  host h;
  membuf a = {0}, b = {0};
  size_t pos;
  CHECK(host_open(&h));
  CHECK_EQ_INT(save(&h, "mesh", &a), ECS_ERR_OK);
  /* 26 live entities with meshes: 4 + 26 * 8 bytes of heads and counts,
  ** 4 per instance */
  CHECK_EQ_INT(a.n, 4 + 26 * 8 + 51 * 4);
  CHECK(run(&h, "M:remove_all(E[2]); M:add(E[4], 9); M:add(E[3], 8)\n"
                "M:remove(E[7], 71)"));
  membuf_write(&a, "junk", 4);
  CHECK_EQ_INT(load(&h, "mesh", a.p, a.n, &pos), ECS_ERR_OK);
  CHECK_EQ_INT(pos, a.n - 4);
  a.n -= 4;
  CHECK_EQ_INT(save(&h, "mesh", &b), ECS_ERR_OK);
  CHECK(membuf_same(&a, &b));
  CHECK_EQ_INT(stats(&h, "mesh").records, 51);
  CHECK(run(&h, "same(SNAP, snapshot(), 'snap'); assert(M:size() == 51)"));
  CHECK_WORLD(h.w);
  /* the loaded chains work as added ones do */
  CHECK(run(&h, "assert(M:add(E[3], 1) == 4); same({ 31, 32, 33, 1 }, M:meshes(E[3]), 'm')\n"
                "assert(M:remove(E[3], 32)); same({ 31, 33, 1 }, M:meshes(E[3]), 'm')\n"
                "W:destroy(E[3]); assert(M:gc() == 3); assert(W:check())"));
  membuf_free(&a);
  membuf_free(&b);
  CHECK(host_close(&h));
}

TEST(Mesh_load_refuses_bad_data_and_out_of_memory_unchanged) {
  host h;
  membuf good = {0};
  size_t accepted, refused;
  const char *bad;
  uint32_t e0, c0;
  CHECK(host_open(&h));
  CHECK_EQ_INT(save(&h, "mesh", &good), ECS_ERR_OK);
  CHECK(run(&h, "M:remove_all(E[2]); M:add(E[4], 9); M:add(E[3], 8)"));
  memcpy(&e0, good.p + 4, 4);
  memcpy(&c0, good.p + 8, 4);
  CHECK_EQ_INT(load_with(&h, "mesh", &good, 0, 27), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(load_with(&h, "mesh", &good, 0, UINT32_MAX), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(load_with(&h, "mesh", &good, 8, 0), ECS_ERR_CORRUPT); /* no mesh */
  {
    /* one entity with no mesh (then 4 bytes of whatever follows) */
    uint32_t s[4] = {1, 0, 0, 7};
    s[1] = e0;
    CHECK_EQ_INT(load(&h, "mesh", (const unsigned char *)s, sizeof s, NULL),
                 ECS_ERR_CORRUPT);
  }
  CHECK_EQ_INT(load_with(&h, "mesh", &good, 8, UINT32_MAX), ECS_ERR_CORRUPT);
  /* the second entity's handle (after the first's count and ids) */
  CHECK_EQ_INT(load_with(&h, "mesh", &good, 12 + 4 * c0, e0), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(load_with(&h, "mesh", &good, 4, ECS_NULL), ECS_ERR_CORRUPT);
  CHECK_EQ_INT(load_with(&h, "mesh", &good, 4, ecs_mark_purged(e0)),
               ECS_ERR_CORRUPT);
  CHECK_EQ_INT(load_with(&h, "mesh", &good, 12, UINT32_MAX), ECS_ERR_OK); /* any id */
  CHECK(run(&h, "M:remove_all(E[2]); M:add(E[4], 9); M:add(E[3], 8)"));
  CHECK_WORLD(h.w);
  bad = sweep(&h, "mesh", &good, &accepted, &refused);
  if (bad != NULL) fprintf(stderr, "mesh sweep: %s\n", bad);
  CHECK(bad == NULL);
  CHECK(accepted > 0 && refused > 0);
  CHECK(run(&h, "same(SNAP, snapshot(), 'snap')"));
  CHECK_WORLD(h.w);
  membuf_free(&good);
  CHECK(host_close(&h));
}

/* ------------------------------------------------------------------------
** Listeners
** --------------------------------------------------------------------- */

/* Forward an event to ON(manager name, e, event); ON's number is the
** error code returned (0: ECS_ERR_OK). */
typedef struct forward {
  lua_State *L;
  const char *name;
} forward;

static ecs_err to_lua(ecs_world *w, void *mgr, ecs_entity e, ecs_event ev,
                      void *ud) {
  const forward *f = (const forward *)ud;
  lua_Integer rc;
  (void)w;
  (void)mgr;
  lua_getglobal(f->L, "ON");
  lua_pushstring(f->L, f->name);
  ecs_lua_push_entity(f->L, e);
  lua_pushinteger(f->L, (lua_Integer)ev);
  if (lua_pcall(f->L, 3, 1, 0) != LUA_OK) {
    fprintf(stderr, "ON: %s\n", lua_tostring(f->L, -1));
    lua_pop(f->L, 1);
    return ECS_ERR_READONLY; /* a code no test expects */
  }
  rc = lua_tointeger(f->L, -1);
  lua_pop(f->L, 1);
  return (ecs_err)rc;
}

static const char *const LISTEN =
  "ADD, REMOVE, SET = 1, 2, 4\n"
  "LOG, FAIL, HOOK = {}, nil, nil\n"
  "function ON(name, e, ev)\n"
  "  local seen = { name = name, e = e, ev = ev }\n"
  "  if name == 'pointmass' then\n"
  "    seen.has, seen.x = PM:has(e), PM:position(e)\n"
  "  else\n"
  "    seen.meshes = M:meshes(e)\n"
  "  end\n"
  "  LOG[#LOG + 1] = seen\n"
  "  if HOOK then HOOK(name, e, ev) end\n"
  "  return FAIL or 0\n"
  "end\n"
  "function expect(list)\n"
  "  same(list, LOG, 'log')\n"
  "  LOG = {}\n"
  "end\n"
  "function err_of(f, ...)\n"
  "  local ok, err = pcall(f, ...)\n"
  "  assert(not ok, 'no error')\n"
  "  return err\n"
  "end\n";

static bool listen(host *h, const char *name, forward *f) {
  const ecs_manager_class *cls;
  void *self = manager(h, name, &cls);
  f->L = h->L;
  f->name = name;
  return ecs_manager_listen(h->w, self, ECS_EVENT_ADD | ECS_EVENT_REMOVE |
                                            ECS_EVENT_SET,
                            to_lua, f) == ECS_ERR_OK;
}

TEST(Pointmass_reports_add_set_remove_to_listeners) {
  host h;
  forward f;
  CHECK(host_open(&h));
  CHECK(run(&h, LISTEN));
  CHECK(listen(&h, "pointmass", &f));
  /* ADD once written (then SET: values were written), SET for
  ** overwrites and setters, REMOVE while still readable; nothing for
  ** misses, dead entities' gc, clear or load */
  CHECK(run(&h,
    "local a = W:create()\n"
    "PM:add(a, 2, 1, 2, 3)\n"
    "expect({ { name = 'pointmass', e = a, ev = ADD, has = true, x = 1 },\n"
    "         { name = 'pointmass', e = a, ev = SET, has = true, x = 1 } })\n"
    "PM:add(a, 3, 7)\n"
    "PM:set_position(a, 9, 0, 0); PM:set_velocity(a, 1, 1, 1); PM:set_acceleration(a, 0, 1, 0)\n"
    "local function set(x) return { name = 'pointmass', e = a, ev = SET, has = true, x = x } end\n"
    "expect({ set(7), set(9), set(9), set(9) })\n"
    "assert(PM:remove(a))\n"
    "expect({ { name = 'pointmass', e = a, ev = REMOVE, has = true, x = 9 } })\n"
    "assert(not PM:has(a) and not PM:remove(a))\n"
    "local x2 = PM:position(E[2])\n"
    "W:destroy(E[2]) -- destroy reports REMOVE, E[2] still alive\n"
    "expect({ { name = 'pointmass', e = E[2], ev = REMOVE, has = true, x = x2 } })\n"
    "assert(PM:gc() == 5); W:update(0.1)\n"
    "expect({})"));
  {
    const ecs_manager_class *cls;
    void *self = manager(&h, "pointmass", &cls);
    membuf b = {0};
    CHECK_EQ_INT(save(&h, "pointmass", &b), ECS_ERR_OK);
    cls->clear(h.w, self);
    CHECK_EQ_INT(load(&h, "pointmass", b.p, b.n, NULL), ECS_ERR_OK);
    membuf_free(&b);
  }
  CHECK(run(&h, "expect({})"));
  /* a listener's error is raised after the change stands */
  CHECK(run(&h,
    "local c = W:create()\n"
    "FAIL = 9\n"
    "assert(err_of(PM.add, PM, c, 1):find('pointmass:add: invalid argument', 1, true))\n"
    "assert(PM:has(c))\n"
    "assert(err_of(PM.set_velocity, PM, c, 5, 0, 0):find('pointmass:set_velocity: invalid argument', 1, true))\n"
    "assert(PM:velocity(c) == 5)\n"
    "assert(err_of(PM.remove, PM, c):find('pointmass:remove: invalid argument', 1, true))\n"
    "assert(not PM:has(c))\n"
    "FAIL = nil; LOG = {}\n"
    "assert(W:check())"));
  /* a REMOVE listener that reshuffles records (removes others, adds
  ** enough to grow the block) or removes and re-adds the entity itself:
  ** the removal applies to what the entity has when it returns */
  CHECK(run(&h,
    "local a = W:create(); PM:add(a, 1, 42)\n"
    "local fresh = W:create(100)\n"
    "HOOK = function(name, e, ev)\n"
    "  if e ~= a or ev ~= REMOVE then return end\n"
    "  HOOK = nil\n"
    "  PM:remove(E[14]); PM:remove(E[16])\n"
    "  for i, x in ipairs(fresh) do PM:add(x, i) end\n"
    "end\n"
    "assert(PM:remove(a)); assert(not PM:has(a))\n"
    "assert(not PM:has(E[14]) and not PM:has(E[16]) and PM:has(E[17]))\n"
    "for i, x in ipairs(fresh) do assert(PM:mass(x) == i) end\n"
    "assert(PM:mass(E[17]) == 17)\n"
    "assert(W:check())\n"
    "local n = PM:count()\n"
    "HOOK = function(name, e, ev)\n"
    "  if e ~= a or ev ~= REMOVE then return end\n"
    "  HOOK = nil\n"
    "  assert(PM:remove(a)); PM:add(a, 3)\n"
    "end\n"
    "PM:add(a, 2); n = n + 1\n"
    "assert(PM:remove(a)); assert(not PM:has(a))\n"
    "assert(PM:count() == n - 1)\n"
    "assert(W:check())"));
  CHECK_WORLD(h.w);
  CHECK(host_close(&h));
}

TEST(Mesh_reports_add_and_remove_to_listeners) {
  host h;
  forward f;
  CHECK(host_open(&h));
  CHECK(run(&h, LISTEN));
  CHECK(listen(&h, "mesh", &f));
  CHECK(run(&h,
    "local a = W:create()\n"
    "local function ev(kind, meshes) return { name = 'mesh', e = a, ev = kind, meshes = meshes } end\n"
    "M:add(a, 1); M:add(a, 2)\n"
    "expect({ ev(ADD, { 1 }), ev(SET, { 1 }), ev(ADD, { 1, 2 }), ev(SET, { 1, 2 }) })\n"
    "assert(M:remove(a, 1)); assert(not M:remove(a, 1))\n"
    "expect({ ev(REMOVE, { 1, 2 }) })\n"
    "M:add(a, 3); LOG = {}\n"
    "assert(M:remove_all(a) == 2)\n"
    "expect({ ev(REMOVE, { 2, 3 }), ev(REMOVE, { 3 }) })\n"
    "assert(M:remove_all(a) == 0); local m2 = M:meshes(E[2])\n"
    "W:destroy(E[2]); expect({ { name = 'mesh', e = E[2], ev = REMOVE, meshes = m2 } })\n"
    "M:gc(); expect({})\n"
    /* a listener's error: raised after the change; remove_all stops */
    "M:add(a, 1); M:add(a, 2); M:add(a, 3); LOG = {}\n"
    "FAIL = 9\n"
    "assert(err_of(M.add, M, a, 4):find('mesh:add: invalid argument', 1, true))\n"
    "same({ 1, 2, 3, 4 }, M:meshes(a), 'after add')\n"
    "assert(err_of(M.remove, M, a, 2):find('mesh:remove: invalid argument', 1, true))\n"
    "same({ 1, 3, 4 }, M:meshes(a), 'after remove')\n"
    "assert(err_of(M.remove_all, M, a):find('mesh:remove_all: invalid argument', 1, true))\n"
    "same({ 3, 4 }, M:meshes(a), 'after remove_all')\n"
    "FAIL = nil; LOG = {}\n"
    /* a listener adding a mesh at every REMOVE: remove_all takes the
    ** two there were and stops */
    "HOOK = function(name, e, kind) if kind == REMOVE then M:add(e, 99) end end\n"
    "assert(M:remove_all(a) == 2)\n"
    "HOOK = nil\n"
    "same({ 99, 99 }, M:meshes(a), 'added by the listener')\n"
    /* one that takes the instance itself: it goes once */
    "M:add(a, 5); LOG = {}\n"
    "HOOK = function(name, e, kind) if kind == REMOVE then HOOK = nil; M:remove(e, 5) end end\n"
    "assert(M:remove(a, 5))\n"
    "same({ 99, 99 }, M:meshes(a), 'removed once')\n"
    "assert(W:check())"));
  CHECK_WORLD(h.w);
  CHECK(host_close(&h));
}

static const test_case cases[] = {
  CASE(Pointmass_hooks_has_stats_schema_clear),
  CASE(Pointmass_save_load_round_trip),
  CASE(Pointmass_load_refuses_bad_data_and_out_of_memory_unchanged),
  CASE(Mesh_hooks_has_stats_schema_clear),
  CASE(Mesh_save_load_round_trip),
  CASE(Mesh_load_refuses_bad_data_and_out_of_memory_unchanged),
  CASE(Pointmass_reports_add_set_remove_to_listeners),
  CASE(Mesh_reports_add_and_remove_to_listeners),
};

TEST_MAIN(cases)
