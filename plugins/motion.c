/*
** motion.c -- a C plugin of native systems (require("ecs.motion")).
**
**   local motion = require("ecs.motion")
**   local integrate = motion.integrate("Position.x", "Velocity.dx:in",
**                                      "Position.y", "Velocity.dy:in")
**   world:system("move", world:query(Position, Velocity), integrate)
**   movers:run(integrate, dt)                   -- or once, by hand
**
** integrate(target, rate, ...) takes pairs of column specs and, for every
** match, adds rate * dt to target. Columns may be of any numeric type
** (integers truncate); the common f32/f32 case is a plain loop the
** compiler vectorises. damp(spec, factor) scales a column by
** 1 - (1 - factor) * dt: factor is what is left after one second.
** Columns that are not numbers (entity fields) are left alone. Targets
** are written, so they may not be read-only: integrate("Position.x:in",
** ...) and damp("Velocity.dy:in", ...) are errors. Rates are only read:
** give them ":in" (or not; a writable column the system leaves alone is
** written back unchanged).
**
** This is the whole glue a native system needs: a function of the view
** (query.h) and ecs_lua_push_native (ecs_lua.h). Both systems compute
** each row on its own with buffers on the stack, so they declare
** themselves safe on worker threads (ecs_lua_native_parallel): on a world
** with threads their runs over 8192 rows or more are split.
*/
#include <math.h>
#include <string.h>

#include "ecs_plugin.h"

#define MAX_PAIRS 16

/* Rows are processed in pieces through double buffers: the value layer
** loads any numeric column and stores with the saturating rule of
** expressions (integers clamp to their range, NaN stores 0). */
#define PIECE 256u

static void integrate(ecs_world *w, const ecs_view *v, void *ud) {
  (void)w;
  (void)ud;
  for (uint32_t c = 0; c + 1 < v->ncolumns; c += 2) {
    if (v->out[c] == NULL) continue; /* read-only: the constructors refuse it */
    if (v->type[c] == ECS_F32 && v->type[c + 1] == ECS_F32) {
      float *x = (float *)v->out[c];
      const float *dx = (const float *)v->column[c + 1];
      float dt = (float)v->dt;
      for (uint32_t k = 0; k < v->count; k++) x[k] += dx[k] * dt;
    } else {
      double x[PIECE], dx[PIECE];
      for (uint32_t k = 0; k < v->count; k += PIECE) {
        uint32_t m = v->count - k < PIECE ? v->count - k : PIECE;
        ecs_value_load_f64(x, v->column[c], v->type[c], &k, m, true);
        ecs_value_load_f64(dx, v->column[c + 1], v->type[c + 1], &k, m, true);
        for (uint32_t j = 0; j < m; j++) x[j] += dx[j] * v->dt;
        ecs_value_store_f64(v->out[c], v->type[c], &k, x, m, true);
      }
    }
  }
}

static void damp(ecs_world *w, const ecs_view *v, void *ud) {
  double f = *(const double *)ud, x[PIECE];
  (void)w;
  if (v->out[0] == NULL) return; /* read-only: the constructor refuses it */
  for (uint32_t k = 0; k < v->count; k += PIECE) {
    uint32_t m = v->count - k < PIECE ? v->count - k : PIECE;
    ecs_value_load_f64(x, v->column[0], v->type[0], &k, m, true);
    for (uint32_t j = 0; j < m; j++) x[j] *= 1.0 - (1.0 - f) * v->dt;
    ecs_value_store_f64(v->out[0], v->type[0], &k, x, m, true);
  }
}

/* Refuse a read-only spec ("...:in") as the target of fname. */
static void check_target(lua_State *L, const char *fname, const char *spec) {
  size_t len = strlen(spec);
  if (len > 3 && strcmp(spec + len - 3, ":in") == 0) /* as the binding */
    luaL_error(L, "%s: target '%s' is read-only (:in)", fname, spec);
}

/* motion.integrate(target, rate [, target, rate ...]) -> native system */
static int l_integrate(lua_State *L) {
  const char *spec[2 * MAX_PAIRS];
  int n = lua_gettop(L);
  if (n < 2 || n % 2 != 0 || n > 2 * MAX_PAIRS)
    return luaL_error(L, "motion.integrate: expected 1 to %d pairs of "
                      "column specs, got %d arguments", MAX_PAIRS, n);
  for (int k = 1; k <= n; k++)
    spec[k - 1] = ecs_lua_check_text(L, k, NULL, "motion.integrate");
  for (int k = 0; k < n; k += 2) check_target(L, "motion.integrate", spec[k]);
  ecs_lua_push_native(L, "motion.integrate", integrate, NULL, spec, n);
  ecs_lua_native_parallel(L, -1); /* row by row, stack buffers: worker-safe */
  return 1;
}

/*
** motion.damp(spec, factor) -> native system. The factor lives in a small
** userdata anchored as the native object's user value 3 (free for the
** plugin), so it lives exactly as long as the object.
*/
static int l_damp(lua_State *L) {
  const char *spec = ecs_lua_check_text(L, 1, NULL, "motion.damp");
  lua_Number f = luaL_checknumber(L, 2);
  double *ud;
  luaL_argcheck(L, f >= 0 && f <= 1, 2, "factor must be in [0, 1]");
  check_target(L, "motion.damp", spec);
  ud = (double *)lua_newuserdatauv(L, sizeof *ud, 0);
  *ud = (double)f;
  ecs_lua_push_native(L, "motion.damp", damp, ud, &spec, 1);
  ecs_lua_native_parallel(L, -1);
  lua_insert(L, -2);                                   /* native, ud */
  lua_setiuservalue(L, -2, 3);
  return 1;
}

int luaopen_ecs_motion(lua_State *L);

int luaopen_ecs_motion(lua_State *L) {
  ECS_PLUGIN_INIT(L);
  static const luaL_Reg fns[] = {
    {"integrate", l_integrate}, {"damp", l_damp}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}
