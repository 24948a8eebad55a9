#!/usr/bin/env bash
# run_hello_mismatch_test.sh PERF — ranks started by hand (torchrun's
# variables, MASTER_ADDR/PORT) that cannot form one job must all fail at
# once, each naming the cause and what its launcher told it, long before
# COLL_TIMEOUT (60 s here):
#   sizes      rank 0 with WORLD_SIZE=2, rank 1 with WORLD_SIZE=3;
#   duplicate  WORLD_SIZE=3 with ranks 0, 1 and 1 again.
set -u
perf=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for v in $(env | sed -n 's/^\(COLL_RANK\|COLL_NRANKS\|COLL_LOCAL_[A-Z]*\|COLL_ROOT\|COLL_SECRET\|RANK\|WORLD_SIZE\|LOCAL_RANK\|LOCAL_WORLD_SIZE\|TORCHELASTIC_[A-Z_]*\|MASTER_ADDR\|MASTER_PORT\|SLURM_[A-Z_]*\|OMPI_[A-Z_]*\|PMIX_[A-Z_]*\)=.*/\1/p'); do
  unset "$v"
done
. "$(dirname "$0")/launch_test_lib.sh"
export COLL_TIMEOUT=60s MASTER_ADDR=127.0.0.1
fail=0

# job NAME "RANK:WORLD_SIZE ..." PATTERN...: starts one process per pair
# (the first alone for 0.3 s, so that it hosts the rendezvous and arrives
# first), waits, and wants every process to exit nonzero within 20 s with
# every PATTERN (grep -E) in its stderr.
job() {
  local name=$1 ranks=$2 pids=() i=0 rc t0 took
  shift 2
  MASTER_PORT=$(free_port)
  export MASTER_PORT
  t0=$(date +%s)
  for pair in $ranks; do
    RANK=${pair%%:*} WORLD_SIZE=${pair##*:} timeout 50 "$perf" -b 8 -e 8 >"$work/$name.$i.out" 2>"$work/$name.$i.err" &
    pids+=($!)
    [ $i -eq 0 ] && sleep 0.3
    i=$((i + 1))
  done
  for ((i = 0; i < ${#pids[@]}; i++)); do
    wait "${pids[$i]}"
    rc=$?
    took=$(($(date +%s) - t0))
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
      echo "FAIL ($name): process $i exited with $rc after $took s"
      fail=1
    fi
    for pat in "$@"; do
      if ! grep -Eq "$pat" "$work/$name.$i.err"; then
        echo "FAIL ($name): process $i's errors lack /$pat/:"
        sed "s/^/  /" "$work/$name.$i.err"
        fail=1
      fi
    done
  done
  took=$(($(date +%s) - t0))
  if [ "$took" -gt 20 ]; then
    echo "FAIL ($name): the processes took $took s to fail (COLL_TIMEOUT is 60 s)"
    fail=1
  fi
  echo "$name: every process failed in $took s; rank 0 said:"
  sed "s/^/  /" "$work/$name.0.err"
}

job sizes "0:2 1:3" "rank 1 was started for a job of 3 ranks, but the ranks before it for a job of 2" \
  "this rank was started with RANK=[01], WORLD_SIZE=[23]"
job duplicate "0:3 1:3 1:3" "two processes say they are rank 1 of 3" "this rank was started with RANK=[01], WORLD_SIZE=3"
[ "$fail" -eq 0 ] && echo "hello mismatch: all passed"
exit "$fail"
