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
** Layout (Bitsquid part 2): SoA columns -- owner, mass, then position,
** velocity and acceleration as 3 float columns each -- kept in an owned
** generic component named "pointmass" (component.h, "Owned components"),
** with its entity-index -> row map, so that the manager is a query term:
** world:query(PM, ...), q:apply("pointmass.x += pointmass.vx * dt"),
** q:columns, expression and C systems read and write these columns
** (pm_class.columns; mass read-only there, accelerations written in bulk
** cleaned by pm_written: NaN -> 0, +-inf -> +-FLT_MAX). simulate() integrates
** every stored instance (semi-implicit Euler: v += a dt; p += v dt)
** without a liveness test: records of dead entities are invisible to every
** read and go at the next gc, so updating them costs a little and changes
** nothing visible. simulate, the setters and an add over a record stamp
** the rows written (changed terms). Records of dead entities are reclaimed by the core's
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
** e a point mass (after its values are written; SET follows, ecs.h), SET
** when add overwrites
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
  /* The records: an owned generic component (component.h, "Owned
  ** components") named "pointmass" with the ten f32 fields of pm_fields,
  ** row i one instance, its owners column and entity-index map the
  ** component's own. The same object for the manager's whole life: it
  ** is what queries over the manager use (pm_class.columns). */
  ecs_component *c;
  uint32_t size;           /* c's rows (ecs_record_gc reads it) */
  uint32_t gc_cursor;      /* where ecs_record_gc's scan goes on */
  const struct pointmass *of; /* a twin: the manager it stands in for */
} pointmass;

/* The schema (the columns after owner, in order), as hooks report it;
** mass is read-only in queries (bit 0): the checked add writes it. */
static const ecs_field_def pm_fields[PM_COLS] = {
  {"mass", ECS_F32}, {"x", ECS_F32},  {"y", ECS_F32},  {"z", ECS_F32},
  {"vx", ECS_F32},   {"vy", ECS_F32}, {"vz", ECS_F32}, {"ax", ECS_F32},
  {"ay", ECS_F32},   {"az", ECS_F32},
};
#define PM_READONLY (UINT64_C(1) << MASS)

/* ------------------------------------------------------------------------
** The manager (no Lua here)
** --------------------------------------------------------------------- */

static void *pm_alloc(ecs_world *w, void *p, size_t osize, size_t nsize) {
  void *ud;
  ecs_alloc_fn f = ecs_world_allocator(w, &ud);
  return f(ud, p, osize, nsize);
}

/* Column k (valid until the next add: the block may move). */
static float *col(const pointmass *pm, int k) {
  return (float *)ecs_component_column(pm->c, (uint32_t)k);
}
static ecs_entity *owners(const pointmass *pm) {
  return ecs_owned_owners(pm->c);
}

/* A bulk write (q:apply, expression and C systems, q:columns) stored
** rows: an acceleration must stay finite (pm_check), so NaN becomes 0
** and an infinity the largest float of its sign, as the transform cleans
** its columns; positions and velocities are taken as they are, as
** simulate leaves them. Mass is read-only there. */
static float finite_or_clamped(float v) {
  if (v != v) return 0.0f;
  if (v > FLT_MAX) return FLT_MAX;
  if (v < -FLT_MAX) return -FLT_MAX;
  return v;
}

static void pm_written(ecs_world *w, void *ud, ecs_component *c,
                       const uint32_t *rows, uint32_t first, size_t n) {
  pointmass *pm = (pointmass *)ud;
  (void)w;
  (void)c;
  for (int k = AX; k <= AZ; k++) {
    float *a = col(pm, k);
    for (size_t j = 0; j < n; j++) {
      uint32_t i = rows != NULL ? rows[j] : first + (uint32_t)j;
      a[i] = finite_or_clamped(a[i]);
    }
  }
}

static const ecs_owner pm_owner = {pm_written};

static ecs_err pm_columns_new(ecs_world *w, pointmass *pm) {
  return ecs_owned_new(w, PM_NAME, pm_fields, PM_COLS, PM_READONLY, &pm_owner,
                       pm, &pm->c);
}

