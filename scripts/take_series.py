#!/usr/bin/env python3
"""Replaces series of a profile's samples with those another calibration measured, saying so in each series.

  python3 scripts/take_series.py <into.measurements.json> <from.measurements.json> <series> [<series> ...]

For a mechanism the machine's own calibration did not reach (a size range, a series added later) that does not
depend on the host or on the other GPUs: a local copy on the same GPU and driver, for one. Each taken series keeps
its samples whole (no splicing of points from two machines) and carries an "origin" line (the other run's origin,
GPU, GPU count, driver, date, commit and file) that the refitted profile's table source quotes. Refuses a series
the source lacks, and a source of another GPU or driver. Refit afterwards: bash scripts/refit_profiles.sh.
"""
import json
import sys


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    into_path, from_path, names = argv[1], argv[2], argv[3:]
    into = json.load(open(into_path))
    src = json.load(open(from_path))
    for key in ("gpu_name", "driver"):
        if into.get(key) != src.get(key):
            sys.exit(f"{from_path}: {key} {src.get(key)!r}, not {into.get(key)!r} as in {into_path}")
    by_name = {s["name"]: s for s in src["series"]}
    origin = (f"{src.get('origin', '')}, {src.get('gpu_name', '')} x{src.get('gpus', '?')}, driver "
              f"{src.get('driver', '')}, {src.get('date', '')}, commit {src.get('commit', '')}, {from_path}")
    taken = []
    for name in names:
        if name not in by_name:
            sys.exit(f"{from_path}: no series {name!r}")
        s = dict(by_name[name])
        s["origin"] = origin
        replaced = False
        for i, old in enumerate(into["series"]):
            if old["name"] == name:
                into["series"][i] = s
                replaced = True
        if not replaced:
            into["series"].append(s)
        taken.append(f"{name} ({len(s['samples'])} samples, {'replaced' if replaced else 'added'})")
    with open(into_path, "w") as f:
        json.dump(into, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"{into_path}: took from {from_path}: " + ", ".join(taken))


if __name__ == "__main__":
    main(sys.argv)
