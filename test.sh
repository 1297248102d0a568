#!/usr/bin/env bash
# test.sh -- every test, from a fresh Debian machine.
# Installs what is missing, then:
#   1. builds with AddressSanitizer + UBSan and runs the C tests (ctest)
#      and the busted specs against that build;
#   2. installs the rock with `luarocks make` into a local tree and runs the
#      specs again against the installed module.
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
  if [ -z "$line" ]; then failed=$((failed + 1)); return; fi
  bad=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/')
  total=$(echo "$line" | sed -E 's/.*out of ([0-9]+).*/\1/')
  passed=$((passed + total - bad))
  failed=$((failed + bad))
}
count_busted() {
  local line s f e
  line=$(grep -E '[0-9]+ successes? / [0-9]+ failures? / [0-9]+ errors?' "$log" | tail -1)
  if [ -z "$line" ]; then failed=$((failed + 1)); return; fi
  s=$(echo "$line" | sed -E 's/^([0-9]+) success.*/\1/')
  f=$(echo "$line" | sed -E 's/.* ([0-9]+) failures?.*/\1/')
  e=$(echo "$line" | sed -E 's/.* ([0-9]+) errors?.*/\1/')
  passed=$((passed + s))
  failed=$((failed + f + e))
}

echo "== build with AddressSanitizer + UBSan (build-asan/)"
if ! ecs_build build-asan -DECS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug; then
  echo "build failed"; echo "$passed passed, $((failed + 1)) failed"; exit 1
fi

echo "== C tests (ctest, sanitized)"
(cd build-asan && ctest --output-on-failure 2>&1) | tee "$log"
count_ctest

# The sanitizer runtimes must come first in a process whose executable
# (lua5.4) is not instrumented.
asan_rt=$(cc -print-file-name=libasan.so)
ubsan_rt=$(cc -print-file-name=libubsan.so)
busted_cmd=(lua5.4 "$(command -v busted)")

echo "== specs against build-asan/ (sanitized)"
env LD_PRELOAD="$asan_rt $ubsan_rt" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "${busted_cmd[@]}" -o utfTerminal --run=asan 2>&1 | tee "$log"
count_busted

echo "== luarocks make into rocks/ and specs against the installed module"
rm -rf rocks
if luarocks --lua-version=5.4 --tree="$PWD/rocks" make ecs-scm-1.rockspec >"$log" 2>&1; then
  "${busted_cmd[@]}" -o utfTerminal --run=rocks 2>&1 | tee "$log"
  count_busted
else
  cat "$log"
  echo "luarocks make failed"
  failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
