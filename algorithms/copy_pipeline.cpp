// The copy-engine all-reduce pipeline (algorithms/copy_pipeline.hpp).
#include "algorithms/copy_pipeline.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "algorithms/transport.hpp"

namespace cclab {

namespace {

// Reduce-scatter + all-gather through copy engines, pipelined by chunks.
void emit_copy_split(Schedule& s, const CopyPipeline& p) {
  const int n = s.nranks;
  const int64_t e = dtype_size(s.dtype);
  const int K = std::max(1, p.slots);
  // Parts of whole elements, the first count % n one element larger.
  auto part_begin = [&](int o) { return (int64_t(o) * (s.count / n) + std::min<int64_t>(o, s.count % n)) * e; };
  auto part_bytes = [&](int o) { return (s.count / n + (o < s.count % n ? 1 : 0)) * e; };
  int64_t want = p.chunk;
  if (p.pieces > 0) want = std::clamp<int64_t>(part_bytes(0) / p.pieces, int64_t(4) << 20, int64_t(64) << 20);
  const int64_t chunk = std::max<int64_t>(e, std::min<int64_t>(want, part_bytes(0)) / e * e);
  const int64_t slot = chunk;
  s.buffers.assign(size_t(n), BufferSizes{s.count * e, s.count * e, int64_t(n - 1) * K * slot});
  Transport t(s);
  // Each part's chunks as (offset in the part, length).
  auto spans_of = [&](int64_t pb) {
    std::vector<std::pair<int64_t, int64_t>> v;
    for (int64_t at = 0; at < pb; at += chunk) v.emplace_back(at, std::min(chunk, pb - at));
    return v;
  };
  std::vector<std::vector<std::pair<int64_t, int64_t>>> spans;
  for (int o = 0; o < n; ++o) spans.push_back(spans_of(part_bytes(o)));
  // reduced[o][k]: o's last reduce of its chunk k (slots of chunk k free after it).
  std::vector<std::vector<OpId>> reduced(static_cast<size_t>(n));
  size_t max_chunks = 0;
  for (int o = 0; o < n; ++o) max_chunks = std::max(max_chunks, spans[size_t(o)].size());
  for (int o = 0; o < n; ++o) reduced[size_t(o)].assign(max_chunks, kNoOp);
  for (size_t kk = 0; kk < max_chunks; ++kk) {
    const int64_t k = int64_t(kk);
    for (int o = 0; o < n; ++o) {
      if (kk >= spans[size_t(o)].size()) continue;
      const int64_t off = part_begin(o) + spans[size_t(o)][kk].first, len = spans[size_t(o)][kk].second;
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

Schedule copy_pipeline_allreduce(int nranks, int64_t count, DType dtype, RedOp op, bool in_place,
                                 const CopyPipeline& p) {
  Schedule s;
  s.algo = "allreduce.bidir.copy";
  s.collective = "allreduce";
  s.nranks = nranks;
  s.count = count;
  s.dtype = dtype;
  s.redop = op;
  s.in_place = in_place;
  s.lowering = Lowering::copy_engine;
  if (p.split && nranks > 1 && count >= nranks) {
    emit_copy_split(s, p);
    return s;
  }
  const int64_t e = dtype_size(dtype), bytes = count * e;
  const int64_t chunk = std::max<int64_t>(e, p.chunk / e * e);
  const int64_t chunks = (bytes + chunk - 1) / chunk;
  const int K = std::max(1, p.slots);
  const int64_t slot = std::min(chunk, bytes);
  s.buffers.assign(size_t(nranks), BufferSizes{bytes, bytes, int64_t(std::max(nranks - 1, 1)) * K * slot});
  if (bytes == 0) return s;
  Transport t(s);
  if (nranks == 1) {  // nothing to reduce: the input is the result
    if (!in_place) t.copy(0, in(0, 0), out(0, 0), bytes);
    return s;
  }
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
        fetched[size_t(r)][size_t(k * (nranks - 1) + j - 1)] = p.push
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

void build_sol_bidir_copy(const AlgoArgs& args, Transport& t) {
  const int n = args.nranks;
  const int64_t bytes = args.count * t.elem_size();
  t.set_lowering(Lowering::copy_engine);
  t.set_all_buffers(BufferSizes{bytes, bytes, 0});
  for (int q = 0; q < n && bytes > 0; ++q) t.put(q, in(q, 0), out((q - 1 + n) % n, 0), bytes);
}

}  // namespace cclab
