// Sparse all-reduce of embedding gradients on GPUs (ALGORITHMS.md, "Sparse all-reduce").
//
// Input per rank: an uncoalesced list of (row index, value row of `dim` floats) pairs of a table of
// `rows` rows (an embedding gradient: a row may appear more than once). Per iteration, on every rank:
//   1. coalesce: CUB radix sort of (index, position), run-length encode, exclusive scan, and a kernel
//      that sums the value rows of each run (sorted unique indices + summed rows);
//   2. exchange counts (each rank's number of unique rows);
//   3. the global index set, either by an all-gather of the index lists (copy engines) and a union
//      (radix sort + unique) on every rank, or by gather to rank 0, union there, broadcast;
//   4. index matching: the position of each local index in the union (a windowed search: one
//      warp-parallel search per block for the block's range of the union, then binary search in
//      shared memory), written as the inverse map union row -> local row;
//   5. one pass that writes the dense union buffer (union rows x dim): local rows where present,
//      zeros elsewhere;
//   6. an in-place dense all-reduce of that buffer (NCCL; a peer-memory kernel when ranks share GPUs);
//   7. the result is the union's indices and the reduced buffer.
// Above the crossover it switches by itself to the dense path (the whole table, rows x dim, filled
// from the local rows and all-reduced), decided from the counts before any index is exchanged.
//
// Baselines measured in the same run: the dense NCCL all-reduce of the whole table, and the
// host-staged sparse exchange (coalesce on the GPU, copy to the host, union and sum there, copy the
// result back to every GPU), which is what frameworks do without sparse collectives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "core/record.hpp"
#include "exec/mmsp/cmatmul_gpus.hpp"

namespace cclab::exec {

enum class UnionMode : uint8_t { allgather, gather_bcast };

// The index-matching kernels (exec/mmsp/sparse_kernels.cuh describes them).
enum class MatchKernel : uint8_t { quadratic, binsearch, window };

struct SparseConfig {
  SparseSpec spec;            // rows, dim, density, dist, seed (spec.mode is ignored: see modes)
  int warmup = 2, iters = 5;  // per measured variant
  bool check = true;
  // Which variants to measure (each becomes one record).
  std::vector<SparseMode> modes = {SparseMode::automatic};
  std::vector<UnionMode> union_modes = {UnionMode::allgather};
  bool dense_baseline = true;  // allreduce.nccl of the whole table
  bool host_baseline = false;  // the host-staged sparse exchange
  bool match_bench = false;    // time the three index-matching kernels on rank 0's data
  int dense_iters = 3;         // the dense table is large: fewer iterations (also the host-staged one)
  double dense_ref_us = 0;     // when dense_baseline is off: a dense time measured earlier, for the speedup column
  // Cost model of the automatic switch (see sparse_choose_dense), fitted to the forced-sparse and
  // forced-dense runs of results/h200x2/mmsp_crossover.csv (2 x H200, 500,000 x 2048 float32, commit
  // a7fc849): the dense all-reduce of 4.1 GB took 11.85 ms (346 GB/s: 11.6 ps per float) and the fill
  // pass 1.2 ps per float; the union phase cost 180 us plus 0.13 ns per index (sum of nnz 50k..1M).
  double elem_cost_ps = 12.8;
  double index_cost_ns = 0.13;
  double fixed_index_us = 180.0;
};

// The automatic switch: dense when the all-reduce bytes that the union saves, (rows - U_est) * dim
// floats, cost less than building the union: index_cost * sum(nnz) + fixed. U_est assumes ranks pick
// rows independently: rows * (1 - prod_r (1 - nnz_r / rows)) (for skewed data it overestimates U, so
// the switch errs towards dense).
bool sparse_choose_dense(const SparseConfig& cfg, const std::vector<int64_t>& nnz_per_rank);

// The generated input of one rank. The rows are the data model's (algorithms/adv_sparse.hpp,
// sparse::generate_indices: round(density * rows) distinct rows, uniform or Zipf), so the coalesced
// input and the result are exactly what the reference backend computes for the same spec. To give
// coalescing real work, a hash doubles about half of the rows, the two copies' values summing exactly
// to the model's value, and the raw list is shuffled.
struct SparseRankInput {
  std::vector<int32_t> raw_rows;  // raw (uncoalesced) list
  std::vector<uint8_t> raw_copy;  // which copy (0 or 1) of its row each raw entry is
  std::vector<int32_t> selected;  // the model's rows, sorted and distinct
};
SparseRankInput sparse_generate(const SparseConfig& cfg, int rank);
// Value of copy `copy` of `row` in rank `rank`'s raw input, column `col` (what the GPU generates).
float sparse_raw_value(uint64_t seed, int rank, int64_t row, int copy, int64_t col);

// Measures each configured variant and the baselines; every sparse result is checked against a
// float64 host reference built from the data model's values (sparse::generated_value): all union
// indices, and the value rows of a sample of union rows, all columns, on every rank. The dense path
// leaves its result as the whole table (SparCML's switch of representation): its union rows are
// checked the same way, and a sample of the other rows must be zero. Records: algo allreduce.sparse (extra columns:
// rows, dim, density, dist, mode, path, union_mode, nnz_per_rank, union_rows, phase times, speedup_vs_dense_nccl,
// checked_rows), allreduce.nccl (dense table), allreduce.sparse_hoststaged, index_match.{quadratic,binsearch,window}.
// With `failures`, a part that fails (a variant, a baseline) is reported there ("part: message") and
// the other parts still run; without it, the first failure throws.
std::vector<Record> run_sparse_allreduce(RankGpus& gpus, const SparseConfig& cfg,
                                         std::vector<std::string>* failures = nullptr);

// Runs one index-matching kernel on `device`: the position of each local index in `global` (both
// sorted, unique), -1 where absent. For tests and for checking the kernels against each other.
std::vector<int32_t> sparse_match_on_gpu(int device, MatchKernel kernel, const std::vector<uint32_t>& local,
                                         const std::vector<uint32_t>& global);

}  // namespace cclab::exec
