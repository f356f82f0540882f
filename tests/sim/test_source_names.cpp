// The simulator prices mechanisms from the profile, not the executor's code: no source under sim/ or model/ names
// an executor file, a launch count per replayed graph or an SM count, and none under sim/ a series by the launch
// count it was repeated at. The harness conditions a series was
// measured under travel with its table (model::PathTable::launches_per_replay) and an SM count with its GPU's
// datasheet (topology/hardware.hpp). Nor do they tell the all-reduce kernels' modes apart: the lowered plan says
// which mechanisms a kernel is made of (lower::KernelMechanisms) and sim/paths_bidir.cpp prices those.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Rule {
  const char* what;
  std::regex pattern;
};

// What sim/ and model/ must not name; the scan and the check of the rules below share them.
const std::regex kExecFile(R"(\bexec/|\.cu\b|\.cuh\b)");
const std::regex kLaunchConstant(R"(\bk[A-Za-z]*(Iters|Launches)\b)");
const std::regex kPerReplay(
    R"(\b\d+ (launches|iterations) per (replay|graph)\b|\breplay's \d+ (launches|iterations)\b)");
const std::regex kSmCount(R"(\b\d+ SMs\b|\bk[A-Za-z]*Sms\b)");
// A series name that carries the launch count it was repeated at ("nccl.p2p.ll.graph.uni.n100"): the table
// carries it in launches_per_replay (model/ still lists the measured series by their names).
const std::regex kLaunchSuffix(R"(\.n\d{2,}\b)");
// A branch on the kernel's mode: its enumerators, or a mode compared with a name.
const std::regex kKernelMode(R"re(\bBidirMode::|\bmode\s*[!=]=\s*"|"(lamport|twoshot|push)")re");

TEST(SourceNames, SimAndModelNameNoExecutorFileLaunchCountSmCountOrKernelMode) {
  const std::vector<Rule> rules = {
      {"an executor source file", kExecFile},
      {"a launch-count constant", kLaunchConstant},
      {"a launch count per replay", kPerReplay},
      {"an SM count", kSmCount},
      {"a kernel mode", kKernelMode},
  };
  std::vector<std::string> found;
  int files = 0;
  for (const char* dir : {"sim", "model"})
    for (const auto& e : fs::directory_iterator(fs::path(CCLAB_SOURCE_DIR) / dir)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".hpp") continue;
      ++files;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        for (const Rule& r : rules)
          if (std::regex_search(line, r.pattern))
            found.push_back(std::string(dir) + "/" + e.path().filename().string() + ":" + std::to_string(n) + " " +
                            r.what + ": " + line);
        if (std::string(dir) == "sim" && std::regex_search(line, kLaunchSuffix))
          found.push_back("sim/" + e.path().filename().string() + ":" + std::to_string(n) +
                          " a launch count in a series name: " + line);
      }
    }
  EXPECT_GT(files, 10);
  std::ostringstream all;
  for (const auto& f : found) all << f << "\n";
  EXPECT_TRUE(found.empty()) << all.str();
}

// The rules catch what they are for (a rule that matched nothing would pass any tree).
TEST(SourceNames, TheRulesMatchWhatTheyForbid) {
  EXPECT_TRUE(std::regex_search("kernels of exec/kernels/bidir.cu", kExecFile));
  EXPECT_TRUE(std::regex_search("constexpr int kTableIters = 20;", kLaunchConstant));
  EXPECT_TRUE(std::regex_search("timed at 100 launches per graph", kPerReplay));
  EXPECT_TRUE(std::regex_search("graph nodes (20 iterations per replay)", kPerReplay));
  EXPECT_TRUE(std::regex_search("while they fit (a replay's 20 iterations reuse them)", kPerReplay));
  EXPECT_FALSE(std::regex_search("per iteration of a replayed graph", kPerReplay));
  EXPECT_FALSE(std::regex_search("the series bidir.push.g132", kSmCount));
  EXPECT_TRUE(std::regex_search("P.table(\"nccl.p2p.ll.graph.uni.n100\")", kLaunchSuffix));
  EXPECT_FALSE(std::regex_search("P.table(\"nccl.p2p.ll.graph.uni\")", kLaunchSuffix));
  EXPECT_TRUE(std::regex_search("if (path.mode == \"ll\") {", kKernelMode));
  EXPECT_TRUE(std::regex_search("plan.kernel.mode == lower::BidirMode::twoshot", kKernelMode));
  EXPECT_TRUE(std::regex_search("{\"lamport\", 2}", kKernelMode));
  EXPECT_FALSE(std::regex_search("k.link == K::Link::loads", kKernelMode));
}

}  // namespace
