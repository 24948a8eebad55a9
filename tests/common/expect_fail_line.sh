#!/bin/sh
# expect_fail_line.sh PATTERN COMMAND [ARGS...]: runs the command, prints its
# output, and passes only if it exits non-zero (not 124/137: a timeout is
# not the failure we look for) and a line of its output matches PATTERN
# (grep -E).  For tests of errors: a job that must fail, saying why.
pattern=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 0 ]; then
  echo "expect_fail_line.sh: the command succeeded; it must fail" >&2
  exit 1
fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "expect_fail_line.sh: the command timed out (exit $rc)" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$pattern"; then
  echo "expect_fail_line.sh: no line of the output matches: $pattern" >&2
  exit 1
fi
