#!/usr/bin/env bash
# Diagnostic (docs/findings/2026-11-23-nccl-rings-unheld-launch-small-sizes.md): where the bidir kernels'
# small-size time goes beyond their microbenchmarks.
#   CCLAB=build-measure/cli/cclab bash scripts/gpu_bidir_launches.sh <out folder>   (2 x H200, ~15 s)
# Launches per replay 100 (as the records) against 400 and 25: a per-replay cost the model misses moves with it;
# the ll receive buffer's size (ll_max_bytes 1M as the records, 64K); each mode at 8 B-4 KiB.
W=${1:?output folder}
B=${CCLAB:-build-measure/cli/cclab}
export NCCL_NVLS_ENABLE=0
run() {  # tag algo min max iters tune
  timeout 60 "$B" run --algo "$2" -b "$3" -e "$4" -f 8 -w 20 -n "$5" --inplace 0 ${6:+--tune "$6"} --csv "$W/diag_$1.csv" >>"$W/diag.log" 2>&1
  echo "== $1 rc=$?"
  python3 - "$W/diag_$1.csv" "$1" <<'PY'
import csv,sys
for r in csv.DictReader(open(sys.argv[1])): print(f"{sys.argv[2]:14s} {r['algo']:24s} {int(r['bytes']):>8d} {float(r['time_us']):8.3f} {r['note'][:60]}")
PY
}
for it in 25 100 400; do
  run ll_n$it allreduce.bidir.ll 8 4K $it mode=ll,ll_max_bytes=1M
done
run ll_64k allreduce.bidir.ll 8 4K 100 mode=ll,ll_max_bytes=64K
for it in 100 400; do
  run lamport_n$it allreduce.bidir.lamport 8 4K $it mode=lamport,lamport_threads=256
  run flash_n$it allreduce.bidir.flash 8 4K $it mode=flash,flash_engine=ldg
  run stream_n$it allreduce.bidir.stream 8 4K $it mode=stream
  run push_n$it allreduce.bidir.push 8 4K $it mode=push
  run nccl_n$it allreduce.nccl 8 4K $it ""
done
