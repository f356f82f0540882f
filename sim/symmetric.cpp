#include "sim/symmetric.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"

namespace cclab::sim {

namespace {

struct OpRef {
  int rank;  // -1: a dropped op whose reference did not fit an OpId
  int32_t index;
};

// a belongs to the op of rank r + K, b to rank r's: a's rank must be b's moved by K. Offsets and buffers
// may differ (a ring works on a different block at each rank); they do not change what an op costs.
bool same_ref_shifted(const Ref& a, const Ref& b, int k, int n) { return a.rank == (b.rank + k) % n; }

// The ops of ranks [0, k), every dependency pointed at its representative, ready for run_folded.
struct Reduced {
  Schedule schedule;
  std::vector<uint8_t> cross_rank;         // per dep_pool entry: the dependency was on another rank
  std::vector<std::pair<int, int>> pairs;  // (from, to) GPUs of the transfers of ranks [0, k), each once
};

// Records ranks [0, k) of the schedule fully and the first `check_ops` ops of ranks [k, 2k), checks
// that the latter are the former moved by k, and reduces the schedule to ranks [0, k) (with the pairs
// its transfers route, if asked). nullopt when it is not symmetric. `ops_hint`: about how many ops will
// be recorded.
std::optional<Reduced> record_reduced(const Algorithm& algo, const AlgoArgs& args, int k, int32_t check_ops,
                                      bool want_pairs, size_t ops_hint) {
  const int n = args.nranks;
  Reduced red;
  Schedule& s = red.schedule;
  s.algo = algo.name;
  s.collective = algo.collective;
  s.nranks = n;
  s.count = args.count;
  s.dtype = args.dtype;
  s.redop = args.redop;
  s.root = args.root;
  s.in_place = args.in_place;
  s.buffers.assign(size_t(n), BufferSizes{});
  s.ops.reserve(ops_hint);  // growing a vector of millions of ops costs more than recording them
  Transport t(s);
  t.set_rank_window(k, check_ops);
  algo.build(args, t);
  if (!t.windowed_whole()) return std::nullopt;  // the algorithm took over a schedule made elsewhere

  // Per-rank lists of the recorded ops of ranks [0, 2k). Ranks [0, k) are recorded whole, so there an
  // op's position in its list is its index.
  std::vector<std::vector<int32_t>> of_rank(size_t(2 * k));
  for (int r = 0; r < k; ++r) of_rank[size_t(r)].reserve(s.ops.size() / size_t(k));
  std::vector<int32_t> dropped;  // recorded ops of ranks outside [0, k) (the check, the halo), in order
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const int r = s.ops[i].rank;
    if (r < 2 * k) of_rank[size_t(r)].push_back(int32_t(i));
    if (r >= k) dropped.push_back(int32_t(i));
  }
  // An op of [0, k)'s place in the compacted schedule: the ops before it, less the dropped ones.
  auto compacted = [&](int32_t i) {
    return i - int32_t(std::lower_bound(dropped.begin(), dropped.end(), i) - dropped.begin());
  };
  auto decode = [&](OpId d) -> OpRef {
    if (Transport::is_dropped(d)) {
      auto [r, i] = t.dropped(d);
      return {r, i};
    }
    return {s.ops[size_t(d)].rank, t.index_in_rank(d)};
  };

  // The check: rank r + K's recorded ops are rank r's, moved by K.
  for (int r = k; r < 2 * k; ++r) {
    const auto& base = of_rank[size_t(r - k)];
    for (int32_t ia : of_rank[size_t(r)]) {
      const Op& a = s.ops[size_t(ia)];
      const int32_t index = t.index_in_rank(ia);
      if (index >= check_ops) break;  // recorded beyond the check only to be named (Transport)
      if (size_t(index) >= base.size()) return std::nullopt;
      const Op& b = s.ops[size_t(base[size_t(index)])];
      if (a.kind != b.kind || a.channel != b.channel || a.bytes != b.bytes || a.step != b.step ||
          a.dep_count != b.dep_count)
        return std::nullopt;
      if (a.kind != OpKind::compute &&
          (!same_ref_shifted(a.dst, b.dst, k, n) || !same_ref_shifted(a.src, b.src, k, n) ||
           (a.kind == OpKind::reduce && !same_ref_shifted(a.src2, b.src2, k, n))))
        return std::nullopt;
      if (a.kind == OpKind::compute) {
        const Compute &ca = s.computes[size_t(a.compute)], &cb = s.computes[size_t(b.compute)];
        if (ca.kind != cb.kind || ca.m != cb.m || ca.k != cb.k || ca.n != cb.n) return std::nullopt;
      }
      for (uint32_t d = 0; d < a.dep_count; ++d) {
        const OpRef da = decode(s.dep_pool[a.dep_begin + d]), db = decode(s.dep_pool[b.dep_begin + d]);
        if (da.rank < 0 || db.rank < 0 || da.index != db.index || da.rank != (db.rank + k) % n) return std::nullopt;
      }
    }
  }

