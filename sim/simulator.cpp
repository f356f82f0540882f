#include "sim/simulator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
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
// Successor list entries: op id plus the kind of dependency.
constexpr uint32_t kCrossRank = 0x80000000u, kCrossChannel = 0x40000000u, kOpMask = 0x3fffffffu;

struct RouteEntry {
  uint32_t begin = 0, count = 0;  // into route_pool
  double latency = 0;
  bool network = false;  // crosses a network link
};

}  // namespace

struct Simulator::Impl {
  const topo::Topology topo;  // a copy: callers may pass a temporary (select_gpus(...))
  model::ModelParams params;
  topo::RouteOptions route_opt;

  int num_gpus = 0;
  int num_links = 0;
  std::vector<Resource> res;
  std::vector<std::string> res_name, res_kind;
  std::unordered_map<const void*, int32_t> link_index;  // &graph[e] -> resource id
  std::vector<double> link_latency;                     // per link, with overrides
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
  int64_t n_recompute = 0;
  bool timeline = false;
  // Folding (symmetric runs): resource -> orbit representative; empty when not folding.
  std::vector<int32_t> fold;
  int fold_k = 0, fold_nranks = -1;  // cached fold_period result and the rank count it is for
  std::vector<int32_t> fold_map;     // computed once
  std::vector<LoadSample>* samples = nullptr;

  Impl(const topo::Topology& t, model::ModelParams p, topo::RouteOptions ro)
      : topo(t), params(std::move(p)), route_opt(ro) {
    num_gpus = topo.num_gpus();
    for (auto e : boost::make_iterator_range(boost::edges(topo.graph))) {
      const topo::Link& l = topo.link(e);
      const auto& ov = params.link[size_t(l.kind)];
      const double bw = ov.bw ? ov.bw->value.value : l.bw.value;
      const double lat = ov.latency ? ov.latency->value.value : l.latency.value;
      if (!(bw > 0))
        throw_input("topology link " + topo.node(boost::source(e, topo.graph)).name + " -> " +
                    topo.node(boost::target(e, topo.graph)).name + " has no bandwidth");
      link_index[&topo.graph[e]] = int32_t(res.size());
      Resource r;
      r.capacity = bw;
      res.push_back(std::move(r));
      res_name.push_back(topo.node(boost::source(e, topo.graph)).name + "->" +
                         topo.node(boost::target(e, topo.graph)).name);
      res_kind.push_back(std::string(topo::link_kind_name(l.kind)));
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
      res_name.push_back(n.name + ".hbm");
      res_kind.push_back("hbm");
    }
    for (int g = 0; g < num_gpus; ++g) {
      const topo::Node& n = topo.node(topo.gpu(g));
      Resource c;
      c.capacity = (n.flops > 0 ? n.flops : params.default_flops.value) * params.matmul_efficiency.value;
      if (params.free_local_work) c.capacity = kInf;
      res.push_back(std::move(c));
      res_name.push_back(n.name + ".tensor");
      res_kind.push_back("tensor");
    }
    rem.resize(res.size());
    wsum.resize(res.size());
    cnt.resize(res.size());
  }

  int32_t hbm(int rank) const { return num_links + rank; }
  int32_t folded(int32_t r) const { return fold.empty() ? r : fold[size_t(r)]; }
  int compute_fold(int nranks);
  int32_t tensor(int rank) const { return num_links + num_gpus + rank; }

