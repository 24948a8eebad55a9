#!/usr/bin/env bash
# Collectives on simulated hosts against their cost models.
#
# Brings up N netsim hosts joined by RATE links (tools/netsim, htb both
# directions), measures one TCP stream's goodput B between two hosts, then
# runs all_reduce, all_gather and broadcast at SIZE for N = 2 and 4 hosts
# (one rank per host) and prints measured time against the model at B:
#   all-reduce (ring)  2(N-1)/N * S / B
#   all-gather (ring)  (N-1)/N * S / B     (S = the gathered output)
#   broadcast          S / B               (pipelined)
# Needs root.  Usage: perf/netsim-bench.sh [BUILD_DIR] [RATE] [SIZE] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rate=${2:-1gbit}
size=${3:-64M}
out=${4:-perf-results/netsim}
mkdir -p "$out"
netsim=tools/netsim
trap '"$netsim" down >/dev/null 2>&1 || true' EXIT
"$netsim" down >/dev/null 2>&1 || true
"$netsim" up -n 4 --rate "$rate" >/dev/null

echo "== goodput of one TCP stream, host 0 -> host 1 ($rate)"
"$netsim" exec 1 -- python3 tests/netsim/throughput.py serve --bind 10.213.7.2 --port 5001 --conns 1 --timeout 30 \
  >"$out/goodput.txt" &
server=$!
"$netsim" exec 0 -- python3 tests/netsim/throughput.py send --to 10.213.7.2 --port 5001 --bytes 300000000 \
  --retry-for 10 >/dev/null
wait "$server"
goodput=$(sed -n 's/.*MBps=\([0-9.]*\).*/\1/p' "$out/goodput.txt")
echo "B = $goodput MB/s"

printf '\n%-11s %2s %10s %12s %12s %12s %12s\n' collective N "size(B)" "model(ms)" "oop(ms)" "inplace(ms)" "% of model"
for n in 2 4; do
  for tool in all_reduce all_gather broadcast; do
    log="$out/${tool}_n$n.txt"
    "$netsim" run -n "$n" -- "$build/perf/${tool}_perf" -b "$size" -e "$size" -n 5 -w 1 >"$log" 2>&1
    row=$(grep -E '^ +[0-9]' "$log" | tail -1)
    bytes=$(awk '{print $1}' <<<"$row")
    oop=$(awk '{print $6}' <<<"$row")
    inp=$(awk '{print $10}' <<<"$row")
    wrong=$(awk '{print $9 + $13}' <<<"$row")
    [[ "$wrong" == 0 ]] || { echo "$tool N=$n: wrong results"; exit 1; }
    python3 - "$tool" "$n" "$bytes" "$oop" "$inp" "$goodput" <<'PY'
import sys
tool, n, size, oop, inp, mbps = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
B = mbps * 1e6
factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "broadcast": 1.0}[tool]
model_us = factor * size / B * 1e6
best = min(oop, inp)
print(f"{tool:<11} {n:2d} {int(size):10d} {model_us/1e3:12.1f} {oop/1e3:12.1f} {inp/1e3:12.1f} "
      f"{100*model_us/oop:6.1f} / {100*model_us/inp:5.1f}")
PY
  done
done
echo "(% of model: out-of-place / in-place; logs in $out)"