/* The instance of the live entity e, or NONE. */
static uint32_t pm_lookup(const ecs_world *w, const pointmass *pm, ecs_entity e) {
  ecs_instance i = ecs_component_lookup(w, pm->c, e);
  return i == ECS_NO_INSTANCE ? NONE : i;
}

/* Swap-remove instance i: the last one moves into i. */
static void pm_remove_at(ecs_world *w, pointmass *pm, uint32_t i) {
  ecs_owned_remove_at(w, pm->c, i);
  pm->size--;
}

/* e must be alive and have no point mass; a dead record at e's index (a
** former entity's, or purged) goes first. Every field starts at 0. All
** or nothing. */
static ecs_err pm_add(ecs_world *w, pointmass *pm, ecs_entity e, uint32_t *out) {
  uint32_t index = ecs_entity_index(e);
  uint32_t dead = ecs_owned_find(pm->c, index);
  ecs_err err = ecs_owned_reserve(w, pm->c, pm->size + 1u, index);
  if (err != ECS_ERR_OK) return err;
  if (dead != ECS_NO_INSTANCE) pm_remove_at(w, pm, dead);
  *out = ecs_owned_append(w, pm->c, e);
  pm->size++;
  return ECS_ERR_OK;
}

/* Stamp rows first .. first + n as written now (change queries). */
static void pm_stamp(const ecs_world *w, pointmass *pm, uint32_t first,
                     uint32_t n) {
  uint32_t now, *at = ecs_owned_changed(w, pm->c, &now);
  if (at != NULL)
    for (uint32_t i = first; i < first + n; i++) at[i] = now;
}

/* The per-frame update: one loop over plain float arrays. A write: the
** rows count as changed for change queries. */
static void pm_simulate(const ecs_world *w, pointmass *pm, float dt) {
  float *px = col(pm, PX), *py = col(pm, PY), *pz = col(pm, PZ);
  float *vx = col(pm, VX), *vy = col(pm, VY), *vz = col(pm, VZ);
  const float *ax = col(pm, AX), *ay = col(pm, AY), *az = col(pm, AZ);
  for (uint32_t i = 0, n = pm->size; i < n; i++) {
    vx[i] += ax[i] * dt;
    vy[i] += ay[i] * dt;
    vz[i] += az[i] * dt;
    px[i] += vx[i] * dt;
    py[i] += vy[i] * dt;
    pz[i] += vz[i] * dt;
  }
  pm_stamp(w, pm, 0, pm->size);
}

/* Values the checked add and setters could have written. */
static bool valid_mass(float m) { return m > 0.0f && m <= FLT_MAX; }
static bool finite3(const float *a) {
  return fabsf(a[0]) <= FLT_MAX && fabsf(a[1]) <= FLT_MAX &&
         fabsf(a[2]) <= FLT_MAX;
}

/* The records as the core's lazy gc sees them: owners, swap-remove. */
static ecs_entity gc_owner(const void *self, uint32_t i) {
  return owners((const pointmass *)self)[i];
}
static void gc_drop(ecs_world *w, void *self, uint32_t i) {
  pm_remove_at(w, (pointmass *)self, i);
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
  (void)w;
  ecs_owned_purge(((pointmass *)self)->c, index);
}

static const char *pm_check(const ecs_world *w, const void *self) {
  const pointmass *pm = (const pointmass *)self;
  const ecs_entity *own = owners(pm);
  const char *err;
  if (pm->size != ecs_component_size(pm->c))
    return "pointmass: size disagrees with its component";
  const float *m = col(pm, MASS), *ax = col(pm, AX), *ay = col(pm, AY);
  const float *az = col(pm, AZ);
  for (uint32_t i = 0; i < pm->size; i++) {
    float a[3] = {ax[i], ay[i], az[i]};
    if (!ecs_record_valid(w, own[i]))
      return "pointmass: record outlived its generation (wrap)";
    if (!valid_mass(m[i]) || !finite3(a))
      return "pointmass: mass not positive and finite, or acceleration not finite";
  }
  /* the component's own invariants: the map and the owners agree */
  if ((err = ecs_owned_check(w, pm->c, own, pm->size)) != NULL) return err;
  return NULL;
}

