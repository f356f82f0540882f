// One prediction path (DESIGN.md, "Prediction: before the run, from the inputs alone"): for committed GPU records,
// `cclab sim` given a row's inputs (algorithm, ranks, size, dtype, settings) prints the prediction `cclab compare`
// prices for that row, and every row that names the plan it ran ran the plan priced.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "core/record.hpp"
#include "model/profile.hpp"
#include "sim/compare.hpp"

namespace cclab {
namespace {

namespace fs = std::filesystem;

std::string run(const std::string& args) {
  const std::string cmd = std::string(CCLAB_BINARY) + " " + args + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "popen failed";
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  return out;
}

const std::string* extra(const Record& r, const std::string& key) {
  for (const auto& [k, v] : r.extra)
    if (k == key) return &v;
  return nullptr;
}

struct Machine {
  std::string records, profile, topo;
};

// The committed records with the profile and preset that predict them (results/h100x4 and results/h200x4 with their
// own call's profile, results/h100x4_repeat and results/h100x4_fresh with that later call's profile, on the DGX H100
// and HGX H200 presets). results/h200x4_repeat and _third ran before programs on more than 2 GPUs took per-CTA flags,
// so compare flags some of their plans: they are compared in scripts/test.sh, not here.
std::vector<Machine> machines() {
  std::vector<Machine> m;
  const fs::path root = CCLAB_SOURCE_DIR;
  for (const auto& [records, profile, topo] :
       std::vector<std::array<std::string, 3>>{{"h200x2", "h200x2", "h200x2"},
                                               {"h200x2_fresh", "h200x2", "h200x2"},
                                               {"h100x4", "h100x4", "dgx-h100"},
                                               {"h100x4_repeat", "h100x4", "dgx-h100"},
                                               {"h100x4_fresh", "h100x4", "dgx-h100"},
                                               {"h200x4", "h200x4", "hgx-h200"}})
    if (fs::exists(root / "results" / records) && fs::exists(root / "profiles" / (profile + ".json")))
      m.push_back({(root / "results" / records).string(), (root / "profiles" / (profile + ".json")).string(), topo});
  return m;
}

TEST(OnePredictionPath, SimWithARowsInputsPrintsComparesPrediction) {
  const auto ms = machines();
  if (ms.empty()) GTEST_SKIP() << "no committed records with a profile";
  // This process's own folder: two test runs at once (a CI clone beside a checkout) must not share the row file.
  const fs::path tmp = fs::temp_directory_path() / ("cclab_sim_is_compare_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  for (const Machine& m : ms) {
    model::Target target = model::resolve_target(m.topo);
    target.params = model::load_profile(m.profile, target.params);
    sim::RowPredictor predictor(target);
    const sim::Comparison c = sim::compare(read_records(m.records, "exec_"), predictor);
    ASSERT_FALSE(c.rows.empty()) << m.records;
    // Every row that names its plan ran the plan priced (the sweep's records: probes and smoke checks beside
    // them ran at other commits, some under other defaults, so compare rightly flags their plans).
    for (const auto& [row, diff] : c.plan_mismatches) ADD_FAILURE() << m.topo << ": " << row << ": " << diff;
    // One out-of-place row per algorithm and dtype (the middle size of its sweep), through `cclab sim`.
    std::map<std::pair<std::string, std::string>, std::vector<const Record*>> series;
    for (const Record& r : c.rows)
      if (!r.in_place && r.shape.empty() && !extra(r, "rows")) series[{r.algo, r.dtype}].push_back(&r);
    int checked = 0;
    for (const auto& [key, rows] : series) {
      const Record& r = *rows[rows.size() / 2];
      const std::string* tune = extra(r, "tune");
      const std::string* node_size = extra(r, "node_size");  // the hierarchical algorithms' nodes
      const std::string csv = (tmp / "row.csv").string();
      fs::remove(csv);
      const std::string out =
          run("sim --topo " + m.topo + " --profile " + m.profile + " --algo " + r.algo + " -g " +
              std::to_string(r.ranks) + " -b " + std::to_string(r.bytes) + " -e " + std::to_string(r.bytes) + " -d " +
              r.dtype + (tune && !tune->empty() ? " --tune '" + *tune + "'" : "") +
              (node_size && !node_size->empty() ? " --node-size " + *node_size : "") + " --csv " + csv);
      const auto simulated = read_records(csv);
      ASSERT_EQ(simulated.size(), 1u) << r.algo << " " << r.bytes << ": " << out;
      EXPECT_NEAR(simulated[0].time_us, *r.pred_time_us, 1e-3 * *r.pred_time_us) << r.algo << " " << r.bytes;
      ++checked;
    }
    EXPECT_GT(checked, 10) << m.records;
  }
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace cclab
