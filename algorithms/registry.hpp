// Every algorithm by its contract name (`<collective>.<variant>`), what it needs, and the function that
// emits its schedule. This is the one list the CLI, the tests and every backend read.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/transport.hpp"

namespace cclab {

// Collective matmul: per-device shard shapes. allgather_matmul: A_d is m x k, B_d is k x n, output
// C_d is (m*D) x n. matmul_reducescatter: A_d is (m*D) x k, B_d is k x n, output is the m x n block.
struct MatmulShape {
  int64_t m = 0, k = 0, n = 0;
  bool valid() const { return m > 0 && k > 0 && n > 0; }
};

enum class IndexDist : uint8_t { uniform, zipf };
// allreduce.sparse: which value exchange. automatic switches to the dense table above the density
// rule of adv_sparse.hpp; sparse and dense force one path (to measure the crossover).
enum class SparseMode : uint8_t { automatic, sparse, dense };

// Sparse all-reduce: a table of `rows` rows of `dim` elements; each rank holds `density * rows` rows.
struct SparseSpec {
  int64_t rows = 0;
  int64_t dim = 0;
  double density = 0.01;
  IndexDist dist = IndexDist::uniform;
  uint64_t seed = 1;
  SparseMode mode = SparseMode::automatic;
  // Dense path only: the result is the whole reduced table (rows x dim, row i at row i, zeros where no
  // rank holds a row) after the union indices, instead of the union rows gathered out of it. This is
  // SparCML's switch of representation and what the GPU executor does (exec/mmsp/sparse.hpp); the simulator's
  // predictions of measured rows set it (sim/compare.cpp).
  bool table_result = false;
};

struct AlgoArgs {
  int nranks = 1;
  int64_t count = 0;  // elements, nccl-tests' count for the collective (see Schedule::count)
  DType dtype = DType::f32;
  RedOp redop = RedOp::sum;
  int root = 0;
  bool in_place = false;
  int node_size = 0;        // ranks per node for hierarchical algorithms; 0: all ranks form one node
  int channels = 1;         // parallel channels the algorithm may spread over (NCCL-style)
  int64_t chunk_bytes = 0;  // pipeline chunk size; 0: the algorithm's default
  MatmulShape shape;
  SparseSpec sparse;
  // Backend settings as `cclab run --tune` and `cclab sim --tune` take them ("key=value,..."): the lowering's
  // choices (lowering=fused, mode=ll, ...) and NCCL's own settings (NCCL_ALGO=Ring, NCCL_PROTO=Simple, ...).
  // Algorithms read none of it; the lowering and the NCCL model do.
  std::string tune;
};

// Which backends can run an algorithm.
enum Backends : uint8_t { kRef = 1, kSim = 2, kGpu = 4, kAll = 7 };

struct Algorithm {
  std::string name;        // "allreduce.ring"
  std::string collective;  // "allreduce"
  std::string summary;     // one line for `cclab list`
  uint8_t backends = kAll;
  bool library = false;  // a library baseline: the executor calls the library; the schedule is the
                         // library's algorithm as the model sees it (e.g. NCCL's ring)
  bool rooted = false;
  bool hierarchical = false;  // reads AlgoArgs::node_size (ranks form nodes)
  bool needs_shape = false;   // collective matmul
  bool needs_sparse = false;  // sparse all-reduce
  // Emits the schedule into t (whose Schedule already has nranks, count, dtype, ... set from args).
  // Throws an input error naming the problem when the args do not fit (e.g. rhd on 6 ranks).
  std::function<void(const AlgoArgs&, Transport&)> build;
};

const std::vector<Algorithm>& algorithms();
// Throws an input error listing close names when unknown, and saying so for an executor baseline.
const Algorithm& find_algorithm(std::string_view name);

// Names `cclab run --rows` accepts that are no schedule: the executor's own baselines, measured beside the
// sparse all-reduce (exec/mmsp/sparse.hpp). No schedule describes them, so neither the reference nor the
// simulator runs them; `cclab list` shows them with the algorithms.
struct ExecutorBaseline {
  std::string name;        // "index_match.window"
  std::string collective;  // "index_match"
  std::string summary;     // one line for `cclab list`
};
const std::vector<ExecutorBaseline>& executor_baselines();

// nccl-tests' element count for a size in bytes (its -b/-e values): bytes / dtype size, rounded down
// to a multiple of nranks for the collectives made of one block per rank (allgather, reducescatter,
// alltoall, gather, scatter), as nccl-tests' getCollByteCount does.
int64_t count_for_bytes(std::string_view collective, int64_t bytes, DType dtype, int nranks);

// Builds a complete, validated schedule for `algo` with `args`.
Schedule make_schedule(const Algorithm& algo, const AlgoArgs& args);
// The same without validate(), for callers that check only what they can afford (huge simulations).
Schedule record_schedule(const Algorithm& algo, const AlgoArgs& args);

}  // namespace cclab
