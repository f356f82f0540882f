#!/usr/bin/env bash
# On a machine with 2 GPUs, from the repository root (a device call: bash scripts/gpu_shim_mp.sh, output under
# $OUT): the shim's one-process-per-GPU GPU tests (tests/shim/test_shim_mp_gpu.cpp), then PyTorch's all-reduce
# (scripts/torch_allreduce_check.py, float32 8 B-64 MiB) with NCCL alone, through the shim, through the shim with
# lamport's PDL off, and NCCL alone again; prints the four times per size. Records: results/shim/h100x2/mp/.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 TORCH_NCCL_USE_COMM_NONBLOCKING=0
T0=$(date +%s)
stamp() { echo "## [$(($(date +%s) - T0)) s] $*"; }
W=${OUT:-/tmp/cclab_shim_torch}/shim_torch && mkdir -p "$W"
cd "$(dirname "$0")/.." || exit 2
echo "commit $(cat ../commit 2>/dev/null || git rev-parse --short=12 HEAD)" | tee "$W/call.log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$W/call.log"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF >"$W/cmake.log" 2>&1
cmake --build build-gpu -j "$(nproc)" --target cclab_nccl test_shim_mp_gpu >"$W/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$W/build.log" | head -40; exit 1; }
stamp "build done"
timeout 150 ./build-gpu/tests/shim/test_shim_mp_gpu >"$W/test_shim_mp_gpu.log" 2>&1; echo "test_shim_mp_gpu rc=$?"
grep -E "^\[ *(OK|FAILED|SKIPPED) *\]|PASSED|FAILED" "$W/test_shim_mp_gpu.log" | head -20
SHIM=$(readlink -f build-gpu/shim/libcclab_nccl.so)
TNCCL=$(python3 -c "import nvidia.nccl, glob, os; print(glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so*'))[0])")
echo "torch's NCCL: $TNCCL"
run() {  # label, extra env...
  local label=$1; shift
  stamp "torch $label"
  env "$@" timeout 100 python3 scripts/torch_allreduce_check.py "$W/torch" --label "$label" --max 64M --dtypes float32 \
    >"$W/torch_$label.log" 2>&1; echo "  rc=$? $(tail -1 "$W/torch_$label.log")"
}
run nccl
run shim LD_PRELOAD="$SHIM" CCLAB_NCCL_LIB="$TNCCL"
run shim_nopdl LD_PRELOAD="$SHIM" CCLAB_NCCL_LIB="$TNCCL" CCLAB_TUNE=lamport_pdl=0
run nccl_again
cd "$W/torch" && paste -d, torch_allreduce_nccl.csv torch_allreduce_shim.csv torch_allreduce_shim_nopdl.csv torch_allreduce_nccl_again.csv |
  awk -F, '{ print $1, $3, $8, $13, $18 }'
stamp done
[ -n "${OUT:-}" ] && tar czf "$OUT/shim_torch.tgz" -C "$W" . 2>/dev/null
