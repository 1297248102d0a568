--[[
codeblocks_spec.lua -- every fenced code block of README.md and docs/*.md
either runs or says what it is. The words after the opening ``` fence (its
info string) decide:

  ```lua               runs: loaded with the file's name as chunk name and
                       run in a fresh environment (globals read through to
                       _G; `require("ecs")` and the plugins available), with
                       nothing from other blocks
  ```lua continued     runs together with the lua block(s) just before it in
                       the same file, as one chunk: its locals are theirs
                       (the group runs once, at its last block)
  ```lua signature     a listing of calls and their results (placeholders
                       like `[, budget]` or `...`), not run
  ```c  ```sh  ```text  C listings, shell commands, output, formats and
                       diagrams: never run

A fence with no info string or with any other one fails here, and so does a
`lua` block that raises: a new example either runs or is marked.

Printed results are checked: in a block that runs, `print(...)` on a line
that ends with `--> text`, or that is followed by lines holding only
`--> text`, must print that text (runs of blank space compare equal; the
lines after the first joined by newlines; "1.0" equals "1"), every time it
runs, and must run at least once. Other `-->` comments are not checked.
Lines keep their numbers, so an error names the document's own line
("README.md:140: ..."). print output is captured, not shown. The blocks must
not leave files behind. Contributors' summary: docs/architecture.md, "Code
blocks in the documentation".
Runs from the repository root (busted's working directory).
]]
local lfs = require("lfs")
local compat = require("spec.support.lua") -- load and pack on every Lua

local read = require("spec.support.files").read

-- The documents: README.md and docs/*.md, in a fixed order.
local function documents()
  local out = {}
  for name in lfs.dir("docs") do
    if name:match("%.md$") then out[#out + 1] = "docs/" .. name end
  end
  table.sort(out)
  table.insert(out, 1, "README.md")
  return out
end

local KINDS = {
  ["lua"] = "run", ["lua continued"] = "continued", ["lua signature"] = "listing",
  ["c"] = "listing", ["sh"] = "listing", ["text"] = "listing",
}

-- The fenced blocks of text: { info =, kind =, first =, last =, lines = { [n] = line } }
-- (first and last: the lines of the code, between the fences). An unclosed fence is an
-- error.
local function blocks(text, name)
  local out, cur, n = {}, nil, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    -- CommonMark: up to 3 spaces, 3 or more backticks; an opening fence's info string
    -- has no backtick; a closing fence is at least as long and has none.
    local fence, info = line:match("^ ? ? ?(```+)([^`]*)$")
    if fence and not cur then
      info = info:gsub("^%s+", ""):gsub("%s+$", ""):gsub("%s+", " ")
      cur = { info = info, kind = KINDS[info], fence = #fence, first = n + 1, lines = {} }
    elseif fence and #fence >= cur.fence and info:match("^%s*$") then
      cur.last = n - 1
      out[#out + 1] = cur
      cur = nil
    elseif cur then
      cur.lines[n] = line
    end
  end
  assert(not cur, name .. ":" .. (cur and cur.first - 1 or 0) .. ": code fence not closed")
  return out
end

-- Chunks to run: each "run" block with the "continued" ones after it, as one source
-- whose line numbers are the document's.
local function groups(list, name)
  local out, problems = {}, {}
  for _, b in ipairs(list) do
    if b.kind == "run" then
      out[#out + 1] = { name = name, blocks = { b } }
    elseif b.kind == "continued" then
      if #out == 0 then
        problems[#problems + 1] = name .. ":" .. b.first .. ": `lua continued` with no lua block before it"
      else
        table.insert(out[#out].blocks, b)
      end
    elseif not b.kind then
      problems[#problems + 1] = string.format("%s:%d: fence ```%s: mark it lua, lua continued, " ..
        "lua signature, c, sh or text", name, b.first - 1, b.info)
    end
  end
  return out, problems
end

local function source(group)
  local lines, last = {}, group.blocks[#group.blocks].last
  for i = 1, last do lines[i] = "" end
  for _, b in ipairs(group.blocks) do
    for i = b.first, b.last do lines[i] = b.lines[i] end
  end
  return table.concat(lines, "\n"), lines
end

-- line -> expected output, for every print line annotated with -->.
local function expectations(lines, first_line)
  local out = {}
  for i = first_line, #lines do
    local line = lines[i]
    if line:find("print%(") and not line:match("^%s*%-%-") then
      local parts = {}
      local own = line:match("%-%->%s*(.-)%s*$")
      if own then parts[1] = own end
      local j = i + 1
      while lines[j] and lines[j]:match("^%s*%-%->") do
        parts[#parts + 1] = lines[j]:match("^%s*%-%->%s*(.-)%s*$")
        j = j + 1
      end
      if #parts > 0 then out[i] = table.concat(parts, "\n") end
    end
  end
  return out
end

-- Blank runs compare equal, and so do an integral float and its integer ("1.0" and "1": Lua
-- 5.3 and 5.4 print the first, older Luas and LuaJIT the second).
local function squash(s)
  s = s:gsub("[ \t]+", " "):gsub(" ?\n ?", "\n"):gsub("^ ", ""):gsub(" $", "")
  return (s:gsub("(%d)%.0+%f[^%d]", "%1"))
end

-- Runs a group; returns nil or the text of what went wrong.
local function run(group)
  local src, lines = source(group)
  local chunkname = "@" .. group.name
  local printed = {}
  local env = setmetatable({}, { __index = _G })
  env.print = function(...)
    local info = debug.getinfo(2, "Sl")
    local parts = compat.pack(...)
    for k = 1, parts.n do parts[k] = tostring(parts[k]) end
    if info and info.source == chunkname then
      local at = printed[info.currentline] or {}
      printed[info.currentline] = at
      at[#at + 1] = table.concat(parts, "\t", 1, parts.n)
    end
  end
  local fn, err = compat.load(src, chunkname, "t", env)
  if not fn then return err end
  local ok, msg = pcall(fn)
  if not ok then return tostring(msg) end
  for line, want in pairs(expectations(lines, group.blocks[1].first)) do
    local got = printed[line]
    if not got then
      return string.format("%s:%d: this print never ran (expected %q)", group.name, line, want)
    end
    for _, g in ipairs(got) do
      if squash(g) ~= squash(want) then
        return string.format("%s:%d: printed %q, the document says %q", group.name, line, g, want)
      end
    end
  end
  return nil
end

local function entries()
  local out = {}
  for name in lfs.dir(".") do out[#out + 1] = name end
  table.sort(out)
  return table.concat(out, "\n")
end

describe("code blocks of README.md and docs/*.md", function()
  local all_groups, problems, counts = {}, {}, { run = 0, continued = 0, listing = 0 }
  for _, name in ipairs(documents()) do
    local list = blocks(read(name), name)
    for _, b in ipairs(list) do
      if b.kind then counts[b.kind] = counts[b.kind] + 1 end
    end
    local gs, ps = groups(list, name)
    for _, g in ipairs(gs) do all_groups[#all_groups + 1] = g end
    for _, p in ipairs(ps) do problems[#problems + 1] = p end
  end

  it("every fence says what it is", function()
    assert.are.same({}, problems)
    assert.is_true(counts.run >= 5, "too few blocks run to be real")
    assert.is_true(counts.listing >= 20, "too few listings to be real")
  end)

  it("every lua block runs and prints what it says", function()
    local before = entries()
    local failures = {}
    for _, g in ipairs(all_groups) do
      local err = run(g)
      if err then failures[#failures + 1] = err end
      collectgarbage() -- the block's worlds and objects, closed by their finalizers
    end
    assert.are.same({}, failures)
    assert.are.equal(before, entries(), "a code block left files behind")
  end)

  it("the checks themselves catch a block that raises, a wrong output and an unmarked fence", function()
    local doc = table.concat({
      "```lua", "local ecs = require('ecs')", "print(ecs.id(ecs.null))  --> 0", "```",
      "```lua continued", "print(ecs.id(ecs.null) + 1)  --> 2", "```",
      "```lua", "error('boom')", "```",
      "```lua signature", "world:nothing(e [, x])", "```",
      "```", "plain", "```",
    }, "\n")
    local gs, ps = groups(blocks(doc, "t.md"), "t.md")
    assert.are.same({ "t.md:14: fence ```: mark it lua, lua continued, lua signature, c, sh or text" }, ps)
    assert.are.equal(2, #gs)
    assert.matches('t.md:6: printed "1", the document says "2"', run(gs[1]), 1, true)
    assert.matches("t.md:9: boom", run(gs[2]), 1, true)
    local good = blocks("```lua\nprint(1, 'a')  --> 1 a\nprint('x')\n--> x\n--> y\n```\n", "u.md")
    assert.matches(string.format("u.md:3: printed %q, the document says %q", "x", "x\ny"),
      run(groups(good, "u.md")[1]), 1, true)
    local fine = blocks("```lua\nprint(1, 'a')  --> 1   a\nprint('x\\ny')\n--> x\n--> y\n```\n", "v.md")
    assert.is_nil(run(groups(fine, "v.md")[1]))
    local floats = blocks("```lua\nprint(1.0, 2, 10.05, 0.5)  --> 1 2.0 10.05 0.5\n" ..
      "print(10.5) --> 10.05\n```\n", "f.md")
    assert.matches('f.md:3: printed "10.5"', run(groups(floats, "f.md")[1]), 1, true)
    local never = blocks("```lua\nif false then print(1) --> 1\nend\n```\n", "w.md")
    assert.matches("w.md:2: this print never ran", run(groups(never, "w.md")[1]), 1, true)
  end)
end)
