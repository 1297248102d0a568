--[[
ab.lua -- A/B comparison of the benchmarks of two checkouts (two commits),
each built in Release in <tree>/build-rel. On a shared, noisy machine a
single run of each says little, so the runs are interleaved (A, B, A, B,
...: a burst of load from elsewhere hits both sides alike) and every
figure is summarised by its median and its minimum over the rounds.

Usage:
  lua5.4 bench/ab.lua run OUTDIR ROUNDS TREE_A TREE_B [BENCH...]
      runs each BENCH (default: every bench the two trees share, Lua and C)
      ROUNDS times per tree, alternating A and B, and keeps each output in
      OUTDIR/<bench>.<A|B>.<round>.txt
  lua5.4 bench/ab.lua compare OUTDIR
      prints one markdown row per figure: median and min of A and B and
      the ratios B/A

A bench is named by its file: "query.lua" runs bench/bench_query.lua with
the tree's own copy of the script (so each side runs the script written
for its API) and the module from build-rel; "query.c" runs
build-rel/bench_query_c.

A figure is one number of one output line. Lines are matched across runs
by their text with the numbers blanked out (so "W2 (c) ours ... 249.53
10.44 4.824" gives three figures: the time and its two in-run ratios);
tokens such as "W2", "1M" or "10k" are part of the text, not numbers.
Figures that never change (sizes in the headers) are left out.
]]

local function sh(cmd)
  local ok = os.execute(cmd)
  if not ok then error("failed: " .. cmd) end
end

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

