/*
** mesh.c -- a C plugin: a mesh manager where an entity may have several
** instances (Bitsquid part 2's next_instance chaining; require("ecs.mesh")).
**
**   local mesh = require("ecs.mesh")
**   local M = mesh.new(world)           -- one manager per world
**   M:add(e, mesh_id) --> how many meshes e has now (mesh_id: u32 integer)
**   M:meshes(e)       --> { mesh_id, ... } in the order they were added
**   M:remove(e, mesh_id) --> boolean (the first instance with that id)
**   M:remove_all(e)   --> number removed
**   M:has(e)  M:count()  M:size()  M:gc([budget])
**
** Layout: one block of three uint32_t columns -- owner, mesh, next -- and a
** flat entity-index -> first-instance array. An entity's instances form a
** singly linked chain through next (ECS_NO_LINK ends it). Removal swaps the
** last instance into the hole, so whoever linked to the last instance (the
** map, or its predecessor in its own chain) is repointed. All instances of
** a chain share their owner, so a chain left by a dead entity is found
** whole: adding to a newer entity with the same index first drops it.
*/
#include <string.h>

#include "ecs_plugin.h"

#define MESH_CLASS "ecs.Mesh"
#define MESH_NAME "mesh"
#define NO_LINK UINT32_MAX

typedef struct meshes {
  uint32_t size, cap;
  uint32_t *block;     /* owner[cap], mesh[cap], next[cap] */
  uint32_t *map;       /* entity index -> first instance, NO_LINK: none */
  uint32_t map_count;
  uint64_t rng;
} meshes;

#define OWNER(m, i) ((m)->block[(i)])
#define MESH(m, i) ((m)->block[(size_t)(m)->cap + (i)])
#define NEXT(m, i) ((m)->block[2 * (size_t)(m)->cap + (i)])

static void *m_alloc(ecs_world *w, void *p, size_t osize, size_t nsize) {
  void *ud;
  ecs_alloc_fn f = ecs_world_allocator(w, &ud);
  return f(ud, p, osize, nsize);
}

/* Room for one more instance and for e's index in the map. */
static ecs_err m_reserve(ecs_world *w, meshes *m, ecs_entity e) {
  uint32_t index = ecs_entity_index(e);
  if (index >= m->map_count) {
    uint32_t n = m->map_count ? m->map_count : 64u, *p;
    while (n <= index) n *= 2;
    p = (uint32_t *)m_alloc(w, m->map, (size_t)m->map_count * 4u, (size_t)n * 4u);
    if (p == NULL) return ECS_ERR_NOMEM;
    memset(p + m->map_count, 0xff, (size_t)(n - m->map_count) * 4u);
    m->map = p;
    m->map_count = n;
  }
  if (m->size == m->cap) {
    uint32_t ncap = m->cap ? m->cap * 2 : 16u;
    uint32_t *b = (uint32_t *)m_alloc(w, NULL, 0, (size_t)ncap * 12u);
    if (b == NULL) return ECS_ERR_NOMEM;
    for (int c = 0; c < 3 && m->size > 0; c++)
      memcpy(b + (size_t)c * ncap, m->block + (size_t)c * m->cap,
             (size_t)m->size * 4u);
    m_alloc(w, m->block, (size_t)m->cap * 12u, 0);
    m->block = b;
    m->cap = ncap;
  }
  return ECS_ERR_OK;
}

/* The link (map slot or a next cell) that points to instance i. */
static uint32_t *link_to(meshes *m, uint32_t i) {
  uint32_t *l = &m->map[ecs_entity_index(OWNER(m, i))];
  while (*l != i) l = &NEXT(m, *l);
  return l;
}

/* Unlink instance i from its chain, then swap the last instance in. */
static void m_remove_at(meshes *m, uint32_t i) {
  uint32_t last = m->size - 1;
  *link_to(m, i) = NEXT(m, i);
  if (i != last) {
    *link_to(m, last) = i;
    OWNER(m, i) = OWNER(m, last);
    MESH(m, i) = MESH(m, last);
    NEXT(m, i) = NEXT(m, last);
  }
  m->size--;
}

/* Remove every instance of the chain at e's index whose owner is owner. */
static uint32_t m_remove_chain(meshes *m, uint32_t index) {
  uint32_t n = 0;
  if (index >= m->map_count) return 0;
  while (m->map[index] != NO_LINK) {
    m_remove_at(m, m->map[index]);
    n++;
  }
  return n;
}

/* First instance of e, or NO_LINK (also for dead owners). */
static uint32_t m_first(const ecs_world *w, const meshes *m, ecs_entity e) {
  uint32_t index = ecs_entity_index(e), i;
  if (index >= m->map_count || !ecs_alive(w, e)) return NO_LINK;
  i = m->map[index];
  return i != NO_LINK && OWNER(m, i) == e ? i : NO_LINK;
}

