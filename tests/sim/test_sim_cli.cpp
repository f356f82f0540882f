// `cclab sim` as scripts use it: the README's sweep, the CSV contract, JSON, the trace file, and one clear
// line with exit code 1 on bad input. Runs the built binary (CCLAB_BINARY).
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/record.hpp"

namespace {

struct CliRun {
  int code = -1;
  std::string out;  // stdout and stderr together
};

CliRun run(const std::string& args) {
  const std::string cmd = std::string(CCLAB_BINARY) + " sim " + args + " 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string tmp(const std::string& name) { return ::testing::TempDir() + "/" + name; }

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(SimCli, ReadmeSweepOnDgxH100WritesTheContractCsvQuickly) {
  const std::string csv = tmp("dgx-h100.csv");
  const auto t0 = std::chrono::steady_clock::now();
  const CliRun r = run("--topo dgx-h100 --algo all -b 8 -e 1G -f 4 --csv " + csv);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_LT(secs, 60.0);
  EXPECT_NE(r.out.find("# allreduce.ring on dgx-h100, 8 ranks (sim)"), std::string::npos);
  EXPECT_NE(r.out.find("skipping"), std::string::npos);  // collective matmul / sparse need their args
  const auto rows = cclab::read_csv(csv);
  ASSERT_GT(rows.size(), 100u);
  std::ifstream f(csv);
  std::string header;
  std::getline(f, header);
  EXPECT_EQ(header.rfind("algo,collective,backend,topology,ranks,bytes,count,dtype,", 0), 0u) << header;
  for (const auto& rec : rows) {
    EXPECT_EQ(rec.backend, "sim");
    EXPECT_EQ(rec.topology, "dgx-h100");
    EXPECT_EQ(rec.ranks, 8);
    EXPECT_GT(rec.time_us, 0) << rec.algo << " " << rec.bytes;
    EXPECT_LE(rec.bytes, int64_t(1) << 30);
  }
  // Every simulated algorithm appears, the NCCL baselines included.
  for (const char* a : {"allreduce.ring", "allreduce.nccl", "alltoall.hier", "allreduce.bidir", "broadcast.nccl"})
    EXPECT_TRUE(std::any_of(rows.begin(), rows.end(), [&](auto& x) { return x.algo == a; })) << a;
}

TEST(SimCli, TableHasNcclTestsColumnsAndBusBandwidth) {
  const CliRun r = run("--topo h200x2 --algo allreduce.ring -b 1M -e 4M");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("size"), std::string::npos);
  EXPECT_NE(r.out.find("busbw"), std::string::npos);
  EXPECT_NE(r.out.find("#wrong"), std::string::npos);
  EXPECT_EQ(lines(r.out), 1 + 2 + 3 + 1);  // title, two header lines, 1M 2M 4M, blank line
}

TEST(SimCli, JsonAndTraceFiles) {
  const std::string json = tmp("sim.json"), trace = tmp("sim_trace.json");
  const CliRun r = run("--topo dgx-h100 -g 4 --algo allreduce.ring,alltoall.direct -b 64K -e 1M --json " + json +
                       " --trace " + trace);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream jf(json);
  const auto j = nlohmann::json::parse(jf);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.size(), 2u * 5u);  // 64K .. 1M: 5 sizes
  EXPECT_EQ(j[0]["ranks"], 4);
  std::ifstream tf(trace);
  const auto t = nlohmann::json::parse(tf);
  ASSERT_TRUE(t.contains("traceEvents"));
  int slices = 0, counters = 0;
  for (const auto& e : t["traceEvents"]) {
    slices += e["ph"] == "X";
    counters += e["ph"] == "C";
  }
  EXPECT_GT(slices, 4 * 6);  // a ring step per rank at least
  EXPECT_GT(counters, 0);    // link load tracks
}

TEST(SimCli, CollectiveMatmulNeedsAShapeAndRunsWithOne) {
  CliRun r = run("--topo h200x2 --algo allgather_matmul.ring");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--shape"), std::string::npos) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  r = run("--topo h200x2 --algo allgather_matmul.ring,allgather_matmul.nccl_cublas --shape 2048,4096,4096");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("shape 2048,4096,4096"), std::string::npos);
}

TEST(SimCli, BadInputIsOneClearLineAndExitOne) {
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"--topo no-such-preset --algo allreduce.ring", "no-such-preset"},
      {"--topo dgx-h100 --algo allreduce.nope", "allreduce.nope"},
      {"--topo dgx-h100 --algo allreduce.ring -g 9", "only 8 GPUs"},
      {"--topo dgx-h100 --algo allreduce.ring --gpus 0,8", "GPU 8"},
      {"--topo dgx-h100 --algo allreduce.ring -b 1M -e 1K", "larger than -e"},
      {"--topo dgx-h100 --algo allreduce.ring -b 1X", "-b"},
      {"--topo dgx-h100 --algo allreduce.ring --without pcie", "nvlink"},
      {"--topo dgx-h100 --algo allreduce.ring --frobnicate", "--frobnicate"},
      {"--topo dgx-h100", "--algo"},
      {"--topo dgx-h100 --algo allreduce.rhd -g 6 -b 1M -e 1M", "power-of-two"},
      {"--topo dgx-h100 --algo allreduce.ring --profile /nonexistent/p.json", "/nonexistent/p.json"},
      {"--topo dgx-h100 --algo allreduce.sparse", "--rows"},
  };
  for (const auto& c : cases) {
    const CliRun r = run(c.args);
    EXPECT_EQ(r.code, 1) << c.args << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.args << "\n" << r.out;
  }
}

TEST(SimCli, ProfileOverridesTheDefaults) {
  const std::string prof = tmp("slow_ce.json");
  {
    std::ofstream f(prof);
    f << R"({"name": "test", "params": {"proto.copy_engine.latency_us": {"value": 50, "source": "test"}}})";
  }
  const std::string a = tmp("a.csv"), b = tmp("b.csv");
  ASSERT_EQ(run("--topo h200x2 --algo allreduce.ring -b 8 -e 8 --csv " + a).code, 0);
  ASSERT_EQ(run("--topo h200x2 --algo allreduce.ring -b 8 -e 8 --csv " + b + " --profile " + prof).code, 0);
  const double ta = cclab::read_csv(a).at(0).time_us, tb = cclab::read_csv(b).at(0).time_us;
  // Two ring steps on 2 ranks, each put now 48.3 us slower.
  EXPECT_NEAR(tb - ta, 2 * (50 - 1.7), 1.0);
}

}  // namespace
