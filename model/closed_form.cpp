#include "model/closed_form.hpp"

namespace cclab::model {

int ceil_log2(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

Seconds broadcast_binomial(const AlphaBeta& ab, int n, int64_t S) {
  return double(ceil_log2(n)) * (ab.alpha + ab.beta_bytes(double(S)));
}

Seconds broadcast_pipeline(const AlphaBeta& ab, int n, int64_t S, int chunks) {
  if (n <= 1) return Seconds(0);
  return double(n - 2 + chunks) * (ab.alpha + ab.beta_bytes(double(S) / chunks));
}

Seconds gather_binomial(const AlphaBeta& ab, int n, int64_t S) {
  return double(ceil_log2(n)) * ab.alpha + ab.beta_bytes(double(S) * (n - 1) / n);
}

Seconds allgather_ring(const AlphaBeta& ab, int n, int64_t S) {
  return double(n - 1) * (ab.alpha + ab.beta_bytes(double(S) / n));
}

Seconds reducescatter_ring(const AlphaBeta& ab, int n, int64_t S) { return allgather_ring(ab, n, S); }

Seconds allreduce_ring(const AlphaBeta& ab, int n, int64_t S) {
  return 2.0 * double(n - 1) * (ab.alpha + ab.beta_bytes(double(S) / n));
}

Seconds allreduce_rhd(const AlphaBeta& ab, int n, int64_t S) {
  return 2.0 * ceil_log2(n) * ab.alpha + ab.beta_bytes(2.0 * double(S) * (n - 1) / n);
}

Seconds allreduce_tree_stated(const AlphaBeta& ab, int n, int64_t S) {
  return 2.0 * ceil_log2(n) * ab.alpha + ab.beta_bytes(double(S));
}

Seconds allreduce_oneshot(const AlphaBeta& ab, int n, int64_t S) {
  return double(n - 1) * (ab.alpha + ab.beta_bytes(double(S)));
}

Seconds alltoall_direct(const AlphaBeta& ab, int n, int64_t S) {
  return double(n - 1) * (ab.alpha + ab.beta_bytes(double(S) / n));
}

}  // namespace cclab::model
