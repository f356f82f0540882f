// The Topology class: construction, lookup, checks and routing.
#include "topology/topology.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/error.hpp"

namespace cclab::topo {

namespace detail {
// Memoised routes and lookups. Keys are (from node, to node, option bits); values hold LinkIds of the
// owning graph, so a copied Topology starts with an empty cache.
// A GPU's way into and out of a cluster's fabric: its legs to and from its rail NIC (memoised routes,
// whose addresses stay put), the NIC's leaf and the links between the two.
struct FabricEnd {
  const Path* up = nullptr;    // GPU -> NIC; null: not found yet
  const Path* down = nullptr;  // NIC -> GPU
  NodeId leaf{};
  LinkId to_leaf{}, from_leaf{};
};

struct RouteCache {
  std::mutex mutex;
  std::unordered_map<uint64_t, Path> routes;
  std::vector<FabricEnd> fabric_ends;                    // by GPU index
  std::unordered_map<uint64_t, LinkId> fabric_links;     // (leaf, spine) and (spine, leaf) -> link
  std::vector<NodeId> host_memory_by_gpu;                // built on first use
  std::unordered_map<std::string_view, NodeId> by_name;  // built on first use; views into node names
  void clear() {
    routes.clear();
    fabric_ends.clear();
    fabric_links.clear();
    host_memory_by_gpu.clear();
    by_name.clear();
  }
};
}  // namespace detail

namespace {

constexpr int kNoServer = -2;  // search the whole graph

uint64_t route_key(NodeId a, NodeId b, const RouteOptions& opt) {
  return (static_cast<uint64_t>(a) << 33) ^ (static_cast<uint64_t>(b) << 2) ^ (opt.without_nvlink ? 1u : 0u) ^
         (opt.no_p2p ? 2u : 0u);
}

// Endpoints only: NVLink and PCIe do not forward through a GPU, and host memory is a sink.
bool can_transit(const Node& n) { return n.kind != NodeKind::gpu && n.kind != NodeKind::host_memory; }

struct Label {
  int hops = 0;
  double latency = 0;
  LinkId via{};
  bool has_via = false;
  bool done = false;
};

// Fewest hops, then least latency; ties keep the first path found (deterministic: the queue orders by
// (hops, latency, node id) and out-edges are scanned in insertion order). `server` limits the search to
// the nodes of one server (kNoServer: the whole graph).
bool shortest_path(const Graph& g, NodeId src, NodeId dst, bool without_nvlink, int server, Path& out) {
  std::unordered_map<NodeId, Label> labels;
  using Entry = std::tuple<int, double, NodeId>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  labels[src] = Label{};
  queue.emplace(0, 0.0, src);
  while (!queue.empty()) {
    auto [hops, lat, v] = queue.top();
    queue.pop();
    Label& lv = labels[v];
    if (lv.done) continue;
    lv.done = true;
    if (v == dst) break;
    if (v != src && !can_transit(g[v])) continue;
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      const Link& l = g[*e];
      if (without_nvlink && l.kind == LinkKind::nvlink) continue;
      NodeId w = boost::target(*e, g);
      if (server != kNoServer && g[w].server != server) continue;
      const int nh = hops + 1;
      const double nl = lat + l.latency.value;
      auto it = labels.find(w);
      if (it != labels.end() &&
          (it->second.done || it->second.hops < nh || (it->second.hops == nh && it->second.latency <= nl))) {
        continue;
      }
      Label& lw = labels[w];
      lw.hops = nh;
      lw.latency = nl;
      lw.via = *e;
      lw.has_via = true;
      queue.emplace(nh, nl, w);
    }
  }
  auto it = labels.find(dst);
  if (it == labels.end() || !it->second.done) return false;
  std::vector<LinkId> rev;
  for (NodeId v = dst; v != src;) {
    const Label& l = labels.at(v);
    rev.push_back(l.via);
    v = boost::source(l.via, g);
  }
  out.links.assign(rev.rbegin(), rev.rend());
  return true;
}

// Fills latency and bottleneck from the link list.
void finish(const Graph& g, Path& p) {
  p.latency = Seconds(0);
  p.bottleneck = BytesPerSec(std::numeric_limits<double>::infinity());
  for (const LinkId& e : p.links) {
    p.latency += g[e].latency;
    p.bottleneck = std::min(p.bottleneck, g[e].bw);
  }
  if (p.links.empty()) p.bottleneck = BytesPerSec(0);
}

LinkId edge_between(const Graph& g, NodeId a, NodeId b) {
  auto [e, ok] = boost::edge(a, b, g);
  if (!ok) throw_input("topology: no link " + g[a].name + " -> " + g[b].name);
  return e;
}

// The one network neighbour (leaf switch) of a NIC.
NodeId leaf_of(const Graph& g, NodeId nic) {
  for (auto [e, end] = boost::out_edges(nic, g); e != end; ++e) {
    if (g[*e].kind == LinkKind::network) return boost::target(*e, g);
  }
  throw_input("topology: NIC " + g[nic].name + " has no network link");
}

// Moves a graph. Boost 1.74's adjacency_list has no move operations (std::move copies it: a second
// 1.5 GB for a 131,072-GPU cluster); its vertex vector and edge list are public members, and swapping
// them moves the graph with every edge descriptor still valid (they point at the list's nodes, which
// keep their addresses). `to` must be empty; the graph property (none here) stays behind.
void move_graph(Graph& to, Graph& from) {
  to.m_vertices.swap(from.m_vertices);
  to.m_edges.swap(from.m_edges);
}

}  // namespace

