// The simulator prices mechanisms from the profile, not the executor's code: no source under sim/ or model/ names
// an executor file, a launch count per replayed graph or an SM count. The harness conditions a series was
// measured under travel with its table (model::PathTable::launches_per_replay) and an SM count with its GPU's
// datasheet (topology/hardware.hpp). Still named there, and not checked here: the all-reduce kernels' modes, the
// plan's words for which mechanisms a kernel uses (sim/paths_bidir.cpp prices each from those mechanisms).
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

TEST(SourceNames, SimAndModelNameNoExecutorFileLaunchCountOrSmCount) {
  const std::vector<Rule> rules = {
      {"an executor source file", std::regex(R"(\bexec/|\.cu\b|\.cuh\b)")},
      {"a launch-count constant", std::regex(R"(\bk[A-Za-z]*(Iters|Launches)\b)")},
      {"a launch count per replay",
       std::regex(R"(\b\d+ (launches|iterations) per (replay|graph)\b|\breplay's \d+ (launches|iterations)\b)")},
      {"an SM count", std::regex(R"(\b\d+ SMs\b|\bk[A-Za-z]*Sms\b)")},
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
      for (int n = 1; std::getline(in, line); ++n)
        for (const Rule& r : rules)
          if (std::regex_search(line, r.pattern))
            found.push_back(std::string(dir) + "/" + e.path().filename().string() + ":" + std::to_string(n) + " " +
                            r.what + ": " + line);
    }
  EXPECT_GT(files, 10);
  std::ostringstream all;
  for (const auto& f : found) all << f << "\n";
  EXPECT_TRUE(found.empty()) << all.str();
}

// The rules catch what they are for (a rule that matched nothing would pass any tree).
TEST(SourceNames, TheRulesMatchWhatTheyForbid) {
  EXPECT_TRUE(std::regex_search("kernels of exec/kernels/bidir.cu", std::regex(R"(\bexec/|\.cu\b|\.cuh\b)")));
  EXPECT_TRUE(std::regex_search("constexpr int kTableIters = 20;", std::regex(R"(\bk[A-Za-z]*(Iters|Launches)\b)")));
  const std::regex per_replay(
      R"(\b\d+ (launches|iterations) per (replay|graph)\b|\breplay's \d+ (launches|iterations)\b)");
  EXPECT_TRUE(std::regex_search("timed at 100 launches per graph", per_replay));
  EXPECT_TRUE(std::regex_search("graph nodes (20 iterations per replay)", per_replay));
  EXPECT_TRUE(std::regex_search("while they fit (a replay's 20 iterations reuse them)", per_replay));
  EXPECT_FALSE(std::regex_search("per iteration of a replayed graph", per_replay));
  EXPECT_FALSE(std::regex_search("the series bidir.push.g132", std::regex(R"(\b\d+ SMs\b)")));
}

}  // namespace
