// Microbenchmarks for calibration: they measure the machine, nothing else. Copy-engine and SM-driven peer
// bandwidth against size (SM loads and SM stores, one direction and both at once), local copy and
// reduction bandwidth, the latency of a kernel launch, of an event wait and of a flag round trip across
// GPUs, the cost of CUDA graph nodes and cross-GPU edges (the executor's general lowering replays graphs),
// NCCL point-to-point send/recv against size, and cuBLAS matmul rates by shape. No collective is ever
// timed here (NCCL runs send/recv only): the profile fitted from these numbers must not have seen what it
// will be asked to predict.
//
// The fit lives in model/calibrate.cpp (CPU code); this file returns plain samples.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cclab::exec {

struct MicrobenchOptions {
  int gpus = 2;                                 // GPUs to use; the peer and flag benchmarks need 2
  int64_t max_bytes = 1LL << 30;                // largest transfer of the bandwidth sweeps
  int64_t min_bytes = 8;                        // smallest
  double budget_s = 75;                         // wall-clock budget; sweeps stop early (and say so) past it
  std::function<void(const std::string&)> log;  // progress lines (may be empty)
};

struct BenchPoint {
  int64_t bytes = 0;
  double seconds = 0;  // mean per operation (median over trials of batch means)
  int reps = 0;        // operations per timed batch
  int64_t m = 0, k = 0, n = 0;
};

struct BenchSeries {
  std::string name;    // one of model::bench_names()
  std::string method;  // how it was measured, one line
  std::vector<BenchPoint> points;
};

struct MicrobenchResult {
  std::string machine, gpu_name, driver, cuda_runtime, nccl_version;
  int gpus = 0;
  std::vector<BenchSeries> series;
  std::vector<std::string> warnings;  // e.g. a sweep cut short by the budget
};

// Throws cclab::Error (environment) when there are fewer GPUs than asked or peer access is unavailable.
MicrobenchResult run_microbenchmarks(const MicrobenchOptions& opt);

// The bidir kernels' transfers and NCCL send/recv under per-GPU graph replay (exec/microbench/microbench_bidir.cu):
// series appended to `out`; run_microbenchmarks runs it last.
void run_bidir_microbenchmarks(const MicrobenchOptions& opt, std::vector<BenchSeries>& out,
                               std::vector<std::string>& warnings);

// The child process of run_bidir_microbenchmarks (`cclab __nccl-p2p-probe PREFIX MAX_BYTES`): NCCL send/recv
// series PREFIX.graph.{uni,bidir}.n100 under the environment it was started with, printed on stdout.
int nccl_p2p_probe_main(const std::string& prefix, int64_t max_bytes);

// The sparse all-reduce's local pieces on GPU0 (exec/microbench/microbench_sparse.cu): series appended to `out`.
void run_sparse_microbenchmarks(const MicrobenchOptions& opt, std::vector<BenchSeries>& out,
                                std::vector<std::string>& warnings);

// The executor's fused kernel on synthetic programs (exec/microbench/microbench_fused.cpp): series appended to `out`.
void run_fused_microbenchmarks(const MicrobenchOptions& opt, std::vector<BenchSeries>& out,
                               std::vector<std::string>& warnings);

}  // namespace cclab::exec
