--[[
build_spec.lua -- the three build paths stay in step: every C file of the
core and the binding (src/ and its folders) is compiled by CMake and listed
in the rockspec, and every public header (include/) is installed by both.
]]
local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function c_sources()
  local out = {}
  local p = assert(io.popen("find src -name '*.c' | sort"))
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

describe("build files", function()
  it("the rockspec lists every C file under src/", function()
    local rockspec = read("ecs-scm-1.rockspec")
    for _, f in ipairs(c_sources()) do
      assert(rockspec:find('"' .. f .. '"', 1, true), f .. " missing from the rockspec")
    end
  end)

  it("CMakeLists.txt compiles every C file under src/", function()
    local cmake = read("CMakeLists.txt")
    for _, f in ipairs(c_sources()) do
      assert(cmake:find(f, 1, true), f .. " missing from CMakeLists.txt")
    end
  end)

  -- The core's files include each other's headers by name, so every folder
  -- of the core is an include directory of both builds.
  it("both builds search every folder of the core for headers", function()
    local rockspec, cmake = read("ecs-scm-1.rockspec"), read("CMakeLists.txt")
    local incdirs = assert(rockspec:match('%["ecs%.core"%].-incdirs = (%b{})'))
    local dirs = assert(cmake:match("set%(ECS_CORE_INCLUDE_DIRS([^)]*)%)"))
    local p = assert(io.popen("find src -mindepth 1 -type d ! -path src/lua | sort"))
    for d in p:lines() do
      assert(incdirs:find('"' .. d .. '"', 1, true), d .. " missing from the rockspec's incdirs")
      assert((" " .. dirs .. " "):find("%s" .. d:gsub("%p", "%%%0") .. "%s"),
             d .. " missing from ECS_CORE_INCLUDE_DIRS")
    end
    p:close()
  end)

  it("both builds install every public header", function()
    local rockspec, cmake = read("ecs-scm-1.rockspec"), read("CMakeLists.txt")
    local listed = assert(cmake:match("set%(ECS_PUBLIC_HEADERS([^)]*)%)"))
    local p = assert(io.popen("ls include/*.h"))
    local n = 0
    for f in p:lines() do
      n = n + 1
      local name = f:match("^include/(.*)%.h$")
      assert(rockspec:find('["ecs.include.' .. name .. '"] = "' .. f .. '"', 1, true),
             f .. " missing from the rockspec's install table")
      assert((" " .. listed .. " "):find("%s" .. name:gsub("%p", "%%%0") .. "%.h%s"),
             f .. " missing from ECS_PUBLIC_HEADERS")
    end
    p:close()
    assert(n > 10, "too few public headers: " .. n)
  end)

  it("the rockspec installs every Lua helper", function()
    local rockspec = read("ecs-scm-1.rockspec")
    local p = assert(io.popen("ls lua/ecs/*.lua"))
    for f in p:lines() do
      assert(rockspec:find('"' .. f .. '"', 1, true), f .. " missing from the rockspec")
    end
    p:close()
  end)
end)
