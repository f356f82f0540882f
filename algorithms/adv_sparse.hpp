// allreduce.sparse: all-reduce of sparse row tensors (embedding gradients), in phases because the
// sizes of later steps depend on the data (ALGORITHMS.md, "Sparse all-reduce").
//
// Data. A table of spec.rows rows of spec.dim elements (the schedule's dtype). Rank r's input is a
// list of row indices (Index = int64: tables beyond 2^31 rows exist, and an 8-byte index costs
// little beside a row of dim values) and one row of values per index. The input need not be
// coalesced (phase 0 sorts, removes duplicate indices and sums their rows). The result on every rank
// is the sorted union of all indices with, per index, the sum of the rows all ranks hold for it.
// Only RedOp::sum (rows absent from a rank count as zero); no in-place form.
//
// Buffers of rank r (offsets in SparseLayout; every region starts on a kAlign boundary):
//   input   [indices: raw_r Index | values: raw_r x dim]          raw_r = SparseSizes::input_rows[r]
//   output  [U: Index | union indices: U Index | values: U x dim]  (phase 2; U = union_rows)
//   scratch counts (n Index), the coalesced local block, gathered index lists, the union block,
//           then the phase-2 areas; later phases only append, so regions keep their offsets.
//
// Phases (Schedule::phase; the schedule of phase k holds the ops of phases 0..k, phase k's from
// SparsePhase::first_op on):
//   0  coalesce: sort_unique of the input into the local block [c_r | indices | rows]; all-gather
//      of the counts c_r (8-byte puts). Then every rank knows every c_r (SparseSizes::rows).
//   1  all-gather of the coalesced index lists (rank q's list lands at offset prefix(q) of every
//      rank's gathered area), then union_merge on every rank (saves the broadcast round of
//      gather + unique + broadcast). Then every rank knows U (SparseSizes::union_rows).
//   2  sparse path: index_match of the local indices in the union (merge, O(c + U)), scatter_rows
//      into a zero-filled U x dim buffer, the pull-split all-reduce of that buffer (allreduce.bidir's
//      emitter, no scratch) into the output, and the union indices copied to the output.
//      dense path: scatter_rows into a zero-filled rows x dim table, the pull-split all-reduce of the
//      whole table in place, gather_rows of the union rows into the output, union indices copied.
//      Both give the same result; see uses_dense() for the switch. With spec.table_result the dense
//      path all-reduces the table into the output (values: rows x dim, row i at row i) and gathers
//      nothing: the executor's dense path (SparCML's switch of representation).
// A backend runs phase 0, reads the counts, builds and runs phase 1, reads U, builds and runs phase 2
// (run_sparse_phases does this with two callbacks). It may keep the buffers between phases (growing
// them in place) and run only ops [first_op, end), or run each phase's whole schedule on fresh buffers:
// the earlier phases' ops write the same values again.
//
// The registered allreduce.sparse (make_schedule) is the phase-2 schedule built with the sizes of the
// data model (model_sizes: the expected counts and union for the spec): what the simulator times.
// Schedule::count is rows * dim, so the records' bytes column is the dense table's size, the same as
// the dense allreduce baseline of that table.
//
// Compute kinds (E = dtype size; "rows" are dim = n elements of the dtype; indices are Index):
//   sort_unique  a: m indices (any order, duplicates allowed), b: m rows; c: [count | up to m sorted
//                unique indices | their rows at c + sorted_rows_offset(m)], rows of equal indices
//                summed in float in input order.
//   union_merge  a: m sorted unique lists back to back (k indices in all), b: the m list lengths
//                (Index); c: [U | the sorted union (capacity k)].
//   index_match  a: m sorted local indices, b: k sorted global indices containing them; c: m
//                positions (Index), b[c[i]] == a[i].
//   scatter_rows a: m rows, b: m positions (< k); c: k rows, zero-filled first unless accumulate;
//                c[b[i]] += a[i] (float, stored in the dtype).
//   gather_rows  a: k rows, b: m positions (< k); c: m rows, c[i] = a[b[i]].
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/schedule.hpp"

