// The sparse/dense crossover of allreduce.sparse, measured against predicted (issue 7: "above the
// crossover density it switches to dense by itself, and the simulator's predicted crossover matches the
// measured one within a factor of 1.5"). Reads the committed records results/h200x2/mmsp_crossover.csv
// (forced-sparse, forced-dense and automatic runs of `cclab run --algo allreduce.sparse --tune
// path=sparse+dense+auto` on 2 x H200), predicts every row with the simulator on the calibrated profile
// profiles/h200x2.json (sim::RowPredictor: the same rows, forced paths kept), and finds both crossovers
// with the same interpolation (exec::measured_sparse_crossover). No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "algorithms/adv_sparse.hpp"
#include "core/parse.hpp"
#include "core/record.hpp"
#include "exec/mmsp/run_mmsp.hpp"
#include "exec/mmsp/sparse.hpp"
#include "model/profile.hpp"
#include "reference/reference.hpp"
#include "sim/compare.hpp"

namespace cclab::exec {
namespace {

const std::string kRecords = std::string(CCLAB_SOURCE_DIR) + "/results/h200x2/mmsp_crossover.csv";
const std::string kProfile = std::string(CCLAB_SOURCE_DIR) + "/profiles/h200x2.json";

std::string extra(const Record& r, const std::string& key) {
  for (const auto& [k, v] : r.extra)
    if (k == key) return v;
  return "";
}

std::vector<Record> sparse_rows() {
  std::vector<Record> rows;
  for (Record& r : read_records(kRecords))
    if (r.algo == "allreduce.sparse") rows.push_back(std::move(r));
  return rows;
}

// The same rows with the simulator's time in time_us.
std::vector<Record> predicted(const std::vector<Record>& measured) {
  sim::RowPredictor predictor(model::resolve_target(kProfile));
  std::vector<Record> out;
  for (const Record& r : measured) {
    Record p = r;
    p.time_us = predictor.predict(r).time_us;
    out.push_back(std::move(p));
  }
  return out;
}

double as_number(const std::string& crossover, const std::string& what) {
  EXPECT_FALSE(crossover.empty()) << what;
  EXPECT_TRUE(!crossover.empty() && crossover[0] != '<' && crossover[0] != '>')
      << what << ": no crossing inside the measured densities (" << crossover << ")";
  if (crossover.empty() || crossover[0] == '<' || crossover[0] == '>') return 0;
  return parse_double(what, crossover, 0.0, 1.0);
}

TEST(SparseCrossover, SimulatorMatchesTheMeasuredCrossoverWithinOneAndAHalf) {
  const std::vector<Record> measured = sparse_rows();
  ASSERT_FALSE(measured.empty()) << kRecords;
  const std::vector<Record> pred = predicted(measured);
  std::printf("# %s against %s\n# %-8s %8s %12s %12s %12s %12s\n", kRecords.c_str(), kProfile.c_str(), "dist",
              "density", "meas_sparse", "meas_dense", "pred_sparse", "pred_dense");
  std::map<std::tuple<std::string, double, std::string>, std::pair<double, double>> t;  // (dist, p, mode)
  for (size_t i = 0; i < measured.size(); ++i)
    t[{extra(measured[i], "dist"), std::stod(extra(measured[i], "density")), extra(measured[i], "mode")}] = {
        measured[i].time_us, pred[i].time_us};
  for (const auto& [key, v] : t)
    if (std::get<2>(key) == "sparse" && t.count({std::get<0>(key), std::get<1>(key), "dense"})) {
      const auto d = t[{std::get<0>(key), std::get<1>(key), "dense"}];
      std::printf("  %-8s %8.3f %12.1f %12.1f %12.1f %12.1f\n", std::get<0>(key).c_str(), std::get<1>(key), v.first,
                  d.first, v.second, d.second);
    }
  for (const std::string dist : {"uniform", "zipf"}) {
    const double m = as_number(measured_sparse_crossover(measured, dist), dist + " measured");
    const double p = as_number(measured_sparse_crossover(pred, dist), dist + " predicted");
    if (m <= 0 || p <= 0) continue;
    const double factor = std::max(m, p) / std::min(m, p);
    std::printf("# %s: measured crossover %.4f, simulator %.4f, factor %.3f (goal <= 1.5)\n", dist.c_str(), m, p,
                factor);
    EXPECT_LE(factor, 1.5) << dist << ": measured " << m << ", simulator " << p;
  }
}

TEST(SparseCrossover, AutomaticSwitchTakesTheFasterPathAwayFromTheCrossover) {
  const std::vector<Record> rows = sparse_rows();
  std::map<std::pair<std::string, std::string>, std::map<std::string, const Record*>> by_point;
  for (const Record& r : rows) by_point[{extra(r, "dist"), extra(r, "density")}][extra(r, "mode")] = &r;
  int decided = 0;
  for (const auto& [point, modes] : by_point) {
    if (!modes.count("sparse") || !modes.count("dense") || !modes.count("auto")) continue;
    const double ts = modes.at("sparse")->time_us, td = modes.at("dense")->time_us;
    if (std::max(ts, td) < 1.05 * std::min(ts, td)) continue;  // within 5 %: either path is right
    ++decided;
    EXPECT_EQ(extra(*modes.at("auto"), "path"), ts < td ? "sparse" : "dense")
        << point.first << " density " << point.second << ": sparse " << ts << " us, dense " << td << " us";
  }
  EXPECT_GE(decided, 4) << "too few densities where one path is clearly faster";
}

TEST(SparseCrossover, SwitchRuleAgreesWithTheMeasuredCrossover) {
  // The executor's rule (sparse_choose_dense) on the measured table: sparse well below the measured
  // crossover, dense well above it, for both distributions' union sizes as recorded.
  const std::vector<Record> rows = sparse_rows();
  for (const std::string dist : {"uniform", "zipf"}) {
    const std::string cx = measured_sparse_crossover(rows, dist);
    if (cx.empty() || cx[0] == '<' || cx[0] == '>') continue;
    const double crossover = std::stod(cx);
    for (const Record& r : rows) {
      if (extra(r, "dist") != dist || extra(r, "mode") != "auto") continue;
      const double p = std::stod(extra(r, "density"));
      if (std::abs(p - crossover) < 0.1) continue;
      SparseConfig cfg;
      cfg.spec.rows = std::stoll(extra(r, "rows"));
      cfg.spec.dim = std::stoll(extra(r, "dim"));
      const int64_t nnz = std::llround(std::stod(extra(r, "nnz_per_rank")));
      EXPECT_EQ(sparse_choose_dense(cfg, std::vector<int64_t>(size_t(r.ranks), nnz)), p > crossover)
          << dist << " density " << p << " (crossover " << crossover << ")";
    }
  }
}

// The simulator predicts the executor's dense path, which leaves the reduced table as the result
// (spec.table_result): on the reference backend that schedule gives the union indices and the whole
// table, and it has no gather of the union rows.
TEST(SparseTableResult, DensePathLeavesTheReducedTable) {
  AlgoArgs a;
  a.nranks = 3;
  a.sparse = {.rows = 301, .dim = 3, .density = 0.4, .dist = IndexDist::zipf, .seed = 11};
  a.sparse.mode = SparseMode::dense;
  a.sparse.table_result = true;
  std::vector<std::vector<sparse::Index>> idx;
  std::vector<int64_t> input_rows;
  for (int r = 0; r < a.nranks; ++r) {
    idx.push_back(sparse::generate_indices(a.sparse, r));
    input_rows.push_back(int64_t(idx.back().size()));
  }
  ref::HostBuffers b;
  auto run = [&](const sparse::SparsePhase& p) {
    b = ref::allocate(p.schedule);
    for (int r = 0; r < a.nranks; ++r) {
      const auto L = sparse::sparse_layout(a, {.input_rows = input_rows}, r);
      uint8_t* in = b[size_t(r)].input.data();
      std::memcpy(in, idx[size_t(r)].data(), idx[size_t(r)].size() * sizeof(sparse::Index));
      for (size_t i = 0; i < idx[size_t(r)].size(); ++i)
        for (int64_t j = 0; j < a.sparse.dim; ++j)
          store_from_float(a.dtype, in + L.input_values, int64_t(i) * a.sparse.dim + j,
                           sparse::generated_value(a.sparse, r, idx[size_t(r)][i], j));
    }
    ref::run(p.schedule, b);
  };
  auto read = [&](int64_t offset) {
    sparse::Index v;
    std::memcpy(&v, b[0].scratch.data() + offset, sizeof v);
    return v;
  };
  const sparse::SparsePhase last = sparse::run_sparse_phases(a, input_rows, run, read);
  for (const Compute& c : last.schedule.computes) EXPECT_NE(c.kind, ComputeKind::gather_rows);
  std::map<sparse::Index, std::vector<double>> want;
  for (int r = 0; r < a.nranks; ++r)
    for (sparse::Index i : idx[size_t(r)]) {
      auto& row = want[i];
      row.resize(size_t(a.sparse.dim));
      for (int64_t j = 0; j < a.sparse.dim; ++j) row[size_t(j)] += sparse::generated_value(a.sparse, r, i, j);
    }
  const sparse::SparseSizes sizes{.input_rows = input_rows, .rows = input_rows, .union_rows = int64_t(want.size())};
  const auto L = sparse::sparse_layout(a, sizes, 0);
  EXPECT_EQ(L.output_bytes, L.output_values + a.sparse.rows * a.sparse.dim * 4);
  for (int r = 0; r < a.nranks; ++r) {
    const uint8_t* out = b[size_t(r)].output.data();
    ASSERT_GE(int64_t(b[size_t(r)].output.size()), L.output_bytes);
    sparse::Index U;
    std::memcpy(&U, out, sizeof U);
    ASSERT_EQ(U, int64_t(want.size()));
    int64_t k = 0;
    for (const auto& [index, row] : want) {
      sparse::Index got;
      std::memcpy(&got, out + (1 + k++) * sizeof got, sizeof got);
      EXPECT_EQ(got, index);
    }
    for (int64_t i = 0; i < a.sparse.rows; ++i)
      for (int64_t j = 0; j < a.sparse.dim; ++j) {
        const double w = want.count(i) ? want[i][size_t(j)] : 0.0;
        ASSERT_EQ(load_as_float(a.dtype, out + L.output_values, i * a.sparse.dim + j), float(w))
            << "rank " << r << " row " << i << " col " << j;
      }
  }
}

}  // namespace
}  // namespace cclab::exec
