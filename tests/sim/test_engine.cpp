// The simulator engine on hand-built schedules: α-β of one transfer, max-min sharing, channel order,
// dependencies and their latencies, local work at memory bandwidth, matmul at the tensor rate, and
// refusal of schedules that cannot finish.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/transport.hpp"
#include "core/error.hpp"
#include "model/params.hpp"
#include "sim/simulator.hpp"
#include "sim/trace.hpp"
#include "topology/topology.hpp"

namespace cclab::sim {
namespace {

constexpr double kBw = 100e9;    // 100 GB/s links
constexpr double kAlpha = 2e-6;  // 2 µs per hop
constexpr int64_t kMiB = 1 << 20;

Schedule empty_schedule(int n) {
  Schedule s;
  s.algo = "test";
  s.collective = "test";
  s.nranks = n;
  s.buffers.assign(size_t(n), BufferSizes{1 << 30, 1 << 30, 1 << 30});
  return s;
}

topo::Topology uniform(int n) { return topo::make_uniform(n, BytesPerSec(kBw), Seconds(kAlpha)); }

// Rank 0 puts 8 MiB into rank 1 on channel 0 and another 8 MiB on channel 1: two copies into one peer at once.
void two_puts_into_one_peer(Transport& tr) {
  tr.put(0, in(0), out(1), 8 * kMiB, {}, 0);
  tr.put(0, in(0, 8 * kMiB), out(1, 8 * kMiB), 8 * kMiB, {}, 1);  // other channel: concurrent
}

TEST(SimEngine, OneTransferCostsAlphaPlusBytesOverBandwidth) {
  auto t = uniform(2);
  Simulator sim(t, model::ModelParams::ideal());
  Schedule s = empty_schedule(2);
  Transport tr(s);
  tr.put(0, in(0), out(1), 8 * kMiB);
  const SimResult r = sim.run(s);
  EXPECT_NEAR(r.time.value, kAlpha + 8.0 * kMiB / kBw, 1e-12);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_DOUBLE_EQ(r.ops[0].start, 0.0);
  EXPECT_EQ(r.flows, 1);
}

TEST(SimEngine, FlowsOnOneLinkShareItFairly) {
  auto t = uniform(2);
  Simulator sim(t, model::ModelParams::ideal());
  Schedule s = empty_schedule(2);
  Transport tr(s);
  two_puts_into_one_peer(tr);
  const SimResult r = sim.run(s);
  // Two flows of S on one link finish together after 2S/B.
  EXPECT_NEAR(r.time.value, kAlpha + 16.0 * kMiB / kBw, 1e-12);
  EXPECT_NEAR(r.ops[0].end, r.ops[1].end, 1e-15);
  // The link ran at full rate all along.
  ASSERT_FALSE(r.resources.empty());
  EXPECT_NEAR(r.bottleneck_utilisation, (16.0 * kMiB / kBw) / r.time.value, 1e-9);
}

// Copy-engine copies into one peer run one at a time, in the order they become ready: the first of two ends as
// it would alone, the second after both; a copy into another peer and the peer's copies back do not wait.
TEST(SimEngine, CopiesIntoOnePeerRunInIssueOrderWhenAsked) {
  auto t = uniform(3);
  Simulator sim(t, model::ModelParams::ideal());
  Schedule s = empty_schedule(3);
  Transport tr(s);
  two_puts_into_one_peer(tr);
  tr.put(0, in(0), out(2), 8 * kMiB, {}, 2);  // another peer
  tr.put(1, in(1), out(0), 8 * kMiB, {}, 0);  // the other direction
  RunOptions ro;
  ro.copies_in_issue_order = true;
  const SimResult r = sim.run(s, ro);
  const double one = kAlpha + 8.0 * kMiB / kBw;
  EXPECT_NEAR(std::min(r.ops[0].end, r.ops[1].end), one, 1e-12);
  EXPECT_NEAR(std::max(r.ops[0].end, r.ops[1].end), one + 8.0 * kMiB / kBw, 1e-12);
  EXPECT_NEAR(r.ops[2].end, one, 1e-12);
  EXPECT_NEAR(r.ops[3].end, one, 1e-12);
  // Without it they share the link and end together.
  const SimResult fair = sim.run(s);
  EXPECT_NEAR(fair.ops[0].end, fair.ops[1].end, 1e-15);
  EXPECT_NEAR(fair.ops[0].end, kAlpha + 16.0 * kMiB / kBw, 1e-12);
}

TEST(SimEngine, ShortFlowLeavesAndTheLongOneSpeedsUp) {
  auto t = uniform(2);
  Simulator sim(t, model::ModelParams::ideal());
  Schedule s = empty_schedule(2);
  Transport tr(s);
  tr.put(0, in(0), out(1), 4 * kMiB, {}, 0);
  tr.put(0, in(0), out(1), 12 * kMiB, {}, 1);
  const SimResult r = sim.run(s);
  // Both at B/2 until the short one drained 4 MiB (at 8 MiB/B), then the long one alone: total 16 MiB/B.
  EXPECT_NEAR(r.ops[0].end, kAlpha + 8.0 * kMiB / kBw, 1e-12);
  EXPECT_NEAR(r.ops[1].end, kAlpha + 16.0 * kMiB / kBw, 1e-12);
}

TEST(SimEngine, MaxMinGivesTheUnconstrainedFlowTheLeftover) {
  // Three GPUs through a switch: flows 0->2 and 1->2 share the switch->2 link; flow 0->1 shares 0->switch
  // with 0->2. Max-min: 0->2 and 1->2 get B/2 each (bottleneck sw->2), 0->1 gets the remaining B/2 of 0->sw.
  topo::Topology t;
  t.name = "star3";
  std::vector<topo::NodeId> g;
  for (int i = 0; i < 3; ++i) {
    topo::Node n;
    n.kind = topo::NodeKind::gpu;
    n.name = "gpu" + std::to_string(i);
    n.index = i;
    g.push_back(t.add_node(n));
  }
  topo::Node sw;
  sw.kind = topo::NodeKind::nvswitch;
  sw.name = "sw";
  const auto s_id = t.add_node(sw);
  topo::Link l;
  l.bw = BytesPerSec(kBw);
  l.latency = Seconds(0);
  for (auto v : g) t.add_duplex(v, s_id, l);
  // A fatter link from gpu1 so that its flow is limited by the shared downlink only.
  Simulator sim(t, model::ModelParams::ideal());
  Schedule s = empty_schedule(3);
  Transport tr(s);
  tr.put(0, in(0), out(2), 10 * kMiB, {}, 0);
  tr.put(1, in(1), out(2, 10 * kMiB), 10 * kMiB, {}, 0);
  tr.put(0, in(0), out(1), 30 * kMiB, {}, 1);
  const SimResult r = sim.run(s);
  const double S = 10.0 * kMiB;
  EXPECT_NEAR(r.ops[0].end, 2 * S / kBw, 1e-12);
  EXPECT_NEAR(r.ops[1].end, 2 * S / kBw, 1e-12);
  // 0->1 ran at B/2 for 2S/B (moving S), then alone at B for the remaining 2S.
  EXPECT_NEAR(r.ops[2].end, 2 * S / kBw + 2 * S / kBw, 1e-12);
}

TEST(SimEngine, ChannelOpsRunInOrderAndDependenciesAddSyncLatency) {
  auto t = uniform(3);
  model::ModelParams p = model::ModelParams::ideal();
  p.sync_latency = {microseconds(1), "test"};
  p.local_dep_latency = {microseconds(0.25), "test"};
  Simulator sim(t, p);
  Schedule s = empty_schedule(3);
  Transport tr(s);
  const OpId a = tr.put(0, in(0), out(1), kMiB);
  const OpId b = tr.put(0, in(0), out(2), kMiB);                // same channel: after a
  const OpId c = tr.put(1, out(1), out(2, kMiB), kMiB, {a});    // other rank: + sync
  const OpId d = tr.put(0, in(0), out(1, kMiB), kMiB, {b}, 3);  // same rank, other channel: + local dep
  const SimResult r = sim.run(s);
  const double x = kAlpha + double(kMiB) / kBw;
  EXPECT_NEAR(r.ops[a].end, x, 1e-12);
  EXPECT_NEAR(r.ops[b].start, x, 1e-12);
  EXPECT_NEAR(r.ops[c].start, x + 1e-6, 1e-12);
  EXPECT_NEAR(r.ops[d].start, 2 * x + 0.25e-6, 1e-12);
}

TEST(SimEngine, LocalWorkRunsAtMemoryBandwidthAndMatmulAtTensorRate) {
  auto t = uniform(2);
  model::ModelParams p = model::ModelParams::ideal();
  p.free_local_work = false;
  p.mem_efficiency = {0.5, "test"};
  p.matmul_efficiency = {0.25, "test"};
  p.local_op_latency = {microseconds(1), "test"};
  Simulator sim(t, p);
  const topo::Node& g0 = t.node(t.gpu(0));
  const double mem = g0.mem_bw.value * 0.5, flops = g0.flops * 0.25;
  Schedule s = empty_schedule(2);
  s.dtype = DType::f16;
  Transport tr(s);
  const OpId c = tr.copy(0, in(0), out(0), 64 * kMiB);
  const OpId rd = tr.reduce(1, in(1), out(1), out(1), 64 * kMiB);
  Compute mm;
  mm.kind = ComputeKind::matmul;
  mm.m = 4096;
  mm.k = 4096;
  mm.n = 8192;
  const OpId m = tr.compute(0, mm, {}, 1);
  const SimResult r = sim.run(s);
  EXPECT_NEAR(r.ops[c].end, 1e-6 + 2.0 * 64 * kMiB / mem, 1e-9);   // read + write
  EXPECT_NEAR(r.ops[rd].end, 1e-6 + 3.0 * 64 * kMiB / mem, 1e-9);  // two reads + write
  EXPECT_NEAR(r.ops[m].end, 1e-6 + 2.0 * 4096 * 4096 * 8192 / flops, 1e-9);
}

TEST(SimEngine, RemoteReduceIsAFlowPlusLocalTraffic) {
  auto t = uniform(2);
  Simulator sim(t, model::ModelParams::ideal());
  Schedule s = empty_schedule(2);
  Transport tr(s);
  tr.reduce(1, in(0), in(1), out(1), 8 * kMiB);  // reads rank 0's input over the link
  const SimResult r = sim.run(s);
  EXPECT_NEAR(r.time.value, kAlpha + 8.0 * kMiB / kBw, 1e-12);
}

TEST(SimEngine, ProtocolEfficiencyAndCapSlowTransfers) {
  auto t = uniform(2);
  model::ModelParams p = model::ModelParams::ideal();
  p.of(model::Proto::copy_engine).efficiency = {0.5, "test"};
  p.of(model::Proto::copy_engine).latency = {microseconds(3), "test"};
  Simulator sim(t, p);
  Schedule s = empty_schedule(2);
  Transport tr(s);
  tr.put(0, in(0), out(1), 8 * kMiB);
  EXPECT_NEAR(sim.run(s).time.value, kAlpha + 3e-6 + 2 * 8.0 * kMiB / kBw, 1e-12);
  RunOptions o;
  o.per_flow_cap = BytesPerSec(10e9);
  EXPECT_NEAR(sim.run(s, o).time.value, kAlpha + 3e-6 + 8.0 * kMiB / 10e9, 1e-12);
}

TEST(SimEngine, LaunchLatencyDelaysFirstOps) {
  auto t = uniform(2);
  model::ModelParams p = model::ModelParams::ideal();
  p.launch_latency = {microseconds(5), "test"};
  Simulator sim(t, p);
  Schedule s = empty_schedule(2);
  Transport tr(s);
  tr.put(0, in(0), out(1), 0);
  EXPECT_NEAR(sim.run(s).time.value, 5e-6 + kAlpha, 1e-12);
}

TEST(SimEngine, RefusesAScheduleThatCannotFinish) {
  auto t = uniform(2);
  Simulator sim(t, model::ModelParams::ideal());
  Schedule s = empty_schedule(2);
  Transport tr(s);
  tr.put(0, in(0), out(1), kMiB);
  tr.put(1, in(1), out(0), kMiB);
  // Hand-edit a cycle: op 0 waits for op 1, op 1 for op 0 (Transport alone cannot build one).
  s.dep_pool = {1, 0};
  s.ops[0].dep_begin = 0;
  s.ops[0].dep_count = 1;
  s.ops[1].dep_begin = 1;
  s.ops[1].dep_count = 1;
  try {
    sim.run(s);
    FAIL() << "a cyclic schedule was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot finish: op 0"), std::string::npos) << e.what();
  }
}

