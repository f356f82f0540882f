// All-reduce by recursive halving then recursive doubling (Rabenseifner), for power-of-two n.
// Halving: in step k rank r exchanges with r XOR n/2^(k+1): it sends the half of its current range
// that the partner keeps and adds the partner's half into its own; after log2 n steps rank r holds
// the reduction of block r. Doubling retraces the steps, each rank sending everything it holds.
// Each rank sends 2·log2 n messages, 2(n-1)/n·S bytes: 2 log2 n·α + 2(n-1)/n·Sβ.
// Received halves land in scratch at their own offsets; a rank writes there only after the partner
// reduced what it last received (the write-after-read dependency).
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_allreduce_rhd(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  require_power_of_two(s);
  const int n = a.nranks;
  const int64_t es = t.elem_size();
  t.set_all_buffers(standard_buffers(s, n > 1 ? a.count * es : 0));
  Emitter e(t);
  if (n == 1) {
    e.copy(0, in(0), out(0), a.count * es);
    return;
  }
  int steps = 0;
  while ((1 << steps) < n) ++steps;
  auto off = [&](int blk) { return (blk == n ? a.count : split(a.count, n, blk).offset) * es; };
  struct Range {
    int lo, hi;  // blocks [lo, hi)
  };
  // kept[k][r]: the blocks rank r is responsible for after halving step k.
  std::vector<std::vector<Range>> kept(static_cast<size_t>(steps), std::vector<Range>(static_cast<size_t>(n)));
  std::vector<Range> cur(size_t(n), Range{0, n});
  std::vector<OpId> reduced(size_t(n), kNoOp);
  for (int k = 0; k < steps; ++k) {
    e.step(k);
    const int d = n >> (k + 1);
    std::vector<Range> give(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      const Range c = cur[size_t(r)];
      const int mid = (c.lo + c.hi) / 2;
      const bool low = (r & d) == 0;
      kept[size_t(k)][size_t(r)] = low ? Range{c.lo, mid} : Range{mid, c.hi};
      give[size_t(r)] = low ? Range{mid, c.hi} : Range{c.lo, mid};
    }
    std::vector<OpId> sent(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      const int p = r ^ d;
      const Range g = give[size_t(r)];
      const Ref src = k == 0 ? in(r, off(g.lo)) : out(r, off(g.lo));
      sent[size_t(p)] = e.put(r, src, scratch(p, off(g.lo)), off(g.hi) - off(g.lo), {reduced[size_t(p)]});
    }
    for (int r = 0; r < n; ++r) {
      const Range m = kept[size_t(k)][size_t(r)];
      const Ref mine = k == 0 ? in(r, off(m.lo)) : out(r, off(m.lo));
      reduced[size_t(r)] =
          e.reduce(r, mine, scratch(r, off(m.lo)), out(r, off(m.lo)), off(m.hi) - off(m.lo), {sent[size_t(r)]});
      cur[size_t(r)] = m;
    }
  }
  // Doubling: undo the halving steps; before step k's exchange rank r holds kept[k][r].
  std::vector<std::vector<OpId>> received(static_cast<size_t>(n));
  for (int k = steps - 1; k >= 0; --k) {
    e.step(steps + (steps - 1 - k));
    const int d = n >> (k + 1);
    std::vector<OpId> sent(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      const Range m = kept[size_t(k)][size_t(r)];
      sent[size_t(r ^ d)] =
          e.put(r, out(r, off(m.lo)), out(r ^ d, off(m.lo)), off(m.hi) - off(m.lo), received[size_t(r)]);
    }
    for (int r = 0; r < n; ++r) received[size_t(r)].push_back(sent[size_t(r)]);
  }
}

}  // namespace cclab::classic
