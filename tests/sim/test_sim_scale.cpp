// The scale figures of issues 4 and 21 with generous bounds for a shared CI machine (the benchmark,
// scripts/sim_scale.sh and results/sim/scale.txt give the real figures): a 1 GiB ring all-reduce and a
// hierarchical all-to-all on 128 and 2048 DGX H100 (1024 and 16,384 GPUs), and the ring on 16,384 DGX
// H100 (131,072 GPUs), through the whole `cclab sim` command.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

// AddressSanitizer runs the simulator several times slower: the tightest bounds hold only without it (gcc
// defines __SANITIZE_ADDRESS__, clang answers __has_feature).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kTimed = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kTimed = false;
#else
constexpr bool kTimed = true;
#endif
#else
constexpr bool kTimed = true;
#endif

// CPU seconds the finished children of this process have used: what the simulation costs, not how busy the
// (shared) machine is; a sanitizer run beside two compilers took 11.5 s of wall time for the 1 GiB ring.
double children_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// The largest resident set of the finished children so far, in bytes.
double children_max_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return double(u.ru_maxrss) * 1024.0;
}

double timed_sim(const std::string& args, std::string* out) {
  const std::string cmd = std::string(CCLAB_BINARY) + " sim " + args + " 2>&1";
  const double t0 = children_cpu_seconds();
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out->append(buf.data(), n);
  const int status = pclose(p);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return children_cpu_seconds() - t0;
}

TEST(SimScale, RingAllReduce1GiBOn1024Gpus) {
  std::string out;
  const double s = timed_sim("--topo 128xdgx-h100 --algo allreduce.ring -b 1G -e 1G", &out);
  ASSERT_GT(s, 0) << out;
  EXPECT_LT(s, 10.0) << out;  // issue 4: <= 1 s best of 3 on an idle development machine
  EXPECT_NE(out.find("1024 ranks"), std::string::npos) << out;
}

TEST(SimScale, HierarchicalAllToAll1GiBOn1024Gpus) {
  std::string out;
  const double s = timed_sim("--topo 128xdgx-h100 --algo alltoall.hier -b 1G -e 1G", &out);
  ASSERT_GT(s, 0) << out;
  EXPECT_LT(s, 25.0) << out;  // issue 4: <= 5 s
}

TEST(SimScale, RingAndHierarchicalAllToAll1GiBOn16384Gpus) {
  std::string out;
  const double s = timed_sim("--topo 2048xdgx-h100 --algo allreduce.ring,alltoall.hier -b 1G -e 1G", &out);
  ASSERT_GT(s, 0) << out;
  if (kTimed) EXPECT_LT(s, 20.0) << out;  // issue 21: under 5 s on one core
  EXPECT_NE(out.find("16384 ranks"), std::string::npos) << out;
}

TEST(SimScale, RingAllReduce1GiBOn131072GpusCompletes) {
  std::string out;
  const std::string json = testing::TempDir() + "sim_scale_131072.json";
  const double s = timed_sim("--topo 16384xdgx-h100 --algo allreduce.ring -b 1G -e 1G --json " + json, &out);
  ASSERT_GT(s, 0) << out;
  if (kTimed) EXPECT_LT(s, 60.0) << out;
  // The topology alone holds 1.5 million links; the ring folds onto one server's 8 ranks.
  EXPECT_LT(children_max_rss_bytes(), 4e9);
  EXPECT_NE(out.find("131072 ranks"), std::string::npos) << out;
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  const std::string record = text.str();
  EXPECT_NE(record.find("folded: 8 of 131072 ranks"), std::string::npos) << record;
  // 2 (n - 1) steps of 8 KiB: more than the bandwidth term (2 S / 50 GB/s, 43 ms), less than 10 us a step.
  const size_t at = record.find("\"time_us\": ");
  ASSERT_NE(at, std::string::npos) << record;
  const double us = std::atof(record.c_str() + at + 11);
  EXPECT_GT(us, 43e3);
  EXPECT_LT(us, 2.0 * 131071 * 10.0);
  std::remove(json.c_str());
}

}  // namespace
