// The bidir kernels' model (sim/paths_bidir.cpp) and NCCL's 2-GPU model (sim/paths_nccl.cpp) on the
// microbenchmarks of exec/microbench/microbench_bidir.cu: each mode is its transfer's series (launches, handshakes,
// transfer as the harness times them), the reduction where it is slower than the transfer, and the
// per-replay cost for records timed with another --iters; without those series, the general pieces.
#include <gtest/gtest.h>

#include "algorithms/registry.hpp"
#include "core/error.hpp"
#include "model/params.hpp"
#include "model/profile.hpp"
#include "sim/compare.hpp"
#include "sim/paths.hpp"
#include "sim/paths_detail.hpp"
#include "sim/simulator.hpp"
#include "tests/sim/synthetic_tables.hpp"
#include "topology/topology.hpp"

namespace cclab::sim {
namespace {

using test::kMiB;
using test::line_table;
using test::with_conditions;

model::ModelParams params_with_bidir_series(const topo::Topology& t) {
  model::ModelParams p = model::defaults_for(t);
  p.exec.kernel_node = {microseconds(2), "test"};
  p.exec.kernel_pdl = {microseconds(1), "test"};
  p.exec.flag_rtt = {microseconds(1.6), "test"};
  p.launch_latency = {microseconds(1.5), "test"};
  p.tables["p2p.sm.bidir"] = line_table(3e-6, 280e9);
  p.tables["p2p.sm_store.bidir"] = line_table(3e-6, 250e9);
  p.tables["p2p.sm_store.cta"] = line_table(3e-6, 20e9);
  p.tables["reduce.local.float"] = line_table(2e-6, 1000e9);
  p.tables["bidir.pull"] = line_table(5e-6, 300e9);
  p.tables["bidir.push"] = line_table(4e-6, 290e9);
  p.tables["bidir.ll"] = line_table(2.5e-6, 120e9, kMiB);
  p.tables["bidir.ll_plain"] = line_table(3.5e-6, 120e9, kMiB);
  p.tables["bidir.ring"] = line_table(10e-6, 200e9);
  // t(N) = 1 us + 20 us / N: a 20 us per-replay cost.
  model::PathTable replay;
  for (int n : {5, 10, 20, 40}) replay.points.push_back({n, 1e-6 + 20e-6 / n});
  p.tables["bidir.replay"] = replay;
  return p;
}

AlgoArgs args2(int64_t bytes) {
  AlgoArgs a;
  a.nranks = 2;
  a.count = bytes / 4;
  a.dtype = DType::f32;
  return a;
}

// The value after `key` in the executor's words ("grid=128" -> "128"), or "".
std::string word_after(const std::string& note, const std::string& key) {
  const size_t at = note.find(key);
  if (at == std::string::npos) return "";
  size_t end = at + key.size();
  while (end < note.size() && note[end] != ' ' && note[end] != ',') ++end;
  return note.substr(at + key.size(), end - at - key.size());
}

// The settings under which the lowering launches what `note` (the executor's description of a launch) says.
std::string tune_of(const std::string& algo, const std::string& note, int iters) {
  const std::string mode = word_after(note, "mode=");
  const std::string key = mode == "stream" ? "stream" : mode;
  std::string t = "launches=" + std::to_string(iters > 0 ? iters : 20);
  auto add = [&](const std::string& kv) { t += "," + kv; };
  if (algo == "allreduce.bidir") add("mode=" + mode);
  if (const std::string v = word_after(note, "engine="); !v.empty()) add("flash_engine=" + v);
  if (const std::string v = word_after(note, "threads="); !v.empty()) add(key + "_threads=" + v);
  if (const std::string v = word_after(note, "unroll="); !v.empty())
    add((mode == "flash" ? "flash_ldg_unroll=" : key + "_unroll=") + v);
  if (const std::string v = word_after(note, "grid="); !v.empty())
    add((mode == "stream" ? "lanes=" : key + "_blocks=") + v);
  if (const std::string v = word_after(note, "slots="); !v.empty()) add("slots=" + v);
  if (const std::string v = word_after(note, "slot_bytes="); !v.empty()) add("slot_bytes=" + v);
  if (mode == "lamport" && note.find(" split") != std::string::npos) add("lamport_split=1");
  if (mode != "stream") add(key + "_pdl=" + std::string(note.find(" pdl") != std::string::npos ? "1" : "0"));
  return t;
}

double predict_note(const model::ModelParams& p, const std::string& algo, int64_t bytes, const std::string& note,
                    int iters = 0, DType dtype = DType::f32) {
  const topo::Topology t = topo::load_topology("h200x2");
  Simulator sim(t, with_conditions(p));
  AlgoArgs a = args2(bytes);
  a.dtype = dtype;
  a.count = bytes / dtype_size(dtype);
  a.tune = tune_of(algo, note, iters);
  return predict_plan(sim, find_algorithm(algo), a).result.time.value;
}

TEST(BidirModel, EachModeIsItsTransfersSeries) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = params_with_bidir_series(t);
  const int64_t S = 4 * kMiB;
  const std::string flash = "mode=flash engine=ldg pdl threads=512 stages=4 unroll=4 grid=128";
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.flash", S, flash), p.tables.at("bidir.pull").time(S).value, 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.push", S, "mode=push threads=512 unroll=4 pdl grid=256"),
              p.tables.at("bidir.push").time(S).value, 1e-12);
  // ll: PDL launches or plain ones, as the note says.
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.ll", 4096, "mode=ll threads=256 pdl grid=2"),
              p.tables.at("bidir.ll").time(4096).value, 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 4096, "mode=ll threads=256 grid=2"),
              p.tables.at("bidir.ll_plain").time(4096).value, 1e-12);
  // stream: the ring series where the slots are the microbenchmark's, the general pieces otherwise.
  const double ring = predict_note(p, "allreduce.bidir.stream", S, "mode=stream slots=4 slot_bytes=262144 grid=16");
  EXPECT_NEAR(ring, p.tables.at("bidir.ring").time(S).value, 1e-12);
  const double other_slots =
      predict_note(p, "allreduce.bidir.stream", S, "mode=stream slots=4 slot_bytes=65536 grid=64");
  EXPECT_GT(std::abs(other_slots - ring), 1e-7);
  // lamport: its series, or push's where the profile has none.
  const std::string lamport = "mode=lamport threads=512 unroll=2 ahead=2 pdl grid=128";
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.lamport", S, lamport), p.tables.at("bidir.push").time(S).value, 1e-12);
  model::ModelParams q = p;
  q.tables["bidir.lamport"] = line_table(3e-6, 310e9);
  EXPECT_NEAR(predict_note(q, "allreduce.bidir.lamport", S, lamport), q.tables.at("bidir.lamport").time(S).value,
              1e-12);
  EXPECT_THROW(predict_note(p, "allreduce.bidir.magic", S, "mode=magic"), Error);
}

