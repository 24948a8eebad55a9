# launch_test_lib.sh — shared by the launcher tests (run_mpirun_test.sh,
# run_env_launch_test.sh): a free port, and the check of a perf tool's output.

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
