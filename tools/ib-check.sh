#!/usr/bin/env bash
# ib-check.sh [--build-only] [--facts-only] [--emulated] [--build DIR] OUT_DIR
#
# One command for a machine with an RDMA NIC (InfiniBand or RoCE): print its
# RDMA facts, then run libcoll's IB transport between two processes of this
# host, and print a summary table LAST.  Needs no network and installs
# nothing.
#
# Steps (each under a timeout; the whole run fits in IB_CHECK_BUDGET seconds,
# default 560, so it fits one 10-minute call):
#   1. build (not with --facts-only): colltopo, collrun, coll_mp_check,
#      all_reduce_perf (and the emulated provider with --emulated) in DIR
#      (default build/; configured Release when it has no CMakeCache.txt);
#   2. RDMA facts: colltopo's RDMA section (what libcoll sees through
#      COLL_IBVERBS_LIB's library), ibv_devinfo where installed, else sysfs
#      (tools/ib-facts.sh) -> OUT_DIR/ib-facts.txt, colltopo.txt,
#      ibv_devinfo.txt.  No ACTIVE port: said so, exit 0;
#   3. the multi-process collective grid at two ranks (ctest's mp.check.n2:
#      collrun -n 2 -- coll_mp_check, every collective x dtype x op x count
#      up to 64 MiB, exact results) with COLL_NET=ib, which forces the IB
#      transport even between ranks of one host (not mp.check.ib.n2, which
#      pins the emulated provider) -> OUT_DIR/grid.log.  Every
#      communicator's init line (COLL_DEBUG=INFO) must name the IB transport,
#      else the step fails: a pass over shared memory proves nothing;
#   4. all_reduce_perf between two ranks with COLL_NET=ib, 16 B to 256 MiB
#      (the tuner's choices, --model), then 256 MiB with the ring forced
#      (COLL_ALGO) -> OUT_DIR/perf.txt; busbw against the first active
#      port's rate (Gb/s / 8 = GB/s).  The target, >= 90% at 256 MiB for the
#      ring all-reduce, is between two hosts: two processes of one host
#      through one port's loopback are not two hosts, and the summary says
#      so (the step passes on its results, not on that percentage);
#   5. the summary: each step ok / FAIL / skip with its key numbers.
#
# --emulated: the emulated verbs provider (docs/verbs-emulation.md) in place
#   of libibverbs (COLL_IBVERBS_LIB=DIR/transports/ib/emulation/
#   libcoll_verbs_emu.so, its fabric private to this run), so the script can
#   run where there is no NIC; its numbers are of the emulation (copies
#   between processes by the CPU), not of a NIC, and the summary says so.
# --facts-only: steps 2 and 5 only, with what DIR already holds (no build).
# --build-only: stop after the build.
# Exit status: 0 when every step passed or was skipped (no active port: the
# facts, then exit 0); 1 when any step failed; 2 on bad arguments.
# Environment: JOBS (build parallelism, default nproc), IB_CHECK_BUDGET;
# COLL_IB_HCA and the other COLL_IB_* settings reach the ranks unchanged.
set -uo pipefail