  // The reduced schedule, compacted in place: ranks [0, K), dependencies pointed at representatives.
  // The kept ops' dependencies, routes and computes, read before any op moves (decode reads the ops).
  std::vector<OpId> deps_out;
  deps_out.reserve(s.dep_pool.size());
  std::vector<Compute> computes_out;
  auto pair = [&](int from, int to) {
    if (want_pairs && from != to) red.pairs.emplace_back(from, to);
  };
  for (const Op& op : s.ops) {
    if (op.rank >= k) continue;
    for (uint32_t d = 0; d < op.dep_count; ++d) {
      const OpRef ref = decode(s.dep_pool[op.dep_begin + d]);
      if (ref.rank < 0) return std::nullopt;
      const auto& rep = of_rank[size_t(ref.rank % k)];
      if (size_t(ref.index) >= rep.size()) return std::nullopt;  // ranks differ in op count: not symmetric
      deps_out.push_back(compacted(rep[size_t(ref.index)]));
      red.cross_rank.push_back(ref.rank != op.rank ? 1 : 0);
    }
    if (op.kind == OpKind::compute) computes_out.push_back(s.computes[size_t(op.compute)]);
    // The routes this op's transfers take (as the simulator routes them).
    switch (op.kind) {
      case OpKind::put:
        pair(op.rank, op.dst.rank);
        break;
      case OpKind::get:
        pair(op.src.rank, op.rank);
        break;
      case OpKind::copy:
        pair(op.src.rank, op.dst.rank);
        break;
      case OpKind::reduce:
        pair(op.src.rank, op.rank);
        pair(op.src2.rank, op.rank);
        break;
      case OpKind::compute:
        break;
    }
  }
  // Then the kept ops move down, in order, to their new places.
  size_t w = 0;
  uint32_t dep_begin = 0;
  int32_t compute = 0;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (s.ops[i].rank >= k) continue;
    Op op = s.ops[i];
    op.dep_begin = dep_begin;
    dep_begin += op.dep_count;
    if (op.kind == OpKind::compute) op.compute = compute++;
    s.ops[w++] = op;
  }
  s.ops.resize(w);
  s.dep_pool = std::move(deps_out);
  s.computes = std::move(computes_out);
  s.buffers.clear();
  std::sort(red.pairs.begin(), red.pairs.end());
  red.pairs.erase(std::unique(red.pairs.begin(), red.pairs.end()), red.pairs.end());
  return red;
}

}  // namespace

std::optional<SimResult> run_symmetric(Simulator& sim, const Algorithm& algo, const AlgoArgs& args,
                                       const RunOptions& opt, Schedule* reduced_out, int* period_out,
                                       FoldShift shifts) {
  const int n = args.nranks;
  if (algo.rooted || algo.needs_sparse) return std::nullopt;
  if (algo.needs_shape && !args.shape.valid()) throw_input(algo.name + " needs --shape M,K,N");

  auto run = [&](Reduced& red, const Fold& fold) {
    SimResult result = sim.run_folded(red.schedule, fold, opt, red.cross_rank);
    if (period_out) *period_out = fold.period;
    if (reduced_out) *reduced_out = std::move(red.schedule);
    return result;
  };
  // One server, where the routes of the schedule's transfers allow it (checked by route_fold, which
  // needs no symmetry of the whole graph): on a DGX cluster, 32 times fewer ops than a leaf group. The
  // next server's ops are compared whole (a node of the algorithm wider than a server shows only there,
  // e.g. alltoall.hier with --node-size 16, whose exchanges inside the node start after its first 512 ops).
  const int g = sim.topology().gpus_per_server();
  size_t ops_hint = 0;
  if (shifts == FoldShift::any && g > 0 && n % g == 0 && n / g >= 2 && n == sim.topology().num_gpus()) {
    if (auto red = record_reduced(algo, args, g, Transport::kAllOps, true, 0)) {
      if (auto fold = sim.route_fold(n, g, red->pairs)) return run(*red, *fold);
      // The ranks of a symmetric schedule have as many ops each: what a leaf group's ranks will need.
      const size_t per_rank = red->schedule.ops.size() / size_t(g);
      ops_hint = per_rank + std::min(per_rank, size_t(kSymmetryCheckOps));
    }
  }
  // A leaf group: the topology's rotation.
  const Fold* rotation = sim.rotation_fold(n);
  if (!rotation) return std::nullopt;
  ops_hint *= size_t(rotation->period);
  auto red = record_reduced(algo, args, rotation->period, kSymmetryCheckOps, false, ops_hint);
  if (!red) return std::nullopt;
  return run(*red, *rotation);
}

}  // namespace cclab::sim
