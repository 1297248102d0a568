-- luacheck configuration; test.sh runs luacheck over lua/ spec/ examples/
-- bench/ test/ types/ plugins/ tools/ and counts any warning as a failure.
std = "lua54"
max_line_length = 120
files["spec/"] = { std = "+busted" }
files["bench/"] = { ignore = { "212" } }
-- out-of-memory scenarios (test/oom/oom_host.c) are run(ecs, world): not all use ecs
files["test/oom/"] = { ignore = { "212/ecs" } }
-- the Lua front end and the specs that run on every Lua (README "Lua
-- versions"): only the globals all of 5.1-5.4 and LuaJIT share
files["lua/"] = { std = "min" }
files["spec/binding/compat_spec.lua"] = { std = "min+busted" }
files["spec/persist/replay_spec.lua"] = { std = "min+busted" }
files["spec/world/crossing_spec.lua"] = { std = "min+busted" }
files["spec/support/crossing_model.lua"] = { std = "min" }
-- the LÖVE example runs on LÖVE's LuaJIT and defines love's callbacks
files["examples/love/"] = { std = "luajit+love" }