TEST(SimEngine, RefusesMoreRanksThanGpus) {
  auto t = uniform(2);
  Simulator sim(t, model::ModelParams::ideal());
  Schedule s = empty_schedule(3);
  try {
    sim.run(s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
  }
}

TEST(SimEngine, TraceHasRankSlicesAndLinkCounters) {
  auto t = uniform(2);
  Simulator sim(t, model::ModelParams::ideal());
  Schedule s = empty_schedule(2);
  Transport tr(s);
  tr.put(0, in(0), out(1), kMiB);
  tr.put(1, in(1), out(0), kMiB, {}, 2);
  RunOptions o;
  o.record_timeline = true;
  const SimResult r = sim.run(s, o);
  const std::string j = chrome_trace_json({{"test", &s, &r}});
  EXPECT_NE(j.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(j.find("\"ph\":\"X\",\"name\":\"put ->r1 1MiB\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"ph\":\"C\",\"name\":\"gpu0->gpu1\""), std::string::npos) << j;
  EXPECT_NE(j.find("channel 2"), std::string::npos);
  // The link counter shows 100 GB/s while the transfer runs, then 0.
  EXPECT_NE(j.find("\"GB/s\":100"), std::string::npos) << j;
  EXPECT_NE(j.find("\"GB/s\":0"), std::string::npos) << j;
}

TEST(SimParams, ProfileOverridesByNameAndRoundTrips) {
  auto t = uniform(2);
  model::ModelParams p = model::defaults_for(t);
  model::set_param(p, "proto.copy_engine.latency_us", 2.5, "unit test");
  model::set_param(p, "link.nvlink.bw_GBps", 50, "unit test");
  EXPECT_NEAR(p.of(model::Proto::copy_engine).latency.value.us(), 2.5, 1e-12);
  EXPECT_EQ(p.of(model::Proto::copy_engine).latency.source, "unit test");
  EXPECT_THROW(model::set_param(p, "no.such.param", 1, ""), Error);
  // Every parameter has a source (defaults included).
  for (const auto& name : model::param_names(p)) {
    if (!model::get_param(p, name)) continue;  // unset optional overrides
    EXPECT_TRUE(model::get_param(p, name).has_value()) << name;
  }
  const std::string text = model::profile_json(p);
  const std::string path = ::testing::TempDir() + "/profile_roundtrip.json";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  const model::ModelParams q = model::load_profile(path, model::ModelParams::ideal());
  for (const auto& name : model::param_names(p)) {
    auto a = model::get_param(p, name), b = model::get_param(q, name);
    ASSERT_EQ(a.has_value(), b.has_value()) << name;
    if (a) EXPECT_NEAR(*a, *b, 1e-9 * std::max(1.0, std::abs(*a))) << name;
  }
  // The link override reaches the simulator: 50 GB/s instead of the topology's 100.
  Simulator sim(t, q);
  Schedule s = empty_schedule(2);
  Transport tr(s);
  tr.put(0, in(0), out(1), 8 * kMiB);
  model::ModelParams ideal = model::ModelParams::ideal();
  model::set_param(ideal, "link.nvlink.bw_GBps", 50, "unit test");
  Simulator sim2(t, ideal);
  EXPECT_NEAR(sim2.run(s).time.value, kAlpha + 8.0 * kMiB / 50e9, 1e-12);
}

TEST(SimParams, DefaultsCarryASourceForEveryNumber) {
  for (const char* preset : {"dgx-h100", "h200x2"}) {
    const model::ModelParams p = model::defaults_for(topo::make_preset(preset));
    for (const auto& pr : p.proto) {
      EXPECT_FALSE(pr.latency.source.empty());
      EXPECT_FALSE(pr.efficiency.source.empty());
      EXPECT_GT(pr.efficiency.value, 0);
      EXPECT_LE(pr.efficiency.value, 1);
    }
    EXPECT_FALSE(p.launch_latency.source.empty());
    EXPECT_FALSE(p.sync_latency.source.empty());
    EXPECT_FALSE(p.mem_efficiency.source.empty());
    EXPECT_FALSE(p.matmul_efficiency.source.empty());
  }
}

TEST(SimParams, BadProfilesAreInputErrors) {
  const std::string path = ::testing::TempDir() + "/bad_profile.json";
  auto write = [&](const char* text) {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text, f);
    std::fclose(f);
  };
  write("{\"params\": {\"nope\": 1}}");
  EXPECT_THROW(model::load_profile(path, model::ModelParams::ideal()), Error);
  write("{not json");
  EXPECT_THROW(model::load_profile(path, model::ModelParams::ideal()), Error);
  write("{\"params\": {\"sync_latency_us\": -1}}");
  EXPECT_THROW(model::load_profile(path, model::ModelParams::ideal()), Error);
  // A curve's or table's size beyond an int64 (found by the profile fuzzer) is bad input, not a conversion.
  write("{\"curves\": {\"copy_engine\": {\"points\": [[4.1e96, 0.5], [1048576, 0.9]]}}}");
  EXPECT_THROW(model::load_profile(path, model::ModelParams::ideal()), Error);
  write("{\"tables\": {\"copy.local\": {\"points\": [[4.1e96, 1e-6], [1048576, 2e-6]]}}}");
  EXPECT_THROW(model::load_profile(path, model::ModelParams::ideal()), Error);
  EXPECT_THROW(model::load_profile(path + ".missing", model::ModelParams::ideal()), Error);
}

}  // namespace
}  // namespace cclab::sim