TEST(BidirModel, VariantsTakeTheSeriesMeasuredWithTheirParameters) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_bidir_series(t);
  p.tables["bidir.pull.u2"] = line_table(6e-6, 300e9);
  p.tables["bidir.pull.u8"] = line_table(7e-6, 300e9);
  p.tables["bidir.pull.u2.g66"] = line_table(8e-6, 300e9);
  p.tables["bidir.push.g132"] = line_table(9e-6, 300e9);
  p.tables["bidir.lamport"] = line_table(3e-6, 310e9);
  p.tables["bidir.lamport.t256"] = line_table(3.5e-6, 310e9);
  p.tables["bidir.lamport.split"] = line_table(2.5e-6, 310e9);
  auto at = [&](const char* series, int64_t s) { return p.tables.at(series).time(double(s)).value; };
  const int64_t M = 64 * kMiB, K = 256 << 10;
  // flash: vectors per thread from the note; 2 per thread on 66 CTAs where 66 caps the grid.
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", K, "mode=flash engine=ldg pdl threads=512 unroll=2 grid=16"),
              at("bidir.pull.u2", K), 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", M, "mode=flash engine=ldg pdl threads=512 unroll=2 grid=66"),
              at("bidir.pull.u2.g66", M), 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", M, "mode=flash engine=ldg pdl threads=512 unroll=8 grid=132"),
              at("bidir.pull.u8", M), 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", M, "mode=flash engine=ldg pdl threads=512 unroll=4 grid=132"),
              at("bidir.pull", M), 1e-12);
  // push on 132 CTAs where that caps the grid; its default grid otherwise.
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", M, "mode=push threads=512 unroll=4 pdl grid=132"),
              at("bidir.push.g132", M), 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", M, "mode=push threads=512 unroll=4 pdl grid=264"), at("bidir.push", M),
              1e-12);
  // lamport: split roles, 256 threads, the default.
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", M, "mode=lamport threads=512 unroll=2 ahead=2 split pdl grid=132"),
              at("bidir.lamport.split", M), 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", M, "mode=lamport threads=256 unroll=2 ahead=2 pdl grid=132"),
              at("bidir.lamport.t256", M), 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", M, "mode=lamport threads=512 unroll=2 ahead=2 pdl grid=132"),
              at("bidir.lamport", M), 1e-12);
  // A variant the profile has no series for: the mode's default series.
  p.tables.erase("bidir.pull.u8");
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", M, "mode=flash engine=ldg pdl threads=512 unroll=8 grid=132"),
              at("bidir.pull", M), 1e-12);
}

