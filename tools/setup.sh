# tools/setup.sh -- sourced by test.sh and demo.sh: installs what is missing
# on a Debian machine (as root, or through sudo) and builds with CMake.
# Usage: . tools/setup.sh; ecs_install_deps [test|demo]; ecs_build DIR [cmake args...]
#   ecs_install_deps       (or "test") what test.sh and .ci/run need: the demo's
#                          set and the test tools (busted, luarocks, valgrind,
#                          luacheck, git)
#   ecs_install_deps demo  what demo.sh needs to build and run an example: a C
#                          compiler, CMake, Lua 5.4 and its headers

ecs_install_deps() {
  local what=${1:-test}
  local need=()
  case $what in
    test|demo) ;;
    *) echo "ecs_install_deps: 'test' or 'demo' expected, got '$what'" >&2; return 1 ;;
  esac
  command -v lua5.4 >/dev/null 2>&1 || need+=(lua5.4)
  [ -f /usr/include/lua5.4/lua.h ] || need+=(liblua5.4-dev)
  command -v cmake >/dev/null 2>&1 || need+=(cmake)
  command -v cc >/dev/null 2>&1 || need+=(build-essential)
  if [ "$what" = test ]; then
    command -v busted >/dev/null 2>&1 || need+=(lua-busted)
    command -v luarocks >/dev/null 2>&1 || need+=(luarocks)
    command -v valgrind >/dev/null 2>&1 || need+=(valgrind) # test.sh (reliability)
    command -v luacheck >/dev/null 2>&1 || need+=(lua-check) # test.sh (lint)
    command -v git >/dev/null 2>&1 || need+=(git) # test.sh (tools/pack.sh)
  fi
  # examples/replicate.lua (./demo.sh replicate, and its spec)
  lua5.4 -e 'require("socket")' >/dev/null 2>&1 || need+=(lua-socket)
  if [ "${#need[@]}" -gt 0 ]; then
    echo "installing: ${need[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
  fi
}

ecs_build() {
  local dir=$1
  shift
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
}
