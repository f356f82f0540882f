#!/usr/bin/env python3
"""cclab.estimate inside a framework's scheduling decision.

1. With PyTorch installed, and where its Inductor has the estimator hook (``torch._inductor.config.
   estimate_op_runtime``, a callable from a scheduler node to nanoseconds), ``install_torch_hook()`` plugs
   cclab in for the collectives (all-reduce, all-gather, reduce-scatter, all-to-all) and leaves every other node
   to Inductor's own estimate.
2. Without it (this script's default run): a hand-written overlap planner of data-parallel training. The
   backward pass produces gradients layer by layer; each bucket of gradients is all-reduced while the layers
   before it still compute. The planner picks the bucket size that hides the most communication, from
   cclab.estimate's times of each bucket's all-reduce on the machine (dgx-h100 by default), and prints the
   step time with and without overlap.

    python3 python/examples/overlap_planner.py [--topo dgx-h100] [--ranks 8] [--dtype bfloat16]
"""
import argparse

import cclab

# ---------------------------------------------------------------------------------------------------------
# 1. PyTorch's hook, where the installed PyTorch has one

def install_torch_hook(topo="dgx-h100", profile=None):
    """Sets Inductor's estimate_op_runtime (called with a scheduler node, returns nanoseconds) to cclab for
    collective kernels, Inductor's own estimate for the rest. True when the installed PyTorch has the hook.
    (Written against PyTorch's Inductor sources; not run here, where no PyTorch is installed.)"""
    try:
        import torch
        from torch._inductor import comm_analysis, ir
        from torch._inductor import config as inductor_config
    except ImportError:
        return False
    if not hasattr(inductor_config, "estimate_op_runtime") or not hasattr(ir, "_CollectiveKernel"):
        return False
    kinds = {"ALL_REDUCE": "allreduce", "ALL_GATHER": "allgather", "REDUCE_SCATTER": "reducescatter"}
    dtypes = {torch.float32: "float", torch.float16: "half", torch.bfloat16: "bfloat16"}

    def estimate_ns(snode):
        n = getattr(snode, "node", None)
        if isinstance(n, ir._CollectiveKernel):
            try:
                coll = kinds.get(comm_analysis.get_collective_type(n).name)
                if coll is not None:
                    nbytes = comm_analysis.get_collective_input_size_bytes(n)
                    ranks = comm_analysis.get_collective_group_size(n)
                    dtype = dtypes.get(n.get_layout().dtype, "float")
                    return cclab.estimate(coll, nbytes, ranks, topo, dtype=dtype, profile=profile) * 1e9
            except cclab.InputError:
                pass  # e.g. more ranks than the topology has GPUs: Inductor's estimate
        return snode.get_estimated_runtime()

    inductor_config.estimate_op_runtime = estimate_ns
    return True


# ---------------------------------------------------------------------------------------------------------
# 2. A hand-written overlap planner

# A 32-layer transformer (hidden 2048, MLP 8192, bf16), backward in reverse: per layer its gradient tensors in
# the order backward produces them, (bytes, backward seconds on one GPU spent before the tensor is ready).
# The biases and norms are tiny tensors: all-reduced one by one they would cost a latency each.
def _layer(t_layer=1.2e-3, h=2048, f=8192):
    tensors = [(2 * h * f, t_layer / 3), (2 * f, 0.0), (2 * f * h, t_layer / 3), (2 * h, 0.0), (2 * h, 0.0)]
    tensors += [(2 * h * h, t_layer / 12) for _ in range(4)] + [(2 * h, 0.0) for _ in range(4)] + [(2 * h, 0.0)]
    return tensors


LAYERS = [t for _ in range(32) for t in _layer()]


def plan(layers, bucket_bytes, topo, ranks, dtype):
    """Gradients in the order backward produces them; a bucket's all-reduce starts when its last gradient is
    ready and after the previous bucket's all-reduce (one communication stream). Returns (step seconds,
    buckets)."""
    t_compute, comm_free, buckets, pending = 0.0, 0.0, [], 0
    for nbytes, t_bwd in layers:
        t_compute += t_bwd
        pending += nbytes
        if pending >= bucket_bytes:
            start = max(t_compute, comm_free)
            comm_free = start + cclab.estimate("allreduce", pending, ranks, topo, dtype=dtype)
            buckets.append(pending)
            pending = 0
    if pending:
        start = max(t_compute, comm_free)
        comm_free = start + cclab.estimate("allreduce", pending, ranks, topo, dtype=dtype)
        buckets.append(pending)
    return max(t_compute, comm_free), buckets


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topo", default="dgx-h100")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--dtype", default="bfloat16")
    a = ap.parse_args()

    if install_torch_hook(a.topo):
        print("PyTorch Inductor's estimate_op_runtime now asks cclab for collectives")
    else:
        print("no PyTorch with Inductor's estimate_op_runtime hook here: the hand-written planner only")

    compute = sum(t for _, t in LAYERS)
    total = sum(b for b, _ in LAYERS)
    serial = compute + cclab.estimate("allreduce", total, a.ranks, a.topo, dtype=a.dtype)
    print(f"{len(LAYERS)} gradient tensors, {total / 2**20:.0f} MiB, backward {compute * 1e3:.1f} ms on "
          f"{a.ranks} GPUs of {a.topo}")
    print(f"no overlap (one all-reduce after backward): {serial * 1e3:.2f} ms")
    best = None
    for mib in (0, 1, 4, 16, 25, 64, 128, 256, 1024):
        step, buckets = plan(LAYERS, mib << 20, a.topo, a.ranks, a.dtype)
        what = "one per tensor   " if mib == 0 else f"buckets >= {mib:4d} MiB"
        print(f"  {what}: {len(buckets):4d} all-reduces, step {step * 1e3:7.2f} ms")
        if best is None or step < best[0]:
            best = (step, mib)
    print(f"best bucket size: {best[1]} MiB, step {best[0] * 1e3:.2f} ms "
          f"({100 * (1 - best[0] / serial):.1f}% shorter than no overlap)")


if __name__ == "__main__":
    main()
