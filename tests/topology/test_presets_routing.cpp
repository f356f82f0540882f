// Presets (node and link counts, bandwidths with sources), routing (NVLink, --without nvlink, --no-p2p,
// clusters), GPU selection and the nvidia-smi style labels.
#include <gtest/gtest.h>
#include <time.h>

#include <functional>
#include <map>

#include "core/error.hpp"
#include "topology/topology.hpp"

using namespace cclab;
using namespace cclab::topo;

namespace {

std::map<NodeKind, int> count_nodes(const Topology& t) {
  std::map<NodeKind, int> c;
  for (auto [v, end] = boost::vertices(t.graph); v != end; ++v) ++c[t.node(*v).kind];
  return c;
}

std::map<LinkKind, int> count_links(const Topology& t) {
  std::map<LinkKind, int> c;
  for (auto [e, end] = boost::edges(t.graph); e != end; ++e) ++c[t.link(*e).kind];
  return c;
}

// "n0.gpu0 n0.pcie0 n0.cpu0 ..." : the nodes a path visits.
std::string hops(const Topology& t, const Path& p, NodeId from) {
  std::string s = t.node(from).name;
  for (const LinkId& e : p.links) s += " " + t.node(boost::target(e, t.graph)).name;
  return s;
}

std::string kinds(const Topology& t, const Path& p) {
  std::string s;
  for (const LinkId& e : p.links) s += std::string(s.empty() ? "" : ",") + std::string(link_kind_name(t.link(e).kind));
  return s;
}

void expect_input_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an input error mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

}  // namespace

TEST(Presets, DgxH100CountsAndBandwidths) {
  const Topology t = make_preset("dgx-h100");
  EXPECT_EQ(t.num_gpus(), 8);
  EXPECT_EQ(t.num_servers(), 1);
  EXPECT_EQ(t.gpus_per_server(), 8);
  auto n = count_nodes(t);
  EXPECT_EQ(n[NodeKind::gpu], 8);
  EXPECT_EQ(n[NodeKind::nvswitch], 1);
  EXPECT_EQ(n[NodeKind::pcie_switch], 4);
  EXPECT_EQ(n[NodeKind::cpu], 2);
  EXPECT_EQ(n[NodeKind::host_memory], 2);
  EXPECT_EQ(n[NodeKind::nic], 8);
  auto l = count_links(t);
  EXPECT_EQ(l[LinkKind::nvlink], 16);  // 8 GPUs x 2 directions
  EXPECT_EQ(l[LinkKind::pcie], 40);    // (8 GPU + 8 NIC + 4 uplinks) x 2
  EXPECT_EQ(l[LinkKind::upi], 2);
  EXPECT_EQ(l[LinkKind::memory], 4);
  EXPECT_EQ(t.num_links(), 62);
  // Per-direction NVLink injection of every GPU is the datasheet's 18 x 25 GB/s.
  for (int g = 0; g < 8; ++g) {
    double nvl = 0;
    int lanes = 0;
    for (auto [e, end] = boost::out_edges(t.gpu(g), t.graph); e != end; ++e) {
      if (t.link(*e).kind != LinkKind::nvlink) continue;
      nvl += t.link(*e).bw.value;
      lanes += t.link(*e).lanes;
      EXPECT_NE(t.link(*e).source.find("25 GB/s"), std::string::npos);
    }
    EXPECT_DOUBLE_EQ(nvl, 450e9);
    EXPECT_EQ(lanes, 18);
    EXPECT_DOUBLE_EQ(t.node(t.gpu(g)).mem_bw.value, 3.35e12);
    EXPECT_GT(t.node(t.gpu(g)).flops, 9e14);
    EXPECT_FALSE(t.node(t.gpu(g)).source.empty());
  }
  // Every link has a source and a dense id.
  for (int id = 0; id < t.num_links(); ++id) {
    EXPECT_EQ(t.link(t.link_by_id(id)).id, id);
    EXPECT_FALSE(t.link(t.link_by_id(id)).source.empty());
  }
  // GPUs 0-3 on socket 0, 4-7 on socket 1.
  EXPECT_EQ(t.node(t.gpu(3)).socket, 0);
  EXPECT_EQ(t.node(t.gpu(4)).socket, 1);
}

