#!/usr/bin/env bash
# Smoke test of tools/netsim (ctest: netsim.smoke, label netsim).
#
#   tests/netsim/netsim_smoke.sh PATH/TO/tools/netsim
#
# Brings up 3 simulated hosts at 100mbit and checks, for real: the root
# namespace is untouched, no host has a default route, every host reaches
# every other, 'run' gives each rank its own hostname and the COLL_*
# environment, failing/killed/stuck ranks are reported with the right exit
# status and leave no process behind, the htb limit holds in both directions
# (one sender: 70-100% of 100 Mbit/s; two senders into one host: the same
# total, since the receiving link is capped too), and 'down' removes it all.
#
# Exit 77 (ctest SKIP_RETURN_CODE) when not root or when the kernel/container
# does not allow network namespaces, veth or htb.  Takes ~10 s.
#
# NOTE: it starts with 'netsim down', so it replaces a simulation that is up.
set -uo pipefail

NETSIM=${1:?usage: netsim_smoke.sh PATH/TO/tools/netsim}
HERE=$(cd "$(dirname "$0")" && pwd)
THROUGHPUT=$HERE/throughput.py
SUBNET=10.213.7
RATE_MBIT=100

skip() {
  echo "SKIP: $*"
  exit 77
}

FAILS=0
fail() {
  echo "FAIL: $*"
  FAILS=$((FAILS + 1))
}
ok() { echo "ok: $*"; }

# ---- can this machine do it at all? ----------------------------------------
# shellcheck source=probe.sh
source "$HERE/probe.sh"
why=$(netsim_probe) || skip "$why"

