#!/usr/bin/env bash
# Probe (gpu_call.sh step) of one CTA's rate against how much of its work each thread keeps in flight, for the two
# modes whose one-CTA rate no mechanism prices yet (docs/findings/2026-11-28-bidir-one-cta-and-stream-lanes.md):
# lamport at 1-4 iterations of stores ahead of its polls, flash at 2, 4 and 8 vectors per thread per load, each on
# one CTA and on 8 CTAs at 16 MiB.
# Records: <out>/probe_<name>.csv; the last lines are a table of time (us) and GB/s per direction.
# Run: cp scripts/gpu_probe_cta_depth.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_cta_depth
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
for g in 1 8; do
  for a in 1 2 3 4; do
    PROBE_S=20 probe "lamport_ahead${a}_g$g" --algo allreduce.bidir.lamport -g 2 --inplace 0 -d float -b 16M -e 16M \
      --tune "launches=20,lamport_blocks=$g,lamport_ahead=$a" >/dev/null
  done
  for u in 2 4 8; do
    PROBE_S=20 probe "flash_unroll${u}_g$g" --algo allreduce.bidir.flash -g 2 --inplace 0 -d float -b 16M -e 16M \
      --tune "launches=20,flash_blocks=$g,flash_engine=ldg,flash_ldg_unroll=$u" >/dev/null
  done
done
python3 - "$W" <<'PY'
import csv, glob, os, sys
print("# 16 MiB, float, out of place: time (us) and GB/s per direction")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "probe_*.csv"))):
    for r in csv.DictReader(open(f)):
        t = float(r["time_us"])
        print("%-24s %9.1f us %7.1f GB/s  %s" % (os.path.basename(f)[6:-4], t, 16 * 2**20 / t / 1e3, r.get("note", "")[:70]))
PY