namespace cclab::sparse {

using Index = int64_t;
constexpr int64_t kIndexBytes = sizeof(Index);
// Region alignment inside the buffers: cudaMalloc's 256-byte alignment, so that GPU kernels can use
// vector loads on every region.
constexpr int64_t kAlign = 256;
// Exponent of the Zipf law for zipf indices: row i (0-based) has weight 1 / (i + 1)^s. s = 1 is the
// classic Zipf law of word frequencies (Zipf 1949; Piantadosi 2014 finds s close to 1 across corpora).
// Row ids are not permuted: frequent rows have small ids, as in frequency-sorted vocabularies.
constexpr double kZipfExponent = 1.0;

// Byte offset of the rows in sort_unique's output block of capacity m: after [count | m indices],
// aligned to kAlign.
int64_t sorted_rows_offset(int64_t m);

// ---- Data model ----

// Rows each rank holds at spec.density: round(density * rows).
int64_t rows_per_rank(const SparseSpec& spec);
// Rank r's indices: rows_per_rank distinct rows, sorted, drawn with a generator seeded from (seed, r):
// uniform without replacement, or by Zipf weight without replacement (successive sampling, done as
// the top rows_per_rank keys log(u)/w of Efraimidis and Spirakis). O(rows) for zipf.
std::vector<Index> generate_indices(const SparseSpec& spec, int rank);
// The value rank r holds at (row, col): an integer in [-4, 4] from a hash of (seed, rank, row, col), so
// sums are exact in every dtype for up to 32 ranks, and a GPU can generate the same values in place.
float generated_value(const SparseSpec& spec, int rank, Index row, int64_t col);
// Expected size of the union of n ranks' indices. Uniform: rows (1 - (1 - k/rows)^n), exact. Zipf:
// with Rosén's approximation of successive sampling, row i is drawn with probability
// 1 - exp(-w_i t), t chosen so that these sum to k; the union is sum_i 1 - exp(-n w_i t).
double expected_union_rows(const SparseSpec& spec, int nranks);

// ---- The dense switch ----

// automatic mode takes the dense path when the union covers at least this fraction of the table:
// 1 - (1 - 1/n)^n, the union fraction of n uniform ranks at density 1/n, i.e. SparCML's switch point
// (density > 1/n, where an all-gather based sparse exchange moves more than the dense all-reduce),
// stated on the union so that skewed (Zipf) data, whose union is smaller, stays sparse longer.
// To be tuned by the model and measurements (the crossover measured on H200s).
double dense_switch_union_fraction(int nranks);
bool uses_dense(const AlgoArgs& args, int64_t union_rows);

// ---- Phases ----

constexpr int kSparsePhases = 3;

struct SparseSizes {
  std::vector<int64_t> input_rows;  // per rank, rows of the input (known before phase 0)
  std::vector<int64_t> rows;        // per rank, coalesced rows (known after phase 0)
  int64_t union_rows = -1;          // U (known after phase 1)
};

// Sizes of the data model: input_rows = rows = rows_per_rank, union = round(expected_union_rows).
SparseSizes model_sizes(const AlgoArgs& args);

// Byte offsets of rank r's regions; -1 where a size they depend on is not known yet.
struct SparseLayout {
  int64_t input_values = 0;  // input
  int64_t counts = 0;        // scratch: n Index, the coalesced count of every rank (phase 0)
  int64_t local = 0;         // scratch: [c_r | indices (capacity raw_r) | rows] (phase 0)
  int64_t local_indices = 0, local_values = 0;
  int64_t gathered = -1;     // scratch: all ranks' coalesced index lists, back to back (phase 1)
  int64_t union_block = -1;  // scratch: [U | union indices (capacity sum c)] (phase 1)
  int64_t positions = -1;    // scratch: c_r positions in the union (phase 2, sparse path)
  int64_t dense = -1;        // scratch: U x dim (sparse path) or rows x dim (dense path) (phase 2)
  int64_t output_values = -1;
  int64_t scratch_bytes[kSparsePhases] = {-1, -1, -1};  // scratch size after each phase
  int64_t output_bytes = -1;
};
SparseLayout sparse_layout(const AlgoArgs& args, const SparseSizes& sizes, int rank);

struct SparsePhase {
  Schedule schedule;  // phases 0..phase; validated
  OpId first_op = 0;  // the first op of `phase`
};
// Throws an input error for bad args (spec, redop, in place) or sizes missing for the phase.
SparsePhase build_sparse_phase(const AlgoArgs& args, int phase, const SparseSizes& sizes);

// Fills the sizes a phase reveals, reading 8-byte integers of rank 0's scratch (every rank holds the
// same values) through read_scratch0(byte offset): the counts after phase 0, U after phase 1.
void read_phase_sizes(const AlgoArgs& args, int phase, SparseSizes& sizes,
                      const std::function<int64_t(int64_t)>& read_scratch0);

// The whole protocol for a backend: builds each phase, calls run(phase) (which executes it, see
// above), reads the sizes through read_scratch0 and goes on. Returns the last phase.
SparsePhase run_sparse_phases(const AlgoArgs& args, std::vector<int64_t> input_rows,
                              const std::function<void(const SparsePhase&)>& run,
                              const std::function<int64_t(int64_t)>& read_scratch0);

// Registry entry: all phases with model_sizes().
void build_allreduce_sparse(const AlgoArgs& args, Transport& t);

// Operand regions of the sparse compute kinds (known == false for matmul and unknown kinds), for
// compute_footprint().
ComputeFootprint sparse_compute_footprint(const Compute& c, DType dtype);

}  // namespace cclab::sparse
