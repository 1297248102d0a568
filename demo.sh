#!/usr/bin/env bash
# demo.sh -- builds everything and runs the demo, from a fresh Debian machine.
# Installs what is missing for it (a C compiler, CMake, Lua 5.4 and its
# headers; not the test tools), builds a release build in build/, runs
# examples/arena.lua (or the example named as first argument) with the
# remaining arguments, e.g.  ./demo.sh --frames 300 --image arena.png
# (the arena writes arena.png by default)
set -euo pipefail
cd "$(dirname "$0")"
. tools/setup.sh
ecs_install_deps demo # the build and Lua: none of the test tools
ecs_build build -DCMAKE_BUILD_TYPE=Release
example=arena
if [ $# -gt 0 ] && [ -f "examples/$1.lua" ]; then example=$1; shift; fi
[ -f "examples/$example.lua" ] || example=tour
# the arena writes its final frame to arena.png unless told otherwise
if [ "$example" = arena ] && [[ " $* " != *" --image "* ]]; then set -- "$@" --image arena.png; fi
export LUA_PATH="build/?.lua;build/?/init.lua;examples/?.lua;examples/lib/?.lua;;"
export LUA_CPATH="build/?.so;;"
exec lua5.4 "examples/$example.lua" "$@"
