#!/usr/bin/env bash
# Probe (gpu_call.sh step) of how the bidir kernels' rate grows with their grid: flash, push, lamport and stream at
# 16 MiB with the grid forced from 1 to 132 CTAs (lanes for stream). Where the rate grows as the CTAs, each CTA
# runs at its own latency-bound rate; where it bends before the link's rate, the CTAs slow each other
# (docs/findings/2026-11-28-bidir-one-cta-and-stream-lanes.md).
# Records: <out>/probe_<mode>_g<grid>.csv; the last lines are a table of time (us) and GB/s per direction.
# Run: cp scripts/gpu_probe_grid_scaling.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_grid_scaling
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
for mode in flash push lamport stream; do
  key=${mode}_blocks
  [ "$mode" = stream ] && key=lanes
  for g in 1 2 4 8 16 32 64 132; do
    PROBE_S=20 probe "${mode}_g$g" --algo "allreduce.bidir.$mode" -g 2 --inplace 0 -d float -b 16M -e 16M \
      --tune "launches=20,$key=$g" >/dev/null
  done
done
python3 - "$W" <<'PY'
import csv, os, sys
print("# 16 MiB, float, out of place: time (us) and GB/s per direction against the forced grid")
grids = [1, 2, 4, 8, 16, 32, 64, 132]
print("%-8s " % "mode" + " ".join("%14s" % ("g%d" % g) for g in grids))
for mode in ("flash", "push", "lamport", "stream"):
    cells = []
    for g in grids:
        f = os.path.join(sys.argv[1], "probe_%s_g%d.csv" % (mode, g))
        rows = list(csv.DictReader(open(f))) if os.path.exists(f) else []
        if rows:
            t = float(rows[0]["time_us"])
            cells.append("%7.1f/%5.0f" % (t, 16 * 2**20 / t / 1e3))
        else:
            cells.append("%14s" % "-")
    print("%-8s " % mode + " ".join(cells))
PY
