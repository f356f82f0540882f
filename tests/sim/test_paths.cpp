// The executor's path models (sim/paths.hpp): lowered plans priced, calibration tables interpolated,
// and each path's time composed of the profile's measured pieces exactly as documented.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>

#include "algorithms/registry.hpp"
#include "core/error.hpp"
#include "core/record.hpp"
#include "model/params.hpp"
#include "model/profile.hpp"
#include "sim/compare.hpp"
#include "sim/paths.hpp"
#include "sim/simulator.hpp"
#include "tests/sim/synthetic_tables.hpp"
#include "topology/topology.hpp"

namespace cclab::sim {
namespace {

using test::kMiB;
using test::line_table;
using test::with_conditions;

// h200x2 with round executor costs and synthetic tables (rates below the link's, so they bind).
model::ModelParams test_params(const topo::Topology& t) {
  model::ModelParams p = model::defaults_for(t);
  p.exec.copy_node = {microseconds(4), "test"};
  p.exec.copy_local_node = {microseconds(3), "test"};
  p.exec.kernel_node = {microseconds(2), "test"};
  p.exec.kernel_pdl = {microseconds(1), "test"};
  p.exec.fork_local = {microseconds(2), "test"};
  p.exec.fork_streams = {{{microseconds(10), "test"}, {microseconds(25), "test"}, {microseconds(45), "test"}}};
  p.exec.event_peer = {microseconds(6), "test"};
  p.exec.flag_rtt = {microseconds(1.6), "test"};
  p.launch_latency = {microseconds(1.5), "test"};
  p.tables["p2p.ce.bidir"] = line_table(2e-6, 300e9);
  p.tables["p2p.ce.uni"] = line_table(2e-6, 320e9);
  p.tables["p2p.sm.bidir"] = line_table(3e-6, 280e9);
  p.tables["p2p.sm_store.bidir"] = line_table(3e-6, 250e9);
  p.tables["reduce.local.float"] = line_table(2e-6, 1000e9);
  p.tables["nccl.p2p.uni"] = line_table(5e-6, 200e9);
  p.tables["nccl.p2p.bidir"] = line_table(6e-6, 180e9);
  return p;
}

// The executor's plan of `algo` under the settings `tune`, priced (sim::predict_plan).
Prediction on_plan(Simulator& sim, const std::string& algo, AlgoArgs a, const std::string& tune) {
  a.tune = tune;
  return predict_plan(sim, find_algorithm(algo), a);
}

AlgoArgs args2(int64_t bytes) {
  AlgoArgs a;
  a.nranks = 2;
  a.count = bytes / 4;
  a.dtype = DType::f32;
  return a;
}

TEST(PathTable, InterpolatesLogLogAndContinuesTheLastRate) {
  model::PathTable t;
  t.points = {{1024, 2e-6}, {4096, 8e-6}, {16384, 10e-6}};
  EXPECT_DOUBLE_EQ(t.time(1024).value, 2e-6);
  EXPECT_DOUBLE_EQ(t.time(100).value, 2e-6);  // below the first point: the first time
  // Halfway in log(bytes): the geometric mean of the neighbours.
  EXPECT_NEAR(t.time(2048).value, std::sqrt(2e-6 * 8e-6), 1e-15);
  // Past the last point the last interval's rate continues: 2 us per 12288 B.
  EXPECT_NEAR(t.time(16384 + 12288).value, 12e-6, 1e-15);
  EXPECT_NEAR(t.size_part(4096).value, 6e-6, 1e-15);
}

TEST(ExecPaths, ThePlanSaysWhatTheModelsRead) {
  AlgoArgs a = args2(8);
  const lower::LoweredPlan ll = lower::lower_collective(find_algorithm("allreduce.bidir"), a, lower::Machine{});
  const ExecPath p = exec_path_of(ll, a);
  EXPECT_EQ(p.kind, ExecPath::Kind::bidir);
  // The ll kernel at 8 bytes, as its mechanisms: one CTA of 256 threads storing LL pairs into the peer, a round
  // trip for them, its reduction beside, 256 x 8 bytes per wave.
  EXPECT_EQ(p.kernel.link, lower::KernelMechanisms::Link::ll_stores);
  EXPECT_EQ(p.kernel.port_bytes, 8);
  EXPECT_EQ(p.kernel.grid, 1);
  EXPECT_EQ(p.kernel.vectors, 256);
  EXPECT_EQ(p.kernel.round_trips, 1);
  EXPECT_EQ(p.kernel.reduce, lower::KernelMechanisms::Reduce::beside);
  EXPECT_EQ(p.kernel.wave_bytes, 256 * 8);
  EXPECT_TRUE(p.pdl);
  EXPECT_EQ(p.launches, 100);
  a.tune = "lowering=plan";
  const lower::LoweredPlan ring = lower::lower_collective(find_algorithm("allreduce.ring"), a, lower::Machine{});
  EXPECT_EQ(exec_path_of(ring, a).kind, ExecPath::Kind::general);
  EXPECT_EQ(exec_path_of(ring, a).launches, 20);
}

TEST(ExecPaths, SolBidirCopyIsForkPlusCopyNodePlusMeasuredSizePart) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = test_params(t);
  Simulator sim(t, p);
  for (int64_t bytes : {int64_t(8), int64_t(64) << 10, 16 * kMiB, 512 * kMiB}) {
    const Prediction pr = on_plan(sim, "sol.bidir_copy", args2(bytes), "");
    const double want = 10e-6 + 4e-6 + p.tables.at("p2p.ce.bidir").size_part(double(bytes)).value;
    EXPECT_NEAR(pr.result.time.value, want, 0.01 * want) << bytes;
  }
}

TEST(ExecPaths, GeneralPathCopiesAtTheirMeasuredSizeInReplayedGraphs) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = test_params(t);
  p.tables["p2p.ce.graph.bidir"] = line_table(4e-6, 200e9);  // slower than p2p.ce.bidir: it must be the one used
  Simulator sim(t, p);
  for (int64_t bytes : {int64_t(8), 16 * kMiB, 512 * kMiB}) {
    const Prediction pr = on_plan(sim, "sol.bidir_copy", args2(bytes), "");
    const double want = 10e-6 + 4e-6 + p.tables.at("p2p.ce.graph.bidir").size_part(double(bytes)).value;
    EXPECT_NEAR(pr.result.time.value, want, 0.01 * want) << bytes;
    EXPECT_NE(pr.record.note.find("p2p.ce.graph.bidir"), std::string::npos) << pr.record.note;
  }
}

TEST(ExecPaths, GeneralPathsOverTheHoldLimitDoNotHangOnTheUnheldReplayTable) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = test_params(t);
  std::string general = "lowering=plan";
  Simulator before(t, p);
  // 8 MiB: 32 ops per iteration, 640 nodes in 20 iterations: over the hold limit of 512.
  const double big0 = on_plan(before, "allreduce.tree", args2(8 * kMiB), general).result.time.value;
  p.tables["replay.unheld"] = line_table(5e-3, 1e18);  // 5 ms per replay whatever its nodes
  Simulator after(t, p);
  const Prediction big = on_plan(after, "allreduce.tree", args2(8 * kMiB), general);
  EXPECT_DOUBLE_EQ(big.result.time.value, big0);
  EXPECT_LT(big.result.time.value, 5e-3 / 20);
  EXPECT_EQ(big.record.note.find("bound by the unheld replay"), std::string::npos) << big.record.note;
}

