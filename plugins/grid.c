/*
** grid.c -- a C plugin: a uniform-grid broad phase over two component
** managers' columns (require("ecs.grid")).
**
**   local grid = require("ecs.grid")
**   local g = grid.new(cell, width, height)  -- cells of cell x cell over
**                                            -- [0, width) x [0, height)
**   g:build(Position, Collider)   --> n   -- bin every live entity having
**                                         -- both: Position.x, .y and
**                                         -- Collider.r, .layer, .mask
**   g:pairs([as [, bs]])          --> n, as, bs   -- overlapping pairs
**   g:nearest(x, y, radius, layers [, except]) --> e, distance  (or nil)
**   g:count() --> n               g:size() --> columns, rows, cell
**
** A pair (a, b) is reported when a's mask has a bit of b's layer and the
** circles (x, y, r) overlap: "a sees b". Colliders with mask 0 are passive
** (the many asteroids of the demo), so the cost of pairs() is carried by
** the few active ones. When both see each other the pair comes twice, once
** each way. Everything answers from the last build(): entities destroyed
** since then are still reported (check world:alive).
**
** Sizes: at least one cell a side (a cell wider than the area is one
** cell), at most GRID_MAX_CELLS in all, else grid.new raises. Numbers:
** stored positions and radii are clamped to 1e30 (then f32); a NaN
** position is nowhere (in no pair, never nearest), a NaN or negative
** radius counts as 0; nearest's radius may be inf, not NaN.
**
** Positions outside [0, width) x [0, height) are clamped into the border
** cells, which keeps every answer exact (clamping never moves two points
** further apart in cells than their distance allows). Colliders larger
** than half a cell (radius > cell / 2) are not binned but kept in a short
** list that every search also scans, so a few big ones (a station, a
** monolith) do not widen the search of the many small ones: a small
** active collider looks at 3 x 3 cells. Results come in a fixed order
** (cells in row order, inside a cell the order of the Collider's
** instances, then the big ones), so a simulation using them is
** deterministic.
**
** Memory: the grid object is a full userdata; its arrays are userdata held
** as its user values, so Lua's allocator and collector own everything and
** an error at any point leaks nothing.
**
** Reading columns: through component.h (ecs_component_column, the owner
** column, ecs_component_lookup_n to join Collider rows to Position rows
** 256 at a time) on managers passed from Lua (ecs_lua_check_component).
*/
#include <float.h>
#include <math.h>
#include <string.h>

#include "ecs_plugin.h"

#define GRID_CLASS "ecs.Grid"
#define GRID_MAX_CELLS (1u << 24)
#define GRID_CHUNK 256u

/* One binned collider. */
typedef struct grid_item {
  float x, y, r;
  uint32_t layer, mask;
  uint32_t cell;
  ecs_entity e;
} grid_item;

typedef struct grid {
  double cell;            /* cell side */
  uint32_t cols, rows;    /* cells across, down */
  uint32_t n, cap;        /* items binned, room in the item arrays */
  uint32_t nsmall;        /* item[0, nsmall) binned in cells, the rest big */
  float rmax;             /* largest radius binned in cells (<= cell / 2) */
  uint32_t *start;        /* cols*rows + 1 offsets into item (user value 1) */
  grid_item *item;        /* nsmall items sorted by cell, then the big ones
                             in instance order (user value 2) */
  grid_item *tmp;         /* n items in instance order (user value 3) */
} grid;

enum { UV_START = 1, UV_ITEM, UV_TMP, UV_COUNT = UV_TMP };

static grid *check_grid(lua_State *L) {
  return (grid *)ecs_lua_plugin_check(L, 1, GRID_CLASS, NULL);
}

/* ------------------------------------------------------------------------
** Reading numeric fields of any type
** --------------------------------------------------------------------- */

/* The low bits of integer field values (the value layer's scalars), as
** the field's own width holds them: an i8 of -1 is 0xff. */
static uint32_t bits_of(ecs_scalar v, ecs_type t) {
  size_t size = ecs_type_size(t);
  uint64_t u = (uint64_t)v.i;
  return size >= 4 ? (uint32_t)u : (uint32_t)(u & ((1u << (size * 8u)) - 1u));
}

/* v as a float, magnitudes clamped to 1e30 (NaN stays NaN). */
static float to_float(double v) {
  if (v > 1e30) return 1e30f;
  if (v < -1e30) return -1e30f;
  return (float)v;
}

