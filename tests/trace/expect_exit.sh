#!/bin/sh
# expect_exit.sh CODE PATTERN COMMAND [ARGS...]: runs the command, prints its
# output, and passes only if it exits with CODE and a line of its output
# matches PATTERN (grep -E).  For a tool whose exit status is part of its
# contract (colltrace: 0 analyzed, 1 unreadable input, 2 bad arguments).
code=$1
pattern=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$code" ]; then
  echo "expect_exit.sh: the command exited with $rc, not $code" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$pattern"; then
  echo "expect_exit.sh: no line of the output matches: $pattern" >&2
  exit 1
fi
