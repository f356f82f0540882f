// Pipelined chain broadcast: the message is cut into C chunks that flow root -> root+1 -> ... ->
// root-1; rank v forwards chunk i as soon as it arrived, while chunk i+1 is on its way to it.
// Cost (n - 2 + C)(α + Sβ/C). C comes from AlgoArgs::chunk_bytes (default kDefaultChunkBytes).
// With several channels, chunk i travels on channel i mod channels: a backend with a lane or stream per
// channel overlaps one chunk's synchronisation with the next chunk's copy.
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_broadcast_pipeline(const AlgoArgs& a, Transport& t) {
  t.set_all_buffers(standard_buffers(t.schedule()));
  const int n = a.nranks, root = a.root, channels = std::clamp(a.channels, 1, kMaxChannels);
  auto channel_of = [&](int64_t i) {  // channel 0, then the ones after the root's copy
    const int k = int(i % channels);
    return k == 0 ? 0 : kRootCopyChannel + k;
  };
  const int64_t es = t.elem_size(), chunks = chunk_count(a.count, t.elem_size(), a.chunk_bytes);
  auto rank = [&](int v) { return (v + root) % n; };
  Emitter e(t);
  e.copy(root, in(root), out(root), a.count * es, {}, kRootCopyChannel);
  for (int64_t i = 0; i < chunks; ++i) {
    const Block c = split(a.count, chunks, i);
    const int64_t off = c.offset * es, bytes = c.count * es;
    OpId arrived = kNoOp;
    for (int v = 0; v + 1 < n; ++v) {
      e.step(int(i) + v);  // the pipeline slot in which this hop runs
      const Ref src = v == 0 ? in(root, off) : out(rank(v), off);
      arrived = e.put(rank(v), src, out(rank(v + 1), off), bytes, {arrived}, channel_of(i));
    }
  }
}

}  // namespace cclab::classic
