// Scatter down a binomial tree: the root sends each child the blocks of the child's subtree in one
// message (two when the subtree's absolute ranks wrap past n - 1); an inner rank stages its subtree's
// blocks in scratch, keeps its own and forwards the rest. Cost ⌈log2 n⌉α + (n-1)/n·Sβ.
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_scatter_binomial(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  require_whole_blocks(s);
  const int n = a.nranks, root = a.root;
  const int64_t bb = a.count / n * t.elem_size();
  auto rank = [&](int v) { return (v + root) % n; };
  for (int v = 0; v < n; ++v) {
    const int span = lowbit_span(v, n);
    t.set_buffers(rank(v), standard_buffers(s, v > 0 && span > 1 ? span * bb : 0));
  }
  // Where relative rank w receives its subtree: scratch when it forwards, its output when a leaf.
  auto landing = [&](int w) { return lowbit_span(w, n) > 1 ? scratch(rank(w)) : out(rank(w)); };
  Emitter e(t);
  e.copy(root, in(root, root * bb), out(root), bb);
  std::vector<std::vector<OpId>> received(static_cast<size_t>(n));
  int top = 1;
  while (top * 2 < n) top *= 2;
  int step = 0;
  for (int m = top; m >= 1 && n > 1; m /= 2, ++step) {
    e.step(step);
    for (int v = 0; v + m < n; v += 2 * m) {
      const int w = v + m, span = lowbit_span(w, n);
      std::vector<OpId>& got = received[size_t(w)];
      if (v > 0) {
        got.push_back(e.put(rank(v), scratch(rank(v), (w - v) * bb), landing(w), span * bb, received[size_t(v)]));
        continue;
      }
      const int first = rank(w), head = std::min(span, n - first);
      got.push_back(e.put(root, in(root, first * bb), landing(w), head * bb));
      if (head < span) got.push_back(e.put(root, in(root), landing(w) + head * bb, (span - head) * bb));
    }
  }
  // Inner ranks keep the first block of what they staged.
  for (int v = 1; v < n; ++v)
    if (lowbit_span(v, n) > 1) e.copy(rank(v), scratch(rank(v)), out(rank(v)), bb, received[size_t(v)]);
}

}  // namespace cclab::classic
