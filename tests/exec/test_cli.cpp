// `cclab run` argument handling through the binary: bad input is one line and exit 1, before any
// GPU is touched; without a GPU, exit 2 with "no CUDA device found"; no partial record file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "exec/runtime/device.hpp"

namespace {

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

TEST(RunCli, HelpListsTheFlags) {
  const Result r = run("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* f : {"--algo", "-b", "--graph", "--share-gpus", "--csv", "--predict", "--nccl-algo"})
    EXPECT_NE(r.out.find(f), std::string::npos) << f;
}

TEST(RunCli, BadInputIsOneLineAndExitOne) {
  const char* cases[][2] = {
      {"", "--algo is required"},
      {"--algo allreduce.nope", "unknown algorithm"},
      {"--algo sol.bidir_copy -d quad", "quad"},
      {"--algo sol.bidir_copy -b 1G -e 1K", "must not exceed"},
      {"--algo sol.bidir_copy -g 0", "-g"},
      {"--algo sol.bidir_copy --bogus", "unknown flag"},
      {"--algo sol.bidir_copy --tune lanes=x", "lanes"},
      {"--algo sol.bidir_copy --tune nokey=1", "unknown key"},
      {"--algo sol.bidir_copy -o median", "median"},
      {"--algo sol.bidir_copy -g 2 -r 5", "-r 5"},
      {"--algo allgather_matmul.nope", "unknown algorithm"},
  };
  for (const auto& c : cases) {
    const Result r = run(c[0]);
    EXPECT_EQ(r.code, 1) << c[0] << ": " << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << c[0] << ": " << r.out;
    EXPECT_NE(r.out.find(c[1]), std::string::npos) << c[0] << ": " << r.out;
  }
}

TEST(RunCli, NoGpuIsAnEnvironmentErrorAndWritesNoRecords) {
  if (cclab::exec::visible_devices() > 0) GTEST_SKIP() << "a CUDA device is present";
  const std::string csv = testing::TempDir() + "/cclab_run_nogpu.csv";
  std::filesystem::remove(csv);
  const Result r = run("--algo sol.bidir_copy -b 1K -e 1K --csv " + csv);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no CUDA device found"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  EXPECT_FALSE(std::filesystem::exists(csv));
  EXPECT_FALSE(std::filesystem::exists(csv + ".tmp"));
}

TEST(RunCli, TooManyRanksWithoutSharingIsInputError) {
  const int gpus = cclab::exec::visible_devices();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device";
  const Result r = run("--algo sol.bidir_copy -b 1K -e 1K -g " + std::to_string(gpus + 1));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--share-gpus"), std::string::npos) << r.out;
}

TEST(RunCli, PredictTargetIsCheckedBeforeTheGpus) {
  const Result bad = run("--algo allreduce.ring -b 1K -e 1K --predict no-such-preset");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_EQ(count_lines(bad.out), 1) << bad.out;
  EXPECT_NE(bad.out.find("no-such-preset"), std::string::npos) << bad.out;
  if (cclab::exec::visible_devices() > 0) return;
  const Result good = run("--algo allreduce.ring -b 1K -e 1K --predict h200x2");
  EXPECT_EQ(good.code, 2) << good.out;  // a valid target, then no GPU here
  EXPECT_NE(good.out.find("no CUDA device found"), std::string::npos) << good.out;
}

}  // namespace
