/*
** pointmass.c -- a C plugin: a point-mass manager with its own layout and
** a per-frame update in one C loop (require("ecs.pointmass")).
**
**   local pointmass = require("ecs.pointmass")
**   local PM = pointmass.new(world)        -- one manager per world
**   PM:add(e, mass [, x, y, z [, vx, vy, vz]])
**   PM:set_acceleration(e, 0, -9.81, 0)
**   PM:simulate(1 / 60)                    -- every instance, in C
**   PM:position(e) --> x, y, z   PM:velocity(e)  PM:acceleration(e)
**   PM:mass(e)  PM:set_position  PM:set_velocity  PM:has  PM:remove
**   PM:count()  PM:gc([budget])
**   PM:copy_positions(Position) --> n  -- a C system joining this manager
**                                      -- and a world:component's columns
**
** Layout (Bitsquid part 2): one block of SoA columns -- owner, mass, then
** position, velocity and acceleration as 3 float columns each -- and a
** flat entity-index -> instance array. simulate() integrates every stored
** instance (semi-implicit Euler: v += a dt; p += v dt) without a liveness
** test: records of dead entities are invisible to every read and go at the
** next gc, so updating them costs a little and changes nothing visible.
**
** The glue with the ecs: a manager class (gc, check, free, purge) registered with
** ecs_manager_register, so the world frees it and checks it; memory from
** the world's allocator; a plugin object from ecs_lua.h.
*/
#include <math.h>
#include <string.h>

#include "ecs_plugin.h"

#define PM_CLASS "ecs.PointMass"
#define PM_NAME "pointmass"
#define PM_COLS 10

enum { MASS, PX, PY, PZ, VX, VY, VZ, AX, AY, AZ };

typedef struct pointmass {
  uint32_t size, cap;
  ecs_entity *owner;   /* the block: owner[cap], then PM_COLS float[cap] */
  float *col[PM_COLS];
  uint32_t *map;       /* entity index -> instance, UINT32_MAX: none */
  uint32_t map_count;
  uint64_t rng;        /* lazy gc's PRNG (xorshift64) */
} pointmass;

/* ------------------------------------------------------------------------
** The manager (no Lua here)
** --------------------------------------------------------------------- */

static void *pm_alloc(ecs_world *w, void *p, size_t osize, size_t nsize) {
  void *ud;
  ecs_alloc_fn f = ecs_world_allocator(w, &ud);
  return f(ud, p, osize, nsize);
}

static size_t block_size(uint32_t cap) {
  return (size_t)cap * (sizeof(ecs_entity) + PM_COLS * sizeof(float));
}

/* Room for one more instance owned by e (map and block); all or nothing. */
static ecs_err pm_reserve(ecs_world *w, pointmass *pm, ecs_entity e) {
  uint32_t index = ecs_entity_index(e);
  if (index >= pm->map_count) {
    uint32_t n = pm->map_count ? pm->map_count : 64u;
    uint32_t *m;
    while (n <= index) n *= 2;
    m = (uint32_t *)pm_alloc(w, pm->map, (size_t)pm->map_count * 4u,
                             (size_t)n * 4u);
    if (m == NULL) return ECS_ERR_NOMEM;
    memset(m + pm->map_count, 0xff, (size_t)(n - pm->map_count) * 4u);
    pm->map = m;
    pm->map_count = n;
  }
  if (pm->size == pm->cap) {
    uint32_t ncap = pm->cap ? pm->cap * 2 : 16u;
    uint8_t *b = (uint8_t *)pm_alloc(w, NULL, 0, block_size(ncap));
    float *base;
    if (b == NULL) return ECS_ERR_NOMEM;
    base = (float *)(void *)(b + (size_t)ncap * sizeof(ecs_entity));
    if (pm->size) memcpy(b, pm->owner, (size_t)pm->size * sizeof(ecs_entity));
    for (int k = 0; k < PM_COLS; k++) {
      if (pm->size)
        memcpy(base + (size_t)k * ncap, pm->col[k], (size_t)pm->size * sizeof(float));
      pm->col[k] = base + (size_t)k * ncap;
    }
    pm_alloc(w, pm->owner, block_size(pm->cap), 0);
    pm->owner = (ecs_entity *)(void *)b;
    pm->cap = ncap;
  }
  return ECS_ERR_OK;
}

static uint32_t pm_lookup(const ecs_world *w, const pointmass *pm, ecs_entity e) {
  uint32_t index = ecs_entity_index(e), i;
  if (index >= pm->map_count) return UINT32_MAX;
  i = pm->map[index];
  if (i == UINT32_MAX || pm->owner[i] != e || !ecs_alive(w, e)) return UINT32_MAX;
  return i;
}

