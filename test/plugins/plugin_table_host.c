/*
** plugin_table_host.c -- the plugin table (struct ecs_api, include/
** ecs_api.h) as ecs.core hands it out in the registry: every slot holds
** the core's function of its name, the slots follow one another by minor
** version and then in the order of the list (include/ecs_api_list.h) with
** no slot the list lacks, the layout of every earlier minor is the one
** recorded below (what plugins built against it call), and the loader of
** ecs_plugin.h serves a plugin of an earlier minor and refuses, naming both
** versions, one of a later minor or of another major.
*/
#include <stdint.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "../support/harness.h"
#include "ecs_api.h"

int luaopen_ecs_core(lua_State *L);

typedef void (*any_fn)(void);

/* One entry of the list, as this file was compiled with it. */
typedef struct entry {
  const char *name;
  const char *sig; /* the return type and parameters as the list spells them */
  unsigned since;
  size_t offset;
} entry;

#define ECS_API_FN(since, ret, name, params) \
  {#name, #ret " " #params, since, offsetof(struct ecs_api, name)},
static const entry entries[] = {
#include "ecs_api_list.h"
};
#undef ECS_API_FN
#define NENTRIES (sizeof entries / sizeof entries[0])

/*
** The layout of each minor version once a later one exists: the number of
** slots up to it and a hash (FNV-1a) of their names and signatures in slot
** order. A plugin built against that minor calls these slots; a change here
** breaks it and is a new major version (ecs_api.h, "Versions"). When a
** minor after ECS_API_MINOR's is started, add the line this test prints
** for ECS_API_MINOR.
*/
static const struct {
  unsigned minor;
  size_t slots;
  uint32_t hash;
} frozen[] = {
  {0, 238, 0x95118e16u},
};

/* The table ecs.core leaves in the registry of a new state. */
static const struct ecs_api *core_table(lua_State *L) {
  const struct ecs_api *api;
  luaL_requiref(L, "ecs.core", luaopen_ecs_core, 0);
  lua_pop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, ECS_API_REGISTRY_KEY);
  api = (const struct ecs_api *)lua_touserdata(L, -1);
  lua_pop(L, 1);
  return api;
}

