rockspec_format = "3.0"
package = "ecs"
version = "scm-1"
source = {
  url = "git+file:///dev/null",
}
description = {
  summary = "A data-oriented Entity-Component-System with a C core for Lua 5.4",
  detailed = [[
    Entities are 30-bit ids packed in light userdata; component managers keep
    their data as structure-of-arrays in C; queries and systems run hot loops
    in C or over plain Lua arrays.
  ]],
  license = "MIT",
}
dependencies = {
  "lua >= 5.4, < 5.5",
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
        "src/lua/each.c",
        "src/lua/spawn.c",
        "src/lua/many.c",
        "src/lua/options.c",
        "src/lua/system.c",
        "src/lua/observer.c",
        "src/lua/snapshot.c",
        "src/lua/module.c",
        "src/alloc.c",
        "src/value.c",
        "src/world.c",
        "src/entity.c",
        "src/registry.c",
        "src/stream.c",
        "src/component.c",
        "src/component_hooks.c",
        "src/schema.c",
        "src/sparse.c",
        "src/rowmap.c",
        "src/change.c",
        "src/cleanup.c",
        "src/transform.c",
        "src/transform_math.c",
        "src/transform_propagate.c",
        "src/transform_hierarchy.c",
        "src/transform_hooks.c",
        "src/names.c",
        "src/query.c",
        "src/query_iter.c",
        "src/query_run.c",
        "src/expr.c",
        "src/expr_compile.c",
        "src/expr_run.c",
        "src/system.c",
        "src/system_order.c",
        "src/snapshot.c",
      },
      incdirs = { "src" },
      defines = { "NDEBUG" }, -- release build: no debug-only checks (read-only columns of native systems)
      -- hidden symbols (only luaopen_ecs_core exported) come from a pragma
      -- in src/lua/binding.h: a builtin build cannot pass compiler flags
    },
    -- the C plugins: plugins/<name>.c is module ecs.<name>, linked to
    -- nothing of ecs (it calls ecs.core through src/ecs_plugin.h's table)
    ["ecs.grid"] = { sources = { "plugins/grid.c" }, incdirs = { "src" } },
    ["ecs.mesh"] = { sources = { "plugins/mesh.c" }, incdirs = { "src" } },
    ["ecs.motion"] = { sources = { "plugins/motion.c" }, incdirs = { "src" } },
    ["ecs.pointmass"] = { sources = { "plugins/pointmass.c" }, incdirs = { "src" } },
    ["ecs"] = "lua/ecs/init.lua",
    ["ecs.message"] = "lua/ecs/message.lua",
  },
  -- the public headers, for plugins built outside the tree: into
  -- <lua dir>/ecs/include/, next to the Lua front end, which tells where
  -- (require("ecs").include_dir)
  install = {
    lua = {
      ["ecs.include.ecs"] = "src/ecs.h",
      ["ecs.include.records"] = "src/records.h",
      ["ecs.include.component"] = "src/component.h",
      ["ecs.include.transform"] = "src/transform.h",
      ["ecs.include.names"] = "src/names.h",
      ["ecs.include.query"] = "src/query.h",
      ["ecs.include.value"] = "src/value.h",
      ["ecs.include.system"] = "src/system.h",
      ["ecs.include.expr"] = "src/expr.h", -- query.h includes it
      ["ecs.include.snapshot"] = "src/snapshot.h",
      ["ecs.include.ecs_lua"] = "src/ecs_lua.h",
      ["ecs.include.ecs_plugin"] = "src/ecs_plugin.h",
    },
  },
}