TEST(Presets, OtherMachines) {
  const Topology a = make_preset("dgx-a100");
  EXPECT_EQ(a.num_gpus(), 8);
  const Path pa = a.route_gpus(0, 7);
  EXPECT_DOUBLE_EQ(pa.bottleneck.value, 300e9);  // 12 x 25 GB/s
  EXPECT_EQ(connection_label(a, 0, 7), "NV12");
  EXPECT_DOUBLE_EQ(a.route_gpus(0, 7, {.without_nvlink = true}).bottleneck.value, 16e9);  // NCCL AMD_BW

  const Topology h = make_preset("hgx-h200");
  EXPECT_DOUBLE_EQ(h.node(h.gpu(0)).mem_bw.value, 4.8e12);
  EXPECT_DOUBLE_EQ(h.route_gpus(0, 5).bottleneck.value, 397e9);  // measured on the 2 x H200 machine
  EXPECT_NE(h.link(h.route_gpus(0, 5).links[0]).source.find("2026-11-22"), std::string::npos);

  const Topology x2 = make_preset("h200x2");
  EXPECT_EQ(x2.num_gpus(), 2);
  EXPECT_EQ(count_nodes(x2)[NodeKind::cpu], 1);
  EXPECT_EQ(count_nodes(x2)[NodeKind::nvswitch], 1);
  EXPECT_EQ(connection_label(x2, 0, 1), "NV18");
  EXPECT_DOUBLE_EQ(x2.route_gpus(0, 1).bottleneck.value, 397e9);
  const Path pcie = x2.route_gpus(0, 1, {.without_nvlink = true});
  EXPECT_EQ(kinds(x2, pcie), "pcie,pcie");
  EXPECT_DOUBLE_EQ(pcie.bottleneck.value, 48e9);  // NCCL's assumption on that machine

  const Topology p = make_preset("pcie-2socket");
  EXPECT_EQ(count_links(p)[LinkKind::nvlink], 0);
  EXPECT_EQ(count_nodes(p)[NodeKind::pcie_switch], 4);
  EXPECT_EQ(count_nodes(p)[NodeKind::host_memory], 2);
}

TEST(Routing, NvlinkOnDgxH100) {
  const Topology t = make_preset("dgx-h100");
  const Path p = t.route_gpus(0, 7);
  EXPECT_EQ(hops(t, p, t.gpu(0)), "n0.gpu0 n0.nvswitch n0.gpu7");
  EXPECT_EQ(kinds(t, p), "nvlink,nvlink");
  EXPECT_DOUBLE_EQ(p.bottleneck.value, 450e9);
  EXPECT_NEAR(p.latency.us(), 0.6, 1e-12);
  EXPECT_FALSE(p.staged());
  // Deterministic and memoised: the same links again, and in a copy of the topology.
  const Path again = t.route_gpus(0, 7);
  EXPECT_EQ(again.links, p.links);
  const Topology copy = t;
  EXPECT_EQ(hops(copy, copy.route_gpus(0, 7), copy.gpu(0)), hops(t, p, t.gpu(0)));
}

