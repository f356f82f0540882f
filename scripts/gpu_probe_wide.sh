#!/usr/bin/env bash
# Probes on more than 2 GPUs (gpu_call.sh step): the fused lowering at large sizes (where the general plan
# stalls on cross-GPU graph edges) beside NCCL, and twoshot grids. Records: <out>/probe_<name>.csv (results/h200x4/probes/probe_*).
# Run it as a step of a device call: cp scripts/gpu_probe_wide.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_wide
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
run() { PROBE_S=70 probe "$@" --inplace 0 -w 5 --timeout 20; }
run nccl --algo allreduce.nccl,reducescatter.nccl,allgather.nccl -b 1M -e 1G -f 8
run fused_rs --algo reducescatter.hier,reducescatter.ring --tune fused_max=1G -b 1M -e 1G -f 8
run fused_ar --algo allreduce.ring --tune fused_max=1G -b 1M -e 1G -f 8
run fused_ag --algo allgather.ring,broadcast.pipeline,alltoall.direct --tune fused_max=1G -b 1M -e 1G -f 8
run ts_b264 --algo allreduce.bidir.twoshot --tune twoshot_blocks=264,twoshot_unroll=1 -b 4M -e 1G -f 4
run ts_b66 --algo allreduce.bidir.twoshot --tune twoshot_blocks=66,twoshot_unroll=1 -b 4M -e 1G -f 4
run ts_t256_b264 --algo allreduce.bidir.twoshot --tune twoshot_threads=256,twoshot_blocks=264,twoshot_unroll=2 -b 4M -e 1G -f 4
run ts_nopdl --algo allreduce.bidir.twoshot --tune twoshot_pdl=0,twoshot_unroll=1 -b 4M -e 1G -f 4
