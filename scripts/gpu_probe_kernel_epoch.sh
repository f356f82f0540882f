#!/usr/bin/env bash
# What the bidir kernels' bookkeeping costs a launch, on one GPU: replayed graphs of 100 PDL launches (each lets the
# next start at its start) of a kernel that does nothing, reads its launch's epoch (a word the launch before it
# advanced), and also counts its CTAs' arrival at the end (the last CTA advances the epoch), on 1 CTA of 256 threads
# and 128 CTAs of 256; per launch, median of 5 replays:
#   bash scripts/gpu_probe_kernel_epoch.sh <out>   (needs nvcc and one GPU; no cclab build)
# -> <out>/kernel_epoch/kernel_epoch.csv (variant, ctas, threads, us_per_launch)
set -uo pipefail
W=${1:?output folder}
D=$W/kernel_epoch
mkdir -p "$D"
cat >"$D/kernel_epoch.cu" <<'CU'
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); std::exit(1); } } while (0)
struct Ctl {
  unsigned epoch;
  unsigned done;
  unsigned sink;
};
// 0: nothing; 1: every thread reads the epoch; 2: and the CTAs count their arrival, the last advancing the epoch.
template <int V>
__global__ void k(Ctl* c) {
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
int main() {
  Ctl* c = nullptr;
  CK(cudaMalloc(&c, sizeof(Ctl)));
  CK(cudaMemset(c, 0, sizeof(Ctl)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  const int kLaunches = 100;
  std::printf("variant,ctas,threads,us_per_launch\n");
  const char* names[] = {"empty", "epoch_read", "epoch_read_arrival_count"};
  for (int ctas : {1, 128})
    for (int v = 0; v < 3; ++v) {
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr.val.programmaticStreamSerializationAllowed = 1;
      cudaLaunchConfig_t cfg{};
      cfg.gridDim = dim3(ctas);
      cfg.blockDim = dim3(256);
      cfg.stream = s;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      void (*kern)(Ctl*) = v == 0 ? k<0> : v == 1 ? k<1> : k<2>;
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < kLaunches; ++i) CK(cudaLaunchKernelEx(&cfg, kern, c));
      CK(cudaStreamEndCapture(s, &g));
      CK(cudaGraphInstantiate(&ge, g, 0));
      CK(cudaGraphLaunch(ge, s));
      CK(cudaStreamSynchronize(s));
      std::vector<float> t;
      for (int rep = 0; rep < 5; ++rep) {
        CK(cudaEventRecord(a, s));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      std::printf("%s,%d,256,%.3f\n", names[v], ctas, t[2] * 1e3 / kLaunches);
      std::fflush(stdout);
      CK(cudaGraphExecDestroy(ge));
      CK(cudaGraphDestroy(g));
    }
}
CU
nvcc -O2 -arch=sm_90 -o "$D/kernel_epoch" "$D/kernel_epoch.cu" >"$D/nvcc.log" 2>&1 || { echo "nvcc failed"; tail -5 "$D/nvcc.log"; exit 1; }
timeout 60 "$D/kernel_epoch" | tee "$D/kernel_epoch.csv"
