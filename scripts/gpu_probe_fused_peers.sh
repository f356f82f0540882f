#!/usr/bin/env bash
# Probe (gpu_call.sh step) of what a fused program's small sizes pay per GPU: the fused schedules whose ops go to
# or wait on one peer after another (scatter.direct: one lane stores into each peer in turn; gather.direct: each
# peer stores into the root; the pipeline broadcast: a chain), on 2, 3 and 4 GPUs of the same machine, with and
# without programmatic dependent launch. The per-GPU steps say which mechanism grows with the peers.
# Records: <out>/probe_<name>.csv; the last lines are a table of time (us) against the GPU count.
# Run: cp scripts/gpu_probe_fused_peers.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_fused_peers
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
ALGOS="scatter.direct,gather.direct,scatter.binomial,broadcast.pipeline,alltoall.direct,allgather.ring"
GPUS=$(nvidia-smi -L | wc -l)
for g in $(seq 2 "$GPUS"); do
  PROBE_S=40 probe g${g} --algo $ALGOS -g "$g" --inplace 0 -w 3 --timeout 20 -b 32 -e 32K -f 32
  PROBE_S=40 probe g${g}_nopdl --algo $ALGOS -g "$g" --inplace 0 -w 3 --timeout 20 -b 32 -e 32 --tune fused_pdl=0
done
python3 - "$W" <<'PY'
import csv, glob, os, sys
from collections import defaultdict
t = defaultdict(dict)
for f in sorted(glob.glob(os.path.join(sys.argv[1], "probe_g*.csv"))):
    variant = "nopdl" if "nopdl" in f else "pdl"
    for r in csv.DictReader(open(f)):
        t[(r["algo"], variant, r["bytes"])][int(r["ranks"])] = float(r["time_us"])
gpus = sorted({g for v in t.values() for g in v})
print("# time (us) of fused programs against the GPU count, out of place, float")
print("%-20s %6s %7s " % ("algorithm", "launch", "bytes") + " ".join("%8s" % ("%d GPUs" % g) for g in gpus))
for (a, v, b), row in sorted(t.items()):
    print("%-20s %6s %7s " % (a, v, b) + " ".join("%8.2f" % row[g] if g in row else "       -" for g in gpus))
PY
