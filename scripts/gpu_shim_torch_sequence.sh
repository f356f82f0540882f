#!/usr/bin/env bash
# Diagnostic for the shim under PyTorch (one process per GPU): are lamport sizes slow because of the calls that came
# before them? On a machine with 2 GPUs, from the repository root (output under $OUT): builds the shim, then runs
# scripts/torch_allreduce_check.py (float32) with NCCL alone and through the shim from 8 B (ll sizes first), with
# lamport at every size (CCLAB_TUNE=auto_ll_max=0), from 256 KiB (no ll size before), and from 8 B again; the sizes
# in TRACE run one more batch under PyTorch's profiler (kernel durations and the GPU's idle time between them).
# Prints the time per call of every run side by side, then the traced kernels' medians. Records:
# results/shim/<device>/mp/sequence/.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 TORCH_NCCL_USE_COMM_NONBLOCKING=0
T0=$(date +%s)
stamp() { echo "## [$(($(date +%s) - T0)) s] $*"; }
W=${OUT:-/tmp/cclab_shim_seq}/shim_seq && mkdir -p "$W"
MAX=${MAX:-8M}
TRACE=${TRACE:-2M,4M}
cd "$(dirname "$0")/.." || exit 2
echo "commit $(cat ../commit 2>/dev/null || git rev-parse --short=12 HEAD)" | tee "$W/call.log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$W/call.log"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF >"$W/cmake.log" 2>&1
cmake --build build-gpu -j "$(nproc)" --target cclab_nccl >"$W/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$W/build.log" | head -40; exit 1; }
stamp "build done"
SHIM=$(readlink -f build-gpu/shim/libcclab_nccl.so)
TNCCL=$(python3 -c "import nvidia.nccl, glob, os; print(glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so*'))[0])")
run() {  # label, min size, extra env...
  local label=$1 min=$2; shift 2
  stamp "torch $label (from $min)"
  env "$@" timeout 120 python3 scripts/torch_allreduce_check.py "$W/torch" --label "$label" --min "$min" --max "$MAX" \
    --dtypes float32 --trace "$TRACE" >"$W/torch_$label.log" 2>&1
  echo "  rc=$? $(tail -1 "$W/torch_$label.log")"
  grep "kernels: median" "$W/torch_$label.log"
}
SH=(LD_PRELOAD="$SHIM" CCLAB_NCCL_LIB="$TNCCL")
run nccl 8
run shim_from8 8 "${SH[@]}"
run shim_lamport_only 8 "${SH[@]}" CCLAB_TUNE=auto_ll_max=0
run shim_from256k 256K "${SH[@]}"
run shim_from8_again 8 "${SH[@]}"
cd "$W/torch" || exit 1
echo "size nccl shim_from8 shim_lamport_only shim_from256k shim_from8_again (us a call)"
python3 - <<'PY'
import csv, glob
runs = ["nccl", "shim_from8", "shim_lamport_only", "shim_from256k", "shim_from8_again"]
t = {r: {int(x["size"]): x["time_us"] for x in csv.DictReader(open(f"torch_allreduce_{r}.csv"))}
     for r in runs if glob.glob(f"torch_allreduce_{r}.csv")}
for s in sorted(set().union(*[v.keys() for v in t.values()])):
    print(s, *[t.get(r, {}).get(s, "-") for r in runs])
PY
stamp done
[ -n "${OUT:-}" ] && tar czf "$OUT/shim_seq.tgz" -C "$W" . 2>/dev/null
exit 0