TEST(BidirModel, ReductionSlowerThanTheTransferShows) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_bidir_series(t);
  const int64_t S = 64 * kMiB;
  const std::string note = "mode=flash engine=ldg pdl threads=512 grid=132";
  const double fast = predict_note(p, "allreduce.bidir.flash", S, note);
  // A local reduction at 100 GB/s (slower than the 300 GB/s pull): its size part replaces the pull's.
  p.tables["reduce.local.float"] = line_table(2e-6, 100e9);
  const double slow = predict_note(p, "allreduce.bidir.flash", S, note);
  const auto& pull = p.tables.at("bidir.pull");
  EXPECT_NEAR(fast, pull.time(S).value, 1e-12);
  EXPECT_NEAR(slow, pull.time(S).value + (double(S) / 100e9 - pull.size_part(S).value), 1e-9);
}

TEST(BidirModel, RecordsOfOtherIterationCountsPayTheirShareOfTheReplay) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = params_with_bidir_series(t);
  const std::string note = "mode=ll threads=256 pdl grid=1";
  const double at20 = predict_note(p, "allreduce.bidir", 64, note, 20);
  EXPECT_NEAR(at20, p.tables.at("bidir.ll").time(64).value, 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, note, 0), at20, 1e-12);  // not recorded: as the tables
  // 20 us per replay: 2 us per launch at 10 launches instead of 1 us at 20.
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, note, 10) - at20, 1e-6, 1e-9);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, note, 40) - at20, -0.5e-6, 1e-9);
  std::string how;
  EXPECT_NEAR(replay_shift(p, 20, 5, how).value, 20e-6 * (1.0 / 5 - 1.0 / 20), 1e-12);
  model::ModelParams q = p;
  q.tables.erase("bidir.replay");
  EXPECT_EQ(replay_shift(q, 20, 10, how).value, 0.0);
}

