// The copy-engine pipeline and the link test as schedules: plain data, run by the general lowering
// (and tested on the CPU).
#include <algorithm>
#include <vector>

#include "algorithms/transport.hpp"
#include "exec/bidir.hpp"

namespace cclab::exec {

namespace {

// Reduce-scatter + all-gather through copy engines, pipelined by chunks.
void emit_copy_split(Schedule& s, const BidirParams& p) {
  const int n = s.nranks;
  const int64_t e = dtype_size(s.dtype);
  const int K = std::max(1, p.ce_slots);
  // Parts of whole elements, the first count % n one element larger.
  auto part_begin = [&](int o) { return (int64_t(o) * (s.count / n) + std::min<int64_t>(o, s.count % n)) * e; };
  auto part_bytes = [&](int o) { return (s.count / n + (o < s.count % n ? 1 : 0)) * e; };
  int64_t want = p.ce_chunk;
  if (p.ce_pieces > 0) want = std::clamp<int64_t>(part_bytes(0) / p.ce_pieces, int64_t(4) << 20, int64_t(64) << 20);
  const int64_t chunk = std::max<int64_t>(e, std::min<int64_t>(want, part_bytes(0)) / e * e);
  const int64_t slot = chunk;
  s.buffers.assign(size_t(n), BufferSizes{s.count * e, s.count * e, int64_t(n - 1) * K * slot});
  Transport t(s);
  // reduced[o][k]: o's last reduce of its chunk k (slots of chunk k free after it).
  std::vector<std::vector<OpId>> reduced(static_cast<size_t>(n));
  int64_t max_chunks = 0;
  for (int o = 0; o < n; ++o) max_chunks = std::max(max_chunks, (part_bytes(o) + chunk - 1) / chunk);
  for (int o = 0; o < n; ++o) reduced[size_t(o)].assign(size_t(max_chunks), kNoOp);
  for (int64_t k = 0; k < max_chunks; ++k) {
    for (int o = 0; o < n; ++o) {
      const int64_t pb = part_bytes(o), off = part_begin(o) + k * chunk;
      if (k * chunk >= pb) continue;
      const int64_t len = std::min(chunk, pb - k * chunk);
      // Peers push their copy of o's chunk k into o's slots (their copy engines, both ways at once).
      std::vector<OpId> arrived;
      for (int j = 1; j < n; ++j) {
        const int q = (o + j) % n;
        const Ref slot_ref = scratch(o, (int64_t(j - 1) * K + k % K) * slot);
        const OpId war = k >= K ? reduced[size_t(o)][size_t(k - K)] : kNoOp;
        arrived.push_back(t.put(q, in(q, off), slot_ref, len, {war}, 0));
      }
      Ref lhs = in(o, off);
      OpId last = kNoOp;
      for (int j = 1; j < n; ++j) {
        const Ref slot_ref = scratch(o, (int64_t(j - 1) * K + k % K) * slot);
        last = t.reduce(o, lhs, slot_ref, out(o, off), len, {arrived[size_t(j - 1)], last}, 1);
        lhs = out(o, off);
      }
      reduced[size_t(o)][size_t(k)] = last;
      // All-gather: o pushes the reduced chunk into every peer's output. In place that region is
      // the peer's input chunk, which the peer pushed to o before o's reduction above.
      for (int j = 1; j < n; ++j) t.put(o, out(o, off), out((o + j) % n, off), len, {last}, 2);
    }
  }
}

}  // namespace

Schedule bidir_copy_schedule(int nranks, int64_t count, DType dtype, RedOp op, bool in_place, const BidirParams& p) {
  Schedule s;
  s.algo = "allreduce.bidir.copy";
  s.collective = "allreduce";
  s.nranks = nranks;
  s.count = count;
  s.dtype = dtype;
  s.redop = op;
  s.in_place = in_place;
  s.lowering = Lowering::copy_engine;
  if (p.ce_split && nranks > 1 && count >= nranks) {
    emit_copy_split(s, p);
    return s;
  }
  const int64_t e = dtype_size(dtype), bytes = count * e;
  const int64_t chunk = std::max<int64_t>(e, p.ce_chunk / e * e);
  const int64_t chunks = (bytes + chunk - 1) / chunk;
  const int K = std::max(1, p.ce_slots);
  const int64_t slot = std::min(chunk, bytes);
  s.buffers.assign(size_t(nranks), BufferSizes{bytes, bytes, int64_t(std::max(nranks - 1, 1)) * K * slot});
  if (bytes == 0) return s;
  Transport t(s);
  // fetched[r][k*(n-1)+j]: rank r's copy of chunk k from its j-th peer; reduced[r][k]: last reduce.
  std::vector<std::vector<OpId>> fetched(static_cast<size_t>(nranks)), reduced(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    fetched[size_t(r)].assign(size_t(chunks * std::max(nranks - 1, 1)), kNoOp);
    reduced[size_t(r)].assign(size_t(chunks), kNoOp);
  }
  for (int64_t k = 0; k < chunks; ++k) {
    const int64_t off = k * chunk, len = std::min(chunk, bytes - off);
    for (int r = 0; r < nranks; ++r) {
      for (int j = 1; j < nranks; ++j) {
        const int q = (r + j) % nranks;
        const Ref slot_ref = scratch(r, ((int64_t(j - 1) * K) + k % K) * slot);
        // The slot is free once the reduce that read it K chunks ago is done.
        const OpId war = k >= K ? reduced[size_t(r)][size_t(k - K)] : kNoOp;
        fetched[size_t(r)][size_t(k * (nranks - 1) + j - 1)] = p.ce_push
                                                                   ? t.put(q, in(q, off), slot_ref, len, {war}, j - 1)
                                                                   : t.get(r, in(q, off), slot_ref, len, {war}, j - 1);
      }
    }
    for (int r = 0; r < nranks; ++r) {
      Ref lhs = in(r, off);
      OpId last = kNoOp;
      for (int j = 1; j < nranks; ++j) {
        std::vector<OpId> deps = {fetched[size_t(r)][size_t(k * (nranks - 1) + j - 1)], last};
        // In place, our chunk k must have been fetched by every peer before we overwrite it.
        if (in_place && j == 1)
          for (int jj = 1; jj < nranks; ++jj) {
            const int q = (r + jj) % nranks;
            const int jq = (r - q + nranks) % nranks;  // r is q's jq-th peer
            deps.push_back(fetched[size_t(q)][size_t(k * (nranks - 1) + jq - 1)]);
          }
        const Ref slot_ref = scratch(r, ((int64_t(j - 1) * K) + k % K) * slot);
        last = t.reduce(r, lhs, slot_ref, out(r, off), len, Transport::Deps(deps.data(), deps.size()), nranks - 1);
        lhs = out(r, off);
      }
      reduced[size_t(r)][size_t(k)] = last;
    }
  }
  return s;
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
