#include "sim/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "algorithms/adv_sparse.hpp"
#include "algorithms/registry.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "lower/lowering.hpp"
#include "sim/paths.hpp"
#include "sim/paths_cmatmul.hpp"
#include "sim/paths_sparse.hpp"
#include "sim/predict.hpp"
#include "sim/simulator.hpp"

namespace cclab::sim {

namespace {

constexpr double kGeomeanFloor = 1e-6;
constexpr double kGoalSlack = 1e-9;

std::string describe(const Record& r) {
  return r.algo + " n=" + std::to_string(r.ranks) + " " + std::to_string(r.bytes) + " B " + r.dtype +
         (r.in_place ? " in-place" : "");
}

const std::string* extra(const Record& r, const std::string& key) {
  for (const auto& [k, v] : r.extra)
    if (k == key) return &v;
  return nullptr;
}

// The AlgoArgs that reproduce a measured row.
AlgoArgs args_for(const Record& r, const Algorithm& algo, const topo::Topology& t) {
  const std::string what = "row " + describe(r);
  AlgoArgs a;
  a.nranks = r.ranks;
  if (r.ranks < 1) throw_input(what + ": ranks must be at least 1");
  if (r.ranks > t.num_gpus())
    throw_input(what + ": " + std::to_string(r.ranks) + " ranks but topology '" + t.name + "' has " +
                std::to_string(t.num_gpus()) + " GPUs");
  a.dtype = parse_dtype(r.dtype);
  // Rows of non-reducing collectives may say "none" (collective matmul records do).
  a.redop = (r.redop.empty() || r.redop == "none") ? RedOp::sum : parse_redop(r.redop);
  a.root = r.root < 0 ? 0 : r.root;
  a.in_place = r.in_place;
  // The settings the row ran under, as `cclab sim --tune` takes them.
  if (const std::string* tune = extra(r, "tune")) a.tune = *tune;
  // The node size the row ran with (cclab run --node-size), else as `cclab sim` does: the topology's servers.
  a.node_size = std::max(1, std::min(t.gpus_per_server(), r.ranks));
  if (const std::string* ns = extra(r, "node_size"); ns && !ns->empty())
    a.node_size = int(parse_int("node_size", *ns, 1, r.ranks));
  a.count = r.count > 0 ? r.count : count_for_bytes(algo, r.bytes, a.dtype, r.ranks);
  if (algo.needs_shape) {
    if (r.shape.empty()) throw_input(what + ": " + algo.name + " needs the shape column (M,K,N)");
    // M,K,N (equal values allowed, unlike a list of GPUs).
    std::vector<int64_t> mkn;
    size_t pos = 0;
    while (pos <= r.shape.size()) {
      const size_t comma = std::min(r.shape.find(',', pos), r.shape.size());
      mkn.push_back(parse_int("shape", r.shape.substr(pos, comma - pos), 1, int64_t(1) << 40));
      pos = comma + 1;
    }
    if (mkn.size() != 3) throw_input(what + ": shape '" + r.shape + "' is not M,K,N");
    a.shape = {mkn[0], mkn[1], mkn[2]};
  }
  if (algo.needs_sparse) {
    const std::string *rows = extra(r, "rows"), *dim = extra(r, "dim"), *dens = extra(r, "density");
    if (!rows || !dim || !dens) throw_input(what + ": sparse all-reduce needs the rows, dim and density columns");
    a.sparse.rows = parse_int("rows", *rows, 1, int64_t(1) << 40);
    a.sparse.dim = parse_int("dim", *dim, 1, int64_t(1) << 30);
    a.sparse.density = parse_double("density", *dens, 0.0, 1.0);
    if (const std::string* d = extra(r, "dist")) a.sparse.dist = *d == "zipf" ? IndexDist::zipf : IndexDist::uniform;
    // The path the measurement forced (the sparse/dense crossover runs force each one).
    if (const std::string* m = extra(r, "mode"))
      a.sparse.mode = *m == "sparse" ? SparseMode::sparse : *m == "dense" ? SparseMode::dense : SparseMode::automatic;
    // The executor's dense path leaves the reduced table as the result (no gather of the union rows).
    a.sparse.table_result = true;
  }
  return a;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

void add_tune(Record& r, const std::string& settings) {
  for (auto& [k, v] : r.extra)
    if (k == "tune") {
      v = v.empty() ? settings : v + "," + settings;
      return;
    }
  r.extra.emplace_back("tune", settings);
}

RowPredictor::RowPredictor(model::Target target)
    : target_(std::move(target)), sim_(std::make_unique<Simulator>(target_.topology, target_.params)) {}

RowPredictor::~RowPredictor() = default;

Record RowPredictor::predict(const Record& measured) {
  // The cuBLAS references of the collective matmul records run no collective: their own model.
  if (is_matmul_reference(measured.algo)) {
    AlgoArgs args = args_for(measured, find_algorithm("allgather_matmul.ring"), target_.topology);
    Record r = predict_matmul_reference(*sim_, measured.algo, args).record;
    r.topology = target_.label;
    return r;
  }
  // The executor's matmul + NCCL reduce-scatter baseline has no registry entry: it takes its arguments as the
  // reduce-scatter ring does, and only the collective matmul model below predicts it.
  const bool rs_nccl = measured.algo == "matmul_reducescatter.nccl_cublas";
  const Algorithm& algo = find_algorithm(rs_nccl ? std::string("matmul_reducescatter.ring") : measured.algo);
  if (!(algo.backends & kSim)) throw_input("row " + describe(measured) + ": " + algo.name + " cannot be simulated");
  AlgoArgs args = args_for(measured, algo, target_.topology);
  if (algo.needs_sparse) {
    // The executor's sparse all-reduce on the path it took (its `path` and `union_mode` columns; an
    // automatic row's switch is the executor's, not the model's): its phases where the profile measured its
    // pieces, else the plain simulator model.
    SparseExecPath sp;
    const std::string* taken = extra(measured, "path");
    sp.dense = taken && (*taken == "dense" || *taken == "sparse")
                   ? *taken == "dense"
                   : sparse::uses_dense(args, sparse::model_sizes(args).union_rows);
    const std::string* um = extra(measured, "union_mode");
    sp.gather_bcast = um && *um == "gather_bcast";
    if (auto p = predict_sparse_exec(*sim_, args, sp)) {
      p->record.topology = target_.label;
      return p->record;
    }
  }
  if (algo.needs_shape) {
    // The executor's collective matmuls as it runs them (its streams, copies beside products).
    if (auto p = predict_cmatmul_exec(*sim_, measured.algo, args)) {
      p->record.topology = target_.label;
      return p->record;
    }
    if (rs_nccl) throw_input("row " + describe(measured) + ": the profile has no matmul measurements for it");
  }
  // Everything else: what `cclab sim` predicts for these inputs (the row's settings included).
  Record r = sim::predict(*sim_, algo, args).record;
  r.topology = target_.label;
  return r;
}

std::optional<std::string> plan_difference(const Record& measured, const Record& predicted) {
  const std::string* ran = extra(measured, "lowering");
  if (!ran || ran->empty()) return std::nullopt;  // a record without the plan that ran (older, or NCCL's published)
  std::string diff;
  for (const auto& name : lower::plan_column_names()) {
    const std::string *a = extra(measured, name), *b = extra(predicted, name);
    const std::string va = a ? *a : "", vb = b ? *b : "";
    if (va != vb)
      diff +=
          (diff.empty() ? "" : ", ") + name + " ran " + (va.empty() ? "-" : va) + ", priced " + (vb.empty() ? "-" : vb);
  }
  if (diff.empty()) return std::nullopt;
  return diff;
}

Record RowPredictor::with_prediction(const Record& measured) {
  const Record p = predict(measured);
  Record r = measured;
  r.pred_time_us = p.time_us;
  r.pred_busbw_gbps = p.busbw_gbps;
  // How the model priced the row (path and terms), beside the measured note: the first thing to read on a miss.
  r.extra.emplace_back("pred_note", p.note);
  if (auto d = plan_difference(measured, p)) r.extra.emplace_back("plan_mismatch", *d);
  return r;
}

Record predict(const Record& measured_row, const model::Target& target) {
  RowPredictor p(target);
  return p.predict(measured_row);
}

std::optional<std::string> skip_reason(const Record& r) {
  if (r.backend != "gpu") return "not a GPU measurement (backend " + (r.backend.empty() ? "empty" : r.backend) + ")";
  if (r.note.find("share GPUs") != std::string::npos || r.note.find("not meaningful") != std::string::npos)
    return std::string("ranks shared GPUs: timing not meaningful");
  if (r.wrong > 0) return std::string("wrong results");
  if (!(r.time_us > 0)) return std::string("no measured time");
  return std::nullopt;
}

ErrorSummary summarize(const std::vector<std::pair<int64_t, double>>& errors, const Goals& goals) {
  ErrorSummary s;
  s.sizes = int(errors.size());
  if (errors.empty()) return s;
  std::vector<double> abs_err;
  double log_sum = 0;
  for (const auto& [bytes, e] : errors) {
    const double a = std::abs(e);
    abs_err.push_back(a);
    log_sum += std::log(std::max(a, kGeomeanFloor));
    if (a > s.max || (a == s.max && s.worst_bytes == 0)) {
      s.max = a;
      s.worst_bytes = bytes;
      s.worst_error = e;
    }
  }
  s.median = median_of(abs_err);
  s.geomean = std::exp(log_sum / double(errors.size()));
  // A goal is met at equality; kGoalSlack absorbs the rounding of (pred - meas) / meas.
  s.goals_met = s.median <= goals.median + kGoalSlack && s.geomean <= goals.geomean + kGoalSlack &&
                s.max <= goals.max + kGoalSlack;
  return s;
}

bool Comparison::goals_met() const {
  if (per_algo.empty()) return false;
  return std::all_of(per_algo.begin(), per_algo.end(), [](const ErrorSummary& s) { return s.goals_met; });
}

Comparison compare(const std::vector<Record>& measured, RowPredictor& predictor, const Goals& goals) {
  Comparison c;
  std::vector<const Record*> kept;
  for (const auto& r : measured) {
    if (auto why = skip_reason(r)) {
      ++c.skipped[*why];
      continue;
    }
    kept.push_back(&r);
  }
  // Out-of-place rows win where a series has both.
  std::set<std::tuple<std::string, int, int64_t, std::string>> has_oop;
  for (const Record* r : kept)
    if (!r->in_place) has_oop.insert({r->algo, r->ranks, r->bytes, r->dtype});
  std::map<std::pair<std::string, int>, std::vector<std::pair<int64_t, double>>> groups;
  // Rows with NCCL's own estimate: its errors, and cclab's on the same rows.
  std::map<std::pair<std::string, int>, std::vector<std::pair<int64_t, double>>> nccl_groups, cclab_on_nccl;
  std::vector<std::pair<int64_t, double>> all;
  for (const Record* r : kept) {
    if (r->in_place && has_oop.count({r->algo, r->ranks, r->bytes, r->dtype})) {
      ++c.skipped["in-place row beside an out-of-place one"];
      continue;
    }
    Record row;
    try {
      row = predictor.with_prediction(*r);
    } catch (const Error& e) {
      c.failed.emplace_back(describe(*r), e.what());
      continue;
    }
    if (extra(row, "plan_mismatch")) c.plan_mismatches.emplace_back(describe(*r), *extra(row, "plan_mismatch"));
    const double e = *row.error();
    groups[{row.algo, row.ranks}].emplace_back(row.bytes, e);
    all.emplace_back(row.bytes, e);
    if (const auto ne = row.nccl_error()) {
      nccl_groups[{row.algo, row.ranks}].emplace_back(row.bytes, *ne);
      cclab_on_nccl[{row.algo, row.ranks}].emplace_back(row.bytes, e);
      char text[32];
      std::snprintf(text, sizeof text, "%.9g", *ne);
      row.extra.emplace_back("nccl_error", text);
    }
    c.rows.push_back(std::move(row));
  }
  for (auto& [key, errs] : groups) {
    ErrorSummary s = summarize(errs, goals);
    s.algo = key.first;
    s.ranks = key.second;
    c.per_algo.push_back(s);
  }
  for (auto& [key, errs] : nccl_groups) {
    NcclEstimateSummary s;
    s.algo = key.first;
    s.ranks = key.second;
    s.nccl = summarize(errs, goals);
    s.cclab = summarize(cclab_on_nccl[key], goals);
    c.nccl_estimate.push_back(s);
  }
  c.overall = summarize(all, goals);
  return c;
}

}  // namespace cclab::sim