/* Swap-remove instance i. */
static void pm_remove_at(pointmass *pm, uint32_t i) {
  uint32_t last = --pm->size;
  pm->map[ecs_entity_index(pm->owner[i])] = UINT32_MAX;
  if (i != last) {
    pm->owner[i] = pm->owner[last];
    for (int k = 0; k < PM_COLS; k++) pm->col[k][i] = pm->col[k][last];
    pm->map[ecs_entity_index(pm->owner[i])] = i;
  }
}

/* e must be alive; a dead record at e's index is reused. */
static ecs_err pm_add(ecs_world *w, pointmass *pm, ecs_entity e, uint32_t *out) {
  uint32_t index = ecs_entity_index(e), i;
  ecs_err err;
  i = index < pm->map_count ? pm->map[index] : UINT32_MAX;
  if (i == UINT32_MAX) {
    if ((err = pm_reserve(w, pm, e)) != ECS_ERR_OK) return err;
    i = pm->size++;
    pm->map[index] = i;
  }
  pm->owner[i] = e;
  for (int k = 0; k < PM_COLS; k++) pm->col[k][i] = 0.0f;
  *out = i;
  return ECS_ERR_OK;
}

/* The per-frame update: one loop over plain float arrays. */
static void pm_simulate(pointmass *pm, float dt) {
  float *px = pm->col[PX], *py = pm->col[PY], *pz = pm->col[PZ];
  float *vx = pm->col[VX], *vy = pm->col[VY], *vz = pm->col[VZ];
  const float *ax = pm->col[AX], *ay = pm->col[AY], *az = pm->col[AZ];
  for (uint32_t i = 0, n = pm->size; i < n; i++) {
    vx[i] += ax[i] * dt;
    vy[i] += ay[i] * dt;
    vz[i] += az[i] * dt;
    px[i] += vx[i] * dt;
    py[i] += vy[i] * dt;
    pz[i] += vz[i] * dt;
  }
}

/* Bitsquid's lazy gc (see component.c); SIZE_MAX sweeps everything. */
static size_t pm_gc(ecs_world *w, void *self, size_t budget) {
  pointmass *pm = (pointmass *)self;
  size_t done = 0;
  if (budget == SIZE_MAX) {
    for (uint32_t i = pm->size; i-- > 0;)
      if (!ecs_alive(w, pm->owner[i])) {
        pm_remove_at(pm, i);
        done++;
      }
    return done;
  }
  for (unsigned live = 0; live < 4 && done < budget && pm->size > 0;) {
    uint32_t i;
    pm->rng ^= pm->rng << 13;
    pm->rng ^= pm->rng >> 7;
    pm->rng ^= pm->rng << 17;
    i = (uint32_t)(((pm->rng >> 32) * pm->size) >> 32);
    if (ecs_alive(w, pm->owner[i])) {
      live++;
    } else {
      pm_remove_at(pm, i);
      done++;
      live = 0;
    }
  }
  return done;
}

/* The index's generation wrapped: its record (if any) can never be seen
** again; gc or the next add at this index reclaims it. Nothing moves. */
static void pm_purge(ecs_world *w, void *self, uint32_t index) {
  pointmass *pm = (pointmass *)self;
  (void)w;
  if (index < pm->map_count && pm->map[index] != UINT32_MAX)
    pm->owner[pm->map[index]] = ecs_mark_purged(pm->owner[pm->map[index]]);
}

static const char *pm_check(const ecs_world *w, const void *self) {
  const pointmass *pm = (const pointmass *)self;
  if (pm->size > pm->cap) return "pointmass: size exceeds capacity";
  for (uint32_t i = 0; i < pm->size; i++) {
    uint32_t index = ecs_entity_index(pm->owner[i]);
    if (index >= pm->map_count || pm->map[index] != i)
      return "pointmass: map disagrees with owner column";
    if (!ecs_record_valid(w, pm->owner[i]))
      return "pointmass: record outlived its generation (wrap)";
  }
  return NULL;
}

static void pm_free(ecs_world *w, void *self) {
  pointmass *pm = (pointmass *)self;
  pm_alloc(w, pm->owner, block_size(pm->cap), 0);
  pm_alloc(w, pm->map, (size_t)pm->map_count * 4u, 0);
  pm_alloc(w, pm, sizeof *pm, 0);
}

static const ecs_manager_class pm_class = {
  .kind = "pointmass",
  .gc = pm_gc,
  .check = pm_check,
  .free = pm_free,
  .purge = pm_purge,
};

/* ------------------------------------------------------------------------
** Lua glue
** --------------------------------------------------------------------- */

/* The plugin object holds the manager's pointer (owned by the world). */
typedef struct lpm {
  pointmass *pm;
} lpm;

