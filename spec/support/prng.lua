-- prng.lua -- a seeded 64-bit LCG for the specs that draw random cases:
-- deterministic for a seed, independent of math.random (which the code
-- under test and other specs may reseed). Lua 5.3+ (64-bit integers;
-- spec/support/lua54_only.lua lists the specs that use it).
--   local r = require("spec.support.prng")(seed)
--   r.float(a, b)   a uniform double in [a, b)
--   r.int(n)        an integer in 1 .. n
return function(seed)
  local s, r = seed, {}
  function r.float(a, b)
    s = s * 6364136223846793005 + 1442695040888963407
    return a + (b - a) * ((s >> 11) * 2.0 ^ -53)
  end
  function r.int(n) return math.floor(r.float(0, n)) + 1 end
  return r
end
