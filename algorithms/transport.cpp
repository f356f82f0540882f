#include "algorithms/transport.hpp"

#include "core/error.hpp"

namespace cclab {

OpId Transport::add(Op op, Deps deps) {
  CCLAB_ASSERT(op.rank >= 0 && op.rank < s_.nranks, "op rank out of range");
  op.step = step_;
  op.dep_begin = uint32_t(s_.dep_pool.size());
  for (OpId d : deps) {
    if (d == kNoOp) continue;
    CCLAB_ASSERT(d >= 0 && d < OpId(s_.ops.size()), "dependency on an op not yet emitted");
    s_.dep_pool.push_back(d);
  }
  op.dep_count = uint32_t(s_.dep_pool.size() - op.dep_begin);
  s_.ops.push_back(op);
  return OpId(s_.ops.size() - 1);
}

OpId Transport::put(int rank, Ref src, Ref dst, int64_t bytes, Deps deps, int channel) {
  return add(Op{.kind = OpKind::put, .channel = uint8_t(channel), .rank = rank, .dst = dst, .src = src, .bytes = bytes},
             deps);
}

OpId Transport::get(int rank, Ref src, Ref dst, int64_t bytes, Deps deps, int channel) {
  return add(Op{.kind = OpKind::get, .channel = uint8_t(channel), .rank = rank, .dst = dst, .src = src, .bytes = bytes},
             deps);
}

OpId Transport::copy(int rank, Ref src, Ref dst, int64_t bytes, Deps deps, int channel) {
  return add(
      Op{.kind = OpKind::copy, .channel = uint8_t(channel), .rank = rank, .dst = dst, .src = src, .bytes = bytes},
      deps);
}

OpId Transport::reduce(int rank, Ref a, Ref b, Ref dst, int64_t bytes, Deps deps, int channel) {
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
  s_.computes.push_back(c);
  return add(Op{.kind = OpKind::compute,
                .channel = uint8_t(channel),
                .rank = rank,
                .compute = int32_t(s_.computes.size() - 1)},
             deps);
}

}  // namespace cclab
