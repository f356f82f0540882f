#!/usr/bin/env python3
"""torch.distributed all-reduce on 2 GPUs, one process each (NCCL backend), as PyTorch programs run it.

Checks every element against an exact reference (small integers, exact in every type) at each size from 8 B to
--max (powers of 2), then times each size (after warm-up, --iters calls back to back between CUDA events, the
median of --reps batches) and writes <out>/torch_allreduce_<label>.csv: size,dtype,time_us,busbw_gbps,wrong. With
--graph the calls are captured into a CUDA graph (torch.cuda.graph) and the replays are timed and checked instead:
the GPU's time without the host's dispatch of each call, as programs that capture their steps see it. Run it as is for NCCL, and
with LD_PRELOAD=libcclab_nccl.so (CCLAB_NCCL_LIB pointing at the NCCL torch loads) for the shim
(scripts/shim_check.sh does both). Exit status 0 when every element was right, 1 otherwise.

    python3 scripts/torch_allreduce_check.py OUT [--label nccl] [--max 64M] [--dtypes float32,bfloat16,float16]
"""
import argparse
import csv
import json
import os
import socket
import statistics
import sys


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pattern(torch, rank, count, dtype, device):
    # Integers in [-8, 8]: a sum over 2 ranks is exact in float32, float16 and bfloat16.
    i = torch.arange(count, device=device, dtype=torch.int64)
    return ((i * 7 + rank * 13) % 17 - 8).to(dtype)


def trace_batch(torch, dist, y, iters, path):
    """One batch of `iters` calls under PyTorch's profiler (CUPTI: every kernel of the process, the preloaded
    library's included); writes kernel,start_us,dur_us,gap_us (idle time before it on the GPU) to `path` and
    returns the median duration and gap."""
    from torch.profiler import ProfilerActivity, profile

    dist.barrier()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            dist.all_reduce(y)
        torch.cuda.synchronize()
    prof.export_chrome_trace(path + ".json")
    with open(path + ".json") as f:
        events = json.load(f)
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    os.remove(path + ".json")
    rows, end = [], None
    for e in kernels:
        gap = e["ts"] - end if end is not None else 0.0
        rows.append((e["name"][:80], round(e["ts"], 3), round(e["dur"], 3), round(gap, 3)))
        end = max(end or 0.0, e["ts"] + e["dur"])
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["kernel", "start_us", "dur_us", "gap_us"])
        w.writerows(rows)
    if not rows:
        return 0.0, 0.0
    return statistics.median(r[2] for r in rows), statistics.median(r[3] for r in rows[1:] or rows)


