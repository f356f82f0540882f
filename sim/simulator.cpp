#include "sim/simulator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <unordered_map>

#include "core/error.hpp"

namespace cclab::sim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Resources one flow may use: two routed legs (a staged no-p2p path is itself up to ~12 links) and the
// rank's memory system.
constexpr int kMaxUses = 40;

struct Use {
  int32_t res = 0;
  float weight = 1;  // resource units consumed per unit of the flow's amount
  int32_t pos = 0;   // index of the flow in the resource's flow list
};

struct Flow {
  int32_t op = -1;
  int32_t nuse = 0;
  uint32_t version = 0;  // bumps when the rate changes, invalidating queued completion events
  double amount = 0;     // total (bytes or FLOPs)
  double remaining = 0;
  double rate = 0;     // units per second
  double last = 0;     // time `remaining` was last settled
  double cap = 0;      // 0: none
  double latency = 0;  // added to the op's end after the flow drains
  std::array<Use, kMaxUses> use;
};

struct Resource {
  double capacity = 0;
  std::vector<int32_t> flows;
  uint32_t mark = 0;  // BFS epoch
  double carried = 0;
  double load = 0;  // for the timeline
};

struct Event {
  double t;
  uint32_t id;   // op (start) or flow slot (done)
  uint32_t tag;  // bit 31: done event; low bits: flow version
  bool operator>(const Event& o) const { return t > o.t; }
};
constexpr uint32_t kDone = 0x80000000u;
// The end of an op run without a flow (run_alone): id is the op.
constexpr uint32_t kLocalDone = 0x40000000u;
// Successor list entries: op id plus the kind of dependency.
constexpr uint32_t kCrossRank = 0x80000000u, kCrossChannel = 0x40000000u, kOpMask = 0x3fffffffu;

struct RouteEntry {
  uint32_t begin = 0, count = 0;  // into route_pool
  double latency = 0;
  bool network = false;  // crosses a network link
};

}  // namespace

struct Simulator::Impl {
  const topo::Topology topo;  // its own (a copy, or moved in): callers may pass a temporary (select_gpus(...))
  model::ModelParams params;
  topo::RouteOptions route_opt;

  int num_gpus = 0;
  int num_links = 0;
  std::vector<Resource> res;
  // Resources [0, num_links) are the topology's links (in the graph's edge order), then each GPU's
  // memory system, then its tensor cores. Names are made when asked for (a 131,072-GPU cluster has 1.5
  // million links).
  std::vector<int32_t> res_link;     // link resource -> topo::Link::id
  std::vector<int32_t> link_res;     // topo::Link::id -> resource
  std::vector<double> link_latency;  // per link, with overrides
  std::vector<uint8_t> link_is_network;
  std::unordered_map<uint64_t, RouteEntry> routes;
  std::vector<int32_t> route_pool;

  // Per-run state.
  std::vector<Flow> flows;
  std::vector<int32_t> free_flows;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> heap;
  std::vector<int32_t> dirty;
  uint32_t epoch = 0;
  std::vector<int32_t> comp_res, comp_flows, stack;
  std::vector<double> rem, wsum;  // per resource, scratch for the solver
  std::vector<int32_t> cnt;
  std::vector<double> new_rate;  // per flow slot
  Flow scratch;                  // describes ops that need no flow slot
  int64_t n_recompute = 0;
  bool timeline = false;
  // Folding (symmetric runs): resource -> orbit representative; null when not folding.
  const std::vector<int32_t>* fold = nullptr;
  int fold_period = 0;
  int rotation_nranks = -1;  // the rank count `rotation` was computed for
  Fold rotation;             // the topology's rotation by a leaf group (period 0: none)
  std::vector<LoadSample>* samples = nullptr;

  Impl(topo::Topology t, model::ModelParams p, topo::RouteOptions ro)
      : topo(std::move(t)), params(std::move(p)), route_opt(ro) {
    num_gpus = topo.num_gpus();
    link_res.assign(size_t(topo.num_links()), -1);
    for (auto e : boost::make_iterator_range(boost::edges(topo.graph))) {
      const topo::Link& l = topo.link(e);
      const auto& ov = params.link[size_t(l.kind)];
      const double bw = ov.bw ? ov.bw->value.value : l.bw.value;
      const double lat = ov.latency ? ov.latency->value.value : l.latency.value;
      if (!(bw > 0))
        throw_input("topology link " + topo.node(boost::source(e, topo.graph)).name + " -> " +
                    topo.node(boost::target(e, topo.graph)).name + " has no bandwidth");
      CCLAB_ASSERT(l.id >= 0 && size_t(l.id) < link_res.size(), "a link without its id");
      link_res[size_t(l.id)] = int32_t(res.size());
      res_link.push_back(l.id);
      Resource r;
      r.capacity = bw;
      res.push_back(std::move(r));
      link_latency.push_back(lat);
      link_is_network.push_back(l.kind == topo::LinkKind::network);
    }
    num_links = int(res.size());
    // Per GPU: memory system, then tensor cores.
    for (int g = 0; g < num_gpus; ++g) {
      const topo::Node& n = topo.node(topo.gpu(g));
      Resource m;
      m.capacity =
          (n.mem_bw.value > 0 ? n.mem_bw.value : params.default_mem_bw.value.value) * params.mem_efficiency.value;
      if (params.free_local_work) m.capacity = kInf;
      res.push_back(std::move(m));
    }
    for (int g = 0; g < num_gpus; ++g) {
      const topo::Node& n = topo.node(topo.gpu(g));
      Resource c;
      c.capacity = (n.flops > 0 ? n.flops : params.default_flops.value) * params.matmul_efficiency.value;
      if (params.free_local_work) c.capacity = kInf;
      res.push_back(std::move(c));
    }
    rem.resize(res.size());
    wsum.resize(res.size());
    cnt.resize(res.size());
  }