/* Append an instance to e's chain (e alive). @return e's instance count. */
static ecs_err m_add(ecs_world *w, meshes *m, ecs_entity e, uint32_t mesh,
                     uint32_t *count) {
  uint32_t index = ecs_entity_index(e), i, *l;
  ecs_err err = m_reserve(w, m, e);
  if (err != ECS_ERR_OK) return err;
  if (m->map[index] != NO_LINK && OWNER(m, m->map[index]) != e)
    m_remove_chain(m, index); /* left by a dead entity with this index */
  *count = 1;
  for (l = &m->map[index]; *l != NO_LINK; l = &NEXT(m, *l)) ++*count;
  i = m->size++;
  OWNER(m, i) = e;
  MESH(m, i) = mesh;
  NEXT(m, i) = NO_LINK;
  *l = i;
  return ECS_ERR_OK;
}

static size_t m_gc(ecs_world *w, void *self, size_t budget) {
  meshes *m = (meshes *)self;
  size_t done = 0;
  if (budget == SIZE_MAX) {
    for (uint32_t i = m->size; i-- > 0;)
      if (i < m->size && !ecs_alive(w, OWNER(m, i))) {
        m_remove_at(m, i);
        done++;
      }
    return done;
  }
  for (unsigned live = 0; live < 4 && done < budget && m->size > 0;) {
    uint32_t i;
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    i = (uint32_t)(((m->rng >> 32) * m->size) >> 32);
    if (ecs_alive(w, OWNER(m, i))) {
      live++;
    } else {
      m_remove_at(m, i);
      done++;
      live = 0;
    }
  }
  return done;
}

/* Every chain is well formed: each instance is reached exactly once, from
** the map slot of its owner's index, through instances of the same owner. */
static const char *m_check(const ecs_world *w, const void *self) {
  const meshes *m = (const meshes *)self;
  uint32_t reached = 0;
  if (m->size > m->cap) return "mesh: size exceeds capacity";
  for (uint32_t x = 0; x < m->map_count; x++) {
    uint32_t steps = 0;
    for (uint32_t i = m->map[x]; i != NO_LINK; i = NEXT(m, i)) {
      if (i >= m->size) return "mesh: link past the instances";
      if (ecs_entity_index(OWNER(m, i)) != x) return "mesh: chain of another index";
      if (OWNER(m, i) != OWNER(m, m->map[x])) return "mesh: chain mixes owners";
      if (!ecs_record_valid(w, OWNER(m, i)))
        return "mesh: record outlived its generation (wrap)";
      if (++steps > m->size) return "mesh: chain loops";
      reached++;
    }
  }
  if (reached != m->size) return "mesh: instances not reachable from the map";
  return NULL;
}

/* The index's generation wrapped: mark its chain's owners purged, so no
** later entity with that index sees these meshes; the chain is dropped
** whole by gc or by the next add at this index. Nothing moves. */
static void m_purge(ecs_world *w, void *self, uint32_t index) {
  meshes *m = (meshes *)self;
  (void)w;
  if (index >= m->map_count) return;
  for (uint32_t i = m->map[index]; i != NO_LINK; i = NEXT(m, i))
    OWNER(m, i) = ecs_mark_purged(OWNER(m, i));
}

static void m_free(ecs_world *w, void *self) {
  meshes *m = (meshes *)self;
  m_alloc(w, m->block, (size_t)m->cap * 12u, 0);
  m_alloc(w, m->map, (size_t)m->map_count * 4u, 0);
  m_alloc(w, m, sizeof *m, 0);
}

static const ecs_manager_class mesh_class = {
  .kind = "mesh",
  .gc = m_gc,
  .check = m_check,
  .free = m_free,
  .purge = m_purge,
};

/* ------------------------------------------------------------------------
** Lua glue
** --------------------------------------------------------------------- */

typedef struct lmesh {
  meshes *m;
} lmesh;

static meshes *check_mesh(lua_State *L, ecs_world **w) {
  return ((lmesh *)ecs_lua_plugin_check(L, 1, MESH_CLASS, w))->m;
}

static uint32_t check_mesh_id(lua_State *L, int idx) {
  lua_Integer id = luaL_checkinteger(L, idx);
  luaL_argcheck(L, id >= 0 && id <= (lua_Integer)UINT32_MAX, idx,
                "mesh id out of range (0 to 4294967295)");
  return (uint32_t)id;
}

