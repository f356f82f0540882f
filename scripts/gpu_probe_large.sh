#!/usr/bin/env bash
# Probes of the large sizes on a 4-GPU machine (gpu_call.sh step), each beside its NCCL baseline in the same call:
#   twoshot  the store-only two-shot at 2 and 4 vectors per thread against NCCL, 256 MiB-1 GiB, run twice in
#            alternation (the ratio and its spread within one call);
#   ring     allreduce.ring and reducescatter.ring on the general lowering with 1, 2 and 4 channels, 16 MiB-512 MiB
#            (channels put one part's copies beside another part's reductions);
#   replay   NCCL's broadcast and reduce at 1 and at 100 launches per replayed graph, 8 MiB-512 MiB (whether a
#            chain's fill is paid once per launch or once per replay);
#   copy     the copy-engine all-reduce with more reduce CTAs and smaller pieces, 256 MiB-1 GiB;
#   held     (not by default) the general algorithms with 1, 2 and 4 channels at 1 and 4 launches per replay, so
#            that every graph stays held, beside NCCL, 16 MiB-512 MiB.
# Records: <out>/probe_<name>.csv. PROBES picks the groups (default: all four).
# Run it as a step of a device call: cp scripts/gpu_probe_large.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_large
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
PROBES=${PROBES:-twoshot ring replay copy}
GENERAL=allreduce.ring,reducescatter.ring,allgather.ring,broadcast.pipeline
if [[ " $PROBES " == *" twoshot "* ]]; then
  for i in 1 2; do
    probe "ts_nccl_$i" --algo allreduce.nccl -b 256M -e 1G -f 2 --inplace 0 -w 5
    probe "ts_u2_$i" --algo allreduce.bidir.twoshot --tune twoshot_unroll=2 -b 256M -e 1G -f 2 --inplace 0 -w 5
    probe "ts_u4_$i" --algo allreduce.bidir.twoshot --tune twoshot_unroll=4 -b 256M -e 1G -f 2 --inplace 0 -w 5
  done
fi
if [[ " $PROBES " == *" ring "* ]]; then
  probe ring_nccl --algo allreduce.nccl,reducescatter.nccl -b 16M -e 512M -f 4 --inplace 0 -w 5
  for c in 1 2 4; do
    probe "ring_c$c" --algo allreduce.ring,reducescatter.ring --tune channels=$c -b 16M -e 512M -f 4 --inplace 0 -w 5
  done
fi
if [[ " $PROBES " == *" held "* ]]; then
  # The same channels with few enough launches per replay that every graph stays held (the host's launch of a
  # larger graph is timed with it, lower/lowering.hpp kMaxHeldGraphNodes).
  probe held_nccl --algo allreduce.nccl,reducescatter.nccl,allgather.nccl,broadcast.nccl -b 16M -e 512M -f 4 --inplace 0 -w 5
  for c in 1 2 4; do
    for n in 1 4; do
      probe "held_c${c}_n$n" --algo $GENERAL --tune lowering=plan,channels=$c,launches=$n -b 16M -e 512M -f 4 \
        --inplace 0 -w 5
    done
  done
fi
if [[ " $PROBES " == *" replay "* ]]; then
  for n in 1 100; do
    probe "replay_n$n" --algo broadcast.nccl,reduce.nccl --tune launches=$n -b 8M -e 512M -f 4 --inplace 0 -w 5
  done
fi
if [[ " $PROBES " == *" copy "* ]]; then
  probe copy_rb264 --algo allreduce.bidir.copy --tune ce_reduce_blocks=264 -b 256M -e 1G -f 2 --inplace 0 -w 3
  probe copy_p8 --algo allreduce.bidir.copy --tune ce_reduce_blocks=264,ce_pieces=8 -b 256M -e 1G -f 2 --inplace 0 -w 3
fi
python3 - "$W" <<'PY'
import csv, glob, os, sys
from collections import defaultdict
t = defaultdict(dict)
for f in sorted(glob.glob(os.path.join(sys.argv[1], "probe_*.csv"))):
    name = os.path.basename(f)[6:-4]
    for r in csv.DictReader(open(f)):
        t[name + ":" + r["algo"]][int(r["bytes"])] = (float(r["time_us"]), int(r["wrong"]))
sizes = sorted({s for v in t.values() for s in v})
print("time us " + " ".join("%9s" % (str(s >> 20) + "M") for s in sizes))
for k, v in sorted(t.items()):
    print("%-40s" % k + " ".join("%9.1f%s" % (v[s][0], "!" if v[s][1] else " ") if s in v else "        -" for s in sizes))
PY
