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
** position, velocity and acceleration as 3 float columns each -- and the
** core's entity-index -> record map (records.h). simulate() integrates
** every stored instance (semi-implicit Euler: v += a dt; p += v dt)
** without a liveness test: records of dead entities are invisible to every
** read and go at the next gc, so updating them costs a little and changes
** nothing visible. Records of dead entities are reclaimed by the core's
** lazy-gc policy (ecs_record_gc), the one every built-in manager uses.
**
** Invariants (pm_check): the map and the owner column agree both ways;
** every mass is positive and finite and every acceleration finite (only
** the checked add and setters write them; simulate changes positions and
** velocities only, which may overflow to inf or NaN and are taken as
** they are).
**
** The glue with the ecs: a manager class registered with
** ecs_manager_register, so the world frees, checks, gc's and purges it,
** and whoever drives managers generically (snapshots, observers,
** world:managers()) finds has, clear, stats, schema, save and load; memory
** from the world's allocator; a plugin object from ecs_lua.h.
**
** Listeners (ecs_manager_listen on this manager) hear ADD when add gives
** e a point mass (after its values are written), SET when add overwrites
** one or a setter writes, REMOVE when remove takes one (before it goes:
** still readable; the removal then applies to whatever point mass e has
** when the listeners return). A listener's error is raised by the method
** after its change stands. gc, clear and load notify nobody.
**
** Saved form (save/load; machine byte order, framed by the snapshot): the
** record count n (u32), then n records of live entities in instance
** order, each the entity (u32) and the schema's ten f32 fields: mass, x,
** y, z, vx, vy, vz, ax, ay, az.
*/
#include <float.h>
#include <math.h>
#include <string.h>

#include "ecs_plugin.h"

#define PM_CLASS "ecs.PointMass"
#define PM_NAME "pointmass"
#define PM_COLS 10
#define NONE ECS_RECORD_NONE
/* bytes of one saved record: the entity and the ten fields */
#define PM_SAVED (sizeof(uint32_t) + PM_COLS * sizeof(float))

enum { MASS, PX, PY, PZ, VX, VY, VZ, AX, AY, AZ };

typedef struct pointmass {
  uint32_t size, cap;
  uint32_t gc_cursor;  /* where ecs_record_gc's scan goes on */
  ecs_entity *owner;   /* the block: owner[cap], then PM_COLS float[cap] */
  float *col[PM_COLS];
  ecs_record_map map;  /* entity index -> instance */
} pointmass;

/* The schema (the columns after owner, in order), as hooks report it. */
static const ecs_field_def pm_fields[PM_COLS] = {
  {"mass", ECS_F32}, {"x", ECS_F32},  {"y", ECS_F32},  {"z", ECS_F32},
  {"vx", ECS_F32},   {"vy", ECS_F32}, {"vz", ECS_F32}, {"ax", ECS_F32},
  {"ay", ECS_F32},   {"az", ECS_F32},
};

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

/* Move the records into a block of ncap (>= size) records; all or nothing. */
static ecs_err pm_grow(ecs_world *w, pointmass *pm, uint32_t ncap) {
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
  return ECS_ERR_OK;
}

/* Room for one more instance owned by e (map slot and block); all or
** nothing (a map that grew stays grown, which is harmless). One record
** per index at most, so size stays below 2^22 and doubling cannot wrap. */
static ecs_err pm_reserve(ecs_world *w, pointmass *pm, ecs_entity e) {
  ecs_err err = ecs_record_map_reserve(w, &pm->map, ecs_entity_index(e));
  if (err != ECS_ERR_OK) return err;
  if (pm->size == pm->cap) return pm_grow(w, pm, pm->cap ? pm->cap * 2 : 16u);
  return ECS_ERR_OK;
}

/* Free the block and the map: no records left (clear, free, load). */
static void pm_release(ecs_world *w, pointmass *pm) {
  pm_alloc(w, pm->owner, block_size(pm->cap), 0);
  ecs_record_map_free(w, &pm->map);
  pm->owner = NULL;
  for (int k = 0; k < PM_COLS; k++) pm->col[k] = NULL;
  pm->size = pm->cap = pm->gc_cursor = 0;
}

/* The instance of the live entity e, or NONE. */
static uint32_t pm_lookup(const ecs_world *w, const pointmass *pm, ecs_entity e) {
  uint32_t i = ecs_record_map_get(&pm->map, ecs_entity_index(e));
  if (i == NONE || pm->owner[i] != e || !ecs_alive(w, e)) return NONE;
  return i;
}

