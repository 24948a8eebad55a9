#!/usr/bin/env bash
# The main job in one command: install what is missing, build (Release),
# run a 4-rank all-reduce perf sweep from 8 B to 64 MiB.
# Extra arguments go to all_reduce_perf (e.g. -d bfloat16 -o max).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLL_WERROR=OFF >/dev/null
cmake --build build -j"$(nproc)"
exec build/tools/collrun -n "${NRANKS:-4}" -- build/perf/all_reduce_perf -b 8 -e 64M -f 2 "$@"
