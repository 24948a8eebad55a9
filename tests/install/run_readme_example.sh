#!/usr/bin/env bash
# run_readme_example.sh SOURCE_DIR BUILD_DIR SCRATCH — README.md's compile
# line for examples/allreduce.c, taken from README.md itself (its build/
# replaced by BUILD_DIR), then the program under collrun with 2 ranks.
set -euo pipefail
src=$1 build=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
line=$(sed -n 's/^    \(cc examples\/allreduce.c .*\)$/\1/p' "$src/README.md")
if [ -z "$line" ]; then
  echo "FAIL: README.md has no 'cc examples/allreduce.c ...' line"
  exit 1
fi
line=${line//\$PWD\//}
line=${line//build\//$build/}
line=${line//-o allreduce/-o $scratch/allreduce}
echo "+ $line"
(cd "$src" && eval "$line")
out=$("$build/tools/collrun" -n 2 --timeout 60 -- "$scratch/allreduce")
echo "$out"
[ "$(grep -c ' 0 of 1048576 elements wrong' <<<"$out")" -eq 2 ] || { echo "FAIL: both ranks must print a correct sum"; exit 1; }
echo "README example: ok"
