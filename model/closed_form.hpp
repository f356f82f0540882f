// Textbook costs of the classic algorithms on a uniform, fully connected network without contention
// (ALGORITHMS.md): α is the per-message latency, β the time per byte of a link (1/bandwidth), n the ranks,
// S the message size in bytes. The simulator must reproduce these on such a network (tests/sim).
#pragma once

#include <cstdint>

#include "core/units.hpp"

namespace cclab::model {

struct AlphaBeta {
  Seconds alpha;
  BytesPerSec bw;  // β = 1 / bw
  Seconds beta_bytes(double bytes) const { return transfer_time(bytes, bw); }
};

int ceil_log2(int n);

// Broadcast, binomial tree: ⌈log2 n⌉(α + Sβ).
Seconds broadcast_binomial(const AlphaBeta& ab, int n, int64_t S);
// Broadcast, pipelined chain with C chunks: (n − 2 + C)(α + Sβ/C).
Seconds broadcast_pipeline(const AlphaBeta& ab, int n, int64_t S, int chunks);
// Gather / scatter, binomial: ⌈log2 n⌉α + (n−1)/n·Sβ.
Seconds gather_binomial(const AlphaBeta& ab, int n, int64_t S);
// All-gather / reduce-scatter, ring: (n−1)(α + Sβ/n).
Seconds allgather_ring(const AlphaBeta& ab, int n, int64_t S);
Seconds reducescatter_ring(const AlphaBeta& ab, int n, int64_t S);
// All-reduce, ring: 2(n−1)(α + Sβ/n).
Seconds allreduce_ring(const AlphaBeta& ab, int n, int64_t S);
// All-reduce, recursive halving-doubling (n a power of two): 2·log2(n)·α + 2(n−1)/n·Sβ.
Seconds allreduce_rhd(const AlphaBeta& ab, int n, int64_t S);
// All-reduce, (double binary) tree, as ALGORITHMS.md states it: ~2⌈log2 n⌉α + Sβ (pipelined).
Seconds allreduce_tree_stated(const AlphaBeta& ab, int n, int64_t S);
// All-reduce, one-shot pull (allreduce.bidir.flash): every rank reads each of the n−1 peers' whole
// buffers in turn: (n−1)(α + Sβ); for n = 2 one phase, α + Sβ, with both link directions busy.
Seconds allreduce_oneshot(const AlphaBeta& ab, int n, int64_t S);
// All-to-all, direct (pairwise): (n−1)(α + Sβ/n).
Seconds alltoall_direct(const AlphaBeta& ab, int n, int64_t S);

}  // namespace cclab::model
