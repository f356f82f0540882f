// Collective matmul on GPUs: every algorithm's output against an fp32 cuBLAS reference of the gathered
// operands (outputs poisoned with NaN first), on 2 GPUs, on 3 and 4 ranks sharing GPUs, fp16/bf16/fp32,
// shapes that do not divide evenly. Skips with a message where no GPU is present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <set>

#include "core/error.hpp"
#include "exec/mmsp/cmatmul.hpp"

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

// Ranks placed round-robin on the first two GPUs (or all on one), so that several share a GPU.
RankGpus shared_ranks(int nranks) {
  const int gpus = std::min(gpu_count(), 2);
  std::vector<int> dev;
  for (int r = 0; r < nranks; ++r) dev.push_back(r % gpus);
  return RankGpus(dev);
}

void expect_all_right(const std::vector<Record>& rows, const std::set<std::string>& algos, double relerr_max) {
  std::set<std::string> seen;
  for (const auto& r : rows) {
    if (r.collective == "matmul") continue;  // the cuBLAS reference timings
    seen.insert(r.algo);
    EXPECT_EQ(r.wrong, 0) << r.algo << " " << r.shape << " " << r.dtype;
    EXPECT_LT(std::stod(extra(r, "relerr")), relerr_max) << r.algo;
    EXPECT_GT(r.time_us, 0) << r.algo;
    EXPECT_FALSE(r.shape.empty());
  }
  EXPECT_EQ(seen, algos);
}

TEST(CollectiveMatmul, TwoGpusEveryAlgorithmHalfAndBf16) {
  REQUIRE_GPUS(2);
  RankGpus gpus({0, 1});
  for (DType t : {DType::f16, DType::bf16}) {
    for (MatmulShape shape : {MatmulShape{37, 72, 40}, MatmulShape{128, 256, 192}}) {
      CmatmulConfig cfg;
      cfg.shape = shape;
      cfg.dtype = t;
      cfg.warmup = 1;
      cfg.iters = 2;
      auto rows = run_collective_matmul(gpus, cfg);
      expect_all_right(rows, std::set<std::string>(collective_matmul_algos().begin(), collective_matmul_algos().end()),
                       1e-2);
      for (const auto& r : rows) {
        EXPECT_EQ(r.ranks, r.collective == "matmul" ? 1 : 2);
        EXPECT_EQ(r.bytes, 2 * shape.m * shape.k * 2);  // the gathered A
        // Autotune is off by default, and the note says so.
        EXPECT_NE(r.note.find("autotune off"), std::string::npos) << r.algo << ": " << r.note;
      }
    }
  }
}

TEST(CollectiveMatmul, RingInChunksIsStillRight) {
  REQUIRE_GPUS(1);
  for (int nranks : {2, 3}) {
    RankGpus gpus = nranks == 2 && gpu_count() >= 2 ? RankGpus({0, 1}) : shared_ranks(nranks);
    CmatmulConfig cfg;
    cfg.shape = {37, 72, 40};  // 37 rows in 2 or 5 chunks: uneven chunks, offsets not 256-byte aligned
    cfg.dtype = DType::f16;
    cfg.warmup = 1;
    cfg.iters = 2;
    cfg.algos = {"allgather_matmul.ring"};
    for (int chunks : {2, 5}) {
      cfg.ring_chunks = chunks;
      auto rows = run_collective_matmul(gpus, cfg);
      expect_all_right(rows, {"allgather_matmul.ring"}, 1e-2);
    }
  }
}

TEST(CollectiveMatmul, AutotuneOnAndOffBothRight) {
  REQUIRE_GPUS(2);
  RankGpus gpus({0, 1});
  CmatmulConfig cfg;
  cfg.shape = {64, 96, 80};
  cfg.dtype = DType::bf16;
  cfg.warmup = 0;  // with autotune on, the tuning pass must still stay out of the timed iterations
  cfg.iters = 2;
  for (bool tune : {true, false}) {
    cfg.autotune = tune;
    auto rows = run_collective_matmul(gpus, cfg);
    expect_all_right(rows, std::set<std::string>(collective_matmul_algos().begin(), collective_matmul_algos().end()),
                     1e-2);
    for (const auto& r : rows) EXPECT_NE(r.note.find(tune ? "rows=" : "autotune off"), std::string::npos) << r.note;
  }
}

TEST(CollectiveMatmul, FourRanksShareTwoGpus) {
  REQUIRE_GPUS(1);
  RankGpus gpus = shared_ranks(4);
  ASSERT_TRUE(gpus.shared());
  CmatmulConfig cfg;
  cfg.shape = {21, 64, 48};
  cfg.dtype = DType::f16;
  cfg.warmup = 0;
  cfg.iters = 1;
  auto rows = run_collective_matmul(gpus, cfg);  // NCCL baselines are left out: ranks share GPUs
  expect_all_right(rows, {"allgather_matmul.ring", "allgather_matmul.ring_bidir", "matmul_reducescatter.ring"}, 1e-2);
  for (const auto& r : rows) EXPECT_NE(r.note.find("not meaningful"), std::string::npos);
}

TEST(CollectiveMatmul, ThreeRanksOddRingFloat) {
  REQUIRE_GPUS(1);
  RankGpus gpus = shared_ranks(3);
  CmatmulConfig cfg;
  cfg.shape = {10, 33, 17};
  cfg.dtype = DType::f32;
  cfg.warmup = 0;
  cfg.iters = 1;
  cfg.algos = {"allgather_matmul.ring", "allgather_matmul.ring_bidir", "matmul_reducescatter.ring"};
  auto rows = run_collective_matmul(gpus, cfg);
  expect_all_right(rows, {"allgather_matmul.ring", "allgather_matmul.ring_bidir", "matmul_reducescatter.ring"}, 1e-4);
}

TEST(CollectiveMatmul, BadInputIsOneClearError) {
  REQUIRE_GPUS(1);
  RankGpus gpus({0});
  CmatmulConfig cfg;
  cfg.shape = {0, 8, 8};
  try {
    run_collective_matmul(gpus, cfg);
    FAIL() << "accepted a zero dimension";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("--shape"), std::string::npos);
  }
  cfg.shape = {8, 8, 8};
  cfg.algos = {"allgather_matmul.nope"};
  EXPECT_THROW(run_collective_matmul(gpus, cfg), Error);
  cfg.shape = {1, 8, 8};
  cfg.algos = {"allgather_matmul.ring_bidir"};
  EXPECT_THROW(run_collective_matmul(gpus, cfg), Error);
}

TEST(CollectiveMatmul, NcclBaselineRefusedWhenRanksShareGpus) {
  REQUIRE_GPUS(1);
  RankGpus gpus = shared_ranks(2 * std::min(gpu_count(), 2));
  CmatmulConfig cfg;
  cfg.shape = {8, 8, 8};
  cfg.algos = {"allgather_matmul.nccl_cublas"};
  try {
    run_collective_matmul(gpus, cfg);
    FAIL() << "ran NCCL on ranks that share a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::environment);
  }
}

TEST(RankGpus, MoreRanksThanGpusNeedsTheSharingFlag) {
  REQUIRE_GPUS(1);
  try {
    RankGpus::create(gpu_count() + 1, false);
    FAIL() << "accepted more ranks than GPUs";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
  }
  EXPECT_TRUE(RankGpus::create(gpu_count() + 1, true).shared());
}

}  // namespace
}  // namespace cclab::exec
