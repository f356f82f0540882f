// All-to-all, pairwise: at step s (1 .. n-1) rank r sends its block for rank (r + s) mod n, so at
// every step each rank sends one block and receives one (no rank is a hot spot). Each rank sends
// n - 1 messages of S/n bytes: (n-1)(α + Sβ/n).
// In place, a block cannot land where it goes (the receiver may not have sent that block yet): it
// lands in the receiver's scratch, and the receiver copies it over once it has sent its own.
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_alltoall_direct(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  require_whole_blocks(s);
  const int n = a.nranks;
  const int64_t bb = a.count / n * t.elem_size();
  t.set_all_buffers(standard_buffers(s, a.in_place && n > 1 ? a.count * t.elem_size() : 0));
  Emitter e(t);
  for (int r = 0; r < n; ++r) e.copy(r, in(r, r * bb), out(r, r * bb), bb);
  std::vector<OpId> sent(size_t(n) * size_t(n), kNoOp);  // sent[from * n + to]
  for (int step = 1; step < n; ++step) {
    e.step(step);
    for (int r = 0; r < n; ++r) {
      const int d = (r + step) % n;
      const Ref dst = a.in_place ? scratch(d, r * bb) : out(d, r * bb);
      sent[size_t(r) * n + d] = e.put(r, in(r, d * bb), dst, bb);
    }
  }
  if (!a.in_place) return;
  e.step(n);
  for (int d = 0; d < n; ++d)
    for (int r = 0; r < n; ++r)
      if (r != d) e.copy(d, scratch(d, r * bb), out(d, r * bb), bb, {sent[size_t(r) * n + d], sent[size_t(d) * n + r]});
}

}  // namespace cclab::classic