static int is_float(ecs_type t) { return t == ECS_F32 || t == ECS_F64; }
static int is_int(ecs_type t) {
  return t == ECS_I8 || t == ECS_I16 || t == ECS_I32 || t == ECS_I64 ||
         t == ECS_U8 || t == ECS_U16 || t == ECS_U32;
}

/*
** The field named name of c, which must pass ok(type); else an argument
** error at arg naming the field.
*/
static uint32_t need_field(lua_State *L, int arg, ecs_component *c,
                           const char *name, int (*ok)(ecs_type),
                           const char *what) {
  int f = ecs_component_field_index(c, name, strlen(name));
  if (f < 0 || !ok(ecs_component_field(c, (uint32_t)f)->type))
    luaL_argerror(L, arg, lua_pushfstring(L, "needs a field '%s' of %s type",
                                          name, what));
  return (uint32_t)f;
}

/* ------------------------------------------------------------------------
** Cells
** --------------------------------------------------------------------- */

/* The cell coordinate of v along an axis of n cells (clamped; NaN -> 0). */
static uint32_t axis_cell(const grid *g, double v, uint32_t n) {
  double c = floor(v / g->cell);
  if (!(c > 0.0)) return 0;
  if (c >= (double)(n - 1)) return n - 1;
  return (uint32_t)c;
}

/* How many cells a distance d spans, at most n. */
static uint32_t reach(const grid *g, double d, uint32_t n) {
  double k = ceil(d / g->cell);
  if (!(k > 0.0)) return 0;
  if (k >= (double)n) return n;
  return (uint32_t)k;
}

/* A user value of nbytes (replacing the old one), or a memory error. */
static void *new_block(lua_State *L, int uv, size_t nbytes) {
  void *p = lua_newuserdatauv(L, nbytes ? nbytes : 1, 0);
  lua_setiuservalue(L, 1, uv);
  return p;
}

/* ------------------------------------------------------------------------
** Methods
** --------------------------------------------------------------------- */

/* grid.new(cell, width, height) -> a grid */
static int l_grid_new(lua_State *L) {
  lua_Number cell = luaL_checknumber(L, 1);
  lua_Number width = luaL_checknumber(L, 2);
  lua_Number height = luaL_checknumber(L, 3);
  double cols, rows;
  grid *g;
  luaL_argcheck(L, cell > 0.0 && cell <= DBL_MAX, 1, "cell size must be positive and finite");
  luaL_argcheck(L, width > 0.0 && width <= DBL_MAX, 2, "width must be positive and finite");
  luaL_argcheck(L, height > 0.0 && height <= DBL_MAX, 3, "height must be positive and finite");
  /*
  ** The derived sizes are what must be valid: width / cell underflows to
  ** 0 when the cell dwarfs the extent (1e300 over 1e-30: one cell, not
  ** none) and overflows to inf when it is tiny; at least one cell a side,
  ** at most GRID_MAX_CELLS in all (NaN or inf fail the test), so the casts
  ** below and cols * rows in uint32_t are exact.
  */
  cols = ceil(width / cell);
  rows = ceil(height / cell);
  if (cols < 1.0) cols = 1.0;
  if (rows < 1.0) rows = 1.0;
  if (!(cols * rows <= (double)GRID_MAX_CELLS))
    return luaL_error(L, "grid.new: too many cells (%f x %f, limit %d)",
                      cols, rows, (int)GRID_MAX_CELLS);
  lua_settop(L, 0);
  g = (grid *)ecs_lua_object_new(L, GRID_CLASS, sizeof *g, UV_COUNT);
  g->cell = cell;
  g->cols = (uint32_t)cols;
  g->rows = (uint32_t)rows;
  g->start = (uint32_t *)new_block(L, UV_START,
                                   ((size_t)g->cols * g->rows + 1) * sizeof(uint32_t));
  memset(g->start, 0, ((size_t)g->cols * g->rows + 1) * sizeof(uint32_t));
  return 1;
}

