# probe.sh — sourced by the netsim tests: can this machine simulate hosts?
# netsim_probe prints why not and returns 1 when it cannot (not root, no
# ip/python3, no network namespaces, veth, htb or UTS namespaces); the
# caller then exits 77 (ctest SKIP_RETURN_CODE).
netsim_probe() {
  if ((EUID != 0)) || ! command -v ip >/dev/null 2>&1; then
    echo "needs root and ip netns"
    return 1
  fi
  command -v python3 >/dev/null 2>&1 || { echo "needs python3"; return 1; }
  local probe=netsimtest-probe-$$ ok=1
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "needs root and ip netns (ip netns add failed: no CAP_SYS_ADMIN?)"
    return 1
  fi
  ip -n "$probe" link add p0 type veth peer name p1 2>/dev/null || ok=0
  if ((ok)); then
    tc -n "$probe" qdisc add dev p0 root handle 1: htb default 10 2>/dev/null || ok=0
  fi
  ip netns exec "$probe" unshare --uts true 2>/dev/null || ok=0
  ip netns del "$probe"
  ((ok)) || { echo "needs root and ip netns (this kernel/container lacks veth, htb or UTS namespaces)"; return 1; }
}
