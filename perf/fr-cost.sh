#!/usr/bin/env bash
# fr-cost.sh [BUILD_DIR] [ROUNDS] [NS]: what the flight recorder costs an 8 B
# all-reduce on shared memory at N = NS (default "2 4"): all_reduce_perf with the
# recorder on (COLL_FR_ENTRIES default) and off (0), alternating, ROUNDS
# (default 5) runs each of 20000 timed calls; prints each run's time per
# call (µs, out of place) and the medians.  Bound to cores by collrun.
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
ns=${3:-2 4}
echo "# fr-cost: 8 B float32 sum all-reduce, µs per call (out of place), $rounds alternating runs each"
echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
time_of() {  # N ENTRIES
  COLL_FR_ENTRIES=$2 "$build/tools/collrun" -n "$1" --timeout 300 -- "$build/perf/all_reduce_perf" \
    -b 8 -e 8 -n 20000 -w 2000 -c 0 -d float -o sum 2>&1 | awk '$1 == "[0]" && $2 == 8 { print $7 }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for n in $ns; do
  on=() off=()
  for ((i = 0; i < rounds; ++i)); do
    on+=("$(time_of "$n" 2000)")
    off+=("$(time_of "$n" 0)")
  done
  mon=$(printf '%s\n' "${on[@]}" | median)
  moff=$(printf '%s\n' "${off[@]}" | median)
  echo "N=$n on:  ${on[*]}  median $mon"
  echo "N=$n off: ${off[*]}  median $moff"
  awk -v a="$mon" -v b="$moff" -v n="$n" 'BEGIN { printf "N=%d: recorder on / off = %.3f\n", n, a / b }'
done