/*
** g:build(Position, Collider) -> number of entities binned
** Collider drives: every instance whose owner is alive and has a Position.
** Fails before changing the grid (type errors, other world, memory).
*/
static int l_grid_build(lua_State *L) {
  grid *g = check_grid(L);
  ecs_world *w, *w2;
  ecs_component *pos = ecs_lua_check_component(L, 2, &w);
  ecs_component *col = ecs_lua_check_component(L, 3, &w2);
  uint32_t fx, fy, fr, fl, fm, size, n = 0, ncells = g->cols * g->rows;
  const void *cx, *cy, *cr, *cl, *cm;
  ecs_type tx, ty, tr, tl, tm;
  const ecs_entity *owner;
  ecs_instance inst[GRID_CHUNK];
  double vx[GRID_CHUNK], vy[GRID_CHUNK], vr[GRID_CHUNK];
  ecs_scalar vl[GRID_CHUNK], vm[GRID_CHUNK];
  float rmax = 0.0f, half = to_float(g->cell / 2); /* cell may exceed FLT_MAX */
  uint32_t nsmall = 0, nbig = 0;
  void *busy;
  luaL_argcheck(L, w == w2, 3, "component of another world");
  luaL_argcheck(L, pos != col, 3, "must differ from the position component");
  fx = need_field(L, 2, pos, "x", is_float, "f32 or f64");
  fy = need_field(L, 2, pos, "y", is_float, "f32 or f64");
  fr = need_field(L, 3, col, "r", is_float, "f32 or f64");
  fl = need_field(L, 3, col, "layer", is_int, "integer");
  fm = need_field(L, 3, col, "mask", is_int, "integer");
  /* the allocations below may run a finalizer that closes the world:
  ** count this call as in progress on it, so pos and col stay valid */
  busy = ecs_lua_enter(L, 2);
  size = ecs_component_size(col);
  if (size > g->cap) { /* may raise: nothing changed yet */
    uint32_t cap = g->cap ? g->cap : 256u;
    while (cap < size) cap = cap > UINT32_MAX / 2 ? size : cap * 2;
    g->n = g->nsmall = 0; /* the old arrays go: an error below leaves an empty grid */
    g->item = (grid_item *)new_block(L, UV_ITEM, (size_t)cap * sizeof(grid_item));
    g->tmp = (grid_item *)new_block(L, UV_TMP, (size_t)cap * sizeof(grid_item));
    g->cap = cap;
  }
  if (size == 0 || ecs_component_size(pos) == 0) {
    g->n = g->nsmall = 0;
    g->rmax = 0.0f;
    memset(g->start, 0, ((size_t)ncells + 1) * sizeof(uint32_t));
    ecs_lua_leave(busy);
    lua_pushinteger(L, 0);
    return 1;
  }
  tx = ecs_component_field(pos, fx)->type; cx = ecs_component_column(pos, fx);
  ty = ecs_component_field(pos, fy)->type; cy = ecs_component_column(pos, fy);
  tr = ecs_component_field(col, fr)->type; cr = ecs_component_column(col, fr);
  tl = ecs_component_field(col, fl)->type; cl = ecs_component_column(col, fl);
  tm = ecs_component_field(col, fm)->type; cm = ecs_component_column(col, fm);
  owner = ecs_component_entities(col);
  /* gather, in instance order; count per cell */
  memset(g->start, 0, ((size_t)ncells + 1) * sizeof(uint32_t));
  for (uint32_t base = 0; base < size; base += GRID_CHUNK) {
    uint32_t m = size - base < GRID_CHUNK ? size - base : GRID_CHUNK;
    uint32_t live = 0, crow[GRID_CHUNK];
    ecs_component_lookup_n(w, pos, owner + base, inst, m);
    /* the rows of this chunk's live instances, then their fields read a
    ** column at a time through the value layer (any numeric type) */
    for (uint32_t j = 0; j < m; j++)
      if (inst[j] != ECS_NO_INSTANCE) { /* else dead, or no Position */
        inst[live] = inst[j];
        crow[live++] = base + j;
      }
    ecs_value_load_f64(vx, cx, tx, inst, live, false);
    ecs_value_load_f64(vy, cy, ty, inst, live, false);
    ecs_value_load_f64(vr, cr, tr, crow, live, false);
    ecs_value_load_rows(vl, cl, tl, crow, live, false);
    ecs_value_load_rows(vm, cm, tm, crow, live, false);
    for (uint32_t j = 0; j < live; j++) {
      grid_item *it = &g->tmp[n++];
      it->e = owner[crow[j]];
      it->x = to_float(vx[j]);
      it->y = to_float(vy[j]);
      it->r = vr[j] >= 0.0 ? to_float(vr[j]) : 0.0f; /* NaN -> 0 */
      it->layer = bits_of(vl[j], tl);
      it->mask = bits_of(vm[j], tm);
      it->cell = axis_cell(g, (double)it->y, g->rows) * g->cols +
                 axis_cell(g, (double)it->x, g->cols);
      if (it->r > half) continue; /* big: not binned */
      if (it->r > rmax) rmax = it->r;
      g->start[it->cell + 1]++;
      nsmall++;
    }
  }
  /* counting sort into item[] */
  for (uint32_t c = 0; c < ncells; c++) g->start[c + 1] += g->start[c];
  for (uint32_t k = 0; k < n; k++) {
    /* start[c] is used as the fill cursor and restored below */
    if (g->tmp[k].r > half) g->item[nsmall + nbig++] = g->tmp[k];
    else g->item[g->start[g->tmp[k].cell]++] = g->tmp[k];
  }
  for (uint32_t c = ncells; c > 0; c--) g->start[c] = g->start[c - 1];
  g->start[0] = 0;
  g->n = n;
  g->nsmall = nsmall;
  g->rmax = rmax;
  ecs_lua_leave(busy);
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

/* The table at idx, or a new one if none was given; left at idx. */
static void out_table(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) {
    lua_newtable(L);
    lua_replace(L, idx);
  } else {
    luaL_checktype(L, idx, LUA_TTABLE);
  }
}

