// Built-in machines and clusters of them. Every number comes from topology/hardware.hpp with its source.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/error.hpp"
#include "topology/hardware.hpp"
#include "topology/topology.hpp"

namespace cclab::topo {

namespace {

// One server's shape. NVSwitch chips are modelled as one non-blocking logical switch: a GPU stripes its
// traffic over all its NVLinks (into every chip), so one link of lanes x per-link rate per direction is
// what a single transfer sees, and what the datasheet's per-GPU figure states.
struct ServerSpec {
  std::string title;
  hw::GpuSpec gpu;
  int gpus = 8;
  std::string nvswitch_model;  // empty: no NVLink
  Link nvlink;                 // GPU <-> NVSwitch
  int gpus_per_switch = 2;     // GPUs (and NICs) per PCIe switch; 0: GPUs attach straight to the CPU
  std::string pcie_switch_model;
  Link pcie;  // GPU/NIC <-> switch, and switch <-> CPU uplink
  int sockets = 2;
  std::string cpu_model;
  Link upi;
  BytesPerSec dram;
  std::string dram_source;
  Link memory;       // CPU <-> host memory
  bool nics = true;  // the standalone machine has NICs (clusters always add one per GPU)
  std::string nic_model;
  BytesPerSec nic_bw;
  std::string nic_source;
  Link nic_pcie;               // NIC <-> PCIe switch (or CPU)
  int nic_count = 0;           // NICs per server; 0: one per GPU. Fewer: NIC k sits beside GPU k * gpus / nic_count and
                               // serves GPUs [k * gpus / nic_count, (k + 1) * gpus / nic_count)
  bool nvlink_bridge = false;  // no NVSwitch: GPUs 2i and 2i+1 are joined by a bridge carrying `nvlink`
};

int nics_of(const ServerSpec& s) { return s.nic_count > 0 ? std::min(s.nic_count, s.gpus) : s.gpus; }

// Adds one server; returns the NIC each of its GPUs uses, by local GPU index (empty when it has none).
std::vector<NodeId> add_server(Topology& t, const ServerSpec& s, int server, bool with_nics) {
  const std::string p = "n" + std::to_string(server) + ".";
  std::vector<NodeId> cpus, nics;
  for (int k = 0; k < s.sockets; ++k) {
    Node c;
    c.kind = NodeKind::cpu;
    c.name = p + "cpu" + std::to_string(k);
    c.server = server;
    c.socket = k;
    c.model = s.cpu_model;
    cpus.push_back(t.add_node(c));
    Node m;
    m.kind = NodeKind::host_memory;
    m.name = p + "mem" + std::to_string(k);
    m.server = server;
    m.socket = k;
    m.mem_bw = s.dram;
    m.source = s.dram_source;
    m.model = "DRAM of socket " + std::to_string(k);
    t.add_duplex(cpus.back(), t.add_node(m), s.memory);
  }
  // Sockets are fully connected (two sockets: one UPI bundle).
  for (int a = 0; a < s.sockets; ++a) {
    for (int b = a + 1; b < s.sockets; ++b) t.add_duplex(cpus[a], cpus[b], s.upi);
  }
  NodeId nvswitch = Graph::null_vertex();
  if (!s.nvswitch_model.empty()) {
    Node n;
    n.kind = NodeKind::nvswitch;
    n.name = p + "nvswitch";
    n.server = server;
    n.model = s.nvswitch_model;
    nvswitch = t.add_node(n);
  }
  std::vector<NodeId> switches;
  if (s.gpus_per_switch > 0) {
    const int nsw = (s.gpus + s.gpus_per_switch - 1) / s.gpus_per_switch;
    for (int k = 0; k < nsw; ++k) {
      Node n;
      n.kind = NodeKind::pcie_switch;
      n.name = p + "pcie" + std::to_string(k);
      n.server = server;
      n.socket = k * s.sockets / nsw;  // switches split evenly over the sockets
      n.model = s.pcie_switch_model;
      switches.push_back(t.add_node(n));
      t.add_duplex(switches.back(), cpus[n.socket], s.pcie);
    }
  }
  const int nic_count = nics_of(s);
  std::vector<NodeId> gpu_nodes;
  for (int i = 0; i < s.gpus; ++i) {
    const int sw = s.gpus_per_switch > 0 ? i / s.gpus_per_switch : -1;
    const int socket = sw >= 0 ? t.node(switches[sw]).socket : i * s.sockets / s.gpus;
    const NodeId parent = sw >= 0 ? switches[sw] : cpus[socket];
    Node g;
    g.kind = NodeKind::gpu;
    g.name = p + "gpu" + std::to_string(i);
    g.server = server;
    g.socket = socket;
    g.index = server * s.gpus + i;
    g.mem_bw = s.gpu.hbm;
    g.flops = s.gpu.flops;
    g.source = s.gpu.source;
    g.model = s.gpu.model;
    g.pcie_p2p = s.gpu.pcie_p2p;
    const NodeId gv = t.add_node(g);
    gpu_nodes.push_back(gv);
    t.add_duplex(gv, parent, s.pcie);
    if (nvswitch != Graph::null_vertex()) t.add_duplex(gv, nvswitch, s.nvlink);
    if (s.nvlink_bridge && i % 2 == 1) t.add_duplex(gpu_nodes[i - 1], gv, s.nvlink);
    // NIC k beside the first GPU it serves.
    if (with_nics && int(int64_t(nics.size()) * s.gpus / nic_count) == i) {
      Node n;
      n.kind = NodeKind::nic;
      n.name = p + "nic" + std::to_string(nics.size());
      n.server = server;
      n.socket = socket;
      n.model = s.nic_model;
      n.source = s.nic_source;
      nics.push_back(t.add_node(n));
      t.add_duplex(nics.back(), parent, s.nic_pcie);
    }
  }
  if (!with_nics) return {};
  std::vector<NodeId> nic_of_gpu;
  for (int i = 0; i < s.gpus; ++i) nic_of_gpu.push_back(nics[size_t(int64_t(i) * nic_count / s.gpus)]);
  return nic_of_gpu;
}

ServerSpec dgx_h100() {
  ServerSpec s;
  s.title =
      "DGX H100: 8 H100 SXM5, NV18 into 4 NVSwitch chips, 4 PCIe Gen5 switches (2 GPUs + 2 ConnectX-7 each), "
      "2 Xeon 8480C joined by UPI";
  s.gpu = hw::kH100Sxm;
  s.nvswitch_model = "4 x NVSwitch gen3 (one logical non-blocking switch)";
  s.nvlink = hw::make_link(LinkKind::nvlink, 18 * hw::kNvlinkPerLink, 18, hw::kNvlinkHop,
                           std::string("18 x 25 = 450 GB/s; ") + hw::kNvlink4Source, hw::kNvlinkHopSource);
  s.pcie_switch_model = "PCIe Gen5 switch";
  s.pcie = hw::make_link(LinkKind::pcie, hw::kPcieGen5x16, 16, hw::kPcieHop, hw::kPcieGen5Source, hw::kPcieHopSource);
  s.cpu_model = "Xeon Platinum 8480C (Sapphire Rapids)";
  s.upi = hw::make_link(LinkKind::upi, hw::kUpiSapphireRapids, 4, hw::kUpiHop, hw::kUpiSapphireRapidsSource,
                        hw::kUpiHopSource);
  s.dram = hw::kDdr5x8;
  s.dram_source = hw::kDdr5x8Source;
  s.memory = hw::make_link(LinkKind::memory, hw::kDdr5x8, 8, hw::kMemHop, hw::kDdr5x8Source, hw::kMemHopSource);
  s.nic_model = "ConnectX-7 400 Gb/s";
  s.nic_bw = hw::kNdr400;
  s.nic_source = hw::kNdr400Source;
  s.nic_pcie = s.pcie;
  return s;
}

ServerSpec hgx_h200() {
  ServerSpec s = dgx_h100();
  s.title =
      "HGX H200: 8 H200 SXM 141GB, NV18 through NVSwitch at the rate measured on 2 of them, PCIe Gen5 "
      "switches with ConnectX-7, 2 Xeon 8480C joined by UPI";
  s.gpu = hw::kH200Sxm;
  s.nvlink = hw::make_link(LinkKind::nvlink, hw::kH200MeasuredNvlink, 18, hw::kNvlinkHop, hw::kH200MeasuredNvlinkSource,
                           hw::kNvlinkHopSource);
  return s;
}

ServerSpec h200x2() {
  ServerSpec s = hgx_h200();
  s.title =
      "the 2 x H200 machine of shared/hardware/h200x2.md: NV18 through NVSwitch (397 GB/s measured), "
      "virtualised PCIe (48 GB/s as NCCL assumed), one socket";
  s.gpus = 2;
  s.gpus_per_switch = 0;  // the VM shows no PCIe switch: each GPU hangs off the host bridge
  s.pcie = hw::make_link(LinkKind::pcie, hw::kPcieH200x2, 16, hw::kPcieHop, hw::kPcieH200x2Source, hw::kPcieHopSource);
  s.sockets = 1;
  // NCCL's dump on that machine (tests/data/topology/h200x2-nccl-topo.xml, 2026-11-22): GenuineIntel family 6
  // model 207, an Emerald Rapids class Xeon; nvidia-smi: NUMA node 0, CPUs 0-31.
  s.cpu_model = "Xeon, Emerald Rapids class (virtualised; NUMA node 0, CPUs 0-31)";
  s.dram = hw::kDdr5_5600x8;
  s.dram_source = std::string("not measured on nvidia-h200-x2; assumed for its CPU class: ") + hw::kDdr5_5600x8Source;
  s.memory = hw::make_link(LinkKind::memory, s.dram, 8, hw::kMemHop, s.dram_source, hw::kMemHopSource);
  s.nics = false;  // none reported by nvidia-smi topo -m on that machine
  s.nic_pcie = s.pcie;
  return s;
}

ServerSpec dgx_a100() {
  ServerSpec s;
  s.title =
      "DGX A100: 8 A100 SXM4 80GB, NV12 into 6 NVSwitch chips, 4 PCIe Gen4 switches (2 GPUs + 2 ConnectX-6 "
      "each), 2 EPYC 7742 joined by xGMI";
  s.gpu = hw::kA100Sxm;
  s.nvswitch_model = "6 x NVSwitch gen2 (one logical non-blocking switch)";
  s.nvlink = hw::make_link(LinkKind::nvlink, 12 * hw::kNvlinkPerLink, 12, hw::kNvlinkHop,
                           std::string("12 x 25 = 300 GB/s; ") + hw::kNvlink3Source, hw::kNvlinkHopSource);
  s.pcie_switch_model = "PCIe Gen4 switch";
  s.pcie = hw::make_link(LinkKind::pcie, hw::kPcieGen4x16, 16, hw::kPcieHop, hw::kPcieGen4Source, hw::kPcieHopSource);
  s.cpu_model = "AMD EPYC 7742 (Rome)";
  // xGMI / Infinity Fabric between the sockets; modelled with the upi link kind.
  s.upi = hw::make_link(LinkKind::upi, hw::kXgmiRome, 4, hw::kUpiHop, hw::kXgmiRomeSource, hw::kUpiHopSource);
  s.dram = hw::kDdr4x8;
  s.dram_source = hw::kDdr4x8Source;
  s.memory = hw::make_link(LinkKind::memory, hw::kDdr4x8, 8, hw::kMemHop, hw::kDdr4x8Source, hw::kMemHopSource);
  s.nic_model = "ConnectX-6 HDR 200 Gb/s";
  s.nic_bw = hw::kHdr200;
  s.nic_source = hw::kHdr200Source;
  s.nic_pcie = s.pcie;
  return s;
}

ServerSpec pcie_2socket() {
  ServerSpec s;
  s.title = "PCIe box: 8 L40S, no NVLink, 4 PCIe Gen4 switches of 2 GPUs, 2 per socket, 2 Xeon 8480C joined by UPI";
  s.gpu = hw::kL40S;
  s.pcie_switch_model = "PCIe Gen4 switch";
  s.pcie = hw::make_link(LinkKind::pcie, hw::kPcieGen4x16, 16, hw::kPcieHop, hw::kPcieGen4Source, hw::kPcieHopSource);
  s.cpu_model = "Xeon Platinum 8480C (Sapphire Rapids)";
  s.upi = hw::make_link(LinkKind::upi, hw::kUpiSapphireRapids, 4, hw::kUpiHop, hw::kUpiSapphireRapidsSource,
                        hw::kUpiHopSource);
  s.dram = hw::kDdr5x8;
  s.dram_source = hw::kDdr5x8Source;
  s.memory = hw::make_link(LinkKind::memory, hw::kDdr5x8, 8, hw::kMemHop, hw::kDdr5x8Source, hw::kMemHopSource);
  s.nics = false;  // clusters of it add one ConnectX-7 per GPU on the GPU's switch
  s.nic_pcie = s.pcie;
  return s;
}

ServerSpec hgx_h20() {
  ServerSpec s = dgx_h100();
  s.title =
      "HGX H20: 8 H20 96GB, NV18 (900 GB/s bidirectional) into the NVSwitch fabric; host as dgx-h100 (assumed: "
      "the published rows name no host), PCIe Gen5 switches with ConnectX-7";
  s.gpu = hw::kH20;
  s.nvlink = hw::make_link(LinkKind::nvlink, 18 * hw::kNvlinkPerLink, 18, hw::kNvlinkHop,
                           std::string("18 x 25 = 450 GB/s; ") + hw::kNvlink4H20Source, hw::kNvlinkHopSource);
  return s;
}

ServerSpec dgx_b200() {
  ServerSpec s;
  s.title =
      "DGX B200: 8 B200, NVLink 5 (18 links, 900 GB/s per direction) into 2 NVSwitch chips, PCIe Gen5 switches "
      "(2 GPUs + 2 ConnectX-7 400 Gb/s each), 2 Xeon Platinum 8570 joined by UPI";
  s.gpu = hw::kB200;
  s.nvswitch_model = "2 x NVLink 5 switch chip (one logical non-blocking switch)";
  s.nvlink = hw::make_link(LinkKind::nvlink, 18 * hw::kNvlink5PerLink, 18, hw::kNvlinkHop,
                           std::string("18 x 50 = 900 GB/s; ") + hw::kNvlink5Source, hw::kNvlinkHopSource);
  s.pcie_switch_model = "PCIe Gen5 switch";
  s.pcie = hw::make_link(LinkKind::pcie, hw::kPcieGen5x16, 16, hw::kPcieHop, hw::kPcieGen5Source, hw::kPcieHopSource);
  s.cpu_model = "Xeon Platinum 8570 (Emerald Rapids)";
  s.upi = hw::make_link(LinkKind::upi, hw::kUpiEmeraldRapids, 4, hw::kUpiHop, hw::kUpiEmeraldRapidsSource,
                        hw::kUpiHopSource);
  s.dram = hw::kDdr5_5600x8;
  s.dram_source = hw::kDdr5_5600x8Source;
  s.memory =
      hw::make_link(LinkKind::memory, hw::kDdr5_5600x8, 8, hw::kMemHop, hw::kDdr5_5600x8Source, hw::kMemHopSource);
  s.nic_model = "ConnectX-7 400 Gb/s (AWS p6-b200: EFA v4 at the same 400 Gb/s per GPU)";
  s.nic_bw = hw::kNdr400;
  s.nic_source = std::string(hw::kNdr400Source) + "; " + hw::kEfa400Source;
  s.nic_pcie = s.pcie;
  return s;
}

// 8 A100 SXM4 40GB with 4 HDR 200 Gb/s NICs per server (one per PCIe switch, shared by its 2 GPUs): the nodes of
// NVIDIA/nccl-tests#119 and NVIDIA/nccl#1048.
ServerSpec hgx_a100_4nic() {
  ServerSpec s = dgx_a100();
  s.title =
      "HGX A100 40GB: 8 A100 SXM4 40GB, NV12 into the NVSwitch fabric, 4 PCIe Gen4 switches (2 GPUs + 1 "
      "ConnectX-6 HDR 200 Gb/s each), 2 EPYC 7742 joined by xGMI";
  s.gpu = hw::kA100Sxm40;
  s.nic_count = 4;
  return s;
}

// The 2 x RTX 2080 Ti boxes of the published rows: one socket, both GPUs behind one PCIe Gen3 switch (nvidia-smi:
// PIX); GeForce parts, so no peer access over PCIe.
ServerSpec rtx2080ti_pcie() {
  ServerSpec s;
  s.title = "2 x GeForce RTX 2080 Ti behind one PCIe Gen3 x16 switch (PIX), no PCIe peer access (GeForce), one socket";
  s.gpu = hw::kRtx2080Ti;
  s.gpus = 2;
  s.gpus_per_switch = 2;
  s.pcie_switch_model = "PCIe Gen3 switch";
  s.pcie = hw::make_link(LinkKind::pcie, hw::kPcieGen3x16, 16, hw::kPcieHop, hw::kPcieGen3Source, hw::kPcieHopSource);
  s.sockets = 1;
  s.cpu_model = "Xeon (Cascade Lake class, assumed: the source names no CPU)";
  s.upi = s.pcie;  // one socket: unused
  s.dram = hw::kDdr4_2933x6;
  s.dram_source = hw::kDdr4_2933x6Source;
  s.memory =
      hw::make_link(LinkKind::memory, hw::kDdr4_2933x6, 6, hw::kMemHop, hw::kDdr4_2933x6Source, hw::kMemHopSource);
  s.nics = false;
  s.nic_pcie = s.pcie;
  return s;
}

ServerSpec rtx2080ti_nvlink() {
  ServerSpec s = rtx2080ti_pcie();
  s.title =
      "2 x GeForce RTX 2080 Ti joined by an NVLink bridge (2 NVLink 2 x8 links, 50 GB/s per direction), PCIe Gen3";
  s.nvlink_bridge = true;
  s.nvlink = hw::make_link(LinkKind::nvlink, 2 * hw::kNvlinkPerLink, 2, hw::kNvlinkHop,
                           std::string("2 x 25 = 50 GB/s; ") + hw::kNvlink2BridgeSource, hw::kNvlinkHopSource);
  return s;
}

struct Machine {
  const char* name;
  ServerSpec (*spec)();
};
const Machine kMachines[] = {
    {"dgx-h100", dgx_h100},
    {"dgx-a100", dgx_a100},
    {"hgx-h200", hgx_h200},
    {"h200x2", h200x2},
    {"pcie-2socket", pcie_2socket},
    {"hgx-h20", hgx_h20},
    {"dgx-b200", dgx_b200},
    {"hgx-a100-4nic", hgx_a100_4nic},
    {"rtx2080ti-pcie", rtx2080ti_pcie},
    {"rtx2080ti-nvlink", rtx2080ti_nvlink},
};

const Machine* find_machine(std::string_view name) {
  for (const auto& m : kMachines) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

std::string machine_list() {
  std::string s;
  for (const auto& m : kMachines) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s + ", <N>x<preset>[:os<K>]";
}

// Servers under one leaf switch per rail: a 64-port 400 Gb/s leaf (Quantum-2 QM9700) gives 32 ports down and
// 32 up at 1:1.
constexpr int kServersPerLeaf = 32;
// The largest cluster name accepted, in GPUs: 16384 x dgx-h100 = 131072 GPUs, the largest cluster issue 21 asks
// for. Building 8192 x dgx-h100 costs ~0.9 s of CPU and ~0.4 GB (measured 2026-11-22 on the 2-core CI host;
// 2048xdgx-h100 is held under 1 s by tests/topology LargeClusterBuildsAndRoutesFast), the largest about twice
// that; a larger name is refused at once (issue 9: every bad input answered in under 5 s) rather than spending
// minutes and gigabytes on a graph no sweep could use.
constexpr int64_t kMaxClusterGpus = 131072;

struct ClusterName {
  int servers = 0;
  int oversub = 1;
  const Machine* machine = nullptr;
};

// "<N>x<preset>[:os<K>]" -> parts; nullopt-like (servers == 0) when the name is not a cluster name.
ClusterName parse_cluster(const std::string& name, bool throw_errors) {
  ClusterName c;
  const auto x = name.find('x');
  if (x == std::string::npos || x == 0) return c;
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + x, n);
  if (ptr != name.data() + x) return c;  // not "<digits>x..."
  // Digits beyond int64 (ec = result_out_of_range) are still a cluster name, refused below by its size.
  if (ec == std::errc::result_out_of_range) n = std::numeric_limits<int64_t>::max();
  std::string rest = name.substr(x + 1);
  int os = 1;
  if (const auto colon = rest.find(':'); colon != std::string::npos) {
    const std::string suffix = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    bool ok = suffix.size() > 2 && suffix.rfind("os", 0) == 0;
    if (ok) {
      auto [p2, e2] = std::from_chars(suffix.data() + 2, suffix.data() + suffix.size(), os);
      ok = e2 == std::errc() && p2 == suffix.data() + suffix.size() && os >= 1 && os <= kServersPerLeaf;
    }
    if (!ok) {
      if (!throw_errors) return c;
      throw_input("cluster '" + name + "': bad suffix ':" + suffix + "' (want :os<K>, K in 1.." +
                  std::to_string(kServersPerLeaf) + ", e.g. :os2 for 2:1 oversubscription)");
    }
  }
  const Machine* m = find_machine(rest);
  if (!m) {
    if (!throw_errors) return c;
    throw_input("cluster '" + name + "': unknown server preset '" + rest + "' (presets: " + machine_list() + ")");
  }
  const int64_t per_server = m->spec().gpus;
  const int64_t max_servers = kMaxClusterGpus / per_server;
  if (n < 1 || n > max_servers) {
    if (!throw_errors) return c;
    const std::string digits = name.substr(0, x);
    throw_input("cluster '" + name + "': " + digits + " servers is out of range (1.." + std::to_string(max_servers) +
                " servers of " + rest + ", at most " + std::to_string(kMaxClusterGpus) + " GPUs)");
  }
  c.servers = static_cast<int>(n);
  c.oversub = os;
  c.machine = m;
  return c;
}

Topology make_cluster(const std::string& name, const ClusterName& c) {
  ServerSpec s = c.machine->spec();
  if (s.nic_model.empty()) {
    s.nic_model = "ConnectX-7 400 Gb/s";
    s.nic_bw = hw::kNdr400;
    s.nic_source = hw::kNdr400Source;
  }
  Topology t;
  t.name = name;
  const int per_leaf = std::min(c.servers, kServersPerLeaf);
  const int groups = (c.servers + per_leaf - 1) / per_leaf;
  const int rails = nics_of(s);
  const int uplinks = std::max(1, (per_leaf + c.oversub - 1) / c.oversub);
  // Leaf uplink capacity = downlink capacity / oversubscription, split evenly over its uplinks (one per spine).
  const BytesPerSec uplink_bw = s.nic_bw * (static_cast<double>(per_leaf) / c.oversub / uplinks);
  t.description = std::to_string(c.servers) + " x " + c.machine->name + " (" + std::to_string(c.servers * s.gpus) +
                  " GPUs) on a rail-optimised two-tier fat tree, " + std::to_string(c.oversub) +
                  ":1 leaf oversubscription; each server: " + s.title;
  Fabric& f = t.fabric;
  f.rails = rails;
  f.servers_per_leaf = per_leaf;
  f.oversubscription = c.oversub;
  f.nic_of_gpu.reserve(static_cast<size_t>(c.servers) * s.gpus);
  std::vector<NodeId> rail_nics;  // NIC r of server sv at [sv * rails + r]
  rail_nics.reserve(static_cast<size_t>(c.servers) * rails);
  for (int sv = 0; sv < c.servers; ++sv) {
    auto nics = add_server(t, s, sv, true);
    f.nic_of_gpu.insert(f.nic_of_gpu.end(), nics.begin(), nics.end());
    for (size_t i = 0; i < nics.size(); ++i)
      if (i == 0 || nics[i] != nics[i - 1]) rail_nics.push_back(nics[i]);
  }
  const Link down = hw::make_link(LinkKind::network, s.nic_bw, 1, hw::kNetHop, s.nic_source, hw::kNetHopSource);
  const Link up =
      hw::make_link(LinkKind::network, uplink_bw, 1, hw::kNetHop,
                    "leaf uplink: " + std::to_string(per_leaf) + " servers x " +
                        std::to_string(s.nic_bw.gbps()).substr(0, 5) + " GB/s / " + std::to_string(c.oversub) +
                        " (oversubscription) / " + std::to_string(uplinks) + " spines; port rate " + s.nic_source,
                    hw::kNetHopSource);
  for (int k = 0; k < uplinks; ++k) {
    Node n;
    n.kind = NodeKind::net_switch;
    n.name = "spine" + std::to_string(k);
    n.server = -1;
    n.model = "spine switch (400 Gb/s ports)";
    f.spines.push_back(t.add_node(n));
  }
  for (int g = 0; g < groups; ++g) {
    for (int r = 0; r < rails; ++r) {
      Node n;
      n.kind = NodeKind::net_switch;
      n.name = "leaf.g" + std::to_string(g) + ".r" + std::to_string(r);
      n.server = -1;
      n.model = "rail leaf switch (Quantum-2 class, 64 x 400 Gb/s)";
      const NodeId leaf = t.add_node(n);
      f.leaves.push_back(leaf);
      for (int sv = g * per_leaf; sv < std::min(c.servers, (g + 1) * per_leaf); ++sv) {
        t.add_duplex(rail_nics[static_cast<size_t>(sv) * rails + r], leaf, down);
      }
      for (NodeId spine : f.spines) t.add_duplex(leaf, spine, up);
    }
  }
  t.check();
  return t;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& m : kMachines) names.emplace_back(m.name);
  return names;
}

bool is_preset(const std::string& name) {
  return find_machine(name) != nullptr || parse_cluster(name, false).servers > 0;
}

Topology make_preset(const std::string& name) {
  if (const Machine* m = find_machine(name)) {
    const ServerSpec s = m->spec();
    Topology t;
    t.name = name;
    t.description = s.title;
    add_server(t, s, 0, s.nics);
    t.check();
    return t;
  }
  const ClusterName c = parse_cluster(name, true);
  if (c.servers == 0) throw_input("unknown topology preset '" + name + "' (presets: " + machine_list() + ")");
  return make_cluster(name, c);
}

Topology make_uniform(int n, BytesPerSec bw, Seconds latency) {
  if (n < 1) throw_input("uniform topology: need at least 1 GPU, got " + std::to_string(n));
  if (!(bw.value > 0) || !std::isfinite(bw.value)) throw_input("uniform topology: bandwidth must be > 0");
  if (!(latency.value >= 0) || !std::isfinite(latency.value)) throw_input("uniform topology: latency must be >= 0");
  Topology t;
  t.name = "uniform" + std::to_string(n);
  t.description = "uniform fully connected network of " + std::to_string(n) + " GPUs (closed-form tests)";
  std::vector<NodeId> g;
  for (int i = 0; i < n; ++i) {
    Node v;
    v.kind = NodeKind::gpu;
    v.name = "gpu" + std::to_string(i);
    v.index = i;
    v.mem_bw = hw::kH100Sxm.hbm;
    v.flops = hw::kH100Sxm.flops;
    v.source = std::string("uniform test network, GPUs as ") + hw::kH100Sxm.source;
    v.model = hw::kH100Sxm.model;
    g.push_back(t.add_node(v));
  }
  Link l;
  l.kind = LinkKind::nvlink;
  l.bw = bw;
  l.latency = latency;
  l.lanes = 1;
  l.source = "uniform test network: bandwidth and latency given by the caller";
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) t.add_duplex(g[i], g[j], l);
  }
  t.check();
  return t;
}

}  // namespace cclab::topo
