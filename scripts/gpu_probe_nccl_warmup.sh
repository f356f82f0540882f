#!/usr/bin/env bash
# Probe (gpu_call.sh step) of whether a NCCL collective's first rows in a process are fast by how little NCCL has
# run before them (docs/findings/2026-11-28-nccl-estimate-order.md): all-gather at 8 B alone in a process after
# 5, 100 and 2000 warm-up calls, and rows of 8-64 B in one process, out of place and in place (each row's check
# and graphs before the next), with and without the checks, and without graphs.
# Records: <out>/probe_<name>.csv; the last lines are a table of time (us).
# Run: cp scripts/gpu_probe_nccl_warmup.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_nccl_warmup
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
for w in 5 2000; do
  PROBE_S=30 probe "warm$w" --algo allgather.nccl -g 2 --inplace 0 -b 8 -e 8 -d float -w "$w"
done
# Several rows of one process: 8-64 B, out of place and in place; the same without the check of each row before
# its timing (-c 0), and the check without graphs (-G 0: each call launched as it comes).
PROBE_S=30 probe rows --algo allgather.nccl -g 2 --inplace 2 -b 8 -e 64 -f 2 -d float
PROBE_S=30 probe rows_nocheck --algo allgather.nccl -g 2 --inplace 2 -b 8 -e 64 -f 2 -d float -c 0
PROBE_S=30 probe rows_eager --algo allgather.nccl -g 2 --inplace 2 -b 8 -e 64 -f 2 -d float -G 0
python3 - "$W" <<'PY'
import csv, glob, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "probe_*.csv"))):
    rows = list(csv.DictReader(open(f)))
    print(os.path.basename(f), " ".join("%s%s=%.2f" % (r["bytes"], "i" if r["inplace"] == "1" else "", float(r["time_us"])) for r in rows))
PY