TEST(ExecPaths, GeneralPathsOverTheHoldLimitAreBoundByTheHostsLaunch) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = test_params(t);
  std::string general = "lowering=plan";
  Simulator before(t, p);
  auto time = [&](Simulator& sim, int64_t bytes) {
    return on_plan(sim, "allreduce.tree", args2(bytes), general).result.time.value;
  };
  const double small0 = time(before, 4 * kMiB), big0 = time(before, 8 * kMiB), mid0 = time(before, 16 * kMiB);
  // The host launches 20-iteration graphs of this shape in 3 ms at 640 nodes, 4 ms at 1280.
  model::PathTable launch;
  launch.points = {{320, 1000e-6}, {640, 3000e-6}, {1280, 4000e-6}};
  p.tables["xchain.launch_unheld"] = launch;
  Simulator after(t, p);
  // 8 MiB: 32 ops per iteration, 640 nodes per replay: the launch / 20 plus one iteration's work.
  ASSERT_LT(big0, 150e-6);
  const Prediction big = on_plan(after, "allreduce.tree", args2(8 * kMiB), general);
  EXPECT_NEAR(big.result.time.value, (3000e-6 + big0) / 20, 1e-9);
  EXPECT_NE(big.record.note.find("unheld (640 nodes): launch-bound"), std::string::npos) << big.record.note;
  // 16 MiB: 1280 nodes; 4 MiB: 320 nodes, held: unchanged whatever its launch takes.
  EXPECT_NEAR(time(after, 16 * kMiB), std::max(mid0, (4000e-6 + mid0) / 20), 1e-9);
  EXPECT_DOUBLE_EQ(time(after, 4 * kMiB), small0);
  // 32 MiB: 2560 nodes, past the calibrated 1280: not extrapolated (the work alone).
  model::ModelParams no_launch = p;
  no_launch.tables.erase("xchain.launch_unheld");
  Simulator work_only(t, no_launch);
  EXPECT_DOUBLE_EQ(time(after, 32 * kMiB), time(work_only, 32 * kMiB));
  // Where the profile has graphs without waits across the GPUs (lchain), the tree (each put waits for its own
  // GPU's reduction) takes them: 2 ms at 640 nodes instead of xchain's 3.
  model::PathTable local_launch;
  local_launch.points = {{320, 1000e-6}, {640, 2000e-6}, {1280, 2500e-6}};
  model::ModelParams with_local = p;
  with_local.tables["lchain.launch_unheld"] = local_launch;
  Simulator lsim(t, with_local);
  const Prediction lbig = on_plan(lsim, "allreduce.tree", args2(8 * kMiB), general);
  EXPECT_NEAR(lbig.result.time.value, (2000e-6 + big0) / 20, 1e-9);
  // A launch shorter than the work bounds nothing.
  launch.points = {{320, 10e-6}, {1280, 20e-6}};
  p.tables["xchain.launch_unheld"] = launch;
  Simulator quick(t, p);
  EXPECT_DOUBLE_EQ(time(quick, 8 * kMiB), big0);
}

TEST(ExecPaths, BothWaysCopySizePartIsAgainstItsSlowerFixedMode) {
  const topo::Topology t = topo::load_topology("h200x2");
  std::string general = "lowering=plan";
  // A both-ways graph copy table whose fixed part (8 B - 64 KiB) is bimodal per point: 7.1 or 8.4 us.
  auto tree_with = [&](double first_us, double mode_shift_us) {
    model::ModelParams p = test_params(t);
    model::PathTable bt;
    int i = 0;
    for (int64_t b = 8; b <= (int64_t(1) << 30); b *= 2, ++i) {
      const double fixed = b == 8 ? first_us : (i % 2 ? 7.1 : 8.4 + mode_shift_us);
      bt.points.push_back({b, b <= (64 << 10) ? fixed * 1e-6 : 8.4e-6 + mode_shift_us * 1e-6 + double(b) / 300e9});
    }
    p.tables["p2p.ce.graph.bidir"] = bt;
    p.tables["p2p.ce.graph.uni"] = line_table(2.5e-6, 320e9);
    Simulator sim(t, p);
    return on_plan(sim, "allreduce.tree", args2(32 * kMiB), general).result.time.value;
  };
  // Which mode the 8-byte point landed in does not move the prediction (it did by 1.3 us per put).
  EXPECT_DOUBLE_EQ(tree_with(6.6, 0), tree_with(8.4, 0));
  // The slower mode is the base of the size parts: moving it with the large sizes changes nothing either.
  EXPECT_NEAR(tree_with(8.4, 0.5), tree_with(8.4, 0), 1e-9);
}

TEST(ExecPaths, GeneralPathCoalescesAChainBroadcastIntoOneCopy) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = test_params(t);
  Simulator sim(t, p);
  AlgoArgs a = args2(64 * kMiB);
  a.chunk_bytes = kMiB;  // 64 chunks: 64 copy nodes if they were not coalesced
  std::string general = "lowering=plan";
  const Prediction pr = on_plan(sim, "broadcast.pipeline", a, general);
  // Rank 0 only: local fork, then its copies in one stream; at most a local copy and one peer copy.
  const double one_copy = 2e-6 + 4e-6 + p.tables.at("p2p.ce.uni").size_part(double(64 * kMiB)).value;
  EXPECT_LT(pr.result.time.value, one_copy + 3e-6 + 64.0 * kMiB * 2 / 4.0e12 + 1e-6);
  EXPECT_GT(pr.result.time.value, 0.99 * one_copy);
}

TEST(ExecPaths, GeneralPathChargesEventsBetweenGpus) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = test_params(t);
  Simulator sim(t, p);
  std::string general = "lowering=plan";
  const double ring = on_plan(sim, "allreduce.ring", args2(8), general).result.time.value;
  // fork (1 stream per GPU) + put + event + reduce kernel (node + body: 2 us table - 1.5 us launch) + put.
  EXPECT_NEAR(ring, 10e-6 + 4e-6 + 6e-6 + (2e-6 + 0.5e-6) + 4e-6, 0.1e-6);
  // A copy stream and a kernel stream per GPU: the mixed fork (reducescatter.hier on 2 GPUs).
  model::ModelParams q = test_params(t);
  q.exec.fork_mix = {microseconds(30), "test"};
  Simulator sim2(t, q);
  const double hier = on_plan(sim2, "reducescatter.hier", args2(8), "lowering=plan").result.time.value;
  EXPECT_NEAR(hier, 30e-6 + 4e-6 + 6e-6 + 2.5e-6, 0.1e-6);
}

TEST(ExecPaths, MixedForksCountKernelStreamsAfterTheCopyStreams) {
  const topo::Topology t = topo::load_topology("h200x2");
  // The copy-mode all-reduce: per GPU a copy stream in, a reduce kernel stream, a copy stream out (2 + 1).
  std::string copy_mode = "ce_pieces=0,ce_chunk=32M,ce_slots=3";
  auto time_with = [&](double k1_us, double k2_us, double k3_us) {
    model::ModelParams q = test_params(t);
    q.exec.fork_kernel_streams = {
        {{microseconds(k1_us), "test"}, {microseconds(k2_us), "test"}, {microseconds(k3_us), "test"}}};
    Simulator sim(t, q);
    return on_plan(sim, "allreduce.bidir.copy", args2(8), copy_mode).result.time.value;
  };
  const double base = time_with(10, 20, 60);
  // Its kernel stream is a GPU's third stream: it pays the kernel fork's third stream (60 - 20 us), not a first
  // kernel stream's 10 us; graph.fork_both.2 (25 us here) stays whole.
  EXPECT_NEAR(time_with(10, 20, 70) - base, 10e-6, 1e-9);
  EXPECT_NEAR(time_with(10, 25, 60) - base, -5e-6, 1e-9);
  EXPECT_NEAR(time_with(15, 20, 60) - base, 0.0, 1e-9);
}

