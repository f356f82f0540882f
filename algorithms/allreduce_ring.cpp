// All-reduce on a ring: a reduce-scatter (n - 1 steps) leaves rank r with the full reduction of block
// r, then an all-gather (n - 1 more steps) circulates the reduced blocks. Every rank sends 2(n - 1)
// messages of about S/n bytes: cost 2(n-1)(α + Sβ/n).
//
// Blocks need not be equal: count is cut into n nearly equal blocks (and, with several channels,
// first into one part per channel, each running its own ring). Partial sums land in two scratch
// slots per channel used alternately; a sender waits until the receiver has forwarded what it last
// received in that slot (write-after-read).
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_allreduce_ring(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  const int n = a.nranks, channels = std::clamp(a.channels, 1, kMaxChannels);
  const int64_t es = t.elem_size();
  std::vector<int64_t> slot_base(size_t(channels) + 1, 0);
  for (int c = 0; c < channels; ++c) {
    const int64_t largest_block = split(split(a.count, channels, c).count, n, 0).count;
    slot_base[size_t(c) + 1] = slot_base[size_t(c)] + 2 * largest_block * es;
  }
  t.set_all_buffers(standard_buffers(s, n > 1 ? slot_base[size_t(channels)] : 0));
  Emitter e(t);
  // An iteration for rank r emits ops of r and r + 1 and waits on ops of r - 1 and r + 1 (reach 1): a
  // folded simulation records a few ranks without visiting all n of them every step.
  const std::vector<int> ranks = t.loop_ranks(1);
  for (int c = 0; c < channels; ++c) {
    const Block part = split(a.count, channels, c);
    const int64_t slot_bytes = split(part.count, n, 0).count * es;
    auto blk = [&](int j) { return sub(part, n, j); };
    auto slot = [&](int r, int step) { return scratch(r, slot_base[size_t(c)] + (step % 2) * slot_bytes); };
    if (n == 1) {
      e.copy(0, in(0, part.offset * es), out(0, part.offset * es), part.count * es, {}, c);
      continue;
    }
    // Reduce-scatter: at step s rank r sends its partial of block (r - s - 1) mod n to r + 1.
    std::vector<OpId> prev(size_t(n), kNoOp), now(size_t(n), kNoOp);
    for (int step = 0; step < n - 1; ++step) {
      e.step(step);
      for (int r : ranks) {
        const Block b = blk(mod(r - step - 1, n));
        const int next = (r + 1) % n;
        const Ref src = step == 0 ? in(r, b.offset * es) : slot(r, step - 1);
        now[size_t(r)] = e.put(r, src, slot(next, step), b.count * es, {step >= 2 ? prev[size_t(next)] : kNoOp}, c);
      }
      for (int r : ranks) {
        const Block b = blk(mod(r - step - 1, n));
        const int next = (r + 1) % n;
        const Ref dst = step == n - 2 ? out(next, b.offset * es) : slot(next, step);
        e.reduce(next, in(next, b.offset * es), slot(next, step), dst, b.count * es, {now[size_t(r)]}, c);
      }
      std::swap(prev, now);
    }
    // All-gather: rank r now owns block r; at step s it forwards block (r - s) mod n to r + 1.
    std::fill(prev.begin(), prev.end(), kNoOp);
    for (int step = 0; step < n - 1; ++step) {
      e.step(n - 1 + step);
      for (int r : ranks) {
        const Block b = blk(mod(r - step, n));
        now[size_t(r)] = e.put(r, out(r, b.offset * es), out((r + 1) % n, b.offset * es), b.count * es,
                               {prev[size_t(mod(r - 1, n))]}, c);
      }
      std::swap(prev, now);
    }
  }
}

}  // namespace cclab::classic
