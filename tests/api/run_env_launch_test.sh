#!/usr/bin/env bash
# run_env_launch_test.sh MODE PERF NRANKS — start NRANKS copies of a perf
# tool by hand with the variables a launcher would set, no collrun:
#   torchrun  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR/PORT
#             (what torchrun gives its workers); then again as a real
#             torchrun does, with TORCHELASTIC_RUN_ID and its store holding
#             MASTER_PORT (libcoll must use MASTER_PORT+1).
#   slurm     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_ID,
#             SLURM_STEP_ID (what srun sets) + MASTER_ADDR given as this
#             host's name (resolved by libcoll) and MASTER_PORT.
# Fails on a nonzero exit of any rank, any #wrong != 0, or output that is
# not ONE job of NRANKS ranks.
set -u
mode=$1
perf=$2
n=$3

work=$(mktemp -d)
holder=""
cleanup() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# Start clean: no stale launcher variables from the caller.
for v in $(env | sed -n 's/^\(COLL_RANK\|COLL_NRANKS\|COLL_LOCAL_[A-Z]*\|COLL_ROOT\|COLL_SECRET\|RANK\|WORLD_SIZE\|LOCAL_RANK\|LOCAL_WORLD_SIZE\|GROUP_RANK\|ROLE_RANK\|TORCHELASTIC_[A-Z_]*\|MASTER_ADDR\|MASTER_PORT\|SLURM_[A-Z_]*\|OMPI_[A-Z_]*\|PMIX_[A-Z_]*\)=.*/\1/p'); do
  unset "$v"
done
export COLL_TIMEOUT=60s

. "$(dirname "$0")/launch_test_lib.sh"

# run_job NAME: starts ranks 0..n-1 with rank_env (defined per mode) and
# checks them.  Every rank's stdout/stderr goes to its own files.
run_job() {
  local name=$1 pids=() r rc fail=0
  for ((r = 0; r < n; r++)); do
    (
      rank_env "$r"
      exec timeout 120 "$perf" -b 8 -e 1M -f 4
    ) >"$work/$name.$r.out" 2>"$work/$name.$r.err" &
    pids+=($!)
  done
  for ((r = 0; r < n; r++)); do
    wait "${pids[$r]}"
    rc=$?
    if [ "$rc" -ne 0 ]; then
      echo "FAIL ($name): rank $r exited with $rc"
      fail=1
    fi
  done
  for ((r = 0; r < n; r++)); do
    sed "s/^/[$name rank $r] /" "$work/$name.$r.out"
    sed "s/^/[$name rank $r stderr] /" "$work/$name.$r.err" >&2
  done
  [ "$fail" -eq 0 ] || return 1
  cat "$work/$name".*.out >"$work/$name.all"
  check_output "$n" "$work/$name.all" || return 1
  # No COLL_SECRET: rank 0, and only rank 0, warns that the secret is derived.
  local warns
  warns=$(cat "$work/$name".*.err | grep -c "no COLL_SECRET")
  if [ "$warns" -ne 1 ]; then
    echo "FAIL ($name): expected one derived-secret warning (rank 0's), got $warns"
    return 1
  fi
  echo "PASS ($name): one job of $n ranks, no wrong values"
}

case "$mode" in
  torchrun)
    port=$(free_port)
    rank_env() {
      export RANK=$1 WORLD_SIZE=$n LOCAL_RANK=$1 LOCAL_WORLD_SIZE=$n
      export MASTER_ADDR=127.0.0.1 MASTER_PORT=$port
    }
    echo "torchrun-style: RANK/WORLD_SIZE/LOCAL_RANK, MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"
    run_job torchrun || exit 1

    # As under a real torchrun: the agent's store listens on MASTER_PORT.
    command -v python3 >/dev/null 2>&1 || { echo "no python3: agent-store phase skipped"; exit 0; }
    python3 -c '
import socket, sys, time
while True:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", p + 1))  # libcoll will need the next port
    except OSError:
        s.close()
        continue
    t.close()
    break
s.listen(16)
open(sys.argv[1] + ".tmp", "w").write(str(p))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
' "$work/store_port" &
    holder=$!
    for _ in $(seq 100); do [ -f "$work/store_port" ] && break; sleep 0.1; done
    [ -f "$work/store_port" ] || { echo "FAIL: the stand-in store did not start"; exit 1; }
    store_port=$(cat "$work/store_port")
    rank_env() {
      export RANK=$1 WORLD_SIZE=$n LOCAL_RANK=$1 LOCAL_WORLD_SIZE=$n GROUP_RANK=0 ROLE_RANK=$1
      export MASTER_ADDR=127.0.0.1 MASTER_PORT=$store_port
      export TORCHELASTIC_RUN_ID=ctest-$$ TORCHELASTIC_USE_AGENT_STORE=True
    }
    echo "torchrun agent store on MASTER_PORT=$store_port: libcoll must meet at $((store_port + 1))"
    run_job torchrun_agent || exit 1
    ;;
  slurm)
    port=$(free_port)
    host=$(hostname)
    if ! getent hosts "$host" >/dev/null 2>&1; then
      echo "note: host name '$host' does not resolve here; using MASTER_ADDR=127.0.0.1"
      host=127.0.0.1
    fi
    rank_env() {
      export SLURM_PROCID=$1 SLURM_NTASKS=$n SLURM_LOCALID=$1 SLURM_NODEID=0
      export SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_NTASKS_PER_NODE=$n
      export MASTER_ADDR=$host MASTER_PORT=$port
    }
    echo "srun-style: SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID, MASTER_ADDR=$host MASTER_PORT=$port"
    run_job slurm || exit 1
    ;;
  *)
    echo "usage: $0 torchrun|slurm PERF NRANKS" >&2
    exit 2
    ;;
esac
