#!/usr/bin/env bash
# Probes on more than 2 GPUs (gpu_call.sh step): why the fused lowering's ring steps run well below the link at
# 16-128 MiB (all-gather's forwarding copies ~120-160 GB/s a step, reduce-scatter's reductions ~250) — its launch
# shape (CTAs, threads per CTA, bytes per CTA before a lane takes more CTAs, PDL) against the default, and
# allgather.ring's steps alone (one rank's copy chain) beside alltoall.direct's independent puts.
# Records: <out>/probe_<name>.csv. Run: cp scripts/gpu_probe_fused_knobs.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_fused_knobs
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
ALGOS="allgather.ring,reducescatter.ring,allreduce.ring"
run() { PROBE_S=40 probe "$@" --inplace 0 -w 3 --timeout 20 -b 16M -e 128M -f 2; }
run knob_default --algo $ALGOS --tune lowering=fused
run knob_ctas66 --algo $ALGOS --tune lowering=fused,fused_ctas=66
run knob_t256 --algo $ALGOS --tune lowering=fused,fused_threads=256
run knob_ctas33 --algo $ALGOS --tune lowering=fused,fused_ctas=33
run knob_nopdl --algo $ALGOS --tune lowering=fused,fused_pdl=0
run knob_graph0 --algo $ALGOS --tune lowering=fused --graph 0
run knob_inplace --algo $ALGOS --tune lowering=fused --inplace 1
