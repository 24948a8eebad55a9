#!/usr/bin/env bash
# Runs the all-reduce benchmarks docs/PERFORMANCE.md reports: N = 2 and 4
# ranks, 8 B to 256 MiB, float32 sum, and writes each table to OUT_DIR.
# Usage: perf/run-benchmarks.sh [BUILD_DIR] [OUT_DIR]
# Build Release first:  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-perf-results}
mkdir -p "$out"
for n in 2 4; do
  echo "== all_reduce_perf, $n ranks"
  "$build/tools/collrun" -n "$n" -- "$build/perf/all_reduce_perf" -b 8 -e 256M -f 2 -n 20 -w 5 \
    | tee "$out/all_reduce_n$n.txt"
done
for tool in all_gather broadcast reduce_scatter reduce sendrecv; do
  echo "== ${tool}_perf, 4 ranks"
  "$build/tools/collrun" -n 4 -- "$build/perf/${tool}_perf" -b 8 -e 64M -f 8 -n 10 -w 3 | tee "$out/${tool}_n4.txt"
done
