#!/usr/bin/env python3
"""torch_check.py LIBNCCL [--nranks N] [--timeout S]

PyTorch's own NCCL backend (torch.distributed, backend "nccl") run on
libcoll's libnccl.so.2: N processes, all on cuda:0 (NCCL itself refuses
two ranks on one GPU; libcoll does not), each with LIBNCCL preloaded, so
torch's libnccl.so.2 need is met by ours and NVIDIA's copy in the wheel is
never used.  That it is ours that runs is shown three ways: libcoll's own
log (COLL_DEBUG=INFO) must show each rank's communicator coming up; NCCL's
functions, looked up the way torch's libraries bind them (the global
scope), must be LIBNCCL's; torch.cuda.nccl.version() must equal LIBNCCL's
ncclGetVersion.
(torch itself maps the wheel's libnccl.so.2 too, by path and RTLD_LOCAL,
in _preload_cuda_deps: its symbols stay out of the global scope.)
Each rank then checks, with exact expected values:
  - all_reduce (sum float32, max int32, sum bfloat16 of small integers),
    broadcast, all_gather_into_tensor, reduce_scatter_tensor, reduce, a
    send/recv ring (batch_isend_irecv) and barrier;
  - one DistributedDataParallel step of a small MLP: every rank's gradients
    equal the mean of the gradients each rank's batch gives alone (the
    ranks' data come from per-rank seeds, so every rank computes all of
    them itself, without the library);
  - a subgroup (new_group of ranks 0 and 1: ncclCommSplit or a fresh
    communicator, whichever torch takes).
Exit 0 when every rank passed; 1 when a check failed or a rank died or
hung past --timeout; 77 when there is no torch or no CUDA device (skip).
--backend gloo runs the same checks on the CPU over gloo, without libcoll
(to check this script itself where there is no GPU).
"""
import argparse
import ctypes
import os
import re
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# What torch's libraries call (a sample): resolved in the global scope.
NCCL_FUNCTIONS = ["ncclGetVersion", "ncclCommInitRankConfig", "ncclAllReduce", "ncclAllGather", "ncclReduceScatter",
                  "ncclBroadcast", "ncclSend", "ncclRecv", "ncclGroupStart", "ncclGroupEnd", "ncclCommSplit",
                  "ncclCommGetAsyncError", "ncclCommAbort", "ncclCommDestroy"]


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p), ("dli_sname", ctypes.c_char_p),
                ("dli_saddr", ctypes.c_void_p)]


def global_scope_owner(name):
    """The file that defines `name` first in the process's global scope."""
    libc = ctypes.CDLL(None)
    libc.dlsym.restype = ctypes.c_void_p
    libc.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
    addr = libc.dlsym(None, name.encode())  # RTLD_DEFAULT
    if not addr:
        return None
    info = DlInfo()
    if libc.dladdr(ctypes.c_void_p(addr), ctypes.byref(info)) == 0 or not info.dli_fname:
        return None
    return os.path.realpath(info.dli_fname.decode())


def loaded_nccl_libs():
    libs = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "libnccl" in os.path.basename(path):
                libs.add(os.path.realpath(path))
    return libs


