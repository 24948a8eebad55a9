#!/bin/sh
# expect_line.sh [--fails] PATTERN COMMAND [ARGS...]: runs the command,
# prints its output, and passes only if it exits 0 and a line of its output
# matches PATTERN (grep -E).  For a test that checks what a job logged as
# well as its results (ctest's PASS_REGULAR_EXPRESSION would ignore the
# exit code).  --fails: the command must fail instead (exit non-zero, but
# not 124/137: a timeout is not the failure looked for), saying PATTERN.
fails=0
if [ "$1" = --fails ]; then
  fails=1
  shift
fi
pattern=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$fails" -eq 0 ] && [ "$rc" -ne 0 ]; then
  echo "expect_line.sh: the command exited with $rc" >&2
  exit "$rc"
fi
if [ "$fails" -eq 1 ] && [ "$rc" -eq 0 ]; then
  echo "expect_line.sh: the command succeeded; it must fail" >&2
  exit 1
fi
if [ "$fails" -eq 1 ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; }; then
  echo "expect_line.sh: the command timed out (exit $rc)" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$pattern"; then
  echo "expect_line.sh: no line of the output matches: $pattern" >&2
  exit 1
fi
