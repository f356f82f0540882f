// Profiles: fitted parameters map onto the simulator's ModelParams, a profile file round-trips through
// model::load_profile, and `--topo <profile>` resolves to the profile's topology and parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.hpp"
#include "model/calibrate.hpp"
#include "model/profile.hpp"

namespace cclab::model {
namespace {

namespace fs = std::filesystem;

// The file the first `"measurements": "<file>"` of a profile's text names, or none.
std::optional<std::string> named_measurements(const std::string& text) {
  const std::string key = "\"measurements\":";
  for (size_t p = text.find(key); p != std::string::npos; p = text.find(key, p + 1)) {
    const size_t b = text.find_first_not_of(" \t\n\v\f\r", p + key.size());
    if (b == std::string::npos || text[b] != '"') continue;
    const size_t e = text.find('"', b + 1);
    if (e != std::string::npos) return text.substr(b + 1, e - b - 1);
  }
  return std::nullopt;
}

MicroSeries line_series(const std::string& name, double alpha_us, double beta_gbps) {
  SaturatingFit f;
  f.alpha = microseconds(alpha_us);
  f.beta = GBps(beta_gbps);
  MicroSeries s{name, "synthetic", {}};
  for (int64_t b = 1024; b <= (int64_t(1) << 30); b *= 4) s.samples.push_back({b, f.time(double(b)), 10});
  return s;
}

MicroSeries curve_series(const std::string& name, double alpha_us, double beta_gbps, double x_half, double p) {
  SaturatingFit f;
  f.alpha = microseconds(alpha_us);
  f.beta = GBps(beta_gbps);
  f.x_half = x_half;
  f.p = p;
  MicroSeries s{name, "synthetic", {}};
  for (int64_t b = 8; b <= (int64_t(1) << 30); b *= 2) s.samples.push_back({b, f.time(double(b)), 10});
  return s;
}

MicroMeasurements synthetic_machine() {
  MicroMeasurements m;
  m.machine = "testhost";
  m.gpu_name = "synthetic H200";
  m.driver = "580.159";
  m.nccl_version = "2.28.3";
  m.date = "2026-11-22";
  m.origin = "unit test";
  m.gpus = 2;
  m.series.push_back(curve_series("p2p.ce.uni", 1.8, 397, 75000, 0.6));
  m.series.push_back(line_series("p2p.ce.bidir", 1.9, 392.5));
  m.series.push_back(line_series("p2p.sm.uni", 3.0, 374));
  m.series.push_back(line_series("p2p.sm.bidir", 3.2, 336.5));
  m.series.push_back(line_series("reduce.local.float", 2.0, 1400));
  m.series.push_back({"latency.launch", "synthetic", {{0, microseconds(1.5), 1}, {0, microseconds(1.5), 1}}});
  m.series.push_back({"latency.event", "synthetic", {{0, microseconds(4.0), 1}}});
  m.series.push_back({"latency.flag", "synthetic", {{0, microseconds(2.4), 1}, {0, microseconds(2.4), 1}}});
  MicroSeries mm{"matmul.half", "synthetic", {}};
  MicroSeries mf{"matmul.float", "synthetic", {}};
  for (int64_t d : {1024, 2048, 4096, 8192}) {
    const double fl = 2.0 * double(d) * d * d;
    MicroSample p{.bytes = 0, .time = Seconds(fl / 800e12) + microseconds(4), .reps = 3, .m = d, .k = d, .n = d};
    mm.samples.push_back(p);
    p.time = Seconds(fl / 50e12) + microseconds(4);
    mf.samples.push_back(p);
  }
  m.series.push_back(mm);
  m.series.push_back(mf);
  return m;
}

const DerivedParam* find(const Derived& d, const std::string& name) {
  for (const auto& p : d.params)
    if (p.name == name) return &p;
  return nullptr;
}

TEST(CalibrateProfile, FitsMapOntoModelParams) {
  const topo::Topology t = topo::make_preset("h200x2");
  const topo::Path route = t.route_gpus(0, 1);
  const Derived d = derive_params(calibrate(synthetic_machine()), t);
  auto value = [&](const std::string& n) {
    const DerivedParam* p = find(d, n);
    EXPECT_NE(p, nullptr) << n;
    return p ? p->value : NAN;
  };
  EXPECT_NEAR(value("proto.copy_engine.efficiency"), 397e9 / route.bottleneck.value, 1e-3);
  EXPECT_NEAR(value("proto.copy_engine.latency_us"), 1.8 - route.latency.us(), 0.02);
  EXPECT_NEAR(value("proto.sm_peer.efficiency"), 374e9 / route.bottleneck.value, 1e-3);
  EXPECT_NEAR(value("proto.flash.efficiency"), 336.5e9 / route.bottleneck.value, 1e-3);
  EXPECT_NEAR(value("proto.simple.efficiency"), 374e9 / route.bottleneck.value, 1e-3);
  EXPECT_NEAR(value("launch_latency_us"), 1.5, 1e-9);
  EXPECT_NEAR(value("sync_latency_us"), 1.2, 1e-9);
  EXPECT_NEAR(value("local_dep_latency_us"), 2.5, 1e-9);
  EXPECT_NEAR(value("local_op_latency_us"), 2.0, 0.02);
  const double hbm = t.node(t.gpu(0)).mem_bw.value;
  EXPECT_NEAR(value("mem_efficiency"), 3 * 1400e9 / hbm, 1e-3);
  EXPECT_NEAR(value("matmul_efficiency"), 800e12 / t.node(t.gpu(0)).flops, 1e-3);
  EXPECT_NEAR(value("fp32_matmul_ratio"), 50.0 / 800.0, 1e-3);
  // Every derived number names the microbenchmark it came from and its residual.
  for (const auto& p : d.params) {
    EXPECT_FALSE(p.from.empty()) << p.name;
    EXPECT_NE(p.source.find("unit test"), std::string::npos) << p.name << ": " << p.source;
    EXPECT_GE(p.rms_residual, 0) << p.name;
  }
  // The copy engine's efficiency curve (only that series had one).
  ASSERT_EQ(d.curves.size(), 1u);
  EXPECT_EQ(d.curves[0].proto, Proto::copy_engine);
}

TEST(CalibrateProfile, ProfileRoundTripsThroughTheSimulatorsLoader) {
  const fs::path dir = fs::temp_directory_path() / "cclab_test_profile_roundtrip";
  fs::create_directories(dir);
  const std::string path = (dir / "p.json").string();
  const topo::Topology t = topo::make_preset("h200x2");
  const Calibration cal = calibrate(synthetic_machine());
  {
    std::ofstream f(path);
    f << make_profile_json(cal, t, "h200x2", "test-h200x2", "p.measurements.json");
  }
  {
    std::ofstream f(dir / "p.measurements.json");
    f << measurements_to_json(cal.measured);
  }
  ASSERT_TRUE(is_profile_file(path));
  const Profile p = load_profile_file(path);
  EXPECT_EQ(p.topology, "h200x2");
  EXPECT_EQ(p.name, "test-h200x2");
  EXPECT_TRUE(p.leave_out);
  EXPECT_NE(p.fitted_from.find("no collective record"), std::string::npos);
  EXPECT_EQ(p.gpu, "synthetic H200");
  EXPECT_EQ(p.nccl_version, "2.28.3");
  // Every derived parameter reads back through model::load_profile with its value and source.
  const Derived d = derive_params(cal, t);
  ASSERT_FALSE(d.params.empty());
  for (const auto& dp : d.params) {
    const auto v = get_param(p.params, dp.name);
    ASSERT_TRUE(v.has_value()) << dp.name;
    EXPECT_NEAR(*v, dp.value, 1e-9 * std::max(1.0, std::abs(dp.value))) << dp.name;
  }
  EXPECT_NE(p.params.launch_latency.source.find("latency.launch"), std::string::npos);
  // The size-dependent curve: efficiency_at follows the fitted eta(S) times the peak efficiency.
  const auto& ce = p.params.of(Proto::copy_engine);
  ASSERT_FALSE(ce.curve.empty());
  const SaturatingFit& fit = cal.curve("p2p.ce.uni")->fit;
  for (int64_t b : {int64_t(4096), int64_t(1) << 20, int64_t(256) << 20})
    EXPECT_NEAR(ce.efficiency_at(b), ce.efficiency.value * fit.efficiency(double(b)), 1e-6) << b;
  // The profile holds no samples: it names the measurements file beside it, so the fit can be redone from the
  // profile (cclab calibrate --from profile.json reads that file).
  {
    std::ifstream f(path);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.find("\"samples\""), std::string::npos);
  }
  const MicroMeasurements back = load_measurements(path);
  EXPECT_EQ(back.series.size(), cal.measured.series.size());
  fs::remove(dir / "p.measurements.json");
  EXPECT_THROW(load_measurements(path), Error);
  // And `--topo profile` resolves to the profile's topology and parameters.
  const Target tg = resolve_target(path);
  EXPECT_EQ(tg.topology.num_gpus(), 2);
  ASSERT_TRUE(tg.profile.has_value());
  EXPECT_NEAR(tg.params.sync_latency.value.us(), 1.2, 1e-9);
  const Target preset = resolve_target("h200x2");
  EXPECT_FALSE(preset.profile.has_value());
  EXPECT_EQ(preset.label, "h200x2");
  fs::remove_all(dir);
}

// A series taken from another calibration (scripts/take_series.py) keeps the line that says where it came from
// through the samples file, and its table's source quotes that line instead of the file's own origin.
TEST(CalibrateProfile, TakenSeriesKeepTheirOwnOrigin) {
  MicroMeasurements m = synthetic_machine();
  MicroSeries taken = line_series("copy.local.graph", 1.2, 2000);
  taken.origin = "cclab calibrate, synthetic H200 x1, 2026-11-29, commit abc";
  m.series.push_back(taken);
  m.series.push_back(line_series("copy.local.graph.cold", 1.3, 1900));
  const MicroMeasurements back = measurements_from_json_text(measurements_to_json(m), "test");
  ASSERT_EQ(back.series.size(), m.series.size());
  EXPECT_EQ(back.series[back.series.size() - 2].origin, taken.origin);
  EXPECT_EQ(back.series.back().origin, "");
  const Calibration cal = calibrate(back);
  const auto j =
      nlohmann::json::parse(make_profile_json(cal, topo::make_preset("h200x2"), "h200x2", "t", "t.measurements.json"));
  const std::string own = j.at("tables").at("copy.local.graph").at("source");
  const std::string other = j.at("tables").at("copy.local.graph.cold").at("source");
  EXPECT_NE(own.find("[" + taken.origin + "]"), std::string::npos) << own;
  EXPECT_EQ(own.find("unit test"), std::string::npos) << own;
  EXPECT_NE(other.find("[unit test, synthetic H200"), std::string::npos) << other;
}

TEST(CalibrateProfile, BadProfilesAreInputErrorsNamingTheFile) {
  const fs::path dir = fs::temp_directory_path() / "cclab_test_profile_bad";
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  auto expect_input_error = [](const std::string& path, const std::string& needle) {
    try {
      load_profile_file(path);
      FAIL() << path << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_input_error((dir / "missing.json").string(), "missing.json");
  expect_input_error(write("broken.json", "{\"format\": "), "broken.json");
  expect_input_error(write("notopo.json", R"({"format": "cclab-profile/1", "params": {}})"), "topology");
  expect_input_error(write("badtopo.json", R"({"format": "cclab-profile/1", "topology": "dgx-h999"})"), "dgx-h999");
  expect_input_error(
      write("badparam.json", R"({"format": "cclab-profile/1", "topology": "h200x2", "params": {"warp_speed": 9}})"),
      "warp_speed");
  EXPECT_FALSE(is_profile_file(write("plain.json", R"({"name": "x"})")));
  // Terms that earlier profiles fitted and nothing reads any more are skipped, not refused.
  EXPECT_NO_THROW(load_profile_file(write(
      "retired.json",
      R"({"format": "cclab-profile/1", "topology": "h200x2", "params": {"exec.fork_peer_us": 9, "exec.flag_exchange_us": 1}})")));
  // A table's fit needs the sizes it was measured at, and a fit's numbers.
  expect_input_error(
      write("nosizes.json", R"({"format": "cclab-profile/1", "topology": "h200x2", "tables": {"p2p.ce.uni":
      {"fit": {"alpha_us": 1, "beta_GBps": 390, "efficiency_half": 0, "efficiency_exponent": 1}}}})"),
      "sizes");
  expect_input_error(
      write("norate.json", R"({"format": "cclab-profile/1", "topology": "h200x2", "tables": {"p2p.ce.uni":
      {"fit": {"alpha_us": 1, "efficiency_half": 0, "efficiency_exponent": 1}, "sizes": [8, 16]}}})"),
      "beta_GBps");
  fs::remove_all(dir);
}

