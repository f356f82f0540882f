// The fused lowering (one kernel per GPU runs the whole schedule) on the GPUs: every general
// algorithm with --tune lowering=fused, 2 ranks on 2 GPUs and 4/8 ranks sharing them (ranks of one
// GPU in one launch), sizes that divide neither by the ranks nor by 16 bytes, every dtype and
// reduction, in place and out of place, graph replay and op by op: zero wrong elements, and the
// records say the fused path ran. Skips with a message where no GPU is present.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "algorithms/fused_probes.hpp"
#include "core/error.hpp"
#include "core/record.hpp"
#include "exec/runtime/device.hpp"
#include "exec/runtime/fused_workload.hpp"
#include "exec/runtime/harness.hpp"
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

// The registry's general algorithms (those the fused lowering takes).
std::vector<std::string> general_algorithms() {
  std::vector<std::string> out;
  for (const auto& name : gpu_algorithm_names())
    if (!name.ends_with(".nccl") && name.find(".bidir") == std::string::npos && !name.starts_with("sol."))
      out.push_back(name);
  return out;
}

std::vector<Record> run_fused(const std::vector<std::string>& algos, const Case& c, int64_t bytes, RedOp op,
                              int iters = 2, const std::string& tune = "lowering=fused") {
  RunOptions o;
  o.algos = algos;
  o.nranks = c.ranks;
  o.min_bytes = o.max_bytes = bytes;
  o.warmup = 1;
  o.iters = iters;
  o.dtype = c.dtype;
  o.op = op;
  o.root = c.ranks - 1;
  o.graph = c.graph;
  o.share_gpus = c.ranks > visible_devices();
  o.timeout_s = 30;
  o.tune = tune + ",fused_timeout=5";
  o.csv = testing::TempDir() + "/cclab_fused_gpu_test.csv";
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

class FusedAllAlgorithms : public testing::TestWithParam<Case> {};

TEST_P(FusedAllAlgorithms, ZeroWrong) {
  const Case c = GetParam();
  if (visible_devices() == 0) GTEST_SKIP() << "no CUDA device";
  if (c.ranks == 2 && visible_devices() < 2) GTEST_SKIP() << "needs 2 GPUs";
  const int64_t e = dtype_size(c.dtype);
  // Element counts that divide neither by the rank count nor by a 16-byte vector; the largest gives
  // lanes several CTAs (32 KiB each).
  std::vector<int64_t> sizes = {e * 1, e * 7, e * 1031, e * (65536 + 5)};
  const auto all = general_algorithms();
  std::vector<std::string> reducing;
  for (const auto& a : all)
    if (a.starts_with("allreduce") || a.starts_with("reduce")) reducing.push_back(a);
  std::map<std::string, int> rows_per_algo;
  auto check = [&](const std::vector<Record>& rows, RedOp op, int64_t bytes) {
    for (const auto& r : rows) {
      EXPECT_EQ(r.wrong, 0) << r.algo << " " << redop_name(op) << " " << bytes << " B in_place=" << r.in_place;
      EXPECT_GT(r.time_us, 0.0) << r.algo;
      EXPECT_NE(r.note.find("lowering=fused"), std::string::npos) << r.algo << ": " << r.note;
      ++rows_per_algo[r.algo];
    }
  };
  for (int64_t bytes : sizes) check(run_fused(all, c, bytes, RedOp::sum), RedOp::sum, bytes);
  for (RedOp op : {RedOp::prod, RedOp::min, RedOp::max, RedOp::avg})
    for (int64_t bytes : {e * 7, e * 1031}) check(run_fused(reducing, c, bytes, op), op, bytes);
  for (const auto& algo : all) EXPECT_GT(rows_per_algo[algo], 0) << algo << " never ran";
}

INSTANTIATE_TEST_SUITE_P(Gpu, FusedAllAlgorithms,
                         testing::Values(Case{2, DType::f32, true}, Case{2, DType::f16, false},
                                         Case{2, DType::bf16, true}, Case{4, DType::f32, true},
                                         Case{8, DType::bf16, true}),
                         case_name);

// Many back-to-back launches in one graph (epochs advanced by the kernels alone, no flag reset), then a
// fresh checked run: still zero wrong, no timeout.
TEST(FusedGpu, LongReplaysKeepTheEpochs) {
  if (visible_devices() < 2) GTEST_SKIP() << "needs 2 GPUs";
  for (bool graph : {true, false}) {
    const auto rows = run_fused({"allreduce.ring", "allgather.ring", "alltoall.direct"}, Case{2, DType::f32, graph},
                                4096, RedOp::sum, 200);
    EXPECT_EQ(rows.size(), 6u);
    for (const auto& r : rows) EXPECT_EQ(r.wrong, 0) << r.algo;
  }
}

// Per-CTA flags (fused_slices=1): every general algorithm on 4 GPUs where there are 4 (else 2), at sizes that give
// a lane several CTAs, odd counts included, replayed many times; zero wrong, no timeout.
TEST(FusedGpu, SlicedProgramsAreCorrect) {
  if (visible_devices() < 2) GTEST_SKIP() << "needs 2 GPUs";
  const Case c{visible_devices() >= 4 ? 4 : 2, DType::f32, true};
  for (int64_t bytes : {int64_t(1 << 20) + 4, int64_t(8 << 20)}) {
    const auto rows = run_fused(general_algorithms(), c, bytes, RedOp::sum, 50, "lowering=fused,fused_slices=1");
    EXPECT_FALSE(rows.empty());
    for (const auto& r : rows) EXPECT_EQ(r.wrong, 0) << r.algo << " " << bytes;
  }
  const auto avg = run_fused({"allreduce.ring", "reducescatter.ring"}, Case{c.ranks, DType::bf16, false}, 3 << 20,
                             RedOp::avg, 5, "lowering=fused,fused_slices=1");
  for (const auto& r : avg) EXPECT_EQ(r.wrong, 0) << r.algo;
}

// lowering=auto: fused up to fused_max, the general lowering above; the note says which.
TEST(FusedGpu, AutoPicksByFusedMax) {
  if (visible_devices() < 2) GTEST_SKIP() << "needs 2 GPUs";
  const Case c{2, DType::f32, true};
  auto small = run_fused({"allreduce.ring"}, c, 4096, RedOp::sum, 2, "lowering=auto,fused_max=8K");
  auto large = run_fused({"allreduce.ring"}, c, 16384, RedOp::sum, 2, "lowering=auto,fused_max=8K");
  ASSERT_FALSE(small.empty());
  ASSERT_FALSE(large.empty());
  EXPECT_NE(small[0].note.find("lowering=fused"), std::string::npos) << small[0].note;
  EXPECT_NE(large[0].note.find("general lowering"), std::string::npos) << large[0].note;
  // A plan with no cross-GPU wait (the root reads its peer) stays on the general lowering.
  auto direct = run_fused({"reduce.direct"}, c, 4096, RedOp::sum, 2, "lowering=auto");
  ASSERT_FALSE(direct.empty());
  EXPECT_NE(direct[0].note.find("general lowering"), std::string::npos) << direct[0].note;
}

// The calibration's 4-GPU probes (a ring's steps, a chain, a fan-out) run on the fused kernel as the calibration
// times them: replayed graphs, no timeout (ranks share GPUs where there are fewer than 4; timings then not
// meaningful).
TEST(FusedGpu, WideCalibrationProbesRun) {
  if (visible_devices() == 0) GTEST_SKIP() << "no CUDA device";
  Communicator comm(CommOptions{kFusedWideProbeRanks, visible_devices() < kFusedWideProbeRanks});
  TimingOptions t;
  t.warmup = 2;
  t.iters = 20;
  t.graph = true;
  t.timeout_s = 30;
  Harness h(comm, t);
  FusedParams fp;
  fp.lowering = LoweringMode::fused;
  for (FusedProbe kind : {FusedProbe::ring, FusedProbe::chain, FusedProbe::fanout})
    for (int64_t bytes : {int64_t(8), int64_t(2048)}) {
      const int n = kFusedWideProbeRanks - 1;
      try {
        FusedWorkload w(comm, fused_probe(kind, n, bytes), fp);
        EXPECT_GT(h.time_us(w), 0.0) << fused_probe_series(kind, n) << " " << bytes << " B";
      } catch (const Error& e) {
        ADD_FAILURE() << fused_probe_series(kind, n) << " " << bytes << " B: " << e.what();
      }
    }
}

}  // namespace
}  // namespace cclab::exec
