#include "sim/sweep.hpp"

#include <algorithm>
#include <chrono>

#include "core/error.hpp"
#include "lower/lowering.hpp"
#include "model/params.hpp"
#include "model/profile.hpp"
#include "sim/simulator.hpp"

namespace cclab::sim {

namespace {

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

std::vector<int64_t> sweep_sizes(int64_t minb, int64_t maxb, int64_t factor) {
  if (minb < 1) throw_input("cclab sim: -b must be at least 1 byte");
  if (minb > maxb) throw_input("cclab sim: -b " + std::to_string(minb) + " is larger than -e " + std::to_string(maxb));
  if (factor < 2) throw_input("cclab sim: -f must be at least 2 (got " + std::to_string(factor) + ")");
  std::vector<int64_t> sizes;
  for (int64_t b = minb; b <= maxb; b *= factor) {
    sizes.push_back(b);
    if (b > maxb / factor) break;
  }
  return sizes;
}

SweepResult simulate_sweep(SweepRequest req, SweepObserver* observer) {
  SweepObserver quiet;
  SweepObserver& obs = observer ? *observer : quiet;
  SweepResult out;

  // Topology and ranks.
  topo::Topology topo = req.topology ? std::move(*req.topology) : topo::load_topology(req.topo);
  std::string topo_label = topo.name;
  int nranks = topo.num_gpus();
  if (req.gpus && req.ngpus) throw_input("cclab sim: give either -g or --gpus, not both");
  if (req.gpus) {
    const std::vector<int>& list = *req.gpus;
    if (list.empty()) throw_input("cclab sim: --gpus names no GPU");
    for (int x : list)
      if (x < 0 || x >= topo.num_gpus())
        throw_input("cclab sim: --gpus " + join_ints(list) + ": GPU " + std::to_string(x) + " is beyond topology '" +
                    topo.name + "' (" + std::to_string(topo.num_gpus()) + " GPUs)");
    topo = topo::select_gpus(topo, list);
    topo_label += "[" + join_ints(list) + "]";
    nranks = int(list.size());
  } else if (req.ngpus) {
    nranks = *req.ngpus;
    if (nranks < 1) throw_input("cclab sim: -g " + std::to_string(nranks) + ": at least one rank");
    if (nranks > topo.num_gpus())
      throw_input("cclab sim: -g " + std::to_string(nranks) + ": topology '" + topo.name + "' has only " +
                  std::to_string(topo.num_gpus()) + " GPUs");
  }
  topo::RouteOptions route;
  if (req.without_nvlink) {
    route.without_nvlink = true;
    topo_label += "+without-nvlink";
  }
  if (req.no_p2p) {
    route.no_p2p = true;
    topo_label += "+no-p2p";
  }

  // Sizes.
  const std::vector<int64_t>& sizes = req.sizes;
  if (sizes.empty()) throw_input("cclab sim: no size to simulate");
  for (int64_t b : sizes)
    if (b < 1) throw_input("cclab sim: sizes must be at least 1 byte (got " + std::to_string(b) + ")");

  AlgoArgs base = req.base;
  lower::parse_settings(base.tune);  // an unknown key or a bad value is an input error before any row
  base.nranks = nranks;
  base.count = 0;
  if (base.node_size <= 0) base.node_size = std::min(topo.gpus_per_server(), nranks);
  if (base.node_size <= 0) base.node_size = nranks;
  const bool have_shape = base.shape.valid();
  const bool have_sparse = base.sparse.rows > 0 && base.sparse.dim > 0;

  // Algorithms.
  std::vector<const Algorithm*> algos;
  const std::string& algo_arg = req.algo;
  if (algo_arg == "all") {
    std::vector<std::string> skipped;
    for (const auto& a : algorithms()) {
      if (!(a.backends & kSim)) continue;
      if ((a.needs_shape && !have_shape) || (a.needs_sparse && !have_sparse)) {
        skipped.push_back(a.name);
        continue;
      }
      algos.push_back(&a);
    }
    if (!skipped.empty()) {
      std::string s;
      for (const auto& n : skipped) s += (s.empty() ? "" : ", ") + n;
      obs.note("cclab sim: skipping " + s + " (need --shape M,K,N or --rows/--dim)");
    }
  } else {
    // One name or a comma-separated list.
    size_t pos = 0;
    while (pos <= algo_arg.size()) {
      const size_t comma = std::min(algo_arg.find(',', pos), algo_arg.size());
      const Algorithm& a = find_algorithm(algo_arg.substr(pos, comma - pos));
      if (!(a.backends & kSim)) throw_input("cclab sim: " + a.name + " cannot run on the simulator");
      if (a.needs_shape && !have_shape) throw_input("cclab sim: " + a.name + " needs --shape M,K,N");
      if (a.needs_sparse && !have_sparse) throw_input("cclab sim: " + a.name + " needs --rows R --dim D");
      algos.push_back(&a);
      pos = comma + 1;
    }
  }
  if (nranks > topo.num_gpus())
    throw_input("cclab sim: " + std::to_string(nranks) + " ranks but topology '" + topo.name + "' has " +
                std::to_string(topo.num_gpus()) + " GPUs");

  model::ModelParams params = model::defaults_for(topo);
  if (req.profile) params = model::load_profile_onto(*req.profile, topo, params);
  topo.name = topo_label;
  Simulator simulator(std::move(topo), params, route);
  out.topo_label = topo_label;
  out.nranks = nranks;

  const bool single = algos.size() == 1;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Record>& records = out.records;
  std::string& stopped_before = out.stopped_before;  // "<algo> at <bytes> B": the first row not simulated
  for (size_t ai = 0; ai < algos.size() && stopped_before.empty(); ++ai) {
    const Algorithm& a = *algos[ai];
    obs.algorithm_started(ai, algos.size(), a,
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    // Collective matmul and sparse all-reduce have one size, set by their shape / table.
    std::vector<int64_t> algo_sizes = sizes;
    if (a.needs_shape || a.needs_sparse) algo_sizes = {sizes.back()};
    const size_t first_row = records.size();  // this algorithm's rows are records[first_row..]
    std::string first_error;
    int64_t skipped_below = 0;
    for (size_t si = 0; si < algo_sizes.size(); ++si) {
      if (obs.stop_requested()) {
        stopped_before = a.name + " at " + std::to_string(algo_sizes[si]) + " B";
        break;
      }
      AlgoArgs aa = base;
      if (a.needs_sparse)
        aa.count = base.sparse.rows * base.sparse.dim;
      else if (!a.needs_shape)
        aa.count = count_for_bytes(a, algo_sizes[si], aa.dtype, nranks);
      if (!a.needs_shape && !a.needs_sparse && aa.count == 0) {
        skipped_below = algo_sizes[si];
        continue;
      }
      const bool last = si + 1 == algo_sizes.size();
      PredictOptions po;
      po.keep_schedule = last && req.trace;
      po.record_timeline = po.keep_schedule;
      try {
        Prediction p = predict(simulator, a, aa, po);
        records.push_back(p.record);
        if (po.keep_schedule) out.traces.emplace_back(a.name, std::move(p));
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::input) throw;
        if (single && algo_sizes.size() == 1) throw;
        if (first_error.empty()) first_error = e.what();
        continue;
      }
      obs.row_done(records);
    }
    // The next algorithm's first size, when the stop came between two algorithms.
    if (stopped_before.empty() && ai + 1 < algos.size() && obs.stop_requested()) {
      const Algorithm& next = *algos[ai + 1];
      stopped_before = next.name + " at " +
                       std::to_string(next.needs_shape || next.needs_sparse ? sizes.back() : sizes.front()) + " B";
    }
    if (skipped_below > 0)
      obs.note("cclab sim: " + a.name + ": sizes up to " + std::to_string(skipped_below) +
               " B hold no element per rank (" + std::to_string(nranks) + " ranks), skipped");
    if (records.size() == first_row) {
      if (!stopped_before.empty()) break;
      if (single) throw_input(first_error.empty() ? a.name + ": no size to simulate" : first_error);
      obs.note("cclab sim: skipping " + a.name + ": " + first_error);
      continue;
    }
    if (!first_error.empty()) obs.note("cclab sim: " + a.name + ": some sizes skipped: " + first_error);
    obs.algorithm_done(a, out, first_row);
  }
  if (stopped_before.empty() && records.empty()) throw_input("cclab sim: nothing could be simulated");
  return out;
}

}  // namespace cclab::sim
