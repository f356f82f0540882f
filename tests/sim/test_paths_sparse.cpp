// The executor's sparse all-reduce model (sim/paths_sparse.cpp) on synthetic tables of the microbenchmarks of
// exec/microbench/microbench_sparse.cu: the phases add up as the executor runs them (host-driven, one wait per phase),
// the path and union build the record names are the ones costed, and without the sparse.* series the plain
// simulator model applies.
#include <gtest/gtest.h>

#include "algorithms/adv_sparse.hpp"
#include "model/params.hpp"
#include "model/profile.hpp"
#include "sim/compare.hpp"
#include "sim/paths_sparse.hpp"
#include "sim/simulator.hpp"
#include "tests/sim/synthetic_tables.hpp"
#include "topology/topology.hpp"

namespace cclab::sim {
namespace {

using test::line_table;

constexpr double kCoalWall = 80e-6, kCoalIssue = 50e-6, kSuWall = 60e-6, kSuIssue = 30e-6, kCopyIssue = 4e-6,
                 kFillIssue = 12e-6, kMatch = 5e-6;
constexpr double kRowRate = 4e12, kBidirRate = 350e9;

// Constant host costs and fixed GPU steps, row traffic and NCCL at one rate each: every phase is then known in
// closed form. Copies cost less than their issue, so the issue counts.
model::ModelParams sparse_params(const topo::Topology& t) {
  model::ModelParams p = model::defaults_for(t);
  const int64_t big = int64_t(1) << 40;
  p.tables["sparse.coalesce.wall"] = line_table(kCoalWall, 1e30, big);
  p.tables["sparse.coalesce.issue"] = line_table(kCoalIssue, 1e30, big);
  p.tables["sparse.sort_unique.wall"] = line_table(kSuWall, 1e30, big);
  p.tables["sparse.sort_unique.issue"] = line_table(kSuIssue, 1e30, big);
  p.tables["sparse.copy.issue"] = line_table(kCopyIssue, 1e30, big);
  p.tables["sparse.fill.issue"] = line_table(kFillIssue, 1e30, big);
  p.tables["sparse.match"] = line_table(kMatch, 1e30, big);
  p.tables["sparse.segment_sum"] = line_table(0, kRowRate, big);
  p.tables["sparse.fill_rows"] = line_table(0, kRowRate, big);
  p.tables["p2p.ce.uni"] = line_table(1e-6, 1e30, big);
  p.tables["copy.local"] = line_table(1e-6, 1e30, big);
  p.tables["nccl.p2p.bidir"] = line_table(0, kBidirRate, big);
  p.tables["nccl.p2p.uni"] = line_table(0, kBidirRate, big);
  return p;
}

AlgoArgs sparse_args(double density) {
  AlgoArgs a;
  a.nranks = 2;
  a.dtype = DType::f32;
  a.sparse.rows = 500000;
  a.sparse.dim = 2048;
  a.sparse.density = density;
  a.count = a.sparse.rows * a.sparse.dim;
  return a;
}

// line_table's points are powers of two: between them the table interpolates log-log, so compare to 0.5%.
void expect_near_rel(double got, double want) { EXPECT_NEAR(got, want, 5e-3 * want); }

TEST(PathsSparse, PhasesAddUpAsTheExecutorRunsThem) {
  const topo::Topology t = topo::load_topology("h200x2");
  Simulator sim(t, sparse_params(t));
  const AlgoArgs a = sparse_args(0.2);
  const auto sz = sparse::model_sizes(a);
  const double k = double(sz.rows[0]), U = double(sz.union_rows), row = 2048 * 4.0;
  const double coalesce = kCoalIssue + kCoalWall + (1.5 * k + k) * row / kRowRate;
  const double match_fill = kFillIssue + kMatch + (U + k) * row / kRowRate;

  // All-gather union: the second rank issues after the first's copies and sort.
  const auto ag = predict_sparse_exec(sim, a, {.dense = false, .gather_bcast = false});
  ASSERT_TRUE(ag);
  const double union_ag = (2 * kCopyIssue + kSuIssue) + 2 * kCopyIssue + kSuWall;
  expect_near_rel(ag->result.time.value, coalesce + union_ag + match_fill + U * row / kBidirRate);
  EXPECT_NE(ag->record.note.find("allgather"), std::string::npos) << ag->record.note;

  // Gather to rank 0 and broadcast: one union, then the copy to rank 1 before its fill.
  const auto gb = predict_sparse_exec(sim, a, {.dense = false, .gather_bcast = true});
  ASSERT_TRUE(gb);
  const double union_gb = 2 * kCopyIssue + kSuWall, bcast = kCopyIssue + 1e-6;
  expect_near_rel(gb->result.time.value, coalesce + union_gb + bcast + match_fill + U * row / kBidirRate);

  // Dense: no union; the whole table is filled and all-reduced.
  const auto de = predict_sparse_exec(sim, a, {.dense = true});
  ASSERT_TRUE(de);
  const double R = 500000;
  expect_near_rel(de->result.time.value,
                  coalesce + kFillIssue + kMatch + (R + k) * row / kRowRate + R * row / kBidirRate);
  EXPECT_EQ(de->record.algo, "allreduce.sparse");
  EXPECT_EQ(de->record.bytes, int64_t(500000) * 2048 * 4);
}

TEST(PathsSparse, TwoGpuPhaseTimingsReplaceTheIssueOffset) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = sparse_params(t);
  const int64_t big = int64_t(1) << 40;
  p.tables["sparse.coalesce.wall2"] = line_table(200e-6, 1e30, big);
  p.tables["sparse.sort_unique.wall2"] = line_table(150e-6, 1e30, big);
  Simulator sim(t, p);
  const AlgoArgs a = sparse_args(0.2);
  const auto sz = sparse::model_sizes(a);
  const double k = double(sz.rows[0]), U = double(sz.union_rows), row = 2048 * 4.0;
  const double coalesce = 200e-6 + (1.5 * k + k) * row / kRowRate;
  // Rank 1's copies are issued after rank 0's two; each copy costs its issue (longer than the copy here).
  const double union_ag = 2 * kCopyIssue + 2 * kCopyIssue + 150e-6;
  const double match_fill = kFillIssue + kMatch + (U + k) * row / kRowRate;
  const auto ag = predict_sparse_exec(sim, a, {.dense = false, .gather_bcast = false});
  ASSERT_TRUE(ag);
  expect_near_rel(ag->result.time.value, coalesce + union_ag + match_fill + U * row / kBidirRate);
  // gather_bcast sorts on rank 0 alone: the single-GPU timing still applies.
  const auto gb = predict_sparse_exec(sim, a, {.dense = false, .gather_bcast = true});
  ASSERT_TRUE(gb);
  expect_near_rel(gb->result.time.value,
                  coalesce + (2 * kCopyIssue + kSuWall) + (kCopyIssue + 1e-6) + match_fill + U * row / kBidirRate);
}

TEST(PathsSparse, WithoutTheSparseSeriesThePlainModelApplies) {
  const topo::Topology t = topo::load_topology("h200x2");
  Simulator sim(t, model::defaults_for(t));
  EXPECT_FALSE(predict_sparse_exec(sim, sparse_args(0.1), {}));
}

TEST(PathsSparse, CompareCostsThePathTheRecordTook) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::Target target{t, sparse_params(t), std::nullopt, "h200x2"};
  RowPredictor pred(target);
  auto row = [](const std::string& mode, const std::string& path, const std::string& um) {
    Record r{.algo = "allreduce.sparse", .collective = "allreduce", .backend = "gpu", .ranks = 2, .time_us = 1000};
    r.count = int64_t(500000) * 2048;
    r.bytes = r.count * 4;
    r.dtype = "float";
    r.redop = "sum";
    r.extra = {{"rows", "500000"}, {"dim", "2048"}, {"density", "0.9"}, {"dist", "uniform"},
               {"mode", mode},     {"path", path},  {"union_mode", um}};
    return r;
  };
  Simulator sim(t, sparse_params(t));
  const AlgoArgs a = sparse_args(0.9);
  const double dense = predict_sparse_exec(sim, a, {.dense = true})->result.time.us();
  const double sparse_ag = predict_sparse_exec(sim, a, {.dense = false})->result.time.us();
  const double sparse_gb = predict_sparse_exec(sim, a, {.dense = false, .gather_bcast = true})->result.time.us();
  // An automatic row is costed on the path the executor's switch took, whatever the model's switch says.
  EXPECT_DOUBLE_EQ(pred.predict(row("auto", "dense", "")).time_us, dense);
  EXPECT_DOUBLE_EQ(pred.predict(row("auto", "sparse", "allgather")).time_us, sparse_ag);
  EXPECT_DOUBLE_EQ(pred.predict(row("sparse", "sparse", "gather_bcast")).time_us, sparse_gb);
}

}  // namespace
}  // namespace cclab::sim
