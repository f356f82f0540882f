#!/usr/bin/env python3
"""Picks allreduce.bidir's crossovers from a calibration sweep (cclab run --algo allreduce.bidir
--tune mode=X,... records), the way measure.sh does before its main sweep.

usage: bidir_crossovers.py CALIBRATION.csv
Prints one --tune string for the sweep. Every calibration run is a variant (its --tune string).
Rules, on out-of-place rows with no wrong element:
  - small: the ll variant with the lowest mean time up to 256 KiB; ll is used up to the largest size below which
    it is fastest at every size;
  - large: among copy, stream, flash and push variants, the one with the highest mean busbw over
    the sizes >= 64 MiB;
  - medium: the flash or push variant with the lowest total time over 1-16 MiB, used while it
    beats the large variant.
The chosen variants' own keys (engine, unroll, chunking, ...) are carried into the output.
Standard library only.
"""
import csv
import sys
from collections import defaultdict


def tune_of(s):
    return dict(kv.split("=", 1) for kv in s.split(",") if "=" in kv)


def main():
    rows = [r for r in csv.DictReader(open(sys.argv[1], newline="")) if r["inplace"] == "0" and r["wrong"] == "0"]
    t = defaultdict(dict)  # tune string -> bytes -> time_us
    for r in rows:
        if "mode=" in r.get("tune", ""):
            t[r["tune"]][int(r["bytes"])] = float(r["time_us"])
    mode = {v: tune_of(v)["mode"] for v in t}

    def mean_time(v, lo=0, hi=1 << 62):
        xs = [x for s, x in t[v].items() if lo <= s <= hi]
        return sum(xs) / len(xs) if xs else float("inf")

    def mean_busbw(v):
        xs = [s / x for s, x in t[v].items() if s >= 64 << 20]
        return sum(xs) / len(xs) if xs else 0.0

    lls = [v for v in t if mode[v] == "ll"]
    flashes = [v for v in t if mode[v] in ("flash", "push")]
    larges = [v for v in t if mode[v] in ("copy", "stream", "flash", "push") and mean_busbw(v) > 0]
    ll = min(lls, key=lambda v: mean_time(v, 0, 256 << 10)) if lls else None  # sizes every ll variant ran
    flash = min(flashes, key=lambda v: mean_time(v, 1 << 20, 16 << 20)) if flashes else None
    large = max(larges, key=mean_busbw) if larges else None

    ll_max = 0
    if ll:
        for s in sorted(t[ll]):
            others = [t[v][s] for v in t if mode[v] != "ll" and s in t[v]]
            if others and t[ll][s] > min(others):
                break
            ll_max = s
    flash_max = ll_max
    if flash:
        if large is None or large == flash:
            flash_max = 1 << 40
        else:
            for s in sorted(t[flash]):
                if s <= ll_max:
                    continue
                big = t[large].get(s)
                if big is not None and t[flash][s] > big:
                    break
                flash_max = s
    keys = {}
    for v in (ll, flash, large):
        if v:
            keys.update({k: x for k, x in tune_of(v).items() if k != "mode"})
    keys["auto_ll_max"] = str(max(ll_max, 8))
    keys["auto_flash_max"] = str(max(flash_max, ll_max, 8))
    keys["auto_mid"] = mode[flash] if flash else "flash"
    keys["auto_large"] = mode[large] if large else "copy"
    print(",".join("%s=%s" % kv for kv in keys.items()))


if __name__ == "__main__":
    main()
