#!/bin/sh
# fr_check.sh COLLTRACE DIR VERDICT_REGEX COMMAND [ARGS...]: runs the job
# COMMAND with COLL_FR_DIR=DIR (emptied first), whatever its exit status (a
# rank is meant to hang or die), then `colltrace analyze DIR`, printing
# both; passes when the analysis succeeds and its verdict line matches
# VERDICT_REGEX (grep -E).
colltrace=$1
dir=$2
pattern=$3
shift 3
rm -rf "$dir" && mkdir -p "$dir" || exit 1
COLL_FR_DIR=$dir "$@" 2>&1
echo "fr_check.sh: the job exited with $?"
out=$("$colltrace" analyze "$dir" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
  echo "fr_check.sh: colltrace analyze exited with $rc" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep '^verdict:' | grep -Eq -- "$pattern"; then
  echo "fr_check.sh: the verdict does not match: $pattern" >&2
  exit 1
fi
