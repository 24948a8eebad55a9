#!/usr/bin/env python3
"""kill_trials.py — SIGKILL one rank mid-all-reduce; the survivors must fail
promptly, name the dead rank, and shut down cleanly.  Stdlib only.

Usage:
  kill_trials.py --prog PATH --n N --transport shm|socket|ib [--trials 20]
                 [--seed S] [-x VAR=VALUE ...] [--keep-going] [--verbose]
                 [--reap-delay-s T] [--collrun PATH]

Per trial:
  1. Start N ranks of PROG (tests/failure/kill_rank) ourselves, with the
     environment collrun gives a rank (COLL_RANK, COLL_NRANKS,
     COLL_LOCAL_RANK, COLL_LOCAL_NRANKS, COLL_ROOT=127.0.0.1:<free port>,
     COLL_SECRET=<64 hex digits>) plus COLL_TRANSPORT=<transport> (ib:
     COLL_NET=ib; -x gives the verbs library) and
     COLL_TIMEOUT=60s: the deadline is long on purpose, death must be found
     by the transport (pid, socket), not by the timeout.
     Not through collrun: collrun tears the whole job down (SIGTERM) as soon
     as one rank dies, which would kill the survivors we want to watch.
     --collrun is accepted for symmetry with the other tests and unused.
  2. Wait until every rank printed LOOPING (its first all-reduce is done).
  3. Sleep a random 0-300 ms (so the kill lands mid-collective), SIGKILL the
     victim (its pid from its "PID" line), record CLOCK_REALTIME (taken just
     before the kill), reap it at once (as any launcher does: a zombie still
     answers kill(pid, 0)).  --reap-delay-s T leaves it a zombie T seconds:
     then only what the transport itself sees (a closed socket) can tell the
     survivors; the shm transport, which relies on kill(pid, 0), cannot.
  4. Check every survivor: a FAILED line with t_ns - kill_ns <= 5 s, whose
     message names "rank <victim>", the collective (allreduce), its sequence
     number (#K) and the step ("step i/n", or "(COLL_CHECK signature)" under
     COLL_CHECK=1); a later call fails too;
     DESTROYED; exit status 0 within the trial deadline (else: hang).
     The victim must have died of signal 9.
Victims: every rank in turn, in a random order per round (so rank 0, which
hosts the bootstrap root, is always among them).
Prints one line per trial and a summary (min/median/max detection ms);
exits 1 on any failure, after printing the offending ranks' full output.
"""

import argparse
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

LAUNCHER_VARS = ("COLL_RANK", "COLL_NRANKS", "COLL_LOCAL_RANK", "COLL_LOCAL_NRANKS", "COLL_ROOT", "COLL_SECRET")


class TrialError(Exception):
    pass


class Rank:
    """One rank process and the lines it printed (stdout and stderr merged)."""

    def __init__(self, rank, argv, env):
        self.rank = rank
        self.lines = []  # (CLOCK_REALTIME ns when read, text)
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self.cond:
                self.lines.append((time.time_ns(), line))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def find(self, tag):
        """Fields of the first line starting with tag (key=value ..., msg= takes the rest)."""
        with self.cond:
            lines = list(self.lines)
        for _, line in lines:
            if line.startswith(tag + " "):
                return parse_fields(line[len(tag) + 1:])
        return None

    def output(self):
        with self.cond:
            return "\n".join(f"  [{self.rank}] {l}" for _, l in self.lines)

    def kill(self):
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.reader.join(timeout=2)
        self.proc.stdout.close()


def parse_fields(text):
    out = {}
    m = re.search(r"(?:^| )msg=", text)
    if m:
        out["msg"] = text[m.end():]
        text = text[:m.start()]
    for tok in text.split():
        k, _, v = tok.partition("=")
        out[k] = v
    return out


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(base, extra, rank, n, root, secret):
    env = {k: v for k, v in base.items() if k not in LAUNCHER_VARS}
    env.update(extra)
    env.update(COLL_RANK=str(rank), COLL_NRANKS=str(n), COLL_LOCAL_RANK=str(rank), COLL_LOCAL_NRANKS=str(n),
               COLL_ROOT=root, COLL_SECRET=secret)
    return env


def wait_for(ranks, pred, deadline):
    """Waits until pred() is true; raises TrialError on deadline or early exit."""
    while True:
        if pred():
            return
        for r in ranks:
            rc = r.proc.poll()
            if rc is not None and not pred():
                raise TrialError(f"rank {r.rank} exited (status {rc}) before the kill")
        if time.monotonic() > deadline:
            raise TrialError("timed out waiting for every rank to start looping")
        time.sleep(0.01)


