/*
** ecs_api.h -- the table of the core's functions that C plugins call
** through (struct ecs_api), with its version: one pointer per function of
** the public headers, which this header includes. The functions are listed
** once, in ecs_api_list.h; ecs.core fills the table in (src/lua/plugin.c)
** and leaves its address in the Lua registry; a plugin includes
** ecs_plugin.h, which fetches it and routes every call through it.
**
** Versions: the table has a major and a minor version, MAJOR.MINOR.
**   - Within a major version the table only grows: a function is added as
**     a new minor version, at the end of the table (its slots follow every
**     slot of the minors before it), and no slot of an earlier minor ever
**     moves, changes its type or its meaning, or goes. Such a change, a
**     function removed or its signature changed or the order of earlier
**     slots changed, starts a new major version at minor 0 (and every
**     plugin must be rebuilt).
**   - A plugin built against MAJOR.MINOR runs on a core of the same major
**     and the same or a later minor: that core's table begins with the
**     plugin's table, slot for slot. ECS_PLUGIN_INIT refuses, with a Lua
**     error at require naming both versions, a core of another major
**     version or of an earlier minor (the plugin may call a function that
**     core does not have).
**   - The first two fields (version: the major, size: the table's bytes)
**     keep their places in every major version, so that any plugin can
**     read them and refuse a table it does not know.
** A plugin can test for a function at compile time: ecs_plugin.h defines
** a macro of its name (#ifdef ecs_xxx), or compare ECS_API_MINOR.
** History: 11.0, the table made from one list, grouped by header; up to
** 10 the version was a single number (ECS_API_VERSION, which now names
** the major version), and each number was a table of its own.
*/
#ifndef ECS_API_H
#define ECS_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lua.h"
#include "lauxlib.h"
#include "ecs_compat.h" /* one API on Lua 5.1-5.4 and LuaJIT */

#include "ecs.h"
#include "records.h"
#include "component.h"
#include "transform.h"
#include "names.h"
#include "query.h"
#include "value.h"
#include "system.h"
#include "ecs_lua.h"
#include "snapshot.h"

/*
** The version, ECS_API_MAJOR and ECS_API_MINOR, is defined by the list
** (ecs_api_list.h); every entry belongs to a minor it announces.
*/
#define ECS_API_FN(since, ret, name, params) \
  _Static_assert(since <= ECS_API_MINOR, \
                 #name ": since is past ECS_API_MINOR (ecs_api_list.h)");
#include "ecs_api_list.h"
#undef ECS_API_FN

/* The major version under the name it had when it was the only number. */
#define ECS_API_VERSION ECS_API_MAJOR

/* The registry field where ecs.core leaves the table (a light userdata). */
#define ECS_API_REGISTRY_KEY "ecs.core.api"

/*
** The members, generated from ecs_api_list.h: one pass over the list per
** minor version, each keeping the entries of that minor (ECS_API_SINCE_k
** says what an entry of minor k becomes in the pass under way), so that
** the slots are ordered by minor and then by the list, and the list can
** stay grouped by header while the table only grows at its end. A minor
** past the passes below is a compile error (ECS_API_SINCE_k undefined):
** add a pass.
*/
#define ECS_API_SLOT_(ret, name, params) ret (*name) params;
#define ECS_API_SKIP_(ret, name, params)
#define ECS_API_FN(since, ret, name, params) \
  ECS_API_SINCE_##since(ret, name, params)
#define ECS_API_SINCE_0 ECS_API_SKIP_
#define ECS_API_SINCE_1 ECS_API_SKIP_
#define ECS_API_SINCE_2 ECS_API_SKIP_
#define ECS_API_SINCE_3 ECS_API_SKIP_
#define ECS_API_SINCE_4 ECS_API_SKIP_
#define ECS_API_SINCE_5 ECS_API_SKIP_
#define ECS_API_SINCE_6 ECS_API_SKIP_
#define ECS_API_SINCE_7 ECS_API_SKIP_

struct ecs_api {
  uint32_t version; /* ECS_API_MAJOR of the core */
  uint32_t size;    /* sizeof(struct ecs_api) of the core */
  uint32_t minor;   /* ECS_API_MINOR of the core (from major 11 on) */
#undef ECS_API_SINCE_0
#define ECS_API_SINCE_0 ECS_API_SLOT_
#include "ecs_api_list.h"
#undef ECS_API_SINCE_0
#define ECS_API_SINCE_0 ECS_API_SKIP_
#undef ECS_API_SINCE_1
#define ECS_API_SINCE_1 ECS_API_SLOT_
#include "ecs_api_list.h"
#undef ECS_API_SINCE_1
#define ECS_API_SINCE_1 ECS_API_SKIP_
#undef ECS_API_SINCE_2
#define ECS_API_SINCE_2 ECS_API_SLOT_
#include "ecs_api_list.h"
#undef ECS_API_SINCE_2
#define ECS_API_SINCE_2 ECS_API_SKIP_
#undef ECS_API_SINCE_3
#define ECS_API_SINCE_3 ECS_API_SLOT_
#include "ecs_api_list.h"
#undef ECS_API_SINCE_3
#define ECS_API_SINCE_3 ECS_API_SKIP_
#undef ECS_API_SINCE_4
#define ECS_API_SINCE_4 ECS_API_SLOT_
#include "ecs_api_list.h"
#undef ECS_API_SINCE_4
#define ECS_API_SINCE_4 ECS_API_SKIP_
#undef ECS_API_SINCE_5
#define ECS_API_SINCE_5 ECS_API_SLOT_
#include "ecs_api_list.h"
#undef ECS_API_SINCE_5
#define ECS_API_SINCE_5 ECS_API_SKIP_
#undef ECS_API_SINCE_6
#define ECS_API_SINCE_6 ECS_API_SLOT_
#include "ecs_api_list.h"
#undef ECS_API_SINCE_6
#define ECS_API_SINCE_6 ECS_API_SKIP_
#undef ECS_API_SINCE_7
#define ECS_API_SINCE_7 ECS_API_SLOT_
#include "ecs_api_list.h"
};
#undef ECS_API_FN

#undef ECS_API_SINCE_0
#undef ECS_API_SINCE_1
#undef ECS_API_SINCE_2
#undef ECS_API_SINCE_3
#undef ECS_API_SINCE_4
#undef ECS_API_SINCE_5
#undef ECS_API_SINCE_6
#undef ECS_API_SINCE_7
#undef ECS_API_SLOT_
#undef ECS_API_SKIP_

#endif
