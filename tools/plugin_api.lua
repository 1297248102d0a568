--[[
plugin_api.lua -- writes the call macros of include/ecs_plugin.h from the
list of the plugin table's functions, include/ecs_api_list.h.

A C plugin calls ecs_count(w) and means (ecs_plugin_api->ecs_count)(w):
ecs_plugin.h needs one #define per function of the table, and a macro of
the preprocessor cannot define macros, so these lines cannot come from the
list the way struct ecs_api and the core's table do. This script writes
them between the two marker lines of ecs_plugin.h, with the list's header
groups; spec/plugins/plugin_build_spec.lua fails while ecs_plugin.h is stale.

  lua5.4 tools/plugin_api.lua [--check] [root]

root is the tree (default: the current directory). --check writes nothing
and exits 1 when ecs_plugin.h differs from what it would write. The file
also loads as a module (dofile): { entries, calls, update }. It runs on
every Lua from 5.1 on.
]]

local M = {}

M.BEGIN = "/* The calls, generated from ecs_api_list.h by tools/plugin_api.lua: do not edit. */"
M.END = "/* End of the generated calls. */"

-- The list's entries in order: { { name = "ecs_strerror", group = "ecs.h: ..." }, ... }.
function M.entries(list)
  local out, group = {}, nil
  local body = list:match("\n#endif\n(.*)$")
  assert(body, "ecs_api_list.h: no entries after its #error guard")
  for line in body:gmatch("[^\n]+") do
    local title = line:match("^/%* ([%w_]+%.h.-) %*/$")
    if title then
      group = title
    else
      local name = line:match("^ECS_API_FN%(%s*%d+%s*,[^,]-,%s*(ecs_[%w_]+)%s*,")
      if name then
        assert(group, "ecs_api_list.h: " .. name .. " comes before any header's group")
        out[#out + 1] = { name = name, group = group }
      elseif line:match("^ECS_API_FN") then
        error("ecs_api_list.h: an entry this script cannot read: " .. line)
      end
    end
  end
  return out
end

-- One macro per entry, a comment per group; lines past 80 columns break
-- after the name.
function M.calls(list)
  local lines, group = {}, nil
  for _, e in ipairs(M.entries(list)) do
    if e.group ~= group then
      group = e.group
      lines[#lines + 1] = "/* " .. group .. " */"
    end
    local line = "#define " .. e.name .. " (ecs_plugin_api->" .. e.name .. ")"
    if #line > 80 then
      line = "#define " .. e.name .. " \\\n  (ecs_plugin_api->" .. e.name .. ")"
    end
    lines[#lines + 1] = line
  end
  return table.concat(lines, "\n")
end

-- ecs_plugin.h's text with its generated part rewritten from list.
function M.update(plugin, list)
  local b = plugin:find(M.BEGIN, 1, true)
  local e = plugin:find(M.END, 1, true)
  assert(b and e and b < e, "ecs_plugin.h: the marker lines of the generated calls are missing")
  return plugin:sub(1, b - 1) .. M.BEGIN .. "\n" .. M.calls(list) .. "\n" .. plugin:sub(e)
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function main(args)
  local check, root = false, "."
  for _, a in ipairs(args) do
    if a == "--check" then check = true else root = a end
  end
  local plugin_path = root .. "/include/ecs_plugin.h"
  local old = read(plugin_path)
  local new = M.update(old, read(root .. "/include/ecs_api_list.h"))
  if check then
    if new ~= old then
      io.stderr:write(plugin_path .. " is stale: run lua5.4 tools/plugin_api.lua\n")
      os.exit(1)
    end
  elseif new ~= old then
    local f = assert(io.open(plugin_path, "wb"))
    f:write(new)
    f:close()
    print("wrote " .. plugin_path)
  end
end

if arg and arg[0] and arg[0]:find("plugin_api%.lua$") then
  main(arg)
end

return M