usage() { echo "usage: $0 [--build-only] [--facts-only] [--emulated] [--build DIR] OUT_DIR" >&2; exit 2; }
build_only=0 facts_only=0 emulated=0 build="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-only) build_only=1 ;;
    --facts-only) facts_only=1 ;;
    --emulated) emulated=1 ;;
    --build) [ $# -ge 2 ] || usage; build=$2; shift ;;
    --build=*) build=${1#--build=} ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) [ -z "$out" ] || usage; out=$1 ;;
  esac
  shift
done
[ -n "$out" ] || usage
[ $build_only = 1 ] && [ $facts_only = 1 ] && usage

repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
cd "$repo" || exit 2
build=${build:-build}
case "$build" in /*) ;; *) build=$repo/$build ;; esac
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
budget=${IB_CHECK_BUDGET:-560}
t_start=$(date +%s)
deadline=$((t_start + budget))
exec > >(tee "$out/ib-check.log") 2>&1
tee_pid=$!
# Let tee print the last lines before the script's caller sees it exit.
trap 'exec >&- 2>&-; wait "$tee_pid" 2>/dev/null' EXIT
# shellcheck source=tools/ib-facts.sh
. "$repo/tools/ib-facts.sh"

# ------------------------------------------------------------- helpers ----
# record, now, step_timeout, run_step, section.
. "$(dirname "${BASH_SOURCE[0]}")/check-steps.sh"
# uses_ib LOG: every "comm ... ready in" line (core/comm.cc, COLL_DEBUG=INFO)
# names a transport with "ib" in it; prints the transports seen.
uses_ib() {
  local seen
  seen=$(grep -oE 'ready in [0-9.]+ ms \([^,]+' "$1" | sed -E 's/.*\(//' | sort | uniq -c | awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }')
  echo "${seen:-no init line}"
  [ -n "$seen" ] && ! grep -oE 'ready in [0-9.]+ ms \([^,]+' "$1" | sed -E 's/.*\(//' | grep -vqE '(^|[^a-z])ib([^a-z]|$)'
}
finish() {
  local fail=0 r i elapsed overall
  for r in "${sum_res[@]}"; do [ "$r" = FAIL ] && fail=1; done
  if [ $fail = 1 ]; then overall=FAIL
  elif [ $build_only = 1 ]; then overall="ok (build only)"
  else
    overall=ok
    for r in "${sum_res[@]}"; do [ "$r" = skip ] && overall="ok (with skips)"; done
  fi
  elapsed=$(( $(now) - t_start ))
  printf '\n==== ib-check summary (%s s, logs in %s) ====\n' "$elapsed" "$out"
  printf '%-18s %-6s %s\n' "step" "result" "detail"
  for i in "${!sum_step[@]}"; do
    printf '%-18s %-6s %s\n' "${sum_step[$i]}" "${sum_res[$i]}" "${sum_detail[$i]}"
  done
  printf '%-18s %-6s %s\n' "overall" "$([ $fail = 1 ] && echo FAIL || echo ok)" "$overall; $mode_text"
  exit $fail
}

if [ $emulated = 1 ]; then
  mode_text="EMULATED verbs provider: every number is of the emulation (CPU copies between processes), not of a NIC"
  export COLL_IBVERBS_LIB=$build/transports/ib/emulation/libcoll_verbs_emu.so
  # A registry of this run's own (docs/verbs-emulation.md).
  export COLL_VERBS_EMU_FABRIC=ib-check.$$
else
  mode_text="libibverbs: ${COLL_IBVERBS_LIB:-libibverbs.so.1}"
fi

# ------------------------------------------------------------ 1. build ----
targets=(colltopo collrun coll_mp_check all_reduce_perf)
[ $emulated = 1 ] && targets+=(coll_verbs_emu)
if [ $facts_only = 0 ]; then
  section "1. build ($build)"
  b0=$(now)
  brc=0
  if [ ! -f "$build/CMakeCache.txt" ]; then
    gen=()
    command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
    run_step "$out/build.log" 180 cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release || brc=1
  fi
  # The IB transport, the emulation and colltopo's RDMA section need
  # rdma-core's infiniband/verbs.h at configure time (cmake/CollFeatures.cmake).
  if [ $brc = 0 ] && ! grep -q '^COLL_HAVE_IBVERBS:INTERNAL=1' "$build/CMakeCache.txt"; then
    echo "configured without infiniband/verbs.h (apt-get install libibverbs-dev, then reconfigure): no IB transport" |
      tee -a "$out/build.log"
    brc=1
  fi
  if [ $brc = 0 ]; then
    run_step "$out/build.log" 420 cmake --build "$build" -j "$jobs" --target "${targets[@]}" || brc=1
  fi
  if [ $brc = 0 ]; then
    record "build" ok "$(( $(now) - b0 )) s: ${targets[*]}"
  else
    record "build" FAIL "see $out/build.log"
    finish
  fi
  if [ $build_only = 1 ]; then
    echo "--build-only: not running anything"
    finish
  fi
fi

# ------------------------------------------------------------ 2. facts ----
section "2. RDMA facts"
colltopo=$build/tools/colltopo
if [ $emulated = 1 ] && { [ ! -x "$colltopo" ] || [ ! -f "$COLL_IBVERBS_LIB" ]; }; then
  record "rdma facts" FAIL "--emulated needs $colltopo and $COLL_IBVERBS_LIB built"
  finish
fi
[ -x "$colltopo" ] || colltopo=""
if ib_facts "$out" "$colltopo"; then
  record "rdma facts" ok "$IB_FACTS"
else
  record "rdma facts" FAIL "$IB_FACTS"
  finish
fi
if [ -z "$IB_ACTIVE" ]; then
  echo "no ACTIVE RDMA port: nothing to run over IB"
  record "ib runs" skip "no ACTIVE RDMA port"
  finish
fi
[ $facts_only = 1 ] && { record "ib runs" skip "--facts-only"; finish; }
port_gbs=""
[ -n "$IB_ACTIVE_RATE" ] && port_gbs=$(awk -v r="$IB_ACTIVE_RATE" 'BEGIN { printf "%g", r / 8 }')
echo "first active port: $IB_ACTIVE, ${IB_ACTIVE_LINK:-?}, ${IB_ACTIVE_RATE:-unknown} Gb/s = ${port_gbs:-?} GB/s"
[ -n "${COLL_IB_HCA:-}" ] && echo "(COLL_IB_HCA=$COLL_IB_HCA may choose another port; busbw is compared with this one)"

# ------------------------------------------------------------- 3. grid ----
section "3. collective grid, 2 ranks, COLL_NET=ib (ctest mp.check.n2)"
grid_log=$out/grid.log
: > "$grid_log"
# The grid's own limits (collrun --timeout 600, ctest TIMEOUT 900) are above
# this step's: ctest's --timeout caps them.
t=$(step_timeout 300)
g0=$(now)
run_step "$grid_log" $((t + 10)) env COLL_NET=ib COLL_DEBUG=INFO COLL_DEBUG_SUBSYS=INIT \
  ctest --test-dir "$build" -R '^mp\.check\.n2$' -V --timeout "$t"
grc=$?
transports=$(uses_ib "$grid_log")
via_ib=$?
cases=$(grep -oE 'mp_check: [0-9]+ passed, [0-9]+ failed \([^)]*\)' "$grid_log" | tail -1)
if ! grep -qE 'Test +#[0-9]+: mp\.check\.n2 ' "$grid_log"; then
  record "grid mp.check.n2" FAIL "did not run (ctest rc $grc; is $build configured with the tests?)"
elif [ $grc != 0 ]; then
  record "grid mp.check.n2" FAIL "ctest rc $grc after $(( $(now) - g0 )) s; transports: $transports (see grid.log)"
elif [ $via_ib != 0 ]; then
  record "grid mp.check.n2" FAIL "passed, but not over IB: transports $transports (COLL_NET=ib not honoured)"
else
  record "grid mp.check.n2" ok "${cases:-passed} in $(( $(now) - g0 )) s; transports: $transports"
fi

# ------------------------------------------------------------- 4. perf ----
section "4. all_reduce_perf, 2 ranks, COLL_NET=ib"
perf_log=$out/perf.txt
: > "$perf_log"
collrun=$build/tools/collrun
perf=$build/perf/all_reduce_perf
# row256 LOG: "busbw algo" of the 256 MiB row (out of place; perf/common/perf.cc columns).
row256() { awk '$1 == "268435456" { b = $8; a = $14 } END { if (b != "") print b, a }' "$1"; }
run_step "$perf_log" 240 "$collrun" -n 2 --no-prefix --timeout 230 -x COLL_NET=ib -x COLL_DEBUG=INFO \
  -x COLL_DEBUG_SUBSYS=INIT -- "$perf" -b 16 -e 256M -f 4 -n 20 -w 5 --model
prc=$?
sweep=$(row256 "$perf_log")
ring_log=$out/perf-ring-256M.txt
: > "$ring_log"
run_step "$ring_log" 120 "$collrun" -n 2 --no-prefix --timeout 110 -x COLL_NET=ib -x COLL_ALGO=allreduce:ring \
  -x COLL_DEBUG=INFO -x COLL_DEBUG_SUBSYS=INIT -- "$perf" -b 256M -e 256M -n 20 -w 5 --model
rrc=$?
cat "$ring_log" >> "$perf_log"
ring=$(row256 "$ring_log")
transports=$(uses_ib "$perf_log")
via_ib=$?
model_line=$(grep -m1 -oE '# cost model \(--model\): transport [^;]*' "$perf_log" | sed 's/# cost model (--model): //')
if [ $prc != 0 ] || [ $rrc != 0 ]; then
  record "all_reduce_perf" FAIL "rc $prc (sweep), $rrc (ring at 256 MiB); transports: $transports (see perf.txt)"
elif [ $via_ib != 0 ]; then
  record "all_reduce_perf" FAIL "ran, but not over IB: transports $transports, $model_line (COLL_NET=ib not honoured)"
else
  detail="256 MiB: tuner's $(echo "$sweep" | awk '{ print $2 }') busbw $(echo "$sweep" | awk '{ print $1 }') GB/s;"
  detail+=" ring busbw $(echo "$ring" | awk '{ print $1 }') GB/s"
  if [ -n "$port_gbs" ] && [ -n "$ring" ]; then
    detail+=$(awk -v b="${ring%% *}" -v p="$port_gbs" -v r="$IB_ACTIVE_RATE" \
      'BEGIN { printf " = %.1f%% of %s (%s Gb/s / 8 = %s GB/s; target >= 90%% between two hosts)", 100 * b / p, "'"$IB_ACTIVE"'", r, p }')
  else
    detail+=" (the port's rate is unknown: no percentage)"
  fi
  detail+=". Two processes on one host through one port's loopback, not two hosts"
  [ $emulated = 1 ] && detail+="; EMULATION, not a NIC"
  record "all_reduce_perf" ok "$detail"
fi
finish