TEST(Table_every_slot_holds_the_core_function_of_its_name) {
  lua_State *L = luaL_newstate();
  const struct ecs_api *api;
  int bad = 0;
  CHECK(L != NULL);
  api = core_table(L);
  CHECK(api != NULL);
#define ECS_API_FN(since, ret, name, params)                               \
  if ((any_fn)api->name != (any_fn)name) {                                 \
    fprintf(stderr, "slot %s does not hold the core's %s\n", #name, #name); \
    bad++;                                                                 \
  }
#include "ecs_api_list.h"
#undef ECS_API_FN
  lua_close(L);
  CHECK_EQ_INT(bad, 0);
}

TEST(Table_header_says_the_version_and_size_it_was_built_with) {
  lua_State *L = luaL_newstate();
  const struct ecs_api *api;
  CHECK(L != NULL);
  api = core_table(L);
  CHECK(api != NULL);
  CHECK_EQ_INT(api->version, ECS_API_MAJOR);
  CHECK_EQ_INT(api->minor, ECS_API_MINOR);
  CHECK_EQ_INT(api->size, sizeof(struct ecs_api));
  lua_close(L);
  /* version and size keep their places in every major version */
  CHECK_EQ_INT(offsetof(struct ecs_api, version), 0);
  CHECK_EQ_INT(offsetof(struct ecs_api, size), 4);
  CHECK_EQ_INT(offsetof(struct ecs_api, minor), 8);
}

/* entries[order[k]] is the k-th slot: by since, then by the list. */
static void slot_order(size_t *order) {
  size_t k = 0;
  for (unsigned m = 0; m <= ECS_API_MINOR; m++)
    for (size_t i = 0; i < NENTRIES; i++)
      if (entries[i].since == m) order[k++] = i;
}

TEST(Table_slots_follow_minor_then_list_with_no_gap) {
  size_t order[NENTRIES];
  size_t first = offsetof(struct ecs_api, minor) + sizeof(uint32_t);
  first = (first + _Alignof(any_fn) - 1) / _Alignof(any_fn) * _Alignof(any_fn);
  for (size_t i = 0; i < NENTRIES; i++) CHECK(entries[i].since <= ECS_API_MINOR);
  slot_order(order);
  for (size_t k = 0; k < NENTRIES; k++) {
    if (entries[order[k]].offset != first + k * sizeof(any_fn))
      fprintf(stderr, "slot %zu is %s, at offset %zu\n", k,
              entries[order[k]].name, entries[order[k]].offset);
    CHECK_EQ_INT(entries[order[k]].offset, first + k * sizeof(any_fn));
  }
  /* no member the list does not know of */
  CHECK_EQ_INT(sizeof(struct ecs_api), first + NENTRIES * sizeof(any_fn));
}

static uint32_t fnv1a(uint32_t h, const char *s) {
  for (size_t i = 0, n = strlen(s) + 1; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 16777619u;
  }
  return h;
}

TEST(Table_layout_of_every_earlier_minor_is_the_recorded_one) {
  size_t order[NENTRIES];
  int bad = 0;
  slot_order(order);
  for (unsigned m = 0; m <= ECS_API_MINOR; m++) {
    uint32_t h = 2166136261u;
    size_t slots = 0, r;
    for (size_t k = 0; k < NENTRIES && entries[order[k]].since <= m; k++) {
      h = fnv1a(fnv1a(h, entries[order[k]].name), entries[order[k]].sig);
      slots++;
    }
    for (r = 0; r < sizeof frozen / sizeof frozen[0]; r++)
      if (frozen[r].minor == m) break;
    if (r == sizeof frozen / sizeof frozen[0]) {
      fprintf(stderr, "minor %u has no record: {%u, %zu, 0x%08lxu},\n", m, m,
              slots, (unsigned long)h);
      if (m != ECS_API_MINOR) bad++; /* the current minor may still grow */
    } else if (frozen[r].slots != slots || frozen[r].hash != h) {
      fprintf(stderr,
              "the layout of %d.%u changed (%zu slots, 0x%08lxu; recorded "
              "%zu, 0x%08lxu): plugins built against it would call the "
              "wrong functions. Add functions as a new minor (ecs_api_list.h) "
              "or start a new major version\n",
              ECS_API_MAJOR, m, slots, (unsigned long)h, frozen[r].slots,
              (unsigned long)frozen[r].hash);
      bad++;
    }
  }
  CHECK_EQ_INT(bad, 0);
}

/*
** The loader a plugin compiles in (ecs_plugin.h; its call macros apply to
** the rest of this file only, which calls no function of the table).
*/
#include "ecs_plugin.h"

/* A table of another version or size, in place of the core's. */
static union {
  struct ecs_api api;
  any_fn slots[sizeof(struct ecs_api) / sizeof(any_fn) + 2];
} fake;

/* open(major, minor, size) -> the table the loader returns, or its error */
static int l_open(lua_State *L) {
  const struct ecs_api *api = ecs_plugin_open_api(
      L, (int)luaL_checkinteger(L, 1), (int)luaL_checkinteger(L, 2),
      (size_t)luaL_checkinteger(L, 3));
  lua_pushlightuserdata(L, (void *)(uintptr_t)api);
  return 1;
}

/* Runs the loader against the fake table as a plugin of that version. */
static int open_fake(lua_State *L, int major, int minor, size_t size) {
  lua_pushlightuserdata(L, &fake);
  lua_setfield(L, LUA_REGISTRYINDEX, ECS_API_REGISTRY_KEY);
  lua_pushcfunction(L, l_open);
  lua_pushinteger(L, major);
  lua_pushinteger(L, minor);
  lua_pushinteger(L, (lua_Integer)size);
  return lua_pcall(L, 3, 1, 0);
}

TEST(Loader_serves_a_plugin_of_an_earlier_minor) {
  lua_State *L = luaL_newstate();
  CHECK(L != NULL);
  memcpy(&fake.api, core_table(L), sizeof fake.api);
  fake.api.minor = ECS_API_MINOR + 1; /* a newer core: one slot more */
  fake.api.size = (uint32_t)(sizeof fake.api + sizeof(any_fn));
  CHECK_EQ_INT(open_fake(L, ECS_API_MAJOR, ECS_API_MINOR, sizeof fake.api), LUA_OK);
  CHECK(lua_touserdata(L, -1) == (void *)&fake);
  lua_close(L);
}

TEST(Loader_refuses_a_plugin_of_a_later_minor_naming_both) {
  lua_State *L = luaL_newstate();
  char want[160];
  CHECK(L != NULL);
  memcpy(&fake.api, core_table(L), sizeof fake.api);
  CHECK_EQ_INT(open_fake(L, ECS_API_MAJOR, ECS_API_MINOR + 1,
                         sizeof fake.api + sizeof(any_fn)),
               LUA_ERRRUN);
  snprintf(want, sizeof want,
           "built for plugin interface version %d.%d, but ecs.core provides "
           "version %d.%d (",
           ECS_API_MAJOR, ECS_API_MINOR + 1, ECS_API_MAJOR, ECS_API_MINOR);
  CHECK(strstr(lua_tostring(L, -1), want) != NULL);
  /* a table smaller than the plugin's, whatever its minor says */
  lua_pop(L, 1);
  fake.api.size = (uint32_t)(sizeof fake.api - sizeof(any_fn));
  CHECK_EQ_INT(open_fake(L, ECS_API_MAJOR, ECS_API_MINOR, sizeof fake.api),
               LUA_ERRRUN);
  lua_close(L);
}

TEST(Loader_refuses_another_major_naming_both) {
  lua_State *L = luaL_newstate();
  char want[160];
  CHECK(L != NULL);
  memcpy(&fake.api, core_table(L), sizeof fake.api);
  fake.api.version = ECS_API_MAJOR - 1;
  CHECK_EQ_INT(open_fake(L, ECS_API_MAJOR, ECS_API_MINOR, sizeof fake.api),
               LUA_ERRRUN);
  snprintf(want, sizeof want,
           "built for plugin interface version %d.%d, but ecs.core provides "
           "version %d (another major version)",
           ECS_API_MAJOR, ECS_API_MINOR, ECS_API_MAJOR - 1);
  CHECK(strstr(lua_tostring(L, -1), want) != NULL);
  lua_close(L);
}

static const test_case cases[] = {
  CASE(Table_every_slot_holds_the_core_function_of_its_name),
  CASE(Table_header_says_the_version_and_size_it_was_built_with),
  CASE(Table_slots_follow_minor_then_list_with_no_gap),
  CASE(Table_layout_of_every_earlier_minor_is_the_recorded_one),
  CASE(Loader_serves_a_plugin_of_an_earlier_minor),
  CASE(Loader_refuses_a_plugin_of_a_later_minor_naming_both),
  CASE(Loader_refuses_another_major_naming_both),
};

TEST_MAIN(cases)
