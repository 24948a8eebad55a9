#!/usr/bin/env bash
# Trainer end-to-end tests through collrun (label trainer).
# Usage: run_trainer_test.sh COLLRUN COLL_TRAIN KIND N [DATA_DIR]
#   KIND = checkgrads-mlp | checkgrads-resnet | checkgrads-defaults-{mlp,resnet} | checkgrads-*-shard | resume | learn | accum | partial | shard
# Skips (77) when Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist).
set -euo pipefail
collrun=$1 train=$2 kind=$3 n=$4 data=${5:-/usr/share/datasets/fashion-mnist}
if [ ! -e "$data/train-images-idx3-ubyte.gz" ] && [ ! -e "$data/train-images-idx3-ubyte" ]; then
  echo "SKIP: no Fashion-MNIST in $data (apt-get install dataset-fashion-mnist)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { "$collrun" -n "$1" --timeout 600 -- "$train" --data "$data" "${@:2}"; }
small_mlp=(--model mlp --hidden 64,32)
small_resnet=(--model resnet --width 4 --blocks 2)
# same_params WHAT A B: raw float32 parameter files equal up to rounding
# (summation order differs): max |a-b| / max |a| < 1e-4.
same_params() {
  python3 - "$@" <<'PY'
import struct, sys
what, a, b = sys.argv[1], open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
assert len(a) == len(b) and len(a) > 0, f"{what}: parameter files differ in size"
fa = struct.unpack(f"{len(a)//4}f", a); fb = struct.unpack(f"{len(b)//4}f", b)
err = max(abs(x - y) for x, y in zip(fa, fb)) / max(abs(x) for x in fa)
print(f"{what}: max relative difference {err:.3g}")
sys.exit(0 if err < 1e-4 else 1)
PY
}