  // "n0.gpu0->n0.nvs0", "gpu3.hbm", "gpu3.tensor"; the link kind name, "hbm" or "tensor".
  std::string res_name(int32_t r) const {
    if (r < num_links) {
      const topo::LinkId e = topo.link_by_id(res_link[size_t(r)]);
      return topo.node(boost::source(e, topo.graph)).name + "->" + topo.node(boost::target(e, topo.graph)).name;
    }
    const bool mem = r < num_links + num_gpus;
    return topo.node(topo.gpu(mem ? r - num_links : r - num_links - num_gpus)).name + (mem ? ".hbm" : ".tensor");
  }
  std::string res_kind(int32_t r) const {
    if (r < num_links) return std::string(topo::link_kind_name(topo.link(topo.link_by_id(res_link[size_t(r)])).kind));
    return r < num_links + num_gpus ? "hbm" : "tensor";
  }

  int32_t hbm(int rank) const { return num_links + rank; }
  int32_t folded(int32_t r) const { return fold ? (*fold)[size_t(r)] : r; }
  Fold compute_rotation(int nranks);
  std::optional<Fold> compute_route_fold(int nranks, int k, const std::vector<std::pair<int, int>>& pairs);
  int32_t tensor(int rank) const { return num_links + num_gpus + rank; }

