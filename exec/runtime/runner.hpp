// `cclab run`: sweeps sizes for one or more algorithms on the GPUs of this node, checks every
// result, prints nccl-tests' table (out-of-place and in-place) and writes contract CSV records.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "core/dtype.hpp"
#include "core/record.hpp"
#include "exec/runtime/values.hpp"

namespace cclab::exec {

struct RunOptions {
  std::vector<std::string> algos;  // names, or {"all"}
  int nranks = 0;                  // 0: one per visible GPU
  int64_t min_bytes = 32 << 20, max_bytes = 32 << 20;
  int64_t step_factor = 2;  // -f
  int64_t step_bytes = 0;   // -i (additive step), when non-zero
  int warmup = 5, iters = 20;
  // Ranks per node for the hierarchical algorithms (--node-size; 0: all ranks form one node), so that one machine
  // runs them as several nodes (4 GPUs as 2 nodes of 2). Recorded in their rows' node_size column.
  int node_size = 0;
  // -n given: every operation is timed over `iters` launches; otherwise over its plan's launches per
  // replayed graph (lower::LoweredPlan::launches), as the simulator prices it.
  bool iters_given = false;
  bool check = true;
  DType dtype = DType::f32;
  RedOp op = RedOp::sum;
  int root = 0;
  bool graph = true;
  bool share_gpus = false;
  int inplace = 2;  // 0: out-of-place only, 1: in-place only, 2: both
  std::string csv;
  std::string predict;  // the target's name, for the header line
  // Fills pred_time_us / pred_busbw_gbps of a measured record (the simulator, set by the CLI, which
  // links both: exec knows nothing of sim). Throws an input error for rows it cannot predict; those
  // rows keep no prediction.
  std::function<void(Record&)> predictor;
  std::string nccl_algo, nccl_proto;
  std::string tune;  // key=value,... (bidir launch parameters, channels, chunk_bytes, ...)
  std::string topology = "local";
  double timeout_s = 60;
  bool mpi = false;  // --mpi: one process per GPU even when no launcher variable says so (mpi_env.hpp)
  // Collective matmul (--shape M,K,N) and sparse all-reduce (--rows, --dim, --density and --dist, the
  // last two comma-separated lists) inputs, as given; exec/mmsp/run_mmsp.hpp parses and checks them.
  std::string shape, rows, dim, density, dist;
};

// Sizes of a sweep: min, then *factor (or +step) up to max inclusive.
std::vector<int64_t> sweep_sizes(const RunOptions& o);

// The algorithm names `--algo all` expands to (those the executor runs, plus sol.bidir_copy).
std::vector<std::string> gpu_algorithm_names();

// Runs the sweep; prints the table to `out`; writes the CSV (atomically, after every size) when
// o.csv is set. Returns the exit code: 0, or 3 when any result was wrong. Throws cclab::Error on
// bad input (1) and environment problems (2).
// Collective matmul and sparse all-reduce runs (names or flags of exec/mmsp/run_mmsp.hpp) go to run_mmsp.
int run_sweep(const RunOptions& o, std::ostream& out);

// Pieces of a sweep that run_sweep_mpi (mpi_env.hpp) shares.
namespace detail {
bool needs_split(Coll c);  // collectives whose count is rounded down to a multiple of the ranks
std::string iso_date();
std::string commit();          // CCLAB_COMMIT, else the commit the binary was built from
std::string driver_version();  // from /proc/driver/nvidia/version, or ""
// Schedule::resolve for a collective without building its ops.
std::function<Ref(Ref)> resolver(const std::string& collective, int nranks, int64_t count, DType dtype, bool in_place);
std::map<std::string, std::string> tune_map(const std::string& tune);
}  // namespace detail

// Two records (out-of-place, in-place) of one size as one nccl-tests line; either may be absent.
void print_run_header(std::ostream& os, bool with_prediction);
void print_run_line(std::ostream& os, const Record* oop, const Record* ip, bool with_prediction);

}  // namespace cclab::exec
