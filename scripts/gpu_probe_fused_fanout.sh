#!/usr/bin/env bash
# Probes on more than 2 GPUs (gpu_call.sh step): why the fused lowering's one-to-many and many-to-one plans run
# 20-30% slower at 2-8 MiB on 4 GPUs than the model prices them from 2 GPUs (scatter.direct, gather.direct,
# broadcast.binomial, alltoall.direct in results/h200x4; the same plans on 2 GPUs are priced within 5%). The root's
# lane puts into each peer in turn and each op's CTAs publish their arrival. Against the default: more and fewer
# bytes per CTA (CTAs per op), per-CTA flags on and off, the general lowering (lowering=plan), and the same plans on
# 2 of the GPUs (one peer) in the same call.
# Records: <out>/probe_<name>.csv. Run: cp scripts/gpu_probe_fused_fanout.sh .carry/ &&
#   bash .carry/gpu_call.sh <name> gpu_probe_fused_fanout
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
ALGOS="scatter.direct,gather.direct,broadcast.binomial,alltoall.direct"
VISIBLE=$(nvidia-smi -L | wc -l)
# On fewer GPUs than ranks the ranks share them: a check that the probe runs, its timings meaningless.
share() { [ "$VISIBLE" -lt "$1" ] && echo --share-gpus; }
run() { PROBE_S=40 probe "$@" --inplace 0 -w 3 --timeout 20 -b 1M -e 16M -f 2 -g 4 $(share 4); }
run fanout_default --algo $ALGOS --tune lowering=fused
run fanout_cta64k --algo $ALGOS --tune lowering=fused,fused_cta_bytes=65536
run fanout_cta16k --algo $ALGOS --tune lowering=fused,fused_cta_bytes=16384
run fanout_slices0 --algo $ALGOS --tune lowering=fused,fused_slices=0
run fanout_slices1 --algo $ALGOS --tune lowering=fused,fused_slices=1
run fanout_plan --algo $ALGOS --tune lowering=plan
# The same plans between two of the GPUs (a single peer), where the model holds.
PROBE_S=40 probe fanout_two --algo $ALGOS --tune lowering=fused --inplace 0 -w 3 --timeout 20 -b 1M -e 16M -f 2 -g 2 \
  $(share 2)
