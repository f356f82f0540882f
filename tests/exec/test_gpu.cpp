// Every algorithm the executor runs, on the GPUs: 2 ranks on 2 GPUs (with the NCCL baselines), and
// 4 and 8 ranks sharing the GPUs; sizes that do not divide evenly, every dtype, every reduction
// for the all-reduces, in place and out of place, graph replay and op by op: zero wrong elements.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/record.hpp"
#include "exec/runtime/device.hpp"
#include "exec/runtime/runner.hpp"

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

// Runs `algos` at one size in one sweep and returns their records.
std::vector<Record> run_sizes(const std::vector<std::string>& algos, const Case& c, int64_t bytes, RedOp op) {
  RunOptions o;
  o.algos = algos;
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
  int code = -1;
  try {
    code = run_sweep(o, table);
  } catch (const Error& err) {
    ADD_FAILURE() << bytes << " B " << redop_name(op) << ": " << err.what() << "\n" << table.str();
  }
  EXPECT_TRUE(code == 0 || code == 3) << table.str();
  if (code == 3) ADD_FAILURE() << bytes << " B " << redop_name(op) << ": wrong results\n" << table.str();
  return std::filesystem::exists(o.csv) ? read_csv(o.csv) : std::vector<Record>{};
}

TEST_P(AllAlgorithms, ZeroWrong) {
  const Case c = GetParam();
  if (visible_devices() == 0) GTEST_SKIP() << "no CUDA device";
  if (c.ranks == 2 && visible_devices() < 2) GTEST_SKIP() << "needs 2 GPUs";
  const int64_t e = dtype_size(c.dtype);
  // Element counts that divide neither by the rank count nor by a 16-byte vector.
  std::vector<int64_t> sizes = {e * 1, e * 7, e * 1031, e * (262144 + 5)};
  if (c.ranks == 2) sizes.push_back(e * ((int64_t(3) << 20) + 3));
  std::vector<std::string> all, reducing;
  for (const auto& algo : gpu_algorithm_names()) {
    if (algo.ends_with(".nccl") && c.ranks > visible_devices()) continue;  // NCCL: one GPU per rank
    all.push_back(algo);
    if ((algo.starts_with("allreduce") || algo.starts_with("reduce")) && !algo.ends_with(".nccl"))
      reducing.push_back(algo);
  }
  std::map<std::string, int> rows_per_algo;
  auto check = [&](const std::vector<Record>& rows, RedOp op, int64_t bytes) {
    for (const auto& r : rows) {
      EXPECT_EQ(r.wrong, 0) << r.algo << " " << redop_name(op) << " " << bytes << " B in_place=" << r.in_place;
      EXPECT_GT(r.time_us, 0.0) << r.algo;
      ++rows_per_algo[r.algo];
    }
  };
  for (int64_t bytes : sizes) check(run_sizes(all, c, bytes, RedOp::sum), RedOp::sum, bytes);
  for (RedOp op : {RedOp::prod, RedOp::min, RedOp::max, RedOp::avg})
    for (int64_t bytes : {e * 7, e * 1031}) check(run_sizes(reducing, c, bytes, op), op, bytes);
  for (const auto& algo : all) EXPECT_GT(rows_per_algo[algo], 0) << algo << " never ran";
}

INSTANTIATE_TEST_SUITE_P(Gpu, AllAlgorithms,
                         testing::Values(Case{2, DType::f32, true}, Case{2, DType::f16, false},
                                         Case{2, DType::bf16, true}, Case{4, DType::f32, false},
                                         Case{4, DType::bf16, true}, Case{8, DType::f16, true}),
                         case_name);

TEST(GpuRun, SolBidirCopyMovesBothWays) {
  if (visible_devices() < 2) GTEST_SKIP() << "needs 2 GPUs";
  const auto rows = run_sizes({"sol.bidir_copy"}, Case{2, DType::f32, true}, 64 << 20, RedOp::sum);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].wrong, 0);
  EXPECT_GT(rows[0].busbw_gbps, 50.0);  // NVLink: hundreds of GB/s; PCIe would still pass 50
}

}  // namespace
}  // namespace cclab::exec
