#include "algorithms/adv_reducescatter_hier.hpp"

#include <vector>

#include "algorithms/adv_common.hpp"

namespace cclab {

namespace {
constexpr int kIntraPut = 0, kIntraReduce = 1, kNetPut = 2, kFinalReduce = 3;  // channels
}  // namespace

void build_reducescatter_hier(const AlgoArgs& args, Transport& t) {
  const adv::NodeLayout nl = adv::node_layout(args, "reducescatter.hier");
  adv::require_whole_blocks(args, "reducescatter.hier");
  const int p = nl.nranks, G = nl.size, N = nl.nodes;
  const int64_t e = t.elem_size();
  const int64_t R = args.count / p * e;  // bytes of each rank's result chunk
  // Scratch areas: S[t][m] intra-node pieces, ACC[t] partials, RCV[x] partials from node x, FIN.
  const int64_t S0 = 0, ACC0 = int64_t(N) * G * R, RCV0 = ACC0 + N * R, FIN = RCV0 + N * R;
  t.set_all_buffers({.input = args.count * e, .output = R, .scratch = FIN + R});
  if (R == 0) return;
  auto chunk = [&](int rank, int node, int local) { return in(rank, int64_t(nl.rank(node, local)) * R); };

  // Intra-node puts and reductions, step by step (all ranks per step, so that op ids exist before the
  // reductions that wait on them).
  std::vector<std::vector<Ref>> partial(p, std::vector<Ref>(N));  // [rank][t]
  std::vector<std::vector<OpId>> ready(p, std::vector<OpId>(N, kNoOp));
  std::vector<std::vector<OpId>> arrived(p, std::vector<OpId>(N, kNoOp));  // [rank][source node]
  for (int s = 0; s < N; ++s) {
    t.set_step(s);
    std::vector<std::vector<OpId>> piece(p, std::vector<OpId>(G, kNoOp));  // [receiver][sender local]
    for (int r = 0; r < p; ++r) {
      const int a = nl.node(r), m = nl.local(r), b = (a + s + 1) % N;
      for (int j = 1; j < G; ++j) {
        const int l = (m + j) % G;
        piece[nl.rank(a, l)][m] =
            t.put(r, chunk(r, b, l), scratch(nl.rank(a, l), S0 + (int64_t(s) * G + m) * R), R, {}, kIntraPut);
      }
    }
    for (int r = 0; r < p; ++r) {
      const int a = nl.node(r), l = nl.local(r), b = (a + s + 1) % N;
      if (G == 1) {  // nothing to reduce inside the node: the input chunk is the partial
        partial[r][s] = chunk(r, b, l);
        continue;
      }
      // With a single node the partial is the result: write it straight to the output.
      const Ref acc = N == 1 ? out(r) : scratch(r, ACC0 + int64_t(s) * R);
      Ref lhs = chunk(r, b, l);
      for (int j = 1; j < G; ++j) {
        const int m = (l + j) % G;
        ready[r][s] = t.reduce(r, lhs, scratch(r, S0 + (int64_t(s) * G + m) * R), acc, R, {piece[r][m]}, kIntraReduce);
        lhs = acc;
      }
      partial[r][s] = acc;
    }
    // Network: the partial for node b goes to (b, l); the own node's (last step) stays here.
    if (s == N - 1) break;
    for (int r = 0; r < p; ++r) {
      const int a = nl.node(r), l = nl.local(r), b = (a + s + 1) % N, dst = nl.rank(b, l);
      arrived[dst][a] = t.put(r, partial[r][s], scratch(dst, RCV0 + int64_t(a) * R), R, {ready[r][s]}, kNetPut);
    }
  }

  // Final reduction in arrival order: node b-1 (step 0), b-2, ..., then the own partial. Accumulated
  // in FIN, so that in place the output (this rank's own input chunk) is written only by the last op,
  // after the own node's step has read that chunk.
  t.set_step(N);
  for (int r = 0; r < p; ++r) {
    const int b = nl.node(r);
    const Ref own = partial[r][N - 1];
    if (N == 1) {
      if (G == 1 && !args.in_place) t.copy(r, own, out(r), R, {}, kFinalReduce);  // p == 1
      continue;                                                                   // G > 1: already in out
    }
    Ref lhs = scratch(r, RCV0 + int64_t(adv::mod(b - 1, N)) * R);
    OpId lhs_ready = arrived[r][adv::mod(b - 1, N)];
    for (int s = 1; s < N; ++s) {
      const bool last = s == N - 1;
      const int x = adv::mod(b - 1 - s, N);
      const Ref rhs = last ? own : scratch(r, RCV0 + int64_t(x) * R);
      const OpId rhs_ready = last ? ready[r][N - 1] : arrived[r][x];
      const Ref dst = last ? out(r) : scratch(r, FIN);
      t.reduce(r, lhs, rhs, dst, R, {lhs_ready, rhs_ready}, kFinalReduce);
      lhs = dst;
      lhs_ready = kNoOp;  // FIN was written by the previous op of this channel
    }
  }
}

}  // namespace cclab
