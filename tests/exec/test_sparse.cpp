// Sparse all-reduce on GPUs: results against the float64 reference of the data model on every rank
// (union indices exactly, value rows), every mode, both union builds, the host-staged baseline, the
// index-matching kernels against each other and against host positions; 2 ranks on 2 GPUs and 4
// ranks sharing GPUs. The generator and the dense switch are checked without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "algorithms/adv_sparse.hpp"
#include "core/error.hpp"
#include "exec/mmsp/sparse.hpp"

namespace cclab::exec {
namespace {

int gpu_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

#define REQUIRE_GPUS(k) \
  if (gpu_count() < (k)) GTEST_SKIP() << "needs " << (k) << " GPU(s), " << gpu_count() << " visible"

std::string extra(const Record& r, const std::string& key) {
  for (const auto& [k, v] : r.extra)
    if (k == key) return v;
  return "";
}

SparseConfig small_config(int64_t rows, int64_t dim, double density, IndexDist dist) {
  SparseConfig cfg;
  cfg.spec.rows = rows;
  cfg.spec.dim = dim;
  cfg.spec.density = density;
  cfg.spec.dist = dist;
  cfg.spec.seed = 7;
  cfg.warmup = 0;
  cfg.iters = 1;
  cfg.dense_iters = 1;
  return cfg;
}

TEST(SparseGenerator, RawInputCoalescesToTheDataModel) {
  for (IndexDist dist : {IndexDist::uniform, IndexDist::zipf}) {
    SparseConfig cfg = small_config(20011, 5, 0.03, dist);
    for (int rank : {0, 1}) {
      SparseRankInput in = sparse_generate(cfg, rank);
      const auto model = sparse::generate_indices(cfg.spec, rank);
      ASSERT_EQ(in.selected.size(), model.size());
      EXPECT_TRUE(std::equal(in.selected.begin(), in.selected.end(), model.begin()));
      EXPECT_EQ(int64_t(in.selected.size()), sparse::rows_per_rank(cfg.spec));
      // Every selected row appears once or twice in the raw list, some twice, and the list is shuffled.
      std::map<int32_t, std::vector<int>> copies;
      for (size_t j = 0; j < in.raw_rows.size(); ++j) copies[in.raw_rows[j]].push_back(in.raw_copy[j]);
      EXPECT_EQ(copies.size(), in.selected.size());
      size_t doubled = 0;
      for (auto& [row, cs] : copies) {
        ASSERT_TRUE(std::binary_search(in.selected.begin(), in.selected.end(), row));
        ASSERT_TRUE(cs.size() == 1 || cs.size() == 2);
        doubled += cs.size() == 2;
        // The copies' values add up to the model's value, exactly.
        for (int64_t col = 0; col < cfg.spec.dim; ++col) {
          float sum = 0;
          for (int c : cs) sum += sparse_raw_value(cfg.spec.seed, rank, row, c, col);
          EXPECT_EQ(sum, sparse::generated_value(cfg.spec, rank, row, col)) << "row " << row << " col " << col;
        }
      }
      EXPECT_GT(doubled, in.selected.size() / 4);
      EXPECT_LT(doubled, in.selected.size() * 3 / 4);
      EXPECT_FALSE(std::is_sorted(in.raw_rows.begin(), in.raw_rows.end()));
    }
  }
}

TEST(SparseGenerator, BadSpecIsAnInputError) {
  SparseConfig cfg = small_config(100, 4, 0.001, IndexDist::uniform);  // selects no row
  EXPECT_THROW(sparse_generate(cfg, 0), Error);
  cfg.spec.density = 1.5;
  EXPECT_THROW(sparse_generate(cfg, 0), Error);
  cfg.spec.density = 0.5;
  cfg.spec.dim = 0;
  EXPECT_THROW(sparse_generate(cfg, 0), Error);
}

TEST(SparseSwitch, DenseOnlyWhenTheUnionNearlyCoversTheTable) {
  SparseConfig cfg = small_config(5000000, 2048, 0.01, IndexDist::uniform);
  EXPECT_FALSE(sparse_choose_dense(cfg, {50000, 50000}));
  EXPECT_FALSE(sparse_choose_dense(cfg, {2500000, 2500000}));  // union 75%: the union buffer still wins
  EXPECT_TRUE(sparse_choose_dense(cfg, {5000000, 5000000}));
  EXPECT_TRUE(sparse_choose_dense(cfg, {4900000, 4900000}));
  // The 500,000 x 2048 table where the crossover was measured (0.88 uniform): sparse at 75%, dense at 95%.
  cfg.spec.rows = 500000;
  EXPECT_FALSE(sparse_choose_dense(cfg, {375000, 375000}));
  EXPECT_TRUE(sparse_choose_dense(cfg, {475000, 475000}));
}

void expect_right(const std::vector<Record>& rows) {
  for (const auto& r : rows) {
    if (r.algo == "allreduce.nccl") continue;  // timing baseline
    EXPECT_EQ(r.wrong, 0) << r.algo << " mode " << extra(r, "mode") << " union " << extra(r, "union_mode") << " dist "
                          << extra(r, "dist");
    EXPECT_GT(r.time_us, 0) << r.algo;
  }
}

TEST(SparseAllreduce, TwoGpusEveryModeAndBaseline) {
  REQUIRE_GPUS(2);
  RankGpus gpus({0, 1});
  for (IndexDist dist : {IndexDist::uniform, IndexDist::zipf}) {
    for (int64_t dim : {33, 64}) {  // scalar and 16-byte paths of the row kernels
      SparseConfig cfg = small_config(10007, dim, 0.05, dist);
      cfg.modes = {SparseMode::automatic, SparseMode::sparse, SparseMode::dense};
      cfg.union_modes = {UnionMode::allgather, UnionMode::gather_bcast};
      cfg.host_baseline = true;
      cfg.match_bench = true;
      auto rows = run_sparse_allreduce(gpus, cfg);
      expect_right(rows);
      std::map<std::string, int> seen;
      for (const auto& r : rows) seen[r.algo + "/" + extra(r, "mode") + "/" + extra(r, "union_mode")]++;
      EXPECT_EQ(seen["allreduce.sparse/sparse/allgather"], 1);
      EXPECT_EQ(seen["allreduce.sparse/sparse/gather_bcast"], 1);
      EXPECT_EQ(seen["allreduce.sparse/dense/"], 1);
      EXPECT_EQ(seen["allreduce.sparse_hoststaged/host/"], 1);
      EXPECT_EQ(seen["allreduce.nccl/dense_table/"], 1);
      EXPECT_EQ(seen["index_match.quadratic/kernel/"], 1);
      EXPECT_EQ(seen["index_match.window/kernel/"], 1);
      const int64_t k = sparse::rows_per_rank(cfg.spec);
      const bool auto_dense = sparse_choose_dense(cfg, {k, k});  // a small table: the model may prefer dense
      for (const auto& r : rows) {
        if (r.algo != "allreduce.sparse") continue;
        const std::string mode = extra(r, "mode");
        EXPECT_EQ(extra(r, "path"), mode == "dense" || (mode == "auto" && auto_dense) ? "dense" : "sparse");
        EXPECT_EQ(r.bytes, cfg.spec.rows * dim * 4);
        if (extra(r, "path") == "sparse") {
          EXPECT_EQ(std::stoll(extra(r, "nnz_per_rank")), sparse::rows_per_rank(cfg.spec));
        }
      }
    }
  }
}

TEST(SparseAllreduce, FullDensityAutoTakesTheDensePath) {
  REQUIRE_GPUS(1);
  RankGpus gpus({0, std::min(gpu_count(), 2) - 1});
  SparseConfig cfg = small_config(3001, 8, 1.0, IndexDist::uniform);
  cfg.dense_baseline = false;
  auto rows = run_sparse_allreduce(gpus, cfg);
  expect_right(rows);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(extra(rows[0], "path"), "dense");
}

TEST(SparseAllreduce, FourRanksShareGpus) {
  REQUIRE_GPUS(1);
  const int g = std::min(gpu_count(), 2);
  RankGpus gpus({0, 1 % g, 0, 1 % g});
  ASSERT_TRUE(gpus.shared());
  for (IndexDist dist : {IndexDist::uniform, IndexDist::zipf}) {
    SparseConfig cfg = small_config(5003, 16, 0.1, dist);
    cfg.modes = {SparseMode::sparse, SparseMode::dense};
    cfg.union_modes = {UnionMode::allgather, UnionMode::gather_bcast};
    cfg.host_baseline = true;
    auto rows = run_sparse_allreduce(gpus, cfg);
    expect_right(rows);
    ASSERT_GE(rows.size(), 3u);
    for (const auto& r : rows) {
      EXPECT_NE(r.algo, "allreduce.nccl");  // NCCL cannot serve ranks that share a GPU
      if (r.algo == "allreduce.sparse") {
        EXPECT_EQ(extra(r, "dense_allreduce"), "peer_kernel");
      }
    }
  }
}

TEST(SparseMatch, KernelsAgreeWithHostPositions) {
  REQUIRE_GPUS(1);
  std::mt19937 rng(3);
  // Dense local lists (windows fit in shared memory) and sparse ones (window fallback to global search).
  for (int spread : {1, 2, 50, 400}) {
    std::vector<uint32_t> global;
    for (uint32_t v = 5; global.size() < 200000; v += 1 + rng() % 3) global.push_back(v);
    std::vector<uint32_t> local;
    std::vector<int32_t> expect;
    for (size_t i = 0; i < global.size(); i += 1 + rng() % spread) {
      local.push_back(global[i]);
      expect.push_back(int32_t(i));
    }
    local.push_back(global.back());  // the last element (its window ends at the list's end)
    expect.push_back(int32_t(global.size() - 1));
    if (local[local.size() - 2] == local.back()) {
      local.pop_back();
      expect.pop_back();
    }
    for (MatchKernel k : {MatchKernel::quadratic, MatchKernel::binsearch, MatchKernel::window}) {
      if (k == MatchKernel::quadratic && spread < 50) continue;  // ~1e10 comparisons: too slow for a unit test
      EXPECT_EQ(sparse_match_on_gpu(0, k, local, global), expect) << "kernel " << int(k) << " spread " << spread;
    }
  }
  // Absent keys give -1; a single-element global list.
  EXPECT_EQ(sparse_match_on_gpu(0, MatchKernel::window, {3, 9}, {3}), (std::vector<int32_t>{0, -1}));
  EXPECT_EQ(sparse_match_on_gpu(0, MatchKernel::binsearch, {1, 2, 3}, {2}), (std::vector<int32_t>{-1, 0, -1}));
  EXPECT_EQ(sparse_match_on_gpu(0, MatchKernel::quadratic, {0x7fffffffu}, {1, 0x7fffffffu}), (std::vector<int32_t>{1}));
}

}  // namespace
}  // namespace cclab::exec