Topology::Topology() : cache_(std::make_unique<detail::RouteCache>()) {}
Topology::~Topology() = default;

Topology::Topology(const Topology& o)
    : name(o.name),
      description(o.description),
      graph(o.graph),
      fabric(o.fabric),
      gpus_(o.gpus_),
      cache_(std::make_unique<detail::RouteCache>()) {
  rebuild_index();
}

Topology::Topology(Topology&& o) noexcept
    : name(std::move(o.name)),
      description(std::move(o.description)),
      fabric(std::move(o.fabric)),
      gpus_(std::move(o.gpus_)),
      links_by_id_(std::move(o.links_by_id_)),
      cache_(std::make_unique<detail::RouteCache>()) {
  move_graph(graph, o.graph);
  o.links_by_id_.clear();
  o.gpus_.clear();
  if (o.cache_) o.cache_->clear();
}

Topology& Topology::operator=(const Topology& o) {
  if (this == &o) return *this;
  Topology copy(o);
  *this = std::move(copy);
  return *this;
}

Topology& Topology::operator=(Topology&& o) noexcept {
  if (this == &o) return *this;
  name = std::move(o.name);
  description = std::move(o.description);
  graph.clear();
  move_graph(graph, o.graph);
  fabric = std::move(o.fabric);
  gpus_ = std::move(o.gpus_);
  links_by_id_ = std::move(o.links_by_id_);
  if (!cache_) cache_ = std::make_unique<detail::RouteCache>();
  cache_->clear();
  o.links_by_id_.clear();
  o.gpus_.clear();
  if (o.cache_) o.cache_->clear();
  return *this;
}

// Edge descriptors carry a pointer to their property, which lives in the graph they came from; after
// a copy or move the id -> LinkId table is rebuilt from the ids stored in the properties.
void Topology::rebuild_index() {
  links_by_id_.assign(boost::num_edges(graph), LinkId{});
  for (auto [e, end] = boost::edges(graph); e != end; ++e) {
    const int id = graph[*e].id;
    CCLAB_ASSERT(id >= 0 && id < static_cast<int>(links_by_id_.size()), "link ids must be dense");
    links_by_id_[id] = *e;
  }
}

int Topology::num_gpus() const { return static_cast<int>(gpus_.size()); }

NodeId Topology::gpu(int index) const {
  if (index < 0 || index >= num_gpus()) {
    throw_input("GPU " + std::to_string(index) + " does not exist in topology '" + name + "' (it has " +
                std::to_string(num_gpus()) + " GPUs: 0.." + std::to_string(num_gpus() - 1) + ")");
  }
  const NodeId v = gpus_[index];
  if (v == Graph::null_vertex()) throw_input("topology '" + name + "': GPU " + std::to_string(index) + " is missing");
  return v;
}

int Topology::gpus_per_server() const {
  int n = 0;
  for (NodeId v : gpus_) {
    if (v != Graph::null_vertex() && graph[v].server == 0) ++n;
  }
  return n;
}

int Topology::num_servers() const {
  int m = -1;
  for (auto [v, end] = boost::vertices(graph); v != end; ++v) m = std::max(m, graph[*v].server);
  return m + 1;
}

