rockspec_format = "3.0"
package = "ecs"
version = "scm-1"
-- Copyright (c) 2026 the ecs authors. MIT license (LICENSE).
--
-- No public repository yet, so no URL to fetch the sources from: this
-- rockspec builds the work tree it sits in.
--   luarocks make ecs-scm-1.rockspec       install from the work tree
--   luarocks make --pack-binary-rock ecs-scm-1.rockspec
--                                          a binary rock, nothing installed
--   luarocks pack ecs                      a binary rock of an installed ecs
--   tools/pack.sh [DIR]                    a source rock, DIR/ecs-scm-1.src.rock
-- (each with --lua-version=5.4 where LuaRocks defaults to another Lua;
-- `luarocks install ecs-scm-1.<arch>.rock` installs either binary rock
-- without a compiler, `luarocks build ecs-scm-1.src.rock` builds the source
-- rock). `luarocks pack ecs-scm-1.rockspec` fetches source.url from a
-- temporary directory of its own, where a relative path resolves, and a
-- rockspec cannot name its own location: no URL written here reaches the
-- sources from every clone. tools/pack.sh runs `luarocks lint` and
-- `luarocks pack` on a copy of this file whose url is the absolute file://
-- URL of a `git archive` tarball, with its md5. Once the repository is
-- published, its URL goes here and the plain command works.
source = {
  url = "git+file:///dev/null", -- no public repository yet (tools/pack.sh)
}
description = {
  summary = "A data-oriented Entity-Component-System with a C core for Lua 5.1-5.4 and LuaJIT",
  detailed = [[
    Entities are 30-bit ids packed in light userdata; component managers keep
    their data as structure-of-arrays in C; queries and systems run hot loops
    in C or over plain Lua arrays (q:columns), or compile column arithmetic
    once and run it in C (q:apply, expression systems). Built in: a transform
    hierarchy, entity names, observers (on_add, on_remove, on_set), change
    and addition queries, entity fields that clean up, spawning from
    prefabs, phases and ordering for systems, snapshots with rollback in
    place. C plugins (ecs.pointmass, ecs.mesh, ecs.grid, ecs.motion) are
    modules of their own, built against the installed headers
    (require("ecs").include_dir); LuaLS annotations of the whole Lua API
    come along (ecs/types/ecs.lua in the Lua tree).
  ]],
  -- homepage: none until the project is published (no public address yet);
  -- optional for `luarocks lint`, which requires only the license
  license = "MIT",
  labels = { "ecs", "entity-component-system", "gamedev", "data-oriented" },
}
-- Lua 5.1, 5.2, 5.3, 5.4 and LuaJIT (README "Lua versions"); before 5.3
-- the binding includes lua-compat-5.3's compat-5.3.h, which the tree
-- carries (vendor/lua-compat-5.3/, MIT): a C compiler and Lua's headers are
-- all a build needs
dependencies = {
  "lua >= 5.1, < 5.5",
}
build = {
  type = "builtin",
  modules = {
    ["ecs.core"] = {
      sources = {
        "src/lua/object.c",
        "src/lua/entity.c",
        "src/lua/world.c",
        "src/lua/component.c",
        "src/lua/field.c",
        "src/lua/plugin.c",
        "src/lua/transform.c",
        "src/lua/query.c",
        "src/lua/columns.c",
        "src/lua/component_new.c",
        "src/lua/migrate.c",
        "src/lua/each.c",
        "src/lua/pointers.c",
        "src/lua/spawn.c",
        "src/lua/many.c",
        "src/lua/options.c",
        "src/lua/native.c",
        "src/lua/system.c",
        "src/lua/observer.c",
        "src/lua/snapshot.c",
        "src/lua/plain.c",
        "src/lua/journal.c",
        "src/lua/inspect.c",
        "src/lua/module.c",
        "src/base/alloc.c",
        "src/base/value.c",
        "src/base/checksum.c",
        "src/base/pool.c",
        "src/base/errors.c",
        "src/base/clock.c",
        "src/base/barrier.c",
        "src/entity/entity.c",
        "src/entity/registry.c",
        "src/entity/stream.c",
        "src/storage/component.c",
        "src/storage/component_owned.c",
        "src/storage/component_reorder.c",
        "src/storage/component_layout.c",
        "src/storage/dropped_refs.c",
        "src/storage/component_hooks.c",
        "src/storage/disabled.c",
        "src/storage/schema.c",
        "src/storage/schema_match.c",
        "src/storage/sparse.c",
        "src/storage/rowmap.c",
        "src/storage/change.c",
        "src/storage/cleanup.c",
        "src/storage/destroy.c",
        "src/storage/spawn.c",
        "src/storage/write.c",
        "src/managers/transform.c",
        "src/managers/transform_math.c",
        "src/managers/transform_propagate.c",
        "src/managers/transform_hierarchy.c",
        "src/managers/transform_hooks.c",
        "src/managers/names.c",
        "src/managers/inspect.c",
        "src/query/query.c",
        "src/query/query_iter.c",
        "src/query/query_changes.c",
        "src/query/query_run.c",
        "src/query/query_cursor.c",
        "src/query/expr.c",
        "src/query/expr_compile.c",
        "src/query/expr_run.c",
        "src/system/system.c",
        "src/system/system_batch.c",
        "src/system/system_order.c",
        "src/persist/snapshot.c",
        "src/persist/cursors.c",
        "src/persist/journal.c",
        "src/persist/journal_delta.c",
        "src/persist/journal_image.c",
        "src/persist/journal_undo.c",
        "src/persist/delta.c",
        "src/persist/component_migrate.c",
        "src/world.c",
      },
      libraries = { "pthread", "m" }, -- worker threads (src/base/pool.c), math
      incdirs = { "include", "src", "src/base", "src/entity", "src/storage",
                  "src/managers", "src/query", "src/system", "src/persist",
                  "vendor/lua-compat-5.3" },
      defines = { "NDEBUG" }, -- release build: no debug-only checks (read-only columns of native systems)
      -- hidden symbols (only luaopen_ecs_core exported) come from a pragma
      -- in src/lua/binding.h: a builtin build cannot pass compiler flags
    },
    -- the C plugins: plugins/<name>.c is module ecs.<name>, linked to
    -- nothing of ecs (it calls ecs.core through include/ecs_plugin.h's table)
    ["ecs.grid"] = { sources = { "plugins/grid.c" }, incdirs = { "include", "vendor/lua-compat-5.3" }, libraries = { "m" } },
    ["ecs.mesh"] = { sources = { "plugins/mesh.c" }, incdirs = { "include", "vendor/lua-compat-5.3" }, libraries = { "m" } },
    ["ecs.motion"] = { sources = { "plugins/motion.c" }, incdirs = { "include", "vendor/lua-compat-5.3" }, libraries = { "m" } },
    ["ecs.pointmass"] = { sources = { "plugins/pointmass.c" }, incdirs = { "include", "vendor/lua-compat-5.3" }, libraries = { "m" } },
    ["ecs"] = "lua/ecs/init.lua",
    ["ecs.message"] = "lua/ecs/message.lua",
  },
  -- the public headers, for plugins built outside the tree: into
  -- <lua dir>/ecs/include/, next to the Lua front end, which tells where
  -- (require("ecs").include_dir)
  install = {
    lua = {
      ["ecs.include.ecs"] = "include/ecs.h",
      ["ecs.include.records"] = "include/records.h",
      ["ecs.include.component"] = "include/component.h",
      ["ecs.include.transform"] = "include/transform.h",
      ["ecs.include.names"] = "include/names.h",
      ["ecs.include.query"] = "include/query.h",
      ["ecs.include.value"] = "include/value.h",
      ["ecs.include.system"] = "include/system.h",
      ["ecs.include.expr"] = "include/expr.h", -- query.h includes it
      ["ecs.include.snapshot"] = "include/snapshot.h",
      ["ecs.include.ecs_lua"] = "include/ecs_lua.h",
      ["ecs.include.ecs_api"] = "include/ecs_api.h", -- ecs_plugin.h includes it
      ["ecs.include.ecs_api_list"] = "include/ecs_api_list.h", -- ecs_api.h includes it
      ["ecs.include.ecs_plugin"] = "include/ecs_plugin.h",
      ["ecs.include.ecs_compat"] = "include/ecs_compat.h", -- ecs_lua.h includes it
      -- the LuaLS annotations (---@meta ecs), beside the headers:
      -- <lua dir>/ecs/types/ecs.lua; <lua dir>/ecs/types is the directory
      -- to add to LuaLS's workspace.library (a tree's whole <lua dir> does
      -- as well). Not copy_directories: that would stop LuaRocks copying
      -- README.md, CHANGELOG.md and LICENSE into the rock's doc/
      ["ecs.types.ecs"] = "types/ecs.lua",
    },
  },
}