TEST(BidirModel, RecordsOfOtherIterationCountsFollowTheN100Series) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_bidir_series(t);
  // The ll default at 100 launches per replay: 0.5 us less per launch (a 12.5 us per-replay cost).
  p.tables["bidir.ll.n100"] = line_table(2.0e-6, 120e9, kMiB);
  const std::string note = "mode=ll threads=256 pdl grid=1";
  auto at = [&](const char* series, int64_t s) { return p.tables.at(series).time(double(s)).value; };
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, note, 100), at("bidir.ll.n100", 64), 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, note, 20), at("bidir.ll", 64), 1e-12);
  // In 1 / n between them (50 launches: 3/8 of the way from 20 to 100), and beyond.
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, note, 50), at("bidir.ll", 64) - 0.75 * 0.5e-6, 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, note, 10), at("bidir.ll", 64) + 1.25 * 0.5e-6, 1e-12);
  // ll without PDL: its own pair where measured, bidir.replay's per-replay cost otherwise (20 us: -0.8 us).
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, "mode=ll threads=256 grid=1", 100),
              at("bidir.ll_plain", 64) + 20e-6 * (1.0 / 100 - 1.0 / 20), 1e-12);
  p.tables["bidir.ll_plain.n100"] = line_table(3.0e-6, 120e9, kMiB);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, "mode=ll threads=256 grid=1", 100), at("bidir.ll_plain.n100", 64),
              1e-12);
  // Beyond the .n100 series' sizes: bidir.replay's per-replay cost (20 us: -0.8 us at 100 launches).
  p.tables["bidir.pull.n100"] = line_table(4.5e-6, 300e9, 64 * kMiB);
  const std::string flash = "mode=flash engine=ldg pdl threads=512 stages=4 unroll=4 grid=132";
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.flash", 64 * kMiB, flash, 100), at("bidir.pull.n100", 64 * kMiB), 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.flash", 256 * kMiB, flash, 100),
              at("bidir.pull", 256 * kMiB) + 20e-6 * (1.0 / 100 - 1.0 / 20), 1e-12);
}

TEST(BidirModel, TheOwnInputsLoadsFromTheOwnSeries) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_bidir_series(t);
  p.tables["bidir.push.n100"] = line_table(3.5e-6, 290e9, 64 * kMiB);
  p.tables["bidir.push.own.n100"] = line_table(4.5e-6, 200e9, 64 * kMiB);
  const std::string note = "mode=push threads=512 unroll=4 pdl grid=256";
  auto at = [&](const char* series, int64_t s) { return p.tables.at(series).time(double(s)).value; };
  const int64_t S = 4 * kMiB;
  // 100 launches per replay: exactly the .own.n100 series; 20: the .n100 series' difference added to bidir.push.
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.push", S, note, 100), at("bidir.push.own.n100", S), 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.push", S, note, 20),
              at("bidir.push", S) + at("bidir.push.own.n100", S) - at("bidir.push.n100", S), 1e-12);
  // An own series faster than the plain one (noise, or lamport's own loop) is taken as measured.
  p.tables["bidir.push.own.n100"] = line_table(3e-6, 290e9, 64 * kMiB);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.push", S, note, 100), at("bidir.push.own.n100", S), 1e-12);
  // Beyond the own series' sizes: the same share of the time as at its largest size.
  const std::string wide = "mode=push threads=512 unroll=4 pdl grid=264";
  const double share = at("bidir.push.own.n100", 64 * kMiB) / at("bidir.push.n100", 64 * kMiB) - 1;
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.push", 256 * kMiB, wide, 20), at("bidir.push", 256 * kMiB) * (1 + share),
              1e-12);
  // The push kernel's own loop where measured.
  p.tables["bidir.push.ownloop.n100"] = line_table(5e-6, 150e9, 64 * kMiB);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.push", S, note, 100), at("bidir.push.ownloop.n100", S), 1e-12);
  p.tables["bidir.lamport.t256"] = line_table(3.5e-6, 310e9);
  p.tables["bidir.lamport.t256.n100"] = line_table(3.0e-6, 310e9, 64 * kMiB);
  p.tables["bidir.lamport.t256.own.n100"] = line_table(2.5e-6, 300e9, 64 * kMiB);
  EXPECT_NEAR(
      predict_note(p, "allreduce.bidir.lamport", S, "mode=lamport threads=256 unroll=2 ahead=2 pdl grid=132", 100),
      at("bidir.lamport.t256.own.n100", S), 1e-12);
}

