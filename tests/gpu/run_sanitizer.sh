#!/usr/bin/env bash
# run_sanitizer.sh TOOL CUDA_BIN_DIR PROGRAM [ARGS...]
# Runs PROGRAM under `compute-sanitizer --tool TOOL`; exit 77 (skip) when
# compute-sanitizer is not installed or there is no CUDA device (PROGRAM's own
# exit 77 passes through), nonzero when the sanitizer reports an error.
set -u
tool=$1 bindir=$2 prog=$3
shift 3
san=${COMPUTE_SANITIZER:-}
if [ -z "$san" ]; then
  for c in "$(command -v compute-sanitizer 2>/dev/null)" "$bindir/compute-sanitizer" \
           "$bindir/../compute-sanitizer/compute-sanitizer" /usr/local/cuda/bin/compute-sanitizer \
           /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    if [ -n "$c" ] && [ -x "$c" ]; then san=$c; break; fi
  done
fi
if [ -z "$san" ]; then
  echo "SKIP: compute-sanitizer not found (PATH, COMPUTE_SANITIZER, $bindir)"
  exit 77
fi
# No device: the program says so itself (exit 77) without the sanitizer.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  "$prog" "$@"
  rc=$?
  [ $rc -eq 77 ] && exit 77
fi
echo "+ $san --tool $tool --error-exitcode 99 $prog $*"
"$san" --tool "$tool" --error-exitcode 99 "$prog" "$@"
rc=$?
[ $rc -eq 99 ] && echo "FAIL: compute-sanitizer $tool reported errors"
exit $rc
