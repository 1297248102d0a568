# tools/setup.sh -- sourced by test.sh and demo.sh: installs what is missing
# on a Debian machine (as root, or through sudo) and builds with CMake.
# Usage: . tools/setup.sh; ecs_install_deps [test|demo]; ecs_build DIR [cmake args...]
#   ecs_install_deps       (or "test") what test.sh and .ci/run need: the demo's
#                          set and the test tools (busted, luarocks, valgrind,
#                          luacheck, git), and the other Luas test.sh runs
#                          the specs under (5.1, 5.2, 5.3, LuaJIT) and their
#                          headers (best effort; lua-compat-5.3's header is
#                          in the tree, vendor/lua-compat-5.3/), and
#                          LÖVE with a virtual X server for test.sh's headless
#                          run of examples/love (best effort)
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
  # the other Luas test.sh builds for and runs the specs under (README "Lua
  # versions"), with their headers (lua-compat-5.3's is in the tree):
  # best effort, in an apt-get of their own, since test.sh skips an
  # interpreter it does not find
  local more=()
  if [ "$what" = test ]; then
    local v
    for v in 5.1 5.2 5.3; do
      command -v lua$v >/dev/null 2>&1 || more+=(lua$v)
      [ -f /usr/include/lua$v/lua.h ] || more+=("liblua$v$([ $v = 5.1 ] && echo -0)-dev")
    done
    command -v luajit >/dev/null 2>&1 || more+=(luajit)
    [ -f /usr/include/luajit-2.1/lua.h ] || more+=(libluajit-5.1-dev)
  fi
  # examples/love run headless by test.sh (love_stage): LÖVE, xvfb-run and
  # software OpenGL; best effort in an apt-get of their own (the stage is
  # skipped without them)
  local love=()
  if [ "$what" = test ]; then
    command -v love >/dev/null 2>&1 || love+=(love)
    command -v xvfb-run >/dev/null 2>&1 || love+=(xvfb)
    command -v xauth >/dev/null 2>&1 || love+=(xauth)
    dpkg -s libgl1-mesa-dri >/dev/null 2>&1 || love+=(libgl1-mesa-dri)
  fi
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if [ "${#need[@]}" -gt 0 ] || [ "${#more[@]}" -gt 0 ] || [ "${#love[@]}" -gt 0 ]; then
    $sudo apt-get update -qq
  fi
  if [ "${#need[@]}" -gt 0 ]; then
    echo "installing: ${need[*]}"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  if [ "${#more[@]}" -gt 0 ]; then
    echo "installing (for the other Luas, best effort): ${more[*]}"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${more[@]}" >/dev/null ||
      echo "could not install some of: ${more[*]} (test.sh skips what is missing)"
  fi
  if [ "${#love[@]}" -gt 0 ]; then
    echo "installing (for examples/love, best effort): ${love[*]}"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${love[@]}" >/dev/null ||
      echo "could not install some of: ${love[*]} (test.sh skips the LÖVE example)"
  fi
}

ecs_build() {
  local dir=$1
  shift
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
}
