#!/usr/bin/env bash
# Local copies within one GPU issued to a stream and as memcpy nodes of a replayed graph, best of 5:
#   sizes     64 MiB-2 GiB, 1 and 8 copies per graph (the copies walk a 6 GiB buffer, never reading what they
#             write) -> <out>/copy_nodes/copy_nodes.csv (how, chunk_mib, copies, us_per_copy, gbps)
#   distance  128-512 MiB copies, 8 per graph, their source and destination 128 MiB-2 GiB apart in one buffer, or
#             in two allocations (distance -1) -> <out>/copy_nodes/copy_distance.csv (how, size_mib, distance_mib,
#             us_per_copy, gbps)
#   bash scripts/gpu_probe_copy_nodes.sh <out>   (needs nvcc and one GPU; no cclab build)
set -uo pipefail
W=${1:?output folder}
D=$W/copy_nodes
mkdir -p "$D"
cat >"$D/copy_nodes.cu" <<'CU'
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); std::exit(1); } } while (0)
const size_t MiB = size_t(1) << 20;
cudaStream_t s;
cudaEvent_t ev_a, ev_b;
// Best of 5 of `issue` (its `copies` copies) issued to the stream or captured once and replayed; us per copy.
double best_us(bool graph, int copies, const std::function<void()>& issue) {
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
    CK(cudaEventRecord(ev_a, s));
    once();
    CK(cudaEventRecord(ev_b, s));
    CK(cudaEventSynchronize(ev_b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ev_a, ev_b));
    if (ms < best) best = ms;
  }
  if (graph) { CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g)); }
  return best * 1e3 / copies;
}
int main(int argc, char** argv) {
  const bool distance = argc > 1 && std::strcmp(argv[1], "distance") == 0;
  const size_t fp = 6144 * MiB;
  char *buf = nullptr, *other = nullptr;
  CK(cudaMalloc(&buf, fp));
  CK(cudaMemset(buf, 1, fp));
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaEventCreate(&ev_a));
  CK(cudaEventCreate(&ev_b));
  auto copy = [&](char* dst, const char* src, size_t n) {
    CK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s));
  };
  if (!distance) {
    std::printf("how,chunk_mib,copies,us_per_copy,gbps\n");
    for (size_t chunk : {64 * MiB, 128 * MiB, 256 * MiB, 384 * MiB, 511 * MiB, 512 * MiB, 513 * MiB, 640 * MiB,
                         768 * MiB, 1024 * MiB, 1280 * MiB, 1536 * MiB, 2048 * MiB})
      for (int copies : {1, 8})
        for (int graph : {0, 1}) {
          const size_t n = fp / chunk;
          const double us = best_us(graph, copies, [&] {
            for (int k = 0; k < copies; ++k)
              copy(buf + (size_t(2 * k + 1) % n) * chunk, buf + (size_t(2 * k) % n) * chunk, chunk);
          });
          std::printf("%s,%zu,%d,%.2f,%.1f\n", graph ? "graph" : "stream", chunk / MiB, copies, us,
                      double(chunk) / (us * 1e3));
          std::fflush(stdout);
        }
    return 0;
  }
  CK(cudaMalloc(&other, 1024 * MiB));
  CK(cudaMemset(other, 1, 1024 * MiB));
  std::printf("how,size_mib,distance_mib,us_per_copy,gbps\n");
  const int copies = 8;
  for (size_t size : {128 * MiB, 256 * MiB, 512 * MiB})
    for (long dist : {-1L, 128L, 256L, 384L, 512L, 640L, 768L, 1024L, 1536L, 2048L}) {
      if (dist >= 0 && size_t(dist) * MiB < size) continue;  // overlapping
      for (int graph : {0, 1}) {
        const double us = best_us(graph, copies, [&] {
          for (int k = 0; k < copies; ++k) {
            if (dist < 0) {  // alternate directions between the two allocations
              char* x = buf + size_t(k % 4) * 1024 * MiB;
              copy(k % 2 ? x : other, k % 2 ? other : x, size);
            } else {
              char* src = buf + size_t(k % 2) * 512 * MiB;
              copy(src + size_t(dist) * MiB, src, size);
            }
          }
        });
        std::printf("%s,%zu,%ld,%.2f,%.1f\n", graph ? "graph" : "stream", size / MiB, dist, us,
                    double(size) / (us * 1e3));
        std::fflush(stdout);
      }
    }
}
CU
nvcc -O2 -arch=sm_90 -o "$D/copy_nodes" "$D/copy_nodes.cu" >"$D/nvcc.log" 2>&1 || { echo "nvcc failed"; tail -5 "$D/nvcc.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.mem,clocks.sm --format=csv >"$D/gpu.txt" 2>&1
timeout 120 "$D/copy_nodes" | tee "$D/copy_nodes.csv"
timeout 150 "$D/copy_nodes" distance | tee "$D/copy_distance.csv"
