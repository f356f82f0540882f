// All-reduce on a double binary tree, as NCCL builds it: two binary trees over the ranks such that a
// rank that is a leaf in one is (mostly) an inner node of the other; each tree reduces and then
// broadcasts half of the data, pipelined in chunks. Every rank sends and receives about S bytes in
// total, in ~2⌈log2 n⌉ pipeline stages: ~2⌈log2 n⌉α + Sβ for large S.
//
// Tree A is the in-order binary tree over positions 1..n (rank r at position r + 1; the root is the
// largest power of two <= n; node i with t = ctz(i) has children i - 2^(t-1) and i + 2^(t-1), a right
// child beyond n being replaced by the first node of its left spine that exists). Its leaves are the
// odd positions. Tree B mirrors the positions (n even: odd <-> even, so leaves and inner nodes swap)
// or shifts them by one (n odd), as in Sanders, Speck and Träff's two-tree algorithms.
//
// Reduce (up): a parent adds its children's partials, reading them from the children's memory; the
// partial of an inner node is accumulated in its output, a leaf's is its input. Broadcast (down):
// each parent puts the final chunk into its children's outputs. Up and down of a tree run on
// separate channels (0/1 for tree A, 2/3 for tree B) so chunk i+1 goes up while chunk i comes down.
#include <bit>

#include "algorithms/classic.hpp"
#include "algorithms/classic_common.hpp"

namespace cclab::classic {

namespace {

struct Tree {
  int root = 0;
  std::vector<std::vector<int>> children;  // by rank
  std::vector<int> top_down;               // ranks, parents before children
};

// pos[r] is rank r's position (1..n) in the in-order tree.
Tree in_order_tree(int n, const std::vector<int>& pos) {
  std::vector<int> rank_at(size_t(n) + 1);
  for (int r = 0; r < n; ++r) rank_at[size_t(pos[size_t(r)])] = r;
  Tree tr;
  tr.children.resize(static_cast<size_t>(n));
  for (int i = 1; i <= n; ++i) {
    const int t = std::countr_zero(unsigned(i));
    if (t == 0) continue;  // odd positions are leaves
    std::vector<int>& ch = tr.children[size_t(rank_at[size_t(i)])];
    ch.push_back(rank_at[size_t(i - (1 << (t - 1)))]);
    for (int u = t - 1; u >= 0; --u)
      if (i + (1 << u) <= n) {
        ch.push_back(rank_at[size_t(i + (1 << u))]);
        break;
      }
  }
  tr.root = rank_at[std::bit_floor(unsigned(n))];
  tr.top_down.push_back(tr.root);
  for (size_t i = 0; i < tr.top_down.size(); ++i)
    for (int c : tr.children[size_t(tr.top_down[i])]) tr.top_down.push_back(c);
  return tr;
}

}  // namespace

void build_allreduce_tree(const AlgoArgs& a, Transport& t) {
  const Schedule& s = t.schedule();
  t.set_all_buffers(standard_buffers(s));
  const int n = a.nranks;
  const int64_t es = t.elem_size();
  Emitter e(t);
  if (n == 1) {
    e.copy(0, in(0), out(0), a.count * es);
    return;
  }
  std::vector<int> pos_a(static_cast<size_t>(n)), pos_b(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    pos_a[size_t(r)] = r + 1;
    pos_b[size_t(r)] = n % 2 == 0 ? n - r : (r + 1) % n + 1;
  }
  const Tree trees[2] = {in_order_tree(n, pos_a), in_order_tree(n, pos_b)};
  for (int tree = 0; tree < 2; ++tree) {
    const Tree& tr = trees[tree];
    const int up = 2 * tree, down = 2 * tree + 1;
    const Block half = split(a.count, 2, tree);
    const int64_t chunks = chunk_count(half.count, t.elem_size(), a.chunk_bytes);
    for (int64_t i = 0; i < chunks; ++i) {
      const Block c = sub(half, chunks, i);
      const int64_t off = c.offset * es, bytes = c.count * es;
      auto partial = [&](int r) { return tr.children[size_t(r)].empty() ? in(r, off) : out(r, off); };
      std::vector<OpId> done(size_t(n), kNoOp);  // up: the rank's last reduce; down: the put that reached it
      e.step(int(i));
      for (auto it = tr.top_down.rbegin(); it != tr.top_down.rend(); ++it) {
        const int r = *it;
        bool first = true;
        for (int child : tr.children[size_t(r)]) {
          done[size_t(r)] = e.reduce(r, first ? in(r, off) : out(r, off), partial(child), out(r, off), bytes,
                                     {done[size_t(child)]}, up);
          first = false;
        }
      }
      for (int r : tr.top_down)
        for (int child : tr.children[size_t(r)])
          done[size_t(child)] = e.put(r, out(r, off), out(child, off), bytes, {done[size_t(r)]}, down);
    }
  }
}

}  // namespace cclab::classic
