#!/usr/bin/env python3
"""Picks allreduce.bidir's modes and crossovers from a calibration sweep (cclab run --algo
allreduce.bidir --tune mode=X,... records), the way measure.sh does before its main sweep.

usage: bidir_crossovers.py CALIBRATION.csv
Prints one --tune string for the sweep. Every calibration run is a variant (its --tune string).
allreduce.bidir uses three variants by size: an ll variant up to auto_ll_max, a mid variant (flash,
push, lamport or twoshot) up to auto_flash_max, then a large variant (copy, push, flash, stream, lamport
or twoshot). On more than 2 ranks the same choice is written as the wide_* keys (wide_ll_max,
wide_mid_max, wide_mid, wide_large), which the lowering reads there. Every choice of
the three variants and of the two thresholds (at calibrated sizes) is scored by the sum over the
calibrated sizes of time / best measured time at that size (out-of-place rows with no wrong
element); the lowest score wins. Variants whose --tune keys disagree cannot be combined (one
parameter set drives all modes), nor two variants of one mode whose keys of that mode differ (one may have run
at a default the other changes), but for a two-shot mid variant with loads (twoshot_push=0) and a
two-shot large variant with stores: that is twoshot_load_max, and the load variant's unroll becomes
twoshot_load_unroll (the stores keep their own). The chosen variants' own keys are carried into the output.
On more than 2 ranks, where the ring schedule was calibrated (mode=ring), it takes over from the smallest
calibrated size above the middle variant from which it scores lower (wide_ring_min; 0: never).
Standard library only.
"""
import csv
import itertools
import sys
from collections import defaultdict

SMALL, MID = ("ll",), ("flash", "push", "lamport", "twoshot")
LARGE = ("copy", "push", "flash", "stream", "lamport", "twoshot")


def key_prefix(mode):
    """The prefix of the --tune keys that shape a mode's launch (copy: ce_)."""
    return "ce_" if mode == "copy" else mode + "_"


def tune_of(s):
    return dict(kv.split("=", 1) for kv in s.split(",") if "=" in kv)


def pick(t, wide=False):
    """t: variant tune string -> bytes -> time_us; wide: more than 2 ranks. Returns the --tune string."""
    mode = {v: tune_of(v)["mode"] for v in t}
    sizes = sorted({s for v in t for s in t[v]})
    best = {s: min(t[v][s] for v in t if s in t[v]) for s in sizes}

    def loads_then_stores(mid, large):
        """A two-shot that loads up to the crossover and stores above it (twoshot_load_max)."""
        return (mid and mode[mid] == mode[large] == "twoshot" and tune_of(mid).get("twoshot_push") == "0"
                and tune_of(large).get("twoshot_push", "1") == "1")

    def keys_of(v, split, is_mid):
        """The variant's keys but its mode; where loads then stores, the load variant's unroll is its own key."""
        k = {a: x for a, x in tune_of(v).items() if a != "mode"} if v else {}
        if split and is_mid and "twoshot_unroll" in k:
            k.setdefault("twoshot_load_unroll", k.pop("twoshot_unroll"))
        return k

    def compatible(ll, mid, large):
        keys = {}
        split = loads_then_stores(mid, large)
        chosen = [(v, keys_of(v, split, v is mid)) for v in (ll, mid, large) if v]
        for v, kv in chosen:
            for k, x in kv.items():
                if not (split and k == "twoshot_push") and keys.setdefault(k, x) != x:
                    return False
        # Two variants of one mode read the same keys: one that ran at a key's default cannot take the other's
        # value of it (that pair was never timed), so they combine only where they set that mode's keys alike.
        # Where the two-shot loads then stores, each side has its own unroll (the loads' where it was set).
        apart = set()
        if split:
            apart = {"twoshot_push", "twoshot_load_unroll"}
            if "twoshot_load_unroll" in dict(chosen)[mid]:
                apart.add("twoshot_unroll")
        for (v, kv), (w, kw) in itertools.combinations(chosen, 2):
            if mode[v] == mode[w]:
                own = lambda k: k.startswith(key_prefix(mode[v])) and k not in apart
                if {k: x for k, x in kv.items() if own(k)} != {k: x for k, x in kw.items() if own(k)}:
                    return False
        return True

    def choose(s, ll, mid, large, ll_max, mid_max):
        return ll if ll and s <= ll_max else mid if mid and s <= mid_max else large

    lls = [v for v in t if mode[v] in SMALL] or [None]
    mids = [v for v in t if mode[v] in MID] or [None]
    larges = [v for v in t if mode[v] in LARGE]
    rings = [v for v in t if mode[v] == "ring"] if wide else []
    cuts = [0] + sizes
    scored = []
    for ll, mid, large in itertools.product(lls, mids, larges):
        if not compatible(ll, mid, large):
            continue
        for ll_max in cuts if ll else [0]:
            for mid_max in [c for c in cuts if c >= ll_max] if mid else [ll_max]:
                score = 0.0
                for s in sizes:
                    v = choose(s, ll, mid, large, ll_max, mid_max)
                    # A size the chosen variant did not run costs as much as the slowest measured one.
                    score += t[v][s] / best[s] if s in t[v] else max(t[u][s] for u in t if s in t[u]) / best[s]
                scored.append((score, ll_max, mid_max, ll, mid, large))
    if not scored:
        return "wide_large=twoshot" if wide else "auto_large=copy"
    _, ll_max, mid_max, ll, mid, large = min(scored, key=lambda x: x[0])
    keys = {}
    if rings:  # the ring from a size on, in place of the variants chosen above the middle one
        ring, above = rings[0], [s for s in sizes if s > mid_max]

        def cost(s, cut):
            v = ring if cut and s >= cut else choose(s, ll, mid, large, ll_max, mid_max)
            return t[v][s] / best[s] if s in t[v] else max(t[u][s] for u in t if s in t[u]) / best[s]

        cuts_up = [0] + [c for c in above if all(s in t[ring] for s in above if s >= c)]
        keys["wide_ring_min"] = str(min(cuts_up, key=lambda c: (sum(cost(s, c) for s in above), c)))
    split = loads_then_stores(mid, large)
    for v in (ll, mid, large):
        keys.update(keys_of(v, split, v is mid))
    if split:
        keys["twoshot_push"] = "1"
        keys["twoshot_load_max"] = str(max(mid_max, ll_max, 8))
    if wide:
        keys["wide_ll_max"] = str(max(ll_max, 8))
        keys["wide_mid_max"] = str(max(mid_max, ll_max, 8))
        keys["wide_mid"] = mode[mid] if mid else "twoshot"
        keys["wide_large"] = mode[large]
    else:
        keys["auto_ll_max"] = str(max(ll_max, 8))
        keys["auto_flash_max"] = str(max(mid_max, ll_max, 8))
        keys["auto_mid"] = mode[mid] if mid else "flash"
        keys["auto_large"] = mode[large]
    return ",".join("%s=%s" % kv for kv in keys.items())


def main():
    rows = [r for r in csv.DictReader(open(sys.argv[1], newline="")) if r["inplace"] == "0" and r["wrong"] == "0"]
    t = defaultdict(dict)
    for r in rows:
        if "mode=" in r.get("tune", ""):
            t[r["tune"]][int(r["bytes"])] = float(r["time_us"])
    print(pick(t, wide=any(int(r["ranks"]) > 2 for r in rows)))


if __name__ == "__main__":
    main()
