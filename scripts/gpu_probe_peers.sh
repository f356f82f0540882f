#!/usr/bin/env bash
# Probes on a 4-GPU machine (gpu_call.sh step): what a kernel's fixed cost does with the number of peers (the
# all-reduce kernels at 2, 3 and 4 GPUs of the same machine, 8 B-64 KiB), how much collective matmul at 4 ranks
# moves from run to run (the same command three times), and the pipelined broadcast's chunk size at large sizes.
# Records: <out>/probe_<name>.csv (results/<machine>/probe_*). PROBES picks the groups (default "peers cmatmul bcast";
# "check": the executor's GPU tests on 4 ranks and every bidir mode 8 B-1 GiB, in place and out, each row checked).
# Run it as a step of a device call: cp scripts/gpu_probe_peers.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_peers
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
PROBES=${PROBES:-peers cmatmul bcast}
MODES=allreduce.bidir.ll,allreduce.bidir.lamport,allreduce.bidir.push,allreduce.bidir.twoshot,allreduce.bidir.flash
if [[ " $PROBES " == *" peers "* ]]; then
  for g in 2 3 4; do
    probe "peers_g$g" --algo "$MODES" -g "$g" -b 8 -e 64K -f 8 --inplace 0 -w 20
  done
fi
if [[ " $PROBES " == *" check "* ]]; then
  probe check_modes --algo "$MODES,allreduce.bidir" -g 4 -b 8 -e 1G -f 8 -w 2 -n 5
  echo "check_modes: rows with wrong elements: $(python3 -c "import csv,sys; print(sum(1 for r in csv.DictReader(open(sys.argv[1])) if r['wrong'] not in ('0','-1')))" "$W/probe_check_modes.csv")"
  timeout 150 "$(dirname "$CCLAB")/test_exec_gpu" --gtest_brief=1 \
    --gtest_filter='Gpu/AllAlgorithms.ZeroWrong/4ranks_*:GpuRun.*:*Bidir*' >"$W/tests.log" 2>&1
  echo "test_exec_gpu rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
fi
if [[ " $PROBES " == *" cmatmul "* ]]; then
  for i in 1 2 3; do
    probe "cmatmul_$i" --algo all -g 4 --shape 1024,4096,4096 -d half -w 10 -n 50
  done
fi
if [[ " $PROBES " == *" bcast "* ]]; then
  for c in 2M 8M 32M; do
    probe "bcast_chunk_$c" --algo broadcast.pipeline -g 4 -b 32M -e 512M -f 4 --inplace 0 -w 5 --tune chunk_bytes=$c
  done
fi