// The newest 2 x H200 call's samples, refitted, stay under the committed profiles' limit: what the next call's
// profile will be, one-CTA series at three depths and all.
TEST(CalibrateProfile, TheNewestCallsSamplesRefitUnderTheLimit) {
  const std::string samples = std::string(CCLAB_SOURCE_DIR) + "/results/h200x2_78e8a0c/h200x2.measurements.json";
  if (!std::filesystem::exists(samples)) GTEST_SKIP() << "no " << samples;
  const std::string text =
      make_profile_json(calibrate(load_measurements(samples)), topo::load_topology("h200x2"), "h200x2", "h200x2");
  EXPECT_LT(std::count(text.begin(), text.end(), '\n'), 2000);
  EXPECT_LE(nlohmann::json::parse(text).at("params").size(), 40u);
}

// A table's fit is written without the saturation where it is the plain line alpha + bytes / beta, and read back as
// that line.
TEST(CalibrateProfile, PlainLineFitsCarryNoSaturation) {
  const std::string path = ::testing::TempDir() + "cclab_plain_line_profile.json";
  {
    std::ofstream f(path);
    f << make_profile_json(calibrate(synthetic_machine()), topo::load_topology("h200x2"), "h200x2", "synthetic");
  }
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  const Profile p = load_profile_file(path);
  int plain = 0;
  for (const auto& [name, t] : j.at("tables").items()) {
    if (!t.contains("fit")) continue;
    const bool saturates = t.at("fit").contains("efficiency_half");
    EXPECT_EQ(saturates, t.at("fit").contains("efficiency_exponent")) << name;
    if (saturates) EXPECT_GT(t.at("fit").at("efficiency_half").get<double>(), 0) << name;
    if (saturates) continue;
    ++plain;
    // Read back: alpha at the smallest size plus the bytes at beta.
    const PathTable* table = p.params.table(name);
    ASSERT_NE(table, nullptr) << name;
    const double alpha = t.at("fit").at("alpha_us").get<double>() * 1e-6;
    const double beta = t.at("fit").at("beta_GBps").get<double>() * 1e9;
    const int64_t last = t.at("sizes").back().get<int64_t>();
    EXPECT_NEAR(table->time(double(last)).value, alpha + double(last) / beta, 1e-9 * (alpha + double(last) / beta))
        << name;
  }
  EXPECT_GT(plain, 0);
}

}  // namespace
}  // namespace cclab::model

