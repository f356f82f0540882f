#!/usr/bin/env bash
# Probes on more than 2 GPUs (gpu_call.sh step): the general algorithms at 16-128 MiB, where they trail NCCL, under
# the fused lowering with more channels (lanes per rank that overlap one another's steps), the general lowering
# with more channels, and chunked pipelines; NCCL beside them in the same call. Records: <out>/probe_<name>.csv.
# Run it as a step of a device call: cp scripts/gpu_probe_mid.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_mid
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
GEN="allreduce.ring,allgather.ring,reducescatter.ring,alltoall.direct"
run() { PROBE_S=40 probe "$@" --inplace 0 -w 3 --timeout 20 -b 16M -e 128M -f 2; }
run nccl --algo allreduce.nccl,allgather.nccl,reducescatter.nccl,alltoall.nccl,broadcast.nccl
run fused_c1 --algo $GEN --tune lowering=fused
run fused_c2 --algo $GEN --tune lowering=fused,channels=2
run fused_c4 --algo $GEN --tune lowering=fused,channels=4
run fused_c8 --algo $GEN --tune lowering=fused,channels=8
run fused_c16 --algo $GEN --tune lowering=fused,channels=16
run general_c1 --algo $GEN --tune lowering=plan,channels=1
run general_c4 --algo $GEN --tune lowering=plan,channels=4
run bcast_fused_1M --algo broadcast.pipeline --tune lowering=fused,chunk_bytes=1M
run bcast_fused_4M --algo broadcast.pipeline --tune lowering=fused,chunk_bytes=4M
run bcast_general_2M --algo broadcast.pipeline --tune lowering=plan,chunk_bytes=2M
run bcast_general_8M --algo broadcast.pipeline --tune lowering=plan,chunk_bytes=8M
