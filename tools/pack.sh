#!/usr/bin/env bash
# tools/pack.sh [OUTDIR] -- a source rock, ecs-scm-1.src.rock, into OUTDIR
# (default: the current directory), made by `luarocks pack`.
#
# `luarocks pack ecs-scm-1.rockspec` fetches the rockspec's source.url from a
# temporary directory of its own: a relative path resolves there, and a
# rockspec cannot name its own location, so without a public repository no
# source.url in the committed rockspec can be fetched from every clone. This
# script gives luarocks a URL it can reach:
#   1. `git archive` of the tracked files as they are in the work tree
#      (uncommitted changes of tracked files included, untracked files not),
#      under the prefix ecs-scm-1/, without the fuzz corpora test/fuzz/*/
#      (4370 inputs, 95% of the files, that tools/fuzz.sh and ctest's
#      fuzz_*_replay read: luarocks unpacks the archive to check it and sets
#      each file's permissions with a process of its own, a minute for them);
#   2. a copy of the rockspec whose source.url is that tarball's absolute
#      file:// URL, with its md5;
#   3. checks that every file the rockspec builds or installs is in the
#      tarball, runs `luarocks lint` on the copy and `luarocks pack` on it.
# The rock holds the copy and the tarball: `luarocks --lua-version=5.4 build
# ecs-scm-1.src.rock` builds and installs it anywhere, offline (the URL of
# the packing machine is not fetched again).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "${1:-.}" && pwd) || { echo "pack.sh: no directory ${1:-.}" >&2; exit 1; }

cd "$root"
shopt -s nullglob
specs=(*.rockspec)
[ "${#specs[@]}" -eq 1 ] || { echo "pack.sh: one rockspec expected, found: ${specs[*]}" >&2; exit 1; }
rockspec=${specs[0]}
name=${rockspec%.rockspec} # ecs-scm-1
if ! command -v git >/dev/null 2>&1 || ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "pack.sh: needs git and a git checkout (the rock packs the tracked files)" >&2; exit 1
fi
command -v luarocks >/dev/null 2>&1 || { echo "pack.sh: luarocks is not installed" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# the work tree's tracked files: a commit `git stash create` writes without
# touching the tree or the stash list, or HEAD when nothing changed
tree=$(git stash create)
[ -n "$tree" ] && echo "pack.sh: uncommitted changes of tracked files are packed"
git archive --prefix="$name/" -o "$work/$name.tar.gz" "${tree:-HEAD}" -- . ':(exclude,glob)test/fuzz/*/**'

# the copy of the rockspec: source.url and md5 of the tarball
md5=$(md5sum "$work/$name.tar.gz" | cut -d' ' -f1)
[ "$(grep -c '^  url = ' "$rockspec")" -eq 1 ] ||
  { echo "pack.sh: $rockspec: one line '  url = ...' (source.url) expected" >&2; exit 1; }
sed -E "s|^  url = .*|  url = \"file://$work/$name.tar.gz\", -- written by tools/pack.sh\n  md5 = \"$md5\",|" \
  "$rockspec" > "$work/$rockspec"

# every file the rockspec compiles or installs, and LICENSE, in the tarball
tar -tzf "$work/$name.tar.gz" > "$work/files"
lua5.4 - "$work/$rockspec" "$work/files" <<'EOF'
local spec = {}
assert(loadfile(arg[1], "t", spec))()
local have = {}
for line in io.lines(arg[2]) do have[line:gsub("^[^/]*/", "")] = true end
local missing = {}
local function need(f)
  if not have[f] then missing[#missing + 1] = f end
end
need("LICENSE")
for _, m in pairs(spec.build.modules) do
  if type(m) == "string" then
    need(m)
  else
    local sources = m.sources or m
    if type(sources) == "string" then sources = { sources } end
    for _, f in ipairs(sources) do need(f) end
  end
end
for _, files in pairs(spec.build.install or {}) do
  for _, f in pairs(files) do need(f) end
end
if #missing > 0 then
  table.sort(missing)
  io.stderr:write("pack.sh: not in the tarball (untracked?): ", table.concat(missing, " "), "\n")
  os.exit(1)
end
EOF

(cd "$work" && luarocks lint "$rockspec" && luarocks pack "$rockspec")
mv -f "$work/$name.src.rock" "$out/"
echo "pack.sh: $out/$name.src.rock: $(grep -c "^$name/" "$work/files") paths of $(git rev-parse --short HEAD)${tree:+ and uncommitted changes}"