namespace cclab::model {
namespace {

MicroSeries latency_series(const std::string& name, double us) {
  return {name, "synthetic", {{8, microseconds(us), 20}, {8, microseconds(us), 20}, {8, microseconds(us), 20}}};
}

// The executor's graph costs are differences of the graph.* series, and every size sweep becomes a table.
TEST(CalibrateProfile, ExecutorCostsAndTablesComeFromTheirMicrobenchmarks) {
  MicroMeasurements m = synthetic_machine();
  for (auto [name, us] : std::initializer_list<std::pair<const char*, double>>{{"graph.copy", 2.5},
                                                                               {"graph.copy_local", 1.2},
                                                                               {"graph.kernel", 0.9},
                                                                               {"graph.kernel_pdl", 0.8},
                                                                               {"graph.fork_local", 3.0},
                                                                               {"graph.fork_peer", 3.5},
                                                                               {"graph.fork_both.1", 17.5},
                                                                               {"graph.fork_both.2", 55.5},
                                                                               {"graph.fork_both.3", 175.5},
                                                                               {"graph.fork_kernels.1", 11.9},
                                                                               {"graph.fork_kernels.2", 22.9},
                                                                               {"graph.fork_kernels.3", 63.9},
                                                                               {"graph.fork_mix.1", 30.5},
                                                                               {"graph.flag_chain.2", 6.0},
                                                                               {"graph.flag_chain.6", 14.0}})
    m.series.push_back(latency_series(name, us));
  const Calibration cal = calibrate(m);
  const topo::Topology t = topo::load_topology("h200x2");
  const std::string path = ::testing::TempDir() + "cclab_exec_profile.json";
  {
    std::ofstream f(path);
    f << make_profile_json(cal, t, "h200x2", "synthetic");
  }
  const Profile p = load_profile_file(path);
  const ExecutorParams& e = p.params.exec;
  EXPECT_NEAR(e.copy_node.value.us(), 2.5, 1e-9);
  EXPECT_NEAR(e.copy_local_node.value.us(), 1.2, 1e-9);
  EXPECT_NEAR(e.kernel_pdl.value.us(), 0.8, 1e-9);
  EXPECT_NEAR(e.fork_local.value.us(), 0.5, 1e-9);
  EXPECT_NEAR(e.fork_streams[1].value.us(), 53.0, 1e-9);         // fork_both.2 - copy
  EXPECT_NEAR(e.fork_kernel_streams[2].value.us(), 63.0, 1e-9);  // fork_kernels.3 - kernel
  EXPECT_NEAR(e.fork_mix.value.us(), 28.0, 1e-9);
  EXPECT_NEAR(e.event_peer.value.us(), 7.0, 1e-9);   // (fork_both.1 - fork_peer) / 2
  EXPECT_NEAR(e.flag_hop.value.us(), 2.0, 1e-9);     // (14 - 6) / 4
  EXPECT_NEAR(e.flag_launch.value.us(), 2.0, 1e-9);  // 6 - 2 hops
  // Mixed forks: the measured one for 1 + 1, otherwise each kind's fork as measured alone, summed.
  EXPECT_NEAR(e.fork_for(1, 1).us(), 28.0, 1e-9);
  EXPECT_NEAR(e.fork_for(2, 1).us(), 53.0 + 11.0, 1e-9);
  EXPECT_NEAR(e.fork_for(4, 0).us(), 173.0 + (173.0 - 53.0), 1e-9);
  // Size sweeps are tables of the measured points; matmuls keyed by FLOPs.
  ASSERT_NE(p.params.table("p2p.ce.bidir"), nullptr);
  EXPECT_EQ(p.params.table("p2p.ce.bidir")->points.size(), m.series[1].samples.size());
  ASSERT_NE(p.params.table("matmul.half"), nullptr);
  EXPECT_EQ(p.params.table("matmul.half")->points.front().first, int64_t(2.0 * 1024 * 1024 * 1024));
  EXPECT_EQ(p.params.table("latency.launch"), nullptr);
}

// The fork shapes timed behind the harness's hold (graph.held.*) replace the gated ones where measured, and
// the copy-mode fork (2 copy + 1 kernel streams per GPU) is taken as measured.
TEST(CalibrateProfile, HeldForkShapesReplaceTheGatedOnes) {
  MicroMeasurements m = synthetic_machine();
  for (auto [name, us] : std::initializer_list<std::pair<const char*, double>>{{"graph.copy", 2.5},
                                                                               {"graph.kernel", 0.9},
                                                                               {"graph.fork_both.2", 73.5},
                                                                               {"graph.held.fork_both.2", 52.5},
                                                                               {"graph.fork_mix.1", 66.5},
                                                                               {"graph.held.fork_mix.1", 28.5},
                                                                               {"graph.fork_kernels.3", 63.9},
                                                                               {"graph.fork_mix.2_1", 120.5},
                                                                               {"graph.held.fork_mix.2_1", 85.5}})
    m.series.push_back(latency_series(name, us));
  const Calibration cal = calibrate(m);
  const topo::Topology t = topo::load_topology("h200x2");
  const std::string path = ::testing::TempDir() + "cclab_exec_profile_held.json";
  {
    std::ofstream f(path);
    f << make_profile_json(cal, t, "h200x2", "synthetic");
  }
  const ExecutorParams& e = load_profile_file(path).params.exec;
  EXPECT_NEAR(e.fork_streams[1].value.us(), 50.0, 1e-9);         // held fork_both.2 - copy
  EXPECT_NEAR(e.fork_mix.value.us(), 26.0, 1e-9);                // held fork_mix.1 - copy
  EXPECT_NEAR(e.fork_mix21.value.us(), 83.0, 1e-9);              // held fork_mix.2_1 - copy
  EXPECT_NEAR(e.fork_kernel_streams[2].value.us(), 63.0, 1e-9);  // no held one: the gated
}

}  // namespace
}  // namespace cclab::model