/* If a sees b, store the pair at k + 1 of the tables at 2 and 3. */
static lua_Integer overlap(lua_State *L, const grid_item *a,
                           const grid_item *b, lua_Integer k) {
  double dx, dy, rr;
  if ((a->mask & b->layer) == 0) return k;
  dx = (double)b->x - (double)a->x;
  dy = (double)b->y - (double)a->y;
  rr = (double)a->r + (double)b->r;
  if (!(dx * dx + dy * dy <= rr * rr)) return k; /* a NaN position is nowhere */
  k++;
  ecs_lua_push_entity(L, a->e);
  lua_rawseti(L, 2, k);
  ecs_lua_push_entity(L, b->e);
  lua_rawseti(L, 3, k);
  return k;
}

/*
** g:pairs([as [, bs]]) -> n, as, bs
** as[k] sees bs[k] for k = 1..n (entries past n are left as they were).
*/
static int l_grid_pairs(lua_State *L) {
  grid *g = check_grid(L);
  lua_Integer k = 0;
  lua_settop(L, 3);
  out_table(L, 2);
  out_table(L, 3);
  for (uint32_t i = 0; i < g->n; i++) {
    const grid_item *a = &g->item[i];
    uint32_t acx, acy, rx, ry, x0, x1, y0, y1;
    if (a->mask == 0) continue;
    acx = a->cell % g->cols;
    acy = a->cell / g->cols;
    rx = reach(g, (double)a->r + (double)g->rmax, g->cols);
    ry = reach(g, (double)a->r + (double)g->rmax, g->rows);
    x0 = acx > rx ? acx - rx : 0;
    x1 = g->cols - 1 - acx > rx ? acx + rx : g->cols - 1;
    y0 = acy > ry ? acy - ry : 0;
    y1 = g->rows - 1 - acy > ry ? acy + ry : g->rows - 1;
    if (y1 - y0 >= g->n) { /* more rows than items: scan the items (same order) */
      for (uint32_t j = 0; j < g->n; j++)
        if (j != i) k = overlap(L, a, &g->item[j], k);
      continue;
    }
    for (uint32_t y = y0; y <= y1; y++) {
      uint32_t j = g->start[y * g->cols + x0], je = g->start[y * g->cols + x1 + 1];
      for (; j < je; j++) /* the cells of a row are contiguous */
        if (j != i) k = overlap(L, a, &g->item[j], k);
    }
    for (uint32_t j = g->nsmall; j < g->n; j++)
      if (j != i) k = overlap(L, a, &g->item[j], k);
  }
  lua_pushinteger(L, k);
  lua_rotate(L, 2, 1); /* n, as, bs */
  return 3;
}

/* A nearest search: the query and the best so far. */
typedef struct near_query {
  double x, y;
  lua_Integer layers;
  ecs_entity except;
  int far;          /* compare distances (hypot), not their squares */
  double bestk;     /* best key so far (squared distance, or distance) */
  uint32_t best;    /* its item, UINT32_MAX for none */
} near_query;

