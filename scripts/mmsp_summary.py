#!/usr/bin/env python3
"""The goals of issue 7 read back from the records of scripts/measure_matmul_sparse.sh.

    python3 scripts/mmsp_summary.py RESULTS_DIR [CROSSOVER_PREDICTIONS_CSV]

RESULTS_DIR holds mmsp_cmatmul.csv, mmsp_sparse.csv and mmsp_crossover.csv. The optional second file is
`cclab compare --measured RESULTS_DIR/mmsp_crossover.csv --topo PROFILE --csv FILE`: the same rows with
the simulator's pred_time_us, from which the predicted crossover density is found exactly as the measured
one (forced-sparse against forced-dense time, interpolated linearly between the bracketing densities).
"""
import csv
import os
import sys


def rows(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def crossover(rs, dist, key):
    """Density where forced sparse stops beating forced dense: (value, text)."""
    ts, td = {}, {}
    for r in rs:
        if r.get("algo") != "allreduce.sparse" or r.get("dist") != dist or not r.get(key):
            continue
        p = float(r["density"])
        if r.get("mode") == "sparse":
            ts[p] = float(r[key])
        elif r.get("mode") == "dense":
            td[p] = float(r[key])
    prev = None
    for p in sorted(ts):
        if p not in td:
            continue
        diff = ts[p] - td[p]  # > 0: dense is faster
        if diff >= 0:
            if prev is None:
                return p, f"<={p:.4f}"
            p0, d0 = prev
            x = p0 + (p - p0) * (-d0) / (diff - d0)
            return x, f"{x:.4f}"
        prev = (p, diff)
    if prev is None:
        return None, "no forced pairs"
    return None, f">{prev[0]:.4f} (sparse wins at every density)"


def num(r, k):
    try:
        return float(r.get(k, ""))
    except ValueError:
        return None


def main():
    out = sys.argv[1]
    pred = sys.argv[2] if len(sys.argv) > 2 else ""
    print("\n# summary (goals of issue 7)")
    mm = rows(os.path.join(out, "mmsp_cmatmul.csv"))
    if mm:
        print(f"{'algo':34} {'shape':15} {'dtype':9} {'time_us':>9} {'TFLOP/s':>8} {'tc_util':>7} "
              f"{'/full':>6} {'x_nccl':>7} {'wrong':>5}  goals (<=1.10 x full, >=1.4 x nccl_cublas)")
        for r in mm:
            full, xn = num(r, "ratio_vs_cublas_full"), num(r, "speedup_vs_nccl_cublas")
            goal = ""
            if r["algo"] in ("allgather_matmul.ring", "allgather_matmul.ring_bidir") and full and xn:
                goal = f"{'met' if full <= 1.10 else 'MISSED'} / {'met' if xn >= 1.4 else 'MISSED'}"
            print(f"{r['algo']:34} {r['shape']:15} {r['dtype']:9} {float(r['time_us']):9.1f} {r.get('tflops', ''):>8} "
                  f"{r.get('util_vs_bound', ''):>7} {r.get('ratio_vs_cublas_full', ''):>6} "
                  f"{r.get('speedup_vs_nccl_cublas', ''):>7} {r['wrong']:>5}  {goal}")
    sp = rows(os.path.join(out, "mmsp_sparse.csv"))
    if sp:
        print(f"\n{'algo':27} {'density':>7} {'dist':8} {'path':6} {'union':12} {'time_us':>10} {'x_dense':>8} "
              f"{'x_quad':>7} {'wrong':>5}  goals (1%: >=20 x dense; match >=50 x quadratic)")
        for r in sp:
            goal = ""
            xd, xq = num(r, "speedup_vs_dense_nccl"), num(r, "speedup_vs_quadratic")
            if r["algo"] == "allreduce.sparse" and r.get("density") == "0.01" and xd:
                goal = "met" if xd >= 20 else "MISSED"
            if r["algo"] in ("index_match.binsearch", "index_match.window") and xq:
                goal = "met" if xq >= 50 else "MISSED"
            print(f"{r['algo']:27} {r.get('density', ''):>7} {r.get('dist', ''):8} {r.get('path', ''):6} "
                  f"{r.get('union_mode', ''):12} {float(r['time_us']):10.1f} {r.get('speedup_vs_dense_nccl', ''):>8} "
                  f"{r.get('speedup_vs_quadratic', ''):>7} {r['wrong']:>5}  {goal}")
    cx = rows(os.path.join(out, "mmsp_crossover.csv"))
    pr = rows(pred)
    if cx:
        first = cx[0]
        print(f"\n# sparse/dense crossover ({first.get('rows')} x {first.get('dim')} float, {first.get('ranks')} ranks)"
              f"{'' if pr else ': no simulator predictions given'}")
        for dist in ("uniform", "zipf"):
            m, mt = crossover(cx, dist, "time_us")
            if not pr:
                print(f"{dist:8} measured {mt}")
                continue
            p, pt = crossover(pr, dist, "pred_time_us")
            factor = max(m, p) / min(m, p) if m and p else None
            verdict = "" if factor is None else f"factor {factor:.2f} ({'met' if factor <= 1.5 else 'MISSED'}: <= 1.5)"
            print(f"{dist:8} measured {mt:12} simulator {pt:12} {verdict}")
        # The automatic switch against the faster forced path at each density.
        best = {}
        for r in cx:
            if r.get("algo") == "allreduce.sparse" and r.get("mode") in ("sparse", "dense"):
                k = (r["dist"], r["density"])
                if k not in best or float(r["time_us"]) < best[k][1]:
                    best[k] = (r["mode"], float(r["time_us"]))
        picks = [(r["dist"], r["density"], r.get("path"), best.get((r["dist"], r["density"]), ("?", 0))[0])
                 for r in cx if r.get("algo") == "allreduce.sparse" and r.get("mode") == "auto"]
        agree = sum(1 for d, p, took, faster in picks if took == faster)
        print(f"automatic switch took the faster forced path at {agree} of {len(picks)} (dist, density) points"
              + "".join(f"; {d} {p}: took {t}, faster {f}" for d, p, t, f in picks if t != f))


if __name__ == "__main__":
    main()
