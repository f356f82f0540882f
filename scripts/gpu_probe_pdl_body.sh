#!/usr/bin/env bash
# What a launch costs in a replayed graph of 100 kernel launches, on one GPU (per launch, median of 5 replays):
#   body         a kernel that waits for its predecessor (griddepcontrol.wait), lets its successor launch
#                (griddepcontrol.launch_dependents) at its start or at its end, then spins T ns; with and without
#                programmatic dependent launch, 1 CTA of 32 threads and 132 CTAs of 512
#                -> <out>/pdl_body/pdl_body.csv (pdl, release, ctas, threads, body_ns, us_per_launch, beyond_body_us)
#   bookkeeping  PDL kernels (successor released at the start) that do nothing, read their launch's epoch (a word the
#                launch before advanced), and also count their CTAs' arrival at the end (the last CTA advances the
#                epoch); grids of 1-264 CTAs of 256 threads
#                -> <out>/pdl_body/kernel_epoch.csv (variant, ctas, threads, us_per_launch)
#   bash scripts/gpu_probe_pdl_body.sh <out>   (needs nvcc and one GPU; no cclab build)
set -uo pipefail
W=${1:?output folder}
D=$W/pdl_body
mkdir -p "$D"
cat >"$D/pdl_body.cu" <<'CU'
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); std::exit(1); } } while (0)
__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
template <bool kReleaseFirst>
__global__ void body(unsigned long long ns) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (kReleaseFirst) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const unsigned long long t0 = now_ns();
  while (now_ns() - t0 < ns) {
  }
  if (!kReleaseFirst) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
struct Ctl {
  unsigned epoch;
  unsigned done;
  unsigned sink;
};
// 0: nothing; 1: every thread reads the epoch; 2: and the CTAs count their arrival, the last advancing the epoch.
template <int V>
__global__ void bookkeeping(Ctl* c) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (V == 0) return;
  const unsigned e = *reinterpret_cast<volatile unsigned*>(&c->epoch) + 1;
  if (V == 1) {
    if (e == 0xFFFFFFFFu) c->sink = e;  // keeps the read
    return;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&c->done, 1u) == gridDim.x - 1) {
      c->done = 0;
      __threadfence();
      *reinterpret_cast<volatile unsigned*>(&c->epoch) = e;
    }
  }
}
cudaStream_t s;
// us per launch of a graph of 100 launches of `kernel` (PDL or not), median of 5 replays.
template <typename Arg>
double per_launch_us(void (*kernel)(Arg), Arg arg, int ctas, int threads, bool pdl) {
  const int kLaunches = 100;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(ctas);
  cfg.blockDim = dim3(threads);
  cfg.stream = s;
  cfg.attrs = pdl ? &attr : nullptr;
  cfg.numAttrs = pdl ? 1 : 0;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < kLaunches; ++i) CK(cudaLaunchKernelEx(&cfg, kernel, arg));
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> v;
  for (int rep = 0; rep < 5; ++rep) {
    CK(cudaEventRecord(a, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    v.push_back(ms);
  }
  std::sort(v.begin(), v.end());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return v[2] * 1e3 / kLaunches;
}
int main(int argc, char** argv) {
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (argc > 1 && std::strcmp(argv[1], "bookkeeping") == 0) {
    Ctl* c = nullptr;
    CK(cudaMalloc(&c, sizeof(Ctl)));
    CK(cudaMemset(c, 0, sizeof(Ctl)));
    std::printf("variant,ctas,threads,us_per_launch\n");
    const char* names[] = {"empty", "epoch_read", "epoch_read_arrival_count"};
    void (*kernels[])(Ctl*) = {bookkeeping<0>, bookkeeping<1>, bookkeeping<2>};
    for (int ctas : {1, 2, 4, 8, 16, 32, 64, 128, 264})
      for (int v = 0; v < 3; ++v) {
        std::printf("%s,%d,256,%.3f\n", names[v], ctas, per_launch_us(kernels[v], c, ctas, 256, true));
        std::fflush(stdout);
      }
    return 0;
  }
  std::printf("pdl,release,ctas,threads,body_ns,us_per_launch,beyond_body_us\n");
  for (int shape = 0; shape < 2; ++shape)
    for (int pdl : {1, 0})
      for (int first : {1, 0})
        for (unsigned long long ns : {0ULL, 250ULL, 500ULL, 750ULL, 1000ULL, 1500ULL, 2000ULL, 3000ULL, 5000ULL}) {
          const int ctas = shape ? 132 : 1, threads = shape ? 512 : 32;
          const double us = per_launch_us(first ? body<true> : body<false>, ns, ctas, threads, pdl);
          std::printf("%d,%s,%d,%d,%llu,%.3f,%.3f\n", pdl, first ? "start" : "end", ctas, threads, ns, us, us - ns * 1e-3);
          std::fflush(stdout);
        }
}
CU
nvcc -O2 -arch=sm_90 -o "$D/pdl_body" "$D/pdl_body.cu" >"$D/nvcc.log" 2>&1 || { echo "nvcc failed"; tail -5 "$D/nvcc.log"; exit 1; }
timeout 120 "$D/pdl_body" | tee "$D/pdl_body.csv"
timeout 60 "$D/pdl_body" bookkeeping | tee "$D/kernel_epoch.csv"
