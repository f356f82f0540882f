#!/usr/bin/env bash
# Probe (gpu_call.sh step) of the bidir kernels' step where the grid goes from one CTA to two: each mode at two
# sizes with its grid forced to 1, 2 and 4 CTAs (as far as the size allows), so that the grid alone changes (the
# simulator prices a grid of several CTAs half a flag round trip more: the fence before its arrival count).
# Records: <out>/probe_<mode>_g<grid>.csv; the last lines are a table of time (us) against the grid.
# Run: cp scripts/gpu_probe_bidir_grid.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_bidir_grid
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
# Each mode at the first two sizes where its own lowering takes more than one CTA.
for spec in "ll 4K 8K" "lamport 16K 32K" "push 32K 64K" "flash 64K 128K"; do
  set -- $spec
  for g in 1 2 4; do
    PROBE_S=15 probe "${1}_g$g" --algo "allreduce.bidir.$1" -g 2 --inplace 0 -d float -b "$2" -e "$3" -f 2 \
      --tune "launches=100,${1}_blocks=$g" >/dev/null
  done
done
python3 - "$W" <<'PY'
import csv, glob, os, re, sys
t = {}
for f in glob.glob(os.path.join(sys.argv[1], "probe_*_g*.csv")):
    mode, g = re.match(r"probe_(\w+)_g(\d+)\.csv", os.path.basename(f)).groups()
    for r in csv.DictReader(open(f)):
        t[(mode, int(r["bytes"]), int(g))] = (float(r["time_us"]), r.get("grid", ""))
print("# time (us) of each mode against its forced grid (the grid column: what ran), float, out of place")
print("%-8s %6s %14s %14s %14s" % ("mode", "bytes", "1 CTA", "2 CTAs", "4 CTAs"))
for mode, b in sorted({(m, b) for m, b, _ in t}):
    print("%-8s %6d " % (mode, b) + " ".join("%9.2f (g%s)" % t[(mode, b, g)] if (mode, b, g) in t else "%14s" % "-"
                                          for g in (1, 2, 4)))
PY
