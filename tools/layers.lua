#!/usr/bin/env lua5.4
--[[
layers.lua -- the layering check (docs/architecture.md, "The layering check").

Reads the symbols every object file of the core and the binding defines and
uses (nm), so that each use of a function or variable of another file is an
edge file -> file; places the files in the layers of a map (tools/layers.map:
one layer per line, lowest first); reports every use from a lower layer of an
upper one, the loops of the file graph (strongly connected components) and
the graph per layer. Symbols no object defines (libc, libm, threads, Lua) are
outside the graph.

Why the objects and not the sources: a use the compiler kept is a real
dependency, whatever the includes say, and a use through a header's inline
function counts in the file that calls it; a call through a hook (a function
pointer handed down) is no symbol use, which is exactly the sanctioned way
for a lower layer to reach an upper one.

  lua5.4 tools/layers.lua [build-dir] [--map FILE] [--dot FILE] [--report]
                          [--build] [--edges] [--quiet]

Exit status: 0 when no lower layer uses an upper one and no loop spans two
folders; 1 otherwise (0 with --report, which prints the same); 2 for an
error of use (no objects, a bad map, an object file no layer holds).
]]

local USAGE = [[
usage: lua5.4 tools/layers.lua [build-dir] [options]
  build-dir     a CMake build directory (default: build)
  --map FILE    the layer map (default: layers.map beside this script)
  --dot FILE    also write the file graph for Graphviz (dot -Tsvg FILE)
  --report      print the findings and exit 0 whatever they are
  --build       run `cmake --build build-dir --target <targets>` first
  --edges       list every file edge with its symbols too
  --quiet       print the findings and the summary line only
exit: 0 clean, 1 upward uses or loops across folders, 2 error of use]]

local function fail(fmt, ...)
  io.stderr:write("layers: ", fmt:format(...), "\n")
  os.exit(2)
end

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function sorted_keys(t, cmp)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out, cmp)
  return out
end

local function dirname(path)
  return path:match("^(.*/)") or "./"
end

-- ---------------------------------------------------------------------------
-- Options
-- ---------------------------------------------------------------------------

local opt = { build = "build", report = false, quiet = false, make = false, edges = false }
do
  local script_dir = dirname(arg and arg[0] or "tools/layers.lua")
  opt.map = script_dir .. "layers.map"
  local i, positional = 1, 0
  while i <= #arg do
    local a = arg[i]
    if a == "--map" or a == "--dot" then
      i = i + 1
      if arg[i] == nil then fail("%s needs a file name\n%s", a, USAGE) end
      opt[a:sub(3)] = arg[i]
    elseif a == "--report" then opt.report = true
    elseif a == "--quiet" then opt.quiet = true
    elseif a == "--edges" then opt.edges = true
    elseif a == "--build" then opt.make = true
    elseif a == "-h" or a == "--help" then print(USAGE) os.exit(0)
    elseif a:sub(1, 1) == "-" then fail("unknown option %s\n%s", a, USAGE)
    else
      positional = positional + 1
      if positional > 1 then fail("one build directory expected\n%s", USAGE) end
      opt.build = a
    end
    i = i + 1
  end
  opt.build = opt.build:gsub("/+$", "")
end

-- ---------------------------------------------------------------------------
-- The map
--
--   # comment
--   targets = ecs_corelib ecs_core      the CMake targets whose objects count
--   base: src/alloc.c src/value.c       a layer: its name, then entries
--         src/checksum.c                (an indented line continues it)
--   storage: src/storage/ src/rowmap.c  a folder (trailing /): all under it
--   query: src/query*.c                 a glob: * and ? within one name
--
-- Later layers are higher. A file in several entries belongs to the most
-- specific: a file named exactly, then a glob (the longest), then a folder
-- (the deepest); two layers' entries equally specific for one file is an
-- error, as is an object file no entry holds.
-- ---------------------------------------------------------------------------

local function glob_pattern(glob)
  local p = glob:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0")
  p = p:gsub("%*", "[^/]*"):gsub("%?", "[^/]")
  return "^" .. p .. "$"
end