def rank_main(rank, nranks, lib, backend):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    failures = []

    def check(name, ok, detail=""):
        if not ok:
            failures.append(f"{name} {detail}".strip())
            print(f"[{rank}] FAIL {name} {detail}", flush=True)

    gpu = backend == "nccl"
    if gpu:
        torch.cuda.set_device(0)
        dev = torch.device("cuda", 0)
        dist.init_process_group("nccl", rank=rank, world_size=nranks, device_id=dev)
    else:
        dev = torch.device("cpu")
        dist.init_process_group(backend, rank=rank, world_size=nranks)
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    # A first collective makes sure the communicator exists (torch creates it lazily).
    t = torch.full((4,), float(rank + 1), device=dev)
    dist.all_reduce(t)
    sync()
    libs = loaded_nccl_libs()
    want = os.path.realpath(lib)
    version = torch.cuda.nccl.version() if gpu else None
    if gpu:
        owners = {f: global_scope_owner(f) for f in NCCL_FUNCTIONS}
        wrong = {f: o for f, o in owners.items() if o != want}
        check("global_scope", not wrong, f"NCCL functions not from {want}: {wrong}")
        check("loaded", want in libs, f"{want} not mapped: {sorted(libs)}")
        code = ctypes.c_int(0)
        ctypes.CDLL(want).ncclGetVersion(ctypes.byref(code))
        ours = (code.value // 10000, code.value % 10000 // 100, code.value % 100)
        check("version", tuple(version) == ours, f"torch reports {version}, {want} {ours}")
    if rank == 0 and gpu:
        others = sorted(libs - {os.path.realpath(lib)})
        print(f"torch {torch.__version__}, torch.cuda.nccl.version() {version}, NCCL functions from "
              f"{os.path.realpath(lib)}; also mapped (torch's RTLD_LOCAL preload, unused): {others or 'none'}",
              flush=True)
    elif rank == 0:
        print(f"torch {torch.__version__} on {backend} (the script's own check, no libcoll)", flush=True)
    total = nranks * (nranks + 1) / 2
    check("all_reduce.first", torch.equal(t.cpu(), torch.full((4,), total)), str(t.cpu().tolist()))

    n = 1 << 20
    base = torch.arange(n, device=dev, dtype=torch.float32)
    t = base + rank
    dist.all_reduce(t)
    expect = base * nranks + total - nranks
    check("all_reduce.sum.f32", torch.equal(t, expect))

    t = torch.tensor([rank * 7 - 3, -rank, 100 + rank], device=dev, dtype=torch.int32)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    check("all_reduce.max.i32", t.cpu().tolist() == [(nranks - 1) * 7 - 3, 0, 100 + nranks - 1], str(t.cpu().tolist()))

    # (gloo has no bfloat16 sum: half there.)
    t = torch.full((3000,), float(rank + 1), device=dev, dtype=torch.bfloat16 if gpu else torch.float16)
    dist.all_reduce(t)
    check(f"all_reduce.sum.{t.dtype}", bool((t.float() == total).all()), str(t[:4].float().cpu().tolist()))

    t = torch.arange(5000, device=dev, dtype=torch.float64) * (rank == 1) + rank
    dist.broadcast(t, src=1)
    check("broadcast", torch.equal(t, torch.arange(5000, device=dev, dtype=torch.float64) + 1))

    mine = torch.arange(1000, device=dev, dtype=torch.float32) + 1000 * rank
    out = torch.empty(1000 * nranks, device=dev)
    if gpu:
        dist.all_gather_into_tensor(out, mine)
    else:  # (Debian's torch 1.13: gloo has only the list form)
        dist.all_gather(list(out.chunk(nranks)), mine)
    check("all_gather", torch.equal(out, torch.arange(1000 * nranks, device=dev, dtype=torch.float32)))

    if gpu:  # (gloo has no reduce-scatter)
        inp = torch.arange(1000 * nranks, device=dev, dtype=torch.float32) * (rank + 1)
        out = torch.empty(1000, device=dev)
        dist.reduce_scatter_tensor(out, inp)
        expect = (torch.arange(1000, device=dev, dtype=torch.float32) + 1000 * rank) * total
        check("reduce_scatter", torch.equal(out, expect))

    t = torch.full((777,), float(rank + 1), device=dev)
    dist.reduce(t, dst=0)
    if rank == 0:
        check("reduce", bool((t == total).all()), str(t[:4].cpu().tolist()))

    send = torch.full((4096,), float(rank), device=dev)
    recv = torch.empty(4096, device=dev)
    ops = [dist.P2POp(dist.isend, send, (rank + 1) % nranks), dist.P2POp(dist.irecv, recv, (rank - 1) % nranks)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    sync()
    check("sendrecv.ring", bool((recv == float((rank - 1) % nranks)).all()), str(recv[:4].cpu().tolist()))

    dist.barrier()

    # One DDP step: the gradients must be the mean of the ranks' own.
    def make_model():
        torch.manual_seed(1234)
        return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(dev)

    def batch_of(r):
        g = torch.Generator().manual_seed(100 + r)
        return torch.randn(32, 64, generator=g).to(dev), torch.randint(0, 10, (32,), generator=g).to(dev)

    ddp = nn.parallel.DistributedDataParallel(make_model(), device_ids=[0] if gpu else None)
    x, y = batch_of(rank)
    nn.functional.cross_entropy(ddp(x), y).backward()
    sync()
    expect = None
    for r in range(nranks):
        ref = make_model()
        xr, yr = batch_of(r)
        nn.functional.cross_entropy(ref(xr), yr).backward()
        grads = [p.grad.double() for p in ref.parameters()]
        expect = grads if expect is None else [a + b for a, b in zip(expect, grads)]
    worst = 0.0
    for p, e in zip(ddp.module.parameters(), expect):
        e = e / nranks
        worst = max(worst, float((p.grad.double() - e).abs().max() / (e.abs().max() + 1e-30)))
    # float32 sums in another order: relative error a few ulps.
    check("ddp.grad", worst < 1e-5, f"worst relative difference {worst:.3g}")
    if rank == 0:
        print(f"ddp: worst relative gradient difference to the one-process mean {worst:.3g}", flush=True)

    if nranks >= 2:
        sub = dist.new_group([0, 1])
        if rank < 2:
            t = torch.full((10,), float(rank + 10), device=dev)
            dist.all_reduce(t, group=sub)
            check("subgroup", bool((t == 21.0).all()), str(t[:4].cpu().tolist()))
    dist.barrier()
    dist.destroy_process_group()
    print(f"[{rank}] {'FAILED ' + str(len(failures)) if failures else 'passed'}", flush=True)
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--nranks", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank is not None:
        return rank_main(args.rank, args.nranks, args.lib, args.backend)
    if not os.path.exists(args.lib):
        print(f"FAIL: {args.lib} not found")
        return 1
    want_gpu = "torch.cuda.is_available()" if args.backend == "nccl" else "True"
    probe = subprocess.run([sys.executable, "-c", f"import torch, sys; sys.exit(0 if {want_gpu} else 3)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: no torch with a CUDA device ({(probe.stderr.strip().splitlines() or ['rc 3'])[-1]})")
        return 77
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), PYTHONUNBUFFERED="1")
    if args.backend == "nccl":
        env["LD_PRELOAD"] = os.path.realpath(args.lib) + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
        # libcoll's communicator-ready lines (stderr), checked below.
        env.update(COLL_DEBUG="INFO", COLL_DEBUG_SUBSYS="INIT")
    logs = [tempfile.TemporaryFile("w+") for _ in range(args.nranks)]
    procs = [subprocess.Popen([sys.executable, __file__, args.lib, "--nranks", str(args.nranks), "--rank", str(r),
                               "--backend", args.backend], env=env, stdout=logs[r], stderr=subprocess.STDOUT)
             for r in range(args.nranks)]
    deadline = time.monotonic() + args.timeout
    rcs = [None] * args.nranks
    while None in rcs and time.monotonic() < deadline:
        rcs = [p.poll() for p in procs]
        time.sleep(0.1)
    for r, p in enumerate(procs):
        if rcs[r] is None:
            p.kill()
            p.wait()
            print(f"FAIL: rank {r} still running after {args.timeout:.0f} s: killed")
    bad = [r for r, rc in enumerate(rcs) if rc != 0]
    for r, f in enumerate(logs):
        f.seek(0)
        text = f.read()
        f.close()
        print("\n".join(ln if ln.startswith(f"[{r}]") else f"[{r}] {ln}" for ln in text.splitlines()[-40:]))
        if args.backend == "nccl" and not re.search(rf"rank {r}/{args.nranks} ready in", text):
            print(f"FAIL: rank {r}: no libcoll 'rank {r}/{args.nranks} ready' line: its communicator was not libcoll's")
            if r not in bad:
                bad.append(r)
    if bad:
        print(f"FAIL: ranks {bad} (exit codes {[rcs[r] for r in bad]})")
        return 1
    print(f"torch_check: {args.nranks} ranks passed ({args.backend}, {os.path.realpath(args.lib)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