/* Swap-remove instance i: the last one moves into i, the map follows. */
static void pm_remove_at(pointmass *pm, uint32_t i) {
  uint32_t last = --pm->size;
  ecs_record_map_set(&pm->map, ecs_entity_index(pm->owner[i]), NONE);
  if (i != last) {
    pm->owner[i] = pm->owner[last];
    for (int k = 0; k < PM_COLS; k++) pm->col[k][i] = pm->col[k][last];
    ecs_record_map_set(&pm->map, ecs_entity_index(pm->owner[i]), i);
  }
}

/* e must be alive and have no point mass; a dead record at e's index (a
** former entity's, or purged) is reused. Every field starts at 0. */
static ecs_err pm_add(ecs_world *w, pointmass *pm, ecs_entity e, uint32_t *out) {
  uint32_t index = ecs_entity_index(e);
  uint32_t i = ecs_record_map_get(&pm->map, index);
  ecs_err err;
  if (i == NONE) {
    if ((err = pm_reserve(w, pm, e)) != ECS_ERR_OK) return err;
    i = pm->size++;
    ecs_record_map_set(&pm->map, index, i);
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

/* Values the checked add and setters could have written. */
static bool valid_mass(float m) { return m > 0.0f && m <= FLT_MAX; }
static bool finite3(const float *a) {
  return fabsf(a[0]) <= FLT_MAX && fabsf(a[1]) <= FLT_MAX &&
         fabsf(a[2]) <= FLT_MAX;
}

/* The records as the core's lazy gc sees them: owners, swap-remove. */
static ecs_entity gc_owner(const void *self, uint32_t i) {
  return ((const pointmass *)self)->owner[i];
}
static void gc_drop(ecs_world *w, void *self, uint32_t i) {
  (void)w;
  pm_remove_at((pointmass *)self, i);
}
static const ecs_record_ops gc_ops = {gc_owner, gc_drop};

/* The core's one policy (records.h); SIZE_MAX sweeps everything. */
static size_t pm_gc(ecs_world *w, void *self, size_t budget) {
  pointmass *pm = (pointmass *)self;
  return ecs_record_gc(w, pm, &gc_ops, &pm->size, &pm->gc_cursor, budget);
}

/* The index's generation wrapped: its record (if any) can never be seen
** again; gc or the next add at this index reclaims it. Nothing moves. */
static void pm_purge(ecs_world *w, void *self, uint32_t index) {
  pointmass *pm = (pointmass *)self;
  uint32_t i = ecs_record_map_get(&pm->map, index);
  (void)w;
  if (i != NONE) pm->owner[i] = ecs_mark_purged(pm->owner[i]);
}

/* Every map entry names a record of its own index. */
static const char *check_map_entry(const void *ud, uint32_t index, uint32_t v) {
  const pointmass *pm = (const pointmass *)ud;
  if (v >= pm->size || ecs_entity_index(pm->owner[v]) != index)
    return "pointmass: map entry without its record";
  return NULL;
}

static const char *pm_check(const ecs_world *w, const void *self) {
  const pointmass *pm = (const pointmass *)self;
  if (pm->size > pm->cap) return "pointmass: size exceeds capacity";
  for (uint32_t i = 0; i < pm->size; i++) {
    float a[3] = {pm->col[AX][i], pm->col[AY][i], pm->col[AZ][i]};
    if (ecs_record_map_get(&pm->map, ecs_entity_index(pm->owner[i])) != i)
      return "pointmass: map disagrees with owner column";
    if (!ecs_record_valid(w, pm->owner[i]))
      return "pointmass: record outlived its generation (wrap)";
    if (!valid_mass(pm->col[MASS][i]) || !finite3(a))
      return "pointmass: mass not positive and finite, or acceleration not finite";
  }
  return ecs_record_map_each(&pm->map, check_map_entry, pm);
}

static void pm_free(ecs_world *w, void *self) {
  pointmass *pm = (pointmass *)self;
  pm_release(w, pm);
  pm_alloc(w, pm, sizeof *pm, 0);
}

/* ------------------------------------------------------------------------
** The manager interface's optional hooks (ecs.h, ecs_manager_class)
** --------------------------------------------------------------------- */

static bool pm_has(const ecs_world *w, const void *self, ecs_entity e) {
  return pm_lookup(w, (const pointmass *)self, e) != NONE;
}

/* Every record goes, and with them the memory (a cleared manager is
** usually refilled by a load, which allocates its own). */
static void pm_clear(ecs_world *w, void *self) {
  pm_release(w, (pointmass *)self);
}

static void pm_stats(const ecs_world *w, const void *self,
                     ecs_manager_stats *out) {
  const pointmass *pm = (const pointmass *)self;
  out->records = pm->size;
  out->live = 0;
  for (uint32_t i = 0; i < pm->size; i++) out->live += ecs_alive(w, pm->owner[i]);
  out->bytes = sizeof *pm + block_size(pm->cap) + ecs_record_map_bytes(&pm->map);
}

static uint32_t pm_schema(const ecs_world *w, const void *self,
                          ecs_field_def *out, uint32_t max) {
  (void)w;
  (void)self;
  for (uint32_t k = 0; k < PM_COLS && k < max; k++) out[k] = pm_fields[k];
  return PM_COLS;
}

/* The saved form: see the top of the file. Live records only. */
static ecs_err pm_save(const ecs_world *w, const void *self, ecs_writer *out) {
  const pointmass *pm = (const pointmass *)self;
  uint32_t n = 0;
  ecs_err err;
  for (uint32_t i = 0; i < pm->size; i++) n += ecs_alive(w, pm->owner[i]);
  if ((err = ecs_write_u32(out, n)) != ECS_ERR_OK) return err;
  for (uint32_t i = 0; i < pm->size; i++) {
    unsigned char rec[PM_SAVED];
    if (!ecs_alive(w, pm->owner[i])) continue;
    memcpy(rec, &pm->owner[i], sizeof(uint32_t));
    for (int k = 0; k < PM_COLS; k++)
      memcpy(rec + sizeof(uint32_t) + (size_t)k * sizeof(float),
             &pm->col[k][i], sizeof(float));
    if ((err = ecs_write(out, rec, sizeof rec)) != ECS_ERR_OK) return err;
  }
  return ECS_ERR_OK;
}

/*
** Read every record into a fresh manager, checking as it goes (the count
** against the bytes left before anything is allocated; then per record:
** entity alive, not seen before, mass positive and finite, acceleration
** finite), and only then trade it for the old one, so any failure (bad
** data or out of memory) leaves the manager and the reader as they were.
** Peak memory: both managers for a moment.
*/
static ecs_err pm_load(ecs_world *w, void *self, ecs_reader *in) {
  pointmass *pm = (pointmass *)self, fresh;
  ecs_reader r = *in;
  uint32_t n;
  ecs_err err;
  memset(&fresh, 0, sizeof fresh);
  if ((err = ecs_read_u32(&r, &n)) != ECS_ERR_OK) return err;
  if (n > (r.size - r.pos) / PM_SAVED) return ECS_ERR_CORRUPT; /* truncated */
  if (n > 0 && (err = pm_grow(w, &fresh, n)) != ECS_ERR_OK) return err;
  for (uint32_t k = 0; k < n; k++) {
    unsigned char rec[PM_SAVED];
    float v[PM_COLS];
    ecs_entity e;
    uint32_t index;
    if ((err = ecs_read(&r, rec, sizeof rec)) != ECS_ERR_OK) break;
    memcpy(&e, rec, sizeof e);
    memcpy(v, rec + sizeof(uint32_t), sizeof v);
    index = ecs_entity_index(e);
    if (!ecs_alive(w, e) || ecs_record_map_get(&fresh.map, index) != NONE ||
        !valid_mass(v[MASS]) || !finite3(v + AX)) {
      err = ECS_ERR_CORRUPT; /* dead or forged entity, a repeat, bad values */
      break;
    }
    if ((err = ecs_record_map_reserve(w, &fresh.map, index)) != ECS_ERR_OK) break;
    ecs_record_map_set(&fresh.map, index, k);
    fresh.owner[k] = e;
    for (int c = 0; c < PM_COLS; c++) fresh.col[c][k] = v[c];
    fresh.size = k + 1;
  }
  if (err != ECS_ERR_OK) {
    pm_release(w, &fresh);
    return err;
  }
  pm_release(w, pm);
  *pm = fresh;
  in->pos = r.pos;
  return ECS_ERR_OK;
}

/* Staged loads (snapshots): an empty manager to load into, then a trade
** of records with the registered one (the pointmass struct is all
** records: nothing stays behind). */
static void *pm_twin(ecs_world *w, const void *self) {
  pointmass *t = (pointmass *)pm_alloc(w, NULL, 0, sizeof *t);
  (void)self;
  if (t != NULL) memset(t, 0, sizeof *t);
  return t;
}

static void pm_swap(ecs_world *w, void *self, void *twin) {
  pointmass *a = (pointmass *)self, *b = (pointmass *)twin, tmp = *a;
  (void)w;
  *a = *b;
  *b = tmp;
}

static const ecs_manager_class pm_class = {
  .kind = "pointmass",
  .gc = pm_gc,
  .check = pm_check,
  .free = pm_free,
  .purge = pm_purge,
  .has = pm_has,
  .clear = pm_clear,
  .stats = pm_stats,
  .schema = pm_schema,
  .save = pm_save,
  .load = pm_load,
  .twin = pm_twin,
  .swap = pm_swap,
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

/* PM:add(e, mass [, x, y, z [, vx, vy, vz]]) -- overwrites if present
** (reported as SET then, else as ADD, once the values are written) */
static int l_pm_add(lua_State *L) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  float v[7] = {0};
  uint32_t i;
  ecs_err err;
  ecs_event ev = ECS_EVENT_SET;
  float mass = check_float(L, 3);
  luaL_argcheck(L, mass > 0.0f, 3, "mass must be positive");
  for (int k = 0; k < 6; k++)
    if (!lua_isnoneornil(L, 4 + k)) v[k] = check_float(L, 4 + k);
  if (!ecs_alive(w, e)) return ecs_lua_error(L, "pointmass:add", ECS_ERR_DEAD);
  if ((i = pm_lookup(w, pm, e)) == NONE) {
    if ((err = pm_add(w, pm, e, &i)) != ECS_ERR_OK)
      return ecs_lua_error(L, "pointmass:add", err);
    ev = ECS_EVENT_ADD;
  }
  pm->col[MASS][i] = mass;
  for (int k = 0; k < 6; k++) pm->col[PX + k][i] = v[k];
  pm->col[AX][i] = pm->col[AY][i] = pm->col[AZ][i] = 0.0f;
  /* last: the record is complete; i is not used after the listeners */
  if ((err = ecs_manager_notify(w, pm, e, ev)) != ECS_ERR_OK)
    return ecs_lua_error(L, "pointmass:add", err);
  return 0;
}

/* The instance of e, or an error: e must be alive and have a point mass. */
static uint32_t need(lua_State *L, ecs_world *w, pointmass *pm, const char *fn) {
  ecs_entity e = ecs_lua_check_entity(L, 2);
  uint32_t i;
  if (!ecs_alive(w, e)) ecs_lua_error(L, fn, ECS_ERR_DEAD);
  if ((i = pm_lookup(w, pm, e)) == NONE) ecs_lua_error(L, fn, ECS_ERR_MISSING);
  return i;
}

static int get3(lua_State *L, int col0) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  uint32_t i = pm_lookup(w, pm, ecs_lua_check_entity(L, 2));
  if (i == NONE) return 0;
  for (int k = 0; k < 3; k++) lua_pushnumber(L, (lua_Number)pm->col[col0 + k][i]);
  return 3;
}

static int set3(lua_State *L, int col0, const char *fn) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  float v[3];
  uint32_t i;
  ecs_err err;
  for (int k = 0; k < 3; k++) v[k] = check_float(L, 3 + k);
  i = need(L, w, pm, fn);
  for (int k = 0; k < 3; k++) pm->col[col0 + k][i] = v[k];
  /* last, with the handle: the listeners may move the record */
  err = ecs_manager_notify(w, pm, pm->owner[i], ECS_EVENT_SET);
  if (err != ECS_ERR_OK) return ecs_lua_error(L, fn, err);
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
  if (i == NONE) return 0;
  lua_pushnumber(L, (lua_Number)pm->col[MASS][i]);
  return 1;
}

