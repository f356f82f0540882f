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
