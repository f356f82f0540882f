#include "algorithms/adv_alltoall_hier.hpp"

#include <vector>

#include "algorithms/adv_common.hpp"

namespace cclab {

// Every op of a rank runs on channel 0, so each phase's ops follow the previous phase's in emission
// order; only the waits on other ranks are explicit dependencies.
void build_alltoall_hier(const AlgoArgs& args, Transport& t) {
  const adv::NodeLayout nl = adv::node_layout(args, "alltoall.hier");
  adv::require_whole_blocks(args, "alltoall.hier");
  const int p = nl.nranks, G = nl.size, N = nl.nodes;
  const int64_t e = t.elem_size();
  const int64_t B = args.count / p * e;  // bytes per block
  t.set_all_buffers({.input = args.count * e, .output = args.count * e, .scratch = 2 * p * B});
  if (B == 0) return;
  const int64_t Y = p * B;  // scratch offset of the intra-node receive area
  // An iteration for rank r emits r's ops and waits on ops of its node (reach G); in place, the
  // inter-node puts also wait on every peer's reads (reach: all ranks). A folded simulation then records
  // a few nodes without visiting every rank.
  const std::vector<int> ranks = t.loop_ranks(args.in_place ? p : G);

  // 1. Layout transform on every rank: X[m][b] = input[b*G + m].
  std::vector<OpId> input_read(p, kNoOp);  // the last op of rank r that reads its input
  t.set_step(0);
  for (int r : ranks)
    for (int m = 0; m < G; ++m)
      for (int b = 0; b < N; ++b)
        input_read[r] = t.copy(r, in(r, int64_t(nl.rank(b, m)) * B), scratch(r, (int64_t(m) * N + b) * B), B);

  // 2. Intra-node all-to-all: (a, l) sends X[m][*] to (a, m), landing in Y[l][*]. Each rank starts
  // with its own block, then the next local rank, so no rank is every sender's first target.
  std::vector<std::vector<OpId>> arrivals(p);  // the puts that fill rank r's Y area
  t.set_step(1);
  for (int r : ranks) {
    const int a = nl.node(r), l = nl.local(r);
    for (int j = 0; j < G; ++j) {
      const int m = (l + j) % G, dst = nl.rank(a, m);
      const Ref src = scratch(r, int64_t(m) * N * B), to = scratch(dst, Y + int64_t(l) * N * B);
      arrivals[dst].push_back(dst == r ? t.copy(r, src, to, N * B) : t.put(r, src, to, N * B));
    }
  }

  // 3. Layout transform, once every block has arrived: X[b][l] = Y[l][b]. X is free again: this
  // rank's step-2 sends, which read it, come earlier on the channel.
  t.set_step(2);
  for (int r : ranks)
    for (int b = 0; b < N; ++b)
      for (int l = 0; l < G; ++l)
        t.copy(r, scratch(r, Y + (int64_t(l) * N + b) * B), scratch(r, (int64_t(b) * G + l) * B), B,
               b == 0 && l == 0 ? Transport::Deps(arrivals[r]) : Transport::Deps());

  // 4. Inter-node all-to-all among ranks with the same local index, starting with the own node (a
  // local copy) and walking round. In place, the output is the input: a put into (b, m) waits until
  // (b, m) has read its input in step 1.
  t.set_step(3);
  for (int r : ranks) {
    const int a = nl.node(r), m = nl.local(r);
    for (int j = 0; j < N; ++j) {
      const int b = (a + j) % N, dst = nl.rank(b, m);
      const Ref src = scratch(r, int64_t(b) * G * B), to = out(dst, int64_t(a) * G * B);
      if (dst == r)
        t.copy(r, src, to, G * B);
      else
        t.put(r, src, to, G * B, {args.in_place ? input_read[dst] : kNoOp});
    }
  }
}

}  // namespace cclab
