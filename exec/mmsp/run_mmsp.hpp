// `cclab run` for the two algorithm families whose inputs are not a message size: collective matmul
// (--shape M,K,N) and sparse all-reduce (--rows R --dim D --density p --dist uniform|zipf). run_sweep
// hands such runs here; this file turns the RunOptions into the configurations of exec/mmsp/cmatmul.hpp and
// exec/mmsp/sparse.hpp, prints an nccl-tests-like table and writes the contract records.
//
//   cclab run --algo allgather_matmul.ring -g 2 --shape 1024,4096,4096 -d half
//   cclab run --algo allreduce.sparse,allreduce.nccl --rows 5000000 --dim 2048 --density 0.001,0.01 --dist zipf
//
// Names served (`all` expands to the family the flags select):
//   with --shape  allgather_matmul.{ring,ring_bidir,nccl_cublas}, matmul_reducescatter.{ring,nccl_cublas};
//                 every run also times one cuBLAS matmul of the full gathered shape and of the local shard
//                 on rank 0's GPU (rows matmul.cublas_full, matmul.cublas_shard_xD): the goal's denominators.
//   with --rows   allreduce.sparse; allreduce.nccl (the dense all-reduce of the whole table, timed once per
//                 table); allreduce.sparse_hoststaged (the exchange staged through host memory);
//                 index_match.{quadratic,binsearch,window} (the index-matching kernels on rank 0's data).
// --density and --dist take comma-separated lists (one configuration each). --tune keys of the sparse
// run: path=auto|sparse|dense (or several joined by '+', e.g. sparse+dense+auto: when both forced paths
// are measured, each row gets the measured crossover density in column measured_crossover),
// union=allgather|gather_bcast (or both joined by '+'), dense_iters=N (iterations of the dense table and
// host-staged baselines, default 3), seed=N. Of the collective matmul run: seed=N, matmul_autotune=0|1
// (1: every product through cuBLASLt's fastest timed algorithm for its shape; default 0: cublasGemmEx),
// ring_chunks=N (allgather_matmul.ring's shards travel and are multiplied in N row chunks; default 1).
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/registry.hpp"
#include "core/record.hpp"
#include "exec/runtime/runner.hpp"

namespace cclab::exec {

enum class MmspFamily : uint8_t { none, matmul, sparse };

// The family an option set asks for: matmul when --shape is given or a name is a collective matmul;
// sparse when --rows/--dim/--density/--dist is given or a name exists only for sparse runs; none
// otherwise (run_sweep's own algorithms).
MmspFamily mmsp_family(const RunOptions& o);

// A validated run, built without touching a GPU (so bad input is exit 1 on any machine).
struct MmspRun {
  MmspFamily family = MmspFamily::none;
  std::vector<std::string> algos;  // the names, `all` expanded
  MatmulShape shape;
  std::vector<SparseSpec> sparse;  // one per (dist, density), dist-major
  std::vector<SparseMode> paths = {SparseMode::automatic};
  std::vector<std::string> unions = {"allgather"};
  int dense_iters = 3;
  uint64_t seed = 1;
  bool matmul_autotune = false;  // collective matmul: CmatmulConfig::autotune
  int ring_chunks = 1;           // collective matmul: CmatmulConfig::ring_chunks
};

// Parses and checks everything: names against the family, the shape or sparse flags, dtype (half or
// bfloat16 for matmul, float for sparse), reduction (sum for sparse), the --tune keys above, and flags
// that mean nothing here (sizes, --inplace, -r, NCCL pins). Throws one-line input errors.
MmspRun plan_mmsp(const RunOptions& o);

// "M,K,N" -> shape; input error naming `flag` and the text otherwise.
MatmulShape parse_matmul_shape(std::string_view flag, const std::string& text);

// The density where the forced-sparse and the forced-dense times of allreduce.sparse cross for one
// distribution (extra column dist), interpolated linearly between the two measured densities that
// bracket it: "0.83", "<=0.05" (dense wins at the first), ">1" (sparse wins everywhere), "" without pairs.
std::string measured_sparse_crossover(const std::vector<Record>& rows, const std::string& dist);

// Runs the plan on the GPUs, prints the table to `out`, writes o.csv atomically after every
// configuration. Returns 0, 3 when any result was wrong, 2 when a part failed on the GPUs (the others
// still ran and kept their rows). Throws input errors before touching the GPUs.
int run_mmsp(const RunOptions& o, std::ostream& out);

}  // namespace cclab::exec
