// allreduce.bidir (+ .flash, .stream): pull-based all-reduce that keeps both directions of every
// NVLink busy at once (ALGORITHMS.md, "Bidirectional all-reduce").
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/registry.hpp"

namespace cclab {

// allreduce.bidir switches from the one-shot pull to the reduce-scatter/all-gather split above this
// message size. Initial value, not measured: below a few hundred KiB an all-reduce on NVLink is
// bound by synchronisation latency, which the one-shot pays once and the split twice; above, the
// split's 2(n-1)/n S bytes per rank beat the one-shot's (n-1) S for n > 2. To be replaced by the
// crossover the model and the H200 measurements give.
constexpr int64_t kBidirCrossoverBytes = int64_t(512) << 10;

// Stream mode: slots per (consumer, producer) lane, the NUM_SLOTS of the executor's stream kernel;
// 4 lets a producer run up to 3 pieces ahead of the consumer's reduction (double buffering plus
// slack for skew between peers).
constexpr int kStreamSlots = 4;
// Stream mode: piece size when AlgoArgs::chunk_bytes is 0. 1 MiB pieces keep the per-piece
// synchronisation (a few microseconds) below ~10% of a piece's transfer time at NVLink rates.
constexpr int64_t kStreamChunkBytes = int64_t(1) << 20;

// One-shot pull (flash): every rank reduces each peer's whole buffer into its output with reduce
// ops whose second source is remote (the executor lowers them to peer loads). Peers are visited from
// the next rank on, so that no rank is read by everyone at once. In place, each rank first copies its
// input to scratch and peers read that copy, since the output (= input) is overwritten meanwhile.
void build_allreduce_oneshot(const AlgoArgs& args, Transport& t);
// The pull split on arbitrary regions, for algorithms that all-reduce part of their buffers
// (allreduce.sparse): dst[r] = redop over q of src[q], `count` elements of the schedule's dtype, on
// `channel`. src[r] may equal dst[r] (in place). ready[r] is the op after which src[r] holds rank
// r's contribution (kNoOp: from the start). Its two stages get step numbers first_step and
// first_step + 1. Returns, per rank, the ops after which dst[r] holds the whole result (wait on all).
std::vector<std::vector<OpId>> emit_allreduce_pull_split(Transport& t, std::span<const Ref> src,
                                                         std::span<const Ref> dst, int64_t count,
                                                         std::span<const OpId> ready, int channel = 0,
                                                         int first_step = 0);
// Reduce-scatter/all-gather split, pull-based: rank r reduces chunk r of every peer's input into its
// output (remote reduce ops), then gets every peer's reduced chunk (get ops). Chunks differ by at
// most one element when the count does not divide.
void build_allreduce_pull_split(const AlgoArgs& args, Transport& t);
// The split in pipelined pieces through bounded scratch (stream): producer q puts piece k of chunk r
// into slot k mod kStreamSlots of lane q on rank r once r has reduced piece k - kStreamSlots from
// that slot (the write-after-read dependency the stream kernel implements with sequence numbers);
// r reduces the piece, then puts it into every peer's output. Scratch: (n-1) kStreamSlots pieces.
// Channels: 0 reductions, 1.. one per destination for slot puts, 128.. one per destination for
// all-gather puts.
void build_allreduce_stream(const AlgoArgs& args, Transport& t);

// The three registered variants: automatic (one-shot up to kBidirCrossoverBytes, then the pull
// split; lowering left automatic), flash (one-shot, Lowering::flash), stream (Lowering::stream).
void build_allreduce_bidir(const AlgoArgs& args, Transport& t);
void build_allreduce_bidir_flash(const AlgoArgs& args, Transport& t);
void build_allreduce_bidir_stream(const AlgoArgs& args, Transport& t);

}  // namespace cclab
