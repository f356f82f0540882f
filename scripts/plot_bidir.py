#!/usr/bin/env python3
"""Plot of issue 6: busbw and time against size for allreduce.bidir, its modes, allreduce.ring,
allreduce.nccl and sol.bidir_copy, from the executor's records (out-of-place rows).

usage: plot_bidir.py RECORDS.csv OUT.png [--title T]
Left: busbw (GB/s) against size; right: time (us) against size, log-log, where the small-message
latency shows. Rows with wrong > 0 are drawn as red crosses.
"""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ALGOS = ["allreduce.bidir", "allreduce.bidir.ll", "allreduce.bidir.flash", "allreduce.bidir.lamport", "allreduce.bidir.push", "allreduce.bidir.stream",
         "allreduce.bidir.twoshot", "allreduce.bidir.copy", "allreduce.ring", "allreduce.nccl", "sol.bidir_copy"]
STYLE = {"allreduce.bidir": dict(color="black", lw=2.5), "allreduce.nccl": dict(color="tab:green", lw=2.5),
         "allreduce.bidir.stream": dict(color="tab:olive", lw=1.2), "allreduce.bidir.ll": dict(color="tab:blue", lw=1.2),
         "allreduce.bidir.flash": dict(color="tab:orange", lw=1.2), "allreduce.bidir.push": dict(color="tab:cyan", lw=1.2), "allreduce.bidir.lamport": dict(color="tab:pink", lw=1.2), "allreduce.bidir.copy": dict(color="tab:red", lw=1.2),
         "allreduce.bidir.twoshot": dict(color="tab:brown", lw=1.2),
         "allreduce.ring": dict(color="tab:purple", lw=1.2),
         "sol.bidir_copy": dict(color="gray", ls="--", lw=1.5)}


def size_label(b):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= div:
            return "%d%s" % (b // div, unit)
    return "%dB" % b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("records")
    ap.add_argument("out")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    rows = [r for r in csv.DictReader(open(a.records, newline="")) if r["inplace"] == "0" and "mode=" not in r.get("tune", "")]
    series = defaultdict(list)
    for r in rows:
        if r["algo"] in ALGOS:
            series[r["algo"]].append((int(r["bytes"]), float(r["busbw_gbps"]), float(r["time_us"]), int(r["wrong"])))
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5))
    for algo in ALGOS:
        pts = sorted(series.get(algo, []))
        if not pts:
            continue
        x = [p[0] for p in pts]
        style = STYLE.get(algo, dict(lw=1.2))
        left.plot(x, [p[1] for p in pts], marker=".", label=algo, **style)
        right.plot(x, [p[2] for p in pts], marker=".", label=algo, **style)
        bad = [p for p in pts if p[3] != 0]
        for ax, k in ((left, 1), (right, 2)):
            ax.plot([p[0] for p in bad], [p[k] for p in bad], "rx", ms=10)
    ticks = [1 << k for k in range(3, 31, 3)]
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks)
        ax.set_xticklabels([size_label(t) for t in ticks])
        ax.set_xlabel("message size")
        ax.grid(True, which="major", alpha=0.3)
    left.set_ylabel("busbw (GB/s)")
    right.set_yscale("log")
    right.set_ylabel("time (us)")
    left.legend(fontsize=8, loc="upper left")
    fig.suptitle(a.title or "all-reduce on 2 x H200 (cclab run, graph replay, float sum, out of place)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)


if __name__ == "__main__":
    main()
