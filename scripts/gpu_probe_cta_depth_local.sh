#!/usr/bin/env bash
# One CTA's local reduction and copy against the threads it runs (64, 128, 256, 512; 4 independent 16-byte vectors,
# or vector pairs, in flight per thread, as the calibration's one-CTA series), 16 KiB-16 MiB per operand, on one GPU:
# a test of the model of sim/paths_bidir.cpp, which reads the 512-, 256- and 128-thread series and takes Little's
# law below them: the last lines predict the 64-thread times from the 128-thread ones and print the error.
#   -> <out>/cta_depth_local/cta_depth_local.csv (kind, threads, bytes, us: per launch, median of 5 timings of 50),
#      <out>/cta_depth_local/summary.txt (the table printed last)
#   bash scripts/gpu_probe_cta_depth_local.sh <out>   (needs nvcc and one GPU; no cclab build)
set -uo pipefail
W=${1:?output folder}
D=$W/cta_depth_local
mkdir -p "$D"
cat >"$D/cta_depth_local.cu" <<'CU'
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); std::exit(1); } } while (0)
constexpr int kUnroll = 4;
__device__ float4 add4(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
// dst = a + b: each thread loads its 4 pairs, then adds and stores them (the calibration's k_reduce).
__global__ void reduce(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ dst, long n) {
  for (long i = threadIdx.x; i + (kUnroll - 1) * long(blockDim.x) < n; i += long(blockDim.x) * kUnroll) {
    float4 va[kUnroll], vb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      va[u] = a[i + u * blockDim.x];
      vb[u] = b[i + u * blockDim.x];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) dst[i + u * blockDim.x] = add4(va[u], vb[u]);
  }
}
// dst = a: each thread loads its 4 vectors, then stores them (the calibration's k_copy).
__global__ void copy(const float4* __restrict__ a, float4* __restrict__ dst, long n) {
  for (long i = threadIdx.x; i + (kUnroll - 1) * long(blockDim.x) < n; i += long(blockDim.x) * kUnroll) {
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = a[i + u * blockDim.x];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) dst[i + u * blockDim.x] = v[u];
  }
}
int main() {
  const long kMax = 16L << 20;
  float4 *a, *b, *d;
  CK(cudaMalloc(&a, kMax));
  CK(cudaMalloc(&b, kMax));
  CK(cudaMalloc(&d, kMax));
  CK(cudaMemset(a, 0, kMax));
  CK(cudaMemset(b, 0, kMax));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::printf("kind,threads,bytes,us\n");
  for (const char* kind : {"reduce", "copy"})
    for (int threads : {512, 256, 128, 64})
      for (long bytes = 16L << 10; bytes <= kMax; bytes *= 4) {
        const long n = bytes / 16;
        auto launch = [&] {
          if (kind[0] == 'r')
            reduce<<<1, threads>>>(a, b, d, n);
          else
            copy<<<1, threads>>>(a, d, n);
        };
        for (int w = 0; w < 5; ++w) launch();
        CK(cudaDeviceSynchronize());
        std::vector<float> t;
        for (int rep = 0; rep < 5; ++rep) {
          const int iters = bytes >= (4L << 20) ? 10 : 50;
          CK(cudaEventRecord(e0));
          for (int i = 0; i < iters; ++i) launch();
          CK(cudaEventRecord(e1));
          CK(cudaEventSynchronize(e1));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          t.push_back(ms * 1000 / iters);
        }
        std::sort(t.begin(), t.end());
        std::printf("%s,%d,%ld,%.3f\n", kind, threads, bytes, t[2]);
      }
  return 0;
}
CU
nvcc -O3 -arch=sm_90 -o "$D/cta_depth_local" "$D/cta_depth_local.cu" >"$D/build.log" 2>&1 || {
  cat "$D/build.log"
  exit 1
}
"$D/cta_depth_local" >"$D/cta_depth_local.csv" || exit 1
python3 - "$D/cta_depth_local.csv" <<'PY' | tee "$D/summary.txt"
import csv, sys
t = {(r["kind"], int(r["threads"]), int(r["bytes"])): float(r["us"]) for r in csv.DictReader(open(sys.argv[1]))}
print("# size part (us): the time less the 16 KiB time at the same depth; v = threads x 4 vectors in flight")
print("# the model reads 512, 256 and 128 threads; below, Little's law from 128: pred64 = 2 x the 128-thread part")
print("# (two_depth64: Little's law from 256 where only 512 and 256 are measured, 4 x the 256-thread part)")
print("%-7s %9s %8s %8s %8s %8s %8s %6s %11s" % ("kind", "bytes", "512", "256", "128", "64", "pred64", "err",
                                                "two_depth64"))
for kind in ("reduce", "copy"):
    for b in sorted({k[2] for k in t if k[0] == kind}):
        if b == 16 << 10:
            continue
        part = {th: t[(kind, th, b)] - t[(kind, th, 16 << 10)] for th in (512, 256, 128, 64)}
        pred = 2 * max(part[128], part[256], part[512])
        err = "%5.1f%%" % (100 * (pred / part[64] - 1)) if part[64] > 1 else "-"
        print("%-7s %9d %8.2f %8.2f %8.2f %8.2f %8.2f %6s %11.2f" % (kind, b, part[512], part[256], part[128], part[64],
                                                                   pred, err, 4 * max(part[256], part[512])))
PY
