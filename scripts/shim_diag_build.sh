# Sourced by the shim's diagnostic device-call steps (gpu_shim_forwarded.sh, gpu_shim_small.sh), run from the carried
# source tree with $W the output folder: builds the shim (build-measure) and nccl-tests from .carry/nccl-tests (see
# scripts/gpu_shim_large.sh), logs under $W, and sets SHIM (the library) and NT (nccl-tests' binaries). Exits on a
# failed build.
ROOT=$(cd ../.. && pwd)
cmake --build build-measure -j "$(nproc)" --target cclab_nccl >"$W/shim_build.log" 2>&1 || exit 1
SHIM=$PWD/build-measure/shim/libcclab_nccl.so
NT=/tmp/cclab_nccl_tests_build
make -C "$ROOT/.carry/nccl-tests" -j "$(nproc)" BUILDDIR=$NT CUDA_HOME=/usr/local/cuda \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$W/nt_build.log" 2>&1 || exit 1
