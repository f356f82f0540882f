// Broadcast for large messages (van de Geijn): the root scatters the message in n pieces down a
// binomial tree (relative rank v receives the pieces of its subtree), then a ring all-gather
// completes every rank. A rank never receives a piece it already holds: the ring skips pieces that
// the scatter delivered and never sends to the root, so every non-root rank receives exactly S bytes.
// Cost about ⌈log2 n⌉α + (n-1)/n·Sβ (scatter) + (n-1)(α + Sβ/n) (all-gather).
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_broadcast_scatter_allgather(const AlgoArgs& a, Transport& t) {
  t.set_all_buffers(standard_buffers(t.schedule()));
  const int n = a.nranks, root = a.root;
  const int64_t es = t.elem_size();
  auto rank = [&](int v) { return (v + root) % n; };
  auto off = [&](int p) { return (p == n ? a.count : split(a.count, n, p).offset) * es; };  // piece p, in bytes
  auto in_subtree = [&](int p, int v) { return p >= v && p < v + lowbit_span(v, n); };
  // Where relative rank v reads piece p from: the root from its input, the others from their output.
  auto src = [&](int v, int p) { return v == 0 ? in(root, off(p)) : out(rank(v), off(p)); };
  Emitter e(t);
  e.copy(root, in(root), out(root), a.count * es, {}, kRootCopyChannel);

  // Scatter: relative v sends the pieces of child w = v + m's subtree, largest subtrees first.
  std::vector<OpId> scattered(size_t(n), kNoOp);
  int top = 1;
  while (top * 2 < n) top *= 2;
  int step = 0;
  for (int m = top; m >= 1 && n > 1; m /= 2, ++step) {
    e.step(step);
    for (int v = 0; v + m < n; v += 2 * m) {
      const int w = v + m, end = w + lowbit_span(w, n);
      scattered[size_t(w)] = e.put(rank(v), src(v, w), out(rank(w), off(w)), off(end) - off(w), {scattered[size_t(v)]});
    }
  }
  // Ring all-gather among relative ranks: at step s, v passes piece (v - s) mod n on to v + 1.
  std::vector<OpId> prev(size_t(n), kNoOp), now(size_t(n), kNoOp);
  for (int s = 0; s + 1 < n; ++s) {
    e.step(step + s);
    for (int v = 0; v + 1 < n; ++v) {
      const int p = mod(v - s, n);
      now[size_t(v)] = kNoOp;
      if (in_subtree(p, v + 1)) continue;  // v + 1 got this piece from the scatter
      const OpId had = v == 0 ? kNoOp : in_subtree(p, v) ? scattered[size_t(v)] : prev[size_t(v - 1)];
      now[size_t(v)] = e.put(rank(v), src(v, p), out(rank(v + 1), off(p)), off(p + 1) - off(p), {had});
    }
    std::swap(prev, now);
  }
}

}  // namespace cclab::classic
