// Another GPU (issue 21): the committed 2 x H100 records predicted from the 2 x H200 profile plus the H100's
// datasheet, and the 2 x H200 records from the H100 profile plus the H200's. The goal per algorithm: median
// |error| <= 8%, no size worse than 25%.
//
// model::load_profile_onto carries what a datasheet says differs between the parts (HBM: 3.35 against 4.8 TB/s)
// into the local copies' and reductions' tables; NVLink 4, SM count, clocks and the tensor-core peak are the same
// on both. What the goal misses is the fixed cost of small operations, which the two hosts measured apart and no
// datasheet states: a flag hop between the GPUs' kernels 2.47 us on the H100 machine against 1.49 on the H200
// one, the fused kernels' per-op probes 1.2-1.85 x, a back-to-back launch 1.86 against 1.35 us, a cross-GPU graph
// edge 7.6 against 3.2 us. Below 8 MiB those decide the time, and the prediction carries the profile's host.
// The test holds the numbers reached (so a regression fails) rather than loosening the goal; from 8 MiB, where
// the mechanisms a datasheet names decide the time, it checks the goal itself on all but the algorithms listed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/record.hpp"
#include "model/profile.hpp"
#include "sim/compare.hpp"
#include "topology/topology.hpp"

namespace cclab {
namespace {

namespace fs = std::filesystem;

constexpr double kMedianGoal = 0.08, kMaxGoal = 0.25;
constexpr int64_t kLarge = int64_t(8) << 20;  // from here on, bandwidth decides the time

std::string src(const std::string& rel) { return (fs::path(CCLAB_SOURCE_DIR) / rel).string(); }

struct Reached {
  int algos = 0, met = 0;              // every size
  int large_algos = 0, large_met = 0;  // sizes >= kLarge
  double median = 0;                   // over every compared row
  std::vector<std::string> large_missed;
};

// Per algorithm, whether median |error| <= 8% and max <= 25% (over all sizes, and over sizes >= 8 MiB).
Reached cross_compare(const std::string& records, const std::string& preset, const std::string& profile) {
  model::Target target = model::resolve_target(preset);
  target.params = model::load_profile_onto(src(profile), target.topology, target.params);
  sim::RowPredictor predictor(target);
  const sim::Comparison c = sim::compare(read_records(src(records)), predictor);
  // results/h200x2 holds 8 rows of executor-only probes no algorithm names (index_match.*, the host-staged sparse
  // all-reduce): not predicted with the H200's own profile either.
  EXPECT_LE(c.failed.size(), 8u) << records << ": " << c.failed.size() << " rows not predicted";
  const sim::Goals goals{kMedianGoal, 1e9, kMaxGoal};
  std::map<std::string, std::vector<std::pair<int64_t, double>>> all, large;
  for (const Record& r : c.rows) {
    const auto e = r.error();
    if (!e) continue;
    all[r.algo].push_back({r.bytes, *e});
    if (r.bytes >= kLarge) large[r.algo].push_back({r.bytes, *e});
  }
  Reached out;
  out.median = c.overall.median;
  for (const auto& [algo, errs] : all) {
    ++out.algos;
    out.met += sim::summarize(errs, goals).goals_met;
  }
  for (const auto& [algo, errs] : large) {
    ++out.large_algos;
    const sim::ErrorSummary s = sim::summarize(errs, goals);
    if (s.goals_met)
      ++out.large_met;
    else
      out.large_missed.push_back(algo);
  }
  std::printf(
      "%s from %s on %s: %d of %d algorithms meet median <= 8%%, max <= 25%% (overall median %.1f%%); "
      "from 8 MiB %d of %d\n",
      records.c_str(), profile.c_str(), preset.c_str(), out.met, out.algos, 100 * out.median, out.large_met,
      out.large_algos);
  return out;
}

// The HBM-bound tables take the target's HBM rate beyond L2; the fixed costs, the L2-resident sizes and the
// peer transfers stay as measured; on the profile's own GPU nothing changes.
// The 2 x H200 profile as measured, and applied to a DGX H100.
struct H200OntoH100 {
  std::string path = src("profiles/h200x2.json");
  model::Profile own = model::load_profile_file(path);
  topo::Topology h100 = topo::load_topology("dgx-h100");
  model::ModelParams onto = model::load_profile_onto(path, h100, model::defaults_for(h100));
};

TEST(CrossGpu, LocalMemoryTablesFollowTheTargetsHbm) {
  const H200OntoH100 x;
  const model::Profile& own = x.own;
  const model::ModelParams& onto = x.onto;
  const std::string& h200 = x.path;
  const model::PathTable &was = own.params.tables.at("copy.local"), &now = onto.tables.at("copy.local");
  ASSERT_EQ(was.points.size(), now.points.size());
  EXPECT_DOUBLE_EQ(now.points.front().second, was.points.front().second);  // the launch: the host's
  EXPECT_DOUBLE_EQ(now.time(4 << 20).value, was.time(4 << 20).value);      // 8 MiB of traffic: in L2
  // 1 GiB: the size part 4.8 / 3.35 as long beyond L2 (H100 measured 714 us where the H200 took 504).
  const double big = double(int64_t(1) << 30);
  EXPECT_NEAR(now.size_part(big).value / was.size_part(big).value, 4800.0 / 3350.0, 0.02);
  EXPECT_NE(now.source.find("HBM"), std::string::npos);
  EXPECT_EQ(onto.tables.at("p2p.ce.uni").points, own.params.tables.at("p2p.ce.uni").points);  // NVLink 4 on both
  const topo::Topology h200_topo = topo::load_topology("h200x2");
  const model::ModelParams same = model::load_profile_onto(h200, h200_topo, model::defaults_for(h200_topo));
  EXPECT_EQ(same.tables.at("copy.local").points, was.points);
}

// A graph copy node of 512 MiB runs below the H200's HBM rate (1.35 TB/s against the stream copy's 2.1): on the H100
// it takes the slower of that node time and the H100's own HBM copy, where the sizes the node does not limit scale
// with HBM like every other local table.
TEST(CrossGpu, GraphCopyNodesKeepTheirOwnLimitOnAnotherGpu) {
  const H200OntoH100 x;
  const model::Profile& own = x.own;
  const model::ModelParams& onto = x.onto;
  const model::PathTable &was = own.params.tables.at("copy.local.graph"), &now = onto.tables.at("copy.local.graph");
  const double mid = double(int64_t(256) << 20), big = double(int64_t(512) << 20);
  ASSERT_GT(was.time(big).value, 1.3 * own.params.tables.at("copy.local").time(big).value);  // node-bound there
  EXPECT_NEAR(now.time(big).value, std::max(was.time(big).value, onto.tables.at("copy.local").time(big).value), 1e-12);
  EXPECT_GT(now.time(mid).value, 1.3 * was.time(mid).value);  // 256 MiB: HBM-bound, 4.8 / 3.35 as long
}

// Records predicted from the other GPU's profile, held to what they reach (`why`: what keeps the rest out).
void expect_reached(const char* records, const char* target, const char* profile, int algos, int met, double median,
                    int large_met, const char* why) {
  const Reached r = cross_compare(records, target, profile);
  EXPECT_EQ(r.algos, algos);
  EXPECT_GE(r.met, met) << why;
  EXPECT_LE(r.median, median);
  EXPECT_GE(r.large_met, large_met);
  for (const auto& a : r.large_missed) std::printf("  from 8 MiB, missed: %s\n", a.c_str());
}

// 2 x H100 records from the 2 x H200 profile. Before the HBM terms: 6 of 33 algorithms met the goal (median
// 10.4%), from 8 MiB 26 of 32; with the HBM terms 6 and 29 (median 10.3%); with the all-reduce kernels priced from
// the mechanisms instead of their own series 5 and 27 (median 14.1%: the kernels' rows are most of the rows).
TEST(CrossGpu, H100RecordsFromTheH200Profile) {
  expect_reached("results/h100x2", "dgx-h100", "profiles/h200x2.json", 33, 5, 0.142, 27,
                 "held: small sizes carry the H200 host's flag hops and launches");
}

// 2 x H200 records from the 2 x H100 profile. Before the HBM terms: 19 of 40 (median 5.9%), from 8 MiB 35 of 39;
// with them 37 from 8 MiB (median 5.6%); with the all-reduce kernels from the mechanisms 36 (median 7.1%); the
// records of the current kernels (41 algorithms with the matmul baselines) 19 and 36 (median 6.8%); with the kernels'
// handshakes at the flag hop (the H100 host's 2.47 us against the H200's 1.50) 18 and 36 (median 7.1%).
TEST(CrossGpu, H200RecordsFromTheH100Profile) {
  expect_reached("results/h200x2", "h200x2", "profiles/h100x2.json", 41, 18, 0.072, 36,
                 "held: small sizes carry the H100 host's flag hops and launches");
}

}  // namespace
}  // namespace cclab
