// The compute ops of the reference backend: matmul (float accumulation, as tensor cores do with an
// fp32 accumulator) and the sparse kinds of allreduce.sparse (semantics in algorithms/adv_sparse.hpp).
#include "reference/compute.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "algorithms/adv_sparse.hpp"
#include "core/error.hpp"

namespace cclab::ref {

namespace {

using sparse::Index;
using sparse::kIndexBytes;

Index load_index(const uint8_t* p, int64_t i) {
  Index v;
  std::memcpy(&v, p + i * kIndexBytes, sizeof v);
  return v;
}
void store_index(uint8_t* p, int64_t i, Index v) { std::memcpy(p + i * kIndexBytes, &v, sizeof v); }

// Bytes spanned by a rows x cols row-major matrix with leading dimension ld.
int64_t span_bytes(int64_t rows, int64_t cols, int64_t ld, int64_t es) {
  return rows > 0 && cols > 0 ? ((rows - 1) * ld + cols) * es : 0;
}

// C (+)= A @ B. Each element: the k products summed in float (the fp32 accumulator), then C added
// when accumulating (cuBLAS's alpha = 1, beta = 1: C = AB + C), then stored in the dtype.
void matmul(const Schedule& s, const Compute& c, HostBuffers& b) {
  const DType t = s.dtype;
  const int64_t es = dtype_size(t);
  if (c.m <= 0 || c.n <= 0) return;
  if (c.lda < c.k || c.ldb < c.n || c.ldc < c.n)
    throw Error(ErrorKind::internal, s.algo + ": matmul leading dimension smaller than the row length");
  const uint8_t* A = at(s, b, c.a, span_bytes(c.m, c.k, c.lda, es));
  const uint8_t* B = at(s, b, c.b, span_bytes(c.k, c.n, c.ldb, es));
  uint8_t* C = at(s, b, c.c, span_bytes(c.m, c.n, c.ldc, es));
  // B converted once, transposed so that the inner loop runs over contiguous memory.
  std::vector<float> bt(size_t(c.n * c.k)), arow(size_t(c.k));
  for (int64_t kk = 0; kk < c.k; ++kk)
    for (int64_t j = 0; j < c.n; ++j) bt[size_t(j * c.k + kk)] = load_as_float(t, B, kk * c.ldb + j);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t kk = 0; kk < c.k; ++kk) arow[size_t(kk)] = load_as_float(t, A, i * c.lda + kk);
    for (int64_t j = 0; j < c.n; ++j) {
      const float* col = bt.data() + j * c.k;
      float acc = 0;
      for (int64_t kk = 0; kk < c.k; ++kk) acc += arow[size_t(kk)] * col[kk];
      if (c.accumulate) acc += load_as_float(t, C, i * c.ldc + j);
      store_from_float(t, C, i * c.ldc + j, acc);
    }
  }
}

void sort_unique(const Schedule& s, const Compute& c, HostBuffers& b) {
  const DType t = s.dtype;
  const int64_t m = c.m, dim = c.n, row = dim * dtype_size(t);
  const uint8_t* idx = at(s, b, c.a, m * kIndexBytes);
  const uint8_t* rows = at(s, b, c.b, m * row);
  const int64_t rows_offset = sparse::sorted_rows_offset(m);  // output block [count | indices | rows]
  uint8_t* head = at(s, b, c.c, kIndexBytes + m * kIndexBytes);
  uint8_t* out_rows = at(s, b, c.c + rows_offset, m * row);
  std::vector<int64_t> order(static_cast<size_t>(m));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return load_index(idx, x) < load_index(idx, y); });
  std::vector<float> acc(static_cast<size_t>(dim));
  int64_t count = 0;
  for (int64_t i = 0; i < m;) {
    const Index v = load_index(idx, order[size_t(i)]);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (; i < m && load_index(idx, order[size_t(i)]) == v; ++i)  // duplicates in input order (stable)
      for (int64_t j = 0; j < dim; ++j) acc[size_t(j)] += load_as_float(t, rows, order[size_t(i)] * dim + j);
    store_index(head + kIndexBytes, count, v);
    for (int64_t j = 0; j < dim; ++j) store_from_float(t, out_rows, count * dim + j, acc[size_t(j)]);
    ++count;
  }
  store_index(head, 0, count);
}