TEST(Routing, WithoutNvlinkCrossesUpi) {
  const Topology t = make_preset("dgx-h100");
  const RouteOptions o{.without_nvlink = true};
  const Path p = t.route_gpus(0, 7, o);
  EXPECT_EQ(hops(t, p, t.gpu(0)), "n0.gpu0 n0.pcie0 n0.cpu0 n0.cpu1 n0.pcie3 n0.gpu7");
  EXPECT_EQ(kinds(t, p), "pcie,pcie,upi,pcie,pcie");
  EXPECT_DOUBLE_EQ(p.bottleneck.value, 22e9);  // NCCL's SRP_QPI_BW
  EXPECT_NEAR(p.latency.us(), 2.5, 1e-9);
  // Same switch: one bridge; same socket, other switch: through the CPU.
  EXPECT_EQ(hops(t, t.route_gpus(0, 1, o), t.gpu(0)), "n0.gpu0 n0.pcie0 n0.gpu1");
  EXPECT_EQ(hops(t, t.route_gpus(0, 2, o), t.gpu(0)), "n0.gpu0 n0.pcie0 n0.cpu0 n0.pcie1 n0.gpu2");
  EXPECT_EQ(connection_label(t, 0, 1, o), "PIX");
  EXPECT_EQ(connection_label(t, 0, 2, o), "NODE");
  EXPECT_EQ(connection_label(t, 0, 7, o), "SYS");
}

TEST(Routing, NoP2pStagesThroughHostMemory) {
  const Topology t = make_preset("dgx-h100");
  const RouteOptions o{.no_p2p = true};
  const Path cross = t.route_gpus(0, 7, o);
  EXPECT_TRUE(cross.staged());
  EXPECT_EQ(cross.second_leg, 3u);
  EXPECT_EQ(hops(t, cross, t.gpu(0)), "n0.gpu0 n0.pcie0 n0.cpu0 n0.mem0 n0.cpu0 n0.cpu1 n0.pcie3 n0.gpu7");
  EXPECT_EQ(kinds(t, cross), "pcie,pcie,memory,memory,upi,pcie,pcie");
  EXPECT_DOUBLE_EQ(cross.bottleneck.value, 22e9);
  // Same socket: no UPI; the writer's socket memory is the staging buffer.
  const Path local = t.route_gpus(4, 5, o);
  EXPECT_EQ(hops(t, local, t.gpu(4)), "n0.gpu4 n0.pcie2 n0.cpu1 n0.mem1 n0.cpu1 n0.pcie2 n0.gpu5");
  EXPECT_DOUBLE_EQ(local.bottleneck.value, 63e9);
  // Host memory is a node with finite memory links that every staged transfer of a socket shares.
  EXPECT_EQ(t.host_memory_of(5), t.find_node("n0.mem1"));
  EXPECT_DOUBLE_EQ(t.node(t.host_memory_of(5)).mem_bw.value, 307.2e9);
  const Path to_host = t.route(t.gpu(5), t.host_memory_of(5));
  EXPECT_EQ(kinds(t, to_host), "pcie,pcie,memory");
}

TEST(Routing, ClusterRailsAndSpines) {
  const Topology t = make_preset("2xdgx-h100");
  EXPECT_EQ(t.num_gpus(), 16);
  EXPECT_EQ(t.num_servers(), 2);
  EXPECT_EQ(t.gpus_per_server(), 8);
  // Same rail: through the rail's leaf only.
  const Path same = t.route_gpus(1, 9);
  EXPECT_EQ(hops(t, same, t.gpu(1)), "n0.gpu1 n0.pcie0 n0.nic1 leaf.g0.r1 n1.nic1 n1.pcie0 n1.gpu1");
  EXPECT_DOUBLE_EQ(same.bottleneck.value, 50e9);
  // Different rails: leaf -> spine -> leaf.
  const Path cross = t.route_gpus(0, 11);
  EXPECT_EQ(kinds(t, cross), "pcie,pcie,network,network,network,network,pcie,pcie");
  EXPECT_EQ(t.node(boost::target(cross.links[3], t.graph)).name.rfind("spine", 0), 0u);
  // Inside a server: NVLink as in one DGX.
  EXPECT_EQ(kinds(t, t.route_gpus(8, 15)), "nvlink,nvlink");
  EXPECT_EQ(connection_label(t, 0, 8), "NET");
  EXPECT_EQ(connection_label(t, 8, 9), "NV18");
}