  const RouteEntry& route(int a, int b) {
    const uint64_t key = (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
    auto it = routes.find(key);
    if (it != routes.end()) return it->second;
    const topo::Path path = topo.route_gpus(a, b, route_opt);
    RouteEntry r;
    r.begin = uint32_t(route_pool.size());
    for (auto e : path.links) {
      auto li = link_index.find(&topo.graph[e]);
      CCLAB_ASSERT(li != link_index.end(), "route uses a link not in the graph");
      r.latency += link_latency[li->second];
      r.network = r.network || link_is_network[li->second];
      route_pool.push_back(li->second);
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
  Impl& I = *impl_;
  if (I.fold_nranks != nranks) {
    I.fold_nranks = nranks;
    I.fold_k = I.compute_fold(nranks);
  }
  return I.fold_k;
}

SimResult Simulator::run_folded(const Schedule& reduced, const RunOptions& opt) {
  Impl& I = *impl_;
  const int k = fold_period(reduced.nranks);
  CCLAB_ASSERT(k > 0, "run_folded without a symmetry");
  for (const Op& op : reduced.ops) CCLAB_ASSERT(op.rank < k, "a folded schedule holds only ranks below the period");
  I.fold = I.fold_map;
  try {
    SimResult r = run(reduced, opt);
    I.fold.clear();
    return r;
  } catch (...) {
    I.fold.clear();
    throw;
  }
}

// Rotation by P servers (P = servers per leaf group of a cluster): GPU i -> i + P*G. It maps the graph
// onto itself when every server is built alike and the fabric's leaf groups rotate too; this is
// checked edge by edge (same kind, rate and latency) and on sample routes, so a topology that is not
// symmetric (a file, a partial GPU selection) is simply run unfolded.
int Simulator::Impl::compute_fold(int nranks) {
  fold_map.clear();
  const topo::Fabric& fab = topo.fabric;
  if (fab.empty() || nranks != num_gpus) return 0;
  const int nservers = topo.num_servers(), g = topo.gpus_per_server();
  const int p = fab.servers_per_leaf;
  if (p <= 0 || nservers % p != 0 || nservers / p < 2 || g * nservers != num_gpus) return 0;
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
      if (n.name.rfind(prefix, 0) != 0) return 0;
      target = "n" + std::to_string((n.server + p) % nservers) + "." + n.name.substr(prefix.size());
    } else if (n.name.rfind("leaf.g", 0) == 0) {
      const size_t dot = n.name.find('.', 6);
      if (dot == std::string::npos) return 0;
      const int grp = std::atoi(n.name.substr(6, dot - 6).c_str());
      target = "leaf.g" + std::to_string((grp + 1) % groups) + n.name.substr(dot);
    } else {
      target = n.name;  // spines and other shared switches stay
    }
    auto it = by_name.find(target);
    if (it == by_name.end() || graph[it->second].kind != n.kind) return 0;
    rho[v] = it->second;
  }
  for (int i = 0; i < num_gpus; ++i)
    if (rho[topo.gpu(i)] != topo.gpu((i + k) % num_gpus)) return 0;
  // Edge map: link -> its image under rho (same kind, rate, latency).
  std::vector<int32_t> emap(size_t(num_links), -1);
  for (auto e : boost::make_iterator_range(boost::edges(graph))) {
    const auto [img, ok] = boost::edge(rho[boost::source(e, graph)], rho[boost::target(e, graph)], graph);
    if (!ok) return 0;
    const topo::Link &a = graph[e], &b = graph[img];
    if (a.kind != b.kind || a.bw.value != b.bw.value || a.latency.value != b.latency.value) return 0;
    emap[size_t(link_index.at(&graph[e]))] = link_index.at(&graph[img]);
  }
  // Routes must commute with the rotation (sample pairs inside a server, across servers, across groups).
  const std::vector<std::pair<int, int>> samples = {
      {0, 1 % num_gpus}, {0, g % num_gpus}, {0, k % num_gpus}, {g - 1, (k + g) % num_gpus}, {num_gpus - 1, 0}};
  for (auto [a, b] : samples) {
    if (a == b) continue;
    const RouteEntry r1 = route(a, b);
    const RouteEntry r2 = route((a + k) % num_gpus, (b + k) % num_gpus);
    if (r1.count != r2.count) return 0;
    for (uint32_t i = 0; i < r1.count; ++i)
      if (emap[size_t(route_pool[r1.begin + i])] != route_pool[r2.begin + i]) return 0;
  }
  // Orbit representatives: the smallest id in each link's orbit; GPU resources fold by rank mod K.
  fold_map.resize(res.size());
  for (int32_t l = 0; l < num_links; ++l) {
    int32_t rep = l, x = l;
    for (int j = 1; j < groups; ++j) {
      x = emap[size_t(x)];
      rep = std::min(rep, x);
    }
    fold_map[size_t(l)] = rep;
  }
  for (int i = 0; i < num_gpus; ++i) {
    fold_map[size_t(hbm(i))] = hbm(i % k);
    fold_map[size_t(tensor(i))] = tensor(i % k);
  }
  return k;
}

SimResult Simulator::run(const Schedule& s, const RunOptions& opt) {
  Impl& I = *impl_;
  const model::ModelParams& P = I.params;
  if (s.nranks > I.num_gpus)
    throw_input("schedule has " + std::to_string(s.nranks) + " ranks but topology '" + I.topo.name + "' has " +
                std::to_string(I.num_gpus) + " GPUs");
  const size_t n = s.ops.size();
  if (n > kOpMask) throw_input("schedule has " + std::to_string(n) + " ops, more than the simulator can index");
  SimResult out;

  // Successor lists (CSR) from explicit deps and the implicit previous op of each (rank, channel).
  int max_ch = 0;
  for (const Op& op : s.ops) max_ch = std::max(max_ch, int(op.channel));
  const size_t nch = size_t(max_ch) + 1;
  std::vector<int32_t> last(size_t(s.nranks) * nch, -1);
  std::vector<int32_t> chan_prev(n, -1);
  std::vector<uint32_t> outdeg(n + 1, 0);
  std::vector<int32_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Op& op = s.ops[i];
    if (op.rank < 0 || op.rank >= s.nranks)
      throw_internal(__FILE__, __LINE__, "op " + std::to_string(i) + ": bad rank");
    int32_t& l = last[size_t(op.rank) * nch + op.channel];
    if (l >= 0) {
      chan_prev[i] = l;
      ++outdeg[l];
      ++pending[i];
    }
    l = int32_t(i);
    for (OpId d : s.deps(op)) {
      if (d < 0 || size_t(d) >= n)
        throw_internal(__FILE__, __LINE__,
                       "op " + std::to_string(i) + " depends on op " + std::to_string(d) + ", which does not exist");
      ++outdeg[d];
      ++pending[i];
    }
  }
  std::vector<uint32_t> succ_begin(n + 1, 0);
  for (size_t i = 0; i < n; ++i) succ_begin[i + 1] = succ_begin[i] + outdeg[i];
  std::vector<int32_t> succ(succ_begin[n]);
  {
    std::vector<uint32_t> fill(succ_begin.begin(), succ_begin.end() - 1);
    // Bit 31: the successor is on another rank (sync latency); bit 30: on another channel of this rank.
    for (size_t i = 0; i < n; ++i) {
      const Op& op = s.ops[i];
      if (chan_prev[i] >= 0) succ[fill[chan_prev[i]]++] = int32_t(i);
      for (OpId d : s.deps(op)) {
        const Op& dop = s.ops[size_t(d)];
        const uint32_t cls = dop.rank != op.rank ? kCrossRank : dop.channel != op.channel ? kCrossChannel : 0u;
        succ[fill[d]++] = int32_t(uint32_t(i) | cls);
      }
    }
  }
  std::vector<uint32_t>().swap(outdeg);  // free early: huge schedules
  std::vector<int32_t>().swap(chan_prev);

