// The copy-engine pipeline and the link test as schedules: plain data, run by the general lowering
// (and tested on the CPU).
#include <algorithm>
#include <vector>

#include "algorithms/copy_pipeline.hpp"
#include "algorithms/transport.hpp"
#include "exec/bidir.hpp"

namespace cclab::exec {

Schedule bidir_copy_schedule(int nranks, int64_t count, DType dtype, RedOp op, bool in_place, const BidirParams& p) {
  CopyPipeline c;
  c.chunk = p.ce_chunk;
  c.pieces = p.ce_pieces;
  c.slots = p.ce_slots;
  c.split = p.ce_split;
  c.push = p.ce_push;
  return copy_pipeline_allreduce(nranks, count, dtype, op, in_place, c);
}

Schedule sol_bidir_copy_schedule(int nranks, int64_t count, DType dtype, int chunks) {
  Schedule s;
  s.algo = "sol.bidir_copy";
  s.collective = "exchange";
  s.nranks = nranks;
  s.count = count;
  s.dtype = dtype;
  s.lowering = Lowering::copy_engine;
  const int64_t bytes = count * dtype_size(dtype);
  s.buffers.assign(size_t(nranks), BufferSizes{bytes, bytes, 0});
  Transport t(s);
  const int c = std::max(1, chunks);
  const int64_t e = dtype_size(dtype), piece = (count + c - 1) / c * e;
  for (int q = 0; q < nranks; ++q)
    for (int i = 0; i < c; ++i) {
      const int64_t off = i * piece, len = std::min(piece, bytes - off);
      if (len > 0) t.put(q, in(q, off), out((q - 1 + nranks) % nranks, off), len, {}, i);
    }
  return s;
}

}  // namespace cclab::exec
