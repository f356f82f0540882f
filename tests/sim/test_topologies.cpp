// The simulator on real topologies: contention where the hardware has it (UPI, PCIe uplinks, host
// memory with --no-p2p), hierarchical against flat all-to-all and its crossover, sparse against dense
// all-reduce and its crossover density, the NCCL model's protocol choice, and folded (symmetric) runs
// equal to full ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "algorithms/registry.hpp"
#include "core/error.hpp"
#include "model/nccl.hpp"
#include "sim/crossover.hpp"
#include "sim/predict.hpp"
#include "topology/topology.hpp"

namespace cclab::sim {
namespace {

AlgoArgs args_for(int nranks, int64_t bytes, const Algorithm& a, int node_size = 0) {
  AlgoArgs args;
  args.nranks = nranks;
  args.node_size = node_size;
  args.count = count_for_bytes(a, bytes, DType::f32, nranks);
  return args;
}

TEST(SimContention, RingAllReduceOnPcie2SocketIsLimitedByUpi) {
  const topo::Topology t = topo::make_preset("pcie-2socket");
  Simulator sim(t, model::defaults_for(t));
  const Algorithm& ring = find_algorithm("allreduce.ring");
  const Prediction p = predict(sim, ring, args_for(8, int64_t(256) << 20, ring));
  // The ring crosses the sockets twice (one direction each way); the UPI link is the busiest resource.
  EXPECT_NE(p.result.bottleneck.find("cpu"), std::string::npos) << p.result.bottleneck;
  EXPECT_GT(p.result.bottleneck_utilisation, 0.9);
  const topo::Link* upi = nullptr;
  for (auto e : boost::make_iterator_range(boost::edges(t.graph)))
    if (t.link(e).kind == topo::LinkKind::upi) upi = &t.link(e);
  ASSERT_NE(upi, nullptr);
  // Each ring step pushes S/8 per rank; with 8 ranks the busbw cannot beat the UPI rate.
  EXPECT_LT(p.record.busbw_gbps, upi->bw.gbps() * 1.01);
  // Within one socket (4 GPUs, no UPI) the ring runs faster per byte of bus traffic.
  Simulator sim4(topo::select_gpus(t, {0, 1, 2, 3}), model::defaults_for(t));
  const Prediction q = predict(sim4, ring, args_for(4, int64_t(256) << 20, ring));
  EXPECT_GT(q.record.busbw_gbps, p.record.busbw_gbps * 1.2);
}

TEST(SimContention, NoP2pOneSocketSharesOneHostMemorySpreadUsesTwo) {
  const topo::Topology t = topo::make_preset("pcie-2socket");
  topo::RouteOptions ro;
  ro.no_p2p = true;
  const Algorithm& a2a = find_algorithm("alltoall.direct");
  auto run = [&](std::vector<int> gpus) {
    Simulator sim(topo::select_gpus(t, gpus), model::defaults_for(t), ro);
    return predict(sim, a2a, args_for(int(gpus.size()), int64_t(64) << 20, a2a));
  };
  const Prediction one = run({0, 1, 2, 3}), spread = run({0, 1, 4, 5});
  auto memory_links_used = [](const SimResult& r) {
    std::vector<std::string> used;
    for (const auto& st : r.resources)
      if (st.kind == "memory") used.push_back(st.name);
    return used;
  };
  // One socket: every staged transfer goes through socket 0's memory; spread: both sockets' memories.
  const auto m1 = memory_links_used(one.result), m2 = memory_links_used(spread.result);
  ASSERT_FALSE(m1.empty());
  for (const auto& n : m1) EXPECT_NE(n.find("cpu0"), std::string::npos) << n;
  EXPECT_TRUE(std::any_of(m2.begin(), m2.end(), [](auto& n) { return n.find("cpu1") != std::string::npos; }));
  // The prediction: one socket is faster, because the spread set pays the UPI crossing for half its
  // pairs while the host memory (8 DDR5 channels) is far from saturated by four PCIe Gen4 GPUs.
  EXPECT_LT(one.result.time.value, spread.result.time.value * 0.95)
      << "one socket " << one.result.time.us() << " us, spread " << spread.result.time.us() << " us";
  double upi_spread = 0;
  for (const auto& st : spread.result.resources)
    if (st.kind == "upi") upi_spread = std::max(upi_spread, st.utilisation);
  EXPECT_GT(upi_spread, 0.5);
  for (const auto& st : one.result.resources) EXPECT_NE(st.kind, "upi") << st.name;
}

// Pairwise exchange in lockstep (MPI's sendrecv pairwise): at step s rank r sends to r+s once the block
// of step s-1 from r-(s-1) has arrived. The flat reference for the crossover: the registered
// alltoall.direct lets ranks drift apart (no receive wait), and the incast that follows keeps it behind
// the hierarchical one at every size on these clusters (asserted below).
void build_alltoall_lockstep(const AlgoArgs& a, Transport& t) {
  const int n = a.nranks;
  const int64_t bb = a.count / n * t.elem_size();
  t.set_all_buffers({a.count * t.elem_size(), a.count * t.elem_size(), 0});
  std::vector<OpId> prev(size_t(n), kNoOp);
  std::vector<OpId> now(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) t.copy(r, in(r, r * bb), out(r, r * bb), bb);
  for (int s = 1; s < n; ++s) {
    t.set_step(s);
    for (int r = 0; r < n; ++r)
      now[size_t(r)] = t.put(r, in(r, ((r + s) % n) * bb), out((r + s) % n, r * bb), bb,
                             {prev[size_t(((r - (s - 1)) % n + n) % n)]});
    prev = now;
  }
}

TEST(SimAllToAll, HierarchicalBeatsFlatAtSmallBlocksAndTheCrossoverIsFound) {
  const topo::Topology t = topo::make_preset("32xh200x2");  // 64 GPUs, 2 per node
  Simulator sim(t, model::defaults_for(t));
  const Algorithm& hier = find_algorithm("alltoall.hier");
  const Algorithm& direct = find_algorithm("alltoall.direct");
  AlgoArgs base;
  base.nranks = t.num_gpus();
  base.node_size = t.gpus_per_server();
  // Small blocks: the hierarchical one sends G-1 + N-1 = 32 messages per rank instead of 63.
  for (int64_t bytes : {int64_t(64) << 10, int64_t(1) << 20}) {
    AlgoArgs a = base;
    a.count = count_for_bytes(direct, bytes, DType::f32, base.nranks);
    const double tf = predict(sim, direct, a).result.time.value, th = predict(sim, hier, a).result.time.value;
    EXPECT_GT(tf, 1.3 * th) << bytes << " B: flat " << tf * 1e6 << " us, hier " << th * 1e6 << " us";
  }
  Algorithm lockstep;
  lockstep.name = "alltoall.lockstep";
  lockstep.collective = "alltoall";
  lockstep.build = build_alltoall_lockstep;
  const Crossover c = find_size_crossover(sim, hier, lockstep, base, 16 << 10, int64_t(1) << 30, 4);
  ASSERT_TRUE(c.at.has_value()) << "no crossover between 16 KiB and 1 GiB";
  EXPECT_TRUE(c.a_wins_below);  // hierarchical below, flat above
  EXPECT_GT(*c.at, double(1 << 20));
  EXPECT_LT(*c.at, double(int64_t(1) << 30));
  EXPECT_LE(*c.lo, *c.at);
  EXPECT_GE(*c.hi, *c.at);
}

TEST(SimSparse, CrossoverDensityAgainstDenseAllReduce) {
  const topo::Topology t = topo::make_preset("dgx-h100");
  Simulator sim(t, model::defaults_for(t));
  AlgoArgs base;
  base.nranks = 8;
  base.sparse.rows = 1 << 20;
  base.sparse.dim = 256;
  const std::vector<double> ds = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.9};
  const Algorithm& sparse = find_algorithm("allreduce.sparse");
  const Algorithm& dense = find_algorithm("allreduce.bidir");
  base.sparse.dist = IndexDist::uniform;
  const Crossover u = find_density_crossover(sim, sparse, dense, base, ds);
  base.sparse.dist = IndexDist::zipf;
  const Crossover z = find_density_crossover(sim, sparse, dense, base, ds);
  ASSERT_TRUE(u.at.has_value());
  ASSERT_TRUE(z.at.has_value());
  // Sparse wins at low density, dense above the crossover; somewhere between 1/(8n) and 0.9.
  EXPECT_TRUE(u.a_wins_below);
  EXPECT_GT(*u.at, 1.0 / 64);
  EXPECT_LT(*u.at, 0.9);
  // Skewed (Zipf) indices overlap more, so the union stays smaller and sparse keeps winning longer.
  EXPECT_GT(*z.at, *u.at);
  // At 0.1% the sparse path is an order of magnitude faster than reducing the whole table.
  EXPECT_LT(u.points.front().a.value * 10, u.points.front().b.value);
}

TEST(SimNccl, ProtocolFollowsSizeAsNcclTunes) {
  const topo::Topology t = topo::make_preset("dgx-h100");
  const model::ModelParams p = model::defaults_for(t);
  // Rings with NVLS off (NCCL_NVLS_ENABLE=0): LL, then LL128, then Simple as the size grows.
  const model::NcclComm c = model::nccl_comm_for(t, p, 8, 8, model::parse_nccl_settings("NCCL_NVLS_ENABLE=0"));
  EXPECT_TRUE(c.nvlink);
  EXPECT_FALSE(c.nvls);
  const auto small = model::nccl_plan(p, c, "allreduce", 1 << 10);
  const auto mid = model::nccl_plan(p, c, "allreduce", 8 << 20);
  const auto large = model::nccl_plan(p, c, "allreduce", int64_t(1) << 30);
  EXPECT_EQ(small.proto, model::Proto::ll);
  EXPECT_EQ(mid.proto, model::Proto::ll128);
  EXPECT_EQ(large.proto, model::Proto::simple);
  EXPECT_EQ(large.algo, model::NcclAlgo::ring);
  EXPECT_LT(small.channels, large.channels);
  // By default 8 Hopper GPUs on an NVSwitch take NVLS (NVLink SHARP) from a few MiB on, as NCCL 2.28 does;
  // tiny sizes stay on the LL ring (NVLS costs 25 us of latency in NCCL's model).
  const model::NcclComm d = model::nccl_comm_for(t, p, 8, 8);
  EXPECT_TRUE(d.nvls);
  EXPECT_EQ(model::nccl_plan(p, d, "allreduce", 1 << 10).algo, model::NcclAlgo::ring);
  EXPECT_EQ(model::nccl_plan(p, d, "allreduce", 8 << 20).algo, model::NcclAlgo::nvls);
  EXPECT_EQ(model::nccl_plan(p, d, "allreduce", int64_t(1) << 30).algo, model::NcclAlgo::nvls);
  // 4 GPUs of the node: no NVLS (Hopper needs 5 or more).
  EXPECT_FALSE(model::nccl_comm_for(t, p, 4, 4).nvls);
  // NCCL's own estimate for a tiny all-reduce on 8 GPUs over NVLink: ring LL, 6.6 + 14 x 0.6 us.
  EXPECT_NEAR(small.tuned_time.us(), 6.6 + 14 * 0.6, 0.1);
  // The simulated baseline follows NCCL's latency model at tiny sizes, each LL step no shorter than a flag hop
  // across NVLink as measured on 2 x H200 (0.757 us, where NCCL's table says 0.6): 6.6 + 14 x 0.757 us.
  EXPECT_NEAR(small.latency.us(), 6.6 + 14 * 0.757, 0.01);
  Simulator sim(t, p);
  const Algorithm& nccl = find_algorithm("allreduce.nccl");
  const Prediction pr = predict(sim, nccl, args_for(8, 1 << 10, nccl));
  EXPECT_NEAR(pr.result.time.us(), small.latency.us(), 0.1 * small.latency.us());
  EXPECT_NE(pr.record.note.find("ll"), std::string::npos);
  // PCIe-only: no LL128 (NCCL enables it only on NVLink paths).
  const topo::Topology pcie = topo::make_preset("pcie-2socket");
  const model::ModelParams pp = model::defaults_for(pcie);
  const model::NcclComm pc = model::nccl_comm_for(pcie, pp, 8, 8);
  EXPECT_FALSE(pc.nvlink);
  for (int64_t b = 1 << 10; b <= int64_t(1) << 30; b *= 8)
    EXPECT_NE(model::nccl_plan(pp, pc, "allreduce", b).proto, model::Proto::ll128) << b;
}

TEST(SimNccl, TreeForSmallAllReducesAcrossManyNodes) {
  const topo::Topology t = topo::make_preset("16xdgx-h100");
  const model::ModelParams p = model::defaults_for(t);
  const model::NcclComm c = model::nccl_comm_for(t, p, t.num_gpus(), t.gpus_per_server());
  EXPECT_EQ(c.nnodes, 16);
  EXPECT_EQ(model::nccl_plan(p, c, "allreduce", 64 << 10).algo, model::NcclAlgo::tree);
  // Large all-reduces across 16 nodes: NCCL's estimates for the double binary tree and NVLSTree (NVLS inside the
  // node, trees across) come within 1% of each other at 1 GiB and both beat the ring, whose 254 steps cost ~1.7 ms
  // of latency in its model. With NVLS off, no NVLS algorithm.
  const auto big = model::nccl_plan(p, c, "allreduce", int64_t(1) << 30).algo;
  EXPECT_TRUE(big == model::NcclAlgo::tree || big == model::NcclAlgo::nvls_tree) << model::nccl_algo_name(big);
  const model::NcclComm off =
      model::nccl_comm_for(t, p, t.num_gpus(), t.gpus_per_server(), model::parse_nccl_settings("NCCL_NVLS_ENABLE=0"));
  const auto big_off = model::nccl_plan(p, off, "allreduce", int64_t(1) << 30).algo;
  EXPECT_TRUE(big_off == model::NcclAlgo::tree || big_off == model::NcclAlgo::ring) << model::nccl_algo_name(big_off);
  EXPECT_EQ(model::nccl_plan(p, c, "allgather", 64 << 10).algo, model::NcclAlgo::ring);
}

TEST(SimFolded, FoldedRunsEqualFullRunsOnMediumClusters) {
  // 64 servers x 2 GPUs: two leaf groups of 32 servers, so ranks [0, 64) represent all 128; rings need
  // only one server's (their routes shift with the server, sim/symmetric.hpp).
  const topo::Topology t = topo::make_preset("64xh200x2");
  Simulator sim(t, model::defaults_for(t));
  ASSERT_EQ(sim.fold_period(t.num_gpus()), 64);
  for (auto [name, period] : {std::pair{"allreduce.ring", 2}, std::pair{"alltoall.hier", 64},
                              std::pair{"allgather.ring", 2}, std::pair{"reducescatter.hier", 64}}) {
    const Algorithm& a = find_algorithm(name);
    AlgoArgs args = args_for(t.num_gpus(), int64_t(16) << 20, a, t.gpus_per_server());
    PredictOptions full, folded;
    full.symmetry = Symmetry::off;
    folded.symmetry = Symmetry::require;
    const Prediction pf = predict(sim, a, args, full), pr = predict(sim, a, args, folded);
    EXPECT_EQ(pr.fold_period, period) << name;
    EXPECT_NEAR(pr.result.time.value, pf.result.time.value, 1e-9 * pf.result.time.value) << name;
    EXPECT_LT(pr.result.flows, pf.result.flows) << name;
  }
  // A rooted algorithm is not symmetric: folding is refused, the full engine runs.
  const Algorithm& bc = find_algorithm("broadcast.binomial");
  PredictOptions folded;
  folded.symmetry = Symmetry::require;
  EXPECT_THROW(predict(sim, bc, args_for(t.num_gpus(), 1 << 20, bc), folded), Error);
  // A selection of GPUs breaks the topology's symmetry.
  Simulator part(topo::select_gpus(t, {0, 1, 2, 3}), model::defaults_for(t));
  EXPECT_EQ(part.fold_period(4), 0);
}

}  // namespace
}  // namespace cclab::sim
