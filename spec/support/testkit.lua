--[[
testkit.lua -- loads the test-only C module ecs_testkit (test/support/ecs_testkit.c),
which CMake builds with ECS_TESTS as <build>/ecs_testkit.so and the rockspec
never installs.

Against a CMake build (busted, --run=asan, --run=valgrind) LUA_CPATH is
<build>/?.so and require finds it. Against the installed rock (--run=rocks)
the cpath is the rocks tree's, so the CMake build directories are searched
for that one file (the module is built without sanitizers, so any of them
loads into a plain lua5.4).

testkit.module is the module, or nil with the reason in testkit.missing
(printed on loading). A test that needs it starts with
  local kit = testkit.module or pending(testkit.missing)
so that without a build it shows as pending, never as passed (busted's
pending() exists only in the spec's environment, hence not called here).
]]
local testkit = {}

local BUILD_DIRS = { "build", "build-asan", "build-valgrind" }

local function load()
  local ok, mod = pcall(require, "ecs_testkit")
  if ok then return mod end
  local tried = {}
  for _, dir in ipairs(BUILD_DIRS) do
    local path = dir .. "/ecs_testkit.so"
    local f = io.open(path, "rb")
    if f then
      f:close()
      local open, err = package.loadlib(path, "luaopen_ecs_testkit")
      if open then
        mod = open("ecs_testkit")
        package.loaded.ecs_testkit = mod
        return mod
      end
      tried[#tried + 1] = path .. ": " .. tostring(err)
    end
  end
  return nil, "the test module ecs_testkit is not built (configure with CMake, ECS_TESTS=ON, in "
    .. table.concat(BUILD_DIRS, ", ") .. ")" .. (#tried > 0 and ("; " .. table.concat(tried, "; ")) or "")
end

testkit.module, testkit.missing = load()
if testkit.missing then io.stderr:write("spec/support/testkit.lua: ", testkit.missing, "\n") end

return testkit