TEST(ExecPaths, CopyModeForkIsTheMeasuredTwoPlusOneFork) {
  const topo::Topology t = topo::load_topology("h200x2");
  std::string copy_mode = "ce_pieces=0,ce_chunk=32M,ce_slots=3";
  auto time_with = [&](double mix21_us, double k3_us) {
    model::ModelParams q = test_params(t);
    q.exec.fork_kernel_streams = {
        {{microseconds(10), "test"}, {microseconds(20), "test"}, {microseconds(k3_us), "test"}}};
    q.exec.fork_mix21 = {microseconds(mix21_us), "test"};
    Simulator sim(t, q);
    return on_plan(sim, "allreduce.bidir.copy", args2(8), copy_mode).result.time.value;
  };
  // Measured (graph.fork_mix.2_1): the 2 + 1 fork is taken whole, the kernel forks no longer compose it.
  EXPECT_NEAR(time_with(80, 60) - time_with(70, 60), 10e-6, 1e-9);
  EXPECT_NEAR(time_with(80, 90) - time_with(80, 60), 0.0, 1e-9);
  // Not measured (0): composed as before, so the third kernel stream counts again.
  EXPECT_NEAR(time_with(0, 90) - time_with(0, 60), 30e-6, 1e-9);
}

// The kernel modes' pieces are tested in tests/sim/test_paths_bidir.cpp; the copy mode runs on the general lowering.
TEST(ExecPaths, BidirCopyModeIsASchedule) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = test_params(t);
  Simulator sim(t, p);
  const int64_t S = 4 * kMiB;
  // The copy mode is a schedule: both halves cross the link once each way, so at large sizes it costs
  // about the both-ways copy of S.
  const int64_t L = 256 * kMiB;
  const double copy =
      on_plan(sim, "allreduce.bidir.copy", args2(L), "ce_pieces=0,ce_chunk=32M,ce_slots=3").result.time.value;
  const double link = double(L) / 300e9;
  EXPECT_GT(copy, link);
  EXPECT_LT(copy, 1.2 * link);
  EXPECT_THROW(on_plan(sim, "allreduce.bidir.magic", args2(S), ""), Error);
}

TEST(ExecPaths, FusedPathIsOneLaunchAndAFlagHopPerCrossGpuWait) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = test_params(t);
  p.exec.flag_launch = {microseconds(2.5), "test"};
  p.exec.flag_hop = {microseconds(2.0), "test"};
  Simulator sim(t, p);
  std::string fused = "lowering=fused";
  // reduce.direct: rank 0 reads rank 1: launch, the peer's start flag, the op (its bytes cross the route),
  // the end wait of GPU1.
  const double wire = t.route_gpus(0, 1).latency.value;
  const double t8 = on_plan(sim, "reduce.direct", args2(8), fused).result.time.value;
  EXPECT_NEAR(t8, 2.5e-6 + 2.0e-6 + wire + 2.0e-6, 0.05e-6);
  // allreduce.ring: put, a cross-GPU wait, reduce, put: one hop more than the one-op schedule.
  std::string ring = "lowering=fused";
  const double r8 = on_plan(sim, "allreduce.ring", args2(8), ring).result.time.value;
  EXPECT_NEAR(r8, 2.5e-6 + 2.0e-6 + wire + 2.0e-6 + wire + 2.0e-6, 0.05e-6);
}

// The fused path from the profile's measurements of the fused kernel's own ops (fused.step.*, fused.group.*).
model::ModelParams fused_params(const topo::Topology& t, double put_scale = 1.0) {
  model::ModelParams p = test_params(t);
  p.exec.flag_launch = {microseconds(2.5), "test"};
  p.exec.flag_hop = {microseconds(2.0), "test"};
  p.tables["fused.step.put"] = line_table(put_scale * 1.0e-6, 20e9);
  p.tables["fused.step.get"] = line_table(1.5e-6, 15e9);
  p.tables["fused.step.local"] = line_table(0.5e-6, 40e9);
  p.tables["fused.group.put"] = line_table(4e-6, 200e9);
  p.tables["fused.group.get"] = line_table(4.5e-6, 150e9);
  p.tables["fused.group.local"] = line_table(3.5e-6, 400e9);
  p.tables["fused.group_free.put"] = line_table(2.5e-6, 200e9);
  p.tables["fused.group_free.get"] = line_table(3e-6, 150e9);
  p.tables["fused.group_free.local"] = line_table(2e-6, 400e9);
  return p;
}

TEST(ExecPaths, FusedPathFromTheMeasuredOpsOfItsKernel) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = fused_params(t);
  Simulator sim(t, p);
  std::string fused = "lowering=fused";
  auto put = [&](double b) { return p.tables.at("fused.step.put").time(b).value; };
  auto get = [&](double b) { return p.tables.at("fused.step.get").time(b).value; };
  auto local = [&](double b) { return p.tables.at("fused.step.local").time(b).value; };
  // reduce.direct: rank 0 reduces rank 1's input into its output (loads from the peer): launch, GPU1's start
  // flag, the op, GPU1's end wait.
  EXPECT_NEAR(on_plan(sim, "reduce.direct", args2(8), fused).result.time.value, 2.5e-6 + 2e-6 + get(8) + 2e-6, 1e-12);
  // allreduce.ring on 2 GPUs, per lane: put half, (wait for the peer's put) reduce locally (1.5x the bytes of
  // a copy), put the result: launch, start flag, put, hop, reduce, put, end wait.
  const Prediction ring = on_plan(sim, "allreduce.ring", args2(8), fused);
  EXPECT_NEAR(ring.result.time.value, 2.5e-6 + 2e-6 + put(4) + 2e-6 + local(6) + put(4) + 2e-6, 1e-12);
  EXPECT_NE(ring.record.note.find("fused.step.put/get/local"), std::string::npos) << ring.record.note;
  // More ops, more time: a 64 KiB pipelined broadcast in 16 chunks pays 14 more measured op costs (1 us
  // each at least) than in 2 chunks.
  AlgoArgs a16 = args2(64 << 10), a2 = args2(64 << 10);
  a16.chunk_bytes = 4 << 10;
  a2.chunk_bytes = 32 << 10;
  EXPECT_GT(on_plan(sim, "broadcast.pipeline", a16, fused).result.time.value,
            on_plan(sim, "broadcast.pipeline", a2, fused).result.time.value + 14e-6);
  // A launch measured with the op table's load in it (graph.flag_chain_table.2) replaces the bare one.
  model::ModelParams q = fused_params(t);
  q.exec.flag_launch_table = {microseconds(3.5), "test"};
  Simulator with_table(t, q);
  EXPECT_NEAR(on_plan(with_table, "allreduce.ring", args2(8), fused).result.time.value, ring.result.time.value + 1e-6,
              1e-12);
  // The named microbenchmark drives it: slower measured puts, a slower ring by exactly the two puts.
  Simulator slow(t, fused_params(t, 2.0));
  EXPECT_NEAR(on_plan(slow, "allreduce.ring", args2(8), fused).result.time.value - ring.result.time.value, 2 * 1.0e-6,
              1e-12);
}

