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
        "src/lua/value.c",
        "src/lua/plugin.c",
        "src/lua/transform.c",
        "src/lua/query.c",
        "src/lua/columns.c",
        "src/lua/system.c",
        "src/lua/module.c",
        "src/world.c",
        "src/entity.c",
        "src/component.c",
        "src/sparse.c", -- transform branch
        "src/transform.c", -- transform branch
        "src/names.c", -- transform branch
        "src/query.c",
        "src/expr.c",
        "src/system.c",
        "examples/plugins/pointmass.c",
        "examples/plugins/mesh.c",
        "examples/plugins/grid.c", -- demo (issue 7)
        "examples/plugins/motion.c",
      },
      incdirs = { "src" },
      defines = { "NDEBUG" }, -- release build: no debug-only checks (read-only columns of native systems)
    },
    ["ecs"] = "lua/ecs/init.lua",
    ["ecs.message"] = "lua/ecs/message.lua", -- transform branch
  },
}
