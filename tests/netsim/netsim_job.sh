#!/usr/bin/env bash
# A job across simulated hosts, for ctest (label netsim, RUN_SERIAL):
#
#   tests/netsim/netsim_job.sh PATH/TO/tools/netsim N RATE [-x VAR=VALUE]... -- PROG ARGS...
#
# Brings up N hosts with RATE links (replacing any simulation that is up),
# runs PROG as rank i on host i (netsim run: real TCP between network
# namespaces, each rank with its own hostname and COLL_SOCKET_IFNAME=eth0),
# and takes the hosts down again.  Exit: the job's status; 77 (skipped) when
# this machine cannot simulate hosts (tests/netsim/probe.sh).
set -uo pipefail

NETSIM=${1:?usage: netsim_job.sh NETSIM N RATE [-x VAR=VALUE]... -- PROG ARGS...}
N=${2:?missing N}
RATE=${3:?missing RATE}
shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=probe.sh
source "$HERE/probe.sh"
if ! why=$(netsim_probe); then
  echo "SKIP: $why"
  exit 77
fi

trap '"$NETSIM" down >/dev/null 2>&1 || echo "WARNING: netsim down failed"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
"$NETSIM" up -n "$N" --rate "$RATE" --force || { echo "FAIL: netsim up -n $N --rate $RATE"; exit 1; }
"$NETSIM" run -n "$N" --prefix "$@"
