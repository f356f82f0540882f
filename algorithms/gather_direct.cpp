// Direct gather: every rank puts its block straight into the root's output. n - 1 messages arrive
// at the root: (n-1)α + (n-1)/n·Sβ when the root's link is the bottleneck.
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_gather_direct(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  require_whole_blocks(s);
  t.set_all_buffers(standard_buffers(s));
  const int n = a.nranks, root = a.root;
  const int64_t bb = a.count / n * t.elem_size();
  Emitter e(t);
  e.copy(root, in(root), out(root, root * bb), bb);
  for (int r = 0; r < n; ++r)
    if (r != root) e.put(r, in(r), out(root, r * bb), bb);
}

}  // namespace cclab::classic
