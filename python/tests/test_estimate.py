"""cclab.estimate: exact at the table's sizes (the rows of cclab.simulate, so of `cclab sim`), and how far the
log-log interpolation between them strays from a simulation at sizes in between.

The interpolation error (dgx-h100, 8 ranks, float; the table 1 B .. 1 GiB by factors of 2, refined around steps;
probes at 1.25, 1.5 and 1.75 x 2^k from 1 KiB to 7 GiB, the largest beyond the table: extrapolated) is printed by
test_interpolation_error_between_table_sizes (pytest -s) and bounded there: see INTERPOLATION_BOUNDS, whose
comments give the figures measured at commit 6c27671.
"""
import math
import time

import pytest

import cclab

# algorithm -> (median, max) of |estimate - simulate| / simulate over the probes: the bounds asserted. The
# measured figures (median / max) are in the comments; NCCL's protocol and algorithm switches (LL, LL128,
# Simple) are steps in time that a power law between two sizes rounds off, which is where the max comes from.
INTERPOLATION_BOUNDS = {
    "allreduce.nccl": (0.02, 0.15),  # measured: median 0.15%, max 1.43%
    "allgather.nccl": (0.02, 0.15),  # median 0.14%, max 1.46%
    "reducescatter.nccl": (0.02, 0.15),  # median 0.14%, max 1.46%
    "alltoall.nccl": (0.02, 0.15),  # median 0.12%, max 1.43%
    "broadcast.nccl": (0.02, 0.15),  # median 0.84%, max 9.58% (a step the refinement does not see)
    "allreduce.ring": (0.02, 0.15),  # median 0.08%, max 1.44%
}


def test_exact_at_the_table_sizes():
    est = cclab.estimator("allreduce", 8, "dgx-h100")
    pts = est.points()
    assert pts[0][0] == 4 and pts[-1][0] == 1 << 30  # the smallest size of one float, up to 1 GiB
    rows = cclab.simulate("dgx-h100", "allreduce.nccl", [b for b, _ in pts], frame=False)
    assert [r["bytes"] for r in rows] == [b for b, _ in pts]
    for r, (b, t) in zip(rows, pts):
        assert t == r["time_us"] * 1e-6
        assert cclab.estimate("allreduce", b, 8, "dgx-h100") == t


def probes():
    out = []
    for k in range(10, 33):
        for f in (1.25, 1.5, 1.75):
            out.append(int(round(f * (1 << k) / 64)) * 64)  # whole elements per rank for 8 ranks of any dtype
    return out


@pytest.mark.parametrize("algo", sorted(INTERPOLATION_BOUNDS))
def test_interpolation_error_between_table_sizes(algo):
    coll, variant = algo.split(".")
    sizes = probes()
    rows = cclab.simulate("dgx-h100", algo, sizes, frame=False)
    assert [r["bytes"] for r in rows] == sizes
    errs = []
    for r in rows:
        e = cclab.estimate(coll, r["bytes"], 8, "dgx-h100", algo=variant)
        errs.append(abs(e - r["time_us"] * 1e-6) / (r["time_us"] * 1e-6))
    errs.sort()
    med, mx = errs[len(errs) // 2], errs[-1]
    print(f"\n{algo}: interpolation error over {len(errs)} sizes 1.25-1.75 x 2^k (1 KiB..8 GiB): "
          f"median {100 * med:.2f}%, max {100 * mx:.2f}%")
    bmed, bmax = INTERPOLATION_BOUNDS[algo]
    assert med <= bmed and mx <= bmax


def test_outside_the_table():
    est = cclab.estimator("allreduce", 8, "dgx-h100")
    (b0, t0), (b1, t1) = est.points()[-2:]
    assert est(0) == 0.0
    assert est(1) == est.points()[0][1]  # below one element per rank: the smallest size's time
    assert est(2 * b1) == pytest.approx(t1 + (t1 - t0) / (b1 - b0) * b1)
    with pytest.raises(cclab.InputError):
        est(-1)


def test_names_aliases_and_arguments():
    a = cclab.estimate("allreduce", 1 << 20, 8, "dgx-h100")
    assert a == cclab.estimate("all_reduce", 1 << 20, 8, "dgx-h100")
    assert a == cclab.estimate("allreduce", 1 << 20, 8, "dgx-h100", algo="allreduce.nccl")
    assert cclab.estimate("reduce_scatter_tensor", 1 << 20, 8, "dgx-h100") == \
        cclab.estimate("reducescatter", 1 << 20, 8, "dgx-h100")
    ring = cclab.estimate("allreduce", 1 << 30, 8, "dgx-h100", algo="ring")
    assert ring > 0 and ring != cclab.estimate("allreduce", 1 << 30, 8, "dgx-h100")
    half = cclab.estimate("allreduce", 1 << 20, 4, "dgx-h100", dtype="half")
    assert half > 0
    t = cclab.topology("pcie-2socket")
    assert cclab.estimate("allreduce", 1 << 20, 4, t) == cclab.estimate("allreduce", 1 << 20, 4, "pcie-2socket")


def test_bad_input():
    with pytest.raises(cclab.InputError):
        cclab.estimate("allrdeuce", 1024, 8, "dgx-h100")
    with pytest.raises(cclab.InputError):
        cclab.estimate("allreduce", 1024, 8, "dgx-h100", algo="nope")
    with pytest.raises(cclab.InputError):
        cclab.estimate("allreduce", 1024, 9, "dgx-h100")  # more ranks than GPUs
    with pytest.raises(cclab.InputError):
        cclab.estimate("allreduce", 1024, 8, "dgx-h999")
    with pytest.raises(cclab.InputError):
        cclab.estimate("allreduce", 1024, 8, "dgx-h100", dtype="double")
    with pytest.raises(cclab.InputError):
        cclab.estimate("allreduce", 1024, 8, "dgx-h100", algo="allgather.ring")
    with pytest.raises(cclab.InputError):
        cclab.estimate("allgather_matmul", 1024, 8, "dgx-h100", algo="ring")
    with pytest.raises(cclab.InputError):
        cclab.estimate("allreduce", 1024, 0, "dgx-h100")
    with pytest.raises(cclab.InputError):
        cclab.estimate("allreduce", -5, 8, "dgx-h100")
    with pytest.raises(TypeError):
        cclab.estimate("allreduce", "1M", 8, "dgx-h100")


def test_a_cached_call_is_cheap():
    """Not the benchmark (python/benchmarks/bench_estimate.py records the numbers): a sanity bound only."""
    cclab.estimate("allreduce", 1 << 20, 8, "dgx-h100")
    n = 20000
    t0 = time.perf_counter()
    for i in range(n):
        cclab.estimate("allreduce", 1 << 20, 8, "dgx-h100")
    per_call = (time.perf_counter() - t0) / n
    assert per_call < 200e-6, f"{per_call * 1e6:.1f} us per cached call"
    assert math.isfinite(per_call)
