#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "core/error.hpp"
#include "exec/runtime/runner.hpp"

namespace cclab::exec {
namespace {

TEST(Sweep, SizesFollowNcclTestsFlags) {
  RunOptions o;
  o.min_bytes = 8;
  o.max_bytes = 64;
  o.step_factor = 2;
  EXPECT_EQ(sweep_sizes(o), (std::vector<int64_t>{8, 16, 32, 64}));
  o.step_factor = 4;
  EXPECT_EQ(sweep_sizes(o), (std::vector<int64_t>{8, 32}));
  o.step_bytes = 20;
  EXPECT_EQ(sweep_sizes(o), (std::vector<int64_t>{8, 28, 48}));
  o.min_bytes = 100;
  o.max_bytes = 10;
  EXPECT_THROW(sweep_sizes(o), Error);
}

TEST(Sweep, AllListsTheLinkTestAndTheFusedModes) {
  const auto names = gpu_algorithm_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "sol.bidir_copy"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "allreduce.bidir.ll"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "allreduce.bidir.push"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "allreduce.bidir.lamport"), names.end());
  for (const auto& n : names) EXPECT_EQ(n.find("matmul"), std::string::npos) << n;
}

TEST(RunTable, OneLinePerSizeWithBothGroups) {
  Record a{.algo = "x", .collective = "allreduce", .ranks = 2, .bytes = 1024, .count = 256, .time_us = 10};
  fill_bandwidths(a);
  Record b = a;
  b.in_place = true;
  b.time_us = 20;
  fill_bandwidths(b);
  b.wrong = 3;
  std::ostringstream os;
  print_run_line(os, &a, &b, false);
  const std::string line = os.str();
  EXPECT_NE(line.find("1024"), std::string::npos);
  EXPECT_NE(line.find("10.00"), std::string::npos);
  EXPECT_NE(line.find("20.00"), std::string::npos);
  EXPECT_NE(line.find(" 3\n"), std::string::npos);
  std::ostringstream os2;
  print_run_line(os2, &a, nullptr, false);
  EXPECT_NE(os2.str().find("N/A"), std::string::npos);
}

}  // namespace
}  // namespace cclab::exec