NodeId Topology::add_node(Node n) {
  const int index = n.kind == NodeKind::gpu ? n.index : -1;
  if (n.kind == NodeKind::gpu && index < 0) throw_input("topology: GPU node '" + n.name + "' has no index");
  // GPU indices size a table; anything near this is a corrupt input, not a machine.
  constexpr int kMaxGpuIndex = 1 << 24;
  if (index > kMaxGpuIndex) {
    throw_input("topology: GPU node '" + n.name + "' has index " + std::to_string(index) + " (at most " +
                std::to_string(kMaxGpuIndex) + ")");
  }
  if (n.kind != NodeKind::gpu) n.index = -1;
  const NodeId v = boost::add_vertex(std::move(n), graph);
  if (index >= 0) {
    if (index >= static_cast<int>(gpus_.size())) gpus_.resize(index + 1, Graph::null_vertex());
    if (gpus_[index] != Graph::null_vertex()) {
      throw_input("topology: two GPUs with index " + std::to_string(index) + " ('" + graph[gpus_[index]].name +
                  "' and '" + graph[v].name + "')");
    }
    gpus_[index] = v;
  }
  cache_->clear();
  return v;
}

LinkId Topology::add_link(NodeId from, NodeId to, Link link) {
  link.id = static_cast<int>(links_by_id_.size());
  auto [e, ok] = boost::add_edge(from, to, std::move(link), graph);
  CCLAB_ASSERT(ok, "adjacency_list with vecS edges always adds");
  links_by_id_.push_back(e);
  cache_->clear();
  return e;
}

void Topology::add_duplex(NodeId a, NodeId b, Link link) {
  add_link(a, b, link);
  add_link(b, a, std::move(link));
}

LinkId Topology::link_by_id(int id) const {
  if (id < 0 || id >= num_links()) throw_input("topology: no link with id " + std::to_string(id));
  return links_by_id_[id];
}

NodeId Topology::find_node(std::string_view wanted) const {
  std::lock_guard lock(cache_->mutex);
  auto& by_name = cache_->by_name;
  if (by_name.empty()) {
    for (auto [v, end] = boost::vertices(graph); v != end; ++v) by_name.emplace(graph[*v].name, *v);
  }
  auto it = by_name.find(wanted);
  if (it == by_name.end()) throw_input("topology '" + name + "': no node named '" + std::string(wanted) + "'");
  return it->second;
}

NodeId Topology::host_memory_of(int gpu_index) const {
  const NodeId g = gpu(gpu_index);
  std::lock_guard lock(cache_->mutex);
  auto& table = cache_->host_memory_by_gpu;
  if (table.empty()) {
    // (server, socket) -> host memory node; a GPU without a socket uses its server's first memory.
    std::map<std::pair<int, int>, NodeId> mem;
    std::map<int, NodeId> first;
    for (auto [v, end] = boost::vertices(graph); v != end; ++v) {
      const Node& n = graph[*v];
      if (n.kind != NodeKind::host_memory) continue;
      mem.emplace(std::pair(n.server, n.socket), *v);
      first.emplace(n.server, *v);
    }
    table.assign(gpus_.size(), Graph::null_vertex());
    for (size_t i = 0; i < gpus_.size(); ++i) {
      if (gpus_[i] == Graph::null_vertex()) continue;
      const Node& n = graph[gpus_[i]];
      if (auto it = mem.find({n.server, n.socket}); it != mem.end()) {
        table[i] = it->second;
      } else if (auto f = first.find(n.server); f != first.end()) {
        table[i] = f->second;
      }
    }
  }
  const NodeId m = table[gpu_index];
  if (m == Graph::null_vertex()) {
    throw_input("topology '" + name + "': GPU " + std::to_string(gpu_index) + " (" + graph[g].name +
                ") has no host memory node in its server");
  }
  return m;
}

Path Topology::route_gpus(int a, int b, const RouteOptions& opt) const { return route(gpu(a), gpu(b), opt); }

