#!/usr/bin/env bash
# libcoll against Open MPI and Gloo, side by side: alternating runs, medians,
# CSV, plots, optionally the docs/PERFORMANCE.md section.  See compare.py
# (--help) and docs/PERFORMANCE.md, "Against Open MPI and Gloo".
#   perf/compare/compare.sh --build build-rel                 # shm + tcp, N=2,4, 5 reps
#   perf/compare/compare.sh --build build-rel --media netsim  # simulated hosts (root)
# Needs /usr/bin/python3 (matplotlib for the plots: python3-matplotlib).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$(dirname "$0")/compare.py" "$@"
