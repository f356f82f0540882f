#!/usr/bin/env python3
"""Measured against predicted bus bandwidth, one panel per algorithm (what `cclab compare --plot` draws).

    scripts/plot_compare.py COMPARED.csv OUT.png [--title T]

COMPARED.csv holds measured rows with the prediction beside them (the contract CSV of core/record.hpp with
pred_time_us, pred_busbw_gbps and error filled), as `cclab compare --csv` or `cclab run --predict --csv`
write it. Each panel: measured busbw (solid) and predicted busbw (dashed) against size on a log2 axis,
and the error (predicted - measured) / measured time on a right-hand axis, with the 20% bound shaded.
"""
import argparse
import csv
import math
import os
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # no display on CI or the GPU machines
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

REQUIRED = ("algo", "ranks", "bytes", "busbw_gbps", "pred_busbw_gbps", "time_us", "pred_time_us")


def die(msg):
    print(f"plot_compare: error: {msg}", file=sys.stderr)
    sys.exit(1)


def size_label(b):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= scale:
            v = b / scale
            return f"{v:.0f}{unit}" if abs(v - round(v)) < 1e-9 else f"{v:.3g}{unit}"
    return f"{b:.0f}B"


def read_rows(path):
    if not os.path.isfile(path):
        die(f"no such file '{path}'")
    rows = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None:
            die(f"{path}: empty file (no header)")
        missing = [c for c in REQUIRED if c not in reader.fieldnames]
        if missing:
            die(f"{path}: missing column(s) {', '.join(missing)} (write it with cclab compare --csv)")
        for line, r in enumerate(reader, start=2):
            if not r["pred_time_us"]:
                continue  # a row without a prediction
            try:
                meas, pred = float(r["time_us"]), float(r["pred_time_us"])
                parts = [r["dtype"]] if r.get("dtype", "float") != "float" else []
                parts += [f"{k} {r[k]}" for k in ("dist", "mode") if r.get(k)]
                variant = ", ".join(parts)
                rows.append(
                    {
                        "variant": variant,
                        "density": float(r["density"]) if r.get("density") else None,
                        "algo": r["algo"],
                        "ranks": int(r["ranks"]),
                        "bytes": int(r["bytes"]),
                        "meas": float(r["busbw_gbps"]),
                        "pred": float(r["pred_busbw_gbps"]),
                        "error": (pred - meas) / meas,
                    }
                )
            except (ValueError, ZeroDivisionError) as e:
                die(f"{path}:{line}: malformed row ({e})")
    return rows


def main():
    ap = argparse.ArgumentParser(description="measured vs predicted busbw per algorithm")
    ap.add_argument("csv")
    ap.add_argument("out")
    ap.add_argument("--title", default="predicted vs measured")
    a = ap.parse_args()
    rows = read_rows(a.csv)
    if not rows:
        die(f"{a.csv}: no row with a prediction")

    # One panel per algorithm and rank count (and per index distribution / forced path for sparse rows,
    # which sweep the density at one table size: their x axis is the density).
    groups = defaultdict(list)
    for r in rows:
        groups[(r["algo"], r["ranks"], r["variant"])].append(r)
    keys = sorted(groups)
    ncols = min(3, len(keys))
    nrows = math.ceil(len(keys) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.6 * ncols, 4.1 * nrows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(keys):]:
        ax.set_visible(False)

    for (algo, ranks, variant), ax in zip(keys, flat):
        pts = groups[(algo, ranks, variant)]
        by_density = len({p["bytes"] for p in pts}) < len(pts) and all(p["density"] for p in pts)
        key = (lambda p: p["density"]) if by_density else (lambda p: p["bytes"])
        pts = sorted(pts, key=key)
        xs = [key(p) for p in pts]
        ax.plot(xs, [p["meas"] for p in pts], "-o", color="tab:blue", markersize=3, label="measured")
        ax.plot(xs, [p["pred"] for p in pts], "--s", color="tab:orange", markersize=3, label="predicted")
        if by_density:
            ax.set_xscale("log")
            ax.set_xlabel(f"density (table of {size_label(pts[0]['bytes'])})", fontsize=8)
        else:
            ax.set_xscale("log", base=2)
            lo, hi = int(math.floor(math.log2(xs[0]))), int(math.ceil(math.log2(xs[-1])))
            step = 2 if hi - lo > 12 else 1
            ax.xaxis.set_major_locator(FixedLocator([2.0**e for e in range(lo, hi + 1, step)]))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: size_label(x)))
            ax.set_xlabel("size (bytes)", fontsize=8)
        ax.tick_params(axis="x", labelrotation=45, labelsize=7)
        ax.set_ylabel("busbw (GB/s)", fontsize=8)
        ax.grid(True, alpha=0.3)
        err = ax.twinx()
        err.axhspan(-20, 20, color="green", alpha=0.06)
        err.plot(xs, [100 * p["error"] for p in pts], ":", color="gray", linewidth=1, label="error")
        err.axhline(0, color="gray", linewidth=0.5)
        bound = max(25.0, min(100.0, max(abs(100 * p["error"]) for p in pts) * 1.1))
        err.set_ylim(-bound, bound)
        err.set_ylabel("error (%)", fontsize=8, color="gray")
        err.tick_params(axis="y", labelsize=7, colors="gray")
        abs_err = [abs(p["error"]) for p in pts]
        med = statistics.median(abs_err)
        geo = math.exp(sum(math.log(max(e, 1e-6)) for e in abs_err) / len(abs_err))
        name = f"{algo} (n={ranks}{', ' + variant if variant else ''})"
        ax.set_title(f"{name}\n|error| median {100 * med:.1f}%, geomean {100 * geo:.1f}%, "
                     f"max {100 * max(abs_err):.1f}%", fontsize=8)
        ax.legend(fontsize=7, loc="upper left")

    fig.suptitle(a.title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))  # room for the suptitle
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    fig.savefig(a.out, dpi=110)
    print(f"plot_compare: wrote {a.out} ({len(keys)} panels, {len(rows)} rows)")


if __name__ == "__main__":
    main()
