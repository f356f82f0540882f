#!/usr/bin/env bash
# Probe (gpu_call.sh step) of programmatic dependent launch in the bidir kernels' small sizes: ll, lamport and the
# two-shot at 8 B-256 KiB with PDL on (their default) and off, twice in alternation. The simulator prices a launch
# in a replayed graph from empty PDL kernels (bidir.replay) plus, without PDL, what a plain kernel node adds; the ll
# sizes it prices 0.2-0.3 us slow on 2 x H200 would say whether the kernels' own prologues hide behind the previous
# kernel's tail (the difference between the two columns beyond that node's cost).
# Records: <out>/probe_<mode>_pdl<0|1>_<round>.csv; a table last (time in us per size, PDL on and off).
# Run: cp scripts/gpu_probe_bidir_pdl.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_bidir_pdl
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
for round in 1 2; do
  for mode in ll lamport twoshot; do
    for pdl in 1 0; do
      PROBE_S=20 probe "${mode}_pdl${pdl}_$round" --algo "allreduce.bidir.$mode" -g 2 --inplace 0 -d float \
        -b 8 -e 256K -f 4 --tune "launches=100,${mode}_pdl=$pdl" >/dev/null
    done
  done
done
python3 - "$W" <<'PY'
import csv, glob, os, re, sys
t = {}
for f in glob.glob(os.path.join(sys.argv[1], "probe_*_pdl*_*.csv")):
    mode, pdl, rnd = re.match(r"probe_(\w+?)_pdl(\d)_(\d)\.csv", os.path.basename(f)).groups()
    for r in csv.DictReader(open(f)):
        t.setdefault((mode, int(r["bytes"]), int(pdl)), []).append(float(r["time_us"]))
print("# time (us), float, out of place: the two rounds' mean, PDL on and off")
print("%-8s %8s %9s %9s %9s" % ("mode", "bytes", "pdl", "no pdl", "diff"))
for mode, b in sorted({(m, b) for m, b, _ in t}):
    on, off = (sum(t.get((mode, b, p), [float("nan")])) / max(1, len(t.get((mode, b, p), []))) for p in (1, 0))
    print("%-8s %8d %9.2f %9.2f %9.2f" % (mode, b, on, off, off - on))
PY
