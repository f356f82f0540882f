#include "sim/symmetric.hpp"

#include <vector>

#include "core/error.hpp"

namespace cclab::sim {

namespace {

struct OpRef {
  int rank;
  int32_t index;
};

// a belongs to the op of rank r + K, b to rank r's: a's rank must be b's moved by K. Offsets and buffers
// may differ (a ring works on a different block at each rank); they do not change what an op costs.
bool same_ref_shifted(const Ref& a, const Ref& b, int k, int n) { return a.rank == (b.rank + k) % n; }

}  // namespace

std::optional<SimResult> run_symmetric(Simulator& sim, const Algorithm& algo, const AlgoArgs& args,
                                       const RunOptions& opt, Schedule* reduced_out) {
  const int n = args.nranks;
  const int k = sim.fold_period(n);
  if (k <= 0 || algo.rooted || algo.needs_sparse) return std::nullopt;

  // 1. Record ranks [0, K) fully and the first ops of ranks [K, 2K) for the check.
  if (algo.needs_shape && !args.shape.valid()) throw_input(algo.name + " needs --shape M,K,N");
  Schedule s;
  s.algo = algo.name;
  s.collective = algo.collective;
  s.nranks = n;
  s.count = args.count;
  s.dtype = args.dtype;
  s.redop = args.redop;
  s.root = args.root;
  s.in_place = args.in_place;
  s.buffers.assign(size_t(n), BufferSizes{});
  Transport t(s);
  t.set_keep_filter([k](int rank, int32_t index) { return rank < k || (rank < 2 * k && index < kSymmetryCheckOps); });
  algo.build(args, t);

  // Per-rank lists of recorded ops, and each recorded op's index in its rank.
  std::vector<std::vector<int32_t>> of_rank(size_t(2 * k));
  std::vector<int32_t> index(s.ops.size());
  for (size_t i = 0; i < s.ops.size(); ++i) {
    auto& l = of_rank[size_t(s.ops[i].rank)];
    index[i] = int32_t(l.size());
    l.push_back(int32_t(i));
  }
  auto decode = [&](OpId d) -> OpRef {
    if (Transport::is_dropped(d)) {
      auto [r, i] = t.dropped(d);
      return {r, i};
    }
    return {s.ops[size_t(d)].rank, index[size_t(d)]};
  };

  // 2. The check: rank r + K's recorded ops are rank r's, moved by K.
  for (int r = k; r < 2 * k; ++r) {
    const auto& mine = of_rank[size_t(r)];
    const auto& base = of_rank[size_t(r - k)];
    if (mine.size() > base.size()) return std::nullopt;
    for (size_t j = 0; j < mine.size(); ++j) {
      const Op& a = s.ops[size_t(mine[j])];
      const Op& b = s.ops[size_t(base[j])];
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
        if (da.index != db.index || da.rank != (db.rank + k) % n) return std::nullopt;
      }
    }
  }

  // 3. The reduced schedule, compacted in place: ranks [0, K), dependencies pointed at representatives.
  std::vector<int32_t> new_id(s.ops.size(), -1);
  {
    int32_t w = 0;
    for (size_t i = 0; i < s.ops.size(); ++i)
      if (s.ops[i].rank < k) new_id[i] = w++;
  }
  std::vector<OpId> deps_out;
  deps_out.reserve(s.dep_pool.size());
  std::vector<Compute> computes_out;
  size_t w = 0;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    Op op = s.ops[i];
    if (op.rank >= k) continue;
    const uint32_t begin = uint32_t(deps_out.size());
    for (uint32_t d = 0; d < op.dep_count; ++d) {
      const OpRef ref = decode(s.dep_pool[op.dep_begin + d]);
      const auto& rep = of_rank[size_t(ref.rank % k)];
      if (size_t(ref.index) >= rep.size()) return std::nullopt;  // ranks differ in op count: not symmetric
      deps_out.push_back(new_id[size_t(rep[size_t(ref.index)])]);
    }
    op.dep_begin = begin;
    if (op.kind == OpKind::compute) {
      computes_out.push_back(s.computes[size_t(op.compute)]);
      op.compute = int32_t(computes_out.size() - 1);
    }
    s.ops[w++] = op;
  }
  s.ops.resize(w);
  s.dep_pool = std::move(deps_out);
  s.computes = std::move(computes_out);
  s.buffers.clear();
  Schedule& red = s;

  SimResult result = sim.run_folded(red, opt);
  if (reduced_out) *reduced_out = std::move(red);
  return result;
}

}  // namespace cclab::sim
