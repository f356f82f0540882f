// Reduce up a binomial tree: in round k, relative rank v (a multiple of 2^(k+1)) adds the partial
// result of its child v + 2^k, reading it from the child's memory (a reduce with a remote source:
// a peer load on NVLink, a flow child -> parent in the simulator). A rank's partial lives in its
// scratch (the root accumulates in its output), so no input is modified. ⌈log2 n⌉(α + Sβ) plus the
// reductions.
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_reduce_binomial(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  const int n = a.nranks, root = a.root;
  const int64_t bytes = a.count * t.elem_size();
  auto rank = [&](int v) { return (v + root) % n; };
  auto has_children = [&](int v) { return v + 1 < n && (v == 0 || v % 2 == 0); };
  for (int v = 0; v < n; ++v) t.set_buffers(rank(v), standard_buffers(s, v > 0 && has_children(v) ? bytes : 0));
  auto acc = [&](int v) { return v == 0 ? out(root) : scratch(rank(v)); };
  Emitter e(t);
  if (n == 1) {
    e.copy(root, in(root), out(root), bytes);
    return;
  }
  std::vector<OpId> done(size_t(n), kNoOp);  // the last reduce of relative rank v
  std::vector<bool> started(size_t(n), false);
  for (int k = 0; (1 << k) < n; ++k) {
    e.step(k);
    for (int v = 0; v + (1 << k) < n; v += 2 << k) {
      const int w = v + (1 << k);
      const Ref child = has_children(w) ? acc(w) : in(rank(w));
      const Ref mine = started[size_t(v)] ? acc(v) : in(rank(v));
      done[size_t(v)] = e.reduce(rank(v), mine, child, acc(v), bytes, {done[size_t(w)]});
      started[size_t(v)] = true;
    }
  }
}

}  // namespace cclab::classic
