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

free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    echo $((20000 + RANDOM % 30000))
  fi
}

# One job of n ranks (the header lists ranks 0..n-1 once each), at least one
# result row, and #wrong 0 in every row (columns 9 and 13).
check_output() {
  awk -v n="$1" '
    /^#  Rank +[0-9]+ Group/ { seen[$3]++; lines++ }
    /^#/ { next }
    NF >= 13 { rows++; if ($9 != 0 || $13 != 0) { bad++; print "FAIL: wrong values in row: " $0 } }
    END {
      if (lines != n) { print "FAIL: expected one job of " n " ranks, the output lists " lines + 0 " rank lines"; exit 1 }
      for (r = 0; r < n; r++) if (seen[r] != 1) { print "FAIL: rank " r " is not listed once"; exit 1 }
      if (rows == 0) { print "FAIL: no result rows"; exit 1 }
      if (bad) exit 1
    }' "$2"
}

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
