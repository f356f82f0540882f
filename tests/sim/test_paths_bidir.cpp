// The all-reduce kernels' model (sim/paths_bidir.cpp) and NCCL's 2-GPU model (sim/paths_nccl.cpp): each kernel mode
// from the mechanisms (a launch in a replayed graph, flag round trips, peer loads and stores, one CTA's rate, local
// reductions), never from a series of the kernel itself.
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

model::ModelParams params_with_mechanisms(const topo::Topology& t) {
  model::ModelParams p = model::defaults_for(t);
  p.exec.kernel_node = {microseconds(2), "test"};
  p.exec.kernel_pdl = {microseconds(1), "test"};
  p.exec.flag_rtt = {microseconds(1.6), "test"};
  p.exec.flag_hop = {microseconds(1.2), "test"};
  p.launch_latency = {microseconds(1.5), "test"};
  p.tables["p2p.sm.bidir"] = line_table(3e-6, 280e9);
  p.tables["p2p.sm.cta"] = line_table(3e-6, 30e9);
  p.tables["p2p.sm_store.bidir"] = line_table(3e-6, 250e9);
  p.tables["p2p.sm_store.cta"] = line_table(3e-6, 20e9);
  p.tables["p2p.ll_store.bidir"] = line_table(2.5e-6, 120e9);
  p.tables["reduce.local.float"] = line_table(2e-6, 1000e9);
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
  if (mode == "twoshot") add(std::string("twoshot_push=") + (note.find(" push") != std::string::npos ? "1" : "0"));
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

// The pieces every mode is made of, from the synthetic mechanisms above.
struct Pieces {
  const model::ModelParams& p;
  double part(const char* table, double bytes) const { return p.tables.at(table).size_part(bytes).value; }
  double launch(int n) const { return p.tables.at("bidir.replay").time(n).value; }  // PDL, n launches per replay
  double rtt() const { return p.exec.flag_rtt.value.value; }
  double hop() const { return p.exec.flag_hop.value.value; }  // a start or finish handshake
  double fence() const { return 0.5 * rtt(); }                // a grid of several CTAs: the arrival count's fence
  double reduce(double bytes) const { return part("reduce.local.float", bytes); }
};

TEST(BidirModel, EachModeIsMadeOfTheMechanisms) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = params_with_mechanisms(t);
  const Pieces m{p};
  const int64_t S = 4 * kMiB;
  const int n = 100;
  // flash: the peer loads (all SMs), a round trip for them, a start and a finish handshake (a flag hop each).
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.flash", S, "mode=flash engine=ldg pdl threads=512 unroll=4 grid=128", n),
              m.launch(n) + m.fence() + m.rtt() + 2 * m.hop() + m.part("p2p.sm.bidir", S), 1e-12);
  // ll: LL stores into the peer or the reduction of what landed, whichever is slower; their round trip; the last
  // CTA's reduction.
  const int64_t K = 64 << 10;
  EXPECT_NEAR(
      predict_note(p, "allreduce.bidir.ll", K, "mode=ll threads=256 pdl grid=132", n),
      m.launch(n) + m.fence() + m.rtt() + std::max(m.part("p2p.ll_store.bidir", K), m.reduce(K)) + m.reduce(K / 132.0),
      1e-12);
  // lamport: plain stores, as ll.
  EXPECT_NEAR(
      predict_note(p, "allreduce.bidir.lamport", S, "mode=lamport threads=512 unroll=2 ahead=2 pdl grid=128", n),
      m.launch(n) + m.fence() + m.rtt() + std::max(m.part("p2p.sm_store.bidir", S), m.reduce(S)) + m.reduce(S / 128.0),
      1e-12);
  // push: a flag released after each tile's stores adds a round trip.
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.push", S, "mode=push threads=512 unroll=4 pdl grid=256", n),
              m.launch(n) + m.fence() + 2 * m.rtt() + std::max(m.part("p2p.sm_store.bidir", S), m.reduce(S)) +
                  m.reduce(S / 256.0),
              1e-12);
  EXPECT_THROW(predict_note(p, "allreduce.bidir.magic", S, "mode=magic"), Error);
}