namespace cclab::model {
namespace {

// The harness condition comes from each series' own method text: the launches per replayed graph (a repeat at
// another count names its own first).
TEST(CalibrateProfile, SeriesConditionsComeFromTheirMethods) {
  EXPECT_EQ(series_conditions("256 threads, G = min(SMs, pairs / 256) CTAs; PDL launches in per-GPU graphs of 20, "
                              "replayed")
                .launches_per_replay,
            20);
  EXPECT_EQ(series_conditions("graphs of 20, replayed [100 launches per graph, not 20]").launches_per_replay, 100);
  EXPECT_EQ(series_conditions("one graph per GPU of 100 launches, median of 5 replays").launches_per_replay, 100);
  EXPECT_EQ(series_conditions("per iteration of a replayed graph (20 per replay): one copy").launches_per_replay, 20);
  EXPECT_EQ(series_conditions("empty kernels back to back on one stream").launches_per_replay, 0);
  // The first phrasing found wins, each at its first complete occurrence; a phrasing cut short counts for nothing.
  EXPECT_EQ(series_conditions("(7 per replay) graph per GPU of 9 launches").launches_per_replay, 9);
  EXPECT_EQ(series_conditions("graphs of N, then graphs of 30").launches_per_replay, 30);
  EXPECT_EQ(series_conditions("[n launches per graph] [40 launches per graph, not 20]").launches_per_replay, 40);
  EXPECT_EQ(series_conditions("[100 launches per grap (20 per replay").launches_per_replay, 0);
  EXPECT_EQ(series_conditions("graph per GPU of 8 launch").launches_per_replay, 0);
}

// The committed profiles carry that condition on their tables, which the simulator reads instead of the
// harness's counts.
TEST(CalibrateProfile, CommittedTablesCarryTheirHarnessConditions) {
  const ModelParams p = load_profile_onto(std::string(CCLAB_SOURCE_DIR) + "/profiles/h200x2.json",
                                          topo::load_topology("h200x2"), defaults_for(topo::load_topology("h200x2")));
  EXPECT_EQ(p.tables.at("nccl.p2p.graph.uni").launches_per_replay, 20);
  EXPECT_EQ(p.tables.at("nccl.p2p.ll.graph.uni").launches_per_replay, 100);  // named without its count
  EXPECT_EQ(p.tables.at("fused.prog.oneway.0").launches_per_replay, 100);
  EXPECT_EQ(p.tables.at("p2p.ce.uni").launches_per_replay, 0);  // not replayed graphs
}

// Series no prediction reads stay in the measurements file: a calibration with one writes no table of it, and no
// committed profile carries one.
TEST(CalibrateProfile, DiagnosticSeriesStayOutOfTheProfile) {
  MicroMeasurements m = synthetic_machine();
  MicroSeries chain = m.series[1];
  chain.name = "chain.unheld";
  ASSERT_TRUE(is_diagnostic_series(chain.name));
  // The all-reduce kernels' own series are diagnostics; the graph replay and the NCCL model's byte streams are not.
  EXPECT_TRUE(is_diagnostic_series("bidir.ll"));
  EXPECT_TRUE(is_diagnostic_series("bidir.push.kernelloop.float.n100"));
  EXPECT_FALSE(is_diagnostic_series("bidir.replay"));
  EXPECT_TRUE(is_diagnostic_series("bidir.replay.body"));  // measured beside it, read by no model yet
  EXPECT_TRUE(is_bench_name("bidir.replay.body"));         // a calibration still accepts its samples
  EXPECT_FALSE(is_diagnostic_series("bidir.step.send.g24"));
  // One CTA both ways at once: measured, the one-way series read.
  EXPECT_TRUE(is_diagnostic_series("p2p.sm.cta.bidir"));
  EXPECT_TRUE(is_diagnostic_series("p2p.sm_store.cta.bidir"));
  EXPECT_FALSE(is_diagnostic_series("p2p.sm_store.cta"));
  m.series.push_back(chain);
  const std::string path = ::testing::TempDir() + "cclab_diagnostic_profile.json";
  {
    std::ofstream f(path);
    f << make_profile_json(calibrate(m), topo::load_topology("h200x2"), "h200x2", "synthetic");
  }
  const Profile p = load_profile_file(path);
  EXPECT_EQ(p.params.table("chain.unheld"), nullptr);
  EXPECT_NE(p.params.table(m.series[1].name), nullptr);
  for (const char* name : {"h200x2", "h100x2", "h200x4", "h100x4"}) {
    const std::string file = std::string(CCLAB_SOURCE_DIR) + "/profiles/" + name + ".json";
    if (!std::filesystem::exists(file)) continue;
    const ModelParams q =
        load_profile_onto(file, topo::load_topology("h200x2"), defaults_for(topo::load_topology("h200x2")));
    for (const auto& [series, table] : q.tables) EXPECT_FALSE(is_diagnostic_series(series)) << name << ": " << series;
  }
}

// A committed profile names its samples' file beside it, so a clone anywhere reads them (a profile refitted in a
// scratch folder once named a file outside the repository, which only a fresh machine noticed).
TEST(CalibrateProfile, CommittedProfilesNameTheirMeasurementsBesideThem) {
  int profiles = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(CCLAB_SOURCE_DIR) / "profiles")) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".json" || file.find("measurements") != std::string::npos) continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::optional<std::string> named = named_measurements(text);
    ASSERT_TRUE(named) << file << " names no measurements file";
    const std::string samples = *named;
    EXPECT_EQ(fs::path(samples).filename().string(), samples)
        << file << " names " << samples << ", not a file beside it";
    EXPECT_NO_THROW(load_measurements(entry.path().string())) << file;
    ++profiles;
  }
  EXPECT_GE(profiles, 4);
}

