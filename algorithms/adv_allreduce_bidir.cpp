#include "algorithms/adv_allreduce_bidir.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "algorithms/adv_common.hpp"

namespace cclab {

namespace {

// n == 1: the output is the input.
void emit_single_rank(const AlgoArgs& args, Transport& t, int64_t bytes) {
  if (!args.in_place && bytes > 0) t.copy(0, in(0), out(0), bytes);
}

// Channels of the stream mode: slot puts and all-gather puts to a destination get their own channel
// (so lanes run concurrently), modulo the 8-bit channel space.
int slot_channel(int lane) { return 1 + lane % 127; }
int gather_channel(int lane) { return 128 + lane % 127; }

}  // namespace

void build_allreduce_oneshot(const AlgoArgs& args, Transport& t) {
  const int n = args.nranks;
  const int64_t S = args.count * t.elem_size();
  t.set_all_buffers({.input = S, .output = S, .scratch = args.in_place && n > 1 ? S : 0});
  if (S == 0) return;
  if (n == 1) return emit_single_rank(args, t, S);
  std::vector<OpId> staged(n, kNoOp);  // in place: the copy peers read from
  if (args.in_place)
    for (int r = 0; r < n; ++r) staged[r] = t.copy(r, in(r), scratch(r), S);
  for (int r = 0; r < n; ++r) {
    Ref lhs = in(r);
    for (int j = 1; j < n; ++j) {
      const int q = (r + j) % n;
      t.reduce(r, lhs, args.in_place ? scratch(q) : in(q), out(r), S, {staged[q]});
      lhs = out(r);
    }
  }
}

std::vector<std::vector<OpId>> emit_allreduce_pull_split(Transport& t, std::span<const Ref> src,
                                                         std::span<const Ref> dst, int64_t count,
                                                         std::span<const OpId> ready, int channel, int first_step) {
  const int n = t.nranks();
  const int64_t e = t.elem_size();
  std::vector<std::vector<OpId>> done(n);
  if (count == 0) return done;
  if (n == 1) {
    const Ref a = t.schedule().resolve(src[0]), b = t.schedule().resolve(dst[0]);
    if (a.buf != b.buf || a.offset != b.offset)
      done[0].push_back(t.copy(0, src[0], dst[0], count * e, {ready[0]}, channel));
    return done;
  }
  const adv::Split chunks{count, n};
  // Reduce-scatter: rank r pulls chunk r from every peer, starting with the next rank.
  std::vector<OpId> reduced(n, kNoOp);
  t.set_step(first_step);
  for (int r = 0; r < n; ++r) {
    const int64_t off = chunks.begin(r) * e, bytes = chunks.size(r) * e;
    if (bytes == 0) continue;
    Ref lhs = src[r] + off;
    for (int j = 1; j < n; ++j) {
      const int q = (r + j) % n;
      reduced[r] = t.reduce(r, lhs, src[q] + off, dst[r] + off, bytes, {ready[r], ready[q]}, channel);
      lhs = dst[r] + off;
    }
    done[r].push_back(reduced[r]);
  }
  // All-gather: rank r pulls every peer's reduced chunk. In place this overwrites r's chunk q of src,
  // which q read in its reductions, all done before q's last reduction.
  t.set_step(first_step + 1);
  for (int r = 0; r < n; ++r)
    for (int j = 1; j < n; ++j) {
      const int q = (r + j) % n;
      const int64_t off = chunks.begin(q) * e, bytes = chunks.size(q) * e;
      if (bytes > 0) done[r].push_back(t.get(r, dst[q] + off, dst[r] + off, bytes, {reduced[q]}, channel));
    }
  return done;
}

void build_allreduce_pull_split(const AlgoArgs& args, Transport& t) {
  const int n = args.nranks;
  const int64_t e = t.elem_size();
  t.set_all_buffers({.input = args.count * e, .output = args.count * e});
  std::vector<Ref> src, dst;
  for (int r = 0; r < n; ++r) {
    src.push_back(in(r));
    dst.push_back(out(r));
  }
  const std::vector<OpId> ready(n, kNoOp);
  emit_allreduce_pull_split(t, src, dst, args.count, ready);
}

void build_allreduce_stream(const AlgoArgs& args, Transport& t) {
  const int n = args.nranks;
  const int64_t e = t.elem_size();
  const adv::Split chunks{args.count, n};
  const int64_t piece = std::max<int64_t>(1, (args.chunk_bytes > 0 ? args.chunk_bytes : kStreamChunkBytes) / e);
  const int64_t slot_elems = std::min(piece, chunks.size(0));  // chunk 0 is the largest
  const int64_t slot_bytes = slot_elems * e;
  t.set_all_buffers({.input = args.count * e,
                     .output = args.count * e,
                     .scratch = n > 1 ? int64_t(n - 1) * kStreamSlots * slot_bytes : 0});
  if (args.count == 0) return;
  if (n == 1) return emit_single_rank(args, t, args.count * e);

  auto pieces = [&](int r) { return (chunks.size(r) + piece - 1) / piece; };
  int64_t max_pieces = 0;
  for (int r = 0; r < n; ++r) max_pieces = std::max(max_pieces, pieces(r));
  // Lane j of consumer r receives from producer (r + j + 1) mod n; slot s of lane j:
  auto slot = [&](int r, int lane, int64_t k) {
    return scratch(r, (int64_t(lane) * kStreamSlots + k % kStreamSlots) * slot_bytes);
  };
  // consumed[r][k * (n-1) + lane]: r's reduction that read piece k from that lane's slot.
  std::vector<std::vector<OpId>> consumed(n);
  for (int r = 0; r < n; ++r) consumed[r].resize(size_t(pieces(r)) * (n - 1), kNoOp);

  // Each rank's ops are emitted in an order relative to the rank (puts by lane, then its reductions, then its
  // gathers), so that rank r + K's ops are rank r's moved by K: the simulator folds symmetric machines on that.
  // arrived[r][lane]: the put of piece k into r's slot of that lane.
  std::vector<std::vector<OpId>> arrived(n, std::vector<OpId>(n - 1, kNoOp));
  // Piece k of r's chunk: (byte offset, bytes).
  auto piece_of = [&](int r, int64_t k) {
    const int64_t first = chunks.begin(r) + k * piece;
    return std::pair{first * e, std::min(piece, chunks.begin(r) + chunks.size(r) - first) * e};
  };
  for (int64_t k = 0; k < max_pieces; ++k) {
    t.set_step(int(k));
    // Producers fill their lane's slot once the consumer read what was there kStreamSlots pieces ago.
    for (int q = 0; q < n; ++q)
      for (int lane = 0; lane < n - 1; ++lane) {
        const int r = adv::mod(q - lane - 1, n);  // q is lane `lane` of consumer r
        if (k >= pieces(r)) continue;
        const auto [off, bytes] = piece_of(r, k);
        const OpId war = k >= kStreamSlots ? consumed[r][(k - kStreamSlots) * (n - 1) + lane] : kNoOp;
        arrived[r][lane] = t.put(q, in(q, off), slot(r, lane, k), bytes, {war}, slot_channel(adv::mod(r - q - 1, n)));
      }
    for (int r = 0; r < n; ++r) {
      if (k >= pieces(r)) continue;
      const auto [off, bytes] = piece_of(r, k);
      // r reduces the piece from every lane, in lane order, into its output.
      Ref lhs = in(r, off);
      OpId last = kNoOp;
      for (int lane = 0; lane < n - 1; ++lane) {
        last = t.reduce(r, lhs, slot(r, lane, k), out(r, off), bytes, {arrived[r][lane]});
        consumed[r][k * (n - 1) + lane] = last;
        lhs = out(r, off);
      }
      // All-gather: the reduced piece goes straight into every peer's output. In place that region
      // is the peer's input piece, which the peer put into r's slot before r's reduction above.
      for (int j = 1; j < n; ++j) {
        const int q = (r + j) % n;
        t.put(r, out(r, off), out(q, off), bytes, {last}, gather_channel(j - 1));
      }
    }
  }
}

void build_allreduce_bidir(const AlgoArgs& args, Transport& t) {
  if (args.count * t.elem_size() <= kBidirCrossoverBytes)
    build_allreduce_oneshot(args, t);
  else
    build_allreduce_pull_split(args, t);
}

void build_allreduce_bidir_flash(const AlgoArgs& args, Transport& t) {
  t.set_lowering(Lowering::flash);
  build_allreduce_oneshot(args, t);
}

void build_allreduce_bidir_stream(const AlgoArgs& args, Transport& t) {
  t.set_lowering(Lowering::stream);
  build_allreduce_stream(args, t);
}

}  // namespace cclab
