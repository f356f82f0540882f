#include "algorithms/adv_sparse.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <unordered_set>

#include "algorithms/adv_allreduce_bidir.hpp"
#include "core/error.hpp"

namespace cclab::sparse {

namespace {

int64_t align(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void check_spec(const AlgoArgs& args) {
  const SparseSpec& s = args.sparse;
  if (s.rows < 1)
    throw_input("allreduce.sparse needs a table (--rows R with R >= 1, got " + std::to_string(s.rows) + ")");
  if (s.dim < 1)
    throw_input("allreduce.sparse needs a row length (--dim D with D >= 1, got " + std::to_string(s.dim) + ")");
  if (!(s.density >= 0 && s.density <= 1))
    throw_input("allreduce.sparse: density must lie in [0, 1] (got " + std::to_string(s.density) + ")");
  if (args.redop != RedOp::sum) throw_input("allreduce.sparse supports only the sum (rows a rank lacks count as zero)");
  if (args.in_place) throw_input("allreduce.sparse has no in-place form (input and output differ in layout)");
}

Compute sparse_op(ComputeKind kind, Ref a, Ref b, Ref c, int64_t m, int64_t k, int64_t n, bool accumulate = false) {
  return Compute{.kind = kind, .m = m, .k = k, .n = n, .accumulate = accumulate, .a = a, .b = b, .c = c};
}

// Emits phases 0..last into t (buffers sized for `last`); returns the first op of phase `last`.
OpId emit(const AlgoArgs& args, Transport& t, const SparseSizes& sz, int last) {
  const int n = args.nranks;
  const int64_t dim = args.sparse.dim, E = t.elem_size(), row = dim * E;
  std::vector<SparseLayout> L;
  for (int r = 0; r < n; ++r) {
    L.push_back(sparse_layout(args, sz, r));
    const int64_t input = L[r].input_values + sz.input_rows[r] * row;
    t.set_buffers(r,
                  {.input = input, .output = last == 2 ? L[r].output_bytes : 0, .scratch = L[r].scratch_bytes[last]});
  }
  t.set_count(args.sparse.rows * dim);
  OpId first_op = OpId(t.schedule().ops.size());

  // Phase 0: coalesce, all-gather the counts.
  t.set_phase(0);
  t.set_step(0);
  std::vector<std::vector<OpId>> counts_in(n);  // ops writing rank r's counts array
  for (int r = 0; r < n; ++r) {
    t.compute(r, sparse_op(ComputeKind::sort_unique, in(r), in(r, L[r].input_values), scratch(r, L[r].local),
                           sz.input_rows[r], 0, dim));
    for (int j = 0; j < n; ++j) {
      const int q = (r + j) % n;
      const Ref src = scratch(r, L[r].local), dst = scratch(q, L[q].counts + r * kIndexBytes);
      counts_in[q].push_back(q == r ? t.copy(r, src, dst, kIndexBytes) : t.put(r, src, dst, kIndexBytes));
    }
  }
  if (last == 0) return first_op;

  // Phase 1: all-gather the index lists, union on every rank.
  first_op = OpId(t.schedule().ops.size());
  t.set_phase(1);
  t.set_step(1);
  std::vector<int64_t> prefix(n + 1, 0);
  for (int r = 0; r < n; ++r) prefix[r + 1] = prefix[r] + sz.rows[r];
  std::vector<std::vector<OpId>> lists_in(n);
  for (int r = 0; r < n; ++r) {
    if (sz.rows[r] == 0) continue;
    for (int j = 0; j < n; ++j) {
      const int q = (r + j) % n;
      const Ref src = scratch(r, L[r].local_indices), dst = scratch(q, L[q].gathered + prefix[r] * kIndexBytes);
      // The offset needs every count: the first send waits for them (the rest follow on the channel).
      const Transport::Deps deps = j == 0 ? Transport::Deps(counts_in[r]) : Transport::Deps();
      lists_in[q].push_back(q == r ? t.copy(r, src, dst, sz.rows[r] * kIndexBytes, deps)
                                   : t.put(r, src, dst, sz.rows[r] * kIndexBytes, deps));
    }
  }
  for (int q = 0; q < n; ++q) {
    std::vector<OpId> deps = lists_in[q];
    deps.insert(deps.end(), counts_in[q].begin(), counts_in[q].end());
    t.compute(q,
              sparse_op(ComputeKind::union_merge, scratch(q, L[q].gathered), scratch(q, L[q].counts),
                        scratch(q, L[q].union_block), n, prefix[n], 0),
              deps);
  }
  if (last == 1) return first_op;

  // Phase 2: match, scatter, dense all-reduce, output.
  first_op = OpId(t.schedule().ops.size());
  t.set_phase(2);
  t.set_step(2);
  const int64_t U = sz.union_rows;
  const bool dense = uses_dense(args, U);
  std::vector<Ref> area;
  std::vector<OpId> scattered(n);
  for (int r = 0; r < n; ++r) {
    const Ref union_indices = scratch(r, L[r].union_block + kIndexBytes), values = scratch(r, L[r].local_values);
    area.push_back(scratch(r, L[r].dense));
    if (dense) {  // a row's position in the table is its index
      scattered[r] = t.compute(r, sparse_op(ComputeKind::scatter_rows, values, scratch(r, L[r].local_indices), area[r],
                                            sz.rows[r], args.sparse.rows, dim));
    } else {
      t.compute(r, sparse_op(ComputeKind::index_match, scratch(r, L[r].local_indices), union_indices,
                             scratch(r, L[r].positions), sz.rows[r], U, 0));
      scattered[r] = t.compute(
          r, sparse_op(ComputeKind::scatter_rows, values, scratch(r, L[r].positions), area[r], sz.rows[r], U, dim));
    }
  }
  std::vector<Ref> result;
  const bool table = dense && args.sparse.table_result;  // the reduced table itself is the result
  for (int r = 0; r < n; ++r) result.push_back(dense && !table ? area[r] : out(r, L[r].output_values));
  const auto reduced =
      emit_allreduce_pull_split(t, area, result, (dense ? args.sparse.rows : U) * dim, scattered, 0, /*first_step=*/3);
  t.set_step(5);
  for (int r = 0; r < n; ++r) {
    if (dense && !table)
      t.compute(r,
                sparse_op(ComputeKind::gather_rows, area[r], scratch(r, L[r].union_block + kIndexBytes),
                          out(r, L[r].output_values), U, args.sparse.rows, dim),
                reduced[r]);
    t.copy(r, scratch(r, L[r].union_block), out(r), (1 + U) * kIndexBytes);
  }
  return first_op;
}

void check_sizes(const AlgoArgs& args, int phase, const SparseSizes& sz) {
  const size_t n = size_t(args.nranks);
  auto bad = [&](const std::string& what) {
    throw_input("allreduce.sparse phase " + std::to_string(phase) + ": " + what);
  };
  if (sz.input_rows.size() != n) bad("input rows given for " + std::to_string(sz.input_rows.size()) + " ranks");
  for (int64_t v : sz.input_rows)
    if (v < 0) bad("negative input row count");
  if (phase >= 1) {
    if (sz.rows.size() != n) bad("coalesced row counts (from phase 0) missing");
    for (size_t r = 0; r < n; ++r)
      if (sz.rows[r] < 0 || sz.rows[r] > sz.input_rows[r] || sz.rows[r] > args.sparse.rows)
        bad("coalesced row count " + std::to_string(sz.rows[r]) + " of rank " + std::to_string(r) + " out of range");
  }
  if (phase >= 2) {
    const int64_t most =
        std::min<int64_t>(args.sparse.rows, std::accumulate(sz.rows.begin(), sz.rows.end(), int64_t(0)));
    const int64_t least = sz.rows.empty() ? 0 : *std::max_element(sz.rows.begin(), sz.rows.end());
    if (sz.union_rows < least || sz.union_rows > most)
      bad("union size " + std::to_string(sz.union_rows) + " outside [" + std::to_string(least) + ", " +
          std::to_string(most) + "] (from phase 1)");
  }
}

}  // namespace

int64_t sorted_rows_offset(int64_t m) { return align(kIndexBytes + m * kIndexBytes); }

// ---- Data model ----

int64_t rows_per_rank(const SparseSpec& spec) {
  return std::clamp<int64_t>(std::llround(spec.density * double(spec.rows)), 0, spec.rows);
}

std::vector<Index> generate_indices(const SparseSpec& spec, int rank) {
  const int64_t k = rows_per_rank(spec), rows = spec.rows;
  std::mt19937_64 rng(splitmix64(spec.seed * 0x100000001b3ull + uint64_t(rank)));
  std::vector<Index> idx;
  idx.reserve(size_t(k));
  if (spec.dist == IndexDist::uniform) {
    // Floyd's algorithm: k distinct values of [0, rows) in k draws.
    std::unordered_set<Index> chosen;
    chosen.reserve(size_t(k) * 2);
    for (int64_t j = rows - k; j < rows; ++j) {
      const Index v = std::uniform_int_distribution<Index>(0, j)(rng);
      if (!chosen.insert(v).second) chosen.insert(j);
    }
    idx.assign(chosen.begin(), chosen.end());
  } else {
    // Weighted sampling without replacement: the k largest keys log(u) / w_i, w_i = (i+1)^-s.
    std::vector<std::pair<double, Index>> keys(static_cast<size_t>(rows));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (Index i = 0; i < rows; ++i) {
      const double ui = std::max(u(rng), 1e-300);
      keys[size_t(i)] = {std::log(ui) * std::pow(double(i + 1), kZipfExponent), i};
    }
    std::nth_element(keys.begin(), keys.begin() + k, keys.end(), std::greater<>());
    for (int64_t j = 0; j < k; ++j) idx.push_back(keys[size_t(j)].second);
  }
  std::sort(idx.begin(), idx.end());
  return idx;
}

float generated_value(const SparseSpec& spec, int rank, Index row, int64_t col) {
  const uint64_t h =
      splitmix64(splitmix64(splitmix64(spec.seed ^ (uint64_t(rank) << 48)) ^ uint64_t(row)) ^ uint64_t(col));
  return float(int(h % 9) - 4);
}

double expected_union_rows(const SparseSpec& spec, int nranks) {
  const double rows = double(spec.rows), k = double(rows_per_rank(spec));
  if (k <= 0 || nranks < 1) return 0;
  if (k >= rows) return rows;
  if (spec.dist == IndexDist::uniform) return rows * (1 - std::pow(1 - k / rows, nranks));
  // Zipf: rows in groups of (nearly) equal weight: exact below 4096, then geometric groups 0.1% wide,
  // so a table of 5M rows costs a few thousand terms per evaluation.
  struct Group {
    double weight, count;
  };
  std::vector<Group> groups;
  for (int64_t i = 0; i < spec.rows;) {
    const int64_t len = i < 4096 ? 1 : std::max<int64_t>(1, i / 1000);
    const int64_t end = std::min(spec.rows, i + len);
    const double mid = 0.5 * double(i + end - 1) + 1;  // 1-based rank at the middle of the group
    groups.push_back({std::pow(mid, -kZipfExponent), double(end - i)});
    i = end;
  }
  auto drawn = [&](double t, double times) {  // sum over rows of 1 - exp(-times * w_i * t)
    double s = 0;
    for (const Group& g : groups) s += g.count * -std::expm1(-times * g.weight * t);
    return s;
  };
  double lo = 0, hi = 1;
  while (drawn(hi, 1) < k) hi *= 2;
  for (int it = 0; it < 100 && hi - lo > 1e-12 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    (drawn(mid, 1) < k ? lo : hi) = mid;
  }
  return std::min(rows, drawn(0.5 * (lo + hi), nranks));
}

// ---- The dense switch ----

double dense_switch_union_fraction(int nranks) { return 1 - std::pow(1 - 1.0 / std::max(nranks, 1), nranks); }

bool uses_dense(const AlgoArgs& args, int64_t union_rows) {
  switch (args.sparse.mode) {
    case SparseMode::sparse:
      return false;
    case SparseMode::dense:
      return true;
    case SparseMode::automatic:
      break;
  }
  return double(union_rows) >= dense_switch_union_fraction(args.nranks) * double(args.sparse.rows);
}

// ---- Phases ----

SparseSizes model_sizes(const AlgoArgs& args) {
  SparseSizes s;
  const int64_t k = rows_per_rank(args.sparse);
  s.input_rows.assign(size_t(args.nranks), k);
  s.rows = s.input_rows;
  s.union_rows = std::clamp<int64_t>(std::llround(expected_union_rows(args.sparse, args.nranks)), k,
                                     std::min(args.sparse.rows, k * args.nranks));
  return s;
}

SparseLayout sparse_layout(const AlgoArgs& args, const SparseSizes& sz, int rank) {
  const int n = args.nranks;
  const int64_t row = args.sparse.dim * dtype_size(args.dtype);
  const int64_t raw = sz.input_rows.at(size_t(rank));
  SparseLayout L;
  L.input_values = align(raw * kIndexBytes);
  L.counts = 0;
  L.local = align(n * kIndexBytes);
  L.local_indices = L.local + kIndexBytes;
  L.local_values = L.local + sorted_rows_offset(raw);
  L.scratch_bytes[0] = align(L.local_values + raw * row);
  if (sz.rows.size() != size_t(n)) return L;
  const int64_t total = std::accumulate(sz.rows.begin(), sz.rows.end(), int64_t(0));
  L.gathered = L.scratch_bytes[0];
  L.union_block = L.gathered + align(total * kIndexBytes);
  L.scratch_bytes[1] = L.union_block + align((1 + total) * kIndexBytes);
  if (sz.union_rows < 0) return L;
  const int64_t U = sz.union_rows;
  if (uses_dense(args, U)) {
    L.dense = L.scratch_bytes[1];
    L.scratch_bytes[2] = L.dense + align(args.sparse.rows * row);
  } else {
    L.positions = L.scratch_bytes[1];
    L.dense = L.positions + align(sz.rows[size_t(rank)] * kIndexBytes);
    L.scratch_bytes[2] = L.dense + align(U * row);
  }
  L.output_values = align((1 + U) * kIndexBytes);
  L.output_bytes = L.output_values + (uses_dense(args, U) && args.sparse.table_result ? args.sparse.rows : U) * row;
  return L;
}

SparsePhase build_sparse_phase(const AlgoArgs& args, int phase, const SparseSizes& sizes) {
  if (phase < 0 || phase >= kSparsePhases) throw_input("allreduce.sparse has phases 0, 1 and 2");
  check_spec(args);
  check_sizes(args, phase, sizes);
  Algorithm algo = find_algorithm("allreduce.sparse");
  OpId first = 0;
  algo.build = [&](const AlgoArgs& a, Transport& t) { first = emit(a, t, sizes, phase); };
  SparsePhase p{make_schedule(algo, args), 0};
  p.first_op = first;
  return p;
}

void read_phase_sizes(const AlgoArgs& args, int phase, SparseSizes& sizes,
                      const std::function<int64_t(int64_t)>& read_scratch0) {
  const SparseLayout L = sparse_layout(args, sizes, 0);
  if (phase == 0) {
    sizes.rows.resize(size_t(args.nranks));
    for (int r = 0; r < args.nranks; ++r) sizes.rows[size_t(r)] = read_scratch0(L.counts + r * kIndexBytes);
  } else if (phase == 1) {
    sizes.union_rows = read_scratch0(L.union_block);
  }
}

SparsePhase run_sparse_phases(const AlgoArgs& args, std::vector<int64_t> input_rows,
                              const std::function<void(const SparsePhase&)>& run,
                              const std::function<int64_t(int64_t)>& read_scratch0) {
  SparseSizes sizes;
  sizes.input_rows = std::move(input_rows);
  for (int phase = 0;; ++phase) {
    SparsePhase p = build_sparse_phase(args, phase, sizes);
    run(p);
    if (phase == kSparsePhases - 1) return p;
    read_phase_sizes(args, phase, sizes, read_scratch0);
  }
}

void build_allreduce_sparse(const AlgoArgs& args, Transport& t) {
  check_spec(args);
  emit(args, t, model_sizes(args), kSparsePhases - 1);
}

ComputeFootprint sparse_compute_footprint(const Compute& c, DType dtype) {
  ComputeFootprint f;
  const int64_t row = c.n * dtype_size(dtype), I = kIndexBytes;
  f.known = true;
  switch (c.kind) {
    case ComputeKind::sort_unique:
      f.reads = {{c.a, c.m * I}, {c.b, c.m * row}};
      f.writes = {{c.c, I + c.m * I}, {c.c + sorted_rows_offset(c.m), c.m * row}};
      break;
    case ComputeKind::union_merge:
      f.reads = {{c.a, c.k * I}, {c.b, c.m * I}};
      f.writes = {{c.c, I + c.k * I}};
      break;
    case ComputeKind::index_match:
      f.reads = {{c.a, c.m * I}, {c.b, c.k * I}};
      f.writes = {{c.c, c.m * I}};
      break;
    case ComputeKind::scatter_rows:
      f.reads = {{c.a, c.m * row}, {c.b, c.m * I}};
      if (c.accumulate) f.reads.push_back({c.c, c.k * row});
      f.writes = {{c.c, c.k * row}};
      break;
    case ComputeKind::gather_rows:
      f.reads = {{c.a, c.k * row}, {c.b, c.m * I}};
      f.writes = {{c.c, c.m * row}};
      break;
    default:
      f.known = false;
  }
  return f;
}

}  // namespace cclab::sparse
