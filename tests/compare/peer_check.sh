#!/usr/bin/env bash
# A peer harness (perf/compare: mpi_coll_perf or gloo_coll_perf) for N=2 on
# tiny sizes, every collective: exits 0, prints the table our perf tools
# print (13 columns, one row per size), #wrong 0 everywhere.
# Exit 77 (skipped) when the harness is not built.
# Usage: peer_check.sh mpi|gloo BUILD_DIR
set -uo pipefail
kind=$1
build=$2
tool=$build/perf/${kind}_coll_perf
if [[ ! -x $tool ]]; then
  echo "SKIP: $tool not built (install the peer's -dev package, reconfigure)"
  exit 77
fi
if [[ $kind == mpi ]] && ! command -v mpirun >/dev/null; then
  echo "SKIP: no mpirun"
  exit 77
fi
fail=0
colls=(allreduce allgather broadcast)
if [[ $kind == mpi ]]; then
  colls+=(reducescatter)
else
  # The Gloo harness has no reduce-scatter: it must refuse, not time nothing.
  "$tool" -C reducescatter >/dev/null 2>&1
  rc=$?
  if [[ $rc -ne 2 ]]; then
    echo "FAIL: gloo reducescatter: exit $rc, want 2 (refused)"
    fail=1
  else
    echo "ok: gloo refuses reducescatter"
  fi
fi
for coll in "${colls[@]}"; do
  args=(-C "$coll" -b 8 -e 64K -f 8 -n 3 -w 1 -c 1)
  [[ $coll == broadcast ]] && args+=(-r 1)
  if [[ $kind == mpi ]]; then
    cmd=(mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ob1 --mca btl self,vader "$tool" "${args[@]}")
  else
    store=$(mktemp -d)
    cmd=("$build/tools/collrun" -n 2 --no-prefix --timeout 120 -- "$tool" -i lo -S "$store" "${args[@]}")
  fi
  echo "\$ ${cmd[*]}"
  out=$(timeout 150 "${cmd[@]}" 2>&1)
  rc=$?
  [[ $kind == gloo ]] && rm -rf "$store"
  echo "$out"
  rows=$(awk '/^ *[0-9]/ && NF == 13' <<<"$out" | wc -l)
  wrong=$(awk '/^ *[0-9]/ && NF == 13 {s += $9 + $13} END {print s + 0}' <<<"$out")
  bad=$(awk '/^ *[0-9]/ && NF == 13 && ($9 !~ /^[0-9]+$/ || $13 !~ /^[0-9]+$/ || $6 <= 0 || $10 <= 0)' <<<"$out" | wc -l)
  if [[ $rc -ne 0 || $rows -ne 5 || $wrong != 0 || $bad -ne 0 ]] || ! grep -q '^# Out of bounds values : 0 OK' <<<"$out"; then
    echo "FAIL: $kind $coll: exit $rc, $rows rows (want 5: 8 B .. 32 KiB), $wrong wrong, $bad unparsable rows"
    fail=1
  else
    echo "ok: $kind $coll: 5 rows, #wrong 0"
  fi
done
exit $fail
