#!/usr/bin/env bash
# Local copies of 64 MiB-2 GiB within one GPU, issued to a stream and as memcpy nodes of a replayed graph (1 and 8
# copies per graph; the copies walk a 6 GiB buffer, never reading what they write), best of 5:
#   bash scripts/gpu_probe_copy_nodes.sh <out>   (needs nvcc and one GPU; no cclab build)
# -> <out>/copy_nodes/copy_nodes.csv (how, chunk_mib, copies, us_per_copy, gbps)
set -uo pipefail
W=${1:?output folder}
D=$W/copy_nodes
mkdir -p "$D"
cat >"$D/copy_nodes.cu" <<'CU'
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); std::exit(1); } } while (0)
int main() {
  const size_t MiB = size_t(1) << 20, fp = 6144 * MiB;
  char* buf = nullptr;
  CK(cudaMalloc(&buf, fp));
  CK(cudaMemset(buf, 1, fp));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::printf("how,chunk_mib,copies,us_per_copy,gbps\n");
  for (size_t chunk : {64 * MiB, 128 * MiB, 256 * MiB, 384 * MiB, 511 * MiB, 512 * MiB, 513 * MiB, 640 * MiB,
                       768 * MiB, 1024 * MiB, 1280 * MiB, 1536 * MiB, 2048 * MiB})
    for (int copies : {1, 8})
      for (int graph : {0, 1}) {
        const size_t n = fp / chunk;
        auto issue = [&] {
          for (int k = 0; k < copies; ++k)
            CK(cudaMemcpyAsync(buf + (size_t(2 * k + 1) % n) * chunk, buf + (size_t(2 * k) % n) * chunk, chunk,
                               cudaMemcpyDeviceToDevice, s));
        };
        cudaGraphExec_t ge = nullptr;
        cudaGraph_t g = nullptr;
        if (graph) {
          CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
          issue();
          CK(cudaStreamEndCapture(s, &g));
          CK(cudaGraphInstantiate(&ge, g, 0));
        }
        auto once = [&] { if (graph) CK(cudaGraphLaunch(ge, s)); else issue(); };
        once();
        CK(cudaStreamSynchronize(s));
        float best = 1e30f;
        for (int rep = 0; rep < 5; ++rep) {
          CK(cudaEventRecord(a, s));
          once();
          CK(cudaEventRecord(b, s));
          CK(cudaEventSynchronize(b));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, a, b));
          if (ms < best) best = ms;
        }
        const double us = best * 1e3 / copies;
        std::printf("%s,%zu,%d,%.2f,%.1f\n", graph ? "graph" : "stream", chunk / MiB, copies, us,
                    double(chunk) / (us * 1e3));
        std::fflush(stdout);
        if (graph) { CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g)); }
      }
  CK(cudaFree(buf));
}
CU
nvcc -O2 -arch=sm_90 -o "$D/copy_nodes" "$D/copy_nodes.cu" >"$D/nvcc.log" 2>&1 || { echo "nvcc failed"; tail -5 "$D/nvcc.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.mem,clocks.sm --format=csv >"$D/gpu.txt" 2>&1
timeout 120 "$D/copy_nodes" | tee "$D/copy_nodes.csv"
