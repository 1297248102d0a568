#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS] [TARGET...] -- run the libFuzzer targets.
#
# Builds every fuzz target (test/fuzz/fuzz_<t>.c) with clang, libFuzzer, ASan
# and UBSan into build-fuzz/ (needs Debian's clang and libclang-rt-14-dev),
# then runs each TARGET (default: all) for SECONDS (default 60) on a working
# copy of its committed corpus test/fuzz/<t>/ -- the committed corpus is
# not modified. A crash stops that target and is left in
# build-fuzz/artifacts/<t>/crash-*: add it to test/fuzz/<t>/ as a regression
# case (named after what it found) once fixed; ctest replays it from then on.
# Prints one line per target: executions, corpus size, result.
# Environment: FUZZ_SRC (source tree, default: this checkout), FUZZ_BUILD
# (build directory, default build-fuzz), FUZZ_JOBS (parallel workers, 1).
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ops lua restore delta)
src=${FUZZ_SRC:-$PWD}
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-1}

CC=clang cmake -S "$src" -B "$build" -DECS_FUZZ=ON -DECS_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
cmake --build "$build" -j2 --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null || exit 1

build=$(cd "$build" && pwd)  # absolute: each target runs in a directory of its own
par=""
[ "$jobs" -gt 1 ] && par="-jobs=$jobs -workers=$jobs"
status=0
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  art="$build/artifacts/$t"
  jobdir="$build/jobs/$t"  # -jobs makes libFuzzer write fuzz-N.log files into the cwd
  rm -rf "$jobdir"
  mkdir -p "$work" "$art" "$jobdir"
  cp -n "$src/test/fuzz/$t/"* "$work/" 2>/dev/null || true
  log="$build/fuzz_$t.log"
  (cd "$jobdir" &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      "$build/fuzz_$t" -max_len=2048 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$art/" $par \
        "$work") >"$log" 2>&1
  rc=$?
  runs=$(cat "$log" "$jobdir"/fuzz-*.log 2>/dev/null |
         grep -E '^stat::number_of_executed_units' | awk '{s += $2} END {print s + 0}')
  if [ $rc -eq 0 ]; then
    echo "fuzz_$t: $runs executions in ${secs}s, corpus $(ls "$work" | wc -l) inputs, no crash"
  else
    echo "fuzz_$t: FAILED after $runs executions; see $log and $art/"
    status=1
  fi
done
exit $status
