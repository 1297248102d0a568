--[[
build_spec.lua -- the three build paths stay in step: every C file of the
core is compiled by CMake and listed in the rockspec.
]]
local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function c_sources()
  local out = {}
  local p = assert(io.popen("ls src/*.c"))
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

describe("build files", function()
  it("the rockspec lists every src/*.c", function()
    local rockspec = read("ecs-scm-1.rockspec")
    for _, f in ipairs(c_sources()) do
      assert(rockspec:find('"' .. f .. '"', 1, true), f .. " missing from the rockspec")
    end
  end)

  it("CMakeLists.txt compiles every src/*.c", function()
    local cmake = read("CMakeLists.txt")
    for _, f in ipairs(c_sources()) do
      assert(cmake:find(f, 1, true), f .. " missing from CMakeLists.txt")
    end
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