// A size sweep that its fit reproduces within 10% is stored as the fit at its sizes and reads back as the fit's
// times; one the fit misses (a bump) keeps its medians, with how far the fit missed; matmuls keep theirs (a
// matmul's time follows its shape, not its FLOPs alone).
TEST(CalibrateProfile, SweepsTheirFitReproducesAreStoredAsTheFit) {
  MicroMeasurements m = synthetic_machine();
  for (auto& s : m.series)
    if (s.name == "reduce.local.float") s.samples[3].time = 1.5 * s.samples[3].time;  // one size 50% slow
  const Calibration cal = calibrate(m);
  const std::string path = ::testing::TempDir() + "cclab_fitted_tables.json";
  {
    std::ofstream f(path);
    f << make_profile_json(cal, topo::load_topology("h200x2"), "h200x2", "synthetic");
  }
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  const auto& tables = j.at("tables");
  ASSERT_TRUE(tables.at("p2p.ce.uni").contains("fit"));
  EXPECT_FALSE(tables.at("p2p.ce.uni").contains("points"));
  ASSERT_TRUE(tables.at("reduce.local.float").contains("points"));
  EXPECT_GT(tables.at("reduce.local.float").at("fit_max_residual").get<double>(), 0.10);
  EXPECT_TRUE(tables.at("matmul.half").contains("points"));
  const Profile p = load_profile_file(path);
  const PathTable* ce = p.params.table("p2p.ce.uni");
  ASSERT_NE(ce, nullptr);
  const SaturatingFit& fit = cal.curve("p2p.ce.uni")->fit;
  ASSERT_EQ(ce->points.size(), m.series[0].samples.size());
  for (const auto& [bytes, sec] : ce->points) EXPECT_NEAR(sec / fit.time(double(bytes)).value, 1.0, 1e-9) << bytes;
  // The synthetic sweep is the curve itself, so the fit's times are the measured ones.
  for (const auto& s : m.series[0].samples)
    EXPECT_NEAR(ce->time(double(s.bytes)).value / s.time.value, 1.0, 1e-3) << s.bytes;
}

// The profile holds fitted terms and, where no fit reproduces a sweep, its medians: a committed profile stays under
// 2,000 lines (the samples themselves live in its measurements file) with at most 40 named terms.
TEST(CalibrateProfile, CommittedProfilesStaySmall) {
  for (const char* name : {"h200x2", "h100x2", "h200x4", "h100x4"}) {
    const std::string path = std::string(CCLAB_SOURCE_DIR) + "/profiles/" + name + ".json";
    std::ifstream in(path);
    ASSERT_TRUE(in) << name;
    const auto lines = std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
    EXPECT_LT(lines, 2000) << name;
    std::ifstream again(path);
    const auto j = nlohmann::json::parse(again);
    EXPECT_LE(j.at("params").size(), 40u) << name;
  }
}

}  // namespace
}  // namespace cclab::model