  const double start_lat = (opt.start_latency ? *opt.start_latency : P.launch_latency.value).value;
  std::vector<double> ready(n, start_lat);
  std::vector<OpTime> times;
  if (opt.record_ops) times.assign(n, OpTime{});
  std::vector<uint8_t> done(n, 0);

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

  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) I.heap.push(Event{ready[i], uint32_t(i), 0});

  const double sync = (opt.sync_latency ? *opt.sync_latency : P.sync_latency.value).value,
               local_dep = (opt.local_dep_latency ? *opt.local_dep_latency : P.local_dep_latency.value).value;
  const double local_lat = (opt.local_op_latency ? *opt.local_op_latency : P.local_op_latency.value).value;
  double makespan = 0;
  int64_t nflows = 0, nevents = 0;
  size_t finished = 0;

  auto finish_op = [&](int32_t o, double end) {
    done[o] = 1;
    ++finished;
    if (opt.record_ops) times[o].end = end;
    makespan = std::max(makespan, end);
    for (uint32_t k = succ_begin[o]; k < succ_begin[o + 1]; ++k) {
      const uint32_t e = uint32_t(succ[k]);
      const int32_t sidx = int32_t(e & kOpMask);
      const double lat = (e & kCrossRank) ? sync : (e & kCrossChannel) ? local_dep : 0.0;
      ready[sidx] = std::max(ready[sidx], end + lat);
      if (--pending[sidx] == 0) I.heap.push(Event{ready[sidx], uint32_t(sidx), 0});
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

  auto start_op = [&](int32_t o, double now) {
    const Op& op = s.ops[o];
    if (opt.record_ops) times[o].start = now;
    const int elem = dtype_size(s.dtype);
    int32_t fi = I.new_flow();
    Flow& f = I.flows[fi];
    f.op = o;
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
    if (amount <= 0 || f.nuse == 0) {
      const double end = now + f.latency;
      I.free_flows.push_back(fi);
      finish_op(o, end);
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
      finish_op(o, end);
    }
    I.recompute(now);
  }

  if (finished != n) {
    // Something never became ready: a cycle through explicit and channel-order dependencies.
    for (size_t i = 0; i < n; ++i)
      if (!done[i]) {
        const Op& op = s.ops[i];
        std::string waits;
        for (OpId d : s.deps(op))
          if (!done[d]) waits += (waits.empty() ? "" : ", ") + std::to_string(d);
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
  out.resource_names = I.res_name;
  for (size_t r = 0; r < I.res.size(); ++r) {
    if (I.res[r].carried <= 0) continue;
    ResourceStat st;
    st.name = I.res_name[r];
    st.kind = I.res_kind[r];
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
