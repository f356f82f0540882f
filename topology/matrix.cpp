// Text views of a topology: the nvidia-smi topo -m style GPU x GPU matrix and the `cclab topo` summary.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "topology/topology.hpp"

namespace cclab::topo {

namespace {

// Above this many GPUs the matrix shows server 0 only (a note says so).
constexpr int kMatrixMaxGpus = 16;

const char* kLegend =
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    "  NET  = Connection traversing the network (GPUs on different servers)\n";

std::string gbps(BytesPerSec b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g GB/s", b.gbps());
  return buf;
}

}  // namespace

std::string connection_label(const Topology& t, int a, int b) { return connection_label(t, a, b, RouteOptions{}); }

// The label names the hardware path a peer-to-peer transfer takes (with --without nvlink, the PCIe one);
// staging under --no-p2p does not change the wiring, so it is ignored here.
std::string connection_label(const Topology& t, int a, int b, const RouteOptions& opt) {
  const NodeId va = t.gpu(a);
  const NodeId vb = t.gpu(b);
  if (a == b) return "X";
  if (t.node(va).server != t.node(vb).server) return "NET";
  RouteOptions hw;
  hw.without_nvlink = opt.without_nvlink;
  const Path p = t.route_gpus(a, b, hw);
  int nv_lanes = -1;
  bool upi = false, network = false, cpu = false;
  int switches = 0;
  for (const LinkId& e : p.links) {
    const Link& l = t.link(e);
    if (l.kind == LinkKind::nvlink) nv_lanes = nv_lanes < 0 ? l.lanes : std::min(nv_lanes, l.lanes);
    if (l.kind == LinkKind::upi) upi = true;
    if (l.kind == LinkKind::network) network = true;
    const Node& to = t.node(boost::target(e, t.graph));
    if (to.kind == NodeKind::cpu) cpu = true;
    if (to.kind == NodeKind::pcie_switch) ++switches;
  }
  if (nv_lanes >= 0) return "NV" + std::to_string(nv_lanes);
  if (upi) return "SYS";
  if (network) return "NET";
  if (cpu) return switches > 0 ? "NODE" : "PHB";
  return switches <= 1 ? "PIX" : "PXB";
}

std::string matrix_text(const Topology& t) { return matrix_text(t, RouteOptions{}); }

std::string matrix_text(const Topology& t, const RouteOptions& opt) {
  const int n = t.num_gpus();
  std::vector<int> shown;
  for (int i = 0; i < n; ++i) {
    if (n <= kMatrixMaxGpus || t.node(t.gpu(i)).server == 0) shown.push_back(i);
  }
  std::ostringstream out;
  out << "\t";
  for (int j : shown) out << "GPU" << j << "\t";
  out << "NUMA Affinity\n";
  for (int i : shown) {
    out << "GPU" << i;
    for (int j : shown) {
      const std::string l = connection_label(t, i, j, opt);
      out << "\t" << (l == "X" ? " X " : l);
    }
    const int socket = t.node(t.gpu(i)).socket;
    out << "\t" << (socket >= 0 ? std::to_string(socket) : "N/A") << "\n";
  }
  if (static_cast<int>(shown.size()) < n) {
    out << "\n(showing the " << shown.size() << " GPUs of server 0 of " << t.num_servers() << " servers, " << n
        << " GPUs in all; pairs on different servers are NET)\n";
  }
  if (opt.without_nvlink) out << "\n(--without nvlink: labels show the PCIe path)\n";
  if (opt.no_p2p) out << "\n(--no-p2p stages every transfer through host memory; the labels show the wiring)\n";
  out << "\n" << kLegend;
  return out.str();
}

std::string describe(const Topology& t) {
  std::ostringstream out;
  out << "topology: " << t.name << "\n";
  if (!t.description.empty()) out << "  " << t.description << "\n";
  out << "servers: " << t.num_servers() << ", GPUs: " << t.num_gpus() << " (" << t.gpus_per_server()
      << " in server 0)\n";
  std::map<NodeKind, int> nodes;
  for (auto [v, end] = boost::vertices(t.graph); v != end; ++v) ++nodes[t.node(*v).kind];
  out << "nodes: " << boost::num_vertices(t.graph) << " (";
  bool first = true;
  for (auto [k, c] : nodes) {
    out << (first ? "" : ", ") << node_kind_name(k) << " " << c;
    first = false;
  }
  out << ")\n";
  std::map<LinkKind, int> links;
  for (auto [e, end] = boost::edges(t.graph); e != end; ++e) ++links[t.link(*e).kind];
  out << "links: " << boost::num_edges(t.graph) << " directed (";
  first = true;
  for (auto [k, c] : links) {
    out << (first ? "" : ", ") << link_kind_name(k) << " " << c;
    first = false;
  }
  out << ")\n";
  if (!t.fabric.empty()) {
    const Fabric& f = t.fabric;
    out << "fabric: rail-optimised two-tier fat tree, " << f.rails << " rails, " << f.servers_per_leaf
        << " servers per leaf, " << f.leaves.size() << " leaves, " << f.spines.size() << " spines, "
        << f.oversubscription << ":1 oversubscription\n";
  }
  // Per GPU: model, memory, compute, NVLink injection (sum of its outgoing NVLink links), socket.
  out << "GPUs" << (t.num_gpus() > kMatrixMaxGpus ? " (server 0)" : "") << ":\n";
  for (int i = 0; i < t.num_gpus(); ++i) {
    const NodeId v = t.gpu(i);
    const Node& g = t.node(v);
    if (t.num_gpus() > kMatrixMaxGpus && g.server != 0) continue;
    BytesPerSec nvl;
    int lanes = 0;
    BytesPerSec pcie;
    for (auto [e, end] = boost::out_edges(v, t.graph); e != end; ++e) {
      const Link& l = t.link(*e);
      if (l.kind == LinkKind::nvlink) {
        nvl = nvl + l.bw;
        lanes += l.lanes;
      }
      if (l.kind == LinkKind::pcie) pcie = std::max(pcie, l.bw);
    }
    char line[512];
    std::snprintf(
        line, sizeof line, "  GPU%-3d %-10s %-16s socket %-3s HBM %s, %.4g TFLOP/s, NVLink %s (%d links), PCIe %s\n", i,
        g.name.c_str(), g.model.c_str(), g.socket >= 0 ? std::to_string(g.socket).c_str() : "-", gbps(g.mem_bw).c_str(),
        g.flops / 1e12, lanes > 0 ? gbps(nvl).c_str() : "none", lanes, pcie.value > 0 ? gbps(pcie).c_str() : "none");
    out << line;
  }
  return out.str();
}

std::vector<std::string> topology_differences(const Topology& machine, const Topology& preset) {
  std::vector<std::string> out;
  const int n = machine.num_gpus();
  if (preset.num_gpus() < n) {
    out.push_back("GPUs: the machine has " + std::to_string(n) + ", the preset " + std::to_string(preset.num_gpus()));
    return out;
  }
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const std::string m = connection_label(machine, a, b), p = connection_label(preset, a, b);
      if (m != p)
        out.push_back("GPU" + std::to_string(a) + "-GPU" + std::to_string(b) + ": machine " + m + ", preset " + p);
    }
  for (int g = 0; g < n; ++g) {
    const Node& m = machine.node(machine.gpu(g));
    const Node& p = preset.node(preset.gpu(g));
    // An nvidia-smi matrix names no model: the import assumes one and says so in the GPU's source.
    const bool model_stated = !m.model.empty() && m.source.find("assumed") == std::string::npos;
    if (model_stated && m.model != p.model)
      out.push_back("GPU" + std::to_string(g) + " model: machine " + m.model + ", preset " + p.model);
    if (m.socket >= 0 && p.socket >= 0 && m.socket != p.socket)
      out.push_back("GPU" + std::to_string(g) + " socket: machine " + std::to_string(m.socket) + ", preset " +
                    std::to_string(p.socket));
  }
  return out;
}

}  // namespace cclab::topo
