#!/usr/bin/env bash
# Probe (gpu_call.sh step) of whether asking NCCL for its own estimate (ncclGroupSimulateEnd) changes the time of
# the collectives timed after it on the same communicators. The runner asks after each row's timing; a sweep's
# later rows are timed after earlier rows' estimates, a process that runs one size is timed before any.
# Records: <out>/probe_<name>.csv; the last lines are a table of time (us) per size, sweep against lone size.
# Run: cp scripts/gpu_probe_nccl_order.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_nccl_order
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
ALGOS="allreduce.nccl,allgather.nccl,reduce.nccl,reducescatter.nccl,broadcast.nccl"
PROBE_S=90 probe sweep --algo $ALGOS -g 2 --inplace 0 -b 8 -e 8M -f 8 -d float
for b in 8 4096 65536 524288; do
  for a in allreduce.nccl allgather.nccl reduce.nccl; do
    PROBE_S=30 probe "lone_${a%%.*}_$b" --algo "$a" -g 2 --inplace 0 -b "$b" -e "$b" -d float
  done
done
python3 - "$W" <<'PY'
import csv, glob, os, sys
sweep = {(r["algo"], r["bytes"]): float(r["time_us"]) for r in csv.DictReader(open(os.path.join(sys.argv[1], "probe_sweep.csv")))}
print("# time (us), float, out of place: in one sweep (earlier rows' estimates before) and alone in a process")
print("%-20s %9s %9s %9s" % ("algorithm", "bytes", "sweep", "alone"))
for f in sorted(glob.glob(os.path.join(sys.argv[1], "probe_lone_*.csv"))):
    for r in csv.DictReader(open(f)):
        k = (r["algo"], r["bytes"])
        print("%-20s %9s %9.2f %9.2f" % (k[0], k[1], sweep.get(k, float("nan")), float(r["time_us"])))
PY
