#!/usr/bin/env bash
# ib-allreduce-cost.sh [BUILD_DIR] [N] [ITERS]: the IB transport's protocol
# cost per all-reduce call at N ranks (default 4) for 8 B, 64 KiB and 64 MiB
# (float32 sum): messages (data writes), send and receive work requests,
# completions and control bytes per data byte, summed over the ranks.
# Each size runs twice, ITERS (default 50) and 2 x ITERS calls, and the
# difference of the transports' destroy-time counters (COLL_DEBUG=INFO, NET)
# divided by ITERS is one call's cost (setup and the perf tool's own small
# calls cancel out).  COLL_NET=ib; the verbs library is COLL_IBVERBS_LIB,
# by default the build's emulated provider.
set -euo pipefail
build=${1:-build}
n=${2:-4}
iters=${3:-50}
lib=${COLL_IBVERBS_LIB:-$build/transports/ib/emulation/libcoll_verbs_emu.so}
[ -x "$build/perf/all_reduce_perf" ] || { echo "no $build/perf/all_reduce_perf" >&2; exit 2; }

# Sums "N messages, N send WRs, N receive WRs, N completions in N polls, N
# control bytes" and the bytes written over the ranks' summary lines.
totals() {
  local size=$1 k=$2
  COLL_NET=ib COLL_IBVERBS_LIB="$lib" COLL_VERBS_EMU_FABRIC="ib-allreduce-cost.$$" COLL_DEBUG=INFO \
    COLL_DEBUG_SUBSYS=NET "$build/tools/collrun" -n "$n" --timeout 600 -- \
    "$build/perf/all_reduce_perf" -b "$size" -e "$size" -n "$k" -w 0 -c 0 -d float -o sum 2>&1 |
    awk '/ib: wrote/ {
           line = $0; sub(/.*ib: wrote /, "", line)
           split(line, parts, "; ")
           nb = split(parts[1], nics, ", ")
           for (i = 1; i <= nb; ++i) { split(nics[i], w, " "); data += w[2] }
           nw = split(parts[2], c, " ")
           for (i = 1; i < nw; ++i) {
             if (c[i + 1] == "messages") msgs += c[i]
             else if (c[i + 1] == "send") swr += c[i]
             else if (c[i + 1] == "receive") rwr += c[i]
             else if (c[i + 1] == "completions") cqe += c[i]
             else if (c[i + 1] == "polls,") polls += c[i]
             else if (c[i + 1] == "control") ctrl += c[i]
           }
           ranks++
         }
         END { printf "%d %.0f %.0f %.0f %.0f %.0f %.0f %.0f\n", ranks, msgs, swr, rwr, cqe, polls, ctrl, data }'
}

echo "# ib-allreduce-cost: N=$n, per all-reduce call summed over ranks ($iters vs $((2 * iters)) calls), verbs: $lib"
echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
printf "# %10s %9s %9s %9s %9s %12s %12s\n" bytes messages sendWRs recvWRs CQEs ctrlBytes ctrlB/dataB
for size in 8 65536 67108864; do
  read -r r1 m1 s1 v1 q1 p1 c1 d1 < <(totals "$size" "$iters")
  read -r r2 m2 s2 v2 q2 p2 c2 d2 < <(totals "$size" $((2 * iters)))
  if [ "$r1" != "$n" ] || [ "$r2" != "$n" ]; then
    echo "ib-allreduce-cost: expected $n ranks' IB summaries, got $r1 and $r2 (did the job run over ib?)" >&2
    exit 1
  fi
  awk -v s="$size" -v k="$iters" -v m=$((m2 - m1)) -v sw=$((s2 - s1)) -v rw=$((v2 - v1)) -v q=$((q2 - q1)) \
      -v c=$((c2 - c1)) -v d=$((d2 - d1)) \
      'BEGIN { printf "  %10d %9.1f %9.1f %9.1f %9.1f %12.1f %12.2e\n", s, m / k, sw / k, rw / k, q / k, c / k, d ? c / d : 0 }'
done
