// The machine as a graph: devices are vertices, each direction of a full-duplex link is its own
// directed edge with a kind, a per-direction bandwidth, a latency and the source of those numbers.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.hpp"

namespace cclab::topo {

enum class NodeKind : uint8_t { gpu, nvswitch, pcie_switch, cpu, host_memory, nic, net_switch };
enum class LinkKind : uint8_t { nvlink, pcie, upi, network, memory };

struct Node {
  NodeKind kind = NodeKind::gpu;
  std::string name;    // unique, e.g. "n0.gpu3", "n0.cpu1", "spine2"
  int server = 0;      // which node of a cluster (0 for a single machine; -1 for network switches)
  int socket = -1;     // CPU socket this device hangs under, -1 if none
  int index = -1;      // GPU index within the whole topology (gpus only), else -1
  BytesPerSec mem_bw;  // GPUs: HBM bandwidth (reads + writes); host memory: DRAM bandwidth
  double flops = 0;    // GPUs: dense 16-bit tensor FLOP/s
  std::string source;  // where mem_bw / flops came from
  std::string model;   // what the device is, e.g. "H100 SXM5 80GB", "Xeon Platinum 8480C" (may be empty)
  // GPUs: whether the driver allows peer access over PCIe (false on GeForce parts: NCCL then stages
  // transfers through pinned host memory, its SHM transport). NVLink peer access does not depend on it.
  bool pcie_p2p = true;
};

struct Link {
  LinkKind kind = LinkKind::nvlink;
  BytesPerSec bw;      // per direction
  Seconds latency;     // per hop
  int lanes = 1;       // NVLink: number of bonded links (NV18); PCIe: lane count
  std::string source;  // datasheet, measurement (machine, date), NCCL's tables ...
  int id = -1;         // dense index 0..num_links()-1, assigned by add_link/add_duplex (a vector index
                       // for per-link state in the simulator)
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
  // Staged (no-p2p) transfers: links[0, second_leg) is the writer's leg into host memory, links[second_leg,
  // end) the reader's leg out of it. 0 when the transfer is not staged.
  std::size_t second_leg = 0;
  bool staged() const { return second_leg > 0; }
};

// A rail-optimised two-tier fat tree joining the servers of a cluster (empty for a single machine).
// Rail r joins NIC r of every server; a leaf switch serves one rail of `servers_per_leaf` servers and has
// uplinks to every spine. Routing uses it to compute cross-server paths structurally (no graph search).
struct Fabric {
  int rails = 0;                   // NICs per server, one per GPU
  int servers_per_leaf = 0;        // leaf downlinks per rail group
  int oversubscription = 1;        // leaf downlink : uplink bandwidth (the ":osK" suffix of a cluster name)
  std::vector<NodeId> nic_of_gpu;  // by GPU index: the NIC its network traffic uses (its rail)
  std::vector<NodeId> leaves;      // leaf of (group g, rail r) at [g * rails + r]
  std::vector<NodeId> spines;
  bool empty() const { return leaves.empty(); }
};

namespace detail {
struct RouteCache;  // memoised routes; never copied with the graph (its LinkIds point into one graph)
}

class Topology {
 public:
  std::string name;         // preset name or file name
  std::string description;  // one line
  Graph graph;
  Fabric fabric;  // clusters only

  Topology();
  ~Topology();
  Topology(const Topology& o);
  Topology(Topology&& o) noexcept;
  Topology& operator=(const Topology& o);
  Topology& operator=(Topology&& o) noexcept;

  int num_gpus() const;
  NodeId gpu(int index) const;  // throws input error if out of range
  int gpus_per_server() const;  // GPUs in server 0 (for hierarchical algorithms)
  int num_servers() const;

  NodeId add_node(Node n);
  // Adds both directions of a full-duplex link.
  void add_duplex(NodeId a, NodeId b, Link link);
  // Adds one direction; returns it. Links get ids in the order they are added.
  LinkId add_link(NodeId from, NodeId to, Link link);
  const Node& node(NodeId v) const { return graph[v]; }
  const Link& link(LinkId e) const { return graph[e]; }
  int num_links() const { return static_cast<int>(links_by_id_.size()); }
  LinkId link_by_id(int id) const;                // inverse of link(e).id
  NodeId find_node(std::string_view name) const;  // throws input error naming the missing node

