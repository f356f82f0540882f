// From (algorithm, size, ranks) to a simulated record: builds the schedule (the algorithm's own build();
// for library baselines the NCCL model picks algorithm, protocol, channels and chunking first), runs
// it on the simulator and fills the contract record (backend "sim"). Used by `cclab sim`, the tests
// and the benchmark; `cclab run --predict` may use it too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "algorithms/registry.hpp"
#include "core/record.hpp"
#include "model/nccl.hpp"
#include "sim/simulator.hpp"

namespace cclab::sim {

// Schedules with more ops than this skip validate() (an O(ops) dataflow check that dominates the time
// of huge clusters); the simulator still refuses schedules that cannot finish.
constexpr size_t kValidateMaxOps = 200000;

// make_schedule without validation above kValidateMaxOps ops.
Schedule build_schedule(const Algorithm& algo, const AlgoArgs& args);

// nccl-tests' element count for a size in bytes: collectives that split the buffer among ranks
// (all-gather, reduce-scatter, all-to-all, gather, scatter) round down to a multiple of the ranks.
int64_t count_for_bytes(const Algorithm& algo, int64_t bytes, DType dtype, int nranks);

struct Prediction {
  Record record;                        // backend "sim"
  SimResult result;                     // timings, link statistics
  Schedule schedule;                    // what was simulated (empty ops unless keep_schedule)
  std::optional<model::NcclPlan> nccl;  // for library baselines: what the NCCL model chose
  int fold_period = 0;                  // > 0: ranks [0, fold_period) represented all ranks (folded run)
};

enum class Symmetry : uint8_t {
  automatic,  // fold symmetric schedules on symmetric clusters (sim/symmetric.hpp) unless ops are recorded
  off,        // always simulate every rank
  require,    // fold or throw (tests)
};

struct PredictOptions {
  Symmetry symmetry = Symmetry::automatic;
  bool keep_schedule = false;    // for --trace
  bool record_ops = false;       // per-op times in result
  bool record_timeline = false;  // per-resource load over time
};

// Simulates `algo` with `args` (args.count already set; node_size, shape, sparse as needed).
Prediction predict(Simulator& sim, const Algorithm& algo, AlgoArgs args, const PredictOptions& opt = {});

}  // namespace cclab::sim