// With the fused kernel's probes measured (fused.prog.*), a launch costs its direction's probe plus what its
// lanes do beyond the probe's one put: every number below follows from the probes' per-op slopes.
TEST(ExecPaths, FusedPathFromTheKernelsProbes) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = fused_params(t);
  for (const char* m : {"put", "get", "local"})
    p.tables[std::string("fused.step_quiet.") + m] = line_table(0.6e-6, 40e9);
  auto flat = [](double us) {
    model::PathTable tb;
    tb.points = {{8, us * 1e-6}, {2048, us * 1e-6}};
    return tb;
  };
  const double ow0 = 5.0, ex0 = 5.5, local_pre = 0.6, local_post = 0.8, put = 0.7, reduce = 1.0;
  p.tables["fused.prog.oneway.0"] = flat(ow0);
  p.tables["fused.prog.oneway.8"] = flat(ow0 + 8 * local_pre);
  p.tables["fused.prog.exchange.0"] = flat(ex0);
  p.tables["fused.prog.exchange.8"] = flat(ex0 + 8 * local_post);
  p.tables["fused.prog.puts.8"] = flat(ow0 + 8 * put);
  p.tables["fused.prog.reduce.8"] = flat(ex0 + 8 * reduce);
  Simulator sim(t, p);
  std::string fused = "lowering=fused";
  auto us = [&](const char* algo) { return on_plan(sim, algo, args2(8), fused).result.time.us(); };
  // gather: GPU1's put is the one-way probe; GPU0's own copy runs on a lane beside it.
  EXPECT_NEAR(us("gather.direct"), ow0, 1e-9);
  // scatter: GPU0's own copy, then its put, on one lane: the copy is not hidden behind the start flag.
  EXPECT_NEAR(us("scatter.direct"), ow0 + local_pre, 1e-9);
  // all-to-all: both GPUs copy their own block, then put: the two-way probe and a copy.
  EXPECT_NEAR(us("alltoall.direct"), ex0 + local_pre, 1e-9);
  // reduce-scatter ring: put, wait for the peer's put, reduce.
  EXPECT_NEAR(us("reducescatter.ring"), ex0 + reduce, 1e-9);
  // Bruck on 2 ranks: 3 copies, the put, the wait, 3 copies.
  EXPECT_NEAR(us("alltoall.bruck"), ex0 + 3 * local_pre + 3 * local_post, 1e-9);
  // gather at 512 KiB: GPU1's 256 KiB put runs on a group of 8 CTAs (32 KiB each) whose arrivals publish the
  // flag (fused.group_free.put), less the flag's release the probe's put already paid (fused.step - step_quiet).
  const double publish =
      p.tables.at("fused.step.put").time(8).value - p.tables.at("fused.step_quiet.put").time(8).value;
  EXPECT_NEAR(on_plan(sim, "gather.direct", args2(512 << 10), fused).result.time.us(),
              ow0 + (p.tables.at("fused.group_free.put").time(256 << 10).value - publish) * 1e6 - put, 1e-9);
  // Where the first copy of a run was measured apart (oneway.1 / exchange.1), it costs that, the others the slope
  // from there: Bruck's 3 + 3 copies.
  p.tables["fused.prog.oneway.1"] = flat(ow0 + 0.3);
  p.tables["fused.prog.exchange.1"] = flat(ex0 + 0.5);
  Simulator firsts(t, p);
  auto us1 = [&](const char* algo) { return on_plan(firsts, algo, args2(8), fused).result.time.us(); };
  EXPECT_NEAR(us1("scatter.direct"), ow0 + 0.3, 1e-9);
  EXPECT_NEAR(us1("alltoall.bruck"), ex0 + 0.3 + 2 * (8 * local_pre - 0.3) / 7 + 0.5 + 2 * (8 * local_post - 0.5) / 7,
              1e-9);
  // Two-way programs take their first copy before the wait from exchange_pre.1 where measured; one-way ones
  // keep oneway.1's.
  p.tables["fused.prog.exchange_pre.1"] = flat(ex0 + 0.9);
  Simulator pre(t, p);
  auto us2 = [&](const char* algo) { return on_plan(pre, algo, args2(8), fused).result.time.us(); };
  EXPECT_NEAR(us2("alltoall.direct"), ex0 + 0.9, 1e-9);
  EXPECT_NEAR(us2("scatter.direct"), ow0 + 0.3, 1e-9);
  EXPECT_NEAR(us2("alltoall.bruck"), ex0 + 0.9 + 2 * (8 * local_pre - 0.3) / 7 + 0.5 + 2 * (8 * local_post - 0.5) / 7,
              1e-9);
  // A lane's first reduction (after its wait) from reduce.1 where measured: the 2-rank reduce-scatter's one.
  p.tables["fused.prog.reduce.1"] = flat(ex0 + 1.4);
  Simulator red(t, p);
  EXPECT_NEAR(on_plan(red, "reducescatter.ring", args2(8), fused).result.time.us(), ex0 + 1.4, 1e-9);
  const Prediction a2a = on_plan(sim, "alltoall.direct", args2(8), fused);
  EXPECT_NE(a2a.record.note.find("fused.prog.exchange.0"), std::string::npos) << a2a.record.note;
}

// A GPU's lanes share its NVLink port: however many channels the fused path spreads a ring over, it moves no
// faster than the port carries the bytes (all-gather on 4 GPUs: each GPU stores 3/4 of the output into its next
// peer, at the SM copies' top rate), and the note says so where that floor sets the time.
TEST(ExecPaths, FusedChannelsShareTheirGpusPort) {
  const model::Target target = model::resolve_target(std::string(CCLAB_SOURCE_DIR) + "/profiles/h200x4.json");
  Simulator sim(target.topology, target.params);
  const model::PathTable* store = target.params.table("p2p.sm_store.uni");
  ASSERT_TRUE(store && !store->empty());
  const double rate = double(store->points.back().first) / store->points.back().second;
  AlgoArgs a = args2(128 << 20);
  a.nranks = 4;
  const double floor_us = 0.75 * double(128 << 20) / rate * 1e6;
  for (const char* tune : {"lowering=fused", "lowering=fused,channels=8"}) {
    const Prediction p = on_plan(sim, "allgather.ring", a, tune);
    EXPECT_GE(p.result.time.us(), floor_us * (1 - 1e-9)) << tune << ": " << p.record.note;
  }
  const Prediction wide = on_plan(sim, "allgather.ring", a, "lowering=fused,channels=8");
  EXPECT_NEAR(wide.result.time.us(), floor_us, 1e-6 * floor_us);
  EXPECT_NE(wide.record.note.find("busiest NVLink port direction"), std::string::npos) << wide.record.note;
  // Small messages stay with the per-op model: the floor is far below it.
  const Prediction small = on_plan(sim, "allgather.ring", args2(64 << 10), "lowering=fused");
  EXPECT_EQ(small.record.note.find("busiest NVLink port direction"), std::string::npos) << small.record.note;
}

