#!/usr/bin/env bash
# Probes on a 4-GPU machine (gpu_call.sh step): what a kernel's fixed cost does with the number of peers (the
# all-reduce kernels at 2, 3 and 4 GPUs of the same machine, 8 B-64 KiB), how much collective matmul at 4 ranks
# moves from run to run (the same command three times), and the pipelined broadcast's chunk size at large sizes.
# Records: <out>/probe_<name>.csv (results/<machine>/probe_*).
# Run it as a step of a device call: cp scripts/gpu_probe_peers.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_peers
W=$1
C=$CCLAB
export NCCL_NVLS_ENABLE=0
run() {
  local name=$1
  shift
  local t0=$(date +%s)
  timeout 60 "$C" run "$@" --csv "$W/probe_$name.csv" >"$W/probe_$name.log" 2>&1
  echo "$name rc=$? $(($(date +%s) - t0)) s: $*"
  grep -vE '^#|^$' "$W/probe_$name.log" | awk '{printf "   %s %s %s\n", $1, $6, $10}' | head -8
  grep -E "refused|error|Error" "$W/probe_$name.log" | head -3
}
MODES=allreduce.bidir.ll,allreduce.bidir.lamport,allreduce.bidir.push,allreduce.bidir.twoshot,allreduce.bidir.flash
for g in 2 3 4; do
  run "peers_g$g" --algo "$MODES" -g "$g" -b 8 -e 64K -f 8 --inplace 0 -w 20
done
for i in 1 2 3; do
  run "cmatmul_$i" --algo all -g 4 --shape 1024,4096,4096 -d half -w 10 -n 50
done
for c in 2M 8M 32M; do
  run "bcast_chunk_$c" --algo broadcast.pipeline -g 4 -b 32M -e 512M -f 4 --inplace 0 -w 5 --tune chunk_bytes=$c
done
