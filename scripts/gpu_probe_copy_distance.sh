#!/usr/bin/env bash
# Local copies within one GPU as memcpy nodes of a replayed graph (8 per graph) and issued to a stream: copy size
# against the distance between source and destination in one 6 GiB buffer, and between two separate allocations,
# best of 5:
#   bash scripts/gpu_probe_copy_distance.sh <out>   (needs nvcc and one GPU; no cclab build)
# -> <out>/copy_distance/copy_distance.csv (how, size_mib, distance_mib (-1: two allocations), us_per_copy, gbps)
set -uo pipefail
W=${1:?output folder}
D=$W/copy_distance
mkdir -p "$D"
cat >"$D/copy_distance.cu" <<'CU'
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); std::exit(1); } } while (0)
int main() {
  const size_t MiB = size_t(1) << 20, fp = 6144 * MiB;
  char *buf = nullptr, *other = nullptr;
  CK(cudaMalloc(&buf, fp));
  CK(cudaMalloc(&other, 1024 * MiB));
  CK(cudaMemset(buf, 1, fp));
  CK(cudaMemset(other, 1, 1024 * MiB));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::printf("how,size_mib,distance_mib,us_per_copy,gbps\n");
  const int copies = 8;
  for (size_t size : {128 * MiB, 256 * MiB, 512 * MiB})
    for (long dist : {-1L, 128L, 256L, 384L, 512L, 640L, 768L, 1024L, 1536L, 2048L}) {
      if (dist >= 0 && size_t(dist) * MiB < size) continue;  // overlapping
      for (int graph : {0, 1}) {
        auto issue = [&] {
          for (int k = 0; k < copies; ++k) {
            if (dist < 0) {  // alternate directions between the two allocations
              char* x = buf + size_t(k % 4) * 1024 * MiB;
              CK(cudaMemcpyAsync(k % 2 ? x : other, k % 2 ? other : x, size, cudaMemcpyDeviceToDevice, s));
            } else {
              char* src = buf + size_t(k % 2) * 512 * MiB;
              CK(cudaMemcpyAsync(src + size_t(dist) * MiB, src, size, cudaMemcpyDeviceToDevice, s));
            }
          }
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
        std::printf("%s,%zu,%ld,%.2f,%.1f\n", graph ? "graph" : "stream", size / MiB, dist, us, double(size) / (us * 1e3));
        std::fflush(stdout);
        if (graph) { CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g)); }
      }
    }
  std::printf("# buf %p other %p\n", (void*)buf, (void*)other);
}
CU
nvcc -O2 -arch=sm_90 -o "$D/copy_distance" "$D/copy_distance.cu" >"$D/nvcc.log" 2>&1 || { echo "nvcc failed"; tail -5 "$D/nvcc.log"; exit 1; }
timeout 150 "$D/copy_distance" | tee "$D/copy_distance.csv"
