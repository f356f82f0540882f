// Direct reduce: the root adds every other rank's input to its own, one peer after the other,
// reading each peer's input in place (a reduce with a remote source). n - 1 messages arrive at the
// root: (n-1)(α + Sβ) when they cannot overlap.
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_reduce_direct(const AlgoArgs& a, Transport& t) {
  t.set_all_buffers(standard_buffers(t.schedule()));
  const int n = a.nranks, root = a.root;
  const int64_t bytes = a.count * t.elem_size();
  Emitter e(t);
  if (n == 1) {
    e.copy(root, in(root), out(root), bytes);
    return;
  }
  for (int v = 1; v < n; ++v) {
    e.step(v - 1);
    e.reduce(root, v == 1 ? in(root) : out(root), in((root + v) % n), out(root), bytes);
  }
}

}  // namespace cclab::classic