// A profile that still carries the kernels' own series (older calibrations) is priced the same: those series are
// diagnostics.
TEST(BidirModel, TheKernelsOwnSeriesAreNotRead) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = params_with_mechanisms(t);
  model::ModelParams q = p;
  for (const char* s : {"bidir.pull", "bidir.push", "bidir.ll", "bidir.ll.n100", "bidir.lamport.t256", "bidir.ring",
                        "bidir.push.own.n100", "bidir.ll.args.n100"})
    q.tables[s] = line_table(50e-6, 1e9);
  for (const char* note :
       {"mode=flash engine=ldg pdl threads=512 unroll=4 grid=128", "mode=ll threads=256 pdl grid=2",
        "mode=push threads=512 unroll=4 pdl grid=256", "mode=lamport threads=256 unroll=2 ahead=2 pdl grid=128",
        "mode=stream slots=4 slot_bytes=262144 threads=512 grid=16"}) {
    const std::string mode = word_after(note, "mode=");
    EXPECT_DOUBLE_EQ(predict_note(q, "allreduce.bidir." + mode, 64 << 10, note, 100),
                     predict_note(p, "allreduce.bidir." + mode, 64 << 10, note, 100))
        << note;
  }
}

// Too few CTAs to fill the link: each moves its share at one CTA's rate, scaled by the vectors it keeps in flight
// against the microbenchmark's CTA (512 threads x 4).
TEST(BidirModel, FewCtasMoveAtOneCtasRate) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_mechanisms(t);
  p.tables["reduce.local.cta.float"] = line_table(2e-6, 10e9);
  const Pieces m{p};
  const int64_t S = 4 * kMiB, unit = 256 << 10;
  // stream: 4 lanes of 4 units; 256 of each lane's 512 threads push 4 vectors at a time (half the CTA's vectors in
  // flight: twice one CTA's time per unit), the other 256 reduce 4 vector pairs at a time. The first unit's stores,
  // three more at the slower of stores and reduction, the last unit's reduction.
  const double store = 2 * m.part("p2p.sm_store.cta", unit), reduce = 2 * m.part("reduce.local.cta.float", unit);
  ASSERT_GT(reduce, store);
  EXPECT_NEAR(
      predict_note(p, "allreduce.bidir.stream", S, "mode=stream slots=4 slot_bytes=262144 threads=512 grid=4", 100),
      m.launch(100) + m.fence() + 1.0 * (2e-6 - 1e-6) + 2 * m.rtt() + 2 * m.hop() + store + 3 * reduce + reduce, 1e-12);
  // Without the one-CTA reduction series, all SMs' rate over the 4 lanes' units at once: the stores bound each unit.
  model::ModelParams q = p;
  q.tables.erase("reduce.local.cta.float");
  EXPECT_NEAR(
      predict_note(q, "allreduce.bidir.stream", S, "mode=stream slots=4 slot_bytes=262144 threads=512 grid=4", 100),
      m.launch(100) + m.fence() + 1.0 * (2e-6 - 1e-6) + 2 * m.rtt() + 2 * m.hop() + 4 * store +
          m.part("reduce.local.float", 4.0 * unit),
      1e-12);
  // With a lane per SM the link's rate bounds it instead, and the last units' reduction follows: every lane's at
  // once, at all SMs' rate over the 132 lanes' units.
  const int64_t L = 64 * kMiB;
  const double wide =
      predict_note(q, "allreduce.bidir.stream", L, "mode=stream slots=4 slot_bytes=262144 threads=512 grid=132", 100);
  EXPECT_NEAR(wide,
              m.launch(100) + m.fence() + 1.0 * (2e-6 - 1e-6) + 2 * m.rtt() + 2 * m.hop() +
                  m.part("p2p.sm_store.bidir", L) + m.part("reduce.local.float", 132.0 * unit),
              1e-12);
}

