// Pipelined chain reduce ending at the root (how NCCL's ring reduce moves data): chunk i starts at
// rank root+1, each following rank adds its input to the partial it reads from its predecessor, and
// the root adds the last partial into its output. Cost (n - 2 + C)(α + Sβ/C) plus the reductions.
#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

void build_reduce_chain(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  const int n = a.nranks, root = a.root;
  const int64_t es = t.elem_size(), bytes = a.count * es;
  const int64_t chunks = chunk_count(a.count, t.elem_size(), a.chunk_bytes);
  // Chain position v = 1 .. n-1 then the root (v = n): rank (root + v) mod n.
  auto rank = [&](int v) { return (root + v) % n; };
  for (int v = 1; v <= n; ++v) t.set_buffers(rank(v), standard_buffers(s, v >= 2 && v < n ? bytes : 0));
  Emitter e(t);
  if (n == 1) {
    e.copy(root, in(root), out(root), bytes);
    return;
  }
  for (int64_t i = 0; i < chunks; ++i) {
    const Block c = split(a.count, chunks, i);
    const int64_t off = c.offset * es;
    OpId prev = kNoOp;
    for (int v = 2; v <= n; ++v) {
      e.step(int(i) + v - 2);
      const Ref partial = v == 2 ? in(rank(1), off) : scratch(rank(v - 1), off);
      const Ref dst = v == n ? out(root, off) : scratch(rank(v), off);
      prev = e.reduce(rank(v), in(rank(v), off), partial, dst, c.count * es, {prev});
    }
  }
}

}  // namespace cclab::classic
