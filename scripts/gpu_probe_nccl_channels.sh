#!/usr/bin/env bash
# Probe (gpu_call.sh step) of NCCL's Simple and LL protocols per channel: its all-reduce, broadcast and all-gather
# with the channels pinned (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = c in NCCL's environment) and one protocol
# (--nccl-proto), 64 KiB to 16 MiB. What one channel's step costs against its bytes is the mechanism the model needs where NCCL's 2 MiB Simple rows miss (all-reduce -16..-22%, broadcast
# -23..-30% on 2 x H200).
# Records: <out>/probe_<proto>_c<c>.csv; a table last (time in us per size and channel count).
# Run: cp scripts/gpu_probe_nccl_channels.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_nccl_channels
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
ALGOS="allreduce.nccl,broadcast.nccl,allgather.nccl"
for proto in Simple LL; do
  for c in 1 2 4 8 16 24; do
    NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c PROBE_S=40 probe "${proto}_c$c" --algo $ALGOS --inplace 0 \
      -b 64K -e 16M -f 2 -d float --nccl-proto "$proto"
  done
done
python3 - "$W" <<'PY'
import csv, glob, os, re, sys
t = {}
for f in glob.glob(os.path.join(sys.argv[1], "probe_*_c*.csv")):
    proto, c = re.search(r"probe_(\w+)_c(\d+)\.csv", f).groups()
    for r in csv.DictReader(open(f)):
        t[(proto, r["algo"], int(r["bytes"]), int(c))] = float(r["time_us"])
chans = sorted({k[3] for k in t})
for proto in ("Simple", "LL"):
    for algo in sorted({k[1] for k in t}):
        print(f"# {algo} {proto}: time (us) per size and channels")
        print("%10s " % "bytes" + " ".join("%8s" % f"c{c}" for c in chans))
        for b in sorted({k[2] for k in t if k[0] == proto and k[1] == algo}):
            print("%10d " % b + " ".join("%8.2f" % t.get((proto, algo, b, c), float("nan")) for c in chans))
PY
