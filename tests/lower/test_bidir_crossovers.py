"""scripts/bidir_crossovers.py on made-up calibration times (not measurements): a two-shot that loads at small
sizes and stores at large ones keeps each variant's own unroll; variants of one mode combine only where they set
its keys alike."""
import importlib.util
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bidir_crossovers",
                                              os.path.join(here, "..", "..", "scripts", "bidir_crossovers.py"))
bc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bc)

M = 1 << 20
# The load variant at 1 vector per thread wins to 2 MiB, the store-only one (its default unroll) above.
t = {
    "mode=twoshot,twoshot_push=0,twoshot_unroll=1": {1 * M: 10.0, 2 * M: 12.0, 8 * M: 40.0, 64 * M: 300.0},
    "mode=twoshot": {1 * M: 11.0, 2 * M: 13.0, 8 * M: 35.0, 64 * M: 250.0},
    "mode=ll": {1 * M: 30.0, 2 * M: 60.0},
}
got = bc.tune_of(bc.pick(t, wide=True))
failures = []
if got.get("twoshot_push") != "1" or got.get("twoshot_load_max") != str(2 * M):
    failures.append("loads to 2 MiB, stores above")
if got.get("twoshot_load_unroll") != "1":
    failures.append("the load variant's unroll as twoshot_load_unroll")
if "twoshot_unroll" in got:
    failures.append("the stores keep their own unroll (no twoshot_unroll)")
if got.get("wide_mid") != "twoshot" or got.get("wide_large") != "twoshot":
    failures.append("two-shot in the middle and at large sizes")
print(bc.pick(t, wide=True))
# The ring takes over from the smallest calibrated size above the middle variant from which it is faster.
t["mode=ring"] = {8 * M: 60.0, 64 * M: 240.0}
if bc.tune_of(bc.pick(t, wide=True)).get("wide_ring_min") != str(64 * M):
    failures.append("the ring from 64 MiB, where it is faster")
t["mode=ring"] = {8 * M: 60.0, 64 * M: 260.0}
if bc.tune_of(bc.pick(t, wide=True)).get("wide_ring_min") != "0":
    failures.append("no ring where it is never faster")
if "wide_ring_min" in bc.tune_of(bc.pick(t, wide=False)):
    failures.append("no ring tier on 2 ranks")
# Two store-only variants that each changed one key (made-up times): the pair of changes was never timed, so
# the middle and large sizes cannot take one's threads and the other's unroll together.
t = {
    "mode=twoshot,twoshot_threads=256": {1 * M: 10.0, 64 * M: 300.0},
    "mode=twoshot,twoshot_unroll=4": {1 * M: 12.0, 64 * M: 250.0},
    "mode=twoshot": {1 * M: 11.0, 64 * M: 260.0},
}
got = bc.tune_of(bc.pick(t, wide=True))
if "twoshot_threads" in got and "twoshot_unroll" in got:
    failures.append("no untimed pair of one mode's keys: " + bc.pick(t, wide=True))
for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
