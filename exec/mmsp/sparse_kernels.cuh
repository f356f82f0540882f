// Kernels and CUB wrappers of the sparse all-reduce (internal to exec/mmsp/sparse*.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "exec/mmsp/cmatmul_util.cuh"
#include "exec/mmsp/sparse.hpp"

namespace cclab::exec::detail {

// The data model's value of (rank, row, col): algorithms/adv_sparse.cpp's generated_value (an
// integer in [-4, 4] from a hash of (seed, rank, row, col)), recomputed here so that GPUs generate
// their inputs in place. A unit test holds the two equal.
__host__ __device__ inline float model_value_hd(uint64_t seed, int rank, int64_t row, int64_t col) {
  const uint64_t h = mix64(mix64(mix64(seed ^ (uint64_t(rank) << 48)) ^ uint64_t(row)) ^ uint64_t(col));
  return float(int(h % 9) - 4);
}

// Whether rank `rank` lists `row` twice in its raw (uncoalesced) input.
__host__ __device__ inline bool raw_row_doubled(uint64_t seed, int rank, int64_t row) {
  return mix64(mix64(seed ^ 0xD0D0D0D0D0D0ull ^ (uint64_t(rank) << 48)) ^ uint64_t(row)) & 1;
}

// Value of copy `copy` (0 or 1) of a raw entry: a doubled row splits the model value into
// (v - s) + s with s an integer in [-4, 4], so the coalesced row is exactly the model's row.
__host__ __device__ inline float raw_value_hd(uint64_t seed, int rank, int64_t row, int copy, int64_t col) {
  const float v = model_value_hd(seed, rank, row, col);
  if (!raw_row_doubled(seed, rank, row)) return v;
  const uint64_t h = mix64(mix64(seed ^ 0x5151515151ull ^ (uint64_t(rank) << 48)) ^ uint64_t(row)) ^ uint64_t(col);
  const float s = float(int(mix64(h) % 9) - 4);
  return copy == 0 ? v - s : s;
}

// vals[j * dim + c] = raw_value_hd(seed, rank, rows[j], copies[j], c) for j < n_raw.
void sparse_gen_values(float* vals, const int32_t* rows, const uint8_t* copies, int64_t n_raw, int64_t dim,
                       uint64_t seed, int rank, cudaStream_t s);
void sparse_iota(int32_t* p, int64_t n, cudaStream_t s);

// Coalescing, all on the device (sizes of the outputs stay on the device in *num_runs):
// sort (index, raw position) pairs, run-length encode the sorted indices, scan the run lengths,
// then sum each run's value rows into vals_out (row i of vals_out belongs to uniq[i]).
struct CoalesceBuffers {
  const uint32_t* raw_idx;
  const int32_t* perm_in;  // 0..n_raw-1
  uint32_t* keys_sorted;
  int32_t* perm_sorted;
  uint32_t* uniq;
  int32_t* counts;
  int32_t* offsets;
  int32_t* num_runs;
  const float* raw_vals;
  float* vals_out;
};
size_t sparse_coalesce_temp_bytes(int n_raw, int end_bit);
// (kernel step of the coalescing) out[row] = sum of raw[perm[offsets[row] + j]] for j < counts[row],
// for row < *num_runs; max_rows bounds *num_runs (sizes the grid).
void sparse_segment_sum(const int32_t* num_runs, const int32_t* offsets, const int32_t* counts, const int32_t* perm,
                        const float* raw, int64_t dim, float* out, int64_t max_rows, cudaStream_t s);
void sparse_coalesce(const CoalesceBuffers& b, int n_raw, int64_t dim, int end_bit, void* temp, size_t temp_bytes,
                     cudaStream_t s);

// Sorted unique keys of in[0..n): out and *num_out (device). `sorted` is scratch of n keys.
size_t sparse_sort_unique_temp_bytes(int n, int end_bit);
void sparse_sort_unique(const uint32_t* in, uint32_t* sorted, uint32_t* out, int32_t* num_out, int n, int end_bit,
                        void* temp, size_t temp_bytes, cudaStream_t s);

// Index matching: pos[i] = position of local[i] in the sorted global list (-1 if absent). Local and
// global are sorted and unique. Three kernels compute the same result:
//  quadratic: each block holds a tile of 256 local indices and scans the global list through shared
//             memory from the start, leaving when every index of the tile has matched (the baseline);
//  binsearch: one binary search per local index in global memory;
//  window:    per block, two warps find the block's range of the global list with 32-way searches,
//             the range is staged in shared memory and each thread binary-searches it there
//             (per-thread binary search in global memory if the range exceeds 4096 entries).
// `inv` (optional, window only) receives inv[pos[i]] = i.
void sparse_match(MatchKernel k, const uint32_t* local, int n_local, const uint32_t* global, int n_global, int32_t* pos,
                  int32_t* inv, cudaStream_t s);

// inv[local[i]] = i for i < n (the dense path's row map).
void sparse_scatter_inv(const uint32_t* local, int n, int32_t* inv, cudaStream_t s);
// out[row] = inv[row] >= 0 ? vals[inv[row]] : 0 for row < n_rows, rows of dim floats. Every output row
// is written once (the zero fill and the scatter in one pass); also used to gather rows by a list.
void sparse_fill_rows(const int32_t* inv, int64_t n_rows, const float* vals, int64_t dim, float* out, cudaStream_t s);

// One rank's half of the peer-memory all-reduce used when ranks share GPUs (NCCL cannot serve them):
// bufs[self][i] = sum_q bufs[q][i] for i in [begin, end). Peer access must be enabled.
constexpr int kMaxPeerRanks = 16;
struct PeerBufs {
  float* p[kMaxPeerRanks];
};
void sparse_peer_reduce_slice(PeerBufs bufs, int nranks, int self, int64_t begin, int64_t end, cudaStream_t s);

}  // namespace cclab::exec::detail
