-- The spec files written for Lua 5.4 that are not (yet) in the subset
-- every supported Lua shares (README "Lua versions"): each with the first
-- Lua that loads it and why. .busted leaves them out of the runs for older
-- Luas (lua51, lua52, lua53, luajit) and test.sh prints this list there,
-- so a file that does not compile is never loaded where it would fail.
-- Keys are paths under spec/; busted matches its exclude patterns against
-- a file's name alone, so names of spec files stay unique across spec/.
-- Keep it short: the common subset is the default for new specs (no //,
-- no bit operators or 64-bit integer arithmetic, no <close>/<const>, no
-- goto, no utf8, no string.pack; `table.unpack or unpack`).
local INT = "integer and bit operators (//, <<, >>, &, |, ~) and 64-bit integers"
return {
  ["binding/inspect_spec.lua"] = { "5.4", "collectgarbage(\"incremental\", ...) of 5.4, and " .. INT
    .. " in its expected texts" },
  ["entity/entity_spec.lua"] = { "5.4", "<close> worlds and " .. INT },
  ["entity/spawn_spec.lua"] = { "5.3", "its random generator is " .. INT },
  ["examples/deflate_spec.lua"] = { "5.3", "the pure-Lua deflate and PNG code (examples/lib) is " .. INT },
  ["examples/demo_save_spec.lua"] = { "5.4", "examples/arena.lua and its save format are " .. INT
    .. ", and its runs start lua5.4" },
  ["examples/demo_spec.lua"] = { "5.4", "examples/arena.lua is " .. INT .. ", and its runs start lua5.4" },
  ["examples/replicate_spec.lua"] = { "5.4", "its children start lua5.4; examples/replicate.lua's wire format is "
    .. INT },
  ["managers/transform_query_spec.lua"] = { "5.3", "its random generator is " .. INT },
  ["managers/transform_spec.lua"] = { "5.3", "integer division (//)" },
  ["persist/journal_spec.lua"] = { "5.4", "<close> journals and a random generator of " .. INT },
  ["persist/snapshot_spec.lua"] = { "5.3", INT .. " (i64 extremes)" },
  ["plugins/grid_spec.lua"] = { "5.3", "its random generator is " .. INT },
  ["plugins/plugin_query_spec.lua"] = { "5.3", "string.pack (f32 rounding) and a random generator of "
    .. INT },
  ["query/columns_spec.lua"] = { "5.4", "<close> loops left early, i64 values beyond 2^53, " .. INT },
  ["query/each_chunk_spec.lua"] = { "5.4", "5.4's collector modes, a garbage check measured on 5.4, "
    .. "a random generator of " .. INT .. " (spec/binding/compat_spec.lua covers q:each_chunk on every Lua)" },
  ["query/query_spec.lua"] = { "5.4", "<close> worlds and loops" },
  ["storage/component_spec.lua"] = { "5.3", INT },
  ["storage/migrate_spec.lua"] = { "5.4", "collectgarbage(\"incremental\") of 5.4, string.pack and " .. INT },
  ["storage/observer_spec.lua"] = { "5.4", "<close> observers" },
  ["system/threads_spec.lua"] = { "5.3", "its random generator is " .. INT },
  ["world/lifetime_spec.lua"] = { "5.4", "<close> worlds" },
}
