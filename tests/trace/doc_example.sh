#!/bin/sh
# doc_example.sh COLLTRACE DOC FIXTURES: docs/flight-recorder.md's example
# of `colltrace analyze` is what colltrace prints on fixtures/hang today.
colltrace=$1
doc=$2
fixtures=$3
# The first ``` block after the line that names the fixture.
awk '/^On `tests\/trace\/fixtures\/hang`/ { seen = 1 }
     seen && /^```/ { if (inside) exit; inside = 1; next }
     inside { print }' "$doc" >"${TMPDIR:-/tmp}/colltrace-doc.$$"
"$colltrace" analyze "$fixtures/hang" | diff -u "${TMPDIR:-/tmp}/colltrace-doc.$$" - 
rc=$?
rm -f "${TMPDIR:-/tmp}/colltrace-doc.$$"
[ "$rc" -eq 0 ] || echo "doc_example.sh: $doc's example differs from colltrace's output (above: - doc, + colltrace)" >&2
exit "$rc"
