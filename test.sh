#!/usr/bin/env bash
# test.sh -- every test, from a fresh Debian machine.
# Installs what is missing, then:
#   0. runs luacheck over the Lua sources (one pass or one failure);
#   1. builds with AddressSanitizer + UBSan, runs the layering check over
#      its objects (tools/layers.lua: one pass or one failure), and runs the
#      C tests (ctest) and the busted specs against that build;
#   2. installs the rock with `luarocks make` into a local tree and runs the
#      specs again against the installed module; lints the rockspec and packs
#      a source rock (tools/pack.sh: `luarocks lint`, `luarocks pack`);
#   3. re-runs the specs with the garbage collector at its most aggressive
#      (both modes) and, beside them in the background, the C tests and the
#      specs under valgrind (docs/reliability.md), then the threaded C tests
#      and specs under ThreadSanitizer (docs/threads.md), then the module
#      built for Lua 5.1, 5.2, 5.3 and LuaJIT and the specs under each
#      (README "Lua versions"), and the LÖVE example run headless for 120
#      frames (examples/love/README.md);
#   4. the soak, the model test of spec/world/crossing_spec.lua run long against
#      build-asan/ (docs/reliability.md, "Soak"): with ECS_SOAK=1 on four
#      seeds; by default on one seed when the stages before took less than
#      ECS_SOAK_IF_UNDER seconds (2700), so that a slow machine keeps
#      within CI's time; never with ECS_SOAK=0.
# The last line is "N passed, N failed" over all of it.
set -uo pipefail
cd "$(dirname "$0")"
. tools/setup.sh
ecs_install_deps || { echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# count "N passed, N failed" style results of one stage
count_ctest() {
  local line total bad
  line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
  if [ -z "$line" ]; then echo "FAILED: ctest printed no summary"; failed=$((failed + 1)); return; fi
  bad=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/')
  total=$(echo "$line" | sed -E 's/.*out of ([0-9]+).*/\1/')
  passed=$((passed + total - bad))
  failed=$((failed + bad))
  [ "$bad" -eq 0 ] || echo "FAILED: $bad C tests"
}
count_busted() {
  local line s f e
  line=$(grep -E '[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors?' "$log" | tail -1)
  if [ -z "$line" ]; then echo "FAILED: busted printed no summary (it crashed?)"; failed=$((failed + 1)); return; fi
  s=$(echo "$line" | sed -E 's/^([0-9]+) success.*/\1/')
  f=$(echo "$line" | sed -E 's/.* ([0-9]+) failures?.*/\1/')
  e=$(echo "$line" | sed -E 's/.* ([0-9]+) errors?.*/\1/')
  passed=$((passed + s))
  failed=$((failed + f + e))
  [ $((f + e)) -eq 0 ] || echo "FAILED: $f failures and $e errors in that busted run"
}

echo "== luacheck (.luacheckrc): any warning fails the stage"
lint_dirs=(lua spec examples bench test types)
[ -d plugins ] && lint_dirs+=(plugins)
[ -d tools ] && lint_dirs+=(tools)
if luacheck --no-color "${lint_dirs[@]}" 2>&1 | tee "$log"; then
  passed=$((passed + 1))
else
  echo "FAILED: luacheck"; failed=$((failed + 1))
fi

echo "== build with AddressSanitizer + UBSan (build-asan/)"
if ! ecs_build build-asan -DECS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug; then
  echo "build failed"; echo "$passed passed, $((failed + 1)) failed"; exit 1
fi

# (layers) the layering check (docs/architecture.md, "The layering
# check"): no call from a lower layer into a higher one, no loop of files
# across folders; one pass or one failure, with the findings printed
echo "== layering of build-asan/ (tools/layers.lua): an upward call or a loop across folders fails"
if lua5.4 tools/layers.lua build-asan --quiet > "$log" 2>&1; then
  passed=$((passed + 1))
  grep -E '^layers: ' "$log"
else
  cat "$log"; echo "FAILED: layering"; failed=$((failed + 1))
fi

echo "== C tests (ctest, sanitized)"
(cd build-asan && ctest --output-on-failure 2>&1) | tee "$log"
count_ctest

# The sanitizer runtimes must come first in a process whose executable
# (lua5.4) is not instrumented.
asan_rt=$(cc -print-file-name=libasan.so)
ubsan_rt=$(cc -print-file-name=libubsan.so)
busted_cmd=(lua5.4 "$(command -v busted)")

# specs COMMAND...: the specs in two busted runs, both counted:
# spec/binding/reentry_spec.lua alone, then the other files (those of the array
# spec_files when it is set). reentry_spec completes a whole collection cycle
# at every allocation, so its cost follows the size of the heap, and busted
# keeps every earlier file's closures (15 MB by the time it runs): inside the
# whole run it took 270 s on a plain build, alone 3 s; it was most of every
# spec stage of CI. Fails when either run's command did (valgrind's exit code).
spec_files=()
specs() {
  local rc1 rc2
  "$@" spec/binding/reentry_spec.lua 2>&1 | tee "$log"
  rc1=${PIPESTATUS[0]}
  count_busted
  env ECS_SPECS_EXCLUDE=reentry_spec "$@" "${spec_files[@]}" 2>&1 | tee "$log"
  rc2=${PIPESTATUS[0]}
  count_busted
  [ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ]
}

echo "== specs against build-asan/ (sanitized)"
specs env LD_PRELOAD="$asan_rt $ubsan_rt" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "${busted_cmd[@]}" -o utfTerminal --run=asan

echo "== luarocks make into rocks/ and specs against the installed module"
rm -rf rocks
if luarocks --lua-version=5.4 --tree="$PWD/rocks" make ecs-scm-1.rockspec >"$log" 2>&1; then
  specs "${busted_cmd[@]}" -o utfTerminal --run=rocks
else
  cat "$log"
  echo "luarocks make failed"
  failed=$((failed + 1))
fi

echo "== luarocks lint, and luarocks pack of a source rock (tools/pack.sh)"
if luarocks lint ecs-scm-1.rockspec 2>&1 | tee "$log"; then
  passed=$((passed + 1))
else
  echo "luarocks lint failed"; failed=$((failed + 1))
fi
pack_dir=$(mktemp -d)
if tools/pack.sh "$pack_dir" 2>&1 | tee "$log"; then
  passed=$((passed + 1))
else
  echo "tools/pack.sh failed"; failed=$((failed + 1))
fi
rm -rf "$pack_dir"

# (reliability) valgrind over a plain build (RELIABILITY R7): every ctest
# runs under valgrind (CMAKE_CROSSCOMPILING_EMULATOR), then every spec.
# The stage runs in the background, beside the collector stages below (each
# stage is one single-threaded process and the machines have two cores):
# its output goes to its own file, printed whole after those stages, and
# its counts to another, added then. Run alone it took 24 minutes, the
# collector stages about 50: side by side CI saves the shorter of the two.
vg=(valgrind -q --error-exitcode=1 --leak-check=full)
vg_out=$(mktemp)
vg_counts=$(mktemp)
vg_log=$(mktemp)
lua_counts=$(mktemp)
other_counts=()
trap 'rm -f "$log" "$vg_out" "$vg_counts" "$vg_log" "$lua_counts"' EXIT
valgrind_stage() { # in a subshell: counts of its own, written to $vg_counts
  local log=$vg_log # what count_ctest and count_busted read
  local rc before
  passed=0
  failed=0
  echo "== valgrind: C tests and specs on a plain build (build-valgrind/)"
  if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind is not installed"; failed=$((failed + 1))
  elif ! ecs_build build-valgrind -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         "-DCMAKE_CROSSCOMPILING_EMULATOR=$(IFS=';'; echo "${vg[*]}")"; then
    echo "build failed"; failed=$((failed + 1))
  else
    (cd build-valgrind && ctest --output-on-failure 2>&1) | tee "$log"
    count_ctest
    before=$failed
    # spec/persist/replay_spec.lua plays its games 150 frames long here, not 2000
    # (a frame of its five worlds costs about 0.14 s under valgrind);
    # spec/world/crossing_spec.lua runs 100 random operations a seed, not 500
    specs env ECS_REPLAY_FRAMES="${ECS_REPLAY_FRAMES:-150}" ECS_CROSSING_STEPS=100 \
      "${vg[@]}" "${busted_cmd[@]}" --ignore-lua -o utfTerminal --run=valgrind
    rc=$?
    # valgrind's own findings fail the stage even when every spec passed
    if [ "$rc" -ne 0 ] && [ "$failed" -eq "$before" ]; then
      echo "valgrind reported errors (exit $rc)"; failed=$((failed + 1))
    fi
  fi
  tsan_stage
  other_luas
  love_stage
  echo "$passed $failed" > "$vg_counts"
}
# (threads) ThreadSanitizer over the threaded C tests and specs
# (docs/threads.md): a build of the core with -fsanitize=thread, its
# test_threads, then spec/system/threads_spec.lua against it (libtsan preloaded
# into the uninstrumented lua5.4; --ignore-lua: busted must not re-run
# itself through sh, which the preloaded runtime breaks). Any report
# fails (halt_on_error). Runs in the background job after valgrind.
tsan_stage() {
  local tsan_rt
  echo "== ThreadSanitizer: threaded C tests and specs (build-tsan/)"
  tsan_rt=$(cc -print-file-name=libtsan.so)
  if [ ! -f "$tsan_rt" ]; then
    echo "libtsan is not installed"; failed=$((failed + 1)); return
  fi
  if ! { cmake -S . -B build-tsan -DECS_TSAN=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null &&
         cmake --build build-tsan -j "$(nproc 2>/dev/null || echo 2)" \
           --target test_threads ecs_core ecs_testkit >/dev/null; }; then
    echo "build failed"; failed=$((failed + 1)); return
  fi
  if TSAN_OPTIONS="halt_on_error=1" build-tsan/test_threads 2>&1 | tee "$log"; then
    passed=$((passed + 1))
  else
    echo "test_threads failed under ThreadSanitizer"; failed=$((failed + 1))
  fi
  env LD_PRELOAD="$tsan_rt" TSAN_OPTIONS="halt_on_error=1" \
      "${busted_cmd[@]}" --ignore-lua -o utfTerminal --run=tsan spec/system/threads_spec.lua 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  before=$failed
  count_busted
  # a report after the summary (a world collected at exit joins its pool)
  # fails the stage too
  if [ "$failed" -eq "$before" ] && { [ "$rc" -ne 0 ] || grep -q "ThreadSanitizer" "$log"; }; then
    echo "ThreadSanitizer reported (exit $rc)"; failed=$((failed + 1))
  fi
}
# (Lua versions) after valgrind, in the same background job: the module
# built for each other Lua Debian ships (cmake -DECS_LUA=..., build-lua51/
# ...) and the specs run under it (busted --run=lua51 ...: .busted leaves
# out the 5.4-only spec files of spec/support/lua54_only.lua, listed here
# with their reasons). An interpreter that is not installed (ecs_install_deps
# could not install it) is reported and skipped, not failed. Each one's
# counts are printed and added to the stage's.
other_luas() {
  local v lua run dir p0 f0
  for v in 5.1 5.2 5.3 luajit; do
    if [ "$v" = luajit ]; then lua=luajit; run=luajit; dir=build-luajit
    else lua=lua$v; run=lua${v/./}; dir=build-lua${v/./}; fi
    echo "== specs on $lua ($dir/, busted --run=$run)"
    if ! command -v "$lua" >/dev/null 2>&1; then
      echo "$lua is not installed: skipped"; other_counts+=("$lua: skipped (not installed)"); continue
    fi
    p0=$passed f0=$failed
    if ! ecs_build "$dir" -DECS_LUA="$v" -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
      echo "build for $lua failed"; failed=$((failed + 1))
    else
      lua5.4 -e "V = '$v'" -e '
        local only = dofile("spec/support/lua54_only.lua")
        local v = V == "luajit" and "5.1" or V
        local names = {}
        for f, why in pairs(only) do if why[1] > v then names[#names + 1] = f end end
        table.sort(names)
        print(#names .. " spec files left out (not in the common subset):")
        for _, f in ipairs(names) do print("  " .. f .. " (Lua " .. only[f][1] .. "+: " .. only[f][2] .. ")") end
      '
      specs lua5.4 "$(command -v busted)" -o utfTerminal --run="$run"
    fi
    other_counts+=("$lua: $((passed - p0)) passed, $((failed - f0)) failed")
  done
  printf '%s\n' "${other_counts[@]}" > "$lua_counts"
}
# (examples) the LÖVE example (examples/love/README.md) run headless: the
# module built for LuaJIT (build-luajit/, which other_luas built just before),
# `love examples/love --frames 120` under xvfb-run (a virtual X server,
# software OpenGL), which clicks by itself, prints one summary line and exits
# 0. One pass or one failure; where LÖVE, xvfb-run or LuaJIT's headers could
# not be installed (ecs_install_deps: best effort), reported and skipped.
# About 2 s. Last in the background job after valgrind.
love_stage() {
  local out rc
  echo "== examples/love under LÖVE, headless (xvfb-run, 120 frames, build-luajit/)"
  if ! command -v love >/dev/null 2>&1 || ! command -v xvfb-run >/dev/null 2>&1 ||
     [ ! -f /usr/include/luajit-2.1/lua.h ]; then
    echo "skipped (love not installable)"
    echo "examples/love (LÖVE): skipped (love not installable)" >> "$lua_counts"; return
  fi
  if [ ! -f build-luajit/ecs/core.so ] &&
     ! ecs_build build-luajit -DECS_LUA=luajit -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
    echo "build for luajit failed"; failed=$((failed + 1))
    echo "examples/love (LÖVE): 0 passed, 1 failed" >> "$lua_counts"; return
  fi
  out=$(ECS_BUILD=build-luajit timeout 120 xvfb-run -a love examples/love --frames 120 2>&1)
  rc=$?
  echo "$out"
  if [ "$rc" -eq 0 ] &&
     echo "$out" | grep -Eq '^ecs love example: 120 frames, [0-9]+ entities, [0-9]+ spawned, [1-9][0-9]* clicks$'; then
    passed=$((passed + 1))
    echo "examples/love (LÖVE): 1 passed, 0 failed" >> "$lua_counts"
  else
    echo "examples/love failed (exit $rc, or no summary line)"; failed=$((failed + 1))
    echo "examples/love (LÖVE): 0 passed, 1 failed" >> "$lua_counts"
  fi
}
echo "== valgrind stage started in the background (its output follows the collector stages)"
( valgrind_stage ) > "$vg_out" 2>&1 &
vg_pid=$!

# (reliability) the specs again with the garbage collector at its most
# aggressive (spec/support/gc_stress.lua, RELIABILITY R26), sanitized:
# generational mode over every spec; incremental mode with pause 0 over every
# spec with step multiplier 100, and with 1000 (close to stop-the-world,
# quadratic in the heap size) over every spec except the sixteen that hold
# large tables or loops (apply, columns, system, component_diff: 100k
# entities; each: thousands of entities per case, 3-4 minutes alone there;
# snapshot: blobs of whole worlds, 2 minutes alone there; demo_save: arena
# games of 5000 entities saved and loaded, over 20 minutes there;
# query, grid, transform: thousands of pinned loops, hostile grid sweeps,
# long chains: minutes each there; journal: a 2000-operation model with
# replicas and deltas of whole worlds, about a minute under stress without
# the sanitizers; migrate: 2000-entity redefinitions and finalizers that redefine
# mid-call under a collector set to its most eager, about 4 minutes there;
# deflate: pure-Lua compression and decoding of megabyte inputs and of the
# 100k-entity arena's picture in tables of a million entries, 4 minutes
# there, against 12-17 s in the other two collector stages;
# transform_query: random hierarchies moved through every bulk path and
# compared with the per-entity path, with full collections inside loops,
# over a minute there without the sanitizers; threads: worlds of 16000
# entities built three times per seed to compare thread counts).
# docs/reliability.md has the timings.
gc_heavy='/(apply|columns|each|snapshot|demo_save|system|component_diff|query|grid|transform|transform_query|journal|migrate|deflate|threads)_spec\.lua$'
mapfile -t gc_subset < <(ls spec/*/*_spec.lua | grep -Ev "$gc_heavy")
gc_stress() { # mode stepmul [spec files...]
  local mode=$1 mul=$2
  shift 2
  echo "== specs with the collector at its most aggressive: $mode${mul:+, step multiplier $mul} (build-asan/)"
  spec_files=("$@")
  specs env LD_PRELOAD="$asan_rt $ubsan_rt" \
      ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
      UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      ECS_GC_STRESS="$mode" ECS_GC_STEPMUL="$mul" \
      "${busted_cmd[@]}" -o utfTerminal --run=asan --helper=spec/support/gc_stress.lua
  spec_files=()
}
# Incremental mode with pause 0 costs with the size of the heap at every
# step, and busted keeps every earlier file's closures (15 MB by the end of a
# whole run): the multiplier-1000 stage runs one process per spec file, each
# with the heap of its own file only (as one process it went past 18
# minutes). The multiplier-100 stage stays one process over every file: per
# file, the 100k-entity specs took over 9 minutes each there.
gc_stress_each() { # mode stepmul spec files...
  local mode=$1 mul=$2 f
  shift 2
  echo "== specs with the collector at its most aggressive: $mode, step multiplier $mul, one process per file (build-asan/)"
  for f in "$@"; do
    env LD_PRELOAD="$asan_rt $ubsan_rt" \
        ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
        UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        ECS_GC_STRESS="$mode" ECS_GC_STEPMUL="$mul" \
        "${busted_cmd[@]}" -o utfTerminal --run=asan --helper=spec/support/gc_stress.lua "$f" 2>&1 |
      tee "$log"
    count_busted
  done
}
gc_stress generational ""
gc_stress incremental 100
gc_stress_each incremental 1000 "${gc_subset[@]}"

wait "$vg_pid"
cat "$vg_out"
if read -r vg_passed vg_failed < "$vg_counts" && [ -n "$vg_failed" ]; then
  passed=$((passed + vg_passed))
  failed=$((failed + vg_failed))
else
  echo "the valgrind stage ended without its counts"; failed=$((failed + 1))
fi
echo "== specs on the other Luas, and the LÖVE example (in the counts above):"
cat "$lua_counts"

# (soak) the model test of features where they cross (spec/world/crossing_spec.lua)
# run long: ECS_SOAK_STEPS operations (default 20000) on each seed of
# ECS_SOAK_SEEDS (default four), each seed one busted run against the
# sanitized build, counted as one test: 72 s for a seed alone here, 3 to 4
# minutes with another job on the second core (2026-11-29). ECS_SOAK=1
# runs it whole; unset, one seed runs when the run so far left the time
# (SECONDS below ECS_SOAK_IF_UNDER, 45 minutes: CI allows 90); ECS_SOAK=0
# skips it.
soak_stage() {
  local seed
  echo "== soak: spec/world/crossing_spec.lua, ${ECS_SOAK_STEPS:-20000} operations a seed (build-asan/)"
  for seed in ${ECS_SOAK_SEEDS:-1 2 3 4}; do
    env LD_PRELOAD="$asan_rt $ubsan_rt" \
        ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
        UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        ECS_CROSSING_SEED="$seed" ECS_CROSSING_STEPS="${ECS_SOAK_STEPS:-20000}" \
        "${busted_cmd[@]}" -o utfTerminal --run=asan spec/world/crossing_spec.lua 2>&1 | tee "$log"
    count_busted
  done
}
if [ "${ECS_SOAK:-}" = 1 ]; then
  soak_stage
elif [ "${ECS_SOAK:-}" != 0 ] && [ "$SECONDS" -lt "${ECS_SOAK_IF_UNDER:-2700}" ]; then
  ECS_SOAK_SEEDS="${ECS_SOAK_SEEDS:-1}" soak_stage
else
  echo "== soak: skipped after ${SECONDS} s (ECS_SOAK=1 ./test.sh runs it whole)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
