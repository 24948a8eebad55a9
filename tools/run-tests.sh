#!/usr/bin/env bash
# The whole test suite in one command (this is what CI runs):
#  1. install what is missing;
#  2. build with warnings as errors and run every test (unit + multi-process,
#     with COLL_CHECK=1 so argument mismatches are checked everywhere);
#  3. build again with ASan+UBSan (what its tests run, no more), the CUDA
#     code for the host on the emulated runtime (COLL_CUDA_EMULATION,
#     kernels/cuda/emulation), and run the unit tests (their largest grids
#     thinned, tests/common/test_scale.h), the quick multi-process tests
#     and the GPU collective test on emulated devices (label emu);
#  4. build the API, transport and device tests with TSan at -O1 (CUDA
#     emulated) and run those where threads share a communicator or a
#     process (ranks as threads, collCommAbort from another thread, the
#     transports' progress, the program kernel's blocks as threads meeting
#     at its flag barriers, the local path's reduction and copy kernels'
#     blocks (their shared pointers), the emulated runtime's streams, and
#     the GPU collective test with the program kernel, and on the
#     host-staged path with its proxy thread, also with every stream on one
#     work queue, on emulated devices, and the NCCL program of tests/nccl
#     with ranks as threads, one thread in groups, and an abort from
#     another thread).
# Set SKIP_ASAN=1 or SKIP_TSAN=1 to skip step 3 or 4 locally.
# The sanitizer builds are unity builds (CMAKE_UNITY_BUILD: a target's files
# compiled together in batches, each header parsed once per batch; about a
# fifth less build time); the first build compiles every file alone, so a
# file that misses an include still fails there.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
jobs=$(nproc)
t0=$(date +%s)
stage() { echo "== $* ($(( $(date +%s) - t0 )) s so far)"; }

# run_tests BUILD_DIR LABELS EXCLUDED [ctest arguments...]: the entries with
# label one_core (one core at a time, no timing bound) side by
# side, one per core; then every other entry alone, as multi-process and
# timing-bound tests need.  LABELS / EXCLUDED: label regexes ("" for all /
# none).  Both passes run before a failure is returned.
run_tests() {
  local dir=$1 labels=$2 excluded=$3 rc=0
  shift 3
  local inc=() exc=(-LE one_core) one=(-L one_core)
  [ -n "$labels" ] && inc=(-L "$labels")
  if [ -n "$excluded" ]; then
    exc=(-LE "one_core|$excluded")
    one+=(-LE "$excluded")
  fi
  ctest --test-dir "$dir" --output-on-failure --timeout 900 -j"$jobs" "${one[@]}" "${inc[@]}" "$@" || rc=1
  ctest --test-dir "$dir" --output-on-failure --timeout 900 -j1 "${exc[@]}" "${inc[@]}" "$@" || rc=1
  return $rc
}

# build_for_tests BUILD_DIR [ctest selection...]: builds what the selected
# tests run and no more (tools/test-targets.py reads their definitions):
# the sanitizer builds skip the benchmarks, the trainer and the tools no
# test of theirs runs.
build_for_tests() {
  local dir=$1 targets
  shift
  targets=$(python3 tools/test-targets.py "$dir" "$@") || return 1
  # shellcheck disable=SC2086  # one build output per word
  ninja -C "$dir" -j"$jobs" $targets
}

