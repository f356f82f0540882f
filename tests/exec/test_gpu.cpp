// Every algorithm the executor runs, on the GPUs: 2 ranks on 2 GPUs (with the NCCL baselines), and
// 4 and 8 ranks sharing the GPUs; sizes that do not divide evenly, every dtype, every reduction
// for the all-reduces, in place and out of place, graph replay and op by op: zero wrong elements.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/error.hpp"
#include "core/record.hpp"
#include "exec/device.hpp"
#include "exec/runner.hpp"

namespace cclab::exec {
namespace {

struct Case {
  int ranks;
  DType dtype;
  bool graph;
};

std::string case_name(const testing::TestParamInfo<Case>& i) {
  return std::to_string(i.param.ranks) + "ranks_" + std::string(dtype_name(i.param.dtype)) +
         (i.param.graph ? "_graph" : "_opbyop");
}

class AllAlgorithms : public testing::TestWithParam<Case> {};

// Runs one algorithm at one size and returns its records (throws what run_sweep throws).
std::vector<Record> run_one(const std::string& algo, const Case& c, int64_t bytes, RedOp op) {
  RunOptions o;
  o.algos = {algo};
  o.nranks = c.ranks;
  o.min_bytes = o.max_bytes = bytes;
  o.warmup = 1;
  o.iters = 2;
  o.dtype = c.dtype;
  o.op = op;
  o.root = c.ranks - 1;
  o.graph = c.graph;
  o.share_gpus = c.ranks > visible_devices();
  o.timeout_s = 30;
  o.csv = testing::TempDir() + "/cclab_gpu_test.csv";
  std::filesystem::remove(o.csv);
  std::ostringstream table;
  const int code = run_sweep(o, table);
  auto rows = std::filesystem::exists(o.csv) ? read_csv(o.csv) : std::vector<Record>{};
  EXPECT_TRUE(code == 0 || code == 3) << table.str();
  if (code == 3) ADD_FAILURE() << algo << " " << bytes << " B: wrong results\n" << table.str();
  return rows;
}

TEST_P(AllAlgorithms, ZeroWrong) {
  const Case c = GetParam();
  if (visible_devices() == 0) GTEST_SKIP() << "no CUDA device";
  if (c.ranks == 2 && visible_devices() < 2) GTEST_SKIP() << "needs 2 GPUs";
  const int64_t e = dtype_size(c.dtype);
  // Element counts that do not divide by the rank count, nor by a vector of 16 bytes.
  std::vector<int64_t> sizes = {e * 1, e * 7, e * 1031, e * (262144 + 5)};
  if (c.ranks == 2) sizes.push_back(e * ((int64_t(3) << 20) + 3));
  int runs = 0;
  for (const auto& algo : gpu_algorithm_names()) {
    const bool nccl = algo.ends_with(".nccl");
    if (nccl && c.ranks > visible_devices()) continue;  // NCCL needs one GPU per rank
    const bool reduces = algo.starts_with("allreduce") || algo.starts_with("reduce");
    std::vector<RedOp> ops = {RedOp::sum};
    if (reduces && !nccl) ops = {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg};
    for (RedOp op : ops)
      for (int64_t bytes : sizes) {
        if (op != RedOp::sum && bytes > e * 2000) continue;  // other ops: the small sizes suffice
        try {
          const auto rows = run_one(algo, c, bytes, op);
          for (const auto& r : rows) {
            EXPECT_EQ(r.wrong, 0) << algo << " " << redop_name(op) << " " << bytes << " B in_place=" << r.in_place;
            EXPECT_GT(r.time_us, 0.0) << algo;
          }
          ++runs;
        } catch (const Error& err) {
          const std::string what = err.what();
          // Schedules that cannot split this size or rank count are input errors, not failures.
          if (err.kind() == ErrorKind::input) continue;
          ADD_FAILURE() << algo << " " << redop_name(op) << " " << bytes << " B: " << what;
        }
      }
  }
  EXPECT_GT(runs, 0);
}

INSTANTIATE_TEST_SUITE_P(Gpu, AllAlgorithms,
                         testing::Values(Case{2, DType::f32, true}, Case{2, DType::f16, false},
                                         Case{2, DType::bf16, true}, Case{4, DType::f32, false},
                                         Case{4, DType::bf16, true}, Case{8, DType::f16, true}),
                         case_name);

TEST(GpuRun, SolBidirCopyMovesBothWays) {
  if (visible_devices() < 2) GTEST_SKIP() << "needs 2 GPUs";
  const auto rows = run_one("sol.bidir_copy", Case{2, DType::f32, true}, 64 << 20, RedOp::sum);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].wrong, 0);
  EXPECT_GT(rows[0].busbw_gbps, 50.0);  // NVLink: hundreds of GB/s; PCIe would still pass 50
}

}  // namespace
}  // namespace cclab::exec