// Where the one-CTA series were also measured with 256 and 128 threads (`cta256`, `cta128`), a CTA keeping those
// vectors in flight moves at their measured rates: the stream's pushing and reducing halves (256 threads x 4 each)
// take the `cta256` series themselves. Between measured depths a power of the vectors through both; below the
// shallowest, Little's law from it.
TEST(BidirModel, FewerThreadsTakeTheSeriesAtTheirDepth) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_mechanisms(t);
  p.tables["reduce.local.cta.float"] = line_table(2e-6, 10e9);
  p.tables["p2p.sm_store.cta256"] = line_table(3e-6, 16e9);
  p.tables["p2p.sm_store.cta128"] = line_table(3e-6, 8e9);
  p.tables["reduce.local.cta256.float"] = line_table(2e-6, 9e9);
  p.tables["reduce.local.cta128.float"] = line_table(2e-6, 5e9);
  const Pieces m{p};
  const int64_t S = 4 * kMiB, unit = 256 << 10;
  auto stream = [&](const model::ModelParams& q, int threads) {
    return predict_note(q, "allreduce.bidir.stream", S,
                        "mode=stream slots=4 slot_bytes=262144 threads=" + std::to_string(threads) + " grid=4", 100);
  };
  auto expected = [&](double store, double reduce) {
    return m.launch(100) + m.fence() + 1.0 * (2e-6 - 1e-6) + 2 * m.rtt() + 2 * m.hop() + store +
           3 * std::max(store, reduce) + reduce;
  };
  EXPECT_NEAR(stream(p, 512), expected(m.part("p2p.sm_store.cta256", unit), m.part("reduce.local.cta256.float", unit)),
              1e-12);
  EXPECT_NEAR(stream(p, 256), expected(m.part("p2p.sm_store.cta128", unit), m.part("reduce.local.cta128.float", unit)),
              1e-12);
  // 192 threads per CTA, 96 per half (384 vectors): below the shallowest, Little's law from 128 threads.
  EXPECT_NEAR(
      stream(p, 192),
      expected(m.part("p2p.sm_store.cta128", unit) * 512 / 384, m.part("reduce.local.cta128.float", unit) * 512 / 384),
      1e-12);
  // 384 threads, 192 per half (768 vectors): between 256 and 128 threads, a power of the vectors through both.
  const double x = std::log(1024.0 / 768) / std::log(2.0);
  EXPECT_NEAR(stream(p, 384),
              expected(m.part("p2p.sm_store.cta256", unit) * std::pow(2.0, x),
                       m.part("reduce.local.cta256.float", unit) * std::pow(9.0 / 5, x)),
              1e-12);
  // The series both ways at once (`.bidir`) are not read.
  model::ModelParams b = p;
  b.tables["p2p.sm_store.cta.bidir"] = line_table(3e-6, 10e9);
  EXPECT_EQ(stream(b, 512), stream(p, 512));
  // Without them, Little's law from 512 threads: twice its time at half its vectors.
  model::ModelParams q = p;
  for (const char* name :
       {"p2p.sm_store.cta256", "p2p.sm_store.cta128", "reduce.local.cta256.float", "reduce.local.cta128.float"})
    q.tables.erase(name);
  EXPECT_NEAR(stream(q, 512),
              expected(2 * m.part("p2p.sm_store.cta", unit), 2 * m.part("reduce.local.cta.float", unit)), 1e-12);
}

TEST(BidirModel, LaunchesPerReplayAndPlainLaunches) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = params_with_mechanisms(t);
  const std::string note = "mode=ll threads=256 pdl grid=1";
  // 20 us per replay: 2 us per launch at 10 launches instead of 1 us at 20.
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, note, 10) - predict_note(p, "allreduce.bidir", 64, note, 20), 1e-6,
              1e-9);
  // Not recorded: a graph's default launches (20).
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, note, 0), predict_note(p, "allreduce.bidir", 64, note, 20), 1e-12);
  // Without programmatic dependent launch: what a plain kernel node costs beyond a PDL one (2 - 1 us).
  EXPECT_NEAR(predict_note(p, "allreduce.bidir", 64, "mode=ll threads=256 grid=1", 20) -
                  predict_note(p, "allreduce.bidir", 64, note, 20),
              1e-6, 1e-12);
  std::string how;
  EXPECT_NEAR(replay_shift(p, 20, 5, how).value, 20e-6 * (1.0 / 5 - 1.0 / 20), 1e-12);
  model::ModelParams q = p;
  q.tables.erase("bidir.replay");
  EXPECT_EQ(replay_shift(q, 20, 10, how).value, 0.0);
}

