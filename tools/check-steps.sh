# check-steps.sh — sourced by tools/gpu-check.sh and tools/ib-check.sh: the
# summary table's rows and steps under a time budget.  The caller sets
# `deadline` (epoch seconds) before its first step.
declare -a sum_step sum_res sum_detail
# record STEP RESULT DETAIL: one row of the summary printed last.
record() { sum_step+=("$1"); sum_res+=("$2"); sum_detail+=("$3"); }
now() { date +%s; }
# step_timeout MAX [RESERVE]: seconds a step may take (capped by what is
# left, less RESERVE seconds kept for the steps after it).
step_timeout() {
  local left=$((deadline - $(now) - 10 - ${2:-0}))
  [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}
# run_step LOG MAX CMD...: run with a timeout, output to LOG and the console.
run_step() {
  local log=$1 max=$2 t
  shift 2
  t=$(step_timeout "$max")
  if [ "$t" -le 0 ]; then
    echo "!! out of time budget before: $*" | tee -a "$log"
    return 124
  fi
  echo "+ (timeout ${t}s) $*" | tee -a "$log"
  timeout -k 10 "$t" "$@" 2>&1 | tee -a "$log"
  return "${PIPESTATUS[0]}"
}
section() { printf '\n==== %s ====\n' "$*"; }