static int l_pm_has(lua_State *L) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  lua_pushboolean(L, pm_lookup(w, pm, ecs_lua_check_entity(L, 2)) != NONE);
  return 1;
}

/* PM:remove(e) -> whether e had a point mass. REMOVE is reported first,
** while the record is readable; the listeners may move or drop records,
** so e's record is looked up again before it goes. */
static int l_pm_remove(lua_State *L) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  uint32_t i = pm_lookup(w, pm, e);
  ecs_err err;
  if (i == NONE) {
    lua_pushboolean(L, 0);
    return 1;
  }
  err = ecs_manager_notify(w, pm, e, ECS_EVENT_REMOVE);
  if ((i = pm_lookup(w, pm, e)) != NONE) pm_remove_at(pm, i);
  if (err != ECS_ERR_OK) return ecs_lua_error(L, "pointmass:remove", err);
  lua_pushboolean(L, 1);
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
** batch lookup over the owner column (Open Sea), 256 at a time. Writes
** count as writes: change queries see them, a journal records them.
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
      /* a write like any other: an open journal keeps the old values
      ** first, change queries see it after */
      ecs_component_prewrite(w, c, inst[j]);
      for (int k = 0; k < 3; k++)
        if (f[k] >= 0) put(col[k], type[k], inst[j], pm->col[PX + k][base + j]);
      ecs_component_touch(w, c, inst[j]);
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
  ecs_lua_plugin_factory(L, PM_NAME, l_pm_new); /* for ecs.restore */
  lua_newtable(L);
  lua_pushcfunction(L, l_pm_new);
  lua_setfield(L, -2, "new");
  return 1;
}
