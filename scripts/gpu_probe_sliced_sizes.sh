#!/usr/bin/env bash
# Probe (gpu_call.sh step) of where per-CTA flags carry the fused lowering on more than 2 GPUs: the rings at
# 128 MiB-1 GiB fused (per-CTA flags) against the default lowering, and the pipeline broadcast at 16-512 MiB
# fused with larger chunks and several channels against the default; NCCL beside them in the same call.
# Records: <out>/probe_<name>.csv; the last lines are a table of time against NCCL's.
# Run it as a step of a device call: cp scripts/gpu_probe_sliced_sizes.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_sliced_sizes
W=$1
export NCCL_NVLS_ENABLE=0
source scripts/probe_run.sh
RINGS="allreduce.ring,allgather.ring,reducescatter.ring"
big() { PROBE_S=90 probe "$@" --inplace 0 -w 2 --timeout 30 -b 128M -e 1G -f 2; }
big nccl_big --algo allreduce.nccl,allgather.nccl,reducescatter.nccl
big rings_fused --algo $RINGS --tune lowering=fused
big rings_default --algo $RINGS
mid() { PROBE_S=60 probe "$@" --inplace 0 -w 3 --timeout 20 -b 16M -e 512M -f 4; }
mid nccl_bc --algo broadcast.nccl
mid bc_default --algo broadcast.pipeline
for ch in 1 2; do
  for chunk in 2M 8M; do
    mid bc_fused_ch${ch}_$chunk --algo broadcast.pipeline --tune lowering=fused,channels=$ch,chunk_bytes=$chunk
  done
done
mid bc_general_ch2 --algo broadcast.pipeline --tune lowering=plan,channels=2
python3 - "$W" <<'PY'
import csv, os, sys
w = sys.argv[1]
def rows(name):
    path = os.path.join(w, "probe_%s.csv" % name)
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []
nccl = {}
for n in ("nccl_big", "nccl_bc"):
    nccl.update({(r["collective"], r["bytes"]): float(r["time_us"]) for r in rows(n)})
names = sorted(f[len("probe_"):-4] for f in os.listdir(w) if f.startswith("probe_") and f.endswith(".csv") and "nccl" not in f)
cols = {n: {(r["algo"], r["bytes"]): (float(r["time_us"]), r.get("lowering", "")) for r in rows(n)} for n in names}
print("# time / NCCL's (below 1: faster), out of place, float; f: fused, g: general")
for algo in sorted({k[0] for c in cols.values() for k in c}):
    use = [n for n in names if any(k[0] == algo for k in cols[n])]
    print("%-20s %10s " % (algo, "bytes") + " ".join("%16s" % n for n in use))
    for b in sorted({k[1] for n in use for k in cols[n] if k[0] == algo}, key=int):
        ref = nccl.get((algo.split(".")[0], b))
        def cell(n):
            v = cols[n].get((algo, b))
            return "%.2f%s" % (v[0] / ref, v[1][:1]) if v and ref else "-"
        print("%-20s %10s " % ("", b) + " ".join("%16s" % cell(n) for n in use))
PY
