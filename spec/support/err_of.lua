--[[
err_of.lua -- err_of(f, ...) -> the error object f(...) raises; the test
fails ("expected an error") when f returns instead.
  local err_of = require("spec.support.err_of")
]]
local assert = require("luassert")

return function(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return err
end
