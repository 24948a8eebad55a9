#!/usr/bin/env bash
# The trainer's N = 2 step-time target (issue: "within 10% of compute time / 2
# + the model's all-reduce time for the gradient bytes"), measured per
# per-rank batch size: for each B, ROUNDS alternating rounds of
#   one process at batch 2B    -> compute time (its whole step)
#   2 ranks at batch B         -> the step time under test
#   all_reduce_perf, 2 ranks   -> the all-reduce of the gradient bytes (in place)
# and prints the medians, the model (compute/2 + all-reduce) and the ratio.
# Usage: perf/trainer-step.sh [BUILD_DIR] [BATCHES="64 256 512"] [ROUNDS=3]
# Environment: HIDDEN (default 2048,2048: 23.3 MB of gradients), STEPS (a
# run's steps, default 120; the progress line of its second half is used),
# EXTRA (more coll-train options for the 2-rank runs, e.g. --shard-optimizer).
# OpenBLAS variables that force kernels or cache sizes (OPENBLAS_CORETYPE,
# OPENBLAS_L2_SIZE) are cleared so it picks its kernels from the CPU; set
# KEEP_OPENBLAS_ENV=1 to keep them.  Ranks run under collrun (bound to cores).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
batches=${2:-"64 256 512"}
rounds=${3:-3}
hidden=${HIDDEN:-2048,2048}
steps=${STEPS:-120}
train=$build/trainer/coll-train
[[ -x $train ]] || { echo "trainer-step: $train not built (it needs OpenBLAS: libopenblas-dev)" >&2; exit 1; }
if [[ ${KEEP_OPENBLAS_ENV:-0} != 1 ]]; then unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; fi

# "per step X ms" of the run's last progress line (its second half).  A run
# covers at most the 60000 training samples: fewer steps at large batches.
step_ms() {
  local n=$1 b=$2 s=$steps ms extra=()
  ((n == 1)) || read -r -a extra <<<"${EXTRA:-}"
  ((n * b * s <= 60000)) || s=$((60000 / (n * b) / 2 * 2))
  ms=$("$build/tools/collrun" -n "$n" "$train" --model mlp --hidden "$hidden" --batch "$b" \
      --limit-train $((n * b * s)) --limit-test 100 --epochs 1 --log-every $((s / 2)) "${extra[@]}" 2>&1 |
    sed -n "s/^\[0\] epoch 1 step $s\/$s .*per step \([0-9.]*\) ms.*/\1/p")
  [[ -n $ms ]] || { echo "trainer-step: no step time from coll-train (N=$n, batch $b)" >&2; exit 1; }
  echo "$ms"
}
banner=$("$build/tools/collrun" -n 1 "$train" --model mlp --hidden "$hidden" --batch 8 --limit-train 8 \
         --limit-test 8 --epochs 1 2>&1 | sed -n 's/^\[0\] coll-train: //p' | head -1)
params=$(sed -n 's/^mlp (\([0-9]*\) parameters.*/\1/p' <<<"$banner")
[[ -n $params ]] || { echo "trainer-step: cannot read the parameter count from coll-train" >&2; exit 1; }
bytes=$((params * 4))
echo "# coll-train: $banner"
echo "# $(date -u +%FT%TZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds, $steps steps a run${EXTRA:+; 2-rank runs with $EXTRA}"
allreduce_ms() {
  "$build/tools/collrun" -n 2 "$build/perf/all_reduce_perf" -b "$bytes" -e "$bytes" -n 20 -w 3 2>&1 |
    awk '/^\[0\] +[0-9]+ /{printf "%.3f\n", $11 / 1000}' | grep . ||
    { echo "trainer-step: all_reduce_perf printed no time" >&2; exit 1; }
}
median() { sort -g | awk '{v[NR]=$1} END{if (NR == 0) exit 1; print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

printf "| batch per rank | compute (1 process, batch 2B), ms | all-reduce of %d B, ms | model, ms | 2 ranks, ms | ratio |\n" "$bytes"
echo "|---|---|---|---|---|---|"
for b in $batches; do
  one=() two=() ar=()
  for ((r = 0; r < rounds; r++)); do
    one+=("$(step_ms 1 $((2 * b)))") || exit 1
    two+=("$(step_ms 2 "$b")") || exit 1
    ar+=("$(allreduce_ms)") || exit 1
  done
  c=$(printf "%s\n" "${one[@]}" | median)
  t=$(printf "%s\n" "${two[@]}" | median)
  a=$(printf "%s\n" "${ar[@]}" | median)
  awk -v b="$b" -v c="$c" -v t="$t" -v a="$a" -v r1="${one[*]}" -v r2="${two[*]}" 'BEGIN {
    m = c / 2 + a
    printf "| %d | %.1f (%s) | %.2f | %.1f | %.1f (%s) | %.2f%s |\n", b, c, r1, a, m, t, r2, t / m, (t / m <= 1.10 ? "" : " (over 1.10)")
  }'
done