// Where the profile measured every GPU storing into all its peers at once (p2p.sm_store.fanout, 3 or more GPUs), a
// GPU that stores into several peers moves its bytes at that rate: the all-to-all's floor follows it, the ring's
// (one peer out, one in) does not.
TEST(ExecPaths, FusedStoresIntoSeveralPeersAtTheFanoutRate) {
  const model::Target target = model::resolve_target(std::string(CCLAB_SOURCE_DIR) + "/profiles/h200x4.json");
  model::ModelParams p = target.params;
  const model::PathTable* store = p.table("p2p.sm_store.uni");
  ASSERT_TRUE(store && !store->empty());
  const double one_peer = double(store->points.back().first) / store->points.back().second;
  const double fanout = 0.8 * one_peer;
  const int64_t top = store->points.back().first;
  p.tables["p2p.sm_store.fanout"] =
      model::PathTable{{{1 << 20, double(1 << 20) / fanout}, {top, double(top) / fanout}}};
  AlgoArgs a = args2(128 << 20);
  a.nranks = 4;
  Simulator before(target.topology, target.params), after(target.topology, p);
  const Prediction a2a0 = on_plan(before, "alltoall.direct", a, "lowering=fused");
  const Prediction a2a = on_plan(after, "alltoall.direct", a, "lowering=fused");
  EXPECT_NEAR(a2a.result.time.us(), 0.75 * double(128 << 20) / fanout * 1e6, 1e-3) << a2a.record.note;
  EXPECT_GT(a2a.result.time.us(), a2a0.result.time.us());
  EXPECT_NE(a2a.record.note.find("p2p.sm_store.fanout"), std::string::npos) << a2a.record.note;
  const Prediction ring0 = on_plan(before, "allgather.ring", a, "lowering=fused,channels=8");
  const Prediction ring = on_plan(after, "allgather.ring", a, "lowering=fused,channels=8");
  EXPECT_DOUBLE_EQ(ring.result.time.us(), ring0.result.time.us()) << ring.record.note;
}

// An op with per-CTA flags is priced as its CTAs alone, each CTA's share at a lone CTA's cost, and no faster than
// the link's SM-store rate: a 4-GPU all-gather ring of 8 MiB (3 steps of a 2 MiB block each) costs less than with
// group flags, and at least its steps' blocks at that rate one after another.
TEST(ExecPaths, FusedOpsWithPerCtaFlagsWithinTheLinkRate) {
  const model::Target target = model::resolve_target(std::string(CCLAB_SOURCE_DIR) + "/profiles/h200x4.json");
  const model::PathTable* store = target.params.table("p2p.sm_store.uni");
  ASSERT_TRUE(store && !store->empty());
  const double rate = double(store->points.back().first) / store->points.back().second;
  Simulator sim(target.topology, target.params);
  AlgoArgs a = args2(8 << 20);
  a.nranks = 4;
  const Prediction sliced = on_plan(sim, "allgather.ring", a, "lowering=fused");
  const Prediction group = on_plan(sim, "allgather.ring", a, "lowering=fused,fused_slices=0");
  EXPECT_NE(sliced.record.note.find("per-CTA"), std::string::npos) << sliced.record.note;
  EXPECT_EQ(group.record.note.find("per-CTA"), std::string::npos) << group.record.note;
  EXPECT_LT(sliced.result.time.us(), group.result.time.us());
  EXPECT_GE(sliced.result.time.us(), 3 * double(2 << 20) / rate * 1e6);
}

// A lane's flag is released once its stores are acknowledged; the probes publish into one peer, so a lane that
// publishes into one further GPU after another with no wait between (scatter.direct's root: a put into each of 3
// peers) adds a round trip (latency.flag) per further GPU; a lane publishing into one peer adds none.
TEST(ExecPaths, FusedPublishesIntoFurtherGpusWaitForTheirStores) {
  const model::Target target = model::resolve_target(std::string(CCLAB_SOURCE_DIR) + "/profiles/h200x4.json");
  auto us = [&](const char* algo, int ranks, double rtt_us) {
    model::ModelParams p = target.params;
    p.exec.flag_rtt = {microseconds(rtt_us), "test"};
    Simulator sim(target.topology, p);
    AlgoArgs a = args2(64);  // 16 floats: a block per rank
    a.nranks = ranks;
    return on_plan(sim, algo, a, "lowering=fused").result.time.us();
  };
  EXPECT_NEAR(us("scatter.direct", 4, 1.5) - us("scatter.direct", 4, 0.0), 2 * 1.5, 1e-9);
  EXPECT_NEAR(us("scatter.direct", 2, 1.5) - us("scatter.direct", 2, 0.0), 0.0, 1e-9);  // one peer: the probes'
}

TEST(ExecPaths, FusedOpsThatStoreNoFlagAtTheirOwnMeasurement) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = fused_params(t);
  Simulator before(t, p);
  std::string fused = "lowering=fused";
  const double ring0 = on_plan(before, "allreduce.ring", args2(8), fused).result.time.value;
  for (const char* m : {"put", "get", "local"})
    p.tables[std::string("fused.step_quiet.") + m] = line_table(0.1e-6, 40e9);
  Simulator after(t, p);
  // In the 2-rank ring only the reduce stores no flag (the peer waits for the first put, its end wait for the
  // last): it alone moves to fused.step_quiet.local.
  const Prediction ring = on_plan(after, "allreduce.ring", args2(8), fused);
  EXPECT_NEAR(ring0 - ring.result.time.value,
              p.tables.at("fused.step.local").time(6).value - p.tables.at("fused.step_quiet.local").time(6).value,
              1e-12);
  EXPECT_NE(ring.record.note.find("2 ops without a flag"), std::string::npos) << ring.record.note;
}

TEST(ExecPaths, FusedWaitsWithinAGpuCostTheMeasuredLocalFlagWait) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = fused_params(t);  // group.local - group_free.local = 1.5 us; the cross-GPU hop 2 us
  std::string fused = "lowering=fused";
  Simulator with(t, p);
  const double tree = on_plan(with, "allreduce.tree", args2(8), fused).result.time.value;
  for (const char* m : {"put", "get", "local"}) p.tables.erase(std::string("fused.group_free.") + m);
  Simulator without(t, p);
  // 2-rank tree: on each GPU a reduce lane and a put lane; the put waits for its own GPU's reduce.
  EXPECT_NEAR(on_plan(without, "allreduce.tree", args2(8), fused).result.time.value - tree, 0.5e-6, 1e-12);
}