def check_survivor(r, victim, kill_ns, limit_ms):
    """Problems with survivor r (empty if fine) and its detection latency in ms."""
    problems = []
    failed = r.find("FAILED")
    latency = None
    if failed is None:
        problems.append("no FAILED line (its all-reduce never returned an error)")
    else:
        latency = (int(failed["t_ns"]) - kill_ns) / 1e6
        msg = failed.get("msg", "")
        if latency < 0:
            problems.append(f"failed {-latency:.1f} ms BEFORE the kill")
        elif latency > limit_ms:
            problems.append(f"failed {latency:.1f} ms after the kill (limit {limit_ms:.0f} ms)")
        if int(failed.get("code", "0")) == 0:
            problems.append("FAILED with code 0")
        if not re.search(rf"\brank {victim}(?![0-9])", msg):
            problems.append(f"message does not name 'rank {victim}'")
        if not re.search(r"all_?reduce", msg, re.IGNORECASE):
            problems.append("message does not name the collective (allreduce)")
        if not re.search(r"#[0-9]+", msg):
            problems.append("message has no sequence number (#K)")
        # A step, or the signature exchange COLL_CHECK=1 adds before step 1.
        if not re.search(r"\bstep [0-9]+/[0-9]+|\(COLL_CHECK signature\)", msg):
            problems.append("message names no step")
    later = r.find("LATER")
    if failed is not None and (later is None or int(later.get("code", "0")) == 0):
        problems.append("a later call on the failed communicator did not fail")
    if r.find("DESTROYED") is None:
        problems.append("collCommDestroy did not return (no DESTROYED)")
    for tag in ("NOFAIL", "WRONG"):
        if r.find(tag) is not None:
            problems.append(f"printed {tag}")
    rc = r.proc.poll()
    if rc is None:
        problems.append("still running at the trial deadline (hang)")
    elif rc != 0:
        problems.append(f"exited with status {rc}" if rc > 0 else f"killed by signal {-rc}")
    return problems, latency


