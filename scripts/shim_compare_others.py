#!/usr/bin/env python3
"""nccl-tests' other binaries through libcclab_nccl.so against NCCL alone, size by size.

Reads the summary.csv that scripts/shim_check.sh writes (one row per run and size), takes for each binary, library
and size the median out-of-place time over that library's runs (shim_check.sh alternates NCCL alone and the shim,
REPEATS times each, because eager rows of small sizes are bound by the host and move from run to run), and writes
others_compare.csv: binary,size,runs,nccl_time_us,cclab_time_us,time_ratio,within_3pct. Prints, per binary, the
median ratio over sizes, the sizes within 3% and the worst size. all_reduce_perf is left out (the shim runs its
own kernels there: allreduce_compare.csv). Where summary.csv has runs through the shim with CCLAB_DISABLE=1
(library cclab_disabled: forwarding only, nothing set up), their median ratio to NCCL alone is printed too.
Last, each run's level (its median time over 64 B-64 KiB) per binary and library: an eager process of nccl-tests
runs at one of two levels (~13 or ~18-19 us on 2 x H200 and 2 x H100) whatever the library, so a size-by-size ratio
of few runs mixes the two. The same comparison is then made between runs at the same level (the runs of a binary
split at the widest gap between their levels, where it exceeds 15%; the level where both libraries have most runs)
and written to <others_compare>_same_level.csv. Runs with their calls captured in CUDA graphs (launch graph: the
GPU's time, no host dispatch per call) are compared the same way and written to <others_compare>_graph.csv.

    python3 scripts/shim_compare_others.py OUT/summary.csv [OUT/others_compare.csv]
"""
import csv
import statistics
import sys
from collections import defaultdict

TOLERANCE = 0.03


def compare(summary_path, launch="eager"):
    times = defaultdict(list)  # (binary, library, size) -> out-of-place times
    for r in csv.DictReader(open(summary_path)):
        if r["binary"] == "all_reduce_perf" or r["launch"] != launch:
            continue
        try:
            t = float(r["oop_time_us"])
        except ValueError:
            continue
        if int(r["size"]) == 0:  # nccl-tests' rows with nothing to move (fewer elements than ranks)
            continue
        times[(r["binary"], r["library"], int(r["size"]))].append(t)
    rows = []
    for (binary, lib, size), nccl in sorted(times.items()):
        if lib != "nccl" or (binary, "cclab", size) not in times:
            continue
        cclab = times[(binary, "cclab", size)]
        tn, tc = statistics.median(nccl), statistics.median(cclab)
        if tn <= 0:
            continue
        ratio = tc / tn
        rows.append((binary, size, min(len(nccl), len(cclab)), tn, tc, ratio, abs(ratio - 1) <= TOLERANCE))
    return rows, disabled_ratios(times)


def runs_of(summary_path):
    """run -> (binary, library, {size: out-of-place time}) for the eager rows of the other binaries."""
    runs = {}
    for r in csv.DictReader(open(summary_path)):
        if r["binary"] == "all_reduce_perf" or r["launch"] != "eager" or int(r["size"]) == 0:
            continue
        try:
            t = float(r["oop_time_us"])
        except ValueError:
            continue
        runs.setdefault(r["run"], (r["binary"], r["library"], {}))[2][int(r["size"])] = t
    return runs


def level(sizes):
    small = [t for s, t in sizes.items() if 64 <= s <= 65536]
    return statistics.median(small) if small else 0.0


def run_levels(runs):
    """(binary, library) -> sorted levels of its runs."""
    out = defaultdict(list)
    for binary, lib, sizes in runs.values():
        out[(binary, lib)].append(level(sizes))
    return {k: sorted(v) for k, v in out.items()}


def same_level(runs):
    """Rows as compare()'s, each binary compared between its NCCL-alone and shim runs of one process level."""
    rows = []
    for binary in sorted({b for b, _, _ in runs.values()}):
        mine = [(level(sizes), lib, sizes) for b, lib, sizes in runs.values()
                if b == binary and lib in ("nccl", "cclab")]
        levels = sorted(lv for lv, _, _ in mine)
        gaps = [(levels[i + 1] / levels[i], i) for i in range(len(levels) - 1) if levels[i] > 0]
        groups = [mine]
        if gaps and max(gaps)[0] > 1.15:  # two levels: split at the widest gap
            i = max(gaps)[1]
            cut = (levels[i] + levels[i + 1]) / 2
            groups = [[m for m in mine if m[0] < cut], [m for m in mine if m[0] >= cut]]
        best = max(groups, key=lambda g: min(sum(m[1] == "nccl" for m in g), sum(m[1] == "cclab" for m in g)))
        nccl = [sizes for _, lib, sizes in best if lib == "nccl"]
        cclab = [sizes for _, lib, sizes in best if lib == "cclab"]
        if not nccl or not cclab:
            continue
        for size in sorted(nccl[0]):
            tn = statistics.median(r[size] for r in nccl if size in r)
            tc = [r[size] for r in cclab if size in r]
            if not tc or tn <= 0:
                continue
            ratio = statistics.median(tc) / tn
            rows.append((binary, size, min(len(nccl), len(cclab)), tn, statistics.median(tc), ratio,
                         abs(ratio - 1) <= TOLERANCE))
    return rows


def disabled_ratios(times):
    """binary -> median over sizes of (forwarding-only time / NCCL alone's time), where such runs exist."""
    out = defaultdict(list)
    for (binary, lib, size), t in times.items():
        nccl = times.get((binary, "nccl", size))
        if lib == "cclab_disabled" and nccl and statistics.median(nccl) > 0:
            out[binary].append(statistics.median(t) / statistics.median(nccl))
    return {b: statistics.median(v) for b, v in out.items()}


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["binary", "size", "runs", "nccl_time_us", "cclab_time_us", "time_ratio", "within_3pct"])
        for b, s, n, tn, tc, ratio, ok in rows:
            w.writerow([b, s, n, f"{tn:.2f}", f"{tc:.2f}", f"{ratio:.3f}", int(ok)])


def table(rows):
    print("binary               runs  median ratio  sizes within 3%  worst size (ratio)")
    for binary in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == binary]
        worst = max(mine, key=lambda r: abs(r[5] - 1))
        within = sum(r[6] for r in mine)
        print(f"{binary:20s} {min(r[2] for r in mine):4d}  {statistics.median(r[5] for r in mine):12.3f}"
              f"  {within:7d} of {len(mine):<5d}  {worst[1]} ({worst[5]:.3f})")


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    rows, disabled = compare(argv[1])
    if not rows:
        print(f"shim_compare_others: no eager rows of other binaries with both libraries in {argv[1]}", file=sys.stderr)
        return 1
    if len(argv) > 2:
        write(argv[2], rows)
    table(rows)
    for binary, ratio in sorted(disabled.items()):
        print(f"{binary} with CCLAB_DISABLE=1 (forwarding only): median ratio {ratio:.3f}")
    runs = runs_of(argv[1])
    print("each run's level, us (median over 64 B-64 KiB):")
    for (binary, lib), levels in sorted(run_levels(runs).items()):
        print(f"  {binary:20s} {lib:15s} " + " ".join(f"{x:.1f}" for x in levels))
    same = same_level(runs)
    if same:
        if len(argv) > 2:
            write(argv[2].removesuffix(".csv") + "_same_level.csv", same)
        print("runs of one process level:")
        table(same)
    graph, _ = compare(argv[1], "graph")
    if graph:
        if len(argv) > 2:
            write(argv[2].removesuffix(".csv") + "_graph.csv", graph)
        print("calls captured in CUDA graphs:")
        table(graph)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
