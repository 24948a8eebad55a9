#!/usr/bin/env python3
"""torch_ddp_mlp.py — PyTorch DDP (gloo) on the trainer's MLP, for the side by side.

Runs, with Debian's python3-torch on this machine:
  1. one process, batch N*B: the compute time of a step (forward, backward, SGD);
  2. N processes with DistributedDataParallel over gloo, batch B each: the step time;
  3. the same N processes: dist.all_reduce (gloo) of the gradient bytes alone.
One thread per process (torch.set_num_threads(1)), like coll-train's one-thread
OpenBLAS, so both use the same cores the same way.  Prints one line per
measurement, "key value", medians of --steps steps after --warmup.

usage: torch_ddp_mlp.py [--hidden 2048,2048] [--batch 64] [--nranks 2] [--steps 30]
"""
import argparse
import os
import statistics
import sys
import time


def build(torch, hidden):
    layers, width = [], 784
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    layers.append(torch.nn.Linear(width, 10))
    return torch.nn.Sequential(*layers)


def time_steps(torch, model, opt, batch, steps, warmup, sync=None):
    x = torch.randn(batch, 784)
    y = torch.randint(0, 10, (batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        if sync:
            sync()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def worker(rank, args, queue):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("gloo", rank=rank, world_size=args.nranks)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(build(torch, args.hidden), bucket_cap_mb=25)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = time_steps(torch, model, opt, args.batch, args.steps, args.warmup)
    nbytes = sum(p.numel() for p in model.parameters()) * 4
    flat = torch.zeros(nbytes // 4)
    times = []
    for i in range(args.warmup + args.steps):
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(flat)
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
    if rank == 0:
        queue.put({"ddp_step_ms": 1e3 * step, "gloo_allreduce_ms": 1e3 * statistics.median(times),
                   "grad_bytes": nbytes})
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", default="2048,2048")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--nranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--port", type=int, default=29611)
    args = ap.parse_args()
    args.hidden = [int(h) for h in args.hidden.split(",")]
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError:
        print("torch_ddp_mlp.py: python3-torch is not installed (apt-get install python3-torch)", file=sys.stderr)
        return 3
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = build(torch, args.hidden)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    one = time_steps(torch, model, opt, args.batch * args.nranks, args.steps, args.warmup)
    print(f"torch_version {torch.__version__}")
    print(f"one_process_step_ms {1e3 * one:.2f}   (batch {args.batch * args.nranks})")
    os.environ["MASTER_PORT"] = str(args.port)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, args, queue)) for r in range(args.nranks)]
    for p in procs:
        p.start()
    res = queue.get(timeout=600)
    for p in procs:
        p.join(timeout=60)
    print(f"grad_bytes {res['grad_bytes']}")
    print(f"ddp_step_ms {res['ddp_step_ms']:.2f}   ({args.nranks} processes x batch {args.batch}, gloo)")
    print(f"gloo_allreduce_ms {res['gloo_allreduce_ms']:.2f}   (the gradient bytes alone)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
