#!/usr/bin/env bash
# Probe (gpu_call.sh step) of the fused lowering's per-CTA flags (--tune fused_slices=1): their GPU test first
# (every general algorithm checked, replayed), then the rings and the pipeline at 2-128 MiB with group flags, with
# per-CTA flags and under the default lowering, NCCL beside them in the same call; then the pipeline broadcast and
# the rings with per-CTA flags over several channels (chunk i of the pipeline on channel i mod channels) and
# pipeline chunk sizes. Records: <out>/probe_<name>.csv; the last lines are tables of time against NCCL's.
# Run it as a step of a device call: cp scripts/gpu_probe_slices.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_slices
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
BIN=$(dirname "$CCLAB")
t0=$(date +%s)
timeout 150 "$BIN/test_exec_fused_gpu" --gtest_filter='FusedGpu.SlicedProgramsAreCorrect' >"$W/gpu_test_sliced.log" 2>&1
echo "sliced GPU test rc=$? $(($(date +%s) - t0)) s"
tail -3 "$W/gpu_test_sliced.log"
GEN="allreduce.ring,allgather.ring,reducescatter.ring,broadcast.pipeline"
run() { PROBE_S=60 probe "$@" --inplace 0 -w 3 --timeout 20 -b 2M -e 128M -f 2; }
run nccl --algo allreduce.nccl,allgather.nccl,reducescatter.nccl,broadcast.nccl
run fused_group --algo $GEN --tune lowering=fused
run fused_sliced --algo $GEN --tune lowering=fused,fused_slices=1
run default --algo $GEN
for ch in 2 4; do
  run rings_ch$ch --algo allreduce.ring,allgather.ring,reducescatter.ring --tune lowering=fused,fused_slices=1,channels=$ch
done
for ch in 1 2 4; do
  for chunk in 1M 2M 4M; do
    run bc_ch${ch}_$chunk --algo broadcast.pipeline --tune lowering=fused,fused_slices=1,channels=$ch,chunk_bytes=$chunk
  done
done
python3 - "$W" <<'PY'
import csv, os, sys
w = sys.argv[1]
def rows(name):
    path = os.path.join(w, "probe_%s.csv" % name)
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []
nccl = {(r["collective"], r["bytes"]): float(r["time_us"]) for r in rows("nccl")}
print("# time / NCCL's (below 1: faster), out of place, float")
print("%-20s %10s %12s %12s %12s" % ("algo", "bytes", "fused_group", "fused_sliced", "default"))
runs = {n: {(r["algo"], r["bytes"]): float(r["time_us"]) for r in rows(n)} for n in ("fused_group", "fused_sliced", "default")}
for algo, b in sorted(runs["fused_sliced"], key=lambda k: (k[0], int(k[1]))):
    coll = algo.split(".")[0]
    ref = nccl.get((coll, b))
    cell = lambda n: "%.2f" % (runs[n][(algo, b)] / ref) if ref and (algo, b) in runs[n] else "-"
    print("%-20s %10s %12s %12s %12s" % (algo, b, cell("fused_group"), cell("fused_sliced"), cell("default")))
extra = sorted(f[len("probe_"):-4] for f in os.listdir(w) if f.startswith(("probe_rings_ch", "probe_bc_ch")) and f.endswith(".csv"))
print("# sliced, by channels (rings) and channels_chunk (broadcast.pipeline): time / NCCL's")
cols = {n: {(r["algo"], r["bytes"]): float(r["time_us"]) for r in rows(n)} for n in extra}
keys = sorted({k for c in cols.values() for k in c}, key=lambda k: (k[0], int(k[1])))
print("%-20s %10s " % ("algo", "bytes") + " ".join("%10s" % n.replace("rings_", "").replace("bc_", "") for n in extra))
for algo, b in keys:
    ref = nccl.get((algo.split(".")[0], b))
    print("%-20s %10s " % (algo, b) + " ".join("%10s" % ("%.2f" % (cols[n][(algo, b)] / ref) if ref and (algo, b) in cols[n] else "-") for n in extra))
PY
