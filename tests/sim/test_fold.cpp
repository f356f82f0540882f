// The fast paths of the simulator may not change a prediction. Folded runs (sim/symmetric.hpp: one
// server's ranks standing for all where the routes allow it, else a leaf group's) against the full
// engine on clusters small enough to run whole; the partial recording they rest on (Transport rank
// windows, algorithms' loop_ranks) against the full schedule; and local work priced without the max-min
// solver (a rank's lone memory traffic) against the solver.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/transport.hpp"
#include "sim/predict.hpp"
#include "sim/symmetric.hpp"
#include "topology/topology.hpp"

namespace cclab::sim {
namespace {

AlgoArgs args_for(int nranks, int64_t bytes, const Algorithm& a, int node_size, bool in_place = false) {
  AlgoArgs args;
  args.nranks = nranks;
  args.node_size = node_size;
  args.in_place = in_place;
  args.count = count_for_bytes(a, bytes, DType::f32, nranks);
  return args;
}

struct Case {
  const char* algo;
  int64_t bytes;
  bool in_place;
  int period;  // the folding expected: 8 (one DGX server), 256 (a leaf group) or 0 (none)
};

// Folded and full runs of the same prediction: equal to 1e-9 (the order of floating-point sums may
// differ), and folded by the shift expected.
void expect_folded_equals_full(const std::string& preset, const std::vector<Case>& cases) {
  const topo::Topology t = topo::make_preset(preset);
  Simulator sim(t, model::defaults_for(t));
  const int n = t.num_gpus();
  for (const Case& c : cases) {
    const Algorithm& a = find_algorithm(c.algo);
    const AlgoArgs args = args_for(n, c.bytes, a, t.gpus_per_server(), c.in_place);
    const std::string what = preset + " " + c.algo + " " + std::to_string(c.bytes) + (c.in_place ? " in place" : "");
    PredictOptions full, folded;
    full.symmetry = Symmetry::off;
    const Prediction pf = predict(sim, a, args, full), pr = predict(sim, a, args, folded);
    EXPECT_EQ(pr.fold_period, c.period) << what;
    EXPECT_NEAR(pr.result.time.value, pf.result.time.value, 1e-9 * pf.result.time.value) << what;
    // The leaf group's rotation alone, where the server shift was taken: the same again.
    if (c.period > 0 && c.period < n / 2) {
      int period = 0;
      const auto rot = run_symmetric(sim, a, args, RunOptions{}, nullptr, &period, FoldShift::rotation);
      if (rot) {
        EXPECT_GT(period, c.period) << what;
        EXPECT_NEAR(rot->time.value, pf.result.time.value, 1e-9 * pf.result.time.value) << what;
      }
    }
  }
}

TEST(SimFold, FoldedRunsEqualFullRunsOnOneLeafGroup) {
  // 16 DGX H100 (128 GPUs) under one leaf per rail: no rotation of the whole graph, but the shift by one
  // server maps every route a ring or a hierarchical exchange takes onto another.
  expect_folded_equals_full("16xdgx-h100", {{"allreduce.ring", int64_t(64) << 20, false, 8},
                                            // Blocks that differ by an element: not symmetric, run whole.
                                            {"allreduce.ring", 1000 * 128 * 4 + 12, false, 0},
                                            {"alltoall.hier", int64_t(16) << 20, false, 8},
                                            {"alltoall.hier", int64_t(16) << 20, true, 8},
                                            {"allgather.ring", int64_t(8) << 20, false, 8},
                                            {"reducescatter.ring", int64_t(8) << 20, false, 8},
                                            {"reducescatter.hier", int64_t(8) << 20, false, 8},
                                            // The bidirectional modes' schedules beyond one server (no fused
                                            // kernel there): each rank's ops in an order relative to the rank.
                                            {"allreduce.bidir.flash", int64_t(256) << 10, false, 8},
                                            {"allreduce.bidir.stream", int64_t(8) << 20, false, 8},
                                            {"allreduce.bidir.stream", int64_t(8) << 20, true, 8}});
}

TEST(SimFold, FoldedRunsEqualFullRunsOnTwoLeafGroups) {
  // 64 DGX H100 (512 GPUs, two leaf groups): a ring folds onto one server (each of its hops between
  // servers has spine links of its own); an all-to-all's flows between the groups share spine links in
  // a pattern that repeats only with the leaf group, so it folds onto a group. allreduce.rhd's and
  // alltoall.bruck's partners across the groups fold onto the rank itself: still a dependency on another
  // rank (the previous code charged them no sync latency there, 1 us below the full engine).
  expect_folded_equals_full("64xdgx-h100", {{"allreduce.ring", int64_t(1) << 30, false, 8},
                                            {"alltoall.hier", int64_t(1) << 30, false, 256},
                                            {"alltoall.hier", int64_t(4) << 20, true, 256},
                                            {"allreduce.rhd", int64_t(16) << 20, false, 256},
                                            {"alltoall.bruck", int64_t(1) << 20, false, 256}});
}

TEST(SimFold, FoldedRunsEqualFullRunsOnOversubscribedAndUnevenFabrics) {
  // 2:1 oversubscribed leaves: half as many spines, so two hops of a ring between servers share an
  // uplink, in a pattern that repeats only with the leaf group. 40 servers: a partial second leaf group,
  // no rotation of the graph, but a ring's routes still shift with the server.
  expect_folded_equals_full("64xdgx-h100:os2", {{"allreduce.ring", int64_t(256) << 20, false, 256}});
  expect_folded_equals_full(
      "40xdgx-h100", {{"allreduce.ring", int64_t(80) << 20, false, 8}, {"alltoall.hier", int64_t(64) << 20, false, 0}});
}

TEST(SimFold, TheSymmetryCheckSeesANodeWiderThanAServer) {
  // 512 GPUs joined all to all, each its own server: a shift by one GPU maps every route onto another.
  // A ring folds onto one rank; a hierarchical all-to-all in nodes of 16 does not, although its first
  // 512 ops per rank (the layout copies) look alike on every rank: the next server's ops are compared
  // whole.
  topo::Topology t = topo::make_uniform(512, BytesPerSec(100e9), Seconds(2e-6));
  for (int i = 0; i < t.num_gpus(); ++i) t.graph[t.gpu(i)].server = i;
  Simulator sim(t, model::defaults_for(t));
  const Algorithm& ring = find_algorithm("allreduce.ring");
  const AlgoArgs ring_args = args_for(512, int64_t(64) << 20, ring, 16);
  PredictOptions full;
  full.symmetry = Symmetry::off;
  const Prediction pf = predict(sim, ring, ring_args, full), pr = predict(sim, ring, ring_args);
  EXPECT_EQ(pr.fold_period, 1);
  EXPECT_NEAR(pr.result.time.value, pf.result.time.value, 1e-9 * pf.result.time.value);
  const Algorithm& hier = find_algorithm("alltoall.hier");
  EXPECT_FALSE(run_symmetric(sim, hier, args_for(512, int64_t(64) << 20, hier, 16), RunOptions{}));
}

// The ops of ranks [0, k) as a windowed recording holds them, against the full schedule's: the same
// ops in the same order, naming the same (rank, index) as dependencies.
void expect_window_matches_full(const Algorithm& a, const AlgoArgs& args, int k) {
  const Schedule full = record_schedule(a, args);
  std::vector<int32_t> index(full.ops.size());
  std::map<int, std::vector<int32_t>> full_of;  // rank -> its ops
  {
    std::vector<int32_t> count(size_t(args.nranks), 0);
    for (size_t i = 0; i < full.ops.size(); ++i) {
      index[i] = count[size_t(full.ops[i].rank)]++;
      if (full.ops[i].rank < k) full_of[full.ops[i].rank].push_back(int32_t(i));
    }
  }
  Schedule part;
  part.algo = full.algo;
  part.collective = full.collective;
  part.nranks = args.nranks;
  part.count = args.count;
  part.dtype = args.dtype;
  part.in_place = args.in_place;
  part.buffers.assign(size_t(args.nranks), BufferSizes{});
  Transport t(part);
  t.set_rank_window(k, kSymmetryCheckOps);
  a.build(args, t);
  std::map<int, std::vector<int32_t>> part_of;
  for (size_t i = 0; i < part.ops.size(); ++i)
    if (part.ops[i].rank < k) part_of[part.ops[i].rank].push_back(int32_t(i));
  // Far fewer ops recorded than the schedule has (2k of n ranks, with the symmetry check's).
  EXPECT_LT(part.ops.size(), full.ops.size() / 2) << a.name;
  for (int r = 0; r < k; ++r) {
    const auto &f = full_of[r], &p = part_of[r];
    ASSERT_EQ(p.size(), f.size()) << a.name << " rank " << r;
    for (size_t j = 0; j < f.size(); ++j) {
      const Op &x = full.ops[size_t(f[j])], &y = part.ops[size_t(p[j])];
      ASSERT_EQ(t.index_in_rank(p[j]), int32_t(j));
      ASSERT_TRUE(x.kind == y.kind && x.channel == y.channel && x.bytes == y.bytes && x.step == y.step &&
                  x.dst.rank == y.dst.rank && x.src.rank == y.src.rank && x.src.offset == y.src.offset &&
                  x.dst.offset == y.dst.offset && x.dep_count == y.dep_count)
          << a.name << " rank " << r << " op " << j;
      for (uint32_t d = 0; d < x.dep_count; ++d) {
        const OpId dx = full.dep_pool[x.dep_begin + d], dy = part.dep_pool[y.dep_begin + d];
        const std::pair<int, int32_t> want{full.ops[size_t(dx)].rank, index[size_t(dx)]};
        const std::pair<int, int32_t> got =
            Transport::is_dropped(dy) ? t.dropped(dy)
                                      : std::pair<int, int32_t>{part.ops[size_t(dy)].rank, t.index_in_rank(dy)};
        ASSERT_EQ(got, want) << a.name << " rank " << r << " op " << j << " dependency " << d;
      }
    }
  }
}

TEST(SimFold, WindowedRecordingHoldsTheFullSchedulesOps) {
  for (const char* name : {"allreduce.ring", "alltoall.hier"}) {
    const Algorithm& a = find_algorithm(name);
    for (bool in_place : {false, true}) {
      AlgoArgs args = args_for(96, int64_t(3) << 20, a, 8, in_place);
      expect_window_matches_full(a, args, 8);
      args.channels = 2;  // a ring per channel
      expect_window_matches_full(a, args, 16);
    }
  }
}

TEST(SimFold, LoneLocalWorkIsPricedAsTheSolverWould) {
  // Ranks whose ops all run on one channel have their memory to themselves; the engine prices their
  // local work without the max-min solver, except with a timeline (whose samples come from the solver).
  const topo::Topology t = topo::make_preset("4xdgx-h100");
  Simulator sim(t, model::defaults_for(t));
  for (const char* name : {"alltoall.hier", "allreduce.ring", "reducescatter.hier"}) {
    const Algorithm& a = find_algorithm(name);
    const Schedule s = record_schedule(a, args_for(t.num_gpus(), int64_t(8) << 20, a, 8));
    RunOptions fast, solver;
    solver.record_timeline = true;
    const SimResult rf = sim.run(s, fast), rs = sim.run(s, solver);
    EXPECT_EQ(rf.time.value, rs.time.value) << name;
    ASSERT_EQ(rf.ops.size(), rs.ops.size());
    for (size_t i = 0; i < rf.ops.size(); ++i) {
      ASSERT_EQ(rf.ops[i].start, rs.ops[i].start) << name << " op " << i;
      ASSERT_EQ(rf.ops[i].end, rs.ops[i].end) << name << " op " << i;
    }
    EXPECT_EQ(rf.flows, rs.flows) << name;
    EXPECT_LE(rf.events, rs.events) << name;
    // The hierarchical all-to-all's layout transforms (a copy per block, one after another): no event each.
    if (a.name == "alltoall.hier") {
      EXPECT_LT(rf.events * 4, rs.events) << name;
    }
  }
}

}  // namespace
}  // namespace cclab::sim
