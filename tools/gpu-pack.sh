#!/usr/bin/env bash
# gpu-pack.sh [ARCHIVE]
#
# Build the GPU check's targets here (nvcc; no GPU needed) into build-gpu/ and
# pack what running them needs into one archive (default
# .gpubuild/build-gpu.tar.xz): the binaries, every CTestTestfile.cmake, the
# shared libraries they need beyond the C/C++ runtime and the CUDA driver
# (build-gpu/runtime-libs/), and this checkout's path (build-gpu/PACKED_FROM).
#
# Why: a GPU machine lent for minutes should spend them running, not
# compiling (the nvcc build is about 10 CPU-minutes).  On the GPU machine,
# `tools/gpu-check.sh --unpack ARCHIVE OUT` unpacks it and runs the same
# steps as the cmake path, without building.  The binaries name this
# checkout's path (ctest's commands, libcoll's RUNPATH), so gpu-check links
# that path to its own checkout when it does not exist there.
#
# Environment: JOBS (build parallelism, default nproc).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
archive=${1:-$repo/.gpubuild/build-gpu.tar.xz}
cd "$repo"
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

# gpu-check.sh's own cmake path builds the targets (one list of them), with
# no step limit that a 2-core build could outrun.
log_dir=$(mktemp -d)
if ! GPU_CHECK_BUDGET=86400 GPU_CHECK_BUILD_MAX=86000 JOBS=$jobs \
     tools/gpu-check.sh --build-only --path cmake "$log_dir" >/dev/null 2>&1; then
  tail -30 "$log_dir/gpu-check.log" >&2
  echo "gpu-pack: the build failed (log above; whole: $log_dir/build.log)" >&2
  exit 1
fi
rm -rf "$log_dir"

bins=(build-gpu/tests/gpu/coll_device_reduce_test build-gpu/kernels/cuda/coll_device_reduce_bench
      build-gpu/tests/gpu/coll_device_coll_test build-gpu/tests/gpu/coll_device_local_test build-gpu/perf/device_perf
      build-gpu/tools/collrun)
# Those gpu-check builds when their targets exist here: the host kernels'
# test, the topology tool, the NCCL program (ours and NVIDIA's header), and
# the host all-reduce's perf tool (the staged path's host part alone).
for b in build-gpu/tests/kernels/coll_kernels_test build-gpu/tools/colltopo build-gpu/tests/nccl/nccl_program \
         build-gpu/tests/nccl/nccl_program_nvidia_linked build-gpu/perf/all_reduce_perf; do
  [ -x "$b" ] && bins+=("$b")
done
shopt -s nullglob
libs=(build-gpu/libcoll/libcoll.so* build-gpu/nccl/libnccl.so*)
shopt -u nullglob

# Shared libraries beyond what any Linux with a CUDA driver has.
rm -rf build-gpu/runtime-libs
mkdir -p build-gpu/runtime-libs
ldd "${bins[@]}" "${libs[@]}" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
while read -r name path; do
  case "$name" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libgcc_s.so.*|libstdc++.so.*|ld-linux*|libcuda.so.*|libcoll.so.*|libnccl.so.*) ;;
    *) cp -L "$path" "build-gpu/runtime-libs/$name"; echo "runtime lib: $name ($path)" ;;
  esac
done
echo "$repo" > build-gpu/PACKED_FROM
git rev-parse HEAD > build-gpu/PACKED_COMMIT 2>/dev/null || true
git status --porcelain --untracked-files=no | grep -q . && echo "(+ uncommitted changes)" >> build-gpu/PACKED_COMMIT

mkdir -p "$(dirname "$archive")"
find build-gpu -name CTestTestfile.cmake > /tmp/gpu-pack-list.$$
printf '%s\n' "${bins[@]}" "${libs[@]}" build-gpu/runtime-libs build-gpu/PACKED_FROM build-gpu/PACKED_COMMIT >> /tmp/gpu-pack-list.$$
tar -cf - -T /tmp/gpu-pack-list.$$ | xz -6 -T"$jobs" > "$archive"
rm -f /tmp/gpu-pack-list.$$
echo "gpu-pack: $archive ($(du -h "$archive" | cut -f1)) from $(cat build-gpu/PACKED_COMMIT | tr '\n' ' ')"
