// Broadcast down a binomial tree: in round k every rank that already has the message (relative
// ranks below 2^k) sends it whole to relative rank v + 2^k. ⌈log2 n⌉ rounds: cost ⌈log2 n⌉(α + Sβ).
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_broadcast_binomial(const AlgoArgs& a, Transport& t) {
  t.set_all_buffers(standard_buffers(t.schedule()));
  const int n = a.nranks, root = a.root;
  const int64_t bytes = a.count * t.elem_size();
  auto rank = [&](int v) { return (v + root) % n; };
  Emitter e(t);
  e.copy(root, in(root), out(root), bytes, {}, kRootCopyChannel);  // the root's own output (dropped in place)
  std::vector<OpId> have(size_t(n), kNoOp);  // the put that delivered the message to relative rank v
  for (int k = 0; (1 << k) < n; ++k) {
    e.step(k);
    for (int v = 0; v < (1 << k) && v + (1 << k) < n; ++v) {
      const int w = v + (1 << k);
      const Ref src = v == 0 ? in(root) : out(rank(v));
      have[size_t(w)] = e.put(rank(v), src, out(rank(w)), bytes, {have[size_t(v)]});
    }
  }
}

}  // namespace cclab::classic
