#!/usr/bin/env bash
# Ours and Open MPI's all-reduce, alternating (A B A B ...) REPS times on
# this machine, and the median of each per size: these machines are noisy,
# so single runs mislead.  Build Release first (see perf/run-benchmarks.sh).
# Usage: perf/compare/compare-allreduce.sh [BUILD_DIR] [NRANKS] [REPS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
n=${2:-2}
reps=${3:-5}
[ -x "$build/perf/mpi_allreduce_perf" ] || { echo "no $build/perf/mpi_allreduce_perf (install libopenmpi-dev, reconfigure)"; exit 1; }
sizes="8 2097152 33554432 134217728 268435456"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for rep in $(seq "$reps"); do
  for s in $sizes; do
    "$build/tools/collrun" -n "$n" --no-prefix -- "$build/perf/all_reduce_perf" -b "$s" -e "$s" -n 20 -w 5 -c 1 \
      | awk -v s="$s" '$1 == s {print $6, $8}' >> "$tmp/coll.$s"
    mpirun --allow-run-as-root --oversubscribe -np "$n" --mca btl self,vader \
      "$build/perf/mpi_allreduce_perf" "$s" "$s" 2 20 | awk -v s="$s" '$1 == s {print $2, $3}' >> "$tmp/mpi.$s"
  done
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf "# %d ranks, medians of %d alternating runs (out-of-place, float32 sum)\n" "$n" "$reps"
printf "# %11s  %12s  %12s  %12s  %12s  %7s\n" size "libcoll us" "OMPI us" "libcoll GB/s" "OMPI GB/s" ratio
for s in $sizes; do
  ct=$(cut -d' ' -f1 "$tmp/coll.$s" | median); cb=$(cut -d' ' -f2 "$tmp/coll.$s" | median)
  mt=$(cut -d' ' -f1 "$tmp/mpi.$s" | median); mb=$(cut -d' ' -f2 "$tmp/mpi.$s" | median)
  printf "  %11s  %12s  %12s  %12s  %12s  %7.2f\n" "$s" "$ct" "$mt" "$cb" "$mb" "$(awk -v a="$mt" -v b="$ct" 'BEGIN {print a / b}')"
done