# ---- the test ----------------------------------------------------------------
OUT=$(mktemp -d /tmp/netsim-smoke.XXXXXX)
cleanup() {
  "$NETSIM" down >/dev/null 2>&1 || echo "WARNING: 'netsim down' failed in cleanup"
  rm -rf "$OUT"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

root_links_before=$(ip -o link show | sed 's/ state .*//' | sort)
root_routes_before=$(ip route show table all | sort)

"$NETSIM" down >/dev/null || fail "initial down"
if ! "$NETSIM" up -n 3 --rate "${RATE_MBIT}mbit"; then
  echo "FAIL: netsim up -n 3 --rate ${RATE_MBIT}mbit"
  exit 1
fi

# A second 'up' must refuse.
if "$NETSIM" up -n 3 --rate 1gbit 2>"$OUT/err"; then
  fail "second up succeeded"
elif ! grep -q "down" "$OUT/err"; then
  fail "second up: message does not mention 'down': $(cat "$OUT/err")"
else
  ok "second up refused"
fi

"$NETSIM" status >"$OUT/status" || fail "status exited nonzero when up"
if grep -q "3 host(s)" "$OUT/status" && grep -q "$SUBNET.3/24" "$OUT/status"; then
  ok "status"
else
  fail "status output: $(cat "$OUT/status")"
fi

# The root namespace: no new links, no new routes.
if [[ $(ip -o link show | sed 's/ state .*//' | sort) == "$root_links_before" &&
  $(ip route show table all | sort) == "$root_routes_before" ]]; then
  ok "root namespace untouched"
else
  fail "the root namespace's links or routes changed"
fi

# No way out: no default route, and an outside address is unreachable.
for i in 0 1 2; do
  if [[ -n $(ip -n "collsim$i" route show default) ]]; then
    fail "host $i has a default route"
  fi
  if ip -n "collsim$i" route get 192.0.2.1 >/dev/null 2>&1; then
    fail "host $i has a route to 192.0.2.1"
  fi
done
ok "no default routes"

# Every host reaches every other: host j accepts one connection from each
# of the other two.
port=5300
for j in 0 1 2; do
  port=$((port + 1))
  "$NETSIM" exec "$j" -- python3 "$THROUGHPUT" serve --bind "$SUBNET.$((j + 1))" --port "$port" \
    --conns 2 --timeout 10 >"$OUT/reach$j" 2>&1 &
  server=$!
  for i in 0 1 2; do
    ((i != j)) || continue
    if ! "$NETSIM" exec "$i" -- python3 "$THROUGHPUT" send --to "$SUBNET.$((j + 1))" --port "$port" \
      --bytes 1000 >/dev/null 2>"$OUT/send_err"; then
      fail "host $i cannot reach host $j: $(cat "$OUT/send_err")"
    fi
  done
  wait "$server" || fail "host $j: server failed: $(cat "$OUT/reach$j")"
  grep -q "bytes=2000 " "$OUT/reach$j" || fail "host $j received: $(cat "$OUT/reach$j")"
done
if command -v ping >/dev/null 2>&1; then
  "$NETSIM" exec 0 -- ping -c1 -W2 "$SUBNET.3" >/dev/null || fail "ping from host 0 to host 2"
fi
ok "all hosts reach each other"

# run: hostnames and environment.  (-x FOO overrides nothing; checks -x.)
# shellcheck disable=SC2016  # expanded in the ranks
if ! "$NETSIM" run -n 3 -x NETSIM_TEST=hello -- sh -c \
  'echo "$COLL_RANK $(uname -n) $COLL_NRANKS $COLL_LOCAL_RANK $COLL_LOCAL_NRANKS $COLL_ROOT $COLL_SOCKET_IFNAME $NETSIM_TEST $COLL_SECRET"' \
  >"$OUT/run1" 2>&1; then
  fail "run exited nonzero: $(cat "$OUT/run1")"
fi
secret=""
for i in 0 1 2; do
  line=$(grep "^$i " "$OUT/run1")
  read -r rank host nranks lrank lnranks root ifname extra sec <<<"$line"
  expect="$i collsim-host-$i 3 0 1 $SUBNET.1:29500 eth0 hello"
  if [[ "$rank $host $nranks $lrank $lnranks $root $ifname $extra" != "$expect" ]]; then
    fail "rank $i: got '$line', expected '$expect <secret>'"
  fi
  [[ ${sec:-} =~ ^[0-9a-f]{64}$ ]] || fail "rank $i: COLL_SECRET '${sec:-}' is not 64 hex digits"
  [[ -z $secret || $sec == "$secret" ]] || fail "rank $i: COLL_SECRET differs between ranks"
  secret=${sec:-}
done
[[ $(wc -l <"$OUT/run1") == 3 ]] || fail "run printed extra lines: $(cat "$OUT/run1")"
# shellcheck disable=SC2016
sec2=$("$NETSIM" run -n 1 --port 4242 -- sh -c 'echo "$COLL_ROOT $COLL_SECRET"')
[[ $sec2 == "$SUBNET.1:4242 "* ]] || fail "--port: got '$sec2'"
[[ ${sec2#* } != "$secret" ]] || fail "COLL_SECRET is the same in two runs"
ok "run: hostnames and environment"

# --prefix
# shellcheck disable=SC2016
"$NETSIM" run -n 2 --prefix -- sh -c 'echo out; echo err >&2' >"$OUT/pre_out" 2>"$OUT/pre_err"
if [[ $(sort "$OUT/pre_out" | tr '\n' '|') == "[rank 0] out|[rank 1] out|" &&
  $(sort "$OUT/pre_err" | tr '\n' '|') == "[rank 0] err|[rank 1] err|" ]]; then
  ok "run --prefix"
else
  fail "run --prefix: stdout '$(cat "$OUT/pre_out")' stderr '$(cat "$OUT/pre_err")'"
fi

# A failing rank: its status is netsim's, and it is named.
# shellcheck disable=SC2016
"$NETSIM" run -n 3 -- sh -c '[ "$COLL_RANK" != 2 ] || exit 3' >"$OUT/f_out" 2>"$OUT/f_err"
st=$?
if ((st == 3)) && grep -qx "netsim: rank 2 exited with status 3" "$OUT/f_err" &&
  [[ $(grep -c "netsim: rank" "$OUT/f_err") == 1 ]]; then
  ok "failing rank reported"
else
  fail "failing rank: status $st, stderr: $(cat "$OUT/f_err")"
fi
# A rank killed by a signal.
# shellcheck disable=SC2016
"$NETSIM" run -n 2 -- sh -c '[ "$COLL_RANK" != 1 ] || kill -9 $$' >/dev/null 2>"$OUT/k_err"
st=$?
if ((st == 137)) && grep -q "netsim: rank 1 killed by signal 9" "$OUT/k_err"; then
  ok "killed rank reported"
else
  fail "killed rank: status $st, stderr: $(cat "$OUT/k_err")"
fi

# More ranks than hosts: usage error.
"$NETSIM" run -n 4 -- true 2>/dev/null
st=$?
((st == 2)) || fail "run -n 4 on 3 hosts: status $st, expected 2"

# --timeout: the job is killed, 124, and nothing is left in the hosts
# (also not a child that ignores SIGTERM).
t0=$(date +%s)
# shellcheck disable=SC2016
"$NETSIM" run -n 3 --timeout 1 -- sh -c 'trap "" TERM; sleep 60 & sleep 60; wait' >/dev/null 2>"$OUT/t_err"
st=$?
elapsed=$(($(date +%s) - t0))
left=$(for i in 0 1 2; do ip netns pids "collsim$i"; done | wc -l)
if ((st == 124 && elapsed <= 6 && left == 0)) && grep -q timeout "$OUT/t_err"; then
  ok "run --timeout"
else
  fail "run --timeout: status $st after $elapsed s, $left process(es) left, stderr: $(cat "$OUT/t_err")"
fi

# Throughput.  Goodput over TCP is ~96% of the htb rate (headers count
# against it), so 70-100% of 100 Mbit/s = 12.5 MB/s.
line_MBps=$(awk -v m="$RATE_MBIT" 'BEGIN { print m / 8 }')
check_rate() {  # check_rate WHAT RESULT_LINE
  local what=$1 result=$2 mbps
  mbps=$(sed -n 's/.*MBps=\([0-9.]*\).*/\1/p' <<<"$result")
  if [[ -z $mbps ]]; then
    fail "$what: no result: $result"
    return
  fi
  if awk -v r="$mbps" -v l="$line_MBps" 'BEGIN { exit !(r >= 0.70 * l && r <= 1.00 * l) }'; then
    ok "$what: $mbps MB/s (limit $line_MBps MB/s)"
  else
    fail "$what: $mbps MB/s, expected 70-100% of $line_MBps MB/s"
  fi
}

# One flow, host 0 -> host 1: limited by host 0's egress.
"$NETSIM" exec 1 -- python3 "$THROUGHPUT" serve --bind "$SUBNET.2" --port 5401 --timeout 15 >"$OUT/tp1" 2>&1 &
server=$!
"$NETSIM" exec 0 -- python3 "$THROUGHPUT" send --to "$SUBNET.2" --port 5401 --bytes 5000000 >/dev/null ||
  fail "throughput sender 0 -> 1"
wait "$server" || fail "throughput server on host 1: $(cat "$OUT/tp1")"
check_rate "one flow 0 -> 1" "$(cat "$OUT/tp1")"

# Two flows into host 1 (from 0 and 2): each sender alone could do the full
# rate, so only the cap on host 1's receiving side keeps the total at it.
"$NETSIM" exec 1 -- python3 "$THROUGHPUT" serve --bind "$SUBNET.2" --port 5402 --conns 2 --timeout 15 >"$OUT/tp2" 2>&1 &
server=$!
"$NETSIM" exec 0 -- python3 "$THROUGHPUT" send --to "$SUBNET.2" --port 5402 --bytes 4000000 >/dev/null &
sender0=$!
"$NETSIM" exec 2 -- python3 "$THROUGHPUT" send --to "$SUBNET.2" --port 5402 --bytes 4000000 >/dev/null ||
  fail "throughput sender 2 -> 1"
wait "$sender0" || fail "throughput sender 0 -> 1 (two flows)"
wait "$server" || fail "throughput server on host 1 (two flows): $(cat "$OUT/tp2")"
check_rate "two flows into host 1 (receive cap)" "$(cat "$OUT/tp2")"

# down: everything goes, twice is fine.
"$NETSIM" down >/dev/null || fail "down"
remaining=$(ip netns list | awk '$1 == "collsim-sw" || $1 ~ /^collsim[0-9]+$/' | wc -l)
((remaining == 0)) || fail "$remaining collsim namespace(s) left after down"
[[ ! -e /run/collsim/state ]] || fail "state file left after down"
"$NETSIM" down >"$OUT/down2" || fail "second down exited nonzero"
grep -q "nothing to remove" "$OUT/down2" || fail "second down: $(cat "$OUT/down2")"
"$NETSIM" status >/dev/null && fail "status exited 0 with nothing up"
ok "down"

if ((FAILS)); then
  echo "netsim smoke test: $FAILS check(s) FAILED"
  exit 1
fi
echo "netsim smoke test: all checks passed"
