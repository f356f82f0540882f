// Reduce-scatter on a ring: at step s rank r sends its partial sum of block (r - s - 1) mod n to
// rank r + 1, which adds its own input block and passes it on; after n - 1 steps rank r holds the
// full reduction of block r. Cost (n-1)(α + Sβ/n) with S the input size.
// Partials land in two scratch slots per channel used alternately; a sender waits until the
// receiver forwarded what it last received in that slot (the write-after-read dependency).
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_reducescatter_ring(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  require_whole_blocks(s);
  const int n = a.nranks, channels = std::clamp(a.channels, 1, kMaxChannels);
  const int64_t es = t.elem_size(), block = a.count / n;
  // Channel c owns part c of every block, and two slots of that part's size in scratch.
  std::vector<int64_t> slot_base(size_t(channels) + 1, 0);
  for (int c = 0; c < channels; ++c)
    slot_base[size_t(c) + 1] = slot_base[size_t(c)] + 2 * split(block, channels, c).count * es;
  t.set_all_buffers(standard_buffers(s, n > 1 ? slot_base[size_t(channels)] : 0));
  Emitter e(t);
  for (int c = 0; c < channels; ++c) {
    const Block part = split(block, channels, c);
    const int64_t bytes = part.count * es;
    auto at = [&](int blk) { return (blk * block + part.offset) * es; };
    auto slot = [&](int r, int step) { return scratch(r, slot_base[size_t(c)] + (step % 2) * bytes); };
    if (n == 1) {
      e.copy(0, in(0, at(0)), out(0, part.offset * es), bytes, {}, c);
      continue;
    }
    std::vector<OpId> prev(size_t(n), kNoOp), now(static_cast<size_t>(n));
    for (int step = 0; step < n - 1; ++step) {
      e.step(step);
      for (int r = 0; r < n; ++r) {
        const int blk = mod(r - step - 1, n), next = (r + 1) % n;
        const Ref src = step == 0 ? in(r, at(blk)) : slot(r, step - 1);
        // Slot step%2 of `next` was last read when `next` forwarded it at the previous step.
        now[size_t(r)] = e.put(r, src, slot(next, step), bytes, {step >= 2 ? prev[size_t(next)] : kNoOp}, c);
      }
      for (int r = 0; r < n; ++r) {
        const int blk = mod(r - step - 1, n), next = (r + 1) % n;
        const Ref dst = step == n - 2 ? out(next, part.offset * es) : slot(next, step);
        e.reduce(next, in(next, at(blk)), slot(next, step), dst, bytes, {now[size_t(r)]}, c);
      }
      std::swap(prev, now);
    }
  }
}

}  // namespace cclab::classic
