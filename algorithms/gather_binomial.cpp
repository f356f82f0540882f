// Gather up a binomial tree: relative rank v collects the blocks of its subtree (relative ranks
// v .. v + span - 1) in scratch, in relative order, and sends them to its parent in one message.
// The root receives straight into its output at the blocks' absolute places (a subtree that wraps
// past rank n-1 arrives as two messages). Cost ⌈log2 n⌉α + (n-1)/n·Sβ.
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_gather_binomial(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  require_whole_blocks(s);
  const int n = a.nranks, root = a.root;
  const int64_t bb = a.count / n * t.elem_size();  // one block, bytes
  auto rank = [&](int v) { return (v + root) % n; };
  for (int v = 0; v < n; ++v) {
    const int span = lowbit_span(v, n);
    t.set_buffers(rank(v), standard_buffers(s, v > 0 && span > 1 ? span * bb : 0));
  }
  Emitter e(t);
  e.copy(root, in(root), out(root, root * bb), bb);
  for (int v = 1; v < n; ++v)
    if (lowbit_span(v, n) > 1) e.copy(rank(v), in(rank(v)), scratch(rank(v)), bb);
  std::vector<std::vector<OpId>> received(static_cast<size_t>(n));
  for (int k = 0; (1 << k) < n; ++k) {
    e.step(k);
    for (int v = 0; v + (1 << k) < n; v += 2 << k) {
      const int w = v + (1 << k), span = lowbit_span(w, n);
      const Ref src = span > 1 ? scratch(rank(w)) : in(rank(w));
      const std::vector<OpId>& deps = received[size_t(w)];
      std::vector<OpId>& got = received[size_t(v)];
      if (v > 0) {
        got.push_back(e.put(rank(w), src, scratch(rank(v), (w - v) * bb), span * bb, deps));
        continue;
      }
      // Into the root's output: blocks of absolute ranks rank(w) .., split where they wrap past n - 1.
      const int first = rank(w), head = std::min(span, n - first);
      got.push_back(e.put(rank(w), src, out(root, first * bb), head * bb, deps));
      if (head < span) got.push_back(e.put(rank(w), src + head * bb, out(root, 0), (span - head) * bb, deps));
    }
  }
}

}  // namespace cclab::classic