/* Consider items [j, je) in order. */
static void near_scan(const grid *g, near_query *q, uint32_t j, uint32_t je) {
  for (; j < je; j++) {
    const grid_item *b = &g->item[j];
    double dx, dy, key;
    if (((lua_Integer)b->layer & q->layers) == 0 || b->e == q->except) continue;
    dx = (double)b->x - q->x;
    dy = (double)b->y - q->y;
    key = q->far ? hypot(dx, dy) : dx * dx + dy * dy;
    if (key < q->bestk || (key == q->bestk && q->best == UINT32_MAX)) {
      q->bestk = key;
      q->best = j;
    }
  }
}

/*
** g:nearest(x, y, radius, layers [, except]) -> e, distance (or nil)
** The binned entity nearest to (x, y) whose layer has a bit of layers and
** whose centre is within radius; except (an entity) is skipped. Ties go to
** the first in the grid's order. radius may be math.huge (anywhere), not
** NaN; a NaN x or y is nowhere: nil.
*/
static int l_grid_nearest(lua_State *L) {
  grid *g = check_grid(L);
  lua_Number x = luaL_checknumber(L, 2), y = luaL_checknumber(L, 3);
  lua_Number radius = luaL_checknumber(L, 4);
  lua_Integer layers = luaL_checkinteger(L, 5);
  ecs_entity except = lua_isnoneornil(L, 6) ? ECS_NULL : ecs_lua_check_entity(L, 6);
  uint32_t cx, cy, rx, ry, x0, x1, y0, y1;
  near_query q;
  luaL_argcheck(L, radius == radius, 4, "radius must be a number >= 0, got NaN");
  luaL_argcheck(L, radius >= 0.0, 4, "radius must not be negative");
  if (g->n == 0 || x != x || y != y) return 0;
  q.x = x;
  q.y = y;
  q.layers = layers;
  q.except = except;
  /* binned positions are within 1e30 of the origin, so squared distances
  ** overflow only for a query beyond 1e150: compare distances there */
  q.far = !(fabs(x) < 1e150 && fabs(y) < 1e150);
  q.bestk = q.far ? radius : radius * radius;
  q.best = UINT32_MAX;
  cx = axis_cell(g, x, g->cols);
  cy = axis_cell(g, y, g->rows);
  rx = reach(g, radius, g->cols);
  ry = reach(g, radius, g->rows);
  x0 = cx > rx ? cx - rx : 0;
  x1 = g->cols - 1 - cx > rx ? cx + rx : g->cols - 1;
  y0 = cy > ry ? cy - ry : 0;
  y1 = g->rows - 1 - cy > ry ? cy + ry : g->rows - 1;
  if (y1 - y0 >= g->n) { /* more rows than items: scan the items (same order) */
    near_scan(g, &q, 0, g->n);
  } else {
    for (uint32_t yy = y0; yy <= y1; yy++) /* the cells of a row are contiguous */
      near_scan(g, &q, g->start[yy * g->cols + x0], g->start[yy * g->cols + x1 + 1]);
    near_scan(g, &q, g->nsmall, g->n); /* the big colliders */
  }
  if (q.best == UINT32_MAX) return 0;
  ecs_lua_push_entity(L, g->item[q.best].e);
  lua_pushnumber(L, q.far ? q.bestk : sqrt(q.bestk));
  return 2;
}

static int l_grid_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_grid(L)->n);
  return 1;
}

static int l_grid_size(lua_State *L) {
  grid *g = check_grid(L);
  lua_pushinteger(L, (lua_Integer)g->cols);
  lua_pushinteger(L, (lua_Integer)g->rows);
  lua_pushnumber(L, g->cell);
  return 3;
}

static const luaL_Reg grid_methods[] = {
  {"build", l_grid_build}, {"pairs", l_grid_pairs},
  {"nearest", l_grid_nearest}, {"count", l_grid_count},
  {"size", l_grid_size}, {NULL, NULL}
};

int luaopen_ecs_grid(lua_State *L);

int luaopen_ecs_grid(lua_State *L) {
  ECS_PLUGIN_INIT(L);
  ecs_lua_plugin_class(L, GRID_CLASS, grid_methods);
  lua_newtable(L);
  lua_pushcfunction(L, l_grid_new);
  lua_setfield(L, -2, "new");
  return 1;
}
