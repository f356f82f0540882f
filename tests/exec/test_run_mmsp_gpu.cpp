// `cclab run` with collective matmul and sparse all-reduce inputs on GPUs, through the binary: every
// algorithm and baseline on 2 GPUs, and 4 ranks sharing 2 GPUs; each run writes records whose results are
// all right (#wrong 0). Skips with a message without 2 GPUs. The binary is CCLAB_BIN from the environment
// when set (the GPU machine runs prebuilt binaries from another path), else the one built beside this test.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "core/record.hpp"
#include "exec/runtime/device.hpp"

namespace cclab::exec {
namespace {

#define REQUIRE_GPUS(k) \
  if (visible_devices() < (k)) GTEST_SKIP() << "needs " << (k) << " GPU(s), " << visible_devices() << " visible"

struct Result {
  int code = -1;
  std::string out;
};

std::string binary() {
  const char* env = std::getenv("CCLAB_BIN");
  return env && *env ? env : CCLAB_BINARY;
}

// The first two visible GPUs only, for the tests where 4 ranks share 2 GPUs (on a 4-GPU machine they would not).
std::string first_two_gpus() {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string list = env && *env ? env : "0,1";
  const auto first = list.find(',');
  const auto second = first == std::string::npos ? first : list.find(',', first + 1);
  return "CUDA_VISIBLE_DEVICES=" + list.substr(0, second) + " ";
}

Result run(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + binary() + " run " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string extra(const Record& r, const std::string& key) {
  for (const auto& [k, v] : r.extra)
    if (k == key) return v;
  return "";
}

std::string csv_path(const std::string& name) {
  const std::string p = testing::TempDir() + "/cclab_run_mmsp_" + name + ".csv";
  std::filesystem::remove(p);
  return p;
}

// Runs the command, expects exit 0 and every checked row right; returns the records.
std::vector<Record> run_ok(const std::string& args, const std::string& csv, const std::string& env = "") {
  const Result r = run(args + " --csv " + csv, env);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
  EXPECT_NE(r.out.find("out of bounds values : 0 OK"), std::string::npos) << r.out;
  if (!std::filesystem::exists(csv)) {
    ADD_FAILURE() << "no records in " << csv << "\n" << r.out;
    return {};
  }
  std::vector<Record> rows = read_records(csv);
  for (const auto& row : rows) {
    EXPECT_EQ(row.backend, "gpu");
    EXPECT_FALSE(row.device.empty());
    EXPECT_FALSE(row.commit.empty());
    EXPECT_FALSE(row.date.empty());
    EXPECT_GT(row.time_us, 0) << row.algo;
    if (row.wrong >= 0) EXPECT_EQ(row.wrong, 0) << row.algo << " " << extra(row, "mode") << " " << extra(row, "dist");
  }
  return rows;
}

std::set<std::string> algos_of(const std::vector<Record>& rows) {
  std::set<std::string> s;
  for (const auto& r : rows) s.insert(r.algo);
  return s;
}

TEST(RunMmspGpu, MatmulEveryAlgorithmOnTwoGpus) {
  REQUIRE_GPUS(2);
  // M, K, N that are not multiples of the tile sizes; fp16 as in the command.
  const auto rows = run_ok("--algo all -g 2 --shape 200,328,264 -d half -w 1 -n 2", csv_path("mm2"));
  const std::set<std::string> want = {
      "allgather_matmul.ring",        "allgather_matmul.ring_bidir",      "matmul_reducescatter.ring",
      "allgather_matmul.nccl_cublas", "matmul_reducescatter.nccl_cublas", "matmul.cublas_full",
      "matmul.cublas_shard_x2"};
  EXPECT_EQ(algos_of(rows), want);
  for (const auto& r : rows) {
    EXPECT_EQ(r.shape, "200,328,264");
    EXPECT_EQ(r.dtype, "half");
    EXPECT_EQ(r.bytes, 2 * 200 * 328 * 2) << "bytes = the gathered A";
    EXPECT_FALSE(extra(r, "util_vs_bound").empty()) << r.algo;  // tensor-core utilisation against the bound
    if (r.collective != "matmul") EXPECT_EQ(r.wrong, 0) << r.algo << ": every algorithm is checked";
  }
}

TEST(RunMmspGpu, MatmulFourRanksSharingTwoGpus) {
  REQUIRE_GPUS(2);
  const std::string args =
      "--algo allgather_matmul.ring,allgather_matmul.ring_bidir,matmul_reducescatter.ring -g 4 "
      "--share-gpus --shape 96,128,80 -d bfloat16 -w 0 -n 1";
  const auto rows = run_ok(args, csv_path("mm4"), first_two_gpus());
  int checked = 0;
  for (const auto& r : rows) {
    EXPECT_EQ(r.ranks, r.collective == "matmul" ? 1 : 4);
    EXPECT_NE(r.note.find("share"), std::string::npos) << r.algo << ": " << r.note;
    checked += r.collective != "matmul" && r.wrong == 0;
  }
  EXPECT_EQ(checked, 3);
  // NCCL cannot serve ranks that share a GPU: asked for by name, it is refused before any work.
  const Result nccl =
      run("--algo allgather_matmul.nccl_cublas -g 4 --share-gpus --shape 8,8,8 -d half", first_two_gpus());
  EXPECT_EQ(nccl.code, 1) << nccl.out;
  EXPECT_NE(nccl.out.find("--share-gpus"), std::string::npos) << nccl.out;
}

TEST(RunMmspGpu, SparseEveryPathAndBaselineOnTwoGpus) {
  REQUIRE_GPUS(2);
  const std::string args =
      "--algo allreduce.sparse,allreduce.nccl,allreduce.sparse_hoststaged,index_match.quadratic,index_match.window "
      "-g 2 --rows 20011 --dim 40 --density 0.02,0.7 --dist uniform,zipf -w 1 -n 2 "
      "--tune path=sparse+dense+auto,union=allgather+gather_bcast,dense_iters=1";
  const auto rows = run_ok(args, csv_path("sp2"));
  const std::set<std::string> want = {"allreduce.sparse", "allreduce.nccl", "allreduce.sparse_hoststaged",
                                      "index_match.quadratic", "index_match.window"};
  EXPECT_EQ(algos_of(rows), want);
  int dense_table = 0, sparse_rows = 0;
  for (const auto& r : rows) {
    EXPECT_EQ(extra(r, "rows"), "20011");
    dense_table += r.algo == "allreduce.nccl";
    if (r.algo != "allreduce.sparse") continue;
    ++sparse_rows;
    EXPECT_EQ(r.wrong, 0) << "every sparse row is checked";
    const std::string mode = extra(r, "mode"), path = extra(r, "path");
    if (mode != "auto") EXPECT_EQ(mode, path) << "a forced path runs as forced";
    EXPECT_FALSE(extra(r, "measured_crossover").empty() && extra(r, "dist") == "uniform");
  }
  EXPECT_EQ(dense_table, 1) << "the dense table is timed once per run";
  // 2 dists x 2 densities x (sparse, auto) x 2 unions + 2 x 2 forced dense.
  EXPECT_EQ(sparse_rows, 2 * 2 * 2 * 2 + 2 * 2);
}

TEST(RunMmspGpu, SparseFourRanksSharingTwoGpus) {
  REQUIRE_GPUS(2);
  const auto rows = run_ok(
      "--algo allreduce.sparse -g 4 --share-gpus --rows 10007 --dim 33 --density 0.05,0.9 --dist uniform,zipf "
      "-w 0 -n 1 --tune path=auto+sparse",
      csv_path("sp4"), first_two_gpus());
  ASSERT_EQ(rows.size(), 8u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.ranks, 4);
    EXPECT_EQ(r.wrong, 0) << extra(r, "mode") << " " << extra(r, "density") << " " << extra(r, "dist");
    EXPECT_NE(r.note.find("share"), std::string::npos) << r.note;
    EXPECT_EQ(extra(r, "dense_allreduce"), "peer_kernel");
  }
}

}  // namespace
}  // namespace cclab::exec