static void pm_free(ecs_world *w, void *self) {
  pointmass *pm = (pointmass *)self;
  ecs_owned_free(w, pm->c);
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
  pointmass *pm = (pointmass *)self;
  ecs_owned_clear(w, pm->c);
  pm->size = pm->gc_cursor = 0;
}

static void pm_stats(const ecs_world *w, const void *self,
                     ecs_manager_stats *out) {
  const pointmass *pm = (const pointmass *)self;
  const ecs_entity *own = owners(pm);
  out->records = pm->size;
  out->live = 0;
  for (uint32_t i = 0; i < pm->size; i++) out->live += ecs_alive(w, own[i]);
  out->bytes = sizeof *pm + ecs_owned_bytes(w, pm->c);
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
  const ecs_entity *own = owners(pm);
  uint32_t n = 0;
  ecs_err err;
  for (uint32_t i = 0; i < pm->size; i++) n += ecs_alive(w, own[i]);
  if ((err = ecs_write_u32(out, n)) != ECS_ERR_OK) return err;
  for (uint32_t i = 0; i < pm->size; i++) {
    unsigned char rec[PM_SAVED];
    if (!ecs_alive(w, own[i])) continue;
    memcpy(rec, &own[i], sizeof(uint32_t));
    for (int k = 0; k < PM_COLS; k++)
      memcpy(rec + sizeof(uint32_t) + (size_t)k * sizeof(float),
             &col(pm, k)[i], sizeof(float));
    if ((err = ecs_write(out, rec, sizeof rec)) != ECS_ERR_OK) return err;
  }
  return ECS_ERR_OK;
}

/*
** Read every record into a fresh component, checking as it goes (the
** count against the bytes left before anything is allocated; then per
** record: entity alive, not seen before, mass positive and finite,
** acceleration finite), and only then give its rows to the manager's own
** component (the one queries watch; a twin's: the one of the manager it
** stands in for, at the swap), so any failure (bad data or out of
** memory) leaves the manager and the reader as they were. Peak memory:
** both for a moment.
*/
static ecs_err pm_load(ecs_world *w, void *self, ecs_reader *in) {
  pointmass *pm = (pointmass *)self, fresh;
  ecs_reader r = *in;
  uint32_t n;
  ecs_err err;
  memset(&fresh, 0, sizeof fresh);
  if ((err = ecs_read_u32(&r, &n)) != ECS_ERR_OK) return err;
  if (n > (r.size - r.pos) / PM_SAVED) return ECS_ERR_CORRUPT; /* truncated */
  if ((err = pm_columns_new(w, &fresh)) != ECS_ERR_OK) return err;
  if (n > 0) err = ecs_owned_reserve(w, fresh.c, n, UINT32_MAX);
  for (uint32_t k = 0; k < n && err == ECS_ERR_OK; k++) {
    unsigned char rec[PM_SAVED];
    float v[PM_COLS];
    ecs_entity e;
    uint32_t i;
    if ((err = ecs_read(&r, rec, sizeof rec)) != ECS_ERR_OK) break;
    memcpy(&e, rec, sizeof e);
    memcpy(v, rec + sizeof(uint32_t), sizeof v);
    if (!ecs_alive(w, e) ||
        ecs_owned_find(fresh.c, ecs_entity_index(e)) != ECS_NO_INSTANCE ||
        !valid_mass(v[MASS]) || !finite3(v + AX)) {
      err = ECS_ERR_CORRUPT; /* dead or forged entity, a repeat, bad values */
      break;
    }
    err = ecs_owned_reserve(w, fresh.c, k + 1u, ecs_entity_index(e));
    if (err != ECS_ERR_OK) break;
    i = ecs_owned_append(w, fresh.c, e);
    for (int c = 0; c < PM_COLS; c++) col(&fresh, c)[i] = v[c];
    fresh.size = k + 1u;
  }
  if (err == ECS_ERR_OK)
    err = ecs_owned_take_prepare(w, pm->of != NULL ? pm->of->c : pm->c, fresh.c);
  if (err != ECS_ERR_OK) {
    ecs_owned_free(w, fresh.c);
    return err;
  }
  ecs_owned_take(w, pm->c, fresh.c);
  ecs_owned_free(w, fresh.c);
  pm->size = fresh.size;
  pm->gc_cursor = 0;
  in->pos = r.pos;
  return ECS_ERR_OK;
}

