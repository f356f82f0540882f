// Bruck's all-to-all for small blocks: ⌈log2 n⌉ messages per rank instead of n - 1, each carrying
// about n/2 blocks. Rank r first rotates its blocks (slot i holds the block for rank r + i); in round
// k it sends every slot whose index has bit k set to rank r + 2^k (packed into one message) and
// receives the same slots from rank r - 2^k; finally slot i holds the block from rank r - i.
// Cost ⌈log2 n⌉(α + Sβ/2), better than the direct one when α dominates.
// Scratch: n slots, then a send pack and a receive pack of up to ⌈n/2⌉ blocks.
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_alltoall_bruck(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  require_whole_blocks(s);
  const int n = a.nranks;
  const int64_t bb = a.count / n * t.elem_size();
  const int64_t pack = (n + 1) / 2;  // the most slots with one bit set
  const int64_t send_base = n * bb, recv_base = send_base + pack * bb;
  t.set_all_buffers(standard_buffers(s, n > 1 ? recv_base + pack * bb : 0));
  Emitter e(t);
  if (n == 1) {
    e.copy(0, in(0), out(0), bb);
    return;
  }
  auto slot = [&](int r, int i) { return scratch(r, i * bb); };
  e.step(0);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < n; ++i) e.copy(r, in(r, ((r + i) % n) * bb), slot(r, i), bb);
  std::vector<OpId> unpacked(size_t(n), kNoOp);  // the last unpack of each rank (its receive pack is free)
  int round = 0;
  for (int dist = 1; dist < n; dist *= 2, ++round) {
    e.step(1 + round);
    std::vector<int> slots;
    for (int i = 0; i < n; ++i)
      if (i & dist) slots.push_back(i);
    const int64_t bytes = int64_t(slots.size()) * bb;
    std::vector<OpId> sent(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      for (size_t j = 0; j < slots.size(); ++j)
        e.copy(r, slot(r, slots[j]), scratch(r, send_base + int64_t(j) * bb), bb);
      const int to = (r + dist) % n;
      sent[size_t(to)] = e.put(r, scratch(r, send_base), scratch(to, recv_base), bytes, {unpacked[size_t(to)]});
    }
    for (int r = 0; r < n; ++r)
      for (size_t j = 0; j < slots.size(); ++j)
        unpacked[size_t(r)] =
            e.copy(r, scratch(r, recv_base + int64_t(j) * bb), slot(r, slots[j]), bb, {sent[size_t(r)]});
  }
  e.step(1 + round);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < n; ++i) e.copy(r, slot(r, i), out(r, mod(r - i, n) * bb), bb);
}

}  // namespace cclab::classic