  // Route between two GPUs (by GPU index) or any two nodes. Deterministic; throws input error when no
  // route exists (a disconnected graph, or no path without NVLink). Routes are memoised: repeated calls
  // are a hash lookup (across servers of a cluster, their legs inside the servers are, and the route is
  // put together from them). Within a server: fewest hops, then least latency, never through a GPU or
  // host memory. Across servers of a cluster: GPU -> its rail NIC -> leaf -> (spine) -> leaf -> NIC -> GPU.
  // With no_p2p, GPU pairs of one server get the staged path (Path::second_leg); a == b gives an empty path
  // (no links, zero latency, bottleneck 0: local work is the caller's to cost).
  Path route_gpus(int a, int b, const RouteOptions& opt = {}) const;
  Path route(NodeId a, NodeId b, const RouteOptions& opt = {}) const;
  // The host memory node nearest a GPU (its socket's), for --no-p2p staging and host transfers.
  NodeId host_memory_of(int gpu_index) const;

  // Throws input error naming the problem: zero/negative bandwidth, duplicate names, disconnected GPUs.
  void check() const;

 private:
  void rebuild_index();
  const Path& memo_route(NodeId a, NodeId b, const RouteOptions& opt) const;
  std::vector<NodeId> gpus_;         // by GPU index
  std::vector<LinkId> links_by_id_;  // by Link::id
  std::unique_ptr<detail::RouteCache> cache_;
};

// Presets: dgx-h100, dgx-a100, hgx-h200, h200x2, pcie-2socket, and clusters "<N>x<preset>[:os<K>]"
// (N servers, rail-optimised fat tree, K:1 leaf oversubscription, default 1).
std::vector<std::string> preset_names();
bool is_preset(const std::string& name);
Topology make_preset(const std::string& name);  // throws input error for an unknown name
// A uniform fully connected network of n GPUs (every pair one direct link), for closed-form tests.
Topology make_uniform(int n, BytesPerSec bw, Seconds latency);

// Keeps only the listed GPUs (others are removed from the GPU numbering; switches stay). The listed
// order becomes the new numbering: GPU k of the result is gpus[k] of t (its node keeps its old name).
Topology select_gpus(const Topology& t, const std::vector<int>& gpus);

// A preset name, or a file (the cclab format, nvidia-smi topo -m text, or an NCCL topology XML dump).
Topology load_topology(const std::string& preset_or_path);
Topology load_file(const std::string& path);
void save_file(const Topology& t, const std::string& path);  // the cclab format; round-trips exactly
// The same from and to text (`origin` names the input in error messages).
std::string to_json_text(const Topology& t);
Topology from_json_text(const std::string& text, const std::string& origin);
// What `nvidia-smi topo -m` does not say: the GPU model and the PCIe link. Read from `nvidia-smi -q` output in the
// same text ("Product Name", "PCIe Generation" / "Link Width" maxima), or given (cclab topo --gpu-model, --pcie).
struct SmiFacts {
  std::string gpu_model;  // e.g. "NVIDIA GeForce RTX 2080 Ti"; empty: unknown
  int pcie_gen = 0;       // 1..6; 0: unknown
  int pcie_lanes = 0;     // 0: unknown (16 assumed)
};
SmiFacts parse_smi_query(const std::string& text);  // the facts `nvidia-smi -q` output states (empty if none)
// `given` overrides what the text's own `nvidia-smi -q` part says; what neither says is assumed, and the
// assumption is written into the source of each number it produced.
Topology import_nvidia_smi(const std::string& text, const std::string& origin);
Topology import_nvidia_smi(const std::string& text, const std::string& origin, const SmiFacts& given);
Topology import_nccl_xml(const std::string& text, const std::string& origin);

// GPU x GPU matrix in nvidia-smi topo -m notation (X, NV#, PIX, PXB, PHB, NODE, SYS, NET).
std::string connection_label(const Topology& t, int a, int b);
std::string connection_label(const Topology& t, int a, int b, const RouteOptions& opt);
std::string matrix_text(const Topology& t);
std::string matrix_text(const Topology& t, const RouteOptions& opt);
std::string describe(const Topology& t);  // summary for `cclab topo`

// Where a machine's topology (imported from its `nvidia-smi topo -m` or NCCL's XML dump) and a preset's first GPUs
// disagree: the GPU count, each GPU pair's connection (the matrix label: NV18, NODE, SYS ...), each GPU's model where
// the import states it (not assumed), and each GPU's CPU socket where both say. Rates are not compared: an import
// states nominal ones, presets the measured ones. Empty: they agree.
std::vector<std::string> topology_differences(const Topology& machine, const Topology& preset);

std::string_view node_kind_name(NodeKind k);
std::string_view link_kind_name(LinkKind k);
NodeKind parse_node_kind(std::string_view s);  // throws input error
LinkKind parse_link_kind(std::string_view s);  // throws input error

}  // namespace cclab::topo