/* Staged loads (snapshots): an empty manager to load into, then a trade
** of records with the registered one; each keeps its component object
** (queries watch the registered one's) and takes the other's rows. */
static void *pm_twin(ecs_world *w, const void *self) {
  pointmass *t = (pointmass *)pm_alloc(w, NULL, 0, sizeof *t);
  if (t == NULL) return NULL;
  memset(t, 0, sizeof *t);
  t->of = (const pointmass *)self;
  if (pm_columns_new(w, t) != ECS_ERR_OK) {
    pm_alloc(w, t, sizeof *t, 0);
    return NULL;
  }
  return t;
}

static void pm_swap(ecs_world *w, void *self, void *twin) {
  pointmass *a = (pointmass *)self, *b = (pointmass *)twin;
  uint32_t size = a->size;
  ecs_owned_take(w, a->c, b->c); /* the twin's load reserved what a needs */
  a->size = b->size;
  b->size = size;
  a->gc_cursor = b->gc_cursor = 0;
  a->of = b->of = NULL;
}

/* The manager as a query term: its records' component. */
static ecs_component *pm_columns(const ecs_world *w, void *self) {
  (void)w;
  return ((pointmass *)self)->c;
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
  .columns = pm_columns,
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
  col(pm, MASS)[i] = mass;
  for (int k = 0; k < 6; k++) col(pm, PX + k)[i] = v[k];
  col(pm, AX)[i] = col(pm, AY)[i] = col(pm, AZ)[i] = 0.0f;
  if (ev == ECS_EVENT_SET) pm_stamp(w, pm, i, 1); /* an add stamps itself */
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
  for (int k = 0; k < 3; k++) lua_pushnumber(L, (lua_Number)col(pm, col0 + k)[i]);
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
  for (int k = 0; k < 3; k++) col(pm, col0 + k)[i] = v[k];
  pm_stamp(w, pm, i, 1); /* a write: change queries see it */
  /* last, with the handle: the listeners may move the record */
  err = ecs_manager_notify(w, pm, owners(pm)[i], ECS_EVENT_SET);
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
  lua_pushnumber(L, (lua_Number)col(pm, MASS)[i]);
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
  if ((i = pm_lookup(w, pm, e)) != NONE) pm_remove_at(w, pm, i);
  if (err != ECS_ERR_OK) return ecs_lua_error(L, "pointmass:remove", err);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_pm_count(lua_State *L) {
  ecs_world *w;
  pointmass *pm = check_pm(L, &w);
  lua_Integer n = 0;
  for (uint32_t i = 0; i < pm->size; i++) n += ecs_alive(w, owners(pm)[i]);
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
  pm_simulate(w, pm, check_float(L, 2));
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
  void *dst[3];
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
    dst[k] = ecs_component_column(c, (uint32_t)f[k]);
  }
  for (uint32_t base = 0; base < pm->size; base += 256) {
    uint32_t n = pm->size - base < 256 ? pm->size - base : 256;
    ecs_component_lookup_n(w, c, owners(pm) + base, inst, n);
    for (uint32_t j = 0; j < n; j++) {
      if (inst[j] == ECS_NO_INSTANCE) continue; /* dead, or no component */
      /* a write like any other: an open journal keeps the old values
      ** first, change queries see it after */
      ecs_component_write_begin(w, c, NULL, inst[j], 1);
      for (int k = 0; k < 3; k++)
        if (f[k] >= 0) put(dst[k], type[k], inst[j], col(pm, PX + k)[base + j]);
      ecs_component_write_end(w, c, NULL, inst[j], 1);
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
    if ((err = pm_columns_new(w, pm)) != ECS_ERR_OK) pm_alloc(w, pm, sizeof *pm, 0);
    else err = ecs_manager_register(w, PM_NAME, &pm_class, pm); /* frees pm on error */
  }
  if (err != ECS_ERR_OK) {
    ecs_lua_plugin_detach(L, 1, PM_CLASS);
    return ecs_lua_error(L, "pointmass.new", err);
  }
  o->pm = pm;
  ecs_lua_plugin_manager(L, -1, pm); /* a query term (pm_class.columns) */
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