/* M:add(e, mesh_id) -> number of meshes e has now */
static int l_mesh_add(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  uint32_t id = check_mesh_id(L, 3), n;
  ecs_err err;
  if (!ecs_alive(w, e)) return ecs_lua_error(L, "mesh:add", ECS_ERR_DEAD);
  if ((err = m_add(w, m, e, id, &n)) != ECS_ERR_OK)
    return ecs_lua_error(L, "mesh:add", err);
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

/* M:meshes(e) -> { mesh_id, ... } (empty for none or a dead entity) */
static int l_mesh_meshes(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  lua_Integer n = 0, len = 0;
  uint32_t i;
  for (i = m_first(w, m, e); i != NO_LINK; i = NEXT(m, i)) len++;
  /* sized up front: the stores below never allocate, so no GC step (and
  ** no finalizer) can change the chain while it is walked */
  lua_createtable(L, (int)len, 0);
  m = check_mesh(L, &w); /* the allocation may have run a finalizer closing the world */
  for (i = m_first(w, m, e); i != NO_LINK && n < len; i = NEXT(m, i)) {
    lua_pushinteger(L, (lua_Integer)MESH(m, i));
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

/* M:remove(e, mesh_id) -> boolean */
static int l_mesh_remove(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  uint32_t id = check_mesh_id(L, 3);
  for (uint32_t i = m_first(w, m, e); i != NO_LINK; i = NEXT(m, i))
    if (MESH(m, i) == id) {
      m_remove_at(m, i);
      lua_pushboolean(L, 1);
      return 1;
    }
  lua_pushboolean(L, 0);
  return 1;
}

/* M:remove_all(e) -> number removed */
static int l_mesh_remove_all(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  ecs_entity e = ecs_lua_check_entity(L, 2);
  uint32_t n = 0;
  if (m_first(w, m, e) != NO_LINK) n = m_remove_chain(m, ecs_entity_index(e));
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

static int l_mesh_has(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  lua_pushboolean(L, m_first(w, m, ecs_lua_check_entity(L, 2)) != NO_LINK);
  return 1;
}

/* M:count() -> instances whose entity is alive */
static int l_mesh_count(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  lua_Integer n = 0;
  for (uint32_t i = 0; i < m->size; i++) n += ecs_alive(w, OWNER(m, i));
  lua_pushinteger(L, n);
  return 1;
}

/* M:size() -> instances stored, dead entities' included */
static int l_mesh_size(lua_State *L) {
  ecs_world *w;
  lua_pushinteger(L, (lua_Integer)check_mesh(L, &w)->size);
  return 1;
}

static int l_mesh_gc(lua_State *L) {
  ecs_world *w;
  meshes *m = check_mesh(L, &w);
  size_t budget = SIZE_MAX;
  if (!lua_isnoneornil(L, 2)) {
    lua_Integer b = luaL_checkinteger(L, 2);
    luaL_argcheck(L, b >= 0, 2, "budget must not be negative");
    budget = (size_t)b;
  }
  lua_pushinteger(L, (lua_Integer)m_gc(w, m, budget));
  return 1;
}

static const luaL_Reg mesh_methods[] = {
  {"add", l_mesh_add}, {"meshes", l_mesh_meshes}, {"remove", l_mesh_remove},
  {"remove_all", l_mesh_remove_all}, {"has", l_mesh_has},
  {"count", l_mesh_count}, {"size", l_mesh_size}, {"gc", l_mesh_gc},
  {NULL, NULL}
};

/* mesh.new(world) -> the world's mesh manager (created once) */
static int l_mesh_new(lua_State *L) {
  ecs_world *w; /* ecs_lua_plugin_get checks the world */
  meshes *m;
  lmesh *o;
  ecs_err err;
  if (ecs_lua_plugin_get(L, 1, MESH_CLASS) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  o = (lmesh *)ecs_lua_plugin_new(L, 1, MESH_CLASS, sizeof *o);
  w = ecs_lua_check_world(L, 1); /* a finalizer run by that allocation may have closed it */
  m = (meshes *)m_alloc(w, NULL, 0, sizeof *m);
  if (m == NULL) err = ECS_ERR_NOMEM;
  else {
    memset(m, 0, sizeof *m);
    m->rng = 0x2545F4914F6CDD1Dull;
    err = ecs_manager_register(w, MESH_NAME, &mesh_class, m); /* frees m on error */
  }
  if (err != ECS_ERR_OK) {
    ecs_lua_plugin_detach(L, 1, MESH_CLASS);
    return ecs_lua_error(L, "mesh.new", err);
  }
  o->m = m;
  return 1;
}

int luaopen_ecs_mesh(lua_State *L);

int luaopen_ecs_mesh(lua_State *L) {
  ECS_PLUGIN_INIT(L);
  ecs_lua_plugin_class(L, MESH_CLASS, mesh_methods);
  lua_newtable(L);
  lua_pushcfunction(L, l_mesh_new);
  lua_setfield(L, -2, "new");
  return 1;
}