case "$kind" in
  checkgrads-mlp)
    run "$n" --check-grads "${small_mlp[@]}" --batch 8 --check-steps 3 ;;
  checkgrads-resnet)
    run "$n" --check-grads "${small_resnet[@]}" --batch 4 --check-steps 2 ;;
  checkgrads-defaults-mlp | checkgrads-defaults-resnet)
    # The check at its own defaults (batch 64, 3 steps after the first, the
    # default model sizes), for three init/shuffle seeds: the bounds must hold
    # at any batch and step count, not only at the small ones above.  (Before
    # the per-step comparison, the ResNet's BN biases failed at seeds 2, 3.)
    for seed in 1 2 3; do
      run "$n" --check-grads --model "${kind#checkgrads-defaults-}" --seed $seed
    done ;;
  checkgrads-mlp-shard)
    # ZeRO-1: reduce-scatter, each rank updates its pieces, all-gather.
    # Hidden 64,32 with N = 3 leaves tails (784*64, 64 and 10 are not
    # multiples of 3) that every rank updates itself.
    out=$(run "$n" --check-grads "${small_mlp[@]}" --batch 8 --check-steps 3 --shard-optimizer)
    echo "$out"
    grep -q "gradients after reduce-scatter" <<<"$out" || { echo "the sharded path did not run"; exit 1; } ;;
  checkgrads-resnet-shard)
    run "$n" --check-grads "${small_resnet[@]}" --batch 4 --check-steps 2 --shard-optimizer ;;
  resume)
    # Interrupted and resumed ends with exactly the parameters of an
    # uninterrupted run (bit for bit: same data order, same arithmetic).
    common=("${small_mlp[@]}" --limit-train 2048 --limit-test 256 --epochs 2 --batch 32 --log-every 10)
    run "$n" "${common[@]}" --dump-params "$tmp/straight.bin"
    run "$n" "${common[@]}" --checkpoint "$tmp/ck" --stop-after-steps 40
    run "$n" "${common[@]}" --checkpoint "$tmp/ck" --resume --dump-params "$tmp/resumed.bin"
    cmp "$tmp/straight.bin" "$tmp/resumed.bin"
    echo "resume: parameters identical to the uninterrupted run" ;;
  learn)
    # It learns: one epoch on 6000 samples reaches >= 70% test accuracy.
    out=$(run "$n" --model mlp --hidden 128 --limit-train 6000 --limit-test 1000 --epochs 1 --batch 32 --lr 0.05 \
          --log-every 20 --csv "$tmp/loss.csv" --plot "$tmp/loss.png")
    echo "$out"
    acc=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' <<<"$out" | tail -1)
    [ -n "$acc" ] || { echo "no accuracy line"; exit 1; }
    python3 -c "import sys; a=float('$acc'); sys.exit(0 if a >= 70 else 1)" || { echo "accuracy $acc% < 70%"; exit 1; }
    [ "$(wc -l <"$tmp/loss.csv")" -gt 2 ] || { echo "loss CSV has no rows"; exit 1; }
    [ -s "$tmp/loss.png" ] || { echo "no loss plot"; exit 1; } ;;
  accum)
    # Accumulating 2 micro-batches of 16 is one step on the same 32 samples
    # (one rank: the micro-batches are the 32-sample batch's two halves).
    common=("${small_mlp[@]}" --limit-train 1024 --limit-test 128 --epochs 1 --log-every 10)
    run 1 "${common[@]}" --batch 32 --dump-params "$tmp/b32.bin"
    run 1 "${common[@]}" --batch 16 --accum 2 --dump-params "$tmp/b16x2.bin"
    same_params accumulation "$tmp/b32.bin" "$tmp/b16x2.bin" ;;
  partial)
    # Every sample once per epoch: the last global batch is smaller than
    # N x B (1000 = 10 x 96 + 40: ranks take 14, 13, 13) or has fewer
    # samples than ranks (961 = 10 x 96 + 1: two ranks train on nothing),
    # and N ranks still end where one process with batch N x B ends.
    for lim in 1000 961; do
      common=("${small_mlp[@]}" --limit-train $lim --limit-test 128 --epochs 2 --log-every 5)
      out=$(run "$n" "${common[@]}" --batch 32 --dump-params "$tmp/n$n.bin")
      echo "$out"
      steps=$(( (lim + 32 * n - 1) / (32 * n) ))
      grep -q " $steps steps per epoch" <<<"$out" || { echo "want $steps steps per epoch (the last one partial)"; exit 1; }
      run 1 "${common[@]}" --batch $((32 * n)) --dump-params "$tmp/n1.bin"
      same_params "mlp, $lim samples" "$tmp/n$n.bin" "$tmp/n1.bin"
    done
    # The ResNet with synchronized batch norm: the statistics of an uneven
    # (and partly empty) last batch are the global batch's too.
    common=("${small_resnet[@]}" --limit-train 961 --limit-test 128 --epochs 1 --log-every 5)
    run "$n" "${common[@]}" --sync-bn --batch 32 --dump-params "$tmp/r$n.bin"
    run 1 "${common[@]}" --batch $((32 * n)) --dump-params "$tmp/r1.bin"
    same_params "resnet --sync-bn, 961 samples" "$tmp/r$n.bin" "$tmp/r1.bin" ;;
  shard)
    # --shard-optimizer trains to the parameters of the plain all-reduce run
    # (up to summation order), and resumes exactly: the checkpoint gathers
    # every rank's momentum pieces.  Small buckets: several reduce-scatter
    # groups per step, started during backward.
    common=("${small_mlp[@]}" --limit-train 2048 --limit-test 256 --epochs 2 --batch 32 --log-every 10)
    run "$n" "${common[@]}" --dump-params "$tmp/plain.bin"
    common+=(--bucket-mb 0.05)
    out=$(run "$n" "${common[@]}" --shard-optimizer --dump-params "$tmp/sharded.bin")
    echo "$out"
    grep -q "optimizer sharded (ZeRO-1)" <<<"$out" || { echo "no sharding in the banner"; exit 1; }
    grep -q " in [2-9] buckets" <<<"$out" || { echo "want several buckets"; exit 1; }
    same_params "sharded vs all-reduce" "$tmp/plain.bin" "$tmp/sharded.bin"
    run "$n" "${common[@]}" --shard-optimizer --checkpoint "$tmp/ck" --stop-after-steps 25
    run "$n" "${common[@]}" --shard-optimizer --checkpoint "$tmp/ck" --resume --dump-params "$tmp/resumed.bin"
    cmp "$tmp/sharded.bin" "$tmp/resumed.bin"
    echo "shard: resumed parameters identical to the uninterrupted sharded run" ;;
  *) echo "unknown kind $kind"; exit 2 ;;
esac
