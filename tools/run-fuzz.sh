#!/usr/bin/env bash
# Fuzzes every parser that reads bytes from the network (tests/fuzz, see its
# README.md): builds the libFuzzer targets with clang + ASan + UBSan in
# build-fuzz, then runs each one for RUNS inputs (default 100000), starting
# from a fresh copy of its seed corpus.  Exits non-zero if any target crashes
# (a violated property traps; a sanitizer report aborts); the input that did
# it is kept in build-fuzz/fuzz-artifacts/<target>/ with the command that
# replays it.
#   tools/run-fuzz.sh [RUNS]
# Environment: COLL_FUZZ_BUILD (build dir, default build-fuzz),
# COLL_FUZZ_MAX_LEN (default 512), COLL_FUZZ_TARGETS (space-separated subset).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100000}
build=${COLL_FUZZ_BUILD:-build-fuzz}
maxlen=${COLL_FUZZ_MAX_LEN:-512}
jobs=$(nproc)
t0=$(date +%s)

# clang with libFuzzer and the sanitizer runtimes?
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
have_libfuzzer() {
  command -v clang >/dev/null && command -v clang++ >/dev/null || return 1
  printf '%s\n' '#include <cstdint>' '#include <cstddef>' \
    'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$probe_dir/probe.cc"
  clang++ -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cc" -o "$probe_dir/probe" >"$probe_dir/probe.log" 2>&1
}
if ! have_libfuzzer; then
  echo "run-fuzz: clang with libFuzzer not usable; installing (tools/install-deps.sh: clang, libclang-rt-14-dev)"
  tools/install-deps.sh || true
  if ! have_libfuzzer; then
    echo "run-fuzz: FAILED: need clang, clang++ and libFuzzer (Debian 12: apt-get install -y clang libclang-rt-14-dev)" >&2
    [ -s "$probe_dir/probe.log" ] && sed 's/^/  /' "$probe_dir/probe.log" >&2
    exit 1
  fi
fi

# A build dir made by another compiler cannot be switched to clang in place.
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' "$build/CMakeCache.txt"; then
  echo "run-fuzz: $build was configured with another compiler; starting it afresh"
  rm -rf "$build"
fi
echo "== fuzz build (clang, ASan+UBSan, libFuzzer) in $build"
# No -Werror here: the fuzz build is about the sanitizers, not clang's warnings.
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCOLL_FUZZ=ON -DCOLL_BUILD_PERF=OFF -DCOLL_WERROR=OFF \
  -DCOLL_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
  >"$probe_dir/configure.log" 2>&1 || { cat "$probe_dir/configure.log" >&2; exit 1; }
list="$build/tests/fuzz/fuzz_targets.txt"
[ -f "$list" ] || { echo "run-fuzz: $list missing (was COLL_FUZZ honoured?)" >&2; exit 1; }
cmake --build "$build" -j"$jobs" --target coll_fuzz
t_build=$(( $(date +%s) - t0 ))

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
work=$(mktemp -d)
trap 'rm -rf "$probe_dir" "$work"' EXIT
failed=()
echo "== fuzzing: $runs inputs per target, -max_len=$maxlen"
while read -r name path; do
  [ -n "$name" ] || continue
  if [ -n "${COLL_FUZZ_TARGETS:-}" ] && [[ " $COLL_FUZZ_TARGETS " != *" $name "* ]]; then continue; fi
  corpus="$work/$name"
  mkdir -p "$corpus"
  COLL_FUZZ_SEEDS_OUT="$corpus" "$path" >"$work/$name.seeds.log" 2>&1 ||
    { cat "$work/$name.seeds.log" >&2; failed+=("$name (seeds)"); continue; }
  [ -d "tests/fuzz/corpus/$name" ] && cp tests/fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null || true
  nseeds=$(ls "$corpus" | wc -l)
  art="$build/fuzz-artifacts/$name"
  mkdir -p "$art"
  s0=$(date +%s%N)
  rc=0
  "$path" -runs="$runs" -max_len="$maxlen" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/" "$corpus" >"$work/$name.log" 2>&1 || rc=$?
  ms=$(( ($(date +%s%N) - s0) / 1000000 ))
  done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$work/$name.log" | tail -1 || true)
  line=$(printf '%-18s %7s runs %3d.%d s  %-9s corpus %d seeds -> %d' "$name" "${done_runs:-?}" $((ms / 1000)) \
         $((ms % 1000 / 100)) "${cov:-cov: ?}," \
         "$nseeds" "$(ls "$corpus" | wc -l)")
  if [ "$rc" -ne 0 ]; then
    cp "$work/$name.log" "$art/fuzz.log"
    echo "$line  FAILED (exit $rc)"
    grep -E 'INFO: Seed|ERROR|SUMMARY|fuzz property violated|runtime error|Test unit written' "$work/$name.log" | head -20 | sed 's/^/    /'
    for a in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
      [ -e "$a" ] && echo "    replay: $path $a"
    done
    echo "    full log: $art/fuzz.log"
    failed+=("$name")
  else
    echo "$line  ok"
  fi
done <"$list"

echo "== fuzz: build ${t_build} s, total $(( $(date +%s) - t0 )) s"
if [ ${#failed[@]} -ne 0 ]; then
  echo "== fuzz FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "== fuzz: all targets passed"
