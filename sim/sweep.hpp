// The sweep behind `cclab sim` and the Python package's cclab.simulate: a topology (with a GPU selection
// and routing options), a list of sizes and a list of algorithms become one simulated record per
// (algorithm, size), by sim::predict. Both callers call simulate_sweep, so their rows are the same rows.
//
// What the command line does around it (printing tables and progress, writing files, stopping on a
// signal) it does through a SweepObserver; the sweep itself prints nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.hpp"
#include "core/record.hpp"
#include "sim/predict.hpp"
#include "topology/topology.hpp"

namespace cclab::sim {

// nccl-tests' sizes: minbytes, minbytes x factor, ... while at most maxbytes (cclab sim -b -e -f). Throws
// the input errors `cclab sim` prints for minbytes < 1, minbytes > maxbytes or factor < 2.
std::vector<int64_t> sweep_sizes(int64_t minbytes, int64_t maxbytes, int64_t factor);

struct SweepRequest {
  std::string topo;                        // preset or file; ignored when `topology` is set
  std::optional<topo::Topology> topology;  // a topology already loaded (its name labels the records)
  std::optional<std::vector<int>> gpus;    // ranks on these GPUs (cclab sim --gpus), in this order
  std::optional<int> ngpus;                // ranks on the first N GPUs (cclab sim -g); default: every GPU
  bool without_nvlink = false;             // --without nvlink
  bool no_p2p = false;                     // --no-p2p
  std::vector<int64_t> sizes;              // ascending; sweep_sizes() gives cclab sim's
  std::string algo;                        // a name, a comma-separated list, or "all"
  // dtype, redop, root, tune, shape (collective matmul) and sparse (rows > 0 and dim > 0: sparse all-reduce);
  // nranks and count are set per row. node_size 0: the GPUs per server (at most the ranks).
  AlgoArgs base;
  std::optional<std::string> profile;  // a model profile applied over the topology's defaults
  bool trace = false;  // keep the largest size's schedule and timeline of each algorithm (SweepResult::traces)
};

struct SweepResult {
  std::vector<Record> records;  // one per simulated (algorithm, size), in the order simulated
  std::vector<std::pair<std::string, Prediction>> traces;  // (algorithm, its largest size) when trace
  std::string topo_label;  // the records' topology column: "pcie-2socket[0,1,4,5]+no-p2p"
  int nranks = 0;
  std::string stopped_before;  // "<algo> at <bytes> B" when SweepObserver::stop_requested() stopped it
};

// What a caller hears while the sweep runs (every call on the sweep's thread).
class SweepObserver {
 public:
  virtual ~SweepObserver() = default;
  // Asked before every row: true stops the sweep there (SweepResult::stopped_before says where).
  virtual bool stop_requested() { return false; }
  // A line the command line prints on stderr: algorithms or sizes skipped, and why.
  virtual void note(const std::string& /*line*/) {}
  // Algorithm `index` (0-based) of `count` starts, `elapsed_s` seconds after the first.
  virtual void algorithm_started(size_t /*index*/, size_t /*count*/, const Algorithm& /*algo*/, double /*elapsed_s*/) {}
  // A row was added to `records` (every row so far).
  virtual void row_done(const std::vector<Record>& /*records*/) {}
  // An algorithm finished with rows records[first_row..] (not called for one that produced none).
  virtual void algorithm_done(const Algorithm& /*algo*/, const SweepResult& /*so_far*/, size_t /*first_row*/) {}
};

// Runs the sweep. Input errors (cclab::Error, kind input) carry `cclab sim`'s one-line messages: unknown
// topology or algorithm, GPUs beyond the topology, an algorithm the simulator cannot run or that needs a
// shape or a sparse table, nothing to simulate. With several algorithms or sizes, a row the algorithm
// cannot build (e.g. rhd on 6 ranks) is skipped with a note; sizes that hold no element per rank are
// skipped. Matmul and sparse algorithms get one row, at the largest size.
// Pass the request as an rvalue to let the sweep take its topology over rather than copy it.
SweepResult simulate_sweep(SweepRequest req, SweepObserver* observer = nullptr);

}  // namespace cclab::sim