Path Topology::route(NodeId a, NodeId b, const RouteOptions& opt) const {
  const auto nv = boost::num_vertices(graph);
  if (a >= nv || b >= nv) throw_input("topology '" + name + "': route to a node that does not exist");
  const Node& na = graph[a];
  const Node& nb = graph[b];
  if (na.kind != NodeKind::gpu || nb.kind != NodeKind::gpu || na.server == nb.server || fabric.empty())
    return memo_route(a, b, opt);
  // Structural cross-server route: GPU -> PCIe -> its rail NIC -> leaf -> spine -> leaf -> NIC -> GPU.
  // Only the legs inside the servers are searched and memoised (a cluster of n GPUs has 2n of them), with
  // the links to and from the leaves and the spines; the route itself is put together each time, not
  // kept (there are n^2 of those, and an all-to-all on a 2048-server cluster asks for half a million).
  auto fabric_end = [&](NodeId gpu, int index) {
    {
      std::lock_guard lock(cache_->mutex);
      if (size_t(index) < cache_->fabric_ends.size() && cache_->fabric_ends[size_t(index)].up)
        return cache_->fabric_ends[size_t(index)];
    }
    const RouteOptions inside{.without_nvlink = true};
    const NodeId nic = fabric.nic_of_gpu.at(index);
    detail::FabricEnd e;
    e.up = &memo_route(gpu, nic, inside);
    e.down = &memo_route(nic, gpu, inside);
    e.leaf = leaf_of(graph, nic);
    e.to_leaf = edge_between(graph, nic, e.leaf);
    e.from_leaf = edge_between(graph, e.leaf, nic);
    std::lock_guard lock(cache_->mutex);
    if (cache_->fabric_ends.size() < gpus_.size()) cache_->fabric_ends.resize(gpus_.size());
    return cache_->fabric_ends[size_t(index)] = e;
  };
  // A spine has a link to every leaf: finding one by a scan of its edges is memoised.
  auto fabric_link = [&](NodeId from, NodeId to) {
    const uint64_t k = (static_cast<uint64_t>(from) << 32) | static_cast<uint64_t>(to);
    {
      std::lock_guard lock(cache_->mutex);
      if (auto it = cache_->fabric_links.find(k); it != cache_->fabric_links.end()) return it->second;
    }
    const LinkId e = edge_between(graph, from, to);
    std::lock_guard lock(cache_->mutex);
    return cache_->fabric_links.emplace(k, e).first->second;
  };
  const detail::FabricEnd ea = fabric_end(a, na.index), eb = fabric_end(b, nb.index);
  Path p;
  p.links.reserve(ea.up->links.size() + eb.down->links.size() + 4);
  p.links.assign(ea.up->links.begin(), ea.up->links.end());
  p.links.push_back(ea.to_leaf);
  if (ea.leaf != eb.leaf) {
    // D-mod-k: the spine is chosen by the destination's port on its leaf, so traffic to distinct
    // destinations of one leaf spreads over distinct spines (deterministic, as static fat-tree routing).
    const int port = nb.server % std::max(1, fabric.servers_per_leaf);
    const NodeId spine = fabric.spines.at(port % fabric.spines.size());
    p.links.push_back(fabric_link(ea.leaf, spine));
    p.links.push_back(fabric_link(spine, eb.leaf));
  }
  p.links.push_back(eb.from_leaf);
  p.links.insert(p.links.end(), eb.down->links.begin(), eb.down->links.end());
  finish(graph, p);
  return p;
}

// Routes found by search, memoised. The cache only grows (until the topology is assigned to), so a
// reference into it stays valid.
const Path& Topology::memo_route(NodeId a, NodeId b, const RouteOptions& opt) const {
  const uint64_t key = route_key(a, b, opt);
  {
    std::lock_guard lock(cache_->mutex);
    if (auto it = cache_->routes.find(key); it != cache_->routes.end()) return it->second;
  }
  const Node& na = graph[a];
  const Node& nb = graph[b];
  auto fail = [&](const std::string& why) -> Path {
    throw_input("topology '" + name + "': no route " + na.name + " -> " + nb.name + why);
  };
  // A search within one server when both ends are in it, falling back to the whole graph.
  auto search = [&](NodeId s, NodeId d, bool without_nvlink) {
    Path p;
    const int server = graph[s].server == graph[d].server && graph[s].server >= 0 ? graph[s].server : kNoServer;
    if (shortest_path(graph, s, d, without_nvlink, server, p)) return p;
    if (server != kNoServer && shortest_path(graph, s, d, without_nvlink, kNoServer, p)) return p;
    return fail(without_nvlink ? " without NVLink" : "");
  };

  Path p;
  const bool both_gpus = na.kind == NodeKind::gpu && nb.kind == NodeKind::gpu;
  if (a == b) {
    // Empty path: no links, no latency.
  } else if (both_gpus && opt.no_p2p && na.server == nb.server) {
    // NCCL_P2P_DISABLE=1: the writer copies into pinned memory of its own socket, the reader copies out,
    // crossing PCIe (and UPI when it sits on the other socket). The network is unaffected, so pairs on
    // different servers take the structural route (route()).
    const NodeId mem = host_memory_of(na.index);
    Path w = search(a, mem, true);
    Path r = search(mem, b, true);
    p.links = std::move(w.links);
    p.second_leg = p.links.size();
    p.links.insert(p.links.end(), r.links.begin(), r.links.end());
  } else {
    p = search(a, b, opt.without_nvlink);
  }
  finish(graph, p);
  std::lock_guard lock(cache_->mutex);
  return cache_->routes.emplace(key, std::move(p)).first->second;
}