// On n GPUs a kernel's port carries every peer's bytes, and each of its threads works with every peer at once:
// (n - 1) times the vectors in flight per CTA.
TEST(BidirModel, MorePeersKeepMoreVectorsInFlight) {
  const topo::Topology t = topo::load_topology("hgx-h200");
  model::ModelParams p = params_with_mechanisms(t);
  const Pieces m{p};
  AlgoArgs a;
  a.nranks = 4;
  a.count = (1 << 20) / 4;
  a.dtype = DType::f32;
  a.tune =
      "launches=100,mode=twoshot,twoshot_threads=512,twoshot_unroll=1,twoshot_blocks=2,twoshot_push=0,twoshot_pdl=1";
  Simulator sim(t, with_conditions(p));
  const double got = predict_plan(sim, find_algorithm("allreduce.bidir"), a).result.time.value;
  const double port = 2.0 * 3 * (1 << 20) / 4;  // 2 (n-1)/n S
  // 512 threads x 1 vector x 3 peers in flight: 4/3 of the microbenchmark CTA's time for its share.
  const double per_cta = 2048.0 / (512 * 3) * m.part("p2p.sm.cta", port / 2);
  EXPECT_NEAR(got, m.launch(100) + m.fence() + m.rtt() + 2 * m.hop() + std::max(per_cta, m.part("p2p.sm.bidir", port)),
              1e-12);
}

// A grid of several CTAs counts their arrivals at its end, each fencing its stores into the peer first: half a
// flag round trip that a one-CTA grid does not pay (the other modes' grids of several CTAs: above).
TEST(BidirModel, SeveralCtasFenceBeforeTheirArrivalCount) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = params_with_mechanisms(t);
  const Pieces m{p};
  // At 64 bytes the CTAs' shares of the stores and of the reduction move the time by nanoseconds only.
  const double one = predict_note(p, "allreduce.bidir.ll", 64, "mode=ll threads=256 pdl grid=1", 100);
  const double two = predict_note(p, "allreduce.bidir.ll", 64, "mode=ll threads=256 pdl grid=2", 100);
  EXPECT_NEAR(two - one, m.fence(), 0.02e-6);
}

// ll: a thread stores its next pair only once the peer's pair at its last place has landed, so the grid moves its
// threads x 8 bytes per wave, and each wave after the first adds a round trip in series with the stores (2 x H200,
// one CTA: 3.93 us at 4 KiB, 7.39 at 8 KiB, results/h200x2/probes_bidir_grid/).
TEST(BidirModel, LlCtasMoveTheirThreadsPairsPerRoundTrip) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = params_with_mechanisms(t);
  const Pieces m{p};
  // One CTA of 256 threads: 2 KiB per wave. Its stores at one CTA's rate with 256 vectors in flight (Little's law:
  // 8 x the benchmark's 2048), or the link's LL rate, whichever is slower.
  auto stores = [&](double bytes) {
    return std::max(m.part("p2p.ll_store.bidir", bytes), 8 * m.part("p2p.sm_store.cta", bytes));
  };
  const double k8 = predict_note(p, "allreduce.bidir.ll", 8 << 10, "mode=ll threads=256 pdl grid=1", 100);
  const double k16 = predict_note(p, "allreduce.bidir.ll", 16 << 10, "mode=ll threads=256 pdl grid=1", 100);
  EXPECT_NEAR(k8, m.launch(100) + 4 * m.rtt() + std::max(stores(8 << 10), m.reduce(8 << 10)) + m.reduce(8 << 10),
              1e-12);
  EXPECT_NEAR(k16, m.launch(100) + 8 * m.rtt() + std::max(stores(16 << 10), m.reduce(16 << 10)) + m.reduce(16 << 10),
              1e-12);
  // Spread over four CTAs, 8 KiB is one wave: three round trips fewer, less the grid's fence.
  const double wide = predict_note(p, "allreduce.bidir.ll", 8 << 10, "mode=ll threads=256 pdl grid=4", 100);
  EXPECT_GT(k8 - wide, 2.5 * m.rtt() - m.fence());
}

