// Calibration fits recover known parameters from synthetic measurements, and calibration reads
// microbenchmarks only (the leave-out discipline).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.hpp"
#include "core/record.hpp"
#include "model/calibrate.hpp"

namespace cclab::model {
namespace {

std::vector<double> sweep(double lo, double hi, double factor) {
  std::vector<double> v;
  for (double x = lo; x <= hi; x *= factor) v.push_back(x);
  return v;
}

// Multiplicative noise of +-`amp` (uniform), fixed seed.
std::vector<Seconds> times(const std::vector<double>& x, const SaturatingFit& truth, double amp = 0, int seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-amp, amp);
  std::vector<Seconds> t;
  for (double xi : x) t.push_back(truth.time(xi) * (1.0 + u(rng)));
  return t;
}

double rel(double got, double want) { return std::abs(got - want) / want; }

TEST(Calibrate, AlphaBetaLineRecoversKnownParametersWithin1Percent) {
  SaturatingFit truth;
  truth.alpha = microseconds(1.9);
  truth.beta = GBps(397);
  const auto x = sweep(8, 1 << 30, 2);
  const SaturatingFit f = fit_alpha_beta(x, times(x, truth));
  EXPECT_LT(rel(f.alpha.value, truth.alpha.value), 0.01);
  EXPECT_LT(rel(f.beta.value, truth.beta.value), 0.01);
  EXPECT_LT(f.rms_rel_residual, 1e-9);
  EXPECT_EQ(f.points, int(x.size()));
}

TEST(Calibrate, AlphaBetaSurvivesNoise) {
  SaturatingFit truth;
  truth.alpha = microseconds(3.4);
  truth.beta = GBps(374);
  const auto x = sweep(8, 1 << 30, 2);
  const SaturatingFit f = fit_alpha_beta(x, times(x, truth, 0.02, 7));
  // 2% noise on 28 points: alpha and beta within 1%, residuals at the noise level.
  EXPECT_LT(rel(f.alpha.value, truth.alpha.value), 0.01);
  EXPECT_LT(rel(f.beta.value, truth.beta.value), 0.01);
  EXPECT_GT(f.rms_rel_residual, 0.002);
  EXPECT_LT(f.max_rel_residual, 0.05);
}

TEST(Calibrate, SaturatingCurveRecoversAllFourParameters) {
  SaturatingFit truth;
  truth.alpha = microseconds(1.8);
  truth.beta = GBps(400);
  truth.x_half = 256 * 1024;
  truth.p = 0.6;
  const auto x = sweep(4096, 1 << 30, 2);
  const SaturatingFit f = fit_saturating(x, times(x, truth));
  EXPECT_LT(rel(f.alpha.value, truth.alpha.value), 0.01);
  EXPECT_LT(rel(f.beta.value, truth.beta.value), 0.01);
  EXPECT_LT(rel(f.x_half, truth.x_half), 0.01);
  EXPECT_NEAR(f.p, truth.p, 0.01);
  EXPECT_LT(f.max_rel_residual, 1e-3);
  EXPECT_NEAR(f.efficiency(truth.x_half), 0.5, 0.01);
}

TEST(Calibrate, PlainLineIsKeptWhenTheCurveDoesNotEarnItsParameters) {
  SaturatingFit truth;
  truth.alpha = microseconds(2);
  truth.beta = GBps(300);
  const auto x = sweep(8, 1 << 28, 4);
  const SaturatingFit f = fit_saturating(x, times(x, truth));
  EXPECT_EQ(f.x_half, 0);
  EXPECT_DOUBLE_EQ(f.efficiency(1e3), 1.0);
  EXPECT_LT(rel(f.beta.value, truth.beta.value), 0.01);
}

TEST(Calibrate, SaturatingFitMatchesPublishedCopyEngineCurve) {
  // shared/hardware/h200x2.md: copy engine one direction, GB/s by size (published, 2026-11-22).
  const std::vector<std::pair<double, double>> pts = {{4096, 2.2},     {65536, 31},      {262144, 92},
                                                      {1 << 20, 219},  {4 << 20, 309},   {16 << 20, 366},
                                                      {64 << 20, 389}, {256 << 20, 395}, {1 << 30, 397}};
  std::vector<double> x;
  std::vector<Seconds> t;
  for (auto [b, gbps] : pts) {
    x.push_back(b);
    t.push_back(transfer_time(b, GBps(gbps)));
  }
  const SaturatingFit f = fit_saturating(x, t);
  EXPECT_GT(f.beta.gbps(), 390);
  EXPECT_LT(f.beta.gbps(), 420);
  EXPECT_GT(f.alpha.us(), 0.5);
  EXPECT_LT(f.alpha.us(), 2.5);
  // The curve describes every published point within 10%.
  EXPECT_LT(f.max_rel_residual, 0.10);
}

TEST(Calibrate, LatencyIsTheMedianWithItsSpread) {
  const LatencyFit f = fit_latency({microseconds(2), microseconds(3), microseconds(2.5), microseconds(10)});
  EXPECT_NEAR(f.value.us(), 2.75, 1e-9);
  EXPECT_NEAR(f.max_rel_residual, 0.725, 1e-9);  // (2.75 - 10) / 10
  EXPECT_EQ(f.points, 4);
}

TEST(Calibrate, BadPointsAreInputErrors) {
  EXPECT_THROW(fit_alpha_beta({1024}, {microseconds(1)}), Error);
  EXPECT_THROW(fit_alpha_beta({1024, 1024}, {microseconds(1), microseconds(1)}), Error);
  EXPECT_THROW(fit_alpha_beta({1024, 2048}, {microseconds(1), Seconds(0)}), Error);
  EXPECT_THROW(fit_alpha_beta({1024, 2048}, {microseconds(1)}), Error);
  EXPECT_THROW(fit_latency({}), Error);
}

MicroMeasurements synthetic() {
  MicroMeasurements m;
  m.machine = "test";
  m.gpu_name = "synthetic";
  m.origin = "unit test";
  m.gpus = 2;
  SaturatingFit ce;
  ce.alpha = microseconds(1.7);
  ce.beta = GBps(397);
  MicroSeries s{"p2p.ce.uni", "synthetic line", {}};
  for (double b : sweep(1024, 1 << 28, 4)) s.samples.push_back({int64_t(b), ce.time(b), 10});
  m.series.push_back(s);
  m.series.push_back({"latency.launch", "synthetic", {{0, microseconds(2.0), 100}, {0, microseconds(2.2), 100}}});
  MicroSeries mm{"matmul.half", "synthetic", {}};
  for (int64_t d : {1024, 2048, 4096, 8192}) {
    MicroSample p{.bytes = 0, .time = Seconds(2.0 * d * d * d / 750e12) + microseconds(5), .reps = 5};
    p.m = p.k = p.n = d;
    mm.samples.push_back(p);
  }
  m.series.push_back(mm);
  return m;
}

TEST(Calibrate, CalibrateFitsEverySeries) {
  const Calibration c = calibrate(synthetic());
  ASSERT_NE(c.curve("p2p.ce.uni"), nullptr);
  EXPECT_LT(rel(c.curve("p2p.ce.uni")->fit.beta.gbps(), 397), 0.01);
  EXPECT_LT(rel(c.curve("p2p.ce.uni")->fit.alpha.us(), 1.7), 0.01);
  ASSERT_NE(c.latency("latency.launch"), nullptr);
  EXPECT_NEAR(c.latency("latency.launch")->fit.value.us(), 2.1, 1e-9);
  ASSERT_NE(c.curve("matmul.half"), nullptr);
  EXPECT_LT(rel(c.curve("matmul.half")->fit.beta.value, 750e12), 0.01);  // flop/s
  EXPECT_EQ(c.curve("p2p.sm.uni"), nullptr);
}

TEST(Calibrate, MeasurementsRoundTripThroughJson) {
  const MicroMeasurements m = synthetic();
  const MicroMeasurements back = measurements_from_json_text(measurements_to_json(m), "mem");
  ASSERT_EQ(back.series.size(), m.series.size());
  EXPECT_EQ(back.gpu_name, "synthetic");
  EXPECT_EQ(back.series[2].samples[3].k, 8192);
  for (size_t i = 0; i < m.series.size(); ++i)
    for (size_t j = 0; j < m.series[i].samples.size(); ++j)
      EXPECT_NEAR(back.series[i].samples[j].time.value, m.series[i].samples[j].time.value, 1e-15);
}

// --- leave-out discipline: calibration never reads a collective record ------------------------------

TEST(CalibrateLeaveOut, CollectiveSeriesAreRefused) {
  MicroMeasurements m = synthetic();
  m.series.push_back({"allreduce.nccl", "a collective", {{1024, microseconds(10), 1}}});
  EXPECT_THROW(validate(m), Error);
  EXPECT_THROW(calibrate(m), Error);
  // No microbenchmark is a collective. NCCL appears only as its point-to-point transport (send/recv
  // between two GPUs, which no record predicts).
  for (const auto& name : bench_names()) {
    for (const char* coll : {"allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "gather", "scatter"})
      EXPECT_EQ(name.find(coll), std::string::npos) << name;
    EXPECT_EQ(name.rfind("reduce.", 0) == 0 && name.find("nccl") != std::string::npos, false) << name;
    if (name.find("nccl") != std::string::npos) EXPECT_EQ(name.rfind("nccl.p2p.", 0), 0u) << name;
  }
}

TEST(CalibrateLeaveOut, RecordsFilesAndFoldersAreRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "cclab_test_calibrate_leaveout";
  fs::create_directories(dir);
  Record r{
      .algo = "allreduce.nccl", .collective = "allreduce", .backend = "gpu", .ranks = 2, .bytes = 1024, .time_us = 10};
  fill_bandwidths(r);
  const std::string csv = (dir / "records.csv").string();
  write_csv_atomic(csv, {r});
  // A folder of records, a records CSV, and the same CSV under a .json name: all refused.
  try {
    load_measurements(dir.string());
    FAIL() << "a records folder was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("never collective records"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_measurements(csv), Error);
  fs::copy_file(csv, dir / "disguised.json", fs::copy_options::overwrite_existing);
  EXPECT_THROW(load_measurements((dir / "disguised.json").string()), Error);
  // A JSON file that smuggles a collective in as a series is refused too.
  {
    std::ofstream f(dir / "smuggled.json");
    f << R"({"series": [{"name": "allgather.ring", "samples": [{"bytes": 1024, "time_us": 3}]}]})";
  }
  EXPECT_THROW(load_measurements((dir / "smuggled.json").string()), Error);
  // Genuine measurements load.
  {
    std::ofstream f(dir / "micro.json");
    f << measurements_to_json(synthetic());
  }
  EXPECT_EQ(load_measurements((dir / "micro.json").string()).series.size(), 3u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cclab::model
