#!/usr/bin/env bash
# gpu-check.sh [--build-only] [--only tests|perf] [--path auto|cmake|nvcc|prebuilt]
#              [--unpack ARCHIVE] [--large REGEX] [--tests REGEX] [--perf PARTS] OUT_DIR
#
# One command for a machine with an NVIDIA GPU: build the CUDA reduction
# kernels' test and benchmark, run them, and print a summary table LAST.
# Needs no network and installs nothing (never apt-get).
#
# Steps (each under a timeout; the whole run fits in GPU_CHECK_BUDGET seconds,
# default 560, so it fits one 10-minute call):
#   1. nvidia-smi (printed, and saved to OUT_DIR/nvidia-smi.txt); the RDMA
#      devices and ports (tools/ib-facts.sh: colltopo's RDMA section where
#      build-gpu/ has one from an earlier run, else sysfs; ibv_devinfo where
#      installed), or "no RDMA devices", into the summary; nothing is run
#      over them here (tools/ib-check.sh does);
#   2. toolchain: nvcc (PATH, $CUDACXX, $CUDA_HOME, /usr/local/cuda*), a host
#      C++ compiler, and for the CMake path cmake >= 3.24 + ninja or make;
#   3. build, by one of three paths (the summary says which):
#      cmake  - the project's own build in build-gpu/ (Release, the targets'
#               explicit archs 80-real;90-real;90-virtual), only the targets
#               needed: coll_device_reduce_test, coll_device_reduce_bench and,
#               when Catch2 is there, the host kernels' coll_kernels_test.
#               Needs what the top-level CMakeLists.txt needs (pkg-config,
#               spdlog); when that configure fails, the nvcc path is used.
#      nvcc   - no CMake project: direct nvcc/g++ command lines into
#               build-gpu/direct/ (kernels/cuda sources + the host kernel
#               sources the test compares against; static CUDA runtime).
#               Needs only the CUDA toolkit and g++.
#      prebuilt - no nvcc here (or --path prebuilt), but build-gpu/direct/
#               holds the two binaries built elsewhere: run
#               `tools/gpu-check.sh --build-only --path nvcc OUT` on any machine
#               with nvcc, then copy build-gpu/direct/coll_device_reduce_test
#               and .../coll_device_reduce_bench over (static CUDA runtime;
#               the driver must be new enough for that toolkit).
#   4. the GPU tests (ctest -L gpu on the cmake path: bit-exact device vs host
#      results, guards, asynchrony; compute-sanitizer memcheck + racecheck on
#      a small run; the device collectives; tests/nccl's NCCL program on
#      libnccl.so.2 with device buffers) -> OUT_DIR/ctest.log; then
#      PyTorch's NCCL backend on libnccl.so.2 (tests/nccl/torch_check.py,
#      where python3 has torch) -> OUT_DIR/torch.log;
#   5. the host kernels' unit test (cmake path with Catch2 only);
#   6. the benchmark (float32/bfloat16/float16 sum at 64 and 256 MiB, kernel
#      GB/s vs cudaMemcpy D2D GB/s) -> OUT_DIR/bench.txt;
#   7. the summary: each step ok / FAIL / skip with its key numbers.
#
# Exit status: 0 when every step passed or was skipped (no GPU: the build
# still runs, the GPU steps say "skipped: no GPU" and the exit is 0); 1 when
# any step failed; 2 on bad arguments.
# --unpack ARCHIVE: no build; unpack a build-gpu/ tree that tools/gpu-pack.sh
#   built and packed on a machine with nvcc, then run the cmake path's steps
#   on it (saves the build's minutes on a lent GPU machine; the tree's
#   absolute paths are linked to this checkout when they do not exist here).
# --large REGEX: after the tests above, also the `large` ones whose names
#   match REGEX (ctest -L large -R REGEX), e.g. 'program\.n8|ll\.n4|local\.n8';
#   the first ctest run then leaves them 150 s of the budget.
# --tests REGEX: only the GPU tests whose names match (ctest -R), e.g. when
#   a short lease re-checks what changed.
# --perf PARTS: step 7's parts, comma-separated, of allreduce (N = 1, 2, 4,
#   8), staged, local, ll, program, collectives, sendrecv (default: all).
# --build-only: stop after the build (e.g. to build binaries to carry).
# --only tests: build, then steps 4-5 only; --only perf: build, then steps
#   6-7 only.  Two calls on one warm machine (the second build is
#   incremental) when the whole run does not fit one call's budget.
# Environment: JOBS (build parallelism, default nproc), GPU_CHECK_BUDGET,
# GPU_CHECK_BUILD_MAX (the cmake build step's limit, default 420 s).
set -uo pipefail

usage() { echo "usage: $0 [--build-only] [--only tests|perf] [--path auto|cmake|nvcc|prebuilt] [--unpack ARCHIVE] [--large REGEX] [--tests REGEX] [--perf PARTS] OUT_DIR" >&2; exit 2; }
build_only=0
only=all
want_path=auto
unpack=""
large=""
tests_re=""
perf_parts=all
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-only) build_only=1 ;;
    --path) [ $# -ge 2 ] || usage; want_path=$2; shift ;;
    --only) [ $# -ge 2 ] || usage; only=$2; shift ;;
    --only=*) only=${1#--only=} ;;
    --unpack) [ $# -ge 2 ] || usage; unpack=$2; shift ;;
    --unpack=*) unpack=${1#--unpack=} ;;
    --large) [ $# -ge 2 ] || usage; large=$2; shift ;;
    --large=*) large=${1#--large=} ;;
    --tests) [ $# -ge 2 ] || usage; tests_re=$2; shift ;;
    --tests=*) tests_re=${1#--tests=} ;;
    --perf) [ $# -ge 2 ] || usage; perf_parts=$2; shift ;;
    --perf=*) perf_parts=${1#--perf=} ;;
    --path=*) want_path=${1#--path=} ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) [ -z "$out" ] || usage; out=$1 ;;
  esac
  shift
done
[ -n "$out" ] || usage
case "$want_path" in auto|cmake|nvcc|prebuilt) ;; *) usage ;; esac
case "$only" in all|tests|perf) ;; *) usage ;; esac
[ -z "$unpack" ] || unpack=$(cd "$(dirname "$unpack")" 2>/dev/null && pwd)/$(basename "$unpack")
run_tests=1 run_perf=1
[ "$only" = perf ] && run_tests=0
[ "$only" = tests ] && run_perf=0

repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
cd "$repo" || exit 2
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
budget=${GPU_CHECK_BUDGET:-560}
t_start=$(date +%s)
deadline=$((t_start + budget))
exec > >(tee "$out/gpu-check.log") 2>&1
tee_pid=$!
# Let tee print the last lines before the script's caller sees it exit.
trap 'exec >&- 2>&-; wait "$tee_pid" 2>/dev/null' EXIT

# ------------------------------------------------------------- helpers ----
# record, now, step_timeout, run_step, section.
. "$(dirname "${BASH_SOURCE[0]}")/check-steps.sh"
# perf_part NAME: step 7's part NAME is selected (--perf PARTS).
perf_part() { [ "$perf_parts" = all ] || [[ ",$perf_parts," == *",$1,"* ]]; }

# ------------------------------------------------------- 1. nvidia-smi ----
section "1. nvidia-smi"
gpu=unknown     # yes / no / unknown (no nvidia-smi)
gpu_name=""
driver=""
if command -v nvidia-smi >/dev/null 2>&1; then
  timeout 60 nvidia-smi 2>&1 | tee "$out/nvidia-smi.txt"
  if timeout 30 nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    gpu=yes
    gpu_name=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    driver=$(timeout 30 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
    record "nvidia-smi" ok "$gpu_name, driver $driver"
  else
    gpu=no
    record "nvidia-smi" skip "nvidia-smi lists no GPU"
  fi
else
  echo "nvidia-smi not found"
  if ls /dev/nvidia[0-9]* >/dev/null 2>&1; then gpu=unknown; else gpu=no; fi
  record "nvidia-smi" skip "not installed (GPU: $gpu)"
fi

# ------------------------------------------------------- 1b. RDMA facts ----
# Seconds, not minutes: listing only (each source under a short timeout).
section "1b. RDMA facts"
# shellcheck source=tools/ib-facts.sh
. "$repo/tools/ib-facts.sh"
if ib_facts "$out" "$([ -x build-gpu/tools/colltopo ] && echo build-gpu/tools/colltopo)"; then
  record "rdma" ok "$IB_FACTS"
else
  # An earlier run's colltopo that does not run here: the kernel's view.
  ib_facts "$out"
  record "rdma" ok "build-gpu/tools/colltopo failed; $IB_FACTS"
fi

# -------------------------------------------------------- 2. toolchain ----
section "2. toolchain"
find_nvcc() {
  local c
  for c in "${CUDACXX:-}" "$(command -v nvcc 2>/dev/null)" "${CUDA_HOME:+$CUDA_HOME/bin/nvcc}" \
           "${CUDA_PATH:+$CUDA_PATH/bin/nvcc}" /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc /opt/cuda/bin/nvcc; do
    [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
  done
  return 1
}
nvcc=$(find_nvcc || true)
cxx=""
for c in "${CXX:-}" g++ c++ clang++; do
  [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && { cxx=$(command -v "$c"); break; }
done
cmake_ok=0
cmake_ver=""
if command -v cmake >/dev/null 2>&1; then
  cmake_ver=$(cmake --version | head -1 | awk '{print $3}')
  # >= 3.24 (the top-level CMakeLists.txt's minimum)
  if printf '%s\n3.24\n' "$cmake_ver" | sort -V | head -1 | grep -qx '3.24'; then cmake_ok=1; fi
fi
generator=""
if command -v ninja >/dev/null 2>&1; then generator=Ninja
elif command -v make >/dev/null 2>&1; then generator="Unix Makefiles"; fi
nvcc_ver=""
[ -n "$nvcc" ] && nvcc_ver=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -1)
echo "nvcc:      ${nvcc:-MISSING} ${nvcc_ver:+(CUDA $nvcc_ver)}"
echo "c++:       ${cxx:-MISSING}"
echo "cmake:     ${cmake_ver:-MISSING}$([ $cmake_ok = 1 ] || [ -z "$cmake_ver" ] || echo ' (< 3.24: not usable)')"
echo "generator: ${generator:-none (no ninja, no make)}"
if command -v pkg-config >/dev/null 2>&1; then echo "pkg-config: yes"; else echo "pkg-config: MISSING (the cmake path needs it)"; fi
cxx_name=${cxx:+$(basename "$cxx")}
nvcc_text="nvcc ${nvcc_ver:-MISSING}"
[ -n "$nvcc" ] && [ -z "$nvcc_ver" ] && nvcc_text="nvcc $nvcc (version unknown)"
record "toolchain" ok "$nvcc_text, ${cxx_name:-c++ MISSING}, cmake ${cmake_ver:-MISSING}, ${generator:-no generator}"

# ------------------------------------------------------------ 3. build ----
section "3. build"
path=""
test_bin="" bench_bin="" host_test_bin=""
direct=build-gpu/direct
build_t0=$(now)

build_cmake() {
  local log=$out/build.log gen_args=()
  [ -f build-gpu/CMakeCache.txt ] || gen_args=(-G "$generator")
  if ! run_step "$log" 180 cmake -S . -B build-gpu "${gen_args[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_COMPILER="$nvcc" ${cxx:+-DCMAKE_CXX_COMPILER="$cxx"}; then
    echo "cmake configure failed (see above)"
    return 1
  fi
  if ! grep -q 'coll_device_reduce_test' build-gpu/CMakeFiles/TargetDirectories.txt 2>/dev/null; then
    echo "configured, but without the CUDA targets (COLL_HAVE_CUDA off?)"
    return 1
  fi
  local targets=(coll_device_reduce_test coll_device_reduce_bench)
  grep -q '/coll_kernels_test.dir' build-gpu/CMakeFiles/TargetDirectories.txt 2>/dev/null && targets+=(coll_kernels_test)
  # The device collectives (libcoll on device buffers): test, perf tool, launcher.
  # libnccl.so.2 and the NCCL program (tests/nccl), on device buffers here.
  # colltopo: the topology module's view of this machine (its GPUs' NUMA nodes).
  for t in coll_device_coll_test coll_device_local_test device_perf collrun coll_nccl nccl_program \
    nccl_program_nvidia_linked colltopo all_reduce_perf; do
    grep -q "/$t.dir" build-gpu/CMakeFiles/TargetDirectories.txt 2>/dev/null && targets+=("$t")
  done
  run_step "$log" "${GPU_CHECK_BUILD_MAX:-420}" cmake --build build-gpu -j "$jobs" --target "${targets[@]}" || return 2
  test_bin=build-gpu/tests/gpu/coll_device_reduce_test
  bench_bin=build-gpu/kernels/cuda/coll_device_reduce_bench
  [ -x build-gpu/tests/kernels/coll_kernels_test ] && host_test_bin=build-gpu/tests/kernels/coll_kernels_test
  return 0
}

# unpack_tree ARCHIVE: build-gpu/ from tools/gpu-pack.sh, instead of a build.
unpack_tree() {
  local log=$out/build.log from
  [ -f "$1" ] || { echo "--unpack: $1 not found" | tee -a "$log"; return 1; }
  rm -rf build-gpu
  echo "+ unpacking $1" | tee -a "$log"
  if command -v xz >/dev/null 2>&1; then
    tar -xJf "$1" || return 1
  else  # no xz binary: Python's lzma
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall()' "$1" || return 1
  fi
  [ -f build-gpu/PACKED_FROM ] || { echo "--unpack: no build-gpu/PACKED_FROM in $1" | tee -a "$log"; return 1; }
  from=$(cat build-gpu/PACKED_FROM)
  echo "packed from $from at $(tr '\n' ' ' < build-gpu/PACKED_COMMIT 2>/dev/null)" | tee -a "$log"
  # ctest's commands and libcoll's RUNPATH name the packing checkout's path.
  if [ "$from" != "$repo" ]; then
    if [ ! -e "$from" ]; then
      mkdir -p "$(dirname "$from")" && ln -s "$repo" "$from" || { echo "--unpack: cannot link $from to $repo" | tee -a "$log"; return 1; }
      echo "linked $from -> $repo" | tee -a "$log"
    elif [ "$(cd "$from" && pwd -P)" != "$(pwd -P)" ]; then
      echo "--unpack: packed at $from, which exists here and is another folder" | tee -a "$log"
      return 1
    fi
  fi
  export LD_LIBRARY_PATH="$repo/build-gpu/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  test_bin=build-gpu/tests/gpu/coll_device_reduce_test
  bench_bin=build-gpu/kernels/cuda/coll_device_reduce_bench
  [ -x build-gpu/tests/kernels/coll_kernels_test ] && host_test_bin=build-gpu/tests/kernels/coll_kernels_test
  [ -x "$test_bin" ] && [ -x "$bench_bin" ]
}

build_nvcc() {
  local log=$out/build.log
  [ -n "$nvcc" ] && [ -n "$cxx" ] || { echo "nvcc path needs nvcc and a C++ compiler" | tee -a "$log"; return 2; }
  mkdir -p "$direct/obj" "$direct/cmds"
  rm -f "$direct"/cmds/*.sh "$direct"/obj/*.o "$direct/coll_device_reduce_test" "$direct/coll_device_reduce_bench"
  local host="-std=c++20 -O2 -g0 -ffp-contract=off -fPIC -Ikernels/include -Ikernels/src"
  local isa=0 x86=0
  case "$(uname -m)" in x86_64|amd64|AMD64) x86=1; isa=1 ;; esac
  host="$host -DCOLL_KERNELS_HAVE_X86_ISAS=$isa"
  local nv="-std=c++20 -O2 -fmad=false -Xcompiler=-ffp-contract=off -ccbin $cxx"
  nv="$nv --generate-code=arch=compute_80,code=[sm_80] --generate-code=arch=compute_90,code=[sm_90,compute_90]"
  nv="$nv -Ikernels/include -Ikernels/cuda/include -Ikernels/cuda/src"
  local cudainc
  cudainc="$(dirname "$(dirname "$nvcc")")/include"
  local n=0 f o
  add() { n=$((n + 1)); printf 'set -e\necho "  %s"\n%s\n' "$2" "$1" > "$direct/cmds/$(printf %03d $n).sh"; }
  for f in conv dispatch reduce_scalar; do
    add "$cxx $host -c kernels/src/$f.cc -o $direct/obj/$f.o" "c++ kernels/src/$f.cc"
  done
  if [ $x86 = 1 ]; then
    add "$cxx $host -mavx2 -mf16c -c kernels/src/reduce_avx2.cc -o $direct/obj/reduce_avx2.o" "c++ kernels/src/reduce_avx2.cc"
    add "$cxx $host -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mf16c -c kernels/src/reduce_avx512.cc -o $direct/obj/reduce_avx512.o" "c++ kernels/src/reduce_avx512.cc"
  fi
  add "$cxx $host -Ikernels/cuda/include -Ikernels/cuda/src -I$cudainc -c kernels/cuda/src/device_reduce.cc -o $direct/obj/device_reduce.o" "c++ kernels/cuda/src/device_reduce.cc"
  add "$cxx $host -Ikernels/cuda/include -I$cudainc -c kernels/cuda/bench/device_reduce_bench.cc -o $direct/obj/device_reduce_bench.o" "c++ kernels/cuda/bench/device_reduce_bench.cc"
  for f in kernels/cuda/src/*.cu; do
    o=$(basename "$f" .cu)
    add "$nvcc $nv -c $f -o $direct/obj/$o.cu.o" "nvcc $f"
  done
  add "$nvcc $nv -c tests/gpu/device_reduce_test.cu -o $direct/obj/device_reduce_test.cu.o" "nvcc tests/gpu/device_reduce_test.cu"
  echo "+ $n compile commands, $jobs at a time (build-gpu/direct/cmds/*.sh)" | tee -a "$log"
  local t
  t=$(step_timeout 420)
  [ "$t" -gt 0 ] || return 2
  if ! (cd "$repo" && ls "$direct"/cmds/*.sh | timeout -k 10 "$t" xargs -P "$jobs" -n 1 bash) 2>&1 | tee -a "$log"; then
    echo "compile failed" | tee -a "$log"
    return 2
  fi
  local lib=() x
  for x in "$direct"/obj/*.o; do
    case "$x" in *device_reduce_test.cu.o|*device_reduce_bench.o) ;; *) lib+=("$x") ;; esac
  done
  run_step "$log" 120 "$nvcc" -ccbin "$cxx" -o "$direct/coll_device_reduce_test" "$direct/obj/device_reduce_test.cu.o" "${lib[@]}" || return 2
  run_step "$log" 120 "$nvcc" -ccbin "$cxx" -o "$direct/coll_device_reduce_bench" "$direct/obj/device_reduce_bench.o" "${lib[@]}" || return 2
  test_bin=$direct/coll_device_reduce_test
  bench_bin=$direct/coll_device_reduce_bench
  return 0
}

build_rc=0
if [ -n "$unpack" ]; then
  if unpack_tree "$unpack"; then path=unpacked; else path=none; build_rc=1; fi
elif [ "$want_path" = prebuilt ]; then
  if [ -x "$direct/coll_device_reduce_test" ] && [ -x "$direct/coll_device_reduce_bench" ]; then
    echo "--path prebuilt: using the binaries in $direct/ (no build)"
    path=prebuilt
    test_bin=$direct/coll_device_reduce_test
    bench_bin=$direct/coll_device_reduce_bench
  else
    echo "--path prebuilt: $direct/coll_device_reduce_test or coll_device_reduce_bench is missing"
    path=none
    build_rc=1
  fi
elif [ "$want_path" != nvcc ] && [ -n "$nvcc" ] && [ -n "$cxx" ] && [ $cmake_ok = 1 ] && [ -n "$generator" ]; then
  echo "trying the cmake path (the project's own build in build-gpu/)"
  if build_cmake; then
    path=cmake
  else
    rc=$?
    if [ $rc = 2 ]; then
      build_rc=1
      path=cmake
    elif [ "$want_path" = cmake ]; then
      build_rc=1
      path=cmake
    else
      echo "the top-level project cannot configure here: falling back to direct nvcc command lines"
    fi
  fi
elif [ "$want_path" = cmake ]; then
  echo "cmake path requested, but nvcc/c++/cmake>=3.24/ninja|make is missing"
  build_rc=1
  path=cmake
fi
if [ -z "$path" ]; then
  if [ -n "$nvcc" ] && [ -n "$cxx" ]; then
    echo "using the nvcc path (direct command lines into $direct/)"
    path=nvcc
    build_nvcc || build_rc=1
  elif [ -x "$direct/coll_device_reduce_test" ] && [ -x "$direct/coll_device_reduce_bench" ]; then
    echo "no nvcc/c++ here: using the prebuilt binaries in $direct/"
    path=prebuilt
    test_bin=$direct/coll_device_reduce_test
    bench_bin=$direct/coll_device_reduce_bench
  else
    echo "cannot build: nvcc ${nvcc:-MISSING}, c++ ${cxx:-MISSING}, and no prebuilt binaries in $direct/"
    path=none
    build_rc=1
  fi
fi
build_secs=$(( $(now) - build_t0 ))
case "$path" in
  cmake) path_text="cmake (top-level project, build-gpu/)" ;;
  nvcc) path_text="nvcc (direct command lines, build-gpu/direct/)" ;;
  prebuilt) path_text="prebuilt binaries (build-gpu/direct/)" ;;
  unpacked) path_text="cmake tree unpacked from $(basename "$unpack") (tools/gpu-pack.sh), no build" ;;
  *) path_text="none" ;;
esac
if [ $build_rc = 0 ]; then
  record "build" ok "path: $path_text, ${build_secs} s"
else
  record "build" FAIL "path: $path_text, see $out/build.log"
fi

# A CMake tree (built here, or unpacked): ctest, MPS and the collectives' perf.
tree=0
case "$path" in cmake|unpacked) tree=1 ;; esac

# ---------------------------------------------------------- 4-7. run ----
# The binaries decide whether there is a device (exit 77 = none), so a
# missing or broken nvidia-smi never hides a GPU.
no_gpu_note="skipped: no GPU"
if [ $build_only = 1 ]; then
  echo "--build-only: not running anything"
elif [ $build_rc != 0 ]; then
  record "gpu tests" FAIL "not run (build failed)"
  record "bench" FAIL "not run (build failed)"
else
  if [ $tree = 1 ]; then
    # Several ranks on one GPU run their kernels concurrently only under MPS
    # (without it the contexts take turns: correct, slower).  Started when
    # the daemon is there; GPU_CHECK_MPS=0 keeps it off.
    mps=off
    if [ "${GPU_CHECK_MPS:-1}" != 0 ] && command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
      if nvidia-cuda-mps-control -d 2>/dev/null; then mps=on; trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; exec >&- 2>&-; wait "$tee_pid" 2>/dev/null' EXIT; fi
    fi
    record "MPS" "$([ $mps = on ] && echo ok || echo skip)" "MPS daemon $mps for the multi-rank steps"
    # The topology module on a GPU machine: hwloc's (or sysfs's) GPUs and
    # network ports with their NUMA nodes (libcoll/src/topo).
    if [ -x build-gpu/tools/colltopo ]; then
      if timeout 60 build-gpu/tools/colltopo > "$out/topology.txt" 2>&1; then
        record "topology" ok "$(head -1 "$out/topology.txt")"
      else
        record "topology" FAIL "$(tail -1 "$out/topology.txt")"
      fi
      cat "$out/topology.txt"
    fi
  fi

  # ---- 4. GPU tests
  ctest_log=$out/ctest.log
  : > "$ctest_log"
  if [ $run_tests = 0 ]; then
    record "gpu tests" skip "--only perf"
  elif [ $tree = 1 ]; then
    section "4. GPU tests"
    # Alone (--only tests), the tests may take what the perf steps would have.
    ctest_max=330
    [ $run_perf = 0 ] && ctest_max=480
    # Kept for --large's tests and the PyTorch step after these.
    reserve=90
    [ -n "$large" ] && reserve=240
    t=$(step_timeout "$ctest_max" "$reserve")
    [ "$t" -lt 30 ] && t=30
    # COLL_TIMEOUT 60 s, not 300: a test that hangs fails in a minute,
    # naming the rank it waits for, and leaves the budget to the others (an
    # H200 run lost memcheck and racecheck to two 300-s hangs).  No call of
    # the tests comes near it, under the sanitizers too.
    run_step "$ctest_log" $((t + 10)) env COLL_TIMEOUT="${COLL_TIMEOUT:-60s}" \
      ctest --test-dir build-gpu -L gpu -LE large ${tests_re:+-R "$tests_re"} -V -j2 --timeout "$t"
    crc=$?
    if [ -n "$large" ]; then
      t=$(step_timeout 480 90)
      [ "$t" -lt 30 ] && t=30
      run_step "$ctest_log" $((t + 10)) env COLL_TIMEOUT="${COLL_TIMEOUT:-60s}" \
        ctest --test-dir build-gpu -L large -R "$large" -V -j2 --timeout "$t"
      lrc=$?
      [ $crc = 0 ] && crc=$lrc
    fi
    # A test killed while its kernels ran can leave the MPS server unusable
    # ("CUDA-capable device(s) is/are busy or unavailable" for every later
    # step, seen on an H200): a fresh daemon for the steps after.
    if [ $crc != 0 ] && [ "${mps:-off}" = on ]; then
      echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
      sleep 2
      nvidia-cuda-mps-control -d 2>/dev/null || { mps=off; echo "MPS daemon not restarted after the failed tests"; }
    fi
    dev_names=$(grep -oE 'Test +#[0-9]+: (gpu\.device|nccl\.program)\.[^ ]+' "$ctest_log" | awk '{print $NF}' | sort -u)
    kernel_names="gpu.kernels.device_reduce gpu.kernels.memcheck gpu.kernels.racecheck"
    # --tests: only the kernel tests it selected are expected in the log.
    [ -n "$tests_re" ] && kernel_names=$(printf '%s\n' $kernel_names | grep -E "$tests_re" | tr '\n' ' ')
    for name in $kernel_names $dev_names; do
      line=$(grep -E "Test +#[0-9]+: $name " "$ctest_log" | tail -1)
      num=$(echo "$line" | sed -nE 's/.*Test +#([0-9]+):.*/\1/p')
      if echo "$line" | grep -q 'Passed'; then res=ok
      elif echo "$line" | grep -q 'Skipped'; then res=skip
      else res=FAIL; fi
      secs=$(echo "$line" | grep -oE '[0-9.]+ sec' | tail -1)
      detail=""
      if [ -n "$num" ]; then
        case $name in
          gpu.kernels.device_reduce)
            detail=$(grep -E "^$num: (PASS|FAILED|SKIP)" "$ctest_log" | tail -1 | sed "s/^$num: //") ;;
          gpu.device.*)
            detail=$(grep -E "^$num: (\[[0-9]+\] )?(rank 0: .* cases|SKIP|.*FAIL)" "$ctest_log" | tail -1 | sed -E "s/^$num: //") ;;
          nccl.program.*)
            detail=$(grep -E "^$num: nccl_program " "$ctest_log" | tail -1 | sed -E "s/^$num: //") ;;
          *)
            detail=$(grep -E "^$num: (SKIP|FAIL|=+ ERROR SUMMARY)" "$ctest_log" | tail -1 | sed -E "s/^$num: (=+ )?//") ;;
        esac
      fi
      [ -z "$line" ] && { res=FAIL; detail="did not run (ctest rc $crc)"; }
      record "$name" "$res" "${detail:-}${secs:+ ($secs)}"
    done
  else
    section "4. GPU tests"
    run_step "$ctest_log" 330 "$test_bin"
    trc=$?
    case $trc in
      0) record "gpu.kernels.device_reduce" ok "$(grep -E '^PASS' "$ctest_log" | tail -1)" ;;
      77) record "gpu.kernels.device_reduce" skip "$(grep -E '^SKIP' "$ctest_log" | tail -1)" ;;
      124|137) record "gpu.kernels.device_reduce" FAIL "timed out" ;;
      *) record "gpu.kernels.device_reduce" FAIL "$(grep -E '^FAILED' "$ctest_log" | tail -1) (rc $trc)" ;;
    esac
    for tool in memcheck racecheck; do
      run_step "$ctest_log" 150 tests/gpu/run_sanitizer.sh "$tool" "$(dirname "${nvcc:-/usr/local/cuda/bin/nvcc}")" \
        "$test_bin" --small --no-async
      src=$?
      case $src in
        0) record "gpu.kernels.$tool" ok "$(grep -E '^=+ ERROR SUMMARY' "$ctest_log" | tail -1 | sed -E 's/^=+ //') on --small" ;;
        77) record "gpu.kernels.$tool" skip "$(grep -E '^SKIP' "$ctest_log" | tail -1)" ;;
        *) record "gpu.kernels.$tool" FAIL "rc $src (see ctest.log)" ;;
      esac
    done
  fi
  # A GPU nvidia-smi sees but the CUDA runtime does not is a failure, not a skip.
  if [ "$gpu" = yes ] && grep -q 'SKIP: no CUDA device' "$ctest_log"; then
    record "CUDA runtime" FAIL "nvidia-smi lists a GPU but the runtime sees none: $(grep -m1 -o 'SKIP: no CUDA device.*' "$ctest_log") (driver $driver vs CUDA ${nvcc_ver:-?})"
  fi

  # ---- 4b. PyTorch's NCCL backend on libnccl.so.2 (where python3 has torch)
  nccl_lib=build-gpu/nccl/libnccl.so.2
  if [ $run_tests = 1 ] && [ $tree = 1 ] && [ -e "$nccl_lib" ]; then
    section "4b. PyTorch on libnccl.so.2"
    run_step "$out/torch.log" 150 python3 tests/nccl/torch_check.py "$nccl_lib" --nranks 2 --timeout 120
    case $? in
      0) record "pytorch nccl" ok "$(grep -m1 -oE 'torch [0-9][^,]*, torch.cuda.nccl.version\(\) \([0-9, ]+\)' "$out/torch.log"); $(grep -m1 -oE 'ddp: .*' "$out/torch.log")" ;;
      77) record "pytorch nccl" skip "$(grep -m1 -E '^SKIP' "$out/torch.log")" ;;
      *) record "pytorch nccl" FAIL "$(grep -E 'FAIL' "$out/torch.log" | head -3 | tr '\n' ' ')" ;;
    esac
  fi

  # ---- 5. host kernels test (with the tests)
  if [ $run_tests = 1 ] && [ -n "$host_test_bin" ]; then
    section "5. host kernels test"
    if run_step "$out/host-kernels.log" 180 "$host_test_bin"; then
      record "host kernels test" ok "$(grep -E 'All tests passed' "$out/host-kernels.log" | tail -1)"
    else
      record "host kernels test" FAIL "see $out/host-kernels.log"
    fi
  elif [ $run_tests = 1 ]; then
    record "host kernels test" skip "needs the cmake path with Catch2"
  fi

  # ---- 6. bench
  if [ $run_perf = 0 ]; then
    record "bench" skip "--only tests"
  else
    section "6. bench"
    : > "$out/bench.txt"
    run_step "$out/bench.txt" 150 "$bench_bin" --sizes 64M,256M --reps 20 --dtypes float32,bfloat16,float16
    brc=$?
    if [ $brc = 0 ]; then
      key=$(awk '$3 == "64" && $4 == "MiB" { printf "%s%s %.0f vs copy %.0f GB/s (x%.2f)", sep, $1, $6, $8, $9; sep="; " }' "$out/bench.txt")
      record "bench" ok "64 MiB kernel vs copy: $key"
    elif [ $brc = 77 ]; then
      record "bench" skip "$(grep -E '^SKIP' "$out/bench.txt" | tail -1)"
    else
      record "bench" FAIL "rc $brc (see $out/bench.txt)"
    fi
  fi

  # ---- 7. device collectives perf (N ranks sharing the GPU)
  if [ $run_perf = 1 ] && [ $tree = 1 ] && [ -x build-gpu/perf/device_perf ] && [ -x build-gpu/tools/collrun ]; then
    section "7. device collectives perf"
    : > "$out/device-perf.txt"
    dp_detail="" dp_res=ok
    # N = 1 always: it tells whether there is a device at all (exit 77).
    sizes_n=1
    perf_part allreduce && sizes_n="1 2 4 8"
    for n in $sizes_n; do
      run_step "$out/device-perf.txt" 90 build-gpu/tools/collrun -n $n --timeout 85 -- build-gpu/perf/device_perf \
        -o allreduce -b 8 -e 256M -f 4 -n 20 -w 5
      prc=$?
      [ $prc = 77 ] && { dp_res=skip; break; }
      [ $prc != 0 ] && dp_res=FAIL
      # 8 B time and the 256 MiB row's %bound, from this run's table (the last one in the file).
      small=$(awk '{ sub(/^\[[0-9]+\] +/, ""); $0 = $0 } /^# device_perf/ {t=""; b=""}
                   $1 == "8" {t=$3} $1 == "268435456" {b=$8" of bound, busbw "$5} END {print t" us at 8 B, "b}' "$out/device-perf.txt")
      dp_detail="$dp_detail N=$n: $small;"
    done
    # No device (exit 77 above): the variants below would only say so again.
    if [ $dp_res != skip ]; then
      # First what no GPU has timed yet (the staged path's present design, the
      # local path), so a short budget cuts the re-measurements instead.
      if perf_part staged; then
        # The host-staged path (what ranks on other hosts take): pieces through
        # pinned slots and the proxy thread, over shm here (%bound means nothing
        # there).  Each rank bound to one core (collrun's default), where its
        # proxy shares the core with the application's thread spinning in its
        # synchronize calls; on its share of the cores (--bind share: 8 each
        # on a 16-core machine, so the proxy has a core of its own); and
        # unbound.  The design before the present one took 60 ms per 8 MiB
        # call on an H200, bound to one core.
        for bind in core share none; do
          run_step "$out/device-perf.txt" 90 env COLL_DEVICE_PATH=staged build-gpu/tools/collrun -n 2 --bind $bind \
            --timeout 85 -- build-gpu/perf/device_perf -o allreduce -b 8 -e 256M -f 16 -n 5 -w 2 || dp_res=FAIL
          small=$(awk '{ sub(/^\[[0-9]+\] +/, ""); $0 = $0 } /^# device_perf/ {t=""; m=""; b=""}
                       $1 == "8" {t=$3} $1 == "8388608" {m=$3} $1 == "268435456" {b="busbw "$5}
                       END {print t" us at 8 B, "m" us at 8 MiB, "b" at 256 MiB"}' "$out/device-perf.txt")
          dp_detail="$dp_detail staged (bind $bind) N=2: $small;"
        done
        # Where a large staged call's time goes: the proxy's trace splits it
        # into waits for the kernel's copies and the host calls on the
        # pieces, with the kernel in one block (COLL_STAGED_BLOCK_BYTES=1G)
        # and in its default blocks; beside it the host all-reduce alone on
        # one piece (4 MiB, shm), the host part's floor.
        for bb in 1G 256K; do
          : > "$out/staged-trace.tmp"
          run_step "$out/staged-trace.tmp" 60 env COLL_DEVICE_PATH=staged COLL_STAGED_BLOCK_BYTES=$bb COLL_DEBUG=TRACE \
            COLL_DEBUG_SUBSYS=COLL build-gpu/tools/collrun -n 2 --bind none --timeout 55 -- build-gpu/perf/device_perf \
            -o allreduce -b 64M -e 64M -n 5 -w 2 >/dev/null || dp_res=FAIL
          small=$(grep -E '^\[0\].*staged call of [0-9]+ piece' "$out/staged-trace.tmp" | sed -E \
                    's/.*staged call of ([0-9]+) piece\(s\): ([0-9]+) us \(waits for the kernel.s copies in ([0-9]+) us, host calls ([0-9]+) us\).*/\1 \2 \3 \4/' |
                  awk 'NF == 4 {n++; p=$1; t+=$2; w+=$3; h+=$4} END {if (n) printf "%d calls of %d pieces: %.0f us each, kernel copies waited %.0f us, host calls %.0f us", n, p, t/n, w/n, h/n}')
          grep -E 'device_perf|^\[0\] +67108864' "$out/staged-trace.tmp" >> "$out/device-perf.txt"
          dp_detail="$dp_detail staged 64 MiB, block per $bb (proxy trace, rank 0): ${small:-no trace lines};"
        done
        rm -f "$out/staged-trace.tmp"
        if [ -x build-gpu/perf/all_reduce_perf ]; then
          run_step "$out/device-perf.txt" 60 build-gpu/tools/collrun -n 2 --bind none --timeout 55 -- \
            build-gpu/perf/all_reduce_perf -b 4M -e 4M -n 20 -w 5 || dp_res=FAIL
          small=$(awk '{ sub(/^\[[0-9]+\] +/, ""); $0 = $0 } $1 == "4194304" {t=$6; i=$10} END {print t" us out of place, "i" us in place"}' \
                  "$out/device-perf.txt")
          dp_detail="$dp_detail host all-reduce 4 MiB N=2 (shm): $small;"
        fi
      fi
      if perf_part local; then
        # The local path: 4 ranks as threads of one process (collCommInitAll;
        # since 2026-11-27, not timed on a GPU before): events join the
        # ranks' streams, one hub stream runs one reduction kernel that reads
        # every rank's input and writes every rank's output (2NS bytes).
        run_step "$out/device-perf.txt" 90 env COLL_TIMEOUT=60s build-gpu/perf/device_perf -t 4 -o allreduce -b 8 -e 256M \
          -f 16 -n 10 -w 3 || dp_res=FAIL
        small=$(awk '/^# device_perf/ {t=""; b=""} $1 == "8" {t=$3} $1 == "268435456" {b=$3" us, "$8" of bound"}
                     END {print t" us at 8 B, "b" at 256 MiB"}' "$out/device-perf.txt")
        dp_detail="$dp_detail local (threads) N=4: $small;"
      fi
      if perf_part ll; then
        # Small sizes with the LL protocol everywhere (COLL_DEVICE_LL_BYTES, 2 KiB
        # by default) and with it off (the flag-based one-launch kernel): the
        # numbers the default was chosen from.
        for ll in 16384 0; do
          for n in 2 4; do
            run_step "$out/device-perf.txt" 60 env COLL_DEVICE_LL_BYTES=$ll build-gpu/tools/collrun -n $n --timeout 55 -- \
              build-gpu/perf/device_perf -o allreduce -b 8 -e 16K -f 4 -n 50 -w 10 || dp_res=FAIL
            small=$(awk '{ sub(/^\[[0-9]+\] +/, ""); $0 = $0 } $1 == "8" {t=$3} $1 == "8192" {k=$3} END {print t" us at 8 B, "k" us at 8 KiB"}' "$out/device-perf.txt")
            dp_detail="$dp_detail LL $([ $ll = 0 ] && echo off || echo "<= $ll B") N=$n: $small;"
          done
        done
      fi
      if perf_part program; then
        # The program kernel for every call above 32 KiB (COLL_DEVICE_PROGRAM=1; by
        # default only calls past the stream-operation budget take it): one launch
        # per call.  "call" is the host time per call (device_perf's last column):
        # near the stream time, the call is bound by its launch.
        for n in 2 4; do
          run_step "$out/device-perf.txt" 90 env COLL_DEVICE_PROGRAM=1 build-gpu/tools/collrun -n $n --timeout 85 -- \
            build-gpu/perf/device_perf -o allreduce -b 8 -e 256M -f 4 -n 20 -w 5 || dp_res=FAIL
          small=$(awk '{ sub(/^\[[0-9]+\] +/, ""); $0 = $0 } /^# device_perf/ {t=""; m=""; b=""}
                       $1 == "8" {t=$3} $1 == "2097152" {m=$3; c=$9} $1 == "268435456" {b=$8" of bound, busbw "$5}
                       END {print t" us at 8 B, "m" us at 2 MiB (call "c" us), "b}' "$out/device-perf.txt")
          dp_detail="$dp_detail program N=$n: $small;"
        done
        # The program kernel's ~100 us plateau (128 KiB - 2 MiB on the H200):
        # with 2 blocks per launch instead of up to 32.  If it drops, the
        # per-block barrier work is the cost; if not, the launch is.
        run_step "$out/device-perf.txt" 60 env COLL_DEVICE_PROGRAM=1 COLL_DEVICE_CHANNELS=2 build-gpu/tools/collrun -n 2 \
          --timeout 55 -- build-gpu/perf/device_perf -o allreduce -b 128K -e 2M -f 4 -n 20 -w 5 || dp_res=FAIL
        small=$(awk '{ sub(/^\[[0-9]+\] +/, ""); $0 = $0 } $1 == "131072" {k=$3} $1 == "2097152" {m=$3; c=$9}
                     END {print k" us at 128 KiB, "m" us at 2 MiB (call "c" us)"}' "$out/device-perf.txt")
        dp_detail="$dp_detail program 2 channels N=2: $small;"
        # Its bandwidth at 256 MiB (65% of the bound on the H200 with 32
        # blocks per rank, against 81% for the stream operations): with SMs / 2
        # blocks per rank (at most 64; 2 ranks x SMs / 2 blocks still fit the
        # GPU).  If it rises, the loads in flight were the bound.
        sms=$(grep -m1 -oE '[0-9]+ SMs' "$out/bench.txt" 2>/dev/null | cut -d' ' -f1)
        wide=$(( ${sms:-96} / 2 )); [ $wide -gt 64 ] && wide=64
        run_step "$out/device-perf.txt" 60 env COLL_DEVICE_PROGRAM=1 COLL_DEVICE_CHANNELS=$wide build-gpu/tools/collrun \
          -n 2 --timeout 55 -- build-gpu/perf/device_perf -o allreduce -b 64M -e 256M -f 4 -n 20 -w 5 || dp_res=FAIL
        small=$(awk '{ sub(/^\[[0-9]+\] +/, ""); $0 = $0 } $1 == "268435456" {b=$3" us, "$8" of bound"} END {print b}' \
                "$out/device-perf.txt")
        dp_detail="$dp_detail program $wide channels N=2 at 256 MiB: $small;"
      fi
      if perf_part collectives; then
        for c in allgather broadcast reducescatter; do
          run_step "$out/device-perf.txt" 60 build-gpu/tools/collrun -n 4 --timeout 55 -- build-gpu/perf/device_perf \
            -o $c -b 1M -e 256M -f 16 -n 10 -w 3 || dp_res=FAIL
        done
      fi
      if perf_part sendrecv; then
        # Send/recv (a ring exchange in one group: one block per direction and
        # peer through 4 x 128 KiB mailboxes, transports/p2p/peer_sendrecv.h).
        run_step "$out/device-perf.txt" 60 build-gpu/tools/collrun -n 2 --timeout 55 -- build-gpu/perf/device_perf \
          -o sendrecv -b 8 -e 256M -f 16 -n 10 -w 3 || dp_res=FAIL
        small=$(awk '{ sub(/^\[[0-9]+\] +/, ""); $0 = $0 } /^# device_perf/ {t=""; b=""}
                     $1 == "8" {t=$3} $1 == "268435456" {b="busbw "$5", "$8" of bound"} END {print t" us at 8 B, "b" at 256 MiB"}' \
                "$out/device-perf.txt")
        dp_detail="$dp_detail sendrecv N=2: $small;"
      fi
    fi
    if [ $dp_res = skip ]; then
      record "device perf" skip "$(grep -m1 -E 'SKIP' "$out/device-perf.txt" | sed -E 's/^\[[0-9]+\] +//')"
    else
      record "device perf" "$dp_res" "allreduce${dp_detail} (see device-perf.txt)"
    fi
  fi
fi

# ------------------------------------------------------------ summary ----
fail=0
for r in "${sum_res[@]}"; do [ "$r" = FAIL ] && fail=1; done
device_skipped=0
for i in "${!sum_step[@]}"; do
  case "${sum_step[$i]}" in gpu.kernels.device_reduce|bench) ;; *) continue ;; esac
  [ "${sum_res[$i]}" = skip ] && [ "${sum_detail[$i]}" != "--only tests" ] && device_skipped=1
done
if [ $fail = 1 ]; then overall="FAIL"
elif [ $build_only = 1 ]; then overall="ok (build only)"
elif [ $device_skipped = 1 ]; then overall="ok - $no_gpu_note (the GPU steps were skipped)"
else
  overall="ok"
  for r in "${sum_res[@]}"; do [ "$r" = skip ] && overall="ok (with skips)"; done
fi
elapsed=$(( $(now) - t_start ))
printf '\n==== gpu-check summary (%s s, logs in %s) ====\n' "$elapsed" "$out"
printf '%-28s %-5s %s\n' "step" "result" "detail"
for i in "${!sum_step[@]}"; do
  printf '%-28s %-5s %s\n' "${sum_step[$i]}" "${sum_res[$i]}" "${sum_detail[$i]}"
done
printf '%-28s %-5s %s\n' "overall" "$([ $fail = 1 ] && echo FAIL || echo ok)" "$overall; build path: $path_text"
exit $fail