// push: a tile's flag waits for the acknowledgment of its stores before the CTA stores its next tile, so one CTA
// with k tiles pays k tiles' stores at one CTA's rate and a round trip after each but the last (2 x H200: 7.5 GB/s
// per CTA at 16 MiB on 1-8 CTAs, results/h200x2/probes_grid_scaling/).
TEST(BidirModel, PushCtasWaitARoundTripPerTile) {
  const topo::Topology t = topo::load_topology("h200x2");
  const model::ModelParams p = params_with_mechanisms(t);
  const Pieces m{p};
  const int64_t S = 64 << 10;  // 4 tiles of 256 storing threads x 4 vectors x 16 bytes
  const double tile = 2.0 * m.part("p2p.sm_store.cta", 16 << 10);  // 1024 vectors in flight: half the benchmark's
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.push", S, "mode=push threads=512 unroll=4 pdl grid=1", 100),
              m.launch(100) + 2 * m.rtt() + 3 * m.rtt() + 4 * tile + m.reduce(S), 1e-12);
  // With the one-CTA reduction measured, the CTA's share of the reduction runs at its rate (1024 vector pairs in
  // flight: twice the benchmark CTA's time).
  model::ModelParams q = p;
  q.tables["reduce.local.cta.float"] = line_table(2e-6, 10e9);
  EXPECT_NEAR(predict_note(q, "allreduce.bidir.push", S, "mode=push threads=512 unroll=4 pdl grid=1", 100),
              m.launch(100) + 2 * m.rtt() + 3 * m.rtt() + 4 * tile + 2 * Pieces{q}.part("reduce.local.cta.float", S),
              1e-12);
}

// The store-only two-shot stores into the peer twice, each time before a release: its scattered tiles (their round
// trip, their flags), then its reduced slice, whose acknowledgment the finish handshake's release waits for. That
// wait is a store into the peer acknowledged: the one-way SM-store benchmark's smallest kernel over a local copy's
// (2 x H200: 2.63 against 1.78 us at 8 B). Without it the store-only variant was priced 11-20% fast from 8 B to
// 8 KiB on every 2-GPU call. The load variant stores once, before its finish, which its three round trips count.
TEST(BidirModel, StoreOnlyTwoShotWaitsForItsSliceStoresBeforeTheFinish) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_mechanisms(t);
  const int64_t S = 4 << 10;
  const std::string push = "mode=twoshot push pdl threads=512 unroll=4 grid=1";
  const std::string pull = "mode=twoshot pdl threads=512 unroll=4 grid=1";
  // Without the two series, a flag round trip. The store-only variant: its stores' and flags' round trips, a finish
  // handshake and the acknowledgment; the load variant: its loads' round trip, a start and a finish handshake.
  const Pieces m{p};
  const double push_rtt = predict_note(p, "allreduce.bidir.twoshot", S, push, 100);
  const double pull_rtt = predict_note(p, "allreduce.bidir.twoshot", S, pull, 100);
  EXPECT_NEAR(push_rtt - pull_rtt, (2 * m.rtt() + m.hop() + m.rtt()) - (m.rtt() + 2 * m.hop()), 1e-12);
  p.tables["p2p.sm_store.uni"] = line_table(2.6e-6, 150e9);
  p.tables["copy.local"] = line_table(1.8e-6, 2000e9);
  const double ack =
      p.tables.at("p2p.sm_store.uni").points.front().second - p.tables.at("copy.local").points.front().second;
  EXPECT_NEAR(ack, 0.8e-6, 1e-9);  // 8 B at the two rates aside
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.twoshot", S, push, 100) - push_rtt, ack - p.exec.flag_rtt.value.value,
              1e-12);
  EXPECT_NEAR(predict_note(p, "allreduce.bidir.twoshot", S, pull, 100), pull_rtt, 1e-12);
}

TEST(NcclModel, GraphReplayedSendRecvWhenMeasured) {
  const topo::Topology t = topo::load_topology("h200x2");
  model::ModelParams p = params_with_mechanisms(t);
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
  target.params = params_with_mechanisms(target.topology);
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