static pointmass *check_pm(lua_State *L, ecs_world **w) {
  lpm *o = (lpm *)ecs_lua_plugin_check(L, 1, PM_CLASS, w);
  return o->pm;
}

static float check_float(lua_State *L, int idx) {
  lua_Number v = luaL_checknumber(L, idx);
  if (!(fabs(v) <= 3.4e38)) luaL_argerror(L, idx, "not a finite float");
  return (float)v;
}

/* PM:add(e, mass [, x, y, z [, vx, vy, vz]]) -- overwrites if present */
static int l_pm_add(lua_State *L) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  float v[7] = {0};
  uint32_t i;
  ecs_err err;
  float mass = check_float(L, 3);
  luaL_argcheck(L, mass > 0.0f, 3, "mass must be positive");
  for (int k = 0; k < 6; k++)
    if (!lua_isnoneornil(L, 4 + k)) v[k] = check_float(L, 4 + k);
  if (!ecs_alive(w, e)) return ecs_lua_error(L, "pointmass:add", ECS_ERR_DEAD);
  if ((i = pm_lookup(w, pm, e)) == UINT32_MAX &&
      (err = pm_add(w, pm, e, &i)) != ECS_ERR_OK)
    return ecs_lua_error(L, "pointmass:add", err);
  pm->col[MASS][i] = mass;
  for (int k = 0; k < 6; k++) pm->col[PX + k][i] = v[k];
  pm->col[AX][i] = pm->col[AY][i] = pm->col[AZ][i] = 0.0f;
  return 0;
}

/* The instance of e, or an error: e must be alive and have a point mass. */
static uint32_t need(lua_State *L, ecs_world *w, pointmass *pm, const char *fn) {
  ecs_entity e = ecs_lua_check_entity(L, 2);
  uint32_t i;
  if (!ecs_alive(w, e)) ecs_lua_error(L, fn, ECS_ERR_DEAD);
  if ((i = pm_lookup(w, pm, e)) == UINT32_MAX) ecs_lua_error(L, fn, ECS_ERR_MISSING);
  return i;
}

static int get3(lua_State *L, int col0) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  uint32_t i = pm_lookup(w, pm, ecs_lua_check_entity(L, 2));
  if (i == UINT32_MAX) return 0;
  for (int k = 0; k < 3; k++) lua_pushnumber(L, (lua_Number)pm->col[col0 + k][i]);
  return 3;
}

static int set3(lua_State *L, int col0, const char *fn) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  float v[3];
  uint32_t i;
  for (int k = 0; k < 3; k++) v[k] = check_float(L, 3 + k);
  i = need(L, w, pm, fn);
  for (int k = 0; k < 3; k++) pm->col[col0 + k][i] = v[k];
  return 0;
}

static int l_pm_position(lua_State *L) { return get3(L, PX); }
static int l_pm_velocity(lua_State *L) { return get3(L, VX); }
static int l_pm_acceleration(lua_State *L) { return get3(L, AX); }
static int l_pm_set_position(lua_State *L) {
  return set3(L, PX, "pointmass:set_position");
}
static int l_pm_set_velocity(lua_State *L) {
  return set3(L, VX, "pointmass:set_velocity");
}
static int l_pm_set_acceleration(lua_State *L) {
  return set3(L, AX, "pointmass:set_acceleration");
}

/* PM:mass(e) -> mass, or nothing */
static int l_pm_mass(lua_State *L) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  uint32_t i = pm_lookup(w, pm, ecs_lua_check_entity(L, 2));
  if (i == UINT32_MAX) return 0;
  lua_pushnumber(L, (lua_Number)pm->col[MASS][i]);
  return 1;
}

static int l_pm_has(lua_State *L) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  lua_pushboolean(L, pm_lookup(w, pm, ecs_lua_check_entity(L, 2)) != UINT32_MAX);
  return 1;
}

static int l_pm_remove(lua_State *L) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  uint32_t i = pm_lookup(w, pm, ecs_lua_check_entity(L, 2));
  if (i != UINT32_MAX) pm_remove_at(pm, i);
  lua_pushboolean(L, i != UINT32_MAX);
  return 1;
}

static int l_pm_count(lua_State *L) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  lua_Integer n = 0;
  for (uint32_t i = 0; i < pm->size; i++) n += ecs_alive(w, pm->owner[i]);
  lua_pushinteger(L, n);
  return 1;
}

static int l_pm_gc(lua_State *L) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  size_t budget = SIZE_MAX;
  if (!lua_isnoneornil(L, 2)) {
    lua_Integer b = luaL_checkinteger(L, 2);
    luaL_argcheck(L, b >= 0, 2, "budget must not be negative");
    budget = (size_t)b;
  }
  lua_pushinteger(L, (lua_Integer)pm_gc(w, pm, budget));
  return 1;
}