local function read_map(path)
  local text = read_file(path)
  if not text then fail("cannot read the map %s", path) end
  local map = { layers = {}, index = {}, entries = {}, targets = nil }
  local current
  local n = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    local body = line:gsub("#.*$", "")
    if body:match("^%s*$") then
      goto next_line
    end
    do
      local key, rest = body:match("^([%w_%-]+)%s*=%s*(.*)$")
      if key then
        if key ~= "targets" then fail("%s:%d: unknown setting '%s'", path, n, key) end
        map.targets = {}
        for t in rest:gmatch("%S+") do map.targets[#map.targets + 1] = t end
        current = nil
        goto next_line
      end
      local name
      name, rest = body:match("^([%w_%-]+)%s*:(.*)$")
      if name then
        if map.index[name] then fail("%s:%d: layer '%s' named twice", path, n, name) end
        current = { name = name, rank = #map.layers + 1, line = n }
        map.layers[#map.layers + 1] = current
        map.index[name] = current
      elseif body:match("^%s") and current then
        rest = body
      else
        fail("%s:%d: 'layer: entries', 'targets = ...' or an indented continuation expected", path, n)
      end
      for e in rest:gmatch("%S+") do
        local entry = { text = e, layer = current, line = n, used = 0 }
        if e:sub(-1) == "/" then
          entry.kind, entry.score = "folder", 1e6 + #e
        elseif e:find("[%*%?]") then
          entry.kind, entry.score = "glob", 2e6 + #e:gsub("[%*%?]", "")
          entry.pattern = glob_pattern(e)
        else
          entry.kind, entry.score = "file", 3e6
        end
        map.entries[#map.entries + 1] = entry
      end
    end
    ::next_line::
  end
  if #map.layers == 0 then fail("%s: no layer", path) end
  if not map.targets or #map.targets == 0 then fail("%s: no 'targets = ...' line", path) end
  return map
end

local function entry_matches(e, file)
  if e.kind == "folder" then return file:sub(1, #e.text) == e.text end
  if e.kind == "glob" then return file:match(e.pattern) ~= nil end
  return file == e.text
end

-- The layer of file, or nil and why.
local function place(map, file)
  local best, tie
  for _, e in ipairs(map.entries) do
    if entry_matches(e, file) then
      if not best or e.score > best.score then best, tie = e, nil
      elseif e.score == best.score and e.layer ~= best.layer then tie = e end
    end
  end
  if not best then return nil, "in no layer" end
  if tie then
    return nil, ("in two layers: %s (%s, line %d) and %s (%s, line %d)"):format(
      best.layer.name, best.text, best.line, tie.layer.name, tie.text, tie.line)
  end
  best.used = best.used + 1
  return best.layer
end

-- ---------------------------------------------------------------------------
-- The objects of a target: those its link step names (link.txt of the
-- Makefile generators, build.ninja of Ninja), so that an object left behind
-- by a file moved or removed does not count; failing both, every *.o under
-- CMakeFiles/<target>.dir. CMake names an object after its source's path in
-- the source tree: CMakeFiles/<target>.dir/src/lua/world.c.o is src/lua/world.c.
-- ---------------------------------------------------------------------------

local function objects_of(build, target)
  local prefix = "CMakeFiles/" .. target .. ".dir/"
  local seen, list = {}, {}
  local function add(obj)
    if obj:sub(1, #prefix) == prefix and obj:match("%.o$") and not seen[obj] then
      seen[obj] = true
      list[#list + 1] = obj
    end
  end
  local link = read_file(build .. "/" .. prefix .. "link.txt")
  if link then
    for tok in link:gmatch("%S+") do
      if tok:sub(1, 1) == "@" then -- a response file of a long command
        local rsp = read_file(build .. "/" .. tok:sub(2)) or ""
        for t in rsp:gmatch("%S+") do add(t) end
      else
        add(tok)
      end
    end
  else
    local ninja = read_file(build .. "/build.ninja")
    if ninja then
      for obj in ninja:gmatch("\nbuild (CMakeFiles/[^\n:]-%.o):") do add(obj) end
    end
    if #list == 0 then
      local p = io.popen("find " .. shell_quote(build .. "/" .. prefix) .. " -name '*.o' 2>/dev/null")
      for line in p:lines() do add(line:sub(#build + 2)) end
      p:close()
    end
  end
  table.sort(list)
  local out = {}
  for _, obj in ipairs(list) do
    local f = io.open(build .. "/" .. obj, "rb")
    if not f then fail("%s/%s is named by the build of %s but missing: build first (cmake --build %s)",
      build, obj, target, build) end
    f:close()
    out[#out + 1] = { path = build .. "/" .. obj, file = obj:sub(#prefix + 1, -3), target = target }
  end
  return out
end

-- ---------------------------------------------------------------------------
-- Symbols: nm -P (POSIX format: "name type value size"), one run for all
-- objects; a line "object:" starts each object's part. Upper-case types
-- other than U are global definitions; U (and w, v: weak references) uses.
-- ---------------------------------------------------------------------------

local function read_symbols(objects)
  local by_path = {}
  for _, o in ipairs(objects) do
    o.defines, o.uses = {}, {}
    by_path[o.path] = o
  end
  local cmd = { "nm -P" }
  for _, o in ipairs(objects) do cmd[#cmd + 1] = shell_quote(o.path) end
  local p = io.popen(table.concat(cmd, " "))
  local out = p:read("a")
  local ok, _, code = p:close()
  if not ok then fail("nm failed (exit %s)", tostring(code)) end
  local cur = #objects == 1 and objects[1] or nil
  for line in out:gmatch("[^\n]+") do
    local head = line:match("^(.-):$")
    if head and by_path[head] then
      cur = by_path[head]
    elseif cur then
      local name, kind = line:match("^(%S+) (%a) ?")
      if name then
        if kind == "U" or kind == "w" or kind == "v" then
          cur.uses[name] = true
        elseif kind:match("%u") then
          cur.defines[name] = true
        end
      end
    end
  end
end

-- ---------------------------------------------------------------------------
-- Strongly connected components (Tarjan), over nodes 1..n with succ[i] a
-- list of node numbers. @return a list of components, each a list of nodes.
-- ---------------------------------------------------------------------------

local function tarjan(n, succ)
  local index, low, on, stack, comps, counter = {}, {}, {}, {}, {}, 0
  local function visit(v)
    counter = counter + 1
    index[v], low[v] = counter, counter
    stack[#stack + 1] = v
    on[v] = true
    for _, w in ipairs(succ[v]) do
      if not index[w] then
        visit(w)
        if low[w] < low[v] then low[v] = low[w] end
      elseif on[w] and index[w] < low[v] then
        low[v] = index[w]
      end
    end
    if low[v] == index[v] then
      local comp = {}
      repeat
        local w = table.remove(stack)
        on[w] = false
        comp[#comp + 1] = w
      until w == v
      comps[#comps + 1] = comp
    end
  end
  for v = 1, n do
    if not index[v] then visit(v) end
  end
  return comps
end

-- ---------------------------------------------------------------------------
-- The check
-- ---------------------------------------------------------------------------

local map = read_map(opt.map)

if opt.make then
  local cmd = ("cmake --build %s --target %s"):format(shell_quote(opt.build), table.concat(map.targets, " "))
  if not os.execute(cmd .. " >/dev/null") then fail("'%s' failed", cmd) end
end

local objects = {}
for _, t in ipairs(map.targets) do
  local list = objects_of(opt.build, t)
  if #list == 0 then
    fail("no object files of target %s under %s/CMakeFiles/%s.dir: build first (cmake --build %s)",
      t, opt.build, t, opt.build)
  end
  for _, o in ipairs(list) do objects[#objects + 1] = o end
end

-- every file placed, or an error naming each one that is not
do
  local bad = {}
  for _, o in ipairs(objects) do
    local layer, why = place(map, o.file)
    if layer then o.layer = layer
    else bad[#bad + 1] = ("  %s (%s): %s"):format(o.file, o.target, why) end
  end
  if #bad > 0 then
    fail("%s: every object's source must be in exactly one layer:\n%s", opt.map, table.concat(bad, "\n"))
  end
end

read_symbols(objects)

local definer, duplicates = {}, {}
for i, o in ipairs(objects) do
  for name in pairs(o.defines) do
    if definer[name] and definer[name] ~= i then
      duplicates[#duplicates + 1] = ("%s in %s and %s"):format(name, objects[definer[name]].file, o.file)
    else
      definer[name] = i
    end
  end
end

-- edges: edge[i][j] = sorted symbols object i uses of object j
local edge, succ, external = {}, {}, {}
for i, o in ipairs(objects) do
  local to = {}
  for name in pairs(o.uses) do
    local j = definer[name]
    if j == nil then external[name] = true
    elseif j ~= i then
      to[j] = to[j] or {}
      table.insert(to[j], name)
    end
  end
  edge[i], succ[i] = to, {}
  for j, syms in pairs(to) do
    table.sort(syms)
    succ[i][#succ[i] + 1] = j
  end
  table.sort(succ[i])
end

local layers = map.layers
local files_of = {}
for _, l in ipairs(layers) do files_of[l.name] = {} end
for i, o in ipairs(objects) do table.insert(files_of[o.layer.name], i) end

-- upward uses, lowest layer first, then by file
local upward, upward_symbols = {}, 0
for i, o in ipairs(objects) do
  for _, j in ipairs(succ[i]) do
    if objects[j].layer.rank > o.layer.rank then
      upward[#upward + 1] = { from = i, to = j, syms = edge[i][j] }
      upward_symbols = upward_symbols + #edge[i][j]
    end
  end
end
table.sort(upward, function(a, b)
  local la, lb = objects[a.from].layer.rank, objects[b.from].layer.rank
  if la ~= lb then return la < lb end
  local ta, tb = objects[a.to].layer.rank, objects[b.to].layer.rank
  if ta ~= tb then return ta < tb end
  if a.from ~= b.from then return objects[a.from].file < objects[b.from].file end
  return objects[a.to].file < objects[b.to].file
end)

-- loops: components of more than one file, largest first
local loops = {}
for _, comp in ipairs(tarjan(#objects, succ)) do
  if #comp > 1 then
    local folders, lnames = {}, {}
    for _, i in ipairs(comp) do
      folders[dirname(objects[i].file)] = true
      lnames[objects[i].layer.name] = true
    end
    table.sort(comp, function(a, b) return objects[a].file < objects[b].file end)
    loops[#loops + 1] = {
      files = comp,
      folders = sorted_keys(folders),
      layers = sorted_keys(lnames, function(a, b) return map.index[a].rank < map.index[b].rank end),
    }
  end
end
table.sort(loops, function(a, b)
  if #a.files ~= #b.files then return #a.files > #b.files end
  return objects[a.files[1]].file < objects[b.files[1]].file
end)
local loops_across_folders, loops_across_layers = 0, 0
for _, l in ipairs(loops) do
  if #l.folders > 1 then loops_across_folders = loops_across_folders + 1 end
  if #l.layers > 1 then loops_across_layers = loops_across_layers + 1 end
end

-- ---------------------------------------------------------------------------
-- Output
-- ---------------------------------------------------------------------------

local out = {}
local function say(fmt, ...) out[#out + 1] = fmt:format(...) end

local function names_of(list)
  local t = {}
  for k, i in ipairs(list) do t[k] = objects[i].file end
  return table.concat(t, " ")
end

local nedges = 0
for i = 1, #objects do nedges = nedges + #succ[i] end

if not opt.quiet then
  local per_target = {}
  for _, t in ipairs(map.targets) do
    local c = 0
    for _, o in ipairs(objects) do if o.target == t then c = c + 1 end end
    per_target[#per_target + 1] = ("%d of %s"):format(c, t)
  end
  say("layering of %s (%s): %d files (%s), %d uses between files; %d symbols used from outside them",
    opt.build, opt.map, #objects, table.concat(per_target, ", "), nedges, #sorted_keys(external))
  say("")
  say("== the layers, lowest first: files, and uses per layer below, own and above")
  for _, l in ipairs(layers) do
    local f = files_of[l.name]
    table.sort(f, function(a, b) return objects[a].file < objects[b].file end)
    say("%d %s (%d files): %s", l.rank, l.name, #f, names_of(f))
    local per = {}
    for _, i in ipairs(f) do
      for _, j in ipairs(succ[i]) do
        local to = objects[j].layer
        per[to] = per[to] or { edges = 0, syms = 0 }
        per[to].edges = per[to].edges + 1
        per[to].syms = per[to].syms + #edge[i][j]
      end
    end
    for _, to in ipairs(sorted_keys(per, function(a, b) return a.rank < b.rank end)) do
      local where = to.rank < l.rank and "" or to == l and "  (own layer)" or "  UPWARD"
      say("    -> %-12s %3d file edges, %4d symbols%s", to.name, per[to].edges, per[to].syms, where)
    end
  end
  say("")
end

if opt.edges then
  say("== every use between files: from -> to: symbols")
  local order = {}
  for i = 1, #objects do order[i] = i end
  table.sort(order, function(a, b)
    local ra, rb = objects[a].layer.rank, objects[b].layer.rank
    if ra ~= rb then return ra < rb end
    return objects[a].file < objects[b].file
  end)
  for _, i in ipairs(order) do
    local to = {}
    for k, j in ipairs(succ[i]) do to[k] = j end
    table.sort(to, function(a, b) return objects[a].file < objects[b].file end)
    for _, j in ipairs(to) do
      say("%s -> %s: %s", objects[i].file, objects[j].file, table.concat(edge[i][j], " "))
    end
  end
  say("")
end

say("== upward uses: %d file edges (%d symbols)", #upward, upward_symbols)
for _, u in ipairs(upward) do
  local a, b = objects[u.from], objects[u.to]
  say("%s -> %s: %s -> %s: %s", a.layer.name, b.layer.name, a.file, b.file, table.concat(u.syms, " "))
end
say("")
say("== loops (strongly connected components of the file graph): %d", #loops)
for k, l in ipairs(loops) do
  local marks = {}
  if #l.folders > 1 then marks[#marks + 1] = "ACROSS FOLDERS" end
  if #l.layers > 1 then marks[#marks + 1] = "ACROSS LAYERS" end
  say("loop %d: %d files, %d layer(s) (%s), %d folder(s) (%s)%s", k, #l.files, #l.layers,
    table.concat(l.layers, " "), #l.folders, table.concat(l.folders, " "),
    #marks > 0 and "  " .. table.concat(marks, ", ") or "")
  say("    %s", names_of(l.files))
end

local notes = {}
for _, e in ipairs(map.entries) do
  if e.used == 0 then
    notes[#notes + 1] = ("map entry %s (layer %s, line %d) holds no object file"):format(e.text, e.layer.name, e.line)
  end
end
for _, d in ipairs(duplicates) do notes[#notes + 1] = "defined twice: " .. d end
for _, l in ipairs(layers) do
  if #files_of[l.name] == 0 then notes[#notes + 1] = ("layer %s holds no object file"):format(l.name) end
end
if #notes > 0 then
  say("")
  say("== notes")
  for _, n in ipairs(notes) do say("%s", n) end
end

local biggest = loops[1]
local clean = #upward == 0 and loops_across_folders == 0
say("")
say("layers: %d upward edges (%d symbols); %d loops, largest %d files; %d across folders, %d across layers; %s",
  #upward, upward_symbols, #loops, biggest and #biggest.files or 0, loops_across_folders, loops_across_layers,
  clean and "ok" or opt.report and "would fail (--report)" or "FAIL")
print(table.concat(out, "\n"))

if opt.dot then
  local d = { "digraph layers {", "  rankdir=BT; node [shape=box, fontsize=10]; edge [color=gray50];" }
  for _, l in ipairs(layers) do
    d[#d + 1] = ("  subgraph \"cluster_%d\" { label=\"%d %s\";"):format(l.rank, l.rank, l.name)
    for _, i in ipairs(files_of[l.name]) do
      d[#d + 1] = ("    \"%s\";"):format(objects[i].file)
    end
    d[#d + 1] = "  }"
  end
  for i, o in ipairs(objects) do
    for _, j in ipairs(succ[i]) do
      local up = objects[j].layer.rank > o.layer.rank
      d[#d + 1] = ("  \"%s\" -> \"%s\" [tooltip=\"%s\"%s];"):format(o.file, objects[j].file,
        table.concat(edge[i][j], " "), up and ", color=red, penwidth=2" or "")
    end
  end
  d[#d + 1] = "}"
  local f = io.open(opt.dot, "w")
  if not f then fail("cannot write %s", opt.dot) end
  f:write(table.concat(d, "\n"), "\n")
  f:close()
end

os.exit((clean or opt.report) and 0 or 1)