TEST(Routing, ClusterOversubscriptionAndGroups) {
  const Topology a = make_preset("64xdgx-h100");
  const Topology b = make_preset("64xdgx-h100:os2");
  EXPECT_EQ(a.fabric.servers_per_leaf, 32);
  EXPECT_EQ(a.fabric.leaves.size(), 16u);  // 2 groups x 8 rails
  EXPECT_EQ(a.fabric.spines.size(), 32u);
  EXPECT_EQ(b.fabric.spines.size(), 16u);
  EXPECT_EQ(b.fabric.oversubscription, 2);
  // Total leaf uplink bandwidth: downlinks / oversubscription.
  auto uplink_total = [](const Topology& t) {
    double s = 0;
    for (auto [e, end] = boost::out_edges(t.fabric.leaves[0], t.graph); e != end; ++e) {
      if (t.node(boost::target(*e, t.graph)).name.rfind("spine", 0) == 0) s += t.link(*e).bw.value;
    }
    return s;
  };
  EXPECT_DOUBLE_EQ(uplink_total(a), 32 * 50e9);
  EXPECT_DOUBLE_EQ(uplink_total(b), 16 * 50e9);
  // Same rail, different leaf groups: through a spine.
  EXPECT_EQ(kinds(a, a.route_gpus(0, 32 * 8)), "pcie,pcie,network,network,network,network,pcie,pcie");
  // D-mod-k: destinations on different ports of a leaf use different spines.
  auto spine_of = [&](int dst) { return a.node(boost::target(a.route_gpus(0, dst).links[3], a.graph)).name; };
  EXPECT_NE(spine_of(33 * 8), spine_of(34 * 8));
}

// Time limits hold for optimised builds; sanitizer and debug builds get 10x.
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
constexpr double kSlack = 10;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr double kSlack = 10;
#else
constexpr double kSlack = 1;
#endif
#else
constexpr double kSlack = 1;
#endif

// CPU time of this thread: what the code costs, not how busy the (shared) machine is.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

TEST(Routing, LargeClusterBuildsAndRoutesFast) {
  const double t0 = cpu_seconds();
  const Topology t = make_preset("2048xdgx-h100");
  const double build_s = cpu_seconds() - t0;
  EXPECT_EQ(t.num_gpus(), 16384);
  EXPECT_LT(build_s, 1.0 * kSlack) << "building 2048xdgx-h100 took " << build_s << " s";
  const double t1 = cpu_seconds();
  double total_lat = 0;
  for (int g = 0; g < t.num_gpus(); ++g) total_lat += t.route_gpus(g, (g + 1) % t.num_gpus()).latency.value;
  const double route_s = cpu_seconds() - t1;
  EXPECT_GT(total_lat, 0);
  EXPECT_LT(route_s, 1.0 * kSlack) << "16384 ring routes took " << route_s << " s";
  std::printf("2048xdgx-h100: %zu nodes, %d links, built in %.3f s, 16384 routes in %.3f s (CPU time)\n",
              boost::num_vertices(t.graph), t.num_links(), build_s, route_s);
}

TEST(Labels, MatrixNotation) {
  const Topology h = make_preset("dgx-h100");
  int nv18 = 0;
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) nv18 += a != b && connection_label(h, a, b) == "NV18";
  EXPECT_EQ(nv18, 56);
  const Topology p = make_preset("pcie-2socket");
  EXPECT_EQ(connection_label(p, 0, 0), "X");
  EXPECT_EQ(connection_label(p, 0, 1), "PIX");
  EXPECT_EQ(connection_label(p, 0, 3), "NODE");
  EXPECT_EQ(connection_label(p, 0, 4), "SYS");
  EXPECT_EQ(connection_label(p, 7, 2), "SYS");
  const std::string m = matrix_text(p);
  EXPECT_NE(m.find("GPU0\t X \tPIX\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t0\n"), std::string::npos) << m;
  // Clusters above 16 GPUs print server 0 with a note.
  const std::string big = matrix_text(make_preset("4xdgx-h100"));
  EXPECT_EQ(big.find("GPU8"), std::string::npos);
  EXPECT_NE(big.find("server 0 of 4 servers"), std::string::npos);
}

