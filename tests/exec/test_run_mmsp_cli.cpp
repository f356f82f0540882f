// `cclab run` with collective matmul (--shape) and sparse all-reduce (--rows ...) inputs, without a GPU:
// plan_mmsp's parsing and refusals, the measured crossover's interpolation, and the binary's bad-input
// lines (exit 1, one line, before any GPU is touched) and its no-GPU exit 2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "exec/mmsp/cmatmul.hpp"
#include "exec/mmsp/run_mmsp.hpp"
#include "exec/runtime/device.hpp"

namespace cclab::exec {
namespace {

RunOptions opts(std::vector<std::string> algos) {
  RunOptions o;
  o.algos = std::move(algos);
  return o;
}

std::string input_error(const RunOptions& o) {
  try {
    plan_mmsp(o);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(RunMmspPlan, FamilyFollowsNamesAndFlags) {
  EXPECT_EQ(mmsp_family(opts({"allreduce.ring"})), MmspFamily::none);
  EXPECT_EQ(mmsp_family(opts({"allreduce.nccl"})), MmspFamily::none);  // the ordinary sweep's baseline
  EXPECT_EQ(mmsp_family(opts({"allgather_matmul.ring"})), MmspFamily::matmul);
  EXPECT_EQ(mmsp_family(opts({"matmul_reducescatter.nccl_cublas"})), MmspFamily::matmul);
  EXPECT_EQ(mmsp_family(opts({"allreduce.sparse"})), MmspFamily::sparse);
  EXPECT_EQ(mmsp_family(opts({"index_match.window"})), MmspFamily::sparse);
  RunOptions o = opts({"allreduce.nccl"});
  o.rows = "1000";
  EXPECT_EQ(mmsp_family(o), MmspFamily::sparse);  // with --rows: the dense table baseline
  o = opts({"all"});
  o.shape = "8,8,8";
  EXPECT_EQ(mmsp_family(o), MmspFamily::matmul);
}

TEST(RunMmspPlan, MatmulShapeAndAllExpansion) {
  RunOptions o = opts({"all"});
  o.shape = "1024,4096,4096";
  o.dtype = DType::f16;
  const MmspRun p = plan_mmsp(o);
  EXPECT_EQ(p.family, MmspFamily::matmul);
  EXPECT_EQ(p.shape.m, 1024);
  EXPECT_EQ(p.shape.k, 4096);
  EXPECT_EQ(p.shape.n, 4096);
  EXPECT_EQ(p.algos, collective_matmul_algos());
  o = opts({"allgather_matmul.ring", "allgather_matmul.ring", "allgather_matmul.nccl_cublas"});
  o.shape = "4,5,6";
  o.tune = "seed=7";
  const MmspRun q = plan_mmsp(o);
  EXPECT_EQ(q.algos, (std::vector<std::string>{"allgather_matmul.ring", "allgather_matmul.nccl_cublas"}));
  EXPECT_EQ(q.seed, 7u);
  EXPECT_FALSE(q.matmul_autotune);  // off unless turned on
  o.tune = "matmul_autotune=1,seed=3";
  EXPECT_TRUE(plan_mmsp(o).matmul_autotune);
  o.tune = "matmul_autotune=2";
  EXPECT_THROW(plan_mmsp(o), Error);
  EXPECT_EQ(q.ring_chunks, 1);
  o.tune = "ring_chunks=4";
  EXPECT_EQ(plan_mmsp(o).ring_chunks, 4);
  o.tune = "ring_chunks=0";
  EXPECT_THROW(plan_mmsp(o), Error);
}

TEST(RunMmspPlan, SparseListsAndTuneKeys) {
  RunOptions o = opts({"allreduce.sparse", "allreduce.nccl"});
  o.rows = "500000";
  o.dim = "2048";
  o.density = "0.05,0.5";
  o.dist = "uniform,zipf";
  o.tune = "path=sparse+dense+auto,union=allgather+gather_bcast,dense_iters=2";
  const MmspRun p = plan_mmsp(o);
  EXPECT_EQ(p.family, MmspFamily::sparse);
  ASSERT_EQ(p.sparse.size(), 4u);  // dist-major
  EXPECT_EQ(p.sparse[0].dist, IndexDist::uniform);
  EXPECT_DOUBLE_EQ(p.sparse[1].density, 0.5);
  EXPECT_EQ(p.sparse[2].dist, IndexDist::zipf);
  EXPECT_EQ(p.sparse[3].rows, 500000);
  EXPECT_EQ(p.sparse[3].dim, 2048);
  EXPECT_EQ(p.paths, (std::vector<SparseMode>{SparseMode::sparse, SparseMode::dense, SparseMode::automatic}));
  EXPECT_EQ(p.unions, (std::vector<std::string>{"allgather", "gather_bcast"}));
  EXPECT_EQ(p.dense_iters, 2);
  o.tune.clear();
  o.density.clear();
  o.dist.clear();
  const MmspRun d = plan_mmsp(o);  // defaults: 1%, uniform, automatic path, all-gather union
  ASSERT_EQ(d.sparse.size(), 1u);
  EXPECT_DOUBLE_EQ(d.sparse[0].density, 0.01);
  EXPECT_EQ(d.paths, std::vector<SparseMode>{SparseMode::automatic});
}

TEST(RunMmspPlan, RefusalsNameTheProblem) {
  struct Case {
    std::vector<std::string> algos;
    std::string shape, rows, dim, density, dist, tune;
    DType dtype;
    const char* want;
  };
  const Case cases[] = {
      {{"allgather_matmul.ring"}, "", "", "", "", "", "", DType::f16, "needs --shape"},
      {{"allgather_matmul.ring"}, "1,2", "", "", "", "", "", DType::f16, "M,K,N"},
      {{"allgather_matmul.ring"}, "0,2,3", "", "", "", "", "", DType::f16, "--shape"},
      {{"allgather_matmul.ring"}, "1,2,3", "100", "", "", "", "", DType::f16, "--shape only"},
      {{"allgather_matmul.ring", "allreduce.sparse"}, "1,2,3", "", "", "", "", "", DType::f16, "apart"},
      {{"allreduce.ring"}, "1,2,3", "", "", "", "", "", DType::f16, "does not run with --shape"},
      {{"allgather_matmul.nope"}, "1,2,3", "", "", "", "", "", DType::f16, "unknown algorithm"},
      {{"allgather_matmul.ring"}, "1,2,3", "", "", "", "", "lanes=4", DType::f16, "unknown key 'lanes'"},
      {{"allreduce.sparse"}, "", "", "", "", "", "", DType::f32, "needs --rows"},
      {{"allreduce.sparse"}, "", "100", "", "", "", "", DType::f32, "--dim"},
      {{"allreduce.sparse"}, "", "100", "8", "", "", "", DType::f16, "float"},
      {{"allreduce.sparse"}, "", "100", "8", "1.5", "", "", DType::f32, "--density"},
      {{"allreduce.sparse"}, "", "100", "8", "0.1,", "", "", DType::f32, "--density"},
      {{"allreduce.sparse"}, "", "100", "8", "", "pareto", "", DType::f32, "pareto"},
      {{"allreduce.sparse"}, "", "100", "8", "", "", "path=fast", DType::f32, "fast"},
      {{"allreduce.sparse"}, "", "100", "8", "", "", "union=ring", DType::f32, "ring"},
      {{"allreduce.sparse"}, "", "100", "8", "", "", "dense_iters=0", DType::f32, "dense_iters"},
      {{"allreduce.sparse"}, "", "100", "8", "", "", "path", DType::f32, "key=value"},
      {{"allreduce.bidir"}, "", "100", "8", "", "", "", DType::f32, "does not run with --rows"},
  };
  for (const Case& c : cases) {
    RunOptions o = opts(c.algos);
    o.shape = c.shape;
    o.rows = c.rows;
    o.dim = c.dim;
    o.density = c.density;
    o.dist = c.dist;
    o.tune = c.tune;
    o.dtype = c.dtype;
    const std::string e = input_error(o);
    EXPECT_NE(e.find(c.want), std::string::npos)
        << c.algos.front() << " " << c.shape << c.rows << " " << c.tune << ": " << e;
  }
  RunOptions o = opts({"allreduce.sparse"});
  o.rows = "100";
  o.dim = "8";
  o.op = RedOp::max;
  EXPECT_NE(input_error(o).find("sums"), std::string::npos);
}

Record sparse_row(const std::string& dist, double density, const std::string& mode, double t_us) {
  Record r;
  r.algo = "allreduce.sparse";
  r.time_us = t_us;
  r.extra = {{"density", std::to_string(density)}, {"dist", dist}, {"mode", mode}};
  return r;
}

TEST(RunMmspCrossover, InterpolatesBetweenTheBracketingDensities) {
  std::vector<Record> rows = {
      sparse_row("uniform", 0.2, "sparse", 6000),  sparse_row("uniform", 0.2, "dense", 14000),
      sparse_row("uniform", 0.6, "sparse", 13000), sparse_row("uniform", 0.6, "dense", 15000),
      sparse_row("uniform", 0.8, "sparse", 17000), sparse_row("uniform", 0.8, "dense", 16000),
      sparse_row("uniform", 0.8, "auto", 1),  // automatic rows do not count
      sparse_row("zipf", 0.2, "sparse", 6000),     sparse_row("zipf", 0.2, "dense", 14000),
  };
  // Between 0.6 (sparse 2000 us faster) and 0.8 (dense 1000 us faster): 0.6 + 0.2 * 2/3.
  EXPECT_EQ(measured_sparse_crossover(rows, "uniform"), "0.7333");
  EXPECT_EQ(measured_sparse_crossover(rows, "zipf"), ">0.2000");  // sparse wins at every density measured
  rows.push_back(sparse_row("zipf", 0.1, "dense", 1));
  rows.push_back(sparse_row("zipf", 0.1, "sparse", 2));
  EXPECT_EQ(measured_sparse_crossover(rows, "zipf"), "<=0.1000");  // dense wins from the first
  EXPECT_EQ(measured_sparse_crossover(rows, "none"), "");
}

// ---- through the binary

struct Result {
  int code = -1;
  std::string out;
};

Result run(const std::string& args) {
  const std::string cmd = std::string(CCLAB_BINARY) + " run " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

int count_lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

TEST(RunMmspCli, HelpListsTheInputFlags) {
  const Result r = run("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* f : {"--shape", "--rows", "--dim", "--density", "--dist"})
    EXPECT_NE(r.out.find(f), std::string::npos) << f;
}

TEST(RunMmspCli, BadInputIsOneLineAndExitOne) {
  const char* cases[][2] = {
      {"--algo allgather_matmul.ring -g 2 -d half", "needs --shape"},
      {"--algo allgather_matmul.ring -g 2 --shape 1024,4096 -d half", "M,K,N"},
      {"--algo allgather_matmul.ring --shape 8,8,8 -b 1M", "-b does not apply"},
      {"--algo allgather_matmul.ring --shape 8,8,8 --inplace 1", "--inplace does not apply"},
      {"--algo allreduce.ring --shape 8,8,8", "does not run with --shape"},
      {"--algo allreduce.sparse --rows 1000", "--dim"},
      {"--algo allreduce.sparse --rows 1000 --dim 8 -d bfloat16", "float"},
      {"--algo allreduce.sparse --rows 1000 --dim 8 --dist lognormal", "lognormal"},
      {"--algo allreduce.sparse --rows x --dim 8", "--rows"},
      {"--algo allreduce.sparse --rows 1000 --dim 8 --tune path=sparse+fast", "fast"},
      {"--algo allreduce.sparse,allgather_matmul.ring --rows 1000 --dim 8", "--shape only"},
  };
  for (const auto& c : cases) {
    const Result r = run(c[0]);
    EXPECT_EQ(r.code, 1) << c[0] << ": " << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << c[0] << ": " << r.out;
    EXPECT_NE(r.out.find(c[1]), std::string::npos) << c[0] << ": " << r.out;
  }
}

TEST(RunMmspCli, NoGpuIsAnEnvironmentErrorAndWritesNoRecords) {
  if (visible_devices() > 0) GTEST_SKIP() << "a CUDA device is present";
  const std::string csv = testing::TempDir() + "/cclab_run_mmsp_nogpu.csv";
  std::filesystem::remove(csv);
  for (const std::string& args : {"--algo allgather_matmul.ring -g 2 --shape 64,64,64 -d half --csv " + csv,
                                  "--algo allreduce.sparse --rows 1000 --dim 8 --density 0.1 --csv " + csv}) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find("no CUDA device found"), std::string::npos) << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << r.out;
    EXPECT_FALSE(std::filesystem::exists(csv));
  }
}

}  // namespace
}  // namespace cclab::exec
