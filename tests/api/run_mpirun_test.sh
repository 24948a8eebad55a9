#!/usr/bin/env bash
# run_mpirun_test.sh PERF NRANKS — ctest mp.openmpi.n4: Open MPI's mpirun
# starts NRANKS copies of a perf tool (no collrun); libcoll reads
# OMPI_COMM_WORLD_* and meets at MASTER_ADDR:MASTER_PORT.  Fails on a
# nonzero exit, any #wrong != 0, or output that is not ONE job of NRANKS
# ranks.  Exit 77 (skipped) without mpirun.
set -u
perf=$1
n=$2

if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun is not installed (apt-get install openmpi-bin)"
  exit 77
fi

. "$(dirname "$0")/launch_test_lib.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Run outside any allocation and without stale launcher variables.
for v in $(env | sed -n 's/^\(COLL_RANK\|COLL_NRANKS\|COLL_LOCAL_[A-Z]*\|COLL_ROOT\|COLL_SECRET\|RANK\|WORLD_SIZE\|LOCAL_RANK\|LOCAL_WORLD_SIZE\|TORCHELASTIC_[A-Z_]*\|MASTER_ADDR\|MASTER_PORT\|SLURM_[A-Z_]*\|OMPI_[A-Z_]*\|PMIX_[A-Z_]*\)=.*/\1/p'); do
  unset "$v"
done

port=$(free_port)
echo "mpirun -np $n, MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"
timeout 240 mpirun --allow-run-as-root --oversubscribe -np "$n" \
  -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" -x COLL_TIMEOUT=60s \
  "$perf" -b 8 -e 1M -f 4 >"$work/out" 2>"$work/err"
rc=$?
cat "$work/out"
cat "$work/err" >&2
if [ "$rc" -ne 0 ]; then
  echo "FAIL: mpirun exited with $rc"
  exit 1
fi
check_output "$n" "$work/out" || exit 1
# No COLL_SECRET: rank 0, and only rank 0, warns that the secret is derived.
warns=$(grep -c "no COLL_SECRET" "$work/err")
if [ "$warns" -ne 1 ]; then
  echo "FAIL: expected one derived-secret warning (rank 0's), got $warns"
  exit 1
fi
echo "PASS: one job of $n ranks under mpirun, no wrong values"
