#!/bin/sh
# check_model.sh COLLRUN ALL_REDUCE_PERF CALIBRATE SCRATCH_DIR
# The perf tools' --model columns exist and parse, the default table has
# none of them, and a calibration file written by perf/calibrate is loaded
# through COLL_COST_FILE (the header names it as the source).
set -eu
collrun=$1 perf=$2 calibrate=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "check_model: FAIL: $*" >&2; exit 1; }

# 1. --model: 18 columns, a known algorithm, positive prediction, ratios that parse.
"$collrun" -n 2 --no-prefix -- "$perf" -b 8 -e 64K -f 8 -n 3 -w 1 --model > "$dir/model.txt" || fail "perf --model exited $?"
grep -q '^# cost model (--model): transport shm, 2 ranks; alpha .* s, beta .* s/B .* from transport default (shm)' \
  "$dir/model.txt" || fail "no model header line with alpha, beta and their source"
grep -q '^# cost model: oneshot  = \|^# cost model: ring     = ' "$dir/model.txt" || fail "no formula line"
awk '
  /^#/ || NF == 0 { next }
  {
    rows++
    if (NF != 18) { print "row has " NF " columns, want 18: " $0; bad = 1; next }
    if ($14 !~ /^(ring|tree|oneshot|pipeline|direct)$/) { print "bad algorithm: " $14; bad = 1 }
    if ($15 !~ /^[0-9]+(\.[0-9]+)?$/ || $15 + 0 <= 0) { print "bad prediction: " $15; bad = 1 }
    for (i = 16; i <= 17; i++)
      if ($i !~ /^[0-9]+(\.[0-9]+)?$/ || $i + 0 <= 0) { print "ratio does not parse: " $i; bad = 1 }
    # ratio == measured / predicted (both as printed, so within rounding)
    r = $6 / $15
    if (r / $16 > 1.05 || r / $16 < 0.95) { print "oop/pred " $16 " != " $6 " / " $15; bad = 1 }
    if ($18 !~ /^[0-9]+(\.[0-9]+)?$/ || $18 + 0 > 100) { print "bad lat%: " $18; bad = 1 }
  }
  END { if (rows != 5) { print "want 5 rows, got " rows; bad = 1 } exit bad }
' "$dir/model.txt" || fail "bad --model rows (see above)"

# 2. Without --model: the nccl-tests table, 13 columns, no model lines.
"$collrun" -n 2 --no-prefix -- "$perf" -b 8 -e 64K -f 8 -n 3 -w 1 > "$dir/plain.txt" || fail "perf exited $?"
grep -q 'cost model' "$dir/plain.txt" && fail "model lines without --model"
awk '/^#/ || NF == 0 { next } { rows++; if (NF != 13) bad = 1 } END { exit (bad || rows != 5) }' "$dir/plain.txt" \
  || fail "default rows are not 13 columns"

# 3. --alpha/--bw change the printed prediction only, and say so.
"$collrun" -n 2 --no-prefix -- "$perf" -b 1M -e 1M -n 3 -w 1 --alpha 1e-3 --bw 1 > "$dir/override.txt" || fail "override run"
grep -q 'from --alpha/--beta/--bw (printed prediction only' "$dir/override.txt" || fail "no override header line"
awk '/^#/ || NF == 0 { next } { if ($15 + 0 < 1000) bad = 1 } END { exit bad }' "$dir/override.txt" \
  || fail "--alpha 1e-3 did not reach the prediction"

# 4. calibrate writes a file the tuner loads for shm.
"$collrun" -n 2 --no-prefix -- "$calibrate" --out "$dir/cost.txt" --ping-iters 200 --stream-bytes 1M \
  --stream-reps 2 --fit-max 64K > "$dir/calibrate.txt" || fail "calibrate exited $?"
grep -q '^format 1$' "$dir/cost.txt" && grep -q '^transport shm$' "$dir/cost.txt" && grep -q '^alpha [0-9]' "$dir/cost.txt" \
  && grep -q '^beta [0-9]' "$dir/cost.txt" || fail "calibration file lacks format/transport/alpha/beta"
COLL_COST_FILE="$dir/cost.txt" "$collrun" -n 2 --no-prefix -- "$perf" -b 8 -e 8 -n 3 -w 1 --model > "$dir/loaded.txt" \
  || fail "perf with COLL_COST_FILE exited $?"
grep -q "from file $dir/cost.txt (shm" "$dir/loaded.txt" || fail "COLL_COST_FILE not reported as the source"

# 5. A malformed file fails init, naming the file and line.
printf 'format 1\ntransport shm\nalpha x\nbeta 1e-10\n' > "$dir/bad.txt"
if COLL_COST_FILE="$dir/bad.txt" "$collrun" -n 2 --no-prefix -- "$perf" -b 8 -e 8 -n 1 -w 0 > "$dir/bad.out" 2>&1; then
  fail "a malformed COLL_COST_FILE did not fail init"
fi
grep -q "cost file $dir/bad.txt line 3" "$dir/bad.out" || fail "init error does not name the file and line"
echo "check_model: OK"
