#include "algorithms/classic_common.hpp"

#include "core/error.hpp"

namespace cclab::classic {

int64_t chunk_count(int64_t count, int elem_size, int64_t chunk_bytes) {
  if (chunk_bytes <= 0) chunk_bytes = kDefaultChunkBytes;
  const int64_t per_chunk = std::max<int64_t>(1, chunk_bytes / elem_size);
  return std::max<int64_t>(1, (count + per_chunk - 1) / per_chunk);
}

BufferSizes standard_buffers(const Schedule& s, int64_t scratch_bytes) {
  const int64_t total = s.count * dtype_size(s.dtype), block = s.count / s.nranks * dtype_size(s.dtype);
  const std::string& c = s.collective;
  if (c == "allgather" || c == "gather") return {block, total, scratch_bytes};
  if (c == "reducescatter" || c == "scatter") return {total, block, scratch_bytes};
  return {total, total, scratch_bytes};  // broadcast, reduce, allreduce, alltoall
}

void require_whole_blocks(const Schedule& s) {
  if (s.count % s.nranks != 0)
    throw_input(s.algo + ": count " + std::to_string(s.count) + " is not a multiple of the rank count " +
                std::to_string(s.nranks) + " (every rank holds one block of count/n elements)");
}

void require_power_of_two(const Schedule& s) {
  if ((s.nranks & (s.nranks - 1)) != 0)
    throw_input(s.algo + " needs a power-of-two rank count (got " + std::to_string(s.nranks) + " ranks)");
}

OpId Emitter::record(int r, int ch, OpId id) {
  auto& l = last_[size_t(r)];
  if (l.size() <= size_t(ch)) l.resize(size_t(ch) + 1, kNoOp);
  l[size_t(ch)] = id;
  return id;
}

OpId Emitter::put(int r, Ref src, Ref dst, int64_t bytes, Deps deps, int ch) {
  if (bytes == 0) return last(r, ch);
  return record(r, ch, t_.put(r, src, dst, bytes, deps, ch));
}

OpId Emitter::get(int r, Ref src, Ref dst, int64_t bytes, Deps deps, int ch) {
  if (bytes == 0) return last(r, ch);
  return record(r, ch, t_.get(r, src, dst, bytes, deps, ch));
}

OpId Emitter::copy(int r, Ref src, Ref dst, int64_t bytes, Deps deps, int ch) {
  const Schedule& s = t_.schedule();
  const Ref a = s.resolve(src), b = s.resolve(dst);
  if (bytes == 0 || (a.rank == b.rank && a.buf == b.buf && a.offset == b.offset)) return last(r, ch);
  return record(r, ch, t_.copy(r, src, dst, bytes, deps, ch));
}

OpId Emitter::reduce(int r, Ref a, Ref b, Ref dst, int64_t bytes, Deps deps, int ch) {
  if (bytes == 0) return last(r, ch);
  return record(r, ch, t_.reduce(r, a, b, dst, bytes, deps, ch));
}

}  // namespace cclab::classic