TEST(Topology, UniformAndSelect) {
  const Topology u = make_uniform(4, GBps(100), microseconds(2));
  EXPECT_EQ(u.num_gpus(), 4);
  EXPECT_EQ(u.num_links(), 12);
  const Path p = u.route_gpus(3, 1);
  EXPECT_EQ(p.links.size(), 1u);
  EXPECT_DOUBLE_EQ(p.bottleneck.value, 100e9);
  EXPECT_DOUBLE_EQ(p.latency.value, 2e-6);

  const Topology h = make_preset("dgx-h100");
  const Topology s = select_gpus(h, {0, 1, 4, 5});
  EXPECT_EQ(s.num_gpus(), 4);
  EXPECT_EQ(s.node(s.gpu(2)).name, "n0.gpu4");
  EXPECT_EQ(connection_label(s, 1, 2), "NV18");
  EXPECT_EQ(connection_label(s, 1, 2, {.without_nvlink = true}), "SYS");
  for (int id = 0; id < s.num_links(); ++id) EXPECT_EQ(s.link(s.link_by_id(id)).id, id);
  // A cluster keeps its fabric through a selection.
  const Topology c = select_gpus(make_preset("2xdgx-h100"), {0, 8});
  EXPECT_EQ(kinds(c, c.route_gpus(0, 1)), "pcie,pcie,network,network,pcie,pcie");
}

TEST(BadInput, PresetsAndSelections) {
  expect_input_error([] { make_preset("dgx-h900"); }, "unknown topology preset 'dgx-h900'");
  expect_input_error([] { make_preset("4xdgx-h900"); }, "unknown server preset 'dgx-h900'");
  expect_input_error([] { make_preset("0xdgx-h100"); }, "out of range");
  expect_input_error([] { make_preset("4xdgx-h100:os0"); }, "bad suffix");
  expect_input_error([] { make_preset("4xdgx-h100:fast"); }, "bad suffix");
  expect_input_error([] { load_topology("no-such-thing"); }, "unknown topology preset 'no-such-thing'");
  const Topology h = make_preset("dgx-h100");
  expect_input_error([&] { select_gpus(h, {0, 8}); }, "GPU 8 does not exist");
  expect_input_error([&] { select_gpus(h, {1, 1}); }, "listed twice");
  expect_input_error([&] { h.route_gpus(0, 12); }, "GPU 12 does not exist");
  expect_input_error([] { make_uniform(4, GBps(0), microseconds(1)); }, "bandwidth");
  expect_input_error([] { make_uniform(4, GBps(-5), microseconds(1)); }, "bandwidth");
  EXPECT_TRUE(is_preset("128xdgx-h100:os2"));
  EXPECT_FALSE(is_preset("128xdgx-h100:os"));
}

TEST(BadInput, CheckFindsBrokenGraphs) {
  // Disconnected: two GPUs, no link.
  Topology t;
  t.name = "broken";
  Node g;
  g.kind = NodeKind::gpu;
  g.mem_bw = GBps(1000);
  g.name = "a";
  g.index = 0;
  const NodeId a = t.add_node(g);
  g.name = "b";
  g.index = 1;
  const NodeId b = t.add_node(g);
  expect_input_error([&] { t.check(); }, "disconnected");
  expect_input_error([&] { t.route_gpus(0, 1); }, "no route a -> b");
  Link l;
  l.bw = GBps(0);
  t.add_duplex(a, b, l);
  expect_input_error([&] { t.check(); }, "bandwidth 0");
  // A pcie-only box has no route without NVLink? It does (PCIe); a uniform NVLink mesh does not.
  const Topology u = make_uniform(2, GBps(10), microseconds(1));
  expect_input_error([&] { u.route_gpus(0, 1, {.without_nvlink = true}); }, "without NVLink");
}