// Every fused record's note says how the executor encoded it (CTAs of the largest launch, flag waits):
// the model's layout must be the same.
TEST(ExecPaths, FusedLayoutMatchesEveryFusedRecordsNote) {
  const std::string dir = std::string(CCLAB_SOURCE_DIR) + "/results/h200x2";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no results/h200x2";
  const topo::Topology t = topo::load_topology("h200x2");
  model::Target target = model::resolve_target("h200x2");
  target.params = fused_params(t);
  RowPredictor predictor(target);
  auto number_before = [](const std::string& s, const std::string& key) -> long {
    const size_t at = s.find(key);
    if (at == std::string::npos) return -1;
    size_t b = at;
    while (b > 0 && std::isdigit(static_cast<unsigned char>(s[b - 1]))) --b;
    return std::stol(s.substr(b, at - b));
  };
  int checked = 0;
  for (const Record& r : read_records(dir)) {
    if (r.note.find("lowering=fused") == std::string::npos || r.in_place || r.backend != "gpu") continue;
    const Record p = predictor.predict(r);
    EXPECT_EQ(number_before(p.note, " CTAs per GPU"), number_before(r.note, " CTAs x")) << r.algo << " " << r.bytes;
    EXPECT_EQ(number_before(p.note, " flag waits, ops"), number_before(r.note, " flag waits"))
        << r.algo << " " << r.bytes;
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST(ExecPaths, FusedLanesAndGroupWaitsAsTheExecutorEncodesThem) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = fused_params(t);
  Simulator sim(t, p);
  std::string fused = "lowering=fused";
  // 512 KiB: ops of 256 KiB, 8 CTAs per lane (the record's note says "up to 8 CTAs"); the put of the reduced
  // half reads what the reduce wrote: a group wait, costed at fused.group.put.
  const Prediction big = on_plan(sim, "allreduce.ring", args2(512 << 10), fused);
  EXPECT_NE(big.record.note.find("up to 8 CTAs"), std::string::npos) << big.record.note;
  EXPECT_NE(big.record.note.find("2 group waits"), std::string::npos) << big.record.note;  // one per lane
  // The other ops of those lanes wait for nothing of their own lane: fused.group_free.*.
  EXPECT_NE(big.record.note.find("4 CTA-group ops at fused.group_free"), std::string::npos) << big.record.note;
  // Per lane: put (no wait of its own), hop, reduce (waits for the peer's put), put of the reduced half
  // (waits for the reduce: a group wait); launch, start flag and end wait around them.
  const double h = 2e-6;
  EXPECT_NEAR(big.result.time.value,
              2.5e-6 + h + p.tables.at("fused.group_free.put").time(256 << 10).value + h +
                  p.tables.at("fused.group_free.local").time(1.5 * (256 << 10)).value +
                  p.tables.at("fused.group.put").time(256 << 10).value + h,
              1e-12);
  // Below 32 KiB per op a lane keeps one CTA (and no group wait).
  const Prediction small = on_plan(sim, "allreduce.ring", args2(32 << 10), fused);
  EXPECT_NE(small.record.note.find("up to 1 CTAs"), std::string::npos) << small.record.note;
  EXPECT_EQ(small.record.note.find("group waits"), std::string::npos) << small.record.note;
  // Without the fused op tables (older profiles) the flow model of the fused path still answers.
  model::ModelParams q = test_params(t);
  Simulator old(t, q);
  EXPECT_GT(on_plan(old, "allreduce.ring", args2(8), fused).result.time.value, 0);
}

TEST(ExecPaths, GeneralPathUsesTheGraphShapesMeasuredForIt) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = test_params(t);
  std::string general = "lowering=plan";
  Simulator before(t, p);
  const double reduce0 = on_plan(before, "reduce.direct", args2(16), general).result.time.value;
  const double gather0 = on_plan(before, "allgather.ring", args2(16), general).result.time.value;
  const double tree0 = on_plan(before, "allreduce.tree", args2(16), general).result.time.value;
  // graph.fork_reduce_peer: the peer-reading reduce node; graph.fork_both_mix.1: a local then a peer copy on
  // a stream of each GPU (10 us beyond graph.fork_both.1 here); graph.fork_mix_chain.1: kernel -> copy edge.
  p.exec.reduce_peer_node = {microseconds(7), "test"};
  p.exec.fork_both_mix = {microseconds(20), "test"};
  p.exec.local_edge_busy = {microseconds(3), "test"};
  Simulator after(t, p);
  // reduce.direct on 2 ranks: the root's kernel reads its peer; fork to one stream of GPU0 (2 us) + the node.
  EXPECT_NEAR(on_plan(after, "reduce.direct", args2(16), general).result.time.value, 2e-6 + 7e-6, 0.05e-6);
  EXPECT_NE(reduce0, 9e-6);
  // allgather.ring on 2 ranks: each GPU's stream copies its own part, then puts it into the peer.
  EXPECT_NEAR(on_plan(after, "allgather.ring", args2(16), general).result.time.value - gather0, 10e-6, 0.05e-6);
  // allreduce.tree on 2 ranks: each GPU's put waits for its reduce kernel on another stream.
  EXPECT_GT(on_plan(after, "allreduce.tree", args2(16), general).result.time.value, tree0 + 2.9e-6);
  // reducescatter.hier on 2 ranks: each GPU's reduce kernel waits for the other GPU's put: the measured
  // cross-GPU edge of that shape (graph.fork_mix_cross.1) instead of graph.fork_both.1's (6 us here).
  const double hier0 = on_plan(after, "reducescatter.hier", args2(16), general).result.time.value;
  p.exec.event_peer_mix = {microseconds(1), "test"};
  Simulator mix(t, p);
  EXPECT_NEAR(on_plan(mix, "reducescatter.hier", args2(16), general).result.time.value, hier0 - 5e-6, 0.05e-6);
}

TEST(ExecPaths, GpuZeroOnlyStreamTakesItsForkAndMixFromTheHeldPlans) {
  const topo::Topology t = topo::load_topology("h200x2");
  std::string general = "lowering=plan";
  auto sized = [](double base_us, double rate) {  // 1, 4, 16 MiB, as calibrate times the held.* plans
    model::PathTable tb;
    for (int64_t b : {kMiB, 4 * kMiB, 16 * kMiB}) tb.points.push_back({b, base_us * 1e-6 + double(b) / rate});
    return tb;
  };
  auto scatter = [&](double fork_us, double mix_us, double gated_mix_us) {
    model::ModelParams p = test_params(t);
    p.tables["copy.local.graph"] = line_table(1e-6, 2000e9);
    p.exec.fork_local_mix = {microseconds(gated_mix_us), "test"};
    p.tables["held.copy"] = sized(2.5, 300e9);
    p.tables["held.fork_copy"] = sized(2.5 + fork_us, 300e9);
    model::PathTable mix = sized(2.5 + fork_us + mix_us, 300e9);
    for (auto& [b, sec] : mix.points) sec += p.tables.at("copy.local.graph").time(double(b)).value;
    p.tables["held.fork_local_mix"] = mix;
    Simulator sim(t, p);
    return on_plan(sim, "scatter.direct", args2(2 * kMiB), general).result.time.value;
  };
  // scatter on 2 ranks: one GPU0 stream, a local copy then the put. The fork and the mixed stream's extra
  // come from the plans timed at MiB sizes; the gated 8-byte graph.fork_local_mix no longer counts.
  const double base = scatter(1, 5, 4);
  EXPECT_NEAR(scatter(1, 8, 4) - base, 3e-6, 1e-9);
  EXPECT_NEAR(scatter(2, 5, 4) - base, 1e-6, 1e-9);
  EXPECT_NEAR(scatter(1, 5, 16) - base, 0.0, 1e-12);
}