  const RouteEntry& route(int a, int b) {
    const uint64_t key = (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
    auto it = routes.find(key);
    if (it != routes.end()) return it->second;
    const topo::Path path = topo.route_gpus(a, b, route_opt);
    RouteEntry r;
    r.begin = uint32_t(route_pool.size());
    for (auto e : path.links) {
      const int32_t li = link_res[size_t(topo.link(e).id)];
      r.latency += link_latency[size_t(li)];
      r.network = r.network || link_is_network[size_t(li)];
      route_pool.push_back(li);
    }
    r.count = uint32_t(route_pool.size() - r.begin);
    return routes.emplace(key, r).first->second;
  }

  // ---- flows ----------------------------------------------------------------------------------

  int32_t new_flow() {
    if (!free_flows.empty()) {
      int32_t f = free_flows.back();
      free_flows.pop_back();
      return f;
    }
    flows.emplace_back();
    new_rate.push_back(0);
    return int32_t(flows.size() - 1);
  }

  static void add_use(Flow& f, int32_t r, double w) {
    for (int i = 0; i < f.nuse; ++i)
      if (f.use[i].res == r) {  // a path that crosses one link twice loads it twice
        f.use[i].weight += float(w);
        return;
      }
    CCLAB_ASSERT(f.nuse < kMaxUses, "a flow uses too many resources");
    f.use[f.nuse++] = Use{r, float(w), 0};
  }

  void mark_dirty(int32_t r) { dirty.push_back(r); }

  void attach(int32_t fi) {
    Flow& f = flows[fi];
    for (int i = 0; i < f.nuse; ++i) {
      Resource& r = res[f.use[i].res];
      f.use[i].pos = int32_t(r.flows.size());
      r.flows.push_back(fi);
      mark_dirty(f.use[i].res);
    }
  }

  void detach(int32_t fi) {
    Flow& f = flows[fi];
    for (int i = 0; i < f.nuse; ++i) {
      Resource& r = res[f.use[i].res];
      const int32_t pos = f.use[i].pos;
      const int32_t moved = r.flows.back();
      r.flows[pos] = moved;
      r.flows.pop_back();
      if (moved != fi) {
        Flow& m = flows[moved];
        for (int j = 0; j < m.nuse; ++j)
          if (m.use[j].res == f.use[i].res) {
            m.use[j].pos = pos;
            break;
          }
      }
      r.carried += f.amount * f.use[i].weight;
      mark_dirty(f.use[i].res);
    }
  }

  // ---- max-min fair rates for the components touched since the last call ----------------------

  void recompute(double now) {
    if (dirty.empty()) return;
    ++epoch;
    for (size_t d = 0; d < dirty.size(); ++d) {
      const int32_t start = dirty[d];
      if (res[start].mark == epoch) continue;
      comp_res.clear();
      comp_flows.clear();
      stack.clear();
      stack.push_back(start);
      res[start].mark = epoch;
      while (!stack.empty()) {
        const int32_t r = stack.back();
        stack.pop_back();
        comp_res.push_back(r);
        for (int32_t fi : res[r].flows) {
          Flow& f = flows[fi];
          if (f.version & 0x40000000u) continue;  // already collected (flag bit, cleared below)
          f.version |= 0x40000000u;
          comp_flows.push_back(fi);
          for (int i = 0; i < f.nuse; ++i) {
            const int32_t r2 = f.use[i].res;
            if (res[r2].mark != epoch) {
              res[r2].mark = epoch;
              stack.push_back(r2);
            }
          }
        }
      }
      for (int32_t fi : comp_flows) flows[fi].version &= ~0x40000000u;
      if (!comp_flows.empty()) {
        solve();
        ++n_recompute;
        for (int32_t fi : comp_flows) {
          Flow& f = flows[fi];
          const double r = new_rate[fi];
          if (r == f.rate) continue;
          if (now > f.last) f.remaining -= f.rate * (now - f.last);
          if (!(f.remaining > 0)) f.remaining = 0;
          f.last = now;
          f.rate = r;
          f.version = (f.version + 1) & 0x3fffffffu;
          heap.push(Event{now + f.remaining / r, uint32_t(fi), kDone | f.version});
        }
      }
      if (timeline) {
        for (int32_t r : comp_res) {
          double load = 0;
          for (int32_t fi : res[r].flows) {
            const Flow& f = flows[fi];
            for (int i = 0; i < f.nuse; ++i)
              if (f.use[i].res == r) load += f.rate * f.use[i].weight;
          }
          if (load != res[r].load) {
            res[r].load = load;
            samples->push_back(LoadSample{now, r, load});
          }
        }
      }
    }
    dirty.clear();
  }

  // Progressive filling on comp_res / comp_flows: raise every unfrozen flow's rate together until a
  // resource (or a flow's own cap) saturates; freeze the flows it limits; repeat.
  void solve() {
    if (comp_flows.size() == 1) {
      const int32_t fi = comp_flows[0];
      const Flow& f = flows[fi];
      double x = f.cap > 0 ? f.cap : kInf;
      for (int i = 0; i < f.nuse; ++i) x = std::min(x, res[f.use[i].res].capacity / f.use[i].weight);
      new_rate[fi] = x;
      return;
    }
    for (int32_t r : comp_res) {
      rem[r] = res[r].capacity;
      wsum[r] = 0;
      cnt[r] = 0;
    }
    // Capped flows by cap, ascending; the frozen flag is new_rate >= 0.
    capped.clear();
    for (int32_t fi : comp_flows) {
      const Flow& f = flows[fi];
      new_rate[fi] = -1;
      for (int i = 0; i < f.nuse; ++i) {
        wsum[f.use[i].res] += f.use[i].weight;
        ++cnt[f.use[i].res];
      }
      if (f.cap > 0) capped.push_back(fi);
    }
    std::sort(capped.begin(), capped.end(), [&](int32_t a, int32_t b) { return flows[a].cap < flows[b].cap; });
    size_t next_cap = 0;
    size_t left = comp_flows.size();
    auto freeze = [&](int32_t fi, double x) {
      const Flow& f = flows[fi];
      new_rate[fi] = x;
      for (int i = 0; i < f.nuse; ++i) {
        const int32_t r = f.use[i].res;
        rem[r] -= f.use[i].weight * x;
        wsum[r] -= f.use[i].weight;
        if (--cnt[r] == 0) wsum[r] = 0;
      }
      --left;
    };
    while (left > 0) {
      double best = kInf;
      int32_t bres = -1;
      for (int32_t r : comp_res) {
        if (cnt[r] == 0) continue;
        const double s = std::max(rem[r], 0.0) / wsum[r];
        if (s < best) {
          best = s;
          bres = r;
        }
      }
      while (next_cap < capped.size() && new_rate[capped[next_cap]] >= 0) ++next_cap;
      if (next_cap < capped.size() && flows[capped[next_cap]].cap <= best) {
        // Every capped flow whose cap is below the tightest resource share runs at its cap.
        while (next_cap < capped.size() && flows[capped[next_cap]].cap <= best) {
          const int32_t fi = capped[next_cap++];
          if (new_rate[fi] < 0) freeze(fi, flows[fi].cap);
        }
        continue;
      }
      if (bres < 0) {  // only unbounded resources left (free local work): those flows take no time
        for (int32_t fi : comp_flows)
          if (new_rate[fi] < 0) freeze(fi, kInf);
        break;
      }
      CCLAB_ASSERT(best > 0, "max-min solver found no positive share");
      // Freeze the unfrozen flows of the bottleneck (copy: freeze() does not touch the list).
      for (int32_t fi : res[bres].flows)
        if (new_rate[fi] < 0) freeze(fi, best);
    }
  }
  std::vector<int32_t> capped;
};

Simulator::Simulator(const topo::Topology& topology, model::ModelParams params, topo::RouteOptions route)
    : impl_(new Impl(topology, std::move(params), route)) {}
Simulator::Simulator(topo::Topology&& topology, model::ModelParams params, topo::RouteOptions route)
    : impl_(new Impl(std::move(topology), std::move(params), route)) {}
Simulator::~Simulator() { delete impl_; }
const topo::Topology& Simulator::topology() const { return impl_->topo; }
const model::ModelParams& Simulator::params() const { return impl_->params; }

namespace {

// Sparse and other non-matmul compute kinds: bytes of memory traffic, from the sizes in m, k, n (see
// algorithms/allreduce_sparse.hpp: element counts of the operands), 8-byte indices, plus a log factor for sorts.
double compute_traffic_bytes(const Compute& c, int elem) {
  const double m = double(std::max<int64_t>(c.m, 0)), k = double(std::max<int64_t>(c.k, 0)),
               n = double(std::max<int64_t>(c.n, 0));
  switch (c.kind) {
    case ComputeKind::sort_unique:  // radix sort: ~4 passes over keys read + written
      return 8.0 * m * 2 * 4 + double(elem) * m * std::max(1.0, n) * 2;
    case ComputeKind::union_merge:  // read every list, write the union
      return 8.0 * (m + k + n) * 2;
    case ComputeKind::index_match:  // merge-path: read both sorted lists, write positions
      return 8.0 * (m + k) + 8.0 * m;
    case ComputeKind::scatter_rows:
    case ComputeKind::gather_rows:  // rows of n elements read and written
      return double(elem) * m * std::max(1.0, n) * 2 + 8.0 * m;
    case ComputeKind::matmul:
      break;
  }
  return 0;
}

}  // namespace

int Simulator::fold_period(int nranks) {
  const Fold* f = rotation_fold(nranks);
  return f ? f->period : 0;
}

const Fold* Simulator::rotation_fold(int nranks) {
  Impl& I = *impl_;
  if (I.rotation_nranks != nranks) {
    I.rotation_nranks = nranks;
    I.rotation = I.compute_rotation(nranks);
  }
  return I.rotation.period > 0 ? &I.rotation : nullptr;
}

std::optional<Fold> Simulator::route_fold(int nranks, int period, const std::vector<std::pair<int, int>>& pairs) {
  return impl_->compute_route_fold(nranks, period, pairs);
}

SimResult Simulator::run_folded(const Schedule& reduced, const Fold& fold, const RunOptions& opt,
                                const std::vector<uint8_t>& cross_rank) {
  Impl& I = *impl_;
  CCLAB_ASSERT(fold.period > 0 && fold.rep.size() == I.res.size(), "run_folded without a folding of this model");
  CCLAB_ASSERT(cross_rank.empty() || cross_rank.size() == reduced.dep_pool.size(),
               "one cross-rank flag per dependency");
  I.fold = &fold.rep;  // run_impl checks that the schedule holds only ranks below the period
  I.fold_period = fold.period;
  try {
    SimResult r = run_impl(reduced, opt, cross_rank);
    I.fold = nullptr;
    return r;
  } catch (...) {
    I.fold = nullptr;
    throw;
  }
}

// Rotation by P servers (P = servers per leaf group of a cluster): GPU i -> i + P*G. It maps the graph
// onto itself when every server is built alike and the fabric's leaf groups rotate too; this is
// checked edge by edge (same kind, rate and latency) and on sample routes, so a topology that is not
// symmetric (a file, a partial GPU selection) is simply run unfolded.
Fold Simulator::Impl::compute_rotation(int nranks) {
  const topo::Fabric& fab = topo.fabric;
  if (fab.empty() || nranks != num_gpus) return {};
  const int nservers = topo.num_servers(), g = topo.gpus_per_server();
  const int p = fab.servers_per_leaf;
  if (p <= 0 || nservers % p != 0 || nservers / p < 2 || g * nservers != num_gpus) return {};
  const int groups = nservers / p, k = p * g;
  const auto& graph = topo.graph;
  const size_t nv = boost::num_vertices(graph);
  std::unordered_map<std::string, topo::NodeId> by_name;
  for (size_t v = 0; v < nv; ++v) by_name[graph[v].name] = v;
  std::vector<topo::NodeId> rho(nv);
  for (size_t v = 0; v < nv; ++v) {
    const topo::Node& n = graph[v];
    std::string target;
    if (n.server >= 0) {
      const std::string prefix = "n" + std::to_string(n.server) + ".";
      if (n.name.rfind(prefix, 0) != 0) return {};
      target = "n" + std::to_string((n.server + p) % nservers) + "." + n.name.substr(prefix.size());
    } else if (n.name.rfind("leaf.g", 0) == 0) {
      const size_t dot = n.name.find('.', 6);
      if (dot == std::string::npos) return {};
      const int grp = std::atoi(n.name.substr(6, dot - 6).c_str());
      target = "leaf.g" + std::to_string((grp + 1) % groups) + n.name.substr(dot);
    } else {
      target = n.name;  // spines and other shared switches stay
    }
    auto it = by_name.find(target);
    if (it == by_name.end() || graph[it->second].kind != n.kind) return {};
    rho[v] = it->second;
  }
  for (int i = 0; i < num_gpus; ++i)
    if (rho[topo.gpu(i)] != topo.gpu((i + k) % num_gpus)) return {};
  // Edge map: link -> its image under rho (same kind, rate, latency), a permutation of the links.
  std::vector<int32_t> emap(size_t(num_links), -1);
  std::vector<uint8_t> hit(size_t(num_links), 0);
  for (auto e : boost::make_iterator_range(boost::edges(graph))) {
    const auto [img, ok] = boost::edge(rho[boost::source(e, graph)], rho[boost::target(e, graph)], graph);
    if (!ok) return {};
    const topo::Link &a = graph[e], &b = graph[img];
    if (a.kind != b.kind || a.bw.value != b.bw.value || a.latency.value != b.latency.value) return {};
    const int32_t to = link_res[size_t(b.id)];
    if (hit[size_t(to)]) return {};
    hit[size_t(to)] = 1;
    emap[size_t(link_res[size_t(a.id)])] = to;
  }
  // Routes must commute with the rotation (sample pairs inside a server, across servers, across groups).
  const std::vector<std::pair<int, int>> samples = {
      {0, 1 % num_gpus}, {0, g % num_gpus}, {0, k % num_gpus}, {g - 1, (k + g) % num_gpus}, {num_gpus - 1, 0}};
  for (auto [a, b] : samples) {
    if (a == b) continue;
    const RouteEntry r1 = route(a, b);
    const RouteEntry r2 = route((a + k) % num_gpus, (b + k) % num_gpus);
    if (r1.count != r2.count) return {};
    for (uint32_t i = 0; i < r1.count; ++i)
      if (emap[size_t(route_pool[r1.begin + i])] != route_pool[r2.begin + i]) return {};
  }
  // Orbit representatives: the smallest id in each link's orbit (its cycle under the edge map, walked
  // once); GPU resources fold by rank mod K.
  Fold f;
  f.period = k;
  f.rep.assign(res.size(), -1);
  for (int32_t l = 0; l < num_links; ++l) {
    if (f.rep[size_t(l)] >= 0) continue;
    int32_t rep = l, x = l;
    do {
      rep = std::min(rep, x);
      x = emap[size_t(x)];
    } while (x != l);
    do {
      f.rep[size_t(x)] = rep;
      x = emap[size_t(x)];
    } while (x != l);
  }
  for (int i = 0; i < num_gpus; ++i) {
    f.rep[size_t(hbm(i))] = hbm(i % k);
    f.rep[size_t(tensor(i))] = tensor(i % k);
  }
  return f;
}

// The shift by k checked on the routes a schedule uses. Every shifted copy (a + jk, b + jk) of every
// pair is routed, and the link at position i of copy j is paired with the link at position i of copy
// j + 1. The folded run is exact when this pairing is a permutation of the links used (one image and
// one preimage each, the same rate and latency, both network links or neither) whose orbits all hold
// n / k links: the full run
// is then invariant under the shift (flows of rank r + k on the images of rank r's links), and the
// representative of an orbit carries, in the folded run, one image of every flow that crosses the
// orbit, as each of its links does in the full run. Unlike the rotation this needs no automorphism of
// the graph: a ring's hop from one server to the next crosses the spines on links that depend on the
// servers' leaf group, but each link serves one hop, so the shift by one server still pairs them up.
std::optional<Fold> Simulator::Impl::compute_route_fold(int nranks, int k,
                                                        const std::vector<std::pair<int, int>>& pairs) {
  // Routes to compute at most (a few hundred milliseconds); beyond, the caller uses a coarser folding.
  constexpr int64_t kMaxRoutes = int64_t(1) << 22;
  const int n = nranks;
  if (n != num_gpus || k <= 0 || n % k != 0 || n / k < 2) return std::nullopt;
  const int m = n / k;
  if (int64_t(pairs.size()) * m > kMaxRoutes) return std::nullopt;
  // Local work folds by rank mod k: every GPU's memory and tensor cores must match their representative's.
  for (int i = k; i < n; ++i)
    if (res[size_t(hbm(i))].capacity != res[size_t(hbm(i % k))].capacity ||
        res[size_t(tensor(i))].capacity != res[size_t(tensor(i % k))].capacity)
      return std::nullopt;
  std::vector<int32_t> img(size_t(num_links), -1), pre(size_t(num_links), -1);
  std::vector<int32_t> here, next;
  auto links_of = [&](int a, int b, std::vector<int32_t>& out) {
    const RouteEntry& r = route(a, b);
    out.assign(route_pool.begin() + r.begin, route_pool.begin() + r.begin + r.count);
  };
  for (auto [a, b] : pairs) {
    if (a == b) continue;
    links_of(a, b, here);
    for (int j = 0; j < m; ++j) {
      links_of((a + (j + 1) * k) % n, (b + (j + 1) * k) % n, next);
      if (next.size() != here.size()) return std::nullopt;
      for (size_t i = 0; i < here.size(); ++i) {
        const int32_t x = here[i], y = next[i];
        if (img[size_t(x)] == y) continue;
        if (img[size_t(x)] >= 0 || pre[size_t(y)] >= 0) return std::nullopt;  // not a permutation
        if (res[size_t(x)].capacity != res[size_t(y)].capacity || link_latency[size_t(x)] != link_latency[size_t(y)] ||
            link_is_network[size_t(x)] != link_is_network[size_t(y)])
          return std::nullopt;
        img[size_t(x)] = y;
        pre[size_t(y)] = x;
      }
      std::swap(here, next);
    }
  }
  Fold f;
  f.period = k;
  f.rep.resize(res.size());
  for (int32_t l = 0; l < num_links; ++l) f.rep[size_t(l)] = l;  // links no route uses stand for themselves
  std::vector<uint8_t> seen(size_t(num_links), 0);
  for (int32_t l = 0; l < num_links; ++l) {
    if (img[size_t(l)] < 0 || seen[size_t(l)]) continue;
    int32_t rep = l, x = l;
    int len = 0;
    do {
      seen[size_t(x)] = 1;
      rep = std::min(rep, x);
      x = img[size_t(x)];
      ++len;
    } while (x != l && len <= m);
    if (x != l || len != m) return std::nullopt;  // a shorter orbit would carry several images of a flow
    do {
      f.rep[size_t(x)] = rep;
      x = img[size_t(x)];
    } while (x != l);
  }
  for (int i = 0; i < num_gpus; ++i) {
    f.rep[size_t(hbm(i))] = hbm(i % k);
    f.rep[size_t(tensor(i))] = tensor(i % k);
  }
  return f;
}

SimResult Simulator::run(const Schedule& s, const RunOptions& opt) { return run_impl(s, opt, {}); }

SimResult Simulator::run_impl(const Schedule& s, const RunOptions& opt, const std::vector<uint8_t>& cross_rank) {
  Impl& I = *impl_;
  const model::ModelParams& P = I.params;
  if (s.nranks > I.num_gpus)
    throw_input("schedule has " + std::to_string(s.nranks) + " ranks but topology '" + I.topo.name + "' has " +
                std::to_string(I.num_gpus) + " GPUs");
  const size_t n = s.ops.size();
  if (n > kOpMask) throw_input("schedule has " + std::to_string(n) + " ops, more than the simulator can index");
  SimResult out;

  // Per op, one record, so that the event loop touches one cache line for it: when it may start (its
  // dependencies' latest end plus their latency), how many dependencies have not ended (-1 once the op
  // itself has), and where its successors start in `succ` (they end where the next op's start).
  struct OpState {
    double ready = 0;
    int32_t pending = 0;
    uint32_t succ_begin = 0;
  };
  std::vector<OpState> st(n + 1);

  // Successor lists (CSR) from explicit deps and the implicit previous op of each (rank, channel);
  // `last` holds, per rank, the last op seen on each of its channels.
  const double start_lat = (opt.start_latency ? *opt.start_latency : P.launch_latency.value).value;
  std::vector<std::vector<int32_t>> last(size_t(s.nranks));
  auto last_of = [&](const Op& op) -> int32_t& {
    std::vector<int32_t>& l = last[size_t(op.rank)];
    if (l.size() <= op.channel) l.resize(size_t(op.channel) + 1, -1);
    return l[op.channel];
  };
  for (size_t i = 0; i < n; ++i) {  // out-degrees, counted in st[op + 1].succ_begin
    const Op& op = s.ops[i];
    // A folded schedule holds only the ranks it stands for.
    if (op.rank < 0 || op.rank >= s.nranks || (I.fold && op.rank >= I.fold_period))
      throw_internal(__FILE__, __LINE__, "op " + std::to_string(i) + ": bad rank");
    st[i].ready = start_lat;
    int32_t& l = last_of(op);
    if (l >= 0) {
      ++st[size_t(l) + 1].succ_begin;
      ++st[i].pending;
    }
    l = int32_t(i);
    for (OpId d : s.deps(op)) {
      if (d < 0 || size_t(d) >= n)
        throw_internal(__FILE__, __LINE__,
                       "op " + std::to_string(i) + " depends on op " + std::to_string(d) + ", which does not exist");
      ++st[size_t(d) + 1].succ_begin;
      ++st[i].pending;
    }
  }
  // Ranks whose ops all run on one channel (run_alone below).
  std::vector<uint8_t> one_channel(size_t(s.nranks), 0);
  for (size_t r = 0; r < last.size(); ++r) {
    one_channel[r] = std::count_if(last[r].begin(), last[r].end(), [](int32_t l) { return l >= 0; }) == 1;
    std::fill(last[r].begin(), last[r].end(), -1);
  }
  for (size_t i = 0; i < n; ++i) st[i + 1].succ_begin += st[i].succ_begin;
  std::vector<int32_t> succ(st[n].succ_begin);
  // Bit 31: the successor is on another rank (sync latency); bit 30: on another channel of this rank.
  // st[op].succ_begin serves as the op's fill cursor, then moves back to where the op's list begins.
  for (size_t i = 0; i < n; ++i) {
    const Op& op = s.ops[i];
    int32_t& l = last_of(op);
    if (l >= 0) succ[st[size_t(l)].succ_begin++] = int32_t(i);
    l = int32_t(i);
    for (uint32_t j = 0; j < op.dep_count; ++j) {
      const OpId d = s.dep_pool[op.dep_begin + j];
      const Op& dop = s.ops[size_t(d)];
      const bool other_rank = cross_rank.empty() ? dop.rank != op.rank : cross_rank[op.dep_begin + j] != 0;
      const uint32_t cls = other_rank ? kCrossRank : dop.channel != op.channel ? kCrossChannel : 0u;
      succ[st[size_t(d)].succ_begin++] = int32_t(uint32_t(i) | cls);
    }
  }
  std::vector<std::vector<int32_t>>().swap(last);

  std::vector<OpTime> times;
  if (opt.record_ops) times.assign(n, OpTime{});

  // Per-run resource state.
  I.flows.clear();
  I.free_flows.clear();
  I.new_rate.clear();
  I.dirty.clear();
  I.n_recompute = 0;
  for (auto& r : I.res) {
    r.flows.clear();
    r.carried = 0;
    r.load = 0;
  }
  I.timeline = opt.record_timeline;
  I.samples = &out.timeline;
  decltype(I.heap)().swap(I.heap);

  // The fill cursors back to where each list begins (each stands at the next list's start); ops that
  // wait on nothing start.
  uint32_t begin = 0;
  for (size_t i = 0; i < n; ++i) {
    std::swap(begin, st[i].succ_begin);
    if (st[i].pending == 0) I.heap.push(Event{st[i].ready, uint32_t(i), 0});
  }

  const double sync = (opt.sync_latency ? *opt.sync_latency : P.sync_latency.value).value,
               local_dep = (opt.local_dep_latency ? *opt.local_dep_latency : P.local_dep_latency.value).value;
  const double local_lat = (opt.local_op_latency ? *opt.local_op_latency : P.local_op_latency.value).value;
  double makespan = 0;
  int64_t nflows = 0, nevents = 0;
  size_t finished = 0;

  auto finish_op = [&](int32_t o, double end) {
    st[size_t(o)].pending = -1;
    ++finished;
    if (opt.record_ops) times[o].end = end;
    makespan = std::max(makespan, end);
    for (uint32_t k = st[size_t(o)].succ_begin; k < st[size_t(o) + 1].succ_begin; ++k) {
      const uint32_t e = uint32_t(succ[k]);
      OpState& next = st[e & kOpMask];
      const double lat = (e & kCrossRank) ? sync : (e & kCrossChannel) ? local_dep : 0.0;
      next.ready = std::max(next.ready, end + lat);
      if (--next.pending == 0) I.heap.push(Event{next.ready, e & kOpMask, 0});
    }
  };

  const model::PathTable* matmul_table = P.table("matmul." + std::string(dtype_name(s.dtype)));
  auto transfer_proto = [&](const Op& op, bool remote_reduce) -> const model::ProtocolParams& {
    if (remote_reduce && opt.peer_reduce_proto) return *opt.peer_reduce_proto;
    if (!remote_reduce && opt.copy_proto) return *opt.copy_proto;
    const model::Proto pr = opt.proto ? *opt.proto : model::transfer_protocol(s.lowering, op.kind, remote_reduce);
    return P.of(pr);
  };
  // Per-op fixed costs of the executor's paths, where given.
  auto local_copy_latency = [&](double fallback) {
    return opt.local_copy_latency ? opt.local_copy_latency->value
                                  : (opt.copy_latency ? opt.copy_latency->value : fallback);
  };
  auto op_latency = [&](const Op& op, double fallback) {
    if (op.kind == OpKind::reduce || op.kind == OpKind::compute)
      return opt.kernel_latency ? opt.kernel_latency->value : fallback;
    return opt.copy_latency ? opt.copy_latency->value : fallback;
  };
  auto local_weight = [&](const model::ProtocolParams* pp, int64_t bytes, double w) {
    return pp ? w / std::max(pp->efficiency_at(bytes), 1e-9) : w;
  };

  // What op o asks of the resources: fills f's uses, cap and fixed latency; returns the amount of its
  // flow (bytes or FLOPs).
  auto describe = [&](int32_t o, Flow& f) -> double {
    const Op& op = s.ops[o];
    const int elem = dtype_size(s.dtype);
    f.nuse = 0;
    f.cap = 0;
    f.latency = 0;
    double amount = double(op.bytes);
    auto add_route = [&](int from, int to, const model::ProtocolParams& pp, double& lat) {
      const RouteEntry& r = I.route(from, to);
      const double w = 1.0 / std::max(pp.efficiency_at(op.bytes), 1e-9);
      for (uint32_t k = 0; k < r.count; ++k) Impl::add_use(f, I.folded(I.route_pool[r.begin + k]), w);
      double step = opt.step_latency ? opt.step_latency->value : pp.latency.value.value;
      if (r.network && opt.net_step_latency) step = opt.net_step_latency->value;
      step = (op.kind == OpKind::reduce && opt.peer_kernel_latency) ? opt.peer_kernel_latency->value
                                                                    : op_latency(op, step);
      lat = std::max(lat, opt.step_covers_route ? std::max(r.latency, step) : r.latency + step);
      const double cap = opt.per_flow_cap ? opt.per_flow_cap->value : pp.max_rate.value.value;
      if (cap > 0) f.cap = f.cap > 0 ? std::min(f.cap, cap) : cap;
    };
    switch (op.kind) {
      case OpKind::put:
      case OpKind::get: {
        const int from = op.kind == OpKind::put ? op.rank : op.src.rank;
        const int to = op.kind == OpKind::put ? op.dst.rank : op.rank;
        if (from == to) {  // a transfer to itself is a local copy
          Impl::add_use(f, I.hbm(op.rank), local_weight(opt.local_copy_proto, op.bytes, 2.0));
          f.latency = local_copy_latency(local_lat);
        } else {
          add_route(from, to, transfer_proto(op, false), f.latency);
        }
        break;
      }
      case OpKind::copy: {
        if (op.dst.rank != op.src.rank) {
          add_route(op.src.rank, op.dst.rank, transfer_proto(op, false), f.latency);
        } else {
          Impl::add_use(f, I.hbm(op.rank), local_weight(opt.local_copy_proto, op.bytes, 2.0));
          f.latency = local_copy_latency(local_lat);
        }
        break;
      }
      case OpKind::reduce: {
        // Reads a and b, writes dst: local parts on this rank's memory, remote parts over the fabric.
        int local_traffic = 1;  // the write
        bool remote = false;
        for (const Ref* r : {&op.src, &op.src2}) {
          if (r->rank == op.rank) {
            ++local_traffic;
          } else {
            remote = true;
            add_route(r->rank, op.rank, transfer_proto(op, true), f.latency);
          }
        }
        if (remote)
          Impl::add_use(f, I.hbm(op.rank), double(local_traffic));
        else
          Impl::add_use(f, I.hbm(op.rank), local_weight(opt.local_reduce_proto, op.bytes, double(local_traffic)));
        if (!remote) f.latency = op_latency(op, local_lat);
        break;
      }
      case OpKind::compute: {
        CCLAB_ASSERT(op.compute >= 0 && size_t(op.compute) < s.computes.size(), "compute op without its Compute");
        const Compute& c = s.computes[op.compute];
        f.latency = op_latency(op, local_lat);
        if (c.kind == ComputeKind::matmul) {
          amount = 2.0 * double(c.m) * double(c.k) * double(c.n);
          double slow = s.dtype == DType::f32 ? 1.0 / std::max(P.fp32_matmul_ratio.value, 1e-9) : 1.0;
          // A calibrated profile's measured matmul times (matmul.<dtype>, by FLOPs): the rate at this size,
          // as the tensor cores' share (small products run far below the peak).
          if (matmul_table && !P.free_local_work) {
            const double part = matmul_table->size_part(amount).value;
            const double cap = I.res[size_t(I.tensor(op.rank))].capacity;
            if (part > 0 && cap > 0) slow = cap * part / amount;
          }
          Impl::add_use(f, I.tensor(op.rank), slow);
        } else {
          amount = compute_traffic_bytes(c, elem);
          Impl::add_use(f, I.hbm(op.rank), 1.0);
        }
        break;
      }
    }
    return amount;
  };

  // Local work on the memory of a rank whose ops all run on one channel is alone there: that memory
  // serves only its rank's ops (transfers use links), and one channel runs one op at a time. Its flow's
  // rate is then the memory's rate, known when it starts, so it needs no flow in the max-min solver;
  // and a run of such ops that only wait on each other (a layout transform: thousands of copies in a
  // row) is priced in one pass, as the solver would, without a round of events per op. Not with a
  // timeline, whose load samples come from the solver.
  auto alone = [&](const Op& op, const Flow& f, double amount) {
    return !opt.record_timeline && one_channel[size_t(op.rank)] && amount > 0 && f.nuse == 1 && f.cap <= 0 &&
           f.use[0].res == I.hbm(op.rank) && I.res[size_t(f.use[0].res)].capacity / f.use[0].weight > 0;
  };
  // Runs op o (alone on its memory, started at `now`, described in f) and the ops after it that only
  // wait on their predecessor and are alone too; the last one's end is queued as an event.
  auto run_alone = [&](int32_t o, double now, const Flow& first, double amount) {
    Flow& f = I.scratch;
    f = first;
    for (;;) {
      // The solver's rate for a lone flow, its drain time, and the op's end: the same arithmetic.
      const double rate = I.res[size_t(f.use[0].res)].capacity / f.use[0].weight;
      const double drain = now + amount / rate;
      const double end = drain + f.latency;
      I.res[size_t(f.use[0].res)].carried += amount * f.use[0].weight;
      ++nflows;
      // The next op, if it waits on this one only, nothing else waits on this one, and it is alone too.
      const OpState& cur = st[size_t(o)];
      int32_t next = -1;
      double next_amount = 0;
      if (st[size_t(o) + 1].succ_begin - cur.succ_begin == 1 && (uint32_t(succ[cur.succ_begin]) & ~kOpMask) == 0) {
        const int32_t cand = succ[cur.succ_begin];
        if (st[size_t(cand)].pending == 1) {
          next_amount = describe(cand, f);
          if (alone(s.ops[size_t(cand)], f, next_amount)) next = cand;
        }
      }
      if (next < 0) {
        st[size_t(o)].ready = end;  // from now on the op's end, read when its event comes
        I.heap.push(Event{drain, uint32_t(o), kLocalDone});
        return;
      }
      // This op ends before anything else could notice: finish it here and start the next one.
      st[size_t(o)].pending = -1;
      ++finished;
      if (opt.record_ops) times[o].end = end;
      makespan = std::max(makespan, end);
      OpState& n = st[size_t(next)];
      n.ready = std::max(n.ready, end);
      n.pending = 0;
      now = n.ready;
      if (opt.record_ops) times[next].start = now;
      o = next;
      amount = next_amount;
    }
  };

  // Peer copies waiting for the copy ahead of them into the same peer (copies_in_issue_order), by (from, to).
  std::unordered_map<uint64_t, std::deque<int32_t>> copy_queue;
  std::unordered_map<uint64_t, int32_t> copy_running;
  auto copy_key = [&](const Op& op) -> std::optional<uint64_t> {
    if (!opt.copies_in_issue_order) return std::nullopt;
    int from = -1, to = -1;
    if (op.kind == OpKind::put || op.kind == OpKind::get || op.kind == OpKind::copy) {
      from = op.kind == OpKind::put ? op.rank : op.src.rank;
      to = op.kind == OpKind::get ? op.rank : op.dst.rank;
    }
    if (from < 0 || from == to) return std::nullopt;
    return (uint64_t(uint32_t(from)) << 32) | uint32_t(to);
  };
  std::function<void(int32_t, double)> start_op;
  // The copy ahead has moved its bytes: the next one into the same peer starts (its fixed latency overlaps).
  auto release_copy = [&](int32_t o, double now) {
    const auto key = copy_key(s.ops[size_t(o)]);
    if (!key) return;
    auto it = copy_running.find(*key);
    if (it == copy_running.end() || it->second != o) return;
    auto& q = copy_queue[*key];
    if (q.empty()) {
      copy_running.erase(it);
      return;
    }
    const int32_t next = q.front();
    q.pop_front();
    it->second = next;
    start_op(next, now);
  };
  start_op = [&](int32_t o, double now) {
    if (const auto key = copy_key(s.ops[size_t(o)])) {
      auto [it, fresh] = copy_running.try_emplace(*key, o);
      if (!fresh && it->second != o) {
        copy_queue[*key].push_back(o);
        return;
      }
    }
    if (opt.record_ops) times[o].start = now;
    int32_t fi = I.new_flow();
    Flow& f = I.flows[fi];
    f.op = o;
    const double amount = describe(o, f);
    if (amount <= 0 || f.nuse == 0) {
      const double end = now + f.latency;
      I.free_flows.push_back(fi);
      release_copy(o, now);
      finish_op(o, end);
      return;
    }
    if (alone(s.ops[size_t(o)], f, amount)) {
      f.op = -1;
      I.free_flows.push_back(fi);
      run_alone(o, now, f, amount);
      return;
    }
    f.amount = f.remaining = amount;
    f.rate = 0;
    f.last = now;
    ++nflows;
    I.attach(fi);
  };

  while (!I.heap.empty()) {
    const double now = I.heap.top().t;
    while (!I.heap.empty() && I.heap.top().t <= now) {
      const Event ev = I.heap.top();
      I.heap.pop();
      ++nevents;
      if (ev.tag == kLocalDone) {
        finish_op(int32_t(ev.id), st[ev.id].ready);
        continue;
      }
      if (!(ev.tag & kDone)) {
        start_op(int32_t(ev.id), now);
        continue;
      }
      Flow& f = I.flows[ev.id];
      if ((f.version & 0x3fffffffu) != (ev.tag & 0x3fffffffu) || f.op < 0) continue;  // stale
      const int32_t o = f.op;
      const double end = now + f.latency;
      f.remaining = 0;
      I.detach(int32_t(ev.id));
      f.op = -1;
      f.rate = 0;
      f.version = (f.version + 1) & 0x3fffffffu;
      I.free_flows.push_back(int32_t(ev.id));
      release_copy(o, now);
      finish_op(o, end);
    }
    I.recompute(now);
  }

  if (finished != n) {
    // Something never became ready: a cycle through explicit and channel-order dependencies.
    for (size_t i = 0; i < n; ++i)
      if (st[i].pending >= 0) {
        const Op& op = s.ops[i];
        std::string waits;
        for (OpId d : s.deps(op))
          if (st[size_t(d)].pending >= 0) waits += (waits.empty() ? "" : ", ") + std::to_string(d);
        throw_internal(__FILE__, __LINE__,
                       "schedule '" + s.algo + "' cannot finish: op " + std::to_string(i) + " (" +
                           std::string(op_kind_name(op.kind)) + ", rank " + std::to_string(op.rank) + ", channel " +
                           std::to_string(op.channel) + ") waits on " +
                           (waits.empty() ? std::string("the previous op of its channel") : "ops " + waits) +
                           " that never finish (dependency cycle)");
      }
  }

  out.time = Seconds(makespan);
  out.ops = std::move(times);
  out.flows = nflows;
  out.events = nevents;
  out.recomputations = I.n_recompute;
  if (opt.record_timeline) {
    out.resource_names.resize(I.res.size());
    for (size_t r = 0; r < I.res.size(); ++r) out.resource_names[r] = I.res_name(int32_t(r));
  }
  for (size_t r = 0; r < I.res.size(); ++r) {
    if (I.res[r].carried <= 0) continue;
    ResourceStat st;
    st.name = I.res_name(int32_t(r));
    st.kind = I.res_kind(int32_t(r));
    st.capacity = I.res[r].capacity;
    st.carried = I.res[r].carried;
    st.utilisation = makespan > 0 ? st.carried / (st.capacity * makespan) : 0;
    if (st.utilisation > out.bottleneck_utilisation) {
      out.bottleneck_utilisation = st.utilisation;
      out.bottleneck = st.name;
    }
    out.resources.push_back(std::move(st));
  }
  return out;
}

}  // namespace cclab::sim
