#include "algorithms/transport.hpp"

#include <algorithm>
#include <climits>

#include "core/error.hpp"

namespace cclab {

namespace {
// The id of a dropped op whose (rank, index) does not fit the encoding.
constexpr OpId kUnknownRef = INT32_MIN;
}  // namespace

void Transport::set_rank_window(int k, int32_t check_ops) {
  CCLAB_ASSERT(k > 0 && check_ops >= 0, "bad rank window");
  window_ = k;
  halo_ = 0;
  check_ops_ = check_ops;
  per_rank_.assign(size_t(s_.nranks), 0);
  index_.clear();
  index_.reserve(s_.ops.capacity());  // a caller that knows how many ops will come has reserved them
}

std::vector<int> Transport::loop_ranks(int reach) {
  const int n = s_.nranks;
  std::vector<int> ranks;
  CCLAB_ASSERT(reach >= 0, "negative reach");
  // Within 2 * reach of [0, 2k), on both sides: [0, 2k + 2 reach) and [n - 2 reach, n).
  if (window_ == 0 || int64_t(2) * window_ + 4 * int64_t(reach) >= n) {
    ranks.resize(size_t(n));
    for (int r = 0; r < n; ++r) ranks[size_t(r)] = r;
    return ranks;
  }
  halo_ = std::max(halo_, 2 * reach);
  for (int r = 0; r < 2 * window_ + 2 * reach; ++r) ranks.push_back(r);
  for (int r = n - 2 * reach; r < n; ++r) ranks.push_back(r);
  return ranks;
}

std::pair<int, int32_t> Transport::dropped(OpId id) const {
  if (id == kUnknownRef) return {-1, -1};
  const int64_t code = -int64_t(id) - 2;
  return {int(code % s_.nranks), int32_t(code / s_.nranks)};
}

// Under a window: counts the op and, when it is not recorded, returns its encoded id (else kNoOp).
// Runs before the op is built, so that dropping costs little (a folded 1024-GPU schedule drops millions).
OpId Transport::drop(int rank) {
  if (window_ == 0) return kNoOp;
  CCLAB_ASSERT(rank >= 0 && rank < s_.nranks, "op rank out of range");
  const int n = s_.nranks;
  const int32_t index = per_rank_[size_t(rank)]++;
  // Every op of ranks [0, k), and the first check_ops ops of the next k ranks.
  if (rank < window_ || (rank < 2 * window_ && index < check_ops_)) {
    index_.push_back(index);
    return kNoOp;
  }
  const int64_t code = int64_t(index) * n + rank;
  if (code <= int64_t(INT32_MAX) - 2) return OpId(-code - 2);
  // A reference that does not fit an OpId (many ranks, many ops each). The ranks that windowed loops
  // reach around the ranks recorded whole ([0, k), or [0, 2k) when every op is checked) are recorded
  // instead, so that those ranks' ops can name them; anything else gets an id that says "unknown",
  // which only matters if a needed op names it (the caller then declines the partial schedule,
  // sim/symmetric.cpp).
  const int whole = check_ops_ == kAllOps ? 2 * window_ : window_;
  if (rank < whole + halo_ || rank >= n - halo_) {
    index_.push_back(index);
    return kNoOp;
  }
  return kUnknownRef;
}

OpId Transport::add(Op op, Deps deps) {
  CCLAB_ASSERT(op.rank >= 0 && op.rank < s_.nranks, "op rank out of range");
  op.step = step_;
  op.dep_begin = uint32_t(s_.dep_pool.size());
  for (OpId d : deps) {
    if (d == kNoOp) continue;
    CCLAB_ASSERT((d >= 0 || (window_ > 0 && d < kNoOp)) && d < OpId(s_.ops.size()),
                 "dependency on an op not yet emitted");
    s_.dep_pool.push_back(d);
  }
  op.dep_count = uint32_t(s_.dep_pool.size() - op.dep_begin);
  s_.ops.push_back(op);
  return OpId(s_.ops.size() - 1);
}

OpId Transport::put(int rank, Ref src, Ref dst, int64_t bytes, Deps deps, int channel) {
  if (const OpId d = drop(rank); d != kNoOp) return d;
  return add(Op{.kind = OpKind::put, .channel = uint8_t(channel), .rank = rank, .dst = dst, .src = src, .bytes = bytes},
             deps);
}

OpId Transport::get(int rank, Ref src, Ref dst, int64_t bytes, Deps deps, int channel) {
  if (const OpId d = drop(rank); d != kNoOp) return d;
  return add(Op{.kind = OpKind::get, .channel = uint8_t(channel), .rank = rank, .dst = dst, .src = src, .bytes = bytes},
             deps);
}

OpId Transport::copy(int rank, Ref src, Ref dst, int64_t bytes, Deps deps, int channel) {
  if (const OpId d = drop(rank); d != kNoOp) return d;
  return add(
      Op{.kind = OpKind::copy, .channel = uint8_t(channel), .rank = rank, .dst = dst, .src = src, .bytes = bytes},
      deps);
}

OpId Transport::reduce(int rank, Ref a, Ref b, Ref dst, int64_t bytes, Deps deps, int channel) {
  if (const OpId d = drop(rank); d != kNoOp) return d;
  return add(Op{.kind = OpKind::reduce,
                .channel = uint8_t(channel),
                .rank = rank,
                .dst = dst,
                .src = a,
                .src2 = b,
                .bytes = bytes},
             deps);
}

OpId Transport::compute(int rank, const Compute& c, Deps deps, int channel) {
  if (const OpId d = drop(rank); d != kNoOp) return d;
  s_.computes.push_back(c);
  return add(Op{.kind = OpKind::compute,
                .channel = uint8_t(channel),
                .rank = rank,
                .compute = int32_t(s_.computes.size() - 1)},
             deps);
}

void Transport::adopt(Schedule made) {
  made.algo = s_.algo;
  made.collective = s_.collective;
  s_ = std::move(made);
  adopted_ = true;
}

}  // namespace cclab
