#!/usr/bin/env bash
# Open MPI "rsh agent" for tools/netsim hosts: mpirun (started inside host 0
# with --mca plm_rsh_agent this-script) calls `AGENT [opts] HOST CMD...` to
# start its daemon on HOST.  HOST is a netsim address (A.B.C.I+1); run CMD
# inside the namespace of host I instead of ssh.
set -euo pipefail
while [[ $# -gt 0 && $1 == -* ]]; do shift; done   # ssh-style options, if any
host=$1
shift
netsim=$(cd "$(dirname "$0")/../.." && pwd)/tools/netsim
last=${host##*.}
[[ $last =~ ^[0-9]+$ && $last -ge 1 ]] || { echo "netsim-rsh: not a netsim address: $host" >&2; exit 255; }
exec "$netsim" exec "$((last - 1))" -- /bin/sh -c "$*"
