#!/usr/bin/env bash
# Whether copies slow down with the memory they range over, on one GPU (a gpu_call.sh step):
#   footprint  cudaMemcpyAsync within the GPU, chunks of 64-512 MiB over a 4 GiB buffer, each replayed graph of 8
#              copies per stream on 1, 2 and 4 streams at once; per copy time and rate -> <out>/footprint/footprint.csv
#   shared     alltoall.hier, alltoall.bruck, alltoall.direct with 2 ranks sharing the GPU, 64 MiB-1 GiB (their
#              puts are then copies within the GPU); alltoall.hier on one stream per rank, and without graphs
#              -> <out>/footprint/shared*.csv
# Run: cp scripts/gpu_probe_footprint.sh .carry/ && bash .carry/gpu_call.sh <name> gpu_probe_footprint
set -uo pipefail
W=${1:?output folder}
CCLAB=${CCLAB:-cclab}
D=$W/footprint
mkdir -p "$D"
cat >"$D/footprint.cu" <<'CU'
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); std::exit(1); } } while (0)
int main() {
  const size_t MiB = size_t(1) << 20;
  std::printf("chunk_mib,footprint_mib,streams,us_per_copy,gbps\n");
  const int kStreams = 4;
  for (size_t chunk : {64 * MiB, 128 * MiB, 256 * MiB, 512 * MiB})
    for (size_t fp : {4096 * MiB})
      for (int streams : {1, 2, 4}) {
        char* buf = nullptr;
        CK(cudaMalloc(&buf, fp));
        CK(cudaMemset(buf, 1, fp));
        const size_t n = fp / chunk;
        cudaStream_t s[kStreams];
        for (auto& x : s) CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
        cudaEvent_t fork, join;
        CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
        CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeGlobal));
        CK(cudaEventRecord(fork, s[0]));
        for (int i = 1; i < streams; ++i) CK(cudaStreamWaitEvent(s[i], fork));
        const int copies = 8 * streams;
        for (int k = 0; k < copies; ++k) {
          // source and destination chunks walk the footprint in opposite directions (never the same chunk)
          size_t src = size_t(2 * k) % n, dst = size_t(2 * k + 1) % n;
          if (dst == src) dst = (src + 1) % n;
          CK(cudaMemcpyAsync(buf + dst * chunk, buf + src * chunk, chunk, cudaMemcpyDeviceToDevice, s[k % streams]));
        }
        for (int i = 1; i < streams; ++i) {
          cudaEvent_t j;
          CK(cudaEventCreateWithFlags(&j, cudaEventDisableTiming));
          CK(cudaEventRecord(j, s[i]));
          CK(cudaStreamWaitEvent(s[0], j));
        }
        CK(cudaStreamEndCapture(s[0], &g));
        cudaGraphExec_t ge;
        CK(cudaGraphInstantiate(&ge, g, 0));
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        CK(cudaGraphLaunch(ge, s[0]));
        CK(cudaStreamSynchronize(s[0]));
        float best = 1e30f;
        for (int rep = 0; rep < 5; ++rep) {
          CK(cudaEventRecord(a, s[0]));
          CK(cudaGraphLaunch(ge, s[0]));
          CK(cudaEventRecord(b, s[0]));
          CK(cudaEventSynchronize(b));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, a, b));
          if (ms < best) best = ms;
        }
        const double us = best * 1e3 / copies * streams;  // per copy on one stream
        std::printf("%zu,%zu,%d,%.2f,%.1f\n", chunk / MiB, fp / MiB, streams, us, double(chunk) / (us * 1e3));
        std::fflush(stdout);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
        for (auto& x : s) CK(cudaStreamDestroy(x));
        CK(cudaFree(buf));
      }
}
CU
echo "## footprint"
if nvcc -O2 -arch=sm_90 -o "$D/footprint" "$D/footprint.cu" >"$D/nvcc.log" 2>&1; then
  timeout 120 "$D/footprint" >"$D/footprint.csv" 2>&1
  echo "footprint rc=$?"
else
  echo "nvcc failed"; tail -5 "$D/nvcc.log"
fi
echo "## shared"
R=(-g 2 --share-gpus --inplace 0 -c 0 -w 2)
timeout 100 "$CCLAB" run --algo alltoall.hier,alltoall.bruck,alltoall.direct "${R[@]}" -b 64M -e 1G -f 2 \
  --csv "$D/shared.csv" >"$D/shared.log" 2>&1
echo "shared rc=$?"
timeout 60 "$CCLAB" run --algo alltoall.hier "${R[@]}" -b 128M -e 512M -f 2 --tune streams=1 \
  --csv "$D/shared_streams1.csv" >"$D/shared_streams1.log" 2>&1
echo "shared streams=1 rc=$?"
timeout 60 "$CCLAB" run --algo alltoall.hier "${R[@]}" -b 128M -e 512M -f 2 --graph 0 \
  --csv "$D/shared_nograph.csv" >"$D/shared_nograph.log" 2>&1
echo "shared graph=0 rc=$?"
cat "$D/footprint.csv"
python3 - "$D" <<'PY'
import csv, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/shared*.csv")):
    for r in csv.DictReader(open(f)):
        print(f.rsplit("/", 1)[-1], r["algo"], r["bytes"], r["time_us"], r["iters"])
PY