void union_merge(const Schedule& s, const Compute& c, HostBuffers& b) {
  const int64_t lists = c.m, total = c.k;
  const uint8_t* all = at(s, b, c.a, total * kIndexBytes);
  const uint8_t* lengths = at(s, b, c.b, lists * kIndexBytes);
  uint8_t* head = at(s, b, c.c, kIndexBytes + total * kIndexBytes);
  std::vector<Index> merged;
  merged.reserve(size_t(total));
  int64_t begin = 0;
  for (int64_t l = 0; l < lists; ++l) {
    const int64_t len = load_index(lengths, l);
    if (len < 0 || begin + len > total)
      throw Error(ErrorKind::internal,
                  s.algo + ": union_merge list lengths exceed the " + std::to_string(total) + " gathered indices");
    const size_t mid = merged.size();
    for (int64_t i = 0; i < len; ++i) merged.push_back(load_index(all, begin + i));
    std::inplace_merge(merged.begin(), merged.begin() + std::ptrdiff_t(mid), merged.end());
    begin += len;
  }
  merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
  store_index(head, 0, Index(merged.size()));
  for (size_t i = 0; i < merged.size(); ++i) store_index(head + kIndexBytes, int64_t(i), merged[i]);
}

void index_match(const Schedule& s, const Compute& c, HostBuffers& b) {
  const uint8_t* local = at(s, b, c.a, c.m * kIndexBytes);
  const uint8_t* global = at(s, b, c.b, c.k * kIndexBytes);
  uint8_t* pos = at(s, b, c.c, c.m * kIndexBytes);
  // Merge pass: both lists are sorted, O(m + k).
  int64_t j = 0;
  for (int64_t i = 0; i < c.m; ++i) {
    const Index v = load_index(local, i);
    while (j < c.k && load_index(global, j) < v) ++j;
    if (j == c.k || load_index(global, j) != v)
      throw Error(ErrorKind::internal,
                  s.algo + ": index_match: local index " + std::to_string(v) + " is not in the global index set");
    store_index(pos, i, j);
  }
}

// Positions come from user data in the dense path (the indices themselves): out of range is bad input.
int64_t checked_position(const Schedule& s, const uint8_t* pos, int64_t i, int64_t k) {
  const Index p = load_index(pos, i);
  if (p < 0 || p >= k)
    throw_input(s.algo + ": row index " + std::to_string(p) + " outside the table of " + std::to_string(k) + " rows");
  return p;
}

void scatter_rows(const Schedule& s, const Compute& c, HostBuffers& b) {
  const DType t = s.dtype;
  const int64_t dim = c.n, row = dim * dtype_size(t);
  const uint8_t* rows = at(s, b, c.a, c.m * row);
  const uint8_t* pos = at(s, b, c.b, c.m * kIndexBytes);
  uint8_t* dense = at(s, b, c.c, c.k * row);
  if (!c.accumulate) std::memset(dense, 0, size_t(c.k * row));  // +0.0 in every dtype
  for (int64_t i = 0; i < c.m; ++i) {
    const int64_t p = checked_position(s, pos, i, c.k);
    for (int64_t j = 0; j < dim; ++j)
      store_from_float(t, dense, p * dim + j,
                       load_as_float(t, dense, p * dim + j) + load_as_float(t, rows, i * dim + j));
  }
}

void gather_rows(const Schedule& s, const Compute& c, HostBuffers& b) {
  const int64_t row = c.n * dtype_size(s.dtype);
  const uint8_t* dense = at(s, b, c.a, c.k * row);
  const uint8_t* pos = at(s, b, c.b, c.m * kIndexBytes);
  uint8_t* rows = at(s, b, c.c, c.m * row);
  for (int64_t i = 0; i < c.m; ++i)
    std::memcpy(rows + i * row, dense + checked_position(s, pos, i, c.k) * row, size_t(row));
}

}  // namespace

void run_compute(const Schedule& s, const Compute& c, HostBuffers& b) {
  switch (c.kind) {
    case ComputeKind::matmul:
      return matmul(s, c, b);
    case ComputeKind::sort_unique:
      return sort_unique(s, c, b);
    case ComputeKind::union_merge:
      return union_merge(s, c, b);
    case ComputeKind::index_match:
      return index_match(s, c, b);
    case ComputeKind::scatter_rows:
      return scatter_rows(s, c, b);
    case ComputeKind::gather_rows:
      return gather_rows(s, c, b);
  }
  throw Error(ErrorKind::internal, s.algo + ": unknown compute kind " + std::to_string(int(c.kind)));
}

}  // namespace cclab::ref
