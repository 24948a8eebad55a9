#!/usr/bin/python3
"""Side-by-side: libcoll against Open MPI and Gloo (run through compare.sh).

Runs our perf tool and each peer harness ALTERNATELY (ours, MPI, Gloo, ours,
MPI, Gloo, ...) REPS times for each collective, N and medium, takes the
median per size (this machine is noisy), prints busbw per library, the ratio
ours/theirs and #wrong of every run, and writes:
  OUT/results.csv   one row per library x collective x medium x N x size x rep,
                    plus rows with rep=median
  OUT/commands.txt  every command line run, in order
  OUT/logs/         each run's output
  OUT/*.png         busbw vs size (log x), one line per library, the ring
                    model's busbw (= link bandwidth B) dashed where B is known
  OUT/meta.json     machine, versions, options
--doc rewrites docs/PERFORMANCE.md between <!-- compare:begin --> and
<!-- compare:end --> from this run (and --doc-include DIRs of earlier runs)
and copies the plots to docs/perf/.

Media:
  shm     ours: shared memory (default transport); Open MPI: btl vader;
          Gloo: has no shared-memory transport, so TCP over lo.
  tcp     loopback: ours COLL_TRANSPORT=socket; Open MPI btl tcp on lo;
          Gloo tcp on lo.
  netsim  simulated hosts (tools/netsim up -n N --rate R; needs root): one rank
          per network namespace, every link capped at R; ours and Gloo via
          tools/netsim run; Open MPI via mpirun inside host 0 with an rsh agent
          (perf/compare/netsim-rsh.sh) that starts orted in the namespace
          owning each address.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLS = {"allreduce": "all_reduce", "allgather": "all_gather", "broadcast": "broadcast",
         "reducescatter": "reduce_scatter"}
# Collectives a peer's harness does not have (the run is skipped, with a note).
MISSING = {("gloo", "reducescatter")}
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+)\s+(.*)$")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
NETSIM_SUBNET = "10.213.7"
LIB_LABEL = {"ours": "libcoll", "mpi": "Open MPI", "gloo": "Gloo"}


def parse_size(s):
    m = re.fullmatch(r"(\d+)([KMG]?)B?", s.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {s!r}")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


def fmt_load(l):
    return "/".join(f"{x:.1f}" for x in l) if l else "?"


def fmt_bw(x):
    return f"{x:.3g}" if x >= 0.001 else f"{x:.1e}"


def fmt_size(b):
    for unit, sh in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << sh and b % (1 << sh) == 0:
            return f"{b >> sh} {unit}"
    return f"{b} B"


def parse_rate(rate):
    """tc rate ('1gbit', '100mbit', '10mbps') -> bytes/s."""
    m = re.fullmatch(r"([\d.]+)(k|m|g)?(bit|bps)", rate.lower())
    if not m:
        return None
    v = float(m.group(1)) * {None: 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
    return v / 8 if m.group(3) == "bit" else v


def busbw(coll, n, size, time_us):
    """GB/s, perf/common/colls.cc perfSizes: all-reduce 2(N-1)/N, all-gather and reduce-scatter (N-1)/N,
    broadcast 1."""
    if time_us <= 0:
        return 0.0
    factor = {"allreduce": 2.0 * (n - 1) / n, "allgather": (n - 1) / n, "reducescatter": (n - 1) / n,
              "broadcast": 1.0}[coll]
    return size / (time_us * 1e-6) / 1e9 * factor


def parse_table(text):
    """Rows of an nccl-tests table: {size: (oop_us, oop_busbw, oop_wrong, ip_us, ip_busbw, ip_wrong)}."""
    rows = {}
    for line in text.splitlines():
        line = re.sub(r"^\[\d+\] ", "", line)
        m = ROW.match(line)
        if not m:
            continue
        rest = m.group(6).split()
        if len(rest) < 8:
            continue
        try:
            vals = (float(rest[0]), float(rest[2]), rest[3], float(rest[4]), float(rest[6]), rest[7])
        except ValueError:
            continue
        wrong = lambda w: -1 if w == "N/A" else int(w)  # noqa: E731
        rows[int(m.group(1))] = (vals[0], vals[1], wrong(vals[2]), vals[3], vals[4], wrong(vals[5]))
    return rows


class Runner:
    def __init__(self, args):
        self.a = args
        self.build = os.path.abspath(args.build)
        self.out = args.out
        os.makedirs(os.path.join(self.out, "logs"), exist_ok=True)
        self.cmdlog = open(os.path.join(self.out, "commands.txt"), "a")
        self.rows = []  # dicts for the CSV
        self.notes = []
        self.count = 0

    def log(self, msg):
        print(msg, flush=True)

    def tool(self, name):
        return os.path.join(self.build, "perf", name)

    def sweep_args(self, coll):
        a = self.a
        s = ["-b", str(a.min), "-e", str(a.max), "-f", str(a.factor), "-n", str(a.iters), "-w", str(a.warmup),
             "-c", "1"]
        if coll == "broadcast":
            s += ["-r", "0"]
        return s

    def gloo_algo(self, coll):
        return {"allreduce": self.a.gloo_allreduce, "allgather": "ring", "broadcast": self.a.gloo_broadcast}.get(coll, "")

    def command(self, lib, coll, medium, n, store):
        """(argv, env additions) for one run."""
        collrun = os.path.join(self.build, "tools", "collrun")
        netsim = os.path.join(ROOT, "tools", "netsim")
        sw = self.sweep_args(coll)
        if lib == "ours":
            prog = [self.tool(COLLS[coll] + "_perf")] + sw
            if medium == "netsim":
                return [netsim, "run", "-n", str(n), "--"] + prog
            extra = ["-x", "COLL_TRANSPORT=socket"] if medium == "tcp" else []
            return [collrun, "-n", str(n), "--no-prefix"] + extra + ["--"] + prog
        if lib == "gloo":
            prog = [self.tool("gloo_coll_perf"), "-C", coll, "-a", self.gloo_algo(coll), "-S", store] + sw
            if medium == "netsim":
                return [netsim, "run", "-n", str(n), "--"] + prog  # COLL_SOCKET_IFNAME=eth0 -> -i eth0
            # Unbound, as torchrun starts it: bound to one core, Gloo's
            # I/O threads wait behind its main thread (2-4x slower here).
            return [collrun, "-n", str(n), "--no-prefix", "--bind", "none", "--"] + prog[:1] + ["-i", "lo"] + prog[1:]
        # Open MPI
        prog = [self.tool("mpi_coll_perf"), "-C", coll] + sw
        if medium == "shm":
            return MPIRUN + ["-np", str(n), "--mca", "pml", "ob1", "--mca", "btl", "self,vader"] + prog
        if medium == "tcp":
            return MPIRUN + ["-np", str(n), "--mca", "pml", "ob1", "--mca", "btl", "self,tcp",
                             "--mca", "btl_tcp_if_include", "lo"] + prog
        hosts = ",".join(f"{NETSIM_SUBNET}.{i + 1}:1" for i in range(n))
        agent = os.path.join(ROOT, "perf", "compare", "netsim-rsh.sh")
        return [netsim, "exec", "0", "--"] + MPIRUN + [
            "-np", str(n), "--host", hosts, "--mca", "plm_rsh_agent", agent,
            "--mca", "pml", "ob1", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "eth0",
            "--mca", "oob_tcp_if_include", "eth0"] + prog

    def run_one(self, lib, coll, medium, n, rep):
        store = tempfile.mkdtemp(prefix="gloo-store-", dir="/tmp")
        os.chmod(store, 0o777)
        argv = self.command(lib, coll, medium, n, store)
        cmd = shlex.join(argv)
        self.cmdlog.write(cmd + "\n")
        self.cmdlog.flush()
        self.count += 1
        logname = f"{medium}-n{n}-{coll}-{lib}-rep{rep}.txt"
        t0 = time.time()
        try:
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=self.a.run_timeout, cwd=ROOT)
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            out += f"\n[compare: timed out after {self.a.run_timeout} s]\n"
            rc = 124
        finally:
            shutil.rmtree(store, ignore_errors=True)
        with open(os.path.join(self.out, "logs", logname), "w") as f:
            f.write("$ " + cmd + "\n" + out + f"\n[exit {rc}]\n")
        rows = parse_table(out)
        self.log(f"  [{self.count}] {medium} N={n} {coll:<9} {lib:<4} rep {rep}: exit {rc}, {len(rows)} rows, "
                 f"{time.time() - t0:.1f} s")
        if rc != 0 and not rows:
            self.notes.append(f"{LIB_LABEL[lib]} {coll} on {medium}, N={n}, rep {rep}: exit {rc}, no table "
                              f"(log: logs/{logname})")
        for size, v in sorted(rows.items()):
            # busbw again from the time: the tables print it with 2 decimals.
            self.rows.append(dict(library=lib, collective=coll, medium=medium, nranks=n, size=size, rep=rep,
                                  oop_time_us=v[0], oop_busbw=busbw(coll, n, size, v[0]), oop_wrong=v[2],
                                  ip_time_us=v[3], ip_busbw=busbw(coll, n, size, v[3]), ip_wrong=v[5], exit=rc))
        return rc, rows

    def netsim_up(self, n):
        netsim = os.path.join(ROOT, "tools", "netsim")
        subprocess.run([netsim, "down"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cmd = [netsim, "up", "-n", str(n), "--rate", self.a.netsim_rate]
        self.cmdlog.write(shlex.join(cmd) + "\n")
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"netsim up failed (root needed): {r.stdout.strip()}")

    def netsim_down(self):
        netsim = os.path.join(ROOT, "tools", "netsim")
        subprocess.run([netsim, "down"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.cmdlog.write(shlex.join([netsim, "down"]) + "\n")

    def available(self, lib):
        need = {"ours": None, "mpi": "mpi_coll_perf", "gloo": "gloo_coll_perf"}[lib]
        if need and not os.access(self.tool(need), os.X_OK):
            return False
        if lib == "mpi" and not shutil.which("mpirun"):
            return False
        return True

    def run_all(self):
        a = self.a
        libs = [l for l in a.libs if self.available(l)]
        for l in a.libs:
            if l not in libs:
                self.notes.append(f"{LIB_LABEL[l]}: not built in {a.build} (install the package, reconfigure); skipped")
        for lib, coll in sorted(MISSING):
            if lib in libs and coll in a.colls:
                self.notes.append(f"{LIB_LABEL[lib]}: its harness has no {coll}; skipped")
        for medium in a.media:
            for n in a.nranks:
                if medium == "netsim":
                    self.netsim_up(n)
                try:
                    self.log(f"== {medium}, N={n}: {a.reps} alternating rounds of {', '.join(libs)}")
                    for rep in range(1, a.reps + 1):
                        for coll in a.colls:
                            for lib in libs:
                                if (lib, coll) not in MISSING:
                                    self.run_one(lib, coll, medium, n, rep)
                finally:
                    if medium == "netsim":
                        self.netsim_down()


def medians(rows):
    """{(lib, coll, medium, n, size): dict of medians + wrong sums + reps}."""
    groups = {}
    for r in rows:
        if r["rep"] == "median":
            continue
        groups.setdefault((r["library"], r["collective"], r["medium"], int(r["nranks"]), int(r["size"])), []).append(r)
    med = {}
    for k, rs in groups.items():
        m = {}
        for col in ("oop", "ip"):
            m[col + "_time_us"] = statistics.median(float(r[col + "_time_us"]) for r in rs)
            m[col + "_busbw"] = busbw(k[1], k[3], k[4], m[col + "_time_us"])  # of the median time
        for col in ("oop_wrong", "ip_wrong"):
            m[col] = sum(max(0, int(r[col])) for r in rs)
        m["reps"] = len(rs)
        m["wrong_runs"] = sum(1 for r in rs if int(r["oop_wrong"]) != 0 or int(r["ip_wrong"]) != 0)
        med[k] = m
    return med


def model_bw(meta, medium):
    """Link bandwidth B in GB/s for the ring model line, or None."""
    if meta.get("model_bw"):
        return float(meta["model_bw"])
    if medium == "netsim" and meta.get("netsim_rate"):
        b = parse_rate(meta["netsim_rate"])
        return b / 1e9 if b else None
    return None


def tables(med, meta, col, fmt="text"):
    """Per (medium, N, coll): rows of medians.  Returns list of (title, header, rows)."""
    out = []
    keys = sorted({(k[2], k[3], k[1]) for k in med},
                  key=lambda t: (["shm", "tcp", "netsim"].index(t[0]) if t[0] in ("shm", "tcp", "netsim") else 9,
                                 t[1], list(COLLS).index(t[2])))
    for medium, n, coll in keys:
        libs = [l for l in ("ours", "mpi", "gloo") if any(k[0] == l and k[1:4] == (coll, medium, n) for k in med)]
        sizes = sorted({k[4] for k in med if k[1:4] == (coll, medium, n)})
        header = ["size"] + [f"{LIB_LABEL[l]} busbw" for l in libs] + \
                 [f"ours/{LIB_LABEL[l]}" for l in libs if l != "ours"] + ["#wrong (" + "/".join(libs) + ")"]
        rows = []
        for s in sizes:
            vals = {l: med.get((l, coll, medium, n, s)) for l in libs}
            r = [fmt_size(s)]
            for l in libs:
                v = vals[l]
                r.append(fmt_bw(v[col + "_busbw"]) if v else "-")
            ours = vals.get("ours")
            for l in libs:
                if l == "ours":
                    continue
                v = vals[l]
                # ours/theirs busbw = their time / our time (same size, same factor)
                if ours and v and ours[col + "_time_us"] > 0:
                    r.append(f"{v[col + '_time_us'] / ours[col + '_time_us']:.3g}")
                else:
                    r.append("-")
            r.append("/".join(str(vals[l]["oop_wrong"] + vals[l]["ip_wrong"]) if vals[l] else "-" for l in libs))
            rows.append(r)
        gl = meta.get("gloo_algos", {})
        note = ""
        if "gloo" in libs:
            note = f"; Gloo: {gl.get(coll, '?')}" + (" over TCP on lo (no shm transport)" if medium == "shm" else "")
        title = f"{medium}, N={n}, {coll} (busbw GB/s, medians of {meta.get('reps')}; {col}{note})"
        out.append((title, header, rows))
    return out


def print_tables(tbls):
    for title, header, rows in tbls:
        print("\n# " + title)
        widths = [max(len(str(x)) for x in [h] + [r[i] for r in rows]) for i, h in enumerate(header)]
        print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
        for r in rows:
            print("  ".join(str(x).rjust(w) for x, w in zip(r, widths)))


def md_tables(tbls):
    lines = []
    for title, header, rows in tbls:
        lines += ["", f"**{title}**", "", "| " + " | ".join(header) + " |",
                  "|" + "|".join("---:" for _ in header) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def plots(med, meta, col, outdir):
    """One PNG per (medium, N): a panel per collective.  Returns file names."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("compare: no matplotlib (apt-get install python3-matplotlib): no plots", file=sys.stderr)
        return []
    files = []
    for medium, n in sorted({(k[2], k[3]) for k in med}):
        colls = [c for c in COLLS if any(k[1:4] == (c, medium, n) for k in med)]
        fig, axes = plt.subplots(1, len(colls), figsize=(5 * len(colls), 4), squeeze=False)
        for ax, coll in zip(axes[0], colls):
            for lib, style in (("ours", "o-"), ("mpi", "s-"), ("gloo", "^-")):
                pts = sorted((k[4], v[col + "_busbw"]) for k, v in med.items()
                             if k[:4] == (lib, coll, medium, n) and k[4] > 0)
                if pts:
                    label = LIB_LABEL[lib]
                    if lib == "gloo":
                        label += f" ({meta.get('gloo_algos', {}).get(coll, '')}" + (", TCP lo)" if medium == "shm" else ")")
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label, markersize=4)
            b = model_bw(meta, medium)
            if b:
                ax.axhline(b, linestyle="--", color="gray",
                           label=f"ring model, B={b:.3g} GB/s" + (" (link rate)" if medium == "netsim" else ""))
            ax.set_xscale("log", base=2)
            ax.set_xlabel("size (bytes)")
            ax.set_ylabel("busbw (GB/s)")
            ax.set_title(f"{coll}, N={n}, {medium}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(f"busbw vs size, medians of {meta.get('reps')} alternating runs ({col}), {meta.get('date', '')[:10]}",
                     fontsize=9)
        fig.tight_layout()
        name = f"compare-{medium}-n{n}.png"
        fig.savefig(os.path.join(outdir, name), dpi=90)
        plt.close(fig)
        files.append(name)
    return files


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    mpi = ""
    try:
        mpi = subprocess.run(["mpirun", "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        pass
    return dict(nproc=os.cpu_count(), cpu=cpu, mem=mem, kernel=platform.release(), mpi=mpi, gloo="Gloo 0.5.0 (Debian libgloo-dev 0.0~git20220518)")


def load_dir(d):
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    with open(os.path.join(d, "results.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["rep"] != "median"]
    return meta, rows


def write_doc(dirs, col):
    doc = os.path.join(ROOT, "docs", "PERFORMANCE.md")
    imgdir = os.path.join(ROOT, "docs", "perf")
    os.makedirs(imgdir, exist_ok=True)
    lines = []
    for d in dirs:
        meta, rows = load_dir(d)
        med = medians(rows)
        m = meta["machine"]
        lines += ["", f"Run of {meta['date']} — {m['nproc']} cores ({m['cpu']}), {m['mem']}, Linux {m['kernel']}; "
                  f"{m['mpi']}; {m['gloo']}. Build: `{meta['build']}` (Release). "
                  f"{meta['reps']} alternating rounds (ours, Open MPI, Gloo, ours, ...), medians; "
                  f"the {'in-place' if col == 'ip' else 'out-of-place'} column; {meta['iters']} timed iterations "
                  f"after {meta['warmup']} warm-up calls per size; every timed size checked exactly. "
                  f"Load average (1/5/15 min) at start {fmt_load(meta.get('loadavg_start'))}, at end "
                  f"{fmt_load(meta.get('loadavg_end'))} (2 cores: above ~2 means other jobs shared the CPUs); "
                  f"{meta.get('seconds', '?')} s in all.",
                  "", "Command:", "", "    " + meta["invocation"], "",
                  "What it ran (one line per library and medium; `-C`/tool per collective; full list in "
                  "`commands.txt` of the run):", ""]
        for line in meta.get("command_examples", []):
            lines.append("    " + line.replace(ROOT + "/", ""))
        if meta.get("notes"):
            lines += ["", "Notes from the run:", ""] + [f"- {n}" for n in meta["notes"]]
        lines += md_tables(tables(med, meta, col))
        lines.append("")
        for name in plots(med, meta, col, imgdir):
            lines.append(f"![{name}](perf/{name})")
        lines.append("")
    with open(doc) as f:
        text = f.read()
    begin, end = "<!-- compare:begin -->", "<!-- compare:end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"compare: {doc} has no {begin} ... {end} markers")
    pre, rest = text.split(begin, 1)
    _, post = rest.split(end, 1)
    with open(doc, "w") as f:
        f.write(pre + begin + "\n<!-- generated by perf/compare/compare.sh --doc; do not edit by hand -->\n" +
                "\n".join(lines) + "\n" + end + post)
    print(f"compare: rewrote the compare section of {doc}; plots in {imgdir}")


def main():
    p = argparse.ArgumentParser(prog="perf/compare/compare.sh", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="build dir (Release) with perf/ and tools/collrun (default build)")
    p.add_argument("--colls", default="allreduce,allgather,broadcast",
                   help="comma list; also reducescatter (Open MPI only among the peers)")
    p.add_argument("-n", "--nranks", default="2,4", help="comma list of N (default 2,4)")
    p.add_argument("--media", default="shm,tcp", help="comma list of shm, tcp, netsim (default shm,tcp)")
    p.add_argument("--libs", default="ours,mpi,gloo")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--min", type=parse_size, default=32)
    p.add_argument("--max", type=parse_size, default=64 << 20)
    p.add_argument("--factor", type=int, default=8)
    p.add_argument("--full", action="store_true", help="16 B .. 256 MiB, factor 4")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--oop", action="store_true", help="compare the out-of-place column (default: in-place, "
                   "where every library's call is native)")
    p.add_argument("--netsim-rate", default="1gbit")
    p.add_argument("--model-bw", type=float, default=None, help="link bandwidth B in GB/s for the model line")
    p.add_argument("--gloo-allreduce", default="ring_chunked", choices=["ring_chunked", "ring"])
    p.add_argument("--gloo-broadcast", default="one_to_all", choices=["one_to_all", "binomial"])
    p.add_argument("--run-timeout", type=int, default=600, help="seconds per run")
    p.add_argument("--out", default=None, help="results dir (default perf-results/compare-DATE)")
    p.add_argument("--doc", action="store_true", help="rewrite the compare section of docs/PERFORMANCE.md")
    p.add_argument("--doc-include", default="", help="comma list of earlier result dirs to put in the doc too")
    p.add_argument("--doc-only", action="store_true", help="run nothing: rebuild the doc from --doc-include")
    a = p.parse_args()
    if a.full:
        a.min, a.max, a.factor = 16, 256 << 20, 4
    a.colls = [c for c in a.colls.split(",") if c]
    a.nranks = [int(x) for x in a.nranks.split(",") if x]
    a.media = [m for m in a.media.split(",") if m]
    a.libs = [l for l in a.libs.split(",") if l]
    for c in a.colls:
        if c not in COLLS:
            p.error(f"unknown collective {c}")
    for m in a.media:
        if m not in ("shm", "tcp", "netsim"):
            p.error(f"unknown medium {m}")
    for l in a.libs:
        if l not in LIB_LABEL:
            p.error(f"unknown library {l}")
    if a.reps < 1:
        p.error("--reps must be >= 1")
    col = "oop" if a.oop else "ip"
    include = [d for d in a.doc_include.split(",") if d]
    if a.doc_only:
        write_doc(include, col)
        return 0
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    a.out = os.path.abspath(a.out or os.path.join(ROOT, "perf-results", f"compare-{stamp}"))
    os.makedirs(a.out, exist_ok=True)
    os.chdir(ROOT)
    r = Runner(a)
    t_start = time.time()
    print(f"compare: results in {a.out}")
    if "netsim" in a.media and os.geteuid() != 0:
        p.error("netsim needs root")
    if "shm" in a.media and "gloo" in a.libs:
        print("compare: note: Gloo has no shared-memory transport; on 'shm' it runs over TCP on lo")
    meta = dict(date=datetime.datetime.now().isoformat(timespec="seconds"), machine=machine(), build=a.build,
                loadavg_start=os.getloadavg(),
                invocation="perf/compare/compare.sh " + shlex.join(sys.argv[1:]), reps=a.reps, iters=a.iters,
                warmup=a.warmup, colls=a.colls, nranks=a.nranks, media=a.media, libs=a.libs,
                netsim_rate=a.netsim_rate if "netsim" in a.media else None, model_bw=a.model_bw,
                gloo_algos={"allreduce": a.gloo_allreduce, "allgather": "ring", "broadcast": a.gloo_broadcast})
    # One example command per library and medium (collective: the first one).
    ex = []
    for medium in a.media:
        for lib in a.libs:
            coll = next((c for c in a.colls if (lib, c) not in MISSING), None)
            if r.available(lib) and coll is not None:
                ex.append(f"[{medium}] " + shlex.join(r.command(lib, coll, medium, a.nranks[0], "$STORE")))
    meta["command_examples"] = ex
    try:
        r.run_all()
    finally:
        rows = r.rows
        med = medians(rows)
        fields = ["library", "collective", "medium", "nranks", "size", "rep", "oop_time_us", "oop_busbw",
                  "oop_wrong", "ip_time_us", "ip_busbw", "ip_wrong", "exit"]
        with open(os.path.join(a.out, "results.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for row in rows:
                w.writerow(row)
            for (lib, coll, medium, n, size), m in sorted(med.items()):
                w.writerow(dict(library=lib, collective=coll, medium=medium, nranks=n, size=size, rep="median",
                                oop_time_us=m["oop_time_us"], oop_busbw=m["oop_busbw"], oop_wrong=m["oop_wrong"],
                                ip_time_us=m["ip_time_us"], ip_busbw=m["ip_busbw"], ip_wrong=m["ip_wrong"],
                                exit=""))
        meta["notes"] = r.notes
        meta["loadavg_end"] = os.getloadavg()
        meta["seconds"] = round(time.time() - t_start)
        with open(os.path.join(a.out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
    print_tables(tables(med, meta, col))
    for n in r.notes:
        print("note: " + n)
    files = plots(med, meta, col, a.out)
    print(f"\ncompare: {len(rows)} rows; CSV {a.out}/results.csv; commands {a.out}/commands.txt; "
          f"plots {', '.join(files) or 'none'}")
    if a.doc:
        write_doc([a.out] + include, col)
    wrong = sum(m["oop_wrong"] + m["ip_wrong"] for m in med.values())
    if wrong:
        print(f"compare: {wrong} wrong values in total (see #wrong)")
        return 1
    if not rows:
        print("compare: no results")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
