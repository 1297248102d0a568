--[[
layers_tool_spec.lua -- the layering check (tools/layers.lua,
docs/architecture.md "The layering check") on small fixtures: C files
compiled here into a build directory laid out as CMake lays one out, with a
map of their layers. The tool must find a known upward use and a known loop,
tell a loop across folders from one inside a folder, pass a clean fixture,
refuse a file no layer holds, and place every file of the project's own
build. Needs cc, nm and lua5.4 (the tool's Lua); pending without them.
]]
local files = require("spec.support.files")
local write, exists = files.write, files.exists

local function quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- Output and exit code of a shell command (printed by the shell: before
-- 5.2 a popen's close does not tell it). The sanitizer runtimes some runs
-- preload stay out of the children.
local function sh(cmd)
  local p = assert(io.popen("env -u LD_PRELOAD sh -c " .. quote(cmd) .. " 2>&1; echo \"[exit $?]\""))
  local out = p:read("*a")
  p:close()
  local text, code = out:match("^(.-)%[exit (%d+)%]\n?$")
  return text or out, tonumber(code) or -1
end

local missing = {}
for _, tool in ipairs({ "cc", "nm", "lua5.4" }) do
  if select(2, sh("command -v " .. tool)) ~= 0 then missing[#missing + 1] = tool end
end

local tmp -- the fixtures' directory, made by the first fixture

-- A fixture: sources { ["src/a.c"] = "code" }, compiled (in one shell, for
-- speed) into <dir>/build/CMakeFiles/fix.dir/src/a.c.o as CMake names
-- objects; opts.link lists them in a link.txt as CMake's Makefiles do (then
-- an object it does not name is a stale one), opts.stale compiles such a
-- source without naming it. @return the fixture's directory.
local count = 0
local function fixture(sources, opts)
  opts = opts or {}
  if not tmp then
    local text = sh("mktemp -d")
    tmp = assert(text:match("^(%S+)"), "mktemp -d failed: " .. text)
  end
  count = count + 1
  local dir = tmp .. "/f" .. count
  local objdir = dir .. "/build/CMakeFiles/fix.dir"
  local cmds, listed = {}, {}
  local function add(path, code, list)
    local obj = objdir .. "/" .. path .. ".o"
    local src = dir .. "/" .. path
    cmds[#cmds + 1] = "mkdir -p " .. quote(src:match("^(.*)/")) .. " " .. quote(obj:match("^(.*)/"))
    cmds[#cmds + 1] = "printf '%s' " .. quote(code) .. " > " .. quote(src)
    cmds[#cmds + 1] = "cc -std=c11 -c -o " .. quote(obj) .. " " .. quote(src)
    if list then listed[#listed + 1] = "CMakeFiles/fix.dir/" .. path .. ".o" end
  end
  local names = {}
  for path in pairs(sources) do names[#names + 1] = path end
  table.sort(names)
  for _, path in ipairs(names) do add(path, sources[path], true) end
  for path, code in pairs(opts.stale or {}) do add(path, code, false) end
  local out, code = sh(table.concat(cmds, " && "))
  assert(code == 0, out)
  if opts.link then
    write(objdir .. "/link.txt", "/usr/bin/ar qc libfix.a " .. table.concat(listed, " ") .. "\n")
  end
  return dir
end

-- Run the tool over a fixture's build with map (its "targets = fix" line
-- added unless it has one): @return output, exit code.
local function layers(dir, map, args)
  if not map:find("^targets") then map = "targets = fix\n" .. map end
  count = count + 1
  local path = dir .. "/layers" .. count .. ".map"
  write(path, map)
  return sh("lua5.4 tools/layers.lua " .. quote(dir .. "/build") .. " --map " .. quote(path) .. " " .. (args or ""))
end

local function has(text, s)
  assert(text:find(s, 1, true), "expected in the output: " .. s .. "\n--- output:\n" .. text)
end

-- low.c uses high.c (upward) and high.c uses low.c: a loop of both layers;
-- mid.c only uses low.c and libc
local UPWARD = {
  ["src/low.c"] = "int low_fn(int x);\nint high_fn(int x);\nint low_fn(int x) { return x > 0 ? high_fn(x - 1) : 0; }\n",
  ["src/mid.c"] = "#include <string.h>\nint low_fn(int x);\nint mid_fn(const char *s);\n"
    .. "int mid_fn(const char *s) { return low_fn((int)strlen(s)); }\n",
  ["src/high.c"] = "int low_fn(int x);\nint high_fn(int x);\nint high_fn(int x) { return low_fn(x); }\n",
}
local UPWARD_MAP = "low: src/low.c\nmid: src/mid.c\nhigh: src/high.c\n"

describe("tools/layers.lua", function()
  if #missing > 0 then
    pending("needs " .. table.concat(missing, ", ") .. " (not found)")
    return
  end

  local upward -- UPWARD's build, shared by the tests that read it
  setup(function() upward = fixture(UPWARD) end)
  teardown(function()
    if tmp then sh("rm -rf " .. quote(tmp)) end
  end)

  it("finds a use from a lower layer of a higher one, and the loop it closes", function()
    local out, code = layers(upward, UPWARD_MAP)
    assert.equal(1, code, out)
    has(out, "== upward uses: 1 file edges (1 symbols)")
    has(out, "low -> high: src/low.c -> src/high.c: high_fn")
    has(out, "loop 1: 2 files, 2 layer(s) (low high), 1 folder(s) (src/)  ACROSS LAYERS")
    has(out, "    src/high.c src/low.c")
    -- the graph per layer: files, and uses per layer with counts
    has(out, "2 mid (1 files): src/mid.c")
    has(out, "    -> low            1 file edges,    1 symbols")
    has(out, "    -> high           1 file edges,    1 symbols  UPWARD")
    -- libc's strlen is no file of the graph
    assert.is_nil(out:find("strlen", 1, true), out)
    has(out, "layers: 1 upward edges (1 symbols); 1 loops, largest 2 files; 0 across folders, "
      .. "1 across layers; FAIL")
    -- --report prints the same (but for the word on the outcome) and exits 0
    local report, rcode = layers(upward, UPWARD_MAP, "--report")
    assert.equal(0, rcode, report)
    has(report, "1 across layers; would fail (--report)\n")
    assert.equal(out:gsub("layers%d+%.map", ""):gsub("; FAIL\n", "; would fail (--report)\n"),
                 (report:gsub("layers%d+%.map", "")))
  end)

  it("fails a loop across folders inside one layer, not one inside a folder", function()
    local dir = fixture({
      ["src/a/x.c"] = "int x_fn(int n);\nint y_fn(int n);\nint x_fn(int n) { return n ? y_fn(n - 1) : 0; }\n",
      ["src/b/y.c"] = "int x_fn(int n);\nint y_fn(int n);\nint y_fn(int n) { return n ? x_fn(n - 1) : 1; }\n",
      ["src/c/p.c"] = "int p_fn(int n);\nint q_fn(int n);\nint p_fn(int n) { return n ? q_fn(n - 1) : 0; }\n",
      ["src/c/q.c"] = "int p_fn(int n);\nint q_fn(int n);\nint q_fn(int n) { return n ? p_fn(n - 1) : 1; }\n",
    })
    local out, code = layers(dir, "one: src/a/ src/b/ src/c/\n")
    assert.equal(1, code, out)
    has(out, "== upward uses: 0 file edges (0 symbols)")
    has(out, "1 layer(s) (one), 2 folder(s) (src/a/ src/b/)  ACROSS FOLDERS")
    has(out, "1 layer(s) (one), 1 folder(s) (src/c/)\n")
    has(out, "2 loops, largest 2 files; 1 across folders, 0 across layers; FAIL")
  end)

  it("passes a clean fixture: uses downward and a loop inside one folder", function()
    local dir = fixture({
      ["src/base/low.c"] = "int low_fn(int x);\nint low_fn(int x) { return x + 1; }\n",
      ["src/top/p.c"] = "int low_fn(int x);\nint p_fn(int n);\nint q_fn(int n);\n"
        .. "int p_fn(int n) { return n ? q_fn(n - 1) : low_fn(0); }\n",
      ["src/top/q.c"] = "int p_fn(int n);\nint q_fn(int n);\nint q_fn(int n) { return n ? p_fn(n - 1) : 1; }\n",
    }, {
      link = true,
      -- an object left behind by a removed file: not in link.txt, so not read
      stale = { ["src/old.c"] = "int old_fn(void);\nint old_fn(void) { return 0; }\n" },
    })
    local map = "# a comment\nbase: src/base/\n\ntop:\n  src/top/*.c  # a continued line\n"
    local out, code = layers(dir, map, "--dot " .. quote(dir .. "/graph.dot"))
    assert.equal(0, code, out)
    has(out, "3 files (3 of fix)")
    has(out, "    -> base           1 file edges,    1 symbols\n")
    has(out, "layers: 0 upward edges (0 symbols); 1 loops, largest 2 files; 0 across folders, "
      .. "0 across layers; ok")
    assert.is_nil(out:find("src/old.c", 1, true), out)
    local dot = files.read(dir .. "/graph.dot")
    has(dot, "digraph layers {")
    has(dot, "\"src/top/p.c\" -> \"src/base/low.c\"")
  end)

  it("refuses a file no layer holds, and one two layers hold, naming them", function()
    local out, code = layers(upward, "low: src/low.c\nhigh: src/high.c\n", "--report")
    assert.equal(2, code, out)
    has(out, "src/mid.c (fix): in no layer")
    out, code = layers(upward, UPWARD_MAP .. "again: src/mid.c\n", "--report")
    assert.equal(2, code, out)
    has(out, "src/mid.c (fix): in two layers: mid (src/mid.c, line 3) and again (src/mid.c, line 5)")
  end)

  it("says to build first when a target has no objects", function()
    local out, code = layers(upward, "targets = fix other\n" .. UPWARD_MAP)
    assert.equal(2, code, out)
    has(out, "no object files of target other")
  end)

  it("places every object file of the project's build in its map", function()
    -- the build the specs run against (build/, build-asan/, ...), when CMake made it
    local build = package.cpath:match("^([^;]-)/%?%.so")
    if not build or not exists(build .. "/CMakeFiles/ecs_corelib.dir/link.txt") then
      pending("no CMake build beside the module under test (" .. tostring(build) .. "/)")
      return
    end
    local out, code = sh("lua5.4 tools/layers.lua " .. quote(build) .. " --report --quiet")
    assert.equal(0, code, out)
    has(out, "\nlayers: ")
  end)
end)
