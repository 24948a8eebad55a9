#!/usr/bin/python3
"""perf/compare/compare.sh: its table parser and medians on canned input,
then a tiny real run (shm, N=2, 2 reps) whose CSV must hold one row per
library x collective x size x rep, and medians that match the rows.
Usage: compare_check.py BUILD_DIR SCRATCH_DIR"""
import csv
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "perf", "compare"))
import compare  # noqa: E402

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def canned():
    text = """[0] # nThread 1 nGpus 1 minBytes 8 maxBytes 64
[0] #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[0]            8             2     float     sum      -1     0.36    0.02    0.02      0     0.30    0.03    0.03      0
[0]           64            16     float     sum      -1    12345    0.00    0.00      3     100.5    0.00    0.00    N/A
[0] # Out of bounds values : 1 FAILED
garbage 1 2 3
"""
    rows = compare.parse_table(text)
    check(sorted(rows) == [8, 64], "parse_table finds the two rows (with [rank] prefixes)")
    check(rows.get(8) == (0.36, 0.02, 0, 0.30, 0.03, 0), "parse_table row 8 B")
    check(rows.get(64) == (12345.0, 0.0, 3, 100.5, 0.0, -1), "parse_table row 64 B (#wrong 3, N/A -> -1)")
    check(abs(compare.busbw("allreduce", 4, 1 << 20, 1000.0) - (1 << 20) / 1e-3 / 1e9 * 1.5) < 1e-12,
          "busbw: all-reduce factor 2(N-1)/N")
    check(abs(compare.busbw("allgather", 4, 1 << 20, 1000.0) - (1 << 20) / 1e-3 / 1e9 * 0.75) < 1e-12,
          "busbw: all-gather factor (N-1)/N")
    check(abs(compare.busbw("reducescatter", 4, 1 << 20, 1000.0) - (1 << 20) / 1e-3 / 1e9 * 0.75) < 1e-12,
          "busbw: reduce-scatter factor (N-1)/N")
    check(("gloo", "reducescatter") in compare.MISSING and ("mpi", "reducescatter") not in compare.MISSING,
          "reduce-scatter: Open MPI's harness runs it, Gloo's is skipped")
    rows = []
    for rep, (t, w) in enumerate([(10.0, 0), (30.0, 2), (20.0, 0)], 1):
        rows.append(dict(library="ours", collective="broadcast", medium="shm", nranks=2, size=1000, rep=rep,
                         oop_time_us=t, oop_busbw=0, oop_wrong=w, ip_time_us=t * 2, ip_busbw=0, ip_wrong=0))
    for rep, t in enumerate([10.0, 40.0], 1):
        rows.append(dict(library="mpi", collective="broadcast", medium="shm", nranks=2, size=1000, rep=rep,
                         oop_time_us=t, oop_busbw=0, oop_wrong=0, ip_time_us=t, ip_busbw=0, ip_wrong=-1))
    med = compare.medians(rows)
    o = med[("ours", "broadcast", "shm", 2, 1000)]
    m = med[("mpi", "broadcast", "shm", 2, 1000)]
    check(o["oop_time_us"] == 20.0 and o["ip_time_us"] == 40.0, "median of 3 (10, 30, 20) = 20")
    check(abs(o["oop_busbw"] - 1000 / 20e-6 / 1e9) < 1e-12, "median busbw is that of the median time")
    check(o["oop_wrong"] == 2 and o["wrong_runs"] == 1 and o["reps"] == 3, "wrong values summed over reps")
    check(m["oop_time_us"] == 25.0 and m["ip_wrong"] == 0, "median of 2 = mean; N/A wrong counts as 0")
    t = compare.tables(med, {"reps": 3}, "oop")
    check(len(t) == 1 and t[0][2][0][-2] == "1.25", "table ratio ours/MPI = their time / our time")


def real_run(build, scratch):
    shutil.rmtree(scratch, ignore_errors=True)
    argv = [os.path.join(ROOT, "perf", "compare", "compare.sh"), "--build", build, "--reps", "2", "-n", "2",
            "--media", "shm", "--min", "32", "--max", "2K", "--factor", "8", "--iters", "3", "--warmup", "1",
            "--run-timeout", "120", "--out", scratch]
    print("$ " + " ".join(argv), flush=True)
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=280)
    print(p.stdout)
    check(p.returncode == 0, f"compare.sh exit status {p.returncode}")
    libs = ["ours"] + [l for l, t in (("mpi", "mpi_coll_perf"), ("gloo", "gloo_coll_perf"))
                       if os.access(os.path.join(build, "perf", t), os.X_OK) and
                       (l != "mpi" or shutil.which("mpirun"))]
    colls = ["allreduce", "allgather", "broadcast"]
    sizes = [32, 256, 2048]
    try:
        with open(os.path.join(scratch, "results.csv")) as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        check(False, f"results.csv: {e}")
        return
    reps = [r for r in rows if r["rep"] != "median"]
    meds = [r for r in rows if r["rep"] == "median"]
    want = {(l, c, s, str(rep)) for l in libs for c in colls for s in sizes for rep in (1, 2)}
    got = {(r["library"], r["collective"], int(r["size"]), r["rep"]) for r in reps}
    check(got == want, f"one CSV row per library x collective x size x rep ({len(want)} for {', '.join(libs)}; "
          f"missing {sorted(want - got)[:4]}, extra {sorted(got - want)[:4]})")
    check(len(meds) == len(libs) * len(colls) * len(sizes), "one median row per library x collective x size")
    check(all(r["medium"] == "shm" and r["nranks"] == "2" for r in rows), "medium and N columns")
    check(all(int(r["oop_wrong"]) == 0 and int(r["ip_wrong"]) == 0 for r in rows), "#wrong 0 in every row")
    ok = True
    for m in meds:
        ts = [float(r["ip_time_us"]) for r in reps
              if (r["library"], r["collective"], r["size"]) == (m["library"], m["collective"], m["size"])]
        if abs(statistics.median(ts) - float(m["ip_time_us"])) > 1e-9 * max(1.0, float(m["ip_time_us"])):
            ok = False
            print(f"  median mismatch {m['library']} {m['collective']} {m['size']}: {ts} -> {m['ip_time_us']}")
    check(ok and meds, "median rows are the medians of the rep rows")
    with open(os.path.join(scratch, "commands.txt")) as f:
        ncmd = sum(1 for _ in f)
    check(ncmd == len(libs) * len(colls) * 2, f"commands.txt: one line per run ({ncmd})")
    check("# shm, N=2, allreduce" in p.stdout, "prints the median tables")
    try:
        import matplotlib  # noqa: F401
        check(os.path.getsize(os.path.join(scratch, "compare-shm-n2.png")) > 1000, "plot written")
    except ImportError:
        print("(no matplotlib: plot not checked)")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    build, scratch = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not os.access(os.path.join(build, "perf", "all_reduce_perf"), os.X_OK):
        print("SKIP: perf tools not built")
        return 77
    canned()
    real_run(build, scratch)
    print(f"{len(failures)} failure(s)" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
