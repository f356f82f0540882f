// Host side of the sparse all-reduce: the raw input built from the data model, and the automatic
// dense switch.
#include <algorithm>
#include <cmath>

#include "algorithms/adv_sparse.hpp"
#include "exec/mmsp/sparse.hpp"
#include "exec/mmsp/sparse_kernels.cuh"

namespace cclab::exec {

namespace {

void validate(const SparseConfig& cfg) {
  const SparseSpec& sp = cfg.spec;
  if (sp.rows < 1 || sp.rows > INT32_MAX)
    throw_input("--rows must lie in [1, 2^31-1] (got " + std::to_string(sp.rows) + ")");
  if (sp.dim < 1) throw_input("--dim must be at least 1 (got " + std::to_string(sp.dim) + ")");
  if (!(sp.density > 0.0 && sp.density <= 1.0))
    throw_input("--density must lie in (0, 1] (got " + std::to_string(sp.density) + ")");
  if (sparse::rows_per_rank(sp) < 1)
    throw_input("--density " + std::to_string(sp.density) + " of " + std::to_string(sp.rows) +
                " rows selects no row: raise --density or --rows");
}

}  // namespace

float sparse_raw_value(uint64_t seed, int rank, int64_t row, int copy, int64_t col) {
  return detail::raw_value_hd(seed, rank, row, copy, col);
}

SparseRankInput sparse_generate(const SparseConfig& cfg, int rank) {
  validate(cfg);
  using detail::mix64;
  const SparseSpec& sp = cfg.spec;
  SparseRankInput in;
  const std::vector<sparse::Index> rows = sparse::generate_indices(sp, rank);
  in.selected.assign(rows.begin(), rows.end());  // < 2^31 (validated)
  // Raw list: each row once, or twice when raw_row_doubled; shuffled by sorting on a hash key with
  // the entry's position in the low half of a 64-bit word.
  const uint64_t shuf_seed = mix64(sp.seed ^ 0x5A5A5A5A5A5Aull ^ (uint64_t(rank) << 48));
  std::vector<uint64_t> order;
  std::vector<std::pair<int32_t, uint8_t>> entries;
  order.reserve(in.selected.size() * 2);
  entries.reserve(in.selected.size() * 2);
  for (int32_t r : in.selected) {
    const int copies = detail::raw_row_doubled(sp.seed, rank, r) ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      order.push_back(((mix64(shuf_seed ^ (uint64_t(r) << 1 | uint64_t(c))) >> 32) << 32) | uint64_t(entries.size()));
      entries.emplace_back(r, uint8_t(c));
    }
  }
  std::sort(order.begin(), order.end());
  in.raw_rows.resize(entries.size());
  in.raw_copy.resize(entries.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& e = entries[order[i] & 0xffffffffu];
    in.raw_rows[i] = e.first;
    in.raw_copy[i] = e.second;
  }
  return in;
}

bool sparse_choose_dense(const SparseConfig& cfg, const std::vector<int64_t>& nnz_per_rank) {
  const double R = double(cfg.spec.rows);
  double untouched = 1.0, total = 0.0;
  for (int64_t n : nnz_per_rank) {
    untouched *= 1.0 - std::min(1.0, double(n) / R);
    total += double(n);
  }
  const double union_est = R * (1.0 - untouched);
  const double saved_s = (R - union_est) * double(cfg.spec.dim) * cfg.elem_cost_ps * 1e-12;
  const double index_s = total * cfg.index_cost_ns * 1e-9 + cfg.fixed_index_us * 1e-6;
  return saved_s < index_s;
}

}  // namespace cclab::exec
