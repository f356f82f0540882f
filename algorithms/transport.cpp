#include "algorithms/transport.hpp"

#include <climits>

#include "core/error.hpp"

namespace cclab {

void Transport::set_keep_filter(KeepFilter keep) {
  keep_ = std::move(keep);
  per_rank_.assign(size_t(s_.nranks), 0);
}

std::pair<int, int32_t> Transport::dropped(OpId id) const {
  const int64_t code = -int64_t(id) - 2;
  return {int(code % s_.nranks), int32_t(code / s_.nranks)};
}

// With a keep filter: counts the op and, when the filter drops it, returns its encoded id (else kNoOp).
// Runs before the op is built, so that dropping costs little (a folded 1024-GPU schedule drops millions).
OpId Transport::drop(int rank) {
  if (!keep_) return kNoOp;
  CCLAB_ASSERT(rank >= 0 && rank < s_.nranks, "op rank out of range");
  const int32_t index = per_rank_[size_t(rank)]++;
  if (keep_(rank, index)) return kNoOp;
  const int64_t code = int64_t(index) * s_.nranks + rank;
  CCLAB_ASSERT(code < int64_t(INT32_MAX) - 2, "too many ops to encode a dropped op's id");
  return OpId(-code - 2);
}

OpId Transport::add(Op op, Deps deps) {
  CCLAB_ASSERT(op.rank >= 0 && op.rank < s_.nranks, "op rank out of range");
  op.step = step_;
  op.dep_begin = uint32_t(s_.dep_pool.size());
  for (OpId d : deps) {
    if (d == kNoOp) continue;
    CCLAB_ASSERT((d >= 0 || (keep_ && d < kNoOp)) && d < OpId(s_.ops.size()), "dependency on an op not yet emitted");
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
}

}  // namespace cclab
