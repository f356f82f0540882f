// Collective matmul: all-gather overlapped with matmul, and matmul overlapped with reduce-scatter
// (ALGORITHMS.md, "Collective matmul").
//
// Shapes come from AlgoArgs::shape (m, k, n per device, see MatmulShape); D = nranks; E = dtype size.
// Schedule::count is set to m*D*k, the elements of the gathered A, so that the records' `bytes`
// column (count * E) is the bytes of the gathered A for every variant (DESIGN.md). AlgoArgs::count is
// ignored. There is no in-place form.
//
// allgather_matmul (C_d = AllGather(A) @ B_d):
//   input  = [A_d: m x k | B_d: k x n]   (row-major, B_d at byte offset m*k*E)
//   output = C_d: (m*D) x n, row block s = A_s @ B_d
// matmul_reducescatter (C_d = row block d of sum_e A_e @ B_e):
//   input  = [A_d: (m*D) x k | B_d: k x n]   (B_d at byte offset m*D*k*E)
//   output = C_d: m x n
#pragma once

#include "algorithms/registry.hpp"

namespace cclab {

// Ring: at step i (0 <= i < D) device d multiplies shard s = (d+i) mod D by B_d into row block s of
// its output (channel 0) and puts the same shard into device d-1's scratch slot i (channel 1, no put
// at the last step), where d-1 uses it at step i+1. Scratch: D-1 shard slots (m*k*E each); no slot is
// reused, so a sender never waits for the receiver.
void build_allgather_matmul_ring(const AlgoArgs& args, Transport& t);
// Bidirectional ring: each shard is split by rows, the first floor(m/2) rows travel to d-1 (channel
// 1) and the rest to d+1 (channel 2); at step i device d multiplies the first half of shard (d+i) mod
// D and the second half of shard (d-i) mod D. Each step moves half a shard per direction.
void build_allgather_matmul_ring_bidir(const AlgoArgs& args, Transport& t);
// Baseline as the model sees the library pair (Lowering::library): a ring all-gather of the shards
// into scratch ((m*D) x k), then one matmul by B_d.
void build_allgather_matmul_nccl_cublas(const AlgoArgs& args, Transport& t);
// Mirror image: at step i device d computes the partial of row block b = (d+i+1) mod D,
// A_d[b] @ B_d, adding it to the partial that arrived from d+1 (accumulate from step 1 on; partials
// are stored in the dtype between steps, as a cuBLAS beta = 1 call does), and puts it to d-1, which
// continues it at step i+1. At the last step b = d: the partial, summed over all devices, lands in
// the output (the put of step D-2 writes the receiver's output directly). Scratch: D-1 partial slots.
void build_matmul_reducescatter_ring(const AlgoArgs& args, Transport& t);

}  // namespace cclab
