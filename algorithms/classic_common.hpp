// Helpers shared by the classic algorithms: block partitioning, the buffer sizes nccl-tests
// allocates per collective, binomial-tree numbering, and an emitter that drops empty operations.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/transport.hpp"

namespace cclab::classic {

// Pipeline chunk when AlgoArgs::chunk_bytes is 0: NCCL's default buffer (NCCL_BUFFSIZE, 4 MiB) split
// into its NCCL_STEPS = 8 slots, i.e. what one NCCL pipeline step moves with the Simple protocol.
constexpr int64_t kDefaultChunkBytes = 512 << 10;
// Op::channel is a uint8_t.
constexpr int kMaxChannels = 255;

// A run of elements.
struct Block {
  int64_t offset = 0, count = 0;
};

// Block i of `count` elements cut into `parts` nearly equal blocks (the first count % parts blocks
// hold one element more), so every count, divisible or not, is covered exactly once.
inline Block split(int64_t count, int64_t parts, int64_t i) {
  const int64_t base = count / parts, extra = count % parts;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}
inline Block sub(Block outer, int64_t parts, int64_t i) {
  Block b = split(outer.count, parts, i);
  b.offset += outer.offset;
  return b;
}

inline int mod(int64_t a, int n) { return int(((a % n) + n) % n); }

// Chunks of a pipeline over `count` elements: at least one, each about `chunk_bytes`.
int64_t chunk_count(int64_t count, int elem_size, int64_t chunk_bytes);

// The input and output sizes nccl-tests allocates for the collective (see Schedule::count), plus scratch.
BufferSizes standard_buffers(const Schedule& s, int64_t scratch_bytes = 0);

// Collectives made of one block per rank need count to divide by the rank count.
void require_whole_blocks(const Schedule& s);
// Throws an input error naming the algorithm when n is not a power of two.
void require_power_of_two(const Schedule& s);

// Binomial trees rooted at `root`: ranks are renumbered v = (r - root) mod n so the root is 0; the
// children of v are v + 2^k for every 2^k below v's lowest set bit (all k for the root).
inline int lowbit_span(int v, int n) {  // how many consecutive relative ranks v's subtree covers
  if (v == 0) return n;
  return std::min(v & -v, n - v);
}

// The channel of a root's copy of its own input into its output (broadcasts): beside the sends on
// channel 0, so a stream-per-channel backend runs the local copy concurrently with the link.
constexpr int kRootCopyChannel = 1;

// Wraps the Transport: drops ops that move no bytes (empty blocks of uneven splits, count 0) and
// in-place copies of a region onto itself. A dropped op returns the last op of its (rank, channel),
// so a dependency on it still orders everything that channel did before.
class Emitter {
 public:
  explicit Emitter(Transport& t) : t_(t), last_(size_t(t.nranks())) {}
  using Deps = std::span<const OpId>;
  using DepList = std::initializer_list<OpId>;

  int64_t es() const { return t_.elem_size(); }
  Transport& transport() { return t_; }
  void step(int s) { t_.set_step(s); }

  OpId put(int r, Ref src, Ref dst, int64_t bytes, Deps deps, int ch = 0);
  OpId put(int r, Ref src, Ref dst, int64_t bytes, DepList deps = {}, int ch = 0) {
    return put(r, src, dst, bytes, Deps(deps.begin(), deps.size()), ch);
  }
  OpId get(int r, Ref src, Ref dst, int64_t bytes, Deps deps, int ch = 0);
  OpId get(int r, Ref src, Ref dst, int64_t bytes, DepList deps = {}, int ch = 0) {
    return get(r, src, dst, bytes, Deps(deps.begin(), deps.size()), ch);
  }
  OpId copy(int r, Ref src, Ref dst, int64_t bytes, Deps deps, int ch = 0);
  OpId copy(int r, Ref src, Ref dst, int64_t bytes, DepList deps = {}, int ch = 0) {
    return copy(r, src, dst, bytes, Deps(deps.begin(), deps.size()), ch);
  }
  // dst = a redop b on rank r.
  OpId reduce(int r, Ref a, Ref b, Ref dst, int64_t bytes, Deps deps, int ch = 0);
  OpId reduce(int r, Ref a, Ref b, Ref dst, int64_t bytes, DepList deps = {}, int ch = 0) {
    return reduce(r, a, b, dst, bytes, Deps(deps.begin(), deps.size()), ch);
  }

  OpId last(int r, int ch) const {
    const auto& l = last_[size_t(r)];
    return size_t(ch) < l.size() ? l[size_t(ch)] : kNoOp;
  }

 private:
  OpId record(int r, int ch, OpId id);
  Transport& t_;
  std::vector<std::vector<OpId>> last_;  // [rank][channel] -> last op emitted
};

}  // namespace cclab::classic
