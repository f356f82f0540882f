// All-gather on a ring: at step s rank r forwards block (r - s) mod n to rank r + 1, so after n - 1
// steps every rank holds every block. Cost (n-1)(α + Sβ/n) with S the output size.
// Channels split every block into `channels` parts, each travelling its own ring.
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_allgather_ring(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  require_whole_blocks(s);
  t.set_all_buffers(standard_buffers(s));
  const int n = a.nranks, channels = std::clamp(a.channels, 1, kMaxChannels);
  const int64_t es = t.elem_size(), block = a.count / n;
  Emitter e(t);
  for (int c = 0; c < channels; ++c) {
    const Block part = split(block, channels, c);  // this channel's share of every block
    const int64_t bytes = part.count * es;
    auto at = [&](int blk) { return (blk * block + part.offset) * es; };
    e.step(0);
    // Each rank's own block: in place it is already there (the copy is dropped).
    for (int r = 0; r < n; ++r) e.copy(r, in(r, part.offset * es), out(r, at(r)), bytes, {}, c);
    std::vector<OpId> prev(size_t(n), kNoOp), now(static_cast<size_t>(n));
    for (int step = 0; step < n - 1; ++step) {
      e.step(step);
      for (int r = 0; r < n; ++r) {
        const int blk = mod(r - step, n);
        // The block arrived from rank r - 1 at the previous step (at step 0 it is r's own).
        now[size_t(r)] = e.put(r, out(r, at(blk)), out((r + 1) % n, at(blk)), bytes, {prev[size_t(mod(r - 1, n))]}, c);
      }
      std::swap(prev, now);
    }
  }
}

}  // namespace cclab::classic