TEST(ExecPaths, GpuZeroSecondStreamAddsItsHeldExtraAtThePeerCopysSize) {
  const topo::Topology t = topo::load_topology("h200x2");
  std::string general = "lowering=plan";
  // The second stream adds k x (4, 1, 0.25) us to the held peer copy's plan at 1, 4, 16 MiB.
  auto broadcast = [&](double k, int64_t bytes) {
    model::ModelParams p = test_params(t);
    p.tables["copy.local.graph"] = line_table(1e-6, 2000e9);
    model::PathTable copy, fork, two;
    for (auto [b, x_us] : {std::pair{kMiB, 4.0}, {4 * kMiB, 1.0}, {16 * kMiB, 0.25}}) {
      copy.points.push_back({b, 2.5e-6 + double(b) / 300e9});
      fork.points.push_back({b, 3.5e-6 + double(b) / 300e9});  // the fork of one stream: 1 us
      two.points.push_back({b, fork.points.back().second + k * x_us * 1e-6});
    }
    p.tables["held.copy"] = copy;
    p.tables["held.fork_copy"] = fork;
    p.tables["held.fork_local2"] = two;
    p.exec.fork_local2 = {microseconds(30), "test"};  // the gated 8-byte fork: no longer counted
    Simulator sim(t, p);
    return on_plan(sim, "broadcast.binomial", args2(bytes), general);
  };
  // broadcast on 2 ranks: GPU0's local copy on one stream, its put on another; between the sizes measured the
  // extra follows them log-log (2 us at 2 MiB, 0.5 at 8 MiB), beyond the largest it stays.
  EXPECT_NEAR(broadcast(2, 2 * kMiB).result.time.value - broadcast(1, 2 * kMiB).result.time.value, 2e-6, 1e-9);
  EXPECT_NEAR(broadcast(2, 8 * kMiB).result.time.value - broadcast(1, 8 * kMiB).result.time.value, 0.5e-6, 1e-9);
  EXPECT_NEAR(broadcast(2, 64 * kMiB).result.time.value - broadcast(1, 64 * kMiB).result.time.value, 0.25e-6, 1e-9);
  EXPECT_LT(broadcast(1, 32 * kMiB).result.time.value, 1e-6 + 2.5e-6 + double(32 * kMiB) / 300e9 + 2e-6);
  const Prediction b = broadcast(1, 2 * kMiB);
  EXPECT_NE(b.record.note.find("second stream +"), std::string::npos) << b.record.note;
}

TEST(ExecPaths, LocalCopiesAtTheColdTableOncePlansOutgrowL2) {
  const topo::Topology t = topo::load_topology("h200x2");
  std::string general = "lowering=plan";
  model::ModelParams p = test_params(t);
  // One source and destination repeated: 2000 GB/s up to 16 MiB (in L2), 1000 GB/s from 32 MiB, as cold.
  model::PathTable hot, cold;
  for (int64_t b = 64 << 10; b <= (int64_t(1) << 30); b *= 2) {
    cold.points.push_back({b, 1e-6 + double(b) / 1000e9});
    hot.points.push_back({b, 1e-6 + double(b) / (b <= 16 * kMiB ? 2000e9 : 1000e9)});
  }
  p.tables["copy.local.graph"] = hot;
  Simulator hot_only(t, p);
  auto time = [&](Simulator& sim, int64_t bytes) {
    return on_plan(sim, "scatter.direct", args2(bytes), general).result.time.value;
  };
  p.tables["copy.local.graph.cold"] = cold;
  Simulator sim(t, p);
  // scatter of 32 MiB on 2 ranks: GPU0 copies its own 16 MiB locally, then puts 16 MiB; its buffers
  // (32 + 16 MiB) outgrow two 16 MiB copies: the local copy at the cold rate, 1000 instead of 2000 GB/s.
  EXPECT_NEAR(time(sim, 32 * kMiB) - time(hot_only, 32 * kMiB), double(16 * kMiB) / 2000e9, 0.3e-6);
  // 8 MiB (12 MiB of buffers): in L2, hot.
  EXPECT_DOUBLE_EQ(time(sim, 8 * kMiB), time(hot_only, 8 * kMiB));
}

TEST(ExecPaths, NcclOnTwoGpusIsItsMeasuredTransport) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = test_params(t);
  Simulator sim(t, p);
  std::string nccl = "";
  const int64_t S = 8 * kMiB;
  EXPECT_NEAR(on_plan(sim, "allgather.nccl", args2(S), nccl).result.time.value,
              p.tables.at("nccl.p2p.bidir").time(S / 2.0).value, 1e-12);
  EXPECT_NEAR(on_plan(sim, "broadcast.nccl", args2(S), nccl).result.time.value,
              p.tables.at("nccl.p2p.uni").time(double(S)).value, 1e-12);
  EXPECT_NEAR(on_plan(sim, "allreduce.nccl", args2(S), nccl).result.time.value,
              p.tables.at("nccl.p2p.bidir").time(double(S)).value, 1e-12);
  // Without the measurement: the NCCL tuning model (a positive time, not the table).
  model::ModelParams q = test_params(t);
  q.tables.erase("nccl.p2p.bidir");
  Simulator sim2(t, q);
  EXPECT_GT(sim::predict(sim2, find_algorithm("allgather.nccl"), args2(S)).result.time.value, 0);
}

TEST(ExecPaths, NcclRecordsTakeTheirLaunchesPerReplay) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = test_params(t);
  p.tables["nccl.p2p.graph.uni"] = line_table(5e-6, 200e9);
  p.tables["nccl.p2p.graph.bidir"] = line_table(6e-6, 180e9);
  // A repeat at the records' count (older profiles carry one) is a diagnostic: not read.
  p.tables["nccl.p2p.graph.bidir.n100"] = line_table(50e-6, 180e9);
  model::PathTable replay;  // per launch 1 us + 20 us per replay spread over N launches
  for (int n : {5, 20, 100}) replay.points.push_back({n, 1e-6 + 20e-6 / n});
  p.tables["bidir.replay"] = replay;
  Simulator sim(t, with_conditions(p));
  std::string nccl = "";
  nccl = "launches=100";
  const int64_t S = 8 * kMiB;
  // Both ways and one way: the 20-launch series less the replay's cost of 20 us x (1/20 - 1/100).
  EXPECT_NEAR(on_plan(sim, "allgather.nccl", args2(S), nccl).result.time.value,
              p.tables.at("nccl.p2p.graph.bidir").time(S / 2.0).value - 20e-6 * (1.0 / 20 - 1.0 / 100), 1e-12);
  EXPECT_NEAR(on_plan(sim, "broadcast.nccl", args2(S), nccl).result.time.value,
              p.tables.at("nccl.p2p.graph.uni").time(double(S)).value - 20e-6 * (1.0 / 20 - 1.0 / 100), 1e-12);
  // 20 launches (or none recorded): the 20-launch series as they are.
  nccl = "launches=20";
  EXPECT_NEAR(on_plan(sim, "allgather.nccl", args2(S), nccl).result.time.value,
              p.tables.at("nccl.p2p.graph.bidir").time(S / 2.0).value, 1e-12);
}

// On more than 2 ranks NCCL's chains overlap consecutive calls: among 100 launches per replay a broadcast costs
// less per call than one alone, and never less than its bytes over one link; a ring (every rank ends with the
// call) is the same either way.
TEST(ExecPaths, NcclChainsOverlapBackToBackCalls) {
  const topo::Topology t = topo::load_topology("hgx-h200");
  Simulator sim(t, model::defaults_for(t));
  AlgoArgs a;
  a.nranks = 4;
  a.count = 8 * kMiB / 4;
  auto time_at = [&](const char* algo, const char* launches) {
    AlgoArgs b = a;
    b.tune = launches;
    return sim::predict(sim, find_algorithm(algo), b).result.time.value;
  };
  const double alone = time_at("broadcast.nccl", "launches=1"), among = time_at("broadcast.nccl", "launches=100");
  EXPECT_LT(among, 0.9 * alone);
  EXPECT_GT(among, 8.0 * kMiB / 450e9);  // NVLink 4: 450 GB/s a direction
  EXPECT_LT(time_at("reduce.nccl", "launches=100"), time_at("reduce.nccl", "launches=1"));
  EXPECT_NEAR(time_at("allgather.nccl", "launches=100"), time_at("allgather.nccl", "launches=1"), 1e-12);
  a.nranks = 2;  // one hop: nothing to overlap, and 2 GPUs price NCCL from their measurements where they have them
  a.count = 8 * kMiB / 4;
  EXPECT_NEAR(time_at("broadcast.nccl", "launches=100"), time_at("broadcast.nccl", "launches=1"), 1e-12);
}

