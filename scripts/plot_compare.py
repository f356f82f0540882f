#!/usr/bin/env python3
"""Measured against predicted bus bandwidth, one panel per algorithm (what `cclab compare --plot` draws).

    scripts/plot_compare.py COMPARED.csv OUT.png [--title T]

COMPARED.csv holds measured rows with the prediction beside them (the contract CSV of core/record.hpp with
pred_time_us, pred_busbw_gbps and error filled), as `cclab compare --csv` or `cclab run --predict --csv`
write it. Each panel: measured busbw (solid) and predicted busbw (dashed) against size on a log2 axis,
and the error (predicted - measured) / measured time on a right-hand axis, with the 20% bound shaded.
"""
import argparse
import math
import statistics
from collections import defaultdict

import plotlib

PROG = "plot_compare"
REQUIRED = ("algo", "ranks", "bytes", "busbw_gbps", "pred_busbw_gbps", "time_us", "pred_time_us")


def die(msg):
    plotlib.die(PROG, msg)


def read_rows(path):
    rows = []
    for line, r in plotlib.read_records(PROG, path, REQUIRED, "write it with cclab compare --csv"):
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
    fig, flat = plotlib.panel_grid(len(keys), 5.6, 4.1)

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
            ax.set_xlabel(f"density (table of {plotlib.size_label(pts[0]['bytes'])})", fontsize=8)
        else:
            plotlib.size_axis(ax, xs)
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

    plotlib.save(fig, a.out, a.title, dpi=110, title_size=11)
    print(f"plot_compare: wrote {a.out} ({len(keys)} panels, {len(rows)} rows)")


if __name__ == "__main__":
    main()
