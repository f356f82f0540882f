#!/usr/bin/env python3
"""Plot bus bandwidth against message size from cclab records (the contract CSV of core/record.hpp).

    scripts/plot_busbw.py RECORDS.csv [MORE.csv ...] OUT.png [--title T] [--logy] [--panels auto|single|collective]

One line per algorithm (and per backend and rank count when a file mixes several), x = size in bytes on a
log2 axis labelled 8B, 1K, 1M, 1G; y = busbw in GB/s (1e9 B/s, nccl-tests' definition). With many
algorithms of several collectives, one panel per collective keeps the lines readable. Out-of-place rows
are plotted when both in-place and out-of-place rows exist (nccl-tests prints both). Rows whose check
failed (wrong > 0) are drawn with a red cross so that a fast but wrong result cannot pass unnoticed.
"""
import argparse
from collections import defaultdict

import plotlib
from plotlib import plt

PROG = "plot_busbw"
REQUIRED = ("algo", "collective", "backend", "ranks", "bytes", "busbw_gbps")


def die(msg):
    plotlib.die(PROG, msg)


def read_rows(path):
    rows = []
    for line, r in plotlib.read_records(PROG, path, REQUIRED, "is this a cclab records CSV?"):
        try:
            rows.append(
                {
                    "algo": r["algo"],
                    "collective": r["collective"],
                    "backend": r["backend"],
                    "ranks": int(r["ranks"]),
                    "bytes": int(r["bytes"]),
                    "busbw": float(r["busbw_gbps"]),
                    "inplace": r.get("inplace", "0") in ("1", "true"),
                    "wrong": int(r.get("wrong") or 0),
                    "topology": r.get("topology", ""),
                    "note": r.get("note", ""),
                }
            )
        except (ValueError, TypeError) as e:
            die(f"{path}:{line}: malformed row ({e})")
    return rows


def main():
    ap = argparse.ArgumentParser(description="busbw against size from cclab records")
    ap.add_argument("paths", nargs="+", help="one or more records CSV files, then the output PNG")
    ap.add_argument("--title", default=None)
    ap.add_argument("--logy", action="store_true", help="log scale for busbw too")
    ap.add_argument("--panels", choices=("auto", "single", "collective"), default="auto")
    a = ap.parse_args()
    if len(a.paths) < 2:
        ap.error("need RECORDS.csv and OUT.png")
    inputs, out = a.paths[:-1], a.paths[-1]
    if not out.lower().endswith((".png", ".svg", ".pdf")):
        die(f"output '{out}' should end in .png, .svg or .pdf")

    rows = [r for p in inputs for r in read_rows(p)]
    if not rows:
        die(f"no records in {', '.join(inputs)}")

    # Prefer out-of-place rows where a series has both (nccl-tests reports both; they agree to a few %).
    has_oop = {(r["algo"], r["backend"], r["ranks"]) for r in rows if not r["inplace"]}
    rows = [r for r in rows if not r["inplace"] or (r["algo"], r["backend"], r["ranks"]) not in has_oop]

    backends = sorted({r["backend"] for r in rows})
    rank_counts = sorted({r["ranks"] for r in rows})
    series = defaultdict(list)  # (collective, algo, backend, ranks) -> rows
    for r in rows:
        series[(r["collective"], r["algo"], r["backend"], r["ranks"])].append(r)

    collectives = sorted({k[0] for k in series})
    per_collective = a.panels == "collective" or (a.panels == "auto" and len(collectives) > 1 and len(series) > 8)
    panels = collectives if per_collective else ["all"]
    fig, flat = plotlib.panel_grid(len(panels), 6.4, 4.6)

    styles = {"sim": "-", "gpu": "--", "ref": ":"}
    all_sizes = sorted({r["bytes"] for r in rows if r["bytes"] > 0})
    for panel, ax in zip(panels, flat):
        keys = sorted(k for k in series if panel == "all" or k[0] == panel)
        cmap = plt.get_cmap("tab20" if len(keys) > 10 else "tab10")
        for i, key in enumerate(keys):
            _, algo, backend, ranks = key
            pts = sorted((r for r in series[key] if r["bytes"] > 0), key=lambda r: r["bytes"])
            if not pts:
                continue
            label = algo
            if len(backends) > 1:
                label += f" [{backend}]"
            if len(rank_counts) > 1:
                label += f" n={ranks}"
            xs = [r["bytes"] for r in pts]
            ys = [r["busbw"] for r in pts]
            ax.plot(xs, ys, styles.get(backend, "-"), marker="o", markersize=3, linewidth=1.4,
                    color=cmap(i % cmap.N), label=label)
            bad = [(r["bytes"], r["busbw"]) for r in pts if r["wrong"] > 0]
            if bad:
                ax.plot(*zip(*bad), "x", color="red", markersize=9, markeredgewidth=2,
                        label=f"{algo}: wrong results")
        plotlib.size_axis(ax, all_sizes)
        if a.logy:
            ax.set_yscale("log")
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.grid(True, which="major", alpha=0.3)
        if panel != "all":
            ax.set_title(panel, fontsize=11)
        ax.legend(fontsize=7, loc="upper left", ncol=1 if len(keys) <= 8 else 2, framealpha=0.85)

    topo = sorted({r["topology"] for r in rows if r["topology"]})
    title = a.title or f"busbw against size ({', '.join(topo) or 'records'}, {', '.join(backends)})"
    plotlib.save(fig, out, title, dpi=120, title_size=12)
    print(f"plot_busbw: wrote {out} ({len(series)} series, {len(rows)} rows)")


if __name__ == "__main__":
    main()
