#!/bin/sh
# expect_line.sh PATTERN COMMAND [ARGS...]: runs the command, prints its
# output, and passes only if it exits 0 and a line of its output matches
# PATTERN (grep -E).  For a test that checks what a job logged as well as
# its results (ctest's PASS_REGULAR_EXPRESSION would ignore the exit code).
pattern=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
  echo "expect_line.sh: the command exited with $rc" >&2
  exit "$rc"
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$pattern"; then
  echo "expect_line.sh: no line of the output matches: $pattern" >&2
  exit 1
fi
