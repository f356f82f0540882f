// Direct scatter: the root puts each rank's block straight into that rank's output. n - 1 messages
// leave the root: (n-1)α + (n-1)/n·Sβ when the root's link is the bottleneck.
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_scatter_direct(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  require_whole_blocks(s);
  t.set_all_buffers(standard_buffers(s));
  const int n = a.nranks, root = a.root;
  const int64_t bb = a.count / n * t.elem_size();
  Emitter e(t);
  e.copy(root, in(root, root * bb), out(root), bb);
  for (int r = 0; r < n; ++r)
    if (r != root) e.put(root, in(root, r * bb), out(r), bb);
}

}  // namespace cclab::classic