def run_trial(args, trial, victim, rng, extra):
    n = args.n
    root = f"127.0.0.1:{free_port()}"
    secret = os.urandom(32).hex()
    argv = [args.prog, str(victim), str(args.loop_seconds)]
    ranks = []
    result = {"trial": trial, "victim": victim, "ok": False, "latencies": {}, "problems": {}, "delay_ms": float("nan")}
    t_start = time.monotonic()
    try:
        for r in range(n):
            ranks.append(Rank(r, argv, rank_env(os.environ, extra, r, n, root, secret)))
        wait_for(ranks, lambda: all(r.find("LOOPING") is not None and r.find("PID") is not None for r in ranks),
                 time.monotonic() + args.start_timeout)
        delay = rng.uniform(0.0, args.max_delay_ms / 1000.0)
        result["delay_ms"] = delay * 1000.0
        time.sleep(delay)
        v = ranks[victim]
        pid = int(v.find("PID")["pid"])
        if pid != v.proc.pid:
            raise TrialError(f"victim's PID line says {pid}, its process is {v.proc.pid}")
        if v.proc.poll() is not None:
            raise TrialError(f"victim exited (status {v.proc.returncode}) before the kill")
        kill_ns = time.time_ns()
        os.kill(pid, signal.SIGKILL)
        if args.reap_delay_s > 0:
            # The victim stays a zombie for a while: only what the transport
            # sees (a closed socket) can tell the survivors, not kill(pid, 0).
            time.sleep(args.reap_delay_s)
        v.proc.wait()  # reap: a zombie is still "alive" to kill(pid, 0)
        survivors = [r for r in ranks if r.rank != victim]
        deadline = time.monotonic() + args.exit_timeout
        while time.monotonic() < deadline and any(r.proc.poll() is None for r in survivors):
            time.sleep(0.01)
        for r in survivors:
            if r.proc.poll() is not None:
                r.reader.join(timeout=2)  # its last lines
        if v.proc.returncode != -signal.SIGKILL:
            result["problems"][victim] = [f"victim ended with {v.proc.returncode}, not signal 9"]
        for r in survivors:
            problems, latency = check_survivor(r, victim, kill_ns, args.limit_s * 1000.0)
            if latency is not None:
                result["latencies"][r.rank] = latency
            if problems:
                result["problems"][r.rank] = problems
        result["ok"] = not result["problems"]
    except TrialError as e:
        result["problems"]["setup"] = [str(e)]
    finally:
        for r in ranks:
            r.kill()
        result["seconds"] = time.monotonic() - t_start
        result["outputs"] = {r.rank: r.output() for r in ranks}
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prog", required=True, help="the rank program (kill_rank)")
    ap.add_argument("--n", type=int, required=True, help="number of ranks")
    ap.add_argument("--transport", required=True, choices=("shm", "socket", "ib"),
                    help="COLL_TRANSPORT for every rank (ib: COLL_NET=ib)")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: random, printed)")
    ap.add_argument("--collrun", help="accepted and unused: collrun kills every rank when one dies")
    ap.add_argument("-x", action="append", default=[], metavar="VAR=VALUE", help="extra environment for the ranks")
    ap.add_argument("--limit-s", type=float, default=5.0, help="detection limit after the kill (5 s)")
    ap.add_argument("--max-delay-ms", type=float, default=300.0, help="random delay before the kill: 0..this")
    ap.add_argument("--start-timeout", type=float, default=60.0, help="seconds for all ranks to start looping")
    ap.add_argument("--exit-timeout", type=float, default=20.0,
                    help="seconds after the kill for survivors to exit; later is a hang")
    ap.add_argument("--loop-seconds", type=float, default=120.0, help="how long a rank loops without a failure")
    ap.add_argument("--reap-delay-s", type=float, default=0.0,
                    help="leave the killed victim a zombie this long (default 0: reap at once, like a launcher)")
    ap.add_argument("--verbose", action="store_true", help="print every survivor's error message")
    ap.add_argument("--keep-going", action="store_true", help="run every trial even after a failure")
    args = ap.parse_args()
    if args.n < 2:
        ap.error("--n must be at least 2")
    if not os.access(args.prog, os.X_OK):
        ap.error(f"--prog {args.prog} is not executable")
    extra = {"COLL_TIMEOUT": "60s"}
    extra.update({"COLL_NET": "ib"} if args.transport == "ib" else {"COLL_TRANSPORT": args.transport})
    for kv in args.x:
        k, eq, v = kv.partition("=")
        if not eq or not k or k in LAUNCHER_VARS:
            ap.error(f"bad -x {kv}")
        extra[k] = v
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    rng = random.Random(seed)
    # Every rank is a victim in turn, in random order per round.
    victims = []
    while len(victims) < args.trials:
        block = list(range(args.n))
        rng.shuffle(block)
        victims += block
    victims = victims[:args.trials]
    print(f"kill_trials: n={args.n} transport={args.transport} trials={args.trials} seed={seed} "
          f"limit={args.limit_s:g}s prog={args.prog}", flush=True)

    # SIGTERM (ctest timeout, collrun-like supervisors): clean up like Ctrl-C.
    def on_term(sig, _frame):
        raise KeyboardInterrupt(f"signal {sig}")
    signal.signal(signal.SIGTERM, on_term)

    results = []
    t0 = time.monotonic()
    for trial, victim in enumerate(victims):
        res = run_trial(args, trial, victim, rng, extra)
        results.append(res)
        lat = res["latencies"]
        worst = max(lat.values()) if lat else float("nan")
        print(f"trial {trial:2d} victim={victim} delay_ms={res['delay_ms']:5.1f} max_detect_ms={worst:8.1f} "
              f"survivors_ms=[{' '.join(f'{r}:{ms:.0f}' for r, ms in sorted(lat.items()))}] "
              f"trial_s={res['seconds']:.2f} {'ok' if res['ok'] else 'FAIL'}", flush=True)
        if args.verbose:
            for rank, out in sorted(res["outputs"].items()):
                for line in out.splitlines():
                    if re.match(r"\s*\[\d+\] (FAILED|LATER|ASYNC) ", line):
                        print(line, flush=True)
        if not res["ok"]:
            for who, probs in sorted(res["problems"].items(), key=lambda kv: str(kv[0])):
                for p in probs:
                    print(f"  FAIL {'rank ' + str(who) if isinstance(who, int) else who}: {p}", flush=True)
            bad = [w for w in res["problems"] if isinstance(w, int)] or list(res["outputs"])
            for w in sorted(set(bad)):
                print(f"  --- full output of rank {w}{' (victim)' if w == victim else ''} ---", flush=True)
                print(res["outputs"][w], flush=True)
            if not args.keep_going:
                break

    worst = [max(r["latencies"].values()) for r in results if r["latencies"]]
    every = [ms for r in results for ms in r["latencies"].values()]
    nfail = sum(1 for r in results if not r["ok"])
    if worst:
        print(f"summary: {len(results)} trials, {nfail} failed, seed={seed}, {time.monotonic() - t0:.1f} s; "
              f"max detection per trial ms: min={min(worst):.1f} median={statistics.median(worst):.1f} "
              f"max={max(worst):.1f}; all survivors ms: min={min(every):.1f} median={statistics.median(every):.1f} "
              f"max={max(every):.1f}", flush=True)
    else:
        print(f"summary: {len(results)} trials, {nfail} failed, seed={seed}: no detection measured", flush=True)
    ok = nfail == 0 and len(results) == args.trials
    print("PASS" if ok else "FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt as e:
        print(f"kill_trials: interrupted ({e}); all ranks were killed", file=sys.stderr, flush=True)
        sys.exit(130)