def capture(torch, dist, calls):
    """A CUDA graph of `calls` (PyTorch's recipe: a side stream that has run them once, then the capture)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        calls()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    dist.barrier()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        calls()
    torch.cuda.synchronize()
    return g


def check_replays(torch, dist, x, want, rank, count, dtype, device):
    """Wrong elements over three replays of a captured all-reduce of x, its input rewritten before each."""
    g = capture(torch, dist, lambda: dist.all_reduce(x))
    wrong = 0
    for _ in range(3):
        x.copy_(pattern(torch, rank, count, dtype, device))
        torch.cuda.synchronize()
        dist.barrier()
        g.replay()
        torch.cuda.synchronize()
        wrong += int((x != want).sum().item())
    del g
    return wrong


def worker(rank, world, args, port):
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    # device_id: the communicator is created at once, with ncclCommInitRankConfig, as PyTorch does.
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    sizes = []
    size = args.min
    while size <= args.max:
        sizes.append(size)
        size *= 2
    rows = []
    for dtype in dtypes:
        elem = torch.tensor([], dtype=dtype).element_size()
        for size in sizes:
            count = max(1, size // elem)
            # correctness
            x = pattern(torch, rank, count, dtype, device)
            want = sum(pattern(torch, r, count, torch.float32, device) for r in range(world)).to(dtype)
            if args.graph:
                wrong = check_replays(torch, dist, x, want, rank, count, dtype, device)
            else:
                dist.all_reduce(x)
                torch.cuda.synchronize()
                wrong = int((x != want).sum().item())
            # timing: zeros stay zeros however often they are summed
            y = torch.zeros(count, dtype=dtype, device=device)
            for _ in range(args.warmup):
                dist.all_reduce(y)
            batch = None
            if args.graph:
                batch = capture(torch, dist, lambda: [dist.all_reduce(y) for _ in range(args.iters)])
            # As nccl-tests times: --iters calls back to back between two events, after both ranks have met
            # (a call timed alone would also hold the other process's lag); the median of --reps batches.
            per_call = []
            for _ in range(args.reps):
                dist.barrier()
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                if batch is not None:
                    batch.replay()
                else:
                    for _ in range(args.iters):
                        dist.all_reduce(y)
                end.record()
                torch.cuda.synchronize()
                per_call.append(start.elapsed_time(end) * 1000.0 / args.iters)
            t_us = statistics.median(per_call)
            del batch
            if size in args.trace and not args.graph:
                path = os.path.join(args.out, f"trace_{args.label}_{size}_rank{rank}.csv")
                os.makedirs(args.out, exist_ok=True)
                dur, gap = trace_batch(torch, dist, y, args.iters, path)
                print(f"rank {rank} {args.label} {size} B: {t_us:.1f} us a call; kernels: median {dur:.1f} us, "
                      f"idle before each {gap:.1f} us -> {path}", flush=True)
            # every rank's wrong count and time, summed and maxed on rank 0 (int64: never the cclab path)
            stats = torch.tensor([wrong, int(t_us * 1000)], dtype=torch.int64, device=device)
            total = stats.clone()
            dist.all_reduce(total, op=dist.ReduceOp.SUM)
            dist.all_reduce(stats, op=dist.ReduceOp.MAX)
            bytes_ = count * elem
            t = stats[1].item() / 1000.0
            busbw = 2.0 * (world - 1) / world * bytes_ / (t * 1e-6) / 1e9 if t > 0 else 0.0
            rows.append((bytes_, str(dtype).replace("torch.", ""), round(t, 3), round(busbw, 3), int(total[0].item())))
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, f"torch_allreduce_{args.label}.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")  # the shell's awk reads the columns
            w.writerow(["size", "dtype", "time_us", "busbw_gbps", "wrong"])
            w.writerows(rows)
        bad = sum(r[4] for r in rows)
        print(f"torch_allreduce_check ({args.label}): {len(rows)} sizes, {bad} wrong elements -> {path}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="folder for the CSV")
    p.add_argument("--label", default="nccl", help="names the CSV: torch_allreduce_<label>.csv")
    p.add_argument("--min", type=parse_bytes, default=8)
    p.add_argument("--max", type=parse_bytes, default=64 << 20)
    p.add_argument("--dtypes", default="float32,bfloat16,float16")
    p.add_argument("--iters", type=int, default=20, help="calls timed back to back in one batch")
    p.add_argument("--reps", type=int, default=5, help="batches; the median is kept")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--graph", action="store_true", help="capture the calls into a CUDA graph and time (and check) "
                   "its replays")
    p.add_argument("--trace", default="", help="sizes (comma-separated) of which one more batch runs under "
                   "PyTorch's profiler, kernel times to <out>/trace_<label>_<size>_rank<r>.csv")
    args = p.parse_args()
    args.trace = {parse_bytes(t) for t in args.trace.split(",") if t.strip()}
    # Never NVLink multicast (NCCL's NVLS, PyTorch's symmetric memory).
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    # Blocking communicators: the shim follows only those (a non-blocking one forwards every call).
    os.environ.setdefault("TORCH_NCCL_USE_COMM_NONBLOCKING", "0")
    import torch
    import torch.multiprocessing as mp

    if torch.cuda.device_count() < 2:
        print(f"torch_allreduce_check: needs 2 GPUs, found {torch.cuda.device_count()}", file=sys.stderr)
        return 2
    mp.spawn(worker, args=(2, args, free_port()), nprocs=2, join=True)
    path = os.path.join(args.out, f"torch_allreduce_{args.label}.csv")
    with open(path) as f:
        bad = sum(int(r["wrong"]) for r in csv.DictReader(f))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
