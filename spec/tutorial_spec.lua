--[[
tutorial_spec.lua -- the README's tutorial runs as printed and prints what
its last comment says (so the README cannot drift from the library).
]]
local function readme()
  local f = assert(io.open("README.md", "r"))
  local text = f:read("*a")
  f:close()
  return text
end

describe("the README tutorial", function()
  it("runs and prints the counts its comment promises", function()
    local text = readme()
    local code = text:match("## Tutorial[^\n]*\n.-```lua\n(.-)```")
    assert.is_string(code)
    local expect = code:match("%-%->%s*([%d%s]+)\n[^\n]*$") or code:match("%-%->%s*([%d ]+)")
    assert.is_string(expect, "the tutorial ends with a --> comment")
    local printed = {}
    local env = setmetatable({
      print = function(...)
        for i = 1, select("#", ...) do printed[#printed + 1] = tostring((select(i, ...))) end
      end,
    }, { __index = _G })
    local chunk = assert(require("spec.support.lua").load(code, "=README tutorial", "t", env))
    chunk()
    local want = {}
    for n in expect:gmatch("%d+") do want[#want + 1] = n end
    assert.same(want, printed)
  end)
end)
