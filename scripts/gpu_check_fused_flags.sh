#!/usr/bin/env bash
# Check (gpu_call.sh step) of the fused kernel's flags on every GPU of the machine: its GPU test (every schedule,
# checked element by element), compute-sanitizer memcheck on a short fused run, the general algorithms fused at
# 8 B-16 MiB beside NCCL, and the fused programs' small sizes on 2, 3 and 4 GPUs (gpu_probe_fused_peers.sh).
# Records: <out>/probe_<name>.csv; the last lines are a table of time against NCCL's.
# Run: cp scripts/gpu_check_fused_flags.sh scripts/gpu_probe_fused_peers.sh .carry/ &&
#   bash .carry/gpu_call.sh <name> gpu_check_fused_flags
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
BIN=$(dirname "$CCLAB")
t0=$(date +%s)
timeout 120 "$BIN/test_exec_fused_gpu" --gtest_brief=1 >"$W/test_exec_fused_gpu.log" 2>&1
echo "test_exec_fused_gpu rc=$? $(($(date +%s) - t0)) s: $(grep -cE '^\[       OK' "$W/test_exec_fused_gpu.log") ok, $(grep -E '^\[  (PASSED|FAILED)' "$W/test_exec_fused_gpu.log" | tr '\n' ' ')"
GENERAL=allgather.ring,reducescatter.ring,allreduce.ring,alltoall.direct,alltoall.bruck,broadcast.pipeline,scatter.direct,gather.direct
timeout 60 compute-sanitizer --tool memcheck "$CCLAB" run --algo $GENERAL -b 8 -e 64K -f 16 -w 1 -n 2 --graph 0 \
  --tune lowering=fused >"$W/memcheck.log" 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY' "$W/memcheck.log" | head -1)"
PROBE_S=60 probe nccl --algo allgather.nccl,reducescatter.nccl,allreduce.nccl,alltoall.nccl,broadcast.nccl \
  --inplace 0 -w 3 --timeout 20 -b 8 -e 16M -f 8
PROBE_S=60 probe fused --algo $GENERAL --inplace 0 -w 3 --timeout 20 -b 8 -e 16M -f 8
bash scripts/gpu_probe_fused_peers.sh "$W" | tail -40
python3 - "$W" <<'PY'
import csv, os, sys
w = sys.argv[1]
rows = lambda n: list(csv.DictReader(open(os.path.join(w, "probe_%s.csv" % n)))) if os.path.exists(os.path.join(w, "probe_%s.csv" % n)) else []
nccl = {(r["collective"], r["bytes"]): float(r["time_us"]) for r in rows("nccl")}
print("# fused time (us) and time / NCCL's, out of place, float, %s GPUs" % (rows("fused")[0]["ranks"] if rows("fused") else "?"))
for r in rows("fused"):
    ref = nccl.get((r["collective"], r["bytes"]))
    print("%-20s %9s %9.2f %6s %s" % (r["algo"], r["bytes"], float(r["time_us"]), "%.2f" % (float(r["time_us"]) / ref) if ref else "-", r.get("lowering", "")))
PY
