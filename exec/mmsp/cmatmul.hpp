// Collective matmul on GPUs: C = AllGather(A) @ B with the shard transfers hidden behind the local
// matmuls, its mirror image (matmul then reduce-scatter), and the library baseline.
//
//   allgather_matmul.ring          per step, the local matmul of the shard in hand (cuBLAS, fp32
//                                  accumulate) while the same shard travels to the previous rank on a
//                                  copy engine, on its own stream (no SMs taken); per-step
//                                  dependencies between GPUs are CUDA events, not host round trips.
//   allgather_matmul.ring_bidir    half of each shard travels each way round the ring (two copy engines).
//   matmul_reducescatter.ring      each rank computes one block's partial product per step; the partial
//                                  travels to the next rank (copy engine) while the next block is
//                                  computed, and is added there.
//   allgather_matmul.nccl_cublas   NCCL all-gather, then one cuBLAS matmul (the baseline).
//   matmul_reducescatter.nccl_cublas  one cuBLAS matmul, then NCCL reduce-scatter (baseline).
//
// Shapes (row-major, per rank, as AlgoArgs::shape): allgather_matmul: A_d is m x k, B_d is k x n,
// C_d = gather(A) @ B_d is (D*m) x n. matmul_reducescatter: A_d is (D*m) x k, B_d is k x n, and rank d
// receives rows [d*m, (d+1)*m) of sum_e A_e @ B_e.
//
// Every run is checked (output poisoned with NaN first) against a cuBLAS matmul with fp32 output of
// the gathered operands, built by plain peer copies independent of the algorithm. In the same run it
// times one cuBLAS matmul of the full gathered shape ((D*m) x k by k x n) and of the local shard
// (m x k by k x n, the lower bound is D times it) on rank 0's GPU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/registry.hpp"
#include "core/dtype.hpp"
#include "core/record.hpp"
#include "exec/mmsp/cmatmul_gpus.hpp"

namespace cclab::exec {

struct CmatmulConfig {
  std::vector<std::string> algos;  // names above; empty: all that can run on these ranks
  MatmulShape shape;
  DType dtype = DType::f16;
  int warmup = 5;  // untimed iterations before the timed ones
  int iters = 20;  // timed iterations (mean reported)
  bool check = true;
  uint64_t seed = 1;
  // Also emit the two cuBLAS reference timings as rows (algo matmul.cublas_full, matmul.cublas_shard).
  bool reference_rows = true;
  // Products (and the reference timings) through cuBLASLt with each shape's fastest of its top
  // heuristic algorithms, timed once per shape before any timed iteration (exec/mmsp/cmatmul_lt.cuh);
  // false: cublasGemmEx's default algorithm. `--tune matmul_autotune=0|1`. Off by default: on 2 x H200
  // the tuner's short-burst picks left the rings' times unchanged (fp16) or
  // ~2 % faster (bf16) but made the full-shape reference 1-12 % slower in the 50-iteration timing, which
  // flatters the ratio against it; see exec/mmsp/cmatmul_lt.cuh and
  // docs/findings/2026-11-22-collective-matmul-spread-autotune.md.
  bool autotune = false;
  // allgather_matmul.ring: each shard travels as this many row chunks (one copy each) and an arrived
  // shard is multiplied chunk by chunk as they land. 1: whole shards. `--tune ring_chunks=N`.
  int ring_chunks = 1;
};

// The algorithm names this runner serves.
const std::vector<std::string>& collective_matmul_algos();
bool is_collective_matmul(std::string_view algo);

// Runs, checks and times each requested algorithm; one contract Record per algorithm with the
// `shape` column, `wrong` (elements outside tolerance; -1 when unchecked) and extra columns
// tflops (per GPU), util_vs_bound (D x shard matmul time / time), ratio_vs_cublas_full
// (time / one full cuBLAS matmul), speedup_vs_nccl_cublas, relerr (||out-ref|| / ||ref||),
// t_full_us and t_bound_us. Throws an input error for a bad shape, dtype or name. With `failures`,
// an algorithm that fails (e.g. an NCCL error) is reported there ("algo: message") and left out, and
// the others still run; without it, the first failure throws.
std::vector<Record> run_collective_matmul(RankGpus& gpus, const CmatmulConfig& cfg,
                                          std::vector<std::string>* failures = nullptr);

}  // namespace cclab::exec