TEST(BidirModel, StreamsOwnLoopByElementType) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_bidir_series(t);
  p.tables["bidir.ring.n100"] = line_table(9e-6, 200e9, 64 * kMiB);
  p.tables["bidir.ring.ownloop.n100"] = line_table(9.5e-6, 150e9, 64 * kMiB);
  const std::string note = "mode=stream slots=4 slot_bytes=262144 threads=512 grid=16";
  auto at = [&](const char* series, int64_t s) { return p.tables.at(series).time(double(s)).value; };
  auto predict = [&](DType dt) { return predict_note(p, "allreduce.bidir.stream", 4 * kMiB, note, 100, dt); };
  // Without the kernel-loop series every element type takes the integer own loop.
  EXPECT_NEAR(predict(DType::bf16), at("bidir.ring.ownloop.n100", 4 * kMiB), 1e-12);
  // With them: float its own, bfloat16 and half the bfloat16 one (both widen 16-bit elements to float).
  p.tables["bidir.ring.kernelloop.float.n100"] = line_table(10e-6, 120e9, 64 * kMiB);
  p.tables["bidir.ring.kernelloop.bfloat16.n100"] = line_table(10e-6, 90e9, 64 * kMiB);
  EXPECT_NEAR(predict(DType::f32), at("bidir.ring.kernelloop.float.n100", 4 * kMiB), 1e-12);
  EXPECT_NEAR(predict(DType::bf16), at("bidir.ring.kernelloop.bfloat16.n100", 4 * kMiB), 1e-12);
  EXPECT_NEAR(predict(DType::f16), at("bidir.ring.kernelloop.bfloat16.n100", 4 * kMiB), 1e-12);
  EXPECT_GT(predict(DType::bf16), predict(DType::f32));
}

// The push kernel's reduction loop by element type where measured (bidir.push.kernelloop.<element>.n100),
// before its integer loop (bidir.push.ownloop.n100).
TEST(BidirModel, PushReductionLoopByElementType) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_bidir_series(t);
  p.tables["bidir.push.n100"] = line_table(4e-6, 200e9, 64 * kMiB);
  p.tables["bidir.push.ownloop.n100"] = line_table(4.2e-6, 180e9, 64 * kMiB);
  const std::string note = "mode=push threads=512 unroll=4 pdl grid=8";
  auto predict = [&](DType dt) { return predict_note(p, "allreduce.bidir.push", 128 * 1024, note, 100, dt); };
  const double integer_loop = predict(DType::f16);
  EXPECT_DOUBLE_EQ(predict(DType::f32), integer_loop);
  p.tables["bidir.push.kernelloop.float.n100"] = line_table(4.3e-6, 180e9, 64 * kMiB);
  p.tables["bidir.push.kernelloop.bfloat16.n100"] = line_table(5.2e-6, 180e9, 64 * kMiB);
  EXPECT_NEAR(predict(DType::f32) - integer_loop, 0.1e-6, 1e-9);
  EXPECT_NEAR(predict(DType::f16) - integer_loop, 1.0e-6, 1e-9);
  EXPECT_NEAR(predict(DType::bf16) - integer_loop, 1.0e-6, 1e-9);
}

TEST(BidirModel, TheArgumentBlocksCostByThreadsLaunched) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_bidir_series(t);
  p.tables["bidir.ll.n100"] = line_table(2.0e-6, 120e9, kMiB);
  p.tables["bidir.ll.args.n100"] = line_table(2.3e-6, 120e9, kMiB);  // 0.3 us at every ll grid
  // The kernels no longer pass the block by reference: an .argref series is not theirs and is ignored.
  p.tables["bidir.ll.argref.n100"] = line_table(4.0e-6, 120e9, kMiB);
  auto at = [&](const char* series, int64_t s) { return p.tables.at(series).time(double(s)).value; };
  // ll at 100 launches per replay: its .n100 series plus the block's cost.
  const int64_t S = 64 << 10;
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.ll", S, "mode=ll threads=256 pdl grid=32", 100),
              at("bidir.ll.n100", S) + 0.3e-6, 1e-12);
  // push on 256 CTAs of 512 threads: more threads than the ll pair launched (132 x 256): in proportion.
  const std::string push = "mode=push threads=512 unroll=4 pdl grid=256";
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.push", 4 * kMiB, push, 20),
              at("bidir.push", 4 * kMiB) + 0.3e-6 * (256.0 * 512) / (132.0 * 256), 1e-12);
  // stream launches without PDL: ll_plain's pair, none here.
  const std::string stream = "mode=stream slots=4 slot_bytes=262144 threads=512 grid=16";
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.stream", 4 * kMiB, stream, 20), at("bidir.ring", 4 * kMiB), 1e-12);
}