void Topology::check() const {
  const std::string where = "topology '" + name + "'";
  if (num_gpus() == 0) throw_input(where + " has no GPUs");
  for (int i = 0; i < num_gpus(); ++i) {
    if (gpus_[i] == Graph::null_vertex())
      throw_input(where + ": GPU indices must be 0..n-1 but GPU " + std::to_string(i) + " is missing");
  }
  std::unordered_set<std::string_view> names;
  for (auto [v, end] = boost::vertices(graph); v != end; ++v) {
    const Node& n = graph[*v];
    if (n.name.empty()) throw_input(where + ": a node has no name");
    if (!names.insert(n.name).second) throw_input(where + ": two nodes are named '" + n.name + "'");
    if (n.mem_bw.value < 0 || !std::isfinite(n.mem_bw.value)) {
      throw_input(where + ": node '" + n.name + "' has memory bandwidth " + std::to_string(n.mem_bw.value) +
                  " (must be >= 0)");
    }
    if ((n.kind == NodeKind::gpu || n.kind == NodeKind::host_memory) && !(n.mem_bw.value > 0)) {
      throw_input(where + ": " + std::string(node_kind_name(n.kind)) + " '" + n.name +
                  "' needs a memory bandwidth > 0");
    }
    if (n.flops < 0 || !std::isfinite(n.flops)) throw_input(where + ": node '" + n.name + "' has negative FLOP/s");
  }
  for (auto [e, end] = boost::edges(graph); e != end; ++e) {
    const Link& l = graph[*e];
    const std::string which = graph[boost::source(*e, graph)].name + " -> " + graph[boost::target(*e, graph)].name;
    if (!(l.bw.value > 0) || !std::isfinite(l.bw.value)) {
      throw_input(where + ": link " + which + " has bandwidth " + std::to_string(l.bw.value) + " B/s (must be > 0)");
    }
    if (!(l.latency.value >= 0) || !std::isfinite(l.latency.value)) {
      throw_input(where + ": link " + which + " has latency " + std::to_string(l.latency.value) + " s (must be >= 0)");
    }
    if (l.lanes < 1)
      throw_input(where + ": link " + which + " has " + std::to_string(l.lanes) + " lanes (must be >= 1)");
  }
  // Every GPU must reach GPU 0 and be reached from it, through nodes that forward traffic.
  for (bool forward : {true, false}) {
    std::vector<char> seen(boost::num_vertices(graph), 0);
    std::deque<NodeId> todo{gpus_[0]};
    seen[gpus_[0]] = 1;
    while (!todo.empty()) {
      const NodeId v = todo.front();
      todo.pop_front();
      if (v != gpus_[0] && !can_transit(graph[v])) continue;
      auto visit = [&](NodeId w) {
        if (!seen[w]) {
          seen[w] = 1;
          todo.push_back(w);
        }
      };
      if (forward) {
        for (auto [e, end] = boost::out_edges(v, graph); e != end; ++e) visit(boost::target(*e, graph));
      } else {
        for (auto [e, end] = boost::in_edges(v, graph); e != end; ++e) visit(boost::source(*e, graph));
      }
    }
    for (int i = 0; i < num_gpus(); ++i) {
      if (!seen[gpus_[i]]) {
        throw_input(where + " is disconnected: no route " +
                    (forward ? graph[gpus_[0]].name + " -> " + graph[gpus_[i]].name
                             : graph[gpus_[i]].name + " -> " + graph[gpus_[0]].name));
      }
    }
  }
  if (!fabric.empty()) {
    if (static_cast<int>(fabric.nic_of_gpu.size()) != num_gpus())
      throw_input(where + ": fabric names a NIC for " + std::to_string(fabric.nic_of_gpu.size()) +
                  " GPUs, topology has " + std::to_string(num_gpus()));
    for (NodeId v : fabric.nic_of_gpu) {
      if (v >= boost::num_vertices(graph) || graph[v].kind != NodeKind::nic)
        throw_input(where + ": fabric maps a GPU to a node that is not a NIC");
    }
    if (fabric.spines.empty() || fabric.rails < 1 || fabric.servers_per_leaf < 1 || fabric.oversubscription < 1) {
      throw_input(where + ": fabric needs rails, servers_per_leaf, oversubscription >= 1 and spines");
    }
  }
}

