#!/usr/bin/env python3
"""Short summary of `cclab run` records (GPU executor): the goals of issues 5 and 6 as ratios.

usage: exec_summary.py RECORDS.csv [more.csv ...]
Prints, per size, busbw of the all-reduces against allreduce.nccl and sol.bidir_copy (out-of-place
rows), the small-message time ratio to NCCL, the general-lowering floor at >= 64 MiB, and the total
number of wrong elements. Reads only the contract columns; standard library only.
"""
import csv
import sys
from collections import defaultdict


def load(paths):
    rows = []
    for p in paths:
        with open(p, newline="") as f:
            rows += list(csv.DictReader(f))
    return rows


def main():
    rows = load(sys.argv[1:])
    wrong = sum(int(r["wrong"]) for r in rows if r["wrong"] not in ("", "-1"))
    by = defaultdict(dict)  # (algo) -> bytes -> (time, busbw)
    dtype = rows[0]["dtype"] if rows else "float"  # the sweep's dtype (one per file)
    for r in rows:
        if r["inplace"] != "0" or r["dtype"] != dtype or r["redop"] != "sum":
            continue
        if "mode=" in r.get("tune", ""):
            continue  # runs with a forced mode (calibration, tuning): table below
        by[r["algo"]][int(r["bytes"])] = (float(r["time_us"]), float(r["busbw_gbps"]))
    nccl, sol = by.get("allreduce.nccl", {}), by.get("sol.bidir_copy", {})
    ar = sorted(a for a in by if a.startswith("allreduce.") and a != "allreduce.nccl")
    print("# busbw (GB/s) of all-reduces, out of place, %s sum; x = ratio to allreduce.nccl, s = ratio to sol.bidir_copy" % dtype)
    print("%12s %9s %9s  %s" % ("bytes", "nccl", "sol", "  ".join("%-26s" % a[10:36] for a in ar)))
    for b in sorted(set(nccl) | set(sol)):
        cells = []
        for a in ar:
            v = by[a].get(b)
            if not v:
                cells.append("%-26s" % "-")
                continue
            x = v[1] / nccl[b][1] if b in nccl and nccl[b][1] > 0 else float("nan")
            s = v[1] / sol[b][1] if b in sol and sol[b][1] > 0 else float("nan")
            if b <= 65536 and b in nccl:
                cells.append("%-26s" % ("%.1fus t/nccl=%.2f" % (v[0], v[0] / nccl[b][0])))
            else:
                cells.append("%-26s" % ("%.0f x%.2f s%.2f" % (v[1], x, s)))
        print("%12d %9s %9s  %s" % (b, "%.1f" % nccl[b][1] if b in nccl else "-", "%.1f" % sol[b][1] if b in sol else "-",
                                    "  ".join(cells)))
    print("# general lowering floor (>= 64 MiB: busbw / matching .nccl busbw, want >= 0.95)")
    for algo, base in [("allreduce.ring", "allreduce.nccl"), ("allgather.ring", "allgather.nccl"),
                       ("reducescatter.ring", "reducescatter.nccl"), ("broadcast.pipeline", "broadcast.nccl"),
                       ("alltoall.direct", "alltoall.nccl")]:
        a, n = by.get(algo, {}), by.get(base, {})
        ratios = ["%dM:%.2f" % (b >> 20, a[b][1] / n[b][1]) for b in sorted(a) if b >= 64 << 20 and b in n and n[b][1] > 0]
        print("  %-20s %s" % (algo, " ".join(ratios) if ratios else "no rows"))
    tuned = defaultdict(dict)
    for r in rows:
        if "mode=" in r.get("tune", "") and r["inplace"] == "0":
            tuned[r["algo"] + " " + r["tune"]][int(r["bytes"])] = (float(r["time_us"]), float(r["busbw_gbps"]))
    if tuned:
        sizes = sorted({b for t in tuned.values() for b in t})
        print("# tuned runs: busbw (GB/s) by size (time in us below 1 MiB)")
        print("%-60s %s" % ("run", " ".join("%8s" % (("%dK" % (b >> 10)) if b < 1 << 20 else "%dM" % (b >> 20)) for b in sizes)))
        for name in sorted(tuned):
            t = tuned[name]
            cells = []
            for b in sizes:
                v = t.get(b)
                cells.append("%8s" % ("-" if not v else ("%.1fu" % v[0] if b < 1 << 20 else "%.0f" % v[1])))
            print("%-60s %s" % (name[:60], " ".join(cells)))
    print("# wrong elements in all records: %d" % wrong)


if __name__ == "__main__":
    main()
