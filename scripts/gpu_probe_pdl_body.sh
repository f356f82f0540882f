#!/usr/bin/env bash
# How much of a kernel launch a replayed graph hides behind the kernel before it, by the length of that kernel's
# body, on one GPU: graphs of 100 launches of a kernel that waits for its predecessor (griddepcontrol.wait), lets its
# successor launch (griddepcontrol.launch_dependents) at its start or at its end, then spins T ns; launched with and
# without programmatic dependent launch, 1 CTA of 32 threads and 132 CTAs of 512; per launch, median of 5 replays:
#   bash scripts/gpu_probe_pdl_body.sh <out>   (needs nvcc and one GPU; no cclab build)
# -> <out>/pdl_body/pdl_body.csv (pdl, release (start|end), ctas, threads, body_ns, us_per_launch, beyond_body_us)
set -uo pipefail
W=${1:?output folder}
D=$W/pdl_body
mkdir -p "$D"
cat >"$D/pdl_body.cu" <<'CU'
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
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
int main() {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  const int kLaunches = 100;
  std::printf("pdl,release,ctas,threads,body_ns,us_per_launch,beyond_body_us\n");
  for (int shape = 0; shape < 2; ++shape)
    for (int pdl : {1, 0})
      for (int first : {1, 0})
        for (unsigned long long ns : {0ULL, 250ULL, 500ULL, 750ULL, 1000ULL, 1500ULL, 2000ULL, 3000ULL, 5000ULL}) {
          const int ctas = shape ? 132 : 1, threads = shape ? 512 : 32;
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
          for (int i = 0; i < kLaunches; ++i) CK(cudaLaunchKernelEx(&cfg, first ? body<true> : body<false>, ns));
          CK(cudaStreamEndCapture(s, &g));
          CK(cudaGraphInstantiate(&ge, g, 0));
          CK(cudaGraphLaunch(ge, s));
          CK(cudaStreamSynchronize(s));
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
          const double us = v[2] * 1e3 / kLaunches;
          std::printf("%d,%s,%d,%d,%llu,%.3f,%.3f\n", pdl, first ? "start" : "end", ctas, threads, ns, us, us - ns * 1e-3);
          std::fflush(stdout);
          CK(cudaGraphExecDestroy(ge));
          CK(cudaGraphDestroy(g));
        }
}
CU
nvcc -O2 -arch=sm_90 -o "$D/pdl_body" "$D/pdl_body.cu" >"$D/nvcc.log" 2>&1 || { echo "nvcc failed"; tail -5 "$D/nvcc.log"; exit 1; }
timeout 120 "$D/pdl_body" | tee "$D/pdl_body.csv"
