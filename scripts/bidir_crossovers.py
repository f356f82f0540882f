#!/usr/bin/env python3
"""Picks allreduce.bidir's crossovers from a calibration sweep (cclab run --algo allreduce.bidir
--tune mode=X ... records), the way measure.sh does before its main sweep.

usage: bidir_crossovers.py CALIBRATION.csv
Prints one --tune string: flash_engine, ll_pdl, auto_ll_max, auto_flash_max, auto_large. Rules: per size,
the fastest mode (out-of-place rows); ll is used up to the largest size from which it is fastest
at every smaller size; flash up to the last size where it beats the best large-message mode; the
large mode is the one with the highest busbw over the sizes >= 64 MiB. Standard library only.
"""
import csv
import sys
from collections import defaultdict


def tune_of(row):
    return dict(kv.split("=", 1) for kv in row.get("tune", "").split(",") if "=" in kv)


def main():
    rows = [r for r in csv.DictReader(open(sys.argv[1], newline="")) if r["inplace"] == "0" and r["wrong"] == "0"]
    t = defaultdict(dict)  # variant -> bytes -> time_us
    for r in rows:
        k = tune_of(r)
        mode = k.get("mode", "")
        if mode == "flash":
            mode = "flash:" + k.get("flash_engine", "ldg")
        if mode == "ll":
            mode = "ll:" + ("nopdl" if k.get("ll_pdl") == "0" else "pdl")
        t[mode][int(r["bytes"])] = float(r["time_us"])

    def best_flash_engine():
        a, b = t.get("flash:ldg", {}), t.get("flash:cp.async", {})
        common = [s for s in a if s in b and s >= 1 << 20]
        if not common:
            return "ldg"
        wins = sum(1 for s in common if a[s] <= b[s])
        return "ldg" if wins * 2 >= len(common) else "cp.async"

    engine = best_flash_engine()
    flash = t.get("flash:" + engine, {})
    large_modes = [m for m in ("copy", "stream", "flash:" + engine) if t.get(m)]

    def mean_busbw(m):
        sizes = [s for s in t[m] if s >= 64 << 20]
        return sum(s / t[m][s] for s in sizes) / len(sizes) if sizes else 0.0

    large = max(large_modes, key=mean_busbw) if large_modes else "copy"
    def mean_time(m):
        return sum(t[m].values()) / len(t[m]) if t.get(m) else float("inf")

    ll_variant = min(("ll:pdl", "ll:nopdl"), key=mean_time)
    ll = t.get(ll_variant, {})
    ll_max = 0
    for s in sorted(ll):
        others = [t[m][s] for m in t if not m.startswith("ll:") and s in t[m]]
        if others and ll[s] > min(others):
            break
        ll_max = s
    flash_max = ll_max
    if large != "flash:" + engine:
        for s in sorted(flash):
            if s <= ll_max:
                continue
            big = t[large].get(s)
            if big is not None and flash[s] > big:
                break
            flash_max = s
    else:
        flash_max = 1 << 40
    print("flash_engine=%s,ll_pdl=%d,auto_ll_max=%d,auto_flash_max=%d,auto_large=%s"
          % (engine, 1 if ll_variant == "ll:pdl" else 0, max(ll_max, 8), max(flash_max, ll_max, 8), large.split(":")[0]))


if __name__ == "__main__":
    main()