TEST(BidirModel, WithoutTheSeriesTheGeneralPiecesRemain) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_bidir_series(t);
  for (const char* s : {"bidir.pull", "bidir.push", "bidir.ll", "bidir.ll_plain", "bidir.ring"}) p.tables.erase(s);
  const int64_t S = 4 * kMiB;
  // flash: node (PDL) + the peer-load body less a bare launch + two flag round trips.
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.flash", S, "mode=flash engine=ldg pdl grid=128"),
              1e-6 + (p.tables.at("p2p.sm.bidir").time(S).value - 1.5e-6) + 3.2e-6, 1e-12);
  // lamport: node (PDL) + the both-ways store body + a one-way trip.
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.lamport", S, "mode=lamport threads=512 pdl grid=128"),
              1e-6 + (p.tables.at("p2p.sm_store.bidir").time(S).value - 1.5e-6) + 0.8e-6, 1e-12);
}

TEST(NcclModel, GraphReplayedSendRecvWhenMeasured) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_bidir_series(t);
  p.tables["nccl.p2p.uni"] = line_table(6e-6, 200e9);
  p.tables["nccl.p2p.bidir"] = line_table(7e-6, 180e9);
  const int64_t S = 8;
  EXPECT_NEAR(predict_note(p, "allgather.nccl", S, "NCCL 2.28.3"), p.tables.at("nccl.p2p.bidir").time(S / 2.0).value,
              1e-12);
  p.tables["nccl.p2p.graph.uni"] = line_table(4.5e-6, 200e9);
  p.tables["nccl.p2p.graph.bidir"] = line_table(5e-6, 180e9);
  EXPECT_NEAR(predict_note(p, "allgather.nccl", S, "NCCL 2.28.3"),
              p.tables.at("nccl.p2p.graph.bidir").time(S / 2.0).value, 1e-12);
  EXPECT_NEAR(predict_note(p, "reduce.nccl", S, "NCCL 2.28.3"), p.tables.at("nccl.p2p.graph.uni").time(S).value, 1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.nccl", S, "NCCL 2.28.3"), p.tables.at("nccl.p2p.graph.bidir").time(S).value,
              1e-12);
}

TEST(BidirModel, CompareFlagsARecordWhosePlanIsNotThePlanPriced) {
  model::Target target;
  target.topology = topo::load_topology("h200x2");
  target.params = params_with_bidir_series(target.topology);
  // A calibrated profile's mark (sim::prices_executor_plans): the executor's plans are priced.
  target.params.tables["p2p.ce.uni"] = line_table(2e-6, 320e9);
  target.params.tables["fused.step.put"] = line_table(1e-6, 20e9);
  target.label = "test";
  Record r{.algo = "allreduce.bidir",
           .collective = "allreduce",
           .backend = "gpu",
           .ranks = 2,
           .bytes = 64,
           .count = 16,
           .time_us = 3};
  const Record priced = predict(r, target);
  r.extra = priced.extra;  // the record says it ran the plan priced: no difference
  EXPECT_FALSE(plan_difference(r, priced));
  for (auto& [k, v] : r.extra)
    if (k == "launches") v = "20";  // ... but it ran 20 launches per replay, not the plan's 100
  const auto d = plan_difference(r, priced);
  ASSERT_TRUE(d);
  EXPECT_NE(d->find("launches ran 20, priced 100"), std::string::npos) << *d;
  // A record that names no plan (older records) is not flagged.
  r.extra.clear();
  EXPECT_FALSE(plan_difference(r, priced));
}

}  // namespace
}  // namespace cclab::sim