# The first build compiles the CUDA code with nvcc (-Werror); the sanitizer
# builds compile it for the host instead (COLL_CUDA_EMULATION: no nvcc, and
# the device path runs there).
#
# Compile time is most of this script's time on 2 cores, so the CI builds
# keep what the tests need and no more:
#  * line tables only (-g1): file:line in every backtrace and sanitizer
#    report; -O2 -g (variable tracking) took 1.3-2x as long per file, and
#    -g in the ASan build 1.15-1.45x;
#  * the device code once, as PTX for the oldest architecture we support
#    (compute_80): every .cu file through nvcc's front end with -Werror at
#    the lowest __CUDA_ARCH__, at a fifth of the default's cost (SASS for
#    sm_80 and sm_90 plus PTX: two front-end passes and two ptxas runs per
#    file).  Nothing runs it here (no GPU); tools/gpu-check.sh builds the
#    default architectures and runs them;
#  * and unoptimized (-Xcicc -O0: NVVM's optimizer off).  The errors and
#    warnings -Werror turns on come from nvcc's front end and, on the host
#    side, the host compiler, which run as before; the optimizer was 55%
#    of the CUDA files' compile time (277 cpu-s against 127;
#    program_kernel.cu 52 s against 7).  Host code in .cu files keeps -O2.
line_tables=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
# The ASan build (Debug) with line tables too: its unity files compiled in
# 13.2 s instead of 15.1-16.5 (the API test's, -O0) and 33 s instead of 48
# (the schedule test's, which builds with -O1).
debug_line_tables=(-DCMAKE_C_FLAGS_DEBUG="-g1" -DCMAKE_CXX_FLAGS_DEBUG="-g1")
# The TSan build at -O1 (TSan's documentation asks for -O1 or more): its
# largest files compiled in 0.55-0.7x the time of -O2 (program_kernel.cu
# 32 s against 56), the build took 154 s against 191-234, and its tests
# 147 s, inside -O2's 124-170.
tsan_line_tables=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")

stage "build (RelWithDebInfo with line tables, -Werror; CUDA as unoptimized compute_80 PTX)"
cmake -S . -B build-ci -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLL_WERROR=ON "${line_tables[@]}" \
  -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG -Xcicc -O0" -DCOLL_CUDA_ARCHITECTURES=80-virtual
cmake --build build-ci -j"$jobs"
stage "tests"
COLL_CHECK=1 run_tests build-ci "" ""

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  # libFuzzer targets for every parser of network bytes (tests/fuzz/README.md).
  stage "fuzz (clang + libFuzzer + ASan/UBSan, 100000 inputs per target; SKIP_FUZZ=1 skips)"
  tools/run-fuzz.sh 100000
fi

if [ "${SKIP_ASAN:-0}" != 1 ]; then
  stage "build (ASan+UBSan, CUDA emulated; what its tests run)"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug "${debug_line_tables[@]}" -DCOLL_WERROR=ON -DCOLL_SANITIZE=address -DCOLL_BUILD_PERF=ON \
    -DCOLL_CUDA_EMULATION=ON -DCMAKE_UNITY_BUILD=ON
  build_for_tests build-asan -L "unit|quick|emu" -LE large
  stage "tests under ASan+UBSan (unit + quick multi-process + emulated devices)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 COLL_CHECK=1 \
    run_tests build-asan "unit|quick|emu" large
fi
if [ "${SKIP_TSAN:-0}" != 1 ]; then
  stage "build (TSan -O1: API, transport, device and NCCL-program tests; CUDA emulated)"
  # (no perf tools and no trainer: none of the tests below needs them)
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${tsan_line_tables[@]}" -DCOLL_WERROR=ON -DCOLL_SANITIZE=thread \
    -DCOLL_TESTS_ONLY="api;transport;record;device_emu;gpu;nccl" -DCOLL_CUDA_EMULATION=ON -DCOLL_BUILD_PERF=OFF -DCOLL_BUILD_TRAINER=OFF \
    -DCMAKE_UNITY_BUILD=ON
  # The entries below, and only what they run.
  tsan_tests='coll_api_test|coll_core_test|coll_transport_test|coll_record_test|abort_thread|small_allreduce|coll_device_emu_test|coll_local_reduce_emu_test|coll_cuda_runtime_emu_test|coll_cuda_graph_emu_test|emu.device.coll.program.n2$|emu.device.coll.staged.n2.pieces_64k$|emu.device.coll.one_work_queue.staged.n2$|emu.device.local.one_work_queue.n3$|nccl.program.threads.n4$|nccl.program.group.n3$|nccl.program.abort.n2$'
  build_for_tests build-tsan -R "$tsan_tests"
  stage "tests under TSan (threads)"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 COLL_CHECK=1 run_tests build-tsan "" "" -R "$tsan_tests"
fi
stage "all tests passed"
