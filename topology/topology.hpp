// The machine as a graph: devices are vertices, each direction of a full-duplex link is its own
// directed edge with a kind, a per-direction bandwidth, a latency and the source of those numbers.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace cclab::topo {

enum class NodeKind : uint8_t { gpu, nvswitch, pcie_switch, cpu, host_memory, nic, net_switch };
enum class LinkKind : uint8_t { nvlink, pcie, upi, network, memory };

struct Node {
  NodeKind kind = NodeKind::gpu;
  std::string name;    // unique, e.g. "n0.gpu3", "n0.cpu1", "spine2"
  int server = 0;      // which node of a cluster (0 for a single machine)
  int socket = -1;     // CPU socket this device hangs under, -1 if none
  int index = -1;      // GPU index within the whole topology (gpus only), else -1
  BytesPerSec mem_bw;  // GPUs: HBM bandwidth (reads + writes); host memory: DRAM bandwidth
  double flops = 0;    // GPUs: dense 16-bit tensor FLOP/s
  std::string source;  // where mem_bw / flops came from
};

struct Link {
  LinkKind kind = LinkKind::nvlink;
  BytesPerSec bw;      // per direction
  Seconds latency;     // per hop
  int lanes = 1;       // NVLink: number of bonded links (NV18); PCIe: lane count
  std::string source;  // datasheet, measurement (machine, date), NCCL's tables ...
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Node, Link>;
using NodeId = Graph::vertex_descriptor;
using LinkId = Graph::edge_descriptor;

struct RouteOptions {
  bool without_nvlink = false;  // routes avoid NVLink (PCIe, host bridges, UPI instead)
  bool no_p2p = false;          // GPU-to-GPU transfers are staged through pinned host memory
};

// A path is a list of directed links; a staged (no-p2p) transfer is two legs through host memory.
struct Path {
  std::vector<LinkId> links;
  Seconds latency;         // sum of per-hop latencies
  BytesPerSec bottleneck;  // min link bandwidth on the path
};

class Topology {
 public:
  std::string name;         // preset name or file name
  std::string description;  // one line
  Graph graph;

  int num_gpus() const;
  NodeId gpu(int index) const;  // throws input error if out of range
  int gpus_per_server() const;  // GPUs in server 0 (for hierarchical algorithms)
  int num_servers() const;

  NodeId add_node(Node n);
  // Adds both directions of a full-duplex link.
  void add_duplex(NodeId a, NodeId b, Link link);
  const Node& node(NodeId v) const { return graph[v]; }
  const Link& link(LinkId e) const { return graph[e]; }

  // Route between two GPUs (by GPU index) or any two nodes. Deterministic; throws input error when no
  // route exists (a disconnected graph, or no path without NVLink).
  Path route_gpus(int a, int b, const RouteOptions& opt = {}) const;
  Path route(NodeId a, NodeId b, const RouteOptions& opt = {}) const;
  // The host memory node nearest a GPU (its socket's), for --no-p2p staging and host transfers.
  NodeId host_memory_of(int gpu_index) const;

  // Throws input error naming the problem: zero/negative bandwidth, duplicate names, disconnected GPUs.
  void check() const;
};

// Presets: dgx-h100, dgx-a100, hgx-h200, h200x2, pcie-2socket, and clusters "<N>x<preset>".
std::vector<std::string> preset_names();
bool is_preset(const std::string& name);
Topology make_preset(const std::string& name);  // throws input error for an unknown name
// A uniform fully connected network of n GPUs (every pair one direct link), for closed-form tests.
Topology make_uniform(int n, BytesPerSec bw, Seconds latency);

// Keeps only the listed GPUs (others are removed from the GPU numbering; switches stay).
Topology select_gpus(const Topology& t, const std::vector<int>& gpus);

// A preset name, or a file (the cclab format, nvidia-smi topo -m text, or an NCCL topology XML dump).
Topology load_topology(const std::string& preset_or_path);
Topology load_file(const std::string& path);
void save_file(const Topology& t, const std::string& path);  // the cclab format; round-trips exactly

// GPU x GPU matrix in nvidia-smi topo -m notation (X, NV#, PIX, PXB, PHB, NODE, SYS, NET).
std::string connection_label(const Topology& t, int a, int b);
std::string matrix_text(const Topology& t);
std::string describe(const Topology& t);  // summary for `cclab topo`

std::string_view node_kind_name(NodeKind k);
std::string_view link_kind_name(LinkKind k);

}  // namespace cclab::topo