// With send/recv timed at each protocol pinned, a ring collective is send/recv of the protocol NCCL's tuner
// picks (on 2 H200s: LL up to ~1.7 MiB for all-reduce, ~2.1 MiB for all-gather, ~1.07 MiB for broadcast, by
// NCCL's own latency + bytes / bandwidth), all-reduce one flight later; Simple rings pay what their steps'
// byte streams cost beyond send/recv's.
TEST(ExecPaths, NcclPinnedProtocolsFollowNcclsTuner) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = test_params(t);
  p.tables["nccl.p2p.graph.uni"] = line_table(5e-6, 200e9);
  p.tables["nccl.p2p.graph.bidir"] = line_table(6e-6, 180e9);
  const int64_t k64M = 64 * kMiB;
  p.tables["nccl.p2p.ll.graph.uni"] = line_table(5e-6, 100e9, k64M);
  p.tables["nccl.p2p.ll.graph.bidir"] = line_table(5.5e-6, 90e9, k64M);
  p.tables["nccl.p2p.simple.graph.uni"] = line_table(9e-6, 300e9, k64M);
  p.tables["nccl.p2p.simple.graph.bidir"] = line_table(10e-6, 280e9, k64M);
  p.sync_latency = {microseconds(0.8), "test"};
  Simulator sim(t, with_conditions(p));
  std::string nccl = "";
  nccl = "launches=100";
  auto pred = [&](const char* algo, int64_t S) { return on_plan(sim, algo, args2(S), nccl).result.time.value; };
  const auto& ll_bi = p.tables.at("nccl.p2p.ll.graph.bidir");
  const auto& s_bi = p.tables.at("nccl.p2p.simple.graph.bidir");
  // All-reduce on LL reduces in each channel's CTA: send/recv's size part at its 16 channels (1 MiB to one peer
  // between 2 ranks) against the collective's 24.
  const double ll_part = ll_bi.time(double(kMiB)).value - ll_bi.points.front().second;
  EXPECT_NEAR(pred("allreduce.nccl", kMiB), ll_bi.time(double(kMiB)).value - ll_part * (1 - 16.0 / 24) + 0.8e-6, 1e-12);
  EXPECT_NEAR(pred("allreduce.nccl", 2 * kMiB), s_bi.time(double(2 * kMiB)).value + 0.8e-6, 1e-12);
  // Up to 16 bytes NCCL's second 16-byte chunk is empty: its steps move nothing, the data crosses one way per step.
  const auto& ll_uni = p.tables.at("nccl.p2p.ll.graph.uni");
  EXPECT_NEAR(pred("allreduce.nccl", 16), ll_uni.time(16.0).value + 0.8e-6, 1e-12);
  EXPECT_NEAR(pred("allreduce.nccl", 32), ll_bi.time(32.0).value + 0.8e-6, 1e-12);
  EXPECT_LT(pred("allreduce.nccl", 16), pred("allreduce.nccl", 32));
  EXPECT_NEAR(pred("allgather.nccl", 2 * kMiB), ll_bi.time(double(kMiB)).value, 1e-12);
  EXPECT_NEAR(pred("allgather.nccl", 4 * kMiB), s_bi.time(double(2 * kMiB)).value, 1e-12);
  EXPECT_NEAR(pred("broadcast.nccl", kMiB), p.tables.at("nccl.p2p.ll.graph.uni").time(double(kMiB)).value, 1e-12);
  EXPECT_NEAR(pred("broadcast.nccl", 2 * kMiB), p.tables.at("nccl.p2p.simple.graph.uni").time(double(2 * kMiB)).value,
              1e-12);
  // All-gather's copy beside its send: send/recv's time scaled by copy-and-send over send, two kernels of the
  // same shape; reduce-scatter (its reduction beside the send) the same.
  p.tables["bidir.step.send.g24"] = line_table(3e-6, 300e9);
  p.tables["bidir.step.copysend.g24"] = line_table(3e-6, 200e9);
  Simulator sim2(t, with_conditions(p));
  const double S2 = double(8 * kMiB) / 2;
  const double ratio =
      p.tables.at("bidir.step.copysend.g24").time(S2).value / p.tables.at("bidir.step.send.g24").time(S2).value;
  ASSERT_GT(ratio, 1.2);
  for (const char* algo : {"allgather.nccl", "reducescatter.nccl"})
    EXPECT_NEAR(on_plan(sim2, algo, args2(8 * kMiB), nccl).result.time.value, s_bi.time(S2).value * ratio, 1e-12)
        << algo;
}

TEST(ExecPaths, ProfileTablesRoundTrip) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = test_params(t);
  const std::string path = ::testing::TempDir() + "cclab_paths_profile.json";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    const std::string j = model::profile_json(p);
    std::fwrite(j.data(), 1, j.size(), f);
    std::fclose(f);
  }
  const model::ModelParams back = model::load_profile(path, model::defaults_for(t));
  ASSERT_NE(back.table("p2p.ce.bidir"), nullptr);
  EXPECT_EQ(back.table("p2p.ce.bidir")->points, p.tables.at("p2p.ce.bidir").points);
  EXPECT_DOUBLE_EQ(back.exec.fork_streams[1].value.value, 25e-6);
  EXPECT_DOUBLE_EQ(back.exec.event_peer.value.value, 6e-6);
}

}  // namespace
TEST(ExecPaths, FullMatmulAtTheRestedRateWhereMeasured) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = test_params(t);
  // Back to back: 600 TFLOP/s; after a rest: 700, measured from 1e11 FLOPs on.
  model::PathTable mm, rested;
  for (double f : {1e9, 1e10, 1e11, 1e12}) mm.points.push_back({int64_t(f), f / 600e12});
  for (double f : {1e11, 1e12}) rested.points.push_back({int64_t(f), f / 700e12});
  p.tables["matmul.half"] = mm;
  p.tables["matmul.half.rested"] = rested;
  Simulator sim(t, p);
  auto time = [&](const char* algo, int64_t m, int64_t k, int64_t n) {
    AlgoArgs a;
    a.nranks = 2;
    a.dtype = DType::f16;
    a.shape = {m, k, n};
    a.count = 2 * m * k;  // the gathered A, (m D) x k
    return predict_matmul_reference(sim, algo, a).result.time.value;
  };
  const double full = 2.0 * 8192 * 8192 * 8192, shard = 2.0 * 4096 * 8192 * 8192;
  EXPECT_NEAR(time("matmul.cublas_full", 4096, 8192, 8192), full / 700e12, 1e-9);
  // The shards follow the full product: back to back.
  EXPECT_NEAR(time("matmul.cublas_shard_x2", 4096, 8192, 8192), 2 * shard / 600e12, 1e-9);
  // A full product below the rested table's smallest: the back-to-back rate.
  const double small = 2.0 * 2048 * 1024 * 1024;
  EXPECT_NEAR(time("matmul.cublas_full", 1024, 1024, 1024), small / 600e12, 1e-9);
}

}  // namespace cclab::sim