std::string_view node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::gpu:
      return "gpu";
    case NodeKind::nvswitch:
      return "nvswitch";
    case NodeKind::pcie_switch:
      return "pcie_switch";
    case NodeKind::cpu:
      return "cpu";
    case NodeKind::host_memory:
      return "host_memory";
    case NodeKind::nic:
      return "nic";
    case NodeKind::net_switch:
      return "net_switch";
  }
  return "?";
}

std::string_view link_kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::nvlink:
      return "nvlink";
    case LinkKind::pcie:
      return "pcie";
    case LinkKind::upi:
      return "upi";
    case LinkKind::network:
      return "network";
    case LinkKind::memory:
      return "memory";
  }
  return "?";
}

NodeKind parse_node_kind(std::string_view s) {
  for (NodeKind k : {NodeKind::gpu, NodeKind::nvswitch, NodeKind::pcie_switch, NodeKind::cpu, NodeKind::host_memory,
                     NodeKind::nic, NodeKind::net_switch}) {
    if (node_kind_name(k) == s) return k;
  }
  throw_input("unknown node kind '" + std::string(s) +
              "' (gpu, nvswitch, pcie_switch, cpu, host_memory, nic, net_switch)");
}

LinkKind parse_link_kind(std::string_view s) {
  for (LinkKind k : {LinkKind::nvlink, LinkKind::pcie, LinkKind::upi, LinkKind::network, LinkKind::memory}) {
    if (link_kind_name(k) == s) return k;
  }
  throw_input("unknown link kind '" + std::string(s) + "' (nvlink, pcie, upi, network, memory)");
}

Topology select_gpus(const Topology& t, const std::vector<int>& gpus) {
  if (gpus.empty()) throw_input("--gpus: the list is empty");
  std::vector<int> new_index(t.num_gpus(), -1);
  for (size_t k = 0; k < gpus.size(); ++k) {
    const int g = gpus[k];
    if (g < 0 || g >= t.num_gpus()) {
      throw_input("--gpus: GPU " + std::to_string(g) + " does not exist in topology '" + t.name + "' (it has " +
                  std::to_string(t.num_gpus()) + " GPUs: 0.." + std::to_string(t.num_gpus() - 1) + ")");
    }
    if (new_index[g] >= 0) throw_input("--gpus: GPU " + std::to_string(g) + " is listed twice");
    new_index[g] = static_cast<int>(k);
  }
  Topology out;
  out.name = t.name;
  std::string list;
  for (int g : gpus) list += (list.empty() ? "" : ",") + std::to_string(g);
  out.description = t.description + " [GPUs " + list + "]";
  const Graph& g = t.graph;
  std::vector<NodeId> map(boost::num_vertices(g), Graph::null_vertex());
  for (auto [v, end] = boost::vertices(g); v != end; ++v) {
    Node n = g[*v];
    if (n.kind == NodeKind::gpu) {
      if (new_index[n.index] < 0) continue;
      n.index = new_index[n.index];
    }
    map[*v] = out.add_node(std::move(n));
  }
  // Keep the surviving links in their id order so the new ids follow the old ones.
  for (int id = 0; id < t.num_links(); ++id) {
    const LinkId e = t.link_by_id(id);
    const NodeId a = map[boost::source(e, g)];
    const NodeId b = map[boost::target(e, g)];
    if (a != Graph::null_vertex() && b != Graph::null_vertex()) out.add_link(a, b, g[e]);
  }
  if (!t.fabric.empty()) {
    out.fabric = t.fabric;
    out.fabric.nic_of_gpu.assign(gpus.size(), Graph::null_vertex());
    for (size_t k = 0; k < gpus.size(); ++k) out.fabric.nic_of_gpu[k] = map[t.fabric.nic_of_gpu[gpus[k]]];
    for (auto& v : out.fabric.leaves) v = map[v];
    for (auto& v : out.fabric.spines) v = map[v];
  }
  out.check();
  return out;
}

}  // namespace cclab::topo