-- The benches of a tree: bench/bench_<name>.lua and build-rel/bench_<name>_c.
local function benches(tree)
  local list = {}
  local p = assert(io.popen(("ls %q/bench"):format(tree)))
  for f in p:lines() do
    local name = f:match("^bench_(.+)%.lua$")
    if name then list[#list + 1] = name .. ".lua" end
    name = f:match("^bench_(.+)%.c$")
    if name and exists(tree .. "/build-rel/bench_" .. name .. "_c") then
      list[#list + 1] = name .. ".c"
    end
  end
  p:close()
  return list
end

local function command(tree, bench)
  local name, kind = bench:match("^(.+)%.(%a+)$")
  if kind == "lua" then
    -- the module from the tree's Release build, the script from the tree
    return ("cd %q && LUA_PATH='build-rel/?.lua;build-rel/?/init.lua;;' " ..
      "LUA_CPATH='build-rel/?.so;;' lua5.4 bench/bench_%s.lua"):format(tree, name)
  end
  return ("cd %q && build-rel/bench_%s_c"):format(tree, name)
end

local function run(outdir, rounds, a, b, list)
  if #list == 0 then
    -- only the benches both trees have: the rest cannot be compared
    local in_b = {}
    for _, x in ipairs(benches(b)) do in_b[x] = true end
    for _, x in ipairs(benches(a)) do if in_b[x] then list[#list + 1] = x end end
  end
  sh(("mkdir -p %q"):format(outdir))
  for r = 1, rounds do
    for _, bench in ipairs(list) do
      -- alternate which side goes first, so neither always runs after the
      -- other (caches, frequency, a compile starting elsewhere)
      local order = (r % 2 == 1) and { { "A", a }, { "B", b } } or { { "B", b }, { "A", a } }
      for _, side in ipairs(order) do
        local out = ("%s/%s.%s.%d.txt"):format(outdir, bench, side[1], r)
        io.stderr:write(("round %d/%d %s %s\n"):format(r, rounds, bench, side[1]))
        sh(command(side[2], bench) .. (" > %q 2>&1"):format(out))
      end
    end
  end
end

local function is_number(tok)
  return tok:match("^%-?%d+%.?%d*[,;]?$") ~= nil
end

-- figures[key][i] = value of the i-th number on the line whose text is key
local function parse(path, figures, order)
  local seen = {}
  for line in io.lines(path) do
    local toks, nums = {}, {}
    for tok in line:gmatch("%S+") do
      if is_number(tok) then
        nums[#nums + 1] = tonumber((tok:gsub("[,;]$", "")))
        toks[#toks + 1] = "#"
      else
        toks[#toks + 1] = tok
      end
    end
    if #nums > 0 then
      local key = table.concat(toks, " ")
      -- a text seen twice in one output (not expected) keeps both apart
      seen[key] = (seen[key] or 0) + 1
      if seen[key] > 1 then key = key .. " [" .. seen[key] .. "]" end
      if not figures[key] then figures[key] = {}; order[#order + 1] = key end
      for i, v in ipairs(nums) do
        figures[key][i] = figures[key][i] or {}
        table.insert(figures[key][i], v)
      end
    end
  end
end

local function median(t)
  local s = { table.unpack(t) }
  table.sort(s)
  local n = #s
  if n % 2 == 1 then return s[(n + 1) // 2] end
  return (s[n // 2] + s[n // 2 + 1]) / 2
end

local function min(t)
  local m = math.huge
  for _, v in ipairs(t) do if v < m then m = v end end
  return m
end

local function compare(outdir)
  local files = {}
  local p = assert(io.popen(("ls %q"):format(outdir)))
  for f in p:lines() do
    local bench, side = f:match("^(.+)%.([AB])%.%d+%.txt$")
    if bench then
      files[bench] = files[bench] or { A = {}, B = {} }
      table.insert(files[bench][side], outdir .. "/" .. f)
    end
  end
  p:close()
  local names = {}
  for bench in pairs(files) do names[#names + 1] = bench end
  table.sort(names)
  print("| bench | figure | # | n | A median | B median | B/A median | A min | B min | B/A min |")
  print("|---|---|---|---|---|---|---|---|---|---|")
  for _, bench in ipairs(names) do
    local fa, fb, oa, ob = {}, {}, {}, {}
    for _, f in ipairs(files[bench].A) do parse(f, fa, oa) end
    for _, f in ipairs(files[bench].B) do parse(f, fb, ob) end
    -- rows in the order B prints them; a row only one side prints is
    -- shown with the other side empty
    local keys, have = {}, {}
    for _, k in ipairs(ob) do keys[#keys + 1] = k; have[k] = true end
    for _, k in ipairs(oa) do if not have[k] then keys[#keys + 1] = k end end
    for _, k in ipairs(keys) do
      local n = math.max(#(fa[k] or {}), #(fb[k] or {}))
      for i = 1, n do
        local va, vb = fa[k] and fa[k][i], fb[k] and fb[k][i]
        local all = {}
        for _, v in ipairs(va or {}) do all[#all + 1] = v end
        for _, v in ipairs(vb or {}) do all[#all + 1] = v end
        if min(all) ~= math.max(table.unpack(all)) then
          local function fmt(v) return v and ("%.4g"):format(v) or "" end
          local ma, mb = va and median(va), vb and median(vb)
          local na, nb = va and min(va), vb and min(vb)
          print(("| %s | %s | %d | %d/%d | %s | %s | %s | %s | %s | %s |"):format(
            bench, k:gsub("|", "/"), i, va and #va or 0, vb and #vb or 0,
            fmt(ma), fmt(mb), (ma and mb and ma ~= 0) and ("%.3f"):format(mb / ma) or "",
            fmt(na), fmt(nb), (na and nb and na ~= 0) and ("%.3f"):format(nb / na) or ""))
        end
      end
    end
  end
end

local cmd = arg[1]
if cmd == "run" then
  local list = {}
  for i = 6, #arg do list[#list + 1] = arg[i] end
  run(assert(arg[2], "OUTDIR"), assert(tonumber(arg[3]), "ROUNDS"),
    assert(arg[4], "TREE_A"), assert(arg[5], "TREE_B"), list)
elseif cmd == "compare" then
  compare(assert(arg[2], "OUTDIR"))
else
  io.stderr:write("usage: lua5.4 bench/ab.lua run OUTDIR ROUNDS TREE_A TREE_B [BENCH...]\n" ..
    "       lua5.4 bench/ab.lua compare OUTDIR\n")
  os.exit(2)
end
