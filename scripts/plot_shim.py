#!/usr/bin/env python3
"""nccl-tests' all_reduce_perf through libcclab_nccl.so beside NCCL alone, from the allreduce_compare.csv that
scripts/shim_check.sh writes (one row per launch style and size, out-of-place figures).

usage: plot_shim.py allreduce_compare.csv OUT.png [--title T]

Left: busbw (GB/s) of both libraries against size, eager and under CUDA graphs (-G). Right: the shim's time
over NCCL's per size (below 1: the shim is faster), with the issue's goals drawn where they apply: 0.6 x NCCL's
time up to 64 KiB and 1 / 1.5 of it (1.5 x busbw) from 1 to 8 MiB.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plotlib import die, panel_grid, read_records, save, size_axis  # noqa: E402

PROG = "plot_shim.py"
COLUMNS = ["launch", "size", "nccl_time_us", "cclab_time_us", "nccl_busbw", "cclab_busbw"]
LAUNCH_STYLE = {"eager": dict(ls="-", marker="o"), "graph": dict(ls="--", marker="s")}


def series(rows):
    """{launch: [(size, nccl_us, cclab_us, nccl_busbw, cclab_busbw)]} sorted by size, sizes above 0."""
    out = {}
    for line, r in rows:
        try:
            size = int(r["size"])
            values = tuple(float(r[c]) for c in COLUMNS[2:])
        except ValueError:
            die(PROG, f"line {line}: a size or time that is not a number")
        if size > 0:
            out.setdefault(r["launch"], []).append((size,) + values)
    for v in out.values():
        v.sort()
    return out


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("compare_csv")
    ap.add_argument("out_png")
    ap.add_argument("--title", default="all_reduce_perf: libcclab_nccl.so (LD_PRELOAD) against NCCL")
    args = ap.parse_args()
    data = series(read_records(PROG, args.compare_csv, COLUMNS, "written by scripts/shim_check.sh"))
    if not data:
        die(PROG, f"{args.compare_csv}: no rows with a size above 0")
    fig, (bw, ratio) = panel_grid(2, 6.5, 4.5)
    sizes = [p[0] for v in data.values() for p in v]
    for launch, points in sorted(data.items()):
        style = LAUNCH_STYLE.get(launch, dict(ls=":", marker="x"))
        x = [p[0] for p in points]
        bw.plot(x, [p[3] for p in points], color="tab:green", ms=3, label=f"NCCL, {launch}", **style)
        bw.plot(x, [p[4] for p in points], color="black", ms=3, label=f"cclab shim, {launch}", **style)
        ratio.plot(x, [p[2] / p[1] if p[1] > 0 else float("nan") for p in points], color="black", ms=3,
                   label=launch, **style)
    bw.set_ylabel("busbw (GB/s)")
    bw.set_title("busbw, out of place")
    ratio.axhline(1.0, color="tab:green", lw=1, label="NCCL")
    ratio.hlines(0.6, 8, 64 << 10, color="tab:red", lw=1, ls=":", label="goal: 0.6 x time to 64K")
    ratio.hlines(1 / 1.5, 1 << 20, 8 << 20, color="tab:orange", lw=1, ls=":", label="goal: 1.5 x busbw, 1-8M")
    ratio.set_ylabel("shim time / NCCL time")
    ratio.set_title("time ratio (below 1: the shim is faster)")
    for ax in (bw, ratio):
        size_axis(ax, sizes)
        ax.set_xlabel("size")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, args.out_png, args.title, dpi=110, title_size=11)
    print(f"{PROG}: wrote {args.out_png}")


if __name__ == "__main__":
    main()
