--[[
junk.lua -- every kind of value a careless or hostile script can pass.
Used by the argument sweeps: each value is paired with a name for messages.
]]
local ecs = require("ecs")

local junk = {}

function junk.values(w)
  local other = ecs.world()
  local dead = w:create()
  w:destroy(dead)
  local raising = setmetatable({}, {
    __index = function() error("junk __index raised") end,
    __len = function() error("junk __len raised") end,
  })
  local list = {
    { "nil", nil }, { "false", false }, { "true", true },
    { "0", 0 }, { "-1", -1 }, { "1.5", 1.5 }, { "-0.0", -0.0 },
    { "nan", 0 / 0 }, { "inf", math.huge }, { "-inf", -math.huge },
    { "maxinteger", math.maxinteger or 2 ^ 63 }, { "mininteger", math.mininteger or -2 ^ 63 }, -- 5.1: the doubles
    { "2^53", 2 ^ 53 }, { "2^63", 2 ^ 63 }, { "2^31", math.floor(2 ^ 31) }, -- an integer where there are integers
    { "empty string", "" }, { "string", "x" }, { "numeric string", "1" },
    { "100 kB string", string.rep("x", 100 * 1024) },
    { "empty table", {} }, { "list", { 1, 2, 3 } }, { "raising table", raising },
    { "function", function() end },
    { "coroutine", coroutine.create(function() end) },
    { "foreign userdata", io.stdout },
    { "null entity", ecs.null }, { "dead entity", dead },
    { "forged entity", ecs.entity(math.floor(2 ^ 30) - 1) },
    { "other world", other },
    { "other world entity", other:create() },
  }
  return list, other
end

return junk