/* PM:simulate(dt) -- integrate every instance once */
static int l_pm_simulate(lua_State *L) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  pm_simulate(pm, check_float(L, 2));
  return 0;
}

/* Store v into column col (f32 or f64) at instance i. */
static void put(void *col, ecs_type t, ecs_instance i, float v) {
  if (t == ECS_F32) ((float *)col)[i] = v;
  else ((double *)col)[i] = (double)v;
}

/*
** PM:copy_positions(Position) -> number of entities updated
** A system across two managers, in C: for every live point mass whose
** entity has the component, copy the position into its x, y (and z, if
** present) fields, which must be f32 or f64. Instances are found with the
** batch lookup over the owner column (Open Sea), 256 at a time.
*/
static int l_pm_copy_positions(lua_State *L) {
  ecs_world *w, *cw;
  pointmass *pm = check_pm(L, &w);
  ecs_component *c = ecs_lua_check_component(L, 2, &cw);
  int f[3];
  void *col[3];
  ecs_type type[3];
  ecs_instance inst[256];
  lua_Integer done = 0;
  luaL_argcheck(L, cw == w, 2, "component of another world");
  f[0] = ecs_component_field_index(c, "x", 1);
  f[1] = ecs_component_field_index(c, "y", 1);
  f[2] = ecs_component_field_index(c, "z", 1);
  luaL_argcheck(L, f[0] >= 0 && f[1] >= 0, 2, "component needs fields x and y");
  for (int k = 0; k < 3; k++) {
    if (f[k] < 0) continue;
    type[k] = ecs_component_field(c, (uint32_t)f[k])->type;
    luaL_argcheck(L, type[k] == ECS_F32 || type[k] == ECS_F64, 2,
                  "fields x, y, z must be f32 or f64");
    col[k] = ecs_component_column(c, (uint32_t)f[k]);
  }
  for (uint32_t base = 0; base < pm->size; base += 256) {
    uint32_t n = pm->size - base < 256 ? pm->size - base : 256;
    ecs_component_lookup_n(w, c, pm->owner + base, inst, n);
    for (uint32_t j = 0; j < n; j++) {
      if (inst[j] == ECS_NO_INSTANCE) continue; /* dead, or no component */
      for (int k = 0; k < 3; k++)
        if (f[k] >= 0) put(col[k], type[k], inst[j], pm->col[PX + k][base + j]);
      done++;
    }
  }
  lua_pushinteger(L, done);
  return 1;
}

static const luaL_Reg pm_methods[] = {
  {"copy_positions", l_pm_copy_positions},
  {"add", l_pm_add}, {"remove", l_pm_remove}, {"has", l_pm_has},
  {"mass", l_pm_mass}, {"position", l_pm_position},
  {"velocity", l_pm_velocity}, {"acceleration", l_pm_acceleration},
  {"set_position", l_pm_set_position}, {"set_velocity", l_pm_set_velocity},
  {"set_acceleration", l_pm_set_acceleration}, {"simulate", l_pm_simulate},
  {"count", l_pm_count}, {"gc", l_pm_gc}, {NULL, NULL}
};

/*
** pointmass.new(world) -> the world's point-mass manager (created once).
** The Lua object is created and attached first (may raise, nothing in C
** yet); then the C manager, registered with the world, which frees it.
*/
static int l_pm_new(lua_State *L) {
  ecs_world *w; /* ecs_lua_plugin_get checks the world */
  pointmass *pm;
  lpm *o;
  ecs_err err;
  if (ecs_lua_plugin_get(L, 1, PM_CLASS) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  o = (lpm *)ecs_lua_plugin_new(L, 1, PM_CLASS, sizeof *o);
  w = ecs_lua_check_world(L, 1); /* a finalizer run by that allocation may have closed it */
  pm = (pointmass *)pm_alloc(w, NULL, 0, sizeof *pm);
  if (pm == NULL) err = ECS_ERR_NOMEM;
  else {
    memset(pm, 0, sizeof *pm);
    pm->rng = 0x9E3779B97F4A7C15ull;
    err = ecs_manager_register(w, PM_NAME, &pm_class, pm); /* frees pm on error */
  }
  if (err != ECS_ERR_OK) {
    ecs_lua_plugin_detach(L, 1, PM_CLASS);
    return ecs_lua_error(L, "pointmass.new", err);
  }
  o->pm = pm;
  return 1;
}

int luaopen_ecs_pointmass(lua_State *L);

int luaopen_ecs_pointmass(lua_State *L) {
  ECS_PLUGIN_INIT(L);
  ecs_lua_plugin_class(L, PM_CLASS, pm_methods);
  lua_newtable(L);
  lua_pushcfunction(L, l_pm_new);
  lua_setfield(L, -2, "new");
  return 1;
}
