# shellcheck shell=bash disable=SC2034  # sourced; sets IB_* for the caller
# ib-facts.sh — sourced by tools/ib-check.sh and tools/gpu-check.sh: the
# machine's RDMA devices and ports, printed and saved, in a few seconds.
#
#   ib_facts OUT_DIR [COLLTOPO]
#
# Sources, each under a timeout:
#   colltopo's RDMA section (COLLTOPO, where given and built with verbs.h):
#     what libcoll itself sees through COLL_IBVERBS_LIB's library (so the
#     emulated provider's fake NICs too) -> OUT_DIR/colltopo.txt, and its
#     RDMA section -> OUT_DIR/ib-facts.txt;
#   without it, sysfs (/sys/class/infiniband: the kernel's devices, state,
#     link layer, rate) -> OUT_DIR/ib-facts.txt;
#   ibv_devinfo where installed (the system's libibverbs, never the
#     emulation) -> OUT_DIR/ibv_devinfo.txt.
# Sets, for the caller's summary:
#   IB_PORTS        one "device port state link rate" line per port
#   IB_ACTIVE       device:port of the first ACTIVE port ("" if none)
#   IB_ACTIVE_RATE  its rate in Gb/s ("" if unknown)
#   IB_ACTIVE_LINK  its link layer (InfiniBand, Ethernet)
#   IB_FACTS        one line: where the facts came from and every port
# Returns 0 whenever the facts were read (no device is a fact too), 1 when
# colltopo was given and failed.

# _ib_facts_colltopo OUT COLLTOPO: colltopo's RDMA section -> ib-facts.txt, IB_PORTS.
_ib_facts_colltopo() {
  local out=$1 colltopo=$2 rc=0
  timeout 30 "$colltopo" > "$out/colltopo.txt" 2>&1 || rc=1
  # The RDMA section is the last part of colltopo's output (tools/topo/main.cc).
  sed -nE '/^(no RDMA devices|RDMA devices|libibverbs not loadable)/,$p' "$out/colltopo.txt" > "$out/ib-facts.txt"
  [ $rc = 0 ] || echo "colltopo failed: $(tail -1 "$out/colltopo.txt")" >> "$out/ib-facts.txt"
  # "  dev: GUID ..." then "    port N: STATE, Link, R Gb/s (...)" lines
  # (tools/topo/ib_section.cc).
  IB_PORTS=$(awk '/^  [^ ]+: GUID/ { dev = $1; sub(/:$/, "", dev) }
                  /^    port [0-9]+: / { port = $2; sub(/:$/, "", port); st = $3; sub(/,$/, "", st)
                                          ln = $4; sub(/,$/, "", ln); r = "?"
                                          if (match($0, /[0-9.]+ Gb\/s/)) r = substr($0, RSTART, RLENGTH - 5)
                                          print dev, port, st, ln, r }' "$out/ib-facts.txt")
  return $rc
}

# _ib_facts_sysfs OUT: the kernel's RDMA devices -> ib-facts.txt, IB_PORTS.
_ib_facts_sysfs() {
  local out=$1 p dev port st ln r
  : > "$out/ib-facts.txt"
  for p in /sys/class/infiniband/*/ports/*; do
    [ -d "$p" ] || continue
    dev=$(basename "$(dirname "$(dirname "$p")")")
    port=$(basename "$p")
    # state reads "4: ACTIVE", rate "400 Gb/sec (4X NDR)".
    st=$(sed -E 's/^[0-9]+: *//' "$p/state" 2>/dev/null)
    ln=$(cat "$p/link_layer" 2>/dev/null)
    r=$(sed -nE 's/^([0-9.]+) Gb\/sec.*/\1/p' "$p/rate" 2>/dev/null)
    echo "  $dev port $port: ${st:-?}, ${ln:-?}, $(cat "$p/rate" 2>/dev/null || echo 'rate unknown')" >> "$out/ib-facts.txt"
    IB_PORTS+="${IB_PORTS:+$'\n'}$dev $port ${st:-?} ${ln:-?} ${r:-?}"
  done
  [ -s "$out/ib-facts.txt" ] || echo "no RDMA devices (nothing in /sys/class/infiniband)" > "$out/ib-facts.txt"
}

ib_facts() {
  local out=$1 colltopo=${2:-} src rc=0 first
  IB_PORTS="" IB_ACTIVE="" IB_ACTIVE_RATE="" IB_ACTIVE_LINK="" IB_FACTS=""
  src=sysfs
  if [ -n "$colltopo" ] && [ -x "$colltopo" ]; then
    src=colltopo
    _ib_facts_colltopo "$out" "$colltopo" || rc=1
    # A colltopo built without verbs.h lists nothing: the kernel's view then.
    if grep -q '^RDMA devices: not built' "$out/ib-facts.txt"; then
      echo "colltopo was built without infiniband/verbs.h: sysfs instead"
      src=sysfs
    fi
  fi
  [ $src = sysfs ] && _ib_facts_sysfs "$out"
  echo "RDMA facts ($src):"
  cat "$out/ib-facts.txt"
  if command -v ibv_devinfo >/dev/null 2>&1; then
    echo "ibv_devinfo (the system's libibverbs$([ -n "${COLL_IBVERBS_LIB:-}" ] && echo ', not COLL_IBVERBS_LIB')):"
    timeout 30 ibv_devinfo > "$out/ibv_devinfo.txt" 2>&1
    cat "$out/ibv_devinfo.txt"
  else
    echo "ibv_devinfo: not installed (rdma-core's ibverbs-utils)"
  fi

  first=$(printf '%s\n' "$IB_PORTS" | awk '$3 == "ACTIVE" { print; exit }')
  if [ -n "$first" ]; then
    IB_ACTIVE=$(echo "$first" | awk '{ print $1 ":" $2 }')
    IB_ACTIVE_LINK=$(echo "$first" | awk '{ print $4 }')
    IB_ACTIVE_RATE=$(echo "$first" | awk '$5 != "?" { print $5 }')
  fi
  if [ -n "$IB_PORTS" ]; then
    IB_FACTS="$src: $(printf '%s\n' "$IB_PORTS" | awk '{ printf "%s%s:%s %s %s %s Gb/s", sep, $1, $2, $3, $4, $5; sep = "; " }')"
  else
    IB_FACTS="$src: $(head -1 "$out/ib-facts.txt")"
  fi
  return $rc
}
