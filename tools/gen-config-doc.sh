#!/usr/bin/env bash
# gen-config-doc.sh BUILD_DIR|COLLRUN [--check] — docs/CONFIG.md's settings table
# from the settings table itself (collrun --settings=markdown), between
# <!-- settings:begin --> and <!-- settings:end -->.  --check: exit 1 when
# the file differs from what it would be (the test docs.config_table).
set -euo pipefail
build=${1:?usage: gen-config-doc.sh BUILD_DIR|COLLRUN [--check]}
check=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
doc=$root/docs/CONFIG.md
collrun=$build
[ -d "$build" ] && collrun=$build/tools/collrun
table=$("$collrun" --settings=markdown)
new=$(awk -v table="$table" '
  /<!-- settings:begin -->/ { print; print table; skip = 1; next }
  /<!-- settings:end -->/ { skip = 0 }
  !skip { print }' "$doc")
if [ "$check" = --check ]; then
  if [ "$new" != "$(cat "$doc")" ]; then
    echo "docs/CONFIG.md's settings table differs from the settings table (base/src/settings.cc):"
    diff <(printf '%s\n' "$new") "$doc" || true
    echo "run: tools/gen-config-doc.sh $build"
    exit 1
  fi
  echo "docs/CONFIG.md's settings table is current"
  exit 0
fi
printf '%s\n' "$new" >"$doc"
echo "wrote $doc"
